-- register / unregister: targets, definition versions, validation.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
-- run ids of this file start at 1001, whatever ran before
SELECT setval('backfill.runs_run_id_seq', 1001, false) IS NOT NULL AS seq_set;
CREATE SCHEMA reg;
CREATE TABLE reg.payments (id int, paid_at timestamptz, amount numeric, account text);
CREATE TABLE reg.daily (day timestamptz, payments int, revenue numeric);
-- A helper that shows the SQLSTATE and message of a failing statement.
CREATE FUNCTION pg_temp.try(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    -- run ids depend on the tests before: mask them
    RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, 'run \d+', 'run N', 'g');
END $$;

-- First registration: version 1.
SELECT backfill.register('reg.daily', 'day',
    $q$SELECT date_trunc('day', paid_at) AS day, count(*)::int AS payments,
              sum(amount) AS revenue
         FROM reg.payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1;$q$,
    definition => 'v1: all payments',
    ledger => 'SELECT count(*) FROM reg.payments WHERE paid_at >= $1 AND paid_at < $2',
    measure => 'sum(payments)');
SELECT target, target_name, time_column, chunk, source_retention, source_horizon,
       measure, tolerance, ledger_gate, strategy, current_version,
       registered_by = current_user AS by_me
  FROM backfill.targets;
-- The source is kept exactly as written (without the trailing semicolon),
-- with the sha256 of its text.
SELECT target, version, label, source, created_by = current_user AS by_me,
       source_hash = encode(sha256(convert_to(source, 'UTF8')), 'hex') AS hash_ok
  FROM backfill.definitions ORDER BY version;

-- Registering again with the same source and label: same version; the
-- other settings are updated.
SELECT backfill.register('reg.daily', 'day',
    $q$SELECT date_trunc('day', paid_at) AS day, count(*)::int AS payments,
              sum(amount) AS revenue
         FROM reg.payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1;$q$,
    definition => 'v1: all payments', chunk => '2 days',
    ledger => 'SELECT count(*) FROM reg.payments WHERE paid_at >= $1 AND paid_at < $2',
    measure => 'sum(payments)', tolerance => 0.01);
SELECT chunk, tolerance, current_version FROM backfill.targets;
SELECT count(*) FROM backfill.definitions;

-- A new label alone makes a new version; so does a new source.
SELECT backfill.register('reg.daily', 'day',
    $q$SELECT date_trunc('day', paid_at) AS day, count(*)::int AS payments,
              sum(amount) AS revenue
         FROM reg.payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1$q$,
    definition => 'v2: relabelled', measure => 'sum(payments)');
SELECT backfill.register('reg.daily', 'day',
    $q$SELECT date_trunc('day', paid_at) AS day, count(*)::int AS payments,
              sum(amount) AS revenue
         FROM reg.payments WHERE paid_at >= $1 AND paid_at < $2
          AND account <> 'test' GROUP BY 1$q$,
    definition => 'v2: relabelled', measure => 'sum(payments)');
-- Back to no label at all: version 4.
SELECT backfill.register('reg.daily', 'day',
    $q$SELECT date_trunc('day', paid_at) AS day, count(*)::int AS payments,
              sum(amount) AS revenue
         FROM reg.payments WHERE paid_at >= $1 AND paid_at < $2
          AND account <> 'test' GROUP BY 1$q$,
    measure => 'sum(payments)');
SELECT version, label, length(source_hash) AS hash_len,
       count(*) OVER (PARTITION BY source_hash) AS same_source
  FROM backfill.definitions ORDER BY version;
SELECT current_version, ledger IS NULL AS no_ledger, chunk FROM backfill.targets;

-- Bad input, each with its SQLSTATE; nothing is written.
SELECT pg_temp.try($$SELECT backfill.register(NULL, 'day', 'SELECT 1')$$);
SELECT pg_temp.try($$SELECT backfill.register('reg.daily', NULL, 'SELECT 1')$$);
SELECT pg_temp.try($$SELECT backfill.register('reg.daily', 'day', NULL)$$);
SELECT pg_temp.try($$SELECT backfill.register('reg.daily', 'day', 'SELECT day, payments, revenue FROM reg.daily WHERE day >= $1 AND day < $2', chunk => NULL)$$);
SELECT pg_temp.try($$SELECT backfill.register('reg.daily', 'day', 'SELECT day, payments, revenue FROM reg.daily WHERE day >= $1 AND day < $2', chunk => '0')$$);
SELECT pg_temp.try($$SELECT backfill.register('reg.daily', 'day', 'SELECT day, payments, revenue FROM reg.daily WHERE day >= $1 AND day < $2', chunk => '-1 day')$$);
SELECT pg_temp.try($$SELECT backfill.register('reg.daily', 'day', 'SELECT day, payments, revenue FROM reg.daily WHERE day >= $1 AND day < $2', tolerance => -0.1)$$);
SELECT pg_temp.try($$SELECT backfill.register('reg.daily', 'day', 'SELECT day, payments, revenue FROM reg.daily WHERE day >= $1 AND day < $2', tolerance => NULL)$$);
SELECT pg_temp.try($$SELECT backfill.register('reg.daily', 'day', 'SELECT day, payments, revenue FROM reg.daily WHERE day >= $1 AND day < $2', measure => NULL)$$);
SELECT pg_temp.try($$SELECT backfill.register('reg.daily', 'day', 'SELECT day, payments, revenue FROM reg.daily WHERE day >= $1 AND day < $2', ledger_gate => NULL)$$);
SELECT pg_temp.try($$SELECT backfill.register('reg.daily', 'day', 'SELECT day, payments, revenue FROM reg.daily WHERE day >= $1 AND day < $2', source_retention => '-90 days')$$);
SELECT pg_temp.try($$SELECT backfill.register('reg.daily', 'day', 'SELECT day, payments, revenue FROM reg.daily WHERE day >= $1 AND day < $2', source_retention => '90 days', source_horizon => 'SELECT now()')$$);
-- validation of the user's SQL (done by the primitives)
SELECT pg_temp.try($$SELECT backfill.register('reg.daily', 'nope', 'SELECT 1')$$);
SELECT pg_temp.try($$SELECT backfill.register('reg.daily', 'day', 'DELETE FROM reg.payments')$$);
SELECT pg_temp.try($$SELECT backfill.register('reg.daily', 'day', 'SELECT day, payments, revenue FROM reg.daily WHERE day >= $1 AND day < $2; DELETE FROM reg.payments')$$);
SELECT pg_temp.try($$SELECT backfill.register('reg.daily', 'day', 'SELECT day, payments, revenue FROM reg.daily WHERE day >= $1 AND day < $2', measure => 'payments')$$);
SELECT pg_temp.try($$SELECT backfill.register('reg.daily', 'day', 'SELECT day, payments, revenue FROM reg.daily WHERE day >= $1 AND day < $2', ledger => 'SELECT ''x''::text')$$);
SELECT pg_temp.try($$SELECT backfill.register('reg.daily', 'day', 'SELECT day, payments, revenue FROM reg.daily WHERE day >= $1 AND day < $2', source_horizon => 'SELECT 1')$$);
SELECT pg_temp.try($$SELECT backfill.register('reg.payments', 'amount', 'SELECT 1')$$);
CREATE VIEW reg.v AS SELECT * FROM reg.daily;
SELECT pg_temp.try($$SELECT backfill.register('reg.v', 'day', 'SELECT 1')$$);
SELECT current_version, chunk FROM backfill.targets;
SELECT count(*) FROM backfill.definitions;

-- unregister: history stays; registering again continues the versions.
SELECT backfill.unregister('reg.daily');
SELECT count(*) AS targets FROM backfill.targets;
SELECT count(*) AS definitions FROM backfill.definitions;
SELECT pg_temp.try($$SELECT backfill.unregister('reg.daily')$$);
SELECT pg_temp.try($$SELECT backfill.unregister(NULL)$$);
SELECT backfill.register('reg.daily', 'day',
    $q$SELECT date_trunc('day', paid_at) AS day, count(*)::int AS payments,
              sum(amount) AS revenue
         FROM reg.payments WHERE paid_at >= $1 AND paid_at < $2
          AND account <> 'test' GROUP BY 1$q$,
    measure => 'sum(payments)');
SELECT backfill.register('reg.daily', 'day',
    $q$SELECT date_trunc('day', paid_at) AS day, count(*)::int AS payments,
              sum(amount) AS revenue
         FROM reg.payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1$q$,
    definition => 'v5', measure => 'sum(payments)');

-- unregister is refused while a run is unfinished, and names the run.
SELECT backfill.plan('reg.daily', '2024-05-01', '2024-05-03') AS run_id \gset
SELECT pg_temp.try($$SELECT backfill.unregister('reg.daily')$$)
       = '55006: table reg.daily has unfinished backfill runs' AS refused;
-- (the detail names the run, the hint says what to do)
CREATE TEMP TABLE plan_id AS SELECT :run_id::bigint AS run_id;
DO $$
DECLARE d text; h text;
BEGIN
    PERFORM backfill.unregister('reg.daily');
EXCEPTION WHEN object_in_use THEN
    GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    RAISE NOTICE 'detail names the run: %, hint: %',
        d = format('Unfinished runs: %s.', (SELECT run_id FROM plan_id)), h;
END $$;
SELECT backfill.cancel(:run_id);
SELECT backfill.unregister('reg.daily');
SELECT count(*) AS runs_kept FROM backfill.runs WHERE target_name = 'reg.daily';

DROP SCHEMA reg CASCADE;
