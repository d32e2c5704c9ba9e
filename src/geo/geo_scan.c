/*-------------------------------------------------------------------------
 *
 * geo_scan.c
 *	  Index scans of archer_geo: radius and polygon conditions, and
 *	  nearest-neighbour ordering (ORDER BY col <-> point).
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
 * Nearest-neighbour scans grow a cap around the query point in rings (the
 * first sized from the points near the query point, each next one of
 * twice the area: a ring reads past the entries it can return, and the
 * smaller the step, the less).  Each ring scans only the key ranges that
 * earlier rings did not, computes for every entry a lower bound of its
 * distance in the metric of the type's <-> operator (from chords, without
 * trigonometry: leaf_distance_bound), and returns entries in order of that
 * bound (a binary heap of those it may return) while it does not exceed
 * the smallest distance any entry outside the ring can have.  The
 * executor recomputes the exact distance (xs_recheckorderby) and reorders
 * within that guarantee.  Entries with NULL or empty points come last,
 * with a NULL distance.  The candidates kept are bounded by work_mem: past
 * it the scan drops the farthest and reads the area again for them later
 * (next_ring).  A centre that is NULL, empty or not finite has the same
 * distance to every point: such scans stream the entries as a condition
 * scan does (prepare_order).
 *
 * Condition scans keep the matching entries of a leaf page where they were
 * copied, and return them in (mostly) key order, which is no order at all
 * in the heap: each fetch would wait on memory for its heap page and
 * tuple, so the scan has the CPU load them a few rows ahead
 * (prefetch_heap_rows), and the next leaf of the range while it returns
 * this one's rows.
 *
 * Index-only scans return each entry's value rebuilt from its point code
 * (geo_pointcode.c), written into one index tuple per scan; the few entries
 * whose value only the heap holds read it from there.  An ordered
 * index-only scan cannot have the executor reorder by exact distance, so it
 * orders the candidates by the exact <-> of their values itself.  It keeps
 * only the copies of rows visible to its snapshot (geo_visibility.c): VACUUM
 * may remove an entry while its copy waits to be returned.
 *
 * Entries in the insert buffer are read once per scan, at its start, and
 * join each key range as if they were on its first leaf (read_range).
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

#include "geo.h"

/* the sphere PostGIS's geography <-> measures on, rounded down */
#define GEO_KNN_SPHERE_RADIUS_LOW	6371000.0
#define GEO_KNN_FIRST_RING_ENTRIES	32.0
#define GEO_KNN_SEED_ENTRIES		16
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

typedef struct GeoKeyState
{
	GeoRegion  *region;
	GeoCoverCell *cells;
	int			ncells;
	GeoCachedRegion *cached;	/* polygons: where region and cells come from */
	bool		planar;			/* georegion_is_planar(region) */

	/*
	 * Planar polygons: the last cell inside a PARTIAL covering cell that was
	 * judged as a whole, its level and key range (empty: none yet), see
	 * relate_crowd
	 */
	int			crowd_level;
	uint64		crowd_lo;
	uint64		crowd_hi;
	GeoRelation crowd_relation;
} GeoKeyState;

/* An entry's point, decoded on first need (planar classification, index-only scans) */
typedef struct GeoEntryPoint
{
	int			kind;			/* GeoPointCodeKind, or POINT_UNDECODED */
	double		lat;
	double		lng;
} GeoEntryPoint;

#define POINT_UNDECODED		(-1)

typedef struct GeoCandidate
{
	/*
	 * The entry's lower bound (leaf_distance_bound), or once settled in an
	 * index-only scan, its exact distance (see settle_candidate)
	 */
	double		distance;
	GeoLeafEntry entry;
	GeoEntryPoint point;
	bool		recheck;
	bool		settled;
} GeoCandidate;

typedef struct GeoRange
{
	uint64		lo;
	uint64		hi;
} GeoRange;

/*
 * The leaf where the last key range ended.  The next range, if it starts
 * above that one and no higher than the leaf's high key, starts there
 * rather than with a descent from the root: the covering cells of a small
 * region often share a leaf.  (Entries only move right, and leaves are
 * never freed, so a stale leaf is still a correct place to start from.)
 */
typedef struct GeoLeafHint
{
	BlockNumber blkno;			/* InvalidBlockNumber: none */
	uint64		after;			/* the high end of the range that ended there */
	bool		has_hikey;
	uint64		hikey_cellid;	/* the leaf's high key when read */
} GeoLeafHint;

typedef struct GeoScanOpaqueData
{
	MemoryContext scancxt;		/* reset at every rescan */
	GeoColumnKind kind;
	bool		no_match;		/* a condition with a NULL argument */
	int			nkeys;
	GeoKeyState *keys;

	/* the insert buffer's entries, sorted by key, and their heap TIDs, sorted */
	GeoLeafEntry *buffered;
	int			nbuffered;
	ItemPointerData *buffered_tids;
	GeoLeafEntry *range_entries;	/* one leaf's entries in range, and the buffer's */
	GeoLeafHint leaf_hint;

	/*
	 * Ordered scans: the entries waiting to be returned.  After a ring's
	 * scan, cands[0 .. nready) are those that may be returned now (a
	 * settled bound up to emit_bound; on the NULL pages all), as a binary
	 * heap in candidate_cmp order, and the rest follow in no order: a ring
	 * brings several times the entries a LIMIT asks for, and sorting them
	 * all cost more than the rest of the scan.
	 */
	GeoCandidate *cands;
	int			ncands;
	int			maxcands;
	int			nready;

	/*
	 * At most twice budget candidates are kept (work_mem): past that the
	 * scan keeps the first budget and drops the rest, from cutoff on
	 * (trimmed), and when it has returned those, scans the same area again
	 * for the entries after the last one returned (see next_ring).  What
	 * has been returned is: the entries of done_scanned with a bound up to
	 * done_bound, and (have_floor) those of this ring with a bound up to
	 * emit_bound and a key up to floor.
	 */
	int			budget;
	bool		trimmed;
	GeoCandidate cutoff;
	bool		have_floor;
	GeoCandidate floor;
	GeoRange   *done_scanned;
	int			ndone_scanned;
	double		done_bound;		/* < 0: nothing done yet */

	/*
	 * Condition scans: the matching entries of one leaf, moved to the front
	 * of range_entries, with their recheck flags; and the position in the
	 * covering of keys[0]
	 */
	int			nmatched;
	int			match_pos;
	bool	   *match_recheck;
	int			cur_cell;
	BlockNumber next_blkno;		/* next leaf of the current range, or Invalid */
	GeoKey		range_hikey;	/* high key of the last leaf read in the range */

	/* ordered scans */
	bool		ordered;		/* in rings around a centre (else see same_distance) */
	S2Point		center;			/* of the rings: the centre, or nearest valid point */
	double		center_lat;		/* the centre as given (planar columns: may be */
	double		center_lng;		/* out of range) */
	double		center_offset;	/* planar: from the centre to the rings' centre */
	double		center_extent;	/* a shape's, see geo_decode_center_raw; 0: a point */
	double		ring_lat;		/* the rings' centre */
	double		ring_lng;
	double		ring_lng_x;		/* cos and sin of ring_lng: its direction in */
	double		ring_lng_y;		/* the equator's plane */
	double		ring_cos_lat;	/* |xy| of the rings' centre */

	/*
	 * Scans ordered by a distance that is the same for every non-empty
	 * value: a NULL or non-finite centre.  They stream like condition scans
	 * (no candidates kept), NULL and empty points last, with this distance
	 * for the others.
	 */
	bool		same_distance;
	bool		same_distance_null;
	double		same_distance_value;
	double		ring_angle;		/* the cap scanned so far; < 0 before the first */
	double		emit_bound;		/* entries up to this distance can be returned */
	GeoRange   *scanned;
	int			nscanned;
	bool		nulls_done;		/* returning the entries of NULL and empty points */
	BlockNumber null_blkno;		/* their next leaf, Invalid at the start or the end */
	GeoKey		null_hikey;
	bool		null_end;
	bool		exact_order;	/* index-only: distances are the exact <-> */

	/* index-only scans, in itupcxt (kept across rescans) */
	MemoryContext itupcxt;
	IndexTuple	plain_itup;		/* a plain value, coordinates rewritten per row */
	char	   *plain_coords;	/* where in plain_itup: x (longitude), then y */
	IndexTuple	null_itup;
	struct GeoLazyPoint *lazy;	/* PostGIS columns: the value read on demand */
	IndexTuple	lazy_itup;		/* holds a read-only pointer to lazy */
	IndexTuple	heap_itup;		/* the last value read from the heap */
	AttrNumber	heap_attno;
	GeoVisibility *vis;			/* which copies may be answered from */
	bool	   *unsure;			/* one leaf's, see geo_visibility_mark */

	/* scan_sees_values: true once it found a row, and (no vis) its rows */
	bool		sees_values;
	GeoVisibility *values_vis;
} GeoScanOpaqueData;

typedef GeoScanOpaqueData *GeoScanOpaque;

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

static void
decode_point(const GeoLeafEntry *entry, GeoEntryPoint *point)
{
	if (point->kind == POINT_UNDECODED)
		point->kind = geo_point_decode(entry, &point->lat, &point->lng);
}

/*
 * The order an ordered scan returns candidates in: distance (bound), then
 * key, so that "the entries after the last one returned" is well defined
 */
static int
cand_key_cmp(double distance, const GeoLeafEntry *entry, const GeoCandidate *cand)
{
	if (distance != cand->distance)
		return distance < cand->distance ? -1 : 1;
	return geo_key_cmp(entry->cellid, (ItemPointer) &entry->tid,
					   cand->entry.cellid, &((GeoCandidate *) cand)->entry.tid);
}

static int
candidate_cmp(const void *a, const void *b)
{
	const GeoCandidate *ca = (const GeoCandidate *) a;

	return cand_key_cmp(ca->distance, &ca->entry, (const GeoCandidate *) b);
}

static void settle_candidate(IndexScanDesc scan, GeoCandidate *cand);

/*
 * Settle a candidate (see settle_candidate) unless its bound shows it to
 * lie beyond what the scan compares it with now: emit_bound, and the
 * cutoff of a trimmed pass.  Past both, the bound decides like the exact
 * distance would: the candidate is not ready, nor returned, and after
 * cutoff.
 */
static void
settle_if_near(IndexScanDesc scan, GeoCandidate *cand)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;

	if (!cand->settled &&
		(cand->distance <= so->emit_bound ||
		 (so->trimmed && cand->distance <= so->cutoff.distance)))
		settle_candidate(scan, cand);
}

/* Restore the heap order of cands[0 .. n) below position i */
static void
sift_down(GeoCandidate *cands, int n, int i)
{
	GeoCandidate moving = cands[i];

	for (;;)
	{
		int			child = 2 * i + 1;

		if (child >= n)
			break;
		if (child + 1 < n && candidate_cmp(&cands[child + 1], &cands[child]) < 0)
			child++;
		if (candidate_cmp(&cands[child], &moving) >= 0)
			break;
		cands[i] = cands[child];
		i = child;
	}
	cands[i] = moving;
}

/*
 * Make the candidates that may be returned now (all, or those with a
 * settled bound up to emit_bound) the heap at the front of cands
 */
static void
make_ready_heap(IndexScanDesc scan, bool all)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	int			nready = so->ncands;

	if (!all)
	{
		nready = 0;
		for (int i = 0; i < so->ncands; i++)
		{
			settle_if_near(scan, &so->cands[i]);
			if (so->cands[i].settled && so->cands[i].distance <= so->emit_bound)
			{
				GeoCandidate ready = so->cands[i];

				so->cands[i] = so->cands[nready];
				so->cands[nready++] = ready;
			}
		}
	}
	for (int i = nready / 2 - 1; i >= 0; i--)
		sift_down(so->cands, nready, i);
	so->nready = nready;
}

/* Take the first ready candidate out of cands */
static GeoCandidate
pop_ready(GeoScanOpaque so)
{
	GeoCandidate first = so->cands[0];

	so->nready--;
	so->cands[0] = so->cands[so->nready];
	sift_down(so->cands, so->nready, 0);
	/* the hole at nready: one of the rest (in no order) fills it */
	so->ncands--;
	so->cands[so->nready] = so->cands[so->ncands];
	return first;
}

/* Is the range list (sorted, disjoint) holding this cell id? */
static bool
ranges_hold(const GeoRange *ranges, int nranges, uint64 cellid)
{
	int			lo = 0;
	int			hi = nranges - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (cellid < ranges[mid].lo)
			hi = mid - 1;
		else if (cellid > ranges[mid].hi)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/* Has an ordered scan returned this entry already (see GeoScanOpaqueData.budget)? */
static bool
returned_already(GeoScanOpaque so, const GeoLeafEntry *entry, double distance)
{
	if (distance <= so->done_bound &&
		ranges_hold(so->done_scanned, so->ndone_scanned, entry->cellid))
		return true;
	return so->have_floor && distance <= so->emit_bound &&
		cand_key_cmp(distance, entry, &so->floor) <= 0;
}

/* Keep the first budget candidates; the others come again in a later pass */
static void
trim_candidates(IndexScanDesc scan)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;

	for (int i = 0; i < so->ncands; i++)
	{
		if (!so->cands[i].settled)
			settle_candidate(scan, &so->cands[i]);
	}
	qsort(so->cands, so->ncands, sizeof(GeoCandidate), candidate_cmp);
	so->cutoff = so->cands[so->budget];
	so->trimmed = true;
	so->ncands = so->budget;
}

static void
add_candidate(IndexScanDesc scan, GeoCandidate *cand)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;

	if (!so->nulls_done)
	{
		settle_if_near(scan, cand);
		if (so->trimmed && candidate_cmp(cand, &so->cutoff) >= 0)
			return;
		if (returned_already(so, &cand->entry, cand->distance))
			return;
	}
	if (so->ncands == so->maxcands)
	{
		/*
		 * The entries of NULL points come a leaf at a time, but the first
		 * brings every buffered one: as many as the buffer copy, never
		 * dropped (they have no order to come back in)
		 */
		if (so->ncands >= 2 * so->budget && !so->nulls_done)
		{
			trim_candidates(scan);
			settle_if_near(scan, cand);
			if (candidate_cmp(cand, &so->cutoff) >= 0)
				return;
		}
		else
		{
			so->maxcands = Max(so->maxcands * 2, 1024);
			if (!so->nulls_done)
				so->maxcands = Min(so->maxcands, 2 * so->budget);
			if (so->cands == NULL)
				so->cands = MemoryContextAllocHuge(so->scancxt,
												   sizeof(GeoCandidate) * so->maxcands);
			else
				so->cands = repalloc_huge(so->cands, sizeof(GeoCandidate) * so->maxcands);
		}
	}
	so->cands[so->ncands++] = *cand;
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
		decode_point(entry, point);
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
static bool
entry_matches(GeoScanOpaque so, int first_cell, const GeoLeafEntry *entry,
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
static const GeoLeafEntry *
entry_ahead(const GeoLeafEntry *entries, int nentries, int i)
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

/* Room for a leaf's entries in range and the buffer's (read_range) */
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
static int
read_range(IndexScanDesc scan, uint64 lo, uint64 hi, BlockNumber *blkno, GeoKey *hikey)
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

/* ---- index-only scans ---- */

/*
 * The index tuple of a plain value, made once per scan; each entry's point
 * is then written over its coordinates (x, the longitude, then y).
 */
static void
prepare_plain_itup(IndexScanDesc scan)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	TupleDesc	desc = RelationGetDescr(scan->indexRelation);
	MemoryContext oldcxt = MemoryContextSwitchTo(so->itupcxt);
	Point		origin = {0, 0};
	Datum		value;
	bool		isnull = false;
	char	   *stored;

	if (so->kind == GEO_COLUMN_POINT)
		value = PointPGetDatum(&origin);
	else
		value = geo_postgis_plain_point(so->kind == GEO_COLUMN_GEOGRAPHY);
	so->plain_itup = index_form_tuple(desc, &value, &isnull);
	stored = DatumGetPointer(index_getattr(so->plain_itup, 1, desc, &isnull));
	if (so->kind == GEO_COLUMN_POINT)
		so->plain_coords = stored;
	else
		so->plain_coords = VARDATA_ANY(stored) + VARSIZE_ANY_EXHDR(stored) - 2 * sizeof(double);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * A plain PostGIS point of an index-only scan, decoded only when something
 * reads it.  Decoding (the cell's centre, two arctangents) is most of what
 * an entry of an INSIDE cell costs, and a count(*) or a query that only
 * filters on other columns never reads the value.  It is handed out as an
 * expanded object, through a read-only pointer: PostgreSQL's TOAST
 * machinery flattens it wherever a value is read (every function detoasts
 * its arguments) or kept (copying a datum, forming a tuple), as it does
 * PL/pgSQL's expanded arrays.  One per scan, rewritten per row: like any
 * index tuple of a scan, valid until the next row.
 */
typedef struct GeoLazyPoint
{
	ExpandedObjectHeader hdr;
	GeoLeafEntry entry;			/* the row's entry; its code holds a value */
	struct varlena *plain;		/* the column type's plain point (see prepare_plain_itup) */
} GeoLazyPoint;

static Size
lazy_point_flat_size(ExpandedObjectHeader *eohptr)
{
	return VARSIZE(((GeoLazyPoint *) eohptr)->plain);
}

static void
lazy_point_flatten(ExpandedObjectHeader *eohptr, void *result, Size allocated_size)
{
	GeoLazyPoint *lazy = (GeoLazyPoint *) eohptr;
	Size		size = VARSIZE(lazy->plain);
	char	   *coords = (char *) result + size - 2 * sizeof(double);
	double		lat;
	double		lng;

	if (allocated_size != size ||
		geo_point_decode(&lazy->entry, &lat, &lng) != GEO_POINT_VALUE)
		elog(ERROR, "archer_geo: cannot flatten an index-only value");
	memcpy(result, lazy->plain, size);
	memcpy(coords, &lng, sizeof(double));
	memcpy(coords + sizeof(double), &lat, sizeof(double));
}

static const ExpandedObjectMethods lazy_point_methods = {
	lazy_point_flat_size,
	lazy_point_flatten
};

/* The lazy point of a scan and the index tuple that points to it */
static pg_noinline void
prepare_lazy_itup(IndexScanDesc scan)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	MemoryContext oldcxt = MemoryContextSwitchTo(so->itupcxt);
	Size		hoff = IndexInfoFindDataOffset(0);
	Size		size = MAXALIGN(hoff + EXPANDED_POINTER_SIZE);

	so->lazy = palloc0(sizeof(GeoLazyPoint));
	EOH_init_header(&so->lazy->hdr, &lazy_point_methods, so->itupcxt);
	so->lazy->plain = (struct varlena *)
		DatumGetPointer(geo_postgis_plain_point(so->kind == GEO_COLUMN_GEOGRAPHY));
	so->lazy_itup = palloc0(size);
	so->lazy_itup->t_info = size | INDEX_VAR_MASK;
	memcpy((char *) so->lazy_itup + hoff, DatumGetPointer(EOHPGetRODatum(&so->lazy->hdr)),
		   EXPANDED_POINTER_SIZE);
	MemoryContextSwitchTo(oldcxt);
}

/* The index tuple of an entry whose code holds a value, PostGIS columns */
static inline IndexTuple
lazy_value_itup(IndexScanDesc scan, const GeoLeafEntry *entry)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;

	if (so->lazy == NULL)
		prepare_lazy_itup(scan);
	so->lazy->entry = *entry;
	return so->lazy_itup;
}

/*
 * The value of the column in an entry's heap row, for the entries whose
 * point code sends the reader there.  SnapshotAny: the value is the same
 * for every version the entry covers, and the executor decides visibility
 * on its own.  A row already pruned away is dead to every snapshot, so the
 * NULL returned for it is never seen.
 */
static IndexTuple
heap_value_itup(IndexScanDesc scan, const GeoLeafEntry *entry)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	ItemPointerData tid = entry->tid;
	Datum		value = (Datum) 0;
	bool		isnull = true;
	MemoryContext oldcxt = MemoryContextSwitchTo(so->itupcxt);

	if (geo_visibility_fetch(so->vis, &tid, SnapshotAny))
		value = slot_getattr(so->vis->slot, so->heap_attno, &isnull);
	if (so->heap_itup != NULL)
		pfree(so->heap_itup);
	so->heap_itup = index_form_tuple(RelationGetDescr(scan->indexRelation), &value, &isnull);
	ExecClearTuple(so->vis->slot);
	MemoryContextSwitchTo(oldcxt);
	return so->heap_itup;
}

/*
 * The index tuple of an entry for an index-only scan, once its point is
 * decoded (and in point columns, where a value is cheap); valid until the
 * next call
 */
static IndexTuple
entry_itup(IndexScanDesc scan, const GeoLeafEntry *entry, GeoEntryPoint *point)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;

	decode_point(entry, point);
	switch (point->kind)
	{
		case GEO_POINT_VALUE:
			if (so->plain_itup == NULL)
				prepare_plain_itup(scan);
			memcpy(so->plain_coords, &point->lng, sizeof(double));
			memcpy(so->plain_coords + sizeof(double), &point->lat, sizeof(double));
			return so->plain_itup;
		case GEO_POINT_NULL:
			if (so->null_itup == NULL)
			{
				MemoryContext oldcxt = MemoryContextSwitchTo(so->itupcxt);
				Datum		value = (Datum) 0;
				bool		isnull = true;

				so->null_itup = index_form_tuple(RelationGetDescr(scan->indexRelation),
												 &value, &isnull);
				MemoryContextSwitchTo(oldcxt);
			}
			return so->null_itup;
		case GEO_POINT_IN_HEAP:
			break;
	}
	return heap_value_itup(scan, entry);
}

/* entry_itup for an entry not decoded yet (out of line: keeps the point off hot stacks) */
static pg_noinline IndexTuple
undecoded_entry_itup(IndexScanDesc scan, const GeoLeafEntry *entry)
{
	GeoEntryPoint point = {POINT_UNDECODED};

	return entry_itup(scan, entry, &point);
}

/* The index tuple of an entry, lazy where that pays; point as for return_entry_itup */
static pg_noinline IndexTuple
any_entry_itup(IndexScanDesc scan, const GeoLeafEntry *entry, GeoEntryPoint *point)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;

	if ((point == NULL || point->kind == POINT_UNDECODED) &&
		so->kind != GEO_COLUMN_POINT && geo_point_code_kind(entry) == GEO_POINT_VALUE)
		return lazy_value_itup(scan, entry);
	if (point == NULL)
		return undecoded_entry_itup(scan, entry);
	return entry_itup(scan, entry, point);
}

/*
 * Give an index-only scan the entry's value; point is the entry's point if
 * decoded, or NULL.  (Condition scans pass NULL: the few points their
 * decisions decoded are decoded again here.)  Inline for the row of a
 * condition scan whose lazy value is ready, the row of every count.
 */
static inline void
return_entry_itup(IndexScanDesc scan, const GeoLeafEntry *entry, GeoEntryPoint *point)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;

	if (point == NULL && so->lazy != NULL && geo_point_code_kind(entry) == GEO_POINT_VALUE)
		scan->xs_itup = lazy_value_itup(scan, entry);
	else
		scan->xs_itup = any_entry_itup(scan, entry, point);
	scan->xs_itupdesc = RelationGetDescr(scan->indexRelation);
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
		if (!entry_matches(so, so->cur_cell, &entries[i],
						   entry_ahead(entries, nentries, i), &point, &recheck))
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
		nentries = read_range(scan, lo, hi, &so->next_blkno, &so->range_hikey);
		so->nmatched = keep_matches(so, nentries);
		if (so->next_blkno == InvalidBlockNumber)
			so->cur_cell++;
	}
	/* loaded while this page's rows are returned */
	if (so->next_blkno != InvalidBlockNumber)
		archer_prefetch_page(scan->indexRelation, so->next_blkno);
	return true;
}

/* ---- ordered scans ---- */

static bool
column_is_planar(GeoColumnKind kind)
{
	return kind != GEO_COLUMN_GEOGRAPHY;
}

/* Planar distance from x to the interval [lo, hi] */
static double
interval_distance(double x, double lo, double hi)
{
	if (x < lo)
		return lo - x;
	if (x > hi)
		return x - hi;
	return 0;
}

/*
 * Lower bound of the planar distance from the query point to any point of
 * the leaf cell whose centre is leaf, from the cell's latitude and
 * longitude: the trigonometry leaf_distance_bound spares most entries.
 */
static double
planar_box_bound(GeoScanOpaque so, S2Point leaf)
{
	double		radius = s2_level_max_radius(S2_MAX_LEVEL);
	double		lat;
	double		lng;
	double		lat_margin;
	double		lng_margin;
	double		dlng;
	double		coslat;

	s2_latlng_from_point(leaf, &lat, &lng);
	lat_margin = radius * 180.0 / M_PI * 1.01 + 1e-12;
	coslat = cos((Min(fabs(lat) + lat_margin, 90.0)) * M_PI / 180.0);
	/* near a pole a leaf cell spans any longitude */
	lng_margin = coslat > 1e-6 ? lat_margin / coslat : 360.0;

	/* the point may sit on either side of the antimeridian */
	dlng = interval_distance(so->center_lng, lng - lng_margin, lng + lng_margin);
	if (lng + lng_margin > 180.0)
		dlng = Min(dlng, interval_distance(so->center_lng, lng - lng_margin - 360.0,
										   lng + lng_margin - 360.0));
	if (lng - lng_margin < -180.0)
		dlng = Min(dlng, interval_distance(so->center_lng, lng - lng_margin + 360.0,
										   lng + lng_margin + 360.0));
	return Max(0.0, hypot(dlng, interval_distance(so->center_lat, lat - lat_margin,
												  lat + lat_margin)) * (1.0 - 1e-12) -
			   so->center_extent);
}

/*
 * Lower bound of the distance from the rings' centre c to any point q of
 * the leaf cell whose centre is p (q lies within r of p), in radians: on
 * the sphere for geography, in the (lng, lat) plane otherwise; negative
 * when the plane's distance needs the cell's longitude.  Square roots and
 * a division: a ring reads several times the entries it returns, and each
 * needs its bound.
 *
 * On the sphere: the chord from c to p, at most their angle, less r.
 *
 * In the plane: (|xy|, z) is (cos, sin) of the latitude, so the latitudes
 * of q and c differ by at least the chord between their (|xy|, z), and
 * that map shortens distances: by at least the chord between p's and c's
 * less r.  Their longitudes differ by at
 * least the chord between the directions of p and c in the equator's
 * plane less q's reach from p's longitude: asin(sin(r) / cos(lat(p))),
 * below pi/2 * r / |p.xy| while the cell stays off the pole.  That is the
 * difference the short way round; the plane's does not wrap, and when the
 * short way crosses the antimeridian the plane's is the long way, which
 * the chord would understate by far (a bound still, but one that returns
 * rows long before their turn): negative.  The short way from c to p crosses
 * it exactly when p lies past the antimeridian's direction (-1, 0), turning
 * from c: counterclockwise if c's longitude is >= 0 (then sin(lng(p) -
 * lng(c)) > 0 and p.y < 0), clockwise otherwise; near the edges the cell
 * could lie either way, and counts as crossing.
 */
static double
ring_centre_bound(GeoScanOpaque so, S2Point p)
{
	double		r = s2_level_max_radius(S2_MAX_LEVEL);
	double		dz = p.z - so->center.z;
	double		dlat;
	double		pxy;
	double		dlng = 0;

	if (!column_is_planar(so->kind))
	{
		double		dx = p.x - so->center.x;
		double		dy = p.y - so->center.y;

		return Max(0.0, sqrt(dx * dx + dy * dy + dz * dz) - r);
	}
	pxy = sqrt(p.x * p.x + p.y * p.y);
	dlat = pxy - so->ring_cos_lat;
	dlat = Max(0.0, sqrt(dlat * dlat + dz * dz) - r);
	if (pxy > 2 * r)
	{
		double		ux = p.x / pxy;
		double		uy = p.y / pxy;
		double		reach = 1.6 * r / pxy;
		double		dx = ux - so->ring_lng_x;
		double		dy = uy - so->ring_lng_y;
		/* sin(lng(p) - lng(c)) */
		double		turn = so->ring_lng_x * uy - so->ring_lng_y * ux;

		if (so->ring_lng >= 0 ? (turn > -reach && uy < reach) :
			(turn < reach && uy > -reach))
			return -1;
		dlng = Max(0.0, sqrt(dx * dx + dy * dy) - reach);
	}
	return sqrt(dlat * dlat + dlng * dlng);
}

/*
 * Lower bound of the distance from the query point to any point of the
 * leaf cell whose centre is leaf, in the metric of the column type's <->
 * operator: meters on the sphere for geography, degrees in the (lng, lat)
 * plane otherwise (from a centre out of range, by ring_distance_bound's
 * step; a shape's extent taken off)
 */
static double
leaf_distance_bound(GeoScanOpaque so, S2Point leaf)
{
	double		bound = ring_centre_bound(so, leaf);

	if (!column_is_planar(so->kind))
		return Max(0.0, bound - so->center_extent) * GEO_KNN_SPHERE_RADIUS_LOW;
	if (bound < 0)
		return planar_box_bound(so, leaf);
	bound *= 180.0 / M_PI;
	if (so->center_offset > 0)
		bound = hypot(bound, so->center_offset);
	return Max(0.0, bound * (1.0 - 1e-12) - so->center_extent);
}

/*
 * The exact distance from the query point to an entry's value, by the
 * <-> operator itself (index-only ordered scans).  A row pruned away has
 * no value: its lower bound will do, nobody sees the row.
 */
static double
exact_distance(IndexScanDesc scan, const GeoLeafEntry *entry, GeoEntryPoint *point)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	ScanKey		orderby = &scan->orderByData[0];
	IndexTuple	itup;
	bool		isnull;
	Datum		value;

	/* decoded here, or the operator would flatten a lazy value per call */
	decode_point(entry, point);
	itup = entry_itup(scan, entry, point);
	value = index_getattr(itup, 1, RelationGetDescr(scan->indexRelation), &isnull);

	if (isnull)
		return leaf_distance_bound(so, s2_cellid_to_point(entry->cellid));
	return DatumGetFloat8(FunctionCall2Coll(&orderby->sk_func, orderby->sk_collation,
											value, orderby->sk_argument));
}

/*
 * Index-only scans order by the exact distance, an operator call that most
 * entries a ring reads need not pay for: their leaf cell's bound shows them
 * to lie beyond what the ring returns.  This replaces that bound.
 */
static void
settle_candidate(IndexScanDesc scan, GeoCandidate *cand)
{
	Assert(((GeoScanOpaque) scan->opaque)->exact_order);
	cand->distance = exact_distance(scan, &cand->entry, &cand->point);
	cand->settled = true;
}

/* The smallest distance an entry outside the cap of the given angle can have */
static double
ring_distance_bound(GeoScanOpaque so, double angle)
{
	if (angle >= M_PI)
		return DBL_MAX;

	/*
	 * A point outside the cap is this far from the rings' centre in the
	 * plane, at least; and the plane's valid part, where every point lies,
	 * is a rectangle: from a centre outside it, whose nearest valid point
	 * the rings' centre is, any point of it is at least as far as the
	 * hypotenuse of these two distances (a projection onto a convex set)
	 */
	if (column_is_planar(so->kind))
		return Max(0.0, hypot(angle * 180.0 / M_PI, so->center_offset) * (1.0 - 1e-12) -
				   so->center_extent);
	return Max(0.0, angle - so->center_extent) * GEO_KNN_SPHERE_RADIUS_LOW * (1.0 - 1e-12);
}

/* Add [lo, hi] to the sorted, disjoint list of scanned ranges */
static void
add_scanned_range(GeoScanOpaque so, uint64 lo, uint64 hi)
{
	int			i = 0;
	int			j;

	while (i < so->nscanned && so->scanned[i].hi < lo)
		i++;
	j = i;
	while (j < so->nscanned && so->scanned[j].lo <= hi)
	{
		lo = Min(lo, so->scanned[j].lo);
		hi = Max(hi, so->scanned[j].hi);
		j++;
	}
	/* replace scanned[i..j) by [lo, hi] */
	so->scanned = repalloc(so->scanned, sizeof(GeoRange) * (so->nscanned + 1));
	memmove(&so->scanned[i + 1], &so->scanned[j], sizeof(GeoRange) * (so->nscanned - j));
	so->scanned[i].lo = lo;
	so->scanned[i].hi = hi;
	so->nscanned += 1 - (j - i);
}

/* Read every entry of [lo, hi] into the candidates */
static void
scan_range_for_ring(IndexScanDesc scan, uint64 lo, uint64 hi)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	BlockNumber blkno = InvalidBlockNumber;
	GeoKey		hikey;
	GeoLeafEntry *entries = so->range_entries;

	do
	{
		int			nentries = read_range(scan, lo, hi, &blkno, &hikey);

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < nentries; i++)
		{
			GeoCandidate cand;

			cand.point.kind = POINT_UNDECODED;
			cand.recheck = false;
			if (so->nkeys > 0 &&
				!entry_matches(so, -1, &entries[i], entry_ahead(entries, nentries, i),
							   &cand.point, &cand.recheck))
				continue;
			cand.entry = entries[i];
			cand.distance = leaf_distance_bound(so, s2_cellid_to_point(entries[i].cellid));
			cand.settled = !so->exact_order;
			add_candidate(scan, &cand);
		}
	} while (blkno != InvalidBlockNumber);
}

/* Scan the part of range [lo, hi] no earlier ring scanned */
static void
scan_new_part(IndexScanDesc scan, uint64 lo, uint64 hi)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	uint64		from = lo;

	for (int i = 0; i < so->nscanned && from <= hi; i++)
	{
		if (so->scanned[i].hi < from)
			continue;
		if (so->scanned[i].lo > hi)
			break;
		if (so->scanned[i].lo > from)
			scan_range_for_ring(scan, from, so->scanned[i].lo - 1);
		if (so->scanned[i].hi >= hi)
			return;
		from = so->scanned[i].hi + 1;
	}
	if (from <= hi)
		scan_range_for_ring(scan, from, hi);
}

/* A ring's range: scan what no earlier ring scanned, then record it all as scanned */
static void
scan_ring_range(IndexScanDesc scan, uint64 lo, uint64 hi)
{
	scan_new_part(scan, lo, hi);
	add_scanned_range((GeoScanOpaque) scan->opaque, lo, hi);
}

/*
 * First ring: the leaf page where the query point's cell id would sit holds
 * points near it (Hilbert order keeps neighbours together), whatever the
 * local density.  The cap that holds the GEO_KNN_SEED_ENTRIES nearest of
 * them holds about that many entries, so it is a good first ring in a
 * city centre and in the open sea alike.  An empty leaf falls back to the
 * cap that would hold a few dozen entries spread evenly.  (Only the scan's
 * speed depends on this angle: the rings grow until the scan is done.)
 */
static double
first_ring_angle(IndexScanDesc scan)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	Relation	index = scan->indexRelation;
	ItemPointerData mintid;
	Buffer		buf;
	Page		page;
	GeoLeafEntry *entries;
	int			nentries;
	double		nearest[GEO_KNN_SEED_ENTRIES];	/* ascending */
	int			n = 0;
	double		nindex;
	double		radius = s2_level_max_radius(S2_MAX_LEVEL);

	ItemPointerSet(&mintid, 0, 0);
	buf = geo_descend(index, s2_cellid_from_point(so->center), &mintid, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	nentries = archer_page_nentries(page, sizeof(GeoLeafEntry));
	entries = (GeoLeafEntry *) ArcherPageGetEntries(page);
	for (int i = 0; i < nentries && i < GEO_LEAF_CAPACITY; i++)
	{
		S2Point		p;
		double		d;
		int			pos;

		if (entries[i].cellid == GEO_NULL_CELLID)
			continue;
		/* the point's angle, in the ring's terms (planar: in the plane) */
		p = s2_cellid_to_point(entries[i].cellid);
		d = ring_centre_bound(so, p);
		if (d < 0)
			d = s2_point_angle(p, so->center);
		if (n == GEO_KNN_SEED_ENTRIES && d >= nearest[n - 1])
			continue;
		pos = Min(n, GEO_KNN_SEED_ENTRIES - 1);
		for (; pos > 0 && nearest[pos - 1] > d; pos--)
			nearest[pos] = nearest[pos - 1];
		nearest[pos] = d;
		n = Min(n + 1, GEO_KNN_SEED_ENTRIES);
	}
	UnlockReleaseBuffer(buf);

	if (n == 0)
	{
		nindex = Max(1.0, (double) RelationGetNumberOfBlocks(index) * GEO_LEAF_CAPACITY * 0.7);
		return Max(1e-7, acos(1.0 - 2.0 * Min(1.0, GEO_KNN_FIRST_RING_ENTRIES / nindex)));
	}
	return Min(M_PI, nearest[n - 1] + 4 * radius + 1e-12);
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
static int
dense_cell_level(Relation index)
{
	double		ntuples = index->rd_rel->reltuples;

	if (ntuples < 6.0)
		return -1;
	return Min(S2_MAX_LEVEL, (int) floor(log(ntuples / 6.0) / log(4.0)));
}

/*
 * Scan the next ring; false when the whole sphere has been scanned and its
 * entries returned.  When the last pass dropped candidates (trimmed) and
 * has returned the ones it kept, the same ring is scanned again from
 * scratch for the entries after the last one returned; otherwise every
 * entry of the area scanned with a bound up to emit_bound has been
 * returned, and the ring grows (scanning its whole area again if the last
 * pass dropped candidates).
 */
static bool
next_ring(IndexScanDesc scan)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	MemoryContext oldcxt;
	GeoRegion  *cap;
	GeoCoverCell *cells;
	int			ncells;
	bool		rescan = so->trimmed;
	GeoRange   *read_before = NULL;
	int			nread_before = 0;

	if (so->ring_angle < 0)
		so->ring_angle = first_ring_angle(scan);
	else if (!so->trimmed || so->ncands > 0)
	{
		/* this ring is done: remember what it returned */
		if (so->done_scanned != NULL)
			pfree(so->done_scanned);
		so->done_scanned = MemoryContextAlloc(so->scancxt,
											  sizeof(GeoRange) * Max(so->nscanned, 1));
		memcpy(so->done_scanned, so->scanned, sizeof(GeoRange) * so->nscanned);
		so->ndone_scanned = so->nscanned;
		so->done_bound = so->emit_bound;
		so->have_floor = false;
		if (so->ring_angle >= M_PI)
			return false;
		so->ring_angle *= M_SQRT2;
	}
	so->trimmed = false;
	so->emit_bound = ring_distance_bound(so, so->ring_angle);

	/*
	 * Else the candidates not yet returned stay.  A rescan reads again all
	 * that earlier passes read, not only this ring's covering: a covering
	 * need not hold a smaller cap's, and done_scanned must hold every range
	 * whose entries up to done_bound were returned.
	 */
	oldcxt = MemoryContextSwitchTo(so->scancxt);
	if (rescan)
	{
		so->ncands = 0;
		nread_before = so->nscanned;
		read_before = palloc(sizeof(GeoRange) * Max(nread_before, 1));
		memcpy(read_before, so->scanned, sizeof(GeoRange) * nread_before);
		so->nscanned = 0;
	}
	so->nready = 0;

	cap = georegion_cap(so->center, -1.0, so->ring_angle >= M_PI ? 2 * M_PI : so->ring_angle);
	/*
	 * No dense cells: a ring has no INSIDE cells, its whole area would
	 * split.  Nor sparse ones (dense_level -1): cells kept whole save
	 * their children's evaluation but bring in entries beyond the ring,
	 * each of which the scan ranks by distance; measured, that did not pay.
	 */
	ncells = georegion_cover(cap, archer_geo_max_cells, -1, &cells);
	for (int i = 0; i < ncells; i++)
		scan_ring_range(scan, s2_cellid_range_min(cells[i].cellid),
						s2_cellid_range_max(cells[i].cellid));
	for (int i = 0; i < nread_before; i++)
		scan_ring_range(scan, read_before[i].lo, read_before[i].hi);
	if (read_before != NULL)
		pfree(read_before);
	MemoryContextSwitchTo(oldcxt);

	make_ready_heap(scan, false);
	return true;
}

/*
 * After every point: the entries of NULL and empty points, unless a
 * condition excludes them, a leaf at a time; false at the end
 */
static bool
load_null_page(IndexScanDesc scan)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	GeoLeafEntry *entries = so->range_entries;
	int			nentries;

	so->nulls_done = true;
	so->ncands = 0;
	so->nready = 0;
	if (so->nkeys > 0 || so->null_end)
		return false;
	CHECK_FOR_INTERRUPTS();
	nentries = read_range(scan, GEO_NULL_CELLID, GEO_NULL_CELLID, &so->null_blkno,
						  &so->null_hikey);
	so->null_end = so->null_blkno == InvalidBlockNumber;
	for (int i = 0; i < nentries; i++)
	{
		GeoCandidate cand = {.distance = 0, .point = {POINT_UNDECODED}, .settled = true};

		if (entries[i].cellid != GEO_NULL_CELLID)
			continue;
		cand.entry = entries[i];
		add_candidate(scan, &cand);
	}
	make_ready_heap(scan, true);
	return true;
}

static bool
next_ordered(IndexScanDesc scan, GeoCandidate *result, bool *distance_null)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;

	for (;;)
	{
		if (so->nready > 0)
		{
			*result = pop_ready(so);
			*distance_null = so->nulls_done;
			so->floor = *result;
			so->have_floor = true;
			return true;
		}
		if (so->nulls_done || !next_ring(scan))
		{
			if (!load_null_page(scan))
				return false;
		}
	}
}

/*
 * The <-> operator's distance from a point of the column's type at (0, 0)
 * to the scan's centre; false if NULL.  For a centre whose distance to
 * every point is the same (see prepare_order) that is the distance, and
 * for a centre of another SRID it is PostGIS's own mixed-SRID error, the
 * one a sequential scan raises.
 */
static bool
probe_distance(IndexScanDesc scan, double *distance)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	ScanKey		orderby = &scan->orderByData[0];
	Point		origin = {0, 0};
	LOCAL_FCINFO(fcinfo, 2);
	Datum		result;

	InitFunctionCallInfoData(*fcinfo, &orderby->sk_func, 2, orderby->sk_collation,
							 NULL, NULL);
	fcinfo->args[0].value = so->kind == GEO_COLUMN_POINT ? PointPGetDatum(&origin) :
		geo_postgis_plain_point(so->kind == GEO_COLUMN_GEOGRAPHY);
	fcinfo->args[0].isnull = false;
	fcinfo->args[1].value = orderby->sk_argument;
	fcinfo->args[1].isnull = false;
	result = FunctionCallInvoke(fcinfo);
	if (fcinfo->isnull)
		return false;
	*distance = DatumGetFloat8(result);
	return true;
}

/*
 * The centre of an ordered scan, checked as a sequential scan would meet
 * it, so that every plan gives the same answer or the same error:
 *	- NULL or empty: every distance is NULL;
 *	- a non-finite coordinate: every distance is the same, the operator's
 *	  own (NaN or infinity for points, NULL for PostGIS geometry);
 *	- another SRID: PostGIS's mixed-SRID error (probe_distance), or ours;
 *	- planar columns (point, geometry): any finite centre, out of range or
 *	  not; the rings grow around the nearest valid point
 *	  (ring_distance_bound);
 *	- geography: a centre in range (PostGIS keeps its values there);
 *	- a PostGIS shape other than a point: the centre of its bounding box,
 *	  every distance bound lowered by the box's extent (center_extent),
 *	  which the executor's exact <-> then orders within.
 */
static void
prepare_order(IndexScanDesc scan)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	ScanKey		orderby = &scan->orderByData[0];
	double		lat;
	double		lng;
	bool		found;

	if (orderby->sk_flags & SK_ISNULL)
		found = false;
	else if (so->kind == GEO_COLUMN_POINT)
	{
		Point	   *center = DatumGetPointP(orderby->sk_argument);

		lng = center->x;
		lat = center->y;
		found = true;
	}
	else
	{
		bool		geography = so->kind == GEO_COLUMN_GEOGRAPHY;
		int32		srid;
		double		ignored;

		found = geo_postgis_center_raw(orderby->sk_argument, geography, &srid, &lat, &lng,
									   &so->center_extent);
		if (srid != GEO_SRID_WGS84)
		{
			(void) probe_distance(scan, &ignored);
			geo_check_srid(srid, geography);
		}
	}
	if (!found)
	{
		so->same_distance = true;
		so->same_distance_null = true;
	}
	else if (!isfinite(lat) || !isfinite(lng))
	{
		so->same_distance = true;
		so->same_distance_null = !probe_distance(scan, &so->same_distance_value);
	}
	if (so->same_distance)
	{
		so->ordered = false;
		return;
	}
	if (!column_is_planar(so->kind))
		geo_check_latlng(lat, lng);
	so->center_lat = lat;
	so->center_lng = lng;
	so->ring_lat = Max(-90.0, Min(90.0, lat));
	so->ring_lng = Max(-180.0, Min(180.0, lng));
	so->center_offset = hypot(lat - so->ring_lat, lng - so->ring_lng);
	so->center = s2_point_from_latlng(so->ring_lat, so->ring_lng);
	so->ring_cos_lat = sqrt(so->center.x * so->center.x + so->center.y * so->center.y);
	so->ring_lng_x = cos(so->ring_lng * M_PI / 180.0);
	so->ring_lng_y = sin(so->ring_lng * M_PI / 180.0);
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
		prepare_order(scan);
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
											dense_cell_level(scan->indexRelation),
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

	if (!next_ordered(scan, &cand, &distance_null))
		return false;
	scan->xs_heaptid = cand.entry.tid;
	scan->xs_recheck = cand.recheck;
	scan->xs_orderbyvals[0] = Float8GetDatum(cand.distance);
	scan->xs_orderbynulls[0] = distance_null;
	scan->xs_recheckorderby = !distance_null && !so->exact_order;
	if (scan->xs_want_itup)
		return_entry_itup(scan, &cand.entry, &cand.point);
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
		return_entry_itup(scan, entry, NULL);
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
