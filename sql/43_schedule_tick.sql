-- What a pg_cron tick does, without waiting for pg_cron: a session whose
-- application_name is 'pg_cron' is how pg_cron's libpq mode connects, so a
-- CALL from it is treated as a tick.  The run is planned in a fixed-offset
-- TimeZone chosen so that it is about noon there now: '06:00-18:00' is
-- known to contain "now" and '22:00-06:00' not to.  The cron expression is
-- February 30th: pg_cron itself never fires the job.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY default
SELECT setval('backfill.runs_run_id_seq', 4300, false) IS NOT NULL AS ids_fixed;

CREATE ROLE regress_tick_etl;
GRANT USAGE ON SCHEMA cron TO regress_tick_etl;
CREATE TABLE tick_src (ts timestamptz NOT NULL, amount int NOT NULL);
INSERT INTO tick_src
SELECT t, 1 FROM generate_series('2026-01-31 00:00+00'::timestamptz,
                                 '2026-02-06 00:00+00', '1 hour') AS t;
CREATE TABLE tick_daily (day timestamptz NOT NULL, total int NOT NULL);
GRANT SELECT ON tick_src TO regress_tick_etl;
GRANT SELECT, INSERT, DELETE ON tick_daily TO regress_tick_etl;

SET ROLE regress_tick_etl;
SELECT backfill.register('tick_daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM tick_src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$) AS version;
SELECT set_config('TimeZone',
                  (12 - extract(hour FROM now() AT TIME ZONE 'UTC'))::int::text,
                  false) IS NOT NULL AS noon_zone;
SELECT extract(hour FROM localtimestamp) BETWEEN 12 AND 13 AS about_noon;
SELECT backfill.plan('tick_daily', '2026-02-01', '2026-02-05', probe => false) AS run_id \gset
SET TimeZone = 'UTC';		-- the run keeps the zone it was planned in

-- Night-time quiet hours: a tick now does nothing.
SELECT backfill.schedule(:run_id, '0 0 30 2 *', chunks_per_tick => 2,
                         quiet_hours => '22:00-06:00') > 0 AS scheduled;
SELECT backfill.in_quiet_hours(quiet_hours, timezone) AS now_inside
  FROM backfill.runs WHERE run_id = :run_id;

SET application_name = 'pg_cron';
CALL backfill.run(:run_id, max_chunks => 2);
SELECT chunk_no, status, attempts FROM backfill.chunks WHERE run_id = :run_id ORDER BY chunk_no;

-- A person running it by hand is not held to the quiet hours.
RESET application_name;
SET client_min_messages = warning;
CALL backfill.run(:run_id, max_chunks => 1);
RESET client_min_messages;
SELECT chunk_no, status, executed_by, executed_via
  FROM backfill.chunks WHERE run_id = :run_id ORDER BY chunk_no;

-- Day-time quiet hours: the tick works, chunks_per_tick at a time.  Its
-- chunks say executed_via 'session': only a pg_cron background worker is
-- recorded as 'pg_cron' (anyone can SET application_name = 'pg_cron').
SELECT backfill.schedule(:run_id, '0 0 30 2 *', chunks_per_tick => 2,
                         quiet_hours => '06:00-18:00') > 0 AS rescheduled;
SELECT backfill.in_quiet_hours(quiet_hours, timezone) AS now_inside
  FROM backfill.runs WHERE run_id = :run_id;
SET application_name = 'pg_cron';
SET client_min_messages = warning;
CALL backfill.run(:run_id, max_chunks => 2);
RESET client_min_messages;
SELECT chunk_no, status, executed_by, executed_via
  FROM backfill.chunks WHERE run_id = :run_id ORDER BY chunk_no;
SELECT status, job_id IS NOT NULL AS still_scheduled
  FROM backfill.runs WHERE run_id = :run_id;

-- The tick that finishes the run parks the job instead of removing it (a
-- job removed during its own tick is logged "failed: job canceled" by
-- pg_cron): February 31st, never again.  The run still names it, and the
-- next sweep (any backfill tick, schedule, unschedule, cleanup_jobs)
-- removes it.
SET client_min_messages = warning;
CALL backfill.run(:run_id, max_chunks => 2);
RESET client_min_messages;
RESET application_name;
SELECT chunk_no, status, executed_via
  FROM backfill.chunks WHERE run_id = :run_id ORDER BY chunk_no;
SELECT status, job_id IS NOT NULL AS parked FROM backfill.runs WHERE run_id = :run_id;
SELECT schedule, command FROM cron.job WHERE jobname = 'backfill_run_' || :run_id;
SELECT count(*) AS days, sum(total) AS total FROM tick_daily;
RESET ROLE;
SELECT job_name, username FROM backfill.cleanup_jobs();
SET ROLE regress_tick_etl;
SELECT job_id FROM backfill.runs WHERE run_id = :run_id;
SELECT count(*) AS jobs_left FROM cron.job WHERE jobname = 'backfill_run_' || :run_id;

-- A job left behind on a finished run (as when it is scheduled while a
-- session's CALL finishes the run) is parked by its next tick.
SELECT cron.schedule('backfill_run_' || :run_id, '0 0 30 2 *',
                     format('CALL backfill.run(%s, max_chunks => 2)', :run_id)) AS stale_job \gset
RESET ROLE;
UPDATE backfill.runs SET job_id = :stale_job WHERE run_id = :run_id;
SET ROLE regress_tick_etl;
SET application_name = 'pg_cron';
CALL backfill.run(:run_id, max_chunks => 2);
RESET application_name;
SELECT job_id OPERATOR(pg_catalog.=) :stale_job AS parked FROM backfill.runs WHERE run_id = :run_id;
SELECT schedule FROM cron.job WHERE jobname = 'backfill_run_' || :run_id;

-- A tick for a run that has no job does nothing: a job left behind by DROP
-- EXTENSION (run ids start again after a new install) or one made by hand
-- must not execute whatever run now carries its id.
SELECT backfill.plan('tick_daily', '2026-03-01', '2026-03-03', probe => false) AS run3 \gset
SET application_name = 'pg_cron';
CALL backfill.run(:run3);
RESET application_name;
SELECT status, (SELECT count(*) FROM backfill.chunks c
                 WHERE c.run_id = r.run_id AND c.status = 'pending') AS pending
  FROM backfill.runs r WHERE run_id = :run3;
SELECT backfill.cancel(:run3) > 0 AS cancelled;

-- A run whose chunk fails in a tick is failed, and its job is parked too;
-- the next backfill tick of another run removes it (and the stale job
-- above), never its own.
SELECT backfill.plan('tick_daily', '2026-02-01', '2026-02-03', probe => false) AS run2 \gset
SELECT backfill.schedule(:run2, '0 0 30 2 *') > 0 AS scheduled;
RESET ROLE;
REVOKE SELECT ON tick_src FROM regress_tick_etl;
SET ROLE regress_tick_etl;
SET application_name = 'pg_cron';
SET client_min_messages = warning;
CALL backfill.run(:run2, max_chunks => 1);
RESET client_min_messages;
RESET application_name;
SELECT status, job_id IS NOT NULL AS parked FROM backfill.runs WHERE run_id = :run2;
SELECT count(*) AS stale_job_left FROM cron.job WHERE jobname = 'backfill_run_' || :run_id;
SELECT chunk_no, status, error_sqlstate FROM backfill.chunks WHERE run_id = :run2 ORDER BY chunk_no;
SELECT schedule FROM cron.job WHERE jobname = 'backfill_run_' || :run2;
SELECT backfill.cancel(:run2) >= 0 AS cancelled;
RESET ROLE;

-- A scheduled run whose role can no longer write the target: the tick is
-- refused, and backfill.progress says why (last_error) instead of showing
-- a run that looks merely planned; the note goes once the right is back.
GRANT SELECT ON tick_src TO regress_tick_etl;
SET ROLE regress_tick_etl;
SELECT backfill.plan('tick_daily', '2026-02-01', '2026-02-03', probe => false) AS run4 \gset
SELECT backfill.schedule(:run4, '0 0 30 2 *') > 0 AS scheduled;
RESET ROLE;
REVOKE INSERT ON tick_daily FROM regress_tick_etl;
SET ROLE regress_tick_etl;
SET application_name = 'pg_cron';
CALL backfill.run(:run4, max_chunks => 1);
\echo :LAST_ERROR_SQLSTATE
RESET application_name;
SELECT status, job_id IS NOT NULL AS scheduled, last_error
  FROM backfill.progress WHERE run_id = :run4;
RESET ROLE;
GRANT INSERT ON tick_daily TO regress_tick_etl;
SET ROLE regress_tick_etl;
SET application_name = 'pg_cron';
SET client_min_messages = warning;
CALL backfill.run(:run4, max_chunks => 1);
RESET client_min_messages;
RESET application_name;
SELECT status, chunks_done, last_error FROM backfill.progress WHERE run_id = :run4;
SELECT backfill.cancel(:run4) >= 0 AS cancelled;
RESET ROLE;

SELECT backfill.unregister('tick_daily');
DROP TABLE tick_daily, tick_src;
REVOKE USAGE ON SCHEMA cron FROM regress_tick_etl;
DROP ROLE regress_tick_etl;
