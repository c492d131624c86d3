/*-------------------------------------------------------------------------
 *
 * keptleaf.c
 *	  Kept leaves (doc/undo.md "Kept leaves"): a keeping chunk of a
 *	  partitioned target replaced by truncate or swap keeps each replaced
 *	  leaf's own files, with no copy of a row.  The extension creates an
 *	  empty table of the leaf's columns in backfill_archive (for the leaf's
 *	  owner)
 *	  and exchanges the two tables' files (heap, TOAST table, free space
 *	  and visibility maps): the leaf is left empty, with its OID, name,
 *	  owner, grants, indexes (rebuilt, empty), triggers and bounds, and
 *	  the chunk's strategy fills it; the kept table now holds the old
 *	  rows, under the old relfilenode.  A revert exchanges the files back,
 *	  so the leaf holds its old files again and the kept table what the
 *	  revert replaced (which a revert of the revert puts back).
 *
 * The exchange writes pg_class and pg_depend directly (as CLUSTER and
 * VACUUM FULL do between a table and its new copy): no SQL statement, so
 * no trigger, rule, event trigger or user function runs during it.  The
 * kept table is made from C too (ArchiveStoreCreate), owned by the leaf's
 * owner: it holds the leaf's rows, of the leaf's types, so whatever
 * PostgreSQL runs on it later (ANALYZE) runs as the leaf's owner, as on
 * the leaf.  The leaf's indexes are rebuilt as the current user (the
 * definition's author, in a chunk), who holds TRUNCATE on the leaf; their
 * expressions run as the leaf's owner, as REINDEX runs them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/toast_internals.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/tablecmds.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "backfill.h"

/*
 * KeptLeafEligible
 *		See backfill.h: a plain heap table, not temporary, without dropped
 *		columns (a new table of its columns has the same row layout).
 */
bool
KeptLeafEligible(Oid leaf)
{
	Relation	rel = table_open(leaf, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	bool		ok;
	int			i;

	ok = (rel->rd_rel->relkind == RELKIND_RELATION &&
		  rel->rd_rel->relam == HEAP_TABLE_AM_OID &&
		  rel->rd_rel->relpersistence != RELPERSISTENCE_TEMP);
	for (i = 0; ok && i < desc->natts; i++)
		if (TupleDescAttr(desc, i)->attisdropped)
			ok = false;
	table_close(rel, AccessShareLock);
	return ok;
}

/*
 * CheckSameRows
 *		55000 unless the rows of "a" and "b" are laid out alike: the same
 *		attributes, in the same order, of the same types (a domain as its
 *		base type: they are stored alike), none dropped,
 *		the same access method and persistence.
 */
static void
CheckSameRows(Relation a, Relation b)
{
	TupleDesc	ad = RelationGetDescr(a);
	TupleDesc	bd = RelationGetDescr(b);
	bool		same = (ad->natts == bd->natts &&
						a->rd_rel->relam == b->rd_rel->relam &&
						a->rd_rel->relpersistence == b->rd_rel->relpersistence);
	int			i;

	for (i = 0; same && i < ad->natts; i++)
	{
		Form_pg_attribute x = TupleDescAttr(ad, i);
		Form_pg_attribute y = TupleDescAttr(bd, i);

		same = (!x->attisdropped && !y->attisdropped &&
				getBaseType(x->atttypid) == getBaseType(y->atttypid) &&
				x->atttypmod == y->atttypmod &&
				x->attlen == y->attlen && x->attbyval == y->attbyval &&
				x->attalign == y->attalign);
	}
	if (!same)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("partition \"%s\" no longer has the columns of its kept files",
						RelationGetRelationName(a)),
				 errdetail("Its columns changed since the run kept its rows (a column was added, dropped or changed)."),
				 errhint("Restore the partition's columns as they were when the run kept it, then revert again.")));
}

/*
 * RenameToast
 *		Name TOAST table "toast" and its index after their table "owner"
 *		(pg_toast_<owner>, pg_toast_<owner>_index), with "suffix".
 */
static void
RenameToast(Oid owner, Oid toast, const char *suffix)
{
	Oid			index = toast_get_valid_index(toast, AccessExclusiveLock);

	RenameRelationInternal(toast, psprintf("pg_toast_%u%s", owner, suffix),
						   true, false);
	RenameRelationInternal(index, psprintf("pg_toast_%u_index%s", owner,
										   suffix),
						   true, true);
	CommandCounterIncrement();
}

/*
 * SwapFiles
 *		Exchange the storage of relations a and b in pg_class: files,
 *		tablespace, TOAST table (with its dependency), the freeze horizons
 *		of their rows and the planner's size figures.  The caller holds
 *		AccessExclusiveLock on both and checked that their rows are laid
 *		out alike.
 */
static void
SwapFiles(Oid a, Oid b)
{
	Relation	pgclass = table_open(RelationRelationId, RowExclusiveLock);
	HeapTuple	ta = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(a));
	HeapTuple	tb = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(b));
	Form_pg_class fa;
	Form_pg_class fb;
	FormData_pg_class save;

	if (!HeapTupleIsValid(ta) || !HeapTupleIsValid(tb))
		elog(ERROR, "backfill: cache lookup failed for relation %u or %u", a, b);
	fa = (Form_pg_class) GETSTRUCT(ta);
	fb = (Form_pg_class) GETSTRUCT(tb);
	memcpy(&save, fa, sizeof(FormData_pg_class));

	fa->relfilenode = fb->relfilenode;
	fa->reltablespace = fb->reltablespace;
	fa->reltoastrelid = fb->reltoastrelid;
	fa->relfrozenxid = fb->relfrozenxid;
	fa->relminmxid = fb->relminmxid;
	fa->relpages = fb->relpages;
	fa->reltuples = fb->reltuples;
	fa->relallvisible = fb->relallvisible;

	fb->relfilenode = save.relfilenode;
	fb->reltablespace = save.reltablespace;
	fb->reltoastrelid = save.reltoastrelid;
	fb->relfrozenxid = save.relfrozenxid;
	fb->relminmxid = save.relminmxid;
	fb->relpages = save.relpages;
	fb->reltuples = save.reltuples;
	fb->relallvisible = save.relallvisible;

	CatalogTupleUpdate(pgclass, &ta->t_self, ta);
	CatalogTupleUpdate(pgclass, &tb->t_self, tb);

	/* a TOAST table belongs to (depends internally on) its new table */
	if (OidIsValid(save.reltoastrelid) &&
		changeDependencyFor(RelationRelationId, save.reltoastrelid,
							RelationRelationId, a, b) != 1)
		elog(ERROR, "backfill: could not move the TOAST table of relation %u", a);
	if (OidIsValid(fa->reltoastrelid) &&
		changeDependencyFor(RelationRelationId, fa->reltoastrelid,
							RelationRelationId, b, a) != 1)
		elog(ERROR, "backfill: could not move the TOAST table of relation %u", b);

	CommandCounterIncrement();

	/*
	 * TOAST tables are named after their table, and a later swap or
	 * TRUNCATE of the leaf relies on it: rename both, through free names.
	 */
	if (OidIsValid(fa->reltoastrelid))
		RenameToast(a, fa->reltoastrelid, "_backfill");
	if (OidIsValid(save.reltoastrelid))
		RenameToast(b, save.reltoastrelid, "_backfill");
	if (OidIsValid(fa->reltoastrelid))
		RenameToast(a, fa->reltoastrelid, "");
	if (OidIsValid(save.reltoastrelid))
		RenameToast(b, save.reltoastrelid, "");

	heap_freetuple(ta);
	heap_freetuple(tb);
	table_close(pgclass, RowExclusiveLock);
}

/*
 * StorageIsNew
 *		Whether rel's file was created in this transaction, as the relcache
 *		records it (what RelationNeedsWAL reads with wal_level = minimal).
 */
static bool
StorageIsNew(Relation rel)
{
	return rel->rd_createSubid != InvalidSubTransactionId ||
		BackfillFirstNewStorageSubid(rel) != InvalidSubTransactionId;
}

/*
 * NoteSwappedStorage
 *		Relations a and b have exchanged their files in pg_class (SwapFiles):
 *		tell the relcache which of them now holds a file created in this
 *		transaction, as CLUSTER's swap_relation_files does.  With wal_level
 *		= minimal a new file skips WAL and is synced at commit: the relation
 *		holding it must skip WAL too, and the one holding the older file
 *		must not, or its writes would be neither logged nor synced.  (A
 *		server built with assertions checks this at every commit.)
 */
static void
NoteSwappedStorage(Oid a, Oid b)
{
	Relation	ra = relation_open(a, NoLock);
	Relation	rb = relation_open(b, NoLock);
	Relation	gets_new = NULL;
	Relation	gets_old = NULL;

	if (StorageIsNew(rb))
	{
		gets_new = ra;
		gets_old = rb;
	}
	else if (StorageIsNew(ra))
	{
		gets_new = rb;
		gets_old = ra;
	}
	if (gets_new != NULL)
	{
		gets_old->rd_createSubid = gets_new->rd_createSubid;
		BackfillNewStorageSubid(gets_old) = BackfillNewStorageSubid(gets_new);
		BackfillFirstNewStorageSubid(gets_old) =
			BackfillFirstNewStorageSubid(gets_new);
		BackfillAssumeNewStorage(gets_new);
	}
	relation_close(ra, NoLock);
	relation_close(rb, NoLock);
}

/*
 * KeptLeafExchange
 *		See backfill.h.
 */
void
KeptLeafExchange(Oid leaf, Oid kept)
{
	Relation	lrel;
	Relation	krel;
	ReindexParams params = {0};

	LockRelationOid(leaf, AccessExclusiveLock);
	LockRelationOid(kept, AccessExclusiveLock);
	lrel = table_open(leaf, NoLock);
	krel = table_open(kept, NoLock);
	CheckSameRows(lrel, krel);
	table_close(lrel, NoLock);
	table_close(krel, NoLock);

	SwapFiles(leaf, kept);
	NoteSwappedStorage(leaf, kept);

	/* the leaf's indexes describe the files it had: build them again */
	(void) ReindexRelation(leaf, REINDEX_REL_PROCESS_TOAST |
						   REINDEX_REL_CHECK_CONSTRAINTS, &params);
	CommandCounterIncrement();
}

/*
 * KeptLeafCreate
 *		See backfill.h: backfill_archive.l_<leaf>_<run>_<chunk>, made from C
 *		(ArchiveStoreCreate) for the leaf's owner, UNLOGGED when the leaf
 *		is, of the leaf's columns in order, each of the base type of its
 *		domain (the kept table depends on no domain, and its rows are laid
 *		out as the leaf's: CheckSameRows).
 */
Oid
KeptLeafCreate(Oid leaf, int64 run_id, int32 chunk_no)
{
	char	   *name = psprintf("l_%u_%lld_%d", leaf, (long long) run_id,
								chunk_no);
	Relation	rel = table_open(leaf, AccessShareLock);
	TupleDesc	ldesc = RelationGetDescr(rel);
	TupleDesc	desc = CreateTemplateTupleDesc(ldesc->natts);
	Oid			owner = rel->rd_rel->relowner;
	char		persistence = rel->rd_rel->relpersistence;
	int			i;

	for (i = 0; i < ldesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(ldesc, i);
		int32		typmod = att->atttypmod;
		Oid			base = getBaseTypeAndTypmod(att->atttypid, &typmod);

		/* KeptLeafEligible: no dropped column */
		TupleDescInitEntry(desc, (AttrNumber) (i + 1), NameStr(att->attname),
						   base, typmod, 0);
		TupleDescInitEntryCollation(desc, (AttrNumber) (i + 1),
									att->attcollation);
	}
	BackfillTupleDescFinalize(desc);
	table_close(rel, AccessShareLock);
	return ArchiveStoreCreate(name, desc, owner, persistence, false);
}
