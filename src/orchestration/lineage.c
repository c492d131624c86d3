/*-------------------------------------------------------------------------
 *
 * lineage.c
 *	  A target's history cut into pieces, and which run wins each piece
 *	  (LineagePieces: the one rule, behind backfill._lineage_pieces and
 *	  so lineage(), and behind lineage_chart and plan's only_chunks).
 *
 * The rule of which run wins a stretch is written once, here: the chunks
 * of the target's runs over the range are read in one statement, either
 * as the caller, under the catalog's row-level security (_lineage_pieces,
 * which lineage() calls), or as the extension owner (ClassifyPieces,
 * ClassifyRanges), and the chunks that count kept (lineagereader.c);
 * they are merged per run into islands, the range is cut at every island
 * bound, and one sweep over the bounds with two priority queues says
 * which island wins each piece.  O(n log n) in the chunks read, whatever
 * their overlaps (doc/lineage.md, "What it costs").  lineage_chart draws
 * the pieces (lineagechart.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/binaryheap.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "backfill.h"

/* ----------------------------------------------------------------
 *		which run wins a stretch: the rule
 * ----------------------------------------------------------------
 */

/*
 * One island: consecutive attempts of one run, contiguous, with the same
 * status, clearing and executor; lo and hi clipped to the range.
 */
typedef struct Island
{
	int64		run_id;
	TimestampTz lo;
	TimestampTz hi;
	TimestampTz finished_at;	/* the latest of its chunks' */
	int			first;			/* its attempts: order[first .. last] */
	int			last;
	int32		version;
	int32		executor;
	ChunkStatus status;
	bool		finished_null;
	bool		cleared;
} Island;

/*
 * NewIsland
 *		Whether attempt b (after a, in order) starts a new island: another
 *		run, a gap, or another status, clearing or executor.
 */
static bool
NewIsland(const Attempt *a, const Attempt *b)
{
	return a->run != b->run || a->hi != b->lo ||
		a->status != b->status || a->cleared != b->cleared ||
		a->executor != b->executor;
}

/*
 * TsCmp
 *		qsort comparator of TimestampTz.
 */
static int
TsCmp(const void *a, const void *b)
{
	TimestampTz x = *(const TimestampTz *) a;
	TimestampTz y = *(const TimestampTz *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/*
 * IslandBetter
 *		binaryheap comparator of islands (indexes into the Island array
 *		arg): > 0 when a wins over b: it finished later (a NULL time
 *		loses), then it is of the higher run id.  Islands of one run never
 *		cover the same piece, so this orders the islands over a piece.
 */
static int
IslandBetter(Datum a, Datum b, void *arg)
{
	Island	   *x = &((Island *) arg)[DatumGetInt32(a)];
	Island	   *y = &((Island *) arg)[DatumGetInt32(b)];

	if (x->finished_null != y->finished_null)
		return x->finished_null ? -1 : 1;
	if (!x->finished_null && x->finished_at != y->finished_at)
		return x->finished_at < y->finished_at ? -1 : 1;
	if (x->run_id != y->run_id)
		return x->run_id < y->run_id ? -1 : 1;
	return 0;
}

/*
 * IslandStartCmp
 *		qsort_arg comparator of island indexes (into the Island array arg):
 *		by start.
 */
static int
IslandStartCmp(const void *a, const void *b, void *arg)
{
	Island	   *islands = (Island *) arg;
	TimestampTz x = islands[*(const int *) a].lo;
	TimestampTz y = islands[*(const int *) b].lo;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/*
 * TopCovering
 *		The best island of heap still covering the piece that starts at p
 *		(islands that ended by p are dropped on the way), -1 when none.
 */
static int
TopCovering(binaryheap *heap, Island *islands, TimestampTz p)
{
	while (!binaryheap_empty(heap))
	{
		int			i = DatumGetInt32(binaryheap_first(heap));

		if (islands[i].hi > p)
			return i;
		(void) binaryheap_remove_first(heap);
	}
	return -1;
}

/*
 * ReasonCmp
 *		qsort comparator of C strings.
 */
static int
ReasonCmp(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/*
 * WinnerDetails
 *		Of the winning island w's chunks that overlap [p, q): the latest
 *		finished_at into *piece, and their distinct reasons (allocated in
 *		outcxt).  The island's attempts are sorted by start and contiguous:
 *		a binary search finds the first that ends after p.
 */
static void
WinnerDetails(HistoryReader *r, Island *w, TimestampTz p, TimestampTz q,
			  Piece *piece, MemoryContext outcxt)
{
	int			lo = w->first;
	int			hi = w->last + 1;
	int			j;
	int			nreasons = 0;
	char	  **reasons = NULL;

	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (ATTEMPT(r, r->order[mid])->hi <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	piece->finished_null = true;
	for (j = lo; j <= w->last && ATTEMPT(r, r->order[j])->lo < q; j++)
	{
		Attempt    *a = ATTEMPT(r, r->order[j]);

		CHECK_FOR_INTERRUPTS();
		if (!a->finished_null &&
			(piece->finished_null || a->finished_at > piece->finished_at))
		{
			piece->finished_at = a->finished_at;
			piece->finished_null = false;
		}
		if (a->reason != 0)
		{
			if (reasons == NULL)
				reasons = palloc(sizeof(char *) * (w->last - j + 1));
			reasons[nreasons++] = r->reasons[a->reason - 1];
		}
	}
	piece->nreasons = 0;
	piece->reasons = NULL;
	if (nreasons == 0)
		return;
	qsort(reasons, nreasons, sizeof(char *), ReasonCmp);
	piece->reasons = MemoryContextAlloc(outcxt, sizeof(char *) * nreasons);
	for (j = 0; j < nreasons; j++)
		if (j == 0 || strcmp(reasons[j], reasons[j - 1]) != 0)
			piece->reasons[piece->nreasons++] =
				MemoryContextStrdup(outcxt, reasons[j]);
	pfree(reasons);
}

/*
 * MakeIslands
 *		The islands of the attempts that count (r->order), counted, then
 *		made: per run, contiguous attempts with the same status, clearing
 *		and executor (NewIsland), each finished when the latest of its
 *		chunks did (NULL when none has a time).  Not yet clipped to the
 *		range.  Linear in the attempts; the islands are palloc'd, their
 *		number in *count.
 */
static Island *
MakeIslands(HistoryReader *r, int *count)
{
	Island	   *islands;
	int			nislands = 0;
	int64		i;

	for (i = 0; i < r->norder; i++)
		if (i == 0 || NewIsland(ATTEMPT(r, r->order[i - 1]),
								ATTEMPT(r, r->order[i])))
			nislands++;
	islands = palloc_extended(sizeof(Island) * Max(nislands, 1),
							  MCXT_ALLOC_HUGE);
	nislands = 0;
	for (i = 0; i < r->norder; i++)
	{
		Attempt    *a = ATTEMPT(r, r->order[i]);
		Island	   *cur = nislands > 0 ? &islands[nislands - 1] : NULL;

		CHECK_FOR_INTERRUPTS();
		if (i > 0 && !NewIsland(ATTEMPT(r, r->order[i - 1]), a))
		{
			cur->last = (int) i;
			cur->hi = a->hi;
		}
		else
		{
			cur = &islands[nislands++];
			cur->run_id = r->runs[a->run].run_id;
			cur->lo = a->lo;
			cur->hi = a->hi;
			cur->first = cur->last = (int) i;
			cur->version = r->runs[a->run].version;
			cur->executor = (int32) a->executor - 1;
			cur->status = a->status;
			cur->cleared = a->cleared;
			cur->finished_null = true;
		}
		if (!a->finished_null &&
			(cur->finished_null || a->finished_at > cur->finished_at))
		{
			cur->finished_at = a->finished_at;
			cur->finished_null = false;
		}
	}
	*count = nislands;
	return islands;
}

/*
 * CutBounds
 *		Clip each island to the range [wlo, whi), and the bounds that cut
 *		the range into pieces: the range's and each island's, sorted,
 *		distinct (palloc'd, their number in *count).  O(m log m) in the m
 *		islands.
 */
static TimestampTz *
CutBounds(Island *islands, int nislands, TimestampTz wlo, TimestampTz whi,
		  int *count)
{
	TimestampTz *bounds;
	int			nbounds = 0;
	int64		i;
	int			k;

	bounds = palloc_extended(sizeof(TimestampTz) * (2 * nislands + 2),
							 MCXT_ALLOC_HUGE);
	bounds[nbounds++] = wlo;
	bounds[nbounds++] = whi;
	for (k = 0; k < nislands; k++)
	{
		islands[k].lo = Min(Max(islands[k].lo, wlo), whi);
		islands[k].hi = Max(Min(islands[k].hi, whi), wlo);
		bounds[nbounds++] = islands[k].lo;
		bounds[nbounds++] = islands[k].hi;
	}
	qsort(bounds, nbounds, sizeof(TimestampTz), TsCmp);
	for (i = 1, k = 1; i < nbounds; i++)
		if (bounds[i] != bounds[k - 1])
			bounds[k++] = bounds[i];
	nbounds = k;
	*count = nbounds;
	return bounds;
}

/*
 * LineagePieces
 *		See backfill.h.  The rule:
 *
 *		1. The chunks that count (HistoryReceive, CountingAttempts): of
 *		   ordinary runs, those that reached their range (done or failed
 *		   once finished; no_source once cleared or once the run is done;
 *		   cancelled), less the settled ones a revert undid.  Revert runs
 *		   are never lineage.
 *		2. Islands: per run, contiguous chunks with the same status,
 *		   clearing and executor; an island finished when its last chunk
 *		   did (a chunk without a finished_at takes its run's).
 *		3. The range [lo, hi) (the two bounds in order, when given the
 *		   other way round) is cut at every island bound inside it.
 *		4. On each piece, of the islands that cover it, the one that
 *		   finished last wins (NULL last), then the higher run id: the
 *		   latest attempt; the settled winner is the best of the settled
 *		   (done or no_source) islands over it.  Its finished_at is the
 *		   latest of its chunks over the piece.
 *
 *		Step 4 is a sweep over the sorted bounds: the islands enter two
 *		max-heaps (all; settled) at their start, and a heap's top that
 *		ended is dropped when it is met.  With n chunks read and m
 *		islands: O(n log n + m log m) time, O(n) memory.  The pieces
 *		(with their run, executor and reasons) are allocated in the
 *		caller's memory context, in order.  Caller is connected to SPI.
 */
int
LineagePieces(Oid target, TimestampTz lo, TimestampTz hi, bool as_owner,
			  Piece **pieces)
{
	MemoryContext outcxt = CurrentMemoryContext;
	MemoryContext workcxt;
	MemoryContext oldcxt;
	HistoryReader r;
	Island	   *islands;
	int			nislands;
	int		   *order;
	TimestampTz *bounds;
	int			nbounds;
	TimestampTz wlo = Min(lo, hi);
	TimestampTz whi = Max(lo, hi);
	binaryheap *all;
	binaryheap *settled;
	char	  **executors;
	Piece	   *out;
	int			npieces = 0;
	int			next = 0;
	int			k;

	workcxt = AllocSetContextCreate(CurrentMemoryContext,
									"backfill lineage",
									ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(workcxt);
	ReadHistory(target, lo, hi, as_owner, &r);
	CountingAttempts(&r);

	/* islands, clipped to the range; the bounds that cut it into pieces */
	islands = MakeIslands(&r, &nislands);
	bounds = CutBounds(islands, nislands, wlo, whi, &nbounds);

	/* the sweep */
	order = palloc_extended(sizeof(int) * Max(nislands, 1), MCXT_ALLOC_HUGE);
	for (k = 0; k < nislands; k++)
		order[k] = k;
	qsort_arg(order, nislands, sizeof(int), IslandStartCmp, islands);
	all = binaryheap_allocate(Max(nislands, 1), IslandBetter, islands);
	settled = binaryheap_allocate(Max(nislands, 1), IslandBetter, islands);

	MemoryContextSwitchTo(outcxt);
	executors = palloc(sizeof(char *) * Max(r.nexecutors, 1));
	for (k = 0; k < r.nexecutors; k++)
		executors[k] = pstrdup(r.executors[k]);
	out = palloc_extended(sizeof(Piece) * Max(nbounds - 1, 1),
						  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	MemoryContextSwitchTo(workcxt);
	for (k = 0; k + 1 < nbounds; k++)
	{
		TimestampTz p = bounds[k];
		TimestampTz q = bounds[k + 1];
		Piece	   *piece = &out[npieces++];
		int			top;
		int			win;

		CHECK_FOR_INTERRUPTS();
		while (next < nislands && islands[order[next]].lo <= p)
		{
			Island	   *is = &islands[order[next]];

			/* an island clipped away (outside the range) covers nothing */
			if (is->hi > is->lo)
			{
				binaryheap_add(all, Int32GetDatum(order[next]));
				if (is->status == CHUNK_DONE || is->status == CHUNK_NO_SOURCE)
					binaryheap_add(settled, Int32GetDatum(order[next]));
			}
			next++;
		}
		top = TopCovering(all, islands, p);
		win = TopCovering(settled, islands, p);
		piece->lo = p;
		piece->hi = q;
		piece->latest = top < 0 ? CHUNK_NONE : islands[top].status;
		piece->settled = CHUNK_NONE;
		piece->finished_null = true;
		if (win >= 0)
		{
			Island	   *w = &islands[win];

			piece->settled = w->status;
			piece->run_id = w->run_id;
			piece->version = w->version;
			piece->cleared = w->cleared;
			piece->executed_by = w->executor < 0 ? NULL :
				executors[w->executor];
			WinnerDetails(&r, w, p, q, piece, outcxt);
		}
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(workcxt);
	*pieces = out;
	return npieces;
}

/*
 * ClassifyRanges
 *		See backfill.h: LineagePieces as the extension owner over each
 *		range, the pieces one after the other.  Caller is connected to SPI.
 */
int
ClassifyRanges(Oid target, TimestampTz *los, TimestampTz *his, int n,
			   Piece **pieces)
{
	int			total = 0;
	int			size = 0;
	Piece	   *out = NULL;
	int			k;

	for (k = 0; k < n; k++)
	{
		Piece	   *some;
		int			rows;

		CHECK_FOR_INTERRUPTS();
		rows = LineagePieces(target, los[k], his[k], true, &some);
		if (total + rows > size)
		{
			size = Max(total + rows, 2 * size);
			out = out == NULL ?
				palloc_extended(sizeof(Piece) * Max(size, 1), MCXT_ALLOC_HUGE) :
				repalloc_huge(out, sizeof(Piece) * size);
		}
		memcpy(out + total, some, sizeof(Piece) * rows);
		total += rows;
		pfree(some);
	}
	*pieces = out != NULL ? out : palloc0(sizeof(Piece));
	return total;
}

/*
 * ClassifyPieces
 *		See backfill.h: ClassifyRanges over the one range [lo, hi).
 */
int
ClassifyPieces(Oid target, TimestampTz lo, TimestampTz hi, Piece **pieces)
{
	return ClassifyRanges(target, &lo, &hi, 1, pieces);
}
