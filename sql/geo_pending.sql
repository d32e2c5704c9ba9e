-- archer_geo without an insert buffer: a session's inserted keys wait in a
-- per-index list and go into the tree sorted, at the end of each statement,
-- when the list holds 8,192 keys, before a scan of the index in the session,
-- before utility statements and at commit.  Every answer is compared with a
-- sequential scan's; archer_geo_verify checks one entry per row.
CREATE TABLE gp (id bigint, p point);
INSERT INTO gp SELECT id, p FROM geo_points WHERE id % 3 = 0;
CREATE INDEX gp_p ON gp USING archer_geo (p);

-- one statement of more than 8,192 rows (the list goes in twice during it)
INSERT INTO gp SELECT id, p FROM geo_points WHERE id % 3 <> 0;
INSERT INTO gp SELECT 100000 + i, point((i * 7919) % 360 - 180, (i * 104729) % 180 - 90)
FROM generate_series(1, 9000) i;
SELECT archer_geo_verify('gp_p') = (SELECT count(*) FROM gp) AS verified;
SELECT * FROM index_vs_seq('SELECT id FROM gp WHERE archer_dwithin(p, point(2.35, 48.85), 100000)');
SELECT * FROM knn_vs_seq('SELECT p <-> point(10, 10) AS dist FROM gp ORDER BY p <-> point(10, 10) LIMIT 50');

-- a transaction's scans see its own rows, statement by statement and within
-- a statement (a scan starting mid-statement puts the list in first)
BEGIN;
INSERT INTO gp VALUES (900001, point(30, 30));
SELECT * FROM index_vs_seq('SELECT id FROM gp WHERE archer_dwithin(p, point(30, 30), 1000)');
CREATE TABLE gp_log (n bigint);
CREATE FUNCTION gp_log_near() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  INSERT INTO gp_log SELECT count(*) FROM gp WHERE archer_dwithin(p, point(30, 30), 1000);
  RETURN true;
END $$;
SET LOCAL enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM gp WHERE archer_dwithin(p, point(30, 30), 1000);
INSERT INTO gp SELECT 900001 + i, point(30, 30 + 0.001 * i) FROM generate_series(1, 3) i
WHERE gp_log_near();
SELECT string_agg(n::text, ',' ORDER BY n) AS seen_by_each_row FROM gp_log;
COMMIT;
SELECT * FROM index_vs_seq('SELECT id FROM gp WHERE archer_dwithin(p, point(30, 30), 1000)');

-- a rolled-back savepoint's rows, and the rows of a statement that failed
-- in a PL/pgSQL exception block, never show up; the rest do
BEGIN;
INSERT INTO gp VALUES (900010, point(40, 40));
SAVEPOINT s;
INSERT INTO gp VALUES (900011, point(40, 40.001));
ROLLBACK TO s;
DO $$
BEGIN
  INSERT INTO gp VALUES (900012, point(40, 40.002));
  BEGIN
    INSERT INTO gp SELECT 900013 + i, point(40, 40.003) FROM generate_series(0, 99) i;
    PERFORM 1 / 0;
  EXCEPTION WHEN division_by_zero THEN
    NULL;
  END;
  BEGIN
    -- fails on its last row: the 99 keys before it are still pending, and go
    INSERT INTO gp SELECT 900300 + i, point(40, 40.005) FROM generate_series(1, 100) i
    WHERE 1 / (100 - i) >= 0;
  EXCEPTION WHEN division_by_zero THEN
    NULL;
  END;
  INSERT INTO gp VALUES (900200, point(40, 40.004));
END $$;
COMMIT;
SELECT * FROM index_vs_seq('SELECT id FROM gp WHERE archer_dwithin(p, point(40, 40), 1000)');
SELECT string_agg(id::text, ',' ORDER BY id) AS ids FROM gp WHERE archer_dwithin(p, point(40, 40), 1000);
-- the rolled-back rows' entries went in before their rollback (the flush
-- at the end of each statement) and stay until VACUUM, as in any index
SELECT archer_geo_verify('gp_p') - (SELECT count(*) FROM gp) AS aborted_entries;
VACUUM (FREEZE, INDEX_CLEANUP ON) gp;
SELECT archer_geo_verify('gp_p') = (SELECT count(*) FROM gp) AS verified_after_vacuum;

-- COPY (no executor end): its rows go in before the next statement's scan
COPY gp FROM STDIN;
950001	(50,50.0001)
950002	(50,50.0002)
950003	(50.0001,50)
\.
SELECT * FROM index_vs_seq('SELECT id FROM gp WHERE archer_dwithin(p, point(50, 50), 1000)');

-- TRUNCATE in the transaction that inserted: the index works afterwards
BEGIN;
INSERT INTO gp VALUES (960001, point(60, 60));
TRUNCATE gp;
INSERT INTO gp VALUES (960002, point(60, 60.001));
COMMIT;
SELECT * FROM index_vs_seq('SELECT id FROM gp WHERE archer_dwithin(p, point(60, 60), 1000)');
SELECT archer_geo_verify('gp_p') AS rows_indexed;

-- a table with two archer_geo indexes: each gets every row
CREATE INDEX gp_p2 ON gp USING archer_geo (p);
INSERT INTO gp SELECT 970000 + i, point(i % 360 - 180, (i * 13) % 180 - 90) FROM generate_series(1, 2000) i;
SELECT archer_geo_verify('gp_p') AS first_index, archer_geo_verify('gp_p2') AS second_index,
       (SELECT count(*) FROM gp) AS nrows;

DROP TABLE gp;
DROP TABLE gp_log;
DROP FUNCTION gp_log_near();
