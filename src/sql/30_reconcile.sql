
-------------------------------------------------------------------------
-- Reconciliation and validation (reconcile.c)
-------------------------------------------------------------------------

CREATE FUNCTION backfill.reconcile(run_id pg_catalog.int8)
RETURNS TABLE (chunk_no pg_catalog.int4,
               chunk_start pg_catalog.timestamptz,
               chunk_end pg_catalog.timestamptz,
               status pg_catalog.text,
               target_value pg_catalog.numeric,
               ledger_value pg_catalog.numeric,
               ledger_ok pg_catalog.bool,
               neighbor_median pg_catalog.numeric,
               neighbor_ok pg_catalog.bool,
               verdict pg_catalog.text)
AS 'MODULE_PATHNAME', 'backfill_reconcile'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.reconcile(pg_catalog.int8) IS
    'Compare every chunk of a run with the ledger and with the chunks around the range.';

CREATE FUNCTION backfill."check"(target pg_catalog.regclass,
                                 range_start pg_catalog.timestamptz,
                                 range_end pg_catalog.timestamptz)
RETURNS TABLE (chunk_no pg_catalog.int4,
               chunk_start pg_catalog.timestamptz,
               chunk_end pg_catalog.timestamptz,
               status pg_catalog.text,
               target_value pg_catalog.numeric,
               ledger_value pg_catalog.numeric,
               ledger_ok pg_catalog.bool,
               neighbor_median pg_catalog.numeric,
               neighbor_ok pg_catalog.bool,
               verdict pg_catalog.text)
AS 'MODULE_PATHNAME', 'backfill_check'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill."check"(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) IS
    'The reconcile comparison for any range of a registered target, run or not.';

CREATE FUNCTION backfill.schedule_check(target pg_catalog.regclass,
                                        cron pg_catalog.text,
                                        lookback pg_catalog.interval DEFAULT '7 days')
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'backfill_schedule_check'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.schedule_check(pg_catalog.regclass, pg_catalog.text, pg_catalog.interval) IS
    'A pg_cron job that checks the last lookback on every tick into backfill.check_results.';

CREATE FUNCTION backfill.unschedule_check(check_id pg_catalog.int8)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_unschedule_check'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.unschedule_check(pg_catalog.int8) IS
    'Remove a standing check''s pg_cron job; its results stay.';

-- What a scheduled check's cron job calls; the command holds only the id.
CREATE FUNCTION backfill.run_check(check_id pg_catalog.int8)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'backfill_run_check'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.run_check(pg_catalog.int8) IS
    'Run a standing check now and append its results; returns the number of failing chunks.';
