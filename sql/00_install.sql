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
