/*-------------------------------------------------------------------------
 *
 * storage.h
 *	  The page layer shared by archer's access methods, and the other shared
 *	  modules of src/common that take no access method descriptor
 *	  (amroutine.c, owner.c, prefetch.c, insert_buffer.c).
 *
 * Page layout (every archer page, any access method):
 *
 *	+----------------+----------------------------+------+---------------+
 *	| PageHeaderData | fixed-size entries ...    -> | hole | ArcherPageOpaque |
 *	+----------------+----------------------------+------+---------------+
 *
 * Entries are a dense array of fixed-size structs right after the page
 * header; pd_lower points just past the last one, so the entry count is
 * derived from pd_lower and generic WAL redo can skip the hole.  The special
 * space ends with a 16-bit page id (pg_filedump style) and a layout version,
 * checked on every read: a page that fails the check raises
 * ERRCODE_INDEX_CORRUPTED naming the index and block, never a crash.
 *
 * Block 0 is the meta page.  Its content starts with ArcherMetaCommon
 * (magic, version, access method kind) followed by the access method's own
 * fields.
 *
 * Every change to a page is a GenericXLog record (src/README.md lists
 * them), except during an index build, which writes pages without WAL and
 * then logs them all with log_newpage_range().
 *
 * Locking: callers take buffer content locks; these helpers never lock or
 * unlock on their own except archer_read_page / archer_new_buffer, which
 * return the buffer locked in the requested mode.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHER_STORAGE_H
#define ARCHER_STORAGE_H

#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/amapi.h"
#include "datatype/timestamp.h"
#include "access/genam.h"
#include "catalog/pg_amop.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "storage/itemptr.h"
#include "utils/catcache.h"
#include "utils/rel.h"

#include "compat.h"

#define ARCHER_META_BLKNO		0
#define ARCHER_MAGIC			0xA4C3E401
#define ARCHER_PAGE_VERSION		3

/* page ids, one per access method, in the last two bytes of every page */
#define ARCHER_GEO_PAGE_ID		0xA7E0
#define ARCHER_VEC_PAGE_ID		0xA7E1

/* page flags */
#define ARCHER_PAGE_META		0x01
#define ARCHER_PAGE_LEAF		0x02
#define ARCHER_PAGE_INTERNAL	0x04
#define ARCHER_PAGE_DELETED		0x08
#define ARCHER_PAGE_HAS_HIKEY	0x10	/* hikey fields are valid */
#define ARCHER_PAGE_NODES		0x20	/* line pointers to vector graph nodes */
#define ARCHER_PAGE_QUANTIZER	0x40	/* dense float array of the quantizer */
#define ARCHER_PAGE_BUFFER		0x80	/* insert buffer entries, rightlink = next */
/*
 * Vector rows whose vector is NULL, kept before the index knew its
 * dimension (vec.h).  No bit is free: this is the leaf bit, which no
 * vector page has otherwise (with no right link and no high key, as
 * archer_check_page requires of a leaf).
 */
#define ARCHER_PAGE_NULL_ROWS	ARCHER_PAGE_LEAF

/*
 * Special space of every archer page.  The hikey (an exclusive upper bound
 * of the keys on the page, used by the geo tree's Lehman-Yao move-right) is
 * meaningful only with ARCHER_PAGE_HAS_HIKEY; nsorted only on geo leaves.
 */
typedef struct ArcherPageOpaqueData
{
	uint64		hikey_cellid;
	ItemPointerData hikey_tid;
	uint16		level;			/* 0 for leaves */
	BlockNumber rightlink;		/* next page at this level, or Invalid */
	uint16		nsorted;		/* geo leaves: entries [0, nsorted) are sorted */
	uint16		reserved16;
	uint32		reserved32;
	/* the last four bytes of every page, whatever the access method */
	uint8		flags;
	uint8		version;		/* ARCHER_PAGE_VERSION */
	uint16		page_id;		/* ARCHER_*_PAGE_ID */
} ArcherPageOpaqueData;

StaticAssertDecl(sizeof(ArcherPageOpaqueData) == 32,
				 "the page id must sit in the last two bytes of a page");

typedef ArcherPageOpaqueData *ArcherPageOpaque;

#define ArcherPageGetOpaque(page) \
	((ArcherPageOpaque) PageGetSpecialPointer(page))

/* The part of the meta page every archer access method shares */
typedef struct ArcherMetaCommon
{
	uint32		magic;			/* ARCHER_MAGIC */
	uint32		version;		/* ARCHER_PAGE_VERSION */
	uint16		page_id;		/* which access method owns the index */
	uint16		reserved;
} ArcherMetaCommon;

/*
 * The insert buffer of an index (insert_buffer.c), in every archer meta
 * page right after ArcherMetaCommon: a chain of ARCHER_PAGE_BUFFER pages
 * from head to tail through the right links, each with a serial number
 * one above its predecessor's.
 */
typedef struct ArcherBufferMeta
{
	BlockNumber head;			/* oldest buffer page, or Invalid */
	BlockNumber tail;			/* the page appends go to, or Invalid */
	BlockNumber free;			/* emptied buffer pages, for appends to reuse */
	uint32		entries;		/* entries not merged yet */
	uint32		pages;
	uint32		reserved;
	uint64		serial;			/* serial number of the last buffer page added */
	uint64		merges;			/* merge runs that merged something */
	uint64		merged_entries;
	TimestampTz last_merge_end;
	int64		last_merge_us;	/* duration of the last merge run */
} ArcherBufferMeta;

/* The start of every archer meta page */
typedef struct ArcherMetaHead
{
	ArcherMetaCommon common;
	ArcherBufferMeta buffer;
} ArcherMetaHead;

#define ArcherPageGetBufferMeta(page) \
	(&((ArcherMetaHead *) PageGetContents(page))->buffer)

/* the serial number of an insert buffer page, in its special space */
#define ArcherBufferPageSerial(page)	(ArcherPageGetOpaque(page)->hikey_cellid)

/* heavyweight page lock that serializes merges of an index's buffer */
#define ARCHER_MERGE_LOCK		((BlockNumber) 0xFFFFFFFE)

/* Space for entries on one page */
#define ARCHER_PAGE_CAPACITY_BYTES \
	(BLCKSZ - MAXALIGN(SizeOfPageHeaderData) - MAXALIGN(sizeof(ArcherPageOpaqueData)))

#define ArcherPageGetEntries(page) \
	((char *) (page) + MAXALIGN(SizeOfPageHeaderData))

/* storage.c: the page layer */
extern void archer_page_init(Page page, uint16 page_id, uint8 flags, uint16 level);
extern int	archer_page_nentries(Page page, Size entry_size);
extern void archer_page_set_nentries(Page page, Size entry_size, int nentries);
extern void archer_check_page(Relation index, Page page, BlockNumber blkno,
							  uint16 page_id);
extern void archer_check_link(Relation index, BlockNumber from, BlockNumber to,
							  BlockNumber held);
extern Buffer archer_read_page(Relation index, BlockNumber blkno, int lockmode,
							   uint16 page_id);
extern Buffer archer_read_page_if_used(Relation index, BlockNumber blkno, int lockmode,
									   uint16 page_id);
/*
 * The buffer each block of an index was last read into, remembered by a
 * backend so that the next read of the block can pin it through
 * ReadRecentBuffer (a check of the buffer's tag) instead of a lookup in the
 * shared buffer mapping table.  Entries may be stale: ReadRecentBuffer
 * refuses a buffer that holds another block now.
 */
typedef struct ArcherRecentBuffers
{
	MemoryContext cxt;
	Buffer	   *buffers;		/* by block number; InvalidBuffer if unknown */
	BlockNumber nblocks;		/* length of buffers[] */
} ArcherRecentBuffers;

/* Bytes to write at an offset of a page (archer_page_write_logged) */
typedef struct ArcherPageChange
{
	Size		offset;
	Size		length;
	const void *data;
} ArcherPageChange;

extern ArcherRecentBuffers *archer_recent_buffers_create(MemoryContext cxt);
extern Buffer archer_read_buffer_recent(Relation index, BlockNumber blkno,
										ArcherRecentBuffers *recent);
extern Buffer archer_buffer_for_block(Relation index, BlockNumber blkno, uint16 page_id,
									  uint8 leftover_flags);
extern Buffer archer_new_buffer(Relation index);
pg_noreturn extern void archer_corrupted(Relation index, BlockNumber blkno,
										 const char *detail);
extern void archer_write_new_page(Relation index, BlockNumber expected, Page page);
extern void archer_log_all_pages(Relation index);
extern void archer_page_write_logged(Relation index, Buffer buf,
									 const ArcherPageChange *changes, int n);
extern void archer_page_append_logged(Relation index, Buffer buf, const void *entries, int n,
									  Size entry_size);

/* A heap TID as one integer, in ItemPointerCompare's order */
static inline uint64
archer_tid_key(ItemPointer tid)
{
	return ((uint64) ItemPointerGetBlockNumberNoCheck(tid) << 16) |
		ItemPointerGetOffsetNumberNoCheck(tid);
}

/* The heap TID of archer_tid_key's integer */
static inline void
archer_key_tid(uint64 key, ItemPointer tid)
{
	ItemPointerSet(tid, (BlockNumber) (key >> 16), (OffsetNumber) (key & 0xFFFF));
}

extern void *archer_init_meta_page(Page page, uint16 page_id, Size meta_size);
extern void archer_write_init_fork_page(Relation index, BlockNumber blkno, Page page);

/* amroutine.c: what both access methods hand to core alike */
extern IndexAmRoutine *archer_am_routine(int nstrategies);
extern bool archer_validate_opclass(Oid opclassoid, const char *amname, int nstrategies,
									uint32 ordering_strategies);

/* an operator class being validated (archer_opclass_open) */
typedef struct ArcherOpclass
{
	const char *amname;
	const char *name;
	Oid			type;			/* the class's input type */
	int			noperators;		/* in the class's family */
	HeapTuple	classtup;
	CatCList   *oprlist;
} ArcherOpclass;

extern void archer_opclass_open(Oid opclassoid, const char *amname, ArcherOpclass *opclass);
extern Form_pg_amop archer_opclass_operator(const ArcherOpclass *opclass, int i);
extern void archer_opclass_close(ArcherOpclass *opclass);
extern bool archer_opclass_report(const ArcherOpclass *opclass, Form_pg_amop oprform,
								  const char *problem);
extern bool archer_opclass_strategies_present(const ArcherOpclass *opclass, uint32 seen,
											  int nstrategies);
extern int	archer_build_workers(Relation heap, Relation index);
extern void archer_set_empty_itup(IndexScanDesc scan);

/* owner.c: who may verify an index, and as whom a table's code runs */
extern void archer_check_is_index(Oid indexoid);
extern void archer_check_index_owner(Oid indexoid);
extern void archer_verify_open(Oid indexoid, const char *amname, Relation *heap,
							   Relation *index, LOCKMODE *lockmode);
extern void archer_verify_check_memory(Relation index, Size bytes);

/* who ran before archer_become_owner, restored by archer_restore_user */
typedef struct ArcherSavedUser
{
	Oid			userid;
	int			sec_context;
	int			nestlevel;
} ArcherSavedUser;

extern void archer_become_owner(Relation heap, ArcherSavedUser *saved);
extern void archer_restore_user(const ArcherSavedUser *saved);

/* prefetch.c: hints about pages a scan reads next */
extern void archer_prefetch_heap_tuple(IndexScanDesc scan, ItemPointer tid);
extern void archer_prefetch_page(Relation index, BlockNumber blkno);

/* insert_buffer.c: the insert buffer's page chain, shared by both access methods */
typedef struct ArcherBufferAppend
{
	GenericXLogState *state;
	ArcherBufferMeta *meta;		/* in the meta page image being logged */
	Page		target;			/* image of the page to append to */
	Buffer		metabuf;
	Buffer		tailbuf;
	Buffer		newbuf;
} ArcherBufferAppend;

typedef void (*ArcherBufferPageCallback) (Relation index, Page page, BlockNumber blkno,
										  void *arg);
/* how many counted entries a merged page holds, or -1 if it is not merged */
typedef int (*ArcherBufferPageDone) (Relation index, Page page, BlockNumber blkno,
									 void *arg);

extern void archer_buffer_read_meta(Relation index, uint16 page_id, ArcherBufferMeta *meta);
extern void archer_buffer_append_begin(Relation index, uint16 page_id, Size need,
									   ArcherBufferAppend *append);
extern void archer_buffer_append_finish(ArcherBufferAppend *append);
extern void archer_buffer_walk(Relation index, uint16 page_id,
							   ArcherBufferPageCallback callback, void *arg);
extern bool archer_buffer_free_head(Relation index, uint16 page_id, BlockNumber blkno,
									ArcherBufferPageDone page_done, void *arg);
extern void archer_buffer_check_merged(Relation index, uint16 page_id, uint64 start_serial);
extern void archer_buffer_record_merge(Relation index, uint16 page_id, int64 merged,
									   TimestampTz start);
extern void archer_buffer_check_chain(Relation index, uint16 page_id,
									  const ArcherBufferMeta *meta,
									  ArcherBufferPageCallback callback, void *arg);

#endif							/* ARCHER_STORAGE_H */
