/*-------------------------------------------------------------------------
 *
 * vector_kernels.c
 *	  Distance kernels (portable scalar and AVX2+FMA), their run-time
 *	  dispatch, and the SQ8 scalar quantizer built on them.
 *
 * Dispatch: archer_vec_kernels starts with resolver stubs; the first call of
 * any member checks CPUID (__builtin_cpu_supports, which also checks that
 * the OS saves YMM state) and copies the best set over it, so later calls
 * cost one indirect call.  The AVX2 functions carry
 * __attribute__((target("avx2,fma"))) and are only ever called after that
 * check, so the library runs on any x86-64 (and any other architecture,
 * where only the scalar set is compiled).  The environment variable
 * ARCHER_VECTOR_KERNEL=scalar, seen by the server at the first call,
 * forces the scalar set, to test it on machines that have AVX2.
 *
 * Summation order: the scalar kernels keep 8 partial sums and the AVX2
 * ones 32 (4 registers of 8 lanes, for FMA latency), with tails loaded
 * under a mask so that every length takes the same path.  Many partial
 * sums are also more accurate than one running float sum.
 *
 * Nothing here raises errors: inputs are validated by the callers (finite
 * values, 1..AVECTOR_MAX_DIM dimensions, which bounds the integer kernels'
 * sums below 2^31).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "vector.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ARCHER_HAVE_AVX2 1
#include <immintrin.h>
#define ARCHER_AVX2 __attribute__((target("avx2,fma")))
#endif

#define NACC 8					/* partial sums of the scalar kernels */

/*
 * Cosine distance from float sums.  Zero norms and overflowed sums are
 * rare (zero vectors, components beyond ~1e19 or below ~1e-23), so they
 * are settled by recomputing the sums in double rather than by slowing
 * down every call.
 */
float
archer_cosine_finish(const float *a, const float *b, int n,
					 float dot, float na, float nb)
{
	double		ddot = dot;
	double		dna = na;
	double		dnb = nb;
	double		sim;

	if (na == 0.0f || nb == 0.0f ||
		!isfinite(dot) || !isfinite(na) || !isfinite(nb))
	{
		int			i;

		ddot = dna = dnb = 0.0;
		for (i = 0; i < n; i++)
		{
			ddot += (double) a[i] * b[i];
			dna += (double) a[i] * a[i];
			dnb += (double) b[i] * b[i];
		}
		/* only non-finite inputs, outside the contract, get here */
		if (!isfinite(ddot) || !isfinite(dna) || !isfinite(dnb))
			return NAN;
		/* a zero vector has no direction: distance 1, as if orthogonal */
		if (dna == 0.0 || dnb == 0.0)
			return 1.0f;
	}

	sim = ddot / sqrt(dna * dnb);
	/* rounding can push |sim| slightly above 1 */
	if (sim > 1.0)
		sim = 1.0;
	else if (sim < -1.0)
		sim = -1.0;
	return (float) (1.0 - sim);
}

/* ---------------------------------------------------------------------
 * Scalar kernels
 * ---------------------------------------------------------------------
 */

static inline float
sum_partials(const float *s)
{
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

static float
l2sq_scalar(const float *a, const float *b, int n)
{
	float		s[NACC] = {0};
	int			i = 0;
	int			j;

	for (; i + NACC <= n; i += NACC)
	{
		for (j = 0; j < NACC; j++)
		{
			float		d = a[i + j] - b[i + j];

			s[j] += d * d;
		}
	}
	for (j = 0; i < n; i++, j++)
	{
		float		d = a[i] - b[i];

		s[j] += d * d;
	}
	return sum_partials(s);
}

static float
dot_scalar(const float *a, const float *b, int n)
{
	float		s[NACC] = {0};
	int			i = 0;
	int			j;

	for (; i + NACC <= n; i += NACC)
	{
		for (j = 0; j < NACC; j++)
			s[j] += a[i + j] * b[i + j];
	}
	for (j = 0; i < n; i++, j++)
		s[j] += a[i] * b[i];
	return sum_partials(s);
}

static float
cosine_scalar(const float *a, const float *b, int n)
{
	float		sd[NACC] = {0};
	float		sa[NACC] = {0};
	float		sb[NACC] = {0};
	int			i = 0;
	int			j;

	for (; i + NACC <= n; i += NACC)
	{
		for (j = 0; j < NACC; j++)
		{
			sd[j] += a[i + j] * b[i + j];
			sa[j] += a[i + j] * a[i + j];
			sb[j] += b[i + j] * b[i + j];
		}
	}
	for (j = 0; i < n; i++, j++)
	{
		sd[j] += a[i] * b[i];
		sa[j] += a[i] * a[i];
		sb[j] += b[i] * b[i];
	}
	return archer_cosine_finish(a, b, n, sum_partials(sd),
								sum_partials(sa), sum_partials(sb));
}

static float
sq8_l2sq_scalar(const float *q, const float *w, const uint8 *c, int n)
{
	float		s[NACC] = {0};
	int			i = 0;
	int			j;

	for (; i + NACC <= n; i += NACC)
	{
		for (j = 0; j < NACC; j++)
		{
			float		d = q[i + j] - w[i + j] * (float) c[i + j];

			s[j] += d * d;
		}
	}
	for (j = 0; i < n; i++, j++)
	{
		float		d = q[i] - w[i] * (float) c[i];

		s[j] += d * d;
	}
	return sum_partials(s);
}

static float
sq8_dot_scalar(const float *w, const uint8 *c, int n)
{
	float		s[NACC] = {0};
	int			i = 0;
	int			j;

	for (; i + NACC <= n; i += NACC)
	{
		for (j = 0; j < NACC; j++)
			s[j] += w[i + j] * (float) c[i + j];
	}
	for (j = 0; i < n; i++, j++)
		s[j] += w[i] * (float) c[i];
	return sum_partials(s);
}

static float
sq8_wl2sq_scalar(const float *w, const uint8 *a, const uint8 *b, int n)
{
	float		s[NACC] = {0};
	int			i = 0;
	int			j;

	for (; i + NACC <= n; i += NACC)
	{
		for (j = 0; j < NACC; j++)
		{
			float		d = (float) ((int) a[i + j] - (int) b[i + j]);

			s[j] += w[i + j] * d * d;
		}
	}
	for (j = 0; i < n; i++, j++)
	{
		float		d = (float) ((int) a[i] - (int) b[i]);

		s[j] += w[i] * d * d;
	}
	return sum_partials(s);
}

static float
sq8_wdot_scalar(const float *w, const uint8 *a, const uint8 *b, int n)
{
	float		s[NACC] = {0};
	int			i = 0;
	int			j;

	for (; i + NACC <= n; i += NACC)
	{
		for (j = 0; j < NACC; j++)
			s[j] += w[i + j] * (float) ((uint32) a[i + j] * b[i + j]);
	}
	for (j = 0; i < n; i++, j++)
		s[j] += w[i] * (float) ((uint32) a[i] * b[i]);
	return sum_partials(s);
}

static uint32
u8_l2sq_scalar(const uint8 *a, const uint8 *b, int n)
{
	uint32		s = 0;
	int			i;

	for (i = 0; i < n; i++)
	{
		int			d = (int) a[i] - (int) b[i];

		s += (uint32) (d * d);
	}
	return s;
}

static uint32
u8_dot_scalar(const uint8 *a, const uint8 *b, int n)
{
	uint32		s = 0;
	int			i;

	for (i = 0; i < n; i++)
		s += (uint32) a[i] * b[i];
	return s;
}

/* The fixed-point kernels (vector.h): sums of squares of q - ONE * c, or of q * c */
static pg_attribute_always_inline int64
fixed_sum_scalar(const int16 *q, const uint8 *c, int n, bool squares)
{
	int64		s = 0;

	for (int i = 0; i < n; i++)
	{
		int			d = (int) q[i] - ARCHER_SQ8_FIXED_ONE * (int) c[i];

		s += squares ? (int64) d * d : (int64) q[i] * c[i];
	}
	return s;
}

static uint64
sq8_fixed_l2sq_scalar(const int16 *q, const uint8 *c, int n)
{
	return (uint64) fixed_sum_scalar(q, c, n, true);
}

static int64
sq8_fixed_dot_scalar(const int16 *q, const uint8 *c, int n)
{
	return fixed_sum_scalar(q, c, n, false);
}

const ArcherVecKernels archer_vec_kernels_scalar = {
	"scalar",
	l2sq_scalar, dot_scalar, cosine_scalar,
	sq8_l2sq_scalar, sq8_dot_scalar,
	sq8_wl2sq_scalar, sq8_wdot_scalar,
	u8_l2sq_scalar, u8_dot_scalar,
	sq8_fixed_l2sq_scalar, sq8_fixed_dot_scalar
};

/* ---------------------------------------------------------------------
 * AVX2 + FMA kernels
 * ---------------------------------------------------------------------
 */
#ifdef ARCHER_HAVE_AVX2

/* 8 ones then 8 zeros: loading from entry 8 - r masks the first r lanes */
static const int32 avx2_tail_masks[16] = {
	-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0
};

ARCHER_AVX2 static inline __m256i
tail_mask(int r)
{
	return _mm256_loadu_si256((const __m256i *) (avx2_tail_masks + 8 - r));
}

ARCHER_AVX2 static inline float
hsum_ps(__m256 v)
{
	__m128		s = _mm_add_ps(_mm256_castps256_ps128(v),
							   _mm256_extractf128_ps(v, 1));

	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

ARCHER_AVX2 static inline uint32
hsum_epi32(__m256i v)
{
	__m128i		s = _mm_add_epi32(_mm256_castsi256_si128(v),
								  _mm256_extracti128_si256(v, 1));

	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
	return (uint32) _mm_cvtsi128_si32(s);
}

/* 8 codes as 8 floats */
ARCHER_AVX2 static inline __m256
load_codes(const uint8 *c)
{
	return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *) c)));
}

/* the last r < 8 codes, zero-padded, without reading past the end */
ARCHER_AVX2 static inline __m256
load_codes_tail(const uint8 *c, int r)
{
	uint8		tmp[8] = {0};

	memcpy(tmp, c, r);
	return load_codes(tmp);
}

ARCHER_AVX2 static float
l2sq_avx2(const float *a, const float *b, int n)
{
	__m256		s0 = _mm256_setzero_ps();
	__m256		s1 = _mm256_setzero_ps();
	__m256		s2 = _mm256_setzero_ps();
	__m256		s3 = _mm256_setzero_ps();
	int			i = 0;

	for (; i + 32 <= n; i += 32)
	{
		__m256		d0 = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
		__m256		d1 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8));
		__m256		d2 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16));
		__m256		d3 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24));

		s0 = _mm256_fmadd_ps(d0, d0, s0);
		s1 = _mm256_fmadd_ps(d1, d1, s1);
		s2 = _mm256_fmadd_ps(d2, d2, s2);
		s3 = _mm256_fmadd_ps(d3, d3, s3);
	}
	for (; i + 8 <= n; i += 8)
	{
		__m256		d = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));

		s0 = _mm256_fmadd_ps(d, d, s0);
	}
	if (i < n)
	{
		__m256i		m = tail_mask(n - i);
		__m256		d = _mm256_sub_ps(_mm256_maskload_ps(a + i, m),
									  _mm256_maskload_ps(b + i, m));

		s1 = _mm256_fmadd_ps(d, d, s1);
	}
	return hsum_ps(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

ARCHER_AVX2 static float
dot_avx2(const float *a, const float *b, int n)
{
	__m256		s0 = _mm256_setzero_ps();
	__m256		s1 = _mm256_setzero_ps();
	__m256		s2 = _mm256_setzero_ps();
	__m256		s3 = _mm256_setzero_ps();
	int			i = 0;

	for (; i + 32 <= n; i += 32)
	{
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
		s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
		s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
	}
	for (; i + 8 <= n; i += 8)
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
	if (i < n)
	{
		__m256i		m = tail_mask(n - i);

		s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m),
							 _mm256_maskload_ps(b + i, m), s1);
	}
	return hsum_ps(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

ARCHER_AVX2 static float
cosine_avx2(const float *a, const float *b, int n)
{
	__m256		d0 = _mm256_setzero_ps();
	__m256		d1 = _mm256_setzero_ps();
	__m256		na0 = _mm256_setzero_ps();
	__m256		na1 = _mm256_setzero_ps();
	__m256		nb0 = _mm256_setzero_ps();
	__m256		nb1 = _mm256_setzero_ps();
	int			i = 0;

	for (; i + 16 <= n; i += 16)
	{
		__m256		a0 = _mm256_loadu_ps(a + i);
		__m256		a1 = _mm256_loadu_ps(a + i + 8);
		__m256		b0 = _mm256_loadu_ps(b + i);
		__m256		b1 = _mm256_loadu_ps(b + i + 8);

		d0 = _mm256_fmadd_ps(a0, b0, d0);
		d1 = _mm256_fmadd_ps(a1, b1, d1);
		na0 = _mm256_fmadd_ps(a0, a0, na0);
		na1 = _mm256_fmadd_ps(a1, a1, na1);
		nb0 = _mm256_fmadd_ps(b0, b0, nb0);
		nb1 = _mm256_fmadd_ps(b1, b1, nb1);
	}
	for (; i < n; i += 8)
	{
		__m256		a0;
		__m256		b0;

		if (i + 8 <= n)
		{
			a0 = _mm256_loadu_ps(a + i);
			b0 = _mm256_loadu_ps(b + i);
		}
		else
		{
			__m256i		m = tail_mask(n - i);

			a0 = _mm256_maskload_ps(a + i, m);
			b0 = _mm256_maskload_ps(b + i, m);
		}
		d0 = _mm256_fmadd_ps(a0, b0, d0);
		na0 = _mm256_fmadd_ps(a0, a0, na0);
		nb0 = _mm256_fmadd_ps(b0, b0, nb0);
	}
	return archer_cosine_finish(a, b, n,
								hsum_ps(_mm256_add_ps(d0, d1)),
								hsum_ps(_mm256_add_ps(na0, na1)),
								hsum_ps(_mm256_add_ps(nb0, nb1)));
}

ARCHER_AVX2 static float
sq8_l2sq_avx2(const float *q, const float *w, const uint8 *c, int n)
{
	__m256		s0 = _mm256_setzero_ps();
	__m256		s1 = _mm256_setzero_ps();
	int			i = 0;

	for (; i + 16 <= n; i += 16)
	{
		/* q - w * c */
		__m256		d0 = _mm256_fnmadd_ps(_mm256_loadu_ps(w + i), load_codes(c + i),
										  _mm256_loadu_ps(q + i));
		__m256		d1 = _mm256_fnmadd_ps(_mm256_loadu_ps(w + i + 8), load_codes(c + i + 8),
										  _mm256_loadu_ps(q + i + 8));

		s0 = _mm256_fmadd_ps(d0, d0, s0);
		s1 = _mm256_fmadd_ps(d1, d1, s1);
	}
	for (; i < n; i += 8)
	{
		__m256		d;

		if (i + 8 <= n)
			d = _mm256_fnmadd_ps(_mm256_loadu_ps(w + i), load_codes(c + i),
								 _mm256_loadu_ps(q + i));
		else
		{
			__m256i		m = tail_mask(n - i);

			d = _mm256_fnmadd_ps(_mm256_maskload_ps(w + i, m),
								 load_codes_tail(c + i, n - i),
								 _mm256_maskload_ps(q + i, m));
		}
		s0 = _mm256_fmadd_ps(d, d, s0);
	}
	return hsum_ps(_mm256_add_ps(s0, s1));
}

ARCHER_AVX2 static float
sq8_dot_avx2(const float *w, const uint8 *c, int n)
{
	__m256		s0 = _mm256_setzero_ps();
	__m256		s1 = _mm256_setzero_ps();
	int			i = 0;

	for (; i + 16 <= n; i += 16)
	{
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), load_codes(c + i), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), load_codes(c + i + 8), s1);
	}
	for (; i < n; i += 8)
	{
		if (i + 8 <= n)
			s0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), load_codes(c + i), s0);
		else
			s0 = _mm256_fmadd_ps(_mm256_maskload_ps(w + i, tail_mask(n - i)),
								 load_codes_tail(c + i, n - i), s0);
	}
	return hsum_ps(_mm256_add_ps(s0, s1));
}

/* 8 code differences a - b as floats */
ARCHER_AVX2 static inline __m256
code_diff(const uint8 *a, const uint8 *b)
{
	__m256i		a32 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *) a));
	__m256i		b32 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *) b));

	return _mm256_cvtepi32_ps(_mm256_sub_epi32(a32, b32));
}

/* 8 code products a * b as floats: exact in 16 bits, 255 * 255 < 65536 */
ARCHER_AVX2 static inline __m256
code_product(const uint8 *a, const uint8 *b)
{
	__m128i		a16 = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *) a));
	__m128i		b16 = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *) b));

	return _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(_mm_mullo_epi16(a16, b16)));
}

ARCHER_AVX2 static float
sq8_wl2sq_avx2(const float *w, const uint8 *a, const uint8 *b, int n)
{
	__m256		s0 = _mm256_setzero_ps();
	__m256		s1 = _mm256_setzero_ps();
	int			i = 0;

	for (; i + 16 <= n; i += 16)
	{
		__m256		d0 = code_diff(a + i, b + i);
		__m256		d1 = code_diff(a + i + 8, b + i + 8);

		s0 = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(w + i), d0), d0, s0);
		s1 = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(w + i + 8), d1), d1, s1);
	}
	for (; i < n; i += 8)
	{
		__m256		wv;
		__m256		d;

		if (i + 8 <= n)
		{
			wv = _mm256_loadu_ps(w + i);
			d = code_diff(a + i, b + i);
		}
		else
		{
			uint8		ta[8] = {0};
			uint8		tb[8] = {0};

			memcpy(ta, a + i, n - i);
			memcpy(tb, b + i, n - i);
			wv = _mm256_maskload_ps(w + i, tail_mask(n - i));
			d = code_diff(ta, tb);
		}
		s0 = _mm256_fmadd_ps(_mm256_mul_ps(wv, d), d, s0);
	}
	return hsum_ps(_mm256_add_ps(s0, s1));
}

ARCHER_AVX2 static float
sq8_wdot_avx2(const float *w, const uint8 *a, const uint8 *b, int n)
{
	__m256		s0 = _mm256_setzero_ps();
	__m256		s1 = _mm256_setzero_ps();
	int			i = 0;

	for (; i + 16 <= n; i += 16)
	{
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), code_product(a + i, b + i), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), code_product(a + i + 8, b + i + 8), s1);
	}
	for (; i < n; i += 8)
	{
		if (i + 8 <= n)
			s0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), code_product(a + i, b + i), s0);
		else
		{
			uint8		ta[8] = {0};
			uint8		tb[8] = {0};

			memcpy(ta, a + i, n - i);
			memcpy(tb, b + i, n - i);
			s0 = _mm256_fmadd_ps(_mm256_maskload_ps(w + i, tail_mask(n - i)),
								 code_product(ta, tb), s0);
		}
	}
	return hsum_ps(_mm256_add_ps(s0, s1));
}

/*
 * Integer kernels: widen 16 codes to int16 and multiply-add pairs into
 * int32 lanes (each pair adds at most 2 * 255^2).  The total is at most
 * AVECTOR_MAX_DIM * 255^2 < 2^31, so no lane can overflow.
 */
ARCHER_AVX2 static inline __m256i
load16_epi16(const uint8 *c)
{
	return _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *) c));
}

ARCHER_AVX2 static uint32
u8_l2sq_avx2(const uint8 *a, const uint8 *b, int n)
{
	__m256i		s0 = _mm256_setzero_si256();
	__m256i		s1 = _mm256_setzero_si256();
	uint32		tail = 0;
	int			i = 0;

	for (; i + 32 <= n; i += 32)
	{
		__m256i		d0 = _mm256_sub_epi16(load16_epi16(a + i), load16_epi16(b + i));
		__m256i		d1 = _mm256_sub_epi16(load16_epi16(a + i + 16), load16_epi16(b + i + 16));

		s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(d0, d0));
		s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(d1, d1));
	}
	for (; i + 16 <= n; i += 16)
	{
		__m256i		d = _mm256_sub_epi16(load16_epi16(a + i), load16_epi16(b + i));

		s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(d, d));
	}
	/* integer sums are exact in any order: finish the tail plainly */
	for (; i < n; i++)
	{
		int			d = (int) a[i] - (int) b[i];

		tail += (uint32) (d * d);
	}
	return hsum_epi32(_mm256_add_epi32(s0, s1)) + tail;
}

ARCHER_AVX2 static uint32
u8_dot_avx2(const uint8 *a, const uint8 *b, int n)
{
	__m256i		s0 = _mm256_setzero_si256();
	__m256i		s1 = _mm256_setzero_si256();
	uint32		tail = 0;
	int			i = 0;

	for (; i + 32 <= n; i += 32)
	{
		s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(load16_epi16(a + i), load16_epi16(b + i)));
		s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(load16_epi16(a + i + 16),
													load16_epi16(b + i + 16)));
	}
	for (; i + 16 <= n; i += 16)
		s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(load16_epi16(a + i), load16_epi16(b + i)));
	for (; i < n; i++)
		tail += (uint32) a[i] * b[i];
	return hsum_epi32(_mm256_add_epi32(s0, s1)) + tail;
}

/* The sum of 8 int32 lanes in 64 bits */
ARCHER_AVX2 static inline int64
hsum_epi32_wide(__m256i v)
{
	__m256i		s = _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(v)),
									 _mm256_cvtepi32_epi64(_mm256_extracti128_si256(v, 1)));
	__m128i		h = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));

	return (int64) _mm_cvtsi128_si64(h) + (int64) _mm_extract_epi64(h, 1);
}

/*
 * 16 terms of a fixed-point kernel as 8 int32 pair sums: the squares of
 * ONE * c - q (the negated difference squares the same and lets the
 * subtraction read q from memory), or the products q * c
 */
ARCHER_AVX2 static pg_attribute_always_inline __m256i
fixed_terms16(const int16 *q, const uint8 *c, bool squares)
{
	__m256i		q16 = _mm256_loadu_si256((const __m256i *) q);

	if (squares)
	{
		__m256i		d = _mm256_sub_epi16(_mm256_slli_epi16(load16_epi16(c), ARCHER_SQ8_FIXED_SHIFT),
										 q16);

		return _mm256_madd_epi16(d, d);
	}
	return _mm256_madd_epi16(load16_epi16(c), q16);
}

/*
 * The fixed-point kernels (vector.h): blocks of ARCHER_SQ8_FIXED_BLOCK
 * dimensions, each summed in int32 lanes, then in 64 bits.  Inlined with
 * a constant squares, each caller gets a loop of its own.
 */
ARCHER_AVX2 static pg_attribute_always_inline int64
fixed_sum(const int16 *q, const uint8 *c, int n, bool squares)
{
	int64		total = 0;

	while (n >= 16)
	{
		int			block = Min(n, ARCHER_SQ8_FIXED_BLOCK);
		__m256i		s0 = _mm256_setzero_si256();
		__m256i		s1 = _mm256_setzero_si256();

		n -= block & ~15;
		for (; block >= 32; block -= 32, q += 32, c += 32)
		{
			s0 = _mm256_add_epi32(s0, fixed_terms16(q, c, squares));
			s1 = _mm256_add_epi32(s1, fixed_terms16(q + 16, c + 16, squares));
		}
		if (block >= 16)
		{
			s0 = _mm256_add_epi32(s0, fixed_terms16(q, c, squares));
			q += 16;
			c += 16;
		}
		total += hsum_epi32_wide(s0) + hsum_epi32_wide(s1);
	}
	return total + fixed_sum_scalar(q, c, n, squares);
}

ARCHER_AVX2 static uint64
sq8_fixed_l2sq_avx2(const int16 *q, const uint8 *c, int n)
{
	return (uint64) fixed_sum(q, c, n, true);
}

ARCHER_AVX2 static int64
sq8_fixed_dot_avx2(const int16 *q, const uint8 *c, int n)
{
	return fixed_sum(q, c, n, false);
}

static const ArcherVecKernels archer_vec_kernels_avx2 = {
	"avx2+fma",
	l2sq_avx2, dot_avx2, cosine_avx2,
	sq8_l2sq_avx2, sq8_dot_avx2,
	sq8_wl2sq_avx2, sq8_wdot_avx2,
	u8_l2sq_avx2, u8_dot_avx2,
	sq8_fixed_l2sq_avx2, sq8_fixed_dot_avx2
};

#endif							/* ARCHER_HAVE_AVX2 */

/* ---------------------------------------------------------------------
 * Dispatch
 * ---------------------------------------------------------------------
 */

const ArcherVecKernels *
archer_vec_kernels_simd(void)
{
#ifdef ARCHER_HAVE_AVX2
	static int	supported = -1;

	if (supported < 0)
	{
		__builtin_cpu_init();
		supported = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	}
	if (supported)
		return &archer_vec_kernels_avx2;
#endif
	return NULL;
}

static bool archer_vec_resolved = false;

static void
archer_vec_resolve(void)
{
	const ArcherVecKernels *simd = archer_vec_kernels_simd();
	const char *force = getenv("ARCHER_VECTOR_KERNEL");

	if (simd != NULL && !(force != NULL && strcmp(force, "scalar") == 0))
		archer_vec_kernels = *simd;
	else
		archer_vec_kernels = archer_vec_kernels_scalar;
	archer_vec_resolved = true;
}

const char *
archer_vec_kernel_name(void)
{
	if (!archer_vec_resolved)
		archer_vec_resolve();
	return archer_vec_kernels.name;
}

/* First-call stubs: resolve, then forward to the chosen kernel */
static float
l2sq_stub(const float *a, const float *b, int n)
{
	archer_vec_resolve();
	return archer_vec_kernels.l2sq(a, b, n);
}

static float
dot_stub(const float *a, const float *b, int n)
{
	archer_vec_resolve();
	return archer_vec_kernels.dot(a, b, n);
}

static float
cosine_stub(const float *a, const float *b, int n)
{
	archer_vec_resolve();
	return archer_vec_kernels.cosine(a, b, n);
}

static float
sq8_l2sq_stub(const float *q, const float *w, const uint8 *c, int n)
{
	archer_vec_resolve();
	return archer_vec_kernels.sq8_l2sq(q, w, c, n);
}

static float
sq8_dot_stub(const float *w, const uint8 *c, int n)
{
	archer_vec_resolve();
	return archer_vec_kernels.sq8_dot(w, c, n);
}

static float
sq8_wl2sq_stub(const float *w, const uint8 *a, const uint8 *b, int n)
{
	archer_vec_resolve();
	return archer_vec_kernels.sq8_wl2sq(w, a, b, n);
}

static float
sq8_wdot_stub(const float *w, const uint8 *a, const uint8 *b, int n)
{
	archer_vec_resolve();
	return archer_vec_kernels.sq8_wdot(w, a, b, n);
}

static uint32
u8_l2sq_stub(const uint8 *a, const uint8 *b, int n)
{
	archer_vec_resolve();
	return archer_vec_kernels.u8_l2sq(a, b, n);
}

static uint32
u8_dot_stub(const uint8 *a, const uint8 *b, int n)
{
	archer_vec_resolve();
	return archer_vec_kernels.u8_dot(a, b, n);
}

static uint64
sq8_fixed_l2sq_stub(const int16 *q, const uint8 *c, int n)
{
	archer_vec_resolve();
	return archer_vec_kernels.sq8_fixed_l2sq(q, c, n);
}

static int64
sq8_fixed_dot_stub(const int16 *q, const uint8 *c, int n)
{
	archer_vec_resolve();
	return archer_vec_kernels.sq8_fixed_dot(q, c, n);
}

ArcherVecKernels archer_vec_kernels = {
	"unresolved",
	l2sq_stub, dot_stub, cosine_stub,
	sq8_l2sq_stub, sq8_dot_stub,
	sq8_wl2sq_stub, sq8_wdot_stub,
	u8_l2sq_stub, u8_dot_stub,
	sq8_fixed_l2sq_stub, sq8_fixed_dot_stub
};

/* ---------------------------------------------------------------------
 * Helpers on float vectors
 * ---------------------------------------------------------------------
 */

/* Scales x to unit length; returns the original norm (0: x left as is) */
float
archer_vec_normalize(float *x, int n)
{
	double		norm2 = 0.0;
	double		norm;
	int			i;

	for (i = 0; i < n; i++)
		norm2 += (double) x[i] * x[i];
	norm = sqrt(norm2);
	if (norm > 0.0)
	{
		for (i = 0; i < n; i++)
			x[i] = (float) (x[i] / norm);
	}
	return (float) norm;
}

/* ---------------------------------------------------------------------
 * SQ8 quantizer
 * ---------------------------------------------------------------------
 */

void
archer_sq8_range_init(float *min, float *max, int dim)
{
	int			i;

	for (i = 0; i < dim; i++)
	{
		min[i] = FLT_MAX;
		max[i] = -FLT_MAX;
	}
}

void
archer_sq8_range_add(float *min, float *max, const float *x, int dim)
{
	int			i;

	for (i = 0; i < dim; i++)
	{
		if (x[i] < min[i])
			min[i] = x[i];
		if (x[i] > max[i])
			max[i] = x[i];
	}
}

/*
 * Builds a quantizer from per-dimension ranges, allocated in the current
 * memory context.  A dimension never seen (min > max) gets [-1, 1]; a
 * constant one gets a tiny range so that its step stays positive.
 */
void
archer_sq8_init(ArcherSQ8 *sq, int dim, const float *min, const float *max,
				bool uniform_step)
{
	double		widest = 0.0;
	double		lo_norm2 = 0.0;
	int			i;

	sq->dim = dim;
	sq->uniform_step = uniform_step;
	sq->lo = palloc(sizeof(float) * dim);
	sq->step = palloc(sizeof(float) * dim);
	sq->step2 = palloc(sizeof(float) * dim);
	sq->lo_step = palloc(sizeof(float) * dim);

	for (i = 0; i < dim; i++)
	{
		double		lo = min[i];
		double		hi = max[i];
		double		range;

		if (lo > hi)
		{
			lo = -1.0;
			hi = 1.0;
		}
		/* double: hi - lo may exceed FLT_MAX */
		range = hi - lo;
		if (range <= 0.0)
			range = Max(fabs(lo) * 1e-6, 1e-30) * ARCHER_SQ8_LEVELS;
		sq->lo[i] = (float) lo;
		sq->step[i] = (float) (range / ARCHER_SQ8_LEVELS);
		widest = Max(widest, range);
	}
	for (i = 0; i < dim; i++)
	{
		if (uniform_step)
			sq->step[i] = (float) (widest / ARCHER_SQ8_LEVELS);
		sq->step2[i] = sq->step[i] * sq->step[i];
		sq->lo_step[i] = sq->lo[i] * sq->step[i];
		lo_norm2 += (double) sq->lo[i] * sq->lo[i];
	}
	sq->lo_norm2 = (float) lo_norm2;
}

void
archer_sq8_encode(const ArcherSQ8 *sq, const float *x, uint8 *code)
{
	int			i;

	for (i = 0; i < sq->dim; i++)
	{
		double		c = rint(((double) x[i] - sq->lo[i]) / sq->step[i]);

		if (c < 0.0)
			c = 0.0;
		else if (c > ARCHER_SQ8_LEVELS)
			c = ARCHER_SQ8_LEVELS;
		code[i] = (uint8) c;
	}
}

void
archer_sq8_decode(const ArcherSQ8 *sq, const uint8 *code, float *x)
{
	int			i;

	for (i = 0; i < sq->dim; i++)
		x[i] = sq->lo[i] + sq->step[i] * (float) code[i];
}

/* sum lo * step * code: the code's own term of the symmetric inner product */
float
archer_sq8_bias(const ArcherSQ8 *sq, const uint8 *code)
{
	return archer_vec_kernels.sq8_dot(sq->lo_step, code, sq->dim);
}

/*
 * The query in fixed point for uniform steps (vector.h): q~ = lo + step *
 * q_fixed / ONE, rounded to nearest, and how far q~ lies from q.  Left NULL
 * for per-dimension steps and for a component beyond the fixed range.
 */
static void
sq8_query_fixed_init(ArcherSQ8Query *pq, const ArcherSQ8 *sq, const float *q)
{
	const int	lowest = -ARCHER_SQ8_FIXED_REACH * ARCHER_SQ8_FIXED_ONE;
	const int	highest = (ARCHER_SQ8_LEVELS + ARCHER_SQ8_FIXED_REACH) * ARCHER_SQ8_FIXED_ONE;
	double		unit;
	double		per_unit;
	double		error2 = 0.0;
	int16	   *q_fixed;

	pq->q_fixed = NULL;
	pq->fixed_scale = 0.0f;
	pq->fixed_error = 0.0f;
	if (!sq->uniform_step)
		return;
	unit = (double) sq->step[0] / ARCHER_SQ8_FIXED_ONE;
	per_unit = 1.0 / unit;
	q_fixed = palloc(sizeof(int16) * sq->dim);
	for (int i = 0; i < sq->dim; i++)
	{
		double		offset = (double) q[i] - sq->lo[i];
		double		units = offset * per_unit;
		int			rounded;
		double		error;

		if (!(units >= lowest && units <= highest))
		{
			pfree(q_fixed);
			return;
		}
		/* to nearest: truncation of a positive number is its floor */
		rounded = (int) (units - lowest + 0.5) + lowest;
		q_fixed[i] = (int16) rounded;
		error = rounded * unit - offset;
		error2 += error * error;
	}
	pq->q_fixed = q_fixed;
	pq->fixed_scale = (float) (unit * unit);
	/* rounded up: callers widen distance bounds by it */
	pq->fixed_error = error2 > 0 ? nextafterf((float) sqrt(error2), FLT_MAX) : 0.0f;
}

/*
 * The query in fixed point for inner products with uniform steps
 * (vector.h): q scaled so that its largest component is DOT_ONE, rounded
 * to nearest, and how far the vector it stands for lies from q.
 */
static void
sq8_query_dot_init(ArcherSQ8Query *pq, const ArcherSQ8 *sq, const float *q)
{
	double		largest = 0.0;
	double		scale;
	double		error2 = 0.0;

	pq->q_dot = NULL;
	pq->dot_scale = 0.0f;
	pq->dot_error = 0.0f;
	if (!sq->uniform_step)
		return;
	for (int i = 0; i < sq->dim; i++)
		largest = Max(largest, fabs((double) q[i]));
	scale = largest > 0 ? ARCHER_SQ8_DOT_ONE / largest : 1.0;
	pq->q_dot = palloc(sizeof(int16) * sq->dim);
	for (int i = 0; i < sq->dim; i++)
	{
		/* to nearest: truncation of a positive number is its floor */
		int			rounded = (int) ((double) q[i] * scale + ARCHER_SQ8_DOT_ONE + 0.5) -
			ARCHER_SQ8_DOT_ONE;
		double		error = rounded / scale - q[i];

		pq->q_dot[i] = (int16) rounded;
		error2 += error * error;
	}
	pq->dot_scale = (float) (sq->step[0] / scale);
	/* rounded up: callers widen distance bounds by it */
	pq->dot_error = error2 > 0 ? nextafterf((float) sqrt(error2), FLT_MAX) : 0.0f;
}

/*
 * Prepares a float query for asymmetric distances, allocated in the
 * current memory context (each only if asked for):
 *	|q - x^|^2 = sum ((q - lo) - step * c)^2 (or in fixed point, see vector.h)
 *	q . x^	   = sum q * lo + sum (q * step) * c (likewise)
 */
void
archer_sq8_query_init(ArcherSQ8Query *pq, const ArcherSQ8 *sq, const float *q,
					  bool l2, bool inner_product)
{
	pq->sq = sq;
	pq->q_lo = NULL;
	pq->q_step = NULL;
	pq->q_dot_lo = 0.0f;
	pq->q_fixed = NULL;
	pq->fixed_scale = 0.0f;
	pq->fixed_error = 0.0f;
	if (l2)
		sq8_query_fixed_init(pq, sq, q);
	if (l2 && pq->q_fixed == NULL)
	{
		pq->q_lo = palloc(sizeof(float) * sq->dim);
		for (int i = 0; i < sq->dim; i++)
			pq->q_lo[i] = q[i] - sq->lo[i];
	}
	pq->q_dot = NULL;
	pq->dot_scale = 0.0f;
	pq->dot_error = 0.0f;
	if (inner_product)
	{
		double		q_dot_lo = 0.0;

		sq8_query_dot_init(pq, sq, q);
		if (pq->q_dot == NULL)
		{
			pq->q_step = palloc(sizeof(float) * sq->dim);
			for (int i = 0; i < sq->dim; i++)
				pq->q_step[i] = q[i] * sq->step[i];
		}
		for (int i = 0; i < sq->dim; i++)
			q_dot_lo += (double) q[i] * sq->lo[i];
		pq->q_dot_lo = (float) q_dot_lo;
	}
}

/* |a^ - b^|^2 = sum step^2 (a - b)^2: in integers if the step is uniform */
float
archer_sq8_l2sq(const ArcherSQ8 *sq, const uint8 *a, const uint8 *b)
{
	if (sq->uniform_step)
		return sq->step2[0] * (float) archer_vec_kernels.u8_l2sq(a, b, sq->dim);
	return archer_vec_kernels.sq8_wl2sq(sq->step2, a, b, sq->dim);
}

/*
 * a^ . b^ = sum (lo + step a)(lo + step b)
 *		   = sum lo^2 + bias(a) + bias(b) + sum step^2 a b
 */
float
archer_sq8_ip(const ArcherSQ8 *sq, const uint8 *a, float bias_a,
			  const uint8 *b, float bias_b)
{
	float		ab;

	if (sq->uniform_step)
		ab = sq->step2[0] * (float) archer_vec_kernels.u8_dot(a, b, sq->dim);
	else
		ab = archer_vec_kernels.sq8_wdot(sq->step2, a, b, sq->dim);
	return (sq->lo_norm2 + (bias_a + bias_b)) + ab;
}
