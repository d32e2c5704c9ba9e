/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The PostgreSQL versions archer builds against, from one source: 15,
 *	  16, 17 and 18.  Every difference between them that archer meets is
 *	  bridged here, keyed on PG_VERSION_NUM, so that the .c files have no
 *	  version tests of their own.
 *
 * The code is written against PostgreSQL 16's names where 15's differ
 * (16 renamed relfilenodes to relfilelocators and replaced the per-catalog
 * ownership checks by object_ownercheck); on 15 those names map back to
 * the old ones.  Where 18 changed an interface, the code uses 18's form
 * and the macros below map it back for 15 to 17; 18's new planner hooks
 * (amgettreeheight, disabled_nodes) are used through two macros that do
 * nothing before 18.  17 removed the Abs()
 * macro: the code uses fabs()/fabsf() from <math.h>, on every version.
 *
 * No private buffer-manager header (storage/buf_internals.h) is used:
 * looking up whether a block is in the buffer pool goes through
 * PrefetchBuffer, the public interface that has that answer.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHER_COMPAT_H
#define ARCHER_COMPAT_H

#include "catalog/pg_class.h"
#include "commands/vacuum.h"
#include "utils/acl.h"
#include "utils/rel.h"

#if PG_VERSION_NUM < 150000
#error "archer needs PostgreSQL 15 or later"
#endif

#if PG_VERSION_NUM < 160000

/* 16: RelFileNode became RelFileLocator, Relation.rd_node rd_locator */
typedef RelFileNode RelFileLocator;
#define rd_locator rd_node
#define RelFileLocatorEquals(a, b) RelFileNodeEquals(a, b)

/*
 * 16: one object_ownercheck for every catalog replaced pg_class_ownercheck
 * and its siblings; archer only asks about relations
 */
static inline bool
object_ownercheck(Oid classid, Oid objectid, Oid roleid)
{
	if (classid != RelationRelationId)
		elog(ERROR, "archer: object_ownercheck for catalog %u is not supported on PostgreSQL 15",
			 classid);
	return pg_class_ownercheck(objectid, roleid);
}

#endif							/* PG_VERSION_NUM < 160000 */

#if PG_VERSION_NUM >= 180000

/*
 * 18: the planner asks an access method for its tree's height
 * (amgettreeheight) into IndexOptInfo.tree_height, which before it filled
 * for btree only; archer_geo's cost estimate reads the meta page itself
 * when tree_height is -1, so 15 to 17 cost the same
 */
#define archer_set_amgettreeheight(amroutine, fn) ((amroutine)->amgettreeheight = (fn))

/*
 * 18: a path counts the plan nodes that enable_* settings disabled, and the
 * planner compares that count before any cost (it replaced adding
 * disable_cost).  cost_index has counted the scan itself before it calls
 * the access method's cost estimate, which adds one for a path it should
 * never run; before 18 the huge cost it also sets is enough.
 */
#define archer_disable_path(indexpath) ((indexpath)->path.disabled_nodes++)

#else

#define archer_set_amgettreeheight(amroutine, fn) ((void) (fn))
#define archer_disable_path(indexpath) ((void) (indexpath))

#endif							/* PG_VERSION_NUM >= 180000 */

#if PG_VERSION_NUM < 180000

/*
 * 18: noreturn is the C11 function specifier pg_noreturn, written before
 * the declaration (pg_attribute_noreturn, written after it, is gone)
 */
#define pg_noreturn pg_attribute_noreturn()

/*
 * 18: vacuum_delay_point takes whether it runs for ANALYZE (which then
 * also honours ANALYZE's cost limits); before, it took nothing
 */
#define vacuum_delay_point(is_analyze) vacuum_delay_point()

#endif							/* PG_VERSION_NUM < 180000 */

#endif							/* ARCHER_COMPAT_H */
