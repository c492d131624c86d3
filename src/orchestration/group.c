/*-------------------------------------------------------------------------
 *
 * group.c
 *	  Groups: the runs of a cascading plan share a group_id (the root
 *	  run's id).  A chunk of a run in a group executes only when every
 *	  chunk of its upstream runs that it covers is settled and no other
 *	  run of the group has failed (PipelineChunkReady, called by the run
 *	  loop); GroupRuns lists a group's runs in dependency order.
 *
 * run_group and cancel_group (run.c) and schedule_group (schedule.c) sit
 * beside their one-run versions: the run loop asks this file, so this file
 * must not call the run loop.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "backfill.h"

/*
 * PipelineChunkCheck
 *		PipelineChunkReady, with its NOTICE when "report".  A run stopped by a failure in its group is told
 *		the failed chunk's next step (run_group, or replan_group for a
 *		cause in the definition).  A no_source chunk of an upstream run
 *		counts as settled unless that run still has to clear it.  A pg_cron
 *		job of a run that finds the group stopped by a failure does nothing
 *		and keeps its schedule (a job never removes itself: cron.c); once
 *		the failed run is retried by hand, its ticks go on.
 */
static bool
PipelineChunkCheck(int64 run_id, const char *relname, TimestampTz lo,
				   TimestampTz hi, bool report)
{
	Oid			argtypes[3] = {INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[3];
	bool		isnull;
	int64		group_id;
	int64		failed;
	bool		failed_null;
	int64		up_run;
	bool		up_null;
	int32		up_chunk;
	char	   *up_status;
	char	   *next_step;

	values[0] = Int64GetDatum(run_id);
	values[1] = TimestampTzGetDatum(lo);
	values[2] = TimestampTzGetDatum(hi);
	CatalogExec("SELECT r.group_id,"
				" (SELECT pg_catalog.min(f.run_id) FROM backfill.runs f"
				"   WHERE f.group_id OPERATOR(pg_catalog.=) r.group_id"
				"   AND f.run_id OPERATOR(pg_catalog.<>) r.run_id"
				"   AND f.status OPERATOR(pg_catalog.=) 'failed'),"
				" w.run_id, w.chunk_no, w.status,"
				" (SELECT fc.next_step FROM backfill.runs f"
				"   JOIN backfill.chunks fc ON fc.run_id OPERATOR(pg_catalog.=) f.run_id"
				"   WHERE f.group_id OPERATOR(pg_catalog.=) r.group_id"
				"   AND f.run_id OPERATOR(pg_catalog.<>) r.run_id"
				"   AND f.status OPERATOR(pg_catalog.=) 'failed'"
				"   AND fc.status OPERATOR(pg_catalog.=) 'failed'"
				"   ORDER BY f.run_id, fc.finished_at DESC NULLS LAST LIMIT 1)"
				" FROM backfill.runs r"
				" LEFT JOIN LATERAL ("
				"  SELECT uc.run_id, uc.chunk_no, uc.status"
				"  FROM backfill.chunks uc JOIN backfill.runs u"
				"   ON u.run_id OPERATOR(pg_catalog.=) uc.run_id"
				"  WHERE uc.run_id OPERATOR(pg_catalog.=) ANY (r.upstream_runs)"
				"   AND uc.chunk_start OPERATOR(pg_catalog.<) $3"
				"   AND uc.chunk_end OPERATOR(pg_catalog.>) $2"
				"   AND NOT (uc.status OPERATOR(pg_catalog.=) 'done'"
				"    OR (uc.status OPERATOR(pg_catalog.=) 'no_source'"
				"        AND (uc.finished_at IS NOT NULL OR NOT u.clear_no_source)))"
				"  ORDER BY uc.run_id, uc.chunk_no LIMIT 1) w ON true"
				" WHERE r.run_id OPERATOR(pg_catalog.=) $1"
				" AND r.group_id IS NOT NULL",
				3, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		SPI_freetuptable(SPI_tuptable);
		return true;
	}
	group_id = SpiGetInt64(0, 1, &isnull);
	failed = SpiGetInt64(0, 2, &failed_null);
	up_run = SpiGetInt64(0, 3, &up_null);
	up_chunk = SpiGetInt32(0, 4, &isnull);
	up_status = SpiGetText(0, 5);
	next_step = SpiGetText(0, 6);
	SPI_freetuptable(SPI_tuptable);

	if (!report)
		return failed_null && up_null;
	if (!failed_null)
	{
		ereport(NOTICE,
				(errmsg("run %lld %s waits: run %lld of its group %lld has failed",
						(long long) run_id, relname, (long long) failed,
						(long long) group_id),
				 errdetail("The first failure stops the whole group."),
				 next_step != NULL ?
				 errhint("Fix the cause, then %s (the failed chunk's next step), or cancel the group with backfill.cancel_group(%lld).",
						 next_step, (long long) group_id) :
				 errhint("Fix the cause, then CALL backfill.run_group(%lld) to retry and continue, or cancel the group with backfill.cancel_group(%lld).",
						 (long long) group_id, (long long) group_id)));
		return false;
	}
	if (!up_null)
	{
		ereport(NOTICE,
				(errmsg("run %lld %s waits: its chunk [%s, %s) needs chunk %d of upstream run %lld, which is %s",
						(long long) run_id, relname, TimestampText(lo),
						TimestampText(hi), up_chunk,
						(long long) up_run, up_status),
				 errhint("The runs of group %lld go in dependency order: CALL backfill.run_group(%lld).",
						 (long long) group_id, (long long) group_id)));
		return false;
	}
	return true;
}

/*
 * PipelineChunkReady
 *		See backfill.h.
 */
bool
PipelineChunkReady(int64 run_id, const char *relname, TimestampTz lo,
				   TimestampTz hi)
{
	return PipelineChunkCheck(run_id, relname, lo, hi, true);
}

/*
 * PipelineChunkSettled
 *		See backfill.h: PipelineChunkReady without its NOTICE.
 */
bool
PipelineChunkSettled(int64 run_id, TimestampTz lo, TimestampTz hi)
{
	return PipelineChunkCheck(run_id, NULL, lo, hi, false);
}

/*
 * GroupRuns
 *		The run ids of a group in run id order (dependency order), in the
 *		current memory context.  A group exists for the caller when it may
 *		see one of its runs (CatalogRowVisible, as backfill.group_progress
 *		shows it); an unknown group and one whose runs are all invisible
 *		raise the same 42704.  The actions then check each run as usual
 *		(an invisible run of a visible group is "run N does not exist").
 *		Caller is connected to SPI.
 */
List *
GroupRuns(int64 group_id, bool unfinished_only)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	List	   *runs = NIL;
	bool		visible = false;
	int			i;

	values[0] = Int64GetDatum(group_id);
	CatalogExec("SELECT run_id, status, target::pg_catalog.oid, created_by_oid"
				" FROM backfill.runs"
				" WHERE group_id OPERATOR(pg_catalog.=) $1 ORDER BY run_id",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	for (i = 0; i < (int) SPI_processed; i++)
	{
		bool		isnull;
		int64		run_id = SpiGetInt64(i, 1, &isnull);
		RunStatus	status = ParseRunStatus(SpiGetText(i, 2));

		CHECK_FOR_INTERRUPTS();
		if (!visible)
			visible = CatalogRowVisible(SpiGetOid(i, 3, &isnull),
										SpiGetOid(i, 4, &isnull));
		if (unfinished_only &&
			(status == RUN_DONE || status == RUN_CANCELLED))
			continue;
		runs = lappend(runs, palloc(sizeof(int64)));
		*(int64 *) llast(runs) = run_id;
	}
	SPI_freetuptable(SPI_tuptable);
	if (!visible)
		RaiseGroupDoesNotExist(group_id);
	return runs;
}

