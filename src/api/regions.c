/*-------------------------------------------------------------------------
 *
 * regions.c
 *	  SQL entry points of changed regions (doc/changed-regions.md): watch,
 *	  unwatch, and the statement trigger _watch_trigger that watch puts on
 *	  a source.  The work is done by orchestration/watch.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/trigger.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_watch);
PG_FUNCTION_INFO_V1(backfill_unwatch);
PG_FUNCTION_INFO_V1(backfill_watch_trigger);

/*
 * backfill_watch
 *		watch(target, source, time_column) -> whether the watch is new
 *		(WatchSource).
 */
Datum
backfill_watch(PG_FUNCTION_ARGS)
{
	bool		added;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "target", NULL);
	RequireArg(fcinfo, 1, "source", NULL);
	RequireArg(fcinfo, 2, "time_column", NULL);

	SpiConnect();
	added = WatchSource(PG_GETARG_OID(0), PG_GETARG_OID(1),
						NameStr(*PG_GETARG_NAME(2)));
	SpiFinish();
	PG_RETURN_BOOL(added);
}

/*
 * backfill_unwatch
 *		unwatch(target, source) -> the watches removed (UnwatchSource);
 *		source NULL: every source of the target.
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
 *		The statement trigger of a watched source (AFTER INSERT, UPDATE,
 *		DELETE with transition tables, AFTER TRUNCATE): WatchTriggerFire.
 *		Runs as the writer; only the catalog write switches to the
 *		extension owner.  Nothing is said to the writer.
 */
Datum
backfill_watch_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_FOR_STATEMENT(trigdata->tg_event) ||
		!TRIGGER_FIRED_AFTER(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("backfill._watch_trigger must be called as an AFTER ... FOR EACH STATEMENT trigger"),
				 errhint("Use backfill.watch to install it.")));
	CitusRequireCoordinator();
	RequireCatalogVersion();

	SpiConnect();
	WatchTriggerFire(trigdata);
	SpiFinish();
	return PointerGetDatum(NULL);
}
