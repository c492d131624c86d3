/*-------------------------------------------------------------------------
 *
 * watchevent.c
 *	  Changed regions: the row event of a watched source's INSERT row
 *	  trigger whose WHEN clause (backfill._watch_row) could not load the
 *	  source's watches, because the writer may not insert into the source
 *	  itself (an INSERT through another role's view, or straight into a
 *	  partition by a role with rights on it only): the event, which fires
 *	  only once the statement's rights were checked, loads the watches of
 *	  the table the row went into and notes the row as its WHEN clause
 *	  would have (NoteEventRow), reading the WHEN clause's text from the
 *	  trigger.  watchlog.c keeps the rest of the INSERT path.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "commands/trigger.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "backfill.h"

/*
 * An INSERT row trigger's WHEN clause as a row event reads it (NoteEventRow):
 * the _watch_row call, its source and column, and the number of its time
 * argument in the table the trigger is on (a partition's clone has its
 * own); kept per trigger for the session, with the text it was read from.
 */
typedef struct EventQual
{
	Oid			tgoid;			/* hash key */
	char	   *qual;			/* the text read */
	bool		ours;			/* exactly a call of backfill._watch_row */
	Oid			source;
	Datum		column;			/* int2, a name in event_qual_cxt, or the
								 * row's table (an oid) */
	AttrNumber	attnum;			/* NEW's column in the trigger's table */
	FmgrInfo	flinfo;			/* the call, for WatchRowNote */
} EventQual;

static HTAB *event_quals = NULL;
static MemoryContext event_qual_cxt = NULL;

/*
 * ReadEventQual
 *		The WHEN clause of row trigger tg of table relid read (EventQual),
 *		from the session's cache when its text is the one read before.  It
 *		is ours only when it is exactly a call of backfill._watch_row, one
 *		of the forms watch installs (ReadWatchRowCall); anything else is
 *		left alone.
 */
static EventQual *
ReadEventQual(Trigger *tg, Oid relid)
{
	EventQual  *eq;
	bool		found;
	WatchRowCall rc;
	MemoryContext old;

	if (event_quals == NULL)
	{
		event_qual_cxt = AllocSetContextCreate(CacheMemoryContext,
											   "backfill row trigger quals",
											   ALLOCSET_SMALL_SIZES);
		event_quals = WatchHash("backfill row trigger quals", sizeof(Oid),
								sizeof(EventQual), 16, event_qual_cxt);
	}
	eq = (EventQual *) hash_search(event_quals, &tg->tgoid, HASH_ENTER, &found);
	if (found && strcmp(eq->qual, tg->tgqual) == 0)
		return eq;

	old = MemoryContextSwitchTo(event_qual_cxt);
	eq->qual = pstrdup(tg->tgqual);
	eq->ours = ReadWatchRowCall((Node *) stringToNode(eq->qual), &rc);
	if (eq->ours)
	{
		/* _watch_row(NEW.tableoid, ...): the trigger's own table */
		eq->source = OidIsValid(rc.source) ? rc.source : relid;
		/* _watch_row(source, NEW.tableoid, ...): the row's, the trigger's */
		eq->column = rc.coltype == OIDOID ? ObjectIdGetDatum(relid) : rc.column;
		eq->attnum = rc.attnum;
		memset(&eq->flinfo, 0, sizeof(FmgrInfo));
		eq->flinfo.fn_oid = rc.call->funcid;
		eq->flinfo.fn_nargs = list_length(rc.call->args);
		eq->flinfo.fn_strict = true;
		eq->flinfo.fn_mcxt = event_qual_cxt;
		eq->flinfo.fn_expr = (Node *) rc.call;
	}
	MemoryContextSwitchTo(old);
	return eq;
}

/*
 * NoteEventRow
 *		See backfill.h: the row event of an INSERT row trigger (trigdata)
 *		whose WHEN clause could not load the watches (a row of its source
 *		in debt: HasEventDebt): the watches of the table written loaded
 *		(LoadRowSources), its row noted as its WHEN clause would have
 *		with them (WatchEventRowNote), when the source the clause names is
 *		one of that table's watched sources (the table or a partitioned
 *		table above it: a row trigger of a role's own table naming another
 *		role's source notes nothing).  Once a row of the source is in
 *		debt, the event of a row its WHEN clause noted notes it too (it is
 *		found noted): events take no debt back (event_debts, watchcache.c).
 *		Before a source's first debt, an event does nothing here.
 */
void
NoteEventRow(TriggerData *trigdata)
{
	Trigger    *tg = trigdata->tg_trigger;
	TupleDesc	tupdesc = RelationGetDescr(trigdata->tg_relation);
	EventQual  *eq;
	RelWatches *rw;
	Datum		value;
	bool		isnull;
	bool		ours = false;
	int			i;

	if (!EventDebtsPending() || tg->tgqual == NULL ||
		trigdata->tg_trigtuple == NULL)
		return;
	eq = ReadEventQual(tg, RelationGetRelid(trigdata->tg_relation));
	if (!eq->ours || eq->attnum > tupdesc->natts ||
		!HasEventDebt(eq->source))
		return;
	LoadRowSources(trigdata->tg_relation);
	/* only a source of this table's own: it or a partitioned ancestor */
	rw = FindRelWatches(RelationGetRelid(trigdata->tg_relation));
	for (i = 0; rw != NULL && i < rw->n && !ours; i++)
		ours = rw->entries[i].source == eq->source;
	if (!ours)
		return;
	value = heap_getattr(trigdata->tg_trigtuple, eq->attnum, tupdesc, &isnull);
	if (!isnull)
		WatchEventRowNote(&eq->flinfo, eq->source, eq->column, value);
}
