/*-------------------------------------------------------------------------
 *
 * parallelworker.c
 *	  The background worker of parallel chunks (backfill_chunk_worker): it
 *	  joins its leader's lock group (on Citus, takes shared chunk locks),
 *	  connects once as the leader's role with the leader's settings, then
 *	  executes each chunk handed to its place of the pool in a transaction
 *	  of its own (WorkerRunChunk), says so and waits for the next, until
 *	  the leader says EXIT or is gone.  And cancel's side: terminating the
 *	  workers that execute a run's chunks (TerminateRunWorkers).  How the
 *	  pool works as a whole: the header of parallel.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "backfill.h"

StaticAssertDecl(sizeof(ChunkWorkerArgs) <= BGW_EXTRALEN,
				 "ChunkWorkerArgs must fit in bgw_extra");

PGDLLEXPORT void backfill_chunk_worker(Datum main_arg);

/* In a pool worker: its place, and its leader's PGPROC number. */
static PoolShared *worker_shared = NULL;
static PoolPlace *worker_place = NULL;
static int	worker_leader_procno = -1;

/*
 * WorkerCommitChunk
 *		The worker's commit of its chunk's transaction (CommitChunk's, for a
 *		transaction that is no procedure's): when the commit itself fails
 *		(a deferred constraint, Citus losing a connection), the chunk is
 *		recorded as failed in a new transaction (RecordCommitFailure).
 */
static void
WorkerCommitChunk(RunInfo *run, ChunkInfo *chunk, ChunkReport *report)
{
	MemoryContext cxt = CurrentMemoryContext;
	ErrorData  *volatile edata = NULL;

	PG_TRY();
	{
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();
	if (edata == NULL)
		return;

	MemoryContextSwitchTo(cxt);
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	RecordCommitFailure(run, chunk, report, edata);
	PopActiveSnapshot();
	CommitTransactionCommand();
}

/*
 * LeaderGone
 *		Whether the worker's leader has gone (its PGPROC is no longer its
 *		backend): a chunk never runs without its session.
 */
static bool
LeaderGone(ChunkWorkerArgs *args)
{
	return BackfillProcByNumber(args->leader_pgprocno)->pid != args->leader_pid;
}

/*
 * MarkPlaceRunning
 *		In a pool worker: its chunk is claimed and starts now (RUNNING);
 *		wake the leader, which hands out no chunk before (WaitForStarts).
 */
static void
MarkPlaceRunning(void)
{
	SpinLockAcquire(&worker_shared->mutex);
	worker_place->state = PLACE_RUNNING;
	SpinLockRelease(&worker_shared->mutex);
	SetLatch(&BackfillProcByNumber(worker_leader_procno)->procLatch);
}

/*
 * WorkerRunChunk
 *		Execute chunk chunk_no of run_id in a transaction of its own, as
 *		the first chunk of a worker before the pool did: hold the chunk's
 *		lock (BackfillChunkLockTag) until after the commit, claim the chunk
 *		and execute it with the chunk engine (an atomic SPI connection: the
 *		worker commits itself), executed_via 'worker'.  A chunk no longer
 *		to do (the run was cancelled, or another call took it) is left
 *		alone.  An error outside the chunk ends the worker (FATAL, in the
 *		server log) before anything is committed; the leader then records
 *		the chunk failed.  cxt is reset at the end.
 */
static void
WorkerRunChunk(int64 run_id, int32 chunk_no, MemoryContext cxt)
{
	RunInfo    *run;
	ChunkInfo	chunk;
	ChunkReport report;
	RunStatus	run_status;
	LOCKTAG		tag;
	bool		found;

	StartTransactionCommand();
	pgstat_report_activity(STATE_RUNNING,
						   psprintf("backfill chunk %d of run %lld",
									chunk_no, (long long) run_id));
	BackfillChunkLockTag(&tag, run_id, chunk_no);
	(void) LockAcquire(&tag, ExclusiveLock, true, false);

	PushActiveSnapshot(GetTransactionSnapshot());
	SpiConnect();
	RequireCatalogVersion();
	MemoryContextSwitchTo(cxt);
	run = LoadRun(run_id);
	CheckRunIdentity(run, "run", true);
	found = ClaimChunk(run, chunk_no, &chunk, &run_status);
	if (found && run_status != RUN_CANCELLED && run_status != RUN_DONE)
	{
		MarkPlaceRunning();
		MemoryContextSwitchTo(cxt);
		ExecuteChunk(run, &chunk, false, run_status, "worker",
					 CurrentUserName(), &report);
		FinishRun(run);
	}
	else
		found = false;
	SpiFinish();
	PopActiveSnapshot();
	MemoryContextSwitchTo(cxt);
	if (found)
		WorkerCommitChunk(run, &chunk, &report);
	else
		CommitTransactionCommand();
	(void) LockRelease(&tag, ExclusiveLock, true);
	pgstat_report_activity(STATE_IDLE, NULL);
	pgstat_report_stat(false);
	MemoryContextSwitchTo(TopMemoryContext);
	MemoryContextReset(cxt);
}

/*
 * backfill_chunk_worker
 *		The main of a pool worker of parallel chunks (bgw_extra:
 *		ChunkWorkerArgs): join the leader's lock group, or, on Citus, take
 *		shared chunk locks; attach the call's shared memory; connect as the
 *		leader's role and take the leader's settings, once; then execute
 *		each chunk handed to its place (WorkerRunChunk), say DONE and wake
 *		the leader, and wait for the next, until the leader says EXIT or
 *		is gone.
 */
void
backfill_chunk_worker(Datum main_arg)
{
	ChunkWorkerArgs args;
	MemoryContext cxt;
	dsm_segment *seg;
	PoolShared *shared;
	PoolPlace  *place;
	char		buf[32];

	memcpy(&args, MyBgworkerEntry->bgw_extra, sizeof(args));
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/*
	 * Join the leader's lock group before taking any lock, so that the
	 * chunks of one call do not wait for each other's table locks; a leader
	 * that is gone leaves nothing to do (no chunk runs unowned).  On Citus
	 * the worker joins no group (see the file header): it only checks that
	 * the leader is still there (a leader that ends terminates its workers
	 * from then on, TerminateFlights).
	 */
	if (args.lock_group)
	{
		if (!BecomeLockGroupMember(BackfillProcByNumber(args.leader_pgprocno),
								   args.leader_pid))
			proc_exit(0);
	}
	else if (LeaderGone(&args))
		proc_exit(0);

	/* the call's places; a leader gone with it leaves nothing to do */
	seg = dsm_attach(args.pool);
	if (seg == NULL)
		proc_exit(0);
	dsm_pin_mapping(seg);
	shared = (PoolShared *) dsm_segment_address(seg);
	if (args.place < 0 || args.place >= shared->nplaces)
		elog(FATAL, "backfill worker place %d out of range", args.place);
	place = &shared->places[args.place];
	SpinLockAcquire(&shared->mutex);
	place->procno = BackfillMyProcNumber();
	SpinLockRelease(&shared->mutex);
	worker_shared = shared;
	worker_place = place;
	worker_leader_procno = args.leader_pgprocno;

	BackgroundWorkerInitializeConnectionByOid(args.database, args.role, 0);

	if (args.lock_group)
	{
		/*
		 * No parallel query inside the worker: it is a member of the
		 * leader's lock group and cannot lead one of its own (nothing the
		 * chunk's text sets can override this source).
		 */
		SetConfigOption("max_parallel_workers_per_gather", "0", PGC_USERSET,
						PGC_S_OVERRIDE);
	}
	else
	{
		/*
		 * Citus: locks that the call's other chunks share, and no Citus
		 * lock serializing multi-shard modifications of one shard, which
		 * would make the chunks of one call wait for each other.
		 */
		SetChunkLocksShared(true);
		SetConfigOption("citus.enable_deadlock_prevention", "off",
						PGC_USERSET, PGC_S_OVERRIDE);
	}

	/* the leader's settings of the chunk engine */
	snprintf(buf, sizeof(buf), "%d", args.lock_timeout);
	SetConfigOption("backfill.lock_timeout", buf, PGC_USERSET, PGC_S_SESSION);
	snprintf(buf, sizeof(buf), "%d", args.chunk_timeout);
	SetConfigOption("backfill.chunk_timeout", buf, PGC_USERSET, PGC_S_SESSION);
	snprintf(buf, sizeof(buf), "%d", args.max_attempts);
	SetConfigOption("backfill.max_attempts", buf, PGC_USERSET, PGC_S_SESSION);

	cxt = AllocSetContextCreate(TopMemoryContext, "backfill chunk worker",
								ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		PlaceState	state;
		int64		run_id = 0;
		int32		chunk_no = 0;

		CHECK_FOR_INTERRUPTS();
		SpinLockAcquire(&shared->mutex);
		state = place->state;
		if (state == PLACE_ASSIGNED)
		{
			run_id = place->run_id;
			chunk_no = place->chunk_no;
			place->state = PLACE_BUSY;
		}
		SpinLockRelease(&shared->mutex);
		if (state == PLACE_EXIT || LeaderGone(&args))
			break;
		if (state == PLACE_ASSIGNED)
		{
			WorkerRunChunk(run_id, chunk_no, cxt);
			SpinLockAcquire(&shared->mutex);
			place->state = PLACE_DONE;
			SpinLockRelease(&shared->mutex);
			SetLatch(&BackfillProcByNumber(args.leader_pgprocno)->procLatch);
			continue;
		}
		/* idle: wait for the leader's next chunk (or its end) */
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	proc_exit(0);
}

/*
 * TerminateRunWorkers
 *		See backfill.h: terminate (SIGTERM) the background workers executing
 *		chunks of run_id, found by their chunk locks, and wait until they
 *		have gone (their chunks roll back); returns how many there were.
 *		Only backfill's workers hold these locks (no SQL caller can take
 *		them).  A pool worker holds its chunk's lock until its chunk has
 *		committed; in a group call, one that has just committed a chunk of
 *		this run may, between the lookup and the signal, have taken a chunk
 *		of another run of the group: that chunk rolls back and its leader
 *		records it failed (retryable), as for a worker that dies.  Caller
 *		is connected to SPI and may act on the run.
 */
int
TerminateRunWorkers(int64 run_id)
{
	Oid			argtypes[3] = {OIDOID, OIDOID, INT2OID};
	Datum		values[3];
	int			n;
	int			i;
	int			waits;
	const char *sql =
		"SELECT pid FROM pg_catalog.pg_locks"
		" WHERE locktype OPERATOR(pg_catalog.=) 'advisory'"
		" AND database OPERATOR(pg_catalog.=) $1"
		" AND classid OPERATOR(pg_catalog.=) $2"
		" AND objsubid OPERATOR(pg_catalog.=) $3 AND granted"
		" AND pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid()";

	values[0] = ObjectIdGetDatum(MyDatabaseId);
	values[1] = ObjectIdGetDatum((Oid) (uint32) run_id);
	values[2] = Int16GetDatum((int16) BACKFILL_LOCK_SUBID_CHUNK);
	SpiExecPinned(sql, 3, argtypes, values, NULL, true, 0, SPI_OK_SELECT);
	n = (int) SPI_processed;
	for (i = 0; i < n; i++)
	{
		bool		isnull;
		int			pid = SpiGetInt32(i, 1, &isnull);

		CHECK_FOR_INTERRUPTS();
		if (BackendPidGetProc(pid) != NULL)
			(void) kill(pid, SIGTERM);
	}
	SPI_freetuptable(SPI_tuptable);

	/* wait for them to go, at most about 60 s */
	for (waits = 0; n > 0 && waits < 6000; waits++)
	{
		SpiExecPinned(sql, 3, argtypes, values, NULL, true, 1, SPI_OK_SELECT);
		if (SPI_processed == 0)
		{
			SPI_freetuptable(SPI_tuptable);
			break;
		}
		SPI_freetuptable(SPI_tuptable);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return n;
}
