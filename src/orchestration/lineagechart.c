/*-------------------------------------------------------------------------
 *
 * lineagechart.c
 *	  lineage_chart: a text picture of a target's history over a range
 *	  (LineageChart), one character per hour or day, drawn from the pieces
 *	  of the rule of which run wins (ClassifyPieces, lineage.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "backfill.h"

/* The character of a definition version: 1-9, then a-z, then #. */
static char
VersionChar(int32 version)
{
	if (version >= 1 && version <= 9)
		return '0' + version;
	if (version >= 10 && version <= 35)
		return 'a' + (version - 10);
	return '#';
}

/*
 * CellChar
 *		The character of [lo, hi) from the pieces: X when the latest attempt
 *		on some part failed, '.' when some part was never filled, else the
 *		oldest definition version backfilled there, else '-' (no_source).
 */
static char
CellChar(Piece *pieces, int np, int *from, TimestampTz lo, TimestampTz hi)
{
	bool		failed = false;
	bool		never = false;
	bool		no_source = false;
	int32		oldest = 0;
	int			i;

	while (*from < np && pieces[*from].hi <= lo)
		(*from)++;
	for (i = *from; i < np && pieces[i].lo < hi; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (pieces[i].latest == CHUNK_FAILED)
			failed = true;
		else if (pieces[i].settled == CHUNK_NONE)
			never = true;
		else if (pieces[i].settled == CHUNK_NO_SOURCE)
			no_source = true;
		else if (oldest == 0 || pieces[i].version < oldest)
			oldest = pieces[i].version;
	}
	if (failed)
		return 'X';
	if (never)
		return '.';
	if (oldest > 0)
		return VersionChar(oldest);
	return no_source ? '-' : '.';
}

/*
 * LocalFields
 *		The local (session TimeZone) calendar fields of t.
 */
static void
LocalFields(TimestampTz t, struct pg_tm *tm)
{
	int			tz;
	fsec_t		fsec;

	if (timestamp2tm(t, &tz, tm, &fsec, NULL, NULL) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range")));
}

/*
 * ChartLines
 *		The number of lines lineage_chart draws for [lo, hi) in "unit"
 *		(day, week or month), computed from the calendar fields of lo and
 *		hi without building anything; the charts of day and week lines are
 *		short by construction (at most 7 and 92 days wide).
 */
static int64
ChartLines(TimestampTz lo, TimestampTz hi, const char *unit)
{
	struct pg_tm tlo;
	struct pg_tm thi;
	int64		months;

	if (strcmp(unit, "month") != 0)
		return strcmp(unit, "day") == 0 ? 8 : 15;
	LocalFields(lo, &tlo);
	LocalFields(hi, &thi);
	months = ((int64) thi.tm_year * 12 + thi.tm_mon) -
		((int64) tlo.tm_year * 12 + tlo.tm_mon) + 1;
	/* a range ending at the very start of a month draws no line for it */
	if (DatumGetTimestampTz(DirectFunctionCall2(timestamptz_trunc,
												CStringGetTextDatum("month"),
												TimestampTzGetDatum(hi))) == hi)
		months--;
	return months;
}

/*
 * AddLine
 *		Append a copy of one text line to the chart.
 */
static void
AddLine(List **lines, const char *line)
{
	*lines = lappend(*lines, pstrdup(line));
}

/*
 * ChartScale
 *		The unit of the lines of a chart of [lo, hi), the name of its
 *		characters' unit, and the steps of both (*line_step and *cell_step
 *		are zero on entry): at most 7 days wide, a line per day and a
 *		character per hour; at most 92 days, a line per week and a
 *		character per day; wider (or too wide to subtract), a line per
 *		month and a character per day.
 */
static void
ChartScale(TimestampTz lo, TimestampTz hi, const char **unit,
		   const char **cell_name, Interval *line_step, Interval *cell_step)
{
	int64		width;
	bool		wide;

	/* hi - lo overflows int64 for the widest ranges: those are "wide" */
	wide = pg_sub_s64_overflow(hi, lo, &width);
	if (!wide && width <= 7 * USECS_PER_DAY)
	{
		*unit = "day";
		*cell_name = "hour";
		line_step->day = 1;
		cell_step->time = USECS_PER_HOUR;
	}
	else if (!wide && width <= 92 * USECS_PER_DAY)
	{
		*unit = "week";
		*cell_name = "day";
		line_step->day = 7;
		cell_step->day = 1;
	}
	else
	{
		*unit = "month";
		*cell_name = "day";
		line_step->month = 1;
		cell_step->day = 1;
	}
}

/*
 * ChartLegend
 *		Append the legend to the chart: a line per definition version of
 *		target (its character, label, and whether it is the current one),
 *		each drawn into buf in linecxt (reset for it), then the other
 *		characters.  Caller is connected to SPI.
 */
static void
ChartLegend(Oid target, List **lines, MemoryContext linecxt, StringInfo buf)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	MemoryContext oldcxt;
	int			i;

	AddLine(lines, "legend:");
	values[0] = ObjectIdGetDatum(target);
	CatalogExec("SELECT d.version, d.label,"
				" d.version OPERATOR(pg_catalog.=) t.current_version"
				" FROM backfill.definitions d LEFT JOIN backfill.targets t"
				"  ON t.target OPERATOR(pg_catalog.=) d.target"
				" WHERE d.target OPERATOR(pg_catalog.=) $1 ORDER BY d.version",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	for (i = 0; i < (int) SPI_processed; i++)
	{
		bool		isnull;
		int32		version;
		char	   *label;
		bool		current;

		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(linecxt);
		oldcxt = MemoryContextSwitchTo(linecxt);
		version = SpiGetInt32(i, 1, &isnull);
		label = SpiGetText(i, 2);
		current = SpiGetBool(i, 3, &isnull);
		resetStringInfo(buf);
		appendStringInfo(buf, "  %c  backfilled under definition version %d%s%s%s%s",
						 VersionChar(version), version,
						 label ? " \"" : "", label ? label : "", label ? "\"" : "",
						 current ? " (current)" : "");
		MemoryContextSwitchTo(oldcxt);
		AddLine(lines, buf->data);
	}
	SPI_freetuptable(SPI_tuptable);
	AddLine(lines, "  -  no source data (no_source)");
	AddLine(lines, "  .  never filled (no backfill covers it)");
	AddLine(lines, "  X  failed (the latest attempt failed)");
	AddLine(lines, "     (blank) outside the range");
}

/*
 * LineageChart
 *		See backfill.h: lineage_chart(target, range_start, range_end), its
 *		text lines (char *) in a list.  A range of at most 7 days: one line
 *		per local day, one character per hour; at most 92 days: one line
 *		per week (from Monday), one character per day; longer: one line per
 *		month, one character per day.  Times are read in the session
 *		TimeZone; characters outside the range are blank.  The caller needs
 *		SELECT on the target, and is connected to SPI; [lo, hi) has passed
 *		CheckRangeBounds.
 *
 * The width of the range is computed without overflow (the widest range
 * PostgreSQL can hold does not fit in int64 microseconds), and a chart of
 * more than BACKFILL_MAX_CHART_LINES lines is refused (54000) before
 * anything is read or drawn.  Every line is drawn in a memory context
 * reset for the next one, with an interrupt check; the list keeps a copy.
 */
List *
LineageChart(Oid target, TimestampTz lo, TimestampTz hi)
{
	List	   *lines = NIL;
	Piece	   *pieces;
	int			np;
	int			from = 0;
	const char *unit;
	const char *cell_name;
	Interval	line_step = {0, 0, 0};
	Interval	cell_step = {0, 0, 0};
	TimestampTz line;
	StringInfoData buf;
	int64		nlines;
	MemoryContext linecxt;
	MemoryContext oldcxt;

	if (pg_class_aclcheck(target, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", QualifiedRelName(target)),
				 errdetail("The lineage of a table is shown to those who may read it.")));

	ChartScale(lo, hi, &unit, &cell_name, &line_step, &cell_step);
	nlines = ChartLines(lo, hi, unit);
	if (nlines > BACKFILL_MAX_CHART_LINES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("lineage chart of [%s, %s) would have " INT64_FORMAT " lines",
						TimestampText(lo), TimestampText(hi), nlines),
				 errdetail("A chart has at most %d lines, one per month for a range longer than 92 days.",
						   BACKFILL_MAX_CHART_LINES),
				 errhint("Chart a shorter range (at most %d months), or read backfill.lineage, which merges the whole range into its stretches.",
						 BACKFILL_MAX_CHART_LINES)));

	np = ClassifyPieces(target, lo, hi, &pieces);
	linecxt = AllocSetContextCreate(CurrentMemoryContext,
									"backfill chart line",
									ALLOCSET_DEFAULT_SIZES);

	initStringInfo(&buf);
	appendStringInfo(&buf, "%s from %s to %s: one line per %s, one character per %s",
					 QualifiedRelName(target), TimestampText(lo),
					 TimestampText(hi), unit, cell_name);
	AddLine(&lines, buf.data);

	line = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_trunc,
												   CStringGetTextDatum(unit),
												   TimestampTzGetDatum(lo)));
	while (line < hi)
	{
		TimestampTz next = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
																   TimestampTzGetDatum(line),
																   IntervalPGetDatum(&line_step)));
		TimestampTz cell = line;
		struct pg_tm tm;

		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(linecxt);
		oldcxt = MemoryContextSwitchTo(linecxt);
		LocalFields(line, &tm);
		resetStringInfo(&buf);
		if (strcmp(unit, "month") == 0)
			appendStringInfo(&buf, "%04d-%02d    ", tm.tm_year, tm.tm_mon);
		else
			appendStringInfo(&buf, "%04d-%02d-%02d ", tm.tm_year, tm.tm_mon,
							 tm.tm_mday);
		appendStringInfoChar(&buf, '|');
		while (cell < next)
		{
			TimestampTz cend = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
																	   TimestampTzGetDatum(cell),
																	   IntervalPGetDatum(&cell_step)));

			cend = Min(cend, next);
			if (cend <= lo || cell >= hi)
				appendStringInfoChar(&buf, ' ');
			else
				appendStringInfoChar(&buf, CellChar(pieces, np, &from,
													Max(cell, lo), Min(cend, hi)));
			cell = cend;
		}
		appendStringInfoChar(&buf, '|');
		MemoryContextSwitchTo(oldcxt);
		AddLine(&lines, buf.data);
		line = next;
	}

	ChartLegend(target, &lines, linecxt, &buf);
	MemoryContextDelete(linecxt);
	return lines;
}
