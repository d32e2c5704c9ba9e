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

#include "access/itup.h"
#include "access/table.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "commands/vacuum.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_opclass.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/catcache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "access/relscan.h"
#include "access/rmgr.h"
#include "access/xloginsert.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "storage/lmgr.h"
#include "utils/rel.h"

#include "storage.h"

/*
 * The CPU's cache line, for prefetching every line of a page
 * (PG_CACHE_LINE_SIZE is a conservative 128: every other line)
 */
#define ARCHER_CPU_CACHE_LINE	64

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
 * The verify functions keep an entry for every row the index holds; past
 * maintenance_work_mem they stop with an error that says what to raise,
 * rather than grow a backend without bound on a large index.
 */
void
archer_verify_check_memory(Relation index, Size bytes)
{
	if (bytes / 1024 > (Size) maintenance_work_mem)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("verifying index \"%s\" needs more than maintenance_work_mem (%d kB)",
						RelationGetRelationName(index), maintenance_work_mem),
				 errdetail("Verify keeps an entry for every row of the index, %zu kB so far.",
						   bytes / 1024),
				 errhint("Raise maintenance_work_mem.")));
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
 * The parallel workers the planner grants a CREATE INDEX of this table, as
 * for a btree (max_parallel_maintenance_workers, the table's size and
 * parallel_workers option, parallel-safe index expressions, 32MB of
 * maintenance_work_mem a process); 0 in a standalone backend or bootstrap
 */
int
archer_build_workers(Relation heap, Relation index)
{
	if (!IsUnderPostmaster || !IsNormalProcessingMode())
		return 0;
	return plan_create_index_workers(RelationGetRelid(heap), RelationGetRelid(index));
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
 * Index-only scans of an index that cannot return its columns.  The
 * planner still offers one when a query needs no column of the table at
 * all (SELECT count(*) FROM t): no condition, hence no recheck, and no
 * value needed, so a tuple with NULL columns will do.  (archer_geo returns
 * its column, see geo_scan.c.)
 */
void
archer_set_empty_itup(IndexScanDesc scan)
{
	if (scan->xs_itup == NULL)
	{
		TupleDesc	desc = RelationGetDescr(scan->indexRelation);
		Datum		values[INDEX_MAX_KEYS] = {0};
		bool		isnull[INDEX_MAX_KEYS];

		memset(isnull, true, sizeof(isnull));
		scan->xs_itup = index_form_tuple(desc, values, isnull);
		scan->xs_itupdesc = desc;
	}
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

/*
 * The capabilities both access methods share: one column, ordering by
 * operator, scans without conditions, no bitmap scans, no parallel scans.
 */
IndexAmRoutine *
archer_am_routine(int nstrategies)
{
	IndexAmRoutine *amroutine = makeNode(IndexAmRoutine);

	amroutine->amstrategies = nstrategies;
	amroutine->amsupport = 0;
	amroutine->amoptsprocnum = 0;
	amroutine->amcanorder = false;
	amroutine->amcanorderbyop = true;
	amroutine->amcanbackward = false;
	amroutine->amcanunique = false;
	amroutine->amcanmulticol = false;
	amroutine->amoptionalkey = true;
	amroutine->amsearcharray = false;
	amroutine->amsearchnulls = false;
	amroutine->amstorage = false;
	amroutine->amclusterable = false;
	amroutine->ampredlocks = false;
	amroutine->amcanparallel = false;
	amroutine->amcaninclude = false;
	amroutine->amusemaintenanceworkmem = false;
	amroutine->amparallelvacuumoptions = VACUUM_OPTION_PARALLEL_BULKDEL;
	amroutine->amkeytype = InvalidOid;
	amroutine->amcanreturn = NULL;
	amroutine->amproperty = NULL;
	amroutine->amadjustmembers = NULL;
	amroutine->amgetbitmap = NULL;
	amroutine->ammarkpos = NULL;
	amroutine->amrestrpos = NULL;
	amroutine->amestimateparallelscan = NULL;
	amroutine->aminitparallelscan = NULL;
	amroutine->amparallelrescan = NULL;
	return amroutine;
}

/* An error unless indexoid is an index */
void
archer_check_is_index(Oid indexoid)
{
	if (get_rel_relkind(indexoid) != RELKIND_INDEX)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an index",
						get_rel_name(indexoid) ? get_rel_name(indexoid) : "?")));
}

/*
 * An error unless indexoid is an index the current user owns; checked
 * before any lock is taken, so that a stranger cannot queue behind writers
 */
void
archer_check_index_owner(Oid indexoid)
{
	archer_check_is_index(indexoid);
	if (!object_ownercheck(RelationRelationId, indexoid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_INDEX, get_rel_name(indexoid));
}

/*
 * The opening of a verify function: the caller must own the index (checked
 * before any lock, so a stranger cannot queue behind writers); then the
 * table and index are opened with ShareLock, which keeps writers out while
 * the check runs (AccessShareLock on a hot standby, where only replay
 * writes), and the index must belong to the named access method.
 */
void
archer_verify_open(Oid indexoid, const char *amname, Relation *heap, Relation *index,
				   LOCKMODE *lockmode)
{
	archer_check_index_owner(indexoid);
	*lockmode = RecoveryInProgress() ? AccessShareLock : ShareLock;
	*heap = table_open(IndexGetRelation(indexoid, false), *lockmode);
	*index = index_open(indexoid, *lockmode);
	if ((*index)->rd_rel->relam != get_index_am_oid(amname, false))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an %s index", RelationGetRelationName(*index), amname)));
}

/*
 * Run user code of a table (index expressions and predicates, which
 * table_index_build_scan and merges evaluate) as the table's owner, under
 * SECURITY_RESTRICTED_OPERATION and in a new GUC nest level: otherwise a
 * function written by the owner would run with the rights of whoever
 * verifies or merges the index (a superuser, the background worker), and
 * could change settings that outlive the call.  An error in between needs
 * no cleanup: (sub)transaction abort restores the user and the settings.
 */
void
archer_become_owner(Relation heap, ArcherSavedUser *saved)
{
	GetUserIdAndSecContext(&saved->userid, &saved->sec_context);
	SetUserIdAndSecContext(heap->rd_rel->relowner,
						   saved->sec_context | SECURITY_RESTRICTED_OPERATION);
	saved->nestlevel = NewGUCNestLevel();
}

/* Undo archer_become_owner */
void
archer_restore_user(const ArcherSavedUser *saved)
{
	AtEOXact_GUC(false, saved->nestlevel);
	SetUserIdAndSecContext(saved->userid, saved->sec_context);
}

/*
 * Operator class validation shared by the access methods: every operator
 * has a strategy in 1..nstrategies, and is an ordering operator exactly
 * when its strategy's bit is set in ordering_strategies.  Problems are
 * reported as INFO, as amvalidate does.
 */
bool
archer_validate_opclass(Oid opclassoid, const char *amname, int nstrategies,
						uint32 ordering_strategies)
{
	bool		result = true;
	HeapTuple	classtup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclassoid));
	Form_pg_opclass classform;
	CatCList   *oprlist;

	if (!HeapTupleIsValid(classtup))
		elog(ERROR, "cache lookup failed for operator class %u", opclassoid);
	classform = (Form_pg_opclass) GETSTRUCT(classtup);
	oprlist = SearchSysCacheList1(AMOPSTRATEGY, ObjectIdGetDatum(classform->opcfamily));
	for (int i = 0; i < oprlist->n_members; i++)
	{
		Form_pg_amop oprform = (Form_pg_amop) GETSTRUCT(&oprlist->members[i]->tuple);
		int			strategy = oprform->amopstrategy;
		bool		ordering = strategy >= 1 && strategy <= nstrategies &&
			(ordering_strategies & (1u << strategy)) != 0;

		if (strategy < 1 || strategy > nstrategies ||
			(oprform->amoppurpose == AMOP_ORDER) != ordering)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("%s operator class \"%s\" has operator %s with strategy %d and the wrong purpose or number",
							amname, NameStr(classform->opcname),
							format_operator(oprform->amopopr), strategy)));
			result = false;
		}
	}
	ReleaseCatCacheList(oprlist);
	ReleaseSysCache(classtup);
	return result;
}

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
 * and line pointer of a TID an index scan is about to return; returns the
 * page's address in the buffer pool (NULL if it is not there) for
 * archer_prefetch_heap_tuple_data, called a little later.  A scan that
 * returns thousands of rows from a table in no particular order spends
 * most of its time waiting for those cache lines, one row after the
 * other; asked a few rows ahead, the loads overlap.
 */
char *
archer_prefetch_heap_tuple(IndexScanDesc scan, ItemPointer tid)
{
	char	   *page;

	if (scan->heapRelation == NULL ||
		ItemPointerGetOffsetNumberNoCheck(tid) < FirstOffsetNumber ||
		ItemPointerGetOffsetNumberNoCheck(tid) > MaxHeapTuplesPerPage)
		return NULL;
	page = cached_block(scan->heapRelation, ItemPointerGetBlockNumberNoCheck(tid));
	if (page == NULL)
		return NULL;
	__builtin_prefetch(page);
	__builtin_prefetch(page + SizeOfPageHeaderData +
					   (ItemPointerGetOffsetNumberNoCheck(tid) - 1) * sizeof(ItemIdData));
	return page;
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

/* The tuple's own cache line, from the line pointer loaded by now */
void
archer_prefetch_heap_tuple_data(const char *page, ItemPointer tid)
{
	OffsetNumber off = ItemPointerGetOffsetNumberNoCheck(tid);
	ItemIdData	lp;

	if (page == NULL || off < FirstOffsetNumber || off > MaxHeapTuplesPerPage)
		return;
	/* copied once: it may change under us, and what is checked is used */
	memcpy(&lp, page + SizeOfPageHeaderData + (off - 1) * sizeof(ItemIdData), sizeof(lp));
	if (lp.lp_flags == LP_NORMAL && lp.lp_off < BLCKSZ)
		__builtin_prefetch(page + lp.lp_off);
}
