/*-------------------------------------------------------------------------
 *
 * geo_tree.c
 *	  Reading the archer_geo B+-tree: key order, the meta page, descending
 *	  from the root to a leaf, and moving right past concurrent splits.
 *
 * Readers take share locks one page at a time (see geo.h): the downlink
 * read from a parent may be stale by the time the child is locked, and the
 * child's high key tells when the wanted key has moved to a right sibling.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "geo.h"

#define ST_SORT geo_sort_leaf_entries
#define ST_ELEMENT_TYPE GeoLeafEntry
#define ST_COMPARE(a, b) geo_key_cmp((a)->cellid, &(a)->tid, (b)->cellid, &(b)->tid)
#define ST_SCOPE extern
#define ST_DEFINE
#include "lib/sort_template.h"

void
geo_init_meta_page(Page page, BlockNumber root, uint16 root_level)
{
	GeoMetaPageData *meta = archer_init_meta_page(page, ARCHER_GEO_PAGE_ID,
												  sizeof(GeoMetaPageData));

	meta->root = root;
	meta->root_level = root_level;
	meta->buffer.head = meta->buffer.tail = meta->buffer.free = InvalidBlockNumber;
}

void
geo_read_meta(Relation index, BlockNumber *root, uint16 *root_level)
{
	Buffer		buf = archer_read_page(index, ARCHER_META_BLKNO, BUFFER_LOCK_SHARE,
									   ARCHER_GEO_PAGE_ID);
	Page		page = BufferGetPage(buf);
	GeoMetaPageData *meta = GeoPageGetMeta(page);

	if (!(ArcherPageGetOpaque(page)->flags & ARCHER_PAGE_META) ||
		meta->common.magic != ARCHER_MAGIC ||
		meta->common.version != ARCHER_PAGE_VERSION)
		archer_corrupted(index, ARCHER_META_BLKNO, "The meta page is invalid.");
	/* an insert that splits the root locks the meta page while it holds the root */
	if (meta->root == ARCHER_META_BLKNO || !BlockNumberIsValid(meta->root))
		archer_corrupted(index, ARCHER_META_BLKNO, "The meta page's root link is invalid.");
	*root = meta->root;
	*root_level = meta->root_level;
	UnlockReleaseBuffer(buf);
}

/* the flags that tell the pages of a tree level from other pages */
#define GEO_TREE_PAGE_KINDS \
	(ARCHER_PAGE_META | ARCHER_PAGE_LEAF | ARCHER_PAGE_INTERNAL | ARCHER_PAGE_DELETED | \
	 ARCHER_PAGE_BUFFER)

/*
 * The tree's height for the planner's cost estimate: the root's level (0
 * when the root is the only leaf), or -1 when block 0 is not a meta page of
 * this layout.  PostgreSQL 18 asks for it (amgettreeheight) whenever it
 * plans a query on the table, also one that cannot use this index: so a
 * damaged meta page or one of another release's layout raises no error
 * here (a scan that uses the index reports it).  Only the fields in
 * ArcherMetaCommon are checked: root_level is read at a fixed offset, and
 * any value of it merely changes a cost.
 */
int
geo_tree_height(Relation index)
{
	Buffer		buf;
	GeoMetaPageData *meta;
	int			height = -1;

	if (RelationGetNumberOfBlocks(index) == 0)
		return -1;
	buf = ReadBuffer(index, ARCHER_META_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	meta = GeoPageGetMeta(BufferGetPage(buf));
	if (!PageIsNew(BufferGetPage(buf)) &&
		meta->common.magic == ARCHER_MAGIC &&
		meta->common.version == ARCHER_PAGE_VERSION &&
		meta->common.page_id == ARCHER_GEO_PAGE_ID)
		height = meta->root_level;
	UnlockReleaseBuffer(buf);
	return height;
}

/* true when the key belongs to a page to the right of this one */
static bool
key_beyond_page(Page page, uint64 cellid, ItemPointer tid)
{
	ArcherPageOpaque opaque = ArcherPageGetOpaque(page);

	return (opaque->flags & ARCHER_PAGE_HAS_HIKEY) &&
		geo_key_cmp(cellid, tid, opaque->hikey_cellid, &opaque->hikey_tid) >= 0;
}

/*
 * Follow right links while the key is at or past the page's high key.  The
 * buffer is locked in lockmode on entry and on return; the lock on a page
 * is released only after the right sibling is locked, so an inserter never
 * lets a concurrent split slip between the two.
 */
Buffer
geo_move_right(Relation index, Buffer buf, uint64 cellid, ItemPointer tid, int lockmode)
{
	while (key_beyond_page(BufferGetPage(buf), cellid, tid))
	{
		Page		page = BufferGetPage(buf);
		ArcherPageOpaque opaque = ArcherPageGetOpaque(page);
		Size		entry_size = (opaque->flags & ARCHER_PAGE_LEAF) ?
			sizeof(GeoLeafEntry) : sizeof(GeoInternalEntry);
		int			nsorted = archer_page_nentries(page, entry_size);
		Buffer		next;
		ArcherPageOpaque nextopaque;

		/*
		 * A high key moved down below keys of the page would send the
		 * search for them to the right: they would be missed.  The last
		 * sorted key is the page's largest but for a leaf's tail (and an
		 * internal page's first key, which may be stale: geo_verify.c).
		 */
		if (opaque->flags & ARCHER_PAGE_LEAF)
			nsorted = Min(nsorted, opaque->nsorted);
		if (nsorted > ((opaque->flags & ARCHER_PAGE_LEAF) ? 0 : 1))
		{
			const char *last = ArcherPageGetEntries(page) + (nsorted - 1) * entry_size;
			GeoKey		key;

			memcpy(&key.cellid, last, sizeof(uint64));
			memcpy(&key.tid, last + sizeof(uint64), sizeof(ItemPointerData));
			if (geo_key_cmp(key.cellid, &key.tid, opaque->hikey_cellid, &opaque->hikey_tid) >= 0)
				archer_corrupted(index, BufferGetBlockNumber(buf),
								 "A key is not below the page's high key.");
		}
		archer_check_link(index, BufferGetBlockNumber(buf), opaque->rightlink,
						  InvalidBlockNumber);
		next = archer_read_page(index, opaque->rightlink, lockmode, ARCHER_GEO_PAGE_ID);
		nextopaque = ArcherPageGetOpaque(BufferGetPage(next));

		/* right links lead to higher keys, or a damaged link would loop */
		if ((nextopaque->flags & ARCHER_PAGE_HAS_HIKEY) &&
			geo_key_cmp(nextopaque->hikey_cellid, &nextopaque->hikey_tid,
						opaque->hikey_cellid, &opaque->hikey_tid) <= 0)
			archer_corrupted(index, BufferGetBlockNumber(next),
							 "A right link does not lead to higher keys.");
		/* ... on the same level: a descent trusts the level it counts */
		if (nextopaque->level != opaque->level ||
			(nextopaque->flags & GEO_TREE_PAGE_KINDS) != (opaque->flags & GEO_TREE_PAGE_KINDS))
			archer_corrupted(index, BufferGetBlockNumber(next),
							 "A right link leads to a page of another level or kind.");
		UnlockReleaseBuffer(buf);
		buf = next;
		CHECK_FOR_INTERRUPTS();
	}
	return buf;
}

/* Position of the child of an internal page that holds the key */
static int
internal_child_position(Page page, uint64 cellid, ItemPointer tid)
{
	GeoInternalEntry *entries = (GeoInternalEntry *) ArcherPageGetEntries(page);
	int			lo = 0;
	int			hi = archer_page_nentries(page, sizeof(GeoInternalEntry)) - 1;

	/* last entry whose key <= the search key; the first covers everything below */
	while (lo < hi)
	{
		int			mid = (lo + hi + 1) / 2;

		if (geo_key_cmp(entries[mid].cellid, &entries[mid].tid, cellid, tid) <= 0)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* First position in a leaf's sorted prefix whose key is >= (cellid, tid) */
int
geo_leaf_lower_bound(Page page, uint64 cellid, ItemPointer tid)
{
	GeoLeafEntry *entries = (GeoLeafEntry *) ArcherPageGetEntries(page);
	int			lo = 0;
	int			hi = Min(ArcherPageGetOpaque(page)->nsorted,
						 archer_page_nentries(page, sizeof(GeoLeafEntry)));

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (geo_key_cmp(entries[mid].cellid, &entries[mid].tid, cellid, tid) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Sort a whole leaf image: its tail merges into the sorted prefix */
void
geo_leaf_sort(Page page)
{
	int			nentries = archer_page_nentries(page, sizeof(GeoLeafEntry));

	geo_sort_leaf_entries((GeoLeafEntry *) ArcherPageGetEntries(page), nentries);
	ArcherPageGetOpaque(page)->nsorted = nentries;
}

/*
 * Descend to the leaf that holds (or would hold) the key and return it
 * locked in leaf_lockmode.  Internal pages are share-locked one at a time.
 */
Buffer
geo_descend(Relation index, uint64 cellid, ItemPointer tid, int leaf_lockmode)
{
	BlockNumber blkno;
	uint16		level;
	Buffer		buf;

	geo_read_meta(index, &blkno, &level);
	for (;;)
	{
		Page		page;
		ArcherPageOpaque opaque;
		int			lockmode = (level == 0) ? leaf_lockmode : BUFFER_LOCK_SHARE;
		GeoInternalEntry *entries;
		int			nentries;

		buf = archer_read_page(index, blkno, lockmode, ARCHER_GEO_PAGE_ID);
		buf = geo_move_right(index, buf, cellid, tid, lockmode);
		page = BufferGetPage(buf);
		opaque = ArcherPageGetOpaque(page);
		if (opaque->level != level)
			archer_corrupted(index, BufferGetBlockNumber(buf),
							 "The page is not at the level its parent expects.");
		if (level == 0)
		{
			if (!(opaque->flags & ARCHER_PAGE_LEAF))
				archer_corrupted(index, BufferGetBlockNumber(buf),
								 "A page at level 0 is not a leaf.");
			return buf;
		}
		nentries = archer_page_nentries(page, sizeof(GeoInternalEntry));
		if (!(opaque->flags & ARCHER_PAGE_INTERNAL) || nentries == 0 ||
			nentries > GEO_INTERNAL_CAPACITY)
			archer_corrupted(index, BufferGetBlockNumber(buf),
							 "An internal page has no valid entries.");
		entries = (GeoInternalEntry *) ArcherPageGetEntries(page);
		blkno = entries[internal_child_position(page, cellid, tid)].child;
		level--;
		UnlockReleaseBuffer(buf);
	}
}
