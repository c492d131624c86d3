
-- ---------------------------------------------------------------------------
-- Definitions as code (issue 29, item 11; doc/targets.md): the SQL that
-- registers the current definitions of targets again, with their
-- strategies, watches, dependencies, standing checks and refresh jobs, for
-- a migration file under review.  Idempotent; read under the caller's
-- row-level security.  C: api/targets.c, orchestration/export.c.
-- ---------------------------------------------------------------------------
CREATE FUNCTION backfill.export_definitions(targets pg_catalog.regclass[] DEFAULT NULL)
RETURNS pg_catalog.text
AS 'MODULE_PATHNAME', 'backfill_export_definitions'
LANGUAGE C STABLE;
COMMENT ON FUNCTION backfill.export_definitions(pg_catalog.regclass[]) IS
    'The SQL that registers the current definitions of targets (NULL: every target you may read) again, with their watches, dependencies and schedules; running it changes nothing where they are registered so already.';
REVOKE ALL ON FUNCTION backfill.export_definitions(pg_catalog.regclass[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.export_definitions(pg_catalog.regclass[]) TO PUBLIC;
