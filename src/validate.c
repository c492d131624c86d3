/*-------------------------------------------------------------------------
 *
 * validate.c
 *	  STUB: to be implemented.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "backfill.h"

/* STUB bodies so that the library links; validate.c owner replaces them. */
SourceQuery *
ValidateSourceQuery(const char *sql, Oid target, const char *time_column)
{
	elog(ERROR, "ValidateSourceQuery not implemented yet");
	return NULL;
}

char *
ValidateMeasure(const char *measure, Oid target)
{
	elog(ERROR, "ValidateMeasure not implemented yet");
	return NULL;
}

char *
ValidateLedger(const char *ledger)
{
	elog(ERROR, "ValidateLedger not implemented yet");
	return NULL;
}

char *
ValidateHorizon(const char *horizon)
{
	elog(ERROR, "ValidateHorizon not implemented yet");
	return NULL;
}

Oid
TimeColumnType(Oid target, const char *time_column)
{
	elog(ERROR, "TimeColumnType not implemented yet");
	return InvalidOid;
}

void
CheckTargetPrivileges(Oid target)
{
	elog(ERROR, "CheckTargetPrivileges not implemented yet");
}

