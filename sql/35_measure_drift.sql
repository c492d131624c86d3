-- Measures and horizons are composed and evaluated by one function each,
-- so what register accepts works the same in chunks, reconcile and check:
-- a measure ending in a "--" comment, a measure naming the rows' alias
-- (backfill_rows), and a horizon query of a domain over timestamptz.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
CREATE SCHEMA md;
CREATE TABLE md.src (ts timestamptz NOT NULL, amount numeric NOT NULL);
INSERT INTO md.src
SELECT t, 1 FROM generate_series('2024-01-01 00:00+00'::timestamptz,
                                 '2024-01-04 23:00+00', '1 hour') AS t;
CREATE TABLE md.daily (day timestamptz NOT NULL, amount numeric NOT NULL);

-- 1. a trailing comment in the measure
SELECT backfill.register('md.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount) AS amount
        FROM md.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    measure => 'sum(amount) -- the day''s total') AS version;
SET client_min_messages = warning;
SELECT backfill.plan('md.daily', '2024-01-01', '2024-01-04', probe => false) AS r1 \gset
CALL backfill.run(:r1);
RESET client_min_messages;
SELECT chunk_no, after_value FROM backfill.chunks WHERE run_id = :r1 ORDER BY chunk_no;
SELECT chunk_no, status, target_value, verdict FROM backfill.reconcile(:r1) ORDER BY chunk_no;
SELECT chunk_no, target_value, verdict
  FROM backfill.check('md.daily', '2024-01-01', '2024-01-04') ORDER BY chunk_no;

-- 2. a measure naming the alias of the rows it reads
SELECT backfill.register('md.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount) AS amount
        FROM md.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    measure => 'sum(backfill_rows.amount)') AS version;
SET client_min_messages = warning;
SELECT backfill.plan('md.daily', '2024-01-01', '2024-01-04', probe => false) AS r2 \gset
CALL backfill.run(:r2);
RESET client_min_messages;
SELECT chunk_no, before_value, after_value FROM backfill.chunks WHERE run_id = :r2 ORDER BY chunk_no;
SELECT chunk_no, status, target_value, verdict FROM backfill.reconcile(:r2) ORDER BY chunk_no;
SELECT chunk_no, target_value, verdict
  FROM backfill.check('md.daily', '2024-01-01', '2024-01-04') ORDER BY chunk_no;

-- 3. a horizon of a domain type: plan and check read it alike (chunks
--    before 2024-01-02 have no source data)
CREATE DOMAIN md.instant AS timestamptz;
SELECT backfill.register('md.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount) AS amount
        FROM md.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    source_horizon => $$SELECT '2024-01-02 00:00+00'::md.instant$$,
    measure => 'sum(amount)') AS version;
SELECT backfill.plan('md.daily', '2024-01-01', '2024-01-04', probe => false) AS r3 \gset
SELECT chunk_no, status FROM backfill.chunks WHERE run_id = :r3 ORDER BY chunk_no;
SELECT backfill.cancel(:r3) AS cancelled;
SELECT chunk_no, chunk_start, verdict
  FROM backfill.check('md.daily', '2024-01-01', '2024-01-04') ORDER BY chunk_no;

SELECT backfill.unregister('md.daily');
DROP SCHEMA md CASCADE;
