/*-------------------------------------------------------------------------
 *
 * archer_stats.c
 *	  archer_index_stats(index): the figures of one archer index, read from
 *	  its meta page (under a share lock, like any scan), for the view of
 *	  the same name: insert buffer entries and pages, merges, and the
 *	  structure's own figures.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "geo.h"
#include "vec.h"

PG_FUNCTION_INFO_V1(archer_index_stats);

enum
{
	STAT_ACCESS_METHOD,
	STAT_BUFFER_ENTRIES,
	STAT_BUFFER_PAGES,
	STAT_MERGES,
	STAT_MERGED_ENTRIES,
	STAT_LAST_MERGE,
	STAT_LAST_MERGE_MS,
	STAT_TREE_HEIGHT,
	STAT_GRAPH_NODES,
	STAT_DELETED_NODES,
	STAT_INDEX_PAGES,
	NSTATS
};

Datum
archer_index_stats(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	TupleDesc	tupdesc;
	Datum		values[NSTATS];
	bool		nulls[NSTATS];
	Relation	index;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "archer_index_stats: return type must be a row type");
	archer_check_is_index(indexoid);
	memset(nulls, true, sizeof(nulls));
	index = index_open(indexoid, AccessShareLock);
	if (index->rd_rel->relam != get_index_am_oid("archer_vector", false) &&
		index->rd_rel->relam != get_index_am_oid("archer_geo", false))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an archer index", RelationGetRelationName(index))));
	values[STAT_INDEX_PAGES] = Int64GetDatum(RelationGetNumberOfBlocks(index));
	nulls[STAT_INDEX_PAGES] = false;
	if (RelationGetNumberOfBlocks(index) == 0)
		;						/* being built (CREATE INDEX CONCURRENTLY): no meta page yet */
	else if (index->rd_rel->relam == get_index_am_oid("archer_vector", false))
	{
		VecMetaPageData meta;

		vec_read_meta(index, &meta);
		values[STAT_ACCESS_METHOD] = CStringGetTextDatum("archer_vector");
		values[STAT_BUFFER_ENTRIES] = Int64GetDatum(meta.buffer_entries);
		values[STAT_BUFFER_PAGES] = Int64GetDatum(meta.buffer_pages);
		values[STAT_MERGES] = Int64GetDatum(meta.merges);
		values[STAT_MERGED_ENTRIES] = Int64GetDatum(meta.merged_entries);
		values[STAT_GRAPH_NODES] = Int64GetDatum(meta.nnodes - meta.ndeleted);
		values[STAT_DELETED_NODES] = Int64GetDatum(meta.ndeleted);
		for (int i = STAT_ACCESS_METHOD; i <= STAT_MERGED_ENTRIES; i++)
			nulls[i] = false;
		nulls[STAT_GRAPH_NODES] = nulls[STAT_DELETED_NODES] = false;
		if (meta.merges > 0)
		{
			values[STAT_LAST_MERGE] = TimestampTzGetDatum(meta.last_merge_end);
			values[STAT_LAST_MERGE_MS] = Float8GetDatum(meta.last_merge_us / 1000.0);
			nulls[STAT_LAST_MERGE] = nulls[STAT_LAST_MERGE_MS] = false;
		}
	}
	else						/* archer_geo */
	{
		BlockNumber root;
		uint16		root_level;

		geo_read_meta(index, &root, &root_level);
		values[STAT_ACCESS_METHOD] = CStringGetTextDatum("archer_geo");
		values[STAT_TREE_HEIGHT] = Int32GetDatum(BlockNumberIsValid(root) ? root_level + 1 : 0);
		/* no insert buffer yet: inserts go to the tree */
		values[STAT_BUFFER_ENTRIES] = values[STAT_BUFFER_PAGES] = Int64GetDatum(0);
		values[STAT_MERGES] = values[STAT_MERGED_ENTRIES] = Int64GetDatum(0);
		nulls[STAT_ACCESS_METHOD] = nulls[STAT_TREE_HEIGHT] = false;
		nulls[STAT_BUFFER_ENTRIES] = nulls[STAT_BUFFER_PAGES] = false;
		nulls[STAT_MERGES] = nulls[STAT_MERGED_ENTRIES] = false;
	}
	index_close(index, AccessShareLock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
