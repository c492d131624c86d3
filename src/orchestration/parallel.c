/*-------------------------------------------------------------------------
 *
 * parallel.c
 *	  Parallel chunks (run, backfill, run_group with parallel => N): the
 *	  leader's loop, which hands the chunks out to a pool of at most N
 *	  dynamic background workers, in plan order, and stops handing out at
 *	  the first failure; the pool worker's main, which connects once and
 *	  executes the chunks it is handed with the chunk engine, one
 *	  transaction each, until the leader tells it to go; and cancel's side,
 *	  which terminates a run's workers.
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

#include <signal.h>

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/dsm.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "backfill.h"

/* What the leader hands a worker at its start, in bgw_extra. */
typedef struct ChunkWorkerArgs
{
	dsm_handle	pool;			/* the call's PoolShared */
	int32		place;			/* the worker's place in it */
	Oid			database;
	Oid			role;
	int			leader_pgprocno;
	int			leader_pid;
	int32		lock_timeout;
	int32		chunk_timeout;
	int32		max_attempts;
	bool		lock_group;		/* join the leader's lock group */
} ChunkWorkerArgs;

StaticAssertDecl(sizeof(ChunkWorkerArgs) <= BGW_EXTRALEN,
				 "ChunkWorkerArgs must fit in bgw_extra");

/*
 * The state of a place of the pool, as its worker and the leader share it.
 * The leader moves a place from IDLE to ASSIGNED (a chunk is handed out)
 * and from DONE back to IDLE (it has read the outcome), or to EXIT; the
 * worker moves it from ASSIGNED to BUSY (it took the chunk), from BUSY to
 * RUNNING (it claimed the chunk and starts executing it; WaitForStarts) and
 * from BUSY or RUNNING to DONE (the chunk's transaction is over).
 */
typedef enum PlaceState
{
	PLACE_IDLE,
	PLACE_ASSIGNED,
	PLACE_BUSY,
	PLACE_RUNNING,
	PLACE_DONE,
	PLACE_EXIT
} PlaceState;

/* One place of the pool: its worker, and the chunk handed to it. */
typedef struct PoolPlace
{
	PlaceState	state;
	int64		run_id;
	int32		chunk_no;
	int			procno;			/* the worker's PGPROC number; -1 before it
								 * attached */
} PoolPlace;

/* The dynamic shared memory of a call: its places, under one spinlock. */
typedef struct PoolShared
{
	slock_t		mutex;
	int			nplaces;
	PoolPlace	places[FLEXIBLE_ARRAY_MEMBER];
} PoolShared;

/*
 * One run of the call (a group call has several): where the leader is in
 * its plan, and how it ended for this call.
 */
typedef struct Member
{
	RunInfo    *run;
	int32		cursor;			/* the last chunk started (0: none) */
	bool		finished;		/* nothing more to start: see below */
	bool		exhausted;		/* no chunk left to start */
	bool		cancelled;		/* the run was cancelled meanwhile */
	int			meet;			/* ChunksMayMeet: -1 not known yet */
	RunTally	tally;			/* what this call did to it (its summary) */
} Member;

/*
 * One place of the pool, as the leader keeps it: its worker (NULL: none
 * at this place now) and, while busy, the chunk handed to it.
 */
typedef struct Flight
{
	BackgroundWorkerHandle *handle; /* NULL: no worker at this place */
	bool		busy;			/* a chunk is in flight at this place */
	Member	   *member;
	ChunkInfo	chunk;
	int32		attempts;		/* the chunk's attempts before the worker */
	int			slot;			/* its worker slot of the cluster (TakeSlot) */
} Flight;

/*
 * The leader's places, for the cleanup that terminates their workers when
 * the leader ends by an error or is terminated, and the call's shared
 * memory.
 */
static Flight *flights = NULL;
static int	nflights = 0;
static dsm_segment *pool_seg = NULL;
static PoolShared *pool = NULL;
static bool exit_callback_registered = false;

PGDLLEXPORT void backfill_chunk_worker(Datum main_arg);

/* In a pool worker: its place, and its leader's PGPROC number. */
static PoolShared *worker_shared = NULL;
static PoolPlace *worker_place = NULL;
static int	worker_leader_procno = -1;

/*
 * TerminateFlights
 *		Cleanup of the leader (on an error, and at proc_exit when it is
 *		terminated): terminate every worker of the pool, busy or idle; a
 *		busy one rolls its chunk back.  A worker not started yet never
 *		starts.
 */
static void
TerminateFlights(int code, Datum arg)
{
	int			i;

	for (i = 0; i < nflights; i++)
	{
		if (flights[i].handle != NULL)
			TerminateBackgroundWorker(flights[i].handle);
	}
}

/*
 * TakeSlot
 *		One of the cluster's backfill.max_workers worker slots for a new
 *		worker, or -1 when every one is taken (by this or any other
 *		session, of any database).  A slot is a session-level lock
 *		(BackfillWorkerSlotTag, database 0) taken without waiting; the
 *		leader holds it until it has seen its worker stop (FinishFlight),
 *		or until its call ends by an error (ReleaseSlots) or its session
 *		ends.  So the slots taken count the workers started and not yet
 *		reaped across the cluster, without shared memory of our own (the
 *		library is usually not preloaded), and the lock manager serializes
 *		two leaders asking for the last slot.  Lock tags of database 0 are
 *		the same in every database, on PostgreSQL 15 to 19 alike.
 */
static int
TakeSlot(void)
{
	int			cap = BackfillMaxWorkers();
	int			k;

	for (k = 0; k < cap; k++)
	{
		LOCKTAG		tag;
		int			i;
		bool		mine = false;

		CHECK_FOR_INTERRUPTS();
		for (i = 0; i < nflights && !mine; i++)
			mine = flights[i].handle != NULL && flights[i].slot == k;
		if (mine)
			continue;
		BackfillWorkerSlotTag(&tag, k);
		if (LockAcquire(&tag, ExclusiveLock, true, true) !=
			LOCKACQUIRE_NOT_AVAIL)
			return k;
	}
	return -1;
}

/*
 * ReleaseSlot
 *		Give a worker slot back (TakeSlot); -1: none.
 */
static void
ReleaseSlot(int slot)
{
	LOCKTAG		tag;

	if (slot < 0)
		return;
	BackfillWorkerSlotTag(&tag, slot);
	(void) LockRelease(&tag, ExclusiveLock, true);
}

/*
 * ReleaseSlots
 *		Give back the slots of every flight (the end of a call by an
 *		error, after TerminateFlights: session locks outlive the error).
 */
static void
ReleaseSlots(void)
{
	int			i;

	for (i = 0; i < nflights; i++)
	{
		if (flights[i].handle != NULL)
			ReleaseSlot(flights[i].slot);
		flights[i].slot = -1;
	}
}

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
 * StartPoolWorker
 *		Register the background worker of place i of the pool (its first
 *		chunk already handed to the place, HandChunk), to join this
 *		backend's lock group or not; NULL when no worker slot of the server
 *		is free.  The handle is allocated in the current memory context.
 */
static BackgroundWorkerHandle *
StartPoolWorker(int i, bool lock_group)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	ChunkWorkerArgs args;

	memset(&worker, 0, sizeof(worker));
	memset(&args, 0, sizeof(args));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "backfill");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "backfill_chunk_worker");
	snprintf(worker.bgw_name, BGW_MAXLEN,
			 "backfill worker %d of backend %d", i + 1, MyProcPid);
	snprintf(worker.bgw_type, BGW_MAXLEN, "backfill worker");
	worker.bgw_main_arg = Int32GetDatum(i);
	worker.bgw_notify_pid = MyProcPid;

	args.pool = dsm_segment_handle(pool_seg);
	args.place = i;
	args.database = MyDatabaseId;
	args.role = GetUserId();
	args.leader_pgprocno = BackfillMyProcNumber();
	args.leader_pid = MyProcPid;
	args.lock_timeout = backfill_lock_timeout;
	args.chunk_timeout = backfill_chunk_timeout;
	args.max_attempts = backfill_max_attempts;
	args.lock_group = lock_group;
	memcpy(worker.bgw_extra, &args, sizeof(args));

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		return NULL;
	return handle;
}

/*
 * CreatePool
 *		The call's shared memory: n places, all idle, with no worker yet;
 *		mapped for the session (the leader commits between chunks) until
 *		DestroyPool.  NULL when the server has no dynamic shared memory
 *		segment left (the call then executes its chunks in the session).
 */
static void
CreatePool(int n)
{
	Size		size = add_size(offsetof(PoolShared, places),
								mul_size(n, sizeof(PoolPlace)));
	int			i;

	pool_seg = dsm_create(size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	if (pool_seg == NULL)
	{
		pool = NULL;
		return;
	}
	dsm_pin_mapping(pool_seg);
	pool = (PoolShared *) dsm_segment_address(pool_seg);
	SpinLockInit(&pool->mutex);
	pool->nplaces = n;
	for (i = 0; i < n; i++)
	{
		pool->places[i].state = PLACE_IDLE;
		pool->places[i].run_id = 0;
		pool->places[i].chunk_no = 0;
		pool->places[i].procno = -1;
	}
}

/*
 * DestroyPool
 *		Unmap the call's shared memory (its workers, if any are left, keep
 *		it until they exit).
 */
static void
DestroyPool(void)
{
	if (pool_seg != NULL)
		dsm_detach(pool_seg);
	pool_seg = NULL;
	pool = NULL;
}

/*
 * ReadPlace
 *		The state of place i, as its worker last set it.
 */
static PlaceState
ReadPlace(int i)
{
	PlaceState	state;

	SpinLockAcquire(&pool->mutex);
	state = pool->places[i].state;
	SpinLockRelease(&pool->mutex);
	return state;
}

/*
 * SetPlace
 *		Set the state of place i (the leader's moves: IDLE, EXIT) and wake
 *		its worker.
 */
static void
SetPlace(int i, PlaceState state)
{
	int			procno;

	SpinLockAcquire(&pool->mutex);
	pool->places[i].state = state;
	procno = pool->places[i].procno;
	SpinLockRelease(&pool->mutex);
	if (procno >= 0)
		SetLatch(&BackfillProcByNumber(procno)->procLatch);
}

/*
 * HandChunk
 *		Hand chunk chunk_no of run_id to place i, idle, and wake its worker
 *		(one not started yet reads it when it starts).
 */
static void
HandChunk(int i, int64 run_id, int32 chunk_no)
{
	int			procno;

	SpinLockAcquire(&pool->mutex);
	Assert(pool->places[i].state == PLACE_IDLE);
	pool->places[i].run_id = run_id;
	pool->places[i].chunk_no = chunk_no;
	pool->places[i].state = PLACE_ASSIGNED;
	procno = pool->places[i].procno;
	SpinLockRelease(&pool->mutex);
	if (procno >= 0)
		SetLatch(&BackfillProcByNumber(procno)->procLatch);
}

/*
 * WorkerStopped
 *		Whether the worker of place i (which has one) has stopped.
 */
static bool
WorkerStopped(int i)
{
	pid_t		pid;

	return GetBackgroundWorkerPid(flights[i].handle, &pid) == BGWH_STOPPED;
}

/*
 * FlightEnded
 *		Whether the chunk in flight at place i is over: its worker said so
 *		(DONE), or it has stopped.
 */
static bool
FlightEnded(int i)
{
	return flights[i].busy &&
		(ReadPlace(i) == PLACE_DONE || WorkerStopped(i));
}

/*
 * ReapWorker
 *		The worker of place i has stopped (or is told to, at the end of the
 *		call, and has): give its slot of backfill.max_workers back and free
 *		the place for a new worker.
 */
static void
ReapWorker(int i)
{
	pfree(flights[i].handle);
	flights[i].handle = NULL;
	ReleaseSlot(flights[i].slot);
	flights[i].slot = -1;
	SpinLockAcquire(&pool->mutex);
	pool->places[i].state = PLACE_IDLE;
	pool->places[i].procno = -1;
	SpinLockRelease(&pool->mutex);
}

/*
 * ReapIdleWorkers
 *		Reap the idle workers that have stopped (terminated between two
 *		chunks): their places take a new worker when one is needed.
 */
static void
ReapIdleWorkers(void)
{
	int			i;

	for (i = 0; i < nflights; i++)
	{
		if (flights[i].handle != NULL && !flights[i].busy && WorkerStopped(i))
			ReapWorker(i);
	}
}

/*
 * IdlePlace
 *		A place whose worker waits for a chunk, or -1.
 */
static int
IdlePlace(void)
{
	int			i;

	for (i = 0; i < nflights; i++)
	{
		if (flights[i].handle != NULL && !flights[i].busy &&
			ReadPlace(i) == PLACE_IDLE)
			return i;
	}
	return -1;
}

/*
 * ShutdownPool
 *		The end of a call with nothing in flight: tell every worker of the
 *		pool to exit, wait until each has, and give its slot back.
 */
static void
ShutdownPool(void)
{
	int			i;

	for (i = 0; i < nflights; i++)
	{
		if (flights[i].handle != NULL)
			SetPlace(i, PLACE_EXIT);
	}
	for (i = 0; i < nflights; i++)
	{
		if (flights[i].handle == NULL)
			continue;
		(void) WaitForBackgroundWorkerShutdown(flights[i].handle);
		ReapWorker(i);
	}
}

/*
 * WaitForFlight
 *		Wait until one of the chunks in flight is over (its worker said so,
 *		or has stopped) and return its place.  A worker wakes the leader
 *		(its latch) when its chunk is over, the postmaster (bgw_notify_pid)
 *		when a worker stops; interrupts are served in every wait, and a
 *		terminated or cancelled leader leaves through its cleanup.
 */
static int
WaitForFlight(int n)
{
	for (;;)
	{
		int			i;

		for (i = 0; i < n; i++)
		{
			if (FlightEnded(i))
				return i;
		}
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * WaitForStarts
 *		Wait until every chunk handed out has started executing in its
 *		worker (its place is RUNNING or DONE, or its worker has stopped),
 *		so that the next chunk handed out starts after them: chunks start
 *		in plan order even when a new worker takes longer to connect than
 *		an idle one takes to finish a chunk and take the next.
 */
static void
WaitForStarts(void)
{
	for (;;)
	{
		bool		waiting = false;
		int			i;

		for (i = 0; i < nflights && !waiting; i++)
		{
			PlaceState	state;

			if (!flights[i].busy)
				continue;
			state = ReadPlace(i);
			waiting = (state == PLACE_ASSIGNED || state == PLACE_BUSY) &&
				!WorkerStopped(i);
		}
		if (!waiting)
			return;
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * TargetHasWaiters
 *		Whether another backend waits for a lock on the run's target (the
 *		table, one of its partitions, or the target lock of
 *		backfill.lock_target) while chunks of it are in flight.  The workers
 *		of one call share the leader's lock group, so a chunk started now
 *		would not queue behind such a waiter but overtake it; the leader
 *		starts nothing new on that target until its chunks in flight have
 *		ended and the waiter had its turn, as between two chunks of a serial
 *		run.  Workers in no lock group (Citus) would queue behind the
 *		waiter instead, each for up to backfill.lock_timeout: not starting
 *		them is better there too.  The waits of the call's own workers
 *		(their pids, as the postmaster reports them) do not count.  The
 *		table itself is named apart from pg_partition_tree, which returns
 *		no row for a table that is neither partitioned nor a partition.
 *		Caller is connected to SPI.
 */
static bool
TargetHasWaiters(RunInfo *run)
{
	Oid			argtypes[4] = {OIDOID, OIDOID, OIDOID, INT4ARRAYOID};
	Datum		values[4];
	Datum	   *pids;
	int			npids = 0;
	int			i;
	bool		waiting;

	pids = palloc(sizeof(Datum) * (nflights + 1));
	pids[npids++] = Int32GetDatum(MyProcPid);
	for (i = 0; i < nflights; i++)
	{
		pid_t		pid;

		if (flights[i].handle != NULL &&
			GetBackgroundWorkerPid(flights[i].handle, &pid) == BGWH_STARTED)
			pids[npids++] = Int32GetDatum((int32) pid);
	}
	values[0] = ObjectIdGetDatum(run->target);
	values[1] = ObjectIdGetDatum(MyDatabaseId);
	values[2] = ObjectIdGetDatum((Oid) BACKFILL_LOCK_CLASS_TARGET);
	values[3] = PointerGetDatum(construct_array(pids, npids, INT4OID, 4,
												true, TYPALIGN_INT));
	SpiExecPinned("SELECT 1 FROM pg_catalog.pg_locks l"
				  " WHERE NOT l.granted"
				  " AND l.database OPERATOR(pg_catalog.=) $2"
				  " AND ((l.locktype OPERATOR(pg_catalog.=) 'relation'"
				  "   AND (l.relation OPERATOR(pg_catalog.=) $1"
				  "    OR l.relation OPERATOR(pg_catalog.=) ANY (ARRAY("
				  "     SELECT t.relid::pg_catalog.oid"
				  "      FROM pg_catalog.pg_partition_tree($1::pg_catalog.regclass) t))))"
				  "  OR (l.locktype OPERATOR(pg_catalog.=) 'advisory'"
				  "   AND l.classid OPERATOR(pg_catalog.=) $3"
				  "   AND l.objid OPERATOR(pg_catalog.=) $1"
				  "   AND l.objsubid OPERATOR(pg_catalog.=) 16966))"
				  " AND l.pid OPERATOR(pg_catalog.<>) ALL ($4)"
				  " LIMIT 1",
				  4, argtypes, values, NULL, true, 1, SPI_OK_SELECT);
	waiting = SPI_processed > 0;
	SPI_freetuptable(SPI_tuptable);
	return waiting;
}

/*
 * TargetInFlight
 *		Whether a chunk of the call on target relid is in flight.
 */
static bool
TargetInFlight(Oid relid)
{
	int			i;

	for (i = 0; i < nflights; i++)
	{
		if (flights[i].busy && flights[i].member->run->target == relid)
			return true;
	}
	return false;
}

/*
 * LeavesAlone
 *		Whether a chunk of run may take its leaves in ACCESS EXCLUSIVE (a
 *		partitioned target whose chunks truncate, swap or keep their
 *		leaves, or a revert run's).  On Citus such chunks of one target run
 *		one at a time: Citus reads every partition of the table for a
 *		chunk (ACCESS SHARE until it commits), so a second chunk would wait
 *		for the first in its lock phase and defer after
 *		backfill.lock_timeout (measured).
 */
static bool
LeavesAlone(RunInfo *run)
{
	if (get_rel_relkind(run->target) != RELKIND_PARTITIONED_TABLE)
		return false;
	return run->strategy != STRATEGY_DELETE || run->keep_replaced ||
		run->reverts != 0;
}

/*
 * ChunksMayMeet
 *		Whether two chunks of m's run may wait for each other's
 *		transactions although their ranges are disjoint: the target (or one
 *		of its partitions) has a unique index whose key leaves out the time
 *		column, an exclusion constraint, a trigger of its own (not an
 *		internal one, such as a foreign key's, nor backfill's watch
 *		triggers) or a rule.  Between two members of a lock group such a
 *		wait is not a lock wait: PostgreSQL polls the other transaction
 *		(XactLockTableWait) and the deadlock detector never sees it, so two
 *		chunks that wait for each other (each inserted a key the other
 *		inserts next) spin until a timeout, and on the releases whose poll
 *		checks no interrupt, forever, even past pg_terminate_backend.  The
 *		chunks of such a target run one at a time (beside other targets'):
 *		the second then meets the first one's committed rows and fails as
 *		in a serial run (23505 at once).  Read once per call and run.
 *		Caller is connected to SPI.
 */
static bool
ChunksMayMeet(Member *m)
{
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		values[2];
	bool		isnull;

	if (m->meet >= 0)
		return m->meet > 0;
	values[0] = ObjectIdGetDatum(m->run->target);
	values[1] = CStringGetTextDatum(m->run->time_column);
	SpiExecPinned("WITH rels AS (SELECT $1 AS relid UNION"
				  "  SELECT t.relid::pg_catalog.oid"
				  "   FROM pg_catalog.pg_partition_tree($1::pg_catalog.regclass) t)"
				  " SELECT EXISTS (SELECT FROM rels"
				  "   JOIN pg_catalog.pg_index i"
				  "    ON i.indrelid OPERATOR(pg_catalog.=) rels.relid"
				  "  WHERE i.indisexclusion OR (i.indisunique AND NOT EXISTS ("
				  "   SELECT FROM pg_catalog.pg_attribute a"
				  "    WHERE a.attrelid OPERATOR(pg_catalog.=) rels.relid"
				  "      AND a.attname OPERATOR(pg_catalog.=) $2::pg_catalog.name"
				  "      AND a.attnum OPERATOR(pg_catalog.=) ANY"
				  "       ((i.indkey::pg_catalog.int2[])"
				  "        [0:i.indnkeyatts OPERATOR(pg_catalog.-) 1]))))"
				  " OR EXISTS (SELECT FROM rels JOIN pg_catalog.pg_trigger g"
				  "   ON g.tgrelid OPERATOR(pg_catalog.=) rels.relid"
				  "  WHERE NOT g.tgisinternal AND g.tgfoid OPERATOR(pg_catalog.<>)"
				  "   'backfill._watch_trigger()'::pg_catalog.regprocedure)"
				  " OR EXISTS (SELECT FROM rels JOIN pg_catalog.pg_class c"
				  "   ON c.oid OPERATOR(pg_catalog.=) rels.relid WHERE c.relhasrules)",
				  2, argtypes, values, NULL, true, 1, SPI_OK_SELECT);
	m->meet = SpiGetBool(0, 1, &isnull) ? 1 : 0;
	SPI_freetuptable(SPI_tuptable);
	return m->meet > 0;
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

	for (i = 0; i < nflights; i++)
	{
		ChunkReport report;
		ChunkStatus cstatus;

		if (!flights[i].busy)
			continue;
		if (ReadChunkOutcome(flights[i].member->run, &flights[i].chunk,
							 flights[i].attempts, &cstatus, &report) &&
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
 * The state of one parallel call, as the leader loop keeps it.
 */
typedef struct LeaderState
{
	Member	   *members;		/* the call's runs, in dependency order */
	int			nmembers;
	int			in_flight;
	int			cap;			/* places usable: parallel, fewer when no
								 * worker slot was free */
	bool		stop;			/* start nothing new */
	bool		lock_group;		/* the workers join this backend's lock
								 * group; else (Citus) the call target
								 * locks below */
	Oid		   *held;			/* targets whose call lock is held */
	int			nheld;
	bool		failed;
	Member	   *failed_member;	/* the first failure: earliest run, */
	ChunkInfo	failed_chunk;	/* first in plan order */
	ErrorData  *failed_error;	/* in the run's context */
	FailureCause failed_cause;	/* its cause (failures.c) */
} LeaderState;

/*
 * TakeCallTarget
 *		For a call whose workers are in no lock group (Citus): take the
 *		call's lock on target relid, (TARGET, relid) in SHARE UPDATE
 *		EXCLUSIVE at session level, without waiting; false when another
 *		call holds it, or a chunk executed in a session, or lock_target
 *		(they exclude each other; a chunk of this call then runs in the
 *		session, which waits as a serial chunk does).  Held while chunks of
 *		the target are in flight (ReleaseCallTarget).
 */
static bool
TakeCallTarget(LeaderState *st, Oid relid)
{
	LOCKTAG		tag;
	int			i;

	for (i = 0; i < st->nheld; i++)
	{
		if (st->held[i] == relid)
			return true;
	}
	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_TARGET, (uint32) relid);
	if (LockAcquire(&tag, ShareUpdateExclusiveLock, true, true) ==
		LOCKACQUIRE_NOT_AVAIL)
		return false;
	st->held[st->nheld++] = relid;
	return true;
}

/*
 * ReleaseCallTarget
 *		Release the call's lock on target relid, if held (InvalidOid: every
 *		one, at the end of the call or on its error).
 */
static void
ReleaseCallTarget(LeaderState *st, Oid relid)
{
	LOCKTAG		tag;
	int			i = 0;

	while (i < st->nheld)
	{
		if (OidIsValid(relid) && st->held[i] != relid)
		{
			i++;
			continue;
		}
		BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_TARGET,
						(uint32) st->held[i]);
		(void) LockRelease(&tag, ShareUpdateExclusiveLock, true);
		st->held[i] = st->held[--st->nheld];
	}
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
	Flight	   *f = &flights[i];
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
 * NextStartable
 *		The run whose next chunk may start now, and that chunk: the runs are
 *		looked at in dependency order, each at its next chunk in plan order
 *		(a run's chunks never overtake each other); a chunk waiting for
 *		upstream chunks (PipelineChunkReady) or for another writer of its
 *		target (TargetHasWaiters), or for a chunk of its target in flight
 *		that it might wait for unseen (ChunksMayMeet), or, on Citus, whose
 *		target another call
 *		holds (TakeCallTarget) or has a chunk in flight that takes its
 *		leaves alone (LeavesAlone), lets the later runs go first; such a
 *		target with nothing in flight at all is returned with *here set:
 *		the chunk runs in the session, as a serial chunk waits.  A run
 *		found finished (nothing left, or done or cancelled meanwhile) is
 *		marked so.  With a single run (run, backfill), a chunk that waits
 *		for upstream chunks ends the starts, with the NOTICE saying why.
 *		NULL when nothing may start now.  Caller is connected to SPI.
 */
static Member *
NextStartable(LeaderState *st, ChunkInfo *chunk, int32 *attempts, bool *here)
{
	int			k;

	*here = false;
	for (k = 0; k < st->nmembers; k++)
	{
		Member	   *m = &st->members[k];
		RunStatus	run_status;
		bool		found;

		CHECK_FOR_INTERRUPTS();
		if (m->finished)
			continue;
		found = PeekChunkAfter(m->run, m->cursor, chunk, attempts,
							   &run_status);
		if (run_status == RUN_CANCELLED || run_status == RUN_DONE)
		{
			m->finished = true;
			m->cancelled = (run_status == RUN_CANCELLED);
			m->exhausted = (run_status == RUN_DONE);
			continue;
		}
		if (!found)
		{
			m->finished = true;
			m->exhausted = true;
			continue;
		}
		/* a chunk of a group waits for its upstream chunks */
		if (st->nmembers == 1)
		{
			if (!PipelineChunkReady(m->run->run_id, m->run->relname,
									chunk->start, chunk->end))
			{
				st->stop = true;
				return NULL;
			}
		}
		else if (!PipelineChunkSettled(m->run->run_id, chunk->start,
									   chunk->end))
			continue;
		/* another writer of the target has its turn first */
		if (TargetInFlight(m->run->target) && TargetHasWaiters(m->run))
			continue;
		/* chunks that may wait for each other unseen: one at a time */
		if (st->lock_group && TargetInFlight(m->run->target) &&
			ChunksMayMeet(m))
			continue;
		/* on Citus: one chunk of a target at a time that truncates leaves */
		if (!st->lock_group && TargetInFlight(m->run->target) &&
			LeavesAlone(m->run))
			continue;
		/* on Citus: another call's chunks of this target are in flight */
		if (!st->lock_group && !TakeCallTarget(st, m->run->target))
		{
			if (st->in_flight > 0)
				continue;
			*here = true;
		}
		return m;
	}
	return NULL;
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
			BackgroundWorkerHandle *handle;
			MemoryContext old;
			Member	   *m;
			bool		here;
			int			slot;

			CHECK_FOR_INTERRUPTS();
			/* the chunks handed out have started: the next starts after */
			if (st->in_flight > 0 && pool != NULL)
				WaitForStarts();
			SpiConnect();
			/* a failure committed by a worker that has not exited yet */
			if (st->in_flight > 0 && FlightFailed())
			{
				SpiFinish();
				SPI_commit();
				st->stop = true;
				break;
			}
			m = NextStartable(st, &chunk, &attempts, &here);
			SpiFinish();
			SPI_commit();
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
			if (pool == NULL)
			{
				if (!st->lock_group && !TargetInFlight(m->run->target))
					ReleaseCallTarget(st, m->run->target);
				RunChunkHere(m, st, &chunk, via, user, cxt);
				m->cursor = chunk.chunk_no;
				started++;
				ran_here = true;
				break;
			}

			/* an idle worker of the pool takes the chunk */
			ReapIdleWorkers();
			i = IdlePlace();
			if (i >= 0)
				HandChunk(i, m->run->run_id, chunk.chunk_no);
			else
			{
				/*
				 * None: a new worker, at a free place of the pool (fewer
				 * workers than places: a busy worker per chunk in flight,
				 * and no idle one); first a slot of backfill.max_workers,
				 * then a worker of the server.
				 */
				slot = TakeSlot();
				handle = NULL;
				if (slot >= 0)
				{
					for (i = 0; i < nflights; i++)
					{
						if (flights[i].handle == NULL)
							break;
					}
					Assert(i < nflights);
					HandChunk(i, m->run->run_id, chunk.chunk_no);
					old = MemoryContextSwitchTo(cxt);
					handle = StartPoolWorker(i, st->lock_group);
					MemoryContextSwitchTo(old);
					if (handle == NULL)
					{
						/* the place's chunk goes back: no worker will take it */
						SpinLockAcquire(&pool->mutex);
						pool->places[i].state = PLACE_IDLE;
						SpinLockRelease(&pool->mutex);
						ReleaseSlot(slot);
					}
				}
				if (handle == NULL)
				{
					/* no slot, or no worker of the server */
					if (!st->lock_group && !TargetInFlight(m->run->target))
						ReleaseCallTarget(st, m->run->target);
					if (!warned)
						NoWorkerNotice(m->run->run_id, slot < 0, st->in_flight,
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
				flights[i].handle = handle;
				flights[i].slot = slot;
			}
			flights[i].busy = true;
			flights[i].member = m;
			flights[i].chunk = chunk;
			flights[i].attempts = attempts;
			st->in_flight++;
			m->cursor = chunk.chunk_no;
			started++;
		}

		/* back to the top: the chunk's memory goes with evcxt */
		if (ran_here)
			continue;
		if (st->in_flight == 0)
			break;
		FinishFlight(st, WaitForFlight(nflights), cxt);
		/* every other chunk that is over too, before any new start */
		for (i = 0; i < nflights; i++)
		{
			if (FlightEnded(i))
				FinishFlight(st, i, cxt);
		}
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
	flights = palloc0(sizeof(Flight) * parallel);
	nflights = parallel;
	for (k = 0; k < parallel; k++)
		flights[k].slot = -1;
	CreatePool(parallel);
	if (pool == NULL)
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
		if (pool != NULL)
			ShutdownPool();
	}
	PG_CATCH();
	{
		TerminateFlights(0, (Datum) 0);
		ReleaseSlots();
		DestroyPool();
		flights = NULL;
		nflights = 0;
		/* session locks outlive the error */
		ReleaseCallTarget(&st, InvalidOid);
		PG_RE_THROW();
	}
	PG_END_TRY();
	DestroyPool();
	flights = NULL;
	nflights = 0;
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

	/*
	 * A group call that ends with runs still to do says what the first of
	 * them waits for (PipelineChunkReady's NOTICE; silent when it was only
	 * max_chunks): nothing in flight can change it any more.
	 */
	if (nruns > 1 && !st.stop)
	{
		for (k = 0; k < nruns; k++)
		{
			Member	   *m = &st.members[k];
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
