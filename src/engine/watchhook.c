/*-------------------------------------------------------------------------
 *
 * watchhook.c
 *	  Changed regions: the chunk engine's hooks.  A chunk that moves its
 *	  target's watermark waits for the writers of the watched sources
 *	  (ChunkLockWatermark), consumes the logged changes of its range
 *	  before it reads its source (ChunkConsumeChanges), and moves the
 *	  watermark in the statement that records it (ChunkAdvanceWatermark);
 *	  whatever changes the watches, a watermark or a chunk tells every
 *	  backend's cache of them to read them again (InvalidateWatchCache).
 *	  engine/chunk.c calls these four and nothing else of the feature.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"

#include "backfill.h"

/*
 * ChunkLockWatermark
 *		See backfill.h.  A chunk whose end passes the target's watermark (or the first chunk
 *		ever built) will move it: it waits, within lock_timeout, for the
 *		writers to watched sources that may have left rows unlogged because
 *		they were beyond the old watermark (they hold the watch lock in
 *		RowExclusiveLock until they commit), and holds the lock in ShareLock
 *		until it commits.  Writers do not wait for it: one that finds the
 *		lock held or awaited in ShareLock takes RowShareLock, which does not
 *		conflict with it, and logs all its rows (orchestration/watchlog.c).
 *		So a row is either committed before the chunk reads its source, or
 *		logged, and a writer of the target alone cannot make the writers
 *		of its sources wait for its chunk's source query.  A chunk behind
 *		the watermark takes nothing: writes into it are always logged.
 *		Called before the target lock (ChunkLock, engine/chunk.c): a
 *		writer of a source that also writes the target (a trigger of its
 *		own that keeps the target up to date) waits for a chunk that holds
 *		the target, so a chunk that waited for that writer while holding
 *		the target would deadlock with it (the attack review of issue 30).
 *		The watermark only moves forward (GREATEST), so a chunk found not
 *		to move it here does not later, and one that takes the lock and
 *		finds it moved past its end meanwhile holds it for nothing
 *		(ShareLock does not conflict with itself: the chunks of one
 *		parallel call, with shared chunk locks on Citus too).
 *		Returns whether ChunkConsumeChanges has anything to do for [lo, hi):
 *		the same statement looks for logged changes there (one catalog
 *		statement per chunk less where nothing was logged, the usual case).
 *		A change this statement does not see was committed after it
 *		(before the chunk took the target lock, or after), and stays
 *		logged (the chunk may read its rows anyway: at worst the chunk is
 *		rebuilt once more).  When the lock was taken, the writers
 *		waited for may have logged since, so a statement after the wait
 *		looks again (below).
 *		A chunk that will consume also waits, within lock_timeout, for the
 *		writers that left out a row because its chunk was recorded already
 *		(the target's RECORDED lock, orchestration/watchrecorded.c), and
 *		holds that lock in ShareLock until it commits: the row they found
 *		is consumed only by a snapshot that sees their commit.  In a
 *		transaction whose snapshot is the transaction's (REPEATABLE READ,
 *		SERIALIZABLE) nothing is consumed: that snapshot was taken before
 *		the wait.
 */
bool
ChunkLockWatermark(Oid target, TimestampTz lo, TimestampTz hi)
{
	Oid			argtypes[3] = {REGCLASSOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[3];
	bool		isnull = true;
	bool		logged = false;
	bool		found = false;
	bool		moves = false;
	TimestampTz watermark = 0;
	LOCKTAG		tag;

	values[0] = ObjectIdGetDatum(target);
	values[1] = TimestampTzGetDatum(lo);
	values[2] = TimestampTzGetDatum(hi);
	CatalogExec("SELECT t.watermark, EXISTS (SELECT FROM backfill.changed_regions x"
				"  WHERE x.target OPERATOR(pg_catalog.=) $1"
				"  AND x.chunk_start OPERATOR(pg_catalog.<) $3"
				"  AND x.chunk_end OPERATOR(pg_catalog.>) $2)"
				" FROM backfill.targets t"
				" WHERE t.target OPERATOR(pg_catalog.=) $1",
				3, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
	{
		bool		lnull;

		watermark = DatumGetTimestampTz(SpiGetDatumCopy(0, 1, &isnull));
		logged = found = SpiGetBool(0, 2, &lnull);
	}
	SPI_freetuptable(SPI_tuptable);
	if (isnull || hi > watermark)
	{
		BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_WATCH, (uint32) target);
		(void) LockAcquire(&tag, ShareLock, false, false);
		logged = moves = true;
	}
	if (logged && IsolationUsesXactSnapshot())
	{
		/*
		 * The transaction's snapshot predates the wait below: a writer
		 * that left its row out may have committed after it, unseen.  The
		 * changes stay recorded (the chunk is rebuilt once more), and the
		 * caller is told, since every later stale plan chooses the chunk
		 * again for as long as its builds run so.  It also predates the
		 * wait above: a writer at the live edge, which logged nothing,
		 * may have committed after it too, and its rows would be behind
		 * the watermark this chunk moves, neither read nor recorded.  So
		 * a chunk that moves the watermark of a watched target records
		 * its own range (by no source): the next stale plan rebuilds it.
		 * A target without watch nor recorded change has nothing to say.
		 */
		if (moves)
		{
			CatalogExec("INSERT INTO backfill.changed_regions"
						" (target, chunk_start, chunk_end, changed_at, source)"
						" SELECT $1, $2, $3, pg_catalog.now(), NULL"
						" WHERE EXISTS (SELECT FROM backfill.watches w"
						"  WHERE w.target OPERATOR(pg_catalog.=) $1)",
						3, argtypes, values, NULL, SPI_OK_INSERT);
			found |= SPI_processed > 0;
		}
		if (!found)
			return false;
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("the recorded changes of chunk [%s, %s) of %s stay recorded",
						TimestampText(lo), TimestampText(hi),
						QualifiedRelName(target)),
				 errdetail("A chunk built in a REPEATABLE READ or SERIALIZABLE transaction consumes no recorded changes: its snapshot was taken before its wait for the writers of the watched sources."),
				 errhint("Build watched targets in READ COMMITTED (default_transaction_isolation); the next stale plan chooses this chunk again.")));
		return false;
	}
	if (moves && !found)
	{
		bool		enull;

		/*
		 * The writers waited for have committed: a new statement sees what
		 * they recorded.  Where nothing is recorded in [lo, hi) the chunk
		 * consumes nothing and runs no DELETE of the log, and a chunk that
		 * moves the watermark is the usual one (every first build, every
		 * build at the live edge; the attack review of the recorded
		 * memory, when backfill_recorded_signal was a statement trigger,
		 * which such a DELETE fired).  A change recorded after this
		 * statement stays recorded, as above.  No row is consumed, so no
		 * writer that left its own out for one is waited for.
		 */
		CatalogExec("SELECT EXISTS (SELECT FROM backfill.changed_regions x"
					"  WHERE x.target OPERATOR(pg_catalog.=) $1"
					"  AND x.chunk_start OPERATOR(pg_catalog.<) $3"
					"  AND x.chunk_end OPERATOR(pg_catalog.>) $2)",
					3, argtypes, values, NULL, SPI_OK_SELECT);
		logged = SPI_processed > 0 && SpiGetBool(0, 1, &enull);
		SPI_freetuptable(SPI_tuptable);
	}
	if (logged)
	{
		/* the writers that left out a chunk recorded already */
		BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_RECORDED, (uint32) target);
		(void) LockAcquire(&tag, ShareLock, false, false);
	}
	return logged;
}

/*
 * ChunkConsumeChanges
 *		See backfill.h.  Delete the logged changes of the target in [lo, hi) that this
 *		statement's snapshot sees, before the chunk reads its source (a
 *		later snapshot): a change committed before it is in the chunk's
 *		rows, one committed after it stays logged.  A logged region that
 *		sticks out of the chunk (another grid: a run with another chunk
 *		size or TimeZone) keeps the parts outside [lo, hi), with their
 *		changed_at.
 */
void
ChunkConsumeChanges(Oid target, TimestampTz lo, TimestampTz hi)
{
	Oid			argtypes[3] = {REGCLASSOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[3];

	values[0] = ObjectIdGetDatum(target);
	values[1] = TimestampTzGetDatum(lo);
	values[2] = TimestampTzGetDatum(hi);
	CatalogExec("WITH d AS (DELETE FROM backfill.changed_regions"
				"  WHERE target OPERATOR(pg_catalog.=) $1"
				"  AND chunk_start OPERATOR(pg_catalog.<) $3"
				"  AND chunk_end OPERATOR(pg_catalog.>) $2"
				"  RETURNING target, chunk_start, chunk_end, changed_at, source)"
				" INSERT INTO backfill.changed_regions"
				" (target, chunk_start, chunk_end, changed_at, source)"
				" SELECT target, chunk_start, $2, changed_at, source FROM d"
				"  WHERE chunk_start OPERATOR(pg_catalog.<) $2"
				" UNION ALL"
				" SELECT target, $3, chunk_end, changed_at, source FROM d"
				"  WHERE chunk_end OPERATOR(pg_catalog.>) $3",
				3, argtypes, values, NULL, SPI_OK_INSERT);
}

/*
 * ChunkAdvanceWatermark
 *		See backfill.h: run "record", the statement that records a chunk
 *		that worked (an UPDATE of backfill.chunks whose parameters are in
 *		args), and move target's watermark to the chunk's end when that is
 *		newer, in one statement: the record in a WITH that always runs to
 *		completion, then the newest chunk end any build has covered, moved
 *		only forward (args gets the target and the end as its next two
 *		parameters).  When the watermark moved, every backend's cached
 *		watermarks (watchlog.c) are read again after the commit.  Caller
 *		is connected to SPI.
 */
void
ChunkAdvanceWatermark(const char *record, CatalogArgs *args, Oid target,
					  TimestampTz end)
{
	int			target_param;
	int			end_param;

	target_param = CatalogArg(args, REGCLASSOID, ObjectIdGetDatum(target),
							  false);
	end_param = CatalogArg(args, TIMESTAMPTZOID, TimestampTzGetDatum(end),
						   false);
	CatalogExecArgs(psprintf("WITH c AS (%s)"
							 " UPDATE backfill.targets"
							 " SET watermark = GREATEST(watermark, $%d)"
							 " WHERE target OPERATOR(pg_catalog.=) $%d"
							 " AND (watermark IS NULL OR watermark OPERATOR(pg_catalog.<) $%d)",
							 record, end_param, target_param, end_param),
					args, SPI_OK_UPDATE);
	/* writers' cached watermarks (watchlog.c) are read again */
	if (SPI_processed > 0)
		InvalidateWatchCache();
}

/*
 * InvalidateWatchCache
 *		See backfill.h: a relcache invalidation of backfill.watches, sent
 *		when the current transaction commits, which every backend's cache
 *		of watches and watermarks (orchestration/watchlog.c) takes as "read
 *		again".
 */
void
InvalidateWatchCache(void)
{
	Oid			relid = WatchesRelid();

	if (OidIsValid(relid))
		CacheInvalidateRelcacheByRelid(relid);
}
