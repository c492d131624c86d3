/*-------------------------------------------------------------------------
 *
 * watchlog.c
 *	  Changed regions: the work of the triggers watch.c installs on a
 *	  watched source, with the watches watchcache.c loads: they record
 *	  which of the target's chunks a write touched
 *	  (backfill.changed_regions); and the reader of those records for
 *	  stale plans (cascade.c).
 *
 * A write is recorded behind each watch's edge: the later of the
 * target's watermark (the newest chunk end backfill built) and the watch's
 * live edge (the start of the chunk that contains now - settle: every
 * chunk before it has ended at least settle ago and counts as built, by
 * backfill or by the job that fills the table; LiveEdge, kept with the
 * cached watch until the next chunk boundary).  A target that backfill
 * never built is followed too (issue 29).
 *
 * The BEFORE INSERT statement trigger loads the source's watches for the
 * transaction (the watch locks, then the watermarks and edges:
 * LoadRowSources), and the INSERT row trigger's WHEN clause,
 * backfill._watch_row, reads only what it loaded (called any other way, it
 * finds nothing and does nothing).  A row at or beyond every edge costs
 * one comparison (RowCall.fast); a row behind one has its time mapped to
 * the target's chunk (ChunkCell, in the watch's TimeZone; a row in the
 * chunk of the row before it costs one more comparison) and a chunk this
 * transaction has not logged yet is noted as pending.  The WHEN clause is
 * true for the first row of its statement that notes a chunk, and only for
 * it: PostgreSQL then queues that row's event, which fires at the end of
 * the statement and writes every pending chunk (FlushPending), as every
 * AFTER statement trigger does first.  A statement whose rows note nothing
 * (the live edge) queues no event at all: there is no AFTER INSERT
 * statement trigger (issue 30: it was the dearest part of a single-row
 * transaction at the live edge after the WHEN clause itself).
 *
 * The transition tables (of UPDATE and DELETE) are read once per watching
 * target, in C, as the writer, the same way.  The chunks this transaction
 * has not logged yet are appended to backfill.changed_regions without SQL
 * (WriteChangedRegions, CatalogAppendRows: a transaction of single-row
 * INSERTs into built days paid more for planning and running the catalog
 * INSERT as the extension owner than for its own row).  A per-transaction hash
 * (TopTransactionContext) remembers the noted and logged (target, chunk)
 * pairs, so the log grows by at most one row per (target, chunk) per
 * transaction; a rolled-back subtransaction forgets its own pairs (and a
 * pair it wrote for its parent is pending again).
 *
 *-------------------------------------------------------------------------
 */

#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "backfill.h"

/* A (target, chunk) noted or logged by this transaction. */
typedef struct LoggedKey
{
	Oid			target;
	TimestampTz start;			/* DT_NOBEGIN: a TRUNCATE was logged */
} LoggedKey;

typedef struct LoggedEntry
{
	LoggedKey	key;
	SubTransactionId subid;		/* the subtransaction that noted it */
	bool		pending;		/* noted by _watch_row, not written yet */
	SubTransactionId written;	/* the subtransaction that wrote it */
	TimestampTz end;			/* pending: the chunk's end */
	Oid			source;			/* pending: the watched source */
} LoggedEntry;

/*
 * The watches of one watched source, for its INSERT row triggers: loaded
 * by the BEFORE INSERT statement trigger of the source or of one of its
 * partitions, with the watch locks taken in subtransaction subid.
 */
typedef struct RowSource
{
	Oid			source;			/* hash key */
	SubTransactionId subid;
	int			n;
	WatchEntry *entries;
} RowSource;

/*
 * What one _watch_row call site (one WHEN clause in one statement) keeps
 * in fn_extra: the watches of its source by its column, valid while gen
 * equals row_state_gen.  A value at or beyond fast (in the column's own
 * representation: timestamps, a date as its midnight) is beyond every
 * watermark.
 */
typedef struct RowItem
{
	WatchEntry *w;
	pg_tz	   *tz;				/* the watch's TimeZone */
	int64		limit;			/* at or beyond: beyond w's edge */
	TimestampTz lo;				/* the chunk noted last */
	TimestampTz hi;
} RowItem;

typedef struct RowCall
{
	uint64		gen;
	bool		queued;			/* returned true once: its row's event will
								 * write what is pending */
	Oid			coltype;		/* the column: INT2OID (attnum) or NAMEOID */
	Oid			argtype;		/* TIMESTAMPTZOID, TIMESTAMPOID or DATEOID */
	int64		fast;
	int			n;
	RowItem    *items;
} RowCall;

/*
 * The per-transaction hashes: made once in watch_state_cxt and emptied at
 * the end of each transaction (ClearHash), since making three hashes (each
 * a memory context of its own) on every transaction of single-row INSERTs
 * was a noticeable part of its cost (bench/RESULTS.md, issue 30).  What
 * their entries point to is in TopTransactionContext.
 */
static MemoryContext watch_state_cxt = NULL;
static HTAB *logged = NULL;		/* LoggedEntry */
static HTAB *row_sources = NULL;	/* RowSource */
static int	npending = 0;		/* LoggedEntry pending in logged */
static uint64 row_state_gen = 0;	/* changes when row_sources does */
static bool callbacks_registered = false;

/*
 * WatchXactCallback
 *		At the end of a transaction what the hashes point to is gone with
 *		TopTransactionContext: empty them.
 */
static void
WatchXactCallback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT || event == XACT_EVENT_PREPARE)
	{
		ClearHash(&logged);
		ForgetRelWatches(true);
		ClearHash(&row_sources);
		npending = 0;
		row_state_gen++;
	}
}

/*
 * WatchSubXactCallback
 *		A committed subtransaction hands its noted and logged pairs and its
 *		loaded sources to its parent; an aborted one forgets the pairs it
 *		noted (its rows and log rows are rolled back), makes the pairs it
 *		wrote for its parent pending again, and forgets the watches it read
 *		(its watch locks are released).
 */
static void
WatchSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	HASH_SEQ_STATUS seq;
	bool		abort = event == SUBXACT_EVENT_ABORT_SUB;

	if (event != SUBXACT_EVENT_COMMIT_SUB && !abort)
		return;
	if (abort)
		ForgetRelWatches(false);
	if (row_sources != NULL)
	{
		RowSource  *rs;

		hash_seq_init(&seq, row_sources);
		while ((rs = (RowSource *) hash_seq_search(&seq)) != NULL)
		{
			if (rs->subid != mySubid)
				continue;
			if (abort)
			{
				(void) hash_search(row_sources, &rs->source, HASH_REMOVE, NULL);
				row_state_gen++;
			}
			else
				rs->subid = parentSubid;
		}
	}
	if (logged != NULL)
	{
		LoggedEntry *e;

		hash_seq_init(&seq, logged);
		while ((e = (LoggedEntry *) hash_seq_search(&seq)) != NULL)
		{
			if (e->subid == mySubid)
			{
				if (!abort)
					e->subid = parentSubid;
				else
				{
					if (e->pending)
						npending--;
					(void) hash_search(logged, &e->key, HASH_REMOVE, NULL);
					continue;
				}
			}
			if (e->written == mySubid && !e->pending)
			{
				if (!abort)
					e->written = parentSubid;
				else
				{
					/* noted by a parent, written here: write it again */
					e->pending = true;
					npending++;
				}
			}
		}
	}
}

/*
 * WatchState
 *		The per-transaction hashes, made on first use (in watch_state_cxt,
 *		kept across transactions: ClearHash).
 */
static void
WatchState(void)
{
	if (!callbacks_registered)
	{
		watch_state_cxt = AllocSetContextCreate(TopMemoryContext,
												"backfill watch state",
												ALLOCSET_SMALL_SIZES);
		RegisterXactCallback(WatchXactCallback, NULL);
		RegisterSubXactCallback(WatchSubXactCallback, NULL);
		callbacks_registered = true;
	}
	if (logged == NULL)
	{
		logged = WatchHash("backfill logged chunks", sizeof(LoggedKey),
						   sizeof(LoggedEntry), 64, watch_state_cxt);
		npending = 0;
	}
	if (row_sources == NULL)
	{
		row_sources = WatchHash("backfill row sources", sizeof(Oid),
								sizeof(RowSource), 16, watch_state_cxt);
		row_state_gen++;
	}
}

/* ----------------------------------------------------------------
 *		the trigger
 * ----------------------------------------------------------------
 */

/*
 * WriteChangedRegions
 *		Write m rows of backfill.changed_regions (target, chunk start and
 *		end, source; changed now()) in the caller's transaction: appended
 *		without SQL (CatalogAppendRows) when the table allows it, else in
 *		one INSERT as the extension owner.
 */
static void
WriteChangedRegions(int m, const Datum *targets, const Datum *starts,
					const Datum *ends, const Datum *sources)
{
	Datum	   *row = palloc(sizeof(Datum) * 5 * Max(m, 1));
	bool	   *nulls = palloc0(sizeof(bool) * 5 * Max(m, 1));
	bool	   *no_source = palloc0(sizeof(bool) * Max(m, 1));
	Datum		now = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	Oid			argtypes[4] = {REGCLASSARRAYOID, TIMESTAMPTZARRAYOID,
	TIMESTAMPTZARRAYOID, REGCLASSARRAYOID};
	Datum		values[4];
	int			i;

	for (i = 0; i < m; i++)
	{
		if (DatumGetTimestampTz(starts[i]) >= DatumGetTimestampTz(ends[i]))
			elog(ERROR, "backfill: empty changed chunk");
		row[i * 5] = targets[i];
		row[i * 5 + 1] = starts[i];
		row[i * 5 + 2] = ends[i];
		row[i * 5 + 3] = now;
		row[i * 5 + 4] = sources[i];
		no_source[i] = !OidIsValid(DatumGetObjectId(sources[i]));
		nulls[i * 5 + 4] = no_source[i];
	}
	WatchCatalog(false);
	if (CatalogAppendRows("changed_regions", 5, m, row, nulls))
		return;
	WatchCatalog(true);
	values[0] = MakeArray((Datum *) targets, NULL, m, REGCLASSOID);
	values[1] = MakeArray((Datum *) starts, NULL, m, TIMESTAMPTZOID);
	values[2] = MakeArray((Datum *) ends, NULL, m, TIMESTAMPTZOID);
	values[3] = MakeArray((Datum *) sources, no_source, m, REGCLASSOID);
	CatalogExec("INSERT INTO backfill.changed_regions"
				" (target, chunk_start, chunk_end, changed_at, source)"
				" SELECT u.t, u.s, u.e, pg_catalog.now(), u.src"
				" FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2),"
				"  pg_catalog.unnest($3), pg_catalog.unnest($4)) AS u(t, s, e, src)",
				4, argtypes, values, NULL, SPI_OK_INSERT);
}

/*
 * LoggedEnter
 *		The entry of (target, chunk start) in this transaction's noted and
 *		logged chunks; *found says whether it was there, and a new one is
 *		marked as noted by the current subtransaction.
 */
static LoggedEntry *
LoggedEnter(Oid target, TimestampTz start, bool *found)
{
	LoggedKey	key;
	LoggedEntry *entry;

	memset(&key, 0, sizeof(key));
	key.target = target;
	key.start = start;
	entry = (LoggedEntry *) hash_search(logged, &key, HASH_ENTER, found);
	if (!*found)
		entry->subid = GetCurrentSubTransactionId();
	return entry;
}

/*
 * LogNewCells
 *		Insert the cells [starts[i], ends[i]) of target that this
 *		transaction has not logged yet (or only noted as pending), in one
 *		catalog statement.
 */
static void
LogNewCells(Oid target, Oid source, TimestampTz *starts, TimestampTz *ends,
			int n)
{
	Datum	   *s = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *e = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *t = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *src = palloc(sizeof(Datum) * Max(n, 1));
	int			m = 0;
	int			i;

	for (i = 0; i < n; i++)
	{
		LoggedEntry *entry;
		bool		found;

		entry = LoggedEnter(target, starts[i], &found);
		if (found && !entry->pending)
			continue;
		if (found)
		{
			/* noted by _watch_row, written here (with this source) */
			entry->pending = false;
			npending--;
		}
		entry->written = GetCurrentSubTransactionId();
		s[m] = TimestampTzGetDatum(starts[i]);
		e[m] = TimestampTzGetDatum(ends[i]);
		m++;
	}
	if (m == 0)
		return;
	for (i = 0; i < m; i++)
	{
		t[i] = ObjectIdGetDatum(target);
		src[i] = ObjectIdGetDatum(source);
	}
	WriteChangedRegions(m, t, s, e, src);
}

/*
 * LogTruncate
 *		A TRUNCATE of a watched source changes every chunk of the target
 *		before the edge, whoever built it: one region from -infinity to the
 *		edge is logged (once per transaction), not a row per chunk; a stale
 *		plan takes the chunks of it that backfill built or that hold rows,
 *		and each build consumes its own part.
 */
static void
LogTruncate(WatchEntry *w, Oid source)
{
	bool		found;
	Oid			argtypes[3] = {REGCLASSOID, TIMESTAMPTZOID, REGCLASSOID};
	Datum		values[3];
	LoggedEntry *entry;

	entry = LoggedEnter(w->target, DT_NOBEGIN, &found);
	if (found)
		return;
	entry->pending = false;
	entry->written = entry->subid;
	if (TIMESTAMP_IS_NOBEGIN(w->edge))
		return;
	WatchCatalog(true);
	values[0] = ObjectIdGetDatum(w->target);
	values[1] = TimestampTzGetDatum(w->edge);
	values[2] = ObjectIdGetDatum(source);
	CatalogExec("INSERT INTO backfill.changed_regions"
				" (target, chunk_start, chunk_end, changed_at, source)"
				" VALUES ($1, '-infinity', $2, pg_catalog.now(), $3)",
				3, argtypes, values, NULL, SPI_OK_INSERT);
}

/*
 * RowTime
 *		The time of a transition row's watched column as timestamptz (a
 *		timestamp or date read in the session TimeZone); false for NULL or
 *		a value out of timestamptz's range.
 */
static bool
RowTime(TupleTableSlot *slot, AttrNumber attnum, Oid basetype,
		TimestampTz *t)
{
	bool		isnull;
	Datum		d = slot_getattr(slot, attnum, &isnull);
	int			overflow = 0;

	if (isnull)
		return false;
	if (basetype == TIMESTAMPOID)
		*t = BackfillTimestampToTimestamptz(DatumGetTimestamp(d), &overflow);
	else if (basetype == DATEOID)
		*t = BackfillDateToTimestamptz(DatumGetDateADT(d), &overflow);
	else
		*t = DatumGetTimestampTz(d);
	return overflow == 0 && !TIMESTAMP_NOT_FINITE(*t);
}

/*
 * ScanTransitionTable
 *		Add the chunks of the rows of one transition table that lie behind
 *		w's edge to cells (starts/ends, *n of them, room for *room),
 *		reading the tuplestore with a read pointer of its own, as a scan of
 *		the table in a query would.  A row in the same chunk as the row
 *		before it costs one comparison; ChunkCell is computed only when a
 *		row leaves the last chunk found.
 */
static void
ScanTransitionTable(Tuplestorestate *ts, TupleDesc tupdesc, AttrNumber attnum,
					Oid basetype, WatchEntry *w, TimestampTz **starts,
					TimestampTz **ends, int *n, int *room)
{
	TupleTableSlot *slot = MakeSingleTupleTableSlot(tupdesc, &TTSOpsMinimalTuple);
	int			ptr = tuplestore_alloc_read_pointer(ts, EXEC_FLAG_REWIND);
	TimestampTz lo = DT_NOEND;
	TimestampTz hi = DT_NOBEGIN;

	tuplestore_copy_read_pointer(ts, 0, ptr);
	tuplestore_select_read_pointer(ts, ptr);
	tuplestore_rescan(ts);
	while (tuplestore_gettupleslot(ts, true, false, slot))
	{
		TimestampTz t;
		int			k;
		bool		seen = false;

		CHECK_FOR_INTERRUPTS();
		if (!RowTime(slot, attnum, basetype, &t) || t >= w->edge)
			continue;
		if (t >= lo && t < hi)
			continue;
		ChunkCell(t, w->chunk, &lo, &hi);
		for (k = *n - 1; k >= 0 && k >= *n - 8; k--)
			if ((*starts)[k] == lo)
				seen = true;
		if (seen)
			continue;
		if (*n >= *room)
		{
			*room *= 2;
			*starts = repalloc(*starts, sizeof(TimestampTz) * *room);
			*ends = repalloc(*ends, sizeof(TimestampTz) * *room);
		}
		(*starts)[*n] = lo;
		(*ends)[*n] = hi;
		(*n)++;
	}
	tuplestore_select_read_pointer(ts, 0);
	ExecDropSingleTupleTableSlot(slot);
}

/*
 * WatchedColumn
 *		The attribute number of w's time column in rel (the source or one
 *		of its partitions) and its base type; 42703 when the column is
 *		gone or no longer of a time type (renamed, dropped), so that
 *		writes fail rather than silently record nothing.
 */
static AttrNumber
WatchedColumn(Relation rel, WatchEntry *w, Oid *basetype)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	AttrNumber	attnum = InvalidAttrNumber;
	int			k;

	/* where it stands in the source, as in most partitions; else a scan */
	k = w->attnum - 1;
	if (k >= 0 && k < tupdesc->natts &&
		!TupleDescAttr(tupdesc, k)->attisdropped &&
		strcmp(NameStr(TupleDescAttr(tupdesc, k)->attname), w->time_column) == 0)
		attnum = w->attnum;
	for (k = 0; k < tupdesc->natts && attnum == InvalidAttrNumber; k++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, k);

		if (!att->attisdropped && strcmp(NameStr(att->attname), w->time_column) == 0)
			attnum = att->attnum;
	}
	*basetype = attnum == InvalidAttrNumber ? InvalidOid :
		getBaseType(TupleDescAttr(tupdesc, attnum - 1)->atttypid);
	if (*basetype != TIMESTAMPTZOID && *basetype != TIMESTAMPOID &&
		*basetype != DATEOID)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("watched column \"%s\" of relation %s does not exist",
						w->time_column, QualifiedRelName(w->source)),
				 errdetail("A target watches this table by that column (of a time type); its changes cannot be recorded."),
				 errhint("Run backfill.watch again with the column's new name, or backfill.unwatch.")));
	return attnum;
}

/*
 * LogRows
 *		The chunks of target w that the rows of the statement's transition
 *		tables touched behind its edge, each row's time mapped to its
 *		chunk (ChunkCell) in the watch's TimeZone, and the chunks this
 *		transaction has not logged yet written (WriteChangedRegions).
 *		The transition tables are read in C, as the writer, row by row:
 *		no query is planned per statement, and nothing is written per row.
 */
static void
LogRows(WatchEntry *w, Oid source, TriggerData *trigdata)
{
	Relation	rel = trigdata->tg_relation;
	TupleDesc	tupdesc = RelationGetDescr(rel);
	AttrNumber	attnum;
	Oid			basetype;
	int			nest;
	int			n = 0;
	int			room = 16;
	TimestampTz *starts = palloc(sizeof(TimestampTz) * room);
	TimestampTz *ends = palloc(sizeof(TimestampTz) * room);

	attnum = WatchedColumn(rel, w, &basetype);

	/* the watch's TimeZone for the timestamp and date columns and the grid */
	nest = EnterZone(w->timezone);
	if (trigdata->tg_oldtable != NULL)
		ScanTransitionTable(trigdata->tg_oldtable, tupdesc, attnum, basetype,
							w, &starts, &ends, &n, &room);
	if (trigdata->tg_newtable != NULL)
		ScanTransitionTable(trigdata->tg_newtable, tupdesc, attnum, basetype,
							w, &starts, &ends, &n, &room);
	LeaveZone(nest);
	if (n > 0)
		LogNewCells(w->target, source, starts, ends, n);
}

/*
 * FlushPending
 *		Write the chunks noted as pending by _watch_row (of every source and
 *		target: WriteChangedRegions), and remember them as written by
 *		this subtransaction.  Called first by every AFTER statement trigger.
 */
static void
FlushPending(void)
{
	HASH_SEQ_STATUS seq;
	LoggedEntry *e;
	Datum	   *t;
	Datum	   *s;
	Datum	   *en;
	Datum	   *src;
	int			m = 0;

	if (logged == NULL || npending <= 0)
		return;
	t = palloc(sizeof(Datum) * npending);
	s = palloc(sizeof(Datum) * npending);
	en = palloc(sizeof(Datum) * npending);
	src = palloc(sizeof(Datum) * npending);
	hash_seq_init(&seq, logged);
	while ((e = (LoggedEntry *) hash_seq_search(&seq)) != NULL)
	{
		if (!e->pending || m >= npending)
			continue;
		t[m] = ObjectIdGetDatum(e->key.target);
		s[m] = TimestampTzGetDatum(e->key.start);
		en[m] = TimestampTzGetDatum(e->end);
		src[m] = ObjectIdGetDatum(e->source);
		e->pending = false;
		e->written = GetCurrentSubTransactionId();
		m++;
	}
	npending = 0;
	if (m == 0)
		return;
	WriteChangedRegions(m, t, s, en, src);
}

/*
 * LoadRowSources
 *		The BEFORE INSERT statement trigger of rel (a watched source or a
 *		partition of one): its watches for this transaction, with the watch
 *		locks taken and the watermarks read after them (LoadRelWatches),
 *		kept by watched source for the source's row triggers (_watch_row),
 *		once each watched column is found in rel (WatchedColumn).
 */
static void
LoadRowSources(Relation rel)
{
	RelWatches *rw = LoadRelWatches(RelationGetRelid(rel));
	int			i;

	if (rw->rows_loaded)
		return;
	rw->rows_loaded = true;
	for (i = 0; i < rw->n; i++)
	{
		Oid			source = rw->entries[i].source;
		RowSource  *rs;
		bool		found;
		int			j;

		rs = (RowSource *) hash_search(row_sources, &source, HASH_ENTER, &found);
		if (found)
			continue;
		rs->subid = GetCurrentSubTransactionId();
		rs->n = 0;
		rs->entries = MemoryContextAlloc(TopTransactionContext,
										 sizeof(WatchEntry) * rw->n);
		row_state_gen++;
		for (j = 0; j < rw->n; j++)
		{
			Oid			basetype;

			if (rw->entries[j].source != source)
				continue;
			(void) WatchedColumn(rel, &rw->entries[j], &basetype);
			rs->entries[rs->n++] = rw->entries[j];
		}
	}
}

/*
 * RowCallSetup
 *		What a _watch_row call site keeps (RowCall, in fn_mcxt): the loaded
 *		watches of source whose time column is column (its attribute number
 *		in source or its name, by the function's signature), each with the
 *		limit from which a value (in the column's type argtype) is beyond its
 *		edge: the edge itself for timestamptz; for timestamp and date, the
 *		edge's local time in the watch's TimeZone plus a day
 *		(more than any change of a zone's offset: the values in that day are
 *		converted and compared exactly).  No watches loaded, or no column of
 *		source by that number: nothing.  It runs once per statement: the
 *		argument types come from the call's expression, the column's number
 *		and the zone from the cached watches (no catalog lookup).
 */
static RowCall *
RowCallSetup(FmgrInfo *flinfo, Oid source, Datum column)
{
	RowCall    *rc = (RowCall *) flinfo->fn_extra;
	RowSource  *rs = NULL;
	int			i;

	if (rc == NULL)
	{
		Oid			coltype = get_fn_expr_argtype(flinfo, 1);
		Oid			argtype = get_fn_expr_argtype(flinfo, 2);

		/* the argument types of the call, which match its signature */
		if ((coltype != INT2OID && coltype != NAMEOID) ||
			(argtype != TIMESTAMPTZOID && argtype != TIMESTAMPOID &&
			 argtype != DATEOID))
		{
			Oid		   *argtypes;
			int			nargs;

			(void) get_func_signature(flinfo->fn_oid, &argtypes, &nargs);
			if (nargs != 3 ||
				(argtypes[1] != INT2OID && argtypes[1] != NAMEOID) ||
				(argtypes[2] != TIMESTAMPTZOID && argtypes[2] != TIMESTAMPOID &&
				 argtypes[2] != DATEOID))
				elog(ERROR, "backfill._watch_row takes a regclass, an int2 or a name, and a time");
			coltype = argtypes[1];
			argtype = argtypes[2];
		}
		rc = MemoryContextAllocZero(flinfo->fn_mcxt, sizeof(RowCall));
		rc->coltype = coltype;
		rc->argtype = argtype;
		flinfo->fn_extra = rc;
	}
	rc->gen = row_state_gen;
	rc->fast = DT_NOBEGIN;
	rc->n = 0;
	if (row_sources != NULL)
		rs = (RowSource *) hash_search(row_sources, &source, HASH_FIND, NULL);
	if (rs == NULL)
		return rc;
	if (rc->items == NULL)
		rc->items = MemoryContextAlloc(flinfo->fn_mcxt, sizeof(RowItem) * rs->n);
	else
		rc->items = repalloc(rc->items, sizeof(RowItem) * rs->n);
	for (i = 0; i < rs->n; i++)
	{
		WatchEntry *w = &rs->entries[i];
		RowItem    *it;

		if (rc->coltype == INT2OID ?
			w->attnum != DatumGetInt16(column) :
			strcmp(w->time_column, NameStr(*DatumGetName(column))) != 0)
			continue;
		it = &rc->items[rc->n++];
		it->w = w;
		it->lo = DT_NOEND;
		it->hi = DT_NOBEGIN;
		it->tz = w->tz;
		if (it->tz == NULL)
			elog(ERROR, "could not load time zone \"%s\"", w->timezone);
		if (rc->argtype == TIMESTAMPTZOID || TIMESTAMP_NOT_FINITE(w->edge))
			it->limit = w->edge;
		else
		{
			struct pg_tm tm;
			fsec_t		fsec;
			int			tzoff;
			Timestamp	local;

			if (timestamp2tm(w->edge, &tzoff, &tm, &fsec, NULL, it->tz) != 0 ||
				tm2timestamp(&tm, fsec, NULL, &local) != 0)
				local = DT_NOBEGIN;
			it->limit = TIMESTAMP_NOT_FINITE(local) ? local : local + USECS_PER_DAY;
		}
		rc->fast = Max(rc->fast, it->limit);
	}
	return rc;
}

/*
 * RowValueTime
 *		A row's time value (of type argtype) as timestamptz, a timestamp or
 *		date read in zone tz; false for a value out of timestamptz's range.
 *		The session's zone is swapped only around conversions that cannot
 *		raise an error.
 */
static bool
RowValueTime(Datum value, Oid argtype, pg_tz *tz, TimestampTz *t)
{
	int			overflow = 0;
	pg_tz	   *save = session_timezone;

	if (argtype == TIMESTAMPTZOID)
		*t = DatumGetTimestampTz(value);
	else
	{
		session_timezone = tz;
		if (argtype == TIMESTAMPOID)
			*t = BackfillTimestampToTimestamptz(DatumGetTimestamp(value), &overflow);
		else
			*t = BackfillDateToTimestamptz(DatumGetDateADT(value), &overflow);
		session_timezone = save;
	}
	return overflow == 0 && !TIMESTAMP_NOT_FINITE(*t);
}

/*
 * NotePending
 *		Note the chunk [lo, hi) of target as changed by a row of source,
 *		unless this transaction has noted or logged it already; whether it
 *		was noted now.
 */
static bool
NotePending(Oid target, Oid source, TimestampTz lo, TimestampTz hi)
{
	LoggedEntry *entry;
	bool		found;

	entry = LoggedEnter(target, lo, &found);
	if (found)
		return false;
	entry->pending = true;
	entry->written = InvalidSubTransactionId;
	entry->end = hi;
	entry->source = source;
	npending++;
	return true;
}

/*
 * WatchRowNote
 *		See backfill.h: the work of backfill._watch_row(source, column,
 *		value), the WHEN clause of an INSERT row trigger, for one row.  A
 *		value at or beyond every edge costs one comparison; behind
 *		one, the row's chunk is noted as pending unless it is the chunk this
 *		call site noted last.  True for the first row of this call site (of
 *		its statement) that noted a chunk: that row's event writes the
 *		pending chunks at the end of the statement.  Only the watches the
 *		source's BEFORE INSERT statement trigger loaded in this transaction
 *		are read: called any other way, it does nothing.
 */
bool
WatchRowNote(FmgrInfo *flinfo, Oid source, Datum column, Datum value)
{
	RowCall    *rc = (RowCall *) flinfo->fn_extra;
	int64		v;
	int			i;
	bool		noted = false;

	if (rc == NULL || rc->gen != row_state_gen)
		rc = RowCallSetup(flinfo, source, column);
	if (rc->n == 0)
		return false;
	if (rc->argtype == DATEOID)
	{
		DateADT		d = DatumGetDateADT(value);

		if (DATE_NOT_FINITE(d))
			return false;
		v = (int64) d * USECS_PER_DAY;
	}
	else
		v = DatumGetInt64(value);
	if (v >= rc->fast)
		return false;

	for (i = 0; i < rc->n; i++)
	{
		RowItem    *it = &rc->items[i];
		WatchEntry *w = it->w;
		TimestampTz t;
		TimestampTz lo;
		TimestampTz hi;
		int			nest;

		if (v >= it->limit || !RowValueTime(value, rc->argtype, it->tz, &t) ||
			t >= w->edge || (t >= it->lo && t < it->hi))
			continue;
		/* the chunk, on the grid of the watch's TimeZone */
		nest = session_timezone == it->tz ? 0 : EnterZone(w->timezone);
		ChunkCell(t, w->chunk, &lo, &hi);
		LeaveZone(nest);
		it->lo = lo;
		it->hi = hi;
		noted |= NotePending(w->target, source, lo, hi);
	}
	if (!noted || rc->queued)
		return false;
	rc->queued = true;
	return true;
}

/*
 * WatchTriggerIdle
 *		See backfill.h: whether the trigger call has nothing to do: a
 *		BEFORE INSERT trigger of a relation whose watches this transaction
 *		has loaded for its row triggers, or an AFTER INSERT trigger without
 *		transition table (the row trigger's event; the statement trigger of
 *		earlier builds) when nothing is pending.  Reads memory only.
 */
bool
WatchTriggerIdle(TriggerData *trigdata)
{
	TriggerEvent ev = trigdata->tg_event;

	if (TRIGGER_FIRED_BEFORE(ev))
	{
		Oid			relid = RelationGetRelid(trigdata->tg_relation);
		RelWatches *rw;

		if (row_sources == NULL)
			return false;
		rw = FindRelWatches(relid);
		return rw != NULL && rw->rows_loaded;
	}
	return TRIGGER_FIRED_BY_INSERT(ev) && trigdata->tg_newtable == NULL &&
		npending == 0;
}

/*
 * WatchTriggerFire
 *		See backfill.h: the work of backfill._watch_trigger for one
 *		statement, or for the one row event of a statement whose INSERT row
 *		trigger noted chunks.  BEFORE INSERT: load the watches for the row
 *		triggers.  AFTER: write the pending chunks of the row triggers,
 *		then (a statement) read the transition tables (UPDATE, DELETE;
 *		INSERT of the old layout) or log a TRUNCATE, each behind its
 *		watch's edge (a target that backfill never built has the live edge
 *		alone).  The catalog checks and SPI come only with the first read
 *		or write of the catalog (WatchCatalog); the connection is closed
 *		here.
 */
void
WatchTriggerFire(TriggerData *trigdata)
{
	Relation	rel = trigdata->tg_relation;
	Oid			relid = RelationGetRelid(rel);
	TriggerEvent ev = trigdata->tg_event;
	bool		truncate = TRIGGER_FIRED_BY_TRUNCATE(ev);
	bool		has_old = trigdata->tg_oldtable != NULL;
	bool		has_new = trigdata->tg_newtable != NULL;
	RelWatches *rw;
	int			i;
	bool		save_checked;
	bool		save_open;

	WatchCatalogBegin(&save_checked, &save_open);
	WatchState();
	if (TRIGGER_FIRED_BEFORE(ev))
	{
		if (TRIGGER_FIRED_BY_INSERT(ev))
			LoadRowSources(rel);
	}
	else
	{
		FlushPending();
		if (!TRIGGER_FIRED_FOR_ROW(ev) && (truncate || has_old || has_new))
		{
			rw = LoadRelWatches(relid);
			for (i = 0; i < rw->n; i++)
			{
				WatchEntry *w = &rw->entries[i];

				CHECK_FOR_INTERRUPTS();
				if (truncate)
					LogTruncate(w, relid);
				else
					LogRows(w, relid, trigdata);
			}
		}
	}
	WatchCatalogEnd(save_checked, save_open);
}

/* ----------------------------------------------------------------
 *		reading the log
 * ----------------------------------------------------------------
 */

/*
 * LoadChangedRegions
 *		See backfill.h.
 */
int
LoadChangedRegions(Oid target, TimestampTz lo, TimestampTz hi,
				   ChangedRegion **out)
{
	Oid			argtypes[3] = {REGCLASSOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[3];
	int			n;
	int			k;

	values[0] = ObjectIdGetDatum(target);
	values[1] = TimestampTzGetDatum(lo);
	values[2] = TimestampTzGetDatum(hi);
	CatalogExec("SELECT chunk_start, chunk_end, pg_catalog.min(changed_at)"
				" FROM backfill.changed_regions"
				" WHERE target OPERATOR(pg_catalog.=) $1"
				" AND chunk_start OPERATOR(pg_catalog.<) $3"
				" AND chunk_end OPERATOR(pg_catalog.>) $2"
				" GROUP BY 1, 2 ORDER BY 1, 2",
				3, argtypes, values, NULL, SPI_OK_SELECT);
	n = (int) SPI_processed;
	*out = palloc(sizeof(ChangedRegion) * Max(n, 1));
	for (k = 0; k < n; k++)
	{
		bool		isnull;

		CHECK_FOR_INTERRUPTS();
		(*out)[k].lo = DatumGetTimestampTz(SpiGetDatumCopy(k, 1, &isnull));
		(*out)[k].hi = DatumGetTimestampTz(SpiGetDatumCopy(k, 2, &isnull));
		(*out)[k].changed_at = DatumGetTimestampTz(SpiGetDatumCopy(k, 3, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	return n;
}
