/*-------------------------------------------------------------------------
 *
 * vec_scan.c
 *	  Ordered scans of archer_vector: ORDER BY col <op> query LIMIT k.
 *
 * The scan descends greedily through the upper layers, then runs HNSW's
 * best-first search on layer 0 in rounds.  Round r keeps the
 * ef_search * 2^r found nodes of least upper bound of the exact distance
 * as its result set (result_set_key) and expands candidates until none can
 * improve it; every found node within the set's largest upper bound is
 * then returned, ordered by the lower bound of the exact distance (from
 * the second round on only the nearer half: the farther half waits for the
 * next round, as a wider search rarely finds a node nearer than that;
 * unless the nearer half holds nothing new).  When the executor asks for more (a WHERE clause
 * filtered rows out, or LIMIT is large) it first gets one row more: the
 * found node of least bound outside the result set, which is usually all
 * the executor wanted (to be sure of the last row it emits; see
 * ready_next_found); when it asks for more, the next round doubles the width
 * and resumes the same search: candidates, visited set and found nodes
 * carry over, so no node is read twice.  A node found in a later round
 * whose bound is below the last one returned is "late": the executor may
 * already have emitted rows farther than it, so returning it could break
 * the ORDER BY.  Under archer.vector_order = strict (the default) a late
 * node is skipped, so rows come back in exact distance order (pgvector's
 * strict_order does the same); under relaxed it is held back and handed
 * out once the search has nothing else (out of order, but no row is lost
 * to a filter the index cannot apply).  A round whose layer 0 runs out of
 * candidates follows the upper layers' links at once, and a round after
 * which the graph has nothing left reads the node pages (below) before it
 * hands out its rows: the graph's last rows are its farthest, and every
 * node it never reached (a part no link leads into, nodes cut off while
 * VACUUM relinks) would be late after them.  Once a scan has returned
 * archer.vector_max_scan_tuples rows it starts no further round (the round
 * under way still returns its rows), with a NOTICE.  When
 * the graph search runs dry, or has met an eighth of the index's nodes, one
 * pass over the node pages adds whatever it has not reached, so a selective
 * filter still fills its LIMIT, and the rest of the scan, knowing every
 * node, finds none late.
 *
 * A scan with column = value on a filter column searches the graph of
 * that value's filter list (vec.h) instead: the descent through the upper
 * layers notes the nearest node of the value it passes (vec_descend_layer),
 * or else a walk of layer 0 runs until it meets one, and from there on
 * matching nodes are expanded through their filter lists and the others
 * set aside.  Only if the value's graph runs dry with the result set short
 * does the scan go back to walking layer 0 from the nodes set aside.
 *
 * The insert buffer's entries (vec_buffer.c) are read first, all of them,
 * into the found set: they compete with the graph's nodes in every round.
 *
 * Rows whose vector is NULL have nodes that nothing links to (vec.h): a
 * sequential scan's sort puts their NULL distances after every other row,
 * and so does the scan, once the search is over.  The page sweep notes
 * them as it passes; a scan that ended without one reads the node pages
 * for them then.  A scan that LIMIT stops earlier never looks for them.
 *
 * Each returned row carries a lower bound of its exact distance
 * (xs_recheckorderby): the executor computes the exact distance from the
 * heap row and reorders.  The executor emits a row once no later bound
 * can be below its exact distance, so with bounds that never decrease (late
 * nodes skipped) rows come back in exact order.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>

#include "access/relscan.h"
#include "access/stratnum.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "vec.h"

/*
 * A scan that has met this fraction of the index's nodes (a filter the
 * index cannot apply keeps it going) reads the rest of the node pages at
 * once: from then on every node is found, so rows come back in bound order
 * with none late.  Far into a clustered graph a wider round often finds a
 * cluster nearer than rows already returned; strict order would skip all
 * of its rows.  Reading every page costs about what meeting this many nodes
 * through the graph did.
 */
#define VEC_SWEEP_FRACTION 8

typedef struct VecFound
{
	float		distance;		/* code distance */
	double		bound;			/* lower bound of the exact distance */
	double		upper;			/* upper bound of the exact distance (result_set_key) */
	ItemPointerData heaptid;
	bool		returned;		/* handed out, or skipped or held back as late */
	bool		late;			/* relaxed: held back, found after a row with a higher bound */
	bool		buffered;		/* an insert buffer entry, not a graph node */
} VecFound;

typedef struct VecScanOpaqueData
{
	MemoryContext scancxt;		/* reset at every rescan */
	const VecIndexInfo *info;
	VecIndexInfo rows_info;		/* layout of pages of NULL vector rows (vec.h) */
	VecQuery	query;
	bool		started;
	bool		done;
	bool		null_query;		/* every distance is NULL: return all rows */
	bool		swept;			/* every node page was read (see sweep_unvisited) */
	uint64		sweep_at;		/* nodes met past which the scan sweeps (next_round) */

	VecFilterKey *keys;			/* conditions on filter columns, all must hold */
	int			nkeys;
	bool		unsatisfiable;	/* a condition compares with NULL */

	/*
	 * With column = value (keys[list_key]) on a column that has filter
	 * lists: the filter list that nodes of that value are expanded through
	 * (VEC_FILTER_LIST), or -1 for the walk over layer 0 alone.  Until the
	 * first node of the value turns up (entered), the scan walks layer 0 to
	 * find one; from then on nodes of other values are set aside in
	 * bypassed, and walked only if the value's graph runs dry before the
	 * scan is satisfied.  Nodes of the value that fail other keys are
	 * expanded, not returned.
	 */
	int			link_list;
	int			list_key;
	bool		entered;
	VecCandidate *bypassed;
	int			nbypassed;
	int			maxbypassed;

	VecVisited	buffered;		/* heap TIDs of the insert buffer entries read */
	int			nbuffered;
	ItemPointerData *buffered_tids; /* null_query: those heap TIDs, in order */
	int			maxbuffered_tids;
	int			buffered_pos;

	VecHeap		candidates;		/* min-heap of nodes to expand */
	/*
	 * Nodes found farther than the result set's edge: no later step of the
	 * same round expands them, so they wait here, unsorted, for the next
	 * round instead of weighing on every heap operation (a filtered scan
	 * meets thousands).
	 */
	VecCandidate *deferred;
	int			ndeferred;
	int			maxdeferred;
	/*
	 * The first round walks layer 0 alone, as HNSW does; from the second on
	 * a node's links of its upper layers are followed too (see
	 * follow_upper_links).  upper holds the first round's expanded nodes that have
	 * upper layers, expanded there when the second round starts.
	 */
	int			rounds;			/* rounds run so far */
	bool		extra_given;	/* the row past the first round's set is out (ready_next_found) */
	VecCandidate *upper;
	int			nupper;
	int			maxupper;
	VecVisited	visited;
	VecFound   *found;			/* every live node met, in order of discovery */
	int			nfound;
	int			maxfound;
	int			width;			/* current round's result set size */
	double		last_bound;
	int64		nreturned;

	int		   *ready;			/* indexes into found[], ordered by bound */
	int			nready;
	int			ready_pos;
	bool		draining;		/* the search is over: ready holds the late nodes */
	bool		relaxed;		/* archer.vector_order = relaxed when the scan began */

	/* null_query: a walk over every node page */
	BlockNumber walk_blkno;
	OffsetNumber walk_offnum;

	/* rows whose vector is NULL, returned last (null_vectors: the index has them) */
	bool		null_vectors;
	bool		nulls_collected;	/* nulls holds every such row that meets the keys */
	ItemPointerData *nulls;		/* their heap TIDs */
	int			nnulls;
	int			maxnulls;
	int			nulls_pos;
} VecScanOpaqueData;

typedef VecScanOpaqueData *VecScanOpaque;

int			archer_vector_ef_search = 40;
int			archer_vector_max_scan_tuples = 20000;
int			archer_vector_order = VEC_ORDER_STRICT;

static const struct config_enum_entry vector_order_options[] = {
	{"strict", VEC_ORDER_STRICT, false},
	{"relaxed", VEC_ORDER_RELAXED, false},
	{NULL, 0, false}
};

static void sweep_unvisited(IndexScanDesc scan, bool nulls_only);

/* The settings of archer_vector scans (archer.ef_search and the rest) */
void
vec_scan_define_settings(void)
{
	DefineCustomIntVariable("archer.ef_search",
							"Width of the archer_vector search: higher finds more true neighbours, slower.",
							NULL, &archer_vector_ef_search, 40, 1, 10000,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("archer.vector_max_scan_tuples",
							"Rows after which an archer_vector scan starts no further search round (with a NOTICE).",
							"Filtered queries keep the scan going until enough rows pass the filter; this bounds the work. The round under way still returns its rows.",
							&archer_vector_max_scan_tuples, 20000, 1, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("archer.vector_order",
							 "Whether archer_vector scans return rows in exact distance order (strict) or may return rows found late out of order (relaxed).",
							 "strict skips a row the search finds only after it returned a farther one; relaxed returns such rows once the search has nothing else.",
							 &archer_vector_order, VEC_ORDER_STRICT, vector_order_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
}

IndexScanDesc
vec_beginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	VecScanOpaque so = palloc0(sizeof(VecScanOpaqueData));

	so->scancxt = AllocSetContextCreate(CurrentMemoryContext, "archer_vector scan",
										ALLOCSET_DEFAULT_SIZES);
	scan->opaque = so;
	scan->xs_orderbyvals = palloc0(sizeof(Datum) * Max(norderbys, 1));
	scan->xs_orderbynulls = palloc(sizeof(bool) * Max(norderbys, 1));
	return scan;
}

/*
 * The scan keys, on filter columns only (the vector column has ordering
 * operators alone), as int64 comparisons.  A comparison with NULL is never
 * true, so such a scan returns nothing.
 */
static void
prepare_filter_keys(IndexScanDesc scan)
{
	VecScanOpaque so = (VecScanOpaque) scan->opaque;
	const VecIndexInfo *info = so->info;

	so->keys = MemoryContextAlloc(so->scancxt, sizeof(VecFilterKey) * Max(scan->numberOfKeys, 1));
	so->nkeys = 0;
	so->unsatisfiable = false;
	so->link_list = -1;
	for (int i = 0; i < scan->numberOfKeys; i++)
	{
		ScanKey		key = &scan->keyData[i];
		VecFilterKey *filter;

		if (key->sk_flags & SK_ISNULL)
		{
			so->unsatisfiable = true;
			continue;
		}
		filter = &so->keys[so->nkeys++];
		Assert(key->sk_attno >= 2 && key->sk_attno <= info->nfilters + 1);
		filter->column = key->sk_attno - 2;
		filter->strategy = key->sk_strategy;
		filter->value = vec_filter_datum(OidIsValid(key->sk_subtype) ? key->sk_subtype :
										 info->filter_types[filter->column],
										 key->sk_argument);
		if (so->link_list < 0 && filter->strategy == BTEqualStrategyNumber &&
			info->filter_m > 0)
		{
			so->link_list = VEC_FILTER_LIST(filter->column);
			so->list_key = so->nkeys - 1;
		}
	}
}

/* Whether a node with these flags and filter values meets every scan key */
static bool
filters_match(VecScanOpaque so, uint8 flags, const int64 *values)
{
	return vec_filters_match(so->keys, so->nkeys, flags, values);
}

/* Whether a node with these flags and filter values is in the graph of the scan's filter list */
static bool
in_list_graph(VecScanOpaque so, uint8 flags, const int64 *values)
{
	return so->link_list >= 0 &&
		vec_filters_match(&so->keys[so->list_key], 1, flags, values);
}

/*
 * filters_match for a node on a locked page, laid out by layout (so->info,
 * or on a page of NULL vector rows so->rows_info)
 */
static bool
node_matches(VecScanOpaque so, const VecIndexInfo *layout, const VecNodeHeader *node)
{
	int64		values[VEC_MAX_FILTERS];

	for (int i = 0; i < layout->nfilters; i++)
		(void) vec_node_filter(node, layout, i, &values[i]);
	return filters_match(so, node->flags, values);
}

void
vec_rescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys, int norderbys)
{
	VecScanOpaque so = (VecScanOpaque) scan->opaque;

	if (orderbys && scan->numberOfOrderBys > 0)
		memmove(scan->orderByData, orderbys, scan->numberOfOrderBys * sizeof(ScanKeyData));
	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
	MemoryContextReset(so->scancxt);
	so->info = vec_index_info(scan->indexRelation);
	vec_null_rows_info(so->info, &so->rows_info);
	prepare_filter_keys(scan);
	so->started = false;
	so->done = false;
	so->swept = false;
	so->nfound = so->maxfound = so->nready = so->ready_pos = 0;
	so->draining = false;
	so->relaxed = archer_vector_order == VEC_ORDER_RELAXED;
	so->nbuffered = so->buffered_pos = 0;
	so->buffered_tids = NULL;
	so->maxbuffered_tids = 0;
	so->found = NULL;
	so->ready = NULL;
	so->deferred = NULL;
	so->ndeferred = so->maxdeferred = 0;
	so->rounds = 0;
	so->extra_given = false;
	so->upper = NULL;
	so->nupper = so->maxupper = 0;
	so->entered = false;
	so->bypassed = NULL;
	so->nbypassed = so->maxbypassed = 0;
	so->nreturned = 0;
	so->last_bound = -DBL_MAX;
	so->null_vectors = false;
	so->nulls_collected = false;
	so->nulls = NULL;
	so->nnulls = so->maxnulls = so->nulls_pos = 0;
	so->null_query = scan->numberOfOrderBys == 0 ||
		(scan->orderByData[0].sk_flags & SK_ISNULL) != 0;
	pgstat_count_index_scan(scan->indexRelation);
}

static void
add_found(VecScanOpaque so, float distance, const VecNodeHeader *header)
{
	VecFound   *found;

	if (so->nfound == so->maxfound)
	{
		so->maxfound = Max(so->maxfound * 2, 256);
		so->found = so->found ?
			repalloc_huge(so->found, sizeof(VecFound) * so->maxfound) :
			MemoryContextAlloc(so->scancxt, sizeof(VecFound) * so->maxfound);
	}
	found = &so->found[so->nfound++];
	found->distance = distance;
	vec_distance_bounds(&so->query, distance, header, &found->bound, &found->upper);
	found->heaptid = header->heaptid;
	found->returned = false;
	found->late = false;
	found->buffered = false;
}

/* A row whose vector is NULL, to return after all others */
static void
add_null_row(VecScanOpaque so, ItemPointer heaptid)
{
	if (so->nnulls == so->maxnulls)
	{
		so->maxnulls = Max(so->maxnulls * 2, 64);
		so->nulls = so->nulls ?
			repalloc_huge(so->nulls, sizeof(ItemPointerData) * so->maxnulls) :
			MemoryContextAllocHuge(so->scancxt, sizeof(ItemPointerData) * so->maxnulls);
	}
	so->nulls[so->nnulls++] = *heaptid;
}

/* A graph node whose row the scan already met as an insert buffer entry */
static bool
in_buffer(VecScanOpaque so, const VecNodeHeader *node)
{
	return so->nbuffered > 0 && vec_visited_contains(&so->buffered, (ItemPointer) &node->heaptid);
}

static void
buffer_entry_found(const VecNodeHeader *entry, void *arg)
{
	VecScanOpaque so = (VecScanOpaque) arg;

	if (!node_matches(so, so->info, entry) || !vec_visited_add(&so->buffered, (ItemPointer) &entry->heaptid))
		return;
	so->nbuffered++;
	if (so->null_query)
	{
		/* grown by doubling, huge: the buffer may hold millions of entries */
		if (so->nbuffered > so->maxbuffered_tids)
		{
			so->maxbuffered_tids = Max(so->maxbuffered_tids * 2, 256);
			so->buffered_tids = so->buffered_tids ?
				repalloc_huge(so->buffered_tids, sizeof(ItemPointerData) * so->maxbuffered_tids) :
				MemoryContextAllocHuge(so->scancxt, sizeof(ItemPointerData) * so->maxbuffered_tids);
		}
		so->buffered_tids[so->nbuffered - 1] = entry->heaptid;
	}
	else if (VEC_NODE_IS_NULL_VECTOR(so->info, entry->flags))
		add_null_row(so, (ItemPointer) &entry->heaptid);
	else
	{
		add_found(so, vec_query_distance(&so->query, vec_node_code((VecNodeHeader *) entry),
										 entry->flags), entry);
		so->found[so->nfound - 1].buffered = true;
	}
}

/*
 * The insert buffer's entries, all of them (they have no links to search
 * by): found, with their distances, before the graph search starts.  Graph
 * nodes of the same rows (merged meanwhile) are skipped later.
 */
static void
read_insert_buffer(IndexScanDesc scan, const VecMetaPageData *meta)
{
	VecScanOpaque so = (VecScanOpaque) scan->opaque;

	vec_visited_init(&so->buffered, 64);
	if (BlockNumberIsValid(meta->buffer.head))
		vec_buffer_scan(scan->indexRelation, so->info, buffer_entry_found, so);
}

/*
 * Push a node the search of layer 0 starts from (with its distance), and
 * find it if it meets the filter keys
 */
static void
add_start(IndexScanDesc scan, VecCandidate *start)
{
	VecScanOpaque so = (VecScanOpaque) scan->opaque;
	VecNodeHeader header;
	int64		filters[VEC_MAX_FILTERS];

	if (!vec_visited_add(&so->visited, &start->tid))
		return;
	vec_batch_distances(scan->indexRelation, so->info, &so->query, &start->tid, 1,
						&start->distance, &header, filters);
	start->matches = in_list_graph(so, header.flags, filters);
	start->level = header.level;
	so->entered |= start->matches;
	vec_heap_push(&so->candidates, start);
	if (!(header.flags & VEC_NODE_DELETED) && filters_match(so, header.flags, filters) &&
		!in_buffer(so, &header))
		add_found(so, start->distance, &header);
}

/* Set up the search: read the query and the insert buffer, descend to layer 0 */
static void
start_search(IndexScanDesc scan)
{
	VecScanOpaque so = (VecScanOpaque) scan->opaque;
	Relation	index = scan->indexRelation;
	MemoryContext oldcxt = MemoryContextSwitchTo(so->scancxt);
	VecMetaPageData meta;
	VecCandidate entry;
	VecCandidate seed;
	VecNodeHeader header;
	const float *q;
	int			dim;

	so->started = true;
	vec_read_meta(index, &meta);
	so->sweep_at = Max(meta.nnodes / VEC_SWEEP_FRACTION, 1);
	if (so->unsatisfiable)
	{
		so->done = true;
		MemoryContextSwitchTo(oldcxt);
		return;
	}
	so->null_vectors = so->info->null_vectors;
	/* no dimension, or no graph and no buffer: at most rows whose vector is NULL */
	if (so->info->dim == 0 ||
		(!ItemPointerIsValid(&meta.entry) && !BlockNumberIsValid(meta.buffer.head)))
	{
		so->done = true;
		MemoryContextSwitchTo(oldcxt);
		return;
	}
	q = vec_datum_values(so->info, scan->orderByData[0].sk_argument, &dim);
	vec_query_init(&so->query, so->info, q);

	/*
	 * Sized for a first round at this search width (a query meets about a
	 * dozen nodes per unit of width); both grow when the scan goes on.
	 * Larger first allocations cost more than they save: each query would
	 * zero fresh memory that malloc hands back to the kernel at its end.
	 */
	so->width = Max(archer_vector_ef_search, 1);
	vec_heap_init(&so->candidates, Min(so->width * 16, 1024), 1);
	vec_visited_init(&so->visited, Min(so->width * 16, 4096));
	read_insert_buffer(scan, &meta);
	if (ItemPointerIsValid(&meta.entry))
	{
		entry.tid = meta.entry;
		entry.distance = vec_node_distance(index, so->info, &so->query, &entry.tid, &header);
		seed.distance = FLT_MAX;
		for (int layer = meta.entry_level; layer > 0; layer--)
		{
			if (so->link_list >= 0)
				vec_descend_layer(index, so->info, &so->query, &so->keys[so->list_key], 1,
								  &entry, layer, &seed);
			else
				(void) vec_search_layer(index, so->info, &so->query, &entry, 1, 1, layer, &entry);
		}
		/* the descent's last node may be its seed as well: pushed once */
		if (seed.distance < FLT_MAX)
			add_start(scan, &seed);
		add_start(scan, &entry);
	}
	MemoryContextSwitchTo(oldcxt);
}

static int
found_bound_cmp(const void *a, const void *b, void *arg)
{
	const VecFound *found = (const VecFound *) arg;
	double		da = found[*(const int *) a].bound;
	double		db = found[*(const int *) b].bound;

	return (da > db) - (da < db);
}

/*
 * What ranks a found node in the result set: the upper bound of its exact
 * distance.  The result set holds the width found nodes of least upper
 * bound, so that it covers every node that may be among the width nearest
 * by exact distance; a candidate whose code distance lies beyond the
 * result set's largest upper bound is not expanded.  Ranked by code
 * distance instead, a set of lossy codes (float components) held too few
 * rows to let the executor emit LIMIT ef_search of them (it needs a later
 * row's bound above each row's exact distance), and every query went on
 * to a second, twice as wide round: a narrow search cost more than a wide
 * one.  Where no upper bound is known, or it is beyond float's range (an
 * inner product clamped for a huge query), the code distance ranks the
 * node.
 */
static float
result_set_key(const VecFound *found)
{
	return found->upper < FLT_MAX ? (float) found->upper : found->distance;
}

/*
 * The largest key (result_set_key) of the result set once it holds width
 * nodes, or FLT_MAX before: candidates farther than that cannot improve it.
 */
static float
result_set_limit(VecScanOpaque so, VecHeap *best)
{
	return best->count >= so->width ? best->items[0].distance : FLT_MAX;
}

/*
 * Ready to return: the found nodes whose code distance is within limit
 * (the result set's largest upper bound, result_set_key) not returned
 * yet, and those beyond it whose bound is below one of theirs, ordered by
 * bound.
 * A node's bound can lie far below its code distance (a large error: a
 * wide code, a buffer entry unlike the build's rows); left for a later
 * round, such a node would be late.
 */
static void
gather_ready(VecScanOpaque so, float limit)
{
	double		max_bound = -DBL_MAX;

	so->nready = 0;
	for (int i = 0; i < so->nfound; i++)
		if (!so->found[i].returned && so->found[i].distance <= limit)
		{
			so->ready[so->nready++] = i;
			max_bound = Max(max_bound, so->found[i].bound);
		}
	for (int i = 0; i < so->nfound; i++)
		if (!so->found[i].returned && so->found[i].distance > limit &&
			so->found[i].bound <= max_bound)
			so->ready[so->nready++] = i;
	qsort_arg(so->ready, so->nready, sizeof(int), found_bound_cmp, so->found);
}

/*
 * Room in ready for every found node, in place of the last round's (a
 * scan runs many rounds); huge, as found is: a scan may meet every node
 */
static void
alloc_ready(VecScanOpaque so)
{
	if (so->ready)
		pfree(so->ready);
	so->ready = MemoryContextAllocHuge(so->scancxt, sizeof(int) * Max(so->nfound, 1));
}

/* Append a candidate to one of the scan's growing lists (deferred, bypassed) */
static void
append_candidate(VecScanOpaque so, VecCandidate **list, int *count, int *capacity,
				 const VecCandidate *candidate)
{
	if (*count == *capacity)
	{
		*capacity = Max(*capacity * 2, 256);
		*list = *list ?
			repalloc_huge(*list, sizeof(VecCandidate) * *capacity) :
			MemoryContextAlloc(so->scancxt, sizeof(VecCandidate) * *capacity);
	}
	(*list)[(*count)++] = *candidate;
}

/* Whether the graph search has nodes left to expand */
static bool
search_open(VecScanOpaque so)
{
	return so->candidates.count > 0 || so->ndeferred > 0 || so->nbypassed > 0 ||
		so->nupper > 0;
}

/*
 * The list to expand a candidate through: layer 0, the filter list of the
 * scan's value (for nodes of that value), or -1 for a node set aside (see
 * link_list)
 */
static int
expansion_list(VecScanOpaque so, const VecCandidate *candidate)
{
	if (so->link_list < 0)
		return 0;
	if (candidate->matches)
		return so->link_list;
	return so->entered ? -1 : 0;
}

/*
 * The value's graph ran dry with the result set not full (few nodes of
 * the value, or some its lists do not reach): walk layer 0 from the nodes
 * set aside, as a scan without filter lists does.
 */
static void
resume_full_walk(VecScanOpaque so)
{
	so->link_list = -1;
	for (int i = 0; i < so->nbypassed; i++)
		vec_heap_push(&so->candidates, &so->bypassed[i]);
	so->nbypassed = 0;
}

/*
 * Follow the links of one list of a node being expanded: nodes not met yet
 * become candidates (or wait in deferred, beyond the result set), and those
 * the scan may return are found and enter the result set best
 */
static void
follow_links(IndexScanDesc scan, const VecCandidate *current, int list, VecHeap *best)
{
	VecScanOpaque so = (VecScanOpaque) scan->opaque;
	Relation	index = scan->indexRelation;
	const VecIndexInfo *info = so->info;
	ItemPointerData links[VEC_MAX_BATCH];
	float		distances[VEC_MAX_BATCH];
	VecNodeHeader headers[VEC_MAX_BATCH];
	int64		filters[VEC_MAX_BATCH * VEC_MAX_FILTERS];
	ItemPointerData tid = current->tid;
	int			nlinks = vec_node_links(index, info, &tid, list, links);
	int			nfresh = 0;

	CHECK_FOR_INTERRUPTS();
	for (int i = 0; i < nlinks; i++)
		if (vec_visited_add(&so->visited, &links[i]))
			links[nfresh++] = links[i];
	vec_batch_distances(index, info, &so->query, links, nfresh, distances, headers,
						so->nkeys > 0 ? filters : NULL);
	for (int i = 0; i < nfresh; i++)
	{
		VecCandidate next;

		next.tid = links[i];
		next.distance = distances[i];
		next.matches = in_list_graph(so, headers[i].flags, &filters[i * VEC_MAX_FILTERS]);
		next.level = headers[i].level;
		so->entered |= next.matches;
		/* every node is kept: a later, wider round may want it */
		if (next.distance > result_set_limit(so, best))
			append_candidate(so, &so->deferred, &so->ndeferred, &so->maxdeferred, &next);
		else
			vec_heap_push(&so->candidates, &next);
		/* the search walks through nodes the filter keys reject, but never returns them */
		if ((headers[i].flags & VEC_NODE_DELETED) ||
			!filters_match(so, headers[i].flags, &filters[i * VEC_MAX_FILTERS]) ||
			in_buffer(so, &headers[i]))
			continue;
		add_found(so, next.distance, &headers[i]);
		next.distance = result_set_key(&so->found[so->nfound - 1]);
		if (next.distance < result_set_limit(so, best))
		{
			vec_heap_push(best, &next);
			if (best->count > so->width)
				(void) vec_heap_pop(best);
		}
	}
}

/*
 * Follow a node's upper layers' links.  On clustered data layer 0 often
 * has no link from one cluster to another: only the upper layers join
 * them (vec_reach.c).  A scan that goes on past its first round (a filter,
 * a large LIMIT) would otherwise run dry in the query's own clusters and
 * find the rest only by reading every page, after it returned farther rows
 * (late nodes, vec_gettuple).
 */
static void
follow_upper_links(IndexScanDesc scan, const VecCandidate *current, VecHeap *best)
{
	for (int layer = 1; layer <= Min(current->level, VEC_MAX_LAYERS - 1); layer++)
		follow_links(scan, current, layer, best);
}

/*
 * Follow the upper layers' links of the nodes the first round expanded
 * (upper): when the second round starts, or as soon as layer 0 alone has
 * nothing left to expand
 */
static void
expand_upper(IndexScanDesc scan, VecHeap *best)
{
	VecScanOpaque so = (VecScanOpaque) scan->opaque;

	for (int i = 0; i < so->nupper; i++)
		follow_upper_links(scan, &so->upper[i], best);
	so->nupper = 0;
}

/* One round: expand candidates until the result set of size width is stable */
static void
run_round(IndexScanDesc scan)
{
	VecScanOpaque so = (VecScanOpaque) scan->opaque;
	MemoryContext oldcxt = MemoryContextSwitchTo(so->scancxt);
	VecHeap		best;			/* max-heap of the width nearest found */
	float		whole_limit;	/* of the result set before the farther half goes */

	/*
	 * The result set is the graph's: buffer entries, all found up front,
	 * would otherwise stop the graph search before it starts.  They are
	 * returned with the graph nodes within the result set's distance.
	 */
	/* it grows as needed: the width may be far beyond the nodes there are */
	vec_heap_init(&best, Min(so->width, so->nfound + 1024) + 1, -1);
	for (int i = 0; i < so->nfound; i++)
	{
		VecCandidate c;

		if (so->found[i].buffered)
			continue;

		c.distance = result_set_key(&so->found[i]);
		ItemPointerSet(&c.tid, 0, 1);
		vec_heap_push(&best, &c);
		if (best.count > so->width)
			(void) vec_heap_pop(&best);
	}

	for (int i = 0; i < so->ndeferred; i++)
		vec_heap_push(&so->candidates, &so->deferred[i]);
	so->ndeferred = 0;
	so->rounds++;
	if (so->rounds == 2)
		expand_upper(scan, &best);

	for (;;)
	{
		VecCandidate current;
		int			list;

		if (so->candidates.count == 0 && so->nupper > 0)
			expand_upper(scan, &best);
		if (so->candidates.count == 0 && so->nbypassed > 0 && best.count < so->width)
			resume_full_walk(so);
		if (so->candidates.count == 0 ||
			so->candidates.items[0].distance > result_set_limit(so, &best))
			break;
		current = vec_heap_pop(&so->candidates);
		list = expansion_list(so, &current);
		if (list < 0)
		{
			append_candidate(so, &so->bypassed, &so->nbypassed, &so->maxbypassed, &current);
			continue;
		}
		follow_links(scan, &current, list, &best);
		if (list == 0 && current.level > 0)
		{
			if (so->rounds == 1)
				append_candidate(so, &so->upper, &so->nupper, &so->maxupper, &current);
			else
				follow_upper_links(scan, &current, &best);
		}
	}

	/*
	 * The graph search ran dry: read the node pages for what it could not
	 * reach before anything farther is handed out, or every node of an
	 * unreached part nearer than the farthest row of this round would be
	 * late
	 */
	if (!search_open(so) && !so->swept)
		sweep_unvisited(scan, false);

	/*
	 * After the first round, return the nearer half of the result set,
	 * ordered by bound, and keep the farther half for the next, wider
	 * round: the nodes a wider search finds late lie mostly near the edge
	 * of the result set, and a late node nearer than a row already
	 * returned is held back.  The first round returns its whole result set,
	 * as HNSW does: most queries need no second round.  Once the search
	 * cannot expand any more, everything found is ready.  When the nearer
	 * half holds nothing new (the usual case of a second round: the
	 * executor wanted one row beyond the first round's set, to be sure of
	 * the last one it returns), the farther half is ready after all:
	 * another, twice as wide round would only find the same nodes.
	 */
	/* buffer entries beyond the graph's farthest node are ready too */
	whole_limit = search_open(so) ? best.items[0].distance : FLT_MAX;
	if (search_open(so) && so->nreturned > 0)
		while (best.count > Max(so->width / 2, 1))
			(void) vec_heap_pop(&best);
	alloc_ready(so);
	gather_ready(so, search_open(so) ? best.items[0].distance : FLT_MAX);
	if (so->nready == 0)
		gather_ready(so, whole_limit);
	so->ready_pos = 0;
	MemoryContextSwitchTo(oldcxt);
}

/*
 * The graph search ran dry, or went far (VEC_SWEEP_FRACTION): what it has
 * not reached (a cluster no link leads into, nodes cut off while VACUUM
 * relinks, the far side of the index) is still in the index.  Read every
 * node page once and add the live nodes not met yet, so that a filtered
 * query still fills its LIMIT when matching rows exist; note the rows
 * whose vector is NULL on the way.  With nulls_only (the search is over)
 * only those.
 */
static void
sweep_unvisited(IndexScanDesc scan, bool nulls_only)
{
	VecScanOpaque so = (VecScanOpaque) scan->opaque;
	Relation	index = scan->indexRelation;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	MemoryContext oldcxt = MemoryContextSwitchTo(so->scancxt);

	so->swept |= !nulls_only;
	for (BlockNumber blkno = ARCHER_META_BLKNO + 1; blkno < nblocks; blkno++)
	{
		Buffer		buf = vec_read_row_page(index, so->info, blkno);
		Page		page;
		const VecIndexInfo *layout;

		CHECK_FOR_INTERRUPTS();
		if (!BufferIsValid(buf))
			continue;
		page = BufferGetPage(buf);
		layout = vec_page_layout(page, so->info, &so->rows_info);
		for (OffsetNumber off = FirstOffsetNumber; off <= PageGetMaxOffsetNumber(page); off++)
		{
			VecNodeHeader *node = vec_page_row(index, page, blkno, off, layout);
			ItemPointerData tid;

			ItemPointerSet(&tid, blkno, off);
			if (node->flags & VEC_NODE_DELETED)
				continue;
			if (VEC_NODE_IS_NULL_VECTOR(so->info, node->flags))
			{
				if (so->null_vectors && !so->nulls_collected && node_matches(so, layout, node) &&
					!in_buffer(so, node))
					add_null_row(so, &node->heaptid);
				continue;
			}
			if (nulls_only || !vec_visited_add(&so->visited, &tid) ||
				!node_matches(so, layout, node) || in_buffer(so, node))
				continue;
			add_found(so, vec_query_distance(&so->query, vec_node_code(node), node->flags), node);
		}
		UnlockReleaseBuffer(buf);
	}
	so->nulls_collected = true;
	if (nulls_only)
	{
		MemoryContextSwitchTo(oldcxt);
		return;
	}
	/* every node is found: the graph has nothing left to lead to */
	so->candidates.count = 0;
	so->ndeferred = 0;
	so->nbypassed = 0;
	so->nupper = 0;
	MemoryContextSwitchTo(oldcxt);
}

/* Whether the scan may return another row (archer.vector_max_scan_tuples) */
static bool
budget_left(VecScanOpaque so)
{
	if (so->nreturned < archer_vector_max_scan_tuples)
		return true;
	ereport(NOTICE,
			(errmsg("archer_vector scan stopped after %lld rows",
					(long long) so->nreturned),
			 errdetail("archer.vector_max_scan_tuples limits how many rows one scan returns; the query may return fewer rows than requested."),
			 errhint("Raise archer.vector_max_scan_tuples for very selective filters.")));
	return false;
}

/*
 * One row past the first round's result set, before a second round.  A
 * query with LIMIT k at ef_search k has its k rows after the first round,
 * but the executor asks for one more row to be sure of the last: it emits
 * a row once a later row's bound is at least its exact distance.  The found
 * node of least bound that the round met but left out of its result set
 * usually answers that without a wider search, which would otherwise make
 * a narrow search cost more than the next wider one.  Only one: it raises
 * the last bound, below which a later round's nodes are late, so a query
 * that wants more rows than the first round's set (LIMIT above
 * ef_search, or a filter the index cannot apply) loses few.
 */
static bool
ready_next_found(VecScanOpaque so)
{
	int			next = -1;

	if (so->rounds != 1 || so->extra_given)
		return false;
	for (int i = 0; i < so->nfound; i++)
		if (!so->found[i].returned && (next < 0 || so->found[i].bound < so->found[next].bound))
			next = i;
	if (next < 0)
		return false;
	so->extra_given = true;
	so->ready[0] = next;
	so->nready = 1;
	so->ready_pos = 0;
	return true;
}

/* Prepare the next round; false when the index or the budget is exhausted */
static bool
next_round(IndexScanDesc scan)
{
	VecScanOpaque so = (VecScanOpaque) scan->opaque;
	bool		more_found = false;

	if (!so->swept && (!search_open(so) || so->visited.count >= so->sweep_at))
		sweep_unvisited(scan, false);
	for (int i = 0; i < so->nfound && !more_found; i++)
		more_found = !so->found[i].returned;
	if (!search_open(so) && !more_found)
		return false;
	if (!budget_left(so))
	{
		/* a scan cut short returns no rows after the cut */
		so->null_vectors = false;
		return false;
	}
	if (so->width < INT_MAX / 2)
		so->width *= 2;
	return true;
}

/*
 * archer.vector_order = relaxed: the search is over and the executor still
 * wants rows: hand out the nodes held back as late after all, ordered by
 * bound.  They may come out of exact order (the executor has already
 * passed rows farther away), but a query whose WHERE clause the index
 * cannot apply then still gets as many rows as match, rather than fewer
 * than LIMIT.
 */
static void
ready_late_nodes(IndexScanDesc scan)
{
	VecScanOpaque so = (VecScanOpaque) scan->opaque;

	so->draining = true;
	alloc_ready(so);
	so->nready = 0;
	so->ready_pos = 0;
	for (int i = 0; i < so->nfound; i++)
		if (so->found[i].late)
			so->ready[so->nready++] = i;
	qsort_arg(so->ready, so->nready, sizeof(int), found_bound_cmp, so->found);
}

/*
 * With a NULL query every distance is NULL: return every row, the insert
 * buffer's first, then the graph's in page order
 */
static bool
next_any_node(IndexScanDesc scan, ItemPointer heaptid)
{
	VecScanOpaque so = (VecScanOpaque) scan->opaque;
	Relation	index = scan->indexRelation;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);

	if (!so->started)
	{
		VecMetaPageData meta;
		MemoryContext oldcxt = MemoryContextSwitchTo(so->scancxt);

		so->started = true;
		so->walk_blkno = ARCHER_META_BLKNO + 1;
		so->walk_offnum = FirstOffsetNumber;
		vec_read_meta(index, &meta);
		read_insert_buffer(scan, &meta);
		MemoryContextSwitchTo(oldcxt);
	}
	/* the insert buffer's rows first, then the graph's others */
	if (so->buffered_pos < so->nbuffered)
	{
		*heaptid = so->buffered_tids[so->buffered_pos++];
		return true;
	}
	while (so->walk_blkno < nblocks)
	{
		Buffer		buf;
		Page		page;
		const VecIndexInfo *layout;

		/* a filter may reject the rows of every page */
		CHECK_FOR_INTERRUPTS();
		buf = vec_read_row_page(index, so->info, so->walk_blkno);

		if (!BufferIsValid(buf))
		{
			so->walk_blkno++;
			continue;
		}
		page = BufferGetPage(buf);
		layout = vec_page_layout(page, so->info, &so->rows_info);
		while (so->walk_offnum <= PageGetMaxOffsetNumber(page))
		{
			ItemId		itemid = PageGetItemId(page, so->walk_offnum++);
			VecNodeHeader *node;

			if (!ItemIdIsNormal(itemid))
				continue;
			node = vec_page_row(index, page, so->walk_blkno, so->walk_offnum - 1, layout);
			if ((node->flags & VEC_NODE_DELETED) || !node_matches(so, layout, node) ||
				in_buffer(so, node))
				continue;
			*heaptid = node->heaptid;
			UnlockReleaseBuffer(buf);
			return true;
		}
		UnlockReleaseBuffer(buf);
		so->walk_blkno++;
		so->walk_offnum = FirstOffsetNumber;
	}
	return false;
}

bool
vec_gettuple(IndexScanDesc scan, ScanDirection dir)
{
	VecScanOpaque so = (VecScanOpaque) scan->opaque;

	if (so->null_query)
	{
		if (so->unsatisfiable || !next_any_node(scan, &scan->xs_heaptid))
			return false;
		scan->xs_orderbyvals[0] = (Datum) 0;
		scan->xs_orderbynulls[0] = true;
		scan->xs_recheckorderby = false;
		scan->xs_recheck = false;
		if (scan->xs_want_itup)
			archer_set_empty_itup(scan);
		return true;
	}

	if (!so->started)
	{
		start_search(scan);
		if (!so->done)
			run_round(scan);
	}
	while (!so->done)
	{
		while (so->ready_pos < so->nready)
		{
			VecFound   *found = &so->found[so->ready[so->ready_pos++]];

			found->returned = true;
			/*
			 * found late, nearer than a row already returned: skip it
			 * (strict), or hold it back for the end (relaxed)
			 */
			if (found->bound < so->last_bound && !so->draining)
			{
				found->late = so->relaxed;
				continue;
			}
			so->last_bound = Max(so->last_bound, found->bound);
			so->nreturned++;
			scan->xs_heaptid = found->heaptid;
			scan->xs_orderbyvals[0] = Float8GetDatum(found->bound);
			scan->xs_orderbynulls[0] = false;
			scan->xs_recheckorderby = true;
			scan->xs_recheck = false;
			return true;
		}
		if (!so->draining && ready_next_found(so))
			continue;
		if (!so->draining && next_round(scan))
			run_round(scan);
		else if (so->relaxed && !so->draining &&
				 so->nreturned < archer_vector_max_scan_tuples)
			ready_late_nodes(scan);
		else
			so->done = true;
	}

	/* every row with a distance is out: the rows whose vector is NULL */
	if (so->null_vectors)
	{
		if (!so->nulls_collected)
			sweep_unvisited(scan, true);
		if (so->nulls_pos < so->nnulls && budget_left(so))
		{
			so->nreturned++;
			scan->xs_heaptid = so->nulls[so->nulls_pos++];
			scan->xs_orderbyvals[0] = (Datum) 0;
			scan->xs_orderbynulls[0] = true;
			scan->xs_recheckorderby = false;
			scan->xs_recheck = false;
			return true;
		}
		so->null_vectors = false;
	}
	return false;
}

void
vec_endscan(IndexScanDesc scan)
{
	VecScanOpaque so = (VecScanOpaque) scan->opaque;

	MemoryContextDelete(so->scancxt);
	pfree(so);
}
