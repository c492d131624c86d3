-- backfill.check(target, range_start, range_end) on ranges no backfill
-- touched, lineage status, tolerance edges, errors; the standing rule:
-- schedule_check (pg_cron is installed in this database), run_check,
-- check_results, alerts, unschedule_check.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
SET client_min_messages = warning;
CREATE SCHEMA chk;
CREATE FUNCTION pg_temp.try(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- Daily revenue totals against a ledger of 1000.00 a day (tolerance 1 %).
-- Nothing has ever been backfilled here.  The table holds, from Mar 1:
-- 1000, 1010.00 (exactly 1 % over), 1010.01 (just beyond), 990.00
-- (exactly 1 % under), 989.99 (just beyond), 1000, and nothing on Mar 7.
CREATE TABLE chk.revenue (day date NOT NULL, total numeric NOT NULL);
INSERT INTO chk.revenue VALUES
    ('2024-03-01', 1000), ('2024-03-02', 1010.00), ('2024-03-03', 1010.01),
    ('2024-03-04', 990.00), ('2024-03-05', 989.99), ('2024-03-06', 1000);
CREATE TABLE chk.ledger (day date NOT NULL, total numeric NOT NULL);
INSERT INTO chk.ledger
SELECT d::date, 1000.00 FROM generate_series('2024-02-20'::date, '2024-03-20', '1 day') d;
SELECT backfill.register('chk.revenue', 'day',
         'SELECT day, total FROM chk.ledger WHERE day >= $1 AND day < $2',
         ledger => 'SELECT sum(total) FROM chk.ledger WHERE day >= $1 AND day < $2',
         measure => 'sum(total)', tolerance => 0.01);

-- A date time column; no backfill ever touched the range (status NULL);
-- Mar 7 has no rows: its sum() is NULL, compared as 0 with the ledger.
-- The neighbours Feb 27..29 have no rows, Mar 8..10 neither: no median.
SELECT chunk_no, chunk_start, chunk_end, status, target_value, ledger_value,
       ledger_ok, neighbor_median, neighbor_ok, verdict
  FROM backfill.check('chk.revenue', '2024-03-01', '2024-03-08');
-- check() stores nothing
SELECT count(*) AS runs FROM backfill.runs WHERE target = 'chk.revenue'::regclass;
SELECT count(*) AS results FROM backfill.check_results
 WHERE target = 'chk.revenue'::regclass;

-- Neighbours of a sub-range come from the table: around Mar 3..4 they are
-- Feb 29 .. Mar 2 and Mar 5 .. 7 (four with rows: median of 989.99, 1000,
-- 1000, 1010.00).
SELECT chunk_no, chunk_start, target_value, neighbor_median, neighbor_ok, verdict
  FROM backfill.check('chk.revenue', '2024-03-03', '2024-03-05');
-- a planted spike on Mar 6 is an outlier for the neighbours but not for
-- the ledger when the ledger agrees
UPDATE chk.revenue SET total = 5000 WHERE day = '2024-03-06';
UPDATE chk.ledger SET total = 5000 WHERE day = '2024-03-06';
SELECT chunk_start, target_value, ledger_value, ledger_ok, neighbor_median,
       neighbor_ok, verdict
  FROM backfill.check('chk.revenue', '2024-03-06', '2024-03-07');
UPDATE chk.revenue SET total = 1000 WHERE day = '2024-03-06';
UPDATE chk.ledger SET total = 1000 WHERE day = '2024-03-06';

-- After a backfill of Mar 2..4, status shows the lineage of those days;
-- the repaired days now agree with the ledger.
CALL backfill.backfill('chk.revenue', '2024-03-02', '2024-03-05');
SELECT chunk_no, chunk_start, status, target_value, ledger_ok, verdict
  FROM backfill.check('chk.revenue', '2024-03-01', '2024-03-06');
-- chunks larger than the range are clipped, as split_range does
SELECT chunk_no, chunk_start, chunk_end
  FROM backfill.check('chk.revenue', '2024-03-01 12:00', '2024-03-03');

-- A hostile search_path changes nothing: look-alike functions that would
-- win over pg_catalog's for unqualified calls are never used.
CREATE SCHEMA evil;
CREATE FUNCTION evil.width_bucket(timestamptz, timestamptz[]) RETURNS int
    LANGUAGE sql AS 'SELECT 1';
CREATE FUNCTION evil.unnest(timestamptz[]) RETURNS SETOF timestamptz
    LANGUAGE sql AS 'SELECT NULL::timestamptz WHERE false';
CREATE FUNCTION evil.ge(timestamptz, timestamptz) RETURNS boolean
    LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR evil.>= (LEFTARG = timestamptz, RIGHTARG = timestamptz,
                         FUNCTION = evil.ge);
CREATE TEMP TABLE plain_result AS
SELECT * FROM backfill.check('chk.revenue', '2024-03-01', '2024-03-08');
SET search_path = evil, pg_catalog, public;
SELECT count(*) AS differences
  FROM (SELECT * FROM backfill.check('chk.revenue', '2024-03-01', '2024-03-08')
        EXCEPT
        SELECT * FROM plain_result) d;
RESET search_path;
DROP SCHEMA evil CASCADE;

-- no_source from the horizon: with source_retention, every day before
-- now() - retention is left out of the comparison.
SELECT backfill.register('chk.revenue', 'day',
         'SELECT day, total FROM chk.ledger WHERE day >= $1 AND day < $2',
         ledger => 'SELECT sum(total) FROM chk.ledger WHERE day >= $1 AND day < $2',
         measure => 'sum(total)', tolerance => 0.01,
         source_retention => '30 days');
SELECT DISTINCT status, target_value, ledger_value, ledger_ok, neighbor_median,
       neighbor_ok, verdict
  FROM backfill.check('chk.revenue', '2024-03-01', '2024-03-08');

-- Errors.
CREATE TABLE chk.unregistered (day date);
SELECT pg_temp.try($$SELECT * FROM backfill.check('chk.unregistered', '2024-03-01', '2024-03-02')$$);
SELECT pg_temp.try($$SELECT * FROM backfill.check(NULL, '2024-03-01', '2024-03-02')$$);
SELECT pg_temp.try($$SELECT * FROM backfill.check('chk.revenue', NULL, '2024-03-02')$$);
SELECT pg_temp.try($$SELECT * FROM backfill.check('chk.revenue', '2024-03-02', '2024-03-02')$$);
SELECT pg_temp.try($$SELECT * FROM backfill.check('chk.revenue', '2024-03-02', 'infinity')$$);
CREATE ROLE regress_chk_outsider;
GRANT USAGE ON SCHEMA chk TO regress_chk_outsider;
SET ROLE regress_chk_outsider;
SELECT pg_temp.try($$SELECT * FROM backfill.check('chk.revenue', '2024-03-01', '2024-03-02')$$);
RESET ROLE;

-- The standing rule.  Payments of the ten days before today (relative to
-- now(), so the output shows days_ago), 24 a day; the target lost one
-- payment three days ago.
CREATE TABLE chk.payments (ts timestamptz NOT NULL, amount numeric NOT NULL);
CREATE TABLE chk.psp (ts timestamptz NOT NULL, amount numeric NOT NULL);
INSERT INTO chk.psp
SELECT date_trunc('day', now()) - d * interval '1 day' + h * interval '1 hour', 10 + h
  FROM generate_series(1, 10) d, generate_series(0, 23) h;
INSERT INTO chk.payments SELECT * FROM chk.psp;
DELETE FROM chk.payments
 WHERE ts = date_trunc('day', now()) - interval '3 days' + interval '13 hours';
SELECT backfill.register('chk.payments', 'ts',
         'SELECT ts, amount FROM chk.psp WHERE ts >= $1 AND ts < $2',
         ledger => 'SELECT sum(amount) FROM chk.psp WHERE ts >= $1 AND ts < $2',
         measure => 'sum(amount)');

-- schedule_check creates a pg_cron job owned by the caller, named after
-- the check, whose command holds only the check id; it returns the check
-- id (what unschedule_check and run_check take; the job id is
-- checks.job_id).  (Feb 30 never comes: the job will not fire during the
-- test.)
SELECT backfill.schedule_check('chk.payments', '0 0 30 2 *', '7 days') AS check_id \gset
SELECT job_id FROM backfill.checks WHERE check_id = :check_id \gset
SELECT c.target, c.cron, c.lookback, c.job_id = :job_id AS job_recorded,
       c.created_by = current_user AS by_me,
       j.jobname = 'backfill_check_' || c.check_id AS job_name_ok,
       j.command = 'SELECT backfill.run_check(' || c.check_id || ')' AS command_ok,
       j.username = current_user AS job_owner_ok, j.schedule
  FROM backfill.checks c JOIN cron.job j ON j.jobid = c.job_id
 WHERE c.job_id = :job_id;

-- run_check does what the job does: it checks the 7 whole days before
-- today and appends one result per day; it returns the failing chunks.
SELECT backfill.run_check(:check_id) AS failing;
SELECT date_trunc('day', now()) - chunk_start AS days_ago,
       chunk_end - chunk_start AS length, target_value, ledger_value,
       ledger_ok, neighbor_ok, verdict, checked_by = current_user AS by_me
  FROM backfill.check_results WHERE check_id = :check_id
 ORDER BY chunk_start;
SELECT date_trunc('day', now()) - chunk_start AS days_ago, verdict,
       target_value, ledger_value, failing_since = checked_at AS first_failure
  FROM backfill.alerts WHERE target = 'chk.payments'::regclass;

-- alerts is a security_invoker view: other users see only their targets
SELECT reloptions FROM pg_class WHERE oid = 'backfill.alerts'::regclass;
CREATE ROLE regress_chk_viewer;
GRANT USAGE ON SCHEMA chk TO regress_chk_viewer;
SET ROLE regress_chk_viewer;
SELECT count(*) AS visible_alerts FROM backfill.alerts
 WHERE target = 'chk.payments'::regclass;
RESET ROLE;
GRANT SELECT ON chk.payments TO regress_chk_viewer;
SET ROLE regress_chk_viewer;
SELECT count(*) AS visible_alerts FROM backfill.alerts
 WHERE target = 'chk.payments'::regclass;
RESET ROLE;

-- failing again: the alert shows once, failing since the first result
SELECT backfill.run_check(:check_id) AS failing;
SELECT count(*) AS results, count(DISTINCT checked_at) AS runs
  FROM backfill.check_results WHERE check_id = :check_id;
SELECT count(*) AS alerts,
       bool_and(failing_since < checked_at) AS failing_since_first
  FROM backfill.alerts WHERE target = 'chk.payments'::regclass;

-- the fix: a backfill of that day; a passing result supersedes the alert,
-- and the history of results stays
CALL backfill.backfill('chk.payments', date_trunc('day', now()) - interval '3 days',
                       date_trunc('day', now()) - interval '2 days');
SELECT backfill.run_check(:check_id) AS failing;
SELECT count(*) AS alerts FROM backfill.alerts
 WHERE target = 'chk.payments'::regclass;
SELECT verdict, count(*) FROM backfill.check_results
 WHERE check_id = :check_id GROUP BY verdict ORDER BY verdict;

-- Other users: alerts and results show only targets they may read, and a
-- check on a table they may not read does not exist for them (42704, the
-- same as an unknown id: neither its creator nor its table is named).
CREATE ROLE regress_chk_other;
GRANT USAGE ON SCHEMA chk TO regress_chk_other;
SET ROLE regress_chk_other;
SELECT count(*) AS visible_results FROM backfill.check_results
 WHERE target = 'chk.payments'::regclass;
SELECT regexp_replace(pg_temp.try('SELECT backfill.unschedule_check(' || :check_id || ')'),
                      'check \d+', 'check N') AS result;
SELECT pg_temp.try('SELECT backfill.run_check(' || :check_id || ')');
SELECT pg_temp.try($$SELECT backfill.schedule_check('chk.payments', '0 0 30 2 *')$$);
SELECT pg_temp.try('DELETE FROM backfill.check_results');
RESET ROLE;

-- Bad arguments of schedule_check; nothing is recorded for them.
SELECT pg_temp.try($$SELECT backfill.schedule_check('chk.payments', 'every day', '7 days')$$);
SELECT pg_temp.try($$SELECT backfill.schedule_check('chk.payments', '0 6 * * *', '-1 day')$$);
SELECT pg_temp.try($$SELECT backfill.schedule_check('chk.payments', NULL, '7 days')$$);
SELECT pg_temp.try($$SELECT backfill.schedule_check('chk.unregistered', '0 6 * * *')$$);
SELECT count(*) AS checks FROM backfill.checks
 WHERE target IN ('chk.payments'::regclass, 'chk.unregistered'::regclass);

-- unschedule_check removes the job once; the check and its results stay.
SELECT backfill.unschedule_check(:check_id);
SELECT backfill.unschedule_check(:check_id);
SELECT count(*) AS jobs FROM cron.job WHERE jobid = :job_id;
SELECT job_id FROM backfill.checks WHERE check_id = :check_id;
SELECT count(*) > 0 AS results_kept FROM backfill.check_results WHERE check_id = :check_id;
SELECT pg_temp.try('SELECT backfill.unschedule_check(-1)');
SELECT pg_temp.try('SELECT backfill.run_check(-1)');

-- run_check's range: the whole chunks of the lookback that end at the
-- start of the current chunk unit (hour, day, month) in the session
-- TimeZone; at least one chunk.
CREATE TABLE chk.hourly (ts timestamptz NOT NULL);
SELECT backfill.register('chk.hourly', 'ts',
         'SELECT ts FROM chk.hourly WHERE ts >= $1 AND ts < $2', chunk => '1 hour');
CREATE TABLE chk.monthly (ts timestamptz NOT NULL);
SELECT backfill.register('chk.monthly', 'ts',
         'SELECT ts FROM chk.monthly WHERE ts >= $1 AND ts < $2', chunk => '1 month');
CREATE TEMP TABLE windows AS
SELECT t.target, t.lookback,
       backfill.schedule_check(t.target, '0 0 30 2 *', t.lookback) AS check_id
  FROM (VALUES ('chk.hourly'::regclass, interval '3 hours'),
               ('chk.hourly', interval '150 minutes'),
               ('chk.hourly', interval '10 minutes'),
               ('chk.monthly', interval '2 months')) AS t(target, lookback);
SELECT w.target, w.lookback, backfill.run_check(c.check_id) AS failing
  FROM windows w JOIN backfill.checks c USING (check_id) ORDER BY c.check_id;
SELECT w.target, w.lookback,
       CASE WHEN w.target = 'chk.monthly'::regclass
            THEN age(date_trunc('month', now()), r.chunk_start)
            ELSE date_trunc('hour', now()) - r.chunk_start END AS starts_before_now,
       age(r.chunk_end, r.chunk_start) AS length
  FROM windows w JOIN backfill.checks c USING (check_id)
  JOIN backfill.check_results r USING (check_id)
 ORDER BY c.check_id, r.chunk_start;
-- a lookback of more chunks than backfill.max_chunks is refused, not cut
SET backfill.max_chunks = 2;
SELECT regexp_replace(pg_temp.try('SELECT backfill.run_check(' || c.check_id || ')'),
                      'check \d+', 'check N') AS result
  FROM windows w JOIN backfill.checks c USING (check_id)
 WHERE w.lookback = '3 hours';
SELECT pg_temp.try('SELECT backfill.run_check(' || c.check_id || ')') AS result
  FROM windows w JOIN backfill.checks c USING (check_id)
 WHERE w.lookback = '150 minutes';
RESET backfill.max_chunks;
SELECT bool_and(backfill.unschedule_check(c.check_id)) AS unscheduled
  FROM windows w JOIN backfill.checks c USING (check_id);

DROP OWNED BY regress_chk_outsider, regress_chk_other, regress_chk_viewer;
DROP ROLE regress_chk_outsider, regress_chk_other, regress_chk_viewer;
