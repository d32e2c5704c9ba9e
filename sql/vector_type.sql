-- avector: text and binary I/O, typmods, casts, comparison, distances on
-- avector and real[] against plain SQL arithmetic, and the kernel
-- self-test.  Nothing printed depends on the CPU's kernel set.

-- Text I/O: pgvector's format, shortest round-trip output
SELECT '[1,2,3]'::avector;
SELECT '  [ 1.5 , -2e-3,3.25e10 ]  '::avector;
SELECT E'[\t1,\n2\r]'::avector;
SELECT '[0.1, -0, 1e-40, 3.4028235e38, -1.1754944e-38, 16777217]'::avector;
SELECT avector_dims('[1,2,3]'), avector_dims('[7]');

-- every float4 prints as the shortest text that reads back exactly
SELECT setseed(0.31);
CREATE TABLE vec_roundtrip AS
    SELECT i, array_agg(((CASE WHEN random() < 0.5 THEN -1 ELSE 1 END)
                         * (1 + random()) * 10 ^ (random() * 70 - 35))::real) AS a
    FROM generate_series(1, 200) i, generate_series(1, 17) j GROUP BY i;
SELECT count(*) AS vectors,
       count(*) FILTER (WHERE a::avector::text::avector::real[] = a) AS exact,
       count(*) FILTER (WHERE a::avector::text = a::avector::text::avector::text) AS stable_text
FROM vec_roundtrip;

-- malformed text
SELECT ''::avector;
SELECT '1,2'::avector;
SELECT '['::avector;
SELECT '[]'::avector;
SELECT '[ ]'::avector;
SELECT '[,]'::avector;
SELECT '[1,]'::avector;
SELECT '[1,,2]'::avector;
SELECT '[1 2]'::avector;
SELECT '[1,2'::avector;
SELECT '[1,2]x'::avector;
SELECT '[1,2],'::avector;
SELECT '[1,abc]'::avector;
SELECT '{1,2}'::avector;
SELECT '[NaN]'::avector;
SELECT '[1,nan]'::avector;
SELECT '[Infinity]'::avector;
SELECT '[1,-inf]'::avector;
SELECT '[1e39]'::avector;
SELECT '[1,1e-50]'::avector;
SELECT ('[' || array_to_string(array_fill(1, ARRAY[16001]), ',') || ']')::avector;
SELECT avector_dims(('[' || array_to_string(array_fill(1, ARRAY[16000]), ',') || ']')::avector);

-- typmod
CREATE TABLE vec_typmod (v avector(3));
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = 'vec_typmod'::regclass AND attname = 'v';
INSERT INTO vec_typmod VALUES ('[1,2,3]');
INSERT INTO vec_typmod VALUES ('[1,2]');
INSERT INTO vec_typmod VALUES ('[1,2,3,4]'::avector);
INSERT INTO vec_typmod VALUES (ARRAY[4,5,6]);
INSERT INTO vec_typmod VALUES (ARRAY[4,5]::real[]);
SELECT '[1,2]'::avector(3);
SELECT '[1,2,3]'::avector(3);
SELECT '[1,2]'::avector::avector(3);
SELECT NULL::avector(0);
SELECT NULL::avector(16001);
SELECT NULL::avector(3, 4);
SELECT NULL::avector(16000);
SELECT * FROM vec_typmod;

-- casts
SELECT '[1,2.5,3]'::avector::real[];
SELECT ARRAY[1,2.5,3]::real[]::avector;
SELECT ARRAY[1.5,2.25]::float8[]::avector;
SELECT ARRAY[1.5,2.25]::numeric[]::avector;
SELECT ARRAY[1,-2,3]::avector;
SELECT ARRAY[1,2,3]::avector(3);
SELECT ARRAY[1,2]::avector(3);
SELECT '[1,2,3]'::avector::avector(3);
SELECT '[0:2]={7,8,9}'::real[]::avector;             -- any lower bound
SELECT ARRAY[[1,2],[3,4]]::real[]::avector;
SELECT ARRAY[1,NULL]::real[]::avector;
SELECT '{}'::real[]::avector;
SELECT ARRAY['NaN']::real[]::avector;
SELECT ARRAY['-Infinity']::float8[]::avector;
SELECT ARRAY[1e300]::float8[]::avector;
SELECT ARRAY[1e-300]::float8[]::avector;
SELECT ARRAY[1e39]::numeric[]::avector;
SELECT ARRAY['NaN']::numeric[]::avector;
SELECT ARRAY[16777217]::avector;                     -- rounds like int4 -> real

-- binary I/O: send, and receive through COPY BINARY (a bytea's field
-- bytes are exactly what avector_recv reads)
SELECT avector_send('[1,-2,0.5]');
CREATE TABLE vec_bin (id int, v avector);
INSERT INTO vec_bin SELECT i, a::avector FROM vec_roundtrip WHERE i <= 50;
\copy vec_bin TO 'results/vector_type.bin' (FORMAT binary)
CREATE TABLE vec_bin2 (id int, v avector);
\copy vec_bin2 FROM 'results/vector_type.bin' (FORMAT binary)
SELECT count(*), count(*) FILTER (WHERE b.v::real[] = a.v::real[]) AS equal
FROM vec_bin a JOIN vec_bin2 b USING (id);
CREATE TABLE vec_bytes (b bytea);
CREATE TABLE vec_recv (v avector(2));
CREATE FUNCTION vec_recv_test(payload bytea) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE vec_bytes;
    INSERT INTO vec_bytes VALUES (payload);
END $$;
SELECT vec_recv_test('\x000200003f80000040000000');        -- [1,2]
\copy vec_bytes TO 'results/vector_type.bin' (FORMAT binary)
\copy vec_recv FROM 'results/vector_type.bin' (FORMAT binary)
SELECT * FROM vec_recv;
SELECT vec_recv_test('\x00000000');                        -- 0 dimensions
\copy vec_bytes TO 'results/vector_type.bin' (FORMAT binary)
\copy vec_recv FROM 'results/vector_type.bin' (FORMAT binary)
SELECT vec_recv_test('\xffff0000');                        -- -1 dimensions
\copy vec_bytes TO 'results/vector_type.bin' (FORMAT binary)
\copy vec_recv FROM 'results/vector_type.bin' (FORMAT binary)
SELECT vec_recv_test('\x000200013f80000040000000');        -- unused = 1
\copy vec_bytes TO 'results/vector_type.bin' (FORMAT binary)
\copy vec_recv FROM 'results/vector_type.bin' (FORMAT binary)
SELECT vec_recv_test('\x000200003f8000007fc00000');        -- NaN
\copy vec_bytes TO 'results/vector_type.bin' (FORMAT binary)
\copy vec_recv FROM 'results/vector_type.bin' (FORMAT binary)
SELECT vec_recv_test('\x00020000ff8000003f800000');        -- -Infinity
\copy vec_bytes TO 'results/vector_type.bin' (FORMAT binary)
\copy vec_recv FROM 'results/vector_type.bin' (FORMAT binary)
SELECT vec_recv_test('\x000300003f800000400000003f800000'); -- 3 dims into avector(2)
\copy vec_bytes TO 'results/vector_type.bin' (FORMAT binary)
\copy vec_recv FROM 'results/vector_type.bin' (FORMAT binary)
SELECT vec_recv_test('\x000200003f800000');                -- truncated
\copy vec_bytes TO 'results/vector_type.bin' (FORMAT binary)
\copy vec_recv FROM 'results/vector_type.bin' (FORMAT binary)
SELECT vec_recv_test('\x000200003f8000004000000000');      -- trailing byte
\copy vec_bytes TO 'results/vector_type.bin' (FORMAT binary)
\copy vec_recv FROM 'results/vector_type.bin' (FORMAT binary)
SELECT * FROM vec_recv;

-- distances on small exact values, both types
SELECT '[1,2,3]'::avector <-> '[4,6,8]' AS l2,
       '[1,2,3]'::avector <#> '[4,6,8]' AS neg_ip,
       '[1,2,3]'::avector <=> '[4,6,8]' AS cosine;
SELECT ARRAY[1,2,3]::real[] <-> ARRAY[4,6,8]::real[] AS l2,
       ARRAY[1,2,3]::real[] <#> ARRAY[4,6,8]::real[] AS neg_ip,
       ARRAY[1,2,3]::real[] <=> ARRAY[4,6,8]::real[] AS cosine;
SELECT archer_l2_distance('[1,2,3]'::avector, '[4,6,8]'),
       archer_l2_squared_distance('[1,2,3]'::avector, '[4,6,8]'),
       archer_inner_product('[1,2,3]'::avector, '[4,6,8]'),
       archer_negative_inner_product('[1,2,3]'::avector, '[4,6,8]'),
       archer_cosine_distance('[1,2,3]'::avector, '[4,6,8]'),
       archer_vector_norm('[3,4]'::avector);
SELECT archer_l2_distance('{1,2,3}'::real[], '{4,6,8}'),
       archer_l2_squared_distance('{1,2,3}'::real[], '{4,6,8}'),
       archer_inner_product('{1,2,3}'::real[], '{4,6,8}'),
       archer_negative_inner_product('{1,2,3}'::real[], '{4,6,8}'),
       archer_cosine_distance('{1,2,3}'::real[], '{4,6,8}'),
       archer_vector_norm('{3,4}'::real[]);
-- commutators, mixed argument types through the implicit cast
SELECT '[1,2]'::avector <-> '[4,6]'::avector = '[4,6]'::avector <-> '[1,2]'::avector;
SELECT '[1,2]'::avector <-> '{4,6}'::real[];
-- cosine: same direction 0, opposite 2, orthogonal 1; a zero vector is 1
-- to everything (pgvector returns NaN)
SELECT '[1,2,3]'::avector <=> '[2,4,6]', '[1,2,3]'::avector <=> '[-1,-2,-3]',
       '[1,0]'::avector <=> '[0,5]';
SELECT '[0,0,0]'::avector <=> '[1,2,3]', '[1,2,3]'::avector <=> '[0,0,0]',
       '[0,0]'::avector <=> '[0,0]', '{0,0}'::real[] <=> '{0,0}'::real[],
       '[0,-0]'::avector <=> '[1,1]';
-- sums beyond float range are recomputed in double; tiny ones do not vanish
SELECT '[1e20,1e20]'::avector <-> '[-1e20,-1e20]' AS l2_huge,
       '[3e19,4e19]'::avector <#> '[3e19,4e19]' AS neg_ip_huge,
       archer_vector_norm('[3e19,4e19]'::avector) AS norm_huge,
       round(('[1e20,1e20]'::avector <=> '[1e20,1e20]')::numeric, 12) AS cos_huge,
       round(('[1e-30,0]'::avector <=> '[1e-30,1e-30]')::numeric, 12) AS cos_tiny;
-- errors
SELECT '[1,2,3]'::avector <-> '[1,2,3,4]';
SELECT '[1,2,3]'::avector <#> '[1,2,3,4]';
SELECT '[1,2,3]'::avector <=> '[1,2]';
SELECT '{1,2,3}'::real[] <-> '{1,2,3,4}';
SELECT archer_cosine_distance('{1,2}'::real[], '{1,2,3}');
SELECT '{1,NaN}'::real[] <-> '{1,2}';
SELECT '{1,2}'::real[] <#> '{Infinity,2}';
SELECT '{1,2}'::real[] <=> '{-Infinity,0}';
SELECT '{0,0}'::real[] <=> '{Infinity,0}';
SELECT archer_vector_norm('{NaN}'::real[]);
SELECT '{{1,2},{3,4}}'::real[] <-> '{1,2}';
SELECT '{1,NULL}'::real[] <-> '{1,2}';
SELECT '{}'::real[] <-> '{}';
SELECT '{1,2}'::real[] <-> NULL;

-- seeded random vectors: every operator and function on both types
-- against the same sums in double precision over unnest
SELECT setseed(0.77);
CREATE TABLE vec_pairs AS
    SELECT d, p,
           (SELECT array_agg(((random() * 2 - 1) * sc.scale + 0 * g)::real) FROM generate_series(1, d) g) AS a,
           (SELECT array_agg(((random() * 2 - 1) * sc.scale + 0 * g)::real) FROM generate_series(1, d) g) AS b
    FROM unnest(ARRAY[1, 3, 8, 17, 784, 4000]) d, generate_series(1, 8) p,
         LATERAL (SELECT 10 ^ (random() * 8 - 4) + p * 0 AS scale) sc;
CREATE TABLE vec_ref AS
    SELECT d, p, a, b, r.*
    FROM vec_pairs,
         LATERAL (SELECT sum((x::float8 - y::float8) ^ 2) AS l2sq,
                         sum(x::float8 * y::float8) AS ip,
                         sum(abs(x::float8 * y::float8)) AS ip_scale,
                         sum(x::float8 ^ 2) AS na,
                         sum(y::float8 ^ 2) AS nb
                  FROM unnest(a, b) AS u(x, y)) r;
SELECT d, count(*) AS pairs,
       bool_and(abs((a <-> b) - sqrt(l2sq)) <= 1e-5 * sqrt(l2sq)) AS l2_arr,
       bool_and(abs((a::avector <-> b::avector) - sqrt(l2sq)) <= 1e-5 * sqrt(l2sq)) AS l2_vec,
       bool_and(abs(archer_l2_squared_distance(a, b) - l2sq) <= 1e-5 * l2sq
                AND abs(archer_l2_squared_distance(a::avector, b::avector) - l2sq) <= 1e-5 * l2sq) AS l2sq,
       bool_and(abs((a <#> b) + ip) <= 1e-5 * ip_scale
                AND abs((a::avector <#> b::avector) + ip) <= 1e-5 * ip_scale) AS neg_ip,
       bool_and(abs(archer_inner_product(a, b) - ip) <= 1e-5 * ip_scale
                AND abs(archer_inner_product(a::avector, b::avector) - ip) <= 1e-5 * ip_scale) AS ip,
       bool_and(abs((a <=> b) - (1 - ip / sqrt(na * nb))) <= 1e-5
                AND abs((a::avector <=> b::avector) - (1 - ip / sqrt(na * nb))) <= 1e-5) AS cosine,
       bool_and(abs(archer_vector_norm(a) - sqrt(na)) <= 1e-5 * sqrt(na)
                AND abs(archer_vector_norm(a::avector) - sqrt(na)) <= 1e-5 * sqrt(na)) AS norm,
       -- avector and real[] share the kernels: bit-identical results
       bool_and((a <-> b) = (a::avector <-> b::avector)
                AND (a <#> b) = (a::avector <#> b::avector)
                AND (a <=> b) = (a::avector <=> b::avector)) AS same
FROM vec_ref GROUP BY d ORDER BY d;
-- a vector's distance to itself
SELECT bool_and((a <-> a) = 0 AND (a::avector <-> a::avector) = 0
                AND abs(a <=> a) < 1e-6) AS self
FROM vec_pairs;

-- comparison, hashing: DISTINCT, ORDER BY, GROUP BY, UNIQUE
SELECT '[1,2]'::avector < '[1,3]', '[1,2]'::avector < '[1,2,0]',
       '[2]'::avector > '[1,9,9]', '[1,2]'::avector = '[1,2]',
       '[1,2]'::avector <> '[1,2]', '[-0]'::avector = '[0]',
       '[1,2]'::avector <= '[1,2]', '[1,2]'::avector >= '[1,2,3]';
SELECT avector_cmp('[1,2]', '[1,2]'), avector_cmp('[1,2]', '[0,5]'), avector_cmp('[1]', '[1,0]');
SELECT avector_hash('[-0,1]') = avector_hash('[0,1]') AS hash_zero,
       avector_hash_extended('[-0,1]', 7) = avector_hash_extended('[0,1]', 7) AS hash_ext_zero,
       avector_hash('[1,2]') <> avector_hash('[2,1]') AS hash_differs;
CREATE TABLE vec_cmp (id int, v avector);
INSERT INTO vec_cmp VALUES (1, '[1,2]'), (2, '[1,2]'), (3, '[0,5]'), (4, '[1]'),
    (5, '[1,2,0]'), (6, '[-0,5]'), (7, '[-1,100]'), (8, NULL);
SELECT DISTINCT v FROM vec_cmp ORDER BY v;
SELECT v, count(*) FROM vec_cmp GROUP BY v ORDER BY v DESC NULLS LAST;
SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT v, count(*) FROM vec_cmp GROUP BY v;
SELECT v, count(*) FROM vec_cmp GROUP BY v ORDER BY count(*) DESC, v::text LIMIT 2;
RESET enable_sort;
SELECT a.id, b.id FROM vec_cmp a JOIN vec_cmp b ON a.v = b.v AND a.id < b.id ORDER BY 1, 2;
CREATE UNIQUE INDEX vec_cmp_unique ON vec_cmp (v) WHERE id > 3;
INSERT INTO vec_cmp VALUES (9, '[1,2,0]');
CREATE INDEX vec_cmp_hash ON vec_cmp USING hash (v);
-- (no bitmap scan either: 18 prefers one here)
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM vec_cmp WHERE v = '[1,2]';
SELECT id FROM vec_cmp WHERE v = '[1,2]' ORDER BY id;
RESET enable_bitmapscan;
RESET enable_seqscan;

-- no function of ours takes one of pgvector's names
SELECT p.proname FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid
    JOIN pg_extension e ON e.oid = d.refobjid
WHERE e.extname = 'archer' AND p.proname IN
    ('vector', 'vector_in', 'vector_out', 'l2_distance', 'inner_product',
     'cosine_distance', 'vector_norm', 'vector_dims', 'array_to_vector',
     'vector_to_float4', 'vector_negative_inner_product', 'vector_cmp');

-- kernels: which set runs is the CPU's business; that every kernel agrees
-- with the scalar one and with double precision is not
SELECT archer_vector_kernel() IN ('avx2+fma', 'scalar') AS known_kernel,
       current_setting('archer.vector_kernel') = archer_vector_kernel() AS guc_matches;
SET archer.vector_kernel = 'scalar';
SELECT kernel, lengths, ok FROM archer_vector_kernel_selftest();
SELECT count(DISTINCT kernel) AS kernels, bool_and(ns_per_call > 0) AS timed
FROM archer_vector_kernel_bench(17, 10);
SELECT * FROM archer_vector_kernel_bench(0, 10);

-- TOASTed arguments (avector is stored out of line, uncompressed; the
-- repetitive arrays are compressed inline, the others out of line): an operator
-- keeps its detoasted argument for the next call with the same one, and
-- must notice when the next row brings another value
CREATE TABLE vec_toast (id int, v avector, a real[]);
INSERT INTO vec_toast
SELECT i, x::avector, x
FROM generate_series(1, 6) i,
     LATERAL (SELECT array_agg(CASE WHEN i % 2 = 0 THEN (j % (i + 1))::real
                                    ELSE sin(i * j)::real END ORDER BY j) AS x
              FROM generate_series(1, 1000) j) s;
CREATE TABLE vec_plain (LIKE vec_toast);
ALTER TABLE vec_plain ALTER COLUMN v SET STORAGE PLAIN, ALTER COLUMN a SET STORAGE PLAIN;
INSERT INTO vec_plain SELECT * FROM vec_toast;
SELECT count(*) FILTER (WHERE pg_column_compression(a) IS NOT NULL) AS compressed_arrays,
       pg_relation_size((SELECT reltoastrelid FROM pg_class WHERE relname = 'vec_toast')) > 0
           AS out_of_line
FROM vec_toast;
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE t1.v <-> t2.v = p1.v <-> p2.v AND t1.v <#> t2.v = p1.v <#> p2.v
                          AND t1.v <=> t2.v = p1.v <=> p2.v) AS avector_equal,
       count(*) FILTER (WHERE t1.a <-> t2.a = p1.a <-> p2.a AND t1.a <=> t2.a = p1.a <=> p2.a)
           AS array_equal,
       count(*) FILTER (WHERE t1.v <-> t2.v = 0) AS zero
FROM vec_toast t1 JOIN vec_plain p1 USING (id), vec_toast t2 JOIN vec_plain p2 USING (id);

DROP TABLE vec_roundtrip, vec_typmod, vec_bin, vec_bin2, vec_bytes, vec_recv,
    vec_pairs, vec_ref, vec_cmp, vec_toast, vec_plain;
DROP FUNCTION vec_recv_test(bytea);
