-- backfill demo: Pagedeck's three days of zeros, repaired end to end.
\set ECHO queries
\pset footer off
SET client_min_messages = notice;
SET DateStyle = ISO;
SET TimeZone = 'UTC';

\echo
\echo '== 1. The data: payments, the payment system''s ledger, and a daily revenue rollup'
\echo '==    whose nightly job failed for three days and left zeros.'
CREATE EXTENSION pg_cron;
CREATE EXTENSION backfill;

-- The outage: Wednesday to Friday of last week (relative to today, so the
-- retention arithmetic later on is real).
SELECT current_date - 7 - ((extract(isodow FROM current_date)::int + 4) % 7) AS wed \gset
SELECT :'wed'::date + 3 AS sat, :'wed'::date - 7 AS first_day \gset

CREATE TABLE payments (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    paid_at  timestamptz NOT NULL,
    account  text NOT NULL,
    amount   numeric(10,2) NOT NULL
);
CREATE INDEX ON payments (paid_at);
-- 200 + 10 x weekday payments a day, every twentieth from a test account
-- (doc/quickstart.md makes the same rows on fixed dates).
INSERT INTO payments (paid_at, account, amount)
SELECT d + n * interval '5 minutes',
       CASE WHEN n % 20 = 0 THEN 'test-' ELSE 'acct-' END || n % 50,
       5 + n % 95
  FROM generate_series(:'first_day'::date, current_date - 1, interval '1 day') AS d,
       generate_series(1, 200 + 10 * extract(dow FROM d)::int) AS n;

-- The payment system's own ledger: an independent count per day.
CREATE TABLE payment_ledger AS
SELECT paid_at::date AS day, count(*) AS payments, sum(amount) AS amount
  FROM payments GROUP BY 1;

-- The rollup the dashboards read.  The job that fills it runs every night.
CREATE TABLE daily_revenue (
    day       date PRIMARY KEY,
    payments  bigint NOT NULL,
    revenue   numeric(12,2) NOT NULL
);
INSERT INTO daily_revenue
SELECT paid_at::date, count(*), sum(amount) FROM payments GROUP BY 1;
-- ... except that it failed Wednesday to Friday of last week and wrote zeros.
UPDATE daily_revenue SET payments = 0, revenue = 0
 WHERE day >= :'wed' AND day < :'sat';
-- The monthly rollup the finance report reads, built every night from the
-- daily one: it summed the zeros too.
CREATE TABLE monthly_revenue (
    month     date PRIMARY KEY,
    payments  bigint NOT NULL,
    revenue   numeric(12,2) NOT NULL
);
INSERT INTO monthly_revenue
SELECT date_trunc('month', day)::date, sum(payments), sum(revenue) FROM daily_revenue GROUP BY 1;

SELECT day, to_char(day, 'Dy') AS dow, payments, revenue
  FROM daily_revenue ORDER BY day;

\echo
\echo '== 2. Register the rollup: how to rebuild a range, and what to check it against.'
SELECT backfill.register(
    'daily_revenue', 'day',
    source      => $$SELECT paid_at::date AS day, count(*) AS payments, sum(amount) AS revenue
                      FROM public.payments
                     WHERE paid_at >= $1 AND paid_at < $2
                     GROUP BY 1$$,
    definition  => 'v1: every payment counts',
    ledger      => $$SELECT sum(payments) FROM public.payment_ledger
                     WHERE day >= $1 AND day < $2$$,
    measure     => 'sum(payments)') AS definition_version;

\echo
\echo '== 3. Fix the range, and see what replacing it would do (computed, then rolled back).'
SELECT * FROM backfill.preview('daily_revenue', :'wed', :'sat');

\echo
\echo '== 4. Plan it: three daily chunks, nothing runs yet.'
SELECT backfill.plan('daily_revenue', :'wed', :'sat',
                     note => 'payments job failed Wed-Fri; fixed by Theo') AS run_id \gset
SELECT chunk_no, chunk_start::date, chunk_end::date, status
  FROM backfill.chunks WHERE run_id = :run_id ORDER BY chunk_no;

\echo
\echo '== 5. Run one day first (the probe), and look at it before going on.'
CALL backfill.run(:run_id);
SELECT run_id, status FROM backfill.runs WHERE run_id = :run_id;
SELECT day, payments, revenue FROM daily_revenue
 WHERE day >= :'wed' AND day < :'sat' ORDER BY day;

\echo
\echo '== 6. The probe looks right: run the rest, in order, one transaction per chunk.'
CALL backfill.run(:run_id);
SELECT run_id, status FROM backfill.runs WHERE run_id = :run_id;

\echo
\echo '== 7. Reconcile: every chunk against the ledger, and against the days around it.'
SELECT chunk_no, chunk_start::date, target_value, ledger_value, ledger_ok,
       neighbor_median, neighbor_ok, verdict
  FROM backfill.reconcile(:run_id);

\echo
\echo '== 8. Running it again changes nothing: chunks replace, never append.'
SELECT md5(string_agg(format('%s|%s|%s', day, payments, revenue), ',' ORDER BY day)) AS before_rerun
  FROM daily_revenue \gset
CALL backfill.backfill('daily_revenue', :'wed', :'sat', note => 'rerun to show idempotency');
SELECT md5(string_agg(format('%s|%s|%s', day, payments, revenue), ',' ORDER BY day))
       = :'before_rerun' AS table_unchanged
  FROM daily_revenue;

\echo
\echo '== 9. A new definition: test accounts no longer count.  Rebuild two weeks under v2'
\echo '==    and explain every number that moved.  First attempt: the source excludes the'
\echo '==    test accounts, but the ledger was not changed with it.'
SELECT backfill.register(
    'daily_revenue', 'day',
    source      => $$SELECT paid_at::date AS day, count(*) AS payments, sum(amount) AS revenue
                      FROM public.payments
                     WHERE paid_at >= $1 AND paid_at < $2 AND account NOT LIKE 'test-%'
                     GROUP BY 1$$,
    definition  => 'v2: excludes test accounts',
    ledger      => $$SELECT sum(payments) FROM public.payment_ledger
                     WHERE day >= $1 AND day < $2$$,
    measure     => 'sum(payments)') AS definition_version;
SELECT backfill.plan('daily_revenue', :'first_day', current_date,
                     note => 'metric v2: exclude test accounts') AS v2_run \gset
-- The probe chunk fails the ledger gate: a definition cause, so the hint
-- names replan (a plain retry would repeat it; the run is pinned to v2).
\set ON_ERROR_STOP 0
CALL backfill.run(:v2_run);
\set ON_ERROR_STOP 1
SELECT run_id, target, state, chunks, next_step FROM backfill.progress_brief;

\echo
\echo '== 9b. Fix the definition (the ledger excludes test accounts too), then replan:'
\echo '==     the unfinished chunks, planned again under the fixed version, probed again.'
SELECT backfill.register(
    'daily_revenue', 'day',
    source      => $$SELECT paid_at::date AS day, count(*) AS payments, sum(amount) AS revenue
                      FROM public.payments
                     WHERE paid_at >= $1 AND paid_at < $2 AND account NOT LIKE 'test-%'
                     GROUP BY 1$$,
    definition  => 'v2.1: excludes test accounts, ledger too',
    ledger      => $$SELECT count(*) FROM public.payments
                     WHERE paid_at >= $1 AND paid_at < $2 AND account NOT LIKE 'test-%'$$,
    measure     => 'sum(payments)') AS definition_version;
SELECT backfill.replan(:v2_run) AS v2_run \gset
SELECT run_id, status, definition_version, continues_run FROM backfill.runs
 WHERE run_id = :v2_run;
CALL backfill.run(:v2_run);   -- the probe chunk

\echo
\echo '== 10. Quiet hours: hand the rest to pg_cron, ten chunks a minute.'
\echo '==     (The demo uses every minute; a real run would use e.g. ''*/5 1-5 * * *'' in GMT,'
\echo '==     or quiet_hours => ''22:00-06:00'' in the run''s own TimeZone.)'
SELECT backfill.in_quiet_hours('22:00-06:00', 'Europe/Berlin', '2026-11-30 23:30+01') AS at_night,
       backfill.in_quiet_hours('22:00-06:00', 'Europe/Berlin', '2026-11-30 12:00+01') AS at_noon;
SELECT backfill.schedule(:v2_run, '* * * * *', chunks_per_tick => 10) > 0 AS scheduled;
SELECT jobname, schedule, command FROM cron.job;
\echo 'waiting for pg_cron to finish the run (a tick a minute, ten chunks a tick) ...'
DO $$
DECLARE
    deadline timestamptz := clock_timestamp() + interval '10 minutes';
BEGIN
    LOOP
        EXIT WHEN NOT EXISTS (SELECT FROM backfill.progress);
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'the scheduled run did not finish in time';
        END IF;
        PERFORM pg_sleep(2);
    END LOOP;
END $$;
SELECT run_id, status FROM backfill.runs WHERE run_id = :v2_run;
-- The tick that finished the run parked its job (February 31st: it never
-- fires again, and that tick ends "succeeded" in cron.job_run_details);
-- the next backfill tick, or cleanup_jobs, removes it.
SELECT jobname, schedule FROM cron.job;
SELECT job_name FROM backfill.cleanup_jobs();
SELECT count(*) AS jobs_left FROM cron.job;
SELECT executed_via, count(*) AS chunks FROM backfill.chunks
 WHERE run_id = :v2_run GROUP BY 1 ORDER BY 1;

\echo
\echo '== 11. Why the numbers moved (v1 -> v2):'
SELECT chunk_no, chunk_start::date, before_value, after_value, delta, delta_pct
  FROM backfill.changes(:v2_run) ORDER BY chunk_no;

\echo
\echo '== 12. Reconcile the v2 run against the ledger, then the morning check.'
SELECT verdict, count(*) FROM backfill.reconcile(:v2_run) GROUP BY 1;
-- The same comparison for any range, backfilled or not: what a standing
-- morning check (backfill.schedule_check) runs on every tick.
SELECT status, verdict, count(*)
  FROM backfill."check"('daily_revenue', :'first_day', current_date)
 GROUP BY 1, 2 ORDER BY 1, 2;

\echo
\echo '== 13. Lineage: which ranges were rebuilt, when, by whom, under which definition.'
SELECT range_start::date, range_end::date, state, definition_version, label, run_id, executed_by
  FROM backfill.lineage('daily_revenue');

\echo
\echo '== 14. History: one row per chunk ever run.'
SELECT run_id, chunk_no, chunk_start::date, status, definition_version AS v,
       rows_deleted AS del, rows_inserted AS ins, before_value, after_value, executed_via
  FROM backfill.history ORDER BY run_id, chunk_no;

\echo
\echo '== 15. Pipelines: the monthly rollup is built from the daily one, and still holds the zeros.'
SELECT m.month, m.payments AS monthly_says, d.payments AS sum_of_days
  FROM monthly_revenue m
  JOIN (SELECT date_trunc('month', day)::date AS month, sum(payments) AS payments
          FROM daily_revenue GROUP BY 1) d USING (month)
 ORDER BY 1;
SELECT backfill.register(
    'monthly_revenue', 'month',
    source     => $$SELECT date_trunc('month', day)::date AS month,
                           sum(payments) AS payments, sum(revenue) AS revenue
                      FROM public.daily_revenue
                     WHERE day >= $1 AND day < $2
                     GROUP BY 1$$,
    definition => 'sum of the days',
    chunk      => '1 month') AS definition_version;
SELECT backfill.depend('monthly_revenue', 'daily_revenue') AS depends;
SELECT downstream, upstream, created_by FROM backfill.dependencies;

\echo
\echo '== 16. Refill the three days with cascade: the month they fall in follows, after them.'
SELECT backfill.plan('daily_revenue', :'wed', :'sat', cascade => true, probe => false,
                     note => 'the monthly rollup follows the daily refill') AS group_id \gset
SELECT run_id, target, range_start::date, range_end::date, upstream_runs
  FROM backfill.runs WHERE group_id = :group_id ORDER BY run_id;
CALL backfill.run_group(:group_id);
SELECT group_id, runs, runs_done, status, chunks_done FROM backfill.group_progress
 WHERE group_id = :group_id;
SELECT m.month, m.payments AS monthly_says, d.payments AS sum_of_days
  FROM monthly_revenue m
  JOIN (SELECT date_trunc('month', day)::date AS month, sum(payments) AS payments
          FROM daily_revenue GROUP BY 1) d USING (month)
 ORDER BY 1;

\echo
\echo '== 17. The lineage of the daily rollup at a glance.'
SELECT * FROM backfill.lineage_chart('daily_revenue', :'first_day', current_date);

\echo
\echo 'I backfilled last Wednesday through Friday, and the totals match the payment ledger;'
\echo 'the monthly rollup followed.'
