-- A newcomer's hour (issue 17): the run id returned by backfill(); a
-- failure's hint fits its cause (definition: replan; transient and the
-- rest: run; groups: run_group / replan_group) and shows the chunk's own
-- hint; the cause and the next call are stored with the chunk; replan and
-- replan_group, and what they refuse; notices that name run and table,
-- pluralise, end with a summary, and backfill.notices = summary; register
-- refuses a source that ignores the range; a duplicate key from the source
-- says so.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
-- run ids of this file start at 7501, whatever ran before
SELECT setval('backfill.runs_run_id_seq', 7501, false) IS NOT NULL AS seq_set;
CREATE SCHEMA nc;
CREATE TABLE nc.raw (ts timestamptz, v int);
INSERT INTO nc.raw SELECT '2024-05-01'::timestamptz + i * interval '12 hours', 1
  FROM generate_series(0, 2 * 10 - 1) i;
CREATE TABLE nc.daily (day timestamptz PRIMARY KEY, n int);
CREATE TABLE nc.cfg (broken_day timestamptz);

-- 1. register refuses a source that reads neither $1 nor $2 (it would
-- return the same rows for every chunk), with the hint the first chunk
-- gave before; nothing is registered.
SELECT backfill.register('nc.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, count(*)::int AS n FROM nc.raw GROUP BY 1$$);
SELECT count(*) AS registered FROM backfill.targets WHERE target = 'nc.daily'::regclass;
-- One bound alone is accepted (a daily source keyed on its day).
SELECT backfill.register('nc.daily', 'day',
    $$SELECT $1 AS day, count(*)::int AS n FROM nc.raw WHERE date_trunc('day', ts) = $1$$);
-- Version 2: fails on the day nc.cfg names (a definition cause).
SELECT backfill.register('nc.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day,
             (count(*) / CASE WHEN date_trunc('day', ts) IN (SELECT broken_day FROM nc.cfg)
                              THEN 0 ELSE 1 END)::int AS n
        FROM nc.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    definition => 'v2');

-- 2. CALL backfill.backfill returns its run id (INOUT run_id): a one-row
-- result, picked up by \gset.
CALL backfill.backfill('nc.daily', '2024-05-01', '2024-05-03') \gset
SELECT :run_id AS run_id, status FROM backfill.runs WHERE run_id = :run_id;

-- 3. A definition cause: the chunk's error, then the hint naming replan;
-- cause and next call are stored with the chunk.
INSERT INTO nc.cfg VALUES ('2024-05-05');
SELECT backfill.plan('nc.daily', '2024-05-03', '2024-05-08', probe => false) AS r \gset
CALL backfill.run(:r);
SELECT chunk_no, status, error_sqlstate, error_cause, next_step
  FROM backfill.chunks WHERE run_id = :r ORDER BY chunk_no;
-- Retrying repeats it (the run is pinned to version 2).
CALL backfill.run(:r);

-- 4. replan refuses: a done run, a cancelled run, an unknown run, NULL, a
-- run of another planner.
SELECT backfill.replan(:run_id);
SELECT backfill.plan('nc.daily', '2024-05-09', '2024-05-10') AS c \gset
SELECT backfill.cancel(:c);
SELECT backfill.replan(:c);
SELECT backfill.replan(999999);
SELECT backfill.replan(NULL);
CREATE ROLE regress_nc_other;
GRANT USAGE ON SCHEMA nc TO regress_nc_other;
GRANT SELECT, INSERT, DELETE ON nc.daily TO regress_nc_other;
SET ROLE regress_nc_other;
SELECT backfill.replan(:r);
RESET ROLE;

-- 5. The fix: a new definition version, then replan.  One transaction: the
-- old run is cancelled (its done chunks stay done), the new run has exactly
-- the unfinished ranges, under version 3, probed again, with the old note
-- and options, and records the run it continues.
SELECT backfill.register('nc.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, count(*)::int AS n
        FROM nc.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    definition => 'v3: no longer divides');
SELECT backfill.replan(:r) AS r2 \gset
SELECT run_id = :r AS old, status, definition_version, probe, continues_run = :r AS continues
  FROM backfill.runs WHERE run_id IN (:r, :r2) ORDER BY run_id;
SELECT run_id = :r AS old, chunk_no, chunk_start::date, status
  FROM backfill.chunks WHERE run_id IN (:r, :r2) ORDER BY run_id, chunk_no;
-- Nothing left to replan in the old run now; the new one runs its probe,
-- then the rest.
SELECT backfill.replan(:r);
CALL backfill.run(:r2);
CALL backfill.run(:r2);
SELECT day::date, n FROM nc.daily ORDER BY day;
-- history shows the run each run continues.
SELECT run_id = :r2 AS new_run, chunk_no, status, continues_run = :r AS continues
  FROM backfill.history WHERE run_id IN (:r, :r2) ORDER BY run_id, chunk_no;

-- 6. A run with only done chunks left but not marked done yet does not
-- exist; a run with nothing left: all its chunks cancelled but not the run
-- is impossible too.  A failed probe run replans with its probe.
INSERT INTO nc.cfg VALUES ('2024-05-08');
SELECT backfill.register('nc.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day,
             (count(*) / CASE WHEN date_trunc('day', ts) IN (SELECT broken_day FROM nc.cfg)
                              THEN 0 ELSE 1 END)::int AS n
        FROM nc.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    definition => 'v4');
SELECT backfill.plan('nc.daily', '2024-05-08', '2024-05-10', note => 'probe again',
                     backwards => true) AS p \gset
CALL backfill.run(:p);
SELECT backfill.replan(:p) AS p2 \gset
SELECT status, probe, backwards, note, continues_run = :p AS continues
  FROM backfill.runs WHERE run_id = :p2;
SELECT backfill.cancel(:p2);

-- 7. Other causes.  The ledger gate (23514, definition) and a row outside
-- the range (definition) name replan; the chunk's own hint comes first.
CREATE TABLE nc.gated (day timestamptz, n int);
SELECT backfill.register('nc.gated', 'day',
    $$SELECT date_trunc('day', ts) AS day, count(*)::int AS n
        FROM nc.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    ledger => 'SELECT 5', measure => 'sum(n)');
SELECT backfill.plan('nc.gated', '2024-05-01', '2024-05-02', probe => false) AS g \gset
CALL backfill.run(:g);
SELECT error_sqlstate, error_cause, next_step FROM backfill.chunks WHERE run_id = :g;
CREATE TABLE nc.outside (day timestamptz, n int);
SELECT backfill.register('nc.outside', 'day',
    $$SELECT date_trunc('day', ts) AS day, count(*)::int AS n
        FROM nc.raw WHERE ts >= $1 - interval '1 day' AND ts < $2 GROUP BY 1$$);
SELECT backfill.plan('nc.outside', '2024-05-02', '2024-05-03', probe => false) AS o \gset
CALL backfill.run(:o);
SELECT error_sqlstate, error_cause, next_step FROM backfill.chunks WHERE run_id = :o;
-- A duplicate key from the source: said as such, not "already exists".
CREATE TABLE nc.dup (day timestamptz PRIMARY KEY, n int);
SELECT backfill.register('nc.dup', 'day',
    $$SELECT date_trunc('day', ts) AS day, 1 AS n
        FROM nc.raw WHERE ts >= $1 AND ts < $2$$);
SELECT backfill.plan('nc.dup', '2024-05-01', '2024-05-02', probe => false) AS d \gset
CALL backfill.run(:d);
SELECT error_sqlstate, error_cause, next_step FROM backfill.chunks WHERE run_id = :d;
-- chunk_timeout is transient: run again (after raising the setting).
CREATE TABLE nc.slow (day timestamptz, n int);
SELECT backfill.register('nc.slow', 'day',
    $$SELECT date_trunc('day', ts) AS day, count(*)::int AS n
        FROM nc.raw, pg_sleep(0.2) WHERE ts >= $1 AND ts < $2 GROUP BY 1$$);
SELECT backfill.plan('nc.slow', '2024-05-01', '2024-05-02', probe => false) AS s \gset
SET backfill.chunk_timeout = '50ms';
CALL backfill.run(:s);
RESET backfill.chunk_timeout;
SELECT error_sqlstate, error_cause, next_step FROM backfill.chunks WHERE run_id = :s;
CALL backfill.run(:s);
-- A privilege lost (environment): fix it, then run.
CREATE TABLE nc.hidden (ts timestamptz, v int);
INSERT INTO nc.hidden VALUES ('2024-05-01 10:00+00', 1);
GRANT SELECT ON nc.hidden TO regress_nc_other;
CREATE TABLE nc.mine (day timestamptz, n int);
ALTER TABLE nc.mine OWNER TO regress_nc_other;
GRANT CREATE, USAGE ON SCHEMA nc TO regress_nc_other;
SET ROLE regress_nc_other;
SELECT backfill.register('nc.mine', 'day',
    $$SELECT date_trunc('day', ts) AS day, count(*)::int AS n
        FROM nc.hidden WHERE ts >= $1 AND ts < $2 GROUP BY 1$$);
SELECT backfill.plan('nc.mine', '2024-05-01', '2024-05-02', probe => false) AS m \gset
RESET ROLE;
REVOKE SELECT ON nc.hidden FROM regress_nc_other;
SET ROLE regress_nc_other;
CALL backfill.run(:m);
SELECT error_sqlstate, error_cause, next_step FROM backfill.chunks WHERE run_id = :m;
SELECT backfill.cancel(:m);
RESET ROLE;

-- 8. Groups: the probe's hint and a failure's hint name the group's calls;
-- replan refuses a member; replan_group replans the unfinished runs, the
-- downstream chunks widened as a cascade does.
CREATE TABLE nc.weekly (week timestamptz, n int);
SELECT backfill.register('nc.weekly', 'week',
    $$SELECT date_trunc('week', day) AS week, sum(n)::int AS n
        FROM nc.daily WHERE day >= $1 AND day < $2 GROUP BY 1$$,
    chunk => '1 week');
SELECT backfill.depend('nc.weekly', 'nc.daily');
SELECT backfill.plan('nc.daily', '2024-05-06', '2024-05-09', cascade => true) AS grp \gset
CALL backfill.run_group(:grp);
CALL backfill.run_group(:grp);
SELECT r.run_id = :grp AS root, c.chunk_no, c.status, c.error_cause, c.next_step
  FROM backfill.runs r JOIN backfill.chunks c USING (run_id)
 WHERE r.group_id = :grp ORDER BY r.run_id, c.chunk_no;
SELECT backfill.replan(:grp);
SELECT backfill.replan_group(999999);
DELETE FROM nc.cfg;
SELECT backfill.replan_group(:grp) AS grp2 \gset
SELECT r.target, r.group_id = :grp2 AS new_group, r.status, r.probe,
       o.target = r.target AS continues_same_target,
       (SELECT string_agg(chunk_start::date || '..' || chunk_end::date, ', ' ORDER BY chunk_no)
          FROM backfill.chunks c WHERE c.run_id = r.run_id) AS chunks
  FROM backfill.runs r LEFT JOIN backfill.runs o ON o.run_id = r.continues_run
 WHERE r.group_id IN (:grp, :grp2) ORDER BY r.run_id;
CALL backfill.run_group(:grp2);
CALL backfill.run_group(:grp2);
SELECT backfill.replan_group(:grp2);

-- 9. backfill.notices = summary: a month of days prints its summary, not a
-- line per chunk.
CREATE TABLE nc.month (day timestamptz, n int);
SELECT backfill.register('nc.month', 'day',
    $$SELECT date_trunc('day', ts) AS day, count(*)::int AS n
        FROM nc.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$$);
SET backfill.notices = summary;
CALL backfill.backfill('nc.month', '2024-05-01', '2024-06-01');
RESET backfill.notices;
SHOW backfill.notices;
SET backfill.notices = 'every';

-- 10. The narrow views.  progress_brief: a failed run shows its next
-- call; a scheduled run outside its quiet hours is waiting, with when it
-- resumes; history_brief has eight columns.
SELECT run_id, target, state, chunks, percent, next_step
  FROM backfill.progress_brief WHERE run_id IN (:g, :o) ORDER BY run_id;
SELECT backfill.plan('nc.month', '2024-06-01', '2024-06-03', probe => false) AS q \gset
SELECT run_id, state, chunks, resumes_at, next_step
  FROM backfill.progress_brief WHERE run_id = :q;
SELECT backfill.schedule(:q, '0 0 30 2 *', quiet_hours =>
         to_char(now() AT TIME ZONE 'UTC' + interval '2 hours', 'HH24:MI') || '-' ||
         to_char(now() AT TIME ZONE 'UTC' + interval '3 hours', 'HH24:MI')) > 0 AS scheduled;
SELECT state, resumes_at > now() AS later,
       resumes_at <= now() + interval '2 hours' AS within_two_hours, next_step
  FROM backfill.progress_brief WHERE run_id = :q;
SELECT backfill.unschedule(:q);
SELECT backfill.schedule(:q, '0 0 30 2 *') > 0 AS scheduled;
SELECT state, resumes_at, next_step FROM backfill.progress_brief WHERE run_id = :q;
SELECT backfill.cancel(:q);
SELECT count(*) AS columns FROM information_schema.columns
 WHERE table_schema = 'backfill' AND table_name IN ('progress_brief', 'history_brief')
 GROUP BY table_name ORDER BY table_name;
SELECT run_id, target, chunk_no, chunk_start, status, rows_inserted, verdict
  FROM backfill.history_brief WHERE run_id = :r2 ORDER BY chunk_no;

-- 11. reconcile of an unfinished run leaves out the chunks not run yet (a
-- NOTICE counts them); include_not_run lists them as not_run.
SELECT backfill.plan('nc.month', '2024-05-01', '2024-05-05') AS u \gset
CALL backfill.run(:u);
SELECT chunk_no, status, verdict FROM backfill.reconcile(:u);
SELECT chunk_no, status, verdict FROM backfill.reconcile(:u, include_not_run => true);
SELECT chunk_no, status, verdict FROM backfill.reconcile(:u, NULL);
SELECT backfill.cancel(:u);

-- 12. cron_eta: the end of a scheduled run from its schedule.  Every
-- 5 minutes, 2 chunks a tick, 10 chunks: 5 ticks, the 5th at 12:25.
SELECT backfill.cron_eta('*/5 * * * *', 2, NULL, NULL, 10, '2024-06-03 12:00:30+00');
-- quiet hours 22:00-06:00 UTC: the first tick at 22:00, the 5th at 22:20.
SELECT backfill.cron_eta('*/5 * * * *', 2, '22:00-06:00', 'UTC', 10, '2024-06-03 12:00:30+00');
-- the same hours in Berlin (UTC+2 in June): from 20:00 UTC.
SELECT backfill.cron_eta('*/5 * * * *', 2, '22:00-06:00', 'Europe/Berlin', 10, '2024-06-03 12:00:30+00');
-- hours 1-5 GMT, Monday to Friday only; June 3, 2024 is a Monday.
SELECT backfill.cron_eta('0 1-5 * * mon-fri', 1, NULL, NULL, 7, '2024-06-03 12:00+00');
-- day of week 7 is Sunday (June 9, 2024): one tick a week at 02:00
SELECT backfill.cron_eta('0 2 * * 7', 1, NULL, NULL, 2, '2024-06-03 12:00+00'),
       backfill.cron_eta('0 2 * * sun', 1, NULL, NULL, 2, '2024-06-03 12:00+00');
-- both day fields restricted: either matches (the 4th, or a Monday)
SELECT backfill.cron_eta('0 0 4 * mon', 1, NULL, NULL, 3, '2024-06-03 12:00+00');
-- a daily tick, a year of days: NULL (more than a year away)
SELECT backfill.cron_eta('@daily', 1, NULL, NULL, 400, '2024-06-03 12:00+00');
SELECT backfill.cron_eta('@daily', 1, NULL, NULL, 3, '2024-06-03 12:00+00');
-- pg_cron's seconds: 30 seconds is two ticks a minute
SELECT backfill.cron_eta('30 seconds', 1, NULL, NULL, 10, '2024-06-03 12:00+00');
-- not understood ('$', a bad field): NULL; nothing left: 0
SELECT backfill.cron_eta('0 0 $ * *', 1, NULL, NULL, 3, '2024-06-03 12:00+00') IS NULL AS not_understood,
       backfill.cron_eta('61 * * * *', 1, NULL, NULL, 3, '2024-06-03 12:00+00') IS NULL AS bad_minute,
       backfill.cron_eta('* * * * *', 1, NULL, NULL, 0, '2024-06-03 12:00+00') AS nothing_left;
SELECT backfill.cron_eta('* * * * *', 0, NULL, NULL, 3);
SELECT backfill.cron_eta('* * * * *', 1, '22:00', 'UTC', 3);
-- progress_brief's eta of a scheduled run comes from its schedule.
SELECT backfill.plan('nc.month', '2024-06-10', '2024-06-20', probe => false) AS e \gset
SELECT backfill.schedule(:e, '0 3 * * *', chunks_per_tick => 5) > 0 AS scheduled;
SELECT eta > interval '1 day' AS over_a_day, eta <= interval '2 days' AS within_two_days
  FROM backfill.progress_brief WHERE run_id = :e;
-- progress too (no chunk has run: the chunk duration would say nothing)
SELECT eta > interval '1 day' AS over_a_day, eta <= interval '2 days' AS within_two_days
  FROM backfill.progress WHERE run_id = :e;
SELECT cron, chunks_per_tick FROM backfill.runs WHERE run_id = :e;
SELECT backfill.cancel(:e);

-- cleanup
SELECT backfill.cancel(x) FROM unnest(ARRAY[:g, :o, :d]::bigint[]) x;
SELECT backfill.unregister('nc.weekly');
SELECT backfill.unregister(t) FROM unnest('{nc.daily,nc.gated,nc.outside,nc.dup,nc.slow,nc.month}'::regclass[]) t;
SELECT backfill.unregister('nc.mine');
