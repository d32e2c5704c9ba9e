/*-------------------------------------------------------------------------
 *
 * geo_scan.h
 *	  The state of an archer_geo index scan, shared by its three files:
 *	  geo_scan.c (the access method interface and condition scans),
 *	  geo_knn.c (nearest-neighbour ordering) and geo_itup.c (the index
 *	  tuples of index-only scans).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHER_GEO_SCAN_H
#define ARCHER_GEO_SCAN_H

#include "access/relscan.h"

#include "geo.h"

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

/* geo_scan.c */
extern void geo_scan_decode_point(const GeoLeafEntry *entry, GeoEntryPoint *point);
extern int	geo_scan_dense_cell_level(Relation index);
extern const GeoLeafEntry *geo_scan_entry_ahead(const GeoLeafEntry *entries, int nentries, int i);
extern bool geo_scan_entry_matches(GeoScanOpaque so, int first_cell, const GeoLeafEntry *entry,
								   const GeoLeafEntry *ahead, GeoEntryPoint *point, bool *recheck);
extern int	geo_scan_read_range(IndexScanDesc scan, uint64 lo, uint64 hi, BlockNumber *blkno,
								GeoKey *hikey);

/* geo_knn.c */
extern void geo_knn_prepare(IndexScanDesc scan);
extern bool geo_knn_next(IndexScanDesc scan, GeoCandidate *result, bool *distance_null);

/* geo_itup.c */
extern void geo_itup_return(IndexScanDesc scan, const GeoLeafEntry *entry, GeoEntryPoint *point);
extern IndexTuple geo_itup_entry(IndexScanDesc scan, const GeoLeafEntry *entry,
								 GeoEntryPoint *point);

#endif							/* ARCHER_GEO_SCAN_H */
