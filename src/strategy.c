/*-------------------------------------------------------------------------
 *
 * strategy.c
 *	  Replacement strategies: the names auto, delete, truncate and swap,
 *	  parsed once at the SQL boundary into a ReplaceStrategy; ReplaceRange,
 *	  which checks everything, lets ChooseStrategy resolve the strategy for
 *	  the range and dispatches to the delete strategy (replace.c) or to
 *	  truncate and swap (partition.c); and set_strategy.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_set_strategy);

/* The names of the strategies, by ReplaceStrategy. */
static const char *const strategy_names[] = {
	[STRATEGY_AUTO] = "auto",
	[STRATEGY_DELETE] = "delete",
	[STRATEGY_TRUNCATE] = "truncate",
	[STRATEGY_SWAP] = "swap",
};

/*
 * ParseStrategy
 *		See backfill.h: a strategy name as the user (or the catalog) spells
 *		it; 22004 for NULL, 22023 for an unknown name.
 */
ReplaceStrategy
ParseStrategy(const char *name)
{
	int			i;

	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("strategy must not be null"),
				 errhint("Valid strategies are auto, delete, truncate and swap.")));
	RequireMaxLength(name, "strategy", BACKFILL_MAX_WORD);
	for (i = 0; i < lengthof(strategy_names); i++)
		if (strcmp(name, strategy_names[i]) == 0)
			return (ReplaceStrategy) i;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown strategy \"%s\"", name),
			 errhint("Valid strategies are auto, delete, truncate and swap.")));
	return STRATEGY_AUTO;		/* keep compiler quiet */
}

/*
 * StrategyName
 *		The name of a strategy, as the catalog and messages spell it.
 */
const char *
StrategyName(ReplaceStrategy strategy)
{
	unsigned int i = (unsigned int) strategy;

	if (i >= lengthof(strategy_names))
		elog(ERROR, "unknown replace strategy %u", i);
	return strategy_names[i];
}

/*
 * ReplaceRange
 *		See backfill.h.  Every check comes before the first row is
 *		touched; any error leaves the transaction to roll back whatever
 *		was done.
 */
void
ReplaceRange(Oid target, const char *time_column,
			 TimestampTz lo, TimestampTz hi,
			 const char *source, ReplaceStrategy strategy,
			 const char *measure, ReplaceResult *result)
{
	SourceQuery *sq;
	ReplaceStrategy chosen;

	CheckRangeBounds(lo, false, hi, false);
	CheckTargetPrivileges(target);
	(void) TimeColumnType(target, time_column);
	sq = ValidateSourceQuery(source, target, time_column);
	if (measure != NULL)
		measure = ValidateMeasure(measure, target);

	memset(result, 0, sizeof(ReplaceResult));
	result->before_null = true;
	result->after_null = true;

	chosen = ChooseStrategy(target, time_column, strategy, lo, hi);
	if (chosen == STRATEGY_DELETE)
		ReplaceByDelete(target, time_column, lo, hi, sq, measure, result);
	else
		PartitionReplaceRange(target, time_column, lo, hi, sq, chosen,
							  measure, result);
}

/*
 * backfill_set_strategy
 *		set_strategy(target, strategy) -> the previous strategy: how the
 *		chunks of the target's runs replace their rows from now on (auto,
 *		delete, truncate or swap).  The caller must be allowed to rewrite
 *		the target (CheckTargetPrivileges); the catalog is written as the
 *		extension owner.
 */
Datum
backfill_set_strategy(PG_FUNCTION_ARGS)
{
	Oid			target;
	ReplaceStrategy strategy;
	Oid			argtypes[2] = {REGCLASSOID, TEXTOID};
	Datum		values[2];
	char	   *previous;
	text	   *result;

	RequireArg(fcinfo, 0, "target", NULL);
	RequireArg(fcinfo, 1, "strategy", "Valid strategies are auto, delete, truncate and swap.");
	target = PG_GETARG_OID(0);
	strategy = ParseStrategy(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	if (get_rel_name(target) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", target)));
	CheckTargetPrivileges(target);
	CitusCheckStrategy(target, strategy);	/* Citus: no swap */

	values[0] = ObjectIdGetDatum(target);
	values[1] = CStringGetTextDatum(StrategyName(strategy));
	SpiConnect();
	{
		Definition *def = LoadDefinition(target, 0);
		int32		version = def->version;
		Oid			author = def->author;
		Oid			types[4] = {REGCLASSOID, TEXTOID, INT4OID, OIDOID};
		Datum		vals[4];

		previous = pstrdup(StrategyName(def->strategy));

		/*
		 * The new version is authored by the caller, who adopts the current
		 * version's text: only a role with its author's privileges may.
		 */
		CheckAuthor(author, target, version);
		vals[0] = ObjectIdGetDatum(target);
		vals[1] = CStringGetTextDatum(StrategyName(strategy));
		vals[2] = Int32GetDatum(version);
		vals[3] = ObjectIdGetDatum(GetUserId());
		CatalogExec("INSERT INTO backfill.definitions (target, version, label,"
					" source, source_hash, created_by, author, time_column, chunk,"
					" source_retention, source_horizon, ledger, measure, tolerance,"
					" ledger_gate, strategy)"
					" SELECT d.target, m.v OPERATOR(pg_catalog.+) 1, d.label,"
					" d.source, d.source_hash,"
					" (SELECT rolname FROM pg_catalog.pg_roles"
					"  WHERE oid OPERATOR(pg_catalog.=) $4),"
					" $4, d.time_column, d.chunk, d.source_retention,"
					" d.source_horizon, d.ledger, d.measure, d.tolerance,"
					" d.ledger_gate, $2"
					" FROM backfill.definitions d,"
					" (SELECT pg_catalog.max(version) AS v FROM backfill.definitions"
					"  WHERE target OPERATOR(pg_catalog.=) $1) m"
					" WHERE d.target OPERATOR(pg_catalog.=) $1"
					" AND d.version OPERATOR(pg_catalog.=) $3"
					" AND (d.strategy, d.author) IS DISTINCT FROM ($2, $4)",
					4, types, vals, NULL, SPI_OK_INSERT);
		CatalogExec("UPDATE backfill.targets SET strategy = $2,"
					" current_version = (SELECT pg_catalog.max(version)"
					"  FROM backfill.definitions"
					"  WHERE target OPERATOR(pg_catalog.=) $1)"
					" WHERE target OPERATOR(pg_catalog.=) $1",
					2, argtypes, values, NULL, SPI_OK_UPDATE);
	}
	result = cstring_to_text(previous);
	SpiFinish();
	PG_RETURN_TEXT_P(result);
}
