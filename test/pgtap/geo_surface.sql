-- test/pgtap/geo_surface.sql: the SQL surface of archer_geo (extensions
-- archer and archer_postgis): access method, functions with their exact
-- signatures and properties, operators, operator classes, the archer_cap
-- type, GUCs, and privileges (a plain role can index and query its own
-- table, but not verify somebody else's index).
--
-- Run by test/run in a fresh database that already has pgtap:
--   psql -X -q -A -t -v ON_ERROR_STOP=1 -f test/pgtap/geo_surface.sql
-- The tests run in one transaction that is rolled back, so the roles they
-- create do not outlive it.  The output is pure TAP.
\set QUIET 1
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
\pset pager off

SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS archer;
CREATE EXTENSION IF NOT EXISTS archer_postgis CASCADE;
-- the GUCs exist once the library is loaded (it is, when preloaded)
LOAD 'archer';
-- wide rows, vacuumed (not possible in the transaction below): with the
-- visibility map set, count(*) is cheapest as an index-only scan of the
-- small archer_geo index
CREATE TABLE wide_pts (id int, p point, pad char(1500)) WITH (autovacuum_enabled = off);
INSERT INTO wide_pts SELECT i, point(i % 360 - 180, (i % 170) - 85), 'x' FROM generate_series(1, 3000) i;
CREATE INDEX wide_pts_archer ON wide_pts USING archer_geo (p);
VACUUM ANALYZE wide_pts;
-- a snapshot older than the insert (another session in this database)
-- keeps VACUUM from setting the map; it does not last: vacuum again later
SELECT pg_sleep(2) FROM pg_class
 WHERE oid = 'wide_pts'::regclass AND relallvisible < relpages \g /dev/null
VACUUM wide_pts;

BEGIN;
SELECT plan(209);

-- ---------------------------------------------------------------------------
-- the access method
-- ---------------------------------------------------------------------------
SELECT results_eq(
    $$SELECT amtype::text, amhandler::regproc::text FROM pg_am WHERE amname = 'archer_geo'$$,
    $$VALUES ('i', 'archer_geo_handler')$$,
    'access method archer_geo exists, is an index AM with handler archer_geo_handler');

-- what the AM says it can do: no ordered (btree-like), unique, multicolumn
-- or INCLUDE indexes; can_exclude just means it has amgettuple
SELECT results_eq(
    $$SELECT p, pg_indexam_has_property((SELECT oid FROM pg_am WHERE amname = 'archer_geo'), p)
      FROM unnest(ARRAY['can_order', 'can_unique', 'can_multi_col', 'can_exclude', 'can_include']) p$$,
    $$VALUES ('can_order', false), ('can_unique', false), ('can_multi_col', false),
             ('can_exclude', true), ('can_include', false)$$,
    'archer_geo AM properties');

-- ---------------------------------------------------------------------------
-- functions: signature, return type, volatility, strictness, parallel
-- safety, planner support; one row per function
-- ---------------------------------------------------------------------------
CREATE TEMP TABLE expected_funcs (
    ord serial,
    ext name,
    fname name,
    args name[],
    rettype text,
    vol text,          -- NULL: not checked
    strict boolean,    -- NULL: not checked
    parallel "char",   -- NULL: not checked
    support text       -- NULL: no support function
);
INSERT INTO expected_funcs (ext, fname, args, rettype, vol, strict, parallel, support) VALUES
    ('archer', 'archer_geo_handler', '{internal}', 'index_am_handler', NULL, NULL, NULL, NULL),
    ('archer', 'archer_cap_in', '{cstring}', 'archer_cap', 'immutable', true, 's', NULL),
    ('archer', 'archer_cap_out', '{archer_cap}', 'cstring', 'immutable', true, 's', NULL),
    ('archer', 'archer_cap_recv', '{internal}', 'archer_cap', 'immutable', true, 's', NULL),
    ('archer', 'archer_cap_send', '{archer_cap}', 'bytea', 'immutable', true, 's', NULL),
    ('archer', 'archer_cap', '{point,"double precision"}', 'archer_cap', 'immutable', true, 's', NULL),
    ('archer', 'archer_geo_support', '{internal}', 'internal', 'immutable', true, 's', NULL),
    ('archer', 'archer_geo_restrict', '{internal,oid,internal,integer}', 'double precision', 'stable', true, 's', NULL),
    ('archer', 'archer_in_cap', '{point,archer_cap}', 'boolean', 'immutable', true, 's', NULL),
    ('archer', 'archer_dwithin', '{point,point,"double precision"}', 'boolean', 'immutable', true, 's', 'archer_geo_support'),
    ('archer', 'archer_within', '{point,polygon}', 'boolean', 'immutable', true, 's', 'archer_geo_support'),
    ('archer', 'archer_geo_cellid', '{point}', 'bigint', 'immutable', true, 's', NULL),
    ('archer', 'archer_geo_verify', '{regclass}', 'bigint', 'volatile', true, 'r', NULL),
    ('archer_postgis', 'archer_cap', '{geography,"double precision",boolean}', 'archer_cap', 'immutable', true, 's', NULL),
    ('archer_postgis', 'archer_cap', '{geometry,"double precision",boolean}', 'archer_cap', 'immutable', true, 's', NULL),
    ('archer_postgis', 'archer_in_cap', '{geography,archer_cap}', 'boolean', 'immutable', true, 's', NULL),
    ('archer_postgis', 'archer_in_cap', '{geometry,archer_cap}', 'boolean', 'immutable', true, 's', NULL),
    ('archer_postgis', 'archer_dwithin', '{geography,geography,"double precision",boolean}', 'boolean', 'immutable', true, 's', 'archer_geo_support'),
    ('archer_postgis', 'archer_dwithin', '{geometry,geometry,"double precision",boolean}', 'boolean', 'immutable', true, 's', 'archer_geo_support'),
    ('archer_postgis', 'archer_within', '{geography,geography}', 'boolean', 'immutable', true, 's', 'archer_geo_support'),
    ('archer_postgis', 'archer_within', '{geometry,geometry}', 'boolean', 'immutable', true, 's', 'archer_geo_support');
-- regprocedure text of an expected row, e.g. archer_cap(point,double precision)
CREATE FUNCTION pg_temp.sig(f name, a name[]) RETURNS text LANGUAGE sql AS
$$ SELECT f || '(' || array_to_string(a, ',') || ')' $$;

-- 21 functions exist with exactly these argument types (21 tests)
SELECT has_function('public', fname, args, 'function ' || pg_temp.sig(fname, args) || ' exists')
FROM expected_funcs ORDER BY ord;
-- return types (21)
SELECT function_returns('public', fname, args, rettype,
                        pg_temp.sig(fname, args) || ' returns ' || rettype)
FROM expected_funcs ORDER BY ord;
-- volatility (20: not the handler)
SELECT volatility_is('public', fname, args, vol, pg_temp.sig(fname, args) || ' is ' || vol)
FROM expected_funcs WHERE vol IS NOT NULL ORDER BY ord;
-- strictness (20)
SELECT CASE WHEN strict
            THEN is_strict('public', fname, args, pg_temp.sig(fname, args) || ' is strict')
            ELSE isnt_strict('public', fname, args, pg_temp.sig(fname, args) || ' is not strict') END
FROM expected_funcs WHERE strict IS NOT NULL ORDER BY ord;
-- parallel safety (20)
SELECT is((SELECT proparallel FROM pg_proc WHERE oid = to_regprocedure(pg_temp.sig(fname, args))),
          parallel, pg_temp.sig(fname, args) || ' has proparallel = ' || parallel::text)
FROM expected_funcs WHERE parallel IS NOT NULL ORDER BY ord;
-- the planner support function is attached exactly to the predicates (20)
SELECT is((SELECT prosupport::text FROM pg_proc WHERE oid = to_regprocedure(pg_temp.sig(fname, args))),
          coalesce(support, '-'),
          pg_temp.sig(fname, args) || CASE WHEN support IS NULL THEN ' has no support function'
                                           ELSE ' has support function ' || support END)
FROM expected_funcs WHERE fname <> 'archer_geo_handler' ORDER BY ord;
-- each belongs to its extension (21)
SELECT is((SELECT e.extname FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
           WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
             AND d.objid = to_regprocedure(pg_temp.sig(fname, args))),
          ext, pg_temp.sig(fname, args) || ' is a member of extension ' || ext)
FROM expected_funcs ORDER BY ord;
-- archer_postgis holds exactly these functions, nothing more (1)
SELECT set_eq(
    $$SELECT d.objid::regprocedure::text FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
      WHERE e.extname = 'archer_postgis' AND d.classid = 'pg_proc'::regclass AND d.deptype = 'e'$$,
    $$SELECT to_regprocedure(pg_temp.sig(fname, args))::text FROM expected_funcs WHERE ext = 'archer_postgis'$$,
    'extension archer_postgis contains exactly the expected functions');
-- the PostGIS variants default to the spheroid (1)
SELECT results_eq(
    $$SELECT p.oid::regprocedure::text, pg_get_function_arguments(p.oid)
      FROM pg_proc p WHERE p.proname IN ('archer_cap', 'archer_dwithin')
        AND p.oid::regprocedure::text ~ '(geography|geometry)' ORDER BY 1$$,
    $$VALUES
      ('archer_cap(geography,double precision,boolean)', 'center geography, meters double precision, use_spheroid boolean DEFAULT true'),
      ('archer_cap(geometry,double precision,boolean)', 'center geometry, meters double precision, use_spheroid boolean DEFAULT true'),
      ('archer_dwithin(geography,geography,double precision,boolean)', 'geom geography, center geography, meters double precision, use_spheroid boolean DEFAULT true'),
      ('archer_dwithin(geometry,geometry,double precision,boolean)', 'geom geometry, center geometry, meters double precision, use_spheroid boolean DEFAULT true')$$,
    'archer_cap/archer_dwithin on PostGIS types: argument names and use_spheroid DEFAULT true');

-- ---------------------------------------------------------------------------
-- operators
-- ---------------------------------------------------------------------------
SELECT has_operator('point', '<@', 'archer_cap', 'boolean', 'operator point <@ archer_cap exists');
SELECT has_operator('geography', '<@', 'archer_cap', 'boolean', 'operator geography <@ archer_cap exists');
SELECT has_operator('geometry', '<@', 'archer_cap', 'boolean', 'operator geometry <@ archer_cap exists');
SELECT has_operator('point', '<@@', 'polygon', 'boolean', 'operator point <@@ polygon exists');
SELECT has_operator('geography', '<@@', 'geography', 'boolean', 'operator geography <@@ geography exists');
SELECT has_operator('geometry', '<@@', 'geometry', 'boolean', 'operator geometry <@@ geometry exists');
-- implemented by the predicate functions, with archer_geo_restrict as the estimator
SELECT set_eq(
    $$SELECT o.oid::regoperator::text, o.oprcode::regprocedure::text, o.oprrest::text, o.oprjoin::text
      FROM pg_operator o WHERE o.oprname IN ('<@', '<@@')
        AND (o.oprright = 'archer_cap'::regtype OR o.oprname = '<@@')
        AND o.oprleft IN ('point'::regtype, 'geography'::regtype, 'geometry'::regtype)$$,
    $$VALUES
      ('<@(point,archer_cap)', 'archer_in_cap(point,archer_cap)', 'archer_geo_restrict', '-'),
      ('<@(geography,archer_cap)', 'archer_in_cap(geography,archer_cap)', 'archer_geo_restrict', '-'),
      ('<@(geometry,archer_cap)', 'archer_in_cap(geometry,archer_cap)', 'archer_geo_restrict', '-'),
      ('<@@(point,polygon)', 'archer_within(point,polygon)', 'archer_geo_restrict', '-'),
      ('<@@(geography,geography)', 'archer_within(geography,geography)', 'archer_geo_restrict', '-'),
      ('<@@(geometry,geometry)', 'archer_within(geometry,geometry)', 'archer_geo_restrict', '-')$$,
    'operators <@ and <@@: functions and restriction estimator');

-- ---------------------------------------------------------------------------
-- operator classes
-- ---------------------------------------------------------------------------
SELECT has_opclass('public', 'archer_geo_point_ops', 'opclass archer_geo_point_ops exists');
SELECT has_opclass('public', 'archer_geo_geography_ops', 'opclass archer_geo_geography_ops exists');
SELECT has_opclass('public', 'archer_geo_geometry_ops', 'opclass archer_geo_geometry_ops exists');
SELECT results_eq(
    $$SELECT c.opcname::text COLLATE "default", c.opcintype::regtype::text, c.opcdefault, c.opckeytype
      FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod
      WHERE a.amname = 'archer_geo' ORDER BY 1$$,
    $$VALUES ('archer_geo_geography_ops', 'geography', true, 0::oid),
             ('archer_geo_geometry_ops', 'geometry', true, 0::oid),
             ('archer_geo_point_ops', 'point', true, 0::oid)$$,
    'archer_geo has exactly three opclasses, default for point, geography and geometry');
-- the default opclass is picked without naming it
SELECT is(
    (SELECT opcname::text COLLATE "default" FROM pg_opclass
     WHERE opcmethod = (SELECT oid FROM pg_am WHERE amname = 'archer_geo')
       AND opcintype = t AND opcdefault),
    'archer_geo_' || n || '_ops', 'the default archer_geo opclass for ' || n)
FROM (VALUES ('point'::regtype, 'point'), ('geography'::regtype, 'geography'),
             ('geometry'::regtype, 'geometry')) v(t, n);
-- strategies 1 (<@ cap), 2 (<@@ region) are search operators; 3 (<->) is an
-- ordering operator sorted by the btree float_ops family
SELECT results_eq(
    format($$SELECT amopstrategy::int, amopopr::regoperator::text, amoppurpose::text,
                    CASE WHEN amopsortfamily = 0 THEN NULL ELSE
                      (SELECT (f.opfname || '/' || m.amname) COLLATE "default" FROM pg_opfamily f JOIN pg_am m ON m.oid = f.opfmethod
                       WHERE f.oid = amopsortfamily)::text END
             FROM pg_amop
             WHERE amopfamily = (SELECT opcfamily FROM pg_opclass WHERE opcname = %L
                                   AND opcmethod = (SELECT oid FROM pg_am WHERE amname = 'archer_geo'))
             ORDER BY 1$$, 'archer_geo_' || n || '_ops'),
    format($$VALUES (1, '<@(%1$s,archer_cap)', 's', NULL::text),
                    (2, '<@@(%1$s,%2$s)', 's', NULL),
                    (3, '<->(%1$s,%1$s)', 'o', 'float_ops/btree')$$, n, r),
    'operators of archer_geo_' || n || '_ops')
FROM (VALUES ('point', 'polygon'), ('geography', 'geography'), ('geometry', 'geometry')) v(n, r);
-- no support functions are needed (amsupport = 0)
SELECT is(
    (SELECT count(*)::int FROM pg_amproc p JOIN pg_opfamily f ON f.oid = p.amprocfamily
     WHERE f.opfmethod = (SELECT oid FROM pg_am WHERE amname = 'archer_geo')),
    0, 'archer_geo opfamilies have no support procedures');
-- amvalidate accepts each opclass
SELECT ok(amvalidate(c.oid), 'amvalidate(' || c.opcname || ')')
FROM (VALUES ('archer_geo_point_ops'), ('archer_geo_geography_ops'), ('archer_geo_geometry_ops')) v(n)
LEFT JOIN pg_opclass c ON c.opcname = v.n
     AND c.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'archer_geo')
ORDER BY v.n;

-- ---------------------------------------------------------------------------
-- the archer_cap type
-- ---------------------------------------------------------------------------
SELECT has_type('public', 'archer_cap', 'type archer_cap exists');
SELECT results_eq(
    $$SELECT typlen::int, typalign::text, typbyval, typinput::text, typoutput::text,
             typreceive::text, typsend::text
      FROM pg_type WHERE oid = 'archer_cap'::regtype$$,
    $$VALUES (32, 'd', false, 'archer_cap_in', 'archer_cap_out', 'archer_cap_recv', 'archer_cap_send')$$,
    'archer_cap: 32 bytes, double aligned, by reference, with text and binary I/O');
SELECT is('<(2.5,-48.25),1500.5,sphere>'::archer_cap::text, '<(2.5,-48.25),1500.5,sphere>',
          'archer_cap text input/output round trip (sphere)');
SELECT is('<(2.5,-48.25),1500.5>'::archer_cap::text, '<(2.5,-48.25),1500.5,spheroid>',
          'archer_cap text input defaults to the spheroid');
SELECT is(archer_cap(point(1, 2), 5)::text, '<(1,2),5,sphere>',
          'archer_cap(point, meters) measures on the sphere');
SELECT is(archer_cap('SRID=4326;POINT(1 2)'::geometry, 5)::text, '<(1,2),5,spheroid>',
          'archer_cap(geometry, meters) defaults to the spheroid');
SELECT is(archer_cap('POINT(1 2)'::geography, 5, false)::text, '<(1,2),5,sphere>',
          'archer_cap(geography, meters, false) measures on the sphere');
SELECT throws_ok($$SELECT 'garbage'::archer_cap$$, '22P02', NULL,
                 'archer_cap rejects malformed input');
-- binary output: lng, lat, meters as network-order float8, then a byte
-- (1 = spheroid)
SELECT is(archer_cap_send('<(2.5,-48.25),1500.5,sphere>'),
          float8send(2.5) || float8send(-48.25) || float8send(1500.5) || '\x00'::bytea,
          'archer_cap_send: three float8 and a sphere flag');
SELECT is(archer_cap_send('<(-180,90),0,spheroid>'),
          float8send(-180) || float8send(90) || float8send(0) || '\x01'::bytea,
          'archer_cap_send: spheroid flag');

-- ---------------------------------------------------------------------------
-- GUCs
-- ---------------------------------------------------------------------------
SELECT results_eq(
    $$SELECT name, setting, boot_val, min_val, max_val, context, vartype
      FROM pg_settings WHERE name LIKE 'archer.geo%' ORDER BY 1$$,
    $$VALUES ('archer.geo_max_cells', '4', '4', '4', '1024', 'user', 'integer'),
             ('archer.geo_polygon_max_cells', '512', '512', '4', '100000', 'user', 'integer')$$,
    'GUCs archer.geo_max_cells and archer.geo_polygon_max_cells: defaults, bounds, user-settable');
SELECT is(current_setting('archer.geo_max_cells'), '4', 'archer.geo_max_cells defaults to 4');
SELECT is(current_setting('archer.geo_polygon_max_cells'), '512', 'archer.geo_polygon_max_cells defaults to 512');
SELECT throws_ok($$SET archer.geo_max_cells = 3$$, '22023', NULL,
                 'archer.geo_max_cells below its minimum is rejected');
SELECT throws_ok($$SET archer.no_such_setting = 1$$, '42602', NULL,
                 'the archer. GUC prefix is reserved');

-- ---------------------------------------------------------------------------
-- archer_geo_verify argument checks
-- ---------------------------------------------------------------------------
CREATE TEMP TABLE not_geo (id int, p point);
CREATE INDEX not_geo_btree ON not_geo (id);
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
-- the value of a one-value query, or its error message
CREATE FUNCTION pg_temp.try_value(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    result text;
BEGIN
    EXECUTE q INTO result;
    RETURN result;
EXCEPTION WHEN OTHERS THEN
    RETURN 'ERROR: ' || SQLERRM;
END $$;
SELECT throws_ok($$SELECT archer_geo_verify('not_geo_btree')$$, '42809',
                 '"not_geo_btree" is not an archer_geo index',
                 'archer_geo_verify rejects a btree index');
-- a table or a dangling OID is a user error, not an internal one (XX000
-- "cache lookup failed")
SELECT isnt(pg_temp.sqlstate_of($$SELECT archer_geo_verify('not_geo')$$), 'XX000',
            'archer_geo_verify on a table fails with a user-facing error');
SELECT isnt(pg_temp.sqlstate_of($$SELECT archer_geo_verify(4200000000::oid::regclass)$$), 'XX000',
            'archer_geo_verify on a nonexistent OID fails with a user-facing error');
SELECT is(pg_temp.sqlstate_of($$SELECT archer_geo_verify('not_geo')$$) <> 'no error', true,
          'archer_geo_verify on a table fails');

CREATE FUNCTION pg_temp.plan_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    line text;
    result text := '';
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        result := result || line || E'\n';
    END LOOP;
    RETURN result;
END $$;
-- ---------------------------------------------------------------------------
-- count(*) with default planner settings on a vacuumed table of wide rows
-- ---------------------------------------------------------------------------
-- (the visibility map was set above)
SELECT is((SELECT relallvisible = relpages FROM pg_class WHERE oid = 'wide_pts'::regclass), true,
          'VACUUM set the visibility map of every page of the wide table');
SELECT matches(pg_temp.plan_of($$SELECT count(*) FROM wide_pts$$), 'Index Only Scan using wide_pts_archer',
               'count(*) of a vacuumed wide table: the planner picks an index-only scan of archer_geo');
SELECT is(pg_temp.try_value($$SELECT count(*) FROM wide_pts$$), '3000',
          'count(*) of a vacuumed wide table with an archer_geo index, default settings');

-- ---------------------------------------------------------------------------
-- an ordinary role indexes and queries its own table
-- ---------------------------------------------------------------------------
CREATE ROLE archer_tap_owner NOSUPERUSER NOCREATEDB NOCREATEROLE NOLOGIN;
CREATE ROLE archer_tap_other NOSUPERUSER NOCREATEDB NOCREATEROLE NOLOGIN;
CREATE SCHEMA archer_tap AUTHORIZATION archer_tap_owner;
GRANT USAGE ON SCHEMA archer_tap TO archer_tap_other;

SET ROLE archer_tap_owner;
SELECT is(current_setting('is_superuser'), 'off', 'running as an ordinary role');
SELECT lives_ok($$CREATE TABLE archer_tap.pts (id int, p point)$$, 'ordinary role creates a table');
-- a 1-degree grid over part of the globe plus a few NULLs
SELECT lives_ok($$INSERT INTO archer_tap.pts
                  SELECT row_number() OVER (), point(x, y)
                  FROM generate_series(-40, 40) x, generate_series(-60, 60) y
                  UNION ALL SELECT -i, NULL FROM generate_series(1, 3) i$$,
                'ordinary role fills its table');
SELECT lives_ok($$CREATE INDEX pts_archer ON archer_tap.pts USING archer_geo (p)$$,
                'ordinary role creates an archer_geo index on its own table');
SELECT is((SELECT relowner::regrole::text FROM pg_class WHERE oid = 'archer_tap.pts_archer'::regclass),
          'archer_tap_owner', 'the index belongs to the ordinary role');
SET LOCAL enable_seqscan = off;
SELECT matches(pg_temp.plan_of($$SELECT id FROM archer_tap.pts WHERE archer_dwithin(p, point(10, 10), 420000)$$),
               'Index Scan using pts_archer.*Index Cond: \(p <@ ',
               'archer_dwithin becomes an index condition p <@ archer_cap (support function)');
SELECT matches(pg_temp.plan_of($$SELECT id FROM archer_tap.pts ORDER BY p <-> point(10, 10) LIMIT 5$$),
               'Index Scan using pts_archer.*Order By: \(p <-> ',
               'ORDER BY p <-> point uses the index');
-- the exact answer by the haversine formula on the sphere of radius
-- 6371008.8 m (no grid point is within 1 km of the 420 km boundary)
SELECT is((SELECT count(*)::int FROM archer_tap.pts
           WHERE 2 * 6371008.8 * asin(sqrt(sin(radians(p[1] - 10) / 2) ^ 2
                 + cos(radians(p[1])) * cos(radians(10)) * sin(radians(p[0] - 10) / 2) ^ 2))
                 BETWEEN 419000 AND 421000), 0,
          'no grid point lies near the query boundary');
SELECT set_eq(
    $$SELECT id FROM archer_tap.pts WHERE archer_dwithin(p, point(10, 10), 420000)$$,
    $$SELECT id FROM archer_tap.pts
      WHERE 2 * 6371008.8 * asin(sqrt(sin(radians(p[1] - 10) / 2) ^ 2
            + cos(radians(p[1])) * cos(radians(10)) * sin(radians(p[0] - 10) / 2) ^ 2)) <= 420000$$,
    'radius query through the index returns exactly the points within 420 km');
SELECT cmp_ok((SELECT count(*)::int FROM archer_tap.pts WHERE archer_dwithin(p, point(10, 10), 420000)),
              '>', 30, 'the radius answer is not trivially empty');
-- polygon with geodesic edges; the grid points strictly inside are the
-- 3x3 block 1..3 x 1..3 (the edges at latitude 0.5 and 3.5 bulge north by
-- only ~0.001 degree; the others are meridians)
SELECT set_eq(
    $$SELECT id FROM archer_tap.pts WHERE p <@@ '((0.5,0.5),(3.5,0.5),(3.5,3.5),(0.5,3.5))'::polygon$$,
    $$SELECT id FROM archer_tap.pts WHERE p[0] BETWEEN 1 AND 3 AND p[1] BETWEEN 1 AND 3$$,
    'polygon query through the index returns the 9 grid points inside');
SELECT set_eq(
    $$SELECT id FROM archer_tap.pts WHERE archer_within(p, '((0.5,0.5),(3.5,0.5),(3.5,3.5),(0.5,3.5))'::polygon)$$,
    $$SELECT id FROM archer_tap.pts WHERE p[0] BETWEEN 1 AND 3 AND p[1] BETWEEN 1 AND 3$$,
    'archer_within through the index returns the same 9 points');
-- kNN: the 13 nearest points around (10,10) in planar degrees: the center,
-- 4 at distance 1, 4 at sqrt(2), 4 at 2
SELECT results_eq(
    $$SELECT round((p <-> point(10, 10))::numeric, 6) FROM archer_tap.pts ORDER BY p <-> point(10, 10) LIMIT 13$$,
    $$VALUES (0.000000), (1.000000), (1.000000), (1.000000), (1.000000),
             (1.414214), (1.414214), (1.414214), (1.414214),
             (2.000000), (2.000000), (2.000000), (2.000000)$$,
    'kNN through the index returns the nearest grid points in order');
-- a scan with no condition at all (possible since amoptionalkey is set;
-- the planner makes one only as the index-only scan it picks for count(*)
-- when no column is needed) must return every row, NULL points included:
-- the AM must then return an index tuple, even an empty one, per entry
SELECT matches(pg_temp.plan_of($$SELECT count(*) FROM archer_tap.pts$$),
               'Index Only Scan using pts_archer',
               'with enable_seqscan off, count(*) is an index-only scan of the archer_geo index');
SELECT is(pg_temp.try_value($$SELECT count(*) FROM archer_tap.pts$$), '9804',
          'count(*) by index-only scan counts every row');
RESET enable_seqscan;
SELECT is(archer_geo_verify('archer_tap.pts_archer'), 9804::bigint,
          'the owner may run archer_geo_verify; it counts every entry');
RESET ROLE;

-- somebody else, even with SELECT on the table, may not verify the index
GRANT SELECT ON archer_tap.pts TO archer_tap_other;
SET ROLE archer_tap_other;
SELECT is((SELECT count(*)::int FROM archer_tap.pts WHERE archer_dwithin(p, point(10, 10), 420000)) > 0,
          true, 'another role with SELECT can query through the index');
SELECT throws_ok($$SELECT archer_geo_verify('archer_tap.pts_archer')$$, '42501',
                 'must be owner of index pts_archer',
                 'archer_geo_verify by a non-owner fails with permission denied');
SELECT throws_ok($$CREATE INDEX ON archer_tap.pts USING archer_geo (p)$$, '42501', NULL,
                 'a non-owner cannot create an archer_geo index on the table');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
DROP TABLE wide_pts;
