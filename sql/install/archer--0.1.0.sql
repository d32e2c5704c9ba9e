-- archer 0.1.0: the archer_geo access method for the built-in point type.
-- PostGIS types live in the companion extension archer_postgis.
\echo Use "CREATE EXTENSION archer" to load this file. \quit

CREATE FUNCTION archer_geo_handler(internal) RETURNS index_am_handler
	AS 'MODULE_PATHNAME' LANGUAGE C;

CREATE ACCESS METHOD archer_geo TYPE INDEX HANDLER archer_geo_handler;
COMMENT ON ACCESS METHOD archer_geo IS 'points on the sphere keyed by S2 cell ids';

-- archer_cap: a center (lng, lat in degrees), a radius in meters, and whether
-- distances are measured on the spheroid (PostGIS types) or the sphere.
CREATE TYPE archer_cap;

CREATE FUNCTION archer_cap_in(cstring) RETURNS archer_cap
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION archer_cap_out(archer_cap) RETURNS cstring
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION archer_cap_recv(internal) RETURNS archer_cap
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION archer_cap_send(archer_cap) RETURNS bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE archer_cap (
	INPUT = archer_cap_in,
	OUTPUT = archer_cap_out,
	RECEIVE = archer_cap_recv,
	SEND = archer_cap_send,
	INTERNALLENGTH = 32,
	ALIGNMENT = double
);
COMMENT ON TYPE archer_cap IS 'a spherical cap: center, radius in meters, sphere or spheroid';

CREATE FUNCTION archer_cap(center point, meters float8) RETURNS archer_cap
	AS 'MODULE_PATHNAME', 'archer_cap_point' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- planner support and selectivity for the predicates below
CREATE FUNCTION archer_geo_support(internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION archer_geo_restrict(internal, oid, internal, integer) RETURNS float8
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;

-- radius: great-circle distance on the sphere of radius 6,371,008.8 m
CREATE FUNCTION archer_in_cap(point, archer_cap) RETURNS boolean
	AS 'MODULE_PATHNAME', 'archer_point_in_cap' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR <@ (
	LEFTARG = point, RIGHTARG = archer_cap, FUNCTION = archer_in_cap,
	RESTRICT = archer_geo_restrict
);
CREATE FUNCTION archer_dwithin(geom point, center point, meters float8) RETURNS boolean
	AS 'MODULE_PATHNAME', 'archer_dwithin_point'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SUPPORT archer_geo_support;

-- polygon: geodesic edges, boundary included
CREATE FUNCTION archer_within(geom point, region polygon) RETURNS boolean
	AS 'MODULE_PATHNAME', 'archer_within_point'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SUPPORT archer_geo_support;
CREATE OPERATOR <@@ (
	LEFTARG = point, RIGHTARG = polygon, FUNCTION = archer_within,
	RESTRICT = archer_geo_restrict
);

CREATE FUNCTION archer_geo_cellid(point) RETURNS bigint
	AS 'MODULE_PATHNAME', 'archer_geo_cellid_point' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION archer_geo_cellid(point) IS 'the S2 leaf cell id of a (lng, lat) point, as a signed bigint';

CREATE FUNCTION archer_geo_verify(index regclass) RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION archer_geo_verify(regclass) IS 'checks an archer_geo index; returns its entry count or raises an error';

CREATE OPERATOR CLASS archer_geo_point_ops
	DEFAULT FOR TYPE point USING archer_geo AS
	OPERATOR 1 <@ (point, archer_cap),
	OPERATOR 2 <@@ (point, polygon),
	OPERATOR 3 <-> (point, point) FOR ORDER BY pg_catalog.float_ops;
