/*-------------------------------------------------------------------------
 *
 * vector_selftest.c
 *	  Diagnostics of the distance kernels, for tests and for a DBA who
 *	  wants to know what this CPU runs: archer_vector_kernel() names the
 *	  kernels in use, archer_vector_kernel_selftest() compares every SIMD
 *	  kernel with the scalar one and with double precision on random
 *	  inputs, archer_vector_kernel_bench() times them.  No index or query
 *	  path calls anything here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "common/pg_prng.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"

#include "vector.h"

PG_FUNCTION_INFO_V1(archer_vector_kernel);
PG_FUNCTION_INFO_V1(archer_vector_kernel_selftest);
PG_FUNCTION_INFO_V1(archer_vector_kernel_bench);

Datum
archer_vector_kernel(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(archer_vec_kernel_name()));
}

typedef enum KernelId
{
	K_L2SQ,
	K_DOT,
	K_COSINE,
	K_SQ8_L2SQ,
	K_SQ8_DOT,
	K_SQ8_WL2SQ,
	K_SQ8_WDOT,
	K_U8_L2SQ,
	K_U8_DOT,
	K_SQ8_FIXED_L2SQ,
	K_SQ8_FIXED_DOT,
	K_COUNT
} KernelId;

static const char *const kernel_names[K_COUNT] = {
	"l2sq", "dot", "cosine", "sq8_l2sq", "sq8_dot", "sq8_wl2sq", "sq8_wdot",
	"u8_l2sq", "u8_dot", "sq8_fixed_l2sq", "sq8_fixed_dot"
};

#define SELFTEST_MAX_LEN		4100
#define SELFTEST_TOLERANCE		1e-5

/* Inputs of every kernel; a float vector doubles as the SQ8 query */
typedef struct KernelInputs
{
	float	   *a;
	float	   *b;
	float	   *w;				/* SQ8 weights, >= 0 */
	uint8	   *ca;
	uint8	   *cb;
	int16	   *qf;				/* a fixed-point SQ8 query, in its range */
	int16	   *qd;				/* a fixed-point SQ8 inner-product query */
} KernelInputs;

/* The range of a fixed-point query component (vector.h) */
static int
fixed_lowest(void)
{
	return -ARCHER_SQ8_FIXED_REACH * ARCHER_SQ8_FIXED_ONE;
}

static int
fixed_highest(void)
{
	return (ARCHER_SQ8_LEVELS + ARCHER_SQ8_FIXED_REACH) * ARCHER_SQ8_FIXED_ONE;
}

static bool
kernel_is_integer(KernelId id)
{
	return id == K_U8_L2SQ || id == K_U8_DOT || id == K_SQ8_FIXED_L2SQ || id == K_SQ8_FIXED_DOT;
}

static double
kernel_run(const ArcherVecKernels *k, KernelId id, const KernelInputs *in, int n)
{
	switch (id)
	{
		case K_L2SQ:
			return k->l2sq(in->a, in->b, n);
		case K_DOT:
			return k->dot(in->a, in->b, n);
		case K_COSINE:
			return k->cosine(in->a, in->b, n);
		case K_SQ8_L2SQ:
			return k->sq8_l2sq(in->a, in->w, in->ca, n);
		case K_SQ8_DOT:
			return k->sq8_dot(in->w, in->ca, n);
		case K_SQ8_WL2SQ:
			return k->sq8_wl2sq(in->w, in->ca, in->cb, n);
		case K_SQ8_WDOT:
			return k->sq8_wdot(in->w, in->ca, in->cb, n);
		case K_U8_L2SQ:
			return k->u8_l2sq(in->ca, in->cb, n);
		case K_U8_DOT:
			return k->u8_dot(in->ca, in->cb, n);
		case K_SQ8_FIXED_L2SQ:
			return (double) k->sq8_fixed_l2sq(in->qf, in->ca, n);
		case K_SQ8_FIXED_DOT:
			return (double) k->sq8_fixed_dot(in->qd, in->ca, n);
		case K_COUNT:
			break;
	}
	return 0.0;
}

/*
 * The exact answer in double, and the scale errors are measured against:
 * the sum of the terms' absolute values (so cancellation does not inflate
 * relative errors), or 1 for cosine distances, which lie in [0, 2].
 */
static double
kernel_reference(KernelId id, const KernelInputs *in, int n, double *scale)
{
	double		s = 0.0;
	double		abssum = 0.0;
	double		na = 0.0;
	double		nb = 0.0;
	int			i;

	for (i = 0; i < n; i++)
	{
		double		t = 0.0;

		switch (id)
		{
			case K_L2SQ:
				t = ((double) in->a[i] - in->b[i]) * ((double) in->a[i] - in->b[i]);
				break;
			case K_DOT:
			case K_COSINE:
				t = (double) in->a[i] * in->b[i];
				na += (double) in->a[i] * in->a[i];
				nb += (double) in->b[i] * in->b[i];
				break;
			case K_SQ8_L2SQ:
				t = (double) in->a[i] - (double) in->w[i] * in->ca[i];
				t *= t;
				break;
			case K_SQ8_DOT:
				t = (double) in->w[i] * in->ca[i];
				break;
			case K_SQ8_WL2SQ:
				t = (double) in->w[i] * ((int) in->ca[i] - (int) in->cb[i]) *
					((int) in->ca[i] - (int) in->cb[i]);
				break;
			case K_SQ8_WDOT:
				t = (double) in->w[i] * in->ca[i] * in->cb[i];
				break;
			case K_U8_L2SQ:
				t = ((int) in->ca[i] - (int) in->cb[i]) * ((int) in->ca[i] - (int) in->cb[i]);
				break;
			case K_U8_DOT:
				t = (double) in->ca[i] * in->cb[i];
				break;
			case K_SQ8_FIXED_L2SQ:
				t = (double) in->qf[i] - ARCHER_SQ8_FIXED_ONE * in->ca[i];
				t *= t;
				break;
			case K_SQ8_FIXED_DOT:
				t = (double) in->qd[i] * in->ca[i];
				break;
			case K_COUNT:
				break;
		}
		s += t;
		abssum += fabs(t);
	}
	*scale = Max(abssum, 1e-30);
	/* integer kernels must be exact: measure their absolute error */
	if (kernel_is_integer(id))
		*scale = 1.0;
	if (id == K_COSINE)
	{
		*scale = 1.0;
		if (na == 0.0 || nb == 0.0)
			return 1.0;
		return 1.0 - Max(-1.0, Min(1.0, s / sqrt(na * nb)));
	}
	return s;
}

static void
fill_random(pg_prng_state *rng, KernelInputs *in, int len)
{
	int			i;

	for (i = 0; i < len; i++)
	{
		in->a[i] = (float) (pg_prng_double(rng) * 2.0 - 1.0);
		in->b[i] = (float) (pg_prng_double(rng) * 2.0 - 1.0);
		in->w[i] = (float) (pg_prng_double(rng) * 2.0 / ARCHER_SQ8_LEVELS);
		in->ca[i] = (uint8) (pg_prng_uint32(rng) & 0xFF);
		in->cb[i] = (uint8) (pg_prng_uint32(rng) & 0xFF);
		in->qf[i] = (int16) (fixed_lowest() +
							 (int) (pg_prng_uint32(rng) % (fixed_highest() - fixed_lowest() + 1)));
		in->qd[i] = (int16) ((int) (pg_prng_uint32(rng) % (2 * ARCHER_SQ8_DOT_ONE + 1)) -
							 ARCHER_SQ8_DOT_ONE);
	}
}

static void
alloc_inputs(KernelInputs *in, int len)
{
	in->a = palloc(sizeof(float) * len);
	in->b = palloc(sizeof(float) * len);
	in->w = palloc(sizeof(float) * len);
	in->ca = palloc(len);
	in->cb = palloc(len);
	in->qf = palloc(sizeof(int16) * len);
	in->qd = palloc(sizeof(int16) * len);
}

/* The inputs shifted by off elements, so that lengths meet every alignment */
static KernelInputs
inputs_at(const KernelInputs *in, int off)
{
	KernelInputs s;

	s.a = in->a + off;
	s.b = in->b + off;
	s.w = in->w + off;
	s.ca = in->ca + off;
	s.cb = in->cb + off;
	s.qf = in->qf + off;
	s.qd = in->qd + off;
	return s;
}

/*
 * Max relative error of one kernel over lengths 1..SELFTEST_MAX_LEN: SIMD
 * against scalar and scalar against the double reference.  Integer
 * kernels must match exactly; they also run at AVECTOR_MAX_DIM with every
 * code at 255, their largest possible sum.
 */
static double
selftest_kernel(KernelId id, const ArcherVecKernels *simd, const KernelInputs *in)
{
	double		max_err = 0.0;
	int			n;

	for (n = 1; n <= SELFTEST_MAX_LEN; n++)
	{
		KernelInputs s = inputs_at(in, n % 8);
		double		scale;
		double		ref = kernel_reference(id, &s, n, &scale);
		double		scalar = kernel_run(&archer_vec_kernels_scalar, id, &s, n);
		double		vec = kernel_run(simd, id, &s, n);

		max_err = Max(max_err, fabs(vec - scalar) / scale);
		max_err = Max(max_err, fabs(scalar - ref) / scale);
		CHECK_FOR_INTERRUPTS();
	}
	if (kernel_is_integer(id))
	{
		KernelInputs ext = {0};
		double		expect = (double) AVECTOR_MAX_DIM * 255 * 255;

		/*
		 * l2sq: 255s against 0s; dot: 255s against 255s; fixed: 255s
		 * against the lowest component; fixed dot: against -DOT_ONE
		 */
		ext.ca = palloc(AVECTOR_MAX_DIM);
		ext.cb = palloc(AVECTOR_MAX_DIM);
		ext.qf = palloc(sizeof(int16) * AVECTOR_MAX_DIM);
		ext.qd = palloc(sizeof(int16) * AVECTOR_MAX_DIM);
		memset(ext.ca, 255, AVECTOR_MAX_DIM);
		memset(ext.cb, id == K_U8_L2SQ ? 0 : 255, AVECTOR_MAX_DIM);
		for (int i = 0; i < AVECTOR_MAX_DIM; i++)
		{
			ext.qf[i] = (int16) fixed_lowest();
			ext.qd[i] = (int16) -ARCHER_SQ8_DOT_ONE;
		}
		if (id == K_SQ8_FIXED_L2SQ)
			expect = (double) AVECTOR_MAX_DIM *
				(fixed_lowest() - 255.0 * ARCHER_SQ8_FIXED_ONE) *
				(fixed_lowest() - 255.0 * ARCHER_SQ8_FIXED_ONE);
		if (id == K_SQ8_FIXED_DOT)
			expect = (double) AVECTOR_MAX_DIM * -ARCHER_SQ8_DOT_ONE * 255;
		max_err = Max(max_err, fabs(kernel_run(&archer_vec_kernels_scalar, id, &ext,
											   AVECTOR_MAX_DIM) - expect));
		max_err = Max(max_err, fabs(kernel_run(simd, id, &ext, AVECTOR_MAX_DIM) - expect));
	}
	return max_err;
}

/* Quantizer test data: dimensions of unequal centers and spreads */
static void
sq8_test_vector(pg_prng_state *rng, const float *center, const float *spread,
				float *x, int dim)
{
	int			i;

	for (i = 0; i < dim; i++)
		x[i] = center[i] + spread[i] * (float) (pg_prng_double(rng) * 2.0 - 1.0);
}

static double
decoded_dot(const ArcherSQ8 *sq, const uint8 *a, const uint8 *b, double *scale)
{
	double		s = 0.0;
	int			i;

	/* scale: the absolute values of the terms archer_sq8_ip adds up */
	*scale = 0.0;
	for (i = 0; i < sq->dim; i++)
	{
		double		xa = sq->lo[i] + (double) sq->step[i] * a[i];
		double		xb = sq->lo[i] + (double) sq->step[i] * b[i];

		s += xa * xb;
		*scale += (double) sq->lo[i] * sq->lo[i] +
			fabs((double) sq->lo[i] * sq->step[i]) * (a[i] + b[i]) +
			(double) sq->step[i] * sq->step[i] * a[i] * b[i];
	}
	return s;
}

/*
 * The relative error of archer_sq8_query_l2sq against the exact squared
 * distance ref (scale: its terms' magnitudes); in fixed point it measures
 * from the rounded query, whose distance lies within fixed_error of the
 * exact one: 1 (a failure) if it does not.
 */
static double
query_l2sq_error(const ArcherSQ8Query *pq, const uint8 *code, double ref, double scale)
{
	double		l2sq = archer_sq8_query_l2sq(pq, code);

	if (pq->q_fixed == NULL)
		return fabs(l2sq - ref) / Max(scale, 1e-30);
	if (fabs(sqrt(Max(l2sq, 0.0)) - sqrt(ref)) > pq->fixed_error + sqrt(scale) * 1e-5)
		return 1.0;
	return 0.0;
}

/*
 * The relative error of archer_sq8_query_ip against the exact q . x^ (ref;
 * scale: its terms' magnitudes); in fixed point it must lie within
 * dot_error * |x^ - lo| (code_lo) of it: 1 (a failure) if it does not.
 */
static double
query_ip_error(const ArcherSQ8Query *pq, const uint8 *code, double ref, double scale,
			   double code_lo)
{
	double		ip = archer_sq8_query_ip(pq, code);

	if (pq->q_dot == NULL)
		return fabs(ip - ref) / Max(scale, 1e-30);
	if (fabs(ip - ref) > pq->dot_error * code_lo + scale * 1e-5)
		return 1.0;
	return 0.0;
}

/*
 * The SQ8 API on random data, both step modes: round trip within half a
 * step, and every distance equal to the same distance computed in double
 * on the decoded vectors.
 */
static double
selftest_sq8(pg_prng_state *rng)
{
	static const int dims[] = {1, 3, 8, 17, 100, 784, 1536, 4000, 4100};
	const int	nvec = 8;
	double		max_err = 0.0;
	int			d;
	int			mode;

	for (d = 0; d < lengthof(dims); d++)
	{
		for (mode = 0; mode < 2; mode++)
		{
			int			dim = dims[d];
			float	   *center = palloc(sizeof(float) * dim);
			float	   *spread = palloc(sizeof(float) * dim);
			float	   *min = palloc(sizeof(float) * dim);
			float	   *max = palloc(sizeof(float) * dim);
			float	   *x = palloc(sizeof(float) * dim * nvec);
			float	   *q = palloc(sizeof(float) * dim);
			float	   *dec = palloc(sizeof(float) * dim);
			uint8	   *codes = palloc(dim * nvec);
			ArcherSQ8	sq;
			ArcherSQ8Query pq;
			int			i;
			int			j;

			for (i = 0; i < dim; i++)
			{
				center[i] = (float) (pg_prng_double(rng) * 4.0 - 2.0);
				spread[i] = (float) (0.01 + pg_prng_double(rng));
			}
			archer_sq8_range_init(min, max, dim);
			for (j = 0; j < nvec; j++)
			{
				sq8_test_vector(rng, center, spread, x + j * dim, dim);
				archer_sq8_range_add(min, max, x + j * dim, dim);
			}
			archer_sq8_init(&sq, dim, min, max, mode == 1);
			for (j = 0; j < nvec; j++)
				archer_sq8_encode(&sq, x + j * dim, codes + j * dim);
			sq8_test_vector(rng, center, spread, q, dim);
			archer_sq8_query_init(&pq, &sq, q, true, true);
			/* uniform steps run queries in the trained range in fixed point */
			if ((pq.q_fixed != NULL) != sq.uniform_step ||
				(pq.q_dot != NULL) != sq.uniform_step ||
				pq.fixed_error > 0.5 * sq.step[0] / ARCHER_SQ8_FIXED_ONE * sqrt(dim) * (1 + 1e-5))
				max_err = Max(max_err, 1.0);

			for (j = 0; j < nvec; j++)
			{
				const uint8 *ca = codes + j * dim;
				const uint8 *cb = codes + ((j + 1) % nvec) * dim;
				double		ref_l2 = 0.0;
				double		l2_scale = 0.0;
				double		ref_ip = 0.0;
				double		ip_scale = 0.0;
				double		sym_l2 = 0.0;
				double		code_lo2 = 0.0;
				double		ref;
				double		scale;

				archer_sq8_decode(&sq, ca, dec);
				for (i = 0; i < dim; i++)
				{
					/* the decoded vectors, exactly */
					double		xa = sq.lo[i] + (double) sq.step[i] * ca[i];
					double		xb = sq.lo[i] + (double) sq.step[i] * cb[i];

					/* round trip: within half a step (and float rounding) */
					if (fabs((double) dec[i] - x[j * dim + i]) >
						sq.step[i] * 0.5 * (1 + 1e-5) + fabs(dec[i]) * 1e-6)
						max_err = Max(max_err, 1.0);
					ref_l2 += (q[i] - xa) * (q[i] - xa);
					/* (q - lo) - step * c cancels: measure against its terms */
					l2_scale += (fabs((double) q[i] - sq.lo[i]) + (double) sq.step[i] * ca[i]) *
						(fabs((double) q[i] - sq.lo[i]) + (double) sq.step[i] * ca[i]);
					ref_ip += q[i] * xa;
					ip_scale += fabs((double) q[i] * sq.lo[i]) +
						fabs((double) q[i] * sq.step[i] * ca[i]);
					sym_l2 += (xa - xb) * (xa - xb);
					code_lo2 += (xa - sq.lo[i]) * (xa - sq.lo[i]);
				}
				max_err = Max(max_err, query_l2sq_error(&pq, ca, ref_l2, l2_scale));
				max_err = Max(max_err, query_ip_error(&pq, ca, ref_ip, ip_scale, sqrt(code_lo2)));
				max_err = Max(max_err, fabs(archer_sq8_l2sq(&sq, ca, cb) - sym_l2) /
							  Max(sym_l2, 1e-30));
				ref = decoded_dot(&sq, ca, cb, &scale);
				max_err = Max(max_err,
							  fabs(archer_sq8_ip(&sq, ca, archer_sq8_bias(&sq, ca),
												 cb, archer_sq8_bias(&sq, cb)) - ref) /
							  Max(scale, 1e-30));
			}
			/* a component past the fixed range: the float chain */
			q[0] = sq.lo[0] + sq.step[0] * (ARCHER_SQ8_LEVELS + ARCHER_SQ8_FIXED_REACH + 2);
			archer_sq8_query_init(&pq, &sq, q, true, true);
			if (pq.q_fixed != NULL)
				max_err = Max(max_err, 1.0);
			CHECK_FOR_INTERRUPTS();
		}
	}
	return max_err;
}

static void
selftest_row(ReturnSetInfo *rsinfo, const char *kernel, const char *impl,
			 int lengths, double max_err)
{
	Datum		values[5];
	bool		nulls[5] = {0};

	values[0] = CStringGetTextDatum(kernel);
	values[1] = CStringGetTextDatum(impl);
	values[2] = Int32GetDatum(lengths);
	values[3] = Float8GetDatum(max_err);
	values[4] = BoolGetDatum(max_err < SELFTEST_TOLERANCE);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * archer_vector_kernel_selftest(): one row per kernel with its largest
 * relative error (SIMD vs scalar, scalar vs double) over random inputs of
 * every length 1..4100, then one row for the SQ8 API.  Without SIMD on
 * this CPU the scalar set is compared with itself and with double.
 * Inputs come from a fixed seed: the same on every machine.
 */
Datum
archer_vector_kernel_selftest(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const ArcherVecKernels *simd = archer_vec_kernels_simd();
	KernelInputs in;
	pg_prng_state rng;
	int			id;

	InitMaterializedSRF(fcinfo, 0);
	if (simd == NULL)
		simd = &archer_vec_kernels_scalar;

	pg_prng_seed(&rng, UINT64CONST(0x617263686572));
	alloc_inputs(&in, SELFTEST_MAX_LEN + 8);
	fill_random(&rng, &in, SELFTEST_MAX_LEN + 8);

	for (id = 0; id < K_COUNT; id++)
		selftest_row(rsinfo, kernel_names[id], simd->name, SELFTEST_MAX_LEN,
					 selftest_kernel(id, simd, &in));
	selftest_row(rsinfo, "sq8_api", archer_vec_kernel_name(), 9,
				 selftest_sq8(&rng));
	return (Datum) 0;
}

/*
 * archer_vector_kernel_bench(dim, calls): nanoseconds per call of every
 * kernel in every set this CPU runs, on dim-dimensional random inputs
 * cycling through 8 vectors (all in L1/L2 cache).
 */
Datum
archer_vector_kernel_bench(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int32		dim = PG_GETARG_INT32(0);
	int32		calls = PG_GETARG_INT32(1);
	const ArcherVecKernels *sets[2];
	int			nsets = 0;
	KernelInputs in;
	pg_prng_state rng;
	int			s;
	int			id;

	avector_check_dims(dim);
	if (calls < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("calls must be at least 1")));
	InitMaterializedSRF(fcinfo, 0);

	sets[nsets++] = &archer_vec_kernels_scalar;
	if (archer_vec_kernels_simd() != NULL)
		sets[nsets++] = archer_vec_kernels_simd();

	pg_prng_seed(&rng, 42);
	alloc_inputs(&in, dim * 8 + 8);
	fill_random(&rng, &in, dim * 8 + 8);

	for (id = 0; id < K_COUNT; id++)
	{
		for (s = 0; s < nsets; s++)
		{
			instr_time	start;
			instr_time	elapsed;
			volatile double sink = 0.0;
			double		sum = 0.0;
			Datum		values[3];
			bool		nulls[3] = {0};
			int			i;

			INSTR_TIME_SET_CURRENT(start);
			for (i = 0; i < calls; i++)
			{
				KernelInputs at = inputs_at(&in, (i % 8) * dim);

				sum += kernel_run(sets[s], id, &at, dim);
				if ((i & 0xFFFF) == 0)
					CHECK_FOR_INTERRUPTS();
			}
			INSTR_TIME_SET_CURRENT(elapsed);
			INSTR_TIME_SUBTRACT(elapsed, start);
			sink = sum;
			(void) sink;

			values[0] = CStringGetTextDatum(kernel_names[id]);
			values[1] = CStringGetTextDatum(sets[s]->name);
			values[2] = Float8GetDatum(INSTR_TIME_GET_DOUBLE(elapsed) * 1e9 / calls);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	return (Datum) 0;
}
