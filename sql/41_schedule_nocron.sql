-- backfill never requires pg_cron in its own database: pg_cron serves one
-- database per cluster (cron.database_name: the regression database
-- here), and backfill installed in another database creates its jobs in
-- that one, for its own database and the scheduling role, through a
-- background worker (issue 29, item 2).  Everything else works without
-- pg_cron.  The ticks themselves: t/085_cron_elsewhere.pl.
SELECT current_database() AS regress_db \gset
CREATE ROLE regress_elsewhere_etl LOGIN;
CREATE ROLE regress_elsewhere_nocron LOGIN;
-- the one step of an administrator, in pg_cron's database
GRANT USAGE ON SCHEMA cron TO regress_elsewhere_etl;
CREATE DATABASE regress_backfill_nocron;
\c regress_backfill_nocron
SET TimeZone = 'UTC';
CREATE EXTENSION backfill;
SELECT count(*) AS pg_cron_here FROM pg_extension WHERE extname = 'pg_cron';
SELECT oid AS here FROM pg_database WHERE datname = current_database() \gset

\set VERBOSITY default
-- No run 1 here.
SELECT backfill.schedule(1, '0 2 * * *');
\echo :LAST_ERROR_SQLSTATE

-- Argument errors come before pg_cron is asked.
SELECT backfill.schedule(1, '0 2 * * *', chunks_per_tick => 0);
\echo :LAST_ERROR_SQLSTATE
SELECT backfill.schedule(1, '0 2 * * *', quiet_hours => 'nights');
\echo :LAST_ERROR_SQLSTATE
SELECT backfill.schedule(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT backfill.schedule(1, NULL);
\echo :LAST_ERROR_SQLSTATE

-- unschedule needs no pg_cron; there is no run 1 here.
SELECT backfill.unschedule(1);
\echo :LAST_ERROR_SQLSTATE

-- The quiet-hours decision and the daily job's lock work without pg_cron.
SELECT backfill.in_quiet_hours('22:00-06:00', 'UTC', '2026-06-01 23:00+00');
CREATE TABLE nocron_rollup (day date, n int);
BEGIN;
SELECT backfill.lock_target('nocron_rollup');
SELECT mode FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
COMMIT;

-- A run and a standing check scheduled here: their jobs are rows of
-- pg_cron's database, named with this database's OID, for this database
-- and the scheduling role.
CREATE TABLE nocron_src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO nocron_src
SELECT t, 1 FROM generate_series('2026-01-01 00:00+00'::timestamptz,
                                 '2026-01-03 23:00+00', '1 hour') AS t;
CREATE TABLE nocron_daily (day timestamptz NOT NULL, n int NOT NULL);
GRANT SELECT ON nocron_src TO regress_elsewhere_etl, regress_elsewhere_nocron;
GRANT SELECT, INSERT, DELETE ON nocron_daily TO regress_elsewhere_etl, regress_elsewhere_nocron;
SET ROLE regress_elsewhere_etl;
SELECT backfill.register('nocron_daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(v)::int AS n
        FROM public.nocron_src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$) AS version;
SELECT backfill.plan('nocron_daily', '2026-01-01', '2026-01-04', probe => false) AS run_id \gset
SELECT backfill.schedule(:run_id, '0 0 30 2 *', chunks_per_tick => 2) AS job_id \gset
SELECT backfill.schedule_check('nocron_daily', '0 0 30 2 *', '3 days') AS check_job \gset
SELECT kind, id, job_id = :job_id AS run_job, username
  FROM backfill.scheduled_jobs ORDER BY kind DESC;
SELECT run_id, state, next_step FROM backfill.progress_brief;
-- Scheduling again replaces the job: same role, same job.
SELECT backfill.schedule(:run_id, '0 0 30 2 *', chunks_per_tick => 3) = :job_id AS same_job;
RESET ROLE;

\c :regress_db
SELECT jobname = 'backfill_run_' || :run_id || '@' || :here AS run_job_name,
       database, username, command, schedule
  FROM cron.job WHERE jobid = :job_id;
SELECT jobname = 'backfill_check_1@' || :here AS check_job_name, database, username, command
  FROM cron.job WHERE jobid = :check_job;
-- A tick that failed, as pg_cron logs it (no tick runs in this test).
INSERT INTO cron.job_run_details (jobid, runid, database, username, command, status, return_message)
VALUES (:job_id, nextval('cron.runid_seq'), 'regress_backfill_nocron', 'regress_elsewhere_etl',
        'CALL backfill.run(1, max_chunks => 3)', 'failed', 'connection failed');

-- backfill reads it in pg_cron's database: the run is stalled.
\c regress_backfill_nocron
SET ROLE regress_elsewhere_etl;
SELECT run_id, state, next_step FROM backfill.progress_brief;
SELECT kind, ticks_failed, tick_failure FROM backfill.progress;
RESET ROLE;

-- A role without USAGE on schema cron in pg_cron's database is told
-- where to get it, and nothing is scheduled.
SET ROLE regress_elsewhere_nocron;
SELECT backfill.register('nocron_daily', 'day',
    (SELECT source FROM backfill.definitions
      WHERE target = 'nocron_daily'::regclass ORDER BY version DESC LIMIT 1)) IS NOT NULL AS registered;
SELECT backfill.plan('nocron_daily', '2026-01-10', '2026-01-11', probe => false) AS run2 \gset
SELECT backfill.schedule(:run2, '0 0 30 2 *');
\echo :LAST_ERROR_SQLSTATE
SELECT job_id FROM backfill.runs WHERE run_id = :run2;
SELECT backfill.cancel(:run2) AS cancelled_chunks;
RESET ROLE;

-- In pg_cron's database a job is made and removed at once, not at commit.
-- A schedule that rolls back leaves a job there that no run records: its
-- own first tick (a tick as pg_cron's libpq mode names itself) parks it,
-- and the next tick's sweep removes it.  An unschedule that rolls back
-- leaves a run naming a job that is gone: the sweep forgets it, noting it.
SET ROLE regress_elsewhere_etl;
SELECT backfill.register('nocron_daily', 'day',
    (SELECT source FROM backfill.definitions
      WHERE target = 'nocron_daily'::regclass ORDER BY version DESC LIMIT 1)) AS version;
SELECT backfill.plan('nocron_daily', '2026-01-05', '2026-01-06', probe => false) AS run3 \gset
SELECT backfill.plan('nocron_daily', '2026-01-06', '2026-01-07', probe => false) AS run4 \gset
BEGIN;
SELECT backfill.schedule(:run3, '0 0 30 2 *') > 0 AS scheduled;
ROLLBACK;
SELECT backfill.schedule(:run4, '0 0 30 2 *') AS job4 \gset
BEGIN;
SELECT backfill.unschedule(:run4) AS unscheduled;
ROLLBACK;
SELECT run_id, job_id = :job4 AS records_job4 FROM backfill.runs WHERE run_id IN (:run3, :run4)
 ORDER BY run_id;
RESET ROLE;
\c :regress_db
SELECT replace(jobname, :'here', 'OID') AS jobname, schedule FROM cron.job
 WHERE database = 'regress_backfill_nocron' ORDER BY jobid;
\c regress_backfill_nocron
SET ROLE regress_elsewhere_etl;
SET application_name = 'pg_cron';
CALL backfill.run(:run3, max_chunks => 1);
RESET ROLE;
\c :regress_db
SELECT replace(jobname, :'here', 'OID') AS jobname, schedule FROM cron.job
 WHERE database = 'regress_backfill_nocron' ORDER BY jobid;
\c regress_backfill_nocron
SET ROLE regress_elsewhere_etl;
SET application_name = 'pg_cron';
CALL backfill.run(:run3, max_chunks => 1);
RESET application_name;
SELECT run_id, job_id, last_error = format('its pg_cron job %s no longer exists in database "contrib_regression"', :job4) AS noted
  FROM backfill.runs WHERE run_id IN (:run3, :run4) ORDER BY run_id;
SELECT backfill.cancel(:run3) + backfill.cancel(:run4) AS cancelled_chunks;
RESET ROLE;
\c :regress_db
SELECT replace(jobname, :'here', 'OID') AS jobname FROM cron.job
 WHERE database = 'regress_backfill_nocron' ORDER BY jobid;
\c regress_backfill_nocron

-- The scheduling role cannot be dropped while it has a job here: the
-- guard is its grant on backfill.scheduled_jobs, in this database.
REVOKE ALL ON nocron_src, nocron_daily FROM regress_elsewhere_etl;
DROP ROLE regress_elsewhere_etl;
\echo :LAST_ERROR_SQLSTATE
-- DROP OWNED by a superuser takes the guard away: the role's jobs go with
-- it, removed in pg_cron's database, and the run and the check say why.
DROP OWNED BY regress_elsewhere_etl;
SELECT job_id, last_error = format('DROP OWNED revoked the grant of role "regress_elsewhere_etl" on backfill.scheduled_jobs: its pg_cron job %s (backfill_run_%s@%s) was removed',
                                   :job_id, :run_id, :here) AS noted
  FROM backfill.runs WHERE run_id = :run_id;
SELECT job_id, last_error LIKE 'DROP OWNED revoked the grant %' AS noted
  FROM backfill.checks;
SELECT count(*) AS jobs FROM backfill.scheduled_jobs;
\c :regress_db
SELECT count(*) AS jobs_left FROM cron.job WHERE database = 'regress_backfill_nocron';
DELETE FROM cron.job_run_details WHERE database = 'regress_backfill_nocron';
DROP DATABASE regress_backfill_nocron;
REVOKE USAGE ON SCHEMA cron FROM regress_elsewhere_etl;
DROP ROLE regress_elsewhere_etl, regress_elsewhere_nocron;
