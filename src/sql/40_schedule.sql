
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
