/*-------------------------------------------------------------------------
 *
 * vec_graph.c
 *	  Writing a node into the archer_vector graph on disk, for an insert
 *	  (vec_insert.c), a merge of the insert buffer (vec_buffer.c) and the
 *	  relinking of a node no search reaches (vec_reach.c).
 *
 * Search the graph for the new vector's neighbours (HNSW: greedy descent,
 * then ef_construction-wide search on each of its layers, neighbours chosen
 * by the diversity heuristic), write the node with its links and, in the
 * same WAL record, the meta page's counters and entry point; then add a
 * back link on each neighbour, one record per neighbour page.  A neighbour
 * whose list is full keeps its nearest links: the stored link distances
 * make that decision without reading other pages.  The node's filter lists
 * (vec.h) are filled and linked back alike, each from a search of its
 * value's graph that starts at the nodes of that value near it.
 *
 * Concurrency.  Inserts hold VEC_INSERT_LOCK in ShareLock, so that any
 * number of them work in the graph at once; merges, VACUUM (repair and
 * relinking) and the first insert into an index built empty hold it in
 * ExclusiveLock, alone.  Under ShareLock:
 *	- the entry point does not move: only ExclusiveLock holders move it.  An
 *	  insert whose node must become the entry point (the first node of the
 *	  graph, or one above its top layer) gives its ShareLock up for
 *	  ExclusiveLock before it searches, and reads the meta page again;
 *	- no node is deleted or unlinked (VACUUM waits), so every node a search
 *	  returns stays live, and no link leads to a node free for reuse;
 *	- the search reads one page at a time under share buffer locks, as
 *	  scans do; a list another insert is rewriting is seen before or after;
 *	- placing the node takes the meta page's exclusive buffer lock first,
 *	  then the insert page (or the page of the node it overwrites): one
 *	  inserter at a time picks the insert page or extends the index, and the
 *	  counters change in the record that places the node;
 *	- two inserts may pick the same deleted node to overwrite
 *	  (find_reusable_node): reuse_node checks it is still free under the
 *	  page's exclusive lock, and the loser adds a node instead;
 *	- a back link is a read-modify-write of the neighbour's list: read under
 *	  a share lock, the slot chosen with no lock held (choosing a victim
 *	  reads other nodes' codes), then written under the exclusive lock only
 *	  if the list is still the one read; otherwise it is decided again from
 *	  the list as it is now.  The new node adopts evicted links under its own
 *	  page's exclusive lock, as other inserts may be linking it meanwhile;
 *	  one it has no room for, whose target may have no other way in, it
 *	  links all the same through add_back_link (keep_way_in).
 * No path holds two node pages' buffer locks; the meta page is always
 * locked before a node page (then the buffer page of a merged entry), so
 * inserts, merges and VACUUM cannot deadlock on buffer locks, and an
 * insert never waits for VEC_INSERT_LOCK while it holds a buffer lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "miscadmin.h"
#include "storage/freespace.h"
#include "storage/lmgr.h"

#include "vec.h"

/*
 * How far an insert walks layer 0 for a node of its filter value when
 * none is near (filter_seeds): values of 1% of the rows are met within a
 * few hundred nodes; a value that is not gets no filter links (scans
 * still find its rows, by the walk of layer 0).
 */
#define VEC_SEED_WALK_NODES(info)	(16 * Max((info)->ef_construction, 64))

/*
 * How many times keep_way_in looks after a link that its own forced link
 * displaced: a chain forces at most VEC_WAY_IN_DEPTH + 1 links, and the
 * link the last one displaces is dropped
 */
#define VEC_WAY_IN_DEPTH	2
/* How many ways in from its neighbours a node must keep (has_way_in) */
#define VEC_WAY_IN_LINKS	2

/* A chosen neighbour on one layer */
typedef struct VecLink
{
	int			layer;
	ItemPointerData tid;
	float		distance;
} VecLink;

/*
 * Find the new node's links on every layer it lives on; its candidates on
 * layer 0 (up to ef_construction, nearest first) go to near[]
 */
static int
find_links(Relation index, const VecIndexInfo *info, const VecQuery *query,
		   const VecMetaPageData *meta, int level, VecLink *links,
		   VecCandidate *near, int *nnear)
{
	int			ef = Max(info->ef_construction, 2 * info->m);
	VecCandidate *found = palloc(sizeof(VecCandidate) * ef);
	VecCandidate *selected = palloc(sizeof(VecCandidate) * 2 * info->m);
	VecNodeHeader header;
	int			nfound = 1;
	int			nlinks = 0;

	*nnear = 0;
	found[0].tid = meta->entry;
	found[0].distance = vec_node_distance(index, info, query, &found[0].tid, &header);
	for (int layer = meta->entry_level; layer > level; layer--)
		nfound = vec_search_layer(index, info, query, found, 1, 1, layer, found);

	for (int layer = Min(level, meta->entry_level); layer >= 0; layer--)
	{
		int			nselected;

		nfound = vec_search_layer(index, info, query, found, Max(nfound, 1), ef, layer, found);
		if (nfound == 0)
			break;
		nselected = vec_select_neighbors(index, info, found, nfound,
									 layer == 0 ? 2 * info->m : info->m, selected);
		for (int i = 0; i < nselected; i++)
		{
			links[nlinks].layer = layer;
			links[nlinks].tid = selected[i].tid;
			links[nlinks].distance = selected[i].distance;
			nlinks++;
		}
		if (layer == 0)
		{
			memcpy(near, found, sizeof(VecCandidate) * nfound);
			*nnear = nfound;
		}
	}
	pfree(found);
	pfree(selected);
	return nlinks;
}

/*
 * Where to start searching the graph of one filter column's value
 * (key): the nodes of that value among the new node's layer-0 candidates,
 * whose filter values are near_filters[]; failing those (a rare value),
 * the nearest node of the value met descending the upper layers, or else
 * the first one a walk of layer 0 from the candidates meets within
 * VEC_SEED_WALK_NODES nodes.
 */
static int
filter_seeds(Relation index, const VecIndexInfo *info, const VecQuery *query,
			 const VecMetaPageData *meta, const VecFilterKey *key,
			 const VecCandidate *near, const VecNodeHeader *near_headers,
			 const int64 *near_filters, int nnear, VecCandidate *seeds)
{
	int			nseeds = 0;
	VecCandidate entry;
	VecCandidate seed;
	VecNodeHeader header;

	for (int i = 0; i < nnear; i++)
		if (vec_filters_match(key, 1, near_headers[i].flags, &near_filters[i * VEC_MAX_FILTERS]))
			seeds[nseeds++] = near[i];
	if (nseeds > 0)
		return nseeds;

	entry.tid = meta->entry;
	entry.distance = vec_node_distance(index, info, query, &entry.tid, &header);
	seed.distance = FLT_MAX;
	for (int layer = meta->entry_level; layer > 0; layer--)
		vec_descend_layer(index, info, query, key, 1, &entry, layer, &seed);
	if (seed.distance < FLT_MAX ||
		vec_walk_to_match(index, info, query, key, 1, near, nnear,
						  VEC_SEED_WALK_NODES(info), &seed))
		seeds[nseeds++] = seed;
	return nseeds;
}

/*
 * Find the new node's links on its filter lists: for each filter column
 * it has a value in, the nearest nodes of that value, by a search of
 * their graph (vec.h).  A value no node has yet leaves the list empty.
 */
static int
find_filter_links(Relation index, const VecIndexInfo *info, const VecQuery *query,
				  const VecMetaPageData *meta, const VecNodeHeader *node,
				  const VecCandidate *near, int nnear, VecLink *links)
{
	int			ef = Max(info->ef_construction, 2 * info->m);
	VecCandidate *found = palloc(sizeof(VecCandidate) * ef);
	VecCandidate *selected = palloc(sizeof(VecCandidate) * info->filter_m);
	VecCandidate *seeds = palloc(sizeof(VecCandidate) * Max(nnear, 1));
	VecNodeHeader *near_headers = palloc(sizeof(VecNodeHeader) * Max(nnear, 1));
	int64	   *near_filters = palloc(sizeof(int64) * VEC_MAX_FILTERS * Max(nnear, 1));
	float	   *distances = palloc(sizeof(float) * Max(nnear, 1));
	ItemPointerData *tids = palloc(sizeof(ItemPointerData) * Max(nnear, 1));
	int			nlinks = 0;

	for (int i = 0; i < nnear; i++)
		tids[i] = near[i].tid;
	for (int start = 0; start < nnear; start += VEC_MAX_BATCH)
		vec_batch_distances(index, info, query, tids + start, Min(VEC_MAX_BATCH, nnear - start),
							distances + start, near_headers + start,
							near_filters + (Size) start * VEC_MAX_FILTERS);
	for (int column = 0; column < info->nfilters; column++)
	{
		VecFilterKey key;
		int			nseeds;
		int			nfound;
		int			nselected;

		if (!vec_node_filter(node, info, column, &key.value))
			continue;
		key.column = column;
		key.strategy = BTEqualStrategyNumber;
		nseeds = filter_seeds(index, info, query, meta, &key, near, near_headers, near_filters,
							  nnear, seeds);
		if (nseeds == 0)
			continue;
		nfound = vec_search_layer(index, info, query, seeds, nseeds, ef, VEC_FILTER_LIST(column),
								  found);
		nselected = vec_select_neighbors(index, info, found, nfound, info->filter_m, selected);
		for (int i = 0; i < nselected; i++)
		{
			links[nlinks].layer = VEC_FILTER_LIST(column);
			links[nlinks].tid = selected[i].tid;
			links[nlinks].distance = selected[i].distance;
			nlinks++;
		}
	}
	pfree(found);
	pfree(selected);
	pfree(seeds);
	pfree(near_headers);
	pfree(near_filters);
	pfree(distances);
	pfree(tids);
	return nlinks;
}

/*
 * Within a WAL record being built: mark the buffer entry at entry merged
 * and count it out of the meta page (registered by the caller).  Returns
 * the entry's buffer, exclusively locked, for the caller to release after
 * GenericXLogFinish.
 */
static Buffer
mark_entry_merged(Relation index, const VecIndexInfo *info, GenericXLogState *state,
				  VecMetaPageData *meta, ItemPointer entry)
{
	BlockNumber blkno = ItemPointerGetBlockNumber(entry);
	Buffer		buf = archer_read_page(index, blkno, BUFFER_LOCK_EXCLUSIVE, ARCHER_VEC_PAGE_ID);
	Page		page = GenericXLogRegisterBuffer(state, buf, 0);
	VecNodeHeader *node;

	node = vec_page_entry(index, page, blkno, ItemPointerGetOffsetNumber(entry), info);
	/* merges are serialized and copy only unmerged entries */
	if (node->flags & VEC_NODE_MERGED)
		archer_corrupted(index, blkno, "An insert buffer entry being merged is marked merged already.");
	node->flags |= VEC_NODE_MERGED;
	meta->buffer.entries--;
	return buf;
}

/*
 * Finish the WAL record that writes a node at tid (place_node, reuse_node),
 * with the meta page registered: a node above every other becomes the
 * entry point, and the insert buffer entry it comes from, if any, is
 * marked merged in the same record.
 */
static void
finish_node_record(Relation index, const VecIndexInfo *info, GenericXLogState *state,
				   VecMetaPageData *meta, ItemPointer tid, int level, bool new_entry,
				   ItemPointer entry)
{
	Buffer		entrybuf = InvalidBuffer;

	if (new_entry)
	{
		meta->entry = *tid;
		meta->entry_level = level;
	}
	if (entry != NULL)
		entrybuf = mark_entry_merged(index, info, state, meta, entry);
	GenericXLogFinish(state);
	if (BufferIsValid(entrybuf))
		UnlockReleaseBuffer(entrybuf);
}

/*
 * A new page for place_node: at the end of the index, and for NULL vector
 * rows no lower than their first block (the blocks skipped stay all zeros,
 * for the quantizer: vec.h)
 */
static Buffer
new_row_page(Relation index, const VecIndexInfo *info, uint8 page_kind)
{
	BlockNumber first = page_kind == ARCHER_PAGE_NULL_ROWS ?
		vec_null_rows_first_block(info) : ARCHER_META_BLKNO + 1;
	Buffer		buf = archer_new_buffer(index);

	while (BufferGetBlockNumber(buf) < first)
	{
		UnlockReleaseBuffer(buf);
		buf = archer_new_buffer(index);
	}
	return buf;
}

/*
 * Place the node tuple on the insert page or a new one and update the meta
 * page, in one WAL record; returns the node's TID.  page_kind is
 * ARCHER_PAGE_NODES, or ARCHER_PAGE_NULL_ROWS for a NULL vector row that
 * comes before the dimension (vec.h).
 */
static ItemPointerData
place_node(Relation index, const VecIndexInfo *info, VecNodeHeader *node, Size size,
		   uint8 page_kind, bool new_entry, ItemPointer entry)
{
	Buffer		metabuf = archer_read_page(index, ARCHER_META_BLKNO, BUFFER_LOCK_EXCLUSIVE,
										   ARCHER_VEC_PAGE_ID);
	VecMetaPageData *meta = VecPageGetMeta(BufferGetPage(metabuf));
	Buffer		buf = InvalidBuffer;
	bool		fresh = false;
	GenericXLogState *state;
	Page		page;
	Page		metapage;
	OffsetNumber offnum;
	ItemPointerData tid;

	if (meta->insert_page != InvalidBlockNumber)
	{
		archer_check_link(index, ARCHER_META_BLKNO, meta->insert_page, InvalidBlockNumber);
		buf = archer_read_page(index, meta->insert_page, BUFFER_LOCK_EXCLUSIVE,
							   ARCHER_VEC_PAGE_ID);
		/* a buffer page there could be the merged entry's, locked below */
		if (!(ArcherPageGetOpaque(BufferGetPage(buf))->flags & page_kind))
			archer_corrupted(index, ARCHER_META_BLKNO, "The meta page's insert page is not a page of its kind.");
		if (PageGetFreeSpace(BufferGetPage(buf)) < MAXALIGN(size))
		{
			UnlockReleaseBuffer(buf);
			buf = InvalidBuffer;
		}
	}
	if (!BufferIsValid(buf))
	{
		buf = new_row_page(index, info, page_kind);
		fresh = true;
	}

	state = GenericXLogStart(index);
	metapage = GenericXLogRegisterBuffer(state, metabuf, 0);
	page = GenericXLogRegisterBuffer(state, buf, fresh ? GENERIC_XLOG_FULL_IMAGE : 0);
	if (fresh)
		archer_page_init(page, ARCHER_VEC_PAGE_ID, page_kind, 0);
	offnum = PageAddItem(page, (Item) node, size, InvalidOffsetNumber, false, false);
	if (offnum == InvalidOffsetNumber)
		archer_corrupted(index, BufferGetBlockNumber(buf),
						 "A node page has no room where its header says there is.");
	ItemPointerSet(&tid, BufferGetBlockNumber(buf), offnum);

	meta = VecPageGetMeta(metapage);
	meta->insert_page = BufferGetBlockNumber(buf);
	meta->nnodes++;
	finish_node_record(index, info, state, meta, &tid, node->level, new_entry, entry);
	UnlockReleaseBuffer(buf);
	UnlockReleaseBuffer(metabuf);
	return tid;
}

/*
 * A deleted node to overwrite, one VACUUM marked unlinked (vec_vacuum.c),
 * from a page the free space map lists: false when there is none.  Pages
 * the map lists wrongly (a stale map after a crash, or every deleted node
 * taken) are struck off it.  Another insert may take the node before this
 * one writes it: reuse_node checks.
 */
static bool
find_reusable_node(Relation index, const VecIndexInfo *info, ItemPointer tid, int *level)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);

	for (int tries = 0; tries < 8; tries++)
	{
		BlockNumber blkno = GetPageWithFreeSpace(index, 1);
		Buffer		buf;

		if (blkno == InvalidBlockNumber)
			return false;
		buf = blkno < nblocks && blkno != ARCHER_META_BLKNO ?
			vec_read_node_page(index, blkno) : InvalidBuffer;
		if (BufferIsValid(buf))
		{
			Page		page = BufferGetPage(buf);

			for (OffsetNumber off = FirstOffsetNumber; off <= PageGetMaxOffsetNumber(page); off++)
			{
				VecNodeHeader *node = vec_page_node(index, page, blkno, off, info);

				if ((node->flags & VEC_NODE_DELETED) && !ItemPointerIsValid(&node->heaptid))
				{
					ItemPointerSet(tid, blkno, off);
					*level = node->level;
					UnlockReleaseBuffer(buf);
					return true;
				}
			}
			UnlockReleaseBuffer(buf);
		}
		RecordPageWithFreeSpace(index, blkno, 0);
	}
	return false;
}

/*
 * Overwrite the deleted node at tid with the new node (same level, so the
 * same size) and update the meta page, in one WAL record.  Returns false,
 * writing nothing, if another insert took the node since
 * find_reusable_node saw it free.
 */
static bool
reuse_node(Relation index, const VecIndexInfo *info, VecNodeHeader *node, Size size,
		   ItemPointer tid, bool new_entry, ItemPointer entry)
{
	BlockNumber blkno = ItemPointerGetBlockNumber(tid);
	OffsetNumber offnum = ItemPointerGetOffsetNumber(tid);
	Buffer		metabuf = archer_read_page(index, ARCHER_META_BLKNO, BUFFER_LOCK_EXCLUSIVE,
										   ARCHER_VEC_PAGE_ID);
	Buffer		buf = archer_read_page(index, blkno, BUFFER_LOCK_EXCLUSIVE, ARCHER_VEC_PAGE_ID);
	VecNodeHeader *old = vec_page_node(index, BufferGetPage(buf), blkno, offnum, info);
	GenericXLogState *state;
	VecMetaPageData *meta;
	Page		page;
	bool		more = false;

	if (!(old->flags & VEC_NODE_DELETED) || ItemPointerIsValid(&old->heaptid))
	{
		UnlockReleaseBuffer(buf);
		UnlockReleaseBuffer(metabuf);
		return false;
	}
	/* a node keeps its level while it is deleted and reused */
	if (old->level != node->level)
		archer_corrupted(index, blkno, "A node chosen for reuse changed its level.");
	state = GenericXLogStart(index);
	meta = VecPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	page = GenericXLogRegisterBuffer(state, buf, 0);
	old = vec_page_node(index, page, blkno, offnum, info);
	memcpy(old, node, size);
	meta->ndeleted--;
	for (OffsetNumber off = FirstOffsetNumber; off <= PageGetMaxOffsetNumber(page) && !more; off++)
	{
		VecNodeHeader *other = vec_page_node(index, page, blkno, off, info);

		more = (other->flags & VEC_NODE_DELETED) && !ItemPointerIsValid(&other->heaptid);
	}
	finish_node_record(index, info, state, meta, tid, node->level, new_entry, entry);
	UnlockReleaseBuffer(buf);
	UnlockReleaseBuffer(metabuf);
	if (!more)
		RecordPageWithFreeSpace(index, blkno, 0);
	return true;
}

/* The linked nodes' codes of a full list, for between_new_node */
typedef struct ListCodes
{
	const VecIndexInfo *info;
	const uint8 *code;			/* the new node's */
	uint8		code_flags;
	uint8	   *codes;			/* slot i's at i * dim */
	uint8		flags[VEC_MAX_BATCH];
} ListCodes;

/* The new node's distance to a slot's node: a VecSlotDistance */
static float
between_new_node(void *arg, int slot)
{
	ListCodes  *list = arg;

	return vec_code_distance(list->info, list->code, list->code_flags,
							 list->codes + (Size) slot * list->info->dim, list->flags[slot]);
}

/*
 * Which slot of a full list the new node (code) should take
 * (vec_choose_slot), or -1; *between gets the new node's distance to the
 * link it replaces.  owner_code is the list's owner's.  Reads the linked
 * nodes' codes (every one: a cap on copies of the owner needs them all);
 * the caller holds no buffer lock.
 */
static int
choose_victim(Relation index, const VecIndexInfo *info, const uint8 *code, uint8 code_flags,
			  const uint8 *owner_code, uint8 owner_flags,
			  const VecNeighbor *slots, int nslots, float distance, bool force,
			  float *victim_between)
{
	ListCodes	list = {info, code, code_flags, palloc((Size) nslots * info->dim)};
	float		link_distance[VEC_MAX_BATCH];
	bool		is_copy[VEC_MAX_BATCH];
	int			victim;

	for (int i = 0; i < nslots; i++)
	{
		uint8	   *other = list.codes + (Size) i * info->dim;

		list.flags[i] = vec_copy_node_code(index, info, (ItemPointer) &slots[i].tid, other);
		is_copy[i] = vec_same_code(info, owner_code, owner_flags, other, list.flags[i]);
		link_distance[i] = slots[i].distance;
	}
	victim = vec_choose_slot(link_distance, is_copy, nslots, distance,
							 vec_same_code(info, owner_code, owner_flags, code, code_flags),
							 force, between_new_node, &list, victim_between);
	pfree(list.codes);
	return victim;
}

/*
 * Add a link to the new node (tid, code) on one layer of the node at
 * link->tid: into a free slot, or by the diversity rule when full (always,
 * with force).  Returns whether it linked.  A link it replaces goes to
 * *evicted (its layer, target and distance from the new node) for
 * adopt_evicted; else evicted->tid is invalid.
 * The slot is chosen from a copy of the list, with no lock held (a victim
 * is chosen from the linked nodes' codes, on other pages), and written
 * under the exclusive lock only if the list is still that copy: another
 * insert may have changed it meanwhile, and then the choice is made again.
 */
static bool
add_back_link(Relation index, const VecIndexInfo *info, const VecLink *link,
			  ItemPointer tid, const uint8 *code, uint8 code_flags, bool force,
			  VecLink *evicted)
{
	BlockNumber blkno = ItemPointerGetBlockNumber(&link->tid);
	OffsetNumber offnum = ItemPointerGetOffsetNumber(&link->tid);
	VecNeighbor *slots = NULL;
	uint8	   *owner_code = palloc(info->dim);
	uint8		owner_flags;

	ItemPointerSetInvalid(&evicted->tid);
	for (;;)
	{
		Buffer		buf = archer_read_page(index, blkno, BUFFER_LOCK_SHARE, ARCHER_VEC_PAGE_ID);
		VecNodeHeader *node = vec_page_node(index, BufferGetPage(buf), blkno, offnum, info);
		VecNeighbor *onpage;
		int			nslots;
		int			target = -1;
		float		between = 0;
		VecNeighbor new_link;
		ArcherPageChange change;

		if (!vec_node_has_list(node, info, link->layer))
		{
			UnlockReleaseBuffer(buf);
			return false;
		}
		onpage = vec_node_neighbors(node, info, link->layer, &nslots);
		if (slots == NULL)
			slots = palloc(sizeof(VecNeighbor) * nslots);
		memcpy(slots, onpage, sizeof(VecNeighbor) * nslots);
		memcpy(owner_code, vec_node_code(node), info->dim);
		owner_flags = node->flags;
		UnlockReleaseBuffer(buf);

		/* a node being relinked (vec_relink_node) may be linked from here already */
		for (int i = 0; i < nslots; i++)
			if (ItemPointerEquals(&slots[i].tid, tid))
				return true;
		for (int i = 0; i < nslots && target < 0; i++)
			if (!ItemPointerIsValid(&slots[i].tid))
				target = i;
		if (target < 0)
		{
			target = choose_victim(index, info, code, code_flags, owner_code, owner_flags,
								   slots, nslots, link->distance, force, &between);
			if (target < 0)
				return false;
		}

		buf = archer_read_page(index, blkno, BUFFER_LOCK_EXCLUSIVE, ARCHER_VEC_PAGE_ID);
		node = vec_page_node(index, BufferGetPage(buf), blkno, offnum, info);
		onpage = vec_node_neighbors(node, info, link->layer, &nslots);
		if (memcmp(onpage, slots, sizeof(VecNeighbor) * nslots) != 0)
		{
			UnlockReleaseBuffer(buf);
			CHECK_FOR_INTERRUPTS();
			continue;
		}
		if (ItemPointerIsValid(&slots[target].tid))
		{
			evicted->layer = link->layer;
			evicted->tid = slots[target].tid;
			evicted->distance = between;
		}
		new_link.tid = *tid;
		new_link.pad = 0;
		new_link.distance = link->distance;
		change.offset = (char *) &onpage[target] - (char *) BufferGetPage(buf);
		change.length = sizeof(VecNeighbor);
		change.data = &new_link;
		archer_page_write_logged(index, buf, &change, 1);
		UnlockReleaseBuffer(buf);
		return true;
	}
}

/*
 * Put each replaced link into a free slot of the same list of the node
 * (tid), unless it has that link already; returns how many it put (with
 * apply false, how many it would, and kept[e] tells whether the node
 * links evicted[e]'s target then).
 */
static int
adopt_into(VecNodeHeader *node, const VecIndexInfo *info, ItemPointer tid,
		   const VecLink *evicted, int nevicted, bool apply, bool *kept)
{
	int			nadopted = 0;

	for (int e = 0; e < nevicted; e++)
	{
		ItemPointerData target = evicted[e].tid;
		int			nslots;
		VecNeighbor *slots;
		int			free_slot = -1;
		bool		present = ItemPointerEquals(&target, tid);

		if (!vec_node_has_list(node, info, evicted[e].layer))
			continue;
		slots = vec_node_neighbors(node, info, evicted[e].layer, &nslots);
		for (int i = 0; i < nslots && !present; i++)
		{
			if (ItemPointerEquals(&slots[i].tid, &target))
				present = true;
			else if (free_slot < 0 && !ItemPointerIsValid(&slots[i].tid))
				free_slot = i;
		}
		if (!apply)
			kept[e] = present || free_slot >= 0;
		if (present || free_slot < 0)
			continue;
		nadopted++;
		if (!apply)
		{
			/* the same free slot may take only one of two evicted links */
			slots[free_slot].tid = target;
			continue;
		}
		slots[free_slot].tid = target;
		slots[free_slot].pad = 0;
		slots[free_slot].distance = evicted[e].distance;
	}
	return nadopted;
}

/*
 * The new node at tid takes over the links its back links replaced, into
 * free slots of its own lists, in one WAL record: a replaced link may have
 * been its target's only way in (on data with many equal vectors, whole
 * groups hang on one link), and through the new node, now linked from
 * where it was, the target stays reachable.  kept[e] tells whether the
 * new node links evicted[e]'s target now; keep_way_in looks after the
 * others.
 */
static void
adopt_evicted(Relation index, const VecIndexInfo *info, ItemPointer tid,
			  const VecLink *evicted, int nevicted, bool *kept)
{
	BlockNumber blkno = ItemPointerGetBlockNumber(tid);
	OffsetNumber offnum = ItemPointerGetOffsetNumber(tid);
	Buffer		buf;
	VecNodeHeader *copy;
	GenericXLogState *state;

	if (nevicted == 0)
		return;
	buf = archer_read_page(index, blkno, BUFFER_LOCK_EXCLUSIVE, ARCHER_VEC_PAGE_ID);
	copy = vec_page_node(index, BufferGetPage(buf), blkno, offnum, info);
	copy = memcpy(palloc(vec_node_size(info, copy->level)), copy, vec_node_size(info, copy->level));
	if (adopt_into(copy, info, tid, evicted, nevicted, false, kept) > 0)
	{
		state = GenericXLogStart(index);
		(void) adopt_into(vec_page_node(index, GenericXLogRegisterBuffer(state, buf, 0), blkno,
										offnum, info),
						  info, tid, evicted, nevicted, true, NULL);
		GenericXLogFinish(state);
	}
	UnlockReleaseBuffer(buf);
	pfree(copy);
}

/*
 * Whether VEC_WAY_IN_LINKS of the nodes that the node at tid links to on
 * layer 0 link back to it there, or the node is deleted (VACUUM looks
 * after its links): the sign that it has ways in besides a link just
 * replaced.  One way in is not enough: two nodes that link only to each
 * other and to a group of equal vectors each have one, and lose both when
 * the group's links to them go.  Reads a page per neighbour, only for
 * replaced links that the new node could not adopt.
 */
static bool
has_way_in(Relation index, const VecIndexInfo *info, ItemPointer tid)
{
	BlockNumber blkno = ItemPointerGetBlockNumber(tid);
	Buffer		buf = archer_read_page(index, blkno, BUFFER_LOCK_SHARE, ARCHER_VEC_PAGE_ID);
	VecNodeHeader *node = vec_page_node(index, BufferGetPage(buf), blkno,
										ItemPointerGetOffsetNumber(tid), info);
	VecNeighbor *neighbors;
	int			nslots;
	int			found = (node->flags & VEC_NODE_DELETED) ? VEC_WAY_IN_LINKS : 0;

	neighbors = vec_node_neighbors(node, info, 0, &nslots);
	neighbors = memcpy(palloc(sizeof(VecNeighbor) * nslots), neighbors,
					   sizeof(VecNeighbor) * nslots);
	UnlockReleaseBuffer(buf);
	for (int i = 0; i < nslots && found < VEC_WAY_IN_LINKS; i++)
	{
		VecNeighbor *back;
		int			nback;

		if (!ItemPointerIsValid(&neighbors[i].tid))
			continue;
		blkno = ItemPointerGetBlockNumber(&neighbors[i].tid);
		buf = archer_read_page(index, blkno, BUFFER_LOCK_SHARE, ARCHER_VEC_PAGE_ID);
		node = vec_page_node(index, BufferGetPage(buf), blkno,
							 ItemPointerGetOffsetNumber(&neighbors[i].tid), info);
		back = vec_node_neighbors(node, info, 0, &nback);
		for (int j = 0; j < nback; j++)
			found += ItemPointerEquals(&back[j].tid, tid);
		UnlockReleaseBuffer(buf);
	}
	pfree(neighbors);
	return found >= VEC_WAY_IN_LINKS;
}

/*
 * A layer-0 link to evicted->tid gave way to the node at tid, which could
 * not adopt it.  Unless the target keeps ways in (has_way_in), the node
 * at tid links it all the same, in the slot the diversity rule picks or
 * its farthest (it is linked from where the lost link was, so the target
 * stays reachable); the link that gives way there is looked after alike
 * (from the target's list, which the next forced link goes into), depth
 * more times.  Past that it is dropped, and VACUUM relinks its
 * target if no search reaches it (vec_reach.c).  Without this, inserts
 * crowding the lists of a node's few neighbours leave it unreachable: a
 * diversity-pruned graph of high intrinsic dimension (uniform random
 * data, say) has many nodes with two or three ways in.
 */
static void
keep_way_in(Relation index, const VecIndexInfo *info, ItemPointer tid,
			const VecLink *evicted, int depth)
{
	uint8	   *code;
	uint8		code_flags;
	VecLink		from;
	VecLink		again;

	if (evicted->layer != 0 || has_way_in(index, info, (ItemPointer) &evicted->tid))
		return;
	code = palloc(info->dim);
	code_flags = vec_copy_node_code(index, info, (ItemPointer) &evicted->tid, code);
	from.layer = 0;
	from.tid = *tid;
	from.distance = evicted->distance;
	if (add_back_link(index, info, &from, (ItemPointer) &evicted->tid, code, code_flags, true,
					  &again) &&
		ItemPointerIsValid(&again.tid) && depth > 0)
		keep_way_in(index, info, (ItemPointer) &evicted->tid, &again, depth - 1);
	pfree(code);
}

/*
 * Link the new node from its neighbours, layer by layer (links[] holds the
 * layers top down, then the filter lists, nearest first within each).  A
 * layer or list where every neighbour turned it down links it from its
 * nearest one all the same; on layer 0 the nearest ones that turned it
 * down link it until VEC_WAY_IN_LINKS do.  A node linked only from one
 * neighbour hangs on that one's own ways in: in a group of equal vectors,
 * whose old members' lists are full, new members linked only from the
 * newest member that still had room made a few nodes that linked only to
 * each other, which has_way_in counts as ways in, and lost them all
 * together.  The neighbours were found from the entry point, so a forced
 * link comes from a node a search reaches.  Then the node adopts the
 * links it replaced.
 */
static void
add_back_links(Relation index, const VecIndexInfo *info, const VecLink *links, int nlinks,
			   ItemPointer tid, const uint8 *code, uint8 code_flags)
{
	VecLink    *evicted = palloc(sizeof(VecLink) * Max(nlinks, 1));
	bool	   *linked = palloc(sizeof(bool) * Max(nlinks, 1));
	bool	   *kept;
	int			nevicted = 0;
	int			first = 0;

	while (first < nlinks)
	{
		int			end = first;
		int			nlinked = 0;
		int			needed = links[first].layer == 0 ? VEC_WAY_IN_LINKS : 1;

		for (; end < nlinks && links[end].layer == links[first].layer; end++)
		{
			linked[end] = add_back_link(index, info, &links[end], tid, code, code_flags, false,
										&evicted[nevicted]);
			nlinked += linked[end];
			if (ItemPointerIsValid(&evicted[nevicted].tid))
				nevicted++;
		}
		for (int i = first; i < end && nlinked < needed; i++)
		{
			if (linked[i])
				continue;
			nlinked += add_back_link(index, info, &links[i], tid, code, code_flags, true,
									 &evicted[nevicted]);
			if (ItemPointerIsValid(&evicted[nevicted].tid))
				nevicted++;
		}
		first = end;
	}
	pfree(linked);
	kept = palloc0(sizeof(bool) * Max(nevicted, 1));
	adopt_evicted(index, info, tid, evicted, nevicted, kept);
	for (int e = 0; e < nevicted; e++)
		if (!kept[e])
			keep_way_in(index, info, tid, &evicted[e], VEC_WAY_IN_DEPTH);
	pfree(kept);
	pfree(evicted);
}

/* Empty every neighbour slot of a node */
void
vec_node_clear_links(VecNodeHeader *node, const VecIndexInfo *info)
{
	int			lists[VEC_MAX_LISTS];
	int			nlists = vec_node_lists(node, info, lists);

	for (int l = 0; l < nlists; l++)
	{
		int			nslots;
		VecNeighbor *slots = vec_node_neighbors(node, info, lists[l], &nslots);

		for (int i = 0; i < nslots; i++)
			ItemPointerSetInvalid(&slots[i].tid);
	}
}

/*
 * Link a node into the graph: src holds its heap TID, code, error and
 * filter values (a new_node() or an insert buffer entry, any level), x the
 * vector its neighbours are searched for.  The node takes a random level,
 * or the level of a deleted node it overwrites.  The node of a NULL vector
 * (x NULL) is placed at level 0 and linked to nothing.  With entry, the
 * insert buffer entry it comes from is marked merged in the record that
 * places it.  The caller holds VEC_INSERT_LOCK in lockmode, ShareLock or
 * ExclusiveLock; a node that must become the entry point trades ShareLock
 * for ExclusiveLock (see the top of the file).  Returns the mode the caller
 * holds the lock in now.
 */
LOCKMODE
vec_insert_node(Relation index, const VecIndexInfo *info, const VecNodeHeader *src,
				const float *x, ItemPointer entry, LOCKMODE lockmode)
{
	VecMetaPageData meta;
	Size		size;
	VecNodeHeader *node;
	VecQuery	query;
	VecLink    *links;
	int			nlinks = 0;
	bool		null_vector = VEC_NODE_IS_NULL_VECTOR(info, src->flags);
	int			level = 0;
	int64		filters[VEC_MAX_FILTERS];
	ItemPointerData tid;
	bool		reuse = false;
	bool		new_entry;

	/*
	 * A reused node keeps its level: levels are drawn alike, and its size
	 * stays.  A NULL vector's node stays on level 0 (an upper level would
	 * count as the top layer's), so it takes a new slot.
	 */
	if (!null_vector)
	{
		level = vec_random_level(info->m);
		reuse = find_reusable_node(index, info, &tid, &level);
	}
	while (level > 0 && vec_node_size(info, level) > (Size) ARCHER_PAGE_CAPACITY_BYTES - 64)
		level--;
	size = vec_node_size(info, level);
	node = palloc0(size);
	node->heaptid = src->heaptid;
	node->level = level;
	node->flags = src->flags & ~(VEC_NODE_MERGED | VEC_NODE_DELETED);
	node->error = src->error;
	node->norm = src->norm;
	memcpy(vec_node_code(node), vec_node_code((VecNodeHeader *) src), info->dim);
	for (int i = 0; i < info->nfilters; i++)
		(void) vec_node_filter(src, info, i, &filters[i]);
	vec_node_set_filters(node, info, filters);
	vec_node_clear_links(node, info);

	if (null_vector)
	{
		(void) place_node(index, info, node, size, ARCHER_PAGE_NODES, false, entry);
		return lockmode;
	}
	vec_read_meta(index, &meta);
	new_entry = !ItemPointerIsValid(&meta.entry) || level > meta.entry_level;
	if (new_entry && lockmode == ShareLock)
	{
		/* the entry may move while no lock is held: look again */
		UnlockPage(index, VEC_INSERT_LOCK, ShareLock);
		lockmode = ExclusiveLock;
		LockPage(index, VEC_INSERT_LOCK, lockmode);
		vec_read_meta(index, &meta);
		new_entry = !ItemPointerIsValid(&meta.entry) || level > meta.entry_level;
	}
	links = palloc(sizeof(VecLink) *
				   (2 * info->m + level * info->m + info->nfilters * info->filter_m));
	if (ItemPointerIsValid(&meta.entry))
	{
		VecCandidate *near = palloc(sizeof(VecCandidate) * Max(info->ef_construction, 2 * info->m));
		int			nnear;

		vec_node_query_init(&query, info, x);
		nlinks = find_links(index, info, &query, &meta, level, links, near, &nnear);
		if (info->filter_m > 0)
			nlinks += find_filter_links(index, info, &query, &meta, node, near, nnear,
										links + nlinks);
		pfree(near);
		for (int i = 0; i < nlinks; i++)
		{
			int			nslots;
			VecNeighbor *slots = vec_node_neighbors(node, info, links[i].layer, &nslots);
			int			slot = 0;

			while (ItemPointerIsValid(&slots[slot].tid))
				slot++;
			slots[slot].tid = links[i].tid;
			slots[slot].distance = links[i].distance;
		}
	}

	/* a node another insert took meanwhile leaves this one a new node of its level */
	if (!reuse || !reuse_node(index, info, node, size, &tid, new_entry, entry))
		tid = place_node(index, info, node, size, ARCHER_PAGE_NODES, new_entry, entry);
	add_back_links(index, info, links, nlinks, &tid, vec_node_code(node), node->flags);
	return lockmode;
}

/*
 * Link an existing live node at tid from the nodes an insert of it would
 * link it from: the repair of a node no search reaches (vec_reach.c), as
 * an insert or merge interrupted between writing the node and writing its
 * back links leaves.  The search only walks links from the entry point,
 * so those nodes are reachable, and the node is too once they link to it.
 * The node keeps its own links; only back links are added, each in its
 * own WAL record like an insert's.  Its vector is decoded from its code,
 * as a merge does for buffer entries.  The caller holds VEC_INSERT_LOCK.
 */
void
vec_relink_node(Relation index, const VecIndexInfo *info, ItemPointer tid)
{
	BlockNumber blkno = ItemPointerGetBlockNumber(tid);
	Buffer		buf = archer_read_page(index, blkno, BUFFER_LOCK_SHARE, ARCHER_VEC_PAGE_ID);
	VecNodeHeader *onpage = vec_page_node(index, BufferGetPage(buf), blkno,
										  ItemPointerGetOffsetNumber(tid), info);
	VecNodeHeader *node = palloc(vec_node_size(info, onpage->level));
	float	   *x = palloc(sizeof(float) * info->dim);
	VecMetaPageData meta;
	VecQuery	query;
	VecLink    *links;
	VecCandidate *near;
	int			nnear;
	int			nlinks;
	int			nkept = 0;

	memcpy(node, onpage, vec_node_size(info, onpage->level));
	UnlockReleaseBuffer(buf);
	if (node->flags & VEC_NODE_DELETED)
		return;

	vec_read_meta(index, &meta);
	if (!ItemPointerIsValid(&meta.entry) || ItemPointerEquals(&meta.entry, tid))
		return;
	archer_sq8_decode(vec_quantizer(info, node->flags), vec_node_code(node), x);
	vec_node_query_init(&query, info, x);
	links = palloc(sizeof(VecLink) *
				   (2 * info->m + node->level * info->m + info->nfilters * info->filter_m));
	near = palloc(sizeof(VecCandidate) * Max(info->ef_construction, 2 * info->m));
	nlinks = find_links(index, info, &query, &meta, node->level, links, near, &nnear);
	if (info->filter_m > 0)
		nlinks += find_filter_links(index, info, &query, &meta, node, near, nnear,
									links + nlinks);
	/* a node an earlier relink made reachable is found by its own search */
	for (int i = 0; i < nlinks; i++)
		if (!ItemPointerEquals(&links[i].tid, tid))
			links[nkept++] = links[i];
	add_back_links(index, info, links, nkept, tid, vec_node_code(node), node->flags);
	pfree(links);
	pfree(near);
	pfree(x);
	pfree(node);
}

/*
 * Keep the row of a NULL vector that comes before the index knows its
 * dimension (vec.h): node is sized by vec_null_rows_info.  The caller holds
 * VEC_INSERT_LOCK in ExclusiveLock, or builds the index.
 */
void
vec_place_null_row(Relation index, const VecIndexInfo *info, VecNodeHeader *node)
{
	VecIndexInfo rows_info;

	vec_null_rows_info(info, &rows_info);
	(void) place_node(index, info, node, vec_node_size(&rows_info, 0), ARCHER_PAGE_NULL_ROWS,
					  false, NULL);
}
