-- Seeded randomized comparison of index and exact predicate: random caps
-- and random star-shaped polygons anywhere on the globe (poles and the
-- antimeridian included), on point, geography and geometry columns.
SELECT setseed(0.1234);

-- the point column's index (geo_point.sql builds it too, when run first)
SET client_min_messages = warning;
CREATE INDEX IF NOT EXISTS geo_points_archer ON geo_points USING archer_geo (p);
RESET client_min_messages;

-- a smaller PostGIS table keeps the exact spheroid seq scans quick
CREATE TABLE geo_rand_postgis AS
    SELECT id, geog, geom FROM geo_postgis WHERE id % 5 = 0 OR id > 20000;
CREATE INDEX ON geo_rand_postgis USING archer_geo (geog);
CREATE INDEX ON geo_rand_postgis USING archer_geo (geom);
ANALYZE geo_rand_postgis;

-- random centers: uniform on the sphere, or near a pole or the antimeridian
CREATE FUNCTION rand_center(OUT lng float8, OUT lat float8) LANGUAGE plpgsql AS $$
DECLARE
    kind float8 := random();
BEGIN
    lng := random() * 360 - 180;
    lat := degrees(asin(random() * 2 - 1));
    IF kind < 0.15 THEN
        lat := (CASE WHEN random() < 0.5 THEN 1 ELSE -1 END) * (90 - random() * 2);
    ELSIF kind < 0.3 THEN
        lng := (CASE WHEN random() < 0.5 THEN 180 ELSE -180 END) - sign(random() - 0.5) * random();
        lng := greatest(-180, least(180, lng));
    END IF;
END $$;

-- a star-shaped ring around a center: nvert vertices at random radii
CREATE FUNCTION rand_ring(clng float8, clat float8, maxdeg float8, nvert int)
RETURNS float8[] LANGUAGE plpgsql AS $$
DECLARE
    ring float8[] := '{}';
    angle float8;
    r float8;
BEGIN
    FOR i IN 0 .. nvert - 1 LOOP
        angle := 2 * pi() * i / nvert;
        r := maxdeg * (0.3 + 0.7 * random());
        ring := ring || ARRAY[greatest(-180, least(180, clng + r * cos(angle))),
                              greatest(-89.9, least(89.9, clat + r * sin(angle)))];
    END LOOP;
    RETURN ring;
END $$;

CREATE FUNCTION ring_wkt(ring float8[]) RETURNS text LANGUAGE sql AS $$
    SELECT 'SRID=4326;POLYGON((' ||
           string_agg(ring[2 * i + 1] || ' ' || ring[2 * i + 2], ',' ORDER BY i) ||
           ',' || ring[1] || ' ' || ring[2] || '))'
    FROM generate_series(0, cardinality(ring) / 2 - 1) i
$$;

CREATE FUNCTION ring_polygon(ring float8[]) RETURNS text LANGUAGE sql AS $$
    SELECT '(' || string_agg('(' || ring[2 * i + 1] || ',' || ring[2 * i + 2] || ')', ',' ORDER BY i) || ')'
    FROM generate_series(0, cardinality(ring) / 2 - 1) i
$$;

CREATE TABLE geo_rand_failures (what text, query text, n_rows bigint, mismatches bigint, used_index boolean);

DO $$
DECLARE
    c record;
    meters float8;
    q text;
    r record;
    ring float8[];
BEGIN
    FOR i IN 1 .. 150 LOOP
        SELECT * INTO c FROM rand_center();
        meters := exp(random() * ln(2.01e7));
        q := format('SELECT id FROM geo_points WHERE archer_dwithin(p, point(%s, %s), %s)', c.lng, c.lat, meters);
        SELECT * INTO r FROM index_vs_seq(q);
        IF r.mismatches <> 0 OR NOT r.used_index THEN
            INSERT INTO geo_rand_failures VALUES ('point cap', q, r.n_rows, r.mismatches, r.used_index);
        END IF;
        q := format('SELECT p <-> point(%s, %s) AS dist FROM geo_points ORDER BY p <-> point(%s, %s) LIMIT %s',
                    c.lng, c.lat, c.lng, c.lat, 1 + (random() * 200)::int);
        SELECT * INTO r FROM knn_vs_seq(q);
        IF NOT r.same_order OR NOT r.used_index THEN
            INSERT INTO geo_rand_failures VALUES ('point knn', q, r.n_rows, NULL, r.used_index);
        END IF;
    END LOOP;

    FOR i IN 1 .. 40 LOOP
        SELECT * INTO c FROM rand_center();
        meters := exp(random() * ln(2.01e7));
        q := format('SELECT id FROM geo_rand_postgis WHERE archer_dwithin(geog, ''SRID=4326;POINT(%s %s)''::geography, %s, %L)',
                    c.lng, c.lat, meters, random() < 0.7);
        SELECT * INTO r FROM index_vs_seq(q);
        IF r.mismatches <> 0 OR NOT r.used_index THEN
            INSERT INTO geo_rand_failures VALUES ('geography cap', q, r.n_rows, r.mismatches, r.used_index);
        END IF;
        q := format('SELECT geog <-> ''SRID=4326;POINT(%s %s)''::geography AS dist FROM geo_rand_postgis ORDER BY geog <-> ''SRID=4326;POINT(%s %s)''::geography LIMIT %s',
                    c.lng, c.lat, c.lng, c.lat, 1 + (random() * 100)::int);
        SELECT * INTO r FROM knn_vs_seq(q);
        IF NOT r.same_order OR NOT r.used_index THEN
            INSERT INTO geo_rand_failures VALUES ('geography knn', q, r.n_rows, NULL, r.used_index);
        END IF;
        q := format('SELECT geom <-> ''SRID=4326;POINT(%s %s)''::geometry AS dist FROM geo_rand_postgis ORDER BY geom <-> ''SRID=4326;POINT(%s %s)''::geometry LIMIT %s',
                    c.lng, c.lat, c.lng, c.lat, 1 + (random() * 100)::int);
        SELECT * INTO r FROM knn_vs_seq(q);
        IF NOT r.same_order OR NOT r.used_index THEN
            INSERT INTO geo_rand_failures VALUES ('geometry knn', q, r.n_rows, NULL, r.used_index);
        END IF;
    END LOOP;

    FOR i IN 1 .. 40 LOOP
        SELECT * INTO c FROM rand_center();
        ring := rand_ring(c.lng, c.lat, exp(random() * ln(40.0)) * 0.5, 5 + (random() * 20)::int);
        q := format('SELECT id FROM geo_points WHERE archer_within(p, %L::polygon)', ring_polygon(ring));
        SELECT * INTO r FROM index_vs_seq(q);
        IF r.mismatches <> 0 OR NOT r.used_index THEN
            INSERT INTO geo_rand_failures VALUES ('point polygon', q, r.n_rows, r.mismatches, r.used_index);
        END IF;
        -- (ST_IsValidDetail: no NOTICE naming where GEOS found a
        -- self-intersection, a point that differs between GEOS versions)
        CONTINUE WHEN NOT (ST_IsValidDetail(ring_wkt(ring)::geometry)).valid;
        q := format('SELECT id FROM geo_rand_postgis WHERE archer_within(geom, %L::geometry)', ring_wkt(ring));
        SELECT * INTO r FROM index_vs_seq(q);
        IF r.mismatches <> 0 OR NOT r.used_index THEN
            INSERT INTO geo_rand_failures VALUES ('geometry polygon', q, r.n_rows, r.mismatches, r.used_index);
        END IF;
        q := format('SELECT id FROM geo_rand_postgis WHERE archer_within(geog, %L::geography)', ring_wkt(ring));
        SELECT * INTO r FROM index_vs_seq(q);
        IF r.mismatches <> 0 OR NOT r.used_index THEN
            INSERT INTO geo_rand_failures VALUES ('geography polygon', q, r.n_rows, r.mismatches, r.used_index);
        END IF;
    END LOOP;
END $$;

-- Small caps where the points are: clusters of points from a millimetre to a
-- few kilometres apart around random seeds and around the corners and edges
-- of the S2 cube faces and the poles (where a cap's covering cannot start
-- from the cells of one face), caps from a centimetre to 20 km centered
-- near a cluster point.
CREATE TABLE geo_rand_cluster (id int, p point, geog geography(Point, 4326));
DO $$
DECLARE
    seeds float8[] := ARRAY[[45, 35.26438968], [135, -35.26438968], [-45, 0], [0, 45],
                            [-135, 0.0001], [10, 90], [-170, -89.9999], [180, 10]];
    c record;
    d float8;
    theta float8;
    lng float8;
    lat float8;
BEGIN
    FOR s IN 1 .. 24 LOOP
        IF s <= 8 THEN
            c := ROW(seeds[s][1], seeds[s][2]);
            lng := seeds[s][1];
            lat := seeds[s][2];
        ELSE
            SELECT * INTO c FROM rand_center();
            lng := c.lng;
            lat := c.lat;
        END IF;
        FOR k IN 1 .. 150 LOOP
            d := exp(ln(0.001) + random() * (ln(3000) - ln(0.001))) / 111195.0;
            theta := random() * 2 * pi();
            INSERT INTO geo_rand_cluster VALUES (s * 1000 + k,
                point(greatest(-180, least(180, lng + d * sin(theta) / greatest(cos(radians(lat)), 0.01))),
                      greatest(-90, least(90, lat + d * cos(theta)))));
        END LOOP;
    END LOOP;
END $$;
UPDATE geo_rand_cluster SET geog = ST_SetSRID(ST_MakePoint(p[0], p[1]), 4326)::geography;
CREATE INDEX ON geo_rand_cluster USING archer_geo (p);
CREATE INDEX ON geo_rand_cluster USING archer_geo (geog);
ANALYZE geo_rand_cluster;
CREATE TABLE geo_small_cap_rows (n bigint);

-- a cap of meters around c on the point column p and on geog (spheroid
-- or sphere at random), index against seq scan; failures are recorded as
-- 'point <what>' / 'geography <what>'; returns the point query's rows
CREATE FUNCTION check_cap(tbl text, what text, c point, meters float8) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    q text;
    r record;
    n bigint;
BEGIN
    q := format('SELECT id FROM %I WHERE archer_dwithin(p, point(%s, %s), %s)', tbl, c[0], c[1], meters);
    SELECT * INTO r FROM index_vs_seq(q);
    n := r.n_rows;
    IF r.mismatches <> 0 OR NOT r.used_index THEN
        INSERT INTO geo_rand_failures VALUES ('point ' || what, q, r.n_rows, r.mismatches, r.used_index);
    END IF;
    q := format('SELECT id FROM %I WHERE archer_dwithin(geog, ''SRID=4326;POINT(%s %s)''::geography, %s, %L)',
                tbl, c[0], c[1], meters, random() < 0.7);
    SELECT * INTO r FROM index_vs_seq(q);
    IF r.mismatches <> 0 OR NOT r.used_index THEN
        INSERT INTO geo_rand_failures VALUES ('geography ' || what, q, r.n_rows, r.mismatches, r.used_index);
    END IF;
    RETURN n;
END $$;

DO $$
DECLARE
    c point;
    meters float8;
BEGIN
    FOR i IN 1 .. 150 LOOP
        SELECT p INTO c FROM geo_rand_cluster ORDER BY random() LIMIT 1;
        meters := exp(ln(0.01) + random() * (ln(20000) - ln(0.01)));
        c := point(greatest(-180, least(180, c[0] + (random() - 0.5) * meters / 111195.0)),
                   greatest(-90, least(90, c[1] + (random() - 0.5) * meters / 111195.0)));
        INSERT INTO geo_small_cap_rows VALUES (check_cap('geo_rand_cluster', 'small cap', c, meters));
    END LOOP;
END $$;
-- most of these caps hold rows: the comparison is not between empty sets
SELECT count(*) FILTER (WHERE n > 1) > 50 AS caps_with_rows FROM geo_small_cap_rows;

-- dense fields (at the antimeridian, around the north pole, at 0/0) cut by
-- caps of 10 to 60 km: hundreds to thousands of rows per query, so the
-- scan returns whole leaf pages of candidates and prefetches heap rows
-- ahead of the executor
CREATE TABLE geo_rand_dense (id int, p point, geog geography);
INSERT INTO geo_rand_dense (id, p)
SELECT i, CASE i % 3
    WHEN 0 THEN point(((180.0 + (random() - 0.5)) + 180.0)::numeric % 360 - 180, (random() - 0.5))
    WHEN 1 THEN point(random() * 360 - 180, 90 - random() * 0.5)
    ELSE point(random() - 0.5, random() - 0.5) END
FROM generate_series(1, 30000) i;
UPDATE geo_rand_dense SET geog = ST_SetSRID(ST_MakePoint(p[0], p[1]), 4326)::geography;
CREATE INDEX ON geo_rand_dense USING archer_geo (p);
CREATE INDEX ON geo_rand_dense USING archer_geo (geog);
ANALYZE geo_rand_dense;
CREATE TABLE geo_dense_cap_rows (n bigint);

DO $$
DECLARE
    c point;
    meters float8;
BEGIN
    FOR i IN 1 .. 30 LOOP
        c := CASE i % 3
            WHEN 0 THEN point(CASE WHEN random() < 0.5 THEN 180 ELSE -180 END - sign(random() - 0.5) * random() * 0.2,
                              (random() - 0.5) * 0.4)
            WHEN 1 THEN point(random() * 360 - 180, 90 - random() * 0.2)
            ELSE point((random() - 0.5) * 0.4, (random() - 0.5) * 0.4) END;
        c := point(greatest(-180, least(180, c[0])), c[1]);
        meters := exp(ln(10000) + random() * (ln(60000) - ln(10000)));
        INSERT INTO geo_dense_cap_rows VALUES (check_cap('geo_rand_dense', 'dense cap', c, meters));
    END LOOP;
END $$;
-- the caps hold hundreds of rows and leave out many more
SELECT min(n) > 100 AS dense_caps_hold_rows, max(n) < 20000 AS dense_caps_leave_rows FROM geo_dense_cap_rows;

SELECT what, count(*) AS failures FROM geo_rand_failures GROUP BY what ORDER BY what;
SELECT * FROM geo_rand_failures LIMIT 5;
DROP TABLE geo_rand_postgis, geo_rand_failures, geo_rand_cluster, geo_small_cap_rows, geo_rand_dense, geo_dense_cap_rows;
DROP FUNCTION check_cap(text, text, point, float8);
