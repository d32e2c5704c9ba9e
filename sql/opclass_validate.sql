-- amvalidate on broken operator classes: each is reported (INFO) and
-- rejected (false), never accepted.
SET client_min_messages = info;
-- archer_vector: no operator at all (the index would have no metric)
CREATE OPERATOR CLASS bad_none FOR TYPE avector USING archer_vector AS STORAGE avector;
-- a distance operator under a strategy that is no metric
CREATE OPERATOR CLASS bad_strategy FOR TYPE avector USING archer_vector AS
	OPERATOR 4 <-> (avector, avector) FOR ORDER BY float_ops;
-- a metric's operator as a search operator (no FOR ORDER BY)
CREATE OPERATOR CLASS bad_purpose FOR TYPE real[] USING archer_vector AS
	OPERATOR 1 = (anyarray, anyarray);
-- an operator on another type than the class's
CREATE OPERATOR CLASS bad_type FOR TYPE avector USING archer_vector AS
	OPERATOR 1 <-> (real[], real[]) FOR ORDER BY float_ops;
-- two metrics in one class (the index would pick one silently)
CREATE OPERATOR CLASS bad_two FOR TYPE avector USING archer_vector AS
	OPERATOR 1 <-> (avector, avector) FOR ORDER BY float_ops,
	OPERATOR 2 <#> (avector, avector) FOR ORDER BY float_ops;
-- archer_vector and archer_geo have no support functions
CREATE OPERATOR CLASS bad_function FOR TYPE avector USING archer_vector AS
	OPERATOR 1 <-> (avector, avector) FOR ORDER BY float_ops,
	FUNCTION 1 archer_vector_norm(avector);
CREATE OPERATOR CLASS bad_geo_function FOR TYPE point USING archer_geo AS
	OPERATOR 3 <-> (point, point) FOR ORDER BY float_ops,
	FUNCTION 1 point_distance(point, point);
-- archer_geo: a search operator as an ordering one; a strategy out of range
CREATE OPERATOR CLASS bad_geo_purpose FOR TYPE point USING archer_geo AS
	OPERATOR 1 <@ (point, archer_cap) FOR ORDER BY float_ops;
CREATE OPERATOR CLASS bad_geo_strategy FOR TYPE point USING archer_geo AS
	OPERATOR 9 <-> (point, point) FOR ORDER BY float_ops;
-- archer_geo: a type it cannot index
CREATE OPERATOR CLASS bad_geo_type FOR TYPE box USING archer_geo AS
	OPERATOR 1 <@ (point, archer_cap),
	OPERATOR 2 <@@ (point, polygon),
	OPERATOR 3 <-> (point, point) FOR ORDER BY float_ops;
-- strategies missing: conditions the planner could not place
CREATE OPERATOR CLASS bad_geo_incomplete FOR TYPE point USING archer_geo AS
	OPERATOR 3 <-> (point, point) FOR ORDER BY float_ops;
-- the polygon and cap operators under each other's strategies: the scan
-- would read a polygon as a cap and a cap as a polygon
CREATE OPERATOR CLASS bad_geo_right_type FOR TYPE point USING archer_geo AS
	OPERATOR 1 <@@ (point, polygon),
	OPERATOR 2 <@ (point, archer_cap),
	OPERATOR 3 <-> (point, point) FOR ORDER BY float_ops;
-- core's planar point-in-polygon, with the types of archer's geodesic one
CREATE OPERATOR CLASS bad_geo_planar FOR TYPE point USING archer_geo AS
	OPERATOR 1 <@ (point, archer_cap),
	OPERATOR 2 <@ (point, polygon),
	OPERATOR 3 <-> (point, point) FOR ORDER BY float_ops;
-- distances sorted by a family that does not order float8
CREATE OPERATOR CLASS bad_geo_sort FOR TYPE point USING archer_geo AS
	OPERATOR 1 <@ (point, archer_cap),
	OPERATOR 2 <@@ (point, polygon),
	OPERATOR 3 <-> (point, point) FOR ORDER BY integer_ops;
-- a boolean as an ordering operator (core refuses search operators that
-- return anything but a boolean)
CREATE OPERATOR CLASS bad_geo_result FOR TYPE point USING archer_geo AS
	OPERATOR 1 <@ (point, archer_cap),
	OPERATOR 2 <@@ (point, polygon),
	OPERATOR 3 ~= (point, point) FOR ORDER BY float_ops;
-- a cap operator that is not archer's predicate
CREATE FUNCTION fake_in_cap(point, archer_cap) RETURNS boolean
	LANGUAGE plpgsql IMMUTABLE STRICT AS 'BEGIN RETURN true; END';
CREATE OPERATOR @<< (LEFTARG = point, RIGHTARG = archer_cap, FUNCTION = fake_in_cap);
CREATE OPERATOR CLASS bad_geo_fake_cap FOR TYPE point USING archer_geo AS
	OPERATOR 1 @<< (point, archer_cap),
	OPERATOR 2 <@@ (point, polygon),
	OPERATOR 3 <-> (point, point) FOR ORDER BY float_ops;
-- archer_vector filter classes: an operator that is not btree's of its
-- number (the scan applies strategy 1 as <), and a class missing some
CREATE OPERATOR CLASS bad_filter_swapped FOR TYPE integer USING archer_vector AS
	OPERATOR 1 > (integer, integer),
	OPERATOR 2 <= (integer, integer),
	OPERATOR 3 = (integer, integer),
	OPERATOR 4 >= (integer, integer),
	OPERATOR 5 < (integer, integer);
CREATE OPERATOR CLASS bad_filter_incomplete FOR TYPE integer USING archer_vector AS
	OPERATOR 3 = (integer, integer);
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_none';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_strategy';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_purpose';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_type';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_two';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_geo_purpose';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_geo_type';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_geo_incomplete';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_geo_right_type';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_geo_planar';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_geo_sort';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_geo_result';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_geo_fake_cap';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_filter_swapped';
SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'bad_filter_incomplete';
DROP OPERATOR CLASS bad_none USING archer_vector;
DROP OPERATOR CLASS bad_strategy USING archer_vector;
DROP OPERATOR CLASS bad_purpose USING archer_vector;
DROP OPERATOR CLASS bad_type USING archer_vector;
DROP OPERATOR CLASS bad_two USING archer_vector;
DROP OPERATOR CLASS bad_geo_purpose USING archer_geo;
DROP OPERATOR CLASS bad_geo_type USING archer_geo;
DROP OPERATOR CLASS bad_geo_incomplete USING archer_geo;
DROP OPERATOR CLASS bad_geo_right_type USING archer_geo;
DROP OPERATOR CLASS bad_geo_planar USING archer_geo;
DROP OPERATOR CLASS bad_geo_sort USING archer_geo;
DROP OPERATOR CLASS bad_geo_result USING archer_geo;
DROP OPERATOR CLASS bad_geo_fake_cap USING archer_geo;
DROP OPERATOR @<< (point, archer_cap);
DROP FUNCTION fake_in_cap(point, archer_cap);
DROP OPERATOR CLASS bad_filter_swapped USING archer_vector;
DROP OPERATOR CLASS bad_filter_incomplete USING archer_vector;
-- the shipped classes stay valid
SELECT am.amname, bool_and(amvalidate(c.oid)) FROM pg_opclass c JOIN pg_am am ON am.oid = c.opcmethod
WHERE am.amname IN ('archer_geo', 'archer_vector') GROUP BY 1 ORDER BY 1;
-- archer_geo knows PostGIS's types by OID, not by name: a type named
-- geometry in another schema (a domain over point) is no PostGIS geometry
CREATE SCHEMA fake;
CREATE DOMAIN fake.geometry AS point;
CREATE OPERATOR CLASS fake_geometry_ops FOR TYPE fake.geometry USING archer_geo AS
	OPERATOR 3 <-> (point, point) FOR ORDER BY float_ops;
CREATE TABLE fake_t (g fake.geometry);
INSERT INTO fake_t VALUES (point(1, 1));
CREATE INDEX ON fake_t USING archer_geo (g fake_geometry_ops);
DROP TABLE fake_t;
DROP OPERATOR CLASS fake_geometry_ops USING archer_geo;
DROP SCHEMA fake CASCADE;
-- archer_geo_support knows archer's functions by their C function, not by
-- name: a function named archer_within elsewhere (here planar, and not
-- inlined) is not turned into an index condition, and a renamed
-- archer_within still is
CREATE TABLE named_t (p point);
INSERT INTO named_t SELECT point(i % 90, i / 90) FROM generate_series(0, 8099) i;
CREATE INDEX named_t_p ON named_t USING archer_geo (p);
ANALYZE named_t;
SET enable_seqscan = off;
CREATE SCHEMA other;
CREATE FUNCTION other.archer_within(geom point, region polygon) RETURNS boolean
	LANGUAGE plpgsql IMMUTABLE STRICT SUPPORT archer_geo_support AS 'BEGIN RETURN $1 <@ $2; END';
EXPLAIN (COSTS OFF)
SELECT count(*) FROM named_t WHERE other.archer_within(p, '((10,10),(10,20),(20,20),(20,10))');
ALTER FUNCTION public.archer_within(point, polygon) RENAME TO inside;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM named_t WHERE inside(p, '((10,10),(10,20),(20,20),(20,10))');
ALTER FUNCTION public.inside(point, polygon) RENAME TO archer_within;
-- nor by fmgr's address, which for a function with SET options is fmgr's
-- wrapper
ALTER FUNCTION public.archer_within(point, polygon) SET search_path = public;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM named_t WHERE archer_within(p, '((10,10),(10,20),(20,20),(20,10))');
ALTER FUNCTION public.archer_within(point, polygon) RESET search_path;
-- archer_geo_restrict knows a cap by its type, not by the operator's name:
-- an operator of another name on archer's cap predicate gets the cap's
-- estimate (a small radius, a few rows), not a polygon's
CREATE OPERATOR <<@ (LEFTARG = point, RIGHTARG = archer_cap, FUNCTION = archer_in_cap,
	RESTRICT = archer_geo_restrict);
CREATE FUNCTION named_rows(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO plan;
	RETURN (plan -> 0 -> 'Plan' ->> 'Plan Rows')::float8;
END $$;
SELECT named_rows('SELECT * FROM named_t WHERE p <<@ archer_cap(point(10, 10), 1000)') =
	named_rows('SELECT * FROM named_t WHERE p <@ archer_cap(point(10, 10), 1000)') AS same_estimate;
DROP FUNCTION named_rows(text);
DROP OPERATOR <<@ (point, archer_cap);
RESET enable_seqscan;
DROP SCHEMA other CASCADE;
DROP TABLE named_t;
