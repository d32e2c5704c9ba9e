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

-- ===========================================================================
-- vector: the avector type and vector distances (issue 3)
-- ===========================================================================
-- avector is a vector of 1 to 16,000 4-byte floats, in pgvector's text
-- format '[1,2,3]'.  pgvector's type is named vector: the two never clash,
-- and every function here is named avector_*, *_avector or archer_*, so
-- both extensions can live in one schema.  The distance functions and operators
-- also exist on real[] (1-D, no NULLs, no NaN or infinity), which the
-- archer_vector index access method will index directly.

CREATE TYPE avector;

CREATE FUNCTION avector_in(cstring, oid, integer) RETURNS avector
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION avector_out(avector) RETURNS cstring
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION avector_typmod_in(cstring[]) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION avector_typmod_out(integer) RETURNS cstring
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION avector_recv(internal, oid, integer) RETURNS avector
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION avector_send(avector) RETURNS bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- EXTERNAL: floats hardly compress, and uncompressed values are read
-- without a decompression step.
CREATE TYPE avector (
	INPUT = avector_in,
	OUTPUT = avector_out,
	TYPMOD_IN = avector_typmod_in,
	TYPMOD_OUT = avector_typmod_out,
	RECEIVE = avector_recv,
	SEND = avector_send,
	INTERNALLENGTH = VARIABLE,
	ALIGNMENT = int4,
	STORAGE = external
);
COMMENT ON TYPE avector IS 'vector of 4-byte floats, up to 16000 dimensions; avector(n) has n';

CREATE FUNCTION avector_dims(avector) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Casts, as pgvector's: to real[] implicitly, from arrays on assignment.
-- The functions take the target typmod (dimensions) and check it.
CREATE FUNCTION avector(avector, integer, boolean) RETURNS avector
	AS 'MODULE_PATHNAME', 'avector_coerce' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION avector_to_float4(avector, integer, boolean) RETURNS real[]
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION array_to_avector(real[], integer, boolean) RETURNS avector
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION array_to_avector(double precision[], integer, boolean) RETURNS avector
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION array_to_avector(numeric[], integer, boolean) RETURNS avector
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION array_to_avector(integer[], integer, boolean) RETURNS avector
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE CAST (avector AS avector)
	WITH FUNCTION avector(avector, integer, boolean) AS IMPLICIT;
CREATE CAST (avector AS real[])
	WITH FUNCTION avector_to_float4(avector, integer, boolean) AS IMPLICIT;
CREATE CAST (real[] AS avector)
	WITH FUNCTION array_to_avector(real[], integer, boolean) AS ASSIGNMENT;
CREATE CAST (double precision[] AS avector)
	WITH FUNCTION array_to_avector(double precision[], integer, boolean) AS ASSIGNMENT;
CREATE CAST (numeric[] AS avector)
	WITH FUNCTION array_to_avector(numeric[], integer, boolean) AS ASSIGNMENT;
CREATE CAST (integer[] AS avector)
	WITH FUNCTION array_to_avector(integer[], integer, boolean) AS ASSIGNMENT;

-- Distances, on avector and on real[].  Dimensions must match.
--   archer_l2_distance              sqrt(sum (a-b)^2)          operator <->
--   archer_l2_squared_distance      sum (a-b)^2
--   archer_inner_product            sum a*b
--   archer_negative_inner_product   -sum a*b                   operator <#>
--   archer_cosine_distance          1 - a.b / (|a| |b|)        operator <=>
--     in [0, 2]; a zero vector has cosine distance 1 to every vector
--     (no direction: treated as orthogonal), never NaN as in pgvector.
--   archer_vector_norm              sqrt(sum a^2)
-- Sums are computed in float (SIMD where the CPU has AVX2+FMA) and
-- returned as double precision; sums that overflow float are recomputed in
-- double.
CREATE FUNCTION archer_l2_distance(avector, avector) RETURNS float8
	AS 'MODULE_PATHNAME', 'avector_l2_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION archer_l2_squared_distance(avector, avector) RETURNS float8
	AS 'MODULE_PATHNAME', 'avector_l2_squared_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION archer_inner_product(avector, avector) RETURNS float8
	AS 'MODULE_PATHNAME', 'avector_inner_product' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION archer_negative_inner_product(avector, avector) RETURNS float8
	AS 'MODULE_PATHNAME', 'avector_negative_inner_product' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION archer_cosine_distance(avector, avector) RETURNS float8
	AS 'MODULE_PATHNAME', 'avector_cosine_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION archer_vector_norm(avector) RETURNS float8
	AS 'MODULE_PATHNAME', 'avector_norm' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION archer_l2_distance(real[], real[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'float4arr_l2_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION archer_l2_squared_distance(real[], real[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'float4arr_l2_squared_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION archer_inner_product(real[], real[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'float4arr_inner_product' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION archer_negative_inner_product(real[], real[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'float4arr_negative_inner_product' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION archer_cosine_distance(real[], real[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'float4arr_cosine_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION archer_vector_norm(real[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'float4arr_norm' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR <-> (
	LEFTARG = avector, RIGHTARG = avector, FUNCTION = archer_l2_distance,
	COMMUTATOR = '<->'
);
CREATE OPERATOR <#> (
	LEFTARG = avector, RIGHTARG = avector, FUNCTION = archer_negative_inner_product,
	COMMUTATOR = '<#>'
);
CREATE OPERATOR <=> (
	LEFTARG = avector, RIGHTARG = avector, FUNCTION = archer_cosine_distance,
	COMMUTATOR = '<=>'
);
CREATE OPERATOR <-> (
	LEFTARG = real[], RIGHTARG = real[], FUNCTION = archer_l2_distance,
	COMMUTATOR = '<->'
);
CREATE OPERATOR <#> (
	LEFTARG = real[], RIGHTARG = real[], FUNCTION = archer_negative_inner_product,
	COMMUTATOR = '<#>'
);
CREATE OPERATOR <=> (
	LEFTARG = real[], RIGHTARG = real[], FUNCTION = archer_cosine_distance,
	COMMUTATOR = '<=>'
);

-- Comparison (element by element, then the shorter vector first) and
-- hashing, for DISTINCT, ORDER BY, UNIQUE, GROUP BY and hash joins.
CREATE FUNCTION avector_lt(avector, avector) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION avector_le(avector, avector) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION avector_eq(avector, avector) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION avector_ne(avector, avector) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION avector_ge(avector, avector) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION avector_gt(avector, avector) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION avector_cmp(avector, avector) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION avector_hash(avector) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION avector_hash_extended(avector, bigint) RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR < (
	LEFTARG = avector, RIGHTARG = avector, FUNCTION = avector_lt,
	COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
	LEFTARG = avector, RIGHTARG = avector, FUNCTION = avector_le,
	COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR = (
	LEFTARG = avector, RIGHTARG = avector, FUNCTION = avector_eq,
	COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
	HASHES, MERGES
);
CREATE OPERATOR <> (
	LEFTARG = avector, RIGHTARG = avector, FUNCTION = avector_ne,
	COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR >= (
	LEFTARG = avector, RIGHTARG = avector, FUNCTION = avector_ge,
	COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);
CREATE OPERATOR > (
	LEFTARG = avector, RIGHTARG = avector, FUNCTION = avector_gt,
	COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);

CREATE OPERATOR CLASS avector_ops
	DEFAULT FOR TYPE avector USING btree AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 avector_cmp(avector, avector);

CREATE OPERATOR CLASS avector_ops
	DEFAULT FOR TYPE avector USING hash AS
	OPERATOR 1 =,
	FUNCTION 1 avector_hash(avector),
	FUNCTION 2 avector_hash_extended(avector, bigint);

-- Distance kernels: which set runs (also SHOW archer.vector_kernel), a
-- self-test of the SIMD kernels against the scalar ones and both against
-- double precision, and a micro-benchmark.
CREATE FUNCTION archer_vector_kernel() RETURNS text
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION archer_vector_kernel() IS 'the distance kernels in use: avx2+fma or scalar';

CREATE FUNCTION archer_vector_kernel_selftest(
		OUT kernel text, OUT impl text, OUT lengths integer,
		OUT max_rel_error float8, OUT ok boolean)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION archer_vector_kernel_selftest() IS 'compares every SIMD kernel with the scalar one and with double precision on random inputs of lengths 1..4100';

CREATE FUNCTION archer_vector_kernel_bench(
		dim integer DEFAULT 784, calls integer DEFAULT 100000,
		OUT kernel text, OUT impl text, OUT ns_per_call float8)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION archer_vector_kernel_bench(integer, integer) IS 'nanoseconds per call of each distance kernel, scalar and SIMD';
-- ======================== end of the vector section ========================

-- archer_vector: an HNSW graph over 8-bit quantized vectors for
-- ORDER BY col <-> | <#> | <=> query LIMIT k, on avector and real[].
-- Rows come back in exact distance order among the candidates found
-- (unless archer.vector_order = relaxed: then rows found late come last).
CREATE FUNCTION archer_vector_handler(internal) RETURNS index_am_handler
	AS 'MODULE_PATHNAME' LANGUAGE C;
CREATE ACCESS METHOD archer_vector TYPE INDEX HANDLER archer_vector_handler;
COMMENT ON ACCESS METHOD archer_vector IS 'HNSW graph over 8-bit quantized vectors, exact re-ranking';

CREATE OPERATOR CLASS avector_l2_ops
	DEFAULT FOR TYPE avector USING archer_vector AS
	OPERATOR 1 <-> (avector, avector) FOR ORDER BY pg_catalog.float_ops;
CREATE OPERATOR CLASS avector_ip_ops
	FOR TYPE avector USING archer_vector AS
	OPERATOR 2 <#> (avector, avector) FOR ORDER BY pg_catalog.float_ops;
CREATE OPERATOR CLASS avector_cosine_ops
	FOR TYPE avector USING archer_vector AS
	OPERATOR 3 <=> (avector, avector) FOR ORDER BY pg_catalog.float_ops;

CREATE OPERATOR CLASS float4_l2_ops
	DEFAULT FOR TYPE real[] USING archer_vector AS
	OPERATOR 1 <-> (real[], real[]) FOR ORDER BY pg_catalog.float_ops;
CREATE OPERATOR CLASS float4_ip_ops
	FOR TYPE real[] USING archer_vector AS
	OPERATOR 2 <#> (real[], real[]) FOR ORDER BY pg_catalog.float_ops;
CREATE OPERATOR CLASS float4_cosine_ops
	FOR TYPE real[] USING archer_vector AS
	OPERATOR 3 <=> (real[], real[]) FOR ORDER BY pg_catalog.float_ops;

-- Filter columns: integer columns after the vector column, for
-- WHERE col = 3 (or <, <=, >=, >) ORDER BY v <-> q LIMIT k.  The index
-- stores their values in each node, and the scan returns only nodes that
-- match while it walks the graph through all of them.  One family for the
-- three integer types, with cross-type operators, so that a bigint column
-- compared with an integer constant still uses the index.
CREATE OPERATOR FAMILY integer_filter_ops USING archer_vector;

CREATE OPERATOR CLASS int2_filter_ops
	DEFAULT FOR TYPE smallint USING archer_vector FAMILY integer_filter_ops AS
	OPERATOR 1 pg_catalog.< (smallint, smallint),
	OPERATOR 2 pg_catalog.<= (smallint, smallint),
	OPERATOR 3 pg_catalog.= (smallint, smallint),
	OPERATOR 4 pg_catalog.>= (smallint, smallint),
	OPERATOR 5 pg_catalog.> (smallint, smallint);
CREATE OPERATOR CLASS int4_filter_ops
	DEFAULT FOR TYPE integer USING archer_vector FAMILY integer_filter_ops AS
	OPERATOR 1 pg_catalog.< (integer, integer),
	OPERATOR 2 pg_catalog.<= (integer, integer),
	OPERATOR 3 pg_catalog.= (integer, integer),
	OPERATOR 4 pg_catalog.>= (integer, integer),
	OPERATOR 5 pg_catalog.> (integer, integer);
CREATE OPERATOR CLASS int8_filter_ops
	DEFAULT FOR TYPE bigint USING archer_vector FAMILY integer_filter_ops AS
	OPERATOR 1 pg_catalog.< (bigint, bigint),
	OPERATOR 2 pg_catalog.<= (bigint, bigint),
	OPERATOR 3 pg_catalog.= (bigint, bigint),
	OPERATOR 4 pg_catalog.>= (bigint, bigint),
	OPERATOR 5 pg_catalog.> (bigint, bigint);
ALTER OPERATOR FAMILY integer_filter_ops USING archer_vector ADD
	OPERATOR 1 pg_catalog.< (smallint, integer),
	OPERATOR 2 pg_catalog.<= (smallint, integer),
	OPERATOR 3 pg_catalog.= (smallint, integer),
	OPERATOR 4 pg_catalog.>= (smallint, integer),
	OPERATOR 5 pg_catalog.> (smallint, integer),
	OPERATOR 1 pg_catalog.< (smallint, bigint),
	OPERATOR 2 pg_catalog.<= (smallint, bigint),
	OPERATOR 3 pg_catalog.= (smallint, bigint),
	OPERATOR 4 pg_catalog.>= (smallint, bigint),
	OPERATOR 5 pg_catalog.> (smallint, bigint),
	OPERATOR 1 pg_catalog.< (integer, smallint),
	OPERATOR 2 pg_catalog.<= (integer, smallint),
	OPERATOR 3 pg_catalog.= (integer, smallint),
	OPERATOR 4 pg_catalog.>= (integer, smallint),
	OPERATOR 5 pg_catalog.> (integer, smallint),
	OPERATOR 1 pg_catalog.< (integer, bigint),
	OPERATOR 2 pg_catalog.<= (integer, bigint),
	OPERATOR 3 pg_catalog.= (integer, bigint),
	OPERATOR 4 pg_catalog.>= (integer, bigint),
	OPERATOR 5 pg_catalog.> (integer, bigint),
	OPERATOR 1 pg_catalog.< (bigint, smallint),
	OPERATOR 2 pg_catalog.<= (bigint, smallint),
	OPERATOR 3 pg_catalog.= (bigint, smallint),
	OPERATOR 4 pg_catalog.>= (bigint, smallint),
	OPERATOR 5 pg_catalog.> (bigint, smallint),
	OPERATOR 1 pg_catalog.< (bigint, integer),
	OPERATOR 2 pg_catalog.<= (bigint, integer),
	OPERATOR 3 pg_catalog.= (bigint, integer),
	OPERATOR 4 pg_catalog.>= (bigint, integer),
	OPERATOR 5 pg_catalog.> (bigint, integer);

CREATE FUNCTION archer_vector_verify(index regclass) RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION archer_vector_verify(regclass) IS 'checks an archer_vector index; returns the rows it holds (graph nodes and insert buffer entries) or raises an error';

CREATE FUNCTION archer_flush(index regclass) RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION archer_flush(regclass) IS 'merges the insert buffer of an archer index now; returns the entries merged (the index owner only)';

-- The figures of one archer index (from its meta page), and of all of them
CREATE FUNCTION archer_index_stats(index regclass,
	OUT access_method text, OUT buffer_entries bigint, OUT buffer_pages bigint,
	OUT merges bigint, OUT merged_entries bigint, OUT last_merge timestamptz,
	OUT last_merge_ms float8, OUT tree_height integer, OUT graph_nodes bigint,
	OUT deleted_nodes bigint, OUT index_pages bigint)
	AS 'MODULE_PATHNAME' LANGUAGE C STRICT VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION archer_index_stats(regclass) IS 'insert buffer, merges and structure figures of an archer index';

CREATE VIEW archer_index_stats AS
SELECT c.oid::regclass AS index, c.relnamespace::regnamespace AS schema,
	i.indrelid::regclass AS "table", s.*
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_am a ON a.oid = c.relam
JOIN pg_catalog.pg_index i ON i.indexrelid = c.oid,
LATERAL @extschema@.archer_index_stats(c.oid) s
WHERE a.amname IN ('archer_geo', 'archer_vector') AND c.relkind = 'i'
	-- other sessions' temporary indexes cannot be read
	AND NOT pg_catalog.pg_is_other_temp_schema(c.relnamespace);
COMMENT ON VIEW archer_index_stats IS 'one row per archer index: insert buffer, merges, tree height or graph nodes';
