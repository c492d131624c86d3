-- pg_cron ticks that fail are shown (issue 29, item 1): a scheduled run,
-- standing check or refresh whose latest pg_cron tick failed is "stalled"
-- in backfill.progress_brief, with pg_cron's message and the fix as its
-- next_step, and backfill.progress says how many ticks failed, the message
-- and the fix.  No tick runs in this test (the jobs are due on February
-- 30th): the ticks are written into cron.job_run_details as pg_cron writes
-- them.  Real failing ticks: t/084_cron_libpq.pl.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY default
SELECT setval('backfill.runs_run_id_seq', 4400, false) IS NOT NULL AS ids_fixed;
SELECT setval('backfill.checks_check_id_seq', 4400, false) IS NOT NULL AS check_ids_fixed;
SELECT setval('backfill.refreshes_refresh_id_seq', 4400, false) IS NOT NULL AS refresh_ids_fixed;

CREATE ROLE regress_ticks_etl;
CREATE ROLE regress_ticks_reader;	-- may not read the target
GRANT USAGE ON SCHEMA cron TO regress_ticks_etl;
CREATE TABLE ticks_src (ts timestamptz NOT NULL, amount int NOT NULL);
INSERT INTO ticks_src
SELECT t, 1 FROM generate_series('2026-01-01 00:00+00'::timestamptz,
                                 '2026-01-04 23:00+00', '1 hour') AS t;
CREATE TABLE ticks_daily (day timestamptz NOT NULL, total int NOT NULL);
GRANT SELECT ON ticks_src TO regress_ticks_etl;
GRANT SELECT, INSERT, DELETE ON ticks_daily TO regress_ticks_etl;

SET ROLE regress_ticks_etl;
SELECT backfill.register('ticks_daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM public.ticks_src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$) AS version;
SELECT backfill.plan('ticks_daily', '2026-01-01', '2026-01-04', probe => false) AS run_id \gset
SELECT backfill.schedule(:run_id, '0 0 30 2 *') AS run_job \gset
SELECT backfill.schedule_check('ticks_daily', '0 0 30 2 *', '3 days') AS check_job \gset
SELECT backfill.schedule_refresh('ticks_daily', '0 0 30 2 *', lookback => '3 days') AS refresh_job \gset
SELECT check_id FROM backfill.checks WHERE target = 'ticks_daily'::regclass \gset
SELECT refresh_id FROM backfill.refreshes WHERE target = 'ticks_daily'::regclass \gset

-- No tick yet: scheduled, nothing failing.
SELECT run_id, state, next_step FROM backfill.progress_brief WHERE target = 'ticks_daily'::regclass;
SELECT count(*) AS failing FROM backfill._tick_failures();
RESET ROLE;

-- pg_cron's log, as pg_cron writes it: a tick (newest last) per row.
CREATE FUNCTION pg_temp.tick(job bigint, status text, message text) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO cron.job_run_details (jobid, runid, database, username, command,
                                      status, return_message, start_time, end_time)
    SELECT job, nextval('cron.runid_seq'), current_database(), 'regress_ticks_etl',
           j.command, status, message,
           CASE WHEN message = 'connection failed' THEN NULL
                ELSE '2026-01-10 02:00+00'::timestamptz END,
           CASE WHEN message = 'connection failed' THEN NULL
                ELSE '2026-01-10 02:00:01+00'::timestamptz END
      FROM cron.job j WHERE j.jobid = job
$$;

-- pg_cron's libpq mode without a password: every tick "connection failed".
SELECT pg_temp.tick(:run_job, 'failed', 'connection failed'),
       pg_temp.tick(:run_job, 'failed', 'connection failed'),
       pg_temp.tick(:check_job, 'failed', 'connection failed');
-- The refresh's job: no background worker was free for its last tick,
-- after one that succeeded.
SELECT pg_temp.tick(:refresh_job, 'succeeded', 'CALL'),
       pg_temp.tick(:refresh_job, 'failed',
                    'could not start background process; more details may be available in the server log');

SET ROLE regress_ticks_etl;
SELECT run_id, target, state, next_step
  FROM backfill.progress_brief WHERE target = 'ticks_daily'::regclass
 ORDER BY run_id NULLS LAST, next_step;
SELECT run_id, kind, id = coalesce(run_id, :check_id, :refresh_id) AS id_ok,
       status, job_id IS NOT NULL AS has_job, ticks_failed, tick_failure,
       tick_failed_at, tick_next_step
  FROM backfill.progress WHERE target = 'ticks_daily'::regclass
 ORDER BY kind DESC, id;
SELECT kind, ticks_failed, failed_at, message
  FROM backfill._tick_failures() ORDER BY kind, id;

-- A role that may not read the target sees none of it.
SET ROLE regress_ticks_reader;
SELECT count(*) AS seen FROM backfill.progress;
SELECT count(*) AS seen FROM backfill._tick_failures();
RESET ROLE;

-- Other failures, other fixes: the role cannot log in; an error of the
-- command itself (the job's own command, run by hand, shows it whole).
SELECT pg_temp.tick(:run_job, 'failed', 'role "regress_ticks_etl" is not permitted to log in'),
       pg_temp.tick(:check_job, 'failed', E'ERROR:  permission denied for table ticks_src\n');
SET ROLE regress_ticks_etl;
SELECT kind, ticks_failed, message, next_step
  FROM backfill._tick_failures() ORDER BY kind, id;

-- A tick that succeeds after failing ones ends it.
RESET ROLE;
SELECT pg_temp.tick(:run_job, 'succeeded', 'CALL'),
       pg_temp.tick(:check_job, 'succeeded', 'SELECT 1'),
       pg_temp.tick(:refresh_job, 'succeeded', 'CALL');
SET ROLE regress_ticks_etl;
SELECT run_id, state, next_step FROM backfill.progress_brief WHERE target = 'ticks_daily'::regclass;
SELECT count(*) AS failing FROM backfill._tick_failures();

-- A failing tick of a job that is not the run's (a job made by hand that
-- calls the run) is not the run's.
RESET ROLE;
SELECT cron.schedule('regress_ticks_by_hand', '0 0 30 2 *',
                     'CALL backfill.run(' || :run_id || ')') AS hand_job \gset
SELECT pg_temp.tick(:hand_job, 'failed', 'connection failed');
SELECT count(*) AS failing FROM backfill._tick_failures();
SELECT cron.unschedule(:hand_job);

SET ROLE regress_ticks_etl;
SELECT backfill.unschedule(:run_id) AS unscheduled;
SELECT backfill.unschedule_check(:check_id) AS unscheduled;
SELECT backfill.unschedule_refresh('ticks_daily') AS unscheduled;
SELECT backfill.cancel(:run_id) AS cancelled_chunks;
RESET ROLE;
DELETE FROM cron.job_run_details WHERE username = 'regress_ticks_etl';
SELECT count(*) AS backfill_jobs FROM cron.job WHERE jobname LIKE 'backfill_%';
SELECT backfill.unregister('ticks_daily');
DROP TABLE ticks_daily, ticks_src;
REVOKE USAGE ON SCHEMA cron FROM regress_ticks_etl;
DROP ROLE regress_ticks_etl, regress_ticks_reader;
