-- Rows whose vector is NULL: a sequential scan sorts their NULL distances
-- after every other row, so ORDER BY v <op> q LIMIT k returns them once the
-- rows with a vector run out; the index must return the same rows
-- (issue #22: an index answer equals the exact query on the same rows).
-- Each case compares the sequence of distances (NULLs last) through the
-- index with a sequential scan's, and the set of ids with a LIMIT past
-- every row.
SELECT setseed(0.1515);
CREATE TABLE vn (id int PRIMARY KEY, grp int, v avector(4), a real[]);
INSERT INTO vn SELECT i, i % 3,
       CASE WHEN i % 4 = 0 THEN NULL ELSE ARRAY(SELECT random() + 0 * i FROM generate_series(1, 4))::avector END,
       NULL
FROM generate_series(1, 40) i;
UPDATE vn SET a = v::real[];
CREATE INDEX vn_l2 ON vn USING archer_vector (v, grp);
CREATE INDEX vn_ip ON vn USING archer_vector (v avector_ip_ops);
CREATE INDEX vn_cos ON vn USING archer_vector (v avector_cosine_ops);
CREATE INDEX vn_arr ON vn USING archer_vector (a, grp);

-- every case: (operator, column, filter, limit)
CREATE FUNCTION vn_check(col text, op text, filter text, lim int)
RETURNS TABLE (n_rows bigint, n_null bigint, same_order boolean, used_index boolean, same_ids boolean)
LANGUAGE plpgsql AS $$
DECLARE
    q text := CASE WHEN col = 'v' THEN '''[0.3,0.6,0.2,0.9]''::avector' ELSE '''{0.3,0.6,0.2,0.9}''::real[]' END;
    knn text := format('SELECT id, %1$s %2$s %3$s AS dist FROM vn WHERE %4$s ORDER BY %1$s %2$s %3$s LIMIT %5$s',
                       col, op, q, filter, lim);
    k record;
    ids record;
BEGIN
    k := knn_vs_seq(knn);
    ids := index_vs_seq(format('SELECT id FROM vn WHERE %s ORDER BY %s %s %s LIMIT 1000',
                               filter, col, op, q));
    n_rows := k.n_rows;
    EXECUTE format('SELECT count(*) FROM (%s) s WHERE dist IS NULL', knn) INTO n_null;
    same_order := k.same_order;
    used_index := k.used_index AND ids.used_index;
    same_ids := ids.mismatches = 0;
    RETURN NEXT;
END $$;

CREATE VIEW vn_cases AS
SELECT c.col, o.op, f.filter, l.lim
FROM (VALUES ('v'), ('a')) c(col),
     (VALUES ('<->'), ('<#>'), ('<=>')) o(op),
     (VALUES ('true'), ('grp = 1')) f(filter),
     (VALUES (5), (35), (100)) l(lim)
WHERE c.col = 'v' OR o.op = '<->';

-- built over rows with NULL vectors
SELECT col, op, filter, lim, k.*
FROM vn_cases, LATERAL vn_check(col, op, filter, lim) k ORDER BY 1, 2, 3, 4;
SELECT archer_vector_verify('vn_l2') AS l2, archer_vector_verify('vn_ip') AS ip,
       archer_vector_verify('vn_cos') AS cos, archer_vector_verify('vn_arr') AS arr,
       (SELECT count(*) FROM vn) AS rows;

-- inserted rows, NULL and not
INSERT INTO vn SELECT i, i % 3, CASE WHEN i % 2 = 0 THEN NULL ELSE '[0.5,0.5,0.5,0.5]'::avector END, NULL
FROM generate_series(41, 50) i;
UPDATE vn SET a = v::real[] WHERE id > 40;
SELECT col, op, filter, lim, k.*
FROM vn_cases, LATERAL vn_check(col, op, filter, lim) k WHERE lim = 100 ORDER BY 1, 2, 3, 4;

-- after DELETE and VACUUM: the nodes of dead rows go, NULL or not
DELETE FROM vn WHERE id % 5 = 0;
VACUUM (FREEZE) vn;
SELECT col, op, filter, lim, k.*
FROM vn_cases, LATERAL vn_check(col, op, filter, lim) k WHERE lim = 100 ORDER BY 1, 2, 3, 4;
SELECT archer_vector_verify('vn_l2') AS l2, archer_vector_verify('vn_ip') AS ip,
       archer_vector_verify('vn_cos') AS cos, archer_vector_verify('vn_arr') AS arr,
       (SELECT count(*) FROM vn) AS rows;

-- a table whose rows with a vector are all gone: only NULL rows remain
CREATE TABLE vn_only (id int, v avector(2));
INSERT INTO vn_only VALUES (1, '[1,2]'), (2, NULL), (3, NULL);
CREATE INDEX vn_only_v ON vn_only USING archer_vector (v);
DELETE FROM vn_only WHERE id = 1;
VACUUM (FREEZE) vn_only;
SET enable_seqscan = off;
SELECT id FROM vn_only ORDER BY v <-> '[0,0]' LIMIT 5;
RESET enable_seqscan;
SELECT archer_vector_verify('vn_only_v') AS verified;

-- the insert buffer: NULL rows as buffer entries, then merged
CREATE TABLE vnb (id int PRIMARY KEY, grp int, v avector(4));
INSERT INTO vnb SELECT i, i % 3, ARRAY(SELECT random() + 0 * i FROM generate_series(1, 4))::avector
FROM generate_series(1, 20) i;
CREATE INDEX vnb_v ON vnb USING archer_vector (v, grp) WITH (insert_buffer = on);
INSERT INTO vnb SELECT i, i % 3, CASE WHEN i % 2 = 0 THEN NULL ELSE ARRAY(SELECT random() + 0 * i FROM generate_series(1, 4))::avector END
FROM generate_series(21, 40) i;
CREATE FUNCTION vnb_check(filter text)
RETURNS TABLE (n_rows bigint, same_order boolean, used_index boolean)
LANGUAGE sql AS $$
    SELECT n_rows, same_order, used_index FROM knn_vs_seq(format(
        'SELECT v <-> ''[0.3,0.6,0.2,0.9]'' AS dist FROM vnb WHERE %s ORDER BY v <-> ''[0.3,0.6,0.2,0.9]'' LIMIT 100', filter))
$$;
SELECT 'buffered' AS state, f, k.* FROM (VALUES ('true'), ('grp = 2')) f(f), LATERAL vnb_check(f) k;
SELECT archer_vector_verify('vnb_v') = (SELECT count(*) FROM vnb) AS verified;
SELECT archer_flush('vnb_v') AS merged;
SELECT 'merged' AS state, f, k.* FROM (VALUES ('true'), ('grp = 2')) f(f), LATERAL vnb_check(f) k;
SELECT archer_vector_verify('vnb_v') = (SELECT count(*) FROM vnb) AS verified;

-- strict and relaxed order alike
SET archer.vector_order = relaxed;
SELECT 'relaxed' AS state, f, k.* FROM (VALUES ('true'), ('grp = 2')) f(f), LATERAL vnb_check(f) k;
RESET archer.vector_order;

-- a zero vector under cosine next to NULL ones: its node is never marked
-- like a NULL vector's (ZERO and WIDE together), even where the trained
-- range (here 1000+ rows, every component positive) clamps its code
CREATE TABLE vz (id int, v avector(4));
INSERT INTO vz SELECT i, ARRAY(SELECT 1 + random() + 0 * i FROM generate_series(1, 4))::avector
FROM generate_series(1, 1200) i;
CREATE INDEX vz_cos ON vz USING archer_vector (v avector_cosine_ops);
INSERT INTO vz VALUES (2001, '[0,0,0,0]'), (2002, NULL), (2003, '[0,0,0,0]');
-- a search as wide as the table, so that every row comes from the first
-- round: what strict order does with rows a later round finds late is
-- vector_order's test, not this one's
SET archer.ef_search = 2000;
SELECT n_rows, same_order, used_index FROM knn_vs_seq(
    'SELECT v <=> ''[1,2,3,4]'' AS dist FROM vz ORDER BY v <=> ''[1,2,3,4]'' LIMIT 2000');
RESET archer.ef_search;
SELECT archer_vector_verify('vz_cos') AS verified;

-- an index built without vectors learns its dimension from its first
-- vector; rows with a NULL vector that come before it are kept on pages of
-- their own and answered like all others, before and after the dimension
-- is known (issue #22: they were left out until REINDEX)
CREATE TABLE vn_empty (id int, grp int, v avector(2));
CREATE INDEX vn_empty_v ON vn_empty USING archer_vector (v, grp);
-- enough rows for more than one page of them
INSERT INTO vn_empty SELECT i, i % 3, NULL FROM generate_series(1, 600) i;
CREATE FUNCTION vne_check(filter text)
RETURNS TABLE (n_rows bigint, same_order boolean, same_ids boolean, used_index boolean)
LANGUAGE plpgsql AS $$
DECLARE
    k record;
    ids record;
BEGIN
    k := knn_vs_seq(format('SELECT v <-> ''[0.5,0.5]'' AS dist FROM vn_empty WHERE %s ORDER BY v <-> ''[0.5,0.5]'' LIMIT 1000', filter));
    ids := index_vs_seq(format('SELECT id FROM vn_empty WHERE %s ORDER BY v <-> ''[0.5,0.5]'' LIMIT 1000', filter));
    n_rows := k.n_rows;
    same_order := k.same_order;
    same_ids := ids.mismatches = 0;
    used_index := k.used_index AND ids.used_index;
    RETURN NEXT;
END $$;
SELECT 'no dimension' AS state, f, k.* FROM (VALUES ('true'), ('grp = 1')) f(f), LATERAL vne_check(f) k;
SELECT archer_vector_verify('vn_empty_v') AS verified;
DELETE FROM vn_empty WHERE id % 10 = 0;
VACUUM (FREEZE) vn_empty;
SELECT 'no dimension, vacuumed' AS state, f, k.* FROM (VALUES ('true'), ('grp = 1')) f(f), LATERAL vne_check(f) k;
SELECT archer_vector_verify('vn_empty_v') AS verified;
-- the first vector sets the dimension; rows of both kinds follow
INSERT INTO vn_empty SELECT i, i % 3,
       CASE WHEN i % 2 = 0 THEN NULL ELSE ARRAY(SELECT random() + 0 * i FROM generate_series(1, 2))::avector END
FROM generate_series(601, 700) i;
SELECT 'dimension set' AS state, f, k.* FROM (VALUES ('true'), ('grp = 1')) f(f), LATERAL vne_check(f) k;
SELECT archer_vector_verify('vn_empty_v') = (SELECT count(*) FROM vn_empty) AS verified;
SET archer.vector_order = relaxed;
SELECT 'relaxed' AS state, f, k.* FROM (VALUES ('true'), ('grp = 1')) f(f), LATERAL vne_check(f) k;
RESET archer.vector_order;
DELETE FROM vn_empty WHERE id % 7 = 0;
VACUUM (FREEZE) vn_empty;
SELECT 'vacuumed' AS state, f, k.* FROM (VALUES ('true'), ('grp = 1')) f(f), LATERAL vne_check(f) k;
SELECT archer_vector_verify('vn_empty_v') = (SELECT count(*) FROM vn_empty) AS verified;
-- REINDEX gives the same answers
REINDEX INDEX vn_empty_v;
SELECT 'reindexed' AS state, f, k.* FROM (VALUES ('true'), ('grp = 1')) f(f), LATERAL vne_check(f) k;

-- built over rows whose vectors are all NULL, with an insert buffer: the
-- same pages, and buffered inserts once the dimension is known
CREATE TABLE vn_nullonly (id int, v real[]);
INSERT INTO vn_nullonly SELECT i, NULL FROM generate_series(1, 30) i;
CREATE INDEX vn_nullonly_v ON vn_nullonly USING archer_vector (v) WITH (insert_buffer = on);
SET enable_seqscan = off;
SELECT count(*) AS through_index FROM (SELECT id FROM vn_nullonly ORDER BY v <-> '{1,2,3}' LIMIT 100) s;
RESET enable_seqscan;
SELECT archer_vector_verify('vn_nullonly_v') AS verified;
INSERT INTO vn_nullonly SELECT i, CASE WHEN i % 3 = 0 THEN NULL ELSE ARRAY[i, 1, 2]::real[] END
FROM generate_series(31, 60) i;
SELECT n_rows, same_order, used_index FROM knn_vs_seq(
    'SELECT v <-> ''{40,1,2}'' AS dist FROM vn_nullonly ORDER BY v <-> ''{40,1,2}'' LIMIT 100');
SELECT archer_vector_verify('vn_nullonly_v') = (SELECT count(*) FROM vn_nullonly) AS verified;
SELECT archer_flush('vn_nullonly_v') >= 0 AS flushed;
SELECT n_rows, same_order, used_index FROM knn_vs_seq(
    'SELECT v <-> ''{40,1,2}'' AS dist FROM vn_nullonly ORDER BY v <-> ''{40,1,2}'' LIMIT 100');
SELECT archer_vector_verify('vn_nullonly_v') = (SELECT count(*) FROM vn_nullonly) AS verified;

DROP VIEW vn_cases;
DROP FUNCTION vn_check(text, text, text, int), vnb_check(text), vne_check(text);
DROP TABLE vn, vn_only, vnb, vn_empty, vn_nullonly, vz;
