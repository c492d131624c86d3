-- replace_range: delete the target's rows in [start, end), insert what the
-- source yields for $1 = start, $2 = end, in the caller's transaction.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
CREATE SCHEMA rr;
CREATE TABLE rr.raw (ts timestamptz, amount numeric);
INSERT INTO rr.raw
SELECT '2024-01-01'::timestamptz + i * interval '1 hour', i
  FROM generate_series(0, 71) i;
CREATE TABLE rr.daily (ts timestamptz, amount numeric, note text);
INSERT INTO rr.daily VALUES ('2024-01-01 05:00', 999, 'stale'),
                            ('2024-01-02 05:00', 7, 'outside');
SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-01', '2024-01-02',
    'SELECT ts, amount FROM rr.raw WHERE ts >= $1 AND ts < $2;');
SELECT count(*), sum(amount), count(note) FROM rr.daily;
