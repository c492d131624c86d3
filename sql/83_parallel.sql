-- Parallel chunks (issue 19): parallel => N executes a run's chunks in
-- background workers, at most N at a time, in plan order; the first failure
-- stops new starts and leaves the later chunks pending for a resume; a
-- group's downstream chunk starts only after the upstream chunks it covers;
-- bad values of parallel are refused.  Each chunk sleeps 0.3 s so that
-- workers overlap; nothing here asserts a duration.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
SELECT setval('backfill.runs_run_id_seq', 8301, false) IS NOT NULL AS seq_set;
CREATE SCHEMA par;
CREATE TABLE par.raw (ts timestamptz, amount int);
INSERT INTO par.raw SELECT t, 1 FROM generate_series('2024-05-01'::timestamptz, '2024-05-08 23:00', '1 hour') t;
CREATE TABLE par.broken (day timestamptz);
-- failing at once on the days listed in par.broken, else slow (0.3 s per
-- chunk, at its first row)
CREATE FUNCTION par.ok(lo timestamptz, t timestamptz) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM par.broken b WHERE b.day = lo) THEN
        RAISE EXCEPTION 'source broken on %', lo::date;
    END IF;
    IF t = lo THEN
        PERFORM pg_sleep(0.3);
    END IF;
    RETURN true;
END $$;
CREATE TABLE par.daily (day timestamptz, revenue int);
CREATE TABLE par.weekly (day timestamptz, revenue int);
SELECT backfill.register('par.daily', 'day',
    'SELECT date_trunc(''day'', ts) AS day, sum(amount)::int AS revenue FROM par.raw WHERE ts >= $1 AND ts < $2 AND par.ok($1, ts) GROUP BY 1');
SELECT backfill.register('par.weekly', 'day',
    'SELECT day, revenue * 10 AS revenue FROM par.daily WHERE day >= $1 AND day < $2 AND par.ok($1, day)',
    chunk => '2 days');
SELECT backfill.depend('par.weekly', 'par.daily');

-- Bad values of parallel: a clear error, nothing planned or executed.
SELECT backfill.plan('par.daily', '2024-05-01', '2024-05-09', probe => false) AS r \gset
CALL backfill.run(:r, parallel => 0);
CALL backfill.run(:r, parallel => -1);
CALL backfill.run(:r, parallel => NULL);
SHOW backfill.max_parallel;
CALL backfill.run(:r, parallel => 5);
-- the detail names the server's max_worker_processes, whatever it is here (the
-- same check as run's, through schedule: a function, so a DO block can catch it)
SELECT set_config('par.r', :'r', false) IS NOT NULL AS noted;
DO $$
DECLARE
    m text;
    d text;
    h text;
BEGIN
    PERFORM backfill.schedule(current_setting('par.r')::bigint, parallel => 99);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
    RAISE NOTICE 'ERROR: %', m;
    RAISE NOTICE 'DETAIL: %', replace(d, 'max_worker_processes is '
                                         || current_setting('max_worker_processes'),
                                      'max_worker_processes is (this server''s)');
    RAISE NOTICE 'HINT: %', h;
END
$$;
SET backfill.max_parallel = 2;
CALL backfill.run(:r, parallel => 3);
CALL backfill.backfill('par.daily', '2024-05-01', '2024-05-02', parallel => 3);
CALL backfill.run_group(:r, parallel => 0);
SELECT backfill.schedule(:r, parallel => 3);
SELECT backfill.schedule_group(:r, parallel => 0);
RESET backfill.max_parallel;
SELECT count(*) AS chunks_touched FROM backfill.chunks
 WHERE run_id = :r AND (attempts > 0 OR status <> 'pending');

-- parallel => 2: every chunk is executed by a worker, as the caller.
SET client_min_messages = warning;
CALL backfill.run(:r, parallel => 2);
RESET client_min_messages;
SELECT status FROM backfill.runs WHERE run_id = :r;
SELECT chunk_no, status, attempts, rows_deleted, rows_inserted, executed_via,
       executed_by = current_user AS by_me
  FROM backfill.chunks WHERE run_id = :r ORDER BY chunk_no;
SELECT count(*) AS days, sum(revenue) AS revenue FROM par.daily;
-- At most 2 chunks were in flight at any time, and two did overlap.
SELECT max(n) AS max_in_flight FROM (
  SELECT (SELECT count(*) FROM backfill.chunks o
           WHERE o.run_id = c.run_id
             AND o.started_at <= c.started_at AND o.finished_at > c.started_at) AS n
    FROM backfill.chunks c WHERE c.run_id = :r) s;
-- Plan order: chunk k started only when at most one earlier chunk was
-- still unfinished (and never before a later chunk).
SELECT c.chunk_no
  FROM backfill.chunks c
 WHERE c.run_id = :r
   AND ((SELECT count(*) FROM backfill.chunks e
          WHERE e.run_id = c.run_id AND e.chunk_no < c.chunk_no
            AND e.finished_at > c.started_at) > 1
        OR EXISTS (SELECT FROM backfill.chunks l
                    WHERE l.run_id = c.run_id AND l.chunk_no > c.chunk_no + 1
                      AND l.started_at < c.started_at));
-- A backwards run starts from the end.
SELECT backfill.plan('par.daily', '2024-05-01', '2024-05-09', probe => false,
                     backwards => true) AS rb \gset
SET client_min_messages = warning;
CALL backfill.run(:rb, parallel => 2, max_chunks => 4);
RESET client_min_messages;
SELECT chunk_no, status FROM backfill.chunks WHERE run_id = :rb ORDER BY chunk_no;
SELECT backfill.cancel(:rb) AS cancelled;

-- The first failure: May 3 breaks.  No chunk starts after it; the chunks
-- in flight finish on their own; the call ends with the chunk's error; the
-- run is failed and every chunk not started stays pending.
INSERT INTO par.broken VALUES ('2024-05-03');
SELECT backfill.plan('par.daily', '2024-05-01', '2024-05-09', probe => false) AS rf \gset
SET client_min_messages = warning;
CALL backfill.run(:rf, parallel => 2);
RESET client_min_messages;
SELECT status FROM backfill.runs WHERE run_id = :rf;
SELECT chunk_no, status, error_message FROM backfill.chunks
 WHERE run_id = :rf AND chunk_no <= 3 ORDER BY chunk_no;
-- after chunk 3 failed, at most the one chunk in flight (4) ran
SELECT count(*) FILTER (WHERE status <> 'pending') <= 1 AS at_most_one_more,
       bool_and(status = 'pending') FILTER (WHERE chunk_no >= 5) AS rest_pending
  FROM backfill.chunks WHERE run_id = :rf AND chunk_no > 3;
-- fixed, the run resumes as today and finishes
DELETE FROM par.broken;
SET client_min_messages = warning;
CALL backfill.run(:rf, parallel => 2);
RESET client_min_messages;
SELECT status FROM backfill.runs WHERE run_id = :rf;
SELECT count(*) FILTER (WHERE status = 'done') AS done, max(attempts) AS max_attempts
  FROM backfill.chunks WHERE run_id = :rf;
SELECT count(*) AS days, sum(revenue) AS revenue FROM par.daily;

-- A group: each downstream chunk (2 days) started after the upstream
-- chunks it covers had finished.
SELECT backfill.plan('par.daily', '2024-05-01', '2024-05-09', probe => false,
                     cascade => true) AS g \gset
SET client_min_messages = warning;
CALL backfill.run_group(:g, parallel => 2);
RESET client_min_messages;
SELECT r.target, r.status, count(*) AS chunks,
       count(*) FILTER (WHERE c.executed_via = 'worker') AS by_workers
  FROM backfill.runs r JOIN backfill.chunks c USING (run_id)
 WHERE r.group_id = :g GROUP BY 1, 2 ORDER BY r.target::text;
SELECT d.chunk_no AS early_downstream_chunk
  FROM backfill.chunks d JOIN backfill.runs dr ON dr.run_id = d.run_id
  JOIN backfill.runs ur ON ur.group_id = dr.group_id AND ur.run_id <> dr.run_id
  JOIN backfill.chunks u ON u.run_id = ur.run_id
   AND u.chunk_start < d.chunk_end AND u.chunk_end > d.chunk_start
 WHERE dr.group_id = :g AND dr.target = 'par.weekly'::regclass
   AND d.started_at < u.finished_at;
SELECT sum(revenue) AS weekly_revenue FROM par.weekly;

-- backfill with parallel plans and runs to the end
SET client_min_messages = warning;
CALL backfill.backfill('par.daily', '2024-05-01', '2024-05-05', parallel => 2);
RESET client_min_messages;
SELECT r.status, count(*) AS chunks, bool_and(c.executed_via = 'worker') AS by_workers
  FROM backfill.runs r JOIN backfill.chunks c USING (run_id)
 WHERE r.run_id = (SELECT max(run_id) FROM backfill.runs) GROUP BY 1;

-- A probe runs alone, in the session, and the call stops after it.
SELECT backfill.plan('par.daily', '2024-05-01', '2024-05-05') AS rp \gset
SET client_min_messages = warning;
CALL backfill.run(:rp, parallel => 2);
RESET client_min_messages;
SELECT chunk_no, status, executed_via FROM backfill.chunks WHERE run_id = :rp ORDER BY chunk_no;
SET client_min_messages = warning;
CALL backfill.run(:rp, parallel => 2);
RESET client_min_messages;
SELECT chunk_no, status, executed_via FROM backfill.chunks WHERE run_id = :rp ORDER BY chunk_no;

-- The pool (issue 30): the workers of a call connect once and take chunk
-- after chunk.  Each row of par.bypid records the pid of the backend that
-- executed its chunk: 8 chunks at parallel => 2, 2 worker backends, none of
-- them this session; a worker executed several chunks.
CREATE TABLE par.bypid (day timestamptz, pid int);
SELECT backfill.register('par.bypid', 'day',
    'SELECT date_trunc(''day'', ts) AS day, pg_backend_pid() AS pid FROM par.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1');
SELECT backfill.plan('par.bypid', '2024-05-01', '2024-05-09', probe => false) AS rpool \gset
SET client_min_messages = warning;
CALL backfill.run(:rpool, parallel => 2);
RESET client_min_messages;
SELECT count(*) AS chunks, count(DISTINCT pid) AS worker_backends,
       bool_and(pid <> pg_backend_pid()) AS none_in_session
  FROM par.bypid;
SELECT status, count(*) AS chunks, bool_and(executed_via = 'worker') AS by_workers
  FROM backfill.chunks WHERE run_id = :rpool GROUP BY 1;
-- parallel => 3 with max_chunks => 2 starts 2 workers (a worker only for a
-- chunk), then parallel => 3 for the 6 chunks left: 3 more
TRUNCATE par.bypid;
SELECT backfill.plan('par.bypid', '2024-05-01', '2024-05-09', probe => false) AS rpool \gset
SET client_min_messages = warning;
CALL backfill.run(:rpool, parallel => 3, max_chunks => 2);
CALL backfill.run(:rpool, parallel => 3);
RESET client_min_messages;
SELECT count(*) AS chunks, count(DISTINCT pid) AS worker_backends
  FROM par.bypid;

-- No background worker is left behind, and progress shows none in flight.
SELECT count(*) AS workers FROM pg_stat_activity WHERE backend_type = 'backfill worker';
SELECT count(*) AS runs_with_chunks_in_flight FROM backfill.progress
 WHERE cardinality(chunks_in_flight) > 0 OR cardinality(worker_pids) > 0;
