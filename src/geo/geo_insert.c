/*-------------------------------------------------------------------------
 *
 * geo_insert.c
 *	  Inserting keys into the archer_geo B+-tree, a sorted run at a time:
 *	  a session's pending inserts or a merge's copy of an insert buffer page
 *	  (both in geo_buffer.c).
 *
 * Fast path: descend to the leaf of the run's first key, lock it
 * exclusively, add the run's keys that belong there while it has room: one
 * WAL record for the page, however many keys.
 *
 * Split path: under the split lock (a heavyweight lock that serializes
 * structure changes, see geo.h), descend again from the root with exclusive
 * locks, splitting every full page met on the way before entering it.  The
 * parent of a page being split always has room, so each split is a single
 * GenericXLog record over the page, its new right sibling and the parent
 * (plus the meta page and the new root when the root splits): a crash never
 * leaves a half-done split behind.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/lmgr.h"

#include "geo.h"

/* page capacity in entries, for the page's kind */
static int
page_capacity(Page page)
{
	return ArcherPageGetOpaque(page)->level == 0 ? GEO_LEAF_CAPACITY : GEO_INTERNAL_CAPACITY;
}

static Size
page_entry_size(Page page)
{
	return ArcherPageGetOpaque(page)->level == 0 ? sizeof(GeoLeafEntry) : sizeof(GeoInternalEntry);
}

static bool
page_is_full(Page page)
{
	return archer_page_nentries(page, page_entry_size(page)) >= page_capacity(page);
}

/*
 * Add n entries to a leaf with room for them, in one WAL record.  They go
 * to the unsorted tail, so the record carries the new entries rather than
 * the half page a sorted insert shifts, and is written without
 * GenericXLog's whole-page comparison (archer_page_append_logged).  When
 * the tail would exceed GEO_LEAF_TAIL_MAX, the whole page is sorted in the
 * same record (through GenericXLog: it rewrites most of the page anyway).
 */
static void
leaf_add(Relation index, Buffer buf, const GeoLeafEntry *entries, int n)
{
	Page		page = BufferGetPage(buf);
	int			nentries = archer_page_nentries(page, sizeof(GeoLeafEntry));
	GenericXLogState *state;
	Page		image;

	if (nentries + n - ArcherPageGetOpaque(page)->nsorted <= GEO_LEAF_TAIL_MAX)
	{
		archer_page_append_logged(index, buf, entries, n, sizeof(GeoLeafEntry));
		return;
	}
	state = GenericXLogStart(index);
	image = GenericXLogRegisterBuffer(state, buf, 0);
	memcpy(ArcherPageGetEntries(image) + nentries * sizeof(GeoLeafEntry), entries,
		   n * sizeof(GeoLeafEntry));
	archer_page_set_nentries(image, sizeof(GeoLeafEntry), nentries + n);
	geo_leaf_sort(image);
	GenericXLogFinish(state);
}

/* Add a downlink at position pos of an internal page image with room */
static void
internal_page_add(Page page, int pos, uint64 cellid, ItemPointer tid, BlockNumber child)
{
	GeoInternalEntry *entries = (GeoInternalEntry *) ArcherPageGetEntries(page);
	int			nentries = archer_page_nentries(page, sizeof(GeoInternalEntry));

	memmove(&entries[pos + 1], &entries[pos], (nentries - pos) * sizeof(GeoInternalEntry));
	entries[pos].cellid = cellid;
	entries[pos].tid = *tid;
	entries[pos].child = child;
	archer_page_set_nentries(page, sizeof(GeoInternalEntry), nentries + 1);
}

/*
 * Move the upper half of page into the empty new page right (at blkno
 * rightblkno) and link them.  Returns the first key of the right half,
 * which becomes its separator in the parent.
 */
static GeoKey
split_page_image(Page page, Page right, BlockNumber rightblkno)
{
	ArcherPageOpaque opaque = ArcherPageGetOpaque(page);
	ArcherPageOpaque ropaque;
	Size		entry_size = page_entry_size(page);
	int			nentries = archer_page_nentries(page, entry_size);
	int			keep = nentries / 2;
	char	   *moved = ArcherPageGetEntries(page) + keep * entry_size;
	GeoKey		separator;

	if (opaque->level == 0)
		geo_leaf_sort(page);
	/* both entry structs start with (cellid, tid) */
	memcpy(&separator.cellid, moved, sizeof(uint64));
	memcpy(&separator.tid, moved + sizeof(uint64), sizeof(ItemPointerData));

	archer_page_init(right, ARCHER_GEO_PAGE_ID,
					 opaque->flags & (ARCHER_PAGE_LEAF | ARCHER_PAGE_INTERNAL | ARCHER_PAGE_HAS_HIKEY),
					 opaque->level);
	ropaque = ArcherPageGetOpaque(right);
	memcpy(ArcherPageGetEntries(right), moved, (nentries - keep) * entry_size);
	archer_page_set_nentries(right, entry_size, nentries - keep);
	ropaque->hikey_cellid = opaque->hikey_cellid;
	ropaque->hikey_tid = opaque->hikey_tid;
	ropaque->rightlink = opaque->rightlink;
	ropaque->nsorted = nentries - keep;

	archer_page_set_nentries(page, entry_size, keep);
	opaque->nsorted = keep;
	opaque->flags |= ARCHER_PAGE_HAS_HIKEY;
	opaque->hikey_cellid = separator.cellid;
	opaque->hikey_tid = separator.tid;
	opaque->rightlink = rightblkno;
	return separator;
}

/*
 * Split the full child at downlink position pos of parent.  Returns the
 * half that holds the key, still exclusively locked; the other is released.
 */
static Buffer
split_child(Relation index, Buffer parent, int pos, Buffer child,
			uint64 cellid, ItemPointer tid)
{
	Buffer		right = archer_new_buffer(index);
	GenericXLogState *state = GenericXLogStart(index);
	Page		parent_page = GenericXLogRegisterBuffer(state, parent, 0);
	Page		child_page = GenericXLogRegisterBuffer(state, child, 0);
	Page		right_page = GenericXLogRegisterBuffer(state, right, GENERIC_XLOG_FULL_IMAGE);
	GeoKey		separator;

	separator = split_page_image(child_page, right_page, BufferGetBlockNumber(right));
	internal_page_add(parent_page, pos + 1, separator.cellid, &separator.tid,
					  BufferGetBlockNumber(right));
	GenericXLogFinish(state);

	if (geo_key_cmp(cellid, tid, separator.cellid, &separator.tid) >= 0)
	{
		UnlockReleaseBuffer(child);
		return right;
	}
	UnlockReleaseBuffer(right);
	return child;
}

/*
 * Split the full root: its upper half goes to a new sibling and a new root
 * above them both becomes the meta page's root.  Returns the new root,
 * exclusively locked.
 */
static Buffer
split_root(Relation index, Buffer root)
{
	Buffer		meta = archer_read_page(index, ARCHER_META_BLKNO, BUFFER_LOCK_EXCLUSIVE,
										ARCHER_GEO_PAGE_ID);
	Buffer		right = archer_new_buffer(index);
	Buffer		newroot = archer_new_buffer(index);
	GenericXLogState *state = GenericXLogStart(index);
	Page		meta_page = GenericXLogRegisterBuffer(state, meta, 0);
	Page		root_page = GenericXLogRegisterBuffer(state, root, 0);
	Page		right_page = GenericXLogRegisterBuffer(state, right, GENERIC_XLOG_FULL_IMAGE);
	Page		newroot_page = GenericXLogRegisterBuffer(state, newroot, GENERIC_XLOG_FULL_IMAGE);
	uint16		level = ArcherPageGetOpaque(root_page)->level;
	GeoKey		separator;
	ItemPointerData mintid;
	GeoMetaPageData *metadata = GeoPageGetMeta(meta_page);

	separator = split_page_image(root_page, right_page, BufferGetBlockNumber(right));

	archer_page_init(newroot_page, ARCHER_GEO_PAGE_ID, ARCHER_PAGE_INTERNAL, level + 1);
	ItemPointerSetInvalid(&mintid);
	internal_page_add(newroot_page, 0, 0, &mintid, BufferGetBlockNumber(root));
	internal_page_add(newroot_page, 1, separator.cellid, &separator.tid,
					  BufferGetBlockNumber(right));
	metadata->root = BufferGetBlockNumber(newroot);
	metadata->root_level = level + 1;
	GenericXLogFinish(state);

	UnlockReleaseBuffer(meta);
	UnlockReleaseBuffer(right);
	UnlockReleaseBuffer(root);
	return newroot;
}

/*
 * A page the split path entered must be what its parent says: a page of
 * another level or kind would be split and linked as if it were one.
 */
static void
check_split_path_page(Relation index, Buffer buf, uint16 level)
{
	ArcherPageOpaque opaque = ArcherPageGetOpaque(BufferGetPage(buf));

	if (opaque->level != level ||
		!(opaque->flags & (level == 0 ? ARCHER_PAGE_LEAF : ARCHER_PAGE_INTERNAL)) ||
		(level > 0 && archer_page_nentries(BufferGetPage(buf), sizeof(GeoInternalEntry)) == 0))
		archer_corrupted(index, BufferGetBlockNumber(buf),
						 "The page is not at the level its parent expects.");
}

/* The split path: top-down descent that splits full pages before entering them */
static void
insert_with_splits(Relation index, const GeoLeafEntry *entry)
{
	uint64		cellid = entry->cellid;
	ItemPointer tid = (ItemPointer) &entry->tid;
	BlockNumber rootblkno;
	uint16		level;
	Buffer		buf;

	geo_read_meta(index, &rootblkno, &level);
	buf = archer_read_page(index, rootblkno, BUFFER_LOCK_EXCLUSIVE, ARCHER_GEO_PAGE_ID);
	check_split_path_page(index, buf, level);
	if (page_is_full(BufferGetPage(buf)))
	{
		buf = split_root(index, buf);
		level++;
	}

	while (level > 0)
	{
		Page		page = BufferGetPage(buf);
		GeoInternalEntry *entries = (GeoInternalEntry *) ArcherPageGetEntries(page);
		int			nentries = archer_page_nentries(page, sizeof(GeoInternalEntry));
		int			pos = 0;
		Buffer		child;

		/* last downlink whose key <= the new key */
		while (pos + 1 < nentries &&
			   geo_key_cmp(entries[pos + 1].cellid, &entries[pos + 1].tid, cellid, tid) <= 0)
			pos++;
		archer_check_link(index, BufferGetBlockNumber(buf), entries[pos].child,
						  InvalidBlockNumber);
		child = archer_read_page(index, entries[pos].child, BUFFER_LOCK_EXCLUSIVE,
								 ARCHER_GEO_PAGE_ID);
		check_split_path_page(index, child, level - 1);
		if (page_is_full(BufferGetPage(child)))
			child = split_child(index, buf, pos, child, cellid, tid);
		UnlockReleaseBuffer(buf);
		buf = child;
		level--;
	}
	leaf_add(index, buf, entry, 1);
	UnlockReleaseBuffer(buf);
}

/* Whether a leaf page holds the key (sorted prefix, then the tail) */
static bool
leaf_contains(Page page, uint64 cellid, ItemPointer tid)
{
	GeoLeafEntry *entries = (GeoLeafEntry *) ArcherPageGetEntries(page);
	int			nentries = archer_page_nentries(page, sizeof(GeoLeafEntry));
	int			nsorted = Min(ArcherPageGetOpaque(page)->nsorted, nentries);
	int			pos = geo_leaf_lower_bound(page, cellid, tid);

	if (pos < nsorted && geo_key_cmp(entries[pos].cellid, &entries[pos].tid, cellid, tid) == 0)
		return true;
	for (int i = nsorted; i < nentries; i++)
		if (geo_key_cmp(entries[i].cellid, &entries[i].tid, cellid, tid) == 0)
			return true;
	return false;
}

/*
 * Insert a sorted run of keys that belong to the leaf of its first key, in
 * one WAL record.  Runs come from a merge's sorted copy of an insert buffer
 * page, or from a session's sorted pending inserts (geo_buffer.c).  With
 * skip_present, keys the leaf already holds are skipped: a merge, or a
 * pending flush, that an error or crash interrupted is run again.  Stops at
 * the leaf's high key or when the leaf is full; a full leaf takes the first
 * key through the split path.  Returns how many keys of the run it handled
 * (at least one).
 */
int
geo_tree_insert_run(Relation index, const GeoLeafEntry *run, int n, bool skip_present)
{
	Buffer		leaf = geo_descend(index, run[0].cellid, (ItemPointer) &run[0].tid,
								   BUFFER_LOCK_EXCLUSIVE);
	Page		page = BufferGetPage(leaf);
	ArcherPageOpaque opaque = ArcherPageGetOpaque(page);
	int			room = GEO_LEAF_CAPACITY - archer_page_nentries(page, sizeof(GeoLeafEntry));
	GeoLeafEntry add[GEO_LEAF_CAPACITY];
	int			nadd = 0;
	int			done = 0;

	for (; done < n; done++)
	{
		ItemPointer tid = (ItemPointer) &run[done].tid;

		if ((opaque->flags & ARCHER_PAGE_HAS_HIKEY) &&
			geo_key_cmp(run[done].cellid, tid, opaque->hikey_cellid, &opaque->hikey_tid) >= 0)
			break;
		if (skip_present && leaf_contains(page, run[done].cellid, tid))
			continue;
		if (nadd >= room)
			break;
		add[nadd++] = run[done];
	}
	if (nadd > 0)
		leaf_add(index, leaf, add, nadd);
	UnlockReleaseBuffer(leaf);
	if (done == 0)
	{
		LockPage(index, GEO_SPLIT_LOCK, ExclusiveLock);
		insert_with_splits(index, &run[0]);
		UnlockPage(index, GEO_SPLIT_LOCK, ExclusiveLock);
		done = 1;
	}
	return done;
}
