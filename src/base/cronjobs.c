/*-------------------------------------------------------------------------
 *
 * cronjobs.c
 *	  pg_cron's jobs of backfill, wherever pg_cron keeps them: in this
 *	  database, or in another database of the cluster (cron.database_name),
 *	  reached through the relay (cronrelay.c).  Where pg_cron is, the
 *	  names of backfill's jobs, and every statement on cron.job,
 *	  cron.job_run_details and pg_cron's functions: list, find, create,
 *	  park and remove jobs, and read the outcome of their recent ticks.
 *
 * pg_cron runs jobs only from the job table of the database it serves
 * (cron.database_name, "postgres" by default).  When that is this
 * database, backfill reads and writes cron.job here, in the caller's
 * transaction, as it always did.  When it is another one ("elsewhere"),
 * a job is created there with cron.schedule_in_database (pg_cron 1.4 or
 * later) for this database and the scheduling role, so that its ticks
 * run here as that role; every statement on it runs there, as the
 * extension owner, through the relay, and commits at once, whatever the
 * caller's transaction does afterwards.  So elsewhere:
 *
 * - job names carry this database's OID, backfill_run_<id>@<oid>
 *   (backfill_check_, backfill_refresh_): pg_cron keys jobs by name and
 *   role across all databases, and two databases have a run 1 each;
 * - a run that finishes, or that a person takes over, does not remove
 *   its job in the same transaction (which could still roll back): a
 *   person's call forgets the job (runs.job_id), and the job's next tick,
 *   which finds its run finished or no longer its own, parks it; the
 *   sweeps (orchestration/schedule.c) remove parked and forgotten jobs
 *   ("leftovers"), and forget recorded jobs that are gone;
 * - a role keeps its guard (jobguard.c) while any job of backfill of this
 *   database is its, recorded or not.
 *
 * The statements are the same in both places (CatalogCronQuery, catalog.c,
 * runs them here or through the relay): text parameters, every column
 * read back as text.  Creating a job here is done as the caller
 * (cron.schedule, which needs USAGE on schema cron); elsewhere as the
 * extension owner, naming the caller as the job's role, only when the
 * caller has USAGE on schema cron there: the same consent, given in
 * pg_cron's database (doc/scheduling.md, "pg_cron in another database").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "backfill.h"

/*
 * The schedule of a parked job: February 31st, which never comes.  The
 * job keeps its name and command; it is removed by the next sweep.
 */
#define PARKED_SCHEDULE "0 0 31 2 *"

/* The ticks of a job read back by CronTickHistory, newest first. */
#define TICK_HISTORY	10

/*
 * PgCronInstalled
 *		See backfill.h: whether the pg_cron extension is installed in this
 *		database.
 */
bool
PgCronInstalled(void)
{
	return OidIsValid(get_extension_oid("pg_cron", true));
}

/*
 * CronElsewhere
 *		See backfill.h: the name of the database pg_cron serves when it is
 *		not this one (pg_cron preloaded, cron.database_name naming another
 *		database), else NULL.
 */
const char *
CronElsewhere(void)
{
	const char *crondb = GetConfigOption("cron.database_name", true, false);
	const char *here;

	if (crondb == NULL || crondb[0] == '\0')
		return NULL;
	here = get_database_name(MyDatabaseId);
	if (here != NULL && strcmp(crondb, here) == 0)
		return NULL;
	return crondb;
}

/*
 * CronUsable
 *		See backfill.h: whether backfill may have pg_cron jobs at all: pg_cron
 *		is installed here, or serves another database.
 */
bool
CronUsable(void)
{
	return CronElsewhere() != NULL || PgCronInstalled();
}

/*
 * KindPrefix
 *		The job name prefix of a kind of job.
 */
static const char *
KindPrefix(char kind)
{
	switch (kind)
	{
		case CRON_KIND_RUN:
			return "backfill_run_";
		case CRON_KIND_CHECK:
			return "backfill_check_";
		case CRON_KIND_REFRESH:
			return "backfill_refresh_";
	}
	elog(ERROR, "backfill: unknown kind of job '%c'", kind);
	return NULL;				/* keep compiler quiet */
}

/*
 * CronJobNameOf
 *		See backfill.h: backfill_run_<id> (check, refresh) when pg_cron is
 *		here, backfill_run_<id>@<OID of this database> when it is
 *		elsewhere.
 */
char *
CronJobNameOf(char kind, int64 id)
{
	if (CronElsewhere() != NULL)
		return psprintf("%s" INT64_FORMAT "@%u", KindPrefix(kind), id,
						MyDatabaseId);
	return psprintf("%s" INT64_FORMAT, KindPrefix(kind), id);
}

/*
 * ParseJobName
 *		The kind and id of a job name of backfill as CronJobNameOf makes it
 *		(for this database, in this mode); false for any other name.
 */
static bool
ParseJobName(const char *name, char *kind, int64 *id)
{
	static const char kinds[] = {CRON_KIND_RUN, CRON_KIND_CHECK,
	CRON_KIND_REFRESH};
	int			k;

	for (k = 0; k < lengthof(kinds); k++)
	{
		const char *prefix = KindPrefix(kinds[k]);
		const char *p;
		int64		n = 0;
		int			digits = 0;

		if (strncmp(name, prefix, strlen(prefix)) != 0)
			continue;
		for (p = name + strlen(prefix); *p >= '0' && *p <= '9' && digits < 18; p++)
		{
			n = n * 10 + (*p - '0');
			digits++;
		}
		if (digits == 0 || n == 0)
			return false;
		if (strcmp(name, CronJobNameOf(kinds[k], n)) != 0)
			return false;
		*kind = kinds[k];
		*id = n;
		return true;
	}
	return false;
}

/*
 * CronQuery
 *		A statement on pg_cron's objects, here or elsewhere
 *		(CatalogCronQuery, as the extension owner).
 */
static CronRows *
CronQuery(const char *sql, int nparams, const char **params, ErrorData **error)
{
	return CatalogCronQuery(CronElsewhere(), sql, nparams, params, error);
}

/*
 * CronValue
 *		Column col (0-based) of row r.
 */
static const char *
CronValue(CronRows *rows, int r, int col)
{
	return rows->values[r * rows->ncols + col];
}

/*
 * JobsArrays
 *		The job ids and names of a list of CronJob as array literals
 *		(names are backfill's own, [a-z_0-9@] only).
 */
static void
JobsArrays(List *jobs, char **ids, char **names)
{
	StringInfoData i;
	StringInfoData n;
	ListCell   *lc;

	initStringInfo(&i);
	initStringInfo(&n);
	appendStringInfoChar(&i, '{');
	appendStringInfoChar(&n, '{');
	foreach(lc, jobs)
	{
		CronJob    *job = lfirst(lc);

		if (lc != list_head(jobs))
		{
			appendStringInfoChar(&i, ',');
			appendStringInfoChar(&n, ',');
		}
		appendStringInfo(&i, INT64_FORMAT, job->job_id);
		appendStringInfo(&n, "\"%s\"", job->jobname);
	}
	appendStringInfoChar(&i, '}');
	appendStringInfoChar(&n, '}');
	*ids = i.data;
	*names = n.data;
}

/*
 * MarkRecorded
 *		Fill in job->recorded (the run, check or refresh of the job's name
 *		records exactly this job id) and job->finished (that run is done,
 *		failed or cancelled).  Caller is connected to SPI.
 */
static void
MarkRecorded(List *jobs)
{
	Oid			argtypes[3] = {INT8ARRAYOID, INT8ARRAYOID, TEXTARRAYOID};
	Datum		values[3];
	Datum	   *jobids;
	Datum	   *ids;
	Datum	   *kinds;
	int			n = list_length(jobs);
	int			i = 0;
	ListCell   *lc;

	if (n == 0)
		return;
	jobids = palloc(sizeof(Datum) * n);
	ids = palloc(sizeof(Datum) * n);
	kinds = palloc(sizeof(Datum) * n);
	foreach(lc, jobs)
	{
		CronJob    *job = lfirst(lc);
		char		k[2] = {job->kind, '\0'};

		jobids[i] = Int64GetDatum(job->job_id);
		ids[i] = Int64GetDatum(job->id);
		kinds[i] = CStringGetTextDatum(k);
		i++;
	}
	values[0] = MakeArray(jobids, NULL, n, INT8OID);
	values[1] = MakeArray(ids, NULL, n, INT8OID);
	values[2] = MakeArray(kinds, NULL, n, TEXTOID);
	CatalogExec("SELECT w.n,"
				" (SELECT r.status FROM backfill.runs r"
				"   WHERE w.kind OPERATOR(pg_catalog.=) 'r'"
				"   AND r.run_id OPERATOR(pg_catalog.=) w.id"
				"   AND r.job_id OPERATOR(pg_catalog.=) w.jobid),"
				" EXISTS (SELECT FROM backfill.checks c"
				"   WHERE w.kind OPERATOR(pg_catalog.=) 'c'"
				"   AND c.check_id OPERATOR(pg_catalog.=) w.id"
				"   AND c.job_id OPERATOR(pg_catalog.=) w.jobid)"
				" OR EXISTS (SELECT FROM backfill.refreshes f"
				"   WHERE w.kind OPERATOR(pg_catalog.=) 'f'"
				"   AND f.refresh_id OPERATOR(pg_catalog.=) w.id"
				"   AND f.job_id OPERATOR(pg_catalog.=) w.jobid)"
				" FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2),"
				"  pg_catalog.unnest($3)) WITH ORDINALITY AS w(jobid, id, kind, n)"
				" ORDER BY w.n",
				3, argtypes, values, NULL, SPI_OK_SELECT);
	i = 0;
	foreach(lc, jobs)
	{
		CronJob    *job = lfirst(lc);
		char	   *status = SpiGetText(i, 2);
		bool		isnull;
		bool		other = SpiGetBool(i, 3, &isnull);

		job->recorded = status != NULL || (other && !isnull);
		job->finished = status != NULL &&
			(strcmp(status, "done") == 0 || strcmp(status, "failed") == 0 ||
			 strcmp(status, "cancelled") == 0);
		i++;
	}
	SPI_freetuptable(SPI_tuptable);
}

/*
 * CronListJobs
 *		See backfill.h: every job of backfill for this database in pg_cron's
 *		job table (names as CronJobNameOf makes them), with its owner,
 *		whether it is parked, and whether its run, check or refresh records
 *		it (and whether that run is finished); NIL when pg_cron is not
 *		usable.  Caller is connected to SPI.
 */
List *
CronListJobs(void)
{
	const char *params[2];
	CronRows   *rows;
	List	   *jobs = NIL;
	int			r;

	if (!CronUsable())
		return NIL;
	params[0] = get_database_name(MyDatabaseId);
	params[1] = PARKED_SCHEDULE;
	rows = CronQuery("SELECT j.jobid::pg_catalog.text, j.jobname::pg_catalog.text,"
					 " j.username::pg_catalog.text,"
					 " (j.schedule OPERATOR(pg_catalog.=) $2)::pg_catalog.text"
					 " FROM cron.job j"
					 " WHERE j.database OPERATOR(pg_catalog.=) $1"
					 " AND pg_catalog.starts_with(j.jobname::pg_catalog.text, 'backfill_')"
					 " ORDER BY j.jobid",
					 2, params, NULL);
	for (r = 0; r < rows->nrows; r++)
	{
		CronJob    *job = palloc0(sizeof(CronJob));

		CHECK_FOR_INTERRUPTS();
		if (!ParseJobName(CronValue(rows, r, 1), &job->kind, &job->id))
		{
			pfree(job);
			continue;
		}
		job->job_id = pg_strtoint64(CronValue(rows, r, 0));
		job->jobname = pstrdup(CronValue(rows, r, 1));
		job->owner = pstrdup(CronValue(rows, r, 2));
		job->parked = strcmp(CronValue(rows, r, 3), "true") == 0;
		jobs = lappend(jobs, job);
	}
	MarkRecorded(jobs);
	return jobs;
}

/*
 * CronFindJob
 *		See backfill.h: the job job_id if it exists in pg_cron's job table
 *		under the name backfill gives the job of (kind, id), for this
 *		database; its owner in job->owner.  Caller is connected to SPI.
 */
bool
CronFindJob(char kind, int64 id, int64 job_id, CronJob *job)
{
	const char *params[3];
	CronRows   *rows;

	memset(job, 0, sizeof(CronJob));
	if (job_id == 0 || !CronUsable())
		return false;
	params[0] = psprintf(INT64_FORMAT, job_id);
	params[1] = CronJobNameOf(kind, id);
	params[2] = get_database_name(MyDatabaseId);
	rows = CronQuery("SELECT j.username::pg_catalog.text FROM cron.job j"
					 " WHERE j.jobid OPERATOR(pg_catalog.=) $1::pg_catalog.int8"
					 " AND j.jobname::pg_catalog.text OPERATOR(pg_catalog.=) $2"
					 " AND j.database OPERATOR(pg_catalog.=) $3",
					 3, params, NULL);
	if (rows->nrows != 1)
		return false;
	job->job_id = job_id;
	job->jobname = pstrdup(params[1]);
	job->owner = pstrdup(CronValue(rows, 0, 0));
	job->kind = kind;
	job->id = id;
	return true;
}

/*
 * CronUnscheduleJobs
 *		See backfill.h: remove the jobs given (each only if it still exists
 *		under its name, for this database), as the extension owner:
 *		CRON_REMOVE_ANY whatever pg_cron is doing with it; CRON_REMOVE_IDLE
 *		not one that cron.job_run_details shows under way;
 *		CRON_REMOVE_SETTLED not one whose last tick ended in the last ten
 *		seconds either: pg_cron 1.4 logs a tick "succeeded" as soon as its
 *		command completes, but watches its background worker until that
 *		has exited, and a job removed meanwhile has that tick logged
 *		"failed: job canceled".  Returns those removed (the CronJob of the
 *		list).  Caller is connected to SPI.
 */
List *
CronUnscheduleJobs(List *jobs, int wait)
{
	const char *params[5];
	char	   *ids;
	char	   *names;
	CronRows   *rows;
	List	   *removed = NIL;
	ListCell   *lc;
	int			r;

	if (jobs == NIL)
		return NIL;
	JobsArrays(jobs, &ids, &names);
	params[0] = ids;
	params[1] = names;
	params[2] = get_database_name(MyDatabaseId);
	params[3] = wait != CRON_REMOVE_ANY ? "true" : "false";
	params[4] = wait == CRON_REMOVE_SETTLED ? "10 seconds" : "0";
	rows = CronQuery("SELECT j.jobid::pg_catalog.text,"
					 " cron.unschedule(j.jobid)::pg_catalog.text"
					 " FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.int8[]),"
					 "  pg_catalog.unnest($2::pg_catalog.text[])) AS w(jobid, jobname)"
					 " JOIN cron.job j ON j.jobid OPERATOR(pg_catalog.=) w.jobid"
					 "  AND j.jobname::pg_catalog.text OPERATOR(pg_catalog.=) w.jobname"
					 " WHERE j.database OPERATOR(pg_catalog.=) $3"
					 " AND (NOT $4::pg_catalog.bool OR NOT EXISTS"
					 "  (SELECT FROM cron.job_run_details d"
					 "    WHERE d.jobid OPERATOR(pg_catalog.=) j.jobid"
					 "    AND (d.status OPERATOR(pg_catalog.=)"
					 "     ANY ('{starting,running,sending,connecting}'::pg_catalog.text[])"
					 "     OR d.end_time OPERATOR(pg_catalog.>)"
					 "      (pg_catalog.now() OPERATOR(pg_catalog.-) $5::pg_catalog.interval))))"
					 " ORDER BY j.jobid",
					 5, params, NULL);
	for (r = 0; r < rows->nrows; r++)
	{
		int64		job_id = pg_strtoint64(CronValue(rows, r, 0));

		foreach(lc, jobs)
		{
			CronJob    *job = lfirst(lc);

			if (job->job_id == job_id)
			{
				removed = lappend(removed, job);
				break;
			}
		}
	}
	return removed;
}

/*
 * CronParkJob
 *		See backfill.h: make job job_id of (kind, id) never fire again
 *		without removing it (cron.alter_job to PARKED_SCHEDULE, as the
 *		extension owner), so that the tick under way, which is that job,
 *		still ends "succeeded".  Caller is connected to SPI.
 */
void
CronParkJob(char kind, int64 id, int64 job_id)
{
	const char *params[4];

	params[0] = psprintf(INT64_FORMAT, job_id);
	params[1] = CronJobNameOf(kind, id);
	params[2] = PARKED_SCHEDULE;
	params[3] = get_database_name(MyDatabaseId);
	(void) CronQuery("SELECT cron.alter_job(j.jobid, schedule => $3)"
					 " FROM cron.job j"
					 " WHERE j.jobid OPERATOR(pg_catalog.=) $1::pg_catalog.int8"
					 " AND j.jobname::pg_catalog.text OPERATOR(pg_catalog.=) $2"
					 " AND j.database OPERATOR(pg_catalog.=) $4",
					 4, params, NULL);
}

/*
 * CronForgetJob
 *		See backfill.h: the one statement per kind that clears a job no
 *		longer in pg_cron from its run, check or refresh (only while that
 *		still records this job: a newer one is left alone) and notes why.
 *		Caller is connected to SPI.
 */
void
CronForgetJob(const CronJob *job, const char *why)
{
	Oid			types[3] = {INT8OID, TEXTOID, INT8OID};
	Datum		vals[3];

	vals[0] = Int64GetDatum(job->id);
	vals[1] = CStringGetTextDatum(why);
	vals[2] = Int64GetDatum(job->job_id);
	if (job->kind == CRON_KIND_RUN)
		CatalogExec("UPDATE backfill.runs SET job_id = NULL, last_error = $2"
					" WHERE run_id OPERATOR(pg_catalog.=) $1"
					" AND job_id OPERATOR(pg_catalog.=) $3",
					3, types, vals, NULL, SPI_OK_UPDATE);
	else if (job->kind == CRON_KIND_CHECK)
		CatalogExec("UPDATE backfill.checks SET job_id = NULL, last_error = $2"
					" WHERE check_id OPERATOR(pg_catalog.=) $1"
					" AND job_id OPERATOR(pg_catalog.=) $3",
					3, types, vals, NULL, SPI_OK_UPDATE);
	else
		CatalogExec("UPDATE backfill.refreshes SET job_id = NULL, last_message = $2"
					" WHERE refresh_id OPERATOR(pg_catalog.=) $1"
					" AND job_id OPERATOR(pg_catalog.=) $3",
					3, types, vals, NULL, SPI_OK_UPDATE);
}

/*
 * CronParkLeftover
 *		See backfill.h: in a tick, when pg_cron is elsewhere, park the job
 *		that runs it -- the job of (kind, id) owned by the current user for
 *		this database -- unless it is recorded_job (0: whichever it is):
 *		the job of a finished run, or a job left behind, which the next
 *		sweep removes.  Nothing when pg_cron is here (a tick parks by the
 *		job recorded, in its own transaction).  Caller is connected to SPI.
 */
void
CronParkLeftover(char kind, int64 id, int64 recorded_job)
{
	const char *params[5];

	if (CronElsewhere() == NULL)
		return;
	params[0] = CronJobNameOf(kind, id);
	params[1] = CurrentUserName();
	params[2] = PARKED_SCHEDULE;
	params[3] = get_database_name(MyDatabaseId);
	params[4] = psprintf(INT64_FORMAT, recorded_job);
	(void) CronQuery("SELECT cron.alter_job(j.jobid, schedule => $3)"
					 " FROM cron.job j"
					 " WHERE j.jobname::pg_catalog.text OPERATOR(pg_catalog.=) $1"
					 " AND j.username OPERATOR(pg_catalog.=) $2"
					 " AND j.database OPERATOR(pg_catalog.=) $4"
					 " AND j.jobid OPERATOR(pg_catalog.<>) $5::pg_catalog.int8"
					 " AND j.schedule OPERATOR(pg_catalog.<>) $3",
					 5, params, NULL);
}

/*
 * WarnLibpqTicks
 *		The WARNING of a schedule call when pg_cron's settings make every
 *		tick a libpq connection without a password
 *		(cron.use_background_workers off): with the default setup such a
 *		connection fails, every tick logs "connection failed", and nothing
 *		in backfill would say so until backfill.progress shows the job
 *		stalled.
 */
static void
WarnLibpqTicks(const char *what)
{
	const char *workers = GetConfigOption("cron.use_background_workers", true,
										  false);
	const char *host = GetConfigOption("cron.host", true, false);

	if (workers == NULL || strcmp(workers, "on") == 0)
		return;
	ereport(WARNING,
			(errmsg("pg_cron will run the ticks of %s over a libpq connection without a password",
					what),
			 errdetail("cron.use_background_workers is off, so for every tick pg_cron connects to cron.host (\"%s\") as role \"%s\" without a password; unless pg_hba.conf trusts that connection or the server's operating system user has a .pgpass entry for it, every tick fails with \"connection failed\".",
					   host ? host : "localhost", CurrentUserName()),
			 errhint("Set cron.use_background_workers = on in postgresql.conf, raise max_worker_processes by the number of ticks that may run at once (pg_cron starts a background worker for each), and restart the server.")));
}

/*
 * ElsewhereError
 *		Raise the error of a statement run in pg_cron's database, in words
 *		of this database for the errors of the setup: pg_cron not
 *		installed there (3F000: no schema cron) or older than 1.4 (42883:
 *		no cron.schedule_in_database).
 */
static void
ElsewhereError(ErrorData *edata, const char *crondb)
{
	if (edata->sqlerrcode == ERRCODE_INVALID_SCHEMA_NAME ||
		edata->sqlerrcode == ERRCODE_UNDEFINED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_cron is not installed in database \"%s\"", crondb),
				 errdetail("cron.database_name names database \"%s\", where pg_cron keeps its jobs; backfill creates its jobs there.",
						   crondb),
				 errhint("Run CREATE EXTENSION pg_cron in database \"%s\".", crondb)));
	if (edata->sqlerrcode == ERRCODE_UNDEFINED_FUNCTION)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_cron in database \"%s\" cannot run jobs in database \"%s\"",
						crondb, get_database_name(MyDatabaseId)),
				 errdetail("Jobs in another database need cron.schedule_in_database, which pg_cron has since version 1.4."),
				 errhint("Update pg_cron (ALTER EXTENSION pg_cron UPDATE in database \"%s\"), or set cron.database_name to '%s' and restart the server.",
						 crondb, get_database_name(MyDatabaseId))));
	ThrowErrorData(edata);
}

/*
 * CronCreateJob
 *		See backfill.h: create (or, same name and role, replace) the job of
 *		(kind, id) with this schedule and command, owned by and running as
 *		the current user, in this database; its job id.  Here: with the
 *		caller's own cron.schedule (USAGE on schema cron checked first, so
 *		the error names the grant).  Elsewhere: cron.schedule_in_database
 *		there, as the extension owner, with the caller as the job's role,
 *		only when the caller has USAGE on schema cron there (42501 else);
 *		committed there at once.  "what" names the job in the WARNING of
 *		libpq ticks (WarnLibpqTicks).  Caller is connected to SPI.
 */
int64
CronCreateJob(char kind, int64 id, const char *cron, const char *command,
			  const char *what)
{
	const char *crondb = CronElsewhere();
	char	   *jobname = CronJobNameOf(kind, id);
	char	   *me = CurrentUserName();
	int64		job_id;

	if (crondb == NULL)
	{
		Oid			cronnsp = get_namespace_oid("cron", true);
		Oid			argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};
		Datum		values[3];
		bool		isnull;

		if (OidIsValid(cronnsp) &&
			NamespaceAclCheck(cronnsp, GetUserId(), ACL_USAGE) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for schema cron"),
					 errdetail("The pg_cron job is created by, and runs as, the calling role \"%s\".",
							   me),
					 errhint("A superuser can allow it with GRANT USAGE ON SCHEMA cron TO %s.",
							 quote_identifier(me))));
		values[0] = CStringGetTextDatum(jobname);
		values[1] = CStringGetTextDatum(cron);
		values[2] = CStringGetTextDatum(command);
		SpiExecPinned("SELECT cron.schedule($1, $2, $3)", 3, argtypes, values,
					  NULL, false, 0, SPI_OK_SELECT);
		job_id = SpiGetInt64(0, 1, &isnull);
		if (isnull)
			elog(ERROR, "backfill: cron.schedule returned no job id");
		SPI_freetuptable(SPI_tuptable);
	}
	else
	{
		const char *params[5];
		CronRows   *rows;
		ErrorData  *edata = NULL;

		if (!RoleCanLogin(GetUserId()))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("role \"%s\" cannot log in, so pg_cron cannot run a job as it", me),
					 errdetail("pg_cron starts every tick of a job as the job's role, which is the role that schedules it."),
					 errhint("Schedule as a role with LOGIN, or ask a superuser for ALTER ROLE %s LOGIN.",
							 quote_identifier(me))));
		params[0] = jobname;
		params[1] = cron;
		params[2] = command;
		params[3] = get_database_name(MyDatabaseId);
		params[4] = me;
		rows = CronQuery("SELECT CASE WHEN pg_catalog.has_schema_privilege("
						 "  $5::pg_catalog.name, 'cron', 'USAGE')"
						 " THEN cron.schedule_in_database($1, $2, $3, $4, $5)::pg_catalog.text"
						 " END",
						 5, params, &edata);
		if (rows == NULL)
			ElsewhereError(edata, crondb);
		if (rows->nrows != 1)
			elog(ERROR, "backfill: cron.schedule_in_database returned no row");
		if (CronValue(rows, 0, 0) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for schema cron in database \"%s\"", crondb),
					 errdetail("pg_cron keeps its jobs in database \"%s\" (cron.database_name); the job is created there for role \"%s\" and runs as that role in database \"%s\".",
							   crondb, me, get_database_name(MyDatabaseId)),
					 errhint("A superuser can allow it with GRANT USAGE ON SCHEMA cron TO %s, run in database \"%s\".",
							 quote_identifier(me), crondb)));
		job_id = pg_strtoint64(CronValue(rows, 0, 0));
	}
	WarnLibpqTicks(what);
	return job_id;
}

/*
 * CronTickHistory
 *		See backfill.h: the last TICK_HISTORY finished ticks (succeeded or
 *		failed) of each job given that still exists under its name for this
 *		database, newest first, in *rows: job id, status, pg_cron's
 *		return_message, when the tick ended (or started) in microseconds
 *		since 1970 (NULL for a tick that never started: pg_cron records no
 *		time for a failed connection), the job's role.  False (nothing raised) when pg_cron cannot be read.
 *		Caller is connected to SPI.
 */
bool
CronTickHistory(List *jobs, CronRows **rows)
{
	const char *params[3];
	char	   *ids;
	char	   *names;
	ErrorData  *edata = NULL;

	*rows = NULL;
	if (jobs == NIL || !CronUsable())
		return false;
	if (CronElsewhere() == NULL && !PgCronInstalled())
		return false;
	JobsArrays(jobs, &ids, &names);
	params[0] = ids;
	params[1] = names;
	params[2] = get_database_name(MyDatabaseId);
	*rows = CronQuery("SELECT j.jobid::pg_catalog.text, d.status,"
					  " d.return_message,"
					  " (pg_catalog.date_part('epoch', COALESCE(d.end_time, d.start_time))"
					  "  OPERATOR(pg_catalog.*) 1000000::pg_catalog.float8)"
					  "  ::pg_catalog.int8::pg_catalog.text,"
					  " j.username::pg_catalog.text"
					  " FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.int8[]),"
					  "  pg_catalog.unnest($2::pg_catalog.text[])) AS w(jobid, jobname)"
					  " JOIN cron.job j ON j.jobid OPERATOR(pg_catalog.=) w.jobid"
					  "  AND j.jobname::pg_catalog.text OPERATOR(pg_catalog.=) w.jobname"
					  " CROSS JOIN LATERAL (SELECT d.runid, d.status, d.return_message,"
					  "  d.start_time, d.end_time"
					  "  FROM cron.job_run_details d"
					  "  WHERE d.jobid OPERATOR(pg_catalog.=) j.jobid"
					  "  AND d.status OPERATOR(pg_catalog.=)"
					  "   ANY ('{succeeded,failed}'::pg_catalog.text[])"
					  "  ORDER BY d.runid DESC LIMIT " CppAsString2(TICK_HISTORY) ") d"
					  " WHERE j.database OPERATOR(pg_catalog.=) $3"
					  " ORDER BY j.jobid, d.runid DESC",
					  3, params, &edata);
	return *rows != NULL;
}
