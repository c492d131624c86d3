/*-------------------------------------------------------------------------
 *
 * backfill.h
 *	  Shared declarations of the backfill extension: settings, the SPI
 *	  helper layer, range splitting, source validation, range replacement,
 *	  catalog access, targets, plans, runs and chunks, reconciliation and
 *	  scheduling.
 *
 * Each .c file owns one concern; this header is the only contract between
 * them.
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
#include "storage/lock.h"
#include "utils/timestamp.h"

/* ---- settings (backfill.c) ---- */
extern int	backfill_lock_timeout;	/* ms */
extern int	backfill_chunk_timeout; /* ms, 0 = none */
extern int	backfill_max_attempts;
extern int	backfill_max_chunks;	/* PGC_SUSET */
extern int	backfill_neighbor_chunks;
extern double backfill_neighbor_tolerance;

/*
 * Hard ceiling of backfill.max_chunks: even a superuser cannot make one
 * plan, check or split_range produce more chunks than this.
 */
#define BACKFILL_MAX_CHUNKS_CEILING 10000000

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
 * The fourth field (pg_locks.objsubid) of every backfill lock tag.  The SQL
 * advisory lock functions only ever use 1 (one bigint key) and 2 (two int4
 * keys), so no SQL caller can take, wait for or hold a backfill lock.
 */
#define BACKFILL_LOCK_SUBID			0x4246	/* 16966 */

/* The lock tag of (lockclass, key) in this database (backfill.c). */
extern void BackfillLockTag(LOCKTAG *tag, uint32 lockclass, uint32 key);

/* 22004 when argument argno is NULL (backfill.c); hint may be NULL. */
extern void RequireArg(FunctionCallInfo fcinfo, int argno, const char *name,
					   const char *hint);

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

/* The most lines one lineage_chart may draw (about 833 years of months). */
#define BACKFILL_MAX_CHART_LINES	10000

extern void RequireMaxLength(const char *text, const char *name, int max);

/* ---- text of values and names (util.c) ---- */

/* A timestamptz in ISO form, palloc'd (safe to call twice per message). */
extern char *TimestampText(TimestampTz t);

/* A numeric Datum as text, "NULL" for a null. */
extern char *NumericText(Datum d, bool isnull);

/* The quoted, schema-qualified name of a relation; 42P01 if it is gone. */
extern char *QualifiedRelName(Oid relid);

/* ---- SPI helper layer (spi_util.c) ---- */

/* SPI_connect (nonatomic) and SPI_finish; a failure is an internal error. */
extern void SpiConnect(void);
extern void SpiConnectNonatomic(void);
extern void SpiFinish(void);

/* SPI's ' '/'n' nulls string for bool nulls[] (NULL stays NULL). */
extern char *SpiNulls(int nargs, const bool *nulls);

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

/* SpiExec of the extension's own SQL, search_path pinned, as the caller. */
extern int	SpiExecPinned(const char *sql, int nargs, Oid *argtypes,
						  Datum *values, const char *nulls, bool read_only,
						  long count, int expected);

/* Convenience readers of SPI_tuptable row "row", column "col" (1-based). */
extern bool SpiGetBool(int row, int col, bool *isnull);
extern int64 SpiGetInt64(int row, int col, bool *isnull);
extern int32 SpiGetInt32(int row, int col, bool *isnull);
extern Oid	SpiGetOid(int row, int col, bool *isnull);
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
/* The same for a statement built per call (never cached), no parameters. */
extern int	CatalogExecUnsaved(const char *sql, int expected);
/* The same with bool nulls[] (NULL: no nulls). */
extern int	CatalogExecNulls(const char *sql, int nargs, Oid *argtypes,
							 Datum *values, const bool *nulls, int expected);

/* Whether a catalog query returns a row (the result is freed). */
extern bool CatalogExists(const char *sql, int nargs, Oid *argtypes,
						  Datum *values);

/* Name of the current (real) user, for created_by / executed_by. */
extern char *CurrentUserName(void);

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

/* 42704 "run N does not exist" for a run the caller cannot see. */
extern void CheckRunVisible(int64 run_id, Oid target, Oid planner);
extern void RaiseRunDoesNotExist(int64 run_id) pg_attribute_noreturn();

/* The same for groups and standing checks. */
extern void RaiseGroupDoesNotExist(int64 group_id) pg_attribute_noreturn();
extern void RaiseCheckDoesNotExist(int64 check_id) pg_attribute_noreturn();

/* ---- range splitting (range.c) ---- */

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

/* ---- validation of user SQL (validate.c) ---- */

/*
 * A validated source query: the statement text exactly as the user wrote
 * it (trailing semicolon and blanks removed) and its output column names.
 */
typedef struct SourceQuery
{
	char	   *sql;
	List	   *columns;		/* of char *, in output order */
} SourceQuery;

extern SourceQuery *ValidateSourceQuery(const char *sql, Oid target,
										const char *time_column);
extern char *ValidateMeasure(const char *measure, Oid target);
extern char *ValidateLedger(const char *ledger);
extern char *ValidateHorizon(const char *horizon);

/* The time column's type, after checking it exists and is usable. */
extern Oid	TimeColumnType(Oid target, const char *time_column);

/* Check that the current user may DELETE from and INSERT into target. */
extern void CheckTargetPrivileges(Oid target);

/*
 * The statements that run on a target's range, each proven by the
 * function that returns its text (the user part parses to exactly the
 * text's own parse tree).  ComposeSourceInsert: the INSERT of the
 * source's rows, $1 = lo, $2 = hi as timestamptz plus $3, $4 in the time
 * column's type (SourceInsertParams).  ComposeRangeDelete: the DELETE of
 * the range (no user text), $1, $2 in the time column's type (RangeParams).
 */
extern char *ComposeSourceInsert(Oid target, const char *time_column,
								 const SourceQuery *source);
extern char *ComposeRangeDelete(Oid target, const char *time_column);

/*
 * The one composition of a measure: "SELECT [lead, ]CAST((<measure>) AS
 * numeric) FROM <from> AS backfill_rows [tail]" (from NULL: FROM the
 * backfill_rows CTE), the measure on lines of its own; the text returned
 * is proven (42601 when the measure would escape its parentheses).
 */
extern char *ComposeMeasureSelect(const char *lead, const char *measure,
								  const char *from, const char *tail);

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

/* ---- replacement strategies (strategy.c) ---- */

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

/* ---- range replacement (strategy.c, replace.c, partition.c) ---- */
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
 * Replace the target's rows in [lo, hi) by what source yields for
 * $1 = lo, $2 = hi, in the current transaction (strategy.c): checks, then
 * ChooseStrategy, then ReplaceByDelete or PartitionReplaceRange.  When
 * measure is not NULL the measure is evaluated over the deleted and the
 * inserted rows.
 */
extern void ReplaceRange(Oid target, const char *time_column,
						 TimestampTz lo, TimestampTz hi,
						 const char *source, ReplaceStrategy strategy,
						 const char *measure, ReplaceResult *result);

/*
 * The delete strategy (replace.c): DELETE the range, INSERT the source's
 * rows; connects to SPI itself, figures in the caller's memory context.
 */
extern void ReplaceByDelete(Oid target, const char *time_column,
							TimestampTz lo, TimestampTz hi,
							const SourceQuery *source, const char *measure,
							ReplaceResult *result);

/*
 * Count and measure the target's rows in [lo, hi) into result->rows_deleted
 * and before_value (replace.c); the caller is connected to SPI.
 */
extern void MeasureRange(Oid target, const char *time_column,
						 TimestampTz lo, TimestampTz hi, const char *measure,
						 MemoryContext outcxt, ReplaceResult *result);

/* Delete the target's rows in [lo, hi) only (no_source chunks). */
extern int64 ClearRange(Oid target, const char *time_column,
						TimestampTz lo, TimestampTz hi);

/* ---- partitioned targets (partition.c) ---- */

/*
 * The strategy for [lo, hi): delete, truncate or swap.  Auto picks the
 * fastest that is safe; an explicit truncate or swap that is not safe
 * raises 22023 (range not aligned) or 55000.
 */
extern ReplaceStrategy ChooseStrategy(Oid target, const char *time_column,
									  ReplaceStrategy strategy,
									  TimestampTz lo, TimestampTz hi);

/*
 * Replace [lo, hi) by truncate or swap ("chosen", from ChooseStrategy),
 * filling result.  Connects to SPI itself; call it outside SPI or with
 * CurrentMemoryContext the context the results must live in.
 */
extern void PartitionReplaceRange(Oid target, const char *time_column,
								  TimestampTz lo, TimestampTz hi,
								  const SourceQuery *source,
								  ReplaceStrategy chosen,
								  const char *measure, ReplaceResult *result);

/*
 * The chunk lock of a partitioned target: RowExclusiveLock on the target
 * and intermediate partitioned tables, "lockmode" on the affected leaves
 * only (AccessExclusiveLock when "strategy" resolves to truncate or swap
 * for the chunk).  A table that is not partitioned is locked in "lockmode".
 */
extern void LockAffectedPartitions(Oid target, const char *time_column,
								   TimestampTz lo, TimestampTz hi,
								   ReplaceStrategy strategy, int lockmode);

/* ---- targets, plans, runs and chunks (targets.c, plan.c, run.c, chunk.c) ---- */

/*
 * What a run call needs to know about its run and target; loaded once per
 * call into a memory context that survives the per-chunk commits.
 */
typedef struct RunInfo
{
	int64		run_id;
	Oid			target;
	char	   *target_name;
	char	   *status;
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
} RunInfo;

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
	CHUNK_DONE,					/* committed */
	CHUNK_DEFERRED,				/* lock timeout: still pending */
	CHUNK_FAILED				/* recorded as failed */
} ChunkOutcome;

/* What one chunk did, for its NOTICE and for the run loop. */
typedef struct ChunkReport
{
	ChunkOutcome outcome;
	int64		rows_deleted;
	int64		rows_inserted;
	bool		ledger_checked;
	bool		ledger_ok;
	char	   *run_status;		/* run status after the chunk, if changed */
	double		elapsed_ms;
	ErrorData  *error;			/* for DEFERRED and FAILED */
	int32		deferrals;
} ChunkReport;


/*
 * Read a run and its pinned definition version into the current memory
 * context; 42704 for an unknown or invisible run (run.c).  The caller
 * must pass CheckRunIdentity before acting on it: the run permission
 * rule, and with check_target the target's existence and privileges.
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
} Definition;

/*
 * Definition "version" of a registered target (0: its current version),
 * into the current memory context; 42704 when the target is not
 * registered (targets.c).  Caller is connected to SPI.
 */
extern Definition *LoadDefinition(Oid target, int32 version);

/* The lock that serializes register, unregister and plan of a target. */
extern void TakeTargetPlanLock(Oid target);

/* An explicit list of chunks for PlanRun: n sorted [starts[k], ends[k]). */
typedef struct PlanChunks
{
	int			n;
	TimestampTz *starts;
	TimestampTz *ends;
} PlanChunks;

/*
 * Create a run of target and its chunks (split from [start, end), or the
 * given ones), executing nothing; chunk NULL means the definition's chunk;
 * checks privileges, registration and overlaps (plan.c).  Caller is
 * connected to SPI.
 */
extern int64 PlanRun(Oid target, TimestampTz start, bool start_null,
					 TimestampTz end, bool end_null, Interval *chunk,
					 const char *note, bool probe, bool backwards,
					 bool clear_no_source, const PlanChunks *given);

/* Check the caller and execute a run (CALL backfill.run; run.c). */
extern void ExecuteRun(int64 run_id, int max_chunks);

/* The max_chunks argument argno: -1 for NULL, else positive (22023). */
extern int	MaxChunksArg(FunctionCallInfo fcinfo, int argno);

/* 2D000 unless a procedure was called as a top-level CALL (run.c). */
extern void RequireTopLevelCall(FunctionCallInfo fcinfo, const char *name);

/* The chunk engine (chunk.c); callers are connected to SPI. */
extern bool RemainingChunks(RunInfo *run);
extern const char *SetRunStatus(RunInfo *run, const char *status);
extern bool NextChunk(RunInfo *run, ChunkInfo *chunk, char **run_status);
extern bool RunHasDoneChunk(int64 run_id);
extern void ExecuteChunk(RunInfo *run, ChunkInfo *chunk, bool probe_pending,
						 const char *run_status, const char *via,
						 const char *user, ChunkReport *report);
extern void CommitChunk(RunInfo *run, ChunkInfo *chunk, ChunkReport *report);
extern void ReportChunk(RunInfo *run, ChunkInfo *chunk, ChunkReport *report);
extern void RaiseChunkFailure(RunInfo *run, ChunkInfo *chunk,
							  ErrorData *edata);

/* ---- reconciliation (reconcile.c) ---- */

/*
 * Evaluate the ledger query for [lo, hi).  Sets *isnull when it returns
 * no row or NULL.
 */
extern Datum LedgerValue(const char *ledger, TimestampTz lo, TimestampTz hi,
						 bool *isnull);

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

/* ---- the comparison shared by check and the standing checks (reconcile.c) ---- */

/* Verdicts, as in the CHECK constraint of backfill.chunks. */
#define VERDICT_OK				"ok"
#define VERDICT_LEDGER_MISMATCH	"ledger_mismatch"
#define VERDICT_OUTLIER			"outlier"
#define VERDICT_NO_SOURCE		"no_source"
#define VERDICT_NOT_RUN			"not_run"

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
	char	   *status;			/* chunk or lineage status, may be NULL */
	bool		compare;
	const char *verdict;
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

/* 42P01 unless the target exists, 42501 unless the caller may read it. */
extern void CheckSelectPrivilege(Oid relid);

/* bound shifted by k steps (k may be negative), in the session TimeZone. */
extern TimestampTz ShiftBound(TimestampTz bound, Interval *step, int k);

/* A one-dimensional array of n elements (nulls may be NULL). */
extern Datum MakeArray(Datum *elems, bool *nulls, int n, Oid elemtype);

/* ---- pipelines (pipeline.c) ---- */

/*
 * plan(..., only_chunks, cascade): plan the target's run over the chunks
 * that need it and, with cascade, one run per downstream target, as a
 * group.  *planned is false (and a NOTICE says so) when nothing needs it.
 */
extern int64 PipelinePlan(Oid target, TimestampTz start, bool start_null,
						  TimestampTz end, bool end_null, Interval *chunk,
						  const char *note, bool probe, bool backwards,
						  bool clear_no_source, const char *only,
						  bool cascade, bool *planned);

/*
 * Whether a chunk [lo, hi) of a run may execute now: always outside a
 * group; in a group, when no other run of the group has failed and every
 * chunk of its upstream runs that it covers is settled (a NOTICE says
 * what it waits for otherwise).  Caller is connected to SPI.
 */
extern bool PipelineChunkReady(int64 run_id, TimestampTz lo, TimestampTz hi);

/*
 * Unregister's part: refuse (2BP01) while targets depend on target unless
 * cascade, then forget its dependencies.  Caller is connected to SPI.
 */
extern void PipelineForgetTarget(Oid target, const char *name, bool cascade);

/* ---- scheduling (schedule.c) ---- */

/* Whether a tick of run's schedule may do work now (quiet hours). */
extern bool ScheduleTickAllowed(const char *quiet_hours, const char *timezone,
								TimestampTz now);

/* Remove the pg_cron job of a run, if any; quiet when pg_cron is absent. */
extern bool ScheduleRemoveJob(int64 run_id);

/* Whether the current backend is a pg_cron job (bgworker or libpq mode). */
extern bool ScheduleCalledFromCron(void);
extern bool ScheduleInCronWorker(void);
extern void RequirePgCron(const char *detail);

/*
 * Remove backfill's pg_cron jobs whose scheduling role was dropped, noting
 * it in the run's or check's last_error; rows added to rsinfo when given
 * (schedule.c).  Every backfill tick calls it.
 */
extern int	ScheduleSweepOrphanJobs(ReturnSetInfo *rsinfo);

/*
 * Remove the pg_cron jobs still recorded on finished runs (parked by the
 * tick that finished them), except exclude_run's; rows added to rsinfo when
 * given (schedule.c).  Every backfill tick calls it.
 */
extern int	ScheduleSweepFinishedJobs(ReturnSetInfo *rsinfo, int64 exclude_run);

/*
 * The lock of job removals by sweeps (one transaction at a time); without
 * "wait", false when another transaction holds it.
 */
extern bool ScheduleSweepLock(bool wait);

/*
 * The earliest time from which a target's source is complete: now() -
 * retention, or the value of horizon_sql (run as the calling user);
 * false when there is neither, or the query gives no row or NULL
 * (plan.c; used by plan and check).
 */
extern bool SourceHorizon(Interval *retention, const char *horizon_sql,
						  TimestampTz *horizon);

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

/* ---- Citus (citus.c); no-ops without the citus extension ---- */

/* Raise 0A000 when this node is a Citus worker: backfill runs on the coordinator. */
extern void CitusRequireCoordinator(void);

/* "distributed", "reference" or "local" for a Citus table, else NULL. */
extern const char *CitusTableKind(Oid relid);

/* Raise 0A000 for strategy "swap" on a Citus table. */
extern void CitusCheckStrategy(Oid target, ReplaceStrategy strategy);

/* Whether strategy "auto" must not pick swap for target (a Citus table). */
extern bool CitusForbidsSwap(Oid target);

#endif							/* BACKFILL_H */
