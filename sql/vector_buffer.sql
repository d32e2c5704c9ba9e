-- archer_vector insert buffer (WITH (insert_buffer = on)): inserts append
-- to the buffer, scans read it and the graph, merges (archer_flush, a full
-- buffer, VACUUM) move entries into the graph.  Every answer is compared
-- with the exact one from a sequential scan, before and after merges.
SELECT setseed(0.91);
CREATE TABLE vb (id int PRIMARY KEY, grp int, v avector(8));
INSERT INTO vb SELECT i, i % 5, ARRAY(SELECT random() + 0 * i FROM generate_series(1, 8))::avector
FROM generate_series(1, 1000) i;
CREATE INDEX vb_v ON vb USING archer_vector (v, grp) WITH (insert_buffer = on);
CREATE TABLE vb_queries AS
SELECT q AS qid, ARRAY(SELECT random() + 0 * q FROM generate_series(1, 8))::avector AS v
FROM generate_series(1, 20) q;

-- recall@10 against the exact answer over 20 queries (with a filter), and
-- whether every query got its 10 rows
CREATE FUNCTION vb_check(filter text DEFAULT 'true')
RETURNS TABLE (recall_ok boolean, full_rows boolean) LANGUAGE plpgsql AS $$
DECLARE
    q record;
    approx int[];
    exact int[];
    hits int := 0;
    total int := 0;
BEGIN
    full_rows := true;
    FOR q IN SELECT * FROM vb_queries ORDER BY qid LOOP
        PERFORM set_config('enable_seqscan', 'off', true);
        EXECUTE format('SELECT array_agg(id) FROM (SELECT id FROM vb WHERE %s ORDER BY v <-> $1 LIMIT 10) s', filter)
            INTO approx USING q.v;
        PERFORM set_config('enable_seqscan', 'on', true);
        PERFORM set_config('enable_indexscan', 'off', true);
        EXECUTE format('SELECT array_agg(id) FROM (SELECT id FROM vb WHERE %s ORDER BY v <-> $1 LIMIT 10) s', filter)
            INTO exact USING q.v;
        PERFORM set_config('enable_indexscan', 'on', true);
        hits := hits + (SELECT count(*) FROM unnest(approx) x WHERE x = ANY (exact));
        total := total + cardinality(exact);
        full_rows := full_rows AND cardinality(approx) = 10;
    END LOOP;
    recall_ok := hits::numeric / total >= 0.95;
    RETURN NEXT;
END $$;

-- 500 rows go to the buffer: the index counts them, queries find them
INSERT INTO vb SELECT i, i % 5, ARRAY(SELECT random() + 0 * i FROM generate_series(1, 8))::avector
FROM generate_series(1001, 1500) i;
SELECT archer_vector_verify('vb_v') AS rows_indexed;
SELECT access_method, buffer_entries, buffer_pages > 0 AS has_pages, merges, graph_nodes, deleted_nodes
FROM archer_index_stats WHERE index = 'vb_v'::regclass;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM vb WHERE grp = 2 ORDER BY v <-> '[0,0,0,0,0,0,0,0]' LIMIT 3;
-- a buffered row is its own nearest neighbour
SELECT id FROM vb ORDER BY v <-> (SELECT v FROM vb WHERE id = 1234) LIMIT 1;
SELECT id FROM vb WHERE grp = 4 ORDER BY v <-> (SELECT v FROM vb WHERE id = 1234) LIMIT 1;
-- a NULL query returns every row once, buffered ones included
SELECT count(*), count(DISTINCT id) FROM (SELECT id FROM vb ORDER BY v <-> NULL) s;
RESET enable_seqscan;
SELECT * FROM vb_check();
SELECT * FROM vb_check('grp = 3');

-- archer_flush merges them all, once
SELECT archer_flush('vb_v') AS merged;
SELECT archer_flush('vb_v') AS merged_again;
SELECT archer_vector_verify('vb_v') AS rows_indexed;
SELECT buffer_entries, buffer_pages, merges, merged_entries, graph_nodes,
       last_merge IS NOT NULL AS merged_at, last_merge_ms >= 0 AS took
FROM archer_index_stats WHERE index = 'vb_v'::regclass;
SELECT * FROM vb_check();
SELECT * FROM vb_check('grp = 3');

-- a full buffer is merged by the session that fills it
SET archer.insert_buffer_max_entries = 100;
INSERT INTO vb SELECT i, i % 5, ARRAY(SELECT random() + 0 * i FROM generate_series(1, 8))::avector
FROM generate_series(1501, 1850) i;
RESET archer.insert_buffer_max_entries;
SELECT archer_flush('vb_v') < 100 AS at_most_a_buffer_left;
SELECT archer_vector_verify('vb_v') AS rows_indexed;

-- VACUUM merges too, and deletes buffered rows like the others
INSERT INTO vb SELECT i, i % 5, ARRAY(SELECT random() + 0 * i FROM generate_series(1, 8))::avector
FROM generate_series(1851, 1950) i;
DELETE FROM vb WHERE id % 10 = 0;
VACUUM (FREEZE) vb;
SELECT archer_flush('vb_v') AS merged_after_vacuum;
SELECT archer_vector_verify('vb_v') = (SELECT count(*) FROM vb) AS verified;
SELECT * FROM vb_check();

-- an index built on an empty table (even with a typmod) takes its dimension
-- and quantizer from its first row, which goes into the graph; the other
-- rows are buffer entries until a merge, which scans read by brute force
CREATE TABLE vb_empty (id int, v avector(3));
CREATE INDEX vb_empty_v ON vb_empty USING archer_vector (v) WITH (insert_buffer = on);
INSERT INTO vb_empty SELECT i, ARRAY[i, i * 2, 3]::avector FROM generate_series(1, 30) i;
SET enable_seqscan = off;
SELECT array_agg(id) FROM (SELECT id FROM vb_empty ORDER BY v <-> '[10.2,20.4,3]' LIMIT 4) s;
SELECT archer_flush('vb_empty_v') AS merged;
SELECT array_agg(id) FROM (SELECT id FROM vb_empty ORDER BY v <-> '[10.2,20.4,3]' LIMIT 4) s;
RESET enable_seqscan;
SELECT archer_vector_verify('vb_empty_v') AS rows_indexed;

-- the option can be turned off: inserts go to the graph, the buffer stays readable
INSERT INTO vb_empty SELECT i, ARRAY[i, i * 2, 3]::avector FROM generate_series(31, 40) i;
ALTER INDEX vb_empty_v SET (insert_buffer = off);
INSERT INTO vb_empty SELECT i, ARRAY[i, i * 2, 3]::avector FROM generate_series(41, 50) i;
SET enable_seqscan = off;
SELECT count(*) FROM (SELECT id FROM vb_empty ORDER BY v <-> '[0,0,0]' LIMIT 100) s;
RESET enable_seqscan;
SELECT archer_flush('vb_empty_v') AS merged;

-- four times as many buffered rows as graph nodes: some lie farther from
-- the query than the graph's farthest node, and a scan asked for every
-- row still returns each once (this seed once made rounds widen forever)
SELECT setseed(0.2);
SET archer.insert_buffer_max_entries = 100000;
CREATE TABLE vb_far (id int, v avector(8));
INSERT INTO vb_far SELECT i, ARRAY(SELECT random() + 0 * i FROM generate_series(1, 8))::avector
FROM generate_series(1, 500) i;
CREATE INDEX vb_far_v ON vb_far USING archer_vector (v) WITH (insert_buffer = on);
INSERT INTO vb_far SELECT i, ARRAY(SELECT random() + 0 * i FROM generate_series(1, 8))::avector
FROM generate_series(501, 2500) i;
SELECT buffer_entries FROM archer_index_stats WHERE index = 'vb_far_v'::regclass;
SET enable_seqscan = off;
SELECT count(*) AS nrows, count(DISTINCT id) AS distinct_rows
FROM (SELECT id FROM vb_far ORDER BY v <-> '[0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5]' LIMIT 3000) s;
RESET enable_seqscan;
RESET archer.insert_buffer_max_entries;

-- archer_flush on other relations
CREATE TABLE vb_geo (p point);
CREATE INDEX vb_geo_p ON vb_geo USING archer_geo (p);
SELECT archer_flush('vb_geo_p') AS merged_geo;
SELECT index, "table", access_method, tree_height, buffer_entries, graph_nodes
FROM archer_index_stats WHERE "table" = 'vb_geo'::regclass;
SELECT archer_flush('vb');
CREATE INDEX vb_btree ON vb (id, grp);
SELECT archer_flush('vb_btree');
SELECT * FROM archer_index_stats('vb_btree');

DROP TABLE vb, vb_queries, vb_empty, vb_far, vb_geo;
DROP FUNCTION vb_check;
