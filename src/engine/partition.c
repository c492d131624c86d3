/*-------------------------------------------------------------------------
 *
 * partition.c
 *	  Partitioned targets: which leaf partitions a chunk touches, whether
 *	  the chunk covers them exactly, the choice of strategy ("auto"), the
 *	  truncate and swap strategies, and the chunk lock that locks only the
 *	  affected partitions.
 *
 * A chunk [lo, hi) is "aligned" when every leaf partition that can hold
 * rows of the range lies entirely inside it.  Only aligned chunks may be
 * replaced by TRUNCATE or by a swap: anything else would remove rows
 * outside the chunk.  Alignment is decided from the partition bounds in
 * the catalog, recursively through sub-partitioning:
 *	- a RANGE key on the time column alone (timestamptz, timestamp or date
 *	  with the default btree ordering) is compared with [lo, hi); bounds of
 *	  timestamp and date keys are read in the session TimeZone;
 *	- a partition entirely inside the range is affected with all its
 *	  descendants, whatever their keys;
 *	- a partition that overlaps the range only partly decides by its own
 *	  key; under any other key (list, hash, several columns, an
 *	  expression, another column) the chunk is unaligned;
 *	- a DEFAULT partition is affected when the non-default partitions do
 *	  not cover the whole range (it may then hold rows of the range).
 *
 * truncate empties the affected leaves with TRUNCATE ONLY and inserts the
 * source's rows; swap loads them into a fresh table without indexes and
 * exchanges its files with the leaf's (finish_heap_swap), so only the leaf
 * is ever locked exclusively and it keeps its identity.  Both give the
 * rows, figures and errors of the delete strategy (replace.c); the rules
 * that make them unsafe are in UnsafeReason and SwapObstacle, and
 * doc/partitions.md explains each.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "backfill.h"

/* One leaf partition that can hold rows of the chunk. */
typedef struct LeafPart
{
	Oid			relid;
	Oid			parent;			/* the partitioned table it is attached to */
	bool		time_bounds;	/* its own bounds are a range on time */
	TimestampTz lo;				/* its bounds, valid if time_bounds */
	TimestampTz hi;
	bool		is_default;
} LeafPart;

/* What the catalog says about a chunk of a partitioned target. */
typedef struct PartPlan
{
	bool		partitioned;	/* the target is a partitioned table */
	bool		aligned;		/* every affected leaf lies inside [lo, hi) */
	bool		default_affected;	/* a default partition may hold rows */
	char	   *why;			/* why not aligned, for messages */
	List	   *leaves;			/* of LeafPart * */
	List	   *parents;		/* partitioned tables visited, target first */
} PartPlan;

static void CollectLeaves(Oid relid, const char *time_column,
						  TimestampTz lo, TimestampTz hi, bool whole,
						  LOCKMODE parentlock, PartPlan *plan);
static bool BoundToTimestamptz(Const *c, Oid typid, TimestampTz *result);
static void PlanChunk(Oid target, const char *time_column,
					  TimestampTz lo, TimestampTz hi, LOCKMODE parentlock,
					  PartPlan *plan);
static char *UnsafeReason(PartPlan *plan, Oid target, bool check_truncate);
static void RunInsert(Oid into, const char *time_column,
					  const SourceQuery *source, TimestampTz lo,
					  TimestampTz hi, ReplaceResult *result);
static void SwapLeaf(LeafPart *leaf, const char *time_column,
					 const SourceQuery *source,
					 MemoryContext outcxt, ReplaceResult *result);
static void CheckSameLayout(Relation leaf, Relation fresh);
static bool Published(List *rels);
static bool DefaultsLikeTarget(Oid leaf, Oid target);
static char *SwapObstacle(LeafPart *leaf, Oid target);

/*
 * BoundToTimestamptz
 *		Convert a range bound of the key type to timestamptz (session
 *		TimeZone for timestamp and date).  Out-of-range values become
 *		-infinity / infinity.  Returns false for a type we do not handle.
 */
static bool
BoundToTimestamptz(Const *c, Oid typid, TimestampTz *result)
{
	int			overflow = 0;

	switch (typid)
	{
		case TIMESTAMPTZOID:
			*result = DatumGetTimestampTz(c->constvalue);
			return true;
		case TIMESTAMPOID:
			*result = BackfillTimestampToTimestamptz(DatumGetTimestamp(c->constvalue),
													 &overflow);
			break;
		case DATEOID:
			*result = BackfillDateToTimestamptz(DatumGetDateADT(c->constvalue),
												&overflow);
			break;
		default:
			return false;
	}
	if (overflow < 0)
		TIMESTAMP_NOBEGIN(*result);
	else if (overflow > 0)
		TIMESTAMP_NOEND(*result);
	return true;
}

/*
 * TimeRangeKey
 *		Whether partition key "key" is a range on the time column (attribute
 *		timeatt) alone, of type timestamptz, timestamp or date, under the
 *		default btree operator family of its type: then each partition's
 *		bounds say which times it holds.
 */
static bool
TimeRangeKey(PartitionKey key, AttrNumber timeatt)
{
	Oid			opclass;

	if (!(key->strategy == PARTITION_STRATEGY_RANGE && key->partnatts == 1 &&
		  key->partattrs[0] != 0 && key->partattrs[0] == timeatt &&
		  (key->parttypid[0] == TIMESTAMPTZOID ||
		   key->parttypid[0] == TIMESTAMPOID ||
		   key->parttypid[0] == DATEOID)))
		return false;
	opclass = GetDefaultOpClass(key->parttypid[0], BTREE_AM_OID);
	return OidIsValid(opclass) &&
		get_opclass_family(opclass) == key->partopfamily[0];
}

/*
 * PartitionTimeBounds
 *		The bounds of partition "child" of a table partitioned by a range on
 *		time (TimeRangeKey; keytype: the key's type) as timestamptz, into
 *		*clo and *chi (MINVALUE and MAXVALUE as -infinity and infinity);
 *		false for the default partition, which has none.  The bound's parse
 *		tree lives in boundcxt, reset first: it is needed for this
 *		partition only.
 */
static bool
PartitionTimeBounds(Oid child, Oid keytype, MemoryContext boundcxt,
					TimestampTz *clo, TimestampTz *chi)
{
	HeapTuple	tup;
	Datum		d;
	bool		isnull;
	PartitionBoundSpec *spec;
	PartitionRangeDatum *l;
	PartitionRangeDatum *u;
	MemoryContext oldcxt;

	MemoryContextReset(boundcxt);
	oldcxt = MemoryContextSwitchTo(boundcxt);
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(child));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "backfill: cache lookup failed for relation %u", child);
	d = SysCacheGetAttr(RELOID, tup, Anum_pg_class_relpartbound, &isnull);
	if (isnull)
		elog(ERROR, "backfill: partition %u has no bound", child);
	spec = (PartitionBoundSpec *) stringToNode(TextDatumGetCString(d));
	ReleaseSysCache(tup);
	MemoryContextSwitchTo(oldcxt);

	if (spec->is_default)
		return false;
	l = linitial(spec->lowerdatums);
	u = linitial(spec->upperdatums);
	if (l->kind == PARTITION_RANGE_DATUM_MINVALUE)
		TIMESTAMP_NOBEGIN(*clo);
	else if (l->kind == PARTITION_RANGE_DATUM_MAXVALUE)
		TIMESTAMP_NOEND(*clo);
	else if (!BoundToTimestamptz(castNode(Const, l->value), keytype, clo))
		elog(ERROR, "backfill: unexpected partition bound type");
	if (u->kind == PARTITION_RANGE_DATUM_MINVALUE)
		TIMESTAMP_NOBEGIN(*chi);
	else if (u->kind == PARTITION_RANGE_DATUM_MAXVALUE)
		TIMESTAMP_NOEND(*chi);
	else if (!BoundToTimestamptz(castNode(Const, u->value), keytype, chi))
		elog(ERROR, "backfill: unexpected partition bound type");
	return true;
}

/*
 * SpansCover
 *		Whether the spans span_lo[i] to span_hi[i] (nspans of them, in
 *		bound order) cover [lo, hi) without a gap.
 */
static bool
SpansCover(TimestampTz lo, TimestampTz hi, const TimestampTz *span_lo,
		   const TimestampTz *span_hi, int nspans)
{
	TimestampTz covered = lo;
	int			i;

	for (i = 0; i < nspans && span_lo[i] <= covered; i++)
	{
		if (span_hi[i] > covered)
			covered = span_hi[i];
	}
	return covered >= hi;
}

/*
 * AddLeaf
 *		Add leaf partition "child" of partitioned table "parent" to plan,
 *		with its bounds [lo, hi) when time_bounds.
 */
static void
AddLeaf(PartPlan *plan, Oid child, Oid parent, bool time_bounds,
		TimestampTz lo, TimestampTz hi, bool is_default)
{
	LeafPart   *leaf = palloc0(sizeof(LeafPart));

	leaf->relid = child;
	leaf->parent = parent;
	leaf->time_bounds = time_bounds;
	leaf->lo = lo;
	leaf->hi = hi;
	leaf->is_default = is_default;
	plan->leaves = lappend(plan->leaves, leaf);
}

/*
 * CollectLeaves
 *		Add to plan the leaves under partitioned table relid that can hold
 *		rows of [lo, hi).  "whole" says relid itself lies entirely inside
 *		the range, so all its descendants are affected and aligned.
 *		Partitioned tables are locked in parentlock before their partition
 *		descriptor is read.
 */
static void
CollectLeaves(Oid relid, const char *time_column,
			  TimestampTz lo, TimestampTz hi, bool whole,
			  LOCKMODE parentlock, PartPlan *plan)
{
	Relation	rel;
	PartitionKey key;
	PartitionDesc pd;
	AttrNumber	timeatt;
	bool		timekey;
	int			default_idx = -1;
	TimestampTz *span_lo;		/* bounds of the affected partitions */
	TimestampTz *span_hi;
	int			nspans = 0;
	int			i;
	MemoryContext boundcxt;

	rel = table_open(relid, parentlock);
	plan->parents = lappend_oid(plan->parents, relid);
	key = RelationGetPartitionKey(rel);
	pd = RelationGetPartitionDesc(rel, true);
	timeatt = get_attnum(relid, time_column);
	span_lo = palloc(sizeof(TimestampTz) * (pd->nparts + 1));
	span_hi = palloc(sizeof(TimestampTz) * (pd->nparts + 1));

	timekey = TimeRangeKey(key, timeatt);
	if (!whole && !timekey && plan->why == NULL)
		plan->why = psprintf("The partition key of \"%s\" is not a range on column \"%s\" alone",
							 RelationGetRelationName(rel), time_column);

	boundcxt = AllocSetContextCreate(CurrentMemoryContext,
									 "backfill partition bound",
									 ALLOCSET_SMALL_SIZES);
	for (i = 0; i < pd->nparts; i++)
	{
		Oid			child = pd->oids[i];
		bool		child_whole = whole;
		bool		has_bounds = false;
		TimestampTz clo = 0;
		TimestampTz chi = 0;

		CHECK_FOR_INTERRUPTS();
		if (!whole && timekey)
		{
			if (!PartitionTimeBounds(child, key->parttypid[0], boundcxt,
									 &clo, &chi))
			{
				default_idx = i;
				continue;		/* decided after the others */
			}
			has_bounds = true;

			/* [clo, chi) and [lo, hi) do not meet: not affected */
			if (!(clo < hi && chi > lo))
				continue;
			child_whole = (clo >= lo && chi <= hi);
			span_lo[nspans] = clo;
			span_hi[nspans++] = chi;
		}

		/* a partly covered sub-partitioned table: its own key decides */
		if (get_rel_relkind(child) == RELKIND_PARTITIONED_TABLE)
			CollectLeaves(child, time_column, lo, hi, child_whole,
						  parentlock, plan);
		else
		{
			if (!child_whole)
			{
				plan->aligned = false;
				if (has_bounds && plan->why == NULL)
					plan->why = psprintf("Partition \"%s\" holds [%s, %s), which the range covers only partly",
										 get_rel_name(child),
										 TimestampText(clo), TimestampText(chi));
			}
			AddLeaf(plan, child, relid, has_bounds, clo, chi,
					get_default_oid_from_partdesc(pd) == child);
		}
	}

	/*
	 * The default partition may hold rows of [lo, hi) unless the affected
	 * bounded partitions cover it without a gap.  They come in bound order.
	 */
	if (default_idx >= 0 && !SpansCover(lo, hi, span_lo, span_hi, nspans))
	{
		Oid			child = pd->oids[default_idx];

		plan->default_affected = true;
		plan->aligned = false;
		if (plan->why == NULL)
			plan->why = psprintf("Default partition \"%s\" may hold rows of the range",
								 get_rel_name(child));
		if (get_rel_relkind(child) == RELKIND_PARTITIONED_TABLE)
			CollectLeaves(child, time_column, lo, hi, false, parentlock, plan);
		else
			AddLeaf(plan, child, relid, false, 0, 0, true);
	}

	MemoryContextDelete(boundcxt);
	table_close(rel, NoLock);
}

/*
 * PlanChunk
 *		Fill plan for [lo, hi) of target.
 */
static void
PlanChunk(Oid target, const char *time_column,
		  TimestampTz lo, TimestampTz hi, LOCKMODE parentlock,
		  PartPlan *plan)
{
	memset(plan, 0, sizeof(PartPlan));
	if (get_rel_relkind(target) != RELKIND_PARTITIONED_TABLE)
		return;
	plan->partitioned = true;
	plan->aligned = true;
	CollectLeaves(target, time_column, lo, hi, false, parentlock, plan);
	if (plan->leaves == NIL)
	{
		plan->aligned = false;
		if (plan->why == NULL)
			plan->why = pstrdup("No partition holds rows of the range");
	}
}

/*
 * LockAffectedPartitions
 *		The chunk lock of a partitioned target: the target and the
 *		partitioned tables between it and the affected leaves in
 *		RowExclusiveLock (the lock any writer takes, so writers to other
 *		partitions go on and nobody can detach or drop the leaves), then
 *		the affected leaves only: in "mode", or in AccessExclusiveLock when
 *		"strategy" resolves to truncate or swap for this chunk, which need
 *		it anyway: taking it here, in the run's lock phase, bounds the wait
 *		by backfill.lock_timeout and turns a timeout into a deferral
 *		instead of a failure midway.  A table that is not partitioned is
 *		locked in "mode" itself.  Lock waits are bounded by the session's
 *		lock_timeout.
 */
void
LockAffectedPartitions(Oid target, const char *time_column,
					   TimestampTz lo, TimestampTz hi, ReplaceStrategy strategy,
					   int mode)
{
	PartPlan	plan;
	ListCell   *lc;
	ReplaceStrategy chosen;

	if (get_rel_relkind(target) != RELKIND_PARTITIONED_TABLE)
	{
		LockRelationOid(target, mode);
		return;
	}
	PlanChunk(target, time_column, lo, hi, RowExclusiveLock, &plan);
	chosen = ChooseStrategy(target, time_column, strategy, lo, hi);
	if (chosen != STRATEGY_DELETE)
		mode = AccessExclusiveLock;
	foreach(lc, plan.leaves)
		LockRelationOid(((LeafPart *) lfirst(lc))->relid, mode);
}

/*
 * UnsafeReason
 *		Why TRUNCATE or a swap of the affected leaves would not be the same
 *		as DELETE of the range, or NULL when it is.  The rules:
 *		- the target is not partitioned, or the chunk is not aligned, or a
 *		  default partition may hold rows of it;
 *		- a user trigger on the target, an intermediate partitioned table or
 *		  an affected leaf (TRUNCATE fires no row triggers);
 *		- a foreign key pointing at any of them (TRUNCATE fails);
 *		- row-level security enabled on any of them (TRUNCATE would remove
 *		  rows the policies hide);
 *		- an affected leaf is a foreign table (its rows live elsewhere);
 *		- with check_truncate, no TRUNCATE privilege on an affected leaf.
 */
static char *
UnsafeReason(PartPlan *plan, Oid target, bool check_truncate)
{
	List	   *rels = NIL;
	ListCell   *lc;

	if (!plan->partitioned)
		return psprintf("Table \"%s\" is not partitioned", get_rel_name(target));
	if (!plan->aligned)
		return plan->why;

	rels = list_copy(plan->parents);
	foreach(lc, plan->leaves)
		rels = lappend_oid(rels, ((LeafPart *) lfirst(lc))->relid);

	if (Published(rels))
		return psprintf("Table \"%s\" or one of its partitions is published for logical replication",
						get_rel_name(target));

	foreach(lc, rels)
	{
		Oid			relid = lfirst_oid(lc);
		Relation	rel = table_open(relid, AccessShareLock);
		char	   *reason = NULL;

		if (rel->rd_rel->relkind == RELKIND_FOREIGN_TABLE)
			reason = psprintf("Partition \"%s\" is a foreign table",
							  RelationGetRelationName(rel));
		else if (rel->rd_rel->relrowsecurity)
			reason = psprintf("Table \"%s\" has row-level security enabled",
							  RelationGetRelationName(rel));
		else if (rel->trigdesc != NULL)
		{
			int			i;

			for (i = 0; i < rel->trigdesc->numtriggers && reason == NULL; i++)
			{
				Trigger    *trig = &rel->trigdesc->triggers[i];

				if (RI_FKey_trigger_type(trig->tgfoid) == RI_TRIGGER_PK)
					reason = psprintf("A foreign key references \"%s\"",
									  RelationGetRelationName(rel));
				else if (!trig->tgisinternal)
					reason = psprintf("Table \"%s\" has trigger \"%s\"",
									  RelationGetRelationName(rel),
									  trig->tgname);
			}
		}
		if (reason == NULL && check_truncate &&
			rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE &&
			pg_class_aclcheck(relid, GetUserId(), ACL_TRUNCATE) != ACLCHECK_OK)
			reason = psprintf("No TRUNCATE privilege on \"%s\"",
							  RelationGetRelationName(rel));
		table_close(rel, NoLock);
		if (reason != NULL)
			return reason;
	}
	return NULL;
}

/*
 * Published
 *		Whether any of rels is in a publication (directly, through its
 *		schema, or by a FOR ALL TABLES publication).  A subscriber would
 *		not see a swap's exchange at all, nor a TRUNCATE unless the
 *		publication publishes truncate: it would keep the old rows and
 *		receive the new ones as well.
 */
static bool
Published(List *rels)
{
	Oid			argtypes[1] = {OIDARRAYOID};
	Datum		values[1];
	bool		isnull;
	bool		published;

	values[0] = MakeOidArray(rels, OIDOID);

	SpiConnect();
	SpiExecPinned("SELECT EXISTS (SELECT FROM pg_catalog.pg_publication p WHERE p.puballtables)"
				  " OR EXISTS (SELECT FROM pg_catalog.pg_publication_rel r"
				  "            WHERE r.prrelid OPERATOR(pg_catalog.=) ANY ($1))"
				  " OR EXISTS (SELECT FROM pg_catalog.pg_publication_namespace pn"
				  "              JOIN pg_catalog.pg_class c"
				  "                ON c.relnamespace OPERATOR(pg_catalog.=) pn.pnnspid"
				  "            WHERE c.oid OPERATOR(pg_catalog.=) ANY ($1))",
				  1, argtypes, values, NULL, true, 1, SPI_OK_SELECT);
	published = SpiGetBool(0, 1, &isnull);
	SpiFinish();
	return published;
}

/*
 * DefaultsLikeTarget
 *		Whether writing into the leaf directly gives the rows that writing
 *		through the target gives: no identity column on the target (its
 *		sequence is used only through the target) and the same default
 *		expression, or none, for every column.
 */
static bool
DefaultsLikeTarget(Oid leaf, Oid target)
{
	Relation	trel = table_open(target, AccessShareLock);
	TupleDesc	td = RelationGetDescr(trel);
	bool		same = true;
	int			i;

	for (i = 0; same && i < td->natts; i++)
	{
		Form_pg_attribute ta = TupleDescAttr(td, i);
		AttrNumber	la;
		Node	   *tdef;
		Node	   *ldef;

		if (ta->attisdropped)
			continue;
		if (ta->attidentity != '\0')
		{
			same = false;
			break;
		}
		la = get_attnum(leaf, NameStr(ta->attname));
		tdef = ta->atthasdef ? build_column_default(trel, ta->attnum) : NULL;
		if (la == InvalidAttrNumber)
		{
			same = false;
			break;
		}
		{
			Relation	lrel = table_open(leaf, AccessShareLock);

			ldef = TupleDescAttr(RelationGetDescr(lrel), la - 1)->atthasdef ?
				build_column_default(lrel, la) : NULL;
			table_close(lrel, NoLock);
		}
		/* a generated column is computed on the leaf anyway */
		if (ta->attgenerated == '\0')
			same = equal(tdef, ldef);
	}
	table_close(trel, NoLock);
	return same;
}

/*
 * SwapObstacle
 *		Why a leaf cannot be swapped even though it could be truncated, or
 *		NULL: the swap fills a table made LIKE the leaf (its defaults, CHECK
 *		and NOT NULL constraints, generated columns) and exchanges files,
 *		so the leaf needs its own time range bounds, no dropped columns
 *		(same row layout), no foreign keys of its own (the new rows would
 *		not be checked), defaults like the target's and no identity column
 *		on the target, and the user needs CREATE on the leaf's schema and
 *		TRUNCATE on the leaf.
 */
static char *
SwapObstacle(LeafPart *leaf, Oid target)
{
	Relation	rel;
	char	   *reason = NULL;
	int			i;

	if (!leaf->time_bounds)
		return psprintf("Partition \"%s\" is not bounded by a range of the time column",
						get_rel_name(leaf->relid));
	rel = table_open(leaf->relid, AccessShareLock);
	for (i = 0; i < RelationGetDescr(rel)->natts && reason == NULL; i++)
		if (TupleDescAttr(RelationGetDescr(rel), i)->attisdropped)
			reason = psprintf("Partition \"%s\" has dropped columns, so its rows are laid out unlike a new table's",
							  RelationGetRelationName(rel));
	if (reason == NULL && RelationGetFKeyList(rel) != NIL)
		reason = psprintf("Partition \"%s\" has foreign keys, which a swap would not check",
						  RelationGetRelationName(rel));
	if (reason == NULL && !DefaultsLikeTarget(leaf->relid, target))
		reason = psprintf("The defaults of partition \"%s\" differ from those of \"%s\", or \"%s\" has an identity column",
						  RelationGetRelationName(rel), get_rel_name(target),
						  get_rel_name(target));
	if (reason == NULL &&
		NamespaceAclCheck(RelationGetNamespace(rel), GetUserId(),
						  ACL_CREATE) != ACLCHECK_OK)
		reason = psprintf("No CREATE privilege on the schema of \"%s\"",
						  RelationGetRelationName(rel));
	if (reason == NULL &&
		pg_class_aclcheck(leaf->relid, GetUserId(), ACL_TRUNCATE) != ACLCHECK_OK)
		reason = psprintf("No TRUNCATE privilege on \"%s\"",
						  RelationGetRelationName(rel));
	table_close(rel, NoLock);
	return reason;
}

/*
 * ChooseStrategy
 *		The strategy to use for [lo, hi) of target: "delete", "truncate" or
 *		"swap".  "auto" (or NULL) picks "swap" when the chunk is aligned,
 *		TRUNCATE would be safe (UnsafeReason) and every affected leaf can
 *		be swapped (SwapObstacle); "truncate" when only the swap is ruled
 *		out; else "delete".  An explicit "truncate" or "swap" that is not
 *		safe is an error, never a partial or silent replacement.
 */
ReplaceStrategy
ChooseStrategy(Oid target, const char *time_column, ReplaceStrategy strategy,
			   TimestampTz lo, TimestampTz hi)
{
	PartPlan	plan;
	char	   *reason;
	bool		is_auto = (strategy == STRATEGY_AUTO);
	const char *requested = StrategyName(strategy);

	if (strategy == STRATEGY_DELETE)
		return STRATEGY_DELETE;
	CitusCheckStrategy(target, strategy);	/* Citus: no swap */

	PlanChunk(target, time_column, lo, hi, AccessShareLock, &plan);
	reason = UnsafeReason(&plan, target, is_auto);
	if (is_auto)
	{
		ListCell   *lc;

		if (reason != NULL)
			return STRATEGY_DELETE;
		if (CitusForbidsSwap(target))	/* Citus: auto never swaps */
			return STRATEGY_TRUNCATE;
		foreach(lc, plan.leaves)
		{
			if (SwapObstacle(lfirst(lc), target) != NULL)
				return STRATEGY_TRUNCATE;
		}
		return STRATEGY_SWAP;
	}
	if (reason != NULL)
	{
		if (!plan.partitioned)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("strategy \"%s\" needs a partitioned table", requested),
					 errdetail("Table \"%s\" is not partitioned.", get_rel_name(target)),
					 errhint("Use strategy \"delete\" or \"auto\".")));
		if (!plan.aligned && !plan.default_affected)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("range [%s, %s) does not cover whole partitions of \"%s\"",
							TimestampText(lo), TimestampText(hi),
							get_rel_name(target)),
					 errdetail("Strategy \"%s\" replaces whole partitions only.  %s.",
							   requested, reason),
					 errhint("Use strategy \"delete\" or \"auto\", or chunks that match the partition bounds.")));
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("strategy \"%s\" cannot replace [%s, %s) of \"%s\" safely",
						requested, TimestampText(lo), TimestampText(hi),
						get_rel_name(target)),
				 errdetail("%s.", reason),
				 errhint("Use strategy \"delete\" or \"auto\".")));
	}
	if (strategy == STRATEGY_SWAP)
	{
		ListCell   *lc;

		foreach(lc, plan.leaves)
		{
			LeafPart   *leaf = lfirst(lc);
			char	   *obstacle = SwapObstacle(leaf, target);

			if (obstacle != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("strategy \"swap\" cannot replace partition \"%s\"",
								get_rel_name(leaf->relid)),
						 errdetail("%s.", obstacle),
						 errhint("Use strategy \"truncate\" or \"auto\".")));
		}
	}
	return strategy;
}

/*
 * RunInsert
 *		Run the statement from ComposeSourceInsert that inserts source's
 *		rows for [lo, hi) into "into" and add the rows inserted to result.
 *		Caller is connected to SPI.
 */
static void
RunInsert(Oid into, const char *time_column, const SourceQuery *source,
		  TimestampTz lo, TimestampTz hi, ReplaceResult *result)
{
	Oid			argtypes[4];
	Datum		values[4];

	SourceInsertParams(into, time_column, lo, hi, argtypes, values);
	SpiExec(ComposeSourceInsert(into, time_column, source), 4, argtypes,
			values, NULL, false, 0, SPI_OK_INSERT);
	result->rows_inserted += SPI_processed;
}

/*
 * PartitionReplaceRange
 *		Replace [lo, hi) of a partitioned target by TRUNCATE or swap, the
 *		strategy ChooseStrategy chose, filling result.
 *
 *		truncate: count (and measure) the rows of the range, TRUNCATE ONLY
 *		the affected leaves, then INSERT the source's rows straight into
 *		the leaf when the chunk is one leaf the user may INSERT into and
 *		whose defaults are the target's, else through the target.
 *		swap: see SwapLeaf, for every affected leaf; the measure over the
 *		new rows is read back from the target afterwards (one more scan of
 *		the range).
 */
void
PartitionReplaceRange(const ReplaceRequest *req, const SourceQuery *source,
					  ReplaceStrategy chosen, ReplaceResult *result)
{
	Oid			target = req->target;
	const char *time_column = req->time_column;
	TimestampTz lo = req->lo;
	TimestampTz hi = req->hi;
	const char *measure = req->measure;
	const ArchiveKeep *keep = req->keep;
	PartPlan	plan;
	MemoryContext outcxt = CurrentMemoryContext;
	ListCell   *lc;

	Assert(chosen == STRATEGY_TRUNCATE || chosen == STRATEGY_SWAP);
	result->rows_deleted = 0;
	result->rows_inserted = 0;
	result->have_values = (measure != NULL);
	result->before_null = true;
	result->after_null = true;
	result->strategy = chosen;

	SpiConnect();
	PlanChunk(target, time_column, lo, hi, RowExclusiveLock, &plan);
	MeasureRange(target, time_column, lo, hi, measure, outcxt, result);

	/* keeping: the leaves' files move into the archive, the leaves empty */
	if (keep != NULL)
	{
		List	   *oids = NIL;

		foreach(lc, plan.leaves)
			oids = lappend_oid(oids, ((LeafPart *) lfirst(lc))->relid);
		ArchiveKeepLeaves(target, oids, keep, result->rows_deleted);
	}

	if (chosen == STRATEGY_TRUNCATE)
	{
		StringInfoData sql;
		Oid			into = target;

		initStringInfo(&sql);
		appendStringInfoString(&sql, "TRUNCATE ONLY ");
		foreach(lc, plan.leaves)
			appendStringInfo(&sql, "%s%s", foreach_current_index(lc) > 0 ? ", " : "",
							 QualifiedRelName(((LeafPart *) lfirst(lc))->relid));
		if (keep == NULL)
			SpiExec(sql.data, 0, NULL, NULL, NULL, false, 0, SPI_OK_UTILITY);

		if (list_length(plan.leaves) == 1 &&
			pg_class_aclcheck(((LeafPart *) linitial(plan.leaves))->relid,
							  GetUserId(), ACL_INSERT) == ACLCHECK_OK &&
			DefaultsLikeTarget(((LeafPart *) linitial(plan.leaves))->relid, target))
			into = ((LeafPart *) linitial(plan.leaves))->relid;
		RunInsert(into, time_column, source, lo, hi, result);
	}
	else
	{
		foreach(lc, plan.leaves)
		{
			CHECK_FOR_INTERRUPTS();
			SwapLeaf(lfirst(lc), time_column, source, outcxt, result);
		}
	}

	/* the measure over the new rows, all leaves together */
	if (measure != NULL)
	{
		ReplaceResult after;

		MeasureRange(target, time_column, lo, hi, measure, outcxt, &after);
		result->after_value = after.before_value;
		result->after_null = after.before_null;
	}

	SpiFinish();
}

/*
 * PartitionCanKeepLeaves
 *		See backfill.h.
 */
bool
PartitionCanKeepLeaves(Oid target, const char *time_column,
					   TimestampTz lo, TimestampTz hi)
{
	PartPlan	plan;
	ListCell   *lc;

	if (CitusForbidsSwap(target))
		return false;
	PlanChunk(target, time_column, lo, hi, AccessShareLock, &plan);
	if (plan.leaves == NIL)
		return false;
	foreach(lc, plan.leaves)
	{
		if (!KeptLeafEligible(((LeafPart *) lfirst(lc))->relid))
			return false;
	}
	return true;
}

/*
 * CheckSameLayout
 *		The swap exchanges the files of the leaf and of the fresh table, so
 *		their rows must be laid out alike: the same attributes in the same
 *		order with the same physical types.  A leaf with dropped columns (or
 *		one attached with another column order) does not qualify.
 */
static void
CheckSameLayout(Relation leaf, Relation fresh)
{
	TupleDesc	ld = RelationGetDescr(leaf);
	TupleDesc	fd = RelationGetDescr(fresh);
	bool		same = (ld->natts == fd->natts &&
						leaf->rd_rel->relam == fresh->rd_rel->relam);
	int			i;

	for (i = 0; same && i < ld->natts; i++)
	{
		Form_pg_attribute la = TupleDescAttr(ld, i);
		Form_pg_attribute fa = TupleDescAttr(fd, i);

		same = (!la->attisdropped && !fa->attisdropped &&
				la->atttypid == fa->atttypid && la->attlen == fa->attlen &&
				la->attbyval == fa->attbyval && la->attalign == fa->attalign &&
				la->atttypmod == fa->atttypmod &&
				strcmp(NameStr(la->attname), NameStr(fa->attname)) == 0);
	}
	if (!same)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("strategy \"swap\" cannot replace partition \"%s\"",
						RelationGetRelationName(leaf)),
				 errdetail("The partition's rows are not laid out like a new table of the same columns (it has dropped columns or another column order)."),
				 errhint("Use strategy \"truncate\" or \"auto\".")));
}

/*
 * SwapLeaf
 *		Replace one leaf partition's rows by exchanging its files with those
 *		of a fresh table holding the source's rows for the leaf's bounds:
 *		1. CREATE TABLE fresh (LIKE leaf INCLUDING DEFAULTS INCLUDING
 *		   CONSTRAINTS INCLUDING GENERATED) WITH (the leaf's fillfactor) in
 *		   the leaf's schema: no index;
 *		   NOT NULL, CHECK, defaults and generated columns are enforced on
 *		   the way in (the partition bound by backfill._in_range);
 *		2. INSERT the source's rows: a fast load into a table without
 *		   indexes, with no lock on the leaf beyond the chunk's;
 *		3. take ACCESS EXCLUSIVE on the leaf (bounded by lock_timeout) and
 *		   exchange the two tables' files, rebuild the leaf's indexes on the
 *		   new rows (checking its unique constraints) and drop the fresh
 *		   table, now holding the old rows: finish_heap_swap, the step
 *		   CLUSTER and VACUUM FULL end with.
 *		The leaf keeps its OID, name, bounds, indexes, constraints, owner,
 *		privileges, comments, triggers and statistics objects; the parent
 *		is not locked beyond the chunk's lock, so readers of every other
 *		partition go on.  Readers of this leaf wait from step 3 to commit.
 */
static void
SwapLeaf(LeafPart *leaf, const char *time_column,
		 const SourceQuery *source, MemoryContext outcxt,
		 ReplaceResult *result)
{
	Oid			nspid = get_rel_namespace(leaf->relid);
	char	   *nsp = get_namespace_name(nspid);
	char	   *freshname = ChooseRelationName(get_rel_name(leaf->relid), NULL,
												"backfill", nspid, false);
	char	   *qfresh = quote_qualified_identifier(nsp, freshname);
	char		persistence = get_rel_persistence(leaf->relid);
	Oid			freshoid;
	Relation	leafrel;
	Relation	freshrel;
	TransactionId frozenxid;
	MultiXactId minmulti;
	int			fillfactor;
	char	   *sql;

	/* 1. the fresh table, its pages filled as the leaf's would be */
	leafrel = table_open(leaf->relid, AccessShareLock);
	fillfactor = RelationGetFillFactor(leafrel, HEAP_DEFAULT_FILLFACTOR);
	table_close(leafrel, NoLock);
	sql = psprintf("CREATE %sTABLE %s (LIKE %s INCLUDING DEFAULTS "
				   "INCLUDING CONSTRAINTS INCLUDING GENERATED) WITH (fillfactor = %d)",
				   persistence == RELPERSISTENCE_UNLOGGED ? "UNLOGGED " : "",
				   qfresh, QualifiedRelName(leaf->relid), fillfactor);
	SpiExec(sql, 0, NULL, NULL, NULL, false, 0, SPI_OK_UTILITY);
	freshoid = get_relname_relid(freshname, nspid);
	if (!OidIsValid(freshoid))
		elog(ERROR, "backfill: new table %s not found", qfresh);

	leafrel = table_open(leaf->relid, AccessShareLock);
	freshrel = table_open(freshoid, AccessExclusiveLock);
	CheckSameLayout(leafrel, freshrel);
	table_close(leafrel, NoLock);
	table_close(freshrel, NoLock);

	/* 2. the rows */
	RunInsert(freshoid, time_column, source, leaf->lo, leaf->hi, result);

	/* 3. the exchange, under ACCESS EXCLUSIVE on the leaf only */
	LockRelationOid(leaf->relid, AccessExclusiveLock);
	freshrel = table_open(freshoid, NoLock);
	frozenxid = freshrel->rd_rel->relfrozenxid;
	minmulti = freshrel->rd_rel->relminmxid;
	table_close(freshrel, NoLock);
	CommandCounterIncrement();
	BackfillFinishHeapSwap(leaf->relid, freshoid, false, false, true, true,
						   frozenxid, minmulti, persistence);
	CommandCounterIncrement();
}
