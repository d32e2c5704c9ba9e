/*
 * fuzz_avector.c: libFuzzer harness for the avector type's input functions.
 *
 * The first byte picks the target and a typmod, the rest is the input:
 *	even	avector_in, the text form ("[1,2,3]")
 *	odd		avector_recv, the binary form
 * typmod: -1, or 1..8 dimensions from the first byte's upper bits.  A value
 * that is accepted must have the dimensions its header says, finite
 * elements, and match the typmod; a clear ERROR is the other expected
 * outcome.  A crash, a sanitizer report or a broken value is a finding.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "lib/stringinfo.h"

#include "vector.h"
#include "pgstub.h"

extern int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern Datum avector_in(PG_FUNCTION_ARGS);
extern Datum avector_recv(PG_FUNCTION_ARGS);

static void
check_value(const AVector *v, int32 typmod)
{
	if (VARSIZE(v) != AVECTOR_SIZE(v->dim) || v->dim < 1 || v->dim > AVECTOR_MAX_DIM)
		abort();
	if (typmod > 0 && v->dim != typmod)
		abort();
	for (int i = 0; i < v->dim; i++)
		if (!isfinite(v->x[i]))
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool		binary;
	int32		typmod;
	const char *input;
	size_t		len;

	if (size < 1)
		return 0;
	binary = data[0] & 1;
	typmod = (data[0] >> 1) % 9;
	if (typmod == 0)
		typmod = -1;
	input = (const char *) data + 1;
	len = size - 1;

	if (sigsetjmp(stub_error_jump, 0) == 0)
	{
		LOCAL_FCINFO(fcinfo, 3);
		StringInfoData msg;
		Datum		result;

		fcinfo->args[1].value = ObjectIdGetDatum(InvalidOid);
		fcinfo->args[2].value = Int32GetDatum(typmod);
		if (binary)
		{
			stub_message(&msg, (const uint8 *) input, len);
			fcinfo->args[0].value = PointerGetDatum(&msg);
			result = avector_recv(fcinfo);
		}
		else
		{
			fcinfo->args[0].value = CStringGetDatum(pnstrdup(input, len));
			result = avector_in(fcinfo);
		}
		check_value((AVector *) DatumGetPointer(result), typmod);
	}
	stub_reset();
	return 0;
}
