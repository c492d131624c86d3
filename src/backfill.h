/*-------------------------------------------------------------------------
 *
 * backfill.h
 *	  The one shared header of the backfill extension, in the order of
 *	  the layers of src/ (CONTRIBUTING.md): base/, engine/, orchestration/,
 *	  api/.
 *
 * Each .c file owns one concern and declares here what other files may
 * call.  A file calls only files of its own layer or of the layers below,
 * and never around a circle; t/003_layers.pl checks that from the object
 * files.  Each section names the file that defines what it declares.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_H
#define BACKFILL_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/pg_list.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/lock.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

/* The server APIs that differ between PostgreSQL 15, 16, 17, 18 and 19. */
#include "base/compat.h"


/* ================================================================
 *		Layer 1: base/ -- settings, names, the catalog, identity, SPI,
 *		ranges, user SQL, Citus, pg_cron, catalog readers
 * ================================================================
 */

/* ---- settings (settings.c; _PG_init defines them) ---- */
extern int	backfill_lock_timeout;	/* ms */
extern int	backfill_chunk_timeout; /* ms, 0 = none */
extern int	backfill_max_attempts;
extern int	backfill_max_chunks;	/* PGC_SUSET */
extern int	backfill_neighbor_chunks;
extern double backfill_neighbor_tolerance;
extern int	backfill_max_parallel;	/* PGC_SUSET */

/* Hard ceiling of backfill.max_parallel (also bounded by max_worker_processes). */
#define BACKFILL_MAX_PARALLEL_CEILING 64

/*
 * backfill.max_workers: the most background workers of parallel chunks
 * running at once in the whole cluster, all sessions and databases counted
 * (PGC_SUSET; -1: BackfillMaxWorkers's share of max_worker_processes).
 */
extern int	backfill_max_workers;
#define BACKFILL_MAX_WORKERS_CEILING 1024

/* The effective backfill.max_workers (settings.c). */
extern int	BackfillMaxWorkers(void);

/* backfill.notices: a NOTICE per chunk and a summary, or the summary only */
typedef enum NoticeLevel
{
	NOTICES_CHUNKS,
	NOTICES_SUMMARY
} NoticeLevel;
extern int	backfill_notices;	/* NoticeLevel */
extern bool backfill_notice_timing; /* the summary names the time taken */

/*
 * Hard ceiling of backfill.max_chunks: even a superuser cannot make one
 * plan, check or split_range produce more chunks than this.
 */
#define BACKFILL_MAX_CHUNKS_CEILING 10000000

/* ---- the owner-rights guard (guard.c) ---- */

/*
 * Install the guard's post_parse_analyze_hook (once, from _PG_init).
 * Between GuardPush and GuardPop (CatalogRun), every query analysed is
 * refused (XX000, naming it) when it touches a relation, function,
 * operator, cast or type that is neither pg_catalog's nor a member of
 * backfill or pg_cron, or is a utility statement other than LOCK TABLE of
 * such a relation.  GuardPop takes what GuardPush returned.
 */
extern void GuardInstall(void);
extern int	GuardPush(void);
extern void GuardPop(int depth);

/*
 * What the guard would refuse in an analysed query ("relation x.y",
 * "function f(int)", ...), NULL when nothing.
 */
extern char *GuardRefusal(Query *query);

/* ---- lock tags (locks.c) ---- */

/*
 * Lock classes of the extension's own locks (BackfillLockTag).  A run being
 * executed holds a session-level lock (RUN, run_id); a chunk and the daily
 * job meet on a transaction-level lock (TARGET, relid); register, unregister
 * and plan of one target serialize on a transaction-level lock (PLAN, relid);
 * grants and revokes of the scheduling-role guard on one (GUARD, 0), and the
 * removals of jobs by sweeps and by the guard's event trigger on (SWEEP, 0).
 */
#define BACKFILL_LOCK_CLASS_RUN		0x42460001
#define BACKFILL_LOCK_CLASS_TARGET	0x42460002
#define BACKFILL_LOCK_CLASS_PLAN	0x42460003
#define BACKFILL_LOCK_CLASS_GUARD	0x42460004	/* key 0: jobguard.c */
#define BACKFILL_LOCK_CLASS_SWEEP	0x42460005	/* key 0: schedule.c */

/*
 * (WATCH, relid): a writer to a watched source holds it in RowExclusiveLock
 * from its first statement to its commit, or, when a chunk holds or awaits
 * it, in RowShareLock (and logs every row); a chunk whose end passes the
 * target's watermark takes it in ShareLock before it reads its source
 * (orchestration/watchlog.c, engine/watchhook.c).
 */
#define BACKFILL_LOCK_CLASS_WATCH	0x42460006

/*
 * (RECORDED, relid): a writer that leaves out a row of
 * backfill.changed_regions because another transaction recorded the chunk
 * already holds it in RowExclusiveLock, taken without waiting, until it
 * commits; a build that consumes the target's logged changes takes it in
 * ShareLock first (orchestration/watchrecorded.c).
 */
#define BACKFILL_LOCK_CLASS_RECORDED	0x42460008

/*
 * The fourth field (pg_locks.objsubid) of every backfill lock tag.  The SQL
 * advisory lock functions only ever use 1 (one bigint key) and 2 (two int4
 * keys), so no SQL caller can take, wait for or hold a backfill lock.
 */
#define BACKFILL_LOCK_SUBID			0x4246	/* 16966 */

/*
 * The fourth field of the lock a parallel chunk's background worker holds
 * while it executes chunk_no of run_id (BackfillChunkLockTag): pg_locks
 * shows it as classid = run_id (low 32 bits), objid = chunk_no,
 * objsubid = 16967; backfill.progress and cancel find the workers by it.
 */
#define BACKFILL_LOCK_SUBID_CHUNK	0x4247	/* 16967 */

/*
 * (WORKER, slot) in database 0, that is, for the whole cluster: the leader
 * of a parallel call holds one of slots 0 .. backfill.max_workers - 1,
 * session-level, for each background worker it has started and not yet
 * seen stop (BackfillWorkerSlotTag, orchestration/parallel.c).
 */
#define BACKFILL_LOCK_CLASS_WORKER	0x42460007

/* The lock tag of (lockclass, key) in this database. */
extern void BackfillLockTag(LOCKTAG *tag, uint32 lockclass, uint32 key);

/*
 * LockAcquire and LockRelease of a transaction-level lock owned by the
 * current (sub)transaction, whatever resource owner is current (a cursor's
 * portal gives its locks back when a later FETCH fails in a savepoint,
 * while what an earlier FETCH wrote under them stays).
 */
extern LockAcquireResult XactLockAcquire(const LOCKTAG *tag, LOCKMODE mode,
										 bool dontWait);
extern void XactLockRelease(const LOCKTAG *tag, LOCKMODE mode);

/* The lock tag of worker slot "slot", shared by every database. */
extern void BackfillWorkerSlotTag(LOCKTAG *tag, int slot);

/* The lock that serializes register, unregister and plan of a target. */
extern void TakeTargetPlanLock(Oid target);

/* The lock tag of a chunk executed by a parallel worker (run_id, chunk_no). */
extern void BackfillChunkLockTag(LOCKTAG *tag, int64 run_id, int32 chunk_no);

/* ---- the vocabulary, one name table each (names.c) ---- */

/* How a chunk replaces its rows; parsed once from its name. */
typedef enum ReplaceStrategy
{
	STRATEGY_AUTO,				/* swap, truncate or delete: the safest fast one */
	STRATEGY_DELETE,
	STRATEGY_TRUNCATE,
	STRATEGY_SWAP
} ReplaceStrategy;

/* A strategy name; 22004 for NULL, 22023 for an unknown one. */
extern ReplaceStrategy ParseStrategy(const char *name);
extern const char *StrategyName(ReplaceStrategy strategy);

/*
 * Which chunks of the range plan keeps (only_chunks): a set of these bits,
 * a chunk is kept when it is any of them; 0 (NULL) keeps every chunk.
 */
typedef enum OnlyChunks
{
	ONLY_ALL = 0,				/* NULL: every chunk of the range */
	ONLY_MISSING = 1 << 0,		/* never filled */
	ONLY_OUTDATED = 1 << 1,		/* filled under an older definition version */
	ONLY_FAILED = 1 << 2,		/* the latest attempt failed or was cancelled */
	ONLY_STALE = 1 << 3			/* built, then its source changed */
} OnlyChunks;

/*
 * only_chunks by name: one name or several separated by commas
 * ('stale,missing'); NULL is ONLY_ALL, an unknown name 22023.  And back:
 * the names joined with " or " (NULL for ONLY_ALL).
 */
extern int	ParseOnlyChunks(const char *name);
extern const char *OnlyChunksName(int only);

/* Run statuses (the CHECK constraint of backfill.runs). */
typedef enum RunStatus
{
	RUN_PLANNED,
	RUN_PROBED,
	RUN_FAILED,
	RUN_DONE,
	RUN_CANCELLED
} RunStatus;

/* Chunk statuses (the CHECK constraint of backfill.chunks). */
typedef enum ChunkStatus
{
	CHUNK_NONE,					/* NULL: no chunk (check's lineage) */
	CHUNK_PENDING,
	CHUNK_DONE,
	CHUNK_FAILED,
	CHUNK_NO_SOURCE,
	CHUNK_CANCELLED
} ChunkStatus;

/* Verdicts of reconcile and check (backfill.chunks.verdict). */
typedef enum Verdict
{
	VERDICT_NONE,				/* NULL */
	VERDICT_OK,
	VERDICT_LEDGER_MISMATCH,
	VERDICT_OUTLIER,
	VERDICT_NO_SOURCE,
	VERDICT_NOT_RUN
} Verdict;

/* By name as the catalog spells them (NULL: the NONE value), and back. */
extern RunStatus ParseRunStatus(const char *name);
extern const char *RunStatusName(RunStatus status);
extern ChunkStatus ParseChunkStatus(const char *name);
extern const char *ChunkStatusName(ChunkStatus status);
extern Verdict ParseVerdict(const char *name);
extern const char *VerdictName(Verdict verdict);

/* Why a chunk failed (backfill.chunks.error_cause; failures.c decides). */
typedef enum FailureCause
{
	CAUSE_NONE,					/* NULL: the chunk did not fail */
	CAUSE_DEFINITION,			/* the registered definition: replan */
	CAUSE_TRANSIENT,			/* locks, deadlock, a connection: run again */
	CAUSE_ENVIRONMENT,			/* privileges, a dropped table: fix, run */
	CAUSE_LEDGER,				/* the ledger gate: the ledger lags (run
								 * again later) or the definition is wrong */
	CAUSE_EMPTY_SOURCE			/* no rows where the range holds some: fix
								 * the source, or allow_empty */
} FailureCause;

extern const char *FailureCauseName(FailureCause cause);
extern FailureCause ParseFailureCause(const char *name);

/* ---- notifications on channel "backfill" (notify.c) ---- */

/*
 * NOTIFY backfill of a run's new status (done, failed, probed; the others
 * send nothing) after chunk chunk_no (0: none), and of a standing check's
 * tick that found failing chunks (none: nothing); the payload holds ids and
 * the event's name only, since anyone may LISTEN.  Sent at commit.
 */
extern void NotifyRunEvent(int64 run_id, RunStatus status, int32 chunk_no);
extern void NotifyCheckEvent(int64 check_id, int32 failing);

/* ---- the cause of a chunk's failure and what to do next (failures.c) ---- */

/*
 * The cause of an error that failed a chunk, from its SQLSTATE (one table),
 * and in_user_text: whether it was raised while the definition's text (or
 * the rows it produced) was at work.
 */
extern FailureCause ClassifyFailure(int sqlerrcode, bool in_user_text);

/*
 * The call that goes on after a failure of that cause, for a run (group_id
 * 0) or a group: e.g. "SELECT backfill.replan(5)".  palloc'd.
 */
extern char *FailureNextStep(FailureCause cause, int64 run_id,
							 int64 group_id);

/*
 * The sentence that ends a failure's hint: the cause and the next call; a
 * failure met by a pg_cron tick also says how to schedule again.
 */
extern char *FailureHint(FailureCause cause, int64 run_id, int64 group_id,
						 bool from_cron);

/* ---- text of values and names, arrays, text lengths (util.c) ---- */

/* A timestamptz in ISO form, palloc'd (safe to call twice per message). */
extern char *TimestampText(TimestampTz t);

/* "1 row deleted", "3 rows inserted": a count of rows and what was done. */
extern char *RowsText(int64 n, const char *done);

/* A numeric Datum as text, "NULL" for a null. */
extern char *NumericText(Datum d, bool isnull);

/* The quoted, schema-qualified name of a relation; 42P01 if it is gone. */
extern char *QualifiedRelName(Oid relid);

/* A one-dimensional array of n elements (nulls may be NULL). */
extern Datum MakeArray(Datum *elems, bool *nulls, int n, Oid elemtype);
/* The same for the OIDs of a list, as elements of type elemtype. */
extern Datum MakeOidArray(List *oids, Oid elemtype);

/*
 * Length limits of the texts the extension stores or shows (characters);
 * doc/security.md#bounds.  RequireMaxLength raises 22001 beyond them.
 */
#define BACKFILL_MAX_LABEL		1000	/* a definition label */
#define BACKFILL_MAX_NOTE		10000	/* a run's note */
#define BACKFILL_MAX_WORD		1000	/* cron, quiet_hours, strategy,
										 * only_chunks, time zone names */
#define BACKFILL_MAX_MEASURE	10000	/* a measure expression */
#define BACKFILL_MAX_QUERY		1000000 /* source, ledger, source_horizon */
#define BACKFILL_MAX_KEY		32		/* columns of register's key */

/* 22001 "<name> is too long" when text (may be NULL) exceeds max characters. */
extern void RequireMaxLength(const char *text, const char *name, int max);

/* ---- the SPI layer (spi.c) ---- */

/* SPI_connect (nonatomic) and SPI_finish; a failure is an internal error. */
extern void SpiConnect(void);
extern void SpiConnectNonatomic(void);
extern void SpiFinish(void);

/*
 * Run one statement with $n parameters and insist on the SPI result code
 * "expected"; any other result is an internal error naming the statement.
 * nulls may be NULL (no nulls), as for SPI_execute_with_args.
 */
extern int	SpiExec(const char *sql, int nargs, Oid *argtypes, Datum *values,
					const char *nulls, bool read_only, long count, int expected);

/*
 * The search_path of every statement the extension runs without user text:
 * the catalog statements (CatalogExec) and the caller's reads of system and
 * pg_cron tables (SpiExecPinned).  pg_temp last, so that no temporary
 * object can stand in for a system one.
 */
#define BACKFILL_PINNED_SEARCH_PATH "pg_catalog, pg_temp"

/*
 * Open / close a GUC nest level with search_path pinned to
 * BACKFILL_PINNED_SEARCH_PATH; the close pops it as on abort (also safe
 * on an error path, before the rollback).
 */
extern int	SpiPinSearchPath(void);
extern void SpiUnpinSearchPath(int nest);

/*
 * SpiExec with the result rows sent to "dest"; SpiRowStore makes a
 * tuplestore and its receiver; SpiRegisterRows makes a tuplestore readable
 * by name in the next statements of the SPI connection (an ephemeral
 * named relation), until SpiUnregisterRows or SPI_finish.
 */
extern int	SpiExecDest(const char *sql, int nargs, Oid *argtypes,
						Datum *values, const char *nulls, DestReceiver *dest,
						int expected);
extern DestReceiver *SpiRowStore(Tuplestorestate **store);
extern DestReceiver *SpiRowStoreSized(Tuplestorestate **store, int kbytes);
extern void SpiRegisterRows(const char *name, TupleDesc desc,
							Tuplestorestate *store);
extern void SpiUnregisterRows(const char *name);

/* SpiExec of the extension's own SQL, search_path pinned, as the caller. */
extern int	SpiExecPinned(const char *sql, int nargs, Oid *argtypes,
						  Datum *values, const char *nulls, bool read_only,
						  long count, int expected);
/* The same, read-only, its rows sent to "dest" (SpiExecDest). */
extern int	SpiExecPinnedDest(const char *sql, int nargs, Oid *argtypes,
							  Datum *values, const char *nulls,
							  DestReceiver *dest, int expected);

/* Convenience readers of SPI_tuptable row "row", column "col" (1-based). */
extern bool SpiGetBool(int row, int col, bool *isnull);
extern int64 SpiGetInt64(int row, int col, bool *isnull);
extern int32 SpiGetInt32(int row, int col, bool *isnull);
extern Oid	SpiGetOid(int row, int col, bool *isnull);
/* the first column of the last result as a list of OIDs; the result freed */
extern List *SpiOidColumn(void);
extern char *SpiGetText(int row, int col);	/* palloc'd in caller's ctx, NULL
											 * if null */
extern Datum SpiGetDatumCopy(int row, int col, bool *isnull);

/* ---- catalog access as the extension owner (catalog.c) ---- */

/*
 * Execute catalog DML/queries as the extension owner, with the
 * security-restricted context and search_path pinned to 'pg_catalog,
 * pg_temp', then switch back (on error too); the real user is always
 * passed in as a parameter where the catalog records it.  The one way in
 * which the extension acts with its owner's rights (t/037 checks it).
 */
extern int	CatalogExec(const char *sql, int nargs, Oid *argtypes, Datum *values,
						const char *nulls, int expected);
/*
 * GRANT (grant true) or REVOKE SELECT on backfill.<relname> to role
 * "rolename", as the extension owner, from C: no statement, no event
 * trigger (the scheduling-role guard's grant).
 */
extern void CatalogGrantSelect(const char *relname, const char *rolename,
							   bool grant);
/*
 * extversion of extension backfill in this database (palloc'd), NULL when
 * it is not installed here; cheap after the first call (version.c asks).
 */
extern char *CatalogInstalledVersion(void);
/*
 * Append rows (ncols values and nulls each, row after row, in column order)
 * to the extension's table backfill.<relname> without running SQL, in the
 * caller's transaction; false, having written nothing, when the table has
 * a trigger, rule, forced row security, other columns or an index on an
 * expression or with a predicate (write them with CatalogExec then).
 */
extern bool CatalogAppendRows(const char *relname, int ncols, int nrows,
							  const Datum *values, const bool *nulls);
/*
 * A ResultRelInfo of rel with its indexes open in a new executor state
 * (*estate), for writing rows from C; NULL (nothing opened) when an index
 * is on an expression or has a predicate.  Close with ExecCloseIndices and
 * FreeExecutorState.
 */
extern ResultRelInfo *OpenPlainIndexes(Relation rel, EState **estate);

/* The OID of backfill.watches (InvalidOid without it). */
extern Oid	WatchesRelid(void);

/*
 * The parameters of one catalog statement, added in $n order, each one's
 * type, value and null-ness together: CatalogArgsInit, then CatalogArg or
 * CatalogArgText per parameter, then CatalogExecArgs, which refuses a
 * statement whose highest $n is not the number given.  Statements of four
 * parameters or more use it.
 */
#define CATALOG_MAX_ARGS 24

typedef struct CatalogArgs
{
	int			n;
	Oid			types[CATALOG_MAX_ARGS];
	Datum		values[CATALOG_MAX_ARGS];
	char		nulls[CATALOG_MAX_ARGS + 1];	/* SPI's ' '/'n' string */
} CatalogArgs;

extern void CatalogArgsInit(CatalogArgs *args);
extern int	CatalogArg(CatalogArgs *args, Oid type, Datum value, bool isnull);
extern int	CatalogArgText(CatalogArgs *args, const char *text);
extern int	CatalogExecArgs(const char *sql, const CatalogArgs *args,
							int expected);

/*
 * CatalogExecArgs for a statement that reads rows registered with
 * SpiRegisterRows (never cached: its plan depends on them), and for one
 * whose result rows go to "dest" (SpiExecDest), both as the extension
 * owner, search_path pinned.
 */
extern int	CatalogExecArgsOnce(const char *sql, const CatalogArgs *args,
								int expected);
extern int	CatalogExecArgsInto(const char *sql, const CatalogArgs *args,
								DestReceiver *dest, int expected);

/* Whether a catalog query returns a row (the result is freed). */
extern bool CatalogExists(const char *sql, int nargs, Oid *argtypes,
						  Datum *values);

/*
 * The rows of a statement on pg_cron's objects, every column as text
 * (NULL for SQL NULL): row r, column c (0-based) is values[r * ncols + c].
 */
typedef struct CronRows
{
	int			nrows;
	int			ncols;
	char	  **values;
} CronRows;

/*
 * One statement on pg_cron's tables and functions ($n text parameters) as
 * the extension owner: here (crondb NULL, CatalogRun) or in database
 * crondb through the relay (cronrelay.c).  With error not NULL, a failure
 * there returns NULL and the error instead of raising it.
 */
extern CronRows *CatalogCronQuery(const char *crondb, const char *sql,
								  int nparams, const char **params,
								  ErrorData **error);

/* Name of the current (real) user, for created_by / executed_by. */
extern char *CurrentUserName(void);

/* Whether role may log in (pg_cron's ticks, parallel workers connect as it). */
extern bool RoleCanLogin(Oid role);

/* ---- the relay to pg_cron's database (cronrelay.c) ---- */

/*
 * Run one statement in database "database" as role "role" in a background
 * worker; its rows as text.  With error not NULL, a failure (no worker
 * slot, the statement's error) returns NULL and the error in *error.
 * Called by CatalogCronQuery only.
 */
extern CronRows *CronRelayRun(Oid database, Oid role, const char *sql,
							  int nparams, const char **params,
							  ErrorData **error);

/* ---- identity of user text and of run actions (identity.c) ---- */

/* The state of one passage through the author gate. */
typedef struct AuthorGate
{
	Oid			save_userid;
	int			save_sec_context;
	int			nest;
	bool		active;
} AuthorGate;

/* 42501 unless the current user has the privileges of author. */
extern void CheckAuthor(Oid author, Oid target, int32 version);

/*
 * Run user text as its author: CheckAuthor, then the author's user id in a
 * security-restricted operation, search_path (pg_temp last) and TimeZone
 * pinned, until AuthorGateLeave (settings popped as on abort).
 */
extern void AuthorGateEnter(AuthorGate *gate, Oid author, Oid target,
							int32 version, const char *search_path,
							const char *timezone);
extern void AuthorGateLeave(AuthorGate *gate);
extern void AuthorGateAbort(AuthorGate *gate);

/* The permission rule of every action on a run (planner by OID). */
extern void CheckRunPermission(int64 run_id, Oid planner,
							   const char *planner_name, const char *action);
extern bool HasRunPermission(Oid planner);

/*
 * Whether the caller sees a run, group or check of target created by
 * creator (SELECT on the target; for a dropped table, HasRunPermission).
 */
extern bool CatalogRowVisible(Oid target, Oid creator);

/*
 * The read rule of kept rows (doc/undo.md): SELECT on every column of the
 * target and no row-level security policy applying; 42501 otherwise.
 */
extern void CheckKeptRowsReadable(Oid target);

/* 42704 "run N does not exist" for a run the caller cannot see. */
extern void CheckRunVisible(int64 run_id, Oid target, Oid planner);
BackfillNoReturn extern void RaiseRunDoesNotExist(int64 run_id);

/* The same for groups and standing checks. */
BackfillNoReturn extern void RaiseGroupDoesNotExist(int64 group_id);
BackfillNoReturn extern void RaiseCheckDoesNotExist(int64 check_id);

/* ---- chunk bounds (range.c) ---- */

/*
 * Compute the chunk bounds of [start, end) with "step": bound k is
 * start + k * step in the session TimeZone, the last clipped to end.
 * Returns the number of chunks n and sets *bounds to a palloc'd array of
 * n + 1 bounds.  Raises the user-facing errors for bad input.
 */
extern int	ComputeChunkBounds(TimestampTz start, bool start_null,
							   TimestampTz end, bool end_null,
							   Interval *step, bool step_null,
							   TimestampTz **bounds);

/*
 * Raise the user-facing errors of a range [start, end): NULL (22004),
 * infinite (22023), empty or reversed (22023).
 */
extern void CheckRangeBounds(TimestampTz start, bool start_null,
							 TimestampTz end, bool end_null);

/* bound shifted by k steps (k may be negative), in the session TimeZone. */
extern TimestampTz ShiftBound(TimestampTz bound, Interval *step, int k);

/*
 * The chunk [*lo, *hi) of the fixed grid of "step" that holds t, in the
 * session TimeZone: local days (from midnight), weeks (from Monday),
 * calendar months, or a time that divides a day from each local midnight.
 */
extern void ChunkCell(TimestampTz t, Interval *step, TimestampTz *lo,
					  TimestampTz *hi);

/*
 * The same in TimeZone tz, by integer arithmetic, when tz keeps one offset
 * from UTC and step has no months; false otherwise (ChunkCell in tz then).
 */
extern bool FixedZoneCell(struct pg_tz *tz, TimestampTz t, Interval *step,
						  TimestampTz *lo, TimestampTz *hi);

/* ---- user SQL and privileges on targets (validate.c) ---- */

/*
 * A validated source query: the statement text exactly as the user wrote
 * it (trailing semicolon and blanks removed) and its output column names.
 */
typedef struct SourceQuery
{
	char	   *sql;
	List	   *columns;		/* of char *, in output order */
	bool		uses_range;		/* it reads $1 or $2 */
} SourceQuery;

extern SourceQuery *ValidateSourceQuery(const char *sql, Oid target,
										const char *time_column);
extern char *ValidateMeasure(const char *measure, Oid target);
extern char *ValidateLedger(const char *ledger);

/*
 * In a PG_CATCH (its PG_TRY in memory context cxt): raise the error again,
 * its message prefixed "prefix: " so that it names the setting whose text
 * raised it (the measure, the ledger query), unless it begins with "what"
 * already or is not the text's doing (a cancel, a lock, resources).
 */
BackfillNoReturn extern void ReThrowNamingSetting(MemoryContext cxt, const char *what,
												  const char *prefix);
extern char *ValidateHorizon(const char *horizon);

/*
 * Check that target still exists and is a table or a partitioned table
 * (42P01, 42809).
 */
extern void CheckTargetKind(Oid target);

/* Check that the current user may DELETE from and INSERT into target. */
extern void CheckTargetPrivileges(Oid target);

/* 42P01 unless the target exists, 42501 unless the caller may read it. */
extern void CheckSelectPrivilege(Oid relid);

/*
 * The one composition of a measure: "SELECT [lead, ]CAST((<measure>) AS
 * numeric) FROM <from> AS backfill_rows [tail]" (from NULL: FROM the
 * backfill_rows CTE), the measure on lines of its own; the text returned
 * is proven (42601 when the measure would escape its parentheses).
 */
extern char *ComposeMeasureSelect(const char *lead, const char *measure,
								  const char *from, const char *tail);

/*
 * The earliest time from which a target's source is complete: now() -
 * retention, or the value of horizon_sql (run as the current user: the
 * caller enters the author gate first); false when there is neither, or
 * the query gives no row or NULL (used by plan and check).
 */
extern bool SourceHorizon(Interval *retention, const char *horizon_sql,
						  TimestampTz *horizon);

/* ---- statements composed around a target (compose.c) ---- */

/* The attribute number of a user column of target, 0 if none. */
extern AttrNumber ColumnAttnum(Oid target, const char *name);

/* The time column's type, after checking it exists and is usable. */
extern Oid	TimeColumnType(Oid target, const char *time_column);

/*
 * The statements that run on a target's range, each proven by the
 * function that returns its text (the user part parses to exactly the
 * text's own parse tree).  ComposeSourceInsert: the INSERT of the
 * source's rows, $1 = lo, $2 = hi as timestamptz plus $3, $4 in the time
 * column's type (SourceInsertParams).  ComposeRangeDelete: the DELETE of
 * the range (no user text), $1, $2 in the time column's type (RangeParams).
 * ComposeRangeExists: whether the range holds a row (no user text), with
 * the same parameters.
 */
extern char *ComposeSourceInsert(Oid target, const char *time_column,
								 const SourceQuery *source);
extern char *ComposeRangeDelete(Oid target, const char *time_column);
extern char *ComposeRangeExists(Oid target, const char *time_column);

/*
 * The parameters $1, $2 of a statement from ComposeRangeDelete (and of
 * MeasureRange): [lo, hi) as values of the time column's base type
 * (timestamptz, timestamp or date), computed in the session's TimeZone.
 */
extern void RangeParams(Oid target, const char *time_column, TimestampTz lo,
						TimestampTz hi, Oid *argtypes, Datum *values);

/*
 * The parameters of a statement from ComposeSourceInsert: $1, $2 = lo, hi
 * as timestamptz (the source's), $3, $4 as RangeParams gives them (the row
 * check's).  argtypes and values have room for 4.
 */
extern void SourceInsertParams(Oid target, const char *time_column,
							   TimestampTz lo, TimestampTz hi,
							   Oid *argtypes, Datum *values);

/* ---- The catalog's version (version.c) ---- */

/*
 * Raise 55000 unless extension backfill is installed here at the version
 * this library was built for (hint: ALTER EXTENSION backfill UPDATE).
 */
extern void RequireCatalogVersion(void);

/* Whether the installed extension is at the library's version (no error). */
extern bool CatalogVersionMatches(void);

/* ---- Citus (citus.c); no-ops without the citus extension ---- */

/* Raise 0A000 when this node is a Citus worker: backfill runs on the coordinator. */
extern void CitusRequireCoordinator(void);

/* "distributed", "reference" or "local" for a Citus table, else NULL. */
extern const char *CitusTableKind(Oid relid);

/* Raise 0A000 for strategy "swap" on a Citus table. */
extern void CitusCheckStrategy(Oid target, ReplaceStrategy strategy);

/* Whether strategy "auto" must not pick swap for target (a Citus table). */
extern bool CitusForbidsSwap(Oid target);

/*
 * Whether the background workers of parallel chunks must not join their
 * session's lock group here (citus is installed: Citus gives the members of
 * a lock group the leader's distributed transaction).
 */
extern bool CitusForbidsLockGroups(void);

/* ---- pg_cron's jobs, here or in another database (cronjobs.c) ---- */

/* The kinds of backfill's jobs: a run's, a standing check's, a refresh's. */
#define CRON_KIND_RUN		'r'
#define CRON_KIND_CHECK		'c'
#define CRON_KIND_REFRESH	'f'

/* A pg_cron job of backfill as recorded in cron.job. */
typedef struct CronJob
{
	int64		job_id;
	char	   *owner;			/* cron.job.username */
	char	   *jobname;
	char		kind;			/* CRON_KIND_* of its name */
	int64		id;				/* its run, check or refresh */
	bool		recorded;		/* that run, check or refresh records it */
	bool		finished;		/* that run is done, failed or cancelled */
	bool		parked;			/* its schedule never comes (cron.c) */
} CronJob;

/* Whether the pg_cron extension is installed in this database. */
extern bool PgCronInstalled(void);

/*
 * The database pg_cron serves (cron.database_name) when it is not this
 * one, else NULL; whether backfill may have jobs at all (pg_cron here, or
 * elsewhere).
 */
extern const char *CronElsewhere(void);
extern bool CronUsable(void);

/*
 * The pg_cron job name of a run, check or refresh: backfill_run_<id>, or
 * backfill_run_<id>@<OID of this database> when pg_cron is elsewhere.
 */
extern char *CronJobNameOf(char kind, int64 id);

/*
 * Every job of backfill for this database in pg_cron's job table; the job
 * job_id of (kind, id) if it exists under its name; remove jobs (not those
 * under way, or just ended, as "wait" says), returning those removed; park one (never
 * fires again); in a tick elsewhere, park the current user's job of (kind,
 * id) unless it is recorded_job.  All as the extension owner.
 */
extern List *CronListJobs(void);
extern bool CronFindJob(char kind, int64 id, int64 job_id, CronJob *job);
extern List *CronUnscheduleJobs(List *jobs, int wait);

/* What CronUnscheduleJobs waits for: nothing, a tick under way, a settled one. */
#define CRON_REMOVE_ANY		0
#define CRON_REMOVE_IDLE	1
#define CRON_REMOVE_SETTLED	2
extern void CronParkJob(char kind, int64 id, int64 job_id);
extern void CronParkLeftover(char kind, int64 id, int64 recorded_job);

/*
 * A job gone from pg_cron: its run, check or refresh forgets it (job_id
 * NULL, if it still records that job) and says why (last_error; a
 * refresh's last_message).
 */
extern void CronForgetJob(const CronJob *job, const char *why);

/*
 * Create the job of (kind, id) for the current user (the caller's own
 * cron.schedule here; cron.schedule_in_database elsewhere, with the
 * caller's USAGE on schema cron there), warning when its ticks will need a
 * libpq connection without a password; the job id.
 */
extern int64 CronCreateJob(char kind, int64 id, const char *cron,
						   const char *command, const char *what);

/*
 * The last finished ticks of the jobs given, newest first per job (job id,
 * status, return_message, end in microseconds since 1970, role); false
 * when pg_cron cannot be read (nothing raised).
 */
extern bool CronTickHistory(List *jobs, CronRows **rows);

/* ---- pg_cron (cron.c) ---- */

/* The "how to enable pg_cron" error unless backfill can create jobs. */
extern void RequirePgCron(const char *detail);

/* Whether the current backend is a pg_cron job (bgworker or libpq mode). */
extern bool ScheduleCalledFromCron(void);
extern bool ScheduleInCronWorker(void);

/*
 * Find a run's pg_cron job (as the extension owner); remove a run's job
 * (another role's only with that role's privileges when check); forget
 * the run's job id.
 */
extern bool CronLookupJob(int64 run_id, int64 job_id, CronJob *job);
extern void CronRemoveJob(int64 run_id, CronJob *job, bool check);
extern char *CronRemoveOwnJob(int64 job_id, char kind, int64 id,
							  bool *removed);
extern void CronClearJobId(int64 run_id, int64 job_id);

/*
 * Remove the pg_cron job of a run, if any; quiet when pg_cron is absent.
 * In a tick the job is parked instead.  When pg_cron is elsewhere, nothing
 * is removed at once: a person's call forgets the job (the sweeps remove
 * it), a tick parks it only when "settled" (the run's finished status was
 * committed before this transaction).
 */
extern bool ScheduleRemoveJob(int64 run_id, bool settled);

/*
 * Quiet hours: parse "HH:MM-HH:MM" (22007, 22023), the local minute of the
 * day of "at" in a time zone (NULL: the session's), and whether "at" is
 * inside the span.
 */
extern void ParseQuietHours(const char *text, int *start, int *end);
extern int	LocalMinuteOfDay(TimestampTz at, const char *tzname);
extern struct pg_tz *TimeZoneByName(const char *tzname);
extern int	MinuteOfDayInZone(TimestampTz at, struct pg_tz *tz);
extern bool InQuietHours(const char *quiet_hours, const char *tzname,
						 TimestampTz at);

/* Whether a tick of run's schedule may do work now (quiet hours). */
extern bool ScheduleTickAllowed(const char *quiet_hours, const char *timezone,
								TimestampTz now);

/* ---- cron expressions and the end of a schedule (cronexpr.c) ---- */

/*
 * When a run with chunks_left chunks, scheduled with cron (read in GMT, as
 * pg_cron reads it), chunks_per_tick and quiet_hours (NULL: none; local
 * time in timezone), would be done, from "since": the last tick's time in
 * *done_at.  False when the cron text is not understood or the end is more
 * than a year away.
 */
extern bool ScheduleEta(const char *cron, int32 chunks_per_tick,
						const char *quiet_hours, const char *timezone,
						int64 chunks_left, TimestampTz since,
						TimestampTz *done_at);

/* ---- the scheduling-role guard (jobguard.c) ---- */

/*
 * The current user has just made a pg_cron job of backfill: it holds the
 * guard (an explicit grant on backfill.scheduled_jobs), so DROP ROLE
 * refuses it.  Caller is connected to SPI.
 */
extern void JobGuardGrant(void);

/*
 * A backfill job of role "rolname" was removed: revoke its guard when it
 * has none left.  Caller is connected to SPI.
 */
extern void JobGuardRelease(const char *rolname);

/*
 * The event trigger's work (DROP OWNED, REVOKE: "command"): the roles
 * (OIDs) that have backfill jobs but no longer hold the guard lose them;
 * returns how many.  Caller holds the sweep lock and is connected to SPI.
 */
extern int	JobGuardRemoveJobs(List *roleids, const char *command);

/* ---- catalog readers (readers.c) ---- */

/*
 * What a run call needs to know about its run and target; loaded once per
 * call into a memory context that survives the per-chunk commits.
 */
typedef struct RunInfo
{
	int64		run_id;
	Oid			target;
	char	   *target_name;
	RunStatus	status;
	bool		probe;
	bool		backwards;
	bool		clear_no_source;
	int32		definition_version;
	char	   *timezone;
	char	   *search_path;
	char	   *created_by;
	Oid			created_by_oid;
	bool		scheduled;		/* it has a pg_cron job (job_id) */
	int64		job_id;
	char	   *quiet_hours;
	Interval   *chunk;			/* the run's chunk interval */
	int64		group_id;		/* 0 outside a group */
	char	   *note;
	TimestampTz range_start;
	TimestampTz range_end;
	char	   *relname;		/* the target's name as notices print it */
	/* whether backfill.targets still has the target */
	bool		registered;
	/* from the run's pinned version in backfill.definitions */
	Oid			author;
	char	   *time_column;
	char	   *measure;
	char	   *ledger;
	Datum		tolerance;
	bool		ledger_gate;
	ReplaceStrategy strategy;
	char	   *source;
	/* undo (doc/undo.md) */
	bool		keep_replaced;	/* the run keeps what it replaces */
	Interval   *keep_for;		/* the definition's keep_for; NULL: none */
	int64		reverts;		/* the run a revert run undoes; 0: none */
	bool		allow_empty;	/* no rows from the source is a valid answer */
	/* a revert run that is done: what it did to the definition (undo.c) */
	int32		restored_version;	/* made current again; 0: none */
	bool		restored_by_undo;	/* by the revert of a revert */
	int32		kept_version;	/* registered since, stays current; 0: none */
	struct ReplaceCache *replace_cache; /* this call's (RunReplaceCache) */
	/* a status the chunk engine wrote, for FinishRun (WriteRunStatus) */
	bool		finish_pending; /* done or failed: its pg_cron job goes */
	bool		restore_pending;	/* a revert run now done: its definition */
	/*
	 * NextChunk's last pick (0: none yet): no chunk before it in the run's
	 * order is still to do, so the scans for the next one start there
	 * instead of stepping over every chunk done so far (chunkstate.c).
	 */
	int32		todo_from;
} RunInfo;

/*
 * Read a run and its pinned definition version into the current memory
 * context; 42704 for an unknown or invisible run.  The caller must pass
 * CheckRunIdentity before acting on it: the run permission rule, and with
 * check_target the target's existence and privileges.
 */
extern RunInfo *LoadRun(int64 run_id);
extern void CheckRunIdentity(RunInfo *run, const char *action,
							 bool check_target);

/*
 * One definition version of a target, as the engine reads it: its text
 * runs only as its author (identity.c).
 */
typedef struct Definition
{
	Oid			target;
	int32		version;
	Oid			author;
	char	   *source;
	char	   *time_column;
	Interval   *chunk;
	Interval   *retention;		/* NULL when none */
	char	   *horizon;		/* query text, NULL when none */
	char	   *ledger;			/* NULL when none */
	char	   *measure;
	Datum		tolerance;		/* numeric */
	bool		ledger_gate;
	ReplaceStrategy strategy;
	bool		keep_replaced;	/* runs keep what they replace (undo) */
	bool		allow_empty;	/* no rows from the source is a valid answer */
} Definition;

/*
 * Definition "version" of a registered target (0: its current version),
 * into the current memory context; 42704 when the target is not
 * registered.  Caller is connected to SPI.
 */
extern Definition *LoadDefinition(Oid target, int32 version);

/* A standing check as backfill.checks records it. */
typedef struct CheckInfo
{
	int64		check_id;
	Oid			target;
	Interval   *lookback;
	bool		has_job;
	int64		job_id;
	char	   *created_by;
	Oid			created_by_oid;
} CheckInfo;

/*
 * The one reader of a standing check; 42704 when there is none.  Caller is
 * connected to SPI.
 */
extern CheckInfo *LoadCheck(int64 check_id);


/* ================================================================
 *		Layer 2: engine/ -- the chunk engine: ledger, replacement
 *		strategies, partitions, one chunk's execution
 * ================================================================
 */

/* ---- the ledger (ledger.c) ---- */

/*
 * Evaluate the ledger query for [lo, hi).  Sets *isnull when it returns
 * no row or NULL.
 */
extern Datum LedgerValue(const char *ledger, TimestampTz lo, TimestampTz hi,
						 bool *isnull);

/*
 * The single value of a ledger query's result in SPI_tuptable, as numeric,
 * in the upper executor context; *isnull for no row or NULL.
 */
extern Datum LedgerFromResult(bool *isnull);

/*
 * Compare a chunk's measure with the ledger figure: true when
 * |measure - ledger| <= tolerance * |ledger|.
 */
extern bool LedgerAgrees(Datum measure, Datum ledger, Datum tolerance);

/*
 * LedgerAgrees where a NULL on either side (sum() over no rows) counts
 * as 0, the rule of the gate and of reconcile.
 */
extern bool LedgerCompare(Datum measure, bool measure_null, Datum ledger,
						  bool ledger_null, Datum tolerance);

/* ---- archive tables as storage, from C only (archivestore.c) ---- */

/* The schema of the archive tables. */
#define ARCHIVE_SCHEMA "backfill_archive"

/*
 * Create table backfill_archive.<name> of the columns "desc" for "owner",
 * with "persistence" (RELPERSISTENCE_*), no grant, and with "brin" a BRIN
 * index on (_backfill_run, _backfill_chunk); returns its OID.  From C: no
 * SQL, no event trigger, no permission check.
 */
extern Oid	ArchiveStoreCreate(const char *name, TupleDesc desc, Oid owner,
							   char persistence, bool brin);

/* Drop an archive table (and what belongs to it) from C. */
extern void ArchiveStoreDrop(Oid relid);

/*
 * Open an archive table locked in "mode"; an internal error unless it is
 * a plain heap table of backfill_archive.
 */
extern Relation ArchiveStoreOpen(Oid relid, LOCKMODE mode);

/*
 * Whether an archive table is still as made: owned by "owner", no
 * trigger, rule, policy, constraint, default, generated or NOT NULL
 * column, only BRIN indexes on its run and chunk.
 */
extern bool ArchiveStoreIsPlain(Relation rel, Oid owner);

/* What ArchiveStoreAppend writes into an archive column (else a row's). */
#define ARCHIVE_MAP_NULL	(-1)
#define ARCHIVE_MAP_RUN		(-2)
#define ARCHIVE_MAP_CHUNK	(-3)

/*
 * Append the rows of "store" (of descriptor rowdesc) to archive table rel
 * (opened with ArchiveStoreOpen, RowExclusiveLock, and plain): map has one
 * entry per attribute of rel, the row's column it takes or ARCHIVE_MAP_*.
 * Returns how many rows were written.
 */
extern int64 ArchiveStoreAppend(Relation rel, const int *map,
								TupleDesc rowdesc, Tuplestorestate *store,
								int64 run_id, int32 chunk_no);

/* Called with each row an archive scan finds, in a slot of the table's. */
typedef void (*ArchiveRowFn) (TupleTableSlot *slot, void *arg);

/*
 * Call fn for every row of archive table rel kept by run_id (by its chunk
 * chunk_no; 0: every chunk); returns how many.
 */
extern int64 ArchiveStoreScan(Relation rel, int64 run_id, int32 chunk_no,
							  ArchiveRowFn fn, void *arg);

/* Call fn for every row of a table of backfill_archive (a kept leaf's). */
extern int64 ArchiveStoreScanAll(Relation rel, ArchiveRowFn fn, void *arg);

/* Delete the rows ArchiveStoreScan would find; returns how many. */
extern int64 ArchiveStoreDelete(Relation rel, int64 run_id, int32 chunk_no);

/*
 * A valid index of rel of access method am, open, whose first key is
 * column attnum (in operator family opfamily unless InvalidOid), with no
 * expression or predicate; NULL when none.
 */
extern Relation IndexOnColumn(Relation rel, Oid am, AttrNumber attnum,
							  Oid opfamily);

/* ---- the archive of replaced rows (archive.c, archivemove.c, archivediff.c) ---- */

/* Where a keeping chunk puts the rows it replaces: its run and chunk. */
typedef struct ArchiveKeep
{
	int64		run_id;
	int32		chunk_no;
	Interval   *keep_for;		/* NULL: until purged */
} ArchiveKeep;

/*
 * Delete the target's rows in [lo, hi) as the current user and move them
 * into the target's archive (a table made on first use) under keep's run
 * and chunk, recorded in backfill.archived_chunks; returns how many.
 */
extern int64 ArchiveDeleteRange(Oid target, const char *time_column,
								TimestampTz lo, TimestampTz hi,
								const ArchiveKeep *keep);

/*
 * Insert, as the current user, the rows chunk chunk_no of run_id kept
 * (in an archive table, or in kept leaves' tables) back into the target;
 * 55000 when it kept nothing or they were purged.
 */
extern int64 ArchiveRestoreRows(Oid target, int64 run_id, int32 chunk_no);

/* A column of the kept rows ArchiveRegisterKept registers. */
typedef struct KeptColumn
{
	char	   *name;			/* the target's column (not quoted) */
	Oid			target_type;	/* its type in the target now */
	Oid			type;			/* its type in the kept rows */
	int32		typmod;
	Oid			collation;
	bool		rendered;		/* type is text: each kept value as its own
								 * type's output (the column's type changed
								 * since the rows were kept) */
} KeptColumn;

/*
 * Register the kept rows of run_id (of chunk_no; 0: every chunk) as the
 * relation "name" on the caller's SPI connection: the columns *columns
 * (*ncolumns of them), then _backfill_chunk.  Returns the store, which the
 * caller ends (tuplestore_end) after unregistering it.  The caller checks
 * the reader's rights first.
 */
extern Tuplestorestate *ArchiveRegisterKept(Oid target, int64 run_id,
											int32 chunk_no, const char *name,
											KeptColumn **columns,
											int *ncolumns);

/*
 * Register the rows the target holds now in the n ranges los[i] to his[i]
 * (values of the time column's base type, in time order), each with its
 * chunk number nos[i], as the relation "name" on the caller's SPI
 * connection: the columns "columns" (as ArchiveRegisterKept made them),
 * then _backfill_chunk; read from C.  Returns the store, which the caller
 * ends after unregistering it.
 */
extern Tuplestorestate *ArchiveRegisterNow(Oid target, const char *time_column,
										   const KeptColumn *columns,
										   int ncolumns, int n,
										   const int32 *nos, const Datum *los,
										   const Datum *his, const char *name);

/*
 * Keep the files of the leaf partitions "leaves" (OIDs) of target, whose
 * rows chunk "keep" replaces, in kept tables of backfill_archive
 * (keptleaf.c), leaving the leaves empty; rows: how many rows they held.
 * Caller is connected to SPI and holds the chunk's locks.
 */
extern void ArchiveKeepLeaves(Oid target, List *leaves,
							  const ArchiveKeep *keep, int64 rows);

/* Whether chunk chunk_no of run_id (0: any chunk) kept leaves. */
extern bool ArchiveHasKeptLeaves(int64 run_id, int32 chunk_no);

/*
 * Whether the leaves chunk chunk_no of run_id kept can take their kept
 * files back as they are: each still a partition of target, under the
 * same columns, constraints, domains and triggers as when kept.  Else a
 * revert puts their rows back with ArchiveRestoreRows (an INSERT, which
 * checks them).
 */
extern bool ArchiveLeavesUnchanged(Oid target, int64 run_id, int32 chunk_no);

/*
 * Put back the leaves chunk chunk_no of run "reverted" kept, by exchanging
 * files again; what they held (rows_now rows) is kept under "keep".
 * Returns the rows put back.
 */
extern int64 ArchiveRestoreLeaves(Oid target, int64 reverted, int32 chunk_no,
								  const ArchiveKeep *keep, int64 rows_now);

/* ---- inside the archive: columns, generations, records (archive.c) ---- */

/* The columns of a relation (not dropped), in attribute order. */
typedef struct RelColumns
{
	int			n;
	char	  **names;
	AttrNumber *attnums;
	Oid		   *types;			/* as declared (a domain, maybe) */
	Oid		   *bases;			/* the base type of each */
	int32	   *typmods;		/* the base type's typmod */
	Oid		   *collations;
	bool	   *generated;
} RelColumns;

/* The columns of rel (or relid) but dropped ones and the archive's own. */
extern RelColumns *ReadColumns(Relation rel);
extern RelColumns *ReadColumnsOf(Oid relid);

/* The position of column "name" in cols, -1 when absent. */
extern int	ColumnIndex(const RelColumns *cols, const char *name);

/* The descriptor of rows of the columns "which" (n), each of its base type. */
extern TupleDesc RowsDesc(const RelColumns *cols, const int *which, int n);

/* The quoted names of the columns "which" (n), each after "prefix". */
extern char *ColumnList(const RelColumns *cols, const int *which, int n,
						const char *prefix);

/* The owner of relation relid. */
extern Oid	RelOwner(Oid relid);

/* Whether archive table rel takes rows of cols as they are; fills map. */
extern bool ArchiveFits(Relation rel, Oid owner, const RelColumns *cols,
						int *map);

/* The archive table that takes the rows chunk keep of target deletes. */
extern Oid	ArchiveFor(Oid target, const RelColumns *cols,
					   const ArchiveKeep *keep);

/* The catalog's record of a kept chunk (archive InvalidOid: kept leaves). */
extern void RecordKept(Oid target, const ArchiveKeep *keep, Oid archive,
					   int64 rows);

/* The catalog's record that chunk keep kept leaf's files in table kept. */
extern void RecordLeaf(Oid target, const ArchiveKeep *keep, Oid leaf,
					   Oid kept);

/* The leaves chunk chunk_no of run_id kept (0: every chunk), in 3 lists. */
extern void KeptLeaves(int64 run_id, int32 chunk_no, List **leaves,
					   List **kepts, List **chunks);

/* 55000 unless chunk chunk_no of run_id kept rows not purged: how many. */
extern int64 CheckKept(int64 run_id, int32 chunk_no, Oid *archive);

/* ---- inside the archive: kept rows read back (archivemove.c) ---- */

/* 55000 when archive table rel lost a column (a DROP ... CASCADE). */
extern void CheckNoLostColumn(Relation rel, int64 run_id);

/* 42501 unless the kept rows of rel (from table "from") are the caller's. */
extern void CheckKeptOwner(Relation rel, Oid from, int64 run_id);

/*
 * How a kept column is read into a store: from attribute "attnum" of the
 * archive (0: none, NULL), as it is or as its text ("out": the output
 * function of its type).
 */
typedef struct StoreColumn
{
	AttrNumber	attnum;
	Oid			out;			/* InvalidOid: the value as it is */
} StoreColumn;

/* The state of ArchiveStoreScan's callback that fills a store. */
typedef struct FillState
{
	Tuplestorestate *store;
	TupleDesc	desc;			/* of the store's rows */
	int			ncols;			/* columns of desc read from the archive */
	StoreColumn *cols;
	int32		chunk_no;		/* with_chunk and chunk_no 0: the row's */
	AttrNumber	chunkatt;		/* the archive's chunk column; 0: none */
	bool		with_chunk;		/* the last column of desc is the chunk */
	Datum	   *values;
	bool	   *nulls;
	MemoryContext row_cxt;
} FillState;

/* Put one kept row into the store of arg (a FillState *): ArchiveRowFn. */
extern void FillRow(TupleTableSlot *slot, void *arg);

/* A FillState for rows of desc into store, ncols read from the archive. */
extern FillState *FillStart(Tuplestorestate *store, TupleDesc desc, int ncols,
							bool with_chunk);

/* ---- kept leaves (keptleaf.c) ---- */

/* Whether a leaf's files can be kept: a plain heap, no dropped column. */
extern bool KeptLeafEligible(Oid leaf);

/*
 * Create the (empty) table of backfill_archive, owned by the leaf's owner,
 * of the leaf's columns, that will hold the files leaf "leaf" had before
 * chunk chunk_no of run_id; returns its OID.
 */
extern Oid	KeptLeafCreate(Oid leaf, int64 run_id, int32 chunk_no);

/*
 * Exchange the files of leaf and kept (55000 when their columns differ)
 * and rebuild the leaf's indexes; the caller holds the chunk's lock.
 */
extern void KeptLeafExchange(Oid leaf, Oid kept);

/* ---- purging the archive (archivepurge.c) ---- */

/*
 * Remove the kept rows of chunks kept at least older_than ago (NULL: of
 * chunks past their keep_until), of one target or all (InvalidOid); with
 * only_permitted, only of runs the caller may act on.  Returns the number
 * of chunks purged.
 */
extern int64 ArchivePurge(Oid target, Interval *older_than,
						  bool only_permitted);

/* ---- replacing a range (replace.c, partition.c, strategy.c) ---- */

/* What a replacement did. */
typedef struct ReplaceResult
{
	int64		rows_deleted;
	int64		rows_inserted;
	bool		have_values;	/* measure was computed */
	Datum		before_value;	/* numeric, valid if have_values */
	bool		before_null;
	Datum		after_value;
	bool		after_null;
	ReplaceStrategy strategy;	/* the strategy actually used */
} ReplaceResult;

/*
 * One replacement of a target's range, as ReplaceRange and its family take
 * it (strategy.c, replace.c, partition.c).  source and measure are the
 * definition's texts (measure NULL: none); keep NULL: nothing is kept.
 * cache (may be NULL) is the state kept for the chunks of one call
 * (RunReplaceCache): the source and measure validated, the user's DELETE
 * and INSERT composed and prepared as the author, checked against the
 * request and the current user on every use.
 */
typedef struct ReplaceCache ReplaceCache;

typedef struct ReplaceRequest
{
	Oid			target;
	const char *time_column;
	TimestampTz lo;
	TimestampTz hi;
	const char *source;
	ReplaceStrategy strategy;
	const char *measure;
	const ArchiveKeep *keep;
	ReplaceCache *cache;
} ReplaceRequest;

/*
 * The request for [lo, hi) of a run's chunk, from its pinned definition
 * (strategy.c), with the run's per-call cache; keep as given.
 */
extern void RunReplaceRequest(RunInfo *run, TimestampTz lo, TimestampTz hi,
							  const ArchiveKeep *keep, ReplaceRequest *req);

/*
 * The per-call cache of a run (strategy.c), made on first use in the run's
 * memory context; its prepared plans are freed when that context goes,
 * at the end of the call or on error.
 */
extern ReplaceCache *RunReplaceCache(RunInfo *run);

/*
 * The request's source validated (ValidateSourceQuery) and its measure
 * (ValidateMeasure, NULL when none) into *measure (replace.c): from the
 * request's cache when it was made for the same request, user,
 * search_path and relcache state, else validated now (and cached).
 */
extern SourceQuery *ReplaceValidate(const ReplaceRequest *req,
									const char **measure);

/*
 * The delete strategy (replace.c): DELETE the range, INSERT the source's
 * rows (source: validated; req->measure: validated); connects to SPI
 * itself, figures in the caller's memory context.
 */
extern void ReplaceByDelete(const ReplaceRequest *req,
							const SourceQuery *source,
							ReplaceResult *result);

/*
 * Count and measure the target's rows in [lo, hi) into result->rows_deleted
 * and before_value (replace.c); the caller is connected to SPI.
 */
extern void MeasureRange(Oid target, const char *time_column,
						 TimestampTz lo, TimestampTz hi, const char *measure,
						 MemoryContext outcxt, ReplaceResult *result);

/*
 * Delete the target's rows in [lo, hi) only (no_source chunks; replace.c),
 * into the archive when keep is not NULL.
 */
extern int64 ClearRange(const ReplaceRequest *req);

/*
 * A revert chunk (replace.c): the rows in [lo, hi) move into the archive
 * under keep, the rows chunk chunk_no of run "reverted" kept come back;
 * measured as ReplaceByDelete.  Connects to SPI itself.
 */
extern void RevertRange(const ReplaceRequest *req, int64 reverted,
						int32 chunk_no, ReplaceResult *result);

/*
 * The strategy for [lo, hi) (partition.c): delete, truncate or swap.
 * Auto picks the fastest that is safe; an explicit truncate or swap that
 * is not safe raises 22023 (range not aligned) or 55000.
 */
extern ReplaceStrategy ChooseStrategy(Oid target, const char *time_column,
									  ReplaceStrategy strategy,
									  TimestampTz lo, TimestampTz hi);

/*
 * Replace [lo, hi) by truncate or swap ("chosen", from ChooseStrategy),
 * filling result (partition.c); with keep (not NULL), the replaced leaves'
 * files are kept first (ArchiveKeepLeaves).  Connects to SPI itself; call
 * it outside SPI or with CurrentMemoryContext the context the results must
 * live in.
 */
extern void PartitionReplaceRange(const ReplaceRequest *req,
								  const SourceQuery *source,
								  ReplaceStrategy chosen,
								  ReplaceResult *result);

/*
 * The strategy of a keeping chunk (strategy.c): truncate or swap when the
 * chunk replaces whole leaves it can keep (PartitionCanKeepLeaves) and
 * "strategy" allows it, else delete; never an error.
 */
extern ReplaceStrategy KeepStrategy(Oid target, const char *time_column,
									ReplaceStrategy strategy,
									TimestampTz lo, TimestampTz hi);

/*
 * Whether a keeping chunk [lo, hi) replaced by truncate or swap can keep
 * its leaves' files (every affected leaf KeptLeafEligible, no Citus).
 */
extern bool PartitionCanKeepLeaves(Oid target, const char *time_column,
								   TimestampTz lo, TimestampTz hi);

/*
 * The chunk lock of a partitioned target (partition.c): RowExclusiveLock
 * on the target and intermediate partitioned tables, "lockmode" on the
 * affected leaves only (AccessExclusiveLock when "strategy" resolves to
 * truncate or swap for the chunk).  A table that is not partitioned is
 * locked in "lockmode".
 */
extern void LockAffectedPartitions(Oid target, const char *time_column,
								   TimestampTz lo, TimestampTz hi,
								   ReplaceStrategy strategy, int lockmode);

/*
 * Replace the target's rows in [lo, hi) by what source yields for
 * $1 = lo, $2 = hi, in the current transaction (strategy.c): checks, then
 * ChooseStrategy, then ReplaceByDelete or PartitionReplaceRange.  When
 * measure is not NULL the measure is evaluated over the deleted and the
 * inserted rows.  With keep (not NULL), the replaced leaves' files are kept
 * when the chunk replaces whole leaves by truncate or swap, else the
 * delete strategy moves the deleted rows into the archive.
 */
extern void ReplaceRange(const ReplaceRequest *req, ReplaceResult *result);

/* ---- changed regions: the chunk engine's hooks (watchhook.c) ---- */

/*
 * A chunk whose end passes target's watermark waits for the writers of its
 * watched sources and holds the watch lock until it commits (before the
 * target lock: a writer may write the target too).  Returns whether
 * ChunkConsumeChanges has anything to do for [lo, hi) (false: nothing was
 * logged there before this call).
 */
extern bool ChunkLockWatermark(Oid target, TimestampTz lo, TimestampTz hi);

/*
 * Delete target's logged changes in [lo, hi) that the statement's snapshot
 * sees, before the chunk reads its source; a logged region sticking out of
 * the chunk keeps its parts outside.
 */
extern void ChunkConsumeChanges(Oid target, TimestampTz lo, TimestampTz hi);

/*
 * A chunk recorded once until a build consumes it (watchrecorded.c):
 * KeepUnrecorded clears keep[i] for each of m rows about to be appended to
 * backfill.changed_regions whose chunk and source another transaction
 * recorded and no build consumed (holding the target's RECORDED lock, so
 * none can before this transaction ends), and returns how many are kept.
 */
extern int	KeepUnrecorded(int m, const Datum *targets, const Datum *starts,
						   const Datum *ends, const Datum *sources, bool *keep);

/*
 * Run "record" (an UPDATE of backfill.chunks, its parameters in args) and
 * move target's watermark forward to "end", in one statement; args gets two
 * more parameters.
 */
extern void ChunkAdvanceWatermark(const char *record, CatalogArgs *args,
								  Oid target, TimestampTz end);

/*
 * The relcache invalidation of backfill.watches that tells every backend's
 * cache of watches and watermarks (watchlog.c) to read them again, sent at
 * commit: called by whatever changes the watches, a target's watermark or
 * its chunk.
 */
extern void InvalidateWatchCache(void);

/* ---- one chunk of a run (chunk.c, chunkstate.c, preview.c) ---- */

/* One chunk picked for execution, copied out of SPI. */
typedef struct ChunkInfo
{
	int32		chunk_no;
	TimestampTz start;
	TimestampTz end;
	bool		no_source;
	int32		deferrals;
} ChunkInfo;

/* How one chunk's execution ended. */
typedef enum ChunkOutcome
{
	OUTCOME_DONE,				/* committed */
	OUTCOME_DEFERRED,			/* lock timeout: still pending */
	OUTCOME_FAILED				/* recorded as failed */
} ChunkOutcome;

/* What one chunk did, for its NOTICE and for the run loop. */
typedef struct ChunkReport
{
	ChunkOutcome outcome;
	int64		rows_deleted;
	int64		rows_inserted;
	bool		ledger_checked;
	bool		ledger_ok;
	RunStatus	run_status;		/* the run's status after the chunk (not for
								 * a deferral) */
	double		elapsed_ms;
	ErrorData  *error;			/* for DEFERRED and FAILED */
	FailureCause cause;			/* for FAILED */
	int32		deferrals;
} ChunkReport;

/* The chunk engine; callers are connected to SPI. */
extern bool RemainingChunks(RunInfo *run);

/*
 * The run's status written by the chunk engine, after chunk chunk_no
 * decided it (0: none), which the notification of the status names; no
 * pg_cron job and no definition is touched: a run it finishes is marked
 * for FinishRun (run->finish_pending, run->restore_pending).
 */
extern RunStatus WriteRunStatus(RunInfo *run, RunStatus status,
								int32 chunk_no);

extern bool NextChunk(RunInfo *run, ChunkInfo *chunk, RunStatus *run_status);
extern bool RunHasDoneChunk(int64 run_id);
extern void ExecuteChunk(RunInfo *run, ChunkInfo *chunk, bool probe_pending,
						 RunStatus run_status, const char *via,
						 const char *user, ChunkReport *report);

/*
 * Whether this backend's chunks take their target's locks in modes that do
 * not conflict with the other chunks of their call (a parallel worker in no
 * lock group, on a Citus coordinator; chunk.c).
 */
extern void SetChunkLocksShared(bool shared);

/*
 * Parallel chunks (parallel.c): the leader's next chunk after chunk_no
 * "after" (0: from the start), unlocked; the worker's claim of its chunk
 * (row locked); what the worker recorded (false: nothing); and a chunk
 * failed outside its own transaction (also the run).  Callers are
 * connected to SPI.
 */
extern bool PeekChunkAfter(RunInfo *run, int32 after, ChunkInfo *chunk,
						   int32 *attempts, RunStatus *run_status);
extern bool ClaimChunk(RunInfo *run, int32 chunk_no, ChunkInfo *chunk,
					   RunStatus *run_status);
extern RunStatus ReadRunStatus(int64 run_id);
/*
 * ReadRunStatus after waiting for a transaction changing the run's row
 * (backfill.cancel) to end.
 */
extern RunStatus ReadRunStatusSettled(int64 run_id);
extern bool ReadChunkOutcome(RunInfo *run, ChunkInfo *chunk,
							 int32 attempts_before, ChunkStatus *status,
							 ChunkReport *report);
extern void RecordChunkFailure(RunInfo *run, ChunkInfo *chunk,
							   ErrorData *edata, FailureCause cause);

/* What preview finds: the replacement's figures and the ledger's. */
typedef struct PreviewResult
{
	ReplaceResult rr;
	Datum		ledger_value;	/* numeric, valid unless ledger_null */
	bool		ledger_null;
} PreviewResult;

/*
 * preview: what replacing [lo, hi) would do, rolled back.  Caller is
 * connected to SPI; the figures are in its memory context.
 */
extern void PreviewRange(Oid target, TimestampTz lo, TimestampTz hi,
						 PreviewResult *out);


/* ================================================================
 *		Layer 3: orchestration/ -- targets, dependencies, lineage,
 *		plans, groups, scheduling, runs, reconciliation
 * ================================================================
 */

/* ---- targets and their definition versions (registry.c) ---- */

/* What register is given. */
typedef struct Registration
{
	Oid			target;
	const char *time_column;
	const char *source;
	const char *label;			/* NULL: none */
	Interval   *chunk;
	Interval   *retention;		/* NULL: none */
	const char *horizon;		/* NULL: none */
	const char *ledger;			/* NULL: none */
	const char *measure;
	Datum		tolerance;		/* numeric */
	bool		ledger_gate;
	bool		keep_replaced;	/* keep what the runs replace (undo) */
	Interval   *keep_for;		/* NULL: until purged */
	Datum		key;			/* name[] of the diff key; 0: none */
	bool		allow_empty;	/* no rows from the source is a valid answer */
} Registration;

/* A registration checked, its texts validated (CheckRegistration). */
typedef struct ValidRegistration
{
	SourceQuery *sq;			/* the source */
	const char *measure;
	const char *ledger;			/* NULL: none */
	const char *horizon;		/* NULL: none */
} ValidRegistration;

/*
 * register in two steps (registry.c): the checks of what it is given, then
 * the target's plan lock (CheckRegistration); the definition version it
 * makes, made current (WriteRegistration) -> the version.  What a feature
 * adds in between is RegisterTarget's (lifecycle.c).  Callers are
 * connected to SPI.
 */
extern ValidRegistration *CheckRegistration(const Registration *reg);
extern int32 WriteRegistration(const Registration *reg,
							   const ValidRegistration *valid);

/*
 * export_definitions: the SQL that registers again the current definitions
 * of targets (NULL: every target the caller may read), with their
 * strategies, watches, dependencies, standing checks and refresh jobs;
 * idempotent, read under the caller's row-level security (export.c).
 * Caller is connected to SPI.
 */
extern char *ExportDefinitions(ArrayType *targets);

/* set_strategy -> the previous strategy.  Caller is connected to SPI. */
extern ReplaceStrategy SetTargetStrategy(Oid target, ReplaceStrategy strategy);

/* ---- dependencies between targets (dependencies.c) ---- */

/* The dependencies among the targets of a cascading plan. */
typedef struct Edges
{
	int			n;
	Oid		   *down;
	Oid		   *up;
} Edges;

/*
 * depend -> true when added (a cycle is refused with 42P17); undepend ->
 * true when removed.  Callers are connected to SPI.
 */
extern bool AddDependency(Oid down, Oid up);
extern bool RemoveDependency(Oid down, Oid up);

/*
 * Unregister's part: refuse (2BP01) while targets depend on target unless
 * cascade, then forget its dependencies.  Caller is connected to SPI.
 */
extern void PipelineForgetTarget(Oid target, const char *name, bool cascade);

/*
 * The target and every target built from it, in dependency order (ties by
 * name); *edges gets the dependencies among them.  Caller is connected to
 * SPI.
 */
extern List *DownstreamOrder(Oid root, Edges *edges);

/* ---- changed regions: watched sources (watch.c, watchtriggers.c) and their log (watchlog.c) ---- */

/*
 * watch -> true when the watch is new (its triggers are installed on the
 * source and its partitions); unwatch -> the watches removed (source
 * InvalidOid: all of the target's).  Callers are connected to SPI.
 */
extern bool WatchSource(Oid target, Oid source, const char *time_column,
						const Interval *settle);
extern int32 UnwatchSource(Oid target, Oid source);

/*
 * The triggers of a watched source (watchtriggers.c): installed on it and
 * its partitions where missing, as the caller; dropped where no other watch
 * needs them and the caller owns the table; 42501 before anything is
 * written when a partition that lacks them is one the caller may not put
 * triggers on.  Callers are connected to SPI.
 */
extern void WatchInstallTriggers(Oid source);
extern void WatchDropTriggers(Oid source);
extern void WatchCheckPartitionRights(Oid source);

/*
 * The event trigger's work after CREATE TABLE ... PARTITION OF or ALTER
 * TABLE ... ATTACH PARTITION: the watch's statement triggers on the new
 * partitions of watched sources, as the role that ran the command.  Caller
 * is connected to SPI, inside the event trigger.
 */
extern void WatchNewPartitions(void);

/*
 * The event trigger's work after ALTER TABLE ... RENAME COLUMN old TO new:
 * the watches of the renamed table and of the tables below it that name
 * the column follow it, and so do their row triggers' names.  Caller is
 * connected to SPI, inside the event trigger.
 */
extern void WatchRenamedColumn(const char *oldname, const char *newname);

/*
 * The event trigger's work after ALTER TABLE ... DROP COLUMN column: an
 * error when a watch of the altered table, or of a table below it that lost
 * the column, uses it (its INSERT row trigger would be gone).  Caller is
 * connected to SPI, inside the event trigger.
 */
extern void WatchDroppedColumn(const char *column);

/*
 * The relations the DDL command that fired the event trigger made or
 * altered (watchtriggers.c): with columns, those whose column it changed,
 * else those it named as a whole.  Caller is connected to SPI, inside the
 * event trigger.
 */
extern List *WatchCommandRelations(bool columns);

/*
 * The tables that inherit from a watched table by plain INHERITS
 * (watchinherit.c), whose own rows its watch does not see: a NOTICE after
 * watch naming those its target does not watch (WatchNoticeChildren), and
 * a WARNING from the event trigger after a command that made a table
 * inherit from a watched one (WatchNewChildren), each with the watch call
 * that records them.  Callers are connected to SPI.
 */
extern void WatchNoticeChildren(Oid target, Oid source, const char *column);
extern void WatchNewChildren(void);

/*
 * unwatch's work without its privilege check, also for unregister (of a
 * dropped table too): the watches removed.  Caller is connected to SPI.
 */
extern int32 WatchForgetTarget(Oid target, Oid source);

/*
 * The smallest chunk of a watched target (register, watch): a write records
 * at most one row per chunk it touches behind the watermark, so the chunk
 * bounds the log a write makes (doc/changed-regions.md).
 */
#define BACKFILL_WATCH_MIN_CHUNK_USECS	USECS_PER_HOUR

/*
 * 22023 when target would be watched with a chunk shorter than
 * BACKFILL_WATCH_MIN_CHUNK_USECS: by a new definition of a watched target
 * (watching false), or by a new watch of a target with that chunk.  Caller
 * holds the target's plan lock and is connected to SPI.
 */
extern void CheckWatchedChunk(Oid target, const Interval *chunk, bool watching);

/* One logged region of a target and its earliest change. */
typedef struct ChangedRegion
{
	TimestampTz lo;
	TimestampTz hi;
	TimestampTz changed_at;
} ChangedRegion;

/*
 * The logged regions of target that overlap [lo, hi) (watchrecorded.c),
 * distinct, in order of start, with their earliest changed_at; returns
 * their number, *out palloc'd.  Caller is connected to SPI.
 */
extern int	LoadChangedRegions(Oid target, TimestampTz lo, TimestampTz hi,
							   ChangedRegion **out);

/* ---- the watches of a relation, cached and per transaction (watchcache.c) ---- */

/*
 * One target watching a source, as the trigger needs it.  A row is
 * recorded when it lies before "edge", the later of the target's
 * watermark (the newest chunk end backfill built) and the watch's live
 * edge (the start of the chunk that contains now - settle: the chunks
 * before it have ended at least settle ago, and count as built by the job
 * that fills the table).  The live edge is kept in the cache entry with
 * the time until which it holds (live_until), and computed again after.
 */
typedef struct WatchEntry
{
	Oid			target;
	Oid			source;
	char	   *time_column;
	AttrNumber	attnum;			/* time_column's number in source */
	char	   *timezone;
	struct pg_tz *tz;			/* timezone, loaded (NULL: unknown zone) */
	Interval   *chunk;
	Interval   *settle;
	bool		has_watermark;
	TimestampTz watermark;
	bool		live_known;		/* live_edge and live_until are set */
	TimestampTz live_edge;
	TimestampTz live_until;
	TimestampTz edge;			/* this transaction's: rows before it count */
} WatchEntry;

/* The watches of one relation the trigger fired on, for this transaction. */
typedef struct RelWatches
{
	Oid			relid;			/* hash key */
	bool		rows_loaded;	/* LoadRowSources has run for it */
	int			n;
	WatchEntry *entries;
} RelWatches;

/*
 * A new hash of entries of entrysize whose key (at their start) is keysize
 * bytes, in memory context cxt; ClearHash empties one of the
 * per-transaction hashes (a large one is dropped: *hash set to NULL).
 */
extern HTAB *WatchHash(const char *name, Size keysize, Size entrysize,
					   long nelem, MemoryContext cxt);
extern void ClearHash(HTAB **hash);

/*
 * The keys entered into a per-transaction hash keyed by an OID since it was
 * last emptied, while they are few (HashKeysAdd), so that ClearHashKeys
 * empties it by key instead of scanning every bucket; past
 * HASH_KEYS_MAX it scans (ClearHash).
 */
#define HASH_KEYS_MAX 8
typedef struct HashKeys
{
	int			n;				/* HASH_KEYS_MAX + 1: too many kept */
	Oid			keys[HASH_KEYS_MAX];
} HashKeys;

static inline void
HashKeysAdd(HashKeys *k, Oid key)
{
	if (k->n < HASH_KEYS_MAX)
		k->keys[k->n++] = key;
	else
		k->n = HASH_KEYS_MAX + 1;
}
extern void ClearHashKeys(HTAB **hash, HashKeys *keys);

/*
 * Make a watch's TimeZone the session's (unless it is already) for what
 * follows, and give the session's back: EnterZone's result to LeaveZone.
 */
extern int	EnterZone(const char *timezone);
extern void LeaveZone(int nest);

/*
 * The targets watching relation relid (a watched source, or a partition of
 * one) for this transaction, with their watch locks held and each watch's
 * edge; FindRelWatches: those already loaded, else NULL (reads memory
 * only); ForgetRelWatches: at the end of the transaction (xact_end) or of
 * an aborted subtransaction.
 */
extern RelWatches *LoadRelWatches(Oid relid);
extern RelWatches *FindRelWatches(Oid relid);
extern void ForgetRelWatches(bool xact_end);

/*
 * Before a call of the trigger first reads or writes backfill's catalog:
 * its checks, then, with spi, a connection to SPI (watchlog.c).
 */
extern void WatchCatalog(bool spi);

/*
 * Around a trigger call: no check made and no connection yet, and at its
 * end the connection closed and the state of an enclosing call given back.
 */
extern void WatchCatalogBegin(bool *checked, bool *open);
extern void WatchCatalogEnd(bool checked, bool open);

/*
 * The per-transaction state of the watch triggers (watchlog.c), shared
 * with the statement path (watchstatement.c): WatchState makes it on first
 * use; LogClaim says whether the transaction still has to write a chunk
 * of a target (not yet written, or only noted by _watch_row) and marks it
 * written; WriteChangedRegions appends m rows of backfill.changed_regions;
 * FlushPending writes what the INSERT row triggers noted.
 */
extern void WatchState(void);
extern bool LogClaim(Oid target, TimestampTz start);
extern void WriteChangedRegions(int m, const Datum *targets,
								const Datum *starts, const Datum *ends,
								const Datum *sources);
extern void FlushPending(void);

/*
 * A row trigger's WHEN clause that is exactly a call of backfill._watch_row
 * (watchcall.c, ReadWatchRowCall: true then, its parts filled): the
 * call, its source, its column (an int2 number or a name, coltype) and the
 * number of NEW's column it passes, in the trigger's own table.  The form
 * _watch_row(NEW.tableoid, NEW.column) names no source (InvalidOid: the
 * trigger's own table) and its column is that number (INT2OID); the form
 * _watch_row(source, NEW.tableoid, NEW.column) has coltype OIDOID and no
 * column: the row's table is the trigger's, in which NEW's column names it.
 */
typedef struct WatchRowCall
{
	struct FuncExpr *call;
	Oid			source;
	Oid			coltype;
	Datum		column;
	AttrNumber	attnum;
} WatchRowCall;

extern bool ReadWatchRowCall(Node *node, WatchRowCall *out);

/*
 * What a _watch_row call site passes (watchcall.c): WatchCallForm, the
 * types of its column and time arguments and, for the forms
 * _watch_row(NEW.tableoid, NEW.column) and _watch_row(source, NEW.tableoid,
 * NEW.column), that column's number (read from the call's expression;
 * InvalidAttrNumber when it passes no column);
 * WatchValueTime, a time value of that type as timestamptz, a timestamp
 * or date read in zone tz (false out of range).
 */
extern void WatchCallForm(FmgrInfo *flinfo, Oid *coltype, Oid *argtype,
						  bool *by_table, AttrNumber *attnum);
extern bool WatchValueTime(Datum value, Oid argtype, struct pg_tz *tz,
						   TimestampTz *t);

/*
 * A watch's time column (watchcall.c): WatchedColumn, its number in rel
 * (the source or a partition) and its base type; WatchedColumnGone, the
 * error (42703) of a column gone or no longer of a time type, so that
 * writes fail rather than silently record nothing; WatchSourceColumn, the
 * number in the source of the column of the row's table a _watch_row call
 * passes, found by its name.
 */
extern AttrNumber WatchedColumn(Relation rel, WatchEntry *w, Oid *basetype);
BackfillNoReturn extern void WatchedColumnGone(WatchEntry *w);
extern AttrNumber WatchSourceColumn(Oid source, Oid rel, AttrNumber attnum);

/*
 * The INSERT row triggers' loads (watchlog.c): LoadRowSources, the
 * watches of the table a row event (or an earlier build's BEFORE INSERT
 * statement trigger) fired on, kept for its row triggers; NoteEventRow
 * (watchevent.c), the row of an INSERT row event whose WHEN clause could
 * not load the watches, noted as that clause would have with them.
 */
struct TriggerData;
extern void LoadRowSources(Relation rel);
extern void NoteEventRow(struct TriggerData *trigdata);

/*
 * For NoteEventRow (watchevent.c), from the INSERT path (watchlog.c and
 * watchcache.c): EventDebtsPending, whether any row of the transaction
 * left its noting to its event (its WHEN clause could not note it);
 * HasEventDebt, whether a row of source did (then every row event of
 * source's triggers notes its row, for the rest of the transaction);
 * WatchEventRowNote, the work of _watch_row for such a row (flinfo a call
 * of it read from the trigger's WHEN clause).
 */
extern bool EventDebtsPending(void);
extern bool HasEventDebt(Oid source);

/*
 * Who may note a source's rows from a _watch_row call (watchcache.c):
 * RowMayNote, the current user may write rows there (USAGE on the schema,
 * INSERT on the table, *table, or on the call's time column: column, by
 * number or by name as coltype says); AddEventDebt, a row of
 * source whose WHEN clause could not note it, for its event.
 */
extern bool RowMayNote(Oid source, Oid coltype, Datum column, bool *table);
extern void AddEventDebt(Oid source);
extern void WatchEventRowNote(FmgrInfo *flinfo, Oid source, Datum column,
							  Datum value);

/*
 * The work of the trigger backfill._watch_trigger for one statement: load
 * the watches for the INSERT row triggers (BEFORE, earlier builds), or log
 * the target chunks it touched behind each watching target's watermark
 * (AFTER; the row event of an INSERT row trigger notes its row and writes
 * what the statement's rows noted).
 * It checks the catalog's version and connects to SPI itself, only when it
 * reads or writes the catalog.
 */
struct TriggerData;
extern void WatchTriggerFire(struct TriggerData *trigdata);

/*
 * Whether a call of backfill._watch_trigger has nothing to do (an INSERT
 * statement trigger of earlier builds whose work is done or absent; never
 * a row event); reads memory only.
 */
extern bool WatchTriggerIdle(struct TriggerData *trigdata);

/*
 * The work of backfill._watch_row(source, column, value), the WHEN clause
 * of a watched source's INSERT row trigger, for one row: note the row's
 * chunk for the source's watching targets behind their watermark; true for
 * the first row of the call site that noted one (its event writes them),
 * or when the caller may not load the source's watches (the row's event
 * loads them and notes the row).  The first call of a transaction on a
 * source loads its watches, for a caller who may insert into it.
 * column is the time column's name (a name) or its attribute number in
 * source (an int2), as the function's signature says, or, for the form
 * _watch_row(NEW.tableoid, NEW.column) (two arguments: source is the
 * row's table), not used: the column is the one the call's expression
 * passes.  flinfo is the call site's (its fn_extra caches the watches).
 */
extern bool WatchRowNote(FmgrInfo *flinfo, Oid source, Datum column,
						 Datum value);

/* ---- the history lineage reads (lineagereader.c) ---- */

/*
 * One chunk that counts: an attempt of an ordinary (not a revert) run that
 * reached its range (HistoryReceive).  40 bytes: a long history is held
 * whole, so its run, executor and reason are numbers of the reader's
 * tables.
 */
typedef struct Attempt
{
	TimestampTz lo;
	TimestampTz hi;
	TimestampTz finished_at;	/* the chunk's, else its run's */
	int32		run;			/* index in HistoryReader.runs */
	int32		chunk_no;
	int32		reason;			/* 1 + index in HistoryReader.reasons; 0:
								 * none */
	uint32		executor:27;	/* 1 + index in HistoryReader.executors; 0:
								 * NULL */
	uint32		status:3;		/* ChunkStatus */
	uint32		finished_null:1;	/* finished_at is NULL */
	uint32		cleared:1;		/* the chunk itself finished */
} Attempt;

StaticAssertDecl(CHUNK_CANCELLED < 8, "a chunk status fits in 3 bits");


/* A run of the history: its id and definition version. */
typedef struct HistoryRun
{
	int64		run_id;
	int32		version;
	bool		reverted;		/* a revert run undid some of its chunks */
} HistoryRun;

/* A done chunk of a revert run: run_id undid chunk chunk_no of run undid. */
typedef struct RevertStep
{
	int64		undid;
	int64		run_id;
	int32		chunk_no;
	int32		depth;			/* memo of StepDepth; -1: not yet, -2: busy */
} RevertStep;

/* Attempts are kept in blocks of this many (never moved once written). */
#define ATTEMPTS_PER_BLOCK	1024

/*
 * The receiver of the history's rows: each row is kept, compactly, as an
 * attempt or a revert step, or dropped, as it arrives (no result set is
 * held besides).  Attempts go into fixed blocks, so that a long history
 * is never copied to grow; "order" then lists the attempts that count,
 * sorted.
 */
typedef struct HistoryReader
{
	DestReceiver pub;
	MemoryContext cxt;			/* where everything below lives */
	Attempt   **blocks;
	int64		nblocks;
	int64		maxblocks;
	int64		nattempts;
	int32	   *order;			/* attempts that count, by run and start */
	int			norder;
	HistoryRun *runs;			/* of the attempts */
	int64		nruns;
	int64		maxruns;
	HTAB	   *run_ids;		/* run id -> index in runs */
	int64		last_run_id;	/* the run of the previous row, */
	int32		last_run;		/* its index; -1: none yet */
	char	  **reasons;
	int64		nreasons;
	int64		maxreasons;
	RevertStep *steps;
	int64		nsteps;
	int64		maxsteps;
	HTAB	   *executor_ids;	/* name -> index in executors */
	char	  **executors;
	int			nexecutors;
	int			maxexecutors;
	int32		last_executor;	/* of the previous row; -1: none yet */
	char		last_status[NAMEDATALEN];	/* of the previous row ("": */
	ChunkStatus last_status_value;	/* none yet) and its value */
} HistoryReader;

/* The attempt number i of r. */
#define ATTEMPT(r, i) \
	(&(r)->blocks[(i) / ATTEMPTS_PER_BLOCK][(i) % ATTEMPTS_PER_BLOCK])

/*
 * Read the history of target over [lo, hi) into r, as the extension owner
 * (as_owner) or as the caller (the catalog's row-level security applies):
 * every chunk of its runs that overlaps the range, kept as an attempt or a
 * revert step, or dropped.  Caller is connected to SPI.
 */
extern void ReadHistory(Oid target, TimestampTz lo, TimestampTz hi,
						bool as_owner, HistoryReader *r);

/*
 * The attempts of r that count (all but the settled ones a revert undid),
 * in r->order: grouped by run, in order of start within a run.
 */
extern void CountingAttempts(HistoryReader *r);

/* ---- lineage (lineage.c) ---- */

/*
 * One piece of a target's history over a range (LineagePieces): the
 * settled state that wins there (lineage: done or no_source; none when
 * never filled), the run, version, executor and time of that win, the
 * distinct reasons of the winning run's chunks over the piece, and the
 * status of the latest attempt of any kind (done, no_source, failed,
 * cancelled; none when none).
 */
typedef struct Piece
{
	TimestampTz lo;
	TimestampTz hi;
	ChunkStatus settled;		/* CHUNK_DONE, CHUNK_NO_SOURCE or CHUNK_NONE */
	int32		version;		/* of the settled state */
	bool		cleared;		/* a no_source piece whose rows were cleared */
	ChunkStatus latest;			/* the latest attempt; CHUNK_NONE: none */
	int64		run_id;			/* of the settled state */
	const char *executed_by;	/* NULL: none recorded */
	TimestampTz finished_at;	/* unless finished_null */
	bool		finished_null;
	int			nreasons;		/* chunks.reason of the winner's chunks */
	char	  **reasons;
} Piece;

/*
 * The one rule of which run wins a stretch: cut [lo, hi) of target's
 * history into pieces, in order, and say which run wins each; read as the
 * extension owner (as_owner) or as the caller, under the catalog's
 * row-level security.  O(n log n) in the chunks over the range.  Returns
 * the number of pieces, *pieces palloc'd.  Caller is connected to SPI.
 */
extern int	LineagePieces(Oid target, TimestampTz lo, TimestampTz hi,
						  bool as_owner, Piece **pieces);

/*
 * LineagePieces as the extension owner over [lo, hi).  Caller is connected
 * to SPI.
 */
extern int	ClassifyPieces(Oid target, TimestampTz lo, TimestampTz hi,
						   Piece **pieces);

/*
 * ClassifyPieces over the n ranges [los[k], his[k]), which are disjoint and
 * in order: the pieces of all of them, in order.  Caller is connected to
 * SPI.
 */
extern int	ClassifyRanges(Oid target, TimestampTz *los, TimestampTz *his,
						   int n, Piece **pieces);

/* The most lines one lineage_chart may draw (about 833 years of months). */
#define BACKFILL_MAX_CHART_LINES	10000

/*
 * lineage_chart: the lines of the chart of [lo, hi); the caller needs
 * SELECT on the target (42501), and a chart of more than
 * BACKFILL_MAX_CHART_LINES lines is refused (54000).  Caller is connected
 * to SPI.
 */
extern List *LineageChart(Oid target, TimestampTz lo, TimestampTz hi);

/* ---- planning one run (plan.c) ---- */

/*
 * An explicit list of chunks for PlanRun: n sorted [starts[k], ends[k]),
 * and why each was chosen (chunks.reason; reasons NULL, or reasons[k]
 * NULL: planned by its range).
 */
typedef struct PlanChunks
{
	int			n;
	TimestampTz *starts;
	TimestampTz *ends;
	char	  **reasons;
} PlanChunks;

/*
 * What plan is asked (plan.c, cascade.c): a run of target over [start,
 * end) split into chunks of "chunk" (NULL: the definition's), or the
 * chunks "given" (then start and end are their first start and last end);
 * with only, just the chunks that need work; with cascade, also one run
 * per downstream target, as a group.
 */
typedef struct PlanRequest
{
	Oid			target;
	TimestampTz start;
	bool		start_null;
	TimestampTz end;
	bool		end_null;
	Interval   *chunk;			/* NULL: the definition's chunk */
	const char *note;			/* NULL: none */
	bool		probe;
	bool		backwards;
	bool		clear_no_source;
	int			only;			/* OnlyChunks bits; ONLY_ALL: every chunk */
	bool		cascade;
	const PlanChunks *given;	/* the chunks to create; NULL: split */
	bool		keep_given;		/* keep_replaced given: else the definition's */
	bool		keep_replaced;
} PlanRequest;

/*
 * A run to create (CreateRun): its target (and its name as the run keeps
 * it), range, chunk interval, note, options, pinned definition version and
 * settings, whether it keeps what it replaces, and the run it reverts (0:
 * none).  Its planner is the current user.
 */
typedef struct RunRequest
{
	Oid			target;
	const char *target_name;
	TimestampTz range_start;
	TimestampTz range_end;
	Interval   *chunk;
	const char *note;			/* NULL: none */
	bool		probe;
	bool		backwards;
	bool		clear_no_source;
	int32		definition_version;
	const char *timezone;
	const char *search_path;
	bool		keep_replaced;
	int64		reverts;		/* the run a revert run undoes; 0: none */
} RunRequest;

/*
 * Insert the run req describes into backfill.runs (no chunk) and return
 * its run_id: the one place that creates runs (PlanRun, RevertRun).
 * Caller is connected to SPI.
 */
extern int64 CreateRun(const RunRequest *req);

/*
 * Create the run the request describes and its chunks, executing nothing;
 * only and cascade are ignored (cascade.c handles them).  Checks
 * privileges, registration and overlaps.  Caller is connected to SPI.
 */
extern int64 PlanRun(const PlanRequest *req);

/* ---- the chunks an only-plan keeps (onlychunks.c) ---- */

/*
 * Keep the chunks of [bounds[0], bounds[n]) of target (definition def)
 * that need work under only (OnlyChunks bits), in *out with the reasons
 * of the stale ones; possibly none.  Caller is connected to SPI.
 */
extern void SelectChunks(Oid target, int only, bool clear_no_source,
						 Definition *def, TimestampTz *bounds, int n,
						 PlanChunks *out);

/* ---- plans that choose their chunks (cascade.c) ---- */

/*
 * plan: PlanRun, or with only the target's run over the chunks that need
 * it and, with cascade, one run per downstream target, as a group.
 * *planned is false (and a NOTICE says so) when nothing needs it.
 */
extern int64 PipelinePlan(const PlanRequest *req, bool *planned);

/*
 * One target's own chunks in a group plan (cascade.c's planning loop): the
 * unfinished chunks of a run of a group that replan_group replans, with
 * how that run was planned; or the root run of a cascading plan, planned
 * already (planned_run).
 */
typedef struct ReplanSeed
{
	Oid			target;
	int64		old_run;		/* the run the new one continues; 0: none */
	int64		planned_run;	/* planned already (the root); 0: plan it */
	const char *note;
	Interval   *chunk;			/* the run's chunk interval; NULL: the
								 * definition's */
	bool		keep_given;		/* keep_replaced given: else the definition's */
	bool		keep_replaced;
	PlanChunks	chunks;
} ReplanSeed;

/*
 * replan_group's plan: from root down, a new group whose runs cover the
 * seeds and the downstream chunks built from them (widened as a cascade
 * does); the new group id, 0 when nothing was planned.  Caller is
 * connected to SPI.
 */
extern int64 CascadeReplan(Oid root, ReplanSeed *seeds, int nseeds,
						   bool backwards, bool clear_no_source);

/* ---- groups (group.c) ---- */

/*
 * The run ids (int64 *) of a group in run id order, in the current memory
 * context; 42704 for an unknown group.  Caller is connected to SPI.
 */
extern List *GroupRuns(int64 group_id, bool unfinished_only);

/*
 * Whether a chunk [lo, hi) of a run may execute now: always outside a
 * group; in a group, when no other run of the group has failed and every
 * chunk of its upstream runs that it covers is settled (a NOTICE says
 * what it waits for otherwise).  Caller is connected to SPI.
 */
extern bool PipelineChunkReady(int64 run_id, const char *relname,
							   TimestampTz lo, TimestampTz hi);

/* The same, without a NOTICE (a parallel group call looks at every run). */
extern bool PipelineChunkSettled(int64 run_id, TimestampTz lo,
								 TimestampTz hi);

/* ---- undo: revert, diff, purge (undo.c) ---- */

/*
 * revert -> the id of the run that puts back what run_id replaced (55000
 * unless it is finished, kept what it replaced, still holds it and is the
 * last run over its range); diff: what run_id (chunk_no; 0: every chunk)
 * changed, row by row, into dest (chunk_no, key, change, old, new);
 * purge_archive -> the number of chunks purged.  Callers are connected to
 * SPI.
 */
extern int64 RevertRun(int64 run_id);
extern void DiffRun(int64 run_id, int32 chunk_no, DestReceiver *dest);
extern int64 PurgeArchive(Interval *older_than, Oid target);

/*
 * A revert run is done: the definition in force before the reverted run's
 * is made current again (undo), noted on run for ReportRevertDefinition.
 */
extern void RevertRestoreDefinition(RunInfo *run);

/*
 * The NOTICE of what a revert run that is done did to the target's current
 * definition (the one before the reverted run's is current again, or a
 * newer one stays), after the NOTICE that it is done.
 */
extern void ReportRevertDefinition(RunInfo *run);

/* ---- scheduling with pg_cron (schedule.c) ---- */

/*
 * Hand the rest of a run to a pg_cron job owned by the caller, and remove
 * it; ScheduleGroup does ScheduleRun for every unfinished run of a group,
 * UnscheduleGroup UnscheduleRun.  Callers are connected to SPI.
 */
extern int64 ScheduleRun(int64 run_id, const char *cron, int32 chunks_per_tick,
						 const char *quiet_hours, int32 parallel);
extern bool UnscheduleRun(int64 run_id);
extern int32 ScheduleGroup(int64 group_id, const char *cron,
						   int32 chunks_per_tick, const char *quiet_hours,
						   int32 parallel);
extern int32 UnscheduleGroup(int64 group_id);

/*
 * The lock of job removals by sweeps and by the guard's event trigger (one
 * transaction at a time); without "wait", false when another transaction
 * holds it.
 */
extern bool ScheduleSweepLock(bool wait);

/*
 * Sweep backfill's pg_cron jobs: with "orphans", those whose scheduling
 * role was dropped (noting it on the run, check or refresh); those
 * recorded on finished runs (parked by the tick that finished them),
 * except exclude_run's; pg_cron in another database, those no run, check
 * or refresh records, and the records of jobs gone there.  Returns the
 * removed jobs (CronJob *) in the caller's memory context.  Every backfill
 * tick calls it with orphans, schedule calls without (without "wait":
 * skipped while another transaction sweeps).
 */
extern List *ScheduleSweepJobs(int64 exclude_run, bool orphans, bool wait);

/*
 * Before a schedule call creates a pg_cron job: here, sweep the parked jobs
 * of finished runs; pg_cron in another database, hold the sweep lock in
 * share mode until the end of the transaction, so that no sweep takes the
 * job, made there at once, for one left behind before it is recorded.
 */
extern void SchedulePrepareJob(void);

/* A sweep with orphans now, waiting for one under way; superusers only. */
extern List *CleanupJobs(void);

/*
 * The housekeeping of a pg_cron tick, nothing outside one: a run's tick
 * sweeps orphan jobs and the parked jobs of other finished runs, notes in
 * runs.last_error why its role may not write the target, and commits
 * (non-atomic SPI connection); a check's tick sweeps.
 */
extern void ScheduleRunTick(int64 run_id);
extern void ScheduleCheckTick(void);

/*
 * The scheduled runs, standing checks and refreshes the caller may see
 * whose latest pg_cron tick failed, as rows of backfill._tick_failures
 * (kind, id, job_id, ticks_failed, failed_at, message, next_step) put into
 * store.  Nothing (no error) when pg_cron cannot be read.  Caller is
 * connected to SPI.
 */
extern void ScheduleTickFailures(Tuplestorestate *store, TupleDesc desc);

/* The daily job's share of the target lock (backfill.lock_target). */
extern void LockTargetForJob(Oid relid);

/* ---- the summary of a call (tally.c) ---- */

/* What one call did to a run, for its summary NOTICE. */
typedef struct RunTally
{
	TimestampTz started;
	int			executed;
	int			done;
	int			no_source;
	int			deferred;
	int			failed;
	int64		rows_deleted;
	int64		rows_inserted;
	int			ledger_checked;
	int			ledger_ok;
} RunTally;

/* An empty tally, started now. */
extern void TallyStart(RunTally *tally);

/* Add one executed chunk's report to a call's tally. */
extern void TallyChunk(RunTally *tally, ChunkInfo *chunk, ChunkReport *report);

/*
 * The summary NOTICE of a call that executed chunks of run (nothing when
 * it executed none); printed with backfill.notices = summary too.
 */
extern void ReportTally(RunInfo *run, RunTally *tally);

/* ---- parallel chunks (parallel.c) ---- */

/*
 * Whether a run call with parallel => N > 1 may use background workers:
 * not while the run's probe has not run (it runs alone, in the session),
 * nor for a current role that cannot log in (NOTICE).  Caller is connected
 * to SPI.
 */
extern bool ParallelUsable(RunInfo *run);

/*
 * The parallel run loop: the run's chunks in a pool of at most "parallel"
 * background workers, each taking chunk after chunk, at most "parallel" in
 * flight, in plan order; stops starting at the first failure
 * or deferral.  Caller holds the run's session lock and a non-atomic SPI
 * connection; cxt survives the commits.
 */
extern void ParallelRunLoop(RunInfo *run, int max_chunks, int parallel,
							MemoryContext cxt);

/*
 * The same for the unfinished runs of a group (run_group), in dependency
 * order: at most "parallel" chunks in flight across them, each run's in
 * plan order, a downstream chunk only when the upstream chunks it covers
 * are done.  Caller holds every run's session lock and a non-atomic SPI
 * connection; cxt survives the commits.
 */
extern void ParallelGroupLoop(RunInfo **runs, int nruns, int max_chunks,
							  int parallel, MemoryContext cxt);

/* ---- inside a parallel call: what the leader, its pool and its workers share ---- */

/* What the leader hands a worker at its start, in bgw_extra. */
typedef struct ChunkWorkerArgs
{
	dsm_handle	pool;			/* the call's PoolShared */
	int32		place;			/* the worker's place in it */
	Oid			database;
	Oid			role;
	int			leader_pgprocno;
	int			leader_pid;
	int32		lock_timeout;
	int32		chunk_timeout;
	int32		max_attempts;
	bool		lock_group;		/* join the leader's lock group */
} ChunkWorkerArgs;

/*
 * The state of a place of the pool, as its worker and the leader share it.
 * The leader moves a place from IDLE to ASSIGNED (a chunk is handed out)
 * and from DONE back to IDLE (it has read the outcome), or to EXIT; the
 * worker moves it from ASSIGNED to BUSY (it took the chunk), from BUSY to
 * RUNNING (it claimed the chunk and starts executing it; WaitForStarts) and
 * from BUSY or RUNNING to DONE (the chunk's transaction is over).
 */
typedef enum PlaceState
{
	PLACE_IDLE,
	PLACE_ASSIGNED,
	PLACE_BUSY,
	PLACE_RUNNING,
	PLACE_DONE,
	PLACE_EXIT
} PlaceState;

/* One place of the pool: its worker, and the chunk handed to it. */
typedef struct PoolPlace
{
	PlaceState	state;
	int64		run_id;
	int32		chunk_no;
	int			procno;			/* the worker's PGPROC number; -1 before it
								 * attached */
} PoolPlace;

/* The dynamic shared memory of a call: its places, under one spinlock. */
typedef struct PoolShared
{
	slock_t		mutex;
	int			nplaces;
	PoolPlace	places[FLEXIBLE_ARRAY_MEMBER];
} PoolShared;

/*
 * One run of the call (a group call has several): where the leader is in
 * its plan, and how it ended for this call.
 */
typedef struct Member
{
	RunInfo    *run;
	int32		cursor;			/* the last chunk started (0: none) */
	bool		finished;		/* nothing more to start: see below */
	bool		exhausted;		/* no chunk left to start */
	bool		cancelled;		/* the run was cancelled meanwhile */
	int			meet;			/* ChunksMayMeet: -1 not known yet */
	RunTally	tally;			/* what this call did to it (its summary) */
} Member;

/*
 * One place of the pool, as the leader keeps it: its worker (NULL: none
 * at this place now) and, while busy, the chunk handed to it.
 */
typedef struct Flight
{
	BackgroundWorkerHandle *handle; /* NULL: no worker at this place */
	bool		busy;			/* a chunk is in flight at this place */
	Member	   *member;
	ChunkInfo	chunk;
	int32		attempts;		/* the chunk's attempts before the worker */
	int			slot;			/* its worker slot of the cluster (TakeSlot) */
} Flight;

/*
 * The state of one parallel call, as the leader loop keeps it.
 */
typedef struct LeaderState
{
	Member	   *members;		/* the call's runs, in dependency order */
	int			nmembers;
	int			in_flight;
	int			cap;			/* places usable: parallel, fewer when no
								 * worker slot was free */
	bool		stop;			/* start nothing new */
	bool		lock_group;		/* the workers join this backend's lock
								 * group; else (Citus) the call target
								 * locks below */
	Oid		   *held;			/* targets whose call lock is held */
	int			nheld;
	bool		failed;
	Member	   *failed_member;	/* the first failure: earliest run, */
	ChunkInfo	failed_chunk;	/* first in plan order */
	ErrorData  *failed_error;	/* in the run's context */
	FailureCause failed_cause;	/* its cause (failures.c) */
} LeaderState;

/* ---- the pool of a parallel call (parallelpool.c) ---- */

/*
 * The pool of the current call, in the leader: its places
 * as the leader keeps them (parallel_nflights of them; NULL between calls),
 * and its shared memory (NULL: none, the chunks run in the session).
 */
extern Flight *parallel_flights;
extern int	parallel_nflights;
extern PoolShared *parallel_pool;

/* Cleanup of the leader: terminate every worker of the pool. */
extern void TerminateFlights(int code, Datum arg);

/* A worker slot of backfill.max_workers, -1 when all are taken; and back. */
extern int	TakeSlot(void);
extern void ReleaseSlot(int slot);

/* Give back the slots of every flight (after TerminateFlights). */
extern void ReleaseSlots(void);

/* Register the background worker of place i (NULL: no slot of the server). */
extern BackgroundWorkerHandle *StartPoolWorker(int i, bool lock_group);

/* The call's shared memory of n places (parallel_pool NULL: none); unmap it. */
extern void CreatePool(int n);
extern void DestroyPool(void);

/* Set the state of place i and wake its worker. */
extern void SetPlace(int i, PlaceState state);

/* Hand chunk chunk_no of run_id to idle place i and wake its worker. */
extern void HandChunk(int i, int64 run_id, int32 chunk_no);

/* Whether the worker of place i has stopped; whether its chunk is over. */
extern bool WorkerStopped(int i);
extern bool FlightEnded(int i);

/* Free place i of a worker that has stopped; the same for every idle one. */
extern void ReapWorker(int i);
extern void ReapIdleWorkers(void);

/* A place whose worker waits for a chunk, or -1. */
extern int	IdlePlace(void);

/* Tell every worker of the pool to exit and wait for them (nothing in flight). */
extern void ShutdownPool(void);

/* Wait until a chunk in flight at one of places 0 .. n-1 is over: its place. */
extern int	WaitForFlight(int n);

/* Wait until every chunk handed out has started in its worker. */
extern void WaitForStarts(void);

/* ---- which chunk a parallel call starts next (parallelstart.c) ---- */

/* Whether a chunk of the call on target relid is in flight. */
extern bool TargetInFlight(Oid relid);

/* Release the call's lock on target relid (InvalidOid: every one). */
extern void ReleaseCallTarget(LeaderState *st, Oid relid);

/*
 * The run whose next chunk may start now and that chunk (*here: it runs in
 * the session), or NULL.  Caller is connected to SPI.
 */
extern Member *NextStartable(LeaderState *st, ChunkInfo *chunk,
							 int32 *attempts, bool *here);

/* ---- the worker of parallel chunks, cancel's side (parallelworker.c) ---- */

/*
 * cancel's side: terminate the workers executing the run's chunks and wait
 * for them to go; returns how many.  Caller is connected to SPI.
 */
extern int	TerminateRunWorkers(int64 run_id);

/* ---- a run's status finished, a chunk committed and reported (runstatus.c) ---- */

/*
 * What a run finished by WriteRunStatus still needs, in the same
 * transaction, before its commit: its pg_cron job removed, a revert run's
 * definition restored.  Every path that commits after the chunk engine
 * wrote a run's status calls it (CommitChunk, RecordCommitFailure, the
 * parallel worker and leader).
 */
extern void FinishRun(RunInfo *run);
extern RunStatus SetRunStatus(RunInfo *run, RunStatus status);

/*
 * SetRunStatus after chunk chunk_no decided it (0: none), which the
 * notification of the status names: WriteRunStatus, then FinishRun.
 */
extern RunStatus SetRunStatusAfter(RunInfo *run, RunStatus status,
								   int32 chunk_no);

/*
 * Commit the chunk's transaction after FinishRun (SPI_commit; a commit that
 * fails records the chunk as failed); RecordCommitFailure is that record,
 * shared with the parallel worker's commit.
 */
extern void CommitChunk(RunInfo *run, ChunkInfo *chunk, ChunkReport *report);
extern void RecordCommitFailure(RunInfo *run, ChunkInfo *chunk,
								ChunkReport *report, ErrorData *commit_error);
extern void RaiseChunkFailure(RunInfo *run, ChunkInfo *chunk,
							  ChunkReport *report);

/* The NOTICE of one chunk, and the error of a failed chunk after its commit. */
extern void ReportChunk(RunInfo *run, ChunkInfo *chunk, ChunkReport *report);

/* ---- runs (run.c) ---- */

/* Check the caller and execute a run (CALL backfill.run). */
extern void ExecuteRun(int64 run_id, int max_chunks, int parallel);

/*
 * Called when a chunk of a refresh tick's run (of target: with cascade, a
 * downstream target's) failed, after the failure was committed and before
 * its error is raised, with arg as given to RunInRefreshTick; the caller is
 * not connected to SPI, in a non-atomic call.
 */
typedef void (*RunFailureHook) (void *arg, int64 run_id, Oid target,
								int chunk_no, TimestampTz start,
								TimestampTz end, const char *message);

/*
 * A refresh job's tick (refresh.c) is now executing runs (hook not NULL)
 * or no longer: its runs have no job of their own, and hook records a
 * chunk's failure on the refresh before the tick's error.
 */
extern void RunInRefreshTick(RunFailureHook hook, void *arg);

/*
 * CALL backfill.backfill: plan, commit, and execute to the end.  Caller
 * has a non-atomic SPI connection.
 */
extern int64 BackfillRange(const PlanRequest *req, int parallel);

/* cancel: the chunks cancelled.  Caller is connected to SPI. */
extern int32 CancelRun(int64 run_id);

/*
 * The runs of a group, in dependency order: RunGroup executes them
 * (non-atomic SPI connection), CancelGroup cancels the unfinished ones.
 */
extern void RunGroup(int64 group_id, int max_chunks, int parallel);
extern int32 CancelGroup(int64 group_id);

/* ---- replan (replan.c) ---- */

/*
 * replan -> the new run's id; replan_group -> the new group's id.  Cancel
 * the unfinished chunks and plan them again under the current definition,
 * in the caller's transaction.  Callers are connected to SPI.
 */
extern int64 ReplanRun(int64 run_id);
extern int64 ReplanGroup(int64 group_id);

/* ---- reconciliation (reconcile.c) ---- */

/*
 * One compared chunk and its figures.  "compare" chunks are checked
 * against the ledger and the neighbours; no_source and not_run chunks are
 * reported but left out of every comparison.
 */
typedef struct RecChunk
{
	int32		chunk_no;
	TimestampTz start;
	TimestampTz end;
	ChunkStatus status;			/* chunk or lineage status; CHUNK_NONE: none */
	bool		compare;
	Verdict		verdict;
	Datum		target_value;
	bool		target_null;
	Datum		ledger_value;
	bool		ledger_null;
	bool		ledger_ok;
	bool		ledger_ok_null;
	Datum		neighbor_median;
	bool		median_null;
	bool		neighbor_ok;
	bool		neighbor_ok_null;
} RecChunk;

/*
 * The comparison of check() for [start, end) of target relid, chunked by
 * its chunk interval: the number of chunks, *out their figures and
 * verdicts.  Caller is connected to SPI.
 */
extern int	CheckRange(Oid relid, TimestampTz start, bool start_null,
					   TimestampTz end, bool end_null, RecChunk **out);

/*
 * reconcile(run_id): the number of the run's chunks, *out their figures
 * and verdicts, stored on the chunks when the caller may.  Caller is
 * connected to SPI.
 */
extern int	ReconcileRun(int64 run_id, RecChunk **out);

/* ---- standing checks (standing.c) ---- */

/*
 * schedule_check -> check id, unschedule_check -> whether a job was
 * removed, run_check -> the number of failing chunks.  Callers are
 * connected to SPI.
 */
extern int64 ScheduleCheck(Oid relid, const char *cron, Interval *lookback);
extern bool UnscheduleCheck(int64 check_id);
extern int32 RunCheck(int64 check_id);

/*
 * The whole chunks of "step" within the last lookback before now, ending
 * at the start of the current chunk's unit (check and refresh ticks);
 * kind and id name the caller in the error.
 */
extern void LookbackRange(Interval *step, Interval *lookback, TimestampTz now,
						  const char *kind, int64 id, TimestampTz *start,
						  TimestampTz *end);

/* ---- refresh jobs of changed regions (refresh.c) ---- */

/*
 * schedule_refresh -> the refresh's id; unschedule_refresh(refresh id) ->
 * whether a refresh was removed (callers are connected to SPI); the tick of
 * a refresh job (CALL backfill._refresh_tick, non-atomic SPI connection).
 */
extern int64 ScheduleRefresh(Oid target, const char *cron,
							 const char *quiet_hours, Interval *lookback,
							 bool cascade, bool missing);
extern bool UnscheduleRefresh(int64 refresh_id);

/* unregister: remove the target's refresh and its job, if any */
extern void RefreshForgetTarget(Oid target);
extern void RefreshTick(int64 refresh_id);


/* ---- a target across the features: register, unregister (lifecycle.c) ---- */

/*
 * register -> the current definition version; unregister.  Callers are
 * connected to SPI.
 */
extern int32 RegisterTarget(const Registration *reg);
extern void UnregisterTarget(Oid target, bool cascade);


/* ================================================================
 *		Layer 4: api/ -- the SQL entry points (PG_FUNCTION_INFO_V1, in
 *		the api/ files), and the checks of their arguments (args.c)
 * ================================================================
 */

/* 22004 when argument argno is NULL; hint may be NULL. */
extern void RequireArg(FunctionCallInfo fcinfo, int argno, const char *name,
					   const char *hint);

/* Arguments argno, argno + 1 as a range (CheckRangeBounds). */
extern void RangeArgs(FunctionCallInfo fcinfo, int argno);

/* The max_chunks argument argno: -1 for NULL, else positive (22023). */
extern int	MaxChunksArg(FunctionCallInfo fcinfo, int argno);

/*
 * The parallel argument argno: 1 when absent (0.1.0's declaration); 22004
 * for NULL, 22023 below 1 or above min(backfill.max_parallel,
 * max_worker_processes), or, with clamp (a pg_cron tick), the cap.
 */
extern int	ParallelArg(FunctionCallInfo fcinfo, int argno, bool clamp);

/* 2D000 unless a procedure was called as a top-level CALL. */
extern void RequireTopLevelCall(FunctionCallInfo fcinfo, const char *name);

#endif							/* BACKFILL_H */
