/*-------------------------------------------------------------------------
 *
 * vec_vacuum.c
 *	  VACUUM for archer_vector: delete the nodes of dead rows and repair the
 *	  graph around them.
 *
 * Under the insert lock (inserts wait; scans go on):
 *	0. merge the insert buffer into the graph (vec_buffer.c), so that the
 *	   rows it held are deleted like any other;
 *	1. mark the node of every dead row deleted (one WAL record per page);
 *	2. for every live node linking to a deleted one, rebuild that layer's
 *	   (or filter list's) links from its remaining links and the deleted
 *	   neighbours' links on the same list,
 *	   chosen by the insert's diversity heuristic: no live node is left
 *	   pointing at a deleted one, and paths that went through a deleted
 *	   node get a way around it;
 *	3. if the entry point died, make the live node on the highest layer the
 *	   entry point;
 *	4. once every page is repaired, mark the deleted nodes unlinked (their
 *	   heap TID invalid) and list their pages in the free space map:
 *	   inserts overwrite only unlinked nodes (vec_graph.c), which no live
 *	   node links to.  A VACUUM cut short leaves its deleted nodes linked
 *	   and never reused: a node reused while a filter list of another
 *	   value still linked it would join two values' graphs.
 *	5. (vacuumcleanup, every VACUUM) relink the live nodes no search
 *	   reaches (vec_reach.c), which an insert or merge interrupted between
 *	   writing a node and writing its back links leaves behind.
 * Pass 1 also marks the dead rows of pages of NULL vector rows (vec.h),
 * which the other passes leave alone: nothing links to them, and they are
 * not reused.
 * Nodes deleted by an earlier VACUUM count as deleted in pass 2 too, so
 * links a crash left pointing at them are repaired before they are reused.
 * Scans running meanwhile may still reach a deleted node through a link
 * they copied earlier; they traverse it but never return it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/vacuum.h"
#include "storage/freespace.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"

#include "merge.h"
#include "vec.h"

static int
candidate_cmp(const void *a, const void *b)
{
	float		da = ((const VecCandidate *) a)->distance;
	float		db = ((const VecCandidate *) b)->distance;

	return (da > db) - (da < db);
}

/*
 * Pass 1: mark the nodes of dead rows; returns how many.  Every deleted
 * node, new or old, goes into *deleted.
 */
static int64
mark_deleted(Relation index, const VecIndexInfo *info, IndexVacuumInfo *vinfo,
			 IndexBulkDeleteCallback callback, void *callback_state,
			 VecVisited *deleted, double *nlive)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	int64		ndeleted = 0;
	VecIndexInfo rows_info;

	vec_null_rows_info(info, &rows_info);
	for (BlockNumber blkno = ARCHER_META_BLKNO + 1; blkno < nblocks; blkno++)
	{
		Buffer		buf;
		Page		page;
		GenericXLogState *state = NULL;
		bool		null_rows;
		const VecIndexInfo *layout;

		vacuum_delay_point(false);
		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, vinfo->strategy);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		page = BufferGetPage(buf);
		if (PageIsNew(page))
		{
			UnlockReleaseBuffer(buf);
			continue;
		}
		archer_check_page(index, page, blkno, ARCHER_VEC_PAGE_ID);
		if (!(ArcherPageGetOpaque(page)->flags & (ARCHER_PAGE_NODES | ARCHER_PAGE_NULL_ROWS)))
		{
			UnlockReleaseBuffer(buf);
			continue;
		}
		null_rows = (ArcherPageGetOpaque(page)->flags & ARCHER_PAGE_NULL_ROWS) != 0;
		layout = vec_page_layout(page, info, &rows_info);
		for (OffsetNumber off = FirstOffsetNumber; off <= PageGetMaxOffsetNumber(page); off++)
		{
			VecNodeHeader *node = vec_page_row(index, page, blkno, off, layout);
			ItemPointerData tid;

			ItemPointerSet(&tid, blkno, off);
			/* a deleted NULL vector row is never reused: passes 2 to 4 skip it */
			if (node->flags & VEC_NODE_DELETED)
			{
				if (!null_rows)
					(void) vec_visited_add(deleted, &tid);
				continue;
			}
			if (!callback(&node->heaptid, callback_state))
			{
				(*nlive)++;
				continue;
			}
			if (state == NULL)
			{
				state = GenericXLogStart(index);
				page = GenericXLogRegisterBuffer(state, buf, 0);
				node = vec_page_row(index, page, blkno, off, layout);
			}
			node->flags |= VEC_NODE_DELETED;
			(void) vec_visited_add(deleted, &tid);
			ndeleted++;
		}
		if (state != NULL)
			GenericXLogFinish(state);
		UnlockReleaseBuffer(buf);
	}
	return ndeleted;
}

/* Copy a node (header, code and links) out of its page */
static VecNodeHeader *
copy_node(Relation index, const VecIndexInfo *info, ItemPointer tid)
{
	BlockNumber blkno = ItemPointerGetBlockNumber(tid);
	Buffer		buf = archer_read_page(index, blkno, BUFFER_LOCK_SHARE, ARCHER_VEC_PAGE_ID);
	VecNodeHeader *node = vec_page_node(index, BufferGetPage(buf), blkno,
										ItemPointerGetOffsetNumber(tid), info);
	Size		size = vec_node_size(info, node->level);
	VecNodeHeader *copy = palloc(size);

	memcpy(copy, node, size);
	UnlockReleaseBuffer(buf);
	return copy;
}

/*
 * Rebuild the links of one layer of a live node that points at deleted
 * nodes, from its remaining links and the deleted neighbours' links, with
 * the same diversity heuristic as inserts; returns true if the slots
 * changed.
 */
static bool
repair_layer(Relation index, const VecIndexInfo *info, VecNodeHeader *node,
			 ItemPointer self, int layer, VecVisited *deleted)
{
	int			nslots;
	VecNeighbor *slots = vec_node_neighbors(node, info, layer, &nslots);
	VecCandidate *cands;
	int			ncands = 0;
	int			maxcands = nslots * (nslots + 1);
	bool		touched = false;
	VecVisited	seen;
	VecCandidate *selected;
	int			nselected;

	for (int i = 0; i < nslots && !touched; i++)
		touched = ItemPointerIsValid(&slots[i].tid) && vec_visited_contains(deleted, &slots[i].tid);
	if (!touched)
		return false;

	cands = palloc(sizeof(VecCandidate) * maxcands);
	selected = palloc(sizeof(VecCandidate) * nslots);
	vec_visited_init(&seen, maxcands);
	(void) vec_visited_add(&seen, self);
	for (int i = 0; i < nslots; i++)
	{
		if (!ItemPointerIsValid(&slots[i].tid) || !vec_visited_add(&seen, &slots[i].tid))
			continue;
		if (!vec_visited_contains(deleted, &slots[i].tid))
		{
			cands[ncands].tid = slots[i].tid;
			cands[ncands++].distance = slots[i].distance;
			continue;
		}
		/* a deleted neighbour: its own links are the way around it */
		{
			ItemPointerData *links = palloc(sizeof(ItemPointerData) * 2 * info->m);
			int			nlinks = vec_node_links(index, info, &slots[i].tid, layer, links);

			for (int j = 0; j < nlinks && ncands < maxcands; j++)
			{
				VecNodeHeader *other;

				if (vec_visited_contains(deleted, &links[j]) || !vec_visited_add(&seen, &links[j]))
					continue;
				other = copy_node(index, info, &links[j]);
				if (!(other->flags & VEC_NODE_DELETED) && vec_node_has_list(other, info, layer))
				{
					cands[ncands].tid = links[j];
					cands[ncands++].distance = vec_code_distance(info, vec_node_code(node), node->flags,
																 vec_node_code(other), other->flags);
				}
				pfree(other);
			}
			pfree(links);
		}
	}
	qsort(cands, ncands, sizeof(VecCandidate), candidate_cmp);
	nselected = vec_select_neighbors(index, info, cands, ncands, nslots, selected);
	for (int i = 0; i < nslots; i++)
	{
		if (i < nselected)
		{
			slots[i].tid = selected[i].tid;
			slots[i].distance = selected[i].distance;
		}
		else
			ItemPointerSetInvalid(&slots[i].tid);
		slots[i].pad = 0;
	}
	pfree(cands);
	pfree(selected);
	return true;
}

/* Write the repaired links of a node back to its page */
static void
write_links(Relation index, const VecIndexInfo *info, ItemPointer tid, VecNodeHeader *repaired)
{
	BlockNumber blkno = ItemPointerGetBlockNumber(tid);
	Buffer		buf = archer_read_page(index, blkno, BUFFER_LOCK_EXCLUSIVE, ARCHER_VEC_PAGE_ID);
	GenericXLogState *state = GenericXLogStart(index);
	Page		page = GenericXLogRegisterBuffer(state, buf, 0);
	VecNodeHeader *node = vec_page_node(index, page, blkno, ItemPointerGetOffsetNumber(tid), info);
	Size		size = vec_node_size(info, node->level);

	/* only links change: keep the page's header fields as they are now */
	memcpy((char *) node + sizeof(VecNodeHeader) + TYPEALIGN(4, info->dim),
		   (char *) repaired + sizeof(VecNodeHeader) + TYPEALIGN(4, info->dim),
		   size - sizeof(VecNodeHeader) - TYPEALIGN(4, info->dim));
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
}

/*
 * Pass 4 for one page: its deleted nodes are unlinked now (no live node,
 * nor the entry point, leads to them), which their invalid heap TID says,
 * so inserts may overwrite them; then the free space map lists the page.
 */
static void
mark_unlinked(Relation index, const VecIndexInfo *info, IndexVacuumInfo *vinfo,
			  BlockNumber blkno)
{
	Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, vinfo->strategy);
	GenericXLogState *state = NULL;
	Page		page;

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	page = BufferGetPage(buf);
	archer_check_page(index, page, blkno, ARCHER_VEC_PAGE_ID);
	for (OffsetNumber off = FirstOffsetNumber; off <= PageGetMaxOffsetNumber(page); off++)
	{
		VecNodeHeader *node = vec_page_node(index, page, blkno, off, info);

		if (!(node->flags & VEC_NODE_DELETED) || !ItemPointerIsValid(&node->heaptid))
			continue;
		if (state == NULL)
		{
			state = GenericXLogStart(index);
			page = GenericXLogRegisterBuffer(state, buf, 0);
			node = vec_page_node(index, page, blkno, off, info);
		}
		ItemPointerSetInvalid(&node->heaptid);
	}
	if (state != NULL)
		GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
	RecordPageWithFreeSpace(index, blkno, VEC_FSM_REUSABLE);
}

/*
 * Passes 2 to 4: repair links, count the deletions, move the entry point,
 * mark deleted nodes unlinked and list their pages
 */
static void
repair_graph(Relation index, const VecIndexInfo *info, IndexVacuumInfo *vinfo,
			 VecVisited *deleted, int64 ndeleted)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	ItemPointerData top;
	int			top_level = -1;
	bool		reusable;
	BlockNumber *reusable_blocks = palloc(sizeof(BlockNumber) * Max(nblocks, 1));
	int			nreusable = 0;

	ItemPointerSetInvalid(&top);
	for (BlockNumber blkno = ARCHER_META_BLKNO + 1; blkno < nblocks; blkno++)
	{
		Buffer		buf;
		Page		page;
		OffsetNumber maxoff;

		vacuum_delay_point(false);
		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, vinfo->strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (!PageIsNew(page))
			archer_check_page(index, page, blkno, ARCHER_VEC_PAGE_ID);
		if (PageIsNew(page) || !(ArcherPageGetOpaque(page)->flags & ARCHER_PAGE_NODES))
		{
			UnlockReleaseBuffer(buf);
			continue;
		}
		maxoff = PageGetMaxOffsetNumber(page);
		UnlockReleaseBuffer(buf);

		reusable = false;
		for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
		{
			ItemPointerData tid;
			VecNodeHeader *node;
			bool		changed = false;
			int			lists[VEC_MAX_LISTS];
			int			nlists;

			ItemPointerSet(&tid, blkno, off);
			node = copy_node(index, info, &tid);
			if (node->flags & VEC_NODE_DELETED)
			{
				reusable = true;
				pfree(node);
				continue;
			}
			/* a NULL vector's node has no links to repair and is no entry point */
			if (VEC_NODE_IS_NULL_VECTOR(info, node->flags))
			{
				pfree(node);
				continue;
			}
			if (node->level > top_level)
			{
				top_level = node->level;
				top = tid;
			}
			nlists = vec_node_lists(node, info, lists);
			for (int l = 0; l < nlists; l++)
				changed |= repair_layer(index, info, node, &tid, lists[l], deleted);
			if (changed)
				write_links(index, info, &tid, node);
			pfree(node);
		}
		if (reusable)
			reusable_blocks[nreusable++] = blkno;
		else
			RecordPageWithFreeSpace(index, blkno, 0);
	}

	{
		Buffer		metabuf = archer_read_page(index, ARCHER_META_BLKNO, BUFFER_LOCK_EXCLUSIVE,
											   ARCHER_VEC_PAGE_ID);
		GenericXLogState *state = GenericXLogStart(index);
		VecMetaPageData *meta = VecPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));

		meta->ndeleted += ndeleted;
		if (ItemPointerIsValid(&meta->entry) && vec_visited_contains(deleted, &meta->entry))
		{
			meta->entry = top;
			meta->entry_level = Max(top_level, 0);
		}
		GenericXLogFinish(state);
		UnlockReleaseBuffer(metabuf);
	}

	for (int i = 0; i < nreusable; i++)
	{
		vacuum_delay_point(false);
		mark_unlinked(index, info, vinfo, reusable_blocks[i]);
	}
	IndexFreeSpaceMapVacuum(index);
	pfree(reusable_blocks);
}

IndexBulkDeleteResult *
vec_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
			   IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	const VecIndexInfo *vinfo;
	VecVisited	deleted;
	double		nlive = 0;
	int64		ndeleted;

	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));
	LockPage(index, VEC_INSERT_LOCK, ExclusiveLock);
	vinfo = vec_index_info(index);
	/* without a dimension no buffer and no graph: only NULL vector rows (vec.h) */
	if (vinfo->dim > 0)
		(void) vec_buffer_merge(index, 0);
	vec_visited_init(&deleted, 1024);
	ndeleted = mark_deleted(index, vinfo, info, callback, callback_state, &deleted, &nlive);
	/* deleted NULL vector rows count in the meta page, but are not in deleted */
	if (deleted.count > 0 || ndeleted > 0)
		repair_graph(index, vinfo, info, &deleted, ndeleted);
	stats->tuples_removed += ndeleted;
	UnlockPage(index, VEC_INSERT_LOCK, ExclusiveLock);
	stats->num_index_tuples = nlive;
	stats->num_pages = RelationGetNumberOfBlocks(index);
	return stats;
}

/*
 * After a VACUUM that deleted nothing: the insert buffer is merged all the
 * same (VACUUM is one of the times a buffer gets merged without a worker).
 * After every VACUUM: pass 5.
 */
IndexBulkDeleteResult *
vec_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	VecMetaPageData meta;
	const VecIndexInfo *vinfo;
	int64		relinked = 0;

	if (info->analyze_only)
		return stats;
	if (stats == NULL)
	{
		(void) archer_merge_buffer(info->index, 0, true);
		vec_read_meta(info->index, &meta);
		stats = palloc0(sizeof(IndexBulkDeleteResult));
		stats->num_index_tuples = meta.nnodes - meta.ndeleted + meta.buffer.entries;
		stats->num_pages = RelationGetNumberOfBlocks(info->index);
	}
	LockPage(info->index, VEC_INSERT_LOCK, ExclusiveLock);
	vinfo = vec_index_info(info->index);
	if (vinfo->dim > 0)
		relinked = vec_relink_unreachable(info->index, vinfo);
	UnlockPage(info->index, VEC_INSERT_LOCK, ExclusiveLock);
	if (relinked > 0)
		ereport(LOG,
				(errmsg("relinked " INT64_FORMAT " nodes of index \"%s\" that no search reached",
						relinked, RelationGetRelationName(info->index))));
	return stats;
}
