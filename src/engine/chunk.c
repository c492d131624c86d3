/*-------------------------------------------------------------------------
 *
 * chunk.c
 *	  The chunk engine: pick a run's next chunk, execute it in an internal
 *	  subtransaction as the definition's author (lock, replace, ledger
 *	  gate), record its outcome in the same transaction, and report it;
 *	  and preview's engine part (PreviewRange), the same replacement always
 *	  rolled back.
 *
 * Each chunk applies the run's recorded TimeZone and search_path, takes
 * the target's locks under backfill.lock_timeout (a timeout defers the
 * chunk instead of failing it), and is bounded by backfill.chunk_timeout.
 * When the chunk fails, the subtransaction is rolled back and the failure
 * (with the error's SQLSTATE, message, detail and hint) is recorded
 * instead, in the transaction the run loop commits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timeout.h"

#include "backfill.h"

/* Where a chunk was when an error interrupted it. */
typedef enum ChunkPhase
{
	PHASE_SETUP,
	PHASE_LOCK,
	PHASE_WORK
} ChunkPhase;

/*
 * The lock modes of a parallel chunk's worker that is in no lock group (on
 * a Citus coordinator: SetChunkLocksShared).
 */
static bool chunk_locks_shared = false;

/* chunk_timeout: one user timeout per backend, registered lazily */
static TimeoutId chunk_timeout_id = MAX_TIMEOUTS;
static volatile sig_atomic_t chunk_timed_out = false;

/*
 * SetChunkLocksShared
 *		See backfill.h.  Called once by a parallel chunk's background
 *		worker that is in no lock group (on a Citus coordinator), before
 *		its chunk: the chunks of one call then take their target's locks
 *		in modes that do not conflict with each other (ChunkLockTarget).
 */
void
SetChunkLocksShared(bool shared)
{
	chunk_locks_shared = shared;
}

/*
 * ChunkLockTarget
 *		Take the locks a chunk holds on its target until it commits: the
 *		transaction-level lock (TARGET, relid) in ExclusiveLock
 *		(backfill.lock_target takes it in ShareLock, so the daily job and a
 *		chunk exclude each other), then SHARE ROW EXCLUSIVE on the table,
 *		or, for a partitioned table, on the leaves that can hold rows of
 *		[lo, hi) (the parents in ROW EXCLUSIVE), so writers to the chunk's
 *		rows wait while readers, and writers to other partitions, do not;
 *		the leaves are locked in ACCESS EXCLUSIVE right away when the chunk
 *		will truncate or swap them ("strategy", see partition.c).
 *		With shared chunk locks (a parallel worker on a Citus coordinator,
 *		in no lock group) the target lock is taken in RowExclusiveLock,
 *		which still excludes lock_target (ShareLock) and a chunk executed
 *		in a session (ExclusiveLock) but not the other chunks of the call,
 *		and the table (or leaves) in ROW EXCLUSIVE, the lock of the chunk's
 *		own DELETE and INSERT: writers that do not take lock_target do not
 *		wait for such a chunk (doc/parallel.md, Citus).
 *		Both waits are bounded by lock_timeout, which the caller has set.
 *		Privileges were checked by the caller (CheckTargetPrivileges).
 */
static void
ChunkLockTarget(Oid target, const char *time_column,
				TimestampTz lo, TimestampTz hi, ReplaceStrategy strategy)
{
	LOCKTAG		tag;

	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_TARGET, (uint32) target);
	(void) LockAcquire(&tag,
					   chunk_locks_shared ? RowExclusiveLock : ExclusiveLock,
					   false, false);
	LockAffectedPartitions(target, time_column, lo, hi, strategy,
						   chunk_locks_shared ? RowExclusiveLock :
						   ShareRowExclusiveLock);
}

/*
 * ChunkLockWatermark
 *		See backfill.h.  A chunk whose end passes the target's watermark (or the first chunk
 *		ever built) will move it: it waits, within lock_timeout, for the
 *		writers to watched sources that may have left rows unlogged because
 *		they were beyond the old watermark (they hold the watch lock in
 *		RowExclusiveLock until they commit), and holds the lock in ShareLock
 *		until it commits.  Writers do not wait for it: one that finds the
 *		lock held or awaited in ShareLock takes RowShareLock, which does not
 *		conflict with it, and logs all its rows (orchestration/watchlog.c).
 *		So a row is either committed before the chunk reads its source, or
 *		logged, and a writer of the target alone cannot make the writers
 *		of its sources wait for its chunk's source query.  A chunk behind
 *		the watermark takes nothing: writes into it are always logged.
 *		Called after the target lock, so no other chunk of the target moves
 *		the watermark meanwhile, but the chunks of one parallel call (the
 *		watermark moves by GREATEST; ShareLock does not conflict with
 *		itself, with shared chunk locks on Citus too).
 */
void
ChunkLockWatermark(Oid target, TimestampTz hi)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	bool		isnull = true;
	TimestampTz watermark = 0;
	LOCKTAG		tag;

	values[0] = ObjectIdGetDatum(target);
	CatalogExec("SELECT watermark FROM backfill.targets"
				" WHERE target OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
		watermark = DatumGetTimestampTz(SpiGetDatumCopy(0, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	if (!isnull && hi <= watermark)
		return;
	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_WATCH, (uint32) target);
	(void) LockAcquire(&tag, ShareLock, false, false);
}

/*
 * ChunkConsumeChanges
 *		See backfill.h.  Delete the logged changes of the target in [lo, hi) that this
 *		statement's snapshot sees, before the chunk reads its source (a
 *		later snapshot): a change committed before it is in the chunk's
 *		rows, one committed after it stays logged.  A logged region that
 *		sticks out of the chunk (another grid: a run with another chunk
 *		size or TimeZone) keeps the parts outside [lo, hi), with their
 *		changed_at.
 */
void
ChunkConsumeChanges(Oid target, TimestampTz lo, TimestampTz hi)
{
	Oid			argtypes[3] = {REGCLASSOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[3];

	values[0] = ObjectIdGetDatum(target);
	values[1] = TimestampTzGetDatum(lo);
	values[2] = TimestampTzGetDatum(hi);
	CatalogExec("WITH d AS (DELETE FROM backfill.changed_regions"
				"  WHERE target OPERATOR(pg_catalog.=) $1"
				"  AND chunk_start OPERATOR(pg_catalog.<) $3"
				"  AND chunk_end OPERATOR(pg_catalog.>) $2"
				"  RETURNING target, chunk_start, chunk_end, changed_at, source)"
				" INSERT INTO backfill.changed_regions"
				" (target, chunk_start, chunk_end, changed_at, source)"
				" SELECT target, chunk_start, $2, changed_at, source FROM d"
				"  WHERE chunk_start OPERATOR(pg_catalog.<) $2"
				" UNION ALL"
				" SELECT target, $3, chunk_end, changed_at, source FROM d"
				"  WHERE chunk_end OPERATOR(pg_catalog.>) $3",
				3, argtypes, values, NULL, SPI_OK_INSERT);
}

/*
 * ChunkAdvanceWatermark
 *		See backfill.h: run "record", the statement that records a chunk
 *		that worked (an UPDATE of backfill.chunks whose parameters are in
 *		args), and move target's watermark to the chunk's end when that is
 *		newer, in one statement: the record in a WITH that always runs to
 *		completion, then the newest chunk end any build has covered, moved
 *		only forward (args gets the target and the end as its next two
 *		parameters).  When the watermark moved, every backend's cached
 *		watermarks (watchlog.c) are read again after the commit.  Caller
 *		is connected to SPI.
 */
void
ChunkAdvanceWatermark(const char *record, CatalogArgs *args, Oid target,
					  TimestampTz end)
{
	int			target_param;
	int			end_param;

	target_param = CatalogArg(args, REGCLASSOID, ObjectIdGetDatum(target),
							  false);
	end_param = CatalogArg(args, TIMESTAMPTZOID, TimestampTzGetDatum(end),
						   false);
	CatalogExecArgs(psprintf("WITH c AS (%s)"
							 " UPDATE backfill.targets"
							 " SET watermark = GREATEST(watermark, $%d)"
							 " WHERE target OPERATOR(pg_catalog.=) $%d"
							 " AND (watermark IS NULL OR watermark OPERATOR(pg_catalog.<) $%d)",
							 record, end_param, target_param, end_param),
					args, SPI_OK_UPDATE);
	/* writers' cached watermarks (watchlog.c) are read again */
	if (SPI_processed > 0)
		InvalidateWatchCache();
}

/*
 * ChunkTimeoutHandler
 *		Timeout handler of backfill.chunk_timeout: note that the chunk
 *		timed out and ask for a query cancel, which the chunk's next
 *		interrupt check turns into an error.
 */
static void
ChunkTimeoutHandler(void)
{
	chunk_timed_out = true;
	InterruptPending = true;
	QueryCancelPending = true;
	SetLatch(MyLatch);
}

/*
 * ArmChunkTimeout / DisarmChunkTimeout
 *		Start and stop the per-chunk timer (statement_timeout would cover
 *		the whole CALL, across its commits).  The timeout is registered once
 *		per backend, on first use.
 */
static void
ArmChunkTimeout(void)
{
	chunk_timed_out = false;
	if (backfill_chunk_timeout <= 0)
		return;
	if (chunk_timeout_id == MAX_TIMEOUTS)
		chunk_timeout_id = RegisterTimeout(USER_TIMEOUT, ChunkTimeoutHandler);
	enable_timeout_after(chunk_timeout_id, backfill_chunk_timeout);
}

static void
DisarmChunkTimeout(void)
{
	if (chunk_timeout_id != MAX_TIMEOUTS)
		disable_timeout(chunk_timeout_id, false);
}

/*
 * SetChunkOption
 *		Set a setting for the rest of the chunk (popped at its end).
 */
static void
SetChunkOption(const char *name, const char *value)
{
	(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

/*
 * Predicates of the chunks still to execute; spelled exactly as the
 * partial indexes chunks_todo_idx and chunks_no_source_todo_idx (20_runs.sql)
 * so that the planner can prove them and never rescan the done chunks.
 */
#define TODO_PENDING \
	"status OPERATOR(pg_catalog.=) ANY ('{pending,failed}'::pg_catalog.text[])"
#define TODO_NO_SOURCE \
	"status OPERATOR(pg_catalog.=) 'no_source' AND finished_at IS NULL"

/*
 * RemainingChunks
 *		Whether the run has chunks still to execute: pending or failed
 *		ones, and with clear_no_source the no_source ones not cleared yet.
 *		Caller is connected to SPI.
 */
bool
RemainingChunks(RunInfo *run)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];

	values[0] = Int64GetDatum(run->run_id);
	if (CatalogExists("SELECT 1 FROM backfill.chunks"
					  " WHERE run_id OPERATOR(pg_catalog.=) $1 AND " TODO_PENDING
					  " LIMIT 1",
					  1, argtypes, values))
		return true;
	return run->clear_no_source &&
		CatalogExists("SELECT 1 FROM backfill.chunks"
					  " WHERE run_id OPERATOR(pg_catalog.=) $1 AND " TODO_NO_SOURCE
					  " LIMIT 1",
					  1, argtypes, values);
}

/*
 * RevertRestoreDefinition
 *		See backfill.h.  A revert run is done: the definition goes back with the rows.  The
 *		revert of a run built under version V makes the version that was
 *		current before V (definitions.previous_version) current again, if V
 *		is still current: a version registered since stays.  The revert of
 *		a revert (the run's rows back) makes V current again, if the
 *		version the first revert restored still is; and so on along a
 *		chain of reverts, by its parity (each revert run reverts an earlier
 *		run, so the chain ends).  The restored chunks
 *		then count as built under the current version (lineage gives them
 *		to the run before the reverted one), so that only_chunks =>
 *		'outdated', refreshes and cascades leave them alone.  A version
 *		that differs from the one before it only in its strategy or its
 *		author (set_strategy, the same text registered by another role) is
 *		the same definition: nothing changes.  A version of a chunk under
 *		an hour is not made current while the target is watched (the bound
 *		of CheckWatchedChunk).  What happened is noted on run
 *		(restored_version, kept_version) for ReportRevertDefinition.
 *		Caller is connected to SPI.
 */
void
RevertRestoreDefinition(RunInfo *run)
{
	Oid			argtypes[3] = {REGCLASSOID, INT4OID, INT8OID};
	Datum		values[3];
	bool		isnull;
	int32		from_version;
	int32		to_version;
	int32		current;
	bool		undo_of_undo;
	bool		same;

	values[0] = ObjectIdGetDatum(run->target);
	values[1] = Int32GetDatum(run->definition_version);
	values[2] = Int64GetDatum(run->reverts);
	CatalogExec("WITH RECURSIVE chain (run_id, reverts, depth) AS ("
				"  SELECT r.run_id, r.reverts, 1 FROM backfill.runs r"
				"  WHERE r.run_id OPERATOR(pg_catalog.=) $3"
				"  UNION ALL"
				"  SELECT r.run_id, r.reverts, c.depth OPERATOR(pg_catalog.+) 1"
				"  FROM chain c JOIN backfill.runs r"
				"   ON r.run_id OPERATOR(pg_catalog.=) c.reverts)"
				" SELECT d.previous_version, t.current_version,"
				" (SELECT pg_catalog.max(c.depth) OPERATOR(pg_catalog.%) 2"
				"   OPERATOR(pg_catalog.=) 0 FROM chain c),"
				" (d.source, d.label, d.time_column, d.chunk, d.source_retention,"
				"  d.source_horizon, d.ledger, d.measure, d.tolerance,"
				"  d.ledger_gate, d.keep_replaced, d.keep_for, d.key,"
				"  d.allow_empty)"
				"  IS NOT DISTINCT FROM"
				" (p.source, p.label, p.time_column, p.chunk, p.source_retention,"
				"  p.source_horizon, p.ledger, p.measure, p.tolerance,"
				"  p.ledger_gate, p.keep_replaced, p.keep_for, p.key,"
				"  p.allow_empty)"
				" FROM backfill.definitions d"
				" JOIN backfill.targets t ON t.target OPERATOR(pg_catalog.=) d.target"
				" JOIN backfill.definitions p ON p.target OPERATOR(pg_catalog.=) d.target"
				"  AND p.version OPERATOR(pg_catalog.=) d.previous_version"
				" WHERE d.target OPERATOR(pg_catalog.=) $1"
				" AND d.version OPERATOR(pg_catalog.=) $2",
				3, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		/* the first version, or the target unregistered since */
		SPI_freetuptable(SPI_tuptable);
		return;
	}
	to_version = SpiGetInt32(0, 1, &isnull);
	current = SpiGetInt32(0, 2, &isnull);
	undo_of_undo = SpiGetBool(0, 3, &isnull);
	same = SpiGetBool(0, 4, &isnull);
	SPI_freetuptable(SPI_tuptable);
	if (same)
		return;
	from_version = run->definition_version;
	if (undo_of_undo)
	{
		from_version = to_version;
		to_version = run->definition_version;
	}
	if (current != from_version)
	{
		if (current != to_version)
			run->kept_version = current;
		return;
	}

	values[1] = Int32GetDatum(from_version);
	argtypes[2] = INT4OID;
	values[2] = Int32GetDatum(to_version);
	CatalogExec("UPDATE backfill.targets t SET current_version = p.version,"
				" time_column = p.time_column, chunk = p.chunk,"
				" source_retention = p.source_retention,"
				" source_horizon = p.source_horizon, ledger = p.ledger,"
				" measure = p.measure, tolerance = p.tolerance,"
				" ledger_gate = p.ledger_gate, strategy = p.strategy,"
				" keep_replaced = p.keep_replaced, keep_for = p.keep_for,"
				" key = p.key, allow_empty = p.allow_empty,"
				" registered_at = pg_catalog.now()"
				" FROM backfill.definitions p"
				" WHERE t.target OPERATOR(pg_catalog.=) $1"
				" AND t.current_version OPERATOR(pg_catalog.=) $2"
				" AND p.target OPERATOR(pg_catalog.=) t.target"
				" AND p.version OPERATOR(pg_catalog.=) $3"
				" AND NOT (p.chunk OPERATOR(pg_catalog.<) '1 hour'::pg_catalog.interval"
				"  AND EXISTS (SELECT FROM backfill.watches w"
				"   WHERE w.target OPERATOR(pg_catalog.=) t.target))",
				3, argtypes, values, NULL, SPI_OK_UPDATE);
	if (SPI_processed == 0)
		return;
	/* a watched target's chunk may have changed (watchlog.c's cache) */
	InvalidateWatchCache();
	run->restored_version = to_version;
	run->restored_by_undo = undo_of_undo;
}

/*
 * ReportRevertDefinition
 *		See backfill.h: the NOTICE of what a revert run that is done did to
 *		its target's definition (RevertRestoreDefinition), after the one
 *		that says the run is done.
 */
void
ReportRevertDefinition(RunInfo *run)
{
	if (run->restored_version != 0 && run->restored_by_undo)
		ereport(NOTICE,
				(errmsg("definition version %d of %s is current again",
						run->restored_version, run->relname),
				 errdetail("Run %lld reverted run %lld, itself a revert: the rows built under version %d are back, and so is that version.",
						   (long long) run->run_id, (long long) run->reverts,
						   run->restored_version)));
	else if (run->restored_version != 0)
		ereport(NOTICE,
				(errmsg("definition version %d of %s is current again",
						run->restored_version, run->relname),
				 errdetail("Run %lld reverted run %lld: the rows and the definition in force before version %d are back, and the restored chunks count as built under it.",
						   (long long) run->run_id, (long long) run->reverts,
						   run->definition_version)));
	else if (run->kept_version != 0)
		ereport(NOTICE,
				(errmsg("definition version %d of %s stays current",
						run->kept_version, run->relname),
				 errdetail("It was registered after version %d, under which run %lld was built; register the definition you want current again, if it is not this one.",
						   run->definition_version, (long long) run->reverts)));
	run->restored_version = 0;
	run->kept_version = 0;
}

/*
 * WriteRunStatus
 *		See backfill.h: set the run's status (finished_at with done) unless
 *		it has been cancelled meanwhile.  A status that changes to done,
 *		failed or probed is notified (NOTIFY backfill, naming chunk_no, the
 *		chunk that decided it; 0: none), at commit.  What a finished run
 *		still needs is left to FinishRun (orchestration/runstatus.c), in
 *		the same transaction: its pg_cron job removed when it is done or
 *		failed (run->finish_pending; a job may have been added since the
 *		run was loaded, so even when the status does not change), and a
 *		revert run's definition restored when it becomes done
 *		(run->restore_pending).  Returns the status the run has now:
 *		status, or RUN_CANCELLED when a cancel came first.
 */
RunStatus
WriteRunStatus(RunInfo *run, RunStatus status, int32 chunk_no)
{
	Oid			argtypes[2] = {INT8OID, TEXTOID};
	Datum		values[2];
	RunStatus	before;

	values[0] = Int64GetDatum(run->run_id);
	values[1] = CStringGetTextDatum(RunStatusName(status));
	CatalogExec("SELECT status FROM backfill.runs"
				" WHERE run_id OPERATOR(pg_catalog.=) $1 FOR UPDATE",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	before = SPI_processed > 0 ? ParseRunStatus(SpiGetText(0, 1)) :
		RUN_CANCELLED;
	SPI_freetuptable(SPI_tuptable);
	if (before == RUN_CANCELLED)
		return RUN_CANCELLED;
	CatalogExec("UPDATE backfill.runs SET status = $2,"
				" finished_at = CASE WHEN $2 OPERATOR(pg_catalog.=) 'done'"
				"  THEN pg_catalog.clock_timestamp() END"
				" WHERE run_id OPERATOR(pg_catalog.=) $1",
				2, argtypes, values, NULL, SPI_OK_UPDATE);
	if (status == RUN_DONE || status == RUN_FAILED)
		run->finish_pending = true;
	if (before != status)
	{
		if (status == RUN_DONE && run->reverts != 0)
			run->restore_pending = true;
		NotifyRunEvent(run->run_id, status, chunk_no);
	}
	return status;
}

/*
 * FinishRun
 *		See backfill.h: what a run that WriteRunStatus has just finished
 *		still needs, in the same transaction: its pg_cron job removed
 *		(done or failed), and, a revert run that became done, the
 *		definition restored (RevertRestoreDefinition, the undo feature).
 *		Nothing when nothing is pending.  Caller is connected to SPI.
 */
void
FinishRun(RunInfo *run)
{
	/* a job may have been added since the run was loaded: always look */
	if (run->finish_pending)
		(void) ScheduleRemoveJob(run->run_id, false);
	if (run->restore_pending)
		RevertRestoreDefinition(run);
	run->finish_pending = false;
	run->restore_pending = false;
}

/*
 * SetRunStatus
 *		SetRunStatusAfter, no chunk named.
 */
RunStatus
SetRunStatus(RunInfo *run, RunStatus status)
{
	return SetRunStatusAfter(run, status, 0);
}

/*
 * SetRunStatusAfter
 *		Set the run's status (WriteRunStatus) and finish it (FinishRun):
 *		its pg_cron job is removed when it is done or failed, and a revert
 *		run that is done restores the definition too.  Returns the status
 *		the run has now: status, or RUN_CANCELLED when a cancel came first.
 */
RunStatus
SetRunStatusAfter(RunInfo *run, RunStatus status, int32 chunk_no)
{
	status = WriteRunStatus(run, status, chunk_no);
	FinishRun(run);
	return status;
}

/*
 * What one chunk has done so far, filled in phase by phase and read by the
 * record of its outcome, after an error too: it lives in the caller's
 * memory context, where a longjmp cannot clobber it as it could a local
 * variable.
 */
typedef struct ChunkWork
{
	ChunkPhase	phase;
	TimestampTz started;
	ReplaceResult rr;
	Verdict		verdict;		/* none, no_source, ok or ledger_mismatch */
	bool		have_ledger;	/* the ledger gave a (non-null) figure */
	Datum		ledger_value;	/* numeric, valid if have_ledger */
	bool		ledger_ok;
	bool		gate_failed;	/* the ledger gate refused the chunk */
	bool		emptied;		/* refused: no rows from the source where the
								 * range held some (ChunkGuardEmpty) */
} ChunkWork;

/*
 * ChunkLock
 *		Phase "lock": the target must still exist and be writable by the
 *		current user (the author), then the chunk's locks are taken,
 *		waiting at most backfill.lock_timeout; a lock timeout in this phase
 *		defers the chunk.  The caller's lock_timeout is restored after.
 */
static void
ChunkLock(RunInfo *run, ChunkInfo *chunk, ChunkWork *work)
{
	char	   *user_lock_timeout;
	char		buf[32];

	user_lock_timeout = pstrdup(GetConfigOption("lock_timeout", false, false));
	snprintf(buf, sizeof(buf), "%d", backfill_lock_timeout);
	SetChunkOption("lock_timeout", buf);
	work->phase = PHASE_LOCK;
	if (get_rel_name(run->target) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the table of run %lld no longer exists",
						(long long) run->run_id),
				 errdetail("The run was planned for table %s.", run->target_name)));
	CheckTargetPrivileges(run->target);
	ChunkLockTarget(run->target, run->time_column, chunk->start,
					chunk->end,
					chunk->no_source ? STRATEGY_DELETE :
					run->keep_replaced && run->reverts == 0 ?
					KeepStrategy(run->target, run->time_column, run->strategy,
								 chunk->start, chunk->end) :
					run->strategy);
	ChunkLockWatermark(run->target, chunk->end);
	work->phase = PHASE_WORK;
	SetChunkOption("lock_timeout", user_lock_timeout);
}

/*
 * ChunkReplace
 *		Phase "replace": a no_source chunk clears its range; any other
 *		replaces it from the run's pinned source, measuring before and
 *		after when the definition has a measure.  A run that keeps what it
 *		replaces moves the deleted rows into the archive; a revert run's
 *		chunk puts back what the reverted run's chunk kept (doc/undo.md).
 */
static void
ChunkReplace(RunInfo *run, ChunkInfo *chunk, ChunkWork *work)
{
	ArchiveKeep keep;
	const ArchiveKeep *kept = NULL;

	memset(&work->rr, 0, sizeof(work->rr));
	work->rr.before_null = work->rr.after_null = true;
	if (run->keep_replaced)
	{
		keep.run_id = run->run_id;
		keep.chunk_no = chunk->chunk_no;
		keep.keep_for = run->keep_for;
		kept = &keep;
	}
	if (run->reverts != 0)
	{
		/* a revert chunk: what the reverted run's chunk kept comes back */
		RevertRange(run->target, run->time_column, chunk->start, chunk->end,
					run->reverts, chunk->chunk_no, run->measure, &keep,
					&work->rr);
		return;
	}
	/* the changes recorded for the range that this chunk's snapshot sees */
	ChunkConsumeChanges(run->target, chunk->start, chunk->end);
	if (chunk->no_source)
	{
		work->rr.rows_deleted = ClearRange(run->target, run->time_column,
										   chunk->start, chunk->end, kept);
		work->rr.strategy = STRATEGY_DELETE;
		work->verdict = VERDICT_NO_SOURCE;
		return;
	}
	ReplaceRange(run->target, run->time_column, chunk->start, chunk->end,
				 run->source, run->strategy, run->measure, kept, &work->rr);
}

/*
 * ChunkGuardEmpty
 *		Phase "guard": a chunk whose source returned no row for a range
 *		that held rows would empty the range, which is what a broken source
 *		(a load that failed, a table not filled yet) looks like; it fails
 *		(23514, cause empty_source), which rolls it back and keeps the rows,
 *		unless the definition says that no rows is a valid answer
 *		(allow_empty).  A no_source chunk clears its range on purpose (the
 *		source's retention), and a revert chunk puts back what was there
 *		before, rows or none: neither is refused.
 */
static void
ChunkGuardEmpty(RunInfo *run, ChunkInfo *chunk, ChunkWork *work)
{
	if (chunk->no_source || run->reverts != 0 || run->allow_empty ||
		work->rr.rows_inserted > 0 || work->rr.rows_deleted == 0)
		return;
	work->emptied = true;
	ereport(ERROR,
			(errcode(ERRCODE_CHECK_VIOLATION),
			 errmsg("the source returned no rows for chunk [%s, %s), which holds %lld %s",
					TimestampText(chunk->start), TimestampText(chunk->end),
					(long long) work->rr.rows_deleted,
					work->rr.rows_deleted == 1 ? "row" : "rows"),
			 errdetail("The chunk would have deleted them and inserted nothing; it was rolled back, and the table keeps its rows."),
			 errhint("A source that returns nothing for a range the table holds rows for is taken for a broken one, unless the definition says otherwise (allow_empty).")));
}

/*
 * ChunkGate
 *		Phase "gate": with a ledger, compare the chunk's new measure with
 *		the ledger's figure (a NULL on either side counts as 0) and set the
 *		verdict; with ledger_gate, a disagreement fails the chunk (23514,
 *		cause ledger), which rolls its data back.  Its hint tells the two
 *		causes apart where it can: a ledger without a figure (NULL or 0)
 *		for a range whose new rows have one has most likely not caught up
 *		with the source; otherwise it gives the query that compares the two
 *		figures again later (preview).
 */
static void
ChunkGate(RunInfo *run, ChunkInfo *chunk, ChunkWork *work)
{
	ReplaceResult *rr = &work->rr;
	Datum		lv;
	bool		ledger_null = true;
	bool		measure_null;
	Datum		measure_value;
	Datum		zero;

	/* restored rows are put back as they were, agreeing or not */
	if (chunk->no_source || run->ledger == NULL || run->reverts != 0)
		return;

	measure_null = !rr->have_values || rr->after_null;
	lv = LedgerValue(run->ledger, chunk->start, chunk->end, &ledger_null);
	work->ledger_value = ledger_null ? (Datum) 0 : lv;
	work->have_ledger = !ledger_null;
	/* a NULL figure (an aggregate over no rows) counts as 0 */
	measure_value = measure_null ?
		DirectFunctionCall1(int4_numeric, Int32GetDatum(0)) :
		rr->after_value;
	work->ledger_ok = LedgerCompare(rr->after_value, measure_null,
									lv, ledger_null, run->tolerance);
	work->verdict = work->ledger_ok ? VERDICT_OK : VERDICT_LEDGER_MISMATCH;
	if (!work->ledger_ok && run->ledger_gate)
	{
		bool		ledger_empty;

		zero = DirectFunctionCall1(int4_numeric, Int32GetDatum(0));
		ledger_empty = ledger_null ||
			DatumGetInt32(DirectFunctionCall2(numeric_cmp, lv, zero)) == 0;
		work->gate_failed = true;
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("chunk [%s, %s) disagrees with the ledger: measure %s = %s, ledger %s",
						TimestampText(chunk->start), TimestampText(chunk->end),
						run->measure, NumericText(measure_value, false),
						NumericText(lv, ledger_null)),
				 errdetail("The ledger query is: %s", run->ledger),
				 ledger_empty ?
				 errhint("The ledger has no figure for this range yet: it has most likely not caught up with the source. The allowed relative difference (tolerance) is %s; the chunk was rolled back.",
						 NumericText(run->tolerance, false)) :
				 errhint("The allowed relative difference (tolerance) is %s; the chunk was rolled back. SELECT after_value, ledger_value FROM backfill.preview(%s, %s, %s) compares the two again, now.",
						 NumericText(run->tolerance, false),
						 quote_literal_cstr(QualifiedRelName(run->target)),
						 quote_literal_cstr(TimestampText(chunk->start)),
						 quote_literal_cstr(TimestampText(chunk->end)))));
	}
}

/*
 * ChunkRecordDone
 *		Phase "record" of a chunk that worked: its status (done, or
 *		no_source for a cleared range), figures and verdict, and the
 *		target's watermark moved to its end when that is newer, in the
 *		same transaction as its data, by one statement.
 */
static void
ChunkRecordDone(RunInfo *run, ChunkInfo *chunk, ChunkWork *work,
				const char *via, const char *user)
{
	ReplaceResult *rr = &work->rr;
	CatalogArgs args;

	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(run->run_id), false);
	CatalogArg(&args, INT4OID, Int32GetDatum(chunk->chunk_no), false);
	CatalogArgText(&args, ChunkStatusName(chunk->no_source ?
										  CHUNK_NO_SOURCE : CHUNK_DONE));
	CatalogArgText(&args, StrategyName(rr->strategy));
	CatalogArg(&args, INT8OID, Int64GetDatum(rr->rows_deleted), false);
	CatalogArg(&args, INT8OID, Int64GetDatum(rr->rows_inserted), false);
	CatalogArg(&args, NUMERICOID, rr->before_value,
			   !rr->have_values || rr->before_null);
	CatalogArg(&args, NUMERICOID, rr->after_value,
			   !rr->have_values || rr->after_null);
	CatalogArg(&args, NUMERICOID, work->ledger_value, !work->have_ledger);
	/* a revert chunk is not compared: it puts back what was there */
	CatalogArg(&args, BOOLOID, BoolGetDatum(work->ledger_ok),
			   run->ledger == NULL || chunk->no_source || run->reverts != 0);
	CatalogArgText(&args, VerdictName(work->verdict));
	CatalogArg(&args, TIMESTAMPTZOID, TimestampTzGetDatum(work->started), false);
	CatalogArgText(&args, user);
	CatalogArgText(&args, via);

	/*
	 * One statement for both rows (a catalog round trip per chunk less):
	 * the chunk's record, and the target's watermark moved to the chunk's
	 * end (ChunkAdvanceWatermark, the changed regions' hook).
	 */
	ChunkAdvanceWatermark("UPDATE backfill.chunks SET status = $3,"
						  " attempts = attempts OPERATOR(pg_catalog.+) 1, deferrals = 0,"
						  " strategy = $4, rows_deleted = $5, rows_inserted = $6,"
						  " before_value = $7, after_value = $8, ledger_value = $9,"
						  " ledger_ok = $10, verdict = $11, started_at = $12,"
						  " finished_at = pg_catalog.clock_timestamp(),"
						  " executed_by = $13::pg_catalog.name, executed_via = $14,"
						  " error_sqlstate = NULL, error_message = NULL,"
						  " error_detail = NULL, error_hint = NULL,"
						  " error_cause = NULL, next_step = NULL"
						  " WHERE run_id OPERATOR(pg_catalog.=) $1"
						  " AND chunk_no OPERATOR(pg_catalog.=) $2",
						  &args, run->target, chunk->end);
}

/*
 * ChunkRunStatus
 *		The run's status after a chunk that worked: done when nothing is
 *		left, probed after the probe chunk of a probe run, else planned;
 *		written only when it changes (a cancel that came first wins).
 */
static RunStatus
ChunkRunStatus(RunInfo *run, ChunkInfo *chunk, bool probe_pending,
			   RunStatus run_status)
{
	RunStatus	status;
	bool		after_probe = !probe_pending || !chunk->no_source;

	if (!RemainingChunks(run))
		status = RUN_DONE;
	else if (run->probe && after_probe)
		status = RUN_PROBED;
	else
		status = RUN_PLANNED;
	if (status != run_status)
		status = WriteRunStatus(run, status, chunk->chunk_no);
	return status;
}

/*
 * ChunkErrorText
 *		Rewrite a chunk's error for the user: our chunk_timeout's query
 *		cancel says so, and a lock timeout that ends the deferrals says how
 *		long and how often the chunk waited.
 */
static void
ChunkErrorText(ErrorData *edata, ChunkInfo *chunk, ChunkPhase phase,
			   bool timed_out, bool last_deferral, int32 deferrals)
{
	/*
	 * A unique violation while the chunk inserts: its old rows in [lo, hi)
	 * were deleted first, so "Key (k)=(v) already exists" blames a row that
	 * is gone.  The source returned the key twice in this chunk (or, when
	 * the key leaves out the time column, a row outside the range has it).
	 */
	if (edata->sqlerrcode == ERRCODE_UNIQUE_VIOLATION && phase == PHASE_WORK)
	{
		const char *key = NULL;
		int			keylen = 0;

		if (edata->detail != NULL && strncmp(edata->detail, "Key ", 4) == 0)
		{
			const char *end = strstr(edata->detail, " already exists");

			if (end != NULL)
			{
				key = edata->detail + 4;
				keylen = (int) (end - key);
			}
		}
		if (key != NULL)
			edata->message = psprintf("the source returned key %.*s twice in this chunk",
									  keylen, key);
		else
			edata->message = pstrdup("the source returned a key twice in this chunk");
		edata->detail = psprintf("The chunk deleted its old rows in [%s, %s) before inserting, so no old row holds the key; unless the unique constraint%s%s%s leaves out the time column and a row outside the range has it, the source produced it twice.",
								 TimestampText(chunk->start),
								 TimestampText(chunk->end),
								 edata->constraint_name ? " \"" : "",
								 edata->constraint_name ? edata->constraint_name : "",
								 edata->constraint_name ? "\"" : "");
		edata->hint = pstrdup("Make the source return one row per key, for example with GROUP BY or DISTINCT ON.");
	}
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED && timed_out)
	{
		edata->message = psprintf("chunk exceeded backfill.chunk_timeout (%d ms)",
								  backfill_chunk_timeout);
		edata->detail = NULL;
		edata->hint = pstrdup("Raise backfill.chunk_timeout, or plan the range with a smaller chunk interval.");
	}
	if (last_deferral)
	{
		edata->detail = psprintf("The chunk waited backfill.lock_timeout (%d ms) for the table's locks %d times in a row (backfill.max_attempts).",
								 backfill_lock_timeout, deferrals);
		edata->hint = pstrdup("Find the transaction that holds the table (pg_locks), or raise backfill.lock_timeout.");
	}
}

/*
 * ErrorArgs
 *		An error's SQLSTATE, message, detail and hint as the next four
 *		statement parameters (text; detail and hint NULL when absent), for
 *		the error_* columns of backfill.chunks.
 */
static void
ErrorArgs(CatalogArgs *args, ErrorData *edata)
{
	CatalogArgText(args, unpack_sql_state(edata->sqlerrcode));
	CatalogArgText(args, edata->message ? edata->message : "");
	CatalogArgText(args, edata->detail);
	CatalogArgText(args, edata->hint);
}

/*
 * ChunkRecordDeferral
 *		Phase "record" of a chunk whose locks timed out: it stays pending,
 *		with one more attempt and deferral and the error that deferred it.
 */
static void
ChunkRecordDeferral(RunInfo *run, ChunkInfo *chunk, ErrorData *edata)
{
	CatalogArgs args;

	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(run->run_id), false);
	CatalogArg(&args, INT4OID, Int32GetDatum(chunk->chunk_no), false);
	ErrorArgs(&args, edata);
	CatalogExecArgs("UPDATE backfill.chunks SET"
					" attempts = attempts OPERATOR(pg_catalog.+) 1,"
					" deferrals = deferrals OPERATOR(pg_catalog.+) 1,"
					" error_sqlstate = $3, error_message = $4,"
					" error_detail = $5, error_hint = $6"
					" WHERE run_id OPERATOR(pg_catalog.=) $1"
					" AND chunk_no OPERATOR(pg_catalog.=) $2",
					&args, SPI_OK_UPDATE);
}

/*
 * WriteChunkFailure
 *		The one statement that records a chunk as failed (a no_source chunk
 *		stays no_source, unfinished), its figures cleared, with edata, its
 *		cause and next step (failures.c), and the run as failed.  "work" is
 *		the chunk's own attempt (ExecuteChunk: the ledger figure kept when
 *		the gate refused it, the deferrals, the start, who ran it and how);
 *		NULL for a failure recorded outside the chunk's transaction
 *		(RecordChunkFailure), which keeps those columns as they are.  A
 *		chunk that a cancel has marked cancelled stays so.  Caller is
 *		connected to SPI.
 */
static void
WriteChunkFailure(RunInfo *run, ChunkInfo *chunk, const ChunkWork *work,
				  ErrorData *edata, FailureCause cause, int32 deferrals,
				  const char *via, const char *user)
{
	CatalogArgs args;
	bool		no_source = work != NULL && chunk->no_source;
	Verdict		verdict = no_source ? VERDICT_NO_SOURCE :
	(work != NULL && work->gate_failed ? VERDICT_LEDGER_MISMATCH : VERDICT_NONE);

	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(run->run_id), false);
	CatalogArg(&args, INT4OID, Int32GetDatum(chunk->chunk_no), false);
	CatalogArgText(&args, ChunkStatusName(no_source ?
										  CHUNK_NO_SOURCE : CHUNK_FAILED));
	CatalogArg(&args, INT4OID, Int32GetDatum(deferrals), work == NULL);
	CatalogArg(&args, NUMERICOID, work != NULL ? work->ledger_value : (Datum) 0,
			   !(work != NULL && work->gate_failed && work->have_ledger));
	CatalogArgText(&args, VerdictName(verdict));
	CatalogArg(&args, TIMESTAMPTZOID,
			   work != NULL ? TimestampTzGetDatum(work->started) : (Datum) 0,
			   work == NULL);
	CatalogArgText(&args, user);
	CatalogArgText(&args, via);
	ErrorArgs(&args, edata);
	CatalogArgText(&args, FailureCauseName(cause));
	CatalogArgText(&args, FailureNextStep(cause, run->run_id, run->group_id));
	CatalogExecArgs("UPDATE backfill.chunks SET status = $3,"
					" attempts = attempts OPERATOR(pg_catalog.+) 1,"
					" deferrals = coalesce($4, deferrals),"
					" rows_deleted = NULL, rows_inserted = NULL,"
					" before_value = NULL, after_value = NULL,"
					" ledger_value = $5,"
					" ledger_ok = CASE WHEN $6 OPERATOR(pg_catalog.=) 'ledger_mismatch' THEN false END,"
					" verdict = $6, started_at = coalesce($7, started_at),"
					" finished_at = CASE WHEN $3 OPERATOR(pg_catalog.=) 'failed'"
					"  THEN pg_catalog.clock_timestamp() END,"
					" executed_by = coalesce($8::pg_catalog.name, executed_by),"
					" executed_via = coalesce($9, executed_via),"
					" error_sqlstate = $10, error_message = $11,"
					" error_detail = $12, error_hint = $13,"
					" error_cause = $14, next_step = $15"
					" WHERE run_id OPERATOR(pg_catalog.=) $1"
					" AND chunk_no OPERATOR(pg_catalog.=) $2"
					" AND status OPERATOR(pg_catalog.<>) 'cancelled'",
					&args, SPI_OK_UPDATE);
	WriteRunStatus(run, RUN_FAILED, chunk->chunk_no);
}

/*
 * ExecuteChunk
 *		Execute one chunk in an internal subtransaction of the current
 *		transaction and record its outcome (done, deferred or failed) in the
 *		same transaction; the caller commits.  The phases: lock, replace
 *		and gate run as the definition's author; the record (and the run's
 *		status) as the caller.  A query cancel that is not our
 *		chunk_timeout is re-thrown after the rollback (the chunk stays
 *		pending).  run_status is the run's status read in this transaction
 *		(the run row is updated only when it changes).  Caller is connected
 *		to SPI; the current memory context must survive the transaction end
 *		(the report is allocated there).
 */
void
ExecuteChunk(RunInfo *run, ChunkInfo *chunk, bool probe_pending,
			 RunStatus run_status, const char *via, const char *user,
			 ChunkReport *report)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	ChunkWork  *work = palloc0(sizeof(ChunkWork));
	long		secs;
	int			usecs;

	memset(report, 0, sizeof(ChunkReport));
	work->phase = PHASE_SETUP;
	work->started = GetCurrentTimestamp();

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);

	PG_TRY();
	{
		int			nest = NewGUCNestLevel();
		RunStatus	status;
		AuthorGate	gate;

		/*
		 * Deferred constraints of the target are checked at the end of each
		 * statement of the chunk, not at the commit where a violation could
		 * no longer be recorded as the chunk's failure (and a deferred
		 * trigger cannot be queued in the security-restricted operation
		 * below).
		 */
		SpiExecPinned("SET CONSTRAINTS ALL IMMEDIATE", 0, NULL, NULL, NULL,
					  false, 0, SPI_OK_UTILITY);

		/*
		 * The whole chunk runs as the author of the run's definition, with
		 * the run's settings (popped at its end); the author's rights on
		 * the table are the ones that count.  An error rolls the
		 * subtransaction back, which restores the caller's user id.
		 */
		AuthorGateEnter(&gate, run->author, run->target,
						run->definition_version, run->search_path,
						run->timezone);
		ChunkLock(run, chunk, work);
		ArmChunkTimeout();
		ChunkReplace(run, chunk, work);
		ChunkGuardEmpty(run, chunk, work);
		ChunkGate(run, chunk, work);
		/* the user text is done: back to the caller */
		AuthorGateLeave(&gate);

		ChunkRecordDone(run, chunk, work, via, user);
		status = ChunkRunStatus(run, chunk, probe_pending, run_status);

		report->outcome = OUTCOME_DONE;
		report->rows_deleted = work->rr.rows_deleted;
		report->rows_inserted = work->rr.rows_inserted;
		report->ledger_checked = (run->ledger != NULL && !chunk->no_source &&
								  run->reverts == 0);
		report->ledger_ok = work->ledger_ok;
		report->run_status = status;

		DisarmChunkTimeout();
		if (chunk_timed_out)
		{
			/* the timer fired after the last interrupt check: too late */
			QueryCancelPending = false;
		}

		/*
		 * Pop the chunk's settings as on abort: a plain SET done by the
		 * source (set_config(..., false)) must not outlive the chunk either.
		 */
		AtEOXact_GUC(false, nest);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		bool		timed_out = chunk_timed_out;
		bool		deferral;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		DisarmChunkTimeout();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;

		/* a cancel by the user stops the call; the chunk stays pending */
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED && !timed_out)
			ReThrowError(edata);

		deferral = (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE &&
					work->phase == PHASE_LOCK);
		report->error = edata;
		report->deferrals = chunk->deferrals + (deferral ? 1 : 0);
		ChunkErrorText(edata, chunk, work->phase, timed_out,
					   deferral && report->deferrals >= backfill_max_attempts,
					   report->deferrals);
		/* the gate and the empty guard have causes of their own */
		if (work->gate_failed)
			report->cause = CAUSE_LEDGER;
		else if (work->emptied)
			report->cause = CAUSE_EMPTY_SOURCE;
		else
			report->cause = ClassifyFailure(edata->sqlerrcode,
											work->phase == PHASE_WORK &&
											run->reverts == 0);

		if (deferral && report->deferrals < backfill_max_attempts)
		{
			ChunkRecordDeferral(run, chunk, edata);
			report->outcome = OUTCOME_DEFERRED;
		}
		else
		{
			WriteChunkFailure(run, chunk, work, edata, report->cause,
							  report->deferrals, via, user);
			report->outcome = OUTCOME_FAILED;
			report->run_status = RUN_FAILED;
		}
	}
	PG_END_TRY();

	TimestampDifference(work->started, GetCurrentTimestamp(), &secs, &usecs);
	report->elapsed_ms = secs * 1000.0 + usecs / 1000.0;
}

/*
 * RecordChunkFailure
 *		Record chunk as failed with edata, outside the chunk's own
 *		transaction (its work was rolled back or never done), and the run
 *		as failed: a commit that failed (CommitChunk), or a parallel
 *		chunk whose background worker ended before it recorded an outcome
 *		(parallel.c), with its cause and next step (failures.c).  Caller
 *		is connected to SPI, finishes the run (FinishRun) and commits.
 */
void
RecordChunkFailure(RunInfo *run, ChunkInfo *chunk, ErrorData *edata,
				   FailureCause cause)
{
	WriteChunkFailure(run, chunk, NULL, edata, cause, 0, NULL, NULL);
}

/*
 * RecordCommitFailure
 *		See backfill.h: the chunk's transaction failed to commit with
 *		commit_error (rolled back; the caller is in a new transaction):
 *		record the chunk as failed with the chunk's own error when it had
 *		one (the cause; the commit's error is its consequence), else the
 *		commit's, and update report to match; the failed run is finished
 *		(FinishRun).  Shared by CommitChunk and the parallel worker's
 *		commit.  Caller commits.
 */
void
RecordCommitFailure(RunInfo *run, ChunkInfo *chunk, ChunkReport *report,
					ErrorData *commit_error)
{
	ErrorData  *edata = commit_error;

	if (report->outcome == OUTCOME_FAILED && report->error != NULL)
		edata = report->error;
	else
		report->cause = ClassifyFailure(commit_error->sqlerrcode,
										run->reverts == 0);
	SpiConnect();
	RecordChunkFailure(run, chunk, edata, report->cause);
	FinishRun(run);
	SpiFinish();
	report->outcome = OUTCOME_FAILED;
	report->error = edata;
	report->run_status = RUN_FAILED;
}

/*
 * CommitChunk
 *		Commit the chunk's transaction (SPI_commit), after what a run that
 *		the chunk finished still needs (FinishRun).  When the commit itself
 *		fails, e.g. Citus refusing to commit over a connection to a worker
 *		that died during the chunk, or a deferred constraint: SPI_commit has
 *		rolled the transaction back and started a new one, where the chunk
 *		is recorded as failed, with the chunk's own error when it had one
 *		(the cause; the commit's error is its consequence), else the
 *		commit's.  report is updated to match.
 */
void
CommitChunk(RunInfo *run, ChunkInfo *chunk, ChunkReport *report)
{
	MemoryContext cxt = CurrentMemoryContext;
	ErrorData  *volatile edata = NULL;

	/* a run the chunk finished: its job and definition, before the commit */
	if (run->finish_pending || run->restore_pending)
	{
		SpiConnect();
		FinishRun(run);
		SpiFinish();
		MemoryContextSwitchTo(cxt);
	}
	PG_TRY();
	{
		SPI_commit();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
	}
	PG_END_TRY();
	if (edata == NULL)
		return;

	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
		ReThrowError(edata);
	RecordCommitFailure(run, chunk, report, edata);
	SPI_commit();
	MemoryContextSwitchTo(cxt);
}

/*
 * RunStatusOf
 *		The run's status now (cancelled when the row is gone); with
 *		settled, after waiting (FOR SHARE) for a transaction that is
 *		changing the run's row to end.  Caller is connected to SPI.
 */
static RunStatus
RunStatusOf(int64 run_id, bool settled)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	RunStatus	status;

	values[0] = Int64GetDatum(run_id);
	CatalogExec(settled ?
				"SELECT status FROM backfill.runs"
				" WHERE run_id OPERATOR(pg_catalog.=) $1 FOR SHARE" :
				"SELECT status FROM backfill.runs"
				" WHERE run_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	status = SPI_processed > 0 ? ParseRunStatus(SpiGetText(0, 1)) :
		RUN_CANCELLED;
	SPI_freetuptable(SPI_tuptable);
	return status;
}

/*
 * ReadRunStatus
 *		The run's status now (cancelled when the row is gone).  Caller is
 *		connected to SPI.
 */
RunStatus
ReadRunStatus(int64 run_id)
{
	return RunStatusOf(run_id, false);
}

/*
 * ReadRunStatusSettled
 *		See backfill.h: ReadRunStatus after waiting for a transaction that
 *		is changing the run's row to end.  backfill.cancel locks that row
 *		before it terminates the run's workers, so a leader whose worker
 *		stopped without recording its chunk reads such a worker's run as
 *		cancelled, not its chunk as failed.  Caller is connected to SPI.
 */
RunStatus
ReadRunStatusSettled(int64 run_id)
{
	return RunStatusOf(run_id, true);
}

/*
 * FirstTodoAfter
 *		The first (last, for a backwards run) chunk_no matching the "still
 *		to do" predicate, among the chunks after chunk_no "after" in the
 *		run's order (before it for a backwards run; after = 0: all), or 0.
 *		Caller is connected to SPI.
 */
static int32
FirstTodoAfter(RunInfo *run, const char *predicate, int32 after)
{
	Oid			argtypes[2] = {INT8OID, INT4OID};
	Datum		values[2];
	bool		isnull;
	int32		chunk_no = 0;

	values[0] = Int64GetDatum(run->run_id);
	values[1] = Int32GetDatum(after);
	CatalogExec(psprintf("SELECT chunk_no FROM backfill.chunks"
						 " WHERE run_id OPERATOR(pg_catalog.=) $1 AND %s"
						 " AND ($2 OPERATOR(pg_catalog.=) 0"
						 "  OR chunk_no OPERATOR(pg_catalog.%s) $2)"
						 " ORDER BY chunk_no %s LIMIT 1",
						 predicate, run->backwards ? "<" : ">",
						 run->backwards ? "DESC" : "ASC"),
				2, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
		chunk_no = SpiGetInt32(0, 1, &isnull);
	SPI_freetuptable(SPI_tuptable);
	return chunk_no;
}

/*
 * NextTodoOf
 *		The run's next chunk to do after chunk_no "after", given the first
 *		pending one there (0: none): that one, or the first no_source chunk
 *		when the run clears them and it comes first in the run's order; 0
 *		when none is left.  Caller is connected to SPI.
 */
static int32
NextTodoOf(RunInfo *run, int32 pending, int32 after)
{
	int32		no_source = 0;

	if (run->clear_no_source)
		no_source = FirstTodoAfter(run, TODO_NO_SOURCE, after);
	if (pending == 0 || no_source == 0)
		return pending + no_source;
	return run->backwards ? Max(pending, no_source) : Min(pending, no_source);
}

/*
 * NextTodoAfter
 *		The run's next chunk to do after chunk_no "after" (0: from the
 *		start), in its order: the first pending chunk, or no_source chunk
 *		when the run clears them, whichever comes first; 0 when none is
 *		left.  Caller is connected to SPI.
 */
static int32
NextTodoAfter(RunInfo *run, int32 after)
{
	return NextTodoOf(run, FirstTodoAfter(run, TODO_PENDING, after), after);
}

/*
 * ReadChunkRow
 *		Copy the row of chunk chunk_no of the run into chunk (and its
 *		attempts so far into *attempts, when not NULL).  With claim, only a
 *		chunk still to do is read, and its row stays locked until the
 *		transaction ends, so that a concurrent cancel skips it.  False when
 *		there is no such row (any more).  Caller is connected to SPI.
 */
static bool
ReadChunkRow(RunInfo *run, int32 chunk_no, bool claim, ChunkInfo *chunk,
			 int32 *attempts)
{
	Oid			argtypes[2] = {INT8OID, INT4OID};
	Datum		values[2];
	bool		isnull;
	bool		found;

	values[0] = Int64GetDatum(run->run_id);
	values[1] = Int32GetDatum(chunk_no);
	CatalogExec(psprintf("SELECT chunk_no, chunk_start, chunk_end,"
						 " status OPERATOR(pg_catalog.=) 'no_source',"
						 " deferrals, attempts"
						 " FROM backfill.chunks"
						 " WHERE run_id OPERATOR(pg_catalog.=) $1"
						 " AND chunk_no OPERATOR(pg_catalog.=) $2%s",
						 claim ? " AND (" TODO_PENDING " OR " TODO_NO_SOURCE
						 ") FOR UPDATE" : ""),
				2, argtypes, values, NULL, SPI_OK_SELECT);
	found = SPI_processed > 0;
	if (found)
	{
		chunk->chunk_no = SpiGetInt32(0, 1, &isnull);
		chunk->start = DatumGetTimestampTz(SpiGetDatumCopy(0, 2, &isnull));
		chunk->end = DatumGetTimestampTz(SpiGetDatumCopy(0, 3, &isnull));
		chunk->no_source = SpiGetBool(0, 4, &isnull);
		chunk->deferrals = SpiGetInt32(0, 5, &isnull);
		if (attempts != NULL)
			*attempts = SpiGetInt32(0, 6, &isnull);
	}
	SPI_freetuptable(SPI_tuptable);
	return found;
}

/*
 * RunStatusAndFirstPending
 *		The run's status now (cancelled when the row is gone) and its first
 *		pending or failed chunk in its order (*pending, 0: none), read by
 *		one statement: what ReadRunStatus and FirstTodoAfter(TODO_PENDING,
 *		0) read, from one snapshot instead of two, for a catalog round trip
 *		per chunk less.  Caller is connected to SPI.
 */
static RunStatus
RunStatusAndFirstPending(RunInfo *run, int32 *pending)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	bool		isnull;
	RunStatus	status = RUN_CANCELLED;

	*pending = 0;
	values[0] = Int64GetDatum(run->run_id);
	CatalogExec(run->backwards ?
				"SELECT r.status, (SELECT c.chunk_no FROM backfill.chunks c"
				"  WHERE c.run_id OPERATOR(pg_catalog.=) r.run_id"
				"  AND c." TODO_PENDING
				"  ORDER BY c.chunk_no DESC LIMIT 1)"
				" FROM backfill.runs r WHERE r.run_id OPERATOR(pg_catalog.=) $1" :
				"SELECT r.status, (SELECT c.chunk_no FROM backfill.chunks c"
				"  WHERE c.run_id OPERATOR(pg_catalog.=) r.run_id"
				"  AND c." TODO_PENDING
				"  ORDER BY c.chunk_no ASC LIMIT 1)"
				" FROM backfill.runs r WHERE r.run_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
	{
		status = ParseRunStatus(SpiGetText(0, 1));
		*pending = SpiGetInt32(0, 2, &isnull);
		if (isnull)
			*pending = 0;
	}
	SPI_freetuptable(SPI_tuptable);
	return status;
}

/*
 * NextChunk
 *		Pick the next chunk to execute (in chunk_no order, descending for a
 *		backwards run) and lock its row until the chunk's transaction ends,
 *		so that a concurrent cancel skips it.  Also returns the run's
 *		current status.  Returns false when no chunk is left, or when the
 *		chosen one changed under us (the caller looks again).  Caller is
 *		connected to SPI.
 */
bool
NextChunk(RunInfo *run, ChunkInfo *chunk, RunStatus *run_status)
{
	int32		next;

	*run_status = RunStatusAndFirstPending(run, &next);
	next = NextTodoOf(run, next, 0);
	if (next == 0)
		return false;
	return ReadChunkRow(run, next, true, chunk, NULL);
}

/*
 * ClaimChunk
 *		A parallel chunk's worker: lock chunk chunk_no of the run, if it is
 *		still to do, until the transaction ends (as NextChunk does for the
 *		chunk it picks), and read the run's status.  False when the chunk
 *		is no longer to do.  Caller is connected to SPI.
 */
bool
ClaimChunk(RunInfo *run, int32 chunk_no, ChunkInfo *chunk,
		   RunStatus *run_status)
{
	*run_status = ReadRunStatus(run->run_id);
	return ReadChunkRow(run, chunk_no, true, chunk, NULL);
}

/*
 * PeekChunkAfter
 *		The parallel leader's next chunk: the first chunk still to do after
 *		chunk_no "after" in the run's order (0: from the start), read
 *		without a lock (its worker locks it, ClaimChunk), with its
 *		attempts so far; and the run's status.  False when there is none.
 *		Caller is connected to SPI.
 */
bool
PeekChunkAfter(RunInfo *run, int32 after, ChunkInfo *chunk, int32 *attempts,
			   RunStatus *run_status)
{
	int32		next;

	*run_status = ReadRunStatus(run->run_id);
	next = NextTodoAfter(run, after);
	if (next == 0)
		return false;
	return ReadChunkRow(run, next, false, chunk, attempts);
}

/*
 * ReadChunkOutcome
 *		What a parallel chunk's worker recorded, read by the leader after
 *		the worker ended: done (also a no_source chunk cleared), deferred
 *		(still to do, one more attempt), failed (with its error), or
 *		nothing at all (attempts unchanged: false; the worker died or was
 *		terminated before its chunk committed).  report is filled for
 *		ReportChunk and RaiseChunkFailure; *status is the chunk's status.
 *		Caller is connected to SPI; report lives in the memory context
 *		current at the call (SPI_execute leaves SPI's own current, which
 *		SPI_finish frees), and that context is current again on return.
 */
bool
ReadChunkOutcome(RunInfo *run, ChunkInfo *chunk, int32 attempts_before,
				 ChunkStatus *status, ChunkReport *report)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			argtypes[2] = {INT8OID, INT4OID};
	Datum		values[2];
	bool		isnull;
	bool		ledger_null;
	int32		attempts;
	bool		finished;
	char	   *sqlstate;

	memset(report, 0, sizeof(ChunkReport));
	values[0] = Int64GetDatum(run->run_id);
	values[1] = Int32GetDatum(chunk->chunk_no);
	CatalogExec("SELECT status, attempts, deferrals,"
				" COALESCE(rows_deleted, 0), COALESCE(rows_inserted, 0),"
				" ledger_ok, finished_at IS NOT NULL, error_sqlstate,"
				" error_message, error_detail, error_hint, error_cause"
				" FROM backfill.chunks WHERE run_id OPERATOR(pg_catalog.=) $1"
				" AND chunk_no OPERATOR(pg_catalog.=) $2",
				2, argtypes, values, NULL, SPI_OK_SELECT);
	MemoryContextSwitchTo(cxt);
	if (SPI_processed == 0)
	{
		SPI_freetuptable(SPI_tuptable);
		*status = CHUNK_CANCELLED;
		return false;
	}
	*status = ParseChunkStatus(SpiGetText(0, 1));
	attempts = SpiGetInt32(0, 2, &isnull);
	report->deferrals = SpiGetInt32(0, 3, &isnull);
	report->rows_deleted = SpiGetInt64(0, 4, &isnull);
	report->rows_inserted = SpiGetInt64(0, 5, &isnull);
	report->ledger_ok = SpiGetBool(0, 6, &ledger_null);
	report->ledger_checked = !ledger_null;
	finished = SpiGetBool(0, 7, &isnull);
	sqlstate = SpiGetText(0, 8);
	if (sqlstate != NULL)
	{
		report->error = palloc0(sizeof(ErrorData));
		report->error->elevel = ERROR;
		report->error->sqlerrcode = MAKE_SQLSTATE(sqlstate[0], sqlstate[1],
												  sqlstate[2], sqlstate[3],
												  sqlstate[4]);
		report->error->message = SpiGetText(0, 9);
		report->error->detail = SpiGetText(0, 10);
		report->error->hint = SpiGetText(0, 11);
		report->cause = ParseFailureCause(SpiGetText(0, 12));
	}
	SPI_freetuptable(SPI_tuptable);

	if (attempts == attempts_before && !(*status == CHUNK_NO_SOURCE && finished))
		return false;
	if (*status == CHUNK_DONE || (*status == CHUNK_NO_SOURCE && finished))
		report->outcome = OUTCOME_DONE;
	else if (*status == CHUNK_FAILED ||
			 (*status == CHUNK_NO_SOURCE &&
			  !(report->deferrals == chunk->deferrals + 1 &&
				report->deferrals < backfill_max_attempts)))
		report->outcome = OUTCOME_FAILED;
	else if (*status == CHUNK_PENDING || *status == CHUNK_NO_SOURCE)
		report->outcome = OUTCOME_DEFERRED;
	else
		return false;
	return true;
}

/*
 * RunHasDoneChunk
 *		Whether any chunk of the run has been executed from its source
 *		(that is, whether its probe has run).  Caller is connected to SPI.
 */
bool
RunHasDoneChunk(int64 run_id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];

	values[0] = Int64GetDatum(run_id);
	return CatalogExists("SELECT 1 FROM backfill.chunks"
						 " WHERE run_id OPERATOR(pg_catalog.=) $1"
						 " AND status OPERATOR(pg_catalog.=) 'done' LIMIT 1",
						 1, argtypes, values);
}

/*
 * ReportChunk
 *		The NOTICE of one executed chunk, naming its run and table ("run 5
 *		daily_revenue chunk 2 [...]: 1 row deleted, 3 rows inserted"); with
 *		backfill.notices = summary only a deferral is reported (the run
 *		loop sums up the rest).  The time it took is reported at DEBUG1
 *		(SET client_min_messages = debug1 to see it), so that the NOTICE
 *		stays the same from one execution to the next; it is also in the
 *		chunk's started_at and finished_at.
 */
void
ReportChunk(RunInfo *run, ChunkInfo *chunk, ChunkReport *report)
{
	char	   *lo;
	char	   *hi;

	ereport(DEBUG1,
			(errmsg_internal("backfill: chunk %d of run %lld took %.0f ms",
							 chunk->chunk_no, (long long) run->run_id,
							 report->elapsed_ms)));

	/*
	 * The chunk's bounds are spelled out only for a NOTICE that someone
	 * sees (the client's or the log's level): a long run with its NOTICEs
	 * hidden does not format two timestamps per chunk for nothing.
	 */
	if (!message_level_is_interesting(NOTICE))
		return;
	lo = TimestampText(chunk->start);
	hi = TimestampText(chunk->end);

	if (report->outcome == OUTCOME_DEFERRED)
		ereport(NOTICE,
				(errmsg("run %lld %s chunk %d [%s, %s) deferred: %s",
						(long long) run->run_id, run->relname,
						chunk->chunk_no, lo, hi, report->error->message),
				 errdetail("Deferral %d of %d (backfill.max_attempts); the chunk stays pending.",
						   report->deferrals, backfill_max_attempts),
				 run->group_id != 0 ?
				 errhint("Another transaction holds a lock on the table; CALL backfill.run_group(%lld) again later.",
						 (long long) run->group_id) :
				 errhint("Another transaction holds a lock on the table; CALL backfill.run(%lld) again later.",
						 (long long) run->run_id)));
	if (backfill_notices == NOTICES_SUMMARY)
		return;
	if (report->outcome == OUTCOME_DONE && chunk->no_source)
		ereport(NOTICE,
				(errmsg("run %lld %s chunk %d [%s, %s) has no source data: %s",
						(long long) run->run_id, run->relname,
						chunk->chunk_no, lo, hi,
						RowsText(report->rows_deleted, "deleted"))));
	else if (report->outcome == OUTCOME_DONE)
		ereport(NOTICE,
				(errmsg("run %lld %s chunk %d [%s, %s): %s, %s%s",
						(long long) run->run_id, run->relname,
						chunk->chunk_no, lo, hi,
						RowsText(report->rows_deleted, "deleted"),
						RowsText(report->rows_inserted, "inserted"),
						!report->ledger_checked ? "" :
						report->ledger_ok ? ", ledger ok" : ", ledger differs")));
}

/*
 * RaiseChunkFailure
 *		After the failure has been committed: end the call with an error
 *		carrying the chunk's SQLSTATE, so that scripts and pg_cron see it.
 *		Its hint is the chunk's own (when it has one), then what to do next
 *		for the failure's cause (FailureHint).
 */
void
RaiseChunkFailure(RunInfo *run, ChunkInfo *chunk, ChunkReport *report)
{
	ErrorData  *edata = report->error;
	char	   *next = FailureHint(report->cause, run->run_id, run->group_id,
								   ScheduleCalledFromCron());

	ereport(ERROR,
			(errcode(edata->sqlerrcode),
			 errmsg("run %lld %s chunk %d [%s, %s) failed: %s",
					(long long) run->run_id, run->relname, chunk->chunk_no,
					TimestampText(chunk->start), TimestampText(chunk->end),
					edata->message),
			 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
			 edata->hint ? errhint("%s %s", edata->hint, next) :
			 errhint("%s", next)));
}

/*
 * PreviewRange
 *		See backfill.h: what replacing [lo, hi) of target with its current
 *		definition would do, computed as the definition's author in an
 *		internal subtransaction that is always rolled back, so nothing
 *		changes.  The figures are in the caller's memory context.  Caller
 *		is connected to SPI; [lo, hi) has passed CheckRangeBounds.
 */
void
PreviewRange(Oid target, TimestampTz lo, TimestampTz hi, PreviewResult *out)
{
	MemoryContext cxt;
	ResourceOwner owner = CurrentResourceOwner;
	Definition *def;
	char	   *time_column;
	char	   *measure;
	char	   *ledger;
	char	   *source;
	Oid			author;
	int32		version;
	ReplaceResult rr;
	volatile Datum ledger_value = (Datum) 0;
	volatile bool ledger_null = true;

	CheckTargetPrivileges(target);

	cxt = CurrentMemoryContext;
	def = LoadDefinition(target, 0);
	time_column = def->time_column;
	measure = def->measure;
	ledger = def->ledger;
	source = def->source;
	author = def->author;
	version = def->version;
	CheckAuthor(author, target, version);
	memset(&rr, 0, sizeof(rr));

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		AuthorGate	gate;

		/* as the author; the rollback below restores the caller */
		SpiExecPinned("SET CONSTRAINTS ALL IMMEDIATE", 0, NULL, NULL, NULL,
					  false, 0, SPI_OK_UTILITY);
		AuthorGateEnter(&gate, author, target, version,
						GetConfigOption("search_path", false, false),
						GetConfigOption("TimeZone", false, false));
		CheckTargetPrivileges(target);
		ReplaceRange(target, time_column, lo, hi, source, STRATEGY_DELETE, measure,
					 NULL, &rr);
		if (ledger != NULL)
		{
			bool		isnull;
			Datum		lv = LedgerValue(ledger, lo, hi, &isnull);

			ledger_value = lv;
			ledger_null = isnull;
		}
		AuthorGateLeave(&gate);
	}
	PG_CATCH();
	{
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		PG_RE_THROW();
	}
	PG_END_TRY();
	RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;

	out->rr = rr;
	out->ledger_value = ledger_value;
	out->ledger_null = ledger_null;
}
