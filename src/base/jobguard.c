/*-------------------------------------------------------------------------
 *
 * jobguard.c
 *	  Never leave pg_cron a job whose role is gone: the guard that makes
 *	  DROP ROLE refuse a role with backfill jobs, and the event trigger
 *	  that removes the jobs of a role that lost it.
 *
 * pg_cron records a job's role by name, with no dependency PostgreSQL
 * knows of; a job whose role was dropped stops the pg_cron scheduler for
 * every job of every user (doc/scheduling.md).  So a role that owns a
 * pg_cron job of backfill (a scheduled run or standing check) holds the
 * guard: an explicit SELECT grant on the view backfill.scheduled_jobs,
 * made as the extension owner by schedule and schedule_check and revoked
 * when the role's last backfill job is removed.  A grant is a shared
 * dependency (pg_shdepend), so DROP ROLE refuses, from any database:
 *
 *		ERROR:  role "etl" cannot be dropped because some objects depend on it
 *		DETAIL:  privileges for view backfill.scheduled_jobs
 *
 * DROP OWNED BY etl run by a superuser revokes that grant too, silently.
 * The event trigger backfill_job_guard (ddl_command_end of DROP OWNED and
 * REVOKE; its entry point is in api/scheduling.c) therefore looks at every
 * role the command named, and removes here (JobGuardRemoveJobs), as the
 * extension owner, the backfill jobs of those that no longer hold the
 * guard, noting why on the run or check (last_error).  So after DROP
 * OWNED the role has no job left, and DROP ROLE may proceed.
 *
 * Grants and revokes of the guard update one pg_class row; they are
 * serialized on a transaction-level lock (BACKFILL_LOCK_CLASS_GUARD) so
 * that two sessions never update it at once, and so that a release
 * decided on a fresh snapshot cannot miss a job scheduled concurrently.
 * A grant waits for the lock; a release only takes it when it is free
 * (a release that is skipped leaves a guard in place, which is safe), so
 * the lock, always taken after the rows of runs and checks a call
 * updates, adds no deadlock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "backfill.h"

/* The grant that makes a role undroppable while it has backfill jobs. */
#define GUARD_RELNAME "scheduled_jobs"
#define GUARD_OBJECT "backfill." GUARD_RELNAME

/*
 * GuardLock
 *		The transaction-level lock that serializes every grant and revoke
 *		of the guard; with "wait" false, false when another transaction
 *		holds it.
 */
static bool
GuardLock(bool wait)
{
	LOCKTAG		tag;

	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_GUARD, 0);
	return LockAcquire(&tag, ExclusiveLock, false, !wait) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * HoldsGuard
 *		Whether role roleid holds its own SELECT grant on the guard view (a
 *		grant to PUBLIC does not count).  Read from the system cache, so
 *		the latest committed ACL is seen whatever the transaction's
 *		isolation level (and this transaction's own changes).
 */
static bool
HoldsGuard(Oid roleid)
{
	Oid			relid = get_relname_relid("scheduled_jobs",
										  get_namespace_oid("backfill", false));
	HeapTuple	tup;
	Datum		d;
	bool		isnull;
	bool		held = false;

	if (!OidIsValid(relid))
		elog(ERROR, "backfill: view " GUARD_OBJECT " is missing");
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "backfill: cache lookup failed for relation %u", relid);
	d = SysCacheGetAttr(RELOID, tup, Anum_pg_class_relacl, &isnull);
	if (!isnull)
	{
		Acl		   *acl = DatumGetAclP(d);
		AclItem    *items = ACL_DAT(acl);
		int			i;

		for (i = 0; i < ACL_NUM(acl) && !held; i++)
			held = items[i].ai_grantee == roleid &&
				(ACLITEM_GET_PRIVS(items[i]) & ACL_SELECT) != 0;
	}
	ReleaseSysCache(tup);
	return held;
}

/*
 * The backfill jobs of a role (by name) in cron.job: the run jobs recorded
 * in runs.job_id and named backfill_run_<run_id>, the check jobs recorded in
 * checks.job_id and named backfill_check_<check_id>, the refresh jobs
 * recorded in refreshes.job_id and named backfill_refresh_<refresh_id>
 * (fourth column: true for a run, false for a check, NULL for a refresh).
 * $1 is the role name.
 */
#define ROLE_JOBS_SQL \
	"SELECT j.jobid, j.jobname::pg_catalog.text, r.run_id, true" \
	" FROM cron.job j JOIN backfill.runs r" \
	"  ON r.job_id OPERATOR(pg_catalog.=) j.jobid" \
	" WHERE j.jobname OPERATOR(pg_catalog.=)" \
	"  ('backfill_run_' OPERATOR(pg_catalog.||) r.run_id::pg_catalog.text)" \
	" AND j.username OPERATOR(pg_catalog.=) $1" \
	" UNION ALL" \
	" SELECT j.jobid, j.jobname::pg_catalog.text, c.check_id, false" \
	" FROM cron.job j JOIN backfill.checks c" \
	"  ON c.job_id OPERATOR(pg_catalog.=) j.jobid" \
	" WHERE j.jobname OPERATOR(pg_catalog.=)" \
	"  ('backfill_check_' OPERATOR(pg_catalog.||) c.check_id::pg_catalog.text)" \
	" AND j.username OPERATOR(pg_catalog.=) $1" \
	" UNION ALL" \
	" SELECT j.jobid, j.jobname::pg_catalog.text, f.refresh_id, NULL" \
	" FROM cron.job j JOIN backfill.refreshes f" \
	"  ON f.job_id OPERATOR(pg_catalog.=) j.jobid" \
	" WHERE j.jobname OPERATOR(pg_catalog.=)" \
	"  ('backfill_refresh_' OPERATOR(pg_catalog.||) f.refresh_id::pg_catalog.text)" \
	" AND j.username OPERATOR(pg_catalog.=) $1" \
	" ORDER BY 1"

/*
 * PgCronHere
 *		Whether pg_cron is installed in this database.
 */
static bool
PgCronHere(void)
{
	return OidIsValid(get_extension_oid("pg_cron", true));
}

/*
 * JobGuardGrant
 *		See backfill.h: the current user, who has just made a pg_cron job
 *		of backfill, holds the guard.  Caller is connected to SPI.
 */
void
JobGuardGrant(void)
{
	(void) GuardLock(true);
	if (HoldsGuard(GetUserId()))
		return;
	CatalogGrantSelect(GUARD_RELNAME, CurrentUserName(), true);
}

/*
 * JobGuardRelease
 *		See backfill.h: revoke the guard of role "rolname" when it has no
 *		backfill job left in cron.job.  Decided on a fresh snapshot after
 *		the guard lock is held, so a job scheduled concurrently is seen; in
 *		a REPEATABLE READ or SERIALIZABLE transaction, whose snapshot could
 *		miss it, and when another transaction holds the lock, the guard is
 *		kept (the next release, or DROP OWNED, takes it away).  The caller
 *		calls it after its own updates of runs and checks, and is
 *		connected to SPI.
 */
void
JobGuardRelease(const char *rolname)
{
	Oid			roleid;
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];

	if (rolname == NULL)
		return;
	roleid = get_role_oid(rolname, true);
	if (!OidIsValid(roleid) || IsolationUsesXactSnapshot() ||
		!GuardLock(false) || !HoldsGuard(roleid))
		return;
	if (PgCronHere())
	{
		values[0] = CStringGetTextDatum(rolname);
		if (CatalogExists(ROLE_JOBS_SQL, 1, argtypes, values))
			return;
	}
	CatalogGrantSelect(GUARD_RELNAME, rolname, false);
}

/*
 * RemoveJobsOfUnguarded
 *		When role roleid has backfill jobs but no longer holds the guard
 *		(its grant went with DROP OWNED, or was revoked by hand): remove
 *		them as the extension owner and note why on each run or check
 *		(last_error) and in the server log.  "command" names what took the
 *		guard away.  Returns the number of jobs removed.  Caller is
 *		connected to SPI.
 */
static int
RemoveJobsOfUnguarded(Oid roleid, const char *command)
{
	char	   *rolname = GetUserNameFromId(roleid, true);
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	int			n;
	int			i;
	int64	   *job_ids;
	char	  **job_names;
	int64	   *ids;
	char	   *kind;			/* 'r'un, 'c'heck, re'f'resh */
	MemoryContext itercxt;
	MemoryContext oldcxt;

	if (rolname == NULL || HoldsGuard(roleid))
		return 0;
	values[0] = CStringGetTextDatum(rolname);
	CatalogExec(ROLE_JOBS_SQL, 1, argtypes, values, NULL, SPI_OK_SELECT);
	n = (int) SPI_processed;
	if (n == 0)
	{
		SPI_freetuptable(SPI_tuptable);
		return 0;
	}
	job_ids = palloc(sizeof(int64) * n);
	job_names = palloc(sizeof(char *) * n);
	ids = palloc(sizeof(int64) * n);
	kind = palloc(sizeof(char) * n);
	for (i = 0; i < n; i++)
	{
		bool		isnull;
		bool		is_run;

		job_ids[i] = SpiGetInt64(i, 1, &isnull);
		job_names[i] = SpiGetText(i, 2);
		ids[i] = SpiGetInt64(i, 3, &isnull);
		is_run = SpiGetBool(i, 4, &isnull);
		kind[i] = isnull ? 'f' : is_run ? 'r' : 'c';
	}
	SPI_freetuptable(SPI_tuptable);

	itercxt = AllocSetContextCreate(CurrentMemoryContext,
									"backfill job guard",
									ALLOCSET_SMALL_SIZES);
	for (i = 0; i < n; i++)
	{
		Oid			types[2] = {INT8OID, TEXTOID};
		Datum		vals[2];
		char	   *why;

		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(itercxt);
		oldcxt = MemoryContextSwitchTo(itercxt);
		why = psprintf("%s revoked the grant of role \"%s\" on " GUARD_OBJECT
					   ": its pg_cron job " INT64_FORMAT " (%s) was removed",
					   command, rolname, job_ids[i], job_names[i]);
		vals[0] = Int64GetDatum(job_ids[i]);
		CatalogExec("SELECT cron.unschedule($1)", 1, types, vals, NULL,
					SPI_OK_SELECT);
		vals[0] = Int64GetDatum(ids[i]);
		vals[1] = CStringGetTextDatum(why);
		if (kind[i] == 'r')
			CatalogExec("UPDATE backfill.runs SET job_id = NULL, last_error = $2"
						" WHERE run_id OPERATOR(pg_catalog.=) $1",
						2, types, vals, NULL, SPI_OK_UPDATE);
		else if (kind[i] == 'c')
			CatalogExec("UPDATE backfill.checks SET job_id = NULL, last_error = $2"
						" WHERE check_id OPERATOR(pg_catalog.=) $1",
						2, types, vals, NULL, SPI_OK_UPDATE);
		else
			CatalogExec("UPDATE backfill.refreshes SET job_id = NULL, last_message = $2"
						" WHERE refresh_id OPERATOR(pg_catalog.=) $1",
						2, types, vals, NULL, SPI_OK_UPDATE);
		ereport(LOG,
				(errmsg("backfill: %s", why)));
		MemoryContextSwitchTo(oldcxt);
	}
	MemoryContextDelete(itercxt);
	return n;
}

/*
 * JobGuardRemoveJobs
 *		See backfill.h: the roles (OIDs) named by a DROP OWNED or REVOKE
 *		("command") that have backfill jobs but no longer hold the guard
 *		lose those jobs (RemoveJobsOfUnguarded).  Returns the number of
 *		jobs removed.  Caller holds the sweep lock (ScheduleSweepLock) and
 *		is connected to SPI.
 */
int
JobGuardRemoveJobs(List *roleids, const char *command)
{
	ListCell   *lc;
	int			n = 0;

	foreach(lc, roleids)
	{
		CHECK_FOR_INTERRUPTS();
		n += RemoveJobsOfUnguarded(lfirst_oid(lc), command);
	}
	return n;
}
