/*-------------------------------------------------------------------------
 *
 * standing.c
 *	  Standing checks: schedule_check records a check of a target's recent
 *	  chunks in backfill.checks and gives it a pg_cron job (ScheduleCheck);
 *	  each tick runs run_check (RunCheck), which compares the whole chunks
 *	  of the lookback (CheckRange, reconcile.c) and appends to
 *	  backfill.check_results; unschedule_check (UnscheduleCheck) removes
 *	  the job.
 *
 * Catalog rows are read and written through CatalogExec as the extension
 * owner; the measure, ledger and horizon run only as their author
 * (identity.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "backfill.h"

/*
 * ScheduleCheck
 *		See backfill.h: schedule_check -> the check's id, which
 *		unschedule_check and run_check take (its job id is checks.job_id).
 *
 * Records the standing check in backfill.checks (as the extension owner)
 * and creates for the calling user a pg_cron job named
 * backfill_check_<check_id> (CronCreateJob, cronjobs.c) whose command is
 * exactly SELECT backfill.run_check(<check_id>).  Caller is connected to
 * SPI.
 */
int64
ScheduleCheck(Oid relid, const char *cron, Interval *lookback)
{
	Interval	zero = {0, 0, 0};
	int64		check_id;
	int64		job_id;
	bool		isnull;
	CatalogArgs args;
	Oid			utypes[2] = {INT8OID, INT8OID};
	Datum		uvalues[2];
	char	   *command;

	if (DatumGetInt32(DirectFunctionCall2(interval_cmp,
										  IntervalPGetDatum(lookback),
										  IntervalPGetDatum(&zero))) <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lookback must be positive")));

	RequirePgCron("Standing checks are pg_cron jobs; backfill itself works without pg_cron.");
	/* the parked jobs of finished runs go first (schedule.c) */
	SchedulePrepareJob();
	CheckSelectPrivilege(relid);
	{
		Definition *t = LoadDefinition(relid, 0);

		/* its ticks will run the current version's text as its author */
		CheckAuthor(t->author, relid, t->version);
	}

	CatalogArgsInit(&args);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(relid), false);
	CatalogArgText(&args, cron);
	CatalogArg(&args, INTERVALOID, IntervalPGetDatum(lookback), false);
	CatalogArg(&args, NAMEOID,
			   DirectFunctionCall1(namein, CStringGetDatum(CurrentUserName())),
			   false);
	CatalogArg(&args, OIDOID, ObjectIdGetDatum(GetUserId()), false);
	CatalogExecArgs("INSERT INTO backfill.checks (target, cron, lookback, created_by,"
					" created_by_oid)"
					" VALUES ($1, $2, $3, $4, $5) RETURNING check_id",
					&args, SPI_OK_INSERT_RETURNING);
	check_id = SpiGetInt64(0, 1, &isnull);

	/* the job belongs to the caller: scheduled for the caller (cronjobs.c) */
	command = psprintf("SELECT backfill.run_check(" INT64_FORMAT ")", check_id);
	job_id = CronCreateJob(CRON_KIND_CHECK, check_id, cron, command,
						   psprintf("check " INT64_FORMAT, check_id));

	uvalues[0] = Int64GetDatum(check_id);
	uvalues[1] = Int64GetDatum(job_id);
	CatalogExec("UPDATE backfill.checks SET job_id = $2"
				" WHERE check_id OPERATOR(pg_catalog.=) $1",
				2, utypes, uvalues, NULL, SPI_OK_UPDATE);

	/* the job's role cannot be dropped while it has the job (jobguard.c) */
	JobGuardGrant();
	return check_id;
}

/*
 * UnscheduleCheck
 *		See backfill.h: unschedule_check -> whether a pg_cron job was
 *		removed.  Only the role that scheduled the check (or a role with
 *		its privileges) may remove it; the job, which belongs to that role,
 *		is then removed as the extension owner, and the role's guard
 *		released when it has no other job (jobguard.c).  The check and its
 *		results stay; job_id is cleared.  Caller is connected to SPI.
 */
bool
UnscheduleCheck(int64 check_id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	CheckInfo  *check;
	bool		removed = false;
	char	   *owner = NULL;

	ScheduleCheckTick();
	check = LoadCheck(check_id);
	values[0] = Int64GetDatum(check_id);
	if (!HasRunPermission(check->created_by_oid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to unschedule check %lld",
						(long long) check_id),
				 errdetail("The check was scheduled by role \"%s\".",
						   check->created_by)));
	if (!check->has_job)
		return false;

	/*
	 * The check's own job (by id and name), whoever of the roles with the
	 * creator's privileges scheduled it: as the extension owner.
	 */
	owner = CronRemoveOwnJob(check->job_id, CRON_KIND_CHECK, check_id,
							 &removed);
	CatalogExec("UPDATE backfill.checks SET job_id = NULL"
				" WHERE check_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_UPDATE);
	/* after the check's row: the guard's lock comes last (jobguard.c) */
	JobGuardRelease(owner);
	return removed;
}

/*
 * AlignmentUnit
 *		The date_trunc unit that whole chunks of "step" end on: month for
 *		steps with months, day for steps of whole days, else hour, minute
 *		or second.
 */
static const char *
AlignmentUnit(Interval *step)
{
	if (step->month != 0)
		return "month";
	if (step->day != 0 || (step->time != 0 && step->time % USECS_PER_DAY == 0))
		return "day";
	if (step->time % USECS_PER_HOUR == 0)
		return "hour";
	if (step->time % USECS_PER_MINUTE == 0)
		return "minute";
	return "second";
}

/*
 * LookbackRange
 *		See backfill.h: the whole chunks of "step" within the last lookback
 *		before now.  The range ends at date_trunc(<unit of the chunk>, now)
 *		in the session TimeZone and starts the largest whole number of
 *		chunks (at least one) back that stays within the lookback.  "kind"
 *		and "id" name the caller in the error ("check 3", "refresh 2").
 */
void
LookbackRange(Interval *step, Interval *lookback, TimestampTz now,
			  const char *kind, int64 id, TimestampTz *start, TimestampTz *end)
{
	TimestampTz limit;
	int			nchunks = 0;

	*end = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_trunc,
												   CStringGetTextDatum(AlignmentUnit(step)),
												   TimestampTzGetDatum(now)));
	limit = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
													TimestampTzGetDatum(*end),
													IntervalPGetDatum(lookback)));
	while (nchunks < backfill_max_chunks &&
		   ShiftBound(*end, step, -(nchunks + 1)) >= limit)
	{
		CHECK_FOR_INTERRUPTS();
		nchunks++;
	}
	if (nchunks == backfill_max_chunks &&
		ShiftBound(*end, step, -(nchunks + 1)) >= limit)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("lookback of %s %lld would be split into more than %d chunks",
						kind, (long long) id, backfill_max_chunks),
				 errhint("Schedule the %s with a shorter lookback, or ask a superuser to raise backfill.max_chunks (at most %d).",
						 kind, BACKFILL_MAX_CHUNKS_CEILING)));
	if (nchunks == 0)
		nchunks = 1;
	*start = ShiftBound(*end, step, -nchunks);
}

/*
 * StoredFailing
 *		The failing count of check check_id's last stored tick, for a caller
 *		who may not run the check: nothing is recomputed and no user text
 *		runs (a NOTICE says so).  Caller is connected to SPI.
 */
static int32
StoredFailing(int64 check_id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(check_id)};
	bool		isnull;
	int32		failing;

	ereport(NOTICE,
			(errmsg("results of check %lld were not recomputed", (long long) check_id),
			 errdetail("Only the role that scheduled the check, or a role with its privileges, may run it; this is the number of failing chunks of its last stored tick.")));
	CatalogExec("SELECT pg_catalog.count(*) FILTER (WHERE verdict OPERATOR(pg_catalog.=)"
				"  ANY ('{ledger_mismatch,outlier}'::pg_catalog.text[]))::pg_catalog.int4"
				" FROM backfill.check_results"
				" WHERE check_id OPERATOR(pg_catalog.=) $1"
				" AND checked_at OPERATOR(pg_catalog.=) (SELECT pg_catalog.max(checked_at)"
				"  FROM backfill.check_results"
				"  WHERE check_id OPERATOR(pg_catalog.=) $1)",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	failing = SpiGetInt32(0, 1, &isnull);
	return failing;
}

/*
 * StoreCheckResults
 *		Append one backfill.check_results row per chunk of the n checked
 *		(CheckRange) for check check_id on relid, checked by the current
 *		user, in one INSERT; returns the number of failing chunks
 *		(ledger_mismatch or outlier).  Caller is connected to SPI.
 */
static int32
StoreCheckResults(int64 check_id, Oid relid, RecChunk *chunks, int n)
{
	Datum	   *los = palloc(sizeof(Datum) * n);
	Datum	   *his = palloc(sizeof(Datum) * n);
	Datum	   *tv = palloc(sizeof(Datum) * n);
	bool	   *tvn = palloc(sizeof(bool) * n);
	Datum	   *lv = palloc(sizeof(Datum) * n);
	bool	   *lvn = palloc(sizeof(bool) * n);
	Datum	   *lok = palloc(sizeof(Datum) * n);
	bool	   *lokn = palloc(sizeof(bool) * n);
	Datum	   *nm = palloc(sizeof(Datum) * n);
	bool	   *nmn = palloc(sizeof(bool) * n);
	Datum	   *nok = palloc(sizeof(Datum) * n);
	bool	   *nokn = palloc(sizeof(bool) * n);
	Datum	   *vd = palloc(sizeof(Datum) * n);
	CatalogArgs args;
	int			failing = 0;
	int			k;

	for (k = 0; k < n; k++)
	{
		RecChunk   *c = &chunks[k];

		los[k] = TimestampTzGetDatum(c->start);
		his[k] = TimestampTzGetDatum(c->end);
		tv[k] = c->target_value;
		tvn[k] = c->target_null;
		lv[k] = c->ledger_value;
		lvn[k] = c->ledger_null;
		lok[k] = BoolGetDatum(c->ledger_ok);
		lokn[k] = c->ledger_ok_null;
		nm[k] = c->neighbor_median;
		nmn[k] = c->median_null;
		nok[k] = BoolGetDatum(c->neighbor_ok);
		nokn[k] = c->neighbor_ok_null;
		vd[k] = CStringGetTextDatum(VerdictName(c->verdict));
		if (c->verdict == VERDICT_LEDGER_MISMATCH ||
			c->verdict == VERDICT_OUTLIER)
			failing++;
	}
	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(check_id), false);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(relid), false);
	CatalogArg(&args, NAMEOID,
			   DirectFunctionCall1(namein, CStringGetDatum(CurrentUserName())),
			   false);
	CatalogArg(&args, TIMESTAMPTZARRAYOID,
			   MakeArray(los, NULL, n, TIMESTAMPTZOID), false);
	CatalogArg(&args, TIMESTAMPTZARRAYOID,
			   MakeArray(his, NULL, n, TIMESTAMPTZOID), false);
	CatalogArg(&args, NUMERICARRAYOID,
			   MakeArray(tv, tvn, n, NUMERICOID), false);
	CatalogArg(&args, NUMERICARRAYOID,
			   MakeArray(lv, lvn, n, NUMERICOID), false);
	CatalogArg(&args, BOOLARRAYOID,
			   MakeArray(lok, lokn, n, BOOLOID), false);
	CatalogArg(&args, NUMERICARRAYOID,
			   MakeArray(nm, nmn, n, NUMERICOID), false);
	CatalogArg(&args, BOOLARRAYOID,
			   MakeArray(nok, nokn, n, BOOLOID), false);
	CatalogArg(&args, TEXTARRAYOID,
			   MakeArray(vd, NULL, n, TEXTOID), false);
	CatalogExecArgs("INSERT INTO backfill.check_results (check_id, target,"
					" chunk_start, chunk_end, target_value, ledger_value,"
					" ledger_ok, neighbor_median, neighbor_ok, verdict, checked_by)"
					" SELECT $1, $2, u.lo, u.hi, u.tv, u.lv, u.lok, u.nm, u.nok,"
					" u.verdict, $3"
					" FROM ROWS FROM (pg_catalog.unnest($4), pg_catalog.unnest($5),"
					" pg_catalog.unnest($6), pg_catalog.unnest($7),"
					" pg_catalog.unnest($8), pg_catalog.unnest($9),"
					" pg_catalog.unnest($10), pg_catalog.unnest($11))"
					" AS u(lo, hi, tv, lv, lok, nm, nok, verdict)",
					&args, SPI_OK_INSERT);
	return failing;
}

/*
 * RunCheck
 *		See backfill.h: run_check -> the number of failing chunks.
 *
 * Checks the whole chunks of the last lookback (LookbackRange).  Appends
 * one backfill.check_results row per chunk, and notifies the listeners of
 * channel backfill when any chunk failed (NotifyCheckEvent).  Caller is
 * connected to SPI.
 */
int32
RunCheck(int64 check_id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	Oid			relid;
	Interval   *lookback;
	Definition *t;
	TimestampTz now;
	TimestampTz end;
	TimestampTz start;
	RecChunk   *chunks;
	int			n;
	int32		failing;
	Oid			owner;
	CheckInfo  *check;

	ScheduleCheckTick();
	values[0] = Int64GetDatum(check_id);

	/*
	 * pg_cron elsewhere: the job of a check that does not exist (made by a
	 * schedule_check that rolled back) parks itself before the error below.
	 */
	if (ScheduleCalledFromCron() && CronElsewhere() != NULL &&
		!CatalogExists("SELECT FROM backfill.checks"
					   " WHERE check_id OPERATOR(pg_catalog.=) $1",
					   1, argtypes, values))
		CronParkLeftover(CRON_KIND_CHECK, check_id, 0);
	check = LoadCheck(check_id);
	relid = check->target;
	lookback = check->lookback;
	owner = check->created_by_oid;

	CheckSelectPrivilege(relid);

	/*
	 * Only the role that scheduled the check (or a role with its
	 * privileges) appends results; anyone else gets the failing count of
	 * the last stored tick, and no user text runs for them.
	 */
	if (!HasRunPermission(owner))
		return StoredFailing(check_id);
	t = LoadDefinition(relid, 0);

	now = GetCurrentTransactionStartTimestamp();
	LookbackRange(t->chunk, lookback, now, "check", check_id, &start, &end);

	n = CheckRange(relid, start, false, end, false, &chunks);

	failing = StoreCheckResults(check_id, relid, chunks, n);

	/* a bad verdict is sent to the listeners of channel backfill */
	NotifyCheckEvent(check_id, failing);
	return failing;
}
