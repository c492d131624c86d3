-- The extension installs cleanly without pg_cron (it is an optional
-- dependency), into its own schema, with its catalog tables.
CREATE EXTENSION backfill;
SELECT extversion, extrelocatable, extnamespace::regnamespace
  FROM pg_extension WHERE extname = 'backfill';
SELECT c.relname, c.relrowsecurity
  FROM pg_class c
 WHERE c.relnamespace = 'backfill'::regnamespace AND c.relkind = 'r'
 ORDER BY 1;
-- pg_cron is available in this test cluster for the scheduling tests.
CREATE EXTENSION pg_cron;
-- The summary NOTICE of a run names the time it took; the tests that
-- follow (each its own session) leave it out, so that their output is the
-- same from one execution to the next (backfill.notice_timing, as
-- EXPLAIN's TIMING OFF).
DO $$
BEGIN
  EXECUTE pg_catalog.format('ALTER DATABASE %I SET backfill.notice_timing = off',
                            pg_catalog.current_database());
END
$$;
