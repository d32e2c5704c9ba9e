/*-------------------------------------------------------------------------
 *
 * amroutine.c
 *	  What both access methods hand to core alike: the IndexAmRoutine
 *	  template, operator class validation, the worker count of a parallel
 *	  build, and index tuples for index-only scans that return no column.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/amvalidate.h"
#include "access/htup_details.h"
#include "access/itup.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "catalog/pg_am.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "storage.h"

/*
 * The capabilities both access methods share: one column, ordering by
 * operator, scans without conditions, no bitmap scans, no parallel scans.
 */
IndexAmRoutine *
archer_am_routine(int nstrategies)
{
	IndexAmRoutine *amroutine = makeNode(IndexAmRoutine);

	amroutine->amstrategies = nstrategies;
	amroutine->amsupport = 0;
	amroutine->amoptsprocnum = 0;
	amroutine->amcanorder = false;
	amroutine->amcanorderbyop = true;
	amroutine->amcanbackward = false;
	amroutine->amcanunique = false;
	amroutine->amcanmulticol = false;
	amroutine->amoptionalkey = true;
	amroutine->amsearcharray = false;
	amroutine->amsearchnulls = false;
	amroutine->amstorage = false;
	amroutine->amclusterable = false;
	amroutine->ampredlocks = false;
	amroutine->amcanparallel = false;
	amroutine->amcaninclude = false;
	amroutine->amusemaintenanceworkmem = false;
	amroutine->amparallelvacuumoptions = VACUUM_OPTION_PARALLEL_BULKDEL;
	amroutine->amkeytype = InvalidOid;
	amroutine->amcanreturn = NULL;
	amroutine->amproperty = NULL;
	amroutine->amadjustmembers = NULL;
	amroutine->amgetbitmap = NULL;
	amroutine->ammarkpos = NULL;
	amroutine->amrestrpos = NULL;
	amroutine->amestimateparallelscan = NULL;
	amroutine->aminitparallelscan = NULL;
	amroutine->amparallelrescan = NULL;
	return amroutine;
}

/*
 * Index-only scans of an index that cannot return its columns.  The
 * planner still offers one when a query needs no column of the table at
 * all (SELECT count(*) FROM t): no condition, hence no recheck, and no
 * value needed, so a tuple with NULL columns will do.  (archer_geo returns
 * its column, see geo_itup.c.)
 */
void
archer_set_empty_itup(IndexScanDesc scan)
{
	if (scan->xs_itup == NULL)
	{
		TupleDesc	desc = RelationGetDescr(scan->indexRelation);
		Datum		values[INDEX_MAX_KEYS] = {0};
		bool		isnull[INDEX_MAX_KEYS];

		memset(isnull, true, sizeof(isnull));
		scan->xs_itup = index_form_tuple(desc, values, isnull);
		scan->xs_itupdesc = desc;
	}
}

/*
 * The parallel workers the planner grants a CREATE INDEX of this table, as
 * for a btree (max_parallel_maintenance_workers, the table's size and
 * parallel_workers option, parallel-safe index expressions, 32MB of
 * maintenance_work_mem a process); 0 in a standalone backend or bootstrap
 */
int
archer_build_workers(Relation heap, Relation index)
{
	if (!IsUnderPostmaster || !IsNormalProcessingMode())
		return 0;
	return plan_create_index_workers(RelationGetRelid(heap), RelationGetRelid(index));
}

/*
 * Whether an ordering operator returns a float8 distance (the scans hand
 * out distances as float8) with a btree sort family that orders float8,
 * which the executor sorts and compares them by.  (Core refuses search
 * operators that return anything but a boolean.)
 */
static bool
ordering_result_ok(Form_pg_amop oprform)
{
	HeapTuple	familytup;
	bool		sorts_float8;

	if (!check_amop_signature(oprform->amopopr, FLOAT8OID,
							  oprform->amoplefttype, oprform->amoprighttype))
		return false;
	familytup = SearchSysCache1(OPFAMILYOID, ObjectIdGetDatum(oprform->amopsortfamily));
	if (!HeapTupleIsValid(familytup))
		return false;
	sorts_float8 = ((Form_pg_opfamily) GETSTRUCT(familytup))->opfmethod == BTREE_AM_OID &&
		OidIsValid(get_opfamily_member(oprform->amopsortfamily, FLOAT8OID, FLOAT8OID,
									   BTLessStrategyNumber));
	ReleaseSysCache(familytup);
	return sorts_float8;
}

/* Open an operator class for validation: its name, type and family's operators */
void
archer_opclass_open(Oid opclassoid, const char *amname, ArcherOpclass *opclass)
{
	Form_pg_opclass classform;

	opclass->classtup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclassoid));
	if (!HeapTupleIsValid(opclass->classtup))
		elog(ERROR, "cache lookup failed for operator class %u", opclassoid);
	classform = (Form_pg_opclass) GETSTRUCT(opclass->classtup);
	opclass->amname = amname;
	opclass->name = NameStr(classform->opcname);
	opclass->type = classform->opcintype;
	opclass->oprlist = SearchSysCacheList1(AMOPSTRATEGY, ObjectIdGetDatum(classform->opcfamily));
	opclass->noperators = opclass->oprlist->n_members;
}

/* Operator i of the class's family */
Form_pg_amop
archer_opclass_operator(const ArcherOpclass *opclass, int i)
{
	return (Form_pg_amop) GETSTRUCT(&opclass->oprlist->members[i]->tuple);
}

void
archer_opclass_close(ArcherOpclass *opclass)
{
	ReleaseCatCacheList(opclass->oprlist);
	ReleaseSysCache(opclass->classtup);
}

/*
 * Report a problem with one operator of the class, as amvalidate does (an
 * INFO); returns false, for the caller's verdict.  problem follows the
 * strategy number: " and ..." or ", which ...".
 */
bool
archer_opclass_report(const ArcherOpclass *opclass, Form_pg_amop oprform, const char *problem)
{
	ereport(INFO,
			(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
			 errmsg("%s operator class \"%s\" has operator %s with strategy %d%s",
					opclass->amname, opclass->name, format_operator(oprform->amopopr),
					oprform->amopstrategy, problem)));
	return false;
}

/* Report every strategy in 1..nstrategies not in the seen mask; false if any */
bool
archer_opclass_strategies_present(const ArcherOpclass *opclass, uint32 seen, int nstrategies)
{
	bool		result = true;

	for (int strategy = 1; strategy <= nstrategies; strategy++)
		if ((seen & (1u << strategy)) == 0)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("%s operator class \"%s\" has no operator for strategy %d on type %s",
							opclass->amname, opclass->name, strategy,
							format_type_be(opclass->type))));
			result = false;
		}
	return result;
}

/*
 * Operator class validation shared by the access methods: every operator
 * has a strategy in 1..nstrategies, is an ordering operator exactly when
 * its strategy's bit is set in ordering_strategies, and then returns a
 * float8 sorted by a float8 family (ordering_result_ok).  Problems are reported as INFO, as
 * amvalidate does.
 */
bool
archer_validate_opclass(Oid opclassoid, const char *amname, int nstrategies,
						uint32 ordering_strategies)
{
	bool		result = true;
	ArcherOpclass opclass;

	archer_opclass_open(opclassoid, amname, &opclass);
	for (int i = 0; i < opclass.noperators; i++)
	{
		Form_pg_amop oprform = archer_opclass_operator(&opclass, i);
		int			strategy = oprform->amopstrategy;
		bool		ordering = strategy >= 1 && strategy <= nstrategies &&
			(ordering_strategies & (1u << strategy)) != 0;

		if (strategy < 1 || strategy > nstrategies ||
			(oprform->amoppurpose == AMOP_ORDER) != ordering)
			result = archer_opclass_report(&opclass, oprform,
										   " and the wrong purpose or number");
		else if (ordering && !ordering_result_ok(oprform))
			result = archer_opclass_report(&opclass, oprform,
										   ", which returns the wrong type or sorts by the wrong family");
	}
	archer_opclass_close(&opclass);
	return result;
}
