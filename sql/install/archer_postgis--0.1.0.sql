-- archer_postgis 0.1.0: archer_geo operator classes for PostGIS
-- geography(Point) and geometry(Point, 4326).
\echo Use "CREATE EXTENSION archer_postgis CASCADE" to load this file. \quit

CREATE FUNCTION archer_cap(center geography, meters float8, use_spheroid boolean DEFAULT true)
	RETURNS archer_cap
	AS 'MODULE_PATHNAME', 'archer_cap_geography' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION archer_cap(center geometry, meters float8, use_spheroid boolean DEFAULT true)
	RETURNS archer_cap
	AS 'MODULE_PATHNAME', 'archer_cap_geometry' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- radius: exactly ST_DWithin(col::geography, center::geography, meters, use_spheroid)
CREATE FUNCTION archer_in_cap(geography, archer_cap) RETURNS boolean
	AS 'MODULE_PATHNAME', 'archer_geography_in_cap' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION archer_in_cap(geometry, archer_cap) RETURNS boolean
	AS 'MODULE_PATHNAME', 'archer_geometry_in_cap' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR <@ (
	LEFTARG = geography, RIGHTARG = archer_cap, FUNCTION = archer_in_cap,
	RESTRICT = archer_geo_restrict
);
CREATE OPERATOR <@ (
	LEFTARG = geometry, RIGHTARG = archer_cap, FUNCTION = archer_in_cap,
	RESTRICT = archer_geo_restrict
);
CREATE FUNCTION archer_dwithin(geom geography, center geography, meters float8,
							   use_spheroid boolean DEFAULT true) RETURNS boolean
	AS 'MODULE_PATHNAME', 'archer_dwithin_geography'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SUPPORT archer_geo_support;
CREATE FUNCTION archer_dwithin(geom geometry, center geometry, meters float8,
							   use_spheroid boolean DEFAULT true) RETURNS boolean
	AS 'MODULE_PATHNAME', 'archer_dwithin_geometry'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SUPPORT archer_geo_support;

-- polygon: exactly ST_Intersects(region, col)
CREATE FUNCTION archer_within(geom geography, region geography) RETURNS boolean
	AS 'MODULE_PATHNAME', 'archer_within_geography'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SUPPORT archer_geo_support;
CREATE FUNCTION archer_within(geom geometry, region geometry) RETURNS boolean
	AS 'MODULE_PATHNAME', 'archer_within_geometry'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SUPPORT archer_geo_support;
CREATE OPERATOR <@@ (
	LEFTARG = geography, RIGHTARG = geography, FUNCTION = archer_within,
	RESTRICT = archer_geo_restrict
);
CREATE OPERATOR <@@ (
	LEFTARG = geometry, RIGHTARG = geometry, FUNCTION = archer_within,
	RESTRICT = archer_geo_restrict
);

CREATE OPERATOR CLASS archer_geo_geography_ops
	DEFAULT FOR TYPE geography USING archer_geo AS
	OPERATOR 1 <@ (geography, archer_cap),
	OPERATOR 2 <@@ (geography, geography),
	OPERATOR 3 <-> (geography, geography) FOR ORDER BY pg_catalog.float_ops;

CREATE OPERATOR CLASS archer_geo_geometry_ops
	DEFAULT FOR TYPE geometry USING archer_geo AS
	OPERATOR 1 <@ (geometry, archer_cap),
	OPERATOR 2 <@@ (geometry, geometry),
	OPERATOR 3 <-> (geometry, geometry) FOR ORDER BY pg_catalog.float_ops;
