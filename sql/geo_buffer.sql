-- archer_geo insert buffer (WITH (insert_buffer = on)): inserts append
-- sorted runs to buffer pages, scans read them with the tree, merges
-- (archer_flush, a full buffer, VACUUM) move them into the tree.  Every
-- answer is compared with the exact one from a sequential scan, before and
-- after merges.  The test cluster runs no merge worker.
SET archer.insert_buffer_max_entries = 100000;
CREATE TABLE gb (id bigint PRIMARY KEY, p point);
INSERT INTO gb SELECT id, p FROM geo_points WHERE id % 2 = 0;
CREATE INDEX gb_p ON gb USING archer_geo (p) WITH (insert_buffer = on);

-- the other half goes to the buffer, rows with NULL points included
INSERT INTO gb SELECT id, p FROM geo_points WHERE id % 2 = 1;
SELECT access_method, buffer_entries = (SELECT count(*) FROM geo_points WHERE id % 2 = 1) AS all_buffered,
       buffer_pages > 0 AS has_pages, merges
FROM archer_index_stats WHERE index = 'gb_p'::regclass;
SELECT archer_geo_verify('gb_p') = (SELECT count(*) FROM gb) AS verified;

-- queries read buffer and tree
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM gb WHERE archer_dwithin(p, point(2.35, 48.85), 1000);
RESET enable_seqscan;
SELECT c.x, c.y, r.m, t.*
FROM (VALUES (2.35, 48.85), (180, 0), (0, 90), (0, -90), (-179.99, -17), (-73.98, 40.75)) c(x, y),
     (VALUES (0), (1000), (100000), (5000000), (20100000)) r(m),
     LATERAL index_vs_seq(format('SELECT id FROM gb WHERE archer_dwithin(p, point(%s, %s), %s)', c.x, c.y, r.m)) t
WHERE t.mismatches <> 0 OR NOT t.used_index;
SELECT * FROM index_vs_seq('SELECT id FROM gb WHERE archer_dwithin(p, point(2.35, 48.85), 10000)');
SELECT * FROM index_vs_seq('SELECT id FROM gb WHERE archer_within(p, ''((-5,42),(8,42),(8,51),(-5,51))''::polygon)');
SELECT * FROM index_vs_seq('SELECT id FROM gb WHERE archer_within(p, ''((179,-18),(-179,-18),(-179,-16),(179,-16))''::polygon)');
SELECT c.x, c.y, k.n, t.*
FROM (VALUES (2.35, 48.85), (180, 0), (0, 90), (-179.99, -17)) c(x, y),
     (VALUES (1), (10), (1000)) k(n),
     LATERAL knn_vs_seq(format('SELECT p <-> point(%s, %s) AS dist FROM gb ORDER BY p <-> point(%s, %s) LIMIT %s', c.x, c.y, c.x, c.y, k.n)) t
WHERE NOT t.same_order OR NOT t.used_index;
SELECT * FROM knn_vs_seq('SELECT p <-> point(10, 10) AS dist FROM gb ORDER BY p <-> point(10, 10)');

-- a transaction sees its own buffered rows; a rolled-back savepoint's rows
-- never show up, before or after the commit
BEGIN;
INSERT INTO gb VALUES (900001, point(10, 10));
SAVEPOINT s;
INSERT INTO gb VALUES (900002, point(10, 10.001));
ROLLBACK TO s;
INSERT INTO gb VALUES (900003, point(10, 10.002));
SELECT * FROM index_vs_seq('SELECT id FROM gb WHERE archer_dwithin(p, point(10, 10), 1000)');
COMMIT;
SELECT * FROM index_vs_seq('SELECT id FROM gb WHERE archer_dwithin(p, point(10, 10), 1000)');
BEGIN;
INSERT INTO gb VALUES (900004, point(10, 10.003));
ROLLBACK;
SELECT * FROM index_vs_seq('SELECT id FROM gb WHERE archer_dwithin(p, point(10, 10), 1000)');

-- archer_flush merges everything, once; answers stay exact
SELECT archer_flush('gb_p') > 10000 AS merged;
SELECT archer_flush('gb_p') AS merged_again;
SELECT buffer_entries, buffer_pages, merges > 0 AS merged, merged_entries > 10000 AS entries,
       last_merge IS NOT NULL AS merged_at, tree_height > 0 AS has_tree
FROM archer_index_stats WHERE index = 'gb_p'::regclass;
-- the two rolled-back rows keep their entries until VACUUM, as in any index
SELECT archer_geo_verify('gb_p') - (SELECT count(*) FROM gb) AS aborted_entries;
SELECT * FROM index_vs_seq('SELECT id FROM gb WHERE archer_dwithin(p, point(2.35, 48.85), 10000)');
SELECT * FROM knn_vs_seq('SELECT p <-> point(2.35, 48.85) AS dist FROM gb ORDER BY p <-> point(2.35, 48.85) LIMIT 100');

-- a session merges the buffer once it is full
SET archer.insert_buffer_max_entries = 500;
INSERT INTO gb SELECT 1000000 + i, point((i * 7919) % 360 - 180, (i * 104729) % 180 - 90) FROM generate_series(1, 3000) i;
SELECT merges > 1 AS session_merged, buffer_entries < 500 + 600 AS near_bound
FROM archer_index_stats WHERE index = 'gb_p'::regclass;
RESET archer.insert_buffer_max_entries;
SELECT * FROM index_vs_seq('SELECT id FROM gb WHERE archer_within(p, ''((0,0),(40,0),(40,40),(20,10),(0,40))''::polygon)');

-- VACUUM merges first, then removes dead entries, buffered ones included
INSERT INTO gb SELECT 2000000 + i, point(i % 360 - 180, (i * 13) % 180 - 90) FROM generate_series(1, 1000) i;
DELETE FROM gb WHERE id % 7 = 0;
VACUUM (FREEZE) gb;
SELECT buffer_entries AS after_vacuum FROM archer_index_stats WHERE index = 'gb_p'::regclass;
SELECT archer_geo_verify('gb_p') AS entries, (SELECT count(*) FROM gb) AS nrows;
SELECT * FROM index_vs_seq('SELECT id FROM gb WHERE archer_dwithin(p, point(2.35, 48.85), 5000000)');

-- TRUNCATE in the transaction that buffered rows: the rows go, the index works
BEGIN;
INSERT INTO gb VALUES (900010, point(20, 20));
TRUNCATE gb;
INSERT INTO gb VALUES (900011, point(20, 20.001));
COMMIT;
SELECT * FROM index_vs_seq('SELECT id FROM gb WHERE archer_dwithin(p, point(20, 20), 1000)');
SELECT archer_geo_verify('gb_p') AS rows_indexed;

-- the option can be turned off: inserts go to the tree, the buffer stays readable
INSERT INTO gb VALUES (900012, point(20, 20.002));
ALTER INDEX gb_p SET (insert_buffer = off);
INSERT INTO gb VALUES (900013, point(20, 20.003));
SELECT buffer_entries FROM archer_index_stats WHERE index = 'gb_p'::regclass;
SELECT * FROM index_vs_seq('SELECT id FROM gb WHERE archer_dwithin(p, point(20, 20), 1000)');
SELECT archer_flush('gb_p') AS merged;

-- bad option values
CREATE INDEX gb_bad ON gb USING archer_geo (p) WITH (insert_buffer = maybe);
CREATE INDEX gb_bad ON gb USING archer_geo (p) WITH (insert_bufer = on);

DROP TABLE gb;
RESET archer.insert_buffer_max_entries;
