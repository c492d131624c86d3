/*-------------------------------------------------------------------------
 *
 * regions.c
 *	  SQL entry points of changed regions (doc/changed-regions.md): watch,
 *	  unwatch, the trigger _watch_trigger that watch puts on a source and
 *	  the WHEN clause _watch_row of its INSERT row triggers, the event
 *	  trigger _watch_ddl that gives new partitions their triggers and
 *	  follows a renamed time column, the trigger _recorded_signal of
 *	  backfill.changed_regions, and the refresh jobs:
 *	  schedule_refresh, unschedule_refresh and their tick _refresh_tick.
 *	  The work is done by orchestration/watch.c, watchtriggers.c,
 *	  watchlog.c and refresh.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/event_trigger.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "nodes/parsenodes.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/timestamp.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_watch);
PG_FUNCTION_INFO_V1(backfill_unwatch);
PG_FUNCTION_INFO_V1(backfill_watch_trigger);
PG_FUNCTION_INFO_V1(backfill_watch_row);
PG_FUNCTION_INFO_V1(backfill_watch_ddl);
PG_FUNCTION_INFO_V1(backfill_recorded_signal);
PG_FUNCTION_INFO_V1(backfill_schedule_refresh);
PG_FUNCTION_INFO_V1(backfill_unschedule_refresh);
PG_FUNCTION_INFO_V1(backfill_refresh_tick);

/*
 * backfill_watch
 *		watch(target, source_table, source_column, settle) -> whether the
 *		watch is new (WatchSource); settle NULL (or not given): 0, not
 *		stated.
 */
Datum
backfill_watch(PG_FUNCTION_ARGS)
{
	bool		added;
	Interval   *settle = NULL;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "target", NULL);
	RequireArg(fcinfo, 1, "source_table", NULL);
	RequireArg(fcinfo, 2, "source_column", NULL);
	if (PG_NARGS() > 3 && !PG_ARGISNULL(3))
		settle = PG_GETARG_INTERVAL_P(3);

	SpiConnect();
	added = WatchSource(PG_GETARG_OID(0), PG_GETARG_OID(1),
						NameStr(*PG_GETARG_NAME(2)), settle);
	SpiFinish();
	PG_RETURN_BOOL(added);
}

/*
 * backfill_unwatch
 *		unwatch(target, source_table) -> the watches removed
 *		(UnwatchSource); source_table NULL: every source of the target.
 */
Datum
backfill_unwatch(PG_FUNCTION_ARGS)
{
	int32		removed;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "target", NULL);

	SpiConnect();
	removed = UnwatchSource(PG_GETARG_OID(0),
							PG_ARGISNULL(1) ? InvalidOid : PG_GETARG_OID(1));
	SpiFinish();
	PG_RETURN_INT32(removed);
}

/*
 * backfill_watch_trigger
 *		The triggers of a watched source: AFTER UPDATE, DELETE (with
 *		transition tables) and TRUNCATE statement triggers (and BEFORE and
 *		AFTER INSERT, of earlier builds), and the INSERT row triggers whose
 *		WHEN clause (_watch_row) is true for one row of a statement whose
 *		rows noted chunks, or for a row whose writer may not load the
 *		watches: WatchTriggerFire.  Runs as the writer; only the
 *		catalog write switches to the extension owner.  Nothing is said to
 *		the writer.
 */
Datum
backfill_watch_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		(TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) &&
		 !(TRIGGER_FIRED_AFTER(trigdata->tg_event) &&
		   TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))) ||
		(TRIGGER_FIRED_BEFORE(trigdata->tg_event) &&
		 !TRIGGER_FIRED_BY_INSERT(trigdata->tg_event)))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("backfill._watch_trigger must be called as one of the triggers backfill.watch installs"),
				 errdetail("It runs as a BEFORE INSERT or an AFTER statement trigger, or as an AFTER INSERT row trigger whose WHEN clause calls backfill._watch_row."),
				 errhint("Use backfill.watch to install it.")));
	if (WatchTriggerIdle(trigdata))
		return PointerGetDatum(NULL);
	/* the coordinator and version checks: before it touches the catalog */
	WatchTriggerFire(trigdata);
	return PointerGetDatum(NULL);
}

/*
 * backfill_watch_row
 *		_watch_row(source, time_column, t) or _watch_row(tableoid, t): the
 *		WHEN clause of the INSERT row triggers of a watched source
 *		(WatchRowNote), the column given by its attribute number in source
 *		(an int2) or by its name (forms earlier builds installed; a
 *		restore can leave the number stale), or by the call
 *		itself: NEW's column, whose number the call's expression gives, in
 *		the row's table (NEW.tableoid).  That is the form watch installs:
 *		_watch_row(NEW.tableoid, NEW.column) on a table (no constant in
 *		the clause's text), _watch_row(source, NEW.tableoid, NEW.column)
 *		on a partitioned table (its clones fire on the partitions, each
 *		with NEW's column mapped to its own); true for the first row of the
 *		statement that noted a chunk, so that its event writes them, or
 *		for a row whose writer may not load the watches (its event does).
 *		It loads the source's watches (their watch locks) only for a
 *		caller who may insert into the source, and writes nothing itself;
 *		the chunks it notes are written by the row event of a statement
 *		that writes the source, or by the AFTER statement triggers of the
 *		sources the caller writes.  A direct call can therefore only mark
 *		chunks that the caller could mark by writing rows there.
 */
Datum
backfill_watch_row(PG_FUNCTION_ARGS)
{
	if (PG_NARGS() == 2)
		PG_RETURN_BOOL(WatchRowNote(fcinfo->flinfo, PG_GETARG_OID(0),
									(Datum) 0, PG_GETARG_DATUM(1)));
	PG_RETURN_BOOL(WatchRowNote(fcinfo->flinfo, PG_GETARG_OID(0),
								PG_GETARG_DATUM(1), PG_GETARG_DATUM(2)));
}

/*
 * MakesPartition
 *		Whether parsetree (of a CREATE TABLE, ALTER TABLE or CREATE
 *		SCHEMA) makes a partition: CREATE TABLE ... PARTITION OF, also as
 *		an element of CREATE SCHEMA (whose elements fire no event trigger
 *		of their own), or ALTER TABLE with ATTACH PARTITION among its
 *		commands (from PostgreSQL 19 also SPLIT PARTITION and MERGE
 *		PARTITIONS).
 */
static bool
MakesPartition(Node *parsetree)
{
	ListCell   *lc;

	if (IsA(parsetree, CreateSchemaStmt))
	{
		foreach(lc, ((CreateSchemaStmt *) parsetree)->schemaElts)
		{
			if (MakesPartition((Node *) lfirst(lc)))
				return true;
		}
		return false;
	}
	if (IsA(parsetree, CreateStmt))
		return ((CreateStmt *) parsetree)->partbound != NULL;
	if (!IsA(parsetree, AlterTableStmt))
		return false;
	foreach(lc, ((AlterTableStmt *) parsetree)->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

		if (cmd->subtype == AT_AttachPartition)
			return true;
#if PG_VERSION_NUM >= 190000
		/* their new partitions are made like the partitioned table */
		if (cmd->subtype == AT_SplitPartition ||
			cmd->subtype == AT_MergePartitions)
			return true;
#endif
	}
	return false;
}

/*
 * MakesChild
 *		Whether parsetree (of a CREATE [FOREIGN] TABLE, ALTER [FOREIGN]
 *		TABLE or CREATE SCHEMA) makes a table inherit from others by plain
 *		INHERITS: CREATE [FOREIGN] TABLE ... INHERITS (not a partition),
 *		also as an element of CREATE SCHEMA, or ALTER TABLE with INHERIT
 *		among its commands.
 */
static bool
MakesChild(Node *parsetree)
{
	ListCell   *lc;

	if (IsA(parsetree, CreateSchemaStmt))
	{
		foreach(lc, ((CreateSchemaStmt *) parsetree)->schemaElts)
		{
			if (MakesChild((Node *) lfirst(lc)))
				return true;
		}
		return false;
	}
	if (IsA(parsetree, CreateStmt) || IsA(parsetree, CreateForeignTableStmt))
		return ((CreateStmt *) parsetree)->partbound == NULL &&
			((CreateStmt *) parsetree)->inhRelations != NIL;
	if (!IsA(parsetree, AlterTableStmt))
		return false;
	foreach(lc, ((AlterTableStmt *) parsetree)->cmds)
	{
		if (lfirst_node(AlterTableCmd, lc)->subtype == AT_AddInherit)
			return true;
	}
	return false;
}

/*
 * DroppedColumns
 *		The columns an ALTER TABLE's DROP COLUMN subcommands name (NIL for
 *		any other command): WatchDroppedColumn.
 */
static List *
DroppedColumns(Node *tree)
{
	List	   *names = NIL;
	ListCell   *lc;

	if (!IsA(tree, AlterTableStmt))
		return NIL;
	foreach(lc, ((AlterTableStmt *) tree)->cmds)
	{
		AlterTableCmd *cmd = (AlterTableCmd *) lfirst(lc);

		if (IsA(cmd, AlterTableCmd) && cmd->subtype == AT_DropColumn &&
			cmd->name != NULL)
			names = lappend(names, cmd->name);
	}
	return names;
}

/*
 * backfill_watch_ddl
 *		The event trigger function of backfill_watch_ddl
 *		(ddl_command_end of CREATE TABLE, ALTER TABLE, CREATE SCHEMA, and
 *		CREATE and ALTER FOREIGN TABLE): a
 *		partition made or attached below a watched source gets the watch's
 *		statement triggers (WatchNewPartitions), a watched time column
 *		renamed by ALTER TABLE ... RENAME COLUMN is followed
 *		(WatchRenamedColumn), ALTER TABLE ... DROP COLUMN of one is
 *		refused (WatchDroppedColumn), and a table made to inherit from a
 *		watched one gets a WARNING naming the watch call that records its
 *		rows (WatchNewChildren).  Runs as the role that ran the
 *		command, which owns the table.  Every other command returns at
 *		once, before any catalog read; nothing happens inside CREATE
 *		EXTENSION scripts or while the installed catalog is not at the
 *		library's version (an upgrade under way).  No Citus coordinator
 *		check: a worker finds no watch.
 */
Datum
backfill_watch_ddl(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	Node	   *tree;
	bool		renamed;
	List	   *dropped;
	bool		child;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function backfill._watch_ddl() can only be called as an event trigger")));
	trigdata = (EventTriggerData *) fcinfo->context;
	tree = trigdata->parsetree;
	renamed = IsA(tree, RenameStmt) &&
		((RenameStmt *) tree)->renameType == OBJECT_COLUMN &&
		((RenameStmt *) tree)->relationType == OBJECT_TABLE;
	dropped = DroppedColumns(tree);
	child = MakesChild(tree);
	if (creating_extension ||
		!(renamed || dropped != NIL || child || MakesPartition(tree)) ||
		!CatalogVersionMatches())
		PG_RETURN_VOID();
	SpiConnect();
	if (dropped != NIL)
	{
		ListCell   *lc;

		foreach(lc, dropped)
			WatchDroppedColumn((const char *) lfirst(lc));
	}
	if (renamed)
		WatchRenamedColumn(((RenameStmt *) tree)->subname,
						   ((RenameStmt *) tree)->newname);
	else if (MakesPartition(tree))
		WatchNewPartitions();
	if (child)
		WatchNewChildren();
	SpiFinish();
	PG_RETURN_VOID();
}

/*
 * backfill_recorded_signal
 *		The function of backfill_recorded_signal, the AFTER DELETE OR
 *		UPDATE row trigger of backfill.changed_regions: a relcache
 *		invalidation of the table (one per command, however many rows),
 *		sent when the transaction commits, which tells every backend to
 *		forget the rows of the log it remembers as recorded
 *		(orchestration/watchrecorded.c).
 *		Sends nothing else and reads nothing; EXECUTE is revoked from
 *		PUBLIC (PostgreSQL checks it when a trigger is made, not when it
 *		fires).
 */
Datum
backfill_recorded_signal(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_AFTER(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("backfill._recorded_signal must be called as an AFTER row trigger"),
				 errdetail("It is the trigger backfill_recorded_signal of backfill.changed_regions."),
				 errhint("Do not call it or install it yourself.")));
	CacheInvalidateRelcache(trigdata->tg_relation);
	return PointerGetDatum(NULL);
}

/*
 * backfill_schedule_refresh
 *		schedule_refresh(target, cron, quiet_hours, lookback, cascade,
 *		missing) -> the refresh's id (ScheduleRefresh), which
 *		unschedule_refresh takes.
 */
Datum
backfill_schedule_refresh(PG_FUNCTION_ARGS)
{
	char	   *cron;
	char	   *quiet_hours = NULL;
	int64		refresh_id;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "target", NULL);
	RequireArg(fcinfo, 1, "cron", "Pass a cron expression such as '0 3 * * *'.");
	RequireArg(fcinfo, 3, "lookback", "Pass the time late changes can arrive in, for example interval '7 days'.");
	RequireArg(fcinfo, 4, "cascade", NULL);
	RequireArg(fcinfo, 5, "missing", NULL);
	cron = text_to_cstring(PG_GETARG_TEXT_PP(1));
	RequireMaxLength(cron, "cron", BACKFILL_MAX_WORD);
	if (!PG_ARGISNULL(2))
	{
		quiet_hours = text_to_cstring(PG_GETARG_TEXT_PP(2));
		RequireMaxLength(quiet_hours, "quiet_hours", BACKFILL_MAX_WORD);
	}

	SpiConnect();
	refresh_id = ScheduleRefresh(PG_GETARG_OID(0), cron, quiet_hours,
								 PG_GETARG_INTERVAL_P(3), PG_GETARG_BOOL(4),
								 PG_GETARG_BOOL(5));
	SpiFinish();
	PG_RETURN_INT64(refresh_id);
}

/*
 * backfill_unschedule_refresh
 *		unschedule_refresh(refresh_id) -> whether a refresh was removed
 *		(UnscheduleRefresh).
 */
Datum
backfill_unschedule_refresh(PG_FUNCTION_ARGS)
{
	bool		removed;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "refresh_id",
			   "Pass the id schedule_refresh returned (backfill.refreshes.refresh_id).");

	SpiConnect();
	removed = UnscheduleRefresh(PG_GETARG_INT64(0));
	SpiFinish();
	PG_RETURN_BOOL(removed);
}

/*
 * backfill_refresh_tick
 *		CALL backfill._refresh_tick(refresh_id): the command of a refresh
 *		job (RefreshTick); called by hand, it refreshes now.  A procedure:
 *		one transaction per chunk.
 */
Datum
backfill_refresh_tick(PG_FUNCTION_ARGS)
{
	RequireTopLevelCall(fcinfo, "backfill._refresh_tick");
	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "refresh_id", NULL);

	SpiConnectNonatomic();
	RefreshTick(PG_GETARG_INT64(0));
	SpiFinish();
	PG_RETURN_VOID();
}
