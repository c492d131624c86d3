-- Failures: a chunk that fails in the middle and the resume; the ledger
-- gate; chunk_timeout; a cancel; settings changed by a source; calls that
-- cannot commit; bad arguments.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
-- run ids of this file start at 1301, whatever ran before
SELECT setval('backfill.runs_run_id_seq', 1301, false) IS NOT NULL AS seq_set;
CREATE SCHEMA fx;
CREATE FUNCTION pg_temp.try(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
CREATE TABLE fx.raw (ts timestamptz, v int);
INSERT INTO fx.raw SELECT '2024-05-01'::timestamptz + i * interval '4 hours', i
  FROM generate_series(0, 5 * 6 - 1) i;
CREATE TABLE fx.daily (day timestamptz, n int, total int);
INSERT INTO fx.daily SELECT '2024-05-01'::timestamptz + d * interval '1 day', -1, -1
  FROM generate_series(0, 4) d;
-- The source divides by zero for May 3 while fx.cfg says so.
CREATE TABLE fx.cfg (broken bool);
INSERT INTO fx.cfg VALUES (true);
CREATE TABLE fx.ledger (day timestamptz, n int);
INSERT INTO fx.ledger SELECT '2024-05-01'::timestamptz + d * interval '1 day', 6
  FROM generate_series(0, 4) d;
SELECT backfill.register('fx.daily', 'day',
    $q$SELECT date_trunc('day', ts) AS day, count(*)::int AS n,
              (sum(v) / CASE WHEN (SELECT bool_or(broken) FROM fx.cfg)
                              AND date_trunc('day', ts) = '2024-05-03 00:00+00'
                             THEN 0 ELSE 1 END)::int AS total
         FROM fx.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$q$,
    ledger => 'SELECT sum(n) FROM fx.ledger WHERE day >= $1 AND day < $2',
    measure => 'sum(n)');

-- 1. A failure in the middle: chunks 1-2 are committed, chunk 3 is rolled
-- back and recorded, the call ends with the chunk's error.
SELECT backfill.plan('fx.daily', '2024-05-01', '2024-05-06', probe => false) AS r \gset
CALL backfill.run(:r);
SELECT status, finished_at FROM backfill.runs WHERE run_id = :r;
SELECT chunk_no, status, attempts, rows_inserted, error_sqlstate, error_message,
       error_detail, error_hint, executed_by = current_user AS by_me,
       finished_at IS NOT NULL AS finished
  FROM backfill.chunks WHERE run_id = :r ORDER BY chunk_no;
-- May 3 still holds its old row: nothing of the failed chunk was kept.
SELECT * FROM fx.daily ORDER BY day;
-- Fixed: the next call retries chunk 3 (attempts 2) and continues.
UPDATE fx.cfg SET broken = false;
CALL backfill.run(:r);
SELECT status, finished_at IS NOT NULL AS finished FROM backfill.runs WHERE run_id = :r;
SELECT chunk_no, status, attempts, rows_inserted, error_sqlstate, error_message
  FROM backfill.chunks WHERE run_id = :r ORDER BY chunk_no;
SELECT * FROM fx.daily ORDER BY day;

-- A deferred constraint of the target is checked inside the chunk, so
-- its violation is recorded as the chunk's failure.
CREATE TABLE fx.uniq (day timestamptz UNIQUE DEFERRABLE INITIALLY DEFERRED, n int);
SELECT backfill.register('fx.uniq', 'day',
    $q$SELECT date_trunc('day', ts) AS day, 1 AS n FROM fx.raw
        WHERE ts >= $1 AND ts < $2$q$);
SELECT backfill.plan('fx.uniq', '2024-05-01', '2024-05-02', probe => false) AS u \gset
CALL backfill.run(:u);
SELECT chunk_no, status, error_sqlstate, error_message FROM backfill.chunks WHERE run_id = :u;
SELECT count(*) AS uniq_rows FROM fx.uniq;
SELECT backfill.cancel(:u);
SELECT backfill.unregister('fx.uniq');

-- 2. The ledger gate: the ledger says May 2 had 7 rows, the source gives 6.
UPDATE fx.ledger SET n = 7 WHERE day = '2024-05-02';
UPDATE fx.daily SET n = 0 WHERE day = '2024-05-02';
SELECT backfill.plan('fx.daily', '2024-05-01', '2024-05-04', probe => false) AS g \gset
CALL backfill.run(:g);
SELECT status FROM backfill.runs WHERE run_id = :g;
SELECT chunk_no, status, attempts, after_value, ledger_value, ledger_ok, verdict,
       error_sqlstate, error_message, error_detail
  FROM backfill.chunks WHERE run_id = :g ORDER BY chunk_no;
-- the chunk was rolled back: May 2 keeps its old row
SELECT * FROM fx.daily WHERE day = '2024-05-02';
-- Without the gate the figures are still recorded, but the chunk commits.
SELECT backfill.register('fx.daily', 'day',
    $q$SELECT date_trunc('day', ts) AS day, count(*)::int AS n,
              (sum(v) / CASE WHEN (SELECT bool_or(broken) FROM fx.cfg)
                              AND date_trunc('day', ts) = '2024-05-03 00:00+00'
                             THEN 0 ELSE 1 END)::int AS total
         FROM fx.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$q$,
    ledger => 'SELECT sum(n) FROM fx.ledger WHERE day >= $1 AND day < $2',
    measure => 'sum(n)', ledger_gate => false);
-- A run keeps the definition it was planned with: cancel it and plan again.
SELECT backfill.cancel(:g);
SELECT backfill.plan('fx.daily', '2024-05-01', '2024-05-04', probe => false) AS g \gset
CALL backfill.run(:g);
SELECT chunk_no, status, attempts, after_value, ledger_value, ledger_ok, verdict,
       error_sqlstate
  FROM backfill.chunks WHERE run_id = :g ORDER BY chunk_no;
-- A tolerance of 20% accepts 6 against 7.
SELECT backfill.register('fx.daily', 'day',
    $q$SELECT date_trunc('day', ts) AS day, count(*)::int AS n,
              (sum(v) / CASE WHEN (SELECT bool_or(broken) FROM fx.cfg)
                              AND date_trunc('day', ts) = '2024-05-03 00:00+00'
                             THEN 0 ELSE 1 END)::int AS total
         FROM fx.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$q$,
    ledger => 'SELECT sum(n) FROM fx.ledger WHERE day >= $1 AND day < $2',
    measure => 'sum(n)', tolerance => 0.2);
CALL backfill.backfill('fx.daily', '2024-05-02', '2024-05-03');
SELECT ledger_value, after_value, ledger_ok, verdict FROM backfill.chunks
 WHERE run_id = (SELECT max(run_id) FROM backfill.runs);

-- 3. chunk_timeout: a chunk over the limit fails, nothing of it is kept.
CREATE TABLE fx.slow (ts timestamptz, n int);
SELECT backfill.register('fx.slow', 'ts',
    'SELECT ts, v AS n FROM fx.raw, pg_sleep(0.2) WHERE ts >= $1 AND ts < $2');
SET backfill.chunk_timeout = '100ms';
SELECT backfill.plan('fx.slow', '2024-05-01', '2024-05-03', probe => false) AS t \gset
CALL backfill.run(:t);
SELECT chunk_no, status, attempts, error_sqlstate, error_message
  FROM backfill.chunks WHERE run_id = :t ORDER BY chunk_no;
SELECT count(*) AS slow_rows FROM fx.slow;
RESET backfill.chunk_timeout;
CALL backfill.run(:t);
SELECT chunk_no, status, attempts, rows_inserted FROM backfill.chunks
 WHERE run_id = :t ORDER BY chunk_no;

-- 4. A cancel that is not ours (here statement_timeout, which covers the
-- whole CALL) stops the call; the chunk stays pending, attempts unchanged.
SELECT backfill.plan('fx.slow', '2024-05-03', '2024-05-05', probe => false) AS s \gset
SET statement_timeout = '100ms';
CALL backfill.run(:s);
RESET statement_timeout;
SELECT status FROM backfill.runs WHERE run_id = :s;
SELECT chunk_no, status, attempts, error_sqlstate FROM backfill.chunks
 WHERE run_id = :s ORDER BY chunk_no;
CALL backfill.run(:s, max_chunks => 1);
SELECT chunk_no, status, attempts FROM backfill.chunks WHERE run_id = :s ORDER BY chunk_no;
SELECT backfill.cancel(:s);

-- 5. The run's TimeZone and search_path hold for every chunk, whatever a
-- source does to them; the session's own settings come back afterwards.
CREATE SCHEMA fx_src;
CREATE TABLE fx_src.events (ts timestamptz);
INSERT INTO fx_src.events SELECT '2024-05-01'::timestamptz + i * interval '12 hours'
  FROM generate_series(0, 5) i;
CREATE FUNCTION fx_src.poison(lo timestamptz) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
    IF lo = '2024-05-01 00:00+00' THEN
        PERFORM set_config('TimeZone', 'Asia/Kolkata', false);
        PERFORM set_config('search_path', 'pg_catalog', false);
    END IF;
    RETURN true;
END $$;
CREATE TABLE fx.settings (day timestamptz, n int, tz text, sp text);
-- registered and planned with fx_src on the search_path: the source names
-- its table and function without a schema
SET search_path = fx_src, public;
SELECT backfill.register('fx.settings', 'day',
    $q$SELECT date_bin('1 day', ts, '2024-01-01 00:00+00') AS day, count(*)::int AS n,
              current_setting('TimeZone') AS tz, current_setting('search_path') AS sp
         FROM events WHERE ts >= $1 AND ts < $2 AND poison($1) GROUP BY 1$q$);
SELECT backfill.plan('fx.settings', '2024-05-01', '2024-05-04', probe => false) AS p \gset
RESET search_path;
SET TimeZone = 'America/New_York';
CALL backfill.run(:p);
SHOW TimeZone;
SHOW search_path;
SET TimeZone = 'UTC';
SELECT * FROM fx.settings ORDER BY day;

-- 6. Calls that cannot commit per chunk are refused, never a silent no-op.
SELECT backfill.plan('fx.daily', '2024-05-04', '2024-05-06') AS b \gset
BEGIN;
CALL backfill.run(:b);
ROLLBACK;
BEGIN;
CALL backfill.backfill('fx.daily', '2024-05-04', '2024-05-06');
ROLLBACK;
CREATE FUNCTION pg_temp.run_in_function(id bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    CALL backfill.run(id);
END $$;
SELECT pg_temp.run_in_function(:b);
SELECT status FROM backfill.runs WHERE run_id = :b;
SELECT count(*) AS executed FROM backfill.chunks WHERE run_id = :b AND attempts > 0;
-- a top-level DO block may call it
DO $$
DECLARE id bigint := (SELECT max(run_id) FROM backfill.runs WHERE target = 'fx.daily'::regclass);
BEGIN
    CALL backfill.run(id);
END $$;
SELECT status FROM backfill.runs WHERE run_id = :b;

-- 7. Bad arguments.
CALL backfill.run(NULL);
CALL backfill.run(:b, max_chunks => 0);
CALL backfill.run(:b, max_chunks => -1);
CALL backfill.run(999999);
CALL backfill.backfill(NULL, '2024-05-01', '2024-05-02');
CALL backfill.backfill('fx.daily', '2024-05-02', '2024-05-01');
SELECT pg_temp.try('SELECT backfill.cancel(NULL)');
SELECT pg_temp.try('SELECT backfill.cancel(999999)');
SELECT pg_temp.try(format('SELECT backfill.cancel(%s)', :r));
SELECT pg_temp.try($$SELECT * FROM backfill.preview(NULL, '2024-05-01', '2024-05-02')$$);
SELECT pg_temp.try($$SELECT * FROM backfill.preview('fx.daily', NULL, '2024-05-02')$$);
SELECT pg_temp.try($$SELECT * FROM backfill.preview('fx.daily', '2024-05-02', '2024-05-01')$$);
SELECT pg_temp.try($$SELECT * FROM backfill.preview('fx.raw', '2024-05-01', '2024-05-02')$$);
-- a cancelled run says so and does nothing
SELECT backfill.plan('fx.daily', '2024-05-10', '2024-05-12') AS c \gset
SELECT backfill.cancel(:c);
SELECT backfill.cancel(:c);
CALL backfill.run(:c);
SELECT status, finished_at IS NOT NULL AS finished FROM backfill.runs WHERE run_id = :c;
SELECT chunk_no, status FROM backfill.chunks WHERE run_id = :c ORDER BY chunk_no;

-- A failed run can be cancelled; its failed chunk is cancelled with it.
UPDATE fx.cfg SET broken = true;
SELECT backfill.plan('fx.daily', '2024-05-03', '2024-05-04', probe => false) AS f \gset
CALL backfill.run(:f);
SELECT backfill.cancel(:f);
SELECT r.status, c.status AS chunk_status, c.error_sqlstate
  FROM backfill.runs r JOIN backfill.chunks c USING (run_id) WHERE run_id = :f;

SELECT backfill.cancel(:b);
SELECT backfill.unregister('fx.daily');
SELECT backfill.unregister('fx.slow');
SELECT backfill.unregister('fx.settings');
DROP SCHEMA fx CASCADE;
DROP SCHEMA fx_src CASCADE;
