-- plan: a run and its chunks, nothing executed; refusals; source horizon.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
-- run ids of this file start at 1101, whatever ran before
SELECT setval('backfill.runs_run_id_seq', 1101, false) IS NOT NULL AS seq_set;
CREATE SCHEMA pl;
CREATE TABLE pl.raw (ts timestamptz, v int);
CREATE TABLE pl.daily (day timestamptz, n int);
CREATE FUNCTION pg_temp.try(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    -- run ids depend on the tests before: mask them
    RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, 'run \d+', 'run N', 'g');
END $$;
INSERT INTO pl.daily VALUES ('2024-05-01', 1);

-- Not registered yet.
SELECT pg_temp.try($$SELECT backfill.plan('pl.daily', '2024-05-01', '2024-05-04')$$);
SELECT backfill.register('pl.daily', 'day',
    'SELECT date_trunc(''day'', ts) AS day, count(*)::int AS n FROM pl.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1',
    definition => 'counts');

-- A run with the target's chunk (1 day), the caller's settings recorded.
SET search_path = pl, public;
SELECT backfill.plan('pl.daily', '2024-05-01', '2024-05-04 12:00', note => 'first') AS r1 \gset
RESET search_path;
SELECT target, target_name, range_start, range_end, chunk, status, note, probe,
       backwards, clear_no_source, definition_version, timezone, search_path,
       created_by = current_user AS by_me, finished_at, job_id
  FROM backfill.runs WHERE run_id = :r1;
SELECT chunk_no, chunk_start, chunk_end, status, attempts, deferrals, verdict,
       rows_deleted, started_at, executed_by
  FROM backfill.chunks WHERE run_id = :r1 ORDER BY chunk_no;
-- nothing was executed
SELECT * FROM pl.daily;

-- Overlap with an unfinished run of the same target: 23P01, the run's id
-- in the detail.  Touching ranges do not overlap.
SELECT pg_temp.try($$SELECT backfill.plan('pl.daily', '2024-05-04', '2024-05-05')$$);
SELECT pg_temp.try($$SELECT backfill.plan('pl.daily', '2024-04-01', '2024-06-01')$$);
DO $$
DECLARE d text;
BEGIN
    PERFORM backfill.plan('pl.daily', '2024-05-03', '2024-05-06');
EXCEPTION WHEN exclusion_violation THEN
    GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
    RAISE NOTICE 'detail names run: %', d LIKE format('Run %s covers [2024-05-01 00:00:00+00, 2024-05-04 12:00:00+00) %%',
        (SELECT max(run_id) FROM backfill.runs WHERE note = 'first'));
END $$;
SELECT backfill.plan('pl.daily', '2024-05-04 12:00', '2024-05-05', chunk => '6 hours',
                     probe => false, backwards => true) AS r2 \gset
SELECT chunk, probe, backwards FROM backfill.runs WHERE run_id = :r2;
SELECT chunk_no, chunk_start, chunk_end, status FROM backfill.chunks
 WHERE run_id = :r2 ORDER BY chunk_no;
-- a cancelled run no longer blocks its range
SELECT backfill.cancel(:r2);
SELECT backfill.plan('pl.daily', '2024-05-04 12:00', '2024-05-05') AS r3 \gset
SELECT backfill.cancel(:r3);

-- Bad input: nothing is written.
SELECT count(*) AS runs_before FROM backfill.runs \gset
SELECT pg_temp.try($$SELECT backfill.plan(NULL, '2024-06-01', '2024-06-02')$$);
SELECT pg_temp.try($$SELECT backfill.plan('pl.daily', NULL, '2024-06-02')$$);
SELECT pg_temp.try($$SELECT backfill.plan('pl.daily', '2024-06-01', NULL)$$);
SELECT pg_temp.try($$SELECT backfill.plan('pl.daily', '2024-06-01', 'infinity')$$);
SELECT pg_temp.try($$SELECT backfill.plan('pl.daily', '-infinity', '2024-06-01')$$);
SELECT pg_temp.try($$SELECT backfill.plan('pl.daily', '2024-06-02', '2024-06-01')$$);
SELECT pg_temp.try($$SELECT backfill.plan('pl.daily', '2024-06-01', '2024-06-01')$$);
SELECT pg_temp.try($$SELECT backfill.plan('pl.daily', '2024-06-01', '2024-06-02', chunk => '0')$$);
SELECT pg_temp.try($$SELECT backfill.plan('pl.daily', '2024-06-01', '2024-06-02', chunk => '-1 hour')$$);
SELECT pg_temp.try($$SELECT backfill.plan('pl.daily', '2024-06-01', '2024-06-02', probe => NULL)$$);
SELECT pg_temp.try($$SELECT backfill.plan('pl.daily', '2024-06-01', '2024-06-02', backwards => NULL)$$);
SELECT pg_temp.try($$SELECT backfill.plan('pl.daily', '2024-06-01', '2024-06-02', clear_no_source => NULL)$$);
SELECT pg_temp.try($$SELECT backfill.plan('pl.daily', '2000-01-01', '2100-01-01', chunk => '1 second')$$);
SET backfill.max_chunks = 10;
SELECT pg_temp.try($$SELECT backfill.plan('pl.daily', '2024-06-01', '2024-06-12')$$);
RESET backfill.max_chunks;
SELECT count(*) = :runs_before AS nothing_written FROM backfill.runs;

-- A large plan is one set-based insert: a week of one-minute chunks.
SELECT backfill.plan('pl.daily', '2024-07-01', '2024-07-08', chunk => '1 minute') AS big \gset
SELECT count(*), min(chunk_no), max(chunk_no), min(chunk_start), max(chunk_end),
       bool_and(chunk_end - chunk_start = '1 minute') AS all_one_minute
  FROM backfill.chunks WHERE run_id = :big;
SELECT backfill.cancel(:big);

-- Source horizon from source_retention: chunks starting before
-- now() - retention are no_source at plan time (the chunk that contains
-- the horizon starts before it, so it is no_source too).
SELECT backfill.register('pl.daily', 'day',
    'SELECT date_trunc(''day'', ts) AS day, count(*)::int AS n FROM pl.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1',
    definition => 'counts', source_retention => '3 days');
SELECT backfill.plan('pl.daily', date_trunc('day', now()) - interval '5 days',
                     date_trunc('day', now()) + interval '1 day') AS r4 \gset
SELECT chunk_no, chunk_start - date_trunc('day', now()) AS starts, status, verdict
  FROM backfill.chunks WHERE run_id = :r4 ORDER BY chunk_no;
SELECT backfill.cancel(:r4);

-- Source horizon from a query, run as the caller.
CREATE TABLE pl.source_meta (complete_from date);
INSERT INTO pl.source_meta VALUES ('2024-05-03');
SELECT backfill.register('pl.daily', 'day',
    'SELECT date_trunc(''day'', ts) AS day, count(*)::int AS n FROM pl.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1',
    definition => 'counts', source_horizon => 'SELECT min(complete_from) FROM pl.source_meta');
SELECT backfill.plan('pl.daily', '2024-05-10', '2024-05-13') AS r5 \gset
SELECT count(*) FILTER (WHERE status = 'no_source') AS no_source FROM backfill.chunks WHERE run_id = :r5;
SELECT backfill.cancel(:r5);
SELECT backfill.plan('pl.daily', '2024-04-30', '2024-05-01') AS r6 \gset
SELECT chunk_no, status FROM backfill.chunks WHERE run_id = :r6;
SELECT backfill.cancel(:r6);
-- a NULL horizon means no limit
DELETE FROM pl.source_meta;
SELECT backfill.plan('pl.daily', '2024-04-30', '2024-05-01') AS r7 \gset
SELECT chunk_no, status FROM backfill.chunks WHERE run_id = :r7;
SELECT backfill.cancel(:r7);

SELECT backfill.cancel(:r1);
SELECT backfill.unregister('pl.daily');
DROP SCHEMA pl CASCADE;
