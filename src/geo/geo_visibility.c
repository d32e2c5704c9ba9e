/*-------------------------------------------------------------------------
 *
 * geo_visibility.c
 *	  Which copied entries an index-only scan of archer_geo may answer from.
 *
 * A scan copies entries out of a page under its share lock (a leaf's run,
 * the insert buffer at the scan's start, the candidates of a
 * nearest-neighbour ring) and returns them over later calls, with no pin
 * held.  Meanwhile VACUUM may remove the entry of a row the scan's snapshot
 * cannot see, free its heap slot and set the heap page's all-visible bit:
 * the executor would then trust the visibility map and return the stale
 * copy.  nbtree prevents that by keeping the leaf pinned while its copies
 * are returned and by taking a cleanup lock on every leaf in VACUUM; copies
 * that span many pages (a ring's candidates, the whole insert buffer) could
 * not be covered that way, so archer decides at copy time instead:
 *
 *	- Under the page's lock the entry is still in the index, so its heap
 *	  slot has not been freed: if the heap page is all-visible then, the
 *	  row is visible to every snapshot, this scan's included, for good.
 *	- The other entries ("unsure") are checked against the scan's snapshot
 *	  once the page is unlocked.  A row the snapshot sees cannot be removed
 *	  while the snapshot lives; a row it does not see is dropped.  Should the
 *	  slot have been freed and reused meanwhile, the new row is newer than
 *	  the snapshot and is dropped too, which is right: the old row was dead.
 *
 * The executor still checks the visibility map for every row it gets and
 * fetches the heap row where the bit is clear, so an unsure entry costs a
 * second heap fetch; rows on all-visible pages cost one map lookup.
 *
 * Plain index scans need none of this: the executor fetches every row and
 * a reused slot holds a row the snapshot cannot see.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "executor/tuptable.h"
#include "miscadmin.h"

#include "geo.h"

void
geo_visibility_init(GeoVisibility *vis, Relation heap, Snapshot snapshot)
{
	if (heap == NULL)
		elog(ERROR, "archer_geo: scan without its table");
	vis->heap = heap;
	vis->snapshot = snapshot;
	vis->vmbuf = InvalidBuffer;
	vis->fetch = NULL;
	vis->slot = NULL;
	vis->mcxt = CurrentMemoryContext;
}

void
geo_visibility_end(GeoVisibility *vis)
{
	if (BufferIsValid(vis->vmbuf))
		ReleaseBuffer(vis->vmbuf);
	vis->vmbuf = InvalidBuffer;
	if (vis->fetch != NULL)
	{
		table_index_fetch_end(vis->fetch);
		ExecDropSingleTupleTableSlot(vis->slot);
	}
	vis->fetch = NULL;
	vis->slot = NULL;
}

/*
 * Under the lock of the page entries were copied from: flag in unsure[i]
 * each entry whose heap page is not all-visible; returns how many.
 */
int
geo_visibility_mark(GeoVisibility *vis, const GeoLeafEntry *entries, int n, bool *unsure)
{
	int			nunsure = 0;

	for (int i = 0; i < n; i++)
	{
		BlockNumber heapblk = ItemPointerGetBlockNumber(&entries[i].tid);

		unsure[i] = !VM_ALL_VISIBLE(vis->heap, heapblk, &vis->vmbuf);
		nunsure += unsure[i];
	}
	return nunsure;
}

/*
 * Fetch an entry's heap row (following its HOT chain) under snapshot; true
 * if a version is visible.  The slot holds it until the next call.
 */
bool
geo_visibility_fetch(GeoVisibility *vis, ItemPointer tid, Snapshot snapshot)
{
	ItemPointerData fetch_tid = *tid;
	bool		call_again = false;
	bool		all_dead = false;

	if (vis->fetch == NULL)
	{
		/* not in the caller's context: a batch's context is reset under us */
		MemoryContext oldcxt = MemoryContextSwitchTo(vis->mcxt);

		vis->fetch = table_index_fetch_begin(vis->heap);
		vis->slot = table_slot_create(vis->heap, NULL);
		MemoryContextSwitchTo(oldcxt);
	}
	ExecClearTuple(vis->slot);
	return table_index_fetch_tuple(vis->fetch, &fetch_tid, snapshot, vis->slot,
								   &call_again, &all_dead);
}

/*
 * With the page unlocked: drop the unsure entries whose row the scan's
 * snapshot cannot see, keeping the others in order; returns how many are
 * left.
 */
int
geo_visibility_filter(GeoVisibility *vis, GeoLeafEntry *entries, int n, const bool *unsure)
{
	int			nkept = 0;

	for (int i = 0; i < n; i++)
	{
		if (!unsure[i])
		{
			entries[nkept++] = entries[i];
			continue;
		}
		CHECK_FOR_INTERRUPTS();
		if (!geo_visibility_fetch(vis, &entries[i].tid, vis->snapshot))
			continue;
		entries[nkept++] = entries[i];
	}
	if (vis->slot != NULL)
		ExecClearTuple(vis->slot);
	return nkept;
}
