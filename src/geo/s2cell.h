/*-------------------------------------------------------------------------
 *
 * s2cell.h
 *	  S2 cell geometry for archer: points on the unit sphere, 64-bit cell ids
 *	  (cube face + Hilbert position), and the distance bounds the geo index
 *	  needs to decide inclusion from cell geometry.
 *
 * Cell ids follow Google's S2 library bit for bit (face in the top 3 bits,
 * then 2 bits per level along the Hilbert curve, then a trailing 1 bit), so
 * that the test-only oracle in test/s2oracle can compare them with libs2.
 * Points are mapped with S2's quadratic projection.
 *
 * Nothing here touches PostgreSQL state: it is plain C so the oracle program
 * can link it without a server.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHER_S2CELL_H
#define ARCHER_S2CELL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#define S2_MAX_LEVEL 30
#define S2_NUM_FACES 6

/* A cell id; 0 is never a valid id */
typedef uint64_t S2CellId;

/* A point on (or, for intermediate values, near) the unit sphere */
typedef struct S2Point
{
	double		x;
	double		y;
	double		z;
} S2Point;

/* Latitude/longitude rectangle in degrees; lng_lo > lng_hi means it wraps */
typedef struct S2LatLngRect
{
	double		lat_lo;
	double		lat_hi;
	double		lng_lo;
	double		lng_hi;
} S2LatLngRect;

/*
 * The face frame, S2's cube projection before its quadratic step: the one
 * copy the cell ids (s2cell.c) and region coverings (georegion.c) share,
 * inline because both call it per point and per edge.
 */
/* face of a point: its largest component by absolute value, +3 if negative */
static inline int
s2_face_of_point(S2Point p)
{
	double		ax = fabs(p.x);
	double		ay = fabs(p.y);
	double		az = fabs(p.z);
	int			face;
	double		c;

	if (ax > ay)
	{
		if (ax > az)
		{
			face = 0;
			c = p.x;
		}
		else
		{
			face = 2;
			c = p.z;
		}
	}
	else
	{
		if (ay > az)
		{
			face = 1;
			c = p.y;
		}
		else
		{
			face = 2;
			c = p.z;
		}
	}
	if (c < 0)
		face += 3;
	return face;
}

/*
 * Face-local frame.  Each face has axes (u, v, w): w is the outward face
 * normal, and the point (u, v) of the face is w + u * uaxis + v * vaxis:
 *
 *	face 0: ( 1,  u,  v)	face 3: (-1, -v, -u)
 *	face 1: (-u,  1,  v)	face 4: ( v, -1, -u)
 *	face 2: (-u, -v,  1)	face 5: ( v,  u, -1)
 *
 * s2_face_uvw_to_xyz maps face-frame components (t.x, t.y, t.z) = (u, v, w) to
 * xyz, and s2_face_xyz_to_uvw is its inverse.  Both are exact (signed permutations).
 */
static inline S2Point
s2_face_uvw_to_xyz(int face, S2Point t)
{
	S2Point		r;

	switch (face)
	{
		case 0:
			r.x = t.z;
			r.y = t.x;
			r.z = t.y;
			break;
		case 1:
			r.x = -t.x;
			r.y = t.z;
			r.z = t.y;
			break;
		case 2:
			r.x = -t.x;
			r.y = -t.y;
			r.z = t.z;
			break;
		case 3:
			r.x = -t.z;
			r.y = -t.y;
			r.z = -t.x;
			break;
		case 4:
			r.x = t.y;
			r.y = -t.z;
			r.z = -t.x;
			break;
		default:
			r.x = t.y;
			r.y = t.x;
			r.z = -t.z;
			break;
	}
	return r;
}

static inline S2Point
s2_face_uv_to_xyz(int face, double u, double v)
{
	S2Point		t;

	t.x = u;
	t.y = v;
	t.z = 1;
	return s2_face_uvw_to_xyz(face, t);
}

static inline S2Point
s2_face_xyz_to_uvw(int face, S2Point p)
{
	S2Point		r;

	switch (face)
	{
		case 0:
			r.x = p.y;
			r.y = p.z;
			r.z = p.x;
			break;
		case 1:
			r.x = -p.x;
			r.y = p.z;
			r.z = p.y;
			break;
		case 2:
			r.x = -p.x;
			r.y = -p.y;
			r.z = p.z;
			break;
		case 3:
			r.x = -p.z;
			r.y = -p.y;
			r.z = -p.x;
			break;
		case 4:
			r.x = -p.z;
			r.y = p.x;
			r.z = -p.y;
			break;
		default:
			r.x = p.y;
			r.y = p.x;
			r.z = -p.z;
			break;
	}
	return r;
}

/* gnomonic coordinates of p in the frame of a face its w component is positive on */
static inline void
s2_face_xyz_to_uv(int face, S2Point p, double *u, double *v)
{
	S2Point		t = s2_face_xyz_to_uvw(face, p);

	*u = t.x / t.z;
	*v = t.y / t.z;
}

/* Points and coordinates (degrees in, degrees out) */
extern S2Point s2_point_from_latlng(double lat_deg, double lng_deg);
extern void s2_latlng_from_point(S2Point p, double *lat_deg, double *lng_deg);
extern S2Point s2_point_normalize(S2Point p);
extern double s2_point_dot(S2Point a, S2Point b);
extern S2Point s2_point_cross(S2Point a, S2Point b);
/* angle between two unit vectors, radians, accurate for tiny angles too */
extern double s2_point_angle(S2Point a, S2Point b);

/* Cell ids */
extern S2CellId s2_cellid_from_point(S2Point p);	/* leaf (level 30) */
extern S2CellId s2_cellid_from_face(int face);	/* level 0 */
extern int	s2_cellid_face(S2CellId id);
extern int	s2_cellid_level(S2CellId id);
extern bool s2_cellid_is_valid(S2CellId id);
extern S2CellId s2_cellid_parent(S2CellId id, int level);
extern S2CellId s2_cellid_child(S2CellId id, int position);	/* 0..3, Hilbert order */
extern S2CellId s2_cellid_range_min(S2CellId id);	/* smallest leaf id inside */
extern S2CellId s2_cellid_range_max(S2CellId id);	/* largest leaf id inside */
extern bool s2_cellid_contains(S2CellId cell, S2CellId other);
/* level of the smallest cell holding both, -1 when on different faces */
extern int	s2_cellid_common_level(S2CellId a, S2CellId b);
/* center of the cell, unit length */
extern S2Point s2_cellid_to_point(S2CellId id);
/*
 * Latitude and longitude (degrees) of a leaf cell's centre to about 1e-6
 * relative, by basic arithmetic only: the same bits on every machine
 */
extern void s2_cellid_approx_latlng(S2CellId leaf, double *lat_deg, double *lng_deg);

/* Cell geometry */
extern void s2_cell_vertices(S2CellId id, S2Point vertices[4]);	/* CCW, unit length */
/* min angle (radians) from p to any point of the cell; 0 when p is inside */
extern double s2_cell_min_angle(S2CellId id, S2Point p);
/* max angle (radians) from p to any point of the cell */
extern double s2_cell_max_angle(S2CellId id, S2Point p);

/*
 * A quick, conservative relation of a cell to the cap of points within
 * inner (every point of the cell) or outer (any point) radians of a
 * center, from the cell's edge circles and vertices: DISJOINT when the cap
 * lies beyond an edge circle, INSIDE when every vertex lies within inner,
 * PARTIAL when a vertex lies within outer or the center in the cell, else
 * UNKNOWN (the cap may pass a corner: only the exact min angle can tell).
 * s2_cap_quick_init computes the cap's trigonometry once.
 */
typedef enum S2CapQuick
{
	S2_CAP_UNKNOWN,
	S2_CAP_DISJOINT,
	S2_CAP_PARTIAL,
	S2_CAP_INSIDE
} S2CapQuick;

typedef struct S2CapTrig
{
	S2Point		center;
	bool		usable;			/* outer below a quarter circle */
	bool		test_inside;	/* inner wide enough for the vertex test */
	double		sin_outer;
	double		cos_outer;
	double		cos_inner;
} S2CapTrig;

extern void s2_cap_quick_init(S2CapTrig *cap, S2Point center, double inner, double outer);
extern S2CapQuick s2_cell_cap_quick(S2CellId id, const S2CapTrig *cap);
/*
 * Cells of one level that together hold every point within angle (radians)
 * of p: the cell holding p and its neighbours on p's face (at most nine),
 * at the deepest level where they do.  Returns their number, 0 when the cap
 * crosses an edge of the face.  Conservative.
 */
extern int	s2_cap_neighborhood(S2Point p, double angle, S2CellId cells[9]);
/* conservative lat/lng bound of the cell, degrees (never smaller than the cell) */
extern S2LatLngRect s2_cell_rect_bound(S2CellId id);
/* upper bound on the angle (radians) from the center of any cell at this
 * level to any point of that cell */
extern double s2_level_max_radius(int level);

/*
 * Builds the Hilbert lookup table now instead of at its first use: called
 * when the library loads, so that with shared_preload_libraries every
 * backend inherits it from the postmaster
 */
extern void s2_init(void);

#endif							/* ARCHER_S2CELL_H */
