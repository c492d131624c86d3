/*-------------------------------------------------------------------------
 *
 * run.c
 *	  Runs: load a run and check its caller, execute it one chunk per
 *	  transaction (run, backfill), and cancel it.  Targets are in
 *	  targets.c, planning in plan.c, the chunk engine in chunk.c.
 *
 * A run is a planned backfill of [range_start, range_end) of one target,
 * split into chunks at plan time.  backfill.run is a C procedure with a
 * non-atomic SPI connection: every chunk is executed inside an internal
 * subtransaction of its own transaction, and the chunk's data, status and
 * figures are committed together.  When the chunk fails, the
 * subtransaction is rolled back and the failure (with the error's
 * SQLSTATE, message, detail and hint) is recorded and committed instead.
 *
 * While a call executes a run it holds a session-level lock
 * (BACKFILL_LOCK_CLASS_RUN, run_id; BackfillLockTag, a key no SQL caller
 * can take): a second call on the same run sees
 * the lock and returns at once, and a crash can never leave a run looking
 * busy, because the lock dies with its backend.
 *
 * Catalog tables are read and written only through CatalogExec, as the
 * extension owner; user text (sources, measures, ledgers, horizons) runs
 * only as the author of the run's pinned definition version (identity.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_run);
PG_FUNCTION_INFO_V1(backfill_backfill);
PG_FUNCTION_INFO_V1(backfill_cancel);

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

/* ----------------------------------------------------------------
 *		run: loading, identity, locks, timeouts
 * ----------------------------------------------------------------
 */

/*
 * LoadRun
 *		Read a run and everything of its pinned definition version (text,
 *		settings, author) into the current memory context; whether the
 *		target is still registered, and its pg_cron job.  Unknown or
 *		invisible run (CheckRunVisible): 42704.  The one loader of a run,
 *		for run, cancel, schedule and unschedule.  Caller is connected to
 *		SPI.
 */
RunInfo *
LoadRun(int64 run_id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	RunInfo    *run;
	bool		isnull;

	values[0] = Int64GetDatum(run_id);
	CatalogExec("SELECT r.target::pg_catalog.oid, r.target_name, r.status,"
				" r.probe, r.backwards, r.clear_no_source, r.definition_version,"
				" r.timezone, r.search_path, r.created_by::pg_catalog.text,"
				" r.job_id IS NOT NULL, r.quiet_hours,"
				" t.target IS NOT NULL, d.time_column::pg_catalog.text, d.measure,"
				" d.ledger, d.tolerance, d.ledger_gate, d.strategy, d.source,"
				" r.created_by_oid, d.author, r.job_id"
				" FROM backfill.runs r"
				" LEFT JOIN backfill.targets t"
				"  ON t.target OPERATOR(pg_catalog.=) r.target"
				" LEFT JOIN backfill.definitions d"
				"  ON d.target OPERATOR(pg_catalog.=) r.target"
				"  AND d.version OPERATOR(pg_catalog.=) r.definition_version"
				" WHERE r.run_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		RaiseRunDoesNotExist(run_id);

	run = palloc0(sizeof(RunInfo));
	run->run_id = run_id;
	run->target = SpiGetOid(0, 1, &isnull);
	run->target_name = SpiGetText(0, 2);
	run->status = SpiGetText(0, 3);
	run->probe = SpiGetBool(0, 4, &isnull);
	run->backwards = SpiGetBool(0, 5, &isnull);
	run->clear_no_source = SpiGetBool(0, 6, &isnull);
	run->definition_version = SpiGetInt32(0, 7, &isnull);
	run->timezone = SpiGetText(0, 8);
	run->search_path = SpiGetText(0, 9);
	run->created_by = SpiGetText(0, 10);
	run->scheduled = SpiGetBool(0, 11, &isnull);
	run->quiet_hours = SpiGetText(0, 12);
	run->registered = SpiGetBool(0, 13, &isnull);
	run->time_column = SpiGetText(0, 14);
	run->measure = SpiGetText(0, 15);
	run->ledger = SpiGetText(0, 16);
	run->tolerance = SpiGetDatumCopy(0, 17, &isnull);
	run->ledger_gate = SpiGetBool(0, 18, &isnull);
	{
		char	   *strategy = SpiGetText(0, 19);

		/* no definition row: the run cannot execute (ExecuteRun says so) */
		run->strategy = strategy ? ParseStrategy(strategy) : STRATEGY_AUTO;
	}
	run->source = SpiGetText(0, 20);
	run->created_by_oid = SpiGetOid(0, 21, &isnull);
	run->author = SpiGetOid(0, 22, &isnull);
	run->job_id = run->scheduled ? SpiGetInt64(0, 23, &isnull) : 0;
	SPI_freetuptable(SPI_tuptable);
	CheckRunVisible(run_id, run->target, run->created_by_oid);
	return run;
}

/*
 * CheckRunIdentity
 *		The caller must pass CheckRunPermission (the planner by OID, or a
 *		role with its privileges; superusers for a dropped planner).  With check_target, the caller must
 *		also be allowed to rewrite the target, which must still exist; a
 *		cancel does not touch the target and skips that part.
 */
void
CheckRunIdentity(RunInfo *run, const char *action, bool check_target)
{
	CheckRunPermission(run->run_id, run->created_by_oid, run->created_by,
					   action);
	if (!check_target)
		return;
	if (get_rel_name(run->target) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the table of run %lld no longer exists",
						(long long) run->run_id),
				 errdetail("The run was planned for table %s.", run->target_name),
				 errhint("Cancel the run with backfill.cancel(%lld).",
						 (long long) run->run_id)));
	CheckTargetPrivileges(run->target);
}

/*
 * RunHolderPid
 *		The backend holding the session lock of a run, 0 if none is found.
 *		Caller is connected to SPI.
 */
static int
RunHolderPid(int64 run_id)
{
	Oid			argtypes[4] = {OIDOID, OIDOID, OIDOID, INT2OID};
	Datum		values[4];
	bool		isnull;
	int			pid = 0;

	values[0] = ObjectIdGetDatum(MyDatabaseId);
	values[1] = ObjectIdGetDatum((Oid) BACKFILL_LOCK_CLASS_RUN);
	values[2] = ObjectIdGetDatum((Oid) (uint32) run_id);
	values[3] = Int16GetDatum((int16) BACKFILL_LOCK_SUBID);
	SpiExecPinned("SELECT pid FROM pg_catalog.pg_locks"
				  " WHERE locktype OPERATOR(pg_catalog.=) 'advisory'"
				  " AND database OPERATOR(pg_catalog.=) $1"
				  " AND classid OPERATOR(pg_catalog.=) $2"
				  " AND objid OPERATOR(pg_catalog.=) $3"
				  " AND objsubid OPERATOR(pg_catalog.=) $4 AND granted"
				  " AND pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid()",
				  4, argtypes, values, NULL, true, 1, SPI_OK_SELECT);
	if (SPI_processed > 0)
		pid = SpiGetInt32(0, 1, &isnull);
	SPI_freetuptable(SPI_tuptable);
	return pid;
}

/*
 * RunLoop
 *		Execute the run's chunks, one transaction each, until none is left,
 *		max_chunks (< 0: no limit) have been executed, the probe chunk has
 *		run, a chunk was deferred, or a chunk failed (then an error).
 *		Caller holds the run's session lock and a non-atomic SPI
 *		connection; cxt survives the commits.
 */
static void
RunLoop(RunInfo *run, int max_chunks, MemoryContext cxt)
{
	MemoryContext chunkcxt;
	int			executed = 0;
	bool		probe_pending;
	const char *via;
	char	   *user;

	MemoryContextSwitchTo(cxt);
	chunkcxt = AllocSetContextCreate(cxt, "backfill chunk",
									 ALLOCSET_DEFAULT_SIZES);
	via = ScheduleInCronWorker() ? "pg_cron" : "session";
	user = CurrentUserName();
	probe_pending = run->probe && !RunHasDoneChunk(run->run_id);

	for (;;)
	{
		ChunkInfo	chunk;
		ChunkReport report;
		char	   *run_status;
		const char *final_status;
		bool		found;

		CHECK_FOR_INTERRUPTS();
		MemoryContextSwitchTo(cxt);
		MemoryContextReset(chunkcxt);
		MemoryContextSwitchTo(chunkcxt);

		if (max_chunks >= 0 && executed >= max_chunks)
			break;

		/* an inner connection, so that SPI memory goes with the chunk */
		SpiConnect();
		found = NextChunk(run, &chunk, &run_status);

		/*
		 * SPI_finish frees SPI's procedure context, where every SPI call
		 * leaves CurrentMemoryContext: what is read after it (the run
		 * status, the chunk's report and ErrorData) lives in the chunk's
		 * context instead.
		 */
		run_status = MemoryContextStrdup(chunkcxt, run_status);
		if (strcmp(run_status, "cancelled") == 0 ||
			strcmp(run_status, "done") == 0)
		{
			SpiFinish();
			ereport(NOTICE,
					(errmsg("run %lld is %s", (long long) run->run_id,
							run_status)));
			break;
		}
		if (!found)
		{
			/* nothing left: the run is done (unless a cancel raced us) */
			if (RemainingChunks(run))
			{
				SpiFinish();
				SPI_commit();
				continue;
			}
			final_status = SetRunStatus(run, "done");
			SpiFinish();
			SPI_commit();
			ereport(NOTICE,
					(errmsg("run %lld is %s", (long long) run->run_id,
							final_status)));
			break;
		}

		/* pipeline hook: a group's chunk waits for its upstream chunks */
		if (!PipelineChunkReady(run->run_id, chunk.start, chunk.end))
		{
			SPI_finish();
			SPI_commit();
			break;
		}

		/* pipeline hook: a group's chunk waits for its upstream chunks */
		if (!PipelineChunkReady(run->run_id, chunk.start, chunk.end))
		{
			SpiFinish();
			SPI_commit();
			break;
		}

		MemoryContextSwitchTo(chunkcxt);
		ExecuteChunk(run, &chunk, probe_pending, run_status, via, user,
					 &report);
		SpiFinish();
		CommitChunk(run, &chunk, &report);
		executed++;

		ReportChunk(run, &chunk, &report);
		if (report.outcome == CHUNK_FAILED)
			RaiseChunkFailure(run, &chunk, report.error);
		if (report.outcome == CHUNK_DEFERRED)
			break;
		if (strcmp(report.run_status, "done") == 0 ||
			strcmp(report.run_status, "cancelled") == 0)
		{
			ereport(NOTICE,
					(errmsg("run %lld is %s", (long long) run->run_id,
							report.run_status)));
			break;
		}
		if (probe_pending && !chunk.no_source)
		{
			ereport(NOTICE,
					(errmsg("run %lld is probed: chunk %d has run alone",
							(long long) run->run_id, chunk.chunk_no),
					 errhint("Inspect the chunk's rows and figures, then CALL backfill.run(%lld) to run the rest.",
							 (long long) run->run_id)));
			break;
		}
	}
	MemoryContextSwitchTo(cxt);
}

/*
 * ExecuteRun
 *		Check the caller, take the run's session lock (or report who holds
 *		it) and execute the run.  Caller has a non-atomic SPI connection.
 */
void
ExecuteRun(int64 run_id, int max_chunks)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	MemoryContext cxt;
	RunInfo    *run;
	LOCKTAG		tag;
	LockAcquireResult res;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "backfill run",
								ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);
	run = LoadRun(run_id);
	CheckRunIdentity(run, "run", true);

	if (strcmp(run->status, "done") == 0 || strcmp(run->status, "cancelled") == 0)
	{
		ereport(NOTICE,
				(errmsg("run %lld is already %s", (long long) run_id, run->status)));
		/* a job left behind (scheduled while it finished) stops here */
		(void) ScheduleRemoveJob(run_id);
		MemoryContextSwitchTo(oldcxt);
		MemoryContextDelete(cxt);
		return;
	}
	/*
	 * A failed run taken up again by hand loses the job its failing tick
	 * parked (schedule.c): it is scheduled again explicitly, if at all.
	 */
	if (strcmp(run->status, "failed") == 0 && run->scheduled &&
		!ScheduleCalledFromCron())
		(void) ScheduleRemoveJob(run_id);

	if (!run->registered || run->source == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table %s is not registered for backfill", run->target_name),
				 errhint("Register it again with backfill.register, or cancel the run with backfill.cancel(%lld).",
						 (long long) run_id)));

	/*
	 * A pg_cron tick for a run that has no job is a job left behind: by a
	 * DROP EXTENSION (which cannot remove pg_cron jobs) followed by a new
	 * install whose run ids start again, or by a job made by hand.  It
	 * must not execute whatever run now carries that id.
	 */
	if (!run->scheduled && ScheduleCalledFromCron())
	{
		ereport(NOTICE,
				(errmsg("run %lld is not scheduled; this pg_cron tick does nothing",
						(long long) run_id),
				 errhint("Schedule runs with backfill.schedule, and remove stale jobs with cron.unschedule.")));
		MemoryContextSwitchTo(oldcxt);
		MemoryContextDelete(cxt);
		return;
	}

	if (run->scheduled && ScheduleCalledFromCron() &&
		!ScheduleTickAllowed(run->quiet_hours, run->timezone,
							 GetCurrentTimestamp()))
	{
		ereport(NOTICE,
				(errmsg("run %lld is outside its quiet hours %s; nothing to do in this tick",
						(long long) run_id, run->quiet_hours)));
		MemoryContextSwitchTo(oldcxt);
		MemoryContextDelete(cxt);
		return;
	}

	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_RUN, (uint32) run_id);
	res = LockAcquire(&tag, ExclusiveLock, true, true);
	if (res == LOCKACQUIRE_NOT_AVAIL)
	{
		int			pid = RunHolderPid(run_id);

		if (pid != 0)
			ereport(NOTICE,
					(errmsg("run %lld is being executed by backend %d; nothing to do",
							(long long) run_id, pid),
					 errhint("backfill.progress shows its progress.")));
		else
			ereport(NOTICE,
					(errmsg("run %lld is being executed by another backend; nothing to do",
							(long long) run_id)));
		MemoryContextSwitchTo(oldcxt);
		MemoryContextDelete(cxt);
		return;
	}

	PG_TRY();
	{
		RunLoop(run, max_chunks, cxt);
	}
	PG_FINALLY();
	{
		LockRelease(&tag, ExclusiveLock, true);
	}
	PG_END_TRY();

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
}

/*
 * NoteTickPrivileges
 *		In a tick of the run's own pg_cron job, as the job's role (no one
 *		else can write the note): record in runs.last_error when that role
 *		can no longer write the run's target (the tick is then refused by
 *		the usual check, and pg_cron alone would keep the reason), or clear
 *		a previous note when it can again, so that backfill.progress shows
 *		why a scheduled run does not move.  Caller is connected to SPI and
 *		commits.
 */
static void
NoteTickPrivileges(int64 run_id)
{
	Oid			argtypes[2] = {INT8OID, TEXTOID};
	Datum		values[2];
	bool		isnull;
	Oid			target;
	char	   *why = NULL;

	/* only the tick of the run's own job, as the job's role, notes */
	if (!OidIsValid(get_extension_oid("pg_cron", true)))
		return;
	values[0] = Int64GetDatum(run_id);
	values[1] = CStringGetTextDatum(CurrentUserName());
	CatalogExec("SELECT r.target::pg_catalog.oid FROM backfill.runs r"
				" JOIN cron.job j ON j.jobid OPERATOR(pg_catalog.=) r.job_id"
				" WHERE r.run_id OPERATOR(pg_catalog.=) $1"
				" AND j.username::pg_catalog.text OPERATOR(pg_catalog.=) $2",
				2, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
	{
		SPI_freetuptable(SPI_tuptable);
		return;
	}
	target = SpiGetOid(0, 1, &isnull);
	SPI_freetuptable(SPI_tuptable);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(target)))
		why = psprintf("pg_cron tick refused: the table of run %lld no longer exists",
					   (long long) run_id);
	else if (pg_class_aclmask(target, GetUserId(), ACL_INSERT | ACL_DELETE,
							  ACLMASK_ALL) != (ACL_INSERT | ACL_DELETE))
		why = psprintf("pg_cron tick refused: role \"%s\" lacks INSERT or DELETE privilege on table %s",
					   CurrentUserName(), get_rel_name(target));

	values[1] = why ? CStringGetTextDatum(why) : (Datum) 0;
	CatalogExec("UPDATE backfill.runs SET last_error = $2"
				" WHERE run_id OPERATOR(pg_catalog.=) $1"
				" AND last_error IS DISTINCT FROM $2",
				2, argtypes, values, why ? NULL : " n", SPI_OK_UPDATE);
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
 * backfill_run
 *		CALL backfill.run(run_id, max_chunks): execute pending chunks, one
 *		transaction each.  Only as a top-level CALL.
 */
Datum
backfill_run(PG_FUNCTION_ARGS)
{
	int			max_chunks;

	RequireTopLevelCall(fcinfo, "backfill.run");
	RequireArg(fcinfo, 0, "run_id", NULL);
	max_chunks = MaxChunksArg(fcinfo, 1);

	SpiConnectNonatomic();
	if (ScheduleCalledFromCron())
	{
		/*
		 * Every tick sweeps the jobs of dropped roles and the parked jobs of
		 * finished runs (not its own: it is running), and notes refusals.
		 */
		(void) ScheduleSweepOrphanJobs(NULL);
		(void) ScheduleSweepFinishedJobs(NULL, PG_GETARG_INT64(0));
		NoteTickPrivileges(PG_GETARG_INT64(0));
		SPI_commit();
	}
	ExecuteRun(PG_GETARG_INT64(0), max_chunks);
	SpiFinish();
	PG_RETURN_VOID();
}

/*
 * backfill_backfill
 *		CALL backfill.backfill(target, range_start, range_end, chunk, note):
 *		plan without a probe, commit the plan, and run it to the end.
 */
Datum
backfill_backfill(PG_FUNCTION_ARGS)
{
	int64		run_id;

	RequireTopLevelCall(fcinfo, "backfill.backfill");
	RequireArg(fcinfo, 0, "target", NULL);

	SpiConnectNonatomic();
	run_id = PlanRun(PG_GETARG_OID(0),
					 PG_ARGISNULL(1) ? 0 : PG_GETARG_TIMESTAMPTZ(1), PG_ARGISNULL(1),
					 PG_ARGISNULL(2) ? 0 : PG_GETARG_TIMESTAMPTZ(2), PG_ARGISNULL(2),
					 PG_ARGISNULL(3) ? NULL : PG_GETARG_INTERVAL_P(3),
					 PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4)),
					 false, false, false, NULL);
	SPI_commit();
	ereport(NOTICE,
			(errmsg("planned run %lld", (long long) run_id)));
	ExecuteRun(run_id, -1);
	SpiFinish();
	PG_RETURN_VOID();
}

/*
 * backfill_cancel
 *		cancel(run_id) -> chunks cancelled.  Pending and failed chunks
 *		become cancelled (a chunk executing right now is skipped and
 *		finishes), the run becomes cancelled and its schedule is removed.
 */
Datum
backfill_cancel(PG_FUNCTION_ARGS)
{
	int64		run_id;
	RunInfo    *run;
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	int32		n;

	RequireArg(fcinfo, 0, "run_id", NULL);
	run_id = PG_GETARG_INT64(0);
	values[0] = Int64GetDatum(run_id);

	SpiConnect();
	run = LoadRun(run_id);
	CheckRunIdentity(run, "cancel", false);
	if (strcmp(run->status, "done") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run %lld is already done", (long long) run_id),
				 errdetail("A finished run cannot be cancelled; its history stays in backfill.chunks.")));
	if (strcmp(run->status, "cancelled") == 0)
	{
		ereport(NOTICE,
				(errmsg("run %lld is already cancelled", (long long) run_id)));
		SpiFinish();
		PG_RETURN_INT32(0);
	}

	/*
	 * One set-based statement, linear whatever the statistics say: the
	 * chunks to cancel are locked (skipping the one a run is executing)
	 * and each is updated through its own tuple id, one TID fetch per
	 * chunk, never a search of the run's chunks per chunk.
	 */
	CatalogExec("UPDATE backfill.chunks c SET status = 'cancelled'"
				" FROM (SELECT ctid AS tid FROM backfill.chunks"
				"  WHERE run_id OPERATOR(pg_catalog.=) $1"
				"  AND status OPERATOR(pg_catalog.=) ANY ('{pending,failed}'::pg_catalog.text[])"
				"  FOR UPDATE SKIP LOCKED) s"
				" WHERE c.ctid OPERATOR(pg_catalog.=) s.tid",
				1, argtypes, values, NULL, SPI_OK_UPDATE);
	n = (int32) SPI_processed;
	CatalogExec("UPDATE backfill.runs SET status = 'cancelled',"
				" finished_at = pg_catalog.clock_timestamp()"
				" WHERE run_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_UPDATE);
	(void) ScheduleRemoveJob(run_id);
	SpiFinish();
	PG_RETURN_INT32(n);
}
