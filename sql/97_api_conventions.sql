-- The conventions of the SQL API (CONTRIBUTING.md, "The SQL API"), checked
-- from pg_proc for every function and procedure of schema backfill whose
-- name does not start with '_'.  Each query lists the offences; it must
-- list none (or exactly the documented exceptions).
SET client_min_messages = warning;

CREATE TEMP VIEW api AS
SELECT p.oid, p.proname, p.prokind, p.proisstrict, p.prorettype,
       p.proargtypes, p.pronargs, p.proargnames, p.proargmodes,
       p.proallargtypes
  FROM pg_proc p
 WHERE p.pronamespace = 'backfill'::regnamespace
   AND p.proname !~ '^_';

-- The input arguments of the API: name, type, position (1-based).
CREATE TEMP VIEW api_args AS
SELECT a.proname, a.oid, u.name, format_type(u.type, NULL) AS type, u.ord
  FROM api a,
       unnest(coalesce(a.proallargtypes, a.proargtypes::oid[]),
              a.proargnames,
              coalesce(a.proargmodes,
                       array_fill('i'::"char", ARRAY[a.pronargs])))
         WITH ORDINALITY AS u(type, name, mode, ord)
 WHERE u.mode IN ('i', 'b');

-- 1. Every schedule_* has an unschedule_* whose first argument has the type
-- schedule_* returns (what schedule_* returns is what unschedule_* takes).
-- The one documented exception, schedule_group (0.1.0 returns the number
-- of runs scheduled): its unschedule_group takes the group's id, its own
-- first argument (as unschedule takes the run_id that schedule took).
SELECT s.proname AS schedule_fn,
       format_type(s.prorettype, NULL) AS returns,
       u.proname AS unschedule_fn,
       (SELECT a.name || ' ' || a.type FROM api_args a
         WHERE a.oid = u.oid AND a.ord = 1) AS takes
  FROM api s
  LEFT JOIN api u ON u.proname = 'un' || s.proname
 WHERE s.proname LIKE 'schedule\_%'
   AND (u.oid IS NULL
        OR CASE WHEN s.proname = 'schedule_group'
                THEN (u.proargtypes[0], u.proargnames[1])
                     IS DISTINCT FROM (s.proargtypes[0], s.proargnames[1])
                ELSE u.proargtypes[0] IS DISTINCT FROM s.prorettype
           END)
 ORDER BY 1;

-- The pairs, as the API has them (run_id, check_id, refresh_id, group_id).
SELECT s.proname AS schedule_fn,
       format_type(s.prorettype, NULL) AS returns,
       u.proname AS unschedule_fn,
       (SELECT a.name || ' ' || a.type FROM api_args a
         WHERE a.oid = u.oid AND a.ord = 1) AS takes
  FROM api s JOIN api u ON u.proname = 'un' || s.proname
 WHERE s.proname ~ '^schedule(_|$)'
 ORDER BY 1;

-- Nothing named schedule* but the pairs above and their inverses.
SELECT proname FROM api
 WHERE proname ~ 'schedule'
   AND proname !~ '^(un)?schedule(_check|_refresh|_group)?$'
 ORDER BY 1;

-- 2. No STRICT function or procedure: a NULL argument raises 22004 instead
-- of answering nothing.
SELECT oid::regprocedure::text AS strict_fn FROM api WHERE proisstrict ORDER BY 1;

-- 3. One argument name, one type across the API.
SELECT name, string_agg(DISTINCT type, ', ') AS types,
       string_agg(DISTINCT proname, ', ') AS used_by
  FROM api_args
 GROUP BY name
HAVING count(DISTINCT type) > 1
 ORDER BY 1;

-- 4. The target first: every function taking a target takes it as its
-- first argument.
SELECT DISTINCT proname, ord AS target_at
  FROM api_args WHERE name = 'target' AND ord <> 1 ORDER BY 1;

-- 5. The target's time column right after the target.
SELECT DISTINCT proname, ord AS time_column_at
  FROM api_args WHERE name = 'time_column' AND ord <> 2 ORDER BY 1;

-- 6. What it looks like for a caller: NULL where NULL makes no sense.
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END
$$;
SELECT q, pg_temp.sqlstate_of(q)
  FROM (VALUES ('SELECT * FROM backfill.lineage(NULL)'),
               ('SELECT * FROM backfill.lineage(''pg_class'', NULL)'),
               ('SELECT * FROM backfill.lineage(''pg_class'', ''-infinity'', NULL)'),
               ('SELECT * FROM backfill.reconcile_group(NULL)'),
               ('SELECT backfill.unschedule_refresh(NULL)'),
               ('SELECT backfill.unschedule_group(NULL)'),
               ('SELECT * FROM backfill.diff(1, chunk_no => 0)')) v(q);


-- 7. The round trips a caller relies on: each unschedule_* takes what its
-- schedule_* returned (Feb 30 never comes: no job fires here).
SET TimeZone = 'UTC';
CREATE SCHEMA apiconv;
CREATE TABLE apiconv.raw (ts timestamptz NOT NULL, v int NOT NULL);
CREATE TABLE apiconv.daily (day timestamptz NOT NULL, v int NOT NULL);
CREATE TABLE apiconv.weekly (week timestamptz NOT NULL, v int NOT NULL);
SELECT backfill.register('apiconv.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(v)::int AS v
        FROM apiconv.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$$) AS version;
SELECT backfill.register('apiconv.weekly', 'week',
    $$SELECT date_trunc('week', day) AS week, sum(v)::int AS v
        FROM apiconv.daily WHERE day >= $1 AND day < $2 GROUP BY 1$$,
    chunk => '1 week') AS version;
SELECT backfill.depend('apiconv.weekly', 'apiconv.daily') AS added;

SELECT backfill.schedule_check('apiconv.daily', '0 0 30 2 *', '3 days') AS check_id \gset
SELECT c.check_id = :check_id AS is_check_id, j.jobname = 'backfill_check_' || :check_id AS its_job
  FROM backfill.checks c JOIN cron.job j ON j.jobid = c.job_id
 WHERE c.target = 'apiconv.daily'::regclass;
SELECT backfill.unschedule_check(:check_id) AS unscheduled;
SELECT count(*) AS jobs_left FROM cron.job WHERE jobname = 'backfill_check_' || :check_id;

SELECT backfill.schedule_refresh('apiconv.daily', '0 0 30 2 *', lookback => '3 days') AS refresh_id \gset
SELECT refresh_id = :refresh_id AS is_refresh_id FROM backfill.refreshes
 WHERE target = 'apiconv.daily'::regclass;
SELECT backfill.unschedule_refresh(:refresh_id) AS unscheduled;
SELECT backfill.unschedule_refresh(:refresh_id) AS unscheduled_again;
SELECT count(*) AS refreshes_left FROM backfill.refreshes;

-- schedule_group returns the number of runs scheduled (0.1.0);
-- unschedule_group takes the group's id and returns the jobs removed.
SELECT backfill.plan('apiconv.daily', '2024-05-06', '2024-05-13', probe => false,
                     cascade => true) AS g \gset
SELECT backfill.schedule_group(:g, '0 0 30 2 *') AS scheduled;
SELECT count(*) AS jobs FROM cron.job j JOIN backfill.runs r ON r.job_id = j.jobid
 WHERE r.group_id = :g;
SELECT backfill.unschedule_group(:g) AS unscheduled;
SELECT backfill.unschedule_group(:g) AS unscheduled_again;
SELECT count(j.jobid) AS jobs, count(r.job_id) AS recorded FROM backfill.runs r
  LEFT JOIN cron.job j ON j.jobid = r.job_id WHERE r.group_id = :g;
SELECT pg_temp.sqlstate_of('SELECT backfill.unschedule_group(-1)');
SELECT backfill.cancel_group(:g) AS cancelled;

-- purge_archive: the target first; both arguments may be left out.
SELECT backfill.purge_archive('apiconv.daily', '0 seconds') AS purged,
       backfill.purge_archive() AS expired;

SET client_min_messages = warning;
SELECT backfill.unregister('apiconv.weekly');
SELECT backfill.unregister('apiconv.daily');
DROP SCHEMA apiconv CASCADE;
RESET client_min_messages;
RESET TimeZone;
