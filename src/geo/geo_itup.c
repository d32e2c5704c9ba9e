/*-------------------------------------------------------------------------
 *
 * geo_itup.c
 *	  The index tuples archer_geo's index-only scans return.
 *
 * Index-only scans return each entry's value rebuilt from its point code
 * (geo_pointcode.c), written into one index tuple per scan; the few entries
 * whose value only the heap holds read it from there.  (An ordered
 * index-only scan orders its candidates by the exact <-> of these values
 * itself, in geo_knn.c, since the executor cannot reorder it.)
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "access/relscan.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/expandeddatum.h"
#include "utils/geo_decls.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "geo_scan.h"

/* ---- index-only scans ---- */

/*
 * The index tuple of a plain value, made once per scan; each entry's point
 * is then written over its coordinates (x, the longitude, then y).
 */
static void
prepare_plain_itup(IndexScanDesc scan)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	TupleDesc	desc = RelationGetDescr(scan->indexRelation);
	MemoryContext oldcxt = MemoryContextSwitchTo(so->itupcxt);
	Point		origin = {0, 0};
	Datum		value;
	bool		isnull = false;
	char	   *stored;

	if (so->kind == GEO_COLUMN_POINT)
		value = PointPGetDatum(&origin);
	else
		value = geo_postgis_plain_point(so->kind == GEO_COLUMN_GEOGRAPHY);
	so->plain_itup = index_form_tuple(desc, &value, &isnull);
	stored = DatumGetPointer(index_getattr(so->plain_itup, 1, desc, &isnull));
	if (so->kind == GEO_COLUMN_POINT)
		so->plain_coords = stored;
	else
		so->plain_coords = VARDATA_ANY(stored) + VARSIZE_ANY_EXHDR(stored) - 2 * sizeof(double);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * A plain PostGIS point of an index-only scan, decoded only when something
 * reads it.  Decoding (the cell's centre, two arctangents) is most of what
 * an entry of an INSIDE cell costs, and a count(*) or a query that only
 * filters on other columns never reads the value.  It is handed out as an
 * expanded object, through a read-only pointer: PostgreSQL's TOAST
 * machinery flattens it wherever a value is read (every function detoasts
 * its arguments) or kept (copying a datum, forming a tuple), as it does
 * PL/pgSQL's expanded arrays.  One per scan, rewritten per row: like any
 * index tuple of a scan, valid until the next row.
 */
typedef struct GeoLazyPoint
{
	ExpandedObjectHeader hdr;
	GeoLeafEntry entry;			/* the row's entry; its code holds a value */
	struct varlena *plain;		/* the column type's plain point (see prepare_plain_itup) */
} GeoLazyPoint;

static Size
lazy_point_flat_size(ExpandedObjectHeader *eohptr)
{
	return VARSIZE(((GeoLazyPoint *) eohptr)->plain);
}

static void
lazy_point_flatten(ExpandedObjectHeader *eohptr, void *result, Size allocated_size)
{
	GeoLazyPoint *lazy = (GeoLazyPoint *) eohptr;
	Size		size = VARSIZE(lazy->plain);
	char	   *coords = (char *) result + size - 2 * sizeof(double);
	double		lat;
	double		lng;

	if (allocated_size != size ||
		geo_point_decode(&lazy->entry, &lat, &lng) != GEO_POINT_VALUE)
		elog(ERROR, "archer_geo: cannot flatten an index-only value");
	memcpy(result, lazy->plain, size);
	memcpy(coords, &lng, sizeof(double));
	memcpy(coords + sizeof(double), &lat, sizeof(double));
}

static const ExpandedObjectMethods lazy_point_methods = {
	lazy_point_flat_size,
	lazy_point_flatten
};

/* The lazy point of a scan and the index tuple that points to it */
static pg_noinline void
prepare_lazy_itup(IndexScanDesc scan)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	MemoryContext oldcxt = MemoryContextSwitchTo(so->itupcxt);
	Size		hoff = IndexInfoFindDataOffset(0);
	Size		size = MAXALIGN(hoff + EXPANDED_POINTER_SIZE);

	so->lazy = palloc0(sizeof(GeoLazyPoint));
	EOH_init_header(&so->lazy->hdr, &lazy_point_methods, so->itupcxt);
	so->lazy->plain = (struct varlena *)
		DatumGetPointer(geo_postgis_plain_point(so->kind == GEO_COLUMN_GEOGRAPHY));
	so->lazy_itup = palloc0(size);
	so->lazy_itup->t_info = size | INDEX_VAR_MASK;
	memcpy((char *) so->lazy_itup + hoff, DatumGetPointer(EOHPGetRODatum(&so->lazy->hdr)),
		   EXPANDED_POINTER_SIZE);
	MemoryContextSwitchTo(oldcxt);
}

/* The index tuple of an entry whose code holds a value, PostGIS columns */
static inline IndexTuple
lazy_value_itup(IndexScanDesc scan, const GeoLeafEntry *entry)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;

	if (so->lazy == NULL)
		prepare_lazy_itup(scan);
	so->lazy->entry = *entry;
	return so->lazy_itup;
}

/*
 * The value of the column in an entry's heap row, for the entries whose
 * point code sends the reader there.  SnapshotAny: the value is the same
 * for every version the entry covers, and the executor decides visibility
 * on its own.  A row already pruned away is dead to every snapshot, so the
 * NULL returned for it is never seen.
 */
static IndexTuple
heap_value_itup(IndexScanDesc scan, const GeoLeafEntry *entry)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;
	ItemPointerData tid = entry->tid;
	Datum		value = (Datum) 0;
	bool		isnull = true;
	MemoryContext oldcxt = MemoryContextSwitchTo(so->itupcxt);

	if (geo_visibility_fetch(so->vis, &tid, SnapshotAny))
		value = slot_getattr(so->vis->slot, so->heap_attno, &isnull);
	if (so->heap_itup != NULL)
		pfree(so->heap_itup);
	so->heap_itup = index_form_tuple(RelationGetDescr(scan->indexRelation), &value, &isnull);
	ExecClearTuple(so->vis->slot);
	MemoryContextSwitchTo(oldcxt);
	return so->heap_itup;
}

/*
 * The index tuple of an entry for an index-only scan, once its point is
 * decoded (and in point columns, where a value is cheap); valid until the
 * next call
 */
IndexTuple
geo_itup_entry(IndexScanDesc scan, const GeoLeafEntry *entry, GeoEntryPoint *point)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;

	geo_scan_decode_point(entry, point);
	switch (point->kind)
	{
		case GEO_POINT_VALUE:
			if (so->plain_itup == NULL)
				prepare_plain_itup(scan);
			memcpy(so->plain_coords, &point->lng, sizeof(double));
			memcpy(so->plain_coords + sizeof(double), &point->lat, sizeof(double));
			return so->plain_itup;
		case GEO_POINT_NULL:
			if (so->null_itup == NULL)
			{
				MemoryContext oldcxt = MemoryContextSwitchTo(so->itupcxt);
				Datum		value = (Datum) 0;
				bool		isnull = true;

				so->null_itup = index_form_tuple(RelationGetDescr(scan->indexRelation),
												 &value, &isnull);
				MemoryContextSwitchTo(oldcxt);
			}
			return so->null_itup;
		case GEO_POINT_IN_HEAP:
			break;
	}
	return heap_value_itup(scan, entry);
}

/* geo_itup_entry for an entry not decoded yet (out of line: keeps the point off hot stacks) */
static pg_noinline IndexTuple
undecoded_entry_itup(IndexScanDesc scan, const GeoLeafEntry *entry)
{
	GeoEntryPoint point = {POINT_UNDECODED};

	return geo_itup_entry(scan, entry, &point);
}

/* The index tuple of an entry, lazy where that pays; point as for geo_itup_return */
static pg_noinline IndexTuple
geo_itup_any(IndexScanDesc scan, const GeoLeafEntry *entry, GeoEntryPoint *point)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;

	if ((point == NULL || point->kind == POINT_UNDECODED) &&
		so->kind != GEO_COLUMN_POINT && geo_point_code_kind(entry) == GEO_POINT_VALUE)
		return lazy_value_itup(scan, entry);
	if (point == NULL)
		return undecoded_entry_itup(scan, entry);
	return geo_itup_entry(scan, entry, point);
}

/*
 * Give an index-only scan the entry's value; point is the entry's point if
 * decoded, or NULL.  (Condition scans pass NULL: the few points their
 * decisions decoded are decoded again here.)
 */
void
geo_itup_return(IndexScanDesc scan, const GeoLeafEntry *entry, GeoEntryPoint *point)
{
	GeoScanOpaque so = (GeoScanOpaque) scan->opaque;

	if (point == NULL && so->lazy != NULL && geo_point_code_kind(entry) == GEO_POINT_VALUE)
		scan->xs_itup = lazy_value_itup(scan, entry);
	else
		scan->xs_itup = geo_itup_any(scan, entry, point);
	scan->xs_itupdesc = RelationGetDescr(scan->indexRelation);
}

