/*-------------------------------------------------------------------------
 *
 * vec_hnsw.c
 *	  The HNSW core of archer_vector: the layer search, the neighbour
 *	  selection and the rule by which a full link list takes a newcomer.
 *	  The build's graph in memory (vec_build.c) and the graph on the index
 *	  pages (vec_search.c, vec_graph.c, vec_vacuum.c) both run these; they
 *	  differ only in how a node's links and distances are read, which they
 *	  hand in as callbacks.  Nothing here reads a page or takes a lock: the
 *	  callbacks do, under the locking rules of their own storage.
 *
 *	  A node is a 64-bit id the callbacks understand: a node number in
 *	  the build, a node's TID (archer_tid_key) on the pages.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "vec.h"

/* ---- SEARCH-LAYER ---- */

void
vec_layer_scratch_init(VecLayerScratch *scratch, int capacity)
{
	scratch->capacity = Max(capacity, 64);
	scratch->heap = palloc(sizeof(VecLayerNode) * scratch->capacity);
}

static pg_noinline void
candidates_grow(VecLayerScratch *scratch)
{
	scratch->capacity *= 2;
	scratch->heap = repalloc_huge(scratch->heap, sizeof(VecLayerNode) * scratch->capacity);
}

/* Push onto the candidates' min-heap by distance, growing it as needed */
static inline void
candidate_push(VecLayerScratch *scratch, int *count, VecLayerNode item)
{
	VecLayerNode *heap;
	int			pos;

	if (unlikely(*count == scratch->capacity))
		candidates_grow(scratch);
	heap = scratch->heap;
	pos = (*count)++;
	while (pos > 0 && heap[(pos - 1) / 2].distance > item.distance)
	{
		heap[pos] = heap[(pos - 1) / 2];
		pos = (pos - 1) / 2;
	}
	heap[pos] = item;
}

static inline VecLayerNode
candidate_pop(VecLayerScratch *scratch, int *count)
{
	VecLayerNode *heap = scratch->heap;
	VecLayerNode top = heap[0];
	VecLayerNode last = heap[--(*count)];
	int			pos = 0;

	for (;;)
	{
		int			child = 2 * pos + 1;

		if (child >= *count)
			break;
		if (child + 1 < *count && heap[child + 1].distance < heap[child].distance)
			child++;
		if (heap[child].distance >= last.distance)
			break;
		heap[pos] = heap[child];
		pos = child;
	}
	if (*count > 0)
		heap[pos] = last;
	return top;
}

/*
 * Put item into found[0..*nfound), kept sorted nearest first and at most
 * ef long: after the nodes of equal distance already there, and over the
 * farthest when full
 */
static inline void
found_insert(VecLayerNode *found, int *nfound, int ef, VecLayerNode item)
{
	int			pos = *nfound < ef ? (*nfound)++ : ef - 1;

	while (pos > 0 && found[pos - 1].distance > item.distance)
	{
		found[pos] = found[pos - 1];
		pos--;
	}
	found[pos] = item;
}

/*
 * HNSW's SEARCH-LAYER: best-first over one layer (or filter list) from
 * the entries found[0..nfound), keeping the ef nearest nodes in found[]
 * (room for ef and for the entries), sorted nearest first; returns how
 * many.  Nodes the graph says are not returnable (deleted ones) are
 * walked through, as their links still lead somewhere, but never kept.
 * The entries must be returnable.  The graph's visited set must be empty,
 * or hold only nodes the search is to pass over.
 */
int
vec_layer_search(const VecGraphReader *graph, VecLayerScratch *scratch, VecLayerNode *found,
				 int nfound, int ef, int layer)
{
	uint64		links[VEC_MAX_BATCH];
	float		distances[VEC_MAX_BATCH];
	bool		returnable[VEC_MAX_BATCH];
	int			nentries = 0;
	int			ncand = 0;

	Assert(ef > 0);
	/* the entries, once each, become candidates */
	for (int i = 0; i < nfound; i++)
	{
		if (!graph->first_visit(graph->arg, found[i].id))
			continue;
		candidate_push(scratch, &ncand, found[i]);
		found[nentries++] = found[i];
	}
	/* and the first found: sorted (stably: they come mostly in order), the ef nearest */
	for (int i = 1; i < nentries; i++)
	{
		VecLayerNode entry = found[i];
		int			pos = i;

		for (; pos > 0 && found[pos - 1].distance > entry.distance; pos--)
			found[pos] = found[pos - 1];
		found[pos] = entry;
	}
	nfound = Min(nentries, ef);

	while (ncand > 0)
	{
		VecLayerNode current = candidate_pop(scratch, &ncand);
		int			nfresh;

		if (nfound >= ef && current.distance > found[nfound - 1].distance)
			break;
		CHECK_FOR_INTERRUPTS();
		nfresh = graph->new_links(graph->arg, current.id, layer, links, distances, returnable);
		for (int i = 0; i < nfresh; i++)
		{
			VecLayerNode next = {.id = links[i],.distance = distances[i]};

			if (nfound >= ef && next.distance >= found[nfound - 1].distance)
				continue;
			candidate_push(scratch, &ncand, next);
			if (returnable[i])
				found_insert(found, &nfound, ef, next);
		}
	}
	return nfound;
}

/* ---- neighbour selection and link replacement ---- */

/*
 * HNSW's neighbour selection heuristic, for build, insert and VACUUM
 * alike: over ncand candidates sorted nearest first (distance[i] is
 * candidate i's distance to the new node), keep one only if it is nearer
 * to the new node than to every one kept so far, so that links spread in
 * different directions, until max are kept; then top up with the nearest
 * of the rest to VEC_TOPUP_SLOTS(max).  between(arg, i, j) gives
 * candidate i's distance to candidate j; it is asked only about
 * candidates the selection reaches.  Writes the kept candidates' positions
 * to chosen[] (room for VEC_TOPUP_SLOTS(max) or max, whichever is more)
 * and returns how many.
 */
int
vec_diversity_select(const float *distance, int ncand, int max, VecPairDistance between,
					 void *arg, int *chosen)
{
	bool	   *taken = palloc0(sizeof(bool) * Max(ncand, 1));
	int			nkept = 0;
	int			nchosen;

	for (int i = 0; i < ncand && nkept < max; i++)
	{
		bool		keep = true;

		for (int j = 0; j < nkept && keep; j++)
			if (between(arg, i, chosen[j]) < distance[i])
				keep = false;
		if (keep)
		{
			chosen[nkept++] = i;
			taken[i] = true;
		}
	}
	nchosen = nkept;
	for (int i = 0; i < ncand && nchosen < VEC_TOPUP_SLOTS(max); i++)
		if (!taken[i])
			chosen[nchosen++] = i;
	pfree(taken);
	return nchosen;
}

/*
 * Which slot of a full neighbour list a newcomer takes, by HNSW's diversity
 * rule: the newcomer is left out when a link nearer to the list's owner
 * than the newcomer is also nearer to the newcomer than the owner is (that
 * link already leads its way); otherwise it replaces the farthest link it
 * dominates (a link nearer to the newcomer than to the owner), or else the
 * farthest link if that is farther than the newcomer.  Dropping plainly the
 * farthest link would strip the long links that join clusters.
 *
 * link_distance[i] is the owner's distance to link i, distance the owner's
 * to the newcomer; between(arg, i) gives the newcomer's distance to link
 * i.  It is asked only for the links the rule needs: every link nearer to
 * the owner than the newcomer until one leaves the newcomer out, then the
 * links from the farthest down until one is dominated; the others cost
 * no distance computation.  *victim_between (if not NULL) gets
 * the newcomer's distance to the link it replaces.  With force, the
 * newcomer always gets a slot: the caller found no other node that would
 * link to it, and a node nobody links to is never found by a search.
 * Returns -1 when the newcomer is left out.
 *
 * is_copy[i] tells whether link i leads to an exact copy of the owner
 * (the same code, vec_same_code), newcomer_is_copy whether the newcomer is
 * one; a link's distance cannot tell, as an insert records its distances
 * from the row's vector, not from its code.  Links to copies keep at
 * most VEC_COPY_SLOTS of a full list.  By the rule above a copy displaces
 * any other link and is never displaced, so the members of a large group
 * of equal vectors would link only among themselves, and the rest of the
 * graph would hang on the few links forced into the group, each lost
 * again to the next.  Past the cap a copy is left out (forced, it takes
 * the first copy's slot), and any other newcomer takes the first copy's
 * slot; the copy given up keeps its ways in through the group's other
 * members, which the insert checks (vec_graph.c, keep_way_in).
 */
int
vec_choose_slot(const float *link_distance, const bool *is_copy, int nslots, float distance,
				bool newcomer_is_copy, bool force, VecSlotDistance between, void *arg,
				float *victim_between)
{
	float		known[VEC_MAX_BATCH];
	bool		is_known[VEC_MAX_BATCH] = {0};
	int			by_distance[VEC_MAX_BATCH];
	int			ncopies = 0;
	int			copy = -1;
	int			victim = -1;

	Assert(nslots > 0 && nslots <= VEC_MAX_BATCH);
	for (int i = 0; i < nslots; i++)
	{
		if (is_copy[i])
		{
			ncopies++;
			if (copy < 0)
				copy = i;
		}
	}
	if (newcomer_is_copy && ncopies >= VEC_COPY_SLOTS(nslots))
		victim = force ? copy : -1;
	else if (!newcomer_is_copy && ncopies > VEC_COPY_SLOTS(nslots))
		victim = copy;
	else
	{
		for (int i = 0; i < nslots && !force; i++)
		{
			if (link_distance[i] >= distance)
				continue;
			known[i] = between(arg, i);
			is_known[i] = true;
			if (known[i] < distance)
				return -1;
		}

		/* the links from the farthest down (the first of equals first) */
		for (int i = 0; i < nslots; i++)
		{
			int			j = i;

			for (; j > 0 && link_distance[by_distance[j - 1]] < link_distance[i]; j--)
				by_distance[j] = by_distance[j - 1];
			by_distance[j] = i;
		}
		for (int k = 0; k < nslots && victim < 0; k++)
		{
			int			i = by_distance[k];

			if (!is_known[i])
			{
				known[i] = between(arg, i);
				is_known[i] = true;
			}
			if (known[i] < link_distance[i])
				victim = i;
		}
		if (victim < 0 && (force || link_distance[by_distance[0]] > distance))
			victim = by_distance[0];
	}
	if (victim >= 0 && victim_between != NULL)
		*victim_between = is_known[victim] ? known[victim] : between(arg, victim);
	return victim;
}
