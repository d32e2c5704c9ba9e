-- Large finite values in archer_vector.  A query vector may hold any
-- finite value (1e20, +-FLT_MAX, denormals): the index scan returns the
-- same sequence of exact distances as a sequential scan, never "index
-- returned tuples in wrong order" (its float code distances used to
-- overflow to infinity, a "lower bound" above the exact distance).
-- Indexed rows hold components up to 1e15 in magnitude: build, insert and
-- buffered insert refuse larger ones with 22003, so a table with the index
-- holds none and every plan gives the same answer.
SET statement_timeout = '60s';
SELECT setseed(0.125);
CREATE TABLE vx(id int, e real[], a avector(4));
INSERT INTO vx SELECT g, x, x::avector
FROM (SELECT g, ARRAY[(random() - 0.5) * 1e14, (random() - 0.5) * 1e14,
                      random() * 1e6, random()]::real[] AS x
      FROM generate_series(1, 400) g) s;
INSERT INTO vx VALUES
    (401, '{1e15,-1e15,1e15,-1e15}', '[1e15,-1e15,1e15,-1e15]'),
    (402, '{1e-45,0,-1e-45,1e-40}', '[1e-45,0,-1e-45,1e-40]'),
    (403, '{-1e15,-1e15,-1e15,-1e15}', '[-1e15,-1e15,-1e15,-1e15]');
CREATE INDEX vx_l2 ON vx USING archer_vector (e);
CREATE INDEX vx_ip ON vx USING archer_vector (e float4_ip_ops);
CREATE INDEX vx_cos ON vx USING archer_vector (e float4_cosine_ops);
CREATE INDEX vx_a ON vx USING archer_vector (a);

CREATE TABLE vx_queries(qid int, q real[]);
INSERT INTO vx_queries VALUES
    (1, '{1e20,0,0,0}'),
    (2, '{1e20,-1e20,1e20,-1e20}'),
    (3, '{3.4028235e38,-3.4028235e38,3.4028235e38,-3.4028235e38}'),
    (4, '{-3.4028235e38,0,0,0}'),
    (5, '{-1e30,1e-30,0,5}'),
    (6, '{1e-45,-1e-45,1e-45,0}'),
    (7, '{5e13,-5e13,1e6,1}');

-- the query of vx_cases: each query with each operator, LIMIT lim
CREATE FUNCTION vx_knn(op text, q real[], lim int) RETURNS text LANGUAGE sql AS $$
    SELECT format('SELECT %1$s %2$s AS dist FROM vx ORDER BY %1$s %2$s LIMIT %3$s', op,
                  CASE WHEN op LIKE 'a%' THEN format('%L::avector', q::avector)
                       ELSE format('%L::real[]', q) END, lim)
$$;
CREATE VIEW vx_cases AS
    SELECT q.qid, o.op, q.q
    FROM vx_queries q, unnest(ARRAY['e <->', 'e <#>', 'e <=>', 'a <->']) o(op);

-- LIMIT 10: the index and a sequential scan give the same exact distances
-- in the same order
SELECT c.qid, c.op, k.*
FROM vx_cases c, LATERAL knn_vs_seq(vx_knn(c.op, c.q, 10)) k
WHERE NOT (k.same_order AND k.used_index AND k.n_rows = 10);

-- every row: the index scan returns them in exact order; strict, the
-- default, skips the rows its widening search finds late (here up to a
-- quarter of them: with +-FLT_MAX in the query, inner products of most rows
-- lie beyond float's range and their code distances tie); relaxed returns
-- every row
CREATE FUNCTION vx_all(op text, q real[], OUT ordered boolean, OUT missing bigint,
                       OUT extra bigint, OUT relaxed_missing bigint)
LANGUAGE plpgsql AS $$
DECLARE
    wrapped text := 'SELECT coalesce(array_agg(dist ORDER BY ord), ''{}'') FROM (SELECT dist, row_number() OVER () AS ord FROM ('
                    || vx_knn(op, q, 1000) || ') s) t';
    by_index float8[];
    by_relaxed float8[];
    by_seq float8[];
BEGIN
    PERFORM set_config('enable_seqscan', 'off', true);
    EXECUTE wrapped INTO by_index;
    PERFORM set_config('archer.vector_order', 'relaxed', true);
    EXECUTE wrapped INTO by_relaxed;
    PERFORM set_config('archer.vector_order', 'strict', true);
    PERFORM set_config('enable_seqscan', 'on', true);
    PERFORM set_config('enable_indexscan', 'off', true);
    EXECUTE wrapped INTO by_seq;
    PERFORM set_config('enable_indexscan', 'on', true);
    ordered := by_index = ARRAY(SELECT unnest(by_index) ORDER BY 1);
    SELECT count(*) INTO missing FROM (SELECT unnest(by_seq) EXCEPT ALL SELECT unnest(by_index)) d;
    SELECT count(*) INTO extra FROM (SELECT unnest(by_index) EXCEPT ALL SELECT unnest(by_seq)) d;
    SELECT count(*) INTO relaxed_missing
    FROM (SELECT unnest(by_seq) EXCEPT ALL SELECT unnest(by_relaxed)) d;
END $$;
SELECT count(*) AS cases,
       count(*) FILTER (WHERE a.ordered) AS ordered,
       count(*) FILTER (WHERE a.extra = 0) AS no_extra_rows,
       count(*) FILTER (WHERE a.missing <= 0.5 * 403) AS most_rows,
       count(*) FILTER (WHERE a.relaxed_missing = 0) AS relaxed_all_rows
FROM vx_cases c, LATERAL vx_all(c.op, c.q) a;

-- rows beyond 1e15: refused by the build, inserts and buffered inserts
\set VERBOSITY sqlstate
INSERT INTO vx VALUES (0, '{1e16,0,0,0}', '[1e16,0,0,0]');
INSERT INTO vx (id, e) VALUES (0, '{0,0,0,-3.4028235e38}');
INSERT INTO vx (id, a) VALUES (0, '[0,3.4028235e38,0,0]');
CREATE TABLE vx_rows(id int, e real[]);
INSERT INTO vx_rows VALUES (1, '{1,2,3}'), (2, '{-1e20,0,0}');
CREATE INDEX ON vx_rows USING archer_vector (e);
DELETE FROM vx_rows WHERE id = 2;
CREATE INDEX vx_rows_b ON vx_rows USING archer_vector (e) WITH (insert_buffer = on);
INSERT INTO vx_rows VALUES (3, '{0,1.5e15,0}');
-- the first row of an index built empty sets its quantizer: refused before that
CREATE TABLE vx_empty(id int, e real[]);
CREATE INDEX vx_empty_e ON vx_empty USING archer_vector (e);
INSERT INTO vx_empty VALUES (1, '{3.4028235e38,0}');
\set VERBOSITY default
INSERT INTO vx_empty VALUES (1, '{3e15,0}');
INSERT INTO vx_empty SELECT g, ARRAY[g, -g]::real[] FROM generate_series(2, 50) g;
SET enable_seqscan = off;
SELECT id FROM vx_empty ORDER BY e <-> '{1e20,1e20}' LIMIT 3;
SELECT id FROM vx_empty ORDER BY e <-> '{10.2,-10.2}' LIMIT 3;
RESET enable_seqscan;
SELECT archer_vector_verify('vx_empty_e') AS verified;

DROP FUNCTION vx_all(text, real[]);
DROP VIEW vx_cases;
DROP FUNCTION vx_knn(text, real[], int);
DROP TABLE vx, vx_queries, vx_rows, vx_empty;
