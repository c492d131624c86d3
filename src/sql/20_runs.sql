
-------------------------------------------------------------------------
-- Targets, runs and chunks: register and unregister (api/targets.c,
-- orchestration/registry.c); plan, run, backfill, cancel and preview
-- (api/runs.c; orchestration/cascade.c, plan.c, run.c, engine/chunk.c)
-------------------------------------------------------------------------

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
                                  ledger_gate pg_catalog.bool DEFAULT true)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'backfill_register'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.register(pg_catalog.regclass, pg_catalog.name, pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.numeric, pg_catalog.bool) IS
    'Register (or re-register) a target; returns the current definition version.';

CREATE FUNCTION backfill.unregister(target pg_catalog.regclass,
                                    cascade pg_catalog.bool DEFAULT false)
RETURNS pg_catalog.void
AS 'MODULE_PATHNAME', 'backfill_unregister'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.unregister(pg_catalog.regclass, pg_catalog.bool) IS
    'Forget a target; refused while it has unfinished runs, or dependents unless cascade.  History stays.';

CREATE FUNCTION backfill.plan(target pg_catalog.regclass,
                              range_start pg_catalog.timestamptz,
                              range_end pg_catalog.timestamptz,
                              chunk pg_catalog.interval DEFAULT NULL,
                              note pg_catalog.text DEFAULT NULL,
                              probe pg_catalog.bool DEFAULT true,
                              backwards pg_catalog.bool DEFAULT false,
                              clear_no_source pg_catalog.bool DEFAULT false,
                              only_chunks pg_catalog.text DEFAULT NULL,
                              cascade pg_catalog.bool DEFAULT false)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'backfill_plan'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.plan(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.bool, pg_catalog.bool, pg_catalog.bool, pg_catalog.text, pg_catalog.bool) IS
    'Create a run and its chunks for [range_start, range_end) (only the chunks that need it, and the downstream runs with cascade); executes nothing.';

-- A C procedure with no SET clause and SECURITY INVOKER: it commits per chunk.
CREATE PROCEDURE backfill.run(run_id pg_catalog.int8,
                              max_chunks pg_catalog.int4 DEFAULT NULL)
AS 'MODULE_PATHNAME', 'backfill_run'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.run(pg_catalog.int8, pg_catalog.int4) IS
    'Execute the pending chunks of a run, one transaction per chunk.';

CREATE PROCEDURE backfill.backfill(target pg_catalog.regclass,
                                   range_start pg_catalog.timestamptz,
                                   range_end pg_catalog.timestamptz,
                                   chunk pg_catalog.interval DEFAULT NULL,
                                   note pg_catalog.text DEFAULT NULL)
AS 'MODULE_PATHNAME', 'backfill_backfill'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.backfill(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text) IS
    'Plan without a probe and run to the end: for small ranges.';

CREATE FUNCTION backfill.cancel(run_id pg_catalog.int8)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'backfill_cancel'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.cancel(pg_catalog.int8) IS
    'Cancel the pending chunks of a run and remove its schedule; returns the chunks cancelled.';

CREATE FUNCTION backfill.preview(target pg_catalog.regclass,
                                 range_start pg_catalog.timestamptz,
                                 range_end pg_catalog.timestamptz)
RETURNS TABLE (rows_deleted pg_catalog.int8,
               rows_inserted pg_catalog.int8,
               before_value pg_catalog.numeric,
               after_value pg_catalog.numeric,
               ledger_value pg_catalog.numeric)
AS 'MODULE_PATHNAME', 'backfill_preview'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.preview(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) IS
    'What replacing the range would do, computed and rolled back.';

-- The chunk engine's lookups of the next chunk to execute and of whether
-- any is left (engine/chunk.c: NextChunk, RemainingChunks): the chunks
-- still to do, in chunk order, so that a run of 100,000 chunks never
-- rescans the ones already done.  The predicates are spelled exactly as
-- in those queries (TODO_PENDING, TODO_NO_SOURCE).
CREATE INDEX chunks_todo_idx ON backfill.chunks (run_id, chunk_no)
    WHERE status OPERATOR(pg_catalog.=) ANY ('{pending,failed}'::pg_catalog.text[]);
CREATE INDEX chunks_no_source_todo_idx ON backfill.chunks (run_id, chunk_no)
    WHERE status OPERATOR(pg_catalog.=) 'no_source' AND finished_at IS NULL;
