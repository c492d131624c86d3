-- Messages that point the right way (issue 29, item 9): depend on a source
-- table that other jobs fill says to watch it (it said to register it);
-- an error in a measure or a ledger query names which setting is wrong,
-- when registered and when a chunk runs it; an unknown run id says where
-- runs are listed.  (The silent cases of the item, the emptying source and
-- the watch of a table backfill never built, are sql/93 and sql/91; the
-- lagging ledger's hint is sql/93.)
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY default
SELECT setval('backfill.runs_run_id_seq', 9501, false) IS NOT NULL AS seq_set;
SET backfill.notice_timing = off;
CREATE SCHEMA ms;
CREATE TABLE ms.payments (paid_at timestamptz NOT NULL, amount int NOT NULL);
INSERT INTO ms.payments SELECT '2024-05-01 00:00+00'::timestamptz + i * interval '6 hours', 10
  FROM generate_series(0, 7) i;
CREATE TABLE ms.daily (day timestamptz NOT NULL, total int NOT NULL);
SELECT backfill.register('ms.daily', 'day',
    $$SELECT date_trunc('day', paid_at) AS day, sum(amount)::int AS total
        FROM ms.payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1$$) AS version;

-- depend on the raw table: it is not a target; watch was meant
SELECT backfill.depend('ms.daily', 'ms.payments');

-- A typo in the measure, in the ledger query: the error names the setting
-- (the measure's hint names the column as the table has it).
SELECT backfill.register('ms.daily', 'day',
    $$SELECT date_trunc('day', paid_at) AS day, sum(amount)::int AS total
        FROM ms.payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1$$,
    measure => 'sum(totl)');
SELECT backfill.register('ms.daily', 'day',
    $$SELECT date_trunc('day', paid_at) AS day, sum(amount)::int AS total
        FROM ms.payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1$$,
    measure => 'sum(total)',
    ledger => $$SELECT sum(amount) FROM ms.ledgr WHERE day >= $1 AND day < $2$$);
SELECT backfill.register('ms.daily', 'day',
    $$SELECT date_trunc('day', paid_at) AS day, sum(amount)::int AS total
        FROM ms.payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1$$,
    measure => 'sum(total) +');

-- An error raised by the measure or the ledger while a chunk runs names it
-- too (in the chunk's recorded error as well).
SELECT backfill.register('ms.daily', 'day',
    $$SELECT date_trunc('day', paid_at) AS day, sum(amount)::int AS total
        FROM ms.payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1$$,
    measure => 'sum(total) / min(total - total)') AS version;
CALL backfill.backfill('ms.daily', '2024-05-01', '2024-05-02');
SELECT error_message, error_cause FROM backfill.chunks WHERE run_id = 9501;
SELECT backfill.cancel(9501) AS cancelled;
SELECT backfill.register('ms.daily', 'day',
    $$SELECT date_trunc('day', paid_at) AS day, sum(amount)::int AS total
        FROM ms.payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1$$,
    measure => 'sum(total)',
    ledger => $$SELECT sum(amount) / 0 FROM ms.payments WHERE paid_at >= $1 AND paid_at < $2$$) AS version;
CALL backfill.backfill('ms.daily', '2024-05-01', '2024-05-02');
SELECT error_message, error_cause FROM backfill.chunks WHERE run_id = 9502;
SELECT backfill.cancel(9502) AS cancelled;

-- An unknown run: where the runs are.
SELECT backfill.revert(9599);
CALL backfill.run(9599);
SELECT * FROM backfill.reconcile(9599);
RESET backfill.notice_timing;

-- Clean up.
SELECT backfill.unregister('ms.daily');
DROP SCHEMA ms CASCADE;
