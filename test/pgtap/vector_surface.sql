-- test/pgtap/vector_surface.sql: the SQL surface of archer_vector
-- (extension archer): the avector type and its casts, distance functions
-- and operators, the access method with its vector and filter operator
-- classes, GUCs, planner use, errors, and privileges (a plain role can
-- index and query its own table, but not verify somebody else's index).
--
-- Run by test/run in a fresh database that already has pgtap:
--   psql -X -q -A -t -v ON_ERROR_STOP=1 -f test/pgtap/vector_surface.sql
-- The tests run in one transaction that is rolled back.  Pure TAP output.
\set QUIET 1
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
\pset pager off

SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS archer;
LOAD 'archer';

BEGIN;
SELECT plan(54);

-- ---------------------------------------------------------------------------
-- the avector type
-- ---------------------------------------------------------------------------
SELECT has_type('public', 'avector', 'type avector exists');
SELECT results_eq(
    $$SELECT typinput::text, typoutput::text, typreceive::text, typsend::text,
             typmodin::text, typmodout::text, typstorage::text
      FROM pg_type WHERE oid = 'avector'::regtype$$,
    $$VALUES ('avector_in', 'avector_out', 'avector_recv', 'avector_send',
              'avector_typmod_in', 'avector_typmod_out', 'e')$$,
    'avector: text, binary and typmod I/O, stored uncompressed (as pgvector''s vector)');
SELECT is('[1,2.5,-3]'::avector::text, '[1,2.5,-3]', 'avector text round trip in pgvector''s format');
CREATE TABLE vs_typmod (v avector(3));
SELECT is(format_type(atttypid, atttypmod), 'avector(3)', 'a column avector(3) keeps its dimension typmod')
FROM pg_attribute WHERE attrelid = 'vs_typmod'::regclass AND attname = 'v';
SELECT is(avector_dims('[1,2,3,4]'), 4, 'avector_dims');
-- binary output as pgvector's: int16 dimensions, int16 0, network-order float4s
SELECT is(avector_send('[0.5,-1]'), '\x000200003f000000bf800000'::bytea,
          'binary output: dimensions, a zero, network-order float4s');
SELECT throws_ok($$SELECT '[1,2'::avector$$, '22P02', NULL, 'malformed text is an error');
SELECT throws_ok($$SELECT '[]'::avector$$, '22000', NULL, 'an empty vector is an error');
SELECT throws_ok($$SELECT '[1,NaN]'::avector$$, '22000', NULL, 'NaN is an error');
SELECT throws_ok($$SELECT '[1,Infinity]'::avector$$, '22000', NULL, 'infinity is an error');
SELECT throws_ok($$SELECT '[1,2,3]'::avector(2)$$, '22000', NULL, 'a dimension other than the typmod is an error');

-- casts both ways
SELECT is('{1,2,3}'::real[]::avector::text, '[1,2,3]', 'real[] -> avector');
SELECT is('[1,2,3]'::avector::real[], '{1,2,3}'::real[], 'avector -> real[]');
SELECT is(ARRAY[1,2,3]::avector::text, '[1,2,3]', 'integer[] -> avector');
SELECT is(ARRAY[1.5,2]::numeric[]::avector::text, '[1.5,2]', 'numeric[] -> avector');
SELECT is(ARRAY[1.5,2]::float8[]::avector::text, '[1.5,2]', 'double precision[] -> avector');

-- ---------------------------------------------------------------------------
-- distances, on both types
-- ---------------------------------------------------------------------------
SELECT is('[0,0]'::avector <-> '[3,4]', 5::float8, '<-> is L2 distance (avector)');
SELECT is('{0,0}'::real[] <-> '{3,4}'::real[], 5::float8, '<-> is L2 distance (real[])');
SELECT is('[1,2]'::avector <#> '[3,4]', -11::float8, '<#> is the negative inner product');
SELECT is('{1,2}'::real[] <#> '{3,4}'::real[], -11::float8, '<#> on real[]');
SELECT is('[1,0]'::avector <=> '[0,1]', 1::float8, '<=> is cosine distance');
SELECT is('[0,0]'::avector <=> '[0,1]', 1::float8, 'cosine distance with a zero vector is 1, as documented');
SELECT is(archer_l2_squared_distance('[0,0]'::avector, '[3,4]'), 25::float8, 'archer_l2_squared_distance');
SELECT is(archer_inner_product('[1,2]'::avector, '[3,4]'), 11::float8, 'archer_inner_product');
SELECT is(archer_vector_norm('[3,4]'::avector), 5::float8, 'archer_vector_norm (avector)');
SELECT is(archer_vector_norm('{3,4}'::real[]), 5::float8, 'archer_vector_norm (real[])');
SELECT throws_ok($$SELECT '[1,2]'::avector <-> '[1,2,3]'$$, '22000', NULL,
                 'distance between different dimensions is an error');
SELECT ok(archer_vector_kernel() IN ('avx2+fma', 'scalar'), 'archer_vector_kernel names the kernel in use');

-- ---------------------------------------------------------------------------
-- the access method and its operator classes
-- ---------------------------------------------------------------------------
SELECT results_eq(
    $$SELECT amtype::text, amhandler::regproc::text FROM pg_am WHERE amname = 'archer_vector'$$,
    $$VALUES ('i', 'archer_vector_handler')$$,
    'access method archer_vector exists, is an index AM with handler archer_vector_handler');
SELECT results_eq(
    $$SELECT c.opcname::text COLLATE "default", format_type(c.opcintype, NULL) COLLATE "default", c.opcdefault
      FROM pg_opclass c WHERE c.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'archer_vector')
      ORDER BY 1$$,
    $$VALUES ('avector_cosine_ops', 'avector', false), ('avector_ip_ops', 'avector', false),
             ('avector_l2_ops', 'avector', true), ('float4_cosine_ops', 'real[]', false),
             ('float4_ip_ops', 'real[]', false), ('float4_l2_ops', 'real[]', true),
             ('int2_filter_ops', 'smallint', true), ('int4_filter_ops', 'integer', true),
             ('int8_filter_ops', 'bigint', true)$$,
    'archer_vector opclasses: L2 by default for both vector types, integer filter columns');
SELECT ok(bool_and(amvalidate(c.oid)), 'amvalidate accepts every archer_vector opclass')
FROM pg_opclass c WHERE c.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'archer_vector');
SELECT is(
    (SELECT count(*)::int FROM pg_amop o JOIN pg_opfamily f ON f.oid = o.amopfamily
     WHERE f.opfname = 'integer_filter_ops'
       AND f.opfmethod = (SELECT oid FROM pg_am WHERE amname = 'archer_vector')),
    45, 'integer_filter_ops: five comparisons for each of the nine integer type pairs');
SELECT results_eq(
    $$SELECT pg_indexam_has_property(oid, 'can_order'), pg_indexam_has_property(oid, 'can_multi_col'),
             pg_indexam_has_property(oid, 'can_include'), pg_indexam_has_property(oid, 'can_unique')
      FROM pg_am WHERE amname = 'archer_vector'$$,
    $$VALUES (false, true, false, false)$$,
    'archer_vector: ordering by operator only, several columns, no INCLUDE, not unique');

-- GUCs
SELECT is(current_setting('archer.ef_search'), '40', 'archer.ef_search defaults to 40');
SELECT is(current_setting('archer.vector_max_scan_tuples'), '20000',
          'archer.vector_max_scan_tuples defaults to 20000');
SELECT throws_ok($$SET archer.ef_search = 0$$, '22023', NULL, 'archer.ef_search must be positive');
SELECT is(current_setting('archer.insert_buffer_max_entries'), '2000',
          'archer.insert_buffer_max_entries defaults to 2000');
SELECT is(current_setting('archer.vector_order'), 'strict',
          'archer.vector_order defaults to strict (exact ORDER BY order)');
SELECT results_eq($$SELECT name::text, context::text FROM pg_settings
                    WHERE name IN ('archer.vector_order', 'archer.insert_buffer_max_entries') ORDER BY 1$$,
                  $$VALUES ('archer.insert_buffer_max_entries', 'superuser'), ('archer.vector_order', 'user')$$,
                  'archer.vector_order is per session; archer.insert_buffer_max_entries superuser only');
SELECT function_returns('public', 'archer_flush', ARRAY['regclass'], 'bigint',
                        'archer_flush(regclass) returns bigint');

-- ---------------------------------------------------------------------------
-- indexes, plans, errors
-- ---------------------------------------------------------------------------
CREATE TABLE vs_items (id int, cat int, v avector(3), a real[]);
INSERT INTO vs_items SELECT i, i % 4, ARRAY[i % 7, i % 11, i % 13]::avector, ARRAY[i, 1, 2]::real[]
FROM generate_series(1, 500) i;
CREATE INDEX vs_v ON vs_items USING archer_vector (v, cat);
CREATE INDEX vs_a ON vs_items USING archer_vector (a float4_cosine_ops) WITH (m = 8, ef_construction = 20);
SET LOCAL enable_seqscan = off;
CREATE FUNCTION pg_temp.plan_of(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    line text;
    plan text := '';
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        plan := plan || line || ' ';
    END LOOP;
    RETURN plan;
END $$;
SELECT matches(pg_temp.plan_of($$SELECT id FROM vs_items WHERE cat = 2 ORDER BY v <-> '[1,2,3]' LIMIT 5$$),
               'Index Scan using vs_v .*Index Cond: \(cat = 2\) .*Order By: \(v <-> ',
               'WHERE cat = 2 ORDER BY v <-> q LIMIT 5 is an index scan with the condition in the index');
SELECT is(
    (SELECT array_agg(id) FROM (SELECT id FROM vs_items WHERE cat = 2 ORDER BY v <-> '[3,3,3]', id LIMIT 3) s),
    (SELECT array_agg(id) FROM (SELECT id FROM vs_items WHERE cat = 2 ORDER BY archer_l2_distance(v, '[3,3,3]'), id LIMIT 3) s),
    'a filtered index scan returns the exact top 3');
SELECT is(archer_vector_verify('vs_v'), 500::bigint, 'archer_vector_verify counts the live nodes');
SELECT is(archer_vector_verify('vs_a'), 500::bigint, 'archer_vector_verify on a real[] cosine index');
SELECT throws_ok($$CREATE INDEX ON vs_items USING archer_vector (cat, v)$$, '0A000', NULL,
                 'the vector column must come first');
SELECT throws_ok($$CREATE INDEX ON vs_items USING archer_vector (v) WITH (m = 1)$$, '22023', NULL,
                 'm below 2 is an error');
SELECT throws_ok($$INSERT INTO vs_items (id, v) VALUES (0, '[1,2]')$$, '22000', NULL,
                 'a vector of the wrong dimension is an error');
SELECT throws_ok($$INSERT INTO vs_items (id, a) VALUES (0, '{1,2,3,4}')$$, '22000', NULL,
                 'a real[] of another dimension than the index''s is an error');
SELECT throws_ok($$SELECT archer_vector_verify('pg_class')$$, '42809', NULL,
                 'archer_vector_verify refuses a table');
RESET enable_seqscan;

-- ---------------------------------------------------------------------------
-- privileges
-- ---------------------------------------------------------------------------
CREATE ROLE vs_owner;
CREATE ROLE vs_other;
GRANT USAGE, CREATE ON SCHEMA public TO vs_owner;
SET LOCAL ROLE vs_owner;
CREATE TABLE vs_mine (id int, v avector(2));
INSERT INTO vs_mine SELECT i, ARRAY[i, -i]::avector FROM generate_series(1, 50) i;
CREATE INDEX vs_mine_v ON vs_mine USING archer_vector (v);
SELECT is((SELECT id FROM vs_mine ORDER BY v <-> '[10,-10]' LIMIT 1), 10,
          'a plain role indexes and queries its own table');
SELECT is(archer_vector_verify('vs_mine_v'), 50::bigint, 'the owner verifies its index');
ALTER INDEX vs_mine_v SET (insert_buffer = on);
INSERT INTO vs_mine VALUES (51, '[51,-51]');
SELECT is(archer_flush('vs_mine_v'), 1::bigint, 'the owner flushes its index''s insert buffer');
RESET ROLE;
GRANT SELECT ON vs_mine TO vs_other;
SET LOCAL ROLE vs_other;
SELECT throws_ok($$SELECT archer_vector_verify('vs_mine_v')$$, '42501', NULL,
                 'another role cannot verify the index');
SELECT throws_ok($$SELECT archer_flush('vs_mine_v')$$, '42501', NULL,
                 'another role cannot flush the index');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
