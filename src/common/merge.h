/*-------------------------------------------------------------------------
 *
 * merge.h
 *	  Merging insert buffers into their index: the entry points both access
 *	  methods share (merge.c) and the background merge worker (worker.c).
 *
 * Who merges an index's insert buffer:
 *	- the merge worker, when the library is in shared_preload_libraries:
 *	  a launcher starts one short-lived worker per database that asked
 *	  (an insert that brought a buffer to archer.merge_threshold entries
 *	  asks), and once per database after the server starts;
 *	- the inserting session, when its buffer reaches
 *	  archer.insert_buffer_max_entries (back-pressure, and the only merge
 *	  without the worker);
 *	- VACUUM, and archer_flush(index).
 * Any of them may run at once: each access method's merge serializes on
 * its own lock (the merge_lock of its descriptor, archer_am.h) and is
 * crash-safe entry by entry (vec_buffer.c, geo_buffer.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHER_MERGE_H
#define ARCHER_MERGE_H

#include "postgres.h"

#include "utils/rel.h"

/* GUCs */
extern int	archer_insert_buffer_max_entries;
extern int	archer_merge_threshold;
extern int	archer_merge_naptime_ms;
extern int	archer_merge_workers;

/* merge.c */
extern int64 archer_buffer_entries(Relation index);
extern int64 archer_merge_buffer(Relation index, int64 max_entries, bool wait);

/* worker.c */
extern void archer_worker_init(void);
extern void archer_request_merge(int64 buffer_entries);

#endif							/* ARCHER_MERGE_H */
