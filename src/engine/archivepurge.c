/*-------------------------------------------------------------------------
 *
 * archivepurge.c
 *	  Purging the archive (purge_archive, a definition's keep_for): the
 *	  chunks kept long enough marked purged and their rows deleted from
 *	  their archive tables (ArchivePurge), the kept leaves' tables and the
 *	  archive tables no chunk needs any more dropped (each in a
 *	  subtransaction: one that cannot be dropped now stays for a later
 *	  purge), and the archive tables dropped by others forgotten.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"

#include "backfill.h"

/*
 * TryDropArchive
 *		Drop archive (or kept) table relid, in a subtransaction: when its
 *		lock is not free at once, or something depends on it (a view
 *		someone made over it), a WARNING says so and it stays, to be
 *		dropped by a later purge; a purge, and the pg_cron tick that runs
 *		one, never fails for it.  Returns whether it was dropped.
 */
static bool
TryDropArchive(Oid relid)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool dropped = false;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		if (!ConditionalLockRelationOid(relid, AccessExclusiveLock))
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("could not lock it")));
		table_close(ArchiveStoreOpen(relid, NoLock), NoLock);
		ArchiveStoreDrop(relid);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		dropped = true;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		ereport(WARNING,
				(errmsg("archive table %u was purged but not dropped: %s",
						relid, edata->message),
				 errhint("A later purge drops it once nothing else holds or depends on it.")));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return dropped;
}

/*
 * PurgeLeaves
 *		Forget the kept leaves of the purged chunks of run_id, and drop
 *		each kept table no chunk records any more (a revert records the
 *		table of the chunk it reverts under its own run too: the table
 *		then stays until that record is purged as well).
 */
static void
PurgeLeaves(int64 run_id)
{
	CatalogArgs args;
	List	   *gone = NIL;
	ListCell   *lc;
	int			i;

	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(run_id), false);
	CatalogExecArgs("DELETE FROM backfill.archived_leaves l"
					" USING backfill.archived_chunks k"
					" WHERE l.run_id OPERATOR(pg_catalog.=) $1"
					" AND k.run_id OPERATOR(pg_catalog.=) l.run_id"
					" AND k.chunk_no OPERATOR(pg_catalog.=) l.chunk_no"
					" AND k.purged_at IS NOT NULL"
					" RETURNING l.kept::pg_catalog.oid",
					&args, SPI_OK_DELETE_RETURNING);
	for (i = 0; i < (int) SPI_processed; i++)
	{
		bool		isnull;

		gone = list_append_unique_oid(gone, SpiGetOid(i, 1, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	foreach(lc, gone)
	{
		Oid			kept = lfirst_oid(lc);
		Oid			argtypes[1] = {REGCLASSOID};
		Datum		values[1];

		CHECK_FOR_INTERRUPTS();
		values[0] = ObjectIdGetDatum(kept);
		if (CatalogExists("SELECT FROM backfill.archived_leaves"
						  " WHERE kept OPERATOR(pg_catalog.=) $1",
						  1, argtypes, values) ||
			get_rel_name(kept) == NULL)
			continue;
		(void) TryDropArchive(kept);
	}
}

/*
 * ForgetArchive
 *		Remove archive table "archive" from the catalog: its row of
 *		backfill.archives, and the chunks' references to it.
 */
static void
ForgetArchive(Oid archive)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];

	values[0] = ObjectIdGetDatum(archive);
	CatalogExec("UPDATE backfill.archived_chunks SET archive = NULL"
				" WHERE archive OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_UPDATE);
	CatalogExec("DELETE FROM backfill.archives"
				" WHERE archive OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_DELETE);
}

/*
 * DropEmptyArchive
 *		Drop archive table "archive" when no chunk it holds is left
 *		unpurged (a keeping chunk makes a new one when needed); the purged
 *		chunks that named it then name none.  So a role whose kept rows are
 *		all purged owns no archive table any more (DROP ROLE works).
 */
static void
DropEmptyArchive(Oid archive)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];

	values[0] = ObjectIdGetDatum(archive);
	if (CatalogExists("SELECT FROM backfill.archived_chunks"
					  " WHERE archive OPERATOR(pg_catalog.=) $1"
					  " AND purged_at IS NULL",
					  1, argtypes, values))
		return;
	if (get_rel_name(archive) == NULL || TryDropArchive(archive))
		ForgetArchive(archive);
}

/*
 * ForgetDroppedArchives
 *		Forget the archive tables that no longer exist (dropped with their
 *		owner's objects, DROP OWNED): their kept rows are gone, and revert
 *		and diff of their runs say so (OpenKeptTable, 42P01).
 */
static void
ForgetDroppedArchives(void)
{
	List	   *gone = NIL;
	ListCell   *lc;
	int			i;

	CatalogExec("SELECT archive::pg_catalog.oid FROM backfill.archives",
				0, NULL, NULL, NULL, SPI_OK_SELECT);
	for (i = 0; i < (int) SPI_processed; i++)
	{
		bool		isnull;
		Oid			archive = SpiGetOid(i, 1, &isnull);

		if (get_rel_name(archive) == NULL)
			gone = lappend_oid(gone, archive);
	}
	SPI_freetuptable(SPI_tuptable);
	foreach(lc, gone)
		ForgetArchive(lfirst_oid(lc));
}

/*
 * DropEmptyArchives
 *		DropEmptyArchive of every archive table no unpurged chunk names
 *		(one a purge could not drop before is tried again).
 */
static void
DropEmptyArchives(void)
{
	List	   *empty = NIL;
	ListCell   *lc;
	int			i;

	CatalogExec("SELECT a.archive::pg_catalog.oid FROM backfill.archives a"
				" WHERE NOT EXISTS (SELECT FROM backfill.archived_chunks k"
				"  WHERE k.archive OPERATOR(pg_catalog.=) a.archive"
				"  AND k.purged_at IS NULL)",
				0, NULL, NULL, NULL, SPI_OK_SELECT);
	for (i = 0; i < (int) SPI_processed; i++)
	{
		bool		isnull;

		empty = lappend_oid(empty, SpiGetOid(i, 1, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	foreach(lc, empty)
	{
		CHECK_FOR_INTERRUPTS();
		DropEmptyArchive(lfirst_oid(lc));
	}
}

/*
 * PurgeRun
 *		ArchivePurge for one run of target: under the target lock in
 *		EXCLUSIVE (chunks of the target wait, and a revert never reads
 *		half), mark its chunks kept before now() - older_than (NULL: past
 *		their keep_until) purged, delete their rows from their archive
 *		tables (from C; a table someone holds keeps them until it is
 *		dropped), and forget its kept leaves (PurgeLeaves).  Returns the
 *		number of chunks purged.
 */
static int64
PurgeRun(int64 run_id, Oid target, Interval *older_than)
{
	LOCKTAG		tag;
	CatalogArgs args;
	int			nchunks;
	int32	   *chunk_nos;
	Oid		   *archives;
	int			c;

	/* chunks of the target wait, and a revert never reads half */
	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_TARGET, (uint32) target);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);

	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(run_id), false);
	CatalogArg(&args, INTERVALOID, PointerGetDatum(older_than),
			   older_than == NULL);
	CatalogExecArgs("UPDATE backfill.archived_chunks"
					" SET purged_at = pg_catalog.now()"
					" WHERE run_id OPERATOR(pg_catalog.=) $1"
					" AND purged_at IS NULL"
					" AND CASE WHEN $2 IS NULL"
					"  THEN keep_until OPERATOR(pg_catalog.<=) pg_catalog.now()"
					"  ELSE kept_at OPERATOR(pg_catalog.<=)"
					"   (pg_catalog.now() OPERATOR(pg_catalog.-) $2) END"
					" RETURNING chunk_no, archive::pg_catalog.oid",
					&args, SPI_OK_UPDATE_RETURNING);
	nchunks = (int) SPI_processed;
	chunk_nos = palloc(sizeof(int32) * Max(nchunks, 1));
	archives = palloc(sizeof(Oid) * Max(nchunks, 1));
	for (c = 0; c < nchunks; c++)
	{
		bool		isnull;

		chunk_nos[c] = SpiGetInt32(c, 1, &isnull);
		archives[c] = SpiGetOid(c, 2, &isnull);
		if (isnull)
			archives[c] = InvalidOid;
	}
	SPI_freetuptable(SPI_tuptable);

	/* the purged chunks' rows leave their archive tables, from C */
	for (c = 0; c < nchunks; c++)
	{
		Relation	rel;

		CHECK_FOR_INTERRUPTS();
		if (!OidIsValid(archives[c]) || get_rel_name(archives[c]) == NULL)
			continue;
		/* held by someone: the rows go when the table is dropped */
		if (!ConditionalLockRelationOid(archives[c], RowExclusiveLock))
			continue;
		rel = ArchiveStoreOpen(archives[c], NoLock);
		(void) ArchiveStoreDelete(rel, run_id, chunk_nos[c]);
		table_close(rel, NoLock);
	}
	PurgeLeaves(run_id);
	return nchunks;
}

/*
 * ArchivePurge
 *		See backfill.h.
 */
int64
ArchivePurge(Oid target, Interval *older_than, bool only_permitted)
{
	MemoryContext loop_cxt;
	MemoryContext outer = CurrentMemoryContext;
	int64		purged = 0;
	int			nruns;
	int64	   *run_ids;
	Oid		   *targets;
	Oid		   *planners;
	int			r;
	CatalogArgs args;

	SpiConnect();
	ForgetDroppedArchives();

	/*
	 * The runs with chunks to purge: kept before now() - older_than, or
	 * past their keep_until when older_than is NULL.
	 */
	CatalogArgsInit(&args);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(target),
			   !OidIsValid(target));
	CatalogArg(&args, INTERVALOID, PointerGetDatum(older_than),
			   older_than == NULL);
	CatalogExecArgs("SELECT DISTINCT k.run_id, k.target::pg_catalog.oid,"
					" r.created_by_oid::pg_catalog.oid"
					" FROM backfill.archived_chunks k"
					" JOIN backfill.runs r ON r.run_id OPERATOR(pg_catalog.=) k.run_id"
					" WHERE k.purged_at IS NULL"
					" AND ($1 IS NULL OR k.target OPERATOR(pg_catalog.=) $1)"
					" AND CASE WHEN $2 IS NULL"
					"  THEN k.keep_until OPERATOR(pg_catalog.<=) pg_catalog.now()"
					"  ELSE k.kept_at OPERATOR(pg_catalog.<=)"
					"   (pg_catalog.now() OPERATOR(pg_catalog.-) $2) END"
					" ORDER BY k.run_id",
					&args, SPI_OK_SELECT);
	nruns = (int) SPI_processed;
	run_ids = MemoryContextAlloc(outer, sizeof(int64) * Max(nruns, 1));
	targets = MemoryContextAlloc(outer, sizeof(Oid) * Max(nruns, 1));
	planners = MemoryContextAlloc(outer, sizeof(Oid) * Max(nruns, 1));
	for (r = 0; r < nruns; r++)
	{
		bool		isnull;

		run_ids[r] = SpiGetInt64(r, 1, &isnull);
		targets[r] = SpiGetOid(r, 2, &isnull);
		planners[r] = SpiGetOid(r, 3, &isnull);
	}
	SPI_freetuptable(SPI_tuptable);

	loop_cxt = AllocSetContextCreate(CurrentMemoryContext, "backfill purge",
									 ALLOCSET_DEFAULT_SIZES);
	for (r = 0; r < nruns; r++)
	{
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		if (only_permitted && !HasRunPermission(planners[r]))
			continue;
		old = MemoryContextSwitchTo(loop_cxt);
		purged += PurgeRun(run_ids[r], targets[r], older_than);
		MemoryContextSwitchTo(old);
		MemoryContextReset(loop_cxt);
	}
	MemoryContextDelete(loop_cxt);
	DropEmptyArchives();
	SpiFinish();
	return purged;
}
