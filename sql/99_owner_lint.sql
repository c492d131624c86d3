-- The catalog lint of issue 28 (doc/security.md "Enforced by tests"), run
-- last, over everything the tests before it left, and a keeping run of a
-- non-superuser's table of its own types made here:
--   1. no relation of the extension's schemas (backfill, backfill_archive)
--      that the extension owner owns has a column of a type outside
--      pg_catalog and schema backfill (ANALYZE would run that type's code
--      with the owner's rights);
--   2. every archive table belongs to the owner of the table whose rows it
--      keeps (a kept leaf's: the leaf's owner), has no grant, and is one
--      the catalog names;
--   3. no function of the extension is SECURITY DEFINER without its
--      search_path pinned (there is none at all: sql/61_catalog_lint.sql).
SET TimeZone = 'UTC';
\set VERBOSITY terse
SELECT setval('backfill.runs_run_id_seq', 9901, false) IS NOT NULL AS seq_set;
CREATE ROLE regress_lint_owner;
CREATE SCHEMA lintt AUTHORIZATION regress_lint_owner;
SET SESSION AUTHORIZATION regress_lint_owner;
CREATE TYPE lintt.e AS ENUM ('a', 'b');
CREATE TABLE lintt.t (day date, e lintt.e);
CREATE TABLE lintt.src (day date, e lintt.e);
INSERT INTO lintt.src VALUES ('2024-01-01', 'a'), ('2024-01-01', 'b');
SELECT backfill.register('lintt.t', 'day',
    'SELECT day, e FROM lintt.src WHERE day >= $1 AND day < $2',
    keep_replaced => true) AS version;
SET client_min_messages = warning;
CALL backfill.backfill('lintt.t', '2024-01-01', '2024-01-02');
CALL backfill.backfill('lintt.t', '2024-01-01', '2024-01-02');
RESET client_min_messages;
RESET SESSION AUTHORIZATION;
-- the lint has something to look at: the archive of lintt.t holds a
-- column of lintt.e, and belongs to lintt.t's owner
SELECT c.relowner::regrole AS owner,
       (SELECT count(*) FROM pg_attribute
         WHERE attrelid = c.oid AND atttypid = 'lintt.e'::regtype) AS columns_of_lintt_e
  FROM backfill.archives a JOIN pg_class c ON c.oid = a.archive
 WHERE a.target = 'lintt.t'::regclass;

-- 1.
SELECT c.oid::regclass AS relation, a.attname, a.atttypid::regtype AS type
  FROM pg_class c
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
  JOIN pg_type t ON t.oid = a.atttypid
 WHERE c.relnamespace IN ('backfill'::regnamespace, 'backfill_archive'::regnamespace)
   AND c.relowner = (SELECT extowner FROM pg_extension WHERE extname = 'backfill')
   AND t.typnamespace NOT IN ('pg_catalog'::regnamespace, 'backfill'::regnamespace)
 ORDER BY 1, 2;
-- 2.
SELECT a.archive AS relation, a.target AS keeps_rows_of
  FROM backfill.archives a
  JOIN pg_class r ON r.oid = a.archive JOIN pg_class t ON t.oid = a.target
 WHERE r.relowner <> t.relowner
UNION ALL
SELECT l.kept, l.leaf
  FROM backfill.archived_leaves l
  JOIN pg_class r ON r.oid = l.kept JOIN pg_class t ON t.oid = l.leaf
 WHERE r.relowner <> t.relowner;
SELECT c.oid::regclass AS granted FROM pg_class c
 WHERE c.relnamespace = 'backfill_archive'::regnamespace AND c.relacl IS NOT NULL;
SELECT c.oid::regclass AS not_in_the_catalog FROM pg_class c
 WHERE c.relnamespace = 'backfill_archive'::regnamespace AND c.relkind = 'r'
   AND c.oid NOT IN (SELECT archive FROM backfill.archives
                     UNION SELECT kept FROM backfill.archived_leaves);
SELECT has_schema_privilege('public', 'backfill_archive', 'USAGE') AS public_usage;
-- 3.
SELECT p.oid::regprocedure AS definer
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
   AND d.deptype = 'e'
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'backfill')
 WHERE p.prosecdef
   AND NOT coalesce(p.proconfig @> '{"search_path=pg_catalog, pg_temp"}', false);

-- Clean up: the archive goes with its owner's objects.
SELECT backfill.unregister('lintt.t');
DROP OWNED BY regress_lint_owner;
DROP ROLE regress_lint_owner;
