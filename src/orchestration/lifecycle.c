/*-------------------------------------------------------------------------
 *
 * lifecycle.c
 *	  A target's registration across the features, the one file that
 *	  knows them all: register (the checks a feature adds between
 *	  CheckRegistration and WriteRegistration, registry.c: a watched
 *	  target's chunk) and unregister (every feature's state of the target
 *	  forgotten: dependencies, watches, refresh jobs, changed regions).
 *	  It sits at the top of orchestration, so that registry.c sits low,
 *	  where the features can call it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "backfill.h"

/*
 * RegisterTarget
 *		See backfill.h: register -> the current definition version.
 *
 * Anyone who may rewrite the target (CheckTargetPrivileges) may register
 * it, and register it again, also while other roles' runs are unfinished:
 * those runs keep their pinned version.  A new definition version, whose
 * author is the caller (by OID), is created when any setting, the source,
 * the label or the author differs from the latest version's (versions
 * continue after an unregister).  Its text runs only as its author
 * (identity.c).  Caller is connected to SPI.
 */
int32
RegisterTarget(const Registration *reg)
{
	ValidRegistration *valid = CheckRegistration(reg);

	/* a watched target's chunk bounds the log its sources' writes make */
	CheckWatchedChunk(reg->target, reg->chunk, false);
	return WriteRegistration(reg, valid);
}

/*
 * UnregisterTarget
 *		See backfill.h: forget a target.  Refused (55006) while it has runs
 *		that are planned, probed or failed, and (2BP01) while targets
 *		depend on it unless cascade (dependencies.c); definitions, runs and
 *		chunks stay as history.  The caller must be allowed to rewrite the
 *		table; when the table has been dropped, its registration can be
 *		removed (by OID, e.g. unregister(16384)) by the role that
 *		registered its current version (identified by OID, as the author
 *		in backfill.definitions), a role with its privileges, or a
 *		superuser.  Caller is connected to SPI.
 */
void
UnregisterTarget(Oid target, bool cascade)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	char	   *unfinished;
	char	   *name;
	char	   *registrant;
	Oid			author;
	bool		isnull;
	bool		dropped;

	values[0] = ObjectIdGetDatum(target);
	dropped = (get_rel_name(target) == NULL);

	if (!dropped)
		CheckTargetPrivileges(target);

	TakeTargetPlanLock(target);

	CatalogExec("SELECT t.target_name, t.registered_by::pg_catalog.text, d.author"
				" FROM backfill.targets t LEFT JOIN backfill.definitions d"
				"  ON d.target OPERATOR(pg_catalog.=) t.target"
				"  AND d.version OPERATOR(pg_catalog.=) t.current_version"
				" WHERE t.target OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		if (dropped)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("relation with OID %u does not exist", target)));
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table %s is not registered for backfill",
						QualifiedRelName(target)),
				 errhint("Registered tables are listed in backfill.targets.")));
	}
	name = SpiGetText(0, 1);
	registrant = SpiGetText(0, 2);
	author = SpiGetOid(0, 3, &isnull);
	SPI_freetuptable(SPI_tuptable);

	/*
	 * The registration of a dropped table: the role that registered its
	 * current version, by OID (a role created again under the same name
	 * is another role), or a role with its privileges; a superuser when
	 * it is gone.
	 */
	if (dropped)
	{
		bool		exists = OidIsValid(author) &&
			SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(author));

		if (!(exists ? has_privs_of_role(GetUserId(), author) : superuser()))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to unregister dropped table %s", name),
					 exists ?
					 errdetail("Only the role that registered it (\"%s\"), a role with its privileges, or a superuser may.",
							   GetUserNameFromId(author, false)) :
					 errdetail("The role that registered it (role OID %u, registered as \"%s\") no longer exists; only a superuser may.",
							   author, registrant)));
	}

	CatalogExec("SELECT pg_catalog.string_agg(run_id::pg_catalog.text, ', ' ORDER BY run_id)"
				" FROM backfill.runs WHERE target OPERATOR(pg_catalog.=) $1"
				" AND status OPERATOR(pg_catalog.=) ANY ('{planned,probed,failed}'::pg_catalog.text[])",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	unfinished = SpiGetText(0, 1);
	if (unfinished != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("table %s has unfinished backfill runs", name),
				 errdetail("Unfinished runs: %s.", unfinished),
				 errhint("Finish them with CALL backfill.run(run_id) or cancel them with backfill.cancel(run_id).")));

	/* its dependencies (refused with dependents unless cascade) */
	PipelineForgetTarget(target, name, cascade);

	/*
	 * its watches (the triggers of sources nothing else watches go) and its
	 * logged changes, which mean nothing without its registration
	 */
	(void) WatchForgetTarget(target, InvalidOid);
	RefreshForgetTarget(target);
	InvalidateWatchCache();
	CatalogExec("DELETE FROM backfill.changed_regions WHERE target OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_DELETE);

	CatalogExec("DELETE FROM backfill.targets WHERE target OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_DELETE);
}
