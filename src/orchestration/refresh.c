/*-------------------------------------------------------------------------
 *
 * refresh.c
 *	  Refresh jobs of changed regions (doc/changed-regions.md): a pg_cron
 *	  job per target that, on every tick in its quiet hours, plans the
 *	  stale chunks of the lookback (with "missing", the never-built ones
 *	  too), downstream targets following with "cascade", and runs them.
 *
 * schedule_refresh records the refresh in backfill.refreshes (as the
 * extension owner) and creates for the calling user a pg_cron job named
 * backfill_refresh_<refresh_id> (CronCreateJob, cronjobs.c) whose command
 * is built from an integer only:
 *
 *		CALL backfill._refresh_tick(<refresh_id>)
 *
 * The tick plans with PipelinePlan (cascade.c: only_chunks 'stale', and
 * 'missing' when asked, the reasons written on the chunks) and executes
 * with ExecuteRun or RunGroup (run.c), so a refreshed chunk has the same
 * gate, lineage, archive and yielding to lock_target as any run's; there
 * is no probe (nobody is there to look at it).  A run the tick could not
 * finish (a deferred chunk, a failure) is continued by the next tick
 * before anything new is planned.  pg_cron keeps only "CALL" as the
 * return message of a successful tick, so what a tick did is written in
 * refreshes.last_message (and said as a NOTICE).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "backfill.h"

/* A refresh, as a tick reads it. */
typedef struct RefreshInfo
{
	int64		refresh_id;
	Oid			target;
	char	   *quiet_hours;
	Interval   *lookback;
	bool		cascade;
	bool		missing;
	char	   *timezone;
	char	   *search_path;
	Oid			created_by_oid;
	char	   *created_by;
	int64		job_id;			/* 0: none */
	int64		last_run;		/* 0: none */
	bool		last_unfinished;	/* planned, probed or failed */
	int64		last_group;		/* 0: not a group */
} RefreshInfo;

static bool UnscheduleLoadedRefresh(RefreshInfo *r);

/*
 * LoadRefresh
 *		Read refresh "refresh_id" (or, with refresh_id 0, the refresh of
 *		"target"); false when there is none.  Caller is connected to SPI.
 */
static bool
LoadRefresh(int64 refresh_id, Oid target, RefreshInfo *r)
{
	Oid			argtypes[2] = {INT8OID, REGCLASSOID};
	Datum		values[2];
	bool		isnull;

	values[0] = Int64GetDatum(refresh_id);
	values[1] = ObjectIdGetDatum(target);
	CatalogExec("SELECT f.refresh_id, f.target::pg_catalog.oid, f.quiet_hours,"
				" f.lookback, f.cascade, f.missing, f.timezone, f.search_path,"
				" f.created_by_oid, f.created_by::pg_catalog.text, f.job_id,"
				" r.run_id, r.status OPERATOR(pg_catalog.=)"
				"  ANY ('{planned,probed,failed}'::pg_catalog.text[]),"
				" r.group_id"
				" FROM backfill.refreshes f"
				" LEFT JOIN backfill.runs r"
				"  ON r.run_id OPERATOR(pg_catalog.=) f.last_run_id"
				" WHERE CASE WHEN $1 OPERATOR(pg_catalog.<>) 0"
				"  THEN f.refresh_id OPERATOR(pg_catalog.=) $1"
				"  ELSE f.target OPERATOR(pg_catalog.=) $2 END",
				2, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
	{
		SPI_freetuptable(SPI_tuptable);
		return false;
	}
	r->refresh_id = SpiGetInt64(0, 1, &isnull);
	r->target = SpiGetOid(0, 2, &isnull);
	r->quiet_hours = SpiGetText(0, 3);
	r->lookback = DatumGetIntervalP(SpiGetDatumCopy(0, 4, &isnull));
	r->cascade = SpiGetBool(0, 5, &isnull);
	r->missing = SpiGetBool(0, 6, &isnull);
	r->timezone = SpiGetText(0, 7);
	r->search_path = SpiGetText(0, 8);
	r->created_by_oid = SpiGetOid(0, 9, &isnull);
	r->created_by = SpiGetText(0, 10);
	r->job_id = SpiGetInt64(0, 11, &isnull);
	if (isnull)
		r->job_id = 0;
	r->last_run = SpiGetInt64(0, 12, &isnull);
	if (isnull)
		r->last_run = 0;
	r->last_unfinished = SpiGetBool(0, 13, &isnull) && !isnull;
	r->last_group = SpiGetInt64(0, 14, &isnull);
	if (isnull)
		r->last_group = 0;
	SPI_freetuptable(SPI_tuptable);
	return true;
}

/*
 * ScheduleRefresh
 *		See backfill.h: schedule_refresh -> the refresh's id, which
 *		unschedule_refresh and _refresh_tick take.  A target has at most
 *		one refresh: scheduling it again replaces the old one
 *		(UnscheduleLoadedRefresh, with its permission check).  The caller
 *		needs to be able to rebuild the target (INSERT and DELETE) and the
 *		definition's author must still be allowed to run it, as for a
 *		plan; the caller's TimeZone and search_path are kept for the
 *		ticks, which plan as the caller would.  Caller is connected to
 *		SPI.
 */
int64
ScheduleRefresh(Oid target, const char *cron, const char *quiet_hours,
				Interval *lookback, bool cascade, bool missing)
{
	Interval	zero = {0, 0, 0};
	int			qstart;
	int			qend;
	Definition *def;
	RefreshInfo old;
	int64		refresh_id;
	int64		job_id;
	bool		isnull;
	CatalogArgs args;
	Oid			utypes[2] = {INT8OID, INT8OID};
	Datum		uvalues[2];
	TimestampTz start;
	TimestampTz end;
	const char *tz = GetConfigOption("TimeZone", false, false);

	if (DatumGetInt32(DirectFunctionCall2(interval_cmp,
										  IntervalPGetDatum(lookback),
										  IntervalPGetDatum(&zero))) <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lookback must be positive"),
				 errhint("Pass the time late changes can arrive in, for example interval '7 days'.")));
	if (quiet_hours != NULL)
	{
		ParseQuietHours(quiet_hours, &qstart, &qend);
		(void) LocalMinuteOfDay(GetCurrentTimestamp(), tz);
	}

	RequirePgCron("A refresh is a pg_cron job; backfill itself works without pg_cron.");
	/* the parked jobs of finished runs go first (schedule.c) */
	SchedulePrepareJob();

	CheckTargetPrivileges(target);
	def = LoadDefinition(target, 0);
	/* its ticks will run the current version's text as its author */
	CheckAuthor(def->author, target, def->version);

	/* one refresh per target: a new schedule replaces the old one */
	if (LoadRefresh(0, target, &old))
		(void) UnscheduleLoadedRefresh(&old);

	CatalogArgsInit(&args);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(target), false);
	CatalogArgText(&args, cron);
	CatalogArgText(&args, quiet_hours);
	CatalogArg(&args, INTERVALOID, IntervalPGetDatum(lookback), false);
	CatalogArg(&args, BOOLOID, BoolGetDatum(cascade), false);
	CatalogArg(&args, BOOLOID, BoolGetDatum(missing), false);
	CatalogArgText(&args, tz);
	CatalogArgText(&args, GetConfigOption("search_path", false, false));
	CatalogArgText(&args, CurrentUserName());
	CatalogArg(&args, OIDOID, ObjectIdGetDatum(GetUserId()), false);
	CatalogExecArgs("INSERT INTO backfill.refreshes (target, cron, quiet_hours,"
					" lookback, cascade, missing, timezone, search_path,"
					" created_by, created_by_oid)"
					" VALUES ($1, $2, $3, $4, $5, $6, $7, $8,"
					" $9::pg_catalog.name, $10) RETURNING refresh_id",
					&args, SPI_OK_INSERT_RETURNING);
	refresh_id = SpiGetInt64(0, 1, &isnull);
	SPI_freetuptable(SPI_tuptable);

	/* a lookback too long for backfill.max_chunks is refused now */
	LookbackRange(def->chunk, lookback, GetCurrentTransactionStartTimestamp(),
				  "refresh", refresh_id, &start, &end);

	/* the job belongs to the caller: scheduled for the caller (cronjobs.c) */
	job_id = CronCreateJob(CRON_KIND_REFRESH, refresh_id, cron,
						   psprintf("CALL backfill._refresh_tick(" INT64_FORMAT ")",
									refresh_id),
						   psprintf("refresh " INT64_FORMAT, refresh_id));

	uvalues[0] = Int64GetDatum(refresh_id);
	uvalues[1] = Int64GetDatum(job_id);
	CatalogExec("UPDATE backfill.refreshes SET job_id = $2"
				" WHERE refresh_id OPERATOR(pg_catalog.=) $1",
				2, utypes, uvalues, NULL, SPI_OK_UPDATE);

	/* the job's role cannot be dropped while it has the job (jobguard.c) */
	JobGuardGrant();
	return refresh_id;
}

/*
 * RemoveRefresh
 *		Remove a refresh's pg_cron job (by id and name, as the extension
 *		owner) and its row, then release its role's guard when the role
 *		has no other job (jobguard.c).  A run it planned stays, as any run
 *		does.  Caller is connected to SPI.
 */
static void
RemoveRefresh(RefreshInfo *r)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	char	   *owner;
	bool		removed;

	owner = CronRemoveOwnJob(r->job_id, CRON_KIND_REFRESH, r->refresh_id,
							 &removed);
	values[0] = Int64GetDatum(r->refresh_id);
	CatalogExec("DELETE FROM backfill.refreshes"
				" WHERE refresh_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_DELETE);
	/* after the refresh's row: the guard's lock comes last (jobguard.c) */
	JobGuardRelease(owner);
}

/*
 * UnscheduleLoadedRefresh
 *		Remove the refresh "r" and its pg_cron job (RemoveRefresh); false
 *		when the caller cannot see it (CatalogRowVisible).  Only the role
 *		that scheduled it (or a role with its privileges) may.  Caller is
 *		connected to SPI.
 */
static bool
UnscheduleLoadedRefresh(RefreshInfo *r)
{
	/* a refresh of a table the caller may not read is not there for them */
	if (!CatalogRowVisible(r->target, r->created_by_oid))
		return false;
	if (!HasRunPermission(r->created_by_oid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to unschedule the refresh of %s",
						QualifiedRelName(r->target)),
				 errdetail("The refresh was scheduled by role \"%s\".",
						   r->created_by)));
	RemoveRefresh(r);
	return true;
}

/*
 * UnscheduleRefresh
 *		See backfill.h: remove the refresh "refresh_id" (what
 *		schedule_refresh returned) and its pg_cron job; false when there is
 *		no such refresh, or none the caller can see.  Caller is connected
 *		to SPI.
 */
bool
UnscheduleRefresh(int64 refresh_id)
{
	RefreshInfo r;

	if (refresh_id == 0 || !LoadRefresh(refresh_id, InvalidOid, &r))
		return false;
	return UnscheduleLoadedRefresh(&r);
}

/*
 * RefreshForgetTarget
 *		See backfill.h: unregister's removal of the target's refresh, if
 *		any, without unschedule_refresh's permission check (unregister has
 *		its own).  Caller is connected to SPI.
 */
void
RefreshForgetTarget(Oid target)
{
	RefreshInfo r;

	if (LoadRefresh(0, target, &r))
		RemoveRefresh(&r);
}

/*
 * RefreshNote
 *		Record what this tick did (last_tick_at, last_message, and the run
 *		it planned when run_id is not 0) and say it as a NOTICE.  Caller is
 *		connected to SPI.
 */
static void
RefreshNote(int64 refresh_id, int64 run_id, const char *message)
{
	Oid			argtypes[3] = {INT8OID, TEXTOID, INT8OID};
	Datum		values[3];

	ereport(NOTICE,
			(errmsg("refresh %lld: %s", (long long) refresh_id, message)));
	values[0] = Int64GetDatum(refresh_id);
	values[1] = CStringGetTextDatum(message);
	values[2] = Int64GetDatum(run_id);
	CatalogExec("UPDATE backfill.refreshes"
				" SET last_tick_at = pg_catalog.clock_timestamp(),"
				" last_message = $2,"
				" last_run_id = CASE WHEN $3 OPERATOR(pg_catalog.<>) 0"
				"  THEN $3 ELSE last_run_id END"
				" WHERE refresh_id OPERATOR(pg_catalog.=) $1",
				3, argtypes, values, NULL, SPI_OK_UPDATE);
}

/*
 * OverlappingRun
 *		An unfinished run of the target overlapping [start, end), or 0.
 *		Caller is connected to SPI.
 */
static int64
OverlappingRun(Oid target, TimestampTz start, TimestampTz end)
{
	Oid			argtypes[3] = {REGCLASSOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[3];
	bool		isnull;
	int64		run_id = 0;

	values[0] = ObjectIdGetDatum(target);
	values[1] = TimestampTzGetDatum(start);
	values[2] = TimestampTzGetDatum(end);
	CatalogExec("SELECT run_id FROM backfill.runs"
				" WHERE target OPERATOR(pg_catalog.=) $1"
				" AND status OPERATOR(pg_catalog.=) ANY ('{planned,probed,failed}'::pg_catalog.text[])"
				" AND range_start OPERATOR(pg_catalog.<) $3"
				" AND range_end OPERATOR(pg_catalog.>) $2"
				" ORDER BY run_id LIMIT 1",
				3, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
		run_id = SpiGetInt64(0, 1, &isnull);
	SPI_freetuptable(SPI_tuptable);
	return run_id;
}

/*
 * RunOutcome
 *		"run N: <status>, k of n chunks done" for the message of a tick.
 *		Caller is connected to SPI.
 */
static char *
RunOutcome(int64 run_id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	char	   *text;

	values[0] = Int64GetDatum(run_id);
	CatalogExec("SELECT 'run ' OPERATOR(pg_catalog.||) r.run_id::pg_catalog.text"
				" OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) r.status"
				" OPERATOR(pg_catalog.||) ': '"
				" OPERATOR(pg_catalog.||) (SELECT pg_catalog.count(*) FILTER"
				"  (WHERE c.status OPERATOR(pg_catalog.=) 'done')"
				"  OPERATOR(pg_catalog.||) ' of ' OPERATOR(pg_catalog.||) pg_catalog.count(*)"
				"  OPERATOR(pg_catalog.||) ' chunks done'"
				"  FROM backfill.chunks c WHERE c.run_id OPERATOR(pg_catalog.=) r.run_id)"
				" FROM backfill.runs r WHERE r.run_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	text = SPI_processed == 1 ? SpiGetText(0, 1) : NULL;
	SPI_freetuptable(SPI_tuptable);
	return text ? text : psprintf("run %lld is gone", (long long) run_id);
}

/*
 * PlanRefresh
 *		Plan the stale (with "missing", also the never-built) chunks of the
 *		refresh's lookback, downstream targets following with "cascade",
 *		as the scheduling session would: under its TimeZone (the chunk
 *		grid, the run's TimeZone) and search_path (the run's), set for
 *		the plan only.  Returns the run id (the group's root with
 *		cascade), 0 when nothing was planned.  Caller is connected to SPI.
 */
static int64
PlanRefresh(RefreshInfo *r)
{
	int			nestlevel = NewGUCNestLevel();
	Definition *def;
	PlanRequest req;
	TimestampTz start;
	TimestampTz end;
	int64		other;
	int64		run_id = 0;
	bool		planned = false;

	(void) set_config_option("TimeZone", r->timezone, PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("search_path", r->search_path, PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);

	def = LoadDefinition(r->target, 0);
	LookbackRange(def->chunk, r->lookback,
				  GetCurrentTransactionStartTimestamp(), "refresh",
				  r->refresh_id, &start, &end);
	other = OverlappingRun(r->target, start, end);
	if (other != 0)
		RefreshNote(r->refresh_id, 0,
					psprintf("nothing planned: run %lld of %s overlaps [%s, %s) and is unfinished",
							 (long long) other, QualifiedRelName(r->target),
							 TimestampText(start), TimestampText(end)));
	else
	{
		memset(&req, 0, sizeof(PlanRequest));
		req.target = r->target;
		req.start = start;
		req.end = end;
		req.only = ONLY_STALE | (r->missing ? ONLY_MISSING : 0);
		req.cascade = r->cascade;
		req.note = psprintf("refresh %lld", (long long) r->refresh_id);
		run_id = PipelinePlan(&req, &planned);
		if (planned)
			RefreshNote(r->refresh_id, run_id,
						psprintf("planned run %lld over [%s, %s)",
								 (long long) run_id, TimestampText(start),
								 TimestampText(end)));
		else
			RefreshNote(r->refresh_id, 0,
						psprintf("nothing to refresh: no chunk of [%s, %s) is %s",
								 TimestampText(start), TimestampText(end),
								 r->missing ? "stale or missing" : "stale"));
	}
	AtEOXact_GUC(true, nestlevel);
	return planned ? run_id : 0;
}

/*
 * RefreshNoteFailure
 *		The RunFailureHook of a tick's runs (arg: the RefreshInfo): the
 *		tick's error follows (pg_cron keeps it), but last_message said only
 *		what the tick began with ("planned run …", "continuing run …"): it
 *		now says which chunk failed and why, and that each tick retries the
 *		run until it is done or cancelled (later changes wait for it).
 *		Committed, so the error keeps it.  The error's message only for a
 *		run of the refresh's own target: a downstream target's (cascade)
 *		may carry data its source read from tables that a role who may
 *		read the refresh's target (the row-level security of
 *		backfill.refreshes) may not read, which is why backfill.chunks
 *		shows it only to the roles that may read that downstream target;
 *		last_message names the run and the chunk and points there.  Found
 *		by the attack review of the failure note.
 */
static void
RefreshNoteFailure(void *arg, int64 run_id, Oid target, int chunk_no,
				   TimestampTz start, TimestampTz end, const char *message)
{
	RefreshInfo *r = (RefreshInfo *) arg;
	char	   *why;

	if (target == r->target)
		why = psprintf(": %s", message);
	else
		why = psprintf(" (downstream target %s; its error is in backfill.chunks, for the roles that may read that table)",
					   get_rel_name(target) != NULL ?
					   QualifiedRelName(target) :
					   psprintf("with OID %u", target));
	SpiConnect();
	RefreshNote(r->refresh_id, 0,
				psprintf("run %lld failed at chunk %d [%s, %s)%s; each tick retries it until it is done or cancelled",
						 (long long) run_id, chunk_no, TimestampText(start),
						 TimestampText(end), why));
	SpiFinish();
	SPI_commit();
}

/*
 * ExecuteRefreshRun
 *		Execute the refresh's run as any run (ExecuteRun), or its group in
 *		dependency order (RunGroup), to the end, telling run.c that these
 *		runs belong to the tick.  Caller has a non-atomic SPI connection.
 */
static void
ExecuteRefreshRun(RefreshInfo *r, int64 run_id, int64 group_id)
{
	RunInRefreshTick(RefreshNoteFailure, r);
	PG_TRY();
	{
		if (group_id != 0)
			RunGroup(group_id, -1, 1);
		else
			ExecuteRun(run_id, -1, 1);
	}
	PG_FINALLY();
	{
		RunInRefreshTick(NULL, NULL);
	}
	PG_END_TRY();
}

/*
 * RefreshPlanAndRun
 *		The body of a tick: continue the refresh's unfinished run, or plan
 *		(PlanRefresh) and commit the plan; then execute it as any run
 *		(the chunks run under the run's own TimeZone and search_path).
 *		Caller has a non-atomic SPI connection.
 */
static void
RefreshPlanAndRun(RefreshInfo *r)
{
	int64		run_id;
	int64		group_id;

	if (r->last_run != 0 && r->last_unfinished)
	{
		run_id = r->last_run;
		group_id = r->last_group;
		RefreshNote(r->refresh_id, 0,
					psprintf("continuing run %lld", (long long) run_id));
	}
	else
	{
		run_id = PlanRefresh(r);
		if (run_id == 0)
			return;
		group_id = r->cascade ? run_id : 0;
		/* the plan stands whatever its execution does */
		SPI_commit();
	}

	ExecuteRefreshRun(r, run_id, group_id);
	RefreshNote(r->refresh_id, 0, RunOutcome(run_id));
}

/*
 * RefreshTick
 *		See backfill.h: CALL backfill._refresh_tick(refresh_id).  In a
 *		pg_cron tick, the sweeps of every backfill tick first, then nothing
 *		outside the refresh's quiet hours.  Only the role that scheduled
 *		the refresh (or a role with its privileges) may tick it; called by
 *		hand, it refreshes now, whatever the quiet hours.  A tick of a
 *		refresh that no longer exists (a job left behind), or of one whose
 *		target the caller may not SELECT, does nothing, with the same
 *		NOTICE.
 */
void
RefreshTick(int64 refresh_id)
{
	RefreshInfo r;

	ScheduleCheckTick();

	/*
	 * A refresh whose target the caller may not SELECT does not exist for
	 * them: the very NOTICE of an unknown id, naming neither the table nor
	 * the role that scheduled it (CatalogRowVisible, as for runs).
	 */
	if (!LoadRefresh(refresh_id, InvalidOid, &r) ||
		!CatalogRowVisible(r.target, r.created_by_oid))
	{
		ereport(NOTICE,
				(errmsg("refresh %lld does not exist; this tick does nothing",
						(long long) refresh_id),
				 errhint("Remove a pg_cron job left behind with cron.unschedule.")));
		/* pg_cron elsewhere: a job left behind parks itself (cronjobs.c) */
		if (ScheduleCalledFromCron())
			CronParkLeftover(CRON_KIND_REFRESH, refresh_id, 0);
		return;
	}
	if (!HasRunPermission(r.created_by_oid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to run refresh %lld", (long long) refresh_id),
				 errdetail("The refresh was scheduled by role \"%s\".", r.created_by)));
	if (ScheduleCalledFromCron() &&
		!ScheduleTickAllowed(r.quiet_hours, r.timezone, GetCurrentTimestamp()))
	{
		RefreshNote(refresh_id, 0,
					psprintf("outside its quiet hours %s; nothing to do in this tick",
							 r.quiet_hours));
		return;
	}

	RefreshPlanAndRun(&r);
}
