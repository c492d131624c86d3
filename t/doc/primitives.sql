-- doc/primitives.md: the quick start's tables, and sql/03_replace_range.sql's rr.raw
-- (hourly amounts from 2024-01-01) and rr.daily (a few rows around that day).
\i t/doc/pagedeck.sql
CREATE SCHEMA rr;
CREATE TABLE rr.raw (ts timestamptz, amount numeric);
INSERT INTO rr.raw
SELECT '2024-01-01'::timestamptz + i * interval '1 hour', i
  FROM generate_series(0, 71) i;
CREATE TABLE rr.daily (ts timestamptz, amount numeric, note text);
INSERT INTO rr.daily VALUES ('2024-01-01 05:00', 999, 'stale'),
                            ('2023-12-31 23:59:59.999999', 5, 'before'),
                            ('2024-01-02 00:00', 7, 'at the end');
