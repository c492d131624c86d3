/*-------------------------------------------------------------------------
 *
 * readers.c
 *	  The one reader of each catalog record: a definition version
 *	  (LoadDefinition), a run with its pinned definition (LoadRun, and
 *	  CheckRunIdentity, which every action on a run passes), and a
 *	  standing check (LoadCheck).  They read through CatalogExec, as the
 *	  extension owner, into the caller's memory context.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"

#include "backfill.h"

/*
 * LoadDefinition
 *		See backfill.h.  The one reader of a definition version, for plan,
 *		preview, set_strategy, reconcile and check.
 */
Definition *
LoadDefinition(Oid target, int32 version)
{
	Oid			argtypes[2] = {REGCLASSOID, INT4OID};
	Datum		values[2];
	Definition *def;
	bool		isnull;
	Datum		d;

	values[0] = ObjectIdGetDatum(target);
	values[1] = Int32GetDatum(version);
	CatalogExec("SELECT d.version, d.author, d.source,"
				" d.time_column::pg_catalog.text, d.chunk, d.source_retention,"
				" d.source_horizon, d.ledger, d.measure, d.tolerance,"
				" d.ledger_gate, d.strategy, d.keep_replaced, d.allow_empty"
				" FROM backfill.targets t JOIN backfill.definitions d"
				"  ON d.target OPERATOR(pg_catalog.=) t.target"
				"  AND d.version OPERATOR(pg_catalog.=) CASE WHEN $2 OPERATOR(pg_catalog.=) 0"
				"   THEN t.current_version ELSE $2 END"
				" WHERE t.target OPERATOR(pg_catalog.=) $1",
				2, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table %s is not registered for backfill",
						QualifiedRelName(target)),
				 errhint("Call backfill.register first, with its time column and source query.")));
	def = palloc0(sizeof(Definition));
	def->target = target;
	def->version = SpiGetInt32(0, 1, &isnull);
	def->author = SpiGetOid(0, 2, &isnull);
	def->source = SpiGetText(0, 3);
	def->time_column = SpiGetText(0, 4);
	def->chunk = DatumGetIntervalP(SpiGetDatumCopy(0, 5, &isnull));
	d = SpiGetDatumCopy(0, 6, &isnull);
	def->retention = isnull ? NULL : DatumGetIntervalP(d);
	def->horizon = SpiGetText(0, 7);
	def->ledger = SpiGetText(0, 8);
	def->measure = SpiGetText(0, 9);
	def->tolerance = SpiGetDatumCopy(0, 10, &isnull);
	if (isnull)
		def->tolerance = NumericGetDatum(int64_to_numeric(0));
	def->ledger_gate = SpiGetBool(0, 11, &isnull);
	def->strategy = ParseStrategy(SpiGetText(0, 12));
	def->keep_replaced = SpiGetBool(0, 13, &isnull);
	def->allow_empty = SpiGetBool(0, 14, &isnull);
	SPI_freetuptable(SPI_tuptable);
	return def;
}

/*
 * LoadRun
 *		Read a run and everything of its pinned definition version (text,
 *		settings, author) into the current memory context; whether the
 *		target is still registered, and its pg_cron job.  Unknown or
 *		invisible run (CheckRunVisible): 42704.  The one loader of a run,
 *		for run, cancel, schedule, unschedule and reconcile.  Caller is connected to
 *		SPI.
 */
RunInfo *
LoadRun(int64 run_id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	RunInfo    *run;
	bool		isnull;

	values[0] = Int64GetDatum(run_id);
	CatalogExec("SELECT r.target::pg_catalog.oid, r.target_name, r.status,"
				" r.probe, r.backwards, r.clear_no_source, r.definition_version,"
				" r.timezone, r.search_path, r.created_by::pg_catalog.text,"
				" r.job_id IS NOT NULL, r.quiet_hours,"
				" t.target IS NOT NULL, d.time_column::pg_catalog.text, d.measure,"
				" d.ledger, d.tolerance, d.ledger_gate, d.strategy, d.source,"
				" r.created_by_oid, d.author, r.job_id, r.chunk,"
				" r.keep_replaced, d.keep_for, r.reverts,"
				" r.group_id, r.note, r.range_start, r.range_end,"
				" d.allow_empty"
				" FROM backfill.runs r"
				" LEFT JOIN backfill.targets t"
				"  ON t.target OPERATOR(pg_catalog.=) r.target"
				" LEFT JOIN backfill.definitions d"
				"  ON d.target OPERATOR(pg_catalog.=) r.target"
				"  AND d.version OPERATOR(pg_catalog.=) r.definition_version"
				" WHERE r.run_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		RaiseRunDoesNotExist(run_id);

	run = palloc0(sizeof(RunInfo));
	run->run_id = run_id;
	run->target = SpiGetOid(0, 1, &isnull);
	run->target_name = SpiGetText(0, 2);
	run->status = ParseRunStatus(SpiGetText(0, 3));
	run->probe = SpiGetBool(0, 4, &isnull);
	run->backwards = SpiGetBool(0, 5, &isnull);
	run->clear_no_source = SpiGetBool(0, 6, &isnull);
	run->definition_version = SpiGetInt32(0, 7, &isnull);
	run->timezone = SpiGetText(0, 8);
	run->search_path = SpiGetText(0, 9);
	run->created_by = SpiGetText(0, 10);
	run->scheduled = SpiGetBool(0, 11, &isnull);
	run->quiet_hours = SpiGetText(0, 12);
	run->registered = SpiGetBool(0, 13, &isnull);
	run->time_column = SpiGetText(0, 14);
	run->measure = SpiGetText(0, 15);
	run->ledger = SpiGetText(0, 16);
	run->tolerance = SpiGetDatumCopy(0, 17, &isnull);
	run->ledger_gate = SpiGetBool(0, 18, &isnull);
	{
		char	   *strategy = SpiGetText(0, 19);

		/* no definition row: the run cannot execute (ExecuteRun says so) */
		run->strategy = strategy ? ParseStrategy(strategy) : STRATEGY_AUTO;
	}
	run->source = SpiGetText(0, 20);
	run->created_by_oid = SpiGetOid(0, 21, &isnull);
	run->author = SpiGetOid(0, 22, &isnull);
	run->job_id = run->scheduled ? SpiGetInt64(0, 23, &isnull) : 0;
	run->chunk = DatumGetIntervalP(SpiGetDatumCopy(0, 24, &isnull));
	run->keep_replaced = SpiGetBool(0, 25, &isnull);
	{
		Datum		d = SpiGetDatumCopy(0, 26, &isnull);

		run->keep_for = isnull ? NULL : DatumGetIntervalP(d);
	}
	run->reverts = SpiGetInt64(0, 27, &isnull);
	if (isnull)
		run->reverts = 0;
	/*
	 * reverting puts rows or kept leaves back whatever the strategy; a
	 * keeping chunk's strategy is KeepStrategy's
	 */
	if (run->reverts != 0)
		run->strategy = STRATEGY_DELETE;
	run->group_id = SpiGetInt64(0, 28, &isnull);
	if (isnull)
		run->group_id = 0;
	run->note = SpiGetText(0, 29);
	run->range_start = DatumGetTimestampTz(SpiGetDatumCopy(0, 30, &isnull));
	run->range_end = DatumGetTimestampTz(SpiGetDatumCopy(0, 31, &isnull));
	run->allow_empty = SpiGetBool(0, 32, &isnull);
	SPI_freetuptable(SPI_tuptable);
	{
		char	   *relname = get_rel_name(run->target);

		/* notices name the table as the user does; its old name if gone */
		run->relname = relname ? pstrdup(quote_identifier(relname)) :
			run->target_name;
	}
	CheckRunVisible(run_id, run->target, run->created_by_oid);
	return run;
}

/*
 * CheckRunIdentity
 *		The caller must pass CheckRunPermission (the planner by OID, or a
 *		role with its privileges; superusers for a dropped planner).  With check_target, the caller must
 *		also be allowed to rewrite the target, which must still exist; a
 *		cancel does not touch the target and skips that part.
 */
void
CheckRunIdentity(RunInfo *run, const char *action, bool check_target)
{
	CheckRunPermission(run->run_id, run->created_by_oid, run->created_by,
					   action);
	if (!check_target)
		return;
	if (get_rel_name(run->target) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the table of run %lld no longer exists",
						(long long) run->run_id),
				 errdetail("The run was planned for table %s.", run->target_name),
				 errhint("Cancel the run with backfill.cancel(%lld).",
						 (long long) run->run_id)));
	CheckTargetPrivileges(run->target);
}

/*
 * LoadCheck
 *		The one reader of a standing check, for unschedule_check and
 *		run_check: 42704 when there is none, and exactly the same for a
 *		check the caller cannot see (CatalogRowVisible: no SELECT on its
 *		table), whose creator and table are never named.  Caller is
 *		connected to SPI.
 */
CheckInfo *
LoadCheck(int64 check_id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	bool		isnull;
	CheckInfo  *check;

	values[0] = Int64GetDatum(check_id);
	CatalogExec("SELECT target::pg_catalog.oid, lookback, job_id,"
				" created_by::pg_catalog.text, created_by_oid"
				" FROM backfill.checks WHERE check_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		RaiseCheckDoesNotExist(check_id);
	check = palloc0(sizeof(CheckInfo));
	check->check_id = check_id;
	check->target = SpiGetOid(0, 1, &isnull);
	check->lookback = DatumGetIntervalP(SpiGetDatumCopy(0, 2, &isnull));
	check->job_id = SpiGetInt64(0, 3, &isnull);
	check->has_job = !isnull;
	check->created_by = SpiGetText(0, 4);
	check->created_by_oid = SpiGetOid(0, 5, &isnull);
	SPI_freetuptable(SPI_tuptable);
	if (!CatalogRowVisible(check->target, check->created_by_oid))
		RaiseCheckDoesNotExist(check_id);
	return check;
}
