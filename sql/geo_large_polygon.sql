-- Limits: polygons of 100,000 vertices, flowers of 97 petals (edges of a
-- metre or two), one across the Paris cluster of geo_points and one 15
-- degrees wide.  The index
-- answers equal PostGIS's ST_Intersects (geometry: planar edges;
-- geography: geodesic edges) and, for point, the exact predicate by
-- sequential scan.
CREATE TABLE big_polygons AS
SELECT name, ST_MakePolygon(ST_MakeLine(array_agg(v ORDER BY i) || (array_agg(v ORDER BY i))[1])) AS geom
FROM (
    SELECT name, i, ST_SetSRID(ST_MakePoint(cx + r * (0.7 + 0.3 * sin(97 * a)) * cos(a),
                                            cy + r * (0.7 + 0.3 * sin(97 * a)) * sin(a)), 4326) AS v
    FROM (VALUES ('paris', 2.35, 48.85, 0.3), ('wide', 10.0, 45.0, 15.0)) c(name, cx, cy, r),
         generate_series(0, 99999) i,
         LATERAL (SELECT 2 * pi() * i / 100000 AS a) t
) s
GROUP BY name;
SELECT name, ST_NPoints(geom), ST_IsValid(geom) FROM big_polygons ORDER BY name;

CREATE INDEX geo_postgis_geog_big ON geo_postgis USING archer_geo (geog);
CREATE INDEX geo_postgis_geom_big ON geo_postgis USING archer_geo (geom);
CREATE INDEX geo_points_p_big ON geo_points USING archer_geo (p);

SELECT b.name, 'geometry' AS col, n_rows > 0 AS found_rows, c.mismatches, c.used_index
FROM big_polygons b, LATERAL index_vs_seq(
    format('SELECT id FROM geo_postgis WHERE archer_within(geom, %L::geometry)', b.geom),
    q_exact => format('SELECT id FROM geo_postgis WHERE ST_Intersects(%L::geometry, geom)', b.geom)) c
ORDER BY b.name;
SELECT b.name, 'geography' AS col, n_rows > 0 AS found_rows, c.mismatches, c.used_index
FROM big_polygons b, LATERAL index_vs_seq(
    format('SELECT id FROM geo_postgis WHERE archer_within(geog, %L::geography)', b.geom),
    q_exact => format('SELECT id FROM geo_postgis WHERE ST_Intersects(%L::geography, geog)', b.geom)) c
ORDER BY b.name;
-- point: the polygon type, geodesic edges; exact by sequential scan
SELECT b.name, 'point' AS col, n_rows > 0 AS found_rows, c.mismatches, c.used_index
FROM big_polygons b,
     LATERAL (SELECT ('(' || string_agg('(' || ST_X(d.geom) || ',' || ST_Y(d.geom) || ')', ',' ORDER BY d.path) || ')')::polygon AS poly
              FROM ST_DumpPoints(ST_ExteriorRing(b.geom)) d WHERE d.path[1] <= 100000) p,
     LATERAL index_vs_seq(format('SELECT id FROM geo_points WHERE archer_within(p, %L::polygon)', p.poly)) c
ORDER BY b.name;

DROP INDEX geo_postgis_geog_big, geo_postgis_geom_big, geo_points_p_big;
DROP TABLE big_polygons;
