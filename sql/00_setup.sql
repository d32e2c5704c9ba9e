-- Shared setup for the regression tests: extensions and the helpers that
-- compare every index answer with the exact predicate by sequential scan.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS archer;
CREATE EXTENSION IF NOT EXISTS archer_postgis CASCADE;
RESET client_min_messages;

-- Runs q (a query returning a column id) once through indexes only and once
-- by sequential scan (or q_exact by sequential scan, e.g. the PostGIS
-- formulation); reports the row count, the rows that differ, and whether
-- the plan used an archer index.
CREATE FUNCTION index_vs_seq(q text, OUT n_rows bigint, OUT mismatches bigint,
                             OUT used_index boolean, q_exact text DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
    plan text;
    by_index bigint[];
    by_seq bigint[];
BEGIN
    PERFORM set_config('enable_seqscan', 'off', true);
    used_index := false;
    FOR plan IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        IF plan ~ 'Index (Only )?Scan using' THEN
            used_index := true;
        END IF;
    END LOOP;
    EXECUTE 'SELECT coalesce(array_agg(id ORDER BY id), ''{}'') FROM (' || q || ') s' INTO by_index;
    PERFORM set_config('enable_seqscan', 'on', true);
    PERFORM set_config('enable_indexscan', 'off', true);
    PERFORM set_config('enable_indexonlyscan', 'off', true);
    PERFORM set_config('enable_bitmapscan', 'off', true);
    EXECUTE 'SELECT coalesce(array_agg(id ORDER BY id), ''{}'') FROM (' || coalesce(q_exact, q) || ') s' INTO by_seq;
    PERFORM set_config('enable_indexscan', 'on', true);
    PERFORM set_config('enable_indexonlyscan', 'on', true);
    PERFORM set_config('enable_bitmapscan', 'on', true);
    n_rows := cardinality(by_seq);
    SELECT count(*) INTO mismatches FROM (
        (SELECT unnest(by_index) EXCEPT ALL SELECT unnest(by_seq))
        UNION ALL
        (SELECT unnest(by_seq) EXCEPT ALL SELECT unnest(by_index))) d;
END $$;

-- Same for ordered queries: q returns a column dist in query order; the
-- index must produce exactly the same sequence of distances, both as an
-- index-only scan (which orders by exact distances itself, when q needs no
-- other column) and as a plain index scan (the executor reorders).
CREATE FUNCTION knn_vs_seq(q text, OUT n_rows bigint, OUT same_order boolean,
                           OUT used_index boolean)
LANGUAGE plpgsql AS $$
DECLARE
    plan text;
    wrapped text := 'SELECT coalesce(array_agg(dist ORDER BY ord), ''{}'') FROM (SELECT dist, row_number() OVER () AS ord FROM (' || q || ') s) t';
    by_index float8[];
    by_plain_index float8[];
    by_seq float8[];
    plain_used boolean := false;
BEGIN
    PERFORM set_config('enable_seqscan', 'off', true);
    PERFORM set_config('enable_bitmapscan', 'off', true);
    used_index := false;
    FOR plan IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        IF plan ~ 'Index (Only )?Scan using' THEN
            used_index := true;
        END IF;
    END LOOP;
    EXECUTE wrapped INTO by_index;
    PERFORM set_config('enable_indexonlyscan', 'off', true);
    FOR plan IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        IF plan ~ 'Index Scan using' THEN
            plain_used := true;
        END IF;
    END LOOP;
    EXECUTE wrapped INTO by_plain_index;
    PERFORM set_config('enable_seqscan', 'on', true);
    PERFORM set_config('enable_indexscan', 'off', true);
    EXECUTE wrapped INTO by_seq;
    PERFORM set_config('enable_indexscan', 'on', true);
    PERFORM set_config('enable_indexonlyscan', 'on', true);
    PERFORM set_config('enable_bitmapscan', 'on', true);
    n_rows := cardinality(by_seq);
    used_index := used_index AND plain_used;
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
