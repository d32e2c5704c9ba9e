-- bench/sql/vector.sql: the vector phases of the benchmark (archer_vector,
-- and pgvector when the server has it). Loaded by bench/vector into a
-- database holding, per data set S (fm: raw Fashion-MNIST; rot: rotated;
-- unit: rotated and normalized, see bench/lib/vector-data.js),
--   S_train (id, label, grp, v avector(784))   the rows, archer's table
--   S_test  (id, label, v avector(784))        the query vectors
-- and the participants' own copies of the same values (real[] for archer's
-- float4 operator classes, pgvector's vector). Every answer is scored
-- against the exact answer of a sequential scan of S_train (recall@10,
-- tie-proof: a returned row counts when its exact distance, computed on
-- S_train by id, is at most the 10th exact distance), so every
-- participant is scored by the same arithmetic. Speed is measured by
-- bench/vector with pgbench (prepared statements, one client).

CREATE TABLE vbench_result (
	seq		serial PRIMARY KEY,
	phase	text NOT NULL,		-- load, build, curve, filter, exact, insert, merge, pgvector
	name	text NOT NULL,
	m		jsonb NOT NULL
);

-- the exact top 10 of each query, per data set, operator and filter kind
CREATE TABLE vbench_truth (
	dataset	text,
	op		text,
	kind	text,
	qid		int,
	ids		int[],
	dists	float8[],
	PRIMARY KEY (dataset, op, kind, qid)
);

CREATE FUNCTION vbench_filter(p_kind text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE p_kind WHEN 'all' THEN 'true' WHEN 'label3' THEN 'label = 3' WHEN 'grp7' THEN 'grp = 7' END
$$;

-- The statement every participant runs (pgbench runs the same text with
-- :q for $1): the 10 rows of p_table nearest to query p_qid of p_test.
CREATE FUNCTION vbench_sql(p_table text, p_test text, p_kind text, p_op text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT format('SELECT id FROM %I WHERE %s ORDER BY v %s (SELECT v FROM %I WHERE id = $1) LIMIT 10',
				  p_table, vbench_filter(p_kind), p_op, p_test)
$$;

-- Apply 'name=value' settings for the current transaction
CREATE FUNCTION vbench_set(p_gucs text[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	g text;
BEGIN
	FOREACH g IN ARRAY coalesce(p_gucs, '{}') LOOP
		PERFORM set_config(split_part(g, '=', 1), substr(g, strpos(g, '=') + 1), true);
	END LOOP;
END $$;

-- Exact answers by sequential scan of S_train for the first p_nq queries
CREATE FUNCTION vbench_make_truth(p_set text, p_op text, p_kind text, p_nq int) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	q record;
BEGIN
	PERFORM set_config('enable_indexscan', 'off', true);
	PERFORM set_config('enable_bitmapscan', 'off', true);
	FOR q IN EXECUTE format('SELECT id, v FROM %I WHERE id <= $1 ORDER BY id', p_set || '_test') USING p_nq LOOP
		EXECUTE format('INSERT INTO vbench_truth
			SELECT %L, %L, %L, $1, array_agg(id ORDER BY d, id), array_agg(d ORDER BY d, id)
			FROM (SELECT id, v %s $2 AS d FROM %I WHERE %s ORDER BY d, id LIMIT 10) s',
			p_set, p_op, p_kind, p_op, p_set || '_train', vbench_filter(p_kind)) USING q.id, q.v;
	END LOOP;
END $$;

-- The plan of a participant's statement names its index, or an error is
-- raised. As in the measurements, sequential scans are off (on the small
-- tables of the tiny mode a 1% filter is cheapest without an index).
CREATE FUNCTION vbench_check_plan(p_table text, p_test text, p_kind text, p_op text,
								  p_index text, p_index_cond boolean, p_gucs text[] DEFAULT '{}')
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	line text;
	plan text := '';
BEGIN
	PERFORM vbench_set(p_gucs);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || vbench_sql(p_table, p_test, p_kind, p_op) USING 1 LOOP
		plan := plan || line || E'\n';
	END LOOP;
	IF plan NOT LIKE '%Index Scan using ' || p_index || ' %' OR
	   (p_index_cond AND plan NOT LIKE '%Index Cond%') THEN
		RAISE EXCEPTION 'plan for % on % does not use % as intended:%', p_kind, p_table, p_index, E'\n' || plan;
	END IF;
END $$;

-- Recall@10 and rows returned of one participant's configuration over the
-- first p_nq queries (bench/vector times the same statement with pgbench).
-- The returned ids are scored on S_train, whose values every participant's
-- table holds too.
CREATE FUNCTION vbench_recall(p_set text, p_op text, p_kind text, p_nq int,
							  p_table text, p_test text, p_gucs text[] DEFAULT '{}')
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	q record;
	ids int[];
	n bigint;
	hits bigint := 0;
	expected bigint := 0;
	nrows bigint := 0;
	min_rows int := 10;
	stmt text := vbench_sql(p_table, p_test, p_kind, p_op);
BEGIN
	PERFORM vbench_set(p_gucs);
	FOR q IN SELECT tr.qid, tr.dists FROM vbench_truth tr
			 WHERE tr.dataset = p_set AND tr.op = p_op AND tr.kind = p_kind AND tr.qid <= p_nq
			 ORDER BY tr.qid LOOP
		EXECUTE format('SELECT ARRAY(%s)', stmt) INTO ids USING q.qid;
		-- at most the 10th exact distance, with room for the rounding of
		-- negative distances (inner product) as well as positive ones
		EXECUTE format('SELECT count(*) FROM %I t WHERE t.id = ANY ($1)
				AND t.v %s (SELECT v FROM %I WHERE id = $2) <= $3 + 1e-9 * abs($3)',
				p_set || '_train', p_op, p_set || '_test')
			INTO n USING ids, q.qid, q.dists[cardinality(q.dists)];
		hits := hits + least(cardinality(q.dists), n);
		expected := expected + cardinality(q.dists);
		nrows := nrows + cardinality(ids);
		min_rows := least(min_rows, cardinality(ids));
	END LOOP;
	RETURN jsonb_build_object(
		'recall', CASE WHEN expected > 0 THEN hits::float8 / expected END,
		'avg_rows', nrows::float8 / p_nq, 'min_rows', min_rows);
END $$;

-- CREATE INDEX, timed, with its size; p_meta says which participant,
-- data set and operator it serves
-- p_workers: max_parallel_maintenance_workers for this build (0: serial)
CREATE FUNCTION vbench_build(p_name text, p_table text, p_def text, p_meta jsonb DEFAULT '{}',
							 p_workers int DEFAULT 0)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz;
	secs float8;
	result jsonb;
BEGIN
	PERFORM set_config('max_parallel_maintenance_workers', p_workers::text, true);
	t0 := clock_timestamp();
	EXECUTE format('CREATE INDEX %I ON %I USING %s', p_name, p_table, p_def);
	secs := extract(epoch FROM clock_timestamp() - t0);
	result := p_meta || jsonb_build_object('definition', p_def, 'table', p_table, 'seconds', secs,
										   'workers', p_workers,
										   'size_bytes', pg_relation_size(p_name::regclass));
	INSERT INTO vbench_result (phase, name, m) VALUES ('build', p_name, result);
	RETURN result;
END $$;

-- Merge an index's insert buffer, timed
-- Insert the rows of p_src with id > p_from into p_table in batches of
-- p_batch rows, one transaction each.  With p_parts sessions inserting at
-- once, this one takes every p_parts-th batch, from batch p_part on.
-- bench/vector times the sessions from outside (until the last is done).
CREATE PROCEDURE vbench_insert(p_table text, p_src text, p_from int, p_batch int,
							   p_part int, p_parts int)
LANGUAGE plpgsql AS $$
DECLARE
	lo int := p_from + p_part * p_batch;
	hi int;
BEGIN
	EXECUTE format('SELECT max(id) FROM %I', p_src) INTO hi;
	COMMIT;
	WHILE lo < hi LOOP
		EXECUTE format('INSERT INTO %I SELECT * FROM %I WHERE id > $1 AND id <= $2', p_table, p_src)
			USING lo, lo + p_batch;
		COMMIT;
		lo := lo + p_parts * p_batch;
	END LOOP;
END $$;
