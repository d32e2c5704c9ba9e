/*-------------------------------------------------------------------------
 *
 * vec_build.c
 *	  CREATE INDEX for archer_vector.
 *
 * Two passes over the table.  The first collects each dimension's range,
 * which fixes the 8-bit quantizer.  The second encodes every row and
 * inserts it into an HNSW graph held in local memory (codes, links and
 * link distances: about dim + 16 m * 4 bytes a row), then each filter
 * column's filter lists (vec.h: the nodes of each value linked among
 * themselves, like layer 0), then the graph is laid out on pages and
 * WAL-logged at once with log_newpage_range.  When the graph would not
 * fit in maintenance_work_mem, a NOTICE says so and the rows are inserted
 * one by one into the on-disk graph instead: slower, but bounded in
 * memory.
 *
 * Parallel build.  When the planner grants workers
 * (max_parallel_maintenance_workers, plan_create_index_workers), the graph
 * lives in a dynamic shared memory segment of its own instead, and the
 * leader and its workers each insert the rows a parallel heap scan hands
 * them (the first pass stays serial: it is a fraction of the work).  Node
 * numbers and link slots are taken from atomic counters (every node's
 * layer 0 and filter lists have room; the layers above draw on a budget,
 * and a node gets a lower level when it runs short); a node is written
 * whole before any other node links to it, so readers only meet finished
 * nodes.  A node's link lists (every layer and filter list) are guarded
 * by one of VEC_BUILD_LOCKS striped LWLocks, node % VEC_BUILD_LOCKS: a
 * search copies a list under the lock in share mode, a link change holds
 * it exclusively, and no process ever holds two of them, so they cannot
 * deadlock.  The entry point is read and replaced under a spinlock (two
 * nodes above its level inserted at once: the one that does not become
 * the entry point stays unlinked on the layers above the old entry
 * point's, which costs search quality a little, never an answer).  An
 * insert searches every layer first and links afterwards, so no other
 * process can reach the node before its own lists are written.  The filter
 * lists, the orphans' reconnection and the pages are then the leader's,
 * serially, on the shared arrays.  Each worker's search scratch (4 bytes a
 * row, and a candidate heap as large as a search needs) comes on top of
 * maintenance_work_mem's graph.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "access/parallel.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "commands/progress.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "storage/dsm.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "vec.h"

#define VEC_PHASE_RANGES		2
#define VEC_PHASE_GRAPH			3
#define VEC_PHASE_PAGES			4
#define VEC_PHASE_WAL			5

/* a parallel build's lock stripes over the nodes' link lists */
#define VEC_BUILD_LOCKS			1024

#define VEC_PARALLEL_KEY_GRAPH		UINT64CONST(0xA7E1000000000011)
#define VEC_PARALLEL_KEY_SCAN		UINT64CONST(0xA7E1000000000012)

/* In-memory graph */
typedef struct BuildNode
{
	ItemPointerData heaptid;
	uint8		level;
	uint8		flags;
	float		error;
	float		norm;
	int64		first_link;		/* index of its layer-0 slots in the link arrays */
	int64		filters[VEC_MAX_FILTERS];
	ItemPointerData tid;		/* where it lands on disk */
} BuildNode;

/*
 * What the participants of a parallel build share, in a DSM segment of its
 * own (the graph can be far larger than what the parallel context's
 * segment falls back to when no segment is left: then the build is
 * serial): this header, then the quantizer's ranges (min[] then max[]) and
 * the graph's arrays, at the offsets below from the header's start.  The
 * parallel context's segment holds its handle.
 */
typedef struct VecBuildShared
{
	Oid			heaprelid;
	Oid			indexrelid;
	bool		isconcurrent;
	int			dim;
	int64		maxnodes;
	int64		maxlinks;
	Size		ranges_offset;
	Size		nodes_offset;
	Size		codes_offset;
	Size		links_offset;
	Size		dist_offset;
	pg_atomic_uint64 nnodes;	/* nodes numbered so far */
	pg_atomic_uint64 nlinks;	/* link slots handed out so far */
	pg_atomic_uint64 spare_links;	/* slots left for layers above 0 */
	pg_atomic_uint64 lowered;	/* nodes that got a lower level for want of them */
	pg_atomic_uint64 worker_rows;	/* rows the workers inserted */
	slock_t		mutex;
	int64		entry;			/* under mutex; -1 before the first node */
	int			entry_level;	/* under mutex */
	int			lock_tranche;
	LWLockPadded locks[VEC_BUILD_LOCKS];	/* node n's lists: n % VEC_BUILD_LOCKS */
} VecBuildShared;

typedef struct BuildState
{
	Relation	index;
	VecIndexInfo *info;
	/* pass 1 */
	float	   *min;
	float	   *max;
	double		nrows;			/* rows with a vector */
	double		nnulls;			/* rows whose vector is NULL */
	/* pass 2 */
	bool		in_memory;
	BuildNode  *nodes;
	int64		nnodes;
	int64		maxnodes;
	uint8	   *codes;
	int32	   *links;			/* node numbers, -1 = empty */
	float	   *link_dist;
	int64		nlinks;
	int64		maxlinks;
	int64		entry;
	int			entry_level;
	uint32	   *visit_mark;
	uint32		visit_stamp;
	int64		search_node;	/* the node whose neighbours the search looks for */
	VecGraphReader reader;		/* the graph as vec_layer_search reads it */
	VecLayerScratch scratch;
	MemoryContext tmpcxt;
	/* a parallel build's shared graph (nodes .. link_dist point into it), or NULL */
	VecBuildShared *shared;
	bool		report_progress;	/* false in parallel workers */
	int64		ninserted;		/* rows this process put in the graph */
} BuildState;

PGDLLEXPORT void archer_vector_build_worker(dsm_segment *seg, shm_toc *toc);

/* the LWLock tranche of this backend's parallel builds, made at the first */
static int	lock_tranche = 0;

char *
vec_buildphasename(int64 phasenum)
{
	switch (phasenum)
	{
		case PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE:
			return "initializing";
		case VEC_PHASE_RANGES:
			return "training quantizer";
		case VEC_PHASE_GRAPH:
			return "building graph";
		case VEC_PHASE_PAGES:
			return "writing pages";
		case VEC_PHASE_WAL:
			return "WAL-logging pages";
	}
	return NULL;
}

void
vec_init_meta_page(Page page, const VecIndexInfo *info, int quantizer_pages)
{
	VecMetaPageData *meta = archer_init_meta_page(page, ARCHER_VEC_PAGE_ID,
												  sizeof(VecMetaPageData));

	meta->dim = info->dim;
	meta->m = info->m;
	meta->ef_construction = info->ef_construction;
	meta->metric = info->metric;
	meta->filter_m = info->filter_m;
	ItemPointerSetInvalid(&meta->entry);
	meta->quantizer_pages = quantizer_pages;
	meta->insert_page = InvalidBlockNumber;
	meta->buffer.head = meta->buffer.tail = meta->buffer.free = InvalidBlockNumber;
	meta->meta_flags |= VEC_META_NULL_VECTORS;
}

/*
 * Write min[] then max[] on quantizer pages from block 1 on, through the
 * buffer manager without WAL (the caller logs them); returns the page count.
 */
int
vec_write_quantizer_pages(Relation index, const float *min, const float *max, int dim)
{
	int			per_page = ARCHER_PAGE_CAPACITY_BYTES / sizeof(float);
	int			total = 2 * dim;
	int			npages = 0;

	for (int start = 0; start < total; start += per_page)
	{
		PGAlignedBlock page;
		int			n = Min(per_page, total - start);
		float	   *values = (float *) ArcherPageGetEntries(page.data);

		archer_page_init(page.data, ARCHER_VEC_PAGE_ID, ARCHER_PAGE_QUANTIZER, 0);
		for (int i = 0; i < n; i++)
			values[i] = (start + i < dim) ? min[start + i] : max[start + i - dim];
		archer_page_set_nentries(page.data, sizeof(float), n);
		archer_write_new_page(index, ARCHER_META_BLKNO + 1 + npages, page.data);
		npages++;
	}
	return npages;
}

/* ---- pass 1: ranges ---- */

static void
range_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *state)
{
	BuildState *build = (BuildState *) state;
	MemoryContext oldcxt;
	const float *x;
	int			dim;

	if (isnull[0])
	{
		build->nnulls++;
		return;
	}
	oldcxt = MemoryContextSwitchTo(build->tmpcxt);
	x = vec_row_values(build->info, values[0], &dim);
	if (build->info->dim == 0)
	{
		vec_check_dim(build->info, dim);
		build->info->dim = dim;
		MemoryContextSwitchTo(oldcxt);
		build->min = palloc(sizeof(float) * dim);
		build->max = palloc(sizeof(float) * dim);
		archer_sq8_range_init(build->min, build->max, dim);
		MemoryContextSwitchTo(build->tmpcxt);
	}
	if (build->info->metric == VEC_METRIC_COSINE)
	{
		float	   *unit = palloc(sizeof(float) * dim);

		memcpy(unit, x, sizeof(float) * dim);
		if (archer_vec_normalize(unit, dim) > 0)
			archer_sq8_range_add(build->min, build->max, unit, dim);
	}
	else
		archer_sq8_range_add(build->min, build->max, x, dim);
	build->nrows++;
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(build->tmpcxt);
}

/* ---- the in-memory graph ---- */

#define VEC_MIN_INDEGREE		2

static int
layer_slots(const VecIndexInfo *info, int layer)
{
	if (VEC_IS_FILTER_LIST(layer))
		return info->filter_m;
	return layer == 0 ? 2 * info->m : info->m;
}

/* Where a node's slots of a layer or filter list start, laid out as on pages (vec.h) */
static int64
link_offset(const BuildState *build, int64 node, int layer)
{
	const VecIndexInfo *info = build->info;
	int64		first = build->nodes[node].first_link;

	if (layer == 0)
		return first;
	if (VEC_IS_FILTER_LIST(layer))
		return first + 2 * info->m + (int64) (layer - VEC_FILTER_LIST(0)) * info->filter_m;
	return first + 2 * info->m + info->nfilters * info->filter_m + (int64) (layer - 1) * info->m;
}

/* Whether a node is on a layer, or on a filter column's graph (its value is not NULL) */
static bool
on_list(const BuildState *build, int64 node, int layer)
{
	if (VEC_NODE_IS_NULL_VECTOR(build->info, build->nodes[node].flags))
		return false;
	if (VEC_IS_FILTER_LIST(layer))
		return !(build->nodes[node].flags & VEC_NODE_FILTER_NULL(layer - VEC_FILTER_LIST(0)));
	return build->nodes[node].level >= layer;
}

/* A parallel build's lock on a node's link lists; nothing in a serial build */
static inline void
lock_lists(const BuildState *build, int64 node, LWLockMode mode)
{
	if (build->shared != NULL)
		LWLockAcquire(&build->shared->locks[node % VEC_BUILD_LOCKS].lock, mode);
}

static inline void
unlock_lists(const BuildState *build, int64 node)
{
	if (build->shared != NULL)
		LWLockRelease(&build->shared->locks[node % VEC_BUILD_LOCKS].lock);
}

static float
node_distance(const BuildState *build, int64 a, int64 b)
{
	int			dim = build->info->dim;

	return vec_code_distance(build->info, build->codes + a * dim, build->nodes[a].flags,
							 build->codes + b * dim, build->nodes[b].flags);
}

static bool
same_code(const BuildState *build, int64 a, int64 b)
{
	int			dim = build->info->dim;

	return vec_same_code(build->info, build->codes + a * dim, build->nodes[a].flags,
						 build->codes + b * dim, build->nodes[b].flags);
}

/* ---- the graph as the HNSW core reads it (VecGraphReader) ---- */

static bool
first_visit(void *arg, uint64 id)
{
	BuildState *build = arg;

	if (build->visit_mark[id] == build->visit_stamp)
		return false;
	build->visit_mark[id] = build->visit_stamp;
	return true;
}

/* The build's graph has no deleted nodes: every node is returnable */
static int
new_links(void *arg, uint64 id, int layer, uint64 *links, float *distances, bool *returnable)
{
	BuildState *build = arg;
	int			slots = layer_slots(build->info, layer);
	int64		off = link_offset(build, id, layer);
	int32		copy[VEC_MAX_BATCH];
	int			nnew = 0;

	Assert(slots <= VEC_MAX_BATCH);
	lock_lists(build, id, LW_SHARED);
	memcpy(copy, build->links + off, sizeof(int32) * slots);
	unlock_lists(build, id);
	for (int s = 0; s < slots && copy[s] >= 0; s++)
	{
		if (!first_visit(build, copy[s]))
			continue;
		links[nnew] = copy[s];
		distances[nnew] = node_distance(build, build->search_node, copy[s]);
		returnable[nnew] = true;
		nnew++;
	}
	return nnew;
}

/*
 * SEARCH-LAYER over the in-memory graph (vec_layer_search): keeps the ef
 * nearest to node q in found[] (sorted ascending); found[0..nfound) seed it
 */
static int
mem_search_layer(BuildState *build, int64 q, VecLayerNode *found, int nfound, int ef,
				 int layer)
{
	build->visit_stamp++;
	build->search_node = q;
	return vec_layer_search(&build->reader, &build->scratch, found, nfound, ef, layer);
}

/* Candidates of select_neighbors, for between_candidates */
typedef struct CandidateList
{
	const BuildState *build;
	const VecLayerNode *sorted;
} CandidateList;

/* Candidate a's distance to candidate b: a VecPairDistance */
static float
between_candidates(void *arg, int a, int b)
{
	CandidateList *list = arg;

	return node_distance(list->build, list->sorted[a].id, list->sorted[b].id);
}

/* HNSW's neighbour selection (vec_diversity_select) over sorted candidates */
static int
select_neighbors(BuildState *build, VecLayerNode *sorted, int ncand, int max,
				 VecLayerNode *selected)
{
	CandidateList list = {build, sorted};
	float	   *distance = palloc(sizeof(float) * Max(ncand, 1));
	int		   *chosen = palloc(sizeof(int) * Max(max, 1));
	int			nselected;

	for (int i = 0; i < ncand; i++)
		distance[i] = sorted[i].distance;
	nselected = vec_diversity_select(distance, ncand, max, between_candidates, &list, chosen);
	for (int i = 0; i < nselected; i++)
		selected[i] = sorted[chosen[i]];
	pfree(distance);
	pfree(chosen);
	return nselected;
}

/* A node about to be linked from a full list, for between_newcomer */
typedef struct Newcomer
{
	const BuildState *build;
	int64		node;
	const int32 *links;			/* the list's */
} Newcomer;

/* The newcomer's distance to a slot's node: a VecSlotDistance */
static float
between_newcomer(void *arg, int slot)
{
	Newcomer   *newcomer = arg;

	return node_distance(newcomer->build, newcomer->node, newcomer->links[slot]);
}

/*
 * Link from -> to at a layer: into a free slot, or by the diversity rule
 * when the list is full (vec_choose_slot).  Returns whether it linked.  The
 * caller holds from's lists.
 */
static bool
add_link_locked(BuildState *build, int64 from, int64 to, float distance, int layer, bool force)
{
	int64		off = link_offset(build, from, layer);
	int			slots = layer_slots(build->info, layer);
	Newcomer	newcomer = {build, to, build->links + off};
	bool		is_copy[VEC_MAX_BATCH];
	int			slot;

	for (int s = 0; s < slots; s++)
	{
		if (build->links[off + s] < 0)
		{
			build->links[off + s] = to;
			build->link_dist[off + s] = distance;
			return true;
		}
	}
	for (int s = 0; s < slots; s++)
		is_copy[s] = same_code(build, from, build->links[off + s]);
	slot = vec_choose_slot(build->link_dist + off, is_copy, slots, distance,
						   same_code(build, from, to), force, between_newcomer, &newcomer,
						   NULL);
	if (slot < 0)
		return false;
	build->links[off + slot] = to;
	build->link_dist[off + slot] = distance;
	return true;
}

static bool
add_link(BuildState *build, int64 from, int64 to, float distance, int layer, bool force)
{
	bool		linked;

	lock_lists(build, from, LW_EXCLUSIVE);
	linked = add_link_locked(build, from, to, distance, layer, force);
	unlock_lists(build, from);
	return linked;
}

/*
 * Give node q the selected neighbours on a layer (or filter list) whose
 * slots are empty; the caller holds q's lists
 */
static void
set_links(BuildState *build, int64 q, const VecLayerNode *selected, int nselected, int layer)
{
	int64		off = link_offset(build, q, layer);

	for (int i = 0; i < nselected; i++)
	{
		build->links[off + i] = selected[i].id;
		build->link_dist[off + i] = selected[i].distance;
	}
}

/*
 * Link q's selected neighbours back to it; if all of them turn it down,
 * the nearest links to it all the same (a node nobody links to is never
 * found)
 */
static void
link_back(BuildState *build, int64 q, const VecLayerNode *selected, int nselected, int layer)
{
	bool		linked = false;

	for (int i = 0; i < nselected; i++)
		linked |= add_link(build, selected[i].id, q, selected[i].distance, layer, false);
	if (!linked && nselected > 0)
		(void) add_link(build, selected[0].id, q, selected[0].distance, layer, true);
}

/*
 * Node q of the given level becomes the entry point if there is none yet
 * or (raise) it lies above the entry point's top layer.  Returns the entry
 * point from before, -1 if there was none, with its level in *entry_level.
 * A parallel build's entry point is the shared one, under its spinlock.
 */
static int64
update_entry(BuildState *build, int64 q, int level, bool raise, int *entry_level)
{
	VecBuildShared *shared = build->shared;
	int64	   *current = shared ? &shared->entry : &build->entry;
	int		   *current_level = shared ? &shared->entry_level : &build->entry_level;
	int64		before;

	if (shared)
		SpinLockAcquire(&shared->mutex);
	before = *current;
	*entry_level = *current_level;
	if (before < 0 || (raise && level > *current_level))
	{
		*current = q;
		*current_level = level;
	}
	if (shared)
		SpinLockRelease(&shared->mutex);
	return before;
}

/*
 * Insert node q: search every layer from the top for its neighbours, then
 * write its own lists, then link the neighbours back.  Searches never meet
 * q (no list holds it before its back links), so this is the order of
 * search and linking layer by layer, and in a parallel build no other
 * process reaches q before its lists are written.
 */
static void
mem_insert(BuildState *build, int64 q)
{
	const VecIndexInfo *info = build->info;
	int			level = build->nodes[q].level;
	int			ef = Max(info->ef_construction, 2 * info->m);
	VecLayerNode *found;
	VecLayerNode *selected[VEC_MAX_LAYERS];
	int			nselected[VEC_MAX_LAYERS];
	int64		entry;
	int			entry_level;
	int			top;
	int			nfound;

	/* the first node is the entry point, and links to nothing yet */
	entry = update_entry(build, q, level, false, &entry_level);
	if (entry < 0)
		return;

	found = palloc(sizeof(VecLayerNode) * (ef + 1));
	found[0].id = entry;
	found[0].distance = node_distance(build, q, entry);
	nfound = 1;
	for (int layer = entry_level; layer > level; layer--)
		nfound = mem_search_layer(build, q, found, 1, 1, layer);

	top = Min(level, entry_level);
	for (int layer = top; layer >= 0; layer--)
	{
		int			slots = layer_slots(info, layer);

		selected[layer] = palloc(sizeof(VecLayerNode) * slots);
		nfound = mem_search_layer(build, q, found, nfound, ef, layer);
		nselected[layer] = select_neighbors(build, found, nfound, slots, selected[layer]);
	}
	lock_lists(build, q, LW_EXCLUSIVE);
	for (int layer = top; layer >= 0; layer--)
		set_links(build, q, selected[layer], nselected[layer], layer);
	unlock_lists(build, q);
	for (int layer = top; layer >= 0; layer--)
	{
		link_back(build, q, selected[layer], nselected[layer], layer);
		pfree(selected[layer]);
	}
	(void) update_entry(build, q, level, true, &entry_level);
	pfree(found);
}

/*
 * Link into node from the nearest of its neighbours that does not link to
 * it yet and whose list can spare a slot: a free one, or the farthest link
 * to a node that enough others link to as well.  Returns whether it found
 * one.
 */
static bool
adopt_orphan(BuildState *build, int64 node, int layer, int32 *indegree)
{
	int64		off = link_offset(build, node, layer);
	int			slots = layer_slots(build->info, layer);
	bool		tried[VEC_MAX_BATCH] = {false};

	for (;;)
	{
		int			best = -1;
		int64		owner;
		int64		owner_off;
		int			victim = -1;

		for (int s = 0; s < slots && build->links[off + s] >= 0; s++)
			if (!tried[s] && (best < 0 || build->link_dist[off + s] < build->link_dist[off + best]))
				best = s;
		if (best < 0)
			return false;
		tried[best] = true;
		owner = build->links[off + best];
		owner_off = link_offset(build, owner, layer);
		for (int s = 0; s < slots; s++)
		{
			int64		target = build->links[owner_off + s];

			if (target == node)
			{
				victim = -1;
				break;
			}
			if (target < 0)
			{
				victim = s;
				break;
			}
			if (indegree[target] > VEC_MIN_INDEGREE &&
				(victim < 0 || build->link_dist[owner_off + s] > build->link_dist[owner_off + victim]))
				victim = s;
		}
		if (victim < 0)
			continue;
		if (build->links[owner_off + victim] >= 0)
			indegree[build->links[owner_off + victim]]--;
		build->links[owner_off + victim] = node;
		build->link_dist[owner_off + victim] = build->link_dist[off + best];
		indegree[node]++;
		return true;
	}
}

/*
 * The diversity rule lets a newcomer take the slot of a link that was its
 * target's only way in, and a node nobody links to is never found by a
 * search (a few percent of the nodes on real data; a node with one way in
 * is hard to find).  After the last insert, link each node with fewer than
 * VEC_MIN_INDEGREE ways in on each of its layers from its neighbours.
 * Under inner product too, now that its graph is built in a space where
 * it is a metric (vec.h).
 */
static void
reconnect_orphans(BuildState *build)
{
	int32	   *indegree = palloc_extended(sizeof(int32) * build->nnodes, MCXT_ALLOC_HUGE);
	int			lists[VEC_MAX_LISTS];
	int			nlists = 0;

	for (int layer = 0; layer <= build->entry_level; layer++)
		lists[nlists++] = layer;
	for (int i = 0; i < build->info->nfilters && build->info->filter_m > 0; i++)
		lists[nlists++] = VEC_FILTER_LIST(i);
	for (int l = 0; l < nlists; l++)
	{
		int			layer = lists[l];

		memset(indegree, 0, sizeof(int32) * build->nnodes);
		for (int64 i = 0; i < build->nnodes; i++)
		{
			int64		off = link_offset(build, i, layer);

			if (!on_list(build, i, layer))
				continue;
			for (int s = 0; s < layer_slots(build->info, layer) && build->links[off + s] >= 0; s++)
				indegree[build->links[off + s]]++;
		}
		for (int64 i = 0; i < build->nnodes; i++)
		{
			/* each adoption is a search of the graph: millions of them can take long */
			CHECK_FOR_INTERRUPTS();
			while (on_list(build, i, layer) && indegree[i] < VEC_MIN_INDEGREE &&
				   (i != build->entry || VEC_IS_FILTER_LIST(layer)))
				if (!adopt_orphan(build, i, layer, indegree))
					break;
		}
	}
	pfree(indegree);
}

/*
 * The filter lists: for each filter column, the nodes of each value are
 * linked among themselves as HNSW links layer 0, inserted in build order.
 * A node's search starts from the nodes of its value among its layer-0
 * neighbours that are linked already (they are near it), and from the
 * first node of its value.
 */
static int
filter_member_cmp(const void *a, const void *b, void *arg)
{
	const int64 *values = (const int64 *) arg;
	int64		na = *(const int64 *) a;
	int64		nb = *(const int64 *) b;
	int64		va = values[na];
	int64		vb = values[nb];

	if (va != vb)
		return va < vb ? -1 : 1;
	return (na > nb) - (na < nb);
}

static void
link_filter_list(BuildState *build, int64 q, int64 first, int column, VecLayerNode *found,
				 VecLayerNode *selected)
{
	const VecIndexInfo *info = build->info;
	int			list = VEC_FILTER_LIST(column);
	int			ef = Max(info->ef_construction, 2 * info->m);
	int64		off0 = link_offset(build, q, 0);
	int64		value = build->nodes[q].filters[column];
	int			nfound = 0;
	int			nselected;

	found[nfound].id = first;
	found[nfound++].distance = node_distance(build, q, first);
	for (int s = 0; s < 2 * info->m && build->links[off0 + s] >= 0 && nfound < ef; s++)
	{
		int64		neighbor = build->links[off0 + s];

		if (neighbor < q && neighbor != first && on_list(build, neighbor, list) &&
			build->nodes[neighbor].filters[column] == value)
		{
			found[nfound].id = neighbor;
			found[nfound++].distance = build->link_dist[off0 + s];
		}
	}
	nfound = mem_search_layer(build, q, found, nfound, ef, list);
	nselected = select_neighbors(build, found, nfound, info->filter_m, selected);
	set_links(build, q, selected, nselected, list);
	link_back(build, q, selected, nselected, list);
}

static void
build_filter_lists(BuildState *build)
{
	const VecIndexInfo *info = build->info;
	int64	   *members = palloc_extended(sizeof(int64) * build->nnodes, MCXT_ALLOC_HUGE);
	int64	   *values = palloc_extended(sizeof(int64) * build->nnodes, MCXT_ALLOC_HUGE);
	int			ef = Max(info->ef_construction, 2 * info->m);
	VecLayerNode *found = palloc(sizeof(VecLayerNode) * (ef + 1));
	VecLayerNode *selected = palloc(sizeof(VecLayerNode) * info->filter_m);

	for (int column = 0; column < info->nfilters; column++)
	{
		int64		nmembers = 0;
		int64		end;

		for (int64 i = 0; i < build->nnodes; i++)
		{
			values[i] = build->nodes[i].filters[column];
			if (on_list(build, i, VEC_FILTER_LIST(column)))
				members[nmembers++] = i;
		}
		qsort_arg(members, nmembers, sizeof(int64), filter_member_cmp, values);
		for (int64 start = 0; start < nmembers; start = end)
		{
			for (end = start + 1;
				 end < nmembers && values[members[end]] == values[members[start]];
				 end++)
			{
				link_filter_list(build, members[end], members[start], column, found, selected);
				if (end % 1000 == 0)
					CHECK_FOR_INTERRUPTS();
			}
		}
	}
	pfree(members);
	pfree(values);
	pfree(found);
	pfree(selected);
}

/* ---- pass 2: encode and insert ---- */

/* The next node's number */
static int64
allocate_node(BuildState *build)
{
	int64		node;

	if (build->shared != NULL)
		node = (int64) pg_atomic_fetch_add_u64(&build->shared->nnodes, 1);
	else
		node = build->nnodes++;
	if (node >= build->maxnodes)
		elog(ERROR, "archer_vector build: more rows than counted in the first pass");
	return node;
}

static int
node_slots(const VecIndexInfo *info, int level)
{
	return 2 * info->m + info->nfilters * info->filter_m + level * info->m;
}

/*
 * Reserve a node's link slots, all set empty; returns the first.  A serial
 * build grows the arrays as needed.  A parallel build's arrays are fixed:
 * layer 0 and the filter lists of every node counted (node_slots at level
 * 0), and a budget of spare slots for the layers above, from which each
 * node takes what its level needs; should the budget run short, the node
 * gets a lower level.  Slots are handed out in the order nodes take them,
 * and never past the end: the budget and the nodes' own slots add up to
 * the arrays' size.
 */
static int64
reserve_links(BuildState *build, BuildNode *node)
{
	int64		first;
	int			nslots;

	if (build->shared == NULL)
	{
		nslots = node_slots(build->info, node->level);
		if (build->nlinks + nslots > build->maxlinks)
		{
			int64		newmax = Max(build->maxlinks * 2, build->nlinks + nslots);

			build->links = repalloc_huge(build->links, sizeof(int32) * newmax);
			build->link_dist = repalloc_huge(build->link_dist, sizeof(float) * newmax);
			build->maxlinks = newmax;
		}
		first = build->nlinks;
		build->nlinks += nslots;
	}
	else
	{
		VecBuildShared *shared = build->shared;
		uint64		spare = pg_atomic_read_u64(&shared->spare_links);
		bool		lowered = false;

		while (node->level > 0)
		{
			uint64		upper = (uint64) node->level * build->info->m;

			if (upper <= spare)
			{
				if (pg_atomic_compare_exchange_u64(&shared->spare_links, &spare, spare - upper))
					break;
			}
			else
			{
				node->level--;
				lowered = true;
			}
		}
		if (lowered)
			pg_atomic_fetch_add_u64(&shared->lowered, 1);
		nslots = node_slots(build->info, node->level);
		first = (int64) pg_atomic_fetch_add_u64(&shared->nlinks, nslots);
		Assert(first + nslots <= build->maxlinks);
	}
	for (int i = 0; i < nslots; i++)
		build->links[first + i] = -1;
	return first;
}

static void
graph_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *state)
{
	BuildState *build = (BuildState *) state;
	const VecIndexInfo *info = build->info;
	MemoryContext oldcxt;
	const float *x;
	int			dim;
	int64		q;
	BuildNode  *node;

	if (!build->in_memory)
	{
		vec_insert(index, values, isnull, tid, NULL, UNIQUE_CHECK_NO, false, NULL);
		build->nnodes++;
		return;
	}

	oldcxt = MemoryContextSwitchTo(build->tmpcxt);
	q = allocate_node(build);
	node = &build->nodes[q];
	node->heaptid = *tid;
	if (isnull[0])
	{
		/* a node of its own, linked to nothing (vec.h) */
		node->level = 0;
		node->flags = VEC_NODE_NULL_VECTOR;
		node->error = 0;
		node->norm = 0;
		memset(build->codes + q * info->dim, 0, info->dim);
	}
	else
	{
		x = vec_row_values(info, values[0], &dim);
		node->level = vec_random_level(info->m);
		while (node->level > 0 &&
			   vec_node_size(info, node->level) > (Size) ARCHER_PAGE_CAPACITY_BYTES - 64)
			node->level--;
		vec_encode(info, x, build->codes + q * info->dim, &node->error,
				   &node->norm, &node->flags);
	}
	vec_filter_values(info, values, isnull, node->filters, &node->flags);
	MemoryContextSwitchTo(oldcxt);
	node->first_link = reserve_links(build, node);
	MemoryContextSwitchTo(build->tmpcxt);

	if (!isnull[0])
		mem_insert(build, q);
	build->ninserted++;
	if (build->report_progress && (q + 1) % 1000 == 0)
		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, q + 1);
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(build->tmpcxt);
}

/*
 * The order nodes go on pages: breadth first over layer 0 from the entry
 * point, so that a node's neighbours mostly share pages with it and with
 * each other, and a search reads fewer distinct pages (vec_batch_distances
 * reads each page of a batch once).  Nodes no path reaches come last.
 */
static int64 *
page_order(BuildState *build)
{
	int64	   *order = palloc_extended(sizeof(int64) * build->nnodes, MCXT_ALLOC_HUGE);
	int64		head = 0;
	int64		tail = 0;
	int			slots = layer_slots(build->info, 0);

	build->visit_stamp++;
	order[tail++] = build->entry;
	build->visit_mark[build->entry] = build->visit_stamp;
	for (int64 next = 0; head < build->nnodes; head++)
	{
		int64		off;

		if ((head & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		if (head == tail)
		{
			/* unreached: the next node in insertion order not placed yet */
			while (build->visit_mark[next] == build->visit_stamp)
				next++;
			build->visit_mark[next] = build->visit_stamp;
			order[tail++] = next;
		}
		off = link_offset(build, order[head], 0);
		for (int s = 0; s < slots && build->links[off + s] >= 0; s++)
		{
			int64		neighbor = build->links[off + s];

			if (build->visit_mark[neighbor] != build->visit_stamp)
			{
				build->visit_mark[neighbor] = build->visit_stamp;
				order[tail++] = neighbor;
			}
		}
	}
	return order;
}

/* Lay nodes out on pages in the given order: sets each node's tid */
static void
assign_tids(BuildState *build, const int64 *order, BlockNumber first_blkno)
{
	BlockNumber blkno = first_blkno;
	Size		free_space = 0;
	OffsetNumber offnum = 0;
	Size		empty = BLCKSZ - MAXALIGN(SizeOfPageHeaderData) -
		MAXALIGN(sizeof(ArcherPageOpaqueData));

	for (int64 i = 0; i < build->nnodes; i++)
	{
		BuildNode  *node = &build->nodes[order[i]];
		Size		need = MAXALIGN(vec_node_size(build->info, node->level)) + sizeof(ItemIdData);

		if (need > free_space)
		{
			if (i > 0)
				blkno++;
			free_space = empty;
			offnum = FirstOffsetNumber;
		}
		ItemPointerSet(&node->tid, blkno, offnum++);
		free_space -= need;
	}
}

/* Write the nodes to pages in the order assign_tids placed them */
static void
write_node_pages(BuildState *build, const int64 *order, BlockNumber first_blkno)
{
	const VecIndexInfo *info = build->info;
	PGAlignedBlock page;
	BlockNumber current = first_blkno;
	char	   *tuple = palloc(BLCKSZ);

	archer_page_init(page.data, ARCHER_VEC_PAGE_ID, ARCHER_PAGE_NODES, 0);
	for (int64 n = 0; n < build->nnodes; n++)
	{
		int64		i = order[n];
		BuildNode  *src = &build->nodes[i];
		VecNodeHeader *node = (VecNodeHeader *) tuple;
		Size		size = vec_node_size(info, src->level);
		int			lists[VEC_MAX_LISTS];
		int			nlists;

		if (ItemPointerGetBlockNumber(&src->tid) != current)
		{
			archer_write_new_page(build->index, current, page.data);
			current = ItemPointerGetBlockNumber(&src->tid);
			archer_page_init(page.data, ARCHER_VEC_PAGE_ID, ARCHER_PAGE_NODES, 0);
		}
		memset(tuple, 0, size);
		node->heaptid = src->heaptid;
		node->level = src->level;
		node->flags = src->flags;
		node->error = src->error;
		node->norm = src->norm;
		memcpy(vec_node_code(node), build->codes + i * info->dim, info->dim);
		vec_node_set_filters(node, info, src->filters);
		nlists = vec_node_lists(node, info, lists);
		for (int l = 0; l < nlists; l++)
		{
			int			nslots;
			VecNeighbor *slots = vec_node_neighbors(node, info, lists[l], &nslots);
			int64		off = link_offset(build, i, lists[l]);

			for (int s = 0; s < nslots; s++)
			{
				if (build->links[off + s] < 0)
					ItemPointerSetInvalid(&slots[s].tid);
				else
				{
					slots[s].tid = build->nodes[build->links[off + s]].tid;
					slots[s].distance = build->link_dist[off + s];
				}
			}
		}
		if (PageAddItem(page.data, (Item) tuple, size, ItemPointerGetOffsetNumber(&src->tid),
						false, false) != ItemPointerGetOffsetNumber(&src->tid))
			elog(ERROR, "archer_vector build: could not place node %ld", (long) i);
		if (n % 1000 == 0)
			CHECK_FOR_INTERRUPTS();
	}
	if (build->nnodes > 0)
		archer_write_new_page(build->index, current, page.data);
	pfree(tuple);
}

static VecIndexInfo *
build_info(Relation index)
{
	VecIndexInfo *info = palloc0(sizeof(VecIndexInfo));
	VecOptions *options = (VecOptions *) index->rd_options;
	int32		typmod = TupleDescAttr(RelationGetDescr(index), 0)->atttypmod;

	info->m = options ? options->m : VEC_DEFAULT_M;
	info->ef_construction = options ? options->ef_construction : VEC_DEFAULT_EF_CONSTRUCTION;
	info->is_array = index->rd_opcintype[0] == FLOAT4ARRAYOID;
	vec_index_columns(index, info);
	info->filter_m = info->nfilters > 0 ? vec_filter_slots(info->m) : 0;
	info->null_vectors = true;	/* VEC_META_NULL_VECTORS, set by vec_init_meta_page */
	info->dim = (!info->is_array && typmod > 0) ? typmod : 0;
	/* the metric is the strategy of the opclass's operator */
	for (int strategy = 1; strategy <= VEC_NSTRATEGIES; strategy++)
		if (OidIsValid(get_opfamily_member(index->rd_opfamily[0], index->rd_opcintype[0],
										   index->rd_opcintype[0], strategy)))
			info->metric = strategy;
	vec_check_dim(info, info->dim);
	return info;
}

/* Memory the in-memory graph of nrows rows needs */
static double
graph_memory(const VecIndexInfo *info, double nrows)
{
	/* layer 0 plus the expected upper layers (1/(m-1) of a node's links) */
	double		links = nrows * (2.0 * info->m + info->nfilters * info->filter_m + 1.2);

	return nrows * (sizeof(BuildNode) + info->dim + sizeof(uint32)) +
		links * (sizeof(int32) + sizeof(float));
}

/* Each process's own search scratch */
static void
allocate_scratch(BuildState *build)
{
	build->visit_mark = palloc_extended(sizeof(uint32) * build->maxnodes,
										MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	vec_layer_scratch_init(&build->scratch, 1024);
	build->reader.new_links = new_links;
	build->reader.first_visit = first_visit;
	build->reader.arg = build;
}

/* Room for the links of maxnodes nodes at the levels expected, and more */
static int64
initial_links(const VecIndexInfo *info, int64 maxnodes)
{
	return maxnodes * (2 * info->m + info->m / 2 + 1 + info->nfilters * info->filter_m);
}

/* A serial build's graph, in local memory */
static void
allocate_local_graph(BuildState *build)
{
	build->nodes = palloc_extended(sizeof(BuildNode) * build->maxnodes, MCXT_ALLOC_HUGE);
	build->codes = palloc_extended((Size) build->maxnodes * build->info->dim, MCXT_ALLOC_HUGE);
	build->maxlinks = initial_links(build->info, build->maxnodes);
	build->links = palloc_extended(sizeof(int32) * build->maxlinks, MCXT_ALLOC_HUGE);
	build->link_dist = palloc_extended(sizeof(float) * build->maxlinks, MCXT_ALLOC_HUGE);
	allocate_scratch(build);
}

/* Point a participant's build state at the shared graph */
static void
attach_shared_graph(BuildState *build, VecBuildShared *shared)
{
	char	   *base = (char *) shared;

	build->shared = shared;
	build->maxnodes = shared->maxnodes;
	build->maxlinks = shared->maxlinks;
	build->nodes = (BuildNode *) (base + shared->nodes_offset);
	build->codes = (uint8 *) (base + shared->codes_offset);
	build->links = (int32 *) (base + shared->links_offset);
	build->link_dist = (float *) (base + shared->dist_offset);
}

/* Insert the rows a parallel heap scan hands this participant */
static void
insert_scanned_rows(BuildState *build, ParallelTableScanDesc pscan, Relation heap,
					IndexInfo *indexInfo)
{
	TableScanDesc scan = table_beginscan_parallel(heap, pscan);

	(void) table_index_build_scan(heap, build->index, indexInfo, true, build->report_progress,
								  graph_callback, build, scan);
}

void
archer_vector_build_worker(dsm_segment *seg, shm_toc *toc)
{
	dsm_handle *graph_handle = shm_toc_lookup(toc, VEC_PARALLEL_KEY_GRAPH, false);
	ParallelTableScanDesc pscan = shm_toc_lookup(toc, VEC_PARALLEL_KEY_SCAN, false);
	dsm_segment *graph_seg = dsm_attach(*graph_handle);
	VecBuildShared *shared;
	LOCKMODE	heap_lockmode;
	LOCKMODE	index_lockmode;
	Relation	heap;
	Relation	index;
	IndexInfo  *indexInfo;
	const float *ranges;
	BuildState	build = {0};

	if (graph_seg == NULL)
		elog(ERROR, "archer_vector build: could not attach to the shared graph");
	shared = dsm_segment_address(graph_seg);
	heap_lockmode = shared->isconcurrent ? ShareUpdateExclusiveLock : ShareLock;
	index_lockmode = shared->isconcurrent ? RowExclusiveLock : AccessExclusiveLock;
	heap = table_open(shared->heaprelid, heap_lockmode);
	index = index_open(shared->indexrelid, index_lockmode);
	indexInfo = BuildIndexInfo(index);
	ranges = (const float *) ((char *) shared + shared->ranges_offset);
	indexInfo->ii_Concurrent = shared->isconcurrent;
	LWLockRegisterTranche(shared->lock_tranche, "archer_vector_build");
	build.index = index;
	build.info = build_info(index);
	build.info->dim = shared->dim;
	vec_init_quantizers(build.info, ranges, ranges + shared->dim);
	build.in_memory = true;
	build.tmpcxt = AllocSetContextCreate(CurrentMemoryContext, "archer_vector build",
										 ALLOCSET_DEFAULT_SIZES);
	attach_shared_graph(&build, shared);
	allocate_scratch(&build);
	/* each participant its own stream of levels */
	vec_reset_levels(ParallelWorkerNumber + 1);
	insert_scanned_rows(&build, pscan, heap, indexInfo);
	pg_atomic_fetch_add_u64(&shared->worker_rows, build.ninserted);
	MemoryContextDelete(build.tmpcxt);
	index_close(index, index_lockmode);
	table_close(heap, heap_lockmode);
	dsm_detach(graph_seg);
}

/* Lay out the shared chunk: the header, the ranges, the graph's arrays */
static Size
shared_graph_layout(VecBuildShared *layout, const VecIndexInfo *info, int64 maxnodes)
{
	Size		size = MAXALIGN(sizeof(VecBuildShared));

	layout->dim = info->dim;
	layout->maxnodes = maxnodes;
	layout->maxlinks = initial_links(info, maxnodes);
	layout->ranges_offset = size;
	Assert(layout->maxlinks >= maxnodes * node_slots(info, 0));
	size = add_size(size, MAXALIGN(mul_size(2 * sizeof(float), info->dim)));
	layout->nodes_offset = size;
	size = add_size(size, MAXALIGN(mul_size(sizeof(BuildNode), maxnodes)));
	layout->codes_offset = size;
	size = add_size(size, MAXALIGN(mul_size(info->dim, maxnodes)));
	layout->links_offset = size;
	size = add_size(size, MAXALIGN(mul_size(sizeof(int32), layout->maxlinks)));
	layout->dist_offset = size;
	return add_size(size, mul_size(sizeof(float), layout->maxlinks));
}

/*
 * Pass 2 with parallel workers, when the planner grants some for this table
 * (max_parallel_maintenance_workers, the table's size and parallel_workers
 * option, parallel-safe index expressions) and a DSM segment is left for
 * the graph: the leader (unless parallel_leader_participation is off and a
 * worker runs) and the workers insert the rows, and the leader's build
 * state then holds the whole graph.  Returns the parallel context, or NULL:
 * build serially.  The graph stays in *graph_seg until vec_build has
 * written it out.
 */
static ParallelContext *
insert_rows_in_parallel(BuildState *build, Relation heap, IndexInfo *indexInfo,
						Snapshot snapshot, dsm_segment **graph_seg)
{
	Relation	index = build->index;
	ParallelContext *pcxt;
	VecBuildShared layout = {0};
	VecBuildShared *shared;
	ParallelTableScanDesc pscan;
	dsm_handle *graph_handle;
	Size		graph_size;
	Size		scan_size;
	int			nworkers;
	int64		worker_rows;

	nworkers = archer_build_workers(heap, index);
	if (nworkers <= 0)
		return NULL;
	graph_size = shared_graph_layout(&layout, build->info, build->maxnodes);
	*graph_seg = dsm_create(graph_size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	if (*graph_seg == NULL)
		return NULL;

	shared = dsm_segment_address(*graph_seg);
	memcpy(shared, &layout, sizeof(VecBuildShared));
	shared->heaprelid = RelationGetRelid(heap);
	shared->indexrelid = RelationGetRelid(index);
	shared->isconcurrent = indexInfo->ii_Concurrent;
	pg_atomic_init_u64(&shared->nnodes, 0);
	pg_atomic_init_u64(&shared->nlinks, 0);
	pg_atomic_init_u64(&shared->spare_links,
					   shared->maxlinks - shared->maxnodes * node_slots(build->info, 0));
	pg_atomic_init_u64(&shared->lowered, 0);
	pg_atomic_init_u64(&shared->worker_rows, 0);
	SpinLockInit(&shared->mutex);
	shared->entry = -1;
	shared->entry_level = 0;
	if (lock_tranche == 0)
		lock_tranche = LWLockNewTrancheId();
	shared->lock_tranche = lock_tranche;
	LWLockRegisterTranche(shared->lock_tranche, "archer_vector_build");
	for (int i = 0; i < VEC_BUILD_LOCKS; i++)
		LWLockInitialize(&shared->locks[i].lock, shared->lock_tranche);
	memcpy((char *) shared + shared->ranges_offset, build->min, sizeof(float) * build->info->dim);
	memcpy((char *) shared + shared->ranges_offset + sizeof(float) * build->info->dim,
		   build->max, sizeof(float) * build->info->dim);
	attach_shared_graph(build, shared);
	allocate_scratch(build);

	EnterParallelMode();
	pcxt = CreateParallelContext("archer", "archer_vector_build_worker", nworkers);
	scan_size = table_parallelscan_estimate(heap, snapshot);
	shm_toc_estimate_chunk(&pcxt->estimator, sizeof(dsm_handle));
	shm_toc_estimate_chunk(&pcxt->estimator, scan_size);
	shm_toc_estimate_keys(&pcxt->estimator, 2);
	InitializeParallelDSM(pcxt);
	graph_handle = shm_toc_allocate(pcxt->toc, sizeof(dsm_handle));
	*graph_handle = dsm_segment_handle(*graph_seg);
	shm_toc_insert(pcxt->toc, VEC_PARALLEL_KEY_GRAPH, graph_handle);
	pscan = shm_toc_allocate(pcxt->toc, scan_size);
	table_parallelscan_initialize(heap, pscan, snapshot);
	shm_toc_insert(pcxt->toc, VEC_PARALLEL_KEY_SCAN, pscan);

	LaunchParallelWorkers(pcxt);
	ereport(DEBUG1,
			(errmsg_internal("archer_vector build of index \"%s\": %d of %d parallel workers launched",
							 RelationGetRelationName(index), pcxt->nworkers_launched, nworkers)));
	if (parallel_leader_participation || pcxt->nworkers_launched == 0)
		insert_scanned_rows(build, pscan, heap, indexInfo);
	WaitForParallelWorkersToFinish(pcxt);

	/* from here on the leader alone: the serial phases take no locks */
	build->shared = NULL;
	build->nnodes = (int64) pg_atomic_read_u64(&shared->nnodes);
	build->nlinks = (int64) pg_atomic_read_u64(&shared->nlinks);
	build->entry = shared->entry;
	build->entry_level = shared->entry_level;
	worker_rows = (int64) pg_atomic_read_u64(&shared->worker_rows);
	ereport(DEBUG1,
			(errmsg_internal("archer_vector build of index \"%s\": the leader inserted %lld rows, the workers %lld; %lld nodes got a lower level for want of link slots",
							 RelationGetRelationName(index), (long long) build->ninserted,
							 (long long) worker_rows,
							 (long long) pg_atomic_read_u64(&shared->lowered))));
	return pcxt;
}

/*
 * A heap scan for one pass of a CREATE INDEX CONCURRENTLY: both passes read
 * the rows of one MVCC snapshot, or the second could meet rows committed
 * after the first counted them (table_index_build_scan takes a new
 * snapshot for each scan it starts itself).  NULL for other builds, whose
 * lock keeps the table as it is.
 */
static TableScanDesc
begin_pass(Relation heap, Snapshot snapshot)
{
	if (!IsMVCCSnapshot(snapshot))
		return NULL;
	return table_beginscan_strat(heap, snapshot, 0, NULL, true, true);
}

IndexBuildResult *
vec_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	BuildState	build = {0};
	PGAlignedBlock metapage;
	int			quantizer_pages = 0;
	BlockNumber first_node_blkno;
	VecMetaPageData *meta;
	ParallelContext *pcxt = NULL;
	dsm_segment *graph_seg = NULL;
	Snapshot	snapshot = indexInfo->ii_Concurrent ?
		RegisterSnapshot(GetTransactionSnapshot()) : SnapshotAny;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));

	build.index = index;
	build.info = build_info(index);
	build.report_progress = true;
	vec_reset_levels(0);
	build.tmpcxt = AllocSetContextCreate(CurrentMemoryContext, "archer_vector build",
										 ALLOCSET_DEFAULT_SIZES);
	if (build.info->dim > 0)
	{
		build.min = palloc(sizeof(float) * build.info->dim);
		build.max = palloc(sizeof(float) * build.info->dim);
		archer_sq8_range_init(build.min, build.max, build.info->dim);
	}

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, VEC_PHASE_RANGES);
	table_index_build_scan(heap, index, indexInfo, true, false, range_callback, &build,
						   begin_pass(heap, snapshot));

	/*
	 * Without rows there is nothing to train on, even with the dimension
	 * known from the typmod: the index takes both from its first row.
	 */
	if (build.nrows == 0)
		build.info->dim = 0;

	/* meta page and quantizer first: the fallback inserts read them */
	vec_init_meta_page(metapage.data, build.info, 0);
	archer_write_new_page(index, ARCHER_META_BLKNO, metapage.data);
	if (build.info->dim > 0)
	{
		if (build.nrows < VEC_MIN_TRAINING_ROWS)
			vec_widen_sample_range(build.info, build.min, build.max);
		vec_init_quantizers(build.info, build.min, build.max);
		quantizer_pages = vec_write_quantizer_pages(index, build.min, build.max,
													build.info->dim);
	}
	first_node_blkno = ARCHER_META_BLKNO + 1 + quantizer_pages;
	{
		Buffer		metabuf = ReadBuffer(index, ARCHER_META_BLKNO);

		LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
		vec_init_meta_page(BufferGetPage(metabuf), build.info, quantizer_pages);
		if (quantizer_pages > 0)
			vec_set_quantizer_checksum(BufferGetPage(metabuf), build.min, build.max,
									   build.info->dim);
		MarkBufferDirty(metabuf);
		UnlockReleaseBuffer(metabuf);
	}

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, VEC_PHASE_GRAPH);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_TOTAL, (int64) build.nrows);
	/* rows with NULL vectors alone have no dimension: they go in row by row (vec.h) */
	build.in_memory = build.nrows > 0 &&
		graph_memory(build.info, build.nrows + build.nnulls) <= (double) maintenance_work_mem * 1024;
	if (build.nrows > 0 && !build.in_memory)
		ereport(NOTICE,
				(errmsg("archer_vector graph does not fit in maintenance_work_mem"),
				 errdetail("Building it needs about %.0f MB; the index is built row by row on disk instead, which is slower.",
						   graph_memory(build.info, build.nrows + build.nnulls) / (1024 * 1024)),
				 errhint("Increase maintenance_work_mem to speed up index creation.")));
	build.entry = -1;
	if (build.in_memory && build.nrows > 0)
	{
		build.maxnodes = (int64) (build.nrows + build.nnulls);
		pcxt = insert_rows_in_parallel(&build, heap, indexInfo, snapshot, &graph_seg);
		if (pcxt == NULL)
			allocate_local_graph(&build);
	}
	/*
	 * Row by row, every change is WAL-logged as an insert's: the meta and
	 * quantizer pages written above without WAL go into WAL first, or the
	 * inserts' records would change pages that recovery and standbys do
	 * not have (full page images hide that only with full_page_writes on).
	 */
	if (!build.in_memory && build.nrows + build.nnulls > 0)
		archer_log_all_pages(index);
	if (build.nrows + build.nnulls > 0 && pcxt == NULL)
		table_index_build_scan(heap, index, indexInfo, true, true, graph_callback, &build,
							   begin_pass(heap, snapshot));
	if (build.in_memory && build.entry >= 0 && build.info->filter_m > 0)
		build_filter_lists(&build);
	if (build.in_memory && build.entry >= 0)
		reconnect_orphans(&build);

	if (build.in_memory && build.entry >= 0)
	{
		Buffer		metabuf;
		int64	   *order;

		pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, VEC_PHASE_PAGES);
		order = page_order(&build);

		assign_tids(&build, order, first_node_blkno);
		write_node_pages(&build, order, first_node_blkno);

		metabuf = ReadBuffer(index, ARCHER_META_BLKNO);
		LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
		meta = VecPageGetMeta(BufferGetPage(metabuf));
		meta->entry = build.nodes[build.entry].tid;
		meta->entry_level = build.entry_level;
		meta->nnodes = build.nnodes;
		meta->insert_page = ItemPointerGetBlockNumber(&build.nodes[order[build.nnodes - 1]].tid);
		MarkBufferDirty(metabuf);
		UnlockReleaseBuffer(metabuf);
	}
	if (pcxt != NULL)
	{
		DestroyParallelContext(pcxt);
		ExitParallelMode();
		dsm_detach(graph_seg);
	}

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, VEC_PHASE_WAL);
	if (build.in_memory || build.nrows + build.nnulls == 0)
		archer_log_all_pages(index);
	/* groups of equal vectors may link only among themselves: link them in */
	if (build.nrows > 0)
		(void) vec_relink_unreachable(index, vec_index_info(index));
	MemoryContextDelete(build.tmpcxt);
	if (IsMVCCSnapshot(snapshot))
		UnregisterSnapshot(snapshot);

	result = palloc(sizeof(IndexBuildResult));
	result->heap_tuples = build.nrows + build.nnulls;
	result->index_tuples = build.nnodes;
	return result;
}

/* The init fork of an unlogged index: a meta page; the first insert sets the dimension */
void
vec_buildempty(Relation index)
{
	PGAlignedBlock metapage;
	VecIndexInfo *info = build_info(index);

	/* the quantizer needs data: an unlogged index starts with a generic one */
	info->dim = 0;
	vec_init_meta_page(metapage.data, info, 0);
	archer_write_init_fork_page(index, ARCHER_META_BLKNO, metapage.data);
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
}
