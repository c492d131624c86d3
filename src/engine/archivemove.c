/*-------------------------------------------------------------------------
 *
 * archivemove.c
 *	  Kept rows moved in and out of the archive (keep_replaced,
 *	  doc/undo.md): the rows a keeping chunk deletes, moved into the
 *	  archive table ArchiveFor chooses (ArchiveDeleteRange), or the files
 *	  of its leaves kept whole (ArchiveKeepLeaves); and a revert chunk's
 *	  way back: the kept rows read from C into a store, after the checks
 *	  that they are still there and the caller's (OpenKeptTable, FillRow),
 *	  and inserted into the target (ArchiveRestoreRows), or the kept files
 *	  exchanged back (ArchiveRestoreLeaves).  Rights: archive.c's header.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/partition.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "backfill.h"

/* the name the rows crossing between the target and the archive go by */
#define ARCHIVE_ROWS "backfill_rows"

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
