/*-------------------------------------------------------------------------
 *
 * vector.h
 *	  avector, the vector type of archer, and the distance kernels shared by
 *	  the SQL operators and the archer_vector index access method.
 *
 * avector is named so that it coexists with pgvector's "vector" in the same
 * schema; every SQL function and C symbol is prefixed (avector_, archer_)
 * because PostgreSQL 15 loads libraries with RTLD_GLOBAL and no symbol
 * visibility, so pgvector's exported l2_distance would interpose on ours.
 *
 * Varlena layout, the same as pgvector's so that the bytes are familiar:
 *
 *	+----------+-----------+--------------+--------------------------+
 *	| vl_len_  | int16 dim | int16 unused | float4 x[dim]            |
 *	+----------+-----------+--------------+--------------------------+
 *	  4 bytes    2 bytes     2 bytes (0)    offset 8: 4-byte aligned
 *
 * Values are always finite (input, casts and binary receive reject NaN and
 * infinities) and have 1 to AVECTOR_MAX_DIM dimensions.  real[] values
 * reach the same kernels without a copy: a 1-D float4 array without NULLs
 * is a dense float array at ARR_DATA_PTR.
 *
 * Kernels (vector_kernels.c) come in a portable scalar set, always compiled,
 * and an AVX2+FMA set on x86-64, chosen at run time by CPUID on first use;
 * the library is never built with -march flags.  archer_vec_kernels holds
 * the active set; call through the inline wrappers below.  The server
 * environment variable ARCHER_VECTOR_KERNEL=scalar forces the scalar set
 * (to test it on AVX2 machines); SHOW archer.vector_kernel tells which runs.
 *
 * Inputs to the kernels must be finite.  Float kernels accumulate in float:
 * results of vectors with components beyond ~1e19 overflow to infinity
 * (the SQL functions then recompute in double), and squares below ~1e-23
 * underflow to 0 (as in pgvector).  The SIMD and scalar sets sum in
 * different orders, so results may differ in the last bits (relative
 * error well under 1e-5; checked by archer_vector_kernel_selftest()).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHER_VECTOR_H
#define ARCHER_VECTOR_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"

#define AVECTOR_MAX_DIM			16000

typedef struct AVector
{
	int32		vl_len_;		/* varlena header (do not touch directly!) */
	int16		dim;			/* number of dimensions */
	int16		unused;			/* always 0, reserved */
	float		x[FLEXIBLE_ARRAY_MEMBER];
} AVector;

#define AVECTOR_SIZE(dim)		(offsetof(AVector, x) + sizeof(float) * (dim))
#define DatumGetAVectorP(d)		((AVector *) PG_DETOAST_DATUM(d))
#define PG_GETARG_AVECTOR_P(n)	DatumGetAVectorP(PG_GETARG_DATUM(n))
#define PG_RETURN_AVECTOR_P(v)	PG_RETURN_POINTER(v)

/*
 * The kernel set.  n is the number of dimensions (1..AVECTOR_MAX_DIM);
 * pointers need no particular alignment.
 *
 * SQ8 codes are one uint8 per dimension; see the SQ8 API below for what the
 * weight arrays hold.
 */
typedef struct ArcherVecKernels
{
	const char *name;			/* "scalar" or "avx2+fma" */

	/* float vectors */
	float		(*l2sq) (const float *a, const float *b, int n);	/* sum (a-b)^2 */
	float		(*dot) (const float *a, const float *b, int n); /* sum a*b */
	float		(*cosine) (const float *a, const float *b, int n);	/* 1 - cos */

	/* float query against SQ8 codes (asymmetric) */
	float		(*sq8_l2sq) (const float *q, const float *w, const uint8 *c, int n);	/* sum (q-w*c)^2 */
	float		(*sq8_dot) (const float *w, const uint8 *c, int n); /* sum w*c */

	/* SQ8 codes against SQ8 codes (symmetric), weighted */
	float		(*sq8_wl2sq) (const float *w, const uint8 *a, const uint8 *b, int n);	/* sum w*(a-b)^2 */
	float		(*sq8_wdot) (const float *w, const uint8 *a, const uint8 *b, int n);	/* sum w*a*b */

	/* SQ8 codes against SQ8 codes, exact integers (n <= AVECTOR_MAX_DIM) */
	uint32		(*u8_l2sq) (const uint8 *a, const uint8 *b, int n); /* sum (a-b)^2 */
	uint32		(*u8_dot) (const uint8 *a, const uint8 *b, int n);	/* sum a*b */

	/* a fixed-point query against SQ8 codes, exact integers (see SQ8 below) */
	uint64		(*sq8_fixed_l2sq) (const int16 *q, const uint8 *c, int n);	/* sum (q-ONE*c)^2 */
	int64		(*sq8_fixed_dot) (const int16 *q, const uint8 *c, int n);	/* sum q*c */
} ArcherVecKernels;

/* The active set; its members resolve the CPU's best set on first call */
extern ArcherVecKernels archer_vec_kernels;

/* Both sets, for tests and benchmarks; simd is NULL if the CPU lacks it */
extern const ArcherVecKernels archer_vec_kernels_scalar;
extern const ArcherVecKernels *archer_vec_kernels_simd(void);
extern const char *archer_vec_kernel_name(void);

/*
 * Cosine distance from the sums (dot, |a|^2, |b|^2), shared by every
 * kernel.  A zero vector has distance 1.0 to everything (including another
 * zero vector): "no direction" is treated as orthogonal, never NaN.
 */
extern float archer_cosine_finish(const float *a, const float *b, int n,
								  float dot, float na, float nb);

static inline float
archer_vec_l2_squared(const float *a, const float *b, int n)
{
	return archer_vec_kernels.l2sq(a, b, n);
}

static inline float
archer_vec_inner_product(const float *a, const float *b, int n)
{
	return archer_vec_kernels.dot(a, b, n);
}

static inline float
archer_vec_cosine_distance(const float *a, const float *b, int n)
{
	return archer_vec_kernels.cosine(a, b, n);
}

/*
 * SQ8: 8-bit scalar quantization for the index.
 *
 * One quantizer per index, trained on per-dimension min/max (collect them
 * with archer_sq8_range_*): dimension i maps [lo[i], lo[i] + 255 * step[i]]
 * to codes 0..255 (round to nearest; values outside clamp).  A vector's
 * code is dim bytes, decoded as x^[i] = lo[i] + step[i] * code[i].  Store
 * lo and step (or the min/max) in the index to rebuild the quantizer.
 *
 * With uniform_step (one step for all dimensions, the widest range), the
 * symmetric L2 distance is exact integer arithmetic: step^2 * sum (a-b)^2.
 * Per-dimension steps quantize dimensions of unequal range more finely and
 * use the weighted float kernels instead.
 *
 * Distances, all between the decoded vectors x^:
 *	- asymmetric (float query against codes): archer_sq8_query_init once per
 *	  query (saying which of _l2sq and _ip it will use), then archer_sq8_query_l2sq /
 *	  _ip per code: one FMA chain over the codes.  With uniform_step, L2 runs in integers: the query becomes
 *	  (q - lo) / step in fixed point, ARCHER_SQ8_FIXED_ONE units a code
 *	  unit, and each code costs a widening subtract and a multiply-add of
 *	  pairs, half the work of the float chain.  The distance is then the
 *	  one to the rounded query q~, off by at most fixed_error = |q - q~|
 *	  (0 when q - lo is a multiple of step / ONE, as for integer data with
 *	  a step of 1); callers that bound distances add it.  A query with a
 *	  component more than ARCHER_SQ8_FIXED_REACH code units outside the
 *	  trained range keeps the float chain.  The inner product's sum of
 *	  q * step * c runs alike, q scaled so that its largest component is
 *	  ARCHER_SQ8_DOT_ONE; it is off by at most dot_error * |x^ - lo|;
 *	- symmetric (code against code): archer_sq8_l2sq, and archer_sq8_ip,
 *	  which takes each code's bias (archer_sq8_bias: one float per vector
 *	  that the index should store beside the code, the per-vector offset
 *	  term of the inner product).
 *
 * Cosine: normalize vectors (archer_vec_normalize) before training and
 * encoding, and the query before archer_sq8_query_init; then cosine
 * distance = 1 - inner product.
 */
#define ARCHER_SQ8_LEVELS		255

/*
 * Fixed-point queries: ONE units a code unit, components within REACH code
 * units of [0, 255].  A difference q - ONE * c then lies within
 * +-(255 + REACH) * ONE = +-4088 (int16), a pair of squares below 2^25, and
 * an int32 lane that adds the ARCHER_SQ8_FIXED_BLOCK / 16 pairs of a block
 * stays below 2^31 before the block's sum is added in 64 bits.
 */
#define ARCHER_SQ8_FIXED_SHIFT	3
#define ARCHER_SQ8_FIXED_ONE	(1 << ARCHER_SQ8_FIXED_SHIFT)
#define ARCHER_SQ8_FIXED_REACH	256
#define ARCHER_SQ8_FIXED_BLOCK	1024

/*
 * Fixed-point inner products: components within +-DOT_ONE, so a pair of
 * products q * c stays within 2 * 32767 * 255 < 2^24 and a block's lanes
 * within 2^30.
 */
#define ARCHER_SQ8_DOT_ONE		32767

typedef struct ArcherSQ8
{
	int			dim;
	bool		uniform_step;	/* step[i] all equal: integer symmetric L2 */
	float	   *lo;				/* [dim] value of code 0 */
	float	   *step;			/* [dim] value of one code unit, > 0 */
	float	   *step2;			/* [dim] step^2: symmetric weights */
	float	   *lo_step;		/* [dim] lo * step: bias weights */
	float		lo_norm2;		/* sum lo^2 */
} ArcherSQ8;

typedef struct ArcherSQ8Query
{
	const ArcherSQ8 *sq;
	float	   *q_lo;			/* [dim] q - lo, or NULL with q_fixed */
	float	   *q_step;			/* [dim] q * step, or NULL: no inner product, or q_dot */
	float		q_dot_lo;		/* sum q * lo */
	int16	   *q_fixed;		/* [dim] (q - lo) / step in fixed point, or NULL */
	float		fixed_scale;	/* (step / ONE)^2 */
	float		fixed_error;	/* |q - q~| (0 without q_fixed) */
	int16	   *q_dot;			/* [dim] q in fixed point, or NULL (inner product) */
	float		dot_scale;		/* step / the scale of q_dot */
	float		dot_error;		/* |q - q_dot's q| (0 without q_dot) */
} ArcherSQ8Query;

extern void archer_sq8_range_init(float *min, float *max, int dim);
extern void archer_sq8_range_add(float *min, float *max, const float *x, int dim);
extern void archer_sq8_init(ArcherSQ8 *sq, int dim, const float *min,
							const float *max, bool uniform_step);
extern void archer_sq8_encode(const ArcherSQ8 *sq, const float *x, uint8 *code);
extern void archer_sq8_decode(const ArcherSQ8 *sq, const uint8 *code, float *x);
extern float archer_sq8_bias(const ArcherSQ8 *sq, const uint8 *code);
extern void archer_sq8_query_init(ArcherSQ8Query *pq, const ArcherSQ8 *sq,
								  const float *q, bool l2, bool inner_product);
extern float archer_sq8_l2sq(const ArcherSQ8 *sq, const uint8 *a, const uint8 *b);
extern float archer_sq8_ip(const ArcherSQ8 *sq, const uint8 *a, float bias_a,
						   const uint8 *b, float bias_b);

static inline float
archer_sq8_query_l2sq(const ArcherSQ8Query *pq, const uint8 *code)
{
	Assert(pq->q_fixed != NULL || pq->q_lo != NULL);
	if (pq->q_fixed != NULL)
		return pq->fixed_scale *
			(float) archer_vec_kernels.sq8_fixed_l2sq(pq->q_fixed, code, pq->sq->dim);
	return archer_vec_kernels.sq8_l2sq(pq->q_lo, pq->sq->step, code, pq->sq->dim);
}

static inline float
archer_sq8_query_ip(const ArcherSQ8Query *pq, const uint8 *code)
{
	Assert(pq->q_dot != NULL || pq->q_step != NULL);
	if (pq->q_dot != NULL)
		return pq->q_dot_lo + pq->dot_scale *
			(float) archer_vec_kernels.sq8_fixed_dot(pq->q_dot, code, pq->sq->dim);
	return pq->q_dot_lo + archer_vec_kernels.sq8_dot(pq->q_step, code, pq->sq->dim);
}

extern float archer_vec_normalize(float *x, int n);

/* vector.c: values of SQL datums, for the index */
extern AVector *avector_new(int dim);
extern void avector_check_dims(int dim);
extern const float *archer_float4_array_values(ArrayType *array, int *dim);
extern void archer_vector_check_finite(const float *x, int dim);
extern void archer_vector_init(void);

#endif							/* ARCHER_VECTOR_H */
