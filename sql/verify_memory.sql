-- The verify functions keep an entry for every row the index holds
-- (archer_geo_verify 32 bytes, archer_vector_verify a hash table entry);
-- past maintenance_work_mem they stop with 54000 and say what to raise,
-- instead of growing the backend without bound on a large index.
SELECT setseed(0.5);
CREATE TABLE vm_geo (p point);
INSERT INTO vm_geo SELECT point(random() * 360 - 180, random() * 170 - 85)
  FROM generate_series(1, 50000);
CREATE INDEX vm_geo_idx ON vm_geo USING archer_geo (p);
CREATE TABLE vm_vec (v real[]);
INSERT INTO vm_vec SELECT ARRAY[random(), random()]::real[] FROM generate_series(1, 40000);
CREATE INDEX vm_vec_idx ON vm_vec USING archer_vector (v) WITH (m = 4, ef_construction = 8);
SET maintenance_work_mem = '1MB';
DO $$
BEGIN
  PERFORM archer_geo_verify('vm_geo_idx');
EXCEPTION WHEN program_limit_exceeded THEN
  RAISE NOTICE '% %', SQLSTATE, SQLERRM;
END $$;
DO $$
BEGIN
  PERFORM archer_vector_verify('vm_vec_idx');
EXCEPTION WHEN program_limit_exceeded THEN
  RAISE NOTICE '% %', SQLSTATE, SQLERRM;
END $$;
-- with room, both pass
SET maintenance_work_mem = '64MB';
SELECT archer_geo_verify('vm_geo_idx');
SELECT archer_vector_verify('vm_vec_idx');
RESET maintenance_work_mem;
DROP TABLE vm_geo, vm_vec;
