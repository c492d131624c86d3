-- backfill.progress after real runs: unfinished runs only, with counts,
-- percent, rows, elapsed and eta, and pid NULL whenever nobody executes
-- the run; a failed chunk in progress and in history; a resumed run
-- leaves progress.  (A non-NULL pid is shown by the isolation specs.)
SET TimeZone = 'UTC';
SET DateStyle = 'ISO';
SET client_min_messages = warning;
CREATE SCHEMA r21;
CREATE TABLE r21.src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO r21.src
SELECT '2024-03-01'::timestamptz + i * interval '3 hours', i FROM generate_series(0, 79) i;
-- Days listed here make the source divide by zero.
CREATE TABLE r21.broken (day timestamptz PRIMARY KEY);
CREATE TABLE r21.tgt (ts timestamptz NOT NULL, v int NOT NULL);
SELECT backfill.register('r21.tgt', 'ts',
    source => 'SELECT s.ts, s.v / CASE WHEN EXISTS (SELECT FROM r21.broken b WHERE b.day = $1) THEN 0 ELSE 1 END AS v
                 FROM r21.src s WHERE s.ts >= $1 AND s.ts < $2',
    definition => 'plain copy') AS version;

-- A planned run: nothing done, no pid, no elapsed time, no estimate.
SELECT backfill.plan('r21.tgt', '2024-03-01', '2024-03-11', note => 'ten days') AS run_p \gset
SELECT status, chunks_total, chunks_done, chunks_failed, chunks_no_source,
       chunks_pending, percent, rows_inserted, elapsed, eta, pid
  FROM backfill.progress WHERE run_id = :run_p;
-- The probe: one chunk, the run waits as probed.
CALL backfill.run(:run_p);
SELECT status, chunks_total, chunks_done, chunks_pending, percent, rows_inserted,
       elapsed >= '0' AS has_elapsed, eta >= '0' AS has_eta, pid,
       last_executed_via, chunks_via_cron
  FROM backfill.progress WHERE run_id = :run_p;
-- eta is the average chunk time times the chunks left.
SELECT p.eta = (SELECT avg(finished_at - started_at) FROM backfill.chunks c
                 WHERE c.run_id = p.run_id AND c.status = 'done') * 9 AS eta_right
  FROM backfill.progress p WHERE p.run_id = :run_p;
-- Four more chunks, then a failure on Mar 6.
INSERT INTO r21.broken VALUES ('2024-03-06');
CALL backfill.run(:run_p, max_chunks => 4);
SELECT status, chunks_done, chunks_failed, chunks_pending, percent, rows_inserted, pid
  FROM backfill.progress WHERE run_id = :run_p;
-- The call fails (its message names the run: shown with the id masked).
\set VERBOSITY sqlstate
CALL backfill.run(:run_p);
\set VERBOSITY default
SELECT regexp_replace(:'LAST_ERROR_MESSAGE', 'run \d+', 'run N') AS error;
SELECT status, chunks_done, chunks_failed, chunks_pending, percent, rows_inserted, pid
  FROM backfill.progress WHERE run_id = :run_p;
-- The failed chunk is in the history with its error; the chunks after it
-- are not (they never ran).
SELECT chunk_no, chunk_start, status, attempts, error_sqlstate, error_message, rows_inserted
  FROM backfill.history WHERE run_id = :run_p ORDER BY chunk_no;
-- Mar 6-10 are untouched in the target; Mar 1-5 are there.
SELECT date_trunc('day', ts) AS day, count(*) FROM r21.tgt GROUP BY 1 ORDER BY 1;
-- Fixed and resumed: the run is done and leaves the progress view; the
-- history shows ten done chunks, the retried one with two attempts.
DELETE FROM r21.broken;
CALL backfill.run(:run_p);
SELECT status FROM backfill.runs WHERE run_id = :run_p;
SELECT count(*) AS in_progress FROM backfill.progress WHERE run_id = :run_p;
SELECT status, count(*), sum(rows_inserted), max(attempts)
  FROM backfill.history WHERE run_id = :run_p GROUP BY status;
SELECT count(*) AS rows FROM r21.tgt;

-- A cancelled run leaves the progress view too, and its cancelled chunks
-- are not history.
SELECT backfill.plan('r21.tgt', '2024-03-02', '2024-03-05', probe => false) AS run_x \gset
CALL backfill.run(:run_x, max_chunks => 1);
SELECT status, chunks_done, chunks_pending, percent FROM backfill.progress WHERE run_id = :run_x;
SELECT backfill.cancel(:run_x) AS cancelled;
SELECT count(*) AS in_progress FROM backfill.progress WHERE run_id = :run_x;
SELECT chunk_no, status FROM backfill.history WHERE run_id = :run_x ORDER BY 1;

-- pid comes only from the run's lock, which no SQL call can take: an
-- advisory lock on the run's key in the two-key form, in the one-key form,
-- or in the wrong class, taken by a role with no rights at all, does not
-- make it look busy (the key of a backfill lock has objsubid 16966).
SELECT backfill.plan('r21.tgt', '2024-03-06', '2024-03-08') AS run_q \gset
CREATE ROLE regress_r21_nobody;
SET ROLE regress_r21_nobody;
SELECT pg_advisory_lock(1111883778, :run_q::int);
SELECT pg_advisory_lock(1111883777, :run_q::int);
SELECT pg_advisory_lock((1111883777::bigint << 32) | :run_q);
RESET ROLE;
SELECT pid FROM backfill.progress WHERE run_id = :run_q;
SELECT count(*) AS advisory_locks_held, min(objsubid) AS objsubid_min, max(objsubid) AS objsubid_max
  FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
-- and the run is executed as if they were not there
SELECT current_setting('client_min_messages') AS r21_cmm \gset
SET client_min_messages = warning;
CALL backfill.run(:run_q, max_chunks => 1);
SET client_min_messages = :r21_cmm;
SELECT status, chunks_done FROM backfill.progress WHERE run_id = :run_q;
SELECT pg_advisory_unlock_all();
DROP ROLE regress_r21_nobody;
SELECT backfill.cancel(:run_q) AS cancelled;

-- no_source chunks need no work unless the run must clear them: they
-- count as settled in percent and eta, or as work left with clear_no_source.
CREATE TABLE r21.tgt2 (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO r21.tgt2 VALUES ('2024-03-01 05:00+00', 0), ('2024-03-02 05:00+00', 0);
SELECT backfill.register('r21.tgt2', 'ts',
    source => 'SELECT ts, v FROM r21.src WHERE ts >= $1 AND ts < $2',
    source_horizon => 'SELECT ''2024-03-03 00:00+00''::timestamptz') AS version;
SELECT backfill.plan('r21.tgt2', '2024-03-01', '2024-03-05', probe => false) AS run_n \gset
SELECT status, chunks_total, chunks_done, chunks_no_source, chunks_pending, percent
  FROM backfill.progress WHERE run_id = :run_n;
SELECT backfill.cancel(:run_n) AS cancelled;
SELECT backfill.plan('r21.tgt2', '2024-03-01', '2024-03-05', probe => false,
                     clear_no_source => true) AS run_n \gset
SELECT status, chunks_total, chunks_done, chunks_no_source, chunks_pending, percent
  FROM backfill.progress WHERE run_id = :run_n;
-- The first no_source chunk is reached and cleared: settled now.
CALL backfill.run(:run_n, max_chunks => 1);
SELECT status, chunks_total, chunks_done, chunks_no_source, chunks_pending, percent
  FROM backfill.progress WHERE run_id = :run_n;
SELECT chunk_no, status, rows_deleted FROM backfill.history WHERE run_id = :run_n ORDER BY 1;
SELECT count(*) AS rows_left_on_mar_1 FROM r21.tgt2 WHERE ts < '2024-03-02';
SELECT backfill.cancel(:run_n) AS cancelled;
