-- doc/reconciliation.md: raw_payments (ten payments a day over 1-10 March
-- 2024), the payments table the page registers and backfills from them, and
-- the payment processor's ledger psp_ledger, which holds one payment (20.00
-- on 1 March) that raw_payments lacks; a role that may only read payments.
SET TimeZone = 'UTC';
CREATE EXTENSION pg_cron;
CREATE EXTENSION backfill;
CREATE TABLE raw_payments (ts timestamptz NOT NULL, account int NOT NULL, amount numeric(10,2) NOT NULL);
INSERT INTO raw_payments
SELECT '2024-03-01'::timestamptz + i * interval '144 minutes', i % 7, 40 + i % 15
  FROM generate_series(0, 99) AS i;
CREATE TABLE payments (ts timestamptz NOT NULL, account int NOT NULL, amount numeric(10,2) NOT NULL);
CREATE TABLE psp_ledger (booked_at timestamptz NOT NULL, amount numeric(10,2) NOT NULL);
INSERT INTO psp_ledger SELECT ts, amount FROM raw_payments;
INSERT INTO psp_ledger VALUES ('2024-03-01 13:00', 20.00);
CREATE ROLE analyst;
GRANT SELECT ON payments TO analyst;
