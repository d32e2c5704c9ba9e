/*-------------------------------------------------------------------------
 *
 * geo_buffer.c
 *	  Inserts into archer_geo (aminsert): pending entries of this session,
 *	  and the insert buffer (WITH (insert_buffer = on)): buffer pages,
 *	  merges into the tree (geo_insert.c), and what scans read of it.
 *
 * An insert adds its (cell id, heap TID) to a list this session keeps per
 * index.  Without an insert buffer, the list goes into the tree, sorted, a
 * leaf at a time (insert_pending), when it holds GEO_PENDING_TREE_MAX
 * entries and at the moments below.  With one, the list goes to the
 * index's buffer pages (insert_buffer.c's chain; each page a dense array of
 * GeoLeafEntry in insertion order) when it
 * fills a page, at the end of every statement (ExecutorEnd, and before
 * every utility statement, which covers COPY), when a scan of that index
 * starts in this session, and before the transaction commits or prepares:
 * so a commit record always follows the WAL of its index entries, and one
 * WAL record carries hundreds of entries.  Entries of an aborted
 * (sub)transaction that are still pending are dropped: their rows are
 * dead, and VACUUM could otherwise free their heap slots before the
 * entries reach the buffer or the tree.
 *
 * A merge (under the ARCHER_MERGE_LOCK heavyweight page lock) takes the
 * head page, sorts its entries, inserts them leaf by leaf (one WAL record per
 * leaf, geo_tree_insert_run) skipping keys the tree already has, and then
 * frees the page.  A crash between the two leaves the page in place: the
 * next merge inserts what is missing, so nothing is lost or doubled.
 * VACUUM merges first and holds the lock while it removes dead entries
 * from the tree, so a merge never brings back an entry VACUUM removed.
 *
 * Scans read every buffered entry first (sorted, into memory), then the
 * tree, and skip tree entries whose heap TID they hold from the buffer:
 * an entry that a merge moves meanwhile is seen once, from one side or
 * the other (insert_buffer.c explains why a walk never misses a page).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "geo.h"
#include "merge.h"

/*
 * Entries of one index this session inserted and has not written yet, in
 * insertion order (so that those of an aborted subtransaction are last).
 * The arrays grow by doubling up to the flush size, so that a session
 * inserting a row at a time holds a few entries, not a batch's worth.
 */
typedef struct GeoPending
{
	Oid			indexoid;
	RelFileLocator node;		/* a new relfilenode (TRUNCATE, REINDEX) drops them */
	int			nentries;
	int			capacity;
	GeoLeafEntry *entries;
	SubTransactionId *subxids;
	GeoLeafEntry *sorted;		/* a tree flush's sorted copy of entries */
	bool		interrupted;	/* a tree flush failed part way: see insert_pending */
} GeoPending;

/*
 * Most pending entries of an index without an insert buffer: its flush
 * inserts them into the tree sorted, one WAL record per leaf touched, so
 * the more it takes at once the more of them share a leaf (8,192 keys
 * spread over a 200,000-row index: about 12 per leaf).  28 bytes an entry
 * and 24 for the sorted copy: at most 416 kB per index a session inserts
 * into.
 */
#define GEO_PENDING_TREE_MAX	8192

static MemoryContext pending_cxt = NULL;
static List *pending_lists = NIL;

static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

bool
geo_insert_buffered(Relation index)
{
	GeoOptions *options = (GeoOptions *) index->rd_options;

	return options != NULL && options->insert_buffer;
}

/* ---- writing pending entries to buffer pages ---- */

/*
 * Append the pending entries to the buffer pages, in insertion order (the
 * merge and scans sort what they read: sorting here would cost the
 * inserting session more than the rest of the index's work per row),
 * taking them off the list page by page (so that an error on a second page
 * never writes the first page's entries twice); returns the entries
 * waiting in the buffer now.  A tail page without room for the whole list
 * (up to a page of it) is left as it is and the list starts a new page: a
 * new page is WAL-logged as a plain image, while topping up the tail costs
 * a second record and a delta computed over the whole page.
 */
static int64
write_pending(Relation index, GeoPending *pending)
{
	int64		nwaiting = 0;

	while (pending->nentries > 0)
	{
		ArcherBufferAppend append;
		Page		page;
		int			nentries;
		int			room;
		int			take;

		archer_buffer_append_begin(index, ARCHER_GEO_PAGE_ID,
								   sizeof(GeoLeafEntry) * Min(pending->nentries, GEO_LEAF_CAPACITY),
								   &append);
		page = append.target;
		nentries = archer_page_nentries(page, sizeof(GeoLeafEntry));
		room = (int) (PageGetExactFreeSpace(page) / sizeof(GeoLeafEntry));
		take = Min(room, pending->nentries);
		memcpy(ArcherPageGetEntries(page) + nentries * sizeof(GeoLeafEntry), pending->entries,
			   take * sizeof(GeoLeafEntry));
		archer_page_set_nentries(page, sizeof(GeoLeafEntry), nentries + take);
		append.meta->entries += take;
		nwaiting = append.meta->entries;
		archer_buffer_append_finish(&append);
		pending->nentries -= take;
		memmove(pending->entries, pending->entries + take, sizeof(GeoLeafEntry) * pending->nentries);
		memmove(pending->subxids, pending->subxids + take, sizeof(SubTransactionId) * pending->nentries);
	}
	return nwaiting;
}

/*
 * Insert the pending entries into the tree of an index without an insert
 * buffer: sorted, leaf by leaf, one WAL record per leaf touched instead of
 * one per row (the delta GenericXLog computes over the whole leaf is most
 * of a row's cost otherwise).  The list keeps its insertion order until
 * every entry is in, so that a subtransaction that aborts after an error
 * here (caught by a PL/pgSQL exception block, say) still drops its own
 * entries; the next flush then skips the keys the failed one had inserted.
 */
static void
insert_pending(Relation index, GeoPending *pending)
{
	int			n = pending->nentries;
	bool		skip_present = pending->interrupted;

	memcpy(pending->sorted, pending->entries, sizeof(GeoLeafEntry) * n);
	geo_sort_leaf_entries(pending->sorted, n);
	pending->interrupted = true;
	for (int i = 0; i < n;)
	{
		CHECK_FOR_INTERRUPTS();
		i += geo_tree_insert_run(index, &pending->sorted[i], n - i, skip_present);
	}
	pending->interrupted = false;
	pending->nentries = 0;
}

/*
 * Write the pending list, to the insert buffer or (without one) into the
 * tree; with may_merge, a session that fills the buffer merges it (unless
 * a merge runs), but never at commit, where an error in the merge would
 * abort the transaction for others' entries.
 */
static void
flush_pending(Relation index, GeoPending *pending, bool may_merge)
{
	int64		nwaiting;

	if (pending->nentries == 0)
		return;
	if (!geo_insert_buffered(index))
	{
		insert_pending(index, pending);
		return;
	}
	nwaiting = write_pending(index, pending);
	archer_request_merge(nwaiting);
	if (may_merge && nwaiting >= archer_insert_buffer_max_entries)
		(void) archer_merge_buffer(index, 0, false);
}

static GeoPending *
find_pending(Oid indexoid)
{
	ListCell   *lc;

	foreach(lc, pending_lists)
	{
		GeoPending *pending = (GeoPending *) lfirst(lc);

		if (pending->indexoid == indexoid)
			return pending;
	}
	return NULL;
}

/*
 * Write every pending list (may_merge: see flush_pending); those of dropped
 * or rewritten indexes are dropped
 */
static void
flush_all_pending(bool may_merge)
{
	ListCell   *lc;

	foreach(lc, pending_lists)
	{
		GeoPending *pending = (GeoPending *) lfirst(lc);
		Relation	index;

		if (pending->nentries == 0)
			continue;
		index = try_relation_open(pending->indexoid, RowExclusiveLock);
		if (index == NULL)
		{
			pending->nentries = 0;
			continue;
		}
		if (RelFileLocatorEquals(index->rd_locator, pending->node))
			flush_pending(index, pending, may_merge);
		pending->nentries = 0;
		relation_close(index, RowExclusiveLock);
	}
}

static void
forget_all_pending(void)
{
	pending_lists = NIL;
	if (pending_cxt != NULL)
		MemoryContextReset(pending_cxt);
}

static bool
any_pending(void)
{
	ListCell   *lc;

	foreach(lc, pending_lists)
		if (((GeoPending *) lfirst(lc))->nentries > 0)
			return true;
	return false;
}

/*
 * Add an inserted row's key to this session's pending list for the index.
 * The list is flushed when it holds a buffer page's worth (with an insert
 * buffer) or GEO_PENDING_TREE_MAX entries (without).
 */
void
geo_pending_add(Relation index, const GeoLeafEntry *entry)
{
	GeoPending *pending = find_pending(RelationGetRelid(index));
	int			limit = geo_insert_buffered(index) ? GEO_LEAF_CAPACITY : GEO_PENDING_TREE_MAX;

	if (pending == NULL)
	{
		MemoryContext oldcxt;

		if (pending_cxt == NULL)
			pending_cxt = AllocSetContextCreate(TopMemoryContext, "archer_geo pending inserts",
												ALLOCSET_DEFAULT_SIZES);
		oldcxt = MemoryContextSwitchTo(pending_cxt);
		pending = palloc0(sizeof(GeoPending));
		pending->indexoid = RelationGetRelid(index);
		pending->node = index->rd_locator;
		pending->capacity = 64;
		pending->entries = palloc(sizeof(GeoLeafEntry) * pending->capacity);
		pending->subxids = palloc(sizeof(SubTransactionId) * pending->capacity);
		pending->sorted = palloc(sizeof(GeoLeafEntry) * pending->capacity);
		pending_lists = lappend(pending_lists, pending);
		MemoryContextSwitchTo(oldcxt);
	}
	if (!RelFileLocatorEquals(index->rd_locator, pending->node))
	{
		pending->nentries = 0;
		pending->interrupted = false;
		pending->node = index->rd_locator;
	}
	if (pending->nentries == pending->capacity)
	{
		pending->capacity *= 2;
		pending->entries = repalloc(pending->entries, sizeof(GeoLeafEntry) * pending->capacity);
		pending->subxids = repalloc(pending->subxids,
									sizeof(SubTransactionId) * pending->capacity);
		pending->sorted = repalloc(pending->sorted, sizeof(GeoLeafEntry) * pending->capacity);
	}
	pending->entries[pending->nentries] = *entry;
	pending->subxids[pending->nentries] = GetCurrentSubTransactionId();
	if (++pending->nentries >= limit)
		flush_pending(index, pending, true);
}

/* A scan of the index starts in this session: it must see this session's rows */
void
geo_buffer_flush_pending(Relation index)
{
	GeoPending *pending = find_pending(RelationGetRelid(index));

	if (pending != NULL && pending->nentries > 0 && RelFileLocatorEquals(index->rd_locator, pending->node))
		flush_pending(index, pending, false);
}

static void
geo_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			flush_all_pending(false);
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			forget_all_pending();
			break;
		default:
			break;
	}
}

/* Entries are added in order, so those of the aborted subtransaction and its children are last */
static void
geo_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;
	foreach(lc, pending_lists)
	{
		GeoPending *pending = (GeoPending *) lfirst(lc);

		while (pending->nentries > 0 && pending->subxids[pending->nentries - 1] >= mySubid)
			pending->nentries--;
	}
}

static void
geo_executor_end(QueryDesc *queryDesc)
{
	if (prev_ExecutorEnd)
		prev_ExecutorEnd(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
	if (any_pending() && IsTransactionState())
		flush_all_pending(true);
}

static void
geo_process_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					ProcessUtilityContext context, ParamListInfo params,
					QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	if (any_pending() && IsTransactionState())
		flush_all_pending(true);
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv,
								dest, qc);
}

void
geo_buffer_init(void)
{
	RegisterXactCallback(geo_xact_callback, NULL);
	RegisterSubXactCallback(geo_subxact_callback, NULL);
	prev_ExecutorEnd = ExecutorEnd_hook;
	ExecutorEnd_hook = geo_executor_end;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = geo_process_utility;
}

/* ---- merging ---- */

/* The head page is merged if it holds no more entries than the merge read */
static int
page_merged(Relation index, Page page, BlockNumber blkno, void *arg)
{
	int			nentries = archer_page_nentries(page, sizeof(GeoLeafEntry));

	return nentries == *(int *) arg ? nentries : -1;
}

/*
 * Merge buffer pages into the tree, oldest first, until max_entries (if >
 * 0) are merged or the pages the buffer held at the start are merged (so
 * that sessions appending meanwhile cannot keep it going for ever); the
 * caller holds ARCHER_MERGE_LOCK.
 */
int64
geo_buffer_merge(Relation index, int64 max_entries)
{
	GeoLeafEntry *entries = palloc(sizeof(GeoLeafEntry) * GEO_LEAF_CAPACITY);
	TimestampTz start = GetCurrentTimestamp();
	int64		merged = 0;
	ArcherBufferMeta meta;
	uint32		pages_left;
	uint64		start_serial;

	archer_buffer_read_meta(index, ARCHER_GEO_PAGE_ID, &meta);
	pages_left = meta.pages;
	start_serial = meta.serial;
	while (pages_left > 0 && (max_entries <= 0 || merged < max_entries))
	{
		Buffer		buf;
		Page		page;
		int			nentries;

		archer_buffer_read_meta(index, ARCHER_GEO_PAGE_ID, &meta);
		if (!BlockNumberIsValid(meta.head))
			break;
		buf = archer_read_page(index, meta.head, BUFFER_LOCK_SHARE, ARCHER_GEO_PAGE_ID);
		page = BufferGetPage(buf);
		if (!(ArcherPageGetOpaque(page)->flags & ARCHER_PAGE_BUFFER))
			archer_corrupted(index, meta.head, "The insert buffer's head is not a buffer page.");
		nentries = archer_page_nentries(page, sizeof(GeoLeafEntry));
		if (nentries > GEO_LEAF_CAPACITY)
			archer_corrupted(index, meta.head, "An insert buffer page holds too many entries.");
		memcpy(entries, ArcherPageGetEntries(page), sizeof(GeoLeafEntry) * nentries);
		UnlockReleaseBuffer(buf);
		geo_sort_leaf_entries(entries, nentries);

		for (int i = 0; i < nentries;)
		{
			CHECK_FOR_INTERRUPTS();
			i += geo_tree_insert_run(index, &entries[i], nentries - i, true);
		}
		/* entries appended meanwhile keep the page: the next turn merges them */
		if (archer_buffer_free_head(index, ARCHER_GEO_PAGE_ID, meta.head, page_merged, &nentries))
		{
			merged += nentries;
			pages_left--;
		}
	}
	pfree(entries);
	if (max_entries <= 0 && pages_left == 0)
		archer_buffer_check_merged(index, ARCHER_GEO_PAGE_ID, start_serial);
	if (merged > 0)
		archer_buffer_record_merge(index, ARCHER_GEO_PAGE_ID, merged, start);
	return merged;
}

/* VACUUM: merge everything and keep merges out until geo_buffer_vacuum_end */
void
geo_buffer_vacuum_begin(Relation index)
{
	LockPage(index, ARCHER_MERGE_LOCK, ExclusiveLock);
	(void) geo_buffer_merge(index, 0);
}

void
geo_buffer_vacuum_end(Relation index)
{
	UnlockPage(index, ARCHER_MERGE_LOCK, ExclusiveLock);
}

/* ---- what scans read ---- */

typedef struct CollectState
{
	GeoLeafEntry *entries;
	bool	   *unsure;			/* with vis: see geo_visibility_mark */
	int			nentries;
	int			maxentries;
	GeoVisibility *vis;
	int			nunsure;
} CollectState;

static void
collect_page(Relation index, Page page, BlockNumber blkno, void *arg)
{
	CollectState *collect = (CollectState *) arg;
	int			n = archer_page_nentries(page, sizeof(GeoLeafEntry));

	if (n > GEO_LEAF_CAPACITY)
		archer_corrupted(index, blkno, "An insert buffer page holds too many entries.");
	/* the copy's documented cap (docs/geo.md), far above what merges let build up */
	if (collect->nentries > GEO_BUFFER_SCAN_MAX_ENTRIES - n)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the insert buffer of index \"%s\" holds more than %d entries, too many for a scan to read",
						RelationGetRelationName(index), GEO_BUFFER_SCAN_MAX_ENTRIES),
				 errhint("Merge it with SELECT archer_flush('%s').",
						 RelationGetRelationName(index))));
	if (collect->nentries + n > collect->maxentries)
	{
		collect->maxentries = Max(Min(collect->maxentries, GEO_BUFFER_SCAN_MAX_ENTRIES / 2) * 2,
								  collect->nentries + n);
		collect->entries = repalloc_huge(collect->entries,
										 sizeof(GeoLeafEntry) * collect->maxentries);
		if (collect->vis != NULL)
			collect->unsure = repalloc_huge(collect->unsure,
											sizeof(bool) * collect->maxentries);
	}
	memcpy(&collect->entries[collect->nentries], ArcherPageGetEntries(page),
		   sizeof(GeoLeafEntry) * n);
	if (collect->vis != NULL)
		collect->nunsure += geo_visibility_mark(collect->vis,
												&collect->entries[collect->nentries], n,
												&collect->unsure[collect->nentries]);
	collect->nentries += n;
}

/*
 * Every buffered entry, sorted by key, in the current memory context
 * (after writing this session's pending entries); NULL if there are none.
 * An index-only scan passes vis: only entries it may answer from are kept
 * (geo_visibility.c).
 */
GeoLeafEntry *
geo_buffer_collect(Relation index, int *nentries, GeoVisibility *vis)
{
	CollectState collect;
	ArcherBufferMeta meta;

	geo_buffer_flush_pending(index);
	*nentries = 0;
	archer_buffer_read_meta(index, ARCHER_GEO_PAGE_ID, &meta);
	if (!BlockNumberIsValid(meta.head))
		return NULL;
	/*
	 * The meta page's count is a hint: entries buffered meanwhile grow the
	 * copy (collect_page), and a damaged count must not size an allocation.
	 * Huge allocations: the buffer may hold more than 1 GB of entries
	 * (archer.insert_buffer_max_entries, a merge that cannot keep up), up
	 * to GEO_BUFFER_SCAN_MAX_ENTRIES.
	 */
	collect.maxentries = (int) Min(Max(meta.entries, 64), (uint64) GEO_LEAF_CAPACITY * 1024);
	collect.nentries = 0;
	collect.entries = MemoryContextAllocHuge(CurrentMemoryContext,
											 sizeof(GeoLeafEntry) * collect.maxentries);
	collect.vis = vis;
	collect.unsure = vis != NULL ?
		MemoryContextAllocHuge(CurrentMemoryContext, sizeof(bool) * collect.maxentries) : NULL;
	collect.nunsure = 0;
	archer_buffer_walk(index, ARCHER_GEO_PAGE_ID, collect_page, &collect);
	if (collect.nunsure > 0)
		collect.nentries = geo_visibility_filter(vis, collect.entries, collect.nentries,
												 collect.unsure);
	geo_sort_leaf_entries(collect.entries, collect.nentries);
	*nentries = collect.nentries;
	return collect.entries;
}

/*
 * An inserted row's key goes to this session's pending list for the index
 * (geo_buffer.c), which writes it to the insert buffer or, without one,
 * into the tree with the keys inserted with it.
 */
bool
geo_insert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
		   Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
		   IndexInfo *indexInfo)
{
	GeoLeafEntry entry;

	geo_make_leaf_entry(geo_column_kind(index), values[0], isnull[0], ht_ctid, &entry);
	geo_pending_add(index, &entry);
	return false;
}
