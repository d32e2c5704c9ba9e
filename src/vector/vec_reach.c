/*-------------------------------------------------------------------------
 *
 * vec_reach.c
 *	  Which nodes of an archer_vector graph a search can reach: every node
 *	  that links of any layer lead to from the entry point.
 *
 * An insert writes its node first and its back links after (vec_graph.c):
 * a crash or an ERROR in between leaves a live node nothing links to, whose
 * row no search returns.  archer_vector_verify reports such nodes and
 * VACUUM relinks them (vec_vacuum.c); both find them here.
 *
 * A search descends the upper layers and goes on over layer 0 from where
 * it lands, so a node is reachable through links of every layer: on
 * clustered data layer 0 alone often has no link between two clusters,
 * which only the upper layers join.  Filter lists are shortcuts within
 * one value's nodes that only filtered scans take, and a rare value's
 * nodes have none by design: they are not followed.
 *
 * Memory: two bits per node slot the index's blocks could hold (reached,
 * and pending: reached but its links not followed yet), bounded by
 * maintenance_work_mem, instead of a queue or hash set that grows with the
 * node count.  The walk sweeps the pages in block order, following the
 * links of pending nodes: a link to a later slot is followed in the same
 * sweep, so few sweeps are needed, and a sweep reads only pages that hold
 * pending nodes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/vacuum.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "vec.h"

/* The most nodes one page can hold: nodes of layer 0 are the smallest */
static int
slots_per_block(const VecIndexInfo *info)
{
	return ARCHER_PAGE_CAPACITY_BYTES /
		(MAXALIGN(vec_node_size(info, 0)) + sizeof(ItemIdData));
}

static uint64
slot_of(const VecReach *reach, BlockNumber blkno, OffsetNumber offnum)
{
	return (uint64) blkno * reach->per_block + (offnum - FirstOffsetNumber);
}

static bool
bit_get(const uint8 *bits, uint64 slot)
{
	return (bits[slot / 8] >> (slot % 8)) & 1;
}

static void
bit_set(uint8 *bits, uint64 slot)
{
	bits[slot / 8] |= 1 << (slot % 8);
}

static void
bit_clear(uint8 *bits, uint64 slot)
{
	bits[slot / 8] &= ~(1 << (slot % 8));
}

/*
 * Prepare an empty reached set for the index's nblocks blocks; false if it
 * would take more than maintenance_work_mem.
 */
bool
vec_reach_init(VecReach *reach, const VecIndexInfo *info, BlockNumber nblocks)
{
	Size		bytes;

	reach->per_block = slots_per_block(info);
	reach->nblocks = nblocks;
	bytes = ((Size) nblocks * reach->per_block + 7) / 8;
	reach->bytes = 2 * bytes;
	if (reach->bytes / 1024 > (Size) maintenance_work_mem)
		return false;
	reach->reached = MemoryContextAllocHuge(CurrentMemoryContext, bytes);
	reach->pending = MemoryContextAllocHuge(CurrentMemoryContext, bytes);
	memset(reach->reached, 0, bytes);
	memset(reach->pending, 0, bytes);
	reach->npending = 0;
	reach->first_pending = nblocks;
	return true;
}

/* The memory a reached set for the index takes, in kB (for messages) */
Size
vec_reach_kb(const VecReach *reach)
{
	return (reach->bytes + 1023) / 1024;
}

void
vec_reach_free(VecReach *reach)
{
	pfree(reach->reached);
	pfree(reach->pending);
}

bool
vec_reach_contains(const VecReach *reach, ItemPointer tid)
{
	BlockNumber blkno = ItemPointerGetBlockNumber(tid);
	OffsetNumber offnum = ItemPointerGetOffsetNumber(tid);

	return blkno < reach->nblocks && offnum >= FirstOffsetNumber &&
		offnum <= reach->per_block && bit_get(reach->reached, slot_of(reach, blkno, offnum));
}

/*
 * Note the node at tid reached, its links to be followed by
 * vec_reach_propagate.  A TID no page of the index can hold is damage in
 * the page that links to it (from_blkno).
 */
void
vec_reach_add(Relation index, VecReach *reach, ItemPointer tid, BlockNumber from_blkno)
{
	BlockNumber blkno = ItemPointerGetBlockNumber(tid);
	OffsetNumber offnum = ItemPointerGetOffsetNumber(tid);
	uint64		slot;

	if (blkno >= reach->nblocks || blkno == ARCHER_META_BLKNO ||
		offnum < FirstOffsetNumber || offnum > reach->per_block)
		archer_corrupted(index, from_blkno, "A link points to no node.");
	slot = slot_of(reach, blkno, offnum);
	if (bit_get(reach->reached, slot))
		return;
	bit_set(reach->reached, slot);
	bit_set(reach->pending, slot);
	reach->npending++;
	reach->first_pending = Min(reach->first_pending, blkno);
}

/* Whether any node of the block waits to have its links followed */
static bool
block_pending(const VecReach *reach, BlockNumber blkno)
{
	for (int i = 0; i < reach->per_block; i++)
		if (bit_get(reach->pending, slot_of(reach, blkno, FirstOffsetNumber + i)))
			return true;
	return false;
}

/*
 * Follow the links of every pending node on each of its layers, and of the
 * nodes they lead to, until none is pending.  Deleted nodes are not followed: VACUUM
 * is about to drop them, and no live node may link to one (verify).
 */
void
vec_reach_propagate(Relation index, const VecIndexInfo *info, VecReach *reach)
{
	while (reach->npending > 0)
	{
		BlockNumber start = reach->first_pending;

		reach->first_pending = reach->nblocks;
		for (BlockNumber blkno = start; blkno < reach->nblocks; blkno++)
		{
			Buffer		buf;
			Page		page;
			OffsetNumber maxoff;

			if (!block_pending(reach, blkno))
				continue;
			CHECK_FOR_INTERRUPTS();
			buf = vec_read_node_page(index, blkno);
			if (!BufferIsValid(buf))
				archer_corrupted(index, blkno, "A link points to a page that holds no nodes.");
			page = BufferGetPage(buf);
			maxoff = PageGetMaxOffsetNumber(page);
			for (OffsetNumber off = FirstOffsetNumber; off <= reach->per_block; off++)
			{
				uint64		slot = slot_of(reach, blkno, off);
				VecNodeHeader *node;
				int			nslots;
				VecNeighbor *slots;

				if (!bit_get(reach->pending, slot))
					continue;
				bit_clear(reach->pending, slot);
				reach->npending--;
				if (off > maxoff)
					archer_corrupted(index, blkno, "A link points to a missing node.");
				node = vec_page_node(index, page, blkno, off, info);
				if (node->flags & VEC_NODE_DELETED)
					continue;
				for (int layer = 0; layer <= node->level; layer++)
				{
					slots = vec_node_neighbors(node, info, layer, &nslots);
					for (int i = 0; i < nslots; i++)
						if (ItemPointerIsValid(&slots[i].tid))
							vec_reach_add(index, reach, &slots[i].tid, blkno);
				}
			}
			UnlockReleaseBuffer(buf);
		}
	}
}

/*
 * The reached set of the index as it is now: from the entry point (the
 * caller keeps inserts and VACUUM out).  False if the graph is empty.
 */
bool
vec_reach_from_entry(Relation index, const VecIndexInfo *info, VecReach *reach)
{
	VecMetaPageData meta;

	vec_read_meta(index, &meta);
	if (!ItemPointerIsValid(&meta.entry))
		return false;
	vec_reach_add(index, reach, &meta.entry, ARCHER_META_BLKNO);
	vec_reach_propagate(index, info, reach);
	return true;
}

/*
 * A relink can take a slot of a full list from another node's only link
 * to it: the walk is redone until a round finds every node reached, at
 * most this many times.
 */
#define VEC_RELINK_ROUNDS	4

/*
 * Relink every live node no search reaches: each gets the back links an
 * insert of it would add (vec_relink_node).  Returns how many relinks it
 * made.  VACUUM runs it (vec_vacuum.c), and the build, whose graph can
 * fall apart into closed groups of equal vectors.  The caller keeps
 * inserts out (VEC_INSERT_LOCK).
 */
int64
vec_relink_unreachable(Relation index, const VecIndexInfo *info)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "archer_vector relink",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcxt;
	int64		total = 0;

	for (int round = 0; round < VEC_RELINK_ROUNDS; round++)
	{
		BlockNumber nblocks = RelationGetNumberOfBlocks(index);
		VecReach	reach;
		int64		relinked = 0;

		if (!vec_reach_init(&reach, info, nblocks))
		{
			ereport(WARNING,
					(errmsg("index \"%s\" was not checked for nodes no search reaches",
							RelationGetRelationName(index)),
					 errdetail("The check needs %zu kB of memory.", vec_reach_kb(&reach)),
					 errhint("Raise maintenance_work_mem.")));
			break;
		}
		if (!vec_reach_from_entry(index, info, &reach))
		{
			vec_reach_free(&reach);
			break;
		}
		for (BlockNumber blkno = ARCHER_META_BLKNO + 1; blkno < nblocks; blkno++)
		{
			Buffer		buf;
			Page		page;
			OffsetNumber unreached[MaxOffsetNumber];
			int			nunreached = 0;

			vacuum_delay_point(false);
			buf = vec_read_node_page(index, blkno);
			if (!BufferIsValid(buf))
				continue;
			page = BufferGetPage(buf);
			for (OffsetNumber off = FirstOffsetNumber; off <= PageGetMaxOffsetNumber(page); off++)
			{
				ItemPointerData tid;
				uint8		flags = vec_page_node(index, page, blkno, off, info)->flags;

				ItemPointerSet(&tid, blkno, off);
				/* a NULL vector's node is linked to nothing on purpose (vec.h) */
				if (!(flags & VEC_NODE_DELETED) && !VEC_NODE_IS_NULL_VECTOR(info, flags) &&
					!vec_reach_contains(&reach, &tid))
					unreached[nunreached++] = off;
			}
			UnlockReleaseBuffer(buf);

			for (int i = 0; i < nunreached; i++)
			{
				ItemPointerData tid;

				ItemPointerSet(&tid, blkno, unreached[i]);
				/* relinking an earlier one may have made this one reachable */
				if (vec_reach_contains(&reach, &tid))
					continue;
				oldcxt = MemoryContextSwitchTo(cxt);
				vec_relink_node(index, info, &tid);
				MemoryContextSwitchTo(oldcxt);
				MemoryContextReset(cxt);
				vec_reach_add(index, &reach, &tid, blkno);
				vec_reach_propagate(index, info, &reach);
				relinked++;
			}
		}
		vec_reach_free(&reach);
		total += relinked;
		if (relinked == 0)
			break;
	}
	MemoryContextDelete(cxt);
	return total;
}
