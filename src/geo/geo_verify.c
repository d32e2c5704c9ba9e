/*-------------------------------------------------------------------------
 *
 * geo_verify.c
 *	  archer_geo_verify(index): check every invariant of an archer_geo
 *	  index and raise ERRCODE_INDEX_CORRUPTED naming the block on the first
 *	  violation.
 *
 * Checked: the meta page; on every level, reached through the leftmost
 * downlinks and right links: page header, page id, layout version, level,
 * page kind, entry count, strict key order within and across pages, keys
 * below the high key, high keys present exactly where right links are;
 * that the right links of each level visit exactly the pages the level
 * above names, in the order of its downlinks, and that each page's high
 * key is the key of the next downlink (the next page's low key) or, for
 * the last child of a parent, the parent's high key: a right link that
 * skips pages, or a high key moved up or down, would make scans miss
 * keys or read them twice; the insert buffer's chain, page order and
 * entry count; finally that every row visible to a fresh snapshot has an
 * entry (in the tree or the buffer) with the cell id of its point.  Holds
 * ShareLock on the table, so writers wait (AccessShareLock on a hot
 * standby, where only replay writes: there a page split between reading a
 * level and the level below is allowed for, see verify_level).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "geo.h"

PG_FUNCTION_INFO_V1(archer_geo_verify);

typedef struct LocatedKey
{
	GeoLeafEntry entry;
	BlockNumber blkno;
} LocatedKey;

/*
 * A downlink of the level above, with what the page it names must hold:
 * its high key is the key of the next downlink of the same parent, or the
 * parent's own high key for its last child (none on the rightmost page)
 */
typedef struct Downlink
{
	BlockNumber child;
	bool		has_bound;
	GeoKey		bound;
} Downlink;

typedef struct VerifyState
{
	Relation	index;
	bool		in_recovery;	/* replay may split pages while we read */
	Downlink   *above;			/* the downlinks of the level above, in order */
	int64		nabove;
	Downlink   *below;			/* those of the level being read */
	int64		nbelow;
	int64		maxbelow;
	BlockNumber nblocks;
	BlockNumber npages_seen;
	LocatedKey *keys;			/* every leaf key and its block */
	int64		nkeys;
	int64		nsorted;		/* keys[0 .. nsorted) are sorted */
	int64		maxkeys;
	GeoColumnKind kind;
	int64		nheap;
	int64		nbuffered;		/* insert buffer entries */
} VerifyState;

static void
verify_fail(VerifyState *state, BlockNumber blkno, const char *detail)
{
	archer_corrupted(state->index, blkno, detail);
}

static void
remember_key(VerifyState *state, const GeoLeafEntry *entry, BlockNumber blkno)
{
	if (state->nkeys == state->maxkeys)
	{
		state->maxkeys = Max(1024, state->maxkeys * 2);
		archer_verify_check_memory(state->index, sizeof(LocatedKey) * state->maxkeys);
		state->keys = state->keys ?
			repalloc_huge(state->keys, sizeof(LocatedKey) * state->maxkeys) :
			palloc_extended(sizeof(LocatedKey) * state->maxkeys, MCXT_ALLOC_HUGE);
	}
	state->keys[state->nkeys].entry = *entry;
	state->keys[state->nkeys].blkno = blkno;
	state->nkeys++;
}

static int
located_key_cmp(const void *a, const void *b)
{
	const GeoLeafEntry *x = &((const LocatedKey *) a)->entry;
	const GeoLeafEntry *y = &((const LocatedKey *) b)->entry;

	return geo_key_cmp(x->cellid, (ItemPointer) &x->tid, y->cellid, (ItemPointer) &y->tid);
}

/* Sort the leaf keys for the heap check; the same key twice is damage */
static void
sort_keys(VerifyState *state)
{
	qsort(state->keys, state->nkeys, sizeof(LocatedKey), located_key_cmp);
	for (int64 i = 1; i < state->nkeys; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (located_key_cmp(&state->keys[i - 1], &state->keys[i]) == 0)
			verify_fail(state, state->keys[i].blkno, "A key is in the index twice.");
	}
	state->nsorted = state->nkeys;
}

static void
add_downlink(VerifyState *state, BlockNumber child)
{
	if (state->nbelow == state->maxbelow)
	{
		state->maxbelow = Max(64, state->maxbelow * 2);
		state->below = state->below ?
			repalloc_huge(state->below, sizeof(Downlink) * state->maxbelow) :
			palloc_extended(sizeof(Downlink) * state->maxbelow, MCXT_ALLOC_HUGE);
	}
	state->below[state->nbelow].child = child;
	state->below[state->nbelow].has_bound = false;
	state->nbelow++;
}

/* Whether the page's high key is (strict) or is at most (!strict) the bound */
static bool
hikey_matches(ArcherPageOpaque opaque, const Downlink *link, bool strict)
{
	int			cmp;

	if (!(opaque->flags & ARCHER_PAGE_HAS_HIKEY))
		return !link->has_bound;
	if (!link->has_bound)
		return !strict;
	cmp = geo_key_cmp(opaque->hikey_cellid, &opaque->hikey_tid,
					  link->bound.cellid, (ItemPointer) &link->bound.tid);
	return strict ? cmp == 0 : cmp <= 0;
}

/*
 * Check one level, left to right through the right links, starting at the
 * first page the level above names (state->above), and collect the level's
 * downlinks for the level below (state->below).
 *
 * Every page of the level must be named by the level above, in the same
 * order, and end where the level above says (hikey_matches).  On a hot
 * standby, replay may split a page after its parent was read: a page no
 * downlink names is then allowed where it is a piece split off the key
 * range of the last named page (its high key is within that range).
 */
static void
verify_level(VerifyState *state, uint16 level)
{
	GeoKey		prev = {0};
	bool		prev_hikey_set = false;
	GeoKey		prev_hikey = {0};
	BlockNumber blkno = state->above[0].child;
	BlockNumber prevblkno = InvalidBlockNumber;
	int64		next = 0;		/* the next page the level above names */
	int64		cur = -1;		/* the last named page reached */

	state->nbelow = 0;
	while (blkno != InvalidBlockNumber)
	{
		Buffer		buf;
		Page		page;
		ArcherPageOpaque opaque;
		int			nentries;
		int			nsorted;
		Size		entry_size = level == 0 ? sizeof(GeoLeafEntry) : sizeof(GeoInternalEntry);
		int			capacity = level == 0 ? GEO_LEAF_CAPACITY : GEO_INTERNAL_CAPACITY;
		int64		first_downlink = state->nbelow;

		CHECK_FOR_INTERRUPTS();
		if (++state->npages_seen > state->nblocks)
			verify_fail(state, blkno, "The right links form a cycle.");
		if (next < state->nabove && blkno == state->above[next].child)
			cur = next++;
		else if (!state->in_recovery || cur < 0)
			verify_fail(state, prevblkno,
						next < state->nabove ?
						psprintf("The right link leads to block %u, but the level above names block %u next.",
								 blkno, state->above[next].child) :
						psprintf("The right link leads to block %u, past the last page the level above names.",
								 blkno));
		buf = archer_read_page(state->index, blkno, BUFFER_LOCK_SHARE, ARCHER_GEO_PAGE_ID);
		page = BufferGetPage(buf);
		opaque = ArcherPageGetOpaque(page);
		if (opaque->level != level)
			verify_fail(state, blkno, "The page's level does not match its place in the tree.");
		if (!(opaque->flags & (level == 0 ? ARCHER_PAGE_LEAF : ARCHER_PAGE_INTERNAL)) ||
			(opaque->flags & (ARCHER_PAGE_META | ARCHER_PAGE_DELETED | ARCHER_PAGE_BUFFER)))
			verify_fail(state, blkno, "The page kind does not match its level.");
		if (!hikey_matches(opaque, &state->above[cur], !state->in_recovery))
			verify_fail(state, blkno,
						"The high key does not match the next key of the level above.");
		if ((((PageHeader) page)->pd_lower - MAXALIGN(SizeOfPageHeaderData)) % entry_size != 0)
			verify_fail(state, blkno, "The entry area is not a whole number of entries.");
		nentries = archer_page_nentries(page, entry_size);
		if (nentries > capacity || (level > 0 && nentries == 0))
			verify_fail(state, blkno, "The page holds an impossible number of entries.");
		nsorted = level == 0 ? opaque->nsorted : nentries;
		if (nsorted > nentries || nentries - nsorted > GEO_LEAF_TAIL_MAX)
			verify_fail(state, blkno, "The sorted part of a leaf is out of bounds.");
		for (int i = 0; i < nentries; i++)
		{
			char	   *entry = ArcherPageGetEntries(page) + i * entry_size;
			GeoKey		key;

			memcpy(&key.cellid, entry, sizeof(uint64));
			memcpy(&key.tid, entry + sizeof(uint64), sizeof(ItemPointerData));
			/*
			 * The sorted part increases; across pages the high keys bound
			 * it.  An internal page's first key is not compared: searches
			 * take its child for everything below the second key, so an
			 * insert below the first key goes there, and a split of that
			 * child puts a smaller separator second (geo_insert.c).
			 */
			if (i < nsorted && i > (level == 0 ? 0 : 1) &&
				geo_key_cmp(key.cellid, &key.tid, prev.cellid, &prev.tid) <= 0)
				verify_fail(state, blkno, "Keys are out of order.");
			/* every key, tail included, lies between the neighbours' high keys */
			if (prev_hikey_set && (level == 0 || i > 0) &&
				geo_key_cmp(key.cellid, &key.tid, prev_hikey.cellid, &prev_hikey.tid) < 0)
				verify_fail(state, blkno, "A key is below the high key of the left sibling.");
			if ((opaque->flags & ARCHER_PAGE_HAS_HIKEY) && (level == 0 || i > 0) &&
				geo_key_cmp(key.cellid, &key.tid, opaque->hikey_cellid, &opaque->hikey_tid) >= 0)
				verify_fail(state, blkno, "A key is not below the page's high key.");
			if (level == 0)
			{
				if (key.cellid != GEO_NULL_CELLID &&
					(!s2_cellid_is_valid(key.cellid) || s2_cellid_level(key.cellid) != S2_MAX_LEVEL))
					verify_fail(state, blkno, "A leaf entry holds an invalid cell id.");
				if (!ItemPointerIsValid(&key.tid))
					verify_fail(state, blkno, "A leaf entry holds an invalid heap pointer.");
				remember_key(state, (GeoLeafEntry *) entry, blkno);
			}
			else
			{
				BlockNumber child = ((GeoInternalEntry *) entry)->child;

				if (child == ARCHER_META_BLKNO || child >= state->nblocks)
					verify_fail(state, blkno, "A downlink points outside the index.");
				/* the child before this one ends at this key */
				if (i > 0)
				{
					state->below[state->nbelow - 1].has_bound = true;
					state->below[state->nbelow - 1].bound = key;
				}
				add_downlink(state, child);
			}
			if (i < nsorted)
				prev = key;
		}

		prev_hikey_set = (opaque->flags & ARCHER_PAGE_HAS_HIKEY) != 0;
		prev_hikey.cellid = opaque->hikey_cellid;
		prev_hikey.tid = opaque->hikey_tid;
		if (prev_hikey_set != (opaque->rightlink != InvalidBlockNumber))
			verify_fail(state, blkno, "The high key and the right link disagree.");
		/* the last child ends where its parent does */
		if (state->nbelow > first_downlink && prev_hikey_set)
		{
			state->below[state->nbelow - 1].has_bound = true;
			state->below[state->nbelow - 1].bound = prev_hikey;
		}
		prevblkno = blkno;
		blkno = opaque->rightlink;
		UnlockReleaseBuffer(buf);
	}
	if (next < state->nabove)
		verify_fail(state, prevblkno,
					psprintf("The right links end before block %u, which the level above names.",
							 state->above[next].child));
}

/* The remembered entry with this key, or NULL */
static const LocatedKey *
key_search(VerifyState *state, uint64 cellid, ItemPointer tid)
{
	int64		lo = 0;
	int64		hi = state->nsorted - 1;

	while (lo <= hi)
	{
		int64		mid = (lo + hi) / 2;
		int			cmp = geo_key_cmp(state->keys[mid].entry.cellid, &state->keys[mid].entry.tid,
									  cellid, tid);

		if (cmp == 0)
			return &state->keys[mid];
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

/*
 * An insert buffer page: entries in any order (appends keep insertion
 * order; earlier versions sorted each page), none twice; those the tree
 * lacks join the keys for the heap check (a merge cut short leaves keys in
 * both)
 */
static void
remember_buffer_page(Relation index, Page page, BlockNumber blkno, void *arg)
{
	VerifyState *state = (VerifyState *) arg;
	int			nentries = archer_page_nentries(page, sizeof(GeoLeafEntry));
	GeoLeafEntry *entries;

	if (nentries > GEO_LEAF_CAPACITY)
		verify_fail(state, blkno, "An insert buffer page holds too many entries.");
	entries = palloc(sizeof(GeoLeafEntry) * Max(nentries, 1));
	memcpy(entries, ArcherPageGetEntries(page), sizeof(GeoLeafEntry) * nentries);
	geo_sort_leaf_entries(entries, nentries);
	for (int i = 0; i < nentries; i++)
	{
		if (i > 0 && geo_key_cmp(entries[i - 1].cellid, &entries[i - 1].tid,
								 entries[i].cellid, &entries[i].tid) == 0)
			verify_fail(state, blkno, "An insert buffer page holds the same key twice.");
		if (!key_search(state, entries[i].cellid, &entries[i].tid))
			remember_key(state, &entries[i], blkno);
	}
	pfree(entries);
	state->nbuffered += nentries;
}

static void
verify_heap_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
					 bool tupleIsAlive, void *arg)
{
	VerifyState *state = (VerifyState *) arg;
	GeoLeafEntry expected;
	const LocatedKey *found;

	geo_make_leaf_entry(state->kind, values[0], isnull[0], tid, &expected);
	state->nheap++;
	found = key_search(state, expected.cellid, tid);
	if (found == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" has no entry for the row at (%u,%u)",
						RelationGetRelationName(index),
						ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid)),
				 errhint("Please REINDEX it.")));
	/* index-only scans return what the code says: it must be the row's value */
	if (memcmp(found->entry.point, expected.point, GEO_POINT_CODE_SIZE) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" holds a wrong point for the row at (%u,%u)",
						RelationGetRelationName(index),
						ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid)),
				 errdetail("The entry is in block %u.", found->blkno),
				 errhint("Please REINDEX it.")));
}

Datum
archer_geo_verify(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	Relation	heap;
	Relation	index;
	VerifyState state = {0};
	BlockNumber blkno;
	uint16		level;
	IndexInfo  *indexInfo;
	Snapshot	snapshot;
	TableScanDesc scan;
	LOCKMODE	lockmode;
	ArcherBufferMeta buffer;
	ArcherSavedUser saved;

	archer_verify_open(indexoid, "archer_geo", &heap, &index, &lockmode);
	state.index = index;
	state.nblocks = RelationGetNumberOfBlocks(index);
	state.kind = geo_column_kind(index);
	geo_read_meta(index, &blkno, &level);
	archer_buffer_read_meta(index, ARCHER_GEO_PAGE_ID, &buffer);
	if (blkno == ARCHER_META_BLKNO || blkno >= state.nblocks)
		verify_fail(&state, ARCHER_META_BLKNO, "The root pointer is invalid.");

	/* the root: one page, the only one of its level */
	state.in_recovery = RecoveryInProgress();
	state.above = palloc(sizeof(Downlink));
	state.above[0].child = blkno;
	state.above[0].has_bound = false;
	state.nabove = 1;
	for (;;)
	{
		verify_level(&state, level);
		if (level == 0)
			break;
		/* the level read names the pages of the next */
		pfree(state.above);
		state.above = state.below;
		state.nabove = state.nbelow;
		state.below = NULL;
		state.nbelow = state.maxbelow = 0;
		level--;
	}

	sort_keys(&state);
	archer_buffer_check_chain(index, ARCHER_GEO_PAGE_ID, &buffer, remember_buffer_page, &state);
	if (state.nbuffered != buffer.entries)
		verify_fail(&state, ARCHER_META_BLKNO, "The meta page's count of insert buffer entries is wrong.");
	sort_keys(&state);
	indexInfo = BuildIndexInfo(index);
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	scan = table_beginscan_strat(heap, snapshot, 0, NULL, true, true);
	/* the index's expressions and predicate are the table owner's code */
	archer_become_owner(heap, &saved);
	table_index_build_scan(heap, index, indexInfo, true, false,
						   verify_heap_callback, &state, scan);
	archer_restore_user(&saved);
	UnregisterSnapshot(snapshot);

	index_close(index, lockmode);
	table_close(heap, lockmode);
	PG_RETURN_INT64(state.nkeys);
}
