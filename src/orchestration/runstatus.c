/*-------------------------------------------------------------------------
 *
 * runstatus.c
 *	  A run's status set and finished: SetRunStatus writes it (the chunk
 *	  engine's WriteRunStatus) and FinishRun does what a done or failed
 *	  run still needs in the same transaction (its pg_cron job removed, a
 *	  revert run's definition restored, undo.c); a chunk's transaction
 *	  committed after that (CommitChunk, RecordCommitFailure); and the
 *	  reports of a chunk (ReportChunk, RaiseChunkFailure).
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
				 errhint("Another transaction holds a lock the chunk needs (on the table, or, on a watched target, an open write to its source: see pg_locks); CALL backfill.run_group(%lld) again later.",
						 (long long) run->group_id) :
				 errhint("Another transaction holds a lock the chunk needs (on the table, or, on a watched target, an open write to its source: see pg_locks); CALL backfill.run(%lld) again later.",
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
