/*-------------------------------------------------------------------------
 *
 * reconcile.c
 *	  STUB: to be implemented.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_reconcile);
Datum
backfill_reconcile(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_reconcile")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_check);
Datum
backfill_check(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_check")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_schedule_check);
Datum
backfill_schedule_check(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_schedule_check")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_unschedule_check);
Datum
backfill_unschedule_check(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_unschedule_check")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_run_check);
Datum
backfill_run_check(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_run_check")));
	PG_RETURN_VOID();
}

