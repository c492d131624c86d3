
-- ---------------------------------------------------------------------------
-- New partitions of a watched source (doc/changed-regions.md): PostgreSQL
-- copies the watch's row triggers to a partition made or attached later,
-- but not its statement triggers, so the writes made straight into such a
-- partition (a pg_partman premake makes one every day) were not recorded,
-- silently.  This event trigger gives them the statement triggers, as the
-- role that made or attached the partition.  C: api/regions.c,
-- orchestration/watch.c (WatchNewPartitions).
-- ---------------------------------------------------------------------------

CREATE FUNCTION backfill._watch_partitions()
RETURNS pg_catalog.event_trigger
AS 'MODULE_PATHNAME', 'backfill_watch_partitions'
LANGUAGE C;
-- PostgreSQL calls an event trigger's function without checking EXECUTE;
-- nobody calls it otherwise (as _job_guard).
REVOKE ALL ON FUNCTION backfill._watch_partitions() FROM PUBLIC;
COMMENT ON FUNCTION backfill._watch_partitions() IS
    'Event trigger: a partition made or attached below a watched source gets the watch''s statement triggers.';

CREATE EVENT TRIGGER backfill_watch_partitions ON ddl_command_end
    WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE')
    EXECUTE FUNCTION backfill._watch_partitions();
