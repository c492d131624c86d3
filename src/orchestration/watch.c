/*-------------------------------------------------------------------------
 *
 * watch.c
 *	  Changed regions: watch and unwatch a target's source tables: the
 *	  checks, the catalog (backfill.watches) and what the watch says in
 *	  NOTICEs; the triggers it installs and drops are in watchtriggers.c,
 *	  their work (recording which of the target's chunks a write touched)
 *	  in watchlog.c.
 *
 * Watching and unwatching change backfill.watches and send the relcache
 * invalidation that empties every backend's cache of watches
 * (InvalidateWatchCache, watchlog.c's header says why).
 *
 *-------------------------------------------------------------------------
 */

#include "postgres.h"

#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "backfill.h"

/* ----------------------------------------------------------------
 *		watch and unwatch
 * ----------------------------------------------------------------
 */

/*
 * NoticeUnwatchedParent
 *		A NOTICE when source, a partition, is watched by target while none
 *		of its ancestors is: PostgreSQL fires statement triggers only on the
 *		table a statement names, so the updates and deletes made through
 *		the partitioned table are not recorded (its inserts are: the row
 *		triggers fire on the partition; a TRUNCATE of it is too: it fires
 *		the partitions' TRUNCATE triggers).  Caller is connected to SPI.
 */
static void
NoticeUnwatchedParent(Oid target, Oid source)
{
	List	   *ancestors = get_partition_ancestors(source);
	Oid			argtypes[2] = {REGCLASSOID, REGCLASSARRAYOID};
	Datum		values[2];
	bool		isnull;

	if (ancestors == NIL)
		return;
	values[0] = ObjectIdGetDatum(target);
	values[1] = MakeOidArray(ancestors, REGCLASSOID);
	CatalogExec("SELECT EXISTS (SELECT FROM backfill.watches"
				" WHERE target OPERATOR(pg_catalog.=) $1"
				" AND source OPERATOR(pg_catalog.=) ANY ($2))",
				2, argtypes, values, NULL, SPI_OK_SELECT);
	if (SpiGetBool(0, 1, &isnull))
		return;
	ereport(NOTICE,
			(errmsg("updates and deletes of %s through %s are not recorded",
					QualifiedRelName(source),
					QualifiedRelName(llast_oid(ancestors))),
			 errdetail("%s is a partition, and PostgreSQL fires statement triggers only on the table a statement names: updates and deletes made through a partitioned table above it are not seen by this watch (inserts are).",
					   QualifiedRelName(source)),
			 errhint("Watch %s as well, or instead, to record them.",
					 QualifiedRelName(llast_oid(ancestors)))));
}

/*
 * CheckSourceRights
 *		The rights on a watched source that watch and unwatch need besides
 *		those on the target: its owner (or a member of the owner's role),
 *		or the TRIGGER privilege on it; 42501 otherwise.  Watching puts
 *		triggers on the table, and unwatching stops the recording of its
 *		changes, so a role that may only rewrite the target can neither
 *		stop the recording of another role's source nor start one.  A
 *		source that no longer exists needs nothing.
 */
static void
CheckSourceRights(Oid source, bool watching)
{
	if (get_rel_name(source) == NULL)
		return;
	if (RelationOwnerCheck(source, GetUserId()) ||
		pg_class_aclcheck(source, GetUserId(), ACL_TRIGGER) == ACLCHECK_OK)
		return;
	if (watching)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to watch %s", QualifiedRelName(source)),
				 errdetail("Watching a table puts triggers on it, which needs the ownership of the table or the TRIGGER privilege on it."),
				 errhint("Ask the owner of %s to grant you TRIGGER on it, or to watch it.",
						 QualifiedRelName(source))));
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to unwatch %s", QualifiedRelName(source)),
			 errdetail("Unwatching a table stops the recording of its changes, which needs the ownership of the table or the TRIGGER privilege on it."),
			 errhint("Ask the owner of %s, or a role with the TRIGGER privilege on it, to unwatch it.",
					 QualifiedRelName(source))));
}

/*
 * CheckWatchedChunk
 *		See backfill.h.  A write to a watched source logs one row per chunk
 *		of the target it touches behind the watermark (watchlog.c), so a
 *		chunk of a microsecond would turn a load of 50,000 rows over four
 *		days from four log rows into 50,000, and slow the writer down with
 *		them; a watched target's chunk is at least an hour (a chunk of a
 *		month counts as 30 days, as interval comparison does), which bounds
 *		the rows a write logs to the hours its rows span.  The role that
 *		registers a new definition is often not the source's writer.
 */
void
CheckWatchedChunk(Oid target, const Interval *chunk, bool watching)
{
	Interval	floor = {BACKFILL_WATCH_MIN_CHUNK_USECS, 0, 0};
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	char	   *text_chunk;

	if (DatumGetInt32(DirectFunctionCall2(interval_cmp,
										  IntervalPGetDatum(chunk),
										  IntervalPGetDatum(&floor))) >= 0)
		return;
	text_chunk = DatumGetCString(DirectFunctionCall1(interval_out,
													 IntervalPGetDatum(chunk)));
	if (!watching)
	{
		values[0] = ObjectIdGetDatum(target);
		if (!CatalogExists("SELECT 1 FROM backfill.watches"
						   " WHERE target OPERATOR(pg_catalog.=) $1",
						   1, argtypes, values))
			return;
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chunk interval of a watched target must be at least 1 hour"),
				 errdetail("Table %s is watched (backfill.watches): a write to its sources records one row for each chunk it touches, and a chunk of %s would multiply those rows.",
						   QualifiedRelName(target), text_chunk),
				 errhint("Register it with a chunk of 1 hour or more, or unwatch it first.")));
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("chunk interval of a watched target must be at least 1 hour"),
			 errdetail("Table %s is registered with a chunk of %s: a write to a watched source records one row for each chunk it touches, and so small a chunk would multiply those rows.",
					   QualifiedRelName(target), text_chunk),
			 errhint("Register it with a chunk of 1 hour or more first.")));
}

/*
 * NoticeForeignPartitions
 *		A NOTICE naming the foreign partitions of source: they cannot carry
 *		triggers (SourceRelations skips them), so the writes made straight
 *		into them are not recorded.  Caller is connected to SPI.
 */
static void
NoticeForeignPartitions(Oid source)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	char	   *names;

	values[0] = ObjectIdGetDatum(source);
	SpiExecPinned("SELECT pg_catalog.string_agg(t.relid::pg_catalog.regclass::pg_catalog.text,"
				  "  ', ' ORDER BY t.relid)"
				  " FROM pg_catalog.pg_partition_tree($1) t"
				  " JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.relid"
				  " WHERE c.relkind OPERATOR(pg_catalog.=) 'f'",
				  1, argtypes, values, NULL, true, 1, SPI_OK_SELECT);
	names = SPI_processed > 0 ? SpiGetText(0, 1) : NULL;
	SPI_freetuptable(SPI_tuptable);
	if (names == NULL)
		return;
	ereport(NOTICE,
			(errmsg("writes into the foreign partitions of %s are not recorded",
					QualifiedRelName(source)),
			 errdetail("A foreign table cannot carry the triggers that record changes: %s.",
					   names),
			 errhint("Register the target with a ledger that counts those rows too: plan(..., only_chunks => 'stale') then also takes the chunks whose ledger moved.")));
}

/*
 * NoticeFilledElsewhere
 *		With settle not given (0), a NOTICE when backfill has not built the
 *		target up to its current chunk (its watermark is behind, or it has
 *		none): something else fills it, and the watch then records the
 *		writes into every chunk that has ended, on the assumption that the
 *		job that fills the table has built it by then; a write into a chunk
 *		before that is for that job to read.  With settle given, the user
 *		stated when that job builds a chunk, and nothing is said.  Caller
 *		is connected to SPI.
 */
static void
NoticeFilledElsewhere(Oid target, const Interval *chunk)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	bool		isnull;
	TimestampTz watermark = 0;
	TimestampTz lo;
	TimestampTz hi;

	values[0] = ObjectIdGetDatum(target);
	CatalogExec("SELECT COALESCE(t.watermark,"
				"  (SELECT pg_catalog.max(c.chunk_end) FROM backfill.chunks c"
				"    JOIN backfill.runs r ON r.run_id OPERATOR(pg_catalog.=) c.run_id"
				"   WHERE r.target OPERATOR(pg_catalog.=) t.target"
				"     AND c.status OPERATOR(pg_catalog.=) ANY ('{done,no_source}'::pg_catalog.text[])))"
				" FROM backfill.targets t WHERE t.target OPERATOR(pg_catalog.=) $1",
				1, argtypes, values, NULL, SPI_OK_SELECT);
	isnull = true;
	if (SPI_processed > 0)
		watermark = DatumGetTimestampTz(SpiGetDatumCopy(0, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	ChunkCell(GetCurrentTransactionStartTimestamp(), (Interval *) chunk,
			  &lo, &hi);
	if (!isnull && watermark >= lo)
		return;
	ereport(NOTICE,
			(errmsg("writes into the ended chunks of %s are recorded, also where backfill did not build them",
					QualifiedRelName(target)),
			 errhint("A stale plan rebuilds the recorded chunks that hold rows. If the job that fills the table builds a chunk some time after it ends (a daily job at 03:00: '3 hours'), watch with settle => that delay, so that the rows it still reads are not taken for late ones.")));
}

/*
 * WatchSource
 *		See backfill.h.  The caller must be able to rewrite the target
 *		(42501) and own the source or hold the TRIGGER privilege on it
 *		(42501, CheckSourceRights); the
 *		target must be registered (42704); the source must be a table or a
 *		partitioned table (42809: sources of other kinds are compared by
 *		their ledger instead); the time column must exist on the source
 *		with a time type; settle must lie between 0 and 100 years (22023).
 *		The watch records the session's TimeZone and settle (NULL: 0).
 *		Whatever the watch cannot follow it says in a NOTICE: a partition
 *		watched without its parent, foreign partitions, and, without
 *		settle, what it records of a target that backfill does not keep
 *		built (NoticeFilledElsewhere).
 */
bool
WatchSource(Oid target, Oid source, const char *time_column,
			const Interval *settle)
{
	char		relkind;
	CatalogArgs args;
	bool		isnull;
	bool		added;
	Interval	zero = {0, 0, 0};
	Interval	ceiling = {0, 0, 100 * MONTHS_PER_YEAR};
	const Interval *given = settle != NULL ? settle : &zero;

	CheckTargetPrivileges(target);
	(void) LoadDefinition(target, 0);
	relkind = get_rel_relkind(source);
	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", source)));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot watch %s", QualifiedRelName(source)),
				 errdetail("Only a table or a partitioned table can carry the triggers that record changes."),
				 errhint("For a view, a foreign table or data in another database, register the target with a ledger: plan(..., only_chunks => 'stale') then takes the chunks whose ledger moved.")));
	if (source == target)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a target cannot watch itself"),
				 errdetail("Every chunk build rewrites the target's rows and would mark its own chunk stale.")));
	CheckSourceRights(source, true);
	WatchCheckPartitionRights(source);
	(void) TimeColumnType(source, time_column);
	if (DatumGetInt32(DirectFunctionCall2(interval_cmp,
										  IntervalPGetDatum(given),
										  IntervalPGetDatum(&zero))) < 0 ||
		DatumGetInt32(DirectFunctionCall2(interval_cmp,
										  IntervalPGetDatum(given),
										  IntervalPGetDatum(&ceiling))) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("settle must lie between 0 and 100 years"),
				 errhint("settle is how long after a chunk ends the job that fills the table has built it, for example '3 hours'.")));

	TakeTargetPlanLock(target);
	/* the current definition, under the lock that register takes too */
	CheckWatchedChunk(target, LoadDefinition(target, 0)->chunk, true);
	CatalogArgsInit(&args);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(target), false);
	CatalogArg(&args, REGCLASSOID, ObjectIdGetDatum(source), false);
	CatalogArg(&args, NAMEOID, DirectFunctionCall1(namein, CStringGetDatum(time_column)), false);
	CatalogArgText(&args, GetConfigOption("TimeZone", false, false));
	CatalogArgText(&args, CurrentUserName());
	CatalogArg(&args, INTERVALOID, IntervalPGetDatum(given), false);
	CatalogExecArgs("INSERT INTO backfill.watches AS w"
					" (target, source, time_column, timezone, created_by, settle)"
					" VALUES ($1, $2, $3, $4, $5::pg_catalog.name, $6)"
					" ON CONFLICT (target, source) DO UPDATE"
					" SET time_column = EXCLUDED.time_column,"
					" timezone = EXCLUDED.timezone, settle = EXCLUDED.settle"
					" RETURNING w.xmax OPERATOR(pg_catalog.=) '0'::pg_catalog.xid",
					&args, SPI_OK_INSERT_RETURNING);
	/* every backend reads this source's watches again */
	InvalidateWatchCache();
	added = SpiGetBool(0, 1, &isnull);
	WatchInstallTriggers(source);
	if (get_rel_relispartition(source))
		NoticeUnwatchedParent(target, source);
	if (relkind == RELKIND_PARTITIONED_TABLE)
		NoticeForeignPartitions(source);
	else
		WatchNoticeChildren(target, source, time_column);
	if (settle == NULL)
		NoticeFilledElsewhere(target, LoadDefinition(target, 0)->chunk);
	return added;
}

/*
 * UnwatchSource
 *		See backfill.h.  The caller must be able to rewrite the target and
 *		hold the rights of CheckSourceRights on every source it unwatches
 *		(with source NULL, on every source the target watches): 42501
 *		before anything is removed.
 */
int32
UnwatchSource(Oid target, Oid source)
{
	CheckTargetPrivileges(target);
	TakeTargetPlanLock(target);
	if (OidIsValid(source))
		CheckSourceRights(source, false);
	else
	{
		Oid			argtypes[1] = {REGCLASSOID};
		Datum		values[1];
		List	   *sources = NIL;
		ListCell   *lc;
		uint64		k;

		values[0] = ObjectIdGetDatum(target);
		CatalogExec("SELECT source::pg_catalog.oid FROM backfill.watches"
					" WHERE target OPERATOR(pg_catalog.=) $1 ORDER BY 1",
					1, argtypes, values, NULL, SPI_OK_SELECT);
		for (k = 0; k < SPI_processed; k++)
		{
			bool		isnull;

			sources = lappend_oid(sources, SpiGetOid(k, 1, &isnull));
		}
		SPI_freetuptable(SPI_tuptable);
		foreach(lc, sources)
		{
			CHECK_FOR_INTERRUPTS();
			CheckSourceRights(lfirst_oid(lc), false);
		}
	}
	return WatchForgetTarget(target, source);
}

/*
 * WatchForgetTarget
 *		See backfill.h.  The log rows already recorded stay (the changes
 *		happened); a source no target watches any more loses its triggers
 *		(WatchDropTriggers).
 */
int32
WatchForgetTarget(Oid target, Oid source)
{
	Oid			argtypes[2] = {REGCLASSOID, REGCLASSOID};
	Datum		values[2];
	char		nulls[3] = "  ";
	List	   *sources = NIL;
	ListCell   *lc;
	uint64		k;
	int32		removed;

	values[0] = ObjectIdGetDatum(target);
	values[1] = ObjectIdGetDatum(source);
	if (!OidIsValid(source))
		nulls[1] = 'n';
	CatalogExec("DELETE FROM backfill.watches"
				" WHERE target OPERATOR(pg_catalog.=) $1"
				" AND ($2 IS NULL OR source OPERATOR(pg_catalog.=) $2)"
				" RETURNING source::pg_catalog.oid",
				2, argtypes, values, nulls, SPI_OK_DELETE_RETURNING);
	InvalidateWatchCache();
	removed = (int32) SPI_processed;
	for (k = 0; k < SPI_processed; k++)
	{
		bool		isnull;

		sources = lappend_oid(sources, SpiGetOid(k, 1, &isnull));
	}
	foreach(lc, sources)
	{
		Oid			src = lfirst_oid(lc);

		values[0] = ObjectIdGetDatum(src);
		if (CatalogExists("SELECT 1 FROM backfill.watches"
						  " WHERE source OPERATOR(pg_catalog.=) $1",
						  1, argtypes, values))
			continue;
		WatchDropTriggers(src);
	}
	return removed;
}
