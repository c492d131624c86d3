-- Benchmark of backfill.split_range: how long 1,000,000 chunks take.
-- Run against any database with the extension:
--     psql -X -d DB -f bench/split_range.sql
-- Goal: 1,000,000 chunks well under a second.  Times are wall-clock, in ms,
-- including the SQL-level count(*) over the result set.
\set QUIET on
SET backfill.max_chunks = 2000000;
SET TimeZone = 'Europe/Berlin';
CREATE FUNCTION pg_temp.bench(label text, s timestamptz, e timestamptz, step interval)
RETURNS TABLE (case_name text, chunks bigint, ms numeric)
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz;
    best numeric;
    n bigint;
BEGIN
    -- best of three runs
    FOR i IN 1..3 LOOP
        t0 := clock_timestamp();
        SELECT count(*) INTO n FROM backfill.split_range(s, e, step);
        ms := round(extract(epoch FROM clock_timestamp() - t0) * 1000, 1);
        best := least(best, ms);
    END LOOP;
    case_name := label;
    chunks := n;
    ms := best;
    RETURN NEXT;
END $$;
\set QUIET off
SELECT * FROM pg_temp.bench('1 minute (pure time steps)',
    '2024-01-01', '2024-01-01'::timestamptz + 1000000 * interval '1 minute', '1 minute')
UNION ALL
SELECT * FROM pg_temp.bench('1 day (calendar steps, DST)',
    '2000-01-01', '2000-01-01'::timestamptz + 1000000 * interval '1 day', '1 day')
UNION ALL
SELECT * FROM pg_temp.bench('1 month (calendar steps)',
    '2000-01-31', '2000-01-31'::timestamptz + 100000 * interval '1 month', '1 month');
