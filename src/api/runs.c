/*-------------------------------------------------------------------------
 *
 * runs.c
 *	  SQL entry points of runs (doc/runs.md): plan, run, backfill, cancel,
 *	  preview and replan.  The work is done by orchestration/plan.c, cascade.c
 *	  and run.c, and the chunk engine.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "access/htup_details.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_plan);
PG_FUNCTION_INFO_V1(backfill_run);
PG_FUNCTION_INFO_V1(backfill_backfill);
PG_FUNCTION_INFO_V1(backfill_cancel);
PG_FUNCTION_INFO_V1(backfill_preview);
PG_FUNCTION_INFO_V1(backfill_replan);

/*
 * RangeRequest
 *		The arguments (target, range_start, range_end, chunk, note) that
 *		plan and backfill share, from argument 0 on, into req (zeroed
 *		first; NULLs are left for PlanRun to refuse, except the target's,
 *		checked by the caller).
 */
static void
RangeRequest(FunctionCallInfo fcinfo, PlanRequest *req)
{
	memset(req, 0, sizeof(PlanRequest));
	req->target = PG_GETARG_OID(0);
	req->start_null = PG_ARGISNULL(1);
	req->start = req->start_null ? 0 : PG_GETARG_TIMESTAMPTZ(1);
	req->end_null = PG_ARGISNULL(2);
	req->end = req->end_null ? 0 : PG_GETARG_TIMESTAMPTZ(2);
	req->chunk = PG_ARGISNULL(3) ? NULL : PG_GETARG_INTERVAL_P(3);
	req->note = PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4));
}

/*
 * backfill_plan
 *		plan(target, range_start, range_end, chunk, note, probe, backwards,
 *		clear_no_source, only_chunks, cascade, keep_replaced) -> run_id,
 *		NULL when nothing needs planning (PipelinePlan).
 */
Datum
backfill_plan(PG_FUNCTION_ARGS)
{
	PlanRequest req;
	int64		run_id;
	bool		planned;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "target", NULL);
	RequireArg(fcinfo, 5, "probe", NULL);
	RequireArg(fcinfo, 6, "backwards", NULL);
	RequireArg(fcinfo, 7, "clear_no_source", NULL);
	RequireArg(fcinfo, 9, "cascade", NULL);
	RangeRequest(fcinfo, &req);
	req.probe = PG_GETARG_BOOL(5);
	req.backwards = PG_GETARG_BOOL(6);
	req.clear_no_source = PG_GETARG_BOOL(7);
	req.only = ParseOnlyChunks(PG_ARGISNULL(8) ? NULL :
							   text_to_cstring(PG_GETARG_TEXT_PP(8)));
	req.cascade = PG_GETARG_BOOL(9);
	/* keep_replaced (0.2.0): NULL is the definition's */
	req.keep_given = PG_NARGS() > 10 && !PG_ARGISNULL(10);
	req.keep_replaced = req.keep_given && PG_GETARG_BOOL(10);

	SpiConnect();
	run_id = PipelinePlan(&req, &planned);
	SpiFinish();
	if (!planned)
		PG_RETURN_NULL();
	PG_RETURN_INT64(run_id);
}

/*
 * backfill_run
 *		CALL backfill.run(run_id, max_chunks, parallel): a pg_cron tick's
 *		housekeeping first (ScheduleRunTick), then ExecuteRun.  Only as a
 *		top-level CALL.
 */
Datum
backfill_run(PG_FUNCTION_ARGS)
{
	int64		run_id;
	int			max_chunks;
	int			parallel;

	RequireTopLevelCall(fcinfo, "backfill.run");
	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "run_id", NULL);
	run_id = PG_GETARG_INT64(0);
	max_chunks = MaxChunksArg(fcinfo, 1);
	parallel = ParallelArg(fcinfo, 2, ScheduleCalledFromCron());

	SpiConnectNonatomic();
	ScheduleRunTick(run_id);
	ExecuteRun(run_id, max_chunks, parallel);
	SpiFinish();
	PG_RETURN_VOID();
}

/*
 * backfill_backfill
 *		CALL backfill.backfill(target, range_start, range_end, chunk, note,
 *		parallel, INOUT run_id): a plan without a probe, run to the end
 *		(BackfillRange); the run id comes back as the one-row result of the
 *		CALL (its run_id argument, if given, is ignored).  Only as a
 *		top-level CALL.  The same symbol served 0.1.0's signature without
 *		run_id (which RequireCatalogVersion refuses now): with no output
 *		argument, nothing is returned.
 */
Datum
backfill_backfill(PG_FUNCTION_ARGS)
{
	PlanRequest req;
	int			parallel;
	int64		run_id;
	TupleDesc	tupdesc;
	Datum		values[1];
	bool		nulls[1] = {false};

	RequireTopLevelCall(fcinfo, "backfill.backfill");
	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "target", NULL);
	RangeRequest(fcinfo, &req);
	parallel = ParallelArg(fcinfo, 5, false);

	SpiConnectNonatomic();
	run_id = BackfillRange(&req, parallel);
	SpiFinish();

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		PG_RETURN_VOID();
	tupdesc = BlessTupleDesc(tupdesc);
	values[0] = Int64GetDatum(run_id);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * backfill_cancel
 *		cancel(run_id) -> chunks cancelled (CancelRun).
 */
Datum
backfill_cancel(PG_FUNCTION_ARGS)
{
	int32		n;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "run_id", NULL);

	SpiConnect();
	n = CancelRun(PG_GETARG_INT64(0));
	SpiFinish();
	PG_RETURN_INT32(n);
}

/*
 * backfill_replan
 *		replan(run_id) -> the new run's id (ReplanRun).
 */
Datum
backfill_replan(PG_FUNCTION_ARGS)
{
	int64		run_id;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "run_id", NULL);

	SpiConnect();
	run_id = ReplanRun(PG_GETARG_INT64(0));
	SpiFinish();
	PG_RETURN_INT64(run_id);
}

/*
 * backfill_preview
 *		preview(target, range_start, range_end) -> one row (rows_deleted,
 *		rows_inserted, before_value, after_value, ledger_value): what
 *		replacing the range would do, rolled back (PreviewRange).
 */
Datum
backfill_preview(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PreviewResult result;
	Datum		out[5];
	bool		outnull[5];

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "target", NULL);
	RangeArgs(fcinfo, 1);

	SpiConnect();
	PreviewRange(PG_GETARG_OID(0), PG_GETARG_TIMESTAMPTZ(1),
				 PG_GETARG_TIMESTAMPTZ(2), &result);
	InitMaterializedSRF(fcinfo, 0);
	out[0] = Int64GetDatum(result.rr.rows_deleted);
	outnull[0] = false;
	out[1] = Int64GetDatum(result.rr.rows_inserted);
	outnull[1] = false;
	out[2] = result.rr.before_value;
	outnull[2] = !result.rr.have_values || result.rr.before_null;
	out[3] = result.rr.after_value;
	outnull[3] = !result.rr.have_values || result.rr.after_null;
	out[4] = result.ledger_value;
	outnull[4] = result.ledger_null;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, outnull);
	SpiFinish();
	return (Datum) 0;
}
