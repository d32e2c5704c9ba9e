/*-------------------------------------------------------------------------
 *
 * geo_types.c
 *	  The SQL surface of archer_geo: the archer_cap type, archer_dwithin and
 *	  archer_within with their planner support function, the operators the
 *	  index serves and their exact predicates, and selectivity estimation.
 *
 * archer_dwithin(col, center, meters) and archer_within(col, region) are the
 * user-facing predicates.  The support function turns them into index
 * conditions "col <@ archer_cap(center, meters)" and "col <@@ region" that
 * are exact (not lossy): the operators implement exactly the predicates, so
 * the executor rechecks only the entries the index marks as near a
 * boundary.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_language.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "libpq/pqformat.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/supportnodes.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/geo_decls.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/selfuncs.h"
#include "utils/syscache.h"

#include "geo.h"

PG_FUNCTION_INFO_V1(archer_cap_in);
PG_FUNCTION_INFO_V1(archer_cap_out);
PG_FUNCTION_INFO_V1(archer_cap_recv);
PG_FUNCTION_INFO_V1(archer_cap_send);
PG_FUNCTION_INFO_V1(archer_cap_point);
PG_FUNCTION_INFO_V1(archer_cap_geography);
PG_FUNCTION_INFO_V1(archer_cap_geometry);
PG_FUNCTION_INFO_V1(archer_point_in_cap);
PG_FUNCTION_INFO_V1(archer_geography_in_cap);
PG_FUNCTION_INFO_V1(archer_geometry_in_cap);
PG_FUNCTION_INFO_V1(archer_dwithin_point);
PG_FUNCTION_INFO_V1(archer_dwithin_geography);
PG_FUNCTION_INFO_V1(archer_dwithin_geometry);
PG_FUNCTION_INFO_V1(archer_within_point);
PG_FUNCTION_INFO_V1(archer_within_geography);
PG_FUNCTION_INFO_V1(archer_within_geometry);
PG_FUNCTION_INFO_V1(archer_geo_cellid_point);
PG_FUNCTION_INFO_V1(archer_geo_support);
PG_FUNCTION_INFO_V1(archer_geo_restrict);

/* selectivity of a radius query per unit of sphere fraction: data cluster */
#define GEO_CLUSTER_FACTOR		20.0
#define GEO_DEFAULT_SEL_CAP		0.0005
#define GEO_DEFAULT_SEL_REGION	0.005


/* Great-circle distance in meters on the sphere of GEO_EARTH_RADIUS */
double
geo_sphere_distance(double lat1, double lng1, double lat2, double lng2)
{
	double		dlat = (lat2 - lat1) * M_PI / 180.0;
	double		dlng = (lng2 - lng1) * M_PI / 180.0;
	double		s1 = sin(dlat / 2);
	double		s2 = sin(dlng / 2);
	double		h = s1 * s1 + cos(lat1 * M_PI / 180.0) * cos(lat2 * M_PI / 180.0) * s2 * s2;

	return 2.0 * GEO_EARTH_RADIUS * asin(sqrt(Min(h, 1.0)));
}

/*
 * The point of a column value; false for an empty point.  Raises an error
 * for values the index cannot hold.
 */
bool
geo_value_latlng(GeoColumnKind kind, Datum value, double *lat, double *lng)
{
	Point	   *point;

	switch (kind)
	{
		case GEO_COLUMN_POINT:
			point = DatumGetPointP(value);
			*lng = point->x;
			*lat = point->y;
			geo_check_latlng(*lat, *lng);
			return true;
		case GEO_COLUMN_GEOGRAPHY:
			return geo_postgis_point(value, true, lat, lng);
		case GEO_COLUMN_GEOMETRY:
			return geo_postgis_point(value, false, lat, lng);
	}
	return false;				/* keep compiler quiet */
}

/* The index key of a column value: its leaf cell, or GEO_NULL_CELLID */
uint64
geo_value_cellid(GeoColumnKind kind, Datum value, bool isnull)
{
	double		lat;
	double		lng;

	if (isnull || !geo_value_latlng(kind, value, &lat, &lng))
		return GEO_NULL_CELLID;
	return s2_cellid_from_point(s2_point_from_latlng(lat, lng));
}

/*
 * The region of a radius query.  Angles are on the unit sphere; the margins
 * cover the difference between the sphere and the spheroid PostGIS measures
 * on, so that "inside"/"outside" decisions hold for the exact predicate.
 */
GeoRegion *
geo_cap_region(GeoColumnKind kind, const ArcherCap *cap)
{
	double		angle = cap->radius / GEO_EARTH_RADIUS;
	double		inner;
	double		outer;

	if (kind != GEO_COLUMN_POINT && cap->use_spheroid)
	{
		inner = angle / GEO_SPHEROID_MAX_RATIO;
		outer = angle / GEO_SPHEROID_MIN_RATIO;
	}
	else
	{
		/* PostGIS's sphere radius differs from ours in the 9th digit */
		inner = angle * (1.0 - 1e-7);
		outer = angle * (1.0 + 1e-7);
	}
	inner -= 1e-12;
	outer += 1e-12;
	return georegion_cap(s2_point_from_latlng(cap->lat, cap->lng), inner,
						 isinf(outer) ? M_PI * 2 : outer);
}

static GeoRegion *
builtin_polygon_region(POLYGON *polygon)
{
	int			npoints = polygon->npts;
	double	   *lng = palloc(sizeof(double) * (npoints + 1));
	double	   *lat = palloc(sizeof(double) * (npoints + 1));
	GeoRing		ring;
	GeoPolygon	geopolygon;

	if (npoints < 3)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query polygon must have at least 3 vertices, got %d", npoints)));
	for (int i = 0; i < npoints; i++)
	{
		lng[i] = polygon->p[i].x;
		lat[i] = polygon->p[i].y;
	}
	/* the built-in polygon is implicitly closed */
	lng[npoints] = lng[0];
	lat[npoints] = lat[0];
	ring.npoints = npoints + 1;
	ring.lng = lng;
	ring.lat = lat;
	geopolygon.nrings = 1;
	geopolygon.rings = &ring;
	return georegion_polygons(1, &geopolygon, false);
}

/*
 * known_valid: the polygon passed every check before (geo_regioncache.c's
 * shared tier vouches for it), and PostGIS's ST_IsValid need not run again
 */
GeoRegion *
geo_polygon_region(GeoColumnKind kind, Datum polygon, bool known_valid)
{
	switch (kind)
	{
		case GEO_COLUMN_POINT:
			return builtin_polygon_region(DatumGetPolygonP(polygon));
		case GEO_COLUMN_GEOGRAPHY:
			return geo_postgis_polygon_region(polygon, true, known_valid);
		case GEO_COLUMN_GEOMETRY:
			return geo_postgis_polygon_region(polygon, false, known_valid);
	}
	return NULL;				/* keep compiler quiet */
}

/* ---- archer_cap ---- */

static ArcherCap *
make_cap(double lat, double lng, double radius, bool use_spheroid)
{
	ArcherCap  *cap = palloc0(sizeof(ArcherCap));

	geo_check_latlng(lat, lng);
	if (isnan(radius) || radius < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("radius must be a non-negative number of meters, got %g", radius)));
	cap->lat = lat;
	cap->lng = lng;
	cap->radius = radius;
	cap->use_spheroid = use_spheroid ? 1 : 0;
	return cap;
}

Datum
archer_cap_in(PG_FUNCTION_ARGS)
{
	char	   *str = PG_GETARG_CSTRING(0);
	double		lng;
	double		lat;
	double		radius;
	int			consumed = 0;
	bool		use_spheroid = true;
	char	   *rest;

	if (sscanf(str, " <(%lf,%lf),%lf%n", &lng, &lat, &radius, &consumed) != 3)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type archer_cap: \"%s\"", str),
				 errhint("Expected <(lng,lat),meters> optionally followed by ,sphere or ,spheroid before >.")));
	rest = str + consumed;
	while (*rest == ' ')
		rest++;
	if (strncmp(rest, ",sphere>", 8) == 0)
	{
		use_spheroid = false;
		rest += 8;
	}
	else if (strncmp(rest, ",spheroid>", 10) == 0)
		rest += 10;
	else if (*rest == '>')
		rest++;
	else
		rest = NULL;
	while (rest && *rest == ' ')
		rest++;
	if (rest == NULL || *rest != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type archer_cap: \"%s\"", str)));
	PG_RETURN_POINTER(make_cap(lat, lng, radius, use_spheroid));
}

Datum
archer_cap_out(PG_FUNCTION_ARGS)
{
	ArcherCap  *cap = DatumGetArcherCapP(PG_GETARG_DATUM(0));

	PG_RETURN_CSTRING(psprintf("<(%.17g,%.17g),%.17g,%s>", cap->lng, cap->lat,
							   cap->radius, cap->use_spheroid ? "spheroid" : "sphere"));
}

Datum
archer_cap_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	double		lng = pq_getmsgfloat8(buf);
	double		lat = pq_getmsgfloat8(buf);
	double		radius = pq_getmsgfloat8(buf);
	bool		use_spheroid = pq_getmsgbyte(buf) != 0;

	PG_RETURN_POINTER(make_cap(lat, lng, radius, use_spheroid));
}

Datum
archer_cap_send(PG_FUNCTION_ARGS)
{
	ArcherCap  *cap = DatumGetArcherCapP(PG_GETARG_DATUM(0));
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendfloat8(&buf, cap->lng);
	pq_sendfloat8(&buf, cap->lat);
	pq_sendfloat8(&buf, cap->radius);
	pq_sendbyte(&buf, cap->use_spheroid ? 1 : 0);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

static ArcherCap *
postgis_cap(Datum center, bool geography, double radius, bool use_spheroid)
{
	double		lat;
	double		lng;

	if (!geo_postgis_point(center, geography, &lat, &lng))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the center of a radius query must not be an empty point")));
	return make_cap(lat, lng, radius, use_spheroid);
}

Datum
archer_cap_point(PG_FUNCTION_ARGS)
{
	Point	   *center = PG_GETARG_POINT_P(0);

	PG_RETURN_POINTER(make_cap(center->y, center->x, PG_GETARG_FLOAT8(1), false));
}

Datum
archer_cap_geography(PG_FUNCTION_ARGS)
{
	PG_RETURN_POINTER(postgis_cap(PG_GETARG_DATUM(0), true, PG_GETARG_FLOAT8(1),
								  PG_GETARG_BOOL(2)));
}

Datum
archer_cap_geometry(PG_FUNCTION_ARGS)
{
	PG_RETURN_POINTER(postgis_cap(PG_GETARG_DATUM(0), false, PG_GETARG_FLOAT8(1),
								  PG_GETARG_BOOL(2)));
}

/* ---- exact predicates ---- */

static bool
point_in_cap(Point *point, const ArcherCap *cap)
{
	geo_check_latlng(point->y, point->x);
	return geo_sphere_distance(point->y, point->x, cap->lat, cap->lng) <= cap->radius;
}

Datum
archer_point_in_cap(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(point_in_cap(PG_GETARG_POINT_P(0), DatumGetArcherCapP(PG_GETARG_DATUM(1))));
}

static bool
postgis_in_cap(FunctionCallInfo fcinfo, bool geography, Datum value, const ArcherCap *cap)
{
	double		lat;
	double		lng;

	/* an empty point is within no distance of anything */
	if (!geo_postgis_point(value, geography, &lat, &lng))
		return false;
	return geo_postgis_dwithin(fcinfo->flinfo, geography, value, cap);
}

Datum
archer_geography_in_cap(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(postgis_in_cap(fcinfo, true, PG_GETARG_DATUM(0),
								  DatumGetArcherCapP(PG_GETARG_DATUM(1))));
}

Datum
archer_geometry_in_cap(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(postgis_in_cap(fcinfo, false, PG_GETARG_DATUM(0),
								  DatumGetArcherCapP(PG_GETARG_DATUM(1))));
}

Datum
archer_dwithin_point(PG_FUNCTION_ARGS)
{
	Point	   *center = PG_GETARG_POINT_P(1);
	ArcherCap  *cap = make_cap(center->y, center->x, PG_GETARG_FLOAT8(2), false);

	PG_RETURN_BOOL(point_in_cap(PG_GETARG_POINT_P(0), cap));
}

Datum
archer_dwithin_geography(PG_FUNCTION_ARGS)
{
	ArcherCap  *cap = postgis_cap(PG_GETARG_DATUM(1), true, PG_GETARG_FLOAT8(2),
								  PG_GETARG_BOOL(3));

	PG_RETURN_BOOL(postgis_in_cap(fcinfo, true, PG_GETARG_DATUM(0), cap));
}

Datum
archer_dwithin_geometry(PG_FUNCTION_ARGS)
{
	ArcherCap  *cap = postgis_cap(PG_GETARG_DATUM(1), false, PG_GETARG_FLOAT8(2),
								  PG_GETARG_BOOL(3));

	PG_RETURN_BOOL(postgis_in_cap(fcinfo, false, PG_GETARG_DATUM(0), cap));
}

/*
 * The region of a polygon predicate, as the index builds it: the same
 * function (geo_polygon_region) makes both, so a region the index refuses
 * (not a valid polygon, wrong SRID, not a polygon at all, ...) raises the
 * same error on a sequential scan, before any row is looked at, as on an
 * index scan.  Built once per query and kept in fn_extra with a copy of the
 * polygon it came from, compared byte for byte: the same address may hold
 * another polygon in a later call.  The PostGIS predicates keep their own
 * state in a separate FmgrInfo (postgis), whose fn_extra geo_postgis.c owns.
 */
typedef struct PredicateRegion
{
	struct varlena *polygon;	/* detoasted copy; NULL: none yet */
	GeoRegion  *region;
	MemoryContext context;		/* polygon and region */
	FmgrInfo	postgis;
} PredicateRegion;

static PredicateRegion *
predicate_region(FunctionCallInfo fcinfo, GeoColumnKind kind, Datum polygon)
{
	PredicateRegion *cache = (PredicateRegion *) fcinfo->flinfo->fn_extra;
	struct varlena *raw = PG_DETOAST_DATUM(polygon);

	if (cache == NULL)
	{
		cache = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(PredicateRegion));
		cache->context = AllocSetContextCreate(fcinfo->flinfo->fn_mcxt,
											   "archer polygon cache",
											   ALLOCSET_DEFAULT_SIZES);
		cache->postgis.fn_mcxt = fcinfo->flinfo->fn_mcxt;
		fcinfo->flinfo->fn_extra = cache;
	}
	if (cache->polygon == NULL ||
		VARSIZE(cache->polygon) != VARSIZE(raw) ||
		memcmp(cache->polygon, raw, VARSIZE(raw)) != 0)
	{
		MemoryContext oldcxt;

		MemoryContextReset(cache->context);
		cache->polygon = NULL;
		oldcxt = MemoryContextSwitchTo(cache->context);
		cache->region = geo_polygon_region(kind, PointerGetDatum(raw), false);
		cache->polygon = palloc(VARSIZE(raw));
		memcpy(cache->polygon, raw, VARSIZE(raw));
		MemoryContextSwitchTo(oldcxt);
	}
	return cache;
}

/* Point-in-polygon for the built-in types: the region first, as the index does */
Datum
archer_within_point(PG_FUNCTION_ARGS)
{
	PredicateRegion *cache = predicate_region(fcinfo, GEO_COLUMN_POINT, PG_GETARG_DATUM(1));
	Point	   *point = PG_GETARG_POINT_P(0);

	geo_check_latlng(point->y, point->x);
	PG_RETURN_BOOL(georegion_contains_point(cache->region, point->x, point->y));
}

static bool
postgis_within(FunctionCallInfo fcinfo, bool geography)
{
	PredicateRegion *cache = predicate_region(fcinfo, geography ? GEO_COLUMN_GEOGRAPHY :
											  GEO_COLUMN_GEOMETRY, PG_GETARG_DATUM(1));
	double		lat;
	double		lng;

	if (!geo_postgis_point(PG_GETARG_DATUM(0), geography, &lat, &lng))
		return false;
	return geo_postgis_intersects(&cache->postgis, geography, PG_GETARG_DATUM(0),
								  PG_GETARG_DATUM(1));
}

Datum
archer_within_geography(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(postgis_within(fcinfo, true));
}

Datum
archer_within_geometry(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(postgis_within(fcinfo, false));
}

Datum
archer_geo_cellid_point(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64((int64) geo_value_cellid(GEO_COLUMN_POINT, PG_GETARG_DATUM(0), false));
}

/* ---- planner support ---- */

static Oid
sibling_function(Oid funcid, const char *name, int nargs, Oid *argtypes)
{
	char	   *nspname = get_namespace_name(get_func_namespace(funcid));
	List	   *qualname = list_make2(makeString(nspname), makeString(pstrdup(name)));

	return LookupFuncName(qualname, nargs, argtypes, true);
}

/*
 * Index condition for archer_dwithin(a, b, meters [, use_spheroid]) where a
 * or b is the indexed column: "col <@ archer_cap(other, meters [, ...])".
 */
static List *
dwithin_index_condition(SupportRequestIndexCondition *req, List *args)
{
	Node	   *column = list_nth(args, req->indexarg);
	Node	   *center = list_nth(args, 1 - req->indexarg);
	Oid			coltype = exprType(column);
	Oid			argtypes[3];
	int			nargs = list_length(args) - 1;
	List	   *capargs;
	Oid			capfunc;
	Oid			captype;
	Oid			opno;
	Expr	   *capexpr;

	if (req->indexarg > 1 || contain_var_clause(center) ||
		contain_volatile_functions(center) ||
		contain_var_clause((Node *) list_nth(args, 2)))
		return NIL;
	if (nargs == 3 && contain_var_clause((Node *) list_nth(args, 3)))
		return NIL;

	argtypes[0] = exprType(center);
	argtypes[1] = FLOAT8OID;
	argtypes[2] = BOOLOID;
	capfunc = sibling_function(req->funcid, "archer_cap", nargs, argtypes);
	if (!OidIsValid(capfunc))
		return NIL;
	captype = get_func_rettype(capfunc);
	opno = get_opfamily_member(req->opfamily, coltype, captype, GEO_STRATEGY_CAP);
	if (!OidIsValid(opno))
		return NIL;

	capargs = list_make2(center, list_nth(args, 2));
	if (nargs == 3)
		capargs = lappend(capargs, list_nth(args, 3));
	capexpr = (Expr *) makeFuncExpr(capfunc, captype, capargs, InvalidOid,
									InvalidOid, COERCE_EXPLICIT_CALL);
	req->lossy = false;
	return list_make1(make_opclause(opno, BOOLOID, false, (Expr *) column,
									capexpr, InvalidOid, InvalidOid));
}

/* Index condition for archer_within(col, region): "col <@@ region" */
static List *
within_index_condition(SupportRequestIndexCondition *req, List *args)
{
	Node	   *column = linitial(args);
	Node	   *region = lsecond(args);
	Oid			opno;

	if (req->indexarg != 0 || contain_var_clause(region) ||
		contain_volatile_functions(region))
		return NIL;
	opno = get_opfamily_member(req->opfamily, exprType(column), exprType(region),
							   GEO_STRATEGY_REGION);
	if (!OidIsValid(opno))
		return NIL;
	req->lossy = false;
	return list_make1(make_opclause(opno, BOOLOID, false, (Expr *) column,
									(Expr *) region, InvalidOid, InvalidOid));
}

/*
 * Only an archer_geo index can take these conditions: other access methods
 * give the same strategy numbers to unrelated operators (2 is &< in
 * GiST's, SP-GiST's and BRIN's geometry families).
 */
static bool
opfamily_is_archer_geo(Oid opfamily)
{
	HeapTuple	tuple = SearchSysCache1(OPFAMILYOID, ObjectIdGetDatum(opfamily));
	Oid			method;

	if (!HeapTupleIsValid(tuple))
		return false;
	method = ((Form_pg_opfamily) GETSTRUCT(tuple))->opfmethod;
	ReleaseSysCache(tuple);
	return method == get_index_am_oid("archer_geo", true);
}

/*
 * The C function a function of language C runs (NULL for any other
 * function, or a symbol its library lacks): how the planner hooks below
 * tell our functions and types from others.  Names would not do: a
 * function or type of the same name in another schema, or a renamed one,
 * is not ours, and ours may be renamed.  Not fmgr_info's address: for a
 * function with SET options or SECURITY DEFINER that is fmgr's wrapper.
 */
static PGFunction
c_function_of(Oid funcid)
{
	HeapTuple	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	Form_pg_proc proc;
	PGFunction	impl = NULL;

	if (!HeapTupleIsValid(tuple))
		return NULL;
	proc = (Form_pg_proc) GETSTRUCT(tuple);
	if (proc->prolang == ClanguageId)
	{
		bool		binnull;
		bool		srcnull;
		Datum		probin = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_probin, &binnull);
		Datum		prosrc = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_prosrc, &srcnull);

		if (!binnull && !srcnull)
			impl = load_external_function(TextDatumGetCString(probin),
										  TextDatumGetCString(prosrc), false, NULL);
	}
	ReleaseSysCache(tuple);
	return impl;
}

/* Whether impl is one of the n functions of list */
static bool
is_one_of(PGFunction impl, const PGFunction *list, int n)
{
	for (int i = 0; impl != NULL && i < n; i++)
		if (impl == list[i])
			return true;
	return false;
}

/* archer's predicates and the functions the planner turns into them */
static const PGFunction cap_predicates[] = {
	archer_point_in_cap, archer_geography_in_cap, archer_geometry_in_cap
};
static const PGFunction region_predicates[] = {
	archer_within_point, archer_within_geography, archer_within_geometry
};
static const PGFunction dwithin_functions[] = {
	archer_dwithin_point, archer_dwithin_geography, archer_dwithin_geometry
};

/*
 * Whether opno is archer's predicate for a search strategy: the scan
 * answers exactly that predicate (geodesic caps and polygon edges) and
 * marks most rows as needing no recheck, so another operator with the
 * same types (core's <@ on point and polygon is planar) would get wrong
 * answers.
 */
bool
geo_search_operator_ok(int strategy, Oid opno)
{
	PGFunction	impl = c_function_of(get_opcode(opno));

	if (strategy == GEO_STRATEGY_CAP)
		return is_one_of(impl, cap_predicates, lengthof(cap_predicates));
	if (strategy == GEO_STRATEGY_REGION)
		return is_one_of(impl, region_predicates, lengthof(region_predicates));
	return true;
}

/* Whether typid is archer_cap (by its input function) */
bool
geo_type_is_cap(Oid typid)
{
	HeapTuple	tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	Oid			input;

	if (!HeapTupleIsValid(tuple))
		return false;
	input = ((Form_pg_type) GETSTRUCT(tuple))->typinput;
	ReleaseSysCache(tuple);
	return c_function_of(input) == archer_cap_in;
}

Datum
archer_geo_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);

	if (IsA(rawreq, SupportRequestIndexCondition))
	{
		SupportRequestIndexCondition *req = (SupportRequestIndexCondition *) rawreq;
		List	   *args;
		PGFunction	impl;

		if (!is_funcclause(req->node) || !opfamily_is_archer_geo(req->opfamily))
			PG_RETURN_POINTER(NULL);
		args = ((FuncExpr *) req->node)->args;
		impl = c_function_of(req->funcid);
		if (list_length(args) >= 3 &&
			is_one_of(impl, dwithin_functions, lengthof(dwithin_functions)))
			PG_RETURN_POINTER(dwithin_index_condition(req, args));
		if (list_length(args) == 2 &&
			is_one_of(impl, region_predicates, lengthof(region_predicates)))
			PG_RETURN_POINTER(within_index_condition(req, args));
	}
	PG_RETURN_POINTER(NULL);
}

/*
 * Restriction selectivity of "col <@ cap" and "col <@@ region": the cap's
 * share of the sphere scaled for clustered data when the cap is known at
 * plan time, about one row when it is not, a small default for regions.
 */
Datum
archer_geo_restrict(PG_FUNCTION_ARGS)
{
	PlannerInfo *root = (PlannerInfo *) PG_GETARG_POINTER(0);
	Oid			operator = PG_GETARG_OID(1);
	List	   *args = (List *) PG_GETARG_POINTER(2);
	int			varRelid = PG_GETARG_INT32(3);
	VariableStatData vardata;
	Node	   *other;
	bool		varonleft;
	Oid			lefttype;
	Oid			righttype;
	bool		is_cap;
	double		selec;

	op_input_types(operator, &lefttype, &righttype);
	is_cap = geo_type_is_cap(righttype);
	selec = is_cap ? GEO_DEFAULT_SEL_CAP : GEO_DEFAULT_SEL_REGION;

	if (!get_restriction_variable(root, args, varRelid, &vardata, &other, &varonleft))
		PG_RETURN_FLOAT8(selec);
	/* the cap is the right operand: with the column on the right, other is no cap */
	if (is_cap && varonleft && IsA(other, Const) && !((Const *) other)->constisnull)
	{
		ArcherCap  *cap = DatumGetArcherCapP(((Const *) other)->constvalue);
		double		angle = Min(cap->radius / GEO_EARTH_RADIUS, M_PI);
		double		fraction = (1.0 - cos(angle)) / 2.0;

		selec = Min(1.0, fraction * GEO_CLUSTER_FACTOR + 1e-7);
	}
	else if (is_cap && vardata.rel != NULL && vardata.rel->tuples >= 1)
	{
		/*
		 * A cap unknown at plan time: a prepared statement's parameters (a
		 * generic plan) or another table's column (a nested loop).  Guess
		 * about one row, like an equality lookup.  The plan cache keeps a
		 * generic plan only when it costs no more than the custom plans it
		 * has seen; a larger guess made it dearer than any small radius
		 * query's custom plan, so every execution was planned afresh, and
		 * planning took longer than the scan.
		 */
		selec = 1.0 / vardata.rel->tuples;
	}
	ReleaseVariableStats(vardata);
	PG_RETURN_FLOAT8(selec);
}

/*
 * What a column of type typid holds, if archer_geo can index it: by type
 * OID, so that a type of PostGIS's name in another schema is not PostGIS's
 */
bool
geo_type_column_kind(Oid typid, GeoColumnKind *kind)
{
	if (typid == POINTOID)
	{
		*kind = GEO_COLUMN_POINT;
		return true;
	}
	return geo_postgis_column_kind(typid, kind);
}

/*
 * What the indexed column holds, from the operator class's input type;
 * cached in rd_amcache since inserts ask for every row.
 */
GeoColumnKind
geo_column_kind(Relation index)
{
	Oid			typid = index->rd_opcintype[0];
	GeoColumnKind kind;

	if (index->rd_amcache != NULL)
		return *(GeoColumnKind *) index->rd_amcache;

	if (!geo_type_column_kind(typid, &kind))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("archer_geo cannot index type %s", format_type_be(typid))));

	index->rd_amcache = MemoryContextAlloc(index->rd_indexcxt, sizeof(GeoColumnKind));
	*(GeoColumnKind *) index->rd_amcache = kind;
	return kind;
}
