/*-------------------------------------------------------------------------
 *
 * prefetch.c
 *	  Hints to the CPU and the kernel about pages a scan will read next.
 *	  Nothing here reads a page: the addresses come from the buffer
 *	  manager's public lookup (PrefetchBuffer), and the loads asked for
 *	  are only hints, so a buffer evicted meanwhile costs a useless hint.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relscan.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "storage.h"

/*
 * The CPU's cache line, for prefetching every line of a page
 * (PG_CACHE_LINE_SIZE is a conservative 128: every other line)
 */
#define ARCHER_CPU_CACHE_LINE	64

/*
 * The address in the buffer pool of a block of rel, or NULL when it is not
 * there (or rel is a temporary relation, in local buffers).  The block is
 * not pinned: the callers only ask the CPU to load memory.  If the buffer
 * is evicted meanwhile the hint is merely useless (every address prefetched
 * lies inside the buffer pool), and the real read pins and checks as
 * always.  PrefetchBuffer is the buffer manager's public lookup; for a
 * block not in the pool it also asks the kernel to start reading it,
 * which the caller's read of that block soon after can only gain from.
 */
static char *
cached_block(Relation rel, BlockNumber blkno)
{
	PrefetchBufferResult result;

	if (RelationUsesLocalBuffers(rel))
		return NULL;
	result = PrefetchBuffer(rel, MAIN_FORKNUM, blkno);
	if (!BufferIsValid(result.recent_buffer))
		return NULL;
	return (char *) BufferGetBlock(result.recent_buffer);
}

/*
 * Ask the CPU to load, ahead of the executor's fetch, the heap page header
 * and line pointer of a TID an index scan is about to return.  A scan that
 * returns thousands of rows from a table in no particular order spends
 * much of its time waiting for those cache lines, one row after the
 * other; asked a few rows ahead, the loads overlap.  (The tuple itself is
 * not asked for: where it lies is in the line pointer, which only a
 * backend holding a pin may read.)
 */
void
archer_prefetch_heap_tuple(IndexScanDesc scan, ItemPointer tid)
{
	char	   *page;

	if (scan->heapRelation == NULL ||
		ItemPointerGetOffsetNumberNoCheck(tid) < FirstOffsetNumber ||
		ItemPointerGetOffsetNumberNoCheck(tid) > MaxHeapTuplesPerPage)
		return;
	page = cached_block(scan->heapRelation, ItemPointerGetBlockNumberNoCheck(tid));
	if (page == NULL)
		return;
	__builtin_prefetch(page);
	__builtin_prefetch(page + SizeOfPageHeaderData +
					   (ItemPointerGetOffsetNumberNoCheck(tid) - 1) * sizeof(ItemIdData));
}

/*
 * Ask the CPU to load a whole page of an index, one the caller will read
 * next: a scan that walks leaves in order reads each from memory, and the
 * hardware follows a stream only within a page.  (A page not in the
 * buffer pool is only asked of the kernel, as cached_block says.)
 */
void
archer_prefetch_page(Relation index, BlockNumber blkno)
{
	char	   *page = cached_block(index, blkno);

	if (page == NULL)
		return;
	for (int offset = 0; offset < BLCKSZ; offset += ARCHER_CPU_CACHE_LINE)
		__builtin_prefetch(page + offset);
}
