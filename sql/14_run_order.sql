-- Order and limits: backwards runs, max_chunks, cancel, chunks without
-- source data (with and without clear_no_source), a date time column.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
-- run ids of this file start at 1401, whatever ran before
SELECT setval('backfill.runs_run_id_seq', 1401, false) IS NOT NULL AS seq_set;
CREATE SCHEMA ord;
-- A daily signups rollup keyed by date; the raw events only go back to
-- May 3 (older ones have been purged), but the rollup holds placeholder
-- zeros for May 1-2.
CREATE TABLE ord.events (at timestamptz, user_id int);
INSERT INTO ord.events SELECT '2024-05-03'::timestamptz + i * interval '3 hours', i
  FROM generate_series(0, 8 * 8 - 1) i;
CREATE TABLE ord.signups (day date, n int);
INSERT INTO ord.signups SELECT d::date, 0 FROM generate_series('2024-05-01'::date, '2024-05-10', '1 day') d;
CREATE TABLE ord.meta (complete_from timestamptz);
INSERT INTO ord.meta VALUES ('2024-05-03');
SELECT backfill.register('ord.signups', 'day',
    $q$SELECT at::date AS day, count(*)::int AS n FROM ord.events
        WHERE at >= $1 AND at < $2 GROUP BY 1$q$,
    source_horizon => 'SELECT complete_from FROM ord.meta',
    measure => 'sum(n)');

-- 1. Backwards, newest chunk first; chunk numbers stay in time order.
--    Without clear_no_source the placeholder zeros are left alone.
SELECT backfill.plan('ord.signups', '2024-05-01', '2024-05-07', chunk => '2 days',
                     backwards => true, probe => false) AS b \gset
SELECT chunk_no, chunk_start, status, verdict FROM backfill.chunks WHERE run_id = :b ORDER BY chunk_no;
CALL backfill.run(:b, max_chunks => 1);
SELECT chunk_no, status FROM backfill.chunks WHERE run_id = :b ORDER BY chunk_no;
CALL backfill.run(:b);
SELECT status FROM backfill.runs WHERE run_id = :b;
SELECT chunk_no, status, rows_deleted, rows_inserted, executed_by IS NOT NULL AS executed,
       verdict, started_at < (SELECT min(started_at) FROM backfill.chunks
                               WHERE run_id = :b AND chunk_no = 2) AS started_before_2
  FROM backfill.chunks WHERE run_id = :b ORDER BY chunk_no;
SELECT * FROM ord.signups WHERE day < '2024-05-07' ORDER BY day;

-- 2. With clear_no_source, the placeholder zeros are deleted, so the gap
--    is visible; the no_source chunk keeps its status.
SELECT backfill.plan('ord.signups', '2024-05-01', '2024-05-05', probe => true,
                     clear_no_source => true) AS c \gset
-- the probe is the first chunk that runs the source: clearing May 1-2
-- does not count as the probe
CALL backfill.run(:c);
SELECT status FROM backfill.runs WHERE run_id = :c;
SELECT chunk_no, chunk_start, status, rows_deleted, rows_inserted, verdict,
       finished_at IS NOT NULL AS finished
  FROM backfill.chunks WHERE run_id = :c ORDER BY chunk_no;
CALL backfill.run(:c);
SELECT status FROM backfill.runs WHERE run_id = :c;
SELECT * FROM ord.signups WHERE day < '2024-05-07' ORDER BY day;

-- 3. max_chunks: at most that many chunks per call.
SELECT backfill.plan('ord.signups', '2024-05-05', '2024-05-11', probe => false) AS m \gset
CALL backfill.run(:m, max_chunks => 2);
SELECT count(*) FILTER (WHERE status = 'done') AS done,
       count(*) FILTER (WHERE status = 'pending') AS pending
  FROM backfill.chunks WHERE run_id = :m;
SELECT status FROM backfill.runs WHERE run_id = :m;
CALL backfill.run(:m, max_chunks => 3);
SELECT count(*) FILTER (WHERE status = 'done') AS done,
       count(*) FILTER (WHERE status = 'pending') AS pending
  FROM backfill.chunks WHERE run_id = :m;

-- 4. cancel: the pending chunks are cancelled, done ones stay done, the
--    range is free again.
SELECT backfill.cancel(:m);
SELECT status, finished_at IS NOT NULL AS finished FROM backfill.runs WHERE run_id = :m;
SELECT chunk_no, status FROM backfill.chunks WHERE run_id = :m ORDER BY chunk_no;
CALL backfill.run(:m);
SELECT backfill.plan('ord.signups', '2024-05-10', '2024-05-11', probe => false) AS m2 \gset
CALL backfill.run(:m2);
SELECT * FROM ord.signups WHERE day >= '2024-05-07' ORDER BY day;

-- 5. A run whose every chunk has no source data is done at once.
SELECT backfill.plan('ord.signups', '2024-04-20', '2024-04-22') AS z \gset
CALL backfill.run(:z);
SELECT status, finished_at IS NOT NULL AS finished FROM backfill.runs WHERE run_id = :z;

-- 6. The table is dropped while a run is unfinished: the run says so, its
--    planner can still cancel it, and the registration can be removed by
--    OID.
CREATE TABLE ord.gone (day date, n int);
SELECT backfill.register('ord.gone', 'day',
    $q$SELECT at::date AS day, count(*)::int AS n FROM ord.events
        WHERE at >= $1 AND at < $2 GROUP BY 1$q$);
SELECT backfill.plan('ord.gone', '2024-05-03', '2024-05-05') AS g \gset
SELECT 'ord.gone'::regclass::oid AS gone_oid \gset
DROP TABLE ord.gone;
CALL backfill.run(:g);
SELECT backfill.unregister(:gone_oid);
SELECT backfill.cancel(:g);
SELECT backfill.unregister(:gone_oid);
SELECT count(*) AS registered FROM backfill.targets WHERE target_name = 'ord.gone';
SELECT count(*) AS history_kept FROM backfill.chunks WHERE run_id = :g;

-- 7. cancel of a freshly planned run of many chunks (no ANALYZE): every
--     pending chunk is cancelled once, and nothing else is touched.
SELECT backfill.plan('ord.signups', '2030-01-01',
                     '2030-01-01'::timestamptz + interval '20000 minutes',
                     '1 minute', probe => false) AS big \gset
SELECT backfill.cancel(:big) AS cancelled;
SELECT status, count(*) FROM backfill.chunks WHERE run_id = :big GROUP BY status;
SELECT backfill.cancel(:big) AS cancelled_again;

SELECT backfill.unregister('ord.signups');
DROP SCHEMA ord CASCADE;
