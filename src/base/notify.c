/*-------------------------------------------------------------------------
 *
 * notify.c
 *	  Notifications (doc/lineage.md "Notifications"): a run that is done,
 *	  failed or probed (waiting after its probe chunk), and a standing
 *	  check that found failing chunks, send a NOTIFY on channel "backfill",
 *	  so that a team's alerting can LISTEN instead of polling.
 *
 * LISTEN needs no privilege: any role that may connect to the database can
 * listen on any channel.  So a payload carries nothing a listener might not
 * be allowed to see: the event's name and ids (the run and its chunk, or
 * the check and how many chunks failed), never a table's name, a figure or
 * an error message.  A listener reads the rest from backfill.runs,
 * backfill.chunks and backfill.alerts, whose row-level security shows it
 * what it may read (doc/security.md "Notifications").  A NOTIFY is sent at
 * the commit of the transaction that recorded the event, and not at all if
 * it rolls back.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/async.h"
#include "lib/stringinfo.h"

#include "backfill.h"

/* The channel every notification of backfill is sent on. */
#define NOTIFY_CHANNEL "backfill"

/*
 * NotifyRunEvent
 *		See backfill.h: {"event": "run_<status>", "run_id": N, "chunk": C}
 *		(chunk null when no chunk decided the status: a run found with
 *		nothing left).  Only done, failed and probed are sent.
 */
void
NotifyRunEvent(int64 run_id, RunStatus status, int32 chunk_no)
{
	StringInfoData payload;

	if (status != RUN_DONE && status != RUN_FAILED && status != RUN_PROBED)
		return;
	initStringInfo(&payload);
	appendStringInfo(&payload, "{\"event\": \"run_%s\", \"run_id\": %lld, \"chunk\": ",
					 RunStatusName(status), (long long) run_id);
	if (chunk_no > 0)
		appendStringInfo(&payload, "%d}", chunk_no);
	else
		appendStringInfoString(&payload, "null}");
	Async_Notify(NOTIFY_CHANNEL, payload.data);
	pfree(payload.data);
}

/*
 * NotifyCheckEvent
 *		See backfill.h: {"event": "check_failed", "check_id": N,
 *		"failing": F}, sent when a standing check's tick found F > 0 chunks
 *		with a bad verdict (ledger_mismatch or outlier).
 */
void
NotifyCheckEvent(int64 check_id, int32 failing)
{
	char	   *payload;

	if (failing <= 0)
		return;
	payload = psprintf("{\"event\": \"check_failed\", \"check_id\": %lld, \"failing\": %d}",
					   (long long) check_id, failing);
	Async_Notify(NOTIFY_CHANNEL, payload);
	pfree(payload);
}
