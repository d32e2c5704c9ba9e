/*-------------------------------------------------------------------------
 *
 * geo_decode.c
 *	  Decoding PostGIS's binary forms for archer_geo: the point inside a
 *	  serialized geography or geometry (GSERIALIZED version 2, PostGIS 3),
 *	  and query polygons from WKB (what ST_AsBinary returns).
 *
 * Pure functions over bytes: every length is checked before it is read,
 * and anything malformed raises an ERROR.  test/fuzz feeds them arbitrary
 * bytes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "port/pg_bswap.h"

#include "geo.h"

/* GSERIALIZED v2 flags */
#define GS_FLAG_Z			0x01
#define GS_FLAG_M			0x02
#define GS_FLAG_BBOX		0x04
#define GS_FLAG_GEODETIC	0x08
#define GS_FLAG_EXTENDED	0x10
#define GS_FLAG_VERSION		0x40

#define WKB_POINT			1
#define WKB_POLYGON			3
#define WKB_MULTIPOLYGON	6

static const char *
wkb_type_name(uint32 type)
{
	static const char *const names[] = {
		"Point", "LineString", "Polygon", "MultiPoint", "MultiLineString",
		"MultiPolygon", "GeometryCollection"
	};

	if (type >= 1 && type <= lengthof(names))
		return names[type - 1];
	return "of an unsupported kind";
}

/* WKB reader over a bytea, with bounds checks */
typedef struct WkbReader
{
	const uint8 *data;
	Size		size;
	Size		pos;
	bool		swap;
} WkbReader;

static void
wkb_need(WkbReader *reader, Size n)
{
	if (reader->pos + n > reader->size)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("truncated WKB in query region")));
}

static uint32
wkb_uint32(WkbReader *reader)
{
	uint32		value;

	wkb_need(reader, 4);
	memcpy(&value, reader->data + reader->pos, 4);
	reader->pos += 4;
	return reader->swap ? pg_bswap32(value) : value;
}

static double
wkb_double(WkbReader *reader)
{
	uint64		bits;
	double		value;

	wkb_need(reader, 8);
	memcpy(&bits, reader->data + reader->pos, 8);
	reader->pos += 8;
	if (reader->swap)
		bits = pg_bswap64(bits);
	memcpy(&value, &bits, 8);
	return value;
}

/* Read a geometry header; returns the base type and sets *ndims */
static uint32
wkb_header(WkbReader *reader, int *ndims)
{
	uint32		type;
	uint32		base;

	wkb_need(reader, 1);
	reader->swap = (reader->data[reader->pos] == 0);	/* 0 = big endian */
#ifdef WORDS_BIGENDIAN
	reader->swap = !reader->swap;
#endif
	reader->pos++;
	type = wkb_uint32(reader);
	*ndims = 2;
	if (type & 0x80000000)
		(*ndims)++;
	if (type & 0x40000000)
		(*ndims)++;
	if (type & 0x20000000)
		(void) wkb_uint32(reader);	/* EWKB SRID */
	type &= 0x0FFFFFFF;
	base = type % 1000;
	switch (type / 1000)
	{
		case 1:
		case 2:
			*ndims = 3;
			break;
		case 3:
			*ndims = 4;
			break;
	}
	return base;
}

static void
wkb_polygon(WkbReader *reader, int ndims, GeoPolygon *polygon)
{
	uint32		nrings = wkb_uint32(reader);
	GeoRing    *rings;

	if (nrings == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query region contains an empty polygon")));
	if (nrings > (reader->size - reader->pos) / 4)
		wkb_need(reader, (Size) nrings * 4);
	rings = palloc(sizeof(GeoRing) * nrings);
	for (uint32 r = 0; r < nrings; r++)
	{
		uint32		npoints = wkb_uint32(reader);
		double	   *lng;
		double	   *lat;

		wkb_need(reader, (Size) npoints * ndims * 8);
		lng = palloc(sizeof(double) * Max(npoints, 1));
		lat = palloc(sizeof(double) * Max(npoints, 1));
		for (uint32 i = 0; i < npoints; i++)
		{
			lng[i] = wkb_double(reader);
			lat[i] = wkb_double(reader);
			reader->pos += (ndims - 2) * 8;
		}
		rings[r].npoints = npoints;
		rings[r].lng = lng;
		rings[r].lat = lat;
	}
	polygon->nrings = nrings;
	polygon->rings = rings;
}

/*
 * The header of a serialized geography or geometry: its SRID, and where
 * its type and count (of points, rings or parts) are.  *bbox points at its
 * bounding box (NULL without one) of *bbox_dims dimensions.
 */
static Size
decode_header(const uint8 *data, Size size, bool geography, int32 *srid,
			  const uint8 **bbox, int *bbox_dims, uint32 *type, uint32 *count)
{
	uint8		flags;
	Size		offset = 4;

	if (size < 4)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid serialized %s value", geography ? "geography" : "geometry")));
	flags = data[3];
	if (!(flags & GS_FLAG_VERSION))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("archer_geo needs PostGIS 3 serialized values")));

	*srid = (data[0] << 16) | (data[1] << 8) | data[2];
	*srid = (int32) ((uint32) *srid << 11) >> 11;

	if (flags & GS_FLAG_EXTENDED)
		offset += 8;
	*bbox = NULL;
	*bbox_dims = 0;
	if (flags & GS_FLAG_BBOX)
	{
		if (flags & GS_FLAG_GEODETIC)
			*bbox_dims = 3;
		else
			*bbox_dims = 2 + ((flags & GS_FLAG_Z) ? 1 : 0) + ((flags & GS_FLAG_M) ? 1 : 0);
		*bbox = data + offset;
		offset += *bbox_dims * 2 * sizeof(float);
	}
	if (size < offset + 8)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid serialized %s value", geography ? "geography" : "geometry")));
	memcpy(type, data + offset, 4);
	memcpy(count, data + offset + 4, 4);
	return offset + 8;
}

/* The first point of a serialized point (past its type and count) */
static void
decode_coordinates(const uint8 *data, Size size, Size offset, bool geography,
				   double *lat, double *lng)
{
	double		coords[2];

	if (size < offset + 2 * sizeof(double))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid serialized %s value", geography ? "geography" : "geometry")));
	memcpy(coords, data + offset, 2 * sizeof(double));
	*lng = coords[0];
	*lat = coords[1];
}

/*
 * The SRID and the point of a serialized geography or geometry, as they
 * are: no check of the SRID or the coordinates.  Returns false for an empty
 * point; raises an error for anything that is not a point.
 */
bool
geo_decode_point_raw(const uint8 *data, Size size, bool geography, int32 *srid,
					 double *lat, double *lng)
{
	const uint8 *bbox;
	int			bbox_dims;
	uint32		type;
	uint32		npoints;
	Size		offset = decode_header(data, size, geography, srid, &bbox, &bbox_dims,
									   &type, &npoints);

	if (type != WKB_POINT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("archer_geo indexes points only, got a %s %s",
						geography ? "geography" : "geometry", wkb_type_name(type)),
				 errhint("Index ST_PointOnSurface(col) or ST_Centroid(col) in an expression index.")));
	if (npoints == 0)
		return false;
	decode_coordinates(data, size, offset, geography, lat, lng);
	return true;
}

/*
 * The centre of a kNN search for a serialized geography or geometry of any
 * type, and its extent: every point of the shape is within *extent of the
 * centre (an angle in radians on the sphere for geography, degrees in the
 * (longitude, latitude) plane for geometry), so that its distance to any
 * point p is at least p's distance to the centre minus *extent.  A point
 * is its own centre (extent 0); another shape has the centre of its
 * bounding box, which PostGIS keeps with every shape of more than two
 * points (rounded outwards to floats).  A shape without one gets an
 * infinite extent, so every distance bound is 0 and the executor orders
 * by the exact distances alone.  Returns false for an empty shape.  No
 * check of the SRID or the coordinates.
 */
bool
geo_decode_center_raw(const uint8 *data, Size size, bool geography, int32 *srid,
					  double *lat, double *lng, double *extent)
{
	const uint8 *bbox;
	int			bbox_dims;
	uint32		type;
	uint32		count;
	Size		offset = decode_header(data, size, geography, srid, &bbox, &bbox_dims,
									   &type, &count);
	float		box[6];

	*extent = 0;
	if (count == 0)
		return false;
	if (type == WKB_POINT)
	{
		decode_coordinates(data, size, offset, geography, lat, lng);
		return true;
	}
	*lat = 0;
	*lng = 0;
	*extent = INFINITY;
	/* a geography's box is geocentric (3 dimensions), a geometry's (x, y) first */
	if (bbox == NULL || bbox_dims < (geography ? 3 : 2))
		return true;
	memcpy(box, bbox, sizeof(float) * 2 * Min(bbox_dims, 3));
	for (int i = 0; i < 2 * Min(bbox_dims, 3); i++)
		if (!isfinite(box[i]))
			return true;
	if (!geography)
	{
		/* (xmin, xmax, ymin, ymax): the farthest point of a box is a corner */
		*lng = ((double) box[0] + box[1]) / 2;
		*lat = ((double) box[2] + box[3]) / 2;
		*extent = hypot((double) box[1] - box[0], (double) box[3] - box[2]) / 2 * (1 + 1e-12);
	}
	else
	{
		/*
		 * A box of geocentric unit vectors (xmin, xmax, ymin, ymax, zmin,
		 * zmax).  For a unit vector q in it, c.q is at least its least value
		 * at a corner (a linear function over a box), which bounds the angle
		 * between q and the box centre's direction c.
		 */
		double		c[3];
		double		norm;
		double		mincos = 1;

		for (int i = 0; i < 3; i++)
			c[i] = ((double) box[2 * i] + box[2 * i + 1]) / 2;
		norm = sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
		if (norm < 1e-6)
			return true;
		for (int i = 0; i < 3; i++)
			c[i] /= norm;
		for (int corner = 0; corner < 8; corner++)
		{
			double		dot = 0;

			for (int i = 0; i < 3; i++)
				dot += c[i] * box[2 * i + ((corner >> i) & 1)];
			mincos = Min(mincos, dot);
		}
		*lat = asin(Max(-1.0, Min(1.0, c[2]))) * 180.0 / M_PI;
		*lng = atan2(c[1], c[0]) * 180.0 / M_PI;
		*extent = mincos <= -1 ? M_PI : acos(Min(1.0, mincos)) + 1e-9;
	}
	return true;
}

/*
 * An error unless a value or query argument has SRID 4326, the only one
 * archer_geo works in: its cell ids are of longitude and latitude in
 * degrees, and PostGIS refuses to compare values of different SRIDs, so a
 * column or query of any other SRID could not get the same answer (or the
 * same error) from the index as from PostGIS.  Geography too: PostGIS
 * knows other geodetic SRIDs (4269, 4258, ...), and a mixed-SRID error
 * that PostGIS raises for one row the index might never look at.
 */
void
geo_check_srid(int32 srid, bool geography)
{
	if (srid == GEO_SRID_WGS84)
		return;
	if (geography)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("archer_geo indexes geography points in SRID 4326 only, not SRID %d", srid),
				 errhint("Use ST_Transform(geog::geometry, 4326)::geography.")));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("archer_geo indexes geometry points in SRID 4326 only, not SRID %d", srid),
			 errhint("Use ST_Transform(geom, 4326) or ST_SetSRID(geom, 4326).")));
}

/*
 * Read the point out of a serialized geography or geometry.  Returns false
 * for an empty point; raises an error for anything that is not a point of
 * SRID 4326 with finite coordinates in range.
 */
bool
geo_decode_point(const uint8 *data, Size size, bool geography, double *lat, double *lng)
{
	int32		srid;

	bool		found = geo_decode_point_raw(data, size, geography, &srid, lat, lng);

	geo_check_srid(srid, geography);
	if (found)
		geo_check_latlng(*lat, *lng);
	return found;
}

/* Decode a WKB (multi)polygon into a region (planar or geodesic edges) */
GeoRegion *
geo_decode_wkb_region(const uint8 *data, Size size, bool planar)
{
	WkbReader	reader;
	int			ndims;
	uint32		type;
	GeoPolygon *polygons;
	int			npolygons;

	reader.data = data;
	reader.size = size;
	reader.pos = 0;
	reader.swap = false;

	type = wkb_header(&reader, &ndims);
	if (type == WKB_POLYGON)
	{
		npolygons = 1;
		polygons = palloc(sizeof(GeoPolygon));
		wkb_polygon(&reader, ndims, polygons);
	}
	else if (type == WKB_MULTIPOLYGON)
	{
		npolygons = wkb_uint32(&reader);
		if (npolygons <= 0 || npolygons > reader.size / 9)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("query region is an empty multipolygon")));
		polygons = palloc(sizeof(GeoPolygon) * npolygons);
		for (int i = 0; i < npolygons; i++)
		{
			int			part_ndims;

			if (wkb_header(&reader, &part_ndims) != WKB_POLYGON)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("query region multipolygon has a part that is not a polygon")));
			wkb_polygon(&reader, part_ndims, &polygons[i]);
		}
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query region must be a Polygon or MultiPolygon, got a %s",
						wkb_type_name(type))));

	return georegion_polygons(npolygons, polygons, planar);
}

/* Coordinates in degrees a point may have: finite, within the globe's ranges */
void
geo_check_latlng(double lat, double lng)
{
	if (isnan(lat) || isnan(lng) || isinf(lat) || isinf(lng))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("point coordinates must be finite numbers")));
	if (lat < -90.0 || lat > 90.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("latitude %.17g is out of range [-90, 90]", lat)));
	if (lng < -180.0 || lng > 180.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("longitude %.17g is out of range [-180, 180]", lng)));
}
