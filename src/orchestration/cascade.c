/*-------------------------------------------------------------------------
 *
 * cascade.c
 *	  Plans that choose their chunks: plan(..., only_chunks) keeps only the
 *	  chunks of the range that need work (SelectChunks, onlychunks.c);
 *	  plan(..., cascade => true) plans the target's run and one run per
 *	  transitive downstream target, as a group.
 *
 * Each downstream run covers the chunks of its direct upstream runs
 * widened to whole chunks of its own chunk size, on a fixed grid
 * (ChunkCell, range.c).  The runs share a group_id (the root run's id);
 * group.c says when a chunk of a group may execute.
 *
 * Catalog tables are read and written only through CatalogExec; runs are
 * planned by plan.c (PlanRun), which checks the caller's rights on every
 * target.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/binaryheap.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "backfill.h"

/* One target of a cascading plan, in dependency order. */
typedef struct PlanNode
{
	Oid			target;
	char	   *name;
	int64		run_id;
	PlanChunks	chunks;
} PlanNode;

/* ----------------------------------------------------------------
 *		widening to whole chunks of a downstream target
 * ----------------------------------------------------------------
 */

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
 * RefuseTooManyChunks
 *		54000: the run of a cascading plan for "name" would have more than
 *		backfill.max_chunks chunks.
 */
static void
RefuseTooManyChunks(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("the run of %s would have more than %d chunks",
					name, backfill_max_chunks),
			 errhint("Plan a shorter range, or ask a superuser to raise backfill.max_chunks (at most %d).",
					 BACKFILL_MAX_CHUNKS_CEILING)));
}

/*
 * Widen
 *		The chunks of "step" that cover any of the given upstream chunks,
 *		added to *cells (which may already hold some), for the run of
 *		"name".  The cells of one upstream run are distinct and in order, so
 *		their number is a lower bound of the run's chunks: it is counted
 *		while widening, and more than backfill.max_chunks is refused before
 *		the next cell is made, so memory stays bounded by max_chunks cells
 *		per upstream run whatever the chunk sizes (a '1 microsecond' chunk
 *		under an hourly one fails after max_chunks cells, not 3.6 billion).
 */
static void
Widen(const PlanChunks *up, Interval *step, List **cells, const char *name)
{
	int			k;
	int64		made = 0;
	TimestampTz *last = NULL;

	for (k = 0; k < up->n; k++)
	{
		TimestampTz lo;
		TimestampTz hi;

		ChunkCell(up->starts[k], step, &lo, &hi);
		for (;;)
		{
			CHECK_FOR_INTERRUPTS();
			/* consecutive upstream chunks often share a cell: keep one */
			if (last == NULL || last[0] != lo)
			{
				TimestampTz *cell;

				if (++made > backfill_max_chunks)
					RefuseTooManyChunks(name);
				cell = palloc(sizeof(TimestampTz) * 2);
				cell[0] = lo;
				cell[1] = hi;
				*cells = lappend(*cells, cell);
				last = cell;
			}
			if (hi >= up->ends[k])
				break;
			ChunkCell(hi, step, &lo, &hi);
		}
	}
}

/*
 * CellsToChunks
 *		Sort the cells, drop duplicates (and merge overlapping ones), and
 *		return them as PlanChunks.
 */
static void
CellsToChunks(List *cells, PlanChunks *out)
{
	int			n = list_length(cells);
	TimestampTz *pairs = palloc(sizeof(TimestampTz) * 2 * Max(n, 1));
	ListCell   *lc;
	int			i = 0;
	int			k;

	foreach(lc, cells)
	{
		TimestampTz *cell = (TimestampTz *) lfirst(lc);

		pairs[2 * i] = cell[0];
		pairs[2 * i + 1] = cell[1];
		i++;
	}
	/* cells of one grid with the same start are the same cell */
	qsort(pairs, n, sizeof(TimestampTz) * 2, TsCmp);
	out->n = 0;
	out->starts = palloc(sizeof(TimestampTz) * Max(n, 1));
	out->ends = palloc(sizeof(TimestampTz) * Max(n, 1));
	out->reasons = NULL;
	for (k = 0; k < n; k++)
	{
		if (out->n > 0 && out->starts[out->n - 1] == pairs[2 * k])
			continue;

		/*
		 * Cells of one grid never overlap; a replan's old chunks and the
		 * cells of a changed chunk interval may: they become one chunk.
		 */
		if (out->n > 0 && pairs[2 * k] < out->ends[out->n - 1])
		{
			out->ends[out->n - 1] = Max(out->ends[out->n - 1],
										pairs[2 * k + 1]);
			continue;
		}
		out->starts[out->n] = pairs[2 * k];
		out->ends[out->n] = pairs[2 * k + 1];
		out->n++;
	}
}

/*
 * How the runs of a group plan are planned (PlanGroup): the first run
 * planned (the group's root) is probed and run backwards as asked, the
 * others neither; every run clears no_source chunks as asked; a run
 * without a seed of its own takes the note and keeping given here.
 */
typedef struct GroupPlanOptions
{
	bool		probe;
	bool		backwards;
	bool		clear_no_source;
	const char *note;			/* NULL: none */
	bool		keep_given;		/* keep_replaced given: else the definition's */
	bool		keep_replaced;
	bool		hint;			/* the NOTICE ends with run_group's hint */
} GroupPlanOptions;

/*
 * SeedCells
 *		The cells of target's seeds' chunks, in a list, and its seed into
 *		*seed (NULL when none): the last of its seeds, or the first that
 *		is a run planned already (planned_run), whose chunks are not made
 *		cells.
 */
static List *
SeedCells(Oid target, ReplanSeed *seeds, int nseeds, ReplanSeed **seed)
{
	ReplanSeed *found = NULL;
	List	   *cells = NIL;
	int			s;

	for (s = 0; s < nseeds; s++)
	{
		int			k;

		if (seeds[s].target != target)
			continue;
		found = &seeds[s];
		if (found->planned_run != 0)
			break;
		for (k = 0; k < found->chunks.n; k++)
		{
			TimestampTz *cell = palloc(sizeof(TimestampTz) * 2);

			cell[0] = found->chunks.starts[k];
			cell[1] = found->chunks.ends[k];
			cells = lappend(cells, cell);
		}
	}
	*seed = found;
	return cells;
}

/*
 * RecordGroupRun
 *		Record in node's run the group group_id, its upstream runs (the
 *		nups in ups; NULL when none) and the run it continues (its seed's
 *		old run; NULL when none).  Caller is connected to SPI.
 */
static void
RecordGroupRun(PlanNode *node, int64 group_id, Datum *ups, int nups,
			   ReplanSeed *seed)
{
	Oid			types[4] = {INT8OID, INT8OID, INT8ARRAYOID, INT8OID};
	Datum		vals[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	vals[0] = Int64GetDatum(node->run_id);
	vals[1] = Int64GetDatum(group_id);
	vals[2] = PointerGetDatum(construct_array(ups, nups, INT8OID, sizeof(int64),
											  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	vals[3] = Int64GetDatum(seed != NULL ? seed->old_run : 0);
	if (seed == NULL || seed->old_run == 0)
		nulls[3] = 'n';
	CatalogExec("UPDATE backfill.runs SET group_id = $2,"
				" upstream_runs = CASE WHEN pg_catalog.cardinality($3) OPERATOR(pg_catalog.>) 0 THEN $3 END,"
				" continues_run = $4"
				" WHERE run_id OPERATOR(pg_catalog.=) $1",
				4, types, vals, nulls, SPI_OK_UPDATE);
}

/*
 * GroupNotice
 *		The NOTICE that sums a group up: its id, the number of runs
 *		planned and their summary; with run_group's hint when asked.
 *		Nothing when no run was planned.
 */
static void
GroupNotice(int64 group_id, int planned, const char *summary, bool hint)
{
	if (planned > 0 && hint)
		ereport(NOTICE,
				(errmsg("planned group %lld: %d run%s", (long long) group_id,
						planned, planned == 1 ? "" : "s"),
				 errdetail("%s.", summary),
				 errhint("CALL backfill.run_group(%lld) runs them in dependency order.",
						 (long long) group_id)));
	else if (planned > 0)
		ereport(NOTICE,
				(errmsg("planned group %lld: %d run%s", (long long) group_id,
						planned, planned == 1 ? "" : "s"),
				 errdetail("%s.", summary)));
}

/*
 * PlanGroup
 *		The one planning loop of a group, for a cascading plan
 *		(PipelinePlan) and for replan_group (CascadeReplan).  The targets
 *		are the root and every target built from it, in dependency order,
 *		then the targets of seeds that are not among them.  Each target's
 *		chunks are its seeds' chunks (a seed with planned_run is the run
 *		planned already: the root of a cascading plan) and the cells of
 *		its own chunk size that cover the chunks of the runs planned here
 *		for its upstream targets (Widen), merged (CellsToChunks); a target
 *		with none gets no run.  A run takes its seed's chunk interval,
 *		note, keeping and the run it continues, else the options'.  Every
 *		run records the group (the first run's id), its upstream runs and
 *		the run it continues; a NOTICE sums the group up.  Returns the
 *		group id, 0 when nothing was planned.  Caller is connected to SPI.
 */
static int64
PlanGroup(Oid root, ReplanSeed *seeds, int nseeds,
		  const GroupPlanOptions *opts)
{
	List	   *order;
	Edges		edges;
	PlanNode   *nodes;
	int			nn;
	int			i;
	int			s;
	int64		group_id = 0;
	int			planned = 0;
	StringInfoData summary;

	order = DownstreamOrder(root, &edges);
	nn = list_length(order);
	nodes = palloc0(sizeof(PlanNode) * (nn + nseeds));
	for (i = 0; i < nn; i++)
		nodes[i].target = list_nth_oid(order, i);
	for (s = 0; s < nseeds; s++)
	{
		bool		found = false;

		for (i = 0; i < nn && !found; i++)
			found = (nodes[i].target == seeds[s].target);
		if (!found)
			nodes[nn++].target = seeds[s].target;
	}

	initStringInfo(&summary);
	for (i = 0; i < nn; i++)
	{
		PlanNode   *node = &nodes[i];
		ReplanSeed *seed;
		List	   *cells;
		Datum	   *ups = palloc(sizeof(Datum) * Max(nn, 1));
		int			nups = 0;
		Interval   *dstep;
		int			e;

		CHECK_FOR_INTERRUPTS();
		node->name = QualifiedRelName(node->target);
		cells = SeedCells(node->target, seeds, nseeds, &seed);
		if (seed != NULL && seed->planned_run != 0)
		{
			/* the root of a cascading plan: planned already, chunks chosen */
			node->run_id = seed->planned_run;
			node->chunks = seed->chunks;
		}
		else
		{
			PlanRequest req = {0};

			dstep = LoadDefinition(node->target, 0)->chunk;
			for (e = 0; e < edges.n; e++)
			{
				int			j;

				if (edges.down[e] != node->target)
					continue;
				for (j = 0; j < i; j++)
				{
					if (nodes[j].target == edges.up[e] && nodes[j].run_id != 0)
					{
						Widen(&nodes[j].chunks, dstep, &cells, node->name);
						ups[nups++] = Int64GetDatum(nodes[j].run_id);
					}
				}
			}
			if (cells == NIL)
				continue;
			CellsToChunks(cells, &node->chunks);
			if (node->chunks.n > backfill_max_chunks)
				RefuseTooManyChunks(node->name);

			req.target = node->target;
			req.start = node->chunks.starts[0];
			req.end = node->chunks.ends[node->chunks.n - 1];
			req.chunk = seed != NULL ? seed->chunk : NULL;
			req.note = seed != NULL ? seed->note : opts->note;
			req.probe = (group_id == 0) && opts->probe;
			req.backwards = (group_id == 0) && opts->backwards;
			req.clear_no_source = opts->clear_no_source;
			req.keep_given = seed != NULL ? seed->keep_given : opts->keep_given;
			req.keep_replaced = seed != NULL ? seed->keep_replaced :
				opts->keep_replaced;
			req.given = &node->chunks;
			node->run_id = PlanRun(&req);
		}
		if (group_id == 0)
			group_id = node->run_id;

		RecordGroupRun(node, group_id, ups, nups, seed);
		appendStringInfo(&summary, "%s %lld of %s (%d chunk%s)",
						 planned == 0 ? "Run" : ", run", (long long) node->run_id,
						 node->name, node->chunks.n,
						 node->chunks.n == 1 ? "" : "s");
		planned++;
	}
	GroupNotice(group_id, planned, summary.data, opts->hint);
	return group_id;
}

/*
 * PipelinePlan
 *		See backfill.h.  Without only and cascade, just PlanRun.  The root
 *		run gets probe and backwards as asked; the downstream runs are
 *		planned without a probe (the group's probe is the root's first
 *		chunk), forwards, with the plan's clear_no_source and note, over
 *		their target's own chunk size.  req->only selects the root's
 *		chunks; the downstream runs rebuild what their upstream runs
 *		rebuild.
 */
int64
PipelinePlan(const PlanRequest *req, bool *planned)
{
	Oid			target = req->target;
	Interval   *step;
	Definition *def;
	TimestampTz *bounds;
	int			n;
	PlanChunks	root;
	PlanRequest root_req;
	int64		root_run;
	ReplanSeed	seed;
	GroupPlanOptions opts;

	if (req->only == ONLY_ALL && !req->cascade)
	{
		*planned = true;
		return PlanRun(req);
	}

	RequireMaxLength(req->note, "note", BACKFILL_MAX_NOTE);
	CheckTargetPrivileges(target);
	def = LoadDefinition(target, 0);
	step = def->chunk;
	if (req->chunk != NULL)
		step = req->chunk;
	n = ComputeChunkBounds(req->start, req->start_null, req->end,
						   req->end_null, step, false, &bounds);

	if (req->only != ONLY_ALL)
		SelectChunks(target, req->only, req->clear_no_source, def,
					 bounds, n, &root);
	else
	{
		root.n = n;
		root.starts = bounds;
		root.ends = bounds + 1;
		root.reasons = NULL;
	}
	if (root.n == 0)
	{
		ereport(NOTICE,
				(errmsg("nothing to plan: no chunk of [%s, %s) of %s is %s",
						TimestampText(req->start),
						TimestampText(req->end),
						QualifiedRelName(target), OnlyChunksName(req->only)),
				 errdetail("No run was created.")));
		*planned = false;
		return 0;
	}

	root_req = *req;
	root_req.start = root.starts[0];
	root_req.start_null = false;
	root_req.end = root.ends[root.n - 1];
	root_req.end_null = false;
	root_req.chunk = step;
	root_req.given = &root;
	root_run = PlanRun(&root_req);
	*planned = true;
	if (!req->cascade)
		return root_run;

	/* the downstream targets: the group's planning loop, its root planned */
	memset(&seed, 0, sizeof(seed));
	seed.target = target;
	seed.planned_run = root_run;
	seed.chunks = root;
	memset(&opts, 0, sizeof(opts));
	opts.clear_no_source = req->clear_no_source;
	opts.note = req->note;
	opts.keep_given = req->keep_given;
	opts.keep_replaced = req->keep_replaced;
	opts.hint = true;
	return PlanGroup(target, &seed, 1, &opts);
}


/*
 * CascadeReplan
 *		See backfill.h.  PlanGroup, seeded with the unfinished chunks of
 *		the group's runs: a target with neither a seed nor chunks widened
 *		from a new upstream run gets no run; a seed whose target is no
 *		longer downstream of the root (a dependency removed since) is
 *		planned too, after the others, as a run of the group with no
 *		upstream.  The first run planned is the group's root (its id is the
 *		group id) and the only one probed and run backwards if asked, as in
 *		a cascading plan.  Each new run records the run it continues, and
 *		keeps what it replaces as that run did (its seed says so); a run
 *		the replan adds for a target without one as its definition says.
 *		Returns the group id, 0 when no chunk was left.  Caller is
 *		connected to SPI.
 */
int64
CascadeReplan(Oid root, ReplanSeed *seeds, int nseeds, bool backwards,
			  bool clear_no_source)
{
	GroupPlanOptions opts;

	memset(&opts, 0, sizeof(opts));
	opts.probe = true;
	opts.backwards = backwards;
	opts.clear_no_source = clear_no_source;
	return PlanGroup(root, seeds, nseeds, &opts);
}
