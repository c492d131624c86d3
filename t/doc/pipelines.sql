-- doc/pipelines.md: the quick start's tables, with daily_revenue rebuilt
-- under v1 over 11-30 November and then registered again as v2 (the
-- "night after night" recipe); pd.a <- pd.b <- pd.c (cycles, unregister);
-- the grp targets of sql/72_pipeline_groups.sql up to its failed group (the
-- lineage chart); the pp targets of sql/71_pipeline_plans.sql (widening),
-- planned from run id 7101 as there.
\i t/doc/pagedeck.sql
\i t/doc/pagedeck_register.sql
SET client_min_messages = warning;
CALL backfill.backfill('daily_revenue', '2026-11-11', '2026-12-01');
SELECT backfill.register(
    'daily_revenue', 'day',
    source      => $$SELECT paid_at::date AS day, count(*) AS payments, sum(amount) AS revenue
                      FROM public.payments
                     WHERE paid_at >= $1 AND paid_at < $2 AND account NOT LIKE 'test-%'
                     GROUP BY 1$$,
    definition  => 'v2: excludes test accounts',
    ledger      => $$SELECT count(*) FROM public.payments
                     WHERE paid_at >= $1 AND paid_at < $2 AND account NOT LIKE 'test-%'$$,
    measure     => 'sum(payments)');

CREATE SCHEMA pd;
CREATE TABLE pd.a (ts timestamptz, n int);
CREATE TABLE pd.b (ts timestamptz, n int);
CREATE TABLE pd.c (ts timestamptz, n int);
SELECT backfill.register('pd.a', 'ts', 'SELECT ts, n FROM pd.a WHERE ts >= $1 AND ts < $2');
SELECT backfill.register('pd.b', 'ts', 'SELECT ts, n FROM pd.a WHERE ts >= $1 AND ts < $2');
SELECT backfill.register('pd.c', 'ts', 'SELECT ts, n FROM pd.b WHERE ts >= $1 AND ts < $2');
SELECT backfill.depend('pd.b', 'pd.a');
SELECT backfill.depend('pd.c', 'pd.b');

CREATE SCHEMA grp;
CREATE TABLE grp.raw (ts timestamptz, amount int);
CREATE TABLE grp.fail_days (day timestamptz);
CREATE FUNCTION grp.ok(t timestamptz) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM grp.fail_days f WHERE t >= f.day AND t < f.day + interval '1 day') THEN
        RAISE EXCEPTION 'source broken on %', t::date;
    END IF;
    RETURN true;
END $$;
CREATE TABLE grp.daily (day timestamptz, revenue int);
CREATE TABLE grp.weekly (week timestamptz, revenue int);
CREATE TABLE grp.monthly (month timestamptz, revenue int);
INSERT INTO grp.raw SELECT t, 1 FROM generate_series('2024-05-01'::timestamptz, '2024-05-31 23:00', '1 hour') t;
SELECT backfill.register('grp.daily', 'day',
    'SELECT date_trunc(''day'', ts) AS day, sum(amount)::int AS revenue FROM grp.raw WHERE ts >= $1 AND ts < $2 AND grp.ok(ts) GROUP BY 1',
    definition => 'gross');
SELECT backfill.register('grp.weekly', 'week',
    'SELECT date_trunc(''week'', day) AS week, sum(revenue)::int AS revenue FROM grp.daily WHERE day >= $1 AND day < $2 GROUP BY 1',
    chunk => '1 week');
SELECT backfill.register('grp.monthly', 'month',
    'SELECT date_trunc(''month'', day) AS month, sum(revenue)::int AS revenue FROM grp.daily WHERE day >= $1 AND day < $2 GROUP BY 1',
    chunk => '1 month', measure => 'sum(revenue)');
SELECT backfill.depend('grp.weekly', 'grp.daily');
SELECT backfill.depend('grp.monthly', 'grp.daily');
SET client_min_messages = warning;
CALL backfill.backfill('grp.daily', '2024-05-01', '2024-06-01');
CALL backfill.backfill('grp.monthly', '2024-05-01', '2024-06-01');
-- May 6-8 refilled with corrected figures, May following; then a group
-- whose daily chunk of May 21 fails (the source breaks on that day).
UPDATE grp.raw SET amount = 2 WHERE ts >= '2024-05-06' AND ts < '2024-05-09';
SELECT backfill.plan('grp.daily', '2024-05-06', '2024-05-09', cascade => true,
                     note => 'refund fix') AS g \gset
CALL backfill.run_group(:g);
CALL backfill.run_group(:g);
INSERT INTO grp.fail_days VALUES ('2024-05-21');
SELECT backfill.plan('grp.daily', '2024-05-20', '2024-05-23', cascade => true,
                     probe => false) AS g2 \gset
\set ON_ERROR_STOP 0
CALL backfill.run_group(:g2);
\set ON_ERROR_STOP 1

CREATE SCHEMA pp;
CREATE TABLE pp.raw (ts timestamptz, v int);
CREATE TABLE pp.daily (day timestamptz, n int);
CREATE TABLE pp.weekly (week timestamptz, n int);
CREATE TABLE pp.monthly (month timestamptz, n int);
CREATE TABLE pp.hourly (hour timestamptz, n int);
CREATE TABLE pp.quarter (ts timestamptz, n int);
SELECT backfill.register('pp.daily', 'day',
    'SELECT date_trunc(''day'', ts) AS day, count(*)::int AS n FROM pp.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1');
SELECT backfill.register('pp.weekly', 'week',
    'SELECT date_trunc(''week'', day) AS week, sum(n)::int AS n FROM pp.daily WHERE day >= $1 AND day < $2 GROUP BY 1',
    chunk => '1 week');
SELECT backfill.register('pp.monthly', 'month',
    'SELECT date_trunc(''month'', day) AS month, sum(n)::int AS n FROM pp.daily WHERE day >= $1 AND day < $2 GROUP BY 1',
    chunk => '1 month');
SELECT backfill.register('pp.hourly', 'hour',
    'SELECT date_trunc(''hour'', ts) AS hour, count(*)::int AS n FROM pp.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1',
    chunk => '1 hour');
SELECT backfill.register('pp.quarter', 'ts',
    'SELECT $1 AS ts, count(*)::int AS n FROM pp.raw WHERE ts >= $1 AND ts < $2',
    chunk => '6 hours');
-- daily -> weekly -> monthly, and daily -> monthly
SELECT backfill.depend('pp.weekly', 'pp.daily');
SELECT backfill.depend('pp.monthly', 'pp.weekly');
SELECT backfill.depend('pp.monthly', 'pp.daily');

CREATE VIEW pp.plan_chunks AS
SELECT r.group_id, r.run_id, r.target, r.upstream_runs, r.probe,
       c.chunk_no, c.chunk_start, c.chunk_end, c.chunk_end - c.chunk_start AS len
  FROM backfill.runs r JOIN backfill.chunks c USING (run_id);
SELECT setval('backfill.runs_run_id_seq', 7101, false);
RESET client_min_messages;
