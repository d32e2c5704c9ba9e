/*
 * fuzz_geo.c: libFuzzer harness for archer_geo's decoders and regions.
 *
 * The first byte picks the target, the rest is its input:
 *	0, 1	geo_decode_point (geometry, geography): a serialized PostGIS value;
 *			first geo_decode_center_raw, the kNN centre of any shape: its
 *			extent must be >= 0, and a shape's centre finite
 *	2, 3	geo_decode_wkb_region (geodesic, planar edges): WKB polygons; a
 *			region that decodes is covered, and every sample point it
 *			contains must lie in a covering cell; an INSIDE cell (of the
 *			covering, or for planar regions a cell within a PARTIAL one
 *			judged whole) must hold only points the region contains, a
 *			DISJOINT one none
 *	4	archer_cap_in: the text form of a cap; its covering must hold points
 *		well inside the cap in eight directions
 *	5	archer_cap_recv: the binary form, checked the same way
 * A clear ERROR is an expected outcome; a crash, a sanitizer report or a
 * covering that misses part of its region is a finding (abort).
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "lib/stringinfo.h"

#include "geo.h"
#include "pgstub.h"

extern int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern Datum archer_cap_in(PG_FUNCTION_ARGS);
extern Datum archer_cap_recv(PG_FUNCTION_ARGS);

/* Index of the covering cell holding the leaf cell of (lat, lng), or -1 */
static int
covering_cell_of(const GeoCoverCell *cells, int ncells, double lat, double lng)
{
	S2CellId	leaf = s2_cellid_from_point(s2_point_from_latlng(lat, lng));

	for (int i = 0; i < ncells; i++)
		if (s2_cellid_contains(cells[i].cellid, leaf))
			return i;
	return -1;
}

/*
 * The decision for a cell holding the point, at a level between its
 * covering cell's and the leaf's picked by pick, must agree with the exact
 * predicate; returns it
 */
static GeoRelation
check_cell_decision(GeoRegion *region, const GeoCoverCell *cell, int cover_index,
					double lat, double lng, uint8 pick)
{
	bool		contains = georegion_contains_point(region, lng, lat);
	GeoRelation relation = cell->relation;

	if (relation == GEO_PARTIAL && georegion_is_planar(region))
	{
		S2CellId	leaf = s2_cellid_from_point(s2_point_from_latlng(lat, lng));
		int			level = s2_cellid_level(cell->cellid);

		level += pick % (S2_MAX_LEVEL + 1 - level);
		relation = georegion_relate_planar_cell(region, cover_index,
												s2_cellid_parent(leaf, level));
	}
	if ((relation == GEO_INSIDE && !contains) || (relation == GEO_DISJOINT && contains))
		abort();
	return relation;
}

#define FUZZ_GEO_SAMPLES	16

/*
 * Cell decisions for points sampled from the input's bytes, anywhere on
 * the globe; salt varies the cells' levels.  Each decision goes to
 * relations[k] for the k-th sample, or must equal it if check_same.
 */
static void
check_sampled_points(GeoRegion *region, const GeoCoverCell *cells, int ncells,
					 const uint8 *data, size_t size, uint8 salt,
					 GeoRelation *relations, bool check_same)
{
	for (size_t i = 0; i + 4 <= size && i < 4 * FUZZ_GEO_SAMPLES; i += 4)
	{
		double		lng = ((data[i] << 8) | data[i + 1]) * (360.0 / 65535.0) - 180.0;
		double		lat = ((data[i + 2] << 8) | data[i + 3]) * (180.0 / 65535.0) - 90.0;
		int			cover_index = covering_cell_of(cells, ncells, lat, lng);
		GeoRelation relation = GEO_DISJOINT;

		if (cover_index < 0)
		{
			if (georegion_contains_point(region, lng, lat))
				abort();
		}
		else
			relation = check_cell_decision(region, &cells[cover_index], cover_index,
										   lat, lng, data[i] ^ data[i + 3] ^ salt);
		if (check_same && relation != relations[i / 4])
			abort();
		relations[i / 4] = relation;
	}
}

/*
 * Decisions must not change once remembered, filed sorted (twice, the
 * second time with new ones among them) or not
 */
static void
check_polygon_covering(GeoRegion *region, const uint8 *data, size_t size)
{
	GeoCoverCell *cells;
	int			ncells = georegion_cover(region, 4 + (size % 61), -1, &cells);
	GeoRelation first[FUZZ_GEO_SAMPLES];
	GeoRelation second[FUZZ_GEO_SAMPLES];

	check_sampled_points(region, cells, ncells, data, size, 0, first, false);
	georegion_settle(region, true);
	check_sampled_points(region, cells, ncells, data, size, 0, first, true);
	check_sampled_points(region, cells, ncells, data, size, 1, second, false);
	georegion_settle(region, true);
	check_sampled_points(region, cells, ncells, data, size, 0, first, true);
	check_sampled_points(region, cells, ncells, data, size, 1, second, true);
}

/* The point at angle (radians) from (lat, lng) towards bearing (radians) */
static void
destination(double lat, double lng, double angle, double bearing,
			double *lat2, double *lng2)
{
	double		phi = lat * M_PI / 180.0;
	double		lambda = lng * M_PI / 180.0;
	double		phi2 = asin(sin(phi) * cos(angle) + cos(phi) * sin(angle) * cos(bearing));
	double		lambda2 = lambda + atan2(sin(bearing) * sin(angle) * cos(phi),
										 cos(angle) - sin(phi) * sin(phi2));

	*lat2 = phi2 * 180.0 / M_PI;
	*lng2 = remainder(lambda2 * 180.0 / M_PI, 360.0);
}

static void
check_cap_covering(const ArcherCap *cap, int max_cells, int dense_level)
{
	GeoRegion  *region = geo_cap_region(GEO_COLUMN_POINT, cap);
	GeoCoverCell *cells;
	int			ncells = georegion_cover(region, max_cells, dense_level, &cells);
	double		angle = Min(cap->radius / GEO_EARTH_RADIUS, M_PI);

	if (covering_cell_of(cells, ncells, cap->lat, cap->lng) < 0)
		abort();
	for (int k = 0; k < 8; k++)
	{
		double		lat;
		double		lng;

		destination(cap->lat, cap->lng, angle * 0.999, k * M_PI / 4, &lat, &lng);
		if (covering_cell_of(cells, ncells, lat, lng) < 0)
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int			target;
	const uint8 *input;
	size_t		len;

	if (size < 1)
		return 0;
	target = data[0] % 6;
	input = data + 1;
	len = size - 1;

	if (sigsetjmp(stub_error_jump, 0) == 0)
	{
		switch (target)
		{
			case 0:
			case 1:
				{
					double		lat;
					double		lng;
					double		extent;
					int32		srid;

					if (geo_decode_center_raw(input, len, target == 1, &srid, &lat, &lng,
											  &extent) &&
						(!(extent >= 0) ||
						 (extent > 0 && isfinite(extent) && (!isfinite(lat) || !isfinite(lng)))))
						abort();
					(void) geo_decode_point(input, len, target == 1, &lat, &lng);
					break;
				}
			case 2:
			case 3:
				check_polygon_covering(geo_decode_wkb_region(input, len, target == 3),
									   input, len);
				break;
			case 4:
				{
					char	   *text = pnstrdup((const char *) input, len);
					LOCAL_FCINFO(fcinfo, 3);

					fcinfo->args[0].value = CStringGetDatum(text);
					fcinfo->args[1].value = ObjectIdGetDatum(InvalidOid);
					fcinfo->args[2].value = Int32GetDatum(-1);
					check_cap_covering((ArcherCap *) DatumGetPointer(archer_cap_in(fcinfo)),
									   4 + (int) (len % 29), (int) (len % 13) - 1);
					break;
				}
			case 5:
				{
					StringInfoData msg;
					LOCAL_FCINFO(fcinfo, 3);

					stub_message(&msg, input, len);
					fcinfo->args[0].value = PointerGetDatum(&msg);
					fcinfo->args[1].value = ObjectIdGetDatum(InvalidOid);
					fcinfo->args[2].value = Int32GetDatum(-1);
					check_cap_covering((ArcherCap *) DatumGetPointer(archer_cap_recv(fcinfo)),
									   4 + (int) (len % 29), (int) (len % 13) - 1);
					break;
				}
		}
	}
	stub_reset();
	return 0;
}
