/*-------------------------------------------------------------------------
 *
 * vector.c
 *	  The SQL surface of vectors: the avector type (text and binary I/O,
 *	  typmod, casts, comparison and hashing), the distance functions and
 *	  operators on avector and on real[].  The kernel diagnostics are in
 *	  vector_selftest.c.
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
#include "common/shortest_dec.h"
#include "libpq/pqformat.h"
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

void
avector_check_dims(int dim)
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
		avector_check_dims(0);
	if (ARR_NDIM(array) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("array must be 1-D")));
	if (array_contains_nulls(array))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("array must not contain nulls")));
	*dim = ARR_DIMS(array)[0];
	avector_check_dims(*dim);
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
		avector_check_dims(0);

	/* commas + 1 bound the element count */
	for (c = pt; *c != '\0'; c++)
		capacity += (*c == ',');
	x = palloc(sizeof(float) * Min(capacity, AVECTOR_MAX_DIM));

	for (;;)
	{
		if (dim == AVECTOR_MAX_DIM)
			avector_check_dims(dim + 1);
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

	avector_check_dims(dim);
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
		avector_check_dims(0);
	if (ARR_NDIM(array) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("array must be 1-D")));

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(array, elemtype, typlen, typbyval, typalign,
					  &elems, &nulls, &n);
	avector_check_dims(n);
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
