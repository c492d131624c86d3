/*-------------------------------------------------------------------------
 *
 * export.c
 *	  Definitions as code (doc/targets.md "Definitions as code"):
 *	  export_definitions writes the SQL that registers the current
 *	  definitions of targets again, with their strategies, watches,
 *	  dependencies, standing checks and refresh jobs, for a migration file
 *	  under review.
 *
 * The script is idempotent: each statement changes nothing where what it
 * declares is there already.  register and set_strategy return the current
 * version when nothing differs (the author included: a script run by
 * another role makes new versions authored by it, as any register does);
 * watch and depend return false; the standing checks and refresh jobs,
 * which would otherwise be scheduled again, are guarded by NOT EXISTS on
 * the catalog.  Every setting is written out, defaults included, so that
 * the script means the same under a later version's defaults.
 *
 * The catalog is read as the caller, under its row-level security: only
 * what the caller may read is exported (a target the caller may SELECT,
 * and the dependencies between two of them).  Nothing of the caller's
 * settings leaks into the text: intervals are written in the postgres
 * style (ISO 8601 for one with a negative field), which every IntervalStyle
 * reads alike, names come from OIDs, quoted as identifiers and then as
 * literals, every value with quote_literal, every function and operator
 * schema-qualified.  The TimeZone of a watch and the TimeZone and
 * search_path of a refresh, which those record from the session, are set
 * before them (set_config) and reset at the end.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "backfill.h"

/* The state of one export: the text, and the settings set in it. */
typedef struct Export
{
	StringInfoData out;
	List	   *targets;		/* the OIDs exported */
	char	   *timezone;		/* the TimeZone the script has set, or NULL */
	char	   *search_path;	/* the search_path the script has set */
} Export;

/*
 * Literal
 *		A value as a quoted literal (quote_literal: E'' when it holds a
 *		backslash), "NULL" for NULL.
 */
static char *
Literal(const char *value)
{
	return value == NULL ? pstrdup("NULL") : quote_literal_cstr(value);
}

/*
 * RelLiteral
 *		A relation's schema-qualified, quoted name, as a literal.
 */
static char *
RelLiteral(Oid relid)
{
	return quote_literal_cstr(QualifiedRelName(relid));
}

/*
 * IntervalLiteral
 *		An interval as a literal every IntervalStyle reads alike: the
 *		postgres style when no field is negative, else ISO 8601 (a leading
 *		sign is read differently under sql_standard); "NULL" for NULL.
 */
static char *
IntervalLiteral(Datum value, bool isnull)
{
	Interval   *iv;
	int			nest;
	char	   *text;

	if (isnull)
		return pstrdup("NULL");
	iv = DatumGetIntervalP(value);
	nest = NewGUCNestLevel();
	(void) set_config_option("IntervalStyle",
							 (iv->time < 0 || iv->day < 0 || iv->month < 0) ?
							 "iso_8601" : "postgres",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true,
							 0, false);
	text = DatumGetCString(DirectFunctionCall1(interval_out, value));
	AtEOXact_GUC(true, nest);
	return psprintf("%s::pg_catalog.interval", quote_literal_cstr(text));
}

/*
 * IntervalColumn
 *		IntervalLiteral of column col of row k of SPI_tuptable.
 */
static char *
IntervalColumn(uint64 k, int col)
{
	bool		isnull;
	Datum		value = SpiGetDatumCopy(k, col, &isnull);

	return IntervalLiteral(value, isnull);
}

/*
 * SetSetting
 *		Write the set_config call that gives setting "name" exactly
 *		"value" for the rest of the session (a list such as a search_path
 *		included), unless the script has set it so already (*current).
 */
static void
SetSetting(Export *e, const char *name, const char *value, char **current)
{
	if (*current != NULL && strcmp(*current, value) == 0)
		return;
	appendStringInfo(&e->out, "SELECT pg_catalog.set_config(%s, %s, false);\n",
					 quote_literal_cstr(name), quote_literal_cstr(value));
	*current = pstrdup(value);
}

/*
 * CheckGivenTargets
 *		Each of the targets given to export_definitions is not NULL (22004)
 *		and readable by the caller (42501).
 */
static void
CheckGivenTargets(ArrayType *given)
{
	Datum	   *elems;
	bool	   *elnulls;
	int			n;
	int			i;

	deconstruct_array(given, REGCLASSOID, sizeof(Oid), true, TYPALIGN_INT,
					  &elems, &elnulls, &n);
	for (i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (elnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("targets must not contain NULL"),
					 errhint("Leave targets NULL to export every target you may read.")));
		CheckSelectPrivilege(DatumGetObjectId(elems[i]));
	}
}

/*
 * KeyLiteral
 *		The literal of the key in column col (a text[] of column names) of
 *		row k of SPI_tuptable, as ARRAY['a', ...]::pg_catalog.name[]; NULL
 *		when the key is NULL.
 */
static char *
KeyLiteral(uint64 k, int col)
{
	bool		isnull;
	char	   *key = NULL;
	Datum		keyd;

	keyd = SpiGetDatumCopy(k, col, &isnull);
	if (!isnull)
	{
		Datum	   *names;
		int			nnames;
		int			i;
		StringInfoData buf;

		deconstruct_array(DatumGetArrayTypeP(keyd), TEXTOID, -1, false,
						  TYPALIGN_INT, &names, NULL, &nnames);
		initStringInfo(&buf);
		appendStringInfoString(&buf, "ARRAY[");
		for (i = 0; i < nnames; i++)
			appendStringInfo(&buf, "%s%s", i > 0 ? ", " : "",
							 quote_literal_cstr(TextDatumGetCString(names[i])));
		appendStringInfoString(&buf, "]::pg_catalog.name[]");
		key = buf.data;
	}
	return key;
}

/*
 * CheckGivenExported
 *		Each of the targets given to export_definitions was exported (is in
 *		e->targets): else it is not registered (42704).
 */
static void
CheckGivenExported(Export *e, ArrayType *given)
{
	Datum	   *elems;
	int			n;
	int			i;

	deconstruct_array(given, REGCLASSOID, sizeof(Oid), true, TYPALIGN_INT,
					  &elems, NULL, &n);
	for (i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (!list_member_oid(e->targets, DatumGetObjectId(elems[i])))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("table %s is not registered for backfill",
							QualifiedRelName(DatumGetObjectId(elems[i]))),
					 errhint("Registered tables are listed in backfill.targets.")));
	}
}

/*
 * ExportTargets
 *		The register and set_strategy calls of the current definitions of
 *		the targets the caller may read (all, or those of "given": 42501
 *		for one the caller may not read, 42704 for one not registered),
 *		in order of name; their OIDs into e->targets.  Caller is connected
 *		to SPI.
 */
static void
ExportTargets(Export *e, ArrayType *given)
{
	Oid			argtypes[1] = {REGCLASSARRAYOID};
	Datum		values[1];
	char		nulls[2] = " ";
	uint64		k;

	if (given != NULL)
	{
		CheckGivenTargets(given);
		values[0] = PointerGetDatum(given);
	}
	else
		nulls[0] = 'n';

	SpiExecPinned("SELECT t.target::pg_catalog.oid, d.time_column::pg_catalog.text,"
				  " d.source, d.label, d.chunk, d.source_retention,"
				  " d.source_horizon, d.ledger, d.measure,"
				  " d.tolerance::pg_catalog.text, d.ledger_gate, d.keep_replaced,"
				  " d.keep_for, d.key::pg_catalog.text[], d.allow_empty, d.strategy"
				  " FROM backfill.targets t"
				  " JOIN backfill.definitions d"
				  "  ON d.target OPERATOR(pg_catalog.=) t.target"
				  "  AND d.version OPERATOR(pg_catalog.=) t.current_version"
				  " JOIN pg_catalog.pg_class c"
				  "  ON c.oid OPERATOR(pg_catalog.=) t.target::pg_catalog.oid"
				  " JOIN pg_catalog.pg_namespace s"
				  "  ON s.oid OPERATOR(pg_catalog.=) c.relnamespace"
				  " WHERE $1 IS NULL OR t.target OPERATOR(pg_catalog.=) ANY ($1)"
				  " ORDER BY s.nspname, c.relname",
				  1, argtypes, values, nulls, true, 0, SPI_OK_SELECT);

	for (k = 0; k < SPI_processed; k++)
	{
		bool		isnull;
		Oid			target = SpiGetOid(k, 1, &isnull);
		char	   *rel = RelLiteral(target);
		char	   *key;

		CHECK_FOR_INTERRUPTS();
		e->targets = lappend_oid(e->targets, target);
		key = KeyLiteral(k, 14);

		appendStringInfo(&e->out,
						 "\nSELECT backfill.register(\n"
						 "    target           => %s,\n"
						 "    time_column      => %s,\n"
						 "    source           => %s,\n"
						 "    definition       => %s,\n"
						 "    chunk            => %s,\n"
						 "    source_retention => %s,\n"
						 "    source_horizon   => %s,\n"
						 "    ledger           => %s,\n"
						 "    measure          => %s,\n"
						 "    tolerance        => %s,\n"
						 "    ledger_gate      => %s,\n"
						 "    keep_replaced    => %s,\n"
						 "    keep_for         => %s,\n"
						 "    key              => %s,\n"
						 "    allow_empty      => %s);\n",
						 rel,
						 Literal(SpiGetText(k, 2)),
						 Literal(SpiGetText(k, 3)),
						 Literal(SpiGetText(k, 4)),
						 IntervalColumn(k, 5),
						 IntervalColumn(k, 6),
						 Literal(SpiGetText(k, 7)),
						 Literal(SpiGetText(k, 8)),
						 Literal(SpiGetText(k, 9)),
						 psprintf("%s::pg_catalog.numeric", Literal(SpiGetText(k, 10))),
						 SpiGetBool(k, 11, &isnull) ? "true" : "false",
						 SpiGetBool(k, 12, &isnull) ? "true" : "false",
						 IntervalColumn(k, 13),
						 key != NULL ? key : "NULL",
						 SpiGetBool(k, 15, &isnull) ? "true" : "false");
		appendStringInfo(&e->out,
						 "SELECT backfill.set_strategy(%s, %s);\n",
						 rel, Literal(SpiGetText(k, 16)));
	}
	SPI_freetuptable(SPI_tuptable);

	/* every target asked for is registered (and readable: checked above) */
	if (given != NULL)
		CheckGivenExported(e, given);
}

/*
 * TargetsArray
 *		The exported targets as a regclass[] Datum.
 */
static Datum
TargetsArray(Export *e)
{
	return MakeOidArray(e->targets, REGCLASSOID);
}

/*
 * ExportWatches
 *		The watch calls of the exported targets, each after its TimeZone
 *		(which watch records from the session).  A watch of a source that
 *		no longer exists is a comment.  Caller is connected to SPI.
 */
static void
ExportWatches(Export *e)
{
	Oid			argtypes[1] = {REGCLASSARRAYOID};
	Datum		values[1];
	uint64		k;

	values[0] = TargetsArray(e);
	SpiExecPinned("SELECT w.target::pg_catalog.oid, w.source::pg_catalog.oid,"
				  " w.time_column::pg_catalog.text, w.timezone, w.settle"
				  " FROM backfill.watches w"
				  " WHERE w.target OPERATOR(pg_catalog.=) ANY ($1)"
				  " ORDER BY w.target::pg_catalog.text, w.source::pg_catalog.text",
				  1, argtypes, values, NULL, true, 0, SPI_OK_SELECT);
	for (k = 0; k < SPI_processed; k++)
	{
		bool		isnull;
		Oid			target = SpiGetOid(k, 1, &isnull);
		Oid			source = SpiGetOid(k, 2, &isnull);

		CHECK_FOR_INTERRUPTS();
		if (k == 0)
			appendStringInfoString(&e->out, "\n");
		if (get_rel_name(source) == NULL)
		{
			appendStringInfo(&e->out,
							 "-- %s watched a table (OID %u) that no longer exists\n",
							 QualifiedRelName(target), source);
			continue;
		}
		SetSetting(e, "TimeZone", SpiGetText(k, 4), &e->timezone);
		appendStringInfo(&e->out,
						 "SELECT backfill.watch(%s, %s, %s, settle => %s);\n",
						 RelLiteral(target), RelLiteral(source),
						 Literal(SpiGetText(k, 3)),
						 IntervalColumn(k, 5));
	}
	SPI_freetuptable(SPI_tuptable);
}

/*
 * ExportDependencies
 *		The depend calls among the exported targets (a dependency is
 *		visible to a reader of both ends); one on a target not exported is
 *		a comment, since depend needs both registered.  Caller is connected
 *		to SPI.
 */
static void
ExportDependencies(Export *e)
{
	Oid			argtypes[1] = {REGCLASSARRAYOID};
	Datum		values[1];
	uint64		k;

	values[0] = TargetsArray(e);
	SpiExecPinned("SELECT d.downstream::pg_catalog.oid, d.upstream::pg_catalog.oid"
				  " FROM backfill.dependencies d"
				  " WHERE d.downstream OPERATOR(pg_catalog.=) ANY ($1)"
				  " ORDER BY d.downstream::pg_catalog.text, d.upstream::pg_catalog.text",
				  1, argtypes, values, NULL, true, 0, SPI_OK_SELECT);
	for (k = 0; k < SPI_processed; k++)
	{
		bool		isnull;
		Oid			down = SpiGetOid(k, 1, &isnull);
		Oid			up = SpiGetOid(k, 2, &isnull);

		CHECK_FOR_INTERRUPTS();
		if (k == 0)
			appendStringInfoString(&e->out, "\n");
		if (!list_member_oid(e->targets, up))
			appendStringInfo(&e->out,
							 "-- %s depends on %s, which is not exported: register it, then\n"
							 "-- SELECT backfill.depend(%s, %s);\n",
							 QualifiedRelName(down), QualifiedRelName(up),
							 RelLiteral(down), RelLiteral(up));
		else
			appendStringInfo(&e->out, "SELECT backfill.depend(%s, %s);\n",
							 RelLiteral(down), RelLiteral(up));
	}
	SPI_freetuptable(SPI_tuptable);
}

/*
 * ExportSchedules
 *		The standing checks (with a pg_cron job) and refresh jobs of the
 *		exported targets, each scheduled only where the same one is not
 *		(NOT EXISTS on backfill.checks, backfill.refreshes); a refresh
 *		after its TimeZone and search_path (which it records from the
 *		session).  Caller is connected to SPI.
 */
static void
ExportSchedules(Export *e)
{
	Oid			argtypes[1] = {REGCLASSARRAYOID};
	Datum		values[1];
	uint64		k;

	values[0] = TargetsArray(e);
	SpiExecPinned("SELECT c.target::pg_catalog.oid, c.cron, c.lookback"
				  " FROM backfill.checks c"
				  " WHERE c.target OPERATOR(pg_catalog.=) ANY ($1)"
				  " AND c.job_id IS NOT NULL"
				  " ORDER BY c.target::pg_catalog.text, c.check_id",
				  1, argtypes, values, NULL, true, 0, SPI_OK_SELECT);
	for (k = 0; k < SPI_processed; k++)
	{
		bool		isnull;
		char	   *rel = RelLiteral(SpiGetOid(k, 1, &isnull));
		char	   *cron = Literal(SpiGetText(k, 2));
		char	   *lookback = IntervalColumn(k, 3);

		CHECK_FOR_INTERRUPTS();
		if (k == 0)
			appendStringInfoString(&e->out, "\n");
		appendStringInfo(&e->out,
						 "SELECT backfill.schedule_check(%s, %s, %s)\n"
						 " WHERE NOT EXISTS (SELECT FROM backfill.checks c\n"
						 "  WHERE c.target OPERATOR(pg_catalog.=) %s::pg_catalog.regclass\n"
						 "  AND c.cron OPERATOR(pg_catalog.=) %s::pg_catalog.text\n"
						 "  AND c.lookback OPERATOR(pg_catalog.=) %s\n"
						 "  AND c.job_id IS NOT NULL);\n",
						 rel, cron, lookback, rel, cron, lookback);
	}
	SPI_freetuptable(SPI_tuptable);

	SpiExecPinned("SELECT r.target::pg_catalog.oid, r.cron, r.quiet_hours,"
				  " r.lookback, r.cascade, r.missing, r.timezone, r.search_path"
				  " FROM backfill.refreshes r"
				  " WHERE r.target OPERATOR(pg_catalog.=) ANY ($1)"
				  " ORDER BY r.target::pg_catalog.text",
				  1, argtypes, values, NULL, true, 0, SPI_OK_SELECT);
	for (k = 0; k < SPI_processed; k++)
	{
		bool		isnull;
		char	   *rel = RelLiteral(SpiGetOid(k, 1, &isnull));
		char	   *cron = Literal(SpiGetText(k, 2));
		char	   *quiet = Literal(SpiGetText(k, 3));
		char	   *lookback = IntervalColumn(k, 4);
		const char *cascade = SpiGetBool(k, 5, &isnull) ? "true" : "false";
		const char *missing = SpiGetBool(k, 6, &isnull) ? "true" : "false";

		CHECK_FOR_INTERRUPTS();
		if (k == 0)
			appendStringInfoString(&e->out, "\n");
		SetSetting(e, "TimeZone", SpiGetText(k, 7), &e->timezone);
		SetSetting(e, "search_path", SpiGetText(k, 8), &e->search_path);
		appendStringInfo(&e->out,
						 "SELECT backfill.schedule_refresh(%s, %s, quiet_hours => %s,\n"
						 "    lookback => %s, cascade => %s, missing => %s)\n"
						 " WHERE NOT EXISTS (SELECT FROM backfill.refreshes r\n"
						 "  WHERE r.target OPERATOR(pg_catalog.=) %s::pg_catalog.regclass\n"
						 "  AND r.cron OPERATOR(pg_catalog.=) %s::pg_catalog.text\n"
						 "  AND r.quiet_hours IS NOT DISTINCT FROM %s::pg_catalog.text\n"
						 "  AND r.lookback OPERATOR(pg_catalog.=) %s\n"
						 "  AND r.cascade OPERATOR(pg_catalog.=) %s\n"
						 "  AND r.missing OPERATOR(pg_catalog.=) %s\n"
						 "  AND r.timezone OPERATOR(pg_catalog.=) pg_catalog.current_setting('TimeZone')\n"
						 "  AND r.search_path OPERATOR(pg_catalog.=) pg_catalog.current_setting('search_path'));\n",
						 rel, cron, quiet, lookback, cascade, missing,
						 rel, cron, quiet, lookback, cascade, missing);
	}
	SPI_freetuptable(SPI_tuptable);
}

/*
 * ExportDefinitions
 *		See backfill.h.  The script: a header, the registrations, the
 *		watches, the dependencies, the schedules, and the settings it set
 *		reset.  Caller is connected to SPI; the text is in the caller's
 *		memory context.
 */
char *
ExportDefinitions(ArrayType *targets)
{
	Export		e;

	memset(&e, 0, sizeof(e));
	initStringInfo(&e.out);
	appendStringInfoString(&e.out,
						   "-- backfill: the current definitions, watches, dependencies and schedules\n"
						   "-- of the targets below (backfill.export_definitions).  Running this\n"
						   "-- script registers them; where they are registered so already, it\n"
						   "-- changes nothing.\n");
	ExportTargets(&e, targets);
	if (e.targets == NIL)
		return e.out.data;
	ExportWatches(&e);
	ExportDependencies(&e);
	ExportSchedules(&e);
	if (e.timezone != NULL)
		appendStringInfoString(&e.out, "RESET TimeZone;\n");
	if (e.search_path != NULL)
		appendStringInfoString(&e.out, "RESET search_path;\n");
	return e.out.data;
}
