/*-------------------------------------------------------------------------
 *
 * schedule.c
 *	  Handing a run to pg_cron, quiet hours, and yielding to the daily job.
 *
 * backfill.schedule creates a pg_cron job named backfill_run_<id> whose
 * command is built from integers only:
 *
 *		CALL backfill.run(<id>, max_chunks => <n>)
 *
 * The job is created by calling cron.schedule through SPI with the caller's
 * own privileges, so pg_cron records the caller as the job's owner and the
 * job runs as the caller.  Nothing here is SECURITY DEFINER: a definer
 * would make pg_cron record the definer as the owner.
 *
 * pg_cron is an optional dependency.  Nothing in the install script refers
 * to it; every use goes through SPI at run time, after checking that the
 * extension is installed in this database.
 *
 * The run loop (run.c, chunk.c) uses three helpers from here: whether the
 * current backend is a pg_cron job, whether a tick may work now given the
 * run's quiet hours, and removing a run's job when the run is finished.
 *
 * backfill.lock_target is the daily job's side of the target lock: a
 * transaction-level lock (BackfillLockTag, a key no SQL caller can take) in
 * ShareLock on the key the chunks take in ExclusiveLock, so daily jobs never block each other, a chunk waits for
 * them (at most backfill.lock_timeout, then it is deferred), and they wait
 * for at most one chunk.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "commands/variable.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "postmaster/bgworker.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "backfill.h"

/*
 * ScheduleSweepOrphanJobs
 *		See backfill.h.  Only jobs backfill made are touched: a run's job
 *		recorded in runs.job_id and named backfill_run_<run_id>, a check's
 *		recorded in checks.job_id and named backfill_check_<check_id>, whose
 *		cron.job.username is no longer a role.  pg_cron cannot start such a
 *		job (every tick ends in "FATAL: role ... does not exist"), and no
 *		role but a superuser could remove it.  Read and removed as the
 *		extension owner (a superuser); the run or check keeps the reason in
 *		last_error.  When rsinfo is not NULL, one row (job_id, job_name,
 *		username) per removed job is added to it.  Returns how many jobs
 *		were removed.
 */
int
ScheduleSweepOrphanJobs(ReturnSetInfo *rsinfo)
{
	int			n;
	int			i;
	int64	   *job_ids;
	char	  **job_names;
	char	  **usernames;
	int64	   *run_ids;
	bool	   *is_run;

	if (!PgCronInstalled())
		return 0;
	SpiConnect();
	CatalogExec("SELECT j.jobid, j.jobname::pg_catalog.text,"
				" j.username::pg_catalog.text, r.run_id, true"
				" FROM cron.job j JOIN backfill.runs r"
				"  ON r.job_id OPERATOR(pg_catalog.=) j.jobid"
				" WHERE j.jobname OPERATOR(pg_catalog.=)"
				"  ('backfill_run_' OPERATOR(pg_catalog.||) r.run_id::pg_catalog.text)"
				" AND NOT EXISTS (SELECT FROM pg_catalog.pg_roles o"
				"  WHERE o.rolname OPERATOR(pg_catalog.=) j.username::pg_catalog.name)"
				" UNION ALL"
				" SELECT j.jobid, j.jobname::pg_catalog.text,"
				" j.username::pg_catalog.text, c.check_id, false"
				" FROM cron.job j JOIN backfill.checks c"
				"  ON c.job_id OPERATOR(pg_catalog.=) j.jobid"
				" WHERE j.jobname OPERATOR(pg_catalog.=)"
				"  ('backfill_check_' OPERATOR(pg_catalog.||) c.check_id::pg_catalog.text)"
				" AND NOT EXISTS (SELECT FROM pg_catalog.pg_roles o"
				"  WHERE o.rolname OPERATOR(pg_catalog.=) j.username::pg_catalog.name)"
				" ORDER BY 1",
				0, NULL, NULL, NULL, SPI_OK_SELECT);
	n = (int) SPI_processed;
	job_ids = palloc(sizeof(int64) * (n + 1));
	job_names = palloc(sizeof(char *) * (n + 1));
	usernames = palloc(sizeof(char *) * (n + 1));
	run_ids = palloc(sizeof(int64) * (n + 1));
	is_run = palloc(sizeof(bool) * (n + 1));
	for (i = 0; i < n; i++)
	{
		bool		isnull;

		job_ids[i] = SpiGetInt64(i, 1, &isnull);
		job_names[i] = SpiGetText(i, 2);
		usernames[i] = SpiGetText(i, 3);
		run_ids[i] = SpiGetInt64(i, 4, &isnull);
		is_run[i] = SpiGetBool(i, 5, &isnull);
	}
	SPI_freetuptable(SPI_tuptable);

	for (i = 0; i < n; i++)
	{
		Oid			argtypes[2] = {INT8OID, TEXTOID};
		Datum		values[2];
		char	   *why;

		why = psprintf("scheduling role \"%s\" was dropped: its pg_cron job "
					   INT64_FORMAT " (%s) was removed",
					   usernames[i], job_ids[i], job_names[i]);
		values[0] = Int64GetDatum(job_ids[i]);
		CatalogExec("SELECT cron.unschedule($1)", 1, argtypes, values, NULL,
					SPI_OK_SELECT);
		values[0] = Int64GetDatum(run_ids[i]);
		values[1] = CStringGetTextDatum(why);
		if (is_run[i])
			CatalogExec("UPDATE backfill.runs SET job_id = NULL, last_error = $2"
						" WHERE run_id OPERATOR(pg_catalog.=) $1",
						2, argtypes, values, NULL, SPI_OK_UPDATE);
		else
			CatalogExec("UPDATE backfill.checks SET job_id = NULL, last_error = $2"
						" WHERE check_id OPERATOR(pg_catalog.=) $1",
						2, argtypes, values, NULL, SPI_OK_UPDATE);
		ereport(LOG,
				(errmsg("backfill: %s", why)));
		if (rsinfo != NULL)
		{
			Datum		row[3];
			bool		nulls[3] = {false, false, false};

			row[0] = Int64GetDatum(job_ids[i]);
			row[1] = CStringGetTextDatum(job_names[i]);
			row[2] = CStringGetTextDatum(usernames[i]);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, nulls);
		}
	}
	SpiFinish();
	return n;
}

/*
 * backfill_cleanup_jobs
 *		backfill.cleanup_jobs() -> (job_id, job_name, username): remove now
 *		the pg_cron jobs of runs and checks whose scheduling role was
 *		dropped (what every backfill tick does anyway).  Superusers only.
 */
PG_FUNCTION_INFO_V1(backfill_cleanup_jobs);
Datum
backfill_cleanup_jobs(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function cleanup_jobs"),
				 errdetail("It removes pg_cron jobs of other roles."),
				 errhint("Run it as a superuser.")));
	InitMaterializedSRF(fcinfo, 0);
	(void) ScheduleSweepOrphanJobs(rsinfo);
	return (Datum) 0;
}

/*
 * backfill_schedule
 *		backfill.schedule(run_id, cron, chunks_per_tick, quiet_hours):
 *		hand the rest of a run to a pg_cron job owned by the caller and
 *		return the job id.
 *
 * Scheduling a run again replaces its job (pg_cron keeps the job id when
 * the same role schedules the same job name).
 */
PG_FUNCTION_INFO_V1(backfill_schedule);
Datum
backfill_schedule(PG_FUNCTION_ARGS)
{
	int64		run_id;
	char	   *cron;
	int32		chunks_per_tick;
	char	   *quiet_hours = NULL;
	int			qstart;
	int			qend;
	RunInfo    *run;
	CronJob		old;
	Oid			cronnsp;
	char	   *jobname;
	char	   *command;
	int64		job_id;
	bool		isnull;
	Oid			argtypes[4];
	Datum		values[4];
	char		nulls[4];

	RequireArg(fcinfo, 0, "run_id", NULL);
	RequireArg(fcinfo, 1, "cron", "Pass a cron expression such as '*/5 * * * *'.");
	RequireArg(fcinfo, 2, "chunks_per_tick", NULL);
	run_id = PG_GETARG_INT64(0);
	cron = text_to_cstring(PG_GETARG_TEXT_PP(1));
	chunks_per_tick = PG_GETARG_INT32(2);
	if (chunks_per_tick < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chunks_per_tick must be at least 1")));
	if (!PG_ARGISNULL(3))
	{
		quiet_hours = text_to_cstring(PG_GETARG_TEXT_PP(3));
		ParseQuietHours(quiet_hours, &qstart, &qend);
	}

	RequirePgCron("Scheduling a run creates a pg_cron job; backfill itself works without pg_cron.");

	SpiConnect();
	run = LoadRun(run_id);
	CheckRunIdentity(run, "schedule", false);
	CheckTargetPrivileges(run->target);

	if (strcmp(run->status, "planned") != 0 && strcmp(run->status, "probed") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot schedule run " INT64_FORMAT " because it is %s",
						run_id, run->status),
				 strcmp(run->status, "failed") == 0 ?
				 errhint("Look at the failed chunk in backfill.chunks; CALL backfill.run(" INT64_FORMAT ") retries it.",
						 run_id) : 0));
	if (run->probe && strcmp(run->status, "planned") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot schedule run " INT64_FORMAT " before its probe chunk has run",
						run_id),
				 errdetail("The run was planned with a probe: its first chunk runs alone so that its result can be checked before the rest runs."),
				 errhint("Run CALL backfill.run(" INT64_FORMAT ") first to execute the probe chunk, check it, then schedule the rest.",
						 run_id)));

	/* The run's time zone must be usable for the quiet-hours test. */
	if (quiet_hours != NULL)
		(void) LocalMinuteOfDay(GetCurrentTimestamp(), run->timezone);

	/* pg_cron's own functions need USAGE on its schema. */
	cronnsp = get_namespace_oid("cron", true);
	if (OidIsValid(cronnsp) &&
		pg_namespace_aclcheck(cronnsp, GetUserId(), ACL_USAGE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for schema cron"),
				 errdetail("The pg_cron job is created by, and runs as, the calling role \"%s\".",
						   CurrentUserName()),
				 errhint("A superuser can allow it with GRANT USAGE ON SCHEMA cron TO %s.",
						 quote_identifier(CurrentUserName()))));

	/*
	 * A job of another role would survive beside the new one (pg_cron keys
	 * job names by role): remove it first.  The caller's own job is replaced
	 * in place by cron.schedule.
	 */
	if (run->scheduled && CronLookupJob(run->job_id, &old) &&
		strcmp(old.owner, CurrentUserName()) != 0)
		CronRemoveJob(run_id, &old, true);

	jobname = CronJobName(run_id);
	command = psprintf("CALL backfill.run(" INT64_FORMAT ", max_chunks => %d)",
					   run_id, chunks_per_tick);
	argtypes[0] = TEXTOID;
	argtypes[1] = TEXTOID;
	argtypes[2] = TEXTOID;
	values[0] = CStringGetTextDatum(jobname);
	values[1] = CStringGetTextDatum(cron);
	values[2] = CStringGetTextDatum(command);
	SpiExec("SELECT cron.schedule($1, $2, $3)", 3, argtypes, values, NULL,
			false, 0, SPI_OK_SELECT);
	job_id = SpiGetInt64(0, 1, &isnull);
	if (isnull)
		elog(ERROR, "cron.schedule returned NULL");

	/*
	 * Record the job; the status condition is evaluated again after waiting
	 * for a concurrent run call's row lock, so a run that finished meanwhile
	 * is not left with a job (the whole call rolls back, job included).
	 */
	argtypes[0] = INT8OID;
	argtypes[1] = INT8OID;
	argtypes[2] = INT4OID;
	argtypes[3] = TEXTOID;
	values[0] = Int64GetDatum(run_id);
	values[1] = Int64GetDatum(job_id);
	values[2] = Int32GetDatum(chunks_per_tick);
	values[3] = quiet_hours ? CStringGetTextDatum(quiet_hours) : (Datum) 0;
	memset(nulls, ' ', sizeof(nulls));
	nulls[3] = quiet_hours ? ' ' : 'n';
	CatalogExec("UPDATE backfill.runs"
				" SET job_id = $2, chunks_per_tick = $3, quiet_hours = $4"
				" WHERE run_id OPERATOR(pg_catalog.=) $1"
				" AND status OPERATOR(pg_catalog.=) ANY ('{planned,probed}'::pg_catalog.text[])",
				4, argtypes, values, nulls, SPI_OK_UPDATE);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run " INT64_FORMAT " finished while it was being scheduled",
						run_id),
				 errhint("Look at the run in backfill.runs.")));

	SpiFinish();
	PG_RETURN_INT64(job_id);
}

/*
 * backfill_unschedule
 *		backfill.unschedule(run_id): remove the run's pg_cron job; true when
 *		there was one, false when the run has none (any more).
 */
PG_FUNCTION_INFO_V1(backfill_unschedule);
Datum
backfill_unschedule(PG_FUNCTION_ARGS)
{
	int64		run_id;
	RunInfo    *run;
	CronJob		job;
	bool		removed = false;

	RequireArg(fcinfo, 0, "run_id", NULL);
	run_id = PG_GETARG_INT64(0);

	SpiConnect();
	run = LoadRun(run_id);
	CheckRunIdentity(run, "unschedule", false);
	if (run->scheduled)
	{
		if (PgCronInstalled() && CronLookupJob(run->job_id, &job))
		{
			CronRemoveJob(run_id, &job, true);
			removed = true;
		}
		CronClearJobId(run_id, run->job_id);
	}
	SpiFinish();
	PG_RETURN_BOOL(removed);
}

/*
 * backfill_lock_target
 *		backfill.lock_target(target): the daily job's share of the target
 *		lock, held until the end of the caller's transaction.
 *
 * The caller needs some write privilege on the target (INSERT, UPDATE or
 * DELETE): the lock makes backfill chunks wait, so reading the table is
 * not reason enough to hold it.
 */
PG_FUNCTION_INFO_V1(backfill_lock_target);
Datum
backfill_lock_target(PG_FUNCTION_ARGS)
{
	Oid			relid;
	char		relkind;
	LOCKTAG		tag;

	RequireArg(fcinfo, 0, "target", NULL);
	relid = PG_GETARG_OID(0);
	relkind = get_rel_relkind(relid);
	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", get_rel_name(relid))));
	if (pg_class_aclmask(relid, GetUserId(),
						 ACL_INSERT | ACL_UPDATE | ACL_DELETE,
						 ACLMASK_ANY) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", get_rel_name(relid)),
				 errdetail("backfill.lock_target needs INSERT, UPDATE or DELETE privilege on the table.")));

	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_TARGET, (uint32) relid);
	(void) LockAcquire(&tag, ShareLock, false, false);
	PG_RETURN_VOID();
}

/*
 * backfill_in_quiet_hours
 *		backfill.in_quiet_hours(quiet_hours, timezone, at): the decision a
 *		scheduled tick makes, for any instant.  NULL quiet_hours means no
 *		restriction (true); a NULL timezone means the session's TimeZone.
 */
PG_FUNCTION_INFO_V1(backfill_in_quiet_hours);
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
	PG_RETURN_BOOL(InQuietHours(quiet_hours, tzname, at));
}

/*
 * backfill_schedule_group
 *		schedule_group(group_id, cron, chunks_per_tick, quiet_hours) -> runs
 *		scheduled: backfill.schedule on every run of the group that is not
 *		finished.  Each run gets its own pg_cron job; a tick of a
 *		downstream run whose upstream chunks are not done yet does nothing
 *		(PipelineChunkReady), so the group finishes in dependency order.
 */
PG_FUNCTION_INFO_V1(backfill_schedule_group);
Datum
backfill_schedule_group(PG_FUNCTION_ARGS)
{
	List	   *runs;
	ListCell   *lc;
	int32		n = 0;

	RequireArg(fcinfo, 0, "group_id", NULL);
	RequireArg(fcinfo, 1, "cron", "Pass a cron expression such as '*/5 * * * *'.");
	RequireArg(fcinfo, 2, "chunks_per_tick", NULL);
	SpiConnect();
	runs = GroupRuns(PG_GETARG_INT64(0), true);
	foreach(lc, runs)
	{
		LOCAL_FCINFO(call, 4);

		InitFunctionCallInfoData(*call, NULL, 4, InvalidOid, NULL, NULL);
		call->args[0].value = Int64GetDatum(*(int64 *) lfirst(lc));
		call->args[0].isnull = false;
		call->args[1] = fcinfo->args[1];
		call->args[2] = fcinfo->args[2];
		call->args[3] = fcinfo->args[3];
		(void) backfill_schedule(call);
		n++;
	}
	SpiFinish();
	PG_RETURN_INT32(n);
}

/*
 * NoteTickPrivileges
 *		In a tick of the run's own pg_cron job, as the job's role (no one
 *		else can write the note): record in runs.last_error when that role
 *		can no longer write the run's target (the tick is then refused by
 *		the usual check, and pg_cron alone would keep the reason), or clear
 *		a previous note when it can again, so that backfill.progress shows
 *		why a scheduled run does not move.  Caller is connected to SPI and
 *		commits.
 */
void
NoteTickPrivileges(int64 run_id)
{
	Oid			argtypes[2] = {INT8OID, TEXTOID};
	Datum		values[2];
	bool		isnull;
	Oid			target;
	char	   *why = NULL;

	/* only the tick of the run's own job, as the job's role, notes */
	if (!OidIsValid(get_extension_oid("pg_cron", true)))
		return;
	values[0] = Int64GetDatum(run_id);
	values[1] = CStringGetTextDatum(CurrentUserName());
	CatalogExec("SELECT r.target::pg_catalog.oid FROM backfill.runs r"
				" JOIN cron.job j ON j.jobid OPERATOR(pg_catalog.=) r.job_id"
				" WHERE r.run_id OPERATOR(pg_catalog.=) $1"
				" AND j.username::pg_catalog.text OPERATOR(pg_catalog.=) $2",
				2, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
	{
		SPI_freetuptable(SPI_tuptable);
		return;
	}
	target = SpiGetOid(0, 1, &isnull);
	SPI_freetuptable(SPI_tuptable);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(target)))
		why = psprintf("pg_cron tick refused: the table of run %lld no longer exists",
					   (long long) run_id);
	else if (pg_class_aclmask(target, GetUserId(), ACL_INSERT | ACL_DELETE,
							  ACLMASK_ALL) != (ACL_INSERT | ACL_DELETE))
		why = psprintf("pg_cron tick refused: role \"%s\" lacks INSERT or DELETE privilege on table %s",
					   CurrentUserName(), get_rel_name(target));

	values[1] = why ? CStringGetTextDatum(why) : (Datum) 0;
	CatalogExec("UPDATE backfill.runs SET last_error = $2"
				" WHERE run_id OPERATOR(pg_catalog.=) $1"
				" AND last_error IS DISTINCT FROM $2",
				2, argtypes, values, why ? NULL : " n", SPI_OK_UPDATE);
}
