/*-------------------------------------------------------------------------
 *
 * strategy.c
 *	  ReplaceRange, the top of the replacement: it checks everything, lets
 *	  ChooseStrategy (partition.c, beside the partition facts it reads)
 *	  resolve the strategy for the range, and dispatches to the delete
 *	  strategy (replace.c) or to truncate and swap (partition.c).  The
 *	  strategy names are in base/names.c, set_strategy in
 *	  orchestration/registry.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "backfill.h"


/*
 * ReplaceRange
 *		See backfill.h.  Every check comes before the first row is
 *		touched; any error leaves the transaction to roll back whatever
 *		was done.  A chunk that keeps what it replaces ("keep") always
 *		uses the delete strategy (doc/undo.md).
 */
void
ReplaceRange(Oid target, const char *time_column,
			 TimestampTz lo, TimestampTz hi,
			 const char *source, ReplaceStrategy strategy,
			 const char *measure, const ArchiveKeep *keep,
			 ReplaceResult *result)
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

	/* a keeping chunk deletes: its rows move into the archive */
	if (keep != NULL)
		chosen = STRATEGY_DELETE;
	else
		chosen = ChooseStrategy(target, time_column, strategy, lo, hi);
	if (chosen == STRATEGY_DELETE)
		ReplaceByDelete(target, time_column, lo, hi, sq, measure, keep,
						result);
	else
		PartitionReplaceRange(target, time_column, lo, hi, sq, chosen,
							  measure, result);
}

