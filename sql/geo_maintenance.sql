-- Inserts with page splits, VACUUM, REINDEX, unlogged and partitioned
-- tables, reloptions, build progress phases; verify after each step.
CREATE TABLE geo_churn (id int, p point);
CREATE INDEX geo_churn_archer ON geo_churn USING archer_geo (p) WITH (fillfactor = 50);
SELECT setseed(0.77);
INSERT INTO geo_churn SELECT i, point(random() * 360 - 180, degrees(asin(random() * 2 - 1)))
FROM generate_series(1, 30000) i;
INSERT INTO geo_churn SELECT 30000 + i, point(2.35, 48.85) FROM generate_series(1, 2000) i;
SELECT archer_geo_verify('geo_churn_archer') AS entries;
SELECT * FROM index_vs_seq('SELECT id FROM geo_churn WHERE archer_dwithin(p, point(2.35, 48.85), 3000000)');
DELETE FROM geo_churn WHERE id % 3 = 0;
VACUUM (FREEZE) geo_churn;
SELECT archer_geo_verify('geo_churn_archer') AS entries, (SELECT count(*) FROM geo_churn) AS live_rows;
SELECT * FROM index_vs_seq('SELECT id FROM geo_churn WHERE archer_dwithin(p, point(2.35, 48.85), 3000000)');
INSERT INTO geo_churn SELECT 40000 + i, point(random() * 360 - 180, degrees(asin(random() * 2 - 1)))
FROM generate_series(1, 10000) i;
SELECT * FROM index_vs_seq('SELECT id FROM geo_churn WHERE archer_dwithin(p, point(-60, -30), 2000000)');
SELECT * FROM knn_vs_seq('SELECT p <-> point(2.35, 48.85) AS dist FROM geo_churn ORDER BY p <-> point(2.35, 48.85) LIMIT 2100');
REINDEX INDEX geo_churn_archer;
SELECT archer_geo_verify('geo_churn_archer') = (SELECT count(*) FROM geo_churn) AS verified;
REINDEX INDEX CONCURRENTLY geo_churn_archer;
SELECT archer_geo_verify('geo_churn_archer') = (SELECT count(*) FROM geo_churn) AS verified;
VACUUM FULL geo_churn;
SELECT archer_geo_verify('geo_churn_archer') = (SELECT count(*) FROM geo_churn) AS verified;
-- keys are sorted in memory while they fit in maintenance_work_mem (16
-- bytes each), on disk when they do not: a NOTICE, and the same index
SET maintenance_work_mem = '1MB';
REINDEX INDEX geo_churn_archer;
SELECT archer_geo_verify('geo_churn_archer') = (SELECT count(*) FROM geo_churn) AS verified;
CREATE TABLE geo_spill AS SELECT i AS id, point(random() * 360 - 180, degrees(asin(random() * 2 - 1))) AS p
FROM generate_series(1, 70000) i;
INSERT INTO geo_spill VALUES (0, NULL);
\set VERBOSITY terse
CREATE INDEX geo_spill_archer ON geo_spill USING archer_geo (p);
\set VERBOSITY default
RESET maintenance_work_mem;
SELECT archer_geo_verify('geo_spill_archer') = (SELECT count(*) FROM geo_spill) AS verified;
SELECT * FROM index_vs_seq('SELECT id FROM geo_spill WHERE archer_dwithin(p, point(-60, -30), 2000000)');
SELECT * FROM index_vs_seq('SELECT id FROM geo_spill WHERE archer_dwithin(p, point(179.9, 0.1), 500000)');
DROP TABLE geo_spill;
-- reloption bounds
CREATE INDEX ON geo_churn USING archer_geo (p) WITH (fillfactor = 5);
CREATE INDEX ON geo_churn USING archer_geo (p) WITH (nonsense = 5);

-- unlogged table: the init fork makes an empty, valid index
CREATE UNLOGGED TABLE geo_unlogged (id int, p point);
CREATE INDEX geo_unlogged_archer ON geo_unlogged USING archer_geo (p);
INSERT INTO geo_unlogged SELECT i, point((i * 7) % 360 - 180, ((i * 13) % 180) - 89.5) FROM generate_series(1, 5000) i;
SELECT * FROM index_vs_seq('SELECT id FROM geo_unlogged WHERE archer_dwithin(p, point(0, 0), 1000000)');
SELECT archer_geo_verify('geo_unlogged_archer') AS entries;

-- partitioned table
CREATE TABLE geo_parts (id int, region int, p point) PARTITION BY LIST (region);
CREATE TABLE geo_parts_a PARTITION OF geo_parts FOR VALUES IN (1);
CREATE TABLE geo_parts_b PARTITION OF geo_parts FOR VALUES IN (2);
CREATE INDEX geo_parts_archer ON geo_parts USING archer_geo (p);
INSERT INTO geo_parts SELECT i, 1 + i % 2, point((i * 7) % 360 - 180, ((i * 13) % 180) - 89.5) FROM generate_series(1, 6000) i;
SELECT * FROM index_vs_seq('SELECT id FROM geo_parts WHERE archer_dwithin(p, point(10, 10), 1500000)');

-- temporary table: the index lives in local buffers (build, then inserts
-- into the tree and into an insert buffer, which the session merges when
-- it holds archer.insert_buffer_max_entries; scans return hundreds of rows,
-- and do not prefetch heap rows, which are not in shared buffers)
CREATE TEMP TABLE geo_temp (id int, p point);
INSERT INTO geo_temp SELECT i, point((i * 7) % 360 - 180, ((i * 13) % 180) - 89.5) FROM generate_series(1, 4000) i;
CREATE INDEX geo_temp_archer ON geo_temp USING archer_geo (p);
CREATE INDEX geo_temp_buffered ON geo_temp USING archer_geo (p) WITH (insert_buffer = on);
INSERT INTO geo_temp SELECT i, point((i * 11) % 360 - 180, ((i * 17) % 180) - 89.5) FROM generate_series(4001, 8000) i;
SELECT * FROM index_vs_seq('SELECT id FROM geo_temp WHERE archer_dwithin(p, point(20, 10), 3000000)');
SELECT * FROM knn_vs_seq('SELECT p <-> point(-179, 80) AS dist FROM geo_temp ORDER BY p <-> point(-179, 80) LIMIT 50');
DROP INDEX geo_temp_archer;
SELECT * FROM index_vs_seq('SELECT id FROM geo_temp WHERE archer_dwithin(p, point(20, 10), 3000000)');
SELECT archer_geo_verify('geo_temp_buffered') AS entries;
DROP TABLE geo_temp;

-- an empty table, then one row
CREATE TABLE geo_empty (id int, p point);
CREATE INDEX geo_empty_archer ON geo_empty USING archer_geo (p);
SELECT * FROM index_vs_seq('SELECT id FROM geo_empty WHERE archer_dwithin(p, point(10, 10), 1500000)');
SELECT * FROM knn_vs_seq('SELECT p <-> point(1, 1) AS dist FROM geo_empty ORDER BY p <-> point(1, 1) LIMIT 3');
INSERT INTO geo_empty VALUES (1, point(10, 10));
SELECT * FROM index_vs_seq('SELECT id FROM geo_empty WHERE archer_dwithin(p, point(10, 10), 1)');

-- the planner leaves the index alone when most rows match
EXPLAIN (COSTS OFF) SELECT count(*) FROM geo_churn WHERE archer_dwithin(p, point(0, 0), 20000000);

-- the opclasses validate
SELECT opcname, amvalidate(oid) FROM pg_opclass WHERE opcmethod = (SELECT oid FROM pg_am WHERE amname = 'archer_geo') ORDER BY 1;
DROP TABLE geo_churn, geo_unlogged, geo_parts, geo_empty;
