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
 * RoleJobs
 *		The jobs of backfill for this database (CronListJobs) whose role
 *		is rolname and that count for its guard: those recorded on their
 *		run, check or refresh; when pg_cron is in another database, also
 *		those left behind (forgotten by a person's call, or made by a
 *		schedule call that rolled back), which still fire until a sweep
 *		removes them.  Caller is connected to SPI.
 */
static List *
RoleJobs(const char *rolname)
{
	List	   *jobs = CronListJobs();
	List	   *mine = NIL;
	bool		elsewhere = CronElsewhere() != NULL;
	ListCell   *lc;

	foreach(lc, jobs)
	{
		CronJob    *job = lfirst(lc);

		if (strcmp(job->owner, rolname) == 0 && (job->recorded || elsewhere))
			mine = lappend(mine, job);
	}
	return mine;
}

/*
 * RoleHasRecordedJobs
 *		Whether role rolname is recorded as the role of a job of a run,
 *		check or refresh here (runs.scheduled_by, checks.created_by,
 *		refreshes.created_by with a job): a cheap test, made before pg_cron
 *		is asked, which may be in another database.
 */
static bool
RoleHasRecordedJobs(const char *rolname)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];

	values[0] = CStringGetTextDatum(rolname);
	return CatalogExists("SELECT FROM backfill.runs r"
						 " WHERE r.job_id IS NOT NULL"
						 " AND r.scheduled_by::pg_catalog.text OPERATOR(pg_catalog.=) $1"
						 " UNION ALL SELECT FROM backfill.checks c"
						 " WHERE c.job_id IS NOT NULL"
						 " AND c.created_by::pg_catalog.text OPERATOR(pg_catalog.=) $1"
						 " UNION ALL SELECT FROM backfill.refreshes f"
						 " WHERE f.job_id IS NOT NULL"
						 " AND f.created_by::pg_catalog.text OPERATOR(pg_catalog.=) $1"
						 " LIMIT 1",
						 1, argtypes, values);
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
 *		backfill job of this database left in pg_cron's job table
 *		(RoleJobs, here or in another database).  Decided on a fresh
 *		snapshot after
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

	if (rolname == NULL)
		return;
	roleid = get_role_oid(rolname, true);
	if (!OidIsValid(roleid) || IsolationUsesXactSnapshot() ||
		!GuardLock(false) || !HoldsGuard(roleid))
		return;
	if (CronUsable() && RoleJobs(rolname) != NIL)
		return;
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
	List	   *jobs;
	List	   *removed;
	ListCell   *lc;
	MemoryContext itercxt;
	MemoryContext oldcxt;

	if (rolname == NULL || HoldsGuard(roleid) || !CronUsable())
		return 0;
	/* pg_cron may be in another database: ask it only for a role with jobs */
	if (CronElsewhere() != NULL && !RoleHasRecordedJobs(rolname))
		return 0;
	jobs = RoleJobs(rolname);
	removed = CronUnscheduleJobs(jobs, CRON_REMOVE_ANY);

	itercxt = AllocSetContextCreate(CurrentMemoryContext,
									"backfill job guard",
									ALLOCSET_SMALL_SIZES);
	foreach(lc, removed)
	{
		CronJob    *job = lfirst(lc);
		char	   *why;

		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(itercxt);
		oldcxt = MemoryContextSwitchTo(itercxt);
		why = psprintf("%s revoked the grant of role \"%s\" on " GUARD_OBJECT
					   ": its pg_cron job " INT64_FORMAT " (%s) was removed",
					   command, rolname, job->job_id, job->jobname);
		CronForgetJob(job, why);
		ereport(LOG,
				(errmsg("backfill: %s", why)));
		MemoryContextSwitchTo(oldcxt);
	}
	MemoryContextDelete(itercxt);
	return list_length(removed);
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
