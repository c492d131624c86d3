/*-------------------------------------------------------------------------
 *
 * cron.c
 *	  What backfill knows of pg_cron: whether it can have jobs, whether the
 *	  current backend is a pg_cron job, a run's job (looked up, removed),
 *	  and the arithmetic of quiet hours.
 *
 * pg_cron is an optional dependency.  Nothing in the install script refers
 * to it; every use goes through SPI at run time, after checking that the
 * extension is installed in this database.
 *
 * A job is never removed by its own tick: pg_cron 1.4 marks a job whose
 * row goes while its worker runs as "failed: job canceled", so the tick
 * that finishes a run would look failed in cron.job_run_details.  That
 * tick parks the job instead (ScheduleRemoveJob: cron.alter_job to a
 * schedule that never fires; the job stays active, so pg_cron ends the
 * tick "succeeded"), and the job is removed later, once pg_cron shows it
 * no longer running: by the next tick of any backfill job, by schedule
 * and schedule_check, by unschedule, and by cleanup_jobs
 * (ScheduleSweepJobs, orchestration/schedule.c).  Where pg_cron keeps the
 * jobs, here or in another database, and every statement on them, is
 * cronjobs.c.
 *
 * Every job belongs to a role that holds the guard of jobguard.c, so the
 * role cannot be dropped while it has one; removing a role's last job
 * releases it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "postmaster/bgworker.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "backfill.h"

/*
 * RequirePgCron
 *		Raise the "how to enable pg_cron" error unless backfill can create
 *		pg_cron jobs: pg_cron is installed in this database and runs its
 *		jobs here, or it is preloaded and serves another database of the
 *		cluster (cron.database_name), where the jobs are then created for
 *		this database (cronjobs.c; whether pg_cron is installed there is
 *		found when the job is created).  detail says what needs pg_cron.
 *		Used by schedule, schedule_check and schedule_refresh.
 */
void
RequirePgCron(const char *detail)
{
	const char *dbname = get_database_name(MyDatabaseId);

	if (CronElsewhere() == NULL && !PgCronInstalled())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_cron is not installed in database \"%s\"", dbname),
				 errdetail("%s", detail),
				 errhint("Add pg_cron to shared_preload_libraries, set cron.database_name to the database to create it in (this one, '%s', or one that serves the whole cluster), restart the server, and run CREATE EXTENSION pg_cron in that database.",
						 dbname)));
}

/*
 * CronLookupJob
 *		Find run run_id's pg_cron job job_id (under the run's job name, for
 *		this database).  Read as the extension owner (a superuser, since
 *		backfill can only be created by one), so that pg_cron's row-level
 *		security on cron.job does not hide another role's job.
 */
bool
CronLookupJob(int64 run_id, int64 job_id, CronJob *job)
{
	return CronFindJob(CRON_KIND_RUN, run_id, job_id, job);
}

/*
 * CronClearJobId
 *		Forget the run's job (only if it is still the one given).
 */
void
CronClearJobId(int64 run_id, int64 job_id)
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
 * CronRemoveJob
 *		Delete a run's pg_cron job, as the extension owner.  With "check",
 *		another role's job only when the current user has the privileges
 *		of the job's owner (what SET ROLE would give it anyway); without,
 *		always -- the run loop uses that when the run is finished, so that
 *		the job, which can no longer do anything, stops firing whoever
 *		finished the run.  The caller releases the owner's guard
 *		(JobGuardRelease) once its own updates of the run are done, so that
 *		the guard's lock is always taken after the rows.
 */
void
CronRemoveJob(int64 run_id, CronJob *job, bool check)
{
	if (check && strcmp(job->owner, CurrentUserName()) != 0)
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
	(void) CronUnscheduleJobs(list_make1(job), CRON_REMOVE_ANY);
}

/*
 * CronRemoveOwnJob
 *		Remove the pg_cron job job_id if it is still the one backfill named
 *		for (kind, id) (a refresh's or a standing check's job; a job of that
 *		id with another name is some other job and is left alone), as the
 *		extension owner: the caller has already checked that the current
 *		user may remove it.  Returns the job's owner (for
 *		JobGuardRelease), or NULL when there was no such job; *removed says
 *		whether it was removed.  Caller is connected to SPI.
 */
char *
CronRemoveOwnJob(int64 job_id, char kind, int64 id, bool *removed)
{
	CronJob    *job = palloc(sizeof(CronJob));

	*removed = false;
	if (job_id == 0 || !CronFindJob(kind, id, job_id, job))
		return NULL;
	*removed = CronUnscheduleJobs(list_make1(job), CRON_REMOVE_ANY) != NIL;
	return job->owner;
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
void
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
int
LocalMinuteOfDay(TimestampTz at, const char *tzname)
{
	return MinuteOfDayInZone(at, TimeZoneByName(tzname));
}

/*
 * TimeZoneByName
 *		The time zone "tzname" as SET TimeZone reads it (above); NULL means
 *		the session's TimeZone.  22023 for an unknown name.
 */
struct pg_tz *
TimeZoneByName(const char *tzname)
{
	pg_tz	   *tz;
	char	   *value;
	void	   *extra = NULL;

	if (tzname == NULL)
		return session_timezone;
	value = pstrdup(tzname);
	if (!check_timezone(&value, &extra, PGC_S_SESSION) || extra == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time zone \"%s\" not recognized", tzname)));
	tz = *((pg_tz **) extra);
	GucFree(extra);
	return tz;
}

/*
 * MinuteOfDayInZone
 *		The wall-clock time of "at" in time zone tz, in minutes since
 *		midnight.
 */
int
MinuteOfDayInZone(TimestampTz at, struct pg_tz *tz)
{
	struct pg_tm tm;
	fsec_t		fsec;
	int			tzoff;

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
bool
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
 *		job, the job is gone already, or pg_cron is not usable.  In a
 *		pg_cron tick, which is the job itself, the job is parked instead
 *		and runs.job_id kept (see the file header): a sweep removes it once
 *		the tick is over.
 *
 * When pg_cron is elsewhere (cronjobs.c), what is done there commits at
 * once, before this transaction does; so nothing is removed there from a
 * transaction that could still roll back.  A person's call only forgets
 * the job here (runs.job_id): the job's next tick finds the run no longer
 * its own and parks it, and the sweeps remove it.  A tick parks its job
 * only when "settled" -- the run's finished status was committed before
 * this transaction began -- and otherwise leaves it to its next tick.
 *
 * Callable from the run loop in any context; runs in the caller's
 * transaction, so a rollback keeps the job (here).
 */
bool
ScheduleRemoveJob(int64 run_id, bool settled)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	bool		isnull;
	int64		job_id;
	bool		removed = false;
	bool		elsewhere = CronElsewhere() != NULL;
	CronJob    *job = palloc0(sizeof(CronJob));

	SpiConnect();
	if (elsewhere && ScheduleCalledFromCron())
	{
		/*
		 * Elsewhere, a tick: park its own job (recorded or forgotten by a
		 * person's call) once the run's end is committed.
		 */
		if (settled)
			CronParkLeftover(CRON_KIND_RUN, run_id, 0);
		SpiFinish();
		return settled;
	}
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

	if (elsewhere)
	{
		/* elsewhere, a person: forget it; its next tick parks it */
		CronClearJobId(run_id, job_id);
		SpiFinish();
		return true;
	}

	if (CronUsable() && CronLookupJob(run_id, job_id, job))
	{
		if (ScheduleCalledFromCron())
		{
			CronParkJob(CRON_KIND_RUN, run_id, job_id);
			SpiFinish();
			return true;
		}
		CronRemoveJob(run_id, job, false);
		removed = true;
	}
	CronClearJobId(run_id, job_id);
	if (removed)
		JobGuardRelease(job->owner);
	SpiFinish();
	return removed;
}
