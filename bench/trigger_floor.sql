-- Benchmark: the floor of a row trigger (bench/RESULTS.md, turn 7).  Three
-- copies of one indexed table get rounds of 10,000-row INSERT ... SELECT in a
-- rotating order: no trigger, a bare AFTER INSERT row trigger with a WHEN
-- clause, and backfill.watch.  Prints mean CPU (ms, /proc/self/schedstat:
-- as a superuser on Linux) and wall time per statement.  Run against any
-- database with the extension:
--     PGOPTIONS="-c wf.reps=90" psql -X -d DB -f bench/trigger_floor.sql
\set QUIET on
SET client_min_messages = warning;
SET TimeZone = 'UTC';
DROP SCHEMA IF EXISTS wf CASCADE;
CREATE SCHEMA wf;
CREATE FUNCTION wf.cpu_ns() RETURNS bigint LANGUAGE sql AS $$SELECT split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint$$;
CREATE FUNCTION wf.noop() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
CREATE TABLE wf.plain (paid_at timestamptz NOT NULL, amount int NOT NULL);
INSERT INTO wf.plain SELECT '2025-01-01'::timestamptz + (i * interval '1 day') / 2000, 1 + i % 97 FROM generate_series(0, 365 * 2000 - 1) i;
CREATE TABLE wf.whenfalse AS SELECT * FROM wf.plain;
CREATE TABLE wf.watched AS SELECT * FROM wf.plain;
CREATE INDEX ON wf.plain (paid_at); CREATE INDEX ON wf.whenfalse (paid_at); CREATE INDEX ON wf.watched (paid_at);
CREATE TRIGGER t AFTER INSERT ON wf.whenfalse FOR EACH ROW WHEN (NEW.amount < 0) EXECUTE FUNCTION wf.noop();
CREATE TABLE wf.daily (day timestamptz NOT NULL, n int NOT NULL);
SELECT backfill.register('wf.daily', 'day', $$SELECT $1 AS day, count(*)::int AS n FROM wf.watched WHERE paid_at >= $1 AND paid_at < $2$$);
SELECT backfill.watch('wf.daily', 'wf.watched', 'paid_at');
CALL backfill.backfill('wf.daily', '2025-01-01', '2025-01-03');
UPDATE backfill.targets SET watermark = '2026-01-01' WHERE target = 'wf.daily'::regclass;
SELECT backfill.watch('wf.daily', 'wf.watched', 'paid_at');
VACUUM ANALYZE wf.plain, wf.whenfalse, wf.watched;
CREATE TABLE wf.t (mode text, rep int, ms numeric, cpu_ms numeric);
DO $$
DECLARE m text; c0 bigint; t0 timestamptz; arr text[] := ARRAY['plain','whenfalse','watched'];
BEGIN
  FOR rep IN 1..current_setting('wf.reps')::int LOOP
    FOR k IN 0..2 LOOP
      m := arr[1 + (rep + k) % 3];
      t0 := clock_timestamp(); c0 := wf.cpu_ns();
      EXECUTE format($q$INSERT INTO wf.%s SELECT '2026-02-01'::timestamptz + (i + %s * 10000) * interval '1 second', 1 FROM generate_series(1, 10000) i$q$, m, rep);
      INSERT INTO wf.t VALUES (m, rep, extract(epoch FROM clock_timestamp() - t0) * 1000, (wf.cpu_ns() - c0) / 1e6);
    END LOOP;
    COMMIT;
  END LOOP;
END $$;
\set QUIET off
SELECT mode, count(*), round(avg(cpu_ms), 2) cpu, round(avg(ms), 2) ms, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 2) med_ms FROM wf.t GROUP BY 1 ORDER BY 1;
SELECT round(avg(cpu_ms) FILTER (WHERE mode = 'whenfalse') / avg(cpu_ms) FILTER (WHERE mode = 'plain'), 3) AS bare_trigger_cpu,
       round(avg(cpu_ms) FILTER (WHERE mode = 'watched') / avg(cpu_ms) FILTER (WHERE mode = 'plain'), 3) AS watch_cpu,
       round(avg(ms) FILTER (WHERE mode = 'whenfalse') / avg(ms) FILTER (WHERE mode = 'plain'), 3) AS bare_trigger_wall,
       round(avg(ms) FILTER (WHERE mode = 'watched') / avg(ms) FILTER (WHERE mode = 'plain'), 3) AS watch_wall
  FROM wf.t;
\o /dev/null
SELECT backfill.unwatch('wf.daily', 'wf.watched');
SELECT backfill.unregister('wf.daily');
\o
DROP SCHEMA wf CASCADE;
