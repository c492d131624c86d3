-- Quiet hours and the daily job's lock (no pg_cron needed for either).
SET TimeZone = 'UTC';
SET DateStyle = ISO;

-------------------------------------------------------------------------
-- backfill.in_quiet_hours: the decision every scheduled tick makes, tested
-- with fixed instants.  The span is [start, end) in local wall time.
-------------------------------------------------------------------------
-- A span within one day: the start is inside, the end is not.
SELECT t::time AS utc, backfill.in_quiet_hours('01:00-05:00', 'UTC', t) AS inside
  FROM unnest('{2026-06-01 00:59:59+00, 2026-06-01 01:00+00, 2026-06-01 04:59:59+00,
                2026-06-01 05:00+00, 2026-06-01 12:00+00}'::timestamptz[]) AS t;

-- A span wrapping midnight.
SELECT t::time AS utc, backfill.in_quiet_hours('22:00-06:00', 'UTC', t) AS inside
  FROM unnest('{2026-06-01 21:59+00, 2026-06-01 22:00+00, 2026-06-01 23:59+00,
                2026-06-02 00:00+00, 2026-06-02 05:59+00, 2026-06-02 06:00+00,
                2026-06-02 12:00+00}'::timestamptz[]) AS t;

-- The span is local time: 20:30 UTC is 22:30 in Berlin in summer (inside)
-- and 21:30 in winter (outside).
SELECT t AS utc, backfill.in_quiet_hours('22:00-06:00', 'Europe/Berlin', t) AS inside
  FROM unnest('{2026-07-01 20:30+00, 2026-01-15 20:30+00}'::timestamptz[]) AS t;

-- The night clocks go forward in Berlin (2026-03-29, 02:00 CET -> 03:00
-- CEST): '01:00-04:00' lasts two real hours that night.
SELECT t AS utc, (t AT TIME ZONE 'Europe/Berlin')::time AS berlin,
       backfill.in_quiet_hours('01:00-04:00', 'Europe/Berlin', t) AS inside
  FROM generate_series('2026-03-28 23:30+00'::timestamptz,
                       '2026-03-29 02:30+00', '30 minutes') AS t;

-- The night clocks go back (2026-10-25, 03:00 CEST -> 02:00 CET):
-- '02:00-03:00' lasts two real hours that night.
SELECT t AS utc, (t AT TIME ZONE 'Europe/Berlin')::time AS berlin,
       backfill.in_quiet_hours('02:00-03:00', 'Europe/Berlin', t) AS inside
  FROM generate_series('2026-10-24 23:30+00'::timestamptz,
                       '2026-10-25 02:00+00', '30 minutes') AS t;

-- New York's DST day (2026-03-08): the same UTC time of day, 10:30, is
-- 05:30 EST the day before (inside '22:00-06:00') and 06:30 EDT after.
SELECT t AS utc, (t AT TIME ZONE 'America/New_York')::time AS new_york,
       backfill.in_quiet_hours('22:00-06:00', 'America/New_York', t) AS inside
  FROM unnest('{2026-03-07 10:30+00, 2026-03-08 10:30+00}'::timestamptz[]) AS t;

-- A zone is read exactly as SET TimeZone reads it: a run planned under
-- TimeZone '-3' lives three hours WEST of UTC (SQL's sign convention; the
-- POSIX zone "-3" would be east), so 15:00 UTC is noon there.
SELECT backfill.in_quiet_hours('06:00-18:00', '-3', '2026-11-29 15:00+00') AS west_noon,
       backfill.in_quiet_hours('06:00-18:00', '+4', '2026-11-29 15:00+00') AS east_evening;

-- No time zone: the session's TimeZone.  23:00 in Tokyo is inside.
SET TimeZone = 'Asia/Tokyo';
SELECT backfill.in_quiet_hours('22:00-06:00', NULL, '2026-06-01 14:00+00');
SELECT backfill.in_quiet_hours('22:00-06:00', NULL, '2026-06-01 14:00+00'::timestamptz - interval '2 hours');
SET TimeZone = 'UTC';

-- Tolerated spellings: one-digit hours, blanks around the dash.
SELECT backfill.in_quiet_hours('7:30-9:00', 'UTC', '2026-06-01 08:00+00') AS one_digit,
       backfill.in_quiet_hours(' 22:00 - 06:00 ', 'UTC', '2026-06-01 23:00+00') AS blanks,
       backfill.in_quiet_hours('00:00-23:59', 'UTC', '2026-06-01 23:58+00') AS almost_all_day;

-- No quiet hours means no restriction; no instant, no answer.
SELECT backfill.in_quiet_hours(NULL, 'UTC', '2026-06-01 12:00+00') AS no_span,
       backfill.in_quiet_hours('22:00-06:00', 'UTC', NULL) AS no_instant;

-- The default instant is now(): the answer agrees with the explicit form.
SELECT backfill.in_quiet_hours('22:00-06:00', 'Europe/Berlin')
       = backfill.in_quiet_hours('22:00-06:00', 'Europe/Berlin', now()) AS agrees;

-- Invalid spans and zones.
\set VERBOSITY default
SELECT backfill.in_quiet_hours('22-06', 'UTC', '2026-06-01 12:00+00');
\echo :LAST_ERROR_SQLSTATE
SELECT backfill.in_quiet_hours('25:00-06:00', 'UTC', '2026-06-01 12:00+00');
\echo :LAST_ERROR_SQLSTATE
SELECT backfill.in_quiet_hours('22:60-06:00', 'UTC', '2026-06-01 12:00+00');
\echo :LAST_ERROR_SQLSTATE
SELECT backfill.in_quiet_hours('22:00-06:00 daily', 'UTC', '2026-06-01 12:00+00');
\echo :LAST_ERROR_SQLSTATE
SELECT backfill.in_quiet_hours('', 'UTC', '2026-06-01 12:00+00');
\echo :LAST_ERROR_SQLSTATE
SELECT backfill.in_quiet_hours('22:00-22:00', 'UTC', '2026-06-01 12:00+00');
\echo :LAST_ERROR_SQLSTATE
SELECT backfill.in_quiet_hours('22:00-06:00', 'Mars/Olympus_Mons', '2026-06-01 12:00+00');
\echo :LAST_ERROR_SQLSTATE
SELECT backfill.in_quiet_hours('22:00-06:00', 'UTC', 'infinity');
\echo :LAST_ERROR_SQLSTATE

-------------------------------------------------------------------------
-- backfill.lock_target: the daily job's share of the target lock.
-------------------------------------------------------------------------
CREATE TABLE sched_rollup (day date, n int);
CREATE VIEW sched_rollup_v AS SELECT * FROM sched_rollup;

-- Held in ShareLock on (BACKFILL_LOCK_CLASS_TARGET, relid) until the end of
-- the transaction: the key a chunk takes in ExclusiveLock.
BEGIN;
SELECT backfill.lock_target('sched_rollup');
SELECT locktype, classid = x'42460002'::int AS target_class,
       objid = 'sched_rollup'::regclass::oid AS target_relid,
       objsubid, mode, granted
  FROM pg_locks
 WHERE locktype = 'advisory' AND pid = pg_backend_pid();
-- Taking it twice in a transaction is harmless.
SELECT backfill.lock_target('sched_rollup');
COMMIT;
SELECT count(*) AS advisory_locks_after_commit
  FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();

-- A rolled-back transaction releases it too.
BEGIN;
SELECT backfill.lock_target('sched_rollup');
ROLLBACK;
SELECT count(*) AS advisory_locks_after_rollback
  FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();

-- Any write privilege on the table is enough; reading it is not.
CREATE ROLE regress_sched_reader;
CREATE ROLE regress_sched_writer;
GRANT SELECT ON sched_rollup TO regress_sched_reader;
GRANT INSERT ON sched_rollup TO regress_sched_writer;
SET ROLE regress_sched_writer;
BEGIN;
SELECT backfill.lock_target('sched_rollup');
COMMIT;
SET ROLE regress_sched_reader;
SELECT backfill.lock_target('sched_rollup');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- Only tables.
SELECT backfill.lock_target('sched_rollup_v');
\echo :LAST_ERROR_SQLSTATE
SELECT backfill.lock_target(NULL);
\echo :LAST_ERROR_SQLSTATE

DROP VIEW sched_rollup_v;
DROP TABLE sched_rollup;
DROP ROLE regress_sched_reader;
DROP ROLE regress_sched_writer;
