
-- ---------------------------------------------------------------------------
-- Which run wins, in O(n log n) of the chunks (0.2.0, issue 30; doc/lineage.md
-- "What it costs").  C: orchestration/lineage.c (LineagePieces, the rule),
-- api/lineage.c (_lineage_pieces).
--
-- The rule was the SQL function _lineage_pieces: its undone chunks, its
-- pieces x islands containment join and the reasons lineage() looked up
-- per merged range grew quadratically with the chunks (38 s for 30,000
-- hourly chunks, planned as a nested loop whenever the statistics were
-- missing or stale).  It is now one C function that reads the chunks once
-- and sweeps them with priority queues; as the caller, under the catalog's
-- row-level security, for lineage(), as the extension owner for
-- lineage_chart, only_chunks and undo.  It returns the reasons of the
-- winning chunks too, so lineage() merges them without a query per range.
-- ---------------------------------------------------------------------------
DROP FUNCTION backfill._lineage_pieces(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz);
CREATE FUNCTION backfill._lineage_pieces(target pg_catalog.regclass,
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
               latest_status pg_catalog.text,
               reasons pg_catalog.text[])
AS 'MODULE_PATHNAME', 'backfill__lineage_pieces'
LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION backfill._lineage_pieces(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) IS
    'Internal: the pieces of a target''s history over a range and which run wins each (the one rule of lineage, lineage_chart and only_chunks), read as the caller.';
REVOKE ALL ON FUNCTION backfill._lineage_pieces(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backfill._lineage_pieces(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) TO PUBLIC;

-- lineage, as 30_changed_regions defined it; the reasons of a merged range
-- are those of its pieces (the winning run's chunks over them), no longer
-- looked up per range.
CREATE OR REPLACE FUNCTION backfill.lineage(target pg_catalog.regclass,
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
           g.executed_by,
           pg_catalog.string_agg(DISTINCT why.why, '; ') AS reason
      FROM grouped g
      LEFT JOIN backfill.definitions d
        ON d.target OPERATOR(pg_catalog.=) $1
       AND d.version OPERATOR(pg_catalog.=) g.definition_version
      LEFT JOIN LATERAL pg_catalog.unnest(g.reasons) AS why ON true
     GROUP BY g.grp, g.settled_status, g.definition_version, d.label, g.run_id,
              g.executed_by
)
SELECT m.range_start, m.range_end, m.state, m.definition_version, m.label,
       m.run_id, m.finished_at, m.executed_by, m.reason
  FROM merged m
 ORDER BY 1
$lineage$;
