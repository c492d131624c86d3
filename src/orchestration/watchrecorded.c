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
 * with a snapshot taken after it (after the locks of every target it
 * looks for: one taken between two of them could miss the commit of a
 * build of the second): a build that committed before is seen (its
 * consumption with it).  It keeps the lock until it ends only where it
 * left a row out.  A build that consumes logged changes takes the lock in
 * ShareLock first (ChunkLockWatermark, engine/watchhook.c), so it waits
 * for every writer that left its row out, then consumes and reads its
 * source with later snapshots, which see those writers' rows.  A writer
 * that finds the lock held or awaited in ShareLock appends its row as
 * before: writers never wait for a build.
 *
 * The row found is remembered by the backend (chunk, source, and where
 * the row lies).  Every row of the log deleted or changed (by a build
 * consuming its range, unregister, a superuser's DELETE, a subscription's
 * apply worker) fires the table's AFTER row trigger
 * backfill_recorded_signal, which sends a relcache invalidation of the
 * table at commit, as TRUNCATE's new file does; it empties every
 * backend's memory (RecordedCallback).
 * So a remembered row is still there while no such invalidation has come
 * in: the next transaction into that chunk takes the RECORDED lock, takes
 * in the invalidations (AcceptInvalidationMessages), and leaves its row
 * out without opening the log (issue 30, item 5: a transaction into a
 * built day paid a snapshot, the table and a heap fetch for it).  A build
 * that consumed the row committed, and so queued its invalidation, before
 * it released the RECORDED lock the writer now holds.  Where that trigger
 * is missing or disabled (RecordedSignalled: an earlier build of 0.2.0),
 * a remembered row is read again under a new snapshot, as before.
 *
 * The recorded chunks of a range, as a stale plan reads them
 * (LoadChangedRegions, for onlychunks.c), are read here too.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
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

/* The trigger that tells of every change of the log but an append. */
#define RECORDED_SIGNAL_TRIGGER	"backfill_recorded_signal"
#define RECORDED_SIGNAL_FUNCTION	"_recorded_signal"

/* A chunk found recorded by another transaction, and where its row lies. */
typedef struct RecordedKey
{
	Oid			target;
	Oid			source;			/* InvalidOid: none */
	TimestampTz start;
} RecordedKey;

typedef struct RecordedEntry
{
	RecordedKey key;
	TimestampTz end;
	ItemPointerData tid;		/* the row; SameRecord checks it is still it */
} RecordedEntry;

/* at most this many remembered; then they are forgotten and found again */
#define RECORDED_CACHE_MAX	1024

static HTAB *recorded = NULL;	/* in TopMemoryContext */
static Oid	recorded_rel = InvalidOid;	/* backfill.changed_regions */
static Oid	recorded_index = InvalidOid;	/* its (target, chunk_start) */
static bool recorded_stale = true;
static bool recorded_callback = false;
static bool recorded_signalled = false; /* RecordedSignalled */

/*
 * RecordedCallback
 *		Relcache invalidation callback: the table or its index changed or
 *		went (DROP EXTENSION), or everything is invalidated.  Only marks
 *		the cache stale; it is emptied at its next use.
 */
static void
RecordedCallback(Datum arg, Oid relid)
{
	if (!OidIsValid(relid) || relid == recorded_rel || relid == recorded_index)
		recorded_stale = true;
}

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
 * SameRecord
 *		Whether tup (a row of backfill.changed_regions, desc) records chunk
 *		[start, end) of target for source (InvalidOid: none) and was written
 *		by another transaction.  A row of this transaction does not count:
 *		its subtransaction may still roll back, and the transaction's own
 *		chunks are remembered in memory anyway.
 */
static bool
SameRecord(HeapTuple tup, TupleDesc desc, Datum target, Datum start,
		   Datum end, Datum source)
{
	bool		isnull[5];
	Datum		v[5];
	int			i;

	if (TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tup->t_data)))
		return false;
	for (i = 0; i < 5; i++)
		v[i] = heap_getattr(tup, i + 1, desc, &isnull[i]);
	return !isnull[RECORDED_TARGET - 1] && !isnull[RECORDED_START - 1] &&
		!isnull[RECORDED_END - 1] &&
		DatumGetObjectId(v[RECORDED_TARGET - 1]) == DatumGetObjectId(target) &&
		DatumGetTimestampTz(v[RECORDED_START - 1]) == DatumGetTimestampTz(start) &&
		DatumGetTimestampTz(v[RECORDED_END - 1]) == DatumGetTimestampTz(end) &&
		(isnull[RECORDED_SOURCE - 1] ? !OidIsValid(DatumGetObjectId(source)) :
		 DatumGetObjectId(v[RECORDED_SOURCE - 1]) == DatumGetObjectId(source));
}

/*
 * RecordedByOthers
 *		Whether snap sees a row of rel (backfill.changed_regions, through
 *		its index) for chunk [start, end) of target and source written by
 *		another transaction (SameRecord); *tid is where it lies.
 */
static bool
RecordedByOthers(Relation rel, Oid index, Snapshot snap, Datum target,
				 Datum start, Datum end, Datum source, ItemPointer tid)
{
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
		CHECK_FOR_INTERRUPTS();
		found = SameRecord(tup, RelationGetDescr(rel), target, start, end,
						   source);
		if (found)
			*tid = tup->t_self;
	}
	systable_endscan(scan);
	return found;
}

/*
 * StillRecorded
 *		Whether the row at tid of rel is, as snap sees it, the row of chunk
 *		[start, end) of target and source written by another transaction
 *		(the row remembered: RecordedByOthers found it, and no build has
 *		consumed it since).
 */
static bool
StillRecorded(Relation rel, Snapshot snap, ItemPointer tid, Datum target,
			  Datum start, Datum end, Datum source)
{
	HeapTupleData tuple;
	Buffer		buf;
	bool		same;

	if (ItemPointerGetBlockNumber(tid) >= RelationGetNumberOfBlocks(rel))
		return false;
	tuple.t_self = *tid;
	if (!heap_fetch(rel, snap, &tuple, &buf, false))
		return false;
	same = SameRecord(&tuple, RelationGetDescr(rel), target, start, end,
					  source);
	ReleaseBuffer(buf);
	return same;
}

/*
 * RecordedSignalled
 *		Whether rel (backfill.changed_regions of schema nsp) has the
 *		trigger that sends the invalidation a remembered row relies on:
 *		backfill_recorded_signal, an AFTER DELETE and UPDATE row trigger
 *		without WHEN clause nor column list (UPDATE OF
 *		fires for an UPDATE of those columns only) that fires always (also
 *		under session_replication_role = replica) and calls
 *		backfill._recorded_signal.  Disabling or dropping it invalidates
 *		rel, so it is looked for again.
 */
static bool
RecordedSignalled(Relation rel, Oid nsp)
{
	TriggerDesc *td = rel->trigdesc;
	int			i;

	for (i = 0; td != NULL && i < td->numtriggers; i++)
	{
		Trigger    *t = &td->triggers[i];
		char	   *fname;
		bool		ours;

		if (strcmp(t->tgname, RECORDED_SIGNAL_TRIGGER) != 0 ||
			t->tgenabled != TRIGGER_FIRES_ALWAYS || t->tgqual != NULL ||
			t->tgnattr != 0 ||
			!TRIGGER_FOR_ROW(t->tgtype) || !TRIGGER_FOR_AFTER(t->tgtype) ||
			!TRIGGER_FOR_DELETE(t->tgtype) || !TRIGGER_FOR_UPDATE(t->tgtype) ||
			get_func_namespace(t->tgfoid) != nsp)
			continue;
		fname = get_func_name(t->tgfoid);
		ours = fname != NULL && strcmp(fname, RECORDED_SIGNAL_FUNCTION) == 0;
		if (fname != NULL)
			pfree(fname);
		if (ours)
			return true;
	}
	return false;
}

/*
 * RecordedTable
 *		Find backfill.changed_regions, its index and its signal trigger
 *		again when the cache is stale (and forget the rows remembered);
 *		false when the table or a usable index is missing.
 */
static bool
RecordedTable(void)
{
	HASHCTL		ctl;
	Oid			nsp;

	if (!recorded_callback)
	{
		CacheRegisterRelcacheCallback(RecordedCallback, (Datum) 0);
		recorded_callback = true;
	}
	if (!recorded_stale && recorded != NULL)
		return OidIsValid(recorded_index);

	/*
	 * Cleared before anything that may fail (or take an invalidation,
	 * which marks the cache stale again): an error on the way leaves no
	 * cache, and the next call starts over.
	 */
	recorded_stale = false;
	if (recorded != NULL)
		hash_destroy(recorded);
	recorded = NULL;
	recorded_rel = InvalidOid;
	recorded_index = InvalidOid;
	recorded_signalled = false;
	nsp = get_namespace_oid("backfill", false);
	recorded_rel = get_relname_relid("changed_regions", nsp);
	recorded_index = OidIsValid(recorded_rel) ?
		RecordedIndex(nsp, recorded_rel) : InvalidOid;
	if (OidIsValid(recorded_index))
	{
		Relation	rel = table_open(recorded_rel, AccessShareLock);

		recorded_signalled = RecordedSignalled(rel, nsp);
		table_close(rel, AccessShareLock);
	}
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(RecordedKey);
	ctl.entrysize = sizeof(RecordedEntry);
	ctl.hcxt = TopMemoryContext;
	recorded = hash_create("backfill recorded chunks", 64, &ctl,
						   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	return OidIsValid(recorded_index);
}

/*
 * The RECORDED lock of one target of a KeepUnrecorded call: whether rows
 * may be left out (the lock held), whether this call took it, whether it
 * left a row out.
 */
typedef struct TargetLock
{
	Oid			target;
	bool		may;
	bool		taken;
	bool		left_out;
} TargetLock;

/*
 * MayLeaveOut
 *		Whether this transaction may leave out rows of tl's target's chunks
 *		found recorded: it holds, or now takes without waiting, the
 *		target's RECORDED lock in RowExclusiveLock, owned by the
 *		(sub)transaction (XactLockAcquire), so that no build consumes them
 *		before this transaction ends (tl->taken: taken now).  False when a
 *		build holds or awaits it in ShareLock.
 */
static bool
MayLeaveOut(TargetLock *tl)
{
	LOCKTAG		tag;
	LockAcquireResult r;

	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_RECORDED, (uint32) tl->target);
	r = XactLockAcquire(&tag, RowExclusiveLock, true);
	tl->taken = r == LOCKACQUIRE_OK;
	return r != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * NothingLeftOut
 *		Give back the RECORDED lock of target that MayLeaveOut has just
 *		taken when no row was left out after all: builds wait only for the
 *		writers that left a row out.
 */
static void
NothingLeftOut(Oid target)
{
	LOCKTAG		tag;

	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_RECORDED, (uint32) target);
	XactLockRelease(&tag, RowExclusiveLock);
}

/*
 * RecordedKeyOf
 *		The key of the remembered row of target's chunk from start, for
 *		source.
 */
static inline RecordedKey
RecordedKeyOf(Datum target, Datum start, Datum source)
{
	RecordedKey key;

	memset(&key, 0, sizeof(key));
	key.target = DatumGetObjectId(target);
	key.source = DatumGetObjectId(source);
	key.start = DatumGetTimestampTz(start);
	return key;
}

/*
 * RememberedRow
 *		The entry of the row remembered for row i's chunk and source, when
 *		its end is the same; else NULL.
 */
static RecordedEntry *
RememberedRow(Datum target, Datum start, Datum end, Datum source)
{
	RecordedKey key = RecordedKeyOf(target, start, source);
	RecordedEntry *e;

	e = (RecordedEntry *) hash_search(recorded, &key, HASH_FIND, NULL);
	if (e != NULL && e->end != DatumGetTimestampTz(end))
		return NULL;
	return e;
}

/*
 * Remember
 *		Remember the row at tid for row i's chunk and source (or forget the
 *		one remembered, when tid is NULL).
 */
static void
Remember(Datum target, Datum start, Datum end, Datum source, ItemPointer tid)
{
	RecordedKey key = RecordedKeyOf(target, start, source);
	RecordedEntry *e;

	if (tid == NULL)
	{
		(void) hash_search(recorded, &key, HASH_REMOVE, NULL);
		return;
	}
	if (hash_get_num_entries(recorded) >= RECORDED_CACHE_MAX)
		recorded_stale = true;	/* emptied at the next call */
	e = (RecordedEntry *) hash_search(recorded, &key, HASH_ENTER, NULL);
	e->end = DatumGetTimestampTz(end);
	e->tid = *tid;
}

/*
 * KeepUnrecorded
 *		See backfill.h.  keep[i] says whether row i (target, chunk start
 *		and end, source) must be appended: false for a chunk that another
 *		transaction recorded (committed, not consumed), once the target's
 *		RECORDED lock is held.  Returns how many are kept.  A row
 *		remembered, with no invalidation of the log since, is taken as
 *		it is; the others are looked for under one snapshot.
 */
int
KeepUnrecorded(int m, const Datum *targets, const Datum *starts,
			   const Datum *ends, const Datum *sources, bool *keep)
{
	Relation	rel;
	Snapshot	snap;
	TargetLock *locks = palloc(sizeof(TargetLock) * Max(m, 1));
	int		   *which = palloc(sizeof(int) * Max(m, 1));
	int			nlocks = 0;
	bool		any = false;
	int			kept = m;
	int			pending = 0;
	int			i;
	int			j;

	for (i = 0; i < m; i++)
		keep[i] = true;

	/*
	 * A SERIALIZABLE writer appends its rows as before: reading the log
	 * would take predicate locks that a build's consumption conflicts with
	 * (serialization failures the writer never had).
	 */
	if (IsolationIsSerializable() || !RecordedTable())
		return kept;

	/*
	 * Every target's lock first, once per target (the targets watching the
	 * written sources: a few), then the snapshot: a snapshot taken after
	 * the first target's lock only could predate the commit of a build of
	 * a second target that consumed its row before this transaction took
	 * that target's lock, and the row it still shows would be left out
	 * for a change that build did not read (the attack review's case).
	 */
	for (i = 0; i < m; i++)
	{
		Oid			target = DatumGetObjectId(targets[i]);

		CHECK_FOR_INTERRUPTS();
		for (j = 0; j < nlocks && locks[j].target != target; j++)
			;
		which[i] = j;
		if (j < nlocks)
			continue;
		locks[nlocks].target = target;
		locks[nlocks].left_out = false;
		locks[nlocks].may = MayLeaveOut(&locks[nlocks]);
		any |= locks[nlocks].may;
		nlocks++;
	}
	if (!any)
		return kept;

	/*
	 * The same holds for the rows remembered: the invalidations taken in
	 * after the locks include those of every build that consumed before
	 * them (it sent its own before it released its ShareLock).  The
	 * table's own may come in too (it went, or its trigger changed): then
	 * nothing is left out by this call.
	 */
	AcceptInvalidationMessages();
	if (recorded_stale && !RecordedTable())
		any = false;
	for (i = 0; any && i < m; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (!locks[which[i]].may)
			continue;
		if (recorded_signalled &&
			RememberedRow(targets[i], starts[i], ends[i], sources[i]) != NULL)
		{
			keep[i] = false;
			locks[which[i]].left_out = true;
			kept--;
		}
		else
			pending++;
	}
	if (pending > 0)
	{
		snap = RegisterSnapshot(GetLatestSnapshot());
		rel = table_open(recorded_rel, AccessShareLock);
		for (i = 0; i < m; i++)
		{
			RecordedEntry *e;
			ItemPointerData tid;

			CHECK_FOR_INTERRUPTS();
			if (!locks[which[i]].may || !keep[i])
				continue;
			e = RememberedRow(targets[i], starts[i], ends[i], sources[i]);
			if (e != NULL &&
				StillRecorded(rel, snap, &e->tid, targets[i], starts[i],
							  ends[i], sources[i]))
				keep[i] = false;
			else if (RecordedByOthers(rel, recorded_index, snap, targets[i],
									  starts[i], ends[i], sources[i], &tid))
			{
				keep[i] = false;
				Remember(targets[i], starts[i], ends[i], sources[i], &tid);
			}
			else
				Remember(targets[i], starts[i], ends[i], sources[i], NULL);
			if (!keep[i])
			{
				locks[which[i]].left_out = true;
				kept--;
			}
		}
		UnregisterSnapshot(snap);
		table_close(rel, NoLock);
	}

	/* the locks taken now for targets of which nothing was left out */
	for (j = 0; j < nlocks; j++)
	{
		if (locks[j].taken && !locks[j].left_out)
			NothingLeftOut(locks[j].target);
	}
	return kept;
}

/* ----------------------------------------------------------------
 *		reading the log
 * ----------------------------------------------------------------
 */

/*
 * LoadChangedRegions
 *		See backfill.h.
 */
int
LoadChangedRegions(Oid target, TimestampTz lo, TimestampTz hi,
				   ChangedRegion **out)
{
	Oid			argtypes[3] = {REGCLASSOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[3];
	int			n;
	int			k;

	values[0] = ObjectIdGetDatum(target);
	values[1] = TimestampTzGetDatum(lo);
	values[2] = TimestampTzGetDatum(hi);
	CatalogExec("SELECT chunk_start, chunk_end, pg_catalog.min(changed_at)"
				" FROM backfill.changed_regions"
				" WHERE target OPERATOR(pg_catalog.=) $1"
				" AND chunk_start OPERATOR(pg_catalog.<) $3"
				" AND chunk_end OPERATOR(pg_catalog.>) $2"
				" GROUP BY 1, 2 ORDER BY 1, 2",
				3, argtypes, values, NULL, SPI_OK_SELECT);
	n = (int) SPI_processed;
	*out = palloc(sizeof(ChangedRegion) * Max(n, 1));
	for (k = 0; k < n; k++)
	{
		bool		isnull;

		CHECK_FOR_INTERRUPTS();
		(*out)[k].lo = DatumGetTimestampTz(SpiGetDatumCopy(k, 1, &isnull));
		(*out)[k].hi = DatumGetTimestampTz(SpiGetDatumCopy(k, 2, &isnull));
		(*out)[k].changed_at = DatumGetTimestampTz(SpiGetDatumCopy(k, 3, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	return n;
}
