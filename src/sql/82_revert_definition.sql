
-- ---------------------------------------------------------------------------
-- A revert undoes the definition too (issue 29, item 4; doc/undo.md): once a
-- revert run is done, the definition version in force before the reverted
-- run's is current again, unless another was registered since, so that
-- plans of only_chunks => 'outdated', refreshes and cascades take the
-- restored chunks as built under the current definition.  C: engine/chunk.c
-- (RevertRestoreDefinition), orchestration/registry.c.
-- ---------------------------------------------------------------------------

-- The version that was current when this one was made (register,
-- set_strategy); NULL for a target's first.  Old versions: the one before
-- (0.1.0 always made the newest version current).
ALTER TABLE backfill.definitions
    ADD COLUMN previous_version pg_catalog.int4;
COMMENT ON COLUMN backfill.definitions.previous_version IS
    'The version that was current when this one was registered (NULL for the first): the one a revert of this version''s runs makes current again.';
UPDATE backfill.definitions
   SET previous_version = version OPERATOR(pg_catalog.-) 1
 WHERE version OPERATOR(pg_catalog.>) 1;
