/*-------------------------------------------------------------------------
 *
 * chunk.c
 *	  The chunk engine: execute one chunk of a run in an internal
 *	  subtransaction as the definition's author (lock, replace, empty
 *	  guard, ledger gate) and record its outcome in the same transaction.
 *	  Which chunk is next and the run's status are chunkstate.c's, the
 *	  changed regions' hooks watchhook.c's, preview is preview.c; the
 *	  commit of a chunk, a finished run's pg_cron job and the reports are
 *	  orchestration's (runstatus.c).
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

#include "commands/trigger.h"
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
	bool		changes_logged; /* ChunkConsumeChanges has work (ChunkLock) */
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
	/*
	 * The writers of the watched sources first, the target after: a
	 * writer may write the target too (a trigger of its own that keeps
	 * the target up to date), and would wait for a chunk that held the
	 * target while the chunk waited for it.
	 */
	work->changes_logged = ChunkLockWatermark(run->target, chunk->start,
											  chunk->end);
	ChunkLockTarget(run->target, run->time_column, chunk->start,
					chunk->end,
					chunk->no_source ? STRATEGY_DELETE :
					run->keep_replaced && run->reverts == 0 ?
					KeepStrategy(run->target, run->time_column, run->strategy,
								 chunk->start, chunk->end) :
					run->strategy);
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
	ReplaceRequest req;

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
		RunReplaceRequest(run, chunk->start, chunk->end, &keep, &req);
		RevertRange(&req, run->reverts, chunk->chunk_no, &work->rr);
		return;
	}
	/* the changes recorded for the range that this chunk's snapshot sees */
	if (work->changes_logged)
		ChunkConsumeChanges(run->target, chunk->start, chunk->end);
	if (chunk->no_source)
	{
		RunReplaceRequest(run, chunk->start, chunk->end, kept, &req);
		work->rr.rows_deleted = ClearRange(&req);
		work->rr.strategy = STRATEGY_DELETE;
		work->verdict = VERDICT_NO_SOURCE;
		return;
	}
	RunReplaceRequest(run, chunk->start, chunk->end, kept, &req);
	ReplaceRange(&req, &work->rr);
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
 * ChunkRecordError
 *		What ExecuteChunk does with the error of a chunk that failed (after
 *		its subtransaction's rollback, a user's cancel excepted): a lock
 *		not available while locking is a deferral, recorded as such until
 *		backfill.max_attempts; anything else (or the last deferral) fails
 *		the chunk with its cause, the gate's and the empty guard's first.
 *		The error's text names the chunk and its phase (ChunkErrorText);
 *		report is filled in.
 */
static void
ChunkRecordError(RunInfo *run, ChunkInfo *chunk, ChunkWork *work,
				 ErrorData *edata, bool timed_out, const char *via,
				 const char *user, ChunkReport *report)
{
	bool		deferral;

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
		ConstraintsSetStmt *immediate = makeNode(ConstraintsSetStmt);

		/*
		 * Deferred constraints of the target are checked at the end of each
		 * statement of the chunk, not at the commit where a violation could
		 * no longer be recorded as the chunk's failure (and a deferred
		 * trigger cannot be queued in the security-restricted operation
		 * below).  SET CONSTRAINTS ALL IMMEDIATE, done as the statement
		 * would do it, without parsing it for every chunk.
		 */
		immediate->constraints = NIL;
		immediate->deferred = false;
		AfterTriggerSetState(immediate);

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

		ChunkRecordError(run, chunk, work, edata, timed_out, via, user,
						 report);
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

