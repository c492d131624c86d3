-- The read side of runs: backfill.history, backfill.lineage() and
-- backfill.changes() after real runs (register, plan, run).  The story:
-- a payments table whose daily job left zeros for three days, repaired by
-- a backfill under definition v1, then part of the range recomputed under
-- v2 (test accounts excluded), whose changes() must explain every delta.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO';
SET client_min_messages = warning;
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
-- Nothing ran yet: history is empty for this run.
SELECT count(*) FROM backfill.history WHERE run_id = :run_a;
CALL backfill.run(:run_a);
SELECT status, finished_at IS NOT NULL AS finished FROM backfill.runs WHERE run_id = :run_a;
-- One row per finished chunk: the no_source chunk and six done ones, with
-- the definition, the figures, who and how, and the run's note.
SELECT target, chunk_no, chunk_start, chunk_end, status, definition_version,
       definition_label, rows_deleted, rows_inserted, before_value, after_value,
       executed_by = current_user AS by_me, executed_via, note,
       started_at <= finished_at AS timed
  FROM backfill.history WHERE run_id = :run_a ORDER BY chunk_no;
-- The target now equals the raw data from Jan 2 on; Jan 1 was left alone.
SELECT count(*) AS missing FROM (
    SELECT ts, account, amount FROM r20.raw_payments WHERE ts >= '2024-01-02'
    EXCEPT ALL
    SELECT ts, account, amount FROM r20.payments) x;
SELECT count(*) AS extra FROM (
    SELECT ts, account, amount FROM r20.payments
    EXCEPT ALL
    SELECT ts, account, amount FROM r20.raw_payments) x;
-- The rows of the history agree with the target, chunk by chunk.
SELECT h.chunk_no, h.after_value = (SELECT sum(p.amount) FROM r20.payments p
                                     WHERE p.ts >= h.chunk_start AND p.ts < h.chunk_end) AS agrees
  FROM backfill.history h WHERE h.run_id = :run_a AND h.status = 'done' ORDER BY 1;

-- changes() of run a: the zero days had a before figure of 0, so their
-- delta_pct is NULL; Jan 2 and Jan 6-7 did not move.
SELECT * FROM backfill.changes(:run_a);

-- Definition v2 excludes test accounts; recompute Jan 3 12:00 - Jan 6 in
-- twelve-hour chunks.
SELECT backfill.register('r20.payments', 'ts',
    source => 'SELECT ts, account, amount FROM r20.raw_payments WHERE ts >= $1 AND ts < $2 AND NOT is_test',
    definition => 'v2: excludes test accounts',
    source_horizon => 'SELECT ''2024-01-02 00:00+00''::timestamptz',
    measure => 'sum(amount)') AS version;
SELECT backfill.plan('r20.payments', '2024-01-03 12:00', '2024-01-06',
                     chunk => '12 hours', note => 'v2 for the repaired days',
                     probe => false) AS run_b \gset
CALL backfill.run(:run_b);
-- changes(): before, after, delta and delta_pct per chunk.
SELECT * FROM backfill.changes(:run_b);
-- Every delta is explained: it is exactly minus the test accounts' amounts
-- in that chunk, and before/after are the v1 and v2 figures.
SELECT c.chunk_no,
       c.delta = -coalesce((SELECT sum(amount) FROM r20.raw_payments r
                             WHERE r.ts >= c.chunk_start AND r.ts < c.chunk_end
                               AND r.is_test), 0) AS delta_is_test_accounts,
       c.before_value = (SELECT sum(amount) FROM r20.raw_payments r
                          WHERE r.ts >= c.chunk_start AND r.ts < c.chunk_end) AS before_is_v1,
       c.after_value = (SELECT sum(amount) FROM r20.raw_payments r
                         WHERE r.ts >= c.chunk_start AND r.ts < c.chunk_end
                           AND NOT r.is_test) AS after_is_v2,
       c.delta_pct = round(100 * c.delta / c.before_value, 2) AS pct_right
  FROM backfill.changes(:run_b) c ORDER BY 1;
-- The history of run b carries the v2 label.
SELECT DISTINCT definition_version, definition_label, note
  FROM backfill.history WHERE run_id = :run_b;

-- Lineage: adjacent chunks merge into ranges; run b (latest) wins where it
-- overlaps run a; the no_source day is shown.
SELECT range_start, range_end, state, definition_version, label,
       CASE run_id WHEN :run_a THEN 'a' WHEN :run_b THEN 'b' END AS run,
       finished_at IS NOT NULL AS finished, executed_by = current_user AS by_me
  FROM backfill.lineage('r20.payments');
-- Clipped to a window that cuts ranges in the middle.
SELECT range_start, range_end, state, definition_version,
       CASE run_id WHEN :run_a THEN 'a' WHEN :run_b THEN 'b' END AS run
  FROM backfill.lineage('r20.payments', '2024-01-01 06:00', '2024-01-04');
-- Only the start bound.
SELECT range_start, range_end, state,
       CASE run_id WHEN :run_a THEN 'a' WHEN :run_b THEN 'b' END AS run
  FROM backfill.lineage('r20.payments', range_start => '2024-01-05 18:00');
-- A window outside every run, an empty and a reversed window: no rows.
SELECT count(*) FROM backfill.lineage('r20.payments', '2023-01-01', '2023-02-01');
SELECT count(*) FROM backfill.lineage('r20.payments', '2024-01-03', '2024-01-03');
SELECT count(*) FROM backfill.lineage('r20.payments', '2024-01-04', '2024-01-03');
-- A NULL argument is refused (22004); lineage was STRICT until 0.2.0.
SELECT count(*) FROM backfill.lineage(NULL);
-- A target never backfilled has no lineage.
CREATE TABLE r20.untouched (ts timestamptz);
SELECT count(*) FROM backfill.lineage('r20.untouched');

-- A third run over the whole range under v2 replaces both earlier runs in
-- the lineage, and run a's history stays as it was.
SELECT backfill.plan('r20.payments', '2024-01-01', '2024-01-08',
                     note => 'all of it under v2', probe => false) AS run_c \gset
CALL backfill.run(:run_c);
SELECT range_start, range_end, state, definition_version, label,
       run_id = :run_c AS is_c
  FROM backfill.lineage('r20.payments');
SELECT count(*) AS run_a_chunks FROM backfill.history WHERE run_id = :run_a;

-- changes() of a run that does not exist, and of NULL.
SELECT * FROM backfill.changes(-1);
SELECT * FROM backfill.changes(NULL);
