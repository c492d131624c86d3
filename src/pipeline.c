/*-------------------------------------------------------------------------
 *
 * pipeline.c
 *	  Pipelines: dependencies between registered targets, plans that cover
 *	  only the chunks that need it, cascading plans whose runs form a group
 *	  executed in dependency order, and a text picture of a target's
 *	  lineage.
 *
 * A dependency (downstream, upstream) says that downstream is built from
 * upstream.  plan(..., cascade => true) plans the target's run and one run
 * per transitive downstream target; each downstream run covers the chunks
 * of its direct upstream runs widened to whole chunks of its own chunk
 * size, on a fixed grid (GridCell).  The runs share a group_id (the root
 * run's id); a chunk of a run in a group executes only when every chunk of
 * its upstream runs that it covers is settled and no other run of the
 * group has failed (PipelineChunkReady, called by the run loop).
 *
 * plan(..., only => 'missing' | 'outdated' | 'failed') keeps only the
 * chunks of the range that need work, read from the target's history
 * (ClassifyPieces).
 *
 * Catalog tables are read and written only through CatalogExec; runs are
 * planned and executed by run.c (PlanRun, ExecuteRun), which checks the
 * caller's rights on every target.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "common/int.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_depend);
PG_FUNCTION_INFO_V1(backfill_undepend);
PG_FUNCTION_INFO_V1(backfill_run_group);
PG_FUNCTION_INFO_V1(backfill_cancel_group);
PG_FUNCTION_INFO_V1(backfill_schedule_group);
PG_FUNCTION_INFO_V1(backfill_lineage_chart);

/* run.c and schedule.c, called per run of a group */
extern Datum backfill_cancel(PG_FUNCTION_ARGS);
extern Datum backfill_schedule(PG_FUNCTION_ARGS);

/*
 * One piece of a target's history over a range: the settled state that
 * wins there (lineage: done or no_source, 0 when never filled) and the
 * status of the latest attempt of any kind (done, no_source, failed,
 * cancelled; 0 when none).
 */
typedef struct Piece
{
	TimestampTz lo;
	TimestampTz hi;
	char		settled;		/* 'd' done, 'n' no_source, 0 never filled */
	int32		version;		/* of the settled state */
	bool		cleared;		/* a no_source piece whose rows were cleared */
	char		latest;			/* 'd', 'n', 'f' failed, 'c' cancelled, 0 */
} Piece;

/* The dependencies among the targets of a cascading plan. */
typedef struct Edges
{
	int			n;
	Oid		   *down;
	Oid		   *up;
} Edges;

/* One target of a cascading plan, in dependency order. */
typedef struct PlanNode
{
	Oid			target;
	char	   *name;
	int64		run_id;
	PlanChunks	chunks;
} PlanNode;

/*
 * LockDependencies
 *		Serialize changes of the dependency graph (a cycle check must see
 *		every edge committed before its insert).  A table lock, taken as the
 *		extension owner; users cannot take it.  Caller is connected to SPI.
 */
static void
LockDependencies(void)
{
	CatalogExec("LOCK TABLE backfill.dependencies IN SHARE ROW EXCLUSIVE MODE",
				0, NULL, NULL, NULL, SPI_OK_UTILITY);
}

/*
 * RequireRegistered
 *		42704 unless target is registered; returns the chunk interval of
 *		its current definition and that version.  Caller is connected to
 *		SPI.
 */
static Interval *
RequireRegistered(Oid target, int32 *version)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	bool		isnull;
	Interval   *chunk;

	values[0] = ObjectIdGetDatum(target);
	CatalogExec("SELECT d.chunk, t.current_version"
				" FROM backfill.targets t JOIN backfill.definitions d"
				"  ON d.target OPERATOR(pg_catalog.=) t.target"
				"  AND d.version OPERATOR(pg_catalog.=) t.current_version"
				" WHERE t.target OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table %s is not registered for backfill",
						QualifiedRelName(target)),
				 errhint("Call backfill.register first, with its time column and source query.")));
	chunk = DatumGetIntervalP(SpiGetDatumCopy(0, 1, &isnull));
	if (version)
		*version = SpiGetInt32(0, 2, &isnull);
	SPI_freetuptable(SPI_tuptable);
	return chunk;
}

/* ----------------------------------------------------------------
 *		depend / undepend / unregister
 * ----------------------------------------------------------------
 */

/*
 * backfill_depend
 *		depend(downstream, upstream) -> true when added, false when it was
 *		already declared.  Both must be registered, and the caller must be
 *		allowed to plan both: rewrite them (as for register) and have the
 *		privileges of the author of each one's current definition
 *		(CheckAuthor), as a cascading plan over them will need.  So a role
 *		that merely writes someone's table cannot hang a target of its own
 *		under it and make that planner's cascades fail.  A dependency that
 *		would close a cycle is refused (42P17) with the cycle in the detail.
 */
Datum
backfill_depend(PG_FUNCTION_ARGS)
{
	Oid			down;
	Oid			up;
	Oid			argtypes[3] = {REGCLASSOID, REGCLASSOID, TEXTOID};
	Datum		values[3];
	bool		added;

	RequireArg(fcinfo, 0, "downstream", NULL);
	RequireArg(fcinfo, 1, "upstream", NULL);
	down = PG_GETARG_OID(0);
	up = PG_GETARG_OID(1);

	CheckTargetPrivileges(down);
	CheckTargetPrivileges(up);

	SpiConnect();
	LockDependencies();
	(void) RequireRegistered(down, NULL);
	(void) RequireRegistered(up, NULL);

	/* a planner of both: the upstream's first, whose cascades it changes */
	{
		Definition *def = LoadDefinition(up, 0);

		CheckAuthor(def->author, up, def->version);
		def = LoadDefinition(down, 0);
		CheckAuthor(def->author, down, def->version);
	}

	/* the path downstream -> ... -> upstream that the new edge would close */
	values[0] = ObjectIdGetDatum(down);
	values[1] = ObjectIdGetDatum(up);
	CatalogExec("WITH RECURSIVE walk(node, path) AS ("
				"  SELECT $1::pg_catalog.oid, ARRAY[$1::pg_catalog.oid]"
				"  UNION ALL"
				"  SELECT d.downstream::pg_catalog.oid,"
				"   w.path OPERATOR(pg_catalog.||) d.downstream::pg_catalog.oid"
				"  FROM walk w JOIN backfill.dependencies d"
				"   ON d.upstream::pg_catalog.oid OPERATOR(pg_catalog.=) w.node"
				"  WHERE w.node OPERATOR(pg_catalog.<>) $2::pg_catalog.oid"
				"   AND NOT d.downstream::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (w.path))"
				" SELECT path FROM walk WHERE node OPERATOR(pg_catalog.=) $2::pg_catalog.oid"
				" ORDER BY pg_catalog.array_length(path, 1) LIMIT 1",
				2, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
	{
		bool		isnull;
		ArrayType  *arr = DatumGetArrayTypeP(SpiGetDatumCopy(0, 1, &isnull));
		Datum	   *elems;
		int			nelems;
		StringInfoData cycle;
		int			i;

		deconstruct_array(arr, OIDOID, sizeof(Oid), true, TYPALIGN_INT,
						  &elems, NULL, &nelems);
		initStringInfo(&cycle);
		appendStringInfoString(&cycle, QualifiedRelName(up));
		for (i = 0; i < nelems; i++)
			appendStringInfo(&cycle, " -> %s",
							 QualifiedRelName(DatumGetObjectId(elems[i])));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("dependency of %s on %s would create a cycle",
						QualifiedRelName(down), QualifiedRelName(up)),
				 errdetail("The cycle would be %s.", cycle.data),
				 errhint("A target cannot be built, directly or through others, from itself.")));
	}
	SPI_freetuptable(SPI_tuptable);

	values[2] = CStringGetTextDatum(CurrentUserName());
	CatalogExec("INSERT INTO backfill.dependencies (downstream, upstream, created_by)"
				" VALUES ($1, $2, $3::pg_catalog.name)"
				" ON CONFLICT (downstream, upstream) DO NOTHING",
				3, argtypes, values, NULL, SPI_OK_INSERT);
	added = SPI_processed > 0;
	SpiFinish();
	PG_RETURN_BOOL(added);
}

/*
 * MayPlan
 *		Whether the caller may plan target: the table exists, the caller
 *		holds SELECT, INSERT and DELETE on it, and it has the privileges of
 *		the author of its current definition.  Caller is connected to SPI.
 */
static bool
MayPlan(Oid target)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	bool		isnull;
	Oid			author = InvalidOid;

	if (get_rel_name(target) == NULL ||
		pg_class_aclmask(target, GetUserId(), ACL_SELECT | ACL_INSERT | ACL_DELETE,
						 ACLMASK_ALL) != (ACL_SELECT | ACL_INSERT | ACL_DELETE))
		return false;
	values[0] = ObjectIdGetDatum(target);
	CatalogExec("SELECT d.author FROM backfill.targets t JOIN backfill.definitions d"
				"  ON d.target OPERATOR(pg_catalog.=) t.target"
				"  AND d.version OPERATOR(pg_catalog.=) t.current_version"
				" WHERE t.target OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
		author = SpiGetOid(0, 1, &isnull);
	SPI_freetuptable(SPI_tuptable);
	return OidIsValid(author) &&
		SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(author)) &&
		has_privs_of_role(GetUserId(), author);
}

/*
 * backfill_undepend
 *		undepend(downstream, upstream) -> true when removed, false when
 *		there was no such dependency.  Allowed to a role that may rewrite
 *		both tables (those that still exist), and to a planner of either
 *		one (MayPlan): the planner of an upstream can always detach a
 *		dependent it cannot plan, which would otherwise make its cascading
 *		plans fail.
 */
Datum
backfill_undepend(PG_FUNCTION_ARGS)
{
	Oid			down;
	Oid			up;
	Oid			argtypes[2] = {REGCLASSOID, REGCLASSOID};
	Datum		values[2];
	bool		removed;

	RequireArg(fcinfo, 0, "downstream", NULL);
	RequireArg(fcinfo, 1, "upstream", NULL);
	down = PG_GETARG_OID(0);
	up = PG_GETARG_OID(1);

	SpiConnect();
	if (!superuser() && !MayPlan(up) && !MayPlan(down))
	{
		if (get_rel_name(down) != NULL)
			CheckTargetPrivileges(down);
		if (get_rel_name(up) != NULL)
			CheckTargetPrivileges(up);
		if (get_rel_name(down) == NULL && get_rel_name(up) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to remove a dependency between dropped tables"),
					 errhint("Unregister the dropped tables with backfill.unregister, which removes their dependencies.")));
	}
	LockDependencies();
	values[0] = ObjectIdGetDatum(down);
	values[1] = ObjectIdGetDatum(up);
	CatalogExec("DELETE FROM backfill.dependencies"
				" WHERE downstream OPERATOR(pg_catalog.=) $1"
				" AND upstream OPERATOR(pg_catalog.=) $2",
				2, argtypes, values, NULL, SPI_OK_DELETE);
	removed = SPI_processed > 0;
	SpiFinish();
	PG_RETURN_BOOL(removed);
}

/*
 * PipelineForgetTarget
 *		Unregister's part (see backfill.h).  The dependencies of the target
 *		on others go with it; the targets built from it keep their
 *		registrations, only the dependencies are removed (with cascade).
 */
void
PipelineForgetTarget(Oid target, const char *name, bool cascade)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	char	   *dependents;

	LockDependencies();
	values[0] = ObjectIdGetDatum(target);
	CatalogExec("SELECT pg_catalog.string_agg(t.target_name, ', ' ORDER BY t.target_name)"
				" FROM backfill.dependencies d JOIN backfill.targets t"
				"  ON t.target OPERATOR(pg_catalog.=) d.downstream"
				" WHERE d.upstream OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	dependents = SpiGetText(0, 1);
	SPI_freetuptable(SPI_tuptable);
	if (dependents != NULL && !cascade)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot unregister table %s because other targets depend on it", name),
				 errdetail("Targets built from it: %s.", dependents),
				 errhint("Remove the dependencies with backfill.undepend, or call backfill.unregister(target, cascade => true) to remove them with it.")));

	CatalogExec("DELETE FROM backfill.dependencies"
				" WHERE downstream OPERATOR(pg_catalog.=) $1"
				" OR upstream OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_DELETE);
	if (dependents != NULL)
		ereport(NOTICE,
				(errmsg("removed the dependencies of %s on %s", dependents, name)));
}

/* ----------------------------------------------------------------
 *		history pieces: what a range of a target needs
 * ----------------------------------------------------------------
 */

/*
 * ClassifyPieces
 *		Cut [lo, hi) of target's history into pieces at every chunk bound
 *		and say, per piece, which settled chunk wins there (the one that
 *		finished last, then the higher run id, as backfill.lineage) and the
 *		status of the latest attempt of any kind (failed and cancelled
 *		included).  Returns the number of pieces, *pieces palloc'd.  Caller
 *		is connected to SPI.
 */
static int
ClassifyPieces(Oid target, TimestampTz lo, TimestampTz hi, Piece **pieces)
{
	Oid			argtypes[3] = {REGCLASSOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[3];
	int			n;
	int			i;
	Piece	   *out;

	values[0] = ObjectIdGetDatum(target);
	values[1] = TimestampTzGetDatum(lo);
	values[2] = TimestampTzGetDatum(hi);
	CatalogExec("WITH att AS ("
				"  SELECT c.run_id, c.chunk_start AS s, c.chunk_end AS e, c.status,"
				"   r.definition_version AS v, c.finished_at IS NOT NULL AS cleared,"
				"   COALESCE(c.finished_at, r.finished_at) AS t"
				"  FROM backfill.chunks c JOIN backfill.runs r"
				"   ON r.run_id OPERATOR(pg_catalog.=) c.run_id"
				"  WHERE r.target OPERATOR(pg_catalog.=) $1"
				"   AND c.chunk_end OPERATOR(pg_catalog.>) $2"
				"   AND c.chunk_start OPERATOR(pg_catalog.<) $3"
				"   AND ((c.status OPERATOR(pg_catalog.=) ANY ('{done,failed}'::pg_catalog.text[])"
				"         AND c.finished_at IS NOT NULL)"
				"    OR (c.status OPERATOR(pg_catalog.=) 'no_source'"
				"        AND (c.finished_at IS NOT NULL OR r.status OPERATOR(pg_catalog.=) 'done'))"
				"    OR c.status OPERATOR(pg_catalog.=) 'cancelled')),"
				" b AS (SELECT GREATEST(a.s, $2) AS t FROM att a"
				"  UNION SELECT LEAST(a.e, $3) FROM att a"
				"  UNION SELECT $2 UNION SELECT $3),"
				" p AS (SELECT b.t AS lo, pg_catalog.lead(b.t) OVER (ORDER BY b.t) AS hi FROM b)"
				" SELECT p.lo, p.hi, st.status, st.v, st.cleared, la.status"
				" FROM p"
				" LEFT JOIN LATERAL (SELECT a.status, a.v, a.cleared FROM att a"
				"  WHERE a.status OPERATOR(pg_catalog.=) ANY ('{done,no_source}'::pg_catalog.text[])"
				"   AND a.s OPERATOR(pg_catalog.<=) p.lo AND a.e OPERATOR(pg_catalog.>=) p.hi"
				"  ORDER BY a.t DESC NULLS LAST, a.run_id DESC LIMIT 1) st ON true"
				" LEFT JOIN LATERAL (SELECT a.status FROM att a"
				"  WHERE a.s OPERATOR(pg_catalog.<=) p.lo AND a.e OPERATOR(pg_catalog.>=) p.hi"
				"  ORDER BY a.t DESC NULLS LAST, a.run_id DESC LIMIT 1) la ON true"
				" WHERE p.hi IS NOT NULL"
				" ORDER BY p.lo",
				3, argtypes, values, NULL, SPI_OK_SELECT);
	n = (int) SPI_processed;
	out = palloc0(sizeof(Piece) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		bool		isnull;
		char	   *st;
		char	   *la;

		CHECK_FOR_INTERRUPTS();
		st = SpiGetText(i, 3);
		la = SpiGetText(i, 6);

		out[i].lo = DatumGetTimestampTz(SpiGetDatumCopy(i, 1, &isnull));
		out[i].hi = DatumGetTimestampTz(SpiGetDatumCopy(i, 2, &isnull));
		out[i].settled = st == NULL ? 0 : (strcmp(st, "done") == 0 ? 'd' : 'n');
		out[i].version = SpiGetInt32(i, 4, &isnull);
		out[i].cleared = SpiGetBool(i, 5, &isnull);
		out[i].latest = la == NULL ? 0 : la[0];
		if (st != NULL)
			pfree(st);
		if (la != NULL)
			pfree(la);
	}
	SPI_freetuptable(SPI_tuptable);
	*pieces = out;
	return n;
}

/*
 * PieceNeeds
 *		Whether a piece makes its chunk part of an only-plan.
 *		missing: no settled chunk covers it (with clear_no_source, also a
 *		no_source stretch whose rows were never cleared); outdated: it was
 *		backfilled under a version older than the current one; failed: the
 *		latest attempt there failed or was cancelled.
 */
static bool
PieceNeeds(const Piece *p, const char *only, bool clear_no_source,
		   int32 current_version)
{
	if (strcmp(only, "missing") == 0)
		return p->settled == 0 ||
			(clear_no_source && p->settled == 'n' && !p->cleared);
	if (strcmp(only, "outdated") == 0)
		return p->settled == 'd' && p->version < current_version;
	return p->latest == 'f' || p->latest == 'c';
}

/*
 * SelectChunks
 *		Keep the chunks of [bounds[0], bounds[n]) that need work under
 *		"only" (only_chunks); returns them in *out (possibly none).
 */
static void
SelectChunks(Oid target, const char *only, bool clear_no_source,
			 int32 current_version, TimestampTz *bounds, int n,
			 PlanChunks *out)
{
	Piece	   *pieces;
	int			np;
	int			j = 0;
	int			k;

	np = ClassifyPieces(target, bounds[0], bounds[n], &pieces);
	out->n = 0;
	out->starts = palloc(sizeof(TimestampTz) * n);
	out->ends = palloc(sizeof(TimestampTz) * n);
	for (k = 0; k < n; k++)
	{
		TimestampTz cs = bounds[k];
		TimestampTz ce = bounds[k + 1];
		bool		needs = false;
		int			i;

		CHECK_FOR_INTERRUPTS();
		/* pieces are sorted and partition the range: skip those before */
		while (j < np && pieces[j].hi <= cs)
			j++;
		for (i = j; i < np && pieces[i].lo < ce; i++)
		{
			if (PieceNeeds(&pieces[i], only, clear_no_source, current_version))
			{
				needs = true;
				break;
			}
		}
		if (needs)
		{
			out->starts[out->n] = cs;
			out->ends[out->n] = ce;
			out->n++;
		}
	}
}

/* ----------------------------------------------------------------
 *		widening to whole chunks of a downstream target
 * ----------------------------------------------------------------
 */

/*
 * LocalTime
 *		A local date and time, in the session TimeZone, as timestamptz.
 */
static TimestampTz
LocalTime(const char *text)
{
	return DatumGetTimestampTz(DirectFunctionCall3(timestamptz_in,
												   CStringGetDatum(text),
												   ObjectIdGetDatum(InvalidOid),
												   Int32GetDatum(-1)));
}

/*
 * GridPoint
 *		anchor + k * step, with the interval arithmetic of split_range
 *		(months and days in the session TimeZone, the time part absolute).
 */
static TimestampTz
GridPoint(TimestampTz anchor, Interval *step, int64 k)
{
	Interval	mul;
	int64		months;
	int64		days;

	if (pg_mul_s64_overflow((int64) step->month, k, &months) ||
		pg_mul_s64_overflow((int64) step->day, k, &days) ||
		months > PG_INT32_MAX || months < PG_INT32_MIN ||
		days > PG_INT32_MAX || days < PG_INT32_MIN ||
		pg_mul_s64_overflow(step->time, k, &mul.time))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("chunk bound out of range")));
	mul.month = (int32) months;
	mul.day = (int32) days;
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
												   TimestampTzGetDatum(anchor),
												   IntervalPGetDatum(&mul)));
}

/*
 * TruncDay
 *		The local midnight (session TimeZone) at or before t.
 */
static TimestampTz
TruncDay(TimestampTz t)
{
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_trunc,
												   CStringGetTextDatum("day"),
												   TimestampTzGetDatum(t)));
}

/*
 * GridCell
 *		The chunk [*lo, *hi) of the grid of "step" that contains t, in the
 *		session TimeZone:
 *		- months only ('1 month', '3 months'): from local 2000-01-01 00:00,
 *		  so whole calendar months (quarters, ...);
 *		- a time that divides a day ('1 hour', '6 hours'): from each local
 *		  midnight, the last chunk of a day ending at the next midnight
 *		  (a 23- or 25-hour day keeps whole local days);
 *		- anything else ('1 day', '1 week', '2 days 12 hours'): from local
 *		  Monday 2000-01-03 00:00, so days start at local midnight and
 *		  weeks on Monday.
 *		Every grid point is anchor + k * step as split_range computes it.
 */
static void
GridCell(TimestampTz t, Interval *step, TimestampTz *lo, TimestampTz *hi)
{
	TimestampTz anchor;
	int64		k;
	double		approx;

	if (step->month == 0 && step->day == 0 && step->time > 0 &&
		USECS_PER_DAY % step->time == 0)
	{
		TimestampTz day = TruncDay(t);
		TimestampTz next = TruncDay(day + USECS_PER_DAY + USECS_PER_HOUR * 3);

		k = (t - day) / step->time;
		*lo = day + k * step->time;
		*hi = Min(*lo + step->time, next);
		return;
	}

	if (step->day == 0 && step->time == 0)
		anchor = LocalTime("2000-01-01 00:00:00");
	else
		anchor = LocalTime("2000-01-03 00:00:00");

	/*
	 * A first guess from the step's mean length (a month of 30.44 days),
	 * then exact steps; each loop ends (the grid points grow with k on
	 * average) and is interruptible.
	 */
	approx = (double) step->month * ((double) DAYS_PER_YEAR / MONTHS_PER_YEAR) * USECS_PER_DAY +
		(double) step->day * USECS_PER_DAY + (double) step->time;
	k = (int64) floor(((double) t - (double) anchor) / approx);
	while (GridPoint(anchor, step, k) > t)
	{
		CHECK_FOR_INTERRUPTS();
		k--;
	}
	while (GridPoint(anchor, step, k + 1) <= t)
	{
		CHECK_FOR_INTERRUPTS();
		k++;
	}
	*lo = GridPoint(anchor, step, k);
	*hi = GridPoint(anchor, step, k + 1);
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

		GridCell(up->starts[k], step, &lo, &hi);
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
			GridCell(hi, step, &lo, &hi);
		}
	}
}

/*
 * CellsToChunks
 *		Sort the cells, drop duplicates, and return them as PlanChunks.
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
	for (k = 0; k < n; k++)
	{
		if (out->n > 0 && out->starts[out->n - 1] == pairs[2 * k])
			continue;
		out->starts[out->n] = pairs[2 * k];
		out->ends[out->n] = pairs[2 * k + 1];
		out->n++;
	}
}

/* ----------------------------------------------------------------
 *		plan(..., only, cascade)
 * ----------------------------------------------------------------
 */

/*
 * DownstreamOrder
 *		The target and every target built from it, directly or not, in an
 *		order where each comes after all its upstream targets (ties by
 *		name).  *edges receives the dependencies among them.  Caller is
 *		connected to SPI.
 */
static List *
DownstreamOrder(Oid root, Edges *edges)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	List	   *nodes = list_make1_oid(root);
	List	   *order = NIL;
	int			i;
	int			n;

	values[0] = ObjectIdGetDatum(root);
	CatalogExec("WITH RECURSIVE down(t) AS ("
				"  SELECT $1::pg_catalog.regclass"
				"  UNION SELECT d.downstream FROM backfill.dependencies d"
				"   JOIN down ON d.upstream OPERATOR(pg_catalog.=) down.t)"
				" SELECT d.downstream::pg_catalog.oid, d.upstream::pg_catalog.oid"
				" FROM backfill.dependencies d"
				" WHERE d.upstream OPERATOR(pg_catalog.=) ANY (SELECT t FROM down)",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	n = (int) SPI_processed;
	edges->n = n;
	edges->down = palloc(sizeof(Oid) * Max(n, 1));
	edges->up = palloc(sizeof(Oid) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		bool		isnull;

		edges->down[i] = SpiGetOid(i, 1, &isnull);
		edges->up[i] = SpiGetOid(i, 2, &isnull);
		nodes = list_append_unique_oid(nodes, edges->down[i]);
	}
	SPI_freetuptable(SPI_tuptable);

	/* Kahn's algorithm; the graph has no cycle (depend refuses them) */
	while (list_length(order) < list_length(nodes))
	{
		ListCell   *lc;
		Oid			best = InvalidOid;
		char	   *best_name = NULL;

		CHECK_FOR_INTERRUPTS();
		foreach(lc, nodes)
		{
			Oid			cand = lfirst_oid(lc);
			bool		ready = true;
			char	   *name;
			int			e;

			if (list_member_oid(order, cand))
				continue;
			for (e = 0; e < edges->n; e++)
			{
				if (edges->down[e] == cand && !list_member_oid(order, edges->up[e]))
				{
					ready = false;
					break;
				}
			}
			if (!ready)
				continue;
			name = QualifiedRelName(cand);
			if (best_name == NULL || strcmp(name, best_name) < 0)
			{
				best = cand;
				best_name = name;
			}
		}
		if (!OidIsValid(best))
			elog(ERROR, "backfill: the dependencies of %s form a cycle",
				 QualifiedRelName(root));
		order = lappend_oid(order, best);
	}
	return order;
}

/*
 * PipelinePlan
 *		See backfill.h.  The root run gets probe and backwards as asked;
 *		the downstream runs are planned without a probe (the group's probe
 *		is the root's first chunk), forwards, with the plan's
 *		clear_no_source and note, over their target's own chunk size.
 *		"only" (only_chunks) selects the root's chunks; the downstream runs rebuild what
 *		their upstream runs rebuild.
 */
int64
PipelinePlan(Oid target, TimestampTz start, bool start_null,
			 TimestampTz end, bool end_null, Interval *chunk,
			 const char *note, bool probe, bool backwards,
			 bool clear_no_source, const char *only, bool cascade,
			 bool *planned)
{
	Interval   *step;
	int32		version;
	TimestampTz *bounds;
	int			n;
	PlanChunks	root;
	int64		root_run;
	List	   *order;
	Edges		edges;
	PlanNode   *nodes;
	int			nn;
	int			i;
	StringInfoData summary;

	RequireMaxLength(only, "only_chunks", BACKFILL_MAX_WORD);
	RequireMaxLength(note, "note", BACKFILL_MAX_NOTE);
	if (only != NULL && strcmp(only, "missing") != 0 &&
		strcmp(only, "outdated") != 0 && strcmp(only, "failed") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for only_chunks: \"%s\"", only),
				 errhint("Use 'missing', 'outdated' or 'failed', or leave it NULL to plan every chunk of the range.")));

	CheckTargetPrivileges(target);
	step = RequireRegistered(target, &version);
	if (chunk != NULL)
		step = chunk;
	n = ComputeChunkBounds(start, start_null, end, end_null, step, false,
						   &bounds);

	if (only != NULL)
		SelectChunks(target, only, clear_no_source, version, bounds, n, &root);
	else
	{
		root.n = n;
		root.starts = bounds;
		root.ends = bounds + 1;
	}
	if (root.n == 0)
	{
		ereport(NOTICE,
				(errmsg("nothing to plan: no chunk of [%s, %s) of %s is %s",
						TimestampText(start),
						TimestampText(end),
						QualifiedRelName(target), only),
				 errdetail("No run was created.")));
		*planned = false;
		return 0;
	}

	root_run = PlanRun(target, root.starts[0], false, root.ends[root.n - 1],
					   false, step, note, probe, backwards, clear_no_source,
					   &root);
	*planned = true;
	if (!cascade)
		return root_run;

	order = DownstreamOrder(target, &edges);
	nn = list_length(order);
	nodes = palloc0(sizeof(PlanNode) * nn);
	initStringInfo(&summary);
	for (i = 0; i < nn; i++)
	{
		PlanNode   *node = &nodes[i];
		List	   *cells = NIL;
		Datum	   *ups = palloc(sizeof(Datum) * Max(nn, 1));
		int			nups = 0;
		int			e;
		Oid			types[3] = {INT8OID, INT8OID, INT8ARRAYOID};
		Datum		vals[3];

		node->target = list_nth_oid(order, i);
		node->name = QualifiedRelName(node->target);
		if (i == 0)
		{
			node->run_id = root_run;
			node->chunks = root;
		}
		else
		{
			Interval   *dstep = RequireRegistered(node->target, NULL);

			for (e = 0; e < edges.n; e++)
			{
				int			j;

				if (edges.down[e] != node->target)
					continue;
				for (j = 0; j < i; j++)
				{
					if (nodes[j].target == edges.up[e])
					{
						Widen(&nodes[j].chunks, dstep, &cells, node->name);
						ups[nups++] = Int64GetDatum(nodes[j].run_id);
					}
				}
			}
			CellsToChunks(cells, &node->chunks);
			if (node->chunks.n > backfill_max_chunks)
				RefuseTooManyChunks(node->name);
			node->run_id = PlanRun(node->target, node->chunks.starts[0], false,
								   node->chunks.ends[node->chunks.n - 1], false,
								   NULL, note, false, false, clear_no_source,
								   &node->chunks);
		}

		vals[0] = Int64GetDatum(node->run_id);
		vals[1] = Int64GetDatum(root_run);
		vals[2] = PointerGetDatum(construct_array(ups, nups, INT8OID, sizeof(int64),
												  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		CatalogExec("UPDATE backfill.runs SET group_id = $2,"
					" upstream_runs = CASE WHEN pg_catalog.cardinality($3) OPERATOR(pg_catalog.>) 0 THEN $3 END"
					" WHERE run_id OPERATOR(pg_catalog.=) $1",
					3, types, vals, NULL, SPI_OK_UPDATE);
		appendStringInfo(&summary, "%s %lld of %s (%d chunk%s)",
						 i == 0 ? "Run" : ", run", (long long) node->run_id,
						 node->name, node->chunks.n,
						 node->chunks.n == 1 ? "" : "s");
	}
	ereport(NOTICE,
			(errmsg("planned group %lld: %d run%s", (long long) root_run, nn,
					nn == 1 ? "" : "s"),
			 errdetail("%s.", summary.data),
			 errhint("CALL backfill.run_group(%lld) runs them in dependency order.",
					 (long long) root_run)));
	return root_run;
}

/* ----------------------------------------------------------------
 *		the run loop's gate, and the group functions
 * ----------------------------------------------------------------
 */

/*
 * PipelineChunkReady
 *		See backfill.h.  A no_source chunk of an upstream run counts as
 *		settled unless that run still has to clear it.  A pg_cron job of a
 *		run that finds the group stopped by a failure does nothing and
 *		keeps its schedule (a job never removes itself: schedule.c); once
 *		the failed run is retried by hand, its ticks go on.
 */
bool
PipelineChunkReady(int64 run_id, TimestampTz lo, TimestampTz hi)
{
	Oid			argtypes[3] = {INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[3];
	bool		isnull;
	int64		group_id;
	int64		failed;
	bool		failed_null;
	int64		up_run;
	bool		up_null;
	int32		up_chunk;
	char	   *up_status;

	values[0] = Int64GetDatum(run_id);
	values[1] = TimestampTzGetDatum(lo);
	values[2] = TimestampTzGetDatum(hi);
	CatalogExec("SELECT r.group_id,"
				" (SELECT pg_catalog.min(f.run_id) FROM backfill.runs f"
				"   WHERE f.group_id OPERATOR(pg_catalog.=) r.group_id"
				"   AND f.run_id OPERATOR(pg_catalog.<>) r.run_id"
				"   AND f.status OPERATOR(pg_catalog.=) 'failed'),"
				" w.run_id, w.chunk_no, w.status"
				" FROM backfill.runs r"
				" LEFT JOIN LATERAL ("
				"  SELECT uc.run_id, uc.chunk_no, uc.status"
				"  FROM backfill.chunks uc JOIN backfill.runs u"
				"   ON u.run_id OPERATOR(pg_catalog.=) uc.run_id"
				"  WHERE uc.run_id OPERATOR(pg_catalog.=) ANY (r.upstream_runs)"
				"   AND uc.chunk_start OPERATOR(pg_catalog.<) $3"
				"   AND uc.chunk_end OPERATOR(pg_catalog.>) $2"
				"   AND NOT (uc.status OPERATOR(pg_catalog.=) 'done'"
				"    OR (uc.status OPERATOR(pg_catalog.=) 'no_source'"
				"        AND (uc.finished_at IS NOT NULL OR NOT u.clear_no_source)))"
				"  ORDER BY uc.run_id, uc.chunk_no LIMIT 1) w ON true"
				" WHERE r.run_id OPERATOR(pg_catalog.=) $1"
				" AND r.group_id IS NOT NULL",
				3, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		SPI_freetuptable(SPI_tuptable);
		return true;
	}
	group_id = SpiGetInt64(0, 1, &isnull);
	failed = SpiGetInt64(0, 2, &failed_null);
	up_run = SpiGetInt64(0, 3, &up_null);
	up_chunk = SpiGetInt32(0, 4, &isnull);
	up_status = SpiGetText(0, 5);
	SPI_freetuptable(SPI_tuptable);

	if (!failed_null)
	{
		ereport(NOTICE,
				(errmsg("run %lld waits: run %lld of its group %lld has failed",
						(long long) run_id, (long long) failed,
						(long long) group_id),
				 errdetail("The first failure stops the whole group."),
				 errhint("Fix the cause, then CALL backfill.run_group(%lld) to retry and continue, or cancel the group with backfill.cancel_group(%lld).",
						 (long long) group_id, (long long) group_id)));
		return false;
	}
	if (!up_null)
	{
		ereport(NOTICE,
				(errmsg("run %lld waits: its chunk [%s, %s) needs chunk %d of upstream run %lld, which is %s",
						(long long) run_id, TimestampText(lo),
						TimestampText(hi), up_chunk,
						(long long) up_run, up_status),
				 errhint("The runs of group %lld go in dependency order: CALL backfill.run_group(%lld).",
						 (long long) group_id, (long long) group_id)));
		return false;
	}
	return true;
}

/*
 * GroupRuns
 *		The run ids of a group in run id order (dependency order), in the
 *		current memory context.  A group exists for the caller when it may
 *		see one of its runs (CatalogRowVisible, as backfill.group_progress
 *		shows it); an unknown group and one whose runs are all invisible
 *		raise the same 42704.  The actions then check each run as usual
 *		(an invisible run of a visible group is "run N does not exist").
 *		Caller is connected to SPI.
 */
static List *
GroupRuns(int64 group_id, bool unfinished_only)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	List	   *runs = NIL;
	bool		visible = false;
	int			i;

	values[0] = Int64GetDatum(group_id);
	CatalogExec("SELECT run_id, status, target::pg_catalog.oid, created_by_oid"
				" FROM backfill.runs"
				" WHERE group_id OPERATOR(pg_catalog.=) $1 ORDER BY run_id",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	for (i = 0; i < (int) SPI_processed; i++)
	{
		bool		isnull;
		int64		run_id = SpiGetInt64(i, 1, &isnull);
		char	   *status = SpiGetText(i, 2);

		CHECK_FOR_INTERRUPTS();
		if (!visible)
			visible = CatalogRowVisible(SpiGetOid(i, 3, &isnull),
										SpiGetOid(i, 4, &isnull));
		if (unfinished_only &&
			(strcmp(status, "done") == 0 || strcmp(status, "cancelled") == 0))
			continue;
		runs = lappend(runs, palloc(sizeof(int64)));
		*(int64 *) llast(runs) = run_id;
	}
	SPI_freetuptable(SPI_tuptable);
	if (!visible)
		RaiseGroupDoesNotExist(group_id);
	return runs;
}

/*
 * RunState
 *		A run's status and the attempts of its chunks so far.  Caller is
 *		connected to SPI.
 */
static char *
RunState(int64 run_id, int64 *attempts)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	bool		isnull;
	char	   *status;

	values[0] = Int64GetDatum(run_id);
	CatalogExec("SELECT r.status, (SELECT COALESCE(pg_catalog.sum(c.attempts), 0)::pg_catalog.int8"
				"  FROM backfill.chunks c WHERE c.run_id OPERATOR(pg_catalog.=) r.run_id)"
				" FROM backfill.runs r WHERE r.run_id OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	status = SpiGetText(0, 1);
	*attempts = SpiGetInt64(0, 2, &isnull);
	SPI_freetuptable(SPI_tuptable);
	return status;
}

/*
 * backfill_run_group
 *		CALL backfill.run_group(group_id, max_chunks): execute the group's
 *		runs one after the other in dependency order (run id order), each
 *		as CALL backfill.run would, until one is not done (probed, deferred,
 *		waiting, out of max_chunks) or fails (then the error ends the call
 *		and stops the group).  Only as a top-level CALL.
 */
Datum
backfill_run_group(PG_FUNCTION_ARGS)
{
	int64		group_id;
	int			max_chunks;
	List	   *runs;
	ListCell   *lc;
	bool		all_done = true;

	RequireTopLevelCall(fcinfo, "backfill.run_group");
	RequireArg(fcinfo, 0, "group_id", NULL);
	group_id = PG_GETARG_INT64(0);
	max_chunks = MaxChunksArg(fcinfo, 1);

	SpiConnectNonatomic();
	runs = GroupRuns(group_id, true);
	foreach(lc, runs)
	{
		int64		run_id = *(int64 *) lfirst(lc);
		int64		before;
		int64		after;
		char	   *status;

		status = RunState(run_id, &before);
		if (strcmp(status, "done") == 0 || strcmp(status, "cancelled") == 0)
			continue;
		ExecuteRun(run_id, max_chunks);
		status = RunState(run_id, &after);
		if (max_chunks > 0)
			max_chunks = Max(max_chunks - (int) (after - before), 0);
		if (strcmp(status, "done") != 0)
		{
			all_done = false;
			break;
		}
		if (max_chunks == 0)
		{
			all_done = (lnext(runs, lc) == NULL);
			break;
		}
	}
	if (all_done)
		ereport(NOTICE,
				(errmsg("group %lld is done", (long long) group_id)));
	SpiFinish();
	PG_RETURN_VOID();
}

/*
 * backfill_cancel_group
 *		cancel_group(group_id) -> chunks cancelled: backfill.cancel on every
 *		run of the group that is not finished (same rights per run).
 */
Datum
backfill_cancel_group(PG_FUNCTION_ARGS)
{
	List	   *runs;
	ListCell   *lc;
	int32		total = 0;

	RequireArg(fcinfo, 0, "group_id", NULL);
	SpiConnect();
	runs = GroupRuns(PG_GETARG_INT64(0), true);
	foreach(lc, runs)
		total += DatumGetInt32(DirectFunctionCall1(backfill_cancel,
												   Int64GetDatum(*(int64 *) lfirst(lc))));
	SpiFinish();
	PG_RETURN_INT32(total);
}

/*
 * backfill_schedule_group
 *		schedule_group(group_id, cron, chunks_per_tick, quiet_hours) -> runs
 *		scheduled: backfill.schedule on every run of the group that is not
 *		finished.  Each run gets its own pg_cron job; a tick of a
 *		downstream run whose upstream chunks are not done yet does nothing
 *		(PipelineChunkReady), so the group finishes in dependency order.
 */
Datum
backfill_schedule_group(PG_FUNCTION_ARGS)
{
	List	   *runs;
	ListCell   *lc;
	int32		n = 0;

	RequireArg(fcinfo, 0, "group_id", NULL);
	RequireArg(fcinfo, 1, "cron", "Pass a cron expression such as '*/5 * * * *'.");
	RequireArg(fcinfo, 2, "chunks_per_tick", NULL);
	SpiConnect();
	runs = GroupRuns(PG_GETARG_INT64(0), true);
	foreach(lc, runs)
	{
		LOCAL_FCINFO(call, 4);

		InitFunctionCallInfoData(*call, NULL, 4, InvalidOid, NULL, NULL);
		call->args[0].value = Int64GetDatum(*(int64 *) lfirst(lc));
		call->args[0].isnull = false;
		call->args[1] = fcinfo->args[1];
		call->args[2] = fcinfo->args[2];
		call->args[3] = fcinfo->args[3];
		(void) backfill_schedule(call);
		n++;
	}
	SpiFinish();
	PG_RETURN_INT32(n);
}

/* ----------------------------------------------------------------
 *		lineage_chart
 * ----------------------------------------------------------------
 */

/* The character of a definition version: 1-9, then a-z, then #. */
static char
VersionChar(int32 version)
{
	if (version >= 1 && version <= 9)
		return '0' + version;
	if (version >= 10 && version <= 35)
		return 'a' + (version - 10);
	return '#';
}

/*
 * CellChar
 *		The character of [lo, hi) from the pieces: X when the latest attempt
 *		on some part failed, '.' when some part was never filled, else the
 *		oldest definition version backfilled there, else '-' (no_source).
 */
static char
CellChar(Piece *pieces, int np, int *from, TimestampTz lo, TimestampTz hi)
{
	bool		failed = false;
	bool		never = false;
	bool		no_source = false;
	int32		oldest = 0;
	int			i;

	while (*from < np && pieces[*from].hi <= lo)
		(*from)++;
	for (i = *from; i < np && pieces[i].lo < hi; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (pieces[i].latest == 'f')
			failed = true;
		else if (pieces[i].settled == 0)
			never = true;
		else if (pieces[i].settled == 'n')
			no_source = true;
		else if (oldest == 0 || pieces[i].version < oldest)
			oldest = pieces[i].version;
	}
	if (failed)
		return 'X';
	if (never)
		return '.';
	if (oldest > 0)
		return VersionChar(oldest);
	return no_source ? '-' : '.';
}

/*
 * LocalFields
 *		The local (session TimeZone) calendar fields of t.
 */
static void
LocalFields(TimestampTz t, struct pg_tm *tm)
{
	int			tz;
	fsec_t		fsec;

	if (timestamp2tm(t, &tz, tm, &fsec, NULL, NULL) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range")));
}

/*
 * PutLine
 *		Append one text line to the function's result.
 */
static void
PutLine(ReturnSetInfo *rsinfo, const char *line)
{
	Datum		value = CStringGetTextDatum(line);
	bool		isnull = false;

	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
}

/*
 * ChartLines
 *		The number of lines lineage_chart draws for [lo, hi) in "unit"
 *		(day, week or month), computed from the calendar fields of lo and
 *		hi without building anything; the charts of day and week lines are
 *		short by construction (at most 7 and 92 days wide).
 */
static int64
ChartLines(TimestampTz lo, TimestampTz hi, const char *unit)
{
	struct pg_tm tlo;
	struct pg_tm thi;
	int64		months;

	if (strcmp(unit, "month") != 0)
		return strcmp(unit, "day") == 0 ? 8 : 15;
	LocalFields(lo, &tlo);
	LocalFields(hi, &thi);
	months = ((int64) thi.tm_year * 12 + thi.tm_mon) -
		((int64) tlo.tm_year * 12 + tlo.tm_mon) + 1;
	/* a range ending at the very start of a month draws no line for it */
	if (DatumGetTimestampTz(DirectFunctionCall2(timestamptz_trunc,
												CStringGetTextDatum("month"),
												TimestampTzGetDatum(hi))) == hi)
		months--;
	return months;
}

/*
 * backfill_lineage_chart
 *		lineage_chart(target, range_start, range_end) -> text lines.  A
 *		range of at most 7 days: one line per local day, one character per
 *		hour; at most 92 days: one line per week (from Monday), one
 *		character per day; longer: one line per month, one character per
 *		day.  Times are read in the session TimeZone; characters outside
 *		the range are blank.  The caller needs SELECT on the target.
 *
 * The width of the range is computed without overflow (the widest range
 * PostgreSQL can hold does not fit in int64 microseconds), and a chart of
 * more than BACKFILL_MAX_CHART_LINES lines is refused (54000) before
 * anything is read or drawn.  Every line is drawn in a memory context
 * reset for the next one, with an interrupt check.
 */
Datum
backfill_lineage_chart(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			target;
	TimestampTz lo;
	TimestampTz hi;
	int64		width;
	bool		wide;
	int64		nlines;
	Piece	   *pieces;
	int			np;
	int			from = 0;
	const char *unit;
	const char *cell_name;
	Interval	line_step = {0, 0, 0};
	Interval	cell_step = {0, 0, 0};
	TimestampTz line;
	StringInfoData buf;
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	MemoryContext linecxt;
	MemoryContext oldcxt;
	int			i;

	RequireArg(fcinfo, 0, "target", NULL);
	target = PG_GETARG_OID(0);
	CheckRangeBounds(PG_ARGISNULL(1) ? 0 : PG_GETARG_TIMESTAMPTZ(1), PG_ARGISNULL(1),
					 PG_ARGISNULL(2) ? 0 : PG_GETARG_TIMESTAMPTZ(2), PG_ARGISNULL(2));
	lo = PG_GETARG_TIMESTAMPTZ(1);
	hi = PG_GETARG_TIMESTAMPTZ(2);
	if (pg_class_aclcheck(target, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", QualifiedRelName(target)),
				 errdetail("The lineage of a table is shown to those who may read it.")));

	/* hi - lo overflows int64 for the widest ranges: those are "wide" */
	wide = pg_sub_s64_overflow(hi, lo, &width);
	if (!wide && width <= 7 * USECS_PER_DAY)
	{
		unit = "day";
		cell_name = "hour";
		line_step.day = 1;
		cell_step.time = USECS_PER_HOUR;
	}
	else if (!wide && width <= 92 * USECS_PER_DAY)
	{
		unit = "week";
		cell_name = "day";
		line_step.day = 7;
		cell_step.day = 1;
	}
	else
	{
		unit = "month";
		cell_name = "day";
		line_step.month = 1;
		cell_step.day = 1;
	}
	nlines = ChartLines(lo, hi, unit);
	if (nlines > BACKFILL_MAX_CHART_LINES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("lineage chart of [%s, %s) would have " INT64_FORMAT " lines",
						TimestampText(lo), TimestampText(hi), nlines),
				 errdetail("A chart has at most %d lines, one per month for a range longer than 92 days.",
						   BACKFILL_MAX_CHART_LINES),
				 errhint("Chart a shorter range (at most %d months), or read backfill.lineage, which merges the whole range into its stretches.",
						 BACKFILL_MAX_CHART_LINES)));

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	SpiConnect();
	np = ClassifyPieces(target, lo, hi, &pieces);
	linecxt = AllocSetContextCreate(CurrentMemoryContext,
									"backfill chart line",
									ALLOCSET_DEFAULT_SIZES);

	initStringInfo(&buf);
	appendStringInfo(&buf, "%s from %s to %s: one line per %s, one character per %s",
					 QualifiedRelName(target), TimestampText(lo),
					 TimestampText(hi), unit, cell_name);
	PutLine(rsinfo, buf.data);

	line = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_trunc,
												   CStringGetTextDatum(unit),
												   TimestampTzGetDatum(lo)));
	while (line < hi)
	{
		TimestampTz next = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
																   TimestampTzGetDatum(line),
																   IntervalPGetDatum(&line_step)));
		TimestampTz cell = line;
		struct pg_tm tm;

		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(linecxt);
		oldcxt = MemoryContextSwitchTo(linecxt);
		LocalFields(line, &tm);
		resetStringInfo(&buf);
		if (strcmp(unit, "month") == 0)
			appendStringInfo(&buf, "%04d-%02d    ", tm.tm_year, tm.tm_mon);
		else
			appendStringInfo(&buf, "%04d-%02d-%02d ", tm.tm_year, tm.tm_mon,
							 tm.tm_mday);
		appendStringInfoChar(&buf, '|');
		while (cell < next)
		{
			TimestampTz cend = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
																	   TimestampTzGetDatum(cell),
																	   IntervalPGetDatum(&cell_step)));

			cend = Min(cend, next);
			if (cend <= lo || cell >= hi)
				appendStringInfoChar(&buf, ' ');
			else
				appendStringInfoChar(&buf, CellChar(pieces, np, &from,
													Max(cell, lo), Min(cend, hi)));
			cell = cend;
		}
		appendStringInfoChar(&buf, '|');
		PutLine(rsinfo, buf.data);
		MemoryContextSwitchTo(oldcxt);
		line = next;
	}

	/* the legend: every definition version of the target */
	PutLine(rsinfo, "legend:");
	values[0] = ObjectIdGetDatum(target);
	CatalogExec("SELECT d.version, d.label,"
				" d.version OPERATOR(pg_catalog.=) t.current_version"
				" FROM backfill.definitions d LEFT JOIN backfill.targets t"
				"  ON t.target OPERATOR(pg_catalog.=) d.target"
				" WHERE d.target OPERATOR(pg_catalog.=) $1 ORDER BY d.version",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	for (i = 0; i < (int) SPI_processed; i++)
	{
		bool		isnull;
		int32		version;
		char	   *label;
		bool		current;

		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(linecxt);
		oldcxt = MemoryContextSwitchTo(linecxt);
		version = SpiGetInt32(i, 1, &isnull);
		label = SpiGetText(i, 2);
		current = SpiGetBool(i, 3, &isnull);
		resetStringInfo(&buf);
		appendStringInfo(&buf, "  %c  backfilled under definition version %d%s%s%s%s",
						 VersionChar(version), version,
						 label ? " \"" : "", label ? label : "", label ? "\"" : "",
						 current ? " (current)" : "");
		PutLine(rsinfo, buf.data);
		MemoryContextSwitchTo(oldcxt);
	}
	SPI_freetuptable(SPI_tuptable);
	PutLine(rsinfo, "  -  no source data (no_source)");
	PutLine(rsinfo, "  .  never filled (no backfill covers it)");
	PutLine(rsinfo, "  X  failed (the latest attempt failed)");
	PutLine(rsinfo, "     (blank) outside the range");
	MemoryContextDelete(linecxt);
	SpiFinish();
	return (Datum) 0;
}
