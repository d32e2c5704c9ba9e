/*-------------------------------------------------------------------------
 *
 * vec_insert.c
 *	  aminsert for archer_vector: one row's node, into the insert buffer or
 *	  the graph.
 *
 * The row's node is built here (its code, error, norm and filter values;
 * a NULL vector's node has no code).  An index WITH (insert_buffer = on)
 * appends it to its insert buffer (vec_buffer.c), and merges the buffer
 * once it holds archer.insert_buffer_max_entries entries (if no other
 * merge runs); otherwise the node goes into the graph (vec_graph.c) under
 * VEC_INSERT_LOCK in ShareLock, shared with other inserts (vec_graph.c
 * says what that allows).  The first insert into an index built without
 * vectors takes the lock in ExclusiveLock and sets the index up: dimension
 * and quantizer from its row; rows with a NULL vector that come before
 * it go to pages of their own (vec.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/lmgr.h"
#include "utils/memutils.h"

#include "merge.h"
#include "vec.h"

/*
 * An index built without rows gets its dimension and a quantizer from its
 * first row (vec_widen_sample_range).  REINDEX after loading data trains
 * a better one.
 */
static void
initialize_empty_index(Relation index, const float *x, int dim)
{
	VecIndexInfo info = *vec_index_info(index);
	float	   *min = palloc(sizeof(float) * dim);
	float	   *max = palloc(sizeof(float) * dim);
	int			per_page = ARCHER_PAGE_CAPACITY_BYTES / sizeof(float);
	int			npages = 0;
	Buffer		metabuf;
	GenericXLogState *state;
	Page		metapage;
	VecMetaPageData *meta;

	vec_check_dim(&info, dim);
	info.dim = dim;
	memcpy(min, x, sizeof(float) * dim);
	memcpy(max, x, sizeof(float) * dim);
	vec_widen_sample_range(&info, min, max);

	for (int start = 0; start < 2 * dim; start += per_page)
	{
		/*
		 * Blocks a crash left all zeros are taken over, and so are quantizer
		 * pages: written in records of their own before the meta page's, a
		 * crash between them leaves quantizer pages the meta page does not
		 * name (its dimension is still 0, so nothing else reads them).
		 * Anything else is refused.
		 */
		Buffer		buf = archer_buffer_for_block(index, ARCHER_META_BLKNO + 1 + npages,
												  ARCHER_VEC_PAGE_ID, ARCHER_PAGE_QUANTIZER);
		Page		page;
		int			n = Min(per_page, 2 * dim - start);
		float	   *values;

		state = GenericXLogStart(index);
		page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);
		archer_page_init(page, ARCHER_VEC_PAGE_ID, ARCHER_PAGE_QUANTIZER, 0);
		values = (float *) ArcherPageGetEntries(page);
		for (int i = 0; i < n; i++)
			values[i] = (start + i < dim) ? min[start + i] : max[start + i - dim];
		archer_page_set_nentries(page, sizeof(float), n);
		GenericXLogFinish(state);
		UnlockReleaseBuffer(buf);
		npages++;
	}

	metabuf = archer_read_page(index, ARCHER_META_BLKNO, BUFFER_LOCK_EXCLUSIVE, ARCHER_VEC_PAGE_ID);
	state = GenericXLogStart(index);
	metapage = GenericXLogRegisterBuffer(state, metabuf, 0);
	meta = VecPageGetMeta(metapage);
	meta->dim = dim;
	meta->quantizer_pages = npages;
	/* nodes go to node pages: the insert page may be one of NULL vector rows */
	meta->insert_page = InvalidBlockNumber;
	vec_set_quantizer_checksum(metapage, min, max, dim);
	GenericXLogFinish(state);
	UnlockReleaseBuffer(metabuf);
}

/*
 * The node tuple of a new row at a level, without links: what an insert
 * places in the graph (any level) or appends to the insert buffer (level 0).
 */
static VecNodeHeader *
new_node(const VecIndexInfo *info, const float *x, const Datum *values, const bool *isnull,
		 ItemPointer heaptid, int level)
{
	VecNodeHeader *node = palloc0(vec_node_size(info, level));
	int64		filters[VEC_MAX_FILTERS];

	node->heaptid = *heaptid;
	node->level = level;
	vec_encode(info, x, vec_node_code(node), &node->error, &node->norm, &node->flags);
	vec_filter_values(info, values, isnull, filters, &node->flags);
	vec_node_set_filters(node, info, filters);
	vec_node_clear_links(node, info);
	return node;
}

/* The node of a row whose vector is NULL (vec.h): no code, no links */
static VecNodeHeader *
new_null_node(const VecIndexInfo *info, const Datum *values, const bool *isnull,
			  ItemPointer heaptid)
{
	VecNodeHeader *node = palloc0(vec_node_size(info, 0));
	int64		filters[VEC_MAX_FILTERS];

	node->heaptid = *heaptid;
	node->flags = VEC_NODE_NULL_VECTOR;
	vec_filter_values(info, values, isnull, filters, &node->flags);
	vec_node_set_filters(node, info, filters);
	vec_node_clear_links(node, info);
	return node;
}

/*
 * Keep a row whose vector is NULL in an index whose dimension is not known
 * yet (vec.h).  The caller holds VEC_INSERT_LOCK in ExclusiveLock.
 */
static void
insert_dimensionless_null(Relation index, const VecIndexInfo *info, const Datum *values,
						  const bool *isnull, ItemPointer heaptid)
{
	VecIndexInfo rows_info;

	vec_null_rows_info(info, &rows_info);
	vec_place_null_row(index, info, new_null_node(&rows_info, values, isnull, heaptid));
}

bool
vec_insert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
		   Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
		   IndexInfo *indexInfo)
{
	MemoryContext cxt;
	MemoryContext oldcxt;
	const VecIndexInfo *info;
	const float *x = NULL;
	int			dim;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "archer_vector insert",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	info = vec_index_info(index);
	/*
	 * A NULL vector gets a node linked to nothing, that scans return after
	 * all others (vec.h); an index of an older build holds none
	 */
	if (isnull[0] && !info->null_vectors)
	{
		MemoryContextSwitchTo(oldcxt);
		MemoryContextDelete(cxt);
		return false;
	}
	if (!isnull[0])
		x = vec_row_values(info, values[0], &dim);
	if (info->dim > 0 && vec_insert_buffered(index))
	{
		/* an append; the graph work waits for a merge */
		uint32		waiting;

		waiting = vec_buffer_append(index,
									isnull[0] ? new_null_node(info, values, isnull, ht_ctid) :
									new_node(info, x, values, isnull, ht_ctid, 0),
									vec_buffer_entry_size(info));
		archer_request_merge(waiting);
		if (waiting >= (uint32) archer_insert_buffer_max_entries)
			(void) archer_merge_buffer(index, 0, false);
	}
	else
	{
		/*
		 * Inserts share the graph (see the top of the file); the first
		 * insert into an index built empty sets it up alone.  The dimension
		 * of a cached info is 0 until this backend sees it set, never after.
		 */
		LOCKMODE	lockmode = info->dim > 0 ? ShareLock : ExclusiveLock;

		LockPage(index, VEC_INSERT_LOCK, lockmode);
		if (info->dim == 0)
		{
			/* another first insert may have set the index up while this one waited */
			info = vec_index_info(index);
			if (info->dim > 0)
				x = isnull[0] ? NULL : vec_row_values(info, values[0], &dim);
			else if (!isnull[0])
			{
				initialize_empty_index(index, x, dim);
				info = vec_index_info(index);
			}
			else
				insert_dimensionless_null(index, info, values, isnull, ht_ctid);
		}
		if (info->dim > 0)
			lockmode = vec_insert_node(index, info,
									   isnull[0] ? new_null_node(info, values, isnull, ht_ctid) :
									   new_node(info, x, values, isnull, ht_ctid, 0),
									   x, NULL, lockmode);
		UnlockPage(index, VEC_INSERT_LOCK, lockmode);
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	return false;
}
