-- replan keeps keep_replaced (issue 29, item 8).  A replanned run used to
-- keep nothing (the definition's false, not the run's true), so it could
-- not be reverted; replan_group lost it too, for every run of the group.
-- The planning loop of a cascading plan and of replan_group is one loop
-- now (cascade.c, PlanGroup): both keep what each run asks.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
SELECT setval('backfill.runs_run_id_seq', 9401, false) IS NOT NULL AS seq_set;
SET backfill.notices = summary;
SET backfill.notice_timing = off;
CREATE SCHEMA rk;
CREATE TABLE rk.src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO rk.src SELECT '2024-04-01 00:00+00'::timestamptz + i * interval '6 hours', 1
  FROM generate_series(0, 11) i;
CREATE TABLE rk.daily (day timestamptz NOT NULL, n int NOT NULL);
INSERT INTO rk.daily VALUES ('2024-04-01', 0), ('2024-04-02', 0), ('2024-04-03', 0);
CREATE TABLE rk.monthly (month timestamptz NOT NULL, n int NOT NULL);
-- v1's source fails on April 2 (a division by zero); the definition keeps nothing,
-- the plan asks to keep
SELECT backfill.register('rk.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day,
             (count(*) / CASE WHEN $1 = '2024-04-02 00:00+00' THEN 0 ELSE 1 END)::int AS n
        FROM rk.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$) AS version;
SELECT backfill.register('rk.monthly', 'month',
    $$SELECT date_trunc('month', day) AS month, sum(n)::int AS n
        FROM rk.daily WHERE day >= $1 AND day < $2 GROUP BY 1$$,
    chunk => '1 month') AS version;
SELECT backfill.plan('rk.daily', '2024-04-01', '2024-04-04', probe => false,
                     keep_replaced => true) AS r \gset
CALL backfill.run(:r);
SELECT keep_replaced FROM backfill.runs WHERE run_id = :r;
-- v2 fixes the source; replan: the new run keeps, like the run it continues
SELECT backfill.register('rk.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, count(*)::int AS n
        FROM rk.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$) AS version;
SELECT backfill.replan(:r) AS r2 \gset
SELECT run_id, continues_run, keep_replaced FROM backfill.runs WHERE run_id = :r2;
CALL backfill.run(:r2);
CALL backfill.run(:r2);
-- so it can be reverted: the two zeros of April 2 and 3 come back
SELECT count(*) AS kept_chunks FROM backfill.archived_chunks WHERE run_id = :r2;
SELECT backfill.revert(:r2) AS rv \gset
CALL backfill.run(:rv);
CALL backfill.run(:rv);
SELECT day, n FROM rk.daily ORDER BY 1;

-- A cascading plan that keeps, and its group replanned: every new run keeps,
-- as the run it continues did.
SELECT backfill.depend('rk.monthly', 'rk.daily') AS added;
SELECT backfill.register('rk.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day,
             (count(*) / CASE WHEN $1 = '2024-04-02 00:00+00' THEN 0 ELSE 1 END)::int AS n
        FROM rk.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$) AS version;
SELECT backfill.plan('rk.daily', '2024-04-01', '2024-04-04', probe => false,
                     cascade => true, keep_replaced => true) AS g \gset
SELECT run_id, target, keep_replaced FROM backfill.runs WHERE group_id = :g ORDER BY run_id;
CALL backfill.run_group(:g);
SELECT backfill.register('rk.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, count(*)::int AS n
        FROM rk.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$) AS version;
SELECT backfill.replan_group(:g) AS g2 \gset
SELECT run_id, target, continues_run, probe, keep_replaced FROM backfill.runs
 WHERE group_id = :g2 ORDER BY run_id;
SELECT backfill.cancel_group(:g2) AS cancelled;
RESET backfill.notices;
RESET backfill.notice_timing;

-- Clean up.
SELECT backfill.unregister('rk.monthly');
SELECT backfill.unregister('rk.daily');
DROP SCHEMA rk CASCADE;
