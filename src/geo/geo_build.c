/*-------------------------------------------------------------------------
 *
 * geo_build.c
 *	  CREATE INDEX for archer_geo: a sorted bulk build.
 *
 * The heap scan computes each row's leaf entry (cell id, heap tid, point
 * code) and collects the entries in an array sorted in memory; keys that would not fit in
 * maintenance_work_mem go to a tuplesort instead, which spills to disk (and
 * costs several times as much per key, in memory and time).  With parallel
 * workers (geo_parallel.c) each participant scans part of the heap and
 * sorts its own runs, and the runs are merged here.  Leaves
 * are then filled left to right up to the fillfactor, and each internal
 * level is built from the first keys of the level below, until one page is
 * left: the root.  Pages are written without WAL and logged all at once at
 * the end with log_newpage_range(), which is cheaper than one record per
 * page and replays to the same bytes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/pg_type.h"
#include "commands/progress.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/memutils.h"
#include "utils/tuplesort.h"

#include "geo.h"

/* build sub-phases reported in pg_stat_progress_create_index */
#define GEO_PHASE_SORT			2
#define GEO_PHASE_LEAVES		3
#define GEO_PHASE_INTERNAL		4
#define GEO_PHASE_WAL			5

#define INT8_LESS_OPERATOR		412
#define TID_LESS_OPERATOR		2799

/* signed int8 order that matches unsigned cell id order */
#define CELLID_TO_SORTKEY(c)	((int64) ((c) ^ UINT64CONST(0x8000000000000000)))
#define SORTKEY_TO_CELLID(k)	((uint64) (k) ^ UINT64CONST(0x8000000000000000))

typedef struct GeoBuildState
{
	GeoColumnKind kind;
	Relation	index;
	/* the entries in memory, while they fit in maintenance_work_mem */
	GeoLeafEntry *keys;
	int64		nkeys;
	int64		maxkeys;
	int64		keys_limit;
	int64		next_key;		/* reading them back */
	/* or, once they do not, all of them in a tuplesort */
	Tuplesortstate *sort;
	/* or, in a parallel build, the participants' sorted runs */
	GeoParallelBuild *parallel;
	TupleTableSlot *slot;
	MemoryContext tmpcxt;
	double		ntuples;
} GeoBuildState;

/* One level being written: the page in progress and the downlinks it made */
typedef struct LevelWriter
{
	Relation	index;
	uint16		level;
	int			max_entries;
	PGAlignedBlock page;
	BlockNumber blkno;			/* where page will go */
	bool		has_page;
	/* downlinks for the level above: first key and block of each page */
	GeoInternalEntry *downlinks;
	int			ndownlinks;
	int			maxdownlinks;
} LevelWriter;

char *
geo_buildphasename(int64 phasenum)
{
	switch (phasenum)
	{
		case PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE:
			return "initializing";
		case PROGRESS_SCAN_BLOCKS_TOTAL:	/* 1: table scan */
			return "computing cell ids";
		case GEO_PHASE_SORT:
			return "sorting cell ids";
		case GEO_PHASE_LEAVES:
			return "writing leaf pages";
		case GEO_PHASE_INTERNAL:
			return "writing internal pages";
		case GEO_PHASE_WAL:
			return "WAL-logging pages";
	}
	return NULL;
}

/*
 * The tuplesort's rows: cell id and tid, the sort keys, then the point code
 * as an int8 and an int4
 */
#define SORT_NCOLUMNS	4
StaticAssertDecl(GEO_POINT_CODE_SIZE == sizeof(int64) + sizeof(int16),
				 "the point code travels through the sort in two columns");

static void
sort_put_key(GeoBuildState *buildstate, const GeoLeafEntry *entry)
{
	TupleTableSlot *slot = buildstate->slot;
	int64		code_head;
	int16		code_tail;

	memcpy(&code_head, entry->point, sizeof(code_head));
	memcpy(&code_tail, entry->point + sizeof(code_head), sizeof(code_tail));
	ExecClearTuple(slot);
	slot->tts_values[0] = Int64GetDatum(CELLID_TO_SORTKEY(entry->cellid));
	slot->tts_values[1] = PointerGetDatum(&entry->tid);
	slot->tts_values[2] = Int64GetDatum(code_head);
	slot->tts_values[3] = Int32GetDatum(code_tail);
	memset(slot->tts_isnull, false, SORT_NCOLUMNS * sizeof(bool));
	ExecStoreVirtualTuple(slot);
	tuplesort_puttupleslot(buildstate->sort, slot);
}

/* The keys outgrew maintenance_work_mem: move them all to a tuplesort */
static void
spill_keys_to_sort(GeoBuildState *buildstate)
{
	TupleDesc	sortdesc = CreateTemplateTupleDesc(SORT_NCOLUMNS);
	AttrNumber	attnums[2] = {1, 2};
	Oid			sortops[2] = {INT8_LESS_OPERATOR, TID_LESS_OPERATOR};
	Oid			collations[2] = {InvalidOid, InvalidOid};
	bool		nullsfirst[2] = {false, false};

	TupleDescInitEntry(sortdesc, 1, "cellid", INT8OID, -1, 0);
	TupleDescInitEntry(sortdesc, 2, "tid", TIDOID, -1, 0);
	TupleDescInitEntry(sortdesc, 3, "code_head", INT8OID, -1, 0);
	TupleDescInitEntry(sortdesc, 4, "code_tail", INT4OID, -1, 0);
	buildstate->sort = tuplesort_begin_heap(sortdesc, 2, attnums, sortops, collations,
											nullsfirst, maintenance_work_mem, NULL,
											TUPLESORT_NONE);
	buildstate->slot = MakeSingleTupleTableSlot(sortdesc, &TTSOpsVirtual);
	for (int64 i = 0; i < buildstate->nkeys; i++)
	{
		CHECK_FOR_INTERRUPTS();
		sort_put_key(buildstate, &buildstate->keys[i]);
	}
	pfree(buildstate->keys);
	buildstate->keys = NULL;
	buildstate->nkeys = 0;
}

static void
add_key(GeoBuildState *buildstate, const GeoLeafEntry *entry)
{
	if (buildstate->sort == NULL && buildstate->nkeys == buildstate->maxkeys)
	{
		if (buildstate->maxkeys >= buildstate->keys_limit)
			spill_keys_to_sort(buildstate);
		else
		{
			buildstate->maxkeys = Min(buildstate->maxkeys * 2, buildstate->keys_limit);
			buildstate->keys = repalloc_huge(buildstate->keys,
											 sizeof(GeoLeafEntry) * buildstate->maxkeys);
		}
	}
	if (buildstate->sort != NULL)
		sort_put_key(buildstate, entry);
	else
		buildstate->keys[buildstate->nkeys++] = *entry;
}

static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *state)
{
	GeoBuildState *buildstate = (GeoBuildState *) state;
	MemoryContext oldcxt = MemoryContextSwitchTo(buildstate->tmpcxt);
	GeoLeafEntry entry;

	geo_make_leaf_entry(buildstate->kind, values[0], isnull[0], tid, &entry);
	MemoryContextSwitchTo(oldcxt);
	add_key(buildstate, &entry);
	buildstate->ntuples++;
	MemoryContextReset(buildstate->tmpcxt);
}

/* The next key in order, from memory or from the tuplesort; false at the end */
static bool
next_sorted_key(GeoBuildState *buildstate, GeoLeafEntry *key)
{
	TupleTableSlot *slot = buildstate->slot;
	bool		isnull;
	int64		code_head;
	int16		code_tail;

	if (buildstate->parallel != NULL)
		return geo_parallel_next_key(buildstate->parallel, key);
	if (buildstate->sort == NULL)
	{
		if (buildstate->next_key >= buildstate->nkeys)
			return false;
		*key = buildstate->keys[buildstate->next_key++];
		return true;
	}
	if (!tuplesort_gettupleslot(buildstate->sort, true, false, slot, NULL))
		return false;
	key->cellid = SORTKEY_TO_CELLID(DatumGetInt64(slot_getattr(slot, 1, &isnull)));
	key->tid = *(ItemPointer) DatumGetPointer(slot_getattr(slot, 2, &isnull));
	code_head = DatumGetInt64(slot_getattr(slot, 3, &isnull));
	code_tail = (int16) DatumGetInt32(slot_getattr(slot, 4, &isnull));
	memcpy(key->point, &code_head, sizeof(code_head));
	memcpy(key->point + sizeof(code_head), &code_tail, sizeof(code_tail));
	return true;
}

static void
level_start_page(LevelWriter *writer, BlockNumber blkno)
{
	archer_page_init(writer->page.data, ARCHER_GEO_PAGE_ID,
					 writer->level == 0 ? ARCHER_PAGE_LEAF : ARCHER_PAGE_INTERNAL,
					 writer->level);
	writer->blkno = blkno;
	writer->has_page = true;
}

/* Flush the page in progress; next_key is the high key (NULL: rightmost) */
static void
level_flush(LevelWriter *writer, const GeoLeafEntry *next_key, BlockNumber next_blkno)
{
	ArcherPageOpaque opaque = ArcherPageGetOpaque(writer->page.data);

	/* keys arrive sorted */
	opaque->nsorted = archer_page_nentries(writer->page.data,
										   writer->level == 0 ? sizeof(GeoLeafEntry) :
										   sizeof(GeoInternalEntry));
	if (next_key)
	{
		opaque->flags |= ARCHER_PAGE_HAS_HIKEY;
		opaque->hikey_cellid = next_key->cellid;
		opaque->hikey_tid = next_key->tid;
		opaque->rightlink = next_blkno;
	}
	archer_write_new_page(writer->index, writer->blkno, writer->page.data);
	writer->has_page = false;
}

static void
level_add_downlink(LevelWriter *writer, const GeoLeafEntry *key, BlockNumber blkno)
{
	if (writer->ndownlinks == writer->maxdownlinks)
	{
		writer->maxdownlinks *= 2;
		writer->downlinks = repalloc_huge(writer->downlinks,
										  sizeof(GeoInternalEntry) * writer->maxdownlinks);
	}
	writer->downlinks[writer->ndownlinks].cellid = key->cellid;
	writer->downlinks[writer->ndownlinks].tid = key->tid;
	writer->downlinks[writer->ndownlinks].child = blkno;
	writer->ndownlinks++;
}

/*
 * Append one entry to the level: a leaf entry, or a downlink to child made
 * of key's cell id and tid.  *next_blkno is the next free block.
 */
static void
level_add(LevelWriter *writer, const GeoLeafEntry *key, BlockNumber child, BlockNumber *next_blkno)
{
	Size		entry_size = writer->level == 0 ? sizeof(GeoLeafEntry) : sizeof(GeoInternalEntry);
	int			nentries;
	char	   *slot;

	if (writer->has_page &&
		archer_page_nentries(writer->page.data, entry_size) >= writer->max_entries)
		level_flush(writer, key, *next_blkno);
	if (!writer->has_page)
	{
		level_start_page(writer, (*next_blkno)++);
		level_add_downlink(writer, key, writer->blkno);
	}

	nentries = archer_page_nentries(writer->page.data, entry_size);
	slot = ArcherPageGetEntries(writer->page.data) + nentries * entry_size;
	if (writer->level == 0)
		memcpy(slot, key, sizeof(GeoLeafEntry));
	else
	{
		GeoInternalEntry *entry = (GeoInternalEntry *) slot;

		entry->cellid = key->cellid;
		entry->tid = key->tid;
		entry->child = child;
	}
	archer_page_set_nentries(writer->page.data, entry_size, nentries + 1);
}

static void
level_init(LevelWriter *writer, Relation index, uint16 level, int max_entries)
{
	memset(writer, 0, sizeof(LevelWriter));
	writer->index = index;
	writer->level = level;
	writer->max_entries = Max(max_entries, 2);
	writer->maxdownlinks = 64;
	writer->downlinks = palloc(sizeof(GeoInternalEntry) * writer->maxdownlinks);
}

/*
 * Write the whole tree from the sorted keys.  Returns the root and sets
 * *root_level; block 0 is reserved for the meta page.
 */
static BlockNumber
write_tree(Relation index, GeoBuildState *buildstate, int fillfactor, uint16 *root_level)
{
	BlockNumber next_blkno = 1;
	LevelWriter writer;
	int			leaf_fill = Max(GEO_LEAF_CAPACITY * fillfactor / 100, 2);
	int			internal_fill = Max(GEO_INTERNAL_CAPACITY * fillfactor / 100, 2);
	double		nwritten = 0;
	GeoLeafEntry key;

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, GEO_PHASE_LEAVES);
	level_init(&writer, index, 0, leaf_fill);
	while (next_sorted_key(buildstate, &key))
	{
		level_add(&writer, &key, InvalidBlockNumber, &next_blkno);
		if (++nwritten >= 10000 && ((int64) nwritten) % 10000 == 0)
		{
			pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, (int64) nwritten);
			CHECK_FOR_INTERRUPTS();
		}
	}
	if (!writer.has_page)
	{
		/* empty table: one empty leaf as the root */
		GeoLeafEntry minkey = {0};

		level_start_page(&writer, next_blkno++);
		level_add_downlink(&writer, &minkey, writer.blkno);
	}
	level_flush(&writer, NULL, InvalidBlockNumber);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, GEO_PHASE_INTERNAL);
	while (writer.ndownlinks > 1)
	{
		LevelWriter parent;

		level_init(&parent, index, writer.level + 1, internal_fill);
		for (int i = 0; i < writer.ndownlinks; i++)
		{
			GeoLeafEntry separator = {0};

			CHECK_FOR_INTERRUPTS();
			separator.cellid = writer.downlinks[i].cellid;
			separator.tid = writer.downlinks[i].tid;
			level_add(&parent, &separator, writer.downlinks[i].child, &next_blkno);
		}
		level_flush(&parent, NULL, InvalidBlockNumber);
		pfree(writer.downlinks);
		writer = parent;
	}
	*root_level = writer.level;
	return writer.downlinks[0].child;
}

/*
 * A sort that spills still finishes in bounded memory, only slower; say so,
 * as the vector build does when its graph does not fit, so that a DBA
 * knows what to raise.
 */
static void
notice_if_sorted_on_disk(Relation index, Tuplesortstate *sort)
{
	TuplesortInstrumentation stats;

	tuplesort_get_stats(sort, &stats);
	if (stats.spaceType == SORT_SPACE_TYPE_DISK)
		ereport(NOTICE,
				(errmsg("keys of index \"%s\" do not fit in maintenance_work_mem",
						RelationGetRelationName(index)),
				 errdetail("They were sorted on disk (%ld kB), which is slower.",
						   (long) stats.spaceUsed),
				 errhint("Increase maintenance_work_mem to speed up index creation.")));
}

/* Order the keys collected by the heap scan */
static void
sort_keys(GeoBuildState *buildstate)
{
	/* each run is sorted, and next_sorted_key merges them */
	if (buildstate->parallel != NULL)
	{
		geo_parallel_open_runs(buildstate->parallel);
		return;
	}
	if (buildstate->sort == NULL)
	{
		geo_sort_leaf_entries(buildstate->keys, buildstate->nkeys);
		return;
	}
	tuplesort_performsort(buildstate->sort);
	notice_if_sorted_on_disk(buildstate->index, buildstate->sort);
	/* sorted tuples come back as minimal tuples */
	buildstate->slot = MakeSingleTupleTableSlot(buildstate->slot->tts_tupleDescriptor,
												&TTSOpsMinimalTuple);
}

IndexBuildResult *
geo_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	GeoBuildState buildstate = {0};
	BlockNumber root;
	uint16		root_level;
	PGAlignedBlock metapage;
	GeoOptions *options = (GeoOptions *) index->rd_options;
	int			fillfactor = options ? options->fillfactor : GEO_DEFAULT_FILLFACTOR;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));

	buildstate.kind = geo_column_kind(index);
	buildstate.index = index;
	buildstate.keys_limit = Max((int64) maintenance_work_mem * 1024 / (int64) sizeof(GeoLeafEntry), 1024);
	buildstate.maxkeys = 1024;
	buildstate.keys = palloc_extended(sizeof(GeoLeafEntry) * buildstate.maxkeys, MCXT_ALLOC_HUGE);
	buildstate.tmpcxt = AllocSetContextCreate(CurrentMemoryContext,
											  "archer_geo build temporary context",
											  ALLOCSET_DEFAULT_SIZES);

	/* block 0: the meta page, rewritten once the root is known */
	geo_init_meta_page(metapage.data, InvalidBlockNumber, 0);
	archer_write_new_page(index, ARCHER_META_BLKNO, metapage.data);

	buildstate.parallel = geo_parallel_begin(heap, index, indexInfo);
	if (buildstate.parallel != NULL)
		buildstate.ntuples = geo_parallel_ntuples(buildstate.parallel);
	else
		table_index_build_scan(heap, index, indexInfo, true, true,
							   build_callback, &buildstate, NULL);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, GEO_PHASE_SORT);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_TOTAL, (int64) buildstate.ntuples);
	sort_keys(&buildstate);
	root = write_tree(index, &buildstate, fillfactor, &root_level);
	if (buildstate.sort != NULL)
		tuplesort_end(buildstate.sort);
	if (buildstate.parallel != NULL)
		geo_parallel_end(buildstate.parallel);

	{
		Buffer		metabuf = ReadBuffer(index, ARCHER_META_BLKNO);

		LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
		geo_init_meta_page(BufferGetPage(metabuf), root, root_level);
		MarkBufferDirty(metabuf);
		UnlockReleaseBuffer(metabuf);
	}

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, GEO_PHASE_WAL);
	archer_log_all_pages(index);
	MemoryContextDelete(buildstate.tmpcxt);

	result = palloc(sizeof(IndexBuildResult));
	result->heap_tuples = buildstate.ntuples;
	result->index_tuples = buildstate.ntuples;
	return result;
}

/* The init fork of an unlogged index: meta page and an empty root leaf */
void
geo_buildempty(Relation index)
{
	PGAlignedBlock metapage;
	PGAlignedBlock rootpage;

	geo_init_meta_page(metapage.data, 1, 0);
	archer_page_init(rootpage.data, ARCHER_GEO_PAGE_ID, ARCHER_PAGE_LEAF, 0);

	archer_write_init_fork_page(index, ARCHER_META_BLKNO, metapage.data);
	archer_write_init_fork_page(index, 1, rootpage.data);
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
}
