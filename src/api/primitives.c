/*-------------------------------------------------------------------------
 *
 * primitives.c
 *	  SQL entry points of the primitives (doc/primitives.md): split_range,
 *	  replace_range and _in_range, the row check inside every generated
 *	  INSERT; and _owner_guard, what the owner-rights guard refuses.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "parser/analyze.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "backfill.h"

/*
 * backfill_split_range
 *		split_range(range_start, range_end, step)
 *		  -> setof (chunk_no, chunk_start, chunk_end)
 *
 * All bounds are computed (and every error raised) on the first call, so a
 * bad range never yields a partial result.
 */
PG_FUNCTION_INFO_V1(backfill_split_range);
Datum
backfill_split_range(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;
	TimestampTz *bounds;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext oldcontext;
		TupleDesc	tupdesc;
		int			n;

		funcctx = SRF_FIRSTCALL_INIT();
		oldcontext = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);

		n = ComputeChunkBounds(PG_ARGISNULL(0) ? 0 : PG_GETARG_TIMESTAMPTZ(0),
							   PG_ARGISNULL(0),
							   PG_ARGISNULL(1) ? 0 : PG_GETARG_TIMESTAMPTZ(1),
							   PG_ARGISNULL(1),
							   PG_ARGISNULL(2) ? NULL : PG_GETARG_INTERVAL_P(2),
							   PG_ARGISNULL(2),
							   &bounds);
		if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "return type must be a row type");
		funcctx->tuple_desc = BlessTupleDesc(tupdesc);
		funcctx->user_fctx = bounds;
		funcctx->max_calls = n;
		MemoryContextSwitchTo(oldcontext);
	}

	funcctx = SRF_PERCALL_SETUP();
	bounds = (TimestampTz *) funcctx->user_fctx;

	if (funcctx->call_cntr < funcctx->max_calls)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};
		int			k = (int) funcctx->call_cntr;
		HeapTuple	tuple;

		values[0] = Int32GetDatum(k + 1);
		values[1] = TimestampTzGetDatum(bounds[k]);
		values[2] = TimestampTzGetDatum(bounds[k + 1]);
		tuple = heap_form_tuple(funcctx->tuple_desc, values, nulls);
		SRF_RETURN_NEXT(funcctx, HeapTupleGetDatum(tuple));
	}
	SRF_RETURN_DONE(funcctx);
}

/*
 * backfill_replace_range
 *		replace_range(target, time_column, range_start, range_end, source,
 *		strategy) -> one row (rows_deleted, rows_inserted)
 */
PG_FUNCTION_INFO_V1(backfill_replace_range);
Datum
backfill_replace_range(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ReplaceResult result;
	ReplaceRequest req;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	ReplaceStrategy strategy;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "target", NULL);
	RequireArg(fcinfo, 1, "time column", NULL);
	RangeArgs(fcinfo, 2);
	RequireArg(fcinfo, 4, "source query", NULL);
	RequireArg(fcinfo, 5, "strategy", "Valid strategies are auto, delete, truncate and swap.");
	strategy = ParseStrategy(text_to_cstring(PG_GETARG_TEXT_PP(5)));

	memset(&req, 0, sizeof(req));
	req.target = PG_GETARG_OID(0);
	req.time_column = NameStr(*PG_GETARG_NAME(1));
	req.lo = PG_GETARG_TIMESTAMPTZ(2);
	req.hi = PG_GETARG_TIMESTAMPTZ(3);
	req.source = text_to_cstring(PG_GETARG_TEXT_PP(4));
	req.strategy = strategy;
	ReplaceRange(&req, &result);

	InitMaterializedSRF(fcinfo, 0);
	values[0] = Int64GetDatum(result.rows_deleted);
	values[1] = Int64GetDatum(result.rows_inserted);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

/*
 * InRangeText
 *		A value of _in_range's type as text: timestamptz as timestamptz_to_str
 *		writes it, date and timestamp by their output functions.
 */
static char *
InRangeText(Oid type, Datum value)
{
	Oid			outfunc;
	bool		varlena;

	if (type == TIMESTAMPTZOID)
		return TimestampText(DatumGetTimestampTz(value));
	getTypeOutputInfo(type, &outfunc, &varlena);
	return OidOutputFunctionCall(outfunc, value);
}

/*
 * backfill_in_range
 *		_in_range(t, lo, hi) for timestamptz, timestamp and date: t when
 *		lo <= t < hi; a source row outside the range is a check violation
 *		(23514), one with a NULL time a not-null violation (23502).  Not
 *		strict, so NULL reaches us.  ComposeSourceInsert puts it in the
 *		select list of the INSERT, with the bounds in the column's type.
 */
PG_FUNCTION_INFO_V1(backfill_in_range);
Datum
backfill_in_range(PG_FUNCTION_ARGS)
{
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, 0);
	Datum		t;
	Datum		lo;
	Datum		hi;
	bool		outside;

	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("range bounds must not be null")));
	lo = PG_GETARG_DATUM(1);
	hi = PG_GETARG_DATUM(2);
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("source row has a null time"),
				 errdetail("Every source row must fall inside the range [%s, %s).",
						   InRangeText(type, lo), InRangeText(type, hi))));
	t = PG_GETARG_DATUM(0);
	if (type == DATEOID)
		outside = (DatumGetDateADT(t) < DatumGetDateADT(lo) ||
				   DatumGetDateADT(t) >= DatumGetDateADT(hi));
	else if (type == TIMESTAMPOID || type == TIMESTAMPTZOID)
		outside = (DatumGetTimestamp(t) < DatumGetTimestamp(lo) ||
				   DatumGetTimestamp(t) >= DatumGetTimestamp(hi));
	else
		elog(ERROR, "backfill: _in_range called with type %u", type);
	if (outside)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("source row outside the range"),
				 errdetail("The row's time %s is not in [%s, %s).",
						   InRangeText(type, t), InRangeText(type, lo),
						   InRangeText(type, hi)),
				 errhint("Filter the source on $1 and $2: WHERE time >= $1 AND time < $2.")));
	PG_RETURN_DATUM(t);
}

/*
 * backfill__owner_guard
 *		_owner_guard(statement) -> what the owner-rights guard (guard.c)
 *		refuses in it ("relation public.t", "function f(integer)", ...),
 *		NULL when it would let every query of it run as the extension
 *		owner.  The statement is parsed and analysed (with search_path
 *		pinned, as the guarded statements are; parameters $n take the
 *		types they are used as), never planned or run.  Superusers only:
 *		it shows the extension's rule, to check it (sql/89_owner_guard.sql)
 *		and to read it.
 */
PG_FUNCTION_INFO_V1(backfill__owner_guard);
Datum
backfill__owner_guard(PG_FUNCTION_ARGS)
{
	char	   *sql;
	List	   *raw;
	ListCell   *lc;
	char	   *refusal = NULL;
	int			nest;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "statement", NULL);
	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function _owner_guard"),
				 errdetail("Only a superuser may ask what the owner-rights guard refuses.")));
	sql = text_to_cstring(PG_GETARG_TEXT_PP(0));
	RequireMaxLength(sql, "statement", 1000000);

	nest = SpiPinSearchPath();
	raw = pg_parse_query(sql);
	foreach(lc, raw)
	{
		Oid		   *types = NULL;
		int			ntypes = 0;
		Query	   *query;

		CHECK_FOR_INTERRUPTS();
		query = parse_analyze_varparams(lfirst_node(RawStmt, lc), sql,
										&types, &ntypes, NULL);
		refusal = GuardRefusal(query);
		if (refusal != NULL)
			break;
	}
	SpiUnpinSearchPath(nest);
	if (refusal == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(refusal));
}
