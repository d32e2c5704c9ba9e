/*-------------------------------------------------------------------------
 *
 * merge.c
 *	  The insert buffer entry points both access methods share: how many
 *	  entries wait, merging them (for the worker, VACUUM and sessions), and
 *	  archer_flush().  See merge.h for who merges when.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "commands/defrem.h"
#include "storage/lmgr.h"

#include "geo.h"
#include "merge.h"
#include "vec.h"

PG_FUNCTION_INFO_V1(archer_flush);

bool
archer_is_vector_index(Relation index)
{
	return index->rd_rel->relam == get_index_am_oid("archer_vector", true);
}

bool
archer_is_archer_index(Relation index)
{
	Oid			geo_am = get_index_am_oid("archer_geo", true);
	Oid			vec_am = get_index_am_oid("archer_vector", true);

	return OidIsValid(index->rd_rel->relam) &&
		(index->rd_rel->relam == geo_am || index->rd_rel->relam == vec_am);
}

/* Entries in the index's insert buffer (0 while the index is being built) */
int64
archer_buffer_entries(Relation index)
{
	ArcherBufferMeta meta;

	if (RelationGetNumberOfBlocks(index) == 0)
		return 0;
	archer_buffer_read_meta(index, archer_is_vector_index(index) ? ARCHER_VEC_PAGE_ID : ARCHER_GEO_PAGE_ID,
							&meta);
	return meta.entries;
}

/*
 * Merge up to max_entries (if > 0) buffered entries of the index, which the
 * caller has open with RowExclusiveLock; returns how many.  With wait
 * false, returns -1 at once if another merge (or VACUUM) holds the index.
 */
int64
archer_merge_buffer(Relation index, int64 max_entries, bool wait)
{
	int64		merged;
	bool		vector;
	BlockNumber lockpage;

	if (RelationGetNumberOfBlocks(index) == 0)
		return 0;
	/*
	 * A vector merge holds the graph alone (direct inserts share it in
	 * ShareLock, vec_insert.c), which also serializes merges; a geo merge
	 * needs only to be alone among merges
	 */
	vector = archer_is_vector_index(index);
	lockpage = vector ? VEC_INSERT_LOCK : ARCHER_MERGE_LOCK;
	if (wait)
		LockPage(index, lockpage, ExclusiveLock);
	else if (!ConditionalLockPage(index, lockpage, ExclusiveLock))
		return -1;
	merged = vector ? vec_buffer_merge(index, max_entries) : geo_buffer_merge(index, max_entries);
	UnlockPage(index, lockpage, ExclusiveLock);
	return merged;
}

/*
 * archer_flush(index regclass): merge the index's insert buffer now, and
 * return how many entries it merged.  The caller must own the index.
 */
Datum
archer_flush(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	Relation	heap;
	Relation	index;
	int64		merged;

	archer_check_index_owner(indexoid);
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("recovery is in progress"),
				 errhint("archer_flush() cannot run on a hot standby; the primary's merges reach it through WAL.")));
	/* the locks an INSERT takes: merging is inserting */
	heap = table_open(IndexGetRelation(indexoid, false), RowExclusiveLock);
	index = index_open(indexoid, RowExclusiveLock);
	if (!archer_is_archer_index(index))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an archer index", RelationGetRelationName(index))));
	merged = archer_merge_buffer(index, 0, true);
	index_close(index, RowExclusiveLock);
	table_close(heap, RowExclusiveLock);
	PG_RETURN_INT64(merged);
}
