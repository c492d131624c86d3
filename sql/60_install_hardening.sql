-- Install-script hardening (checklist S11, S13): CREATE EXTENSION never
-- adopts a schema or objects it did not create, and only a superuser may
-- install the extension.  Each case runs in a scratch database.
\set SHOW_CONTEXT never
CREATE ROLE regress_hard_mallory LOGIN;
CREATE DATABASE regress_hard_scratch;
GRANT CREATE ON DATABASE regress_hard_scratch TO regress_hard_mallory;
\c regress_hard_scratch

-- (S13) Not trusted: a non-superuser with CREATE on the database cannot
-- install it.
SET ROLE regress_hard_mallory;
CREATE EXTENSION backfill;
\echo sqlstate :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT extname FROM pg_extension WHERE extname = 'backfill';

-- (S11a) A schema "backfill" pre-created by another role is refused, and
-- nothing of the extension is left behind.
SET ROLE regress_hard_mallory;
CREATE SCHEMA backfill;
RESET ROLE;
CREATE EXTENSION backfill;
\echo sqlstate :LAST_ERROR_SQLSTATE
SELECT count(*) AS extension_rows FROM pg_extension WHERE extname = 'backfill';
SELECT count(*) AS objects_in_schema
  FROM pg_class WHERE relnamespace = 'backfill'::regnamespace;
DROP SCHEMA backfill;

-- The same schema owned by the installer but writable by others is refused.
CREATE SCHEMA backfill;
GRANT CREATE ON SCHEMA backfill TO PUBLIC;
CREATE EXTENSION backfill;
\echo sqlstate :LAST_ERROR_SQLSTATE
DROP SCHEMA backfill;

-- (S11b) Objects planted in an (installer-owned) schema are never adopted:
-- a table named like a catalog table, then a function named like ours.
CREATE SCHEMA backfill;
CREATE TABLE backfill.runs (run_id bigint);
ALTER TABLE backfill.runs OWNER TO regress_hard_mallory;
CREATE EXTENSION backfill;
\echo sqlstate :LAST_ERROR_SQLSTATE
DROP TABLE backfill.runs;
CREATE FUNCTION backfill.split_range(timestamptz, timestamptz, interval)
  RETURNS TABLE (chunk_no int, chunk_start timestamptz, chunk_end timestamptz)
  LANGUAGE sql AS 'SELECT 1, $1, $2';
CREATE EXTENSION backfill;
\echo sqlstate :LAST_ERROR_SQLSTATE
DROP FUNCTION backfill.split_range(timestamptz, timestamptz, interval);
DROP SCHEMA backfill;
SELECT count(*) AS extension_rows FROM pg_extension WHERE extname = 'backfill';

-- (I28) A schema "backfill_archive" made before the extension (where the
-- rows runs keep will live) is never adopted: refused with 42P06 and a
-- hint saying what to do, nothing left behind; once it is gone, the
-- extension installs.
SET ROLE regress_hard_mallory;
CREATE SCHEMA backfill_archive;
RESET ROLE;
CREATE EXTENSION backfill;
\echo sqlstate :LAST_ERROR_SQLSTATE
SELECT count(*) AS extension_rows FROM pg_extension WHERE extname = 'backfill';
DROP SCHEMA backfill_archive;
CREATE EXTENSION backfill;
SELECT extname FROM pg_extension WHERE extname = 'backfill';
DROP EXTENSION backfill;
DROP SCHEMA backfill;

-- (S11c) The extension is not relocatable and its schema is fixed: no
-- other schema name (quoted, hostile or not) can be substituted.
CREATE SCHEMA "a'b";
CREATE EXTENSION backfill SCHEMA "a'b";
\echo sqlstate :LAST_ERROR_SQLSTATE
DROP SCHEMA "a'b";

-- An empty schema owned by another superuser is accepted: a restore by a
-- different superuser runs pg_dump's CREATE SCHEMA backfill (owned by the
-- original one) before CREATE EXTENSION.
CREATE ROLE regress_hard_dba SUPERUSER;
CREATE SCHEMA backfill AUTHORIZATION regress_hard_dba;
CREATE EXTENSION backfill;
SELECT extnamespace::regnamespace FROM pg_extension WHERE extname = 'backfill';
DROP EXTENSION backfill;
DROP SCHEMA backfill;
DROP ROLE regress_hard_dba;

-- With no schema there, CREATE EXTENSION makes it; afterwards every object
-- in the schema belongs to the extension and nobody else may create
-- objects in it.
CREATE EXTENSION backfill;
SELECT nspowner::regrole = current_user::regrole AS owned_by_installer,
       (SELECT count(*) FROM aclexplode(nspacl) a
         WHERE a.grantee <> nspowner AND a.privilege_type = 'CREATE') AS foreign_create_grants
  FROM pg_namespace WHERE nspname = 'backfill';
SELECT 'pg_class' AS catalog, c.oid::regclass::text AS object
  FROM pg_class c
 WHERE c.relnamespace = 'backfill'::regnamespace
   AND c.relkind IN ('r', 'v', 'S', 'p', 'm', 'f')
   AND NOT EXISTS (SELECT FROM pg_depend d
                    WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                      AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e')
UNION ALL
SELECT 'pg_proc', p.oid::regprocedure::text
  FROM pg_proc p
 WHERE p.pronamespace = 'backfill'::regnamespace
   AND NOT EXISTS (SELECT FROM pg_depend d
                    WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                      AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e');
-- DROP EXTENSION leaves the (now empty) schema behind; an empty schema
-- owned by the installer is reused by the next CREATE EXTENSION.
DROP EXTENSION backfill;
SELECT nspowner::regrole = current_user::regrole AS schema_left_owned_by_installer
  FROM pg_namespace WHERE nspname = 'backfill';
CREATE EXTENSION backfill;
SELECT extnamespace::regnamespace FROM pg_extension WHERE extname = 'backfill';

\c contrib_regression
DROP DATABASE regress_hard_scratch;
DROP ROLE regress_hard_mallory;
