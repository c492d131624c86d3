/*-------------------------------------------------------------------------
 *
 * chunkstate.c
 *	  A run's chunks and status as the chunk engine reads and writes them:
 *	  the chunks still to do (RemainingChunks), the next one (NextChunk;
 *	  ClaimChunk and PeekChunkAfter for parallel chunks), what a chunk's
 *	  worker recorded (ReadChunkOutcome), the run's status read and
 *	  written (WriteRunStatus: no pg_cron job and no definition is
 *	  touched here, FinishRun in orchestration/runstatus.c does that).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "backfill.h"

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
 * ScanBound
 *		Where the run's scans for a chunk still to do start, as the bound
 *		of an index condition on chunk_no: chunk_no >= it (<= for a
 *		backwards run).  The done chunks' entries stay in the partial
 *		indexes chunks_todo_idx and chunks_no_source_todo_idx until a vacuum
 *		removes them, so a scan from the run's first chunk steps over every
 *		chunk done so far, and a run of n chunks cost O(n^2); a scan from
 *		the last pick (run->todo_from, which only the serial run loop
 *		sets, with the run's session lock held: no chunk before it can
 *		become one to do meanwhile) steps over none.
 */
static int32
ScanBound(RunInfo *run)
{
	if (run->todo_from != 0)
		return run->todo_from;
	return run->backwards ? PG_INT32_MAX : 0;
}

/*
 * RemainingChunks
 *		Whether the run has chunks still to execute: pending or failed
 *		ones, and with clear_no_source the no_source ones not cleared yet
 *		(from the last pick on: ScanBound).  Caller is connected to SPI.
 */
bool
RemainingChunks(RunInfo *run)
{
	Oid			argtypes[2] = {INT8OID, INT4OID};
	Datum		values[2];

	values[0] = Int64GetDatum(run->run_id);
	values[1] = Int32GetDatum(ScanBound(run));
	if (CatalogExists(run->backwards ?
					  "SELECT 1 FROM backfill.chunks"
					  " WHERE run_id OPERATOR(pg_catalog.=) $1 AND " TODO_PENDING
					  " AND chunk_no OPERATOR(pg_catalog.<=) $2"
					  " ORDER BY chunk_no DESC LIMIT 1" :
					  "SELECT 1 FROM backfill.chunks"
					  " WHERE run_id OPERATOR(pg_catalog.=) $1 AND " TODO_PENDING
					  " AND chunk_no OPERATOR(pg_catalog.>=) $2"
					  " ORDER BY chunk_no LIMIT 1",
					  2, argtypes, values))
		return true;
	return run->clear_no_source &&
		CatalogExists(run->backwards ?
					  "SELECT 1 FROM backfill.chunks"
					  " WHERE run_id OPERATOR(pg_catalog.=) $1 AND " TODO_NO_SOURCE
					  " AND chunk_no OPERATOR(pg_catalog.<=) $2"
					  " ORDER BY chunk_no DESC LIMIT 1" :
					  "SELECT 1 FROM backfill.chunks"
					  " WHERE run_id OPERATOR(pg_catalog.=) $1 AND " TODO_NO_SOURCE
					  " AND chunk_no OPERATOR(pg_catalog.>=) $2"
					  " ORDER BY chunk_no LIMIT 1",
					  2, argtypes, values);
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
 *		run's order (before it for a backwards run; after = 0: from
 *		ScanBound on), or 0.  The bound is an index condition, so that the
 *		scan starts there (ScanBound says why).  Caller is connected to
 *		SPI.
 */
static int32
FirstTodoAfter(RunInfo *run, const char *predicate, int32 after)
{
	Oid			argtypes[2] = {INT8OID, INT4OID};
	Datum		values[2];
	bool		isnull;
	int32		chunk_no = 0;

	values[0] = Int64GetDatum(run->run_id);
	values[1] = Int32GetDatum(after != 0 ? after : ScanBound(run));
	CatalogExec(psprintf("SELECT chunk_no FROM backfill.chunks"
						 " WHERE run_id OPERATOR(pg_catalog.=) $1 AND %s"
						 " AND chunk_no OPERATOR(pg_catalog.%s) $2"
						 " ORDER BY chunk_no %s LIMIT 1",
						 predicate,
						 after != 0 ? (run->backwards ? "<" : ">") :
						 (run->backwards ? "<=" : ">="),
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
	Oid			argtypes[2] = {INT8OID, INT4OID};
	Datum		values[2];
	bool		isnull;
	RunStatus	status = RUN_CANCELLED;

	*pending = 0;
	values[0] = Int64GetDatum(run->run_id);
	values[1] = Int32GetDatum(ScanBound(run));
	CatalogExec(run->backwards ?
				"SELECT r.status, (SELECT c.chunk_no FROM backfill.chunks c"
				"  WHERE c.run_id OPERATOR(pg_catalog.=) r.run_id"
				"  AND c." TODO_PENDING
				"  AND c.chunk_no OPERATOR(pg_catalog.<=) $2"
				"  ORDER BY c.chunk_no DESC LIMIT 1)"
				" FROM backfill.runs r WHERE r.run_id OPERATOR(pg_catalog.=) $1" :
				"SELECT r.status, (SELECT c.chunk_no FROM backfill.chunks c"
				"  WHERE c.run_id OPERATOR(pg_catalog.=) r.run_id"
				"  AND c." TODO_PENDING
				"  AND c.chunk_no OPERATOR(pg_catalog.>=) $2"
				"  ORDER BY c.chunk_no ASC LIMIT 1)"
				" FROM backfill.runs r WHERE r.run_id OPERATOR(pg_catalog.=) $1",
				2, argtypes, values, NULL, SPI_OK_SELECT);
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
 *		chosen one changed under us (the caller looks again).  Only the
 *		serial run loop calls it, holding the run's session lock: the
 *		chunks before its pick are not looked at again (ScanBound).
 *		Caller is connected to SPI.
 */
bool
NextChunk(RunInfo *run, ChunkInfo *chunk, RunStatus *run_status)
{
	int32		next;

	*run_status = RunStatusAndFirstPending(run, &next);
	next = NextTodoOf(run, next, 0);
	if (next == 0)
		return false;
	run->todo_from = next;
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
