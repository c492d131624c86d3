-- What a pg_cron tick does, without waiting for pg_cron: a session whose
-- application_name is 'pg_cron' is how pg_cron's libpq mode connects, so a
-- CALL from it is treated as a tick.  Quiet hours are set relative to the
-- current time so that "now" is known to be inside or outside them.  The
-- cron expression is February 30th: pg_cron itself never fires the job.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY default
SELECT setval('backfill.runs_run_id_seq', 4300, false) IS NOT NULL AS ids_fixed;

CREATE ROLE regress_tick_etl;
GRANT USAGE ON SCHEMA cron TO regress_tick_etl;
CREATE TABLE tick_src (ts timestamptz NOT NULL, amount int NOT NULL);
INSERT INTO tick_src
SELECT t, 1 FROM generate_series('2026-02-01 00:00+00'::timestamptz,
                                 '2026-02-04 23:00+00', '1 hour') AS t;
CREATE TABLE tick_daily (day timestamptz NOT NULL, total int NOT NULL);
GRANT SELECT ON tick_src TO regress_tick_etl;
GRANT SELECT, INSERT, DELETE ON tick_daily TO regress_tick_etl;

SET ROLE regress_tick_etl;
SELECT backfill.register('tick_daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM tick_src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$) AS version;
SELECT backfill.plan('tick_daily', '2026-02-01', '2026-02-05', probe => false) AS run_id \gset

-- Quiet hours that start two hours from now: a tick now does nothing.
SELECT to_char(now() + interval '2 hours', 'HH24:MI') || '-' ||
       to_char(now() + interval '3 hours', 'HH24:MI') AS later \gset
SELECT backfill.schedule(:run_id, '0 0 30 2 *', chunks_per_tick => 2,
                         quiet_hours => :'later') > 0 AS scheduled;
SELECT backfill.in_quiet_hours(:'later', 'UTC') AS now_inside;

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

-- Quiet hours around now: the tick works, chunks_per_tick at a time, and
-- records that it ran from pg_cron.
SELECT to_char(now() - interval '1 hour', 'HH24:MI') || '-' ||
       to_char(now() + interval '1 hour', 'HH24:MI') AS around \gset
SELECT backfill.schedule(:run_id, '0 0 30 2 *', chunks_per_tick => 2,
                         quiet_hours => :'around') > 0 AS rescheduled;
SET application_name = 'pg_cron';
SET client_min_messages = warning;
CALL backfill.run(:run_id, max_chunks => 2);
RESET client_min_messages;
SELECT chunk_no, status, executed_by, executed_via
  FROM backfill.chunks WHERE run_id = :run_id ORDER BY chunk_no;
SELECT status, job_id IS NOT NULL AS still_scheduled
  FROM backfill.runs WHERE run_id = :run_id;

-- The tick that finishes the run removes the job.
SET client_min_messages = warning;
CALL backfill.run(:run_id, max_chunks => 2);
RESET client_min_messages;
RESET application_name;
SELECT chunk_no, status, executed_via
  FROM backfill.chunks WHERE run_id = :run_id ORDER BY chunk_no;
SELECT status, job_id FROM backfill.runs WHERE run_id = :run_id;
SELECT count(*) AS jobs_left FROM cron.job WHERE jobname = 'backfill_run_' || :run_id;
SELECT day, total FROM tick_daily ORDER BY day;

-- A run whose chunk fails in a tick is failed, and its job is removed too.
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
SELECT status, job_id FROM backfill.runs WHERE run_id = :run2;
SELECT chunk_no, status, error_sqlstate FROM backfill.chunks WHERE run_id = :run2 ORDER BY chunk_no;
SELECT count(*) AS jobs_left FROM cron.job WHERE jobname = 'backfill_run_' || :run2;
SELECT backfill.cancel(:run2) >= 0 AS cancelled;
RESET ROLE;

SELECT backfill.unregister('tick_daily');
DROP TABLE tick_daily, tick_src;
REVOKE USAGE ON SCHEMA cron FROM regress_tick_etl;
DROP ROLE regress_tick_etl;
