-- backfill demo, part 2 (issue 20): the v2 definition turns out wrong;
-- diff shows which days moved and why, and revert puts v1's numbers back.
\set ECHO queries
\pset footer off
SET client_min_messages = notice;
SET DateStyle = ISO;
SET TimeZone = 'UTC';

\echo
\echo '== U1. A shop''s daily revenue per account, built from its orders (the account qa'
\echo '==     is the test account).  v1 counts every order, and keeps what it replaces.'
CREATE SCHEMA shop;
CREATE TABLE shop.orders (ordered_at timestamptz NOT NULL, account text NOT NULL,
                          amount numeric NOT NULL);
INSERT INTO shop.orders
SELECT '2024-03-01'::timestamptz + i * interval '4 hours',
       (ARRAY['acme', 'globex', 'qa'])[1 + i % 3], 10 * (1 + i % 4)
  FROM generate_series(0, 41) i;
CREATE TABLE shop.daily_revenue (day date NOT NULL, account text NOT NULL,
                                 revenue numeric NOT NULL, orders int NOT NULL,
                                 PRIMARY KEY (day, account));
SELECT backfill.register('shop.daily_revenue', 'day',
    $$SELECT ordered_at::date AS day, account, sum(amount) AS revenue, count(*)::int AS orders
        FROM shop.orders WHERE ordered_at >= $1 AND ordered_at < $2 GROUP BY 1, 2$$,
    definition => 'v1', measure => 'sum(revenue)', keep_replaced => true) AS version;
CALL backfill.backfill('shop.daily_revenue', '2024-03-01', '2024-03-08');

\echo
\echo '== U2. v2 should leave out the test account.  It is registered and run over the week.'
SELECT backfill.register('shop.daily_revenue', 'day',
    $$SELECT ordered_at::date AS day, account, sum(amount) AS revenue, count(*)::int AS orders
        FROM shop.orders WHERE ordered_at >= $1 AND ordered_at < $2
         AND account <> 'qa' AND amount > 10 GROUP BY 1, 2$$,
    definition => 'v2: no test accounts', measure => 'sum(revenue)',
    keep_replaced => true, keep_for => '90 days') AS version;
SELECT backfill.plan('shop.daily_revenue', '2024-03-01', '2024-03-08', probe => false,
                     note => 'v2 over the first week of March') AS v2 \gset
CALL backfill.run(:v2);

\echo
\echo '== U3. Revenue fell by more than the test account explains.  changes() says how much,'
\echo '==     per day; diff says which rows moved and how: every account lost its 10s orders.'
SELECT chunk_no, chunk_start::date AS day, before_value, after_value, delta, delta_pct
  FROM backfill.changes(:v2);
SELECT key ->> 'account' AS account, change, count(*) AS days,
       sum((old ->> 'orders')::int - coalesce((new ->> 'orders')::int, 0)) AS orders_lost
  FROM backfill.diff(:v2) GROUP BY 1, 2 ORDER BY 1;
SELECT * FROM backfill.diff(:v2, 1);

\echo
\echo '== U4. Revert v2: a run like any other (the probe first, then the rest, newest day first).'
SELECT backfill.revert(:v2) AS undo \gset
CALL backfill.run(:undo);
CALL backfill.run(:undo);

\echo
\echo '== U5. v1''s numbers are back, and the lineage says so.'
SELECT day, sum(revenue) AS revenue, sum(orders) AS orders
  FROM shop.daily_revenue GROUP BY 1 ORDER BY 1;
SELECT range_start::date, range_end::date, state, definition_version, label, run_id
  FROM backfill.lineage('shop.daily_revenue');
SELECT target, chunks_kept, rows_kept, size FROM backfill.archive_usage;

\echo
\echo 'v2 moved the numbers wrongly; diff showed which rows and why, and revert put v1''s'
\echo 'numbers back exactly, recorded like any run.  (The revert kept what it replaced too:'
\echo 'backfill.revert of it would bring v2 back.)'
