-- Index-only scans: every entry holds its exact point, so a query that needs
-- no other column is answered from the index.  What it returns must be the
-- table's values bit for bit, for every kind of column and for the points
-- whose code cannot hold them (read from the heap instead): near the
-- equator and the prime meridian, at the poles, -0, Z and M, another SRID,
-- empty points, NULLs.
SET extra_float_digits = 3;

-- the same values by index-only scan as by sequential scan (q returns one column v)
CREATE FUNCTION ios_vs_seq(q text, OUT n_rows bigint, OUT mismatches bigint,
                           OUT index_only boolean)
LANGUAGE plpgsql AS $$
DECLARE
    answers record;
BEGIN
    answers := answers_by_index_and_seq('SELECT * FROM (' || q || ') q(v)', 'v', NULL);
    index_only := answers.index_plan ~ 'Index Only Scan using';
    n_rows := cardinality(answers.by_seq);
    mismatches := multiset_mismatches(answers.by_index, answers.by_seq);
END $$;

-- points: random ones, and the hard ones for the code
SELECT setseed(0.77);
CREATE TABLE ios_pt (id int, p point);
INSERT INTO ios_pt SELECT i, point(random() * 360 - 180, degrees(asin(random() * 2 - 1)))
FROM generate_series(1, 5000) i;
INSERT INTO ios_pt SELECT 10000 + row_number() OVER (), point(x, y) FROM (VALUES
    (0, 0), ('-0'::float8, '-0'::float8), (0, '-0'::float8), (1e-300, 45), (12, 5e-324),
    (-1e-9, -1e-9), (0.0001, 0.0002), (-0.0003, 1.5), (180, 90), (-180, -90),
    (0, 90), (77.7, -90), (123.456, 89.99999999), (-45.5, -89.9999999999),
    (180, 0), (-180, 0), (179.99999999999997, 1), (2.3522, 48.8566),
    (2.3522, 48.8566), (-73.98, 40.75), (151.2, -33.87)) v(x, y);
INSERT INTO ios_pt VALUES (20001, NULL), (20002, NULL);
CREATE INDEX ios_pt_archer ON ios_pt USING archer_geo (p);
VACUUM (FREEZE, ANALYZE) ios_pt;

SELECT * FROM ios_vs_seq('SELECT p FROM ios_pt');
SELECT * FROM ios_vs_seq($q$SELECT p FROM ios_pt WHERE p <@@ '((-10,-10),(10,-10),(10,10),(-10,10))'::polygon$q$);
SELECT * FROM ios_vs_seq('SELECT p FROM ios_pt WHERE archer_dwithin(p, point(0, 0), 5000)');
SELECT * FROM ios_vs_seq('SELECT p FROM ios_pt WHERE archer_dwithin(p, point(0, 90), 2000000)');
SELECT * FROM ios_vs_seq('SELECT p FROM ios_pt ORDER BY p <-> point(0.00001, 0) LIMIT 30');

SELECT archer_geo_verify('ios_pt_archer') = (SELECT count(*) FROM ios_pt) AS verified;

-- a count needs no column at all: it reads no heap page that is all visible
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM ios_pt WHERE archer_within(p, '((-10,-10),(10,-10),(10,10),(-10,10))'::polygon);
-- rows deleted but not vacuumed: the heap decides what is visible
DELETE FROM ios_pt WHERE id % 3 = 0;
SELECT count(*) FROM ios_pt WHERE archer_within(p, '((-40,-40),(40,-40),(40,40),(-40,40))'::polygon);
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) FROM ios_pt WHERE p <@@ '((-40,-40),(40,-40),(40,40),(-40,40))'::polygon;
SELECT * FROM ios_vs_seq($q$SELECT p FROM ios_pt WHERE p <@@ '((-40,-40),(40,-40),(40,40),(-40,40))'::polygon$q$);

-- PostGIS: a column without type modifier takes Z, M, other SRIDs' points
-- would be refused, so the geography column carries those
CREATE TABLE ios_pg (id int, geom geometry, geog geography);
INSERT INTO ios_pg SELECT i, ST_SetSRID(ST_MakePoint(random() * 360 - 180, random() * 180 - 90), 4326)
FROM generate_series(1, 3000) i;
INSERT INTO ios_pg (id, geom) SELECT 10000 + row_number() OVER (), g::geometry FROM (VALUES
    ('SRID=4326;POINT(0 0)'), ('SRID=4326;POINT(-0 -0)'), ('SRID=4326;POINT(1e-300 45)'),
    ('SRID=4326;POINT(0.0001 -0.0002)'), ('SRID=4326;POINT(180 90)'), ('SRID=4326;POINT(-180 -90)'),
    ('SRID=4326;POINT(33 89.9999999999)'), ('SRID=4326;POINT Z (10 20 30)'),
    ('SRID=4326;POINT M (10 20 5)'), ('SRID=4326;POINT ZM (-10 -20 1 2)'),
    ('SRID=4326;POINT EMPTY'), ('SRID=4326;POINT(2.3522 48.8566)')) v(g);
INSERT INTO ios_pg (id) VALUES (20001);
UPDATE ios_pg SET geog = geom::geography WHERE geom IS NOT NULL AND NOT ST_IsEmpty(geom);
-- a value only the heap holds (a Z coordinate), and an empty one
INSERT INTO ios_pg (id, geog) VALUES (30001, 'SRID=4326;POINT Z(-100 40 7)'), (30002, 'POINT EMPTY'::geography);
CREATE INDEX ios_pg_geom ON ios_pg USING archer_geo (geom);
CREATE INDEX ios_pg_geog ON ios_pg USING archer_geo (geog);
VACUUM (FREEZE, ANALYZE) ios_pg;

SELECT * FROM ios_vs_seq('SELECT geom FROM ios_pg');
SELECT * FROM ios_vs_seq('SELECT geog FROM ios_pg');
-- a deleted row, removed by VACUUM, is not returned
DELETE FROM ios_pg WHERE id = 30001;
VACUUM (FREEZE) ios_pg;
SELECT * FROM ios_vs_seq($q$SELECT geom FROM ios_pg WHERE archer_within(geom, 'SRID=4326;POLYGON((-20 -20, 20 -20, 20 25, -20 25, -20 -20))')$q$);
SELECT * FROM ios_vs_seq($q$SELECT geog FROM ios_pg WHERE archer_within(geog, 'SRID=4326;POLYGON((-20 -20, 20 -20, 20 25, -20 25, -20 -20))')$q$);
SELECT * FROM ios_vs_seq($q$SELECT geog FROM ios_pg WHERE archer_dwithin(geog, 'SRID=4326;POINT(0 0)', 100000)$q$);
SELECT * FROM ios_vs_seq($q$SELECT geom FROM ios_pg WHERE archer_dwithin(geom, 'SRID=4326;POINT(10 20)', 1000)$q$);
SELECT * FROM ios_vs_seq($q$SELECT geom FROM ios_pg ORDER BY geom <-> 'SRID=4326;POINT(10 20)' LIMIT 20$q$);
SELECT * FROM ios_vs_seq($q$SELECT geog FROM ios_pg ORDER BY geog <-> 'SRID=4326;POINT(-100 40)' LIMIT 20$q$);
SELECT * FROM ios_vs_seq($q$SELECT geog FROM ios_pg ORDER BY geog <-> 'SRID=4326;POINT(0.00001 0)'$q$);
SELECT archer_geo_verify('ios_pg_geom') = (SELECT count(*) FROM ios_pg) AS geom_verified,
       archer_geo_verify('ios_pg_geog') = (SELECT count(*) FROM ios_pg) AS geog_verified;

-- the values as a client sees them, through the index
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT ST_AsEWKT(geom) FROM ios_pg WHERE geom <@@ 'SRID=4326;POLYGON((9 19, 11 19, 11 21, 9 21, 9 19))' ORDER BY 1;
SELECT ST_AsEWKT(geog) FROM ios_pg ORDER BY geog <-> 'SRID=4326;POINT(0.0001 -0.0001)'::geography LIMIT 3;
SELECT p FROM ios_pt WHERE p <@@ '((-0.001,-0.001),(0.001,-0.001),(0.001,0.001),(-0.001,0.001))'::polygon ORDER BY p[0], p[1];
RESET enable_seqscan;
RESET enable_bitmapscan;

-- Values of entries in INSIDE cells are decoded only when something reads
-- them (an expanded datum): every way a query reads or keeps one must give
-- the table's value
-- (BIG for planar edges; MID for geodesic ones, as PostGIS 3.3's geography
-- ST_Intersects answers BIG differently on its first call and on the later,
-- cached ones)
CREATE FUNCTION ios_big(q text) RETURNS text LANGUAGE sql AS $$
    SELECT replace(replace(q, 'BIG', '''SRID=4326;POLYGON((-170 -80, 170 -80, 170 80, -170 80, -170 -80))'''),
                   'MID', '''SRID=4326;POLYGON((-60 -50, 60 -50, 60 50, -60 50, -60 -50))''')
$$;
SELECT * FROM ios_vs_seq(ios_big('SELECT ST_AsEWKT(geom) FROM ios_pg WHERE archer_within(geom, BIG)'));
SELECT * FROM ios_vs_seq(ios_big('SELECT ST_X(geom) * 1000 + ST_Y(geom) FROM ios_pg WHERE archer_within(geom, BIG)'));
SELECT * FROM ios_vs_seq(ios_big('SELECT geom::geography FROM ios_pg WHERE archer_within(geom, BIG)'));
SELECT * FROM ios_vs_seq(ios_big('SELECT ST_AsText(geog) FROM ios_pg WHERE archer_within(geog, MID)'));
SELECT * FROM ios_vs_seq(ios_big('SELECT geog FROM ios_pg WHERE archer_dwithin(geog, ''SRID=4326;POINT(0 0)'', 5000000)'));
SELECT * FROM ios_vs_seq(ios_big('SELECT DISTINCT geom FROM ios_pg WHERE archer_within(geom, BIG)'));
SELECT * FROM ios_vs_seq(ios_big('SELECT ROW(geom, geom)::text FROM ios_pg WHERE archer_within(geom, BIG)'));
SELECT * FROM ios_vs_seq(ios_big('SELECT unnest(array_agg(geom)) FROM ios_pg WHERE archer_within(geom, BIG)'));
SELECT * FROM ios_vs_seq(ios_big('WITH m AS MATERIALIZED (SELECT geom FROM ios_pg WHERE archer_within(geom, BIG)) SELECT geom FROM m'));
SELECT * FROM ios_vs_seq(ios_big('SELECT ST_AsText(lag(geom) OVER (ORDER BY ST_X(geom), ST_Y(geom))) FROM ios_pg WHERE archer_within(geom, BIG)'));
-- kept in PL/pgSQL variables and arrays while later rows come
CREATE FUNCTION ios_collect(region geometry, OUT n bigint, OUT index_only boolean,
                            OUT first_kept boolean, OUT all_kept boolean)
LANGUAGE plpgsql AS $$
DECLARE
    g geometry;
    first geometry;
    kept geometry[] := '{}';
    texts text[] := '{}';
BEGIN
    SET LOCAL enable_seqscan = off;
    SET LOCAL enable_bitmapscan = off;
    index_only := plan_matches(format('SELECT geom FROM ios_pg WHERE archer_within(geom, %L::geometry)', region),
                               'Index Only Scan using ios_pg_geom');
    FOR g IN SELECT geom FROM ios_pg WHERE archer_within(geom, region) LOOP
        first := coalesce(first, g);
        kept := kept || g;
        texts := texts || ST_AsEWKT(g);
    END LOOP;
    n := cardinality(kept);
    first_kept := ST_AsEWKT(first) = texts[1];
    all_kept := (SELECT array_agg(ST_AsEWKT(k)) FROM unnest(kept) k) = texts;
END $$;
SELECT * FROM ios_collect('SRID=4326;POLYGON((-170 -80, 170 -80, 170 80, -170 80, -170 -80))');
SELECT n = (SELECT count(*) FROM ios_pg WHERE ST_Intersects(geom, 'SRID=4326;POLYGON((-170 -80, 170 -80, 170 80, -170 80, -170 -80))'))
    AS all_rows
FROM ios_collect('SRID=4326;POLYGON((-170 -80, 170 -80, 170 80, -170 80, -170 -80))');
DROP FUNCTION ios_big, ios_collect;

-- an expression index cannot return the column
CREATE INDEX ios_pg_expr ON ios_pg USING archer_geo ((geom::geography));
SELECT pg_index_column_has_property('ios_pg_expr'::regclass, 1, 'returnable') AS expr_returnable,
       pg_index_column_has_property('ios_pg_geom'::regclass, 1, 'returnable') AS column_returnable;
DROP TABLE ios_pt, ios_pg;
DROP FUNCTION ios_vs_seq;
RESET extra_float_digits;
