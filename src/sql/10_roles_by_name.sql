
-- ---------------------------------------------------------------------------
-- Roles in the catalog survive pg_dump into another cluster (0.2.0).
--
-- A definition's author and the creator of a run or a standing check were
-- kept as plain oid.  pg_dump writes an oid as its number, and a restore into
-- another cluster, where every role has a new OID, left the number pointing
-- at no role (the author gate then refused the text to everyone) or at an
-- unrelated role.  As regrole the column holds the same OID (no rewrite; the
-- C code and every comparison are unchanged), but pg_dump writes the role's
-- name and the restore looks the name up: it fails, loudly, unless the roles
-- were restored first (pg_dumpall --globals-only).  A role dropped before the
-- dump is still written as its number.
-- ---------------------------------------------------------------------------
ALTER TABLE backfill.definitions
    ALTER COLUMN author TYPE pg_catalog.regrole;
ALTER TABLE backfill.runs
    ALTER COLUMN created_by_oid TYPE pg_catalog.regrole;
ALTER TABLE backfill.checks
    ALTER COLUMN created_by_oid TYPE pg_catalog.regrole;
