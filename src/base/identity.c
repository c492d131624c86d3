/*-------------------------------------------------------------------------
 *
 * identity.c
 *	  Who user text runs as, and who may act on a run.
 *
 * The text a role registers (source, measure, ledger, source_horizon) is
 * versioned in backfill.definitions with its author's OID.  It only ever
 * runs as that author, and only for a caller that already has the
 * author's privileges: AuthorGateEnter checks that, switches the user id
 * to the author in a security-restricted operation (as PostgreSQL does
 * for index expressions and REFRESH MATERIALIZED VIEW), and pins
 * search_path (pg_temp last) and TimeZone in a GUC nest level that
 * AuthorGateLeave pops as on abort, so a set_config() inside the text
 * never outlives it.
 *
 * Run actions (run, schedule, unschedule, cancel, reconcile with write)
 * all go through CheckRunPermission: the planner, identified by OID, or
 * a role with its privileges; for a dropped planner, superusers only.
 * A run, group or standing check the caller cannot see (CatalogRowVisible)
 * does not exist for them: one "does not exist" error each, the same as
 * for an unknown id.  The rows a run kept (doc/undo.md) are read only by
 * a caller who could read every one of them in the target
 * (CheckKeptRowsReadable).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/syscache.h"

#include "backfill.h"

/*
 * RoleNameOrNull
 *		The name of role "roleid", NULL when it no longer exists.
 */
static char *
RoleNameOrNull(Oid roleid)
{
	return GetUserNameFromId(roleid, true);
}

/*
 * CheckAuthor
 *		42501 unless the current user has the privileges of "author", the
 *		role that registered definition "version" of "target".  Text of a
 *		dropped author can run for nobody.
 */
void
CheckAuthor(Oid author, Oid target, int32 version)
{
	char	   *name = RoleNameOrNull(author);
	char	   *relname;

	/* a dropped table is named by its OID */
	if (get_rel_name(target) == NULL)
		relname = psprintf("%u", target);
	else
		relname = QualifiedRelName(target);
	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("definition version %d of table %s was registered by a role that no longer exists",
						version, relname),
				 errdetail("Its source, measure, ledger and horizon run only as their author, role OID %u.",
						   author),
				 errhint("Read it in backfill.definitions; to adopt it, call backfill.register again as yourself.")));
	if (!has_privs_of_role(GetUserId(), author))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("definition version %d of table %s was registered by role \"%s\"",
						version, relname, name),
				 errdetail("Its source, measure, ledger and horizon run only as role \"%s\", for a role with its privileges.",
						   name),
				 errhint("Read it in backfill.definitions; to adopt it, call backfill.register again as yourself.")));
}

/*
 * AuthorGateEnter
 *		Check the caller against "author" (CheckAuthor), then run as the
 *		author in a security-restricted operation with search_path
 *		(pg_temp forced last) and TimeZone pinned, until AuthorGateLeave.
 *		On error, the (sub)transaction abort restores both; callers that
 *		catch errors without aborting call AuthorGateAbort.
 */
void
AuthorGateEnter(AuthorGate *gate, Oid author, Oid target, int32 version,
				const char *search_path, const char *timezone)
{
	char	   *path;

	CheckAuthor(author, target, version);
	GetUserIdAndSecContext(&gate->save_userid, &gate->save_sec_context);
	gate->nest = NewGUCNestLevel();
	if (search_path == NULL || search_path[0] == '\0')
		path = pstrdup("pg_temp");
	else
		path = psprintf("%s, pg_temp", search_path);
	(void) set_config_option("search_path", path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (timezone != NULL)
		(void) set_config_option("TimeZone", timezone, PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
								 false);
	SetUserIdAndSecContext(author,
						   gate->save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	gate->active = true;
}

/*
 * AuthorGateLeave
 *		Back to the caller: settings popped as on abort (a plain SET done by
 *		the user text does not survive), user id restored.
 */
void
AuthorGateLeave(AuthorGate *gate)
{
	if (!gate->active)
		return;
	SetUserIdAndSecContext(gate->save_userid, gate->save_sec_context);
	AtEOXact_GUC(false, gate->nest);
	gate->active = false;
}

/*
 * AuthorGateAbort
 *		Restore the user id after an error caught inside the gate; the
 *		settings are popped by the abort of the (sub)transaction.
 */
void
AuthorGateAbort(AuthorGate *gate)
{
	if (!gate->active)
		return;
	SetUserIdAndSecContext(gate->save_userid, gate->save_sec_context);
	gate->active = false;
}

/*
 * CheckRunPermission
 *		The one permission rule of every action on a run: the caller must
 *		have the privileges of the planner (by OID; a re-created role of the
 *		same name is another role); when the planner was dropped, only a
 *		superuser may act.  42501 otherwise.
 */
void
CheckRunPermission(int64 run_id, Oid planner, const char *planner_name,
				   const char *action)
{
	bool		exists = OidIsValid(planner) &&
		SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(planner));
	bool		allowed = exists ? has_privs_of_role(GetUserId(), planner) :
		superuser();

	if (!allowed)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for run %lld", (long long) run_id),
				 exists ?
				 errdetail("Run %lld was planned by role \"%s\"; only that role, or a role with its privileges, may %s it.",
						   (long long) run_id, planner_name, action) :
				 errdetail("Run %lld was planned by role \"%s\", which no longer exists; only a superuser may %s it.",
						   (long long) run_id, planner_name, action)));
}

/*
 * HasRunPermission
 *		CheckRunPermission as a test, for callers that fall back to a
 *		read-only answer.
 */
bool
HasRunPermission(Oid planner)
{
	if (OidIsValid(planner) &&
		SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(planner)))
		return has_privs_of_role(GetUserId(), planner);
	return superuser();
}

/*
 * CatalogRowVisible
 *		The visibility rule of runs, groups and standing checks: the caller
 *		sees the row when it may SELECT its target (as row-level security
 *		shows it in backfill.runs and backfill.checks); for a dropped table,
 *		when it passes HasRunPermission on the row's creator.
 */
bool
CatalogRowVisible(Oid target, Oid creator)
{
	if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(target)))
		return pg_class_aclcheck(target, GetUserId(), ACL_SELECT) == ACLCHECK_OK;
	return HasRunPermission(creator);
}

/*
 * CheckRunVisible
 *		A run the caller cannot see (CatalogRowVisible) does not exist for
 *		them: 42704 exactly as for an unknown run, the planner never
 *		revealed.
 */
void
CheckRunVisible(int64 run_id, Oid target, Oid planner)
{
	if (!CatalogRowVisible(target, planner))
		RaiseRunDoesNotExist(run_id);
}

/*
 * RaiseRunDoesNotExist
 *		The one error of an unknown run and of a run the caller cannot see
 *		(42704), so that the two cannot be told apart.
 */
void
RaiseRunDoesNotExist(int64 run_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("run %lld does not exist", (long long) run_id),
			 errhint("The runs you may see are listed in backfill.runs (the unfinished ones in backfill.progress).")));
}

/*
 * RaiseGroupDoesNotExist
 *		The one error of an unknown group and of a group none of whose runs
 *		the caller can see (42704).
 */
void
RaiseGroupDoesNotExist(int64 group_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("group %lld does not exist", (long long) group_id),
			 errhint("Groups are listed in backfill.group_progress; plan one with backfill.plan(..., cascade => true).")));
}

/*
 * RaiseCheckDoesNotExist
 *		The one error of an unknown standing check and of one the caller
 *		cannot see (42704): neither its creator nor its table is named.
 */
void
RaiseCheckDoesNotExist(int64 check_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("check %lld does not exist", (long long) check_id),
			 errhint("The standing checks you may see are listed in backfill.checks.")));
}

/*
 * CheckKeptRowsReadable
 *		The read rule of the archive (doc/undo.md, doc/security.md): the
 *		rows a run kept are shown (diff) or put back (revert) only for a
 *		caller who may SELECT every column of the target, and, since the
 *		archive is not filtered by the target's row-level security
 *		policies, only when no policy applies to the caller (RLS disabled,
 *		the table owner, or BYPASSRLS).  42501 otherwise; the target must be
 *		a table (CheckTargetKind), and stays locked for the transaction.
 */
void
CheckKeptRowsReadable(Oid target)
{
	Oid			userid = GetUserId();

	/*
	 * Locked first, so that it stays what it is checked to be until the
	 * transaction ends (a table cannot become a view under the lock).
	 */
	LockRelationOid(target, AccessShareLock);
	CheckTargetKind(target);
	if (pg_class_aclcheck(target, userid, ACL_SELECT) != ACLCHECK_OK &&
		pg_attribute_aclcheck_all(target, userid, ACL_SELECT,
								  ACLMASK_ALL) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for the kept rows of table %s",
						QualifiedRelName(target)),
				 errdetail("Reading what a run replaced needs SELECT on every column of the table; role \"%s\" lacks it.",
						   GetUserNameFromId(userid, false))));
	if (check_enable_rls(target, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("row-level security is enabled for table %s",
						QualifiedRelName(target)),
				 errdetail("The kept rows are not filtered by the table's policies, so only a role that bypasses them may read them."),
				 errhint("Ask the table owner or a role with BYPASSRLS.")));
}
