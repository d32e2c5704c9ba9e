/*-------------------------------------------------------------------------
 *
 * geo_vacuum.c
 *	  VACUUM for archer_geo: merge the insert buffer, then remove the
 *	  entries of dead heap tuples.
 *
 * Leaves are visited in physical order, each under its exclusive lock;
 * entries whose heap tuple is dead are squeezed out in one WAL record per
 * page that changed.  Concurrent splits append pages (geo_insert.c), so
 * the pass goes on over the pages added meanwhile until the index stops
 * growing: an entry a split moved from a leaf not visited yet is visited
 * on its new page.  Scans copy entries and hold no pin between pages, so
 * no cleanup lock is needed: a heap slot freed here and reused later holds
 * a tuple no running MVCC snapshot of an earlier scan can see, and an
 * index-only scan answers only from copies it proved visible to its
 * snapshot when it made them (geo_visibility.c).  Pages stay
 * linked into the tree even when empty and are reused by later inserts in
 * their key range.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/lmgr.h"

#include "geo.h"
#include "merge.h"

/*
 * Remove the entries of dead heap tuples from one leaf; returns how many
 * entries it keeps.  Other pages are left alone.
 */
static int
vacuum_leaf(IndexVacuumInfo *info, BlockNumber blkno, IndexBulkDeleteResult *stats,
			IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	Buffer		buf;
	Page		page;
	GeoLeafEntry *entries;
	int			nentries;
	int			nsorted;
	int			nkept = 0;
	int			nkept_sorted = 0;
	GenericXLogState *state = NULL;

	buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, info->strategy);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	page = BufferGetPage(buf);
	/* pages allocated but never initialized by a crashed split are unused */
	if (PageIsNew(page))
	{
		UnlockReleaseBuffer(buf);
		return 0;
	}
	archer_check_page(index, page, blkno, ARCHER_GEO_PAGE_ID);
	if (!(ArcherPageGetOpaque(page)->flags & ARCHER_PAGE_LEAF))
	{
		UnlockReleaseBuffer(buf);
		return 0;
	}

	entries = (GeoLeafEntry *) ArcherPageGetEntries(page);
	nentries = archer_page_nentries(page, sizeof(GeoLeafEntry));
	nsorted = ArcherPageGetOpaque(page)->nsorted;
	for (int i = 0; i < nentries; i++)
	{
		if (callback(&entries[i].tid, callback_state))
		{
			if (state == NULL)
			{
				state = GenericXLogStart(index);
				page = GenericXLogRegisterBuffer(state, buf, 0);
				entries = (GeoLeafEntry *) ArcherPageGetEntries(page);
			}
			stats->tuples_removed++;
			continue;
		}
		/* squeezing keeps order: the sorted prefix stays sorted */
		if (i < nsorted)
			nkept_sorted++;
		entries[nkept++] = entries[i];
	}
	if (state != NULL)
	{
		archer_page_set_nentries(page, sizeof(GeoLeafEntry), nkept);
		ArcherPageGetOpaque(page)->nsorted = nkept_sorted;
		GenericXLogFinish(state);
	}
	UnlockReleaseBuffer(buf);
	return nkept;
}

/*
 * The index's length, waiting for extensions under way: a split holds the
 * extension lock until it has locked its new page, so a page counted here
 * is either initialized or still locked by its split.
 */
static BlockNumber
index_length(Relation index)
{
	bool		needlock = !RELATION_IS_LOCAL(index);
	BlockNumber nblocks;

	if (needlock)
		LockRelationForExtension(index, ExclusiveLock);
	nblocks = RelationGetNumberOfBlocks(index);
	if (needlock)
		UnlockRelationForExtension(index, ExclusiveLock);
	return nblocks;
}

IndexBulkDeleteResult *
geo_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
			   IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	BlockNumber blkno = ARCHER_META_BLKNO + 1;
	BlockNumber nblocks;

	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));
	stats->num_index_tuples = 0;
	/* buffered entries of dead rows must be in the tree to be removed */
	geo_buffer_vacuum_begin(index);

	/*
	 * A split moves the upper half of a leaf to a new page at the end of
	 * the index.  Splits of leaves not visited yet may move entries of dead
	 * rows past the length read at the start, so visit the pages added
	 * meanwhile too, until the index stops growing.  (Splits never move
	 * entries to a lower block: new pages are always appended.)
	 */
	for (;;)
	{
		nblocks = index_length(index);
		if (blkno >= nblocks)
			break;
		for (; blkno < nblocks; blkno++)
		{
			vacuum_delay_point(false);
			stats->num_index_tuples += vacuum_leaf(info, blkno, stats, callback, callback_state);
		}
	}
	geo_buffer_vacuum_end(index);
	stats->num_pages = nblocks;
	return stats;
}

IndexBulkDeleteResult *
geo_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	Relation	index = info->index;

	if (info->analyze_only)
		return stats;
	if (stats == NULL)
	{
		/* no bulkdelete pass ran: merge the buffer, count the entries for the statistics */
		BlockNumber nblocks;

		(void) archer_merge_buffer(index, 0, true);
		nblocks = RelationGetNumberOfBlocks(index);
		stats = palloc0(sizeof(IndexBulkDeleteResult));
		for (BlockNumber blkno = ARCHER_META_BLKNO + 1; blkno < nblocks; blkno++)
		{
			Buffer		buf;
			Page		page;

			vacuum_delay_point(false);
			buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, info->strategy);
			LockBuffer(buf, BUFFER_LOCK_SHARE);
			page = BufferGetPage(buf);
			if (!PageIsNew(page))
			{
				archer_check_page(index, page, blkno, ARCHER_GEO_PAGE_ID);
				if (ArcherPageGetOpaque(page)->flags & ARCHER_PAGE_LEAF)
					stats->num_index_tuples += archer_page_nentries(page, sizeof(GeoLeafEntry));
			}
			UnlockReleaseBuffer(buf);
		}
		stats->num_pages = nblocks;
	}
	return stats;
}
