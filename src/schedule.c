/*-------------------------------------------------------------------------
 *
 * schedule.c
 *	  STUB: to be implemented.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "backfill.h"

/* STUB bodies so that the library links; schedule.c owner replaces them. */
bool
ScheduleTickAllowed(const char *quiet_hours, const char *timezone,
					TimestampTz now)
{
	return true;
}

bool
ScheduleRemoveJob(int64 run_id)
{
	return false;
}

bool
ScheduleCalledFromCron(void)
{
	return false;
}

PG_FUNCTION_INFO_V1(backfill_schedule);
Datum
backfill_schedule(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_schedule")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_unschedule);
Datum
backfill_unschedule(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_unschedule")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_lock_target);
Datum
backfill_lock_target(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_lock_target")));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(backfill_in_quiet_hours);
Datum
backfill_in_quiet_hours(PG_FUNCTION_ARGS)
{
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("%s is not implemented yet", "backfill_in_quiet_hours")));
	PG_RETURN_VOID();
}

