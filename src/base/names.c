/*-------------------------------------------------------------------------
 *
 * names.c
 *	  The words of backfill's vocabulary as the catalog, the SQL API and
 *	  the messages spell them, one name table each.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "backfill.h"

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
