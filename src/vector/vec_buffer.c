/*-------------------------------------------------------------------------
 *
 * vec_buffer.c
 *	  The insert buffer of archer_vector: appends, merges, and the walk
 *	  scans make over it.
 *
 * The page chain (append, walk, free list) is insert_buffer.c's.  An
 * entry is the node tuple the row will have on layer 0, with no links:
 * heap TID, code, error, filter values.  Entries are never removed one by
 * one: a merge sets VEC_NODE_MERGED on each in the WAL record that places
 * its node in the graph, so a crash at any point neither loses an entry
 * nor merges it twice, and frees a page once every entry on it is merged.
 *
 * Locking (see vec.h): merges run under VEC_INSERT_LOCK and lock the meta
 * page, the node page and the entry's buffer page for each entry.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "vec.h"

bool
vec_insert_buffered(Relation index)
{
	VecOptions *options = (VecOptions *) index->rd_options;

	return options != NULL && options->insert_buffer;
}

Size
vec_buffer_entry_size(const VecIndexInfo *info)
{
	return vec_node_size(info, 0);
}

/*
 * Append an entry to the tail page, or to a new page linked after it, in
 * one WAL record with the meta page; returns how many entries wait now.
 */
uint32
vec_buffer_append(Relation index, const VecNodeHeader *entry, Size size)
{
	ArcherBufferAppend append;
	uint32		nentries;

	archer_buffer_append_begin(index, ARCHER_VEC_PAGE_ID, MAXALIGN(size) + sizeof(ItemIdData),
							   &append);
	if (PageAddItem(append.target, (Item) entry, size, InvalidOffsetNumber, false, false) == InvalidOffsetNumber)
	{
		Buffer		target = BufferIsValid(append.newbuf) ? append.newbuf : append.tailbuf;

		archer_corrupted(index, BufferGetBlockNumber(target),
						 "An insert buffer page has no room where its header says there is.");
	}
	nentries = ++append.meta->entries;
	archer_buffer_append_finish(&append);
	return nentries;
}

typedef struct EntryWalk
{
	const VecIndexInfo *info;
	VecBufferEntryCallback callback;
	void	   *arg;
} EntryWalk;

static void
pass_page_entries(Relation index, Page page, BlockNumber blkno, void *arg)
{
	EntryWalk  *walk = (EntryWalk *) arg;

	for (OffsetNumber off = FirstOffsetNumber; off <= PageGetMaxOffsetNumber(page); off++)
	{
		VecNodeHeader *entry = vec_page_entry(index, page, blkno, off, walk->info);

		if (!(entry->flags & (VEC_NODE_MERGED | VEC_NODE_DELETED)))
			walk->callback(entry, walk->arg);
	}
}

/*
 * Call callback for every entry not merged yet, oldest first.  Entries a
 * merge marks meanwhile may be seen here and in the graph both: callers
 * match them by heap TID.
 */
void
vec_buffer_scan(Relation index, const VecIndexInfo *info, VecBufferEntryCallback callback,
				void *arg)
{
	EntryWalk	walk = {info, callback, arg};

	archer_buffer_walk(index, ARCHER_VEC_PAGE_ID, pass_page_entries, &walk);
}

/* A copy of the entries of one buffer page that are not merged yet */
typedef struct PageEntries
{
	int			n;
	OffsetNumber *offnums;
	VecNodeHeader **entries;
} PageEntries;

static void
copy_unmerged(Relation index, const VecIndexInfo *info, BlockNumber blkno, PageEntries *copy)
{
	Buffer		buf = archer_read_page(index, blkno, BUFFER_LOCK_SHARE, ARCHER_VEC_PAGE_ID);
	Page		page = BufferGetPage(buf);
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
	Size		size = vec_buffer_entry_size(info);

	if (!(ArcherPageGetOpaque(page)->flags & ARCHER_PAGE_BUFFER))
		archer_corrupted(index, blkno, "The insert buffer chain leads to a page that is not a buffer page.");
	copy->n = 0;
	copy->offnums = palloc(sizeof(OffsetNumber) * Max(maxoff, 1));
	copy->entries = palloc(sizeof(VecNodeHeader *) * Max(maxoff, 1));
	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
	{
		VecNodeHeader *entry = vec_page_entry(index, page, blkno, off, info);

		if (entry->flags & VEC_NODE_MERGED)
			continue;
		copy->offnums[copy->n] = off;
		copy->entries[copy->n] = palloc(size);
		memcpy(copy->entries[copy->n], entry, size);
		copy->n++;
	}
	UnlockReleaseBuffer(buf);
}

/* 0 if every entry of a buffer page is merged (each uncounted as it was), else -1 */
static int
page_all_merged(Relation index, Page page, BlockNumber blkno, void *arg)
{
	const VecIndexInfo *info = (const VecIndexInfo *) arg;

	for (OffsetNumber off = FirstOffsetNumber; off <= PageGetMaxOffsetNumber(page); off++)
		if (!(vec_page_entry(index, page, blkno, off, info)->flags & VEC_NODE_MERGED))
			return -1;
	return 0;
}

/*
 * Merge entries into the graph, oldest page first, freeing the pages it
 * empties, until the pages the buffer held at the start are merged or
 * max_entries (if > 0) are; returns how many it merged.  The caller holds VEC_INSERT_LOCK
 * exclusively.
 */
int64
vec_buffer_merge(Relation index, int64 max_entries)
{
	const VecIndexInfo *info = vec_index_info(index);
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "archer_vector merge",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	float	   *x = palloc(sizeof(float) * Max(info->dim, 1));
	TimestampTz start = GetCurrentTimestamp();
	int64		merged = 0;
	VecMetaPageData meta;
	uint32		pages_left;
	uint64		start_serial;
	BlockNumber last_head = InvalidBlockNumber;
	OffsetNumber last_merged = InvalidOffsetNumber; /* on last_head */

	/* the pages there are now: appends meanwhile cannot keep it going for ever */
	vec_read_meta(index, &meta);
	pages_left = meta.buffer.pages;
	start_serial = meta.buffer.serial;
	while (pages_left > 0)
	{
		PageEntries copy;
		bool		freed;

		vec_read_meta(index, &meta);
		if (!BlockNumberIsValid(meta.buffer.head) || info->dim == 0)
			break;
		copy_unmerged(index, info, meta.buffer.head, &copy);

		/*
		 * A head page that stays after a turn took entries appended to it
		 * meanwhile, past those merged: an entry the last turn merged that
		 * shows up unmerged again would be merged for ever.
		 */
		if (meta.buffer.head != last_head)
			last_merged = InvalidOffsetNumber;
		else if (copy.n > 0 && copy.offnums[0] <= last_merged)
			archer_corrupted(index, meta.buffer.head,
							 "An insert buffer entry stays unmerged after its merge.");
		last_head = meta.buffer.head;
		for (int i = 0; i < copy.n && (max_entries <= 0 || merged < max_entries); i++)
		{
			ItemPointerData entry_tid;

			CHECK_FOR_INTERRUPTS();
			ItemPointerSet(&entry_tid, meta.buffer.head, copy.offnums[i]);
			if (VEC_NODE_IS_NULL_VECTOR(info, copy.entries[i]->flags))
				(void) vec_insert_node(index, info, copy.entries[i], NULL, &entry_tid,
									   ExclusiveLock);
			else
			{
				archer_sq8_decode(vec_quantizer(info, copy.entries[i]->flags),
								  vec_node_code(copy.entries[i]), x);
				(void) vec_insert_node(index, info, copy.entries[i], x, &entry_tid,
									   ExclusiveLock);
			}
			last_merged = copy.offnums[i];
			merged++;
		}
		if (max_entries > 0 && merged >= max_entries)
			break;
		/* entries appended meanwhile keep the page: the next turn merges them */
		freed = archer_buffer_free_head(index, ARCHER_VEC_PAGE_ID, meta.buffer.head,
										page_all_merged, (void *) info);
		if (freed)
		{
			/* the page may come back as a new page of the chain */
			last_head = InvalidBlockNumber;
			pages_left--;
		}
		else if (copy.n == 0)
			break;
		MemoryContextReset(cxt);
		x = palloc(sizeof(float) * Max(info->dim, 1));
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	if (max_entries <= 0 && pages_left == 0)
		archer_buffer_check_merged(index, ARCHER_VEC_PAGE_ID, start_serial);
	if (merged > 0)
		archer_buffer_record_merge(index, ARCHER_VEC_PAGE_ID, merged, start);
	return merged;
}
