/*-------------------------------------------------------------------------
 *
 * s2cell.c
 *	  S2 cell geometry for archer (see s2cell.h).
 *
 * Coordinate systems, following the S2 design:
 *
 *	xyz		a direction in 3-space (points on the unit sphere)
 *	(face, u, v)	the cube face the point projects to, and the gnomonic
 *			coordinates on that face, each in [-1, 1]
 *	(face, s, t)	u and v passed through the quadratic projection so that
 *			cells have roughly equal areas, each in [0, 1]
 *	(face, i, j)	s and t scaled to leaf-cell integer coordinates in
 *			[0, 2^30 - 1]
 *	cell id		face in the top 3 bits, then the Hilbert-curve position of
 *			the leaf (2 bits per level, 30 levels), then a trailing 1
 *			bit; a cell at level L keeps the first L position digits,
 *			then a 1 bit, then zeros
 *
 * (i, j) becomes a Hilbert position four levels at a time through a
 * 1024-entry lookup table built on first use; the way back is computed for
 * all levels at once (to_face_ij).
 *
 * Cell geometry is set up in the cell face's own (u, v, w) frame, where the
 * cell is the cone { t : t.w > 0, u0 <= t.u/t.w <= u1, v0 <= t.v/t.w <= v1 }
 * and its edge-plane normals are exact functions of u0, u1, v0, v1.  The
 * distance and bound routines only use sign tests and atan2 of cross/dot
 * products, which are invariant under positive scaling, so cell vertices
 * never need to be normalized for them.
 *
 * Plain C99 with no PostgreSQL dependencies: the test oracle in
 * test/s2oracle links this file directly.
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "s2cell.h"

/*
 * Cell ids must match S2 bit for bit, including points that land exactly on
 * a leaf boundary, so expressions like 2^30 * s - 0.5 must be rounded step by
 * step and not fused into FMAs (which gcc does by default on e.g. aarch64).
 * libs2 turns contraction off the same way.
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* number of leaf cells along one edge of a face */
#define S2_LIM_IJ		(1 << S2_MAX_LEVEL)
/* the (si, ti) grid has twice the resolution of (i, j) */
#define S2_MAX_SITI		(UINT64_C(1) << (S2_MAX_LEVEL + 1))

/* Hilbert curve orientation bits */
#define S2_SWAP_MASK	1		/* i and j exchanged */
#define S2_INVERT_MASK	2		/* traversal direction reversed */

/* levels handled per lookup step */
#define S2_LOOKUP_BITS	4

/*
 * Absolute slack applied to computed angles so the distance bounds stay
 * conservative.  The angles come from atan2 of dot/cross products whose
 * rounding error is a few units in the last place of 1, i.e. a few times
 * 1e-16 radians regardless of the angle's size; 1e-14 rad (well under a
 * micrometre on the Earth) covers that with a wide margin.
 */
#define S2_ANGLE_EPS	1e-14
/*
 * Cosines of angles are compared with this margin, well above the rounding
 * of a dot product of unit vectors; so the vertex tests of
 * s2_cell_cap_quick only decide "inside" for caps wider than
 * S2_QUICK_MIN_ANGLE (about 64 m), where 1 - cos(angle) dwarfs it.
 */
#define S2_COS_EPS		1e-14
#define S2_QUICK_MIN_ANGLE	1e-5

/*
 * Padding of the lat/lng rectangle bound, degrees: its angles come from
 * atan2_deg_portable, within 6e-6 degrees of the true ones (checked over
 * 1e8 random directions), several times cheaper than libm's atan2 and
 * called five times per cell of a planar polygon's covering
 */
#define S2_RECT_EPS_DEG 2e-5

#define RAD_TO_DEG		(180.0 / M_PI)
#define DEG_TO_RAD		(M_PI / 180.0)

/*
 * The Hilbert curve's base pattern.  For a cell with orientation o, the
 * child at curve position p (0..3) lies in quadrant pos_to_ij[o][p], where a
 * quadrant is encoded as (i_bit << 1) | j_bit.  A child's orientation is its parent's XOR pos_to_orientation[p]: the first
 * child is traversed with i and j swapped, the last one swapped and reversed.
 */
static const int pos_to_ij[4][4] = {
	{0, 1, 3, 2},				/* canonical:  (0,0) (0,1) (1,1) (1,0) */
	{0, 2, 3, 1},				/* swapped:    (0,0) (1,0) (1,1) (0,1) */
	{3, 2, 0, 1},				/* inverted:   (1,1) (1,0) (0,0) (0,1) */
	{3, 1, 0, 2},				/* both:       (1,1) (0,1) (0,0) (1,0) */
};

static const int pos_to_orientation[4] = {
	S2_SWAP_MASK, 0, 0, S2_SWAP_MASK | S2_INVERT_MASK
};

/*
 * lookup_pos[(i4 << 6) | (j4 << 2) | orientation] = (pos8 << 2) | orientation'
 * where i4, j4 are 4 bits of i and j, pos8 the matching 8 bits of Hilbert
 * position, and orientation' the orientation after those four levels.
 */
static uint16_t lookup_pos[1 << (2 * S2_LOOKUP_BITS + 2)];
static bool lookup_ready = false;

static void init_lookup_cell(int level, int i, int j, int orig_orientation,
							 int pos, int orientation);
static void init_lookup(void);


/* ------------------------------------------------------------------------
 * Lookup tables
 * ------------------------------------------------------------------------
 */

/*
 * Walk the Hilbert curve S2_LOOKUP_BITS levels down from a cell entered with
 * orig_orientation, recording for every sub-cell the (i, j) <-> position
 * correspondence and the orientation in effect after it.
 */
static void
init_lookup_cell(int level, int i, int j, int orig_orientation,
				 int pos, int orientation)
{
	int			k;

	if (level == S2_LOOKUP_BITS)
	{
		int			ij = (i << S2_LOOKUP_BITS) | j;

		lookup_pos[(ij << 2) | orig_orientation] =
			(uint16_t) ((pos << 2) | orientation);
		return;
	}

	for (k = 0; k < 4; k++)
	{
		int			q = pos_to_ij[orientation][k];

		init_lookup_cell(level + 1,
						 (i << 1) | (q >> 1),
						 (j << 1) | (q & 1),
						 orig_orientation,
						 (pos << 2) | k,
						 orientation ^ pos_to_orientation[k]);
	}
}

static void
init_lookup(void)
{
	int			o;

	if (lookup_ready)
		return;
	for (o = 0; o < 4; o++)
		init_lookup_cell(0, 0, 0, o, 0, o);
	lookup_ready = true;
}

void
s2_init(void)
{
	init_lookup();
}


/* ------------------------------------------------------------------------
 * Projections
 * ------------------------------------------------------------------------
 */

/* quadratic projection, u in [-1,1] -> s in [0,1] */
static inline double
uv_to_st(double u)
{
	if (u >= 0)
		return 0.5 * sqrt(1 + 3 * u);
	else
		return 1 - 0.5 * sqrt(1 - 3 * u);
}

/* inverse of uv_to_st */
static inline double
st_to_uv(double s)
{
	if (s >= 0.5)
		return (1 / 3.) * (4 * s * s - 1);
	else
		return (1 / 3.) * (1 - 4 * (1 - s) * (1 - s));
}

/*
 * s -> leaf coordinate: round(2^30 * s - 0.5) with ties to even (the
 * default IEEE rounding S2 uses), clamped to [0, 2^30 - 1].  NaN maps to 0.
 */
static inline int
st_to_ij(double s)
{
	double		x = (double) S2_LIM_IJ * s - 0.5;
	int			k;
	double		frac;

	if (!(x > 0))
		return 0;
	if (x >= (double) (S2_LIM_IJ - 1))
		return S2_LIM_IJ - 1;
	/*
	 * 0 < x < 2^30: truncation is floor, and x - k is exact.  Round up
	 * above one half, and at exactly one half when k is odd; written
	 * without branches since the outcome is unpredictable.
	 */
	k = (int) x;
	frac = x - k;
	k += (frac > 0.5) | ((frac == 0.5) & (k & 1));
	return k;
}

/* lower edge of leaf coordinate i (or of any cell starting there), in s */
static inline double
ij_to_st_min(int i)
{
	return (1.0 / S2_LIM_IJ) * i;
}

/* ------------------------------------------------------------------------
 * Vector helpers
 * ------------------------------------------------------------------------
 */

double
s2_point_dot(S2Point a, S2Point b)
{
	return a.x * b.x + a.y * b.y + a.z * b.z;
}

S2Point
s2_point_cross(S2Point a, S2Point b)
{
	S2Point		r;

	r.x = a.y * b.z - a.z * b.y;
	r.y = a.z * b.x - a.x * b.z;
	r.z = a.x * b.y - a.y * b.x;
	return r;
}

static inline double
vec_norm(S2Point a)
{
	return sqrt(a.x * a.x + a.y * a.y + a.z * a.z);
}

static inline S2Point
vec_neg(S2Point a)
{
	S2Point		r;

	r.x = -a.x;
	r.y = -a.y;
	r.z = -a.z;
	return r;
}

S2Point
s2_point_normalize(S2Point p)
{
	double		n = vec_norm(p);

	/* scale by the reciprocal, like S2's Vector3::Normalize */
	if (n != 0)
		n = 1.0 / n;
	p.x *= n;
	p.y *= n;
	p.z *= n;
	return p;
}

/* angle between a and b; scale-invariant, accurate near 0 and pi */
double
s2_point_angle(S2Point a, S2Point b)
{
	return atan2(vec_norm(s2_point_cross(a, b)), s2_point_dot(a, b));
}

S2Point
s2_point_from_latlng(double lat_deg, double lng_deg)
{
	double		phi = lat_deg * DEG_TO_RAD;
	double		theta = lng_deg * DEG_TO_RAD;
	double		cosphi = cos(phi);
	S2Point		p;

	p.x = cos(theta) * cosphi;
	p.y = sin(theta) * cosphi;
	p.z = sin(phi);
	return p;
}

void
s2_latlng_from_point(S2Point p, double *lat_deg, double *lng_deg)
{
	*lat_deg = atan2(p.z, sqrt(p.x * p.x + p.y * p.y)) * RAD_TO_DEG;
	/* adding 0.0 turns -0 into +0, so (-0, -0, z) gets longitude 0 like S2 */
	*lng_deg = atan2(p.y + 0.0, p.x + 0.0) * RAD_TO_DEG;
}


/* ------------------------------------------------------------------------
 * Cell ids
 * ------------------------------------------------------------------------
 */

static inline uint64_t
lsb_for_level(int level)
{
	return UINT64_C(1) << (2 * (S2_MAX_LEVEL - level));
}

static inline uint64_t
id_lsb(S2CellId id)
{
	return id & (~id + 1);
}

static S2CellId
from_face_ij(int face, int i, int j)
{
	uint64_t	n = (uint64_t) face << 60;
	int			bits = face & S2_SWAP_MASK;
	int			k;

	/*
	 * Eight steps of four levels cover 32 levels; the first step sees two
	 * leading zero levels in i and j.  Each of those maps to position 0 and
	 * flips the swap bit, so they cancel (the face's starting orientation
	 * has no invert bit) and contribute zeros above the face bits.
	 */
	for (k = 7; k >= 0; k--)
	{
		bits += ((i >> (k * S2_LOOKUP_BITS)) & 15) << (S2_LOOKUP_BITS + 2);
		bits += ((j >> (k * S2_LOOKUP_BITS)) & 15) << 2;
		bits = lookup_pos[bits];
		n |= (uint64_t) (bits >> 2) << (k * 2 * S2_LOOKUP_BITS);
		bits &= S2_SWAP_MASK | S2_INVERT_MASK;
	}
	return n * 2 + 1;
}

/* The even bits of x, packed: bit 2k goes to bit k */
static inline uint32_t
compact_even_bits(uint64_t x)
{
	x &= UINT64_C(0x5555555555555555);
	x = (x | (x >> 1)) & UINT64_C(0x3333333333333333);
	x = (x | (x >> 2)) & UINT64_C(0x0F0F0F0F0F0F0F0F);
	x = (x | (x >> 4)) & UINT64_C(0x00FF00FF00FF00FF);
	x = (x | (x >> 8)) & UINT64_C(0x0000FFFF0000FFFF);
	x = (x | (x >> 16)) & UINT64_C(0x00000000FFFFFFFF);
	return (uint32_t) x;
}

/* Bit k of the result: the XOR of the bits of x above bit k */
static inline uint32_t
xor_of_higher_bits(uint32_t x)
{
	x ^= x >> 1;
	x ^= x >> 2;
	x ^= x >> 4;
	x ^= x >> 8;
	x ^= x >> 16;
	return x >> 1;
}

/*
 * Face and leaf (i, j) of id.  For a non-leaf cell this decodes the trailing
 * 1 bit as a position digit too, which yields some leaf inside the cell.
 *
 * All 30 levels at once, with no table: a digit's orientation is the face's
 * flipped by the digits above it (pos_to_orientation depends on the digit
 * alone), a prefix XOR over the levels; and a digit p = (h, l) in
 * orientation o gives i = h, j = h ^ l (pos_to_ij[0]), exchanged if o swaps
 * and complemented if o inverts.  Decoding every entry of a scan, this runs
 * in about half the time of four levels per table step, whose steps wait
 * on one another.
 */
static int
to_face_ij(S2CellId id, int *pi, int *pj)
{
	const uint32_t all = (UINT32_C(1) << S2_MAX_LEVEL) - 1;
	int			face = (int) (id >> 61);
	uint64_t	digits = id >> 1;	/* level 1 in bits 59-58, level 30 in bits 1-0 */
	uint32_t	lo = compact_even_bits(digits) & all;
	uint32_t	hi = compact_even_bits(digits >> 1) & all;
	/* positions 0 and 3 swap i and j below them; position 3 also inverts */
	uint32_t	swap = xor_of_higher_bits(~(hi ^ lo) & all) ^
		((face & S2_SWAP_MASK) ? all : 0);
	uint32_t	invert = xor_of_higher_bits(hi & lo);
	uint32_t	i = (hi & ~swap) | ((hi ^ lo) & swap);
	uint32_t	j = ((hi ^ lo) & ~swap) | (hi & swap);

	*pi = (int) ((i ^ invert) & all);
	*pj = (int) ((j ^ invert) & all);
	return face;
}

S2CellId
s2_cellid_from_point(S2Point p)
{
	int			face = s2_face_of_point(p);
	double		u;
	double		v;

	init_lookup();
	s2_face_xyz_to_uv(face, p, &u, &v);
	return from_face_ij(face, st_to_ij(uv_to_st(u)), st_to_ij(uv_to_st(v)));
}

S2CellId
s2_cellid_from_face(int face)
{
	return ((uint64_t) face << 61) + lsb_for_level(0);
}

int
s2_cellid_face(S2CellId id)
{
	return (int) (id >> 61);
}

int
s2_cellid_level(S2CellId id)
{
	int			tz;

	if (id == 0)
		return -1;
#if defined(__GNUC__)
	tz = __builtin_ctzll(id);
#else
	tz = 0;
	while (((id >> tz) & 1) == 0)
		tz++;
#endif
	return S2_MAX_LEVEL - (tz >> 1);
}

bool
s2_cellid_is_valid(S2CellId id)
{
	/* face 0..5, and the lowest set bit at an even position (0..60) */
	return (id >> 61) < S2_NUM_FACES &&
		(id_lsb(id) & UINT64_C(0x1555555555555555)) != 0;
}

S2CellId
s2_cellid_parent(S2CellId id, int level)
{
	uint64_t	new_lsb = lsb_for_level(level);

	return (id & (~new_lsb + 1)) | new_lsb;
}

S2CellId
s2_cellid_child(S2CellId id, int position)
{
	uint64_t	new_lsb = id_lsb(id) >> 2;

	/* id - lsb is where the children start; child k's id is at odd offsets */
	return id - 4 * new_lsb + (uint64_t) (2 * position + 1) * new_lsb;
}

S2CellId
s2_cellid_range_min(S2CellId id)
{
	return id - (id_lsb(id) - 1);
}

S2CellId
s2_cellid_range_max(S2CellId id)
{
	return id + (id_lsb(id) - 1);
}

bool
s2_cellid_contains(S2CellId cell, S2CellId other)
{
	return other >= s2_cellid_range_min(cell) &&
		other <= s2_cellid_range_max(cell);
}

int
s2_cellid_common_level(S2CellId a, S2CellId b)
{
	/* the highest bit where the ids differ, or either's level bit if higher */
	uint64_t	bits = a ^ b;
	int			msb;

	if (bits < id_lsb(a))
		bits = id_lsb(a);
	if (bits < id_lsb(b))
		bits = id_lsb(b);
#if defined(__GNUC__)
	msb = 63 - __builtin_clzll(bits);
#else
	msb = 63;
	while ((bits >> msb) == 0)
		msb--;
#endif
	if (msb > 60)
		return -1;
	return (60 - msb) >> 1;
}

S2Point
s2_cellid_to_point(S2CellId id)
{
	int			i;
	int			j;
	int			face;
	int			level = s2_cellid_level(id);
	int64_t		size = (int64_t) 1 << (S2_MAX_LEVEL - level);
	int64_t		si;
	int64_t		ti;
	double		u;
	double		v;

	init_lookup();
	face = to_face_ij(id, &i, &j);

	/*
	 * Center in the doubled (si, ti) grid: twice the low corner plus the
	 * cell size (for a leaf, 2i + 1).
	 */
	si = 2 * ((int64_t) i & ~(size - 1)) + size;
	ti = 2 * ((int64_t) j & ~(size - 1)) + size;
	u = st_to_uv((1.0 / (double) S2_MAX_SITI) * (double) si);
	v = st_to_uv((1.0 / (double) S2_MAX_SITI) * (double) ti);
	return s2_point_normalize(s2_face_uv_to_xyz(face, u, v));
}

/*
 * atan(z) for |z| <= tan(pi/8) by its Taylor series up to z^13: relative
 * error below 4e-7 there
 */
static double
atan_reduced(double z)
{
	double		z2 = z * z;
	double		p = 1.0 / 13;

	p = p * z2 - 1.0 / 11;
	p = p * z2 + 1.0 / 9;
	p = p * z2 - 1.0 / 7;
	p = p * z2 + 1.0 / 5;
	p = p * z2 - 1.0 / 3;
	p = p * z2 + 1.0;
	return z * p;
}

/*
 * atan2(y, x) in degrees from basic arithmetic (libm's may differ by machine),
 * within 6e-6 degrees of it, and several times faster
 */
static double
atan2_deg_portable(double y, double x)
{
	double		ax = fabs(x);
	double		ay = fabs(y);
	double		big = ax > ay ? ax : ay;
	double		small = ax > ay ? ay : ax;
	double		angle;

	if (big == 0)
		return 0;
	/* atan(s/b) = pi/4 + atan((s - b) / (s + b)), for s/b above tan(pi/8) */
	if (small > 0.41421356237309503 * big)
		angle = M_PI_4 + atan_reduced((small - big) / (small + big));
	else
		angle = atan_reduced(small / big);
	if (ay > ax)
		angle = M_PI_2 - angle;
	if (x < 0)
		angle = M_PI - angle;
	if (y < 0)
		angle = -angle;
	return angle * RAD_TO_DEG;
}

void
s2_cellid_approx_latlng(S2CellId leaf, double *lat_deg, double *lng_deg)
{
	int			i;
	int			j;
	int			face;
	S2Point		p;

	init_lookup();
	face = to_face_ij(leaf, &i, &j);
	p = s2_face_uv_to_xyz(face,
					   st_to_uv((1.0 / (double) S2_MAX_SITI) * (double) (2 * (int64_t) i + 1)),
					   st_to_uv((1.0 / (double) S2_MAX_SITI) * (double) (2 * (int64_t) j + 1)));
	*lat_deg = atan2_deg_portable(p.z, sqrt(p.x * p.x + p.y * p.y));
	*lng_deg = atan2_deg_portable(p.y, p.x);
}


/* ------------------------------------------------------------------------
 * Cell geometry
 * ------------------------------------------------------------------------
 */

/* face and uv bounds of a cell: u in [uv[0], uv[1]], v in [uv[2], uv[3]] */
static int
cell_bound_uv(S2CellId id, double uv[4])
{
	int			i;
	int			j;
	int			face;
	int			level = s2_cellid_level(id);
	int			size;
	int			ilo;
	int			jlo;

	if (level < 0)				/* id 0: not a cell; avoid shifting by 31 */
		level = 0;
	size = 1 << (S2_MAX_LEVEL - level);
	init_lookup();
	face = to_face_ij(id, &i, &j);
	ilo = i & -size;
	jlo = j & -size;
	uv[0] = st_to_uv(ij_to_st_min(ilo));
	uv[1] = st_to_uv(ij_to_st_min(ilo + size));
	uv[2] = st_to_uv(ij_to_st_min(jlo));
	uv[3] = st_to_uv(ij_to_st_min(jlo + size));
	return face;
}

/*
 * Is t (in the cell face's uvw frame) inside the cell, boundary included?
 * The four edge planes pass through the origin; these four half-space
 * tests together also imply t.w > 0, since the cell spans less than a
 * hemisphere.
 */
static inline bool
uvw_in_cell(const double uv[4], S2Point t)
{
	return t.x - uv[0] * t.z >= 0 &&
		uv[1] * t.z - t.x >= 0 &&
		t.y - uv[2] * t.z >= 0 &&
		uv[3] * t.z - t.y >= 0;
}

/*
 * The cell's vertices in its face's uvw frame, unnormalized, CCW as seen
 * from outside, and the normals of its edges: n[k] is a positive multiple of
 * v[k] x v[k+1], i.e. the inward normal of edge k.  Computing the normals
 * from the uv bounds directly (instead of as cross products of nearly
 * parallel vertices) keeps them exact, whatever the cell size.
 */
static inline void
cell_geometry_uvw(const double uv[4], S2Point v[4], S2Point n[4])
{
	v[0].x = uv[0];
	v[0].y = uv[2];
	v[1].x = uv[1];
	v[1].y = uv[2];
	v[2].x = uv[1];
	v[2].y = uv[3];
	v[3].x = uv[0];
	v[3].y = uv[3];
	v[0].z = v[1].z = v[2].z = v[3].z = 1;

	/* bottom (v = v0), right (u = u1), top (v = v1), left (u = u0) */
	n[0].x = 0;
	n[0].y = 1;
	n[0].z = -uv[2];
	n[1].x = -1;
	n[1].y = 0;
	n[1].z = uv[1];
	n[2].x = 0;
	n[2].y = -1;
	n[2].z = uv[3];
	n[3].x = 1;
	n[3].y = 0;
	n[3].z = -uv[0];
}

void
s2_cell_vertices(S2CellId id, S2Point vertices[4])
{
	double		uv[4];
	int			face = cell_bound_uv(id, uv);

	vertices[0] = s2_point_normalize(s2_face_uv_to_xyz(face, uv[0], uv[2]));
	vertices[1] = s2_point_normalize(s2_face_uv_to_xyz(face, uv[1], uv[2]));
	vertices[2] = s2_point_normalize(s2_face_uv_to_xyz(face, uv[1], uv[3]));
	vertices[3] = s2_point_normalize(s2_face_uv_to_xyz(face, uv[0], uv[3]));
}

/*
 * Is point m, lying on the great circle through a and b (n a positive
 * multiple of a x b), strictly inside the minor arc from a to b?
 */
static inline bool
on_circle_in_arc(S2Point a, S2Point b, S2Point n, S2Point m)
{
	return s2_point_dot(s2_point_cross(a, m), n) > 0 &&
		s2_point_dot(s2_point_cross(m, b), n) > 0;
}

/*
 * A proxy for the angle between two directions that needs no arctangent
 * and orders angles exactly: acute angles by their squared chord (through
 * the sine, exact for tiny angles), obtuse ones by the squared chord to the
 * antipode (exact near pi), every acute angle before every obtuse one.
 */
typedef struct AngleKey
{
	bool		obtuse;
	double		value;			/* acute: chord^2 to b; obtuse: chord^2 to -b */
} AngleKey;

static inline bool
angle_key_less(AngleKey x, AngleKey y)
{
	if (x.obtuse != y.obtuse)
		return !x.obtuse;
	return x.obtuse ? x.value > y.value : x.value < y.value;
}

static AngleKey
direction_key(S2Point a, S2Point b)
{
	double		norms = sqrt(s2_point_dot(a, a) * s2_point_dot(b, b));
	double		cosine = s2_point_dot(a, b) / norms;
	S2Point		c = s2_point_cross(a, b);
	double		sine2 = s2_point_dot(c, c) / (norms * norms);
	AngleKey	key;

	key.obtuse = cosine < 0;
	/* 2 (1 - |cos|) = 2 sin^2 / (1 + |cos|) */
	key.value = 2 * sine2 / (1 + fabs(cosine));
	return key;
}

/*
 * The nearest point of the minor arc a-b (normal n, a positive multiple of
 * a x b; nothing need be unit length) to p: if p's projection onto the
 * arc's great circle falls inside the arc it is that projection (the
 * in-arc test is applied to p itself: the projection differs from p by a
 * multiple of n, which the triple products ignore), else an endpoint.
 * Returns its angle key and sets *which to 0 (the projection), 1 (a) or
 * 2 (b).
 */
static AngleKey
arc_key(S2Point p, S2Point a, S2Point b, S2Point n, int *which)
{
	AngleKey	ka;
	AngleKey	kb;

	if (on_circle_in_arc(a, b, n, p))
	{
		double		pn = s2_point_dot(p, n);
		double		sine2 = pn * pn / (s2_point_dot(p, p) * s2_point_dot(n, n));
		AngleKey	key;

		/* the angle to a great circle is at most pi/2 */
		*which = 0;
		key.obtuse = false;
		key.value = 2 * sine2 / (1 + sqrt(1 - sine2));
		return key;
	}
	ka = direction_key(p, a);
	kb = direction_key(p, b);
	*which = angle_key_less(kb, ka) ? 2 : 1;
	return *which == 1 ? ka : kb;
}

/*
 * min angle from p to the cell, without slack.  Candidates are compared
 * by angle key; only the winner's angle is computed, accurately.
 */
static double
cell_min_angle_raw(S2CellId id, S2Point p)
{
	double		uv[4];
	int			face = cell_bound_uv(id, uv);
	S2Point		t = s2_face_xyz_to_uvw(face, p);
	S2Point		v[4];
	S2Point		n[4];
	AngleKey	best = {false, 0};
	int			best_edge = -1;
	int			best_which = 0;
	int			k;

	if (uvw_in_cell(uv, t))
		return 0;

	/* outside: the closest point of the cell lies on its boundary */
	cell_geometry_uvw(uv, v, n);
	for (k = 0; k < 4; k++)
	{
		int			which;
		AngleKey	d = arc_key(t, v[k], v[(k + 1) & 3], n[k], &which);

		if (best_edge < 0 || angle_key_less(d, best))
		{
			best = d;
			best_edge = k;
			best_which = which;
		}
	}
	if (best_which == 0)
		return atan2(fabs(s2_point_dot(t, n[best_edge])),
					 vec_norm(s2_point_cross(t, n[best_edge])));
	return s2_point_angle(t, best_which == 1 ? v[best_edge] : v[(best_edge + 1) & 3]);
}

double
s2_cell_min_angle(S2CellId id, S2Point p)
{
	double		d = cell_min_angle_raw(id, p) - S2_ANGLE_EPS;

	return d > 0 ? d : 0;
}

/*
 * Does the uv rectangle of a face hold every point within angle of t (in
 * the face's uvw frame)?  Its edges lie on four great circles, so t inside
 * and farther than angle from each of them suffices; the sine of the
 * angular distance to a circle is t's dot product with the circle's unit
 * normal.  Conservative: false when in doubt.
 */
static bool
uv_rect_holds_cap(const double uv[4], S2Point t, double angle)
{
	S2Point		v[4];
	S2Point		n[4];
	double		need;
	double		tnorm = vec_norm(t);

	if (angle + S2_ANGLE_EPS >= M_PI_2)
		return false;
	need = sin(fmax(angle, 0.0) + S2_ANGLE_EPS);
	cell_geometry_uvw(uv, v, n);
	for (int k = 0; k < 4; k++)
		if (s2_point_dot(t, n[k]) <= need * tnorm * vec_norm(n[k]))
			return false;
	return true;
}

/* The block of level cells around leaf (i, j), clipped to the face, in ij */
static void
neighborhood_ij(int i, int j, int level, int block[4])
{
	int64_t		size = (int64_t) 1 << (S2_MAX_LEVEL - level);
	int64_t		ilo = (i & -size) - size;
	int64_t		ihi = (i & -size) + 2 * size;
	int64_t		jlo = (j & -size) - size;
	int64_t		jhi = (j & -size) + 2 * size;

	block[0] = (int) (ilo < 0 ? 0 : ilo);
	block[1] = (int) (ihi > S2_LIM_IJ ? S2_LIM_IJ : ihi);
	block[2] = (int) (jlo < 0 ? 0 : jlo);
	block[3] = (int) (jhi > S2_LIM_IJ ? S2_LIM_IJ : jhi);
}

int
s2_cap_neighborhood(S2Point p, double angle, S2CellId cells[9])
{
	S2CellId	leaf = s2_cellid_from_point(p);
	int			i;
	int			j;
	int			face = to_face_ij(leaf, &i, &j);
	S2Point		t = s2_face_xyz_to_uvw(face, p);
	int			best = -1;
	int			lo = 0;
	int			hi = S2_MAX_LEVEL;
	int			block[4];
	int64_t		size;
	int			ncells = 0;

	/* the blocks nest as the level grows: binary search for the deepest */
	while (lo <= hi)
	{
		int			level = (lo + hi) / 2;
		double		uv[4];

		neighborhood_ij(i, j, level, block);
		for (int k = 0; k < 4; k++)
			uv[k] = st_to_uv(ij_to_st_min(block[k]));
		if (uv_rect_holds_cap(uv, t, angle))
		{
			best = level;
			lo = level + 1;
		}
		else
			hi = level - 1;
	}
	if (best < 0)
		return 0;
	neighborhood_ij(i, j, best, block);
	size = (int64_t) 1 << (S2_MAX_LEVEL - best);
	for (int64_t ci = block[0]; ci < block[1]; ci += size)
		for (int64_t cj = block[2]; cj < block[3]; cj += size)
			cells[ncells++] = s2_cellid_parent(from_face_ij(face, (int) ci, (int) cj), best);
	return ncells;
}

void
s2_cap_quick_init(S2CapTrig *cap, S2Point center, double inner, double outer)
{
	cap->center = center;
	/* near a quarter circle the sine hardly moves: leave such caps to the exact tests */
	cap->usable = outer < M_PI_2 - 1e-3;
	cap->test_inside = inner > S2_QUICK_MIN_ANGLE && inner < M_PI_2;
	cap->sin_outer = sin(fmin(outer + S2_ANGLE_EPS, M_PI_2));
	cap->cos_outer = cos(outer) - S2_COS_EPS;
	cap->cos_inner = cos(inner) + S2_COS_EPS;
}

S2CapQuick
s2_cell_cap_quick(S2CellId id, const S2CapTrig *cap)
{
	double		uv[4];
	int			face;
	S2Point		t;
	S2Point		v[4];
	S2Point		n[4];
	double		tnorm;
	bool		inside = cap->test_inside;
	bool		meets = false;
	bool		center_in_cell = true;

	if (!cap->usable)
		return S2_CAP_UNKNOWN;
	face = cell_bound_uv(id, uv);
	t = s2_face_xyz_to_uvw(face, cap->center);
	tnorm = vec_norm(t);
	cell_geometry_uvw(uv, v, n);
	for (int k = 0; k < 4; k++)
	{
		double		tn = s2_point_dot(t, n[k]);
		double		tv = s2_point_dot(t, v[k]) / (tnorm * vec_norm(v[k]));

		/* the cell lies on the inner side of each edge circle */
		if (tn < -cap->sin_outer * tnorm * vec_norm(n[k]))
			return S2_CAP_DISJOINT;
		center_in_cell &= tn >= 0;
		/* the cap is convex: the vertices decide whether it holds the cell */
		inside &= tv >= cap->cos_inner;
		meets |= tv > cap->cos_outer;
	}
	if (inside)
		return S2_CAP_INSIDE;
	return (meets || center_in_cell) ? S2_CAP_PARTIAL : S2_CAP_UNKNOWN;
}

double
s2_cell_max_angle(S2CellId id, S2Point p)
{
	/* farthest point from p = closest point to -p, reflected */
	double		d = M_PI - cell_min_angle_raw(id, vec_neg(p)) + S2_ANGLE_EPS;

	return d < M_PI ? d : M_PI;
}

/*
 * A latitude as the direction (z, r) with r >= 0 (r the distance from the
 * axis, z the height): latitudes compare exactly by cross-multiplying, so
 * the bound below needs an arctangent only for the two extremes it keeps.
 */
typedef struct LatKey
{
	double		z;
	double		r;
} LatKey;

static inline LatKey
lat_key(S2Point p)
{
	LatKey		k = {p.z, sqrt(p.x * p.x + p.y * p.y)};

	return k;
}

static inline bool
lat_key_less(LatKey x, LatKey y)
{
	return x.z * y.r < y.z * x.r;
}

static inline double
lat_key_deg(LatKey k)
{
	return atan2_deg_portable(k.z, k.r);
}

/*
 * A monotone stand-in for atan2(s, c) over (-pi, pi] that needs no
 * arctangent ("diamond angle", in (-2, 2]): it orders the longitude offsets
 * of a cell's vertices so that only the extremes need atan2.
 */
static inline double
diamond_angle(double s, double c)
{
	double		t = fabs(s);
	double		d = c >= 0 ? t / (c + t) : 1 + (-c) / (t - c);

	return s < 0 ? -d : d;
}

/* longitude of v minus clng, in [-180, 180] degrees */
static inline double
lng_offset_deg(double clng, S2Point v)
{
	double		d = atan2_deg_portable(v.y, v.x) - clng;

	if (d > 180)
		d -= 360;
	else if (d < -180)
		d += 360;
	return d;
}

S2LatLngRect
s2_cell_rect_bound(S2CellId id)
{
	double		uv[4];
	int			face = cell_bound_uv(id, uv);
	S2Point		v[4];
	S2Point		en[4];
	S2Point		pole;
	S2Point		center;
	LatKey		lo;
	LatKey		hi;
	double		clng;
	double		amin;
	double		amax;
	int			kmin;
	int			kmax;
	bool		north;
	bool		south;
	int			k;
	S2LatLngRect r;

	/*
	 * Vertices and edge normals in xyz (unnormalized: only directions
	 * matter below; the frame change is exact).
	 */
	cell_geometry_uvw(uv, v, en);
	for (k = 0; k < 4; k++)
	{
		v[k] = s2_face_uvw_to_xyz(face, v[k]);
		en[k] = s2_face_uvw_to_xyz(face, en[k]);
	}

	/* does the cell contain a pole (boundary included)? */
	pole.x = 0;
	pole.y = 0;
	pole.z = 1;
	north = uvw_in_cell(uv, s2_face_xyz_to_uvw(face, pole));
	pole.z = -1;
	south = uvw_in_cell(uv, s2_face_xyz_to_uvw(face, pole));

	/* latitude: vertices, then edges bulging beyond their endpoints */
	lo = hi = lat_key(v[0]);
	for (k = 1; k < 4; k++)
	{
		LatKey		lat = lat_key(v[k]);

		if (lat_key_less(lat, lo))
			lo = lat;
		if (lat_key_less(hi, lat))
			hi = lat;
	}
	for (k = 0; k < 4; k++)
	{
		S2Point		a = v[k];
		S2Point		b = v[(k + 1) & 3];
		S2Point		n = en[k];
		double		nxy2 = n.x * n.x + n.y * n.y;
		LatKey		top;
		LatKey		bottom;
		S2Point		m;

		/*
		 * The great circle with normal n comes closest to the north pole at
		 * m = |n|^2 z - n_z n (the pole's projection onto its plane), where
		 * its latitude is the angle between n and the z axis folded into
		 * [0, pi/2]; the southernmost point is -m.  m vanishes for the
		 * equator.
		 */
		if (nxy2 == 0)
			continue;
		m.x = -n.z * n.x;
		m.y = -n.z * n.y;
		m.z = nxy2;
		top.z = sqrt(nxy2);
		top.r = fabs(n.z);
		bottom.z = -top.z;
		bottom.r = top.r;
		if (lat_key_less(hi, top) && on_circle_in_arc(a, b, n, m))
			hi = top;
		if (lat_key_less(bottom, lo) && on_circle_in_arc(a, b, n, vec_neg(m)))
			lo = bottom;
	}

	r.lat_lo = lat_key_deg(lo) - S2_RECT_EPS_DEG;
	r.lat_hi = lat_key_deg(hi) + S2_RECT_EPS_DEG;
	if (north)
		r.lat_hi = 90;
	if (south)
		r.lat_lo = -90;
	if (r.lat_lo < -90)
		r.lat_lo = -90;
	if (r.lat_hi > 90)
		r.lat_hi = 90;

	if (north || south)
	{
		r.lng_lo = -180;
		r.lng_hi = 180;
		return r;
	}

	/*
	 * Longitude.  Along a great-circle arc that avoids the poles longitude
	 * is monotonic and spans less than 180 degrees, so a cell without a
	 * pole has its longitude extremes at vertices, and longitude measured
	 * from the cell center varies continuously (without wrapping) over the
	 * cell.  Take the vertex offsets from the center longitude: the angle
	 * from the center's direction to the vertex's in the xy plane.
	 */
	center = s2_face_uv_to_xyz(face, 0.5 * (uv[0] + uv[1]), 0.5 * (uv[2] + uv[3]));
	clng = atan2_deg_portable(center.y, center.x);
	amin = amax = 0;
	kmin = kmax = -1;
	for (k = 0; k < 4; k++)
	{
		double		a = diamond_angle(center.x * v[k].y - center.y * v[k].x,
									  center.x * v[k].x + center.y * v[k].y);

		if (a < amin)
		{
			amin = a;
			kmin = k;
		}
		if (a > amax)
		{
			amax = a;
			kmax = k;
		}
	}
	r.lng_lo = clng - S2_RECT_EPS_DEG;
	r.lng_hi = clng + S2_RECT_EPS_DEG;
	if (kmin >= 0)
		r.lng_lo += lng_offset_deg(clng, v[kmin]);
	if (kmax >= 0)
		r.lng_hi += lng_offset_deg(clng, v[kmax]);
	if (r.lng_hi - r.lng_lo >= 360)
	{
		r.lng_lo = -180;
		r.lng_hi = 180;
		return r;
	}
	if (r.lng_lo < -180)
		r.lng_lo += 360;
	if (r.lng_hi > 180)
		r.lng_hi -= 360;
	return r;
}

double
s2_level_max_radius(int level)
{
	/*
	 * S2's kMaxDiag metric for the quadratic projection bounds the diagonal
	 * of every cell at level L by 2.438654594434021 * 2^-L.  The distance
	 * from the center to any point of a cell is at most the largest
	 * vertex-to-point distance, i.e. the longer of the diagonals and edges,
	 * and cell edges are shorter than the diagonal bound (kMaxEdge deriv
	 * 1.705), so that metric bounds the radius too.  Add 1% slack.
	 */
	if (level < 0)
		level = 0;
	if (level > S2_MAX_LEVEL)
		level = S2_MAX_LEVEL;
	return 1.01 * 2.438654594434021 * ldexp(1.0, -level);
}
