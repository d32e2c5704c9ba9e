/*-------------------------------------------------------------------------
 *
 * vec.h
 *	  archer_vector: an HNSW graph index over 8-bit quantized vectors, for
 *	  ORDER BY col <-> / <#> / <=> query LIMIT k on avector and real[].
 *
 * Pages (common layout in storage.h):
 *
 *	block 0			meta page: VecMetaPageData
 *	blocks 1..k		quantizer pages: the build's per-dimension min[dim] then
 *					max[dim], a dense float array spread over k pages
 *	other blocks	node pages: line pointers to VecNode tuples, or insert
 *					buffer pages (see below), or free pages
 *
 * A node tuple holds the row's heap TID, its top layer, the quantization
 * error of its code (so that a lower bound of the exact distance is known),
 * the 8-bit code of the vector (of the unit vector for cosine), its
 * neighbour lists: m0 = 2m slots on layer 0, then one filter list of
 * filter_m slots per filter column (below), then m slots on each layer
 * above; each slot a node TID and the distance to that neighbour (so that a
 * full list can drop its farthest neighbour without reading any other page);
 * and last the values of the index's filter columns (integer columns after
 * the vector column) as unaligned int64s, NULLs flagged in the header.
 * Tuples never change size: updates rewrite neighbour slots in place.
 *
 * Filter lists: a node's filter list of column c links it only to nodes
 * with the same value in c, chosen like layer-0 links among those nodes:
 * each value's nodes form a graph of their own.  A scan with c = value
 * finds its way into that graph through the main one (the first matching
 * node it meets) and then searches it alone, instead of walking every
 * nearer node of other values (see vec_scan.c).  The code treats the
 * filter list of column c as one more "layer", numbered
 * VEC_FILTER_LIST(c), that every node has.  Indexes of older builds have
 * filter_m = 0 in the meta page: no filter lists.
 *
 * Rows unlike the build's (data that drifts, or an index built empty and
 * quantized from its first row) would clamp to the quantizer's range: their
 * codes would all look alike, with huge errors, and crowd every search.  A
 * vector that the trained quantizer clamps is encoded instead with a wide
 * quantizer: the same centres, VEC_WIDE_FACTOR times the step (flag
 * VEC_NODE_WIDE), whichever leaves the smaller error.  Distances to wide
 * codes use that quantizer's own query tables; code-to-code distances
 * between a wide and a narrow code decode both.
 *
 * Insert buffer (WITH (insert_buffer = on)): an insert appends its node,
 * without links, to a chain of buffer pages (meta: buffer_head ..
 * buffer_tail, rightlink to the next), one WAL record, no graph search.
 * A merge (vec_buffer.c: when the buffer is full, archer_flush, VACUUM)
 * links the entries into the graph one by one, each in the WAL record that
 * marks it merged, and moves the buffer pages it emptied to a free list
 * (meta: buffer_free) that appends take new pages from first.  Scans read the
 * buffer's entries first, by brute force, and skip graph nodes of the same
 * heap rows, so no row is lost or doubled whatever a merge is doing.
 *
 * The graph's space: links join nodes near each other in the metric's
 * space, except under inner product, which is no metric (a long vector is
 * "nearest" to every other, so every node would link to the same few, and
 * most nodes would have no way in).  There the graph is built in the space
 * where maximum inner product search is nearest neighbour search: each
 * vector x gets one extra coordinate sqrt(M^2 - |x|^2) (M bounds the
 * norms the quantizer can encode; clamped to 0 beyond), and the query q
 * gets 0, so |q' - x'|^2 = |q|^2 + M^2 - 2 q.x: ordering by that is
 * ordering by -q.x, and a scan needs no change.  Link distances, and the
 * searches of inserts and VACUUM for a node's neighbours (a VecQuery with
 * node_space), are in that space.
 *
 * Under cosine every distance, of a query or of a code, is half the
 * squared L2 distance between the normalized vectors (the cosine distance
 * of unit vectors), so that the code's error bounds it by the triangle
 * inequality.
 *
 * Scans return candidates ordered by a lower bound of their exact distance
 * (vec_distance_bounds: from the code distance and the code's error); the
 * executor recomputes the exact distance from the heap row
 * (xs_recheckorderby) and reorders, so rows come back in exact order among
 * the candidates found.
 *
 * Locking:
 *	- scans share-lock one node page at a time and copy what they need;
 *	- inserts hold a heavyweight lock, VEC_INSERT_LOCK, in ShareLock, and
 *	  run together; whatever rewrites links wholesale or moves the entry
 *	  point (merges, VACUUM, an insert of a new top node) holds it in
 *	  ExclusiveLock, alone (vec_graph.c says how inserts share the
 *	  graph).  An insert writes the new node with its links, in one WAL
 *	  record with the meta page (counters, and the entry point when the
 *	  node is the new top), then adds back links page by page: a crash in
 *	  between leaves a node that is reachable from fewer neighbours, or
 *	  from none (VACUUM relinks it: vec_reach.c), never a dangling link;
 *	- buffered inserts take no heavyweight lock: appends serialize on the
 *	  meta page's buffer lock (meta first, then the tail page); a merge
 *	  holds VEC_INSERT_LOCK exclusively (merges are serialized by it) and
 *	  frees emptied pages from the head of the chain; scans walk the chain
 *	  one page at a time and, since each buffer page carries a serial
 *	  number one above its predecessor's, notice a freed (or freed and
 *	  reused) page and restart from the head;
 *	- VACUUM takes the insert lock exclusively, marks the nodes of dead
 *	  rows deleted and drops them from their neighbours' lists, then marks
 *	  them unlinked (heap TID invalid); an insert then overwrites such a
 *	  node in place (same level, same size) rather than adding one.
 *	  A scan that reads a node's code with only a pin (vec_batch_distances)
 *	  may see it change under it: only for a node that was deleted when the
 *	  scan copied its header (never returned) or whose new row the scan's
 *	  snapshot cannot see.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHER_VEC_H
#define ARCHER_VEC_H

#include "postgres.h"

#include "access/amapi.h"
#include "access/genam.h"
#include "access/stratnum.h"
#include "datatype/timestamp.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "storage/lockdefs.h"

#include "storage.h"
#include "vector.h"

#define VEC_INSERT_LOCK			ARCHER_META_BLKNO

/* how much wider the range of the wide quantizer is (see above) */
#define VEC_WIDE_FACTOR			8

/*
 * The largest magnitude of a component of an indexed vector.  Codes, their
 * errors and code-to-code distances are computed in single precision over
 * quantizer ranges up to 25 times the largest component (a small sample's
 * range widened threefold, then VEC_WIDE_FACTOR times): with components
 * up to 1e15 their squares summed over AVECTOR_MAX_DIM dimensions stay
 * below 1e37, well within float.  Queries take any finite value
 * (vec_query_distance falls back to double).
 */
#define VEC_MAX_COMPONENT		1e15

/*
 * A build from fewer rows than this trains a widened range
 * (vec_widen_sample_range): so few rows may not show the data's range.
 */
#define VEC_MIN_TRAINING_ROWS	1000

/*
 * The free space map lists node pages that hold deleted nodes for inserts
 * to overwrite, with this nominal amount (find_reusable_node asks for 1)
 */
#define VEC_FSM_REUSABLE		64

/* metrics, also the strategy numbers of the ordering operators */
#define VEC_METRIC_L2			1	/* <-> */
#define VEC_METRIC_IP			2	/* <#> */
#define VEC_METRIC_COSINE		3	/* <=> */
#define VEC_NSTRATEGIES			3

#define VEC_MAX_LAYERS			16

/*
 * Slots of a filter list: m, at most 16, so that a node with three upper
 * layers and four filter lists still fits on a page at m = 100
 */
#define vec_filter_slots(m)		Min((m), 16)

/* the pseudo-layer number of filter column i's list (see above) */
#define VEC_FILTER_LIST(i)		(VEC_MAX_LAYERS + (i))
#define VEC_IS_FILTER_LIST(layer)	((layer) >= VEC_MAX_LAYERS)
/* the most lists a node has: every layer and every filter list */
#define VEC_MAX_LISTS			(VEC_MAX_LAYERS + VEC_MAX_FILTERS)

/*
 * HNSW's neighbour selection keeps the candidates its diversity rule
 * accepts, then (keepPrunedConnections) may top the list up with the
 * nearest of the rest.  Topping it up to full leaves no free slot for the
 * back links of later nodes, which are what connect a node to the parts of
 * the graph built after it; not topping up at all leaves too few links in
 * tight clusters.  Up to half the slots keeps room for later back links
 * and enough links in clusters: it gave better recall than either, and a
 * faster build than topping up to full (docs/benchmarks-history.md,
 * "Figures once in code comments").
 */
#define VEC_TOPUP_SLOTS(nslots)	((nslots) / 2)

/* How many links of a full list may lead to exact copies of its owner */
#define VEC_COPY_SLOTS(nslots)	Max((nslots) / 4, 2)
#define VEC_MIN_M				2
#define VEC_MAX_M				100
#define VEC_MAX_BATCH			(2 * VEC_MAX_M)	/* 2m for the largest m */
#define VEC_DEFAULT_M			16
#define VEC_MIN_EF_CONSTRUCTION	4
#define VEC_MAX_EF_CONSTRUCTION	1000
#define VEC_DEFAULT_EF_CONSTRUCTION	64

/* node flags */
#define VEC_NODE_DELETED		0x01
#define VEC_NODE_ZERO			0x02	/* zero vector under cosine: distance 1 */
#define VEC_NODE_MERGED			0x04	/* buffer entry already in the graph */
#define VEC_NODE_WIDE			0x08	/* code of the wide quantizer (sq_wide) */
#define VEC_NODE_FILTER_NULL(i)	(0x10 << (i))	/* filter column i is NULL */

/*
 * A row whose vector is NULL: a level-0 node that nothing links to and
 * that links to nothing, with no code, holding the row's filter values, so
 * that a scan can return the row after every row with a distance, as a
 * sequential scan's sort puts NULL distances last (vec_scan.c).  No flag bit
 * is free: such a node has ZERO and WIDE both, which vec_encode never sets
 * together (the code of a zero vector under cosine is never read, so it is
 * not re-encoded wide).  Builds before these nodes could set both on a zero
 * vector whose narrow code clamped: the combination means a NULL vector
 * only in an index whose meta page has VEC_META_NULL_VECTORS
 * (info->null_vectors).  Code that reads a node's code or follows its
 * links checks VEC_NODE_IS_NULL_VECTOR first (vec_quantizer would pick
 * sq_wide).
 */
#define VEC_NODE_NULL_VECTOR	(VEC_NODE_ZERO | VEC_NODE_WIDE)
#define VEC_NODE_IS_NULL_VECTOR(info, flags) \
	((info)->null_vectors && ((flags) & VEC_NODE_NULL_VECTOR) == VEC_NODE_NULL_VECTOR)

/*
 * An index built on a table without vectors learns its dimension from its
 * first vector (vec_insert.c), and a node's size depends on the dimension.
 * Rows with a NULL vector that come before it go to pages of their own
 * (ARCHER_PAGE_NULL_ROWS) as nodes sized for no dimension and no links
 * (vec_null_rows_info): header and filter values only.  Those pages stay
 * as they are once the dimension is known (later NULL rows get nodes), and
 * their first block lies past room for the largest quantizer the index's
 * options allow (vec_null_rows_first_block), since the quantizer takes the
 * blocks after the meta page.  Walks over the rows (scans, VACUUM, verify)
 * read them beside the node pages (vec_read_row_page, vec_page_row);
 * nothing links to them and their deleted entries are not reused.
 */

/* integer filter columns after the vector column; strategies as btree's */
#define VEC_MAX_FILTERS			4
#define VEC_FILTER_STRATEGIES	5

typedef struct VecNeighbor
{
	ItemPointerData tid;		/* neighbour node, or invalid for a free slot */
	uint16		pad;
	float		distance;		/* code distance to that neighbour */
} VecNeighbor;

typedef struct VecNodeHeader
{
	ItemPointerData heaptid;
	uint8		level;			/* top layer */
	uint8		flags;
	float		error;			/* |x - decode(code)|, in the metric's space */
	float		norm;			/* |x| (1 for cosine) */
	/* uint8 code[dim], padded to 4 bytes, then VecNeighbor slots */
} VecNodeHeader;

typedef struct VecMetaPageData
{
	ArcherMetaCommon common;
	ArcherBufferMeta buffer;	/* the insert buffer */
	uint16		dim;
	uint16		m;
	uint16		ef_construction;
	uint8		metric;
	uint8		entry_level;
	ItemPointerData entry;		/* invalid while the graph is empty */
	uint16		quantizer_pages;
	BlockNumber insert_page;	/* node page new nodes go to first */
	uint64		nnodes;
	uint64		ndeleted;
	uint16		filter_m;		/* slots of each filter list; 0: none (older builds) */
	uint16		meta_flags;		/* VEC_META_* */
	uint32		quantizer_crc;	/* CRC-32C of the quantizer's min[] then max[] */
} VecMetaPageData;

/*
 * meta_flags.  Builds before the quantizer checksum left the field zero:
 * their quantizer is loaded unchecked.  A quantizer value changed to another
 * plausible one would make every lower bound wrong (the executor then
 * reports rows "in wrong order"); the checksum names the damage instead.
 */
#define VEC_META_QUANTIZER_CRC	0x0001	/* quantizer_crc is set */
/*
 * Every row with a NULL vector has a node (VEC_NODE_NULL_VECTOR).  Builds
 * before them left it unset: such an index holds no row with a NULL vector,
 * and gets none (REINDEX to include them).
 */
#define VEC_META_NULL_VECTORS	0x0002
#define VEC_META_KNOWN_FLAGS	(VEC_META_QUANTIZER_CRC | VEC_META_NULL_VECTORS)

#define VecPageGetMeta(page)	((VecMetaPageData *) PageGetContents(page))

/* reloptions */
typedef struct VecOptions
{
	int32		vl_len_;
	int			m;
	int			ef_construction;
	int			quantization_offset;	/* string, 'sq8' */
	bool		insert_buffer;
} VecOptions;

/* Everything a scan or insert needs to know about an index, cached in rd_amcache */
typedef struct VecIndexInfo
{
	int			dim;
	int			m;
	int			ef_construction;
	int			metric;
	bool		is_array;		/* real[] rather than avector */
	int			nfilters;		/* filter columns after the vector column */
	int			filter_m;		/* slots of each filter list, 0 without them */
	Oid			filter_types[VEC_MAX_FILTERS];
	ArcherSQ8	sq;				/* trained on the rows of the build */
	ArcherSQ8	sq_wide;		/* the same, VEC_WIDE_FACTOR times wider */
	float		lift_norm2;		/* inner product: M^2 of the graph's space (vec_utils.c) */
	bool		null_vectors;	/* rows with a NULL vector have nodes (VEC_META_NULL_VECTORS) */
	ArcherRecentBuffers *recent;	/* where node pages were last read; NULL in builds */
} VecIndexInfo;

/* A query, prepared once per scan or insert */
/*
 * A query's form for the wide quantizer, prepared when its search first
 * meets a wide node: most indexes hold none
 */
typedef struct VecWideQuery
{
	bool		ready;
	MemoryContext cxt;			/* the query's */
	ArcherSQ8Query sq;
} VecWideQuery;

typedef struct VecQuery
{
	const VecIndexInfo *info;
	ArcherSQ8Query sq;
	VecWideQuery *wide;
	bool		inner_product;	/* sq and wide serve q . x, not |q - x| */
	const float *values;		/* q (normalized for cosine), for vec_query_distance's double path */
	double		qnorm;			/* |q| as given (before normalizing for cosine) */
	bool		zero;			/* cosine with a zero query: every distance is 1 */
	bool		node_space;		/* a node being linked: distances as between nodes */
	float		lift;			/* node_space, inner product: q's extra coordinate */
} VecQuery;

/*
 * A condition on a filter column: column op value (a scan's WHERE clause,
 * or an insert looking for nodes of its own value)
 */
typedef struct VecFilterKey
{
	int			column;			/* filter column, 0-based */
	StrategyNumber strategy;	/* btree's: < <= = >= > */
	int64		value;
} VecFilterKey;

/* settings of scans (vec_scan.c) */
extern int	archer_vector_ef_search;
extern int	archer_vector_max_scan_tuples;
extern int	archer_vector_order;

/* archer.vector_order: what a scan does with a node found late (vec_scan.c) */
#define VEC_ORDER_STRICT		0	/* skip it: rows come back in exact order */
#define VEC_ORDER_RELAXED		1	/* return it once the search has nothing else */

/* vec_handler.c */
extern void archer_vector_am_init(void);

/* vec_utils.c */
extern Size vec_node_size(const VecIndexInfo *info, int level);
extern uint8 *vec_node_code(VecNodeHeader *node);
extern void vec_filter_values(const VecIndexInfo *info, const Datum *values,
							  const bool *isnull, int64 *filters, uint8 *flags);
extern void vec_node_set_filters(VecNodeHeader *node, const VecIndexInfo *info,
								 const int64 *filters);
extern bool vec_node_filter(const VecNodeHeader *node, const VecIndexInfo *info, int i,
							int64 *value);
extern int64 vec_filter_datum(Oid type, Datum value);
extern bool vec_filters_match(const VecFilterKey *keys, int nkeys, uint8 flags,
							  const int64 *values);
extern void vec_index_columns(Relation index, VecIndexInfo *info);
extern VecNeighbor *vec_node_neighbors(VecNodeHeader *node, const VecIndexInfo *info,
									   int layer, int *nslots);
extern bool vec_node_has_list(const VecNodeHeader *node, const VecIndexInfo *info, int layer);
extern int	vec_node_lists(const VecNodeHeader *node, const VecIndexInfo *info, int *lists);
extern const VecIndexInfo *vec_index_info(Relation index);
extern int	vec_max_dim(int m, int nfilters, int filter_m);
extern void vec_check_dim(const VecIndexInfo *info, int dim);
extern const float *vec_datum_values(const VecIndexInfo *info, Datum value, int *dim);
extern const float *vec_row_values(const VecIndexInfo *info, Datum value, int *dim);
extern void vec_encode(const VecIndexInfo *info, const float *x, uint8 *code,
					   float *error, float *norm, uint8 *flags);
extern void vec_query_init(VecQuery *query, const VecIndexInfo *info, const float *q);
extern void vec_node_query_init(VecQuery *query, const VecIndexInfo *info, const float *x);
extern float vec_query_distance(const VecQuery *query, const uint8 *code, uint8 flags);
extern void vec_distance_bounds(const VecQuery *query, float code_distance,
								const VecNodeHeader *node, double *lower, double *upper);
extern float vec_code_distance(const VecIndexInfo *info, const uint8 *a, uint8 a_flags,
							   const uint8 *b, uint8 b_flags);
extern const ArcherSQ8 *vec_quantizer(const VecIndexInfo *info, uint8 flags);
extern void vec_init_quantizers(VecIndexInfo *info, const float *trained_min,
								const float *trained_max);
extern void vec_widen_sample_range(const VecIndexInfo *info, float *min, float *max);
extern bool vec_same_code(const VecIndexInfo *info, const uint8 *a, uint8 a_flags,
						  const uint8 *b, uint8 b_flags);
extern void vec_reset_levels(uint64 stream);
extern int	vec_random_level(int m);
extern void vec_read_meta(Relation index, VecMetaPageData *meta);
extern int	vec_quantizer_npages(int dim);
extern void vec_set_quantizer_checksum(Page metapage, const float *min, const float *max, int dim);
extern Buffer vec_read_node_page(Relation index, BlockNumber blkno);
extern Buffer vec_read_row_page(Relation index, const VecIndexInfo *info, BlockNumber blkno);
extern void vec_null_rows_info(const VecIndexInfo *info, VecIndexInfo *rows_info);
extern BlockNumber vec_null_rows_first_block(const VecIndexInfo *info);
extern const VecIndexInfo *vec_page_layout(Page page, const VecIndexInfo *info,
										   const VecIndexInfo *rows_info);
extern VecNodeHeader *vec_page_row(Relation index, Page page, BlockNumber blkno,
								   OffsetNumber offnum, const VecIndexInfo *layout);
extern VecNodeHeader *vec_page_node(Relation index, Page page, BlockNumber blkno,
									OffsetNumber offnum, const VecIndexInfo *info);
extern VecNodeHeader *vec_page_entry(Relation index, Page page, BlockNumber blkno,
									 OffsetNumber offnum, const VecIndexInfo *info);

/* vec_hnsw.c: the HNSW core, over any graph storage */
typedef struct VecLayerNode
{
	uint64		id;				/* a node number, or archer_tid_key of a node's TID */
	float		distance;		/* to the query */
} VecLayerNode;

/* How vec_layer_search reads a graph; arg is the callbacks' own */
typedef struct VecGraphReader
{
	/*
	 * those of node id's links on a layer (or filter list) that the search
	 * has not met yet, counted as met now: their ids to links[], their
	 * distances to the query to distances[], and whether each may be
	 * returned (false for a deleted node) to returnable[]; returns how many
	 */
	int			(*new_links) (void *arg, uint64 id, int layer, uint64 *links,
							  float *distances, bool *returnable);
	/* true the first time the search meets node id (asked of entries) */
	bool		(*first_visit) (void *arg, uint64 id);
	void	   *arg;
} VecGraphReader;

/* The candidates' heap of vec_layer_search, kept from one search to the next */
typedef struct VecLayerScratch
{
	VecLayerNode *heap;
	int			capacity;
} VecLayerScratch;

extern void vec_layer_scratch_init(VecLayerScratch *scratch, int capacity);
extern int	vec_layer_search(const VecGraphReader *graph, VecLayerScratch *scratch,
							 VecLayerNode *found, int nfound, int ef, int layer);

/* Candidate a's distance to candidate b (vec_diversity_select) */
typedef float (*VecPairDistance) (void *arg, int a, int b);

extern int	vec_diversity_select(const float *distance, int ncand, int max,
								 VecPairDistance between, void *arg, int *chosen);

/* The newcomer's distance to link slot of a full list (vec_choose_slot) */
typedef float (*VecSlotDistance) (void *arg, int slot);

extern int	vec_choose_slot(const float *link_distance, const bool *is_copy, int nslots,
							float distance, bool newcomer_is_copy, bool force,
							VecSlotDistance between, void *arg, float *victim_between);
/* vec_search.c: graph search over the pages */
typedef struct VecCandidate
{
	float		distance;		/* code distance to the query */
	ItemPointerData tid;		/* node */
	bool		matches;		/* scans: in the graph of the scan's filter list */
	uint8		level;			/* scans: the node's top layer */
} VecCandidate;

typedef struct VecHeap
{
	VecCandidate *items;
	int			count;
	int			capacity;
	int			sign;			/* 1: min-heap, -1: max-heap */
} VecHeap;

typedef struct VecVisited
{
	uint64	   *slots;
	uint32		mask;
	uint32		count;
} VecVisited;

extern void vec_visited_init(VecVisited *visited, int expected);
extern bool vec_visited_add(VecVisited *visited, ItemPointer tid);
extern bool vec_visited_contains(const VecVisited *visited, ItemPointer tid);
extern void vec_heap_init(VecHeap *heap, int capacity, int sign);
extern void vec_heap_push(VecHeap *heap, const VecCandidate *item);
extern VecCandidate vec_heap_pop(VecHeap *heap);
extern float vec_node_distance(Relation index, const VecIndexInfo *info,
							   const VecQuery *query, ItemPointer tid,
							   VecNodeHeader *header);
extern void vec_batch_distances(Relation index, const VecIndexInfo *info,
								const VecQuery *query, const ItemPointerData *tids,
								int n, float *distances, VecNodeHeader *headers,
								int64 *filters);
extern int	vec_node_links(Relation index, const VecIndexInfo *info, ItemPointer tid,
						   int layer, ItemPointerData *links);
extern uint8 vec_copy_node_code(Relation index, const VecIndexInfo *info, ItemPointer tid,
								uint8 *code);
extern int	vec_select_neighbors(Relation index, const VecIndexInfo *info,
								 VecCandidate *sorted, int ncand, int max,
								 VecCandidate *selected);
extern void vec_descend_layer(Relation index, const VecIndexInfo *info, const VecQuery *query,
							  const VecFilterKey *keys, int nkeys, VecCandidate *entry,
							  int layer, VecCandidate *seed);
extern bool vec_walk_to_match(Relation index, const VecIndexInfo *info, const VecQuery *query,
							  const VecFilterKey *keys, int nkeys, const VecCandidate *entries,
							  int nentries, int max_nodes, VecCandidate *match);
extern int	vec_search_layer(Relation index, const VecIndexInfo *info, const VecQuery *query,
							 VecCandidate *entries, int nentries, int ef, int layer,
							 VecCandidate *result);

/* vec_reach.c: which nodes a search can reach */
typedef struct VecReach
{
	BlockNumber nblocks;
	int			per_block;		/* node slots per block */
	Size		bytes;			/* of both bitmaps */
	uint8	   *reached;		/* a bit per node slot */
	uint8	   *pending;		/* reached, links not followed yet */
	int64		npending;
	BlockNumber first_pending;	/* no pending node before this block */
} VecReach;

extern bool vec_reach_init(VecReach *reach, const VecIndexInfo *info, BlockNumber nblocks);
extern Size vec_reach_kb(const VecReach *reach);
extern void vec_reach_free(VecReach *reach);
extern bool vec_reach_contains(const VecReach *reach, ItemPointer tid);
extern void vec_reach_add(Relation index, VecReach *reach, ItemPointer tid,
						  BlockNumber from_blkno);
extern void vec_reach_propagate(Relation index, const VecIndexInfo *info, VecReach *reach);
extern bool vec_reach_from_entry(Relation index, const VecIndexInfo *info, VecReach *reach);
extern int64 vec_relink_unreachable(Relation index, const VecIndexInfo *info);

/* vec_build.c */
extern IndexBuildResult *vec_build(Relation heap, Relation index, IndexInfo *indexInfo);
extern void vec_buildempty(Relation index);
extern char *vec_buildphasename(int64 phasenum);
extern int	vec_write_quantizer_pages(Relation index, const float *min,
									  const float *max, int dim);
extern void vec_init_meta_page(Page page, const VecIndexInfo *info, int quantizer_pages);

/* vec_graph.c */
extern void vec_node_clear_links(VecNodeHeader *node, const VecIndexInfo *info);
extern LOCKMODE vec_insert_node(Relation index, const VecIndexInfo *info,
								const VecNodeHeader *src, const float *x, ItemPointer entry,
								LOCKMODE lockmode);
extern void vec_place_null_row(Relation index, const VecIndexInfo *info, VecNodeHeader *node);
extern void vec_relink_node(Relation index, const VecIndexInfo *info, ItemPointer tid);

/* vec_insert.c */
extern bool vec_insert(Relation index, Datum *values, bool *isnull,
					   ItemPointer ht_ctid, Relation heap,
					   IndexUniqueCheck checkUnique, bool indexUnchanged,
					   IndexInfo *indexInfo);

/* vec_buffer.c: the insert buffer */
typedef void (*VecBufferEntryCallback) (const VecNodeHeader *entry, void *arg);

extern bool vec_insert_buffered(Relation index);
extern Size vec_buffer_entry_size(const VecIndexInfo *info);
extern uint32 vec_buffer_append(Relation index, const VecNodeHeader *entry, Size size);
extern int64 vec_buffer_merge(Relation index, int64 max_entries);
extern void vec_buffer_scan(Relation index, const VecIndexInfo *info,
							VecBufferEntryCallback callback, void *arg);

/* vec_scan.c */
extern void vec_scan_define_settings(void);
extern IndexScanDesc vec_beginscan(Relation index, int nkeys, int norderbys);
extern void vec_rescan(IndexScanDesc scan, ScanKey keys, int nkeys,
					   ScanKey orderbys, int norderbys);
extern bool vec_gettuple(IndexScanDesc scan, ScanDirection dir);
extern void vec_endscan(IndexScanDesc scan);

/* vec_vacuum.c */
extern IndexBulkDeleteResult *vec_bulkdelete(IndexVacuumInfo *info,
											 IndexBulkDeleteResult *stats,
											 IndexBulkDeleteCallback callback,
											 void *callback_state);
extern IndexBulkDeleteResult *vec_vacuumcleanup(IndexVacuumInfo *info,
												IndexBulkDeleteResult *stats);

#endif							/* ARCHER_VEC_H */
