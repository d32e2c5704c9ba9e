-- archer_geo on PostGIS geography(Point) and geometry(Point, 4326):
-- radius exactly as ST_DWithin on geography, polygons exactly as
-- ST_Intersects, kNN exactly in the order of PostGIS's <->.
CREATE INDEX geo_postgis_geog_archer ON geo_postgis USING archer_geo (geog);
CREATE INDEX geo_postgis_geom_archer ON geo_postgis USING archer_geo (geom);

SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM geo_postgis WHERE archer_dwithin(geog, 'POINT(2.35 48.85)'::geography, 1000);
EXPLAIN (COSTS OFF) SELECT id FROM geo_postgis WHERE archer_within(geom, 'SRID=4326;POLYGON((2 48,3 48,3 49,2 49,2 48))'::geometry);
EXPLAIN (COSTS OFF) SELECT id FROM geo_postgis ORDER BY geog <-> 'POINT(2.35 48.85)'::geography LIMIT 5;
RESET enable_seqscan;

-- archer_dwithin returns exactly what ST_DWithin does, on the same rows
SELECT count(*) AS differences FROM geo_postgis
WHERE archer_dwithin(geog, 'POINT(2.35 48.85)'::geography, 30000)
      IS DISTINCT FROM ST_DWithin(geog, 'POINT(2.35 48.85)'::geography, 30000);
SELECT count(*) AS differences FROM geo_postgis
WHERE archer_dwithin(geom, 'SRID=4326;POINT(179.9 -17)'::geometry, 100000, false)
      IS DISTINCT FROM ST_DWithin(geom::geography, 'POINT(179.9 -17)'::geography, 100000, false);

-- radius, spheroid and sphere, both types
SELECT c.x, c.y, r.m, s.sph, col.name, t.*
FROM (VALUES (2.35, 48.85), (180, 0), (-180, 0), (0, 90), (0, -90), (0, 0),
             (179.99, -17), (-179.99, -17), (-73.98, 40.75), (2.3522, 48.8566)) c(x, y),
     (VALUES (0), (1), (1000), (10000), (100000), (1000000), (10000000), (20100000)) r(m),
     (VALUES (true), (false)) s(sph),
     (VALUES ('geog', 'geography'), ('geom', 'geometry')) col(name, typ),
     LATERAL index_vs_seq(format('SELECT id FROM geo_postgis WHERE archer_dwithin(%s, ''SRID=4326;POINT(%s %s)''::%s, %s, %L)',
                                 col.name, c.x, c.y, col.typ, r.m, s.sph)) t
WHERE t.mismatches <> 0 OR NOT t.used_index;
SELECT * FROM index_vs_seq('SELECT id FROM geo_postgis WHERE archer_dwithin(geog, ''POINT(2.35 48.85)''::geography, 10000)');
SELECT * FROM index_vs_seq('SELECT id FROM geo_postgis WHERE archer_dwithin(geom, ''SRID=4326;POINT(-180 -17)''::geometry, 60000)');

-- polygons: geometry (planar edges) and geography (geodesic edges)
SELECT r.name, col.name, t.*
FROM (VALUES
        ('block', 'POLYGON((2.34 48.85,2.36 48.85,2.36 48.86,2.34 48.86,2.34 48.85))'),
        ('france-ish', 'POLYGON((-5 42,8 42,8 51,-5 51,-5 42))'),
        ('with hole', 'POLYGON((-10 30,30 30,30 60,-10 60,-10 30),(0 45,5 45,5 50,0 50,0 45))'),
        ('fiji east', 'POLYGON((179 -18,180 -18,180 -16,179 -16,179 -18))'),
        ('fiji both', 'MULTIPOLYGON(((179 -18,180 -18,180 -16,179 -16,179 -18)),((-180 -18,-179 -18,-179 -16,-180 -16,-180 -18)))'),
        ('arctic', 'POLYGON((-180 85,180 85,180 90,-180 90,-180 85))'),
        ('antarctic', 'POLYGON((-180 -90,180 -90,180 -85,-180 -85,-180 -90))'),
        ('concave', 'POLYGON((0 0,40 0,40 40,20 10,0 40,0 0))'),
        ('big', 'POLYGON((-170 -60,170 -60,170 60,-170 60,-170 -60))')) r(name, wkt),
     (VALUES ('geom', 'geometry'), ('geog', 'geography')) col(name, typ),
     LATERAL index_vs_seq(format('SELECT id FROM geo_postgis WHERE archer_within(%s, ''SRID=4326;%s''::%s)',
                                 col.name, r.wkt, col.typ)) t
ORDER BY col.name, r.name;

-- ST_Intersects itself agrees
SELECT count(*) AS differences FROM geo_postgis
WHERE archer_within(geom, 'SRID=4326;POLYGON((-5 42,8 42,8 51,-5 51,-5 42))'::geometry)
      IS DISTINCT FROM (ST_Intersects('SRID=4326;POLYGON((-5 42,8 42,8 51,-5 51,-5 42))'::geometry, geom)
                        AND NOT ST_IsEmpty(geom));

-- nearest neighbours in the order of PostGIS's <-> (sphere for geography,
-- planar degrees for geometry), including at (180, 0)
SELECT c.x, c.y, k.n, col.name, t.*
FROM (VALUES (2.35, 48.85), (180, 0), (-180, 0), (0, 90), (0, -90), (179.99, -17), (0, 0)) c(x, y),
     (VALUES (1), (10), (100), (2000)) k(n),
     (VALUES ('geog', 'geography'), ('geom', 'geometry')) col(name, typ),
     LATERAL knn_vs_seq(format('SELECT %s <-> ''SRID=4326;POINT(%s %s)''::%s AS dist FROM geo_postgis ORDER BY %s <-> ''SRID=4326;POINT(%s %s)''::%s LIMIT %s',
                               col.name, c.x, c.y, col.typ, col.name, c.x, c.y, col.typ, k.n)) t
WHERE NOT t.same_order OR NOT t.used_index;
SELECT * FROM knn_vs_seq('SELECT geog <-> ''POINT(180 0)''::geography AS dist FROM geo_postgis ORDER BY geog <-> ''POINT(180 0)''::geography LIMIT 10');
SELECT * FROM knn_vs_seq('SELECT geom <-> ''SRID=4326;POINT(10 10)''::geometry AS dist FROM geo_postgis ORDER BY geom <-> ''SRID=4326;POINT(10 10)''::geometry');

SELECT archer_geo_verify('geo_postgis_geog_archer') = (SELECT count(*) FROM geo_postgis) AS geog_verified,
       archer_geo_verify('geo_postgis_geom_archer') = (SELECT count(*) FROM geo_postgis) AS geom_verified;

-- Other access methods' indexes never take archer's conditions: GiST's,
-- SP-GiST's and BRIN's geometry families put &< at archer's strategy number
-- for polygons.  With only such indexes, archer_within and archer_dwithin
-- are filters and still answer exactly.
CREATE TABLE geo_other_am AS SELECT id, geog, geom FROM geo_postgis;
CREATE INDEX geo_other_am_gist ON geo_other_am USING gist (geom);
CREATE INDEX geo_other_am_gist_geog ON geo_other_am USING gist (geog);
CREATE INDEX geo_other_am_spgist ON geo_other_am USING spgist (geom);
CREATE INDEX geo_other_am_brin ON geo_other_am USING brin (geom);
ANALYZE geo_other_am;
SET enable_seqscan = off;
SELECT count(*) FILTER (WHERE archer_within(geom, 'SRID=4326;POLYGON((-5 42,8 42,8 51,-5 51,-5 42))'::geometry))
         = count(*) FILTER (WHERE ST_Intersects('SRID=4326;POLYGON((-5 42,8 42,8 51,-5 51,-5 42))'::geometry, geom)
                            AND NOT ST_IsEmpty(geom)) AS exact_count
FROM geo_postgis;
SELECT (SELECT count(*) FROM geo_other_am
        WHERE archer_within(geom, 'SRID=4326;POLYGON((-5 42,8 42,8 51,-5 51,-5 42))'::geometry))
     = (SELECT count(*) FROM geo_postgis
        WHERE archer_within(geom, 'SRID=4326;POLYGON((-5 42,8 42,8 51,-5 51,-5 42))'::geometry)) AS within_geom_ok,
       (SELECT count(*) FROM geo_other_am
        WHERE archer_within(geog, 'SRID=4326;POLYGON((-5 42,8 42,8 51,-5 51,-5 42))'::geography))
     = (SELECT count(*) FROM geo_postgis
        WHERE archer_within(geog, 'SRID=4326;POLYGON((-5 42,8 42,8 51,-5 51,-5 42))'::geography)) AS within_geog_ok,
       (SELECT count(*) FROM geo_other_am
        WHERE archer_dwithin(geom, 'SRID=4326;POINT(2.35 48.85)'::geometry, 300000))
     = (SELECT count(*) FROM geo_postgis
        WHERE archer_dwithin(geom, 'SRID=4326;POINT(2.35 48.85)'::geometry, 300000)) AS dwithin_ok;
SET enable_bitmapscan = off;
-- (the plan's lines tested one by one: from 18 on EXPLAIN adds "Disabled:
-- true" to the sequential scan that enable_seqscan = off leaves as the
-- only way)
SELECT plan_matches(q, '^Seq Scan on geo_other_am') AS seq_scan,
       plan_matches(q, '^ +Filter: archer_within\(geom,') AS archer_within_filter,
       plan_matches(q, 'Index') AS an_index
FROM (VALUES ($$SELECT id FROM geo_other_am
WHERE archer_within(geom, 'SRID=4326;POLYGON((-5 42,8 42,8 51,-5 51,-5 42))'::geometry)$$)) v(q);
SELECT count(*) > 0 AS found FROM geo_other_am
WHERE archer_within(geom, 'SRID=4326;POLYGON((-5 42,8 42,8 51,-5 51,-5 42))'::geometry)
HAVING count(*) = (SELECT count(*) FROM geo_postgis
                   WHERE archer_within(geom, 'SRID=4326;POLYGON((-5 42,8 42,8 51,-5 51,-5 42))'::geometry));
RESET enable_bitmapscan;
RESET enable_seqscan;
DROP TABLE geo_other_am;
