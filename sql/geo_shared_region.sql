-- The shared tier of the polygon region cache (src/geo/geo_regioncache.c): the
-- test runner preloads archer, so the covering a backend computes for a
-- polygon is kept in shared memory, and a new backend asking about the same
-- polygon takes it from there instead of checking the polygon with
-- ST_IsValid and computing its covering again.  Its answers must stay those
-- of the exact predicate.  The DEBUG1 lines say where a backend took a
-- covering from.
SELECT setseed(0.1616);
CREATE TABLE geo_shared (id int PRIMARY KEY, p point,
                         geog geography(Point, 4326), geom geometry(Point, 4326));
-- points around a star of 96 vertices near (30.123, -12.345) (polygons of
-- less than 1 kB are not shared), some of them crowding near its vertices
INSERT INTO geo_shared (id, p)
SELECT i, point(30.123 + 1.4 * (random() - 0.5), -12.345 + 1.4 * (random() - 0.5))
FROM generate_series(1, 3000) i;
INSERT INTO geo_shared (id, p)
SELECT 3000 + row_number() OVER (),
       point(30.123 + r * cos(a) + 1e-6 * (random() - 0.5), -12.345 + r * sin(a) + 1e-6 * (random() - 0.5))
FROM generate_series(0, 95) k,
     LATERAL (SELECT radians(k * 3.75 + 1) AS a, CASE WHEN k % 2 = 0 THEN 0.5 ELSE 0.2 END AS r) v,
     generate_series(1, 3);
UPDATE geo_shared SET geom = ST_SetSRID(ST_MakePoint(p[0], p[1]), 4326), geog = ST_SetSRID(ST_MakePoint(p[0], p[1]), 4326)::geography;
CREATE INDEX geo_shared_p ON geo_shared USING archer_geo (p);
CREATE INDEX geo_shared_geog ON geo_shared USING archer_geo (geog);
CREATE INDEX geo_shared_geom ON geo_shared USING archer_geo (geom);
ANALYZE geo_shared;
SELECT 'SRID=4326;POLYGON((' || string_agg(format('%s %s', x, y), ',' ORDER BY k) || '))' AS star,
       '(' || string_agg(format('(%s,%s)', x, y), ',' ORDER BY k) FILTER (WHERE k < 96) || ')' AS star_polygon
FROM (SELECT k, round((30.123 + r * cos(a))::numeric, 6) AS x, round((-12.345 + r * sin(a))::numeric, 6) AS y
      FROM generate_series(0, 96) k,
           LATERAL (SELECT radians((k % 96) * 3.75 + 1) AS a, CASE WHEN k % 2 = 0 THEN 0.5 ELSE 0.2 END AS r) v) s
\gset

-- the first backend computes each covering and shares it (or, when the
-- server has run this test before, finds it shared already)
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FROM geo_shared WHERE archer_within(geog, :'star'::geography);
SELECT count(*) FROM geo_shared WHERE archer_within(geom, :'star'::geometry);
SELECT count(*) FROM geo_shared WHERE archer_within(p, :'star_polygon'::polygon);
-- an invalid polygon (a bow tie) is refused, and never shared
SELECT count(*) FROM geo_shared WHERE archer_within(geom, 'SRID=4326;POLYGON((30 -12,31 -13,31 -12,30 -13,30 -12))'::geometry);
-- a small polygon costs less to cover than to look up, and is not shared
SELECT count(*) FROM geo_shared WHERE archer_within(geog, 'SRID=4326;POLYGON((30 -12.5,30.3 -12.5,30.3 -12.2,30 -12.2,30 -12.5))'::geography);

-- a new backend takes the coverings from shared memory, once each (then
-- from its own cache), and finds the same rows as the exact predicate by
-- sequential scan
\c
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET client_min_messages = debug1;
SELECT count(*) FROM geo_shared WHERE archer_within(geog, :'star'::geography);
SELECT count(*) FROM geo_shared WHERE archer_within(geom, :'star'::geometry);
SELECT count(*) FROM geo_shared WHERE archer_within(p, :'star_polygon'::polygon);
SELECT count(*) FROM geo_shared WHERE archer_within(geog, :'star'::geography);
SELECT count(*) FROM geo_shared WHERE archer_within(geom, 'SRID=4326;POLYGON((30 -12,31 -13,31 -12,30 -13,30 -12))'::geometry);
SELECT count(*) FROM geo_shared WHERE archer_within(geog, 'SRID=4326;POLYGON((30 -12.5,30.3 -12.5,30.3 -12.2,30 -12.2,30 -12.5))'::geography);
RESET client_min_messages;
SELECT kind, t.*
FROM (VALUES
        ('geography', format($q$SELECT id FROM geo_shared WHERE archer_within(geog, %L::geography)$q$, :'star'),
         format($q$SELECT id FROM geo_shared WHERE ST_Intersects(geog, %L::geography)$q$, :'star')),
        ('geometry', format($q$SELECT id FROM geo_shared WHERE archer_within(geom, %L::geometry)$q$, :'star'),
         format($q$SELECT id FROM geo_shared WHERE ST_Intersects(geom, %L::geometry)$q$, :'star')),
        ('point', format($q$SELECT id FROM geo_shared WHERE archer_within(p, %L::polygon)$q$, :'star_polygon'),
         NULL)) q(kind, q, q_exact),
     LATERAL index_vs_seq(q.q, q_exact => q.q_exact) t
ORDER BY kind;

DROP TABLE geo_shared;
