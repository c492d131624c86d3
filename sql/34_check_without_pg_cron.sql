-- A standing check in a database without the extension pg_cron: pg_cron
-- is preloaded in the cluster and serves another database, where the
-- check's job would be made (sql/41_schedule_nocron.sql); a check of a
-- table that is not registered is refused before that, with 42704, and
-- nothing is recorded.
SELECT current_database() AS regression_db \gset
CREATE DATABASE rec_nocron;
\c rec_nocron
CREATE EXTENSION backfill;
SELECT count(*) AS pg_cron_installed FROM pg_extension WHERE extname = 'pg_cron';
CREATE TABLE payments (ts timestamptz NOT NULL, amount numeric NOT NULL);
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END
$$;
-- the error a user sees, with its hint
SELECT backfill.schedule_check('payments', '0 6 * * *', '7 days');
SELECT pg_temp.sqlstate_of($$SELECT backfill.schedule_check('payments', '0 6 * * *')$$);
-- nothing was recorded
SELECT count(*) AS checks FROM backfill.checks;
-- unscheduling an unknown check is 42704 in any database
SELECT pg_temp.sqlstate_of($$SELECT backfill.unschedule_check(1)$$);
\c :regression_db
DROP DATABASE rec_nocron;
