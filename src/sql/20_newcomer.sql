
-- ---------------------------------------------------------------------------
-- A newcomer's hour (issue 17): failures that say what to do next, replan
-- under a fixed definition, the run id returned by backfill(), readable
-- monitoring.  Served by base/failures.c, orchestration/replan.c,
-- api/runs.c (backfill, replan, replan_group).
-- ---------------------------------------------------------------------------

-- A replanned run records the run it continues: replan cancels the old
-- run's unfinished chunks and plans exactly those ranges as a new run
-- under the target's current definition.  NULL for every run of 0.1.0 (and
-- every run not made by replan).  No foreign key: the catalog is dumped and
-- restored table by table, and a self-reference would order nothing.
ALTER TABLE backfill.runs
    ADD COLUMN continues_run pg_catalog.int8;
COMMENT ON COLUMN backfill.runs.continues_run IS
    'The run this run continues (backfill.replan, backfill.replan_group): its unfinished chunks, planned again under the current definition; NULL otherwise.';

-- The cause of a chunk's failure, and the call that goes on from it
-- (base/failures.c): a definition cause (the registered text raised the
-- error, the ledger gate refused the chunk, a row fell outside the range,
-- the source produced a key twice) is fixed by register and replan; a
-- transient one (lock timeout, deadlock, serialization, chunk_timeout, a
-- worker or connection down) by running again; anything else (privileges,
-- a dropped table, a full disk) by fixing it and running again.  NULL for
-- the chunks of 0.1.0 and for every chunk that did not fail.
ALTER TABLE backfill.chunks
    ADD COLUMN error_cause pg_catalog.text
        CHECK (error_cause IN ('definition', 'transient', 'environment')),
    ADD COLUMN next_step pg_catalog.text;
COMMENT ON COLUMN backfill.chunks.error_cause IS
    'Why the chunk failed: definition (fix it with register, then replan), transient (run again), environment (fix the cause, then run again).';
COMMENT ON COLUMN backfill.chunks.next_step IS
    'The call that goes on after the chunk''s failure, e.g. SELECT backfill.replan(5).';

-- CALL backfill.backfill(...) returns its run id as an INOUT parameter
-- named run_id: a one-row result that \gset picks up.  A procedure's
-- output arguments are part of its signature: drop and create it, and
-- grant it again.  The C symbol is the same one (backfill_backfill), which
-- serves both signatures.
DROP PROCEDURE backfill.backfill(pg_catalog.regclass, pg_catalog.timestamptz,
                                 pg_catalog.timestamptz, pg_catalog.interval,
                                 pg_catalog.text);
CREATE PROCEDURE backfill.backfill(target pg_catalog.regclass,
                                   range_start pg_catalog.timestamptz,
                                   range_end pg_catalog.timestamptz,
                                   chunk pg_catalog.interval DEFAULT NULL,
                                   note pg_catalog.text DEFAULT NULL,
                                   INOUT run_id pg_catalog.int8 DEFAULT NULL)
AS 'MODULE_PATHNAME', 'backfill_backfill'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.backfill(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.int8) IS
    'Plan without a probe and run to the end: for small ranges.  Returns the run id (INOUT run_id; leave it out).';
REVOKE ALL ON PROCEDURE backfill.backfill(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.int8) FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE backfill.backfill(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.int8) TO PUBLIC;

-- The cron text of a run's last schedule, kept beside chunks_per_tick and
-- quiet_hours (schedule.c), so that progress_brief can estimate the end of
-- a scheduled run from its schedule (cronexpr.c).  NULL for the runs
-- scheduled by 0.1.0: their eta stays the chunk-duration estimate.
ALTER TABLE backfill.runs
    ADD COLUMN cron pg_catalog.text;
COMMENT ON COLUMN backfill.runs.cron IS
    'The cron text of the run''s last schedule (backfill.schedule), read in GMT as pg_cron reads it.';

CREATE FUNCTION backfill.cron_eta(cron pg_catalog.text,
                                  chunks_per_tick pg_catalog.int4,
                                  quiet_hours pg_catalog.text,
                                  timezone pg_catalog.text,
                                  chunks_left pg_catalog.int8,
                                  since pg_catalog.timestamptz DEFAULT pg_catalog.now())
RETURNS pg_catalog.interval
AS 'MODULE_PATHNAME', 'backfill_cron_eta'
LANGUAGE C STABLE;
COMMENT ON FUNCTION backfill.cron_eta(pg_catalog.text, pg_catalog.int4, pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz) IS
    'How long until chunks_left chunks are done on a schedule: its ticks (cron in GMT) inside the quiet hours (local time), chunks_per_tick each; NULL when not understood or over a year.';
REVOKE ALL ON FUNCTION backfill.cron_eta(pg_catalog.text, pg_catalog.int4, pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.cron_eta(pg_catalog.text, pg_catalog.int4, pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz) TO PUBLIC;

-- reconcile(run) leaves out the chunks that did not run, pending or
-- cancelled (a NOTICE counts them); include_not_run => true lists them with
-- the verdict not_run, as 0.1.0 did.  A new argument is a new signature:
-- drop and create, and grant again.  reconcile_group, a SQL function whose
-- body calls reconcile(run_id), follows (its text is resolved when called).
DROP FUNCTION backfill.reconcile(pg_catalog.int8);
CREATE FUNCTION backfill.reconcile(run_id pg_catalog.int8,
                                   include_not_run pg_catalog.bool DEFAULT false)
RETURNS TABLE (chunk_no pg_catalog.int4,
               chunk_start pg_catalog.timestamptz,
               chunk_end pg_catalog.timestamptz,
               status pg_catalog.text,
               target_value pg_catalog.numeric,
               ledger_value pg_catalog.numeric,
               ledger_ok pg_catalog.bool,
               neighbor_median pg_catalog.numeric,
               neighbor_ok pg_catalog.bool,
               verdict pg_catalog.text)
AS 'MODULE_PATHNAME', 'backfill_reconcile'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.reconcile(pg_catalog.int8, pg_catalog.bool) IS
    'Compare every chunk of a run with the ledger and with the chunks around the range; pending and cancelled chunks only with include_not_run.';
REVOKE ALL ON FUNCTION backfill.reconcile(pg_catalog.int8, pg_catalog.bool) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.reconcile(pg_catalog.int8, pg_catalog.bool) TO PUBLIC;

-- replan and replan_group: cancel the unfinished chunks and plan them again
-- under the current definition, in one transaction; the new run id.
CREATE FUNCTION backfill.replan(run_id pg_catalog.int8)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'backfill_replan'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.replan(pg_catalog.int8) IS
    'Cancel the unfinished chunks of a run and plan exactly those ranges again under the target''s current definition, as a new run (probed again) that records the run it continues; returns its id.';

CREATE FUNCTION backfill.replan_group(group_id pg_catalog.int8)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'backfill_replan_group'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.replan_group(pg_catalog.int8) IS
    'backfill.replan for a group: its unfinished chunks, and the downstream chunks built from them (widened as a cascade does), planned again as a new group; returns the new group id.';

REVOKE ALL ON FUNCTION backfill.replan(pg_catalog.int8) FROM PUBLIC;
REVOKE ALL ON FUNCTION backfill.replan_group(pg_catalog.int8) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.replan(pg_catalog.int8) TO PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.replan_group(pg_catalog.int8) TO PUBLIC;

-- ---------------------------------------------------------------------------
-- Views of issue 17, all in this one place:
--   history         redefined: three columns appended (continues_run,
--                   error_cause, next_step); its 24 columns kept as they are
--   progress        eta of a scheduled run from its schedule (cron_eta):
--                   in 40_parallel.sql, which redefines the view once
--   progress_brief  new: progress in 8 columns, readable without \x
--   history_brief   new: history in 8 columns, readable without \x
-- The _brief names sit beside the views they narrow (tab completion shows
-- both): the same rows, the columns a person reads first.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE VIEW backfill.history WITH (security_invoker = true) AS
SELECT r.target,
       c.run_id,
       c.chunk_no,
       c.chunk_start,
       c.chunk_end,
       c.status,
       r.definition_version,
       d.label AS definition_label,
       c.rows_deleted,
       c.rows_inserted,
       c.before_value,
       c.after_value,
       c.ledger_value,
       c.verdict,
       c.strategy,
       c.started_at,
       COALESCE(c.finished_at, r.finished_at) AS finished_at,
       c.executed_by,
       c.executed_via,
       r.note,
       c.attempts,
       c.error_sqlstate,
       c.error_message,
       r.target_name,
       r.continues_run,
       c.error_cause,
       c.next_step
  FROM backfill.chunks c
  JOIN backfill.runs r
    ON r.run_id OPERATOR(pg_catalog.=) c.run_id
  LEFT JOIN backfill.definitions d
    ON d.target OPERATOR(pg_catalog.=) r.target
   AND d.version OPERATOR(pg_catalog.=) r.definition_version
 WHERE (c.status OPERATOR(pg_catalog.=) 'done'
        AND c.finished_at IS NOT NULL)
    OR (c.status OPERATOR(pg_catalog.=) 'failed'
        AND c.finished_at IS NOT NULL)
    OR (c.status OPERATOR(pg_catalog.=) 'no_source'
        AND (c.finished_at IS NOT NULL
             OR r.status OPERATOR(pg_catalog.=) 'done'));
COMMENT ON VIEW backfill.history IS
    'One row per finished chunk (done, failed, no_source): range, run, definition, figures, who, when, the run''s note, the run it continues, and a failure''s cause and next call.';

-- progress keeps its 18 columns; the eta of a scheduled run (a pg_cron job
-- and the cron text of its schedule) is estimated from the schedule
-- (cron_eta: its ticks x chunks_per_tick, the cron text read in GMT and
-- the quiet hours), not from the chunk duration alone, which says minutes
-- for a run that takes nights.  The view is redefined once, with that eta
-- and the parallel chunks in flight, in 40_parallel.sql.

-- One row per unfinished run, in the eight columns a person reads first.
-- state: running (a backend executes it now), failed, waiting (scheduled,
-- outside its quiet hours: resumes_at says when the window opens, in the
-- run's TimeZone), scheduled (a pg_cron job will take it up), probed
-- (waiting for a person to look at its probe chunk), planned.  chunks:
-- settled of total ("12/366").  eta: progress's (from the schedule for a
-- scheduled run).  next_step: the call that goes on (a
-- failure's, from the failed chunk; none while running or scheduled).
CREATE VIEW backfill.progress_brief WITH (security_invoker = true) AS
SELECT p.run_id,
       p.target,
       s.state,
       (p.chunks_done OPERATOR(pg_catalog.+) p.chunks_no_source)::pg_catalog.text
           OPERATOR(pg_catalog.||) '/'
           OPERATOR(pg_catalog.||) p.chunks_total::pg_catalog.text AS chunks,
       p.percent,
       p.eta,
       CASE WHEN s.state OPERATOR(pg_catalog.=) 'waiting'
            THEN w.opens OPERATOR(pg_catalog.+)
                 CASE WHEN w.opens OPERATOR(pg_catalog.<=) pg_catalog.now()
                      THEN '1 day'::pg_catalog.interval
                      ELSE '0'::pg_catalog.interval END
       END AS resumes_at,
       CASE WHEN s.state OPERATOR(pg_catalog.=) ANY ('{running,scheduled,waiting}'::pg_catalog.text[])
            THEN NULL
            WHEN s.state OPERATOR(pg_catalog.=) 'failed'
            THEN (SELECT c.next_step FROM backfill.chunks c
                   WHERE c.run_id OPERATOR(pg_catalog.=) p.run_id
                     AND c.status OPERATOR(pg_catalog.=) 'failed'
                   ORDER BY c.finished_at DESC NULLS LAST LIMIT 1)
            WHEN r.group_id IS NOT NULL
            THEN 'CALL backfill.run_group(' OPERATOR(pg_catalog.||)
                 r.group_id::pg_catalog.text OPERATOR(pg_catalog.||) ')'
            ELSE 'CALL backfill.run(' OPERATOR(pg_catalog.||)
                 p.run_id::pg_catalog.text OPERATOR(pg_catalog.||) ')'
       END AS next_step
  FROM backfill.progress p
  JOIN backfill.runs r
    ON r.run_id OPERATOR(pg_catalog.=) p.run_id
 CROSS JOIN LATERAL (
       -- the local opening of the quiet hours today, as timestamptz
       SELECT (pg_catalog.date_trunc('day', pg_catalog.timezone(r.timezone, pg_catalog.now()))
               OPERATOR(pg_catalog.+)
               pg_catalog.split_part(r.quiet_hours, '-', 1)::pg_catalog.time)
               AS local_open) l
 CROSS JOIN LATERAL (
       SELECT CASE WHEN r.quiet_hours IS NOT NULL
                   THEN pg_catalog.timezone(r.timezone, l.local_open) END AS opens) w
 CROSS JOIN LATERAL (
       SELECT CASE WHEN p.pid IS NOT NULL THEN 'running'
                   WHEN p.status OPERATOR(pg_catalog.=) 'failed' THEN 'failed'
                   WHEN p.job_id IS NOT NULL AND r.quiet_hours IS NOT NULL
                        AND NOT backfill.in_quiet_hours(r.quiet_hours, r.timezone,
                                                        pg_catalog.now())
                   THEN 'waiting'
                   WHEN p.job_id IS NOT NULL THEN 'scheduled'
                   ELSE p.status
              END AS state) s;
COMMENT ON VIEW backfill.progress_brief IS
    'backfill.progress in eight columns: run, table, state (running, failed, waiting, scheduled, probed, planned), chunks settled/total, percent, eta, when a waiting run resumes, and the next call.';

-- One row per finished chunk, in the eight columns a person reads first.
CREATE VIEW backfill.history_brief WITH (security_invoker = true) AS
SELECT h.run_id,
       h.target,
       h.chunk_no,
       h.chunk_start,
       h.status,
       h.rows_inserted,
       h.verdict,
       h.finished_at
  FROM backfill.history h;
COMMENT ON VIEW backfill.history_brief IS
    'backfill.history in eight columns: run, table, chunk, its start, status, rows inserted, verdict, finished at.';

GRANT SELECT ON backfill.progress_brief, backfill.history_brief TO PUBLIC;
