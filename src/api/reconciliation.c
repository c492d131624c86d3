/*-------------------------------------------------------------------------
 *
 * reconciliation.c
 *	  SQL entry points of reconciliation (doc/reconciliation.md):
 *	  reconcile, check, and the standing checks schedule_check, run_check
 *	  and unschedule_check.  The work is done by orchestration/reconcile.c
 *	  and standing.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_reconcile);
PG_FUNCTION_INFO_V1(backfill_check);
PG_FUNCTION_INFO_V1(backfill_schedule_check);
PG_FUNCTION_INFO_V1(backfill_unschedule_check);
PG_FUNCTION_INFO_V1(backfill_run_check);

/* Columns of reconcile() and check(). */
#define REC_NATTS 10

/*
 * EmitChunks
 *		Put the n chunks into the materialized result of reconcile/check.
 */
static int
EmitChunks(FunctionCallInfo fcinfo, RecChunk *chunks, int n, bool not_run)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext rowcxt = AllocSetContextCreate(CurrentMemoryContext,
												 "backfill reconcile row",
												 ALLOCSET_SMALL_SIZES);
	MemoryContext oldcxt;
	int			k;
	int			left_out = 0;

	for (k = 0; k < n; k++)
	{
		RecChunk   *c = &chunks[k];
		Datum		values[REC_NATTS];
		bool		nulls[REC_NATTS];

		CHECK_FOR_INTERRUPTS();
		if (!not_run && c->verdict == VERDICT_NOT_RUN &&
			(c->status == CHUNK_PENDING || c->status == CHUNK_CANCELLED))
		{
			left_out++;
			continue;
		}
		MemoryContextReset(rowcxt);
		oldcxt = MemoryContextSwitchTo(rowcxt);
		memset(nulls, 0, sizeof(nulls));
		values[0] = Int32GetDatum(c->chunk_no);
		values[1] = TimestampTzGetDatum(c->start);
		values[2] = TimestampTzGetDatum(c->end);
		if (c->status != CHUNK_NONE)
			values[3] = CStringGetTextDatum(ChunkStatusName(c->status));
		else
			nulls[3] = true;
		values[4] = c->target_value;
		nulls[4] = c->target_null;
		values[5] = c->ledger_value;
		nulls[5] = c->ledger_null;
		values[6] = BoolGetDatum(c->ledger_ok);
		nulls[6] = c->ledger_ok_null;
		values[7] = c->neighbor_median;
		nulls[7] = c->median_null;
		values[8] = BoolGetDatum(c->neighbor_ok);
		nulls[8] = c->neighbor_ok_null;
		if (c->verdict != VERDICT_NONE)
			values[9] = CStringGetTextDatum(VerdictName(c->verdict));
		else
			nulls[9] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		MemoryContextSwitchTo(oldcxt);
	}
	MemoryContextDelete(rowcxt);
	return left_out;
}

/*
 * backfill_reconcile
 *		reconcile(run_id, include_not_run) -> setof (chunk_no, chunk_start,
 *		chunk_end, status, target_value, ledger_value, ledger_ok,
 *		neighbor_median, neighbor_ok, verdict): ReconcileRun.  The chunks
 *		that did not run (pending or cancelled, verdict not_run) are left
 *		out unless include_not_run, with a NOTICE that counts them (a year
 *		planned and a day run is one row, not 366); a failed chunk stays.  0.1.0's
 *		signature had no second argument: then they are all listed.
 */
Datum
backfill_reconcile(PG_FUNCTION_ARGS)
{
	RecChunk   *chunks;
	int			n;
	int64		run_id;
	bool		not_run = true;
	int			left_out;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "run_id", NULL);
	if (PG_NARGS() > 1)
	{
		RequireArg(fcinfo, 1, "include_not_run", NULL);
		not_run = PG_GETARG_BOOL(1);
	}
	run_id = PG_GETARG_INT64(0);
	InitMaterializedSRF(fcinfo, 0);

	SpiConnect();
	n = ReconcileRun(run_id, &chunks);
	left_out = EmitChunks(fcinfo, chunks, n, not_run);
	SpiFinish();
	if (left_out > 0)
		ereport(NOTICE,
				(errmsg_plural("%d chunk of run %lld did not run (pending or cancelled) and is left out",
							   "%d chunks of run %lld did not run (pending or cancelled) and are left out",
							   left_out, left_out, (long long) run_id),
				 errhint("backfill.reconcile(%lld, include_not_run => true) lists them with verdict not_run.",
						 (long long) run_id)));
	return (Datum) 0;
}

/*
 * backfill_check
 *		check(target, range_start, range_end) -> the columns of reconcile:
 *		the comparison of reconcile for any range of a registered target,
 *		chunked by its chunk interval in the session TimeZone; stores
 *		nothing (CheckRange).
 */
Datum
backfill_check(PG_FUNCTION_ARGS)
{
	RecChunk   *chunks;
	int			n;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "target", NULL);
	InitMaterializedSRF(fcinfo, 0);

	SpiConnect();
	n = CheckRange(PG_GETARG_OID(0),
				   PG_ARGISNULL(1) ? 0 : PG_GETARG_TIMESTAMPTZ(1), PG_ARGISNULL(1),
				   PG_ARGISNULL(2) ? 0 : PG_GETARG_TIMESTAMPTZ(2), PG_ARGISNULL(2),
				   &chunks);
	(void) EmitChunks(fcinfo, chunks, n, true);
	SpiFinish();
	return (Datum) 0;
}

/*
 * backfill_schedule_check
 *		schedule_check(target, cron, lookback) -> the check's id
 *		(ScheduleCheck), which unschedule_check and run_check take.
 */
Datum
backfill_schedule_check(PG_FUNCTION_ARGS)
{
	int64		check_id;
	char	   *cron;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "target", NULL);
	RequireArg(fcinfo, 1, "cron schedule", "Give a cron expression such as '0 6 * * *'.");
	RequireArg(fcinfo, 2, "lookback", NULL);
	cron = text_to_cstring(PG_GETARG_TEXT_PP(1));
	RequireMaxLength(cron, "cron", BACKFILL_MAX_WORD);

	SpiConnect();
	check_id = ScheduleCheck(PG_GETARG_OID(0), cron, PG_GETARG_INTERVAL_P(2));
	SpiFinish();
	PG_RETURN_INT64(check_id);
}

/*
 * backfill_unschedule_check
 *		unschedule_check(check_id) -> whether a pg_cron job was removed
 *		(UnscheduleCheck).
 */
Datum
backfill_unschedule_check(PG_FUNCTION_ARGS)
{
	bool		removed;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "check_id", NULL);

	SpiConnect();
	removed = UnscheduleCheck(PG_GETARG_INT64(0));
	SpiFinish();
	PG_RETURN_BOOL(removed);
}

/*
 * backfill_run_check
 *		run_check(check_id) -> the number of failing chunks (RunCheck).
 */
Datum
backfill_run_check(PG_FUNCTION_ARGS)
{
	int32		failing;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "check_id", NULL);

	SpiConnect();
	failing = RunCheck(PG_GETARG_INT64(0));
	SpiFinish();
	PG_RETURN_INT32(failing);
}
