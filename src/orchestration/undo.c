/*-------------------------------------------------------------------------
 *
 * undo.c
 *	  Undo (doc/undo.md): revert plans the run that puts back what a kept
 *	  run replaced; diff lists, row by row, what a kept run changed;
 *	  purge_archive removes kept rows.  The archive itself is
 *	  engine/archive.c; a revert run's chunks are executed by the chunk
 *	  engine like any other (engine/chunk.c, RevertRange).
 *
 * Reverts go last in, first out: a run is reverted only while no later
 * run has replaced any part of what it replaced, so the rows it kept are
 * exactly what its range held before it.  A revert run keeps what it
 * replaces too, so a revert can itself be reverted.  Lineage forgets a
 * reverted chunk and every revert run (backfill._lineage_pieces).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "backfill.h"

/* The chunks of a run that changed its target's rows. */
#define APPLIED \
	"(c.status OPERATOR(pg_catalog.=) 'done'" \
	" OR (c.status OPERATOR(pg_catalog.=) 'no_source'" \
	" AND c.finished_at IS NOT NULL))"

/*
 * CheckNoLaterRun
 *		LIFO: 55000 when a later run of the target has replaced part of
 *		what run "run_id" replaced and still stands there; "what" is
 *		"reverted" or "diffed".  A later chunk that was itself reverted
 *		(with its revert: a chain of reverts of odd length) left the rows
 *		as they were and does not count; nor do the reverts of the run
 *		itself when they cancel out (a revert and the revert of it).
 */
static void
CheckNoLaterRun(int64 run_id, const char *what)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1];
	bool		isnull;

	values[0] = Int64GetDatum(run_id);
	CatalogExec("WITH RECURSIVE"
				/*
				 * the run's own chunks and the later runs' (not reverts),
				 * each up its chain of reverts
				 */
				" chain AS ("
				"  SELECT c.run_id AS base, c.chunk_no, c.run_id, 0 AS depth"
				"  FROM backfill.runs r0"
				"  JOIN backfill.runs r ON r.target OPERATOR(pg_catalog.=) r0.target"
				"   AND (r.run_id OPERATOR(pg_catalog.=) r0.run_id"
				"    OR (r.run_id OPERATOR(pg_catalog.>) r0.run_id AND r.reverts IS NULL))"
				"  JOIN backfill.chunks c ON c.run_id OPERATOR(pg_catalog.=) r.run_id"
				"  WHERE r0.run_id OPERATOR(pg_catalog.=) $1 AND " APPLIED
				"  UNION ALL"
				"  SELECT h.base, h.chunk_no, v.run_id, h.depth OPERATOR(pg_catalog.+) 1"
				"  FROM chain h"
				"  JOIN backfill.runs v ON v.reverts OPERATOR(pg_catalog.=) h.run_id"
				"  JOIN backfill.chunks vc ON vc.run_id OPERATOR(pg_catalog.=) v.run_id"
				"   AND vc.chunk_no OPERATOR(pg_catalog.=) h.chunk_no"
				"   AND vc.status OPERATOR(pg_catalog.=) 'done'),"
				/*
				 * chunks that left nothing behind: a later run's chain of
				 * odd length (it was reverted), and the reverts of the run
				 * itself when they cancel out (an even chain)
				 */
				" undone AS ("
				"  SELECT h.run_id, h.chunk_no FROM chain h"
				"  JOIN (SELECT x.base, x.chunk_no FROM chain x"
				"   GROUP BY x.base, x.chunk_no"
				"   HAVING pg_catalog.max(x.depth) OPERATOR(pg_catalog.%) 2"
				"    OPERATOR(pg_catalog.=) CASE WHEN x.base OPERATOR(pg_catalog.=) $1"
				"     THEN 0 ELSE 1 END) o"
				"  ON o.base OPERATOR(pg_catalog.=) h.base"
				"  AND o.chunk_no OPERATOR(pg_catalog.=) h.chunk_no)"
				" SELECT c2.run_id, c2.chunk_start, c2.chunk_end,"
				" r2.reverts IS NOT DISTINCT FROM r.run_id"
				" FROM backfill.chunks c"
				" JOIN backfill.runs r ON r.run_id OPERATOR(pg_catalog.=) c.run_id"
				" JOIN backfill.runs r2 ON r2.target OPERATOR(pg_catalog.=) r.target"
				"  AND r2.run_id OPERATOR(pg_catalog.>) r.run_id"
				" JOIN backfill.chunks c2 ON c2.run_id OPERATOR(pg_catalog.=) r2.run_id"
				"  AND c2.chunk_start OPERATOR(pg_catalog.<) c.chunk_end"
				"  AND c2.chunk_end OPERATOR(pg_catalog.>) c.chunk_start"
				"  AND (c2.status OPERATOR(pg_catalog.=) 'done'"
				"   OR (c2.status OPERATOR(pg_catalog.=) 'no_source'"
				"   AND c2.finished_at IS NOT NULL))"
				" WHERE c.run_id OPERATOR(pg_catalog.=) $1 AND " APPLIED
				" AND NOT EXISTS (SELECT FROM undone u"
				"  WHERE u.run_id OPERATOR(pg_catalog.=) c2.run_id"
				"  AND u.chunk_no OPERATOR(pg_catalog.=) c2.chunk_no)"
				" ORDER BY c2.run_id DESC, c2.chunk_start LIMIT 1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
	{
		int64		later = SpiGetInt64(0, 1, &isnull);
		char	   *lo = TimestampText(DatumGetTimestampTz(SpiGetDatumCopy(0, 2, &isnull)));
		char	   *hi = TimestampText(DatumGetTimestampTz(SpiGetDatumCopy(0, 3, &isnull)));

		if (SpiGetBool(0, 4, &isnull))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("run %lld cannot be %s: run %lld reverted it",
							(long long) run_id, what, (long long) later),
					 errhint("Revert run %lld to have the rows of run %lld back.",
							 (long long) later, (long long) run_id)));
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run %lld cannot be %s: run %lld replaced part of its range later",
						(long long) run_id, what, (long long) later),
				 errdetail("Run %lld replaced [%s, %s) after run %lld.",
						   (long long) later, lo, hi, (long long) run_id),
				 errhint("Revert run %lld first: runs are reverted last in, first out.",
						 (long long) later)));
	}
	SPI_freetuptable(SPI_tuptable);
}

/*
 * CheckAllKept
 *		Every chunk of run_id that changed the target kept what it replaced
 *		and still holds it (55000 otherwise); chunk_no 0 means all, else
 *		only that chunk, which must be one that changed the target.
 *		Returns how many chunks.
 */
static int
CheckAllKept(RunInfo *run, int32 chunk_no)
{
	Oid			argtypes[2] = {INT8OID, INT4OID};
	Datum		values[2];
	char		nulls[3] = "  ";
	bool		isnull;
	int			n;

	if (!run->keep_replaced)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run %lld did not keep the rows it replaced",
						(long long) run->run_id),
				 errhint("Only runs planned with keep_replaced => true (or of a target registered with it) can be reverted or diffed.")));

	values[0] = Int64GetDatum(run->run_id);
	values[1] = Int32GetDatum(chunk_no);
	if (chunk_no == 0)
		nulls[1] = 'n';
	CatalogExec("SELECT c.chunk_no, k.run_id IS NULL, k.purged_at::pg_catalog.text"
				" FROM backfill.chunks c"
				" LEFT JOIN backfill.archived_chunks k"
				"  ON k.run_id OPERATOR(pg_catalog.=) c.run_id"
				"  AND k.chunk_no OPERATOR(pg_catalog.=) c.chunk_no"
				" WHERE c.run_id OPERATOR(pg_catalog.=) $1 AND " APPLIED
				" AND ($2 IS NULL OR c.chunk_no OPERATOR(pg_catalog.=) $2)"
				" ORDER BY k.run_id IS NULL DESC, k.purged_at IS NOT NULL DESC,"
				" c.chunk_no",
				2, argtypes, values, nulls, SPI_OK_SELECT);
	n = (int) SPI_processed;
	if (n == 0)
	{
		SPI_freetuptable(SPI_tuptable);
		if (chunk_no != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("chunk %d of run %lld did not replace anything",
							chunk_no, (long long) run->run_id),
					 errhint("Its chunks are listed in backfill.chunks; only done chunks (and cleared no_source ones) replaced rows.")));
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run %lld did not replace anything", (long long) run->run_id),
				 errdetail("None of its chunks is done.")));
	}
	else
	{
		int32		first = SpiGetInt32(0, 1, &isnull);
		bool		missing = SpiGetBool(0, 2, &isnull);
		char	   *purged_at = SpiGetText(0, 3);

		SPI_freetuptable(SPI_tuptable);
		if (missing)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("chunk %d of run %lld did not keep the rows it replaced",
							first, (long long) run->run_id)));
		if (purged_at != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the kept rows of run %lld were purged",
							(long long) run->run_id),
					 errdetail("The rows chunk %d kept were removed at %s (backfill.purge_archive or the definition's keep_for).",
							   first, purged_at)));
	}
	return n;
}

/*
 * RevertRun
 *		See backfill.h: plan the run that reverts run_id.  The caller must
 *		be allowed to act on the run and to rewrite the target (as for
 *		run), to read the rows it kept (CheckKeptRowsReadable) and to run
 *		as the author of its definition, whose rights the chunks use.  The
 *		run must be finished (done or cancelled), have kept what it
 *		replaced, still hold it, and be the last run over its range.  The
 *		revert run covers the run's range with its chunks that changed the
 *		target, in reverse order, probed, under the run's definition
 *		version, TimeZone and search_path, and keeps what it replaces.
 *		Caller is connected to SPI.
 */
int64
RevertRun(int64 run_id)
{
	RunInfo    *run = LoadRun(run_id);
	int64		revert_id;
	bool		isnull;
	RunRequest	revert;

	CheckRunIdentity(run, "revert", true);
	CheckKeptRowsReadable(run->target);
	CheckAuthor(run->author, run->target, run->definition_version);
	TakeTargetPlanLock(run->target);

	/* read again under the plan lock */
	run = LoadRun(run_id);
	if (run->status != RUN_DONE && run->status != RUN_CANCELLED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run %lld is not finished", (long long) run_id),
				 errdetail("Its status is %s; only a done or cancelled run can be reverted.",
						   RunStatusName(run->status)),
				 errhint("Finish it with CALL backfill.run(%lld), or cancel it with backfill.cancel(%lld).",
						 (long long) run_id, (long long) run_id)));
	(void) CheckAllKept(run, 0);

	/* an unfinished run over the range (a revert of it planned already) */
	{
		Oid			argtypes[1] = {INT8OID};
		Datum		values[1];

		values[0] = Int64GetDatum(run_id);
		CatalogExec("SELECT o.run_id FROM backfill.runs r"
					" JOIN backfill.runs o ON o.target OPERATOR(pg_catalog.=) r.target"
					" WHERE r.run_id OPERATOR(pg_catalog.=) $1"
					" AND o.status OPERATOR(pg_catalog.=) ANY ('{planned,probed,failed}'::pg_catalog.text[])"
					" AND o.range_start OPERATOR(pg_catalog.<) r.range_end"
					" AND o.range_end OPERATOR(pg_catalog.>) r.range_start"
					" ORDER BY o.run_id LIMIT 1",
					1, argtypes, values, NULL, SPI_OK_SELECT);
		if (SPI_processed > 0)
		{
			int64		other = SpiGetInt64(0, 1, &isnull);

			ereport(ERROR,
					(errcode(ERRCODE_EXCLUSION_VIOLATION),
					 errmsg("range overlaps unfinished run %lld", (long long) other),
					 errdetail("Run %lld covers part of the range of run %lld and is not finished.",
							   (long long) other, (long long) run_id),
					 errhint("Finish it with CALL backfill.run(%lld), or cancel it with backfill.cancel(%lld).",
							 (long long) other, (long long) other)));
		}
		SPI_freetuptable(SPI_tuptable);
	}
	CheckNoLaterRun(run_id, "reverted");

	/* the reverted run's range, chunk and pins; backwards, probed, kept */
	memset(&revert, 0, sizeof(revert));
	revert.target = run->target;
	revert.target_name = run->target_name;
	revert.range_start = run->range_start;
	revert.range_end = run->range_end;
	revert.chunk = run->chunk;
	revert.note = psprintf("revert of run %lld", (long long) run_id);
	revert.probe = true;
	revert.backwards = !run->backwards;
	revert.clear_no_source = false;
	revert.definition_version = run->definition_version;
	revert.timezone = run->timezone;
	revert.search_path = run->search_path;
	revert.keep_replaced = true;
	revert.reverts = run->run_id;
	revert_id = CreateRun(&revert);

	{
		Oid			argtypes[2] = {INT8OID, INT8OID};
		Datum		values[2];

		values[0] = Int64GetDatum(run_id);
		values[1] = Int64GetDatum(revert_id);
		CatalogExec("INSERT INTO backfill.chunks"
					" (run_id, chunk_no, chunk_start, chunk_end, status)"
					" SELECT $2, c.chunk_no, c.chunk_start, c.chunk_end, 'pending'"
					" FROM backfill.chunks c"
					" WHERE c.run_id OPERATOR(pg_catalog.=) $1 AND " APPLIED,
					2, argtypes, values, NULL, SPI_OK_INSERT);
	}
	return revert_id;
}

/*
 * DiffKeyColumns
 *		The key of a diff: the definition's key (register's key), else
 *		the target's primary key columns; NIL when neither.
 */
static List *
DiffKeyColumns(RunInfo *run)
{
	Oid			argtypes[2] = {REGCLASSOID, INT4OID};
	Datum		values[2];
	List	   *key = NIL;
	int			i;

	values[0] = ObjectIdGetDatum(run->target);
	values[1] = Int32GetDatum(run->definition_version);
	CatalogExec("SELECT k.name::pg_catalog.text FROM backfill.definitions d,"
				" pg_catalog.unnest(d.key) WITH ORDINALITY AS k(name, n)"
				" WHERE d.target OPERATOR(pg_catalog.=) $1"
				" AND d.version OPERATOR(pg_catalog.=) $2 ORDER BY k.n",
				2, argtypes, values, NULL, SPI_OK_SELECT);
	for (i = 0; i < (int) SPI_processed; i++)
		key = lappend(key, SpiGetText(i, 1));
	SPI_freetuptable(SPI_tuptable);
	if (key != NIL)
		return key;

	SpiExecPinned("SELECT a.attname::pg_catalog.text"
				  " FROM pg_catalog.pg_index i,"
				  " pg_catalog.unnest(i.indkey::pg_catalog.int2[]) WITH ORDINALITY AS k(attnum, n)"
				  " JOIN pg_catalog.pg_attribute a"
				  "  ON a.attnum OPERATOR(pg_catalog.=) k.attnum"
				  " WHERE i.indrelid OPERATOR(pg_catalog.=) $1 AND i.indisprimary"
				  " AND a.attrelid OPERATOR(pg_catalog.=) i.indrelid"
				  " ORDER BY k.n",
				  1, argtypes, values, NULL, true, 0, SPI_OK_SELECT);
	for (i = 0; i < (int) SPI_processed; i++)
		key = lappend(key, SpiGetText(i, 1));
	SPI_freetuptable(SPI_tuptable);
	return key;
}

/*
 * OutputExpr
 *		"pg_catalog.textin(<output function>(expr))": the value of expr, of
 *		type "type" (not a domain), as the text its type's output function
 *		writes.  An output function is C code (a base type's, which only a
 *		superuser can make) or PostgreSQL's own (enum_out, record_out,
 *		range_out, array_out), never a cast someone wrote.
 */
static char *
OutputExpr(Oid type, const char *expr)
{
	Oid			func;
	bool		varlena;

	getTypeOutputInfo(type, &func, &varlena);
	return psprintf("pg_catalog.textin(%s.%s(%s))",
					quote_identifier(get_namespace_name(get_func_namespace(func))),
					quote_identifier(get_func_name(func)), expr);
}

/*
 * JsonSafe
 *		expr (a kept column c, or the same column read from the target) in
 *		a form to_jsonb turns into JSON by PostgreSQL's code only: as it is
 *		for a built-in type (created at initdb: nobody but a superuser can
 *		write a cast from or to it), else as its text (OutputExpr), so
 *		that a cast to json written by a type's owner is never called.
 */
static char *
JsonSafe(const KeptColumn *c, const char *expr)
{
	if (c->type < FirstNormalObjectId)
		return pstrdup(expr);
	return OutputExpr(c->type, expr);
}

/*
 * DiffKeyEquality
 *		"a = b" for key column c, with the default equality operator of its
 *		kept type written schema-qualified (OPERATOR(nsp.=)): a default
 *		operator class, which only a superuser can make, names it; so the
 *		sides join by hash or merge.  For a type without one, the two
 *		values compared as JSON (JsonSafe).
 */
static char *
DiffKeyEquality(const KeptColumn *c, const char *a, const char *b)
{
	TypeCacheEntry *tc = lookup_type_cache(c->type, TYPECACHE_EQ_OPR);
	HeapTuple	tup;
	char	   *result;

	if (!OidIsValid(tc->eq_opr))
		return psprintf("pg_catalog.to_jsonb(%s) OPERATOR(pg_catalog.=) pg_catalog.to_jsonb(%s)",
						JsonSafe(c, a), JsonSafe(c, b));
	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(tc->eq_opr));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "backfill: cache lookup failed for operator %u", tc->eq_opr);
	result = psprintf("%s OPERATOR(%s.%s) %s", a,
					  quote_identifier(get_namespace_name(((Form_pg_operator) GETSTRUCT(tup))->oprnamespace)),
					  NameStr(((Form_pg_operator) GETSTRUCT(tup))->oprname), b);
	ReleaseSysCache(tup);
	return result;
}

/*
 * DiffEqualMeansSameJson
 *		Whether two values of built-in type "type" that its "=" finds equal
 *		always have equal to_jsonb (jsonb's equality, which compares
 *		numbers by value): then "=" may decide that a column did not
 *		change.  Not so for interval ('1 day' = '24 hours'), float ('-0' =
 *		'0'), bpchar (trailing spaces) and every type not listed.  Text is
 *		compared in the "C" collation (byte for byte).
 */
static bool
DiffEqualMeansSameJson(Oid type)
{
	switch (type)
	{
		case BOOLOID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
		case NUMERICOID:
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case UUIDOID:
		case TEXTOID:
		case VARCHAROID:
		case JSONBOID:
			return true;
		default:
			return false;
	}
}

/*
 * DiffKeyedQuery
 *		Append to "sql" (which holds the CTEs o and nw) the keyed diff: o
 *		and nw joined on chunk and key, each key column by its type's own
 *		equality (schema-qualified).  A pair of rows is reported changed
 *		when the JSON of its columns differs (as jsonb): that is what
 *		decides, and the rows whose binary images are equal never differ
 *		there.  So the join first drops, cheaply, the pairs whose columns
 *		are all equal: by "=" for the types where equal means equal JSON
 *		(DiffEqualMeansSameJson), by binary image (*=) for the others;
 *		only the pairs left get their JSON compared.  No row of either side
 *		is built as a record before the join (it would be carried through
 *		the hash, and spilled); the JSON of the output is made of the rows
 *		reported only, every value through JsonSafe.
 */
static void
DiffKeyedQuery(StringInfo sql, Oid target, List *key, const KeptColumn *cols,
			   int ncols)
{
	StringInfoData on;
	StringInfoData kj;
	StringInfoData same;
	StringInfoData img_o;
	StringInfoData img_n;
	StringInfoData row_o;
	StringInfoData row_n;
	StringInfoData sel;
	StringInfoData xo;
	StringInfoData xn;
	ListCell   *lc;
	int			i;

	initStringInfo(&on);
	initStringInfo(&kj);
	initStringInfo(&same);
	initStringInfo(&img_o);
	initStringInfo(&img_n);
	initStringInfo(&row_o);
	initStringInfo(&row_n);
	initStringInfo(&sel);
	initStringInfo(&xo);
	initStringInfo(&xn);
	for (i = 0; i < ncols; i++)
	{
		const KeptColumn *k = &cols[i];
		const char *c = quote_identifier(k->name);
		const char *sep = i > 0 ? ", " : "";

		CHECK_FOR_INTERRUPTS();
		appendStringInfo(&sel, ", o.%s AS _backfill_o%d, nw.%s AS _backfill_n%d",
						 c, i, c, i);
		appendStringInfo(&row_o, "%s%s", sep,
						 JsonSafe(k, psprintf("o.%s", c)));
		appendStringInfo(&row_n, "%s%s", sep,
						 JsonSafe(k, psprintf("nw.%s", c)));
		appendStringInfo(&xo, "%s%s AS %s", sep,
						 JsonSafe(k, psprintf("d._backfill_o%d", i)), c);
		appendStringInfo(&xn, "%s%s AS %s", sep,
						 JsonSafe(k, psprintf("d._backfill_n%d", i)), c);
		if (DiffEqualMeansSameJson(k->type))
		{
			const char *coll = (k->type == TEXTOID || k->type == VARCHAROID)
				? " COLLATE pg_catalog.\"C\"" : "";

			appendStringInfo(&same,
							 "COALESCE(o.%s%s OPERATOR(pg_catalog.=) nw.%s%s,"
							 " o.%s IS NULL AND nw.%s IS NULL) AND ",
							 c, coll, c, coll, c, c);
		}
		else
		{
			appendStringInfo(&img_o, "%so.%s", img_o.len > 0 ? ", " : "", c);
			appendStringInfo(&img_n, "%snw.%s", img_n.len > 0 ? ", " : "", c);
		}
	}
	if (img_o.len > 0)
		appendStringInfo(&same,
						 "ROW(%s)::pg_catalog.record OPERATOR(pg_catalog.*=)"
						 " ROW(%s)::pg_catalog.record",
						 img_o.data, img_n.data);
	else
		appendStringInfoString(&same, "true");

	foreach(lc, key)
	{
		const char *name = (const char *) lfirst(lc);
		const char *col = quote_identifier(name);

		for (i = 0; i < ncols; i++)
			if (strcmp(cols[i].name, name) == 0)
				break;
		if (i == ncols)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("key column \"%s\" is not in the archive of %s",
							name, QualifiedRelName(target)),
					 errhint("Register the target again with a key of columns it has kept.")));
		appendStringInfo(&on, " AND %s",
						 DiffKeyEquality(&cols[i], psprintf("o.%s", col),
										 psprintf("nw.%s", col)));
		appendStringInfo(&kj, "%s%s, %s",
						 lc == list_head(key) ? "" : ", ",
						 quote_literal_cstr(name),
						 JsonSafe(&cols[i],
								  psprintf("COALESCE(d._backfill_o%d, d._backfill_n%d)",
										   i, i)));
	}
	appendStringInfo(sql,
					 ", d AS (SELECT COALESCE(o._backfill_chunk, nw._backfill_chunk) AS n,"
					 "  o._backfill_chunk IS NULL AS added, nw._backfill_chunk IS NULL AS removed%s"
					 "  FROM o FULL JOIN nw"
					 "  ON o._backfill_chunk OPERATOR(pg_catalog.=) nw._backfill_chunk%s"
					 "  WHERE o._backfill_chunk IS NULL OR nw._backfill_chunk IS NULL"
					 "  OR (NOT (%s)"
					 "   AND pg_catalog.to_jsonb(ROW(%s)) OPERATOR(pg_catalog.<>)"
					 "   pg_catalog.to_jsonb(ROW(%s)))),"
					 " j AS (SELECT d.n, d.added, d.removed,"
					 "  pg_catalog.jsonb_build_object(%s) AS k,"
					 "  pg_catalog.to_jsonb(xo) AS jo, pg_catalog.to_jsonb(xn) AS jn"
					 "  FROM d CROSS JOIN LATERAL (SELECT %s) xo"
					 "  CROSS JOIN LATERAL (SELECT %s) xn)"
					 " SELECT j.n::pg_catalog.int4, j.k,"
					 "  (CASE WHEN j.added THEN 'added' WHEN j.removed THEN 'removed'"
					 "   ELSE 'changed' END)::pg_catalog.text,"
					 "  CASE WHEN j.removed THEN j.jo WHEN NOT j.added THEN"
					 "   (SELECT pg_catalog.jsonb_object_agg(e.key, e.value)"
					 "    FROM pg_catalog.jsonb_each(j.jo) e"
					 "    WHERE e.value IS DISTINCT FROM (j.jn OPERATOR(pg_catalog.->) e.key)) END,"
					 "  CASE WHEN j.added THEN j.jn WHEN NOT j.removed THEN"
					 "   (SELECT pg_catalog.jsonb_object_agg(e.key, e.value)"
					 "    FROM pg_catalog.jsonb_each(j.jn) e"
					 "    WHERE e.value IS DISTINCT FROM (j.jo OPERATOR(pg_catalog.->) e.key)) END"
					 " FROM j"
					 " ORDER BY 1, 2, 3",
					 sel.data, on.data, same.data, row_o.data, row_n.data,
					 kj.data, xo.data, xn.data);
}

/*
 * DiffMultisetQuery
 *		Append to "sql" (which holds the CTEs o and nw) the diff without a
 *		key: the rows of each side as JSON (every value through JsonSafe),
 *		counted per chunk; one row per copy added or removed.
 */
static void
DiffMultisetQuery(StringInfo sql, const KeptColumn *cols, int ncols)
{
	StringInfoData xo;
	StringInfoData xn;
	int			i;

	initStringInfo(&xo);
	initStringInfo(&xn);
	for (i = 0; i < ncols; i++)
	{
		const char *c = quote_identifier(cols[i].name);

		appendStringInfo(&xo, "%s%s AS %s", i > 0 ? ", " : "",
						 JsonSafe(&cols[i], psprintf("o.%s", c)), c);
		appendStringInfo(&xn, "%s%s AS %s", i > 0 ? ", " : "",
						 JsonSafe(&cols[i], psprintf("nw.%s", c)), c);
	}
	appendStringInfo(sql,
					 ", oc AS (SELECT o._backfill_chunk AS n, pg_catalog.to_jsonb(x) AS r,"
					 "  pg_catalog.count(*) AS c FROM o CROSS JOIN LATERAL (SELECT %s) x"
					 "  GROUP BY 1, 2),"
					 " nc AS (SELECT nw._backfill_chunk AS n, pg_catalog.to_jsonb(x) AS r,"
					 "  pg_catalog.count(*) AS c FROM nw CROSS JOIN LATERAL (SELECT %s) x"
					 "  GROUP BY 1, 2),"
					 " d AS (SELECT COALESCE(oc.n, nc.n) AS n,"
					 "  COALESCE(oc.r, nc.r) AS r,"
					 "  COALESCE(nc.c, 0) OPERATOR(pg_catalog.-)"
					 "  COALESCE(oc.c, 0) AS delta"
					 "  FROM oc FULL JOIN nc ON oc.n OPERATOR(pg_catalog.=) nc.n"
					 "  AND oc.r OPERATOR(pg_catalog.=) nc.r)"
					 " SELECT d.n::pg_catalog.int4, NULL::pg_catalog.jsonb,"
					 "  (CASE WHEN d.delta OPERATOR(pg_catalog.>) 0 THEN 'added'"
					 "   ELSE 'removed' END)::pg_catalog.text,"
					 "  CASE WHEN d.delta OPERATOR(pg_catalog.<) 0 THEN d.r END,"
					 "  CASE WHEN d.delta OPERATOR(pg_catalog.>) 0 THEN d.r END"
					 " FROM d, pg_catalog.generate_series(1::pg_catalog.int8,"
					 "  pg_catalog.abs(d.delta)) AS copy"
					 " WHERE d.delta OPERATOR(pg_catalog.<>) 0"
					 " ORDER BY 1, 3, 4, 5",
					 ncols > 0 ? xo.data : "", ncols > 0 ? xn.data : "");
}

/*
 * DiffAsCaller
 *		Run the diff statement "sql" as the caller, search_path pinned, its
 *		rows streaming into dest.
 */
static void
DiffAsCaller(const char *sql, DestReceiver *dest)
{
	int			pin = SpiPinSearchPath();

	PG_TRY();
	{
		SpiExecDest(sql, 0, NULL, NULL, NULL, dest, SPI_OK_SELECT);
	}
	PG_FINALLY();
	{
		SpiUnpinSearchPath(pin);
	}
	PG_END_TRY();
}

/*
 * DiffRun
 *		See backfill.h.  The rows chunk by chunk: the old side is what the
 *		run's chunks kept, the new side the target's rows in the same
 *		chunks now, both read from C into tuplestores (backfill_old,
 *		backfill_new; ArchiveRegisterKept, ArchiveRegisterNow) after
 *		CheckKeptRowsReadable, so no query is ever planned over the target
 *		(the planner may evaluate its owner's functions: an index
 *		expression, a partition key).  The comparison is one statement run
 *		as the caller, search_path pinned, over those two relations only,
 *		that calls PostgreSQL's own functions and operators only (every
 *		operator schema-qualified, no cast of a user's type: JsonSafe).
 *		With a key, per key: added, removed, or changed with the old and
 *		new values of the columns that differ; without, as multisets: one
 *		row per copy added or removed, key NULL.  The run must be the last
 *		over its range (else the target no longer holds what it wrote).
 *		Caller is connected to SPI.
 */
void
DiffRun(int64 run_id, int32 chunk_no, DestReceiver *dest)
{
	RunInfo    *run = LoadRun(run_id);
	List	   *key;
	int			n;
	int			i;
	int32	   *nos;
	Datum	   *los;
	Datum	   *his;
	StringInfoData sql;
	StringInfoData kept;
	int			nest;
	Tuplestorestate *old_rows;
	Tuplestorestate *new_rows;
	KeptColumn *cols;
	int			ncols;

	CheckKeptRowsReadable(run->target);
	(void) TimeColumnType(run->target, run->time_column);
	(void) CheckAllKept(run, chunk_no);
	CheckNoLaterRun(run_id, "diffed");

	/* the chunks' bounds in the time column's type, in the run's TimeZone */
	{
		Oid			types[2] = {INT8OID, INT4OID};
		Datum		vals[2];
		char		nulls[3] = "  ";

		vals[0] = Int64GetDatum(run_id);
		vals[1] = Int32GetDatum(chunk_no);
		if (chunk_no == 0)
			nulls[1] = 'n';
		CatalogExec("SELECT c.chunk_no, c.chunk_start, c.chunk_end"
					" FROM backfill.chunks c"
					" WHERE c.run_id OPERATOR(pg_catalog.=) $1 AND " APPLIED
					" AND ($2 IS NULL OR c.chunk_no OPERATOR(pg_catalog.=) $2)"
					" ORDER BY c.chunk_no",
					2, types, vals, nulls, SPI_OK_SELECT);
	}
	n = (int) SPI_processed;
	nos = palloc(sizeof(int32) * Max(n, 1));
	los = palloc(sizeof(Datum) * Max(n, 1));
	his = palloc(sizeof(Datum) * Max(n, 1));
	nest = NewGUCNestLevel();
	(void) set_config_option("TimeZone", run->timezone, PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	for (i = 0; i < n; i++)
	{
		bool		isnull;
		Oid			t[2];
		Datum		v[2];

		CHECK_FOR_INTERRUPTS();
		nos[i] = SpiGetInt32(i, 1, &isnull);
		RangeParams(run->target, run->time_column,
					DatumGetTimestampTz(SpiGetDatumCopy(i, 2, &isnull)),
					DatumGetTimestampTz(SpiGetDatumCopy(i, 3, &isnull)),
					t, v);
		los[i] = v[0];
		his[i] = v[1];
	}
	AtEOXact_GUC(false, nest);
	SPI_freetuptable(SPI_tuptable);

	key = DiffKeyColumns(run);
	old_rows = ArchiveRegisterKept(run->target, run_id, chunk_no,
								   "backfill_old", &cols, &ncols);
	new_rows = ArchiveRegisterNow(run->target, run->time_column, cols, ncols,
								  n, nos, los, his, "backfill_new");

	/*
	 * The two sides: the kept rows (o) and the rows the chunks' ranges
	 * hold now (nw), both read from C, each the chunk number and the kept
	 * columns, of the same types on both sides.  The statement names no
	 * relation of anyone's.
	 */
	initStringInfo(&kept);
	for (i = 0; i < ncols; i++)
		appendStringInfo(&kept, ", o.%s", quote_identifier(cols[i].name));
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "WITH o AS (SELECT o._backfill_chunk%s FROM backfill_old o),"
					 " nw AS (SELECT o._backfill_chunk%s FROM backfill_new o)",
					 kept.data, kept.data);
	if (key != NIL)
		DiffKeyedQuery(&sql, run->target, key, cols, ncols);
	else
		DiffMultisetQuery(&sql, cols, ncols);

	/*
	 * No JIT: the planner cannot see the size of the kept rows and would
	 * compile for seconds a query that runs in less.
	 */
	nest = NewGUCNestLevel();
	(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	DiffAsCaller(sql.data, dest);
	SpiUnregisterRows("backfill_old");
	SpiUnregisterRows("backfill_new");
	tuplestore_end(old_rows);
	tuplestore_end(new_rows);
	AtEOXact_GUC(true, nest);
}

/*
 * PurgeArchive
 *		See backfill.h: purge_archive(older_than, target).
 */
int64
PurgeArchive(Interval *older_than, Oid target)
{
	if (OidIsValid(target))
		CheckTargetPrivileges(target);
	return ArchivePurge(target, older_than, true);
}

/*
 * RevertRestoreDefinition
 *		See backfill.h.  A revert run is done: the definition goes back with the rows.  The
 *		revert of a run built under version V makes the version that was
 *		current before V (definitions.previous_version) current again, if V
 *		is still current: a version registered since stays.  The revert of
 *		a revert (the run's rows back) makes V current again, if the
 *		version the first revert restored still is; and so on along a
 *		chain of reverts, by its parity (each revert run reverts an earlier
 *		run, so the chain ends).  The restored chunks
 *		then count as built under the current version (lineage gives them
 *		to the run before the reverted one), so that only_chunks =>
 *		'outdated', refreshes and cascades leave them alone.  A version
 *		that differs from the one before it only in its strategy or its
 *		author (set_strategy, the same text registered by another role) is
 *		the same definition: nothing changes.  A version of a chunk under
 *		an hour is not made current while the target is watched (the bound
 *		of CheckWatchedChunk).  What happened is noted on run
 *		(restored_version, kept_version) for ReportRevertDefinition.
 *		Caller is connected to SPI.
 */
void
RevertRestoreDefinition(RunInfo *run)
{
	Oid			argtypes[3] = {REGCLASSOID, INT4OID, INT8OID};
	Datum		values[3];
	bool		isnull;
	int32		from_version;
	int32		to_version;
	int32		current;
	bool		undo_of_undo;
	bool		same;

	values[0] = ObjectIdGetDatum(run->target);
	values[1] = Int32GetDatum(run->definition_version);
	values[2] = Int64GetDatum(run->reverts);
	CatalogExec("WITH RECURSIVE chain (run_id, reverts, depth) AS ("
				"  SELECT r.run_id, r.reverts, 1 FROM backfill.runs r"
				"  WHERE r.run_id OPERATOR(pg_catalog.=) $3"
				"  UNION ALL"
				"  SELECT r.run_id, r.reverts, c.depth OPERATOR(pg_catalog.+) 1"
				"  FROM chain c JOIN backfill.runs r"
				"   ON r.run_id OPERATOR(pg_catalog.=) c.reverts)"
				" SELECT d.previous_version, t.current_version,"
				" (SELECT pg_catalog.max(c.depth) OPERATOR(pg_catalog.%) 2"
				"   OPERATOR(pg_catalog.=) 0 FROM chain c),"
				" (d.source, d.label, d.time_column, d.chunk, d.source_retention,"
				"  d.source_horizon, d.ledger, d.measure, d.tolerance,"
				"  d.ledger_gate, d.keep_replaced, d.keep_for, d.key,"
				"  d.allow_empty)"
				"  IS NOT DISTINCT FROM"
				" (p.source, p.label, p.time_column, p.chunk, p.source_retention,"
				"  p.source_horizon, p.ledger, p.measure, p.tolerance,"
				"  p.ledger_gate, p.keep_replaced, p.keep_for, p.key,"
				"  p.allow_empty)"
				" FROM backfill.definitions d"
				" JOIN backfill.targets t ON t.target OPERATOR(pg_catalog.=) d.target"
				" JOIN backfill.definitions p ON p.target OPERATOR(pg_catalog.=) d.target"
				"  AND p.version OPERATOR(pg_catalog.=) d.previous_version"
				" WHERE d.target OPERATOR(pg_catalog.=) $1"
				" AND d.version OPERATOR(pg_catalog.=) $2",
				3, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		/* the first version, or the target unregistered since */
		SPI_freetuptable(SPI_tuptable);
		return;
	}
	to_version = SpiGetInt32(0, 1, &isnull);
	current = SpiGetInt32(0, 2, &isnull);
	undo_of_undo = SpiGetBool(0, 3, &isnull);
	same = SpiGetBool(0, 4, &isnull);
	SPI_freetuptable(SPI_tuptable);
	if (same)
		return;
	from_version = run->definition_version;
	if (undo_of_undo)
	{
		from_version = to_version;
		to_version = run->definition_version;
	}
	if (current != from_version)
	{
		if (current != to_version)
			run->kept_version = current;
		return;
	}

	values[1] = Int32GetDatum(from_version);
	argtypes[2] = INT4OID;
	values[2] = Int32GetDatum(to_version);
	CatalogExec("UPDATE backfill.targets t SET current_version = p.version,"
				" time_column = p.time_column, chunk = p.chunk,"
				" source_retention = p.source_retention,"
				" source_horizon = p.source_horizon, ledger = p.ledger,"
				" measure = p.measure, tolerance = p.tolerance,"
				" ledger_gate = p.ledger_gate, strategy = p.strategy,"
				" keep_replaced = p.keep_replaced, keep_for = p.keep_for,"
				" key = p.key, allow_empty = p.allow_empty,"
				" registered_at = pg_catalog.now()"
				" FROM backfill.definitions p"
				" WHERE t.target OPERATOR(pg_catalog.=) $1"
				" AND t.current_version OPERATOR(pg_catalog.=) $2"
				" AND p.target OPERATOR(pg_catalog.=) t.target"
				" AND p.version OPERATOR(pg_catalog.=) $3"
				" AND NOT (p.chunk OPERATOR(pg_catalog.<) '1 hour'::pg_catalog.interval"
				"  AND EXISTS (SELECT FROM backfill.watches w"
				"   WHERE w.target OPERATOR(pg_catalog.=) t.target))",
				3, argtypes, values, NULL, SPI_OK_UPDATE);
	if (SPI_processed == 0)
		return;
	/* a watched target's chunk may have changed (watchlog.c's cache) */
	InvalidateWatchCache();
	run->restored_version = to_version;
	run->restored_by_undo = undo_of_undo;
}

/*
 * ReportRevertDefinition
 *		See backfill.h: the NOTICE of what a revert run that is done did to
 *		its target's definition (RevertRestoreDefinition), after the one
 *		that says the run is done.
 */
void
ReportRevertDefinition(RunInfo *run)
{
	if (run->restored_version != 0 && run->restored_by_undo)
		ereport(NOTICE,
				(errmsg("definition version %d of %s is current again",
						run->restored_version, run->relname),
				 errdetail("Run %lld reverted run %lld, itself a revert: the rows built under version %d are back, and so is that version.",
						   (long long) run->run_id, (long long) run->reverts,
						   run->restored_version)));
	else if (run->restored_version != 0)
		ereport(NOTICE,
				(errmsg("definition version %d of %s is current again",
						run->restored_version, run->relname),
				 errdetail("Run %lld reverted run %lld: the rows and the definition in force before version %d are back, and the restored chunks count as built under it.",
						   (long long) run->run_id, (long long) run->reverts,
						   run->definition_version)));
	else if (run->kept_version != 0)
		ereport(NOTICE,
				(errmsg("definition version %d of %s stays current",
						run->kept_version, run->relname),
				 errdetail("It was registered after version %d, under which run %lld was built; register the definition you want current again, if it is not this one.",
						   run->definition_version, (long long) run->reverts)));
	run->restored_version = 0;
	run->kept_version = 0;
}
