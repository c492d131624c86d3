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
 * RunReplaceRequest
 *		See backfill.h.
 */
void
RunReplaceRequest(RunInfo *run, TimestampTz lo, TimestampTz hi,
				  const ArchiveKeep *keep, ReplaceRequest *req)
{
	memset(req, 0, sizeof(ReplaceRequest));
	req->target = run->target;
	req->time_column = run->time_column;
	req->lo = lo;
	req->hi = hi;
	req->source = run->source;
	req->strategy = run->strategy;
	req->measure = run->measure;
	req->keep = keep;
	req->cache = RunReplaceCache(run);
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
ReplaceRange(const ReplaceRequest *req, ReplaceResult *result)
{
	ReplaceRequest checked = *req;
	SourceQuery *sq;
	ReplaceStrategy chosen;

	CheckRangeBounds(req->lo, false, req->hi, false);
	CheckTargetPrivileges(req->target);
	(void) TimeColumnType(req->target, req->time_column);
	sq = ReplaceValidate(req, &checked.measure);

	memset(result, 0, sizeof(ReplaceResult));
	result->before_null = true;
	result->after_null = true;

	if (req->keep != NULL)
		chosen = KeepStrategy(req->target, req->time_column, req->strategy,
							  req->lo, req->hi);
	else
		chosen = ChooseStrategy(req->target, req->time_column, req->strategy,
								req->lo, req->hi);
	if (chosen == STRATEGY_DELETE)
		ReplaceByDelete(&checked, sq, result);
	else
		PartitionReplaceRange(&checked, sq, chosen, result);
}
