/*-------------------------------------------------------------------------
 *
 * archive.c
 *	  The archive of what backfills replaced (keep_replaced, doc/undo.md):
 *	  one table per target, backfill_archive.t_<oid>, created by the first
 *	  keeping chunk; the rows a chunk deletes moved into it in the chunk's
 *	  transaction; the rows of a kept chunk put back into the target (a
 *	  revert chunk); the rows of a kept run read for diff; purging.
 *
 * Rights.  The target is read and written as the current user (the
 * definition's author, inside a chunk's author gate); the archive only as
 * the extension owner (CatalogExec), in a schema nobody else may use.  The
 * rows cross between the two through a tuplestore that one statement
 * fills and the next reads as an ephemeral named relation ("backfill_rows",
 * as a trigger's transition table): the author's DELETE ... RETURNING
 * fills it and the extension writes it into the archive (from C, in
 * batches, as COPY: ArchiveWriteRows; with an INSERT as the owner when the
 * archive is not a plain copy of the target's columns); the owner's
 * SELECT from the archive fills it and the author's INSERT into the
 * target reads it.  So the author never holds a privilege on the archive,
 * and the owner never writes the user's table (whose triggers and
 * defaults are the user's code).  The store of a keeping chunk holds up to
 * the larger of work_mem and maintenance_work_mem in memory before it
 * spills to disk (it lives for one chunk); diff reads the archive in place
 * when it can (ArchiveKeptInPlace).  The archive's index on (_backfill_run,
 * _backfill_chunk) is a BRIN index: the archive is appended chunk after
 * chunk, so block ranges stay narrow, and a keeping chunk does not pay a
 * btree insertion per row (only one BRIN entry per heap block it fills:
 * BrinOfRunAndChunk).
 *
 * Columns.  The archive has the target's columns, each of the base type
 * of its domain (a domain's CHECK is the user's code: it must not run
 * with the owner's rights), plus _backfill_run and _backfill_chunk.  A
 * column added to the target later is added to the archive by the next
 * keeping chunk; a column dropped from the target stays in the archive.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/hio.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_am.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "backfill.h"

/* the name the rows crossing between the two rights go by */
#define ARCHIVE_ROWS "backfill_rows"

/* a keeping chunk writes the archive in batches of at most this many rows */
#define ARCHIVE_BATCH_ROWS 1000
/* ... or of about this many bytes (as COPY's buffered multi-insert) */
#define ARCHIVE_BATCH_BYTES (64 * 1024)

/* The columns of a relation (not dropped), in attribute order. */
typedef struct RelColumns
{
	int			n;
	char	  **names;
	Oid		   *types;
	int32	   *typmods;
	Oid		   *collations;
	bool	   *generated;
} RelColumns;

/*
 * ReadColumns
 *		The columns of relation relid that are not dropped.
 */
static RelColumns *
ReadColumns(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	RelColumns *cols = palloc0(sizeof(RelColumns));
	int			i;

	cols->names = palloc(sizeof(char *) * desc->natts);
	cols->types = palloc(sizeof(Oid) * desc->natts);
	cols->typmods = palloc(sizeof(int32) * desc->natts);
	cols->collations = palloc(sizeof(Oid) * desc->natts);
	cols->generated = palloc(sizeof(bool) * desc->natts);
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		cols->names[cols->n] = pstrdup(NameStr(att->attname));
		cols->types[cols->n] = att->atttypid;
		cols->typmods[cols->n] = att->atttypmod;
		cols->collations[cols->n] = att->attcollation;
		cols->generated[cols->n] = (att->attgenerated != '\0');
		cols->n++;
	}
	table_close(rel, AccessShareLock);
	return cols;
}

/*
 * ColumnIndex
 *		The position of column "name" in cols, -1 when absent.
 */
static int
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
 *		cols, n of them), for a tuplestore read as a relation.
 */
static TupleDesc
RowsDesc(const RelColumns *cols, const int *which, int n, bool with_chunk)
{
	TupleDesc	desc = CreateTemplateTupleDesc(n + (with_chunk ? 1 : 0));
	int			i;

	for (i = 0; i < n; i++)
	{
		int			k = which[i];

		TupleDescInitEntry(desc, (AttrNumber) (i + 1), cols->names[k],
						   cols->types[k], cols->typmods[k], 0);
		TupleDescInitEntryCollation(desc, (AttrNumber) (i + 1),
									cols->collations[k]);
	}
	if (with_chunk)
		TupleDescInitEntry(desc, (AttrNumber) (n + 1), "_backfill_chunk",
						   INT4OID, -1, 0);
	BackfillTupleDescFinalize(desc);
	return desc;
}

/*
 * ColumnList
 *		"a", "b", ... of the columns "which", each prefixed by "prefix"
 *		(e.g. "o.") when not empty.
 */
static char *
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
 * ColumnDdl
 *		The definition of an archive column for column k of cols: its name
 *		and the base type of its type (a domain's checks are user code).
 */
static char *
ColumnDdl(const RelColumns *cols, int k)
{
	int32		typmod = cols->typmods[k];
	Oid			base = getBaseTypeAndTypmod(cols->types[k], &typmod);

	return psprintf("%s %s", quote_identifier(cols->names[k]),
					format_type_extended(base, typmod,
										 FORMAT_TYPE_TYPEMOD_GIVEN |
										 FORMAT_TYPE_FORCE_QUALIFY));
}

/*
 * ArchiveOf
 *		See backfill.h.
 */
Oid
ArchiveOf(Oid target)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	Oid			archive = InvalidOid;
	bool		isnull;

	values[0] = ObjectIdGetDatum(target);
	CatalogExec("SELECT archive::pg_catalog.oid FROM backfill.archives"
				" WHERE target OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
		archive = SpiGetOid(0, 1, &isnull);
	SPI_freetuptable(SPI_tuptable);
	if (OidIsValid(archive) && get_rel_name(archive) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the archive table of %s no longer exists",
						QualifiedRelName(target)),
				 errdetail("backfill.archives names relation OID %u.", archive)));
	return archive;
}

/*
 * ArchiveEnsure
 *		The archive table of target, created when it has none (as the
 *		extension owner, in backfill_archive, named t_<oid>, or t_<oid>_<n>
 *		when a restored archive holds that name), with every column of
 *		"cols" (columns added to the target since are added to it).  The
 *		caller holds the chunk's lock on the target, so two chunks never
 *		create it at once.  Caller is connected to SPI.
 */
static Oid
ArchiveEnsure(Oid target, const RelColumns *cols)
{
	Oid			archive = ArchiveOf(target);
	Oid			nsp;
	int			i;

	if (ColumnIndex(cols, "_backfill_run") >= 0 ||
		ColumnIndex(cols, "_backfill_chunk") >= 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_COLUMN),
				 errmsg("table %s has a column named \"_backfill_run\" or \"_backfill_chunk\"",
						QualifiedRelName(target)),
				 errdetail("The archive of kept rows records each row's run and chunk in columns of these names."),
				 errhint("Rename the column, or plan the run with keep_replaced => false.")));

	if (OidIsValid(archive))
	{
		RelColumns *have = ReadColumns(archive);

		for (i = 0; i < cols->n; i++)
		{
			if (ColumnIndex(have, cols->names[i]) >= 0)
				continue;
			CatalogExecUnsaved(psprintf("ALTER TABLE %s ADD COLUMN %s",
										QualifiedRelName(archive),
										ColumnDdl(cols, i)),
							   SPI_OK_UTILITY);
		}
		return archive;
	}

	nsp = get_namespace_oid("backfill_archive", false);
	{
		StringInfoData ddl;
		char	   *name = psprintf("t_%u", target);
		int			n = 1;
		CatalogArgs args;

		while (OidIsValid(get_relname_relid(name, nsp)))
			name = psprintf("t_%u_%d", target, n++);
		initStringInfo(&ddl);
		appendStringInfo(&ddl, "CREATE TABLE backfill_archive.%s (",
						 quote_identifier(name));
		for (i = 0; i < cols->n; i++)
			appendStringInfo(&ddl, "%s, ", ColumnDdl(cols, i));
		appendStringInfoString(&ddl,
							   "_backfill_run pg_catalog.int8 NOT NULL,"
							   " _backfill_chunk pg_catalog.int4 NOT NULL)");
		CatalogExecUnsaved(ddl.data, SPI_OK_UTILITY);
		CatalogExecUnsaved(psprintf("CREATE INDEX ON backfill_archive.%s"
									" USING brin (_backfill_run, _backfill_chunk)",
									quote_identifier(name)),
						   SPI_OK_UTILITY);
		CommandCounterIncrement();
		archive = get_relname_relid(name, nsp);
		if (!OidIsValid(archive))
			elog(ERROR, "backfill: archive table %s was not created", name);

		CatalogArgsInit(&args);
		CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(target), false);
		CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(archive), false);
		CatalogExecArgs("INSERT INTO backfill.archives (target, archive)"
						" VALUES ($1, $2)",
						&args, SPI_OK_INSERT);
	}
	return archive;
}

/*
 * RecordKept
 *		The catalog's record of a kept chunk: how many rows its archive
 *		holds and until when (keep_for; NULL: until purged).
 */
static void
RecordKept(Oid target, const ArchiveKeep *keep, int64 rows)
{
	CatalogArgs args;

	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(keep->run_id), false);
	CatalogArg(&args, INT4OID, Int32GetDatum(keep->chunk_no), false);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(target), false);
	CatalogArg(&args, INT8OID, Int64GetDatum(rows), false);
	CatalogArg(&args, INTERVALOID, PointerGetDatum(keep->keep_for),
			   keep->keep_for == NULL);
	CatalogExecArgs("INSERT INTO backfill.archived_chunks"
					" (run_id, chunk_no, target, rows_kept, keep_until)"
					" VALUES ($1, $2, $3, $4,"
					" pg_catalog.now() OPERATOR(pg_catalog.+) $5)",
					&args, SPI_OK_INSERT);
}

/*
 * ArchiveWriteable
 *		Whether the archive "rel" may be written from C with the rows of
 *		"cols" (ArchiveWriteRows): an ordinary table whose every column of
 *		the target's name has the base type the target's column has (a
 *		column whose type changed since the archive was made needs the
 *		INSERT's coercion), with no trigger, rule, CHECK, default,
 *		generated column, or NOT NULL other than the run's and chunk's;
 *		and, in "map" (one entry per archive attribute), the position in
 *		cols of each archive column (-1: none; -2: _backfill_run; -3:
 *		_backfill_chunk).  So nothing but the row's own bytes is written:
 *		no function that a user defines runs.
 */
static bool
ArchiveWriteable(Relation rel, const RelColumns *cols, int *map)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int			j;

	if (rel->rd_rel->relkind != RELKIND_RELATION ||
		rel->rd_rel->relhastriggers || rel->rd_rel->relhasrules ||
		(desc->constr != NULL &&
		 (desc->constr->num_check > 0 || desc->constr->num_defval > 0 ||
		  desc->constr->has_generated_stored)))
		return false;
	for (j = 0; j < desc->natts; j++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, j);
		const char *name = NameStr(att->attname);
		int			k;
		int32		typmod;
		Oid			base;

		map[j] = -1;
		if (att->attisdropped)
			continue;
		if (strcmp(name, "_backfill_run") == 0 && att->atttypid == INT8OID)
		{
			map[j] = -2;
			continue;
		}
		if (strcmp(name, "_backfill_chunk") == 0 && att->atttypid == INT4OID)
		{
			map[j] = -3;
			continue;
		}
		if (att->attnotnull || att->attgenerated != '\0')
			return false;
		k = ColumnIndex(cols, name);
		if (k < 0)
			continue;
		typmod = cols->typmods[k];
		base = getBaseTypeAndTypmod(cols->types[k], &typmod);
		if (base != att->atttypid ||
			(att->atttypmod != -1 && att->atttypmod != typmod))
			return false;
		map[j] = k;
	}
	return true;
}

/*
 * BrinOfRunAndChunk
 *		Whether every index of the archive (opened in rri) is a BRIN index
 *		on no column but _backfill_run and _backfill_chunk (map: as
 *		ArchiveWriteable fills it).  All the rows one chunk writes then
 *		have the same key in every index, so once a row of a heap block has
 *		been entered, entering another row of that block changes nothing:
 *		the block's range already covers that key (a summarization that
 *		runs meanwhile covers it too: it either scans the first row or sees
 *		it entered in its placeholder).  ArchiveFlush then enters one row
 *		per heap block instead of one per row.
 */
static bool
BrinOfRunAndChunk(ResultRelInfo *rri, const int *map)
{
	int			i;
	int			k;

	for (i = 0; i < rri->ri_NumIndices; i++)
	{
		IndexInfo  *ii = rri->ri_IndexRelationInfo[i];

		if (rri->ri_IndexRelationDescs[i]->rd_rel->relam != BRIN_AM_OID)
			return false;
		for (k = 0; k < ii->ii_NumIndexAttrs; k++)
		{
			AttrNumber	att = ii->ii_IndexAttrNumbers[k];

			if (att <= 0 || (map[att - 1] != -2 && map[att - 1] != -3))
				return false;
		}
	}
	return true;
}

/*
 * ArchiveFlush
 *		Writes the n rows of "slots" into the archive at once (one WAL
 *		record per page, through the bulk-insert state), then enters each
 *		in the archive's indexes (with "per_block": only the first row of
 *		each heap block, BrinOfRunAndChunk; *last_block is the block last
 *		entered, carried from batch to batch), and empties the slots.
 */
static void
ArchiveFlush(ResultRelInfo *rri, EState *estate, TupleTableSlot **slots,
			 int n, BulkInsertState bistate, bool per_block,
			 BlockNumber *last_block)
{
	int			i;

	if (n == 0)
		return;
	table_multi_insert(rri->ri_RelationDesc, slots, n,
					   GetCurrentCommandId(true), 0, bistate);
	for (i = 0; i < n; i++)
	{
		BlockNumber block = ItemPointerGetBlockNumber(&slots[i]->tts_tid);

		if (rri->ri_NumIndices > 0 && (!per_block || block != *last_block))
		{
			list_free(InsertIndexEntries(rri, slots[i], estate));
			*last_block = block;
		}
		ExecClearTuple(slots[i]);
	}
	ResetPerTupleExprContext(estate);
}

/*
 * ArchiveWriteRows
 *		Writes the rows of "store" (of descriptor rowdesc: the columns of
 *		cols, in order) with the chunk's run and number into the archive,
 *		as COPY writes a table: table_multi_insert in batches through a
 *		BulkInsertState, and each batch's rows entered in the archive's
 *		indexes (its BRIN index) through the executor's index routine, not
 *		an executor per row.  The archive is the extension's own table and
 *		ArchiveWriteable has made sure that no user code runs in it: no
 *		trigger, default, check, domain (its columns are of base types),
 *		and no index on an expression or with a predicate.  Returns false,
 *		having written nothing, when the archive is not so (the caller then
 *		writes it with an INSERT as the extension owner).  The rows are
 *		WAL-logged: the chunk's commit makes them durable with the delete.
 */
static bool
ArchiveWriteRows(Oid archive, const RelColumns *cols, TupleDesc rowdesc,
				 Tuplestorestate *store, const ArchiveKeep *keep,
				 int64 *written)
{
	Relation	rel = table_open(archive, RowExclusiveLock);
	TupleDesc	desc = RelationGetDescr(rel);
	int		   *map = palloc(sizeof(int) * Max(desc->natts, 1));
	EState	   *estate;
	ResultRelInfo *rri;
	BulkInsertState bistate;
	TupleTableSlot *in;
	TupleTableSlot **slots;
	int			n = 0;
	Size		bytes = 0;
	bool		per_block;
	BlockNumber last_block = InvalidBlockNumber;
	int			i;

	if (!ArchiveWriteable(rel, cols, map))
	{
		table_close(rel, NoLock);
		return false;
	}

	rri = OpenPlainIndexes(rel, &estate);
	if (rri == NULL)
	{
		table_close(rel, NoLock);
		return false;
	}

	per_block = BrinOfRunAndChunk(rri, map);
	bistate = GetBulkInsertState();

	/*
	 * Without the bulk-write ring: in a ring of 16 MB the chunk's backend
	 * evicts, and so writes (flushing WAL first), every page of the archive
	 * it filled, while the chunk's own INSERT into the target leaves its
	 * pages to shared buffers.  The archive's pages go there too.
	 */
	FreeAccessStrategy(bistate->strategy);
	bistate->strategy = NULL;
	in = MakeSingleTupleTableSlot(rowdesc, &TTSOpsMinimalTuple);
	slots = palloc(sizeof(TupleTableSlot *) * ARCHIVE_BATCH_ROWS);
	for (i = 0; i < ARCHIVE_BATCH_ROWS; i++)
		slots[i] = table_slot_create(rel, NULL);

	*written = 0;
	while (tuplestore_gettupleslot(store, true, false, in))
	{
		TupleTableSlot *out = slots[n];
		int			j;

		CHECK_FOR_INTERRUPTS();
		slot_getallattrs(in);
		ExecClearTuple(out);
		for (j = 0; j < desc->natts; j++)
		{
			switch (map[j])
			{
				case -1:
					out->tts_values[j] = (Datum) 0;
					out->tts_isnull[j] = true;
					break;
				case -2:
					out->tts_values[j] = Int64GetDatum(keep->run_id);
					out->tts_isnull[j] = false;
					break;
				case -3:
					out->tts_values[j] = Int32GetDatum(keep->chunk_no);
					out->tts_isnull[j] = false;
					break;
				default:
					out->tts_values[j] = in->tts_values[map[j]];
					out->tts_isnull[j] = in->tts_isnull[map[j]];
					break;
			}
		}
		ExecStoreVirtualTuple(out);
		/* the row is copied into the slot: "in" is read again next */
		bytes += ExecFetchSlotHeapTuple(out, true, NULL)->t_len;
		n++;
		(*written)++;
		if (n == ARCHIVE_BATCH_ROWS || bytes >= ARCHIVE_BATCH_BYTES)
		{
			ArchiveFlush(rri, estate, slots, n, bistate, per_block,
						 &last_block);
			n = 0;
			bytes = 0;
		}
	}
	ArchiveFlush(rri, estate, slots, n, bistate, per_block, &last_block);

	for (i = 0; i < ARCHIVE_BATCH_ROWS; i++)
		ExecDropSingleTupleTableSlot(slots[i]);
	ExecDropSingleTupleTableSlot(in);
	FreeBulkInsertState(bistate);
	table_finish_bulk_insert(rel, 0);
	ExecCloseIndices(rri);
	FreeExecutorState(estate);
	table_close(rel, NoLock);
	CommandCounterIncrement();
	return true;
}

/*
 * ArchiveDeleteRange
 *		See backfill.h.  The DELETE runs as the current user (the author,
 *		in a chunk) with RETURNING into a tuplestore; ArchiveWriteRows
 *		writes it into the archive (or, when it cannot, an INSERT reading
 *		it as the extension owner).  Both in the caller's
 *		transaction: the chunk commits or rolls back both.
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
	int64		written = 0;
	int			i;
	CatalogArgs args;

	SpiConnect();
	cols = ReadColumns(target);
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

	/* as the extension owner: they enter the archive */
	archive = ArchiveEnsure(target, cols);
	if (rows > 0 &&
		ArchiveWriteRows(archive, cols, RowsDesc(cols, all, cols->n, false),
						 store, keep, &written))
	{
		if (written != rows)
			elog(ERROR, "backfill: archived " INT64_FORMAT " of " INT64_FORMAT " rows",
				 written, rows);
	}
	else if (rows > 0)
	{
		SpiRegisterRows(ARCHIVE_ROWS, RowsDesc(cols, all, cols->n, false),
						store);
		CatalogArgsInit(&args);
		CatalogArg(&args, INT8OID, Int64GetDatum(keep->run_id), false);
		CatalogArg(&args, INT4OID, Int32GetDatum(keep->chunk_no), false);
		CatalogExecArgsOnce(psprintf("INSERT INTO %s (%s, _backfill_run, _backfill_chunk)"
									 " SELECT %s, $1, $2 FROM " ARCHIVE_ROWS,
									 QualifiedRelName(archive),
									 ColumnList(cols, all, cols->n, ""),
									 ColumnList(cols, all, cols->n, "")),
							&args, SPI_OK_INSERT);
		if ((int64) SPI_processed != rows)
			elog(ERROR, "backfill: archived " UINT64_FORMAT " of " INT64_FORMAT " rows",
				 SPI_processed, rows);
		SpiUnregisterRows(ARCHIVE_ROWS);
	}
	tuplestore_end(store);
	RecordKept(target, keep, rows);
	SpiFinish();
	return rows;
}

/*
 * RecordLeaf
 *		The catalog's record that chunk keep of target kept partition
 *		"leaf"'s files in table "kept".
 */
static void
RecordLeaf(Oid target, const ArchiveKeep *keep, Oid leaf, Oid kept)
{
	CatalogArgs args;

	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(keep->run_id), false);
	CatalogArg(&args, INT4OID, Int32GetDatum(keep->chunk_no), false);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(target), false);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(leaf), false);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(kept), false);
	CatalogExecArgs("INSERT INTO backfill.archived_leaves"
					" (run_id, chunk_no, target, leaf, kept)"
					" VALUES ($1, $2, $3, $4, $5)",
					&args, SPI_OK_INSERT);
}

/*
 * ArchiveKeepLeaves
 *		See backfill.h.  The target gets its (row) archive too, empty, so
 *		that it is listed in backfill.archives and archive_usage.  Caller
 *		is connected to SPI and holds the chunk's locks.
 */
void
ArchiveKeepLeaves(Oid target, List *leaves, const ArchiveKeep *keep,
				  int64 rows)
{
	ListCell   *lc;

	(void) ArchiveEnsure(target, ReadColumns(target));
	RecordKept(target, keep, rows);
	foreach(lc, leaves)
	{
		Oid			leaf = lfirst_oid(lc);
		Oid			kept;

		RelColumns *cols = ReadColumns(leaf);
		StringInfoData ddl;
		int			i;

		CHECK_FOR_INTERRUPTS();
		initStringInfo(&ddl);
		for (i = 0; i < cols->n; i++)
			appendStringInfo(&ddl, "%s%s", i > 0 ? ", " : "",
							 ColumnDdl(cols, i));
		kept = KeptLeafCreate(leaf, keep->run_id, keep->chunk_no, ddl.data);
		KeptLeafExchange(leaf, kept);
		RecordLeaf(target, keep, leaf, kept);
	}
}

/*
 * KeptLeaves
 *		The leaves chunk chunk_no of run_id kept (chunk_no 0: of every
 *		chunk), with their kept tables and chunk numbers, in three lists.
 */
static void
KeptLeaves(int64 run_id, int32 chunk_no, List **leaves, List **kepts,
		   List **chunks)
{
	CatalogArgs args;
	int			i;

	*leaves = *kepts = *chunks = NIL;
	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(run_id), false);
	CatalogArg(&args, INT4OID, Int32GetDatum(chunk_no), chunk_no == 0);
	CatalogExecArgs("SELECT leaf::pg_catalog.oid, kept::pg_catalog.oid, chunk_no"
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
 * KeptLeavesUnion
 *		" UNION ALL SELECT ..." reading every kept leaf of run_id (of chunk
 *		chunk_no, 0: all) as rows of the archive's columns "from" (n of
 *		them, of "have"), each cast to its archive type, with the chunk
 *		number first or last; "" when the run kept no leaf.
 */
static char *
KeptLeavesUnion(int64 run_id, int32 chunk_no, const RelColumns *have,
				const int *from, int n, bool chunk_first)
{
	List	   *leaves;
	List	   *kepts;
	List	   *chunks;
	StringInfoData buf;
	int			i;
	int			j;

	KeptLeaves(run_id, chunk_no, &leaves, &kepts, &chunks);
	initStringInfo(&buf);
	for (i = 0; i < list_length(kepts); i++)
	{
		StringInfoData cols;
		RelColumns *kcols = ReadColumns(list_nth_oid(kepts, i));

		CHECK_FOR_INTERRUPTS();
		initStringInfo(&cols);
		for (j = 0; j < n; j++)
		{
			const char *col = quote_identifier(have->names[from[j]]);

			/* a column added to the target after the leaf was kept: NULL */
			appendStringInfo(&cols, "%s%s%s::%s AS %s", j > 0 ? ", " : "",
							 ColumnIndex(kcols, have->names[from[j]]) >= 0 ? "k." : "",
							 ColumnIndex(kcols, have->names[from[j]]) >= 0 ? col : "NULL",
							 format_type_extended(have->types[from[j]], -1,
												  FORMAT_TYPE_TYPEMOD_GIVEN |
												  FORMAT_TYPE_FORCE_QUALIFY),
							 col);
		}
		if (chunk_first)
			appendStringInfo(&buf, " UNION ALL SELECT %d%s%s FROM %s k",
							 list_nth_int(chunks, i), n > 0 ? ", " : "",
							 cols.data,
							 QualifiedRelName(list_nth_oid(kepts, i)));
		else
			appendStringInfo(&buf, " UNION ALL SELECT %s%s%d FROM %s k",
							 cols.data, n > 0 ? ", " : "",
							 list_nth_int(chunks, i),
							 QualifiedRelName(list_nth_oid(kepts, i)));
	}
	return buf.data;
}

/*
 * CheckKept
 *		The archive of chunk "chunk_no" of run_id must still hold its rows:
 *		55000 when the chunk kept nothing or its rows were purged.  Returns
 *		how many rows it kept.
 */
static int64
CheckKept(int64 run_id, int32 chunk_no)
{
	Oid			argtypes[2] = {INT8OID, INT4OID};
	Datum		values[2];
	bool		isnull;
	bool		purged;
	int64		rows;
	char	   *purged_at = NULL;

	values[0] = Int64GetDatum(run_id);
	values[1] = Int32GetDatum(chunk_no);
	CatalogExec("SELECT rows_kept, purged_at IS NOT NULL, purged_at::pg_catalog.text"
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
 * ArchiveRestoreRows
 *		See backfill.h.  The owner reads the kept rows into a tuplestore;
 *		the current user (the author, in a chunk) inserts them into the
 *		target, generated columns left to the table, identity values kept
 *		(OVERRIDING SYSTEM VALUE).  A count that differs from the one
 *		recorded when they were kept is an error: nothing is half restored.
 */
int64
ArchiveRestoreRows(Oid target, int64 run_id, int32 chunk_no)
{
	RelColumns *cols;
	RelColumns *have;
	int		   *which;
	int		   *from;
	int			n = 0;
	int			i;
	Oid			archive;
	int64		kept;
	int64		rows;
	Tuplestorestate *store;
	DestReceiver *dest;
	CatalogArgs args;

	SpiConnect();
	kept = CheckKept(run_id, chunk_no);
	archive = ArchiveOf(target);
	if (!OidIsValid(archive))
	{
		if (kept > 0)
			elog(ERROR, "backfill: run %lld kept rows but %s has no archive",
				 (long long) run_id, QualifiedRelName(target));
		SpiFinish();
		return 0;
	}
	cols = ReadColumns(target);
	have = ReadColumns(archive);
	which = palloc(sizeof(int) * Max(cols->n, 1));
	from = palloc(sizeof(int) * Max(cols->n, 1));
	for (i = 0; i < cols->n; i++)
	{
		int			k = ColumnIndex(have, cols->names[i]);

		if (cols->generated[i] || k < 0)
			continue;
		which[n] = i;
		from[n] = k;
		n++;
	}

	/* as the extension owner: the kept rows leave the archive */
	dest = SpiRowStore(&store);
	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(run_id), false);
	CatalogArg(&args, INT4OID, Int32GetDatum(chunk_no), false);
	CatalogExecArgsInto(psprintf("SELECT %s FROM %s"
								 " WHERE _backfill_run OPERATOR(pg_catalog.=) $1"
								 " AND _backfill_chunk OPERATOR(pg_catalog.=) $2",
								 ColumnList(have, from, n, ""),
								 QualifiedRelName(archive)),
						&args, dest, SPI_OK_SELECT);
	rows = (int64) SPI_processed;
	dest->rDestroy(dest);
	if (rows != kept)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the archive of chunk %d of run %lld holds " INT64_FORMAT " rows, not the " INT64_FORMAT " it kept",
						chunk_no, (long long) run_id, rows, kept),
				 errdetail("Archive table %s was changed outside the extension.",
						   QualifiedRelName(archive))));

	/* as the current user: they enter the target again */
	if (rows > 0)
	{
		SpiRegisterRows(ARCHIVE_ROWS, RowsDesc(have, from, n, false), store);
		SpiExec(psprintf("INSERT INTO %s (%s) OVERRIDING SYSTEM VALUE"
						 " SELECT %s FROM " ARCHIVE_ROWS,
						 QualifiedRelName(target),
						 ColumnList(cols, which, n, ""),
						 ColumnList(have, from, n, "")),
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
	int			i;

	SpiConnect();
	kept = CheckKept(reverted, chunk_no);
	KeptLeaves(reverted, chunk_no, &leaves, &kepts, &chunks);
	RecordKept(target, keep, rows_now);
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
			elog(ERROR, "backfill: kept leaf table %u is gone", k);
		KeptLeafExchange(leaf, k);
		RecordLeaf(target, keep, leaf, k);
	}
	SpiFinish();
	return kept;
}

/*
 * ArchiveRegisterKept
 *		See backfill.h.  Caller is connected to SPI; the rows stay
 *		registered until it disconnects or unregisters them, and the
 *		caller ends the store (*store_out) after (its temporary file is
 *		released then).
 */
char *
ArchiveRegisterKept(Oid target, int64 run_id, int32 chunk_no,
					const char *name, Tuplestorestate **store_out,
					char **target_list)
{
	RelColumns *cols = ReadColumns(target);
	RelColumns *have;
	int		   *which = palloc(sizeof(int) * Max(cols->n, 1));
	int		   *from = palloc(sizeof(int) * Max(cols->n, 1));
	int			n = 0;
	int			i;
	Oid			archive = ArchiveOf(target);
	Tuplestorestate *store;
	DestReceiver *dest;
	CatalogArgs args;
	RelColumns *common;

	if (!OidIsValid(archive))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run %lld did not keep the rows it replaced",
						(long long) run_id),
				 errhint("Only runs planned with keep_replaced => true (or of a target registered with it) can be reverted or diffed.")));
	have = ReadColumns(archive);
	for (i = 0; i < cols->n; i++)
	{
		int			k = ColumnIndex(have, cols->names[i]);

		if (k < 0)
			continue;
		which[n] = i;
		from[n] = k;
		n++;
	}

	dest = SpiRowStore(&store);
	CatalogArgsInit(&args);
	CatalogArg(&args, INT8OID, Int64GetDatum(run_id), false);
	CatalogArg(&args, INT4OID, Int32GetDatum(chunk_no), chunk_no == 0);
	CatalogExecArgsInto(psprintf("SELECT %s, _backfill_chunk FROM %s"
								 " WHERE _backfill_run OPERATOR(pg_catalog.=) $1"
								 " AND ($2 IS NULL OR _backfill_chunk OPERATOR(pg_catalog.=) $2)%s",
								 ColumnList(have, from, n, ""),
								 QualifiedRelName(archive),
								 KeptLeavesUnion(run_id, chunk_no, have, from,
												 n, false)),
						&args, dest, SPI_OK_SELECT);
	dest->rDestroy(dest);
	SpiRegisterRows(name, RowsDesc(have, from, n, true), store);
	*store_out = store;

	/*
	 * The same columns read from the target, each cast to the type of its
	 * archive column (a domain to its base type): both sides of a diff are
	 * then rows of the same types.
	 */
	{
		StringInfoData buf;

		initStringInfo(&buf);
		for (i = 0; i < n; i++)
		{
			const char *col = quote_identifier(cols->names[which[i]]);

			appendStringInfo(&buf, "%st.%s::%s AS %s", i > 0 ? ", " : "", col,
							 format_type_extended(have->types[from[i]], -1,
												  FORMAT_TYPE_TYPEMOD_GIVEN |
												  FORMAT_TYPE_FORCE_QUALIFY),
							 col);
		}
		*target_list = buf.data;
	}

	/* the column list both sides of a diff share */
	common = palloc0(sizeof(RelColumns));
	common->names = palloc(sizeof(char *) * Max(n, 1));
	for (i = 0; i < n; i++)
		common->names[i] = cols->names[which[i]];
	common->n = n;
	for (i = 0; i < n; i++)
		which[i] = i;
	return ColumnList(common, which, n, "");
}

/*
 * BuiltinType
 *		Whether type "typid" is one of the system's (created at initdb):
 *		its input, output, comparison and casts are then no user's code.
 */
static bool
BuiltinType(Oid typid)
{
	return typid < FirstNormalObjectId;
}

/*
 * ArchiveKeptInPlace
 *		See backfill.h.  NULL when a shared column is of a type created
 *		after initdb (an enum, a composite, a range or an array of one):
 *		such a type can have a cast to json, written by its owner, that
 *		to_jsonb would call with the extension owner's rights; the caller
 *		then reads the kept rows as itself (ArchiveRegisterKept).  The
 *		extension owner is a superuser (backfill.control): it reads the
 *		target whole, which is why the caller's read rule
 *		(CheckKeptRowsReadable: every column, no row-level security) is
 *		checked first.
 */
char *
ArchiveKeptInPlace(Oid target, int64 run_id, int32 chunk_no, int run_param,
				   int chunk_param, char **target_list, char **common_list)
{
	RelColumns *cols = ReadColumns(target);
	RelColumns *have;
	int		   *from;
	Oid			archive = ArchiveOf(target);
	StringInfoData sel;
	StringInfoData tl;
	StringInfoData cl;
	int			n = 0;
	int			i;

	if (!OidIsValid(archive))
		return NULL;
	have = ReadColumns(archive);
	from = palloc(sizeof(int) * Max(cols->n, 1));
	initStringInfo(&sel);
	initStringInfo(&tl);
	initStringInfo(&cl);
	for (i = 0; i < cols->n; i++)
	{
		int			k = ColumnIndex(have, cols->names[i]);
		const char *col = quote_identifier(cols->names[i]);

		if (k < 0)
			continue;
		if (!BuiltinType(have->types[k]))
			return NULL;
		appendStringInfo(&sel, ", a.%s", col);
		appendStringInfo(&tl, "%st.%s::%s AS %s", n > 0 ? ", " : "", col,
						 format_type_extended(have->types[k], -1,
											  FORMAT_TYPE_TYPEMOD_GIVEN |
											  FORMAT_TYPE_FORCE_QUALIFY),
						 col);
		appendStringInfo(&cl, "%s%s", n > 0 ? ", " : "", col);
		from[n++] = k;
	}
	*target_list = tl.data;
	*common_list = cl.data;
	return psprintf("SELECT a._backfill_chunk%s FROM %s a"
					" WHERE a._backfill_run OPERATOR(pg_catalog.=) $%d"
					" AND ($%d IS NULL OR a._backfill_chunk OPERATOR(pg_catalog.=) $%d)%s",
					sel.data, QualifiedRelName(archive), run_param,
					chunk_param, chunk_param,
					KeptLeavesUnion(run_id, chunk_no, have, from, n, true));
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
		CatalogExecUnsaved(psprintf("DROP TABLE %s", QualifiedRelName(kept)),
						   SPI_OK_UTILITY);
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
		Oid			archive;
		LOCKTAG		tag;

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
						" RETURNING chunk_no",
						&args, SPI_OK_UPDATE_RETURNING);
		purged += (int64) SPI_processed;
		SPI_freetuptable(SPI_tuptable);

		archive = ArchiveOf(targets[r]);
		if (OidIsValid(archive))
		{
			CatalogArgsInit(&args);
			CatalogArg(&args, INT8OID, Int64GetDatum(run_ids[r]), false);
			CatalogExecArgsOnce(psprintf("DELETE FROM %s"
										 " WHERE _backfill_run OPERATOR(pg_catalog.=) $1"
										 " AND _backfill_chunk OPERATOR(pg_catalog.=) ANY"
										 " (SELECT chunk_no FROM backfill.archived_chunks"
										 "  WHERE run_id OPERATOR(pg_catalog.=) $1"
										 "  AND purged_at IS NOT NULL)",
										 QualifiedRelName(archive)),
								&args, SPI_OK_DELETE);
		}
		PurgeLeaves(run_ids[r]);
		MemoryContextSwitchTo(old);
		MemoryContextReset(loop_cxt);
	}
	MemoryContextDelete(loop_cxt);
	SpiFinish();
	return purged;
}
