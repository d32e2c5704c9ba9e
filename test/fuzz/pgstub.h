/* pgstub.h: see pgstub.c */
#ifndef ARCHER_PGSTUB_H
#define ARCHER_PGSTUB_H

#include <setjmp.h>

#include "lib/stringinfo.h"

/* where an ERROR lands: set with sigsetjmp before calling the decoder */
extern sigjmp_buf stub_error_jump;

/* release everything allocated since the last reset */
extern void stub_reset(void);

/* a wire-format message holding a copy of the bytes, for a recv function */
extern void stub_message(StringInfo msg, const uint8 *data, size_t len);

#endif
