
-- ---------------------------------------------------------------------------
-- No silent emptying (issue 29, items 5 and 6; doc/runs.md, doc/targets.md):
-- a chunk whose source returns no row for a range that holds rows fails
-- (cause empty_source) and keeps its rows, unless the definition says that
-- no rows is a valid answer (register(..., allow_empty => true)); a chunk
-- the ledger gate refused has a cause of its own (ledger: the ledger has
-- not caught up, or the definition is wrong).  C: engine/chunk.c,
-- base/failures.c, orchestration/registry.c, api/targets.c.
-- ---------------------------------------------------------------------------

-- Part of the definition: a registration that changes it is a new version.
-- Old versions: false (their chunks emptied ranges silently; the next
-- registration decides).
ALTER TABLE backfill.definitions
    ADD COLUMN allow_empty pg_catalog.bool NOT NULL DEFAULT false;
ALTER TABLE backfill.targets
    ADD COLUMN allow_empty pg_catalog.bool NOT NULL DEFAULT false;
COMMENT ON COLUMN backfill.definitions.allow_empty IS
    'Whether a source that returns no rows for a range that holds rows is a valid answer (the chunk empties the range); else the chunk fails and keeps them.';

-- The causes of a chunk's failure: two more (base/failures.c).
ALTER TABLE backfill.chunks
    DROP CONSTRAINT chunks_error_cause_check;
ALTER TABLE backfill.chunks
    ADD CONSTRAINT chunks_error_cause_check
        CHECK (error_cause IN ('definition', 'transient', 'environment',
                               'ledger', 'empty_source'));
COMMENT ON COLUMN backfill.chunks.error_cause IS
    'Why the chunk failed: definition (fix it with register, then replan), transient (run again), environment (fix the cause, then run again), ledger (the ledger has not caught up: run again later; or the definition is wrong: register, then replan), empty_source (the source returned no rows where the table holds some: fix the source and run again; or register with allow_empty, then replan).';

-- register takes allow_empty: dropped and created again with the new
-- argument last (calls by position and by name of 0.1.0 and of 0.2.0's
-- earlier arguments keep working; the C symbol is the same).
DROP FUNCTION backfill.register(pg_catalog.regclass, pg_catalog.name, pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.numeric, pg_catalog.bool, pg_catalog.bool, pg_catalog.interval, pg_catalog.name[]);
CREATE FUNCTION backfill.register(target pg_catalog.regclass,
                                  time_column pg_catalog.name,
                                  source pg_catalog.text,
                                  definition pg_catalog.text DEFAULT NULL,
                                  chunk pg_catalog.interval DEFAULT '1 day',
                                  source_retention pg_catalog.interval DEFAULT NULL,
                                  source_horizon pg_catalog.text DEFAULT NULL,
                                  ledger pg_catalog.text DEFAULT NULL,
                                  measure pg_catalog.text DEFAULT 'count(*)',
                                  tolerance pg_catalog.numeric DEFAULT 0,
                                  ledger_gate pg_catalog.bool DEFAULT true,
                                  keep_replaced pg_catalog.bool DEFAULT false,
                                  keep_for pg_catalog.interval DEFAULT NULL,
                                  key pg_catalog.name[] DEFAULT NULL,
                                  allow_empty pg_catalog.bool DEFAULT false)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'backfill_register'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.register(pg_catalog.regclass, pg_catalog.name, pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.numeric, pg_catalog.bool, pg_catalog.bool, pg_catalog.interval, pg_catalog.name[], pg_catalog.bool) IS
    'Register (or re-register) a target; returns the current definition version.';
REVOKE ALL ON FUNCTION backfill.register(pg_catalog.regclass, pg_catalog.name, pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.numeric, pg_catalog.bool, pg_catalog.bool, pg_catalog.interval, pg_catalog.name[], pg_catalog.bool) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.register(pg_catalog.regclass, pg_catalog.name, pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.numeric, pg_catalog.bool, pg_catalog.bool, pg_catalog.interval, pg_catalog.name[], pg_catalog.bool) TO PUBLIC;
