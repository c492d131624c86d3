/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  Module entry point: the module magic, and _PG_init, which registers
 *	  the backfill.* settings and installs the owner-rights guard's hook;
 *	  the effective value of backfill.max_workers.
 *
 * Nothing else happens at load time; every piece of work is done by the
 * SQL-callable functions (src/api) and the C functions they call.  The
 * guard's hook (guard.c) does nothing outside the extension's own
 * statements run as its owner.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "backfill.h"

PG_MODULE_MAGIC;

int			backfill_lock_timeout = 5000;
int			backfill_chunk_timeout = 0;
int			backfill_max_attempts = 3;
int			backfill_max_chunks = 100000;
int			backfill_neighbor_chunks = 3;
double		backfill_neighbor_tolerance = 0.5;
int			backfill_max_parallel = 4;
int			backfill_max_workers = -1;
int			backfill_notices = NOTICES_CHUNKS;
bool		backfill_notice_timing = true;

/* The values of backfill.notices. */
static const struct config_enum_entry notices_options[] = {
	{"chunks", NOTICES_CHUNKS, false},
	{"summary", NOTICES_SUMMARY, false},
	{NULL, 0, false}
};

void		_PG_init(void);

/*
 * BackfillMaxWorkers
 *		See backfill.h: backfill.max_workers, or with -1 (the default) a
 *		quarter of max_worker_processes, at least 2 (so that parallel => 2
 *		works on a small server), never more than the ceiling.  A share,
 *		not all: the slots of max_worker_processes also serve parallel
 *		query, logical replication and pg_cron, and four sessions with
 *		parallel => 4 once held 14 of 16.
 */
int
BackfillMaxWorkers(void)
{
	if (backfill_max_workers >= 0)
		return backfill_max_workers;
	return Min(Max(max_worker_processes / 4, 2), BACKFILL_MAX_WORKERS_CEILING);
}

/*
 * _PG_init
 *		Define the settings and reserve the "backfill." prefix.
 */
void
_PG_init(void)
{
	DefineCustomIntVariable("backfill.lock_timeout",
							"Longest wait of a chunk for the target's locks.",
							"On timeout the chunk is deferred, not failed.",
							&backfill_lock_timeout,
							5000, 1, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("backfill.chunk_timeout",
							"Longest time one chunk may run; 0 means no limit.",
							"A chunk over the limit fails and is rolled back.",
							&backfill_chunk_timeout,
							0, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("backfill.max_attempts",
							"Consecutive lock deferrals after which a chunk fails.",
							NULL,
							&backfill_max_attempts,
							3, 1, 1000000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("backfill.max_chunks",
							"Largest number of chunks one range may be split into.",
							"Only superusers may change it (chunk rows cannot be deleted by their planner); never above the hard ceiling of 10000000.",
							&backfill_max_chunks,
							100000, 1, BACKFILL_MAX_CHUNKS_CEILING,
							PGC_SUSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("backfill.neighbor_chunks",
							"Chunks read on each side of a run's range by reconcile.",
							NULL,
							&backfill_neighbor_chunks,
							3, 0, 1000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomRealVariable("backfill.neighbor_tolerance",
							 "Allowed relative distance of a chunk from its neighbors' median.",
							 NULL,
							 &backfill_neighbor_tolerance,
							 0.5, 0.0, 1000000.0,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("backfill.max_parallel",
							"Largest parallel => N of one run call: background workers executing its chunks at once.",
							"Only superusers may change it; the effective cap is also bounded by max_worker_processes.",
							&backfill_max_parallel,
							4, 1, BACKFILL_MAX_PARALLEL_CEILING,
							PGC_SUSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("backfill.max_workers",
							"Most background workers of parallel chunks running at once in the whole cluster, all sessions and databases counted; -1: a quarter of max_worker_processes, at least 2.",
							"Only superusers may change it; a call that finds fewer free goes on with fewer workers, or in its session.",
							&backfill_max_workers,
							-1, -1, BACKFILL_MAX_WORKERS_CEILING,
							PGC_SUSET, 0,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("backfill.notices",
							 "What a run reports: a NOTICE per chunk and a summary (chunks), or the summary only (summary).",
							 "Failures and warnings are reported either way.",
							 &backfill_notices,
							 NOTICES_CHUNKS, notices_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("backfill.notice_timing",
							 "Whether a run's summary NOTICE names the time it took.",
							 "Off for output that does not change from one execution to the next (tests, documentation), as EXPLAIN's TIMING OFF.",
							 &backfill_notice_timing,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	MarkGUCPrefixReserved("backfill");

	/* the owner-rights guard (guard.c): only active inside CatalogRun */
	GuardInstall();
}

