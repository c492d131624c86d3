/*-------------------------------------------------------------------------
 *
 * replace.c
 *	  The delete strategy: replacing a target's rows in [lo, hi) by what a
 *	  source query yields with DELETE and INSERT, in the caller's
 *	  transaction (moving the deleted rows into the archive when the run
 *	  keeps them); measuring a range (MeasureRange, for every strategy);
 *	  clearing a range; and reverting a kept chunk (RevertRange).  The SQL functions replace_range and _in_range
 *	  are in api/primitives.c.
 *
 * ReplaceRange (strategy.c) checks privileges, the time column and the
 * source before anything runs, then dispatches on the strategy.  The
 * statements come from ComposeRangeDelete and
 * ComposeSourceInsert (validate.c): identifiers from OIDs, values as
 * parameters, operators and functions schema-qualified, the user's text
 * proven not to escape its place.
 *
 * SPI: ReplaceByDelete and ClearRange connect to SPI themselves (SPI_connect,
 * which nests inside a caller's connection, atomic or not) and disconnect
 * before returning; results are copied into the caller's memory context.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/nodeFuncs.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/guc.h"
#include "utils/plancache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "backfill.h"


/*
 * The state kept for the chunks of one call (backfill.h): what
 * ReplaceRange would otherwise redo for every chunk, the source and the
 * measure validated (a parse and an analysis each), the DELETE and the
 * INSERT composed (two parses more) and prepared (SPI_prepare as the
 * current user, the author: a parse, an analysis and a rewrite less per
 * chunk).  The key is everything the state was made from: the target,
 * the time column, the source's and the measure's texts, the user that
 * validated and prepared them, the search_path, and the number of
 * relcache invalidations seen so far (DDL on the target or on anything
 * else: validated again, as for the first chunk).  A request that differs
 * in any of them finds the state rebuilt, so nothing prepared for one
 * author or definition serves another.  PostgreSQL chooses a generic plan
 * or one per chunk (PrepareChunkStatement); a statement on a partitioned or
 * inherited table, or calling a function written in SQL, is planned with
 * each chunk's bounds, as SPI_execute_with_args did, so that it is pruned
 * at plan time and the same leaves are locked (a generic plan locks every
 * leaf).  The cache lives in a context of its own under the run's; the
 * kept plans are freed by a callback when that context goes, at the end of
 * the call or with the aborted transaction's memory.
 */
struct ReplaceCache
{
	MemoryContext cxt;			/* the validated state; reset when rebuilt */
	bool		valid;
	Oid			target;
	char	   *time_column;
	char	   *source;
	char	   *measure;		/* as given; NULL: none */
	Oid			userid;
	char	   *search_path;
	uint64		invals;
	SourceQuery *sq;
	const char *checked_measure;	/* ValidateMeasure's result */
	char	   *delete_sql;
	char	   *insert_sql;
	SPIPlanPtr	delete_plan;
	SPIPlanPtr	insert_plan;
};

/* relcache invalidations this backend has seen (ReplaceInvalCallback) */
static uint64 replace_invals = 0;
static bool replace_callback_registered = false;

/*
 * backfill.watches, read when a call makes its cache: its relcache
 * invalidation only tells the watch caches to read the watermarks again
 * (InvalidateWatchCache, sent by every chunk that moves its target's
 * watermark), and is not counted.
 */
static Oid	replace_watches_relid = InvalidOid;

/*
 * ReplaceInvalCallback
 *		Count a relcache invalidation: a cached state made before it is
 *		validated again.  That of backfill.watches is no DDL, and is not
 *		counted (replace_watches_relid); one of every relation (InvalidOid)
 *		is.
 */
static void
ReplaceInvalCallback(Datum arg, Oid relid)
{
	if (OidIsValid(relid) && relid == replace_watches_relid)
		return;
	replace_invals++;
}

/*
 * ReplaceCacheRelease
 *		Free the cache's kept plans (in CacheMemoryContext).  Also the
 *		memory context callback of the cache's context: when the run's
 *		context goes, at the end of the call or with an aborted
 *		transaction's memory, the plans go with it.
 */
static void
ReplaceCacheRelease(void *arg)
{
	ReplaceCache *rc = (ReplaceCache *) arg;

	rc->valid = false;
	if (rc->delete_plan != NULL)
		SPI_freeplan(rc->delete_plan);
	if (rc->insert_plan != NULL)
		SPI_freeplan(rc->insert_plan);
	rc->delete_plan = NULL;
	rc->insert_plan = NULL;
}

/*
 * ReplaceCacheClear
 *		Free the cache's kept plans and validated state.
 */
static void
ReplaceCacheClear(ReplaceCache *rc)
{
	ReplaceCacheRelease(rc);
	rc->sq = NULL;
	rc->checked_measure = NULL;
	rc->delete_sql = NULL;
	rc->insert_sql = NULL;
	MemoryContextReset(rc->cxt);
}

/*
 * RunReplaceCache
 *		See backfill.h.
 */
ReplaceCache *
RunReplaceCache(RunInfo *run)
{
	MemoryContext parent = GetMemoryChunkContext(run);
	MemoryContext cxt;
	MemoryContextCallback *cb;
	ReplaceCache *rc;

	if (run->replace_cache != NULL)
		return run->replace_cache;
	replace_watches_relid = WatchesRelid();
	if (!replace_callback_registered)
	{
		CacheRegisterRelcacheCallback(ReplaceInvalCallback, (Datum) 0);
		replace_callback_registered = true;
	}
	cxt = AllocSetContextCreate(parent, "backfill replace cache",
								ALLOCSET_SMALL_SIZES);
	rc = MemoryContextAllocZero(cxt, sizeof(ReplaceCache));
	rc->cxt = AllocSetContextCreate(cxt, "backfill replace state",
									ALLOCSET_SMALL_SIZES);
	cb = MemoryContextAllocZero(cxt, sizeof(MemoryContextCallback));
	cb->func = ReplaceCacheRelease;
	cb->arg = rc;
	MemoryContextRegisterResetCallback(cxt, cb);
	run->replace_cache = rc;
	return rc;
}

/*
 * ReplaceCacheMatches
 *		Whether rc's state was made for this request, by the current user,
 *		under the current search_path, with no relcache invalidation since.
 */
static bool
ReplaceCacheMatches(const ReplaceCache *rc, const ReplaceRequest *req)
{
	return rc->valid && rc->target == req->target &&
		rc->userid == GetUserId() &&
		rc->invals == replace_invals &&
		strcmp(rc->time_column, req->time_column) == 0 &&
		strcmp(rc->source, req->source) == 0 &&
		(rc->measure == NULL ? req->measure == NULL :
		 req->measure != NULL && strcmp(rc->measure, req->measure) == 0) &&
		strcmp(rc->search_path, namespace_search_path) == 0;
}

/*
 * ReplaceValidate
 *		See backfill.h.  Without a cache, or when the cache does not match
 *		the request, the source and the measure are validated now (the
 *		cache then keeps the result); else the cache's are returned.
 */
SourceQuery *
ReplaceValidate(const ReplaceRequest *req, const char **measure)
{
	ReplaceCache *rc = req->cache;
	MemoryContext old;
	uint64		invals = replace_invals;

	if (rc != NULL && ReplaceCacheMatches(rc, req))
	{
		*measure = rc->checked_measure;
		return rc->sq;
	}
	if (rc == NULL)
	{
		SourceQuery *sq = ValidateSourceQuery(req->source, req->target,
											  req->time_column);

		*measure = req->measure != NULL ?
			ValidateMeasure(req->measure, req->target) : NULL;
		return sq;
	}
	ReplaceCacheClear(rc);
	old = MemoryContextSwitchTo(rc->cxt);
	rc->sq = ValidateSourceQuery(req->source, req->target, req->time_column);
	rc->checked_measure = req->measure != NULL ?
		ValidateMeasure(req->measure, req->target) : NULL;
	rc->target = req->target;
	rc->time_column = pstrdup(req->time_column);
	rc->source = pstrdup(req->source);
	rc->measure = req->measure != NULL ? pstrdup(req->measure) : NULL;
	rc->userid = GetUserId();
	rc->search_path = pstrdup(namespace_search_path);
	rc->invals = invals;
	MemoryContextSwitchTo(old);
	rc->valid = true;
	*measure = rc->checked_measure;
	return rc->sq;
}

/*
 * IsSqlFunction
 *		check_functions_in_node callback: whether function func_id is
 *		written in SQL.
 */
static bool
IsSqlFunction(Oid func_id, void *context)
{
	HeapTuple	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(func_id));
	bool		sql;

	if (!HeapTupleIsValid(tuple))
		return true;
	sql = ((Form_pg_proc) GETSTRUCT(tuple))->prolang == SQLlanguageId;
	ReleaseSysCache(tuple);
	return sql;
}

/*
 * CallsSqlFunction
 *		Walker of PrunesPerBounds: whether a query or an expression calls a
 *		function written in SQL anywhere (in FROM, an expression, an
 *		operator, a cast).  The planner may inline such a function, and
 *		the tables its body reads are then in the plan without being in
 *		the statement's relationOids.
 */
static bool
CallsSqlFunction(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, CallsSqlFunction, context, 0);
	if (check_functions_in_node(node, IsSqlFunction, context))
		return true;
	return expression_tree_walker(node, CallsSqlFunction, context);
}

/*
 * PrunesPerBounds
 *		Whether a prepared statement reads or writes a table whose plan
 *		depends on the chunk's bounds beyond its own scan: a partitioned
 *		table (pruned at plan time, and a generic plan locks every leaf) or
 *		a table with inheritance children (excluded by their CHECK
 *		constraints at plan time).  Views are expanded by then, so their
 *		tables count.  A statement that calls a function written in SQL
 *		counts too, since the tables of an inlined function's body are
 *		seen only by the planner (even costing a generic plan locks them).
 */
static bool
PrunesPerBounds(SPIPlanPtr plan)
{
	ListCell   *lc;

	foreach(lc, SPI_plan_get_plan_sources(plan))
	{
		CachedPlanSource *ps = (CachedPlanSource *) lfirst(lc);
		ListCell   *rc;

		foreach(rc, ps->relationOids)
		{
			Oid			relid = lfirst_oid(rc);

			if (get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE ||
				has_subclass(relid))
				return true;
		}
		foreach(rc, ps->query_list)
		{
			if (CallsSqlFunction((Node *) lfirst(rc), NULL))
				return true;
		}
	}
	return false;
}

/*
 * PrepareChunkStatement
 *		Prepare a composed DML statement for the chunks of a call, as the
 *		current user, and keep it.  PostgreSQL chooses between a plan made
 *		for each chunk's bounds and a generic one reused for every chunk
 *		(after five chunks, when the generic one costs no more: planning
 *		was an eighth of a tiny chunk's time), as a PL/pgSQL loop does,
 *		unless the statement touches a partitioned or inherited table or
 *		calls a function written in SQL (PrunesPerBounds): then each chunk
 *		is planned with its own bounds, so that the same leaves are pruned
 *		and locked as by a statement run on its own.
 */
static SPIPlanPtr
PrepareChunkStatement(const char *sql, int nargs, Oid *argtypes)
{
	SPIPlanPtr	prepared = SPI_prepare_cursor(sql, nargs, argtypes, 0);

	if (prepared != NULL && PrunesPerBounds(prepared))
	{
		SPI_freeplan(prepared);
		prepared = SPI_prepare_cursor(sql, nargs, argtypes,
									  CURSOR_OPT_CUSTOM_PLAN);
	}
	if (prepared == NULL)
		elog(ERROR, "backfill: could not prepare %s: %s", sql,
			 SPI_result_code_string(SPI_result));
	if (SPI_keepplan(prepared) != 0)
		elog(ERROR, "backfill: could not keep the plan of %s", sql);
	return prepared;
}

/*
 * RunCounted
 *		Run a composed DML statement for req's [lo, hi) and return the
 *		number of rows it touched: the DELETE with $1, $2 in the time
 *		column's own type (RangeParams), the source's INSERT with
 *		SourceInsertParams.  With plan not NULL (a slot of the request's
 *		cache, whose state matches it: ReplaceValidate), the statement is
 *		prepared there once, as the current user, and executed from there.
 */
static int64
RunCounted(const ReplaceRequest *req, const char *sql, SPIPlanPtr *plan,
		   int dml_result)
{
	Oid			argtypes[4];
	Datum		values[4];
	int			nargs = (dml_result == SPI_OK_DELETE ? 2 : 4);
	int			rc;

	if (dml_result == SPI_OK_DELETE)
		RangeParams(req->target, req->time_column, req->lo, req->hi,
					argtypes, values);
	else
		SourceInsertParams(req->target, req->time_column, req->lo, req->hi,
						   argtypes, values);
	if (plan == NULL)
	{
		SpiExec(sql, nargs, argtypes, values, NULL, false, 0, dml_result);
		return (int64) SPI_processed;
	}
	if (*plan == NULL)
		*plan = PrepareChunkStatement(sql, nargs, argtypes);
	/*
	 * plan_cache_mode = force_generic_plan would override the custom plans
	 * of a statement on a partitioned table (PrunesPerBounds): auto instead,
	 * until the author gate's settings are popped.  Checked at every
	 * execution, since the user's code run before it may set it again.
	 */
	if (plan_cache_mode == PLAN_CACHE_MODE_FORCE_GENERIC_PLAN)
		(void) set_config_option("plan_cache_mode", "auto", PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
								 false);
	rc = SPI_execute_plan(*plan, values, NULL, false, 0);
	if (rc != dml_result)
		elog(ERROR, "backfill: statement returned %s, expected %s: %s",
			 SPI_result_code_string(rc), SPI_result_code_string(dml_result),
			 sql);
	return (int64) SPI_processed;
}

/*
 * RunRangeDelete
 *		The DELETE of req's range, prepared in the request's cache when it
 *		has one (see RunCounted).
 */
static int64
RunRangeDelete(const ReplaceRequest *req)
{
	ReplaceCache *rc = req->cache;

	if (rc == NULL || !rc->valid)
		return RunCounted(req, ComposeRangeDelete(req->target,
												  req->time_column),
						  NULL, SPI_OK_DELETE);
	if (rc->delete_sql == NULL)
		rc->delete_sql = MemoryContextStrdup(rc->cxt,
											 ComposeRangeDelete(req->target,
																req->time_column));
	return RunCounted(req, rc->delete_sql, &rc->delete_plan, SPI_OK_DELETE);
}

/*
 * RunSourceInsert
 *		The INSERT of source's rows for req's range, prepared in the
 *		request's cache when it has one (see RunCounted).
 */
static int64
RunSourceInsert(const ReplaceRequest *req, const SourceQuery *source)
{
	ReplaceCache *rc = req->cache;

	if (rc == NULL || !rc->valid || rc->sq != source)
		return RunCounted(req, ComposeSourceInsert(req->target,
												   req->time_column, source),
						  NULL, SPI_OK_INSERT);
	if (rc->insert_sql == NULL)
		rc->insert_sql = MemoryContextStrdup(rc->cxt,
											 ComposeSourceInsert(req->target,
																 req->time_column,
																 source));
	return RunCounted(req, rc->insert_sql, &rc->insert_plan, SPI_OK_INSERT);
}

/*
 * MeasureIsRowCount
 *		Whether the measure is the default count(*): then the figures are
 *		the row counts themselves and need no scan.
 */
static bool
MeasureIsRowCount(const char *measure)
{
	return pg_strcasecmp(measure, "count(*)") == 0;
}

/*
 * MeasureRange
 *		Count (and measure) the target's rows in [lo, hi) into
 *		result->rows_deleted and before_value, the value copied into
 *		outcxt.  Called before rows are deleted, truncated or swapped away,
 *		and again after the insert for the figure over the new rows.  One
 *		scan of the range in cached pages is cheaper than materializing a
 *		chunk's DELETE/INSERT ... RETURNING rows (bench/RESULTS.md).  Not
 *		read-only: SPI then takes a snapshot that sees this transaction's
 *		own work.  Caller is connected to SPI.
 */
void
MeasureRange(Oid target, const char *time_column,
			 TimestampTz lo, TimestampTz hi, const char *measure,
			 MemoryContext outcxt, ReplaceResult *result)
{
	Oid			argtypes[2] = {TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[2];
	char	   *sql;
	char	   *where;
	const char *col = quote_identifier(time_column);
	bool		isnull;

	/* ComposeMeasureSelect proves the text it returns */
	RangeParams(target, time_column, lo, hi, argtypes, values);
	where = psprintf("WHERE %s OPERATOR(pg_catalog.>=) $1 "
					 "AND %s OPERATOR(pg_catalog.<) $2", col, col);
	if (measure != NULL)
	{
		MemoryContext cxt = CurrentMemoryContext;

		sql = ComposeMeasureSelect("pg_catalog.count(*)", measure,
								   QualifiedRelName(target), where);
		/* an error raised by the measure's text says it is the measure's */
		PG_TRY();
		{
			SpiExec(sql, 2, argtypes, values, NULL, false, 0, SPI_OK_SELECT);
		}
		PG_CATCH();
		{
			ReThrowNamingSetting(cxt, "measure", "in the measure");
		}
		PG_END_TRY();
	}
	else
	{
		sql = psprintf("SELECT pg_catalog.count(*) FROM %s %s",
					   QualifiedRelName(target), where);
		SpiExec(sql, 2, argtypes, values, NULL, false, 0, SPI_OK_SELECT);
	}
	result->rows_deleted = SpiGetInt64(0, 1, &isnull);
	if (measure != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(outcxt);

		result->before_value = SpiGetDatumCopy(0, 2, &result->before_null);
		MemoryContextSwitchTo(old);
	}
}

/*
 * MeasureAfter
 *		The figures of a delete-and-insert of [lo, hi): with a measure
 *		that is not count(*), scanned after the insert ("scan"; the one
 *		before was read by the caller); with count(*), the row counts.
 *		Caller is connected to SPI.
 */
static void
MeasureAfter(Oid target, const char *time_column, TimestampTz lo,
			 TimestampTz hi, const char *measure, bool scan,
			 MemoryContext outer, ReplaceResult *result)
{
	if (scan)
	{
		ReplaceResult after;

		MeasureRange(target, time_column, lo, hi, measure, outer, &after);
		result->after_value = after.before_value;
		result->after_null = after.before_null;
	}
	else if (measure != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(outer);

		result->before_value = DirectFunctionCall1(int8_numeric,
												   Int64GetDatum(result->rows_deleted));
		result->before_null = false;
		result->after_value = DirectFunctionCall1(int8_numeric,
												  Int64GetDatum(result->rows_inserted));
		result->after_null = false;
		MemoryContextSwitchTo(old);
	}
	result->have_values = (measure != NULL);
	result->strategy = STRATEGY_DELETE;
}

/*
 * ReplaceByDelete
 *		See backfill.h.  The delete strategy: DELETE the range, INSERT the
 *		source's rows.  With a measure, the figure over the range is read
 *		before the DELETE and after the INSERT (two scans of cached pages;
 *		far cheaper than materializing the RETURNING rows of a large
 *		chunk).  With "keep", the deleted rows move into the target's
 *		archive (ArchiveDeleteRange).  Connects to SPI itself; the figures
 *		are copied into the caller's memory context.
 */
void
ReplaceByDelete(const ReplaceRequest *req, const SourceQuery *source,
				ReplaceResult *result)
{
	MemoryContext outer = CurrentMemoryContext;
	Oid			target = req->target;
	const char *time_column = req->time_column;
	const char *measure = req->measure;
	bool		scan = (measure != NULL && !MeasureIsRowCount(measure));

	SpiConnect();
	if (scan)
		MeasureRange(target, time_column, req->lo, req->hi, measure, outer,
					 result);
	if (req->keep != NULL)
		result->rows_deleted = ArchiveDeleteRange(target, time_column,
												  req->lo, req->hi, req->keep);
	else
		result->rows_deleted = RunRangeDelete(req);
	result->rows_inserted = RunSourceInsert(req, source);
	MeasureAfter(target, time_column, req->lo, req->hi, measure, scan, outer,
				 result);
	SpiFinish();
}

/*
 * ClearRange
 *		See backfill.h.
 */
int64
ClearRange(const ReplaceRequest *req)
{
	int64		deleted;

	CheckRangeBounds(req->lo, false, req->hi, false);
	CheckTargetPrivileges(req->target);
	(void) TimeColumnType(req->target, req->time_column);

	if (req->keep != NULL)
		return ArchiveDeleteRange(req->target, req->time_column, req->lo,
								  req->hi, req->keep);
	SpiConnect();
	deleted = RunCounted(req, ComposeRangeDelete(req->target,
												 req->time_column),
						 NULL, SPI_OK_DELETE);
	SpiFinish();
	return deleted;
}

/*
 * RevertRange
 *		See backfill.h.  A revert chunk: the rows now in [lo, hi) move into
 *		the archive under the revert run's own chunk (keep: so that the
 *		revert can be reverted), and the rows chunk chunk_no of run
 *		"reverted" kept come back.  Measured as the delete strategy is.
 *		Kept leaves take their files back when nothing an INSERT would
 *		check changed since (ArchiveLeavesUnchanged); else their rows go
 *		back row by row, like kept rows, through an INSERT that checks them.
 */
void
RevertRange(const ReplaceRequest *req, int64 reverted, int32 chunk_no,
			ReplaceResult *result)
{
	MemoryContext outer = CurrentMemoryContext;
	Oid			target = req->target;
	const char *time_column = req->time_column;
	const char *measure = req->measure;
	TimestampTz lo = req->lo;
	TimestampTz hi = req->hi;
	bool		scan = (measure != NULL && !MeasureIsRowCount(measure));

	CheckRangeBounds(lo, false, hi, false);
	CheckTargetPrivileges(target);
	(void) TimeColumnType(target, time_column);
	if (measure != NULL)
		measure = ValidateMeasure(measure, target);

	memset(result, 0, sizeof(ReplaceResult));
	result->before_null = true;
	result->after_null = true;

	SpiConnect();
	if (ArchiveHasKeptLeaves(reverted, chunk_no) &&
		ArchiveLeavesUnchanged(target, reverted, chunk_no))
	{
		/* kept leaves: their files are exchanged back, no row is copied */
		MeasureRange(target, time_column, lo, hi, measure, outer, result);
		result->rows_inserted = ArchiveRestoreLeaves(target, reverted,
													 chunk_no, req->keep,
													 result->rows_deleted);
		MeasureAfter(target, time_column, lo, hi, measure, measure != NULL,
					 outer, result);
		result->strategy = STRATEGY_SWAP;
		SpiFinish();
		return;
	}
	if (scan)
		MeasureRange(target, time_column, lo, hi, measure, outer, result);
	result->rows_deleted = ArchiveDeleteRange(target, time_column, lo, hi,
											  req->keep);
	result->rows_inserted = ArchiveRestoreRows(target, reverted, chunk_no);
	MeasureAfter(target, time_column, lo, hi, measure, scan, outer, result);
	SpiFinish();
}

