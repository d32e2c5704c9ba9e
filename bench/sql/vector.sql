-- bench/sql/vector.sql: the Fashion-MNIST phase of the benchmark (archer_vector).
-- Loaded by bench/vector into a database holding
--   fm_train (id, label, grp, v avector(784))   the training images
--   fm_test  (id, label, v avector(784))        the query images
-- Every index answer is scored against the exact answer of a sequential
-- scan on the same rows (recall@10, tie-proof: a returned row counts when
-- its exact distance is at most the 10th exact distance).  Speed is
-- measured by bench/vector with pgbench (prepared statements, one client).

CREATE TABLE vbench_result (
	seq		serial PRIMARY KEY,
	phase	text NOT NULL,		-- load, build, curve, filter, exact, insert
	name	text NOT NULL,
	m		jsonb NOT NULL
);

-- the exact top 10 of each query, per filter kind
CREATE TABLE vbench_truth (
	kind	text,
	qid		int,
	ids		int[],
	dists	float8[],
	PRIMARY KEY (kind, qid)
);

-- The answer of one query, by kind of filter: the statements pgbench times
-- (bench/vector), with the query vector as a parameter.
CREATE FUNCTION vbench_answer(p_kind text, p_v avector) RETURNS int[]
LANGUAGE plpgsql AS $$
BEGIN
	IF p_kind = 'all' THEN
		RETURN ARRAY(SELECT id FROM fm_train ORDER BY v <-> p_v LIMIT 10);
	ELSIF p_kind = 'label3' THEN
		RETURN ARRAY(SELECT id FROM fm_train WHERE label = 3 ORDER BY v <-> p_v LIMIT 10);
	ELSIF p_kind = 'grp7' THEN
		RETURN ARRAY(SELECT id FROM fm_train WHERE grp = 7 ORDER BY v <-> p_v LIMIT 10);
	END IF;
	RAISE EXCEPTION 'vbench_answer: unknown kind %', p_kind;
END $$;

CREATE FUNCTION vbench_filter(p_kind text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE p_kind WHEN 'all' THEN 'true' WHEN 'label3' THEN 'label = 3' WHEN 'grp7' THEN 'grp = 7' END
$$;

-- Exact answers by sequential scan for the first p_nq queries
CREATE FUNCTION vbench_make_truth(p_kind text, p_nq int) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	q record;
BEGIN
	PERFORM set_config('enable_indexscan', 'off', true);
	PERFORM set_config('enable_bitmapscan', 'off', true);
	FOR q IN SELECT id, v FROM fm_test WHERE id <= p_nq ORDER BY id LOOP
		EXECUTE format('INSERT INTO vbench_truth
			SELECT %L, $1, array_agg(id ORDER BY d, id), array_agg(d ORDER BY d, id)
			FROM (SELECT id, v <-> $2 AS d FROM fm_train WHERE %s ORDER BY d, id LIMIT 10) s',
			p_kind, vbench_filter(p_kind)) USING q.id, q.v;
	END LOOP;
END $$;

-- The plan of a query of this kind names the index, or raises an error.
-- As in the measurements, sequential scans are off: on the small tables of
-- the tiny mode a 1% filter is cheapest without the index.
CREATE FUNCTION vbench_check_plan(p_kind text, p_index text, p_index_cond boolean) RETURNS void
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
	line text;
	plan text := '';
BEGIN
	FOR line IN EXECUTE format('EXPLAIN (COSTS OFF) SELECT id FROM fm_train WHERE %s ORDER BY v <-> $1 LIMIT 10',
							   vbench_filter(p_kind)) USING (SELECT v FROM fm_test WHERE id = 1) LOOP
		plan := plan || line || E'\n';
	END LOOP;
	IF plan NOT LIKE '%Index Scan using ' || p_index || ' %' OR
	   (p_index_cond AND plan NOT LIKE '%Index Cond%') THEN
		RAISE EXCEPTION 'plan for % does not use % as intended:%', p_kind, p_index, E'\n' || plan;
	END IF;
END $$;

-- Recall@10 and rows returned of one configuration over the first p_nq
-- queries (bench/vector times the same queries with pgbench).
CREATE FUNCTION vbench_recall(p_kind text, p_ef int, p_nq int, p_exact boolean DEFAULT false)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	q record;
	ids int[];
	hits bigint := 0;
	expected bigint := 0;
	nrows bigint := 0;
	min_rows int := 10;
BEGIN
	PERFORM set_config('archer.ef_search', p_ef::text, true);
	PERFORM set_config('enable_indexscan', CASE WHEN p_exact THEN 'off' ELSE 'on' END, true);
	PERFORM set_config('enable_seqscan', CASE WHEN p_exact THEN 'on' ELSE 'off' END, true);
	FOR q IN SELECT t.id, t.v, tr.ids AS truth, tr.dists FROM fm_test t
			 JOIN vbench_truth tr ON tr.qid = t.id AND tr.kind = p_kind
			 WHERE t.id <= p_nq ORDER BY t.id LOOP
		ids := vbench_answer(p_kind, q.v);
		hits := hits + least(cardinality(q.truth),
			(SELECT count(*) FROM fm_train WHERE id = ANY (ids)
			 AND v <-> q.v <= q.dists[cardinality(q.dists)] * (1 + 1e-9)));
		expected := expected + cardinality(q.truth);
		nrows := nrows + cardinality(ids);
		min_rows := least(min_rows, cardinality(ids));
	END LOOP;
	RETURN jsonb_build_object(
		'kind', p_kind, 'ef_search', p_ef, 'queries', p_nq,
		'recall', CASE WHEN expected > 0 THEN hits::float8 / expected END,
		'avg_rows', nrows::float8 / p_nq, 'min_rows', min_rows);
END $$;

-- CREATE INDEX, timed, with its size
CREATE FUNCTION vbench_build(p_name text, p_table text, p_def text) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
	secs float8;
	result jsonb;
BEGIN
	EXECUTE format('CREATE INDEX %I ON %I USING %s', p_name, p_table, p_def);
	secs := extract(epoch FROM clock_timestamp() - t0);
	result := jsonb_build_object('definition', p_def, 'seconds', secs,
								 'size_bytes', pg_relation_size(p_name::regclass));
	INSERT INTO vbench_result (phase, name, m) VALUES ('build', p_name, result);
	RETURN result;
END $$;

-- Merge an index's insert buffer, timed
CREATE FUNCTION vbench_flush(p_index text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
	merged bigint := archer_flush(p_index::regclass);
	secs float8 := extract(epoch FROM clock_timestamp() - t0);
	result jsonb := jsonb_build_object('entries', merged, 'seconds', secs,
									   'entries_per_s', merged / greatest(secs, 1e-6));
BEGIN
	INSERT INTO vbench_result (phase, name, m) VALUES ('insert', 'flush', result);
	RETURN result;
END $$;

-- Insert the rows of fm_train with id > p_from into fm_ins in batches of
-- p_batch rows, one transaction each: rows/s and WAL bytes per row
CREATE PROCEDURE vbench_insert(p_name text, p_from int, p_batch int)
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz;
	wal0 pg_lsn;
	secs float8 := 0;
	nrows bigint := 0;
	n bigint;
	lo int := p_from;
	hi int := (SELECT max(id) FROM fm_train);
BEGIN
	COMMIT;
	wal0 := pg_current_wal_insert_lsn();
	WHILE lo < hi LOOP
		t0 := clock_timestamp();
		INSERT INTO fm_ins SELECT * FROM fm_train WHERE id > lo AND id <= lo + p_batch;
		GET DIAGNOSTICS n = ROW_COUNT;
		COMMIT;
		secs := secs + extract(epoch FROM clock_timestamp() - t0);
		nrows := nrows + n;
		lo := lo + p_batch;
	END LOOP;
	INSERT INTO vbench_result (phase, name, m) VALUES ('insert', p_name, jsonb_build_object(
		'rows', nrows, 'batch', p_batch, 'seconds', secs, 'rows_per_s', nrows / secs,
		'wal_bytes_per_row', pg_wal_lsn_diff(pg_current_wal_insert_lsn(), wal0) / nrows));
	COMMIT;
END $$;
