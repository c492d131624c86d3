-- doc/scheduling.md: the quick start's tables and registration, run ids
-- from 17 (as in the page's story), and a role that may only read
-- daily_revenue.
\i t/doc/pagedeck.sql
\i t/doc/pagedeck_register.sql
SELECT setval('backfill.runs_run_id_seq', 17, false);
CREATE ROLE analyst;
GRANT SELECT ON daily_revenue TO analyst;
