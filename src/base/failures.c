/*-------------------------------------------------------------------------
 *
 * failures.c
 *	  The cause of a chunk's failure and the call that goes on from it:
 *	  one table from SQLSTATE to cause (ClassifyFailure), and the hint and
 *	  next call each cause asks for (FailureHint, FailureNextStep).  The
 *	  run loop, run_group and the pg_cron tick all end a failure with
 *	  them, and the chunk records its cause and next call
 *	  (backfill.chunks.error_cause, next_step).
 *
 * A run is pinned to its definition version, so a failure caused by the
 * definition repeats on every retry: its way out is register (the fix)
 * then replan.  A transient failure goes away by running again.  The rest
 * (privileges, a dropped table, a full disk) is fixed outside backfill,
 * then the run is run again.  Two failures have causes of their own, set
 * by the chunk engine, not by SQLSTATE: the ledger gate (the ledger may
 * simply not have caught up with the source, or the definition is wrong:
 * run again once the ledger is complete, replan if they still differ) and
 * a source that returned no rows where the range holds some (load the
 * source and run again, or register with allow_empty and replan).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/elog.h"

#include "backfill.h"

/*
 * The table: a SQLSTATE (five characters) or a class (its first two), and
 * its cause.  An exact code wins over its class.  chunk_timeout (57014,
 * query_canceled: the chunk engine re-throws a user's own cancel, so a
 * recorded 57014 is always the timeout) is transient: the definition is
 * not wrong, the time a chunk takes depends on the load and on the
 * setting, and a replan would plan the same ranges again; raise the
 * setting and run again.
 */
typedef struct FailureRule
{
	const char *code;
	FailureCause cause;
} FailureRule;

static const FailureRule failure_rules[] = {
	/* waits and conflicts with other transactions */
	{"55P03", CAUSE_TRANSIENT},	/* lock_not_available (lock_timeout) */
	{"40P01", CAUSE_TRANSIENT},	/* deadlock_detected */
	{"40001", CAUSE_TRANSIENT},	/* serialization_failure */
	{"40", CAUSE_TRANSIENT},	/* transaction rollback */
	{"55006", CAUSE_TRANSIENT},	/* object_in_use */
	{"57014", CAUSE_TRANSIENT},	/* query_canceled: chunk_timeout */
	/* a worker, a connection or the server going away */
	{"08", CAUSE_TRANSIENT},	/* connection exception (Citus workers) */
	{"57P01", CAUSE_TRANSIENT},	/* admin_shutdown */
	{"57P02", CAUSE_TRANSIENT},	/* crash_shutdown */
	{"57P03", CAUSE_TRANSIENT},	/* cannot_connect_now */
	{"53300", CAUSE_TRANSIENT},	/* too_many_connections */
	/* what is fixed outside backfill */
	{"42501", CAUSE_ENVIRONMENT},	/* insufficient_privilege */
	{"53", CAUSE_ENVIRONMENT},	/* insufficient resources (disk, memory) */
	{"54", CAUSE_ENVIRONMENT},	/* program limit exceeded */
	{"58", CAUSE_ENVIRONMENT},	/* system error (I/O) */
	{"XX", CAUSE_ENVIRONMENT},	/* internal error */
	{"F0", CAUSE_ENVIRONMENT},	/* configuration file error */
	{"25", CAUSE_ENVIRONMENT},	/* invalid transaction state (read only) */
};

/*
 * ClassifyFailure
 *		See backfill.h.  The table first (the exact code, then its class);
 *		otherwise an error met while the definition's text was at work (its
 *		source, measure or ledger raised it, the ledger gate refused, a row
 *		fell outside the range or repeated a key) is the definition's, and
 *		one met before (the table gone, its locks) the environment's.  A
 *		revert chunk runs no definition's text (it puts kept rows back): its
 *		callers pass in_user_text false, so its failures are fixed outside
 *		backfill and the revert run again, never replanned.
 */
FailureCause
ClassifyFailure(int sqlerrcode, bool in_user_text)
{
	const char *state = unpack_sql_state(sqlerrcode);
	int			i;

	for (i = 0; i < lengthof(failure_rules); i++)
	{
		if (strlen(failure_rules[i].code) == 5 &&
			strcmp(failure_rules[i].code, state) == 0)
			return failure_rules[i].cause;
	}
	for (i = 0; i < lengthof(failure_rules); i++)
	{
		if (strlen(failure_rules[i].code) == 2 &&
			strncmp(failure_rules[i].code, state, 2) == 0)
			return failure_rules[i].cause;
	}
	return in_user_text ? CAUSE_DEFINITION : CAUSE_ENVIRONMENT;
}

/*
 * FailureNextStep
 *		See backfill.h.
 */
char *
FailureNextStep(FailureCause cause, int64 run_id, int64 group_id)
{
	if (cause == CAUSE_DEFINITION)
		return group_id != 0 ?
			psprintf("SELECT backfill.replan_group(%lld)", (long long) group_id) :
			psprintf("SELECT backfill.replan(%lld)", (long long) run_id);
	return group_id != 0 ?
		psprintf("CALL backfill.run_group(%lld)", (long long) group_id) :
		psprintf("CALL backfill.run(%lld)", (long long) run_id);
}

/*
 * FailureHint
 *		See backfill.h.  Full sentences, ready to follow the chunk's own
 *		hint in one errhint.
 */
char *
FailureHint(FailureCause cause, int64 run_id, int64 group_id, bool from_cron)
{
	char	   *step = FailureNextStep(cause, run_id, group_id);
	char	   *what;
	char	   *again = "";

	if (from_cron)
		again = group_id != 0 ?
			psprintf(" To go on by pg_cron instead, call backfill.schedule_group(%lld) after it.",
					 (long long) group_id) :
			psprintf(" To go on by pg_cron instead, call backfill.schedule(%lld) after it.",
					 (long long) run_id);

	switch (cause)
	{
		case CAUSE_DEFINITION:
			what = psprintf("The cause is in the registered definition, to which the run is pinned: a retry would fail the same way. Fix it with backfill.register, then %s plans the unfinished chunks again under the new version.%s",
							step, group_id != 0 && from_cron ?
							" Schedule the new group with backfill.schedule_group." :
							from_cron ? " Schedule the new run with backfill.schedule." : "");
			return what;
		case CAUSE_TRANSIENT:
			what = psprintf("The cause is transient (a wait, a conflict or a lost connection): %s retries the chunk and continues.%s",
							step, again);
			return what;
		case CAUSE_LEDGER:
			what = psprintf("Two causes fit: a ledger that has not caught up with the source yet, or a wrong definition. Once the ledger is complete, %s retries the chunk and continues; if they still differ then, the definition is wrong: fix it with backfill.register, then %s plans the unfinished chunks again under the new version.%s",
							step,
							FailureNextStep(CAUSE_DEFINITION, run_id, group_id),
							again);
			return what;
		case CAUSE_EMPTY_SOURCE:
			what = psprintf("If the source's rows for the range are missing (a load that failed or has not run yet), load them, then %s retries the chunk and continues. If no rows is a right answer for this table, register it again with allow_empty => true, then %s plans the unfinished chunks again under the new version.%s",
							step,
							FailureNextStep(CAUSE_DEFINITION, run_id, group_id),
							again);
			return what;
		case CAUSE_ENVIRONMENT:
		case CAUSE_NONE:
			break;
	}
	return psprintf("Fix the cause, then %s retries the chunk and continues.%s",
					step, again);
}
