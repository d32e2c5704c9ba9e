-- ORDER BY order of archer_vector scans (archer.vector_order).
--
-- A scan that widens its search finds some nodes late, with a bound below
-- a row it already returned.  By default (strict) such a node is skipped,
-- so the rows always come back in non-decreasing exact distance; relaxed
-- returns them at the end, out of order, so that every matching row comes
-- back.  A narrow search (ef_search 1, m 4) with a filter the index cannot
-- apply and no LIMIT makes many rounds and the sweep of unreached nodes:
-- the case where late nodes appear.
SET statement_timeout = '60s';
SELECT setseed(0.25);
CREATE TABLE vord(id int, e real[]);
INSERT INTO vord SELECT g, ARRAY[random(), random(), random(), random(),
                                 random(), random(), random(), random()]::real[]
FROM generate_series(1, 5000) g;
CREATE INDEX ON vord USING archer_vector (e) WITH (m = 4, ef_construction = 8);

-- rows the index scan returns for query q, rows with id % modulus = 0,
-- and how many of them come after a row farther from q
CREATE FUNCTION vord_order(q real[], modulus int, lim int)
RETURNS TABLE(nrows bigint, out_of_order bigint) LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    WITH r AS MATERIALIZED (
        SELECT e <-> q AS d FROM vord WHERE id % modulus = 0
        ORDER BY e <-> q LIMIT lim),
    n AS (SELECT d, row_number() OVER () AS rn FROM r)
    SELECT count(*), count(*) FILTER (WHERE d < prev)
    FROM (SELECT d, lag(d) OVER (ORDER BY rn) AS prev FROM n) s;
END $$;

SET enable_seqscan = off;
SET archer.ef_search = 1;
SHOW archer.vector_order;
SELECT plan_matches('SELECT id FROM vord WHERE id % 7 = 0 ORDER BY e <-> ''{.5,.5,.5,.5,.5,.5,.5,.5}''',
                    'Index Scan using vord_e_idx');

-- strict (the default): never a row after a farther one, whatever the
-- filter, LIMIT or query; nearly every matching row still comes back
SELECT sum(out_of_order) AS out_of_order,
       bool_and(nrows <= least(lim, 5000 / modulus)) AS no_extra_rows,
       bool_and(nrows >= 0.9 * least(lim, 5000 / modulus)) AS most_rows
FROM generate_series(1, 9) modulus, unnest('{10,100,1000,100000}'::int[]) lim,
     LATERAL vord_order(ARRAY[.1 * modulus, .5, .9, .5, .2, .5, .5, .5]::real[],
                        modulus, lim);

-- with a wider search too
SET archer.ef_search = 40;
SELECT sum(out_of_order) AS out_of_order
FROM generate_series(1, 9) modulus,
     LATERAL vord_order(ARRAY[.5, .1 * modulus, .5, .9, .5, .2, .5, .5]::real[],
                        modulus, 100000);
SET archer.ef_search = 1;

-- relaxed: every matching row comes back (the late ones last)
SET archer.vector_order = relaxed;
SELECT modulus, nrows = 5000 / modulus AS all_rows
FROM generate_series(1, 9, 4) modulus,
     LATERAL vord_order(ARRAY[.1 * modulus, .5, .9, .5, .2, .5, .5, .5]::real[],
                        modulus, 100000);
RESET archer.vector_order;

-- the setting is checked
SET archer.vector_order = sloppy;

RESET archer.ef_search;
RESET enable_seqscan;
DROP FUNCTION vord_order(real[], int, int);
DROP TABLE vord;
