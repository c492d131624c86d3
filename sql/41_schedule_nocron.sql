-- backfill never requires pg_cron: in a database without it, the extension
-- installs and everything but scheduling works; scheduling says how to
-- enable pg_cron.
SELECT current_database() AS regress_db \gset
CREATE DATABASE regress_backfill_nocron;
\c regress_backfill_nocron
CREATE EXTENSION backfill;
SELECT count(*) AS pg_cron_here FROM pg_extension WHERE extname = 'pg_cron';

\set VERBOSITY default
SELECT backfill.schedule(1, '0 2 * * *');
\echo :LAST_ERROR_SQLSTATE

-- Argument errors come before the pg_cron check.
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

\c :regress_db
DROP DATABASE regress_backfill_nocron;
