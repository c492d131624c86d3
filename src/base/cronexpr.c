/*-------------------------------------------------------------------------
 *
 * cronexpr.c
 *	  Cron expressions as pg_cron reads them, for one purpose: when will a
 *	  scheduled run be done?  ScheduleEta walks the schedule's ticks from
 *	  now (in GMT, as pg_cron reads its cron text), skips those outside the
 *	  run's quiet hours (local time in the run's TimeZone), and counts
 *	  chunks_per_tick chunks per tick until none is left.
 *
 * Understood: five fields (minute, hour, day of month, month, day of
 * week) with lists, ranges, steps, '*' and three-letter names; the
 * shorthands @yearly, @annually, @monthly, @weekly, @daily, @midnight and
 * @hourly; and pg_cron's "N seconds".  Anything else (pg_cron's '$' for
 * the last day of a month, @reboot) is not understood: the estimate is
 * NULL and the caller falls back to the chunk duration.  The estimate
 * assumes a tick finishes before the next one fires.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "miscadmin.h"
#include "pgtime.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "backfill.h"

/* The furthest an estimate looks ahead: a year and a day of minutes. */
#define ETA_HORIZON_MINUTES	(366 * 24 * 60)

/* A parsed schedule: one bit per allowed value of each field. */
typedef struct CronExpr
{
	uint64		minutes;		/* bits 0-59 */
	uint32		hours;			/* bits 0-23 */
	uint32		days;			/* bits 1-31 */
	uint32		months;			/* bits 1-12 */
	uint32		weekdays;		/* bits 0-6, Sunday 0 */
	bool		days_star;		/* day of month was '*' */
	bool		weekdays_star;	/* day of week was '*' */
	int			seconds;		/* > 0: an "N seconds" schedule */
} CronExpr;

static const char *const month_names[] = {
	"jan", "feb", "mar", "apr", "may", "jun",
	"jul", "aug", "sep", "oct", "nov", "dec"
};
static const char *const weekday_names[] = {
	"sun", "mon", "tue", "wed", "thu", "fri", "sat"
};

/*
 * ParseValue
 *		A number, or a three-letter name (names[k] is k + base), at *p;
 *		advances *p.  False when there is neither.
 */
static bool
ParseValue(const char **p, const char *const *names, int nnames, int base,
		   int *value)
{
	if (isdigit((unsigned char) **p))
	{
		int			v = 0;

		while (isdigit((unsigned char) **p))
		{
			v = v * 10 + (**p - '0');
			if (v > 1000)
				return false;
			(*p)++;
		}
		*value = v;
		return true;
	}
	if (names != NULL && isalpha((unsigned char) **p))
	{
		int			k;

		for (k = 0; k < nnames; k++)
		{
			if (pg_strncasecmp(*p, names[k], 3) == 0)
			{
				*value = k + base;
				*p += 3;
				return true;
			}
		}
	}
	return false;
}

/*
 * ParseField
 *		One field of lo..hi into a bit mask: items separated by commas, each
 *		'*', a value or a range a-b, with an optional /step.  *star is set
 *		when the field is exactly '*'.  False when the text is not such a
 *		field.  Day-of-week 7 is Sunday.
 */
static bool
ParseField(const char *text, int lo, int hi, const char *const *names,
		   int nnames, int base, uint64 *mask, bool *star)
{
	const char *p = text;

	*mask = 0;
	*star = (strcmp(text, "*") == 0);
	for (;;)
	{
		int			a;
		int			b;
		int			step = 1;
		int			v;

		if (*p == '*')
		{
			a = lo;
			b = hi;
			p++;
		}
		else
		{
			if (!ParseValue(&p, names, nnames, base, &a))
				return false;
			b = a;
			if (*p == '-')
			{
				p++;
				if (!ParseValue(&p, names, nnames, base, &b))
					return false;
			}
		}
		if (*p == '/')
		{
			p++;
			if (!ParseValue(&p, NULL, 0, 0, &step) || step <= 0)
				return false;
			if (a == b)
				b = hi;			/* "5/15": from 5 to the end */
		}
		/* in the day of week, 7 is Sunday too: "5-7", "7" */
		if (hi == 6 && b == 7)
		{
			*mask |= UINT64CONST(1);
			b = 6;
		}
		if (!(hi == 6 && a == 7))
		{
			if (a < lo || b > hi || a > b)
				return false;
			for (v = a; v <= b; v += step)
				*mask |= UINT64CONST(1) << v;
		}
		if (*p == '\0')
			return true;
		if (*p != ',')
			return false;
		p++;
	}
}

/*
 * ParseCronExpr
 *		The schedule of a cron text as pg_cron reads it; false when it is
 *		not understood (see the file's header).
 */
static bool
ParseCronExpr(const char *text, CronExpr *expr)
{
	char	   *copy;
	char	   *fields[5];
	int			n = 0;
	char	   *p;
	uint64		mask;
	bool		star;

	memset(expr, 0, sizeof(CronExpr));
	while (isspace((unsigned char) *text))
		text++;
	if (strncmp(text, "@yearly", 7) == 0 || strncmp(text, "@annually", 9) == 0)
		text = "0 0 1 1 *";
	else if (strncmp(text, "@monthly", 8) == 0)
		text = "0 0 1 * *";
	else if (strncmp(text, "@weekly", 7) == 0)
		text = "0 0 * * 0";
	else if (strncmp(text, "@daily", 6) == 0 || strncmp(text, "@midnight", 9) == 0)
		text = "0 0 * * *";
	else if (strncmp(text, "@hourly", 7) == 0)
		text = "0 * * * *";
	else if (isdigit((unsigned char) *text) && strstr(text, "second") != NULL)
	{
		int			secs = 0;

		p = (char *) text;
		if (!ParseValue((const char **) &p, NULL, 0, 0, &secs) ||
			secs < 1 || secs > 59)
			return false;
		expr->seconds = secs;
		return true;
	}

	copy = pstrdup(text);
	for (p = strtok(copy, " \t"); p != NULL; p = strtok(NULL, " \t"))
	{
		if (n == 5)
			return false;
		fields[n++] = p;
	}
	if (n != 5)
		return false;
	if (!ParseField(fields[0], 0, 59, NULL, 0, 0, &expr->minutes, &star))
		return false;
	if (!ParseField(fields[1], 0, 23, NULL, 0, 0, &mask, &star))
		return false;
	expr->hours = (uint32) mask;
	if (!ParseField(fields[3], 1, 12, month_names, 12, 1, &mask, &star))
		return false;
	expr->months = (uint32) mask;
	if (!ParseField(fields[4], 0, 6, weekday_names, 7, 0, &mask,
					&expr->weekdays_star))
		return false;
	expr->weekdays = (uint32) mask;
	if (!ParseField(fields[2], 1, 31, NULL, 0, 0, &mask, &expr->days_star))
		return false;
	expr->days = (uint32) mask;
	return true;
}

/*
 * CronMatches
 *		Whether the schedule fires at minute t (GMT).  Day of month and day
 *		of week: when both are restricted, either may match (cron's rule).
 */
static bool
CronMatches(const CronExpr *expr, TimestampTz t)
{
	struct pg_tm tm;
	fsec_t		fsec;
	bool		day_ok;
	bool		weekday_ok;
	int			weekday;

	if (timestamp2tm(t, NULL, &tm, &fsec, NULL, NULL) != 0)
		return false;
	if (!(expr->minutes & (UINT64CONST(1) << tm.tm_min)) ||
		!(expr->hours & ((uint32) 1 << tm.tm_hour)) ||
		!(expr->months & ((uint32) 1 << tm.tm_mon)))
		return false;
	weekday = j2day(date2j(tm.tm_year, tm.tm_mon, tm.tm_mday));
	day_ok = (expr->days & ((uint32) 1 << tm.tm_mday)) != 0;
	weekday_ok = (expr->weekdays & ((uint32) 1 << weekday)) != 0;
	if (expr->days_star || expr->weekdays_star)
		return day_ok && weekday_ok;
	return day_ok || weekday_ok;
}

/*
 * ScheduleEta
 *		See backfill.h.  Minute by minute from "since" (at most a year and
 *		a day ahead, the loop interruptible): a minute where the schedule
 *		fires and the run's quiet hours allow work is a tick (an "N
 *		seconds" schedule ticks 60 / N times in such a minute).  Returns
 *		false when the cron text is not understood or the chunks would not
 *		be done within the horizon.
 */
bool
ScheduleEta(const char *cron, int32 chunks_per_tick, const char *quiet_hours,
			const char *timezone, int64 chunks_left, TimestampTz since,
			TimestampTz *done_at)
{
	CronExpr	expr;
	int64		ticks_needed;
	int64		ticks = 0;
	int			start = 0;
	int			end = 0;
	pg_tz	   *tz = NULL;
	TimestampTz t;
	int			k;

	if (chunks_per_tick <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chunks_per_tick must be positive")));
	RequireMaxLength(cron, "cron", BACKFILL_MAX_WORD);
	if (quiet_hours != NULL)
	{
		ParseQuietHours(quiet_hours, &start, &end);
		tz = TimeZoneByName(timezone);
	}
	if (chunks_left <= 0)
	{
		*done_at = since;
		return true;
	}
	if (!ParseCronExpr(cron, &expr))
		return false;
	ticks_needed = (chunks_left + chunks_per_tick - 1) / chunks_per_tick;

	/* the first whole minute after "since" */
	t = since - (since % USECS_PER_MINUTE) + USECS_PER_MINUTE;
	for (k = 0; k < ETA_HORIZON_MINUTES; k++, t += USECS_PER_MINUTE)
	{
		if (k % 1440 == 0)
			CHECK_FOR_INTERRUPTS();
		if (expr.seconds == 0 && !CronMatches(&expr, t))
			continue;
		if (tz != NULL)
		{
			int			now = MinuteOfDayInZone(t, tz);

			if (start < end ? !(now >= start && now < end) :
				!(now >= start || now < end))
				continue;
		}
		ticks += expr.seconds > 0 ? 60 / expr.seconds : 1;
		if (ticks >= ticks_needed)
		{
			*done_at = t;
			return true;
		}
	}
	return false;
}
