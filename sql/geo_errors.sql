-- Bad input gets a clear error, never a crash or a wrong answer.
CREATE TABLE geo_bad (id int, p point, geog geography, geom geometry);
CREATE INDEX geo_bad_p ON geo_bad USING archer_geo (p);
CREATE INDEX geo_bad_geog ON geo_bad USING archer_geo (geog);
CREATE INDEX geo_bad_geom ON geo_bad USING archer_geo (geom);
INSERT INTO geo_bad (id, p) VALUES (1, point(0, 91));
INSERT INTO geo_bad (id, p) VALUES (1, point(0, -90.5));
INSERT INTO geo_bad (id, p) VALUES (1, point('NaN', 0));
INSERT INTO geo_bad (id, p) VALUES (1, point('Infinity', 0));
INSERT INTO geo_bad (id, p) VALUES (1, point(181, 0));
INSERT INTO geo_bad (id, geog) VALUES (1, 'LINESTRING(0 0, 1 1)'::geography);
INSERT INTO geo_bad (id, geom) VALUES (1, 'SRID=3857;POINT(0 0)'::geometry);
INSERT INTO geo_bad (id, geom) VALUES (1, 'POINT(0 0)'::geometry);
INSERT INTO geo_bad (id, geom) VALUES (1, 'SRID=4326;POLYGON((0 0,1 0,1 1,0 0))'::geometry);
INSERT INTO geo_bad (id, geom) VALUES (1, 'SRID=4326;POINT(0 95)'::geometry);
-- good rows still go in
INSERT INTO geo_bad (id, p, geog, geom) VALUES (2, point(1, 1), 'POINT(1 1)', 'SRID=4326;POINT(1 1)');
SELECT id FROM geo_bad;
-- query arguments
SELECT archer_dwithin(point(0, 0), point(0, 0), -1);
SELECT archer_dwithin(point(0, 0), point(0, 0), 'NaN');
SELECT archer_dwithin(point(0, 0), point(0, 100), 10);
SELECT archer_dwithin('POINT(0 0)'::geography, 'POINT EMPTY'::geography, 10);
SELECT archer_dwithin('POINT(0 0)'::geography, 'LINESTRING(0 0, 1 1)'::geography, 10);
SELECT archer_dwithin('SRID=4326;POINT(0 0)'::geometry, 'SRID=3857;POINT(0 0)'::geometry, 10);
SET enable_seqscan = off;
SELECT id FROM geo_bad WHERE archer_within(geom, 'SRID=4326;POLYGON((0 0,2 2,2 0,0 2,0 0))'::geometry);
SELECT id FROM geo_bad WHERE archer_within(geom, 'SRID=4326;LINESTRING(0 0,2 2)'::geometry);
SELECT id FROM geo_bad WHERE archer_within(geom, 'SRID=4326;POLYGON EMPTY'::geometry);
SELECT id FROM geo_bad WHERE archer_within(geom, 'SRID=3857;POLYGON((0 0,2 0,2 2,0 2,0 0))'::geometry);
SELECT id FROM geo_bad WHERE archer_within(p, '((0,0),(1,1))'::polygon);
SELECT id FROM geo_bad WHERE archer_within(p, '((0,0),(2,0),(2,2),(0,2))'::polygon);
RESET enable_seqscan;
SELECT 'garbage'::archer_cap;
SELECT '<(1,2),-5>'::archer_cap;
SELECT '<(1,2),5>'::archer_cap, '<(1,2),5,sphere>'::archer_cap;
-- an index on a type archer_geo does not know
CREATE TABLE geo_badtype (b box);
CREATE INDEX ON geo_badtype USING archer_geo (b);
DROP TABLE geo_bad, geo_badtype;
