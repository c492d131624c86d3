-- doc/lineage.md: the story of sql/20_history.sql (runs 1 and 2 of
-- r20.payments: an outage repaired under v1, then Jan 3 12:00 - Jan 6
-- recomputed under v2 in twelve-hour chunks), then the quick start's tables
-- with run 3 probed over 1-29 November and run 4 planned after it.
SET client_min_messages = warning;
\i t/doc/pagedeck.sql
\i t/doc/pagedeck_register.sql
CREATE SCHEMA r20;
-- Raw events: four per day from Jan 1 to Jan 7, every fourth from a test account.
CREATE TABLE r20.raw_payments (ts timestamptz NOT NULL, account int NOT NULL,
                               amount numeric NOT NULL, is_test bool NOT NULL);
INSERT INTO r20.raw_payments
SELECT '2024-01-01'::timestamptz + i * interval '6 hours', i % 5, 10 + i, i % 4 = 1
  FROM generate_series(0, 27) i;
-- The target: the daily job copied Jan 1-2 and Jan 6-7, and left a zero
-- placeholder row for each of Jan 3, 4 and 5.
CREATE TABLE r20.payments (ts timestamptz NOT NULL, account int NOT NULL, amount numeric NOT NULL);
INSERT INTO r20.payments
SELECT ts, account, amount FROM r20.raw_payments
 WHERE ts < '2024-01-03' OR ts >= '2024-01-06';
INSERT INTO r20.payments
SELECT d, 0, 0 FROM generate_series('2024-01-03'::timestamptz, '2024-01-05', '1 day') d;
-- The source keeps raw data only from Jan 2 on: Jan 1 is no_source.
SELECT backfill.register('r20.payments', 'ts',
    source => 'SELECT ts, account, amount FROM r20.raw_payments WHERE ts >= $1 AND ts < $2',
    definition => 'v1: all accounts',
    source_horizon => 'SELECT ''2024-01-02 00:00+00''::timestamptz',
    measure => 'sum(amount)') AS version;
SELECT backfill.plan('r20.payments', '2024-01-01', '2024-01-08',
                     note => 'daily job outage Jan 3-5', probe => false) AS run_a \gset
CALL backfill.run(:run_a);
SELECT backfill.register('r20.payments', 'ts',
    source => 'SELECT ts, account, amount FROM r20.raw_payments WHERE ts >= $1 AND ts < $2 AND NOT is_test',
    definition => 'v2: excludes test accounts',
    source_horizon => 'SELECT ''2024-01-02 00:00+00''::timestamptz',
    measure => 'sum(amount)') AS version;
SELECT backfill.plan('r20.payments', '2024-01-03 12:00', '2024-01-06',
                     chunk => '12 hours', note => 'v2 for the repaired days',
                     probe => false) AS run_b \gset
CALL backfill.run(:run_b);
SELECT backfill.plan('daily_revenue', '2026-11-01', '2026-11-29');
CALL backfill.run(3);
SELECT backfill.plan('daily_revenue', '2026-11-29', '2026-12-01');
RESET client_min_messages;
