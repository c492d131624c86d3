/*-------------------------------------------------------------------------
 *
 * parallel.c
 *	  Parallel chunks (run, backfill, run_group with parallel => N): the
 *	  leader's loop, which hands the chunks out to a pool of at most N
 *	  dynamic background workers, in plan order, takes in their outcomes
 *	  and stops handing out at the first failure.  This header describes
 *	  the whole design; its other parts live in parallelpool.c (the pool
 *	  on the leader's side: shared memory, places, worker slots, waits),
 *	  parallelstart.c (which chunk starts next) and parallelworker.c (the
 *	  pool worker's main, which connects once and executes the chunks it
 *	  is handed with the chunk engine, one transaction each, until the
 *	  leader tells it to go; and cancel's side, which terminates a run's
 *	  workers).
 *
 * The pool: a call starts a worker only when a chunk may start and no
 * worker of the call is idle, so it never has more than N (fewer when
 * backfill.max_workers or max_worker_processes leave fewer); a worker that
 * has finished its chunk waits for the next one, with its connection,
 * caches and lock group membership kept.  The leader and its workers share
 * one small dynamic shared memory segment (PoolShared, created by the
 * leader for the call): one place per worker, with the chunk handed to it
 * and its state (PLACE_*), under a spinlock; each side wakes the other
 * with its latch.  Everything else (the outcome of a chunk, its error, its
 * figures) goes through the catalog, as before the pool: the leader reads
 * the chunk's row when the worker says it is done, or when the worker has
 * stopped.  At the end of the call the leader tells its idle workers to
 * exit and waits for them; on an error, or when it is terminated, it
 * terminates them.
 *
 * A run_group call leads the unfinished runs of the group at once: at most
 * N chunks in flight across them, each run's chunks in plan order, the
 * earliest run in dependency order first when several may start, and a
 * downstream chunk only when the upstream chunks it covers are done
 * (PipelineChunkSettled), so independent targets' chunks overlap.
 *
 * A worker connects to the leader's database as the leader's current role
 * (by OID), with the leader's backfill.lock_timeout, chunk_timeout and
 * max_attempts; the run's TimeZone and search_path are pinned on the run
 * and applied by the chunk engine, as in the leader.  For each chunk it is
 * handed (a group call's may be of several runs) it claims the chunk (row
 * lock, as the run loop does), executes it (author gate, locks with
 * lock_timeout deferral, ledger gate, lineage), and records the outcome in
 * the chunk's own transaction, executed_via 'worker'; the chunk engine
 * pops every setting of the chunk at its end, as between two chunks of a
 * serial run.
 *
 * The workers join the leader's lock group (as parallel query's workers
 * do), so the chunks of one call never wait for each other's locks on the
 * target (a chunk holds SHARE ROW EXCLUSIVE on the table, or on the
 * partitions it rewrites, which conflicts with itself); a writer of the
 * target still waits for every chunk in flight, and while one waits the
 * leader starts no new chunk (TargetHasWaiters), so the writer, the daily
 * job of lock_target included, gets its turn as between two serial chunks.
 * Row-level waits between members of a lock group are polled by
 * PostgreSQL rather than queued, and no deadlock detector sees them; the
 * chunks of one run write disjoint ranges, and their catalog rows are
 * taken in one order (chunk row, then run row), so no cycle can form
 * between them through their rows.  What could still make two chunks wait
 * for each other, a unique key without the time column, an exclusion
 * constraint, a trigger or a rule of the target (ChunksMayMeet), makes the
 * target's chunks run one at a time.  A worker runs no parallel query of
 * its own (a member cannot lead a group).
 *
 * On a Citus coordinator (CitusForbidsLockGroups: Citus would give the
 * members the leader's distributed transaction) the workers join no lock
 * group.  They take shared chunk locks instead (SetChunkLocksShared): the
 * target lock in ROW EXCLUSIVE, which excludes lock_target and a chunk
 * executed in a session but not the call's other chunks, and the table in
 * ROW EXCLUSIVE only, so a writer that does not take lock_target no longer
 * waits for the chunks in flight.  The leader holds the target lock in
 * SHARE UPDATE EXCLUSIVE (session level, compatible with its workers' and
 * conflicting with itself) while chunks of that target are in flight, so
 * two calls never execute chunks of one target at the same time; a call
 * that finds it taken executes its next chunk in the session, where it
 * waits (and defers) as a serial chunk does.  The chunks of a partitioned
 * target that truncate their leaves run one at a time (LeavesAlone).
 * Citus's own lock that lets one multi-shard modification at a time touch
 * a shard (citus.enable_deadlock_prevention) is off in these workers: the
 * chunks of one call write disjoint ranges, and each is a distributed
 * transaction of its own to Citus's deadlock detector.
 *
 * While it executes a chunk, a worker holds a session-level lock whose key
 * is the chunk (BackfillChunkLockTag), released after the chunk's commit,
 * so pg_locks, backfill.progress and cancel see the chunks in flight and
 * their pids, and a worker that dies drops it.  The leader holds the run's
 * session lock as in a serial run, and terminates its workers when it ends
 * by an error or is terminated (also on FATAL, at proc_exit), so no chunk
 * runs unowned; their chunks roll back and stay pending.  A worker checks
 * that its leader is still there before each chunk, and while idle.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/spin.h"
#include "utils/memutils.h"

#include "backfill.h"

/* TerminateFlights is registered as an exit callback (once per backend) */
static bool exit_callback_registered = false;

/*
 * ParallelUsable
 *		See backfill.h.  A probe that has not run yet runs alone, in this
 *		session, as without parallel (and the call stops after it, as
 *		always); for a caller whose current role cannot log in, the chunks
 *		run in this session too, with a NOTICE.
 */
bool
ParallelUsable(RunInfo *run)
{
	if (run->probe && !RunHasDoneChunk(run->run_id))
		return false;
	if (!RoleCanLogin(GetUserId()))
	{
		ereport(NOTICE,
				(errmsg("run %lld executes its chunks one at a time in this session",
						(long long) run->run_id),
				 errdetail("Parallel workers connect as the current role \"%s\", which cannot log in.",
						   CurrentUserName()),
				 errhint("Call backfill.run as a role with LOGIN for parallel chunks.")));
		return false;
	}
	return true;
}

/*
 * FlightFailed
 *		Whether a chunk in flight has already recorded a failure or a
 *		deferral (its worker commits the outcome, then exits: the leader
 *		may look in between).  Caller is connected to SPI.
 */
static bool
FlightFailed(void)
{
	int			i;

	for (i = 0; i < parallel_nflights; i++)
	{
		ChunkReport report;
		ChunkStatus cstatus;

		if (!parallel_flights[i].busy)
			continue;
		if (ReadChunkOutcome(parallel_flights[i].member->run, &parallel_flights[i].chunk,
							 parallel_flights[i].attempts, &cstatus, &report) &&
			report.outcome != OUTCOME_DONE)
			return true;
	}
	return false;
}

/*
 * LostChunkError
 *		The error recorded for a chunk whose worker stopped before it
 *		recorded an outcome (terminated, or failed outside the chunk:
 *		e.g. it could not connect).
 */
static ErrorData *
LostChunkError(ChunkInfo *chunk)
{
	ErrorData  *edata = palloc0(sizeof(ErrorData));

	edata->elevel = ERROR;
	edata->sqlerrcode = ERRCODE_ADMIN_SHUTDOWN;
	edata->message = psprintf("the background worker of chunk %d stopped before it recorded the chunk's outcome",
							  chunk->chunk_no);
	edata->detail = pstrdup("The worker was terminated, or failed before or after the chunk's work; the server log has its message. Whatever it did was rolled back.");
	return edata;
}

/*
 * LaterInPlan
 *		Whether chunk a comes after chunk b in the run's order.
 */
static bool
LaterInPlan(RunInfo *run, int32 a, int32 b)
{
	return run->backwards ? a < b : a > b;
}

/*
 * NoteOutcome
 *		Take in what a chunk's execution (by a worker, or by the leader
 *		itself) came to: its NOTICE; after a deferral or a failure, nothing
 *		new starts; the first failure (of the earliest run of the call,
 *		first in its plan order) is kept for the error that ends the call.
 */
static void
NoteOutcome(Member *m, LeaderState *st, ChunkInfo *chunk,
			ChunkReport *report, MemoryContext cxt)
{
	ReportChunk(m->run, chunk, report);
	TallyChunk(&m->tally, chunk, report);
	if (report->outcome == OUTCOME_DEFERRED)
		st->stop = true;
	if (report->outcome == OUTCOME_FAILED)
	{
		st->stop = true;
		if (!st->failed || m < st->failed_member ||
			(m == st->failed_member &&
			 LaterInPlan(m->run, st->failed_chunk.chunk_no, chunk->chunk_no)))
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			st->failed = true;
			st->failed_member = m;
			st->failed_chunk = *chunk;
			st->failed_error = palloc0(sizeof(ErrorData));
			st->failed_error->sqlerrcode = report->error->sqlerrcode;
			st->failed_error->message = pstrdup(report->error->message ?
												report->error->message : "");
			st->failed_error->detail = report->error->detail ?
				pstrdup(report->error->detail) : NULL;
			st->failed_error->hint = report->error->hint ?
				pstrdup(report->error->hint) : NULL;
			st->failed_cause = report->cause;
			MemoryContextSwitchTo(old);
		}
	}
}

/*
 * FinishFlight
 *		The chunk in flight at place i is over (FlightEnded): read what its
 *		worker recorded, or, when it recorded nothing and the run was not
 *		cancelled meanwhile, record the chunk as failed; commit.  The
 *		worker, when it is still there, waits for its next chunk; when it
 *		has stopped, its place is freed for a new one.  The report's error
 *		is made in the caller's memory context, not in SPI's, which
 *		SpiFinish frees before NoteOutcome reads it.
 */
static void
FinishFlight(LeaderState *st, int i, MemoryContext cxt)
{
	Flight	   *f = &parallel_flights[i];
	Member	   *m = f->member;
	ChunkReport report;
	ChunkStatus cstatus;
	bool		recorded;
	bool		cancelled = false;
	MemoryContext here = CurrentMemoryContext;
	MemoryContext spicxt;

	SpiConnect();
	spicxt = MemoryContextSwitchTo(here);
	recorded = ReadChunkOutcome(m->run, &f->chunk, f->attempts, &cstatus,
								&report);
	if (!recorded)
	{
		/* a cancel terminating the workers: wait for it to commit */
		RunStatus	rs = ReadRunStatusSettled(m->run->run_id);

		if (rs == RUN_CANCELLED || cstatus == CHUNK_CANCELLED)
			cancelled = true;
		else
		{
			report.outcome = OUTCOME_FAILED;
			MemoryContextSwitchTo(here);	/* SPI left its own current */
			report.error = LostChunkError(&f->chunk);
			report.cause = ClassifyFailure(report.error->sqlerrcode, false);
			RecordChunkFailure(m->run, &f->chunk, report.error, report.cause);
			FinishRun(m->run);
		}
	}
	MemoryContextSwitchTo(spicxt);
	SpiFinish();
	SPI_commit();
	if (cancelled)
	{
		m->cancelled = true;
		m->finished = true;
	}
	else
		NoteOutcome(m, st, &f->chunk, &report, cxt);

	f->busy = false;
	if (WorkerStopped(i))
		ReapWorker(i);
	else
		SetPlace(i, PLACE_IDLE);
	st->in_flight--;
	/* the last chunk of its target in flight: other calls may go on */
	if (!st->lock_group && !TargetInFlight(m->run->target))
		ReleaseCallTarget(st, m->run->target);
}

/*
 * RunChunkHere
 *		No worker slot is free and none is in flight: the leader executes
 *		the chunk itself, as the serial run loop does.
 */
static void
RunChunkHere(Member *m, LeaderState *st, ChunkInfo *peeked,
			 const char *via, const char *user, MemoryContext cxt)
{
	ChunkInfo	chunk;
	ChunkReport report;
	RunStatus	run_status;

	SpiConnect();
	if (!ClaimChunk(m->run, peeked->chunk_no, &chunk, &run_status) ||
		run_status == RUN_CANCELLED || run_status == RUN_DONE)
	{
		SpiFinish();
		SPI_commit();
		if (run_status == RUN_CANCELLED)
		{
			m->cancelled = true;
			m->finished = true;
		}
		return;
	}
	ExecuteChunk(m->run, &chunk, false, run_status, via, user, &report);
	SpiFinish();
	CommitChunk(m->run, &chunk, &report);
	NoteOutcome(m, st, &chunk, &report, cxt);
}

/*
 * NoWorkerNotice
 *		The NOTICE of a parallel call that goes on with fewer workers than
 *		it asked for: every slot of backfill.max_workers taken (no_slot; or
 *		the setting 0), or no background worker slot of the server free.
 */
static void
NoWorkerNotice(int64 run_id, bool no_slot, int in_flight, int parallel)
{
	if (no_slot)
		ereport(NOTICE,
				(BackfillMaxWorkers() > 0 ?
				 errmsg("run %lld: all %d of the cluster's backfill worker slots are taken; going on with %d of the %d parallel workers asked for",
						(long long) run_id,
						BackfillMaxWorkers(), in_flight, parallel) :
				 errmsg("run %lld: backfill.max_workers is 0; the chunks run in this session",
						(long long) run_id),
				 errdetail("backfill.max_workers caps the parallel chunks of every session and database at once, so that they leave the rest of max_worker_processes to parallel query and other background workers."),
				 BackfillMaxWorkers() > 0 ?
				 errhint("Wait for other parallel calls to finish, or ask a superuser to raise backfill.max_workers.") :
				 errhint("Ask a superuser to raise backfill.max_workers for parallel chunks.")));
	else
		ereport(NOTICE,
				(errmsg("run %lld: no background worker slot is free; going on with %d of the %d parallel workers asked for",
						(long long) run_id, in_flight, parallel),
				 errhint("Raise max_worker_processes (a restart) for more parallel chunks.")));
}

/*
 * NextChunkToStart
 *		After the chunks handed out have started (the next starts after
 *		them), the run whose next chunk may start now and that chunk
 *		(NextStartable), in a transaction of its own; NULL when nothing may
 *		start now, or when a chunk in flight has already recorded a failure
 *		or a deferral (its worker commits the outcome before it says so:
 *		nothing new starts then, st->stop).
 */
static Member *
NextChunkToStart(LeaderState *st, ChunkInfo *chunk, int32 *attempts,
				 bool *here)
{
	Member	   *m;

	/* the chunks handed out have started: the next starts after */
	if (st->in_flight > 0 && parallel_pool != NULL)
		WaitForStarts();
	SpiConnect();
	/* a failure committed by a worker that has not exited yet */
	if (st->in_flight > 0 && FlightFailed())
	{
		SpiFinish();
		SPI_commit();
		st->stop = true;
		return NULL;
	}
	m = NextStartable(st, chunk, attempts, here);
	SpiFinish();
	SPI_commit();
	return m;
}

/*
 * StartNewWorker
 *		No idle worker of the pool takes the chunk: a new worker, at a free
 *		place of the pool (fewer workers than places: a busy worker per
 *		chunk in flight, and no idle one), handed chunk chunk_no of m's
 *		run; first a slot of backfill.max_workers, then a worker of the
 *		server.  Returns the place, or -1 when no slot was free (*no_slot)
 *		or no worker of the server.  The worker's handle is allocated in
 *		cxt.
 */
static int
StartNewWorker(LeaderState *st, Member *m, int32 chunk_no,
			   MemoryContext cxt, bool *no_slot)
{
	BackgroundWorkerHandle *handle;
	MemoryContext old;
	int			slot = TakeSlot();
	int			i;

	*no_slot = (slot < 0);
	if (slot < 0)
		return -1;
	for (i = 0; i < parallel_nflights; i++)
	{
		if (parallel_flights[i].handle == NULL)
			break;
	}
	Assert(i < parallel_nflights);
	HandChunk(i, m->run->run_id, chunk_no);
	old = MemoryContextSwitchTo(cxt);
	handle = StartPoolWorker(i, st->lock_group);
	MemoryContextSwitchTo(old);
	if (handle == NULL)
	{
		/* the place's chunk goes back: no worker will take it */
		SpinLockAcquire(&parallel_pool->mutex);
		parallel_pool->places[i].state = PLACE_IDLE;
		SpinLockRelease(&parallel_pool->mutex);
		ReleaseSlot(slot);
		return -1;
	}
	parallel_flights[i].handle = handle;
	parallel_flights[i].slot = slot;
	return i;
}

/*
 * FinishFlights
 *		Wait until a chunk in flight is over and take in its outcome
 *		(FinishFlight), then that of every other chunk that is over too,
 *		before any new start.
 */
static void
FinishFlights(LeaderState *st, MemoryContext cxt)
{
	int			i;

	FinishFlight(st, WaitForFlight(parallel_nflights), cxt);
	for (i = 0; i < parallel_nflights; i++)
	{
		if (FlightEnded(i))
			FinishFlight(st, i, cxt);
	}
}

/*
 * LeaderLoop
 *		The loop of ParallelRunLoop, inside its cleanup: hand out chunks
 *		while there is a place (to an idle worker of the pool, else to a new
 *		one), then wait for a chunk to be over and take in its outcome,
 *		until nothing is in flight and nothing more may start.
 */
static void
LeaderLoop(LeaderState *st, int max_chunks, int parallel,
		   MemoryContext cxt, MemoryContext evcxt)
{
	int			started = 0;
	int			i;
	bool		warned = false;
	bool		ran_here;
	const char *via;
	char	   *user;

	via = ScheduleInCronWorker() ? "pg_cron" : "session";
	user = CurrentUserName();
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		MemoryContextSwitchTo(cxt);
		MemoryContextReset(evcxt);
		MemoryContextSwitchTo(evcxt);
		ran_here = false;

		/* start chunks while there is a place */
		while (!st->stop && st->in_flight < st->cap &&
			   (max_chunks < 0 || started < max_chunks))
		{
			ChunkInfo	chunk;
			int32		attempts = 0;
			Member	   *m;
			bool		here;
			bool		no_slot;

			CHECK_FOR_INTERRUPTS();
			m = NextChunkToStart(st, &chunk, &attempts, &here);
			if (m == NULL)
				break;
			if (here)
			{
				/* its target is another call's: wait as a serial chunk */
				RunChunkHere(m, st, &chunk, via, user, cxt);
				m->cursor = chunk.chunk_no;
				started++;
				ran_here = true;
				break;
			}

			/* no shared memory for a pool: one at a time, in the session */
			if (parallel_pool == NULL)
			{
				if (!st->lock_group && !TargetInFlight(m->run->target))
					ReleaseCallTarget(st, m->run->target);
				RunChunkHere(m, st, &chunk, via, user, cxt);
				m->cursor = chunk.chunk_no;
				started++;
				ran_here = true;
				break;
			}

			/* an idle worker of the pool takes the chunk, else a new one */
			ReapIdleWorkers();
			i = IdlePlace();
			if (i >= 0)
				HandChunk(i, m->run->run_id, chunk.chunk_no);
			else if ((i = StartNewWorker(st, m, chunk.chunk_no, cxt,
										 &no_slot)) < 0)
			{
				/* no slot, or no worker of the server */
				if (!st->lock_group && !TargetInFlight(m->run->target))
					ReleaseCallTarget(st, m->run->target);
				if (!warned)
					NoWorkerNotice(m->run->run_id, no_slot, st->in_flight,
								   parallel);
				warned = true;
				if (st->in_flight > 0)
				{
					/* fewer places from now on; this chunk starts later */
					st->cap = st->in_flight;
					break;
				}
				/* no worker at all: the chunk runs in this session */
				RunChunkHere(m, st, &chunk, via, user, cxt);
				m->cursor = chunk.chunk_no;
				started++;
				ran_here = true;
				break;
			}
			parallel_flights[i].busy = true;
			parallel_flights[i].member = m;
			parallel_flights[i].chunk = chunk;
			parallel_flights[i].attempts = attempts;
			st->in_flight++;
			m->cursor = chunk.chunk_no;
			started++;
		}

		/* back to the top: the chunk's memory goes with evcxt */
		if (ran_here)
			continue;
		if (st->in_flight == 0)
			break;
		FinishFlights(st, cxt);
	}
}

/*
 * SettleMember
 *		The end of a call for one of its runs: the NOTICE of a run cancelled
 *		meanwhile; for a run with nothing left to start, its status settled
 *		(two workers finishing the last chunks at the same time each saw the
 *		other's chunk pending: the leader sets it done) and its NOTICE.
 */
static void
SettleMember(Member *m)
{
	RunStatus	final_status = RUN_PLANNED;
	bool		finished;

	if (m->cancelled)
	{
		ereport(NOTICE,
				(errmsg("run %lld %s is %s", (long long) m->run->run_id,
						m->run->relname, RunStatusName(RUN_CANCELLED))));
		return;
	}
	if (!m->exhausted)
		return;
	SpiConnect();
	finished = !RemainingChunks(m->run);
	if (finished)
	{
		final_status = ReadRunStatus(m->run->run_id);
		if (final_status != RUN_DONE && final_status != RUN_CANCELLED)
			final_status = SetRunStatus(m->run, RUN_DONE);
	}
	SpiFinish();
	SPI_commit();
	if (finished)
	{
		ereport(NOTICE,
				(errmsg("run %lld %s is %s", (long long) m->run->run_id,
						m->run->relname, RunStatusName(final_status))));
		if (final_status == RUN_DONE)
			ReportRevertDefinition(m->run);
	}
}

/*
 * NoticeFirstWaiting
 *		The end of a group call that ends with runs still to do: the first
 *		of them says what it waits for (PipelineChunkReady's NOTICE; silent
 *		when it was only max_chunks): nothing in flight can change it any
 *		more.
 */
static void
NoticeFirstWaiting(LeaderState *st)
{
	int			k;

	for (k = 0; k < st->nmembers; k++)
	{
		Member	   *m = &st->members[k];
		ChunkInfo	chunk;
		int32		attempts;
		RunStatus	run_status;
		bool		waits = false;

		CHECK_FOR_INTERRUPTS();
		if (m->finished)
			continue;
		SpiConnect();
		if (PeekChunkAfter(m->run, m->cursor, &chunk, &attempts,
						   &run_status) &&
			run_status != RUN_CANCELLED && run_status != RUN_DONE)
			waits = !PipelineChunkReady(m->run->run_id, m->run->relname,
										chunk.start, chunk.end);
		SpiFinish();
		SPI_commit();
		if (waits)
			break;
	}
}

/*
 * ParallelGroupLoop
 *		See backfill.h.  Start the chunks of the runs (one, or the
 *		unfinished runs of a group in dependency order), each handed to a
 *		worker of the call's pool of at most "parallel" background workers
 *		(each takes chunk after chunk), at most "parallel" in flight and at most
 *		max_chunks (< 0: no limit) in all: each run's chunks in plan order
 *		(reverse for a backwards run), the earliest run with a chunk that
 *		may start first; a chunk of a group starts only when the upstream
 *		chunks it covers are done (PipelineChunkReady), so independent
 *		runs overlap.  After a failure or a deferral nothing new starts:
 *		the chunks in flight finish on their own, the rest stay pending,
 *		and a failure ends the call with the first failed chunk's error,
 *		its run failed.  When no worker slot is free the loop goes on with
 *		the workers it has (NOTICE), and with none, executes the chunk
 *		itself; the same when the cluster's backfill.max_workers slots are
 *		taken (TakeSlot).  A group call whose runs still wait when nothing is in
 *		flight ends with the NOTICE of the first one that waits.  Caller
 *		holds every run's session lock and a non-atomic SPI connection; cxt
 *		survives the commits.
 */
void
ParallelGroupLoop(RunInfo **runs, int nruns, int max_chunks, int parallel,
				  MemoryContext cxt)
{
	MemoryContext evcxt;
	LeaderState st;
	int			k;

	MemoryContextSwitchTo(cxt);
	evcxt = AllocSetContextCreate(cxt, "backfill parallel leader",
								  ALLOCSET_DEFAULT_SIZES);
	memset(&st, 0, sizeof(st));
	st.cap = parallel;
	st.nmembers = nruns;
	st.members = palloc0(sizeof(Member) * nruns);
	for (k = 0; k < nruns; k++)
	{
		st.members[k].run = runs[k];
		st.members[k].meet = -1;
		TallyStart(&st.members[k].tally);
	}
	st.held = palloc0(sizeof(Oid) * nruns);
	/* the workers join this backend's lock group, but on Citus (header) */
	st.lock_group = !CitusForbidsLockGroups();
	if (st.lock_group)
		BecomeLockGroupLeader();
	parallel_flights = palloc0(sizeof(Flight) * parallel);
	parallel_nflights = parallel;
	for (k = 0; k < parallel; k++)
		parallel_flights[k].slot = -1;
	CreatePool(parallel);
	if (parallel_pool == NULL)
		ereport(NOTICE,
				(errmsg("run %lld executes its chunks one at a time in this session",
						(long long) runs[0]->run_id),
				 errdetail("The server has no dynamic shared memory segment free for a pool of parallel workers."),
				 errhint("Retry when fewer parallel queries and parallel calls run.")));

	/*
	 * A leader that is terminated (FATAL) terminates its workers at
	 * proc_exit; one that ends by an error, here.  The exit callback is
	 * registered once per backend and acts only while flights are set (not
	 * PG_ENSURE_ERROR_CLEANUP: a chunk the leader executes itself may
	 * register exit callbacks of its own, temporary tables for one).
	 */
	if (!exit_callback_registered)
	{
		before_shmem_exit(TerminateFlights, (Datum) 0);
		exit_callback_registered = true;
	}
	PG_TRY();
	{
		LeaderLoop(&st, max_chunks, parallel, cxt, evcxt);
		/* nothing in flight: the pool's idle workers go */
		if (parallel_pool != NULL)
			ShutdownPool();
	}
	PG_CATCH();
	{
		TerminateFlights(0, (Datum) 0);
		ReleaseSlots();
		DestroyPool();
		parallel_flights = NULL;
		parallel_nflights = 0;
		/* session locks outlive the error */
		ReleaseCallTarget(&st, InvalidOid);
		PG_RE_THROW();
	}
	PG_END_TRY();
	DestroyPool();
	parallel_flights = NULL;
	parallel_nflights = 0;
	ReleaseCallTarget(&st, InvalidOid);

	MemoryContextSwitchTo(evcxt);
	for (k = 0; k < nruns; k++)
	{
		CHECK_FOR_INTERRUPTS();
		if (!st.failed || &st.members[k] != st.failed_member)
			SettleMember(&st.members[k]);
	}
	/* each run's summary, as the serial loop's, before a failure's error */
	for (k = 0; k < nruns; k++)
		ReportTally(st.members[k].run, &st.members[k].tally);
	if (st.failed)
	{
		ChunkReport failure;

		/* a worker that finished after the failure may have reset it */
		SpiConnect();
		(void) SetRunStatusAfter(st.failed_member->run, RUN_FAILED,
								 st.failed_chunk.chunk_no);
		SpiFinish();
		SPI_commit();
		memset(&failure, 0, sizeof(failure));
		failure.outcome = OUTCOME_FAILED;
		failure.error = st.failed_error;
		failure.cause = st.failed_cause;
		RaiseChunkFailure(st.failed_member->run, &st.failed_chunk, &failure);
	}

	/* a group call that ends with runs still to do: what the first waits for */
	if (nruns > 1 && !st.stop)
		NoticeFirstWaiting(&st);
	MemoryContextSwitchTo(cxt);
	MemoryContextDelete(evcxt);
}

/*
 * ParallelRunLoop
 *		See backfill.h: ParallelGroupLoop for one run.
 */
void
ParallelRunLoop(RunInfo *run, int max_chunks, int parallel, MemoryContext cxt)
{
	ParallelGroupLoop(&run, 1, max_chunks, parallel, cxt);
}
