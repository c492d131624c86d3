/*-------------------------------------------------------------------------
 *
 * archivediff.c
 *	  The archive read for diff (doc/undo.md), from C only: the rows a run
 *	  kept, each column as it was kept or as text when its type changed
 *	  since (ArchiveRegisterKept), and the rows the target holds now in the
 *	  same chunks, read through a btree index on the time column or one
 *	  sequential scan, never planned as a query (ArchiveRegisterNow); both
 *	  registered as relations on the caller's SPI connection.  Rights:
 *	  archive.c's header.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_opclass.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "backfill.h"

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
