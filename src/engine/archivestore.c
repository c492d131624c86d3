/*-------------------------------------------------------------------------
 *
 * archivestore.c
 *	  The tables of backfill_archive as storage: created, written, read,
 *	  emptied and dropped from C, never through SQL.
 *
 * An archive table holds a user's rows, in columns of the user's types,
 * so it belongs to the user: the owner of the table whose rows it keeps
 * (the target's owner; a kept leaf's, the leaf's owner).  Whatever
 * PostgreSQL itself runs on it later, ANALYZE (a range type's
 * subtype_diff), autovacuum, an index build, runs as that owner, exactly
 * as on the user's own table.  Nobody has USAGE on backfill_archive, so
 * nobody (its owner included) can name it in SQL.
 *
 * The extension touches these tables only through the functions below,
 * which work on heap pages through the table access method: a row is
 * copied in or out as it is stored, a row's run and chunk are compared as
 * integers, and no type's function, cast, operator, default, trigger,
 * rule or policy is ever called.  So who the current user is does not
 * matter here, and no statement runs with the extension owner's rights on
 * a user's relation (doc/security.md, "The rule").  The catalog rows that
 * say what each table holds are written by archive.c through CatalogExec.
 *
 * A row archive has the kept table's columns plus _backfill_run and
 * _backfill_chunk, and a BRIN index on those two: it is appended chunk
 * after chunk, so each block range holds few chunks, and a keeping chunk
 * enters one index row per heap block, not one per row (all rows of a
 * chunk share the key).  A chunk's rows are read back by asking the index
 * which block ranges may hold them and reading those blocks only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/hio.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/heap.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "catalog/toasting.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/tidbitmap.h"
#include "parser/parse_relation.h"
#include "rewrite/rowsecurity.h"
#include "storage/bufmgr.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "backfill.h"

/* a keeping chunk writes the archive in batches of at most this many rows */
#define ARCHIVE_BATCH_ROWS 1000
/* ... or of about this many bytes (as COPY's buffered multi-insert) */
#define ARCHIVE_BATCH_BYTES (64 * 1024)

/*
 * DenyByDefault
 *		Enable and force row-level security on relid, with no policy: any
 *		query of it by a role that is neither a superuser nor BYPASSRLS
 *		sees no row and writes none, its owner included, whatever grant
 *		or predefined role it holds (pg_read_all_data and
 *		pg_write_all_data reach every schema).  The extension's own reads
 *		and writes are on heap pages, which no policy filters.
 */
static void
DenyByDefault(Oid relid)
{
	Relation	pgclass = table_open(RelationRelationId, RowExclusiveLock);
	HeapTuple	tup = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class form;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "backfill: cache lookup failed for relation %u", relid);
	form = (Form_pg_class) GETSTRUCT(tup);
	form->relrowsecurity = true;
	form->relforcerowsecurity = true;
	CatalogTupleUpdate(pgclass, &tup->t_self, tup);
	heap_freetuple(tup);
	table_close(pgclass, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * ArchiveStoreCreate
 *		See backfill.h.  The table is made as CREATE TABLE makes it
 *		(heap_create_with_catalog: its row type, its dependencies on the
 *		schema, its owner and its column types, a TOAST table when its
 *		rows need one), owned by "owner" from the start and with no grant
 *		(default privileges are not applied: nobody but its owner has any
 *		right on it, and its owner cannot name it).  No event trigger fires
 *		and no permission is checked: the extension makes it in its own
 *		schema.  With "brin", the BRIN index on (_backfill_run,
 *		_backfill_chunk) is built too (on an empty table).
 */
Oid
ArchiveStoreCreate(const char *name, TupleDesc desc, Oid owner,
				   char persistence, bool brin)
{
	Oid			nsp = get_namespace_oid(ARCHIVE_SCHEMA, false);
	Oid			relid;

	if (OidIsValid(get_relname_relid(name, nsp)))
		elog(ERROR, "backfill: archive table %s.%s exists already",
			 ARCHIVE_SCHEMA, name);
	relid = heap_create_with_catalog(name, nsp, InvalidOid, InvalidOid,
									 InvalidOid, InvalidOid, owner,
									 HEAP_TABLE_AM_OID, desc, NIL,
									 RELKIND_RELATION, persistence,
									 false, false, ONCOMMIT_NOOP, (Datum) 0,
									 false, false, true, InvalidOid, NULL);
	CommandCounterIncrement();
	NewRelationCreateToastTable(relid, (Datum) 0);
	CommandCounterIncrement();
	DenyByDefault(relid);

	if (brin)
	{
		IndexStmt  *stmt = makeNode(IndexStmt);
		IndexElem  *run = makeNode(IndexElem);
		IndexElem  *chunk = makeNode(IndexElem);

		run->name = pstrdup("_backfill_run");
		run->ordering = SORTBY_DEFAULT;
		run->nulls_ordering = SORTBY_NULLS_DEFAULT;
		chunk->name = pstrdup("_backfill_chunk");
		chunk->ordering = SORTBY_DEFAULT;
		chunk->nulls_ordering = SORTBY_NULLS_DEFAULT;
		stmt->relation = makeRangeVar(pstrdup(ARCHIVE_SCHEMA), pstrdup(name), -1);
		stmt->accessMethod = pstrdup("brin");
		stmt->indexParams = list_make2(run, chunk);
		BackfillDefineIndex(relid, stmt);
		CommandCounterIncrement();
	}
	return relid;
}

/*
 * ArchiveStoreDrop
 *		See backfill.h: as DROP TABLE would, with whatever depends on the
 *		table internally (its TOAST table, index, row type); an object
 *		someone made that depends on it makes this fail (nothing is
 *		dropped by cascade).
 */
void
ArchiveStoreDrop(Oid relid)
{
	ObjectAddress obj;

	ObjectAddressSet(obj, RelationRelationId, relid);
	performDeletion(&obj, DROP_RESTRICT,
					PERFORM_DELETION_INTERNAL | PERFORM_DELETION_QUIETLY);
	CommandCounterIncrement();
}

/*
 * ArchiveStoreOpen
 *		See backfill.h: the table, locked in "mode", after checking that it
 *		is a plain heap table of backfill_archive (a relation that is not
 *		is an internal error: the catalog names only tables the extension
 *		made there).
 */
Relation
ArchiveStoreOpen(Oid relid, LOCKMODE mode)
{
	Relation	rel = table_open(relid, mode);

	if (rel->rd_rel->relkind != RELKIND_RELATION ||
		rel->rd_rel->relam != HEAP_TABLE_AM_OID ||
		RelationGetNamespace(rel) != get_namespace_oid(ARCHIVE_SCHEMA, false))
		elog(ERROR, "backfill: relation %s is not an archive table",
			 QualifiedRelName(relid));
	return rel;
}

/*
 * ArchiveStoreIsPlain
 *		See backfill.h: whether rel is still exactly as ArchiveStoreCreate
 *		made it, apart from its columns: owned by "owner", row security
 *		enabled and forced with no policy (DenyByDefault), no trigger,
 *		rule, CHECK, default, generated or NOT NULL column, and no index
 *		but BRIN indexes on its run and chunk columns.  Rows
 *		written from C into such a table are what an INSERT would write.
 */
bool
ArchiveStoreIsPlain(Relation rel, Oid owner)
{
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *indexes;
	ListCell   *lc;
	int			j;
	bool		plain = true;

	if (rel->rd_rel->relowner != owner ||
		rel->rd_rel->relhastriggers || rel->rd_rel->relhasrules ||
		!rel->rd_rel->relrowsecurity || !rel->rd_rel->relforcerowsecurity ||
		(rel->rd_rsdesc != NULL && rel->rd_rsdesc->policies != NIL) ||
		(desc->constr != NULL &&
		 (desc->constr->num_check > 0 || desc->constr->num_defval > 0 ||
		  desc->constr->has_generated_stored)))
		return false;
	for (j = 0; j < desc->natts; j++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, j);

		if (!att->attisdropped &&
			(att->attnotnull || att->attgenerated != '\0'))
			return false;
	}

	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		int			k;

		if (index->rd_rel->relam != BRIN_AM_OID ||
			!heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL) ||
			!heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL))
			plain = false;
		for (k = 0; plain && k < index->rd_index->indnatts; k++)
		{
			AttrNumber	att = index->rd_index->indkey.values[k];
			const char *attname = att > 0 ?
				NameStr(TupleDescAttr(desc, att - 1)->attname) : "";

			if (strcmp(attname, "_backfill_run") != 0 &&
				strcmp(attname, "_backfill_chunk") != 0)
				plain = false;
		}
		index_close(index, AccessShareLock);
		if (!plain)
			break;
	}
	list_free(indexes);
	return plain;
}

/*
 * StoreFlush
 *		Write the n rows of "slots" into the archive at once (one WAL
 *		record per page, through the bulk-insert state), then enter them in
 *		its indexes: only the first row of each heap block (*last_block is
 *		the block last entered, carried from batch to batch): every index
 *		is a BRIN index on the run and chunk (ArchiveStoreIsPlain), and all
 *		the rows of one chunk have the same key, so once a row of a block
 *		is entered, another row of that block changes nothing in its range
 *		(a summarization running meanwhile either reads the first row from
 *		the heap or sees it entered in its placeholder).
 */
static void
StoreFlush(ResultRelInfo *rri, EState *estate, TupleTableSlot **slots,
		   int n, BulkInsertState bistate, BlockNumber *last_block)
{
	int			i;

	if (n == 0)
		return;
	table_multi_insert(rri->ri_RelationDesc, slots, n,
					   GetCurrentCommandId(true), 0, bistate);
	for (i = 0; i < n; i++)
	{
		BlockNumber block = ItemPointerGetBlockNumber(&slots[i]->tts_tid);

		if (rri->ri_NumIndices > 0 && block != *last_block)
		{
			list_free(InsertIndexEntries(rri, slots[i], estate));
			*last_block = block;
		}
		ExecClearTuple(slots[i]);
	}
	ResetPerTupleExprContext(estate);
}

/*
 * ArchiveStoreAppend
 *		See backfill.h.  As COPY writes a table: table_multi_insert in
 *		batches through a BulkInsertState, each batch entered in the BRIN
 *		index through the executor's index routine, not an executor per
 *		row.  The caller opened rel with ArchiveStoreOpen (RowExclusiveLock)
 *		and checked ArchiveStoreIsPlain.  The rows are WAL-logged: the
 *		chunk's commit makes them durable with its delete.
 */
int64
ArchiveStoreAppend(Relation rel, const int *map, TupleDesc rowdesc,
				   Tuplestorestate *store, int64 run_id, int32 chunk_no)
{
	TupleDesc	desc = RelationGetDescr(rel);
	EState	   *estate;
	ResultRelInfo *rri;
	BulkInsertState bistate;
	TupleTableSlot *in;
	TupleTableSlot **slots;
	int			n = 0;
	Size		bytes = 0;
	BlockNumber last_block = InvalidBlockNumber;
	int64		written = 0;
	int			i;

	rri = OpenPlainIndexes(rel, &estate);
	if (rri == NULL)
		elog(ERROR, "backfill: archive table %s has an index on an expression",
			 QualifiedRelName(RelationGetRelid(rel)));
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
				case ARCHIVE_MAP_NULL:
					out->tts_values[j] = (Datum) 0;
					out->tts_isnull[j] = true;
					break;
				case ARCHIVE_MAP_RUN:
					out->tts_values[j] = Int64GetDatum(run_id);
					out->tts_isnull[j] = false;
					break;
				case ARCHIVE_MAP_CHUNK:
					out->tts_values[j] = Int32GetDatum(chunk_no);
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
		written++;
		if (n == ARCHIVE_BATCH_ROWS || bytes >= ARCHIVE_BATCH_BYTES)
		{
			StoreFlush(rri, estate, slots, n, bistate, &last_block);
			n = 0;
			bytes = 0;
		}
	}
	StoreFlush(rri, estate, slots, n, bistate, &last_block);

	for (i = 0; i < ARCHIVE_BATCH_ROWS; i++)
		ExecDropSingleTupleTableSlot(slots[i]);
	ExecDropSingleTupleTableSlot(in);
	FreeBulkInsertState(bistate);
	table_finish_bulk_insert(rel, 0);
	ExecCloseIndices(rri);
	FreeExecutorState(estate);
	CommandCounterIncrement();
	return written;
}

/*
 * IndexOnColumn
 *		See backfill.h: a valid index of rel of access method "am", open
 *		(AccessShareLock), whose first key is column attnum (in operator
 *		family opfamily, unless InvalidOid), with no expression and no
 *		predicate; NULL when rel has none.  Nothing of an index's
 *		expressions is loaded or evaluated: they are only looked at as
 *		null or not in its pg_index row.
 */
Relation
IndexOnColumn(Relation rel, Oid am, AttrNumber attnum, Oid opfamily)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	Relation	found = NULL;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		if (index->rd_rel->relam == am &&
			index->rd_index->indisvalid && index->rd_index->indisready &&
			index->rd_index->indkey.values[0] == attnum &&
			(!OidIsValid(opfamily) || index->rd_opfamily[0] == opfamily) &&
			heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL) &&
			heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL))
		{
			found = index;
			break;
		}
		index_close(index, AccessShareLock);
	}
	list_free(indexes);
	return found;
}

/*
 * CandidateBlocks
 *		The blocks of rel that may hold rows of run_id (of chunk_no, when
 *		not 0 and the index has the chunk as its second column), as the
 *		BRIN index "index" tells: a list of (start, count) pairs of
 *		contiguous blocks, in order.
 */
static List *
CandidateBlocks(Relation rel, Relation index, Snapshot snapshot,
				int64 run_id, int32 chunk_no)
{
	ScanKeyData keys[2];
	int			nkeys = 1;
	IndexScanDesc scan;
	TIDBitmap  *tbm;
	BackfillBitmapIterator *it;
	BlockNumber block;
	BlockNumber start = InvalidBlockNumber;
	BlockNumber count = 0;
	List	   *runs = NIL;

	ScanKeyEntryInitialize(&keys[0], 0, 1, BTEqualStrategyNumber, INT8OID,
						   InvalidOid, F_INT8EQ, Int64GetDatum(run_id));
	if (chunk_no != 0 && index->rd_index->indnatts >= 2 &&
		index->rd_index->indkey.values[1] ==
		attnameAttNum(rel, "_backfill_chunk", false))
	{
		ScanKeyEntryInitialize(&keys[1], 0, 2, BTEqualStrategyNumber, INT4OID,
							   InvalidOid, F_INT4EQ, Int32GetDatum(chunk_no));
		nkeys = 2;
	}
	tbm = tbm_create((Size) work_mem * 1024, NULL);
	scan = BackfillBeginBitmapScan(index, snapshot, nkeys);
	index_rescan(scan, keys, nkeys, NULL, 0);
	(void) index_getbitmap(scan, tbm);
	index_endscan(scan);

	it = BackfillBitmapBegin(tbm);
	while ((block = BackfillBitmapNext(it)) != InvalidBlockNumber)
	{
		CHECK_FOR_INTERRUPTS();
		if (start != InvalidBlockNumber && block == start + count)
		{
			count++;
			continue;
		}
		if (start != InvalidBlockNumber)
			runs = lappend(runs, list_make2_int((int) start, (int) count));
		start = block;
		count = 1;
	}
	if (start != InvalidBlockNumber)
		runs = lappend(runs, list_make2_int((int) start, (int) count));
	BackfillBitmapEnd(it);
	tbm_free(tbm);
	return runs;
}

/*
 * SnapshotPushed
 *		Push a transaction snapshot when none is active (a pg_cron tick's
 *		purge runs between statements); true when it did, and the caller
 *		pops it.  The reads below use the active snapshot.
 */
static bool
SnapshotPushed(void)
{
	if (ActiveSnapshotSet())
		return false;
	PushActiveSnapshot(GetTransactionSnapshot());
	return true;
}

/*
 * ScanBlocks
 *		The rows of rel under snapshot, each given to fn: in the block
 *		ranges of "ranges" (lists of two ints, from and to, as
 *		heap_setscanlimits takes them), or the whole table when NIL, without
 *		synchronized scans (a scan starts at its first block); only
 *		those of run run_id (and chunk chunk_no unless 0) when runatt is a
 *		column.  Returns how many were given.
 */
static int64
ScanBlocks(Relation rel, Snapshot snapshot, List *ranges,
		   AttrNumber runatt, int64 run_id, AttrNumber chunkatt,
		   int32 chunk_no, ArchiveRowFn fn, void *arg)
{
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	int64		found = 0;
	int			n = ranges == NIL ? 1 : list_length(ranges);
	int			i;

	for (i = 0; i < n; i++)
	{
		TableScanDesc scan;

		scan = table_beginscan_strat(rel, snapshot, 0, NULL, true, false);
		if (ranges != NIL)
		{
			List	   *r = (List *) list_nth(ranges, i);

			heap_setscanlimits(scan, (BlockNumber) linitial_int(r),
							   (BlockNumber) lsecond_int(r));
		}
		while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
		{
			bool		isnull;
			Datum		run;
			Datum		chunk;

			CHECK_FOR_INTERRUPTS();
			if (runatt > 0)
			{
				run = slot_getattr(slot, runatt, &isnull);
				if (isnull || DatumGetInt64(run) != run_id)
					continue;
				chunk = slot_getattr(slot, chunkatt, &isnull);
				if (isnull || (chunk_no != 0 && DatumGetInt32(chunk) != chunk_no))
					continue;
			}
			found++;
			fn(slot, arg);
		}
		table_endscan(scan);
	}
	ExecDropSingleTupleTableSlot(slot);
	return found;
}

/*
 * ArchiveStoreScan
 *		See backfill.h.  With the snapshot of the running statement; the
 *		blocks the BRIN index names are read with heap scans limited to
 *		them (no synchronized scan, so a scan starts at its first block).
 */
int64
ArchiveStoreScan(Relation rel, int64 run_id, int32 chunk_no,
				 ArchiveRowFn fn, void *arg)
{
	AttrNumber	runatt = attnameAttNum(rel, "_backfill_run", false);
	AttrNumber	chunkatt = attnameAttNum(rel, "_backfill_chunk", false);
	Relation	index;
	List	   *runs;
	Snapshot	snapshot;
	bool		pushed;
	int64		found;

	if (runatt <= 0 || chunkatt <= 0 ||
		TupleDescAttr(RelationGetDescr(rel), runatt - 1)->atttypid != INT8OID ||
		TupleDescAttr(RelationGetDescr(rel), chunkatt - 1)->atttypid != INT4OID)
		elog(ERROR, "backfill: archive table %s has no run and chunk columns",
			 QualifiedRelName(RelationGetRelid(rel)));
	pushed = SnapshotPushed();
	snapshot = GetActiveSnapshot();

	/*
	 * A BRIN index whose first column is the run's; none only when a
	 * superuser dropped it: the table is then read whole.
	 */
	index = IndexOnColumn(rel, BRIN_AM_OID, runatt, InvalidOid);
	if (index != NULL)
	{
		runs = CandidateBlocks(rel, index, snapshot, run_id, chunk_no);
		index_close(index, AccessShareLock);
	}
	else
		runs = list_make1(list_make2_int(0, (int) RelationGetNumberOfBlocks(rel)));

	found = ScanBlocks(rel, snapshot, runs, runatt, run_id, chunkatt, chunk_no,
					   fn, arg);
	if (pushed)
		PopActiveSnapshot();
	return found;
}

/*
 * ArchiveStoreScanAll
 *		See backfill.h: every row of rel (a kept leaf's table), with the
 *		snapshot of the running statement.
 */
int64
ArchiveStoreScanAll(Relation rel, ArchiveRowFn fn, void *arg)
{
	bool		pushed = SnapshotPushed();
	int64		found;

	found = ScanBlocks(rel, GetActiveSnapshot(), NIL, 0, 0, 0, 0, fn, arg);
	if (pushed)
		PopActiveSnapshot();
	return found;
}

/* The rows ArchiveStoreDelete found, by TID. */
typedef struct DeleteState
{
	ItemPointerData *tids;
	int64		n;
	int64		size;
} DeleteState;

/*
 * CollectTid
 *		ArchiveRowFn of ArchiveStoreDelete: remember the row's TID.
 */
static void
CollectTid(TupleTableSlot *slot, void *arg)
{
	DeleteState *state = (DeleteState *) arg;

	if (state->n == state->size)
	{
		state->size *= 2;
		state->tids = repalloc_huge(state->tids,
									sizeof(ItemPointerData) * state->size);
	}
	state->tids[state->n++] = slot->tts_tid;
}

/*
 * ArchiveStoreDelete
 *		See backfill.h: the rows are found as ArchiveStoreScan finds them,
 *		then deleted one by one (simple_table_tuple_delete: no trigger, no
 *		rule; their TOAST values go with them, VACUUM reclaims the space).
 */
int64
ArchiveStoreDelete(Relation rel, int64 run_id, int32 chunk_no)
{
	DeleteState state;
	int64		i;
	bool		pushed;

	state.size = 1024;
	state.n = 0;
	state.tids = palloc(sizeof(ItemPointerData) * state.size);
	(void) ArchiveStoreScan(rel, run_id, chunk_no, CollectTid, &state);
	pushed = SnapshotPushed();
	for (i = 0; i < state.n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		simple_table_tuple_delete(rel, &state.tids[i], GetActiveSnapshot());
	}
	if (pushed)
		PopActiveSnapshot();
	pfree(state.tids);
	CommandCounterIncrement();
	return state.n;
}
