/*-------------------------------------------------------------------------
 *
 * replace.c
 *	  STUB: to be implemented.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "backfill.h"

/* STUB bodies so that the library links; replace.c owner replaces them. */
void
ReplaceRange(Oid target, const char *time_column,
			 TimestampTz lo, TimestampTz hi,
			 const char *source, const char *strategy,
			 const char *measure, ReplaceResult *result)
{
	elog(ERROR, "ReplaceRange not implemented yet");
}

int64
ClearRange(Oid target, const char *time_column,
		   TimestampTz lo, TimestampTz hi)
{
	elog(ERROR, "ClearRange not implemented yet");
	return 0;
}

const char *
CheckStrategyName(const char *strategy)
{
	elog(ERROR, "CheckStrategyName not implemented yet");
	return NULL;
}

PG_FUNCTION_INFO_V1(backfill_replace_range);
Datum
backfill_replace_range(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_replace_range")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_in_range);
Datum
backfill_in_range(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_in_range")));
	PG_RETURN_VOID();
}

