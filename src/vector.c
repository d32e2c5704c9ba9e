/*-------------------------------------------------------------------------
 *
 * vector.c
 *	  The SQL surface of vectors: the avector type (text and binary I/O,
 *	  typmod, casts, comparison and hashing), the distance functions and
 *	  operators on avector and on real[], and the kernel diagnostics
 *	  (active kernel, self-test, benchmark).
 *
 * Text format is pgvector's: '[1,2,3]', whitespace allowed around numbers
 * and brackets, nothing else; output uses the shortest decimal that reads
 * back to the same float.
 *
 * real[] gets the same distance functions and operators as avector because
 * the archer_vector index can index real[] columns directly.  A real[]
 * argument must be 1-D without NULLs; it is read in place (no copy).  Its
 * values are not scanned for NaN and infinities up front: any such value
 * makes the kernel's result non-finite, and only then are the inputs
 * scanned, to raise the error, or, if they are all finite (the sums
 * overflowed float), the distance is recomputed in double.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "access/detoast.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "common/pg_prng.h"
#include "common/shortest_dec.h"
#include "funcapi.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "vector.h"

PG_FUNCTION_INFO_V1(avector_in);
PG_FUNCTION_INFO_V1(avector_out);
PG_FUNCTION_INFO_V1(avector_typmod_in);
PG_FUNCTION_INFO_V1(avector_typmod_out);
PG_FUNCTION_INFO_V1(avector_recv);
PG_FUNCTION_INFO_V1(avector_send);
PG_FUNCTION_INFO_V1(avector_coerce);
PG_FUNCTION_INFO_V1(array_to_avector);
PG_FUNCTION_INFO_V1(avector_to_float4);
PG_FUNCTION_INFO_V1(avector_dims);
PG_FUNCTION_INFO_V1(avector_l2_distance);
PG_FUNCTION_INFO_V1(avector_l2_squared_distance);
PG_FUNCTION_INFO_V1(avector_inner_product);
PG_FUNCTION_INFO_V1(avector_negative_inner_product);
PG_FUNCTION_INFO_V1(avector_cosine_distance);
PG_FUNCTION_INFO_V1(avector_norm);
PG_FUNCTION_INFO_V1(float4arr_l2_distance);
PG_FUNCTION_INFO_V1(float4arr_l2_squared_distance);
PG_FUNCTION_INFO_V1(float4arr_inner_product);
PG_FUNCTION_INFO_V1(float4arr_negative_inner_product);
PG_FUNCTION_INFO_V1(float4arr_cosine_distance);
PG_FUNCTION_INFO_V1(float4arr_norm);
PG_FUNCTION_INFO_V1(avector_lt);
PG_FUNCTION_INFO_V1(avector_le);
PG_FUNCTION_INFO_V1(avector_eq);
PG_FUNCTION_INFO_V1(avector_ne);
PG_FUNCTION_INFO_V1(avector_ge);
PG_FUNCTION_INFO_V1(avector_gt);
PG_FUNCTION_INFO_V1(avector_cmp);
PG_FUNCTION_INFO_V1(avector_hash);
PG_FUNCTION_INFO_V1(avector_hash_extended);
PG_FUNCTION_INFO_V1(archer_vector_kernel);
PG_FUNCTION_INFO_V1(archer_vector_kernel_selftest);
PG_FUNCTION_INFO_V1(archer_vector_kernel_bench);

/* archer.vector_kernel: read-only, shows archer_vec_kernel_name() */
static char *archer_vector_kernel_setting = NULL;

void
archer_vector_init(void)
{
	DefineCustomStringVariable("archer.vector_kernel",
							   "Shows the vector distance kernels in use (avx2+fma or scalar).",
							   "Chosen from the CPU when the library loads; ARCHER_VECTOR_KERNEL=scalar "
							   "in the server's environment forces the scalar kernels.",
							   &archer_vector_kernel_setting,
							   archer_vec_kernel_name(),
							   PGC_INTERNAL,
							   GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_FILE,
							   NULL, NULL, NULL);
}

/* ---------------------------------------------------------------------
 * Checks shared by every way a vector comes in
 * ---------------------------------------------------------------------
 */

static void
check_dims(int dim)
{
	if (dim < 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("vector must have at least 1 dimension")));
	if (dim > AVECTOR_MAX_DIM)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("vector cannot have more than %d dimensions", AVECTOR_MAX_DIM)));
}

static void
check_typmod(int dim, int32 typmod)
{
	if (typmod != -1 && dim != typmod)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("expected %d dimensions, not %d", typmod, dim)));
}

static inline void
check_value(float v)
{
	if (unlikely(isnan(v)))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("NaN not allowed in vector")));
	if (unlikely(isinf(v)))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("infinite value not allowed in vector")));
}

void
archer_vector_check_finite(const float *x, int dim)
{
	int			i;

	for (i = 0; i < dim; i++)
		check_value(x[i]);
}

static void
check_same_dims(int a, int b)
{
	if (a != b)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("different vector dimensions %d and %d", a, b)));
}

AVector *
avector_new(int dim)
{
	AVector    *v = palloc0(AVECTOR_SIZE(dim));

	SET_VARSIZE(v, AVECTOR_SIZE(dim));
	v->dim = dim;
	return v;
}

/*
 * The floats of a real[] used as a vector, in place: 1-D, no NULLs,
 * 1..AVECTOR_MAX_DIM elements.  Values are not checked for NaN/infinity
 * (archer_vector_check_finite does that).
 */
const float *
archer_float4_array_values(ArrayType *array, int *dim)
{
	if (ARR_ELEMTYPE(array) != FLOAT4OID)
		elog(ERROR, "expected a real[] array, not %s",
			 format_type_be(ARR_ELEMTYPE(array)));
	if (ARR_NDIM(array) == 0)
		check_dims(0);
	if (ARR_NDIM(array) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("array must be 1-D")));
	if (array_contains_nulls(array))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("array must not contain nulls")));
	*dim = ARR_DIMS(array)[0];
	check_dims(*dim);
	return (const float *) ARR_DATA_PTR(array);
}

/* ---------------------------------------------------------------------
 * Text I/O
 * ---------------------------------------------------------------------
 */

static inline bool
vector_isspace(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static inline char *
skip_spaces(char *p)
{
	while (vector_isspace(*p))
		p++;
	return p;
}

/* Parses one element at *pt, which must start a number */
static float
parse_element(char **pt, const char *str, int element)
{
	char	   *end;
	float		v;

	errno = 0;
	v = strtof(*pt, &end);
	if (end == *pt)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type avector: \"%s\"", str),
				 errdetail("Element %d is not a number.", element)));
	/* overflow, or underflow to zero (denormals are fine), as float4in */
	if (errno == ERANGE && (v == 0.0f || isinf(v)))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("\"%s\" is out of range for type avector",
						pnstrdup(*pt, end - *pt))));
	check_value(v);
	*pt = end;
	return v;
}

Datum
avector_in(PG_FUNCTION_ARGS)
{
	char	   *str = PG_GETARG_CSTRING(0);
	int32		typmod = PG_GETARG_INT32(2);
	char	   *pt = skip_spaces(str);
	float	   *x;
	int			capacity = 1;
	int			dim = 0;
	AVector    *result;
	const char *c;

	if (*pt != '[')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type avector: \"%s\"", str),
				 errdetail("Vector contents must start with \"[\".")));
	pt = skip_spaces(pt + 1);
	if (*pt == ']')
		check_dims(0);

	/* commas + 1 bound the element count */
	for (c = pt; *c != '\0'; c++)
		capacity += (*c == ',');
	x = palloc(sizeof(float) * Min(capacity, AVECTOR_MAX_DIM));

	for (;;)
	{
		if (dim == AVECTOR_MAX_DIM)
			check_dims(dim + 1);
		x[dim] = parse_element(&pt, str, dim + 1);
		dim++;
		pt = skip_spaces(pt);
		if (*pt == ',')
			pt = skip_spaces(pt + 1);
		else if (*pt == ']')
			break;
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid input syntax for type avector: \"%s\"", str),
					 errdetail("Expected \",\" or \"]\" after element %d.", dim)));
	}
	pt = skip_spaces(pt + 1);
	if (*pt != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type avector: \"%s\"", str),
				 errdetail("Junk after closing \"]\".")));
	check_typmod(dim, typmod);

	result = avector_new(dim);
	memcpy(result->x, x, sizeof(float) * dim);
	pfree(x);
	PG_RETURN_AVECTOR_P(result);
}

Datum
avector_out(PG_FUNCTION_ARGS)
{
	AVector    *v = PG_GETARG_AVECTOR_P(0);
	/* FLOAT_SHORTEST_DECIMAL_LEN counts a terminator: room for a comma */
	char	   *buf = palloc(v->dim * FLOAT_SHORTEST_DECIMAL_LEN + 3);
	char	   *p = buf;
	int			i;

	*p++ = '[';
	for (i = 0; i < v->dim; i++)
	{
		if (i > 0)
			*p++ = ',';
		p += float_to_shortest_decimal_bufn(v->x[i], p);
	}
	*p++ = ']';
	*p = '\0';
	PG_FREE_IF_COPY(v, 0);
	PG_RETURN_CSTRING(buf);
}

Datum
avector_typmod_in(PG_FUNCTION_ARGS)
{
	ArrayType  *ta = PG_GETARG_ARRAYTYPE_P(0);
	int32	   *tl;
	int			n;

	tl = ArrayGetIntegerTypmods(ta, &n);
	if (n != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid type modifier"),
				 errdetail("avector takes one modifier: the number of dimensions.")));
	if (*tl < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("dimensions for type avector must be at least 1")));
	if (*tl > AVECTOR_MAX_DIM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("dimensions for type avector cannot exceed %d", AVECTOR_MAX_DIM)));
	PG_RETURN_INT32(*tl);
}

Datum
avector_typmod_out(PG_FUNCTION_ARGS)
{
	int32		typmod = PG_GETARG_INT32(0);

	PG_RETURN_CSTRING(typmod >= 0 ? psprintf("(%d)", typmod) : pstrdup(""));
}

/* ---------------------------------------------------------------------
 * Binary I/O: int16 dim, int16 unused (0), dim float4 in network order
 * ---------------------------------------------------------------------
 */

Datum
avector_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	int32		typmod = PG_GETARG_INT32(2);
	int			dim = (int16) pq_getmsgint(buf, sizeof(int16));
	int			unused = (int16) pq_getmsgint(buf, sizeof(int16));
	AVector    *result;
	int			i;

	check_dims(dim);
	check_typmod(dim, typmod);
	if (unused != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("expected unused to be 0, not %d", unused)));

	result = avector_new(dim);
	for (i = 0; i < dim; i++)
	{
		result->x[i] = pq_getmsgfloat4(buf);
		check_value(result->x[i]);
	}
	PG_RETURN_AVECTOR_P(result);
}

Datum
avector_send(PG_FUNCTION_ARGS)
{
	AVector    *v = PG_GETARG_AVECTOR_P(0);
	StringInfoData buf;
	int			i;

	pq_begintypsend(&buf);
	pq_sendint16(&buf, v->dim);
	pq_sendint16(&buf, 0);
	for (i = 0; i < v->dim; i++)
		pq_sendfloat4(&buf, v->x[i]);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* ---------------------------------------------------------------------
 * Casts
 * ---------------------------------------------------------------------
 */

/* avector -> avector(n): the length coercion of typmods */
Datum
avector_coerce(PG_FUNCTION_ARGS)
{
	AVector    *v = PG_GETARG_AVECTOR_P(0);

	check_typmod(v->dim, PG_GETARG_INT32(1));
	PG_RETURN_AVECTOR_P(v);
}

/* One array element as a float, with float4's range rules */
static float
element_to_float(Datum d, Oid elemtype)
{
	double		v;
	float		f;

	switch (elemtype)
	{
		case FLOAT4OID:
			return DatumGetFloat4(d);
		case INT4OID:
			return (float) DatumGetInt32(d);
		case NUMERICOID:
			return DatumGetFloat4(DirectFunctionCall1(numeric_float4, d));
		case FLOAT8OID:
			v = DatumGetFloat8(d);
			f = (float) v;
			/* like float8 -> float4: finite values must fit, zero only from zero */
			if ((isinf(f) && !isinf(v)) || (f == 0.0f && v != 0.0))
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("value %g is out of range for type avector", v)));
			return f;
		default:
			elog(ERROR, "unsupported array element type %s for avector",
				 format_type_be(elemtype));
	}
	return 0.0f;				/* keep compiler quiet */
}

/* real[], double precision[], numeric[], integer[] -> avector */
Datum
array_to_avector(PG_FUNCTION_ARGS)
{
	ArrayType  *array = PG_GETARG_ARRAYTYPE_P(0);
	int32		typmod = PG_GETARG_INT32(1);
	Oid			elemtype = ARR_ELEMTYPE(array);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	AVector    *result;
	int			i;

	if (ARR_NDIM(array) == 0)
		check_dims(0);
	if (ARR_NDIM(array) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("array must be 1-D")));

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(array, elemtype, typlen, typbyval, typalign,
					  &elems, &nulls, &n);
	check_dims(n);
	check_typmod(n, typmod);

	result = avector_new(n);
	for (i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("array must not contain nulls")));
		result->x[i] = element_to_float(elems[i], elemtype);
		check_value(result->x[i]);
	}
	PG_RETURN_AVECTOR_P(result);
}

/* avector -> real[] */
Datum
avector_to_float4(PG_FUNCTION_ARGS)
{
	AVector    *v = PG_GETARG_AVECTOR_P(0);
	Datum	   *elems = palloc(sizeof(Datum) * v->dim);
	int			i;

	for (i = 0; i < v->dim; i++)
		elems[i] = Float4GetDatum(v->x[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, v->dim, FLOAT4OID,
										  sizeof(float4), true, TYPALIGN_INT));
}

Datum
avector_dims(PG_FUNCTION_ARGS)
{
	AVector    *v = PG_GETARG_AVECTOR_P(0);

	PG_RETURN_INT32(v->dim);
}

/* ---------------------------------------------------------------------
 * Distances
 * ---------------------------------------------------------------------
 */

typedef enum VectorMetric
{
	METRIC_L2,
	METRIC_L2_SQUARED,
	METRIC_INNER_PRODUCT,
	METRIC_NEGATIVE_INNER_PRODUCT,
	METRIC_COSINE
} VectorMetric;

/* The kernel's raw sum for the metric, in float */
static float
metric_kernel(VectorMetric metric, const float *a, const float *b, int n)
{
	switch (metric)
	{
		case METRIC_L2:
		case METRIC_L2_SQUARED:
			return archer_vec_l2_squared(a, b, n);
		case METRIC_INNER_PRODUCT:
		case METRIC_NEGATIVE_INNER_PRODUCT:
			return archer_vec_inner_product(a, b, n);
		case METRIC_COSINE:
			return archer_vec_cosine_distance(a, b, n);
	}
	return 0.0f;				/* keep compiler quiet */
}

/* The same sum in double, for finite inputs whose float sums overflowed */
static double
metric_double(VectorMetric metric, const float *a, const float *b, int n)
{
	double		s = 0.0;
	int			i;

	switch (metric)
	{
		case METRIC_L2:
		case METRIC_L2_SQUARED:
			for (i = 0; i < n; i++)
				s += ((double) a[i] - b[i]) * ((double) a[i] - b[i]);
			return s;
		case METRIC_INNER_PRODUCT:
		case METRIC_NEGATIVE_INNER_PRODUCT:
			for (i = 0; i < n; i++)
				s += (double) a[i] * b[i];
			return s;
		case METRIC_COSINE:
			/* zero "sums" make archer_cosine_finish recompute in double */
			return archer_cosine_finish(a, b, n, 0.0f, 0.0f, 0.0f);
	}
	return 0.0;					/* keep compiler quiet */
}

/*
 * A distance between two float vectors of n dimensions.  unchecked says
 * the inputs may hold NaN or infinities (real[]): then a non-finite sum is
 * first blamed on them.
 */
static double
vector_distance(VectorMetric metric, const float *a, const float *b, int n,
				bool unchecked)
{
	double		s = metric_kernel(metric, a, b, n);

	if (unlikely(!isfinite(s)))
	{
		if (unchecked)
		{
			archer_vector_check_finite(a, n);
			archer_vector_check_finite(b, n);
		}
		s = metric_double(metric, a, b, n);
	}
	switch (metric)
	{
		case METRIC_L2:
			return sqrt(s);
		case METRIC_NEGATIVE_INNER_PRODUCT:
			return -s;
		default:
			return s;
	}
}

/*
 * A distance operator's argument, detoasted.  The executor calls the
 * operator once per row it rechecks with the same query argument, and a
 * query vector read from a table inside the statement arrives as the same
 * TOAST pointer (or compressed bytes) each time: fetching it through the
 * TOAST table again for every row cost more than the distances did.  So a
 * TOASTed or compressed argument is detoasted once per call site and kept
 * in fn_extra, keyed by its raw bytes, which identify the value.  In-memory
 * (expanded or indirect) pointers are not cached: the memory they point to
 * may change between calls.
 */
typedef struct MetricArgCache
{
	struct varlena *raw[2];		/* a copy of the argument as given */
	struct varlena *value[2];	/* its detoasted value */
} MetricArgCache;

/* *cached tells the caller not to free the result */
static struct varlena *
metric_arg(FunctionCallInfo fcinfo, int argno, bool *cached)
{
	struct varlena *raw = (struct varlena *) DatumGetPointer(PG_GETARG_DATUM(argno));
	FmgrInfo   *flinfo = fcinfo->flinfo;
	MetricArgCache *cache;
	MemoryContext oldcxt;
	Size		rawsize;

	*cached = false;
	if (flinfo == NULL || !(VARATT_IS_EXTERNAL_ONDISK(raw) || VARATT_IS_COMPRESSED(raw)))
		return (struct varlena *) PG_DETOAST_DATUM(PointerGetDatum(raw));

	*cached = true;
	if (flinfo->fn_extra == NULL)
		flinfo->fn_extra = MemoryContextAllocZero(flinfo->fn_mcxt, sizeof(MetricArgCache));
	cache = flinfo->fn_extra;
	rawsize = VARSIZE_ANY(raw);
	if (cache->raw[argno] != NULL && VARSIZE_ANY(cache->raw[argno]) == rawsize &&
		memcmp(cache->raw[argno], raw, rawsize) == 0)
		return cache->value[argno];

	if (cache->raw[argno] != NULL)
	{
		pfree(cache->raw[argno]);
		pfree(cache->value[argno]);
		cache->raw[argno] = NULL;
	}
	oldcxt = MemoryContextSwitchTo(flinfo->fn_mcxt);
	cache->value[argno] = detoast_attr(raw);
	cache->raw[argno] = palloc(rawsize);
	memcpy(cache->raw[argno], raw, rawsize);
	MemoryContextSwitchTo(oldcxt);
	return cache->value[argno];
}

static void
metric_arg_free(FunctionCallInfo fcinfo, int argno, void *value, bool cached)
{
	if (!cached && value != DatumGetPointer(PG_GETARG_DATUM(argno)))
		pfree(value);
}

static Datum
avector_metric(FunctionCallInfo fcinfo, VectorMetric metric)
{
	bool		cached_a;
	bool		cached_b;
	AVector    *a = (AVector *) metric_arg(fcinfo, 0, &cached_a);
	AVector    *b = (AVector *) metric_arg(fcinfo, 1, &cached_b);
	double		d;

	check_same_dims(a->dim, b->dim);
	d = vector_distance(metric, a->x, b->x, a->dim, false);
	metric_arg_free(fcinfo, 0, a, cached_a);
	metric_arg_free(fcinfo, 1, b, cached_b);
	PG_RETURN_FLOAT8(d);
}

static Datum
float4arr_metric(FunctionCallInfo fcinfo, VectorMetric metric)
{
	bool		cached_a;
	bool		cached_b;
	ArrayType  *a = (ArrayType *) metric_arg(fcinfo, 0, &cached_a);
	ArrayType  *b = (ArrayType *) metric_arg(fcinfo, 1, &cached_b);
	int			na;
	int			nb;
	const float *xa = archer_float4_array_values(a, &na);
	const float *xb = archer_float4_array_values(b, &nb);
	double		d;

	check_same_dims(na, nb);
	d = vector_distance(metric, xa, xb, na, true);
	metric_arg_free(fcinfo, 0, a, cached_a);
	metric_arg_free(fcinfo, 1, b, cached_b);
	PG_RETURN_FLOAT8(d);
}

Datum
avector_l2_distance(PG_FUNCTION_ARGS)
{
	return avector_metric(fcinfo, METRIC_L2);
}

Datum
avector_l2_squared_distance(PG_FUNCTION_ARGS)
{
	return avector_metric(fcinfo, METRIC_L2_SQUARED);
}

Datum
avector_inner_product(PG_FUNCTION_ARGS)
{
	return avector_metric(fcinfo, METRIC_INNER_PRODUCT);
}

Datum
avector_negative_inner_product(PG_FUNCTION_ARGS)
{
	return avector_metric(fcinfo, METRIC_NEGATIVE_INNER_PRODUCT);
}

Datum
avector_cosine_distance(PG_FUNCTION_ARGS)
{
	return avector_metric(fcinfo, METRIC_COSINE);
}

Datum
float4arr_l2_distance(PG_FUNCTION_ARGS)
{
	return float4arr_metric(fcinfo, METRIC_L2);
}

Datum
float4arr_l2_squared_distance(PG_FUNCTION_ARGS)
{
	return float4arr_metric(fcinfo, METRIC_L2_SQUARED);
}

Datum
float4arr_inner_product(PG_FUNCTION_ARGS)
{
	return float4arr_metric(fcinfo, METRIC_INNER_PRODUCT);
}

Datum
float4arr_negative_inner_product(PG_FUNCTION_ARGS)
{
	return float4arr_metric(fcinfo, METRIC_NEGATIVE_INNER_PRODUCT);
}

Datum
float4arr_cosine_distance(PG_FUNCTION_ARGS)
{
	return float4arr_metric(fcinfo, METRIC_COSINE);
}

/* Euclidean norm: the inner product of a vector with itself */
static double
vector_norm(const float *x, int n, bool unchecked)
{
	return sqrt(vector_distance(METRIC_INNER_PRODUCT, x, x, n, unchecked));
}

Datum
avector_norm(PG_FUNCTION_ARGS)
{
	AVector    *v = PG_GETARG_AVECTOR_P(0);

	PG_RETURN_FLOAT8(vector_norm(v->x, v->dim, false));
}

Datum
float4arr_norm(PG_FUNCTION_ARGS)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(0);
	int			n;
	const float *x = archer_float4_array_values(a, &n);

	PG_RETURN_FLOAT8(vector_norm(x, n, true));
}

/* ---------------------------------------------------------------------
 * Comparison and hashing: element by element, then the shorter first.
 * -0 equals 0, so it hashes as 0.
 * ---------------------------------------------------------------------
 */

static int
avector_cmp_internal(const AVector *a, const AVector *b)
{
	int			n = Min(a->dim, b->dim);
	int			i;

	for (i = 0; i < n; i++)
	{
		if (a->x[i] < b->x[i])
			return -1;
		if (a->x[i] > b->x[i])
			return 1;
	}
	return (a->dim > b->dim) - (a->dim < b->dim);
}

static int
avector_compare_args(FunctionCallInfo fcinfo)
{
	AVector    *a = PG_GETARG_AVECTOR_P(0);
	AVector    *b = PG_GETARG_AVECTOR_P(1);
	int			cmp = avector_cmp_internal(a, b);

	/* sorts call this many times: free detoasted copies */
	PG_FREE_IF_COPY(a, 0);
	PG_FREE_IF_COPY(b, 1);
	return cmp;
}

Datum
avector_lt(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(avector_compare_args(fcinfo) < 0);
}

Datum
avector_le(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(avector_compare_args(fcinfo) <= 0);
}

Datum
avector_eq(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(avector_compare_args(fcinfo) == 0);
}

Datum
avector_ne(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(avector_compare_args(fcinfo) != 0);
}

Datum
avector_ge(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(avector_compare_args(fcinfo) >= 0);
}

Datum
avector_gt(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(avector_compare_args(fcinfo) > 0);
}

Datum
avector_cmp(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(avector_compare_args(fcinfo));
}

/*
 * The bytes to hash: dim, unused and the floats.  Only a vector holding -0
 * needs a copy with -0 turned into 0.
 */
static const unsigned char *
avector_hash_bytes(AVector *v, int *len)
{
	int			i;

	*len = AVECTOR_SIZE(v->dim) - offsetof(AVector, dim);
	for (i = 0; i < v->dim; i++)
	{
		if (v->x[i] == 0.0f && signbit(v->x[i]))
		{
			AVector    *copy = (AVector *) palloc(AVECTOR_SIZE(v->dim));
			int			j;

			memcpy(copy, v, AVECTOR_SIZE(v->dim));
			for (j = i; j < v->dim; j++)
			{
				if (copy->x[j] == 0.0f)
					copy->x[j] = 0.0f;
			}
			return (const unsigned char *) &copy->dim;
		}
	}
	return (const unsigned char *) &v->dim;
}

Datum
avector_hash(PG_FUNCTION_ARGS)
{
	AVector    *v = PG_GETARG_AVECTOR_P(0);
	int			len;
	const unsigned char *bytes = avector_hash_bytes(v, &len);

	PG_RETURN_UINT32(hash_bytes(bytes, len));
}

Datum
avector_hash_extended(PG_FUNCTION_ARGS)
{
	AVector    *v = PG_GETARG_AVECTOR_P(0);
	uint64		seed = PG_GETARG_INT64(1);
	int			len;
	const unsigned char *bytes = avector_hash_bytes(v, &len);

	PG_RETURN_UINT64(hash_bytes_extended(bytes, len, seed));
}

/* ---------------------------------------------------------------------
 * Kernel diagnostics
 * ---------------------------------------------------------------------
 */

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
	K_COUNT
} KernelId;

static const char *const kernel_names[K_COUNT] = {
	"l2sq", "dot", "cosine", "sq8_l2sq", "sq8_dot", "sq8_wl2sq", "sq8_wdot",
	"u8_l2sq", "u8_dot"
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
} KernelInputs;

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
			case K_COUNT:
				break;
		}
		s += t;
		abssum += fabs(t);
	}
	*scale = Max(abssum, 1e-30);
	/* integer kernels must be exact: measure their absolute error */
	if (id == K_U8_L2SQ || id == K_U8_DOT)
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
	if (id == K_U8_L2SQ || id == K_U8_DOT)
	{
		KernelInputs ext = {0};
		double		expect = (double) AVECTOR_MAX_DIM * 255 * 255;

		/* l2sq: 255s against 0s; dot: 255s against 255s */
		ext.ca = palloc(AVECTOR_MAX_DIM);
		ext.cb = palloc(AVECTOR_MAX_DIM);
		memset(ext.ca, 255, AVECTOR_MAX_DIM);
		memset(ext.cb, id == K_U8_L2SQ ? 0 : 255, AVECTOR_MAX_DIM);
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
			archer_sq8_query_init(&pq, &sq, q);

			for (j = 0; j < nvec; j++)
			{
				const uint8 *ca = codes + j * dim;
				const uint8 *cb = codes + ((j + 1) % nvec) * dim;
				double		ref_l2 = 0.0;
				double		l2_scale = 0.0;
				double		ref_ip = 0.0;
				double		ip_scale = 0.0;
				double		sym_l2 = 0.0;
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
				}
				max_err = Max(max_err, fabs(archer_sq8_query_l2sq(&pq, ca) - ref_l2) /
							  Max(l2_scale, 1e-30));
				max_err = Max(max_err, fabs(archer_sq8_query_ip(&pq, ca) - ref_ip) /
							  Max(ip_scale, 1e-30));
				max_err = Max(max_err, fabs(archer_sq8_l2sq(&sq, ca, cb) - sym_l2) /
							  Max(sym_l2, 1e-30));
				ref = decoded_dot(&sq, ca, cb, &scale);
				max_err = Max(max_err,
							  fabs(archer_sq8_ip(&sq, ca, archer_sq8_bias(&sq, ca),
												 cb, archer_sq8_bias(&sq, cb)) - ref) /
							  Max(scale, 1e-30));
			}
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

	check_dims(dim);
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
