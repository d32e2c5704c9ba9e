-- archer_vector with rows unlike the rows it was built from: vectors the
-- build's quantizer would clamp (negated, shifted) are inserted after
-- CREATE INDEX, directly and through the insert buffer, and into an index
-- built on an empty table.  Recall of old and new rows stays high and the
-- index's rows come back in exact order.
SELECT setseed(0.77);
CREATE TABLE drift (id int PRIMARY KEY, v avector(24));
-- 12 clusters, every coordinate in [-1, 14]; later rows negated (within
-- the wide quantizer), shifted by 25 (within it too) and shifted by 200
-- ('far': beyond it, so they clamp and only their order is checked)
INSERT INTO drift
SELECT i, ARRAY(SELECT (i % 12 * 7 % 13) + random() * 2 - 1 FROM generate_series(1, 24) d)::avector
FROM generate_series(1, 3000) i;
CREATE TABLE drift_queries (qid int, kind text, v avector(24));
INSERT INTO drift_queries
SELECT q, 'built', ARRAY(SELECT (q % 13) + random() * 2 - 1 FROM generate_series(1, 24) d)::avector
FROM generate_series(1, 20) q;
INSERT INTO drift_queries
SELECT q, 'negated', ARRAY(SELECT -((q % 13) + random() * 2 - 1) FROM generate_series(1, 24) d)::avector
FROM generate_series(21, 40) q;
INSERT INTO drift_queries
SELECT q, 'far', ARRAY(SELECT 200 + (q % 13) + random() * 2 - 1 FROM generate_series(1, 24) d)::avector
FROM generate_series(61, 80) q;
INSERT INTO drift_queries
SELECT q, 'shifted', ARRAY(SELECT 25 + (q % 13) + random() * 2 - 1 FROM generate_series(1, 24) d)::avector
FROM generate_series(41, 60) q;

-- recall@10 per query kind, and whether every answer came in exact order
CREATE FUNCTION drift_recall(tbl text)
RETURNS TABLE (kind text, recall numeric, ordered boolean) LANGUAGE plpgsql AS $$
DECLARE
    q record;
    approx int[];
    exact int[];
    dists float8[];
BEGIN
    CREATE TEMP TABLE IF NOT EXISTS drift_hits (kind text, hits int, ordered boolean);
    TRUNCATE drift_hits;
    FOR q IN SELECT * FROM drift_queries LOOP
        SET LOCAL enable_seqscan = off;
        EXECUTE format('SELECT array_agg(id ORDER BY ord), array_agg(d ORDER BY ord) FROM
                        (SELECT id, v <-> $1 AS d, row_number() OVER () AS ord
                         FROM (SELECT id, v FROM %I ORDER BY v <-> $1 LIMIT 10) s) t', tbl)
            INTO approx, dists USING q.v;
        SET LOCAL enable_seqscan = on;
        SET LOCAL enable_indexscan = off;
        EXECUTE format('SELECT array_agg(id) FROM (SELECT id FROM %I ORDER BY v <-> $1 LIMIT 10) s', tbl)
            INTO exact USING q.v;
        SET LOCAL enable_indexscan = on;
        INSERT INTO drift_hits
        SELECT q.kind, (SELECT count(*) FROM unnest(approx) a WHERE a = ANY (exact)),
               dists = (SELECT array_agg(x ORDER BY x) FROM unnest(dists) x);
    END LOOP;
    RETURN QUERY SELECT h.kind, round(sum(h.hits)::numeric / (10 * count(*)), 2), bool_and(h.ordered)
                 FROM drift_hits h GROUP BY h.kind ORDER BY h.kind;
END $$;

CREATE INDEX drift_v ON drift USING archer_vector (v);
-- negated and far-shifted copies of the clusters, inserted one by one
INSERT INTO drift
SELECT 3000 + i, ARRAY(SELECT -((i % 12 * 7 % 13) + random() * 2 - 1) FROM generate_series(1, 24) d)::avector
FROM generate_series(1, 1500) i;
INSERT INTO drift
SELECT 4500 + i, ARRAY(SELECT 25 + (i % 12 * 7 % 13) + random() * 2 - 1 FROM generate_series(1, 24) d)::avector
FROM generate_series(1, 1500) i;
INSERT INTO drift
SELECT 6000 + i, ARRAY(SELECT 200 + (i % 12 * 7 % 13) + random() * 2 - 1 FROM generate_series(1, 24) d)::avector
FROM generate_series(1, 500) i;
SELECT kind, recall >= 0.9 OR kind = 'far' AS good_recall, ordered FROM drift_recall('drift');
SELECT archer_vector_verify('drift_v') = (SELECT count(*) FROM drift) AS verified;

-- the same rows through the insert buffer, merged by archer_flush
CREATE TABLE drift_buffered (id int PRIMARY KEY, v avector(24));
INSERT INTO drift_buffered SELECT * FROM drift WHERE id <= 3000;
CREATE INDEX drift_buffered_v ON drift_buffered USING archer_vector (v) WITH (insert_buffer = on);
SET archer.insert_buffer_max_entries = 100000;
INSERT INTO drift_buffered SELECT * FROM drift WHERE id > 3000;
SELECT kind, recall >= 0.9 OR kind = 'far' AS good_recall, ordered FROM drift_recall('drift_buffered');
SELECT archer_flush('drift_buffered_v') = 3500 AS merged;
SELECT kind, recall >= 0.9 OR kind = 'far' AS good_recall, ordered FROM drift_recall('drift_buffered');
RESET archer.insert_buffer_max_entries;

-- an index built on an empty table (dimension known from the typmod) takes
-- its quantizer from the first row
CREATE TABLE drift_empty (id int PRIMARY KEY, v avector(24));
CREATE INDEX drift_empty_v ON drift_empty USING archer_vector (v);
INSERT INTO drift_empty SELECT * FROM drift ORDER BY id;
SELECT kind, recall >= 0.9 OR kind = 'far' AS good_recall, ordered FROM drift_recall('drift_empty');
SELECT archer_vector_verify('drift_empty_v') = (SELECT count(*) FROM drift_empty) AS verified;

-- an index built from five rows widens their range
CREATE TABLE drift_small (id int PRIMARY KEY, v avector(24));
INSERT INTO drift_small SELECT * FROM drift WHERE id <= 5;
CREATE INDEX drift_small_v ON drift_small USING archer_vector (v);
INSERT INTO drift_small SELECT * FROM drift WHERE id > 5 ORDER BY id;
SELECT kind, recall >= 0.9 OR kind = 'far' AS good_recall, ordered FROM drift_recall('drift_small');

DROP TABLE drift, drift_buffered, drift_empty, drift_small, drift_queries;
DROP FUNCTION drift_recall;
