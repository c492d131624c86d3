/*-------------------------------------------------------------------------
 *
 * undo.c
 *	  SQL entry points of undo (doc/undo.md): revert, diff and
 *	  purge_archive.  The work is done by orchestration/undo.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/tstoreReceiver.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_revert);
PG_FUNCTION_INFO_V1(backfill_diff);
PG_FUNCTION_INFO_V1(backfill_purge_archive);

/*
 * backfill_revert
 *		revert(run_id) -> the id of the revert run (RevertRun).
 */
Datum
backfill_revert(PG_FUNCTION_ARGS)
{
	int64		revert_id;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "run_id", NULL);

	SpiConnect();
	revert_id = RevertRun(PG_GETARG_INT64(0));
	SpiFinish();
	PG_RETURN_INT64(revert_id);
}

/*
 * backfill_diff
 *		diff(run_id, chunk_no) -> (chunk_no, key, change, old, new), streamed
 *		by DiffRun straight into the function's materialized result.
 */
Datum
backfill_diff(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	DestReceiver *dest;
	int32		chunk_no = 0;

	CitusRequireCoordinator();
	RequireCatalogVersion();
	RequireArg(fcinfo, 0, "run_id", NULL);
	if (!PG_ARGISNULL(1))
	{
		chunk_no = PG_GETARG_INT32(1);
		if (chunk_no < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("chunk_no must be positive"),
					 errhint("Chunks are numbered from 1; leave chunk_no NULL for every chunk of the run.")));
	}

	InitMaterializedSRF(fcinfo, 0);
	dest = CreateDestReceiver(DestTuplestore);
	SetTuplestoreDestReceiverParams(dest, rsinfo->setResult,
									rsinfo->econtext->ecxt_per_query_memory,
									false, NULL, NULL);
	SpiConnect();
	DiffRun(PG_GETARG_INT64(0), chunk_no, dest);
	SpiFinish();
	dest->rDestroy(dest);
	return (Datum) 0;
}

/*
 * backfill_purge_archive
 *		purge_archive(target, older_than) -> chunks purged (PurgeArchive).
 *		A NULL target is every target; a NULL older_than purges what is
 *		past the definitions' keep_for.
 */
Datum
backfill_purge_archive(PG_FUNCTION_ARGS)
{
	int64		purged;

	CitusRequireCoordinator();
	RequireCatalogVersion();

	SpiConnect();
	purged = PurgeArchive(PG_ARGISNULL(1) ? NULL : PG_GETARG_INTERVAL_P(1),
						  PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0));
	SpiFinish();
	PG_RETURN_INT64(purged);
}
