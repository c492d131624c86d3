/*-------------------------------------------------------------------------
 *
 * targets.c
 *	  SQL entry points of targets (doc/targets.md): register, unregister,
 *	  export_definitions, and set_strategy (doc/partitions.md).  The work
 *	  is done by orchestration/registry.c and orchestration/export.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_register);
PG_FUNCTION_INFO_V1(backfill_unregister);
PG_FUNCTION_INFO_V1(backfill_set_strategy);
PG_FUNCTION_INFO_V1(backfill_export_definitions);

/*
 * backfill_register
 *		register(target, time_column, source, definition, chunk,
 *		source_retention, source_horizon, ledger, measure, tolerance,
 *		ledger_gate, keep_replaced, keep_for, key, allow_empty) -> current
 *		definition version (RegisterTarget).  The last four came with
 *		0.2.0.
 */
Datum
backfill_register(PG_FUNCTION_ARGS)
{
	Registration reg;
	int32		version;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "target", NULL);
	RequireArg(fcinfo, 1, "time_column", NULL);
	RequireArg(fcinfo, 2, "source", NULL);
	RequireArg(fcinfo, 4, "chunk", NULL);
	RequireArg(fcinfo, 8, "measure", NULL);
	RequireArg(fcinfo, 9, "tolerance", NULL);
	RequireArg(fcinfo, 10, "ledger_gate", NULL);

	reg.target = PG_GETARG_OID(0);
	reg.time_column = NameStr(*PG_GETARG_NAME(1));
	reg.source = text_to_cstring(PG_GETARG_TEXT_PP(2));
	reg.label = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	reg.chunk = PG_GETARG_INTERVAL_P(4);
	reg.retention = PG_ARGISNULL(5) ? NULL : PG_GETARG_INTERVAL_P(5);
	reg.horizon = PG_ARGISNULL(6) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(6));
	reg.ledger = PG_ARGISNULL(7) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(7));
	reg.measure = text_to_cstring(PG_GETARG_TEXT_PP(8));
	reg.tolerance = PG_GETARG_DATUM(9);
	reg.ledger_gate = PG_GETARG_BOOL(10);
	reg.keep_replaced = false;
	reg.keep_for = NULL;
	reg.key = (Datum) 0;
	reg.allow_empty = false;
	if (PG_NARGS() > 13)
	{
		RequireArg(fcinfo, 11, "keep_replaced", NULL);
		reg.keep_replaced = PG_GETARG_BOOL(11);
		reg.keep_for = PG_ARGISNULL(12) ? NULL : PG_GETARG_INTERVAL_P(12);
		reg.key = PG_ARGISNULL(13) ? (Datum) 0 : PG_GETARG_DATUM(13);
	}
	if (PG_NARGS() > 14)
	{
		RequireArg(fcinfo, 14, "allow_empty", NULL);
		reg.allow_empty = PG_GETARG_BOOL(14);
	}

	SpiConnect();
	version = RegisterTarget(&reg);
	SpiFinish();
	PG_RETURN_INT32(version);
}

/*
 * backfill_unregister
 *		unregister(target, cascade): forget a target (UnregisterTarget).
 */
Datum
backfill_unregister(PG_FUNCTION_ARGS)
{
	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "target", NULL);

	SpiConnect();
	UnregisterTarget(PG_GETARG_OID(0),
					 PG_NARGS() > 1 && !PG_ARGISNULL(1) && PG_GETARG_BOOL(1));
	SpiFinish();
	PG_RETURN_VOID();
}

/*
 * backfill_set_strategy
 *		set_strategy(target, strategy) -> the previous strategy
 *		(SetTargetStrategy).
 */
Datum
backfill_set_strategy(PG_FUNCTION_ARGS)
{
	Oid			target;
	ReplaceStrategy strategy;
	ReplaceStrategy previous;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "target", NULL);
	RequireArg(fcinfo, 1, "strategy", "Valid strategies are auto, delete, truncate and swap.");
	target = PG_GETARG_OID(0);
	strategy = ParseStrategy(text_to_cstring(PG_GETARG_TEXT_PP(1)));

	SpiConnect();
	previous = SetTargetStrategy(target, strategy);
	SpiFinish();
	PG_RETURN_TEXT_P(cstring_to_text(StrategyName(previous)));
}

/*
 * backfill_export_definitions
 *		export_definitions(targets) -> the SQL that registers their current
 *		definitions again (ExportDefinitions); targets NULL: every target
 *		the caller may read.  The text is copied into the caller's memory
 *		before SPI's is freed.
 */
Datum
backfill_export_definitions(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = CurrentMemoryContext;
	MemoryContext oldcxt;
	char	   *script;
	text	   *result;

	CitusRequireCoordinator();
	RequireCatalogVersion();

	SpiConnect();
	script = ExportDefinitions(PG_ARGISNULL(0) ? NULL : PG_GETARG_ARRAYTYPE_P(0));
	/* the script is in SPI's memory, which SpiFinish frees: copy it out first */
	oldcxt = MemoryContextSwitchTo(cxt);
	result = cstring_to_text(script);
	MemoryContextSwitchTo(oldcxt);
	SpiFinish();
	PG_RETURN_TEXT_P(result);
}
