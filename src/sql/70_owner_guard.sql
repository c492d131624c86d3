
-- ---------------------------------------------------------------------------
-- The owner-rights guard (0.2.0, issue 28; doc/security.md "The guard").  C:
-- base/guard.c (the rule, the hook on every statement run as the extension
-- owner), api/primitives.c (_owner_guard).
--
-- backfill._owner_guard(statement) says what the guard would refuse in a
-- statement, without running it: superusers only.
-- ---------------------------------------------------------------------------
CREATE FUNCTION backfill._owner_guard(statement pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE C VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'backfill__owner_guard';
COMMENT ON FUNCTION backfill._owner_guard(pg_catalog.text) IS
    'What the owner-rights guard refuses in a statement (a relation, function, operator, cast or type that is neither pg_catalog''s nor the extension''s), NULL when nothing; the statement is analysed, never run. Superusers only.';
REVOKE ALL ON FUNCTION backfill._owner_guard(pg_catalog.text) FROM PUBLIC;
