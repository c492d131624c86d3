-- replace_range acts with the caller's privileges: SELECT, INSERT and
-- DELETE on the target are required (42501, checked before any work),
-- row-level security on the target is refused, and a hostile search_path
-- changes nothing in the statements the extension generates.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set SHOW_CONTEXT never
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
CREATE SCHEMA sec;
CREATE TABLE sec.src (ts timestamptz, amount numeric);
INSERT INTO sec.src SELECT '2024-01-01'::timestamptz + i * interval '1 hour', i
  FROM generate_series(0, 47) i;
CREATE TABLE sec.target (ts timestamptz, amount numeric);
INSERT INTO sec.target VALUES ('2024-01-01 01:00', 100), ('2024-01-03 00:00', 200);
CREATE ROLE regress_bf_writer;
CREATE ROLE regress_bf_nodelete;
CREATE ROLE regress_bf_noinsert;
CREATE ROLE regress_bf_reader;
CREATE ROLE regress_bf_nosource;
GRANT USAGE ON SCHEMA sec TO regress_bf_writer, regress_bf_nodelete,
    regress_bf_noinsert, regress_bf_reader, regress_bf_nosource;
GRANT SELECT ON sec.src TO regress_bf_writer, regress_bf_nodelete,
    regress_bf_noinsert, regress_bf_reader;
GRANT SELECT, INSERT, DELETE ON sec.target TO regress_bf_writer, regress_bf_nosource;
GRANT SELECT, INSERT ON sec.target TO regress_bf_nodelete;
GRANT SELECT, DELETE ON sec.target TO regress_bf_noinsert;
GRANT SELECT ON sec.target TO regress_bf_reader;

-- missing rights are refused before anything runs
SET ROLE regress_bf_nodelete;
SELECT * FROM backfill.replace_range('sec.target', 'ts', '2024-01-01', '2024-01-02',
    'SELECT ts, amount FROM sec.src WHERE ts >= $1 AND ts < $2');
SET ROLE regress_bf_noinsert;
SELECT * FROM backfill.replace_range('sec.target', 'ts', '2024-01-01', '2024-01-02',
    'SELECT ts, amount FROM sec.src WHERE ts >= $1 AND ts < $2');
SET ROLE regress_bf_reader;
SELECT * FROM backfill.replace_range('sec.target', 'ts', '2024-01-01', '2024-01-02',
    'SELECT ts, amount FROM sec.src WHERE ts >= $1 AND ts < $2');
-- a source reading a table the caller may not read is refused when it is
-- checked, before the delete
SET ROLE regress_bf_nosource;
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('sec.target', 'ts', '2024-01-01', '2024-01-02', 'SELECT ts, amount FROM sec.src WHERE ts >= $1 AND ts < $2')$$);
RESET ROLE;
SELECT * FROM sec.target ORDER BY ts;
-- with all three rights it works
SET ROLE regress_bf_writer;
SELECT * FROM backfill.replace_range('sec.target', 'ts', '2024-01-01', '2024-01-02',
    'SELECT ts, amount FROM sec.src WHERE ts >= $1 AND ts < $2');
SELECT count(*), sum(amount) FROM sec.target;
RESET ROLE;

-- row-level security: a DELETE under a policy would skip the rows the
-- caller cannot see, so a target where RLS applies to the caller is refused
CREATE ROLE regress_bf_owner;
GRANT USAGE ON SCHEMA sec TO regress_bf_owner;
GRANT SELECT ON sec.src TO regress_bf_owner;
CREATE TABLE sec.guarded (ts timestamptz, amount numeric);
ALTER TABLE sec.guarded OWNER TO regress_bf_owner;
ALTER TABLE sec.guarded ENABLE ROW LEVEL SECURITY;
CREATE POLICY small ON sec.guarded USING (amount < 10);
INSERT INTO sec.guarded VALUES ('2024-01-01 03:00', 5), ('2024-01-01 04:00', 50);
GRANT SELECT, INSERT, DELETE ON sec.guarded TO regress_bf_writer;
SET ROLE regress_bf_writer;
SELECT * FROM backfill.replace_range('sec.guarded', 'ts', '2024-01-01', '2024-01-02',
    'SELECT ts, amount FROM sec.src WHERE ts >= $1 AND ts < $2');
-- the owner is not subject to the policy ...
SET ROLE regress_bf_owner;
SELECT * FROM backfill.replace_range('sec.guarded', 'ts', '2024-01-01', '2024-01-02',
    'SELECT ts, amount FROM sec.src WHERE ts >= $1 AND ts < $2 AND amount < 3');
-- ... unless it is forced on the owner too
RESET ROLE;
ALTER TABLE sec.guarded FORCE ROW LEVEL SECURITY;
SET ROLE regress_bf_owner;
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('sec.guarded', 'ts', '2024-01-01', '2024-01-02', 'SELECT ts, amount FROM sec.src WHERE ts >= $1 AND ts < $2')$$);
RESET ROLE;
SELECT * FROM sec.guarded ORDER BY ts;

-- A hostile search_path: schema evil has look-alike >=, <, count, now and
-- _in_range, and a table and a temp table named like the target.  Every
-- call of an evil function is recorded.
CREATE SCHEMA evil;
CREATE TABLE evil.calls (fn text);
CREATE FUNCTION evil.ge(timestamptz, timestamptz) RETURNS boolean LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO evil.calls VALUES ('>='); RETURN true; END$$;
CREATE FUNCTION evil.lt(timestamptz, timestamptz) RETURNS boolean LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO evil.calls VALUES ('<'); RETURN true; END$$;
CREATE OPERATOR evil.>= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.ge);
CREATE OPERATOR evil.< (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.lt);
CREATE FUNCTION evil.count_step(bigint) RETURNS bigint LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO evil.calls VALUES ('count'); RETURN 0; END$$;
CREATE AGGREGATE evil.count(*) (SFUNC = evil.count_step, STYPE = bigint, INITCOND = '0');
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO evil.calls VALUES ('now'); RETURN '2024-01-01'; END$$;
CREATE FUNCTION evil._in_range(timestamptz, timestamptz, timestamptz) RETURNS boolean LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO evil.calls VALUES ('_in_range'); RETURN true; END$$;
CREATE TABLE evil.target (ts timestamptz, amount numeric);
INSERT INTO evil.target VALUES ('2024-01-01 05:00', -1);
CREATE TEMP TABLE target (ts timestamptz, amount numeric);
INSERT INTO target VALUES ('2024-01-01 05:00', -2);
-- the look-alikes are live: unqualified SQL under this path calls them
SET search_path = evil, pg_temp, sec, pg_catalog;
SELECT count(*) FROM sec.target WHERE ts >= '2024-01-02' AND ts < '2024-01-03';
SELECT fn, pg_catalog.count(*) FROM evil.calls GROUP BY fn ORDER BY fn;
TRUNCATE evil.calls;
-- the same replacement with a plain and with the hostile search_path (the
-- source itself is the user's text, so it qualifies its operators)
RESET search_path;
TRUNCATE sec.target;
INSERT INTO sec.target VALUES ('2024-01-01 01:00', 100), ('2024-01-03 00:00', 200);
SELECT * FROM backfill.replace_range('sec.target', 'ts', '2024-01-01', '2024-01-02',
    'SELECT ts, amount FROM sec.src WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2');
CREATE TEMP TABLE plain_result AS SELECT * FROM sec.target;
TRUNCATE sec.target;
INSERT INTO sec.target VALUES ('2024-01-01 01:00', 100), ('2024-01-03 00:00', 200);
SET search_path = evil, pg_temp, sec, pg_catalog;
SELECT * FROM backfill.replace_range('sec.target'::pg_catalog.regclass, 'ts', '2024-01-01', '2024-01-02',
    'SELECT ts, amount FROM sec.src WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2');
RESET search_path;
SELECT (SELECT count(*) FROM evil.calls) AS evil_calls,
       (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM plain_result x) =
       (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM sec.target x) AS same_result,
       (SELECT count(*) FROM sec.target) AS target_rows,
       (SELECT string_agg(amount::text, ',') FROM evil.target) AS evil_target,
       (SELECT string_agg(amount::text, ',') FROM pg_temp.target) AS temp_target;
-- the same for a date time column (cross-type operators)
CREATE TABLE sec.days (day date, total numeric);
INSERT INTO sec.days VALUES ('2024-01-01', 0), ('2024-01-02', 0);
SET search_path = evil, pg_temp, sec, pg_catalog;
SELECT * FROM backfill.replace_range('sec.days'::pg_catalog.regclass, 'day', '2024-01-01', '2024-01-02',
    'SELECT CAST(ts AS pg_catalog.date) AS day, pg_catalog.sum(amount) AS total FROM sec.src
      WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2 GROUP BY 1');
RESET search_path;
SELECT * FROM sec.days ORDER BY day;
SELECT count(*) AS evil_calls FROM evil.calls;

SET client_min_messages = warning;
DROP SCHEMA evil CASCADE;
DROP SCHEMA sec CASCADE;
DROP ROLE regress_bf_writer, regress_bf_nodelete, regress_bf_noinsert,
    regress_bf_reader, regress_bf_nosource, regress_bf_owner;
RESET client_min_messages;
