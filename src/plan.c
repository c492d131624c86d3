/*-------------------------------------------------------------------------
 *
 * plan.c
 *	  Planning: the source horizon, and plan, which turns a range of a
 *	  registered target into a run and its chunks (set-based, executing
 *	  nothing).
 *
 * A run pins the target's current definition version, the caller's
 * TimeZone and search_path and the caller (by OID) as its planner; the
 * chunks before the source horizon are planned as no_source.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "parser/parse_coerce.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_plan);

/* ----------------------------------------------------------------
 *		plan
 * ----------------------------------------------------------------
 */

/*
 * SourceHorizon
 *		See backfill.h.  The one horizon evaluator, for plan and check:
 *		now() - retention, or the horizon query's value run as the calling
 *		user and converted to timestamptz (a domain over timestamptz, a
 *		timestamp or a date included: any type with an explicit cast).
 *		Caller is connected to SPI.
 */
bool
SourceHorizon(Interval *retention, const char *horizon_sql,
			  TimestampTz *horizon)
{
	Datum		d;
	Oid			typid;
	bool		isnull;

	if (retention != NULL)
	{
		*horizon = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
														   TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
														   IntervalPGetDatum(retention)));
		return true;
	}
	if (horizon_sql == NULL)
		return false;

	SpiExec(horizon_sql, 0, NULL, NULL, NULL, true, 2, SPI_OK_SELECT);
	if (SPI_processed > 1)
		ereport(ERROR,
				(errcode(ERRCODE_CARDINALITY_VIOLATION),
				 errmsg("horizon query returned more than one row"),
				 errhint("Return one value, the earliest time from which the source is complete.")));
	/* no row or NULL: no horizon */
	isnull = true;
	d = (Datum) 0;
	if (SPI_processed == 1)
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
						  &isnull);
	if (isnull)
	{
		SPI_freetuptable(SPI_tuptable);
		return false;
	}
	typid = getBaseType(SPI_gettypeid(SPI_tuptable->tupdesc, 1));
	if (typid != TIMESTAMPTZOID)
	{
		Oid			castfunc;

		if (find_coercion_pathway(TIMESTAMPTZOID, typid, COERCION_EXPLICIT,
								  &castfunc) != COERCION_PATH_FUNC)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("horizon query must return a timestamptz, not type %s",
							format_type_be(typid))));
		d = OidFunctionCall1(castfunc, d);
	}
	*horizon = DatumGetTimestampTz(d);
	SPI_freetuptable(SPI_tuptable);
	return true;
}

/*
 * PlanRun
 *		Create a run of target over [start, end) and its chunks; execute
 *		nothing.  chunk NULL means the target's chunk.  given, when not
 *		NULL, lists the chunks to create instead (pipeline.c: only-plans
 *		and the runs of a cascading plan; sorted, non-overlapping, at least
 *		one; start and end are then its first start and last end).  Caller
 *		is connected to SPI.  Returns the run id.
 */
int64
PlanRun(Oid target, TimestampTz start, bool start_null,
		TimestampTz end, bool end_null, Interval *chunk,
		const char *note, bool probe, bool backwards, bool clear_no_source,
		const PlanChunks *given)
{
	Definition *def;
	Interval   *step;
	Interval   *retention;
	char	   *horizon_sql;
	int32		version;
	bool		isnull;
	TimestampTz *bounds;
	int			n;
	TimestampTz horizon = 0;
	bool		horizon_null = true;
	int64		run_id;
	Oid			author;

	CheckTargetPrivileges(target);
	RequireMaxLength(note, "note", BACKFILL_MAX_NOTE);
	TakeTargetPlanLock(target);

	def = LoadDefinition(target, 0);
	step = def->chunk;
	retention = def->retention;
	horizon_sql = def->horizon;
	version = def->version;
	author = def->author;

	/* the run will execute this version's text as its author */
	CheckAuthor(author, target, version);
	if (chunk != NULL)
		step = chunk;

	/* pipeline hook: the chunks chosen by pipeline.c, if given */
	if (given != NULL)
	{
		n = given->n;
		bounds = NULL;
	}
	else
		n = ComputeChunkBounds(start, start_null, end, end_null, step, false,
							   &bounds);

	/* an unfinished run of the same target overlapping the range */
	{
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

	/* the source horizon: chunks starting before it are no_source */
	if (horizon_sql == NULL || retention != NULL)
		horizon_null = !SourceHorizon(retention, NULL, &horizon);
	else
	{
		/* the horizon query is user text: it runs as its author */
		AuthorGate	gate;

		AuthorGateEnter(&gate, author, target, version,
						GetConfigOption("search_path", false, false),
						GetConfigOption("TimeZone", false, false));
		PG_TRY();
		{
			horizon_null = !SourceHorizon(NULL, horizon_sql, &horizon);
		}
		PG_CATCH();
		{
			AuthorGateAbort(&gate);
			PG_RE_THROW();
		}
		PG_END_TRY();
		AuthorGateLeave(&gate);
	}

	/* the run */
	{
		Oid			types[14] = {REGCLASSOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID,
			INTERVALOID, TEXTOID, BOOLOID, BOOLOID, BOOLOID, INT4OID, TEXTOID,
		TEXTOID, TEXTOID, OIDOID};
		Datum		vals[14];
		char		nulls[14];

		memset(nulls, ' ', sizeof(nulls));
		vals[0] = ObjectIdGetDatum(target);
		vals[1] = CStringGetTextDatum(QualifiedRelName(target));
		vals[2] = TimestampTzGetDatum(start);
		vals[3] = TimestampTzGetDatum(end);
		vals[4] = IntervalPGetDatum(step);
		vals[5] = note ? CStringGetTextDatum(note) : (Datum) 0;
		nulls[5] = note ? ' ' : 'n';
		vals[6] = BoolGetDatum(probe);
		vals[7] = BoolGetDatum(backwards);
		vals[8] = BoolGetDatum(clear_no_source);
		vals[9] = Int32GetDatum(version);
		vals[10] = CStringGetTextDatum(GetConfigOption("TimeZone", false, false));
		vals[11] = CStringGetTextDatum(GetConfigOption("search_path", false, false));
		vals[12] = CStringGetTextDatum(CurrentUserName());
		vals[13] = ObjectIdGetDatum(GetUserId());
		CatalogExec("INSERT INTO backfill.runs (target, target_name, range_start,"
					" range_end, chunk, note, probe, backwards, clear_no_source,"
					" definition_version, timezone, search_path, created_by,"
					" created_by_oid)"
					" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,"
					" $13::pg_catalog.name, $14) RETURNING run_id",
					14, types, vals, nulls, SPI_OK_INSERT_RETURNING);
		run_id = SpiGetInt64(0, 1, &isnull);
		SPI_freetuptable(SPI_tuptable);
	}

	/* its chunks, set-based: one statement whatever their number */
	{
		Oid			types[4];
		Datum		vals[4];
		char		nulls[4] = {' ', ' ', ' ', ' '};
		Datum	   *starts = palloc(sizeof(Datum) * n);
		Datum	   *ends = palloc(sizeof(Datum) * n);
		int			k;

		for (k = 0; k < n; k++)
		{
			starts[k] = TimestampTzGetDatum(given ? given->starts[k] : bounds[k]);
			ends[k] = TimestampTzGetDatum(given ? given->ends[k] : bounds[k + 1]);
		}
		types[0] = INT8OID;
		types[1] = TIMESTAMPTZARRAYOID;
		types[2] = TIMESTAMPTZARRAYOID;
		types[3] = TIMESTAMPTZOID;
		vals[0] = Int64GetDatum(run_id);
		vals[1] = PointerGetDatum(construct_array(starts, n, TIMESTAMPTZOID,
												  sizeof(TimestampTz), FLOAT8PASSBYVAL,
												  TYPALIGN_DOUBLE));
		vals[2] = PointerGetDatum(construct_array(ends, n, TIMESTAMPTZOID,
												  sizeof(TimestampTz), FLOAT8PASSBYVAL,
												  TYPALIGN_DOUBLE));
		vals[3] = TimestampTzGetDatum(horizon);
		nulls[3] = horizon_null ? 'n' : ' ';
		CatalogExec("INSERT INTO backfill.chunks"
					" (run_id, chunk_no, chunk_start, chunk_end, status, verdict)"
					" SELECT $1, c.n::pg_catalog.int4, c.s, c.e,"
					"  CASE WHEN c.s OPERATOR(pg_catalog.<) $4 THEN 'no_source' ELSE 'pending' END,"
					"  CASE WHEN c.s OPERATOR(pg_catalog.<) $4 THEN 'no_source' END"
					" FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3))"
					" WITH ORDINALITY AS c(s, e, n)",
					4, types, vals, nulls, SPI_OK_INSERT);
	}

	return run_id;
}

/*
 * backfill_plan
 *		plan(target, range_start, range_end, chunk, note, probe, backwards,
 *		clear_no_source, only_chunks, cascade) -> run_id; only_chunks and
 *		cascade are planned by pipeline.c (NULL: nothing to do).
 */
Datum
backfill_plan(PG_FUNCTION_ARGS)
{
	int64		run_id;

	RequireArg(fcinfo, 0, "target", NULL);
	RequireArg(fcinfo, 5, "probe", NULL);
	RequireArg(fcinfo, 6, "backwards", NULL);
	RequireArg(fcinfo, 7, "clear_no_source", NULL);
	RequireArg(fcinfo, 9, "cascade", NULL);

	SpiConnect();

	/* pipeline hook: plans that cover only what needs it, and cascades */
	if (!PG_ARGISNULL(8) || PG_GETARG_BOOL(9))
	{
		bool		planned;

		run_id = PipelinePlan(PG_GETARG_OID(0),
							  PG_ARGISNULL(1) ? 0 : PG_GETARG_TIMESTAMPTZ(1), PG_ARGISNULL(1),
							  PG_ARGISNULL(2) ? 0 : PG_GETARG_TIMESTAMPTZ(2), PG_ARGISNULL(2),
							  PG_ARGISNULL(3) ? NULL : PG_GETARG_INTERVAL_P(3),
							  PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4)),
							  PG_GETARG_BOOL(5), PG_GETARG_BOOL(6), PG_GETARG_BOOL(7),
							  PG_ARGISNULL(8) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(8)),
							  PG_GETARG_BOOL(9), &planned);
		SpiFinish();
		if (!planned)
			PG_RETURN_NULL();
		PG_RETURN_INT64(run_id);
	}

	run_id = PlanRun(PG_GETARG_OID(0),
					 PG_ARGISNULL(1) ? 0 : PG_GETARG_TIMESTAMPTZ(1), PG_ARGISNULL(1),
					 PG_ARGISNULL(2) ? 0 : PG_GETARG_TIMESTAMPTZ(2), PG_ARGISNULL(2),
					 PG_ARGISNULL(3) ? NULL : PG_GETARG_INTERVAL_P(3),
					 PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4)),
					 PG_GETARG_BOOL(5), PG_GETARG_BOOL(6), PG_GETARG_BOOL(7),
					 NULL);
	SpiFinish();
	PG_RETURN_INT64(run_id);
}
