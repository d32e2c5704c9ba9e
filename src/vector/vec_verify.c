/*-------------------------------------------------------------------------
 *
 * vec_verify.c
 *	  archer_vector_verify(index): check every invariant of an
 *	  archer_vector index and raise ERRCODE_INDEX_CORRUPTED naming the block
 *	  on the first violation.
 *
 * Checked: the meta page and the quantizer pages; every node page's header,
 * page id and version; every node's size for its layer count; every link
 * points to a node of the index that lives on that layer, and no live node
 * links to a deleted one (VACUUM repairs those); every filter list links
 * only nodes with the list owner's value in its column; the entry point is
 * a live node on the top layer; every live node is reachable from the entry
 * point (vec_reach.c: VACUUM relinks those that are not);
 * nodes of NULL vectors (vec.h) have no links and no link leads to them;
 * every row visible to a fresh snapshot with a non-NULL vector (and, in an
 * index that holds them, with a NULL one) has a live
 * node (or insert buffer entry) that describes it: its filter values are
 * the row's, its norm is the row's, and its code decodes to a vector no
 * farther from the row's than the node's recorded error, which is what
 * makes a scan's lower bound a lower bound (a damaged code or error would
 * otherwise surface only as the executor's "index returned tuples in wrong
 * order").  Holds ShareLock on the table (so inserts and VACUUM wait),
 * AccessShareLock on a hot standby.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/table.h"
#include "access/tableam.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "vec.h"

PG_FUNCTION_INFO_V1(archer_vector_verify);

typedef struct VecVerifyState
{
	Relation	index;
	const VecIndexInfo *info;
	VecVisited	live;			/* live nodes */
	VecVisited	deleted;		/* deleted nodes */
	VecVisited	nulls;			/* live nodes of NULL vectors, not in live */
	HTAB	   *rows;			/* heap TID -> its live node or buffer entry (VecRowNode) */
	int64		nlive;			/* live nodes, nnulls of them of NULL vectors */
	int64		nnulls;
	int64		nbuffered;		/* insert buffer entries not merged yet */
} VecVerifyState;

/* Where the node or insert buffer entry of a heap row is */
typedef struct VecRowNode
{
	ItemPointerData heaptid;	/* hash key */
	ItemPointerData node;
} VecRowNode;

static void
add_row(VecVerifyState *state, const VecNodeHeader *node, BlockNumber blkno, OffsetNumber off)
{
	VecRowNode *entry = hash_search(state->rows, &node->heaptid, HASH_ENTER, NULL);
	long		nrows = hash_get_num_entries(state->rows);

	ItemPointerSet(&entry->node, blkno, off);
	if (nrows % 1024 == 0)
		archer_verify_check_memory(state->index, hash_estimate_size(nrows, sizeof(VecRowNode)));
}

/* The insert buffer entries of a buffer page not merged yet count as live rows */
static void
collect_buffer_entries(VecVerifyState *state, Page page, BlockNumber blkno)
{
	for (OffsetNumber off = FirstOffsetNumber; off <= PageGetMaxOffsetNumber(page); off++)
	{
		VecNodeHeader *entry = vec_page_entry(state->index, page, blkno, off, state->info);

		if (entry->flags & VEC_NODE_MERGED)
			continue;
		if (!ItemPointerIsValid(&entry->heaptid))
			archer_corrupted(state->index, blkno, "An insert buffer entry holds an invalid heap pointer.");
		add_row(state, entry, blkno, off);
		state->nbuffered++;
	}
}

/* The live rows of a page of NULL vector rows (vec.h) count as live nodes */
static void
collect_null_rows(VecVerifyState *state, Page page, BlockNumber blkno)
{
	VecIndexInfo rows_info;

	if (!state->info->null_vectors)
		archer_corrupted(state->index, blkno, "An index that keeps no NULL vectors has a page of them.");
	vec_null_rows_info(state->info, &rows_info);
	for (OffsetNumber off = FirstOffsetNumber; off <= PageGetMaxOffsetNumber(page); off++)
	{
		VecNodeHeader *row = vec_page_row(state->index, page, blkno, off, &rows_info);

		if (row->flags & VEC_NODE_DELETED)
			continue;
		if (!ItemPointerIsValid(&row->heaptid))
			archer_corrupted(state->index, blkno, "A node holds an invalid heap pointer.");
		add_row(state, row, blkno, off);
		state->nlive++;
		state->nnulls++;
	}
}

/* Pass 1: page and node checks; collect live and deleted nodes, and buffered rows */
static void
collect_nodes(VecVerifyState *state, int quantizer_pages, uint8 *max_level)
{
	Relation	index = state->index;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);

	for (BlockNumber blkno = ARCHER_META_BLKNO + 1; blkno < nblocks; blkno++)
	{
		Buffer		buf = archer_read_page_if_used(index, blkno, BUFFER_LOCK_SHARE,
													   ARCHER_VEC_PAGE_ID);
		Page		page;
		uint8		flags;

		CHECK_FOR_INTERRUPTS();
		if (!BufferIsValid(buf))
		{
			if (blkno <= (BlockNumber) quantizer_pages)
				archer_corrupted(index, blkno, "A quantizer page is missing.");
			continue;
		}
		page = BufferGetPage(buf);
		flags = ArcherPageGetOpaque(page)->flags;
		if (blkno <= (BlockNumber) quantizer_pages)
		{
			if (!(flags & ARCHER_PAGE_QUANTIZER))
				archer_corrupted(index, blkno, "A quantizer page is missing.");
		}
		else if (flags & ARCHER_PAGE_BUFFER)
			collect_buffer_entries(state, page, blkno);
		else if (flags & ARCHER_PAGE_NULL_ROWS)
			collect_null_rows(state, page, blkno);
		else if (flags & ARCHER_PAGE_DELETED)
			;					/* a free page */
		else if (!(flags & ARCHER_PAGE_NODES))
			archer_corrupted(index, blkno, "A page after the quantizer holds no nodes.");
		else
		{
			for (OffsetNumber off = FirstOffsetNumber; off <= PageGetMaxOffsetNumber(page); off++)
			{
				VecNodeHeader *node = vec_page_node(index, page, blkno, off, state->info);
				ItemPointerData tid;

				ItemPointerSet(&tid, blkno, off);
				if (node->flags & VEC_NODE_DELETED)
					(void) vec_visited_add(&state->deleted, &tid);
				else
				{
					if (!ItemPointerIsValid(&node->heaptid))
						archer_corrupted(index, blkno, "A node holds an invalid heap pointer.");
					add_row(state, node, blkno, off);
					state->nlive++;
					if (VEC_NODE_IS_NULL_VECTOR(state->info, node->flags))
					{
						if (node->level != 0)
							archer_corrupted(index, blkno, "A node of a NULL vector is on an upper layer.");
						(void) vec_visited_add(&state->nulls, &tid);
						state->nnulls++;
						continue;
					}
					(void) vec_visited_add(&state->live, &tid);
					*max_level = Max(*max_level, node->level);
				}
			}
		}
		UnlockReleaseBuffer(buf);
	}
}

/* A filter link to check once the page that holds it is released */
typedef struct VecFilterLink
{
	ItemPointerData target;
	int			column;
	int64		value;			/* the linking node's */
} VecFilterLink;

/* A node linked from a filter list has the list owner's value in that column */
static void
check_filter_link(VecVerifyState *state, BlockNumber blkno, const VecFilterLink *link)
{
	BlockNumber target_blkno = ItemPointerGetBlockNumber(&link->target);
	Buffer		buf = archer_read_page(state->index, target_blkno, BUFFER_LOCK_SHARE,
									   ARCHER_VEC_PAGE_ID);
	VecNodeHeader *node = vec_page_node(state->index, BufferGetPage(buf), target_blkno,
										ItemPointerGetOffsetNumber(&link->target), state->info);
	int64		value;
	bool		same = vec_node_filter(node, state->info, link->column, &value) &&
		value == link->value;

	UnlockReleaseBuffer(buf);
	if (!same)
		archer_corrupted(state->index, blkno, "A filter list links nodes of different values.");
}

/*
 * Pass 2: every link of a live node leads to a live node on that layer,
 * and every link of a filter list to a node of the same value
 */
static void
check_links(VecVerifyState *state, int quantizer_pages)
{
	Relation	index = state->index;
	const VecIndexInfo *info = state->info;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	VecFilterLink *filter_links = NULL;
	int			maxfilter_links = 0;

	for (BlockNumber blkno = ARCHER_META_BLKNO + 1 + quantizer_pages; blkno < nblocks; blkno++)
	{
		Buffer		buf = vec_read_node_page(index, blkno);
		Page		page;
		int			nfilter_links = 0;

		CHECK_FOR_INTERRUPTS();
		if (!BufferIsValid(buf))
			continue;
		page = BufferGetPage(buf);
		for (OffsetNumber off = FirstOffsetNumber; off <= PageGetMaxOffsetNumber(page); off++)
		{
			VecNodeHeader *node = vec_page_node(index, page, blkno, off, info);
			int			lists[VEC_MAX_LISTS];
			int			nlists;

			if (node->flags & VEC_NODE_DELETED)
				continue;
			nlists = vec_node_lists(node, info, lists);
			for (int l = 0; l < nlists; l++)
			{
				int			nslots;
				VecNeighbor *slots = vec_node_neighbors(node, info, lists[l], &nslots);

				for (int i = 0; i < nslots; i++)
				{
					VecFilterLink *link;

					if (!ItemPointerIsValid(&slots[i].tid))
						continue;
					if (VEC_NODE_IS_NULL_VECTOR(state->info, node->flags))
						archer_corrupted(index, blkno, "A node of a NULL vector has links.");
					if (vec_visited_contains(&state->deleted, &slots[i].tid))
						archer_corrupted(index, blkno, "A live node links to a deleted node.");
					if (vec_visited_contains(&state->nulls, &slots[i].tid))
						archer_corrupted(index, blkno, "A link points to the node of a NULL vector.");
					if (!vec_visited_contains(&state->live, &slots[i].tid))
						archer_corrupted(index, blkno, "A link points to no node.");
					if (!VEC_IS_FILTER_LIST(lists[l]))
						continue;
					if (nfilter_links == maxfilter_links)
					{
						maxfilter_links = Max(2 * maxfilter_links, 256);
						filter_links = filter_links ?
							repalloc(filter_links, sizeof(VecFilterLink) * maxfilter_links) :
							palloc(sizeof(VecFilterLink) * maxfilter_links);
					}
					link = &filter_links[nfilter_links++];
					link->target = slots[i].tid;
					link->column = lists[l] - VEC_FILTER_LIST(0);
					if (!vec_node_filter(node, info, link->column, &link->value))
						archer_corrupted(index, blkno, "A node with a NULL filter value has filter links.");
				}
			}
		}
		UnlockReleaseBuffer(buf);
		for (int i = 0; i < nfilter_links; i++)
			check_filter_link(state, blkno, &filter_links[i]);
	}
}

/*
 * Pass 3: every live node is reachable from the entry point.  A node that
 * is not holds a row no search returns (vec_reach.c).
 */
static void
check_reachable(VecVerifyState *state, int quantizer_pages)
{
	Relation	index = state->index;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	VecReach	reach;
	int64		nunreached = 0;
	ItemPointerData first;

	if (!vec_reach_init(&reach, state->info, nblocks))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("checking which nodes of index \"%s\" a search reaches needs %zu kB of memory",
						RelationGetRelationName(index), vec_reach_kb(&reach)),
				 errhint("Raise maintenance_work_mem.")));
	(void) vec_reach_from_entry(index, state->info, &reach);

	ItemPointerSetInvalid(&first);
	for (BlockNumber blkno = ARCHER_META_BLKNO + 1 + quantizer_pages; blkno < nblocks; blkno++)
	{
		Buffer		buf = vec_read_node_page(index, blkno);
		Page		page;

		CHECK_FOR_INTERRUPTS();
		if (!BufferIsValid(buf))
			continue;
		page = BufferGetPage(buf);
		for (OffsetNumber off = FirstOffsetNumber; off <= PageGetMaxOffsetNumber(page); off++)
		{
			ItemPointerData tid;
			uint8		flags = vec_page_node(index, page, blkno, off, state->info)->flags;

			ItemPointerSet(&tid, blkno, off);
			/* a NULL vector's node is linked to nothing on purpose */
			if ((flags & VEC_NODE_DELETED) || VEC_NODE_IS_NULL_VECTOR(state->info, flags) ||
				vec_reach_contains(&reach, &tid))
				continue;
			if (nunreached++ == 0)
				first = tid;
		}
		UnlockReleaseBuffer(buf);
	}
	vec_reach_free(&reach);
	if (nunreached > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" has " INT64_FORMAT " live nodes that no search reaches, the first at block %u offset %u",
						RelationGetRelationName(index), nunreached,
						ItemPointerGetBlockNumber(&first), ItemPointerGetOffsetNumber(&first)),
				 errdetail("No path of links leads to them from the entry point, as after an insert interrupted between writing its node and linking it."),
				 errhint("VACUUM the table to relink them, or REINDEX the index.")));
}

/*
 * Whether the vector x (unit length under cosine) lies within the node's
 * recorded error of its decoded code, up to float rounding: the error is
 * computed in float by kernels whose summation order depends on the CPU.
 */
static bool
code_within_error(const VecIndexInfo *info, const float *x, const uint8 *code,
				  uint8 flags, float error)
{
	float	   *decoded = palloc(sizeof(float) * info->dim);
	double		distance2 = 0;
	double		scale2 = 0;
	double		slack;

	archer_sq8_decode(vec_quantizer(info, flags), code, decoded);
	for (int i = 0; i < info->dim; i++)
	{
		double		d = (double) x[i] - decoded[i];

		distance2 += d * d;
		scale2 += (double) x[i] * x[i] + (double) decoded[i] * decoded[i];
	}
	pfree(decoded);
	slack = 1e-4 * error + 1e-6 * sqrt(scale2);
	return sqrt(distance2) <= error + slack;
}

/* The node's filter values are the row's */
static bool
filters_describe_row(const VecIndexInfo *info, const VecNodeHeader *node, Datum *values,
					 bool *isnull)
{
	int64		filters[VEC_MAX_FILTERS];
	uint8		null_flags = 0;

	vec_filter_values(info, values, isnull, filters, &null_flags);
	for (int i = 0; i < info->nfilters; i++)
	{
		int64		value;
		bool		present = vec_node_filter(node, info, i, &value);

		if (present != !isnull[i + 1] || (present && value != filters[i]))
			return false;
	}
	return true;
}

/* The node's norm, zero-vector flag and filter values are the row's */
static bool
node_describes_row(const VecIndexInfo *info, const VecNodeHeader *node, const float *x,
				   Datum *values, bool *isnull)
{
	double		norm2 = 0;

	if (VEC_NODE_IS_NULL_VECTOR(info, node->flags))
		return false;
	for (int i = 0; i < info->dim; i++)
		norm2 += (double) x[i] * x[i];
	if (fabs(sqrt(norm2) - node->norm) > 1e-5 * sqrt(norm2) ||
		(info->metric == VEC_METRIC_COSINE &&
		 (norm2 == 0) != ((node->flags & VEC_NODE_ZERO) != 0)))
		return false;
	return filters_describe_row(info, node, values, isnull);
}

/* The row's node (graph node or buffer entry) describes the row's values */
static void
check_row_node(VecVerifyState *state, ItemPointer tid, ItemPointer where, Datum *values,
			   bool *isnull)
{
	const VecIndexInfo *info = state->info;
	VecIndexInfo rows_info;
	const VecIndexInfo *layout = info;	/* of the node's page */
	BlockNumber blkno = ItemPointerGetBlockNumber(where);
	Buffer		buf = archer_read_page(state->index, blkno, BUFFER_LOCK_SHARE, ARCHER_VEC_PAGE_ID);
	Page		page = BufferGetPage(buf);
	VecNodeHeader *node;
	int			dim = 0;
	const float *x = isnull[0] ? NULL : vec_datum_values(info, values[0], &dim);
	float	   *unit = NULL;
	bool		matches;

	if (ArcherPageGetOpaque(page)->flags & ARCHER_PAGE_BUFFER)
		node = vec_page_entry(state->index, page, blkno, ItemPointerGetOffsetNumber(where), info);
	else
	{
		vec_null_rows_info(info, &rows_info);
		layout = vec_page_layout(page, info, &rows_info);
		node = vec_page_row(state->index, page, blkno, ItemPointerGetOffsetNumber(where), layout);
	}
	if (isnull[0])
		matches = VEC_NODE_IS_NULL_VECTOR(state->info, node->flags) &&
			filters_describe_row(layout, node, values, isnull);
	else
		matches = node_describes_row(info, node, x, values, isnull);
	if (matches && !isnull[0] && info->metric == VEC_METRIC_COSINE && !(node->flags & VEC_NODE_ZERO))
	{
		unit = palloc(sizeof(float) * dim);
		memcpy(unit, x, sizeof(float) * dim);
		archer_vec_normalize(unit, dim);
		x = unit;
	}
	if (matches && !isnull[0] && !(node->flags & VEC_NODE_ZERO))
		matches = code_within_error(info, x, vec_node_code(node), node->flags, node->error);
	UnlockReleaseBuffer(buf);
	if (unit)
		pfree(unit);
	if (!matches)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" contains a corrupted page at block %u",
						RelationGetRelationName(state->index), blkno),
				 errdetail("The node at offset %u does not describe its row at (%u,%u): its code, error, norm or filter values are not the row's.",
						   ItemPointerGetOffsetNumber(where),
						   ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid)),
				 errhint("Please REINDEX it.")));
}

static void
verify_heap_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
					 bool tupleIsAlive, void *arg)
{
	VecVerifyState *state = (VecVerifyState *) arg;
	VecRowNode *row;

	/* an index of an older build holds no row whose vector is NULL */
	if (isnull[0] && !state->info->null_vectors)
		return;
	row = hash_search(state->rows, tid, HASH_FIND, NULL);
	if (row == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" has no node for the row at (%u,%u)",
						RelationGetRelationName(index),
						ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid)),
				 errhint("Please REINDEX it.")));
	check_row_node(state, tid, &row->node, values, isnull);
}

static HTAB *
rows_map(void)
{
	HASHCTL		ctl = {0};

	ctl.keysize = sizeof(ItemPointerData);
	ctl.entrysize = sizeof(VecRowNode);
	ctl.hcxt = CurrentMemoryContext;
	return hash_create("archer_vector_verify rows", 1024, &ctl,
					   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

Datum
archer_vector_verify(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	LOCKMODE	lockmode;
	Relation	heap;
	Relation	index;
	VecVerifyState state = {0};
	VecMetaPageData meta;
	uint8		max_level = 0;
	IndexInfo  *indexInfo;
	Snapshot	snapshot;
	ArcherSavedUser saved;

	archer_verify_open(indexoid, "archer_vector", &heap, &index, &lockmode);
	vec_read_meta(index, &meta);
	state.index = index;
	state.info = vec_index_info(index);
	/* without a dimension, an index holds at most NULL vector rows (vec.h) */
	if (meta.dim > vec_max_dim(meta.m, state.info->nfilters, meta.filter_m) || meta.m < 2 ||
		meta.metric < 1 || meta.metric > VEC_NSTRATEGIES)
		archer_corrupted(index, ARCHER_META_BLKNO, "The meta page holds impossible options.");
	vec_visited_init(&state.live, 1024);
	vec_visited_init(&state.deleted, 64);
	vec_visited_init(&state.nulls, 64);
	state.rows = rows_map();
	collect_nodes(&state, meta.quantizer_pages, &max_level);
	check_links(&state, meta.quantizer_pages);
	if (state.nlive > state.nnulls &&
		(!vec_visited_contains(&state.live, &meta.entry) || meta.entry_level != max_level))
		archer_corrupted(index, ARCHER_META_BLKNO, "The entry point is not a live node on the top layer.");
	if (state.nlive > state.nnulls)
		check_reachable(&state, meta.quantizer_pages);
	archer_buffer_check_chain(index, ARCHER_VEC_PAGE_ID, &meta.buffer, NULL, NULL);
	if (state.nbuffered != meta.buffer.entries)
		archer_corrupted(index, ARCHER_META_BLKNO, "The meta page's count of insert buffer entries is wrong.");

	indexInfo = BuildIndexInfo(index);
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	/* the index's expressions and predicate are the table owner's code */
	archer_become_owner(heap, &saved);
	table_index_build_scan(heap, index, indexInfo, true, false, verify_heap_callback, &state,
						   table_beginscan_strat(heap, snapshot, 0, NULL, true, true));
	archer_restore_user(&saved);
	UnregisterSnapshot(snapshot);

	index_close(index, lockmode);
	table_close(heap, lockmode);
	PG_RETURN_INT64(state.nlive + state.nbuffered);
}
