-- The quick start's tables and data (doc/quickstart.md, step 0), for the pages that
-- build on them: payments 11-30 November 2026, the payment ledger, and
-- daily_revenue with zeros on 18-20 November.  Keep it equal to doc/quickstart.md.
SET TimeZone = 'UTC';
CREATE TABLE payments (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    paid_at  timestamptz NOT NULL,
    account  text NOT NULL,
    amount   numeric(10,2) NOT NULL
);
INSERT INTO payments (paid_at, account, amount)
SELECT d + n * interval '5 minutes',
       CASE WHEN n % 20 = 0 THEN 'test-' ELSE 'acct-' END || n % 50,
       5 + n % 95
  FROM generate_series(timestamptz '2026-11-11', '2026-11-30', '1 day') AS d,
       generate_series(1, 200 + 10 * extract(dow FROM d)::int) AS n;
CREATE TABLE payment_ledger AS
SELECT paid_at::date AS day, count(*) AS payments, sum(amount) AS amount
  FROM payments GROUP BY 1;
CREATE TABLE daily_revenue (
    day       date PRIMARY KEY,
    payments  bigint NOT NULL,
    revenue   numeric(12,2) NOT NULL
);
INSERT INTO daily_revenue
SELECT paid_at::date, count(*), sum(amount) FROM payments GROUP BY 1;
UPDATE daily_revenue SET payments = 0, revenue = 0
 WHERE day BETWEEN '2026-11-18' AND '2026-11-20';
-- The monthly rollup built from the daily one (walkthrough step 5, pipelines).
CREATE TABLE monthly_revenue (
    month     date PRIMARY KEY,
    payments  bigint NOT NULL,
    revenue   numeric(12,2) NOT NULL
);
INSERT INTO monthly_revenue
SELECT date_trunc('month', day)::date, sum(payments), sum(revenue) FROM daily_revenue GROUP BY 1;
CREATE EXTENSION pg_cron;
CREATE EXTENSION backfill;
