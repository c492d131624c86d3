/*-------------------------------------------------------------------------
 *
 * lineagereader.c
 *	  The history that lineage reads: every chunk of a target's runs over
 *	  a range, read in one statement (ReadHistory) as the caller or as the
 *	  extension owner, and kept compactly as it arrives; and the chunks
 *	  that count, all but the settled ones a revert undid
 *	  (CountingAttempts).  Step 1 of the rule of which run wins
 *	  (LineagePieces, lineage.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "tcop/dest.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "backfill.h"

/*
 * The history of a target over [$2, $3): every chunk of its runs that
 * overlaps the range, whatever its status; the rule below decides which
 * count.  Read as the caller (under row-level security) or as the owner.
 */
#define HISTORY_SQL \
	"SELECT c.run_id, c.chunk_no, c.chunk_start, c.chunk_end, c.status," \
	" c.executed_by, c.finished_at, r.status, r.finished_at," \
	" r.definition_version, r.reverts, c.reason" \
	" FROM backfill.runs r JOIN backfill.chunks c" \
	"  ON c.run_id OPERATOR(pg_catalog.=) r.run_id" \
	" WHERE r.target OPERATOR(pg_catalog.=) $1" \
	" AND c.chunk_end OPERATOR(pg_catalog.>) $2" \
	" AND c.chunk_start OPERATOR(pg_catalog.<) $3"

/*
 * The most chunks one read of a history may hold (an executor's number
 * must fit in Attempt.executor; pieces and bounds are counted in int).
 */
#define HISTORY_MAX_CHUNKS	((int64) ((1 << 26) - 1))

/* An entry of HistoryReader.run_ids. */
typedef struct RunIndex
{
	int64		run_id;
	int32		index;
} RunIndex;

/* An entry of HistoryReader.executor_ids. */
typedef struct ExecutorId
{
	NameData	name;
	int			id;
} ExecutorId;

/*
 * GrowArray
 *		Make room for one more element of size "size" in *array (holding n
 *		of *max), doubling it (huge allocations: a history may be large).
 *		The callers bound n by HISTORY_MAX_CHUNKS first.
 */
static void
GrowArray(void **array, int64 n, int64 *max, Size size, MemoryContext cxt)
{
	if (n < *max)
		return;
	*max = Max(*max * 2, 1024);
	if (*array == NULL)
		*array = MemoryContextAllocHuge(cxt, size * *max);
	else
		*array = repalloc_huge(*array, size * *max);
}

/*
 * RefuseLongHistory
 *		54000: the history over the range holds more chunks than one read
 *		may keep.
 */
static void
RefuseLongHistory(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("the history to read has more than " INT64_FORMAT " chunks",
					HISTORY_MAX_CHUNKS),
			 errdetail("Lineage reads every chunk of the target's runs that overlaps the range at once."),
			 errhint("Read the lineage of a shorter range.")));
}

/*
 * ExecutorIndex
 *		The index of an executor's name in r->executors, added if new.
 */
static int32
ExecutorIndex(HistoryReader *r, Name name)
{
	ExecutorId *e;
	bool		found;

	/* rows of one executor mostly come together */
	if (r->last_executor >= 0 &&
		strcmp(NameStr(*name), r->executors[r->last_executor]) == 0)
		return r->last_executor;
	e = hash_search(r->executor_ids, NameStr(*name), HASH_ENTER, &found);
	if (!found)
	{
		if (r->nexecutors == r->maxexecutors)
		{
			r->maxexecutors = Max(2 * r->maxexecutors, 8);
			r->executors = r->executors == NULL ?
				MemoryContextAlloc(r->cxt, sizeof(char *) * r->maxexecutors) :
				repalloc(r->executors, sizeof(char *) * r->maxexecutors);
		}
		e->id = r->nexecutors;
		r->executors[r->nexecutors++] = MemoryContextStrdup(r->cxt,
															NameStr(*name));
	}
	r->last_executor = e->id;
	return e->id;
}

/*
 * RunIndexOf
 *		The index of a run in r->runs, added (with its version) if new.
 *		Rows of one run mostly come together: the previous row's run is
 *		tried first.
 */
static int32
RunIndexOf(HistoryReader *r, int64 run_id, int32 version)
{
	RunIndex   *e;
	bool		found;

	if (r->last_run >= 0 && r->last_run_id == run_id)
		return r->last_run;
	e = hash_search(r->run_ids, &run_id, HASH_ENTER, &found);
	if (!found)
	{
		GrowArray((void **) &r->runs, r->nruns, &r->maxruns,
				  sizeof(HistoryRun), r->cxt);
		e->index = (int32) r->nruns;
		r->runs[r->nruns].run_id = run_id;
		r->runs[r->nruns].version = version;
		r->runs[r->nruns].reverted = false;
		r->nruns++;
	}
	r->last_run_id = run_id;
	r->last_run = e->index;
	return e->index;
}

/*
 * RunStatusOf
 *		The run status spelled by a text datum, without allocating.
 */
static RunStatus
RunStatusOf(Datum d)
{
	char		buf[NAMEDATALEN];

	text_to_cstring_buffer(DatumGetTextPP(d), buf, sizeof(buf));
	return ParseRunStatus(buf);
}

/*
 * HistoryReceive
 *		One row of HISTORY_SQL: a done chunk of a revert run becomes a
 *		revert step; a chunk of an ordinary run becomes an attempt when it
 *		reached its range: done or failed once finished, no_source once
 *		cleared or once its run is done, cancelled.  Everything else
 *		changed nothing and is dropped.
 */
static bool
HistoryReceive(TupleTableSlot *slot, DestReceiver *self)
{
	HistoryReader *r = (HistoryReader *) self;
	Datum	   *v;
	bool	   *isnull;
	ChunkStatus status;
	bool		cleared;
	Attempt    *a;

	CHECK_FOR_INTERRUPTS();
	slot_getallattrs(slot);
	v = slot->tts_values;
	isnull = slot->tts_isnull;
	{
		char		buf[NAMEDATALEN];

		/* most rows have the status of the row before */
		text_to_cstring_buffer(DatumGetTextPP(v[4]), buf, sizeof(buf));
		if (strcmp(buf, r->last_status) != 0)
		{
			r->last_status_value = ParseChunkStatus(buf);
			strlcpy(r->last_status, buf, sizeof(r->last_status));
		}
		status = r->last_status_value;
	}
	if (!isnull[10])
	{
		RevertStep *s;

		if (status != CHUNK_DONE)
			return true;
		if (r->nattempts + r->nsteps >= HISTORY_MAX_CHUNKS)
			RefuseLongHistory();
		GrowArray((void **) &r->steps, r->nsteps, &r->maxsteps,
				  sizeof(RevertStep), r->cxt);
		s = &r->steps[r->nsteps++];
		s->undid = DatumGetInt64(v[10]);
		s->run_id = DatumGetInt64(v[0]);
		s->chunk_no = DatumGetInt32(v[1]);
		s->depth = -1;
		return true;
	}

	cleared = !isnull[6];
	switch (status)
	{
		case CHUNK_DONE:
		case CHUNK_FAILED:
			if (!cleared)
				return true;
			break;
		case CHUNK_NO_SOURCE:
			if (!cleared && (isnull[7] ||
							 RunStatusOf(v[7]) != RUN_DONE))
				return true;
			break;
		case CHUNK_CANCELLED:
			break;
		default:
			return true;
	}

	if (r->nattempts + r->nsteps >= HISTORY_MAX_CHUNKS)
		RefuseLongHistory();
	if (r->nattempts % ATTEMPTS_PER_BLOCK == 0)
	{
		GrowArray((void **) &r->blocks, r->nblocks, &r->maxblocks,
				  sizeof(Attempt *), r->cxt);
		r->blocks[r->nblocks++] =
			MemoryContextAlloc(r->cxt, sizeof(Attempt) * ATTEMPTS_PER_BLOCK);
	}
	a = ATTEMPT(r, r->nattempts);
	r->nattempts++;
	a->run = RunIndexOf(r, DatumGetInt64(v[0]), DatumGetInt32(v[9]));
	a->chunk_no = DatumGetInt32(v[1]);
	a->lo = DatumGetTimestampTz(v[2]);
	a->hi = DatumGetTimestampTz(v[3]);
	a->status = status;
	a->executor = isnull[5] ? 0 : 1 + ExecutorIndex(r, DatumGetName(v[5]));
	a->cleared = cleared;
	a->finished_null = isnull[6] && isnull[8];
	a->finished_at = a->finished_null ? 0 :
		DatumGetTimestampTz(isnull[6] ? v[8] : v[6]);
	a->reason = 0;
	if (!isnull[11])
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(r->cxt);

		GrowArray((void **) &r->reasons, r->nreasons, &r->maxreasons,
				  sizeof(char *), r->cxt);
		r->reasons[r->nreasons++] = TextDatumGetCString(v[11]);
		a->reason = (int32) r->nreasons;
		MemoryContextSwitchTo(oldcxt);
	}
	return true;
}

/* HistoryStartup, HistoryShutdown, HistoryDestroy: nothing to do. */
static void
HistoryStartup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
}

static void
HistoryShutdown(DestReceiver *self)
{
}

static void
HistoryDestroy(DestReceiver *self)
{
}

/*
 * ReadHistory
 *		Read the history of target over [lo, hi) into r (HISTORY_SQL), as
 *		the extension owner (CatalogExecArgsInto) or as the caller
 *		(SpiExecPinnedDest: the catalog's row-level security applies, with
 *		the caller's snapshot), with jit and parallel query off.  Caller is
 *		connected to SPI.
 */
void
ReadHistory(Oid target, TimestampTz lo, TimestampTz hi, bool as_owner,
			HistoryReader *r)
{
	HASHCTL		ctl;
	int			nest;

	memset(r, 0, sizeof(HistoryReader));
	r->pub.receiveSlot = HistoryReceive;
	r->pub.rStartup = HistoryStartup;
	r->pub.rShutdown = HistoryShutdown;
	r->pub.rDestroy = HistoryDestroy;
	/* any but DestNone (SPI_OK_UTILITY) and DestSPI (SPI_tuptable) */
	r->pub.mydest = DestTuplestore;
	r->cxt = CurrentMemoryContext;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = NAMEDATALEN;
	ctl.entrysize = sizeof(ExecutorId);
	ctl.hcxt = r->cxt;
	r->executor_ids = hash_create("backfill lineage executors", 16, &ctl,
								  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(int64);
	ctl.entrysize = sizeof(RunIndex);
	ctl.hcxt = r->cxt;
	r->run_ids = hash_create("backfill lineage runs", 64, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	r->last_run = -1;
	r->last_executor = -1;

	/*
	 * jit off (its compilation costs more than this plain read), and no
	 * parallel workers: every row ends in this backend's receiver, and a
	 * Gather would only pass them through shared memory (at 300,000 chunks
	 * without statistics, a parallel plan took 3 to 4 times as long)
	 */
	nest = NewGUCNestLevel();
	(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("max_parallel_workers_per_gather", "0",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true,
							 0, false);
	PG_TRY();
	{
		if (as_owner)
		{
			CatalogArgs args;

			CatalogArgsInit(&args);
			CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(target), false);
			CatalogArg(&args, TIMESTAMPTZOID, TimestampTzGetDatum(lo), false);
			CatalogArg(&args, TIMESTAMPTZOID, TimestampTzGetDatum(hi), false);
			CatalogExecArgsInto(HISTORY_SQL, &args, &r->pub, SPI_OK_SELECT);
		}
		else
		{
			Oid			argtypes[3] = {REGCLASSOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
			Datum		values[3];

			values[0] = ObjectIdGetDatum(target);
			values[1] = TimestampTzGetDatum(lo);
			values[2] = TimestampTzGetDatum(hi);
			SpiExecPinnedDest(HISTORY_SQL, 3, argtypes, values, NULL, &r->pub,
							  SPI_OK_SELECT);
		}
	}
	PG_FINALLY();
	{
		/* as on abort, so that it is safe in an error path too */
		AtEOXact_GUC(false, nest);
	}
	PG_END_TRY();
}

/*
 * StepCmp
 *		qsort comparator of revert steps: by the run and chunk they undid.
 */
static int
StepCmp(const void *a, const void *b)
{
	const RevertStep *x = (const RevertStep *) a;
	const RevertStep *y = (const RevertStep *) b;

	if (x->undid != y->undid)
		return x->undid < y->undid ? -1 : 1;
	if (x->chunk_no != y->chunk_no)
		return x->chunk_no < y->chunk_no ? -1 : 1;
	return 0;
}

static int	ChainDepth(RevertStep *steps, int64 n, int64 run_id, int32 chunk_no);

/*
 * StepDepth
 *		1 + the depth of the chain above revert step s (memoized).
 */
static int
StepDepth(RevertStep *steps, int64 n, RevertStep *s)
{
	if (s->depth == -2)
		elog(ERROR, "backfill: run %lld reverts itself through its reverts",
			 (long long) s->run_id);
	if (s->depth == -1)
	{
		s->depth = -2;
		s->depth = 1 + ChainDepth(steps, n, s->run_id, s->chunk_no);
	}
	return s->depth;
}

/*
 * ChainDepth
 *		How many reverts chunk chunk_no of run run_id is away from the end
 *		of its chain of reverts: 0 when no revert undid it, else 1 + that
 *		of its revert's chunk, the longest when it was reverted more than
 *		once (a cancelled revert, then another).  steps are sorted
 *		(StepCmp).
 */
static int
ChainDepth(RevertStep *steps, int64 n, int64 run_id, int32 chunk_no)
{
	RevertStep	key;
	int64		lo = 0;
	int64		hi = n;
	int			depth = 0;

	check_stack_depth();
	CHECK_FOR_INTERRUPTS();
	key.undid = run_id;
	key.chunk_no = chunk_no;
	/* the first step of (run_id, chunk_no) */
	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (StepCmp(&steps[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && StepCmp(&steps[lo], &key) == 0; lo++)
		depth = Max(depth, StepDepth(steps, n, &steps[lo]));
	return depth;
}

/*
 * StartCmp
 *		qsort_arg comparator of attempt numbers (of the HistoryReader arg):
 *		by start (the attempts of one run never overlap).
 */
static int
StartCmp(const void *a, const void *b, void *arg)
{
	HistoryReader *r = (HistoryReader *) arg;
	TimestampTz x = ATTEMPT(r, *(const int32 *) a)->lo;
	TimestampTz y = ATTEMPT(r, *(const int32 *) b)->lo;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/*
 * CountingAttempts
 *		The attempts that count, in r->order, grouped by run and in order
 *		of start within a run: all but the settled ones a revert undid, a
 *		chunk whose chain of reverts (a revert, the revert of that revert,
 *		...) has odd length having left the rows as they were before it.
 *		The runs are grouped by counting (linear), then each run's attempts
 *		sorted by start, which a run's rows mostly already are: close to
 *		linear in practice, O(n log n) at worst.
 */
void
CountingAttempts(HistoryReader *r)
{
	int64		i;
	int64	   *start;
	int64		k;

	if (r->nsteps > 0)
	{
		qsort(r->steps, r->nsteps, sizeof(RevertStep), StepCmp);
		/* only the chunks of a run some revert undid need a look */
		for (i = 0; i < r->nsteps; i++)
		{
			RunIndex   *e = hash_search(r->run_ids, &r->steps[i].undid,
										HASH_FIND, NULL);

			if (e != NULL)
				r->runs[e->index].reverted = true;
		}
	}

	/* where each run's attempts start in order: counted first */
	start = palloc0(sizeof(int64) * (r->nruns + 1));
	for (i = 0; i < r->nattempts; i++)
	{
		Attempt    *a = ATTEMPT(r, i);

		if (r->runs[a->run].reverted &&
			(a->status == CHUNK_DONE || a->status == CHUNK_NO_SOURCE) &&
			ChainDepth(r->steps, r->nsteps, r->runs[a->run].run_id,
					   a->chunk_no) % 2 == 1)
		{
			a->status = CHUNK_NONE; /* undone: it does not count */
			continue;
		}
		start[a->run + 1]++;
	}
	for (k = 0; k < r->nruns; k++)
		start[k + 1] += start[k];
	r->norder = (int) start[r->nruns];
	r->order = palloc_extended(sizeof(int32) * Max(r->norder, 1),
							   MCXT_ALLOC_HUGE);
	for (i = 0; i < r->nattempts; i++)
	{
		Attempt    *a = ATTEMPT(r, i);

		if (a->status != CHUNK_NONE)
			r->order[start[a->run]++] = (int32) i;
	}
	/* start[k] is now where run k + 1 starts: sort each run by start */
	for (k = 0; k < r->nruns; k++)
	{
		int64		from = k == 0 ? 0 : start[k - 1];
		int64		n = start[k] - from;

		CHECK_FOR_INTERRUPTS();
		if (n > 1)
			qsort_arg(r->order + from, n, sizeof(int32), StartCmp, r);
	}
	pfree(start);
}
