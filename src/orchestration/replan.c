/*-------------------------------------------------------------------------
 *
 * replan.c
 *	  Replan: a run (or a group) whose failure lies in its definition is
 *	  taken up again under the target's current definition.  In one
 *	  transaction, the unfinished chunks are cancelled and exactly those
 *	  ranges are planned as a new run, which records the run it continues
 *	  (runs.continues_run); for a group, the downstream chunks built from
 *	  them are planned too, widened as a cascade does (cascade.c).
 *
 * A run is pinned to the definition version it was planned under, so
 * retrying a chunk that the definition failed repeats the failure; and a
 * new plan over the range is refused while the run is unfinished.  Replan
 * is cancel plus plan, done together so that nothing can slip in between
 * and nothing is half done.
 *
 * The new run keeps the old run's options (backwards, clear_no_source, its
 * note, its chunk interval, whether it keeps what it replaces, its
 * TimeZone and search_path) but is probed again: it runs a definition that
 * has not run yet, and the probe chunk is how a person looks at it first.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "backfill.h"

/*
 * LockRunForReplan
 *		Take the run's lock (the one a run call holds while it executes the
 *		run) until the end of this transaction, refusing (55006) a run
 *		being executed right now: its chunk in flight would finish under
 *		the old definition beside the new run.  A run call that starts
 *		meanwhile finds the lock taken and does nothing.
 */
static void
LockRunForReplan(int64 run_id)
{
	LOCKTAG		tag;

	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_RUN, (uint32) run_id);
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("run %lld is being executed", (long long) run_id),
				 errdetail("A chunk of the run is executing in another session."),
				 errhint("Wait for the call to end (backfill.progress shows its pid), then replan.")));
}

/*
 * RemainingRanges
 *		The ranges of the run's unfinished chunks, in chunk order: pending
 *		and failed ones, and with clear_no_source the no_source ones not
 *		cleared yet.  Bounded by the run's chunk count (at most
 *		backfill.max_chunks when it was planned).  Caller is connected to
 *		SPI; the arrays are in the current memory context.
 */
static void
RemainingRanges(RunInfo *run, PlanChunks *out)
{
	Oid			argtypes[2] = {INT8OID, BOOLOID};
	Datum		values[2];
	int			i;

	values[0] = Int64GetDatum(run->run_id);
	values[1] = BoolGetDatum(run->clear_no_source);
	CatalogExec("SELECT chunk_start, chunk_end FROM backfill.chunks"
				" WHERE run_id OPERATOR(pg_catalog.=) $1"
				" AND (status OPERATOR(pg_catalog.=) ANY ('{pending,failed}'::pg_catalog.text[])"
				"  OR ($2 AND status OPERATOR(pg_catalog.=) 'no_source'"
				"      AND finished_at IS NULL))"
				" ORDER BY chunk_no",
				2, argtypes, values, NULL, SPI_OK_SELECT);
	out->n = (int) SPI_processed;
	out->starts = palloc(sizeof(TimestampTz) * Max(out->n, 1));
	out->ends = palloc(sizeof(TimestampTz) * Max(out->n, 1));
	out->reasons = NULL;
	for (i = 0; i < out->n; i++)
	{
		bool		isnull;

		CHECK_FOR_INTERRUPTS();
		out->starts[i] = DatumGetTimestampTz(SpiGetDatumCopy(i, 1, &isnull));
		out->ends[i] = DatumGetTimestampTz(SpiGetDatumCopy(i, 2, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
}

/*
 * RefuseFinished
 *		55000 for a run that is done or cancelled: nothing of it is left.
 */
static void
RefuseFinished(RunInfo *run)
{
	if (run->status == RUN_DONE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run %lld is already done", (long long) run->run_id),
				 errdetail("A finished run has no unfinished chunks to plan again."),
				 errhint("To rebuild its range under the current definition, plan it again with backfill.plan (only_chunks => 'outdated' keeps the chunks built under an older version).")));
	if (run->status == RUN_CANCELLED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run %lld is cancelled", (long long) run->run_id),
				 errdetail("A cancelled run has no unfinished chunks to plan again."),
				 errhint("Plan its range again with backfill.plan (only_chunks => 'failed' keeps the chunks whose latest attempt failed or was cancelled).")));
}

/*
 * PinRunSettings
 *		Plan as the old run was planned: its TimeZone and search_path, for
 *		the rest of this GUC nest level (the caller pops it).
 */
static void
PinRunSettings(RunInfo *run)
{
	(void) set_config_option("TimeZone", run->timezone, PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("search_path", run->search_path, PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
}

/*
 * RecordContinues
 *		The new run records the run it continues.
 */
static void
RecordContinues(int64 new_run, int64 old_run)
{
	Oid			argtypes[2] = {INT8OID, INT8OID};
	Datum		values[2];

	values[0] = Int64GetDatum(new_run);
	values[1] = Int64GetDatum(old_run);
	CatalogExec("UPDATE backfill.runs SET continues_run = $2"
				" WHERE run_id OPERATOR(pg_catalog.=) $1",
				2, argtypes, values, NULL, SPI_OK_UPDATE);
}

/*
 * ReplanRun
 *		See backfill.h.  Refused for a revert run (it has no definition to
 *		plan again), a run of a group (replan_group), a done or cancelled
 *		run, a run with nothing left, a run being
 *		executed, and a caller the run permission rule refuses (the same
 *		rights as run: the planner's, and DELETE and INSERT on the
 *		target).  Caller is connected to SPI.
 */
int64
ReplanRun(int64 run_id)
{
	RunInfo    *run;
	PlanChunks	chunks;
	PlanRequest req;
	int64		new_run;
	int			nest;
	int32		version;

	run = LoadRun(run_id);
	CheckRunIdentity(run, "replan", true);
	if (run->reverts != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run %lld is the revert of run %lld and cannot be replanned",
						(long long) run_id, (long long) run->reverts),
				 errdetail("A revert run puts back the rows run %lld kept; it has no definition to plan again.",
						   (long long) run->reverts),
				 errhint("Fix the cause of its failure, then CALL backfill.run(%lld); or cancel it with backfill.cancel(%lld).",
						 (long long) run_id, (long long) run_id)));
	if (run->group_id != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run %lld belongs to group %lld", (long long) run_id,
						(long long) run->group_id),
				 errdetail("The downstream runs of a group are built from its upstream chunks; replanning one run alone would leave them behind."),
				 errhint("Replan the whole group with backfill.replan_group(%lld).",
						 (long long) run->group_id)));
	RefuseFinished(run);
	LockRunForReplan(run_id);

	RemainingRanges(run, &chunks);
	if (chunks.n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run %lld has nothing left to replan", (long long) run_id),
				 errdetail("Every chunk of the run is done or cancelled."),
				 errhint("CALL backfill.run(%lld) marks it done.", (long long) run_id)));

	(void) CancelRun(run_id);

	memset(&req, 0, sizeof(req));
	req.target = run->target;
	req.start = chunks.starts[0];
	req.end = chunks.ends[chunks.n - 1];
	req.chunk = run->chunk;
	req.note = run->note;
	req.probe = true;
	req.backwards = run->backwards;
	req.clear_no_source = run->clear_no_source;
	/* the new run keeps what it replaces if the old one did (undo) */
	req.keep_given = true;
	req.keep_replaced = run->keep_replaced;
	req.given = &chunks;

	nest = NewGUCNestLevel();
	PinRunSettings(run);
	new_run = PlanRun(&req);
	AtEOXact_GUC(true, nest);
	RecordContinues(new_run, run_id);

	version = LoadDefinition(run->target, 0)->version;
	ereport(NOTICE,
			(errmsg("run %lld %s replanned as run %lld: %d %s under definition version %d",
					(long long) run_id, run->relname, (long long) new_run,
					chunks.n, chunks.n == 1 ? "chunk" : "chunks", version),
			 errdetail("Run %lld is cancelled; run %lld continues it, with the same options, probed again.",
					   (long long) run_id, (long long) new_run),
			 errhint("CALL backfill.run(%lld) runs its first chunk alone, for a look before the rest.",
					 (long long) new_run)));
	return new_run;
}

/*
 * ReplanGroup
 *		See backfill.h.  Every unfinished run of the group passes the same
 *		checks as ReplanRun (a group with none left is refused); their
 *		unfinished chunks are cancelled and planned again from the group's
 *		root target down (CascadeReplan: each target's own unfinished
 *		chunks, and the chunks widened from its new upstream runs), as a
 *		new group whose first run is probed.  Caller is connected to SPI.
 */
int64
ReplanGroup(int64 group_id)
{
	List	   *runs;
	ListCell   *lc;
	int			nseeds = 0;
	ReplanSeed *seeds;
	RunInfo    *first = NULL;
	Oid			root_target = InvalidOid;
	int64		new_group;
	int			nest;
	int			i;

	runs = GroupRuns(group_id, false);
	seeds = palloc0(sizeof(ReplanSeed) * Max(list_length(runs), 1));
	foreach(lc, runs)
	{
		int64		run_id = *(int64 *) lfirst(lc);
		RunInfo    *run;

		CHECK_FOR_INTERRUPTS();
		run = LoadRun(run_id);
		if (run_id == group_id)
			root_target = run->target;
		if (run->status == RUN_DONE || run->status == RUN_CANCELLED)
			continue;
		CheckRunIdentity(run, "replan", true);
		LockRunForReplan(run_id);
		seeds[nseeds].target = run->target;
		seeds[nseeds].old_run = run_id;
		seeds[nseeds].note = run->note;
		seeds[nseeds].chunk = run->chunk;
		seeds[nseeds].keep_given = true;
		seeds[nseeds].keep_replaced = run->keep_replaced;
		RemainingRanges(run, &seeds[nseeds].chunks);
		if (first == NULL)
			first = run;
		nseeds++;
	}
	if (first == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("group %lld has nothing left to replan", (long long) group_id),
				 errdetail("Every run of the group is done or cancelled."),
				 errhint("Plan the range again with backfill.plan(..., cascade => true).")));
	if (!OidIsValid(root_target))
		root_target = first->target;

	for (i = 0; i < nseeds; i++)
		(void) CancelRun(seeds[i].old_run);

	nest = NewGUCNestLevel();
	PinRunSettings(first);
	new_group = CascadeReplan(root_target, seeds, nseeds, first->backwards,
							  first->clear_no_source);
	AtEOXact_GUC(true, nest);

	if (new_group == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("group %lld has nothing left to replan", (long long) group_id),
				 errdetail("No run of the group has an unfinished chunk."),
				 errhint("CALL backfill.run_group(%lld) marks its runs done.",
						 (long long) group_id)));
	ereport(NOTICE,
			(errmsg("group %lld replanned as group %lld", (long long) group_id,
					(long long) new_group),
			 errdetail("Its unfinished runs are cancelled; the runs of group %lld continue them under the current definitions, the first one probed again.",
					   (long long) new_group),
			 errhint("CALL backfill.run_group(%lld) runs them in dependency order.",
					 (long long) new_group)));
	return new_group;
}
