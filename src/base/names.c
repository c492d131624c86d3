/*-------------------------------------------------------------------------
 *
 * names.c
 *	  The words of backfill's vocabulary as the catalog, the SQL API and
 *	  the messages spell them, one name table each.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"

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

/* The values of plan's only_chunks, one per OnlyChunks bit. */
static const struct
{
	OnlyChunks	bit;
	const char *name;
}			only_chunks_names[] = {
	{ONLY_MISSING, "missing"},
	{ONLY_OUTDATED, "outdated"},
	{ONLY_FAILED, "failed"},
	{ONLY_STALE, "stale"},
};

/*
 * ParseOnlyChunks
 *		See backfill.h: plan's only_chunks, one name or several separated
 *		by commas (blanks around a name ignored); NULL is ONLY_ALL, an
 *		unknown or empty name 22023.
 */
int
ParseOnlyChunks(const char *name)
{
	int			only = ONLY_ALL;
	char	   *copy;
	char	   *item;
	char	   *next;

	if (name == NULL)
		return ONLY_ALL;
	RequireMaxLength(name, "only_chunks", BACKFILL_MAX_WORD);
	copy = pstrdup(name);
	for (item = copy; item != NULL; item = next)
	{
		char	   *end;
		bool		found = false;
		int			i;

		/* an empty item (",,", a trailing comma) matches no name */
		next = strchr(item, ',');
		if (next != NULL)
			*next++ = '\0';
		while (*item == ' ')
			item++;
		end = item + strlen(item);
		while (end > item && end[-1] == ' ')
			*--end = '\0';
		for (i = 0; i < lengthof(only_chunks_names); i++)
		{
			if (strcmp(item, only_chunks_names[i].name) == 0)
			{
				only |= only_chunks_names[i].bit;
				found = true;
			}
		}
		if (!found)
		{
			only = ONLY_ALL;
			break;
		}
	}
	pfree(copy);
	if (only == ONLY_ALL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for only_chunks: \"%s\"", name),
				 errhint("Use 'missing', 'outdated', 'failed' or 'stale', or several of them separated by commas, or leave it NULL to plan every chunk of the range.")));
	return only;
}

/*
 * OnlyChunksName
 *		The names of an only_chunks set joined with " or " (NULL for
 *		ONLY_ALL), palloc'd.
 */
const char *
OnlyChunksName(int only)
{
	StringInfoData buf;
	int			i;

	if (only == ONLY_ALL)
		return NULL;
	initStringInfo(&buf);
	for (i = 0; i < lengthof(only_chunks_names); i++)
	{
		if ((only & only_chunks_names[i].bit) == 0)
			continue;
		if (buf.len > 0)
			appendStringInfoString(&buf, " or ");
		appendStringInfoString(&buf, only_chunks_names[i].name);
	}
	return buf.data;
}

/* Run statuses, by RunStatus (the CHECK constraint of backfill.runs). */
static const char *const run_status_names[] = {
	[RUN_PLANNED] = "planned",
	[RUN_PROBED] = "probed",
	[RUN_FAILED] = "failed",
	[RUN_DONE] = "done",
	[RUN_CANCELLED] = "cancelled",
};

/* Chunk statuses, by ChunkStatus (the CHECK constraint of backfill.chunks). */
static const char *const chunk_status_names[] = {
	[CHUNK_NONE] = NULL,
	[CHUNK_PENDING] = "pending",
	[CHUNK_DONE] = "done",
	[CHUNK_FAILED] = "failed",
	[CHUNK_NO_SOURCE] = "no_source",
	[CHUNK_CANCELLED] = "cancelled",
};

/* Verdicts, by Verdict (the CHECK constraint of backfill.chunks.verdict). */
static const char *const verdict_names[] = {
	[VERDICT_NONE] = NULL,
	[VERDICT_OK] = "ok",
	[VERDICT_LEDGER_MISMATCH] = "ledger_mismatch",
	[VERDICT_OUTLIER] = "outlier",
	[VERDICT_NO_SOURCE] = "no_source",
	[VERDICT_NOT_RUN] = "not_run",
};

/*
 * NameIndex
 *		The index of name in a name table of n entries; NULL matches a NULL
 *		entry.  -1 when there is none.
 */
static int
NameIndex(const char *const *names, int n, const char *name)
{
	int			i;

	for (i = 0; i < n; i++)
	{
		if (name == NULL ? names[i] == NULL :
			names[i] != NULL && strcmp(name, names[i]) == 0)
			return i;
	}
	return -1;
}

/*
 * ParseRunStatus / RunStatusName
 *		A run status as the catalog spells it, and back.  Anything else
 *		cannot come from the catalog (its CHECK constraint): elog.
 */
RunStatus
ParseRunStatus(const char *name)
{
	int			i = NameIndex(run_status_names, lengthof(run_status_names), name);

	if (i < 0)
		elog(ERROR, "backfill: unknown run status \"%s\"", name ? name : "(null)");
	return (RunStatus) i;
}

const char *
RunStatusName(RunStatus status)
{
	unsigned int i = (unsigned int) status;

	if (i >= lengthof(run_status_names))
		elog(ERROR, "backfill: unknown run status %u", i);
	return run_status_names[i];
}

/*
 * ParseChunkStatus / ChunkStatusName
 *		A chunk status as the catalog spells it (NULL: CHUNK_NONE), and
 *		back.
 */
ChunkStatus
ParseChunkStatus(const char *name)
{
	int			i = NameIndex(chunk_status_names, lengthof(chunk_status_names), name);

	if (i < 0)
		elog(ERROR, "backfill: unknown chunk status \"%s\"", name);
	return (ChunkStatus) i;
}

const char *
ChunkStatusName(ChunkStatus status)
{
	unsigned int i = (unsigned int) status;

	if (i >= lengthof(chunk_status_names))
		elog(ERROR, "backfill: unknown chunk status %u", i);
	return chunk_status_names[i];
}

/*
 * ParseVerdict / VerdictName
 *		A verdict as the catalog spells it (NULL: VERDICT_NONE), and back.
 */
Verdict
ParseVerdict(const char *name)
{
	int			i = NameIndex(verdict_names, lengthof(verdict_names), name);

	if (i < 0)
		elog(ERROR, "backfill: unknown verdict \"%s\"", name);
	return (Verdict) i;
}

const char *
VerdictName(Verdict verdict)
{
	unsigned int i = (unsigned int) verdict;

	if (i >= lengthof(verdict_names))
		elog(ERROR, "backfill: unknown verdict %u", i);
	return verdict_names[i];
}

/* Failure causes, by FailureCause (the CHECK of chunks.error_cause). */
static const char *const failure_cause_names[] = {
	[CAUSE_NONE] = NULL,
	[CAUSE_DEFINITION] = "definition",
	[CAUSE_TRANSIENT] = "transient",
	[CAUSE_ENVIRONMENT] = "environment",
	[CAUSE_LEDGER] = "ledger",
	[CAUSE_EMPTY_SOURCE] = "empty_source",
};

/*
 * FailureCauseName
 *		The name of a failure cause as the catalog spells it (NULL for
 *		CAUSE_NONE).
 */
const char *
FailureCauseName(FailureCause cause)
{
	unsigned int i = (unsigned int) cause;

	if (i >= lengthof(failure_cause_names))
		elog(ERROR, "backfill: unknown failure cause %u", i);
	return failure_cause_names[i];
}

/*
 * ParseFailureCause
 *		The cause FailureCauseName names (a chunk's error_cause as recorded);
 *		CAUSE_NONE for NULL or a name it does not know (a chunk recorded by
 *		0.1.0, which kept no cause).
 */
FailureCause
ParseFailureCause(const char *name)
{
	unsigned int i;

	if (name == NULL)
		return CAUSE_NONE;
	for (i = 0; i < lengthof(failure_cause_names); i++)
	{
		if (failure_cause_names[i] != NULL &&
			strcmp(failure_cause_names[i], name) == 0)
			return (FailureCause) i;
	}
	return CAUSE_NONE;
}
