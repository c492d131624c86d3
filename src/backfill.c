/*-------------------------------------------------------------------------
 *
 * backfill.c
 *	  Module entry point: registers the backfill.* settings; and the
 *	  argument checks shared by the SQL-callable functions (NULLs, and the
 *	  length limits of texts).
 *
 * Nothing else happens at load time; every piece of work is done by the
 * SQL-callable functions in the other files.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "backfill.h"

PG_MODULE_MAGIC;

int			backfill_lock_timeout = 5000;
int			backfill_chunk_timeout = 0;
int			backfill_max_attempts = 3;
int			backfill_max_chunks = 100000;
int			backfill_neighbor_chunks = 3;
double		backfill_neighbor_tolerance = 0.5;

void		_PG_init(void);

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

	MarkGUCPrefixReserved("backfill");
}

/*
 * RequireArg
 *		Raise 22004 "<name> must not be null" when argument argno of a
 *		SQL-callable function is NULL, with hint (may be NULL).
 *
 * Citus: every SQL-callable function that touches the catalog or a user
 * table checks its first argument first, so that is where a Citus worker
 * is refused (citus.c).
 */
void
RequireArg(FunctionCallInfo fcinfo, int argno, const char *name,
		   const char *hint)
{
	if (argno == 0)
		CitusRequireCoordinator();	/* Citus */
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name),
				 hint ? errhint("%s", hint) : 0));
}

/*
 * RequireMaxLength
 *		Raise 22001 "<name> is too long" when text (may be NULL) has more
 *		than max characters.  Checked before the text is stored, parsed or
 *		quoted in a message, so a text of any size costs one scan at most.
 */
void
RequireMaxLength(const char *text, const char *name, int max)
{
	size_t		bytes;
	int			chars;

	if (text == NULL)
		return;
	bytes = strlen(text);
	if (bytes <= (size_t) max)
		return;
	chars = bytes > (size_t) MaxAllocSize ? INT_MAX :
		pg_mbstrlen_with_len(text, (int) bytes);
	if (chars > max)
		ereport(ERROR,
				(errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
				 errmsg("%s is too long", name),
				 errdetail("It has %d characters; at most %d are allowed.",
						   chars, max)));
}

/*
 * BackfillLockTag
 *		Fill tag with the lock key (lockclass, key) of this database.  It is
 *		an advisory lock tag whose fourth field is BACKFILL_LOCK_SUBID, a
 *		value the SQL advisory lock functions never use, so only the
 *		extension's C code can take these locks; they show in pg_locks as
 *		locktype 'advisory', classid = lockclass, objid = key,
 *		objsubid = 16966.
 */
void
BackfillLockTag(LOCKTAG *tag, uint32 lockclass, uint32 key)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, lockclass, key,
						 BACKFILL_LOCK_SUBID);
}
