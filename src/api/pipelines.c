/*-------------------------------------------------------------------------
 *
 * pipelines.c
 *	  SQL entry points of pipelines (doc/pipelines.md): depend, undepend,
 *	  the group functions run_group, cancel_group and schedule_group, and
 *	  lineage_chart.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_run_group);
PG_FUNCTION_INFO_V1(backfill_cancel_group);
PG_FUNCTION_INFO_V1(backfill_schedule_group);

/*
 * backfill_run_group
 *		CALL backfill.run_group(group_id, max_chunks): the group's runs in
 *		dependency order (RunGroup).  Only as a top-level CALL.
 */
Datum
backfill_run_group(PG_FUNCTION_ARGS)
{
	int64		group_id;
	int			max_chunks;

	RequireTopLevelCall(fcinfo, "backfill.run_group");
	RequireArg(fcinfo, 0, "group_id", NULL);
	group_id = PG_GETARG_INT64(0);
	max_chunks = MaxChunksArg(fcinfo, 1);

	SpiConnectNonatomic();
	RunGroup(group_id, max_chunks);
	SpiFinish();
	PG_RETURN_VOID();
}

/*
 * backfill_cancel_group
 *		cancel_group(group_id) -> chunks cancelled: cancel on every
 *		unfinished run of the group (CancelGroup).
 */
Datum
backfill_cancel_group(PG_FUNCTION_ARGS)
{
	int32		total;

	RequireArg(fcinfo, 0, "group_id", NULL);

	SpiConnect();
	total = CancelGroup(PG_GETARG_INT64(0));
	SpiFinish();
	PG_RETURN_INT32(total);
}

/*
 * backfill_schedule_group
 *		schedule_group(group_id, cron, chunks_per_tick, quiet_hours) -> runs
 *		scheduled: schedule on every unfinished run of the group
 *		(ScheduleGroup).
 */
Datum
backfill_schedule_group(PG_FUNCTION_ARGS)
{
	int32		n;

	RequireArg(fcinfo, 0, "group_id", NULL);
	RequireArg(fcinfo, 1, "cron", "Pass a cron expression such as '*/5 * * * *'.");
	RequireArg(fcinfo, 2, "chunks_per_tick", NULL);

	SpiConnect();
	n = ScheduleGroup(PG_GETARG_INT64(0),
					  text_to_cstring(PG_GETARG_TEXT_PP(1)),
					  PG_GETARG_INT32(2),
					  PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3)));
	SpiFinish();
	PG_RETURN_INT32(n);
}
