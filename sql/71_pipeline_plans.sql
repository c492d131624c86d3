-- Pipelines: cascading plans (widening to whole downstream chunks across
-- DST and month ends, groups, overlap, rights) and plans that cover only
-- the chunks that need it (missing, outdated, failed, with clear_no_source).
SET TimeZone = 'America/Los_Angeles';
SET DateStyle = ISO;
\set VERBOSITY default
SELECT setval('backfill.runs_run_id_seq', 7101, false) IS NOT NULL AS seq_set;
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

-- Three days across the end of May: the weeks and months that contain them.
SELECT backfill.plan('pp.daily', '2024-05-30', '2024-06-02', cascade => true) AS g1 \gset
SELECT run_id, target, upstream_runs, probe, chunk_no, chunk_start, chunk_end
  FROM pp.plan_chunks WHERE group_id = :g1 ORDER BY run_id, chunk_no;
SELECT * FROM backfill.group_progress WHERE group_id = :g1;
-- Overlap rules per target: the same cascade again is refused by the
-- first overlapping run, and nothing of the second plan stays.
SELECT count(*) AS runs_before FROM backfill.runs \gset
SELECT backfill.plan('pp.daily', '2024-06-01', '2024-06-03', cascade => true);
SELECT backfill.cancel(:g1) AS cancelled_root;
SELECT backfill.plan('pp.daily', '2024-06-01', '2024-06-03', cascade => true);
SELECT count(*) - :runs_before AS new_runs FROM backfill.runs;
SELECT backfill.cancel_group(:g1) AS cancelled;
SELECT status, count(*) FROM backfill.runs WHERE group_id = :g1 GROUP BY 1;

-- Across the spring-forward day (March 10, 2024, 23 hours in Los Angeles):
-- the week and the month keep their local midnights.
SELECT backfill.plan('pp.daily', '2024-03-09', '2024-03-11', cascade => true,
                     probe => false) AS g2 \gset
SELECT run_id, target, chunk_no, chunk_start, chunk_end, len
  FROM pp.plan_chunks WHERE group_id = :g2 ORDER BY run_id, chunk_no;
SELECT backfill.cancel_group(:g2) AS cancelled;

-- An hourly target below a daily one gets 23 hours for March 10 and 25
-- for November 3; a 6-hour target restarts at each local midnight.
SELECT backfill.depend('pp.hourly', 'pp.daily');
SELECT backfill.depend('pp.quarter', 'pp.daily');
SELECT backfill.plan('pp.daily', '2024-03-10', '2024-03-11', cascade => true) AS g3 \gset
SELECT target, count(*) AS chunks, min(chunk_start), max(chunk_end), sum(len)
  FROM pp.plan_chunks WHERE group_id = :g3 GROUP BY run_id, target ORDER BY run_id;
SELECT chunk_start, chunk_end FROM pp.plan_chunks
 WHERE group_id = :g3 AND target = 'pp.quarter'::regclass ORDER BY chunk_no;
SELECT backfill.cancel_group(:g3) AS cancelled;
SELECT backfill.plan('pp.daily', '2024-11-03', '2024-11-04', cascade => true) AS g4 \gset
SELECT target, count(*) AS chunks, min(chunk_start), max(chunk_end), sum(len)
  FROM pp.plan_chunks WHERE group_id = :g4 GROUP BY run_id, target ORDER BY run_id;
SELECT chunk_start, chunk_end FROM pp.plan_chunks
 WHERE group_id = :g4 AND target = 'pp.quarter'::regclass ORDER BY chunk_no;
SELECT backfill.cancel_group(:g4) AS cancelled;
-- backfill.max_chunks bounds every run of the cascade
SET backfill.max_chunks = 20;
SELECT backfill.plan('pp.daily', '2024-03-12', '2024-03-13', cascade => true);
RESET backfill.max_chunks;
SELECT backfill.undepend('pp.hourly', 'pp.daily'), backfill.undepend('pp.quarter', 'pp.daily');

-- A range not aligned to the daily chunks: the week still widens to
-- whole weeks from Monday; a plan chunk override applies to the root only.
SELECT backfill.plan('pp.daily', '2024-07-03 12:00', '2024-07-04 06:00',
                     chunk => '6 hours', cascade => true) AS g5 \gset
SELECT target, chunk_no, chunk_start, chunk_end
  FROM pp.plan_chunks WHERE group_id = :g5 ORDER BY run_id, chunk_no;
SELECT backfill.cancel_group(:g5) AS cancelled;
-- cascade without downstream targets: a group of one run
SELECT backfill.plan('pp.monthly', '2024-08-01', '2024-09-01', cascade => true) AS g6 \gset
SELECT run_id = group_id AS root, upstream_runs FROM backfill.runs WHERE group_id = :g6;
SELECT backfill.cancel_group(:g6) AS cancelled;
-- unknown groups
SELECT backfill.cancel_group(1);
SELECT backfill.cancel_group(NULL);

-- Rights: every target of the cascade needs the rights of plan (42501),
-- and nothing is planned without them.
CREATE ROLE regress_pp_etl;
GRANT USAGE ON SCHEMA pp TO regress_pp_etl;
GRANT SELECT, INSERT, DELETE ON pp.daily, pp.weekly TO regress_pp_etl;
GRANT SELECT ON pp.raw, pp.monthly TO regress_pp_etl;
SET ROLE regress_pp_etl;
-- the ETL role adopts the daily and weekly definitions (their text runs as
-- their author), not the monthly one, whose table it may only read
SELECT backfill.register('pp.daily', 'day',
    'SELECT date_trunc(''day'', ts) AS day, count(*)::int AS n FROM pp.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1');
SELECT backfill.register('pp.weekly', 'week',
    'SELECT date_trunc(''week'', day) AS week, sum(n)::int AS n FROM pp.daily WHERE day >= $1 AND day < $2 GROUP BY 1',
    chunk => '1 week');
SELECT backfill.plan('pp.daily', '2024-09-01', '2024-09-02');
SELECT backfill.plan('pp.daily', '2024-09-02', '2024-09-03', cascade => true);
RESET ROLE;
SELECT target, range_start FROM backfill.runs
 WHERE created_by = 'regress_pp_etl' ORDER BY run_id;
SELECT backfill.cancel(run_id) FROM backfill.runs WHERE created_by = 'regress_pp_etl';

-- only_chunks: a daily target whose source is complete from January 5
-- (earlier chunks are no_source), filled under version 1 over Jan 3-8.
CREATE TABLE pp.fail_days (day timestamptz);
CREATE FUNCTION pp.ok(t timestamptz) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM pp.fail_days f WHERE t >= f.day AND t < f.day + interval '1 day') THEN
        RAISE EXCEPTION 'source broken on %', t::date;
    END IF;
    RETURN true;
END $$;
CREATE TABLE pp.o (day timestamptz, n int);
INSERT INTO pp.raw SELECT t, 1 FROM generate_series('2024-01-01'::timestamptz, '2024-01-10', '4 hours') t;
SELECT backfill.register('pp.o', 'day',
    'SELECT date_trunc(''day'', ts) AS day, count(*)::int AS n FROM pp.raw WHERE ts >= $1 AND ts < $2 AND pp.ok(ts) GROUP BY 1',
    definition => 'v1', source_horizon => $$SELECT '2024-01-05'::timestamptz$$);
SET client_min_messages = warning;
CALL backfill.backfill('pp.o', '2024-01-03', '2024-01-08');
-- Jan 6 fails in a later run, which is cancelled
INSERT INTO pp.fail_days VALUES ('2024-01-06');
SELECT backfill.plan('pp.o', '2024-01-06', '2024-01-07', probe => false) AS f \gset
CALL backfill.run(:f);
RESET client_min_messages;
SELECT backfill.cancel(:f);
TRUNCATE pp.fail_days;
-- a new definition: version 2
SELECT backfill.register('pp.o', 'day',
    'SELECT date_trunc(''day'', ts) AS day, (10 * count(*))::int AS n FROM pp.raw WHERE ts >= $1 AND ts < $2 AND pp.ok(ts) GROUP BY 1',
    definition => 'v2', source_horizon => $$SELECT '2024-01-05'::timestamptz$$);
SELECT * FROM backfill.lineage_chart('pp.o', '2024-01-01', '2024-01-11');

CREATE FUNCTION pg_temp.planned(only_chunks text, clear bool DEFAULT false)
RETURNS TABLE (run_id bigint, chunks text) LANGUAGE plpgsql AS $$
DECLARE r bigint;
BEGIN
    r := backfill.plan('pp.o', '2024-01-01', '2024-01-10', only_chunks => only_chunks,
                       clear_no_source => clear);
    RETURN QUERY
    SELECT r, string_agg(to_char(c.chunk_start, 'Mon DD') || ' ' || c.status, ', ' ORDER BY c.chunk_no)
      FROM backfill.chunks c WHERE c.run_id = r;
    IF r IS NOT NULL THEN
        PERFORM backfill.cancel(r);
    END IF;
END $$;
-- failed: the latest attempt failed or was cancelled there (Jan 6); the
-- run covers only its chunks.
SELECT chunks FROM pg_temp.planned('failed');
SELECT range_start, range_end FROM backfill.runs ORDER BY run_id DESC LIMIT 1;
-- missing: never filled (Jan 1-2, 8-9); the no_source days count as
-- covered, except for a plan that clears them (clear_no_source).
SELECT chunks FROM pg_temp.planned('missing');
SELECT chunks FROM pg_temp.planned('missing', true);
-- outdated: built under version 1
SELECT chunks FROM pg_temp.planned('outdated');
-- the plans above were cancelled: those chunks now count as failed
SELECT chunks FROM pg_temp.planned('failed');
-- bad values
SELECT backfill.plan('pp.o', '2024-01-01', '2024-01-10', only_chunks => 'recent');
SELECT backfill.plan('pp.o', '2024-01-01', NULL, only_chunks => 'missing');
-- Resuming a v2 recalculation: run the outdated chunks, then nothing is left.
SELECT backfill.plan('pp.o', '2024-01-01', '2024-01-10', only_chunks => 'outdated',
                     probe => false) AS o \gset
SET client_min_messages = warning;
CALL backfill.run(:o);
RESET client_min_messages;
SELECT backfill.plan('pp.o', '2024-01-01', '2024-01-10', only_chunks => 'outdated') IS NULL AS nothing;
SELECT * FROM backfill.lineage_chart('pp.o', '2024-01-01', '2024-01-11');
-- only_chunks and cascade together: the downstream runs follow the
-- selected chunks only.
CREATE TABLE pp.o_weekly (week timestamptz, n int);
SELECT backfill.register('pp.o_weekly', 'week',
    'SELECT date_trunc(''week'', day) AS week, sum(n)::int AS n FROM pp.o WHERE day >= $1 AND day < $2 GROUP BY 1',
    chunk => '1 week');
SELECT backfill.depend('pp.o_weekly', 'pp.o');
SELECT backfill.plan('pp.o', '2024-01-01', '2024-01-10', only_chunks => 'missing',
                     cascade => true) AS g7 \gset
SELECT target, chunk_no, chunk_start, chunk_end
  FROM pp.plan_chunks WHERE group_id = :g7 ORDER BY run_id, chunk_no;
SELECT backfill.cancel_group(:g7) AS cancelled;

SELECT backfill.unregister(t, cascade => true) FROM backfill.targets t(t)
 WHERE t::text LIKE 'pp.%' ORDER BY t::text DESC;
DROP SCHEMA pp CASCADE;
DROP OWNED BY regress_pp_etl;
DROP ROLE regress_pp_etl;
