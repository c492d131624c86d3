
-- ---------------------------------------------------------------------------
-- One convention for the SQL surface (issue 31; CONTRIBUTING.md, "The SQL
-- API"): what a schedule_* returns is what its unschedule_* takes, every
-- schedule_* has an unschedule_*, NULL arguments raise 22004 (no STRICT
-- function answering nothing), an argument name has one meaning and one
-- type everywhere, the target comes first.  sql/97_api_conventions.sql
-- checks it from pg_proc.  C: api/regions.c, api/reconciliation.c,
-- api/pipelines.c, api/undo.c, api/lineage.c.
-- ---------------------------------------------------------------------------

-- schedule_check returns the check's id (0.1.0 returned its pg_cron job
-- id, which is backfill.checks.job_id): the same signature, from C.
COMMENT ON FUNCTION backfill.schedule_check(pg_catalog.regclass, pg_catalog.text, pg_catalog.interval) IS
    'A standing check: a pg_cron job that checks the last lookback of the target at every tick; returns the check''s id (unschedule_check and run_check take it).';

-- schedule_refresh returns the refresh's id and unschedule_refresh takes
-- it (both new in 0.2.0).
COMMENT ON FUNCTION backfill.schedule_refresh(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.bool, pg_catalog.bool) IS
    'A pg_cron job that plans and runs the stale (and, with missing, never-built) chunks of the last lookback in quiet hours; returns the refresh''s id (unschedule_refresh takes it).';
DROP FUNCTION backfill.unschedule_refresh(pg_catalog.regclass);
CREATE FUNCTION backfill.unschedule_refresh(refresh_id pg_catalog.int8)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_unschedule_refresh'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.unschedule_refresh(pg_catalog.int8) IS
    'Remove a refresh (the id schedule_refresh returned) and its pg_cron job; false when there is none.';
REVOKE ALL ON FUNCTION backfill.unschedule_refresh(pg_catalog.int8) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.unschedule_refresh(pg_catalog.int8) TO PUBLIC;

-- schedule_group (0.1.0, returns the number of runs scheduled) gets its
-- inverse, which takes the group's id as unschedule takes the run's.
CREATE FUNCTION backfill.unschedule_group(group_id pg_catalog.int8)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'backfill_unschedule_group'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.unschedule_group(pg_catalog.int8) IS
    'Remove the pg_cron jobs of every unfinished run of a group; returns the number of jobs removed.';
REVOKE ALL ON FUNCTION backfill.unschedule_group(pg_catalog.int8) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.unschedule_group(pg_catalog.int8) TO PUBLIC;

-- No STRICT function: lineage (SQL) and the C function it reads raise
-- 22004 on a NULL argument (_lineage_pieces, from C); reconcile_group
-- checks its argument in its body, as changes does.
ALTER FUNCTION backfill._lineage_pieces(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz)
    CALLED ON NULL INPUT;
ALTER FUNCTION backfill.lineage(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz)
    CALLED ON NULL INPUT;
CREATE OR REPLACE FUNCTION backfill.reconcile_group(group_id pg_catalog.int8)
RETURNS TABLE (run_id pg_catalog.int8,
               target pg_catalog.regclass,
               chunk_no pg_catalog.int4,
               chunk_start pg_catalog.timestamptz,
               chunk_end pg_catalog.timestamptz,
               status pg_catalog.text,
               target_value pg_catalog.numeric,
               ledger_value pg_catalog.numeric,
               ledger_ok pg_catalog.bool,
               neighbor_median pg_catalog.numeric,
               neighbor_ok pg_catalog.bool,
               verdict pg_catalog.text)
LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT
SET search_path = pg_catalog, pg_temp
AS $reconcile_group$
BEGIN
    IF $1 IS NULL THEN
        RAISE EXCEPTION 'group_id must not be null'
            USING ERRCODE := 'null_value_not_allowed';
    END IF;
    RETURN QUERY
    SELECT r.run_id, r.target, x.chunk_no, x.chunk_start, x.chunk_end, x.status,
           x.target_value, x.ledger_value, x.ledger_ok, x.neighbor_median,
           x.neighbor_ok, x.verdict
      FROM backfill.runs r
     CROSS JOIN LATERAL backfill.reconcile(r.run_id) x
     WHERE r.group_id OPERATOR(pg_catalog.=) $1
     ORDER BY r.run_id, x.chunk_no;
END
$reconcile_group$;

-- One name, one meaning (all new in 0.2.0): chunk is a chunk interval
-- (register, plan), a chunk's number is chunk_no (diff); source is the
-- source query (register, replace_range), a watched table is
-- source_table and its time column source_column (watch, unwatch); the
-- target comes first (purge_archive).
DROP FUNCTION backfill.diff(pg_catalog.int8, pg_catalog.int4);
CREATE FUNCTION backfill.diff(run_id pg_catalog.int8,
                              chunk_no pg_catalog.int4 DEFAULT NULL)
RETURNS TABLE (chunk_no pg_catalog.int4,
               key pg_catalog.jsonb,
               change pg_catalog.text,
               old pg_catalog.jsonb,
               new pg_catalog.jsonb)
AS 'MODULE_PATHNAME', 'backfill_diff'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.diff(pg_catalog.int8, pg_catalog.int4) IS
    'Row by row, what a kept run changed (every chunk, or chunk_no): per key, rows added, removed and changed (old and new values of the changed columns).';
REVOKE ALL ON FUNCTION backfill.diff(pg_catalog.int8, pg_catalog.int4) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.diff(pg_catalog.int8, pg_catalog.int4) TO PUBLIC;

-- watch already takes source_table and source_column (81_late_rows, which
-- added settle).

DROP FUNCTION backfill.unwatch(pg_catalog.regclass, pg_catalog.regclass);
CREATE FUNCTION backfill.unwatch(target pg_catalog.regclass,
                                 source_table pg_catalog.regclass DEFAULT NULL)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'backfill_unwatch'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.unwatch(pg_catalog.regclass, pg_catalog.regclass) IS
    'Stop watching source_table (NULL: every source) for target; returns the watches removed.';
REVOKE ALL ON FUNCTION backfill.unwatch(pg_catalog.regclass, pg_catalog.regclass) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.unwatch(pg_catalog.regclass, pg_catalog.regclass) TO PUBLIC;

DROP FUNCTION backfill.purge_archive(pg_catalog.interval, pg_catalog.regclass);
CREATE FUNCTION backfill.purge_archive(target pg_catalog.regclass DEFAULT NULL,
                                       older_than pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'backfill_purge_archive'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.purge_archive(pg_catalog.regclass, pg_catalog.interval) IS
    'Remove the kept rows of chunks kept longer ago than older_than (NULL: past their keep_for) of target (NULL: every target), of the runs the caller may act on; returns the number of chunks purged.';
REVOKE ALL ON FUNCTION backfill.purge_archive(pg_catalog.regclass, pg_catalog.interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.purge_archive(pg_catalog.regclass, pg_catalog.interval) TO PUBLIC;
