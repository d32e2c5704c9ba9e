/*-------------------------------------------------------------------------
 *
 * storage.c
 *	  Page helpers shared by archer's access methods: initialization,
 *	  validation of every page read, allocation of new pages, and WAL-logging
 *	  of freshly built indexes.  See storage.h for the page layout.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xloginsert.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "storage.h"

void
archer_page_init(Page page, uint16 page_id, uint8 flags, uint16 level)
{
	ArcherPageOpaque opaque;

	PageInit(page, BLCKSZ, sizeof(ArcherPageOpaqueData));
	opaque = ArcherPageGetOpaque(page);
	memset(opaque, 0, sizeof(ArcherPageOpaqueData));
	opaque->rightlink = InvalidBlockNumber;
	opaque->flags = flags;
	opaque->level = level;
	opaque->version = ARCHER_PAGE_VERSION;
	opaque->page_id = page_id;
	/* pd_lower starts at the entry array, which begins MAXALIGNed */
	((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData);
}

int
archer_page_nentries(Page page, Size entry_size)
{
	return (((PageHeader) page)->pd_lower - MAXALIGN(SizeOfPageHeaderData)) / entry_size;
}

void
archer_page_set_nentries(Page page, Size entry_size, int nentries)
{
	((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + nentries * entry_size;
}

void
archer_corrupted(Relation index, BlockNumber blkno, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("index \"%s\" contains a corrupted page at block %u",
					RelationGetRelationName(index), blkno),
			 errdetail("%s", detail),
			 errhint("Please REINDEX it.")));
}

/*
 * Check the parts of a page every reader relies on, so that a damaged page
 * raises an error instead of sending a scan out of bounds.
 */
void
archer_check_page(Relation index, Page page, BlockNumber blkno, uint16 page_id)
{
	PageHeader	header = (PageHeader) page;
	ArcherPageOpaque opaque;

	if (PageIsNew(page))
		archer_corrupted(index, blkno, "The page is uninitialized.");
	if (header->pd_special != BLCKSZ - MAXALIGN(sizeof(ArcherPageOpaqueData)) ||
		header->pd_lower < MAXALIGN(SizeOfPageHeaderData) ||
		header->pd_lower > header->pd_upper ||
		header->pd_upper > header->pd_special)
		archer_corrupted(index, blkno, "The page header is invalid.");
	opaque = ArcherPageGetOpaque(page);
	/*
	 * Pages of dense entries (all geo pages, vector meta and quantizer
	 * pages) keep nothing above the hole: generic WAL zeroes [pd_lower,
	 * pd_upper) of every page it logs, which with a lower pd_upper an
	 * entry added past it turns into a write of a negative length
	 */
	if ((page_id == ARCHER_GEO_PAGE_ID ||
		 (opaque->flags & (ARCHER_PAGE_META | ARCHER_PAGE_QUANTIZER))) &&
		header->pd_upper != header->pd_special)
		archer_corrupted(index, blkno, "The page header is invalid.");
	/*
	 * A tree page has a high key exactly when it has a right sibling: a scan
	 * takes a page without one for the last of its level, and stops there
	 */
	if ((opaque->flags & (ARCHER_PAGE_LEAF | ARCHER_PAGE_INTERNAL)) &&
		((opaque->flags & ARCHER_PAGE_HAS_HIKEY) != 0) != BlockNumberIsValid(opaque->rightlink))
		archer_corrupted(index, blkno, "The page's high key and right link disagree.");
	if (opaque->page_id != page_id)
		archer_corrupted(index, blkno, "The page id does not belong to this access method.");
	if (opaque->version != ARCHER_PAGE_VERSION)
	{
		/*
		 * An intact meta page of another layout: an index from another
		 * release, which writes its layout version in both places.  One
		 * damaged version byte leaves them apart: that page is corrupted.
		 */
		if (blkno == ARCHER_META_BLKNO &&
			((ArcherMetaCommon *) PageGetContents(page))->magic == ARCHER_MAGIC &&
			((ArcherMetaCommon *) PageGetContents(page))->version == opaque->version)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("index \"%s\" has page layout version %u, which this build of archer cannot read",
							RelationGetRelationName(index), opaque->version),
					 errdetail("This build reads page layout version %d.", ARCHER_PAGE_VERSION),
					 errhint("REINDEX it to rebuild it in the current layout.")));
		archer_corrupted(index, blkno, "The page layout version is unknown.");
	}
}

/*
 * Check a block number read from page "from" before following it while
 * the backend holds content locks: it must name a block of the index other
 * than the meta page (nothing links to it), "from" itself and "held" (one
 * more block the caller holds locked, or InvalidBlockNumber).  Locking a
 * buffer the backend already holds would wait on itself forever, deaf to
 * cancel; a block past the end would get the buffer manager's read error,
 * which names neither the index nor the damaged page.
 */
void
archer_check_link(Relation index, BlockNumber from, BlockNumber to, BlockNumber held)
{
	if (to == ARCHER_META_BLKNO || to == from || to == held)
		archer_corrupted(index, from, "A link points back to the meta page or to a page the reader holds.");
	if (to >= RelationGetNumberOfBlocks(index))
		archer_corrupted(index, from, "A link points past the end of the index.");
}

/*
 * Read, lock and validate one page.  A link past the end of the index is
 * caught by the buffer manager's own read error; checking the size here
 * would cost a system call on every read of the hot paths.
 */
Buffer
archer_read_page(Relation index, BlockNumber blkno, int lockmode, uint16 page_id)
{
	Buffer		buf;

	if (blkno == InvalidBlockNumber)
		archer_corrupted(index, blkno, "A link points to an invalid block.");
	buf = ReadBuffer(index, blkno);
	LockBuffer(buf, lockmode);
	archer_check_page(index, BufferGetPage(buf), blkno, page_id);
	return buf;
}

/*
 * Read and lock a page that a scan over every block visits; NULL for a
 * page that is all zeros (a crash can leave the blocks an index was being
 * extended with uninitialized: nothing links to them yet).
 */
Buffer
archer_read_page_if_used(Relation index, BlockNumber blkno, int lockmode, uint16 page_id)
{
	Buffer		buf = ReadBuffer(index, blkno);

	LockBuffer(buf, lockmode);
	if (PageIsNew(BufferGetPage(buf)))
	{
		UnlockReleaseBuffer(buf);
		return InvalidBuffer;
	}
	archer_check_page(index, BufferGetPage(buf), blkno, page_id);
	return buf;
}

ArcherRecentBuffers *
archer_recent_buffers_create(MemoryContext cxt)
{
	ArcherRecentBuffers *recent = MemoryContextAllocZero(cxt, sizeof(ArcherRecentBuffers));

	recent->cxt = cxt;
	return recent;
}

/*
 * ReadBuffer(index, blkno), pinning the buffer the block was last read
 * into when it still holds it (recent may be NULL).  The relation's
 * statistics count the read as ReadBuffer would.
 */
Buffer
archer_read_buffer_recent(Relation index, BlockNumber blkno, ArcherRecentBuffers *recent)
{
	Buffer		buf;

	if (recent == NULL)
		return ReadBuffer(index, blkno);
	if (blkno < recent->nblocks && BufferIsValid(recent->buffers[blkno]) &&
		ReadRecentBuffer(index->rd_locator, MAIN_FORKNUM, blkno, recent->buffers[blkno]))
	{
		pgstat_count_buffer_read(index);
		pgstat_count_buffer_hit(index);
		return recent->buffers[blkno];
	}
	buf = ReadBuffer(index, blkno);
	if (blkno >= recent->nblocks)
	{
		BlockNumber nblocks = Max(blkno + 1, Max(recent->nblocks * 2, 1024));

		if (nblocks > MaxAllocSize / sizeof(Buffer))
			return buf;
		if (recent->buffers == NULL)
			recent->buffers = MemoryContextAllocZero(recent->cxt, sizeof(Buffer) * nblocks);
		else
		{
			recent->buffers = repalloc(recent->buffers, sizeof(Buffer) * nblocks);
			memset(recent->buffers + recent->nblocks, 0,
				   sizeof(Buffer) * (nblocks - recent->nblocks));
		}
		recent->nblocks = nblocks;
	}
	recent->buffers[blkno] = buf;
	return buf;
}

/*
 * The buffer for block blkno of an index being laid out block by block,
 * exclusively locked: an all-zero page left there by a crash, a page of
 * this index's kind with exactly leftover_flags (0: none) that an earlier
 * attempt wrote before a crash kept it from recording the layout, or a new
 * block at the end.
 */
Buffer
archer_buffer_for_block(Relation index, BlockNumber blkno, uint16 page_id, uint8 leftover_flags)
{
	Buffer		buf;

	if (blkno < RelationGetNumberOfBlocks(index))
	{
		Page		page;

		buf = ReadBuffer(index, blkno);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		page = BufferGetPage(buf);
		if (PageIsNew(page))
			return buf;
		archer_check_page(index, page, blkno, page_id);
		if (leftover_flags == 0 || ArcherPageGetOpaque(page)->flags != leftover_flags)
			archer_corrupted(index, blkno, "A block the index is about to lay out is in use.");
		return buf;
	}
	buf = archer_new_buffer(index);
	if (BufferGetBlockNumber(buf) != blkno)
		archer_corrupted(index, BufferGetBlockNumber(buf),
						 "The index did not extend at the block expected.");
	return buf;
}

/*
 * A new block at the end of the index, exclusively locked.  The caller
 * initializes it and registers it with GENERIC_XLOG_FULL_IMAGE.  (Neither
 * access method hands whole pages to the free space map: the insert
 * buffers keep their own free lists, and the vector's map entries name
 * node pages with a deleted node to overwrite.)
 */
Buffer
archer_new_buffer(Relation index)
{
	Buffer		buf;
	bool		needlock = !RELATION_IS_LOCAL(index);

	if (needlock)
		LockRelationForExtension(index, ExclusiveLock);
	buf = ReadBuffer(index, P_NEW);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	if (needlock)
		UnlockRelationForExtension(index, ExclusiveLock);
	return buf;
}

/*
 * Append a page image built in local memory as the next block of an index
 * under construction (no WAL: see archer_log_all_pages).
 */
void
archer_write_new_page(Relation index, BlockNumber expected, Page page)
{
	Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, P_NEW, RBM_NORMAL, NULL);

	if (BufferGetBlockNumber(buf) != expected)
		elog(ERROR, "index \"%s\" build: expected block %u, got %u",
			 RelationGetRelationName(index), expected, BufferGetBlockNumber(buf));
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	memcpy(BufferGetPage(buf), page, BLCKSZ);
	MarkBufferDirty(buf);
	UnlockReleaseBuffer(buf);
}

/*
 * Write n changes (bytes at known offsets) to a page the caller holds
 * exclusively, in one WAL record that carries just those bytes.
 *
 * GenericXLog finds what a change did by copying the page and comparing
 * every byte outside the hole with the copy: for a change of a few bytes,
 * that comparison costs more than everything else the caller does.  A
 * caller that knows where its change goes logs it here in the form
 * generic redo applies (a run of fragments: offset and length as
 * OffsetNumbers, then the bytes) under RM_GENERIC_ID, so that replay,
 * wal_consistency_checking and pg_waldump take it for the record
 * GenericXLogFinish would have written; like generic redo, the hole is
 * zero on both sides (every change to the page went through either).
 * Changes must not overlap the hole (generic redo never writes there).
 */
void
archer_page_write_logged(Relation index, Buffer buf, const ArcherPageChange *changes, int n)
{
	Page		page = BufferGetPage(buf);
	OffsetNumber (*fragments)[2] = palloc(sizeof(OffsetNumber[2]) * n);

	/* checked before the critical section, where an error is a PANIC */
	if (n < 1 || 2 * n > XLR_NORMAL_RDATAS)
		elog(ERROR, "archer: %d changes in one page record", n);
	for (int i = 0; i < n; i++)
	{
		if (changes[i].offset + changes[i].length > BLCKSZ)
			elog(ERROR, "archer: page change of %zu bytes at offset %zu",
				 changes[i].length, changes[i].offset);
		fragments[i][0] = changes[i].offset;
		fragments[i][1] = changes[i].length;
	}

	START_CRIT_SECTION();
	for (int i = 0; i < n; i++)
		memcpy((char *) page + changes[i].offset, changes[i].data, changes[i].length);
	MarkBufferDirty(buf);
	if (RelationNeedsWAL(index))
	{
		XLogRecPtr	lsn;

		XLogBeginInsert();
		XLogRegisterBuffer(0, buf, REGBUF_STANDARD);
		for (int i = 0; i < n; i++)
		{
			XLogRegisterBufData(0, (char *) fragments[i], sizeof(fragments[i]));
			XLogRegisterBufData(0, (char *) page + changes[i].offset, changes[i].length);
		}
		lsn = XLogInsert(RM_GENERIC_ID, 0);
		PageSetLSN(page, lsn);
	}
	END_CRIT_SECTION();
	pfree(fragments);
}

/*
 * Append n entries of entry_size bytes to the entry array of a page with
 * room for them (the caller holds its exclusive lock), in one WAL record
 * that carries just those bytes and the new pd_lower.
 */
void
archer_page_append_logged(Relation index, Buffer buf, const void *entries, int n,
						  Size entry_size)
{
	PageHeader	header = (PageHeader) BufferGetPage(buf);
	LocationIndex new_lower;
	ArcherPageChange changes[2] = {
		{offsetof(PageHeaderData, pd_lower), sizeof(LocationIndex), &new_lower},
		{header->pd_lower, n * entry_size, entries},
	};

	/* callers count the room from pd_lower: pd_upper can only be damaged */
	if (header->pd_lower + n * entry_size > header->pd_upper)
		archer_corrupted(index, BufferGetBlockNumber(buf),
						 "The page's free space ends before its entry capacity.");
	new_lower = header->pd_lower + n * entry_size;
	archer_page_write_logged(index, buf, changes, lengthof(changes));
}

/* WAL-log every page of an index built without WAL */
void
archer_log_all_pages(Relation index)
{
	if (RelationNeedsWAL(index))
		log_newpage_range(index, MAIN_FORKNUM, 0,
						  RelationGetNumberOfBlocks(index), true);
}

/*
 * Start a meta page: page header, and zeroed contents of meta_size bytes
 * that begin with the common part (magic, version, page id).  Returns the
 * contents for the access method to fill in.
 */
void *
archer_init_meta_page(Page page, uint16 page_id, Size meta_size)
{
	ArcherMetaCommon *common;

	archer_page_init(page, page_id, ARCHER_PAGE_META, 0);
	common = (ArcherMetaCommon *) PageGetContents(page);
	memset(common, 0, meta_size);
	common->magic = ARCHER_MAGIC;
	common->version = ARCHER_PAGE_VERSION;
	common->page_id = page_id;
	/* generic WAL redo keeps what lies below pd_lower */
	((PageHeader) page)->pd_lower = (char *) common + meta_size - (char *) page;
	return common;
}

/* Append a page to the init fork of an unlogged index, WAL-logged */
void
archer_write_init_fork_page(Relation index, BlockNumber blkno, Page page)
{
	PageSetChecksumInplace(page, blkno);
	smgrextend(RelationGetSmgr(index), INIT_FORKNUM, blkno, page, true);
	log_newpage(&index->rd_locator, INIT_FORKNUM, blkno, page, true);
}
