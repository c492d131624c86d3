-- split_range against a reference in plain SQL, over a few thousand random
-- (start, end, step, TimeZone) cases: chunk k is
-- [start + (k-1) * step, least(start + k * step, end)) while its start is
-- before end, computed in that TimeZone.  Prints the number of cases and
-- the number of mismatching ones (0).
SELECT setseed(0.4242);
CREATE TEMP TABLE cases AS
SELECT i,
       (ARRAY['UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe',
              'Asia/Kolkata', 'America/Sao_Paulo', 'Pacific/Chatham',
              'Europe/London'])[1 + floor(random() * 8)::int] AS tz,
       (ARRAY['1 minute', '17 minutes', '1 hour', '90 minutes', '5 hours',
              '1 day', '2 days', '1 day 6 hours', '1 week', '1 month',
              '1 month 3 days', '2 months', '3 months', '1 year',
              '1 mon 1 hour', '12:34:56.789', '1 day 00:00:00.5'])[1 + floor(random() * 17)::int]::interval AS step,
       '1985-01-01'::timestamp + random() * interval '45 years' AS start_local,
       random() AS len_fraction
  FROM generate_series(1, 3000) i;

CREATE FUNCTION pg_temp.mismatches() RETURNS TABLE (cases int, chunks int, max_chunks int, mismatches int)
LANGUAGE plpgsql AS $$
DECLARE
    c record;
    s timestamptz;
    e timestamptz;
    bad int;
    n int;
BEGIN
    cases := 0;
    chunks := 0;
    max_chunks := 0;
    mismatches := 0;
    FOR c IN SELECT * FROM pg_temp.cases ORDER BY i LOOP
        PERFORM set_config('TimeZone', c.tz, true);
        s := c.start_local::timestamptz;
        -- between a fraction of a step and about 40 steps long
        e := s + c.step * (0.05 + c.len_fraction * 40);
        IF e <= s THEN
            e := s + interval '1 microsecond';
        END IF;
        SELECT count(*) INTO bad FROM (
            (SELECT chunk_no, chunk_start, chunk_end
               FROM backfill.split_range(s, e, c.step)
             EXCEPT ALL
             SELECT k, s + (k - 1) * c.step, least(s + k * c.step, e)
               FROM generate_series(1, 100) k
              WHERE s + (k - 1) * c.step < e)
            UNION ALL
            (SELECT k, s + (k - 1) * c.step, least(s + k * c.step, e)
               FROM generate_series(1, 100) k
              WHERE s + (k - 1) * c.step < e
             EXCEPT ALL
             SELECT chunk_no, chunk_start, chunk_end
               FROM backfill.split_range(s, e, c.step))) d;
        SELECT count(*) INTO n FROM backfill.split_range(s, e, c.step);
        cases := cases + 1;
        chunks := chunks + n;
        max_chunks := greatest(max_chunks, n);
        IF bad > 0 THEN
            mismatches := mismatches + 1;
            RAISE NOTICE 'mismatch: TimeZone %, start %, end %, step %', c.tz, s, e, c.step;
        END IF;
    END LOOP;
    RETURN NEXT;
END $$;
SELECT * FROM pg_temp.mismatches();
-- the cases cover every step and TimeZone
SELECT count(DISTINCT step) AS steps, count(DISTINCT tz) AS timezones FROM cases;
