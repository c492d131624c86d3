-- Late rows into a table that other jobs fill (issue 29, item 3).  The
-- daily job fills lr.daily, backfill repairs it: backfill never built it,
-- and a watch used to record nothing (no watermark), silently.  Now a
-- write into a chunk that has ended (settle ago) is recorded, whoever built
-- the chunk; a stale plan rebuilds the recorded chunks that hold rows;
-- watch says what it cannot follow.  The days are counted back from today
-- (lr.day(k): the start of the day k days ago).
SET TimeZone = 'UTC';
SET DateStyle = ISO;
SET IntervalStyle = postgres;
\set VERBOSITY default
SELECT setval('backfill.runs_run_id_seq', 9101, false) IS NOT NULL AS seq_set;
CREATE SCHEMA lr;
CREATE FUNCTION lr.day(k int) RETURNS timestamptz LANGUAGE sql STABLE
    AS $$SELECT date_trunc('day', now()) - k * interval '1 day'$$;
CREATE TABLE lr.payments (paid_at timestamptz NOT NULL, amount int NOT NULL);
INSERT INTO lr.payments SELECT lr.day(k) + interval '10 hours', 10 FROM generate_series(1, 5) k;
-- the daily job's work: days 1 to 5 before today
CREATE TABLE lr.daily (day timestamptz NOT NULL, total int NOT NULL);
INSERT INTO lr.daily SELECT date_trunc('day', paid_at), sum(amount) FROM lr.payments GROUP BY 1;
SELECT backfill.register('lr.daily', 'day',
    $$SELECT date_trunc('day', paid_at) AS day, sum(amount)::int AS total
        FROM lr.payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1$$);
CREATE VIEW lr.logged AS
SELECT (chunk_start - date_trunc('day', now())) AS chunk, chunk_end - chunk_start AS len
  FROM backfill.changed_regions WHERE target = 'lr.daily'::regclass;

-- watch says what it records of a table backfill does not build
SELECT backfill.watch('lr.daily', 'lr.payments', 'paid_at') AS added;
SELECT settle FROM backfill.watches WHERE target = 'lr.daily'::regclass;

-- A late row into the day before yesterday is recorded; rows into today
-- (not ended) and into the future are not: the job that fills the table
-- reads them when it builds those days.
INSERT INTO lr.payments VALUES (lr.day(2) + interval '11 hours', 5);
INSERT INTO lr.payments VALUES (lr.day(0) + interval '1 minute', 1), (lr.day(-3), 1);
SELECT chunk, len FROM lr.logged ORDER BY 1;
-- A row into a day that nobody built (the table holds no row there) is
-- recorded too, but that day is not stale: it is missing.
INSERT INTO lr.payments VALUES (lr.day(7) + interval '9 hours', 7);
SELECT chunk, len FROM lr.logged ORDER BY 1;

-- The stale plan takes the day before yesterday, which holds rows (read as
-- the definition's author), and says why; its run rebuilds it.
SELECT backfill.plan('lr.daily', lr.day(8), lr.day(0), only_chunks => 'stale',
                     probe => false) AS r \gset
SELECT chunk_no, chunk_start - lr.day(0) AS chunk,
       reason LIKE 'stale: source changed at %' AS stale
  FROM backfill.chunks WHERE run_id = :r ORDER BY 1;
SET client_min_messages = warning;
CALL backfill.run(:r);
RESET client_min_messages;
SELECT day - lr.day(0) AS day, total FROM lr.daily ORDER BY 1;
SELECT chunk, len FROM lr.logged ORDER BY 1;
-- with missing, the day nobody built comes along
SELECT backfill.plan('lr.daily', lr.day(8), lr.day(6), only_chunks => 'stale, missing',
                     probe => false) AS r \gset
SELECT chunk_no, chunk_start - lr.day(0) AS chunk, reason IS NOT NULL AS stale
  FROM backfill.chunks WHERE run_id = :r ORDER BY 1;
SELECT backfill.cancel(:r) AS cancelled;
DELETE FROM backfill.changed_regions;

-- settle: the job that fills the table builds a day two days after it ends,
-- so a row is late in the days before that (three days ago), and in the
-- days backfill built (the day before yesterday: behind its watermark),
-- not in yesterday's.  Stated, nothing is said.
SELECT backfill.watch('lr.daily', 'lr.payments', 'paid_at', settle => '2 days') AS added;
SELECT settle FROM backfill.watches WHERE target = 'lr.daily'::regclass;
INSERT INTO lr.payments VALUES (lr.day(1) + interval '1 hour', 1), (lr.day(2) + interval '1 hour', 1),
                               (lr.day(3) + interval '1 hour', 1);
SELECT chunk, len FROM lr.logged ORDER BY 1;
DELETE FROM backfill.changed_regions;
-- An UPDATE and a DELETE follow the same edge.
UPDATE lr.payments SET amount = amount + 1 WHERE paid_at = lr.day(4) + interval '10 hours';
DELETE FROM lr.payments WHERE paid_at = lr.day(1) + interval '1 hour';
SELECT chunk, len FROM lr.logged ORDER BY 1;
DELETE FROM backfill.changed_regions;

-- A TRUNCATE of the source changes every chunk before the edge (here
-- backfill's watermark: its build of the day before yesterday ended
-- yesterday), whoever built it: one region from -infinity (a stale plan
-- takes the chunks of it that backfill built or that hold rows).
BEGIN;
TRUNCATE lr.payments;
SELECT chunk_start, chunk_end - lr.day(0) AS edge
  FROM backfill.changed_regions WHERE target = 'lr.daily'::regclass;
ROLLBACK;

-- What watch cannot follow, it says: writes into a foreign partition
-- (which cannot carry triggers).
CREATE FOREIGN DATA WRAPPER lr_fdw;
CREATE SERVER lr_server FOREIGN DATA WRAPPER lr_fdw;
CREATE TABLE lr.events (at timestamptz NOT NULL, v int) PARTITION BY RANGE (at);
CREATE TABLE lr.events_old PARTITION OF lr.events FOR VALUES FROM ('2000-01-01') TO ('2020-01-01');
CREATE FOREIGN TABLE lr.events_remote PARTITION OF lr.events
    FOR VALUES FROM ('2020-01-01') TO ('2100-01-01') SERVER lr_server;
SELECT backfill.watch('lr.daily', 'lr.events', 'at', settle => '0') AS added;

-- Bad input: settle negative, or more than a century.
SELECT backfill.watch('lr.daily', 'lr.payments', 'paid_at', settle => '-1 hour');
SELECT backfill.watch('lr.daily', 'lr.payments', 'paid_at', settle => '101 years');

-- A target that backfill built once, long ago, and another job has filled
-- since: said too, and the days after backfill's are followed.
CREATE TABLE lr.weekly (week timestamptz NOT NULL, total int NOT NULL);
SELECT backfill.register('lr.weekly', 'week',
    $$SELECT date_trunc('week', paid_at) AS week, sum(amount)::int AS total
        FROM lr.payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1$$,
    chunk => '1 week');
SET client_min_messages = warning;
CALL backfill.backfill('lr.weekly', '2020-01-06', '2020-01-13');
RESET client_min_messages;
SELECT backfill.watch('lr.weekly', 'lr.payments', 'paid_at') AS added;

-- Clean up.
SELECT backfill.unregister('lr.weekly');
SELECT backfill.unregister('lr.daily');
DROP SCHEMA lr CASCADE;
DROP SERVER lr_server;
DROP FOREIGN DATA WRAPPER lr_fdw;
