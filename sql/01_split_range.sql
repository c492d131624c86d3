-- split_range(range_start, range_end, step): half-open chunks numbered from
-- 1, bound k = range_start + k * step in the session TimeZone (never the
-- previous bound + step), the last chunk clipped to range_end.
SET DateStyle = ISO;
SET IntervalStyle = postgres;
SET TimeZone = 'UTC';
-- errors are shown as SQLSTATE: message
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- plain days; the last chunk is clipped to the end
SELECT * FROM backfill.split_range('2024-01-01', '2024-01-04 12:00', '1 day');
-- a step longer than the range: one chunk
SELECT * FROM backfill.split_range('2024-01-01', '2024-01-01 00:00:01', '1 year');

-- month ends: every bound is start + k months, so Jan 31 gives Feb 29
-- (leap year), Mar 31, Apr 30, May 31 - not Feb 29, Mar 29, Apr 29
SELECT * FROM backfill.split_range('2024-01-31', '2024-06-15', '1 month');
SELECT * FROM backfill.split_range('2023-01-31', '2023-04-01', '1 month');
-- quarter steps from a 30th
SELECT chunk_no, chunk_start::date, chunk_end::date
  FROM backfill.split_range('2023-11-30', '2024-12-01', '3 months');

-- DST in Europe/Berlin: the spring day has 23 hours, the autumn day 25,
-- every chunk starts at local midnight
SET TimeZone = 'Europe/Berlin';
SELECT chunk_no, chunk_start, chunk_end, chunk_end - chunk_start AS length,
       extract(hour FROM chunk_start) AS local_hour
  FROM backfill.split_range('2024-03-29', '2024-04-02', '1 day');
SELECT chunk_no, chunk_start, chunk_end, chunk_end - chunk_start AS length,
       extract(hour FROM chunk_start) AS local_hour
  FROM backfill.split_range('2024-10-25', '2024-10-29', '1 day');
-- hourly steps across the spring gap are plain 60 minutes (absolute time)
SELECT chunk_no, chunk_start, chunk_end
  FROM backfill.split_range('2024-03-31 01:00', '2024-03-31 05:00', '1 hour');
-- DST in America/New_York
SET TimeZone = 'America/New_York';
SELECT chunk_no, chunk_start, chunk_end, chunk_end - chunk_start AS length,
       extract(hour FROM chunk_start) AS local_hour
  FROM backfill.split_range('2024-03-09', '2024-03-12', '1 day');
SELECT chunk_no, chunk_start, chunk_end, chunk_end - chunk_start AS length,
       extract(hour FROM chunk_start) AS local_hour
  FROM backfill.split_range('2024-11-02', '2024-11-05', '1 day');
-- weekly chunks across the change keep starting at local midnight
SELECT chunk_no, chunk_start, chunk_end - chunk_start AS length
  FROM backfill.split_range('2024-10-27', '2024-11-17', '1 week');
-- the same instants split in UTC have 24-hour days
SET TimeZone = 'UTC';
SELECT chunk_no, chunk_end - chunk_start AS length
  FROM backfill.split_range('2024-11-02 04:00', '2024-11-05 05:00', '1 day');

-- errors
SELECT pg_temp.err($$SELECT * FROM backfill.split_range(NULL, '2024-01-02', '1 day')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.split_range('2024-01-01', NULL, '1 day')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.split_range('2024-01-01', '2024-01-02', NULL)$$);
SELECT pg_temp.err($$SELECT * FROM backfill.split_range('-infinity', '2024-01-02', '1 day')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.split_range('2024-01-01', 'infinity', '1 day')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.split_range('2024-01-01', '2024-01-01', '1 day')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.split_range('2024-01-02', '2024-01-01', '1 day')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.split_range('2024-01-01', '2024-01-02', '0')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.split_range('2024-01-01', '2024-01-02', '-1 hour')$$);
-- mixed signs: '1 mon -30 days' compares equal to zero
SELECT pg_temp.err($$SELECT * FROM backfill.split_range('2024-01-31', '2024-06-01', '1 mon -30 days')$$);
-- '1 mon -29 days' compares as one day, but from Jan 31 it stands still
SELECT pg_temp.err($$SELECT * FROM backfill.split_range('2024-01-31', '2024-06-01', '1 mon -29 days')$$);
-- ... and from Jan 1 its second bound falls back onto the first
SELECT pg_temp.err($$SELECT * FROM backfill.split_range('2024-01-01', '2024-06-01', '1 mon -29 days')$$);
-- the same step is fine when the range ends before a bound falls back
SELECT * FROM backfill.split_range('2024-01-01', '2024-01-03', '1 mon -29 days');
-- bounds beyond the timestamp range
SELECT pg_temp.err($$SELECT * FROM backfill.split_range('294276-11-01', '294276-12-20', '1 month')$$);
-- the full error text, with detail and hint
\set VERBOSITY default
\set SHOW_CONTEXT never
SELECT * FROM backfill.split_range('2024-01-02', '2024-01-01', '1 day');
SELECT * FROM backfill.split_range('2024-01-31', '2024-06-01', '1 mon -29 days');

-- backfill.max_chunks (default 100000): one more chunk is 54000
SHOW backfill.max_chunks;
SELECT count(*), max(chunk_no), max(chunk_end)
  FROM backfill.split_range('2024-01-01', '2024-01-01'::timestamptz + 100000 * interval '1 minute', '1 minute');
SELECT pg_temp.err($$SELECT count(*) FROM backfill.split_range('2024-01-01', '2024-01-01'::timestamptz + 100001 * interval '1 minute', '1 minute')$$);
SET backfill.max_chunks = 10;
SELECT count(*) FROM backfill.split_range('2024-01-01', '2024-01-11', '1 day');
SELECT * FROM backfill.split_range('2024-01-01', '2024-01-11 00:00:01', '1 day');
RESET backfill.max_chunks;
-- Only a superuser may change it (a plain user could otherwise make plans
-- write any number of chunk rows they cannot delete), and never above the
-- hard ceiling of 10000000.
CREATE ROLE regress_split_user;
SET ROLE regress_split_user;
SET backfill.max_chunks = 1000000;
\echo :LAST_ERROR_SQLSTATE
SET backfill.max_chunks = 10;
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SET backfill.max_chunks = 10000001;
\echo :LAST_ERROR_SQLSTATE
SET backfill.max_chunks = 10000000;
RESET backfill.max_chunks;
-- a superuser can set it for a role; that role then gets it at login
ALTER ROLE regress_split_user SET backfill.max_chunks = 10;
SELECT setconfig FROM pg_db_role_setting
 WHERE setrole = 'regress_split_user'::regrole;
ALTER ROLE regress_split_user RESET backfill.max_chunks;
DROP ROLE regress_split_user;

-- chunks cover the range exactly: contiguous, no gap, no overlap
SELECT count(*) AS chunks,
       bool_and(chunk_start < chunk_end) AS nonempty,
       bool_and(chunk_end = next_start OR next_start IS NULL) AS contiguous,
       min(chunk_start) AS first_start, max(chunk_end) AS last_end
  FROM (SELECT *, lead(chunk_start) OVER (ORDER BY chunk_no) AS next_start
          FROM backfill.split_range('2020-02-29 13:37', '2024-03-01', '7 days 3 hours')) c;
