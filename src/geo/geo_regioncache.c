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
 * Shared tier.  A backend's first scan of a polygon pays for its check
 * (ST_IsValid, which for a country of many parts costs more than the
 * covering) and its covering, and applications that connect per request
 * pay them on every connection.  With archer in shared_preload_libraries
 * the coverings of the last SHARED_REGIONS polygons (of at least
 * SHARED_REGION_MIN_BYTES) any backend built are kept in shared memory, keyed by the SHA-256 digest of the polygon's
 * bytes, the column kind and archer.geo_polygon_max_cells; a backend
 * that finds one there skips both, builds only the region (edges and
 * quadtree root, linear in the vertices), and adopts the covering
 * (georegion_adopt_cover): the quadtree grows as its entries need.  The
 * digest stands for the bytes: a covering is a pure function of them, and
 * finding two polygons with one SHA-256 digest is out of reach, so the
 * answers stay those of the polygon asked about.  A covering is only
 * stored after its polygon passed every check, so an entry also vouches
 * for the polygon's validity.  Without preloading every backend builds its
 * own, as before.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/cryptohash.h"
#include "common/hashfn.h"
#include "common/sha2.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
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
 * The shared tier: SHARED_REGIONS coverings of at most
 * SHARED_REGION_MAX_CELLS cells (the default archer.geo_polygon_max_cells
 * is 512), about 9 kB each, under one LWLock: a lookup copies one out
 * under the shared lock, a store takes it exclusively.
 */
#define SHARED_REGIONS					64
#define SHARED_REGION_MAX_CELLS			1024

/*
 * Smaller polygons (up to some 60 vertices) are checked and covered in
 * less than the digest's first use in a backend costs (OpenSSL's fetch of
 * SHA-256: about 0.6M instructions), so they are not shared
 */
#define SHARED_REGION_MIN_BYTES			1024
#define SHARED_REGION_LOCK_TRANCHE		"archer_geo_region_cache"

typedef struct SharedRegion
{
	int32		kind;			/* GeoColumnKind; -1: slot free */
	int32		max_cells_setting;
	int32		ncells;
	uint8		digest[PG_SHA256_DIGEST_LENGTH];	/* of the polygon's bytes */
	pg_atomic_uint64 last_used;
	S2CellId	cellids[SHARED_REGION_MAX_CELLS];
	uint8		relations[SHARED_REGION_MAX_CELLS];
} SharedRegion;

typedef struct SharedRegionCache
{
	LWLock	   *lock;
	pg_atomic_uint64 clock;
	SharedRegion regions[SHARED_REGIONS];
} SharedRegionCache;

/* NULL without shared_preload_libraries */
static SharedRegionCache *shared_cache;
static shmem_request_hook_type prev_shmem_request_hook;
static shmem_startup_hook_type prev_shmem_startup_hook;

static void
region_cache_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(SharedRegionCache)));
	RequestNamedLWLockTranche(SHARED_REGION_LOCK_TRANCHE, 1);
}

static void
region_cache_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared_cache = ShmemInitStruct("archer_geo region cache", sizeof(SharedRegionCache), &found);
	if (!found)
	{
		memset(shared_cache, 0, sizeof(SharedRegionCache));
		shared_cache->lock = &(GetNamedLWLockTranche(SHARED_REGION_LOCK_TRANCHE))->lock;
		pg_atomic_init_u64(&shared_cache->clock, 0);
		for (int i = 0; i < SHARED_REGIONS; i++)
		{
			shared_cache->regions[i].kind = -1;
			pg_atomic_init_u64(&shared_cache->regions[i].last_used, 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

int			archer_geo_polygon_max_cells = 512;

/* archer.geo_polygon_max_cells: the cells covering a polygon */
void
geo_region_cache_define_settings(void)
{
	DefineCustomIntVariable("archer.geo_polygon_max_cells",
							"Maximum number of S2 cells covering a polygon query.",
							"More cells leave fewer index entries near the boundary to test.",
							&archer_geo_polygon_max_cells, 512, 4, 100000,
							PGC_USERSET, 0, NULL, NULL, NULL);
}

/* From _PG_init: the shared tier exists only when the library is preloaded */
void
geo_region_cache_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = region_cache_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = region_cache_shmem_startup;
}

static void
polygon_digest(const struct varlena *raw, uint8 *digest)
{
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);

	if (ctx == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	if (pg_cryptohash_init(ctx) < 0 ||
		pg_cryptohash_update(ctx, (const uint8 *) VARDATA(raw), VARSIZE(raw) - VARHDRSZ) < 0 ||
		pg_cryptohash_final(ctx, digest, PG_SHA256_DIGEST_LENGTH) < 0)
		elog(ERROR, "archer: could not compute the digest of a polygon: %s",
			 pg_cryptohash_error(ctx));
	pg_cryptohash_free(ctx);
}

static bool
shared_region_matches(const SharedRegion *sr, GeoColumnKind kind, const uint8 *digest)
{
	return sr->kind == (int32) kind && sr->max_cells_setting == archer_geo_polygon_max_cells &&
		memcmp(sr->digest, digest, PG_SHA256_DIGEST_LENGTH) == 0;
}

/* The shared covering of a polygon, palloc'd into *cells, or -1 */
static int
shared_covering_lookup(GeoColumnKind kind, const uint8 *digest, GeoCoverCell **cells)
{
	GeoCoverCell *out = palloc(sizeof(GeoCoverCell) * SHARED_REGION_MAX_CELLS);
	int			ncells = -1;

	LWLockAcquire(shared_cache->lock, LW_SHARED);
	for (int i = 0; i < SHARED_REGIONS; i++)
	{
		SharedRegion *sr = &shared_cache->regions[i];

		if (!shared_region_matches(sr, kind, digest))
			continue;
		ncells = sr->ncells;
		for (int j = 0; j < ncells; j++)
		{
			out[j].cellid = sr->cellids[j];
			out[j].relation = (GeoRelation) sr->relations[j];
		}
		pg_atomic_write_u64(&sr->last_used, pg_atomic_add_fetch_u64(&shared_cache->clock, 1));
		break;
	}
	LWLockRelease(shared_cache->lock);
	if (ncells < 0)
		pfree(out);
	else						/* the region keeps them: no more than needed */
		*cells = repalloc(out, sizeof(GeoCoverCell) * Max(ncells, 1));
	return ncells;
}

/* Keep a covering for the other backends, in a free or the least recently used slot */
static void
shared_covering_store(GeoColumnKind kind, const uint8 *digest, int ncells,
					  const GeoCoverCell *cells)
{
	SharedRegion *victim = NULL;

	if (ncells > SHARED_REGION_MAX_CELLS)
		return;
	LWLockAcquire(shared_cache->lock, LW_EXCLUSIVE);
	for (int i = 0; i < SHARED_REGIONS; i++)
	{
		SharedRegion *sr = &shared_cache->regions[i];

		if (shared_region_matches(sr, kind, digest))
		{
			/* another backend stored it meanwhile */
			victim = NULL;
			break;
		}
		if (victim == NULL || (victim->kind >= 0 &&
							   (sr->kind < 0 || pg_atomic_read_u64(&sr->last_used) <
								pg_atomic_read_u64(&victim->last_used))))
			victim = sr;
	}
	if (victim != NULL)
	{
		victim->kind = (int32) kind;
		victim->max_cells_setting = archer_geo_polygon_max_cells;
		victim->ncells = ncells;
		memcpy(victim->digest, digest, PG_SHA256_DIGEST_LENGTH);
		for (int j = 0; j < ncells; j++)
		{
			victim->cellids[j] = cells[j].cellid;
			victim->relations[j] = (uint8) cells[j].relation;
		}
		pg_atomic_write_u64(&victim->last_used, pg_atomic_add_fetch_u64(&shared_cache->clock, 1));
	}
	LWLockRelease(shared_cache->lock);
	if (victim != NULL)
		elog(DEBUG1, "archer_geo: shared the covering of a polygon");
}

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

/*
 * The region and covering of a polygon (detoasted), built in the current
 * memory context, the covering taken from the shared tier when it has it
 */
static void
build_region(GeoCachedRegion *cached, GeoColumnKind kind, struct varlena *raw)
{
	uint8		digest[PG_SHA256_DIGEST_LENGTH];
	bool		shared = shared_cache != NULL && VARSIZE(raw) >= SHARED_REGION_MIN_BYTES;

	if (shared)
	{
		polygon_digest(raw, digest);
		cached->ncells = shared_covering_lookup(kind, digest, &cached->cells);
		if (cached->ncells >= 0)
		{
			/* it passed every check when it was stored */
			cached->region = geo_polygon_region(kind, PointerGetDatum(raw), true);
			georegion_adopt_cover(cached->region, cached->ncells, cached->cells);
			elog(DEBUG1, "archer_geo: took the covering of a polygon from shared memory");
			return;
		}
	}
	cached->region = geo_polygon_region(kind, PointerGetDatum(raw), false);
	cached->ncells = georegion_cover(cached->region, polygon_covering_cells(cached->region),
									 -1, &cached->cells);
	if (shared)
		shared_covering_store(kind, digest, cached->ncells, cached->cells);
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

		build_region(&slot->cached, kind, raw);
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

		build_region(uncached, kind, raw);
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
