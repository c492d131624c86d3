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
ReplaceByDelete(Oid target, const char *time_column,
				TimestampTz lo, TimestampTz hi, const SourceQuery *source,
				const char *measure, const ArchiveKeep *keep,
				ReplaceResult *result)
{
	MemoryContext outer = CurrentMemoryContext;
	bool		scan = (measure != NULL && !MeasureIsRowCount(measure));

	SpiConnect();
	if (scan)
		MeasureRange(target, time_column, lo, hi, measure, outer, result);
	if (keep != NULL)
		result->rows_deleted = ArchiveDeleteRange(target, time_column, lo, hi,
												  keep);
	else
		result->rows_deleted =
			RunCounted(ComposeRangeDelete(target, time_column),
					   target, time_column, lo, hi, SPI_OK_DELETE);
	result->rows_inserted =
		RunCounted(ComposeSourceInsert(target, time_column, source),
				   target, time_column, lo, hi, SPI_OK_INSERT);
	MeasureAfter(target, time_column, lo, hi, measure, scan, outer, result);
	SpiFinish();
}

/*
 * ClearRange
 *		See backfill.h.
 */
int64
ClearRange(Oid target, const char *time_column,
		   TimestampTz lo, TimestampTz hi, const ArchiveKeep *keep)
{
	int64		deleted;

	CheckRangeBounds(lo, false, hi, false);
	CheckTargetPrivileges(target);
	(void) TimeColumnType(target, time_column);

	if (keep != NULL)
		return ArchiveDeleteRange(target, time_column, lo, hi, keep);
	SpiConnect();
	deleted = RunCounted(ComposeRangeDelete(target, time_column),
						 target, time_column, lo, hi, SPI_OK_DELETE);
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
RevertRange(Oid target, const char *time_column,
			TimestampTz lo, TimestampTz hi, int64 reverted, int32 chunk_no,
			const char *measure, const ArchiveKeep *keep,
			ReplaceResult *result)
{
	MemoryContext outer = CurrentMemoryContext;
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
													 chunk_no, keep,
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
											  keep);
	result->rows_inserted = ArchiveRestoreRows(target, reverted, chunk_no);
	MeasureAfter(target, time_column, lo, hi, measure, scan, outer, result);
	SpiFinish();
}

