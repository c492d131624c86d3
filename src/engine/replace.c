/*-------------------------------------------------------------------------
 *
 * replace.c
 *	  The delete strategy: replacing a target's rows in [lo, hi) by what a
 *	  source query yields with DELETE and INSERT, in the caller's
 *	  transaction; measuring a range (MeasureRange, for every strategy);
 *	  clearing a range; and the SQL functions replace_range and _in_range.
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

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_replace_range);
PG_FUNCTION_INFO_V1(backfill_in_range);

/*
 * RunCounted
 *		Run a composed DML statement for [lo, hi) and return the number of
 *		rows it touched: the DELETE with $1, $2 in the time column's own
 *		type (RangeParams), the source's INSERT with SourceInsertParams.
 */
static int64
RunCounted(const char *sql, Oid target, const char *time_column,
		   TimestampTz lo, TimestampTz hi, int dml_result)
{
	Oid			argtypes[4];
	Datum		values[4];

	if (dml_result == SPI_OK_DELETE)
	{
		RangeParams(target, time_column, lo, hi, argtypes, values);
		SpiExec(sql, 2, argtypes, values, NULL, false, 0, dml_result);
	}
	else
	{
		SourceInsertParams(target, time_column, lo, hi, argtypes, values);
		SpiExec(sql, 4, argtypes, values, NULL, false, 0, dml_result);
	}
	return (int64) SPI_processed;
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
		sql = ComposeMeasureSelect("pg_catalog.count(*)", measure,
								   QualifiedRelName(target), where);
	else
		sql = psprintf("SELECT pg_catalog.count(*) FROM %s %s",
					   QualifiedRelName(target), where);
	SpiExec(sql, 2, argtypes, values, NULL, false, 0, SPI_OK_SELECT);
	result->rows_deleted = SpiGetInt64(0, 1, &isnull);
	if (measure != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(outcxt);

		result->before_value = SpiGetDatumCopy(0, 2, &result->before_null);
		MemoryContextSwitchTo(old);
	}
}

/*
 * ReplaceByDelete
 *		See backfill.h.  The delete strategy: DELETE the range, INSERT the
 *		source's rows.  With a measure, the figure over the range is read
 *		before the DELETE and after the INSERT (two scans of cached pages;
 *		far cheaper than materializing the RETURNING rows of a large
 *		chunk).  Connects to SPI itself; the figures are copied into the
 *		caller's memory context.
 */
void
ReplaceByDelete(Oid target, const char *time_column,
				TimestampTz lo, TimestampTz hi, const SourceQuery *source,
				const char *measure, ReplaceResult *result)
{
	MemoryContext outer = CurrentMemoryContext;
	bool		scan = (measure != NULL && !MeasureIsRowCount(measure));

	SpiConnect();
	if (scan)
		MeasureRange(target, time_column, lo, hi, measure, outer, result);
	result->rows_deleted =
		RunCounted(ComposeRangeDelete(target, time_column),
				   target, time_column, lo, hi, SPI_OK_DELETE);
	result->rows_inserted =
		RunCounted(ComposeSourceInsert(target, time_column, source),
				   target, time_column, lo, hi, SPI_OK_INSERT);
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
	SpiFinish();
}

/*
 * ClearRange
 *		See backfill.h.
 */
int64
ClearRange(Oid target, const char *time_column,
		   TimestampTz lo, TimestampTz hi)
{
	int64		deleted;

	CheckRangeBounds(lo, false, hi, false);
	CheckTargetPrivileges(target);
	(void) TimeColumnType(target, time_column);

	SpiConnect();
	deleted = RunCounted(ComposeRangeDelete(target, time_column),
						 target, time_column, lo, hi, SPI_OK_DELETE);
	SpiFinish();
	return deleted;
}

/*
 * backfill_replace_range
 *		replace_range(target, time_column, range_start, range_end, source,
 *		strategy) -> one row (rows_deleted, rows_inserted)
 */
Datum
backfill_replace_range(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ReplaceResult result;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	ReplaceStrategy strategy;

	RequireArg(fcinfo, 0, "target", NULL);
	RequireArg(fcinfo, 1, "time column", NULL);
	CheckRangeBounds(PG_ARGISNULL(2) ? 0 : PG_GETARG_TIMESTAMPTZ(2),
					 PG_ARGISNULL(2),
					 PG_ARGISNULL(3) ? 0 : PG_GETARG_TIMESTAMPTZ(3),
					 PG_ARGISNULL(3));
	RequireArg(fcinfo, 4, "source query", NULL);
	RequireArg(fcinfo, 5, "strategy", "Valid strategies are auto, delete, truncate and swap.");
	strategy = ParseStrategy(text_to_cstring(PG_GETARG_TEXT_PP(5)));

	ReplaceRange(PG_GETARG_OID(0), NameStr(*PG_GETARG_NAME(1)),
				 PG_GETARG_TIMESTAMPTZ(2), PG_GETARG_TIMESTAMPTZ(3),
				 text_to_cstring(PG_GETARG_TEXT_PP(4)), strategy,
				 NULL, &result);

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
