/*-------------------------------------------------------------------------
 *
 * reconcile.c
 *	  Checking a target against its ledger and against its neighbours:
 *	  reconcile for the chunks of a run (ReconcileRun), and CheckRange, the
 *	  same comparison for any range, for check and for the standing checks
 *	  (standing.c).  The ledger's figure and the agreement rule are in
 *	  engine/ledger.c, shared with the gate inside every chunk.
 *
 * The comparison reads the target in ONE grouped query over the whole
 * range plus the neighbour chunks on either side: rows are put into chunks
 * with width_bucket() over the array of chunk bounds (a binary search per
 * row, no join).  The ledger is an opaque query over ($1, $2) returning
 * one number, so it cannot be grouped: it is prepared once and executed
 * once per compared chunk (see doc/reconciliation.md for what that costs).
 *
 * Measures, ledgers and horizons run only as the author of their
 * definition version (identity.c); catalog rows are read and written
 * through CatalogExec as the extension owner.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/int.h"
#include "miscadmin.h"
#include "parser/parse_coerce.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/syscache.h"

#include "backfill.h"

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
 * NeighbourBounds
 *		The bounds of CompareChunks' buckets: nb neighbour chunks of "step"
 *		before the n chunks (contiguous, in time order), the n chunks, nb
 *		neighbours after; n + 2 * nb + 1 bounds (palloc'd), each after the
 *		one before (22023 when the chunk interval does not advance).
 */
static TimestampTz *
NeighbourBounds(RecChunk *chunks, int n, Interval *step, int nb)
{
	int			nbuckets = n + 2 * nb;
	TimestampTz *bounds;
	int			k;

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
							TimestampText(bounds[k - 1])),
					 errdetail("The neighbor chunks of the range cannot be laid out with this chunk interval.")));
	return bounds;
}

/*
 * MeasureBuckets
 *		The one grouped pass over target t (relname): its measure per
 *		bucket of the nbuckets + 1 bounds, bucket i of width_bucket() being
 *		chunk i of CompareChunks' array.  Into *has_rows, *bucket_value and
 *		*bucket_null (palloc'd, indexed 1 to nbuckets).  Runs as the
 *		author; caller is connected to SPI.
 */
static void
MeasureBuckets(Definition *t, char *relname, TimestampTz *bounds,
			   int nbuckets, bool **has_rows, Datum **bucket_value,
			   bool **bucket_null)
{
	Datum	   *bound_datums;
	char	   *tc;
	StringInfoData sql;
	Oid			argtypes[3] = {TIMESTAMPTZOID, TIMESTAMPTZOID, TIMESTAMPTZARRAYOID};
	Datum		values[3];
	uint64		i;
	int			k;

	bound_datums = palloc(sizeof(Datum) * (nbuckets + 1));
	for (k = 0; k <= nbuckets; k++)
		bound_datums[k] = TimestampTzGetDatum(bounds[k]);

	/* the one grouped pass over the target */
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

	*has_rows = palloc0(sizeof(bool) * (nbuckets + 1));
	*bucket_value = palloc0(sizeof(Datum) * (nbuckets + 1));
	*bucket_null = palloc0(sizeof(bool) * (nbuckets + 1));
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		int32		b = SpiGetInt32(i, 1, &isnull);

		if (isnull || b < 1 || b > nbuckets)
			continue;			/* cannot happen given the WHERE */
		(*has_rows)[b] = true;
		(*bucket_value)[b] = SpiGetDatumCopy(i, 2, &(*bucket_null)[b]);
	}
	SPI_freetuptable(SPI_tuptable);
}

/*
 * NeighbourMedian
 *		The median of the neighbour buckets (1 to nb, and after the n
 *		chunks' up to nbuckets) that have rows and a measure not NULL, into
 *		*median; false when there is none.
 */
static bool
NeighbourMedian(bool *has_rows, Datum *bucket_value, bool *bucket_null,
				int n, int nb, Datum *median)
{
	int			nbuckets = n + 2 * nb;
	Datum	   *neighbours;
	int			nneighbours = 0;
	int			k;

	/* neighbour median over the neighbours that have rows */
	neighbours = palloc(sizeof(Datum) * (2 * nb + 1));
	for (k = 1; k <= nbuckets; k++)
	{
		if (k > nb && k <= nb + n)
			continue;
		if (has_rows[k] && !bucket_null[k])
			neighbours[nneighbours++] = bucket_value[k];
	}
	if (nneighbours == 0)
		return false;
	*median = Median(neighbours, nneighbours);
	return true;
}

/*
 * PrepareLedger
 *		t's ledger query prepared once (over $1, $2), when t has a ledger
 *		and one of the n chunks is compared; else NULL.  Caller is
 *		connected to SPI, and frees the plan.
 */
static SPIPlanPtr
PrepareLedger(Definition *t, RecChunk *chunks, int n)
{
	SPIPlanPtr	ledger_plan = NULL;
	int			k;

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
	return ledger_plan;
}

/*
 * EmptyMeasure
 *		t's measure over no rows of relname (count(*) gives 0, sum() NULL),
 *		into *value and *isnull.  Runs as the author; caller is connected
 *		to SPI.
 */
static void
EmptyMeasure(Definition *t, char *relname, Datum *value, bool *isnull)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfoString(&sql,
						   ComposeMeasureSelect(NULL, t->measure,
												relname, "WHERE false"));
	SpiExec(sql.data, 0, NULL, NULL, NULL, true, 0, SPI_OK_SELECT);
	if (SPI_processed == 1)
		*value = SpiGetDatumCopy(0, 1, isnull);
	SPI_freetuptable(SPI_tuptable);
}

/*
 * CompareWithLedger
 *		The prepared ledger over chunk c's range, its value into c (copied
 *		out by LedgerFromResult, into the context the caller had before
 *		connecting to SPI) and compared with the chunk's figure within t's
 *		tolerance; the comparison's temporaries go in itercxt.
 */
static void
CompareWithLedger(Definition *t, RecChunk *c, SPIPlanPtr ledger_plan,
				  MemoryContext itercxt)
{
	Datum		lvalues[2];
	int			rc;
	MemoryContext oldcxt;

	lvalues[0] = TimestampTzGetDatum(c->start);
	lvalues[1] = TimestampTzGetDatum(c->end);
	rc = SPI_execute_plan(ledger_plan, lvalues, NULL, true, 2);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "backfill: ledger query returned %s",
			 SPI_result_code_string(rc));
	oldcxt = MemoryContextSwitchTo(itercxt);
	c->ledger_value = LedgerFromResult(&c->ledger_null);
	SPI_freetuptable(SPI_tuptable);
	c->ledger_ok = LedgerCompare(c->target_value, c->target_null,
								 c->ledger_value, c->ledger_null,
								 t->tolerance);
	c->ledger_ok_null = false;
	MemoryContextSwitchTo(oldcxt);
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
CompareChunks(Definition *t, RecChunk *chunks, int n, Interval *step)
{
	int			nb = backfill_neighbor_chunks;
	int			nbuckets = n + 2 * nb;
	TimestampTz *bounds;
	bool	   *has_rows;
	Datum	   *bucket_value;
	bool	   *bucket_null;
	Datum		median = (Datum) 0;
	bool		have_median;
	Datum		empty_value = (Datum) 0;
	bool		empty_null = true;
	bool		have_empty = false;
	Datum		ntolerance;
	char	   *relname;
	int			k;
	SPIPlanPtr	ledger_plan;
	MemoryContext itercxt;

	bounds = NeighbourBounds(chunks, n, step, nb);
	relname = QualifiedRelName(t->target);
	MeasureBuckets(t, relname, bounds, nbuckets, &has_rows, &bucket_value,
				   &bucket_null);
	have_median = NeighbourMedian(has_rows, bucket_value, bucket_null, n, nb,
								  &median);
	ntolerance = DirectFunctionCall1(float8_numeric,
									 Float8GetDatum(backfill_neighbor_tolerance));
	ledger_plan = PrepareLedger(t, chunks, n);

	/*
	 * One pass over the chunks; what a chunk's comparison allocates beside
	 * its results (numeric temporaries) goes with it: itercxt is reset per
	 * chunk.  The ledger's value is copied out by LedgerFromResult, into
	 * the context the caller had before connecting to SPI.
	 */
	itercxt = AllocSetContextCreate(CurrentMemoryContext,
									"backfill compare chunk",
									ALLOCSET_DEFAULT_SIZES);
	for (k = 0; k < n; k++)
	{
		RecChunk   *c = &chunks[k];
		int			b = nb + k + 1;
		MemoryContext oldcxt;

		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(itercxt);
		c->target_null = c->ledger_null = c->median_null = true;
		c->ledger_ok_null = c->neighbor_ok_null = true;

		if (!c->compare)
		{
			/* not_run chunks still show what the target holds now */
			if (c->verdict == VERDICT_NOT_RUN && has_rows[b])
			{
				c->target_value = bucket_value[b];
				c->target_null = bucket_null[b];
			}
			continue;
		}

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
				EmptyMeasure(t, relname, &empty_value, &empty_null);
				have_empty = true;
			}
			c->target_value = empty_value;
			c->target_null = empty_null;
		}

		if (ledger_plan != NULL)
			CompareWithLedger(t, c, ledger_plan, itercxt);

		if (have_median)
		{
			oldcxt = MemoryContextSwitchTo(itercxt);
			c->neighbor_median = median;
			c->median_null = false;
			c->neighbor_ok = LedgerCompare(c->target_value, c->target_null,
										   median, false, ntolerance);
			c->neighbor_ok_null = false;
			MemoryContextSwitchTo(oldcxt);
		}

		if (!c->ledger_ok_null && !c->ledger_ok)
			c->verdict = VERDICT_LEDGER_MISMATCH;
		else if (!c->neighbor_ok_null && !c->neighbor_ok)
			c->verdict = VERDICT_OUTLIER;
		else
			c->verdict = VERDICT_OK;
	}

	MemoryContextDelete(itercxt);
	if (ledger_plan != NULL)
		SPI_freeplan(ledger_plan);
}

/*
 * HorizonAsAuthor / CompareAsAuthor
 *		SourceHorizon and CompareChunks inside an entered author gate; on
 *		error the caller's user id is restored before the error goes on.
 */
static bool
HorizonAsAuthor(AuthorGate *gate, Definition *t, TimestampTz *horizon)
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
CompareAsAuthor(AuthorGate *gate, Definition *t, RecChunk *chunks, int n,
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
 * StoredVerdicts
 *		The chunks of run run_id with the figures and verdicts its last
 *		reconcile stored, for a caller who may see the run but not
 *		reconcile it: nothing is recomputed and no user text runs (a
 *		NOTICE says so).  Returns their number, *out palloc'd.  Caller is
 *		connected to SPI.
 */
static int
StoredVerdicts(int64 run_id, RecChunk **out)
{
	RecChunk   *chunks;
	int			n;
	int			k;
	bool		isnull;
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(run_id)};

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
		c->status = ParseChunkStatus(SpiGetText(k, 4));
		c->target_value = SpiGetDatumCopy(k, 5, &c->target_null);
		c->ledger_value = SpiGetDatumCopy(k, 6, &c->ledger_null);
		c->ledger_ok = SpiGetBool(k, 7, &c->ledger_ok_null);
		c->neighbor_median = SpiGetDatumCopy(k, 8, &c->median_null);
		c->neighbor_ok = SpiGetBool(k, 9, &c->neighbor_ok_null);
		c->verdict = ParseVerdict(SpiGetText(k, 10));
	}
	*out = chunks;
	return n;
}

/*
 * StoreVerdicts
 *		Store the figures and verdicts of the done and no_source chunks of
 *		run run_id (of the n in chunks) in one UPDATE; the others are left
 *		as they are.  Caller is connected to SPI.
 */
static void
StoreVerdicts(int64 run_id, RecChunk *chunks, int n)
{
	int			nstore = 0;
	int			k;

	/* store the figures of the done and no_source chunks in one UPDATE */
	for (k = 0; k < n; k++)
		if (chunks[k].compare || chunks[k].verdict == VERDICT_NO_SOURCE)
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
		CatalogArgs args;
		int			j = 0;

		for (k = 0; k < n; k++)
		{
			RecChunk   *c = &chunks[k];

			if (!(c->compare || c->verdict == VERDICT_NO_SOURCE))
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
			vd[j] = CStringGetTextDatum(VerdictName(c->verdict));
			j++;
		}
		CatalogArgsInit(&args);
		CatalogArg(&args, INT8OID, Int64GetDatum(run_id), false);
		CatalogArg(&args, INT4ARRAYOID,
				   MakeArray(nos, NULL, nstore, INT4OID), false);
		CatalogArg(&args, NUMERICARRAYOID,
				   MakeArray(lv, lvn, nstore, NUMERICOID), false);
		CatalogArg(&args, BOOLARRAYOID,
				   MakeArray(lok, lokn, nstore, BOOLOID), false);
		CatalogArg(&args, NUMERICARRAYOID,
				   MakeArray(nm, nmn, nstore, NUMERICOID), false);
		CatalogArg(&args, BOOLARRAYOID,
				   MakeArray(nok, nokn, nstore, BOOLOID), false);
		CatalogArg(&args, TEXTARRAYOID,
				   MakeArray(vd, NULL, nstore, TEXTOID), false);
		CatalogExecArgs("UPDATE backfill.chunks c"
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
						&args, SPI_OK_UPDATE);
	}
}

/*
 * ReconcileRun
 *		See backfill.h: reconcile(run_id), the number of chunks and, in
 *		*out, their figures and verdicts.
 *
 * Compares every done chunk of the run with the ledger and with the
 * neighbour chunks around the run's range, under the run's TimeZone and
 * search_path, and stores the figures and verdicts of the done and
 * no_source chunks in one UPDATE.  Chunks that have not run (pending,
 * failed, cancelled) are reported as not_run and their stored figures
 * (for a failed chunk: what the gate found) are left as they are.  Caller
 * is connected to SPI.
 */
int
ReconcileRun(int64 run_id, RecChunk **out)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	bool		isnull;
	RunInfo    *run;
	Oid			relid;
	bool		registered;
	Interval   *step;
	char	   *timezone;
	char	   *search_path;
	Definition *t;
	RecChunk   *chunks;
	int			n;
	int			k;
	int32		version;
	Oid			planner;
	AuthorGate	gate;

	values[0] = Int64GetDatum(run_id);
	run = LoadRun(run_id);		/* 42704 for an unknown or invisible run */
	relid = run->target;
	step = run->chunk;
	timezone = run->timezone;
	search_path = run->search_path;
	registered = run->registered;
	version = run->definition_version;
	planner = run->created_by_oid;

	CheckSelectPrivilege(relid);
	if (!registered)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table %s is no longer registered for backfill",
						QualifiedRelName(relid)),
				 errdetail("Without its registration the measure and the ledger of run %lld are unknown.",
						   (long long) run_id)));
	t = LoadDefinition(relid, version);

	/*
	 * Only the planner (or a role with its privileges) recomputes and
	 * stores verdicts; anyone else who can see the run reads the stored
	 * ones, and no user text runs for them.
	 */
	if (!HasRunPermission(planner))
		return StoredVerdicts(run_id, out);

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
		c->status = ParseChunkStatus(SpiGetText(k, 4));
		if (c->status == CHUNK_DONE)
		{
			c->compare = true;
			c->verdict = VERDICT_OK;
		}
		else if (c->status == CHUNK_NO_SOURCE)
			c->verdict = VERDICT_NO_SOURCE;
		else
			c->verdict = VERDICT_NOT_RUN;
	}
	SPI_freetuptable(SPI_tuptable);

	/* the run's pinned text, as its author, under the run's settings */
	AuthorGateEnter(&gate, t->author, relid, t->version, search_path, timezone);
	CompareAsAuthor(&gate, t, chunks, n, step);
	AuthorGateLeave(&gate);

	StoreVerdicts(run_id, chunks, n);

	*out = chunks;
	return n;
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
int
CheckRange(Oid relid, TimestampTz start, bool start_null,
		   TimestampTz end, bool end_null, RecChunk **out)
{
	Definition *t;
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
	t = LoadDefinition(relid, 0);
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
			chunks[b - 1].status = ParseChunkStatus(SpiGetText(i, 2));
	}
	SPI_freetuptable(SPI_tuptable);

	for (k = 0; k < n; k++)
	{
		RecChunk   *c = &chunks[k];

		if ((have_horizon && c->start < horizon) ||
			c->status == CHUNK_NO_SOURCE)
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
