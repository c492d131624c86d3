-- Benchmark of changed regions (issue 18): the cost of a watched source for
-- writers, the stale plan, and a refresh of a few late days against
-- rebuilding the year.  Run against any database with the extension (it
-- creates and drops schema bench_cr):
--     psql -X -d DB -v reps=3 -f bench/changed_regions.sql
-- (it leaves fsync as ALTER SYSTEM RESET makes it).
-- Every figure is the median of "reps" repetitions (default 3, at most 3
-- for the refresh and the rebuild of the year), in ms, taken in turn in the
-- same minutes; the 10,000-row statements, whose difference is within the
-- noise of a few repetitions, are repeated "batch_reps" times (default
-- 5 x reps), watched and plain alternating which goes first.  The ratios
-- are what the goals are stated in (wall-clock time; beside them the
-- backend's CPU time, read from /proc/self/schedstat where the server runs
-- on Linux and the role may read server files, else left empty: it does
-- not wait for the disk, so it shows the watch's own cost with less noise;
-- its ratios are of the means, because some kernels count it in ticks):
--   - a 10,000-row INSERT into a watched source <= 1.05 x unwatched, at the
--     live edge and into already-built days;
--   - 1,000 single-row INSERT statements (each its own transaction) <= 1.15 x
--     unwatched at the live edge (rows at now(): beyond every edge, one
--     comparison each) and <= 1.3 x into built days, with fsync = off (as
--     pg_virtualenv and the test clusters run) and with fsync = on: each
--     repetition runs both settings, in alternating order (ALTER SYSTEM and
--     a reload: a superuser, on a cluster whose fsync is not set on the
--     server's command line; else both rounds run the current setting, and
--     the case names say so), and prints the medians and the median of the
--     paired ratios (watched / plain of the same round);
--   - the log grows by at most one row per (target, chunk) per transaction;
--   - a stale plan over 365 daily chunks with 10,000 logged changes < 1 s;
--   (PostgreSQL's floor for the single rows is printed beside them: at the
--   live edge the same six triggers doing nothing, and one WHEN row trigger
--   alone; into built days a statement trigger that writes one log row,
--   and a row trigger that writes the row's day into a table of the log's
--   shape and index; each paired with the plain loop of its round;)
--   - after late rows in 3 of 365 days, the stale plan + run of those 3
--     chunks >= 50 x faster than rebuilding the year.
\set QUIET on
\if :{?reps}
\else
\set reps 3
\endif
\if :{?batch_reps}
\else
SELECT 5 * :reps AS batch_reps \gset
\endif
SELECT set_config('bench.reps', :'reps', false) AS reps_value \gset
SELECT set_config('bench.batch_reps', :'batch_reps', false) AS batch_reps_value \gset
SELECT :reps >= 2 AS rep2, :reps >= 3 AS rep3 \gset
SET client_min_messages = warning;
SET TimeZone = 'UTC';
DROP SCHEMA IF EXISTS bench_cr CASCADE;
CREATE SCHEMA bench_cr;
-- A year of payments, 2,000 a day; two identical sources, one watched.
CREATE TABLE bench_cr.src_plain (paid_at timestamptz NOT NULL, amount int NOT NULL);
CREATE TABLE bench_cr.src_watched (paid_at timestamptz NOT NULL, amount int NOT NULL);
INSERT INTO bench_cr.src_plain
SELECT '2025-01-01'::timestamptz + (i * interval '1 day') / 2000, 1 + i % 97
  FROM generate_series(0, 365 * 2000 - 1) i;
INSERT INTO bench_cr.src_watched SELECT * FROM bench_cr.src_plain;
CREATE INDEX ON bench_cr.src_plain (paid_at);
CREATE INDEX ON bench_cr.src_watched (paid_at);
-- PostgreSQL's own floor for the single rows, two more copies: the six
-- triggers a watch installs (BEFORE and AFTER INSERT, AFTER UPDATE and
-- DELETE with their transition tables, AFTER TRUNCATE, and an AFTER INSERT
-- row trigger with a WHEN clause), each doing nothing, and that row
-- trigger alone.  What a watch costs beyond the first is its own; the
-- second is the least any trigger-based capture costs.
CREATE TABLE bench_cr.src_floor6 (LIKE bench_cr.src_plain);
CREATE TABLE bench_cr.src_floor1 (LIKE bench_cr.src_plain);
INSERT INTO bench_cr.src_floor6 SELECT * FROM bench_cr.src_plain;
INSERT INTO bench_cr.src_floor1 SELECT * FROM bench_cr.src_plain;
CREATE INDEX ON bench_cr.src_floor6 (paid_at);
CREATE INDEX ON bench_cr.src_floor1 (paid_at);
CREATE FUNCTION bench_cr.idle() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
CREATE TRIGGER b BEFORE INSERT ON bench_cr.src_floor6 FOR EACH STATEMENT EXECUTE FUNCTION bench_cr.idle();
CREATE TRIGGER a AFTER INSERT ON bench_cr.src_floor6 FOR EACH STATEMENT EXECUTE FUNCTION bench_cr.idle();
CREATE TRIGGER u AFTER UPDATE ON bench_cr.src_floor6 REFERENCING OLD TABLE AS o NEW TABLE AS n
    FOR EACH STATEMENT EXECUTE FUNCTION bench_cr.idle();
CREATE TRIGGER d AFTER DELETE ON bench_cr.src_floor6 REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT EXECUTE FUNCTION bench_cr.idle();
CREATE TRIGGER t AFTER TRUNCATE ON bench_cr.src_floor6 FOR EACH STATEMENT EXECUTE FUNCTION bench_cr.idle();
CREATE TRIGGER r AFTER INSERT ON bench_cr.src_floor6 FOR EACH ROW WHEN (NEW.amount < 0)
    EXECUTE FUNCTION bench_cr.idle();
CREATE TRIGGER r AFTER INSERT ON bench_cr.src_floor1 FOR EACH ROW WHEN (NEW.amount < 0)
    EXECUTE FUNCTION bench_cr.idle();
-- Into built days a watch appends a log row per transaction; beside it, a
-- hand-written trigger that does the least of that: one row per statement
-- into an unindexed table.
CREATE TABLE bench_cr.src_logged (LIKE bench_cr.src_plain);
INSERT INTO bench_cr.src_logged SELECT * FROM bench_cr.src_plain;
CREATE INDEX ON bench_cr.src_logged (paid_at);
CREATE TABLE bench_cr.hand_log (at timestamptz);
CREATE FUNCTION bench_cr.log_it() RETURNS trigger LANGUAGE plpgsql AS
    $$BEGIN INSERT INTO bench_cr.hand_log VALUES (now()); RETURN NULL; END$$;
CREATE TRIGGER l AFTER INSERT ON bench_cr.src_logged FOR EACH STATEMENT
    EXECUTE FUNCTION bench_cr.log_it();
-- And the least that keeps what the watch keeps: the row's day, into a
-- table of backfill.changed_regions' shape with its index (target,
-- chunk_start), by a row trigger without WHEN.
CREATE TABLE bench_cr.src_logged_ix (LIKE bench_cr.src_plain);
INSERT INTO bench_cr.src_logged_ix SELECT * FROM bench_cr.src_plain;
CREATE INDEX ON bench_cr.src_logged_ix (paid_at);
CREATE TABLE bench_cr.hand_log_ix (target oid NOT NULL, chunk_start timestamptz NOT NULL,
    chunk_end timestamptz NOT NULL, changed_at timestamptz NOT NULL, source oid,
    CHECK (chunk_start < chunk_end));
CREATE INDEX ON bench_cr.hand_log_ix (target, chunk_start);
CREATE FUNCTION bench_cr.log_chunk() RETURNS trigger LANGUAGE plpgsql AS
    $$BEGIN
        INSERT INTO bench_cr.hand_log_ix
        VALUES (1, date_trunc('day', NEW.paid_at), date_trunc('day', NEW.paid_at) + interval '1 day',
                now(), 2);
        RETURN NULL;
    END$$;
CREATE TRIGGER l AFTER INSERT ON bench_cr.src_logged_ix FOR EACH ROW
    EXECUTE FUNCTION bench_cr.log_chunk();
CREATE TABLE bench_cr.daily (day timestamptz NOT NULL, n int NOT NULL, amount bigint NOT NULL);
SELECT backfill.register('bench_cr.daily', 'day',
    $$SELECT $1 AS day, count(*)::int AS n, coalesce(sum(amount), 0) AS amount
        FROM bench_cr.src_watched WHERE paid_at >= $1 AND paid_at < $2$$);
SELECT backfill.watch('bench_cr.daily', 'bench_cr.src_watched', 'paid_at');
CALL backfill.backfill('bench_cr.daily', '2025-01-01', '2026-01-01');
ANALYZE bench_cr.src_plain, bench_cr.src_watched;

CREATE TABLE bench_cr.timings (case_name text, rep int, ms numeric, cpu_ms numeric);

-- The backend's CPU time so far in ns (NULL where it cannot be read).
CREATE FUNCTION bench_cr.cpu_ns() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    RETURN split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint;
EXCEPTION WHEN OTHERS THEN
    RETURN NULL;
END $$;

-- One timed statement per call.
CREATE PROCEDURE bench_cr.timed(case_name text, rep int, stmt text)
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
    c0 bigint := bench_cr.cpu_ns();
BEGIN
    EXECUTE stmt;
    INSERT INTO bench_cr.timings
    VALUES (case_name, rep, extract(epoch FROM clock_timestamp() - t0) * 1000,
            (bench_cr.cpu_ns() - c0) / 1e6);
END $$;

-- n single-row INSERT statements into tbl at times from t, each committed.
CREATE PROCEDURE bench_cr.singles(case_name text, rep int, tbl text, t timestamptz, n int)
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
    c0 bigint := bench_cr.cpu_ns();
BEGIN
    FOR i IN 1..n LOOP
        EXECUTE format('INSERT INTO %s VALUES ($1, 1)', tbl)
          USING t + i * interval '17 minutes';
        COMMIT;
    END LOOP;
    INSERT INTO bench_cr.timings
    VALUES (case_name, rep, extract(epoch FROM clock_timestamp() - t0) * 1000,
            (bench_cr.cpu_ns() - c0) / 1e6);
    COMMIT;
END $$;
\set QUIET off

-- Writers: batches and single rows, at the live edge (from now(): beyond
-- the watermark and the live edge) and into built days (2025).  Each pair of batches runs watched
-- first in odd repetitions and plain first in even ones, so that a drift of
-- the machine's load weighs on both alike; each pair is its own transaction,
-- so every watched batch into built days logs its chunks.
CREATE PROCEDURE bench_cr.pair(case_name text, rep int, stmt text)
LANGUAGE plpgsql AS $$
BEGIN
    IF rep % 2 = 1 THEN
        CALL bench_cr.timed(case_name || ', watched', rep, format(stmt, 'bench_cr.src_watched'));
        CALL bench_cr.timed(case_name || ', plain', rep, format(stmt, 'bench_cr.src_plain'));
    ELSE
        CALL bench_cr.timed(case_name || ', plain', rep, format(stmt, 'bench_cr.src_plain'));
        CALL bench_cr.timed(case_name || ', watched', rep, format(stmt, 'bench_cr.src_watched'));
    END IF;
END $$;
DO $$
BEGIN
    FOR rep IN 1..current_setting('bench.batch_reps')::int LOOP
        CALL bench_cr.pair('batch 10k, live edge', rep,
            $q$INSERT INTO %s SELECT pg_catalog.now() + i * interval '1 second', 1 FROM generate_series(1, 10000) i$q$);
        COMMIT;
        CALL bench_cr.pair('batch 10k, built days', rep,
            $q$INSERT INTO %s SELECT '2025-03-01'::timestamptz + i * interval '1 minute', 1 FROM generate_series(1, 10000) i$q$);
        COMMIT;
    END LOOP;
END $$;
SELECT :batch_reps AS batches_into_built_days, count(*) AS log_rows,
       count(DISTINCT chunk_start) AS chunks_touched
  FROM backfill.changed_regions;
-- One repetition of the single rows under the fsync setting now in force,
-- named after it.
CREATE PROCEDURE bench_cr.single_round(rep int)
LANGUAGE plpgsql AS $$
DECLARE
    f text := ' [fsync=' || current_setting('fsync') || ']';
    live timestamptz := now() + (rep - 1) * interval '1 month';
BEGIN
    CALL bench_cr.singles('1,000 single rows, live edge, plain' || f, rep, 'bench_cr.src_plain', live, 1000);
    CALL bench_cr.singles('1,000 single rows, live edge, watched' || f, rep, 'bench_cr.src_watched', live, 1000);
    CALL bench_cr.singles('1,000 single rows, live edge, floor: six idle triggers' || f, rep,
                          'bench_cr.src_floor6', live, 1000);
    CALL bench_cr.singles('1,000 single rows, live edge, floor: one WHEN row trigger' || f, rep,
                          'bench_cr.src_floor1', live, 1000);
    CALL bench_cr.singles('1,000 single rows, built days, plain' || f, rep, 'bench_cr.src_plain',
                          '2025-05-01'::timestamptz + (rep - 1) * interval '1 month', 1000);
    CALL bench_cr.singles('1,000 single rows, built days, watched' || f, rep, 'bench_cr.src_watched',
                          '2025-05-01'::timestamptz + (rep - 1) * interval '1 month', 1000);
    CALL bench_cr.singles('1,000 single rows, built days, floor: a log row by hand' || f, rep,
                          'bench_cr.src_logged',
                          '2025-05-01'::timestamptz + (rep - 1) * interval '1 month', 1000);
    CALL bench_cr.singles('1,000 single rows, built days, floor: an indexed log row by hand' || f, rep,
                          'bench_cr.src_logged_ix',
                          '2025-05-01'::timestamptz + (rep - 1) * interval '1 month', 1000);
END $$;
SELECT format('ALTER SYSTEM SET fsync = %s', m) AS set_fsync,
       'SELECT pg_catalog.pg_reload_conf(), pg_catalog.pg_sleep(0.5)' AS reload,
       format('CALL bench_cr.single_round(%s)', rep) AS round
  FROM generate_series(1, :reps) rep,
       LATERAL unnest(CASE WHEN rep % 2 = 1 THEN ARRAY['off', 'on'] ELSE ARRAY['on', 'off'] END)
         WITH ORDINALITY AS x(m, k)
 ORDER BY rep, k \gexec
ALTER SYSTEM RESET fsync;
SELECT pg_catalog.pg_reload_conf();

-- The stale plan over 365 daily chunks with 10,000 logged changes (the
-- log as 10,000 transactions touching every day leave it), cancelled after.
INSERT INTO backfill.changed_regions (target, chunk_start, chunk_end, changed_at)
SELECT 'bench_cr.daily', d, d + interval '1 day', now()
  FROM generate_series(1, 10000) i,
       LATERAL (SELECT '2025-01-01'::timestamptz + (i % 365) * interval '1 day' AS d) x;
DO $$
DECLARE
    r bigint;
BEGIN
    FOR rep IN 1..current_setting('bench.reps')::int LOOP
        CALL bench_cr.timed('stale plan, 365 chunks, 10,000 changes', rep,
            $q$SELECT backfill.cancel(backfill.plan('bench_cr.daily', '2025-01-01', '2026-01-01', only_chunks => 'stale'))$q$);
    END LOOP;
END $$;
DELETE FROM backfill.changed_regions;

-- A refresh of 3 late days against rebuilding the year (a plan without a
-- probe, then its run; as CALLs at top level).
INSERT INTO bench_cr.timings
SELECT 'x', 0, 0 WHERE false;
\set QUIET on
SELECT clock_timestamp() AS t0 \gset
INSERT INTO bench_cr.src_watched VALUES ('2025-02-10 10:00', 5), ('2025-07-04 10:00', 5), ('2025-11-30 10:00', 5);
SELECT backfill.plan('bench_cr.daily', '2025-01-01', '2026-01-01', only_chunks => 'stale', probe => false) AS r \gset
CALL backfill.run(:r);
INSERT INTO bench_cr.timings SELECT 'refresh: 3 stale days of 365', 1, extract(epoch FROM clock_timestamp() - :'t0') * 1000;
\if :rep2
SELECT clock_timestamp() AS t0 \gset
INSERT INTO bench_cr.src_watched VALUES ('2025-02-11 10:00', 5), ('2025-07-05 10:00', 5), ('2025-12-01 10:00', 5);
SELECT backfill.plan('bench_cr.daily', '2025-01-01', '2026-01-01', only_chunks => 'stale', probe => false) AS r \gset
CALL backfill.run(:r);
INSERT INTO bench_cr.timings SELECT 'refresh: 3 stale days of 365', 2, extract(epoch FROM clock_timestamp() - :'t0') * 1000;
\endif
\if :rep3
SELECT clock_timestamp() AS t0 \gset
INSERT INTO bench_cr.src_watched VALUES ('2025-02-12 10:00', 5), ('2025-07-06 10:00', 5), ('2025-12-02 10:00', 5);
SELECT backfill.plan('bench_cr.daily', '2025-01-01', '2026-01-01', only_chunks => 'stale', probe => false) AS r \gset
CALL backfill.run(:r);
INSERT INTO bench_cr.timings SELECT 'refresh: 3 stale days of 365', 3, extract(epoch FROM clock_timestamp() - :'t0') * 1000;
\endif
SELECT clock_timestamp() AS t0 \gset
CALL backfill.backfill('bench_cr.daily', '2025-01-01', '2026-01-01');
INSERT INTO bench_cr.timings SELECT 'rebuild: the year, 365 chunks', 1, extract(epoch FROM clock_timestamp() - :'t0') * 1000;
\if :rep2
SELECT clock_timestamp() AS t0 \gset
CALL backfill.backfill('bench_cr.daily', '2025-01-01', '2026-01-01');
INSERT INTO bench_cr.timings SELECT 'rebuild: the year, 365 chunks', 2, extract(epoch FROM clock_timestamp() - :'t0') * 1000;
\endif
\if :rep3
SELECT clock_timestamp() AS t0 \gset
CALL backfill.backfill('bench_cr.daily', '2025-01-01', '2026-01-01');
INSERT INTO bench_cr.timings SELECT 'rebuild: the year, 365 chunks', 3, extract(epoch FROM clock_timestamp() - :'t0') * 1000;
\endif
\set QUIET off

-- The medians, and the ratios.
CREATE TEMP TABLE med AS
SELECT case_name, count(*) AS reps,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) AS median_ms,
       round(min(ms), 1) AS min_ms,
       round(avg(cpu_ms), 1) AS mean_cpu_ms
  FROM bench_cr.timings GROUP BY 1;
SELECT * FROM med ORDER BY 1;
SELECT goal, round(a.median_ms / b.median_ms, 2) AS ratio, limit_ AS "limit",
       round(a.mean_cpu_ms / nullif(b.mean_cpu_ms, 0), 3) AS cpu_ratio
  FROM (VALUES
    ('batch 10k, live edge: watched / plain', 'batch 10k, live edge, watched', 'batch 10k, live edge, plain', '<= 1.05'),
    ('batch 10k, built days: watched / plain', 'batch 10k, built days, watched', 'batch 10k, built days, plain', '<= 1.05'),
    ('1,000 single rows, live edge [fsync=off]: watched / plain', '1,000 single rows, live edge, watched [fsync=off]', '1,000 single rows, live edge, plain [fsync=off]', '<= 1.15'),
    ('1,000 single rows, built days [fsync=off]: watched / plain', '1,000 single rows, built days, watched [fsync=off]', '1,000 single rows, built days, plain [fsync=off]', '<= 1.3'),
    ('1,000 single rows, live edge [fsync=on]: watched / plain', '1,000 single rows, live edge, watched [fsync=on]', '1,000 single rows, live edge, plain [fsync=on]', '<= 1.15'),
    ('1,000 single rows, built days [fsync=on]: watched / plain', '1,000 single rows, built days, watched [fsync=on]', '1,000 single rows, built days, plain [fsync=on]', '<= 1.3'),
    ('rebuild the year / refresh 3 days', 'rebuild: the year, 365 chunks', 'refresh: 3 stale days of 365', '>= 50'))
    AS g(goal, num, den, limit_)
  JOIN med a ON a.case_name = g.num JOIN med b ON b.case_name = g.den;
-- Paired: the median of each repetition's watched / plain (a batch pair,
-- or the two loops of a single-row round under one fsync setting), in wall
-- and CPU time; the floors' rows pair them the same way with the plain loop
-- of their round.
SELECT w.case_name AS paired_case,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY w.ms / p.ms)::numeric, 2) AS median_ratio,
       round(min(w.ms / p.ms), 2) AS min_ratio, round(max(w.ms / p.ms), 2) AS max_ratio,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY w.cpu_ms / nullif(p.cpu_ms, 0))::numeric, 2) AS median_cpu_ratio
  FROM bench_cr.timings w
  JOIN bench_cr.timings p ON p.rep = w.rep
   AND p.case_name = regexp_replace(w.case_name, ', (watched|floor: [^[]*[^[ ])', ', plain')
 WHERE w.case_name LIKE '%, watched%' OR w.case_name LIKE '%, floor: %'
 GROUP BY 1 ORDER BY 1;
SELECT median_ms AS "stale plan ms (goal < 1000)" FROM med
 WHERE case_name = 'stale plan, 365 chunks, 10,000 changes';

\set QUIET on
SELECT backfill.unwatch('bench_cr.daily');
SELECT backfill.unregister('bench_cr.daily');
DROP SCHEMA bench_cr CASCADE;
