/*-------------------------------------------------------------------------
 *
 * archive.c
 *	  The archive of what backfills replaced (keep_replaced, doc/undo.md):
 *	  which archive table holds a chunk's kept rows, the rows a chunk
 *	  deletes moved into it in the chunk's transaction, the rows of a kept
 *	  chunk put back into the target (a revert chunk), the kept rows of a
 *	  run read for diff, purging.
 *
 * Rights.  The target is read and written as the current user (the
 * definition's author, inside a chunk's author gate).  The archive tables
 * belong to the target's owner and are touched only from C, as heap pages
 * (archivestore.c): no SQL statement ever names them, so none runs with
 * the extension owner's rights on them, and no function of a type, cast,
 * default, trigger or policy runs when rows go in or out.  The catalog
 * rows that say what each table holds (backfill.archives,
 * archived_chunks, archived_leaves) are written through CatalogExec.  The
 * rows cross between the target and the archive in a tuplestore: the
 * author's DELETE ... RETURNING fills it and ArchiveStoreAppend empties it
 * into the archive; ArchiveStoreScan fills it from the archive and the
 * author's INSERT into the target reads it as an ephemeral named relation
 * ("backfill_rows").  The store of a keeping chunk holds up to the larger
 * of work_mem and maintenance_work_mem in memory before it spills to disk
 * (it lives for one chunk).
 *
 * Generations.  An archive table's columns are those of the target when
 * it was made (each of the base type of its domain: a domain's CHECK is
 * never needed to store a value), plus _backfill_run and _backfill_chunk.
 * A keeping chunk writes into the target's newest archive while that
 * table still has exactly the target's columns and belongs to the
 * target's owner; otherwise (a column added, dropped or of another type,
 * the table given to another owner) it makes a new one,
 * t_<target>_<run>_<chunk>.  Each kept chunk records the table that
 * holds its rows, so rows are never converted from one type to another to
 * be kept, and two chunks that run at once (parallel workers of one call)
 * never make the same table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "backfill.h"

/* the name the rows crossing between the target and the archive go by */
#define ARCHIVE_ROWS "backfill_rows"

/*
 * ReadColumns
 *		The columns of relation rel that are not dropped, and not the
 *		archive's own _backfill_run and _backfill_chunk.
 */
RelColumns *
ReadColumns(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	RelColumns *cols = palloc0(sizeof(RelColumns));
	int			i;

	cols->names = palloc(sizeof(char *) * Max(desc->natts, 1));
	cols->attnums = palloc(sizeof(AttrNumber) * Max(desc->natts, 1));
	cols->types = palloc(sizeof(Oid) * Max(desc->natts, 1));
	cols->bases = palloc(sizeof(Oid) * Max(desc->natts, 1));
	cols->typmods = palloc(sizeof(int32) * Max(desc->natts, 1));
	cols->collations = palloc(sizeof(Oid) * Max(desc->natts, 1));
	cols->generated = palloc(sizeof(bool) * Max(desc->natts, 1));
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		int32		typmod = att->atttypmod;

		if (att->attisdropped ||
			strcmp(NameStr(att->attname), "_backfill_run") == 0 ||
			strcmp(NameStr(att->attname), "_backfill_chunk") == 0)
			continue;
		cols->names[cols->n] = pstrdup(NameStr(att->attname));
		cols->attnums[cols->n] = att->attnum;
		cols->types[cols->n] = att->atttypid;
		cols->bases[cols->n] = getBaseTypeAndTypmod(att->atttypid, &typmod);
		cols->typmods[cols->n] = typmod;
		cols->collations[cols->n] = att->attcollation;
		cols->generated[cols->n] = (att->attgenerated != '\0');
		cols->n++;
	}
	return cols;
}

/*
 * ReadColumnsOf
 *		ReadColumns of relation relid.
 */
RelColumns *
ReadColumnsOf(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	RelColumns *cols = ReadColumns(rel);

	table_close(rel, AccessShareLock);
	return cols;
}

/*
 * ColumnIndex
 *		The position of column "name" in cols, -1 when absent.
 */
int
ColumnIndex(const RelColumns *cols, const char *name)
{
	int			i;

	for (i = 0; i < cols->n; i++)
		if (strcmp(cols->names[i], name) == 0)
			return i;
	return -1;
}

/*
 * RowsDesc
 *		The tuple descriptor of rows of the columns "which" (indexes into
 *		cols, n of them), each of its base type, for a tuplestore read as
 *		a relation.
 */
TupleDesc
RowsDesc(const RelColumns *cols, const int *which, int n)
{
	TupleDesc	desc = CreateTemplateTupleDesc(Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
	{
		int			k = which[i];

		TupleDescInitEntry(desc, (AttrNumber) (i + 1), cols->names[k],
						   cols->bases[k], cols->typmods[k], 0);
		TupleDescInitEntryCollation(desc, (AttrNumber) (i + 1),
									cols->collations[k]);
	}
	if (n == 0)
		TupleDescInitEntry(desc, 1, "_backfill_none", BOOLOID, -1, 0);
	BackfillTupleDescFinalize(desc);
	return desc;
}

/*
 * ColumnList
 *		"a", "b", ... of the columns "which", each prefixed by "prefix"
 *		(e.g. "o.") when not empty.
 */
char *
ColumnList(const RelColumns *cols, const int *which, int n,
		   const char *prefix)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	for (i = 0; i < n; i++)
		appendStringInfo(&buf, "%s%s%s", i > 0 ? ", " : "", prefix,
						 quote_identifier(cols->names[which[i]]));
	return buf.data;
}

/*
 * RelOwner
 *		The owner of relation relid.
 */
Oid
RelOwner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "backfill: cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * ArchiveDesc
 *		The columns of a new archive table for the columns "cols": each of
 *		its base type, then _backfill_run and _backfill_chunk.
 */
static TupleDesc
ArchiveDesc(const RelColumns *cols)
{
	TupleDesc	desc = CreateTemplateTupleDesc(cols->n + 2);
	int			i;

	for (i = 0; i < cols->n; i++)
	{
		TupleDescInitEntry(desc, (AttrNumber) (i + 1), cols->names[i],
						   cols->bases[i], cols->typmods[i], 0);
		TupleDescInitEntryCollation(desc, (AttrNumber) (i + 1),
									cols->collations[i]);
	}
	TupleDescInitEntry(desc, (AttrNumber) (cols->n + 1), "_backfill_run",
					   INT8OID, -1, 0);
	TupleDescInitEntry(desc, (AttrNumber) (cols->n + 2), "_backfill_chunk",
					   INT4OID, -1, 0);
	BackfillTupleDescFinalize(desc);
	return desc;
}

/*
 * ArchiveFits
 *		Whether archive table "rel" takes the rows of "cols" as they are
 *		(ArchiveStoreAppend): plain (ArchiveStoreIsPlain) and owned by
 *		"owner", with exactly the columns of cols, each of the same base
 *		type and typmod, and its run and chunk.  Fills "map" (one entry
 *		per attribute of rel): the position in cols of each column, or
 *		ARCHIVE_MAP_RUN, ARCHIVE_MAP_CHUNK, ARCHIVE_MAP_NULL (dropped).
 */
bool
ArchiveFits(Relation rel, Oid owner, const RelColumns *cols, int *map)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int			matched = 0;
	bool		run = false;
	bool		chunk = false;
	int			j;

	if (!ArchiveStoreIsPlain(rel, owner))
		return false;
	for (j = 0; j < desc->natts; j++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, j);
		const char *name = NameStr(att->attname);
		int			k;

		map[j] = ARCHIVE_MAP_NULL;
		if (att->attisdropped)
			return false;		/* a column dropped by CASCADE: LostColumns */
		if (strcmp(name, "_backfill_run") == 0 && att->atttypid == INT8OID)
		{
			map[j] = ARCHIVE_MAP_RUN;
			run = true;
			continue;
		}
		if (strcmp(name, "_backfill_chunk") == 0 && att->atttypid == INT4OID)
		{
			map[j] = ARCHIVE_MAP_CHUNK;
			chunk = true;
			continue;
		}
		k = ColumnIndex(cols, name);
		if (k < 0 || att->atttypid != cols->bases[k] ||
			att->atttypmod != cols->typmods[k])
			return false;
		map[j] = k;
		matched++;
	}
	return run && chunk && matched == cols->n;
}

/*
 * NewestArchive
 *		The target's newest archive table (backfill.archives), InvalidOid
 *		when it has none or that table no longer exists.
 */
static Oid
NewestArchive(Oid target)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	Oid			archive = InvalidOid;
	bool		isnull;

	values[0] = ObjectIdGetDatum(target);
	CatalogExec("SELECT archive::pg_catalog.oid FROM backfill.archives"
				" WHERE target OPERATOR(pg_catalog.=) $1"
				" ORDER BY created_at DESC, archive::pg_catalog.oid DESC LIMIT 1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
		archive = SpiGetOid(0, 1, &isnull);
	SPI_freetuptable(SPI_tuptable);
	if (OidIsValid(archive) && get_rel_name(archive) == NULL)
		archive = InvalidOid;
	return archive;
}

/*
 * ArchiveFor
 *		The archive table that takes the rows chunk "keep" of target
 *		deletes, of the columns "cols": the target's newest while it fits
 *		(ArchiveFits), else a new one, t_<target>_<run>_<chunk>, made by
 *		ArchiveStoreCreate for the target's owner and recorded in
 *		backfill.archives.  Caller is connected to SPI and holds the
 *		chunk's lock on the target.
 */
Oid
ArchiveFor(Oid target, const RelColumns *cols, const ArchiveKeep *keep)
{
	Oid			owner = RelOwner(target);
	Oid			archive;
	Oid			nsp;
	char	   *name;
	int			n = 1;
	CatalogArgs args;

	if (get_attnum(target, "_backfill_run") != InvalidAttrNumber ||
		get_attnum(target, "_backfill_chunk") != InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_COLUMN),
				 errmsg("table %s has a column named \"_backfill_run\" or \"_backfill_chunk\"",
						QualifiedRelName(target)),
				 errdetail("The archive of kept rows records each row's run and chunk in columns of these names."),
				 errhint("Rename the column, or plan the run with keep_replaced => false.")));

	archive = NewestArchive(target);
	if (OidIsValid(archive))
	{
		Relation	rel = ArchiveStoreOpen(archive, AccessShareLock);
		int		   *map = palloc(sizeof(int) * Max(RelationGetDescr(rel)->natts, 1));
		bool		fits = ArchiveFits(rel, owner, cols, map);

		table_close(rel, AccessShareLock);
		if (fits)
			return archive;
	}

	nsp = get_namespace_oid(ARCHIVE_SCHEMA, false);
	name = psprintf("t_%u_%lld_%d", target, (long long) keep->run_id,
					keep->chunk_no);
	while (OidIsValid(get_relname_relid(name, nsp)))
		name = psprintf("t_%u_%lld_%d_%d", target, (long long) keep->run_id,
						keep->chunk_no, n++);
	archive = ArchiveStoreCreate(name, ArchiveDesc(cols), owner,
								 RELPERSISTENCE_PERMANENT, true);

	CatalogArgsInit(&args);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(archive), false);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(target), false);
	CatalogExecArgs("INSERT INTO backfill.archives (archive, target)"
					" VALUES ($1, $2)",
					&args, SPI_OK_INSERT);
	return archive;
}

/*
 * RecordKept
 *		The catalog's record of a kept chunk: which archive table holds its
 *		rows (InvalidOid: none, they are in kept leaves), how many, and
 *		until when (keep_for; NULL: until purged).
 */
void
RecordKept(Oid target, const ArchiveKeep *keep, Oid archive, int64 rows)
{
	CatalogArgs args;

	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(keep->run_id), false);
	CatalogArg(&args, INT4OID, Int32GetDatum(keep->chunk_no), false);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(target), false);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(archive),
			   !OidIsValid(archive));
	CatalogArg(&args, INT8OID, Int64GetDatum(rows), false);
	CatalogArg(&args, INTERVALOID, PointerGetDatum(keep->keep_for),
			   keep->keep_for == NULL);
	CatalogExecArgs("INSERT INTO backfill.archived_chunks"
					" (run_id, chunk_no, target, archive, rows_kept, keep_until)"
					" VALUES ($1, $2, $3, $4, $5,"
					" pg_catalog.now() OPERATOR(pg_catalog.+) $6)",
					&args, SPI_OK_INSERT);
}

/*
 * ArchiveDeleteRange
 *		See backfill.h.  The DELETE runs as the current user (the author,
 *		in a chunk) with RETURNING into a tuplestore; ArchiveStoreAppend
 *		writes it into the archive table ArchiveFor chooses.  Both in the
 *		caller's transaction: the chunk commits or rolls back both.
 */
int64
ArchiveDeleteRange(Oid target, const char *time_column,
				   TimestampTz lo, TimestampTz hi, const ArchiveKeep *keep)
{
	RelColumns *cols;
	int		   *all;
	Tuplestorestate *store;
	DestReceiver *dest;
	Oid			argtypes[2];
	Datum		values[2];
	Oid			archive;
	int64		rows;
	int			i;

	SpiConnect();
	cols = ReadColumnsOf(target);
	all = palloc(sizeof(int) * Max(cols->n, 1));
	for (i = 0; i < cols->n; i++)
		all[i] = i;

	/* as the current user: the rows leave the target */
	RangeParams(target, time_column, lo, hi, argtypes, values);
	dest = SpiRowStoreSized(&store, Max(work_mem, maintenance_work_mem));
	SpiExecDest(psprintf("%s RETURNING %s",
						 ComposeRangeDelete(target, time_column),
						 ColumnList(cols, all, cols->n, "")),
				2, argtypes, values, NULL, dest, SPI_OK_DELETE_RETURNING);
	rows = (int64) SPI_processed;
	dest->rDestroy(dest);

	/* from C: they enter the archive */
	archive = ArchiveFor(target, cols, keep);
	if (rows > 0)
	{
		Relation	rel = ArchiveStoreOpen(archive, RowExclusiveLock);
		int		   *map = palloc(sizeof(int) * Max(RelationGetDescr(rel)->natts, 1));
		int64		written;

		if (!ArchiveFits(rel, RelOwner(target), cols, map))
			elog(ERROR, "backfill: archive table %s does not fit %s",
				 QualifiedRelName(archive), QualifiedRelName(target));
		written = ArchiveStoreAppend(rel, map, RowsDesc(cols, all, cols->n),
									 store, keep->run_id, keep->chunk_no);
		table_close(rel, NoLock);
		if (written != rows)
			elog(ERROR, "backfill: archived " INT64_FORMAT " of " INT64_FORMAT " rows",
				 written, rows);
	}
	tuplestore_end(store);
	RecordKept(target, keep, archive, rows);
	SpiFinish();
	return rows;
}

/*
 * LeafRules
 *		What an INSERT into partition "leaf" checks, as an md5: its columns
 *		(name, type, NOT NULL), its constraints (CHECK, foreign keys, its
 *		parents' too: they are the leaf's own rows of pg_constraint), the
 *		constraints of the domains its columns are of (down to their base
 *		types) and its triggers.  Files kept under the same rules hold rows
 *		that an INSERT would accept again; under others (a constraint added
 *		since, a column changed), a revert puts them back through an
 *		INSERT that checks them.  Read as the caller, from pg_catalog
 *		only, search_path pinned; constraints are deparsed, never run.
 */
static char *
LeafRules(Oid leaf)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1];
	char	   *rules;

	values[0] = ObjectIdGetDatum(leaf);
	SpiExecPinned("WITH RECURSIVE doms(t) AS ("
				  "  SELECT a.atttypid FROM pg_catalog.pg_attribute a"
				  "   WHERE a.attrelid OPERATOR(pg_catalog.=) $1"
				  "   AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped"
				  "  UNION SELECT y.typbasetype FROM doms"
				  "   JOIN pg_catalog.pg_type y ON y.oid OPERATOR(pg_catalog.=) doms.t"
				  "   WHERE y.typtype OPERATOR(pg_catalog.=) 'd')"
				  " SELECT pg_catalog.md5(pg_catalog.concat_ws('|',"
				  "  (SELECT pg_catalog.string_agg(pg_catalog.concat_ws(':', a.attname,"
				  "     a.atttypid, a.atttypmod, a.attnotnull), ',' ORDER BY a.attnum)"
				  "    FROM pg_catalog.pg_attribute a"
				  "   WHERE a.attrelid OPERATOR(pg_catalog.=) $1"
				  "   AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped),"
				  "  (SELECT pg_catalog.string_agg(pg_catalog.concat_ws(':', c.contype,"
				  "     c.conname, c.convalidated, pg_catalog.pg_get_constraintdef(c.oid)),"
				  "     ',' ORDER BY c.conname, c.contype)"
				  "    FROM pg_catalog.pg_constraint c"
				  "   WHERE c.conrelid OPERATOR(pg_catalog.=) $1),"
				  "  (SELECT pg_catalog.string_agg(pg_catalog.concat_ws(':', c.contypid,"
				  "     c.conname, pg_catalog.pg_get_constraintdef(c.oid)),"
				  "     ',' ORDER BY c.contypid, c.conname)"
				  "    FROM pg_catalog.pg_constraint c"
				  "   WHERE c.contypid OPERATOR(pg_catalog.=) ANY (SELECT t FROM doms)),"
				  "  (SELECT pg_catalog.string_agg(pg_catalog.concat_ws(':', t.tgname,"
				  "     t.tgfoid, t.tgtype, t.tgenabled), ',' ORDER BY t.tgname)"
				  "    FROM pg_catalog.pg_trigger t"
				  "   WHERE t.tgrelid OPERATOR(pg_catalog.=) $1 AND NOT t.tgisinternal)))",
				  1, argtypes, values, NULL, true, 1, SPI_OK_SELECT);
	rules = SpiGetText(0, 1);
	SPI_freetuptable(SPI_tuptable);
	return rules;
}

/*
 * RecordLeaf
 *		The catalog's record that chunk keep of target kept partition
 *		"leaf"'s files in table "kept", with the leaf's rules now
 *		(LeafRules).
 */
void
RecordLeaf(Oid target, const ArchiveKeep *keep, Oid leaf, Oid kept)
{
	CatalogArgs args;

	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(keep->run_id), false);
	CatalogArg(&args, INT4OID, Int32GetDatum(keep->chunk_no), false);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(target), false);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(leaf), false);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(kept), false);
	CatalogArgText(&args, LeafRules(leaf));
	CatalogExecArgs("INSERT INTO backfill.archived_leaves"
					" (run_id, chunk_no, target, leaf, kept, rules)"
					" VALUES ($1, $2, $3, $4, $5, $6)",
					&args, SPI_OK_INSERT);
}

/*
 * ArchiveKeepLeaves
 *		See backfill.h.  The chunk's record names no archive table: its rows
 *		are in the kept tables (backfill.archived_leaves).  Caller is
 *		connected to SPI and holds the chunk's locks.
 */
void
ArchiveKeepLeaves(Oid target, List *leaves, const ArchiveKeep *keep,
				  int64 rows)
{
	ListCell   *lc;

	RecordKept(target, keep, InvalidOid, rows);
	foreach(lc, leaves)
	{
		Oid			leaf = lfirst_oid(lc);
		Oid			kept;

		CHECK_FOR_INTERRUPTS();
		kept = KeptLeafCreate(leaf, keep->run_id, keep->chunk_no);
		KeptLeafExchange(leaf, kept);
		RecordLeaf(target, keep, leaf, kept);
	}
}

static void KeptLeavesRules(int64 run_id, int32 chunk_no, List **leaves,
							List **kepts, List **chunks, List **rules);

/*
 * KeptLeaves
 *		The leaves chunk chunk_no of run_id kept (chunk_no 0: of every
 *		chunk), with their kept tables and chunk numbers, in three lists.
 */
void
KeptLeaves(int64 run_id, int32 chunk_no, List **leaves, List **kepts,
		   List **chunks)
{
	KeptLeavesRules(run_id, chunk_no, leaves, kepts, chunks, NULL);
}

/*
 * KeptLeavesRules
 *		KeptLeaves, and in *rules (when not NULL) each leaf's rules when its
 *		files were kept (LeafRules).
 */
static void
KeptLeavesRules(int64 run_id, int32 chunk_no, List **leaves, List **kepts,
				List **chunks, List **rules)
{
	CatalogArgs args;
	int			i;

	*leaves = *kepts = *chunks = NIL;
	if (rules != NULL)
		*rules = NIL;
	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(run_id), false);
	CatalogArg(&args, INT4OID, Int32GetDatum(chunk_no), chunk_no == 0);
	CatalogExecArgs("SELECT leaf::pg_catalog.oid, kept::pg_catalog.oid, chunk_no, rules"
					" FROM backfill.archived_leaves"
					" WHERE run_id OPERATOR(pg_catalog.=) $1"
					" AND ($2 IS NULL OR chunk_no OPERATOR(pg_catalog.=) $2)"
					" ORDER BY chunk_no, leaf::pg_catalog.oid",
					&args, SPI_OK_SELECT);
	for (i = 0; i < (int) SPI_processed; i++)
	{
		bool		isnull;

		*leaves = lappend_oid(*leaves, SpiGetOid(i, 1, &isnull));
		*kepts = lappend_oid(*kepts, SpiGetOid(i, 2, &isnull));
		*chunks = lappend_int(*chunks, SpiGetInt32(i, 3, &isnull));
		if (rules != NULL)
			*rules = lappend(*rules, SpiGetText(i, 4));
	}
	SPI_freetuptable(SPI_tuptable);
}

/*
 * ArchiveHasKeptLeaves
 *		See backfill.h.
 */
bool
ArchiveHasKeptLeaves(int64 run_id, int32 chunk_no)
{
	List	   *leaves;
	List	   *kepts;
	List	   *chunks;

	KeptLeaves(run_id, chunk_no, &leaves, &kepts, &chunks);
	return leaves != NIL;
}

/*
 * CheckKept
 *		Chunk "chunk_no" of run_id must have kept its rows, and they must
 *		not be purged (55000 otherwise).  Returns how many rows it kept,
 *		and in *archive the table that holds them.
 */
int64
CheckKept(int64 run_id, int32 chunk_no, Oid *archive)
{
	Oid			argtypes[2] = {INT8OID, INT4OID};
	Datum		values[2];
	bool		isnull;
	bool		purged;
	int64		rows;
	char	   *purged_at = NULL;

	values[0] = Int64GetDatum(run_id);
	values[1] = Int32GetDatum(chunk_no);
	CatalogExec("SELECT rows_kept, purged_at IS NOT NULL, purged_at::pg_catalog.text,"
				" archive::pg_catalog.oid"
				" FROM backfill.archived_chunks"
				" WHERE run_id OPERATOR(pg_catalog.=) $1"
				" AND chunk_no OPERATOR(pg_catalog.=) $2",
				2, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("chunk %d of run %lld did not keep the rows it replaced",
						chunk_no, (long long) run_id),
				 errhint("Only runs planned with keep_replaced => true (or of a target registered with it) can be reverted or diffed.")));
	rows = SpiGetInt64(0, 1, &isnull);
	purged = SpiGetBool(0, 2, &isnull);
	if (purged)
		purged_at = SpiGetText(0, 3);
	*archive = SpiGetOid(0, 4, &isnull);
	if (isnull)
		*archive = InvalidOid;
	SPI_freetuptable(SPI_tuptable);
	if (purged)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the kept rows of chunk %d of run %lld were purged",
						chunk_no, (long long) run_id),
				 errdetail("They were removed at %s (backfill.purge_archive or the definition's keep_for).",
						   purged_at)));
	return rows;
}

/*
 * ArchiveLeavesUnchanged
 *		See backfill.h: every leaf chunk chunk_no of run_id kept is still a
 *		partition of target, under the rules it had then (LeafRules), and
 *		its kept table exists: its files can be exchanged back as they are.
 */
bool
ArchiveLeavesUnchanged(Oid target, int64 run_id, int32 chunk_no)
{
	List	   *leaves;
	List	   *kepts;
	List	   *chunks;
	List	   *rules;
	int			i;

	KeptLeavesRules(run_id, chunk_no, &leaves, &kepts, &chunks, &rules);
	for (i = 0; i < list_length(leaves); i++)
	{
		Oid			leaf = list_nth_oid(leaves, i);

		CHECK_FOR_INTERRUPTS();
		if (get_rel_name(leaf) == NULL ||
			get_rel_name(list_nth_oid(kepts, i)) == NULL ||
			!list_member_oid(get_partition_ancestors(leaf), target) ||
			strcmp(LeafRules(leaf), (char *) list_nth(rules, i)) != 0)
			return false;
	}
	return true;
}

/*
 * CheckNoLostColumn
 *		55000 when archive table rel (of the rows run_id kept) has a
 *		dropped column: the extension never drops one, so a DROP TYPE ...
 *		CASCADE (or DROP SCHEMA ... CASCADE) of the column's type took it,
 *		and the values it held are gone; a revert would put back NULLs and
 *		a diff would not show the column.
 */
void
CheckNoLostColumn(Relation rel, int64 run_id)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		if (TupleDescAttr(desc, i)->attisdropped)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the archive of run %lld lost a column",
							(long long) run_id),
					 errdetail("A column of archive table %s was dropped by a DROP ... CASCADE of the column's type (or of its schema): the kept values of that column are gone.",
							   QualifiedRelName(RelationGetRelid(rel))),
					 errhint("The run can no longer be reverted or diffed exactly; backfill.purge_archive removes what is left of its kept rows.")));
	}
}

/*
 * CheckKeptOwner
 *		42501 unless archive table rel (of rows run_id kept from table
 *		"from": the target, or a kept leaf's partition) belongs to the
 *		owner "from" has now, or the current user has the privileges of
 *		its owner.  Kept rows belong to whoever owned the table when they
 *		were kept: when the table changed hands since, or was dropped and
 *		its OID taken by another table (after a dump and restore, say),
 *		they are not the new owner's to read or put back.
 */
void
CheckKeptOwner(Relation rel, Oid from, int64 run_id)
{
	Oid			owner = rel->rd_rel->relowner;
	char	   *name;

	if ((get_rel_name(from) != NULL && RelOwner(from) == owner) ||
		has_privs_of_role(GetUserId(), owner))
		return;
	name = GetUserNameFromId(owner, true);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied for the kept rows of run %lld",
					(long long) run_id),
			 errdetail("They were kept from a table of role \"%s\", which no longer owns it.",
					   name ? name : "?"),
			 errhint("A role with the privileges of role \"%s\" may read them or put them back.",
					 name ? name : "?")));
}

/*
 * OpenKeptTable
 *		Archive table "archive", which holds the rows of chunk chunk_no of
 *		run_id, opened (ArchiveStoreOpen); 42P01 when it was dropped (its
 *		owner's DROP OWNED, say): the kept rows are gone; 42501 when it is
 *		not the target's owner's (CheckKeptOwner); 55000 when it lost a
 *		column (CheckNoLostColumn).
 */
static Relation
OpenKeptTable(Oid archive, Oid target, int64 run_id, int32 chunk_no,
			  LOCKMODE mode)
{
	Relation	rel;

	if (!OidIsValid(archive) || get_rel_name(archive) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the archive table of chunk %d of run %lld no longer exists",
						chunk_no, (long long) run_id),
				 errdetail("The table that held its kept rows was dropped (by its owner's DROP OWNED, or by hand)."),
				 errhint("The kept rows are gone; the run can no longer be reverted or diffed.")));
	rel = ArchiveStoreOpen(archive, mode);
	CheckKeptOwner(rel, target, run_id);
	CheckNoLostColumn(rel, run_id);
	return rel;
}

/*
 * FillRow
 *		ArchiveRowFn that puts one kept row into the store (FillState).
 *		Values rendered as text go through their type's output function:
 *		for every type that is C code (a base type's, made by a
 *		superuser), or PostgreSQL's own (enum, composite, range, array).
 */
void
FillRow(TupleTableSlot *slot, void *arg)
{
	FillState  *state = (FillState *) arg;
	MemoryContext old = MemoryContextSwitchTo(state->row_cxt);
	int			i;

	for (i = 0; i < state->ncols; i++)
	{
		StoreColumn *c = &state->cols[i];

		if (c->attnum <= 0)
		{
			state->values[i] = (Datum) 0;
			state->nulls[i] = true;
			continue;
		}
		state->values[i] = slot_getattr(slot, c->attnum, &state->nulls[i]);
		if (!state->nulls[i] && OidIsValid(c->out))
			state->values[i] =
				CStringGetTextDatum(OidOutputFunctionCall(c->out,
														  state->values[i]));
	}
	if (state->with_chunk)
	{
		if (state->chunkatt > 0)
			state->values[state->ncols] = slot_getattr(slot, state->chunkatt,
													   &state->nulls[state->ncols]);
		else
		{
			state->values[state->ncols] = Int32GetDatum(state->chunk_no);
			state->nulls[state->ncols] = false;
		}
	}
	tuplestore_putvalues(state->store, state->desc, state->values,
						 state->nulls);
	MemoryContextSwitchTo(old);
	MemoryContextReset(state->row_cxt);
}

/*
 * FillStart
 *		A FillState for rows of "desc" into "store", ncols of them read from
 *		the archive (cols filled by the caller), with or without the chunk
 *		number last.
 */
FillState *
FillStart(Tuplestorestate *store, TupleDesc desc, int ncols, bool with_chunk)
{
	FillState  *state = palloc0(sizeof(FillState));

	state->store = store;
	state->desc = desc;
	state->ncols = ncols;
	state->cols = palloc0(sizeof(StoreColumn) * Max(ncols, 1));
	state->with_chunk = with_chunk;
	state->values = palloc(sizeof(Datum) * (ncols + 1));
	state->nulls = palloc(sizeof(bool) * (ncols + 1));
	state->row_cxt = AllocSetContextCreate(CurrentMemoryContext,
										   "backfill kept row",
										   ALLOCSET_SMALL_SIZES);
	return state;
}

/*
 * ArchiveRestoreRows
 *		See backfill.h.  The kept rows are read from their archive table
 *		into a tuplestore (from C); the current user (the author, in a
 *		chunk) inserts them into the target, generated columns left to the
 *		table, identity values kept (OVERRIDING SYSTEM VALUE), a column
 *		whose type changed since converted by the INSERT's assignment cast,
 *		as the author.  A count that differs from the one recorded when
 *		they were kept is an error: nothing is half restored.
 */
int64
ArchiveRestoreRows(Oid target, int64 run_id, int32 chunk_no)
{
	RelColumns *cols;
	Oid			archive;
	int64		kept;
	int64		rows = 0;
	Tuplestorestate *store;
	TupleDesc	desc;
	List	   *tables;
	List	   *froms;
	List	   *leaves;
	List	   *kepts;
	List	   *chunks;
	int		   *which;
	int			n = 0;
	int			i;
	StringInfoData list;

	SpiConnect();
	kept = CheckKept(run_id, chunk_no, &archive);
	if (kept == 0)
	{
		SpiFinish();
		return 0;
	}

	/*
	 * The tables that hold the rows: the chunk's archive table, or the
	 * tables of the leaves it kept (their files kept, put back row by row
	 * because a leaf's rules changed since: ArchiveLeavesUnchanged).
	 */
	if (OidIsValid(archive))
	{
		tables = list_make1_oid(archive);
		froms = list_make1_oid(target);
	}
	else
	{
		KeptLeaves(run_id, chunk_no, &leaves, &kepts, &chunks);
		tables = kepts;
		froms = leaves;
	}

	/* the target's columns that every one of them has: those go back */
	cols = ReadColumnsOf(target);
	which = palloc(sizeof(int) * Max(cols->n, 1));
	for (i = 0; i < cols->n; i++)
	{
		ListCell   *lc;
		bool		everywhere = !cols->generated[i];

		foreach(lc, tables)
		{
			if (get_rel_name(lfirst_oid(lc)) != NULL &&
				get_attnum(lfirst_oid(lc), cols->names[i]) == InvalidAttrNumber)
				everywhere = false;
		}
		if (everywhere)
			which[n++] = i;
	}

	/* from C: the kept rows leave the archive */
	store = tuplestore_begin_heap(false, false, work_mem);
	desc = NULL;
	for (i = 0; i < list_length(tables); i++)
	{
		Relation	rel = OpenKeptTable(list_nth_oid(tables, i),
										list_nth_oid(froms, i), run_id,
										chunk_no, AccessShareLock);
		RelColumns *have = ReadColumns(rel);
		int		   *from = palloc(sizeof(int) * Max(n, 1));
		FillState  *state;
		int			j;

		CHECK_FOR_INTERRUPTS();
		for (j = 0; j < n; j++)
			from[j] = ColumnIndex(have, cols->names[which[j]]);
		if (desc == NULL)
			desc = RowsDesc(have, from, n);
		state = FillStart(store, desc, n, false);
		for (j = 0; j < n; j++)
			state->cols[j].attnum = have->attnums[from[j]];
		rows += OidIsValid(archive) ?
			ArchiveStoreScan(rel, run_id, chunk_no, FillRow, state) :
			ArchiveStoreScanAll(rel, FillRow, state);
		MemoryContextDelete(state->row_cxt);
		table_close(rel, AccessShareLock);
	}
	if (rows != kept)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the archive of chunk %d of run %lld holds " INT64_FORMAT " rows, not the " INT64_FORMAT " it kept",
						chunk_no, (long long) run_id, rows, kept),
				 errdetail("Its archive tables were changed outside the extension.")));

	/* as the current user: they enter the target again */
	if (rows > 0)
	{
		initStringInfo(&list);
		for (i = 0; i < n; i++)
			appendStringInfo(&list, "%s%s", i > 0 ? ", " : "",
							 quote_identifier(cols->names[which[i]]));
		SpiRegisterRows(ARCHIVE_ROWS, desc, store);
		SpiExec(psprintf("INSERT INTO %s (%s) OVERRIDING SYSTEM VALUE"
						 " SELECT %s FROM " ARCHIVE_ROWS,
						 QualifiedRelName(target), list.data, list.data),
				0, NULL, NULL, NULL, false, 0, SPI_OK_INSERT);
		SpiUnregisterRows(ARCHIVE_ROWS);
	}
	tuplestore_end(store);
	SpiFinish();
	return rows;
}

/*
 * ArchiveRestoreLeaves
 *		See backfill.h.  Each leaf the reverted chunk kept exchanges its
 *		files with its kept table again: the leaf holds its old rows (its
 *		old files), the kept table what the revert replaces, recorded as
 *		kept by the revert's chunk "keep" (rows_now rows).  A leaf that is
 *		gone, or no longer a partition of the target, is refused (55000).
 *		Returns how many rows the reverted chunk kept.
 */
int64
ArchiveRestoreLeaves(Oid target, int64 reverted, int32 chunk_no,
					 const ArchiveKeep *keep, int64 rows_now)
{
	List	   *leaves;
	List	   *kepts;
	List	   *chunks;
	int64		kept;
	Oid			archive;
	int			i;

	SpiConnect();
	kept = CheckKept(reverted, chunk_no, &archive);
	KeptLeaves(reverted, chunk_no, &leaves, &kepts, &chunks);
	RecordKept(target, keep, InvalidOid, rows_now);
	for (i = 0; i < list_length(leaves); i++)
	{
		Oid			leaf = list_nth_oid(leaves, i);
		Oid			k = list_nth_oid(kepts, i);

		CHECK_FOR_INTERRUPTS();
		if (get_rel_name(leaf) == NULL ||
			!list_member_oid(get_partition_ancestors(leaf), target))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("partition %u that chunk %d of run %lld kept is no longer a partition of %s",
							leaf, chunk_no, (long long) reverted,
							QualifiedRelName(target)),
					 errdetail("Its rows are kept in %s; a revert puts them back into the same partition.",
							   QualifiedRelName(k)),
					 errhint("Attach the partition again, then revert.")));
		if (get_rel_name(k) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("the kept files of partition %s for chunk %d of run %lld no longer exist",
							QualifiedRelName(leaf), chunk_no, (long long) reverted),
					 errdetail("The table that held them was dropped (by its owner's DROP OWNED, or by hand)."),
					 errhint("The kept rows are gone; the run can no longer be reverted or diffed.")));
		{
			Relation	krel = ArchiveStoreOpen(k, AccessShareLock);

			CheckKeptOwner(krel, leaf, reverted);
			table_close(krel, AccessShareLock);
		}
		KeptLeafExchange(leaf, k);
		RecordLeaf(target, keep, leaf, k);
	}
	SpiFinish();
	return kept;
}

/*
 * KeptSources
 *		The archive tables that hold the rows run_id kept (of chunk
 *		chunk_no; 0: every chunk), each once.
 */
static List *
KeptSources(int64 run_id, int32 chunk_no)
{
	CatalogArgs args;
	List	   *archives = NIL;
	int			i;

	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(run_id), false);
	CatalogArg(&args, INT4OID, Int32GetDatum(chunk_no), chunk_no == 0);
	CatalogExecArgs("SELECT DISTINCT archive::pg_catalog.oid"
					" FROM backfill.archived_chunks"
					" WHERE run_id OPERATOR(pg_catalog.=) $1"
					" AND ($2 IS NULL OR chunk_no OPERATOR(pg_catalog.=) $2)"
					" AND purged_at IS NULL AND archive IS NOT NULL"
					" ORDER BY 1",
					&args, SPI_OK_SELECT);
	for (i = 0; i < (int) SPI_processed; i++)
	{
		bool		isnull;

		archives = lappend_oid(archives, SpiGetOid(i, 1, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	return archives;
}

/*
 * ArchiveRegisterKept
 *		See backfill.h.  The columns are the target's (in its order) that
 *		at least one table holding the run's kept rows has.  A column is
 *		kept "typed" (of the target column's base type) when every such
 *		table has it of that base type, else "rendered": every value as the
 *		text its own type's output function gives (FillRow), so that no
 *		cast is ever needed to compare an old value with a new one.  A
 *		table without the column gives NULL.  Every read is from C
 *		(ArchiveStoreScan, ArchiveStoreScanAll); the caller checked the
 *		reader's rights first.
 */
Tuplestorestate *
ArchiveRegisterKept(Oid target, int64 run_id, int32 chunk_no,
					const char *name, KeptColumn **columns, int *ncolumns)
{
	RelColumns *cols = ReadColumnsOf(target);
	List	   *sources = KeptSources(run_id, chunk_no);
	List	   *leaves;
	List	   *kepts;
	List	   *chunks;
	List	   *tables;
	List	   *shapes = NIL;
	KeptColumn *kc;
	int			n = 0;
	int			i;
	ListCell   *lc;
	TupleDesc	desc;
	Tuplestorestate *store;

	KeptLeaves(run_id, chunk_no, &leaves, &kepts, &chunks);
	tables = list_concat_copy(sources, kepts);
	foreach(lc, tables)
	{
		Oid			t = lfirst_oid(lc);

		if (get_rel_name(t) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("an archive table of run %lld no longer exists",
							(long long) run_id),
					 errdetail("A table that held its kept rows was dropped (by its owner's DROP OWNED, or by hand)."),
					 errhint("The kept rows are gone; the run can no longer be reverted or diffed.")));
		shapes = lappend(shapes, ReadColumnsOf(t));
	}

	/* the columns of the diff, and how each is kept */
	kc = palloc0(sizeof(KeptColumn) * Max(cols->n, 1));
	for (i = 0; i < cols->n; i++)
	{
		bool		present = false;
		bool		typed = true;

		foreach(lc, shapes)
		{
			RelColumns *have = (RelColumns *) lfirst(lc);
			int			k = ColumnIndex(have, cols->names[i]);

			if (k < 0)
				continue;
			present = true;
			if (have->bases[k] != cols->bases[i])
				typed = false;
		}
		if (!present)
			continue;
		kc[n].name = cols->names[i];
		kc[n].target_type = cols->types[i];
		kc[n].type = typed ? cols->bases[i] : TEXTOID;
		kc[n].typmod = typed ? cols->typmods[i] : -1;
		kc[n].collation = typed ? cols->collations[i] : DEFAULT_COLLATION_OID;
		kc[n].rendered = !typed;
		n++;
	}
	desc = CreateTemplateTupleDesc(n + 1);
	for (i = 0; i < n; i++)
	{
		TupleDescInitEntry(desc, (AttrNumber) (i + 1), kc[i].name,
						   kc[i].type, kc[i].typmod, 0);
		TupleDescInitEntryCollation(desc, (AttrNumber) (i + 1),
									kc[i].collation);
	}
	TupleDescInitEntry(desc, (AttrNumber) (n + 1), "_backfill_chunk",
					   INT4OID, -1, 0);
	BackfillTupleDescFinalize(desc);

	/* the rows, table by table */
	store = tuplestore_begin_heap(false, false, work_mem);
	for (i = 0; i < list_length(tables); i++)
	{
		Oid			t = list_nth_oid(tables, i);
		RelColumns *have = (RelColumns *) list_nth(shapes, i);
		bool		is_leaf = (i >= list_length(sources));
		Relation	rel = ArchiveStoreOpen(t, AccessShareLock);
		FillState  *state = FillStart(store, desc, n, true);
		int			j;

		CHECK_FOR_INTERRUPTS();
		CheckKeptOwner(rel, is_leaf ?
					   list_nth_oid(leaves, i - list_length(sources)) : target,
					   run_id);
		CheckNoLostColumn(rel, run_id);
		for (j = 0; j < n; j++)
		{
			int			k = ColumnIndex(have, kc[j].name);

			state->cols[j].attnum = k >= 0 ? have->attnums[k] : 0;
			state->cols[j].out = InvalidOid;
			if (k >= 0 && kc[j].rendered)
			{
				bool		varlena;

				getTypeOutputInfo(have->bases[k], &state->cols[j].out,
								  &varlena);
			}
		}
		if (is_leaf)
		{
			state->chunk_no = list_nth_int(chunks, i - list_length(sources));
			(void) ArchiveStoreScanAll(rel, FillRow, state);
		}
		else
		{
			state->chunkatt = attnameAttNum(rel, "_backfill_chunk", false);
			(void) ArchiveStoreScan(rel, run_id, chunk_no, FillRow, state);
		}
		table_close(rel, AccessShareLock);
		MemoryContextDelete(state->row_cxt);
	}
	SpiRegisterRows(name, desc, store);
	*columns = kc;
	*ncolumns = n;
	return store;
}

/*
 * ChunkOfTime
 *		The index (into los/his, n ranges in time order, of the time
 *		column's base type "base": timestamptz, timestamp or date) of the
 *		range that holds value t; -1 when none.  A binary search comparing
 *		the values as integers, as PostgreSQL's own comparisons do: no
 *		operator is called.
 */
static int
ChunkOfTime(Oid base, Datum t, const Datum *los, const Datum *his, int n)
{
	int			lo = 0;
	int			hi = n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		int64		v = base == DATEOID ? DatumGetDateADT(t) : DatumGetInt64(t);
		int64		a = base == DATEOID ? DatumGetDateADT(los[mid]) : DatumGetInt64(los[mid]);
		int64		b = base == DATEOID ? DatumGetDateADT(his[mid]) : DatumGetInt64(his[mid]);

		if (v < a)
			hi = mid - 1;
		else if (v >= b)
			lo = mid + 1;
		else
			return mid;
	}
	return -1;
}

/*
 * ReadLeafNow
 *		Put into state's store the rows of table "rel" (the target, or one
 *		of its leaves) whose time column falls in one of the n ranges,
 *		each with its chunk number: through a btree index on the time
 *		column, one range scan per chunk, or else one sequential scan.
 *		The comparisons are btree's own (the column type's default
 *		operator class) or ChunkOfTime's.
 */
static void
ReadLeafNow(Relation rel, AttrNumber tatt, Oid base, FillState *state,
			int n, const int32 *nos, const Datum *los, const Datum *his)
{
	Snapshot	snapshot = GetActiveSnapshot();
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	Relation	index = IndexOnColumn(rel, BTREE_AM_OID, tatt,
									  get_opclass_family(GetDefaultOpClass(base, BTREE_AM_OID)));
	int			i;

	if (index != NULL)
	{
		RegProcedure ge = base == DATEOID ? F_DATE_GE :
			base == TIMESTAMPOID ? F_TIMESTAMP_GE : F_TIMESTAMPTZ_GE;
		RegProcedure lt = base == DATEOID ? F_DATE_LT :
			base == TIMESTAMPOID ? F_TIMESTAMP_LT : F_TIMESTAMPTZ_LT;

		for (i = 0; i < n; i++)
		{
			ScanKeyData keys[2];
			IndexScanDesc scan;

			CHECK_FOR_INTERRUPTS();
			ScanKeyInit(&keys[0], 1, BTGreaterEqualStrategyNumber, ge, los[i]);
			ScanKeyInit(&keys[1], 1, BTLessStrategyNumber, lt, his[i]);
			scan = BackfillIndexBeginScan(rel, index, snapshot, 2);
			index_rescan(scan, keys, 2, NULL, 0);
			state->chunk_no = nos[i];
			while (index_getnext_slot(scan, ForwardScanDirection, slot))
			{
				CHECK_FOR_INTERRUPTS();
				FillRow(slot, state);
			}
			index_endscan(scan);
		}
		index_close(index, AccessShareLock);
	}
	else
	{
		TableScanDesc scan = table_beginscan_strat(rel, snapshot, 0, NULL,
												   true, false);

		while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
		{
			bool		isnull;
			Datum		t;
			int			k;

			CHECK_FOR_INTERRUPTS();
			t = slot_getattr(slot, tatt, &isnull);
			if (isnull || (k = ChunkOfTime(base, t, los, his, n)) < 0)
				continue;
			state->chunk_no = nos[k];
			FillRow(slot, state);
		}
		table_endscan(scan);
	}
	ExecDropSingleTupleTableSlot(slot);
}

/*
 * ArchiveRegisterNow
 *		See backfill.h.  Read from C, as the kept rows are: the table (its
 *		leaves, for a partitioned target), never planned as a query, so no
 *		code of the table's owner (an index expression or predicate, a
 *		partition key, an expression statistic, all of which the planner
 *		may evaluate) runs for the caller.  The caller checked the
 *		reader's rights (CheckKeptRowsReadable, which also locked the
 *		target).
 */
Tuplestorestate *
ArchiveRegisterNow(Oid target, const char *time_column,
				   const KeptColumn *columns, int ncolumns, int n,
				   const int32 *nos, const Datum *los, const Datum *his,
				   const char *name)
{
	TupleDesc	desc = CreateTemplateTupleDesc(ncolumns + 1);
	Tuplestorestate *store = tuplestore_begin_heap(false, false, work_mem);
	Oid			base = getBaseType(TimeColumnType(target, time_column));
	List	   *rels;
	ListCell   *lc;
	bool		pushed = false;
	int			i;

	for (i = 0; i < ncolumns; i++)
	{
		TupleDescInitEntry(desc, (AttrNumber) (i + 1), columns[i].name,
						   columns[i].type, columns[i].typmod, 0);
		TupleDescInitEntryCollation(desc, (AttrNumber) (i + 1),
									columns[i].collation);
	}
	TupleDescInitEntry(desc, (AttrNumber) (ncolumns + 1), "_backfill_chunk",
					   INT4OID, -1, 0);
	BackfillTupleDescFinalize(desc);
	if (!ActiveSnapshotSet())
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		pushed = true;
	}

	rels = get_rel_relkind(target) == RELKIND_PARTITIONED_TABLE ?
		find_all_inheritors(target, AccessShareLock, NULL) :
		list_make1_oid(target);
	foreach(lc, rels)
	{
		Oid			relid = lfirst_oid(lc);
		Relation	rel;
		FillState  *state;
		AttrNumber	tatt;
		int			j;

		CHECK_FOR_INTERRUPTS();
		if (get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)
			continue;
		rel = table_open(relid, AccessShareLock);
		if (rel->rd_rel->relkind != RELKIND_RELATION)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("diff cannot read partition %s", QualifiedRelName(relid)),
					 errdetail("diff reads a target's partitions from its own code, and %s is %s.",
							   QualifiedRelName(relid),
							   rel->rd_rel->relkind == RELKIND_FOREIGN_TABLE ?
							   "a foreign table" : "not a plain table")));
		state = FillStart(store, desc, ncolumns, true);
		for (j = 0; j < ncolumns; j++)
		{
			AttrNumber	att = get_attnum(relid, columns[j].name);

			state->cols[j].attnum = att;
			state->cols[j].out = InvalidOid;
			if (att > 0 && columns[j].rendered)
			{
				bool		varlena;

				getTypeOutputInfo(getBaseType(get_atttype(relid, att)),
								  &state->cols[j].out, &varlena);
			}
		}
		tatt = get_attnum(relid, time_column);
		ReadLeafNow(rel, tatt, base, state, n, nos, los, his);
		MemoryContextDelete(state->row_cxt);
		table_close(rel, AccessShareLock);
	}
	if (pushed)
		PopActiveSnapshot();
	SpiRegisterRows(name, desc, store);
	return store;
}

/*
 * TryDropArchive
 *		Drop archive (or kept) table relid, in a subtransaction: when its
 *		lock is not free at once, or something depends on it (a view
 *		someone made over it), a WARNING says so and it stays, to be
 *		dropped by a later purge; a purge, and the pg_cron tick that runs
 *		one, never fails for it.  Returns whether it was dropped.
 */
static bool
TryDropArchive(Oid relid)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool dropped = false;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		if (!ConditionalLockRelationOid(relid, AccessExclusiveLock))
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("could not lock it")));
		table_close(ArchiveStoreOpen(relid, NoLock), NoLock);
		ArchiveStoreDrop(relid);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		dropped = true;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		ereport(WARNING,
				(errmsg("archive table %u was purged but not dropped: %s",
						relid, edata->message),
				 errhint("A later purge drops it once nothing else holds or depends on it.")));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return dropped;
}

/*
 * PurgeLeaves
 *		Forget the kept leaves of the purged chunks of run_id, and drop
 *		each kept table no chunk records any more (a revert records the
 *		table of the chunk it reverts under its own run too: the table
 *		then stays until that record is purged as well).
 */
static void
PurgeLeaves(int64 run_id)
{
	CatalogArgs args;
	List	   *gone = NIL;
	ListCell   *lc;
	int			i;

	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(run_id), false);
	CatalogExecArgs("DELETE FROM backfill.archived_leaves l"
					" USING backfill.archived_chunks k"
					" WHERE l.run_id OPERATOR(pg_catalog.=) $1"
					" AND k.run_id OPERATOR(pg_catalog.=) l.run_id"
					" AND k.chunk_no OPERATOR(pg_catalog.=) l.chunk_no"
					" AND k.purged_at IS NOT NULL"
					" RETURNING l.kept::pg_catalog.oid",
					&args, SPI_OK_DELETE_RETURNING);
	for (i = 0; i < (int) SPI_processed; i++)
	{
		bool		isnull;

		gone = list_append_unique_oid(gone, SpiGetOid(i, 1, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	foreach(lc, gone)
	{
		Oid			kept = lfirst_oid(lc);
		Oid			argtypes[1] = {REGCLASSOID};
		Datum		values[1];

		CHECK_FOR_INTERRUPTS();
		values[0] = ObjectIdGetDatum(kept);
		if (CatalogExists("SELECT FROM backfill.archived_leaves"
						  " WHERE kept OPERATOR(pg_catalog.=) $1",
						  1, argtypes, values) ||
			get_rel_name(kept) == NULL)
			continue;
		(void) TryDropArchive(kept);
	}
}

/*
 * ForgetArchive
 *		Remove archive table "archive" from the catalog: its row of
 *		backfill.archives, and the chunks' references to it.
 */
static void
ForgetArchive(Oid archive)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];

	values[0] = ObjectIdGetDatum(archive);
	CatalogExec("UPDATE backfill.archived_chunks SET archive = NULL"
				" WHERE archive OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_UPDATE);
	CatalogExec("DELETE FROM backfill.archives"
				" WHERE archive OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_DELETE);
}

/*
 * DropEmptyArchive
 *		Drop archive table "archive" when no chunk it holds is left
 *		unpurged (a keeping chunk makes a new one when needed); the purged
 *		chunks that named it then name none.  So a role whose kept rows are
 *		all purged owns no archive table any more (DROP ROLE works).
 */
static void
DropEmptyArchive(Oid archive)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];

	values[0] = ObjectIdGetDatum(archive);
	if (CatalogExists("SELECT FROM backfill.archived_chunks"
					  " WHERE archive OPERATOR(pg_catalog.=) $1"
					  " AND purged_at IS NULL",
					  1, argtypes, values))
		return;
	if (get_rel_name(archive) == NULL || TryDropArchive(archive))
		ForgetArchive(archive);
}

/*
 * ForgetDroppedArchives
 *		Forget the archive tables that no longer exist (dropped with their
 *		owner's objects, DROP OWNED): their kept rows are gone, and revert
 *		and diff of their runs say so (OpenKeptTable, 42P01).
 */
static void
ForgetDroppedArchives(void)
{
	List	   *gone = NIL;
	ListCell   *lc;
	int			i;

	CatalogExec("SELECT archive::pg_catalog.oid FROM backfill.archives",
				0, NULL, NULL, NULL, SPI_OK_SELECT);
	for (i = 0; i < (int) SPI_processed; i++)
	{
		bool		isnull;
		Oid			archive = SpiGetOid(i, 1, &isnull);

		if (get_rel_name(archive) == NULL)
			gone = lappend_oid(gone, archive);
	}
	SPI_freetuptable(SPI_tuptable);
	foreach(lc, gone)
		ForgetArchive(lfirst_oid(lc));
}

/*
 * DropEmptyArchives
 *		DropEmptyArchive of every archive table no unpurged chunk names
 *		(one a purge could not drop before is tried again).
 */
static void
DropEmptyArchives(void)
{
	List	   *empty = NIL;
	ListCell   *lc;
	int			i;

	CatalogExec("SELECT a.archive::pg_catalog.oid FROM backfill.archives a"
				" WHERE NOT EXISTS (SELECT FROM backfill.archived_chunks k"
				"  WHERE k.archive OPERATOR(pg_catalog.=) a.archive"
				"  AND k.purged_at IS NULL)",
				0, NULL, NULL, NULL, SPI_OK_SELECT);
	for (i = 0; i < (int) SPI_processed; i++)
	{
		bool		isnull;

		empty = lappend_oid(empty, SpiGetOid(i, 1, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	foreach(lc, empty)
	{
		CHECK_FOR_INTERRUPTS();
		DropEmptyArchive(lfirst_oid(lc));
	}
}

/*
 * ArchivePurge
 *		See backfill.h.
 */
int64
ArchivePurge(Oid target, Interval *older_than, bool only_permitted)
{
	MemoryContext loop_cxt;
	MemoryContext outer = CurrentMemoryContext;
	int64		purged = 0;
	int			nruns;
	int64	   *run_ids;
	Oid		   *targets;
	Oid		   *planners;
	int			r;
	CatalogArgs args;

	SpiConnect();
	ForgetDroppedArchives();

	/*
	 * The runs with chunks to purge: kept before now() - older_than, or
	 * past their keep_until when older_than is NULL.
	 */
	CatalogArgsInit(&args);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(target),
			   !OidIsValid(target));
	CatalogArg(&args, INTERVALOID, PointerGetDatum(older_than),
			   older_than == NULL);
	CatalogExecArgs("SELECT DISTINCT k.run_id, k.target::pg_catalog.oid,"
					" r.created_by_oid::pg_catalog.oid"
					" FROM backfill.archived_chunks k"
					" JOIN backfill.runs r ON r.run_id OPERATOR(pg_catalog.=) k.run_id"
					" WHERE k.purged_at IS NULL"
					" AND ($1 IS NULL OR k.target OPERATOR(pg_catalog.=) $1)"
					" AND CASE WHEN $2 IS NULL"
					"  THEN k.keep_until OPERATOR(pg_catalog.<=) pg_catalog.now()"
					"  ELSE k.kept_at OPERATOR(pg_catalog.<=)"
					"   (pg_catalog.now() OPERATOR(pg_catalog.-) $2) END"
					" ORDER BY k.run_id",
					&args, SPI_OK_SELECT);
	nruns = (int) SPI_processed;
	run_ids = MemoryContextAlloc(outer, sizeof(int64) * Max(nruns, 1));
	targets = MemoryContextAlloc(outer, sizeof(Oid) * Max(nruns, 1));
	planners = MemoryContextAlloc(outer, sizeof(Oid) * Max(nruns, 1));
	for (r = 0; r < nruns; r++)
	{
		bool		isnull;

		run_ids[r] = SpiGetInt64(r, 1, &isnull);
		targets[r] = SpiGetOid(r, 2, &isnull);
		planners[r] = SpiGetOid(r, 3, &isnull);
	}
	SPI_freetuptable(SPI_tuptable);

	loop_cxt = AllocSetContextCreate(CurrentMemoryContext, "backfill purge",
									 ALLOCSET_DEFAULT_SIZES);
	for (r = 0; r < nruns; r++)
	{
		MemoryContext old;
		LOCKTAG		tag;
		int			nchunks;
		int32	   *chunk_nos;
		Oid		   *archives;
		int			c;

		CHECK_FOR_INTERRUPTS();
		if (only_permitted && !HasRunPermission(planners[r]))
			continue;
		old = MemoryContextSwitchTo(loop_cxt);

		/* chunks of the target wait, and a revert never reads half */
		BackfillLockTag(&tag, BACKFILL_LOCK_CLASS_TARGET, (uint32) targets[r]);
		(void) LockAcquire(&tag, ExclusiveLock, false, false);

		CatalogArgsInit(&args);
		CatalogArg(&args, INT8OID, Int64GetDatum(run_ids[r]), false);
		CatalogArg(&args, INTERVALOID, PointerGetDatum(older_than),
				   older_than == NULL);
		CatalogExecArgs("UPDATE backfill.archived_chunks"
						" SET purged_at = pg_catalog.now()"
						" WHERE run_id OPERATOR(pg_catalog.=) $1"
						" AND purged_at IS NULL"
						" AND CASE WHEN $2 IS NULL"
						"  THEN keep_until OPERATOR(pg_catalog.<=) pg_catalog.now()"
						"  ELSE kept_at OPERATOR(pg_catalog.<=)"
						"   (pg_catalog.now() OPERATOR(pg_catalog.-) $2) END"
						" RETURNING chunk_no, archive::pg_catalog.oid",
						&args, SPI_OK_UPDATE_RETURNING);
		nchunks = (int) SPI_processed;
		purged += nchunks;
		chunk_nos = palloc(sizeof(int32) * Max(nchunks, 1));
		archives = palloc(sizeof(Oid) * Max(nchunks, 1));
		for (c = 0; c < nchunks; c++)
		{
			bool		isnull;

			chunk_nos[c] = SpiGetInt32(c, 1, &isnull);
			archives[c] = SpiGetOid(c, 2, &isnull);
			if (isnull)
				archives[c] = InvalidOid;
		}
		SPI_freetuptable(SPI_tuptable);

		/* the purged chunks' rows leave their archive tables, from C */
		for (c = 0; c < nchunks; c++)
		{
			Relation	rel;

			CHECK_FOR_INTERRUPTS();
			if (!OidIsValid(archives[c]) || get_rel_name(archives[c]) == NULL)
				continue;
			/* held by someone: the rows go when the table is dropped */
			if (!ConditionalLockRelationOid(archives[c], RowExclusiveLock))
				continue;
			rel = ArchiveStoreOpen(archives[c], NoLock);
			(void) ArchiveStoreDelete(rel, run_ids[r], chunk_nos[c]);
			table_close(rel, NoLock);
		}
		PurgeLeaves(run_ids[r]);
		MemoryContextSwitchTo(old);
		MemoryContextReset(loop_cxt);
	}
	MemoryContextDelete(loop_cxt);
	DropEmptyArchives();
	SpiFinish();
	return purged;
}
