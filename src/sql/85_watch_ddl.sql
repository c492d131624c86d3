
-- ---------------------------------------------------------------------------
-- DDL on a watched source (doc/changed-regions.md).  New partitions:
-- PostgreSQL copies the watch's row triggers to a partition made or
-- attached later, but not its statement triggers, so the writes made
-- straight into such a partition (a pg_partman premake makes one every
-- day) were not recorded, silently; this event trigger gives them the
-- statement triggers, as the role that made or attached the partition
-- (also in CREATE SCHEMA, whose CREATE TABLE ... PARTITION OF elements fire
-- no event trigger of their own).
-- A renamed time column: every write to the source failed (42703) until
-- watch was called again; the watches now follow the rename.  A table (or
-- a foreign table) made to inherit from a watched one gets a WARNING: its
-- own rows are not seen by the watch.  C: api/regions.c,
-- orchestration/watchtriggers.c (WatchNewPartitions, WatchRenamedColumn),
-- orchestration/watchinherit.c (WatchNewChildren).
-- ---------------------------------------------------------------------------

CREATE FUNCTION backfill._watch_ddl()
RETURNS pg_catalog.event_trigger
AS 'MODULE_PATHNAME', 'backfill_watch_ddl'
LANGUAGE C;
-- PostgreSQL calls an event trigger's function without checking EXECUTE;
-- nobody calls it otherwise (as _job_guard).
REVOKE ALL ON FUNCTION backfill._watch_ddl() FROM PUBLIC;
COMMENT ON FUNCTION backfill._watch_ddl() IS
    'Event trigger: a partition made or attached below a watched source gets the watch''s statement triggers, and a renamed watched column is followed.';

CREATE EVENT TRIGGER backfill_watch_ddl ON ddl_command_end
    WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE', 'CREATE SCHEMA',
                 'CREATE FOREIGN TABLE', 'ALTER FOREIGN TABLE')
    EXECUTE FUNCTION backfill._watch_ddl();
