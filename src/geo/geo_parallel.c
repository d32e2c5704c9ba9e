/*-------------------------------------------------------------------------
 *
 * geo_parallel.c
 *	  Parallel CREATE INDEX for archer_geo: the heap scan and the sort split
 *	  between the leader and max_parallel_maintenance_workers workers.
 *
 * Computing a row's entry (decoding the point, its cell id and point code)
 * is most of a build's work, and the sort most of the rest; both split by
 * heap block.  Each participant (every worker, and the leader) scans the
 * blocks a parallel heap scan hands it, collects its entries in memory up
 * to its share of maintenance_work_mem, sorts them and writes them as a
 * run: a file of GeoLeafEntry in (cell id, tid) order, in a SharedFileSet
 * that lives as long as the parallel context.  A participant whose share
 * fills up writes a run and starts another.  Once every worker is done,
 * the leader merges the runs (few: one per participant unless memory ran
 * short) into the key order geo_build writes the tree from, so the index
 * is the same, page for page, as a serial build's.
 *
 * Workers open the heap and index with the locks the leader holds (they
 * are in its lock group): ShareLock on the heap, or ShareUpdateExclusiveLock
 * for CONCURRENTLY, whose MVCC snapshot travels in the parallel scan.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "miscadmin.h"
#include "storage/buffile.h"
#include "storage/sharedfileset.h"
#include "storage/spin.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "geo.h"

#define GEO_PARALLEL_KEY_SHARED		UINT64CONST(0xA7E1000000000001)
#define GEO_PARALLEL_KEY_SCAN		UINT64CONST(0xA7E1000000000002)

/* entries read from a run at a time */
#define GEO_RUN_CHUNK	1024

typedef struct GeoParallelShared
{
	Oid			heaprelid;
	Oid			indexrelid;
	bool		isconcurrent;
	int			nparticipants;	/* workers planned, and the leader */
	int64		mem_per_participant;	/* bytes */
	SharedFileSet fileset;
	slock_t		mutex;
	/* the rest is written under mutex by each participant when it is done */
	double		ntuples;
	int			nruns[FLEXIBLE_ARRAY_MEMBER];	/* runs written, by participant */
} GeoParallelShared;

/* What one participant collects */
typedef struct GeoParticipant
{
	GeoParallelShared *shared;
	GeoColumnKind kind;
	int			number;			/* 0 .. nparticipants - 1 */
	GeoLeafEntry *keys;
	int64		nkeys;
	int64		maxkeys;
	int			nruns;
	double		ntuples;
	MemoryContext tmpcxt;
} GeoParticipant;

/* One run being read back by the leader's merge */
typedef struct GeoRun
{
	BufFile    *file;
	GeoLeafEntry *chunk;
	int			nchunk;
	int			pos;
} GeoRun;

struct GeoParallelBuild
{
	ParallelContext *pcxt;
	GeoParallelShared *shared;
	Snapshot	snapshot;
	GeoRun	   *runs;
	int			nruns;
};

PGDLLEXPORT void archer_geo_build_worker(dsm_segment *seg, shm_toc *toc);

static void
run_name(char *name, int participant, int run)
{
	snprintf(name, MAXPGPATH, "archer_geo.%d.%d", participant, run);
}

/* Sort what the participant holds and write it as its next run */
static void
write_run(GeoParticipant *part)
{
	char		name[MAXPGPATH];
	BufFile    *file;

	if (part->nkeys == 0)
		return;
	geo_sort_leaf_entries(part->keys, part->nkeys);
	run_name(name, part->number, part->nruns++);
	file = BufFileCreateFileSet(&part->shared->fileset.fs, name);
	for (int64 done = 0; done < part->nkeys; done += GEO_RUN_CHUNK)
	{
		CHECK_FOR_INTERRUPTS();
		BufFileWrite(file, part->keys + done,
					 sizeof(GeoLeafEntry) * Min(GEO_RUN_CHUNK, part->nkeys - done));
	}
	BufFileClose(file);
	part->nkeys = 0;
}

static void
participant_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
					 bool tupleIsAlive, void *state)
{
	GeoParticipant *part = (GeoParticipant *) state;
	MemoryContext oldcxt = MemoryContextSwitchTo(part->tmpcxt);
	GeoLeafEntry entry;

	geo_make_leaf_entry(part->kind, values[0], isnull[0], tid, &entry);
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(part->tmpcxt);
	if (part->nkeys == part->maxkeys)
		write_run(part);
	part->keys[part->nkeys++] = entry;
	part->ntuples++;
}

/*
 * Scan the blocks the parallel scan hands this participant, and write
 * what it collected as runs; report them in shared
 */
static void
participate(GeoParallelShared *shared, ParallelTableScanDesc pscan, Relation heap,
			Relation index, IndexInfo *indexInfo, int number, bool progress)
{
	GeoParticipant part = {0};
	TableScanDesc scan;

	part.shared = shared;
	part.kind = geo_column_kind(index);
	part.number = number;
	part.maxkeys = Max(shared->mem_per_participant / (int64) sizeof(GeoLeafEntry), 1024);
	part.keys = palloc_extended(sizeof(GeoLeafEntry) * part.maxkeys, MCXT_ALLOC_HUGE);
	part.tmpcxt = AllocSetContextCreate(CurrentMemoryContext,
										"archer_geo parallel build temporary context",
										ALLOCSET_DEFAULT_SIZES);
	scan = table_beginscan_parallel(heap, pscan);
	(void) table_index_build_scan(heap, index, indexInfo, true, progress,
								  participant_callback, &part, scan);
	write_run(&part);
	pfree(part.keys);
	MemoryContextDelete(part.tmpcxt);

	SpinLockAcquire(&shared->mutex);
	shared->ntuples += part.ntuples;
	shared->nruns[number] = part.nruns;
	SpinLockRelease(&shared->mutex);
}

void
archer_geo_build_worker(dsm_segment *seg, shm_toc *toc)
{
	GeoParallelShared *shared = shm_toc_lookup(toc, GEO_PARALLEL_KEY_SHARED, false);
	ParallelTableScanDesc pscan = shm_toc_lookup(toc, GEO_PARALLEL_KEY_SCAN, false);
	LOCKMODE	heap_lockmode = shared->isconcurrent ? ShareUpdateExclusiveLock : ShareLock;
	LOCKMODE	index_lockmode = shared->isconcurrent ? RowExclusiveLock : AccessExclusiveLock;
	Relation	heap = table_open(shared->heaprelid, heap_lockmode);
	Relation	index = index_open(shared->indexrelid, index_lockmode);
	IndexInfo  *indexInfo = BuildIndexInfo(index);

	indexInfo->ii_Concurrent = shared->isconcurrent;
	SharedFileSetAttach(&shared->fileset, seg);
	participate(shared, pscan, heap, index, indexInfo, ParallelWorkerNumber, false);
	index_close(index, index_lockmode);
	table_close(heap, heap_lockmode);
}

/*
 * Start a parallel build if the planner grants workers for this table
 * (max_parallel_maintenance_workers, the table's size and parallel_workers
 * option, parallel-safe index expressions); NULL for a serial build
 */
GeoParallelBuild *
geo_parallel_begin(Relation heap, Relation index, IndexInfo *indexInfo)
{
	GeoParallelBuild *build;
	GeoParallelShared *shared;
	ParallelTableScanDesc pscan;
	Size		shared_size;
	Size		scan_size;
	int			nworkers;

	nworkers = archer_build_workers(heap, index);
	if (nworkers <= 0)
		return NULL;

	build = palloc0(sizeof(GeoParallelBuild));
	EnterParallelMode();
	build->pcxt = CreateParallelContext("archer", "archer_geo_build_worker", nworkers);
	build->snapshot = indexInfo->ii_Concurrent ?
		RegisterSnapshot(GetTransactionSnapshot()) : SnapshotAny;

	shared_size = add_size(offsetof(GeoParallelShared, nruns),
						   mul_size(sizeof(int), nworkers + 1));
	scan_size = table_parallelscan_estimate(heap, build->snapshot);
	shm_toc_estimate_chunk(&build->pcxt->estimator, shared_size);
	shm_toc_estimate_chunk(&build->pcxt->estimator, scan_size);
	shm_toc_estimate_keys(&build->pcxt->estimator, 2);
	InitializeParallelDSM(build->pcxt);

	shared = shm_toc_allocate(build->pcxt->toc, shared_size);
	memset(shared, 0, shared_size);
	shared->heaprelid = RelationGetRelid(heap);
	shared->indexrelid = RelationGetRelid(index);
	shared->isconcurrent = indexInfo->ii_Concurrent;
	shared->nparticipants = nworkers + 1;
	shared->mem_per_participant = (int64) maintenance_work_mem * 1024 / shared->nparticipants;
	SpinLockInit(&shared->mutex);
	SharedFileSetInit(&shared->fileset, build->pcxt->seg);
	shm_toc_insert(build->pcxt->toc, GEO_PARALLEL_KEY_SHARED, shared);
	pscan = shm_toc_allocate(build->pcxt->toc, scan_size);
	table_parallelscan_initialize(heap, pscan, build->snapshot);
	shm_toc_insert(build->pcxt->toc, GEO_PARALLEL_KEY_SCAN, pscan);
	build->shared = shared;

	LaunchParallelWorkers(build->pcxt);
	ereport(DEBUG1,
			(errmsg_internal("archer_geo build of index \"%s\": %d of %d parallel workers launched",
							 RelationGetRelationName(index), build->pcxt->nworkers_launched,
							 nworkers)));

	/* the leader scans too, as the last participant, then waits for the rest */
	participate(shared, pscan, heap, index, indexInfo, nworkers, true);
	WaitForParallelWorkersToFinish(build->pcxt);
	return build;
}

/* Rows every participant indexed */
double
geo_parallel_ntuples(GeoParallelBuild *build)
{
	return build->shared->ntuples;
}

/* Refill a run's chunk; false once the run is read */
static bool
run_fill(GeoRun *run)
{
	size_t		nread = BufFileRead(run->file, run->chunk, sizeof(GeoLeafEntry) * GEO_RUN_CHUNK);

	if (nread % sizeof(GeoLeafEntry) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read a run of the parallel archer_geo build: read %zu bytes",
						nread)));
	run->nchunk = nread / sizeof(GeoLeafEntry);
	run->pos = 0;
	return run->nchunk > 0;
}

/* Open every run the participants wrote, for geo_parallel_next_key */
void
geo_parallel_open_runs(GeoParallelBuild *build)
{
	GeoParallelShared *shared = build->shared;
	int			total = 0;

	for (int p = 0; p < shared->nparticipants; p++)
		total += shared->nruns[p];
	build->runs = palloc0(sizeof(GeoRun) * Max(total, 1));
	for (int p = 0; p < shared->nparticipants; p++)
		for (int r = 0; r < shared->nruns[p]; r++)
		{
			GeoRun	   *run = &build->runs[build->nruns++];
			char		name[MAXPGPATH];

			run_name(name, p, r);
			run->file = BufFileOpenFileSet(&shared->fileset.fs, name, O_RDONLY, false);
			run->chunk = palloc(sizeof(GeoLeafEntry) * GEO_RUN_CHUNK);
			(void) run_fill(run);
		}
}

/* The next key in (cell id, tid) order across all runs; false at the end */
bool
geo_parallel_next_key(GeoParallelBuild *build, GeoLeafEntry *key)
{
	GeoRun	   *best = NULL;

	for (int i = 0; i < build->nruns; i++)
	{
		GeoRun	   *run = &build->runs[i];
		GeoLeafEntry *head;

		if (run->pos >= run->nchunk)
			continue;
		head = &run->chunk[run->pos];
		if (best == NULL ||
			geo_key_cmp(head->cellid, &head->tid,
						best->chunk[best->pos].cellid, &best->chunk[best->pos].tid) < 0)
			best = run;
	}
	if (best == NULL)
		return false;
	*key = best->chunk[best->pos++];
	if (best->pos >= best->nchunk)
		(void) run_fill(best);
	return true;
}

/* Close the runs and the parallel context (their files go with it) */
void
geo_parallel_end(GeoParallelBuild *build)
{
	for (int i = 0; i < build->nruns; i++)
		BufFileClose(build->runs[i].file);
	if (IsMVCCSnapshot(build->snapshot))
		UnregisterSnapshot(build->snapshot);
	DestroyParallelContext(build->pcxt);
	ExitParallelMode();
}
