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

/* The values of plan's only_chunks, by OnlyChunks (ONLY_ALL is NULL). */
static const char *const only_chunks_names[] = {
	[ONLY_ALL] = NULL,
	[ONLY_MISSING] = "missing",
	[ONLY_OUTDATED] = "outdated",
	[ONLY_FAILED] = "failed",
};

/*
 * ParseOnlyChunks
 *		See backfill.h: plan's only_chunks; NULL is ONLY_ALL, an unknown
 *		value 22023.
 */
OnlyChunks
ParseOnlyChunks(const char *name)
{
	int			i;

	if (name == NULL)
		return ONLY_ALL;
	for (i = 0; i < lengthof(only_chunks_names); i++)
		if (only_chunks_names[i] != NULL && strcmp(name, only_chunks_names[i]) == 0)
			return (OnlyChunks) i;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for only_chunks: \"%s\"", name),
			 errhint("Use 'missing', 'outdated' or 'failed', or leave it NULL to plan every chunk of the range.")));
	return ONLY_ALL;			/* keep compiler quiet */
}

/*
 * OnlyChunksName
 *		The name of an only_chunks value (NULL for ONLY_ALL).
 */
const char *
OnlyChunksName(OnlyChunks only)
{
	unsigned int i = (unsigned int) only;

	if (i >= lengthof(only_chunks_names))
		elog(ERROR, "unknown only_chunks value %u", i);
	return only_chunks_names[i];
}
