-- Nearest-neighbour scans where their distance bounds are hardest: points
-- crowded within a fraction of a degree of the poles, of the antimeridian
-- (on both sides) and of (0, 0), and spread at high latitudes across the
-- antimeridian; centres there, and out of range for the planar types.  A
-- ring bounds each entry's distance from chords (sphere) or from the
-- differences of z and of the longitude's direction (plane, which does not
-- wrap at the antimeridian): a bound above the true distance makes the
-- executor raise "index returned tuples in wrong order" or changes the
-- order, one far below it only costs heap fetches.  Every query: the same
-- distances in the same order as a sequential scan, by an index-only and
-- a plain index scan.
SELECT setseed(0.2718);
CREATE TABLE geo_knn_seams (id int, p point, geom geometry(Point, 4326),
                            geog geography(Point, 4326));
INSERT INTO geo_knn_seams
SELECT i, pt, ST_SetSRID(ST_MakePoint(pt[0], pt[1]), 4326),
       ST_SetSRID(ST_MakePoint(pt[0], pt[1]), 4326)::geography
FROM (SELECT i, CASE i % 6
        WHEN 0 THEN point(random() * 360 - 180, degrees(asin(random() * 2 - 1)))
        WHEN 1 THEN point(random() * 360 - 180, 90 - random() * 0.5)
        WHEN 2 THEN point(random() * 360 - 180, -90 + random() * 0.01)
        WHEN 3 THEN point(greatest(-180, least(180, (CASE WHEN random() < 0.5 THEN 180 ELSE -180 END)
                                                    - sign(random() - 0.5) * random() * 0.3)),
                          (random() - 0.5) * 0.5)
        WHEN 4 THEN point((random() - 0.5) * 0.3, (random() - 0.5) * 0.3)
        ELSE point(greatest(-180, least(180, (CASE WHEN random() < 0.5 THEN 180 ELSE -180 END)
                                             - sign(random() - 0.5) * random() * 2)),
                   60 + random() * 29) END AS pt
      FROM generate_series(1, 30000) i) s;
CREATE INDEX geo_knn_seams_p ON geo_knn_seams USING archer_geo (p);
CREATE INDEX geo_knn_seams_geom ON geo_knn_seams USING archer_geo (geom);
CREATE INDEX geo_knn_seams_geog ON geo_knn_seams USING archer_geo (geog);
VACUUM (FREEZE, ANALYZE) geo_knn_seams;

CREATE TABLE geo_knn_seam_failures (col text, query text);
DO $$
DECLARE
    kind float8;
    lng float8;
    lat float8;
    k int;
    col text;
    q text;
    r record;
BEGIN
    FOR i IN 1 .. 200 LOOP
        kind := random();
        lng := random() * 360 - 180;
        lat := degrees(asin(random() * 2 - 1));
        IF kind < 0.25 THEN
            lat := (CASE WHEN random() < 0.5 THEN 1 ELSE -1 END) * (90 - random());
        ELSIF kind < 0.5 THEN
            lng := greatest(-180, least(180, (CASE WHEN random() < 0.5 THEN 180 ELSE -180 END)
                                             - sign(random() - 0.5) * random() * 0.5));
            lat := random() - 0.5;
        ELSIF kind < 0.65 THEN
            lng := greatest(-180, least(180, (CASE WHEN random() < 0.5 THEN 180 ELSE -180 END)
                                             - sign(random() - 0.5) * random() * 3));
            lat := 60 + random() * 30;
        ELSIF kind < 0.75 THEN
            lng := (random() - 0.5) * 0.5;
            lat := (random() - 0.5) * 0.5;
        ELSIF kind < 0.85 THEN
            -- out of range: planar types only
            lng := lng * 1.5;
            lat := lat * 1.5;
        END IF;
        k := (ARRAY[1, 7, 40, 300, 2000])[1 + floor(random() * 5)::int];
        FOREACH col IN ARRAY ARRAY['p', 'geom', 'geog'] LOOP
            CONTINUE WHEN col = 'geog' AND (abs(lat) > 90 OR abs(lng) > 180);
            q := CASE col
                WHEN 'p' THEN format('point(%s, %s)', lng, lat)
                ELSE format('''SRID=4326;POINT(%s %s)''::%s', lng, lat,
                            CASE col WHEN 'geom' THEN 'geometry' ELSE 'geography' END) END;
            q := format('SELECT %1$s <-> %2$s AS dist FROM geo_knn_seams ORDER BY %1$s <-> %2$s LIMIT %3$s',
                        col, q, k);
            SELECT * INTO r FROM knn_vs_seq(q);
            IF NOT r.same_order OR NOT r.used_index OR r.n_rows <> k THEN
                INSERT INTO geo_knn_seam_failures VALUES (col, q);
            END IF;
        END LOOP;
    END LOOP;
END $$;
-- at work_mem = 64kB a scan keeps 2,048 candidates at most: past that it
-- drops the farthest and reads the area again (rings at most twice as
-- wide as their predecessor, whose coverings need not hold the earlier
-- ones'); every row once, in order
SET work_mem = '64kB';
DO $$
DECLARE
    centres float8[] := ARRAY[[0, 90], [45, 89.5], [-179.9, 0.1], [179.95, 70], [0.05, 0], [200, 50], [10, -89.99], [-100, 20]];
    col text;
    q text;
    r record;
BEGIN
    FOR i IN 1 .. array_length(centres, 1) LOOP
        FOREACH col IN ARRAY ARRAY['p', 'geom', 'geog'] LOOP
            CONTINUE WHEN col = 'geog' AND abs(centres[i][1]) > 180;
            q := CASE col
                WHEN 'p' THEN format('point(%s, %s)', centres[i][1], centres[i][2])
                ELSE format('''SRID=4326;POINT(%s %s)''::%s', centres[i][1], centres[i][2],
                            CASE col WHEN 'geom' THEN 'geometry' ELSE 'geography' END) END;
            q := format('SELECT %1$s <-> %2$s AS dist FROM geo_knn_seams ORDER BY %1$s <-> %2$s LIMIT 12000',
                        col, q);
            SELECT * INTO r FROM knn_vs_seq(q);
            IF NOT r.same_order OR NOT r.used_index OR r.n_rows <> 12000 THEN
                INSERT INTO geo_knn_seam_failures VALUES (col || ' at work_mem 64kB', q);
            END IF;
        END LOOP;
    END LOOP;
END $$;
RESET work_mem;
SELECT col, count(*) AS failures FROM geo_knn_seam_failures GROUP BY col ORDER BY col;
SELECT * FROM geo_knn_seam_failures LIMIT 5;
DROP TABLE geo_knn_seams, geo_knn_seam_failures;
