
-------------------------------------------------------------------------
-- Privileges.  Every function acts with the caller's privileges and checks
-- them on the target itself, so EXECUTE is granted deliberately, one by
-- one, after revoking the default.
-------------------------------------------------------------------------
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA backfill FROM PUBLIC;
REVOKE ALL ON ALL PROCEDURES IN SCHEMA backfill FROM PUBLIC;
GRANT SELECT ON ALL TABLES IN SCHEMA backfill TO PUBLIC;
GRANT EXECUTE ON FUNCTION
    backfill.split_range(pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval),
    backfill.replace_range(pg_catalog.regclass, pg_catalog.name, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.text, pg_catalog.text),
    backfill._in_range(pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.timestamptz),
    backfill._in_range(pg_catalog.timestamp, pg_catalog.timestamp, pg_catalog.timestamp),
    backfill._in_range(pg_catalog.date, pg_catalog.date, pg_catalog.date),
    backfill.register(pg_catalog.regclass, pg_catalog.name, pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.numeric, pg_catalog.bool),
    backfill.unregister(pg_catalog.regclass, pg_catalog.bool),
    backfill.plan(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.bool, pg_catalog.bool, pg_catalog.bool, pg_catalog.text, pg_catalog.bool),
    backfill.cancel(pg_catalog.int8),
    backfill.preview(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz),
    backfill.reconcile(pg_catalog.int8),
    backfill."check"(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz),
    backfill.schedule_check(pg_catalog.regclass, pg_catalog.text, pg_catalog.interval),
    backfill.unschedule_check(pg_catalog.int8),
    backfill.run_check(pg_catalog.int8),
    backfill.schedule(pg_catalog.int8, pg_catalog.text, pg_catalog.int4, pg_catalog.text),
    backfill.unschedule(pg_catalog.int8),
    backfill.lock_target(pg_catalog.regclass),
    backfill.in_quiet_hours(pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz)
TO PUBLIC;
GRANT EXECUTE ON PROCEDURE
    backfill.run(pg_catalog.int8, pg_catalog.int4),
    backfill.backfill(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text)
TO PUBLIC;
-- Monitoring and lineage (25_views.sql); the views are covered by the
-- SELECT grant above.
GRANT EXECUTE ON FUNCTION backfill._lineage_pieces(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) TO PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.lineage(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) TO PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.changes(pg_catalog.int8) TO PUBLIC;
-- How a target's chunks replace their rows (45_strategy.sql).
GRANT EXECUTE ON FUNCTION backfill.set_strategy(pg_catalog.regclass, pg_catalog.text) TO PUBLIC;
-- Pipelines (50_pipelines.sql): the view and table are covered by the
-- SELECT grant above.
GRANT EXECUTE ON FUNCTION
    backfill.depend(pg_catalog.regclass, pg_catalog.regclass),
    backfill.undepend(pg_catalog.regclass, pg_catalog.regclass),
    backfill.cancel_group(pg_catalog.int8),
    backfill.schedule_group(pg_catalog.int8, pg_catalog.text, pg_catalog.int4, pg_catalog.text),
    backfill.lineage_chart(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz),
    backfill.reconcile_group(pg_catalog.int8)
TO PUBLIC;
GRANT EXECUTE ON PROCEDURE backfill.run_group(pg_catalog.int8, pg_catalog.int4) TO PUBLIC;
