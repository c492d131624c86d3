
-------------------------------------------------------------------------
-- Reconciliation and validation (api/reconciliation.c;
-- orchestration/reconcile.c, standing.c)
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

-- The failing results of standing checks that still stand: for each target
-- and chunk range, the latest result, when it is failing (a later ok or
-- no_source result for the same range supersedes it).  failing_since is
-- the first failing result after the last one that was not failing.
CREATE VIEW backfill.alerts WITH (security_invoker = true) AS
SELECT l.result_id, l.check_id, l.target, l.chunk_start, l.chunk_end,
       l.verdict, l.target_value, l.ledger_value, l.ledger_ok,
       l.neighbor_median, l.neighbor_ok, l.checked_at, l.checked_by,
       (SELECT pg_catalog.min(f.checked_at)
          FROM backfill.check_results f
         WHERE f.target OPERATOR(pg_catalog.=) l.target
           AND f.chunk_start OPERATOR(pg_catalog.=) l.chunk_start
           AND f.chunk_end OPERATOR(pg_catalog.=) l.chunk_end
           AND f.verdict OPERATOR(pg_catalog.=) ANY (ARRAY['ledger_mismatch', 'outlier'])
           AND NOT EXISTS (
                 SELECT FROM backfill.check_results p
                  WHERE p.target OPERATOR(pg_catalog.=) l.target
                    AND p.chunk_start OPERATOR(pg_catalog.=) l.chunk_start
                    AND p.chunk_end OPERATOR(pg_catalog.=) l.chunk_end
                    AND p.verdict OPERATOR(pg_catalog.<>) ALL (ARRAY['ledger_mismatch', 'outlier'])
                    AND p.checked_at OPERATOR(pg_catalog.>=) f.checked_at)) AS failing_since
  FROM (SELECT DISTINCT ON (r.target, r.chunk_start, r.chunk_end) r.*
          FROM backfill.check_results r
         ORDER BY r.target, r.chunk_start, r.chunk_end,
                  r.checked_at DESC, r.result_id DESC) l
 WHERE l.verdict OPERATOR(pg_catalog.=) ANY (ARRAY['ledger_mismatch', 'outlier']);
COMMENT ON VIEW backfill.alerts IS
    'Failing standing-check results not superseded by a later passing result for the same range.';
