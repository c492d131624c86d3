-- The ledger gate inside each chunk: a correct backfill reconciles ok
-- against the ledger; a source that silently drops payments fails the gate
-- on the probe chunk and leaves the target untouched; the tolerance edges.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
-- run ids depend on the tests before this one: keep the NOTICEs that name
-- them quiet, and show only the SQLSTATE of a failing CALL (the chunk's
-- recorded error shows the message)
SET client_min_messages = warning;
CREATE SCHEMA gate;

-- The payment processor's ledger and the raw payments: 10 days of January,
-- 24 payments a day (one per account and hour), amounts 10.00 .. 33.00.
CREATE TABLE gate.raw_payments (ts timestamptz NOT NULL, account int NOT NULL,
                                amount numeric(12,2) NOT NULL);
INSERT INTO gate.raw_payments
SELECT '2024-01-01'::timestamptz + d * interval '1 day' + h * interval '1 hour',
       h, 10 + h
  FROM generate_series(0, 9) d, generate_series(0, 23) h;
CREATE TABLE gate.psp_ledger (booked_at timestamptz NOT NULL,
                              amount numeric(12,2) NOT NULL);
INSERT INTO gate.psp_ledger SELECT ts, amount FROM gate.raw_payments;

-- The target: right, except that the broken job left Jan 4..6 with zeros.
CREATE TABLE gate.payments (LIKE gate.raw_payments);
INSERT INTO gate.payments
SELECT ts, account,
       CASE WHEN ts >= '2024-01-04' AND ts < '2024-01-07' THEN 0 ELSE amount END
  FROM gate.raw_payments;

SELECT backfill.register('gate.payments', 'ts',
         'SELECT ts, account, amount FROM gate.raw_payments WHERE ts >= $1 AND ts < $2',
         definition => 'v1',
         ledger => 'SELECT sum(amount) FROM gate.psp_ledger WHERE booked_at >= $1 AND booked_at < $2',
         measure => 'sum(amount)');

-- Before the repair, check() sees the three zero days as ledger mismatches
-- (and as outliers against their neighbours).
SELECT chunk_no, chunk_start, target_value, ledger_value, ledger_ok,
       neighbor_median, neighbor_ok, verdict
  FROM backfill.check('gate.payments', '2024-01-03', '2024-01-08');

-- A correct backfill of Jan 4..6: every chunk passes the gate, and
-- reconcile says ok against the ledger and the neighbours.
CALL backfill.backfill('gate.payments', '2024-01-04', '2024-01-07', note => 'zeros');
SELECT max(run_id) AS good_run FROM backfill.runs WHERE target = 'gate.payments'::regclass \gset
SELECT status FROM backfill.runs WHERE run_id = :good_run;
-- the gate recorded its figures on each chunk
SELECT chunk_no, status, after_value, ledger_value, verdict
  FROM backfill.chunks WHERE run_id = :good_run ORDER BY chunk_no;
SELECT chunk_no, chunk_start, chunk_end, status, target_value, ledger_value,
       ledger_ok, neighbor_median, neighbor_ok, verdict
  FROM backfill.reconcile(:good_run);
-- ... and reconcile stored its results on the chunks
SELECT chunk_no, ledger_value, ledger_ok, neighbor_median, neighbor_ok, verdict
  FROM backfill.chunks WHERE run_id = :good_run ORDER BY chunk_no;

-- A new definition whose source silently drops account 13's payments.
SELECT backfill.register('gate.payments', 'ts',
         'SELECT ts, account, amount FROM gate.raw_payments WHERE ts >= $1 AND ts < $2 AND account <> 13',
         definition => 'v2: drops account 13 by mistake',
         ledger => 'SELECT sum(amount) FROM gate.psp_ledger WHERE booked_at >= $1 AND booked_at < $2',
         measure => 'sum(amount)');
CREATE TABLE gate.before AS SELECT * FROM gate.payments;
SELECT backfill.plan('gate.payments', '2024-01-02', '2024-01-09', note => 'v2 rollout') AS bad_run \gset
-- the probe chunk fails the gate (23514), and the run stops there
\set VERBOSITY sqlstate
CALL backfill.run(:bad_run);
\set VERBOSITY terse
SELECT status FROM backfill.runs WHERE run_id = :bad_run;
SELECT chunk_no, status, attempts, rows_inserted, ledger_value, verdict,
       error_sqlstate, error_message
  FROM backfill.chunks WHERE run_id = :bad_run ORDER BY chunk_no;
-- the target is exactly what it was: nothing of the bad chunk was kept
SELECT (SELECT count(*) FROM (TABLE gate.payments EXCEPT ALL TABLE gate.before) a) AS added,
       (SELECT count(*) FROM (TABLE gate.before EXCEPT ALL TABLE gate.payments) r) AS removed;
-- reconcile reports the chunks that have not run as not_run, and leaves
-- the gate's record of the failed chunk as it was
SELECT chunk_no, status, target_value, ledger_value, ledger_ok, verdict
  FROM backfill.reconcile(:bad_run, include_not_run => true);
SELECT chunk_no, ledger_value, verdict
  FROM backfill.chunks WHERE run_id = :bad_run AND chunk_no = 1;
SELECT backfill.cancel(:bad_run);

-- Tolerance edges.  A ledger of daily totals: 1000.00 a day.  The source
-- yields 1010.00 on Jan 1 (exactly 1 % over), 1010.01 on Jan 2 (just
-- beyond), 990.00 on Jan 3 (exactly 1 % under), 989.99 on Jan 4.
CREATE TABLE gate.totals (day timestamptz NOT NULL, total numeric NOT NULL);
CREATE TABLE gate.day_totals (day timestamptz NOT NULL, total numeric NOT NULL);
INSERT INTO gate.totals
SELECT '2024-01-01'::timestamptz + d * interval '1 day', 1000.00
  FROM generate_series(0, 3) d;
CREATE TABLE gate.feed (day timestamptz NOT NULL, total numeric NOT NULL);
INSERT INTO gate.feed VALUES ('2024-01-01', 1010.00), ('2024-01-02', 1010.01),
                             ('2024-01-03', 990.00), ('2024-01-04', 989.99);
SELECT backfill.register('gate.day_totals', 'day',
         'SELECT day, total FROM gate.feed WHERE day >= $1 AND day < $2',
         ledger => 'SELECT sum(total) FROM gate.totals WHERE day >= $1 AND day < $2',
         measure => 'sum(total)', tolerance => 0.01);
-- exactly at the tolerance passes
CALL backfill.backfill('gate.day_totals', '2024-01-01', '2024-01-02');
\set VERBOSITY sqlstate
-- just beyond fails the gate
CALL backfill.backfill('gate.day_totals', '2024-01-02', '2024-01-03');
CALL backfill.backfill('gate.day_totals', '2024-01-03', '2024-01-04');
CALL backfill.backfill('gate.day_totals', '2024-01-04', '2024-01-05');
\set VERBOSITY terse
SELECT r.range_start, r.status AS run_status, c.status, c.after_value,
       c.ledger_value, c.verdict, c.error_sqlstate
  FROM backfill.runs r JOIN backfill.chunks c USING (run_id)
 WHERE r.target = 'gate.day_totals'::regclass
 ORDER BY r.range_start;
-- only the passing days were written
SELECT day, total FROM gate.day_totals ORDER BY day;
SELECT backfill.cancel(run_id) FROM backfill.runs
 WHERE target = 'gate.day_totals'::regclass AND status = 'failed'
 ORDER BY run_id;

-- With ledger_gate => false a disagreement is recorded, not enforced.
SELECT backfill.register('gate.day_totals', 'day',
         'SELECT day, total FROM gate.feed WHERE day >= $1 AND day < $2',
         ledger => 'SELECT sum(total) FROM gate.totals WHERE day >= $1 AND day < $2',
         measure => 'sum(total)', tolerance => 0.01, ledger_gate => false);
CALL backfill.backfill('gate.day_totals', '2024-01-02', '2024-01-03');
SELECT c.status, c.after_value, c.ledger_value, c.ledger_ok, c.verdict
  FROM backfill.runs r JOIN backfill.chunks c USING (run_id)
 WHERE r.target = 'gate.day_totals'::regclass AND r.status = 'done'
   AND r.range_start = '2024-01-02';
SELECT day, total FROM gate.day_totals ORDER BY day;
