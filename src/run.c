/*-------------------------------------------------------------------------
 *
 * run.c
 *	  The run engine: register and unregister targets, plan runs, execute
 *	  their chunks one transaction at a time, cancel them, and preview a
 *	  replacement without keeping it.
 *
 * A run is a planned backfill of [range_start, range_end) of one target,
 * split into chunks at plan time.  backfill.run is a C procedure with a
 * non-atomic SPI connection: every chunk is executed inside an internal
 * subtransaction of its own transaction, and the chunk's data, status and
 * figures are committed together.  When the chunk fails, the
 * subtransaction is rolled back and the failure (with the error's
 * SQLSTATE, message, detail and hint) is recorded and committed instead.
 *
 * While a call executes a run it holds a session-level lock
 * (BACKFILL_LOCK_CLASS_RUN, run_id; BackfillLockTag, a key no SQL caller
 * can take): a second call on the same run sees
 * the lock and returns at once, and a crash can never leave a run looking
 * busy, because the lock dies with its backend.
 *
 * Each chunk applies the run's recorded TimeZone and search_path, takes
 * the target's locks under backfill.lock_timeout (a timeout defers the
 * chunk instead of failing it), and is bounded by backfill.chunk_timeout.
 *
 * Catalog tables are read and written only through CatalogExec, as the
 * extension owner; user text (sources, measures, ledgers, horizons) runs
 * as the calling user.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parse_coerce.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_register);
PG_FUNCTION_INFO_V1(backfill_unregister);
PG_FUNCTION_INFO_V1(backfill_plan);
PG_FUNCTION_INFO_V1(backfill_run);
PG_FUNCTION_INFO_V1(backfill_backfill);
PG_FUNCTION_INFO_V1(backfill_cancel);
PG_FUNCTION_INFO_V1(backfill_preview);

/*
 * What a run call needs to know about its run and target; loaded once per
 * call into a memory context that survives the per-chunk commits.
 */
typedef struct RunInfo
{
	int64		run_id;
	Oid			target;
	char	   *target_name;
	char	   *status;
	bool		probe;
	bool		backwards;
	bool		clear_no_source;
	int32		definition_version;
	char	   *timezone;
	char	   *search_path;
	char	   *created_by;
	Oid			created_by_oid;
	bool		scheduled;
	char	   *quiet_hours;
	/* whether backfill.targets still has the target */
	bool		registered;
	/* from the run's pinned version in backfill.definitions */
	Oid			author;
	char	   *time_column;
	char	   *measure;
	char	   *ledger;
	Datum		tolerance;
	bool		ledger_gate;
	char	   *strategy;
	char	   *source;
} RunInfo;

/* One chunk picked for execution, copied out of SPI. */
typedef struct ChunkInfo
{
	int32		chunk_no;
	TimestampTz start;
	TimestampTz end;
	bool		no_source;
	int32		deferrals;
} ChunkInfo;

/* How one chunk's execution ended. */
typedef enum ChunkOutcome
{
	CHUNK_DONE,					/* committed */
	CHUNK_DEFERRED,				/* lock timeout: still pending */
	CHUNK_FAILED				/* recorded as failed */
} ChunkOutcome;

/* Where a chunk was when an error interrupted it. */
typedef enum ChunkPhase
{
	PHASE_SETUP,
	PHASE_LOCK,
	PHASE_WORK
} ChunkPhase;

/* chunk_timeout: one user timeout per backend, registered lazily */
static TimeoutId chunk_timeout_id = MAX_TIMEOUTS;
static volatile sig_atomic_t chunk_timed_out = false;

/*
 * TsStr
 *		timestamptz_to_str into palloc'd memory (it returns a static
 *		buffer, so two calls in one message would collide).
 */
static char *
TsStr(TimestampTz t)
{
	return pstrdup(timestamptz_to_str(t));
}

/*
 * NumStr
 *		A numeric Datum as text, "NULL" for a null.
 */
static char *
NumStr(Datum d, bool isnull)
{
	if (isnull)
		return pstrdup("NULL");
	return DatumGetCString(DirectFunctionCall1(numeric_out, d));
}

/*
 * TargetDisplayName
 *		The schema-qualified, quoted name of a relation.
 */
char *
TargetDisplayName(Oid relid)
{
	char	   *rel = get_rel_name(relid);

	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  rel);
}

/*
 * IsAtomicCall
 *		Whether a procedure was called in an atomic context (inside a
 *		transaction block, from a function, or by a procedure that was).
 */
static bool
IsAtomicCall(FunctionCallInfo fcinfo)
{
	if (fcinfo->context == NULL || !IsA(fcinfo->context, CallContext))
		return true;
	return ((CallContext *) fcinfo->context)->atomic;
}

/*
 * RequireTopLevelCall
 *		Refuse a procedure call that could not commit per chunk: it would
 *		either fail at its first commit or, worse, look like it worked.
 */
void
RequireTopLevelCall(FunctionCallInfo fcinfo, const char *name)
{
	if (IsAtomicCall(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
				 errmsg("%s must be called as a top-level CALL", name),
				 errdetail("It commits after every chunk, which is impossible inside a transaction block or a function."),
				 errhint("Call it outside a transaction block, and not from a function.")));
}

/*
 * TakeTargetPlanLock
 *		Transaction-level lock (BACKFILL_LOCK_CLASS_PLAN, relid)
 *		that serializes register, unregister and plan of one target, so two
 *		overlapping plans can never both succeed.
 */
static void
TakeTargetPlanLock(Oid target)
{
	LOCKTAG		tag;

	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_PLAN, (uint32) target);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * IntervalIsPositive
 *		Whether an interval compares greater than zero.
 */
static bool
IntervalIsPositive(Interval *iv)
{
	Interval	zero = {0, 0, 0};

	return DatumGetInt32(DirectFunctionCall2(interval_cmp,
											 IntervalPGetDatum(iv),
											 IntervalPGetDatum(&zero))) > 0;
}

/* ----------------------------------------------------------------
 *		register / unregister
 * ----------------------------------------------------------------
 */

/*
 * backfill_register
 *		register(target, time_column, source, definition, chunk,
 *		source_retention, source_horizon, ledger, measure, tolerance,
 *		ledger_gate) -> current definition version
 *
 * Anyone who may rewrite the target (CheckTargetPrivileges) may register
 * it, and register it again, also while other roles' runs are unfinished:
 * those runs keep their pinned version.  A new definition version, whose
 * author is the caller (by OID), is created when any setting, the source,
 * the label or the author differs from the latest version's (versions
 * continue after an unregister).  Its text runs only as its author
 * (identity.c).
 */
Datum
backfill_register(PG_FUNCTION_ARGS)
{
	Oid			target;
	char	   *time_column;
	char	   *source;
	char	   *label;
	Interval   *chunk;
	Interval   *retention;
	char	   *horizon;
	char	   *ledger;
	char	   *measure;
	Datum		tolerance;
	bool		ledger_gate;
	SourceQuery *sq;
	int32		version = 0;
	bool		new_version;
	char	   *user = CurrentUserName();

	RequireArg(fcinfo, 0, "target", NULL);
	RequireArg(fcinfo, 1, "time_column", NULL);
	RequireArg(fcinfo, 2, "source", NULL);
	RequireArg(fcinfo, 4, "chunk", NULL);
	RequireArg(fcinfo, 8, "measure", NULL);
	RequireArg(fcinfo, 9, "tolerance", NULL);
	RequireArg(fcinfo, 10, "ledger_gate", NULL);

	target = PG_GETARG_OID(0);
	time_column = NameStr(*PG_GETARG_NAME(1));
	source = text_to_cstring(PG_GETARG_TEXT_PP(2));
	label = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	chunk = PG_GETARG_INTERVAL_P(4);
	retention = PG_ARGISNULL(5) ? NULL : PG_GETARG_INTERVAL_P(5);
	horizon = PG_ARGISNULL(6) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(6));
	ledger = PG_ARGISNULL(7) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(7));
	measure = text_to_cstring(PG_GETARG_TEXT_PP(8));
	tolerance = PG_GETARG_DATUM(9);
	ledger_gate = PG_GETARG_BOOL(10);

	CheckTargetPrivileges(target);
	(void) TimeColumnType(target, time_column);

	if (!IntervalIsPositive(chunk))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chunk interval must be positive")));
	if (retention != NULL && !IntervalIsPositive(retention))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("source_retention must be positive"),
				 errhint("Give how far back the source still holds data, for example '90 days'.")));
	if (retention != NULL && horizon != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("source_retention and source_horizon cannot both be given"),
				 errhint("Give a fixed interval (source_retention) or a query for the earliest complete time (source_horizon).")));
	if (DatumGetBool(DirectFunctionCall2(numeric_lt, tolerance,
										 DirectFunctionCall1(int4_numeric,
															 Int32GetDatum(0)))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tolerance must not be negative"),
				 errhint("The tolerance is the allowed relative difference from the ledger, for example 0.01 for 1%%.")));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	sq = ValidateSourceQuery(source, target, time_column);
	measure = ValidateMeasure(measure, target);
	if (ledger != NULL)
		ledger = ValidateLedger(ledger);
	if (horizon != NULL)
		horizon = ValidateHorizon(horizon);

	TakeTargetPlanLock(target);

	/*
	 * The version these settings and this author make: the latest one
	 * when every setting, the source, the label and the author are the
	 * same, else a new one (versions continue after an unregister).  The
	 * strategy is kept from the current registration (set_strategy).
	 */
	{
		Oid			types[12] = {REGCLASSOID, TEXTOID, TEXTOID, OIDOID, TEXTOID,
			INTERVALOID, INTERVALOID, TEXTOID, TEXTOID, TEXTOID, NUMERICOID,
		BOOLOID};
		Datum		vals[12];
		char		nulls[12];
		bool		isnull;

		memset(nulls, ' ', sizeof(nulls));
		vals[0] = ObjectIdGetDatum(target);
		vals[1] = CStringGetTextDatum(sq->sql);
		vals[2] = label ? CStringGetTextDatum(label) : (Datum) 0;
		nulls[2] = label ? ' ' : 'n';
		vals[3] = ObjectIdGetDatum(GetUserId());
		vals[4] = CStringGetTextDatum(time_column);
		vals[5] = IntervalPGetDatum(chunk);
		vals[6] = retention ? IntervalPGetDatum(retention) : (Datum) 0;
		nulls[6] = retention ? ' ' : 'n';
		vals[7] = horizon ? CStringGetTextDatum(horizon) : (Datum) 0;
		nulls[7] = horizon ? ' ' : 'n';
		vals[8] = ledger ? CStringGetTextDatum(ledger) : (Datum) 0;
		nulls[8] = ledger ? ' ' : 'n';
		vals[9] = CStringGetTextDatum(measure);
		vals[10] = tolerance;
		vals[11] = BoolGetDatum(ledger_gate);
		CatalogExec("SELECT d.version,"
					" (d.source, d.label, d.author, d.time_column::pg_catalog.text,"
					"  d.chunk, d.source_retention, d.source_horizon, d.ledger,"
					"  d.measure, d.tolerance, d.ledger_gate)"
					"  IS NOT DISTINCT FROM ($2, $3, $4, $5, $6, $7, $8, $9, $10,"
					"  $11, $12),"
					" d.strategy IS NOT DISTINCT FROM"
					"  coalesce(t.strategy, d.strategy)"
					" FROM backfill.definitions d"
					" LEFT JOIN backfill.targets t"
					"  ON t.target OPERATOR(pg_catalog.=) d.target"
					" WHERE d.target OPERATOR(pg_catalog.=) $1"
					" ORDER BY d.version DESC LIMIT 1",
					12, types, vals, nulls, SPI_OK_SELECT);
		if (SPI_processed == 0)
			new_version = true;
		else
		{
			version = SpiGetInt32(0, 1, &isnull);
			new_version = !SpiGetBool(0, 2, &isnull) || !SpiGetBool(0, 3, &isnull);
		}
		SPI_freetuptable(SPI_tuptable);

		if (new_version)
		{
			Oid			itypes[13];
			Datum		ivals[13];
			char		inulls[13];

			version++;
			memcpy(itypes, types, sizeof(types));
			memcpy(ivals, vals, sizeof(vals));
			memcpy(inulls, nulls, sizeof(nulls));
			itypes[12] = INT4OID;
			ivals[12] = Int32GetDatum(version);
			inulls[12] = ' ';
			CatalogExec("INSERT INTO backfill.definitions"
						" (target, version, label, source, source_hash, created_by,"
						"  author, time_column, chunk, source_retention,"
						"  source_horizon, ledger, measure, tolerance, ledger_gate,"
						"  strategy)"
						" SELECT $1, $13, $3, $2,"
						" pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to($2, 'UTF8')), 'hex'),"
						" (SELECT rolname FROM pg_catalog.pg_roles"
						"  WHERE oid OPERATOR(pg_catalog.=) $4),"
						" $4, $5::pg_catalog.name, $6, $7, $8, $9, $10, $11, $12,"
						" coalesce((SELECT strategy FROM backfill.targets"
						"  WHERE target OPERATOR(pg_catalog.=) $1), 'auto')",
						13, itypes, ivals, inulls, SPI_OK_INSERT);
		}
	}

	{
		Oid			types[12] = {REGCLASSOID, TEXTOID, TEXTOID, INTERVALOID,
			INTERVALOID, TEXTOID, TEXTOID, TEXTOID, NUMERICOID, BOOLOID, INT4OID,
		TEXTOID};
		Datum		values[12];
		char		nulls[12];

		memset(nulls, ' ', sizeof(nulls));
		values[0] = ObjectIdGetDatum(target);
		values[1] = CStringGetTextDatum(TargetDisplayName(target));
		values[2] = CStringGetTextDatum(time_column);
		values[3] = IntervalPGetDatum(chunk);
		values[4] = retention ? IntervalPGetDatum(retention) : (Datum) 0;
		nulls[4] = retention ? ' ' : 'n';
		values[5] = horizon ? CStringGetTextDatum(horizon) : (Datum) 0;
		nulls[5] = horizon ? ' ' : 'n';
		values[6] = ledger ? CStringGetTextDatum(ledger) : (Datum) 0;
		nulls[6] = ledger ? ' ' : 'n';
		values[7] = CStringGetTextDatum(measure);
		values[8] = tolerance;
		values[9] = BoolGetDatum(ledger_gate);
		values[10] = Int32GetDatum(version);
		values[11] = CStringGetTextDatum(user);
		/* a read-only copy of the current version (the engine never reads it) */
		CatalogExec("INSERT INTO backfill.targets AS t"
					" (target, target_name, time_column, chunk, source_retention,"
					"  source_horizon, ledger, measure, tolerance, ledger_gate,"
					"  current_version, registered_by, strategy)"
					" SELECT $1, $2, $3::pg_catalog.name, $4, $5, $6, $7, $8, $9, $10,"
					"  $11, $12::pg_catalog.name, d.strategy"
					" FROM backfill.definitions d"
					" WHERE d.target OPERATOR(pg_catalog.=) $1"
					" AND d.version OPERATOR(pg_catalog.=) $11"
					" ON CONFLICT (target) DO UPDATE SET"
					"  target_name = excluded.target_name,"
					"  time_column = excluded.time_column,"
					"  chunk = excluded.chunk,"
					"  source_retention = excluded.source_retention,"
					"  source_horizon = excluded.source_horizon,"
					"  ledger = excluded.ledger,"
					"  measure = excluded.measure,"
					"  tolerance = excluded.tolerance,"
					"  ledger_gate = excluded.ledger_gate,"
					"  strategy = excluded.strategy,"
					"  current_version = excluded.current_version,"
					"  registered_at = pg_catalog.now(),"
					"  registered_by = excluded.registered_by",
					12, types, values, nulls, SPI_OK_INSERT);
	}

	SPI_finish();
	PG_RETURN_INT32(version);
}

/*
 * backfill_unregister
 *		unregister(target, cascade): forget a target.  Refused (55006) while
 *		it has runs that are planned, probed or failed, and (2BP01) while
 *		targets depend on it unless cascade (pipeline.c); definitions, runs and
 *		chunks stay as history.  The caller must be allowed to rewrite the
 *		table; when the table has been dropped, its registration can be
 *		removed (by OID, e.g. unregister(16384)) by the role that
 *		registered it, a role with its privileges, or a superuser.
 */
Datum
backfill_unregister(PG_FUNCTION_ARGS)
{
	Oid			target;
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	char	   *unfinished;
	char	   *name;
	char	   *registrant;
	bool		dropped;

	RequireArg(fcinfo, 0, "target", NULL);
	target = PG_GETARG_OID(0);
	values[0] = ObjectIdGetDatum(target);
	dropped = (get_rel_name(target) == NULL);

	if (!dropped)
		CheckTargetPrivileges(target);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	TakeTargetPlanLock(target);

	CatalogExec("SELECT target_name, registered_by::pg_catalog.text"
				" FROM backfill.targets WHERE target OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		if (dropped)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("relation with OID %u does not exist", target)));
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table %s is not registered for backfill",
						TargetDisplayName(target)),
				 errhint("Registered tables are listed in backfill.targets.")));
	}
	name = SpiGetText(0, 1);
	registrant = SpiGetText(0, 2);
	SPI_freetuptable(SPI_tuptable);

	if (dropped)
	{
		Oid			role = get_role_oid(registrant, true);

		if (!(OidIsValid(role) ? has_privs_of_role(GetUserId(), role) :
			  superuser()))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to unregister dropped table %s", name),
					 errdetail("Only the role that registered it (\"%s\"), a role with its privileges, or a superuser may.",
							   registrant)));
	}

	CatalogExec("SELECT pg_catalog.string_agg(run_id::pg_catalog.text, ', ' ORDER BY run_id)"
				" FROM backfill.runs WHERE target OPERATOR(pg_catalog.=) $1"
				" AND status OPERATOR(pg_catalog.=) ANY ('{planned,probed,failed}'::pg_catalog.text[])",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	unfinished = SpiGetText(0, 1);
	if (unfinished != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("table %s has unfinished backfill runs", name),
				 errdetail("Unfinished runs: %s.", unfinished),
				 errhint("Finish them with CALL backfill.run(run_id) or cancel them with backfill.cancel(run_id).")));

	/* pipeline hook: its dependencies (refused with dependents) */
	PipelineForgetTarget(target, name,
						 PG_NARGS() > 1 && !PG_ARGISNULL(1) && PG_GETARG_BOOL(1));

	CatalogExec("DELETE FROM backfill.targets WHERE target OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_DELETE);
	SPI_finish();
	PG_RETURN_VOID();
}

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
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	Interval   *step;
	Interval   *retention = NULL;
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
	TakeTargetPlanLock(target);

	values[0] = ObjectIdGetDatum(target);
	CatalogExec("SELECT d.chunk, d.source_retention, d.source_horizon, d.version,"
				" d.author"
				" FROM backfill.targets t JOIN backfill.definitions d"
				"  ON d.target OPERATOR(pg_catalog.=) t.target"
				"  AND d.version OPERATOR(pg_catalog.=) t.current_version"
				" WHERE t.target OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table %s is not registered for backfill",
						TargetDisplayName(target)),
				 errhint("Call backfill.register first, with its time column and source query.")));
	step = DatumGetIntervalP(SpiGetDatumCopy(0, 1, &isnull));
	{
		Datum		r = SpiGetDatumCopy(0, 2, &isnull);

		if (!isnull)
			retention = DatumGetIntervalP(r);
	}
	horizon_sql = SpiGetText(0, 3);
	version = SpiGetInt32(0, 4, &isnull);
	author = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
											SPI_tuptable->tupdesc, 5, &isnull));
	SPI_freetuptable(SPI_tuptable);

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
							   (long long) other, TsStr(os), TsStr(oe)),
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
		vals[1] = CStringGetTextDatum(TargetDisplayName(target));
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

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

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
		SPI_finish();
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
	SPI_finish();
	PG_RETURN_INT64(run_id);
}

/* ----------------------------------------------------------------
 *		run: loading, identity, locks, timeouts
 * ----------------------------------------------------------------
 */

/*
 * LoadRun
 *		Read a run and everything of its pinned definition version (text,
 *		settings, author) into the current memory context; whether the
 *		target is still registered.  Unknown or invisible run
 *		(CheckRunVisible): 42704.  Caller is connected to SPI.
 */
static RunInfo *
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
				" r.created_by_oid, d.author"
				" FROM backfill.runs r"
				" LEFT JOIN backfill.targets t"
				"  ON t.target OPERATOR(pg_catalog.=) r.target"
				" LEFT JOIN backfill.definitions d"
				"  ON d.target OPERATOR(pg_catalog.=) r.target"
				"  AND d.version OPERATOR(pg_catalog.=) r.definition_version"
				" WHERE r.run_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("run %lld does not exist", (long long) run_id),
				 errhint("Runs are listed in backfill.runs.")));

	run = palloc0(sizeof(RunInfo));
	run->run_id = run_id;
	run->target = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
												 SPI_tuptable->tupdesc, 1,
												 &isnull));
	run->target_name = SpiGetText(0, 2);
	run->status = SpiGetText(0, 3);
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
	run->strategy = SpiGetText(0, 19);
	run->source = SpiGetText(0, 20);
	run->created_by_oid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
														 SPI_tuptable->tupdesc,
														 21, &isnull));
	run->author = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
												 SPI_tuptable->tupdesc, 22,
												 &isnull));
	SPI_freetuptable(SPI_tuptable);
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
static void
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
 * RunHolderPid
 *		The backend holding the session lock of a run, 0 if none is found.
 *		Caller is connected to SPI.
 */
static int
RunHolderPid(int64 run_id)
{
	Oid			argtypes[4] = {OIDOID, OIDOID, OIDOID, INT2OID};
	Datum		values[4];
	bool		isnull;
	int			pid = 0;

	values[0] = ObjectIdGetDatum(MyDatabaseId);
	values[1] = ObjectIdGetDatum((Oid) BACKFILL_LOCK_CLASS_RUN);
	values[2] = ObjectIdGetDatum((Oid) (uint32) run_id);
	values[3] = Int16GetDatum((int16) BACKFILL_LOCK_SUBID);
	SpiExec("SELECT pid FROM pg_catalog.pg_locks"
			" WHERE locktype OPERATOR(pg_catalog.=) 'advisory'"
			" AND database OPERATOR(pg_catalog.=) $1"
			" AND classid OPERATOR(pg_catalog.=) $2"
			" AND objid OPERATOR(pg_catalog.=) $3"
			" AND objsubid OPERATOR(pg_catalog.=) $4 AND granted"
			" AND pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid()",
			4, argtypes, values, NULL, true, 1, SPI_OK_SELECT);
	if (SPI_processed > 0)
		pid = SpiGetInt32(0, 1, &isnull);
	SPI_freetuptable(SPI_tuptable);
	return pid;
}

/*
 * ChunkLockTarget
 *		Take the locks a chunk holds on its target until it commits: the
 *		transaction-level lock (TARGET, relid) in ExclusiveLock
 *		(backfill.lock_target takes it in ShareLock, so the daily job and a
 *		chunk exclude each other), then SHARE ROW EXCLUSIVE on the table,
 *		or, for a partitioned table, on the leaves that can hold rows of
 *		[lo, hi) (the parents in ROW EXCLUSIVE), so writers to the chunk's
 *		rows wait while readers, and writers to other partitions, do not;
 *		the leaves are locked in ACCESS EXCLUSIVE right away when the chunk
 *		will truncate or swap them ("strategy", see partition.c).
 *		Both waits are bounded by lock_timeout, which the caller has set.
 *		Privileges were checked by the caller (CheckTargetPrivileges).
 */
static void
ChunkLockTarget(Oid target, const char *time_column,
				TimestampTz lo, TimestampTz hi, const char *strategy)
{
	LOCKTAG		tag;

	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_TARGET, (uint32) target);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	LockAffectedPartitions(target, time_column, lo, hi, strategy,
						   ShareRowExclusiveLock);
}

/*
 * ChunkTimeoutHandler
 *		Timeout handler of backfill.chunk_timeout: note that the chunk
 *		timed out and ask for a query cancel, which the chunk's next
 *		interrupt check turns into an error.
 */
static void
ChunkTimeoutHandler(void)
{
	chunk_timed_out = true;
	InterruptPending = true;
	QueryCancelPending = true;
	SetLatch(MyLatch);
}

/*
 * ArmChunkTimeout / DisarmChunkTimeout
 *		Start and stop the per-chunk timer (statement_timeout would cover
 *		the whole CALL, across its commits).  The timeout is registered once
 *		per backend, on first use.
 */
static void
ArmChunkTimeout(void)
{
	chunk_timed_out = false;
	if (backfill_chunk_timeout <= 0)
		return;
	if (chunk_timeout_id == MAX_TIMEOUTS)
		chunk_timeout_id = RegisterTimeout(USER_TIMEOUT, ChunkTimeoutHandler);
	enable_timeout_after(chunk_timeout_id, backfill_chunk_timeout);
}

static void
DisarmChunkTimeout(void)
{
	if (chunk_timeout_id != MAX_TIMEOUTS)
		disable_timeout(chunk_timeout_id, false);
}

/*
 * SetChunkOption
 *		Set a setting for the rest of the chunk (popped at its end).
 */
static void
SetChunkOption(const char *name, const char *value)
{
	(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

/* ----------------------------------------------------------------
 *		run: one chunk
 * ----------------------------------------------------------------
 */

/* What one chunk did, for its NOTICE and for the run loop. */
typedef struct ChunkReport
{
	ChunkOutcome outcome;
	int64		rows_deleted;
	int64		rows_inserted;
	bool		ledger_checked;
	bool		ledger_ok;
	char	   *run_status;		/* run status after the chunk, if changed */
	double		elapsed_ms;
	ErrorData  *error;			/* for DEFERRED and FAILED */
	int32		deferrals;
} ChunkReport;

/*
 * Predicates of the chunks still to execute; spelled exactly as the
 * partial indexes chunks_todo_idx and chunks_no_source_todo_idx (20_runs.sql)
 * so that the planner can prove them and never rescan the done chunks.
 */
#define TODO_PENDING \
	"status OPERATOR(pg_catalog.=) ANY ('{pending,failed}'::pg_catalog.text[])"
#define TODO_NO_SOURCE \
	"status OPERATOR(pg_catalog.=) 'no_source' AND finished_at IS NULL"

/*
 * RemainingChunks
 *		Whether the run has chunks still to execute: pending or failed
 *		ones, and with clear_no_source the no_source ones not cleared yet.
 *		Caller is connected to SPI.
 */
static bool
RemainingChunks(RunInfo *run)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	bool		found;

	values[0] = Int64GetDatum(run->run_id);
	CatalogExec("SELECT 1 FROM backfill.chunks"
				" WHERE run_id OPERATOR(pg_catalog.=) $1 AND " TODO_PENDING
				" LIMIT 1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	found = SPI_processed > 0;
	SPI_freetuptable(SPI_tuptable);
	if (!found && run->clear_no_source)
	{
		CatalogExec("SELECT 1 FROM backfill.chunks"
					" WHERE run_id OPERATOR(pg_catalog.=) $1 AND " TODO_NO_SOURCE
					" LIMIT 1",
					1, argtypes, values, NULL, SPI_OK_SELECT);
		found = SPI_processed > 0;
		SPI_freetuptable(SPI_tuptable);
	}
	return found;
}

/*
 * SetRunStatus
 *		Set the run's status (finished_at with done) unless it has been
 *		cancelled meanwhile; remove its pg_cron job when it is finished.
 *		Returns the status the run has now: status, or "cancelled" when a
 *		cancel came first.
 */
static const char *
SetRunStatus(RunInfo *run, const char *status)
{
	Oid			argtypes[2] = {INT8OID, TEXTOID};
	Datum		values[2];
	bool		updated;

	values[0] = Int64GetDatum(run->run_id);
	values[1] = CStringGetTextDatum(status);
	CatalogExec("UPDATE backfill.runs SET status = $2,"
				" finished_at = CASE WHEN $2 OPERATOR(pg_catalog.=) 'done'"
				"  THEN pg_catalog.clock_timestamp() END"
				" WHERE run_id OPERATOR(pg_catalog.=) $1"
				" AND status OPERATOR(pg_catalog.<>) 'cancelled'",
				2, argtypes, values, NULL, SPI_OK_UPDATE);
	updated = SPI_processed > 0;
	if (!updated)
		return "cancelled";
	/* a job may have been added since the run was loaded: always look */
	if (strcmp(status, "done") == 0 || strcmp(status, "failed") == 0)
		(void) ScheduleRemoveJob(run->run_id);
	return status;
}

/*
 * ExecuteChunk
 *		Execute one chunk in an internal subtransaction of the current
 *		transaction and record its outcome (done, deferred or failed) in the
 *		same transaction; the caller commits.  A query cancel that is not
 *		our chunk_timeout is re-thrown after the rollback (the chunk stays
 *		pending).  run_status is the run's status read in this transaction
 *		(the run row is updated only when it changes).  Caller is connected
 *		to SPI; the current memory context must survive the transaction end
 *		(the report is allocated there).
 */
static void
ExecuteChunk(RunInfo *run, ChunkInfo *chunk, bool probe_pending,
			 const char *run_status, const char *via, const char *user,
			 ChunkReport *report)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile ChunkPhase phase = PHASE_SETUP;
	volatile bool gate_failed = false;
	volatile bool have_ledger = false;
	volatile Datum ledger_value = (Datum) 0;
	TimestampTz started = GetCurrentTimestamp();
	long		secs;
	int			usecs;

	memset(report, 0, sizeof(ChunkReport));

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);

	PG_TRY();
	{
		int			nest = NewGUCNestLevel();
		char	   *user_lock_timeout;
		char		buf[32];
		ReplaceResult rr;
		bool		ledger_null = true;
		bool		ledger_ok = false;
		Datum		measure_value = (Datum) 0;
		const char *verdict = NULL;
		const char *status;
		bool		remaining;
		bool		after_probe;

		AuthorGate gate;

		/*
		 * Deferred constraints of the target are checked at the end of each
		 * statement of the chunk, not at the commit where a violation could
		 * no longer be recorded as the chunk's failure (and a deferred
		 * trigger cannot be queued in the security-restricted operation
		 * below).
		 */
		SpiExec("SET CONSTRAINTS ALL IMMEDIATE", 0, NULL, NULL, NULL,
				false, 0, SPI_OK_UTILITY);

		/*
		 * The whole chunk runs as the author of the run's definition, with
		 * the run's settings (popped at its end); the author's rights on
		 * the table are the ones that count.  An error rolls the
		 * subtransaction back, which restores the caller's user id.
		 */
		AuthorGateEnter(&gate, run->author, run->target,
						run->definition_version, run->search_path,
						run->timezone);

		/* the locks, waiting at most backfill.lock_timeout */
		user_lock_timeout = pstrdup(GetConfigOption("lock_timeout", false, false));
		snprintf(buf, sizeof(buf), "%d", backfill_lock_timeout);
		SetChunkOption("lock_timeout", buf);
		phase = PHASE_LOCK;
		if (get_rel_name(run->target) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("the table of run %lld no longer exists",
							(long long) run->run_id),
					 errdetail("The run was planned for table %s.", run->target_name)));
		CheckTargetPrivileges(run->target);
		ChunkLockTarget(run->target, run->time_column, chunk->start,
						chunk->end, chunk->no_source ? "delete" : run->strategy);
		phase = PHASE_WORK;
		SetChunkOption("lock_timeout", user_lock_timeout);

		ArmChunkTimeout();

		memset(&rr, 0, sizeof(rr));
		rr.before_null = rr.after_null = true;
		if (chunk->no_source)
		{
			rr.rows_deleted = ClearRange(run->target, run->time_column,
										 chunk->start, chunk->end);
			rr.strategy = "delete";
			verdict = "no_source";
		}
		else
		{
			ReplaceRange(run->target, run->time_column, chunk->start,
						 chunk->end, run->source, run->strategy, run->measure,
						 &rr);
			if (run->ledger != NULL)
			{
				Datum		lv;
				bool		measure_null = !rr.have_values || rr.after_null;

				lv = LedgerValue(run->ledger, chunk->start, chunk->end,
								 &ledger_null);
				ledger_value = ledger_null ? (Datum) 0 : lv;
				have_ledger = !ledger_null;
				/* a NULL figure (an aggregate over no rows) counts as 0 */
				measure_value = measure_null ?
					DirectFunctionCall1(int4_numeric, Int32GetDatum(0)) :
					rr.after_value;
				ledger_ok = LedgerCompare(rr.after_value, measure_null,
										  lv, ledger_null, run->tolerance);
				verdict = ledger_ok ? "ok" : "ledger_mismatch";
				if (!ledger_ok && run->ledger_gate)
				{
					gate_failed = true;
					ereport(ERROR,
							(errcode(ERRCODE_CHECK_VIOLATION),
							 errmsg("chunk [%s, %s) disagrees with the ledger: measure %s = %s, ledger %s",
									TsStr(chunk->start), TsStr(chunk->end),
									run->measure, NumStr(measure_value, false),
									NumStr(lv, ledger_null)),
							 errdetail("The ledger query is: %s", run->ledger),
							 errhint("The allowed relative difference (tolerance) is %s; the chunk was rolled back.",
									 NumStr(run->tolerance, false))));
				}
			}
		}

		/* the user text is done: back to the caller */
		AuthorGateLeave(&gate);

		/* the chunk's figures, in the same transaction as its data */
		{
			Oid			types[14] = {INT8OID, INT4OID, TEXTOID, TEXTOID, INT8OID,
				INT8OID, NUMERICOID, NUMERICOID, NUMERICOID, BOOLOID, TEXTOID,
			TIMESTAMPTZOID, TEXTOID, TEXTOID};
			Datum		vals[14];
			char		nulls[14];

			memset(nulls, ' ', sizeof(nulls));
			vals[0] = Int64GetDatum(run->run_id);
			vals[1] = Int32GetDatum(chunk->chunk_no);
			vals[2] = CStringGetTextDatum(chunk->no_source ? "no_source" : "done");
			vals[3] = CStringGetTextDatum(rr.strategy ? rr.strategy : run->strategy);
			vals[4] = Int64GetDatum(rr.rows_deleted);
			vals[5] = Int64GetDatum(rr.rows_inserted);
			vals[6] = rr.before_value;
			nulls[6] = (rr.have_values && !rr.before_null) ? ' ' : 'n';
			vals[7] = rr.after_value;
			nulls[7] = (rr.have_values && !rr.after_null) ? ' ' : 'n';
			vals[8] = ledger_value;
			nulls[8] = have_ledger ? ' ' : 'n';
			vals[9] = BoolGetDatum(ledger_ok);
			nulls[9] = (run->ledger != NULL && !chunk->no_source) ? ' ' : 'n';
			vals[10] = verdict ? CStringGetTextDatum(verdict) : (Datum) 0;
			nulls[10] = verdict ? ' ' : 'n';
			vals[11] = TimestampTzGetDatum(started);
			vals[12] = CStringGetTextDatum(user);
			vals[13] = CStringGetTextDatum(via);
			CatalogExec("UPDATE backfill.chunks SET status = $3,"
						" attempts = attempts OPERATOR(pg_catalog.+) 1, deferrals = 0,"
						" strategy = $4, rows_deleted = $5, rows_inserted = $6,"
						" before_value = $7, after_value = $8, ledger_value = $9,"
						" ledger_ok = $10, verdict = $11, started_at = $12,"
						" finished_at = pg_catalog.clock_timestamp(),"
						" executed_by = $13::pg_catalog.name, executed_via = $14,"
						" error_sqlstate = NULL, error_message = NULL,"
						" error_detail = NULL, error_hint = NULL"
						" WHERE run_id OPERATOR(pg_catalog.=) $1"
						" AND chunk_no OPERATOR(pg_catalog.=) $2",
						14, types, vals, nulls, SPI_OK_UPDATE);
		}

		/* and the run's status */
		remaining = RemainingChunks(run);
		after_probe = !probe_pending || !chunk->no_source;
		if (!remaining)
			status = "done";
		else if (run->probe && after_probe)
			status = "probed";
		else
			status = "planned";
		if (strcmp(status, run_status) != 0)
			status = SetRunStatus(run, status);

		report->outcome = CHUNK_DONE;
		report->rows_deleted = rr.rows_deleted;
		report->rows_inserted = rr.rows_inserted;
		report->ledger_checked = (run->ledger != NULL && !chunk->no_source);
		report->ledger_ok = ledger_ok;
		report->run_status = MemoryContextStrdup(cxt, status);

		DisarmChunkTimeout();
		if (chunk_timed_out)
		{
			/* the timer fired after the last interrupt check: too late */
			QueryCancelPending = false;
		}

		/*
		 * Pop the chunk's settings as on abort: a plain SET done by the
		 * source (set_config(..., false)) must not outlive the chunk either.
		 */
		AtEOXact_GUC(false, nest);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		bool		timed_out = chunk_timed_out;
		bool		deferral;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		DisarmChunkTimeout();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;

		/* a cancel by the user stops the call; the chunk stays pending */
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED && !timed_out)
			ReThrowError(edata);

		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED && timed_out)
		{
			edata->message = psprintf("chunk exceeded backfill.chunk_timeout (%d ms)",
									  backfill_chunk_timeout);
			edata->detail = NULL;
			edata->hint = pstrdup("Raise backfill.chunk_timeout, or plan the range with a smaller chunk interval.");
		}

		deferral = (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE &&
					phase == PHASE_LOCK);
		report->error = edata;
		report->deferrals = chunk->deferrals + (deferral ? 1 : 0);
		if (deferral && report->deferrals >= backfill_max_attempts)
		{
			edata->detail = psprintf("The chunk waited backfill.lock_timeout (%d ms) for the table's locks %d times in a row (backfill.max_attempts).",
									 backfill_lock_timeout, report->deferrals);
			edata->hint = pstrdup("Find the transaction that holds the table (pg_locks), or raise backfill.lock_timeout.");
		}

		if (deferral && report->deferrals < backfill_max_attempts)
		{
			Oid			types[6] = {INT8OID, INT4OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
			Datum		vals[6];
			char		nulls[6];

			memset(nulls, ' ', sizeof(nulls));
			vals[0] = Int64GetDatum(run->run_id);
			vals[1] = Int32GetDatum(chunk->chunk_no);
			vals[2] = CStringGetTextDatum(unpack_sql_state(edata->sqlerrcode));
			vals[3] = CStringGetTextDatum(edata->message ? edata->message : "");
			vals[4] = edata->detail ? CStringGetTextDatum(edata->detail) : (Datum) 0;
			nulls[4] = edata->detail ? ' ' : 'n';
			vals[5] = edata->hint ? CStringGetTextDatum(edata->hint) : (Datum) 0;
			nulls[5] = edata->hint ? ' ' : 'n';
			CatalogExec("UPDATE backfill.chunks SET"
						" attempts = attempts OPERATOR(pg_catalog.+) 1,"
						" deferrals = deferrals OPERATOR(pg_catalog.+) 1,"
						" error_sqlstate = $3, error_message = $4,"
						" error_detail = $5, error_hint = $6"
						" WHERE run_id OPERATOR(pg_catalog.=) $1"
						" AND chunk_no OPERATOR(pg_catalog.=) $2",
						6, types, vals, nulls, SPI_OK_UPDATE);
			report->outcome = CHUNK_DEFERRED;
		}
		else
		{
			Oid			types[13] = {INT8OID, INT4OID, TEXTOID, INT4OID, NUMERICOID,
				TEXTOID, TIMESTAMPTZOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
			TEXTOID, TEXTOID};
			Datum		vals[13];
			char		nulls[13];
			const char *verdict = chunk->no_source ? "no_source" :
			(gate_failed ? "ledger_mismatch" : NULL);

			memset(nulls, ' ', sizeof(nulls));
			vals[0] = Int64GetDatum(run->run_id);
			vals[1] = Int32GetDatum(chunk->chunk_no);
			vals[2] = CStringGetTextDatum(chunk->no_source ? "no_source" : "failed");
			vals[3] = Int32GetDatum(report->deferrals);
			vals[4] = ledger_value;
			nulls[4] = (gate_failed && have_ledger) ? ' ' : 'n';
			vals[5] = verdict ? CStringGetTextDatum(verdict) : (Datum) 0;
			nulls[5] = verdict ? ' ' : 'n';
			vals[6] = TimestampTzGetDatum(started);
			vals[7] = CStringGetTextDatum(user);
			vals[8] = CStringGetTextDatum(via);
			vals[9] = CStringGetTextDatum(unpack_sql_state(edata->sqlerrcode));
			vals[10] = CStringGetTextDatum(edata->message ? edata->message : "");
			vals[11] = edata->detail ? CStringGetTextDatum(edata->detail) : (Datum) 0;
			nulls[11] = edata->detail ? ' ' : 'n';
			vals[12] = edata->hint ? CStringGetTextDatum(edata->hint) : (Datum) 0;
			nulls[12] = edata->hint ? ' ' : 'n';
			CatalogExec("UPDATE backfill.chunks SET status = $3,"
						" attempts = attempts OPERATOR(pg_catalog.+) 1, deferrals = $4,"
						" rows_deleted = NULL, rows_inserted = NULL,"
						" before_value = NULL, after_value = NULL,"
						" ledger_value = $5,"
						" ledger_ok = CASE WHEN $6 OPERATOR(pg_catalog.=) 'ledger_mismatch' THEN false END,"
						" verdict = $6, started_at = $7,"
						" finished_at = CASE WHEN $3 OPERATOR(pg_catalog.=) 'failed'"
						"  THEN pg_catalog.clock_timestamp() END,"
						" executed_by = $8::pg_catalog.name, executed_via = $9,"
						" error_sqlstate = $10, error_message = $11,"
						" error_detail = $12, error_hint = $13"
						" WHERE run_id OPERATOR(pg_catalog.=) $1"
						" AND chunk_no OPERATOR(pg_catalog.=) $2",
						13, types, vals, nulls, SPI_OK_UPDATE);
			SetRunStatus(run, "failed");
			report->outcome = CHUNK_FAILED;
			report->run_status = MemoryContextStrdup(cxt, "failed");
		}
	}
	PG_END_TRY();

	TimestampDifference(started, GetCurrentTimestamp(), &secs, &usecs);
	report->elapsed_ms = secs * 1000.0 + usecs / 1000.0;
}

/*
 * FirstTodo
 *		The first (last, for a backwards run) chunk_no matching one of the
 *		"still to do" predicates, or 0.  Caller is connected to SPI.
 */
static int32
FirstTodo(RunInfo *run, const char *predicate)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	bool		isnull;
	int32		chunk_no = 0;

	values[0] = Int64GetDatum(run->run_id);
	CatalogExec(psprintf("SELECT chunk_no FROM backfill.chunks"
						 " WHERE run_id OPERATOR(pg_catalog.=) $1 AND %s"
						 " ORDER BY chunk_no %s LIMIT 1",
						 predicate, run->backwards ? "DESC" : "ASC"),
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
		chunk_no = SpiGetInt32(0, 1, &isnull);
	SPI_freetuptable(SPI_tuptable);
	return chunk_no;
}

/*
 * NextChunk
 *		Pick the next chunk to execute (in chunk_no order, descending for a
 *		backwards run) and lock its row until the chunk's transaction ends,
 *		so that a concurrent cancel skips it.  Also returns the run's
 *		current status.  Returns false when no chunk is left, or when the
 *		chosen one changed under us (the caller looks again).  Caller is
 *		connected to SPI.
 */
static bool
NextChunk(RunInfo *run, ChunkInfo *chunk, char **run_status)
{
	Oid			argtypes[2] = {INT8OID, INT4OID};
	Datum		values[2];
	bool		isnull;
	bool		found;
	int32		pending;
	int32		no_source = 0;
	int32		next;

	values[0] = Int64GetDatum(run->run_id);

	CatalogExec("SELECT status FROM backfill.runs"
				" WHERE run_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	*run_status = SPI_processed > 0 ? SpiGetText(0, 1) : pstrdup("cancelled");
	SPI_freetuptable(SPI_tuptable);

	pending = FirstTodo(run, TODO_PENDING);
	if (run->clear_no_source)
		no_source = FirstTodo(run, TODO_NO_SOURCE);
	if (pending == 0 || no_source == 0)
		next = pending + no_source;
	else if (run->backwards)
		next = Max(pending, no_source);
	else
		next = Min(pending, no_source);
	if (next == 0)
		return false;

	values[1] = Int32GetDatum(next);
	CatalogExec("SELECT chunk_no, chunk_start, chunk_end,"
				" status OPERATOR(pg_catalog.=) 'no_source', deferrals"
				" FROM backfill.chunks WHERE run_id OPERATOR(pg_catalog.=) $1"
				" AND chunk_no OPERATOR(pg_catalog.=) $2"
				" AND (" TODO_PENDING " OR " TODO_NO_SOURCE ")"
				" FOR UPDATE",
				2, argtypes, values, NULL, SPI_OK_SELECT);
	found = SPI_processed > 0;
	if (found)
	{
		chunk->chunk_no = SpiGetInt32(0, 1, &isnull);
		chunk->start = DatumGetTimestampTz(SpiGetDatumCopy(0, 2, &isnull));
		chunk->end = DatumGetTimestampTz(SpiGetDatumCopy(0, 3, &isnull));
		chunk->no_source = SpiGetBool(0, 4, &isnull);
		chunk->deferrals = SpiGetInt32(0, 5, &isnull);
	}
	SPI_freetuptable(SPI_tuptable);
	return found;
}

/*
 * RunHasDoneChunk
 *		Whether any chunk of the run has been executed from its source
 *		(that is, whether its probe has run).  Caller is connected to SPI.
 */
static bool
RunHasDoneChunk(int64 run_id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	bool		found;

	values[0] = Int64GetDatum(run_id);
	CatalogExec("SELECT 1 FROM backfill.chunks WHERE run_id OPERATOR(pg_catalog.=) $1"
				" AND status OPERATOR(pg_catalog.=) 'done' LIMIT 1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	found = SPI_processed > 0;
	SPI_freetuptable(SPI_tuptable);
	return found;
}

/*
 * ReportChunk
 *		The NOTICE of one executed chunk.  The time it took is reported at
 *		DEBUG1 (SET client_min_messages = debug1 to see it), so that the
 *		NOTICE stays the same from one execution to the next; it is also in
 *		the chunk's started_at and finished_at.
 */
static void
ReportChunk(RunInfo *run, ChunkInfo *chunk, ChunkReport *report)
{
	char	   *lo = TsStr(chunk->start);
	char	   *hi = TsStr(chunk->end);

	ereport(DEBUG1,
			(errmsg_internal("backfill: chunk %d of run %lld took %.0f ms",
							 chunk->chunk_no, (long long) run->run_id,
							 report->elapsed_ms)));

	if (report->outcome == CHUNK_DEFERRED)
		ereport(NOTICE,
				(errmsg("chunk %d [%s, %s) deferred: %s",
						chunk->chunk_no, lo, hi, report->error->message),
				 errdetail("Deferral %d of %d (backfill.max_attempts); the chunk stays pending.",
						   report->deferrals, backfill_max_attempts),
				 errhint("Another transaction holds a lock on the table; CALL backfill.run(%lld) again later.",
						 (long long) run->run_id)));
	else if (report->outcome == CHUNK_DONE && chunk->no_source)
		ereport(NOTICE,
				(errmsg("chunk %d [%s, %s) has no source data: %lld rows deleted",
						chunk->chunk_no, lo, hi,
						(long long) report->rows_deleted)));
	else if (report->outcome == CHUNK_DONE)
		ereport(NOTICE,
				(errmsg("chunk %d [%s, %s): %lld rows deleted, %lld rows inserted%s",
						chunk->chunk_no, lo, hi,
						(long long) report->rows_deleted,
						(long long) report->rows_inserted,
						!report->ledger_checked ? "" :
						report->ledger_ok ? ", ledger ok" : ", ledger differs")));
}

/*
 * RaiseChunkFailure
 *		After the failure has been committed: end the call with an error
 *		carrying the chunk's SQLSTATE, so that scripts and pg_cron see it.
 */
static void
RaiseChunkFailure(RunInfo *run, ChunkInfo *chunk, ErrorData *edata)
{
	ereport(ERROR,
			(errcode(edata->sqlerrcode),
			 errmsg("chunk %d of run %lld failed: %s", chunk->chunk_no,
					(long long) run->run_id, edata->message),
			 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
			 errhint("The chunk was rolled back and recorded as failed; fix the cause, then CALL backfill.run(%lld) to retry it and continue.",
					 (long long) run->run_id)));
}

/*
 * CommitChunk
 *		Commit the chunk's transaction (SPI_commit).  When the commit itself
 *		fails, e.g. Citus refusing to commit over a connection to a worker
 *		that died during the chunk, or a deferred constraint: SPI_commit has
 *		rolled the transaction back and started a new one, where the chunk
 *		is recorded as failed, with the chunk's own error when it had one
 *		(the cause; the commit's error is its consequence), else the
 *		commit's.  report is updated to match.
 */
static void
CommitChunk(RunInfo *run, ChunkInfo *chunk, ChunkReport *report)
{
	MemoryContext cxt = CurrentMemoryContext;
	ErrorData  *volatile edata = NULL;
	Oid			types[6] = {INT8OID, INT4OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		vals[6];
	char		nulls[6];

	PG_TRY();
	{
		SPI_commit();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
	}
	PG_END_TRY();
	if (edata == NULL)
		return;

	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
		ReThrowError(edata);
	if (report->outcome == CHUNK_FAILED && report->error != NULL)
		edata = report->error;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	memset(nulls, ' ', sizeof(nulls));
	vals[0] = Int64GetDatum(run->run_id);
	vals[1] = Int32GetDatum(chunk->chunk_no);
	vals[2] = CStringGetTextDatum(unpack_sql_state(edata->sqlerrcode));
	vals[3] = CStringGetTextDatum(edata->message ? edata->message : "");
	vals[4] = edata->detail ? CStringGetTextDatum(edata->detail) : (Datum) 0;
	nulls[4] = edata->detail ? ' ' : 'n';
	vals[5] = edata->hint ? CStringGetTextDatum(edata->hint) : (Datum) 0;
	nulls[5] = edata->hint ? ' ' : 'n';
	CatalogExec("UPDATE backfill.chunks SET status = 'failed',"
				" attempts = attempts OPERATOR(pg_catalog.+) 1,"
				" rows_deleted = NULL, rows_inserted = NULL,"
				" before_value = NULL, after_value = NULL,"
				" ledger_value = NULL, ledger_ok = NULL, verdict = NULL,"
				" finished_at = pg_catalog.clock_timestamp(),"
				" error_sqlstate = $3, error_message = $4,"
				" error_detail = $5, error_hint = $6"
				" WHERE run_id OPERATOR(pg_catalog.=) $1"
				" AND chunk_no OPERATOR(pg_catalog.=) $2",
				6, types, vals, nulls, SPI_OK_UPDATE);
	SetRunStatus(run, "failed");
	SPI_finish();
	SPI_commit();
	MemoryContextSwitchTo(cxt);
	report->outcome = CHUNK_FAILED;
	report->error = edata;
	report->run_status = pstrdup("failed");
}

/*
 * RunLoop
 *		Execute the run's chunks, one transaction each, until none is left,
 *		max_chunks (< 0: no limit) have been executed, the probe chunk has
 *		run, a chunk was deferred, or a chunk failed (then an error).
 *		Caller holds the run's session lock and a non-atomic SPI
 *		connection; cxt survives the commits.
 */
static void
RunLoop(RunInfo *run, int max_chunks, MemoryContext cxt)
{
	MemoryContext chunkcxt;
	int			executed = 0;
	bool		probe_pending;
	const char *via;
	char	   *user;

	MemoryContextSwitchTo(cxt);
	chunkcxt = AllocSetContextCreate(cxt, "backfill chunk",
									 ALLOCSET_DEFAULT_SIZES);
	via = ScheduleInCronWorker() ? "pg_cron" : "session";
	user = CurrentUserName();
	probe_pending = run->probe && !RunHasDoneChunk(run->run_id);

	for (;;)
	{
		ChunkInfo	chunk;
		ChunkReport report;
		char	   *run_status;
		const char *final_status;
		bool		found;

		CHECK_FOR_INTERRUPTS();
		MemoryContextSwitchTo(cxt);
		MemoryContextReset(chunkcxt);
		MemoryContextSwitchTo(chunkcxt);

		if (max_chunks >= 0 && executed >= max_chunks)
			break;

		/* an inner connection, so that SPI memory goes with the chunk */
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		found = NextChunk(run, &chunk, &run_status);

		/*
		 * SPI_finish frees SPI's procedure context, where every SPI call
		 * leaves CurrentMemoryContext: what is read after it (the run
		 * status, the chunk's report and ErrorData) lives in the chunk's
		 * context instead.
		 */
		run_status = MemoryContextStrdup(chunkcxt, run_status);
		if (strcmp(run_status, "cancelled") == 0 ||
			strcmp(run_status, "done") == 0)
		{
			SPI_finish();
			ereport(NOTICE,
					(errmsg("run %lld is %s", (long long) run->run_id,
							run_status)));
			break;
		}
		if (!found)
		{
			/* nothing left: the run is done (unless a cancel raced us) */
			if (RemainingChunks(run))
			{
				SPI_finish();
				SPI_commit();
				continue;
			}
			final_status = SetRunStatus(run, "done");
			SPI_finish();
			SPI_commit();
			ereport(NOTICE,
					(errmsg("run %lld is %s", (long long) run->run_id,
							final_status)));
			break;
		}

		/* pipeline hook: a group's chunk waits for its upstream chunks */
		if (!PipelineChunkReady(run->run_id, chunk.start, chunk.end))
		{
			SPI_finish();
			SPI_commit();
			break;
		}

		MemoryContextSwitchTo(chunkcxt);
		ExecuteChunk(run, &chunk, probe_pending, run_status, via, user,
					 &report);
		SPI_finish();
		CommitChunk(run, &chunk, &report);
		executed++;

		ReportChunk(run, &chunk, &report);
		if (report.outcome == CHUNK_FAILED)
			RaiseChunkFailure(run, &chunk, report.error);
		if (report.outcome == CHUNK_DEFERRED)
			break;
		if (strcmp(report.run_status, "done") == 0 ||
			strcmp(report.run_status, "cancelled") == 0)
		{
			ereport(NOTICE,
					(errmsg("run %lld is %s", (long long) run->run_id,
							report.run_status)));
			break;
		}
		if (probe_pending && !chunk.no_source)
		{
			ereport(NOTICE,
					(errmsg("run %lld is probed: chunk %d has run alone",
							(long long) run->run_id, chunk.chunk_no),
					 errhint("Inspect the chunk's rows and figures, then CALL backfill.run(%lld) to run the rest.",
							 (long long) run->run_id)));
			break;
		}
	}
	MemoryContextSwitchTo(cxt);
}

/*
 * ExecuteRun
 *		Check the caller, take the run's session lock (or report who holds
 *		it) and execute the run.  Caller has a non-atomic SPI connection.
 */
void
ExecuteRun(int64 run_id, int max_chunks)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	MemoryContext cxt;
	RunInfo    *run;
	LOCKTAG		tag;
	LockAcquireResult res;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "backfill run",
								ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);
	run = LoadRun(run_id);
	CheckRunIdentity(run, "run", true);

	if (strcmp(run->status, "done") == 0 || strcmp(run->status, "cancelled") == 0)
	{
		ereport(NOTICE,
				(errmsg("run %lld is already %s", (long long) run_id, run->status)));
		/* a job left behind (scheduled while it finished) stops here */
		(void) ScheduleRemoveJob(run_id);
		MemoryContextSwitchTo(oldcxt);
		MemoryContextDelete(cxt);
		return;
	}
	if (!run->registered || run->source == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table %s is not registered for backfill", run->target_name),
				 errhint("Register it again with backfill.register, or cancel the run with backfill.cancel(%lld).",
						 (long long) run_id)));

	/*
	 * A pg_cron tick for a run that has no job is a job left behind: by a
	 * DROP EXTENSION (which cannot remove pg_cron jobs) followed by a new
	 * install whose run ids start again, or by a job made by hand.  It
	 * must not execute whatever run now carries that id.
	 */
	if (!run->scheduled && ScheduleCalledFromCron())
	{
		ereport(NOTICE,
				(errmsg("run %lld is not scheduled; this pg_cron tick does nothing",
						(long long) run_id),
				 errhint("Schedule runs with backfill.schedule, and remove stale jobs with cron.unschedule.")));
		MemoryContextSwitchTo(oldcxt);
		MemoryContextDelete(cxt);
		return;
	}

	if (run->scheduled && ScheduleCalledFromCron() &&
		!ScheduleTickAllowed(run->quiet_hours, run->timezone,
							 GetCurrentTimestamp()))
	{
		ereport(NOTICE,
				(errmsg("run %lld is outside its quiet hours %s; nothing to do in this tick",
						(long long) run_id, run->quiet_hours)));
		MemoryContextSwitchTo(oldcxt);
		MemoryContextDelete(cxt);
		return;
	}

	BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_RUN, (uint32) run_id);
	res = LockAcquire(&tag, ExclusiveLock, true, true);
	if (res == LOCKACQUIRE_NOT_AVAIL)
	{
		int			pid = RunHolderPid(run_id);

		if (pid != 0)
			ereport(NOTICE,
					(errmsg("run %lld is being executed by backend %d; nothing to do",
							(long long) run_id, pid),
					 errhint("backfill.progress shows its progress.")));
		else
			ereport(NOTICE,
					(errmsg("run %lld is being executed by another backend; nothing to do",
							(long long) run_id)));
		MemoryContextSwitchTo(oldcxt);
		MemoryContextDelete(cxt);
		return;
	}

	PG_TRY();
	{
		RunLoop(run, max_chunks, cxt);
	}
	PG_FINALLY();
	{
		LockRelease(&tag, ExclusiveLock, true);
	}
	PG_END_TRY();

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
}

/*
 * NoteTickPrivileges
 *		In a tick of the run's own pg_cron job, as the job's role (no one
 *		else can write the note): record in runs.last_error when that role
 *		can no longer write the run's target (the tick is then refused by
 *		the usual check, and pg_cron alone would keep the reason), or clear
 *		a previous note when it can again, so that backfill.progress shows
 *		why a scheduled run does not move.  Caller is connected to SPI and
 *		commits.
 */
static void
NoteTickPrivileges(int64 run_id)
{
	Oid			argtypes[2] = {INT8OID, TEXTOID};
	Datum		values[2];
	bool		isnull;
	Oid			target;
	char	   *why = NULL;

	/* only the tick of the run's own job, as the job's role, notes */
	if (!OidIsValid(get_extension_oid("pg_cron", true)))
		return;
	values[0] = Int64GetDatum(run_id);
	values[1] = CStringGetTextDatum(CurrentUserName());
	CatalogExec("SELECT r.target::pg_catalog.oid FROM backfill.runs r"
				" JOIN cron.job j ON j.jobid OPERATOR(pg_catalog.=) r.job_id"
				" WHERE r.run_id OPERATOR(pg_catalog.=) $1"
				" AND j.username::pg_catalog.text OPERATOR(pg_catalog.=) $2",
				2, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
	{
		SPI_freetuptable(SPI_tuptable);
		return;
	}
	target = DatumGetObjectId(SpiGetDatumCopy(0, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(target)))
		why = psprintf("pg_cron tick refused: the table of run %lld no longer exists",
					   (long long) run_id);
	else if (pg_class_aclmask(target, GetUserId(), ACL_INSERT | ACL_DELETE,
							  ACLMASK_ALL) != (ACL_INSERT | ACL_DELETE))
		why = psprintf("pg_cron tick refused: role \"%s\" lacks INSERT or DELETE privilege on table %s",
					   CurrentUserName(), get_rel_name(target));

	values[1] = why ? CStringGetTextDatum(why) : (Datum) 0;
	CatalogExec("UPDATE backfill.runs SET last_error = $2"
				" WHERE run_id OPERATOR(pg_catalog.=) $1"
				" AND last_error IS DISTINCT FROM $2",
				2, argtypes, values, why ? NULL : " n", SPI_OK_UPDATE);
}

/*
 * backfill_run
 *		CALL backfill.run(run_id, max_chunks): execute pending chunks, one
 *		transaction each.  Only as a top-level CALL.
 */
Datum
backfill_run(PG_FUNCTION_ARGS)
{
	int			max_chunks = -1;

	RequireTopLevelCall(fcinfo, "backfill.run");
	RequireArg(fcinfo, 0, "run_id", NULL);
	if (!PG_ARGISNULL(1))
	{
		max_chunks = PG_GETARG_INT32(1);
		if (max_chunks <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("max_chunks must be positive"),
					 errhint("Leave it NULL to run every pending chunk.")));
	}

	if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (ScheduleCalledFromCron())
	{
		/* every tick sweeps the jobs of dropped roles, and notes refusals */
		(void) ScheduleSweepOrphanJobs(NULL);
		NoteTickPrivileges(PG_GETARG_INT64(0));
		SPI_commit();
	}
	ExecuteRun(PG_GETARG_INT64(0), max_chunks);
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * backfill_backfill
 *		CALL backfill.backfill(target, range_start, range_end, chunk, note):
 *		plan without a probe, commit the plan, and run it to the end.
 */
Datum
backfill_backfill(PG_FUNCTION_ARGS)
{
	int64		run_id;

	RequireTopLevelCall(fcinfo, "backfill.backfill");
	RequireArg(fcinfo, 0, "target", NULL);

	if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	run_id = PlanRun(PG_GETARG_OID(0),
					 PG_ARGISNULL(1) ? 0 : PG_GETARG_TIMESTAMPTZ(1), PG_ARGISNULL(1),
					 PG_ARGISNULL(2) ? 0 : PG_GETARG_TIMESTAMPTZ(2), PG_ARGISNULL(2),
					 PG_ARGISNULL(3) ? NULL : PG_GETARG_INTERVAL_P(3),
					 PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4)),
					 false, false, false, NULL);
	SPI_commit();
	ereport(NOTICE,
			(errmsg("planned run %lld", (long long) run_id)));
	ExecuteRun(run_id, -1);
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * backfill_cancel
 *		cancel(run_id) -> chunks cancelled.  Pending and failed chunks
 *		become cancelled (a chunk executing right now is skipped and
 *		finishes), the run becomes cancelled and its schedule is removed.
 */
Datum
backfill_cancel(PG_FUNCTION_ARGS)
{
	int64		run_id;
	RunInfo    *run;
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	int32		n;

	RequireArg(fcinfo, 0, "run_id", NULL);
	run_id = PG_GETARG_INT64(0);
	values[0] = Int64GetDatum(run_id);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	run = LoadRun(run_id);
	CheckRunIdentity(run, "cancel", false);
	if (strcmp(run->status, "done") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run %lld is already done", (long long) run_id),
				 errdetail("A finished run cannot be cancelled; its history stays in backfill.chunks.")));
	if (strcmp(run->status, "cancelled") == 0)
	{
		ereport(NOTICE,
				(errmsg("run %lld is already cancelled", (long long) run_id)));
		SPI_finish();
		PG_RETURN_INT32(0);
	}

	/*
	 * One set-based statement, linear whatever the statistics say: the
	 * chunks to cancel are locked (skipping the one a run is executing)
	 * and each is updated through its own tuple id, one TID fetch per
	 * chunk, never a search of the run's chunks per chunk.
	 */
	CatalogExec("UPDATE backfill.chunks c SET status = 'cancelled'"
				" FROM (SELECT ctid AS tid FROM backfill.chunks"
				"  WHERE run_id OPERATOR(pg_catalog.=) $1"
				"  AND status OPERATOR(pg_catalog.=) ANY ('{pending,failed}'::pg_catalog.text[])"
				"  FOR UPDATE SKIP LOCKED) s"
				" WHERE c.ctid OPERATOR(pg_catalog.=) s.tid",
				1, argtypes, values, NULL, SPI_OK_UPDATE);
	n = (int32) SPI_processed;
	CatalogExec("UPDATE backfill.runs SET status = 'cancelled',"
				" finished_at = pg_catalog.clock_timestamp()"
				" WHERE run_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_UPDATE);
	(void) ScheduleRemoveJob(run_id);
	SPI_finish();
	PG_RETURN_INT32(n);
}

/*
 * backfill_preview
 *		preview(target, range_start, range_end) -> one row (rows_deleted,
 *		rows_inserted, before_value, after_value, ledger_value): the
 *		replacement is done in an internal subtransaction that is always
 *		rolled back, so nothing changes.
 */
Datum
backfill_preview(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext cxt;
	ResourceOwner owner = CurrentResourceOwner;
	Oid			target;
	TimestampTz lo;
	TimestampTz hi;
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	char	   *time_column;
	char	   *measure;
	char	   *ledger;
	char	   *source;
	Oid			author;
	int32		version;
	ReplaceResult rr;
	volatile Datum ledger_value = (Datum) 0;
	volatile bool ledger_null = true;
	Datum		out[5];
	bool		outnull[5];

	RequireArg(fcinfo, 0, "target", NULL);
	target = PG_GETARG_OID(0);
	CheckRangeBounds(PG_ARGISNULL(1) ? 0 : PG_GETARG_TIMESTAMPTZ(1), PG_ARGISNULL(1),
					 PG_ARGISNULL(2) ? 0 : PG_GETARG_TIMESTAMPTZ(2), PG_ARGISNULL(2));
	lo = PG_GETARG_TIMESTAMPTZ(1);
	hi = PG_GETARG_TIMESTAMPTZ(2);
	CheckTargetPrivileges(target);

	InitMaterializedSRF(fcinfo, 0);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	cxt = CurrentMemoryContext;
	values[0] = ObjectIdGetDatum(target);
	CatalogExec("SELECT d.time_column::pg_catalog.text, d.measure, d.ledger, d.source,"
				" d.author, d.version"
				" FROM backfill.targets t JOIN backfill.definitions d"
				"  ON d.target OPERATOR(pg_catalog.=) t.target"
				"  AND d.version OPERATOR(pg_catalog.=) t.current_version"
				" WHERE t.target OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table %s is not registered for backfill",
						TargetDisplayName(target)),
				 errhint("Call backfill.register first, with its time column and source query.")));
	time_column = SpiGetText(0, 1);
	measure = SpiGetText(0, 2);
	ledger = SpiGetText(0, 3);
	source = SpiGetText(0, 4);
	{
		bool		isnull;

		author = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
												SPI_tuptable->tupdesc, 5,
												&isnull));
		version = SpiGetInt32(0, 6, &isnull);
	}
	SPI_freetuptable(SPI_tuptable);
	CheckAuthor(author, target, version);

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		AuthorGate gate;

		/* as the author; the rollback below restores the caller */
		SpiExec("SET CONSTRAINTS ALL IMMEDIATE", 0, NULL, NULL, NULL,
				false, 0, SPI_OK_UTILITY);
		AuthorGateEnter(&gate, author, target, version,
						GetConfigOption("search_path", false, false),
						GetConfigOption("TimeZone", false, false));
		CheckTargetPrivileges(target);
		ReplaceRange(target, time_column, lo, hi, source, "delete", measure,
					 &rr);
		if (ledger != NULL)
		{
			bool		isnull;
			Datum		lv = LedgerValue(ledger, lo, hi, &isnull);

			ledger_value = lv;
			ledger_null = isnull;
		}
		AuthorGateLeave(&gate);
	}
	PG_CATCH();
	{
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		PG_RE_THROW();
	}
	PG_END_TRY();
	RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;

	out[0] = Int64GetDatum(rr.rows_deleted);
	outnull[0] = false;
	out[1] = Int64GetDatum(rr.rows_inserted);
	outnull[1] = false;
	out[2] = rr.before_value;
	outnull[2] = !rr.have_values || rr.before_null;
	out[3] = rr.after_value;
	outnull[3] = !rr.have_values || rr.after_null;
	out[4] = ledger_value;
	outnull[4] = ledger_null;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, outnull);

	SPI_finish();
	return (Datum) 0;
}
