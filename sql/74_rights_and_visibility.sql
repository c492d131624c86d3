-- Who may link targets, who sees groups and standing checks, and whose
-- dropped table may be unregistered (issue 15, item 5):
-- - depend needs a planner of both targets (their rights and the
--   privileges of each current definition's author): a role that merely
--   writes bob's table cannot hang its own target under it and make bob's
--   cascading plans fail; bob, the upstream's planner, may always detach a
--   dependent he cannot plan;
-- - a group none of whose runs the caller can see, and a standing check on
--   a table the caller cannot read, do not exist for it: the same 42704 as
--   an unknown id, neither creator nor table named;
-- - unregister(<oid>) of a dropped table checks the role that registered
--   it by OID, not by a name that may now belong to another role.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY default
SELECT setval('backfill.runs_run_id_seq', 7400, false) IS NOT NULL AS ids_fixed;
SELECT setval('backfill.checks_check_id_seq', 740, false) IS NOT NULL AS check_ids_fixed;

CREATE ROLE regress_rv_bob;
CREATE ROLE regress_rv_mallory;
CREATE ROLE regress_rv_carol;
CREATE ROLE regress_rv_temp;
GRANT USAGE ON SCHEMA cron TO regress_rv_bob;
CREATE SCHEMA rv;
GRANT USAGE ON SCHEMA rv TO PUBLIC;
CREATE TABLE rv.raw (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO rv.raw
SELECT t, 1 FROM generate_series('2026-01-01 00:00+00'::timestamptz,
                                 '2026-01-05 23:00+00', '1 hour') AS t;
GRANT SELECT ON rv.raw TO PUBLIC;
CREATE TABLE rv.daily (day timestamptz NOT NULL, total int NOT NULL);
CREATE TABLE rv.monthly (month timestamptz NOT NULL, total int NOT NULL);
CREATE TABLE rv.evil (day timestamptz NOT NULL, total int NOT NULL);
ALTER TABLE rv.daily OWNER TO regress_rv_bob;
ALTER TABLE rv.monthly OWNER TO regress_rv_bob;
ALTER TABLE rv.evil OWNER TO regress_rv_mallory;
-- mallory writes bob's daily table, and nothing else of his
GRANT SELECT, INSERT, DELETE ON rv.daily TO regress_rv_mallory;

SET ROLE regress_rv_bob;
SELECT backfill.register('rv.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(v)::int AS total
        FROM rv.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1$$) AS version;
SELECT backfill.register('rv.monthly', 'month',
    $$SELECT date_trunc('month', day) AS month, sum(total)::int AS total
        FROM rv.daily WHERE day >= $1 AND day < $2 GROUP BY 1$$,
    chunk => '1 month') AS version;
SELECT backfill.depend('rv.monthly', 'rv.daily') AS added;
SET ROLE regress_rv_mallory;
SELECT backfill.register('rv.evil', 'day',
    $$SELECT day, total FROM rv.daily WHERE day >= $1 AND day < $2$$) AS version;

-------------------------------------------------------------------------
-- 1. Groups: carol may read none of bob's tables.  His group does not
--    exist for her, exactly as an unknown one.
-------------------------------------------------------------------------
SET ROLE regress_rv_bob;
SELECT backfill.plan('rv.daily', '2026-01-01', '2026-01-03', probe => false,
                     cascade => true) AS g1 \gset
SELECT run_id, target FROM backfill.runs WHERE group_id = :g1 ORDER BY run_id;
SET ROLE regress_rv_carol;
SELECT backfill.cancel_group(:g1);
SELECT backfill.cancel_group(-1);
SELECT backfill.schedule_group(:g1, '0 0 30 2 *');
CALL backfill.run_group(:g1);
SELECT count(*) AS rows FROM backfill.reconcile_group(:g1);
SELECT count(*) AS groups FROM backfill.group_progress WHERE group_id = :g1;
SET ROLE regress_rv_bob;
SELECT backfill.cancel_group(:g1) AS cancelled;
RESET ROLE;

-------------------------------------------------------------------------
-- 2. Standing checks: carol cannot read rv.daily, so bob's check does not
--    exist for her; mallory reads rv.daily, sees the check, and is refused
--    as not its creator (or gets its stored count).  bob's pg_cron job
--    gives him the guard (a grant on backfill.scheduled_jobs), removing it
--    takes the guard away.
-------------------------------------------------------------------------
SET ROLE regress_rv_bob;
SELECT backfill.schedule_check('rv.daily', '0 0 30 2 *', '3 days') > 0 AS scheduled;
RESET ROLE;
SELECT check_id AS c FROM backfill.checks WHERE target = 'rv.daily'::regclass \gset
SELECT a.privilege_type FROM pg_class c, aclexplode(c.relacl) a
 WHERE c.oid = 'backfill.scheduled_jobs'::regclass
   AND a.grantee = 'regress_rv_bob'::regrole;
SET ROLE regress_rv_carol;
SELECT backfill.unschedule_check(:c);
SELECT backfill.run_check(:c);
SELECT backfill.unschedule_check(-1);
SELECT count(*) AS checks FROM backfill.checks WHERE check_id = :c;
SET ROLE regress_rv_mallory;
SELECT backfill.unschedule_check(:c);
SELECT backfill.run_check(:c) AS failing;
SET ROLE regress_rv_bob;
SELECT backfill.unschedule_check(:c) AS removed;
RESET ROLE;
SELECT count(*) AS guards FROM pg_class c, aclexplode(c.relacl) a
 WHERE c.oid = 'backfill.scheduled_jobs'::regclass
   AND a.grantee = 'regress_rv_bob'::regrole;

-------------------------------------------------------------------------
-- 3. depend: mallory writes rv.daily but did not author its definition.
-------------------------------------------------------------------------
SET ROLE regress_rv_mallory;
SELECT backfill.depend('rv.evil', 'rv.daily');
RESET ROLE;
SELECT downstream, upstream FROM backfill.dependencies
 WHERE upstream = 'rv.daily'::regclass ORDER BY 1;

-- bob's cascade: daily and monthly, nothing of mallory's
SET ROLE regress_rv_bob;
SELECT backfill.plan('rv.daily', '2026-01-01', '2026-01-03', probe => false,
                     cascade => true) AS g2 \gset
SELECT run_id, target FROM backfill.runs WHERE group_id = :g2 ORDER BY run_id;
SELECT backfill.cancel_group(:g2) AS cancelled;

-- A dependent bob cannot plan (a superuser linked it): his cascade is
-- refused on it, and he detaches it himself as the upstream's planner,
-- though he has no right on rv.evil.
RESET ROLE;
SELECT backfill.depend('rv.evil', 'rv.daily') AS added;
SET ROLE regress_rv_bob;
SELECT backfill.plan('rv.daily', '2026-01-01', '2026-01-03', probe => false,
                     cascade => true);
SELECT backfill.undepend('rv.evil', 'rv.daily') AS removed;
SELECT backfill.plan('rv.daily', '2026-01-01', '2026-01-03', probe => false,
                     cascade => true) AS g3 \gset
SELECT backfill.cancel_group(:g3) AS cancelled;
RESET ROLE;

-------------------------------------------------------------------------
-- 4. unregister(<oid>) of a dropped table: the role that registered it is
--    known by OID.  Dropped and created again under the same name, it is
--    another role, refused; a superuser may.
-------------------------------------------------------------------------
CREATE TABLE rv.tmp (ts timestamptz NOT NULL, v int NOT NULL);
ALTER TABLE rv.tmp OWNER TO regress_rv_temp;
SET ROLE regress_rv_temp;
SELECT backfill.register('rv.tmp', 'ts',
    $$SELECT ts, v FROM rv.raw WHERE ts >= $1 AND ts < $2$$) AS version;
RESET ROLE;
SELECT 'rv.tmp'::regclass::oid AS tmp_oid \gset
DROP TABLE rv.tmp;
DROP ROLE regress_rv_temp;
CREATE ROLE regress_rv_temp;
SET ROLE regress_rv_temp;
\set VERBOSITY terse
SELECT backfill.unregister(:tmp_oid);
\set VERBOSITY default
RESET ROLE;
SELECT backfill.unregister(:tmp_oid);
SELECT count(*) AS registered FROM backfill.targets WHERE target = :tmp_oid::oid;

SET ROLE regress_rv_bob;
SELECT backfill.unregister('rv.monthly');
SELECT backfill.unregister('rv.daily');
RESET ROLE;
SELECT backfill.unregister('rv.evil');
DROP SCHEMA rv CASCADE;
DROP OWNED BY regress_rv_bob, regress_rv_mallory, regress_rv_carol, regress_rv_temp;
DROP ROLE regress_rv_bob, regress_rv_mallory, regress_rv_carol, regress_rv_temp;
