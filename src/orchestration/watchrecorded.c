/*-------------------------------------------------------------------------
 *
 * watchrecorded.c
 *	  Changed regions: a chunk is recorded once until a build consumes it.
 *	  Before the watch triggers append a row of backfill.changed_regions,
 *	  they look for a row of the same target, chunk and source that
 *	  another transaction committed and no build has consumed yet
 *	  (KeepUnrecorded).  That row already says everything a stale plan
 *	  reads (the chunk, its source, and its earliest change: changed_at),
 *	  so the writer appends nothing, and a target's log grows with the
 *	  chunks written into, not with the transactions that wrote them.
 *
 * Leaving the row out is safe only if no build consumes the row found
 * before it can see the writer's commit.  So the writer first takes the
 * target's RECORDED lock in RowExclusiveLock, without waiting, and looks
 * with a snapshot taken after it: a build that committed before is seen
 * (its consumption with it).  A build that consumes logged changes takes
 * the lock in ShareLock first (ChunkLockWatermark, engine/watchhook.c),
 * so it waits for every writer that left its row out,
 * then consumes and reads its source with later snapshots, which see
 * those writers' rows.  A writer that finds the lock held or awaited in
 * ShareLock appends its row as before: writers never wait for a build.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "storage/lmgr.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "backfill.h"

/* columns of backfill.changed_regions (30_changed_regions.sql) */
#define RECORDED_TARGET		1
#define RECORDED_START		2
#define RECORDED_END		3
#define RECORDED_SOURCE		5

/*
 * RecordedIndex
 *		The index changed_regions_target_idx of schema nsp when it is a
 *		valid btree of relid (backfill.changed_regions) whose first two
 *		columns are target and chunk_start,
 *		without expressions or predicate; else InvalidOid (and no row is
 *		left out).
 */
static Oid
RecordedIndex(Oid nsp, Oid relid)
{
	Oid			index = get_relname_relid("changed_regions_target_idx", nsp);
	HeapTuple	tup;
	Form_pg_index form;
	bool		usable;

	if (!OidIsValid(index) || get_rel_relkind(index) != RELKIND_INDEX)
		return InvalidOid;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(index));
	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	usable = ((Form_pg_class) GETSTRUCT(tup))->relam == BTREE_AM_OID;
	ReleaseSysCache(tup);
	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index));
	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	form = (Form_pg_index) GETSTRUCT(tup);
	usable = usable && form->indrelid == relid && form->indisvalid &&
		form->indnkeyatts >= 2 &&
		form->indkey.values[0] == RECORDED_TARGET &&
		form->indkey.values[1] == RECORDED_START &&
		heap_attisnull(tup, Anum_pg_index_indexprs, NULL) &&
		heap_attisnull(tup, Anum_pg_index_indpred, NULL);
	ReleaseSysCache(tup);
	return usable ? index : InvalidOid;
}

/*
 * RecordedByOthers
 *		Whether snap sees a row of rel (backfill.changed_regions, through
 *		its index) for chunk [start, end) of target and source (InvalidOid:
 *		none) written by another transaction.  A row of this transaction
 *		does not count: its subtransaction may still roll back, and the
 *		transaction's own chunks are remembered in memory anyway.
 */
static bool
RecordedByOthers(Relation rel, Oid index, Snapshot snap, Datum target,
				 Datum start, Datum end, Datum source)
{
	TupleDesc	desc = RelationGetDescr(rel);
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	ScanKeyInit(&keys[0], RECORDED_TARGET, BTEqualStrategyNumber, F_OIDEQ,
				target);
	ScanKeyInit(&keys[1], RECORDED_START, BTEqualStrategyNumber,
				F_TIMESTAMPTZ_EQ, start);
	scan = systable_beginscan(rel, index, true, snap, 2, keys);
	while (!found && (tup = systable_getnext(scan)) != NULL)
	{
		bool		end_null;
		bool		source_null;
		Datum		e = heap_getattr(tup, RECORDED_END, desc, &end_null);
		Datum		s = heap_getattr(tup, RECORDED_SOURCE, desc, &source_null);

		if (TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tup->t_data)))
			continue;
		found = !end_null &&
			DatumGetTimestampTz(e) == DatumGetTimestampTz(end) &&
			(source_null ? !OidIsValid(DatumGetObjectId(source)) :
			 DatumGetObjectId(s) == DatumGetObjectId(source));
	}
	systable_endscan(scan);
	return found;
}

/*
 * MayLeaveOut
 *		Whether this transaction may leave out rows of target's chunks
 *		found recorded: it holds, or now takes without waiting, the
 *		target's RECORDED lock in RowExclusiveLock, so that no build
 *		consumes them before this transaction ends.  False when a build
 *		holds or awaits it in ShareLock.
 */
static bool
MayLeaveOut(Oid target)
{
	LOCKTAG		tag;

	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_RECORDED, (uint32) target);
	return LockAcquire(&tag, RowExclusiveLock, false, true) !=
		LOCKACQUIRE_NOT_AVAIL;
}

/*
 * KeepUnrecorded
 *		See backfill.h.  keep[i] says whether row i (target, chunk start
 *		and end, source) must be appended: false for a chunk that another
 *		transaction recorded (committed, not consumed), once the target's
 *		RECORDED lock is held.  Returns how many are kept.
 */
int
KeepUnrecorded(int m, const Datum *targets, const Datum *starts,
			   const Datum *ends, const Datum *sources, bool *keep)
{
	Oid			nsp = get_namespace_oid("backfill", false);
	Oid			relid = get_relname_relid("changed_regions", nsp);
	Oid			index;
	Relation	rel;
	Snapshot	snap = NULL;
	int			kept = m;
	int			i;

	for (i = 0; i < m; i++)
		keep[i] = true;
	if (!OidIsValid(relid) || !OidIsValid(index = RecordedIndex(nsp, relid)))
		return kept;
	rel = table_open(relid, AccessShareLock);
	for (i = 0; i < m; i++)
	{
		Oid			target = DatumGetObjectId(targets[i]);

		if (!MayLeaveOut(target))
			continue;
		/* taken after the lock: a build that consumed before is seen */
		if (snap == NULL)
			snap = RegisterSnapshot(GetLatestSnapshot());
		if (RecordedByOthers(rel, index, snap, targets[i], starts[i],
							 ends[i], sources[i]))
		{
			keep[i] = false;
			kept--;
		}
	}
	if (snap != NULL)
		UnregisterSnapshot(snap);
	table_close(rel, NoLock);
	return kept;
}
