-- doc/undo.md: a shop's daily revenue per account, built from raw orders;
-- the test account 'qa' placed orders too.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
CREATE EXTENSION backfill;
CREATE SCHEMA shop;
CREATE TABLE shop.orders (ordered_at timestamptz NOT NULL, account text NOT NULL,
                          amount numeric NOT NULL);
INSERT INTO shop.orders
SELECT '2024-03-01'::timestamptz + i * interval '4 hours',
       (ARRAY['acme', 'globex', 'qa'])[1 + i % 3], 10 * (1 + i % 4)
  FROM generate_series(0, 17) i;
CREATE TABLE shop.daily_revenue (day date NOT NULL, account text NOT NULL,
                                 revenue numeric NOT NULL, orders int NOT NULL,
                                 PRIMARY KEY (day, account));
