-- bench/reconcile.sql: what backfill.reconcile costs on a year of daily
-- chunks, against the cheapest hand-written comparison on the same data.
--
--   psql -X -d DB -f bench/reconcile.sql                 (365 x 20000 rows)
--   psql -X -d DB -v rows_per_day=2000 -f bench/reconcile.sql   (quicker)
--
-- Needs the backfill extension in DB; creates and drops schema bench_rec.
--
-- The data: bench_rec.payments, the target, 365 daily chunks of
-- rows_per_day rows each (plus the 3 days on either side that reconcile
-- reads as neighbours), filled by a real backfill (register + plan + run)
-- from bench_rec.raw; bench_rec.ledger, the payment processor's own
-- per-payment log, indexed on its time column.  The measure is
-- sum(amount), the ledger SELECT sum(amount) FROM ledger WHERE ts in
-- [$1, $2).
--
-- What is timed (median of 3, alternating, in the same session):
--   reconcile: SELECT * FROM backfill.reconcile(run) -- one grouped pass
--              over the target, the ledger once per chunk (prepared), and
--              one UPDATE of the 365 chunk rows;
--   baseline:  SELECT date_trunc('day', ts), sum(amount) FROM payments
--              ... GROUP BY 1, plus the same GROUP BY over the ledger table:
--              what a person who knows both tables would write by hand.
-- The last line is the ratio reconcile / baseline (goal: at most 1.5).

\set ON_ERROR_STOP on
\if :{?rows_per_day}
\else
\set rows_per_day 20000
\endif

SET client_min_messages = warning;
SET TimeZone = 'UTC';
DROP SCHEMA IF EXISTS bench_rec CASCADE;
CREATE SCHEMA bench_rec;

-- raw payments for 2023-12-29 .. 2025-01-03 (the year and its neighbours)
CREATE TABLE bench_rec.raw (
    ts      timestamptz NOT NULL,
    account integer NOT NULL,
    amount  numeric(12,2) NOT NULL
);
INSERT INTO bench_rec.raw
SELECT d + (i * 86400.0 / :rows_per_day) * interval '1 second',
       i % 5000, ((i * 7919) % 10000) / 100.0
  FROM generate_series('2023-12-29'::timestamptz, '2025-01-03', '1 day') d,
       generate_series(0, :rows_per_day - 1) i;
CREATE INDEX ON bench_rec.raw (ts);

CREATE TABLE bench_rec.ledger AS SELECT ts, amount FROM bench_rec.raw;
CREATE INDEX ON bench_rec.ledger (ts);

-- the target: the neighbour days are already there, the year is empty
CREATE TABLE bench_rec.payments (LIKE bench_rec.raw);
INSERT INTO bench_rec.payments
SELECT * FROM bench_rec.raw
 WHERE ts < '2024-01-01' OR ts >= '2024-12-31';
CREATE INDEX ON bench_rec.payments (ts);

SELECT backfill.register('bench_rec.payments', 'ts',
         'SELECT ts, account, amount FROM bench_rec.raw WHERE ts >= $1 AND ts < $2',
         chunk => '1 day',
         ledger => 'SELECT sum(amount) FROM bench_rec.ledger WHERE ts >= $1 AND ts < $2',
         measure => 'sum(amount)') AS version;
SELECT backfill.plan('bench_rec.payments', '2024-01-01', '2024-12-31',
                     probe => false, note => 'bench') AS run_id \gset
SET client_min_messages = warning;
\echo backfilling 365 chunks ...
CALL backfill.run(:run_id);
SELECT status, count(*) AS chunks FROM backfill.chunks
 WHERE run_id = :run_id GROUP BY status;
VACUUM ANALYZE bench_rec.payments;
VACUUM ANALYZE bench_rec.ledger;

CREATE TEMP TABLE timings (what text, ms float8);

DO $$
DECLARE
    run bigint := (SELECT max(run_id) FROM backfill.runs
                    WHERE target = 'bench_rec.payments'::regclass);
    t0 timestamptz;
    i int;
BEGIN
    FOR i IN 1..3 LOOP
        t0 := clock_timestamp();
        PERFORM count(*) FROM backfill.reconcile(run);
        INSERT INTO timings
        VALUES ('reconcile', extract(epoch FROM clock_timestamp() - t0) * 1000);

        t0 := clock_timestamp();
        PERFORM count(*) FROM (
            SELECT date_trunc('day', ts), sum(amount)
              FROM bench_rec.payments
             WHERE ts >= '2024-01-01' AND ts < '2024-12-31'
             GROUP BY 1) s;
        PERFORM count(*) FROM (
            SELECT date_trunc('day', ts), sum(amount)
              FROM bench_rec.ledger
             WHERE ts >= '2024-01-01' AND ts < '2024-12-31'
             GROUP BY 1) s;
        INSERT INTO timings
        VALUES ('baseline', extract(epoch FROM clock_timestamp() - t0) * 1000);
    END LOOP;
END
$$;

SELECT verdict, count(*) AS chunks
  FROM backfill.reconcile((SELECT max(run_id) FROM backfill.runs
                            WHERE target = 'bench_rec.payments'::regclass))
 GROUP BY verdict;

SELECT what,
       round(percentile_disc(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) AS median_ms,
       round(min(ms)::numeric, 1) AS min_ms,
       round(max(ms)::numeric, 1) AS max_ms
  FROM timings GROUP BY what ORDER BY what DESC;

SELECT round(((SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY ms)
                 FROM timings WHERE what = 'reconcile')
            / (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY ms)
                 FROM timings WHERE what = 'baseline'))::numeric, 2)
       AS "ratio reconcile/baseline (goal <= 1.5)";

-- leave nothing behind
SELECT backfill.unregister('bench_rec.payments');
DROP SCHEMA bench_rec CASCADE;
