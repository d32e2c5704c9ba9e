/*-------------------------------------------------------------------------
 *
 * geo_knn.c
 *	  Nearest-neighbour ordering of archer_geo index scans
 *	  (ORDER BY col <-> point).
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
 * scan does (geo_knn_prepare).
 *
 * An ordered index-only scan cannot have the executor reorder by exact
 * distance, so it orders the candidates by the exact <-> of their values
 * (geo_itup.c) itself.  It keeps only the copies of rows visible to its
 * snapshot (geo_visibility.c): VACUUM may remove an entry while its copy
 * waits to be returned.
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

/* the sphere PostGIS's geography <-> measures on, rounded down */
#define GEO_KNN_SPHERE_RADIUS_LOW	6371000.0
#define GEO_KNN_FIRST_RING_ENTRIES	32.0
#define GEO_KNN_SEED_ENTRIES		16


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
	geo_scan_decode_point(entry, point);
	itup = geo_itup_entry(scan, entry, point);
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
		int			nentries = geo_scan_read_range(scan, lo, hi, &blkno, &hikey);

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < nentries; i++)
		{
			GeoCandidate cand;

			cand.point.kind = POINT_UNDECODED;
			cand.recheck = false;
			if (so->nkeys > 0 &&
				!geo_scan_entry_matches(so, -1, &entries[i], geo_scan_entry_ahead(entries, nentries, i),
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
	nentries = geo_scan_read_range(scan, GEO_NULL_CELLID, GEO_NULL_CELLID, &so->null_blkno,
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

bool
geo_knn_next(IndexScanDesc scan, GeoCandidate *result, bool *distance_null)
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
 * every point is the same (see geo_knn_prepare) that is the distance, and
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
void
geo_knn_prepare(IndexScanDesc scan)
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

