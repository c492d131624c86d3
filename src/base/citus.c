/*-------------------------------------------------------------------------
 *
 * citus.c
 *	  What backfill needs to know about Citus: whether this node is a Citus
 *	  worker (backfill runs on the coordinator only), which kind of Citus
 *	  table a relation is, and which strategies Citus tables allow.
 *
 * Nothing here links against Citus or needs it installed.  Citus is
 * detected by its extension (pg_extension row "citus"); only then is its
 * metadata read, by SPI, from pg_catalog.pg_dist_local_group and
 * pg_catalog.pg_dist_partition (both readable by every role).  Without
 * the citus extension every function here is a cheap no-op.
 *
 * The rest of backfill calls in at three places (marked "Citus" there):
 * every SQL entry point (src/api) that reads the catalog or a user table
 * calls CitusRequireCoordinator first; ChooseStrategy (partition.c) and
 * SetTargetStrategy (registry.c) apply the strategy rules.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/varlena.h"

#include "backfill.h"

/*
 * CitusPreloaded
 *		Whether shared_preload_libraries names citus (as "citus", a path
 *		ending in it, or either with ".so").  Citus refuses to load any
 *		other way, so without it no citus extension can be in use here.
 *		The setting is fixed at server start: read once per backend.
 */
static bool
CitusPreloaded(void)
{
	static int	preloaded = -1;

	if (preloaded < 0)
	{
		const char *libs = GetConfigOption("shared_preload_libraries", true, false);
		char	   *copy = pstrdup(libs != NULL ? libs : "");
		List	   *names = NIL;
		ListCell   *lc;

		preloaded = 0;
		if (SplitDirectoriesString(copy, ',', &names))
		{
			foreach(lc, names)
			{
				const char *name = (const char *) lfirst(lc);
				const char *base = strrchr(name, '/');

				base = base != NULL ? base + 1 : name;
				if (strcmp(base, "citus") == 0 || strcmp(base, "citus.so") == 0)
					preloaded = 1;
			}
		}
		list_free_deep(names);
		pfree(copy);
	}
	return preloaded == 1;
}

/*
 * CitusInstalled
 *		Whether the citus extension exists in this database (and can be in
 *		use: CitusPreloaded, which spares every other server the catalog
 *		lookup that each entry point and watch trigger would make).
 */
static bool
CitusInstalled(void)
{
	return CitusPreloaded() && OidIsValid(get_extension_oid("citus", true));
}

/*
 * CitusForbidsLockGroups
 *		See backfill.h.  Citus reads the distributed transaction of a
 *		member of a lock group from the group leader's backend data
 *		(GetBackendDataForProc), while the member's own coordinated
 *		transaction is recorded in its own.  A parallel chunk's worker in
 *		its session's lock group therefore tells the nodes transaction
 *		number 0 (the session is idle) or the session's: the nodes then
 *		keep a subplan's intermediate results per connection ("could not
 *		find the intermediate result file", measured with one worker
 *		alone), the distributed deadlock detector does not see the chunk,
 *		and 2PC recovery does not count the worker's prepared transactions
 *		as in progress (it could roll one back between PREPARE and COMMIT
 *		PREPARED).  So on Citus the workers stay out of the lock group and
 *		take shared chunk locks instead (parallel.c).  Any run may read a
 *		distributed table, so the whole database is concerned.
 */
bool
CitusForbidsLockGroups(void)
{
	return CitusInstalled();
}

/*
 * CitusLocalGroup
 *		This node's Citus group id: 0 on the coordinator (and on a node
 *		with no Citus metadata), the worker's group otherwise.  -1 when
 *		citus is not installed.
 */
static int32
CitusLocalGroup(void)
{
	int32		group = -1;
	bool		isnull;

	if (!CitusInstalled())
		return -1;
	SpiConnect();
	SpiExecPinned("SELECT groupid FROM pg_catalog.pg_dist_local_group",
				  0, NULL, NULL, NULL, true, 2, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		group = SpiGetInt32(0, 1, &isnull);
		if (isnull)
			group = 0;
	}
	else
		group = 0;
	SpiFinish();
	return group;
}

/*
 * CitusRequireCoordinator
 *		See backfill.h: raise 0A000 on a Citus worker.  Its catalog is a
 *		local, empty copy (Citus creates the extension on every node); the
 *		runs, chunks and lineage live on the coordinator only.
 */
void
CitusRequireCoordinator(void)
{
	int32		group = CitusLocalGroup();

	if (group > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("backfill runs on the Citus coordinator only"),
				 errdetail("This node is a Citus worker (group %d); backfill's catalog of targets, runs and lineage is kept on the coordinator.",
						   group),
				 errhint("Connect to the coordinator and call the function there.")));
}

/*
 * CitusTableKind
 *		See backfill.h: "distributed", "reference" or "local" (a Citus
 *		local or single-shard table) for a relation in Citus's metadata,
 *		NULL for any other relation or without Citus.
 */
const char *
CitusTableKind(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1];
	const char *kind = NULL;

	if (!CitusInstalled())
		return NULL;
	values[0] = ObjectIdGetDatum(relid);
	SpiConnect();
	SpiExecPinned("SELECT CAST(partmethod AS pg_catalog.text),"
				  " CAST(repmodel AS pg_catalog.text)"
				  " FROM pg_catalog.pg_dist_partition"
				  " WHERE CAST(logicalrelid AS pg_catalog.oid) OPERATOR(pg_catalog.=) $1",
				  1, argtypes, values, NULL, true, 2, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		char	   *method = SpiGetText(0, 1);
		char	   *repmodel = SpiGetText(0, 2);

		if (method != NULL && strcmp(method, "n") != 0)
			kind = "distributed";
		else if (repmodel != NULL && strcmp(repmodel, "t") == 0)
			kind = "reference";
		else
			kind = "local";
	}
	SpiFinish();
	return kind;
}

/*
 * CitusCheckStrategy
 *		See backfill.h: strategy "swap" is refused on a Citus table with
 *		0A000.  A swap exchanges the files of a local table; the rows of a
 *		Citus table live in shards on the workers, which the coordinator
 *		cannot swap inside one transaction.
 */
void
CitusCheckStrategy(Oid target, ReplaceStrategy strategy)
{
	const char *kind;

	if (strategy != STRATEGY_SWAP)
		return;
	kind = CitusTableKind(target);
	if (kind != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("strategy \"swap\" is not supported on Citus tables"),
				 errdetail("\"%s\" is a Citus %s table: its rows live in shards, and a swap exchanges the files of a local table.",
						   get_rel_name(target), kind),
				 errhint("Use strategy \"auto\", \"delete\" or, on a distributed partitioned table, \"truncate\".")));
}

/*
 * CitusForbidsSwap
 *		See backfill.h: whether "auto" must not pick swap for target.
 */
bool
CitusForbidsSwap(Oid target)
{
	return CitusTableKind(target) != NULL;
}
