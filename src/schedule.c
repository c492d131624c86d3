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
 * A job is never removed by its own tick: pg_cron 1.4 marks a job whose
 * row goes while its worker runs as "failed: job canceled", so the tick
 * that finishes a run would look failed in cron.job_run_details.  That
 * tick parks the job instead (cron.alter_job to a schedule that never
 * fires, PARKED_SCHEDULE; the job stays active, so pg_cron ends the tick
 * "succeeded"), and the job is removed later, once pg_cron shows it no
 * longer running: by the next tick of any backfill job, by schedule and
 * schedule_check, by unschedule, and by cleanup_jobs
 * (ScheduleSweepFinishedJobs).
 *
 * Every job belongs to a role that holds the guard of jobguard.c, so the
 * role cannot be dropped while it has one; removing a role's last job
 * releases it.
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
#include "utils/timestamp.h"

#include "backfill.h"
#include "compat.h"

/*
 * The schedule of a parked job: February 31st, which never comes.  The
 * job keeps its name and command; it is removed by the next sweep.
 */
#define PARKED_SCHEDULE "0 0 31 2 *"

/* A pg_cron job as recorded in cron.job. */
typedef struct CronJob
{
	int64		job_id;
	char	   *owner;			/* cron.job.username */
	char	   *jobname;		/* NULL for an unnamed job */
} CronJob;

/*
 * JobName
 *		The pg_cron job name of a run: backfill_run_<id>.
 */
static char *
JobName(int64 run_id)
{
	return psprintf("backfill_run_" INT64_FORMAT, run_id);
}

/*
 * PgCronInstalled
 *		Whether the pg_cron extension is installed in this database.
 */
static bool
PgCronInstalled(void)
{
	return OidIsValid(get_extension_oid("pg_cron", true));
}

/*
 * RequirePgCron
 *		Raise the "how to enable pg_cron" error unless pg_cron is installed
 *		in this database and runs its jobs here (cron.database_name).
 *		detail says what needs pg_cron.  Used by schedule and
 *		schedule_check.
 */
void
RequirePgCron(const char *detail)
{
	const char *dbname = get_database_name(MyDatabaseId);
	const char *crondb;

	if (!PgCronInstalled())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_cron is not installed in database \"%s\"", dbname),
				 errdetail("%s", detail),
				 errhint("Add pg_cron to shared_preload_libraries, set cron.database_name to '%s', restart the server, and run CREATE EXTENSION pg_cron in this database.",
						 dbname)));

	crondb = GetConfigOption("cron.database_name", true, false);
	if (crondb != NULL && strcmp(crondb, dbname) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_cron runs its jobs in database \"%s\", not in \"%s\"",
						crondb, dbname),
				 errhint("Set cron.database_name to '%s' and restart the server.",
						 dbname)));
}

/*
 * LookupJob
 *		Find a pg_cron job by id.  Read as the extension owner (a superuser,
 *		since backfill can only be created by one), so that pg_cron's
 *		row-level security on cron.job does not hide another role's job.
 */
static bool
LookupJob(int64 job_id, CronJob *job)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];

	values[0] = Int64GetDatum(job_id);
	CatalogExec("SELECT username::pg_catalog.text, jobname::pg_catalog.text"
				" FROM cron.job WHERE jobid OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		return false;
	job->job_id = job_id;
	job->owner = SpiGetText(0, 1);
	job->jobname = SpiGetText(0, 2);
	return true;
}

/*
 * ClearJobId
 *		Forget the run's job (only if it is still the one given).
 */
static void
ClearJobId(int64 run_id, int64 job_id)
{
	Oid			argtypes[2] = {INT8OID, INT8OID};
	Datum		values[2];

	values[0] = Int64GetDatum(run_id);
	values[1] = Int64GetDatum(job_id);
	CatalogExec("UPDATE backfill.runs SET job_id = NULL"
				" WHERE run_id OPERATOR(pg_catalog.=) $1"
				" AND job_id OPERATOR(pg_catalog.=) $2",
				2, argtypes, values, NULL, SPI_OK_UPDATE);
}

/*
 * RemoveJob
 *		Delete a run's pg_cron job.
 *
 * A job the current user owns is removed with the current user's own
 * cron.unschedule.  Another role's job is removed as the extension owner:
 * with "check", only when the current user has the privileges of the job's
 * owner (what SET ROLE would give it anyway); without, always -- the run
 * loop uses that when the run is finished, so that the job, which can no
 * longer do anything, stops firing whoever finished the run.  The caller
 * releases the owner's guard (JobGuardRelease) once its own updates of the
 * run are done, so that the guard's lock is always taken after the rows.
 */
static void
RemoveJob(int64 run_id, CronJob *job, bool check)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	char	   *me = CurrentUserName();

	values[0] = Int64GetDatum(job->job_id);
	if (strcmp(job->owner, me) == 0)
	{
		SpiExecPinned("SELECT cron.unschedule($1)", 1, argtypes, values, NULL,
					  false, 0, SPI_OK_SELECT);
		return;
	}
	if (check)
	{
		Oid			owner = get_role_oid(job->owner, true);

		if (OidIsValid(owner) && !has_privs_of_role(GetUserId(), owner))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to remove the pg_cron job of run " INT64_FORMAT,
							run_id),
					 errdetail("Job " INT64_FORMAT " belongs to role \"%s\".",
							   job->job_id, job->owner),
					 errhint("Run backfill.unschedule(" INT64_FORMAT ") as role \"%s\" or as a role with its privileges.",
							 run_id, job->owner)));
	}
	CatalogExec("SELECT cron.unschedule($1)", 1, argtypes, values, NULL,
				SPI_OK_SELECT);
}

/*
 * ParkJob
 *		Make a run's job never fire again without removing it (see the
 *		file header): as the extension owner, since the run is finished and
 *		the job can do nothing useful whoever owns it.
 */
static void
ParkJob(int64 job_id)
{
	Oid			argtypes[2] = {INT8OID, TEXTOID};
	Datum		values[2];

	values[0] = Int64GetDatum(job_id);
	values[1] = CStringGetTextDatum(PARKED_SCHEDULE);
	CatalogExec("SELECT cron.alter_job($1, schedule => $2)", 2, argtypes,
				values, NULL, SPI_OK_SELECT);
}

/*
 * ParseClock
 *		Parse "H:MM" or "HH:MM" at *p into minutes since midnight and
 *		advance *p; false when the text is not such a time of day.
 */
static bool
ParseClock(const char **p, int *minutes)
{
	const char *s = *p;
	int			hour = 0;
	int			minute;
	int			digits = 0;

	while (isdigit((unsigned char) *s) && digits < 2)
	{
		hour = hour * 10 + (*s - '0');
		s++;
		digits++;
	}
	if (digits == 0 || *s != ':')
		return false;
	s++;
	if (!isdigit((unsigned char) s[0]) || !isdigit((unsigned char) s[1]))
		return false;
	minute = (s[0] - '0') * 10 + (s[1] - '0');
	s += 2;
	if (hour > 23 || minute > 59)
		return false;
	*minutes = hour * 60 + minute;
	*p = s;
	return true;
}

/*
 * ParseQuietHours
 *		Parse a local time span "HH:MM-HH:MM" into minutes since midnight;
 *		start > end means the span wraps midnight.  Raises 22007 for text
 *		that is not such a span and 22023 for an empty one.
 */
static void
ParseQuietHours(const char *text, int *start, int *end)
{
	const char *p = text;

	RequireMaxLength(text, "quiet_hours", BACKFILL_MAX_WORD);
	while (isspace((unsigned char) *p))
		p++;
	if (!ParseClock(&p, start))
		goto bad;
	while (isspace((unsigned char) *p))
		p++;
	if (*p++ != '-')
		goto bad;
	while (isspace((unsigned char) *p))
		p++;
	if (!ParseClock(&p, end))
		goto bad;
	while (isspace((unsigned char) *p))
		p++;
	if (*p != '\0')
		goto bad;

	if (*start == *end)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("quiet_hours \"%s\" is an empty span", text),
				 errdetail("Its start and its end are the same time of day."),
				 errhint("Pass NULL to allow work at any time of day.")));
	return;

bad:
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_DATETIME_FORMAT),
			 errmsg("invalid quiet_hours \"%s\"", text),
			 errdetail("Quiet hours are a span of local time written HH:MM-HH:MM on a 24-hour clock, such as '22:00-06:00'.")));
}

/*
 * LocalMinuteOfDay
 *		The wall-clock time of "at" in time zone "tzname", in minutes since
 *		midnight.  A NULL tzname means the session's TimeZone.
 *
 * The name is read exactly as SET TimeZone reads it (check_timezone), so a
 * run planned under TimeZone '-3' (three hours west, in SQL's sign
 * convention) is not read as the POSIX zone "-3" (three hours east).
 */
static int
LocalMinuteOfDay(TimestampTz at, const char *tzname)
{
	pg_tz	   *tz;
	struct pg_tm tm;
	fsec_t		fsec;
	int			tzoff;

	if (tzname == NULL)
		tz = session_timezone;
	else
	{
		char	   *value = pstrdup(tzname);
		void	   *extra = NULL;

		if (!check_timezone(&value, &extra, PGC_S_SESSION) || extra == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("time zone \"%s\" not recognized", tzname)));
		tz = *((pg_tz **) extra);
		GucFree(extra);
	}
	if (TIMESTAMP_NOT_FINITE(at) ||
		timestamp2tm(at, &tzoff, &tm, &fsec, NULL, tz) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range")));
	return tm.tm_hour * 60 + tm.tm_min;
}

/*
 * InQuietHours
 *		Whether "at" lies in the local span [start, end) of quiet_hours in
 *		time zone tzname; a span whose start is after its end wraps
 *		midnight.  The wall clock is read in the zone at that instant, so
 *		the span follows daylight saving time.
 */
static bool
InQuietHours(const char *quiet_hours, const char *tzname, TimestampTz at)
{
	int			start;
	int			end;
	int			now;

	ParseQuietHours(quiet_hours, &start, &end);
	now = LocalMinuteOfDay(at, tzname);
	if (start < end)
		return now >= start && now < end;
	return now >= start || now < end;
}

/*
 * ScheduleTickAllowed
 *		Whether a tick of a run's schedule may do work at "now": always
 *		without quiet hours, else only inside them (in the run's TimeZone).
 */
bool
ScheduleTickAllowed(const char *quiet_hours, const char *timezone,
					TimestampTz now)
{
	if (quiet_hours == NULL)
		return true;
	return InQuietHours(quiet_hours, timezone, now);
}

/*
 * ScheduleCalledFromCron
 *		Whether the current backend is running a pg_cron job: a pg_cron
 *		background worker (cron.use_background_workers = on), or a session
 *		pg_cron opened over libpq, which names itself "pg_cron" as its
 *		application_name.
 */
bool
ScheduleCalledFromCron(void)
{
	if (ScheduleInCronWorker())
		return true;
	return application_name != NULL && strcmp(application_name, "pg_cron") == 0;
}

/*
 * ScheduleInCronWorker
 *		Whether the current backend is a pg_cron background worker: the
 *		only evidence of a pg_cron tick that no user can fake (any session
 *		can SET application_name = 'pg_cron', which is all that pg_cron's
 *		libpq mode sets).  It decides chunks.executed_via ('pg_cron' or
 *		'session'); the softer ScheduleCalledFromCron decides only things
 *		that a user faking it can do to their own call (quiet hours, the
 *		stale-job stop).
 */
bool
ScheduleInCronWorker(void)
{
	if (MyBackendType == B_BG_WORKER && MyBgworkerEntry != NULL)
		return strcmp(MyBgworkerEntry->bgw_library_name, "pg_cron") == 0 ||
			strcmp(MyBgworkerEntry->bgw_type, "pg_cron") == 0;
	return false;
}

/*
 * ScheduleRemoveJob
 *		Remove the pg_cron job of a run and clear runs.job_id; true when a
 *		job was removed (or parked).  Quiet (false) when the run has no
 *		job, the job is gone already, or pg_cron is not installed.  In a
 *		pg_cron tick, which is the job itself, the job is parked instead
 *		and runs.job_id kept (see the file header): a sweep removes it once
 *		the tick is over.
 *
 * Callable from the run loop in any context; runs in the caller's
 * transaction, so a rollback keeps the job.
 */
bool
ScheduleRemoveJob(int64 run_id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	bool		isnull;
	int64		job_id;
	bool		removed = false;
	CronJob		job;

	SpiConnect();
	values[0] = Int64GetDatum(run_id);
	CatalogExec("SELECT job_id FROM backfill.runs"
				" WHERE run_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
	{
		SpiFinish();
		return false;
	}
	job_id = SpiGetInt64(0, 1, &isnull);
	if (isnull)
	{
		SpiFinish();
		return false;
	}

	if (PgCronInstalled() && LookupJob(job_id, &job) &&
		job.jobname != NULL && strcmp(job.jobname, JobName(run_id)) == 0)
	{
		if (ScheduleCalledFromCron())
		{
			ParkJob(job_id);
			SpiFinish();
			return true;
		}
		RemoveJob(run_id, &job, false);
		removed = true;
	}
	ClearJobId(run_id, job_id);
	if (removed)
		JobGuardRelease(job.owner);
	SpiFinish();
	return removed;
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
 *		last_error.  When rsinfo is not NULL, one row (job_id, job_name,
 *		username) per removed job is added to it.  Returns how many jobs
 *		were removed.  A tick's sweep is skipped while another transaction
 *		sweeps (ScheduleSweepLock); cleanup_jobs (rsinfo given) waits for
 *		it.
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

	if (!PgCronInstalled() || !ScheduleSweepLock(rsinfo != NULL))
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
 * ScheduleSweepFinishedJobs
 *		See backfill.h.  The jobs still recorded on runs that are done,
 *		failed or cancelled (parked by the tick that finished them, or left
 *		behind), except run exclude_run's (the caller's own tick) and those
 *		pg_cron still shows starting or running in cron.job_run_details
 *		(the finishing tick of another run may still be ending: removed
 *		now, pg_cron would log it "job canceled"), are removed as the
 *		extension owner, runs.job_id cleared, and the guard of their roles
 *		released when they have no other job.  When rsinfo is not NULL, one
 *		row (job_id, job_name, username) per removed job is added to it.
 *		Returns how many jobs were removed.  As the orphan sweep, skipped
 *		while another transaction sweeps, unless rsinfo is given.
 */
int
ScheduleSweepFinishedJobs(ReturnSetInfo *rsinfo, int64 exclude_run)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	int			n;
	int			i;
	int64	   *job_ids;
	char	  **job_names;
	char	  **usernames;
	int64	   *run_ids;

	if (!PgCronInstalled() || !ScheduleSweepLock(rsinfo != NULL))
		return 0;
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
		CHECK_FOR_INTERRUPTS();
		values[0] = Int64GetDatum(job_ids[i]);
		CatalogExec("SELECT cron.unschedule($1)", 1, argtypes, values, NULL,
					SPI_OK_SELECT);
		ClearJobId(run_ids[i], job_ids[i]);
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
	for (i = 0; i < n; i++)
		JobGuardRelease(usernames[i]);
	SpiFinish();
	return n;
}

/*
 * backfill_cleanup_jobs
 *		backfill.cleanup_jobs() -> (job_id, job_name, username): remove now
 *		the pg_cron jobs of runs and checks whose scheduling role was
 *		dropped, and the parked jobs of finished runs (what every backfill
 *		tick does anyway).  Superusers only.
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
	(void) ScheduleSweepFinishedJobs(rsinfo, 0);
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
	Oid			argtypes[5];
	Datum		values[5];
	char		nulls[5];

	RequireArg(fcinfo, 0, "run_id", NULL);
	RequireArg(fcinfo, 1, "cron", "Pass a cron expression such as '*/5 * * * *'.");
	RequireArg(fcinfo, 2, "chunks_per_tick", NULL);
	run_id = PG_GETARG_INT64(0);
	cron = text_to_cstring(PG_GETARG_TEXT_PP(1));
	RequireMaxLength(cron, "cron", BACKFILL_MAX_WORD);
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

	/* the parked jobs of finished runs go first (see the file header) */
	(void) ScheduleSweepFinishedJobs(NULL, 0);

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
	if (run->scheduled && LookupJob(run->job_id, &old) &&
		strcmp(old.owner, CurrentUserName()) != 0)
		RemoveJob(run_id, &old, true);
	else
		old.owner = NULL;

	jobname = JobName(run_id);
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
	argtypes[0] = INT8OID;
	argtypes[1] = INT8OID;
	argtypes[2] = INT4OID;
	argtypes[3] = TEXTOID;
	argtypes[4] = TEXTOID;
	values[0] = Int64GetDatum(run_id);
	values[1] = Int64GetDatum(job_id);
	values[2] = Int32GetDatum(chunks_per_tick);
	values[3] = quiet_hours ? CStringGetTextDatum(quiet_hours) : (Datum) 0;
	values[4] = CStringGetTextDatum(CurrentUserName());
	memset(nulls, ' ', sizeof(nulls));
	nulls[3] = quiet_hours ? ' ' : 'n';
	CatalogExec("UPDATE backfill.runs"
				" SET job_id = $2, chunks_per_tick = $3, quiet_hours = $4,"
				" scheduled_by = $5::pg_catalog.name"
				" WHERE run_id OPERATOR(pg_catalog.=) $1"
				" AND status OPERATOR(pg_catalog.=) ANY ('{planned,probed}'::pg_catalog.text[])",
				5, argtypes, values, nulls, SPI_OK_UPDATE);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run " INT64_FORMAT " finished while it was being scheduled",
						run_id),
				 errhint("Look at the run in backfill.runs.")));

	/* the job's role cannot be dropped while it has the job (jobguard.c) */
	JobGuardGrant();
	JobGuardRelease(old.owner);
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
		if (PgCronInstalled() && LookupJob(run->job_id, &job))
		{
			RemoveJob(run_id, &job, true);
			removed = true;
		}
		ClearJobId(run_id, run->job_id);
		if (removed)
			JobGuardRelease(job.owner);
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
	RequireMaxLength(tzname, "timezone", BACKFILL_MAX_WORD);
	PG_RETURN_BOOL(InQuietHours(quiet_hours, tzname, at));
}
