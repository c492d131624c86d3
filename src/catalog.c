/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Writes to backfill's own catalog tables.
 *
 * Users hold no write privileges on backfill.targets, definitions, runs,
 * chunks or check_results.  The C code writes them as the extension owner,
 * for exactly one statement at a time, in a security-restricted context,
 * and records the real user as a parameter.  This is the pattern pg_cron
 * uses for its job table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "backfill.h"

/*
 * BackfillExtensionOwner
 *		The role that owns the backfill extension (and its catalog tables).
 */
Oid
BackfillExtensionOwner(void)
{
	Oid			extoid;
	Oid			owner = InvalidOid;
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	extoid = get_extension_oid("backfill", false);
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(extoid));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		owner = ((Form_pg_extension) GETSTRUCT(tup))->extowner;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (!OidIsValid(owner))
		elog(ERROR, "backfill: could not find the owner of extension \"backfill\"");
	return owner;
}

/*
 * CatalogExec
 *		Run one catalog statement as the extension owner.
 *
 * The caller must be connected to SPI.  The statement must reference only
 * schema-qualified objects.  User id and security context are restored on
 * error as well as on success.
 */
int
CatalogExec(const char *sql, int nargs, Oid *argtypes, Datum *values,
			const char *nulls, int expected)
{
	Oid			save_userid;
	int			save_sec_context;
	volatile int rc = 0;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(BackfillExtensionOwner(),
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	PG_TRY();
	{
		rc = SpiExec(sql, nargs, argtypes, values, nulls, false, 0, expected);
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_userid, save_sec_context);
	}
	PG_END_TRY();
	return rc;
}

/*
 * CurrentUserName
 *		The name of the role whose privileges are in effect now.
 */
char *
CurrentUserName(void)
{
	return GetUserNameFromId(GetUserId(), false);
}
