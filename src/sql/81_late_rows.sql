
-- ---------------------------------------------------------------------------
-- Late rows into tables that other jobs fill (issue 29, item 3;
-- doc/changed-regions.md).  A watch records the writes into every chunk of
-- the target that has ended at least settle ago, not only behind the
-- watermark of backfill's own builds: the daily job fills the table, and
-- backfill repairs it.  A stale plan takes a recorded chunk that backfill
-- built, or, when backfill never built it, that holds rows (read as the
-- definition's author).  C: orchestration/watch.c, watchlog.c, cascade.c.
-- ---------------------------------------------------------------------------

-- How long after its end a chunk counts as built by the job that fills the
-- table: a write into a chunk that ended at least settle ago is recorded.
-- Old watches: 0, every chunk that ended.
ALTER TABLE backfill.watches
    ADD COLUMN settle pg_catalog.interval NOT NULL DEFAULT '0'
        CHECK (settle >= '0'::pg_catalog.interval);
COMMENT ON COLUMN backfill.watches.settle IS
    'How long after its end a chunk counts as built by the job that fills the table: writes into a chunk that ended at least this long ago are recorded.';

-- watch takes settle: dropped and created again with the new argument last,
-- so that calls of the three-argument watch keep working; the C symbol is
-- the same.
DROP FUNCTION backfill.watch(pg_catalog.regclass, pg_catalog.regclass, pg_catalog.name);
CREATE FUNCTION backfill.watch(target pg_catalog.regclass,
                               source_table pg_catalog.regclass,
                               source_column pg_catalog.name,
                               settle pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_watch'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.watch(pg_catalog.regclass, pg_catalog.regclass, pg_catalog.name, pg_catalog.interval) IS
    'Record the chunks of target that writes to source_table touch (by its source_column) once they have ended, settle ago (NULL: 0); true when the watch is new.';
REVOKE ALL ON FUNCTION backfill.watch(pg_catalog.regclass, pg_catalog.regclass, pg_catalog.name, pg_catalog.interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.watch(pg_catalog.regclass, pg_catalog.regclass, pg_catalog.name, pg_catalog.interval) TO PUBLIC;
