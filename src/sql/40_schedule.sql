
-------------------------------------------------------------------------
-- Scheduling with pg_cron and yielding to the daily job
-- (api/scheduling.c; orchestration/schedule.c, base/cron.c)
-------------------------------------------------------------------------

CREATE FUNCTION backfill.schedule(run_id pg_catalog.int8,
                                  cron pg_catalog.text DEFAULT '*/5 * * * *',
                                  chunks_per_tick pg_catalog.int4 DEFAULT 1,
                                  quiet_hours pg_catalog.text DEFAULT NULL)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'backfill_schedule'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.schedule(pg_catalog.int8, pg_catalog.text, pg_catalog.int4, pg_catalog.text) IS
    'Hand the rest of a run to pg_cron; returns the job id.';

CREATE FUNCTION backfill.unschedule(run_id pg_catalog.int8)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_unschedule'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.unschedule(pg_catalog.int8) IS
    'Remove a run''s pg_cron job; true if there was one.';

CREATE FUNCTION backfill.cleanup_jobs()
RETURNS TABLE (job_id pg_catalog.int8, job_name pg_catalog.text,
               username pg_catalog.text)
AS 'MODULE_PATHNAME', 'backfill_cleanup_jobs'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.cleanup_jobs() IS
    'Superusers: remove the pg_cron jobs of runs and checks whose scheduling role was dropped.';

CREATE FUNCTION backfill.lock_target(target pg_catalog.regclass)
RETURNS pg_catalog.void
AS 'MODULE_PATHNAME', 'backfill_lock_target'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.lock_target(pg_catalog.regclass) IS
    'Called by the daily job at the start of its transaction: backfill chunks wait for it.';

CREATE FUNCTION backfill.in_quiet_hours(quiet_hours pg_catalog.text,
                                        timezone pg_catalog.text,
                                        at pg_catalog.timestamptz DEFAULT pg_catalog.now())
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_in_quiet_hours'
LANGUAGE C STABLE;
COMMENT ON FUNCTION backfill.in_quiet_hours(pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz) IS
    'Whether a time lies inside a local quiet-hours span such as ''22:00-06:00''.';

-------------------------------------------------------------------------
-- The scheduling-role guard (base/jobguard.c; the event trigger's entry
-- point in api/scheduling.c): pg_cron records a job's role by name only,
-- and a job whose role is gone stops the pg_cron scheduler for everyone.
-- A role that owns a backfill job holds an explicit SELECT grant on
-- backfill.scheduled_jobs (made by schedule and schedule_check, revoked
-- when its last job goes), so DROP ROLE refuses it:
--   DETAIL:  privileges for view backfill.scheduled_jobs
-- and the event trigger below removes the jobs of a role whose grant went
-- with DROP OWNED or REVOKE.  runs.scheduled_by (00_catalog.sql) records
-- the role of a run's job.
-------------------------------------------------------------------------

-- Every pg_cron job of backfill, with the role it runs as.  finished: a
-- run that no longer needs its job (done, failed or cancelled); the tick
-- that finished it parked the job (it never fires), and the next backfill
-- tick, schedule, unschedule or cleanup_jobs removes it.
CREATE VIEW backfill.scheduled_jobs WITH (security_invoker = true) AS
SELECT 'run'::pg_catalog.text AS kind,
       r.run_id AS id,
       r.target,
       r.job_id,
       r.scheduled_by AS username,
       r.status OPERATOR(pg_catalog.=) ANY ('{done,failed,cancelled}'::pg_catalog.text[]) AS finished
  FROM backfill.runs r
 WHERE r.job_id IS NOT NULL
UNION ALL
SELECT 'check'::pg_catalog.text,
       c.check_id,
       c.target,
       c.job_id,
       c.created_by,
       false
  FROM backfill.checks c
 WHERE c.job_id IS NOT NULL;
COMMENT ON VIEW backfill.scheduled_jobs IS
    'The pg_cron jobs of backfill''s runs and standing checks and the roles they run as; a role with one holds a grant on this view, so DROP ROLE refuses it until its jobs are gone.';

-- Fired by DROP OWNED and REVOKE: the named roles that have backfill jobs
-- but no longer hold their grant on backfill.scheduled_jobs lose the jobs
-- (removed as the extension owner, runs.last_error and checks.last_error
-- say why).  Runs as the user who ran the command.
CREATE FUNCTION backfill._job_guard()
RETURNS pg_catalog.event_trigger
AS 'MODULE_PATHNAME', 'backfill_job_guard'
LANGUAGE C;
COMMENT ON FUNCTION backfill._job_guard() IS
    'Event trigger: remove the pg_cron jobs of roles whose grant on backfill.scheduled_jobs went with DROP OWNED or REVOKE.';

CREATE EVENT TRIGGER backfill_job_guard ON ddl_command_end
    WHEN TAG IN ('DROP OWNED', 'REVOKE')
    EXECUTE FUNCTION backfill._job_guard();
