/*-------------------------------------------------------------------------
 *
 * geo_pointcode.c
 *	  The exact point of a leaf entry, in the GEO_POINT_CODE_SIZE bytes beside
 *	  its cell id, so that index-only scans can give back column values.
 *
 * A leaf cell id places its point to within about a centimetre; what it
 * leaves open is the last 20 to 30 bits of each coordinate.  An entry keeps,
 * for the latitude and for the longitude, a 40-bit signed field: the
 * distance, counted in representable doubles, from a reference the cell id
 * alone gives (s2_cellid_approx_latlng: its centre, to about 1e-6).  Doubles
 * are counted through the integer order of their bits, so the arithmetic is
 * exact and decoding returns the very bits that were encoded.
 *
 * Some values need more than 40 bits, or more than two coordinates: points
 * within some tens of metres of the equator or the prime meridian (where
 * doubles are dense: exact zeros have codes of their own), within metres of
 * a pole, PostGIS values with Z or M, another SRID or a stored bounding
 * box, and empty points.  Their entries say "in the heap": an index-only
 * scan reads such a row's value from the table.  The worst a value can get
 * is that mark, never a wrong value.
 *
 * The reference uses basic arithmetic only and the build does not fuse
 * multiply-adds (-ffp-contract=off), so a standby decodes the same bits the
 * primary encoded.
 *
 * Layout: bytes 0-4 the latitude field, 5-9 the longitude field, each
 * little-endian two's complement.  Special field values sit at the bottom
 * of the range; a "heap" or "NULL" mark is in the latitude field.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "common/int.h"
#include "port/pg_bswap.h"

#include "geo.h"

#define FIELD_BYTES		5
#define FIELD_MIN		(-(INT64CONST(1) << 39))
#define FIELD_MAX		((INT64CONST(1) << 39) - 1)
#define CODE_IN_HEAP	FIELD_MIN
#define CODE_NULL		(FIELD_MIN + 1)
#define CODE_PLUS_ZERO	(FIELD_MIN + 2)
#define CODE_MINUS_ZERO	(FIELD_MIN + 3)
#define RESIDUAL_MIN	(FIELD_MIN + 4)

#define SIGN_BIT		UINT64CONST(0x8000000000000000)

StaticAssertDecl(sizeof(GeoLeafEntry) == 24, "leaf entries are 24 bytes");
StaticAssertDecl(GEO_POINT_CODE_SIZE == 2 * FIELD_BYTES, "two fields per code");

/* Doubles in increasing order map to increasing integers (-0 just below +0) */
static inline int64
double_order(double x)
{
	uint64		bits;

	memcpy(&bits, &x, sizeof(bits));
	if (bits & SIGN_BIT)
		return -(int64) (bits & ~SIGN_BIT) - 1;
	return (int64) bits;
}

static inline double
order_double(int64 order)
{
	uint64		bits = order >= 0 ? (uint64) order : ((uint64) (-(order + 1)) | SIGN_BIT);
	double		x;

	memcpy(&x, &bits, sizeof(x));
	return x;
}

static int64
encode_coordinate(double x, double reference)
{
	int64		residual;

	if (x == 0)
		return signbit(x) ? CODE_MINUS_ZERO : CODE_PLUS_ZERO;
	if (pg_sub_s64_overflow(double_order(x), double_order(reference), &residual) ||
		residual < RESIDUAL_MIN || residual > FIELD_MAX)
		return CODE_IN_HEAP;
	return residual;
}

/*
 * Could encode_coordinate have written the field?  (Not on a damaged page.)
 * Only the two marks below CODE_PLUS_ZERO are not coordinates.
 */
static inline bool
field_is_coordinate(int64 field)
{
	StaticAssertStmt(CODE_PLUS_ZERO == FIELD_MIN + 2 && CODE_MINUS_ZERO + 1 == RESIDUAL_MIN,
					 "coordinate codes follow the marks");
	return field >= CODE_PLUS_ZERO;
}

/*
 * The coordinate of a field that passed field_is_coordinate.  A reference
 * is a latitude or longitude, about 2^62 at most in double order, and a
 * field is below 2^39 in magnitude: the sum does not overflow (it is taken
 * unsigned all the same, so that a damaged cell id cannot make it
 * undefined).
 */
static double
decode_coordinate(int64 field, double reference)
{
	if (field == CODE_PLUS_ZERO || field == CODE_MINUS_ZERO)
		return field == CODE_PLUS_ZERO ? 0.0 : -0.0;
	return order_double((int64) ((uint64) double_order(reference) + (uint64) field));
}

static void
put_field(uint8 *bytes, int64 field)
{
	uint64		u = (uint64) field;

	for (int i = 0; i < FIELD_BYTES; i++)
		bytes[i] = (uint8) (u >> (8 * i));
}

/* (two loads: the entries it reads sit in scans' innermost loops) */
static inline int64
get_field(const uint8 *bytes)
{
	uint32		low;
	uint64		u;

	memcpy(&low, bytes, sizeof(low));
#ifdef WORDS_BIGENDIAN
	low = pg_bswap32(low);
#endif
	u = (uint64) low | (uint64) bytes[4] << 32;
	/* sign-extend the 40-bit field */
	return ((int64) (u << 24)) >> 24;
}

static void
set_mark(GeoLeafEntry *entry, int64 mark)
{
	put_field(entry->point, mark);
	put_field(entry->point + FIELD_BYTES, 0);
}

/* Can the column value be rebuilt from its latitude and longitude alone? */
static bool
value_is_plain(GeoColumnKind kind, Datum value)
{
	switch (kind)
	{
		case GEO_COLUMN_POINT:
			return true;
		case GEO_COLUMN_GEOGRAPHY:
			return geo_postgis_point_is_plain(value, true);
		case GEO_COLUMN_GEOMETRY:
			return geo_postgis_point_is_plain(value, false);
	}
	return false;
}

/* The leaf entry of a column value at heap TID tid: cell id and point code */
void
geo_make_leaf_entry(GeoColumnKind kind, Datum value, bool isnull,
					ItemPointer tid, GeoLeafEntry *entry)
{
	double		lat;
	double		lng;
	double		ref_lat;
	double		ref_lng;
	int64		lat_field;
	int64		lng_field;

	entry->tid = *tid;
	entry->cellid = GEO_NULL_CELLID;
	if (isnull)
	{
		set_mark(entry, CODE_NULL);
		return;
	}
	if (!geo_value_latlng(kind, value, &lat, &lng))
	{
		/* an empty point */
		set_mark(entry, CODE_IN_HEAP);
		return;
	}
	entry->cellid = s2_cellid_from_point(s2_point_from_latlng(lat, lng));
	if (!value_is_plain(kind, value))
	{
		set_mark(entry, CODE_IN_HEAP);
		return;
	}
	s2_cellid_approx_latlng(entry->cellid, &ref_lat, &ref_lng);
	lat_field = encode_coordinate(lat, ref_lat);
	lng_field = encode_coordinate(lng, ref_lng);
	if (lat_field == CODE_IN_HEAP || lng_field == CODE_IN_HEAP)
	{
		set_mark(entry, CODE_IN_HEAP);
		return;
	}
	put_field(entry->point, lat_field);
	put_field(entry->point + FIELD_BYTES, lng_field);
}

/*
 * The column value an entry holds: its point in *lat, *lng (degrees), or
 * that it is NULL, or that only the heap row has it.  A code no encoding
 * makes also sends the reader to the heap; archer_geo_verify reports it.
 */
GeoPointCodeKind
geo_point_decode(const GeoLeafEntry *entry, double *lat, double *lng)
{
	GeoPointCodeKind kind = geo_point_code_kind(entry);
	double		ref_lat;
	double		ref_lng;

	if (kind != GEO_POINT_VALUE)
		return kind;
	s2_cellid_approx_latlng(entry->cellid, &ref_lat, &ref_lng);
	*lat = decode_coordinate(get_field(entry->point), ref_lat);
	*lng = decode_coordinate(get_field(entry->point + FIELD_BYTES), ref_lng);
	return GEO_POINT_VALUE;
}

/*
 * What geo_point_decode would say, without the decoding's arithmetic.
 * ("inline": index-only scans ask it for every row, and the link-time
 * optimizer then inlines it into them.)
 */
inline GeoPointCodeKind
geo_point_code_kind(const GeoLeafEntry *entry)
{
	int64		lat_field = get_field(entry->point);

	if (lat_field == CODE_NULL)
		return GEO_POINT_NULL;
	if (entry->cellid == GEO_NULL_CELLID || !field_is_coordinate(lat_field) ||
		!field_is_coordinate(get_field(entry->point + FIELD_BYTES)))
		return GEO_POINT_IN_HEAP;
	return GEO_POINT_VALUE;
}
