
-- ---------------------------------------------------------------------------
-- A newcomer's hour (issue 17): failures that say what to do next, replan
-- under a fixed definition, the run id returned by backfill(), readable
-- monitoring.  Served by base/failures.c, orchestration/replan.c,
-- api/runs.c (backfill, replan, replan_group).
-- ---------------------------------------------------------------------------

-- A replanned run records the run it continues: replan cancels the old
-- run's unfinished chunks and plans exactly those ranges as a new run
-- under the target's current definition.  NULL for every run of 0.1.0 (and
-- every run not made by replan).  No foreign key: the catalog is dumped and
-- restored table by table, and a self-reference would order nothing.
ALTER TABLE backfill.runs
    ADD COLUMN continues_run pg_catalog.int8;
COMMENT ON COLUMN backfill.runs.continues_run IS
    'The run this run continues (backfill.replan, backfill.replan_group): its unfinished chunks, planned again under the current definition; NULL otherwise.';

-- The cause of a chunk's failure, and the call that goes on from it
-- (base/failures.c): a definition cause (the registered text raised the
-- error, the ledger gate refused the chunk, a row fell outside the range,
-- the source produced a key twice) is fixed by register and replan; a
-- transient one (lock timeout, deadlock, serialization, chunk_timeout, a
-- worker or connection down) by running again; anything else (privileges,
-- a dropped table, a full disk) by fixing it and running again.  NULL for
-- the chunks of 0.1.0 and for every chunk that did not fail.
ALTER TABLE backfill.chunks
    ADD COLUMN error_cause pg_catalog.text
        CHECK (error_cause IN ('definition', 'transient', 'environment')),
    ADD COLUMN next_step pg_catalog.text;
COMMENT ON COLUMN backfill.chunks.error_cause IS
    'Why the chunk failed: definition (fix it with register, then replan), transient (run again), environment (fix the cause, then run again).';
COMMENT ON COLUMN backfill.chunks.next_step IS
    'The call that goes on after the chunk''s failure, e.g. SELECT backfill.replan(5).';

-- CALL backfill.backfill(...) returns its run id as an INOUT parameter
-- named run_id: a one-row result that \gset picks up.  A procedure's
-- output arguments are part of its signature: drop and create it, and
-- grant it again.  The C symbol is the same one (backfill_backfill), which
-- serves both signatures.
DROP PROCEDURE backfill.backfill(pg_catalog.regclass, pg_catalog.timestamptz,
                                 pg_catalog.timestamptz, pg_catalog.interval,
                                 pg_catalog.text);
CREATE PROCEDURE backfill.backfill(target pg_catalog.regclass,
                                   range_start pg_catalog.timestamptz,
                                   range_end pg_catalog.timestamptz,
                                   chunk pg_catalog.interval DEFAULT NULL,
                                   note pg_catalog.text DEFAULT NULL,
                                   INOUT run_id pg_catalog.int8 DEFAULT NULL)
AS 'MODULE_PATHNAME', 'backfill_backfill'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.backfill(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.int8) IS
    'Plan without a probe and run to the end: for small ranges.  Returns the run id (INOUT run_id; leave it out).';
REVOKE ALL ON PROCEDURE backfill.backfill(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.int8) FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE backfill.backfill(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.int8) TO PUBLIC;

-- replan and replan_group: cancel the unfinished chunks and plan them again
-- under the current definition, in one transaction; the new run id.
CREATE FUNCTION backfill.replan(run_id pg_catalog.int8)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'backfill_replan'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.replan(pg_catalog.int8) IS
    'Cancel the unfinished chunks of a run and plan exactly those ranges again under the target''s current definition, as a new run (probed again) that records the run it continues; returns its id.';

CREATE FUNCTION backfill.replan_group(group_id pg_catalog.int8)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'backfill_replan_group'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.replan_group(pg_catalog.int8) IS
    'backfill.replan for a group: its unfinished chunks, and the downstream chunks built from them (widened as a cascade does), planned again as a new group; returns the new group id.';

REVOKE ALL ON FUNCTION backfill.replan(pg_catalog.int8) FROM PUBLIC;
REVOKE ALL ON FUNCTION backfill.replan_group(pg_catalog.int8) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.replan(pg_catalog.int8) TO PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.replan_group(pg_catalog.int8) TO PUBLIC;
