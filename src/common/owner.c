/*-------------------------------------------------------------------------
 *
 * owner.c
 *	  Who may run the verify functions on an index, and as whom a table's
 *	  own code (index expressions and predicates) runs when archer
 *	  evaluates it for a verify or a merge.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "storage.h"

/* An error unless indexoid is an index */
void
archer_check_is_index(Oid indexoid)
{
	if (get_rel_relkind(indexoid) != RELKIND_INDEX)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an index",
						get_rel_name(indexoid) ? get_rel_name(indexoid) : "?")));
}

/*
 * An error unless indexoid is an index the current user owns; checked
 * before any lock is taken, so that a stranger cannot queue behind writers
 */
void
archer_check_index_owner(Oid indexoid)
{
	archer_check_is_index(indexoid);
	if (!object_ownercheck(RelationRelationId, indexoid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_INDEX, get_rel_name(indexoid));
}

/*
 * The opening of a verify function: the caller must own the index (checked
 * before any lock, so a stranger cannot queue behind writers); then the
 * table and index are opened with ShareLock, which keeps writers out while
 * the check runs (AccessShareLock on a hot standby, where only replay
 * writes), and the index must belong to the named access method.
 */
void
archer_verify_open(Oid indexoid, const char *amname, Relation *heap, Relation *index,
				   LOCKMODE *lockmode)
{
	archer_check_index_owner(indexoid);
	*lockmode = RecoveryInProgress() ? AccessShareLock : ShareLock;
	*heap = table_open(IndexGetRelation(indexoid, false), *lockmode);
	*index = index_open(indexoid, *lockmode);
	if ((*index)->rd_rel->relam != get_index_am_oid(amname, false))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an %s index", RelationGetRelationName(*index), amname)));
}

/*
 * The verify functions keep an entry for every row the index holds; past
 * maintenance_work_mem they stop with an error that says what to raise,
 * rather than grow a backend without bound on a large index.
 */
void
archer_verify_check_memory(Relation index, Size bytes)
{
	if (bytes / 1024 > (Size) maintenance_work_mem)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("verifying index \"%s\" needs more than maintenance_work_mem (%d kB)",
						RelationGetRelationName(index), maintenance_work_mem),
				 errdetail("Verify keeps an entry for every row of the index, %zu kB so far.",
						   bytes / 1024),
				 errhint("Raise maintenance_work_mem.")));
}

/*
 * Run user code of a table (index expressions and predicates, which
 * table_index_build_scan and merges evaluate) as the table's owner, under
 * SECURITY_RESTRICTED_OPERATION and in a new GUC nest level: otherwise a
 * function written by the owner would run with the rights of whoever
 * verifies or merges the index (a superuser, the background worker), and
 * could change settings that outlive the call.  An error in between needs
 * no cleanup: (sub)transaction abort restores the user and the settings.
 */
void
archer_become_owner(Relation heap, ArcherSavedUser *saved)
{
	GetUserIdAndSecContext(&saved->userid, &saved->sec_context);
	SetUserIdAndSecContext(heap->rd_rel->relowner,
						   saved->sec_context | SECURITY_RESTRICTED_OPERATION);
	saved->nestlevel = NewGUCNestLevel();
}

/* Undo archer_become_owner */
void
archer_restore_user(const ArcherSavedUser *saved)
{
	AtEOXact_GUC(false, saved->nestlevel);
	SetUserIdAndSecContext(saved->userid, saved->sec_context);
}
