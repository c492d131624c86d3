/*-------------------------------------------------------------------------
 *
 * pipelines.c
 *	  SQL entry points of pipelines (doc/pipelines.md): depend, undepend,
 *	  the group functions run_group, cancel_group, schedule_group,
 *	  unschedule_group and replan_group, and lineage_chart.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_depend);
PG_FUNCTION_INFO_V1(backfill_undepend);
PG_FUNCTION_INFO_V1(backfill_run_group);
PG_FUNCTION_INFO_V1(backfill_cancel_group);
PG_FUNCTION_INFO_V1(backfill_schedule_group);
PG_FUNCTION_INFO_V1(backfill_unschedule_group);
PG_FUNCTION_INFO_V1(backfill_lineage_chart);
PG_FUNCTION_INFO_V1(backfill_replan_group);

/*
 * backfill_depend
 *		depend(downstream, upstream) -> true when added (AddDependency).
 */
Datum
backfill_depend(PG_FUNCTION_ARGS)
{
	bool		added;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "downstream", NULL);
	RequireArg(fcinfo, 1, "upstream", NULL);

	SpiConnect();
	added = AddDependency(PG_GETARG_OID(0), PG_GETARG_OID(1));
	SpiFinish();
	PG_RETURN_BOOL(added);
}

/*
 * backfill_undepend
 *		undepend(downstream, upstream) -> true when removed
 *		(RemoveDependency).
 */
Datum
backfill_undepend(PG_FUNCTION_ARGS)
{
	bool		removed;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "downstream", NULL);
	RequireArg(fcinfo, 1, "upstream", NULL);

	SpiConnect();
	removed = RemoveDependency(PG_GETARG_OID(0), PG_GETARG_OID(1));
	SpiFinish();
	PG_RETURN_BOOL(removed);
}

/*
 * backfill_run_group
 *		CALL backfill.run_group(group_id, max_chunks, parallel): the group's
 *		runs in dependency order (RunGroup).  Only as a top-level CALL.
 */
Datum
backfill_run_group(PG_FUNCTION_ARGS)
{
	int64		group_id;
	int			max_chunks;
	int			parallel;

	RequireTopLevelCall(fcinfo, "backfill.run_group");
	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "group_id", NULL);
	group_id = PG_GETARG_INT64(0);
	max_chunks = MaxChunksArg(fcinfo, 1);
	parallel = ParallelArg(fcinfo, 2, false);

	SpiConnectNonatomic();
	RunGroup(group_id, max_chunks, parallel);
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

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "group_id", NULL);

	SpiConnect();
	total = CancelGroup(PG_GETARG_INT64(0));
	SpiFinish();
	PG_RETURN_INT32(total);
}

/*
 * backfill_schedule_group
 *		schedule_group(group_id, cron, chunks_per_tick, quiet_hours,
 *		parallel) -> runs scheduled: schedule on every unfinished run of the
 *		group (ScheduleGroup).
 */
Datum
backfill_schedule_group(PG_FUNCTION_ARGS)
{
	int32		n;
	int32		parallel;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "group_id", NULL);
	RequireArg(fcinfo, 1, "cron", "Pass a cron expression such as '*/5 * * * *'.");
	RequireArg(fcinfo, 2, "chunks_per_tick", NULL);
	parallel = ParallelArg(fcinfo, 4, false);

	SpiConnect();
	n = ScheduleGroup(PG_GETARG_INT64(0),
					  text_to_cstring(PG_GETARG_TEXT_PP(1)),
					  PG_GETARG_INT32(2),
					  PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3)),
					  parallel);
	SpiFinish();
	PG_RETURN_INT32(n);
}

/*
 * backfill_unschedule_group
 *		unschedule_group(group_id) -> the pg_cron jobs removed: unschedule
 *		on every unfinished run of the group (UnscheduleGroup).
 */
Datum
backfill_unschedule_group(PG_FUNCTION_ARGS)
{
	int32		n;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "group_id", NULL);

	SpiConnect();
	n = UnscheduleGroup(PG_GETARG_INT64(0));
	SpiFinish();
	PG_RETURN_INT32(n);
}

/*
 * backfill_lineage_chart
 *		lineage_chart(target, range_start, range_end) -> setof text: the
 *		lines of LineageChart.
 */
Datum
backfill_lineage_chart(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *lines;
	ListCell   *lc;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "target", NULL);
	RangeArgs(fcinfo, 1);

	SpiConnect();
	lines = LineageChart(PG_GETARG_OID(0), PG_GETARG_TIMESTAMPTZ(1),
						 PG_GETARG_TIMESTAMPTZ(2));
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	foreach(lc, lines)
	{
		Datum		value = CStringGetTextDatum((char *) lfirst(lc));
		bool		isnull = false;

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
	}
	SpiFinish();
	return (Datum) 0;
}

/*
 * backfill_replan_group
 *		replan_group(group_id) -> the new group's id (ReplanGroup).
 */
Datum
backfill_replan_group(PG_FUNCTION_ARGS)
{
	int64		group_id;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "group_id", NULL);

	SpiConnect();
	group_id = ReplanGroup(PG_GETARG_INT64(0));
	SpiFinish();
	PG_RETURN_INT64(group_id);
}
