/*-------------------------------------------------------------------------
 *
 * parallelpool.c
 *	  The pool of a parallel call, on the leader's side: the call's
 *	  dynamic shared memory (one place per worker, under a spinlock), the
 *	  cluster's worker slots of backfill.max_workers, starting a pool
 *	  worker, handing a chunk to a place, waiting until the chunks handed
 *	  out have started and until one is over, reaping the workers that
 *	  stopped, and the end of the pool (ShutdownPool; TerminateFlights
 *	  when the leader ends by an error or is terminated).  How the pool
 *	  works as a whole: the header of parallel.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/spin.h"
#include "utils/guc.h"

#include "backfill.h"

/*
 * The leader's places, for the cleanup that terminates their workers when
 * the leader ends by an error or is terminated, and the call's shared
 * memory.
 */
Flight	   *parallel_flights = NULL;
int			parallel_nflights = 0;
static dsm_segment *pool_seg = NULL;
PoolShared *parallel_pool = NULL;

/*
 * TerminateFlights
 *		Cleanup of the leader (on an error, and at proc_exit when it is
 *		terminated): terminate every worker of the pool, busy or idle; a
 *		busy one rolls its chunk back.  A worker not started yet never
 *		starts.
 */
void
TerminateFlights(int code, Datum arg)
{
	int			i;

	for (i = 0; i < parallel_nflights; i++)
	{
		if (parallel_flights[i].handle != NULL)
			TerminateBackgroundWorker(parallel_flights[i].handle);
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
int
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
		for (i = 0; i < parallel_nflights && !mine; i++)
			mine = parallel_flights[i].handle != NULL && parallel_flights[i].slot == k;
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
void
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
void
ReleaseSlots(void)
{
	int			i;

	for (i = 0; i < parallel_nflights; i++)
	{
		if (parallel_flights[i].handle != NULL)
			ReleaseSlot(parallel_flights[i].slot);
		parallel_flights[i].slot = -1;
	}
}

/*
 * StartPoolWorker
 *		Register the background worker of place i of the pool (its first
 *		chunk already handed to the place, HandChunk), to join this
 *		backend's lock group or not; NULL when no worker slot of the server
 *		is free.  The handle is allocated in the current memory context.
 */
BackgroundWorkerHandle *
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
void
CreatePool(int n)
{
	Size		size = add_size(offsetof(PoolShared, places),
								mul_size(n, sizeof(PoolPlace)));
	int			i;

	pool_seg = dsm_create(size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	if (pool_seg == NULL)
	{
		parallel_pool = NULL;
		return;
	}
	dsm_pin_mapping(pool_seg);
	parallel_pool = (PoolShared *) dsm_segment_address(pool_seg);
	SpinLockInit(&parallel_pool->mutex);
	parallel_pool->nplaces = n;
	for (i = 0; i < n; i++)
	{
		parallel_pool->places[i].state = PLACE_IDLE;
		parallel_pool->places[i].run_id = 0;
		parallel_pool->places[i].chunk_no = 0;
		parallel_pool->places[i].procno = -1;
	}
}

/*
 * DestroyPool
 *		Unmap the call's shared memory (its workers, if any are left, keep
 *		it until they exit).
 */
void
DestroyPool(void)
{
	if (pool_seg != NULL)
		dsm_detach(pool_seg);
	pool_seg = NULL;
	parallel_pool = NULL;
}

/*
 * ReadPlace
 *		The state of place i, as its worker last set it.
 */
static PlaceState
ReadPlace(int i)
{
	PlaceState	state;

	SpinLockAcquire(&parallel_pool->mutex);
	state = parallel_pool->places[i].state;
	SpinLockRelease(&parallel_pool->mutex);
	return state;
}

/*
 * SetPlace
 *		Set the state of place i (the leader's moves: IDLE, EXIT) and wake
 *		its worker.
 */
void
SetPlace(int i, PlaceState state)
{
	int			procno;

	SpinLockAcquire(&parallel_pool->mutex);
	parallel_pool->places[i].state = state;
	procno = parallel_pool->places[i].procno;
	SpinLockRelease(&parallel_pool->mutex);
	if (procno >= 0)
		SetLatch(&BackfillProcByNumber(procno)->procLatch);
}

/*
 * HandChunk
 *		Hand chunk chunk_no of run_id to place i, idle, and wake its worker
 *		(one not started yet reads it when it starts).
 */
void
HandChunk(int i, int64 run_id, int32 chunk_no)
{
	int			procno;

	SpinLockAcquire(&parallel_pool->mutex);
	Assert(parallel_pool->places[i].state == PLACE_IDLE);
	parallel_pool->places[i].run_id = run_id;
	parallel_pool->places[i].chunk_no = chunk_no;
	parallel_pool->places[i].state = PLACE_ASSIGNED;
	procno = parallel_pool->places[i].procno;
	SpinLockRelease(&parallel_pool->mutex);
	if (procno >= 0)
		SetLatch(&BackfillProcByNumber(procno)->procLatch);
}

/*
 * WorkerStopped
 *		Whether the worker of place i (which has one) has stopped.
 */
bool
WorkerStopped(int i)
{
	pid_t		pid;

	return GetBackgroundWorkerPid(parallel_flights[i].handle, &pid) == BGWH_STOPPED;
}

/*
 * FlightEnded
 *		Whether the chunk in flight at place i is over: its worker said so
 *		(DONE), or it has stopped.
 */
bool
FlightEnded(int i)
{
	return parallel_flights[i].busy &&
		(ReadPlace(i) == PLACE_DONE || WorkerStopped(i));
}

/*
 * ReapWorker
 *		The worker of place i has stopped (or is told to, at the end of the
 *		call, and has): give its slot of backfill.max_workers back and free
 *		the place for a new worker.
 */
void
ReapWorker(int i)
{
	pfree(parallel_flights[i].handle);
	parallel_flights[i].handle = NULL;
	ReleaseSlot(parallel_flights[i].slot);
	parallel_flights[i].slot = -1;
	SpinLockAcquire(&parallel_pool->mutex);
	parallel_pool->places[i].state = PLACE_IDLE;
	parallel_pool->places[i].procno = -1;
	SpinLockRelease(&parallel_pool->mutex);
}

/*
 * ReapIdleWorkers
 *		Reap the idle workers that have stopped (terminated between two
 *		chunks): their places take a new worker when one is needed.
 */
void
ReapIdleWorkers(void)
{
	int			i;

	for (i = 0; i < parallel_nflights; i++)
	{
		if (parallel_flights[i].handle != NULL && !parallel_flights[i].busy && WorkerStopped(i))
			ReapWorker(i);
	}
}

/*
 * IdlePlace
 *		A place whose worker waits for a chunk, or -1.
 */
int
IdlePlace(void)
{
	int			i;

	for (i = 0; i < parallel_nflights; i++)
	{
		if (parallel_flights[i].handle != NULL && !parallel_flights[i].busy &&
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
void
ShutdownPool(void)
{
	int			i;

	for (i = 0; i < parallel_nflights; i++)
	{
		if (parallel_flights[i].handle != NULL)
			SetPlace(i, PLACE_EXIT);
	}
	for (i = 0; i < parallel_nflights; i++)
	{
		if (parallel_flights[i].handle == NULL)
			continue;
		(void) WaitForBackgroundWorkerShutdown(parallel_flights[i].handle);
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
int
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
void
WaitForStarts(void)
{
	for (;;)
	{
		bool		waiting = false;
		int			i;

		for (i = 0; i < parallel_nflights && !waiting; i++)
		{
			PlaceState	state;

			if (!parallel_flights[i].busy)
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
