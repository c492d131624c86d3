/*-------------------------------------------------------------------------
 *
 * reconcile.c
 *	  Checking a target against its ledger and against its neighbours:
 *	  the ledger figure and agreement helpers used by the gate inside each
 *	  chunk (run.c), backfill.reconcile(run_id), backfill.check(target,
 *	  range), and the standing rule: schedule_check, unschedule_check and
 *	  run_check, which append to backfill.check_results.
 *
 * The comparison reads the target in ONE grouped query over the whole
 * range plus the neighbour chunks on either side: rows are put into chunks
 * with width_bucket() over the array of chunk bounds (a binary search per
 * row, no join).  The ledger is an opaque query over ($1, $2) returning
 * one number, so it cannot be grouped: it is prepared once and executed
 * once per compared chunk (see doc/rec.md for what that costs).
 *
 * Measures and ledgers run as the calling user; catalog rows are read and
 * written through CatalogExec as the extension owner.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "common/int.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "parser/parse_coerce.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_reconcile);
PG_FUNCTION_INFO_V1(backfill_check);
PG_FUNCTION_INFO_V1(backfill_schedule_check);
PG_FUNCTION_INFO_V1(backfill_unschedule_check);
PG_FUNCTION_INFO_V1(backfill_run_check);

/* Verdicts, as in the CHECK constraint of backfill.chunks. */
#define VERDICT_OK				"ok"
#define VERDICT_LEDGER_MISMATCH	"ledger_mismatch"
#define VERDICT_OUTLIER			"outlier"
#define VERDICT_NO_SOURCE		"no_source"
#define VERDICT_NOT_RUN			"not_run"

/* Columns of reconcile() and check(). */
#define REC_NATTS 10

/*
 * What the comparison needs to know about a target: one version of its
 * definition (backfill.definitions) and that version's author.
 */
typedef struct RecTarget
{
	Oid			relid;
	int32		version;
	Oid			author;
	char	   *time_column;
	char	   *measure;
	char	   *ledger;			/* NULL when the target has none */
	Datum		tolerance;		/* numeric */
	Interval   *chunk;
	Interval   *retention;		/* NULL when none */
	char	   *horizon;		/* query text, NULL when none */
} RecTarget;

/*
 * One compared chunk and its figures.  "compare" chunks are checked
 * against the ledger and the neighbours; no_source and not_run chunks are
 * reported but left out of every comparison.
 */
typedef struct RecChunk
{
	int32		chunk_no;
	TimestampTz start;
	TimestampTz end;
	char	   *status;			/* chunk or lineage status, may be NULL */
	bool		compare;
	const char *verdict;
	Datum		target_value;
	bool		target_null;
	Datum		ledger_value;
	bool		ledger_null;
	bool		ledger_ok;
	bool		ledger_ok_null;
	Datum		neighbor_median;
	bool		median_null;
	bool		neighbor_ok;
	bool		neighbor_ok_null;
} RecChunk;

/*
 * LedgerFromResult
 *		The single value of the ledger query's result in SPI_tuptable, as
 *		numeric, copied into the upper executor context.
 */
static Datum
LedgerFromResult(bool *isnull)
{
	Datum		result;
	Oid			typid;

	if (SPI_processed > 1)
		ereport(ERROR,
				(errcode(ERRCODE_CARDINALITY_VIOLATION),
				 errmsg("ledger query returned more than one row"),
				 errdetail("The ledger must return one number for the range [$1, $2)."),
				 errhint("Aggregate the ledger, for example SELECT count(*) FROM ledger WHERE ts >= $1 AND ts < $2.")));
	if (SPI_processed == 0)
	{
		*isnull = true;
		return (Datum) 0;
	}
	if (SPI_tuptable->tupdesc->natts != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("ledger query must return exactly one column")));
	result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
						   isnull);
	if (*isnull)
		return (Datum) 0;
	typid = SPI_gettypeid(SPI_tuptable->tupdesc, 1);
	if (typid != NUMERICOID)
	{
		Oid			castfunc;
		CoercionPathType path;

		path = find_coercion_pathway(NUMERICOID, typid, COERCION_EXPLICIT,
									 &castfunc);
		if (path != COERCION_PATH_FUNC || !OidIsValid(castfunc))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("ledger query must return a number, not type %s",
							format_type_be(typid))));
		result = OidFunctionCall1(castfunc, result);
	}
	return SPI_datumTransfer(result, false, -1);
}

/*
 * LedgerValue
 *		Run the (validated) ledger query for [lo, hi) as the current user,
 *		read-only, and return its single value as numeric.
 *
 * The caller must be connected to SPI.  The result is copied into the
 * memory context that was current before SPI was connected (the upper
 * executor context), so it survives SPI_finish.  More than one row is an
 * error; no row or a NULL gives *isnull.
 */
Datum
LedgerValue(const char *ledger, TimestampTz lo, TimestampTz hi, bool *isnull)
{
	Oid			argtypes[2] = {TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[2];
	Datum		result;

	values[0] = TimestampTzGetDatum(lo);
	values[1] = TimestampTzGetDatum(hi);
	SpiExec(ledger, 2, argtypes, values, NULL, true, 2, SPI_OK_SELECT);
	result = LedgerFromResult(isnull);
	SPI_freetuptable(SPI_tuptable);
	return result;
}

/*
 * LedgerAgrees
 *		|measure - ledger| <= tolerance * |ledger|, all numeric.
 */
bool
LedgerAgrees(Datum measure, Datum ledger, Datum tolerance)
{
	Datum		diff;
	Datum		allowed;

	diff = DirectFunctionCall1(numeric_abs,
							   DirectFunctionCall2(numeric_sub, measure, ledger));
	allowed = DirectFunctionCall2(numeric_mul, tolerance,
								  DirectFunctionCall1(numeric_abs, ledger));
	return DatumGetBool(DirectFunctionCall2(numeric_le, diff, allowed));
}

/*
 * LedgerCompare
 *		See backfill.h: LedgerAgrees where a NULL on either side (an
 *		aggregate such as sum() over no rows) counts as 0, as in the gate
 *		(run.c): a chunk emptied by a bad source disagrees with a non-zero
 *		ledger, and a ledger with no entries disagrees with a chunk that
 *		has some.
 */
bool
LedgerCompare(Datum measure, bool measure_null, Datum ledger,
			  bool ledger_null, Datum tolerance)
{
	Datum		zero = NumericGetDatum(int64_to_numeric(0));

	return LedgerAgrees(measure_null ? zero : measure,
						ledger_null ? zero : ledger, tolerance);
}

/*
 * ShiftBound
 *		bound + k * step (k may be negative), with the calendar arithmetic
 *		of split_range: the interval k * step is added once, in the session
 *		TimeZone.
 */
static TimestampTz
ShiftBound(TimestampTz bound, Interval *step, int k)
{
	Interval	kstep;
	int64		months = (int64) step->month * k;
	int64		days = (int64) step->day * k;

	if (months > PG_INT32_MAX || months < PG_INT32_MIN ||
		days > PG_INT32_MAX || days < PG_INT32_MIN ||
		pg_mul_s64_overflow(step->time, (int64) k, &kstep.time))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("neighbor chunk bound out of range")));
	kstep.month = (int32) months;
	kstep.day = (int32) days;
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
												   TimestampTzGetDatum(bound),
												   IntervalPGetDatum(&kstep)));
}

/*
 * MakeArray
 *		A one-dimensional array of n elements of type elemtype.
 */
static Datum
MakeArray(Datum *elems, bool *nulls, int n, Oid elemtype)
{
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			dims[1];
	int			lbs[1];

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	dims[0] = n;
	lbs[0] = 1;
	return PointerGetDatum(construct_md_array(elems, nulls, 1, dims, lbs,
											  elemtype, typlen, typbyval,
											  typalign));
}

/*
 * NumericCmp
 *		qsort comparator over numeric Datums.
 */
static int
NumericCmp(const void *a, const void *b)
{
	return DatumGetInt32(DirectFunctionCall2(numeric_cmp,
											 *(const Datum *) a,
											 *(const Datum *) b));
}

/*
 * Median
 *		The median of n numeric values (n > 0); sorts them in place.  For
 *		an even n, the mean of the middle two, as (a + b) * 0.5 so that the
 *		scale grows by one digit only.
 */
static Datum
Median(Datum *values, int n)
{
	qsort(values, n, sizeof(Datum), NumericCmp);
	if (n % 2 == 1)
		return values[n / 2];
	return DirectFunctionCall2(numeric_mul,
							   DirectFunctionCall2(numeric_add,
												   values[n / 2 - 1],
												   values[n / 2]),
							   DirectFunctionCall3(numeric_in,
												   CStringGetDatum("0.5"),
												   ObjectIdGetDatum(InvalidOid),
												   Int32GetDatum(-1)));
}

/*
 * RelDisplayName
 *		schema.table of relid, quoted as needed, for messages.
 */
static char *
RelDisplayName(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/*
 * CheckSelectPrivilege
 *		The caller must be able to read the target (42501), which must
 *		still exist (42P01).
 */
static void
CheckSelectPrivilege(Oid relid)
{
	AclResult	aclresult;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("target table with OID %u does not exist", relid)));
	aclresult = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE, get_rel_name(relid));
}

/*
 * ReadTarget
 *		Definition "version" of relid (0: its current version), or a 42704
 *		error when it is not registered.  The caller is connected to SPI;
 *		the strings live in the SPI procedure context.
 */
static RecTarget *
ReadTarget(Oid relid, int32 version)
{
	Oid			argtypes[2] = {REGCLASSOID, INT4OID};
	Datum		values[2];
	RecTarget  *t;
	bool		isnull;
	Datum		d;

	values[0] = ObjectIdGetDatum(relid);
	values[1] = Int32GetDatum(version);
	CatalogExec("SELECT d.time_column::pg_catalog.text, d.measure, d.ledger,"
				" d.tolerance, d.chunk, d.source_retention, d.source_horizon,"
				" d.version, d.author"
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
						RelDisplayName(relid)),
				 errhint("Register it with backfill.register().")));
	t = palloc0(sizeof(RecTarget));
	t->relid = relid;
	t->time_column = SpiGetText(0, 1);
	t->measure = SpiGetText(0, 2);
	t->ledger = SpiGetText(0, 3);
	t->tolerance = SpiGetDatumCopy(0, 4, &isnull);
	if (isnull)
		t->tolerance = NumericGetDatum(int64_to_numeric(0));
	d = SpiGetDatumCopy(0, 5, &isnull);
	t->chunk = DatumGetIntervalP(d);
	d = SpiGetDatumCopy(0, 6, &isnull);
	t->retention = isnull ? NULL : DatumGetIntervalP(d);
	t->horizon = SpiGetText(0, 7);
	t->version = SpiGetInt32(0, 8, &isnull);
	t->author = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 9,
											   &isnull));
	return t;
}

/*
 * CompareChunks
 *		Fill in the figures and verdicts of the n chunks (contiguous, in
 *		time order) of target t, whose neighbours are chunks of "step" on
 *		either side.  The caller is connected to SPI; results are allocated
 *		in the current memory context.
 *
 * One grouped query reads the target over [first neighbour, last
 * neighbour): bucket i of width_bucket(time, bounds) is chunk i of the
 * array (neighbours before, the chunks, neighbours after).  The ledger is
 * prepared once and executed per compared chunk.
 */
static void
CompareChunks(RecTarget *t, RecChunk *chunks, int n, Interval *step)
{
	int			nb = backfill_neighbor_chunks;
	int			nbuckets = n + 2 * nb;
	TimestampTz *bounds;
	Datum	   *bound_datums;
	bool	   *has_rows;
	Datum	   *bucket_value;
	bool	   *bucket_null;
	Datum	   *neighbours;
	int			nneighbours = 0;
	Datum		median = (Datum) 0;
	bool		have_median = false;
	Datum		empty_value = (Datum) 0;
	bool		empty_null = true;
	bool		have_empty = false;
	Datum		ntolerance;
	char	   *relname;
	char	   *tc;
	StringInfoData sql;
	Oid			argtypes[3] = {TIMESTAMPTZOID, TIMESTAMPTZOID, TIMESTAMPTZARRAYOID};
	Datum		values[3];
	uint64		i;
	int			k;
	SPIPlanPtr	ledger_plan = NULL;

	/* bounds: nb neighbours before, the n chunks, nb neighbours after */
	bounds = palloc(sizeof(TimestampTz) * (nbuckets + 1));
	for (k = 0; k < nb; k++)
		bounds[k] = ShiftBound(chunks[0].start, step, -(nb - k));
	for (k = 0; k < n; k++)
	{
		if (k > 0 && chunks[k].start != chunks[k - 1].end)
			elog(ERROR, "backfill: chunks %d and %d are not contiguous",
				 chunks[k - 1].chunk_no, chunks[k].chunk_no);
		bounds[nb + k] = chunks[k].start;
	}
	bounds[nb + n] = chunks[n - 1].end;
	for (k = 1; k <= nb; k++)
		bounds[nb + n + k] = ShiftBound(chunks[n - 1].end, step, k);
	for (k = 1; k <= nbuckets; k++)
		if (bounds[k] <= bounds[k - 1])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("chunk interval does not advance from %s",
							timestamptz_to_str(bounds[k - 1])),
					 errdetail("The neighbor chunks of the range cannot be laid out with this chunk interval.")));

	bound_datums = palloc(sizeof(Datum) * (nbuckets + 1));
	for (k = 0; k <= nbuckets; k++)
		bound_datums[k] = TimestampTzGetDatum(bounds[k]);

	/* the one grouped pass over the target */
	relname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(t->relid)),
										 get_rel_name(t->relid));
	tc = (char *) quote_identifier(t->time_column);
	initStringInfo(&sql);
	appendStringInfoString(&sql,
						   ComposeMeasureSelect(psprintf("pg_catalog.width_bucket(CAST(%s AS pg_catalog.timestamptz), $3)",
														 tc),
												t->measure, relname,
												psprintf("WHERE %s OPERATOR(pg_catalog.>=) $1"
														 " AND %s OPERATOR(pg_catalog.<) $2"
														 " GROUP BY 1", tc, tc)));
	values[0] = bound_datums[0];
	values[1] = bound_datums[nbuckets];
	values[2] = MakeArray(bound_datums, NULL, nbuckets + 1, TIMESTAMPTZOID);
	SpiExec(sql.data, 3, argtypes, values, NULL, true, 0, SPI_OK_SELECT);

	has_rows = palloc0(sizeof(bool) * (nbuckets + 1));
	bucket_value = palloc0(sizeof(Datum) * (nbuckets + 1));
	bucket_null = palloc0(sizeof(bool) * (nbuckets + 1));
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		int32		b = SpiGetInt32(i, 1, &isnull);

		if (isnull || b < 1 || b > nbuckets)
			continue;			/* cannot happen given the WHERE */
		has_rows[b] = true;
		bucket_value[b] = SpiGetDatumCopy(i, 2, &bucket_null[b]);
	}
	SPI_freetuptable(SPI_tuptable);

	/* neighbour median over the neighbours that have rows */
	neighbours = palloc(sizeof(Datum) * (2 * nb + 1));
	for (k = 1; k <= nbuckets; k++)
	{
		if (k > nb && k <= nb + n)
			continue;
		if (has_rows[k] && !bucket_null[k])
			neighbours[nneighbours++] = bucket_value[k];
	}
	if (nneighbours > 0)
	{
		median = Median(neighbours, nneighbours);
		have_median = true;
	}
	ntolerance = DirectFunctionCall1(float8_numeric,
									 Float8GetDatum(backfill_neighbor_tolerance));

	if (t->ledger != NULL)
	{
		Oid			largs[2] = {TIMESTAMPTZOID, TIMESTAMPTZOID};

		for (k = 0; k < n; k++)
			if (chunks[k].compare)
				break;
		if (k < n)
		{
			ledger_plan = SPI_prepare(t->ledger, 2, largs);
			if (ledger_plan == NULL)
				elog(ERROR, "backfill: could not prepare the ledger query: %s",
					 SPI_result_code_string(SPI_result));
		}
	}

	for (k = 0; k < n; k++)
	{
		RecChunk   *c = &chunks[k];
		int			b = nb + k + 1;

		c->target_null = c->ledger_null = c->median_null = true;
		c->ledger_ok_null = c->neighbor_ok_null = true;

		if (!c->compare)
		{
			/* not_run chunks still show what the target holds now */
			if (strcmp(c->verdict, VERDICT_NOT_RUN) == 0 && has_rows[b])
			{
				c->target_value = bucket_value[b];
				c->target_null = bucket_null[b];
			}
			continue;
		}

		CHECK_FOR_INTERRUPTS();

		if (has_rows[b])
		{
			c->target_value = bucket_value[b];
			c->target_null = bucket_null[b];
		}
		else
		{
			/* the measure over no rows: count(*) gives 0, sum() NULL */
			if (!have_empty)
			{
				resetStringInfo(&sql);
				appendStringInfoString(&sql,
									   ComposeMeasureSelect(NULL, t->measure,
															relname, "WHERE false"));
				SpiExec(sql.data, 0, NULL, NULL, NULL, true, 0, SPI_OK_SELECT);
				if (SPI_processed == 1)
					empty_value = SpiGetDatumCopy(0, 1, &empty_null);
				SPI_freetuptable(SPI_tuptable);
				have_empty = true;
			}
			c->target_value = empty_value;
			c->target_null = empty_null;
		}

		if (ledger_plan != NULL)
		{
			Datum		lvalues[2];
			int			rc;

			lvalues[0] = TimestampTzGetDatum(c->start);
			lvalues[1] = TimestampTzGetDatum(c->end);
			rc = SPI_execute_plan(ledger_plan, lvalues, NULL, true, 2);
			if (rc != SPI_OK_SELECT)
				elog(ERROR, "backfill: ledger query returned %s",
					 SPI_result_code_string(rc));
			c->ledger_value = LedgerFromResult(&c->ledger_null);
			SPI_freetuptable(SPI_tuptable);
			c->ledger_ok = LedgerCompare(c->target_value, c->target_null,
										 c->ledger_value, c->ledger_null,
										 t->tolerance);
			c->ledger_ok_null = false;
		}

		if (have_median)
		{
			c->neighbor_median = median;
			c->median_null = false;
			c->neighbor_ok = LedgerCompare(c->target_value, c->target_null,
										   median, false, ntolerance);
			c->neighbor_ok_null = false;
		}

		if (!c->ledger_ok_null && !c->ledger_ok)
			c->verdict = VERDICT_LEDGER_MISMATCH;
		else if (!c->neighbor_ok_null && !c->neighbor_ok)
			c->verdict = VERDICT_OUTLIER;
		else
			c->verdict = VERDICT_OK;
	}

	if (ledger_plan != NULL)
		SPI_freeplan(ledger_plan);
}

/*
 * EmitChunks
 *		Put the n chunks into the materialized result of reconcile/check.
 */
static void
EmitChunks(FunctionCallInfo fcinfo, RecChunk *chunks, int n)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			k;

	for (k = 0; k < n; k++)
	{
		RecChunk   *c = &chunks[k];
		Datum		values[REC_NATTS];
		bool		nulls[REC_NATTS];

		memset(nulls, 0, sizeof(nulls));
		values[0] = Int32GetDatum(c->chunk_no);
		values[1] = TimestampTzGetDatum(c->start);
		values[2] = TimestampTzGetDatum(c->end);
		if (c->status != NULL)
			values[3] = CStringGetTextDatum(c->status);
		else
			nulls[3] = true;
		values[4] = c->target_value;
		nulls[4] = c->target_null;
		values[5] = c->ledger_value;
		nulls[5] = c->ledger_null;
		values[6] = BoolGetDatum(c->ledger_ok);
		nulls[6] = c->ledger_ok_null;
		values[7] = c->neighbor_median;
		nulls[7] = c->median_null;
		values[8] = BoolGetDatum(c->neighbor_ok);
		nulls[8] = c->neighbor_ok_null;
		if (c->verdict != NULL)
			values[9] = CStringGetTextDatum(c->verdict);
		else
			nulls[9] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * HorizonAsAuthor / CompareAsAuthor
 *		SourceHorizon and CompareChunks inside an entered author gate; on
 *		error the caller's user id is restored before the error goes on.
 */
static bool
HorizonAsAuthor(AuthorGate *gate, RecTarget *t, TimestampTz *horizon)
{
	bool		have = false;

	PG_TRY();
	{
		have = SourceHorizon(t->retention, t->horizon, horizon);
	}
	PG_CATCH();
	{
		AuthorGateAbort(gate);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return have;
}

static void
CompareAsAuthor(AuthorGate *gate, RecTarget *t, RecChunk *chunks, int n,
				Interval *step)
{
	PG_TRY();
	{
		CompareChunks(t, chunks, n, step);
	}
	PG_CATCH();
	{
		AuthorGateAbort(gate);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/*
 * backfill_reconcile
 *		reconcile(run_id) -> setof (chunk_no, chunk_start, chunk_end, status,
 *		target_value, ledger_value, ledger_ok, neighbor_median, neighbor_ok,
 *		verdict)
 *
 * Compares every done chunk of the run with the ledger and with the
 * neighbour chunks around the run's range, under the run's TimeZone and
 * search_path, and stores the figures and verdicts of the done and
 * no_source chunks in one UPDATE.  Chunks that have not run (pending,
 * failed, cancelled) are reported as not_run and their stored figures
 * (for a failed chunk: what the gate found) are left as they are.
 */
Datum
backfill_reconcile(PG_FUNCTION_ARGS)
{
	int64		run_id;
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	bool		isnull;
	Oid			relid;
	bool		registered;
	Interval   *step;
	char	   *timezone;
	char	   *search_path;
	RecTarget  *t;
	RecChunk   *chunks;
	int			n;
	int			k;
	int			nstore = 0;
	int32		version;
	Oid			planner;
	AuthorGate	gate;

	RequireArg(fcinfo, 0, "run_id", NULL);
	run_id = PG_GETARG_INT64(0);
	InitMaterializedSRF(fcinfo, 0);

	SPI_connect();

	values[0] = Int64GetDatum(run_id);
	CatalogExec("SELECT r.target::pg_catalog.oid, r.chunk, r.timezone, r.search_path,"
				" t.target IS NOT NULL, r.definition_version, r.created_by_oid"
				" FROM backfill.runs r LEFT JOIN backfill.targets t"
				" ON t.target OPERATOR(pg_catalog.=) r.target"
				" WHERE r.run_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("run %lld does not exist", (long long) run_id)));
	relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 1, &isnull));
	step = DatumGetIntervalP(SpiGetDatumCopy(0, 2, &isnull));
	timezone = SpiGetText(0, 3);
	search_path = SpiGetText(0, 4);
	registered = SpiGetBool(0, 5, &isnull);
	version = SpiGetInt32(0, 6, &isnull);
	planner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
											 SPI_tuptable->tupdesc, 7, &isnull));

	CheckRunVisible(run_id, relid, planner);
	CheckSelectPrivilege(relid);
	if (!registered)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table %s is no longer registered for backfill",
						RelDisplayName(relid)),
				 errdetail("Without its registration the measure and the ledger of run %lld are unknown.",
						   (long long) run_id)));
	t = ReadTarget(relid, version);

	/*
	 * Only the planner (or a role with its privileges) recomputes and
	 * stores verdicts; anyone else who can see the run reads the stored
	 * ones, and no user text runs for them.
	 */
	if (!HasRunPermission(planner))
	{
		ereport(NOTICE,
				(errmsg("verdicts of run %lld were not recomputed", (long long) run_id),
				 errdetail("Only the role that planned the run, or a role with its privileges, may reconcile it; these are the verdicts stored by its last reconcile.")));
		CatalogExec("SELECT chunk_no, chunk_start, chunk_end, status, after_value,"
					" ledger_value, ledger_ok, neighbor_median, neighbor_ok, verdict"
					" FROM backfill.chunks WHERE run_id OPERATOR(pg_catalog.=) $1"
					" ORDER BY chunk_no",
					1, argtypes, values, NULL, SPI_OK_SELECT);
		n = (int) SPI_processed;
		chunks = palloc0(sizeof(RecChunk) * n);
		for (k = 0; k < n; k++)
		{
			RecChunk   *c = &chunks[k];

			c->chunk_no = SpiGetInt32(k, 1, &isnull);
			c->start = DatumGetTimestampTz(SpiGetDatumCopy(k, 2, &isnull));
			c->end = DatumGetTimestampTz(SpiGetDatumCopy(k, 3, &isnull));
			c->status = SpiGetText(k, 4);
			c->target_value = SpiGetDatumCopy(k, 5, &c->target_null);
			c->ledger_value = SpiGetDatumCopy(k, 6, &c->ledger_null);
			c->ledger_ok = SpiGetBool(k, 7, &c->ledger_ok_null);
			c->neighbor_median = SpiGetDatumCopy(k, 8, &c->median_null);
			c->neighbor_ok = SpiGetBool(k, 9, &c->neighbor_ok_null);
			c->verdict = SpiGetText(k, 10);
		}
		EmitChunks(fcinfo, chunks, n);
		SPI_finish();
		return (Datum) 0;
	}

	CatalogExec("SELECT chunk_no, chunk_start, chunk_end, status"
				" FROM backfill.chunks WHERE run_id OPERATOR(pg_catalog.=) $1"
				" ORDER BY chunk_no",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	n = (int) SPI_processed;
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run %lld has no chunks", (long long) run_id)));
	chunks = palloc0(sizeof(RecChunk) * n);
	for (k = 0; k < n; k++)
	{
		RecChunk   *c = &chunks[k];

		c->chunk_no = SpiGetInt32(k, 1, &isnull);
		c->start = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[k],
													 SPI_tuptable->tupdesc, 2, &isnull));
		c->end = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[k],
												   SPI_tuptable->tupdesc, 3, &isnull));
		c->status = SpiGetText(k, 4);
		if (strcmp(c->status, "done") == 0)
		{
			c->compare = true;
			c->verdict = VERDICT_OK;
		}
		else if (strcmp(c->status, "no_source") == 0)
			c->verdict = VERDICT_NO_SOURCE;
		else
			c->verdict = VERDICT_NOT_RUN;
	}
	SPI_freetuptable(SPI_tuptable);

	/* the run's pinned text, as its author, under the run's settings */
	AuthorGateEnter(&gate, t->author, relid, t->version, search_path, timezone);
	CompareAsAuthor(&gate, t, chunks, n, step);
	AuthorGateLeave(&gate);

	/* store the figures of the done and no_source chunks in one UPDATE */
	for (k = 0; k < n; k++)
		if (chunks[k].compare || strcmp(chunks[k].verdict, VERDICT_NO_SOURCE) == 0)
			nstore++;
	if (nstore > 0)
	{
		Datum	   *nos = palloc(sizeof(Datum) * nstore);
		Datum	   *lv = palloc(sizeof(Datum) * nstore);
		bool	   *lvn = palloc(sizeof(bool) * nstore);
		Datum	   *lok = palloc(sizeof(Datum) * nstore);
		bool	   *lokn = palloc(sizeof(bool) * nstore);
		Datum	   *nm = palloc(sizeof(Datum) * nstore);
		bool	   *nmn = palloc(sizeof(bool) * nstore);
		Datum	   *nok = palloc(sizeof(Datum) * nstore);
		bool	   *nokn = palloc(sizeof(bool) * nstore);
		Datum	   *vd = palloc(sizeof(Datum) * nstore);
		Oid			utypes[7] = {INT8OID, INT4ARRAYOID, NUMERICARRAYOID,
		BOOLARRAYOID, NUMERICARRAYOID, BOOLARRAYOID, TEXTARRAYOID};
		Datum		uvalues[7];
		int			j = 0;

		for (k = 0; k < n; k++)
		{
			RecChunk   *c = &chunks[k];

			if (!(c->compare || strcmp(c->verdict, VERDICT_NO_SOURCE) == 0))
				continue;
			nos[j] = Int32GetDatum(c->chunk_no);
			lv[j] = c->ledger_value;
			lvn[j] = c->ledger_null;
			lok[j] = BoolGetDatum(c->ledger_ok);
			lokn[j] = c->ledger_ok_null;
			nm[j] = c->neighbor_median;
			nmn[j] = c->median_null;
			nok[j] = BoolGetDatum(c->neighbor_ok);
			nokn[j] = c->neighbor_ok_null;
			vd[j] = CStringGetTextDatum(c->verdict);
			j++;
		}
		uvalues[0] = Int64GetDatum(run_id);
		uvalues[1] = MakeArray(nos, NULL, nstore, INT4OID);
		uvalues[2] = MakeArray(lv, lvn, nstore, NUMERICOID);
		uvalues[3] = MakeArray(lok, lokn, nstore, BOOLOID);
		uvalues[4] = MakeArray(nm, nmn, nstore, NUMERICOID);
		uvalues[5] = MakeArray(nok, nokn, nstore, BOOLOID);
		uvalues[6] = MakeArray(vd, NULL, nstore, TEXTOID);
		CatalogExec("UPDATE backfill.chunks c"
					" SET ledger_value = u.ledger_value, ledger_ok = u.ledger_ok,"
					" neighbor_median = u.neighbor_median,"
					" neighbor_ok = u.neighbor_ok, verdict = u.verdict"
					" FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3),"
					" pg_catalog.unnest($4), pg_catalog.unnest($5),"
					" pg_catalog.unnest($6), pg_catalog.unnest($7))"
					" AS u(chunk_no, ledger_value, ledger_ok, neighbor_median,"
					" neighbor_ok, verdict)"
					" WHERE c.run_id OPERATOR(pg_catalog.=) $1"
					" AND c.chunk_no OPERATOR(pg_catalog.=) u.chunk_no"
					" AND c.status OPERATOR(pg_catalog.=) ANY ('{done,no_source}'::pg_catalog.text[])",
					7, utypes, uvalues, NULL, SPI_OK_UPDATE);
	}

	EmitChunks(fcinfo, chunks, n);
	SPI_finish();
	return (Datum) 0;
}

/*
 * CheckRange
 *		The comparison of check() for [start, end) of target relid, chunked
 *		by the target's chunk interval in the session TimeZone.  Returns
 *		the number of chunks and sets *out.  The caller is connected to SPI.
 *
 * status is the lineage of the chunk: the status (done or no_source) of
 * the latest finished backfill chunk of the target overlapping it, NULL
 * when no backfill touched it.  A chunk is no_source when it starts before
 * the source horizon or its lineage says no_source; every other chunk is
 * compared.
 */
static int
CheckRange(Oid relid, TimestampTz start, bool start_null,
		   TimestampTz end, bool end_null, RecChunk **out)
{
	RecTarget  *t;
	TimestampTz *bounds;
	TimestampTz horizon = 0;
	bool		have_horizon;
	RecChunk   *chunks;
	int			n;
	int			k;
	uint64		i;
	Datum	   *los;
	Datum	   *his;
	Oid			argtypes[3] = {REGCLASSOID, TIMESTAMPTZARRAYOID, TIMESTAMPTZARRAYOID};
	Datum		values[3];
	AuthorGate	gate;

	CheckSelectPrivilege(relid);
	t = ReadTarget(relid, 0);
	n = ComputeChunkBounds(start, start_null, end, end_null, t->chunk, false,
						   &bounds);

	/* the current version's text, as its author, under the session's settings */
	AuthorGateEnter(&gate, t->author, relid, t->version,
					GetConfigOption("search_path", false, false),
					GetConfigOption("TimeZone", false, false));
	have_horizon = HorizonAsAuthor(&gate, t, &horizon);

	chunks = palloc0(sizeof(RecChunk) * n);
	los = palloc(sizeof(Datum) * n);
	his = palloc(sizeof(Datum) * n);
	for (k = 0; k < n; k++)
	{
		chunks[k].chunk_no = k + 1;
		chunks[k].start = bounds[k];
		chunks[k].end = bounds[k + 1];
		los[k] = TimestampTzGetDatum(bounds[k]);
		his[k] = TimestampTzGetDatum(bounds[k + 1]);
	}

	/* lineage of every chunk in one query */
	values[0] = ObjectIdGetDatum(relid);
	values[1] = MakeArray(los, NULL, n, TIMESTAMPTZOID);
	values[2] = MakeArray(his, NULL, n, TIMESTAMPTZOID);
	CatalogExec("SELECT DISTINCT ON (b.i) b.i::pg_catalog.int4, c.status"
				" FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3))"
				" WITH ORDINALITY AS b(lo, hi, i)"
				" JOIN backfill.chunks c"
				" ON c.chunk_start OPERATOR(pg_catalog.<) b.hi"
				" AND c.chunk_end OPERATOR(pg_catalog.>) b.lo"
				" AND c.status OPERATOR(pg_catalog.=) ANY ('{done,no_source}'::pg_catalog.text[])"
				" JOIN backfill.runs r ON r.run_id OPERATOR(pg_catalog.=) c.run_id"
				" WHERE r.target OPERATOR(pg_catalog.=) $1"
				" ORDER BY b.i, c.finished_at DESC NULLS LAST, c.run_id DESC",
				3, argtypes, values, NULL, SPI_OK_SELECT);
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		int32		b = SpiGetInt32(i, 1, &isnull);

		if (b >= 1 && b <= n)
			chunks[b - 1].status = SpiGetText(i, 2);
	}
	SPI_freetuptable(SPI_tuptable);

	for (k = 0; k < n; k++)
	{
		RecChunk   *c = &chunks[k];

		if ((have_horizon && c->start < horizon) ||
			(c->status != NULL && strcmp(c->status, "no_source") == 0))
			c->verdict = VERDICT_NO_SOURCE;
		else
		{
			c->compare = true;
			c->verdict = VERDICT_OK;
		}
	}

	CompareAsAuthor(&gate, t, chunks, n, t->chunk);
	AuthorGateLeave(&gate);
	*out = chunks;
	return n;
}

/*
 * backfill_check
 *		check(target, range_start, range_end) -> the columns of reconcile
 *
 * The comparison of reconcile for any range of a registered target,
 * chunked by its chunk interval in the session TimeZone; stores nothing.
 */
Datum
backfill_check(PG_FUNCTION_ARGS)
{
	RecChunk   *chunks;
	int			n;

	RequireArg(fcinfo, 0, "target", NULL);
	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	n = CheckRange(PG_GETARG_OID(0),
				   PG_ARGISNULL(1) ? 0 : PG_GETARG_TIMESTAMPTZ(1), PG_ARGISNULL(1),
				   PG_ARGISNULL(2) ? 0 : PG_GETARG_TIMESTAMPTZ(2), PG_ARGISNULL(2),
				   &chunks);
	EmitChunks(fcinfo, chunks, n);
	SPI_finish();
	return (Datum) 0;
}

/*
 * backfill_schedule_check
 *		schedule_check(target, cron, lookback) -> the pg_cron job id
 *
 * Records the standing check in backfill.checks (as the extension owner)
 * and creates, as the calling user, a pg_cron job named
 * backfill_check_<check_id> whose command is exactly
 * SELECT backfill.run_check(<check_id>).
 */
Datum
backfill_schedule_check(PG_FUNCTION_ARGS)
{
	Oid			relid;
	text	   *cron;
	Interval   *lookback;
	Interval	zero = {0, 0, 0};
	int64		check_id;
	int64		job_id;
	bool		isnull;
	Oid			itypes[5] = {REGCLASSOID, TEXTOID, INTERVALOID, NAMEOID, OIDOID};
	Datum		ivalues[5];
	Oid			stypes[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		svalues[3];
	Oid			utypes[2] = {INT8OID, INT8OID};
	Datum		uvalues[2];
	char	   *jobname;
	char	   *command;

	RequireArg(fcinfo, 0, "target", NULL);
	RequireArg(fcinfo, 1, "cron schedule", "Give a cron expression such as '0 6 * * *'.");
	RequireArg(fcinfo, 2, "lookback", NULL);
	relid = PG_GETARG_OID(0);
	cron = PG_GETARG_TEXT_PP(1);
	lookback = PG_GETARG_INTERVAL_P(2);
	if (DatumGetInt32(DirectFunctionCall2(interval_cmp,
										  IntervalPGetDatum(lookback),
										  IntervalPGetDatum(&zero))) <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lookback must be positive")));

	RequirePgCron("Standing checks are pg_cron jobs; backfill itself works without pg_cron.");
	SPI_connect();
	CheckSelectPrivilege(relid);
	{
		RecTarget  *t = ReadTarget(relid, 0);

		/* its ticks will run the current version's text as its author */
		CheckAuthor(t->author, relid, t->version);
	}

	ivalues[0] = ObjectIdGetDatum(relid);
	ivalues[1] = PointerGetDatum(cron);
	ivalues[2] = IntervalPGetDatum(lookback);
	ivalues[3] = DirectFunctionCall1(namein, CStringGetDatum(CurrentUserName()));
	ivalues[4] = ObjectIdGetDatum(GetUserId());
	CatalogExec("INSERT INTO backfill.checks (target, cron, lookback, created_by,"
				" created_by_oid)"
				" VALUES ($1, $2, $3, $4, $5) RETURNING check_id",
				5, itypes, ivalues, NULL, SPI_OK_INSERT_RETURNING);
	check_id = SpiGetInt64(0, 1, &isnull);

	/* the job belongs to the caller: schedule it as the caller */
	jobname = psprintf("backfill_check_" INT64_FORMAT, check_id);
	command = psprintf("SELECT backfill.run_check(" INT64_FORMAT ")", check_id);
	svalues[0] = CStringGetTextDatum(jobname);
	svalues[1] = PointerGetDatum(cron);
	svalues[2] = CStringGetTextDatum(command);
	SpiExec("SELECT cron.schedule($1, $2, $3)", 3, stypes, svalues, NULL,
			false, 0, SPI_OK_SELECT);
	job_id = SpiGetInt64(0, 1, &isnull);
	if (isnull)
		elog(ERROR, "backfill: cron.schedule returned no job id");

	uvalues[0] = Int64GetDatum(check_id);
	uvalues[1] = Int64GetDatum(job_id);
	CatalogExec("UPDATE backfill.checks SET job_id = $2"
				" WHERE check_id OPERATOR(pg_catalog.=) $1",
				2, utypes, uvalues, NULL, SPI_OK_UPDATE);
	SPI_finish();
	PG_RETURN_INT64(job_id);
}

/*
 * backfill_unschedule_check
 *		unschedule_check(check_id) -> whether a pg_cron job was removed
 *
 * Only the role that scheduled the check (or a role with its privileges)
 * may remove it.  The check and its results stay; job_id is cleared.
 */
Datum
backfill_unschedule_check(PG_FUNCTION_ARGS)
{
	int64		check_id;
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	bool		isnull;
	bool		job_null;
	int64		job_id;
	char	   *owner;
	Oid			owner_oid;
	bool		removed = false;

	RequireArg(fcinfo, 0, "check_id", NULL);
	check_id = PG_GETARG_INT64(0);

	SPI_connect();
	/* every tick sweeps the jobs of dropped roles (schedule.c) */
	if (ScheduleCalledFromCron())
		(void) ScheduleSweepOrphanJobs(NULL);
	values[0] = Int64GetDatum(check_id);
	CatalogExec("SELECT job_id, created_by::pg_catalog.text, created_by_oid"
				" FROM backfill.checks"
				" WHERE check_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("check %lld does not exist", (long long) check_id)));
	job_id = SpiGetInt64(0, 1, &job_null);
	owner = SpiGetText(0, 2);
	owner_oid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 3, &isnull));
	if (!HasRunPermission(owner_oid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to unschedule check %lld",
						(long long) check_id),
				 errdetail("The check was scheduled by role \"%s\".", owner)));
	if (job_null)
	{
		SPI_finish();
		PG_RETURN_BOOL(false);
	}

	if (OidIsValid(get_extension_oid("pg_cron", true)))
	{
		Oid			jtypes[1] = {INT8OID};
		Datum		jvalues[1];

		jvalues[0] = Int64GetDatum(job_id);
		/* as the caller: cron.job shows and removes only its own jobs */
		SpiExec("SELECT cron.unschedule(j.jobid) FROM cron.job j"
				" WHERE j.jobid OPERATOR(pg_catalog.=) $1",
				1, jtypes, jvalues, NULL, false, 0, SPI_OK_SELECT);
		if (SPI_processed == 1)
			removed = SpiGetBool(0, 1, &isnull) && !isnull;
	}
	CatalogExec("UPDATE backfill.checks SET job_id = NULL"
				" WHERE check_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_UPDATE);
	SPI_finish();
	PG_RETURN_BOOL(removed);
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
 * backfill_run_check
 *		run_check(check_id) -> the number of failing chunks
 *
 * Checks the whole chunks of the last lookback: the range ends at
 * date_trunc(<unit of the chunk>, now()) in the session TimeZone and
 * starts the largest whole number of chunks (at least one) back that stays
 * within the lookback.  Appends one backfill.check_results row per chunk.
 */
Datum
backfill_run_check(PG_FUNCTION_ARGS)
{
	int64		check_id;
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	bool		isnull;
	Oid			relid;
	Interval   *lookback;
	RecTarget  *t;
	TimestampTz now;
	TimestampTz end;
	TimestampTz limit;
	TimestampTz start;
	RecChunk   *chunks;
	int			n;
	int			k;
	int			nchunks = 0;
	int			failing = 0;
	Oid			owner;

	RequireArg(fcinfo, 0, "check_id", NULL);
	check_id = PG_GETARG_INT64(0);

	SPI_connect();
	/* every tick sweeps the jobs of dropped roles (schedule.c) */
	if (ScheduleCalledFromCron())
		(void) ScheduleSweepOrphanJobs(NULL);
	values[0] = Int64GetDatum(check_id);
	CatalogExec("SELECT target::pg_catalog.oid, lookback, created_by_oid"
				" FROM backfill.checks WHERE check_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("check %lld does not exist", (long long) check_id)));
	relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 1, &isnull));
	lookback = DatumGetIntervalP(SpiGetDatumCopy(0, 2, &isnull));
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 3, &isnull));
	SPI_freetuptable(SPI_tuptable);

	CheckSelectPrivilege(relid);

	/*
	 * Only the role that scheduled the check (or a role with its
	 * privileges) appends results; anyone else gets the failing count of
	 * the last stored tick, and no user text runs for them.
	 */
	if (!HasRunPermission(owner))
	{
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
		SPI_finish();
		PG_RETURN_INT32(failing);
	}
	t = ReadTarget(relid, 0);

	now = GetCurrentTransactionStartTimestamp();
	end = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_trunc,
												  CStringGetTextDatum(AlignmentUnit(t->chunk)),
												  TimestampTzGetDatum(now)));
	limit = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
													TimestampTzGetDatum(end),
													IntervalPGetDatum(lookback)));
	while (nchunks < backfill_max_chunks &&
		   ShiftBound(end, t->chunk, -(nchunks + 1)) >= limit)
	{
		CHECK_FOR_INTERRUPTS();
		nchunks++;
	}
	if (nchunks == backfill_max_chunks &&
		ShiftBound(end, t->chunk, -(nchunks + 1)) >= limit)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("lookback of check %lld would be split into more than %d chunks",
						(long long) check_id, backfill_max_chunks),
				 errhint("Schedule the check with a shorter lookback, or ask a superuser to raise backfill.max_chunks (at most %d).",
						 BACKFILL_MAX_CHUNKS_CEILING)));
	if (nchunks == 0)
		nchunks = 1;
	start = ShiftBound(end, t->chunk, -nchunks);

	n = CheckRange(relid, start, false, end, false, &chunks);

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
		Oid			itypes[11] = {INT8OID, REGCLASSOID, NAMEOID,
			TIMESTAMPTZARRAYOID, TIMESTAMPTZARRAYOID, NUMERICARRAYOID,
			NUMERICARRAYOID, BOOLARRAYOID, NUMERICARRAYOID, BOOLARRAYOID,
		TEXTARRAYOID};
		Datum		ivalues[11];

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
			vd[k] = CStringGetTextDatum(c->verdict);
			if (strcmp(c->verdict, VERDICT_LEDGER_MISMATCH) == 0 ||
				strcmp(c->verdict, VERDICT_OUTLIER) == 0)
				failing++;
		}
		ivalues[0] = Int64GetDatum(check_id);
		ivalues[1] = ObjectIdGetDatum(relid);
		ivalues[2] = DirectFunctionCall1(namein, CStringGetDatum(CurrentUserName()));
		ivalues[3] = MakeArray(los, NULL, n, TIMESTAMPTZOID);
		ivalues[4] = MakeArray(his, NULL, n, TIMESTAMPTZOID);
		ivalues[5] = MakeArray(tv, tvn, n, NUMERICOID);
		ivalues[6] = MakeArray(lv, lvn, n, NUMERICOID);
		ivalues[7] = MakeArray(lok, lokn, n, BOOLOID);
		ivalues[8] = MakeArray(nm, nmn, n, NUMERICOID);
		ivalues[9] = MakeArray(nok, nokn, n, BOOLOID);
		ivalues[10] = MakeArray(vd, NULL, n, TEXTOID);
		CatalogExec("INSERT INTO backfill.check_results (check_id, target,"
					" chunk_start, chunk_end, target_value, ledger_value,"
					" ledger_ok, neighbor_median, neighbor_ok, verdict, checked_by)"
					" SELECT $1, $2, u.lo, u.hi, u.tv, u.lv, u.lok, u.nm, u.nok,"
					" u.verdict, $3"
					" FROM ROWS FROM (pg_catalog.unnest($4), pg_catalog.unnest($5),"
					" pg_catalog.unnest($6), pg_catalog.unnest($7),"
					" pg_catalog.unnest($8), pg_catalog.unnest($9),"
					" pg_catalog.unnest($10), pg_catalog.unnest($11))"
					" AS u(lo, hi, tv, lv, lok, nm, nok, verdict)",
					11, itypes, ivalues, NULL, SPI_OK_INSERT);
	}

	SPI_finish();
	PG_RETURN_INT32(failing);
}
