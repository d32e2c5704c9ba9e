/*
 * pgstub.c: the few backend facilities the fuzzed decoders use, outside a
 * server: memory (malloc, all of it released after each input), ereport
 * (an ERROR jumps back to the harness, which is the expected outcome for
 * bad input), interrupts, and the pqformat readers.  Only code paths the
 * harnesses reach need to exist here; the link ignores the rest.
 */
#include "postgres.h"

#include <setjmp.h>
#include <stddef.h>

#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "utils/memutils.h"

#include "pgstub.h"

/* every live allocation, so that each input starts from nothing */
typedef struct Chunk
{
	struct Chunk *prev;
	struct Chunk *next;
	Size		size;
	char		pad[] __attribute__((aligned(16)));
} Chunk;

static Chunk chunks = {&chunks, &chunks, 0};
static int	current_elevel;

sigjmp_buf	stub_error_jump;
volatile sig_atomic_t InterruptPending = false;
MemoryContext CurrentMemoryContext = NULL;

static void *
chunk_alloc(Size size, bool zero)
{
	Chunk	   *c = malloc(sizeof(Chunk) + size);

	if (c == NULL)
		abort();
	if (zero)
		memset(c->pad, 0, size);
	c->size = size;
	c->next = chunks.next;
	c->prev = &chunks;
	chunks.next->prev = c;
	chunks.next = c;
	return c->pad;
}

static Chunk *
chunk_of(void *pointer)
{
	return (Chunk *) ((char *) pointer - offsetof(Chunk, pad));
}

static void
chunk_free(Chunk *c)
{
	c->prev->next = c->next;
	c->next->prev = c->prev;
	free(c);
}

void
stub_reset(void)
{
	while (chunks.next != &chunks)
		chunk_free(chunks.next);
}

/* an allocation request PostgreSQL itself would refuse */
static void
check_size(Size size, bool huge)
{
	if (size > (huge ? MaxAllocHugeSize : MaxAllocSize))
		elog(ERROR, "invalid memory alloc request size %zu", size);
}

void *
palloc(Size size)
{
	check_size(size, false);
	return chunk_alloc(size, false);
}

void *
palloc0(Size size)
{
	check_size(size, false);
	return chunk_alloc(size, true);
}

void *
palloc_extended(Size size, int flags)
{
	check_size(size, (flags & MCXT_ALLOC_HUGE) != 0);
	return chunk_alloc(size, (flags & MCXT_ALLOC_ZERO) != 0);
}

void *
MemoryContextAlloc(MemoryContext context, Size size)
{
	return palloc(size);
}

void *
MemoryContextAllocZero(MemoryContext context, Size size)
{
	return palloc0(size);
}

void *
MemoryContextAllocHuge(MemoryContext context, Size size)
{
	check_size(size, true);
	return chunk_alloc(size, false);
}

static void *
chunk_realloc(void *pointer, Size size)
{
	Chunk	   *old = chunk_of(pointer);
	void	   *fresh = chunk_alloc(size, false);

	memcpy(fresh, pointer, Min(old->size, size));
	chunk_free(old);
	return fresh;
}

void *
repalloc(void *pointer, Size size)
{
	check_size(size, false);
	return chunk_realloc(pointer, size);
}

void *
repalloc_huge(void *pointer, Size size)
{
	check_size(size, true);
	return chunk_realloc(pointer, size);
}

void
pfree(void *pointer)
{
	chunk_free(chunk_of(pointer));
}

char *
pnstrdup(const char *in, Size len)
{
	char	   *out;

	len = strnlen(in, len);
	out = palloc(len + 1);
	memcpy(out, in, len);
	out[len] = '\0';
	return out;
}

char *
pstrdup(const char *in)
{
	return pnstrdup(in, strlen(in));
}

/* ---- ereport: an ERROR jumps back to the harness ---- */

bool
errstart(int elevel, const char *domain)
{
	current_elevel = elevel;
	return elevel >= ERROR;
}

bool
errstart_cold(int elevel, const char *domain)
{
	return errstart(elevel, domain);
}

void
errfinish(const char *filename, int lineno, const char *funcname)
{
	if (current_elevel >= ERROR)
		siglongjmp(stub_error_jump, 1);
}

int
errcode(int sqlerrcode)
{
	return 0;
}

int
errmsg(const char *fmt,...)
{
	return 0;
}

int
errmsg_internal(const char *fmt,...)
{
	return 0;
}

int
errdetail(const char *fmt,...)
{
	return 0;
}

int
errdetail_internal(const char *fmt,...)
{
	return 0;
}

int
errhint(const char *fmt,...)
{
	return 0;
}

void
ProcessInterrupts(void)
{
}

/* ---- pqformat readers, with the server's checks ---- */

void
stub_message(StringInfo msg, const uint8 *data, size_t len)
{
	msg->data = palloc(len + 1);
	memcpy(msg->data, data, len);
	msg->data[len] = '\0';
	msg->len = len;
	msg->maxlen = len + 1;
	msg->cursor = 0;
}

static void
msg_need(StringInfo msg, int n)
{
	if (n < 0 || msg->cursor + n > msg->len)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("insufficient data left in message")));
}

unsigned int
pq_getmsgint(StringInfo msg, int b)
{
	unsigned int result = 0;

	msg_need(msg, b);
	for (int i = 0; i < b; i++)
		result = (result << 8) | (unsigned char) msg->data[msg->cursor++];
	return result;
}

int
pq_getmsgbyte(StringInfo msg)
{
	msg_need(msg, 1);
	return (unsigned char) msg->data[msg->cursor++];
}

float4
pq_getmsgfloat4(StringInfo msg)
{
	union
	{
		float4		f;
		uint32		i;
	}			swap;

	swap.i = pq_getmsgint(msg, 4);
	return swap.f;
}

float8
pq_getmsgfloat8(StringInfo msg)
{
	union
	{
		float8		f;
		uint64		i;
	}			swap;

	swap.i = ((uint64) pq_getmsgint(msg, 4)) << 32;
	swap.i |= pq_getmsgint(msg, 4);
	return swap.f;
}
