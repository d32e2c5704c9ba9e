/*-------------------------------------------------------------------------
 *
 * vec_handler.c
 *	  The archer_vector access method handler: capabilities, reloptions,
 *	  GUCs, cost estimation and operator class validation.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>

#include "access/genam.h"
#include "access/reloptions.h"
#include "access/stratnum.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "commands/vacuum.h"
#include "nodes/pathnodes.h"
#include "optimizer/optimizer.h"
#include "utils/catcache.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/selfuncs.h"
#include "utils/syscache.h"

#include "archer_am.h"
#include "vec.h"

PG_FUNCTION_INFO_V1(archer_vector_handler);

static relopt_kind vec_relopt_kind;

/* archer_index_stats: the graph's live and deleted nodes */
static void
vec_figures(Relation index, ArcherAmFigures *figures)
{
	VecMetaPageData meta;

	vec_read_meta(index, &meta);
	figures->has_tree = false;
	figures->has_graph = true;
	figures->graph_nodes = meta.nnodes - meta.ndeleted;
	figures->deleted_nodes = meta.ndeleted;
}

/*
 * A merge links nodes into the graph: it holds the graph alone, in
 * ExclusiveLock on the lock direct inserts share in ShareLock (vec_graph.c),
 * which also serializes merges and VACUUM (vec.h).
 */
static const ArcherAm vec_am = {
	.name = "archer_vector",
	.page_id = ARCHER_VEC_PAGE_ID,
	.merge_lock = VEC_INSERT_LOCK,
	.merge = vec_buffer_merge,
	.figures = vec_figures,
};

static void
validate_quantization(const char *value)
{
	if (value != NULL && strcmp(value, "sq8") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for archer_vector option \"quantization\": \"%s\"", value),
				 errdetail("Valid values are \"sq8\".")));
}

void
archer_vector_am_init(void)
{
	archer_am_register(&vec_am);
	vec_relopt_kind = add_reloption_kind();
	add_int_reloption(vec_relopt_kind, "m",
					  "Links per node and layer (twice as many on layer 0)",
					  VEC_DEFAULT_M, VEC_MIN_M, VEC_MAX_M, AccessExclusiveLock);
	add_int_reloption(vec_relopt_kind, "ef_construction",
					  "Width of the neighbour search while building the graph",
					  VEC_DEFAULT_EF_CONSTRUCTION, VEC_MIN_EF_CONSTRUCTION,
					  VEC_MAX_EF_CONSTRUCTION, AccessExclusiveLock);
	add_bool_reloption(vec_relopt_kind, "insert_buffer",
					   "Inserts append to an insert buffer, merged into the graph in batches",
					   false, AccessExclusiveLock);
	add_string_reloption(vec_relopt_kind, "quantization",
						 "How node vectors are stored: sq8 (8-bit scalar quantization)",
						 "sq8", validate_quantization, AccessExclusiveLock);

	vec_scan_define_settings();
}

static bytea *
vec_options(Datum reloptions, bool validate)
{
	static const relopt_parse_elt tab[] = {
		{"m", RELOPT_TYPE_INT, offsetof(VecOptions, m)},
		{"ef_construction", RELOPT_TYPE_INT, offsetof(VecOptions, ef_construction)},
		{"quantization", RELOPT_TYPE_STRING, offsetof(VecOptions, quantization_offset)},
		{"insert_buffer", RELOPT_TYPE_BOOL, offsetof(VecOptions, insert_buffer)},
	};

	return (bytea *) build_reloptions(reloptions, validate, vec_relopt_kind,
									  sizeof(VecOptions), tab, lengthof(tab));
}

/*
 * The selectivity of the index conditions among the nodes a scan walks:
 * with column = value on a filter column, the scan walks that value's
 * graph (its filter list, vec.h), so the first such condition selects
 * nothing there; the others (and range conditions) do.
 */
static Selectivity
walk_selectivity(PlannerInfo *root, IndexPath *path, Selectivity all)
{
	IndexOptInfo *index = path->indexinfo;
	List	   *others = NIL;
	bool		listed = false;
	ListCell   *lc;

	foreach(lc, path->indexclauses)
	{
		IndexClause *iclause = lfirst_node(IndexClause, lc);
		ListCell   *qc;

		foreach(qc, iclause->indexquals)
		{
			RestrictInfo *rinfo = lfirst_node(RestrictInfo, qc);
			Expr	   *clause = rinfo->clause;

			if (!listed && iclause->indexcol > 0 && IsA(clause, OpExpr) &&
				get_op_opfamily_strategy(((OpExpr *) clause)->opno,
										 index->opfamily[iclause->indexcol]) ==
				BTEqualStrategyNumber)
				listed = true;
			else
				others = lappend(others, rinfo);
		}
	}
	if (!listed)
		return all;
	return clauselist_selectivity(root, others, index->rel->relid, JOIN_INNER, NULL);
}

/*
 * The m the index's graph was built with, from its meta page: ALTER INDEX
 * SET (m = ...) changes the option, not the graph, until a REINDEX.  A
 * damaged meta page fails planning with ERRCODE_INDEX_CORRUPTED, as a
 * damaged btree meta page does.
 */
static int
index_m(Oid indexoid)
{
	Relation	index = index_open(indexoid, NoLock);
	VecMetaPageData meta;

	vec_read_meta(index, &meta);
	index_close(index, NoLock);
	return meta.m;
}

/*
 * An ordered scan reads about ef_search * 2m nodes before it returns its
 * first row, and about 2m more per further row; conditions on filter
 * columns divide the rows it returns by their selectivity, and multiply
 * the nodes it reads for each, but for the one whose filter list it
 * searches (walk_selectivity).  Without ORDER BY the index is useless.
 */
static void
vec_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				 Cost *indexStartupCost, Cost *indexTotalCost,
				 Selectivity *indexSelectivity, double *indexCorrelation,
				 double *indexPages)
{
	GenericCosts costs = {0};
	double		ntuples = Max(path->indexinfo->tuples, 1);
	double		startup_nodes;

	/*
	 * A node costs more the larger it is (the cache lines its code and
	 * lists take): of two indexes on the same vectors, one with filter
	 * lists is chosen only for the conditions it serves
	 */
	double		node_cost = (cpu_index_tuple_cost + 4 * cpu_operator_cost) *
		(1 + path->indexinfo->pages / ntuples);

	if (path->indexorderbys == NIL)
	{
		/*
		 * PostgreSQL 18 ranks paths by their disabled plan nodes before their
		 * costs: with enable_seqscan = off, a cost alone would make this
		 * useless walk over every node win against a disabled sequential scan
		 */
		archer_disable_path(path);
		*indexStartupCost = DBL_MAX / 4;
		*indexTotalCost = DBL_MAX / 4;
		*indexSelectivity = 0;
		*indexCorrelation = 0;
		*indexPages = 0;
		return;
	}
	costs.numIndexTuples = ntuples;
	genericcostestimate(root, path, loop_count, &costs);
	startup_nodes = (double) archer_vector_ef_search * 2 * index_m(path->indexinfo->indexoid) /
		Max(walk_selectivity(root, path, costs.indexSelectivity), 1.0 / ntuples);
	/*
	 * A graph search jumps between node pages at random and is only fast
	 * when they are cached, as they usually are: charged as CPU work alone
	 */
	*indexStartupCost = Min(startup_nodes, ntuples) * node_cost;
	*indexTotalCost = *indexStartupCost + ntuples * node_cost;
	*indexSelectivity = costs.indexSelectivity;
	*indexCorrelation = 0;
	*indexPages = costs.numIndexPages;
}

/*
 * A vector operator class's family holds exactly one operator, the
 * metric's, taking two values of the class's type: the index takes its
 * metric from it (build_info in vec_build.c), so with none the index would
 * have no metric, with two it would pick one silently, and an operator on
 * other types would never match a query on the indexed column.
 */
static bool
vec_validate_metric_operator(Oid opclassoid, Oid type)
{
	ArcherOpclass opclass;
	bool		result;

	archer_opclass_open(opclassoid, "archer_vector", &opclass);
	result = opclass.noperators == 1;
	if (!result)
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("archer_vector operator class \"%s\" has %d operators, not the one distance operator of its metric",
						opclass.name, opclass.noperators)));
	for (int i = 0; i < opclass.noperators; i++)
	{
		Form_pg_amop oprform = archer_opclass_operator(&opclass, i);

		if (oprform->amoplefttype != type || oprform->amoprighttype != type)
			result = archer_opclass_report(&opclass, oprform,
										   ", which does not take two values of the class's type");
	}
	archer_opclass_close(&opclass);
	return result;
}

static bool
is_filter_type(Oid type)
{
	return type == INT2OID || type == INT4OID || type == INT8OID;
}

/*
 * The scan compares a filter column's value with a condition's as two
 * int64 by the condition's strategy, read as btree's (vec_filters_match):
 * so each operator of a filter class's family must be the operator of that
 * strategy in btree's integer family, and the class's own type needs all
 * five, or the planner finds no operator for some conditions.
 */
static bool
vec_validate_filter_operators(Oid opclassoid, Oid type)
{
	ArcherOpclass opclass;
	uint32		strategies_seen = 0;
	bool		result = true;

	archer_opclass_open(opclassoid, "archer_vector", &opclass);
	for (int i = 0; i < opclass.noperators; i++)
	{
		Form_pg_amop oprform = archer_opclass_operator(&opclass, i);

		/* a wrong operator is reported below, not also as a missing one */
		if (oprform->amoplefttype == type && oprform->amoprighttype == type &&
			oprform->amopstrategy >= 1 && oprform->amopstrategy <= VEC_FILTER_STRATEGIES)
			strategies_seen |= 1u << oprform->amopstrategy;
		if (get_op_opfamily_strategy(oprform->amopopr, INTEGER_BTREE_FAM_OID) !=
			oprform->amopstrategy)
			result = archer_opclass_report(&opclass, oprform,
										   ", which is not btree's integer comparison of that number");
	}
	result = archer_opclass_strategies_present(&opclass, strategies_seen,
											   VEC_FILTER_STRATEGIES) && result;
	archer_opclass_close(&opclass);
	return result;
}

/*
 * Vector operator classes have one ordering operator, the metric's; filter
 * operator classes (integer types) btree's five comparison operators.
 */
static bool
vec_validate(Oid opclassoid)
{
	Oid			type = get_opclass_input_type(opclassoid);
	bool		valid;

	if (is_filter_type(type))
	{
		valid = archer_validate_opclass(opclassoid, "archer_vector", VEC_FILTER_STRATEGIES, 0);
		return vec_validate_filter_operators(opclassoid, type) && valid;
	}
	valid = archer_validate_opclass(opclassoid, "archer_vector", VEC_NSTRATEGIES,
									(1u << VEC_METRIC_L2) | (1u << VEC_METRIC_IP) | (1u << VEC_METRIC_COSINE));
	return vec_validate_metric_operator(opclassoid, type) && valid;
}

Datum
archer_vector_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *amroutine = archer_am_routine(Max(VEC_NSTRATEGIES, VEC_FILTER_STRATEGIES));

	amroutine->amcanmulticol = true;	/* the vector, then filter columns */
	amroutine->ambuild = vec_build;
	amroutine->ambuildempty = vec_buildempty;
	amroutine->aminsert = vec_insert;
	amroutine->ambulkdelete = vec_bulkdelete;
	amroutine->amvacuumcleanup = vec_vacuumcleanup;
	amroutine->amcostestimate = vec_costestimate;
	amroutine->amoptions = vec_options;
	amroutine->ambuildphasename = vec_buildphasename;
	amroutine->amvalidate = vec_validate;
	amroutine->ambeginscan = vec_beginscan;
	amroutine->amrescan = vec_rescan;
	amroutine->amgettuple = vec_gettuple;
	amroutine->amendscan = vec_endscan;

	PG_RETURN_POINTER(amroutine);
}
