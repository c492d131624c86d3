/*-------------------------------------------------------------------------
 *
 * plan.c
 *	  Planning one run: PlanRun turns a range of a registered target (or
 *	  the chunks it is given) into a run and its chunks, set-based,
 *	  executing nothing; CreateRun, the one place that inserts a run
 *	  (the revert's plan, undo.c, calls it too).
 *
 * A run pins the target's current definition version, the caller's
 * TimeZone and search_path, the caller (by OID) as its planner, and
 * whether it keeps what it replaces (plan's keep_replaced, else the
 * definition's; doc/undo.md); the
 * chunks before the source horizon are planned as no_source.  Plans that
 * choose their chunks (only_chunks, cascade) are made by cascade.c, which
 * calls PlanRun for each run.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "parser/parse_coerce.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "backfill.h"

/*
 * CreateRun
 *		See backfill.h: insert the run req describes into backfill.runs,
 *		planned by the current user, and return its run_id.  The one place
 *		that creates runs: PlanRun and the revert's plan (undo.c) both call
 *		it.  Caller is connected to SPI.
 */
int64
CreateRun(const RunRequest *req)
{
	CatalogArgs args;
	bool		isnull;
	int64		run_id;

	CatalogArgsInit(&args);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(req->target), false);
	CatalogArgText(&args, req->target_name);
	CatalogArg(&args, TIMESTAMPTZOID, TimestampTzGetDatum(req->range_start),
			   false);
	CatalogArg(&args, TIMESTAMPTZOID, TimestampTzGetDatum(req->range_end),
			   false);
	CatalogArg(&args, INTERVALOID, IntervalPGetDatum(req->chunk), false);
	CatalogArgText(&args, req->note);
	CatalogArg(&args, BOOLOID, BoolGetDatum(req->probe), false);
	CatalogArg(&args, BOOLOID, BoolGetDatum(req->backwards), false);
	CatalogArg(&args, BOOLOID, BoolGetDatum(req->clear_no_source), false);
	CatalogArg(&args, INT4OID, Int32GetDatum(req->definition_version), false);
	CatalogArgText(&args, req->timezone);
	CatalogArgText(&args, req->search_path);
	CatalogArgText(&args, CurrentUserName());
	CatalogArg(&args, OIDOID, ObjectIdGetDatum(GetUserId()), false);
	CatalogArg(&args, BOOLOID, BoolGetDatum(req->keep_replaced), false);
	CatalogArg(&args, INT8OID, Int64GetDatum(req->reverts), req->reverts == 0);
	CatalogExecArgs("INSERT INTO backfill.runs (target, target_name, range_start,"
					" range_end, chunk, note, probe, backwards, clear_no_source,"
					" definition_version, timezone, search_path, created_by,"
					" created_by_oid, keep_replaced, reverts)"
					" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,"
					" $13::pg_catalog.name, $14, $15, $16) RETURNING run_id",
					&args, SPI_OK_INSERT_RETURNING);
	run_id = SpiGetInt64(0, 1, &isnull);
	SPI_freetuptable(SPI_tuptable);
	return run_id;
}

/*
 * CheckRunOverlap
 *		An unfinished run of target overlapping [start, end) is an error
 *		(23P01): a range is planned once until its run is finished.  Caller
 *		is connected to SPI and holds the target's plan lock.
 */
static void
CheckRunOverlap(Oid target, TimestampTz start, TimestampTz end)
{
	bool		isnull;
	Oid			types[3] = {REGCLASSOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		vals[3];

	vals[0] = ObjectIdGetDatum(target);
	vals[1] = TimestampTzGetDatum(start);
	vals[2] = TimestampTzGetDatum(end);
	CatalogExec("SELECT run_id, range_start, range_end FROM backfill.runs"
				" WHERE target OPERATOR(pg_catalog.=) $1"
				" AND status OPERATOR(pg_catalog.=) ANY ('{planned,probed,failed}'::pg_catalog.text[])"
				" AND range_start OPERATOR(pg_catalog.<) $3"
				" AND range_end OPERATOR(pg_catalog.>) $2"
				" ORDER BY run_id LIMIT 1",
				3, types, vals, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
	{
		int64		other = SpiGetInt64(0, 1, &isnull);
		TimestampTz os = DatumGetTimestampTz(SpiGetDatumCopy(0, 2, &isnull));
		TimestampTz oe = DatumGetTimestampTz(SpiGetDatumCopy(0, 3, &isnull));

		ereport(ERROR,
				(errcode(ERRCODE_EXCLUSION_VIOLATION),
				 errmsg("range overlaps unfinished run %lld", (long long) other),
				 errdetail("Run %lld covers [%s, %s) of the same table and is not finished.",
						   (long long) other, TimestampText(os), TimestampText(oe)),
				 errhint("Finish it with CALL backfill.run(%lld), or cancel it with backfill.cancel(%lld).",
						 (long long) other, (long long) other)));
	}
	SPI_freetuptable(SPI_tuptable);
}

/*
 * PlanHorizon
 *		The source horizon of a run of target: chunks starting before it
 *		are planned as no_source.  From the definition's source_retention,
 *		else its source_horizon query, which is user text and runs as its
 *		author (version); false when there is none (no chunk is
 *		no_source).  Caller is connected to SPI.
 */
static bool
PlanHorizon(Oid target, int32 version, Oid author, Interval *retention,
			const char *horizon_sql, TimestampTz *horizon)
{
	bool		horizon_null;

	if (horizon_sql == NULL || retention != NULL)
		horizon_null = !SourceHorizon(retention, NULL, horizon);
	else
	{
		/* the horizon query is user text: it runs as its author */
		AuthorGate	gate;

		AuthorGateEnter(&gate, author, target, version,
						GetConfigOption("search_path", false, false),
						GetConfigOption("TimeZone", false, false));
		PG_TRY();
		{
			horizon_null = !SourceHorizon(NULL, horizon_sql, horizon);
		}
		PG_CATCH();
		{
			AuthorGateAbort(&gate);
			PG_RE_THROW();
		}
		PG_END_TRY();
		AuthorGateLeave(&gate);
	}
	return !horizon_null;
}

/*
 * CreateRunChunks
 *		Insert run_id's n chunks, set-based (one statement whatever their
 *		number): the "given" ones (with their reasons) or those between the
 *		n + 1 bounds; the chunks starting before the horizon (when not
 *		horizon_null) are no_source.  Caller is connected to SPI.
 */
static void
CreateRunChunks(int64 run_id, int n, const PlanChunks *given,
				TimestampTz *bounds, TimestampTz horizon, bool horizon_null)
{
	CatalogArgs args;
	Datum	   *starts = palloc(sizeof(Datum) * n);
	Datum	   *ends = palloc(sizeof(Datum) * n);
	int			k;

	for (k = 0; k < n; k++)
	{
		starts[k] = TimestampTzGetDatum(given ? given->starts[k] : bounds[k]);
		ends[k] = TimestampTzGetDatum(given ? given->ends[k] : bounds[k + 1]);
	}
	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(run_id), false);
	CatalogArg(&args, TIMESTAMPTZARRAYOID,
			   MakeArray(starts, NULL, n, TIMESTAMPTZOID), false);
	CatalogArg(&args, TIMESTAMPTZARRAYOID,
			   MakeArray(ends, NULL, n, TIMESTAMPTZOID), false);
	CatalogArg(&args, TIMESTAMPTZOID, TimestampTzGetDatum(horizon),
			   horizon_null);
	/* why each chunk was chosen, written with it (no UPDATE after) */
	if (given != NULL && given->reasons != NULL)
	{
		Datum	   *texts = palloc(sizeof(Datum) * n);
		bool	   *none = palloc(sizeof(bool) * n);

		for (k = 0; k < n; k++)
		{
			none[k] = given->reasons[k] == NULL;
			texts[k] = none[k] ? (Datum) 0 :
				CStringGetTextDatum(given->reasons[k]);
		}
		CatalogArg(&args, TEXTARRAYOID, MakeArray(texts, none, n, TEXTOID),
				   false);
	}
	else
		CatalogArg(&args, TEXTARRAYOID, (Datum) 0, true);
	CatalogExecArgs("INSERT INTO backfill.chunks"
					" (run_id, chunk_no, chunk_start, chunk_end, status, verdict,"
					"  reason)"
					" SELECT $1, c.n::pg_catalog.int4, c.s, c.e,"
					"  CASE WHEN c.s OPERATOR(pg_catalog.<) $4 THEN 'no_source' ELSE 'pending' END,"
					"  CASE WHEN c.s OPERATOR(pg_catalog.<) $4 THEN 'no_source' END,"
					"  c.r"
					" FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3),"
					"  pg_catalog.unnest($5))"
					" WITH ORDINALITY AS c(s, e, r, n)",
					&args, SPI_OK_INSERT);
}

/*
 * PlanRun
 *		See backfill.h.  Create the run of req->target over [start, end)
 *		and its chunks; execute nothing.  req->chunk NULL means the
 *		target's chunk.  req->given, when not NULL, lists the chunks to
 *		create instead (cascade.c: only-plans and the runs of a cascading
 *		plan; sorted, non-overlapping, at least one; start and end are then
 *		its first start and last end).  Caller is connected to SPI.
 *		Returns the run id.
 */
int64
PlanRun(const PlanRequest *req)
{
	Oid			target = req->target;
	TimestampTz start = req->start;
	TimestampTz end = req->end;
	const PlanChunks *given = req->given;
	Definition *def;
	Interval   *step;
	Interval   *retention;
	char	   *horizon_sql;
	int32		version;
	TimestampTz *bounds;
	int			n;
	TimestampTz horizon = 0;
	bool		horizon_null = true;
	int64		run_id;
	Oid			author;

	CheckTargetPrivileges(target);
	RequireMaxLength(req->note, "note", BACKFILL_MAX_NOTE);
	TakeTargetPlanLock(target);

	def = LoadDefinition(target, 0);
	step = def->chunk;
	retention = def->retention;
	horizon_sql = def->horizon;
	version = def->version;
	author = def->author;

	/* the run will execute this version's text as its author */
	CheckAuthor(author, target, version);
	if (req->chunk != NULL)
		step = req->chunk;

	/* the chunks chosen by cascade.c, if given */
	if (given != NULL)
	{
		n = given->n;
		bounds = NULL;
	}
	else
		n = ComputeChunkBounds(start, req->start_null, end, req->end_null, step, false,
							   &bounds);

	/* an unfinished run of the same target overlapping the range */
	CheckRunOverlap(target, start, end);

	/* the source horizon: chunks starting before it are no_source */
	horizon_null = !PlanHorizon(target, version, author, retention,
								horizon_sql, &horizon);

	/* the run */
	{
		RunRequest	run;

		memset(&run, 0, sizeof(run));
		run.target = target;
		run.target_name = QualifiedRelName(target);
		run.range_start = start;
		run.range_end = end;
		run.chunk = step;
		run.note = req->note;
		run.probe = req->probe;
		run.backwards = req->backwards;
		run.clear_no_source = req->clear_no_source;
		run.definition_version = version;
		run.timezone = GetConfigOption("TimeZone", false, false);
		run.search_path = GetConfigOption("search_path", false, false);
		run.keep_replaced = req->keep_given ? req->keep_replaced :
			def->keep_replaced;
		run_id = CreateRun(&run);
	}

	/* its chunks, set-based: one statement whatever their number */
	CreateRunChunks(run_id, n, given, bounds, horizon, horizon_null);

	return run_id;
}
