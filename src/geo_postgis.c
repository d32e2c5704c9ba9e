/*-------------------------------------------------------------------------
 *
 * geo_postgis.c
 *	  PostGIS interoperation for archer_geo: reading points out of
 *	  geography/geometry values, decoding query polygons, and the exact
 *	  predicates the index falls back on for entries near a region's
 *	  boundary.
 *
 * archer links no PostGIS code: points are read from the serialized form
 * (GSERIALIZED version 2, PostGIS 3), polygons through ST_AsBinary's WKB,
 * and the exact predicates call PostGIS's own SQL functions through fmgr,
 * so that the index returns exactly the rows PostGIS would.  The functions
 * are looked up in the schema of the postgis extension once per FmgrInfo.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "parser/parse_type.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

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

#define GEO_SRID_WGS84		4326


/* pg_extension.extnamespace; PostgreSQL 15 does not export a lookup */
static Oid
extension_namespace(Oid extoid)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			nspoid = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extoid));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		nspoid = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nspoid;
}

static char *
postgis_schema(void)
{
	Oid			extoid = get_extension_oid("postgis", true);
	char	   *nspname;

	if (!OidIsValid(extoid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"postgis\" is not installed")));
	nspname = get_namespace_name(extension_namespace(extoid));
	if (nspname == NULL)
		elog(ERROR, "cache lookup failed for the schema of extension postgis");
	return nspname;
}

static Oid
postgis_type(const char *nspname, const char *typname)
{
	TypeName   *name = makeTypeNameFromNameList(list_make2(makeString(pstrdup(nspname)),
														  makeString(pstrdup(typname))));

	return typenameTypeId(NULL, name);
}

static Oid
postgis_func(const char *nspname, const char *funcname, int nargs, Oid *argtypes)
{
	List	   *name = list_make2(makeString(pstrdup(nspname)), makeString(pstrdup(funcname)));

	return LookupFuncName(name, nargs, argtypes, false);
}

/*
 * The PostGIS types and functions archer calls, looked up once per backend.
 * Every use checks that st_dwithin still exists, a syscache probe: after
 * DROP EXTENSION postgis and CREATE EXTENSION postgis the OIDs change and
 * the lookup runs again.
 */
typedef struct PostgisCatalog
{
	bool		valid;
	Oid			geography_type;
	Oid			geometry_type;
	Oid			dwithin;		/* st_dwithin(geography, geography, float8, bool) */
	Oid			intersects_geography;
	Oid			intersects_geometry;
	Oid			to_geography;	/* geography(geometry) */
	Oid			to_geometry;	/* geometry(geography) */
	Oid			srid;			/* st_srid(geometry) */
	Oid			isvalid;		/* st_isvalid(geometry) */
	Oid			asbinary_geometry;
	Oid			asbinary_geography;
} PostgisCatalog;

static PostgisCatalog catalog;

static const PostgisCatalog *
postgis_catalog(void)
{
	char	   *nspname;
	Oid			argtypes[4];
	PostgisCatalog found;

	if (catalog.valid && SearchSysCacheExists1(PROCOID, ObjectIdGetDatum(catalog.dwithin)))
		return &catalog;

	nspname = postgis_schema();
	found.geography_type = postgis_type(nspname, "geography");
	found.geometry_type = postgis_type(nspname, "geometry");
	argtypes[0] = found.geography_type;
	argtypes[1] = found.geography_type;
	argtypes[2] = FLOAT8OID;
	argtypes[3] = BOOLOID;
	found.dwithin = postgis_func(nspname, "st_dwithin", 4, argtypes);
	found.intersects_geography = postgis_func(nspname, "st_intersects", 2, argtypes);
	found.to_geometry = postgis_func(nspname, "geometry", 1, argtypes);
	found.asbinary_geography = postgis_func(nspname, "st_asbinary", 1, argtypes);
	argtypes[0] = found.geometry_type;
	argtypes[1] = found.geometry_type;
	found.intersects_geometry = postgis_func(nspname, "st_intersects", 2, argtypes);
	found.to_geography = postgis_func(nspname, "geography", 1, argtypes);
	found.srid = postgis_func(nspname, "st_srid", 1, argtypes);
	found.isvalid = postgis_func(nspname, "st_isvalid", 1, argtypes);
	found.asbinary_geometry = postgis_func(nspname, "st_asbinary", 1, argtypes);
	found.valid = true;
	catalog = found;
	return &catalog;
}

/* Functions of PostGIS an exact predicate calls, kept in its fn_extra */
typedef struct PostgisFuncs
{
	FmgrInfo	dwithin;
	FmgrInfo	to_geography;
	FmgrInfo	intersects_geometry;
	FmgrInfo	intersects_geography;
	/* the cap center as geography, rebuilt when the cap changes */
	ArcherCap	center_cap;
	Datum		center;
	bool		have_center;
} PostgisFuncs;

static PostgisFuncs *
postgis_funcs(FmgrInfo *flinfo)
{
	PostgisFuncs *funcs = (PostgisFuncs *) flinfo->fn_extra;
	const PostgisCatalog *cat;

	if (funcs != NULL)
		return funcs;

	cat = postgis_catalog();
	funcs = MemoryContextAllocZero(flinfo->fn_mcxt, sizeof(PostgisFuncs));
	fmgr_info_cxt(cat->dwithin, &funcs->dwithin, flinfo->fn_mcxt);
	fmgr_info_cxt(cat->intersects_geography, &funcs->intersects_geography, flinfo->fn_mcxt);
	fmgr_info_cxt(cat->intersects_geometry, &funcs->intersects_geometry, flinfo->fn_mcxt);
	fmgr_info_cxt(cat->to_geography, &funcs->to_geography, flinfo->fn_mcxt);
	flinfo->fn_extra = funcs;
	return funcs;
}

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

/*
 * Read the point out of a serialized geography or geometry.  Returns false
 * for an empty point; raises an error for anything that is not a point and,
 * for geometry, for an SRID other than 4326.
 */
bool
geo_postgis_point(Datum value, bool geography, double *lat, double *lng)
{
	struct varlena *raw = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(value));
	const uint8 *data = (const uint8 *) VARDATA_ANY(raw);
	Size		size = VARSIZE_ANY_EXHDR(raw);
	uint8		flags;
	int32		srid;
	Size		offset = 4;
	uint32		type;
	uint32		npoints;
	double		coords[2];

	if (size < 4)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid serialized %s value", geography ? "geography" : "geometry")));
	flags = data[3];
	if (!(flags & GS_FLAG_VERSION))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("archer_geo needs PostGIS 3 serialized values")));

	srid = (data[0] << 16) | (data[1] << 8) | data[2];
	srid = (int32) ((uint32) srid << 11) >> 11;
	if (!geography && srid != GEO_SRID_WGS84)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("archer_geo indexes geometry points in SRID 4326 only, not SRID %d", srid),
				 errhint("Use ST_Transform(geom, 4326) or ST_SetSRID(geom, 4326).")));

	if (flags & GS_FLAG_EXTENDED)
		offset += 8;
	if (flags & GS_FLAG_BBOX)
	{
		int			ndims;

		if (flags & GS_FLAG_GEODETIC)
			ndims = 3;
		else
			ndims = 2 + ((flags & GS_FLAG_Z) ? 1 : 0) + ((flags & GS_FLAG_M) ? 1 : 0);
		offset += ndims * 2 * sizeof(float);
	}
	if (size < offset + 8)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid serialized %s value", geography ? "geography" : "geometry")));
	memcpy(&type, data + offset, 4);
	memcpy(&npoints, data + offset + 4, 4);
	if (type != WKB_POINT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("archer_geo indexes points only, got a %s %s",
						geography ? "geography" : "geometry", wkb_type_name(type)),
				 errhint("Index ST_PointOnSurface(col) or ST_Centroid(col) in an expression index.")));
	if (npoints == 0)
		return false;
	if (size < offset + 8 + 2 * sizeof(double))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid serialized %s value", geography ? "geography" : "geometry")));
	memcpy(coords, data + offset + 8, 2 * sizeof(double));
	*lng = coords[0];
	*lat = coords[1];
	geo_check_latlng(*lat, *lng);
	return true;
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
 * Decode a (multi)polygon into a region.  Invalid polygons are refused:
 * what ST_Intersects answers for them depends on PostGIS internals that a
 * covering cannot reproduce.
 */
GeoRegion *
geo_postgis_polygon_region(Datum polygon, bool geography)
{
	const PostgisCatalog *cat = postgis_catalog();
	Datum		geometry = polygon;
	int32		srid;
	bytea	   *wkb;
	WkbReader	reader;
	int			ndims;
	uint32		type;
	GeoPolygon *polygons;
	int			npolygons;

	if (geography)
		geometry = OidFunctionCall1(cat->to_geometry, polygon);
	srid = DatumGetInt32(OidFunctionCall1(cat->srid, geometry));
	if (!geography && srid != GEO_SRID_WGS84)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query region must have SRID 4326, not %d", srid),
				 errhint("Use ST_Transform(region, 4326).")));
	if (!DatumGetBool(OidFunctionCall1(cat->isvalid, geometry)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query region is not a valid polygon"),
				 errhint("Repair it with ST_MakeValid(region).")));

	wkb = DatumGetByteaPP(OidFunctionCall1(geography ? cat->asbinary_geography :
										   cat->asbinary_geometry, polygon));
	reader.data = (const uint8 *) VARDATA_ANY(wkb);
	reader.size = VARSIZE_ANY_EXHDR(wkb);
	reader.pos = 0;

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

	return georegion_polygons(npolygons, polygons, !geography);
}

/* Build a geography or geometry (SRID 4326) point */
Datum
geo_postgis_make_point(bool geography, double lat, double lng)
{
	char	   *text = psprintf("SRID=4326;POINT(%.17g %.17g)", lng, lat);
	const PostgisCatalog *cat = postgis_catalog();
	Oid			typoid = geography ? cat->geography_type : cat->geometry_type;
	Oid			inputfunc;
	Oid			typioparam;

	getTypeInputInfo(typoid, &inputfunc, &typioparam);
	return OidInputFunctionCall(inputfunc, text, typioparam, -1);
}

/* Exact radius predicate: ST_DWithin(value::geography, center::geography, radius, use_spheroid) */
bool
geo_postgis_dwithin(FmgrInfo *flinfo, bool geography, Datum value, const ArcherCap *cap)
{
	PostgisFuncs *funcs = postgis_funcs(flinfo);
	Datum		geog = value;

	if (!funcs->have_center ||
		funcs->center_cap.lat != cap->lat || funcs->center_cap.lng != cap->lng)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(flinfo->fn_mcxt);

		funcs->center = geo_postgis_make_point(true, cap->lat, cap->lng);
		funcs->center_cap = *cap;
		funcs->have_center = true;
		MemoryContextSwitchTo(oldcxt);
	}
	if (!geography)
		geog = FunctionCall1(&funcs->to_geography, value);
	return DatumGetBool(FunctionCall4(&funcs->dwithin, geog, funcs->center,
									  Float8GetDatum(cap->radius),
									  BoolGetDatum(cap->use_spheroid != 0)));
}

/* Exact polygon predicate: ST_Intersects(region, value) */
bool
geo_postgis_intersects(FmgrInfo *flinfo, bool geography, Datum value, Datum region)
{
	PostgisFuncs *funcs = postgis_funcs(flinfo);

	if (geography)
		return DatumGetBool(FunctionCall2(&funcs->intersects_geography, region, value));
	return DatumGetBool(FunctionCall2(&funcs->intersects_geometry, region, value));
}
