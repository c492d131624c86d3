/*-------------------------------------------------------------------------
 *
 * watchlog.c
 *	  Changed regions: the INSERT row triggers watch.c installs on a
 *	  watched source, with the watches watchcache.c loads, and the
 *	  per-transaction state of what the triggers noted and logged: they
 *	  record which of the target's chunks a write touched
 *	  (backfill.changed_regions); the statement triggers are
 *	  watchstatement.c's, and the reader of those records for stale plans
 *	  is watchrecorded.c's.
 *
 * A write is recorded behind each watch's edge: the later of the
 * target's watermark (the newest chunk end backfill built) and the watch's
 * live edge (the start of the chunk that contains now - settle: every
 * chunk before it has ended at least settle ago and counts as built, by
 * backfill or by the job that fills the table; LiveEdge, kept with the
 * cached watch until the next chunk boundary).  A target that backfill
 * never built is followed too (issue 29).
 *
 * The INSERT row trigger's WHEN clause, backfill._watch_row, loads the
 * source's watches for the transaction itself on its first row (the watch
 * locks, then the watermarks and edges: LoadRowSource), when the writer
 * may write the source's rows (RowMayNote): a direct call by a role
 * that could not write the rows marks nothing and takes no lock.  Where it
 * may not (an INSERT through another role's view, or straight into a
 * partition by a role with rights on the partition only), the WHEN clause
 * is true for the row, and the row's event, which fires only once the
 * statement's rights were checked, loads the watches of the table the row
 * went into and notes the row (NoteEventRow).  No BEFORE INSERT statement
 * trigger is needed (issue 30: it was most of what a single-row INSERT at
 * the live edge paid beyond the WHEN clause; the one earlier builds
 * installed still loads, and watch drops it where its caller owns the
 * table).  A row at or beyond every edge costs
 * one comparison (RowCall.fast); a row behind one has its time mapped to
 * the target's chunk (ChunkCell, in the watch's TimeZone; a row in the
 * chunk of the row before it costs one more comparison) and a chunk this
 * transaction has not logged yet is noted as pending, and looked for at
 * once among the chunks other transactions recorded (SettleRecorded,
 * watchrecorded.c): one recorded already is settled there and then.  The
 * WHEN clause is true for the first row of its statement that leaves a
 * chunk pending, and only for it: PostgreSQL then queues that row's event,
 * which fires at the end of the statement and writes every pending chunk
 * (FlushPending), as every AFTER statement trigger does first.  A
 * statement whose rows note nothing (the live edge) queues no event at
 * all: there is no AFTER INSERT
 * statement trigger (issue 30: it was the dearest part of a single-row
 * transaction at the live edge after the WHEN clause itself).
 *
 * The transition tables (of UPDATE and DELETE) are read once per watching
 * target, in C, as the writer, the same way (watchstatement.c).  The
 * chunks this transaction has not logged yet are appended to
 * backfill.changed_regions without SQL
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
 * by the first _watch_row call of the transaction on the source
 * (LoadRowSource), by a row event of the source or of one of its
 * partitions, or by the BEFORE INSERT statement trigger of earlier builds
 * (LoadRowSources), with the watch locks taken in subtransaction subid.
 */
typedef struct RowSource
{
	Oid			source;			/* hash key */
	SubTransactionId subid;
	Oid			load_role;		/* the role a _watch_row call loaded them
								 * for, holding INSERT on the table, or
								 * InvalidOid (a trigger's event, or a
								 * role with a column's INSERT only) */
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
	Oid			user;			/* the user, source and column it was set
								 * up and checked for (RowCallFor): a direct
								 * call may pass another source or column on
								 * each row, or run as another user */
	Oid			source;
	int16		colnum;			/* coltype INT2OID, not by_table (by_part:
								 * the number in source of column attnum of
								 * part, InvalidAttrNumber if none) */
	NameData	colname;		/* coltype NAMEOID */
	bool		queued;			/* returned true once: its row's event will
								 * write what is pending */
	bool		loaded;			/* the source's watches are loaded */
	Oid			load_role;		/* their RowSource's */
	bool		checked;		/* may_write is known (once per call site,
								 * source, column and user: RowCallFor) */
	bool		may_write;		/* the user may write the source's rows
								 * (RowMayNote): else the rows' events
								 * note them */
	bool		may_table;		/* by INSERT on the table */
	Oid			coltype;		/* the column: INT2OID (attnum) or NAMEOID */
	bool		by_table;		/* _watch_row(NEW.tableoid, NEW.column) */
	bool		by_part;		/* _watch_row(source, NEW.tableoid,
								 * NEW.column): coltype INT2OID, colnum */
	Oid			part;			/* by_part: the row's table it was set up
								 * for */
	AttrNumber	attnum;			/* by_table, by_part: that column's number,
								 * or InvalidAttrNumber (none passed) */
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
static HashKeys row_sources_keys;
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
		ClearHashKeys(&row_sources, &row_sources_keys);
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
	{
		ForgetRelWatches(false);
		/* call sites forget the chunk they noted last, maybe forgotten */
		row_state_gen++;
	}
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
void
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
						   sizeof(LoggedEntry), 8, watch_state_cxt);
		npending = 0;
	}
	if (row_sources == NULL)
	{
		row_sources = WatchHash("backfill row sources", sizeof(Oid),
								sizeof(RowSource), 4, watch_state_cxt);
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
 *		end, source; changed now()) in the caller's transaction, but for
 *		the chunks another transaction recorded and no build consumed yet
 *		(KeepUnrecorded): appended without SQL (CatalogAppendRows) when the
 *		table allows it, else in one INSERT as the extension owner.
 */
void
WriteChangedRegions(int m, const Datum *targets, const Datum *starts,
					const Datum *ends, const Datum *sources)
{
	Datum	   *row = palloc(sizeof(Datum) * 5 * Max(m, 1));
	bool	   *nulls = palloc0(sizeof(bool) * 5 * Max(m, 1));
	bool	   *no_source = palloc0(sizeof(bool) * Max(m, 1));
	bool	   *keep = palloc(sizeof(bool) * Max(m, 1));
	Datum	   *kt = palloc(sizeof(Datum) * Max(m, 1));
	Datum	   *ks = palloc(sizeof(Datum) * Max(m, 1));
	Datum	   *ke = palloc(sizeof(Datum) * Max(m, 1));
	Datum	   *ksrc = palloc(sizeof(Datum) * Max(m, 1));
	Datum		now = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	Oid			argtypes[4] = {REGCLASSARRAYOID, TIMESTAMPTZARRAYOID,
	TIMESTAMPTZARRAYOID, REGCLASSARRAYOID};
	Datum		values[4];
	int			i;
	int			k = 0;

	for (i = 0; i < m; i++)
	{
		if (DatumGetTimestampTz(starts[i]) >= DatumGetTimestampTz(ends[i]))
			elog(ERROR, "backfill: empty changed chunk");
	}
	WatchCatalog(false);
	/* a chunk another transaction recorded, not yet consumed: left out */
	if (KeepUnrecorded(m, targets, starts, ends, sources, keep) == 0)
		return;
	for (i = 0; i < m; i++)
	{
		if (!keep[i])
			continue;
		kt[k] = row[k * 5] = targets[i];
		ks[k] = row[k * 5 + 1] = starts[i];
		ke[k] = row[k * 5 + 2] = ends[i];
		row[k * 5 + 3] = now;
		ksrc[k] = row[k * 5 + 4] = sources[i];
		no_source[k] = !OidIsValid(DatumGetObjectId(sources[i]));
		nulls[k * 5 + 4] = no_source[k];
		k++;
	}
	if (CatalogAppendRows("changed_regions", 5, k, row, nulls))
		return;
	WatchCatalog(true);
	values[0] = MakeArray(kt, NULL, k, REGCLASSOID);
	values[1] = MakeArray(ks, NULL, k, TIMESTAMPTZOID);
	values[2] = MakeArray(ke, NULL, k, TIMESTAMPTZOID);
	values[3] = MakeArray(ksrc, no_source, k, REGCLASSOID);
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
 * LogClaim
 *		See backfill.h: whether this transaction still has to write the
 *		chunk of target starting at start (not written yet, or only noted
 *		by _watch_row: then written by the caller, with its source); it is
 *		then marked as written by the current subtransaction.
 */
bool
LogClaim(Oid target, TimestampTz start)
{
	LoggedEntry *entry;
	bool		found;

	entry = LoggedEnter(target, start, &found);
	if (found && !entry->pending)
		return false;
	if (found)
	{
		entry->pending = false;
		npending--;
	}
	entry->written = GetCurrentSubTransactionId();
	return true;
}

/*
 * FlushPending
 *		Write the chunks noted as pending by _watch_row (of every source and
 *		target: WriteChangedRegions), and remember them as written by
 *		this subtransaction.  Called first by every AFTER statement trigger.
 */
void
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
 * AddRowSource
 *		Keep the watches of source among rw (loaded for source or for one
 *		of its partitions) for the source's row triggers (_watch_row),
 *		unless they are kept already.  Each watched column is checked in
 *		rel (the table written, WatchedColumn), or, without rel, by the
 *		number the cache found for it in source (WatchedColumnGone when
 *		none).
 */
static void
AddRowSource(RelWatches *rw, Oid source, Relation rel, Oid load_role)
{
	RowSource  *rs;
	bool		found;
	int			j;

	rs = (RowSource *) hash_search(row_sources, &source, HASH_ENTER, &found);
	if (found)
		return;
	HashKeysAdd(&row_sources_keys, source);
	rs->subid = GetCurrentSubTransactionId();
	rs->load_role = load_role;
	rs->n = 0;
	rs->entries = MemoryContextAlloc(TopTransactionContext,
									 sizeof(WatchEntry) * Max(rw->n, 1));
	row_state_gen++;
	for (j = 0; j < rw->n; j++)
	{
		Oid			basetype;

		if (rw->entries[j].source != source)
			continue;
		if (rel != NULL)
			(void) WatchedColumn(rel, &rw->entries[j], &basetype);
		else if (rw->entries[j].attnum == InvalidAttrNumber)
			WatchedColumnGone(&rw->entries[j]);
		rs->entries[rs->n++] = rw->entries[j];
	}
}

/*
 * LoadRowSources
 *		A row event (or the BEFORE INSERT statement trigger of earlier
 *		builds) of rel (a watched source or a partition of one): its
 *		watches for this transaction, with the watch locks taken and the
 *		watermarks read after them (LoadRelWatches), kept by watched
 *		source for the source's row triggers (AddRowSource).
 */
void
LoadRowSources(Relation rel)
{
	RelWatches *rw = LoadRelWatches(RelationGetRelid(rel));
	int			i;

	if (rw->rows_loaded)
		return;
	rw->rows_loaded = true;
	for (i = 0; i < rw->n; i++)
		AddRowSource(rw, rw->entries[i].source, rel, InvalidOid);
}

/*
 * LoadRowSource
 *		The first _watch_row call of the transaction on source, by a user
 *		who may note its rows (RowMayNote): its watches (those of source,
 *		LoadRelWatches), kept for its row triggers (AddRowSource), with the
 *		role that may write any of its rows (load_role: the user, when it
 *		holds INSERT on the table; else InvalidOid).  The catalog checks
 *		and SPI only when the cache must be read.
 */
static void
LoadRowSource(Oid source, Oid load_role)
{
	bool		save_checked;
	bool		save_open;

	WatchCatalogBegin(&save_checked, &save_open);
	WatchState();
	AddRowSource(LoadRelWatches(source), source, NULL, load_role);
	WatchCatalogEnd(save_checked, save_open);
}

/*
 * RowCallNew
 *		A _watch_row call site's RowCall (in fn_mcxt, zeroed), with the
 *		form of the call (WatchCallForm: for the two-argument form
 *		(NEW.tableoid, NEW.column) the column's number, given as an int2
 *		to the rest; for the form (source, NEW.tableoid, NEW.column) that
 *		number too, in the row's table, whose column of the same name in
 *		source is given by its number to the rest: WatchSourceColumn).
 */
static RowCall *
RowCallNew(FmgrInfo *flinfo)
{
	RowCall    *rc = MemoryContextAllocZero(flinfo->fn_mcxt, sizeof(RowCall));

	WatchCallForm(flinfo, &rc->coltype, &rc->argtype, &rc->by_table,
				  &rc->attnum);
	if (rc->coltype == OIDOID)
	{
		rc->by_part = true;
		rc->coltype = INT2OID;
	}
	rc->part = InvalidOid;
	flinfo->fn_extra = rc;
	return rc;
}

/*
 * RowCallFor
 *		Whether call site rc was set up for source and column (as RowNote
 *		has them; the column of the two-argument form is the call's own)
 *		and the current user (for the form (source, NEW.tableoid,
 *		NEW.column) column is the row's table, whose column the call's
 *		names).  In a WHEN clause they do not change; a
 *		direct call may pass another source or column on each row, or run
 *		as another user (set_config('role', ...) in the statement), whose
 *		rights are not those checked for the row before.
 */
static inline bool
RowCallFor(RowCall *rc, Oid source, Datum column)
{
	if (rc->source != source || rc->user != GetUserId())
		return false;
	if (rc->by_table)
		return true;
	if (rc->by_part)
		return rc->part == DatumGetObjectId(column);
	if (rc->coltype == INT2OID)
		return DatumGetInt16(column) == rc->colnum;
	return strcmp(NameStr(*DatumGetName(column)), NameStr(rc->colname)) == 0;
}

/*
 * RowCallSetup
 *		What a _watch_row call site keeps (RowCall, in fn_mcxt: RowCallNew):
 *		the loaded watches of source whose time column is column (its
 *		attribute number in source or its name, by the function's
 *		signature; for the two-argument form the number the call passes;
 *		for the form (source, NEW.tableoid, NEW.column) column is the
 *		row's table, and the number in source of the call's column there,
 *		found by its name, is matched),
 *		each with the
 *		limit from which a value (in the column's type argtype) is beyond its
 *		edge: the edge itself for timestamptz; for timestamp and date, the
 *		edge's local time in the watch's TimeZone plus a day
 *		(more than any change of a zone's offset: the values in that day are
 *		converted and compared exactly).  No watches loaded (loaded
 *		false), or no column of source by that number: nothing.  It runs
 *		once per statement: the argument types come from the call's
 *		expression, the column's number and the zone from the cached
 *		watches (no catalog lookup).
 */
static RowCall *
RowCallSetup(FmgrInfo *flinfo, Oid source, Datum column)
{
	RowCall    *rc = (RowCall *) flinfo->fn_extra;
	RowSource  *rs = NULL;
	int			i;

	if (rc == NULL)
		rc = RowCallNew(flinfo);
	if (rc->by_table)
		column = Int16GetDatum(rc->attnum);
	if (!RowCallFor(rc, source, column))
	{
		/* another source, column or user (a direct call's): checked again */
		rc->source = source;
		rc->user = GetUserId();
		/* the two-argument form's column is the call's own (RowCallFor) */
		if (rc->by_part)
		{
			rc->part = DatumGetObjectId(column);
			rc->colnum = WatchSourceColumn(source, rc->part, rc->attnum);
		}
		else if (!rc->by_table && rc->coltype == INT2OID)
			rc->colnum = DatumGetInt16(column);
		else if (!rc->by_table)
			namestrcpy(&rc->colname, NameStr(*DatumGetName(column)));
		rc->checked = false;
	}
	if (rc->by_part)
		column = Int16GetDatum(rc->colnum);
	rc->gen = row_state_gen;
	rc->fast = DT_NOBEGIN;
	rc->n = 0;
	if (row_sources != NULL)
		rs = (RowSource *) hash_search(row_sources, &source, HASH_FIND, NULL);
	rc->loaded = rs != NULL;
	rc->load_role = rs != NULL ? rs->load_role : InvalidOid;
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
 * RowCallColumn
 *		The column call site rc passes, as its coltype gives it (*column:
 *		for the two-argument form the number its expression names, for the
 *		form (source, NEW.tableoid, NEW.column) the number in source of that
 *		column of the row's table); false when it passes none (a direct call
 *		with a value, or a table without that column), which notes nothing.
 */
static inline bool
RowCallColumn(RowCall *rc, Datum *column)
{
	if (rc->by_table)
	{
		if (rc->attnum == InvalidAttrNumber)
			return false;
		*column = Int16GetDatum(rc->attnum);
	}
	else if (rc->by_part)
	{
		if (rc->colnum == InvalidAttrNumber)
			return false;
		*column = Int16GetDatum(rc->colnum);
	}
	return true;
}

/*
 * NotePending
 *		Note the chunk [lo, hi) of target as changed by a row of source,
 *		unless this transaction has noted or logged it already; the entry
 *		noted now, or NULL.  *pending is set when the chunk was noted
 *		already and is still pending: a direct call of _watch_row (no
 *		INSERT, no event) may have noted it, so the row's WHEN clause must
 *		still queue an event that writes it.
 */
static LoggedEntry *
NotePending(Oid target, Oid source, TimestampTz lo, TimestampTz hi,
			bool *pending)
{
	LoggedEntry *entry;
	bool		found;

	entry = LoggedEnter(target, lo, &found);
	if (found)
	{
		if (entry->pending)
			*pending = true;
		return NULL;
	}
	entry->pending = true;
	entry->written = InvalidSubTransactionId;
	entry->end = hi;
	entry->source = source;
	npending++;
	return entry;
}

/*
 * SettleRecorded
 *		The n chunks one row has just noted as pending, looked for at once
 *		among the chunks other transactions recorded (KeepUnrecorded: the
 *		targets' RECORDED locks, then a snapshot): one found recorded is
 *		settled (written, by nobody), so that a row into a recorded chunk
 *		queues no event (issue 30: the event, queued, fired and fetching
 *		its row at the end of the statement, cost a single-row transaction
 *		into a recorded chunk about 5,000 instructions).  The row is in
 *		the table already (an AFTER trigger's WHEN clause runs after the
 *		insert), so a build that waits for the lock sees it, as at the end
 *		of the statement.  Whether any is still pending.
 */
static bool
SettleRecorded(LoggedEntry **noted, int n)
{
	Datum	   *t = palloc(sizeof(Datum) * n);
	Datum	   *s = palloc(sizeof(Datum) * n);
	Datum	   *e = palloc(sizeof(Datum) * n);
	Datum	   *src = palloc(sizeof(Datum) * n);
	bool	   *keep = palloc(sizeof(bool) * n);
	bool		save_checked;
	bool		save_open;
	bool		pending = false;
	int			i;

	for (i = 0; i < n; i++)
	{
		t[i] = ObjectIdGetDatum(noted[i]->key.target);
		s[i] = TimestampTzGetDatum(noted[i]->key.start);
		e[i] = TimestampTzGetDatum(noted[i]->end);
		src[i] = ObjectIdGetDatum(noted[i]->source);
	}
	WatchCatalogBegin(&save_checked, &save_open);
	WatchCatalog(false);
	(void) KeepUnrecorded(n, t, s, e, src, keep);
	WatchCatalogEnd(save_checked, save_open);
	for (i = 0; i < n; i++)
	{
		if (keep[i])
		{
			pending = true;
			continue;
		}
		noted[i]->pending = false;
		noted[i]->written = GetCurrentSubTransactionId();
		npending--;
	}
	return pending;
}

/*
 * RowNote
 *		The work of backfill._watch_row(source, column, value),
 *		_watch_row(source, tableoid, value) or _watch_row(tableoid, value),
 *		the WHEN clause of an INSERT row trigger, for one row.  A value at or
 *		beyond every edge costs one comparison; behind one, the row's
 *		chunk is noted as pending unless it is the chunk this call site
 *		noted last, and settled at once when another transaction
 *		recorded it (SettleRecorded).  True for the first row of this
 *		call site (of its statement) that left a chunk pending, or found
 *		its chunk still pending (noted by a direct call, which queues no
 *		event): that row's event writes the pending chunks at the end of
 *		the statement.  The first call of the
 *		transaction on source loads its watches (LoadRowSource) when the
 *		user may write the source's rows (RowMayNote); else it loads and
 *		notes nothing, and is true for a row that may lie behind an edge
 *		(every row while nothing is loaded): the row's event loads them and
 *		notes the row (NoteEventRow: event, which notes only sources the
 *		event's table loaded), and a direct call by such a user does
 *		nothing.
 */
static bool
RowNote(FmgrInfo *flinfo, Oid source, Datum column, Datum value,
		bool event)
{
	RowCall    *rc = (RowCall *) flinfo->fn_extra;
	Datum		arg = column;
	int64		v;
	int			i;
	LoggedEntry **noted = NULL;
	int			nnoted = 0;
	bool		pending = false;

	if (rc == NULL || rc->gen != row_state_gen ||
		!RowCallFor(rc, source, column))
		rc = RowCallSetup(flinfo, source, column);
	if (!RowCallColumn(rc, &column))
		return false;
	/*
	 * whether the user may write the source's rows: once per call site,
	 * source and column (a direct call may pass another source or column on
	 * each row: rights on one are none on the next, RowCallSetup)
	 */
	if (!event && !rc->checked)
	{
		rc->may_write = (rc->loaded && OidIsValid(rc->load_role) &&
						 rc->load_role == GetUserId()) ||
			RowMayNote(source, rc->coltype, column, &rc->may_table);
		rc->checked = true;
	}
	if (!rc->loaded)
	{
		/* the first row of the transaction on source */
		if (event)
			return false;		/* not the event's table's: never noted */
		if (!rc->may_write)
		{
			AddEventDebt(source);
			return true;		/* its event loads the watches and notes it */
		}
		LoadRowSource(source, rc->may_table ? GetUserId() : InvalidOid);
		rc = RowCallSetup(flinfo, source, arg);
	}
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
	if (!event && !rc->may_write)
	{
		/*
		 * Loaded by a trigger's event for a user who may not write the
		 * source itself: a direct call by that user notes nothing; a row
		 * that may lie behind an edge is noted by its event.
		 */
		AddEventDebt(source);
		return true;
	}

	for (i = 0; i < rc->n; i++)
	{
		RowItem    *it = &rc->items[i];
		WatchEntry *w = it->w;
		TimestampTz t;
		TimestampTz lo;
		TimestampTz hi;
		int			nest;

		if (v >= it->limit || !WatchValueTime(value, rc->argtype, it->tz, &t) ||
			t >= w->edge || (t >= it->lo && t < it->hi))
			continue;
		/*
		 * The chunk, on the grid of the watch's TimeZone: in a zone of one
		 * offset by arithmetic, without making it the session's (a GUC set
		 * and popped costs about 7,000 instructions a row when the writer's
		 * TimeZone is another, even 'Etc/UTC' for 'UTC')
		 */
		if (session_timezone == it->tz ||
			!FixedZoneCell(it->tz, t, w->chunk, &lo, &hi))
		{
			nest = session_timezone == it->tz ? 0 : EnterZone(w->timezone);
			ChunkCell(t, w->chunk, &lo, &hi);
			LeaveZone(nest);
		}
		it->lo = lo;
		it->hi = hi;
		if (noted == NULL)
			noted = palloc(sizeof(LoggedEntry *) * rc->n);
		if ((noted[nnoted] = NotePending(w->target, source, lo, hi,
										 &pending)) != NULL)
			nnoted++;
	}
	/* a row's event: written (or left out) at the end of its statement */
	if (event)
		return false;
	if (nnoted > 0 && SettleRecorded(noted, nnoted))
		pending = true;
	/*
	 * Pending, noted now or before (then maybe by a direct call, which
	 * queues no event): this call site's event writes it, once.
	 */
	if (!pending || rc->queued)
		return false;
	rc->queued = true;
	return true;
}

/*
 * WatchRowNote
 *		See backfill.h: RowNote for a call of _watch_row.
 */
bool
WatchRowNote(FmgrInfo *flinfo, Oid source, Datum column, Datum value)
{
	return RowNote(flinfo, source, column, value, false);
}

/*
 * WatchEventRowNote
 *		See backfill.h: RowNote for a row event (NoteEventRow).
 */
void
WatchEventRowNote(FmgrInfo *flinfo, Oid source, Datum column, Datum value)
{
	(void) RowNote(flinfo, source, column, value, true);
}

/*
 * WatchTriggerIdle
 *		See backfill.h: whether the trigger call has nothing to do: a
 *		BEFORE INSERT trigger of a relation whose watches this transaction
 *		has loaded for its row triggers (earlier builds' statement
 *		trigger), or the AFTER INSERT statement trigger of earlier builds
 *		without transition table when nothing is pending; never a row
 *		event (it may have a row to note: NoteEventRow).  Reads memory
 *		only.
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
	return !TRIGGER_FIRED_FOR_ROW(ev) && TRIGGER_FIRED_BY_INSERT(ev) &&
		trigdata->tg_newtable == NULL && npending == 0;
}
