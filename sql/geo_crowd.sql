-- archer_geo on geometry, where points crowd along polygon edges: clusters
-- at scales from 10 km to 1 cm straddle every edge, so that whole cells
-- inside partial covering cells are judged at many levels, and each
-- backend's region cache is used, evicted and shared by concurrent scans.
SELECT setseed(0.42);
CREATE TABLE geo_crowd (id int PRIMARY KEY, geom geometry(Point, 4326));
-- clusters centred on the edges of a concave polygon, in and out of it
INSERT INTO geo_crowd
SELECT row_number() OVER (),
       ST_SetSRID(ST_MakePoint(x0 + t * (x1 - x0) + scale * (random() - 0.5),
                               y0 + t * (y1 - y0) + scale * (random() - 0.5)), 4326)
FROM (VALUES (0, 0, 10, 0), (10, 0, 10, 10), (10, 10, 5, 3), (5, 3, 0, 10), (0, 10, 0, 0)) e(x0, y0, x1, y1),
     generate_series(1, 24) c,
     LATERAL (SELECT random() AS t, (ARRAY[0.1, 1e-3, 1e-5, 1e-7])[1 + c % 4] AS scale) p,
     generate_series(1, 60) k;
-- crowds well inside and well outside, exact duplicates on an edge and a vertex
INSERT INTO geo_crowd
SELECT 100000 + row_number() OVER (), ST_SetSRID(ST_MakePoint(x + 1e-4 * random(), y + 1e-4 * random()), 4326)
FROM (VALUES (5, 1), (9, 5), (2, 5), (5, 8), (-3, 5), (12, 12)) c(x, y), generate_series(1, 300);
INSERT INTO geo_crowd
SELECT 200000 + row_number() OVER (), ST_SetSRID(ST_MakePoint(x, y), 4326)
FROM (VALUES (5, 0), (10, 10), (7.5, 6.5)) c(x, y), generate_series(1, 40);
CREATE INDEX geo_crowd_archer ON geo_crowd USING archer_geo (geom);
ANALYZE geo_crowd;

SELECT r.name, t.*
FROM (VALUES
        ('concave', 'POLYGON((0 0,10 0,10 10,5 3,0 10,0 0))'),
        ('with hole', 'POLYGON((0 0,10 0,10 10,5 3,0 10,0 0),(4 1,6 1,6 2,4 2,4 1))'),
        ('multi', 'MULTIPOLYGON(((0 0,4.9 0,4.9 5,0 5,0 0)),((5 0,10 0,10 10,5 3,5 0)))'),
        ('sliver', 'POLYGON((0 0,10 0,10 1e-6,0 1e-6,0 0))')) r(name, wkt),
     LATERAL index_vs_seq(format('SELECT id FROM geo_crowd WHERE archer_within(geom, ''SRID=4326;%s''::geometry)',
                                 r.wkt)) t
ORDER BY r.name;

-- index-only counts, coverings of every size: the region cache keys on the setting
SET enable_seqscan = off;
SET enable_bitmapscan = off;
CREATE FUNCTION pg_temp.crowd_counts_agree() RETURNS boolean LANGUAGE sql AS $$
    SELECT (SELECT count(*) FROM geo_crowd
            WHERE archer_within(geom, 'SRID=4326;POLYGON((0 0,10 0,10 10,5 3,0 10,0 0))'::geometry))
         = (SELECT count(*) FROM geo_crowd
            WHERE ST_Intersects('SRID=4326;POLYGON((0 0,10 0,10 10,5 3,0 10,0 0))'::geometry, geom))
$$;
SET archer.geo_polygon_max_cells = 4;
SELECT pg_temp.crowd_counts_agree(), pg_temp.crowd_counts_agree();
SET archer.geo_polygon_max_cells = 64;
SELECT pg_temp.crowd_counts_agree(), pg_temp.crowd_counts_agree();
RESET archer.geo_polygon_max_cells;
SELECT pg_temp.crowd_counts_agree(), pg_temp.crowd_counts_agree();
SET archer.geo_polygon_max_cells = 4;
SELECT pg_temp.crowd_counts_agree();
RESET archer.geo_polygon_max_cells;

-- more distinct polygons in one statement than the cache holds, twice
CREATE TEMP TABLE crowd_boxes AS
SELECT i, ST_MakeEnvelope(i * 0.7 - 0.3, 0, i * 0.7 + 0.4, 10, 4326) AS box FROM generate_series(0, 14) i;
SELECT round, count(*) FILTER (WHERE by_index <> exact) AS wrong_counts, sum(by_index) > 0 AS found
FROM generate_series(1, 2) round,
     LATERAL (SELECT (SELECT count(*) FROM geo_crowd
                      WHERE archer_within(geom, b.box) AND round > 0) AS by_index,
                     (SELECT count(*) FROM geo_crowd WHERE ST_Intersects(b.box, geom)) AS exact
              FROM crowd_boxes b) c
GROUP BY round ORDER BY round;

-- an outer scan keeps its region while inner scans of the same polygon come and go
SELECT count(*) AS outer_rows,
       count(*) FILTER (WHERE inner_count <> exact_count) AS wrong_counts
FROM (SELECT a.id,
             (SELECT count(*) FROM geo_crowd b
              WHERE archer_within(b.geom, 'SRID=4326;POLYGON((0 0,10 0,10 10,5 3,0 10,0 0))'::geometry)
                AND b.id % 7 = a.id % 7) AS inner_count,
             (SELECT count(*) FROM geo_crowd b
              WHERE ST_Intersects('SRID=4326;POLYGON((0 0,10 0,10 10,5 3,0 10,0 0))'::geometry, b.geom)
                AND b.id % 7 = a.id % 7) AS exact_count
      FROM geo_crowd a
      WHERE archer_within(a.geom, 'SRID=4326;POLYGON((0 0,10 0,10 10,5 3,0 10,0 0))'::geometry)
        AND a.id % 499 = 0) s;

-- a scan that ends in an ERROR, caught by a subtransaction, leaves the region usable
DO $$
DECLARE
    n bigint;
BEGIN
    BEGIN
        SELECT count(*) INTO n FROM geo_crowd
        WHERE archer_within(geom, 'SRID=4326;POLYGON((0 0,10 0,10 10,5 3,0 10,0 0))'::geometry)
          AND 1 / (id - 200001) IS NOT NULL;
    EXCEPTION WHEN division_by_zero THEN
        RAISE NOTICE 'scan stopped by division_by_zero';
    END;
END $$;
SELECT * FROM index_vs_seq('SELECT id FROM geo_crowd WHERE archer_within(geom, ''SRID=4326;POLYGON((0 0,10 0,10 10,5 3,0 10,0 0))''::geometry)');
-- an invalid polygon is refused every time, never cached
SELECT count(*) FROM geo_crowd WHERE archer_within(geom, 'SRID=4326;POLYGON((0 0,10 10,10 0,0 10,0 0))'::geometry);
SELECT count(*) FROM geo_crowd WHERE archer_within(geom, 'SRID=4326;POLYGON((0 0,10 10,10 0,0 10,0 0))'::geometry);
RESET enable_bitmapscan;
RESET enable_seqscan;

SELECT archer_geo_verify('geo_crowd_archer') = (SELECT count(*) FROM geo_crowd) AS verified;
DROP TABLE geo_crowd;
