/*-------------------------------------------------------------------------
 *
 * geo_regioncache.c
 *	  Each backend's cache of the polygon regions its index scans used last,
 *	  with their coverings.
 *
 * A polygon's region and covering are a pure function of its bytes, the
 * column kind and archer.geo_polygon_max_cells, and for a polygon of
 * thousands of vertices they are a large part of its scan: the covering
 * tests the edges again for every cell it refines.  An application
 * asking about the same polygons over and over (a country, a delivery zone,
 * a prepared statement with the same parameter) builds them once per
 * backend.
 *
 * Regions are not read-only: a scan refines the region's quadtree as it goes
 * (georegion.c), and every refinement allocates first and links last, so an
 * ERROR in the middle leaves it whole.  Scans only share a region within one
 * backend, and never run its code concurrently.
 *
 * Lifetime: a slot is in use while a scan holds it (refs > 0, counted by
 * geo_region_cache_acquire / _release); only unused slots are evicted, least
 * recently used first, or dropped when their quadtree has grown past
 * REGION_CACHE_SLOT_MAX_BYTES.  A scan that ends in an ERROR never releases
 * its slot, so at the end of each transaction, when no scan is left, every
 * count is reset.  When all slots are in use, a region is built in the
 * caller's memory context and not cached.  The last scan to let go of a
 * region has it file the cell decisions it learnt for the next scans
 * (georegion_settle).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "utils/memutils.h"

#include "geo.h"
#include "georegion.h"

#define REGION_CACHE_SLOTS				8
#define REGION_CACHE_SLOT_MAX_BYTES		(32 * 1024 * 1024)

typedef struct RegionCacheSlot
{
	GeoCachedRegion cached;		/* what callers see; first member */
	MemoryContext mcxt;			/* everything of this slot; NULL: slot free */
	int			refs;			/* scans holding it */
	uint64		last_used;
	GeoColumnKind kind;
	int			max_cells_setting;	/* archer.geo_polygon_max_cells when built */
	uint32		hash;
	Size		size;
	char	   *bytes;			/* the polygon's varlena, detoasted */
} RegionCacheSlot;

static RegionCacheSlot slots[REGION_CACHE_SLOTS];
static uint64 use_clock;
static bool callback_registered;

/*
 * Cells in a polygon's covering: archer.geo_polygon_max_cells, or fewer for
 * a polygon of few vertices.  Each cell costs its evaluation (with the
 * cells it rules out), each entry in a partial cell its decoding and point
 * test, an order of magnitude less; more cells trade the first for the
 * second.  A boundary of few edges needs few cells to follow it, so past
 * about one cell per vertex more cells only cost; a long boundary keeps
 * gaining up to the default maximum.  (Measured figures:
 * docs/benchmarks-history.md, "Figures once in code comments".)
 */
static int
polygon_covering_cells(const GeoRegion *region)
{
	int			cells = (int) (1.25 * georegion_nvertices(region));

	return Min(archer_geo_polygon_max_cells, Max(cells, 8));
}

/* The region and covering of a polygon, built in the current memory context */
static void
build_region(GeoCachedRegion *cached, GeoColumnKind kind, Datum polygon)
{
	cached->region = geo_polygon_region(kind, polygon);
	cached->ncells = georegion_cover(cached->region, polygon_covering_cells(cached->region),
									 -1, &cached->cells);
}

static void
free_slot(RegionCacheSlot *slot)
{
	MemoryContextDelete(slot->mcxt);
	memset(slot, 0, sizeof(RegionCacheSlot));
}

/* Drop the slot if no scan holds it and its quadtree has grown too large */
static bool
drop_if_oversized(RegionCacheSlot *slot)
{
	if (slot->mcxt != NULL && slot->refs == 0 &&
		MemoryContextMemAllocated(slot->mcxt, true) > REGION_CACHE_SLOT_MAX_BYTES)
	{
		free_slot(slot);
		return true;
	}
	return false;
}

/* At the end of a transaction no scan holds a slot any more */
static void
region_cache_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			for (int i = 0; i < REGION_CACHE_SLOTS; i++)
			{
				slots[i].refs = 0;
				drop_if_oversized(&slots[i]);
			}
			break;
		default:
			break;
	}
}

static RegionCacheSlot *
find_slot(GeoColumnKind kind, const char *bytes, Size size, uint32 hash)
{
	for (int i = 0; i < REGION_CACHE_SLOTS; i++)
	{
		RegionCacheSlot *slot = &slots[i];

		if (slot->mcxt != NULL && slot->hash == hash && slot->size == size &&
			slot->kind == kind && slot->max_cells_setting == archer_geo_polygon_max_cells &&
			memcmp(slot->bytes, bytes, size) == 0)
			return slot;
	}
	return NULL;
}

/* A free slot, evicting the least recently used unused one; NULL if all are in use */
static RegionCacheSlot *
claim_slot(void)
{
	RegionCacheSlot *victim = NULL;

	for (int i = 0; i < REGION_CACHE_SLOTS; i++)
	{
		RegionCacheSlot *slot = &slots[i];

		if (slot->mcxt == NULL)
			return slot;
		if (slot->refs == 0 && (victim == NULL || slot->last_used < victim->last_used))
			victim = slot;
	}
	if (victim != NULL)
		free_slot(victim);
	return victim;
}

/*
 * The region and covering of a polygon scan key, from the cache or built
 * (into it when a slot is free, else in the current memory context).  Pass
 * the result to geo_region_cache_release when the scan is done with it.
 */
GeoCachedRegion *
geo_region_cache_acquire(GeoColumnKind kind, Datum polygon)
{
	struct varlena *raw = PG_DETOAST_DATUM(polygon);
	Size		size = VARSIZE(raw);
	uint32		hash = hash_bytes((const unsigned char *) raw, (int) size);
	RegionCacheSlot *slot = find_slot(kind, (const char *) raw, size, hash);

	if (slot == NULL && (slot = claim_slot()) != NULL)
	{
		/*
		 * Built under the caller's context, so that an ERROR while building
		 * frees it with the scan, and moved under TopMemoryContext when done
		 */
		MemoryContext mcxt = AllocSetContextCreate(CurrentMemoryContext, "archer_geo region",
												   ALLOCSET_DEFAULT_SIZES);
		MemoryContext oldcxt = MemoryContextSwitchTo(mcxt);

		build_region(&slot->cached, kind, PointerGetDatum(raw));
		slot->bytes = palloc(size);
		memcpy(slot->bytes, raw, size);
		MemoryContextSwitchTo(oldcxt);
		MemoryContextSetParent(mcxt, TopMemoryContext);
		if (!callback_registered)
		{
			RegisterXactCallback(region_cache_xact_callback, NULL);
			callback_registered = true;
		}
		slot->mcxt = mcxt;
		slot->kind = kind;
		slot->max_cells_setting = archer_geo_polygon_max_cells;
		slot->hash = hash;
		slot->size = size;
	}
	if (slot == NULL)
	{
		GeoCachedRegion *uncached = palloc0(sizeof(GeoCachedRegion));

		build_region(uncached, kind, polygon);
		return uncached;
	}
	slot->refs++;
	slot->last_used = ++use_clock;
	return &slot->cached;
}

/* The scan is done with it */
void
geo_region_cache_release(GeoCachedRegion *cached)
{
	for (int i = 0; i < REGION_CACHE_SLOTS; i++)
	{
		if (&slots[i].cached == cached)
		{
			if (slots[i].refs > 0)
				slots[i].refs--;
			if (slots[i].refs == 0 && !drop_if_oversized(&slots[i]))
				georegion_settle(cached->region, false);
			return;
		}
	}
	/* not cached: it lives in the scan's memory context */
}
