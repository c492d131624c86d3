-- Bounds on the work and the text a caller can hand the extension (issue
-- 15, items 2, 3 and 5): the lineage chart's size (with a width that
-- overflows int64), a cascading plan whose widening would make billions of
-- chunks, the length of labels, notes and other texts, and tolerances that
-- are not finite numbers.  Every refusal is immediate: the statement
-- timeout below is never reached.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY default
SET statement_timeout = '20s';
SELECT setval('backfill.runs_run_id_seq', 6900, false) IS NOT NULL AS ids_fixed;
CREATE SCHEMA ib;
CREATE TABLE ib.raw (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO ib.raw
SELECT t, 1 FROM generate_series('2026-01-01 00:00+00'::timestamptz,
                                 '2026-01-02 23:00+00', '1 hour') AS t;
CREATE TABLE ib.hourly (ts timestamptz NOT NULL, n int NOT NULL);
CREATE TABLE ib.tiny (ts timestamptz NOT NULL, n int NOT NULL);
SELECT backfill.register('ib.hourly', 'ts',
    $$SELECT date_trunc('hour', ts) AS ts, count(*)::int AS n
        FROM ib.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    chunk => '1 hour') AS version;
SELECT backfill.register('ib.tiny', 'ts',
    $$SELECT ts, n FROM ib.hourly WHERE ts >= $1 AND ts < $2$$,
    chunk => '1 microsecond') AS version;
SELECT backfill.depend('ib.tiny', 'ib.hourly') AS added;

-------------------------------------------------------------------------
-- 1. lineage_chart draws at most 10000 lines (one per month for ranges
--    longer than 92 days); beyond that it refuses (54000) before reading
--    or drawing anything.
-------------------------------------------------------------------------
SELECT count(*) AS lines FROM backfill.lineage_chart('ib.hourly', '2026-01-01', '2027-01-01');
-- exactly 10000 month lines (2000-01 .. 2833-04), plus the title and legend
SELECT count(*) AS lines FROM backfill.lineage_chart('ib.hourly', '2000-01-01', '2833-05-01');
-- one month more
SELECT count(*) FROM backfill.lineage_chart('ib.hourly', '2000-01-01', '2833-05-02');
SELECT count(*) FROM backfill.lineage_chart('ib.hourly', '1000-01-01', '2000-01-01');
-- The widest range PostgreSQL holds: its width overflows int64 microseconds
-- (it used to be read as negative, drawn as one line per day, forever).
SELECT count(*) FROM backfill.lineage_chart('ib.hourly', '4713-01-01 BC', '294276-12-31');

-------------------------------------------------------------------------
-- 2. A cascading plan counts the downstream chunks while widening: a
--    '1 microsecond' chunk under an hourly one (3.6 billion cells per hour)
--    is refused after backfill.max_chunks cells, with nothing written.
-------------------------------------------------------------------------
SET statement_timeout = '2s';
SELECT backfill.plan('ib.hourly', '2026-01-01', '2026-01-02', probe => false, cascade => true);
SET statement_timeout = '20s';
SELECT count(*) AS runs FROM backfill.runs
 WHERE target IN ('ib.hourly'::regclass, 'ib.tiny'::regclass);
-- a smaller downstream chunk that fits still plans
SELECT backfill.register('ib.tiny', 'ts',
    $$SELECT ts, n FROM ib.hourly WHERE ts >= $1 AND ts < $2$$,
    chunk => '1 minute') AS version;
SELECT backfill.plan('ib.hourly', '2026-01-01', '2026-01-01 02:00', probe => false,
                     cascade => true) AS g \gset
SELECT target, (SELECT count(*) FROM backfill.chunks c WHERE c.run_id = r.run_id) AS chunks
  FROM backfill.runs r WHERE group_id = :g ORDER BY run_id;
SELECT backfill.cancel_group(:g) AS cancelled;

-------------------------------------------------------------------------
-- 3. Texts the extension stores or quotes have a length limit (22001):
--    definition labels 1000 characters, notes 10000, cron expressions,
--    quiet hours, strategies, only_chunks and time zone names 1000,
--    measures 10000, sources, ledgers and horizons 1000000.
-------------------------------------------------------------------------
SELECT backfill.register('ib.hourly', 'ts',
    $$SELECT date_trunc('hour', ts) AS ts, count(*)::int AS n
        FROM ib.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    chunk => '1 hour', definition => repeat('x', 10000000));
SELECT backfill.register('ib.hourly', 'ts',
    $$SELECT date_trunc('hour', ts) AS ts, count(*)::int AS n
        FROM ib.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    chunk => '1 hour', definition => repeat(chr(233), 1001));
-- characters, not bytes: 1000 letters é (two bytes each in UTF8) are fine
SELECT backfill.register('ib.hourly', 'ts',
    $$SELECT date_trunc('hour', ts) AS ts, count(*)::int AS n
        FROM ib.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    chunk => '1 hour', definition => repeat(chr(233), 1000)) AS version;
SELECT length(label) AS label_length FROM backfill.definitions
 WHERE target = 'ib.hourly'::regclass AND version = 2;
SELECT backfill.register('ib.hourly', 'ts',
    $$SELECT date_trunc('hour', ts) AS ts, count(*)::int AS n
        FROM ib.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    chunk => '1 hour', measure => 'count(*) + ' || repeat('0 + ', 2500) || '0');
SELECT backfill.register('ib.hourly', 'ts',
    'SELECT ts, v AS n FROM ib.raw WHERE ts >= $1 AND ts < $2 ' || repeat('AND true ', 111112),
    chunk => '1 hour');
SELECT backfill.plan('ib.hourly', '2026-01-01', '2026-01-02', note => repeat('n', 10001));
SELECT backfill.plan('ib.hourly', '2026-01-01', '2026-01-02', only_chunks => repeat('m', 1001));
SELECT backfill.set_strategy('ib.hourly', repeat('s', 1001));
SELECT backfill.in_quiet_hours(repeat('1', 1001), 'UTC', '2026-01-01');
SELECT backfill.in_quiet_hours('22:00-06:00', repeat('z', 1001), '2026-01-01');
SELECT backfill.schedule_check('ib.hourly', repeat('*', 1001));
SELECT backfill.plan('ib.hourly', '2026-01-01', '2026-01-02', probe => false,
                     note => repeat('n', 10000)) AS r \gset
SELECT length(note) AS note_length FROM backfill.runs WHERE run_id = :r;
SELECT backfill.schedule(:r, repeat('*', 1001));
SELECT backfill.schedule(:r, '0 0 30 2 *', quiet_hours => repeat('2', 1001));
SELECT backfill.cancel(:r) AS cancelled;
-- nothing was stored by the refused calls
SELECT count(*) AS runs, max(length(note)) AS longest_note FROM backfill.runs
 WHERE target = 'ib.hourly'::regclass;
SELECT count(*) AS checks FROM backfill.checks WHERE target = 'ib.hourly'::regclass;

-------------------------------------------------------------------------
-- 4. A tolerance must be a finite number: 'NaN' and 'Infinity' would let
--    every chunk pass the ledger gate (|a - b| <= NaN is true in
--    PostgreSQL's ordering).  The catalog refuses them too.
-------------------------------------------------------------------------
SELECT backfill.register('ib.hourly', 'ts',
    $$SELECT date_trunc('hour', ts) AS ts, count(*)::int AS n
        FROM ib.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    chunk => '1 hour', tolerance => 'NaN');
SELECT backfill.register('ib.hourly', 'ts',
    $$SELECT date_trunc('hour', ts) AS ts, count(*)::int AS n
        FROM ib.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    chunk => '1 hour', tolerance => 'Infinity');
SELECT backfill.register('ib.hourly', 'ts',
    $$SELECT date_trunc('hour', ts) AS ts, count(*)::int AS n
        FROM ib.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    chunk => '1 hour', tolerance => '-Infinity');
SELECT tolerance FROM backfill.definitions
 WHERE target = 'ib.hourly'::regclass ORDER BY version;
\set VERBOSITY terse
UPDATE backfill.definitions SET tolerance = 'NaN' WHERE target = 'ib.hourly'::regclass;
UPDATE backfill.targets SET tolerance = 'Infinity' WHERE target = 'ib.hourly'::regclass;
\set VERBOSITY default

RESET statement_timeout;
SELECT backfill.unregister('ib.tiny');
SELECT backfill.unregister('ib.hourly');
SET client_min_messages = warning;
DROP SCHEMA ib CASCADE;
RESET client_min_messages;
