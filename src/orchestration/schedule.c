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

#include <ctype.h>

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/dbcommands.h"
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
	char	   *command;
	int64		job_id;
	CatalogArgs args;

	if (chunks_per_tick < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chunks_per_tick must be at least 1")));
	if (quiet_hours != NULL)
		ParseQuietHours(quiet_hours, &qstart, &qend);

	RequirePgCron("Scheduling a run creates a pg_cron job; backfill itself works without pg_cron.");

	SchedulePrepareJob();

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

	/*
	 * A job of another role would survive beside the new one (pg_cron keys
	 * job names by role): remove it first.  The caller's own job is replaced
	 * in place by cron.schedule.
	 */
	if (run->scheduled && CronLookupJob(run_id, run->job_id, &old) &&
		strcmp(old.owner, CurrentUserName()) != 0)
		CronRemoveJob(run_id, &old, true);
	else
		old.owner = NULL;

	if (parallel > 1)
		command = psprintf("CALL backfill.run(" INT64_FORMAT ", max_chunks => %d, parallel => %d)",
						   run_id, chunks_per_tick, parallel);
	else
		command = psprintf("CALL backfill.run(" INT64_FORMAT ", max_chunks => %d)",
						   run_id, chunks_per_tick);
	job_id = CronCreateJob(CRON_KIND_RUN, run_id, cron, command,
						   psprintf("run " INT64_FORMAT, run_id));

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
		if (CronLookupJob(run_id, run->job_id, &job))
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
 * SchedulePrepareJob
 *		See backfill.h: before a schedule call creates a pg_cron job.  Here,
 *		the parked jobs of finished runs go first (cron.c).  pg_cron in
 *		another database: the sweep lock is held in share mode until the
 *		end of the transaction, so that no sweep runs (ScheduleSweepJobs
 *		takes it exclusively) while this transaction has made a job there
 *		that it has not recorded yet: a sweep would take it for a job left
 *		behind.  No sweep then (the ticks sweep), so that schedule calls
 *		never wait for each other.
 */
void
SchedulePrepareJob(void)
{
	LOCKTAG		tag;

	if (CronElsewhere() == NULL)
	{
		(void) ScheduleSweepJobs(0, false, false);
		return;
	}
	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_SWEEP, 0);
	(void) LockAcquire(&tag, ShareLock, false, false);
}

/*
 * ForgetMissingJobs
 *		pg_cron elsewhere: the runs, checks and refreshes that record a job
 *		no longer in pg_cron's job table ("jobs", all of this database's)
 *		forget it, with a note -- removed there by hand, or by an unschedule
 *		whose transaction rolled back after the job was gone.  Caller holds
 *		the sweep lock (so no job is being created) and is connected to SPI.
 */
static void
ForgetMissingJobs(List *jobs)
{
	int			n;
	int			i;
	List	   *missing = NIL;
	ListCell   *lc;

	CatalogExec("SELECT 'r', run_id, job_id FROM backfill.runs WHERE job_id IS NOT NULL"
				" UNION ALL SELECT 'c', check_id, job_id FROM backfill.checks"
				"  WHERE job_id IS NOT NULL"
				" UNION ALL SELECT 'f', refresh_id, job_id FROM backfill.refreshes"
				"  WHERE job_id IS NOT NULL",
				0, NULL, NULL, NULL, SPI_OK_SELECT);
	n = (int) SPI_processed;
	for (i = 0; i < n; i++)
	{
		bool		isnull;
		char	   *kind = SpiGetText(i, 1);
		int64		id = SpiGetInt64(i, 2, &isnull);
		int64		job_id = SpiGetInt64(i, 3, &isnull);
		bool		found = false;

		CHECK_FOR_INTERRUPTS();
		foreach(lc, jobs)
		{
			CronJob    *job = lfirst(lc);

			if (job->job_id == job_id && job->kind == kind[0] && job->id == id)
			{
				found = true;
				break;
			}
		}
		if (!found)
		{
			CronJob    *job = palloc0(sizeof(CronJob));

			job->kind = kind[0];
			job->id = id;
			job->job_id = job_id;
			missing = lappend(missing, job);
		}
	}
	SPI_freetuptable(SPI_tuptable);
	foreach(lc, missing)
	{
		CronJob    *job = lfirst(lc);

		CHECK_FOR_INTERRUPTS();
		CronForgetJob(job, psprintf("its pg_cron job " INT64_FORMAT " no longer exists in database \"%s\"",
							  job->job_id, CronElsewhere()));
	}
}

/*
 * ScheduleSweepJobs
 *		See backfill.h.  Only jobs backfill made for this database are
 *		touched (CronListJobs: the names it gives them), as the extension
 *		owner:
 *
 *		- with "orphans", a job whose role (cron.job.username) is no longer
 *		  a role: pg_cron cannot start it (every tick ends in "FATAL: role
 *		  ... does not exist"), and once the scheduler reloads it stops
 *		  every job of the cluster; the run, check or refresh that records
 *		  it keeps the reason in last_error (a refresh in last_message);
 *		- the job recorded on a run that is done, failed or cancelled
 *		  (parked by the tick that finished it, or left behind), except run
 *		  exclude_run's (the caller's own tick);
 *		- pg_cron in another database: a job no run, check or refresh
 *		  records (a person's call forgot it, or a schedule call that made
 *		  it rolled back), and the records of jobs that are gone there
 *		  (ForgetMissingJobs).  There a run's tick does not park its job
 *		  when it finishes the run (cron.c), so a job that is not parked
 *		  yet is still due: removed as it starts, pg_cron would cancel its
 *		  tick.  Only parked jobs go then (their next tick parks them),
 *		  except in cleanup_jobs ("wait"), which takes any such job that
 *		  is not under way.
 *
 *		A job that cron.job_run_details shows under way, or whose last
 *		tick ended less than ten seconds ago (cleanup_jobs: only under
 *		way), is left for the next sweep (removed now, pg_cron would log
 *		its tick "job canceled", CronUnscheduleJobs), except an orphan's,
 *		which never starts.  The guard of
 *		the jobs' roles is released when they have no other job.  Returns
 *		the removed jobs (CronJob *) in the caller's memory context.  A
 *		tick's sweep (without "wait") is skipped while another transaction
 *		sweeps or creates a job elsewhere (the sweep lock); cleanup_jobs
 *		waits for it.
 */
List *
ScheduleSweepJobs(int64 exclude_run, bool orphans, bool wait)
{
	MemoryContext outer = CurrentMemoryContext;
	bool		elsewhere;
	List	   *jobs;
	List	   *gone = NIL;
	List	   *done = NIL;
	List	   *removed;
	List	   *result = NIL;
	ListCell   *lc;

	if (!CronUsable() || !ScheduleSweepLock(wait))
		return NIL;
	elsewhere = CronElsewhere() != NULL;
	SpiConnect();
	jobs = CronListJobs();
	foreach(lc, jobs)
	{
		CronJob    *job = lfirst(lc);

		CHECK_FOR_INTERRUPTS();
		if (!OidIsValid(get_role_oid(job->owner, true)))
		{
			if (orphans && (job->recorded || elsewhere))
				gone = lappend(gone, job);
		}
		else if (job->recorded ? (job->kind == CRON_KIND_RUN && job->finished &&
								  job->id != exclude_run &&
								  (job->parked || !elsewhere || wait))
				 : elsewhere && (job->parked || wait))
			done = lappend(done, job);
	}
	if (elsewhere)
		ForgetMissingJobs(jobs);

	removed = list_concat(CronUnscheduleJobs(gone, CRON_REMOVE_ANY),
						  CronUnscheduleJobs(done, wait ? CRON_REMOVE_IDLE :
											 CRON_REMOVE_SETTLED));
	foreach(lc, removed)
	{
		CronJob    *job = lfirst(lc);
		MemoryContext old;
		CronJob    *copy;

		CHECK_FOR_INTERRUPTS();
		if (list_member_ptr(gone, job))
		{
			char	   *why = psprintf("scheduling role \"%s\" was dropped: its pg_cron job "
									   INT64_FORMAT " (%s) was removed",
									   job->owner, job->job_id, job->jobname);

			CronForgetJob(job, why);
			ereport(LOG,
					(errmsg("backfill: %s", why)));
		}
		else if (job->recorded)
			CronClearJobId(job->id, job->job_id);

		old = MemoryContextSwitchTo(outer);
		copy = palloc(sizeof(CronJob));
		*copy = *job;
		copy->jobname = pstrdup(job->jobname);
		copy->owner = pstrdup(job->owner);
		result = lappend(result, copy);
		MemoryContextSwitchTo(old);
	}
	/* after the rows: the guard's lock comes last (jobguard.c) */
	foreach(lc, removed)
	{
		CronJob    *job = lfirst(lc);

		if (!list_member_ptr(gone, job))
			JobGuardRelease(job->owner);
	}
	SpiFinish();
	return result;
}

/*
 * CleanupJobs
 *		See backfill.h: ScheduleSweepJobs now, orphans included, waiting
 *		for a sweep under way, for a superuser (it removes pg_cron jobs of
 *		other roles).
 */
List *
CleanupJobs(void)
{
	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function cleanup_jobs"),
				 errdetail("It removes pg_cron jobs of other roles."),
				 errhint("Run it as a superuser.")));
	return ScheduleSweepJobs(0, true, true);
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

	/*
	 * Only a tick of a scheduled run, as the role whose job it is
	 * (runs.scheduled_by, the job's role in pg_cron, which may be in
	 * another database), notes.
	 */
	if (!CronUsable())
		return;
	values[0] = Int64GetDatum(run_id);
	values[1] = CStringGetTextDatum(CurrentUserName());
	CatalogExec("SELECT r.target::pg_catalog.oid FROM backfill.runs r"
				" WHERE r.run_id OPERATOR(pg_catalog.=) $1"
				" AND r.job_id IS NOT NULL"
				" AND r.scheduled_by::pg_catalog.text OPERATOR(pg_catalog.=) $2",
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
	(void) ScheduleSweepJobs(run_id, true, false);
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
		(void) ScheduleSweepJobs(0, true, false);
}

/*
 * TickNextStep
 *		The fix of a tick that failed with pg_cron's "message", for the job
 *		of (kind, id) run as role "role": the settings or the grant that
 *		pg_cron's common failures need, else the job's own command, which
 *		run by hand shows the error with its detail and hint.
 */
static char *
TickNextStep(char kind, int64 id, const char *message, const char *role)
{
	const char *r = quote_identifier(role ? role : "?");

	if (message != NULL && strstr(message, "connection failed") != NULL)
		return psprintf("set cron.use_background_workers = on and enough max_worker_processes in postgresql.conf, then restart the server (without a password pg_cron cannot connect as role %s)",
						r);
	if (message != NULL &&
		strstr(message, "could not start background process") != NULL)
		return pstrdup("raise max_worker_processes in postgresql.conf and restart the server: pg_cron found no free background worker for the tick");
	if (message != NULL && strstr(message, "is not permitted to log in") != NULL)
		return psprintf("ALTER ROLE %s LOGIN (as a superuser): pg_cron starts each tick as the job's role", r);
	if (message != NULL && strstr(message, "permission denied for database") != NULL)
		return psprintf("GRANT CONNECT ON DATABASE %s TO %s",
						quote_identifier(get_database_name(MyDatabaseId)), r);
	if (message != NULL && strstr(message, "role \"") != NULL &&
		strstr(message, "does not exist") != NULL)
		return pstrdup("SELECT * FROM backfill.cleanup_jobs() (as a superuser)");
	if (kind == CRON_KIND_CHECK)
		return psprintf("SELECT backfill.run_check(" INT64_FORMAT ")", id);
	if (kind == CRON_KIND_REFRESH)
		return psprintf("CALL backfill._refresh_tick(" INT64_FORMAT ")", id);
	return psprintf("CALL backfill.run(" INT64_FORMAT ")", id);
}

/*
 * ScheduleTickFailures
 *		See backfill.h.  The jobs are those of the caller's visible rows
 *		(read as the caller, under the catalog's row-level security): the
 *		planned or probed runs, the checks and the refreshes that record a
 *		job.  Their last finished ticks are read as the extension owner
 *		(CronTickHistory: here, or in pg_cron's database through the relay,
 *		which is asked only when there is such a job); a job whose latest
 *		finished tick failed is a row: the failed ticks in a row before the
 *		last one that succeeded (of the last few), when the latest ended,
 *		pg_cron's message (trailing blanks dropped) and the fix
 *		(TickNextStep).
 */
void
ScheduleTickFailures(Tuplestorestate *store, TupleDesc desc)
{
	List	   *jobs = NIL;
	CronRows   *rows;
	int			n;
	int			i;
	int			r;

	if (!CronUsable())
		return;
	SpiExecPinned("SELECT 'r', r.run_id, r.job_id FROM backfill.runs r"
				  " WHERE r.job_id IS NOT NULL"
				  " AND r.status OPERATOR(pg_catalog.=) ANY ('{planned,probed}'::pg_catalog.text[])"
				  " UNION ALL SELECT 'c', c.check_id, c.job_id FROM backfill.checks c"
				  " WHERE c.job_id IS NOT NULL"
				  " UNION ALL SELECT 'f', f.refresh_id, f.job_id FROM backfill.refreshes f"
				  " WHERE f.job_id IS NOT NULL",
				  0, NULL, NULL, NULL, true, 0, SPI_OK_SELECT);
	n = (int) SPI_processed;
	for (i = 0; i < n; i++)
	{
		CronJob    *job = palloc0(sizeof(CronJob));
		bool		isnull;

		CHECK_FOR_INTERRUPTS();
		job->kind = SpiGetText(i, 1)[0];
		job->id = SpiGetInt64(i, 2, &isnull);
		job->job_id = SpiGetInt64(i, 3, &isnull);
		job->jobname = CronJobNameOf(job->kind, job->id);
		jobs = lappend(jobs, job);
	}
	SPI_freetuptable(SPI_tuptable);
	if (jobs == NIL || !CronTickHistory(jobs, &rows))
		return;

	/* rows: job id, status, message, end (us since 1970), role; newest first */
	for (r = 0; r < rows->nrows;)
	{
		const char *jobid = rows->values[r * rows->ncols];
		int			first = r;
		int			failed = 0;
		bool		streak = true;

		CHECK_FOR_INTERRUPTS();
		for (; r < rows->nrows && strcmp(rows->values[r * rows->ncols], jobid) == 0; r++)
		{
			if (streak && strcmp(rows->values[r * rows->ncols + 1], "failed") == 0)
				failed++;
			else
				streak = false;
		}
		if (failed > 0)
		{
			int64		job_id = pg_strtoint64(jobid);
			char	   *message = rows->values[first * rows->ncols + 2];
			const char *end = rows->values[first * rows->ncols + 3];
			const char *role = rows->values[first * rows->ncols + 4];
			ListCell   *lc;

			if (message != NULL)
			{
				int			len = strlen(message);

				while (len > 0 && isspace((unsigned char) message[len - 1]))
					message[--len] = '\0';
			}
			foreach(lc, jobs)
			{
				CronJob    *job = lfirst(lc);
				Datum		values[7];
				bool		nulls[7] = {false, false, false, false, false, false, false};

				if (job->job_id != job_id)
					continue;
				values[0] = CStringGetTextDatum(job->kind == CRON_KIND_RUN ? "run" :
												job->kind == CRON_KIND_CHECK ? "check" : "refresh");
				values[1] = Int64GetDatum(job->id);
				values[2] = Int64GetDatum(job_id);
				values[3] = Int32GetDatum(failed);
				if (end == NULL)
					nulls[4] = true;
				else
					values[4] = TimestampTzGetDatum(pg_strtoint64(end) -
													((POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) *
													 USECS_PER_DAY));
				if (message == NULL)
					nulls[5] = true;
				else
					values[5] = CStringGetTextDatum(message);
				values[6] = CStringGetTextDatum(TickNextStep(job->kind, job->id,
															 message, role));
				tuplestore_putvalues(store, desc, values, nulls);
			}
		}
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
