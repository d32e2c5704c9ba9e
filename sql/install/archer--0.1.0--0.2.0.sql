-- archer 0.1.0 -> 0.2.0
\echo Use "ALTER EXTENSION archer UPDATE TO '0.2.0'" to load this file. \quit

-- The index pages did not change (page layout version 3 in both): indexes
-- built by 0.1.0 are read as they are.

-- archer_index_stats(regclass) now raises an error for an index the caller
-- neither owns nor may read as pg_read_all_stats.  The view filters those
-- out first (before the function locks the index), so that every role may
-- read it, as the pg_stat_* views.  Same columns: CREATE OR REPLACE keeps
-- the view's comment and dependent objects.
CREATE OR REPLACE VIEW archer_index_stats AS
SELECT c.oid::regclass AS index, c.relnamespace::regnamespace AS schema,
	i.indrelid::regclass AS "table", s.*
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_am a ON a.oid = c.relam
JOIN pg_catalog.pg_index i ON i.indexrelid = c.oid,
LATERAL @extschema@.archer_index_stats(c.oid) s
WHERE a.amname IN ('archer_geo', 'archer_vector') AND c.relkind = 'i'
	-- other sessions' temporary indexes cannot be read
	AND NOT pg_catalog.pg_is_other_temp_schema(c.relnamespace)
	-- as pg_stat_* views: the owner's indexes, or all for pg_read_all_stats
	-- (filtered before the function locks the index)
	AND (pg_catalog.pg_has_role(c.relowner, 'USAGE')
		OR pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE'));
GRANT SELECT ON archer_index_stats TO PUBLIC;
