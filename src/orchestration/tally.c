/*-------------------------------------------------------------------------
 *
 * tally.c
 *	  What one call (run, backfill, run_group, a pg_cron tick; serial or
 *	  with parallel workers) did to a run, and the one summary NOTICE that
 *	  ends it: chunks by outcome, rows, the ledger's verdicts and the time
 *	  taken.  The serial run loop (run.c) and the parallel leader
 *	  (parallel.c) both tally every chunk they execute or see finish.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "backfill.h"

/*
 * TallyStart
 *		See backfill.h: an empty tally, started now.
 */
void
TallyStart(RunTally *tally)
{
	memset(tally, 0, sizeof(RunTally));
	tally->started = GetCurrentTimestamp();
}

/*
 * TallyChunk
 *		See backfill.h: add one executed chunk's report to the call's tally.
 */
void
TallyChunk(RunTally *tally, ChunkInfo *chunk, ChunkReport *report)
{
	tally->executed++;
	switch (report->outcome)
	{
		case OUTCOME_DONE:
			if (chunk->no_source)
				tally->no_source++;
			else
				tally->done++;
			tally->rows_deleted += report->rows_deleted;
			tally->rows_inserted += report->rows_inserted;
			if (report->ledger_checked)
			{
				tally->ledger_checked++;
				if (report->ledger_ok)
					tally->ledger_ok++;
			}
			break;
		case OUTCOME_DEFERRED:
			tally->deferred++;
			break;
		case OUTCOME_FAILED:
			tally->failed++;
			break;
	}
}

/*
 * ReportTally
 *		See backfill.h: the one summary NOTICE that ends a call which
 *		executed chunks of a run:
 *		chunks by outcome, rows, the ledger's verdicts and (unless
 *		backfill.notice_timing is off) the time taken.  Printed with
 *		backfill.notices = summary too.
 */
void
ReportTally(RunInfo *run, RunTally *tally)
{
	StringInfoData outcomes;
	StringInfoData ledger;
	long		secs;
	int			usecs;
	char		took[64];

	if (tally->executed == 0)
		return;
	initStringInfo(&outcomes);
	if (tally->done > 0)
		appendStringInfo(&outcomes, "%d done", tally->done);
	if (tally->no_source > 0)
		appendStringInfo(&outcomes, "%s%d without source", outcomes.len ? ", " : "",
						 tally->no_source);
	if (tally->deferred > 0)
		appendStringInfo(&outcomes, "%s%d deferred", outcomes.len ? ", " : "",
						 tally->deferred);
	if (tally->failed > 0)
		appendStringInfo(&outcomes, "%s%d failed", outcomes.len ? ", " : "",
						 tally->failed);
	initStringInfo(&ledger);
	if (tally->ledger_checked > 0)
		appendStringInfo(&ledger, ", ledger ok in %d of %d",
						 tally->ledger_ok, tally->ledger_checked);
	took[0] = '\0';
	if (backfill_notice_timing)
	{
		TimestampDifference(tally->started, GetCurrentTimestamp(), &secs, &usecs);
		snprintf(took, sizeof(took), ", %.3f s", secs + usecs / 1000000.0);
	}
	ereport(NOTICE,
			(errmsg("run %lld %s: %d %s executed (%s), %s, %s%s%s",
					(long long) run->run_id, run->relname, tally->executed,
					tally->executed == 1 ? "chunk" : "chunks", outcomes.data,
					RowsText(tally->rows_deleted, "deleted"),
					RowsText(tally->rows_inserted, "inserted"),
					ledger.data, took)));
}
