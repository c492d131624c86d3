-- Registration text runs only as its author (issue 10, items 1, 2, 6, 7a):
-- alice may SELECT, INSERT and DELETE on bob's table and re-registers it
-- with a measure, a ledger or a horizon that calls her function
-- ai.pwn(), which records current_user and whether it is the session
-- user.  Whatever path runs registration text (bob's run, bob's plan and
-- its horizon, check, preview, reconcile, a pg_cron tick, a superuser's
-- check), ai.pwn() never runs as bob or as a superuser.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
SET client_min_messages = notice;
SELECT setval('backfill.runs_run_id_seq', 6700, false) IS NOT NULL AS ids_fixed,
       setval('backfill.checks_check_id_seq', 6700, false) IS NOT NULL AS check_ids_fixed;

CREATE ROLE regress_ai_bob LOGIN;
CREATE ROLE regress_ai_alice LOGIN;
CREATE ROLE regress_ai_reader;
CREATE ROLE regress_ai_outsider;
CREATE SCHEMA ai;
GRANT USAGE ON SCHEMA ai TO PUBLIC;
GRANT CREATE ON SCHEMA ai TO regress_ai_alice;
CREATE TABLE ai.src (ts timestamptz NOT NULL, amount int NOT NULL);
INSERT INTO ai.src SELECT '2024-03-01'::timestamptz + i * interval '6 hours', 1
  FROM generate_series(0, 4 * 4 - 1) i;
CREATE TABLE ai.ledger (day timestamptz, n int);
INSERT INTO ai.ledger SELECT '2024-03-01'::timestamptz + d * interval '1 day', 4
  FROM generate_series(0, 3) d;
CREATE TABLE ai.daily (day timestamptz NOT NULL, total int NOT NULL);
CREATE TABLE ai.pwn_log (who name, is_session_user bool);
GRANT SELECT ON ai.src, ai.ledger TO regress_ai_bob, regress_ai_alice, regress_ai_reader;
GRANT SELECT, INSERT, DELETE ON ai.daily TO regress_ai_bob, regress_ai_alice;
GRANT SELECT ON ai.daily TO regress_ai_reader;
GRANT INSERT ON ai.pwn_log TO PUBLIC;

SET ROLE regress_ai_alice;
CREATE FUNCTION ai.pwn() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ai.pwn_log VALUES (current_user, current_user = session_user);
  RETURN 0;
END $$;
CREATE FUNCTION ai.pwn_ts() RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN
  PERFORM ai.pwn();
  RETURN NULL;
END $$;
RESET ROLE;

-- Bob registers his table and plans a run.
SET ROLE regress_ai_bob;
SELECT backfill.register('ai.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM ai.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    ledger => 'SELECT sum(n) FROM ai.ledger WHERE day >= $1 AND day < $2',
    measure => 'sum(total)') AS version;
SELECT backfill.plan('ai.daily', '2024-03-01', '2024-03-03', probe => false) AS bob_run \gset
RESET ROLE;

-- Alice re-registers it with her function in the measure: a new version,
-- authored by her (registration stays open to anyone who may rewrite the
-- table; the pinning makes it harmless).
SET ROLE regress_ai_alice;
SELECT backfill.register('ai.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM ai.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    ledger => 'SELECT sum(n) FROM ai.ledger WHERE day >= $1 AND day < $2',
    measure => 'sum(total) + ai.pwn()') AS version;
RESET ROLE;
SELECT version, created_by, author = 'regress_ai_alice'::regrole AS by_alice, measure
  FROM backfill.definitions WHERE target = 'ai.daily'::regclass ORDER BY version;
SELECT current_version, measure FROM backfill.targets WHERE target = 'ai.daily'::regclass;

-- Bob's existing run executes bob's pinned version.
SET ROLE regress_ai_bob;
CALL backfill.run(:bob_run);
SELECT definition_version FROM backfill.runs WHERE run_id = :bob_run;
-- Bob's reconcile of his run reads its pinned version too.
SELECT chunk_no, target_value, ledger_value, verdict FROM backfill.reconcile(:bob_run);
-- Bob's new plan, check and preview would run alice's text: refused.
SELECT backfill.plan('ai.daily', '2024-03-03', '2024-03-04', probe => false);
\set VERBOSITY terse
SELECT * FROM backfill.check('ai.daily', '2024-03-01', '2024-03-03');
SELECT * FROM backfill.preview('ai.daily', '2024-03-01', '2024-03-02');
SELECT backfill.set_strategy('ai.daily', 'delete');
\set VERBOSITY default
RESET ROLE;
SELECT count(*) AS pwn_calls FROM ai.pwn_log;

-- A superuser's check runs alice's text as alice, never as the superuser.
SELECT chunk_no, verdict FROM backfill.check('ai.daily', '2024-03-01', '2024-03-02');
SELECT DISTINCT who, is_session_user FROM ai.pwn_log;
SHOW search_path;
TRUNCATE ai.pwn_log;

-- The horizon: alice's source_horizon runs only as alice.
SET ROLE regress_ai_alice;
SELECT backfill.register('ai.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM ai.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    source_horizon => 'SELECT ai.pwn_ts()', measure => 'sum(total)') AS version;
RESET ROLE;
SET ROLE regress_ai_bob;
\set VERBOSITY terse
SELECT backfill.plan('ai.daily', '2024-03-03', '2024-03-04', probe => false);
\set VERBOSITY default
RESET ROLE;
SELECT count(*) AS pwn_calls FROM ai.pwn_log;
SELECT backfill.plan('ai.daily', '2024-03-03', '2024-03-04', probe => false) AS su_run \gset
SELECT DISTINCT who, is_session_user FROM ai.pwn_log;
SELECT backfill.cancel(:su_run);
TRUNCATE ai.pwn_log;

-- Bob adopts the target again by registering it himself; his next plan
-- and every check run his text.
SET ROLE regress_ai_bob;
SELECT backfill.register('ai.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM ai.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    ledger => 'SELECT sum(n) FROM ai.ledger WHERE day >= $1 AND day < $2',
    measure => 'sum(total)') AS version;
SELECT backfill.plan('ai.daily', '2024-03-03', '2024-03-05', probe => false) AS bob_run2 \gset
SELECT chunk_no, verdict FROM backfill.check('ai.daily', '2024-03-01', '2024-03-03');
RESET ROLE;

-- A pg_cron tick of bob's run (application_name 'pg_cron', as in
-- 43_schedule_tick) after alice re-registered: the chunks run bob's
-- pinned text as bob.
SET ROLE regress_ai_alice;
SELECT backfill.register('ai.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM ai.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    ledger => 'SELECT sum(n) + ai.pwn() FROM ai.ledger WHERE day >= $1 AND day < $2',
    measure => 'sum(total)') AS version;
RESET ROLE;
GRANT USAGE ON SCHEMA cron TO regress_ai_bob;
SET ROLE regress_ai_bob;
SELECT backfill.schedule(:bob_run2, '0 0 30 2 *') > 0 AS scheduled;
SET application_name = 'pg_cron';
SET client_min_messages = warning;
CALL backfill.run(:bob_run2, max_chunks => 1);
RESET client_min_messages;
RESET application_name;
SELECT chunk_no, status, executed_by, executed_via
  FROM backfill.chunks WHERE run_id = :bob_run2 ORDER BY chunk_no;
SELECT backfill.unschedule(:bob_run2);
CALL backfill.run(:bob_run2);
RESET ROLE;
SELECT count(*) AS pwn_calls FROM ai.pwn_log;

-- Standing checks: bob schedules one on his own version; once alice
-- re-registers, bob's run_check is refused, a reader gets the stored
-- count, and a superuser's run_check runs alice's text as alice.
SET ROLE regress_ai_bob;
SELECT backfill.register('ai.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM ai.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    ledger => 'SELECT sum(n) FROM ai.ledger WHERE day >= $1 AND day < $2',
    measure => 'sum(total)') AS version;
SELECT backfill.schedule_check('ai.daily', '0 0 30 2 *', '3 days') > 0 AS check_scheduled;
SELECT check_id AS bob_check FROM backfill.checks WHERE target = 'ai.daily'::regclass \gset
SELECT backfill.run_check(:bob_check) AS failing;
RESET ROLE;
SET ROLE regress_ai_alice;
SELECT backfill.register('ai.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM ai.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    ledger => 'SELECT sum(n) + ai.pwn() FROM ai.ledger WHERE day >= $1 AND day < $2',
    measure => 'sum(total)') AS version;
RESET ROLE;
SET ROLE regress_ai_bob;
\set VERBOSITY terse
SELECT backfill.run_check(:bob_check);
\set VERBOSITY default
RESET ROLE;
SET ROLE regress_ai_reader;
SELECT backfill.run_check(:bob_check) AS failing;
RESET ROLE;
SELECT count(*) AS pwn_calls FROM ai.pwn_log;
SELECT checked_by, count(*) AS results FROM backfill.check_results
 WHERE check_id = :bob_check GROUP BY 1;
SELECT backfill.run_check(:bob_check) AS failing;
SELECT DISTINCT who, is_session_user FROM ai.pwn_log;
SET ROLE regress_ai_bob;
SELECT backfill.unschedule_check(:bob_check);
RESET ROLE;
TRUNCATE ai.pwn_log;

-- A reader (SELECT on the table only) gets the stored verdicts of bob's
-- run: nothing is recomputed or written, no text runs.
SET ROLE regress_ai_bob;
SELECT chunk_no, verdict FROM backfill.reconcile(:bob_run);
RESET ROLE;
SELECT chunk_no, verdict, ledger_ok FROM backfill.chunks WHERE run_id = :bob_run ORDER BY chunk_no;
-- the ledger changes: a recomputation would find a mismatch on March 2
UPDATE ai.ledger SET n = 5 WHERE day = '2024-03-02';
SET ROLE regress_ai_reader;
SELECT chunk_no, target_value, ledger_value, verdict FROM backfill.reconcile(:bob_run);
RESET ROLE;
SELECT chunk_no, verdict, ledger_value FROM backfill.chunks WHERE run_id = :bob_run ORDER BY chunk_no;
-- bob, the planner, recomputes and stores
SET ROLE regress_ai_bob;
SELECT chunk_no, ledger_value, verdict FROM backfill.reconcile(:bob_run);
RESET ROLE;
SELECT chunk_no, verdict, ledger_value FROM backfill.chunks WHERE run_id = :bob_run ORDER BY chunk_no;
UPDATE ai.ledger SET n = 4 WHERE day = '2024-03-02';

-- A run the caller cannot see does not exist for them (as in changes()).
SET ROLE regress_ai_outsider;
\set VERBOSITY terse
SELECT backfill.cancel(:bob_run);
CALL backfill.run(:bob_run);
SELECT backfill.schedule(:bob_run, '0 4 * * *');
SELECT backfill.unschedule(:bob_run);
SELECT * FROM backfill.reconcile(:bob_run);
\set VERBOSITY default
RESET ROLE;

-- A ledger's set_config(..., false) stays inside it: the caller's
-- search_path after reconcile and check is what it was.
SET ROLE regress_ai_bob;
SELECT backfill.register('ai.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM ai.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    ledger => $$SELECT sum(n) FROM ai.ledger WHERE day >= $1 AND day < $2
                 AND set_config('search_path', 'evil', false) IS NOT NULL$$,
    measure => 'sum(total)') AS version;
SELECT backfill.plan('ai.daily', '2024-03-01', '2024-03-02', probe => false) AS leak_run \gset
SET client_min_messages = warning;
CALL backfill.run(:leak_run);
RESET client_min_messages;
SET search_path = public, ai;
SELECT count(*) AS chunks FROM backfill.reconcile(:leak_run);
SHOW search_path;
SELECT count(*) AS chunks FROM backfill.check('ai.daily', '2024-03-01', '2024-03-02');
SHOW search_path;
RESET search_path;
RESET ROLE;

-- Identity is by OID: a role dropped and created again under the same
-- name inherits neither its runs nor its definitions.
CREATE ROLE regress_ai_temp;
GRANT SELECT ON ai.src, ai.ledger TO regress_ai_temp;
GRANT SELECT, INSERT, DELETE ON ai.daily TO regress_ai_temp;
SET ROLE regress_ai_temp;
SELECT backfill.register('ai.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM ai.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$) AS version;
SELECT backfill.plan('ai.daily', '2024-03-06', '2024-03-07', probe => false) AS temp_run \gset
SELECT backfill.plan('ai.daily', '2024-03-08', '2024-03-09', probe => false) AS temp_run2 \gset
RESET ROLE;
DROP OWNED BY regress_ai_temp;
DROP ROLE regress_ai_temp;
CREATE ROLE regress_ai_temp;
GRANT SELECT ON ai.src, ai.ledger TO regress_ai_temp;
GRANT SELECT, INSERT, DELETE ON ai.daily TO regress_ai_temp;
SET ROLE regress_ai_temp;
\set VERBOSITY terse
CALL backfill.run(:temp_run);
SELECT backfill.cancel(:temp_run);
SELECT backfill.unschedule(:temp_run);
SELECT backfill.plan('ai.daily', '2024-03-10', '2024-03-11');
\set VERBOSITY default
RESET ROLE;
-- A superuser cannot run the dropped author's text either, but may
-- cancel and unschedule the run (one rule for every action).
\set VERBOSITY terse
CALL backfill.run(:temp_run);
\set VERBOSITY default
SELECT backfill.unschedule(:temp_run2);
SELECT backfill.cancel(:temp_run);
SELECT backfill.cancel(:temp_run2);

SELECT count(*) AS pwn_calls_in_all FROM ai.pwn_log;

SELECT backfill.unregister('ai.daily');
DROP SCHEMA ai CASCADE;
REVOKE USAGE ON SCHEMA cron FROM regress_ai_bob;
DROP ROLE regress_ai_bob, regress_ai_alice, regress_ai_reader,
          regress_ai_outsider, regress_ai_temp;
