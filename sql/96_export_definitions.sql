-- Definitions as code (issue 29, item 11): backfill.export_definitions
-- returns the SQL that registers the current definitions again, with their
-- strategies, watches, dependencies and schedules, for a migration file
-- under review.  Running it where they are registered changes nothing;
-- running it where they are not registers them with the same settings.
-- Everything is quoted (names with spaces and quotes, texts with quotes
-- and backslashes), and only what the caller may read is exported.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
SET IntervalStyle = postgres;
\set VERBOSITY default
SELECT setval('backfill.runs_run_id_seq', 9601, false) IS NOT NULL AS seq_set;
SELECT setval('cron.jobid_seq', 9600, false) IS NOT NULL AS job_ids_fixed;
SELECT setval('backfill.checks_check_id_seq', 9600, false) IS NOT NULL AS check_ids_fixed;
SELECT setval('backfill.refreshes_refresh_id_seq', 9600, false) IS NOT NULL AS refresh_ids_fixed;
CREATE SCHEMA "Ex Port";
CREATE TABLE "Ex Port".raw (ts timestamptz NOT NULL, "Amount" int NOT NULL);
CREATE TABLE "Ex Port"."Daily 'Rev'" (day timestamptz NOT NULL, "Total" int NOT NULL,
                                       PRIMARY KEY (day));
CREATE TABLE "Ex Port".monthly (month timestamptz NOT NULL, total int NOT NULL);
SELECT backfill.register('"Ex Port"."Daily ''Rev''"', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum("Amount")::int AS "Total"
        FROM "Ex Port".raw WHERE ts >= $1 AND ts < $2 GROUP BY 1 -- it's \ odd$$,
    definition => 'v1: Mia''s "rule"', chunk => '1 day', source_retention => '400 days',
    ledger => $$SELECT sum("Amount") FROM "Ex Port".raw WHERE ts >= $1 AND ts < $2$$,
    measure => 'sum("Total")', tolerance => 0.005, ledger_gate => false,
    keep_replaced => true, keep_for => '1 mon -1 days', key => '{day}') AS version;
SELECT backfill.set_strategy('"Ex Port"."Daily ''Rev''"', 'delete') AS previous;
SELECT backfill.register('"Ex Port".monthly', 'month',
    $$SELECT date_trunc('month', day) AS month, sum("Total")::int AS total
        FROM "Ex Port"."Daily 'Rev'" WHERE day >= $1 AND day < $2 GROUP BY 1$$,
    chunk => '1 month', source_horizon => $$SELECT '2020-01-01'::date$$,
    allow_empty => true) AS version;
SELECT backfill.depend('"Ex Port".monthly', '"Ex Port"."Daily ''Rev''"') AS added;
SET TimeZone = 'Europe/Berlin';
SELECT backfill.watch('"Ex Port"."Daily ''Rev''"', '"Ex Port".raw', 'ts', settle => '3 hours') AS added;
SET search_path = "Ex Port", public;
SELECT backfill.schedule_check('"Ex Port"."Daily ''Rev''"', '0 5 * * *', '3 days') > 0 AS scheduled;
SELECT backfill.schedule_refresh('"Ex Port"."Daily ''Rev''"', '0 3 * * *',
                                 quiet_hours => '01:00-05:00', lookback => '14 days') > 0 AS scheduled;
RESET search_path;
SET TimeZone = 'UTC';

-- The script, for these two targets (every one the caller may read).
\pset format unaligned
\pset tuples_only on
SELECT backfill.export_definitions('{"\"Ex Port\".\"Daily ''Rev''\"","\"Ex Port\".monthly"}');
\pset format aligned
\pset tuples_only off

-- Run where everything is registered so already: nothing changes (no new
-- version, no second check or refresh job).
CREATE TEMP TABLE before AS
SELECT (SELECT count(*) FROM backfill.definitions d JOIN backfill.targets t USING (target)
         WHERE t.target_name LIKE '"Ex Port".%') AS versions,
       (SELECT count(*) FROM backfill.checks WHERE target = '"Ex Port"."Daily ''Rev''"'::regclass) AS checks,
       (SELECT job_id FROM backfill.refreshes WHERE target = '"Ex Port"."Daily ''Rev''"'::regclass) AS refresh_job,
       (SELECT count(*) FROM cron.job) AS jobs;
SELECT backfill.export_definitions('{"\"Ex Port\".\"Daily ''Rev''\"","\"Ex Port\".monthly"}') AS script \gset
SET client_min_messages = warning;
:script
RESET client_min_messages;
-- the settings the script set are reset, to the session's defaults
SHOW TimeZone;
SET TimeZone = 'UTC';
SELECT (SELECT count(*) FROM backfill.definitions d JOIN backfill.targets t USING (target)
         WHERE t.target_name LIKE '"Ex Port".%') AS versions,
       (SELECT count(*) FROM backfill.checks WHERE target = '"Ex Port"."Daily ''Rev''"'::regclass) AS checks,
       (SELECT job_id FROM backfill.refreshes WHERE target = '"Ex Port"."Daily ''Rev''"'::regclass) AS refresh_job,
       (SELECT count(*) FROM cron.job) AS jobs
EXCEPT SELECT * FROM before;

-- Run where nothing is registered: the same settings again.
CREATE TEMP TABLE settings AS
SELECT t.target_name, d.time_column, d.source, d.label, d.chunk, d.source_retention,
       d.source_horizon, d.ledger, d.measure, d.tolerance, d.ledger_gate, d.strategy,
       d.keep_replaced, d.keep_for, d.key, d.allow_empty
  FROM backfill.targets t JOIN backfill.definitions d
    ON d.target = t.target AND d.version = t.current_version
 WHERE t.target_name LIKE '"Ex Port".%';
SELECT backfill.unschedule_refresh(refresh_id) AS unscheduled FROM backfill.refreshes
 WHERE target = '"Ex Port"."Daily ''Rev''"'::regclass;
SELECT backfill.unschedule_check(check_id) AS unscheduled FROM backfill.checks
 WHERE target = '"Ex Port"."Daily ''Rev''"'::regclass;
SELECT backfill.unregister('"Ex Port".monthly');
SELECT backfill.unregister('"Ex Port"."Daily ''Rev''"');
SET client_min_messages = warning;
:script
RESET client_min_messages;
SELECT t.target_name, d.time_column, d.source, d.label, d.chunk, d.source_retention,
       d.source_horizon, d.ledger, d.measure, d.tolerance, d.ledger_gate, d.strategy,
       d.keep_replaced, d.keep_for, d.key, d.allow_empty
  FROM backfill.targets t JOIN backfill.definitions d
    ON d.target = t.target AND d.version = t.current_version
 WHERE t.target_name LIKE '"Ex Port".%'
EXCEPT SELECT * FROM settings;
SELECT target, source, time_column, timezone, settle FROM backfill.watches
 WHERE target = '"Ex Port"."Daily ''Rev''"'::regclass;
SELECT downstream, upstream FROM backfill.dependencies
 WHERE downstream = '"Ex Port".monthly'::regclass;
SELECT target, cron, lookback, job_id IS NOT NULL AS scheduled FROM backfill.checks
 WHERE target = '"Ex Port"."Daily ''Rev''"'::regclass;
SELECT target, cron, quiet_hours, lookback, timezone, search_path FROM backfill.refreshes
 WHERE target = '"Ex Port"."Daily ''Rev''"'::regclass;

-- Only what the caller may read: a role that reads the monthly rollup
-- only exports that one, without the dependency it cannot see; asking for
-- the other is refused, as is a table not registered, or a NULL.
CREATE ROLE regress_ex_reader;
GRANT USAGE ON SCHEMA "Ex Port" TO regress_ex_reader;
GRANT SELECT ON "Ex Port".monthly TO regress_ex_reader;
SET ROLE regress_ex_reader;
SELECT position('target           => ''"Ex Port".monthly''' IN e) > 0 AS has_monthly,
       position('target           => ''"Ex Port"."Daily' IN e) > 0 AS has_daily,
       position('backfill.depend' IN e) > 0 AS has_dependency,
       position('backfill.watch' IN e) > 0 AS has_watch
  FROM backfill.export_definitions() AS e;
SELECT backfill.export_definitions('{"\"Ex Port\".\"Daily ''Rev''\""}');
RESET ROLE;
SELECT backfill.export_definitions('{"\"Ex Port\".raw"}');
SELECT backfill.export_definitions('{NULL}');
REVOKE ALL ON "Ex Port".monthly FROM regress_ex_reader;
REVOKE ALL ON SCHEMA "Ex Port" FROM regress_ex_reader;
DROP ROLE regress_ex_reader;
-- Nothing registered among those asked: a script that does nothing.
SELECT backfill.export_definitions('{}');

-- Clean up.
SELECT backfill.unschedule_refresh(refresh_id) AS unscheduled FROM backfill.refreshes
 WHERE target = '"Ex Port"."Daily ''Rev''"'::regclass;
SELECT backfill.unschedule_check(check_id) AS unscheduled FROM backfill.checks
 WHERE target = '"Ex Port"."Daily ''Rev''"'::regclass;
SELECT backfill.unregister('"Ex Port".monthly');
SELECT backfill.unregister('"Ex Port"."Daily ''Rev''"');
DROP SCHEMA "Ex Port" CASCADE;
