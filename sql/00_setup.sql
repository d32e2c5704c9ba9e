-- Shared setup for the regression tests: extensions and the helpers that
-- compare every index answer with the exact predicate by sequential scan.
--
-- Every test's VACUUM is VACUUM (FREEZE): a plain VACUUM passes over a heap
-- page whose cleanup lock it cannot take at once (the checkpointer or the
-- background writer may hold a pin to write it), leaving its dead rows and
-- their index entries for next time, so counts and plans after it would
-- depend on timing.  An aggressive VACUUM waits for the lock instead.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS archer;
CREATE EXTENSION IF NOT EXISTS archer_postgis CASCADE;
RESET client_min_messages;

-- Whether the plan of q, under the current settings, has a line matching pattern
CREATE FUNCTION plan_matches(q text, pattern text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        IF line ~ pattern THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN false;
END $$;

-- Runs q once through indexes only and once by sequential scan (or q_exact
-- by sequential scan, e.g. the PostGIS formulation); returns the plan of
-- the first run and both answers: column col of q as sorted texts.
CREATE FUNCTION answers_by_index_and_seq(q text, col text, q_exact text,
                                         OUT index_plan text, OUT by_index text[], OUT by_seq text[])
LANGUAGE plpgsql AS $$
DECLARE
    answer text := 'SELECT coalesce(array_agg(%1$s::text ORDER BY %1$s::text), ''{}'') FROM (%2$s) s';
    line text;
BEGIN
    PERFORM set_config('enable_seqscan', 'off', true);
    PERFORM set_config('enable_bitmapscan', 'off', true);
    index_plan := '';
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        index_plan := index_plan || line || E'\n';
    END LOOP;
    EXECUTE format(answer, col, q) INTO by_index;
    PERFORM set_config('enable_seqscan', 'on', true);
    PERFORM set_config('enable_indexscan', 'off', true);
    PERFORM set_config('enable_indexonlyscan', 'off', true);
    EXECUTE format(answer, col, coalesce(q_exact, q)) INTO by_seq;
    PERFORM set_config('enable_indexscan', 'on', true);
    PERFORM set_config('enable_indexonlyscan', 'on', true);
    PERFORM set_config('enable_bitmapscan', 'on', true);
END $$;

-- How many elements of either array the other lacks (multisets)
CREATE FUNCTION multiset_mismatches(a text[], b text[]) RETURNS bigint
LANGUAGE sql AS $$
    SELECT count(*) FROM (
        (SELECT unnest(a) EXCEPT ALL SELECT unnest(b))
        UNION ALL
        (SELECT unnest(b) EXCEPT ALL SELECT unnest(a))) d
$$;

-- Runs q (a query returning a column id) through indexes and by sequential
-- scan; reports the row count, the rows that differ, and whether the plan
-- used an archer index.
CREATE FUNCTION index_vs_seq(q text, OUT n_rows bigint, OUT mismatches bigint,
                             OUT used_index boolean, q_exact text DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
    answers record;
BEGIN
    answers := answers_by_index_and_seq(q, 'id', q_exact);
    used_index := answers.index_plan ~ 'Index (Only )?Scan using';
    n_rows := cardinality(answers.by_seq);
    mismatches := multiset_mismatches(answers.by_index, answers.by_seq);
END $$;

-- Same for ordered queries: q returns a column dist in query order; the
-- index must produce exactly the same sequence of distances, both as an
-- index-only scan (which orders by exact distances itself, when q needs no
-- other column) and as a plain index scan (the executor reorders).
CREATE FUNCTION knn_vs_seq(q text, OUT n_rows bigint, OUT same_order boolean,
                           OUT used_index boolean)
LANGUAGE plpgsql AS $$
DECLARE
    wrapped text := 'SELECT coalesce(array_agg(dist ORDER BY ord), ''{}'') FROM (SELECT dist, row_number() OVER () AS ord FROM (' || q || ') s) t';
    by_index float8[];
    by_plain_index float8[];
    by_seq float8[];
BEGIN
    PERFORM set_config('enable_seqscan', 'off', true);
    PERFORM set_config('enable_bitmapscan', 'off', true);
    used_index := plan_matches(q, 'Index (Only )?Scan using');
    EXECUTE wrapped INTO by_index;
    PERFORM set_config('enable_indexonlyscan', 'off', true);
    used_index := used_index AND plan_matches(q, 'Index Scan using');
    EXECUTE wrapped INTO by_plain_index;
    PERFORM set_config('enable_seqscan', 'on', true);
    PERFORM set_config('enable_indexscan', 'off', true);
    EXECUTE wrapped INTO by_seq;
    PERFORM set_config('enable_indexscan', 'on', true);
    PERFORM set_config('enable_indexonlyscan', 'on', true);
    PERFORM set_config('enable_bitmapscan', 'on', true);
    n_rows := cardinality(by_seq);
    same_order := by_index IS NOT DISTINCT FROM by_seq AND by_plain_index IS NOT DISTINCT FROM by_seq;
END $$;

-- Random points, uniform on the sphere, plus points where S2 and
-- longitude/latitude have their seams: poles, antimeridian, equator, prime
-- meridian, cube face edges and corners; duplicates; NULLs.
SELECT setseed(0.4242);
CREATE TABLE geo_points AS
    SELECT i AS id,
           point(random() * 360 - 180, degrees(asin(random() * 2 - 1))) AS p
    FROM generate_series(1, 20000) i;
INSERT INTO geo_points
    SELECT 20000 + row_number() OVER (), point(x, y) FROM (VALUES
        (0, 90), (0, -90), (180, 90), (-180, -90), (45, 90),
        (180, 0), (-180, 0), (0, 0), (0, 45), (90, 0), (-90, 0),
        (180, 45), (-180, -45), (179.9999999, 0), (-179.9999999, 0),
        (45, 35.26438968275466), (-45, -35.26438968275466), (135, 35.26438968275466),
        (2.3522, 48.8566), (2.3522, 48.8566), (2.3522, 48.8566),
        (178.4419, -18.1416), (-179.9, -16.5), (179.9, -16.5)) v(x, y);
-- clusters: Paris, Fiji across the antimeridian, around both poles
INSERT INTO geo_points
    SELECT 21000 + i, point(c.x + (random() - 0.5) * c.w, greatest(-90, least(90, c.y + (random() - 0.5) * c.w)))
    FROM generate_series(1, 1500) i,
         (VALUES (2.35, 48.85, 0.5)) c(x, y, w)
    UNION ALL
    SELECT 23000 + i, point(CASE WHEN random() < 0.5 THEN 179.5 + random() * 0.5 ELSE -180 + random() * 0.5 END,
                           -17 + (random() - 0.5))
    FROM generate_series(1, 1500) i
    UNION ALL
    SELECT 25000 + i, point(random() * 360 - 180, 89 + random())
    FROM generate_series(1, 1000) i
    UNION ALL
    SELECT 27000 + i, point(random() * 360 - 180, -89 - random())
    FROM generate_series(1, 1000) i;
INSERT INTO geo_points SELECT 29000 + i, NULL FROM generate_series(1, 5) i;

-- The same points as PostGIS geography and geometry (SRID 4326)
CREATE TABLE geo_postgis AS
    SELECT id,
           CASE WHEN p IS NULL THEN NULL ELSE ST_SetSRID(ST_MakePoint(p[0], p[1]), 4326)::geography END AS geog,
           CASE WHEN p IS NULL THEN NULL ELSE ST_SetSRID(ST_MakePoint(p[0], p[1]), 4326) END AS geom
    FROM geo_points;
INSERT INTO geo_postgis VALUES (30001, 'POINT EMPTY'::geography, 'SRID=4326;POINT EMPTY'::geometry);
ANALYZE geo_points;
ANALYZE geo_postgis;
SELECT count(*), count(p) FROM geo_points;
