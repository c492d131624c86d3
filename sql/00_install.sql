-- The extension installs cleanly, without pg_cron as a dependency, and
-- shows the objects it owns.
CREATE EXTENSION backfill;
SELECT extversion FROM pg_extension WHERE extname = 'backfill';
SELECT pg_catalog.pg_describe_object(classid, objid, objsubid) AS object
  FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass
   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'backfill')
   AND deptype = 'e'
 ORDER BY 1;
-- pg_cron is available in this test cluster for the scheduling tests.
CREATE EXTENSION pg_cron;
