/*-------------------------------------------------------------------------
 *
 * locks.c
 *	  The extension's own lock tags (BackfillLockTag, BackfillChunkLockTag
 *	  for the chunks of parallel workers and BackfillWorkerSlotTag for the
 *	  cluster's cap on those workers), transaction-level locks owned by the
 *	  (sub)transaction (XactLockAcquire), and the lock that serializes
 *	  register, unregister and plan of one target.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/resowner.h"

#include "backfill.h"

/*
 * BackfillLockTag
 *		Fill tag with the lock key (lockclass, key) of this database.  It is
 *		an advisory lock tag whose fourth field is BACKFILL_LOCK_SUBID, a
 *		value the SQL advisory lock functions never use, so only the
 *		extension's C code can take these locks; they show in pg_locks as
 *		locktype 'advisory', classid = lockclass, objid = key,
 *		objsubid = 16966.
 */
void
BackfillLockTag(LOCKTAG *tag, uint32 lockclass, uint32 key)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, lockclass, key,
						 BACKFILL_LOCK_SUBID);
}

/*
 * XactLockAcquire
 *		See backfill.h: LockAcquire (transaction-level) with the current
 *		(sub)transaction's resource owner as the owner.  A lock taken while
 *		a cursor's FETCH runs is otherwise the portal's, given back when a
 *		later FETCH of that cursor fails in a savepoint (AtSubAbort_Portals)
 *		although the rows the earlier FETCH wrote under it stay.
 */
LockAcquireResult
XactLockAcquire(const LOCKTAG *tag, LOCKMODE mode, bool dontWait)
{
	ResourceOwner save = CurrentResourceOwner;
	LockAcquireResult r;

	/*
	 * No PG_TRY on this hot path: an error (a lock timeout) aborts the
	 * (sub)transaction, and whoever catches it (PortalRun, PL/pgSQL, SPI)
	 * puts its own resource owner back.
	 */
	CurrentResourceOwner = CurTransactionResourceOwner;
	r = LockAcquire(tag, mode, false, dontWait);
	CurrentResourceOwner = save;
	return r;
}

/*
 * XactLockRelease
 *		See backfill.h: LockRelease of a lock XactLockAcquire took.
 */
void
XactLockRelease(const LOCKTAG *tag, LOCKMODE mode)
{
	ResourceOwner save = CurrentResourceOwner;

	CurrentResourceOwner = CurTransactionResourceOwner;
	(void) LockRelease(tag, mode, false);
	CurrentResourceOwner = save;
}

/*
 * BackfillWorkerSlotTag
 *		Fill tag with the key of worker slot "slot" of the cluster: an
 *		advisory lock tag of database 0 (the lock manager is shared by
 *		every database, so a tag with database 0 is the same lock whatever
 *		database the session is connected to), class
 *		BACKFILL_LOCK_CLASS_WORKER and BACKFILL_LOCK_SUBID, which no SQL
 *		caller can take.  pg_locks shows it as database 0, classid
 *		1111883783, objid = the slot, objsubid = 16966.
 */
void
BackfillWorkerSlotTag(LOCKTAG *tag, int slot)
{
	SET_LOCKTAG_ADVISORY(*tag, InvalidOid, BACKFILL_LOCK_CLASS_WORKER,
						 (uint32) slot, BACKFILL_LOCK_SUBID);
}

/*
 * TakeTargetPlanLock
 *		Transaction-level lock (BACKFILL_LOCK_CLASS_PLAN, relid)
 *		that serializes register, unregister and plan of one target, so two
 *		overlapping plans can never both succeed.
 */
void
TakeTargetPlanLock(Oid target)
{
	LOCKTAG		tag;

	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_PLAN, (uint32) target);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * BackfillChunkLockTag
 *		Fill tag with the key of chunk chunk_no of run run_id in this
 *		database: an advisory lock tag whose fourth field is
 *		BACKFILL_LOCK_SUBID_CHUNK (no SQL caller can take it either).  A
 *		parallel chunk's background worker holds it, session-level, from
 *		its start to its exit, so pg_locks shows the chunks in flight and
 *		their pids (classid = the run id's low 32 bits, objid = chunk_no,
 *		objsubid = 16967), and a worker that dies releases it.
 */
void
BackfillChunkLockTag(LOCKTAG *tag, int64 run_id, int32 chunk_no)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) run_id,
						 (uint32) chunk_no, BACKFILL_LOCK_SUBID_CHUNK);
}
