-- bench/sql/queries.sql: what is measured. Needs bench_center (i, city_ord,
-- uid) loaded from centers.csv. Each participant's ids_sql returns the ids of
-- one answer; q.FIELD are the parameters (see bench_q in setup.sql).
\set ON_ERROR_STOP 1

INSERT INTO bench_participant (qkind, participant, reference, index_name, ids_sql) VALUES
-- radius: archer vs ST_DWithin through GiST on geography (the reference) vs
-- the fastest exact formulation we know for PostGIS: a degree box through
-- the GiST index on geometry, then the exact spheroid test (_ST_DWithin, the
-- variant without index support, so the planner cannot pick the geography
-- index for it instead)
('radius', 'archer', 'gist_geog', 'geo_a_geog_archer',
 'SELECT id FROM geo_a WHERE archer_dwithin(geog, q.geog, q.r)'),
('radius', 'gist_geog', NULL, 'geo_p_geog_gist',
 'SELECT id FROM geo_p WHERE ST_DWithin(geog, q.geog, q.r)'),
('radius', 'gist_geom_box', 'gist_geog', 'geo_p_geom_gist',
 'SELECT id FROM geo_p WHERE (geom && q.env1 OR geom && q.env2) AND _ST_DWithin(geog, q.geog, q.r, true)'),
-- polygons: geodesic edges (geography) and planar edges (geometry), each
-- against ST_Intersects on the same type
('polygon', 'archer_geog', 'gist_geog', 'geo_a_geog_archer',
 'SELECT id FROM geo_a WHERE archer_within(geog, q.region_geog)'),
('polygon', 'gist_geog', NULL, 'geo_p_geog_gist',
 'SELECT id FROM geo_p WHERE ST_Intersects(q.region_geog, geog)'),
('polygon', 'archer_geom', 'gist_geom', 'geo_a_geom_archer',
 'SELECT id FROM geo_a WHERE archer_within(geom, q.region_geom)'),
('polygon', 'gist_geom', NULL, 'geo_p_geom_gist',
 'SELECT id FROM geo_p WHERE ST_Intersects(q.region_geom, geom)'),
-- GiST as PostGIS's documentation advises for large polygons: the country
-- cut into pieces of at most 256 vertices (countries_sub_*, setup.sql),
-- each piece through the GiST index, DISTINCT ids (q.label is the country)
('polygon', 'gist_geom_subdivide', 'gist_geom', 'geo_p_geom_gist',
 'SELECT DISTINCT p.id FROM countries_sub_geom c JOIN geo_p p ON ST_Intersects(c.geom, p.geom) WHERE c.a3 = q.label'),
('polygon', 'gist_geog_subdivide', 'gist_geog', 'geo_p_geog_gist',
 'SELECT DISTINCT p.id FROM countries_sub_geog c JOIN geo_p p ON ST_Intersects(c.geog, p.geog) WHERE c.a3 = q.label'),
-- k nearest: sphere distance for geography, planar degrees for geometry
-- (PostGIS's <-> on each type)
('knn', 'archer_geog', 'gist_geog', 'geo_a_geog_archer',
 'SELECT id FROM geo_a ORDER BY geog <-> q.geog LIMIT q.k'),
('knn', 'gist_geog', NULL, 'geo_p_geog_gist',
 'SELECT id FROM geo_p ORDER BY geog <-> q.geog LIMIT q.k'),
('knn', 'archer_geom', 'gist_geom', 'geo_a_geom_archer',
 'SELECT id FROM geo_a ORDER BY geom <-> q.geom LIMIT q.k'),
('knn', 'gist_geom', NULL, 'geo_p_geom_gist',
 'SELECT id FROM geo_p ORDER BY geom <-> q.geom LIMIT q.k'),
-- the floor: the cheapest indexed query there is, one btree probe
('uuid', 'btree', NULL, 'geo_a_uid_btree',
 'SELECT id FROM geo_a WHERE uid = q.uid');

-- planar cuts read as geodesics: not the exact country (setup.sql)
UPDATE bench_participant SET exact = false WHERE participant = 'gist_geog_subdivide';

SELECT bench_make_drivers();

-- query centers: real city coordinates (the data is jittered around them)
CREATE TEMP VIEW centers AS
SELECT c.i, ci.name || ' (' || ci.cc || ')' AS label, ci.lng, ci.lat, c.uid,
	   ST_SetSRID(ST_MakePoint(ci.lng, ci.lat), 4326) AS geom
FROM bench_center c JOIN cities ci ON ci.ord = c.city_ord;

INSERT INTO bench_q (qset, i, label, geog, geom, r, env1, env2)
SELECT 'radius_' || km || 'km', c.i, c.label, c.geom::geography, c.geom, km * 1000.0, e.env1, e.env2
FROM centers c, unnest(ARRAY[1, 10, 100]) km, bench_envelopes(c.lng, c.lat, km * 1000.0) e;

INSERT INTO bench_q (qset, i, label, geog, geom, k)
SELECT 'knn_' || k, c.i, c.label, c.geom::geography, c.geom, k
FROM centers c, unnest(ARRAY[1, 10, 100]) k;

INSERT INTO bench_q (qset, i, label, uid)
SELECT 'uuid', c.i, c.label, c.uid FROM centers c;

INSERT INTO bench_q (qset, i, label, region_geog, region_geom)
SELECT 'polygon_' || cls, row_number() OVER (PARTITION BY cls ORDER BY ord), a3, geog, geom
FROM (VALUES ('small', 1, 'LUX'), ('small', 2, 'SGP'),
			 ('medium', 3, 'DEU'), ('medium', 4, 'FRA'),
			 ('large', 5, 'BRA'), ('large', 6, 'USA'), ('large', 7, 'RUS')) v(cls, ord, a3)
JOIN countries USING (a3);

DO $$
BEGIN
	IF (SELECT count(*) FROM bench_q WHERE qset LIKE 'polygon_%') <> 7 THEN
		RAISE EXCEPTION 'a benchmark country is missing from countries.geo.json';
	END IF;
END $$;
ANALYZE bench_q;
