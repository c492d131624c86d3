/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The server APIs backfill uses that differ between PostgreSQL 15, 16,
 *	  17, 18 and 19 (beta), each behind one name of backfill's own, so that
 *	  every .c file is the same source on every supported version.
 *
 * Only APIs that changed live here, each with its PG_VERSION_NUM guard and
 * the release that changed it; headers that merely stopped being included
 * by others are included where they are used.  backfill.h includes it (in
 * the bottom layer, base/), so every file sees the same names.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_COMPAT_H
#define BACKFILL_COMPAT_H

#include "catalog/pg_namespace.h"
#include "executor/executor.h"
#include "nodes/parsenodes.h"
#include "utils/acl.h"
#include "utils/date.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/timestamp.h"
#if PG_VERSION_NUM >= 190000
#include "nodes/miscnodes.h"
#endif

/*
 * BackfillNoReturn, written before a function's declaration: the function
 * never returns (it raises an ERROR).  18 replaced pg_attribute_noreturn(),
 * written after the declaration, by pg_noreturn, written before it; GCC and
 * Clang accept the older attribute in front too.
 */
#if PG_VERSION_NUM >= 180000
#define BackfillNoReturn pg_noreturn
#else
#define BackfillNoReturn pg_attribute_noreturn()
#endif

/*
 * check_timezone, the check hook of SET TimeZone: declared in
 * commands/variable.h up to 15, in utils/guc_hooks.h from 16 on.
 */
#if PG_VERSION_NUM >= 160000
#include "utils/guc_hooks.h"
#else
#include "commands/variable.h"
#endif

/*
 * make_new_heap and finish_heap_swap (a swap chunk, a kept leaf): declared in
 * commands/cluster.h up to 18, in commands/repack.h from 19 on (CLUSTER and
 * VACUUM FULL became REPACK).
 */
#if PG_VERSION_NUM >= 190000
#include "commands/repack.h"
#else
#include "commands/cluster.h"
#endif

/*
 * CheckQueryPermissions(query)
 *		The current user's rights on every relation a parsed query reads
 *		(42501 otherwise).  16 moved the rights out of the range table
 *		into Query.rteperminfos and renamed ExecCheckRTPerms to
 *		ExecCheckPermissions.
 */
#if PG_VERSION_NUM >= 160000
#define CheckQueryPermissions(query) \
	ExecCheckPermissions((query)->rtable, (query)->rteperminfos, true)
#else
#define CheckQueryPermissions(query) \
	ExecCheckRTPerms((query)->rtable, true)
#endif

/*
 * NamespaceAclCheck(nspid, roleid, mode)
 *		A role's privilege on a schema.  16 replaced pg_namespace_aclcheck
 *		by the generic object_aclcheck.
 */
#if PG_VERSION_NUM >= 160000
#define NamespaceAclCheck(nspid, roleid, mode) \
	object_aclcheck(NamespaceRelationId, (nspid), (roleid), (mode))
#else
#define NamespaceAclCheck(nspid, roleid, mode) \
	pg_namespace_aclcheck((nspid), (roleid), (mode))
#endif

/*
 * RelationOwnerCheck(relid, roleid)
 *		Whether a role owns a relation (or is a member of its owner).  16
 *		replaced pg_class_ownercheck by the generic object_ownercheck.
 */
#if PG_VERSION_NUM >= 160000
#define RelationOwnerCheck(relid, roleid) \
	object_ownercheck(RelationRelationId, (relid), (roleid))
#else
#define RelationOwnerCheck(relid, roleid) \
	pg_class_ownercheck((relid), (roleid))
#endif

/*
 * GucFree(extra)
 *		Free what a GUC check hook allocated (the "extra" of check_timezone).
 *		Up to 15 that is malloc'd; 16 allocates it with guc_malloc in the GUC
 *		memory context, which only guc_free may release.
 */
#if PG_VERSION_NUM >= 160000
#define GucFree(ptr) guc_free(ptr)
#else
#define GucFree(ptr) free(ptr)
#endif

/*
 * BackfillMyProcNumber() / BackfillProcByNumber(n)
 *		This backend's number among the PGPROCs, and the PGPROC of a
 *		number (a parallel chunk's worker joins its leader's lock group by
 *		it).  17 replaced PGPROC.pgprocno by MyProcNumber and
 *		GetPGProcByNumber.
 */
#if PG_VERSION_NUM >= 170000
#define BackfillMyProcNumber() ((int) MyProcNumber)
#else
#define BackfillMyProcNumber() (MyProc->pgprocno)
#endif
#define BackfillProcByNumber(n) (&ProcGlobal->allProcs[(n)])

/*
 * ReindexRelation(relid, flags, params)
 *		Rebuild every index of a table.  17 added the REINDEX statement as
 *		a first argument (NULL when called from C).
 */
#if PG_VERSION_NUM >= 170000
#define ReindexRelation(relid, flags, params) \
	reindex_relation(NULL, (relid), (flags), (params))
#else
#define ReindexRelation(relid, flags, params) \
	reindex_relation((relid), (flags), (params))
#endif

/*
 * InsertIndexEntries(rri, slot, estate)
 *		Enter the row in slot (just inserted) into every index of rri, no
 *		conflict checking; returns the list of indexes to recheck (none
 *		here: the caller frees it).  16 added the onlySummarizing argument; 19
 *		put the estate second and the booleans into one flags word.
 */
#if PG_VERSION_NUM >= 190000
#define InsertIndexEntries(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (estate), 0, (slot), NIL, NULL)
#elif PG_VERSION_NUM >= 160000
#define InsertIndexEntries(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL, false)
#else
#define InsertIndexEntries(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL)
#endif


/*
 * BackfillDefineIndex(relid, stmt)
 *		CREATE INDEX from C on a table the extension made, with no
 *		permission check and no notice.  16 added the number of partitions
 *		(total_parts), 19 a ParseState for error positions first.
 */
#include "commands/defrem.h"
#if PG_VERSION_NUM >= 190000
#define BackfillDefineIndex(relid, stmt) \
	DefineIndex(NULL, (relid), (stmt), InvalidOid, InvalidOid, InvalidOid, \
				-1, false, false, false, false, true)
#elif PG_VERSION_NUM >= 160000
#define BackfillDefineIndex(relid, stmt) \
	DefineIndex((relid), (stmt), InvalidOid, InvalidOid, InvalidOid, -1, \
				false, false, false, false, true)
#else
#define BackfillDefineIndex(relid, stmt) \
	DefineIndex((relid), (stmt), InvalidOid, InvalidOid, InvalidOid, \
				false, false, false, false, true)
#endif

/*
 * BackfillBeginBitmapScan(index, snapshot, nkeys)
 *		index_beginscan_bitmap; 18 added the scan's instrumentation.
 */
#include "access/genam.h"
#if PG_VERSION_NUM >= 180000
#define BackfillBeginBitmapScan(index, snapshot, nkeys) \
	index_beginscan_bitmap((index), (snapshot), NULL, (nkeys))
#else
#define BackfillBeginBitmapScan(index, snapshot, nkeys) \
	index_beginscan_bitmap((index), (snapshot), (nkeys))
#endif

/*
 * BackfillIndexBeginScan(heap, index, snapshot, nkeys)
 *		index_beginscan with no ORDER BY keys; 18 added the scan's
 *		instrumentation, 19 the table scan's flags.
 */
#if PG_VERSION_NUM >= 190000
#define BackfillIndexBeginScan(heap, index, snapshot, nkeys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), 0, 0)
#elif PG_VERSION_NUM >= 180000
#define BackfillIndexBeginScan(heap, index, snapshot, nkeys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), 0)
#else
#define BackfillIndexBeginScan(heap, index, snapshot, nkeys) \
	index_beginscan((heap), (index), (snapshot), (nkeys), 0)
#endif

/*
 * BackfillBitmapBegin(tbm) / BackfillBitmapNext(it) / BackfillBitmapEnd(it)
 *		The blocks of a TID bitmap in order (InvalidBlockNumber at the end).
 *		18 renamed the backend-local iterator (TBMPrivateIterator) and made
 *		it fill a result the caller provides.
 */
#include "nodes/tidbitmap.h"
#if PG_VERSION_NUM >= 180000
typedef TBMPrivateIterator BackfillBitmapIterator;
#define BackfillBitmapBegin(tbm) tbm_begin_private_iterate(tbm)
#define BackfillBitmapEnd(it) tbm_end_private_iterate(it)
static inline BlockNumber
BackfillBitmapNext(BackfillBitmapIterator *it)
{
	TBMIterateResult res;

	return tbm_private_iterate(it, &res) ? res.blockno : InvalidBlockNumber;
}
#else
typedef TBMIterator BackfillBitmapIterator;
#define BackfillBitmapBegin(tbm) tbm_begin_iterate(tbm)
#define BackfillBitmapEnd(it) tbm_end_iterate(it)
static inline BlockNumber
BackfillBitmapNext(BackfillBitmapIterator *it)
{
	TBMIterateResult *res = tbm_iterate(it);

	return res != NULL ? res->blockno : InvalidBlockNumber;
}
#endif

/*
 * BackfillPostParseAnalyzeHook
 *		The signature of post_parse_analyze_hook: 19 made the jumble state
 *		const.
 */
#include "parser/analyze.h"
#if PG_VERSION_NUM >= 190000
#define BACKFILL_JUMBLE_CONST const
#else
#define BACKFILL_JUMBLE_CONST
#endif

/*
 * BackfillFinishHeapSwap(old, new, system, toast_by_content,
 *						  check_constraints, internal, frozenxid, cutoffmulti,
 *						  persistence)
 *		Exchange a table's files with a transient table's, drop the
 *		transient one and rebuild the table's indexes.  19 added a reindex
 *		argument (true: rebuild them, as every earlier release did).
 */
#if PG_VERSION_NUM >= 190000
#define BackfillFinishHeapSwap(old, new, sys, toast, check, internal, xid, multi, persistence) \
	finish_heap_swap((old), (new), (sys), (toast), (check), (internal), true, \
					 (xid), (multi), (persistence))
#else
#define BackfillFinishHeapSwap(old, new, sys, toast, check, internal, xid, multi, persistence) \
	finish_heap_swap((old), (new), (sys), (toast), (check), (internal), \
					 (xid), (multi), (persistence))
#endif

/*
 * BackfillInsertHasReturning(ins)
 *		Whether a parsed INSERT has a RETURNING clause.  18 replaced
 *		InsertStmt.returningList by returningClause (RETURNING may name OLD
 *		and NEW).
 */
#if PG_VERSION_NUM >= 180000
#define BackfillInsertHasReturning(ins) ((ins)->returningClause != NULL)
#else
#define BackfillInsertHasReturning(ins) ((ins)->returningList != NIL)
#endif

/*
 * BackfillTimestampToTimestamptz(ts, overflow)
 * BackfillDateToTimestamptz(date, overflow)
 *		A timestamp or a date as timestamptz in the session TimeZone.  Out of
 *		timestamptz's range, *overflow is set to -1 or 1 and the result is
 *		-infinity or infinity (no error); otherwise *overflow is 0.  19
 *		replaced the *_opt_overflow functions by *_safe ones that report the
 *		overflow through a soft-error context (with the same results).
 */
#if PG_VERSION_NUM >= 190000
static inline TimestampTz
BackfillTimestampToTimestamptz(Timestamp ts, int *overflow)
{
	ErrorSaveContext escontext = {T_ErrorSaveContext};
	TimestampTz result = timestamp2timestamptz_safe(ts, (Node *) &escontext);

	*overflow = !escontext.error_occurred ? 0 : result < 0 ? -1 : 1;
	return result;
}

static inline TimestampTz
BackfillDateToTimestamptz(DateADT date, int *overflow)
{
	ErrorSaveContext escontext = {T_ErrorSaveContext};
	TimestampTz result = date2timestamptz_safe(date, (Node *) &escontext);

	*overflow = !escontext.error_occurred ? 0 : result < 0 ? -1 : 1;
	return result;
}
#else
#define BackfillTimestampToTimestamptz(ts, overflow) \
	timestamp2timestamptz_opt_overflow((ts), (overflow))
#define BackfillDateToTimestamptz(date, overflow) \
	date2timestamptz_opt_overflow((date), (overflow))
#endif

/*
 * BackfillFirstNewStorageSubid(rel) / BackfillNewStorageSubid(rel) /
 * BackfillAssumeNewStorage(rel)
 *		The relcache's record of a relation whose file was created in this
 *		transaction (with wal_level = minimal such a file skips WAL and is
 *		synced at commit), and the call that notes a new file.  16 renamed
 *		relfilenode to relfilelocator in these fields and in
 *		RelationAssumeNewRelfilenode.
 */
#if PG_VERSION_NUM >= 160000
#define BackfillFirstNewStorageSubid(rel) ((rel)->rd_firstRelfilelocatorSubid)
#define BackfillNewStorageSubid(rel) ((rel)->rd_newRelfilelocatorSubid)
#define BackfillAssumeNewStorage(rel) RelationAssumeNewRelfilelocator(rel)
#else
#define BackfillFirstNewStorageSubid(rel) ((rel)->rd_firstRelfilenodeSubid)
#define BackfillNewStorageSubid(rel) ((rel)->rd_newRelfilenodeSubid)
#define BackfillAssumeNewStorage(rel) RelationAssumeNewRelfilenode(rel)
#endif

/*
 * BackfillTupleDescFinalize(desc)
 *		A tuple descriptor built entry by entry (CreateTemplateTupleDesc,
 *		TupleDescInitEntry) is complete.  19 requires TupleDescFinalize
 *		before such a descriptor is used (it computes the offsets that
 *		deforming a tuple relies on); earlier releases have no such step.
 */
#if PG_VERSION_NUM >= 190000
#define BackfillTupleDescFinalize(desc) TupleDescFinalize(desc)
#else
#define BackfillTupleDescFinalize(desc) ((void) (desc))
#endif

#endif							/* BACKFILL_COMPAT_H */
