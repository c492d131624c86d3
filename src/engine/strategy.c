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

#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "backfill.h"


/*
 * KeepStrategy
 *		See backfill.h.  A keeping chunk keeps the replaced leaves' files
 *		when it replaces whole leaves by truncate or swap, else it deletes,
 *		moving the rows into the archive: keeping never makes a chunk fail
 *		that would run without it.  "auto" decides between them, whatever
 *		the strategy asked for, with two exceptions: an explicit delete
 *		(or a target that is not partitioned) always deletes, and an
 *		explicit truncate truncates where auto would swap.
 */
ReplaceStrategy
KeepStrategy(Oid target, const char *time_column, ReplaceStrategy strategy,
			 TimestampTz lo, TimestampTz hi)
{
	ReplaceStrategy chosen;

	if (strategy == STRATEGY_DELETE ||
		get_rel_relkind(target) != RELKIND_PARTITIONED_TABLE)
		return STRATEGY_DELETE;
	chosen = ChooseStrategy(target, time_column, STRATEGY_AUTO, lo, hi);
	if (chosen == STRATEGY_SWAP && strategy == STRATEGY_TRUNCATE)
		chosen = STRATEGY_TRUNCATE;
	if (chosen != STRATEGY_DELETE &&
		!PartitionCanKeepLeaves(target, time_column, lo, hi))
		chosen = STRATEGY_DELETE;
	return chosen;
}

/*
 * ReplaceRange
 *		See backfill.h.  Every check comes before the first row is
 *		touched; any error leaves the transaction to roll back whatever
 *		was done.  A chunk that keeps what it replaces ("keep") takes its
 *		strategy from KeepStrategy: on a partitioned target it may
 *		truncate or swap whole leaves and keep their files, else it
 *		deletes and moves the rows into the archive (doc/undo.md, "Kept
 *		leaves").
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

	if (keep != NULL)
		chosen = KeepStrategy(target, time_column, strategy, lo, hi);
	else
		chosen = ChooseStrategy(target, time_column, strategy, lo, hi);
	if (chosen == STRATEGY_DELETE)
		ReplaceByDelete(target, time_column, lo, hi, sq, measure, keep,
						result);
	else
		PartitionReplaceRange(target, time_column, lo, hi, sq, chosen,
							  measure, keep, result);
}

