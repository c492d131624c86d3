/*-------------------------------------------------------------------------
 *
 * watchstatement.c
 *	  Changed regions: the trigger of a watched source, statement by
 *	  statement (backfill._watch_trigger, WatchTriggerFire): the
 *	  transition tables of an UPDATE or DELETE read once per watching
 *	  target, in C, as the writer, and a TRUNCATE logged as one region;
 *	  the row events of the INSERT row triggers and the per-transaction
 *	  state of what was noted and logged are watchlog.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "backfill.h"

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
		if (!LogClaim(target, starts[i]))
			continue;
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
	Oid			argtypes[3] = {REGCLASSOID, TIMESTAMPTZOID, REGCLASSOID};
	Datum		values[3];

	if (!LogClaim(w->target, DT_NOBEGIN))
		return;
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
 * WatchTriggerFire
 *		See backfill.h: the work of backfill._watch_trigger for one
 *		statement, or for a row event of an INSERT row trigger (the first
 *		row of a statement that noted chunks, or a row whose WHEN clause
 *		could not load the watches).  BEFORE INSERT (earlier builds): load
 *		the watches for the row triggers.  A row event: load the watches of
 *		the table written and note its row (NoteEventRow).  AFTER: write
 *		the pending chunks of the row triggers,
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
		if (TRIGGER_FIRED_FOR_ROW(ev))
			NoteEventRow(trigdata);
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

