/*-------------------------------------------------------------------------
 *
 * vec_buffer.c
 *	  The insert buffer of archer_vector: appends, merges, and the walk
 *	  scans make over it; archer_flush().
 *
 * Pages: a chain of buffer pages (ARCHER_PAGE_BUFFER) from the meta page's
 * buffer_head to its buffer_tail through the right links.  An entry is the
 * node tuple the row will have on layer 0, with no links: heap TID, code,
 * error, filter values.  Entries are never removed one by one: a merge
 * sets VEC_NODE_MERGED on each in the WAL record that places its node in
 * the graph, so a crash at any point neither loses an entry nor merges it
 * twice, and moves a page to the free list of buffer pages once every
 * entry on it is merged (appends reuse those before growing the index;
 * the free space map is left to deleted graph nodes, vec_vacuum.c).
 *
 * Locking (see vec.h): appends lock the meta page, then the tail page;
 * merges run under VEC_INSERT_LOCK and lock the meta page, the node page
 * and the entry's buffer page for each entry, then free the head page
 * (meta page, then the page).  Scans take no lock beyond one page at a
 * time: every buffer page carries a serial number one above its
 * predecessor's, so a walk that reaches a page that was freed, or freed
 * and reused, sees it and restarts from the head (pages before the head
 * are merged: their rows are in the graph).  The same holds on a standby,
 * where replay frees pages under the walk.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/table.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "vec.h"

PG_FUNCTION_INFO_V1(archer_flush);

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
	Buffer		metabuf = archer_read_page(index, ARCHER_META_BLKNO, BUFFER_LOCK_EXCLUSIVE,
										   ARCHER_VEC_PAGE_ID);
	VecMetaPageData *meta = VecPageGetMeta(BufferGetPage(metabuf));
	Buffer		tailbuf = InvalidBuffer;
	Buffer		newbuf = InvalidBuffer;
	GenericXLogState *state;
	Page		target;
	uint32		nentries;

	if (BlockNumberIsValid(meta->buffer_tail))
	{
		tailbuf = archer_read_page(index, meta->buffer_tail, BUFFER_LOCK_EXCLUSIVE,
								   ARCHER_VEC_PAGE_ID);
		if (!(ArcherPageGetOpaque(BufferGetPage(tailbuf))->flags & ARCHER_PAGE_BUFFER))
			archer_corrupted(index, meta->buffer_tail, "The insert buffer's tail is not a buffer page.");
	}
	if (!BufferIsValid(tailbuf) || PageGetFreeSpace(BufferGetPage(tailbuf)) < MAXALIGN(size))
	{
		if (BlockNumberIsValid(meta->buffer_free))
		{
			newbuf = archer_read_page(index, meta->buffer_free, BUFFER_LOCK_EXCLUSIVE,
									  ARCHER_VEC_PAGE_ID);
			if (!(ArcherPageGetOpaque(BufferGetPage(newbuf))->flags & ARCHER_PAGE_DELETED))
				archer_corrupted(index, meta->buffer_free, "The free list of buffer pages holds a page in use.");
		}
		else
			newbuf = archer_new_buffer(index);
	}

	state = GenericXLogStart(index);
	meta = VecPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	if (BufferIsValid(newbuf))
	{
		BlockNumber newblk = BufferGetBlockNumber(newbuf);

		target = GenericXLogRegisterBuffer(state, newbuf, GENERIC_XLOG_FULL_IMAGE);
		if (newblk == meta->buffer_free)
			meta->buffer_free = ArcherPageGetOpaque(target)->rightlink;
		archer_page_init(target, ARCHER_VEC_PAGE_ID, ARCHER_PAGE_BUFFER, 0);
		VecBufferPageSerial(target) = ++meta->buffer_serial;
		if (BufferIsValid(tailbuf))
			ArcherPageGetOpaque(GenericXLogRegisterBuffer(state, tailbuf, 0))->rightlink = newblk;
		else
			meta->buffer_head = newblk;
		meta->buffer_tail = newblk;
		meta->buffer_pages++;
	}
	else
		target = GenericXLogRegisterBuffer(state, tailbuf, 0);
	if (PageAddItem(target, (Item) entry, size, InvalidOffsetNumber, false, false) == InvalidOffsetNumber)
		elog(ERROR, "archer_vector: could not add an entry to the insert buffer");
	nentries = ++meta->buffer_entries;
	GenericXLogFinish(state);

	if (BufferIsValid(newbuf))
		UnlockReleaseBuffer(newbuf);
	if (BufferIsValid(tailbuf))
		UnlockReleaseBuffer(tailbuf);
	UnlockReleaseBuffer(metabuf);
	return nentries;
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
	VecMetaPageData meta;
	BlockNumber blkno;
	uint64		prev = 0;		/* serial of the page the walk came from */
	uint64		done = 0;		/* highest serial whose entries were passed on */
	bool		from_head = true;
	int			restarts = 0;

	vec_read_meta(index, &meta);
	blkno = meta.buffer_head;
	while (BlockNumberIsValid(blkno))
	{
		Buffer		buf = archer_read_page(index, blkno, BUFFER_LOCK_SHARE, ARCHER_VEC_PAGE_ID);
		Page		page = BufferGetPage(buf);
		uint64		serial = VecBufferPageSerial(page);
		BlockNumber next = ArcherPageGetOpaque(page)->rightlink;

		CHECK_FOR_INTERRUPTS();
		if (!(ArcherPageGetOpaque(page)->flags & ARCHER_PAGE_BUFFER) ||
			(!from_head && serial != prev + 1))
		{
			/* the page was freed under the walk: go on from the head */
			UnlockReleaseBuffer(buf);
			if (from_head || ++restarts > 1000)
				archer_corrupted(index, blkno, "The insert buffer chain leads to a page that is not a buffer page.");
			vec_read_meta(index, &meta);
			blkno = meta.buffer_head;
			from_head = true;
			continue;
		}
		/* after a restart, pages read before may lead the chain still */
		if (serial > done)
		{
			for (OffsetNumber off = FirstOffsetNumber; off <= PageGetMaxOffsetNumber(page); off++)
			{
				VecNodeHeader *entry = vec_page_entry(index, page, blkno, off, info);

				if (!(entry->flags & (VEC_NODE_MERGED | VEC_NODE_DELETED)))
					callback(entry, arg);
			}
		}
		UnlockReleaseBuffer(buf);
		done = Max(done, serial);
		prev = serial;
		from_head = false;
		blkno = next;
	}
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

/*
 * Unlink the head page from the chain onto the free list, if every entry
 * on it is merged (an append may have added one since it was copied);
 * returns whether it did.
 */
static bool
free_head_page(Relation index, const VecIndexInfo *info, BlockNumber blkno)
{
	Buffer		metabuf;
	Buffer		buf;
	Page		page;
	bool		all_merged = true;
	GenericXLogState *state;
	VecMetaPageData *meta;

	metabuf = archer_read_page(index, ARCHER_META_BLKNO, BUFFER_LOCK_EXCLUSIVE, ARCHER_VEC_PAGE_ID);
	buf = archer_read_page(index, blkno, BUFFER_LOCK_EXCLUSIVE, ARCHER_VEC_PAGE_ID);
	page = BufferGetPage(buf);
	for (OffsetNumber off = FirstOffsetNumber; off <= PageGetMaxOffsetNumber(page) && all_merged; off++)
		all_merged = (vec_page_entry(index, page, blkno, off, info)->flags & VEC_NODE_MERGED) != 0;
	if (all_merged)
	{
		state = GenericXLogStart(index);
		meta = VecPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
		page = GenericXLogRegisterBuffer(state, buf, 0);
		if (meta->buffer_head != blkno)
			elog(ERROR, "archer_vector: buffer page %u is not the head of the insert buffer", blkno);
		meta->buffer_head = ArcherPageGetOpaque(page)->rightlink;
		if (meta->buffer_tail == blkno)
			meta->buffer_tail = InvalidBlockNumber;
		meta->buffer_pages--;
		ArcherPageGetOpaque(page)->flags = ARCHER_PAGE_DELETED;
		ArcherPageGetOpaque(page)->rightlink = meta->buffer_free;
		meta->buffer_free = blkno;
		GenericXLogFinish(state);
	}
	UnlockReleaseBuffer(buf);
	UnlockReleaseBuffer(metabuf);
	return all_merged;
}

/* Count a merge in the meta page */
static void
record_merge(Relation index, int64 merged, TimestampTz start)
{
	Buffer		metabuf = archer_read_page(index, ARCHER_META_BLKNO, BUFFER_LOCK_EXCLUSIVE,
										   ARCHER_VEC_PAGE_ID);
	GenericXLogState *state = GenericXLogStart(index);
	VecMetaPageData *meta = VecPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	TimestampTz end = GetCurrentTimestamp();

	meta->merges++;
	meta->merged_entries += merged;
	meta->last_merge_end = end;
	meta->last_merge_us = end - start;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(metabuf);
}

/*
 * Merge every entry into the graph, oldest page first, freeing the pages
 * it empties; returns how many it merged.  The caller holds
 * VEC_INSERT_LOCK exclusively.
 */
int64
vec_buffer_merge(Relation index)
{
	const VecIndexInfo *info = vec_index_info(index);
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "archer_vector merge",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	float	   *x = palloc(sizeof(float) * Max(info->dim, 1));
	TimestampTz start = GetCurrentTimestamp();
	int64		merged = 0;

	for (;;)
	{
		VecMetaPageData meta;
		PageEntries copy;

		vec_read_meta(index, &meta);
		if (!BlockNumberIsValid(meta.buffer_head) || info->dim == 0)
			break;
		copy_unmerged(index, info, meta.buffer_head, &copy);
		for (int i = 0; i < copy.n; i++)
		{
			ItemPointerData entry_tid;

			CHECK_FOR_INTERRUPTS();
			ItemPointerSet(&entry_tid, meta.buffer_head, copy.offnums[i]);
			archer_sq8_decode(&info->sq, vec_node_code(copy.entries[i]), x);
			vec_insert_node(index, info, copy.entries[i], x, &entry_tid);
			merged++;
		}
		/* entries appended meanwhile keep the page: the next turn merges them */
		if (!free_head_page(index, info, meta.buffer_head) && copy.n == 0)
			break;
		MemoryContextReset(cxt);
		x = palloc(sizeof(float) * Max(info->dim, 1));
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	if (merged > 0)
		record_merge(index, merged, start);
	return merged;
}

/*
 * archer_flush(index regclass): merge the index's insert buffer now, and
 * return how many entries it merged.  The caller must own the index.
 * An archer_geo index has no insert buffer yet: 0.
 */
Datum
archer_flush(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	Relation	heap;
	Relation	index;
	int64		merged = 0;

	archer_check_index_owner(indexoid);
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("recovery is in progress"),
				 errhint("archer_flush() cannot run on a hot standby; the primary's merges reach it through WAL.")));
	/* the locks an INSERT takes: merging is inserting */
	heap = table_open(IndexGetRelation(indexoid, false), RowExclusiveLock);
	index = index_open(indexoid, RowExclusiveLock);
	if (index->rd_rel->relam == get_index_am_oid("archer_vector", false))
	{
		LockPage(index, VEC_INSERT_LOCK, ExclusiveLock);
		merged = vec_buffer_merge(index);
		UnlockPage(index, VEC_INSERT_LOCK, ExclusiveLock);
	}
	else if (index->rd_rel->relam != get_index_am_oid("archer_geo", false))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an archer index", RelationGetRelationName(index))));
	index_close(index, RowExclusiveLock);
	table_close(heap, RowExclusiveLock);
	PG_RETURN_INT64(merged);
}
