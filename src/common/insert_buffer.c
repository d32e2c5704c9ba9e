/*-------------------------------------------------------------------------
 *
 * insert_buffer.c
 *	  The page chain of an archer insert buffer, shared by both access
 *	  methods: appending, walking, freeing merged pages, merge statistics.
 *	  What an entry is and how it is merged stays with each access method
 *	  (vec_buffer.c, geo_buffer.c).
 *
 * Pages: ARCHER_PAGE_BUFFER pages from the meta page's buffer.head to its
 * buffer.tail through the right links (ArcherBufferMeta, storage.h).  Each
 * new page gets a serial number one above the last one handed out.  A page
 * whose entries are all merged moves, at the head, to the free list
 * (buffer.free, linked through the right links, flagged
 * ARCHER_PAGE_DELETED), which appends take pages from before extending the
 * index; the free space map is not involved.
 *
 * Locking: appends lock the meta page exclusively, then the tail page and
 * a new page; freeing the head page locks the meta page, then the page.
 * Walks lock the head page before they release the meta page's share lock
 * (so the head they read cannot be freed in between), then hold one page
 * at a time: a walk that reaches a page that is no buffer page, or whose
 * serial does not follow its predecessor's, knows the page was freed (and
 * maybe reused) under it, and restarts from the head; pages before the
 * head are merged, so their entries are in the main structure.  The same
 * holds on a standby, where replay frees pages under the walk.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/timestamp.h"

#include "storage.h"

/* Most restarts one walk makes before calling the chain corrupted */
#define WALK_MAX_RESTARTS		1000

void
archer_buffer_read_meta(Relation index, uint16 page_id, ArcherBufferMeta *meta)
{
	Buffer		metabuf = archer_read_page(index, ARCHER_META_BLKNO, BUFFER_LOCK_SHARE, page_id);

	*meta = *ArcherPageGetBufferMeta(BufferGetPage(metabuf));
	UnlockReleaseBuffer(metabuf);
}

/*
 * Start a WAL record that appends to the buffer: lock the meta page and
 * the tail page, or when the tail lacks need bytes of free space, a page
 * from the free list or a new one, linked after the tail.  The caller
 * writes its entries into append->target, counts them in
 * append->meta->entries and calls archer_buffer_append_finish.
 */
void
archer_buffer_append_begin(Relation index, uint16 page_id, Size need, ArcherBufferAppend *append)
{
	ArcherBufferMeta *meta;

	append->metabuf = archer_read_page(index, ARCHER_META_BLKNO, BUFFER_LOCK_EXCLUSIVE, page_id);
	append->tailbuf = InvalidBuffer;
	append->newbuf = InvalidBuffer;
	meta = ArcherPageGetBufferMeta(BufferGetPage(append->metabuf));
	if (BlockNumberIsValid(meta->tail))
	{
		archer_check_link(index, ARCHER_META_BLKNO, meta->tail, InvalidBlockNumber);
		append->tailbuf = archer_read_page(index, meta->tail, BUFFER_LOCK_EXCLUSIVE, page_id);
		if (!(ArcherPageGetOpaque(BufferGetPage(append->tailbuf))->flags & ARCHER_PAGE_BUFFER))
			archer_corrupted(index, meta->tail, "The insert buffer's tail is not a buffer page.");
	}
	if (!BufferIsValid(append->tailbuf) ||
		PageGetExactFreeSpace(BufferGetPage(append->tailbuf)) < need)
	{
		if (BlockNumberIsValid(meta->free))
		{
			archer_check_link(index, ARCHER_META_BLKNO, meta->free, meta->tail);
			append->newbuf = archer_read_page(index, meta->free, BUFFER_LOCK_EXCLUSIVE, page_id);
			if (!(ArcherPageGetOpaque(BufferGetPage(append->newbuf))->flags & ARCHER_PAGE_DELETED))
				archer_corrupted(index, meta->free, "The free list of buffer pages holds a page in use.");
		}
		else
			append->newbuf = archer_new_buffer(index);
	}

	append->state = GenericXLogStart(index);
	meta = append->meta = ArcherPageGetBufferMeta(GenericXLogRegisterBuffer(append->state,
																			 append->metabuf, 0));
	if (BufferIsValid(append->newbuf))
	{
		BlockNumber newblk = BufferGetBlockNumber(append->newbuf);
		Page		target = GenericXLogRegisterBuffer(append->state, append->newbuf,
													   GENERIC_XLOG_FULL_IMAGE);

		if (newblk == meta->free)
			meta->free = ArcherPageGetOpaque(target)->rightlink;
		archer_page_init(target, page_id, ARCHER_PAGE_BUFFER, 0);
		ArcherBufferPageSerial(target) = ++meta->serial;
		if (BufferIsValid(append->tailbuf))
			ArcherPageGetOpaque(GenericXLogRegisterBuffer(append->state, append->tailbuf, 0))->rightlink = newblk;
		else
			meta->head = newblk;
		meta->tail = newblk;
		meta->pages++;
		append->target = target;
	}
	else
		append->target = GenericXLogRegisterBuffer(append->state, append->tailbuf, 0);
}

void
archer_buffer_append_finish(ArcherBufferAppend *append)
{
	GenericXLogFinish(append->state);
	if (BufferIsValid(append->newbuf))
		UnlockReleaseBuffer(append->newbuf);
	if (BufferIsValid(append->tailbuf))
		UnlockReleaseBuffer(append->tailbuf);
	UnlockReleaseBuffer(append->metabuf);
}

/* The head page, share-locked, or InvalidBuffer if the buffer is empty */
static Buffer
lock_head(Relation index, uint16 page_id, BlockNumber *blkno)
{
	Buffer		metabuf = archer_read_page(index, ARCHER_META_BLKNO, BUFFER_LOCK_SHARE, page_id);
	Buffer		buf = InvalidBuffer;

	*blkno = ArcherPageGetBufferMeta(BufferGetPage(metabuf))->head;
	if (BlockNumberIsValid(*blkno))
	{
		archer_check_link(index, ARCHER_META_BLKNO, *blkno, InvalidBlockNumber);
		buf = archer_read_page(index, *blkno, BUFFER_LOCK_SHARE, page_id);
	}
	UnlockReleaseBuffer(metabuf);
	return buf;
}

/*
 * Call callback, under the page's share lock, for every buffer page from
 * the head, once each, oldest first.  Pages a merge frees meanwhile may or
 * may not be passed: their entries are in the main structure by then.
 */
void
archer_buffer_walk(Relation index, uint16 page_id, ArcherBufferPageCallback callback, void *arg)
{
	BlockNumber blkno;
	Buffer		buf = lock_head(index, page_id, &blkno);
	uint64		prev = 0;		/* serial of the page the walk came from */
	uint64		done = 0;		/* highest serial passed on */
	bool		from_head = true;
	int			restarts = 0;

	while (BufferIsValid(buf))
	{
		Page		page = BufferGetPage(buf);
		uint64		serial = ArcherBufferPageSerial(page);
		BlockNumber next = ArcherPageGetOpaque(page)->rightlink;

		CHECK_FOR_INTERRUPTS();
		if (!(ArcherPageGetOpaque(page)->flags & ARCHER_PAGE_BUFFER) ||
			(!from_head && serial != prev + 1))
		{
			UnlockReleaseBuffer(buf);
			if (from_head || ++restarts > WALK_MAX_RESTARTS)
				archer_corrupted(index, blkno, "The insert buffer chain leads to a page that is not a buffer page.");
			buf = lock_head(index, page_id, &blkno);
			from_head = true;
			continue;
		}
		/* after a restart, pages passed before may lead the chain still */
		if (serial > done)
			callback(index, page, blkno, arg);
		UnlockReleaseBuffer(buf);
		done = Max(done, serial);
		prev = serial;
		from_head = false;
		if (BlockNumberIsValid(next))
			archer_check_link(index, blkno, next, InvalidBlockNumber);
		blkno = next;
		buf = BlockNumberIsValid(blkno) ?
			archer_read_page(index, blkno, BUFFER_LOCK_SHARE, page_id) : InvalidBuffer;
	}
}

/*
 * Move the head page blkno to the free list if page_done says, under the
 * page's exclusive lock, that every entry on it is merged (an append may
 * have added one since the merge read it), uncounting the entries it says
 * the page still counts; returns whether it did.
 */
bool
archer_buffer_free_head(Relation index, uint16 page_id, BlockNumber blkno,
						ArcherBufferPageDone page_done, void *arg)
{
	Buffer		metabuf = archer_read_page(index, ARCHER_META_BLKNO, BUFFER_LOCK_EXCLUSIVE, page_id);
	Buffer		buf;
	int			nentries;

	archer_check_link(index, ARCHER_META_BLKNO, blkno, InvalidBlockNumber);
	buf = archer_read_page(index, blkno, BUFFER_LOCK_EXCLUSIVE, page_id);
	nentries = page_done(index, BufferGetPage(buf), blkno, arg);

	if (nentries >= 0)
	{
		BlockNumber next = ArcherPageGetOpaque(BufferGetPage(buf))->rightlink;
		GenericXLogState *state;
		ArcherBufferMeta *meta;
		Page		page;

		/* the next head, which merges read with the meta page unlocked */
		if (BlockNumberIsValid(next))
			archer_check_link(index, blkno, next, InvalidBlockNumber);
		state = GenericXLogStart(index);
		meta = ArcherPageGetBufferMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
		page = GenericXLogRegisterBuffer(state, buf, 0);

		/* merges are serialized: only damage moves the head under one */
		if (meta->head != blkno)
			archer_corrupted(index, ARCHER_META_BLKNO,
							 "The insert buffer's head changed under a merge.");
		meta->head = ArcherPageGetOpaque(page)->rightlink;
		if (meta->tail == blkno)
			meta->tail = InvalidBlockNumber;
		meta->pages--;
		meta->entries -= nentries;
		ArcherPageGetOpaque(page)->flags = ARCHER_PAGE_DELETED;
		ArcherPageGetOpaque(page)->rightlink = meta->free;
		meta->free = blkno;
		GenericXLogFinish(state);
	}
	UnlockReleaseBuffer(buf);
	UnlockReleaseBuffer(metabuf);
	return nentries >= 0;
}

/*
 * After a merge of every page the buffer held when it started (as many as
 * the meta page counted then; start_serial the serial of the last of
 * them): a head page from before the start means the count was wrong, and
 * VACUUM would leave entries of dead rows unmerged behind it.
 */
void
archer_buffer_check_merged(Relation index, uint16 page_id, uint64 start_serial)
{
	BlockNumber blkno;
	Buffer		buf = lock_head(index, page_id, &blkno);
	bool		stale;

	if (!BufferIsValid(buf))
		return;
	stale = (ArcherPageGetOpaque(BufferGetPage(buf))->flags & ARCHER_PAGE_BUFFER) &&
		ArcherBufferPageSerial(BufferGetPage(buf)) <= start_serial;
	UnlockReleaseBuffer(buf);
	if (stale)
		archer_corrupted(index, ARCHER_META_BLKNO,
						 "The insert buffer holds more pages than the meta page counts.");
}

/* Count a merge run in the meta page */
void
archer_buffer_record_merge(Relation index, uint16 page_id, int64 merged, TimestampTz start)
{
	Buffer		metabuf = archer_read_page(index, ARCHER_META_BLKNO, BUFFER_LOCK_EXCLUSIVE, page_id);
	GenericXLogState *state = GenericXLogStart(index);
	ArcherBufferMeta *meta = ArcherPageGetBufferMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	TimestampTz end = GetCurrentTimestamp();

	meta->merges++;
	meta->merged_entries += merged;
	meta->last_merge_end = end;
	meta->last_merge_us = end - start;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(metabuf);
}

/*
 * Verify: the chain runs from the head through buffer pages with
 * consecutive serial numbers to the tail, as many as the meta page counts
 * (the caller locks writers out); callback sees each page.
 */
void
archer_buffer_check_chain(Relation index, uint16 page_id, const ArcherBufferMeta *meta,
						  ArcherBufferPageCallback callback, void *arg)
{
	BlockNumber blkno = meta->head;
	BlockNumber last = InvalidBlockNumber;
	uint32		npages = 0;
	uint64		serial = 0;

	while (BlockNumberIsValid(blkno))
	{
		Buffer		buf = archer_read_page(index, blkno, BUFFER_LOCK_SHARE, page_id);
		Page		page = BufferGetPage(buf);

		CHECK_FOR_INTERRUPTS();
		if (!(ArcherPageGetOpaque(page)->flags & ARCHER_PAGE_BUFFER) ||
			(npages > 0 && ArcherBufferPageSerial(page) != serial + 1) ||
			++npages > meta->pages)
			archer_corrupted(index, blkno, "The insert buffer chain is broken.");
		serial = ArcherBufferPageSerial(page);
		if (callback)
			callback(index, page, blkno, arg);
		last = blkno;
		blkno = ArcherPageGetOpaque(page)->rightlink;
		UnlockReleaseBuffer(buf);
	}
	if (npages != meta->pages || last != meta->tail)
		archer_corrupted(index, ARCHER_META_BLKNO, "The insert buffer chain does not match the meta page.");
}
