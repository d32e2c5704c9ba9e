/*-------------------------------------------------------------------------
 *
 * archer_am.h
 *	  The access-method descriptor: what the shared layer (merge.c,
 *	  worker.c, archer_stats.c) needs of an access method, so that it calls
 *	  each through one table and names none.
 *
 * Each access method defines one const ArcherAm (geo_handler.c,
 * vec_handler.c) and registers it from _PG_init (archer_am_register).  The
 * shared layer finds an index's descriptor from its pg_class.relam by
 * looking up each registered name in pg_am, on every call as before: a
 * syscache hit, and an extension dropped and created again in the same
 * session gets new access method OIDs that a cache would miss.
 *
 * The dependencies go one way: the access methods include this header and
 * merge.h and call into the shared layer (appends ask for merges, VACUUM
 * merges first); the shared layer calls the access methods only through
 * the pointers below.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHER_AM_H
#define ARCHER_AM_H

#include "postgres.h"

#include "nodes/pg_list.h"
#include "storage/block.h"
#include "utils/rel.h"

/* The figures of archer_index_stats that only some access methods have */
typedef struct ArcherAmFigures
{
	bool		has_tree;
	int32		tree_height;	/* levels, 0 for a tree with no root */
	bool		has_graph;
	int64		graph_nodes;	/* live nodes */
	int64		deleted_nodes;
} ArcherAmFigures;

typedef struct ArcherAm
{
	const char *name;			/* pg_am.amname */
	uint16		page_id;		/* of its pages (storage.h); its meta page holds the
								 * insert buffer's ArcherBufferMeta */
	BlockNumber merge_lock;		/* the heavyweight page lock a merge holds
								 * exclusively */

	/*
	 * Merge up to max_entries (every one if 0) buffered entries into the
	 * index, under merge_lock; returns how many it merged
	 */
	int64		(*merge) (Relation index, int64 max_entries);

	/* Read the access method's own figures from the meta page */
	void		(*figures) (Relation index, ArcherAmFigures *figures);
} ArcherAm;

/* merge.c */
extern void archer_am_register(const ArcherAm *am);
extern const ArcherAm *archer_am_of(Relation index);
extern List *archer_am_oids(void);

#endif							/* ARCHER_AM_H */
