
-- ---------------------------------------------------------------------------
-- Changed regions: watched sources, the log of changed chunks, the
-- watermark, stale plans (0.2.0; doc/changed-regions.md).
--
-- backfill.watch(target, source, time_column) puts the extension's
-- triggers on a source table (and its partitions): statement triggers, and
-- for INSERT a row trigger whose WHEN clause does
-- the work; a write to
-- the source records, once per (target, chunk) per transaction, the
-- target's chunks it touched behind the target's watermark in
-- backfill.changed_regions.  A chunk build deletes the rows of its range
-- that its snapshot sees; plan(..., only_chunks => 'stale') plans the
-- built chunks that still have one.  C: api/regions.c,
-- orchestration/watch.c, orchestration/watchlog.c, engine/chunk.c.
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

-- The trigger function of the triggers watch() installs; it only works as a
-- trigger.
CREATE FUNCTION backfill._watch_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'backfill_watch_trigger'
LANGUAGE C;
COMMENT ON FUNCTION backfill._watch_trigger() IS
    'The trigger of watched sources (backfill.watch): logs the chunks a write touched.';

-- The WHEN clause of the row triggers watch() puts on a partitioned source
-- for INSERT:
-- backfill._watch_row('<source>'::regclass, '<column>', NEW."<column>").
-- It notes the chunk of a row behind a watching target's watermark in the
-- transaction's pending set and returns true only for the first row of a
-- statement that noted one, whose event writes them.  It loads the
-- source's watches itself only for a caller who may insert into the
-- source (else it is true, and the row's event loads them): called
-- directly by anyone else, it does nothing.  One function per type of
-- time column; the writer evaluates WHEN, so they are granted to PUBLIC.
CREATE FUNCTION backfill._watch_row(source pg_catalog.regclass,
                                    time_column pg_catalog.name,
                                    t pg_catalog.timestamptz)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_watch_row'
LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION backfill._watch_row(source pg_catalog.regclass,
                                    time_column pg_catalog.name,
                                    t pg_catalog.timestamp)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_watch_row'
LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION backfill._watch_row(source pg_catalog.regclass,
                                    time_column pg_catalog.name,
                                    t pg_catalog.date)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_watch_row'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION backfill._watch_row(pg_catalog.regclass, pg_catalog.name, pg_catalog.timestamptz) IS
    'The WHEN clause of the INSERT row trigger of a watched source: notes the row''s chunk; true for the first row of a statement that noted one.';
COMMENT ON FUNCTION backfill._watch_row(pg_catalog.regclass, pg_catalog.name, pg_catalog.timestamp) IS
    'The WHEN clause of the INSERT row trigger of a watched source: notes the row''s chunk; true for the first row of a statement that noted one.';
COMMENT ON FUNCTION backfill._watch_row(pg_catalog.regclass, pg_catalog.name, pg_catalog.date) IS
    'The WHEN clause of the INSERT row trigger of a watched source: notes the row''s chunk; true for the first row of a statement that noted one.';

GRANT EXECUTE ON FUNCTION
    backfill.watch(pg_catalog.regclass, pg_catalog.regclass, pg_catalog.name),
    backfill.unwatch(pg_catalog.regclass, pg_catalog.regclass),
    backfill._watch_trigger(),
    backfill._watch_row(pg_catalog.regclass, pg_catalog.name, pg_catalog.timestamptz),
    backfill._watch_row(pg_catalog.regclass, pg_catalog.name, pg_catalog.timestamp),
    backfill._watch_row(pg_catalog.regclass, pg_catalog.name, pg_catalog.date)
TO PUBLIC;

-- ---------------------------------------------------------------------------
-- Refresh jobs (orchestration/refresh.c, api/regions.c): a pg_cron job per
-- target that plans the stale chunks of the lookback (with missing, the
-- never-built ones too), downstream targets following with cascade, and
-- runs them in its quiet hours.  One refresh per target; the job is named
-- backfill_refresh_<refresh_id> and runs
-- CALL backfill._refresh_tick(<refresh_id>) as the role that scheduled it.
-- What each tick did is kept in last_message (pg_cron's return_message of
-- a successful CALL is only "CALL").
-- ---------------------------------------------------------------------------

CREATE TABLE backfill.refreshes (
    refresh_id     pg_catalog.int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    target         pg_catalog.regclass NOT NULL UNIQUE,
    cron           pg_catalog.text NOT NULL,
    quiet_hours    pg_catalog.text,
    lookback       pg_catalog.interval NOT NULL,
    cascade        pg_catalog.bool NOT NULL,
    missing        pg_catalog.bool NOT NULL,
    -- the scheduling session's TimeZone (the quiet hours, the chunk grid
    -- and the runs' TimeZone) and search_path (the runs')
    timezone       pg_catalog.text NOT NULL,
    search_path    pg_catalog.text NOT NULL,
    job_id         pg_catalog.int8,
    created_at     pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    created_by     pg_catalog.name NOT NULL,
    created_by_oid pg_catalog.oid NOT NULL,
    last_tick_at   pg_catalog.timestamptz,
    last_run_id    pg_catalog.int8,
    last_message   pg_catalog.text
);
COMMENT ON TABLE backfill.refreshes IS
    'Refresh jobs (backfill.schedule_refresh): what each target''s pg_cron job plans and runs, and what its last tick did.';
SELECT pg_catalog.pg_extension_config_dump('backfill.refreshes', '');
SELECT pg_catalog.pg_extension_config_dump(
    pg_catalog.pg_get_serial_sequence('backfill.refreshes', 'refresh_id'), '');
REVOKE ALL ON backfill.refreshes FROM PUBLIC;
GRANT SELECT ON backfill.refreshes TO PUBLIC;
ALTER TABLE backfill.refreshes ENABLE ROW LEVEL SECURITY;
CREATE POLICY readable_target ON backfill.refreshes FOR SELECT
    USING (pg_catalog.has_table_privilege(target::pg_catalog.oid, 'SELECT'));

CREATE FUNCTION backfill.schedule_refresh(target pg_catalog.regclass,
                                          cron pg_catalog.text DEFAULT '0 3 * * *',
                                          quiet_hours pg_catalog.text DEFAULT NULL,
                                          lookback pg_catalog.interval DEFAULT '7 days',
                                          cascade pg_catalog.bool DEFAULT true,
                                          missing pg_catalog.bool DEFAULT false)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'backfill_schedule_refresh'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.schedule_refresh(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.bool, pg_catalog.bool) IS
    'A pg_cron job that rebuilds the stale (with missing, also never-built) chunks of the lookback in quiet hours, downstream targets following with cascade; returns the job id.';

CREATE FUNCTION backfill.unschedule_refresh(target pg_catalog.regclass)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_unschedule_refresh'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION backfill.unschedule_refresh(pg_catalog.regclass) IS
    'Remove the refresh of a target and its pg_cron job; true when there was one.';

CREATE PROCEDURE backfill._refresh_tick(refresh_id pg_catalog.int8)
AS 'MODULE_PATHNAME', 'backfill_refresh_tick'
LANGUAGE C;
COMMENT ON PROCEDURE backfill._refresh_tick(pg_catalog.int8) IS
    'The command of a refresh job (backfill.schedule_refresh); called by hand, it refreshes now.';

REVOKE ALL ON FUNCTION
    backfill.schedule_refresh(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.bool, pg_catalog.bool),
    backfill.unschedule_refresh(pg_catalog.regclass)
FROM PUBLIC;
REVOKE ALL ON PROCEDURE backfill._refresh_tick(pg_catalog.int8) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    backfill.schedule_refresh(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.bool, pg_catalog.bool),
    backfill.unschedule_refresh(pg_catalog.regclass)
TO PUBLIC;
GRANT EXECUTE ON PROCEDURE backfill._refresh_tick(pg_catalog.int8) TO PUBLIC;

-- lineage, as 0.1.0 defined it, with reason at its end: why the chunks of
-- the winning run in each range were planned (chunks.reason: "stale:
-- source changed at ...", "ledger moved from X to Y"; several distinct
-- ones joined by "; "), NULL when they were planned by their range.
DROP FUNCTION backfill.lineage(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz);
CREATE FUNCTION backfill.lineage(target pg_catalog.regclass,
                                 range_start pg_catalog.timestamptz DEFAULT '-infinity',
                                 range_end pg_catalog.timestamptz DEFAULT 'infinity')
RETURNS TABLE (range_start pg_catalog.timestamptz,
               range_end pg_catalog.timestamptz,
               state pg_catalog.text,
               definition_version pg_catalog.int4,
               label pg_catalog.text,
               run_id pg_catalog.int8,
               finished_at pg_catalog.timestamptz,
               executed_by pg_catalog.name,
               reason pg_catalog.text)
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $lineage$
WITH won AS (
    SELECT p.*
      FROM backfill._lineage_pieces($1, $2, $3) p
     WHERE p.run_id IS NOT NULL
),
marked AS (
    SELECT w.*,
           CASE WHEN pg_catalog.lag(w.piece_end) OVER o OPERATOR(pg_catalog.=) w.piece_start
                 AND pg_catalog.lag(w.run_id) OVER o OPERATOR(pg_catalog.=) w.run_id
                 AND pg_catalog.lag(w.settled_status) OVER o OPERATOR(pg_catalog.=) w.settled_status
                 AND pg_catalog.lag(w.cleared) OVER o OPERATOR(pg_catalog.=) w.cleared
                 AND (pg_catalog.lag(w.executed_by) OVER o OPERATOR(pg_catalog.=) w.executed_by
                      OR (pg_catalog.lag(w.executed_by) OVER o IS NULL
                          AND w.executed_by IS NULL))
                THEN 0 ELSE 1
           END AS brk
      FROM won w
    WINDOW o AS (ORDER BY w.piece_start)
),
grouped AS (
    SELECT m.*, pg_catalog.sum(m.brk) OVER (ORDER BY m.piece_start) AS grp
      FROM marked m
),
merged AS (
    SELECT pg_catalog.min(g.piece_start) AS range_start,
           pg_catalog.max(g.piece_end) AS range_end,
           CASE g.settled_status WHEN 'done' THEN 'backfilled'::pg_catalog.text
                                 ELSE 'no_source'::pg_catalog.text
           END AS state,
           g.definition_version,
           d.label,
           g.run_id,
           pg_catalog.max(g.finished_at) AS finished_at,
           g.executed_by
      FROM grouped g
      LEFT JOIN backfill.definitions d
        ON d.target OPERATOR(pg_catalog.=) $1
       AND d.version OPERATOR(pg_catalog.=) g.definition_version
     GROUP BY g.grp, g.settled_status, g.definition_version, d.label, g.run_id,
              g.executed_by
)
SELECT m.range_start, m.range_end, m.state, m.definition_version, m.label,
       m.run_id, m.finished_at, m.executed_by,
       (SELECT pg_catalog.string_agg(DISTINCT c.reason, '; ')
          FROM backfill.chunks c
         WHERE c.run_id OPERATOR(pg_catalog.=) m.run_id
           AND c.chunk_start OPERATOR(pg_catalog.<) m.range_end
           AND c.chunk_end OPERATOR(pg_catalog.>) m.range_start)
  FROM merged m
 ORDER BY 1
$lineage$;
COMMENT ON FUNCTION backfill.lineage(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) IS
    'Merged ranges of a target with their state (backfilled or no_source), definition, run, time, executor and why they were rebuilt; the latest run wins where runs overlap.';
REVOKE ALL ON FUNCTION backfill.lineage(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.lineage(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) TO PUBLIC;
