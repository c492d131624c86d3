/*-------------------------------------------------------------------------
 *
 * archive.c
 *	  The archive of what backfills replaced (keep_replaced, doc/undo.md):
 *	  which archive table holds a chunk's kept rows (the generations
 *	  below, ArchiveFor) and the catalog's records of kept chunks and kept
 *	  leaves.  This header describes the archive as a whole; its other
 *	  parts live in archivemove.c (the rows a chunk deletes moved into it
 *	  in the chunk's transaction, and put back into the target by a revert
 *	  chunk), archivediff.c (the kept rows of a run read for diff) and
 *	  archivepurge.c (purging).
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

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "backfill.h"

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
