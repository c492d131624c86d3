-- The owner-rights guard (doc/security.md "The guard"): a statement run
-- with the extension owner's rights may touch only relations, functions,
-- operators, casts and types of pg_catalog or of the extension (and
-- pg_cron's), and of utility statements only LOCK TABLE of such relations
-- (the scheduling-role guard's GRANT and REVOKE are made from C).  backfill._owner_guard(statement) analyses a
-- statement as the guard does (search_path pinned) and says what it
-- refuses, NULL when nothing; each kind of object a user can make is
-- refused here.  (sql/82_changed_regions.sql shows the guard firing on a
-- statement the extension really runs.)
SET TimeZone = 'UTC';
\set VERBOSITY terse
CREATE ROLE regress_guard_user;
CREATE SCHEMA guardt AUTHORIZATION regress_guard_user;
SET SESSION AUTHORIZATION regress_guard_user;
CREATE TABLE guardt.t (a int, d date);
CREATE VIEW guardt.v AS SELECT relname FROM pg_catalog.pg_class;
CREATE FUNCTION guardt.f(int) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE FUNCTION guardt.now() RETURNS timestamptz LANGUAGE sql AS 'SELECT pg_catalog.now()';
CREATE OPERATOR guardt.=== (LEFTARG = int, RIGHTARG = int, FUNCTION = int4eq);
CREATE DOMAIN guardt.dom AS int CHECK (guardt.f(VALUE));
CREATE TYPE guardt.e AS ENUM ('a', 'b');
CREATE FUNCTION guardt.text_e(text) RETURNS guardt.e LANGUAGE sql AS 'SELECT $1::guardt.e';
CREATE CAST (text AS guardt.e) WITH FUNCTION guardt.text_e(text);
CREATE FUNCTION guardt.diff(float8, float8) RETURNS float8 LANGUAGE sql IMMUTABLE AS 'SELECT $1 - $2';
CREATE TYPE guardt.frange AS RANGE (subtype = float8, subtype_diff = guardt.diff);
CREATE AGGREGATE guardt.agg(int) (SFUNC = int4pl, STYPE = int);
CREATE FUNCTION guardt.trig() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
RESET SESSION AUTHORIZATION;

CREATE TEMP TABLE probe (n serial, statement text);
INSERT INTO probe (statement) VALUES
    -- the extension's and PostgreSQL's own: allowed
    ('SELECT 1'),
    ('SELECT r.status FROM backfill.runs r WHERE r.run_id OPERATOR(pg_catalog.=) $1'),
    ('SELECT c.relname FROM pg_catalog.pg_class c ORDER BY c.relname'),
    ('SELECT j.jobid FROM cron.job j'),
    ('SELECT pg_catalog.count(*) FROM backfill.chunks TABLESAMPLE SYSTEM (10)'),
    ('LOCK TABLE backfill.dependencies IN SHARE ROW EXCLUSIVE MODE'),
    -- pinned: the user's now() on the caller's path is not the one resolved
    ('SELECT now()'),
    -- a user's relations: table, view, their grant, their lock; a GRANT
    -- even on the extension's own
    ('GRANT SELECT ON backfill.scheduled_jobs TO PUBLIC'),
    ('SELECT a FROM guardt.t'),
    ('SELECT relname FROM guardt.v'),
    ('GRANT SELECT ON guardt.t TO PUBLIC'),
    ('LOCK TABLE guardt.t'),
    -- a user's function, aggregate, operator
    ('SELECT guardt.f(1)'),
    ('SELECT guardt.agg(x) FROM pg_catalog.generate_series(1, 3) x'),
    ('SELECT 1 OPERATOR(guardt.===) 2'),
    -- a user's types: a domain (its CHECK), an enum, a range (subtype_diff)
    ('SELECT 1::guardt.dom'),
    ('SELECT ''a''::guardt.e'),
    ('SELECT ''[1,2)''::guardt.frange'),
    -- a user's cast, explicit
    ('SELECT ''a''::text::guardt.e'),
    -- other utility statements
    ('CREATE TABLE backfill.planted (a int)'),
    ('SET search_path = guardt');

SELECT n, backfill._owner_guard(statement) AS refused FROM probe ORDER BY n;

-- a trigger someone added to a catalog table calls its function with the
-- owner's rights: a statement that writes that table is refused
CREATE TRIGGER planted BEFORE DELETE ON backfill.targets
    FOR EACH ROW EXECUTE FUNCTION guardt.trig();
SELECT backfill._owner_guard('DELETE FROM backfill.targets WHERE false') AS refused;
SELECT backfill._owner_guard('SELECT t.target FROM backfill.targets t') AS read_only;
DROP TRIGGER planted ON backfill.targets;
-- so does a CHECK constraint a superuser added there (found on the table,
-- not in the statement: a plan cached before cannot hide it), and a policy
-- forced on the owner refuses even a read
ALTER TABLE backfill.targets ADD CONSTRAINT planted CHECK (guardt.f(1)) NOT VALID;
SELECT backfill._owner_guard('DELETE FROM backfill.targets WHERE false') AS refused;
ALTER TABLE backfill.targets DROP CONSTRAINT planted;
ALTER TABLE backfill.chunks FORCE ROW LEVEL SECURITY;
CREATE POLICY planted ON backfill.chunks USING (guardt.f(1));
SELECT backfill._owner_guard('SELECT c.run_id FROM backfill.chunks c') AS refused;
DROP POLICY planted ON backfill.chunks;
ALTER TABLE backfill.chunks NO FORCE ROW LEVEL SECURITY;

-- an object dropped from the extension is no longer the extension's
ALTER EXTENSION backfill DROP FUNCTION backfill.lineage(regclass, timestamptz, timestamptz);
SELECT backfill._owner_guard('SELECT l.run_id FROM backfill.lineage($1) l') AS refused;
ALTER EXTENSION backfill ADD FUNCTION backfill.lineage(regclass, timestamptz, timestamptz);
SELECT backfill._owner_guard('SELECT l.run_id FROM backfill.lineage($1) l') AS refused;

-- a DBA's event trigger on DDL does not fire for the scheduling-role
-- guard's GRANT and REVOKE, made from C: scheduling works with one in
-- place, and its function never runs as the extension owner
GRANT USAGE ON SCHEMA cron TO regress_guard_user;
CREATE TABLE guardt.ddl_log (tag text, ran_as name);
CREATE FUNCTION guardt.note_ddl() RETURNS event_trigger LANGUAGE plpgsql AS
$$BEGIN INSERT INTO guardt.ddl_log VALUES (tg_tag, current_user); END$$;
CREATE EVENT TRIGGER guardt_ddl ON ddl_command_end EXECUTE FUNCTION guardt.note_ddl();
SET SESSION AUTHORIZATION regress_guard_user;
SELECT backfill.register('guardt.t', 'd',
    'SELECT 1 AS a, d FROM pg_catalog.generate_series($1::date, $2::date - 1, ''1 day'') d') AS version;
SELECT backfill.plan('guardt.t', '2024-01-01', '2024-01-03', probe => false) AS gr \gset
SELECT backfill.schedule(:gr, '0 0 30 2 *') > 0 AS scheduled;
SELECT backfill.unschedule(:gr) AS unscheduled;
SELECT backfill.cancel(:gr) AS cancelled;
SELECT backfill.unregister('guardt.t');
RESET SESSION AUTHORIZATION;
DROP EVENT TRIGGER guardt_ddl;
SELECT tag, ran_as FROM guardt.ddl_log;
REVOKE USAGE ON SCHEMA cron FROM regress_guard_user;

-- a superuser's question only; NULL is refused
SET SESSION AUTHORIZATION regress_guard_user;
SELECT backfill._owner_guard('SELECT 1');
RESET SESSION AUTHORIZATION;
SELECT backfill._owner_guard(NULL);

DROP SCHEMA guardt CASCADE;
DROP ROLE regress_guard_user;
