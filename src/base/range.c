/*-------------------------------------------------------------------------
 *
 * range.c
 *	  Splitting a half-open time range [start, end) into chunks
 *	  (ComputeChunkBounds, for split_range, plan and check), the checks of
 *	  a range's bounds, a bound shifted by whole chunks (ShiftBound), and
 *	  the fixed grid of a chunk size (ChunkCell: the chunk that holds a time,
 *	  for cascading plans and for the log of changed regions).
 *
 * Bound k is start + k * step, computed with timestamptz + interval in the
 * session TimeZone, never by adding the step to the previous bound: a
 * monthly split from January 31 gives February 28, March 31, April 30, and
 * daily steps follow local days across DST changes.  The last chunk is
 * clipped to end.  A step that fails to move a bound forward (zero,
 * negative, or mixed such as '1 mon -30 days' from some starts) is an
 * error, never an endless loop.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "common/int.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "backfill.h"


/*
 * StepTimes
 *		The interval k * step, or false when it does not fit an interval.
 */
static bool
StepTimes(Interval *step, int64 k, Interval *result)
{
	int64		months = (int64) step->month * k;
	int64		days = (int64) step->day * k;

	if (months > PG_INT32_MAX || months < PG_INT32_MIN ||
		days > PG_INT32_MAX || days < PG_INT32_MIN)
		return false;
	if (pg_mul_s64_overflow(step->time, k, &result->time))
		return false;
	result->month = (int32) months;
	result->day = (int32) days;
	return true;
}

/*
 * CheckRangeBounds
 *		See backfill.h.  Shared by split_range, replace_range, plan and
 *		check, so they agree on what a valid range is.
 */
void
CheckRangeBounds(TimestampTz start, bool start_null,
				 TimestampTz end, bool end_null)
{
	if (start_null || end_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("range bounds must not be null"),
				 errhint("Give both range_start and range_end; the range is [range_start, range_end).")));
	if (TIMESTAMP_NOT_FINITE(start) || TIMESTAMP_NOT_FINITE(end))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("range bounds must be finite"),
				 errdetail("A backfill replaces a closed stretch of time; infinity has no last chunk.")));
	if (start >= end)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("range is empty: range_start %s is not before range_end %s",
						TimestampText(start), TimestampText(end)),
				 errhint("Ranges are half-open, [range_start, range_end): the end is excluded.")));
}

/*
 * ComputeChunkBounds
 *		See backfill.h.  All user-facing input errors are raised here, so
 *		split_range, plan and check agree on them.
 */
int
ComputeChunkBounds(TimestampTz start, bool start_null,
				   TimestampTz end, bool end_null,
				   Interval *step, bool step_null,
				   TimestampTz **bounds)
{
	TimestampTz *b;
	int			capacity;
	int			n = 0;
	Interval	zero = {0, 0, 0};
	bool		pure_time;

	CheckRangeBounds(start, start_null, end, end_null);
	if (step_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("chunk interval must not be null")));
	if (DatumGetInt32(DirectFunctionCall2(interval_cmp,
										  IntervalPGetDatum(step),
										  IntervalPGetDatum(&zero))) <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chunk interval must be positive"),
				 errdetail("The interval given compares less than or equal to zero.")));

	pure_time = (step->month == 0 && step->day == 0);
	capacity = 64;
	b = palloc(sizeof(TimestampTz) * capacity);
	b[0] = start;

	for (;;)
	{
		TimestampTz next;
		Interval	kstep;

		CHECK_FOR_INTERRUPTS();

		if (n >= backfill_max_chunks)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("range would be split into more than %d chunks",
							backfill_max_chunks),
					 errhint("Use a larger chunk interval, or ask a superuser to raise backfill.max_chunks (at most %d).",
							 BACKFILL_MAX_CHUNKS_CEILING)));

		if (pure_time)
		{
			/* no calendar arithmetic: exact and fast */
			if (pg_mul_s64_overflow(step->time, (int64) (n + 1), &next) ||
				pg_add_s64_overflow(start, next, &next))
				next = end;
		}
		else
		{
			if (!StepTimes(step, n + 1, &kstep))
				ereport(ERROR,
						(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
						 errmsg("chunk bound out of range")));
			next = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
														   TimestampTzGetDatum(start),
														   IntervalPGetDatum(&kstep)));
		}

		if (next <= b[n])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("chunk interval does not advance from %s",
							TimestampText(b[n])),
					 errdetail("Bound %d would be %s, not after bound %d.",
							   n + 1, TimestampText(next), n),
					 errhint("Mixed intervals such as '1 mon -30 days' go backwards from some dates; use a step whose parts have one sign.")));

		if (n + 2 > capacity)
		{
			capacity *= 2;
			b = repalloc_huge(b, sizeof(TimestampTz) * capacity);
		}
		n++;
		if (next >= end)
		{
			b[n] = end;
			break;
		}
		b[n] = next;
	}

	*bounds = b;
	return n;
}

/*
 * ShiftBound
 *		bound + k * step (k may be negative), with the calendar arithmetic
 *		of split_range: the interval k * step is added once, in the session
 *		TimeZone.
 */
TimestampTz
ShiftBound(TimestampTz bound, Interval *step, int k)
{
	Interval	kstep;
	int64		months = (int64) step->month * k;
	int64		days = (int64) step->day * k;

	if (months > PG_INT32_MAX || months < PG_INT32_MIN ||
		days > PG_INT32_MAX || days < PG_INT32_MIN ||
		pg_mul_s64_overflow(step->time, (int64) k, &kstep.time))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("neighbor chunk bound out of range")));
	kstep.month = (int32) months;
	kstep.day = (int32) days;
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
												   TimestampTzGetDatum(bound),
												   IntervalPGetDatum(&kstep)));
}

/*
 * LocalMidnight
 *		Local midnight of a date (year, month 1-12, day), in the session
 *		TimeZone, as timestamptz: what timestamptz_in makes of the text,
 *		without parsing it (the watch trigger maps a row to its chunk once
 *		per transaction).
 */
static TimestampTz
LocalMidnight(int year, int month, int day)
{
	struct pg_tm tm;
	int			tz;
	TimestampTz result;

	memset(&tm, 0, sizeof(tm));
	tm.tm_year = year;
	tm.tm_mon = month;
	tm.tm_mday = day;
	tz = DetermineTimeZoneOffset(&tm, session_timezone);
	if (tm2timestamp(&tm, 0, &tz, &result) != 0)
		elog(ERROR, "backfill: local midnight of %d-%d-%d out of range",
			 year, month, day);
	return result;
}

/*
 * GridPoint
 *		anchor + k * step, with the interval arithmetic of split_range
 *		(months and days in the session TimeZone, the time part absolute).
 */
static TimestampTz
GridPoint(TimestampTz anchor, Interval *step, int64 k)
{
	Interval	mul;
	int64		months;
	int64		days;

	if (pg_mul_s64_overflow((int64) step->month, k, &months) ||
		pg_mul_s64_overflow((int64) step->day, k, &days) ||
		months > PG_INT32_MAX || months < PG_INT32_MIN ||
		days > PG_INT32_MAX || days < PG_INT32_MIN ||
		pg_mul_s64_overflow(step->time, k, &mul.time))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("chunk bound out of range")));
	mul.month = (int32) months;
	mul.day = (int32) days;
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
												   TimestampTzGetDatum(anchor),
												   IntervalPGetDatum(&mul)));
}

/*
 * TruncDay
 *		The local midnight (session TimeZone) at or before t.
 */
static TimestampTz
TruncDay(TimestampTz t)
{
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_trunc,
												   CStringGetTextDatum("day"),
												   TimestampTzGetDatum(t)));
}

/*
 * FixedZoneCell
 *		ChunkCell by integer arithmetic, when TimeZone tz keeps one
 *		offset from UTC (UTC, Etc/GMT-3: no daylight saving time, no change
 *		of offset in its history) and step has no months: every local day
 *		then lasts 24 hours, so each grid point that GridPoint or TruncDay
 *		would compute through the calendar is a fixed distance from the
 *		last (a fifth of a single-row INSERT into a built day went to
 *		those calls: bench/RESULTS.md, issue 30).  False when the zone or
 *		step does not allow it, or a bound would leave the range of
 *		timestamptz (ChunkCell then computes it, and says so).
 */
bool
FixedZoneCell(struct pg_tz *tz, TimestampTz t, Interval *step,
			  TimestampTz *lo, TimestampTz *hi)
{
	long		gmtoff;
	int64		off;
	int64		len;
	int64		from;
	int64		k;

	if (step->month != 0 || tz == NULL || !pg_get_timezone_offset(tz, &gmtoff))
		return false;
	off = (int64) gmtoff * USECS_PER_SEC;
	if (step->day == 0 && step->time > 0 && USECS_PER_DAY % step->time == 0)
	{
		/* from the local midnight at or before t */
		int64		local = t + off;

		from = t - (local % USECS_PER_DAY + USECS_PER_DAY) % USECS_PER_DAY;
		len = step->time;
	}
	else
	{
		/* from local Monday 2000-01-03 00:00 */
		if (pg_mul_s64_overflow((int64) step->day, USECS_PER_DAY, &len) ||
			pg_add_s64_overflow(len, step->time, &len) || len <= 0)
			return false;
		from = 2 * USECS_PER_DAY - off;
	}
	k = (t - from) / len;
	if ((t - from) % len < 0)
		k--;
	*lo = from + k * len;
	if (pg_add_s64_overflow(*lo, len, hi) ||
		!IS_VALID_TIMESTAMP(*lo) || !IS_VALID_TIMESTAMP(*hi))
		return false;
	return true;
}

/*
 * ChunkCell
 *		The chunk [*lo, *hi) of the grid of "step" that contains t, in the
 *		session TimeZone:
 *		- months only ('1 month', '3 months'): from local 2000-01-01 00:00,
 *		  so whole calendar months (quarters, ...);
 *		- a time that divides a day ('1 hour', '6 hours'): from each local
 *		  midnight, the last chunk of a day ending at the next midnight
 *		  (a 23- or 25-hour day keeps whole local days);
 *		- anything else ('1 day', '1 week', '2 days 12 hours'): from local
 *		  Monday 2000-01-03 00:00, so days start at local midnight and
 *		  weeks on Monday.
 *		Every grid point is anchor + k * step as split_range computes it.
 */
void
ChunkCell(TimestampTz t, Interval *step, TimestampTz *lo, TimestampTz *hi)
{
	TimestampTz anchor;
	int64		k;
	double		approx;

	if (FixedZoneCell(session_timezone, t, step, lo, hi))
		return;
	if (step->month == 0 && step->day == 0 && step->time > 0 &&
		USECS_PER_DAY % step->time == 0)
	{
		TimestampTz day = TruncDay(t);
		TimestampTz next = TruncDay(day + USECS_PER_DAY + USECS_PER_HOUR * 3);

		k = (t - day) / step->time;
		*lo = day + k * step->time;
		*hi = Min(*lo + step->time, next);
		return;
	}

	if (step->day == 0 && step->time == 0)
		anchor = LocalMidnight(2000, 1, 1);
	else
		anchor = LocalMidnight(2000, 1, 3);

	/*
	 * A first guess from the step's mean length (a month of 30.44 days),
	 * then exact steps; each loop ends (the grid points grow with k on
	 * average) and is interruptible.
	 */
	approx = (double) step->month * ((double) DAYS_PER_YEAR / MONTHS_PER_YEAR) * USECS_PER_DAY +
		(double) step->day * USECS_PER_DAY + (double) step->time;
	k = (int64) floor(((double) t - (double) anchor) / approx);
	while (GridPoint(anchor, step, k) > t)
	{
		CHECK_FOR_INTERRUPTS();
		k--;
	}
	while (GridPoint(anchor, step, k + 1) <= t)
	{
		CHECK_FOR_INTERRUPTS();
		k++;
	}
	*lo = GridPoint(anchor, step, k);
	*hi = GridPoint(anchor, step, k + 1);
}
