-- archer_vector: plans, exact ordering of what the index returns, recall
-- against an exact scan, filtered queries that still fill LIMIT, inserts,
-- VACUUM with graph repair, and bad input.
SELECT setseed(0.31);
-- no autoanalyze: it would hold back the VACUUMs below (exact node counts)
CREATE TABLE vec_items (id int PRIMARY KEY, label int, v avector(24), a real[])
  WITH (autovacuum_enabled = off);
-- 12 clusters in 24 dimensions, labels spread over the clusters
INSERT INTO vec_items
SELECT i, i % 10,
       ARRAY(SELECT (c.k * 7 % 13) + random() * 2 - 1 FROM generate_series(1, 24) d)::avector,
       NULL
FROM generate_series(1, 4000) i, LATERAL (SELECT i % 12 AS k) c;
UPDATE vec_items SET a = v::real[];
-- a few rows with no vector
INSERT INTO vec_items VALUES (4001, 1, NULL, NULL), (4002, 2, NULL, NULL);
CREATE TABLE vec_queries AS
SELECT q AS qid, ARRAY(SELECT (q % 13) + random() * 2 - 1 FROM generate_series(1, 24) d)::avector AS v
FROM generate_series(1, 20) q;

CREATE INDEX vec_items_l2 ON vec_items USING archer_vector (v);
CREATE INDEX vec_items_a ON vec_items USING archer_vector (a);

SET enable_seqscan = off;
-- (a constant query vector: a subquery's InitPlan prints differently from 17 on)
EXPLAIN (COSTS OFF) SELECT id FROM vec_items ORDER BY v <-> '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' LIMIT 10;
EXPLAIN (COSTS OFF) SELECT id FROM vec_items WHERE label = 3 ORDER BY a <-> '{1,2,3}'::real[] LIMIT 10;
RESET enable_seqscan;

-- recall@10 of the index against the exact answer, and the index's rows
-- come back in exact distance order
CREATE FUNCTION vec_recall(col text, op text, filter text, k int)
RETURNS TABLE (recall numeric, ordered boolean, full_rows boolean) LANGUAGE plpgsql AS $$
DECLARE
    q record;
    approx int[];
    exact int[];
    dists float8[];
    hits int := 0;
    total int := 0;
    in_order boolean := true;
    all_rows boolean := true;
    typ text := CASE WHEN col = 'a' THEN 'avector::real[]' ELSE 'avector' END;
BEGIN
    FOR q IN SELECT * FROM vec_queries ORDER BY qid LOOP
        PERFORM set_config('enable_seqscan', 'off', true);
        EXECUTE format('SELECT array_agg(id ORDER BY ord), array_agg(d ORDER BY ord) FROM
                         (SELECT id, %1$s %2$s $1::%5$s AS d, row_number() OVER () AS ord
                          FROM (SELECT id, %1$s FROM vec_items WHERE %3$s ORDER BY %1$s %2$s $1::%5$s LIMIT %4$s) s) t',
                       col, op, filter, k, typ)
            INTO approx, dists USING q.v::text;
        PERFORM set_config('enable_seqscan', 'on', true);
        PERFORM set_config('enable_indexscan', 'off', true);
        EXECUTE format('SELECT array_agg(id) FROM (SELECT id FROM vec_items WHERE %3$s ORDER BY %1$s %2$s $1::%5$s LIMIT %4$s) s',
                       col, op, filter, k, typ)
            INTO exact USING q.v::text;
        PERFORM set_config('enable_indexscan', 'on', true);
        hits := hits + (SELECT count(*) FROM unnest(approx) x WHERE x = ANY (exact));
        total := total + cardinality(exact);
        all_rows := all_rows AND cardinality(approx) = cardinality(exact);
        in_order := in_order AND (SELECT bool_and(dists[i] <= dists[i + 1])
                                  FROM generate_series(1, cardinality(dists) - 1) i);
    END LOOP;
    recall := round(hits::numeric / total, 2);
    ordered := in_order;
    full_rows := all_rows;
    RETURN NEXT;
END $$;

SELECT recall >= 0.95 AS good_recall, ordered, full_rows FROM vec_recall('v', '<->', 'true', 10);
SELECT recall >= 0.95 AS good_recall, ordered, full_rows FROM vec_recall('a', '<->', 'true', 10);
-- filtered: 10% and 1% of the rows
SELECT recall >= 0.95 AS good_recall, ordered, full_rows FROM vec_recall('v', '<->', 'label = 3', 10);
SELECT recall >= 0.95 AS good_recall, ordered, full_rows FROM vec_recall('v', '<->', 'id % 100 = 7', 10);
-- large LIMIT: the scan keeps going past ef_search
SELECT recall >= 0.9 AS good_recall, ordered, full_rows FROM vec_recall('v', '<->', 'true', 300);
-- a search width below LIMIT: later, wider rounds hand out the rows the
-- first one could not, still in exact order
SET archer.ef_search = 4;
SELECT recall >= 0.8 AS fair_recall, ordered, full_rows FROM vec_recall('v', '<->', 'true', 10);
SELECT recall >= 0.8 AS fair_recall, ordered, full_rows FROM vec_recall('v', '<->', 'label = 3', 10);
RESET archer.ef_search;

-- inner product and cosine, on vectors pointing every which way (the
-- clusters above all lie along one diagonal, which cosine cannot tell apart)
CREATE INDEX vec_items_ip ON vec_items USING archer_vector (v avector_ip_ops);
DROP INDEX vec_items_l2;
SELECT recall >= 0.9 AS good_recall, ordered, full_rows FROM vec_recall('v', '<#>', 'true', 10);
DROP INDEX vec_items_ip;
ALTER TABLE vec_items RENAME TO vec_clustered;
ALTER TABLE vec_queries RENAME TO vec_clustered_queries;
CREATE TABLE vec_items AS
SELECT id, label, ARRAY(SELECT random() - 0.5 + 0 * id FROM generate_series(1, 24) d)::avector AS v
FROM vec_clustered;
CREATE TABLE vec_queries AS
SELECT qid, ARRAY(SELECT random() - 0.5 + 0 * qid FROM generate_series(1, 24) d)::avector AS v
FROM vec_clustered_queries;
CREATE INDEX vec_items_cos ON vec_items USING archer_vector (v avector_cosine_ops);
SELECT recall >= 0.9 AS good_recall, ordered, full_rows FROM vec_recall('v', '<=>', 'true', 10);
DROP TABLE vec_items, vec_queries;
ALTER TABLE vec_clustered RENAME TO vec_items;
ALTER TABLE vec_clustered_queries RENAME TO vec_queries;
CREATE INDEX vec_items_l2 ON vec_items USING archer_vector (v) WITH (m = 8, ef_construction = 32);
SELECT recall >= 0.95 AS good_recall, ordered, full_rows FROM vec_recall('v', '<->', 'true', 10);

-- inserts after the build, then delete 30% and vacuum: the graph is repaired
INSERT INTO vec_items
SELECT i, i % 10, ARRAY(SELECT (i % 12 * 7 % 13) + random() * 2 - 1 FROM generate_series(1, 24) d)::avector, NULL
FROM generate_series(5001, 6000) i;
SELECT recall >= 0.95 AS good_recall, ordered, full_rows FROM vec_recall('v', '<->', 'true', 10);
DELETE FROM vec_items WHERE id % 10 < 3;
VACUUM (FREEZE) vec_items;
SELECT recall >= 0.95 AS good_recall, ordered, full_rows FROM vec_recall('v', '<->', 'true', 10);
-- the 1000 new rows take the place of deleted nodes: the index does not grow
SELECT pg_relation_size('vec_items_l2') AS size_before_reinsert \gset
INSERT INTO vec_items
SELECT i, i % 10, ARRAY(SELECT (i % 12 * 7 % 13) + random() * 2 - 1 FROM generate_series(1, 24) d)::avector, NULL
FROM generate_series(7001, 8000) i;
SELECT pg_relation_size('vec_items_l2') = :size_before_reinsert AS deleted_nodes_reused,
       archer_vector_verify('vec_items_l2') = (SELECT count(*) FROM vec_items) AS verified;
SELECT recall >= 0.95 AS good_recall, ordered, full_rows FROM vec_recall('v', '<->', 'true', 10);
-- again, after a second round of deletes: nodes deleted earlier and reused
-- are deleted and reused once more
DELETE FROM vec_items WHERE id % 10 = 5;
VACUUM (FREEZE) vec_items;
INSERT INTO vec_items
SELECT i, i % 10, ARRAY(SELECT (i % 12 * 7 % 13) + random() * 2 - 1 FROM generate_series(1, 24) d)::avector, NULL
FROM generate_series(8001, 8400) i;
SELECT pg_relation_size('vec_items_l2') = :size_before_reinsert AS deleted_nodes_reused,
       archer_vector_verify('vec_items_l2') = (SELECT count(*) FROM vec_items) AS verified;
SELECT recall >= 0.95 AS good_recall, ordered, full_rows FROM vec_recall('v', '<->', 'true', 10);

-- an index on an empty table learns its dimension from the first row
CREATE TABLE vec_empty (id int, a real[]);
CREATE INDEX vec_empty_idx ON vec_empty USING archer_vector (a);
INSERT INTO vec_empty SELECT i, ARRAY[i, i * 2, 3]::real[] FROM generate_series(1, 200) i;
SET enable_seqscan = off;
SELECT id FROM vec_empty ORDER BY a <-> '{10.2,20.4,3}' LIMIT 3;
RESET enable_seqscan;

-- bad input
INSERT INTO vec_empty VALUES (1, '{1,2}');
INSERT INTO vec_empty VALUES (1, '{1,2,NaN}');
INSERT INTO vec_items (id, v) VALUES (9999, '[1,2,3]');
SELECT id FROM vec_items ORDER BY a <-> '{1,2}' LIMIT 1;
CREATE INDEX ON vec_items USING archer_vector (v) WITH (m = 1);
CREATE INDEX ON vec_items USING archer_vector (v) WITH (quantization = 'pq');
CREATE TABLE vec_wide (v avector(7200));
CREATE INDEX ON vec_wide USING archer_vector (v);

-- a graph that does not fit in maintenance_work_mem: a NOTICE, then the
-- rows go into the on-disk graph one by one, and the index is as good
DROP INDEX vec_items_l2;
SET maintenance_work_mem = '1MB';
\set VERBOSITY terse
CREATE INDEX vec_items_small_mem ON vec_items USING archer_vector (v);
\set VERBOSITY default
RESET maintenance_work_mem;
SELECT archer_vector_verify('vec_items_small_mem') = (SELECT count(*) FROM vec_items) AS verified;
SELECT recall >= 0.95 AS good_recall, ordered, full_rows FROM vec_recall('v', '<->', 'true', 10);

-- a parallel build (the graph in shared memory, the rows inserted by the
-- leader and its workers): as good, and under wal_consistency_checking
-- (test/t/019) its pages replay exactly.  parallel_workers makes the
-- planner grant workers to this small table; 028 checks that they run.
DROP INDEX vec_items_small_mem;
ALTER TABLE vec_items SET (parallel_workers = 2);
SET max_parallel_maintenance_workers = 2;
SET maintenance_work_mem = '256MB';
CREATE INDEX vec_items_parallel ON vec_items USING archer_vector (v, label);
RESET maintenance_work_mem;
RESET max_parallel_maintenance_workers;
ALTER TABLE vec_items RESET (parallel_workers);
SELECT archer_vector_verify('vec_items_parallel') = (SELECT count(*) FROM vec_items) AS verified;
SELECT recall >= 0.95 AS good_recall, ordered, full_rows FROM vec_recall('v', '<->', 'true', 10);
SELECT recall >= 0.95 AS good_recall, ordered, full_rows FROM vec_recall('v', '<->', 'label = 3', 10);
DROP TABLE vec_items, vec_queries, vec_empty, vec_wide;
DROP FUNCTION vec_recall;
