
-- ---------------------------------------------------------------------------
-- Changed regions: watched sources, the log of changed chunks, the
-- watermark, stale plans (0.2.0; doc/changed-regions.md).
--
-- backfill.watch(target, source, time_column) puts the extension's
-- statement triggers on a source table (and its partitions); a write to
-- the source records, once per (target, chunk) per transaction, the
-- target's chunks it touched behind the target's watermark in
-- backfill.changed_regions.  A chunk build deletes the rows of its range
-- that its snapshot sees; plan(..., only_chunks => 'stale') plans the
-- built chunks that still have one.  C: api/regions.c,
-- orchestration/watch.c, engine/chunk.c.
-- ---------------------------------------------------------------------------

CREATE TABLE backfill.watches (
    target      pg_catalog.regclass NOT NULL,
    source      pg_catalog.regclass NOT NULL,
    time_column pg_catalog.name NOT NULL,
    -- the TimeZone at watch time: the local days (weeks, months) of the
    -- logged chunks, and how a timestamp or date column is read
    timezone    pg_catalog.text NOT NULL,
    created_at  pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    created_by  pg_catalog.name NOT NULL,
    PRIMARY KEY (target, source)
);
COMMENT ON TABLE backfill.watches IS
    'Which source tables a target is built from, and by which time column (backfill.watch).';
CREATE INDEX watches_source_idx ON backfill.watches (source);

CREATE TABLE backfill.changed_regions (
    target      pg_catalog.regclass NOT NULL,
    chunk_start pg_catalog.timestamptz NOT NULL,
    chunk_end   pg_catalog.timestamptz NOT NULL,
    -- the writing transaction's start: "stale: source changed at ..."
    changed_at  pg_catalog.timestamptz NOT NULL,
    source      pg_catalog.regclass,
    CHECK (chunk_start < chunk_end)
);
COMMENT ON TABLE backfill.changed_regions IS
    'Chunks of a target whose watched source changed after they were built; a build of the chunk consumes them.';
CREATE INDEX changed_regions_target_idx
    ON backfill.changed_regions (target, chunk_start);

-- The newest chunk end that any build of the target has covered; writes
-- at or beyond it are not logged.  Old rows: from their history.
ALTER TABLE backfill.targets ADD COLUMN watermark pg_catalog.timestamptz;
COMMENT ON COLUMN backfill.targets.watermark IS
    'The newest chunk end any build of the target has covered; source writes from there on are not logged as changes.';
UPDATE backfill.targets t
   SET watermark = (SELECT pg_catalog.max(c.chunk_end)
                      FROM backfill.chunks c
                      JOIN backfill.runs r
                        ON r.run_id OPERATOR(pg_catalog.=) c.run_id
                     WHERE r.target OPERATOR(pg_catalog.=) t.target
                       AND c.status OPERATOR(pg_catalog.=) ANY ('{done,no_source}'::pg_catalog.text[]));

-- Why a chunk was planned, when a stale plan chose it.
ALTER TABLE backfill.chunks ADD COLUMN reason pg_catalog.text;
COMMENT ON COLUMN backfill.chunks.reason IS
    'Why the chunk was planned: "stale: source changed at ..." or "ledger moved from X to Y"; NULL for a chunk planned by its range.';

SELECT pg_catalog.pg_extension_config_dump('backfill.watches', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.changed_regions', '');

REVOKE ALL ON backfill.watches, backfill.changed_regions FROM PUBLIC;
GRANT SELECT ON backfill.watches, backfill.changed_regions TO PUBLIC;
ALTER TABLE backfill.watches ENABLE ROW LEVEL SECURITY;
ALTER TABLE backfill.changed_regions ENABLE ROW LEVEL SECURITY;
CREATE POLICY readable_target ON backfill.watches FOR SELECT
    USING (pg_catalog.has_table_privilege(target::pg_catalog.oid, 'SELECT'));
CREATE POLICY readable_target ON backfill.changed_regions FOR SELECT
    USING (pg_catalog.has_table_privilege(target::pg_catalog.oid, 'SELECT'));

CREATE FUNCTION backfill.watch(target pg_catalog.regclass,
                               source pg_catalog.regclass,
                               time_column pg_catalog.name)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_watch'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.watch(pg_catalog.regclass, pg_catalog.regclass, pg_catalog.name) IS
    'Record the chunks of target that writes to source touch (by time_column); true when the watch is new.';

CREATE FUNCTION backfill.unwatch(target pg_catalog.regclass,
                                 source pg_catalog.regclass DEFAULT NULL)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'backfill_unwatch'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.unwatch(pg_catalog.regclass, pg_catalog.regclass) IS
    'Stop watching source (NULL: every source) for target; returns the watches removed.';

-- The statement trigger watch() installs; it only works as a trigger.
CREATE FUNCTION backfill._watch_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'backfill_watch_trigger'
LANGUAGE C;
COMMENT ON FUNCTION backfill._watch_trigger() IS
    'The statement trigger of watched sources (backfill.watch): logs the chunks a write touched.';

GRANT EXECUTE ON FUNCTION
    backfill.watch(pg_catalog.regclass, pg_catalog.regclass, pg_catalog.name),
    backfill.unwatch(pg_catalog.regclass, pg_catalog.regclass),
    backfill._watch_trigger()
TO PUBLIC;
