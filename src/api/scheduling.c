/*-------------------------------------------------------------------------
 *
 * scheduling.c
 *	  SQL entry points of scheduling (doc/scheduling.md): schedule,
 *	  unschedule, lock_target, in_quiet_hours and cleanup_jobs, the event
 *	  trigger of the scheduling-role guard (backfill._job_guard), and the
 *	  failing pg_cron ticks that backfill.progress shows (_tick_failures).
 *	  The work is done by orchestration/schedule.c, base/cron.c and
 *	  base/jobguard.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/event_trigger.h"
#include "commands/extension.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/parsenodes.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_schedule);
PG_FUNCTION_INFO_V1(backfill_unschedule);
PG_FUNCTION_INFO_V1(backfill_lock_target);
PG_FUNCTION_INFO_V1(backfill_in_quiet_hours);
PG_FUNCTION_INFO_V1(backfill_cron_eta);
PG_FUNCTION_INFO_V1(backfill_cleanup_jobs);
PG_FUNCTION_INFO_V1(backfill_job_guard);
PG_FUNCTION_INFO_V1(backfill__tick_failures);

/*
 * backfill_schedule
 *		schedule(run_id, cron, chunks_per_tick, quiet_hours, parallel) ->
 *		job id: ScheduleRun.
 */
Datum
backfill_schedule(PG_FUNCTION_ARGS)
{
	int64		job_id;
	char	   *cron;
	int32		parallel;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "run_id", NULL);
	RequireArg(fcinfo, 1, "cron", "Pass a cron expression such as '*/5 * * * *'.");
	RequireArg(fcinfo, 2, "chunks_per_tick", NULL);
	cron = text_to_cstring(PG_GETARG_TEXT_PP(1));
	RequireMaxLength(cron, "cron", BACKFILL_MAX_WORD);
	parallel = ParallelArg(fcinfo, 4, false);

	SpiConnect();
	job_id = ScheduleRun(PG_GETARG_INT64(0), cron,
						 PG_GETARG_INT32(2),
						 PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3)),
						 parallel);
	SpiFinish();
	PG_RETURN_INT64(job_id);
}

/*
 * backfill_unschedule
 *		unschedule(run_id) -> whether a job was removed: UnscheduleRun.
 */
Datum
backfill_unschedule(PG_FUNCTION_ARGS)
{
	bool		removed;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "run_id", NULL);

	SpiConnect();
	removed = UnscheduleRun(PG_GETARG_INT64(0));
	SpiFinish();
	PG_RETURN_BOOL(removed);
}

/*
 * backfill_lock_target
 *		lock_target(target): the daily job's share of the target lock,
 *		until the end of the caller's transaction (LockTargetForJob).
 */
Datum
backfill_lock_target(PG_FUNCTION_ARGS)
{
	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "target", NULL);
	LockTargetForJob(PG_GETARG_OID(0));
	PG_RETURN_VOID();
}

/*
 * backfill_cron_eta
 *		cron_eta(cron, chunks_per_tick, quiet_hours, timezone,
 *		chunks_left, since) -> interval: how long from "since" until a run
 *		with chunks_left chunks is done on that schedule (ScheduleEta);
 *		NULL when the cron text is not understood, the end is more than a
 *		year away, or an argument but quiet_hours and timezone is NULL.
 */
Datum
backfill_cron_eta(PG_FUNCTION_ARGS)
{
	TimestampTz since;
	TimestampTz done_at;
	char	   *cron;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(4) ||
		PG_ARGISNULL(5))
		PG_RETURN_NULL();
	cron = text_to_cstring(PG_GETARG_TEXT_PP(0));
	since = PG_GETARG_TIMESTAMPTZ(5);
	if (TIMESTAMP_NOT_FINITE(since))
		PG_RETURN_NULL();
	if (!ScheduleEta(cron, PG_GETARG_INT32(1),
					 PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2)),
					 PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3)),
					 PG_GETARG_INT64(4), since, &done_at))
		PG_RETURN_NULL();
	PG_RETURN_DATUM(DirectFunctionCall2(timestamp_mi,
										TimestampTzGetDatum(done_at),
										TimestampTzGetDatum(since)));
}

/*
 * backfill_in_quiet_hours
 *		in_quiet_hours(quiet_hours, timezone, at): the decision a scheduled
 *		tick makes, for any instant.  NULL quiet_hours means no restriction
 *		(true); a NULL timezone means the session's TimeZone; NULL at gives
 *		NULL.
 */
Datum
backfill_in_quiet_hours(PG_FUNCTION_ARGS)
{
	char	   *quiet_hours;
	char	   *tzname = NULL;
	TimestampTz at;

	if (PG_ARGISNULL(2))
		PG_RETURN_NULL();
	at = PG_GETARG_TIMESTAMPTZ(2);
	if (PG_ARGISNULL(0))
		PG_RETURN_BOOL(true);
	quiet_hours = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!PG_ARGISNULL(1))
		tzname = text_to_cstring(PG_GETARG_TEXT_PP(1));
	RequireMaxLength(tzname, "timezone", BACKFILL_MAX_WORD);
	PG_RETURN_BOOL(InQuietHours(quiet_hours, tzname, at));
}

/*
 * backfill_cleanup_jobs
 *		cleanup_jobs() -> (job_id, job_name, username): remove now the
 *		pg_cron jobs of runs and checks whose scheduling role was dropped,
 *		and the parked jobs of finished runs (what every backfill tick
 *		does anyway); superusers only (CleanupJobs).
 */
Datum
backfill_cleanup_jobs(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *jobs;
	ListCell   *lc;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	jobs = CleanupJobs();
	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, jobs)
	{
		CronJob    *job = (CronJob *) lfirst(lc);
		Datum		row[3];
		bool		nulls[3] = {false, false, false};

		row[0] = Int64GetDatum(job->job_id);
		row[1] = CStringGetTextDatum(job->jobname);
		row[2] = CStringGetTextDatum(job->owner);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, nulls);
	}
	return (Datum) 0;
}

/*
 * backfill_job_guard
 *		The event trigger function of backfill_job_guard (ddl_command_end
 *		of DROP OWNED and REVOKE): the roles the command named that have
 *		backfill jobs but no longer hold the guard lose those jobs
 *		(JobGuardRemoveJobs, base/jobguard.c).  Runs as the user who ran
 *		the command; every statement goes through CatalogExec.  Nothing
 *		happens inside CREATE EXTENSION scripts or without pg_cron.  No
 *		Citus coordinator check: Citus runs DROP OWNED and REVOKE on the
 *		workers too, which must not fail because of it (a worker, where
 *		nothing is scheduled, finds no job to remove).
 */
Datum
backfill_job_guard(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	List	   *roles = NIL;
	List	   *roleids = NIL;
	const char *command;
	ListCell   *lc;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function backfill._job_guard() can only be called as an event trigger")));
	trigdata = (EventTriggerData *) fcinfo->context;
	if (creating_extension || !CronUsable())
		PG_RETURN_VOID();

	if (IsA(trigdata->parsetree, DropOwnedStmt))
	{
		roles = ((DropOwnedStmt *) trigdata->parsetree)->roles;
		command = "DROP OWNED";
	}
	else if (IsA(trigdata->parsetree, GrantStmt) &&
			 !((GrantStmt *) trigdata->parsetree)->is_grant)
	{
		roles = ((GrantStmt *) trigdata->parsetree)->grantees;
		command = "REVOKE";
	}
	else
		PG_RETURN_VOID();

	foreach(lc, roles)
	{
		RoleSpec   *spec = lfirst_node(RoleSpec, lc);
		Oid			roleid;

		if (spec->roletype == ROLESPEC_PUBLIC)
			continue;
		roleid = get_rolespec_oid(spec, true);
		if (OidIsValid(roleid))
			roleids = lappend_oid(roleids, roleid);
	}

	/* one remover of jobs at a time (orchestration/schedule.c) */
	(void) ScheduleSweepLock(true);
	SpiConnect();
	(void) JobGuardRemoveJobs(roleids, command);
	SpiFinish();
	PG_RETURN_VOID();
}

/*
 * backfill__tick_failures
 *		_tick_failures() -> (kind, id, job_id, ticks_failed, failed_at,
 *		message, next_step): the scheduled runs, standing checks and
 *		refreshes the caller may see whose latest pg_cron tick failed
 *		(ScheduleTickFailures); read by backfill.progress.
 */
Datum
backfill__tick_failures(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	InitMaterializedSRF(fcinfo, 0);
	SpiConnect();
	ScheduleTickFailures(rsinfo->setResult, rsinfo->setDesc);
	SpiFinish();
	return (Datum) 0;
}
