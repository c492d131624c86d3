-- Pipelines: a group runs in dependency order; a downstream chunk waits
-- for the upstream chunks it covers; a probed group probes the first
-- upstream chunk only; the first failure stops the whole group; lineage
-- records the causing upstream run; the lineage chart.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY default
SELECT setval('backfill.runs_run_id_seq', 7201, false) IS NOT NULL AS seq_set;
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
RESET client_min_messages;
SELECT * FROM grp.monthly;

-- May 6-8 are refilled with corrected figures; May follows.
UPDATE grp.raw SET amount = 2 WHERE ts >= '2024-05-06' AND ts < '2024-05-09';
SELECT backfill.plan('grp.daily', '2024-05-06', '2024-05-09', cascade => true,
                     note => 'refund fix') AS g \gset
SELECT run_id, target, upstream_runs, probe, note FROM backfill.runs
 WHERE group_id = :g ORDER BY run_id;
-- a downstream run waits for its upstream chunks
CALL backfill.run(:g + 2);
SELECT status FROM backfill.chunks WHERE run_id = :g + 2;
-- the probed group probes the first upstream chunk only
CALL backfill.run_group(:g);
SELECT status, runs_done, chunks_done, chunks_pending FROM backfill.group_progress WHERE group_id = :g;
-- then the rest, with max_chunks counted over the whole group
CALL backfill.run_group(:g, max_chunks => 2);
SELECT status, runs_done, chunks_done, chunks_pending FROM backfill.group_progress WHERE group_id = :g;
CALL backfill.run_group(:g);
CALL backfill.run_group(:g);
-- every chunk ran after the upstream chunks it covers
SELECT r.target, c.chunk_start, c.status
  FROM backfill.chunks c JOIN backfill.runs r USING (run_id)
 WHERE r.group_id = :g ORDER BY c.finished_at;
SELECT * FROM grp.monthly;
SELECT * FROM grp.weekly ORDER BY 1;
-- which upstream run caused the monthly rebuild
SELECT h.target, h.run_id, r.upstream_runs, h.note
  FROM backfill.history h JOIN backfill.runs r USING (run_id)
 WHERE r.group_id = :g AND h.target = 'grp.monthly'::regclass;
SELECT run_id, target, chunk_no, status, verdict FROM backfill.reconcile_group(:g);

-- The first failure stops the whole group.
INSERT INTO grp.fail_days VALUES ('2024-05-21');
SELECT backfill.plan('grp.daily', '2024-05-20', '2024-05-23', cascade => true,
                     probe => false) AS g2 \gset
CALL backfill.run_group(:g2);
SELECT status, runs_done, chunks_done, chunks_failed FROM backfill.group_progress WHERE group_id = :g2;
CALL backfill.run(:g2 + 1);
SELECT run_id, status FROM backfill.runs WHERE group_id = :g2 ORDER BY run_id;
-- schedule_group refuses a group with a failed run
SELECT backfill.schedule_group(:g2);
SELECT * FROM backfill.lineage_chart('grp.daily', '2024-05-01', '2024-06-01');
-- fixed: the group resumes with the failed chunk
TRUNCATE grp.fail_days;
SET client_min_messages = warning;
CALL backfill.run_group(:g2);
RESET client_min_messages;
SELECT status, runs_done FROM backfill.group_progress WHERE group_id = :g2;
CALL backfill.run_group(:g2);
CALL backfill.run_group(NULL);
CALL backfill.run_group(1);
CALL backfill.run_group(:g2, max_chunks => 0);
DO $$ BEGIN CALL backfill.run_group(7201); END $$;

-- The lineage chart: a month per line over a long range, an hour per
-- character over a short one; a new definition shows its own digit.
SELECT backfill.register('grp.daily', 'day',
    'SELECT date_trunc(''day'', ts) AS day, sum(amount)::int AS revenue FROM grp.raw WHERE ts >= $1 AND ts < $2 AND grp.ok(ts) GROUP BY 1',
    definition => 'net');
SET client_min_messages = warning;
CALL backfill.backfill('grp.daily', '2024-05-10', '2024-05-12');
RESET client_min_messages;
SELECT * FROM backfill.lineage_chart('grp.daily', '2024-04-15', '2024-07-20');
SELECT * FROM backfill.lineage_chart('grp.daily', '2024-05-11 12:00', '2024-05-13');
SELECT * FROM backfill.lineage_chart('grp.daily', '2024-05-13', '2024-05-11');
-- the chart is for those who may read the table
CREATE ROLE regress_grp_none;
GRANT USAGE ON SCHEMA grp TO regress_grp_none;
SET ROLE regress_grp_none;
SELECT * FROM backfill.lineage_chart('grp.daily', '2024-05-11', '2024-05-13');
RESET ROLE;
REVOKE USAGE ON SCHEMA grp FROM regress_grp_none;
DROP ROLE regress_grp_none;

SELECT backfill.unregister(t, cascade => true) FROM backfill.targets t(t)
 WHERE t::text LIKE 'grp.%' ORDER BY t::text;
DROP SCHEMA grp CASCADE;
