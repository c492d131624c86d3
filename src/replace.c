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

