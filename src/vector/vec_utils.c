/*-------------------------------------------------------------------------
 *
 * vec_utils.c
 *	  archer_vector helpers: node tuple layout, the per-index cache of the
 *	  quantizer and options, encoding vectors, query distances and the lower
 *	  bounds handed to the executor.
 *
 * Lower bounds.  A node's code decodes to x^ with |x - x^| = error (in the
 * space the metric works in: the unit vector for cosine).  Then
 *	L2:		|q - x| >= |q - x^| - error
 *	IP:		-q.x >= -q.x^ - |q| error
 *	cosine:	1 - q.x/|x| >= 1 - q.x^ - error			(q normalized)
 * and a relative margin covers float rounding in the kernels, so the
 * executor never sees an index distance above the exact one.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "catalog/pg_type.h"
#include "common/pg_prng.h"
#include "port/pg_crc32c.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "vec.h"

#define VEC_BOUND_REL_MARGIN	1e-4
#define VEC_BOUND_ABS_MARGIN	1e-6

static Size
code_size(int dim)
{
	return TYPEALIGN(4, dim);
}

static Size
graph_size(const VecIndexInfo *info, int level)
{
	return sizeof(VecNodeHeader) + code_size(info->dim) +
		sizeof(VecNeighbor) * (2 * info->m + info->nfilters * info->filter_m + level * info->m);
}

Size
vec_node_size(const VecIndexInfo *info, int level)
{
	return graph_size(info, level) + sizeof(int64) * info->nfilters;
}

uint8 *
vec_node_code(VecNodeHeader *node)
{
	return (uint8 *) node + sizeof(VecNodeHeader);
}

/* A filter column's value as the node stores it */
int64
vec_filter_datum(Oid type, Datum value)
{
	switch (type)
	{
		case INT2OID:
			return DatumGetInt16(value);
		case INT4OID:
			return DatumGetInt32(value);
		case INT8OID:
			return DatumGetInt64(value);
	}
	elog(ERROR, "archer_vector: unsupported filter type %u", type);
	return 0;					/* keep compiler quiet */
}

/*
 * The filter columns of an index row (values[1..nfilters]) as nodes store
 * them; NULLs are flagged in *flags.
 */
void
vec_filter_values(const VecIndexInfo *info, const Datum *values, const bool *isnull,
				  int64 *filters, uint8 *flags)
{
	for (int i = 0; i < info->nfilters; i++)
	{
		filters[i] = isnull[i + 1] ? 0 : vec_filter_datum(info->filter_types[i], values[i + 1]);
		if (isnull[i + 1])
			*flags |= VEC_NODE_FILTER_NULL(i);
	}
}

/* value op bound, for btree's strategy numbers */
static bool
compare_filter(StrategyNumber strategy, int64 value, int64 bound)
{
	switch (strategy)
	{
		case BTLessStrategyNumber:
			return value < bound;
		case BTLessEqualStrategyNumber:
			return value <= bound;
		case BTEqualStrategyNumber:
			return value == bound;
		case BTGreaterEqualStrategyNumber:
			return value >= bound;
		case BTGreaterStrategyNumber:
			return value > bound;
	}
	elog(ERROR, "archer_vector: unknown filter strategy %d", strategy);
	return false;				/* keep compiler quiet */
}

/* Whether a node with these flags and filter values meets every key */
bool
vec_filters_match(const VecFilterKey *keys, int nkeys, uint8 flags, const int64 *values)
{
	for (int i = 0; i < nkeys; i++)
	{
		const VecFilterKey *key = &keys[i];

		if ((flags & VEC_NODE_FILTER_NULL(key->column)) ||
			!compare_filter(key->strategy, values[key->column], key->value))
			return false;
	}
	return true;
}

/* Store filter values in a node tuple */
void
vec_node_set_filters(VecNodeHeader *node, const VecIndexInfo *info, const int64 *filters)
{
	memcpy((char *) node + graph_size(info, node->level), filters,
		   sizeof(int64) * info->nfilters);
}

/* Filter column i of a node: false if NULL */
bool
vec_node_filter(const VecNodeHeader *node, const VecIndexInfo *info, int i, int64 *value)
{
	if (node->flags & VEC_NODE_FILTER_NULL(i))
		return false;
	memcpy(value, (const char *) node + graph_size(info, node->level) + sizeof(int64) * i,
		   sizeof(int64));
	return true;
}

/*
 * The index's columns: the vector first, then up to VEC_MAX_FILTERS
 * integer filter columns.  The operator classes admit either kind in any
 * position, so the order is checked here.
 */
void
vec_index_columns(Relation index, VecIndexInfo *info)
{
	int			ncolumns = IndexRelationGetNumberOfKeyAttributes(index);

	for (int i = 0; i < ncolumns; i++)
	{
		Oid			type = index->rd_opcintype[i];
		bool		integer = type == INT2OID || type == INT4OID || type == INT8OID;

		/*
		 * (the type schema-qualified: from 17 on CREATE INDEX runs with
		 * search_path = pg_catalog, so the name would depend on the version)
		 */
		if (integer != (i > 0))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("archer_vector indexes one vector column followed by integer filter columns"),
					 errdetail("Column %d of index \"%s\" is of type %s.", i + 1,
							   RelationGetRelationName(index), format_type_be_qualified(type))));
	}
	if (ncolumns - 1 > VEC_MAX_FILTERS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("archer_vector indexes at most %d filter columns, not %d",
						VEC_MAX_FILTERS, ncolumns - 1)));
	info->nfilters = ncolumns - 1;
	for (int i = 0; i < info->nfilters; i++)
		info->filter_types[i] = index->rd_opcintype[i + 1];
}

/* The neighbour slots of one layer, or of one filter list (VEC_FILTER_LIST), of a node */
VecNeighbor *
vec_node_neighbors(VecNodeHeader *node, const VecIndexInfo *info, int layer, int *nslots)
{
	VecNeighbor *slots = (VecNeighbor *) ((char *) node + sizeof(VecNodeHeader) +
										  code_size(info->dim));
	int			m = info->m;
	int			filter_slots = info->nfilters * info->filter_m;

	Assert(vec_node_has_list(node, info, layer));
	if (layer == 0)
	{
		*nslots = 2 * m;
		return slots;
	}
	if (VEC_IS_FILTER_LIST(layer))
	{
		*nslots = info->filter_m;
		return slots + 2 * m + (layer - VEC_FILTER_LIST(0)) * info->filter_m;
	}
	*nslots = m;
	return slots + 2 * m + filter_slots + (layer - 1) * m;
}

/* Whether a node has that layer, or that filter list */
bool
vec_node_has_list(const VecNodeHeader *node, const VecIndexInfo *info, int layer)
{
	if (VEC_IS_FILTER_LIST(layer))
		return info->filter_m > 0 && layer - VEC_FILTER_LIST(0) < info->nfilters;
	return layer <= node->level;
}

/* The numbers of every neighbour list of a node: its layers, then its filter lists */
int
vec_node_lists(const VecNodeHeader *node, const VecIndexInfo *info, int *lists)
{
	int			nlists = 0;

	for (int layer = 0; layer <= node->level; layer++)
		lists[nlists++] = layer;
	for (int i = 0; i < info->nfilters && info->filter_m > 0; i++)
		lists[nlists++] = VEC_FILTER_LIST(i);
	return nlists;
}

/* Space on a node page for one tuple and its line pointer */
static Size
page_space(void)
{
	return BLCKSZ - MAXALIGN(SizeOfPageHeaderData) - MAXALIGN(sizeof(ArcherPageOpaqueData)) -
		sizeof(ItemIdData);
}

/*
 * Largest dimension that leaves room for layer 0, three layers above it,
 * the filter lists and the filter values
 */
int
vec_max_dim(int m, int nfilters, int filter_m)
{
	Size		fixed = MAXALIGN(sizeof(VecNodeHeader) +
								 sizeof(VecNeighbor) * (5 * m + nfilters * filter_m) +
								 sizeof(int64) * nfilters);

	if (fixed >= page_space())
		return 0;
	return Min(AVECTOR_MAX_DIM, (int) ((page_space() - fixed) & ~3));
}

/* Raise an error for a dimension too large for the index's nodes */
void
vec_check_dim(const VecIndexInfo *info, int dim)
{
	int			max = vec_max_dim(info->m, info->nfilters, info->filter_m);

	if (dim > max)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("archer_vector can index at most %d dimensions with m = %d, not %d",
						max, info->m, dim),
				 info->nfilters > 0 ?
				 errdetail("Each of the index's %d filter columns takes room in every node.",
						   info->nfilters) : 0));
}

/*
 * Node levels come from a generator of our own with a fixed seed, reset
 * for each build: the same rows in the same order give the same graph, so
 * recall figures and tests are reproducible.  Each participant of a
 * parallel build draws from its own stream (a serial build's is 0); the
 * order rows reach them is not reproducible anyway.  A backend that has
 * not built an index seeds it from its own random state at its first
 * insert: with one fixed seed every connection would draw the same
 * levels, so that applications inserting one row per connection would
 * give all their nodes the level of the first draw, and sessions
 * inserting side by side would raise nodes to the top layer together.
 */
static pg_prng_state level_prng;
static bool level_prng_seeded = false;

void
vec_reset_levels(uint64 stream)
{
	pg_prng_seed(&level_prng, UINT64CONST(0x5eed0a7c4e7) + stream);
	level_prng_seeded = true;
}

/* HNSW's level distribution: P(level >= l) = m^-l */
int
vec_random_level(int m)
{
	double		ml = 1.0 / log(m);
	int			level;

	if (!level_prng_seeded)
	{
		pg_prng_seed(&level_prng, pg_prng_uint64(&pg_global_prng_state));
		level_prng_seeded = true;
	}
	level = (int) floor(-log(Max(pg_prng_double(&level_prng), 1e-300)) * ml);
	return Min(level, VEC_MAX_LAYERS - 1);
}

static int
metric_of_index(Relation index)
{
	Oid			opfamily = index->rd_opfamily[0];
	Oid			type = index->rd_opcintype[0];

	for (int strategy = 1; strategy <= VEC_NSTRATEGIES; strategy++)
		if (OidIsValid(get_opfamily_member(opfamily, type, type, strategy)))
			return strategy;
	elog(ERROR, "archer_vector operator family %u has no distance operator", opfamily);
	return 0;					/* keep compiler quiet */
}

void
vec_read_meta(Relation index, VecMetaPageData *meta)
{
	Buffer		buf = archer_read_page(index, ARCHER_META_BLKNO, BUFFER_LOCK_SHARE,
									   ARCHER_VEC_PAGE_ID);
	Page		page = BufferGetPage(buf);

	memcpy(meta, VecPageGetMeta(page), sizeof(VecMetaPageData));
	if (!(ArcherPageGetOpaque(page)->flags & ARCHER_PAGE_META) ||
		meta->common.magic != ARCHER_MAGIC || meta->common.version != ARCHER_PAGE_VERSION)
		archer_corrupted(index, ARCHER_META_BLKNO, "The meta page is invalid.");
	UnlockReleaseBuffer(buf);
	/*
	 * Arrays are sized by the bounds of the reloptions (VEC_MAX_BATCH links,
	 * VEC_MAX_LAYERS layers), and the insert page is locked while the meta
	 * page is held: values outside them would write past an array or wait
	 * on the backend's own lock.
	 */
	if (meta->m < VEC_MIN_M || meta->m > VEC_MAX_M ||
		meta->ef_construction < VEC_MIN_EF_CONSTRUCTION ||
		meta->ef_construction > VEC_MAX_EF_CONSTRUCTION ||
		meta->metric < 1 || meta->metric > VEC_NSTRATEGIES ||
		meta->entry_level >= VEC_MAX_LAYERS ||
		meta->filter_m > vec_filter_slots(meta->m) ||
		(meta->meta_flags & ~VEC_META_KNOWN_FLAGS) != 0 ||
		meta->dim > AVECTOR_MAX_DIM ||
		meta->quantizer_pages != vec_quantizer_npages(meta->dim) ||
		meta->insert_page == ARCHER_META_BLKNO ||
		(BlockNumberIsValid(meta->insert_page) &&
		 meta->insert_page <= (BlockNumber) meta->quantizer_pages))
		archer_corrupted(index, ARCHER_META_BLKNO, "The meta page holds an impossible value.");
}

/* CRC-32C of a quantizer's min[dim] then max[dim], as its pages hold them */
static uint32
quantizer_checksum(const float *min, const float *max, int dim)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, min, sizeof(float) * dim);
	COMP_CRC32C(crc, max, sizeof(float) * dim);
	FIN_CRC32C(crc);
	return crc;
}

/*
 * Record the checksum of the quantizer on a meta page being written.  The
 * meta page's pd_lower is raised to cover the fields: an index whose meta
 * page an older build wrote ends it before them, and generic WAL keeps only
 * what lies below pd_lower.
 */
void
vec_set_quantizer_checksum(Page metapage, const float *min, const float *max, int dim)
{
	VecMetaPageData *meta = VecPageGetMeta(metapage);
	PageHeader	header = (PageHeader) metapage;
	LocationIndex end = (char *) (meta + 1) - (char *) metapage;

	meta->quantizer_crc = quantizer_checksum(min, max, dim);
	meta->meta_flags |= VEC_META_QUANTIZER_CRC;
	header->pd_lower = Max(header->pd_lower, end);
}

/* How many quantizer pages hold the min[] and max[] of dim dimensions */
int
vec_quantizer_npages(int dim)
{
	int			per_page = ARCHER_PAGE_CAPACITY_BYTES / sizeof(float);

	return (2 * dim + per_page - 1) / per_page;
}

/*
 * The quantizer range for a small sample of rows (an index's first row, or
 * a build from fewer than VEC_MIN_TRAINING_ROWS rows): the sample's range
 * widened on each side by twice the largest magnitude in it, so that later
 * rows, which such a sample may not represent, seldom leave it (those that
 * do take the wide quantizer); unit vectors (cosine) keep to [-1, 1].
 */
void
vec_widen_sample_range(const VecIndexInfo *info, float *min, float *max)
{
	float		radius = 0;

	for (int i = 0; i < info->dim; i++)
		radius = Max(radius, 2 * Max(fabsf(min[i]), fabsf(max[i])));
	if (!(radius > 0) || !isfinite(radius))
		radius = 1.0f;
	for (int i = 0; i < info->dim; i++)
	{
		min[i] = info->metric == VEC_METRIC_COSINE ? -1.0f : min[i] - radius;
		max[i] = info->metric == VEC_METRIC_COSINE ? 1.0f : max[i] + radius;
	}
}

/*
 * The index's quantizers from the trained per-dimension range: the wide
 * one keeps each code's value where it is relative to the middle of the
 * range, VEC_WIDE_FACTOR times farther from it.
 */
/*
 * M^2 of the inner-product graph's space (vec.h): the largest squared norm
 * of a vector the trained quantizer decodes to, a corner of its range
 */
static float
lift_norm2(const ArcherSQ8 *sq)
{
	double		sum = 0;

	for (int i = 0; i < sq->dim; i++)
	{
		double		lo = sq->lo[i];
		double		hi = lo + (double) ARCHER_SQ8_LEVELS * sq->step[i];

		sum += Max(lo * lo, hi * hi);
	}
	return (float) sum;
}

/* The extra coordinate of a vector of squared norm norm2 in that space */
static float
lift(const VecIndexInfo *info, float norm2)
{
	return sqrtf(Max(0.0f, info->lift_norm2 - norm2));
}

/* The squared norm of the vector a code decodes to */
static float
code_norm2(const ArcherSQ8 *sq, const uint8 *code)
{
	float		bias = archer_sq8_bias(sq, code);

	return archer_sq8_ip(sq, code, bias, code, bias);
}

void
vec_init_quantizers(VecIndexInfo *info, const float *trained_min, const float *trained_max)
{
	const ArcherSQ8 *sq = &info->sq;
	int			dim = info->dim;
	float	   *min = palloc(sizeof(float) * dim);
	float	   *max = palloc(sizeof(float) * dim);

	archer_sq8_init(&info->sq, dim, trained_min, trained_max, true);
	for (int i = 0; i < dim; i++)
	{
		double		half = 0.5 * ARCHER_SQ8_LEVELS * (double) sq->step[i];
		double		middle = (double) sq->lo[i] + half;

		min[i] = (float) (middle - VEC_WIDE_FACTOR * half);
		max[i] = (float) (middle + VEC_WIDE_FACTOR * half);
	}
	archer_sq8_init(&info->sq_wide, dim, min, max, sq->uniform_step);
	pfree(min);
	pfree(max);
	info->lift_norm2 = lift_norm2(sq);
}

/* The quantizer pages hold the per-dimension min[] then max[] of the build */
static void
load_quantizer(Relation index, VecIndexInfo *info, const VecMetaPageData *meta)
{
	int			npages = meta->quantizer_pages;
	int			dim = info->dim;
	float	   *values = palloc(sizeof(float) * 2 * dim);
	int			nvalues = 0;

	for (int i = 0; i < npages; i++)
	{
		BlockNumber blkno = ARCHER_META_BLKNO + 1 + i;
		Buffer		buf = archer_read_page(index, blkno, BUFFER_LOCK_SHARE, ARCHER_VEC_PAGE_ID);
		Page		page = BufferGetPage(buf);
		int			n = archer_page_nentries(page, sizeof(float));

		if (!(ArcherPageGetOpaque(page)->flags & ARCHER_PAGE_QUANTIZER) ||
			nvalues + n > 2 * dim)
			archer_corrupted(index, blkno, "A quantizer page is invalid.");
		memcpy(values + nvalues, ArcherPageGetEntries(page), sizeof(float) * n);
		UnlockReleaseBuffer(buf);
		/* builds and first inserts train on finite values only */
		for (int j = nvalues; j < nvalues + n; j++)
			if (!isfinite(values[j]))
				archer_corrupted(index, blkno, "A quantizer page holds a value that is not finite.");
		nvalues += n;
	}
	if (nvalues != 2 * dim)
		archer_corrupted(index, ARCHER_META_BLKNO, "The quantizer is incomplete.");
	if ((meta->meta_flags & VEC_META_QUANTIZER_CRC) &&
		quantizer_checksum(values, values + dim, dim) != meta->quantizer_crc)
		archer_corrupted(index, ARCHER_META_BLKNO + 1,
						 "The quantizer pages do not match the meta page's checksum.");
	for (int i = 0; i < dim; i++)
		if (!(values[i] <= values[dim + i]))
			archer_corrupted(index, ARCHER_META_BLKNO + 1 + (BlockNumber) (i / (ARCHER_PAGE_CAPACITY_BYTES / sizeof(float))),
							 "A quantizer range is empty.");
	vec_init_quantizers(info, values, values + dim);
}

/*
 * The index's dimension, options, metric and quantizer.  The quantizer is
 * fixed once the dimension is known, so the copy in rd_amcache (dropped by
 * any relcache invalidation, REINDEX included) never goes stale; an index
 * that has no dimension yet is not cached, since its first insert sets it.
 */
const VecIndexInfo *
vec_index_info(Relation index)
{
	VecIndexInfo *info;
	VecMetaPageData meta;
	MemoryContext oldcxt;

	if (index->rd_amcache != NULL)
		return (VecIndexInfo *) index->rd_amcache;

	vec_read_meta(index, &meta);
	oldcxt = MemoryContextSwitchTo(index->rd_indexcxt);
	info = palloc0(sizeof(VecIndexInfo));
	info->dim = meta.dim;
	info->m = meta.m;
	info->ef_construction = meta.ef_construction;
	info->metric = meta.metric;
	info->filter_m = meta.filter_m;
	info->null_vectors = (meta.meta_flags & VEC_META_NULL_VECTORS) != 0;
	info->is_array = index->rd_opcintype[0] == FLOAT4ARRAYOID;
	vec_index_columns(index, info);
	if (info->filter_m != 0 &&
		(info->nfilters == 0 || info->filter_m != vec_filter_slots(info->m)))
		archer_corrupted(index, ARCHER_META_BLKNO, "The meta page's filter list size is impossible.");
	if (info->metric != metric_of_index(index))
		archer_corrupted(index, ARCHER_META_BLKNO, "The meta page's metric does not match the operator class.");
	if (info->dim > vec_max_dim(info->m, info->nfilters, info->filter_m))
		archer_corrupted(index, ARCHER_META_BLKNO, "The meta page's dimension does not fit a node.");
	if (info->dim > 0)
	{
		load_quantizer(index, info, &meta);
		info->recent = archer_recent_buffers_create(index->rd_indexcxt);
	}
	MemoryContextSwitchTo(oldcxt);
	if (info->dim > 0)
		index->rd_amcache = info;
	return info;
}

/*
 * The float values of a column value or query; raises an error for a value
 * the index cannot hold.  With info->dim == 0 (an index built empty) any
 * dimension is accepted.
 */
const float *
vec_datum_values(const VecIndexInfo *info, Datum value, int *dim)
{
	const float *x;

	if (info->is_array)
		x = archer_float4_array_values(DatumGetArrayTypeP(value), dim);
	else
	{
		AVector    *vector = DatumGetAVectorP(value);

		*dim = vector->dim;
		x = vector->x;
	}
	if (info->dim != 0 && *dim != info->dim)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("expected %d dimensions, not %d", info->dim, *dim),
				 errdetail("The archer_vector index was built for vectors of %d dimensions.",
						   info->dim)));
	/*
	 * Every vector the index takes in (build, insert, buffered insert, query)
	 * comes through here: NaN or infinity would make every decoded distance
	 * NaN and a search could never order its candidates, so refuse them with
	 * the same error the distance operators raise on a sequential scan.
	 */
	archer_vector_check_finite(x, *dim);
	return x;
}

/*
 * vec_datum_values for a row to index (build, insert, buffered insert):
 * refuses components beyond VEC_MAX_COMPONENT, before the row can set the
 * quantizer of an empty index or reach a code.  A table with the index
 * then holds no such row, so every plan gives the same answer.
 */
const float *
vec_row_values(const VecIndexInfo *info, Datum value, int *dim)
{
	const float *x = vec_datum_values(info, value, dim);

	for (int i = 0; i < *dim; i++)
		if (fabsf(x[i]) > VEC_MAX_COMPONENT)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("archer_vector cannot index a vector component of %g", x[i]),
					 errdetail("Indexed vectors have components between %g and %g.",
							   -VEC_MAX_COMPONENT, VEC_MAX_COMPONENT)));
	return x;
}

/* Encode x with one quantizer; returns the error, decoded is work space */
static float
encode_with(const ArcherSQ8 *sq, const float *x, uint8 *code, float *decoded)
{
	archer_sq8_encode(sq, x, code);
	archer_sq8_decode(sq, code, decoded);
	return sqrtf(archer_vec_l2_squared(x, decoded, sq->dim));
}

/* Sum of the squared steps: four times the largest squared rounding error */
static double
rounding_bound2(const ArcherSQ8 *sq)
{
	double		sum = 0;

	for (int i = 0; i < sq->dim; i++)
		sum += (double) sq->step2[i];
	return sum;
}

const ArcherSQ8 *
vec_quantizer(const VecIndexInfo *info, uint8 flags)
{
	return (flags & VEC_NODE_WIDE) ? &info->sq_wide : &info->sq;
}

/* Encode x; the error and norm go into the node header */
void
vec_encode(const VecIndexInfo *info, const float *x, uint8 *code, float *error,
		   float *norm, uint8 *flags)
{
	int			dim = info->dim;
	float	   *work = palloc(sizeof(float) * dim);
	float	   *decoded = palloc(sizeof(float) * dim);

	double		norm2 = 0;

	/*
	 * in double, as the distance operators do: the squares of denormal
	 * components vanish in float, and such a vector would pass for a zero
	 * vector under cosine (distance 1) while it has a direction
	 */
	for (int i = 0; i < dim; i++)
		norm2 += (double) x[i] * x[i];
	memcpy(work, x, sizeof(float) * dim);
	*flags = 0;
	*norm = (float) sqrt(norm2);
	if (info->metric == VEC_METRIC_COSINE)
	{
		if (norm2 == 0)
			*flags |= VEC_NODE_ZERO;
		else
			archer_vec_normalize(work, dim);
	}
	*error = encode_with(&info->sq, work, code, decoded);

	/*
	 * Rounding alone leaves at most half a step per dimension; more means
	 * the trained range clamped the vector: try the wide quantizer.  Not for
	 * a zero vector under cosine: its code is never read (its distance is
	 * 1), and ZERO with WIDE marks the node of a NULL vector (vec.h).
	 */
	if (!(*flags & VEC_NODE_ZERO) &&
		(double) *error * *error > 0.25 * rounding_bound2(&info->sq) * (1 + 1e-4))
	{
		uint8	   *wide = palloc(dim);
		float		wide_error = encode_with(&info->sq_wide, work, wide, decoded);

		if (wide_error < *error)
		{
			memcpy(code, wide, dim);
			*error = wide_error;
			*flags |= VEC_NODE_WIDE;
		}
		pfree(wide);
	}
	pfree(work);
	pfree(decoded);
}

/*
 * A query of q: under inner product for the distances of a search's
 * results (node_space false) or of the graph's space (true, see
 * vec_node_query_init), which each need one of the quantizer's distances.
 */
static void
query_init(VecQuery *query, const VecIndexInfo *info, const float *q, bool node_space)
{
	int			dim = info->dim;
	float	   *work = palloc(sizeof(float) * dim);
	bool		inner_product = info->metric == VEC_METRIC_IP && !node_space;
	double		norm2 = 0;

	/* in double: a query may have any finite components, 1e20 or FLT_MAX */
	for (int i = 0; i < dim; i++)
		norm2 += (double) q[i] * q[i];
	memcpy(work, q, sizeof(float) * dim);
	query->info = info;
	query->values = work;
	query->qnorm = sqrt(norm2);
	query->zero = false;
	if (info->metric == VEC_METRIC_COSINE)
	{
		if (query->qnorm == 0)
			query->zero = true;
		else
			archer_vec_normalize(work, dim);
	}
	archer_sq8_query_init(&query->sq, &info->sq, work, !inner_product, inner_product);
	query->inner_product = inner_product;
	query->wide = palloc(sizeof(VecWideQuery));
	query->wide->ready = false;
	query->wide->cxt = CurrentMemoryContext;
	query->node_space = node_space;
	query->lift = node_space ? lift(info, query->qnorm * query->qnorm) : 0;
}

void
vec_query_init(VecQuery *query, const VecIndexInfo *info, const float *q)
{
	query_init(query, info, q, false);
}

/*
 * A query for the nodes near x in the graph's space (vec.h), to link x
 * into the graph: under L2 and cosine an ordinary query, under inner
 * product one whose distances are those of vec_code_distance
 */
void
vec_node_query_init(VecQuery *query, const VecIndexInfo *info, const float *x)
{
	query_init(query, info, x, true);
}

/*
 * vec_query_distance in double, from the decoded code: for a query whose
 * float computation overflowed (components like 1e20 square beyond
 * FLT_MAX).  Indexed components are bounded (VEC_MAX_COMPONENT), so every
 * term is finite in double.
 */
static double
query_distance_double(const VecQuery *query, const ArcherSQ8 *sq, const uint8 *code)
{
	double		l2 = 0;
	double		ip = 0;
	double		norm2 = 0;

	for (int i = 0; i < sq->dim; i++)
	{
		double		x = (double) sq->lo[i] + (double) sq->step[i] * code[i];
		double		d = query->values[i] - x;

		l2 += d * d;
		ip += query->values[i] * x;
		norm2 += x * x;
	}
	switch (query->info->metric)
	{
		case VEC_METRIC_L2:
			return sqrt(l2);
		case VEC_METRIC_IP:
			if (query->node_space)
			{
				double		gap = query->lift - lift(query->info, (float) norm2);

				return sqrt(l2 + gap * gap);
			}
			return -ip;
		default:
			return query->zero ? 1.0 : 0.5 * l2;
	}
}

/*
 * Distance between the query and a code, in the metric's own units.  A
 * result beyond float's range is clamped to +-FLT_MAX (vec_distance_bounds
 * knows), so that searches compare finite distances only.
 */
static pg_noinline void
prepare_wide_query(const VecQuery *query)
{
	MemoryContext old = MemoryContextSwitchTo(query->wide->cxt);

	archer_sq8_query_init(&query->wide->sq, &query->info->sq_wide, query->values,
						  !query->inner_product, query->inner_product);
	query->wide->ready = true;
	MemoryContextSwitchTo(old);
}

/* The query prepared for the quantizer of a node's code */
static inline const ArcherSQ8Query *
query_quantizer(const VecQuery *query, uint8 flags)
{
	if (!(flags & VEC_NODE_WIDE))
		return &query->sq;
	if (!query->wide->ready)
		prepare_wide_query(query);
	return &query->wide->sq;
}

float
vec_query_distance(const VecQuery *query, const uint8 *code, uint8 flags)
{
	const ArcherSQ8Query *sq = query_quantizer(query, flags);
	float		distance = 0;
	double		exact;

	switch (query->info->metric)
	{
		case VEC_METRIC_L2:
			distance = sqrtf(Max(0.0f, archer_sq8_query_l2sq(sq, code)));
			break;
		case VEC_METRIC_IP:
			if (query->node_space)
			{
				float		gap = query->lift - lift(query->info, code_norm2(sq->sq, code));

				distance = sqrtf(Max(0.0f, archer_sq8_query_l2sq(sq, code) + gap * gap));
			}
			else
				distance = -archer_sq8_query_ip(sq, code);
			break;
		case VEC_METRIC_COSINE:
			distance = query->zero ? 1.0f : 0.5f * Max(0.0f, archer_sq8_query_l2sq(sq, code));
			break;
	}
	/* an overflow in float leaves an infinity or a NaN, never a finite value */
	if (likely(isfinite(distance)))
		return distance;
	exact = query_distance_double(query, sq->sq, code);
	return (float) Max(-FLT_MAX, Min(FLT_MAX, exact));
}

/*
 * Bounds of the exact distance of a node's row from its code distance: a
 * lower one for the executor, an upper one for ranking (vec_scan.c).
 * Under L2 and cosine the code's error is a distance in the space the code
 * lives in (cosine: unit vectors, where the cosine distance is half the
 * squared L2 distance), so the triangle inequality bounds the exact L2
 * distance within the code's L2 distance plus or minus the error, and the
 * query's own rounding where the distance ran in fixed point (vector.h,
 * fixed_error); under inner product the error moves q.x by at most |q|
 * times the error, and a fixed-point query's rounding by at most
 * dot_error * |x^ - lo|.  Both
 * are widened by a margin for the rounding of float arithmetic.  A code
 * distance clamped to FLT_MAX (vec_query_distance) is at least that: the
 * lower bound from it stays below the exact distance.  One clamped to
 * -FLT_MAX (inner product with a huge query) may be far below: no lower
 * bound (-DBL_MAX), and the code distance stands for the upper one.
 */
void
vec_distance_bounds(const VecQuery *query, float code_distance, const VecNodeHeader *node,
					double *lower, double *upper)
{
	const ArcherSQ8Query *sq = query_quantizer(query, node->flags);

	/* L2 and cosine measure from the query as rounded for the code's quantizer */
	double		error = (double) node->error + sq->fixed_error;
	double		magnitude;

	switch (query->info->metric)
	{
		case VEC_METRIC_L2:
			*lower = code_distance - error;
			*upper = code_distance + error;
			magnitude = fabsf(code_distance) + error;
			break;
		case VEC_METRIC_IP:
			if (code_distance <= -FLT_MAX)
			{
				*lower = -DBL_MAX;
				*upper = code_distance;
				return;
			}
			/* and the rounding of a fixed-point query: dot_error * |x^ - lo| (vector.h) */
			error = query->qnorm * node->error +
				(double) sq->dot_error * (node->norm + node->error + sqrt(sq->sq->lo_norm2));
			*lower = code_distance - error;
			*upper = code_distance + error;
			magnitude = query->qnorm * (node->norm + node->error);
			break;
		default:
			if (query->zero || (node->flags & VEC_NODE_ZERO))
			{
				*lower = *upper = 1.0;
				magnitude = 1.0;
			}
			else
			{
				double		l2 = sqrt(2.0 * Max(code_distance, 0.0f));
				double		near = Max(l2 - error, 0.0);
				double		far = l2 + error;

				*lower = 0.5 * near * near;
				*upper = 0.5 * far * far;
				magnitude = 1.0 + error;
			}
			break;
	}
	*lower -= magnitude * VEC_BOUND_REL_MARGIN + VEC_BOUND_ABS_MARGIN;
	*upper += magnitude * VEC_BOUND_REL_MARGIN + VEC_BOUND_ABS_MARGIN;
}

/* Distance between the decoded vectors of codes of different quantizers */
static float
mixed_code_distance(const VecIndexInfo *info, const uint8 *a, uint8 a_flags,
					const uint8 *b, uint8 b_flags)
{
	float	   *xa = palloc(sizeof(float) * info->dim);
	float	   *xb = palloc(sizeof(float) * info->dim);
	float		distance;

	archer_sq8_decode(vec_quantizer(info, a_flags), a, xa);
	archer_sq8_decode(vec_quantizer(info, b_flags), b, xb);
	if (info->metric == VEC_METRIC_L2)
		distance = sqrtf(archer_vec_l2_squared(xa, xb, info->dim));
	else if (info->metric == VEC_METRIC_IP)
	{
		float		gap = lift(info, archer_vec_inner_product(xa, xa, info->dim)) -
			lift(info, archer_vec_inner_product(xb, xb, info->dim));

		distance = sqrtf(archer_vec_l2_squared(xa, xb, info->dim) + gap * gap);
	}
	else
		distance = 0.5f * archer_vec_l2_squared(xa, xb, info->dim);
	pfree(xa);
	pfree(xb);
	return distance;
}

/* Distance between two codes (with their nodes' flags) in the graph's space (vec.h) */
float
vec_code_distance(const VecIndexInfo *info, const uint8 *a, uint8 a_flags,
				  const uint8 *b, uint8 b_flags)
{
	const ArcherSQ8 *sq = vec_quantizer(info, a_flags);

	if ((a_flags & VEC_NODE_WIDE) != (b_flags & VEC_NODE_WIDE))
		return mixed_code_distance(info, a, a_flags, b, b_flags);
	switch (info->metric)
	{
		case VEC_METRIC_L2:
			return sqrtf(Max(0.0f, archer_sq8_l2sq(sq, a, b)));
		case VEC_METRIC_IP:
			{
				float		gap = lift(info, code_norm2(sq, a)) - lift(info, code_norm2(sq, b));

				return sqrtf(Max(0.0f, archer_sq8_l2sq(sq, a, b) + gap * gap));
			}
		default:
			return 0.5f * Max(0.0f, archer_sq8_l2sq(sq, a, b));
	}
}

/*
 * Block blkno share-locked if it is a node page, else InvalidBuffer: the
 * step of every walk over the graph's pages (free, buffer and quantizer
 * pages, and all-zero blocks a crash left behind, are passed over)
 */
Buffer
vec_read_node_page(Relation index, BlockNumber blkno)
{
	Buffer		buf = archer_read_page_if_used(index, blkno, BUFFER_LOCK_SHARE, ARCHER_VEC_PAGE_ID);

	if (BufferIsValid(buf) && !(ArcherPageGetOpaque(BufferGetPage(buf))->flags & ARCHER_PAGE_NODES))
	{
		UnlockReleaseBuffer(buf);
		return InvalidBuffer;
	}
	return buf;
}

/*
 * Block blkno share-locked if it holds rows: a node page or a page of NULL
 * vector rows (vec.h); else InvalidBuffer.  A walker whose info has no
 * dimension passes over node pages: they appeared after it read the meta
 * page (the first vector sets the dimension, under VEC_INSERT_LOCK), so
 * their rows are newer than its snapshot, and their nodes are sized for a
 * dimension its info does not have.
 */
Buffer
vec_read_row_page(Relation index, const VecIndexInfo *info, BlockNumber blkno)
{
	Buffer		buf = archer_read_page_if_used(index, blkno, BUFFER_LOCK_SHARE, ARCHER_VEC_PAGE_ID);
	uint8		wanted = info->dim > 0 ? (ARCHER_PAGE_NODES | ARCHER_PAGE_NULL_ROWS) :
		ARCHER_PAGE_NULL_ROWS;

	if (BufferIsValid(buf) && !(ArcherPageGetOpaque(BufferGetPage(buf))->flags & wanted))
	{
		UnlockReleaseBuffer(buf);
		return InvalidBuffer;
	}
	return buf;
}

/* The layout of the entries of NULL vector row pages: no code, no links (vec.h) */
void
vec_null_rows_info(const VecIndexInfo *info, VecIndexInfo *rows_info)
{
	*rows_info = *info;
	rows_info->dim = 0;
	rows_info->m = 0;
	rows_info->filter_m = 0;
}

/* The first block of NULL vector rows: past the largest quantizer (vec.h) */
BlockNumber
vec_null_rows_first_block(const VecIndexInfo *info)
{
	return ARCHER_META_BLKNO + 1 +
		vec_quantizer_npages(vec_max_dim(info->m, info->nfilters, info->filter_m));
}

/* The tuple at (blkno, offnum) of a locked page of the given kind, validated */
static VecNodeHeader *
page_tuple(Relation index, Page page, BlockNumber blkno, OffsetNumber offnum,
		   const VecIndexInfo *info, uint8 page_flag)
{
	ItemId		itemid;
	VecNodeHeader *node;

	if (!(ArcherPageGetOpaque(page)->flags & page_flag) ||
		offnum < FirstOffsetNumber || offnum > PageGetMaxOffsetNumber(page))
		archer_corrupted(index, blkno, page_flag == ARCHER_PAGE_NODES ?
						 "A link points to a missing node." :
						 page_flag == ARCHER_PAGE_BUFFER ?
						 "An insert buffer entry is missing." :
						 "A row without a vector is missing.");
	itemid = PageGetItemId(page, offnum);
	if (!ItemIdIsNormal(itemid))
		archer_corrupted(index, blkno, "A link points to an unused line pointer.");
	/*
	 * Tuples lie between pd_upper and the special space: generic WAL
	 * zeroes the hole below pd_upper of every page it logs, so a change to
	 * a tuple there would be lost (a merged buffer entry would come back
	 * unmerged, merged again, for ever)
	 */
	if (ItemIdGetOffset(itemid) < ((PageHeader) page)->pd_upper ||
		ItemIdGetOffset(itemid) + ItemIdGetLength(itemid) > ((PageHeader) page)->pd_special)
		archer_corrupted(index, blkno, "A line pointer points outside the page's tuple space.");
	node = (VecNodeHeader *) PageGetItem(page, itemid);
	if (node->level >= VEC_MAX_LAYERS ||
		(page_flag != ARCHER_PAGE_NODES && node->level != 0) ||
		ItemIdGetLength(itemid) != vec_node_size(info, node->level))
		archer_corrupted(index, blkno, "A node tuple has the wrong size.");
	/* a lower bound from a negative or non-finite error would be no bound */
	if (!(node->error >= 0 && node->error <= FLT_MAX) ||
		!(node->norm >= 0 && node->norm <= FLT_MAX))
		archer_corrupted(index, blkno, "A node tuple holds an impossible error or norm.");
	if (page_flag == ARCHER_PAGE_NULL_ROWS &&
		(node->flags & VEC_NODE_NULL_VECTOR) != VEC_NODE_NULL_VECTOR)
		archer_corrupted(index, blkno, "A page of rows without a vector holds a row with one.");
	return node;
}

/* The graph node at (blkno, offnum) of a locked node page, validated */
VecNodeHeader *
vec_page_node(Relation index, Page page, BlockNumber blkno, OffsetNumber offnum,
			  const VecIndexInfo *info)
{
	return page_tuple(index, page, blkno, offnum, info, ARCHER_PAGE_NODES);
}

/*
 * The info the entries of a page vec_read_row_page returned are laid out
 * by: info, or on a page of NULL vector rows rows_info (vec_null_rows_info)
 */
const VecIndexInfo *
vec_page_layout(Page page, const VecIndexInfo *info, const VecIndexInfo *rows_info)
{
	return (ArcherPageGetOpaque(page)->flags & ARCHER_PAGE_NULL_ROWS) ? rows_info : info;
}

/*
 * The row at (blkno, offnum) of a locked page vec_read_row_page returned,
 * validated; layout from vec_page_layout
 */
VecNodeHeader *
vec_page_row(Relation index, Page page, BlockNumber blkno, OffsetNumber offnum,
			 const VecIndexInfo *layout)
{
	return page_tuple(index, page, blkno, offnum, layout,
					  (ArcherPageGetOpaque(page)->flags & ARCHER_PAGE_NULL_ROWS) ?
					  ARCHER_PAGE_NULL_ROWS : ARCHER_PAGE_NODES);
}

/* The insert buffer entry at (blkno, offnum) of a locked buffer page, validated */
VecNodeHeader *
vec_page_entry(Relation index, Page page, BlockNumber blkno, OffsetNumber offnum,
			   const VecIndexInfo *info)
{
	return page_tuple(index, page, blkno, offnum, info, ARCHER_PAGE_BUFFER);
}

/* Whether two nodes' codes are the same: their vectors are exact copies to the index */
bool
vec_same_code(const VecIndexInfo *info, const uint8 *a, uint8 a_flags,
			  const uint8 *b, uint8 b_flags)
{
	return (a_flags & VEC_NODE_WIDE) == (b_flags & VEC_NODE_WIDE) &&
		memcmp(a, b, info->dim) == 0;
}
