/*-------------------------------------------------------------------------
 *
 * geo_postgis.c
 *	  PostGIS interoperation for archer_geo: reading points out of
 *	  geography/geometry values, decoding query polygons, and the exact
 *	  predicates the index falls back on for entries near a region's
 *	  boundary.
 *
 * archer links no PostGIS code: points are read from the serialized form
 * (GSERIALIZED version 2, PostGIS 3), polygons through ST_AsBinary's WKB
 * (both decoded in geo_decode.c), and the exact predicates call PostGIS's own SQL functions through fmgr,
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
#include "common/hashfn.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "parser/parse_type.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "geo.h"


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
 * The PostGIS types and functions archer calls, looked up once per backend:
 * the types first, on their own, since every scan and insert needs them to
 * tell the column's kind and most need no function (a fresh backend's
 * lookup of all the functions costs as much as a small kNN query); the
 * functions on first use.  Every use checks that the geography type (and
 * st_dwithin, for the functions) still exists, a syscache probe: after
 * DROP EXTENSION postgis and CREATE EXTENSION postgis the OIDs change and
 * the lookups run again.
 */
typedef struct PostgisCatalog
{
	bool		types_valid;
	bool		funcs_valid;
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
postgis_types(void)
{
	char	   *nspname;
	Oid			geography_type;
	Oid			geometry_type;

	if (catalog.types_valid &&
		SearchSysCacheExists1(TYPEOID, ObjectIdGetDatum(catalog.geography_type)))
		return &catalog;

	nspname = postgis_schema();
	geography_type = postgis_type(nspname, "geography");
	geometry_type = postgis_type(nspname, "geometry");
	catalog.funcs_valid = false;
	catalog.geography_type = geography_type;
	catalog.geometry_type = geometry_type;
	catalog.types_valid = true;
	return &catalog;
}

static const PostgisCatalog *
postgis_catalog(void)
{
	char	   *nspname;
	Oid			argtypes[4];
	PostgisCatalog found;

	found = *postgis_types();
	if (found.funcs_valid && SearchSysCacheExists1(PROCOID, ObjectIdGetDatum(found.dwithin)))
		return &catalog;

	nspname = postgis_schema();
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
	found.types_valid = true;
	found.funcs_valid = true;
	catalog = found;
	return &catalog;
}

/*
 * Whether typid is PostGIS's geography or geometry type (false for any
 * other type, also one of the same name in another schema, or without
 * PostGIS), and which
 */
bool
geo_postgis_column_kind(Oid typid, GeoColumnKind *kind)
{
	const PostgisCatalog *cat;

	if (!OidIsValid(get_extension_oid("postgis", true)))
		return false;
	cat = postgis_types();
	if (typid == cat->geography_type)
		*kind = GEO_COLUMN_GEOGRAPHY;
	else if (typid == cat->geometry_type)
		*kind = GEO_COLUMN_GEOMETRY;
	else
		return false;
	return true;
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

/*
 * Read the point out of a serialized geography or geometry (geo_decode.c
 * does the decoding).
 */
bool
geo_postgis_point(Datum value, bool geography, double *lat, double *lng)
{
	struct varlena *raw = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(value));

	return geo_decode_point((const uint8 *) VARDATA_ANY(raw), VARSIZE_ANY_EXHDR(raw),
							geography, lat, lng);
}

/* geo_decode_center_raw of a geography or geometry: SRID and centre unchecked */
bool
geo_postgis_center_raw(Datum value, bool geography, int32 *srid, double *lat, double *lng,
					   double *extent)
{
	struct varlena *raw = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(value));

	return geo_decode_center_raw((const uint8 *) VARDATA_ANY(raw), VARSIZE_ANY_EXHDR(raw),
								 geography, srid, lat, lng, extent);
}

/*
 * ST_IsValid of a country's border (GEOS nodes all its rings) can take as
 * long as counting its points through the index.  Each backend remembers
 * the last few regions it found valid, by their bytes, so a query run
 * again over the same region checks it once.
 */
#define VALID_REGIONS			8
#define VALID_REGION_MAX_BYTES	(8 * 1024 * 1024)

typedef struct ValidRegion
{
	uint32		hash;
	Size		size;
	char	   *bytes;			/* in TopMemoryContext; NULL: slot free */
} ValidRegion;

static ValidRegion valid_regions[VALID_REGIONS];
static int	valid_regions_next;

static bool
region_known_valid(const char *bytes, Size size, uint32 hash)
{
	for (int i = 0; i < VALID_REGIONS; i++)
		if (valid_regions[i].bytes != NULL && valid_regions[i].hash == hash &&
			valid_regions[i].size == size && memcmp(valid_regions[i].bytes, bytes, size) == 0)
			return true;
	return false;
}

static void
remember_valid_region(const char *bytes, Size size, uint32 hash)
{
	ValidRegion *slot = &valid_regions[valid_regions_next];

	if (size > VALID_REGION_MAX_BYTES)
		return;
	if (slot->bytes != NULL)
		pfree(slot->bytes);
	slot->bytes = MemoryContextAlloc(TopMemoryContext, size);
	memcpy(slot->bytes, bytes, size);
	slot->size = size;
	slot->hash = hash;
	valid_regions_next = (valid_regions_next + 1) % VALID_REGIONS;
}

/* An error unless ST_IsValid(geometry); region is the query's value, as given */
static void
check_region_valid(const PostgisCatalog *cat, Datum region, Datum geometry)
{
	struct varlena *raw = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(region));
	const char *bytes = VARDATA_ANY(raw);
	Size		size = VARSIZE_ANY_EXHDR(raw);
	uint32		hash = hash_bytes((const unsigned char *) bytes, (int) size);

	if (region_known_valid(bytes, size, hash))
		return;
	if (!DatumGetBool(OidFunctionCall1(cat->isvalid, geometry)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query region is not a valid polygon"),
				 errhint("Repair it with ST_MakeValid(region).")));
	remember_valid_region(bytes, size, hash);
}

/*
 * Decode a (multi)polygon into a region.  Invalid polygons are refused:
 * what ST_Intersects answers for them depends on PostGIS internals that a
 * covering cannot reproduce.  Every check a query region gets is made
 * here (and in the decoding it calls), and both the index scan and the
 * exact predicate of a sequential scan call it (geo_polygon_region), so
 * that a region refused on one plan is refused on every plan.  known_valid
 * skips ST_IsValid for a polygon that passed it before (the shared region
 * cache's word, geo_regioncache.c); the cheaper checks still run.
 */
GeoRegion *
geo_postgis_polygon_region(Datum polygon, bool geography, bool known_valid)
{
	const PostgisCatalog *cat = postgis_catalog();
	Datum		geometry = polygon;
	int32		srid;
	bytea	   *wkb;

	if (geography)
		geometry = OidFunctionCall1(cat->to_geometry, polygon);
	srid = DatumGetInt32(OidFunctionCall1(cat->srid, geometry));
	/* geography too: PostGIS would raise a mixed-SRID error (geo_check_srid) */
	if (srid != GEO_SRID_WGS84)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query region must have SRID 4326, not %d", srid),
				 geography ?
				 errhint("Use ST_Transform(region::geometry, 4326)::geography.") :
				 errhint("Use ST_Transform(region, 4326).")));
	if (!known_valid)
		check_region_valid(cat, polygon, geometry);

	wkb = DatumGetByteaPP(OidFunctionCall1(geography ? cat->asbinary_geography :
										   cat->asbinary_geometry, polygon));
	return geo_decode_wkb_region((const uint8 *) VARDATA_ANY(wkb), VARSIZE_ANY_EXHDR(wkb),
								 !geography);
}

/* Build a geography or geometry (SRID 4326) point */
Datum
geo_postgis_make_point(bool geography, double lat, double lng)
{
	char	   *text = psprintf("SRID=4326;POINT(%.17g %.17g)", lng, lat);
	const PostgisCatalog *cat = postgis_types();
	Oid			typoid = geography ? cat->geography_type : cat->geometry_type;
	Oid			inputfunc;
	Oid			typioparam;

	getTypeInputInfo(typoid, &inputfunc, &typioparam);
	return OidInputFunctionCall(inputfunc, text, typioparam, -1);
}

/*
 * The point PostGIS writes for POINT(0 0) in SRID 4326, without Z, M or a
 * bounding box: a fixed header, then x and y as the last 16 bytes.  A value
 * that matches it but for those bytes is "plain": index-only scans rebuild
 * it from its coordinates alone (geo_pointcode.c).  Made once per backend.
 */
Datum
geo_postgis_plain_point(bool geography)
{
	static Datum plain[2];

	if (plain[geography] == 0)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		plain[geography] = PointerGetDatum(PG_DETOAST_DATUM(geo_postgis_make_point(geography, 0, 0)));
		MemoryContextSwitchTo(oldcxt);
	}
	return plain[geography];
}

bool
geo_postgis_point_is_plain(Datum value, bool geography)
{
	struct varlena *raw = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(value));
	struct varlena *plain = (struct varlena *) DatumGetPointer(geo_postgis_plain_point(geography));
	Size		size = VARSIZE_ANY_EXHDR(raw);

	return size == VARSIZE_ANY_EXHDR(plain) &&
		memcmp(VARDATA_ANY(raw), VARDATA_ANY(plain), size - 2 * sizeof(double)) == 0;
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
