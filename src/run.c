/*-------------------------------------------------------------------------
 *
 * run.c
 *	  STUB: to be implemented.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_register);
Datum
backfill_register(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_register")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_unregister);
Datum
backfill_unregister(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_unregister")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_plan);
Datum
backfill_plan(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_plan")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_run);
Datum
backfill_run(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_run")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_backfill);
Datum
backfill_backfill(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_backfill")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_cancel);
Datum
backfill_cancel(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_cancel")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_preview);
Datum
backfill_preview(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_preview")));
	PG_RETURN_VOID();
}

