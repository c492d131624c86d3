-- Issue 28, "also found, smaller": each item refused or bounded, and shown
-- to hold.
-- 1. backfill.max_workers caps the background workers of parallel chunks
--    (the count across sessions and databases: specs/parallel_max_workers);
-- 2. watch and unwatch need rights on the source too (its owner, or
--    TRIGGER), not only on the target;
-- 3. a trigger of the watch's name that calls the watch's function but
--    fires on other events, at another time or under another condition is
--    not taken for the watch (42710);
-- 4. a watched target's chunk is at least 1 hour, so another role's
--    re-registration cannot multiply the log rows of the source's writes;
-- 5. two chunks of one parallel call that would wait for each other
--    unseen (a unique key without the time column) run one at a time and
--    the second fails with 23505 at once, as in a serial run;
-- 6. refresh ids of targets a role may not read do not exist for it.
-- (The watch lock a chunk holds no longer makes the source's writers wait:
-- specs/changed_regions_race.)
SET TimeZone = 'UTC';
SET DateStyle = ISO;
SET IntervalStyle = postgres;
\set VERBOSITY default
SELECT setval('backfill.runs_run_id_seq', 8901, false) IS NOT NULL AS seq_set;
CREATE SCHEMA hd;
CREATE TABLE hd.raw (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO hd.raw SELECT t, 1 FROM generate_series('2024-05-01'::timestamptz, '2024-05-04 23:00', '1 hour') t;
CREATE TABLE hd.daily (day timestamptz NOT NULL, v int);
SELECT backfill.register('hd.daily', 'day',
    'SELECT $1 AS day, sum(v)::int AS v FROM hd.raw WHERE ts >= $1 AND ts < $2');
CREATE FUNCTION hd.slow() RETURNS bool LANGUAGE sql AS 'SELECT pg_sleep(0.2) IS NOT NULL';
CREATE TABLE hd.slowdaily (day timestamptz NOT NULL, v int);
SELECT backfill.register('hd.slowdaily', 'day',
    'SELECT $1 AS day, sum(v)::int AS v FROM hd.raw WHERE ts >= $1 AND ts < $2 AND hd.slow()');

-- 1. backfill.max_workers: -1 by default (a quarter of
-- max_worker_processes, at least 2); only superusers change it.
SHOW backfill.max_workers;
CREATE ROLE regress_hd_user;
SET ROLE regress_hd_user;
SET backfill.max_workers = 100;
RESET ROLE;
-- One worker slot for the cluster: a call asking for 2 goes on with 1, and
-- says so; with none, its chunks run in the session.
SET backfill.notices = summary;
SET backfill.notice_timing = off;
SET backfill.max_workers = 1;
SELECT backfill.plan('hd.slowdaily', '2024-05-01', '2024-05-05', probe => false) AS r \gset
CALL backfill.run(:r, parallel => 2);
SELECT count(*) FILTER (WHERE executed_via = 'worker') AS by_workers,
       (SELECT count(*) FROM backfill.chunks o
         WHERE o.run_id = :r AND EXISTS (
           SELECT FROM backfill.chunks p WHERE p.run_id = o.run_id
              AND p.chunk_no <> o.chunk_no
              AND p.started_at < o.finished_at AND p.finished_at > o.started_at)) AS overlapping
  FROM backfill.chunks WHERE run_id = :r;
SET backfill.max_workers = 0;
SELECT backfill.plan('hd.slowdaily', '2024-05-01', '2024-05-03', probe => false) AS r \gset
CALL backfill.run(:r, parallel => 2);
SELECT string_agg(executed_via, ',' ORDER BY chunk_no) AS via
  FROM backfill.chunks WHERE run_id = :r;
RESET backfill.max_workers;
-- No slot is left taken: pg_locks shows none of the cluster's worker slots.
SELECT count(*) AS slots_held FROM pg_locks
 WHERE locktype = 'advisory' AND database = 0 AND classid = 1111883783;

-- 2. Watch rights.  The role may rewrite the target and write the source,
-- but neither owns the source nor holds TRIGGER on it.
SELECT backfill.plan('hd.daily', '2024-05-01', '2024-05-05', probe => false) AS r \gset
SET client_min_messages = warning;
CALL backfill.run(:r);
RESET client_min_messages;
GRANT USAGE, CREATE ON SCHEMA hd TO regress_hd_user;
GRANT SELECT, INSERT, DELETE ON hd.daily TO regress_hd_user;
GRANT SELECT, INSERT, UPDATE ON hd.raw TO regress_hd_user;
SELECT backfill.watch('hd.daily', 'hd.raw', 'ts');
SET ROLE regress_hd_user;
-- unwatching someone else's source: 42501, the watch stays
SELECT backfill.unwatch('hd.daily', 'hd.raw');
\echo :LAST_ERROR_SQLSTATE
SELECT backfill.unwatch('hd.daily');
\echo :LAST_ERROR_SQLSTATE
-- watching it (again, or from another target): 42501 too
SELECT backfill.watch('hd.daily', 'hd.raw', 'ts');
\echo :LAST_ERROR_SQLSTATE
-- a table of its own it may watch
CREATE TABLE hd.mine (ts timestamptz NOT NULL);
SELECT backfill.watch('hd.daily', 'hd.mine', 'ts');
SELECT backfill.unwatch('hd.daily', 'hd.mine');
DROP TABLE hd.mine;
RESET ROLE;
SELECT source FROM backfill.watches WHERE target = 'hd.daily'::regclass;
-- the TRIGGER privilege is enough
GRANT TRIGGER ON hd.raw TO regress_hd_user;
SET ROLE regress_hd_user;
SELECT backfill.unwatch('hd.daily', 'hd.raw');
SELECT backfill.watch('hd.daily', 'hd.raw', 'ts');
RESET ROLE;
REVOKE TRIGGER ON hd.raw FROM regress_hd_user;

-- 3. Triggers of the watch's names calling backfill._watch_trigger on
-- other events, at another time, for some columns only or under another
-- condition are not taken for the watch: 42710, no watch added.
CREATE TABLE hd.decoy1 (ts timestamptz NOT NULL, x int);
CREATE TRIGGER backfill_watch_update AFTER INSERT ON hd.decoy1
    FOR EACH STATEMENT EXECUTE FUNCTION backfill._watch_trigger();
SELECT backfill.watch('hd.daily', 'hd.decoy1', 'ts');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE hd.decoy2 (ts timestamptz NOT NULL, x int);
CREATE TRIGGER backfill_watch_update AFTER UPDATE OF x ON hd.decoy2
    FOR EACH STATEMENT EXECUTE FUNCTION backfill._watch_trigger();
SELECT backfill.watch('hd.daily', 'hd.decoy2', 'ts');
CREATE TABLE hd.decoy3 (ts timestamptz NOT NULL, x int);
CREATE TRIGGER backfill_watch_truncate BEFORE TRUNCATE ON hd.decoy3
    FOR EACH STATEMENT EXECUTE FUNCTION backfill._watch_trigger();
SELECT backfill.watch('hd.daily', 'hd.decoy3', 'ts');
CREATE TABLE hd.decoy4 (ts timestamptz NOT NULL, x int);
CREATE TRIGGER backfill_watch_row_ts AFTER INSERT ON hd.decoy4 FOR EACH ROW
    WHEN (false AND backfill._watch_row('hd.decoy4'::regclass, 'ts', NEW.ts))
    EXECUTE FUNCTION backfill._watch_trigger();
SELECT backfill.watch('hd.daily', 'hd.decoy4', 'ts');
CREATE TABLE hd.decoy5 (ts timestamptz NOT NULL, x int);
CREATE TRIGGER backfill_watch_delete AFTER DELETE ON hd.decoy5
    REFERENCING OLD TABLE AS backfill_old
    FOR EACH STATEMENT EXECUTE FUNCTION backfill._watch_trigger();
ALTER TABLE hd.decoy5 DISABLE TRIGGER backfill_watch_delete;
SELECT backfill.watch('hd.daily', 'hd.decoy5', 'ts');
SELECT count(*) AS watches FROM backfill.watches
 WHERE source::text LIKE 'hd.decoy%';
-- backfill's own triggers are taken for the watch's: watching again works
SELECT backfill.watch('hd.daily', 'hd.raw', 'ts');
DROP TABLE hd.decoy1, hd.decoy2, hd.decoy3, hd.decoy4, hd.decoy5;

-- 4. A watched target's chunk is at least 1 hour: a re-registration with
-- '1 microsecond' is refused (it made a 50,000-row insert over four days
-- log 50,004 rows instead of 4), as is a watch of such a target.
SET ROLE regress_hd_user;
SELECT backfill.register('hd.daily', 'day',
    'SELECT $1 AS day, sum(v)::int AS v FROM hd.raw WHERE ts >= $1 AND ts < $2',
    chunk => '1 microsecond');
RESET ROLE;
SELECT count(*) AS versions FROM backfill.definitions WHERE target = 'hd.daily'::regclass;
CREATE TABLE hd.fine (at timestamptz NOT NULL, v int);
SELECT backfill.register('hd.fine', 'at',
    'SELECT ts AS at, v FROM hd.raw WHERE ts >= $1 AND ts < $2', chunk => '30 minutes');
SELECT backfill.watch('hd.fine', 'hd.raw', 'ts');
-- at 1 hour it may be watched; a 50,000-row insert then logs one row per
-- hour its rows span (here 50,000 seconds: 14 rows; hd.daily, 1)
SELECT backfill.register('hd.fine', 'at',
    'SELECT ts AS at, v FROM hd.raw WHERE ts >= $1 AND ts < $2', chunk => '1 hour');
SELECT backfill.plan('hd.fine', '2024-05-01', '2024-05-05', probe => false) AS r \gset
SET client_min_messages = warning;
CALL backfill.run(:r);
RESET client_min_messages;
SELECT backfill.watch('hd.fine', 'hd.raw', 'ts');
INSERT INTO hd.raw SELECT '2024-05-02'::timestamptz + (i % 86400) * interval '1 second', 0
  FROM generate_series(1, 50000) i;
SELECT target::text, count(*) AS log_rows FROM backfill.changed_regions
 WHERE target IN ('hd.fine'::regclass, 'hd.daily'::regclass) GROUP BY 1 ORDER BY 1;
SELECT backfill.unwatch('hd.fine');
SELECT backfill.unwatch('hd.daily');
DELETE FROM hd.raw WHERE v = 0;

-- 5. Two chunks whose sources return the same keys in opposite orders:
-- with a unique key that leaves out the time column, they would wait for
-- each other unseen inside one lock group (on some releases for ever,
-- past pg_terminate_backend).  The target's chunks run one at a time, so
-- the second meets the first's committed key and fails at once with
-- 23505, exactly as serially.
CREATE TABLE hd.keyed (day timestamptz NOT NULL, k int UNIQUE);
CREATE FUNCTION hd.pause(o bigint) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
    IF o = 2 THEN PERFORM pg_sleep(0.3); END IF;
    RETURN true;
END $$;
SELECT backfill.register('hd.keyed', 'day',
    $q$SELECT $1 AS day, u.k
         FROM unnest(CASE WHEN $1 = '2024-05-01' THEN ARRAY[1, 2] ELSE ARRAY[2, 1] END)
              WITH ORDINALITY u(k, o)
        WHERE hd.pause(u.o)$q$);
SET backfill.chunk_timeout = '60s';
SELECT backfill.plan('hd.keyed', '2024-05-01', '2024-05-03', probe => false) AS r \gset
CALL backfill.run(:r, parallel => 2);
SELECT chunk_no, status, error_sqlstate, executed_via FROM backfill.chunks
 WHERE run_id = :r ORDER BY chunk_no;
-- the same serially
SELECT backfill.cancel(:r);
SELECT backfill.plan('hd.keyed', '2024-05-01', '2024-05-03', probe => false) AS r \gset
CALL backfill.run(:r);
SELECT chunk_no, status, error_sqlstate, executed_via FROM backfill.chunks
 WHERE run_id = :r ORDER BY chunk_no;
SELECT backfill.cancel(:r);
RESET backfill.chunk_timeout;

-- 6. A refresh of a target the role may not read does not exist for it:
-- the very NOTICE of an unknown id, naming no role; unschedule_refresh
-- finds none.  (A role that may read the target but did not schedule the
-- refresh still gets 42501: sql/84_refresh.)
SELECT setval(pg_get_serial_sequence('backfill.refreshes', 'refresh_id'), 8901, false)
       IS NOT NULL AS refresh_ids_fixed;
SELECT backfill.schedule_refresh('hd.slowdaily') > 0 AS scheduled;
CREATE ROLE regress_hd_nobody;
GRANT USAGE ON SCHEMA hd TO regress_hd_nobody;
SET ROLE regress_hd_nobody;
CALL backfill._refresh_tick(8901);
CALL backfill._refresh_tick(8999);
SELECT backfill.unschedule_refresh(8901) AS removed;
RESET ROLE;
SELECT backfill.unschedule_refresh(8901) AS removed;

RESET backfill.notices;
RESET backfill.notice_timing;
SET client_min_messages = warning;
SELECT backfill.unregister('hd.daily'), backfill.unregister('hd.slowdaily'),
       backfill.unregister('hd.fine'), backfill.unregister('hd.keyed');
DROP SCHEMA hd CASCADE;
RESET client_min_messages;
DROP OWNED BY regress_hd_user, regress_hd_nobody;
DROP ROLE regress_hd_user;
DROP ROLE regress_hd_nobody;
