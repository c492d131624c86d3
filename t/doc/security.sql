-- doc/security.md: sql/67_author_identity.sql's ai.daily, registered by bob and
-- again by alice with her function in the measure; a run 4200 planned by
-- regress_sched_etl on sched_rollup, which regress_sched_other may also
-- rewrite.
CREATE EXTENSION pg_cron;
CREATE EXTENSION backfill;
CREATE ROLE regress_ai_bob;
CREATE ROLE regress_ai_alice;
CREATE SCHEMA ai;
GRANT USAGE ON SCHEMA ai TO regress_ai_bob, regress_ai_alice;
CREATE TABLE ai.daily (day timestamptz NOT NULL, total int NOT NULL);
GRANT SELECT, INSERT, DELETE ON ai.daily TO regress_ai_bob, regress_ai_alice;
CREATE FUNCTION ai.pwn() RETURNS int LANGUAGE sql AS 'SELECT 0';
SET ROLE regress_ai_bob;
SELECT backfill.register('ai.daily', 'day', 'SELECT day, total FROM ai.daily WHERE day >= $1 AND day < $2',
                         measure => 'sum(total)');
SET ROLE regress_ai_alice;
SELECT backfill.register('ai.daily', 'day', 'SELECT day, total FROM ai.daily WHERE day >= $1 AND day < $2',
                         measure => 'sum(total) + ai.pwn()');
RESET ROLE;
CREATE ROLE regress_sched_etl;
CREATE ROLE regress_sched_other;
GRANT USAGE ON SCHEMA cron TO regress_sched_etl, regress_sched_other;
CREATE TABLE sched_rollup (day timestamptz NOT NULL, n int NOT NULL);
GRANT SELECT, INSERT, DELETE ON sched_rollup TO regress_sched_etl, regress_sched_other;
SELECT setval('backfill.runs_run_id_seq', 4200, false);
SET ROLE regress_sched_etl;
SELECT backfill.register('sched_rollup', 'day',
    'SELECT day, n FROM public.sched_rollup WHERE day >= $1 AND day < $2');
SELECT backfill.plan('sched_rollup', '2024-01-01', '2024-01-03', probe => false);
RESET ROLE;
