/*-------------------------------------------------------------------------
 *
 * geo_scan.c
 *	  Index scans of archer_geo: the access method interface, and radius
 *	  and polygon conditions.  Nearest-neighbour ordering (ORDER BY col <->
 *	  point) is in geo_knn.c, index-only tuples in geo_itup.c; what they
 *	  share is in geo_scan.h.
 *
 * A condition becomes a region and its covering (georegion.h).  The scan
 * reads the key range of each covering cell in order, one leaf page at a
 * time: under the page's share lock it copies the entries in range and the
 * right link, then classifies them without the lock.  Entries of INSIDE
 * cells are returned as they are; in PARTIAL cells an entry is decided by
 * a finer cell that holds it (for planar polygons: a crowd's cell, or its
 * own some levels down, decisions the region remembers), else by its exact
 * point or its leaf cell: inside, outside, or "recheck" (only then does the
 * executor run the exact predicate on the heap row).  With several
 * conditions an entry must pass all of them.
 *
 * Condition scans keep the matching entries of a leaf page where they were
 * copied, and return them in (mostly) key order, which is no order at all
 * in the heap: each fetch would wait on memory for its heap page and
 * tuple, so the scan has the CPU load them a few rows ahead
 * (prefetch_heap_rows), and the next leaf of the range while it returns
 * this one's rows.
 *
 * Entries in the insert buffer are read once per scan, at its start, and
 * join each key range as if they were on its first leaf (geo_scan_read_range).
 *
 * There is no bitmap scan: the planner keeps the original function call as
 * a filter over a bitmap heap scan even when the index condition is exact,
 * which would run the exact predicate on every row and undo the index's
 * inside/outside decisions.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "access/relscan.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/expandeddatum.h"
#include "utils/geo_decls.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "geo_scan.h"

/*
 * A cell holding an entry and the one this many places after it in key
 * order is judged as a whole (relate_crowd).  The region remembers each
 * decision, so with a cached region even a pair pays: the next scan finds
 * it made (measured: docs/benchmarks-history.md, "Figures once in code
 * comments").  A finer cell inside one judged PARTIAL is worth a try only
 * this many levels down (a sixteenth of the area).
 */
#define GEO_CROWD_ENTRIES			2
#define GEO_CROWD_LEVEL_STEP		2
/*
 * An entry without such a crowd is judged by its cell this many levels
 * below the covering cell (or the PARTIAL cell it is known to be in), and
 * so is an entry whose crowd straddles an edge: only entries very near an
 * edge then decode their points, a few in a thousand instead of most of
 * those in partial cells.  The depth matters little between 5 and 12
 * levels.
 */
#define GEO_LONE_LEVELS			8
/*
 * How many rows ahead a condition scan has the CPU load the heap page
 * header and line pointer of a row it will return
 */
#define GEO_PREFETCH_PAGE_AHEAD		8

int			archer_geo_max_cells = 4;

/* archer.geo_max_cells: the cells covering a radius query's cap */
void
geo_scan_define_settings(void)
{
	DefineCustomIntVariable("archer.geo_max_cells",
							"Maximum number of S2 cells covering a radius query.",
							"More cells fit the region more tightly but cost a tree descent each.",
							&archer_geo_max_cells, 4, 4, 1024,
							PGC_USERSET, 0, NULL, NULL, NULL);
}

IndexScanDesc
geo_beginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	GeoScanOpaque so = palloc0(sizeof(GeoScanOpaqueData));

	so->scancxt = AllocSetContextCreate(CurrentMemoryContext, "archer_geo scan",
										ALLOCSET_DEFAULT_SIZES);
	so->itupcxt = CurrentMemoryContext;
	so->kind = geo_column_kind(index);
	so->heap_attno = index->rd_index->indkey.values[0];
	scan->opaque = so;
	if (norderbys > 0)
	{
		scan->xs_orderbyvals = palloc0(sizeof(Datum) * norderbys);
		scan->xs_orderbynulls = palloc(sizeof(bool) * norderbys);
	}
	return scan;
}

void
geo_scan_decode_point(const GeoLeafEntry *entry, GeoEntryPoint *point)
{
	if (point->kind == POINT_UNDECODED)
		point->kind = geo_point_decode(entry, &point->lat, &point->lng);
}


/*
 * Cells of this level or coarser hold on average, over the whole sphere, at
 * least one of the index's entries; where queries go (where the data are)
 * they hold tens or hundreds.  A cap's covering splits such cells whatever
 * its budget: dropping their parts outside the cap saves more entry tests
 * than evaluating their children costs.  Finer cells hold a few entries
 * each, and a covering of a few cells serves best.  (2M points: level 9,
 * cells of about 20 km.)
 */
int
geo_scan_dense_cell_level(Relation index)
{
	double		ntuples = index->rd_rel->reltuples;

	if (ntuples < 6.0)
		return -1;
	return Min(S2_MAX_LEVEL, (int) floor(log(ntuples / 6.0) / log(4.0)));
}

/* Index of the covering cell that holds a leaf id, or -1 */
static int
find_cover_cell(const GeoKeyState *key, uint64 cellid)
{
	int			lo = 0;
	int			hi = key->ncells - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		S2CellId	cell = key->cells[mid].cellid;

		if (cellid < s2_cellid_range_min(cell))
			hi = mid - 1;
		else if (cellid > s2_cellid_range_max(cell))
			lo = mid + 1;
		else
			return mid;
	}
	return -1;
}

/* Judge the entry's cell at the given level as a whole, and make it the known crowd */
static GeoRelation
judge_crowd(GeoKeyState *key, int cell, const GeoLeafEntry *entry, int level)
{
	S2CellId	crowd = s2_cellid_parent(entry->cellid, level);

	key->crowd_level = level;
	key->crowd_lo = s2_cellid_range_min(crowd);
	key->crowd_hi = s2_cellid_range_max(crowd);
	key->crowd_relation = georegion_relate_planar_cell(key->region, cell, crowd);
	return key->crowd_relation;
}

/*
 * An entry in a PARTIAL covering cell of a planar polygon, where each
 * entry's own decision decodes its point: entries crowd in cities, so a
 * finer cell holding this entry and the one GEO_CROWD_ENTRIES after it
 * (ahead, NULL if none) is judged as a whole, and that decision serves
 * every entry in it that follows; a lone entry's cell GEO_LONE_LEVELS
 * down serves likewise.  PARTIAL when no such cell decides.
 */
static GeoRelation
relate_crowd(GeoKeyState *key, int cell, const GeoLeafEntry *entry,
			 const GeoLeafEntry *ahead)
{
	bool		known = entry->cellid >= key->crowd_lo && entry->cellid <= key->crowd_hi;
	int			base_level;
	int			min_level;
	int			level;

	if (known && key->crowd_relation != GEO_PARTIAL)
		return key->crowd_relation;
	base_level = known ? key->crowd_level : s2_cellid_level(key->cells[cell].cellid);
	min_level = base_level + (known ? GEO_CROWD_LEVEL_STEP : 1);
	level = ahead ? s2_cellid_common_level(entry->cellid, ahead->cellid) : 0;
	/* a lone entry: its cell some levels down */
	if (level < min_level)
		level = Min(base_level + GEO_LONE_LEVELS, S2_MAX_LEVEL);
	if (level < min_level)
		return GEO_PARTIAL;
	if (judge_crowd(key, cell, entry, level) == GEO_PARTIAL &&
		level < base_level + GEO_LONE_LEVELS && level < S2_MAX_LEVEL)
	{
		/* a crowd across an edge: the entry's own cell further down may decide it */
		judge_crowd(key, cell, entry, Min(level + GEO_LONE_LEVELS, S2_MAX_LEVEL));
	}
	return key->crowd_relation;
}

/*
 * An entry in a partial cell of a planar polygon is judged by its exact
 * point when its code holds one: only points within rounding of an edge
 * are then left to the exact predicate.
 */
static GeoRelation
relate_entry(GeoKeyState *key, int cell, const GeoLeafEntry *entry,
			 const GeoLeafEntry *ahead, GeoEntryPoint *point)
{
	if (cell < 0)
		return GEO_DISJOINT;
	if (key->cells[cell].relation == GEO_INSIDE)
		return GEO_INSIDE;
	if (key->planar)
	{
		GeoRelation crowd = relate_crowd(key, cell, entry, ahead);

		if (crowd != GEO_PARTIAL)
			return crowd;
		geo_scan_decode_point(entry, point);
		if (point->kind == GEO_POINT_VALUE)
			return georegion_relate_planar_point(key->region, cell, point->lng, point->lat);
	}
	return georegion_relate_leaf(key->region, cell, entry->cellid);
}

/*
 * Does the entry pass every condition?  first_cell is the covering cell of
 * keys[0] the entry was found in, or -1 to look it up; ahead is the entry
 * GEO_CROWD_ENTRIES places after it in the batch, or NULL.  Sets *recheck
 * when only the exact predicate can tell.
 */
bool
geo_scan_entry_matches(GeoScanOpaque so, int first_cell, const GeoLeafEntry *entry,
					   const GeoLeafEntry *ahead, GeoEntryPoint *point, bool *recheck)
{
	*recheck = false;
	for (int i = 0; i < so->nkeys; i++)
	{
		int			cell = (i == 0 && first_cell >= 0) ? first_cell :
			find_cover_cell(&so->keys[i], entry->cellid);
		GeoRelation relation = relate_entry(&so->keys[i], cell, entry, ahead, point);

		if (relation == GEO_DISJOINT)
			return false;
		if (relation == GEO_PARTIAL)
			*recheck = true;
	}
	return true;
}

/* The entry GEO_CROWD_ENTRIES places after entries[i], or NULL */
const GeoLeafEntry *
geo_scan_entry_ahead(const GeoLeafEntry *entries, int nentries, int i)
{
	return i + GEO_CROWD_ENTRIES < nentries ? &entries[i + GEO_CROWD_ENTRIES] : NULL;
}

/* A page reached sideways (right link, hint) must be a leaf at level 0 */
static void
check_leaf(Relation index, Buffer buf)
{
	ArcherPageOpaque opaque = ArcherPageGetOpaque(BufferGetPage(buf));

	if (!(opaque->flags & ARCHER_PAGE_LEAF) ||
		(opaque->flags & (ARCHER_PAGE_INTERNAL | ARCHER_PAGE_META | ARCHER_PAGE_BUFFER |
						  ARCHER_PAGE_DELETED)))
		archer_corrupted(index, BufferGetBlockNumber(buf),
						 "A leaf's right link points to a non-leaf page.");
	if (opaque->level != 0)
		archer_corrupted(index, BufferGetBlockNumber(buf), "A leaf is not at level 0.");
}

/* The leaf to start range [lo, ...] from: the hint's, or InvalidBuffer */
static Buffer
read_hinted_leaf(Relation index, const GeoLeafHint *hint, uint64 lo, ItemPointer mintid)
{
	Buffer		buf;

	if (!BlockNumberIsValid(hint->blkno) || lo <= hint->after ||
		(hint->has_hikey && lo > hint->hikey_cellid))
		return InvalidBuffer;
	/* the hint was a leaf when read, and leaves stay leaves */
	buf = archer_read_page(index, hint->blkno, BUFFER_LOCK_SHARE, ARCHER_GEO_PAGE_ID);
	check_leaf(index, buf);
	buf = geo_move_right(index, buf, lo, mintid, BUFFER_LOCK_SHARE);
	check_leaf(index, buf);
	return buf;
}

/* The first of sorted entries [pos, nsorted) past cell id hi, or nsorted */
static int
sorted_run_end(const GeoLeafEntry *entries, int pos, int nsorted, uint64 hi)
{
	int			end = nsorted;

	if (pos == nsorted || entries[nsorted - 1].cellid <= hi)
		return nsorted;
	while (pos < end)
	{
		int			mid = pos + (end - pos) / 2;

		if (entries[mid].cellid <= hi)
			pos = mid + 1;
		else
			end = mid;
	}
	return pos;
}

/*
 * Whether a leaf entry lies outside the leaf's key range: below low (the
 * left sibling's high key, when the leaf was reached through its right
 * link) or at or past the leaf's own high key
 */
static inline bool
entry_out_of_leaf(const GeoLeafEntry *entry, const GeoKey *low, ArcherPageOpaque opaque)
{
	return (low != NULL &&
			geo_key_cmp(entry->cellid, (ItemPointer) &entry->tid,
						low->cellid, (ItemPointer) &low->tid) < 0) ||
		((opaque->flags & ARCHER_PAGE_HAS_HIKEY) &&
		 geo_key_cmp(entry->cellid, (ItemPointer) &entry->tid,
					 opaque->hikey_cellid, &opaque->hikey_tid) >= 0);
}

/*
 * Read the leaf page of the key range [lo, hi] at *blkno (or, when it is
 * Invalid, the leaf where the range starts) and copy its entries in range
 * to entries: the page's sorted part in key order, then its unsorted tail.
 * Sets *blkno to the next leaf of the range, or Invalid when the range is
 * done.  *hikey carries the high key of the page read from one call to the
 * next: a right link must lead to higher keys, so a damaged link cannot
 * send the scan round in circles.
 *
 * What a leaf holds must lie in its key range: from the left sibling's
 * high key (known when the leaf is reached through a right link) up to its
 * own high key.  The ends of the sorted part and every tail entry are
 * checked, so that a right link to a page of another part of the tree, or
 * a high key moved below keys of the page, raises an error instead of
 * returning keys twice or skipping them.  A right link to a later leaf of
 * the same level, skipping some, passes every check a scan can make
 * without reading the parents; archer_geo_verify finds it.
 */
static int
read_range_page(Relation index, uint64 lo, uint64 hi, BlockNumber *blkno,
				GeoKey *hikey, GeoLeafHint *hint, GeoLeafEntry *entries,
				GeoVisibility *vis, bool *unsure)
{
	Buffer		buf;
	Page		page;
	ArcherPageOpaque opaque;
	GeoLeafEntry *page_entries;
	int			nentries;
	int			nsorted;
	int			pos = 0;
	int			end;
	int			ncopied;
	int			nunsure = 0;
	const GeoKey *low = NULL;

	if (*blkno == InvalidBlockNumber)
	{
		ItemPointerData mintid;

		ItemPointerSet(&mintid, 0, 0);
		buf = read_hinted_leaf(index, hint, lo, &mintid);
		if (!BufferIsValid(buf))
			buf = geo_descend(index, lo, &mintid, BUFFER_LOCK_SHARE);
		pos = geo_leaf_lower_bound(BufferGetPage(buf), lo, &mintid);
	}
	else
	{
		buf = archer_read_page(index, *blkno, BUFFER_LOCK_SHARE, ARCHER_GEO_PAGE_ID);
		opaque = ArcherPageGetOpaque(BufferGetPage(buf));
		check_leaf(index, buf);
		if ((opaque->flags & ARCHER_PAGE_HAS_HIKEY) &&
			geo_key_cmp(opaque->hikey_cellid, &opaque->hikey_tid,
						hikey->cellid, &hikey->tid) <= 0)
			archer_corrupted(index, *blkno, "A right link does not lead to higher keys.");
		low = hikey;
	}
	page = BufferGetPage(buf);
	opaque = ArcherPageGetOpaque(page);
	nentries = archer_page_nentries(page, sizeof(GeoLeafEntry));
	if (nentries > GEO_LEAF_CAPACITY)
		archer_corrupted(index, BufferGetBlockNumber(buf), "A leaf holds too many entries.");
	page_entries = (GeoLeafEntry *) ArcherPageGetEntries(page);
	nsorted = Min(opaque->nsorted, nentries);
	if (nsorted > 0 &&
		(entry_out_of_leaf(&page_entries[0], low, opaque) ||
		 entry_out_of_leaf(&page_entries[nsorted - 1], low, opaque)))
		archer_corrupted(index, BufferGetBlockNumber(buf),
						 "A leaf holds keys outside its key range.");
	end = sorted_run_end(page_entries, pos, nsorted, hi);
	/* one copy: large regions read mostly whole pages */
	memcpy(entries, &page_entries[pos], sizeof(GeoLeafEntry) * (end - pos));
	ncopied = end - pos;
	/*
	 * The binary searches trust the prefix's order; a damaged one could
	 * hand on a key of another cell, or of no face at all, to code that
	 * picks the region's face plane by the key
	 */
	for (int i = 0; i < ncopied; i++)
		if (entries[i].cellid < lo || entries[i].cellid > hi ||
			(i > 0 && entries[i].cellid < entries[i - 1].cellid))
			archer_corrupted(index, BufferGetBlockNumber(buf),
							 "A leaf's sorted entries are out of order.");
	pos = end;
	/* the unsorted tail: recent inserts, in no order */
	for (int i = nsorted; i < nentries; i++)
	{
		if (entry_out_of_leaf(&page_entries[i], low, opaque))
			archer_corrupted(index, BufferGetBlockNumber(buf),
							 "A leaf holds keys outside its key range.");
		if (page_entries[i].cellid >= lo && page_entries[i].cellid <= hi)
			entries[ncopied++] = page_entries[i];
	}

	if (pos == nsorted && (opaque->flags & ARCHER_PAGE_HAS_HIKEY) &&
		opaque->hikey_cellid <= hi)
	{
		*blkno = opaque->rightlink;
		hikey->cellid = opaque->hikey_cellid;
		hikey->tid = opaque->hikey_tid;
	}
	else
	{
		*blkno = InvalidBlockNumber;
		hint->blkno = BufferGetBlockNumber(buf);
		hint->after = hi;
		hint->has_hikey = (opaque->flags & ARCHER_PAGE_HAS_HIKEY) != 0;
		hint->hikey_cellid = opaque->hikey_cellid;
	}
	if (vis != NULL)
		nunsure = geo_visibility_mark(vis, entries, ncopied, unsure);
	UnlockReleaseBuffer(buf);
	if (nunsure > 0)
		ncopied = geo_visibility_filter(vis, entries, ncopied, unsure);
	return ncopied;
}

static int
tid_cmp(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}

/* Read this scan's copy of the insert buffer (geo_buffer.c) */
static void
load_buffered(IndexScanDesc scan)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;

	so->buffered = geo_buffer_collect(scan->indexRelation, &so->nbuffered, so->vis);
	if (so->nbuffered == 0)
		return;
	so->buffered_tids = MemoryContextAllocHuge(CurrentMemoryContext,
											   sizeof(ItemPointerData) * so->nbuffered);
	for (int i = 0; i < so->nbuffered; i++)
		so->buffered_tids[i] = so->buffered[i].tid;
	qsort(so->buffered_tids, so->nbuffered, sizeof(ItemPointerData), tid_cmp);
}

/* Room for a leaf's entries in range and the buffer's (geo_scan_read_range) */
static void
alloc_range_entries(IndexScanDesc scan)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	int			capacity = GEO_LEAF_CAPACITY + so->nbuffered;

	/* huge: as large as the buffer (GEO_BUFFER_SCAN_MAX_ENTRIES) */
	so->range_entries = MemoryContextAllocHuge(CurrentMemoryContext,
											   sizeof(GeoLeafEntry) * capacity);
	/* ordered scans keep their matches as candidates (cands) instead */
	so->match_recheck = so->ordered ? NULL :
		MemoryContextAllocHuge(CurrentMemoryContext, sizeof(bool) * capacity);
}

/*
 * read_range_page for a scan: leaves out tree entries the scan holds from
 * the insert buffer (a merge may be moving them), and with the first page
 * of a range adds the buffer's entries in that range.  Fills
 * so->range_entries.
 */
int
geo_scan_read_range(IndexScanDesc scan, uint64 lo, uint64 hi, BlockNumber *blkno, GeoKey *hikey)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	GeoLeafEntry *entries = so->range_entries;
	bool		first_page = (*blkno == InvalidBlockNumber);
	int			n = read_range_page(scan->indexRelation, lo, hi, blkno, hikey,
									&so->leaf_hint, entries, so->vis, so->unsure);
	int			nkept = 0;
	int			pos = 0;
	int			end = so->nbuffered;

	if (so->nbuffered == 0)
		return n;
	for (int i = 0; i < n; i++)
		if (bsearch(&entries[i].tid, so->buffered_tids, so->nbuffered,
					sizeof(ItemPointerData), tid_cmp) == NULL)
			entries[nkept++] = entries[i];
	if (!first_page)
		return nkept;
	/* first buffered entry with cellid >= lo */
	while (pos < end)
	{
		int			mid = pos + (end - pos) / 2;

		if (so->buffered[mid].cellid < lo)
			pos = mid + 1;
		else
			end = mid;
	}
	for (; pos < so->nbuffered && so->buffered[pos].cellid <= hi; pos++)
		entries[nkept++] = so->buffered[pos];
	return nkept;
}

/* ---- condition scans ---- */

/*
 * Move the entries of so->range_entries (nentries of them, from the current
 * covering cell) that pass every condition to its front, with their
 * recheck flags; returns how many.
 */
static int
keep_matches(GeoScanOpaque so, int nentries)
{
	GeoLeafEntry *entries = so->range_entries;
	int			nkept = 0;

	/* most entries of a large region are in INSIDE cells: nothing to decide */
	if (so->nkeys == 1 && so->keys[0].cells[so->cur_cell].relation == GEO_INSIDE)
	{
		memset(so->match_recheck, 0, sizeof(bool) * nentries);
		return nentries;
	}
	for (int i = 0; i < nentries; i++)
	{
		GeoEntryPoint point = {POINT_UNDECODED};
		bool		recheck;

		/* (entries[i + GEO_CROWD_ENTRIES] is still in place: nkept <= i) */
		if (!geo_scan_entry_matches(so, so->cur_cell, &entries[i],
						   geo_scan_entry_ahead(entries, nentries, i), &point, &recheck))
			continue;
		if (nkept != i)
			entries[nkept] = entries[i];
		so->match_recheck[nkept++] = recheck;
	}
	return nkept;
}

/*
 * Read the next leaf page of the covering of keys[0] that has matching
 * entries; false at the end.  A scan without conditions reads every entry,
 * NULL and empty points included (last).
 */
static pg_noinline bool
next_condition_batch(IndexScanDesc scan)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	GeoKeyState *first = &so->keys[0];

	so->nmatched = 0;
	so->match_pos = 0;
	while (so->nmatched == 0)
	{
		uint64		lo = 0;
		uint64		hi = UINT64_MAX;
		int			nentries;

		if (so->nkeys > 0)
		{
			if (so->cur_cell >= first->ncells)
				return false;
			lo = s2_cellid_range_min(first->cells[so->cur_cell].cellid);
			hi = s2_cellid_range_max(first->cells[so->cur_cell].cellid);
		}
		else if (so->cur_cell == 0)
			hi = GEO_NULL_CELLID - 1;
		else if (so->cur_cell == 1)
			lo = GEO_NULL_CELLID;	/* NULL and empty points last, as ORDER BY puts them */
		else
			return false;
		CHECK_FOR_INTERRUPTS();
		nentries = geo_scan_read_range(scan, lo, hi, &so->next_blkno, &so->range_hikey);
		so->nmatched = keep_matches(so, nentries);
		if (so->next_blkno == InvalidBlockNumber)
			so->cur_cell++;
	}
	/* loaded while this page's rows are returned */
	if (so->next_blkno != InvalidBlockNumber)
		archer_prefetch_page(scan->indexRelation, so->next_blkno);
	return true;
}

/* ---- the access method interface ---- */

/* Give back the polygon regions of the last rescan's keys, once */
static void
release_regions(GeoScanOpaque so)
{
	for (int i = 0; i < so->nkeys; i++)
	{
		if (so->keys[i].cached != NULL)
			geo_region_cache_release(so->keys[i].cached);
		so->keys[i].cached = NULL;
	}
}

/* The row visibility scan_sees_values uses: an index-only scan's, else one of its own */
static GeoVisibility *
values_visibility(IndexScanDesc scan)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;

	if (so->vis != NULL)
		return so->vis;
	if (so->values_vis == NULL)
	{
		/* its heap fetch outlives rescans, as the scan's vis does */
		MemoryContext oldcxt = MemoryContextSwitchTo(so->itupcxt);

		so->values_vis = palloc(sizeof(GeoVisibility));
		geo_visibility_init(so->values_vis, scan->heapRelation, scan->xs_snapshot);
		MemoryContextSwitchTo(oldcxt);
	}
	return so->values_vis;
}

/* Whether the snapshot sees the row of one of entries[0 .. n), fetched in turn */
static bool
sees_any_row(GeoVisibility *vis, GeoLeafEntry *entries, int n)
{
	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (geo_visibility_fetch(vis, &entries[i].tid, vis->snapshot))
			return true;
	}
	return false;
}

/*
 * Whether the scan's snapshot sees a row whose value the index holds (an
 * entry that is not an SQL NULL).  When it sees none, a sequential scan of
 * the table evaluates no operator, so a scan of the index must answer
 * without looking at its arguments: a bad centre, region or SRID raises no
 * error.  Empty points are values, on which the operators run.
 *
 * The insert buffer's entries (load_buffered: this backend's pending
 * inserts are written first) are checked, then the leaves from the
 * leftmost on.  NULL and empty points sort last, so on a table whose rows
 * are visible the first entry checked answers; an index of NULL entries
 * is read to its end, and the rows of entries deleted since VACUUM are
 * fetched one by one until a visible one turns up.  Under an MVCC snapshot
 * a row once seen stays seen, so a scan stops checking at the first
 * rescan that finds one.
 */
static bool
scan_sees_values(IndexScanDesc scan)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	Relation	index = scan->indexRelation;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	GeoVisibility *vis;
	GeoLeafEntry *values;
	ItemPointerData lowest;
	Buffer		buf;
	bool		sees = false;

	if (so->sees_values)
		return true;
	vis = values_visibility(scan);
	for (int i = 0; i < so->nbuffered && !sees; i++)
	{
		CHECK_FOR_INTERRUPTS();
		sees = geo_point_code_kind(&so->buffered[i]) != GEO_POINT_NULL &&
			geo_visibility_fetch(vis, &so->buffered[i].tid, vis->snapshot);
	}
	values = palloc(sizeof(GeoLeafEntry) * GEO_LEAF_CAPACITY);
	ItemPointerSet(&lowest, 0, 0);
	buf = sees ? InvalidBuffer : geo_descend(index, 0, &lowest, BUFFER_LOCK_SHARE);
	for (BlockNumber leaves = 1; BufferIsValid(buf); leaves++)
	{
		Page		page = BufferGetPage(buf);
		const GeoLeafEntry *entries = (const GeoLeafEntry *) ArcherPageGetEntries(page);
		int			nentries = archer_page_nentries(page, sizeof(GeoLeafEntry));
		BlockNumber blkno = BufferGetBlockNumber(buf);
		BlockNumber next = ArcherPageGetOpaque(page)->rightlink;
		int			nvalues = 0;

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < nentries && !sees; i++)
		{
			if (geo_point_code_kind(&entries[i]) == GEO_POINT_NULL)
				continue;
			/*
			 * Under the leaf's lock the row is still in the table: on an
			 * all-visible page it is visible to every snapshot (see
			 * geo_visibility.c).  The others are fetched once unlocked.
			 */
			sees = VM_ALL_VISIBLE(vis->heap, ItemPointerGetBlockNumber(&entries[i].tid),
								  &vis->vmbuf);
			values[nvalues++] = entries[i];
		}
		UnlockReleaseBuffer(buf);
		buf = InvalidBuffer;
		sees = sees || sees_any_row(vis, values, nvalues);
		if (sees || !BlockNumberIsValid(next))
			break;
		archer_check_link(index, blkno, next, InvalidBlockNumber);
		if (leaves >= nblocks)
			archer_corrupted(index, blkno, "The leaves' right links form a cycle.");
		buf = archer_read_page(index, next, BUFFER_LOCK_SHARE, ARCHER_GEO_PAGE_ID);
		if (!(ArcherPageGetOpaque(BufferGetPage(buf))->flags & ARCHER_PAGE_LEAF))
			archer_corrupted(index, next, "A leaf's right link leads to a page that is no leaf.");
	}
	if (vis->slot != NULL)
		ExecClearTuple(vis->slot);
	pfree(values);
	so->sees_values = sees && IsMVCCSnapshot(scan->xs_snapshot);
	return sees;
}

void
geo_rescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys, int norderbys)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	MemoryContext oldcxt;
	bool		sees_values;

	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
	if (orderbys && scan->numberOfOrderBys > 0)
		memmove(scan->orderByData, orderbys, scan->numberOfOrderBys * sizeof(ScanKeyData));

	release_regions(so);
	MemoryContextReset(so->scancxt);
	so->cands = NULL;
	so->ncands = so->maxcands = so->nready = 0;
	so->nmatched = so->match_pos = 0;
	so->cur_cell = 0;
	so->next_blkno = InvalidBlockNumber;
	so->leaf_hint.blkno = InvalidBlockNumber;
	so->no_match = false;
	so->nkeys = scan->numberOfKeys;
	so->ordered = scan->numberOfOrderBys > 0;
	so->ring_angle = -1;
	so->emit_bound = -1;
	so->nulls_done = false;
	so->null_blkno = InvalidBlockNumber;
	so->null_end = false;
	so->budget = Max(1024, (int) Min((double) work_mem * 1024.0 / (2 * sizeof(GeoCandidate)),
									 MaxAllocSize / (2 * sizeof(GeoCandidate))));
	so->trimmed = false;
	so->have_floor = false;
	so->done_scanned = NULL;
	so->ndone_scanned = 0;
	so->done_bound = -1;
	so->same_distance = false;
	so->center_extent = 0;
	/* the executor asks for index tuples before the first rescan */
	if (scan->xs_want_itup && so->vis == NULL)
	{
		MemoryContext itupcxt = MemoryContextSwitchTo(so->itupcxt);

		so->vis = palloc(sizeof(GeoVisibility));
		geo_visibility_init(so->vis, scan->heapRelation, scan->xs_snapshot);
		so->unsure = palloc(sizeof(bool) * GEO_LEAF_CAPACITY);
		MemoryContextSwitchTo(itupcxt);
	}
	oldcxt = MemoryContextSwitchTo(so->scancxt);
	load_buffered(scan);

	/*
	 * No visible row to answer about: no condition holds and every distance
	 * is NULL.  No centre, region or SRID is checked either, so that a bad
	 * one raises no error here when a sequential scan of the table raises
	 * none.
	 */
	sees_values = scan_sees_values(scan);
	if (!sees_values && so->nkeys > 0)
	{
		so->no_match = true;
		so->nkeys = 0;
		MemoryContextSwitchTo(oldcxt);
		pgstat_count_index_scan(scan->indexRelation);
		return;
	}
	if (so->ordered && sees_values)
		geo_knn_prepare(scan);
	else if (so->ordered)
	{
		so->same_distance = true;
		so->same_distance_null = true;
		so->ordered = false;
	}
	so->exact_order = so->ordered && scan->xs_want_itup;
	alloc_range_entries(scan);
	so->keys = palloc0(sizeof(GeoKeyState) * Max(1, so->nkeys));
	so->scanned = palloc(sizeof(GeoRange));
	so->nscanned = 0;
	for (int i = 0; i < so->nkeys; i++)
	{
		ScanKey		key = &scan->keyData[i];
		GeoKeyState *state = &so->keys[i];

		if (key->sk_flags & SK_ISNULL)
		{
			so->no_match = true;
			break;
		}
		if (key->sk_strategy == GEO_STRATEGY_CAP)
		{
			state->region = geo_cap_region(so->kind, DatumGetArcherCapP(key->sk_argument));
			state->ncells = georegion_cover(state->region, archer_geo_max_cells,
											geo_scan_dense_cell_level(scan->indexRelation),
											&state->cells);
		}
		else if (key->sk_strategy == GEO_STRATEGY_REGION)
		{
			state->cached = geo_region_cache_acquire(so->kind, key->sk_argument);
			state->region = state->cached->region;
			state->cells = state->cached->cells;
			state->ncells = state->cached->ncells;
		}
		else
			elog(ERROR, "archer_geo: unexpected strategy %d", key->sk_strategy);
		state->planar = georegion_is_planar(state->region);
		state->crowd_lo = 1;	/* an empty range */
		state->crowd_hi = 0;
	}
	MemoryContextSwitchTo(oldcxt);
	pgstat_count_index_scan(scan->indexRelation);
}

/*
 * Rows of a region are spread over the table: fetching each waits for its
 * heap page, line pointer and tuple to come from memory in turn.  Loading
 * them a few rows ahead lets those waits overlap (see
 * archer_prefetch_heap_tuple).
 */
static void
prefetch_heap_rows(IndexScanDesc scan)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	int			page_pos = so->match_pos + GEO_PREFETCH_PAGE_AHEAD;

	if (page_pos < so->nmatched)
		archer_prefetch_heap_tuple(scan, &so->range_entries[page_pos].tid);
}

static pg_noinline bool
ordered_gettuple(IndexScanDesc scan)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	GeoCandidate cand;
	bool		distance_null;

	if (!geo_knn_next(scan, &cand, &distance_null))
		return false;
	scan->xs_heaptid = cand.entry.tid;
	scan->xs_recheck = cand.recheck;
	scan->xs_orderbyvals[0] = Float8GetDatum(cand.distance);
	scan->xs_orderbynulls[0] = distance_null;
	scan->xs_recheckorderby = !distance_null && !so->exact_order;
	if (scan->xs_want_itup)
		geo_itup_return(scan, &cand.entry, &cand.point);
	return true;
}

bool
geo_gettuple(IndexScanDesc scan, ScanDirection dir)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	const GeoLeafEntry *entry;

	if (so->no_match)
		return false;
	if (so->ordered)
		return ordered_gettuple(scan);
	if (so->match_pos >= so->nmatched && !next_condition_batch(scan))
		return false;
	/* an index-only scan reads few heap rows: all-visible pages it skips */
	if (!scan->xs_want_itup)
		prefetch_heap_rows(scan);
	entry = &so->range_entries[so->match_pos];
	scan->xs_heaptid = entry->tid;
	scan->xs_recheck = so->match_recheck[so->match_pos++];
	if (so->same_distance)
	{
		scan->xs_orderbyvals[0] = Float8GetDatum(so->same_distance_value);
		scan->xs_orderbynulls[0] = so->same_distance_null || entry->cellid == GEO_NULL_CELLID;
		scan->xs_recheckorderby = false;
	}
	if (scan->xs_want_itup)
		geo_itup_return(scan, entry, NULL);
	return true;
}

void
geo_endscan(IndexScanDesc scan)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;

	if (so->vis != NULL)
		geo_visibility_end(so->vis);
	if (so->values_vis != NULL)
		geo_visibility_end(so->values_vis);
	release_regions(so);
	MemoryContextDelete(so->scancxt);
	pfree(so);
}
