/*-------------------------------------------------------------------------
 *
 * onlychunks.c
 *	  The chunks a plan with only_chunks keeps (SelectChunks): of the
 *	  chunks of a range, those that need work, read from the target's
 *	  history (ClassifyRanges, lineage.c): missing, outdated, failed, and
 *	  stale (a logged change or a moved ledger over a built chunk), with
 *	  the reason of each stale one.  Called by cascade.c (PipelinePlan).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/binaryheap.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "backfill.h"

/* ----------------------------------------------------------------
 *		history pieces: what a range of a target needs
 * ----------------------------------------------------------------
 */

/*
 * PieceNeeds
 *		Whether a piece makes its chunk part of an only-plan ("only": a set
 *		of OnlyChunks bits; stale is decided per chunk, by StaleReason).
 *		missing: no settled chunk covers it (with clear_no_source, also a
 *		no_source stretch whose rows were never cleared); outdated: it was
 *		backfilled under a version older than the current one; failed: the
 *		latest attempt there failed or was cancelled.
 */
static bool
PieceNeeds(const Piece *p, int only, bool clear_no_source,
		   int32 current_version)
{
	if (only == ONLY_ALL)
		return true;
	if ((only & ONLY_MISSING) &&
		(p->settled == CHUNK_NONE ||
		 (clear_no_source && p->settled == CHUNK_NO_SOURCE && !p->cleared)))
		return true;
	if ((only & ONLY_OUTDATED) &&
		p->settled == CHUNK_DONE && p->version < current_version)
		return true;
	if ((only & ONLY_FAILED) &&
		(p->latest == CHUNK_FAILED || p->latest == CHUNK_CANCELLED))
		return true;
	return false;
}

/*
 * The facts a stale plan reads once per plan: the logged regions over the
 * range (sorted by start, with the running maximum of their ends for
 * RegionOverlaps; and, for StaleReason, which asks about chunks in order,
 * a heap of the regions that started before the chunk, the earliest
 * changed_at on top), and, for a target with a ledger, the ledger figure
 * recorded by each chunk's latest build.
 */
typedef struct StaleFacts
{
	ChangedRegion *regions;
	TimestampTz *max_end;		/* max of regions[0..i].hi */
	int			nregions;
	int			next;			/* first region not in "started" yet */
	binaryheap *started;		/* regions by changed_at, earliest first */
	Definition *def;
	int			nbuilt;
	TimestampTz *built_lo;
	TimestampTz *built_hi;
	Datum	   *built_ledger;	/* numeric */
	int			next_built;
	SPIPlanPtr	ledger_plan;	/* the ledger, prepared once per plan */
	SPIPlanPtr	rows_plan;		/* whether a range holds rows, once per plan */
	AuthorGate	gate;
	bool		in_gate;
} StaleFacts;

/*
 * RegionEarlier
 *		binaryheap comparator of regions (indexes into the ChangedRegion
 *		array arg): > 0 when a changed earlier than b, so that the earliest
 *		change is on top.
 */
static int
RegionEarlier(Datum a, Datum b, void *arg)
{
	TimestampTz x = ((ChangedRegion *) arg)[DatumGetInt32(a)].changed_at;
	TimestampTz y = ((ChangedRegion *) arg)[DatumGetInt32(b)].changed_at;

	return x < y ? 1 : (x > y ? -1 : 0);
}

/*
 * LoadStaleFacts
 *		Read the logged regions of [lo, hi) and, with a ledger, the ledger
 *		figures of the latest builds of chunks inside it (one catalog query
 *		each).  Caller is connected to SPI.
 */
static void
LoadStaleFacts(Oid target, Definition *def, TimestampTz lo, TimestampTz hi,
			   StaleFacts *f)
{
	int			k;

	memset(f, 0, sizeof(StaleFacts));
	f->def = def;
	f->nregions = LoadChangedRegions(target, lo, hi, &f->regions);
	f->max_end = palloc(sizeof(TimestampTz) * Max(f->nregions, 1));
	for (k = 0; k < f->nregions; k++)
		f->max_end[k] = k == 0 ? f->regions[k].hi :
			Max(f->max_end[k - 1], f->regions[k].hi);
	f->started = binaryheap_allocate(Max(f->nregions, 1), RegionEarlier,
									 f->regions);

	if (def->ledger != NULL)
	{
		Oid			argtypes[3] = {REGCLASSOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
		Datum		values[3];

		values[0] = ObjectIdGetDatum(target);
		values[1] = TimestampTzGetDatum(lo);
		values[2] = TimestampTzGetDatum(hi);
		CatalogExec("SELECT DISTINCT ON (c.chunk_start, c.chunk_end)"
					" c.chunk_start, c.chunk_end, c.ledger_value"
					" FROM backfill.chunks c"
					" JOIN backfill.runs r ON r.run_id OPERATOR(pg_catalog.=) c.run_id"
					" WHERE r.target OPERATOR(pg_catalog.=) $1"
					" AND c.status OPERATOR(pg_catalog.=) 'done'"
					" AND c.chunk_start OPERATOR(pg_catalog.>=) $2"
					" AND c.chunk_end OPERATOR(pg_catalog.<=) $3"
					" ORDER BY c.chunk_start, c.chunk_end, c.finished_at DESC",
					3, argtypes, values, NULL, SPI_OK_SELECT);
		f->built_lo = palloc(sizeof(TimestampTz) * Max(SPI_processed, 1));
		f->built_hi = palloc(sizeof(TimestampTz) * Max(SPI_processed, 1));
		f->built_ledger = palloc(sizeof(Datum) * Max(SPI_processed, 1));
		for (k = 0; k < (int) SPI_processed; k++)
		{
			bool		isnull;
			Datum		lv;

			CHECK_FOR_INTERRUPTS();
			lv = SpiGetDatumCopy(k, 3, &isnull);
			if (isnull)
				continue;		/* no figure recorded: nothing to compare */
			f->built_lo[f->nbuilt] =
				DatumGetTimestampTz(SpiGetDatumCopy(k, 1, &isnull));
			f->built_hi[f->nbuilt] =
				DatumGetTimestampTz(SpiGetDatumCopy(k, 2, &isnull));
			f->built_ledger[f->nbuilt] = lv;
			f->nbuilt++;
		}
		SPI_freetuptable(SPI_tuptable);
	}
}

/*
 * StaleGateEnter
 *		The author gate of a stale plan's reads of user text and of the
 *		target (the ledger, ChunkHoldsRows), entered on first use and left
 *		by StaleFactsDone: as the definition's author, as a chunk reads.
 */
static void
StaleGateEnter(StaleFacts *f)
{
	if (f->in_gate)
		return;
	AuthorGateEnter(&f->gate, f->def->author, f->def->target, f->def->version,
					GetConfigOption("search_path", false, false),
					GetConfigOption("TimeZone", false, false));
	f->in_gate = true;
}

/*
 * StaleFactsDone
 *		Free the plans of a stale plan's facts and leave its author gate;
 *		with abort, after an error.
 */
static void
StaleFactsDone(StaleFacts *f, bool abort)
{
	if (!abort && f->ledger_plan != NULL)
		SPI_freeplan(f->ledger_plan);
	if (!abort && f->rows_plan != NULL)
		SPI_freeplan(f->rows_plan);
	f->ledger_plan = NULL;
	f->rows_plan = NULL;
	if (f->in_gate)
	{
		if (abort)
			AuthorGateAbort(&f->gate);
		else
			AuthorGateLeave(&f->gate);
	}
	f->in_gate = false;
}

/*
 * ChunkHoldsRows
 *		Whether the target holds rows in [cs, ce): a chunk that backfill
 *		never built but the job that fills the table did (doc/changed-
 *		regions.md).  Read as the definition's author inside the gate, as a
 *		chunk reads the target, one statement prepared once per plan (no
 *		user text in it) and executed per chunk asked, which are only the
 *		chunks with a recorded change and no build of backfill's.
 */
static bool
ChunkHoldsRows(StaleFacts *f, TimestampTz cs, TimestampTz ce)
{
	Oid			argtypes[2];
	Datum		values[2];
	int			rc;
	bool		isnull;
	bool		holds;

	StaleGateEnter(f);
	RangeParams(f->def->target, f->def->time_column, cs, ce, argtypes, values);
	if (f->rows_plan == NULL)
	{
		f->rows_plan = SPI_prepare(ComposeRangeExists(f->def->target,
													  f->def->time_column),
								   2, argtypes);
		if (f->rows_plan == NULL)
			elog(ERROR, "backfill: could not prepare the range's rows query: %s",
				 SPI_result_code_string(SPI_result));
	}
	rc = SPI_execute_plan(f->rows_plan, values, NULL, true, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "backfill: the range's rows query returned %s",
			 SPI_result_code_string(rc));
	holds = SpiGetBool(0, 1, &isnull);
	SPI_freetuptable(SPI_tuptable);
	return holds;
}

/*
 * StaleReason
 *		Why the built chunk [cs, ce) is stale, or NULL: a logged change
 *		overlapping it ("stale: source changed at ...", the earliest of
 *		them), else, with a ledger, a ledger figure that moved since the
 *		chunk's latest build of exactly these bounds ("ledger moved from X
 *		to Y"; the ledger runs as the definition's author, inside the gate
 *		f->gate, parsed and planned once per plan and executed for each
 *		built chunk whose figure was recorded).  Chunks are asked in order:
 *		the regions that start before ce enter f->started, and one that
 *		ended by cs is dropped when it comes to the top, for it overlaps no
 *		later chunk either; so the regions cost O(log n) each, however
 *		many chunks a region overlaps.
 */
static char *
StaleReason(StaleFacts *f, TimestampTz cs, TimestampTz ce)
{
	while (f->next < f->nregions && f->regions[f->next].lo < ce)
		binaryheap_add(f->started, Int32GetDatum(f->next++));
	while (!binaryheap_empty(f->started))
	{
		ChangedRegion *top =
			&f->regions[DatumGetInt32(binaryheap_first(f->started))];

		CHECK_FOR_INTERRUPTS();
		if (top->hi > cs)
			return psprintf("stale: source changed at %s",
							TimestampText(top->changed_at));
		(void) binaryheap_remove_first(f->started);
	}

	while (f->next_built < f->nbuilt && f->built_lo[f->next_built] < cs)
		f->next_built++;
	if (f->next_built < f->nbuilt && f->built_lo[f->next_built] == cs &&
		f->built_hi[f->next_built] == ce)
	{
		bool		isnull;
		Datum		now;
		Datum		then = f->built_ledger[f->next_built];

		StaleGateEnter(f);
		if (f->ledger_plan == NULL)
		{
			Oid			largs[2] = {TIMESTAMPTZOID, TIMESTAMPTZOID};

			f->ledger_plan = SPI_prepare(f->def->ledger, 2, largs);
			if (f->ledger_plan == NULL)
				elog(ERROR, "backfill: could not prepare the ledger query: %s",
					 SPI_result_code_string(SPI_result));
		}
		{
			Datum		lvalues[2];
			int			rc;

			lvalues[0] = TimestampTzGetDatum(cs);
			lvalues[1] = TimestampTzGetDatum(ce);
			rc = SPI_execute_plan(f->ledger_plan, lvalues, NULL, true, 2);
			if (rc != SPI_OK_SELECT)
				elog(ERROR, "backfill: ledger query returned %s",
					 SPI_result_code_string(rc));
			now = LedgerFromResult(&isnull);
			SPI_freetuptable(SPI_tuptable);
		}
		if (isnull ||
			DatumGetInt32(DirectFunctionCall2(numeric_cmp, now, then)) != 0)
			return psprintf("ledger moved from %s to %s",
							NumericText(then, false),
							NumericText(now, isnull));
	}
	return NULL;
}

/* At most this many clusters of stale candidates are classified apart. */
#define STALE_CLUSTERS_MAX 32

/*
 * RegionOverlaps
 *		Whether a logged region of f overlaps [cs, ce) (f->regions sorted by
 *		start, f->max_end their running maximum end).
 */
static bool
RegionOverlaps(StaleFacts *f, TimestampTz cs, TimestampTz ce)
{
	int			lo = 0;
	int			hi = f->nregions;
	int			i;

	/* the first region whose running maximum end passes cs */
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (f->max_end[mid] <= cs)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < f->nregions && f->regions[i].lo < ce; i++)
		if (f->regions[i].hi > cs)
			return true;
	return false;
}

/*
 * ChunkBuilt
 *		Whether a piece of chunk [cs, ce) is settled done (backfill built
 *		it).  The pieces are sorted and partition the range, and the
 *		chunks come in order: *j, the first piece not before the previous
 *		chunk, is advanced past the pieces before this one.
 */
static bool
ChunkBuilt(const Piece *pieces, int np, int *j, TimestampTz cs,
		   TimestampTz ce)
{
	int			i;

	while (*j < np && pieces[*j].hi <= cs)
		(*j)++;
	for (i = *j; i < np && pieces[i].lo < ce; i++)
	{
		if (pieces[i].settled == CHUNK_DONE)
			return true;
	}
	return false;
}

/*
 * SelectStaleOnly
 *		SelectChunks for only_chunks => 'stale' alone on a target without a
 *		ledger: only the chunks a logged region overlaps can be stale, so
 *		the history is classified over the clusters of consecutive such
 *		chunks (at most STALE_CLUSTERS_MAX), not over the whole range: a
 *		refresh of 3 late days of a year does not read the year's history.
 *		The clusters are classified together (ClassifyRanges), with the
 *		one plan of the rule that the session keeps.  False (nothing
 *		done) when there are more clusters; the caller then classifies the
 *		whole range.
 */
static bool
SelectStaleOnly(Oid target, StaleFacts *facts, TimestampTz *bounds, int n,
				PlanChunks *out)
{
	int		   *first = palloc(sizeof(int) * STALE_CLUSTERS_MAX);
	int		   *last = palloc(sizeof(int) * STALE_CLUSTERS_MAX);
	TimestampTz *los = palloc(sizeof(TimestampTz) * STALE_CLUSTERS_MAX);
	TimestampTz *his = palloc(sizeof(TimestampTz) * STALE_CLUSTERS_MAX);
	int			nclusters = 0;
	Piece	   *pieces;
	int			np;
	int			j = 0;
	int			k;
	int			c;

	for (k = 0; k < n; k++)
	{
		CHECK_FOR_INTERRUPTS();
		if (!RegionOverlaps(facts, bounds[k], bounds[k + 1]))
			continue;
		if (nclusters > 0 && last[nclusters - 1] == k - 1)
		{
			last[nclusters - 1] = k;
			continue;
		}
		if (nclusters == STALE_CLUSTERS_MAX)
			return false;
		first[nclusters] = last[nclusters] = k;
		nclusters++;
	}
	if (nclusters == 0)
		return true;

	for (c = 0; c < nclusters; c++)
	{
		los[c] = bounds[first[c]];
		his[c] = bounds[last[c] + 1];
	}
	/* the clusters are disjoint and in order: so are their pieces */
	np = ClassifyRanges(target, los, his, nclusters, &pieces);
	for (c = 0; c < nclusters; c++)
	{
		for (k = first[c]; k <= last[c]; k++)
		{
			TimestampTz cs = bounds[k];
			TimestampTz ce = bounds[k + 1];
			bool		built;
			char	   *reason;

			CHECK_FOR_INTERRUPTS();
			built = ChunkBuilt(pieces, np, &j, cs, ce);
			/* never built by backfill: stale if the table holds rows there */
			if (!built && !ChunkHoldsRows(facts, cs, ce))
				continue;
			reason = StaleReason(facts, cs, ce);
			if (reason == NULL)
				continue;
			out->starts[out->n] = cs;
			out->ends[out->n] = ce;
			out->reasons[out->n] = reason;
			out->n++;
		}
	}
	return true;
}

/*
 * SelectByPieces
 *		SelectChunks over the whole range: the history classified once
 *		(ClassifyPieces), each chunk kept when one of its pieces needs it
 *		(PieceNeeds) or it is stale (StaleReason).  Caller holds facts.
 */
static void
SelectByPieces(Oid target, int only, bool clear_no_source, Definition *def,
			   TimestampTz *bounds, int n, StaleFacts *facts,
			   PlanChunks *out)
{
	Piece	   *pieces;
	int			np;
	int			j = 0;
	int			k;

	out->n = 0;
	np = ClassifyPieces(target, bounds[0], bounds[n], &pieces);
	for (k = 0; k < n; k++)
	{
		TimestampTz cs = bounds[k];
		TimestampTz ce = bounds[k + 1];
		bool		needs = false;
		bool		built = false;
		char	   *reason = NULL;
		int			i;

		CHECK_FOR_INTERRUPTS();
		built = ChunkBuilt(pieces, np, &j, cs, ce);
		for (i = j; !needs && (only & ~ONLY_STALE) != 0 &&
			 i < np && pieces[i].lo < ce; i++)
			needs = PieceNeeds(&pieces[i], only & ~ONLY_STALE,
							   clear_no_source, def->version);
		/* never built by backfill: a logged change into rows counts */
		if ((only & ONLY_STALE) && !built &&
			RegionOverlaps(facts, cs, ce) && ChunkHoldsRows(facts, cs, ce))
			built = true;
		if ((only & ONLY_STALE) && built)
		{
			reason = StaleReason(facts, cs, ce);
			if (reason != NULL)
				needs = true;
		}
		if (needs)
		{
			out->starts[out->n] = cs;
			out->ends[out->n] = ce;
			out->reasons[out->n] = reason;
			out->n++;
		}
	}
}

/*
 * SelectChunks
 *		Keep the chunks of [bounds[0], bounds[n]) that need work under
 *		"only" (only_chunks); returns them in *out (possibly none), and
 *		out->reasons[k] says why chunk k was kept when it is stale (else
 *		NULL), written with the chunk by PlanRun.  Stale chunks are chunks
 *		that a logged change overlaps or whose ledger moved, with a settled
 *		build (done), or, for a logged change, that backfill never built
 *		but that hold rows (the job that fills the table built them:
 *		ChunkHoldsRows).
 */
void
SelectChunks(Oid target, int only, bool clear_no_source,
			 Definition *def, TimestampTz *bounds, int n,
			 PlanChunks *out)
{
	StaleFacts	facts;

	memset(&facts, 0, sizeof(facts));
	if (only & ONLY_STALE)
		LoadStaleFacts(target, def, bounds[0], bounds[n], &facts);
	out->n = 0;
	out->starts = palloc(sizeof(TimestampTz) * n);
	out->ends = palloc(sizeof(TimestampTz) * n);
	out->reasons = palloc0(sizeof(char *) * n);
	PG_TRY();
	{
		/* stale alone, no ledger: only the chunks with a logged change count */
		if (!(only == ONLY_STALE && def->ledger == NULL &&
			  SelectStaleOnly(target, &facts, bounds, n, out)))
			SelectByPieces(target, only, clear_no_source, def, bounds, n,
						   &facts, out);
	}
	PG_CATCH();
	{
		StaleFactsDone(&facts, true);
		PG_RE_THROW();
	}
	PG_END_TRY();
	StaleFactsDone(&facts, false);
}
