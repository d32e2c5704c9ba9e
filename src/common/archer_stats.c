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
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "funcapi.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "archer_am.h"
#include "storage.h"

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
	const ArcherAm *am;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "archer_index_stats: return type must be a row type");
	archer_check_is_index(indexoid);

	/*
	 * Like the pg_stat_* views, only for the index's owner (or a member) and
	 * pg_read_all_stats; checked before the lock, so that a role cannot
	 * queue behind someone else's DDL on the index.
	 */
	if (!object_ownercheck(RelationRelationId, indexoid, GetUserId()) &&
		!has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for index %s", get_rel_name(indexoid)),
				 errdetail("Only the index's owner and roles with privileges of pg_read_all_stats may read its figures.")));
	memset(nulls, true, sizeof(nulls));
	index = index_open(indexoid, AccessShareLock);
	am = archer_am_of(index);
	if (am == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an archer index", RelationGetRelationName(index))));
	values[STAT_INDEX_PAGES] = Int64GetDatum(RelationGetNumberOfBlocks(index));
	nulls[STAT_INDEX_PAGES] = false;
	if (RelationGetNumberOfBlocks(index) > 0)	/* no meta page during CREATE INDEX CONCURRENTLY */
	{
		ArcherBufferMeta buffer;
		ArcherAmFigures figures;

		archer_buffer_read_meta(index, am->page_id, &buffer);
		values[STAT_ACCESS_METHOD] = CStringGetTextDatum(am->name);
		values[STAT_BUFFER_ENTRIES] = Int64GetDatum(buffer.entries);
		values[STAT_BUFFER_PAGES] = Int64GetDatum(buffer.pages);
		values[STAT_MERGES] = Int64GetDatum(buffer.merges);
		values[STAT_MERGED_ENTRIES] = Int64GetDatum(buffer.merged_entries);
		for (int i = STAT_ACCESS_METHOD; i <= STAT_MERGED_ENTRIES; i++)
			nulls[i] = false;
		if (buffer.merges > 0)
		{
			values[STAT_LAST_MERGE] = TimestampTzGetDatum(buffer.last_merge_end);
			values[STAT_LAST_MERGE_MS] = Float8GetDatum(buffer.last_merge_us / 1000.0);
			nulls[STAT_LAST_MERGE] = nulls[STAT_LAST_MERGE_MS] = false;
		}
		am->figures(index, &figures);
		if (figures.has_tree)
		{
			values[STAT_TREE_HEIGHT] = Int32GetDatum(figures.tree_height);
			nulls[STAT_TREE_HEIGHT] = false;
		}
		if (figures.has_graph)
		{
			values[STAT_GRAPH_NODES] = Int64GetDatum(figures.graph_nodes);
			values[STAT_DELETED_NODES] = Int64GetDatum(figures.deleted_nodes);
			nulls[STAT_GRAPH_NODES] = nulls[STAT_DELETED_NODES] = false;
		}
	}
	index_close(index, AccessShareLock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
