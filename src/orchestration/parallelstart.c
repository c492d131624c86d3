/*-------------------------------------------------------------------------
 *
 * parallelstart.c
 *	  Which chunk a parallel call starts next (NextStartable): each run of
 *	  the call at its next chunk in plan order, the earliest run first,
 *	  unless that chunk waits for upstream chunks, for another writer of
 *	  its target (TargetHasWaiters), for a chunk in flight that it might
 *	  wait for unseen (ChunksMayMeet), or, on Citus, for another call's
 *	  lock on its target (TakeCallTarget, ReleaseCallTarget) or for a chunk
 *	  in flight that takes its leaves alone (LeavesAlone).  Why each rule:
 *	  the header of parallel.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "backfill.h"

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

	pids = palloc(sizeof(Datum) * (parallel_nflights + 1));
	pids[npids++] = Int32GetDatum(MyProcPid);
	for (i = 0; i < parallel_nflights; i++)
	{
		pid_t		pid;

		if (parallel_flights[i].handle != NULL &&
			GetBackgroundWorkerPid(parallel_flights[i].handle, &pid) == BGWH_STARTED)
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
bool
TargetInFlight(Oid relid)
{
	int			i;

	for (i = 0; i < parallel_nflights; i++)
	{
		if (parallel_flights[i].busy && parallel_flights[i].member->run->target == relid)
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
void
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
Member *
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
