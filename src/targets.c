/*-------------------------------------------------------------------------
 *
 * targets.c
 *	  Targets: register a table with its source and settings (a new
 *	  definition version when anything differs), unregister it, and read
 *	  a definition version (LoadDefinition).
 *
 * Register, unregister and plan of one target serialize on the
 * transaction-level lock (BACKFILL_LOCK_CLASS_PLAN, relid); see
 * TakeTargetPlanLock.  The engine reads a run's pinned definition
 * version (backfill.definitions), never backfill.targets, which is a
 * read-only copy of the current version for users.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/syscache.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_register);
PG_FUNCTION_INFO_V1(backfill_unregister);

/*
 * TakeTargetPlanLock
 *		Transaction-level lock (BACKFILL_LOCK_CLASS_PLAN, relid)
 *		that serializes register, unregister and plan of one target, so two
 *		overlapping plans can never both succeed.
 */
void
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
				" d.ledger_gate, d.strategy"
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
	SPI_freetuptable(SPI_tuptable);
	return def;
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
	RequireMaxLength(label, "definition label", BACKFILL_MAX_LABEL);

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
	if (numeric_is_nan(DatumGetNumeric(tolerance)) ||
		numeric_is_inf(DatumGetNumeric(tolerance)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tolerance must be a finite number"),
				 errdetail("A tolerance of %s would let every chunk pass the ledger gate.",
						   NumericText(tolerance, false)),
				 errhint("The tolerance is the allowed relative difference from the ledger, for example 0.01 for 1%%.")));
	if (DatumGetBool(DirectFunctionCall2(numeric_lt, tolerance,
										 DirectFunctionCall1(int4_numeric,
															 Int32GetDatum(0)))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tolerance must not be negative"),
				 errhint("The tolerance is the allowed relative difference from the ledger, for example 0.01 for 1%%.")));

	SpiConnect();

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
		values[1] = CStringGetTextDatum(QualifiedRelName(target));
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

	SpiFinish();
	PG_RETURN_INT32(version);
}

/*
 * backfill_unregister
 *		unregister(target, cascade): forget a target.  Refused (55006) while
 *		it has runs that are planned, probed or failed, and (2BP01) while
 *		targets depend on it unless cascade (pipeline.c); definitions, runs
 *		and chunks stay as history.  The caller must be allowed to rewrite the
 *		table; when the table has been dropped, its registration can be
 *		removed (by OID, e.g. unregister(16384)) by the role that
 *		registered its current version (identified by OID, as the author
 *		in backfill.definitions), a role with its privileges, or a
 *		superuser.
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
	Oid			author;
	bool		isnull;
	bool		dropped;

	RequireArg(fcinfo, 0, "target", NULL);
	target = PG_GETARG_OID(0);
	values[0] = ObjectIdGetDatum(target);
	dropped = (get_rel_name(target) == NULL);

	if (!dropped)
		CheckTargetPrivileges(target);

	SpiConnect();
	TakeTargetPlanLock(target);

	CatalogExec("SELECT t.target_name, t.registered_by::pg_catalog.text, d.author"
				" FROM backfill.targets t LEFT JOIN backfill.definitions d"
				"  ON d.target OPERATOR(pg_catalog.=) t.target"
				"  AND d.version OPERATOR(pg_catalog.=) t.current_version"
				" WHERE t.target OPERATOR(pg_catalog.=) $1",
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
						QualifiedRelName(target)),
				 errhint("Registered tables are listed in backfill.targets.")));
	}
	name = SpiGetText(0, 1);
	registrant = SpiGetText(0, 2);
	author = SpiGetOid(0, 3, &isnull);
	SPI_freetuptable(SPI_tuptable);

	/*
	 * The registration of a dropped table: the role that registered its
	 * current version, by OID (a role created again under the same name
	 * is another role), or a role with its privileges; a superuser when
	 * it is gone.
	 */
	if (dropped)
	{
		bool		exists = OidIsValid(author) &&
			SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(author));

		if (!(exists ? has_privs_of_role(GetUserId(), author) : superuser()))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to unregister dropped table %s", name),
					 exists ?
					 errdetail("Only the role that registered it (\"%s\"), a role with its privileges, or a superuser may.",
							   GetUserNameFromId(author, false)) :
					 errdetail("The role that registered it (role OID %u, registered as \"%s\") no longer exists; only a superuser may.",
							   author, registrant)));
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
	SpiFinish();
	PG_RETURN_VOID();
}
