
-- ---------------------------------------------------------------------------
-- Parallel chunks (0.2.0, issue 19): parallel => N on run, backfill,
-- run_group, schedule and schedule_group (orchestration/parallel.c).
--
-- Each gains a trailing argument "parallel" (default 1: one chunk at a time
-- in the calling session, exactly as in 0.1.0).  A changed signature is a
-- new function: the 0.1.0 one is dropped and the new one created with the
-- same C symbol (which reads the argument only when it is there) and its
-- grant re-issued.  pg_cron jobs made by 0.1.0's schedule call
-- backfill.run(<id>, max_chunks => <n>), which the new declaration serves
-- unchanged.
--
-- backfill.progress gains the chunks in flight and the pids of the
-- background workers executing them (from pg_locks: a worker holds the
-- lock of its chunk, BACKFILL_LOCK_SUBID_CHUNK = 16967, classid the run id,
-- objid the chunk number, from its start to its exit).
-- ---------------------------------------------------------------------------
DROP PROCEDURE backfill.run(pg_catalog.int8, pg_catalog.int4);
CREATE PROCEDURE backfill.run(run_id pg_catalog.int8,
                              max_chunks pg_catalog.int4 DEFAULT NULL,
                              parallel pg_catalog.int4 DEFAULT 1)
AS 'MODULE_PATHNAME', 'backfill_run'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.run(pg_catalog.int8, pg_catalog.int4, pg_catalog.int4) IS
    'Execute the pending chunks of a run, one transaction per chunk; with parallel => N, up to N at a time in background workers.';

-- backfill() as 20_newcomer.sql left it (INOUT run_id last), with parallel
-- before run_id: CALL backfill.backfill(..., parallel => 4) still prints
-- its run id.
DROP PROCEDURE backfill.backfill(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.int8);
CREATE PROCEDURE backfill.backfill(target pg_catalog.regclass,
                                   range_start pg_catalog.timestamptz,
                                   range_end pg_catalog.timestamptz,
                                   chunk pg_catalog.interval DEFAULT NULL,
                                   note pg_catalog.text DEFAULT NULL,
                                   parallel pg_catalog.int4 DEFAULT 1,
                                   INOUT run_id pg_catalog.int8 DEFAULT NULL)
AS 'MODULE_PATHNAME', 'backfill_backfill'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.backfill(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.int4, pg_catalog.int8) IS
    'Plan without a probe and run to the end: for small ranges.  Returns the run id (INOUT run_id; leave it out).';

DROP PROCEDURE backfill.run_group(pg_catalog.int8, pg_catalog.int4);
CREATE PROCEDURE backfill.run_group(group_id pg_catalog.int8,
                                    max_chunks pg_catalog.int4 DEFAULT NULL,
                                    parallel pg_catalog.int4 DEFAULT 1)
AS 'MODULE_PATHNAME', 'backfill_run_group'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.run_group(pg_catalog.int8, pg_catalog.int4, pg_catalog.int4) IS
    'Execute the runs of a group in dependency order, one transaction per chunk; stops at the first failure.';

DROP FUNCTION backfill.schedule(pg_catalog.int8, pg_catalog.text, pg_catalog.int4, pg_catalog.text);
CREATE FUNCTION backfill.schedule(run_id pg_catalog.int8,
                                  cron pg_catalog.text DEFAULT '*/5 * * * *',
                                  chunks_per_tick pg_catalog.int4 DEFAULT 1,
                                  quiet_hours pg_catalog.text DEFAULT NULL,
                                  parallel pg_catalog.int4 DEFAULT 1)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'backfill_schedule'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.schedule(pg_catalog.int8, pg_catalog.text, pg_catalog.int4, pg_catalog.text, pg_catalog.int4) IS
    'Hand the rest of a run to pg_cron; returns the job id.';

DROP FUNCTION backfill.schedule_group(pg_catalog.int8, pg_catalog.text, pg_catalog.int4, pg_catalog.text);
CREATE FUNCTION backfill.schedule_group(group_id pg_catalog.int8,
                                        cron pg_catalog.text DEFAULT '*/5 * * * *',
                                        chunks_per_tick pg_catalog.int4 DEFAULT 1,
                                        quiet_hours pg_catalog.text DEFAULT NULL,
                                        parallel pg_catalog.int4 DEFAULT 1)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'backfill_schedule_group'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.schedule_group(pg_catalog.int8, pg_catalog.text, pg_catalog.int4, pg_catalog.text, pg_catalog.int4) IS
    'Schedule every unfinished run of a group with backfill.schedule; returns the number of runs scheduled.';

REVOKE ALL ON FUNCTION
    backfill.schedule(pg_catalog.int8, pg_catalog.text, pg_catalog.int4, pg_catalog.text, pg_catalog.int4),
    backfill.schedule_group(pg_catalog.int8, pg_catalog.text, pg_catalog.int4, pg_catalog.text, pg_catalog.int4)
FROM PUBLIC;
REVOKE ALL ON PROCEDURE
    backfill.run(pg_catalog.int8, pg_catalog.int4, pg_catalog.int4),
    backfill.backfill(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.int4, pg_catalog.int8),
    backfill.run_group(pg_catalog.int8, pg_catalog.int4, pg_catalog.int4)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    backfill.schedule(pg_catalog.int8, pg_catalog.text, pg_catalog.int4, pg_catalog.text, pg_catalog.int4),
    backfill.schedule_group(pg_catalog.int8, pg_catalog.text, pg_catalog.int4, pg_catalog.text, pg_catalog.int4)
TO PUBLIC;
GRANT EXECUTE ON PROCEDURE
    backfill.run(pg_catalog.int8, pg_catalog.int4, pg_catalog.int4),
    backfill.backfill(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.int4, pg_catalog.int8),
    backfill.run_group(pg_catalog.int8, pg_catalog.int4, pg_catalog.int4)
TO PUBLIC;

-- backfill.progress, as 20_newcomer.sql left it (eta from the schedule),
-- and at its end: chunks_in_flight, the
-- chunks background workers execute right now (in chunk order), and
-- worker_pids, their pids (same order); both empty when none; and
-- reason, why the run's next unfinished chunk is rebuilt (changed regions).
CREATE OR REPLACE VIEW backfill.progress WITH (security_invoker = true) AS
SELECT r.run_id,
       r.target,
       r.status,
       s.chunks_total,
       s.chunks_done,
       s.chunks_failed,
       s.chunks_no_source,
       CASE WHEN s.chunks_total OPERATOR(pg_catalog.>) 0
            THEN pg_catalog.round(100::pg_catalog.numeric
                                  OPERATOR(pg_catalog.*) s.chunks_settled
                                  OPERATOR(pg_catalog./) s.chunks_total, 1)
       END AS percent,
       s.rows_inserted,
       CASE WHEN s.first_started IS NULL THEN NULL
            WHEN lk.pid IS NOT NULL
            THEN pg_catalog.now() OPERATOR(pg_catalog.-) s.first_started
            ELSE s.last_finished OPERATOR(pg_catalog.-) s.first_started
       END AS elapsed,
       CASE WHEN s.chunks_total OPERATOR(pg_catalog.=) s.chunks_settled
            THEN '0'::pg_catalog.interval
            -- a scheduled run ends with its schedule's ticks (0.2.0)
            ELSE COALESCE(
                 CASE WHEN r.job_id IS NOT NULL AND r.cron IS NOT NULL
                      THEN backfill.cron_eta(r.cron, r.chunks_per_tick,
                                             r.quiet_hours, r.timezone,
                                             s.chunks_total
                                             OPERATOR(pg_catalog.-) s.chunks_settled)
                 END,
                 s.avg_chunk
                 OPERATOR(pg_catalog.*)
                 (s.chunks_total OPERATOR(pg_catalog.-) s.chunks_settled)::pg_catalog.float8)
       END AS eta,
       lk.pid,
       s.chunks_pending,
       s.chunks_via_cron,
       s.last_executed_via,
       s.last_finished AS last_finished_at,
       r.job_id,
       r.last_error,
       w.chunks_in_flight,
       w.worker_pids,
       -- why its next unfinished chunk is rebuilt (chunks.reason, set by a
       -- stale plan: 30_changed_regions.sql); NULL for a range's chunk
       (SELECT c.reason FROM backfill.chunks c
         WHERE c.run_id OPERATOR(pg_catalog.=) r.run_id
           AND c.status OPERATOR(pg_catalog.=) ANY ('{pending,failed}'::pg_catalog.text[])
         ORDER BY c.chunk_no LIMIT 1) AS reason
  FROM backfill.runs r
 CROSS JOIN LATERAL (
       SELECT pg_catalog.count(*) AS chunks_total,
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'done') AS chunks_done,
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'failed') AS chunks_failed,
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'no_source') AS chunks_no_source,
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'pending') AS chunks_pending,
              -- chunks that need no more work: done, and no_source
              -- unless the run still has to clear them
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'done'
                     OR (c.status OPERATOR(pg_catalog.=) 'no_source'
                         AND (c.finished_at IS NOT NULL
                              OR NOT r.clear_no_source))) AS chunks_settled,
              pg_catalog.count(*) FILTER (
                  WHERE c.executed_via OPERATOR(pg_catalog.=) 'pg_cron'
                    AND c.finished_at IS NOT NULL) AS chunks_via_cron,
              COALESCE(pg_catalog.sum(c.rows_inserted) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'done'), 0) AS rows_inserted,
              pg_catalog.min(c.started_at) AS first_started,
              pg_catalog.max(c.finished_at) AS last_finished,
              pg_catalog.avg(c.finished_at OPERATOR(pg_catalog.-) c.started_at) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'done'
                    AND c.started_at IS NOT NULL
                    AND c.finished_at IS NOT NULL) AS avg_chunk,
              (pg_catalog.array_agg(c.executed_via
                                    ORDER BY c.finished_at DESC, c.chunk_no DESC)
                   FILTER (WHERE c.finished_at IS NOT NULL))[1] AS last_executed_via
         FROM backfill.chunks c
        WHERE c.run_id OPERATOR(pg_catalog.=) r.run_id) s
  LEFT JOIN (
       SELECT l.objid, pg_catalog.min(l.pid) AS pid
         FROM pg_catalog.pg_locks l
        WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory'
          AND l.database OPERATOR(pg_catalog.=)
              (SELECT db.oid FROM pg_catalog.pg_database db
                WHERE db.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
          AND l.classid OPERATOR(pg_catalog.=) 1111883777::pg_catalog.oid
          AND l.objsubid OPERATOR(pg_catalog.=) 16966
          AND l.granted
        GROUP BY l.objid) lk
    ON lk.objid OPERATOR(pg_catalog.=)
       (r.run_id OPERATOR(pg_catalog.&) 4294967295)::pg_catalog.oid
 CROSS JOIN LATERAL (
       SELECT COALESCE(pg_catalog.array_agg(l.objid::pg_catalog.int8::pg_catalog.int4
                                            ORDER BY l.objid),
                       '{}') AS chunks_in_flight,
              COALESCE(pg_catalog.array_agg(l.pid ORDER BY l.objid),
                       '{}') AS worker_pids
         FROM pg_catalog.pg_locks l
        WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory'
          AND l.database OPERATOR(pg_catalog.=)
              (SELECT db.oid FROM pg_catalog.pg_database db
                WHERE db.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
          AND l.classid OPERATOR(pg_catalog.=)
              (r.run_id OPERATOR(pg_catalog.&) 4294967295)::pg_catalog.oid
          AND l.objsubid OPERATOR(pg_catalog.=) 16967
          AND l.granted) w
 WHERE r.status OPERATOR(pg_catalog.=) 'planned'
    OR r.status OPERATOR(pg_catalog.=) 'probed'
    OR r.status OPERATOR(pg_catalog.=) 'failed';
COMMENT ON VIEW backfill.progress IS
    'One row per unfinished run: chunk counts, percent, rows, elapsed, eta (from the schedule for a scheduled run), the backend executing it now (pid), the chunks in flight in background workers with their pids, and why the next chunk is rebuilt (reason).';
