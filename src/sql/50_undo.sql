
-- ---------------------------------------------------------------------------
-- Undo: keep what a backfill replaced, revert a run, diff it (0.2.0,
-- issues 20 and 28; doc/undo.md).  C: engine/archive.c (which table keeps
-- what), engine/archivestore.c (the tables, from C only), the keeping and
-- restoring strategies in engine/replace.c, orchestration/undo.c (revert,
-- diff, purge), api/undo.c (the entry points).
--
-- The archived rows live in tables of schema backfill_archive, made by the
-- first keeping chunk from C (no SQL), owned by the owner of the table
-- whose rows they keep: they hold that owner's rows in columns of that
-- owner's types, so whatever PostgreSQL runs on them (ANALYZE, a range
-- type's subtype_diff) runs as that owner.  Nobody has USAGE on the
-- schema: nobody reads them but through diff and revert, which check the
-- caller's rights on the target, and nobody writes them but the
-- extension, from C.  They are not members of the extension, so pg_dump
-- dumps them (with their rows and owners) like any table;
-- backfill.archives and backfill.archived_chunks, which say what they
-- hold, are configuration tables (pg_extension_config_dump).
-- ---------------------------------------------------------------------------

-- A schema of this name made by someone else is never adopted: its owner
-- could plant objects in it.  Say so, and what to do, instead of CREATE
-- SCHEMA's bare "already exists".
DO $guard$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_namespace
                WHERE nspname OPERATOR(pg_catalog.=) 'backfill_archive') THEN
        RAISE EXCEPTION 'schema "backfill_archive" already exists and will not be adopted'
            USING ERRCODE = 'duplicate_schema',
                  DETAIL = 'The extension creates this schema for the rows its runs keep (keep_replaced); a schema of that name that it did not create is never used.',
                  HINT = 'Drop or rename the schema "backfill_archive", then run CREATE EXTENSION backfill (or ALTER EXTENSION backfill UPDATE) again.';
    END IF;
END
$guard$;
CREATE SCHEMA backfill_archive;
REVOKE ALL ON SCHEMA backfill_archive FROM PUBLIC;
COMMENT ON SCHEMA backfill_archive IS
    'The rows backfill runs replaced (keep_replaced), in tables owned by the owners of the tables they come from; read them through backfill.diff and backfill.revert.';

-- Keeping is part of the definition: a registration that changes it is a
-- new definition version.  Old versions kept nothing.
ALTER TABLE backfill.definitions
    ADD COLUMN keep_replaced pg_catalog.bool NOT NULL DEFAULT false,
    ADD COLUMN keep_for      pg_catalog.interval
        CHECK (keep_for > '0'::pg_catalog.interval),
    ADD COLUMN key           pg_catalog.name[];
ALTER TABLE backfill.targets
    ADD COLUMN keep_replaced pg_catalog.bool NOT NULL DEFAULT false,
    ADD COLUMN keep_for      pg_catalog.interval,
    ADD COLUMN key           pg_catalog.name[];

-- A run's keep_replaced is resolved when it is planned (the definition's,
-- or plan's keep_replaced); reverts: the run a revert run undoes.  Old runs
-- kept nothing and revert nothing.
ALTER TABLE backfill.runs
    ADD COLUMN keep_replaced pg_catalog.bool NOT NULL DEFAULT false,
    ADD COLUMN reverts       pg_catalog.int8 REFERENCES backfill.runs;
CREATE INDEX runs_reverts_idx ON backfill.runs (reverts) WHERE reverts IS NOT NULL;

-- A target's archive tables: a keeping chunk writes into the newest while
-- it still has exactly the target's columns and owner, else makes a new
-- one (doc/undo.md "The archive").
CREATE TABLE backfill.archives (
    archive    pg_catalog.regclass PRIMARY KEY,
    target     pg_catalog.regclass NOT NULL,
    created_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now()
);
CREATE INDEX archives_target_idx ON backfill.archives (target, created_at);
COMMENT ON TABLE backfill.archives IS
    'The archive tables of each target that kept what its backfills replaced (backfill_archive.t_<target>_<run>_<chunk>), the newest last.';

CREATE TABLE backfill.archived_chunks (
    run_id      pg_catalog.int8 NOT NULL,
    chunk_no    pg_catalog.int4 NOT NULL,
    target      pg_catalog.regclass NOT NULL,
    archive     pg_catalog.regclass,
    rows_kept   pg_catalog.int8 NOT NULL,
    kept_at     pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    keep_until  pg_catalog.timestamptz,
    purged_at   pg_catalog.timestamptz,
    PRIMARY KEY (run_id, chunk_no),
    FOREIGN KEY (run_id, chunk_no) REFERENCES backfill.chunks
);
CREATE INDEX archived_chunks_target_idx ON backfill.archived_chunks (target, kept_at);
COMMENT ON TABLE backfill.archived_chunks IS
    'Per chunk that kept what it replaced: the archive table that holds its rows (NULL once that table was dropped after a purge), how many, until when (keep_for), and when they were purged.';

-- A chunk of a partitioned target replaced by truncate or swap keeps the
-- replaced leaf's own files (no copy): they move into a table of
-- backfill_archive, "kept", whose files a revert exchanges back with the
-- leaf's (doc/undo.md "Kept leaves").  A revert records the same kept table
-- under its own run: it then holds what the revert replaced.
CREATE TABLE backfill.archived_leaves (
    run_id      pg_catalog.int8 NOT NULL,
    chunk_no    pg_catalog.int4 NOT NULL,
    target      pg_catalog.regclass NOT NULL,
    leaf        pg_catalog.regclass NOT NULL,
    kept        pg_catalog.regclass NOT NULL,
    -- what an INSERT into the leaf checks, when the files were kept: its
    -- columns, NOT NULLs, constraints (and its columns' domains'), and
    -- triggers, as an md5; a revert exchanges the files back only while
    -- they are the same, else it puts the rows back with an INSERT
    rules       pg_catalog.text NOT NULL,
    PRIMARY KEY (run_id, chunk_no, leaf),
    FOREIGN KEY (run_id, chunk_no) REFERENCES backfill.archived_chunks
);
CREATE INDEX archived_leaves_kept_idx ON backfill.archived_leaves (kept);
COMMENT ON TABLE backfill.archived_leaves IS
    'Per kept chunk of a partitioned target replaced by truncate or swap: each leaf partition and the archive table holding its replaced files.';

SELECT pg_catalog.pg_extension_config_dump('backfill.archives', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.archived_chunks', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.archived_leaves', '');

REVOKE ALL ON backfill.archives, backfill.archived_chunks, backfill.archived_leaves FROM PUBLIC;
GRANT SELECT ON backfill.archives, backfill.archived_chunks, backfill.archived_leaves TO PUBLIC;
ALTER TABLE backfill.archives ENABLE ROW LEVEL SECURITY;
ALTER TABLE backfill.archived_chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE backfill.archived_leaves ENABLE ROW LEVEL SECURITY;
CREATE POLICY readable_target ON backfill.archives FOR SELECT
    USING (pg_catalog.has_table_privilege(target::pg_catalog.oid, 'SELECT'));
CREATE POLICY readable_target ON backfill.archived_chunks FOR SELECT
    USING (pg_catalog.has_table_privilege(target::pg_catalog.oid, 'SELECT'));
CREATE POLICY readable_target ON backfill.archived_leaves FOR SELECT
    USING (pg_catalog.has_table_privilege(target::pg_catalog.oid, 'SELECT'));

-- Disk used by the archive of each target the caller may read (each
-- target that ever kept a chunk): its archive tables and kept leaves;
-- "archive" is its newest archive table.
CREATE VIEW backfill.archive_usage WITH (security_invoker = true) AS
SELECT t.target,
       (SELECT a.archive FROM backfill.archives a
         WHERE a.target OPERATOR(pg_catalog.=) t.target
         ORDER BY a.created_at DESC, a.archive::pg_catalog.oid DESC LIMIT 1) AS archive,
       (SELECT pg_catalog.count(*) FROM backfill.archived_chunks k
         WHERE k.target OPERATOR(pg_catalog.=) t.target
           AND k.purged_at IS NULL) AS chunks_kept,
       (SELECT COALESCE(pg_catalog.sum(k.rows_kept), 0)::pg_catalog.int8
          FROM backfill.archived_chunks k
         WHERE k.target OPERATOR(pg_catalog.=) t.target
           AND k.purged_at IS NULL) AS rows_kept,
       s.bytes,
       pg_catalog.pg_size_pretty(s.bytes) AS size
  FROM (SELECT DISTINCT target FROM backfill.archived_chunks) t
 CROSS JOIN LATERAL (
       SELECT (COALESCE((SELECT pg_catalog.sum(pg_catalog.pg_total_relation_size(a.archive))
                           FROM backfill.archives a
                          WHERE a.target OPERATOR(pg_catalog.=) t.target), 0)
               OPERATOR(pg_catalog.+)
               COALESCE((SELECT pg_catalog.sum(pg_catalog.pg_total_relation_size(l.kept))
                           FROM (SELECT DISTINCT kept FROM backfill.archived_leaves
                                  WHERE target OPERATOR(pg_catalog.=) t.target) l), 0)
              )::pg_catalog.int8 AS bytes) s;
COMMENT ON VIEW backfill.archive_usage IS
    'Per target: the chunks and rows its archive keeps and the disk it uses.';
GRANT SELECT ON backfill.archive_usage TO PUBLIC;

-- register and plan take the keeping settings: dropped and created again
-- with the new arguments last, so calls by position and by name of 0.1.0
-- keep working (the C symbols are the same).
DROP FUNCTION backfill.register(pg_catalog.regclass, pg_catalog.name, pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.numeric, pg_catalog.bool);
CREATE FUNCTION backfill.register(target pg_catalog.regclass,
                                  time_column pg_catalog.name,
                                  source pg_catalog.text,
                                  definition pg_catalog.text DEFAULT NULL,
                                  chunk pg_catalog.interval DEFAULT '1 day',
                                  source_retention pg_catalog.interval DEFAULT NULL,
                                  source_horizon pg_catalog.text DEFAULT NULL,
                                  ledger pg_catalog.text DEFAULT NULL,
                                  measure pg_catalog.text DEFAULT 'count(*)',
                                  tolerance pg_catalog.numeric DEFAULT 0,
                                  ledger_gate pg_catalog.bool DEFAULT true,
                                  keep_replaced pg_catalog.bool DEFAULT false,
                                  keep_for pg_catalog.interval DEFAULT NULL,
                                  key pg_catalog.name[] DEFAULT NULL)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'backfill_register'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.register(pg_catalog.regclass, pg_catalog.name, pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.numeric, pg_catalog.bool, pg_catalog.bool, pg_catalog.interval, pg_catalog.name[]) IS
    'Register (or re-register) a target; returns the current definition version.';
REVOKE ALL ON FUNCTION backfill.register(pg_catalog.regclass, pg_catalog.name, pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.numeric, pg_catalog.bool, pg_catalog.bool, pg_catalog.interval, pg_catalog.name[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.register(pg_catalog.regclass, pg_catalog.name, pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.numeric, pg_catalog.bool, pg_catalog.bool, pg_catalog.interval, pg_catalog.name[]) TO PUBLIC;

DROP FUNCTION backfill.plan(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.bool, pg_catalog.bool, pg_catalog.bool, pg_catalog.text, pg_catalog.bool);
CREATE FUNCTION backfill.plan(target pg_catalog.regclass,
                              range_start pg_catalog.timestamptz,
                              range_end pg_catalog.timestamptz,
                              chunk pg_catalog.interval DEFAULT NULL,
                              note pg_catalog.text DEFAULT NULL,
                              probe pg_catalog.bool DEFAULT true,
                              backwards pg_catalog.bool DEFAULT false,
                              clear_no_source pg_catalog.bool DEFAULT false,
                              only_chunks pg_catalog.text DEFAULT NULL,
                              cascade pg_catalog.bool DEFAULT false,
                              keep_replaced pg_catalog.bool DEFAULT NULL)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'backfill_plan'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.plan(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.bool, pg_catalog.bool, pg_catalog.bool, pg_catalog.text, pg_catalog.bool, pg_catalog.bool) IS
    'Create a run and its chunks for [range_start, range_end) (only the chunks that need it, and the downstream runs with cascade); executes nothing.';
REVOKE ALL ON FUNCTION backfill.plan(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.bool, pg_catalog.bool, pg_catalog.bool, pg_catalog.text, pg_catalog.bool, pg_catalog.bool) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.plan(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.bool, pg_catalog.bool, pg_catalog.bool, pg_catalog.text, pg_catalog.bool, pg_catalog.bool) TO PUBLIC;

CREATE FUNCTION backfill.revert(run_id pg_catalog.int8)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'backfill_revert'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.revert(pg_catalog.int8) IS
    'Plan a run that puts back, chunk by chunk in reverse order, exactly the rows a kept run replaced; returns its id.';

CREATE FUNCTION backfill.diff(run_id pg_catalog.int8,
                              chunk pg_catalog.int4 DEFAULT NULL)
RETURNS TABLE (chunk_no pg_catalog.int4,
               key pg_catalog.jsonb,
               change pg_catalog.text,
               old pg_catalog.jsonb,
               new pg_catalog.jsonb)
AS 'MODULE_PATHNAME', 'backfill_diff'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.diff(pg_catalog.int8, pg_catalog.int4) IS
    'Row by row, what a kept run changed: per key, rows added, removed and changed (old and new values of the changed columns).';

CREATE FUNCTION backfill.purge_archive(older_than pg_catalog.interval,
                                       target pg_catalog.regclass DEFAULT NULL)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'backfill_purge_archive'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.purge_archive(pg_catalog.interval, pg_catalog.regclass) IS
    'Remove the kept rows of chunks kept longer ago than older_than (of the runs the caller may act on); returns the number of chunks purged.';

REVOKE ALL ON FUNCTION backfill.revert(pg_catalog.int8) FROM PUBLIC;
REVOKE ALL ON FUNCTION backfill.diff(pg_catalog.int8, pg_catalog.int4) FROM PUBLIC;
REVOKE ALL ON FUNCTION backfill.purge_archive(pg_catalog.interval, pg_catalog.regclass) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    backfill.revert(pg_catalog.int8),
    backfill.diff(pg_catalog.int8, pg_catalog.int4),
    backfill.purge_archive(pg_catalog.interval, pg_catalog.regclass)
TO PUBLIC;

-- Lineage: a revert run is never the lineage of a range, nor is a chunk it
-- undid; the run before it wins the range again (the definition version
-- that built the restored rows).  The rest of the rule is 0.1.0's.
CREATE OR REPLACE FUNCTION backfill._lineage_pieces(target pg_catalog.regclass,
                                         range_start pg_catalog.timestamptz,
                                         range_end pg_catalog.timestamptz)
RETURNS TABLE (piece_start pg_catalog.timestamptz,
               piece_end pg_catalog.timestamptz,
               run_id pg_catalog.int8,
               settled_status pg_catalog.text,
               definition_version pg_catalog.int4,
               executed_by pg_catalog.name,
               cleared pg_catalog.bool,
               finished_at pg_catalog.timestamptz,
               latest_status pg_catalog.text)
LANGUAGE sql STABLE
SET jit = off
SET search_path = pg_catalog, pg_temp
AS $pieces$
WITH RECURSIVE
-- undo: every settled chunk of an ordinary run in the range, followed up
-- the chain of the revert runs that undid it, its revert, the revert of
-- that revert, ... (done chunks of the same chunk_no; a run is reverted
-- at most once, last in first out, so a chain is a line)
undo_chain AS (
    SELECT c.run_id AS base_run, c.chunk_no, c.run_id, 0 AS depth
      FROM backfill.chunks c
      JOIN backfill.runs r
        ON r.run_id OPERATOR(pg_catalog.=) c.run_id
     WHERE r.target OPERATOR(pg_catalog.=) $1
       AND r.reverts IS NULL
       AND c.chunk_end OPERATOR(pg_catalog.>) $2
       AND c.chunk_start OPERATOR(pg_catalog.<) $3
       AND c.status OPERATOR(pg_catalog.=) ANY ('{done,no_source}'::pg_catalog.text[])
    UNION ALL
    SELECT u.base_run, u.chunk_no, v.run_id, u.depth OPERATOR(pg_catalog.+) 1
      FROM undo_chain u
      JOIN backfill.runs v
        ON v.reverts OPERATOR(pg_catalog.=) u.run_id
      JOIN backfill.chunks vc
        ON vc.run_id OPERATOR(pg_catalog.=) v.run_id
       AND vc.chunk_no OPERATOR(pg_catalog.=) u.chunk_no
       AND vc.status OPERATOR(pg_catalog.=) 'done'
),
-- a chunk whose chain ends an odd number of reverts away is undone: the
-- rows it replaced are back, and the run before it wins its range again
undone AS (
    SELECT u.base_run, u.chunk_no
      FROM undo_chain u
     GROUP BY u.base_run, u.chunk_no
    HAVING pg_catalog.max(u.depth) OPERATOR(pg_catalog.%) 2 OPERATOR(pg_catalog.=) 1
),
attempts AS (
    SELECT c.run_id,
           c.chunk_start,
           c.chunk_end,
           c.status,
           c.status OPERATOR(pg_catalog.=) ANY ('{done,no_source}'::pg_catalog.text[]) AS settled,
           r.definition_version AS version,
           c.executed_by,
           c.finished_at IS NOT NULL AS cleared,
           COALESCE(c.finished_at, r.finished_at) AS finished_at
      FROM backfill.chunks c
      JOIN backfill.runs r
        ON r.run_id OPERATOR(pg_catalog.=) c.run_id
     WHERE r.target OPERATOR(pg_catalog.=) $1
       AND c.chunk_end OPERATOR(pg_catalog.>) $2
       AND c.chunk_start OPERATOR(pg_catalog.<) $3
       -- a revert run is never the lineage of a range, nor is a chunk it undid
       AND r.reverts IS NULL
       AND NOT EXISTS (SELECT FROM undone x
                        WHERE x.base_run OPERATOR(pg_catalog.=) c.run_id
                          AND x.chunk_no OPERATOR(pg_catalog.=) c.chunk_no)
       AND ((c.status OPERATOR(pg_catalog.=) ANY ('{done,failed}'::pg_catalog.text[])
             AND c.finished_at IS NOT NULL)
            OR (c.status OPERATOR(pg_catalog.=) 'no_source'
                AND (c.finished_at IS NOT NULL
                     OR r.status OPERATOR(pg_catalog.=) 'done'))
            OR c.status OPERATOR(pg_catalog.=) 'cancelled')
),
marked AS (
    SELECT a.*,
           CASE WHEN pg_catalog.lag(a.chunk_end) OVER w OPERATOR(pg_catalog.=) a.chunk_start
                 AND pg_catalog.lag(a.status) OVER w OPERATOR(pg_catalog.=) a.status
                 AND pg_catalog.lag(a.cleared) OVER w OPERATOR(pg_catalog.=) a.cleared
                 AND (pg_catalog.lag(a.executed_by) OVER w OPERATOR(pg_catalog.=) a.executed_by
                      OR (pg_catalog.lag(a.executed_by) OVER w IS NULL
                          AND a.executed_by IS NULL))
                THEN 0 ELSE 1
           END AS brk
      FROM attempts a
    WINDOW w AS (PARTITION BY a.run_id ORDER BY a.chunk_start)
),
numbered AS (
    SELECT m.*,
           pg_catalog.sum(m.brk) OVER (PARTITION BY m.run_id ORDER BY m.chunk_start) AS island
      FROM marked m
),
islands AS (
    SELECT n.run_id,
           n.island,
           pg_catalog.min(n.chunk_start) AS lo,
           pg_catalog.max(n.chunk_end) AS hi,
           n.status,
           n.settled,
           n.version,
           n.executed_by,
           n.cleared,
           pg_catalog.max(n.finished_at) AS finished_at
      FROM numbered n
     GROUP BY n.run_id, n.island, n.status, n.settled, n.version,
              n.executed_by, n.cleared
),
bounds AS (
    SELECT GREATEST(i.lo, $2) AS t FROM islands i
    UNION
    SELECT LEAST(i.hi, $3) FROM islands i
    UNION
    SELECT $2
    UNION
    SELECT $3
),
pieces AS (
    SELECT b.t AS lo, pg_catalog.lead(b.t) OVER (ORDER BY b.t) AS hi
      FROM bounds b
),
-- the rule: of the islands that cover a piece, the one that finished
-- last wins, then the one of the higher run id
ranked AS (
    SELECT p.lo AS piece_lo,
           p.hi AS piece_hi,
           i.run_id,
           i.island,
           i.status,
           i.settled,
           i.version,
           i.executed_by,
           i.cleared,
           pg_catalog.row_number() OVER (PARTITION BY p.lo
                                         ORDER BY i.finished_at DESC NULLS LAST,
                                                  i.run_id DESC) AS rank
      FROM pieces p
      JOIN islands i
        ON i.lo OPERATOR(pg_catalog.<=) p.lo
       AND i.hi OPERATOR(pg_catalog.>=) p.hi
     WHERE p.hi IS NOT NULL
),
settled_winner AS (
    SELECT DISTINCT ON (r.piece_lo) r.*
      FROM ranked r
     WHERE r.settled
     ORDER BY r.piece_lo, r.rank
),
-- the last finished_at of the winning island's chunks on each piece (the
-- run's other chunks lie outside the island, so off the piece)
winner_finished AS (
    SELECT w.piece_lo, pg_catalog.max(n.finished_at) AS finished_at
      FROM settled_winner w
      JOIN numbered n
        ON n.run_id OPERATOR(pg_catalog.=) w.run_id
       AND n.island OPERATOR(pg_catalog.=) w.island
     WHERE n.chunk_start OPERATOR(pg_catalog.<) w.piece_hi
       AND n.chunk_end OPERATOR(pg_catalog.>) w.piece_lo
     GROUP BY w.piece_lo
),
latest AS (
    SELECT r.piece_lo, r.status
      FROM ranked r
     WHERE r.rank OPERATOR(pg_catalog.=) 1
)
SELECT p.lo,
       p.hi,
       w.run_id,
       w.status,
       w.version,
       w.executed_by,
       w.cleared,
       f.finished_at,
       l.status
  FROM pieces p
  LEFT JOIN settled_winner w
    ON w.piece_lo OPERATOR(pg_catalog.=) p.lo
  LEFT JOIN winner_finished f
    ON f.piece_lo OPERATOR(pg_catalog.=) p.lo
  LEFT JOIN latest l
    ON l.piece_lo OPERATOR(pg_catalog.=) p.lo
 WHERE p.hi IS NOT NULL
 ORDER BY p.lo
$pieces$;
