/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The background merge worker: a launcher and short-lived per-database
 *	  workers that merge archer insert buffers (shared_preload_libraries
 *	  only; without it sessions and VACUUM merge, merge.h).
 *
 * Shared memory: one ArcherMergeShared, an array of database slots under a
 * spinlock.  A session whose insert brings a buffer to
 * archer.merge_threshold entries marks its database's slot pending and
 * sets the launcher's latch.  The launcher (no database connection; it
 * reads pg_database once at start and marks every database pending, since
 * buffers survive restarts) starts a dynamic worker for each pending
 * database, at most archer.merge_workers at once, and naps
 * archer.merge_naptime between rounds.
 *
 * A database worker merges every archer index of its database whose buffer
 * holds at least archer.merge_threshold entries, in transactions of at
 * most MERGE_CHUNK_ENTRIES entries taking the indexes in turn, then exits.  So that it never holds up
 * DDL or DROP DATABASE for long:
 *	- it takes its locks conditionally, skipping an index that someone
 *	  holds (or waits for) in a conflicting mode, and leaves its database
 *	  pending for the launcher's next round;
 *	- it carries PROC_IS_AUTOVACUUM, as autovacuum workers do: DROP DATABASE
 *	  terminates it instead of waiting, and a session blocked on its lock
 *	  cancels it after deadlock_timeout;
 *	- SIGTERM (shutdown, pg_terminate_backend) ends it at the next entry.
 * Each index is merged as its table's owner under
 * SECURITY_RESTRICTED_OPERATION, as autovacuum runs index code.  An error
 * while merging one index is logged and ends that index's turn only; a
 * worker that met one leaves its database pending, and the launcher
 * retries after a back-off that doubles from the nap time up to
 * MAX_BACKOFF_MS and logs it.  A database's slot is freed when a pass
 * ends well with nothing pending, or when the database is gone.  The
 * launcher never runs during recovery (BgWorkerStart_RecoveryFinished: a
 * standby gets merges through WAL); the postmaster restarts it if it dies
 * or is terminated.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "archer_am.h"
#include "merge.h"
#include "storage.h"

#define MERGE_MAX_DATABASES		256
#define MERGE_CHUNK_ENTRIES		256
#define MAX_BACKOFF_MS			(5 * 60 * 1000)

PGDLLEXPORT void archer_merge_launcher_main(Datum main_arg);
PGDLLEXPORT void archer_merge_worker_main(Datum main_arg);

int			archer_insert_buffer_max_entries = 2000;
int			archer_merge_threshold = 256;
int			archer_merge_naptime_ms = 1000;
int			archer_merge_workers = 2;

typedef struct MergeDatabase
{
	Oid			dboid;			/* InvalidOid: a free slot */
	bool		pending;		/* a buffer reached the threshold */
	bool		running;		/* the launcher started a worker for it */
	bool		finished;		/* set by the worker when its pass ended well */
	int			failures;		/* consecutive failed passes */
	TimestampTz retry_after;
} MergeDatabase;

typedef struct ArcherMergeShared
{
	slock_t		mutex;
	Latch	   *launcher_latch; /* NULL while no launcher runs */
	MergeDatabase databases[MERGE_MAX_DATABASES];
} ArcherMergeShared;

static ArcherMergeShared *merge_shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* ---- shared memory ---- */

static void
merge_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(ArcherMergeShared)));
}

static void
merge_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	merge_shared = ShmemInitStruct("archer merge worker", sizeof(ArcherMergeShared), &found);
	if (!found)
	{
		memset(merge_shared, 0, sizeof(ArcherMergeShared));
		SpinLockInit(&merge_shared->mutex);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* The slot of a database, taking a free one if it has none; caller holds the mutex */
static MergeDatabase *
database_slot(Oid dboid)
{
	MergeDatabase *free_slot = NULL;

	for (int i = 0; i < MERGE_MAX_DATABASES; i++)
	{
		MergeDatabase *slot = &merge_shared->databases[i];

		if (slot->dboid == dboid)
			return slot;
		if (slot->dboid == InvalidOid && free_slot == NULL)
			free_slot = slot;
	}
	if (free_slot != NULL)
	{
		memset(free_slot, 0, sizeof(MergeDatabase));
		free_slot->dboid = dboid;
	}
	return free_slot;
}

/* Mark a database pending; returns whether it was not already */
static bool
mark_pending(Oid dboid)
{
	MergeDatabase *slot;
	bool		newly = false;

	SpinLockAcquire(&merge_shared->mutex);
	slot = database_slot(dboid);
	if (slot != NULL && !slot->pending)
		newly = slot->pending = true;
	SpinLockRelease(&merge_shared->mutex);
	return newly;
}

/*
 * Called by a session after an append left buffer_entries entries: ask the
 * launcher for a merge of this database once a buffer holds the
 * threshold.  A no-op without shared_preload_libraries.
 */
void
archer_request_merge(int64 buffer_entries)
{
	Latch	   *latch;

	if (merge_shared == NULL || archer_merge_workers == 0 ||
		buffer_entries < archer_merge_threshold || !mark_pending(MyDatabaseId))
		return;
	SpinLockAcquire(&merge_shared->mutex);
	latch = merge_shared->launcher_latch;
	SpinLockRelease(&merge_shared->mutex);
	if (latch != NULL)
		SetLatch(latch);
}

/* ---- the launcher ---- */

/* Every database that accepts connections may hold buffers from before a restart */
static void
mark_every_database_pending(void)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;

	StartTransactionCommand();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tuple);

		if (db->datallowconn)
			(void) mark_pending(db->oid);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
}

static bool
database_exists(Oid dboid)
{
	bool		exists;

	StartTransactionCommand();
	exists = SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(dboid));
	CommitTransactionCommand();
	return exists;
}

static BackgroundWorkerHandle *
start_database_worker(Oid dboid)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "archer");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "archer_merge_worker_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "archer merge worker for database %u", dboid);
	snprintf(worker.bgw_type, BGW_MAXLEN, "archer merge worker");
	worker.bgw_main_arg = ObjectIdGetDatum(dboid);
	worker.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		return NULL;			/* no free worker slot now: the next round retries */
	return handle;
}

/*
 * Note the workers that ended: a worker that did not finish its pass
 * failed; its database stays pending, to be retried after a back-off.
 */
static void
reap_workers(BackgroundWorkerHandle **handles, int *nrunning)
{
	for (int i = 0; i < MERGE_MAX_DATABASES; i++)
	{
		MergeDatabase *slot = &merge_shared->databases[i];
		pid_t		pid;
		bool		finished;
		Oid			dboid;
		int			failures = 0;

		if (handles[i] == NULL ||
			GetBackgroundWorkerPid(handles[i], &pid) != BGWH_STOPPED)
			continue;
		pfree(handles[i]);
		handles[i] = NULL;
		(*nrunning)--;

		SpinLockAcquire(&merge_shared->mutex);
		finished = slot->finished;
		dboid = slot->dboid;
		slot->running = false;
		if (finished && !slot->pending)
			memset(slot, 0, sizeof(MergeDatabase));	/* free for another database */
		else if (finished)
			slot->failures = 0;
		else
		{
			failures = ++slot->failures;
			slot->pending = true;
		}
		SpinLockRelease(&merge_shared->mutex);

		if (!finished && !database_exists(dboid))
		{
			SpinLockAcquire(&merge_shared->mutex);
			memset(slot, 0, sizeof(MergeDatabase));
			SpinLockRelease(&merge_shared->mutex);
		}
		else if (!finished)
		{
			int64		backoff_ms = archer_merge_naptime_ms;

			for (int f = 1; f < failures && backoff_ms < MAX_BACKOFF_MS; f++)
				backoff_ms *= 2;
			backoff_ms = Min(backoff_ms, MAX_BACKOFF_MS);
			ereport(LOG,
					(errmsg("archer merge worker for database %u failed; retrying in %d ms",
							dboid, (int) backoff_ms),
					 errdetail("The worker's error is logged above.")));
			SpinLockAcquire(&merge_shared->mutex);
			slot->retry_after = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), backoff_ms);
			SpinLockRelease(&merge_shared->mutex);
		}
	}
}

static void
start_pending_workers(BackgroundWorkerHandle **handles, int *nrunning)
{
	TimestampTz now = GetCurrentTimestamp();

	for (int i = 0; i < MERGE_MAX_DATABASES && *nrunning < archer_merge_workers; i++)
	{
		MergeDatabase *slot = &merge_shared->databases[i];
		Oid			dboid = InvalidOid;

		SpinLockAcquire(&merge_shared->mutex);
		if (slot->dboid != InvalidOid && slot->pending && !slot->running &&
			slot->retry_after <= now)
		{
			dboid = slot->dboid;
			slot->pending = false;
			slot->running = true;
			slot->finished = false;
		}
		SpinLockRelease(&merge_shared->mutex);
		if (dboid == InvalidOid)
			continue;

		handles[i] = start_database_worker(dboid);
		if (handles[i] != NULL)
		{
			(*nrunning)++;
			continue;
		}
		SpinLockAcquire(&merge_shared->mutex);
		slot->running = false;
		slot->pending = true;
		SpinLockRelease(&merge_shared->mutex);
		break;
	}
}

static void
launcher_detach(int code, Datum arg)
{
	SpinLockAcquire(&merge_shared->mutex);
	merge_shared->launcher_latch = NULL;
	for (int i = 0; i < MERGE_MAX_DATABASES; i++)
		merge_shared->databases[i].running = false;
	SpinLockRelease(&merge_shared->mutex);
}

void
archer_merge_launcher_main(Datum main_arg)
{
	BackgroundWorkerHandle **handles;
	int			nrunning = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();
	/* no database: the launcher reads the shared catalog pg_database only */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	handles = MemoryContextAllocZero(TopMemoryContext,
									 sizeof(BackgroundWorkerHandle *) * MERGE_MAX_DATABASES);
	before_shmem_exit(launcher_detach, (Datum) 0);
	SpinLockAcquire(&merge_shared->mutex);
	merge_shared->launcher_latch = MyLatch;
	SpinLockRelease(&merge_shared->mutex);
	mark_every_database_pending();

	while (!ShutdownRequestPending)
	{
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		reap_workers(handles, &nrunning);
		if (!RecoveryInProgress())
			start_pending_workers(handles, &nrunning);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 archer_merge_naptime_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		/* absorbs proc signal barriers (DROP DATABASE waits for them) */
		CHECK_FOR_INTERRUPTS();
	}
	/* not 0: the postmaster restarts the launcher unless it is shutting down */
	proc_exit(1);
}

/* ---- a database worker ---- */

/*
 * Let DROP DATABASE and blocked lock waiters end this worker, as they do
 * autovacuum's.  Core offers a background worker no other way: DROP
 * DATABASE (CountOtherDBBackends) signals only backends flagged
 * PROC_IS_AUTOVACUUM and otherwise waits and fails with "database is being
 * accessed by other users" (WITH (FORCE) would have to be asked for by the
 * user), and the deadlock detector cancels only such a backend when it
 * blocks a lock waiter (a session's ALTER TABLE would otherwise wait for a
 * whole merge chunk).  The flag is set under ProcArrayLock in both places
 * that hold it, as core's own vacuum does for PROC_IN_VACUUM.  The worker
 * does nothing else that the flag changes the meaning of: it runs no
 * VACUUM, and its transactions' snapshots are ordinary ones.  Tested by
 * test/t/015_merge_worker.pl: DROP DATABASE, DROP INDEX, DROP TABLE and
 * REINDEX during a merge return without waiting for it.
 */
static void
act_as_autovacuum(void)
{
	LWLockAcquire(ProcArrayLock, LW_EXCLUSIVE);
	MyProc->statusFlags |= PROC_IS_AUTOVACUUM;
	ProcGlobal->statusFlags[MyProc->pgxactoff] = MyProc->statusFlags;
	LWLockRelease(ProcArrayLock);
}

/* The archer indexes of this database; empty if the extension is not in it */
static List *
archer_index_oids(void)
{
	List	   *amoids;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;
	List	   *oids = NIL;

	StartTransactionCommand();
	amoids = archer_am_oids();
	if (amoids != NIL)
	{
		MemoryContext oldcxt;

		rel = table_open(RelationRelationId, AccessShareLock);
		scan = table_beginscan_catalog(rel, 0, NULL);
		oldcxt = MemoryContextSwitchTo(TopMemoryContext);
		while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
		{
			Form_pg_class form = (Form_pg_class) GETSTRUCT(tuple);

			/* other sessions' temporary indexes are theirs to merge */
			if (form->relkind == RELKIND_INDEX &&
				form->relpersistence != RELPERSISTENCE_TEMP &&
				list_member_oid(amoids, form->relam))
				oids = lappend_oid(oids, form->oid);
		}
		MemoryContextSwitchTo(oldcxt);
		table_endscan(scan);
		table_close(rel, AccessShareLock);
	}
	CommitTransactionCommand();
	return oids;
}

static void
merge_error_context(void *arg)
{
	errcontext("merging the insert buffer of index with OID %u", *(Oid *) arg);
}

/*
 * Merge one chunk of the index's buffer in the current transaction, if it
 * holds at least min_entries; returns how many entries it merged, or -1 if
 * someone holds the index or its table in a conflicting mode, or another
 * merge runs.
 */
static int64
merge_chunk(Oid indexoid, int64 min_entries)
{
	Oid			heapoid = IndexGetRelation(indexoid, true);
	Relation	heap;
	Relation	index;
	ArcherSavedUser saved;
	int64		merged = 0;

	if (!OidIsValid(heapoid))
		return 0;
	if (!ConditionalLockRelationOid(heapoid, RowExclusiveLock))
		return -1;
	if (!ConditionalLockRelationOid(indexoid, RowExclusiveLock))
	{
		UnlockRelationOid(heapoid, RowExclusiveLock);
		return -1;
	}
	/* dropped before we got the locks? */
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(indexoid)) ||
		!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(heapoid)))
		return 0;
	heap = table_open(heapoid, NoLock);
	index = index_open(indexoid, NoLock);

	archer_become_owner(heap, &saved);
	if (index->rd_index->indisvalid && archer_buffer_entries(index) >= min_entries)
		merged = archer_merge_buffer(index, MERGE_CHUNK_ENTRIES, false);
	archer_restore_user(&saved);

	index_close(index, NoLock);
	table_close(heap, NoLock);
	return merged;
}

/* How merging one index went */
typedef enum MergeOutcome
{
	MERGE_DONE,					/* nothing (more) to merge now */
	MERGE_MORE,					/* merged a chunk; there may be more */
	MERGE_SKIPPED,				/* held by someone, or cancelled by a lock waiter */
	MERGE_FAILED				/* an error, logged */
} MergeOutcome;

/*
 * One chunk of the index in a transaction of its own.  An error ends only
 * this index's turn: it is logged (a cancel by a session waiting for our
 * lock is not an error) and the transaction aborted, and the worker goes
 * on with the other indexes.
 */
static MergeOutcome
merge_chunk_transaction(Oid indexoid, int64 min_entries)
{
	volatile MergeOutcome outcome;

	PG_TRY();
	{
		int64		merged;

		StartTransactionCommand();
		merged = merge_chunk(indexoid, min_entries);
		CommitTransactionCommand();
		outcome = merged > 0 ? MERGE_MORE : merged < 0 ? MERGE_SKIPPED : MERGE_DONE;
	}
	PG_CATCH();
	{
		HOLD_INTERRUPTS();
		if (geterrcode() == ERRCODE_QUERY_CANCELED)
			outcome = MERGE_SKIPPED;
		else
		{
			EmitErrorReport();
			outcome = MERGE_FAILED;
		}
		AbortOutOfAnyTransaction();
		FlushErrorState();
		RESUME_INTERRUPTS();
	}
	PG_END_TRY();
	return outcome;
}

/*
 * Merge the indexes' buffers a chunk per transaction, taking the indexes in
 * turn so that one busy index does not hold up the others, until none of
 * them has a chunk to merge.  An index is merged only once its buffer holds
 * archer.merge_threshold entries; once started, it is emptied.  Sets
 * *skipped if it skipped an index someone held, *failed if merging one
 * failed.
 */
static void
merge_indexes(List *indexes, bool *skipped, bool *failed)
{
	ErrorContextCallback errcallback;
	int			nindexes = list_length(indexes);
	int64	   *min_entries = palloc(sizeof(int64) * Max(nindexes, 1));
	Oid			indexoid = InvalidOid;
	bool		progress = true;

	*skipped = *failed = false;
	for (int i = 0; i < nindexes; i++)
		min_entries[i] = archer_merge_threshold;
	errcallback.callback = merge_error_context;
	errcallback.arg = &indexoid;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;
	while (progress)
	{
		progress = false;
		for (int i = 0; i < nindexes; i++)
		{
			MergeOutcome outcome;

			if (min_entries[i] == PG_INT64_MAX)
				continue;
			CHECK_FOR_INTERRUPTS();
			indexoid = list_nth_oid(indexes, i);
			outcome = merge_chunk_transaction(indexoid, min_entries[i]);
			min_entries[i] = outcome == MERGE_MORE ? 1 : PG_INT64_MAX;
			progress |= outcome == MERGE_MORE;
			*skipped |= outcome == MERGE_SKIPPED;
			*failed |= outcome == MERGE_FAILED;
		}
	}
	error_context_stack = errcallback.previous;
	pfree(min_entries);
}

void
archer_merge_worker_main(Datum main_arg)
{
	Oid			dboid = DatumGetObjectId(main_arg);
	MergeDatabase *slot;
	bool		skipped;
	bool		failed;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	act_as_autovacuum();
	pgstat_report_appname("archer merge worker");

	merge_indexes(archer_index_oids(), &skipped, &failed);

	SpinLockAcquire(&merge_shared->mutex);
	slot = database_slot(dboid);
	if (slot != NULL)
	{
		/* a failure makes the launcher back off before the next pass */
		slot->finished = !failed;
		/* the launcher starts another pass after its nap for what was held */
		slot->pending |= skipped;
	}
	SpinLockRelease(&merge_shared->mutex);
	proc_exit(0);
}

/* ---- setup ---- */

static void
register_launcher(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 10;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "archer");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "archer_merge_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "archer merge launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "archer merge launcher");
	RegisterBackgroundWorker(&worker);
}

void
archer_worker_init(void)
{
	/*
	 * PGC_SUSET: a session that raises it stops merging, and without the
	 * merge worker the buffer then grows without bound, for every session:
	 * each scan reads (and holds, about 50 bytes an entry) all of it, and
	 * VACUUM merges it all at once.  Not a choice for any user to make.
	 */
	DefineCustomIntVariable("archer.insert_buffer_max_entries",
							"Entries an archer insert buffer holds before the inserting session merges it.",
							"Scans read every buffered entry, so a larger buffer makes inserts cheaper and queries dearer.",
							&archer_insert_buffer_max_entries, 2000, 1, INT_MAX,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("archer.merge_threshold",
							"Buffered entries at which the merge worker merges an archer insert buffer.",
							"Only with archer in shared_preload_libraries; sessions merge at archer.insert_buffer_max_entries.",
							&archer_merge_threshold, 256, 1, INT_MAX,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("archer.merge_naptime",
							"Time the archer merge launcher sleeps between rounds.",
							NULL, &archer_merge_naptime_ms, 1000, 10, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("archer.merge_workers",
							"Most archer merge workers running at once (0 turns merging by the worker off).",
							"Each takes a slot of max_worker_processes while it runs.",
							&archer_merge_workers, 2, 0, MERGE_MAX_DATABASES,
							PGC_SIGHUP, 0, NULL, NULL, NULL);

	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = merge_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = merge_shmem_startup;
	register_launcher();
}
