-- archer_vector filter columns: integer columns after the vector column,
-- whose conditions the scan applies to the nodes it walks, so a filtered
-- query neither reads the heap rows that fail them nor runs out of rows.
-- Every answer is compared with the exact one from a sequential scan.
SELECT setseed(0.57);
CREATE TABLE vf_items (id int PRIMARY KEY, label int, grp bigint, small smallint, v avector(16));
-- 8 clusters; label 10%, grp 1%, small 1/7 of the rows; some NULL labels
INSERT INTO vf_items
SELECT i, i % 10, i % 100, (i % 7)::smallint,
       ARRAY(SELECT (i % 8) * 0.3 + random() FROM generate_series(1, 16) d)::avector
FROM generate_series(1, 3000) i;
UPDATE vf_items SET label = NULL WHERE id % 37 = 0;
CREATE TABLE vf_queries AS
SELECT q AS qid, ARRAY(SELECT (q % 8) * 0.3 + random() FROM generate_series(1, 16) d)::avector AS v
FROM generate_series(1, 12) q;
CREATE INDEX vf_idx ON vf_items USING archer_vector (v, label, grp, small, ((id % 50)));
ANALYZE vf_items;

-- the conditions become index conditions (no Filter line); on 3,000 rows
-- the planner rightly prefers a sequential scan for the second query
-- (about 3 rows match), hence enable_seqscan = off for it.  (A constant
-- query vector: a subquery's InitPlan prints differently from 17 on.)
EXPLAIN (COSTS OFF) SELECT id FROM vf_items WHERE label = 3
ORDER BY v <-> '[0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8]' LIMIT 5;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM vf_items WHERE grp = 7 AND small >= 3 AND id % 50 < 10
ORDER BY v <-> '[0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8,0.8]' LIMIT 5;
RESET enable_seqscan;

-- recall@k against the exact answer; every returned row meets the
-- condition, the LIMIT is filled whenever enough rows match, rows come
-- in distance order, and the plan used the index for the condition
CREATE FUNCTION vf_check(filter text, k int DEFAULT 10)
RETURNS TABLE (recall_ok boolean, all_match boolean, full_rows boolean, ordered boolean,
               index_cond boolean)
LANGUAGE plpgsql AS $$
DECLARE
    q record;
    approx int[];
    dists float8[];
    exact int[];
    matching boolean;
    hits int := 0;
    total int := 0;
    line text;
BEGIN
    all_match := true;
    full_rows := true;
    ordered := true;
    index_cond := false;
    PERFORM set_config('enable_seqscan', 'off', true);
    FOR line IN EXECUTE format('EXPLAIN (COSTS OFF) SELECT id FROM vf_items WHERE %s ORDER BY v <-> $1 LIMIT %s',
                               filter, k) USING (SELECT v FROM vf_queries WHERE qid = 1) LOOP
        index_cond := index_cond OR line LIKE '%Index Cond%';
    END LOOP;
    PERFORM set_config('enable_seqscan', 'on', true);
    FOR q IN SELECT * FROM vf_queries ORDER BY qid LOOP
        PERFORM set_config('enable_seqscan', 'off', true);
        EXECUTE format('SELECT coalesce(array_agg(id ORDER BY n), ''{}''), coalesce(array_agg(d ORDER BY n), ''{}'') FROM
                          (SELECT id, v <-> $1 AS d, row_number() OVER () AS n FROM
                             (SELECT id, v FROM vf_items WHERE %s ORDER BY v <-> $1 LIMIT %s) s) t', filter, k)
            INTO approx, dists USING q.v;
        PERFORM set_config('enable_seqscan', 'on', true);
        PERFORM set_config('enable_indexscan', 'off', true);
        EXECUTE format('SELECT coalesce(array_agg(id), ''{}'') FROM (SELECT id FROM vf_items WHERE %s ORDER BY v <-> $1 LIMIT %s) s',
                       filter, k)
            INTO exact USING q.v;
        EXECUTE format('SELECT coalesce(bool_and(%s), true) FROM vf_items WHERE id = ANY ($1)', filter)
            INTO matching USING approx;
        PERFORM set_config('enable_indexscan', 'on', true);
        hits := hits + (SELECT count(*) FROM unnest(approx) x WHERE x = ANY (exact));
        total := total + cardinality(exact);
        all_match := all_match AND matching;
        full_rows := full_rows AND cardinality(approx) = cardinality(exact);
        ordered := ordered AND coalesce((SELECT bool_and(dists[i] <= dists[i + 1])
                                         FROM generate_series(1, cardinality(dists) - 1) i), true);
    END LOOP;
    recall_ok := total = 0 OR hits::numeric / total >= 0.95;
    RETURN NEXT;
END $$;

SELECT 'label = 3' AS filter, * FROM vf_check('label = 3');
SELECT 'grp = 7 (bigint = int)' AS filter, * FROM vf_check('grp = 7');
SELECT 'grp = 7::bigint' AS filter, * FROM vf_check('grp = 7::bigint');
SELECT 'label < 2' AS filter, * FROM vf_check('label < 2');
SELECT 'label <= 1 AND small > 4' AS filter, * FROM vf_check('label <= 1 AND small > 4');
SELECT 'small >= 6' AS filter, * FROM vf_check('small >= 6');
SELECT 'label = 3 AND grp = 13' AS filter, * FROM vf_check('label = 3 AND grp = 13', 40);
SELECT 'id % 50 = 7' AS filter, * FROM vf_check('id % 50 = 7');
-- no row matches: an empty answer, after a walk over the whole index
SELECT 'label = 11' AS filter, * FROM vf_check('label = 11');
-- conditions the index cannot take (IS NULL, IN lists: the planner keeps
-- no ordering with an array condition on a later column) stay a Filter
-- above the scan and still fill LIMIT
SELECT 'label IS NULL' AS filter, * FROM vf_check('label IS NULL');
SELECT 'label IN (1, 2)' AS filter, * FROM vf_check('label IN (1, 2)');
SELECT 'grp = ANY (''{7,NULL,13}'')' AS filter, * FROM vf_check('grp = ANY (''{7,NULL,13}'')');
-- a comparison with NULL matches nothing
SET enable_seqscan = off;
SELECT count(*) FROM (SELECT id FROM vf_items WHERE label = NULL::int ORDER BY v <-> '[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]' LIMIT 5) s;
RESET enable_seqscan;

-- inserts carry their filter values; VACUUM keeps them
INSERT INTO vf_items
SELECT i, i % 10, i % 100, (i % 7)::smallint,
       ARRAY(SELECT (i % 8) * 0.3 + random() FROM generate_series(1, 16) d)::avector
FROM generate_series(3001, 4000) i;
SELECT 'label = 3, after inserts' AS filter, * FROM vf_check('label = 3');
DELETE FROM vf_items WHERE id % 10 IN (3, 4) AND id % 3 = 0;
VACUUM (FREEZE) vf_items;
SELECT 'label = 3, after delete and vacuum' AS filter, * FROM vf_check('label = 3');
SELECT 'grp = 7, after delete and vacuum' AS filter, * FROM vf_check('grp = 7');
SELECT archer_vector_verify('vf_idx') = (SELECT count(*) FROM vf_items) AS verified;

-- filter lists: each value's nodes are linked among themselves, and a scan
-- with column = value searches that graph.  New rows overwrite the nodes
-- VACUUM freed, whatever value those held; verify checks that every filter
-- list links nodes of the list owner's value only.
INSERT INTO vf_items
SELECT i, (i + 5) % 10, i % 100, (i % 7)::smallint,
       ARRAY(SELECT (i % 8) * 0.3 + random() FROM generate_series(1, 16) d)::avector
FROM generate_series(4001, 4300) i;
SELECT 'label = 3, after reusing freed nodes' AS filter, * FROM vf_check('label = 3');
SELECT archer_vector_verify('vf_idx') = (SELECT count(*) FROM vf_items) AS verified;
-- a value only a few rows hold: its graph runs dry and the scan walks on,
-- so the answer still holds every such row
UPDATE vf_items SET label = 42 WHERE id IN (5, 1005, 2005, 3005);
SELECT 'label = 42 (4 rows)' AS filter, * FROM vf_check('label = 42');
-- an index filled by inserts alone (TRUNCATE leaves it empty): every
-- filter list comes from the inserts' searches
CREATE TEMP TABLE vf_saved AS SELECT * FROM vf_items;
TRUNCATE vf_items;
INSERT INTO vf_items SELECT * FROM vf_saved ORDER BY id;
SELECT 'label = 3, index filled by inserts' AS filter, * FROM vf_check('label = 3');
SELECT 'grp = 7, index filled by inserts' AS filter, * FROM vf_check('grp = 7');
SELECT 'label = 3 AND grp = 13, index filled by inserts' AS filter, * FROM vf_check('label = 3 AND grp = 13', 40);
SELECT archer_vector_verify('vf_idx') = (SELECT count(*) FROM vf_items) AS verified;

-- an index on a temporary table: local buffers, which scans pin again
-- through the buffer they last read each block into, across queries
CREATE TEMP TABLE vf_temp AS SELECT * FROM vf_items;
CREATE INDEX ON vf_temp USING archer_vector (v, label);
DELETE FROM vf_temp WHERE id % 5 = 0;
VACUUM (FREEZE) vf_temp;
INSERT INTO vf_temp SELECT id + 10000, label, grp, small, v FROM vf_items WHERE id % 5 = 0;
SET enable_seqscan = off;
CREATE TEMP TABLE vf_temp_answers AS
SELECT q.qid, ARRAY(SELECT id FROM vf_temp WHERE label = 3 ORDER BY v <-> q.v LIMIT 10) AS ids
FROM vf_queries q;
RESET enable_seqscan;
SET enable_indexscan = off;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE cardinality(a.ids) = 10) AS full_answers,
       sum((SELECT count(*) FROM unnest(a.ids) x
            WHERE x = ANY (ARRAY(SELECT id FROM vf_temp WHERE label = 3 ORDER BY v <-> q.v LIMIT 10))))
         >= 0.95 * 10 * count(*) AS recall_ok
FROM vf_temp_answers a JOIN vf_queries q USING (qid);
RESET enable_indexscan;
SELECT archer_vector_verify('vf_temp_v_label_idx') = (SELECT count(*) FROM vf_temp) AS verified;

-- the vector column comes first, then at most four integer columns
CREATE INDEX ON vf_items USING archer_vector (label, v);
CREATE INDEX ON vf_items USING archer_vector (v, v);
CREATE INDEX ON vf_items USING archer_vector (v, label, grp, small, id, label);
CREATE INDEX ON vf_items USING archer_vector (v, (id::text));
CREATE INDEX ON vf_items USING archer_vector (v) INCLUDE (label);
-- the largest m with four filter columns still leaves room for vectors
CREATE INDEX vf_wide ON vf_items USING archer_vector (v, label, grp, small, ((id % 50))) WITH (m = 100);
SELECT archer_vector_verify('vf_wide') = (SELECT count(*) FROM vf_items) AS verified;
DROP INDEX vf_wide;

DROP TABLE vf_items, vf_queries;
DROP FUNCTION vf_check;
