/*-------------------------------------------------------------------------
 *
 * watchcache.c
 *	  Changed regions: the watches of a relation the triggers of a watched
 *	  source fire on, cached per backend across transactions and loaded
 *	  for each transaction with the watch locks taken and each watch's
 *	  edge, and who may take them from a _watch_row call (RowMayNote; the
 *	  rows whose WHEN clause may not, left to their events: event_debts);
 *	  their work with them is in watchlog.c.
 *
 * The watermark (backfill.targets.watermark) is read after the writer
 * took the target's watch lock (BACKFILL_LOCK_CLASS_WATCH) in
 * RowExclusiveLock, held until it commits; a chunk whose end passes the
 * watermark takes that lock in ShareLock before it reads its source
 * (chunk.c), so it waits for those writers, and holds it until it commits.
 * A writer never waits for the chunk: when its RowExclusiveLock is not
 * granted at once (a chunk holds or awaits the ShareLock) it takes
 * RowShareLock instead and logs every row, beyond the watermark too, for
 * the rest of its transaction (TakeWatchLock).  So a write left unlogged
 * because it was beyond the watermark has committed before the chunk read
 * the source (its rows are in the chunk), and a write made while the
 * chunk runs is logged.
 *
 * The watches of a relation and their watermarks are cached across
 * transactions in backend memory (watch_cache), so that a transaction of
 * single-row INSERTs pays no catalog query.  Whatever changes them (watch,
 * unwatch, a chunk moving a watermark, a new definition, a revert that
 * makes an older one current, unregister) sends
 * a relcache invalidation of backfill.watches at commit
 * (InvalidateWatchCache); the callback empties the cache, as it does for
 * an invalidation of a cached source or target.  The cached watermark is
 * used only after the watch locks are held and the invalidations received
 * since (AcceptInvalidationMessages): a chunk that moved the watermark
 * committed, and so queued its invalidation, before it released the lock.
 *
 *-------------------------------------------------------------------------
 */

#include "postgres.h"

#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "backfill.h"

static HTAB *rel_watches = NULL;	/* RelWatches */
static HashKeys rel_watches_keys;
static List *log_everything = NIL;	/* targets whose watermark a chunk is
									 * moving: TakeWatchLock */
static bool catalog_checked = false;	/* this trigger call made the catalog
										 * checks: WatchCatalog */
static bool catalog_open = false;	/* and is connected to SPI */
static bool catalog_version_ok = false; /* RequireCatalogVersion passed since
										 * the cache was last emptied */

/*
 * The cache across transactions: RelWatches by relation (entries and
 * targets in watch_cache_cxt), the targets to lock of each, and the OID of
 * backfill.watches whose invalidation empties it.
 */
typedef struct CachedWatches
{
	Oid			relid;			/* hash key */
	int			ntargets;
	Oid		   *targets;		/* sorted: the lock order */
	int			n;
	WatchEntry *entries;
} CachedWatches;

static HTAB *watch_cache = NULL;
static MemoryContext watch_cache_cxt = NULL;
static bool watch_cache_callback = false;
static bool watch_cache_shared = false; /* this transaction's watches point
										 * into watch_cache_cxt: CopyWatches */
static Oid	watch_cache_rel = InvalidOid;
static uint64 watch_cache_gen = 0;	/* counts the emptyings */

/*
 * The sources of this transaction's rows whose WHEN clause could not note
 * them (RowMayNote) and left their noting to their event (a list of OIDs in
 * TopTransactionContext, forgotten with the transaction's watches,
 * ForgetRelWatches): from the first such row of a source on, every row
 * event of that source's triggers notes its row (NoteEventRow,
 * watchevent.c; a row its WHEN clause noted is found noted); before it, the
 * event of a row the WHEN clause noted just writes.  It is a set, not a
 * count an event takes back: an event cannot tell whose row it would
 * settle, and the event of a row noted by its WHEN clause (an owner's row,
 * by a SECURITY DEFINER function called in the statement) fires before the
 * events of the statement's earlier rows (one of them would then be
 * silently not recorded).  A source left by an aborted subtransaction only
 * makes later events note their row again, which finds it noted.
 */
static List *event_debts = NIL;

/*
 * The last answer of RowMayNote, kept across statements and transactions
 * until a catalog change could alter it (a single-row INSERT paid the
 * checks again in every transaction: issue 30): the invalidation of any
 * relation (rights on a table or its columns, its schema,
 * backfill.watches: WatchCacheCallback), schema, role, role membership or
 * database (whose owner is a member of pg_database_owner), from other
 * sessions or this transaction's own commands alike.  may_note_gen tells
 * an answer computed while such an invalidation came in, which is not
 * kept.
 */
typedef struct MayNoteAnswer
{
	bool		valid;
	Oid			user;
	Oid			source;
	Oid			coltype;
	int16		colnum;			/* coltype INT2OID */
	NameData	colname;		/* coltype NAMEOID */
	bool		table;
	bool		may;
} MayNoteAnswer;

static MayNoteAnswer may_note;
static uint64 may_note_gen = 0;
static bool may_note_callbacks = false;

/*
 * WatchCacheCallback
 *		Relcache invalidation callback: empty the cache when backfill.watches
 *		(the signal of InvalidateWatchCache), a cached source or target, or
 *		everything (InvalidOid) is invalidated; forget RowMayNote's last
 *		answer on any.
 */
static void
WatchCacheCallback(Datum arg, Oid relid)
{
	bool		hit = !OidIsValid(relid) || relid == watch_cache_rel;

	/* any relation's rights may have changed */
	may_note.valid = false;
	may_note_gen++;

	if (watch_cache == NULL)
	{
		/*
		 * Nothing cached, but ReadWatches may be reading what it will
		 * cache: an invalidation taken in meanwhile (a build that moved a
		 * watermark and committed while this writer held RowShareLock)
		 * may be about what it read, which is then this transaction's
		 * only (its generation moved).
		 */
		catalog_version_ok = false;
		watch_cache_gen++;
		return;
	}
	if (!hit)
	{
		HASH_SEQ_STATUS seq;
		CachedWatches *c;

		hash_seq_init(&seq, watch_cache);
		while ((c = (CachedWatches *) hash_seq_search(&seq)) != NULL)
		{
			int			i;

			hit = c->relid == relid;
			for (i = 0; i < c->ntargets && !hit; i++)
				hit = c->targets[i] == relid;
			if (hit)
			{
				hash_seq_term(&seq);
				break;
			}
		}
	}
	if (!hit)
		return;
	catalog_version_ok = false;
	watch_cache = NULL;
	watch_cache_rel = InvalidOid;
	watch_cache_gen++;
	if (watch_cache_shared && TopTransactionContext != NULL)
	{
		/* the transaction's watches point into it: gone when it ends */
		MemoryContextSetParent(watch_cache_cxt, TopTransactionContext);
		watch_cache_cxt = NULL;
		watch_cache_shared = false;
	}
	else
		MemoryContextReset(watch_cache_cxt);
}

/*
 * WatchHash
 *		A new hash of entries of entrysize whose key (at their start) is
 *		keysize bytes, in memory context cxt.
 */
HTAB *
WatchHash(const char *name, Size keysize, Size entrysize, long nelem,
		  MemoryContext cxt)
{
	HASHCTL		ctl;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = keysize;
	ctl.entrysize = entrysize;
	ctl.hcxt = cxt;
	return hash_create(name, nelem, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/*
 * WatchCache
 *		The cache, made on first use (with its callback).
 */
static HTAB *
WatchCache(void)
{
	if (!watch_cache_callback)
	{
		CacheRegisterRelcacheCallback(WatchCacheCallback, (Datum) 0);
		watch_cache_callback = true;
	}
	if (watch_cache == NULL)
	{
		/*
		 * Looked up first: a catalog lookup may take in invalidations,
		 * and one that empties the cache (WatchCacheCallback) between
		 * the hash's making and the end of the lookup left no cache to
		 * return (NULL, or one handed to the transaction); the cache is
		 * empty until it is made, so the callback has nothing to do.
		 */
		Oid			rel = WatchesRelid();

		if (watch_cache_cxt == NULL)
			watch_cache_cxt = AllocSetContextCreate(CacheMemoryContext,
													"backfill watch cache",
													ALLOCSET_SMALL_SIZES);
		watch_cache = WatchHash("backfill watch cache", sizeof(Oid),
								sizeof(CachedWatches), 16, watch_cache_cxt);
		watch_cache_rel = rel;
	}
	return watch_cache;
}

/*
 * ClearHash
 *		Empty one of the per-transaction hashes (whose entries point into
 *		memory that is gone or going); one that grew past a few hundred
 *		entries is dropped instead, to be made again small on next use.
 */
void
ClearHash(HTAB **hash)
{
	HASH_SEQ_STATUS seq;
	void	   *entry;

	if (*hash == NULL || hash_get_num_entries(*hash) == 0)
		return;
	if (hash_get_num_entries(*hash) > 256)
	{
		hash_destroy(*hash);
		*hash = NULL;
		return;
	}
	hash_seq_init(&seq, *hash);
	while ((entry = hash_seq_search(&seq)) != NULL)
		(void) hash_search(*hash, entry, HASH_REMOVE, NULL);
}

/*
 * ClearHashKeys
 *		Empty per-transaction hash *hash whose entries' keys (OIDs) are
 *		keys, by key when they were few (HashKeys), else by a scan
 *		(ClearHash); forget the keys.
 */
void
ClearHashKeys(HTAB **hash, HashKeys *keys)
{
	int			i;

	if (*hash != NULL && keys->n <= HASH_KEYS_MAX)
	{
		for (i = 0; i < keys->n; i++)
			(void) hash_search(*hash, &keys->keys[i], HASH_REMOVE, NULL);
	}
	keys->n = 0;
	ClearHash(hash);
}

/*
 * TakeWatchLock
 *		The writer's share of a target's watch lock, until it commits,
 *		taken without ever waiting for a chunk: RowExclusiveLock when no
 *		chunk that moves the target's watermark holds or awaits the lock
 *		in ShareLock (the writer then reads the watermark and logs only
 *		the rows behind it; such a chunk waits for this writer before it
 *		reads its source), else RowShareLock, which no chunk waits for,
 *		and the writer logs its rows whatever the watermark
 *		(LogEverything).  Either way a row left unlogged is read by the
 *		chunk that moves the watermark past it.
 */
static void
TakeWatchLock(Oid target)
{
	LOCKTAG		tag;
	MemoryContext old;

	/*
	 * Owned by the (sub)transaction that loads the watches, not by a
	 * cursor's portal, whose locks a failed FETCH gives back while the
	 * watches loaded stay cached (XactLockAcquire).
	 */
	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_WATCH, (uint32) target);
	if (XactLockAcquire(&tag, RowExclusiveLock, true) != LOCKACQUIRE_NOT_AVAIL)
		return;
	(void) XactLockAcquire(&tag, RowShareLock, false);
	if (list_member_oid(log_everything, target))
		return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	log_everything = lappend_oid(log_everything, target);
	MemoryContextSwitchTo(old);
}

/*
 * LogEverything
 *		Whether this transaction logs every row it writes for target: it
 *		found a chunk moving the target's watermark when it took the
 *		target's watch lock (TakeWatchLock).
 */
static bool
LogEverything(Oid target)
{
	return list_member_oid(log_everything, target);
}

/*
 * EnterZone
 *		Make timezone (a watch's) the session's TimeZone for what follows,
 *		unless it is already: set and popped, it costs more than a
 *		single-row statement's scan.  Returns what LeaveZone takes: the GUC
 *		nest level, or 0 when nothing was set.
 */
int
EnterZone(const char *timezone)
{
	int			nest;

	if (strcmp(GetConfigOption("TimeZone", false, false), timezone) == 0)
		return 0;
	nest = NewGUCNestLevel();
	(void) set_config_option("TimeZone", timezone, PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return nest;
}

/*
 * LeaveZone
 *		Give the session back the TimeZone EnterZone replaced (nest, its
 *		result), if it replaced one.
 */
void
LeaveZone(int nest)
{
	if (nest > 0)
		AtEOXact_GUC(true, nest);
}

/*
 * LiveEdge
 *		The live edge of watch w at time now (computed again only once the
 *		one kept in w no longer holds): the start of the chunk of w's grid,
 *		in w's TimeZone, that contains now - settle; it holds until the end
 *		of that chunk plus settle.  The chunks before it ended at least
 *		settle ago.
 */
static void
LiveEdge(WatchEntry *w, TimestampTz now)
{
	int			nest;
	TimestampTz lo;
	TimestampTz hi;
	TimestampTz settled;

	if (w->live_known && now < w->live_until)
		return;
	nest = EnterZone(w->timezone);
	settled = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
													  TimestampTzGetDatum(now),
													  IntervalPGetDatum(w->settle)));
	ChunkCell(settled, w->chunk, &lo, &hi);
	w->live_edge = lo;
	w->live_until = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
															TimestampTzGetDatum(hi),
															IntervalPGetDatum(w->settle)));
	w->live_known = true;
	LeaveZone(nest);
}

/*
 * CopyWatchEntry
 *		*dst = *src, with src's strings and intervals copied into the
 *		current memory context.
 */
static void
CopyWatchEntry(WatchEntry *dst, const WatchEntry *src)
{
	*dst = *src;
	dst->time_column = pstrdup(src->time_column);
	dst->timezone = pstrdup(src->timezone);
	dst->chunk = (Interval *) palloc(sizeof(Interval));
	memcpy(dst->chunk, src->chunk, sizeof(Interval));
	dst->settle = (Interval *) palloc(sizeof(Interval));
	memcpy(dst->settle, src->settle, sizeof(Interval));
}

/*
 * CopyWatches
 *		The transaction's RelWatches of relid, copied from c into
 *		TopTransactionContext, each with its edge for this transaction: the
 *		later of the watermark and the live edge at the transaction's start
 *		(LiveEdge, kept in the cache entry).  Under a transaction snapshot
 *		the watermark may be older than one a chunk has committed since,
 *		and while a chunk moves it the new one is not known yet
 *		(LogEverything): every row is logged.  From an entry of the cache
 *		(cached) the entries' strings and intervals are not copied: an
 *		invalidation that empties the cache mid-transaction hands its
 *		memory to the transaction instead of freeing it
 *		(WatchCacheCallback).  An entry read for this statement only is
 *		copied whole.
 */
static RelWatches *
CopyWatches(Oid relid, CachedWatches *c, bool cached)
{
	RelWatches *rw;
	MemoryContext old;
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	int			k;

	for (k = 0; k < c->n; k++)
		LiveEdge(&c->entries[k], now);
	old = MemoryContextSwitchTo(TopTransactionContext);
	rw = (RelWatches *) hash_search(rel_watches, &relid, HASH_ENTER, NULL);
	HashKeysAdd(&rel_watches_keys, relid);
	rw->rows_loaded = false;
	rw->n = c->n;
	rw->entries = palloc0(sizeof(WatchEntry) * Max(c->n, 1));
	for (k = 0; k < c->n; k++)
	{
		WatchEntry *e = &rw->entries[k];

		if (cached)
			*e = c->entries[k];
		else
			CopyWatchEntry(e, &c->entries[k]);
		e->live_known = true;
		e->edge = e->has_watermark ? Max(e->watermark, e->live_edge) :
			e->live_edge;
		if (IsolationUsesXactSnapshot() || LogEverything(e->target))
			e->edge = DT_NOEND;
	}
	MemoryContextSwitchTo(old);
	watch_cache_shared |= cached;
	return rw;
}

/*
 * ReadWatches
 *		Read the targets watching relid (the relation or one of its
 *		partition ancestors; ids) into a new cache entry: first the
 *		targets, each target's watch lock taken, then the watches with
 *		their watermarks (as the extension owner), each with its time
 *		column's number in its source and its time zone loaded, which the
 *		row triggers would otherwise look up on every statement.  The entry is in the
 *		cache unless an invalidation came in while it was read (then in
 *		the caller's memory, for this statement only).
 */
static CachedWatches *
ReadWatches(Oid relid, Datum ids, bool *cached)
{
	Oid			argtypes[1] = {REGCLASSARRAYOID};
	Datum		values[1];
	uint64		gen;
	uint64		k;
	int			ntargets;
	Oid		   *targets;
	CachedWatches *c;
	CachedWatches *r;
	MemoryContext old;

	WatchCatalog(true);
	values[0] = ids;
	CatalogExec("SELECT DISTINCT target::pg_catalog.oid FROM backfill.watches"
				" WHERE source OPERATOR(pg_catalog.=) ANY ($1)"
				" ORDER BY 1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	ntargets = (int) SPI_processed;
	targets = palloc(sizeof(Oid) * Max(ntargets, 1));
	for (k = 0; k < SPI_processed; k++)
	{
		bool		isnull;

		targets[k] = SpiGetOid(k, 1, &isnull);
	}
	SPI_freetuptable(SPI_tuptable);
	for (k = 0; k < (uint64) ntargets; k++)
		TakeWatchLock(targets[k]);
	AcceptInvalidationMessages();
	gen = watch_cache_gen;

	CatalogExec("SELECT w.target::pg_catalog.oid, w.time_column::pg_catalog.text,"
				" w.timezone, d.chunk,"
				" COALESCE(t.watermark,"
				"  (SELECT pg_catalog.max(c.chunk_end) FROM backfill.chunks c"
				"    JOIN backfill.runs r ON r.run_id OPERATOR(pg_catalog.=) c.run_id"
				"   WHERE r.target OPERATOR(pg_catalog.=) t.target"
				"     AND c.status OPERATOR(pg_catalog.=) ANY ('{done,no_source}'::pg_catalog.text[]))),"
				" w.source::pg_catalog.oid, w.settle"
				" FROM backfill.watches w"
				" JOIN backfill.targets t ON t.target OPERATOR(pg_catalog.=) w.target"
				" JOIN backfill.definitions d ON d.target OPERATOR(pg_catalog.=) t.target"
				"  AND d.version OPERATOR(pg_catalog.=) t.current_version"
				" JOIN pg_catalog.pg_class k ON k.oid OPERATOR(pg_catalog.=) w.target::pg_catalog.oid"
				" WHERE w.source OPERATOR(pg_catalog.=) ANY ($1)"
				" ORDER BY 1",
				1, argtypes, values, NULL, SPI_OK_SELECT);

	/*
	 * Read into the caller's memory first: the values' copies and the
	 * lookups of each time column and zone may take in invalidations
	 * (a catalog cache miss opens its catalog), and one that empties the
	 * cache frees (or hands to the transaction) what was being filled in
	 * it.
	 */
	c = palloc(sizeof(CachedWatches));
	c->relid = relid;
	c->ntargets = ntargets;
	c->targets = targets;
	c->n = (int) SPI_processed;
	c->entries = palloc0(sizeof(WatchEntry) * Max(c->n, 1));
	for (k = 0; k < SPI_processed; k++)
	{
		WatchEntry *e = &c->entries[k];
		bool		isnull;
		Datum		d;

		e->target = SpiGetOid(k, 1, &isnull);
		e->time_column = SpiGetText(k, 2);
		e->timezone = SpiGetText(k, 3);
		e->chunk = DatumGetIntervalP(SpiGetDatumCopy(k, 4, &isnull));
		d = SpiGetDatumCopy(k, 5, &isnull);
		e->has_watermark = !isnull;
		if (!isnull)
			e->watermark = DatumGetTimestampTz(d);
		e->source = SpiGetOid(k, 6, &isnull);
		e->settle = DatumGetIntervalP(SpiGetDatumCopy(k, 7, &isnull));
		e->live_known = false;
		/* kept with the cache, which a change of the source empties */
		e->attnum = get_attnum(e->source, e->time_column);
		e->tz = pg_tzset(e->timezone);
	}
	SPI_freetuptable(SPI_tuptable);

	/*
	 * What was read is right for this transaction (its locks are held); it
	 * is cached unless an invalidation came in meanwhile, or it was read
	 * with a transaction snapshot (REPEATABLE READ, SERIALIZABLE): that is
	 * older than the invalidations already received (a watermark a build
	 * moved since, a watch added or removed), and later transactions would
	 * keep it (specs/watch_cache_snapshot.spec).  The copy into the cache
	 * looks nothing up.
	 */
	(void) WatchCache();
	*cached = gen == watch_cache_gen && !IsolationUsesXactSnapshot();
	if (!*cached)
		return c;
	old = MemoryContextSwitchTo(watch_cache_cxt);
	r = (CachedWatches *) hash_search(watch_cache, &relid, HASH_ENTER, NULL);
	r->ntargets = c->ntargets;
	r->targets = palloc(sizeof(Oid) * Max(c->ntargets, 1));
	memcpy(r->targets, c->targets, sizeof(Oid) * c->ntargets);
	r->n = c->n;
	r->entries = palloc0(sizeof(WatchEntry) * Max(c->n, 1));
	for (k = 0; k < (uint64) c->n; k++)
		CopyWatchEntry(&r->entries[k], &c->entries[k]);
	MemoryContextSwitchTo(old);
	return r;
}

/*
 * LoadRelWatches
 *		The targets watching relation relid (a watched source, or a
 *		partition of one), for this transaction, with each target's watch
 *		lock held and its watermark read after it: from the cache when its
 *		entry survives the invalidations received once the locks are held,
 *		else read (ReadWatches).
 */
RelWatches *
LoadRelWatches(Oid relid)
{
	RelWatches *rw;
	CachedWatches *c;
	bool		found;
	bool		cached;
	List	   *ancestors;
	int			i;

	if (rel_watches == NULL)
		rel_watches = WatchHash("backfill watches", sizeof(Oid),
								sizeof(RelWatches), 4, TopMemoryContext);
	rw = (RelWatches *) hash_search(rel_watches, &relid, HASH_FIND, &found);
	if (found)
		return rw;

	c = (CachedWatches *) hash_search(WatchCache(), &relid, HASH_FIND, &found);
	if (found)
	{
		uint64		gen = watch_cache_gen;

		for (i = 0; i < c->ntargets; i++)
			TakeWatchLock(c->targets[i]);
		AcceptInvalidationMessages();
		if (gen == watch_cache_gen)
			return CopyWatches(relid, c, true);
	}

	ancestors = lcons_oid(relid, get_partition_ancestors(relid));
	c = ReadWatches(relid, MakeOidArray(ancestors, REGCLASSOID), &cached);
	return CopyWatches(relid, c, cached);
}

/*
 * FindRelWatches
 *		The transaction's watches of relation relid if LoadRelWatches has
 *		loaded them, else NULL.  Reads memory only.
 */
RelWatches *
FindRelWatches(Oid relid)
{
	if (rel_watches == NULL)
		return NULL;
	return (RelWatches *) hash_search(rel_watches, &relid, HASH_FIND, NULL);
}

/*
 * ForgetRelWatches
 *		At the end of the transaction (xact_end) or of an aborted
 *		subtransaction, whose watch locks are released: forget the
 *		relations' watches loaded for it, and at the end of the transaction
 *		the targets it logs every row for (LogEverything).
 */
void
ForgetRelWatches(bool xact_end)
{
	ClearHashKeys(&rel_watches, &rel_watches_keys);
	if (xact_end)
	{
		log_everything = NIL;
		event_debts = NIL;
		watch_cache_shared = false;
	}
}

/*
 * WatchCatalog
 *		Before the trigger call first reads or writes backfill's catalog:
 *		the checks of every entry point that touches it (a Citus
 *		coordinator, the extension at the library's version), then, when
 *		spi (a catalog statement follows; an append of log rows needs
 *		none), a connection to SPI, which WatchTriggerFire closes.  A call
 *		that finds everything in memory (the cached watches of a row at
 *		the live edge) pays none of it: reading backfill's pg_extension
 *		row on the first statement of each transaction was about a tenth
 *		of a single-row transaction at the live edge (bench/RESULTS.md,
 *		issue 30).  The version is checked once while the backend's cache
 *		of watches lives (catalog_version_ok), not on every write:
 *		pg_extension sends no invalidation when ALTER EXTENSION UPDATE
 *		changes it, but every upgrade script ends by invalidating
 *		backfill.watches (src/sql/99_update_signal.sql), which empties the
 *		cache here as it does everywhere, and the next write checks again.
 *		It was a fifth of a single-row transaction into built days.
 */
void
WatchCatalog(bool spi)
{
	if (!catalog_checked)
	{
		CitusRequireCoordinator();
		if (!catalog_version_ok || watch_cache == NULL)
		{
			RequireCatalogVersion();
			catalog_version_ok = watch_cache != NULL;
		}
		catalog_checked = true;
	}
	if (spi && !catalog_open)
	{
		SpiConnect();
		catalog_open = true;
	}
}

/*
 * WatchCatalogBegin
 *		At the start of a trigger call: no catalog check made and no SPI
 *		connection yet (WatchCatalog); *checked and *open get the state of
 *		an enclosing call (never yet: a call made inside a catalog statement
 *		of another one), which WatchCatalogEnd gives back.
 */
void
WatchCatalogBegin(bool *checked, bool *open)
{
	*checked = catalog_checked;
	*open = catalog_open;
	catalog_checked = false;
	catalog_open = false;
}

/*
 * WatchCatalogEnd
 *		At the end of a trigger call: close the SPI connection WatchCatalog
 *		opened, if it did, and give back the state of an enclosing call
 *		(WatchCatalogBegin's).
 */
void
WatchCatalogEnd(bool checked, bool open)
{
	if (catalog_open)
		SpiFinish();
	catalog_checked = checked;
	catalog_open = open;
}

/* ----------------------------------------------------------------
 *		who may note a source's rows, and the rows left to their events
 * ----------------------------------------------------------------
 */

/*
 * ColumnIsWatched
 *		Whether column attnum of source is the time column of a watch of
 *		source or of a partitioned table above it (by name: a partition's
 *		numbers may differ), read from the catalog without taking any watch
 *		lock.  The column a _watch_row call passes is the caller's to
 *		choose (a constant, or the column of a table of its own in the
 *		tableoid form): INSERT on a column no watch uses lets no row choose
 *		its time, and must not load the watches (their watch locks).
 */
static bool
ColumnIsWatched(Oid source, AttrNumber attnum)
{
	Oid			argtypes[2] = {REGCLASSARRAYOID, TEXTOID};
	Datum		values[2];
	char	   *name = get_attname(source, attnum, true);
	bool		save_checked;
	bool		save_open;
	bool		watched;

	if (name == NULL)
		return false;
	values[0] = MakeOidArray(lcons_oid(source, get_partition_ancestors(source)),
							 REGCLASSOID);
	values[1] = CStringGetTextDatum(name);
	WatchCatalogBegin(&save_checked, &save_open);
	WatchCatalog(true);
	CatalogExec("SELECT 1 FROM backfill.watches"
				" WHERE source OPERATOR(pg_catalog.=) ANY ($1)"
				" AND time_column::pg_catalog.text OPERATOR(pg_catalog.=) $2"
				" LIMIT 1",
				2, argtypes, values, NULL, SPI_OK_SELECT);
	watched = SPI_processed > 0;
	SPI_freetuptable(SPI_tuptable);
	WatchCatalogEnd(save_checked, save_open);
	return watched;
}

/*
 * RowMayNoteCheck
 *		Whether a _watch_row call on source, for its time
 *		column (column, by number or by name as coltype says), may load the
 *		source's watches and note rows itself: the current user may write
 *		rows there (USAGE on the source's schema, and INSERT on the table
 *		or on that column; *table: on the table).  Such a user could take the watch locks and
 *		mark the target's chunks by writing rows there anyway; anyone
 *		else's call (a direct one, or the WHEN clause of an INSERT made
 *		through a view whose owner holds the rights, or straight into a
 *		partition by a role with rights on it only) notes nothing and
 *		leaves the row to its event, which fires only once the statement's
 *		rights were checked.  A lock on the source is no such proof:
 *		PREPARE of an INSERT takes RowExclusiveLock before any check of
 *		rights.  INSERT on another column is none either: no row could
 *		choose its time (attack review of issue 30).
 */
static bool
RowMayNoteCheck(Oid source, Oid coltype, Datum column, bool *table)
{
	Oid			nsp = get_rel_namespace(source);
	Oid			user = GetUserId();
	AttrNumber	attnum;

	*table = false;
	if (!OidIsValid(nsp) ||
		NamespaceAclCheck(nsp, user, ACL_USAGE) != ACLCHECK_OK)
		return false;
	if (pg_class_aclcheck(source, user, ACL_INSERT) == ACLCHECK_OK)
	{
		*table = true;
		return true;
	}
	attnum = coltype == INT2OID ? DatumGetInt16(column) :
		get_attnum(source, NameStr(*DatumGetName(column)));
	return attnum > 0 &&
		pg_attribute_aclcheck(source, attnum, user, ACL_INSERT) == ACLCHECK_OK &&
		ColumnIsWatched(source, attnum);
}

/*
 * MayNoteForget
 *		Syscache invalidation callback (schemas, roles, role memberships,
 *		databases): forget RowMayNote's last answer.
 */
static void
MayNoteForget(Datum arg, int cacheid, uint32 hashvalue)
{
	may_note.valid = false;
	may_note_gen++;
}

/*
 * RowMayNote
 *		See backfill.h, and RowMayNoteCheck: its last answer again while
 *		no catalog change could have altered it (may_note), for the same
 *		user, source and column.
 */
bool
RowMayNote(Oid source, Oid coltype, Datum column, bool *table)
{
	Oid			user = GetUserId();
	uint64		gen;
	bool		may;

	if (may_note.valid && may_note.user == user && may_note.source == source &&
		may_note.coltype == coltype &&
		(coltype == INT2OID ? may_note.colnum == DatumGetInt16(column) :
		 strcmp(NameStr(may_note.colname), NameStr(*DatumGetName(column))) == 0))
	{
		*table = may_note.table;
		return may_note.may;
	}
	if (!may_note_callbacks)
	{
		(void) WatchCache();	/* its relcache callback forgets too */
		CacheRegisterSyscacheCallback(NAMESPACEOID, MayNoteForget, (Datum) 0);
		CacheRegisterSyscacheCallback(AUTHOID, MayNoteForget, (Datum) 0);
		CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, MayNoteForget, (Datum) 0);
		CacheRegisterSyscacheCallback(DATABASEOID, MayNoteForget, (Datum) 0);
		may_note_callbacks = true;
	}
	may_note.valid = false;
	gen = may_note_gen;
	may = RowMayNoteCheck(source, coltype, column, table);
	/*
	 * ColumnIsWatched reads backfill.watches with the transaction's
	 * snapshot, which under REPEATABLE READ predates the invalidations
	 * already received: its answer is this transaction's only
	 * (specs/watch_cache_snapshot.spec)
	 */
	if (gen != may_note_gen || IsolationUsesXactSnapshot())
		return may;
	may_note.user = user;
	may_note.source = source;
	may_note.coltype = coltype;
	if (coltype == INT2OID)
		may_note.colnum = DatumGetInt16(column);
	else
		namestrcpy(&may_note.colname, NameStr(*DatumGetName(column)));
	may_note.table = *table;
	may_note.may = may;
	may_note.valid = true;
	return may;
}

/*
 * AddEventDebt
 *		See backfill.h: a row of source left its noting to its event
 *		(event_debts).
 */
void
AddEventDebt(Oid source)
{
	MemoryContext old;

	if (list_member_oid(event_debts, source))
		return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	event_debts = lappend_oid(event_debts, source);
	MemoryContextSwitchTo(old);
}

/*
 * EventDebtsPending
 *		See backfill.h: whether some row of this transaction left its
 *		noting to its event.  Reads memory only.
 */
bool
EventDebtsPending(void)
{
	return event_debts != NIL;
}

/*
 * HasEventDebt
 *		See backfill.h: whether a row of source of this transaction left
 *		its noting to its event (event_debts).
 */
bool
HasEventDebt(Oid source)
{
	return list_member_oid(event_debts, source);
}
