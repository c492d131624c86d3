
-- ---------------------------------------------------------------------------
-- pg_cron as teams run it (issue 29, items 1 and 2): ticks that fail are
-- shown, and pg_cron may serve another database of the cluster.  C:
-- base/cronjobs.c (where pg_cron is, the statements on its jobs, the
-- WARNING of ticks over libpq), base/cronrelay.c (the background worker
-- that runs them in pg_cron's database), orchestration/schedule.c
-- (ScheduleTickFailures, the sweeps), api/scheduling.c (_tick_failures).
--
-- backfill._tick_failures() reads, for the scheduled runs, standing checks
-- and refreshes the caller may see, the last finished ticks of their
-- pg_cron jobs in cron.job_run_details (here or in pg_cron's database),
-- and returns those whose latest tick failed: how many in a row, when the
-- last one ended, pg_cron's message, and the fix.
-- ---------------------------------------------------------------------------
CREATE FUNCTION backfill._tick_failures()
RETURNS TABLE (kind pg_catalog.text, id pg_catalog.int8,
               job_id pg_catalog.int8, ticks_failed pg_catalog.int4,
               failed_at pg_catalog.timestamptz, message pg_catalog.text,
               next_step pg_catalog.text)
LANGUAGE C VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'backfill__tick_failures';
COMMENT ON FUNCTION backfill._tick_failures() IS
    'Internal, read by backfill.progress: the scheduled runs, standing checks and refreshes the caller may see whose latest pg_cron tick failed, with pg_cron''s message and the fix.';
REVOKE ALL ON FUNCTION backfill._tick_failures() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backfill._tick_failures() TO PUBLIC;

-- progress_brief reads progress's new columns: dropped, and made again
-- below with its grant.
DROP VIEW backfill.progress_brief;

-- backfill.progress, as 40_parallel.sql left it, and at its end: kind and
-- id ('run' and the run id), and for a run whose latest pg_cron tick
-- failed, how many ticks failed in a row (ticks_failed), pg_cron's message
-- (tick_failure), when the last one ended (tick_failed_at; NULL when
-- pg_cron recorded no time, as for a failed connection) and the fix
-- (tick_next_step).  A standing check or refresh whose latest tick failed
-- has a row of its own (run_id NULL, kind 'check' or 'refresh').
CREATE OR REPLACE VIEW backfill.progress WITH (security_invoker = true) AS
WITH t AS MATERIALIZED (SELECT * FROM backfill._tick_failures())
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
         ORDER BY c.chunk_no LIMIT 1) AS reason,
       -- the run's pg_cron ticks that fail (80_cron_ticks.sql)
       'run'::pg_catalog.text AS kind,
       r.run_id AS id,
       t.ticks_failed,
       t.message AS tick_failure,
       t.failed_at AS tick_failed_at,
       t.next_step AS tick_next_step
  FROM backfill.runs r
  LEFT JOIN t
    ON t.kind OPERATOR(pg_catalog.=) 'run'
   AND t.id OPERATOR(pg_catalog.=) r.run_id
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
    OR r.status OPERATOR(pg_catalog.=) 'failed'
UNION ALL
-- a standing check or a refresh whose pg_cron ticks fail: a row of its own
SELECT NULL::pg_catalog.int8, x.target, NULL::pg_catalog.text,
       NULL::pg_catalog.int8, NULL::pg_catalog.int8, NULL::pg_catalog.int8,
       NULL::pg_catalog.int8, NULL::pg_catalog.numeric, NULL::pg_catalog.numeric,
       NULL::pg_catalog.interval, NULL::pg_catalog.interval, NULL::pg_catalog.int4,
       NULL::pg_catalog.int8, NULL::pg_catalog.int8, NULL::pg_catalog.text,
       NULL::pg_catalog.timestamptz, t.job_id, x.last_error,
       '{}'::pg_catalog.int4[], '{}'::pg_catalog.int4[], NULL::pg_catalog.text,
       t.kind, t.id, t.ticks_failed, t.message, t.failed_at, t.next_step
  FROM t
  JOIN (SELECT 'check'::pg_catalog.text AS kind, c.check_id AS id, c.target,
               c.last_error
          FROM backfill.checks c
        UNION ALL
        SELECT 'refresh', f.refresh_id, f.target, NULL::pg_catalog.text
          FROM backfill.refreshes f) x
    ON x.kind OPERATOR(pg_catalog.=) t.kind
   AND x.id OPERATOR(pg_catalog.=) t.id;
COMMENT ON VIEW backfill.progress IS
    'One row per unfinished run: chunk counts, percent, rows, elapsed, eta (from the schedule for a scheduled run), the backend executing it now (pid), the chunks in flight in background workers with their pids, why the next chunk is rebuilt (reason), and pg_cron ticks that fail (with their message and fix); and one row per standing check or refresh whose pg_cron ticks fail.';

-- progress_brief as 20_newcomer.sql made it, with one more state: stalled,
-- a run (or a standing check or refresh: run_id NULL) whose latest pg_cron
-- tick failed; next_step then names pg_cron's message and the fix.
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
       CASE WHEN s.state OPERATOR(pg_catalog.=) 'stalled'
            THEN CASE WHEN p.kind OPERATOR(pg_catalog.=) 'run' THEN ''
                      ELSE p.kind OPERATOR(pg_catalog.||) ' '
                           OPERATOR(pg_catalog.||) p.id::pg_catalog.text
                           OPERATOR(pg_catalog.||) ': ' END
                 OPERATOR(pg_catalog.||) 'pg_cron''s ticks fail ('
                 OPERATOR(pg_catalog.||) COALESCE(p.tick_failure, 'no message')
                 OPERATOR(pg_catalog.||) '): '
                 OPERATOR(pg_catalog.||) p.tick_next_step
            WHEN s.state OPERATOR(pg_catalog.=) ANY ('{running,scheduled,waiting}'::pg_catalog.text[])
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
  LEFT JOIN backfill.runs r
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
                   WHEN p.ticks_failed OPERATOR(pg_catalog.>) 0 THEN 'stalled'
                   WHEN p.job_id IS NOT NULL AND r.quiet_hours IS NOT NULL
                        AND NOT backfill.in_quiet_hours(r.quiet_hours, r.timezone,
                                                        pg_catalog.now())
                   THEN 'waiting'
                   WHEN p.job_id IS NOT NULL THEN 'scheduled'
                   ELSE p.status
              END AS state) s;
COMMENT ON VIEW backfill.progress_brief IS
    'backfill.progress in eight columns: run, table, state (running, failed, stalled, waiting, scheduled, probed, planned), chunks settled/total, percent, eta, when a waiting run resumes, and the next call (for a stalled one, pg_cron''s message and the fix).';
GRANT SELECT ON backfill.progress_brief TO PUBLIC;
