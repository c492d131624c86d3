/*-------------------------------------------------------------------------
 *
 * args.c
 *	  The checks of the arguments of SQL-callable functions: a NULL where
 *	  none is allowed (RequireArg), the max_chunks argument (MaxChunksArg),
 *	  the parallel argument (ParallelArg), and a procedure that must be a
 *	  top-level CALL (RequireTopLevelCall).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"

#include "backfill.h"

/*
 * RequireArg
 *		Raise 22004 "<name> must not be null" when argument argno of a
 *		SQL-callable function is NULL, with hint (may be NULL).
 */
void
RequireArg(FunctionCallInfo fcinfo, int argno, const char *name,
		   const char *hint)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name),
				 hint ? errhint("%s", hint) : 0));
}

/*
 * RangeArgs
 *		Check arguments argno and argno + 1 of a SQL-callable function as
 *		the range [range_start, range_end) (CheckRangeBounds: not NULL,
 *		finite, start before end).
 */
void
RangeArgs(FunctionCallInfo fcinfo, int argno)
{
	CheckRangeBounds(PG_ARGISNULL(argno) ? 0 : PG_GETARG_TIMESTAMPTZ(argno),
					 PG_ARGISNULL(argno),
					 PG_ARGISNULL(argno + 1) ? 0 : PG_GETARG_TIMESTAMPTZ(argno + 1),
					 PG_ARGISNULL(argno + 1));
}

/*
 * IsAtomicCall
 *		Whether a procedure was called in an atomic context (inside a
 *		transaction block, from a function, or by a procedure that was).
 */
static bool
IsAtomicCall(FunctionCallInfo fcinfo)
{
	if (fcinfo->context == NULL || !IsA(fcinfo->context, CallContext))
		return true;
	return ((CallContext *) fcinfo->context)->atomic;
}

/*
 * RequireTopLevelCall
 *		Refuse a procedure call that could not commit per chunk: it would
 *		either fail at its first commit or, worse, look like it worked.
 */
void
RequireTopLevelCall(FunctionCallInfo fcinfo, const char *name)
{
	if (IsAtomicCall(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
				 errmsg("%s must be called as a top-level CALL", name),
				 errdetail("It commits after every chunk, which is impossible inside a transaction block or a function."),
				 errhint("Call it outside a transaction block, and not from a function.")));
}

/*
 * MaxChunksArg
 *		The max_chunks argument of run and run_group: -1 (no limit) for
 *		NULL, else a positive number (22023 otherwise).
 */
int
MaxChunksArg(FunctionCallInfo fcinfo, int argno)
{
	int			max_chunks;

	if (PG_ARGISNULL(argno))
		return -1;
	max_chunks = PG_GETARG_INT32(argno);
	if (max_chunks <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_chunks must be positive"),
				 errhint("Leave it NULL to run every pending chunk.")));
	return max_chunks;
}

/*
 * ParallelArg
 *		The parallel argument argno of run, backfill, run_group, schedule and
 *		schedule_group: 1 when the function has no such argument (a 0.1.0
 *		declaration), 22004 for NULL, 22023 below 1 or above the cap, the
 *		smaller of backfill.max_parallel and max_worker_processes.  A pg_cron
 *		tick ("clamp") whose job asks for more than a lowered cap runs with
 *		the cap instead (NOTICE), so that the job keeps working.
 */
int
ParallelArg(FunctionCallInfo fcinfo, int argno, bool clamp)
{
	int			parallel;
	int			cap = Min(backfill_max_parallel, max_worker_processes);

	if (PG_NARGS() <= argno)
		return 1;
	RequireArg(fcinfo, argno, "parallel",
			   "Leave it out to execute one chunk at a time.");
	parallel = PG_GETARG_INT32(argno);
	if (parallel < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parallel must be at least 1"),
				 errhint("parallel => 1 executes one chunk at a time in this session; parallel => N executes up to N chunks at a time in background workers.")));
	if (parallel > cap && clamp)
	{
		ereport(NOTICE,
				(errmsg("parallel %d is above the limit of %d; this tick uses %d",
						parallel, cap, cap)));
		return cap;
	}
	if (parallel > cap)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parallel %d is above the limit of %d", parallel, cap),
				 errdetail("backfill.max_parallel is %d and max_worker_processes is %d.",
						   backfill_max_parallel, max_worker_processes),
				 errhint("Use a smaller parallel, or ask a superuser to raise backfill.max_parallel (and max_worker_processes, which takes a restart).")));
	return parallel;
}
