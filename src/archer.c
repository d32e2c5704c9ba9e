/*-------------------------------------------------------------------------
 *
 * archer.c
 *	  Library entry point: module magic and initialization of every part.
 *
 * The library loads both from CREATE EXTENSION and from
 * shared_preload_libraries; _PG_init defines GUCs, reloptions and hooks,
 * which is safe either way, and with preloading also registers the merge
 * worker (worker.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "geo.h"
#include "merge.h"
#include "vec.h"
#include "vector.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	archer_geo_init();
	archer_vector_init();
	archer_vector_am_init();
	archer_worker_init();
	/* after every archer.* GUC is defined: placeholders of those stay */
	MarkGUCPrefixReserved("archer");
}
