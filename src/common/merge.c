/*-------------------------------------------------------------------------
 *
 * merge.c
 *	  The insert buffer entry points both access methods share: how many
 *	  entries wait, merging them (for the worker, VACUUM and sessions), and
 *	  archer_flush(); and the table of access-method descriptors through
 *	  which they reach each access method (archer_am.h).  See merge.h for
 *	  who merges when.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "commands/defrem.h"
#include "storage/lmgr.h"

#include "archer_am.h"
#include "merge.h"
#include "storage.h"

/* the two access methods; more would only need a larger table */
#define MAX_ACCESS_METHODS		2

static const ArcherAm *access_methods[MAX_ACCESS_METHODS];
static int	naccess_methods = 0;

PG_FUNCTION_INFO_V1(archer_flush);

/* Called by each access method's _PG_init part */
void
archer_am_register(const ArcherAm *am)
{
	if (naccess_methods == MAX_ACCESS_METHODS)
		elog(ERROR, "archer: too many access methods registered");
	access_methods[naccess_methods++] = am;
}

/* The descriptor of an archer index, or NULL for an index of another access method */
const ArcherAm *
archer_am_of(Relation index)
{
	Oid			relam = index->rd_rel->relam;

	if (!OidIsValid(relam))
		return NULL;
	for (int i = 0; i < naccess_methods; i++)
	{
		if (relam == get_index_am_oid(access_methods[i]->name, true))
			return access_methods[i];
	}
	return NULL;
}

/* The OIDs of the archer access methods in this database (none without the extension) */
List *
archer_am_oids(void)
{
	List	   *oids = NIL;

	for (int i = 0; i < naccess_methods; i++)
	{
		Oid			amoid = get_index_am_oid(access_methods[i]->name, true);

		if (OidIsValid(amoid))
			oids = lappend_oid(oids, amoid);
	}
	return oids;
}

/* Entries in an archer index's insert buffer (0 while the index is being built) */
int64
archer_buffer_entries(Relation index)
{
	ArcherBufferMeta meta;

	if (RelationGetNumberOfBlocks(index) == 0)
		return 0;
	archer_buffer_read_meta(index, archer_am_of(index)->page_id, &meta);
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
	const ArcherAm *am;
	int64		merged;

	if (RelationGetNumberOfBlocks(index) == 0)
		return 0;
	am = archer_am_of(index);
	if (wait)
		LockPage(index, am->merge_lock, ExclusiveLock);
	else if (!ConditionalLockPage(index, am->merge_lock, ExclusiveLock))
		return -1;
	merged = am->merge(index, max_entries);
	UnlockPage(index, am->merge_lock, ExclusiveLock);
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
	if (archer_am_of(index) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an archer index", RelationGetRelationName(index))));
	merged = archer_merge_buffer(index, 0, true);
	index_close(index, RowExclusiveLock);
	table_close(heap, RowExclusiveLock);
	PG_RETURN_INT64(merged);
}
