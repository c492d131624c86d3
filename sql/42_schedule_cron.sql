-- backfill.schedule / backfill.unschedule with pg_cron installed (it serves
-- this database in the test cluster).  Jobs are created by, owned by and
-- run as the calling role; the command holds no user text.  The roles have
-- no LOGIN, so a job that came due during the test could not run.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY default
-- Fixed ids, so that messages naming runs and jobs are stable.
SELECT setval('backfill.runs_run_id_seq', 4200, false) IS NOT NULL AS ids_fixed;
SELECT setval('cron.jobid_seq', 4200, false) IS NOT NULL AS job_ids_fixed;

CREATE ROLE regress_sched_etl;
CREATE ROLE regress_sched_deputy IN ROLE regress_sched_etl;	-- has etl's privileges
CREATE ROLE regress_sched_other;	-- may write the table, did not plan the run
CREATE ROLE regress_sched_nocron;	-- may write the table, no USAGE on cron
GRANT USAGE ON SCHEMA cron TO regress_sched_etl, regress_sched_deputy, regress_sched_other;

CREATE TABLE sched_src (ts timestamptz NOT NULL, amount int NOT NULL);
INSERT INTO sched_src
SELECT t, 10 FROM generate_series('2026-01-01 00:00+00'::timestamptz,
                                  '2026-01-08 23:00+00', '1 hour') AS t;
CREATE TABLE sched_daily (day timestamptz NOT NULL, total int NOT NULL);
GRANT SELECT ON sched_src TO regress_sched_etl, regress_sched_deputy,
    regress_sched_other, regress_sched_nocron;
GRANT SELECT, INSERT, DELETE ON sched_daily TO regress_sched_etl,
    regress_sched_deputy, regress_sched_other, regress_sched_nocron;

SET ROLE regress_sched_etl;
SELECT backfill.register('sched_daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM sched_src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$) AS version;
SELECT backfill.plan('sched_daily', '2026-01-01', '2026-01-07',
                     note => 'rebuild first week') AS run_id \gset
SELECT :run_id AS run_id;

-- A probed run cannot be scheduled before its probe chunk has run.
SELECT backfill.schedule(:run_id, '*/5 * * * *');
\echo :LAST_ERROR_SQLSTATE

-- Run the probe chunk; the run is then probed and may be scheduled.
SET client_min_messages = warning;
CALL backfill.run(:run_id);
RESET client_min_messages;
SELECT status FROM backfill.runs WHERE run_id = :run_id;

-- Another role with every privilege on the table, but not the run's
-- planner: refused.
SET ROLE regress_sched_other;
SELECT backfill.schedule(:run_id, '*/5 * * * *');
\echo :LAST_ERROR_SQLSTATE
SELECT backfill.unschedule(:run_id);
\echo :LAST_ERROR_SQLSTATE

-- Argument checks.
SET ROLE regress_sched_etl;
SELECT backfill.schedule(:run_id, '*/5 * * * *', chunks_per_tick => 0);
\echo :LAST_ERROR_SQLSTATE
SELECT backfill.schedule(:run_id, '*/5 * * * *', quiet_hours => '22:00-22:00');
\echo :LAST_ERROR_SQLSTATE
-- pg_cron checks the cron text itself.  Its hint differs between pg_cron
-- 1.4 and 1.6 (which adds interval schedules), so only the error is shown.
\set VERBOSITY terse
SELECT backfill.schedule(:run_id, 'every night');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT backfill.schedule(4299, '*/5 * * * *');
\echo :LAST_ERROR_SQLSTATE

-- The planner schedules it: the job is the planner's, named after the run,
-- and its command is exactly the run call.
SELECT backfill.schedule(:run_id, '0 2 * * *', chunks_per_tick => 2,
                         quiet_hours => '22:00-06:00') AS job_id \gset
SELECT :job_id AS job_id;
SELECT jobid = :job_id AS same_id, jobname, schedule, command, username,
       database = current_database() AS this_database, active
  FROM cron.job WHERE jobname = 'backfill_run_' || :run_id;
SELECT job_id = :job_id AS recorded, chunks_per_tick, quiet_hours
  FROM backfill.runs WHERE run_id = :run_id;

-- Scheduling again replaces the job: same id, new schedule and command.
SELECT backfill.schedule(:run_id, '30 1 * * *', chunks_per_tick => 3) = :job_id AS same_job;
SELECT schedule, command FROM cron.job WHERE jobname = 'backfill_run_' || :run_id;
SELECT job_id = :job_id AS recorded, chunks_per_tick, quiet_hours
  FROM backfill.runs WHERE run_id = :run_id;

-- A refused call leaves the job as it was.
\set VERBOSITY terse
SELECT backfill.schedule(:run_id, '61 * * * *');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT schedule FROM cron.job WHERE jobname = 'backfill_run_' || :run_id;

-- A role with the planner's privileges may take the schedule over: the
-- planner's job is removed and the new one is the deputy's (never two jobs
-- for one run).
SET ROLE regress_sched_deputy;
SELECT backfill.schedule(:run_id, '10 2 * * *') AS deputy_job_id \gset
RESET ROLE;
SELECT jobid = :deputy_job_id AS deputy_job, jobname, username, command
  FROM cron.job WHERE jobname = 'backfill_run_' || :run_id;
SELECT job_id = :deputy_job_id AS recorded FROM backfill.runs WHERE run_id = :run_id;

-- The planner does not have the deputy's privileges, so it may not remove
-- the deputy's job; the deputy may.
SET ROLE regress_sched_etl;
SELECT backfill.unschedule(:run_id);
\echo :LAST_ERROR_SQLSTATE
SET ROLE regress_sched_deputy;
SELECT backfill.unschedule(:run_id) AS removed;
SELECT backfill.unschedule(:run_id) AS removed_again;
RESET ROLE;
SELECT count(*) AS jobs_left FROM cron.job WHERE jobname = 'backfill_run_' || :run_id;
SELECT job_id FROM backfill.runs WHERE run_id = :run_id;

-- A job removed behind backfill's back: unschedule says false and forgets it.
SET ROLE regress_sched_etl;
SELECT backfill.schedule(:run_id, '0 3 * * *') AS job_id \gset
SELECT cron.unschedule(:job_id);
SELECT backfill.unschedule(:run_id) AS removed;
SELECT job_id FROM backfill.runs WHERE run_id = :run_id;

-- Cancelling the run removes its job.
SELECT backfill.schedule(:run_id, '0 3 * * *') AS job_id \gset
SELECT backfill.cancel(:run_id) AS cancelled_chunks;
SELECT status, job_id FROM backfill.runs WHERE run_id = :run_id;
RESET ROLE;
SELECT count(*) AS jobs_left FROM cron.job WHERE jobname = 'backfill_run_' || :run_id;

-- A cancelled run cannot be scheduled.
SET ROLE regress_sched_etl;
SELECT backfill.schedule(:run_id, '0 3 * * *');
\echo :LAST_ERROR_SQLSTATE

-- A run planned without a probe may be scheduled at once; a finished one
-- may not.
SELECT backfill.plan('sched_daily', '2026-01-07', '2026-01-09', probe => false) AS run2 \gset
SELECT backfill.schedule(:run2, '0 4 * * *') > 0 AS scheduled;
SELECT backfill.unschedule(:run2) AS removed;
SET client_min_messages = warning;
CALL backfill.run(:run2);
RESET client_min_messages;
SELECT status FROM backfill.runs WHERE run_id = :run2;
SELECT backfill.schedule(:run2, '0 4 * * *');
\echo :LAST_ERROR_SQLSTATE

-- A role without USAGE on schema cron is told how to get it.
SET ROLE regress_sched_nocron;
-- (its own registration: it plans only text it may run)
SELECT backfill.register('sched_daily', 'day',
    (SELECT source FROM backfill.definitions
      WHERE target = 'sched_daily'::regclass ORDER BY version DESC LIMIT 1)) IS NOT NULL AS registered;
SELECT backfill.plan('sched_daily', '2026-01-01', '2026-01-02', probe => false) AS run3 \gset
SELECT backfill.schedule(:run3, '0 4 * * *');
\echo :LAST_ERROR_SQLSTATE
SELECT backfill.cancel(:run3) AS cancelled_chunks;
RESET ROLE;

-- Nothing is left scheduled.
SELECT count(*) AS backfill_jobs FROM cron.job WHERE jobname LIKE 'backfill_run_%';

SELECT backfill.unregister('sched_daily');
DROP TABLE sched_daily, sched_src;
REVOKE USAGE ON SCHEMA cron FROM regress_sched_etl, regress_sched_deputy, regress_sched_other;
DROP ROLE regress_sched_deputy, regress_sched_etl, regress_sched_other, regress_sched_nocron;
