/*-------------------------------------------------------------------------
 *
 * geo_handler.c
 *	  The archer_geo access method handler: capabilities, reloptions, GUCs,
 *	  cost estimation and operator class validation.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/amvalidate.h"
#include "access/genam.h"
#include "access/reloptions.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_type.h"
#include "commands/progress.h"
#include "commands/vacuum.h"
#include "optimizer/optimizer.h"
#include "utils/regproc.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"
#include "utils/syscache.h"

#include "archer_am.h"
#include "geo.h"

PG_FUNCTION_INFO_V1(archer_geo_handler);


static relopt_kind geo_relopt_kind;

/* archer_index_stats: the tree's height in levels (0 without a root) */
static void
geo_figures(Relation index, ArcherAmFigures *figures)
{
	BlockNumber root;
	uint16		root_level;

	geo_read_meta(index, &root, &root_level);
	figures->has_tree = true;
	figures->tree_height = BlockNumberIsValid(root) ? root_level + 1 : 0;
	figures->has_graph = false;
}

/*
 * A merge inserts into the tree as any insert does (buffer locks, and
 * GEO_SPLIT_LOCK to split), so it needs only to be alone: a lock of its
 * own, which VACUUM takes too, and no inserts.
 */
static const ArcherAm geo_am = {
	.name = "archer_geo",
	.page_id = ARCHER_GEO_PAGE_ID,
	.merge_lock = ARCHER_MERGE_LOCK,
	.merge = geo_buffer_merge,
	.figures = geo_figures,
};

void
archer_geo_init(void)
{
	archer_am_register(&geo_am);
	geo_relopt_kind = add_reloption_kind();
	add_int_reloption(geo_relopt_kind, "fillfactor",
					  "Packs archer_geo leaf pages only to this percentage at build",
					  GEO_DEFAULT_FILLFACTOR, 10, 100, AccessExclusiveLock);
	add_bool_reloption(geo_relopt_kind, "insert_buffer",
					   "Inserts go to an insert buffer, merged into the tree in batches",
					   false, AccessExclusiveLock);
	geo_buffer_init();
	geo_region_cache_init();
	s2_init();

	geo_scan_define_settings();
	geo_region_cache_define_settings();
}

static bytea *
geo_options(Datum reloptions, bool validate)
{
	static const relopt_parse_elt tab[] = {
		{"fillfactor", RELOPT_TYPE_INT, offsetof(GeoOptions, fillfactor)},
		{"insert_buffer", RELOPT_TYPE_BOOL, offsetof(GeoOptions, insert_buffer)},
	};

	return (bytea *) build_reloptions(reloptions, validate, geo_relopt_kind,
									  sizeof(GeoOptions), tab, lengthof(tab));
}

/*
 * Cost: the generic estimate from the conditions' selectivity, plus one
 * descent per covering cell.  An ordered scan without conditions reads
 * about as many entries as rows are fetched.  A descent reads the tree's
 * height in pages: PostgreSQL 18 has it from geo_tree_height
 * (amgettreeheight) in tree_height; earlier versions leave tree_height at
 * -1 for every index but btree, and then it is read here, from the same
 * meta page.
 */
static void
geo_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				 Cost *indexStartupCost, Cost *indexTotalCost,
				 Selectivity *indexSelectivity, double *indexCorrelation,
				 double *indexPages)
{
	IndexOptInfo *index = path->indexinfo;
	GenericCosts costs = {0};
	double		descent;
	int			height = index->tree_height;
	int			ncells = path->indexorderbys != NIL ? archer_geo_max_cells :
		Max(1, list_length(path->indexclauses)) * archer_geo_max_cells;

	genericcostestimate(root, path, loop_count, &costs);

	/* (a hypothetical index, e.g. hypopg's, has no pages to read) */
	if (height < 0 && !index->hypothetical)
	{
		Relation	irel = index_open(index->indexoid, NoLock);

		height = geo_tree_height(irel);
		index_close(irel, NoLock);
	}
	/* unknown (a meta page the scan will report): a root above the leaves */
	if (height < 0)
		height = 1;

	/* each covering cell is a descent of height + 1 pages, mostly cached */
	descent = (height + 1) * ncells * cpu_operator_cost * 50;
	costs.indexStartupCost += descent;
	costs.indexTotalCost += descent;

	*indexStartupCost = costs.indexStartupCost;
	*indexTotalCost = costs.indexTotalCost;
	*indexSelectivity = costs.indexSelectivity;
	*indexCorrelation = costs.indexCorrelation;
	*indexPages = costs.numIndexPages;
}

/*
 * Every entry holds its exact point (geo_pointcode.c), so index-only scans
 * can return the column; not an expression's value, which the rare
 * entries whose point is only in the heap could not get back from there.
 */
static bool
geo_canreturn(Relation index, int attno)
{
	return index->rd_index->indkey.values[attno - 1] != 0;
}

/*
 * The right-hand type the scan reads a strategy's argument as (geo_scan.c:
 * a cap, a polygon of the column's kind, a point of the column's type)
 */
static bool
geo_strategy_right_type_ok(int strategy, GeoColumnKind kind, Oid coltype, Oid righttype)
{
	switch (strategy)
	{
		case GEO_STRATEGY_CAP:
			return geo_type_is_cap(righttype);
		case GEO_STRATEGY_REGION:
			return righttype == (kind == GEO_COLUMN_POINT ? POLYGONOID : coltype);
		case GEO_STRATEGY_DISTANCE:
			return righttype == coltype;
	}
	return false;
}

/*
 * Operator class validation: the shared checks (strategies in range,
 * ordering operators returning float8 with a float8 sort family), then
 * what the scan relies on: a type it can index, every operator on it with
 * the right-hand type its strategy's argument is read as, search
 * operators that are archer's predicates (geo_search_operator_ok), and all
 * strategies present, since the planner would otherwise find no operator
 * for the index conditions archer_geo_support makes.
 */
static bool
geo_validate(Oid opclassoid)
{
	bool		valid = archer_validate_opclass(opclassoid, "archer_geo", GEO_NSTRATEGIES,
												1u << GEO_STRATEGY_DISTANCE);
	ArcherOpclass opclass;
	GeoColumnKind kind;
	uint32		strategies_seen = 0;

	archer_opclass_open(opclassoid, "archer_geo", &opclass);
	if (!geo_type_column_kind(opclass.type, &kind))
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("archer_geo operator class \"%s\" is for type %s, which archer_geo cannot index",
						opclass.name, format_type_be(opclass.type))));
		archer_opclass_close(&opclass);
		return false;
	}
	for (int i = 0; i < opclass.noperators; i++)
	{
		Form_pg_amop oprform = archer_opclass_operator(&opclass, i);

		/* out of range: archer_validate_opclass reported it */
		if (oprform->amopstrategy < 1 || oprform->amopstrategy > GEO_NSTRATEGIES)
			continue;
		/* a wrong operator is reported below, not also as a missing one */
		strategies_seen |= 1u << oprform->amopstrategy;
		if (oprform->amoplefttype != opclass.type ||
			!geo_strategy_right_type_ok(oprform->amopstrategy, kind, opclass.type,
										oprform->amoprighttype))
			valid = archer_opclass_report(&opclass, oprform,
										  ", which takes other types than the scan reads for this column");
		else if (!geo_search_operator_ok(oprform->amopstrategy, oprform->amopopr))
			valid = archer_opclass_report(&opclass, oprform,
										  ", which is not archer's predicate for it");
	}
	valid = archer_opclass_strategies_present(&opclass, strategies_seen, GEO_NSTRATEGIES) && valid;
	archer_opclass_close(&opclass);
	return valid;
}

Datum
archer_geo_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *amroutine = archer_am_routine(GEO_NSTRATEGIES);

	amroutine->ambuild = geo_build;
	amroutine->ambuildempty = geo_buildempty;
	amroutine->aminsert = geo_insert;
	amroutine->ambulkdelete = geo_bulkdelete;
	amroutine->amvacuumcleanup = geo_vacuumcleanup;
	amroutine->amcostestimate = geo_costestimate;
	archer_set_amgettreeheight(amroutine, geo_tree_height);
	amroutine->amoptions = geo_options;
	amroutine->ambuildphasename = geo_buildphasename;
	amroutine->amvalidate = geo_validate;
	amroutine->ambeginscan = geo_beginscan;
	amroutine->amrescan = geo_rescan;
	amroutine->amgettuple = geo_gettuple;
	amroutine->amcanreturn = geo_canreturn;
	amroutine->amendscan = geo_endscan;

	PG_RETURN_POINTER(amroutine);
}
