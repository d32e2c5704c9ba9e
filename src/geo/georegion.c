/*-------------------------------------------------------------------------
 *
 * georegion.c
 *	  Query regions of the geo index (spherical caps and unions of polygons),
 *	  their S2 cell coverings, and the per-entry decisions of a scan.
 *
 * Contract
 * --------
 * The index holds the leaf cell id of each row's point.  A scan reads the
 * id ranges of a covering's cells; entries of INSIDE cells are returned
 * without a check, entries of PARTIAL cells go through
 * georegion_relate_leaf, which may answer INSIDE (no recheck), DISJOINT
 * (skip) or PARTIAL (the executor runs the exact predicate).  Correctness
 * therefore only requires that INSIDE is never said of a cell or leaf
 * holding a point the exact predicate rejects, that DISJOINT is never said
 * of one holding a point it accepts, and that the covering holds every
 * point of the region.  Everything here errs towards PARTIAL: a leaf entry
 * stands for any point of its leaf cell (s2_level_max_radius(30), about
 * 1.5 cm, plus rounding slack), and anything within a margin of an edge is
 * PARTIAL.
 *
 * Caps
 * ----
 * A cell is DISJOINT when its minimum angle to the center exceeds the outer
 * angle, INSIDE when its maximum angle is within the inner angle, both with
 * GR_ANGLE_SLACK against rounding; a squared-chord test of the cell's
 * center against per-level thresholds (level radius included) settles most
 * cells first, and alone judges a leaf.
 *
 * Polygons: edge index and crossing parity
 * -----------------------------------------
 * A polygon region is the union of polygons with holes; a point belongs to
 * it when it is inside or on the boundary of some polygon, where "inside a
 * polygon" is the parity of the number of its rings (shell and holes) that
 * enclose the point.  Parity is tracked per polygon, so overlapping
 * polygons still form a union.
 *
 * Both kinds of polygon are reduced to straight segments in a plane:
 *
 *	- planar (PostGIS geometry, SRID 4326): the (lng, lat) plane itself,
 *	  where the edges are segments by definition;
 *	- geodesic (geography, built-in point): each S2 cube face.  The face
 *	  projection is gnomonic, so a great-circle arc is a straight segment in
 *	  the face's (u, v) coordinates, and an S2 cell is an axis-aligned
 *	  rectangle there.  Every edge is clipped (in 3-space, by linear
 *	  constraints on the chord between its endpoints) to each face's square
 *	  grown by GR_UV_FACE_PAD, giving per-face segment lists.
 *
 * Over each plane sits a lazily refined quadtree (GrNode): on a face the
 * nodes are exactly the S2 cells, on the planar plane they are halvings of
 * a box around the (lng, lat) domain.  A node keeps the edges that come
 * within "pad" of its rectangle, and a reference point at least "clear"
 * away from all of them, together with the set of polygons containing that
 * point.  A node is split, four children at a time, only when a covering or
 * a query needs it and it holds more than GR_NODE_MAX_EDGES edges, so the
 * work per query stays proportional to the edges near the point asked
 * about, never to the whole polygon.  A split allocates everything before
 * it links the children in, so an ERROR in the middle leaves the tree as
 * it was: regions outlive scans (geo_regioncache.c).
 *
 * The containment of any point q of a node's rectangle follows from its
 * reference point r: walk the segment r->q, which stays inside the
 * rectangle, and flip a polygon's membership at each crossing with one of
 * its edges; only the node's own edges can cross it.  A node's reference
 * point is preferably its split point, the corner its four children share:
 * the children then inherit it with its polygon set, and a split costs at
 * most one walk (moving the parent's reference there) instead of one per
 * child.  Where that point is not clear of the edges a child picks another
 * point and walks to it; in the (degenerate) case where no point tried is
 * clear, the node borrows its nearest ancestor's reference and edges.  The
 * roots get their reference without a walk: on the planar plane it lies
 * outside [-180, 180] x [-90, 90], beyond every polygon; on a face, each
 * polygon's containment of the root reference is counted along
 * great-circle arcs from a point known to be outside that polygon (see
 * below).
 *
 * Why the parity is exact although computed in floating point: the side of
 * the line r->q on which an edge endpoint lies is computed from the
 * endpoint's coordinates alone, so the two edges sharing a vertex always
 * agree on it; the effect is that of nudging vertices that lie (nearly) on
 * the line to one side, which cannot change the containment of r or q as
 * long as both are far (compared to rounding error) from every edge.  For an
 * edge whose endpoints are on opposite sides, the crossing point is
 * interpolated on the edge itself and then located along r->q; lying on the
 * edge, it is far from r and q, so rounding cannot move it past either.
 * Reference points are chosen "clear" of edges for this reason, and query
 * points too close to an edge never reach the walk: they are PARTIAL
 * (relate_leaf, covering) or on the boundary (contains_point).  Clipped
 * edge ends lie on the padded face border, far outside every cell, and do
 * not need the shared-vertex argument.
 *
 * Geodesic specifics.  A polygon's interior is the side of its rings not
 * holding its reference point: the antipode of the normalized sum of its
 * shell vertices (which must be well clear of the edges).  The root
 * reference of each face is located by counting crossings along one or two
 * great-circle arcs from that point, each between 0.3 and 2.6 radians long
 * so that its plane is well conditioned; the same side-of-vertex argument
 * applies.  Distances in (u, v) are at most GR_UV_STRETCH times the angle
 * anywhere on a padded face, which converts the leaf radius into a (u, v)
 * margin.  georegion_contains_point is the exact predicate for built-in
 * points: a point within GR_UV_TOL of an edge in (u, v) is on the boundary
 * (inside); otherwise its parity decides.  relate_leaf only answers INSIDE
 * or DISJOINT for a leaf farther than leaf radius plus that tolerance from
 * every edge, so every point of the leaf gets the same answer from
 * contains_point, and the two can never disagree.
 *
 * Planar specifics.  Longitude does not wrap in the plane but does on the
 * sphere, and all longitudes are the same S2 point at the poles, so a cell
 * or leaf is turned into the planar rectangles that may hold the
 * coordinates of a point in it ("pieces", see planar_pieces): the lat/lng
 * bound grown by the margin, split at the antimeridian, duplicated at
 * lng -180 when it reaches lng 180 (and vice versa), and widened to all
 * longitudes when it reaches a pole.  The answer is INSIDE (DISJOINT) only
 * if every piece is.  A leaf's pieces come from its center's lat/lng and
 * the leaf radius, and are classified from the smallest quadtree node
 * holding its covering cell (found once per covering), so the work per
 * entry is a short descent.  georegion_contains_point also works on planar
 * regions (boundary within GR_DEG_TOL counts as inside).
 *
 * Covering
 * --------
 * Like S2RegionCoverer: start from the six faces, drop DISJOINT cells, keep
 * INSIDE ones, and split PARTIAL ones, largest first, replacing each by its
 * non-disjoint children as long as the total stays within max_cells.  A
 * split that leaves a single child costs nothing and is always taken, so a
 * small region descends straight to cells of its own size; four INSIDE
 * children make their parent INSIDE.  Cells left when the budget runs out
 * stay PARTIAL (their children are evaluated only until two non-disjoint
 * ones, one of them PARTIAL, show that the cell must stay whole).  A
 * caller that knows where cells hold many entries passes dense_level: past
 * the budget, finer cells stay whole unseen, and PARTIAL cells no finer
 * than it are split whatever the budget (up to GR_DENSE_MAX_CELLS), as the
 * entries they shed outweigh the children's evaluation.  On a
 * geodesic region the covering cells are quadtree nodes, and relate_leaf
 * continues the descent from the covering cell.  The cost is about four
 * cell evaluations per output cell, each proportional to the edges near
 * the cell.
 *
 * Limits
 * ------
 * - A geodesic polygon must not contain the antipode of its vertex centroid,
 *   roughly: it must fit in a hemisphere.  A centroid sum near zero, or an
 *   antipode near an edge, raises "polygon is too large"; a polygon that
 *   does contain that point is silently read as its complement.
 * - Geodesic edges between (nearly) antipodal vertices are ambiguous and
 *   raise an error.
 * - The boundary tolerance of georegion_contains_point is GR_UV_TOL in face
 *   coordinates (a few micrometres on the Earth); within about 2-5 cm of an
 *   edge relate_leaf answers PARTIAL.
 * - Planar answers assume the indexed values have lng in [-180, 180] and
 *   lat in [-90, 90] (the callers reject others): a value at lng 190 has
 *   the S2 cell of lng -170, and its planar position is not considered.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "georegion.h"

/*
 * Planar cell decisions of georegion_relate_planar_cell, by cell id.  Its
 * allocator uses only what the fuzzing stubs provide.
 */
typedef struct GrCellMemoEntry
{
	S2CellId	cellid;
	uint8		relation;
	char		status;			/* simplehash's */
} GrCellMemoEntry;

#define SH_PREFIX		cellmemo
#define SH_ELEMENT_TYPE GrCellMemoEntry
#define SH_KEY_TYPE		S2CellId
#define SH_KEY			cellid
#define SH_HASH_KEY(tb, key) murmurhash32((uint32) ((key) >> 32) ^ (uint32) (key))
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE		static inline
#define SH_USE_NONDEFAULT_ALLOCATOR
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

static inline void *
cellmemo_allocate(cellmemo_hash *tb, Size size)
{
	void	   *p = MemoryContextAllocHuge(tb->ctx, size);

	memset(p, 0, size);
	return p;
}

static inline void
cellmemo_free(cellmemo_hash *tb, void *pointer)
{
	pfree(pointer);
}

#define GR_DEG_PER_RAD		(180.0 / M_PI)
#define GR_RAD_PER_DEG		(M_PI / 180.0)

/* slack for rounding in angles (radians): well under a micrometre */
#define GR_ANGLE_SLACK		1e-13
/*
 * Every cell's circumradius is at least this share of s2_level_max_radius
 * of its level (S2's min/max diagonal metrics, 1.257 / 2.439, halved for
 * the radius, with a safety factor)
 */
#define GR_MIN_RADIUS_RATIO	0.25

/* slack for rounding in degrees computed from points */
#define GR_DEG_SLACK		1e-12

/* a covering stops splitting dense cells past this budget (georegion_cover) */
#define GR_DENSE_MAX_CELLS	1024

/*
 * most cell decisions a planar region remembers (16 bytes each in the
 * hash, 9 more in its sorted copy)
 */
#define GR_CELL_MEMO_MAX	(1 << 18)

/* a node with more edges than this is split when a query needs it */
#define GR_NODE_MAX_EDGES	12

/* candidates tried for a node's reference point */
#define GR_REF_TRIES		64

/*
 * Geodesic constants, in face (u, v) units.  On a face padded by
 * GR_UV_FACE_PAD the gnomonic projection stretches distances by at most
 * 1 + u^2 + v^2 < 3.0001, hence GR_UV_STRETCH.
 */
#define GR_UV_STRETCH		3.1
#define GR_UV_FACE_PAD		1e-6
#define GR_UV_TOL			1e-12
#define GR_UV_CLEAR			1e-11
/* both ends of an edge this deep inside one face: the edge is on no other */
#define GR_UV_FACE_INNER	0.99

/* angle (radians) a polygon's outside point keeps from its edges */
#define GR_SPHERE_CLEAR		1e-12
/* great-circle walks are kept between these lengths (radians) */
#define GR_WALK_MIN			0.3
#define GR_WALK_MAX			2.6
/* dot product of edge endpoints below which the edge is ambiguous */
#define GR_ANTIPODAL_DOT	(-1.0 + 1e-12)
/* a shell's mean vertex vector shorter than this has no usable center */
#define GR_MIN_MEAN			1e-6

/* planar constants, in degrees */
#define GR_DEG_NODE_PAD		1e-9
#define GR_DEG_QUERY_PAD	1e-10
/*
 * A point's own edge test (planar_point_classify): past the reach of the
 * padded rectangle test, GR_DEG_QUERY_PAD beyond GR_DEG_SLACK in each
 * coordinate, along the diagonal too (1.43e-10)
 */
#define GR_DEG_POINT_NEAR	2e-10
#define GR_DEG_TOL			1e-11
#define GR_DEG_CLEAR		1e-10
#define GR_PLANAR_MAX_DEPTH 32

/* more vertices than this in one region is refused */
#define GR_MAX_VERTICES		100000000

/* "no part of the query overlaps this node", for combining relations */
#define GR_REL_NONE			(-1)

typedef struct GrRect
{
	double		x0;
	double		y0;
	double		x1;
	double		y1;
} GrRect;

/* A straight edge in a plane: (lng, lat) degrees, or a face's (u, v) */
typedef struct GrEdge
{
	double		x0;
	double		y0;
	double		x1;
	double		y1;
	int			poly;			/* polygon the edge belongs to */
} GrEdge;

typedef struct GrNode
{
	GrRect		rect;
	double		sx;				/* split point: the corner the children */
	double		sy;				/* share (S2 cell center, box middle) */
	int			level;			/* S2 level, or planar depth */
	int			nedges;			/* edges within the plane's pad of rect */
	int		   *edges;			/* indexes into the plane's edge array */
	S2CellId	cellid;			/* geodesic: the S2 cell this node is */

	/*
	 * The node whose reference point serves this node: itself, or, when no
	 * point of rect is clear of the edges, the nearest ancestor that has
	 * one.
	 */
	struct GrNode *src;
	double		rx;				/* reference point, valid when src == self */
	double		ry;
	int			nin;			/* polygons containing it */
	int		   *in;
	struct GrNode *child;		/* 4 children once split, else NULL */
} GrNode;

/* One edge index: a cube face, or the planar (lng, lat) plane */
typedef struct GrPlane
{
	int			face;			/* S2 face, or -1 for the planar plane */
	int			nedges;
	GrEdge	   *edges;
	GrNode	   *root;
	double		pad;			/* node edge lists reach this far out */
	double		clear;			/* reference points keep this far from edges */
	double		tol;			/* boundary tolerance of contains_point */
} GrPlane;

typedef enum GrKind
{
	GR_CAP,
	GR_PLANAR,
	GR_GEODESIC
} GrKind;

struct GeoRegion
{
	GrKind		kind;
	MemoryContext mcxt;			/* lazily built parts live here */

	/* cap */
	S2Point		center;
	double		inner;
	double		outer;
	/* squared chords of the decision angles, per cell level; leaf: level 30 */
	double		disjoint_chord2[S2_MAX_LEVEL + 1];
	double		inside_chord2[S2_MAX_LEVEL + 1];
	S2CapTrig	trig;			/* for s2_cell_cap_quick, slack included */

	/* polygons */
	int			npolygons;
	int			nvertices;		/* ring vertices, closing ones included */
	GrRect		bbox;			/* planar: of all vertices, (lng, lat) */
	bool		indexed;		/* planes built */
	GrPlane		planes[S2_NUM_FACES];	/* planar: planes[0] only */

	/* geodesic: all ring vertices (closing vertex included), in order */
	S2Point    *verts;
	int		   *ring_start;		/* ring i is verts[ring_start[i] ..
								 * ring_start[i + 1] - 1] */
	int		   *poly_ring;		/* polygon p has rings poly_ring[p] ..
								 * poly_ring[p + 1] - 1 */
	S2Point    *poly_ref;		/* a point outside each polygon */
	double		leaf_margin;	/* relate_leaf margin, (u, v) units */

	/* per-polygon parity scratch, all clear between walks */
	uint8	   *odd;
	bool	   *seen;
	int		   *touched;
	int			ntouched;
	int		   *setbuf;

	/*
	 * Last covering: per cell, its quadtree node (geodesic) or the planar
	 * node its leaves start from (planar).  A covering made elsewhere
	 * (georegion_adopt_cover) has its cells' ids here and their nodes NULL
	 * until a decision needs them (cover_node).
	 */
	int			ncover;
	GrNode	  **cover_nodes;
	S2CellId   *cover_ids;
	/* planar: the node where the last point decision ended (see relate_planar_point) */
	GrNode	   *point_hint;
	/* planar: decisions of georegion_relate_planar_cell; NULL until the first */
	cellmemo_hash *cell_memo;

	/*
	 * planar: the decisions as of the last georegion_settle, sorted by cell
	 * id, and where the last search in them ended (see sorted_memo_find)
	 */
	S2CellId   *sorted_cells;
	uint8	   *sorted_relations;
	int			nsorted;
	int			sorted_finger;
};

/* A covering candidate */
typedef struct GrCand
{
	S2CellId	id;
	int			level;
	GeoRelation rel;
	GrNode	   *node;			/* geodesic: the cell's node; planar: the
								 * smallest node holding it */
} GrCand;

typedef struct GrCandList
{
	GrCand	   *items;
	int			n;
	int			cap;
} GrCandList;

typedef struct GrEdgeList
{
	GrEdge	   *edges;
	int			n;
	int			cap;
} GrEdgeList;


/* ------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------
 */

static void *
region_alloc(GeoRegion *r, Size size)
{
	return MemoryContextAllocHuge(r->mcxt, size);
}

static GeoRegion *
region_new(GrKind kind)
{
	GeoRegion  *r = palloc0(sizeof(GeoRegion));

	r->kind = kind;
	r->mcxt = CurrentMemoryContext;
	return r;
}

static inline S2Point
vec3(double x, double y, double z)
{
	S2Point		p;

	p.x = x;
	p.y = y;
	p.z = z;
	return p;
}

static inline S2Point
vcomb(double s, S2Point a, double t, S2Point b)
{
	return vec3(s * a.x + t * b.x, s * a.y + t * b.y, s * a.z + t * b.z);
}

/* The (u, v) rectangle of a cell, from its vertices */
static void
cell_uv_rect(int face, S2CellId id, GrRect *rect)
{
	S2Point		v[4];
	int			i;

	s2_cell_vertices(id, v);
	for (i = 0; i < 4; i++)
	{
		double		u;
		double		w;

		s2_face_xyz_to_uv(face, v[i], &u, &w);
		if (i == 0 || u < rect->x0)
			rect->x0 = u;
		if (i == 0 || u > rect->x1)
			rect->x1 = u;
		if (i == 0 || w < rect->y0)
			rect->y0 = w;
		if (i == 0 || w > rect->y1)
			rect->y1 = w;
	}
}

/* Combine the relations of two parts of a query */
static int
rel_combine(int a, int b)
{
	if (a == GR_REL_NONE)
		return b;
	if (b == GR_REL_NONE || a == b)
		return a;
	return GEO_PARTIAL;
}


/* ------------------------------------------------------------------------
 * Planar segment primitives (shared by the (lng, lat) plane and the faces)
 * ------------------------------------------------------------------------
 */

/* Does the segment come within pad of the rectangle?  (Never a false "no") */
static bool
edge_near_rect(const GrEdge *e, const GrRect *r, double pad)
{
	double		x0 = r->x0 - pad;
	double		y0 = r->y0 - pad;
	double		x1 = r->x1 + pad;
	double		y1 = r->y1 + pad;
	double		dx;
	double		dy;
	double		s[4];

	/* separating axes: the rectangle's sides, then the segment's normal */
	if (Max(e->x0, e->x1) < x0 || Min(e->x0, e->x1) > x1 ||
		Max(e->y0, e->y1) < y0 || Min(e->y0, e->y1) > y1)
		return false;
	dx = e->x1 - e->x0;
	dy = e->y1 - e->y0;
	s[0] = dx * (y0 - e->y0) - dy * (x0 - e->x0);
	s[1] = dx * (y0 - e->y0) - dy * (x1 - e->x0);
	s[2] = dx * (y1 - e->y0) - dy * (x0 - e->x0);
	s[3] = dx * (y1 - e->y0) - dy * (x1 - e->x0);
	if (s[0] > 0 && s[1] > 0 && s[2] > 0 && s[3] > 0)
		return false;
	if (s[0] < 0 && s[1] < 0 && s[2] < 0 && s[3] < 0)
		return false;
	return true;
}

/* Is (x, y) within dist of the segment? */
static inline bool
edge_near_point(const GrEdge *e, double x, double y, double dist)
{
	double		dx;
	double		dy;
	double		px;
	double		py;
	double		len2;

	if (x < Min(e->x0, e->x1) - dist || x > Max(e->x0, e->x1) + dist ||
		y < Min(e->y0, e->y1) - dist || y > Max(e->y0, e->y1) + dist)
		return false;
	dx = e->x1 - e->x0;
	dy = e->y1 - e->y0;
	px = x - e->x0;
	py = y - e->y0;
	len2 = dx * dx + dy * dy;
	if (len2 > 0)
	{
		double		t = (px * dx + py * dy) / len2;

		t = Max(0.0, Min(1.0, t));
		px -= t * dx;
		py -= t * dy;
	}
	return px * px + py * py <= dist * dist;
}

/*
 * Side of (x, y) relative to the line through (rx, ry) with direction
 * (dx, dy).  Every crossing test computes a vertex's side with this one
 * function, so the two edges at a vertex agree on it (see file header).
 */
static inline double
side_of(double rx, double ry, double dx, double dy, double x, double y)
{
	return dx * (y - ry) - dy * (x - rx);
}

/*
 * Does the segment from (rx, ry) along (dx, dy) (dd = its squared length)
 * cross edge e?  Both ends of the segment must be clear of e.
 */
static inline bool
edge_crosses(double rx, double ry, double dx, double dy, double dd,
			 const GrEdge *e)
{
	double		sa = side_of(rx, ry, dx, dy, e->x0, e->y0);
	double		sb = side_of(rx, ry, dx, dy, e->x1, e->y1);
	double		w;
	double		t;

	if ((sa > 0) == (sb > 0))
		return false;
	/* the crossing point, interpolated on the edge: w is within [0, 1] */
	w = sa / (sa - sb);
	t = (e->x0 + (e->x1 - e->x0) * w - rx) * dx +
		(e->y0 + (e->y1 - e->y0) * w - ry) * dy;
	return t > 0 && t < dd;
}


/* ------------------------------------------------------------------------
 * Per-polygon parity
 * ------------------------------------------------------------------------
 */

static void
parity_flip(GeoRegion *r, int poly)
{
	if (!r->seen[poly])
	{
		r->seen[poly] = true;
		r->touched[r->ntouched++] = poly;
	}
	r->odd[poly] ^= 1;
}

/*
 * Walk from src's reference point to (x, y), which must lie in src's
 * rectangle and be clear of its edges.  Returns how many polygons contain
 * (x, y) and, when out is not NULL, stores them there.
 */
static int
parity_walk(GeoRegion *r, const GrPlane *pl, const GrNode *src,
			double x, double y, int *out)
{
	double		dx = x - src->rx;
	double		dy = y - src->ry;
	double		dd = dx * dx + dy * dy;
	int			n = 0;
	int			i;

	Assert(src->src == src);
	for (i = 0; i < src->nin; i++)
		parity_flip(r, src->in[i]);
	for (i = 0; i < src->nedges; i++)
	{
		const GrEdge *e = &pl->edges[src->edges[i]];

		if (edge_crosses(src->rx, src->ry, dx, dy, dd, e))
			parity_flip(r, e->poly);
	}
	for (i = 0; i < r->ntouched; i++)
	{
		int			poly = r->touched[i];

		if (r->odd[poly])
		{
			if (out)
				out[n] = poly;
			n++;
		}
		r->odd[poly] = 0;
		r->seen[poly] = false;
	}
	r->ntouched = 0;
	return n;
}


/* ------------------------------------------------------------------------
 * Quadtree nodes
 * ------------------------------------------------------------------------
 */

/* Is (x, y) clear of all of the node's edges? */
static bool
node_point_clear(const GrPlane *pl, const GrNode *node, double x, double y)
{
	int			i;

	for (i = 0; i < node->nedges; i++)
		if (edge_near_point(&pl->edges[node->edges[i]], x, y, pl->clear))
			return false;
	return true;
}

/*
 * Find a reference point for the node, clear of its edges: its split point
 * if possible (so that its children can share it), else points of a
 * low-discrepancy sequence over the rectangle.
 */
static bool
node_pick_ref(const GrPlane *pl, GrNode *node)
{
	int			k;

	node->rx = node->sx;
	node->ry = node->sy;
	if (node_point_clear(pl, node, node->rx, node->ry))
		return true;
	for (k = 1; k < GR_REF_TRIES; k++)
	{
		double		fx = fmod(0.5 + k * 0.7548776662466927, 1.0);
		double		fy = fmod(0.5 + k * 0.5698402909980532, 1.0);
		double		x = node->rect.x0 + fx * (node->rect.x1 - node->rect.x0);
		double		y = node->rect.y0 + fy * (node->rect.y1 - node->rect.y0);

		if (node_point_clear(pl, node, x, y))
		{
			node->rx = x;
			node->ry = y;
			return true;
		}
	}
	return false;
}

/*
 * Store the polygon set of the node's reference point.  Allocates before
 * it changes the node: regions outlive scans that end in an ERROR
 * (geo_regioncache.c), so a refinement an ERROR interrupts must leave
 * every node as it was or whole.
 */
static void
node_set_in(GeoRegion *r, GrNode *node, const int *in, int nin)
{
	int		   *copy = NULL;

	if (nin > 0)
	{
		copy = region_alloc(r, nin * sizeof(int));
		memcpy(copy, in, nin * sizeof(int));
	}
	node->in = copy;
	node->nin = nin;
}

/*
 * Create the four children of a node.  Their edges are those of the parent
 * near each child.  Their reference point is the parent's split point,
 * shared by all four, whose containment is inherited (the parent's
 * reference is first moved there, one walk over the parent's edges); when
 * that point is not clear of the edges, each child picks its own and walks
 * to it from the parent's serving reference point.
 */
static void
node_split(GeoRegion *r, const GrPlane *pl, GrNode *node)
{
	GrNode	   *child = region_alloc(r, 4 * sizeof(GrNode));
	uint8	   *near = region_alloc(r, Max(node->nedges, 1));
	int			n[4] = {0, 0, 0, 0};
	double		pad = pl->pad;
	bool		shared;
	double		sx;
	double		sy;
	int			i;
	int			j;

	/*
	 * The children tile the node at its split point.  A child's quadrant is
	 * where its own center (its split point) lies: for S2 cells the Hilbert
	 * order decides it, for planar boxes the child index bits.
	 */
	for (i = 0; i < 4; i++)
	{
		GrNode	   *c = &child[i];
		bool		hi_x;
		bool		hi_y;

		memset(c, 0, sizeof(GrNode));
		c->level = node->level + 1;
		if (pl->face >= 0)
		{
			c->cellid = s2_cellid_child(node->cellid, i);
			s2_face_xyz_to_uv(pl->face, s2_cellid_to_point(c->cellid), &c->sx, &c->sy);
			hi_x = c->sx > node->sx;
			hi_y = c->sy > node->sy;
		}
		else
		{
			hi_x = (i & 1) != 0;
			hi_y = (i & 2) != 0;
		}
		c->rect.x0 = hi_x ? node->sx : node->rect.x0;
		c->rect.x1 = hi_x ? node->rect.x1 : node->sx;
		c->rect.y0 = hi_y ? node->sy : node->rect.y0;
		c->rect.y1 = hi_y ? node->rect.y1 : node->sy;
		if (pl->face < 0)
		{
			c->sx = 0.5 * (c->rect.x0 + c->rect.x1);
			c->sy = 0.5 * (c->rect.y0 + c->rect.y1);
		}
	}

	/*
	 * Distribute the edges: first a bit per child in near[], then exact-size
	 * lists.  An edge whose bounding box misses a child's padded box is not
	 * near it; one whose box lies within it is.
	 */
	for (j = 0; j < node->nedges; j++)
	{
		const GrEdge *e = &pl->edges[node->edges[j]];
		double		ex0 = Min(e->x0, e->x1);
		double		ex1 = Max(e->x0, e->x1);
		double		ey0 = Min(e->y0, e->y1);
		double		ey1 = Max(e->y0, e->y1);

		near[j] = 0;
		for (i = 0; i < 4; i++)
		{
			const GrRect *cr = &child[i].rect;

			if (ex1 < cr->x0 - pad || ex0 > cr->x1 + pad ||
				ey1 < cr->y0 - pad || ey0 > cr->y1 + pad)
				continue;
			if ((ex0 >= cr->x0 - pad && ex1 <= cr->x1 + pad &&
				 ey0 >= cr->y0 - pad && ey1 <= cr->y1 + pad) ||
				edge_near_rect(e, cr, pad))
			{
				near[j] |= 1 << i;
				n[i]++;
			}
		}
	}
	for (i = 0; i < 4; i++)
	{
		child[i].edges = n[i] > 0 ? region_alloc(r, n[i] * sizeof(int)) : NULL;
		n[i] = 0;
	}
	for (j = 0; j < node->nedges; j++)
		for (i = 0; i < 4; i++)
			if (near[j] & (1 << i))
				child[i].edges[n[i]++] = node->edges[j];
	pfree(near);

	/* move the node's reference point to its split point, if clear */
	sx = node->sx;
	sy = node->sy;
	if (node->src == node && (node->rx != sx || node->ry != sy) &&
		node_point_clear(pl, node, sx, sy))
	{
		int			nin = parity_walk(r, pl, node, sx, sy, r->setbuf);

		node_set_in(r, node, r->setbuf, nin);
		node->rx = sx;
		node->ry = sy;
	}
	shared = (node->src == node && node->rx == sx && node->ry == sy);

	for (i = 0; i < 4; i++)
	{
		GrNode	   *c = &child[i];

		c->nedges = n[i];
		if (shared)
		{
			/* clear of the parent's edges, so of the child's */
			c->src = c;
			c->rx = sx;
			c->ry = sy;
			c->nin = node->nin;
			c->in = node->in;
		}
		else if (node_pick_ref(pl, c))
		{
			c->src = c;
			node_set_in(r, c, r->setbuf,
						parity_walk(r, pl, node->src, c->rx, c->ry, r->setbuf));
		}
		else
			c->src = node->src;
	}
	node->child = child;
}

/* Relation of a whole node: certain only without edges near it */
static GeoRelation
node_relation(const GrNode *node)
{
	if (node->nedges > 0)
		return GEO_PARTIAL;
	Assert(node->src == node);
	return node->nin > 0 ? GEO_INSIDE : GEO_DISJOINT;
}

/*
 * Exact test of a point of the node's rectangle: on the boundary (within
 * the plane's tolerance of an edge) counts as inside.
 */
static bool
node_contains(GeoRegion *r, const GrPlane *pl, const GrNode *node,
			  double x, double y)
{
	int			i;

	for (i = 0; i < node->nedges; i++)
		if (edge_near_point(&pl->edges[node->edges[i]], x, y, pl->tol))
			return true;
	return parity_walk(r, pl, node->src, x, y, NULL) > 0;
}


/* ------------------------------------------------------------------------
 * Geodesic polygons on the sphere
 * ------------------------------------------------------------------------
 */

/* Might p be within dist (radians) of the arc ab?  (Never a false "no") */
static bool
sphere_near_arc(S2Point p, S2Point a, S2Point b, double dist)
{
	S2Point		da = vcomb(1, p, -1, a);
	S2Point		db = vcomb(1, p, -1, b);
	S2Point		n;
	double		nn;

	/* chords are shorter than angles */
	if (s2_point_dot(da, da) <= dist * dist || s2_point_dot(db, db) <= dist * dist)
		return true;
	/* 2 a x b, computed accurately for short arcs too */
	n = s2_point_cross(vcomb(1, a, 1, b), vcomb(1, b, -1, a));
	nn = sqrt(s2_point_dot(n, n));
	if (nn == 0 || fabs(s2_point_dot(p, n)) > dist * nn)
		return false;
	/* near the great circle: does p project inside the arc? */
	return s2_point_dot(s2_point_cross(a, p), n) >= 0 && s2_point_dot(s2_point_cross(p, b), n) >= 0;
}

/* Is p clear of every edge of the polygon? */
static bool
sphere_poly_clear(const GeoRegion *r, int poly, S2Point p)
{
	int			ring;
	int			j;

	for (ring = r->poly_ring[poly]; ring < r->poly_ring[poly + 1]; ring++)
		for (j = r->ring_start[ring]; j + 1 < r->ring_start[ring + 1]; j++)
			if (sphere_near_arc(p, r->verts[j], r->verts[j + 1], GR_SPHERE_CLEAR))
				return false;
	return true;
}

/*
 * Number of crossings of the arc a->b (between GR_WALK_MIN and GR_WALK_MAX
 * long, both ends clear of the polygon) with the polygon's edges.  The same
 * shared-vertex argument as edge_crosses, with the side of a vertex given by
 * the sign of its dot product with the arc's normal.
 */
static int
sphere_crossings(const GeoRegion *r, int poly, S2Point a, S2Point b)
{
	S2Point		n = s2_point_cross(a, b);
	int			count = 0;
	int			ring;

	for (ring = r->poly_ring[poly]; ring < r->poly_ring[poly + 1]; ring++)
	{
		const S2Point *v = r->verts;
		int			end = r->ring_start[ring + 1];
		int			j = r->ring_start[ring];
		double		d0 = s2_point_dot(n, v[j]);

		for (; j + 1 < end; j++)
		{
			double		d1 = s2_point_dot(n, v[j + 1]);

			if ((d0 > 0) != (d1 > 0))
			{
				/* where the edge meets the arc's great circle */
				S2Point		x = vcomb(fabs(d0), v[j + 1], fabs(d1), v[j]);

				if (s2_point_dot(s2_point_cross(a, x), n) > 0 && s2_point_dot(s2_point_cross(x, b), n) > 0)
					count++;
			}
			d0 = d1;
		}
	}
	return count;
}

/*
 * Does the polygon contain p (clear of its edges)?  Crossings are counted
 * from the polygon's outside point, directly or, when the arc would be too
 * short or too close to a half circle, through a point 90 degrees from it.
 */
static bool
sphere_contains(const GeoRegion *r, int poly, S2Point p)
{
	S2Point		ref = r->poly_ref[poly];
	double		angle = s2_point_angle(ref, p);
	S2Point		n;
	S2Point		t;
	int			k;

	if (angle >= GR_WALK_MIN && angle <= GR_WALK_MAX)
		return (sphere_crossings(r, poly, ref, p) & 1) != 0;

	/* a unit normal of a great circle through ref (and p, if defined) */
	n = s2_point_cross(ref, p);
	if (s2_point_dot(n, n) < 1e-6)
	{
		S2Point		axis = vec3(0, 0, 0);

		if (fabs(ref.x) <= fabs(ref.y) && fabs(ref.x) <= fabs(ref.z))
			axis.x = 1;
		else if (fabs(ref.y) <= fabs(ref.z))
			axis.y = 1;
		else
			axis.z = 1;
		n = s2_point_cross(ref, axis);
	}
	n = s2_point_normalize(n);
	t = s2_point_normalize(s2_point_cross(n, ref));

	/*
	 * Midpoints 90 degrees from ref, tilted off the circle step by step
	 * until one is clear of the polygon; ref->m is then 90 degrees long and
	 * m->p between about 1 and 2.1 radians.
	 */
	for (k = 0; k < GR_REF_TRIES; k++)
	{
		double		a = 0.05 * k;
		S2Point		m = s2_point_normalize(vcomb(cos(a), t, sin(a), n));

		if (sphere_poly_clear(r, poly, m))
			return ((sphere_crossings(r, poly, ref, m) +
					 sphere_crossings(r, poly, m, p)) & 1) != 0;
	}
	elog(ERROR, "archer: no clear path to locate a polygon reference point");
}

/* Append an edge to a face's list */
static void
edgelist_push(GeoRegion *r, GrEdgeList *l, double x0, double y0,
			  double x1, double y1, int poly)
{
	GrEdge	   *e;

	if (l->n == l->cap)
	{
		l->cap = l->cap ? 2 * l->cap : 256;
		if (l->edges)
			l->edges = repalloc_huge(l->edges, l->cap * sizeof(GrEdge));
		else
			l->edges = region_alloc(r, l->cap * sizeof(GrEdge));
	}
	e = &l->edges[l->n++];
	e->x0 = x0;
	e->y0 = y0;
	e->x1 = x1;
	e->y1 = y1;
	e->poly = poly;
}

/*
 * Clip the arc a->b to face f's square grown by GR_UV_FACE_PAD.  A point
 * of the chord p(t) = (1 - t) a + t b is in the padded face iff four linear
 * functions of p's face-frame components (u, v, w) are non-negative
 * (|u| <= (1 + pad) w, |v| <= (1 + pad) w),
 * so the part of the arc on the face is an interval of t, found as in
 * Liang-Barsky clipping.  Unclipped ends are projected from a and b
 * themselves, so a vertex gets the same (u, v) in both of its edges.
 */
static void
clip_edge_to_face(GeoRegion *r, GrEdgeList *list, int f,
				  S2Point a, S2Point b, int poly)
{
	double		k = 1.0 + GR_UV_FACE_PAD;
	S2Point		ta = s2_face_xyz_to_uvw(f, a);
	S2Point		tb = s2_face_xyz_to_uvw(f, b);
	double		ga[4];
	double		gb[4];
	double		t0 = 0.0;
	double		t1 = 1.0;
	double		u0;
	double		v0;
	double		u1;
	double		v1;
	int			c;

	ga[0] = k * ta.z - ta.x;
	ga[1] = k * ta.z + ta.x;
	ga[2] = k * ta.z - ta.y;
	ga[3] = k * ta.z + ta.y;
	gb[0] = k * tb.z - tb.x;
	gb[1] = k * tb.z + tb.x;
	gb[2] = k * tb.z - tb.y;
	gb[3] = k * tb.z + tb.y;
	for (c = 0; c < 4; c++)
	{
		if (ga[c] < 0 && gb[c] < 0)
			return;
		if (ga[c] < 0)
			t0 = Max(t0, ga[c] / (ga[c] - gb[c]));
		else if (gb[c] < 0)
			t1 = Min(t1, ga[c] / (ga[c] - gb[c]));
	}
	if (t0 > t1)
		return;
	s2_face_xyz_to_uv(f, t0 == 0.0 ? a : vcomb(1.0 - t0, a, t0, b), &u0, &v0);
	s2_face_xyz_to_uv(f, t1 == 1.0 ? b : vcomb(1.0 - t1, a, t1, b), &u1, &v1);
	edgelist_push(r, list, u0, v0, u1, v1, poly);
}

/* Add the arc a->b to the edge list of every face it passes through */
static void
clip_edge(GeoRegion *r, GrEdgeList *lists, S2Point a, S2Point b, int poly)
{
	int			fa = s2_face_of_point(a);
	int			f;

	/*
	 * Both ends well inside one face: the segment between them (the arc's
	 * image) stays there, far from every other face.
	 */
	if (fa == s2_face_of_point(b))
	{
		double		ua;
		double		va;
		double		ub;
		double		vb;

		s2_face_xyz_to_uv(fa, a, &ua, &va);
		s2_face_xyz_to_uv(fa, b, &ub, &vb);
		if (fabs(ua) <= GR_UV_FACE_INNER && fabs(va) <= GR_UV_FACE_INNER &&
			fabs(ub) <= GR_UV_FACE_INNER && fabs(vb) <= GR_UV_FACE_INNER)
		{
			edgelist_push(r, &lists[fa], ua, va, ub, vb, poly);
			return;
		}
	}
	for (f = 0; f < S2_NUM_FACES; f++)
		clip_edge_to_face(r, &lists[f], f, a, b, poly);
}

/* Build the six face planes of a geodesic region */
static void
geodesic_build(GeoRegion *r)
{
	GrEdgeList	lists[S2_NUM_FACES];
	int			poly;
	int			f;
	int			i;

	memset(lists, 0, sizeof(lists));
	for (poly = 0; poly < r->npolygons; poly++)
	{
		int			ring;
		int			j;

		for (ring = r->poly_ring[poly]; ring < r->poly_ring[poly + 1]; ring++)
			for (j = r->ring_start[ring]; j + 1 < r->ring_start[ring + 1]; j++)
				clip_edge(r, lists, r->verts[j], r->verts[j + 1], poly);
		CHECK_FOR_INTERRUPTS();
	}

	r->leaf_margin = GR_UV_STRETCH *
		(s2_level_max_radius(S2_MAX_LEVEL) + GR_ANGLE_SLACK) + GR_UV_TOL;
	for (f = 0; f < S2_NUM_FACES; f++)
	{
		GrPlane    *pl = &r->planes[f];
		GrNode	   *root = region_alloc(r, sizeof(GrNode));
		S2Point		p;
		int			n = 0;

		pl->face = f;
		pl->nedges = lists[f].n;
		pl->edges = lists[f].edges;
		pl->pad = 2 * r->leaf_margin;
		pl->clear = GR_UV_CLEAR;
		pl->tol = GR_UV_TOL;

		memset(root, 0, sizeof(GrNode));
		root->cellid = s2_cellid_from_face(f);
		cell_uv_rect(f, root->cellid, &root->rect);
		s2_face_xyz_to_uv(f, s2_cellid_to_point(root->cellid), &root->sx, &root->sy);
		root->nedges = pl->nedges;
		root->edges = region_alloc(r, Max(pl->nedges, 1) * sizeof(int));
		for (i = 0; i < pl->nedges; i++)
			root->edges[i] = i;
		if (!node_pick_ref(pl, root))
			elog(ERROR, "archer: no reference point clear of the polygon edges on face %d", f);
		root->src = root;

		/*
		 * Being GR_UV_CLEAR away from every edge in (u, v), the point is at
		 * least GR_UV_CLEAR / GR_UV_STRETCH > GR_SPHERE_CLEAR away on the
		 * sphere, as sphere_contains requires.
		 */
		p = s2_point_normalize(s2_face_uv_to_xyz(f, root->rx, root->ry));
		for (i = 0; i < r->npolygons; i++)
			if (sphere_contains(r, i, p))
				r->setbuf[n++] = i;
		node_set_in(r, root, r->setbuf, n);
		pl->root = root;
	}
}

/* The point known to be outside polygon poly (see the file header) */
static void
geodesic_set_reference(GeoRegion *r, int poly)
{
	int			shell = r->poly_ring[poly];
	int			first = r->ring_start[shell];
	int			nverts = r->ring_start[shell + 1] - 1 - first;
	S2Point		sum = vec3(0, 0, 0);
	double		len;
	int			j;

	for (j = first; j < first + nverts; j++)
		sum = vcomb(1, sum, 1, r->verts[j]);
	len = sqrt(s2_point_dot(sum, sum));
	if (len <= GR_MIN_MEAN * nverts)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("polygon is too large for a geodesic query"),
				 errdetail("The vertices of polygon %d have no clear center; a geodesic polygon must fit within a hemisphere.",
						   poly + 1)));
	r->poly_ref[poly] = vec3(-sum.x / len, -sum.y / len, -sum.z / len);
	if (!sphere_poly_clear(r, poly, r->poly_ref[poly]))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("polygon is too large for a geodesic query"),
				 errdetail("Polygon %d reaches the point opposite its center; a geodesic polygon must fit within a hemisphere.",
						   poly + 1)));
}

/* Convert the rings of a geodesic region to unit vectors */
static void
geodesic_load(GeoRegion *r, int npolygons, const GeoPolygon *polygons,
			  int nrings, int nverts)
{
	int			ring = 0;
	int			v = 0;
	int			p;

	r->verts = region_alloc(r, nverts * sizeof(S2Point));
	r->ring_start = region_alloc(r, (nrings + 1) * sizeof(int));
	r->poly_ring = region_alloc(r, (npolygons + 1) * sizeof(int));
	r->poly_ref = region_alloc(r, npolygons * sizeof(S2Point));
	for (p = 0; p < npolygons; p++)
	{
		int			k;

		r->poly_ring[p] = ring;
		for (k = 0; k < polygons[p].nrings; k++)
		{
			const GeoRing *g = &polygons[p].rings[k];
			int			i;

			r->ring_start[ring++] = v;
			for (i = 0; i < g->npoints; i++)
				r->verts[v + i] = s2_point_from_latlng(g->lat[i], g->lng[i]);
			for (i = 0; i + 1 < g->npoints; i++)
				if (s2_point_dot(r->verts[v + i], r->verts[v + i + 1]) < GR_ANTIPODAL_DOT)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("polygon edge joins antipodal points"),
							 errdetail("The edge from (%g, %g) to (%g, %g) in ring %d of polygon %d has no defined great-circle path.",
									   g->lng[i], g->lat[i], g->lng[i + 1],
									   g->lat[i + 1], k + 1, p + 1)));
			v += g->npoints;
		}
	}
	r->ring_start[ring] = v;
	r->poly_ring[npolygons] = ring;
	for (p = 0; p < npolygons; p++)
		geodesic_set_reference(r, p);
}

/* Relation of a leaf entry, descending from its covering cell's node */
static GeoRelation
geodesic_leaf_relation(GeoRegion *r, GrNode *node, S2CellId leaf)
{
	const GrPlane *pl = &r->planes[s2_cellid_face(leaf)];
	double		u;
	double		v;
	int			i;

	Assert(s2_cellid_contains(node->cellid, leaf));
	while (node->nedges > GR_NODE_MAX_EDGES && node->level < S2_MAX_LEVEL)
	{
		if (node->child == NULL)
			node_split(r, pl, node);
		node = &node->child[(leaf >> (2 * (S2_MAX_LEVEL - node->level) - 1)) & 3];
	}
	if (node->nedges == 0)
		return node_relation(node);
	s2_face_xyz_to_uv(pl->face, s2_cellid_to_point(leaf), &u, &v);
	for (i = 0; i < node->nedges; i++)
		if (edge_near_point(&pl->edges[node->edges[i]], u, v, r->leaf_margin))
			return GEO_PARTIAL;
	return parity_walk(r, pl, node->src, u, v, NULL) > 0 ?
		GEO_INSIDE : GEO_DISJOINT;
}

static bool
geodesic_contains(GeoRegion *r, double lng, double lat)
{
	S2Point		p = s2_point_from_latlng(lat, lng);
	S2CellId	leaf = s2_cellid_from_point(p);
	const GrPlane *pl = &r->planes[s2_cellid_face(leaf)];
	GrNode	   *node = pl->root;
	double		u;
	double		v;

	/* the same leaf as the index entry of this point: same node path */
	while (node->nedges > GR_NODE_MAX_EDGES && node->level < S2_MAX_LEVEL)
	{
		if (node->child == NULL)
			node_split(r, pl, node);
		node = &node->child[(leaf >> (2 * (S2_MAX_LEVEL - node->level) - 1)) & 3];
	}
	s2_face_xyz_to_uv(pl->face, p, &u, &v);
	return node_contains(r, pl, node, u, v);
}


/* ------------------------------------------------------------------------
 * Planar polygons
 * ------------------------------------------------------------------------
 */

/*
 * The planar rectangles that may hold the (lng, lat) of a point within
 * margin radians of the lat/lng rectangle (lng_lo > lng_hi: it wraps).
 * Latitude grows by the margin; longitude by the most a point that close
 * can differ, 2 asin(sin(margin / 2) / cos(lat)) from the haversine
 * formula, taken at the latitude farthest from the equator.  A rectangle
 * reaching a pole spans all longitudes (all of them name the pole), and
 * one reaching lng 180 also gets a sliver at lng -180 (and vice versa),
 * since both name the same meridian.  Returns the number of pieces (1-3).
 */
static int
planar_pieces(double lat_lo, double lat_hi, double lng_lo, double lng_hi,
			  double margin, GrRect *out)
{
	double		mdeg = margin * GR_DEG_PER_RAD + GR_DEG_SLACK;
	double		ylo = lat_lo - mdeg;
	double		yhi = lat_hi + mdeg;
	bool		full = true;
	double		a = 0;
	double		b = 0;
	int			n = 0;

	if (ylo > -90.0 && yhi < 90.0)
	{
		double		s = sin(margin / 2) / cos(Max(-ylo, yhi) * GR_RAD_PER_DEG);

		if (s < 0.5)
		{
			double		dl = 2 * asin(s) * GR_DEG_PER_RAD + GR_DEG_SLACK;

			a = lng_lo - dl;
			b = lng_hi + dl;
			full = (lng_lo > lng_hi) ? (a <= b) : (b - a >= 360.0);
		}
	}
	ylo = Max(ylo, -90.0);
	yhi = Min(yhi, 90.0);
	if (full)
	{
		a = -180.0;
		b = 180.0;
	}
	else if (lng_lo > lng_hi)
	{
		/* [a, 180] and [-180, b] */
		out[n].x0 = a;
		out[n].x1 = 180.0;
		out[n].y0 = ylo;
		out[n++].y1 = yhi;
		a = -180.0;
	}
	out[n].x0 = Max(a, -180.0);
	out[n].x1 = Min(b, 180.0);
	out[n].y0 = ylo;
	out[n++].y1 = yhi;
	if (!full && lng_lo <= lng_hi)
	{
		if (b >= 180.0)
		{
			out[n].x0 = -180.0;
			out[n].x1 = Max(b - 360.0, -180.0);
			out[n].y0 = ylo;
			out[n++].y1 = yhi;
		}
		if (a <= -180.0)
		{
			out[n].x0 = Min(a + 360.0, 180.0);
			out[n].x1 = 180.0;
			out[n].y0 = ylo;
			out[n++].y1 = yhi;
		}
	}
	return n;
}

/*
 * Relation of the part of the planar rectangle q within the node: NONE when
 * they do not overlap.  Descends (splitting) while the node has many edges,
 * without recursion as long as q lies within a single child.  When deepest
 * is given (q must then lie within the node), it receives the last node of
 * that descent: the smallest known node holding q.
 */
static int
planar_classify(GeoRegion *r, const GrPlane *pl, GrNode *node, const GrRect *q,
				GrNode **deepest)
{
	const GrRect *nr;
	int			i;

	for (;;)
	{
		double		mx;
		double		my;

		if (deepest)
			*deepest = node;
		nr = &node->rect;
		if (q->x1 < nr->x0 || q->x0 > nr->x1 || q->y1 < nr->y0 || q->y0 > nr->y1)
			return GR_REL_NONE;
		if (node->nedges == 0)
			return node_relation(node);
		/* edges near a node wholly inside q are near q */
		if (q->x0 <= nr->x0 && q->x1 >= nr->x1 && q->y0 <= nr->y0 && q->y1 >= nr->y1)
			return GEO_PARTIAL;
		if (node->nedges <= GR_NODE_MAX_EDGES || node->level >= GR_PLANAR_MAX_DEPTH)
			break;
		if (node->child == NULL)
			node_split(r, pl, node);
		mx = node->sx;
		my = node->sy;
		if ((q->x1 < mx || q->x0 > mx) && (q->y1 < my || q->y0 > my))
			node = &node->child[(q->x0 > mx ? 1 : 0) | (q->y0 > my ? 2 : 0)];
		else
		{
			int			res = GR_REL_NONE;

			for (i = 0; i < 4 && res != GEO_PARTIAL; i++)
				res = rel_combine(res, planar_classify(r, pl, &node->child[i], q, NULL));
			return res;
		}
	}
	for (i = 0; i < node->nedges; i++)
		if (edge_near_rect(&pl->edges[node->edges[i]], q, GR_DEG_QUERY_PAD))
			return GEO_PARTIAL;
	/* no edge near q: all of q within the node is like this point of it */
	return parity_walk(r, pl, node->src,
					   0.5 * (Max(q->x0, nr->x0) + Min(q->x1, nr->x1)),
					   0.5 * (Max(q->y0, nr->y0) + Min(q->y1, nr->y1)),
					   NULL) > 0 ? GEO_INSIDE : GEO_DISJOINT;
}

/*
 * Is (x, y) within dist of edge e?  The distance to the edge's line rules
 * out most edges the bounding box lets through with two products; only
 * points near the line pay for the distance to the segment.  (Past the box
 * test x - x0 and y - y0 are at most the edge's extent plus dist, so the
 * cross product's rounding is far below dist.)
 */
static inline bool
edge_near_point_quick(const GrEdge *e, double x, double y, double dist)
{
	double		dx = e->x1 - e->x0;
	double		dy = e->y1 - e->y0;
	double		cross;

	if (x < Min(e->x0, e->x1) - dist || x > Max(e->x0, e->x1) + dist ||
		y < Min(e->y0, e->y1) - dist || y > Max(e->y0, e->y1) + dist)
		return false;
	cross = dx * (y - e->y0) - dy * (x - e->x0);
	if (cross * cross > dist * dist * (dx * dx + dy * dy))
		return false;
	return edge_near_point(e, x, y, dist);
}

/*
 * planar_classify for the tiny rectangle q around point (x, y): while q
 * keeps clear of the split lines it follows one child per level, and the
 * leaf's edges are tested against the point itself, which is cheaper than
 * against a padded rectangle and reaches further (GR_DEG_POINT_NEAR).
 */
static int
planar_point_classify(GeoRegion *r, const GrPlane *pl, GrNode *node, const GrRect *q,
					  double x, double y, GrNode **deepest)
{
	for (;;)
	{
		*deepest = node;
		if (node->nedges == 0)
			return node_relation(node);
		if (node->nedges <= GR_NODE_MAX_EDGES || node->level >= GR_PLANAR_MAX_DEPTH)
			break;
		if (node->child == NULL)
			node_split(r, pl, node);
		if ((q->x0 <= node->sx && q->x1 >= node->sx) ||
			(q->y0 <= node->sy && q->y1 >= node->sy))
			return planar_classify(r, pl, node, q, deepest);
		node = &node->child[(q->x0 > node->sx ? 1 : 0) | (q->y0 > node->sy ? 2 : 0)];
	}
	for (int i = 0; i < node->nedges; i++)
		if (edge_near_point_quick(&pl->edges[node->edges[i]], x, y, GR_DEG_POINT_NEAR))
			return GEO_PARTIAL;
	return parity_walk(r, pl, node->src, x, y, NULL) > 0 ? GEO_INSIDE : GEO_DISJOINT;
}

static bool
rect_within(const GrRect *a, const GrRect *b)
{
	return a->x0 >= b->x0 && a->x1 <= b->x1 && a->y0 >= b->y0 && a->y1 <= b->y1;
}

/*
 * Relation of the points of a lat/lng rectangle grown by margin radians.
 * Each piece is classified from *start if it lies within that node's box
 * (no edge outside the box can touch it), else from the root.  When the
 * rectangle makes a single piece, *start is moved to the smallest known
 * node holding it, else to the root.
 */
static GeoRelation
planar_relation(GeoRegion *r, GrNode **start, double lat_lo, double lat_hi,
				double lng_lo, double lng_hi, double margin)
{
	GrPlane    *pl = &r->planes[0];
	GrRect		pieces[3];
	int			n = planar_pieces(lat_lo, lat_hi, lng_lo, lng_hi, margin, pieces);
	int			res = GR_REL_NONE;
	int			i;

	for (i = 0; i < n && res != GEO_PARTIAL; i++)
	{
		GrNode	   *from = rect_within(&pieces[i], &(*start)->rect) ? *start : pl->root;

		res = rel_combine(res, planar_classify(r, pl, from, &pieces[i],
											   n == 1 ? start : NULL));
	}
	if (n > 1)
		*start = pl->root;
	/* the root box holds every piece, so res is never NONE */
	Assert(res != GR_REL_NONE);
	return (GeoRelation) res;
}

/*
 * Relation of a cell, classified from *start (see planar_relation).  The
 * cell is grown by a leaf's margin, so that the node left in *start also
 * holds the pieces of every leaf of the cell.
 */
static GeoRelation
planar_cell_relation(GeoRegion *r, S2CellId id, GrNode **start)
{
	S2LatLngRect b = s2_cell_rect_bound(id);

	return planar_relation(r, start, b.lat_lo, b.lat_hi, b.lng_lo, b.lng_hi,
						   s2_level_max_radius(S2_MAX_LEVEL) + GR_ANGLE_SLACK);
}

static GeoRelation
planar_leaf_relation(GeoRegion *r, GrNode *start, S2CellId leaf)
{
	double		lat;
	double		lng;

	s2_latlng_from_point(s2_cellid_to_point(leaf), &lat, &lng);
	return planar_relation(r, &start, lat, lat, lng, lng,
						   s2_level_max_radius(S2_MAX_LEVEL) + GR_ANGLE_SLACK);
}

static bool
planar_contains(GeoRegion *r, double lng, double lat)
{
	const GrPlane *pl = &r->planes[0];
	GrNode	   *node = pl->root;

	while (node->nedges > GR_NODE_MAX_EDGES && node->level < GR_PLANAR_MAX_DEPTH)
	{
		if (node->child == NULL)
			node_split(r, pl, node);
		node = &node->child[(lng >= node->sx ? 1 : 0) | (lat >= node->sy ? 2 : 0)];
	}
	return node_contains(r, pl, node, lng, lat);
}

/* Collect the edges of a planar region and its quadtree root */
static void
planar_load(GeoRegion *r, int npolygons, const GeoPolygon *polygons, int nverts)
{
	GrPlane    *pl = &r->planes[0];
	GrNode	   *root;
	int			p;
	int			i;

	pl->face = -1;
	pl->pad = GR_DEG_NODE_PAD;
	pl->clear = GR_DEG_CLEAR;
	pl->tol = GR_DEG_TOL;
	pl->edges = region_alloc(r, nverts * sizeof(GrEdge));
	pl->nedges = 0;
	r->bbox.x0 = r->bbox.y0 = DBL_MAX;
	r->bbox.x1 = r->bbox.y1 = -DBL_MAX;
	for (p = 0; p < npolygons; p++)
	{
		int			k;

		for (k = 0; k < polygons[p].nrings; k++)
		{
			const GeoRing *g = &polygons[p].rings[k];

			for (i = 0; i + 1 < g->npoints; i++)
			{
				GrEdge	   *e = &pl->edges[pl->nedges++];

				e->x0 = g->lng[i];
				e->y0 = g->lat[i];
				e->x1 = g->lng[i + 1];
				e->y1 = g->lat[i + 1];
				e->poly = p;
			}
			for (i = 0; i < g->npoints; i++)
			{
				r->bbox.x0 = Min(r->bbox.x0, g->lng[i]);
				r->bbox.x1 = Max(r->bbox.x1, g->lng[i]);
				r->bbox.y0 = Min(r->bbox.y0, g->lat[i]);
				r->bbox.y1 = Max(r->bbox.y1, g->lat[i]);
			}
		}
	}

	/*
	 * The root box reaches a degree beyond the (lng, lat) domain; its
	 * reference point lies in that margin, outside every polygon.
	 */
	root = region_alloc(r, sizeof(GrNode));
	memset(root, 0, sizeof(GrNode));
	root->rect.x0 = -181.0;
	root->rect.x1 = 181.0;
	root->rect.y0 = -91.0;
	root->rect.y1 = 91.0;
	root->sx = 0.0;
	root->sy = 0.0;
	root->nedges = pl->nedges;
	root->edges = region_alloc(r, Max(pl->nedges, 1) * sizeof(int));
	for (i = 0; i < pl->nedges; i++)
		root->edges[i] = i;
	root->src = root;
	root->rx = -180.5;
	root->ry = -90.5;
	pl->root = root;
}


/* ------------------------------------------------------------------------
 * Caps
 * ------------------------------------------------------------------------
 */

/* Squared chord between two unit vectors: monotone in their angle */
static inline double
chord2(S2Point a, S2Point b)
{
	double		dx = a.x - b.x;
	double		dy = a.y - b.y;
	double		dz = a.z - b.z;

	return dx * dx + dy * dy + dz * dz;
}

static double
chord2_of_angle(double angle)
{
	double		half = sin(angle / 2);

	return 4 * half * half;
}

GeoRegion *
georegion_cap(S2Point center, double inner_angle, double outer_angle)
{
	GeoRegion  *r = region_new(GR_CAP);

	r->center = s2_point_normalize(center);
	r->inner = inner_angle;
	r->outer = outer_angle;
	s2_cap_quick_init(&r->trig, r->center, inner_angle - GR_ANGLE_SLACK,
					  outer_angle + GR_ANGLE_SLACK);

	/*
	 * A cell whose center lies beyond outer plus the level's radius is
	 * disjoint; within inner minus the radius, inside.  Comparing squared
	 * chords to precomputed thresholds decides that without an arctangent,
	 * and stays exact for centimetre angles, where dot products near 1 do
	 * not.
	 */
	for (int level = 0; level <= S2_MAX_LEVEL; level++)
	{
		double		radius = s2_level_max_radius(level) + 2 * GR_ANGLE_SLACK;

		r->disjoint_chord2[level] = outer_angle + radius >= M_PI ? 5.0 :
			chord2_of_angle(outer_angle + radius);
		r->inside_chord2[level] = inner_angle - radius <= 0 ? -1.0 :
			chord2_of_angle(inner_angle - radius);
	}
	return r;
}

static GeoRelation
cap_cell_relation(const GeoRegion *r, S2CellId id)
{
	int			level = s2_cellid_level(id);
	double		c2;

	if (r->inner >= M_PI)
		return GEO_INSIDE;

	/* the cell's bounding cap decides most cells with no transcendental */
	c2 = chord2(s2_cellid_to_point(id), r->center);
	if (c2 > r->disjoint_chord2[level])
		return GEO_DISJOINT;
	if (c2 <= r->inside_chord2[level])
		return GEO_INSIDE;

	/*
	 * Near the boundary, the cell's own geometry: without it the bounding
	 * caps of the neighbours of every cell on the way down stay undecided
	 * and the covering evaluates ten times as many cells.  The quick test
	 * (edge circles and vertices) settles most; the exact distances the
	 * rest.
	 */
	switch (s2_cell_cap_quick(id, &r->trig))
	{
		case S2_CAP_DISJOINT:
			return GEO_DISJOINT;
		case S2_CAP_INSIDE:
			return GEO_INSIDE;
		case S2_CAP_PARTIAL:
			return GEO_PARTIAL;
		case S2_CAP_UNKNOWN:
			break;
	}
	if (r->outer < M_PI &&
		s2_cell_min_angle(id, r->center) > r->outer + GR_ANGLE_SLACK)
		return GEO_DISJOINT;
	/* a cell wider than the inner cap cannot lie inside it */
	if (s2_level_max_radius(level) * GR_MIN_RADIUS_RATIO > r->inner)
		return GEO_PARTIAL;
	if (s2_cell_max_angle(id, r->center) <= r->inner - GR_ANGLE_SLACK)
		return GEO_INSIDE;
	return GEO_PARTIAL;
}

static GeoRelation
cap_leaf_relation(const GeoRegion *r, S2CellId leaf)
{
	double		c2;

	if (r->inner >= M_PI)
		return GEO_INSIDE;
	c2 = chord2(s2_cellid_to_point(leaf), r->center);
	if (c2 > r->disjoint_chord2[S2_MAX_LEVEL])
		return GEO_DISJOINT;
	if (c2 <= r->inside_chord2[S2_MAX_LEVEL])
		return GEO_INSIDE;
	return GEO_PARTIAL;
}


/* ------------------------------------------------------------------------
 * Polygon regions
 * ------------------------------------------------------------------------
 */

static void
validate_ring(const GeoRing *ring, int polyno, int ringno)
{
	int			i;

	if (ring->npoints < 4)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("polygon ring has fewer than 4 points"),
				 errdetail("Ring %d of polygon %d has %d points.",
						   ringno + 1, polyno + 1, ring->npoints)));
	for (i = 0; i < ring->npoints; i++)
	{
		double		lng = ring->lng[i];
		double		lat = ring->lat[i];

		if (!isfinite(lng) || !isfinite(lat))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("polygon coordinates must be finite numbers")));
		if (lat < -90.0 || lat > 90.0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("polygon latitude %.17g is out of range [-90, 90]", lat)));
		if (lng < -180.0 || lng > 180.0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("polygon longitude %.17g is out of range [-180, 180]", lng)));
	}
	if (ring->lng[0] != ring->lng[ring->npoints - 1] ||
		ring->lat[0] != ring->lat[ring->npoints - 1])
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("polygon ring is not closed"),
				 errdetail("Ring %d of polygon %d ends at (%g, %g), not at its first point (%g, %g).",
						   ringno + 1, polyno + 1,
						   ring->lng[ring->npoints - 1], ring->lat[ring->npoints - 1],
						   ring->lng[0], ring->lat[0])));
}

GeoRegion *
georegion_polygons(int npolygons, const GeoPolygon *polygons, bool planar)
{
	GeoRegion  *r;
	int64		nrings = 0;
	int64		nverts = 0;
	int			p;
	int			k;

	if (npolygons <= 0 || polygons == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query polygon is empty")));
	for (p = 0; p < npolygons; p++)
	{
		if (polygons[p].nrings <= 0 || polygons[p].rings == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("query polygon is empty"),
					 errdetail("Polygon %d has no rings.", p + 1)));
		for (k = 0; k < polygons[p].nrings; k++)
		{
			validate_ring(&polygons[p].rings[k], p, k);
			nverts += polygons[p].rings[k].npoints;
		}
		nrings += polygons[p].nrings;
		if (nverts > GR_MAX_VERTICES)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("query polygon has too many vertices"),
					 errdetail("At most %d vertices are supported.", GR_MAX_VERTICES)));
	}

	r = region_new(planar ? GR_PLANAR : GR_GEODESIC);
	r->npolygons = npolygons;
	r->nvertices = (int) nverts;
	r->odd = region_alloc(r, npolygons * sizeof(uint8));
	memset(r->odd, 0, npolygons * sizeof(uint8));
	r->seen = region_alloc(r, npolygons * sizeof(bool));
	memset(r->seen, 0, npolygons * sizeof(bool));
	r->touched = region_alloc(r, npolygons * sizeof(int));
	r->setbuf = region_alloc(r, npolygons * sizeof(int));
	if (planar)
		planar_load(r, npolygons, polygons, (int) nverts);
	else
		geodesic_load(r, npolygons, polygons, (int) nrings, (int) nverts);
	return r;
}

/* Build the edge index on first use */
static void
ensure_index(GeoRegion *r)
{
	if (r->indexed)
		return;
	if (r->kind == GR_GEODESIC)
		geodesic_build(r);
	r->indexed = true;
}

bool
georegion_contains_point(GeoRegion *r, double lng, double lat)
{
	if (r->kind == GR_CAP)
		elog(ERROR, "archer: point-in-polygon test on a cap region");
	if (!isfinite(lng) || !isfinite(lat) || lat < -90.0 || lat > 90.0)
		return false;
	ensure_index(r);
	if (r->kind == GR_PLANAR)
	{
		/* polygons lie within the domain */
		if (lng < -180.0 || lng > 180.0)
			return false;
		return planar_contains(r, lng, lat);
	}
	return geodesic_contains(r, lng, lat);
}


/* ------------------------------------------------------------------------
 * Covering
 * ------------------------------------------------------------------------
 */

static void
cand_push(GrCandList *l, const GrCand *c)
{
	if (l->n == l->cap)
	{
		l->cap = l->cap ? 2 * l->cap : 64;
		if (l->items)
			l->items = repalloc_huge(l->items, l->cap * sizeof(GrCand));
		else
			l->items = palloc(l->cap * sizeof(GrCand));
	}
	l->items[l->n++] = *c;
}

static void
cand_eval(GeoRegion *r, GrCand *c)
{
	switch (r->kind)
	{
		case GR_CAP:
			c->rel = cap_cell_relation(r, c->id);
			break;
		case GR_PLANAR:
			c->rel = planar_cell_relation(r, c->id, &c->node);
			break;
		case GR_GEODESIC:
			c->rel = node_relation(c->node);
			break;
	}
}

static int
cand_cmp(const void *a, const void *b)
{
	S2CellId	x = ((const GrCand *) a)->id;
	S2CellId	y = ((const GrCand *) b)->id;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/*
 * Start cells of a planar region's covering (see s2_cap_neighborhood), or 0
 * to start from the faces.  A planar polygon lies within the box of its
 * vertices; on the sphere the point of such a box farthest from the box's
 * centre is a corner while the box spans at most 90 degrees each way, so
 * the cap through the farthest corner holds the region.
 */
static int
planar_start_cells(const GeoRegion *r, S2CellId cells[9])
{
	const GrRect *b = &r->bbox;
	double		lat = 0.5 * (b->y0 + b->y1);
	double		lng = 0.5 * (b->x0 + b->x1);
	S2Point		center = s2_point_from_latlng(lat, lng);
	double		angle = 0;

	if (b->x1 - b->x0 > 90.0 || b->y1 - b->y0 > 90.0)
		return 0;
	angle = Max(angle, s2_point_angle(center, s2_point_from_latlng(b->y0, b->x0)));
	angle = Max(angle, s2_point_angle(center, s2_point_from_latlng(b->y0, b->x1)));
	angle = Max(angle, s2_point_angle(center, s2_point_from_latlng(b->y1, b->x0)));
	angle = Max(angle, s2_point_angle(center, s2_point_from_latlng(b->y1, b->x1)));
	return s2_cap_neighborhood(center, angle * (1 + 1e-9) + GR_ANGLE_SLACK, cells);
}

int
georegion_cover(GeoRegion *r, int max_cells, int dense_level, GeoCoverCell **cells)
{
	GrCandList	result = {NULL, 0, 0};
	GrCandList	cur = {NULL, 0, 0};
	GrCandList	next = {NULL, 0, 0};
	GeoCoverCell *out;
	S2CellId	start[9];
	int			nstart;
	int			f;
	int			i;

	ensure_index(r);
	max_cells = Max(max_cells, 1);

	/*
	 * A cap within one face starts from the few cells around its center
	 * that hold it, at the deepest level where they do: evaluating every
	 * level from the faces down would cost a few hundred cell-to-cap
	 * distances for a city-sized cap, most of them for cells it lies
	 * wholly inside of or far from.  A small planar polygon starts from
	 * those of the cap around its vertices' box.
	 */
	nstart = (r->kind == GR_CAP) ? s2_cap_neighborhood(r->center, r->outer, start) :
		(r->kind == GR_PLANAR) ? planar_start_cells(r, start) : 0;
	for (f = 0; f < (nstart > 0 ? nstart : S2_NUM_FACES); f++)
	{
		GrCand		c;

		c.id = nstart > 0 ? start[f] : s2_cellid_from_face(f);
		c.level = s2_cellid_level(c.id);
		c.node = (r->kind == GR_GEODESIC) ? r->planes[f].root :
			(r->kind == GR_PLANAR) ? r->planes[0].root : NULL;
		cand_eval(r, &c);
		if (c.rel == GEO_INSIDE)
			cand_push(&result, &c);
		else if (c.rel == GEO_PARTIAL)
			cand_push(&cur, &c);
	}

	/* levels in increasing order: largest cells first */
	while (cur.n > 0)
	{
		GrCandList	tmp;

		for (i = 0; i < cur.n; i++)
		{
			GrCand	   *c = &cur.items[i];
			GrCand		ch[4];
			int			pending = result.n + (cur.n - i) + next.n;
			bool		dense = c->level <= dense_level && pending < GR_DENSE_MAX_CELLS;
			int			nc = 0;
			int			ninside = 0;
			int			j;

			CHECK_FOR_INTERRUPTS();
			if (c->level >= S2_MAX_LEVEL)
			{
				cand_push(&result, c);
				continue;
			}

			/*
			 * Past the budget, cells known to be sparse stay whole: their
			 * children's evaluation costs more than the few entries they
			 * could rule out.
			 */
			if (dense_level >= 0 && !dense && pending > max_cells)
			{
				cand_push(&result, c);
				continue;
			}
			if (r->kind == GR_GEODESIC && c->node->child == NULL)
				node_split(r, &r->planes[s2_cellid_face(c->id)], c->node);
			for (j = 0; j < 4; j++)
			{
				GrCand		k;

				k.id = s2_cellid_child(c->id, j);
				k.level = c->level + 1;
				k.node = (r->kind == GR_GEODESIC) ? &c->node->child[j] : c->node;
				cand_eval(r, &k);
				if (k.rel == GEO_DISJOINT)
					continue;
				if (k.rel == GEO_INSIDE)
					ninside++;
				ch[nc++] = k;

				/*
				 * Past the budget only a lone child could replace the cell,
				 * and a PARTIAL one rules out four INSIDE children: the
				 * remaining children need no evaluation.
				 */
				if (!dense && nc > 1 && ninside < nc && pending + 1 > max_cells)
					break;
			}
			if (nc == 0)
				continue;		/* the region only came near the cell */
			if (ninside == 4)
			{
				c->rel = GEO_INSIDE;
				cand_push(&result, c);
				continue;
			}
			/* a single child replaces its parent for free */
			if (!dense && nc > 1 && pending - 1 + nc > max_cells)
			{
				cand_push(&result, c);
				continue;
			}
			for (j = 0; j < nc; j++)
				cand_push(ch[j].rel == GEO_INSIDE ? &result : &next, &ch[j]);
		}
		tmp = cur;
		cur = next;
		next = tmp;
		next.n = 0;
	}

	if (result.n > 1)
		qsort(result.items, result.n, sizeof(GrCand), cand_cmp);
	out = palloc(Max(result.n, 1) * sizeof(GeoCoverCell));
	if (r->cover_nodes)
		pfree(r->cover_nodes);
	r->cover_nodes = NULL;
	if (r->cover_ids)
		pfree(r->cover_ids);
	r->cover_ids = NULL;
	if (r->kind != GR_CAP)
		r->cover_nodes = region_alloc(r, Max(result.n, 1) * sizeof(GrNode *));
	for (i = 0; i < result.n; i++)
	{
		out[i].cellid = result.items[i].id;
		out[i].relation = result.items[i].rel;
		if (r->cover_nodes)
			r->cover_nodes[i] = result.items[i].node;
	}
	r->ncover = result.n;
	if (result.items)
		pfree(result.items);
	if (cur.items)
		pfree(cur.items);
	if (next.items)
		pfree(next.items);
	*cells = out;
	return result.n;
}

void
georegion_adopt_cover(GeoRegion *r, int ncells, const GeoCoverCell *cells)
{
	GrNode	  **nodes;
	S2CellId   *ids;

	Assert(r->kind != GR_CAP);
	ensure_index(r);
	nodes = region_alloc(r, Max(ncells, 1) * sizeof(GrNode *));
	ids = region_alloc(r, Max(ncells, 1) * sizeof(S2CellId));
	for (int i = 0; i < ncells; i++)
	{
		nodes[i] = NULL;
		ids[i] = cells[i].cellid;
	}
	if (r->cover_nodes)
		pfree(r->cover_nodes);
	if (r->cover_ids)
		pfree(r->cover_ids);
	r->cover_nodes = nodes;
	r->cover_ids = ids;
	r->ncover = ncells;
}

/*
 * The node decisions in covering cell i start from.  An adopted covering
 * finds it on first use, as georegion_cover would have: on a face, the
 * cell's own node; in the plane, the smallest node holding the cell grown
 * by a leaf's margin.  Only cells whose entries need a decision pay for
 * the descent, so a scan of a polygon whose covering another backend made
 * splits only the quadtree nodes its entries lead to.
 */
static GrNode *
cover_node(GeoRegion *r, int i)
{
	GrNode	   *node = r->cover_nodes[i];
	S2CellId	id;

	if (node != NULL)
		return node;
	id = r->cover_ids[i];
	if (r->kind == GR_GEODESIC)
	{
		const GrPlane *pl = &r->planes[s2_cellid_face(id)];
		int			level = s2_cellid_level(id);

		node = pl->root;
		while (node->level < level)
		{
			if (node->child == NULL)
				node_split(r, pl, node);
			node = &node->child[(id >> (2 * (S2_MAX_LEVEL - node->level) - 1)) & 3];
		}
	}
	else
	{
		node = r->planes[0].root;
		(void) planar_cell_relation(r, id, &node);
	}
	r->cover_nodes[i] = node;
	return node;
}

GeoRelation
georegion_relate_leaf(GeoRegion *r, int cover_index, S2CellId leaf)
{
	Assert(cover_index >= 0 && cover_index < r->ncover);
	switch (r->kind)
	{
		case GR_CAP:
			return cap_leaf_relation(r, leaf);
		case GR_PLANAR:
			return planar_leaf_relation(r, cover_node(r, cover_index), leaf);
		case GR_GEODESIC:
			return geodesic_leaf_relation(r, cover_node(r, cover_index), leaf);
	}
	return GEO_PARTIAL;			/* keep compiler quiet */
}

/*
 * Entries come in cell id order, so the next point is most often in the
 * quadtree node where the last one's decision ended: start there when it
 * holds the point, else from the covering cell's node.
 */
GeoRelation
georegion_relate_planar_point(GeoRegion *r, int cover_index, double lng, double lat)
{
	GrPlane    *pl = &r->planes[0];
	GrNode	   *start = r->point_hint;
	GrRect		q;
	int			relation;

	Assert(r->kind == GR_PLANAR && cover_index >= 0 && cover_index < r->ncover);
	/*
	 * The point's own coordinates are what ST_Intersects reads: unlike a
	 * leaf cell's (see planar_pieces), they need no margin but rounding
	 * slack, and lng 180 is not lng -180 to planar edges.
	 */
	q.x0 = Max(lng - GR_DEG_SLACK, -180.0);
	q.x1 = Min(lng + GR_DEG_SLACK, 180.0);
	q.y0 = Max(lat - GR_DEG_SLACK, -90.0);
	q.y1 = Min(lat + GR_DEG_SLACK, 90.0);
	if (start == NULL || !rect_within(&q, &start->rect))
		start = cover_node(r, cover_index);
	if (!rect_within(&q, &start->rect))
		start = pl->root;
	relation = planar_point_classify(r, pl, start, &q, lng, lat, &start);
	r->point_hint = start;
	/* the root box holds every point, so the relation is never NONE */
	Assert(relation != GR_REL_NONE);
	return (GeoRelation) relation;
}

/*
 * The position of cell in r->sorted_cells, or -1.  Scans ask for cells
 * roughly in key order, so the search gallops from where the last one
 * ended: it reads a few neighbouring ids instead of a hash bucket anywhere
 * in memory.
 */
static int
sorted_memo_find(GeoRegion *r, S2CellId cell)
{
	const S2CellId *ids = r->sorted_cells;
	int			n = r->nsorted;
	int			lo;
	int			hi;
	int			step = 1;

	if (ids[r->sorted_finger] < cell)
	{
		/* ids[lo - 1] < cell */
		lo = r->sorted_finger + 1;
		while (lo + step - 1 < n && ids[lo + step - 1] < cell)
		{
			lo += step;
			step <<= 1;
		}
		hi = Min(lo + step - 1, n);
	}
	else
	{
		/* ids[hi] >= cell */
		hi = r->sorted_finger;
		while (hi - step >= 0 && ids[hi - step] >= cell)
		{
			hi -= step;
			step <<= 1;
		}
		lo = Max(hi - step + 1, 0);
	}
	/* the first id >= cell is in [lo, hi] */
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (ids[mid] < cell)
			lo = mid + 1;
		else
			hi = mid;
	}
	r->sorted_finger = Min(lo, n - 1);
	return (lo < n && ids[lo] == cell) ? lo : -1;
}

static int
memo_entry_cmp(const void *a, const void *b)
{
	S2CellId	x = ((const GrCellMemoEntry *) a)->cellid;
	S2CellId	y = ((const GrCellMemoEntry *) b)->cellid;

	return (x > y) - (x < y);
}

/*
 * Re-sorting every decision costs far more than a scan that added a few
 * gains from them, so unless forced it waits until the hash holds this
 * many more (and an eighth more) than the sorted copy
 */
#define GR_SETTLE_MIN_NEW	256

void
georegion_settle(GeoRegion *r, bool force)
{
	cellmemo_iterator iter;
	GrCellMemoEntry *memo;
	GrCellMemoEntry *entries;
	S2CellId   *cells;
	uint8	   *relations;
	int			nnew;
	int			n = 0;

	if (r->cell_memo == NULL)
		return;
	nnew = (int) r->cell_memo->members - r->nsorted;
	if (nnew == 0 || (!force && nnew < Max(GR_SETTLE_MIN_NEW, r->nsorted / 8)))
		return;
	entries = region_alloc(r, sizeof(GrCellMemoEntry) * r->cell_memo->members);
	cellmemo_start_iterate(r->cell_memo, &iter);
	while ((memo = cellmemo_iterate(r->cell_memo, &iter)) != NULL)
		entries[n++] = *memo;
	qsort(entries, n, sizeof(GrCellMemoEntry), memo_entry_cmp);
	cells = region_alloc(r, sizeof(S2CellId) * n);
	relations = region_alloc(r, n);
	for (int i = 0; i < n; i++)
	{
		cells[i] = entries[i].cellid;
		relations[i] = entries[i].relation;
	}
	pfree(entries);
	if (r->sorted_cells != NULL)
	{
		pfree(r->sorted_cells);
		pfree(r->sorted_relations);
	}
	r->sorted_cells = cells;
	r->sorted_relations = relations;
	r->nsorted = n;
	r->sorted_finger = 0;
}

/*
 * Decisions are remembered: the same crowds come back with each scan of a
 * cached region (geo_regioncache.c), and a lookup costs a small fraction of
 * a decision
 */
GeoRelation
georegion_relate_planar_cell(GeoRegion *r, int cover_index, S2CellId cell)
{
	GrNode	   *start;
	GrCellMemoEntry *memo;
	GeoRelation relation;
	bool		found;

	Assert(r->kind == GR_PLANAR && cover_index >= 0 && cover_index < r->ncover);
	if (r->nsorted > 0)
	{
		int			pos = sorted_memo_find(r, cell);

		if (pos >= 0)
			return (GeoRelation) r->sorted_relations[pos];
	}
	if (r->cell_memo == NULL)
		r->cell_memo = cellmemo_create(r->mcxt, 256, NULL);
	memo = cellmemo_lookup(r->cell_memo, cell);
	if (memo != NULL)
		return (GeoRelation) memo->relation;
	start = cover_node(r, cover_index);
	relation = planar_cell_relation(r, cell, &start);
	if (r->cell_memo->members < GR_CELL_MEMO_MAX)
	{
		memo = cellmemo_insert(r->cell_memo, cell, &found);
		memo->relation = (uint8) relation;
	}
	return relation;
}

bool
georegion_is_planar(const GeoRegion *r)
{
	return r->kind == GR_PLANAR;
}

int
georegion_nvertices(const GeoRegion *r)
{
	return r->nvertices;
}
