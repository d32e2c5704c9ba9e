/*-------------------------------------------------------------------------
 *
 * georegion.h
 *	  Query regions of the geo index (spherical caps and polygons) and their
 *	  S2 cell coverings.
 *
 * A region answers three questions, all conservatively:
 *	- georegion_cover: a small sorted set of disjoint cells whose union holds
 *	  every point of the region, each marked INSIDE (every point of the cell
 *	  is certainly in the result) or PARTIAL (entries need a closer look);
 *	- georegion_relate_leaf: for one index entry (a leaf cell id) found in
 *	  covering cell number cover_index, INSIDE / DISJOINT when the leaf cell
 *	  lies wholly on one side with a safety margin, PARTIAL when only the
 *	  exact predicate on the heap value can tell;
 *	- georegion_contains_point: the exact predicate for polygons on the
 *	  built-in point type (geodesic edges, boundary included).
 * "Certainly" allows for the leaf cell's size (~1 cm), floating-point error
 * and, for caps, the caller's choice of inner/outer angles (e.g. the spheroid
 * margin).  Everything is palloc'd in the current memory context.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHER_GEOREGION_H
#define ARCHER_GEOREGION_H

#include "postgres.h"

#include "s2cell.h"

typedef enum GeoRelation
{
	GEO_DISJOINT = 0,
	GEO_PARTIAL = 1,
	GEO_INSIDE = 2
} GeoRelation;

typedef struct GeoCoverCell
{
	S2CellId	cellid;
	GeoRelation relation;		/* GEO_INSIDE or GEO_PARTIAL */
} GeoCoverCell;

/* One ring: npoints vertices as (lng, lat) degrees; closed (first == last) */
typedef struct GeoRing
{
	int			npoints;
	const double *lng;
	const double *lat;
} GeoRing;

/* One polygon: rings[0] is the shell, the rest are holes */
typedef struct GeoPolygon
{
	int			nrings;
	const GeoRing *rings;
} GeoPolygon;

typedef struct GeoRegion GeoRegion;

/*
 * Cap around center: points within inner_angle (radians) are in the result,
 * points beyond outer_angle are not, those between need the exact test.
 * inner_angle may be negative (nothing is certainly inside); outer_angle >= pi
 * means the whole sphere.
 */
extern GeoRegion *georegion_cap(S2Point center, double inner_angle, double outer_angle);

/*
 * Union of polygons with holes.  planar: edges are straight lines in
 * (lng, lat) degrees, as PostGIS geometry interprets SRID 4326; otherwise
 * edges are geodesics (great-circle arcs), as geography interprets them.
 * Raises ERROR for empty input, rings with fewer than 4 points or not
 * closed, NaN/infinite coordinates, latitude outside [-90, 90], longitude
 * outside [-180, 180]; geodesic polygons also for edges between antipodal
 * points and for polygons not fitting in a hemisphere (see georegion.c).
 */
extern GeoRegion *georegion_polygons(int npolygons, const GeoPolygon *polygons,
									 bool planar);

/*
 * Covering of at most max_cells cells, sorted by cellid: more if the start
 * cells need it, or where PARTIAL cells of levels up to dense_level are
 * split whatever the budget; finer cells then count as sparse (-1: no
 * such knowledge)
 */
extern int	georegion_cover(GeoRegion *region, int max_cells, int dense_level,
							GeoCoverCell **cells);

/*
 * Take as the region's covering one that georegion_cover made for the same
 * polygon with the same arguments (in this backend or another): the
 * decisions below then work as after georegion_cover, without its cost.
 * Polygon regions only; the cells are copied.
 */
extern void georegion_adopt_cover(GeoRegion *region, int ncells,
								  const GeoCoverCell *cells);

/*
 * Per-entry decision; cover_index indexes the array georegion_cover returned
 * (or georegion_adopt_cover took)
 */
extern GeoRelation georegion_relate_leaf(GeoRegion *region, int cover_index,
										 S2CellId leaf);

/*
 * The same decision for a planar region from the entry's exact point (lng,
 * lat), with rounding slack as the only margin: fewer entries near edges
 * need the exact predicate than from their leaf cells
 */
extern GeoRelation georegion_relate_planar_point(GeoRegion *region, int cover_index,
												 double lng, double lat);
/*
 * For a planar region, the decision for every entry of a cell within
 * covering cell number cover_index, like the covering's own: the first
 * time it costs about as much as a few entries' decisions, then the region
 * remembers it, so it pays where entries crowd
 */
extern GeoRelation georegion_relate_planar_cell(GeoRegion *region, int cover_index,
												S2CellId cell);
/*
 * Between scans of a kept region: files the decisions remembered so far
 * where scans in key order find them fastest, once enough are new (or any,
 * if forced)
 */
extern void georegion_settle(GeoRegion *region, bool force);
extern bool georegion_is_planar(const GeoRegion *region);
/* vertices of a polygon region's rings (closing vertices included); 0 for a cap */
extern int	georegion_nvertices(const GeoRegion *region);

/*
 * Exact point-in-polygon (boundary counts as inside): the predicate for
 * geodesic polygons on built-in points; also answers for planar regions.
 */
extern bool georegion_contains_point(GeoRegion *region, double lng, double lat);

#endif							/* ARCHER_GEOREGION_H */
