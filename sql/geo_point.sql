-- archer_geo on the built-in point type: radius, polygon and kNN queries,
-- each compared with the exact predicate by sequential scan.
CREATE INDEX geo_points_archer ON geo_points USING archer_geo (p);

-- the planner uses the index for each query form
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM geo_points WHERE archer_dwithin(p, point(2.35, 48.85), 1000);
EXPLAIN (COSTS OFF) SELECT id FROM geo_points WHERE archer_within(p, '((2,48),(3,48),(3,49),(2,49))'::polygon);
EXPLAIN (COSTS OFF) SELECT id FROM geo_points ORDER BY p <-> point(2.35, 48.85) LIMIT 5;
RESET enable_seqscan;

-- radius: centers at the seams of the sphere and of S2, radii from 0 m to
-- more than half the circumference
SELECT c.x, c.y, r.m, t.*
FROM (VALUES (2.35, 48.85), (180, 0), (-180, 0), (0, 90), (0, -90), (0, 0),
             (179.99, -17), (-179.99, -17), (45, 35.26438968275466), (-73.98, 40.75),
             (100, -89.9), (2.3522, 48.8566)) c(x, y),
     (VALUES (0), (1), (50), (1000), (10000), (100000), (1000000), (5000000),
             (15000000), (20015086), (20100000)) r(m),
     LATERAL index_vs_seq(format('SELECT id FROM geo_points WHERE archer_dwithin(p, point(%s, %s), %s)', c.x, c.y, r.m)) t
WHERE t.mismatches <> 0 OR NOT t.used_index;

-- a few radius answers in full, to see they are not empty
SELECT * FROM index_vs_seq('SELECT id FROM geo_points WHERE archer_dwithin(p, point(2.35, 48.85), 10000)');
SELECT * FROM index_vs_seq('SELECT id FROM geo_points WHERE archer_dwithin(p, point(180, -17), 50000)');
SELECT * FROM index_vs_seq('SELECT id FROM geo_points WHERE archer_dwithin(p, point(0, 90), 200000)');
SELECT * FROM index_vs_seq('SELECT id FROM geo_points WHERE archer_dwithin(p, point(2.3522, 48.8566), 0)');

-- the operator form and the center as first argument
SELECT * FROM index_vs_seq('SELECT id FROM geo_points WHERE p <@ archer_cap(point(2.35, 48.85), 5000)');
SELECT * FROM index_vs_seq('SELECT id FROM geo_points WHERE archer_dwithin(point(2.35, 48.85), p, 5000)');

-- polygons (geodesic edges): a city block, a country-sized one, one across
-- the antimeridian, one around the north pole, a concave one
SELECT * FROM index_vs_seq('SELECT id FROM geo_points WHERE archer_within(p, ''((2.34,48.85),(2.36,48.85),(2.36,48.86),(2.34,48.86))''::polygon)');
SELECT * FROM index_vs_seq('SELECT id FROM geo_points WHERE archer_within(p, ''((-5,42),(8,42),(8,51),(-5,51))''::polygon)');
SELECT * FROM index_vs_seq('SELECT id FROM geo_points WHERE archer_within(p, ''((179,-18),(-179,-18),(-179,-16),(179,-16))''::polygon)');
SELECT * FROM index_vs_seq('SELECT id FROM geo_points WHERE archer_within(p, ''((0,80),(90,80),(180,80),(-90,80))''::polygon)');
SELECT * FROM index_vs_seq('SELECT id FROM geo_points WHERE archer_within(p, ''((0,0),(40,0),(40,40),(20,10),(0,40))''::polygon)');

-- two conditions at once
SELECT * FROM index_vs_seq('SELECT id FROM geo_points WHERE archer_dwithin(p, point(2.35, 48.85), 30000) AND archer_within(p, ''((2,48),(2.4,48),(2.4,49),(2,49))''::polygon)');

-- nearest neighbours, in exactly the order of point <-> point; NULLs last
SELECT c.x, c.y, k.n, t.*
FROM (VALUES (2.35, 48.85), (180, 0), (-180, 0), (0, 90), (0, -90), (179.99, -17),
             (-179.99, -17), (0, 0), (100, -89.9)) c(x, y),
     (VALUES (1), (10), (100), (3000)) k(n),
     LATERAL knn_vs_seq(format('SELECT p <-> point(%s, %s) AS dist FROM geo_points ORDER BY p <-> point(%s, %s) LIMIT %s', c.x, c.y, c.x, c.y, k.n)) t
WHERE NOT t.same_order OR NOT t.used_index;
SELECT * FROM knn_vs_seq('SELECT p <-> point(2.35, 48.85) AS dist FROM geo_points ORDER BY p <-> point(2.35, 48.85) LIMIT 10');
-- every row, NULLs last
SELECT * FROM knn_vs_seq('SELECT p <-> point(10, 10) AS dist FROM geo_points ORDER BY p <-> point(10, 10)');
-- kNN with a condition
SELECT * FROM knn_vs_seq('SELECT p <-> point(2.35, 48.85) AS dist FROM geo_points WHERE archer_dwithin(p, point(2.35, 48.85), 20000) ORDER BY p <-> point(2.35, 48.85) LIMIT 50');

SELECT archer_geo_verify('geo_points_archer') = (SELECT count(*) FROM geo_points) AS verified;

-- a prepared radius query: after five custom plans the plan cache keeps a
-- generic one (the cap's parameters unknown, estimated at about one row),
-- which still uses the index
PREPARE near(point, float8) AS SELECT count(*) FROM geo_points WHERE archer_dwithin(p, $1, $2);
EXECUTE near(point(2.35, 48.85), 1000);
EXECUTE near(point(2.35, 48.85), 2000);
EXECUTE near(point(-70, -33), 1000);
EXECUTE near(point(139.7, 35.7), 1500);
EXECUTE near(point(0, 90), 1000);
EXPLAIN (COSTS OFF) EXECUTE near(point(2.35, 48.85), 500);
DEALLOCATE near;
-- and answers exactly at any radius: plpgsql caches the plan of its query
-- the same way (the reference, on an expression of the column, cannot use
-- the index)
CREATE FUNCTION near_ids(c point, m float8) RETURNS int[] LANGUAGE plpgsql AS $$
BEGIN
    RETURN (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM geo_points WHERE archer_dwithin(p, c, m));
END $$;
SELECT count(*) AS checked,
       count(*) FILTER (WHERE near_ids(point(x, y), m) IS DISTINCT FROM
           (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM geo_points
            WHERE archer_dwithin(p + point(0, 0), point(x, y), m))) AS mismatches
FROM (VALUES (2.35, 48.85), (-70, -33), (180, 0), (0, -90), (100, 10)) c(x, y),
     (VALUES (100.0), (1000.0), (50000.0), (2000000.0), (20100000.0)) r(m);
DROP FUNCTION near_ids;
