-- What the planner is told about archer indexes.
--
-- archer_geo: a covering cell costs one descent of the tree, as many pages
-- as the tree is high, read from the meta page (PostgreSQL 18 asks through
-- amgettreeheight; earlier versions leave it to the cost estimate).  The
-- cost of one more cell, compared between trees of 1, 2 and 3 levels (a
-- leaf fillfactor of 10 makes the third one from 20,000 rows), grows as
-- their heights do.
CREATE TABLE pc_geo1 (id int, p point);
CREATE TABLE pc_geo2 (id int, p point);
CREATE TABLE pc_geo3 (id int, p point);
INSERT INTO pc_geo1 SELECT i, point((i * 7919) % 360 - 180, (i * 104729) % 170 - 85) FROM generate_series(1, 100) i;
INSERT INTO pc_geo2 SELECT i, point((i * 7919) % 360 - 180, (i * 104729) % 170 - 85) FROM generate_series(1, 2000) i;
INSERT INTO pc_geo3 SELECT i, point((i * 7919) % 360 - 180, (i * 104729) % 170 - 85) FROM generate_series(1, 20000) i;
CREATE INDEX pc_geo1_p ON pc_geo1 USING archer_geo (p);
CREATE INDEX pc_geo2_p ON pc_geo2 USING archer_geo (p);
CREATE INDEX pc_geo3_p ON pc_geo3 USING archer_geo (p) WITH (fillfactor = 10);
ANALYZE pc_geo1, pc_geo2, pc_geo3;

-- the startup cost of the index scan with 104 covering cells less that
-- with 4: 100 descents
CREATE FUNCTION pc_descents_cost(tbl text) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
    q text := format('SELECT id FROM %I WHERE archer_dwithin(p, point(2.35, 48.85), 1000)', tbl);
    plan json;
    cost float8[];
    cells int;
BEGIN
    PERFORM set_config('enable_seqscan', 'off', true);
    FOREACH cells IN ARRAY ARRAY[4, 104] LOOP
        PERFORM set_config('archer.geo_max_cells', cells::text, true);
        EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO plan;
        IF plan -> 0 -> 'Plan' ->> 'Index Name' IS DISTINCT FROM tbl || '_p' THEN
            RAISE EXCEPTION 'no scan of %: %', tbl || '_p', plan;
        END IF;
        cost := cost || (plan -> 0 -> 'Plan' ->> 'Startup Cost')::float8;
    END LOOP;
    RETURN cost[2] - cost[1];
END $$;

SELECT s.index, s.tree_height,
       round((pc_descents_cost(s."table"::text) / pc_descents_cost('pc_geo1'))::numeric, 3) AS descent_cost_vs_one_level
FROM archer_index_stats s
WHERE s.index::text IN ('pc_geo1_p', 'pc_geo2_p', 'pc_geo3_p')
ORDER BY s.tree_height;

-- archer_vector: without ORDER BY a scan walks every node, which its cost
-- says; on PostgreSQL 18, which compares the count of plan nodes that
-- enable_* settings disabled before any cost, the path must count as
-- disabled too, or enable_seqscan = off would make the walk win
CREATE TABLE pc_vec (id int, label int, v avector(4));
INSERT INTO pc_vec SELECT i, i % 10, ARRAY[i % 7, i % 5, i % 3, 1]::avector FROM generate_series(1, 500) i;
CREATE INDEX pc_vec_v ON pc_vec USING archer_vector (v, label);
ANALYZE pc_vec;
SET enable_seqscan = off;
SELECT plan_matches('SELECT id FROM pc_vec WHERE label = 3', 'pc_vec_v') AS walk_without_order_by,
       plan_matches('SELECT id FROM pc_vec WHERE label = 3 ORDER BY v <-> ''[1,1,1,1]'' LIMIT 3', 'pc_vec_v')
         AS scan_with_order_by;
SELECT count(*) FROM pc_vec WHERE label = 3;
RESET enable_seqscan;

-- an ordered scan reads about ef_search * 2m nodes before its first row:
-- the startup cost follows the index's own m, not the default's (12 times
-- the nodes, each somewhat larger)
CREATE TABLE pc_vec_m4 (id int, v avector(4));
CREATE TABLE pc_vec_m48 (id int, v avector(4));
INSERT INTO pc_vec_m4 SELECT i, ARRAY[i % 7, i % 5, i % 3, 1]::avector FROM generate_series(1, 20000) i;
INSERT INTO pc_vec_m48 SELECT * FROM pc_vec_m4;
CREATE INDEX pc_vec_m4_v ON pc_vec_m4 USING archer_vector (v) WITH (m = 4);
CREATE INDEX pc_vec_m48_v ON pc_vec_m48 USING archer_vector (v) WITH (m = 48);
ANALYZE pc_vec_m4, pc_vec_m48;
CREATE FUNCTION pc_vec_startup(tbl text) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
    plan json;
BEGIN
    PERFORM set_config('enable_seqscan', 'off', true);
    EXECUTE format('EXPLAIN (FORMAT JSON) SELECT id FROM %I ORDER BY v <-> ''[1,1,1,1]'' LIMIT 3', tbl) INTO plan;
    RETURN (plan -> 0 -> 'Plan' -> 'Plans' -> 0 ->> 'Startup Cost')::float8;
END $$;
SELECT pc_vec_startup('pc_vec_m48') / pc_vec_startup('pc_vec_m4') BETWEEN 12 AND 20 AS startup_follows_m;
-- the m the graph was built with (its meta page), not the option: ALTER
-- INDEX SET (m) changes the graph only at the next REINDEX
CREATE TABLE pc_vec_startups AS SELECT pc_vec_startup('pc_vec_m4') AS built;
ALTER INDEX pc_vec_m4_v SET (m = 48);
SELECT pc_vec_startup('pc_vec_m4') = built AS startup_follows_built_m FROM pc_vec_startups;
REINDEX INDEX pc_vec_m4_v;
SELECT pc_vec_startup('pc_vec_m4') / built BETWEEN 12 AND 20 AS startup_follows_reindexed_m
FROM pc_vec_startups;
DROP TABLE pc_vec_startups;
DROP FUNCTION pc_vec_startup(text);
DROP TABLE pc_vec_m4, pc_vec_m48;

DROP TABLE pc_geo1, pc_geo2, pc_geo3, pc_vec;
DROP FUNCTION pc_descents_cost(text);
