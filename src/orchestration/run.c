/*-------------------------------------------------------------------------
 *
 * run.c
 *	  Runs: execute a run one chunk per transaction (ExecuteRun: run,
 *	  backfill), cancel it, and the same for the runs of a group
 *	  (run_group, cancel_group).  Planning is in plan.c, the chunk engine
 *	  in engine/chunk.c.
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
#include "lib/stringinfo.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "backfill.h"

/* Set while a refresh job's tick executes the runs it planned. */
static RunFailureHook refresh_failure_hook = NULL;
static void *refresh_failure_arg = NULL;

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
 * ReportRunStatus
 *		The NOTICE of a run's status at the end of a call ("run 5
 *		daily_revenue is done").
 */
static void
ReportRunStatus(RunInfo *run, RunStatus status)
{
	ereport(NOTICE,
			(errmsg("run %lld %s is %s", (long long) run->run_id,
					run->relname, RunStatusName(status))));
	if (status == RUN_DONE)
		ReportRevertDefinition(run);
}

/*
 * FailRun
 *		After a chunk's failure was committed: report the run's tally; in a
 *		refresh tick (RunInRefreshTick), let the refresh record the
 *		failure; then raise it (RaiseChunkFailure).
 */
static void
FailRun(RunInfo *run, ChunkInfo *chunk, ChunkReport *report, RunTally *tally)
{
	ReportTally(run, tally);
	if (refresh_failure_hook != NULL)
		refresh_failure_hook(refresh_failure_arg, run->run_id, run->target,
							 chunk->chunk_no, chunk->start, chunk->end,
							 report->error->message);
	RaiseChunkFailure(run, chunk, report);
}

/*
 * RunLoop
 *		Execute the run's chunks, one transaction each, until none is left,
 *		max_chunks (< 0: no limit) have been executed, the probe chunk has
 *		run, a chunk was deferred, or a chunk failed (then an error).  The
 *		call ends with its summary (ReportTally), before the error of a
 *		failure.  Caller holds the run's session lock and a non-atomic SPI
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
	RunTally	tally;

	MemoryContextSwitchTo(cxt);
	TallyStart(&tally);
	chunkcxt = AllocSetContextCreate(cxt, "backfill chunk",
									 ALLOCSET_DEFAULT_SIZES);
	via = ScheduleInCronWorker() ? "pg_cron" : "session";
	user = CurrentUserName();
	probe_pending = run->probe && !RunHasDoneChunk(run->run_id);

	for (;;)
	{
		ChunkInfo	chunk;
		ChunkReport report;
		RunStatus	run_status;
		RunStatus	final_status;
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

		if (run_status == RUN_CANCELLED || run_status == RUN_DONE)
		{
			SpiFinish();
			ReportRunStatus(run, run_status);
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
			final_status = SetRunStatus(run, RUN_DONE);
			SpiFinish();
			SPI_commit();
			ReportRunStatus(run, final_status);
			break;
		}

		/*
		 * A chunk of a group waits for its upstream chunks (group.c).  A run
		 * outside a group has none: its group_id is set when it is planned,
		 * in the plan's transaction (cascade.c), never later, and the check
		 * finds nothing for it, so it is not asked (a statement per chunk).
		 */
		if (run->group_id != 0 &&
			!PipelineChunkReady(run->run_id, run->relname, chunk.start,
								chunk.end))
		{
			SpiFinish();
			SPI_commit();
			break;
		}

		/*
		 * SPI_finish frees SPI's procedure context, where every SPI call
		 * leaves CurrentMemoryContext: what is read after it (the chunk's
		 * report and ErrorData) lives in the chunk's context instead.
		 */
		MemoryContextSwitchTo(chunkcxt);
		ExecuteChunk(run, &chunk, probe_pending, run_status, via, user,
					 &report);
		SpiFinish();
		CommitChunk(run, &chunk, &report);
		executed++;
		TallyChunk(&tally, &chunk, &report);

		ReportChunk(run, &chunk, &report);
		if (report.outcome == OUTCOME_FAILED)
			FailRun(run, &chunk, &report, &tally);
		if (report.outcome == OUTCOME_DEFERRED)
			break;
		if (report.run_status == RUN_DONE ||
			report.run_status == RUN_CANCELLED)
		{
			ReportRunStatus(run, report.run_status);
			break;
		}
		if (probe_pending && !chunk.no_source)
		{
			if (run->group_id != 0)
				ereport(NOTICE,
						(errmsg("run %lld %s is probed: chunk %d has run alone",
								(long long) run->run_id, run->relname,
								chunk.chunk_no),
						 errhint("Inspect the chunk's rows and figures, then CALL backfill.run_group(%lld) to run the rest of the group.",
								 (long long) run->group_id)));
			else
				ereport(NOTICE,
						(errmsg("run %lld %s is probed: chunk %d has run alone",
								(long long) run->run_id, run->relname,
								chunk.chunk_no),
						 errhint("Inspect the chunk's rows and figures, then CALL backfill.run(%lld) to run the rest.",
								 (long long) run->run_id)));
			break;
		}
	}
	MemoryContextSwitchTo(cxt);
	ReportTally(run, &tally);
}

/*
 * RunInRefreshTick
 *		See backfill.h: the refresh tick (refresh.c) executes runs it has
 *		just planned, which have no pg_cron job of their own; ExecuteRun
 *		must not take them for the runs of a job left behind, and has hook
 *		record a chunk's failure on the refresh before it raises it
 *		(FailRun).
 */
void
RunInRefreshTick(RunFailureHook hook, void *arg)
{
	refresh_failure_hook = hook;
	refresh_failure_arg = arg;
}

/*
 * BeginRun
 *		Check the caller and the run, and take the run's session lock (or
 *		report who holds it): the run, loaded in the current memory context,
 *		ready to execute; NULL (after a NOTICE saying why) when this call
 *		has nothing to do with it.  Caller has a non-atomic SPI connection,
 *		and releases the lock (tag) when it is done.
 */
static RunInfo *
BeginRun(int64 run_id, LOCKTAG *tag)
{
	RunInfo    *run;
	LockAcquireResult res;

	run = LoadRun(run_id);
	CheckRunIdentity(run, "run", true);

	if (run->status == RUN_DONE || run->status == RUN_CANCELLED)
	{
		ereport(NOTICE,
				(errmsg("run %lld %s is already %s", (long long) run_id,
						run->relname, RunStatusName(run->status))));
		/* a job left behind (scheduled while it finished) stops here */
		(void) ScheduleRemoveJob(run_id, true);
		return NULL;
	}

	/*
	 * A failed run taken up again by hand loses the job its failing tick
	 * parked (cron.c): it is scheduled again explicitly, if at all.  A
	 * tick never takes it up: it parks its job (pg_cron in another
	 * database: the failing tick could not, cron.c) and does nothing.
	 */
	if (run->status == RUN_FAILED && run->scheduled &&
		!ScheduleCalledFromCron())
		(void) ScheduleRemoveJob(run_id, false);
	if (run->status == RUN_FAILED && ScheduleCalledFromCron() &&
		refresh_failure_hook == NULL)
	{
		ereport(NOTICE,
				(errmsg("run %lld %s failed; this pg_cron tick does nothing",
						(long long) run_id, run->relname),
				 errhint("Look at the failed chunk in backfill.chunks; CALL backfill.run(%lld) retries it.",
						 (long long) run_id)));
		(void) ScheduleRemoveJob(run_id, true);
		return NULL;
	}

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
	if (!run->scheduled && ScheduleCalledFromCron() &&
		refresh_failure_hook == NULL)
	{
		ereport(NOTICE,
				(errmsg("run %lld %s is not scheduled; this pg_cron tick does nothing",
						(long long) run_id, run->relname),
				 errhint("Schedule runs with backfill.schedule, and remove stale jobs with cron.unschedule.")));
		/* pg_cron elsewhere: a job forgotten or left behind parks itself */
		SpiConnect();
		CronParkLeftover(CRON_KIND_RUN, run_id, 0);
		SpiFinish();
		return NULL;
	}

	if (run->scheduled && ScheduleCalledFromCron() &&
		!ScheduleTickAllowed(run->quiet_hours, run->timezone,
							 GetCurrentTimestamp()))
	{
		ereport(NOTICE,
				(errmsg("run %lld %s is outside its quiet hours %s; nothing to do in this tick",
						(long long) run_id, run->relname, run->quiet_hours)));
		return NULL;
	}

	BackfillLockTag(tag, BACKFILL_LOCK_CLASS_RUN, (uint32) run_id);
	res = LockAcquire(tag, ExclusiveLock, true, true);
	if (res == LOCKACQUIRE_NOT_AVAIL)
	{
		int			pid = RunHolderPid(run_id);

		if (pid != 0)
			ereport(NOTICE,
					(errmsg("run %lld %s is being executed by backend %d; nothing to do",
							(long long) run_id, run->relname, pid),
					 errhint("backfill.progress shows its progress.")));
		else
			ereport(NOTICE,
					(errmsg("run %lld %s is being executed by another backend; nothing to do",
							(long long) run_id, run->relname)));
		return NULL;
	}
	return run;
}

/*
 * ExecuteRun
 *		Check the caller, take the run's session lock (or report who holds
 *		it) and execute the run: one chunk at a time in this session, or,
 *		with parallel > 1, in background workers (parallel.c).  Caller has
 *		a non-atomic SPI connection.
 */
void
ExecuteRun(int64 run_id, int max_chunks, int parallel)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	MemoryContext cxt;
	RunInfo    *run;
	LOCKTAG		tag;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "backfill run",
								ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);
	run = BeginRun(run_id, &tag);
	if (run == NULL)
	{
		MemoryContextSwitchTo(oldcxt);
		MemoryContextDelete(cxt);
		return;
	}

	PG_TRY();
	{
		if (parallel > 1 && ParallelUsable(run))
			ParallelRunLoop(run, max_chunks, parallel, cxt);
		else
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
 * BackfillRange
 *		See backfill.h: CALL backfill.backfill, plan (PlanRun, the request's
 *		probe and backwards as given), commit the plan, and run it to the
 *		end; returns the run id.  Caller has a non-atomic SPI connection.
 */
int64
BackfillRange(const PlanRequest *req, int parallel)
{
	int64		run_id;
	char	   *relname;

	run_id = PlanRun(req);
	relname = get_rel_name(req->target);
	SPI_commit();
	ereport(NOTICE,
			(errmsg("run %lld %s planned", (long long) run_id,
					relname ? quote_identifier(relname) : "?")));
	ExecuteRun(run_id, -1, parallel);
	return run_id;
}

/*
 * CancelRun
 *		See backfill.h: the chunks cancelled.  The run becomes cancelled
 *		first, so its row stays locked until this transaction ends: a
 *		leader whose worker is terminated next waits for that before it
 *		reads the run (ReadRunStatusSettled), and leaves the chunk to this
 *		cancel instead of recording it as failed.  Then the background
 *		workers of parallel chunks are terminated (their chunks roll back);
 *		then pending and failed chunks become cancelled (a chunk a session
 *		is executing right now is skipped and finishes), and the run's
 *		schedule is removed.
 *		Caller is connected to SPI.
 */
int32
CancelRun(int64 run_id)
{
	RunInfo    *run;
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	int32		n;

	values[0] = Int64GetDatum(run_id);
	run = LoadRun(run_id);
	CheckRunIdentity(run, "cancel", false);
	if (run->status == RUN_DONE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run %lld is already done", (long long) run_id),
				 errdetail("A finished run cannot be cancelled; its history stays in backfill.chunks.")));
	if (run->status == RUN_CANCELLED)
	{
		ereport(NOTICE,
				(errmsg("run %lld is already cancelled", (long long) run_id)));
		return 0;
	}
	CatalogExec("UPDATE backfill.runs SET status = 'cancelled',"
				" finished_at = pg_catalog.clock_timestamp()"
				" WHERE run_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_UPDATE);
	(void) TerminateRunWorkers(run_id);

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
	(void) ScheduleRemoveJob(run_id, false);
	return n;
}

/*
 * RunState
 *		A run's status and the attempts of its chunks so far.  Caller is
 *		connected to SPI.
 */
static RunStatus
RunState(int64 run_id, int64 *attempts)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	bool		isnull;
	RunStatus	status;

	values[0] = Int64GetDatum(run_id);
	CatalogExec("SELECT r.status, (SELECT COALESCE(pg_catalog.sum(c.attempts), 0)::pg_catalog.int8"
				"  FROM backfill.chunks c WHERE c.run_id OPERATOR(pg_catalog.=) r.run_id)"
				" FROM backfill.runs r WHERE r.run_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	status = ParseRunStatus(SpiGetText(0, 1));
	*attempts = SpiGetInt64(0, 2, &isnull);
	SPI_freetuptable(SPI_tuptable);
	return status;
}

/*
 * GroupParallelUsable
 *		Whether a run_group call with parallel => N > 1 executes the group's
 *		runs together in background workers: not while a run's probe has
 *		not run (the group's first chunk runs alone, in the session, and
 *		the call stops after it, as without parallel), nor for a role that
 *		cannot log in (ParallelUsable's NOTICE).  Caller has a non-atomic
 *		SPI connection.
 */
static bool
GroupParallelUsable(List *runs)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	MemoryContext cxt;
	ListCell   *lc;
	bool		usable = true;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "backfill group check",
								ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);
	foreach(lc, runs)
	{
		RunInfo    *run;

		CHECK_FOR_INTERRUPTS();
		run = LoadRun(*(int64 *) lfirst(lc));
		if (run->status == RUN_DONE || run->status == RUN_CANCELLED)
			continue;
		if (!ParallelUsable(run))
		{
			usable = false;
			break;
		}
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	return usable;
}

/*
 * RunGroupParallel
 *		run_group with parallel => N: every unfinished run of the group is
 *		checked and locked as ExecuteRun does (a run another backend
 *		executes is left to it, NOTICE), then ParallelGroupLoop keeps up to
 *		N chunks in flight across them.  Caller has a non-atomic SPI
 *		connection.
 */
static void
RunGroupParallel(List *runs, int max_chunks, int parallel)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	MemoryContext cxt;
	RunInfo   **members;
	LOCKTAG    *tags;
	volatile int nmembers = 0;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "backfill group run",
								ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);
	members = palloc0(sizeof(RunInfo *) * list_length(runs));
	tags = palloc0(sizeof(LOCKTAG) * list_length(runs));
	PG_TRY();
	{
		ListCell   *lc;

		foreach(lc, runs)
		{
			RunInfo    *run;

			CHECK_FOR_INTERRUPTS();
			run = BeginRun(*(int64 *) lfirst(lc), &tags[nmembers]);
			if (run != NULL)
				members[nmembers++] = run;
		}
		if (nmembers > 0)
			ParallelGroupLoop(members, nmembers, max_chunks, parallel, cxt);
	}
	PG_FINALLY();
	{
		int			i;

		for (i = 0; i < nmembers; i++)
			LockRelease(&tags[i], ExclusiveLock, true);
	}
	PG_END_TRY();

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
}

/*
 * RunGroup
 *		See backfill.h: CALL backfill.run_group.  Execute the group's runs
 *		one after the other in dependency order (run id order), each as
 *		ExecuteRun does, until one is not done (probed, deferred, waiting,
 *		out of max_chunks) or fails (then the error ends the call and stops
 *		the group).  With parallel => N > 1 (once the probe has run), the
 *		runs execute together instead: up to N chunks in flight across the
 *		group (RunGroupParallel).  Caller has a non-atomic SPI connection.
 */
void
RunGroup(int64 group_id, int max_chunks, int parallel)
{
	List	   *runs;
	ListCell   *lc;
	bool		all_done = true;

	runs = GroupRuns(group_id, true);
	if (parallel > 1 && runs != NIL && GroupParallelUsable(runs))
	{
		RunGroupParallel(runs, max_chunks, parallel);
		foreach(lc, runs)
		{
			int64		attempts;
			RunStatus	status;

			status = RunState(*(int64 *) lfirst(lc), &attempts);
			if (status != RUN_DONE && status != RUN_CANCELLED)
				all_done = false;
		}
	}
	else
	{
		/*
		 * One run after the other, in this session: a probe still to run
		 * ends the call after it, and a NOTICE above said why workers are
		 * not used otherwise (once, not once per run).
		 */
		parallel = 1;
		foreach(lc, runs)
		{
			int64		run_id = *(int64 *) lfirst(lc);
			int64		before;
			int64		after;
			RunStatus	status;

			status = RunState(run_id, &before);
			if (status == RUN_DONE || status == RUN_CANCELLED)
				continue;
			ExecuteRun(run_id, max_chunks, parallel);
			status = RunState(run_id, &after);
			if (max_chunks > 0)
				max_chunks = Max(max_chunks - (int) (after - before), 0);
			if (status != RUN_DONE)
			{
				all_done = false;
				break;
			}
			if (max_chunks == 0)
			{
				all_done = (lnext(runs, lc) == NULL);
				break;
			}
		}
	}
	if (all_done)
		ereport(NOTICE,
				(errmsg("group %lld is done", (long long) group_id)));
}

/*
 * CancelGroup
 *		See backfill.h: CancelRun on every run of the group that is not
 *		finished (same rights per run); the chunks cancelled.  Caller is
 *		connected to SPI.
 */
int32
CancelGroup(int64 group_id)
{
	List	   *runs;
	ListCell   *lc;
	int32		total = 0;

	runs = GroupRuns(group_id, true);
	foreach(lc, runs)
		total += CancelRun(*(int64 *) lfirst(lc));
	return total;
}
