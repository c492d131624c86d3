/*-------------------------------------------------------------------------
 *
 * registry.c
 *	  Targets and their definition versions: a registration's checks
 *	  (CheckRegistration) and the definition version it makes, new when
 *	  anything differs (WriteRegistration), and set_strategy (a new
 *	  version with another strategy).  register and unregister, which
 *	  know the other features, are lifecycle.c's.
 *
 * Register, unregister and plan of one target serialize on the
 * transaction-level lock (BACKFILL_LOCK_CLASS_PLAN, relid); see
 * TakeTargetPlanLock.  The engine reads a run's pinned definition
 * version (backfill.definitions, LoadDefinition), never backfill.targets,
 * which is a read-only copy of the current version for users.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "catalog/pg_type.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/syscache.h"

#include "backfill.h"

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
 * CheckDiffKey
 *		register's key: 1 to BACKFILL_MAX_KEY distinct columns of the
 *		target, none NULL (22023, 42703).
 */
static void
CheckDiffKey(Oid target, ArrayType *key)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;
	int			j;

	if (ARR_NDIM(key) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key must be a one-dimensional array of column names")));
	deconstruct_array(key, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR,
					  &elems, &nulls, &n);
	if (n < 1 || n > BACKFILL_MAX_KEY)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key must name between 1 and %d columns", BACKFILL_MAX_KEY),
				 errhint("Give the columns that identify a row of the table, or NULL to use its primary key.")));
	for (i = 0; i < n; i++)
	{
		const char *col;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("key must not contain NULL")));
		col = NameStr(*DatumGetName(elems[i]));
		if (get_attnum(target, col) <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("key column \"%s\" of relation \"%s\" does not exist",
							col, get_rel_name(target)),
					 errhint("Name columns of the table that identify a row, or leave key NULL to use its primary key.")));
		for (j = 0; j < i; j++)
			if (strcmp(col, NameStr(*DatumGetName(elems[j]))) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("key names column \"%s\" twice", col),
						 errhint("Name each column of the key once.")));
	}
}

/*
 * CheckRegistrationSettings
 *		The settings of a registration that need no query: a positive
 *		chunk, source_retention and keep_for, not both source_retention and
 *		source_horizon, a finite tolerance that is not negative, keep_for
 *		only with keep_replaced, and a diff key of the table's columns.
 */
static void
CheckRegistrationSettings(const Registration *reg)
{
	Oid			target = reg->target;
	Interval   *chunk = reg->chunk;
	Interval   *retention = reg->retention;
	const char *horizon = reg->horizon;
	Datum		tolerance = reg->tolerance;

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

	if (reg->keep_for != NULL && !IntervalIsPositive(reg->keep_for))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("keep_for must be positive"),
				 errhint("Give how long the rows a run replaced are kept, for example '30 days'.")));
	if (reg->keep_for != NULL && !reg->keep_replaced)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("keep_for needs keep_replaced => true"),
				 errhint("keep_for is how long the rows a run replaced are kept.")));
	if (reg->key != (Datum) 0)
		CheckDiffKey(target, DatumGetArrayTypeP(reg->key));
}

/*
 * CheckRegistration
 *		See backfill.h: check what register is given (the caller may
 *		rewrite the target, the time column, the label's length, the
 *		settings) and validate its texts (the source, which must use the
 *		chunk's range, the measure, ledger and horizon), then take the
 *		target's plan lock.  The validated texts, in the current memory
 *		context.  Caller is connected to SPI.
 */
ValidRegistration *
CheckRegistration(const Registration *reg)
{
	Oid			target = reg->target;
	ValidRegistration *valid = palloc0(sizeof(ValidRegistration));

	CheckTargetPrivileges(target);
	(void) TimeColumnType(target, reg->time_column);
	RequireMaxLength(reg->label, "definition label", BACKFILL_MAX_LABEL);
	CheckRegistrationSettings(reg);

	valid->sq = ValidateSourceQuery(reg->source, target, reg->time_column);

	/*
	 * A source that reads neither $1 nor $2 returns the same rows for every
	 * chunk: all but one chunk would fail on a row outside its range.  One
	 * bound alone can be right (WHERE day = $1::date for daily chunks).
	 */
	if (!valid->sq->uses_range)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("source query does not use the chunk's range"),
				 errdetail("The source is run once per chunk with $1 = the chunk's start and $2 = its end, and must return the rows of [$1, $2) only."),
				 errhint("Filter the source on $1 and $2: WHERE time >= $1 AND time < $2.")));
	valid->measure = ValidateMeasure(reg->measure, target);
	valid->ledger = reg->ledger;
	if (valid->ledger != NULL)
		valid->ledger = ValidateLedger(valid->ledger);
	valid->horizon = reg->horizon;
	if (valid->horizon != NULL)
		valid->horizon = ValidateHorizon(valid->horizon);

	TakeTargetPlanLock(target);
	return valid;
}

/*
 * DefinitionVersion
 *		The version these settings and this author make: the current one
 *		(the latest, after an unregister) when every setting, the source,
 *		the label and the author are the same, else a new one, numbered
 *		after the latest (versions continue after an unregister).  The
 *		current version is not the latest after a revert made an earlier
 *		one current again (undo.c): registering the current text again is
 *		still a no-op.  The strategy is kept from the current registration
 *		(set_strategy).  A new version records the version current before
 *		it, the one a revert of its runs makes current again.
 */
static int32
DefinitionVersion(const Registration *reg, const ValidRegistration *valid)
{
	Oid			target = reg->target;
	const char *time_column = reg->time_column;
	const char *label = reg->label;
	Interval   *chunk = reg->chunk;
	Interval   *retention = reg->retention;
	const char *horizon = valid->horizon;
	const char *ledger = valid->ledger;
	const char *measure = valid->measure;
	Datum		tolerance = reg->tolerance;
	bool		ledger_gate = reg->ledger_gate;
	SourceQuery *sq = valid->sq;
	int32		version = 0;
	bool		new_version;
	CatalogArgs args;
	bool		isnull;
	int32		latest = 0;

	CatalogArgsInit(&args);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(target), false);
	CatalogArgText(&args, sq->sql);
	CatalogArgText(&args, label);
	CatalogArg(&args, OIDOID, ObjectIdGetDatum(GetUserId()), false);
	CatalogArgText(&args, time_column);
	CatalogArg(&args, INTERVALOID, IntervalPGetDatum(chunk), false);
	CatalogArg(&args, INTERVALOID, PointerGetDatum(retention),
			   retention == NULL);
	CatalogArgText(&args, horizon);
	CatalogArgText(&args, ledger);
	CatalogArgText(&args, measure);
	CatalogArg(&args, NUMERICOID, tolerance, false);
	CatalogArg(&args, BOOLOID, BoolGetDatum(ledger_gate), false);
	CatalogArg(&args, BOOLOID, BoolGetDatum(reg->keep_replaced), false);
	CatalogArg(&args, INTERVALOID, PointerGetDatum(reg->keep_for),
			   reg->keep_for == NULL);
	CatalogArg(&args, NAMEARRAYOID, reg->key, reg->key == (Datum) 0);
	CatalogArg(&args, BOOLOID, BoolGetDatum(reg->allow_empty), false);
	CatalogExecArgs("SELECT d.version,"
					" (d.source, d.label, d.author, d.time_column::pg_catalog.text,"
					"  d.chunk, d.source_retention, d.source_horizon, d.ledger,"
					"  d.measure, d.tolerance, d.ledger_gate, d.keep_replaced,"
					"  d.keep_for, d.key, d.allow_empty)"
					"  IS NOT DISTINCT FROM ($2, $3, $4, $5, $6, $7, $8, $9, $10,"
					"  $11, $12, $13, $14, $15, $16),"
					" d.strategy IS NOT DISTINCT FROM"
					"  coalesce(t.strategy, d.strategy),"
					" (SELECT pg_catalog.max(m.version) FROM backfill.definitions m"
					"   WHERE m.target OPERATOR(pg_catalog.=) $1)"
					" FROM backfill.definitions d"
					" LEFT JOIN backfill.targets t"
					"  ON t.target OPERATOR(pg_catalog.=) d.target"
					" WHERE d.target OPERATOR(pg_catalog.=) $1"
					" AND (t.target IS NULL"
					"  OR d.version OPERATOR(pg_catalog.=) t.current_version)"
					" ORDER BY d.version DESC LIMIT 1",
					&args, SPI_OK_SELECT);
	if (SPI_processed == 0)
		new_version = true;
	else
	{
		version = SpiGetInt32(0, 1, &isnull);
		new_version = !SpiGetBool(0, 2, &isnull) || !SpiGetBool(0, 3, &isnull);
		latest = SpiGetInt32(0, 4, &isnull);
	}
	SPI_freetuptable(SPI_tuptable);

	if (new_version)
	{
		/* the same sixteen parameters, and the version as $17 */
		version = latest + 1;
		CatalogArg(&args, INT4OID, Int32GetDatum(version), false);
		CatalogExecArgs("INSERT INTO backfill.definitions"
						" (target, version, label, source, source_hash, created_by,"
						"  author, time_column, chunk, source_retention,"
						"  source_horizon, ledger, measure, tolerance, ledger_gate,"
						"  strategy, keep_replaced, keep_for, key, allow_empty,"
						"  previous_version)"
						" SELECT $1, $17, $3, $2,"
						" pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to($2, 'UTF8')), 'hex'),"
						" (SELECT rolname FROM pg_catalog.pg_roles"
						"  WHERE oid OPERATOR(pg_catalog.=) $4),"
						" $4, $5::pg_catalog.name, $6, $7, $8, $9, $10, $11, $12,"
						" coalesce((SELECT strategy FROM backfill.targets"
						"  WHERE target OPERATOR(pg_catalog.=) $1), 'auto'),"
						" $13, $14, $15, $16,"
						" (SELECT current_version FROM backfill.targets"
						"  WHERE target OPERATOR(pg_catalog.=) $1)",
						&args, SPI_OK_INSERT);
	}
	return version;
}

/*
 * WriteTargetRow
 *		backfill.targets' row of target: a read-only copy of its current
 *		definition version (the engine never reads it), registered by
 *		user now.
 */
static void
WriteTargetRow(Oid target, int32 version, const char *user)
{
	CatalogArgs args;

	CatalogArgsInit(&args);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(target), false);
	CatalogArgText(&args, QualifiedRelName(target));
	CatalogArg(&args, INT4OID, Int32GetDatum(version), false);
	CatalogArgText(&args, user);

	/*
	 * A read-only copy of the current version (the engine never reads
	 * it), its settings taken from that version's row: they are packed
	 * once, above.
	 */
	CatalogExecArgs("INSERT INTO backfill.targets AS t"
					" (target, target_name, time_column, chunk, source_retention,"
					"  source_horizon, ledger, measure, tolerance, ledger_gate,"
					"  current_version, registered_by, strategy, keep_replaced,"
					"  keep_for, key, allow_empty)"
					" SELECT $1, $2, d.time_column, d.chunk, d.source_retention,"
					"  d.source_horizon, d.ledger, d.measure, d.tolerance,"
					"  d.ledger_gate, $3, $4::pg_catalog.name, d.strategy,"
					"  d.keep_replaced, d.keep_for, d.key, d.allow_empty"
					" FROM backfill.definitions d"
					" WHERE d.target OPERATOR(pg_catalog.=) $1"
					" AND d.version OPERATOR(pg_catalog.=) $3"
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
					"  keep_replaced = excluded.keep_replaced,"
					"  keep_for = excluded.keep_for,"
					"  key = excluded.key,"
					"  allow_empty = excluded.allow_empty,"
					"  current_version = excluded.current_version,"
					"  registered_at = pg_catalog.now(),"
					"  registered_by = excluded.registered_by",
					&args, SPI_OK_INSERT);
}

/*
 * WriteRegistration
 *		See backfill.h: the definition version that a registration checked
 *		by CheckRegistration makes (DefinitionVersion) made current, in
 *		backfill.targets too; every backend's cache of watched targets'
 *		chunks is read again after the commit.  Returns the version.
 *		Caller is connected to SPI and holds the target's plan lock.
 */
int32
WriteRegistration(const Registration *reg, const ValidRegistration *valid)
{
	int32		version = DefinitionVersion(reg, valid);

	WriteTargetRow(reg->target, version, CurrentUserName());
	/* a watched target's chunk may have changed (watchlog.c's cache) */
	InvalidateWatchCache();
	return version;
}

/*
 * SetTargetStrategy
 *		See backfill.h: set_strategy -> the previous strategy.  How the
 *		chunks of the target's runs replace their rows from now on (auto,
 *		delete, truncate or swap), as a new definition version authored by
 *		the caller.  The caller must be allowed to rewrite the target
 *		(CheckTargetPrivileges); the catalog is written as the extension
 *		owner.  Caller is connected to SPI.
 */
ReplaceStrategy
SetTargetStrategy(Oid target, ReplaceStrategy strategy)
{
	Oid			argtypes[3] = {REGCLASSOID, TEXTOID, INT4OID};
	Datum		values[3];
	ReplaceStrategy previous;

	if (get_rel_name(target) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", target)));
	CheckTargetPrivileges(target);
	CitusCheckStrategy(target, strategy);	/* Citus: no swap */

	values[0] = ObjectIdGetDatum(target);
	values[1] = CStringGetTextDatum(StrategyName(strategy));
	{
		Definition *def = LoadDefinition(target, 0);
		int32		version = def->version;
		Oid			author = def->author;
		CatalogArgs args;

		previous = def->strategy;

		/*
		 * The new version is authored by the caller, who adopts the current
		 * version's text: only a role with its author's privileges may.
		 */
		CheckAuthor(author, target, version);
		CatalogArgsInit(&args);
		CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(target), false);
		CatalogArgText(&args, StrategyName(strategy));
		CatalogArg(&args, INT4OID, Int32GetDatum(version), false);
		CatalogArg(&args, OIDOID, ObjectIdGetDatum(GetUserId()), false);
		CatalogExecArgs("INSERT INTO backfill.definitions (target, version, label,"
						" source, source_hash, created_by, author, time_column, chunk,"
						" source_retention, source_horizon, ledger, measure, tolerance,"
						" ledger_gate, strategy, keep_replaced, keep_for, key,"
						" allow_empty, previous_version)"
						" SELECT d.target, m.v OPERATOR(pg_catalog.+) 1, d.label,"
						" d.source, d.source_hash,"
						" (SELECT rolname FROM pg_catalog.pg_roles"
						"  WHERE oid OPERATOR(pg_catalog.=) $4),"
						" $4, d.time_column, d.chunk, d.source_retention,"
						" d.source_horizon, d.ledger, d.measure, d.tolerance,"
						" d.ledger_gate, $2, d.keep_replaced, d.keep_for, d.key,"
						" d.allow_empty, d.version"
						" FROM backfill.definitions d,"
						" (SELECT pg_catalog.max(version) AS v FROM backfill.definitions"
						"  WHERE target OPERATOR(pg_catalog.=) $1) m"
						" WHERE d.target OPERATOR(pg_catalog.=) $1"
						" AND d.version OPERATOR(pg_catalog.=) $3"
						" AND (d.strategy, d.author) IS DISTINCT FROM ($2, $4)"
						" RETURNING version",
						&args, SPI_OK_INSERT_RETURNING);
		/* the new version, if any, is current (not the latest: a revert) */
		if (SPI_processed > 0)
		{
			bool		isnull;

			version = SpiGetInt32(0, 1, &isnull);
		}
		SPI_freetuptable(SPI_tuptable);
		values[2] = Int32GetDatum(version);
		CatalogExec("UPDATE backfill.targets SET strategy = $2,"
					" current_version = $3"
					" WHERE target OPERATOR(pg_catalog.=) $1",
					3, argtypes, values, NULL, SPI_OK_UPDATE);
	}
	return previous;
}
