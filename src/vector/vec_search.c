/*-------------------------------------------------------------------------
 *
 * vec_search.c
 *	  Searching the archer_vector graph on its pages: reading a node's
 *	  distance or links under a share lock, the visited set, candidate heaps,
 *	  and the pages as the HNSW core (vec_hnsw.c) reads them, for the
 *	  layer search and the neighbour selection of inserts and VACUUM.
 *
 * Each node read pins and share-locks one page and copies out only what
 * the caller needs (a distance, or one layer's links), so no lock is held
 * across two pages and a concurrent in-place link update is seen either
 * before or after, never half done.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "vec.h"

/*
 * ---- visited set: open addressing over packed TIDs ----
 *
 * A scan that walks the whole graph (a selective filter, the sweep of
 * unreached nodes) or a large insert buffer adds every node: 16 bytes per
 * node at most.  The slots are a huge allocation (past 1 GB, the limit of
 * palloc, from about 33.5 million nodes on), up to VEC_VISITED_MAX_SLOTS:
 * a set of a billion nodes, past which the search raises an error.
 */
#define VEC_VISITED_MAX_SLOTS	((uint32) 1 << 31)

static uint64 *
visited_slots(uint32 size)
{
	return MemoryContextAllocExtended(CurrentMemoryContext, sizeof(uint64) * (Size) size,
									  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
}

void
vec_visited_init(VecVisited *visited, int expected)
{
	uint32		size = 64;

	while (size < (uint32) expected * 2 && size < VEC_VISITED_MAX_SLOTS)
		size *= 2;
	visited->slots = visited_slots(size);
	visited->mask = size - 1;
	visited->count = 0;
}

static uint32
visited_hash(uint64 key, uint32 mask)
{
	return (uint32) (key * UINT64CONST(0x9E3779B97F4A7C15) >> 32) & mask;
}

static void
visited_grow(VecVisited *visited)
{
	uint64	   *old = visited->slots;
	uint32		oldsize = visited->mask + 1;

	if (oldsize >= VEC_VISITED_MAX_SLOTS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("archer_vector search cannot visit more than %u nodes",
						oldsize / 2)));
	visited->slots = visited_slots(oldsize * 2);
	visited->mask = oldsize * 2 - 1;
	for (uint32 i = 0; i < oldsize; i++)
	{
		/* rehashing a large set takes a while */
		if ((i & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		if (old[i] != 0)
		{
			uint32		pos = visited_hash(old[i], visited->mask);

			while (visited->slots[pos] != 0)
				pos = (pos + 1) & visited->mask;
			visited->slots[pos] = old[i];
		}
	}
	pfree(old);
}

bool
vec_visited_contains(const VecVisited *visited, ItemPointer tid)
{
	uint64		key = archer_tid_key(tid) + 1;
	uint32		pos = visited_hash(key, visited->mask);

	while (visited->slots[pos] != 0)
	{
		if (visited->slots[pos] == key)
			return true;
		pos = (pos + 1) & visited->mask;
	}
	return false;
}

/* Add a node; true if it was not there yet */
bool
vec_visited_add(VecVisited *visited, ItemPointer tid)
{
	/* +1 keeps the key of block 0 offset 0 apart from an empty slot */
	uint64		key = archer_tid_key(tid) + 1;
	uint32		pos;

	if (visited->count * 2 >= visited->mask)
		visited_grow(visited);
	pos = visited_hash(key, visited->mask);
	while (visited->slots[pos] != 0)
	{
		if (visited->slots[pos] == key)
			return false;
		pos = (pos + 1) & visited->mask;
	}
	visited->slots[pos] = key;
	visited->count++;
	return true;
}

/* ---- candidate heaps: min-heaps (sign 1) or max-heaps (sign -1) by distance ---- */

void
vec_heap_init(VecHeap *heap, int capacity, int sign)
{
	heap->items = palloc(sizeof(VecCandidate) * Max(capacity, 16));
	heap->capacity = Max(capacity, 16);
	heap->count = 0;
	heap->sign = sign;
}

static bool
heap_before(const VecHeap *heap, int a, int b)
{
	return heap->sign * (heap->items[a].distance - heap->items[b].distance) < 0;
}

static void
heap_swap(VecHeap *heap, int a, int b)
{
	VecCandidate tmp = heap->items[a];

	heap->items[a] = heap->items[b];
	heap->items[b] = tmp;
}

void
vec_heap_push(VecHeap *heap, const VecCandidate *item)
{
	int			pos;

	if (heap->count == heap->capacity)
	{
		heap->capacity *= 2;
		heap->items = repalloc_huge(heap->items, sizeof(VecCandidate) * heap->capacity);
	}
	pos = heap->count++;
	heap->items[pos] = *item;
	while (pos > 0 && heap_before(heap, pos, (pos - 1) / 2))
	{
		heap_swap(heap, pos, (pos - 1) / 2);
		pos = (pos - 1) / 2;
	}
}

VecCandidate
vec_heap_pop(VecHeap *heap)
{
	VecCandidate top = heap->items[0];
	int			pos = 0;

	heap->items[0] = heap->items[--heap->count];
	for (;;)
	{
		int			left = 2 * pos + 1;
		int			best = pos;

		if (left < heap->count && heap_before(heap, left, best))
			best = left;
		if (left + 1 < heap->count && heap_before(heap, left + 1, best))
			best = left + 1;
		if (best == pos)
			break;
		heap_swap(heap, pos, best);
		pos = best;
	}
	return top;
}

/* ---- reading nodes ---- */

/* A node page, share-locked, pinned through the index's recent buffers */
static Buffer
read_node_page(Relation index, const VecIndexInfo *info, BlockNumber blkno)
{
	Buffer		buf;

	if (blkno == InvalidBlockNumber)
		archer_corrupted(index, blkno, "A link points to an invalid block.");
	buf = archer_read_buffer_recent(index, blkno, info->recent);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	archer_check_page(index, BufferGetPage(buf), blkno, ARCHER_VEC_PAGE_ID);
	return buf;
}

/*
 * Distance from the query to a node's code; copies the node's header
 * (heap TID, flags, error) to *header.
 */
float
vec_node_distance(Relation index, const VecIndexInfo *info, const VecQuery *query,
				  ItemPointer tid, VecNodeHeader *header)
{
	BlockNumber blkno = ItemPointerGetBlockNumber(tid);
	Buffer		buf = read_node_page(index, info, blkno);
	VecNodeHeader *node = vec_page_node(index, BufferGetPage(buf), blkno,
										ItemPointerGetOffsetNumber(tid), info);
	float		distance = vec_query_distance(query, vec_node_code(node), node->flags);

	*header = *node;
	UnlockReleaseBuffer(buf);
	return distance;
}

/*
 * Pages one part of a batch pins at once: with the heap page the executor
 * holds, within the backend's array of private buffer refcounts (8), past
 * which every pin and release costs a hash table lookup.
 */
#define VEC_BATCH_PAGES			6

/*
 * vec_batch_distances for the first nodes of tids[0 .. n) that lie on at
 * most VEC_BATCH_PAGES pages; returns how many it measured.  Each page is
 * pinned once.
 */
static int
batch_part_distances(Relation index, const VecIndexInfo *info, const VecQuery *query,
					 const ItemPointerData *tids, int n, float *distances,
					 VecNodeHeader *headers, int64 *filters)
{
	Buffer		bufs[VEC_BATCH_PAGES];
	BlockNumber blknos[VEC_BATCH_PAGES];
	int			npages = 0;
	uint8		page_of[VEC_MAX_BATCH];
	const uint8 *codes[VEC_MAX_BATCH];
	int			count;

	for (count = 0; count < n; count++)
	{
		BlockNumber blkno = ItemPointerGetBlockNumberNoCheck(&tids[count]);
		int			p = 0;

		if (!BlockNumberIsValid(blkno))
			archer_corrupted(index, InvalidBlockNumber, "A link points to an invalid block.");
		/* neighbours often share pages (the build lays them out so) */
		while (p < npages && blknos[p] != blkno)
			p++;
		if (p == npages)
		{
			Page		page;

			if (npages == VEC_BATCH_PAGES)
				break;
			bufs[p] = archer_read_buffer_recent(index, blkno, info->recent);
			blknos[p] = blkno;
			npages++;
			page = BufferGetPage(bufs[p]);
			__builtin_prefetch(page);
			__builtin_prefetch(page + BLCKSZ - sizeof(ArcherPageOpaqueData));
		}
		page_of[count] = p;
		__builtin_prefetch(PageGetItemId(BufferGetPage(bufs[p]),
										 ItemPointerGetOffsetNumber(&tids[count])));
	}

	/*
	 * And each node's header and filter values (the tuple's last bytes),
	 * where its line pointer says: read without the lock, only as a hint
	 * (node tuples never move; a torn or stale value just prefetches the
	 * wrong line).
	 */
	for (int i = 0; i < count; i++)
	{
		Page		page = BufferGetPage(bufs[page_of[i]]);
		OffsetNumber offnum = ItemPointerGetOffsetNumber(&tids[i]);
		ItemId		itemid;

		if (offnum < FirstOffsetNumber || offnum > MaxOffsetNumber)
			continue;
		itemid = PageGetItemId(page, offnum);
		__builtin_prefetch(page + (ItemIdGetOffset(itemid) & (BLCKSZ - 1)));
		if (filters != NULL)
			__builtin_prefetch(page + ((ItemIdGetOffset(itemid) + ItemIdGetLength(itemid) -
										sizeof(int64) * info->nfilters) & (BLCKSZ - 1)));
	}
	for (int i = 0; i < count; i++)
	{
		Buffer		buf = bufs[page_of[i]];
		BlockNumber blkno = blknos[page_of[i]];
		Page		page = BufferGetPage(buf);
		VecNodeHeader *node;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		archer_check_page(index, page, blkno, ARCHER_VEC_PAGE_ID);
		node = vec_page_node(index, page, blkno, ItemPointerGetOffsetNumber(&tids[i]), info);
		headers[i] = *node;
		if (filters != NULL)
			for (int f = 0; f < info->nfilters; f++)
				(void) vec_node_filter(node, info, f, &filters[i * VEC_MAX_FILTERS + f]);
		codes[i] = vec_node_code(node);
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		for (int off = 0; off < info->dim; off += 64)
			__builtin_prefetch(codes[i] + off);
	}
	for (int i = 0; i < count; i++)
		distances[i] = vec_query_distance(query, codes[i], headers[i].flags);
	for (int p = 0; p < npages; p++)
		ReleaseBuffer(bufs[p]);
	return count;
}

/*
 * Distances from the query to n nodes at once, with their headers and, if
 * filters is not NULL, their filter values (VEC_MAX_FILTERS per node).  A
 * node's code and error never change once written and tuples never move,
 * so after checking the page under its share lock the code can be read
 * with only the pin held; that lets the memory of a part's nodes be
 * prefetched before any distance is computed, instead of waiting for each
 * node's cache misses in turn.
 */
void
vec_batch_distances(Relation index, const VecIndexInfo *info, const VecQuery *query,
					const ItemPointerData *tids, int n, float *distances,
					VecNodeHeader *headers, int64 *filters)
{
	Assert(n <= VEC_MAX_BATCH);
	for (int done = 0; done < n;)
		done += batch_part_distances(index, info, query, tids + done, n - done,
									 distances + done, headers + done,
									 filters ? filters + done * VEC_MAX_FILTERS : NULL);
}

/* Copy one layer's (or filter list's) links of a node into links[]; returns their number */
int
vec_node_links(Relation index, const VecIndexInfo *info, ItemPointer tid, int layer,
			   ItemPointerData *links)
{
	BlockNumber blkno = ItemPointerGetBlockNumber(tid);
	Buffer		buf = read_node_page(index, info, blkno);
	VecNodeHeader *node = vec_page_node(index, BufferGetPage(buf), blkno,
										ItemPointerGetOffsetNumber(tid), info);
	int			nlinks = 0;

	if (vec_node_has_list(node, info, layer))
	{
		int			nslots;
		VecNeighbor *slots = vec_node_neighbors(node, info, layer, &nslots);

		for (int i = 0; i < nslots; i++)
			if (ItemPointerIsValid(&slots[i].tid))
				links[nlinks++] = slots[i].tid;
	}
	UnlockReleaseBuffer(buf);
	return nlinks;
}

/*
 * The greedy descent of one upper layer (vec_search_layer with ef 1) that
 * also notes the nearest live node on the way that meets the filter keys,
 * if nearer than *seed: a way into the graph of a filter list (vec.h).
 * Upper layers are sparse, so the few dozen nodes seen there sample the
 * query's whole neighbourhood, where layer 0 would walk every node of
 * other values nearer than the first one of the keys' value.
 */
void
vec_descend_layer(Relation index, const VecIndexInfo *info, const VecQuery *query,
				  const VecFilterKey *keys, int nkeys, VecCandidate *entry, int layer,
				  VecCandidate *seed)
{
	ItemPointerData links[VEC_MAX_BATCH];
	float		distances[VEC_MAX_BATCH];
	VecNodeHeader headers[VEC_MAX_BATCH];
	int64		filters[VEC_MAX_BATCH * VEC_MAX_FILTERS];
	bool		moved = true;

	while (moved)
	{
		int			nlinks = vec_node_links(index, info, &entry->tid, layer, links);
		VecCandidate nearest = *entry;

		CHECK_FOR_INTERRUPTS();
		vec_batch_distances(index, info, query, links, nlinks, distances, headers, filters);
		for (int i = 0; i < nlinks; i++)
		{
			if (headers[i].flags & VEC_NODE_DELETED)
				continue;
			if (distances[i] < nearest.distance)
			{
				nearest.tid = links[i];
				nearest.distance = distances[i];
			}
			if (distances[i] < seed->distance &&
				vec_filters_match(keys, nkeys, headers[i].flags, &filters[i * VEC_MAX_FILTERS]))
			{
				seed->tid = links[i];
				seed->distance = distances[i];
				seed->matches = true;
			}
		}
		moved = !ItemPointerEquals(&nearest.tid, &entry->tid);
		*entry = nearest;
	}
}

/*
 * Best-first over layer 0 from the entries (live nodes), until a live node
 * that meets the filter keys turns up (*match, true) or max_nodes nodes
 * were read (false): the way into the graph of a filter list for a value
 * too rare to be met on the upper layers.
 */
bool
vec_walk_to_match(Relation index, const VecIndexInfo *info, const VecQuery *query,
				  const VecFilterKey *keys, int nkeys, const VecCandidate *entries,
				  int nentries, int max_nodes, VecCandidate *match)
{
	VecHeap		candidates;
	VecVisited	visited;
	ItemPointerData links[VEC_MAX_BATCH];
	float		distances[VEC_MAX_BATCH];
	VecNodeHeader headers[VEC_MAX_BATCH];
	int64		filters[VEC_MAX_BATCH * VEC_MAX_FILTERS];
	int			nread = 0;

	vec_heap_init(&candidates, Max(nentries, 64), 1);
	vec_visited_init(&visited, Max(nentries, 64));
	for (int i = 0; i < nentries; i++)
		if (vec_visited_add(&visited, (ItemPointer) &entries[i].tid))
			vec_heap_push(&candidates, &entries[i]);
	while (candidates.count > 0 && nread < max_nodes)
	{
		VecCandidate current = vec_heap_pop(&candidates);
		int			nlinks = vec_node_links(index, info, &current.tid, 0, links);
		int			nfresh = 0;

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < nlinks; i++)
			if (vec_visited_add(&visited, &links[i]))
				links[nfresh++] = links[i];
		vec_batch_distances(index, info, query, links, nfresh, distances, headers, filters);
		nread += nfresh;
		for (int i = 0; i < nfresh; i++)
		{
			VecCandidate next;

			next.tid = links[i];
			next.distance = distances[i];
			next.matches = false;
			if (!(headers[i].flags & VEC_NODE_DELETED) &&
				vec_filters_match(keys, nkeys, headers[i].flags, &filters[i * VEC_MAX_FILTERS]))
			{
				*match = next;
				return true;
			}
			vec_heap_push(&candidates, &next);
		}
	}
	return false;
}

/* The graph on the pages as the HNSW core reads it (VecGraphReader) */
typedef struct PageGraph
{
	Relation	index;
	const VecIndexInfo *info;
	const VecQuery *query;
	VecVisited	visited;
} PageGraph;

static bool
first_visit(void *arg, uint64 id)
{
	PageGraph  *graph = arg;
	ItemPointerData tid;

	archer_key_tid(id, &tid);
	return vec_visited_add(&graph->visited, &tid);
}

static int
new_links(void *arg, uint64 id, int layer, uint64 *links, float *distances, bool *returnable)
{
	PageGraph  *graph = arg;
	ItemPointerData tid;
	ItemPointerData tids[VEC_MAX_BATCH];
	VecNodeHeader headers[VEC_MAX_BATCH];
	int			nlinks;
	int			nnew = 0;

	archer_key_tid(id, &tid);
	nlinks = vec_node_links(graph->index, graph->info, &tid, layer, tids);
	for (int i = 0; i < nlinks; i++)
		if (vec_visited_add(&graph->visited, &tids[i]))
			tids[nnew++] = tids[i];
	vec_batch_distances(graph->index, graph->info, graph->query, tids, nnew, distances,
						headers, NULL);
	for (int i = 0; i < nnew; i++)
	{
		links[i] = archer_tid_key(&tids[i]);
		returnable[i] = !(headers[i].flags & VEC_NODE_DELETED);
	}
	return nnew;
}

/*
 * HNSW's SEARCH-LAYER over the pages (vec_layer_search), from the entries
 * (which must not be deleted): writes up to ef nodes to result[], nearest
 * first, and returns how many.  result may be entries.
 */
int
vec_search_layer(Relation index, const VecIndexInfo *info, const VecQuery *query,
				 VecCandidate *entries, int nentries, int ef, int layer,
				 VecCandidate *result)
{
	PageGraph	graph = {.index = index,.info = info,.query = query};
	VecGraphReader reader = {new_links, first_visit, &graph};
	VecLayerScratch scratch;
	VecLayerNode *found = palloc(sizeof(VecLayerNode) * Max(ef, nentries));
	int			nfound;

	vec_visited_init(&graph.visited, ef * 8);
	vec_layer_scratch_init(&scratch, ef * 4);
	for (int i = 0; i < nentries; i++)
	{
		found[i].id = archer_tid_key(&entries[i].tid);
		found[i].distance = entries[i].distance;
	}
	nfound = vec_layer_search(&reader, &scratch, found, nentries, ef, layer);
	for (int i = 0; i < nfound; i++)
	{
		memset(&result[i], 0, sizeof(VecCandidate));
		archer_key_tid(found[i].id, &result[i].tid);
		result[i].distance = found[i].distance;
	}
	pfree(found);
	pfree(scratch.heap);
	pfree(graph.visited.slots);
	return nfound;
}

/*
 * Copy a node's code out of its page.  Inserts read many (each neighbour
 * whose full list a new node may enter reads its list's codes), from the
 * pages their search just read: through the recent buffers, as the search.
 */
uint8
vec_copy_node_code(Relation index, const VecIndexInfo *info, ItemPointer tid, uint8 *code)
{
	BlockNumber blkno = ItemPointerGetBlockNumber(tid);
	Buffer		buf = read_node_page(index, info, blkno);
	VecNodeHeader *node = vec_page_node(index, BufferGetPage(buf), blkno,
										ItemPointerGetOffsetNumber(tid), info);
	uint8		flags = node->flags;

	memcpy(code, vec_node_code(node), info->dim);
	UnlockReleaseBuffer(buf);
	return flags;
}

/* Candidates of vec_select_neighbors, their codes read when first asked for */
typedef struct CandidateCodes
{
	Relation	index;
	const VecIndexInfo *info;
	const VecCandidate *sorted;
	uint8	   *codes;			/* candidate i's at i * dim */
	uint8	   *flags;
	bool	   *read;
} CandidateCodes;

static const uint8 *
candidate_code(CandidateCodes *list, int i, uint8 *flags)
{
	uint8	   *code = list->codes + (Size) i * list->info->dim;

	if (!list->read[i])
	{
		list->flags[i] = vec_copy_node_code(list->index, list->info,
											(ItemPointer) &list->sorted[i].tid, code);
		list->read[i] = true;
	}
	*flags = list->flags[i];
	return code;
}

/* Candidate a's distance to candidate b: a VecPairDistance */
static float
between_candidates(void *arg, int a, int b)
{
	CandidateCodes *list = arg;
	uint8		a_flags;
	uint8		b_flags;
	const uint8 *a_code = candidate_code(list, a, &a_flags);
	const uint8 *b_code = candidate_code(list, b, &b_flags);

	return vec_code_distance(list->info, a_code, a_flags, b_code, b_flags);
}

/*
 * HNSW's neighbour selection (vec_diversity_select) over candidates sorted
 * nearest first, reading only the codes it compares
 */
int
vec_select_neighbors(Relation index, const VecIndexInfo *info, VecCandidate *sorted,
					 int ncand, int max, VecCandidate *selected)
{
	int			room = Max(ncand, 1);
	CandidateCodes list = {index, info, sorted, palloc((Size) room * info->dim),
	palloc(room), palloc0(sizeof(bool) * room)};
	float	   *distance = palloc(sizeof(float) * room);
	int		   *chosen = palloc(sizeof(int) * Max(max, 1));
	int			nselected;

	for (int i = 0; i < ncand; i++)
		distance[i] = sorted[i].distance;
	nselected = vec_diversity_select(distance, ncand, max, between_candidates, &list, chosen);
	for (int i = 0; i < nselected; i++)
		selected[i] = sorted[chosen[i]];
	pfree(list.codes);
	pfree(list.flags);
	pfree(list.read);
	pfree(distance);
	pfree(chosen);
	return nselected;
}
