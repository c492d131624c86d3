-- doc/partitions.md: sales.payments (one payment a minute over 1-3 January
-- 2024, every tenth one failed) and sales.payments_clean, its succeeded
-- payments, partitioned by day and registered.
SET TimeZone = 'UTC';
CREATE EXTENSION backfill;
CREATE SCHEMA sales;
CREATE TABLE sales.payments (id bigint PRIMARY KEY, paid_at timestamptz NOT NULL,
                             account_id int NOT NULL, amount numeric NOT NULL, status text NOT NULL);
INSERT INTO sales.payments
SELECT i, '2024-01-01'::timestamptz + i * interval '1 minute', i % 97, 5 + i % 50,
       CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'succeeded' END
  FROM generate_series(0, 3 * 1440 - 1) AS i;
CREATE TABLE sales.payments_clean (id bigint NOT NULL, paid_at timestamptz NOT NULL,
                                   account_id int NOT NULL, amount numeric NOT NULL)
    PARTITION BY RANGE (paid_at);
CREATE TABLE sales.payments_clean_20240101 PARTITION OF sales.payments_clean
    FOR VALUES FROM ('2024-01-01') TO ('2024-01-02');
CREATE TABLE sales.payments_clean_20240102 PARTITION OF sales.payments_clean
    FOR VALUES FROM ('2024-01-02') TO ('2024-01-03');
CREATE TABLE sales.payments_clean_20240103 PARTITION OF sales.payments_clean
    FOR VALUES FROM ('2024-01-03') TO ('2024-01-04');
INSERT INTO sales.payments_clean
SELECT id, paid_at, account_id, amount FROM sales.payments WHERE status = 'succeeded';
SELECT backfill.register('sales.payments_clean', 'paid_at',
    $$SELECT id, paid_at, account_id, amount FROM sales.payments
       WHERE paid_at >= $1 AND paid_at < $2 AND status = 'succeeded'$$);
