-- The Pagedeck story: three days of zeros in a daily revenue rollup,
-- refilled with a probed run and checked against the payment ledger.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
-- run ids of this file start at 1201, whatever ran before
SELECT setval('backfill.runs_run_id_seq', 1201, false) IS NOT NULL AS seq_set;
CREATE SCHEMA pagedeck;
CREATE TABLE pagedeck.payments (id int, paid_at timestamptz, amount numeric, account text);
INSERT INTO pagedeck.payments
SELECT i, '2024-05-01'::timestamptz + (i % 10) * interval '1 day' + (i % 7) * interval '1 hour',
       (i % 5) * 10 + 5, CASE WHEN i % 13 = 0 THEN 'test' ELSE 'acct' || (i % 4) END
  FROM generate_series(1, 200) i;
CREATE TABLE pagedeck.revenue_daily (day timestamptz PRIMARY KEY, payments int NOT NULL,
                                     revenue numeric NOT NULL);
-- What a correct daily job would have written.
CREATE TABLE pagedeck.truth AS
SELECT date_trunc('day', paid_at) AS day, count(*)::int AS payments, sum(amount) AS revenue
  FROM pagedeck.payments GROUP BY 1;
INSERT INTO pagedeck.revenue_daily SELECT * FROM pagedeck.truth;
-- The job failed Wednesday to Friday (May 8-10) and left zeros.
UPDATE pagedeck.revenue_daily SET payments = 0, revenue = 0
 WHERE day >= '2024-05-08' AND day < '2024-05-11';
SELECT * FROM pagedeck.revenue_daily ORDER BY day;

SELECT backfill.register('pagedeck.revenue_daily', 'day',
    $q$SELECT date_trunc('day', paid_at) AS day, count(*)::int AS payments,
              sum(amount) AS revenue
         FROM pagedeck.payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1$q$,
    definition => 'v1: all payments',
    ledger => 'SELECT count(*) FROM pagedeck.payments WHERE paid_at >= $1 AND paid_at < $2',
    measure => 'sum(payments)');

-- preview: what replacing Wednesday would do; nothing changes.
SELECT md5(string_agg(t::text, ',' ORDER BY day)) AS before_hash FROM pagedeck.revenue_daily t \gset
SELECT * FROM backfill.preview('pagedeck.revenue_daily', '2024-05-08', '2024-05-09');
SELECT md5(string_agg(t::text, ',' ORDER BY day)) = :'before_hash' AS unchanged
  FROM pagedeck.revenue_daily t;
SELECT count(*) AS runs FROM backfill.runs WHERE target = 'pagedeck.revenue_daily'::regclass;

-- Plan the range; nothing runs yet.
SELECT backfill.plan('pagedeck.revenue_daily', '2024-05-08', '2024-05-11',
                     note => 'payments job failed Wed-Fri') AS run_id \gset
SELECT status, probe, definition_version FROM backfill.runs WHERE run_id = :run_id;

-- The first call runs the probe chunk alone.
CALL backfill.run(:run_id);
SELECT status FROM backfill.runs WHERE run_id = :run_id;
SELECT chunk_no, chunk_start, status, attempts, rows_deleted, rows_inserted,
       before_value, after_value, ledger_value, ledger_ok, verdict, strategy,
       executed_by = current_user AS by_me, executed_via,
       started_at <= finished_at AS timed, error_sqlstate
  FROM backfill.chunks WHERE run_id = :run_id ORDER BY chunk_no;
-- Inspect: Wednesday is back, Thursday and Friday still zero.
SELECT * FROM pagedeck.revenue_daily WHERE day >= '2024-05-08' ORDER BY day;

-- The next call runs the rest and finishes the run.
CALL backfill.run(:run_id);
SELECT status, finished_at IS NOT NULL AS finished FROM backfill.runs WHERE run_id = :run_id;
SELECT chunk_no, status, attempts, rows_deleted, rows_inserted, before_value,
       after_value, ledger_value, verdict
  FROM backfill.chunks WHERE run_id = :run_id ORDER BY chunk_no;
-- The table now equals what a correct run would have written.
SELECT count(*) AS differences FROM (
    (SELECT * FROM pagedeck.revenue_daily EXCEPT SELECT * FROM pagedeck.truth)
    UNION ALL
    (SELECT * FROM pagedeck.truth EXCEPT SELECT * FROM pagedeck.revenue_daily)) d;
-- A finished run does nothing more.
CALL backfill.run(:run_id);

-- Idempotency: backfill the whole range twice, in one call each; the
-- table is identical after each.
SELECT md5(string_agg(t::text, ',' ORDER BY day)) AS good_hash FROM pagedeck.revenue_daily t \gset
CALL backfill.backfill('pagedeck.revenue_daily', '2024-05-01', '2024-05-11', chunk => '5 days',
                       note => 'rerun 1');
SELECT md5(string_agg(t::text, ',' ORDER BY day)) = :'good_hash' AS same_table
  FROM pagedeck.revenue_daily t;
CALL backfill.backfill('pagedeck.revenue_daily', '2024-05-01', '2024-05-11', chunk => '5 days',
                       note => 'rerun 2');
SELECT md5(string_agg(t::text, ',' ORDER BY day)) = :'good_hash' AS same_table
  FROM pagedeck.revenue_daily t;
SELECT r.note, r.status, r.probe, c.chunk_no, c.rows_deleted, c.rows_inserted,
       c.before_value, c.after_value, c.verdict
  FROM backfill.runs r JOIN backfill.chunks c USING (run_id)
 WHERE r.note LIKE 'rerun%' ORDER BY r.run_id, c.chunk_no;

-- A new definition: test accounts are excluded (and from the ledger too).
SELECT backfill.register('pagedeck.revenue_daily', 'day',
    $q$SELECT date_trunc('day', paid_at) AS day, count(*)::int AS payments,
              sum(amount) AS revenue
         FROM pagedeck.payments WHERE paid_at >= $1 AND paid_at < $2
          AND account <> 'test' GROUP BY 1$q$,
    definition => 'v2: excludes test accounts',
    ledger => $q$SELECT count(*) FROM pagedeck.payments WHERE paid_at >= $1 AND paid_at < $2
                  AND account <> 'test'$q$,
    measure => 'sum(payments)');
SELECT backfill.plan('pagedeck.revenue_daily', '2024-05-01', '2024-05-11', chunk => '2 days',
                     note => 'recalculate under v2', probe => false) AS v2run \gset
CALL backfill.run(:v2run);
SELECT r.definition_version, d.label, r.status
  FROM backfill.runs r JOIN backfill.definitions d
    ON d.target = r.target AND d.version = r.definition_version
 WHERE r.run_id = :v2run;
-- every changed number is explained by its chunk's before/after figures
SELECT chunk_no, chunk_start, before_value, after_value, after_value - before_value AS delta,
       ledger_value, verdict
  FROM backfill.chunks WHERE run_id = :v2run ORDER BY chunk_no;
SELECT sum(payments) AS v2_total,
       (SELECT count(*) FROM pagedeck.payments WHERE account <> 'test') AS expected
  FROM pagedeck.revenue_daily;

-- The run's TimeZone is applied to every chunk: a run planned in UTC
-- writes UTC days even when it is executed from a session in Tokyo.
SELECT backfill.plan('pagedeck.revenue_daily', '2024-05-01', '2024-05-11', chunk => '5 days',
                     probe => false, note => 'utc plan') AS utcrun \gset
SET TimeZone = 'Asia/Tokyo';
CALL backfill.run(:utcrun);
SHOW TimeZone;
SET TimeZone = 'UTC';
SELECT timezone FROM backfill.runs WHERE run_id = :utcrun;
SELECT count(*) AS days, count(*) FILTER (WHERE day = date_trunc('day', day)) AS utc_midnights
  FROM pagedeck.revenue_daily;

SELECT backfill.unregister('pagedeck.revenue_daily');
DROP SCHEMA pagedeck CASCADE;
