/*-------------------------------------------------------------------------
 *
 * geo.h
 *	  archer_geo: an index of points on the sphere keyed by S2 leaf cell ids.
 *
 * The index is a B+-tree of (cellid, heap tid) keys in archer pages (see
 * storage.h for the common page layout and docs/geo.md for the design).
 *
 *	block 0			meta page: GeoMetaPageData
 *	leaf pages		dense array of GeoLeafEntry: a prefix sorted by (cellid, tid),
 *					then a short unsorted tail of recent inserts (see
 *					geo_insert.c); each entry also holds its exact point
 *					(geo_pointcode.c), for index-only scans
 *	internal pages	dense array of GeoInternalEntry; entry i's child holds
 *					keys >= entry i's key and < entry i+1's key
 *
 * Every page but the rightmost of its level has a high key (exclusive upper
 * bound) and a right link (Lehman & Yao), so a reader that arrives at a page
 * after it split moves right instead of missing keys.
 *
 * NULL and empty points are stored under GEO_NULL_CELLID, above every valid
 * cell id: region scans never reach them, and ordered (kNN) scans return
 * them last, as a sort puts NULL distances last.
 *
 * Locking:
 *	- readers hold one buffer content lock at a time (share), copy what they
 *	  need and release it before moving on;
 *	- inserts into a leaf with room take that leaf's exclusive lock only;
 *	- splits are serialized by a heavyweight page lock on the meta block
 *	  (GEO_SPLIT_LOCK) and done top-down, splitting every full page on the
 *	  way so that each split is one WAL record with at most 4 pages (page,
 *	  new sibling, parent, and for a root split the meta page);
 *	- VACUUM removes entries leaf by leaf under the leaf's exclusive lock;
 *	  pages are never unlinked, so page reuse is by key range.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHER_GEO_H
#define ARCHER_GEO_H

#include "postgres.h"

#include "access/amapi.h"
#include "access/genam.h"
#include "fmgr.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"

#include "georegion.h"
#include "s2cell.h"
#include "storage.h"

#define GEO_NULL_CELLID			UINT64_MAX

/* Strategy numbers of the operator classes */
#define GEO_STRATEGY_CAP		1	/* col <@ archer_cap */
#define GEO_STRATEGY_REGION		2	/* col <@@ polygon */
#define GEO_STRATEGY_DISTANCE	3	/* ORDER BY col <-> point */
#define GEO_NSTRATEGIES			3

/* Earth: the sphere of the point type, and the spheroid's bounds on it */
#define GEO_EARTH_RADIUS		6371008.8
/* the only SRID geometry columns and regions may have */
#define GEO_SRID_WGS84			4326
/* geodesic distance on WGS84 / great-circle distance on GEO_EARTH_RADIUS */
#define GEO_SPHEROID_MIN_RATIO	0.9940
#define GEO_SPHEROID_MAX_RATIO	1.0050

/* What the indexed column holds */
typedef enum GeoColumnKind
{
	GEO_COLUMN_POINT,			/* built-in point, x = lng, y = lat */
	GEO_COLUMN_GEOGRAPHY,		/* PostGIS geography(Point) */
	GEO_COLUMN_GEOMETRY			/* PostGIS geometry(Point, 4326) */
} GeoColumnKind;

typedef struct GeoKey
{
	uint64		cellid;
	ItemPointerData tid;
} GeoKey;

/* bytes of the exact point an entry keeps beside its cell id */
#define GEO_POINT_CODE_SIZE		10

typedef struct GeoLeafEntry
{
	uint64		cellid;
	ItemPointerData tid;
	uint8		point[GEO_POINT_CODE_SIZE];	/* see geo_pointcode.c */
} GeoLeafEntry;

/* What an entry's point code says about the column value */
typedef enum GeoPointCodeKind
{
	GEO_POINT_VALUE,			/* a point the code holds exactly */
	GEO_POINT_NULL,				/* SQL NULL */
	GEO_POINT_IN_HEAP			/* only the heap row has it */
} GeoPointCodeKind;

typedef struct GeoInternalEntry
{
	uint64		cellid;
	ItemPointerData tid;
	BlockNumber child;
} GeoInternalEntry;

#define GEO_LEAF_CAPACITY		((int) (ARCHER_PAGE_CAPACITY_BYTES / sizeof(GeoLeafEntry)))
#define GEO_INTERNAL_CAPACITY	((int) (ARCHER_PAGE_CAPACITY_BYTES / sizeof(GeoInternalEntry)))
/*
 * Most entries a leaf keeps unsorted after its sorted prefix.  Sorting the
 * tail in rewrites most of the page, a WAL record of several kB, so its
 * cost per insert falls with the tail's length; a scan reads the tail of
 * each leaf it visits linearly, which 128 entries (2 kB) keep cheap.
 */
#define GEO_LEAF_TAIL_MAX		128

#define GEO_SPLIT_LOCK			ARCHER_META_BLKNO

typedef struct GeoMetaPageData
{
	ArcherMetaCommon common;
	ArcherBufferMeta buffer;	/* the insert buffer (geo_buffer.c) */
	BlockNumber root;
	uint16		root_level;
	uint16		reserved;
} GeoMetaPageData;

#define GeoPageGetMeta(page) \
	((GeoMetaPageData *) PageGetContents(page))

/* archer_cap: the right operand of the radius operator */
typedef struct ArcherCap
{
	double		lng;
	double		lat;
	double		radius;			/* meters */
	int32		use_spheroid;	/* geography/geometry: spheroid, else sphere */
	int32		reserved;
} ArcherCap;

#define DatumGetArcherCapP(d)	((ArcherCap *) DatumGetPointer(d))

/* reloptions */
typedef struct GeoOptions
{
	int32		vl_len_;
	int			fillfactor;
	bool		insert_buffer;
} GeoOptions;

#define GEO_DEFAULT_FILLFACTOR	90

/* geo_handler.c */
extern void archer_geo_init(void);

/* geo_types.c: values, regions, predicates */
extern bool geo_value_latlng(GeoColumnKind kind, Datum value,
							 double *lat, double *lng);
extern uint64 geo_value_cellid(GeoColumnKind kind, Datum value, bool isnull);
extern GeoRegion *geo_cap_region(GeoColumnKind kind, const ArcherCap *cap);
extern GeoRegion *geo_polygon_region(GeoColumnKind kind, Datum polygon, bool known_valid);
extern double geo_sphere_distance(double lat1, double lng1, double lat2, double lng2);
extern GeoColumnKind geo_column_kind(Relation index);
extern bool geo_type_column_kind(Oid typid, GeoColumnKind *kind);
extern bool geo_type_is_cap(Oid typid);
extern bool geo_search_operator_ok(int strategy, Oid opno);

/* geo_regioncache.c: each backend's polygon regions and coverings */
typedef struct GeoCachedRegion
{
	GeoRegion  *region;
	GeoCoverCell *cells;
	int			ncells;
} GeoCachedRegion;

extern int	archer_geo_polygon_max_cells;
extern void geo_region_cache_define_settings(void);
extern void geo_region_cache_init(void);
extern GeoCachedRegion *geo_region_cache_acquire(GeoColumnKind kind, Datum polygon);
extern void geo_region_cache_release(GeoCachedRegion *cached);

/* geo_postgis.c: PostGIS values and exact predicates */
extern bool geo_postgis_column_kind(Oid typid, GeoColumnKind *kind);
extern bool geo_postgis_point(Datum value, bool geography, double *lat, double *lng);
extern bool geo_postgis_center_raw(Datum value, bool geography, int32 *srid,
								   double *lat, double *lng, double *extent);
extern GeoRegion *geo_postgis_polygon_region(Datum polygon, bool geography, bool known_valid);
extern bool geo_postgis_dwithin(FmgrInfo *flinfo, bool geography, Datum value,
								const ArcherCap *cap);
extern bool geo_postgis_intersects(FmgrInfo *flinfo, bool geography, Datum value,
								   Datum region);
extern Datum geo_postgis_make_point(bool geography, double lat, double lng);

extern bool geo_postgis_point_is_plain(Datum value, bool geography);
extern Datum geo_postgis_plain_point(bool geography);

/* geo_pointcode.c: the exact point beside each cell id */
extern void geo_make_leaf_entry(GeoColumnKind kind, Datum value, bool isnull,
								ItemPointer tid, GeoLeafEntry *entry);
extern GeoPointCodeKind geo_point_decode(const GeoLeafEntry *entry, double *lat, double *lng);
extern GeoPointCodeKind geo_point_code_kind(const GeoLeafEntry *entry);

/* geo_decode.c: PostGIS's binary forms, from bytes */
extern bool geo_decode_point(const uint8 *data, Size size, bool geography,
							 double *lat, double *lng);
extern bool geo_decode_point_raw(const uint8 *data, Size size, bool geography,
								 int32 *srid, double *lat, double *lng);
extern bool geo_decode_center_raw(const uint8 *data, Size size, bool geography,
								  int32 *srid, double *lat, double *lng, double *extent);
extern void geo_check_srid(int32 srid, bool geography);
extern void geo_check_latlng(double lat, double lng);
extern GeoRegion *geo_decode_wkb_region(const uint8 *data, Size size, bool planar);

/*
 * Key order: cell id, then heap TID.  Inline because sorts and binary
 * searches call it millions of times (ItemPointerCompare is out of line).
 */
static inline int
geo_key_cmp(uint64 cellid1, ItemPointer tid1, uint64 cellid2, ItemPointer tid2)
{
	uint64		t1;
	uint64		t2;

	if (cellid1 != cellid2)
		return cellid1 < cellid2 ? -1 : 1;
	t1 = archer_tid_key(tid1);
	t2 = archer_tid_key(tid2);
	return (t1 > t2) - (t1 < t2);
}

/* geo_tree.c: descending and reading the tree */
extern void geo_sort_leaf_entries(GeoLeafEntry *entries, size_t nentries);
extern Buffer geo_descend(Relation index, uint64 cellid, ItemPointer tid,
						  int leaf_lockmode);
extern Buffer geo_move_right(Relation index, Buffer buf, uint64 cellid,
							 ItemPointer tid, int lockmode);
extern int	geo_leaf_lower_bound(Page page, uint64 cellid, ItemPointer tid);
extern void geo_leaf_sort(Page page);
extern void geo_read_meta(Relation index, BlockNumber *root, uint16 *root_level);
extern int	geo_tree_height(Relation index);
extern void geo_init_meta_page(Page page, BlockNumber root, uint16 root_level);

/* geo_build.c */
extern IndexBuildResult *geo_build(Relation heap, Relation index, IndexInfo *indexInfo);

extern void geo_buildempty(Relation index);
extern char *geo_buildphasename(int64 phasenum);

/* geo_parallel.c */
typedef struct GeoParallelBuild GeoParallelBuild;
extern GeoParallelBuild *geo_parallel_begin(Relation heap, Relation index, IndexInfo *indexInfo);
extern double geo_parallel_ntuples(GeoParallelBuild *build);
extern void geo_parallel_open_runs(GeoParallelBuild *build);
extern bool geo_parallel_next_key(GeoParallelBuild *build, GeoLeafEntry *key);
extern void geo_parallel_end(GeoParallelBuild *build);

/* geo_insert.c: sorted runs of keys into the tree */
extern int	geo_tree_insert_run(Relation index, const GeoLeafEntry *run, int n,
								bool skip_present);

/* geo_visibility.c: which copies an index-only scan may answer from */
typedef struct GeoVisibility
{
	Relation	heap;
	Snapshot	snapshot;		/* the scan's */
	Buffer		vmbuf;			/* the visibility map page last read */
	struct IndexFetchTableData *fetch;	/* heap rows, made on first need */
	struct TupleTableSlot *slot;
	MemoryContext mcxt;			/* lives as long as the scan: fetch and slot */
} GeoVisibility;

extern void geo_visibility_init(GeoVisibility *vis, Relation heap, Snapshot snapshot);
extern void geo_visibility_end(GeoVisibility *vis);
extern int	geo_visibility_mark(GeoVisibility *vis, const GeoLeafEntry *entries, int n,
								bool *unsure);
extern int	geo_visibility_filter(GeoVisibility *vis, GeoLeafEntry *entries, int n,
								  const bool *unsure);
extern bool geo_visibility_fetch(GeoVisibility *vis, ItemPointer tid, Snapshot snapshot);

/* geo_buffer.c: inserts (aminsert), the session's pending keys, the insert buffer */
extern bool geo_insert(Relation index, Datum *values, bool *isnull,
					   ItemPointer ht_ctid, Relation heap,
					   IndexUniqueCheck checkUnique, bool indexUnchanged,
					   IndexInfo *indexInfo);
extern void geo_buffer_init(void);
extern bool geo_insert_buffered(Relation index);
extern void geo_pending_add(Relation index, const GeoLeafEntry *entry);
extern void geo_buffer_flush_pending(Relation index);
extern int64 geo_buffer_merge(Relation index, int64 max_entries);
extern void geo_buffer_vacuum_begin(Relation index);
extern void geo_buffer_vacuum_end(Relation index);
/*
 * Most insert buffer entries a scan reads: it keeps a copy, about 64 bytes
 * an entry with its TIDs and room for a key range of it (load_buffered in
 * geo_scan.c), 16 GB at most; past it scans raise an error until a merge
 */
#define GEO_BUFFER_SCAN_MAX_ENTRIES	(256 * 1024 * 1024)
extern GeoLeafEntry *geo_buffer_collect(Relation index, int *nentries,
										 GeoVisibility *vis);

/* geo_scan.c (with geo_knn.c and geo_itup.c, sharing geo_scan.h) */
extern int	archer_geo_max_cells;
extern void geo_scan_define_settings(void);
extern IndexScanDesc geo_beginscan(Relation index, int nkeys, int norderbys);
extern void geo_rescan(IndexScanDesc scan, ScanKey keys, int nkeys,
					   ScanKey orderbys, int norderbys);
extern bool geo_gettuple(IndexScanDesc scan, ScanDirection dir);
extern void geo_endscan(IndexScanDesc scan);

/* geo_vacuum.c */
extern IndexBulkDeleteResult *geo_bulkdelete(IndexVacuumInfo *info,
											 IndexBulkDeleteResult *stats,
											 IndexBulkDeleteCallback callback,
											 void *callback_state);
extern IndexBulkDeleteResult *geo_vacuumcleanup(IndexVacuumInfo *info,
												IndexBulkDeleteResult *stats);

#endif							/* ARCHER_GEO_H */
