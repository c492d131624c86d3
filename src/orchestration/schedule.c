/*-------------------------------------------------------------------------
 *
 * schedule.c
 *	  Handing runs to pg_cron (schedule, unschedule, a group's runs), the
 *	  housekeeping of every pg_cron tick, and yielding to the daily job.
 *
 * backfill.schedule creates a pg_cron job named backfill_run_<id> whose
 * command is built from integers only:
 *
 *		CALL backfill.run(<id>, max_chunks => <n>)
 *		CALL backfill.run(<id>, max_chunks => <n>, parallel => <p>)  (p > 1)
 *
 * The job is created by calling cron.schedule through SPI with the caller's
 * own privileges, so pg_cron records the caller as the job's owner and the
 * job runs as the caller.  Nothing here is SECURITY DEFINER: a definer
 * would make pg_cron record the definer as the owner.  What backfill knows
 * of pg_cron itself (is it installed, is this backend a job, a run's job,
 * quiet hours) is in cron.c, below the engine, which removes a finished
 * run's job.
 *
 * Every tick of a backfill job first removes the jobs of dropped roles
 * (ScheduleSweepOrphanJobs) and the parked jobs of finished runs
 * (ScheduleSweepFinishedJobs: a job is never removed by its own tick, see
 * cron.c); a run's tick also notes in runs.last_error why its role can no
 * longer write the target (ScheduleRunTick).  Every job belongs to a role
 * that holds the guard of jobguard.c: schedule grants it, and removing a
 * role's last job releases it.
 *
 * backfill.lock_target is the daily job's side of the target lock: a
 * transaction-level lock (BackfillLockTag, a key no SQL caller can take) in
 * ShareLock on the key the chunks take in ExclusiveLock, so daily jobs
 * never block each other, a chunk waits for them (at most
 * backfill.lock_timeout, then it is deferred), and they wait for at most
 * one chunk.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "backfill.h"

/*
 * ScheduleRun
 *		See backfill.h: hand the rest of a run to a pg_cron job owned by the
 *		caller; returns the job id.  Scheduling a run again replaces its job
 *		(pg_cron keeps the job id when the same role schedules the same job
 *		name).  With parallel > 1 each tick executes its chunks_per_tick
 *		chunks up to "parallel" at a time (parallel.c).  Caller is
 *		connected to SPI.
 */
int64
ScheduleRun(int64 run_id, const char *cron, int32 chunks_per_tick,
			const char *quiet_hours, int32 parallel)
{
	int			qstart;
	int			qend;
	RunInfo    *run;
	CronJob		old;
	Oid			cronnsp;
	char	   *jobname;
	char	   *command;
	int64		job_id;
	bool		isnull;
	Oid			argtypes[3];
	Datum		values[3];
	CatalogArgs args;

	if (chunks_per_tick < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chunks_per_tick must be at least 1")));
	if (quiet_hours != NULL)
		ParseQuietHours(quiet_hours, &qstart, &qend);

	RequirePgCron("Scheduling a run creates a pg_cron job; backfill itself works without pg_cron.");

	/* the parked jobs of finished runs go first (cron.c) */
	(void) ScheduleSweepFinishedJobs(0, false);

	run = LoadRun(run_id);
	CheckRunIdentity(run, "schedule", false);
	CheckTargetPrivileges(run->target);

	if (run->status != RUN_PLANNED && run->status != RUN_PROBED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot schedule run " INT64_FORMAT " because it is %s",
						run_id, RunStatusName(run->status)),
				 run->status == RUN_FAILED ?
				 errhint("Look at the failed chunk in backfill.chunks; CALL backfill.run(" INT64_FORMAT ") retries it.",
						 run_id) : 0));
	if (run->probe && run->status == RUN_PLANNED)
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
		NamespaceAclCheck(cronnsp, GetUserId(), ACL_USAGE) != ACLCHECK_OK)
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
	else
		old.owner = NULL;

	jobname = CronJobName(run_id);
	if (parallel > 1)
		command = psprintf("CALL backfill.run(" INT64_FORMAT ", max_chunks => %d, parallel => %d)",
						   run_id, chunks_per_tick, parallel);
	else
		command = psprintf("CALL backfill.run(" INT64_FORMAT ", max_chunks => %d)",
						   run_id, chunks_per_tick);
	argtypes[0] = TEXTOID;
	argtypes[1] = TEXTOID;
	argtypes[2] = TEXTOID;
	values[0] = CStringGetTextDatum(jobname);
	values[1] = CStringGetTextDatum(cron);
	values[2] = CStringGetTextDatum(command);
	SpiExecPinned("SELECT cron.schedule($1, $2, $3)", 3, argtypes, values, NULL,
				  false, 0, SPI_OK_SELECT);
	job_id = SpiGetInt64(0, 1, &isnull);
	if (isnull)
		elog(ERROR, "cron.schedule returned NULL");

	/*
	 * Record the job; the status condition is evaluated again after waiting
	 * for a concurrent run call's row lock, so a run that finished meanwhile
	 * is not left with a job (the whole call rolls back, job included).
	 */
	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(run_id), false);
	CatalogArg(&args, INT8OID, Int64GetDatum(job_id), false);
	CatalogArg(&args, INT4OID, Int32GetDatum(chunks_per_tick), false);
	CatalogArgText(&args, quiet_hours);
	CatalogArgText(&args, CurrentUserName());
	CatalogArgText(&args, cron);
	CatalogExecArgs("UPDATE backfill.runs"
					" SET job_id = $2, chunks_per_tick = $3, quiet_hours = $4,"
					" scheduled_by = $5::pg_catalog.name, cron = $6"
					" WHERE run_id OPERATOR(pg_catalog.=) $1"
					" AND status OPERATOR(pg_catalog.=) ANY ('{planned,probed}'::pg_catalog.text[])",
					&args, SPI_OK_UPDATE);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run " INT64_FORMAT " finished while it was being scheduled",
						run_id),
				 errhint("Look at the run in backfill.runs.")));

	/* the job's role cannot be dropped while it has the job (jobguard.c) */
	JobGuardGrant();
	JobGuardRelease(old.owner);
	return job_id;
}

/*
 * UnscheduleRun
 *		See backfill.h: remove the run's pg_cron job; true when there was
 *		one, false when the run has none (any more).  Caller is connected
 *		to SPI.
 */
bool
UnscheduleRun(int64 run_id)
{
	RunInfo    *run;
	CronJob		job;
	bool		removed = false;

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
		if (removed)
			JobGuardRelease(job.owner);
	}
	return removed;
}

/*
 * ScheduleGroup
 *		See backfill.h: ScheduleRun on every run of the group that is not
 *		finished; returns the number of runs scheduled.  Each run gets its
 *		own pg_cron job; a tick of a downstream run whose upstream chunks
 *		are not done yet does nothing (PipelineChunkReady), so the group
 *		finishes in dependency order.  Caller is connected to SPI.
 */
int32
ScheduleGroup(int64 group_id, const char *cron, int32 chunks_per_tick,
			  const char *quiet_hours, int32 parallel)
{
	List	   *runs;
	ListCell   *lc;
	int32		n = 0;

	runs = GroupRuns(group_id, true);
	foreach(lc, runs)
	{
		(void) ScheduleRun(*(int64 *) lfirst(lc), cron, chunks_per_tick,
						   quiet_hours, parallel);
		n++;
	}
	return n;
}

/*
 * ScheduleSweepLock
 *		See backfill.h: the transaction-level lock (SWEEP, 0) that lets one
 *		transaction at a time remove jobs by a sweep, so that two ticks
 *		starting in the same second never remove the same cron.job row
 *		(pg_cron 1.4's cron.unschedule fails "tuple concurrently deleted").
 *		With "wait" false, false when another transaction holds it.
 */
bool
ScheduleSweepLock(bool wait)
{
	LOCKTAG		tag;

	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_SWEEP, 0);
	return LockAcquire(&tag, ExclusiveLock, false, !wait) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * ScheduleSweepOrphanJobs
 *		See backfill.h.  Only jobs backfill made are touched: a run's job
 *		recorded in runs.job_id and named backfill_run_<run_id>, a check's
 *		recorded in checks.job_id and named backfill_check_<check_id>, whose
 *		cron.job.username is no longer a role.  pg_cron cannot start such a
 *		job (every tick ends in "FATAL: role ... does not exist"), and no
 *		role but a superuser could remove it.  Read and removed as the
 *		extension owner (a superuser); the run or check keeps the reason in
 *		last_error.  Returns the removed jobs (CronJob *, owner the dropped
 *		role) in the caller's memory context.  A tick's sweep (without
 *		"wait") is skipped while another transaction sweeps
 *		(ScheduleSweepLock); cleanup_jobs waits for it.
 */
List *
ScheduleSweepOrphanJobs(bool wait)
{
	MemoryContext outer = CurrentMemoryContext;
	List	   *removed = NIL;
	int			n;
	int			i;
	int64	   *job_ids;
	char	  **job_names;
	char	  **usernames;
	int64	   *run_ids;
	bool	   *is_run;

	if (!PgCronInstalled() || !ScheduleSweepLock(wait))
		return NIL;
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
		MemoryContext old;
		CronJob    *job;

		CHECK_FOR_INTERRUPTS();
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

		old = MemoryContextSwitchTo(outer);
		job = palloc(sizeof(CronJob));
		job->job_id = job_ids[i];
		job->jobname = pstrdup(job_names[i]);
		job->owner = pstrdup(usernames[i]);
		removed = lappend(removed, job);
		MemoryContextSwitchTo(old);
	}
	SpiFinish();
	return removed;
}

/*
 * ScheduleSweepFinishedJobs
 *		See backfill.h.  The jobs still recorded on runs that are done,
 *		failed or cancelled (parked by the tick that finished them, or left
 *		behind), except run exclude_run's (the caller's own tick) and those
 *		pg_cron still shows starting or running in cron.job_run_details
 *		(the finishing tick of another run may still be ending: removed
 *		now, pg_cron would log it "job canceled"), are removed as the
 *		extension owner, runs.job_id cleared, and the guard of their roles
 *		released when they have no other job.  Returns the removed jobs
 *		(CronJob *) in the caller's memory context.  As the orphan sweep,
 *		skipped while another transaction sweeps, unless "wait".
 */
List *
ScheduleSweepFinishedJobs(int64 exclude_run, bool wait)
{
	MemoryContext outer = CurrentMemoryContext;
	List	   *removed = NIL;
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	int			n;
	int			i;
	int64	   *job_ids;
	char	  **job_names;
	char	  **usernames;
	int64	   *run_ids;

	if (!PgCronInstalled() || !ScheduleSweepLock(wait))
		return NIL;
	SpiConnect();
	values[0] = Int64GetDatum(exclude_run);
	CatalogExec("SELECT j.jobid, j.jobname::pg_catalog.text,"
				" j.username::pg_catalog.text, r.run_id"
				" FROM cron.job j JOIN backfill.runs r"
				"  ON r.job_id OPERATOR(pg_catalog.=) j.jobid"
				" WHERE j.jobname OPERATOR(pg_catalog.=)"
				"  ('backfill_run_' OPERATOR(pg_catalog.||) r.run_id::pg_catalog.text)"
				" AND r.status OPERATOR(pg_catalog.=) ANY ('{done,failed,cancelled}'::pg_catalog.text[])"
				" AND r.run_id OPERATOR(pg_catalog.<>) $1"
				" AND NOT EXISTS (SELECT FROM cron.job_run_details d"
				"  WHERE d.jobid OPERATOR(pg_catalog.=) j.jobid"
				"  AND d.status OPERATOR(pg_catalog.=) ANY ('{starting,running}'::pg_catalog.text[]))"
				" ORDER BY 1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	n = (int) SPI_processed;
	job_ids = palloc(sizeof(int64) * (n + 1));
	job_names = palloc(sizeof(char *) * (n + 1));
	usernames = palloc(sizeof(char *) * (n + 1));
	run_ids = palloc(sizeof(int64) * (n + 1));
	for (i = 0; i < n; i++)
	{
		bool		isnull;

		job_ids[i] = SpiGetInt64(i, 1, &isnull);
		job_names[i] = SpiGetText(i, 2);
		usernames[i] = SpiGetText(i, 3);
		run_ids[i] = SpiGetInt64(i, 4, &isnull);
	}
	SPI_freetuptable(SPI_tuptable);

	for (i = 0; i < n; i++)
	{
		MemoryContext old;
		CronJob    *job;

		CHECK_FOR_INTERRUPTS();
		values[0] = Int64GetDatum(job_ids[i]);
		CatalogExec("SELECT cron.unschedule($1)", 1, argtypes, values, NULL,
					SPI_OK_SELECT);
		CronClearJobId(run_ids[i], job_ids[i]);

		old = MemoryContextSwitchTo(outer);
		job = palloc(sizeof(CronJob));
		job->job_id = job_ids[i];
		job->jobname = pstrdup(job_names[i]);
		job->owner = pstrdup(usernames[i]);
		removed = lappend(removed, job);
		MemoryContextSwitchTo(old);
	}
	/* after the runs' rows: the guard's lock comes last (jobguard.c) */
	for (i = 0; i < n; i++)
		JobGuardRelease(usernames[i]);
	SpiFinish();
	return removed;
}

/*
 * CleanupJobs
 *		See backfill.h: ScheduleSweepOrphanJobs and
 *		ScheduleSweepFinishedJobs now, waiting for a sweep under way, for a
 *		superuser (it removes pg_cron jobs of other roles).
 */
List *
CleanupJobs(void)
{
	List	   *orphans;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function cleanup_jobs"),
				 errdetail("It removes pg_cron jobs of other roles."),
				 errhint("Run it as a superuser.")));
	orphans = ScheduleSweepOrphanJobs(true);
	return list_concat(orphans, ScheduleSweepFinishedJobs(0, true));
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
static void
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

/*
 * ScheduleRunTick
 *		See backfill.h: in a pg_cron tick (ScheduleCalledFromCron), before
 *		the run is executed: sweep the jobs of dropped roles and the parked
 *		jobs of finished runs (not its own: it is running), note why the
 *		job's role may not write the target (NoteTickPrivileges), purge the
 *		kept rows past their definition's keep_for, and commit all, so that they stay whatever the run does.  Nothing
 *		outside a tick.  Caller has a non-atomic SPI connection.
 */
void
ScheduleRunTick(int64 run_id)
{
	if (!ScheduleCalledFromCron())
		return;
	(void) ScheduleSweepOrphanJobs(false);
	(void) ScheduleSweepFinishedJobs(run_id, false);
	NoteTickPrivileges(run_id);
	/* the definitions' keep_for: kept rows past it go (doc/undo.md) */
	(void) ArchivePurge(InvalidOid, NULL, false);
	SPI_commit();
}

/*
 * ScheduleCheckTick
 *		See backfill.h: in a pg_cron tick, before a standing check is read,
 *		sweep the jobs of dropped roles and the parked jobs of finished
 *		runs.  Nothing outside a tick.
 */
void
ScheduleCheckTick(void)
{
	if (ScheduleCalledFromCron())
	{
		(void) ScheduleSweepOrphanJobs(false);
		(void) ScheduleSweepFinishedJobs(0, false);
	}
}

/*
 * LockTargetForJob
 *		See backfill.h: the daily job's share of the target lock, held
 *		until the end of the caller's transaction.  The caller needs some
 *		write privilege on the target (INSERT, UPDATE or DELETE): the lock
 *		makes backfill chunks wait, so reading the table is not reason
 *		enough to hold it.
 */
void
LockTargetForJob(Oid relid)
{
	char		relkind;
	LOCKTAG		tag;

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
}
