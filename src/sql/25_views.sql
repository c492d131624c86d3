
-------------------------------------------------------------------------
-- Monitoring and lineage: history, progress, lineage(), changes()
--
-- Everything here only reads the catalog.  The views are security
-- invokers and the functions are plain SECURITY INVOKER functions, so the
-- catalog's row-level security applies to the reader: a user sees the
-- runs and chunks of the targets they may SELECT, nothing else.  Every
-- reference is schema-qualified and every operator written as
-- OPERATOR(pg_catalog.x); the functions, whose bodies are parsed when they
-- are called, also pin search_path (SET search_path = pg_catalog,
-- pg_temp), so the caller's search_path changes nothing, not even an
-- implicit operator.
-------------------------------------------------------------------------

-- One row per finished chunk: the chunks a run has reached and settled
-- (done, failed, or no_source).  Pending and cancelled chunks never ran
-- and are left out.  A no_source chunk counts as reached once it has a
-- finished_at, or once its run is done (then the run's finished_at
-- stands in for it).
CREATE VIEW backfill.history WITH (security_invoker = true) AS
SELECT r.target,
       c.run_id,
       c.chunk_no,
       c.chunk_start,
       c.chunk_end,
       c.status,
       r.definition_version,
       d.label AS definition_label,
       c.rows_deleted,
       c.rows_inserted,
       c.before_value,
       c.after_value,
       c.ledger_value,
       c.verdict,
       c.strategy,
       c.started_at,
       COALESCE(c.finished_at, r.finished_at) AS finished_at,
       c.executed_by,
       c.executed_via,
       r.note,
       c.attempts,
       c.error_sqlstate,
       c.error_message,
       r.target_name
  FROM backfill.chunks c
  JOIN backfill.runs r
    ON r.run_id OPERATOR(pg_catalog.=) c.run_id
  LEFT JOIN backfill.definitions d
    ON d.target OPERATOR(pg_catalog.=) r.target
   AND d.version OPERATOR(pg_catalog.=) r.definition_version
 WHERE (c.status OPERATOR(pg_catalog.=) 'done'
        AND c.finished_at IS NOT NULL)
    OR (c.status OPERATOR(pg_catalog.=) 'failed'
        AND c.finished_at IS NOT NULL)
    OR (c.status OPERATOR(pg_catalog.=) 'no_source'
        AND (c.finished_at IS NOT NULL
             OR r.status OPERATOR(pg_catalog.=) 'done'));
COMMENT ON VIEW backfill.history IS
    'One row per finished chunk (done, failed, no_source): range, run, definition, figures, who, when, and the run''s note.';

-- One row per unfinished run (planned, probed, failed).  pid is the
-- backend that holds the run's session-level lock right now
-- (BackfillLockTag: classid BACKFILL_LOCK_CLASS_RUN = 0x42460001, objid the
-- run id, objsubid BACKFILL_LOCK_SUBID = 16966, a key the SQL advisory lock
-- functions cannot take, so no user can make a run look busy), so a
-- crashed or killed backend can never leave a run looking busy.
CREATE VIEW backfill.progress WITH (security_invoker = true) AS
SELECT r.run_id,
       r.target,
       r.status,
       s.chunks_total,
       s.chunks_done,
       s.chunks_failed,
       s.chunks_no_source,
       CASE WHEN s.chunks_total OPERATOR(pg_catalog.>) 0
            THEN pg_catalog.round(100::pg_catalog.numeric
                                  OPERATOR(pg_catalog.*) s.chunks_settled
                                  OPERATOR(pg_catalog./) s.chunks_total, 1)
       END AS percent,
       s.rows_inserted,
       CASE WHEN s.first_started IS NULL THEN NULL
            WHEN lk.pid IS NOT NULL
            THEN pg_catalog.now() OPERATOR(pg_catalog.-) s.first_started
            ELSE s.last_finished OPERATOR(pg_catalog.-) s.first_started
       END AS elapsed,
       CASE WHEN s.chunks_total OPERATOR(pg_catalog.=) s.chunks_settled
            THEN '0'::pg_catalog.interval
            ELSE s.avg_chunk
                 OPERATOR(pg_catalog.*)
                 (s.chunks_total OPERATOR(pg_catalog.-) s.chunks_settled)::pg_catalog.float8
       END AS eta,
       lk.pid,
       s.chunks_pending,
       s.chunks_via_cron,
       s.last_executed_via,
       s.last_finished AS last_finished_at,
       r.job_id,
       r.last_error
  FROM backfill.runs r
 CROSS JOIN LATERAL (
       SELECT pg_catalog.count(*) AS chunks_total,
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'done') AS chunks_done,
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'failed') AS chunks_failed,
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'no_source') AS chunks_no_source,
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'pending') AS chunks_pending,
              -- chunks that need no more work: done, and no_source
              -- unless the run still has to clear them
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'done'
                     OR (c.status OPERATOR(pg_catalog.=) 'no_source'
                         AND (c.finished_at IS NOT NULL
                              OR NOT r.clear_no_source))) AS chunks_settled,
              pg_catalog.count(*) FILTER (
                  WHERE c.executed_via OPERATOR(pg_catalog.=) 'pg_cron'
                    AND c.finished_at IS NOT NULL) AS chunks_via_cron,
              COALESCE(pg_catalog.sum(c.rows_inserted) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'done'), 0) AS rows_inserted,
              pg_catalog.min(c.started_at) AS first_started,
              pg_catalog.max(c.finished_at) AS last_finished,
              pg_catalog.avg(c.finished_at OPERATOR(pg_catalog.-) c.started_at) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'done'
                    AND c.started_at IS NOT NULL
                    AND c.finished_at IS NOT NULL) AS avg_chunk,
              (pg_catalog.array_agg(c.executed_via
                                    ORDER BY c.finished_at DESC, c.chunk_no DESC)
                   FILTER (WHERE c.finished_at IS NOT NULL))[1] AS last_executed_via
         FROM backfill.chunks c
        WHERE c.run_id OPERATOR(pg_catalog.=) r.run_id) s
  LEFT JOIN (
       SELECT l.objid, pg_catalog.min(l.pid) AS pid
         FROM pg_catalog.pg_locks l
        WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory'
          AND l.database OPERATOR(pg_catalog.=)
              (SELECT db.oid FROM pg_catalog.pg_database db
                WHERE db.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
          AND l.classid OPERATOR(pg_catalog.=) 1111883777::pg_catalog.oid
          AND l.objsubid OPERATOR(pg_catalog.=) 16966
          AND l.granted
        GROUP BY l.objid) lk
    ON lk.objid OPERATOR(pg_catalog.=)
       (r.run_id OPERATOR(pg_catalog.&) 4294967295)::pg_catalog.oid
 WHERE r.status OPERATOR(pg_catalog.=) 'planned'
    OR r.status OPERATOR(pg_catalog.=) 'probed'
    OR r.status OPERATOR(pg_catalog.=) 'failed';
COMMENT ON VIEW backfill.progress IS
    'One row per unfinished run: chunk counts, percent, rows, elapsed, eta, and the backend executing it now (pid).';

GRANT SELECT ON backfill.history, backfill.progress TO PUBLIC;

-- The pieces of a target's history over [range_start, range_end), and the
-- one rule of which run wins each: lineage() below, lineage_chart and
-- plan's only_chunks (orchestration/lineage.c, ClassifyPieces) all read it
-- here.  The chunks that reached their range (done or failed, once
-- finished; no_source, once cleared or once its run is done; cancelled)
-- are merged, per run, into islands of contiguous chunks with the same
-- status, executor and clearing; the range is cut at every island bound
-- and at its own ends; on each piece, the island that finished last (then
-- the higher run id) wins.  Per piece, in order: the settled winner (a
-- done or no_source island: its run, chunk status, definition version,
-- executor, whether its rows were cleared, and the last finished_at of
-- that run's settled chunks on the piece), all NULL where nothing settled
-- it, and the status of the latest attempt of any kind.  Internal: its
-- callers filter and present it.  SET jit = off: the planner cannot see
-- through the CTEs and estimates millions of rows for a few dozen pieces,
-- and JIT would then spend seconds compiling a query that runs in
-- milliseconds.  Only input parameters are named in a SQL
-- function body, and they are referred to as $1 (target), $2
-- (range_start), $3 (range_end).
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
               latest_status pg_catalog.text)
LANGUAGE sql STABLE
SET jit = off
SET search_path = pg_catalog, pg_temp
AS $pieces$
WITH attempts AS (
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
COMMENT ON FUNCTION backfill._lineage_pieces(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) IS
    'Internal: the pieces of a target''s history and which run wins each (the rule of lineage, lineage_chart and only_chunks).';

-- Merged lineage of a target over [range_start, range_end): the pieces
-- that a settled run wins (_lineage_pieces, done -> backfilled, no_source
-- -> no_source), adjacent pieces of the same run, state, executor and
-- clearing merged again, each with the last finished_at of that run's
-- chunks in it.  Only input parameters are named in a SQL function body,
-- and they are referred to as $1 (target), $2 (range_start), $3
-- (range_end).
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
               executed_by pg_catalog.name)
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
)
SELECT pg_catalog.min(g.piece_start),
       pg_catalog.max(g.piece_end),
       CASE g.settled_status WHEN 'done' THEN 'backfilled'::pg_catalog.text
                             ELSE 'no_source'::pg_catalog.text
       END,
       g.definition_version,
       d.label,
       g.run_id,
       pg_catalog.max(g.finished_at),
       g.executed_by
  FROM grouped g
  LEFT JOIN backfill.definitions d
    ON d.target OPERATOR(pg_catalog.=) $1
   AND d.version OPERATOR(pg_catalog.=) g.definition_version
 GROUP BY g.grp, g.settled_status, g.definition_version, d.label, g.run_id,
          g.executed_by
 ORDER BY 1
$lineage$;
COMMENT ON FUNCTION backfill.lineage(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) IS
    'Merged ranges of a target with their state (backfilled or no_source), definition, run, time and executor; the latest run wins where runs overlap.';

-- Why the numbers moved: the measure before and after each done chunk of
-- a run.  delta_pct is rounded to two decimals and NULL when the figure
-- before was 0 or NULL.  A run the caller cannot see is reported as not
-- existing, like one that does not.
CREATE FUNCTION backfill.changes(run_id pg_catalog.int8)
RETURNS TABLE (chunk_no pg_catalog.int4,
               chunk_start pg_catalog.timestamptz,
               chunk_end pg_catalog.timestamptz,
               before_value pg_catalog.numeric,
               after_value pg_catalog.numeric,
               delta pg_catalog.numeric,
               delta_pct pg_catalog.numeric)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $changes$
BEGIN
    IF $1 IS NULL THEN
        RAISE EXCEPTION 'run_id must not be null'
            USING ERRCODE := 'null_value_not_allowed';
    END IF;
    PERFORM FROM backfill.runs r WHERE r.run_id OPERATOR(pg_catalog.=) $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'run % does not exist', $1
            USING ERRCODE := 'undefined_object',
                  HINT := 'The runs you may see are listed in backfill.runs.';
    END IF;
    RETURN QUERY
    SELECT c.chunk_no,
           c.chunk_start,
           c.chunk_end,
           c.before_value,
           c.after_value,
           c.after_value OPERATOR(pg_catalog.-) c.before_value,
           CASE WHEN c.before_value OPERATOR(pg_catalog.=) 0 THEN NULL
                ELSE pg_catalog.round(100::pg_catalog.numeric
                                      OPERATOR(pg_catalog.*)
                                      (c.after_value OPERATOR(pg_catalog.-) c.before_value)
                                      OPERATOR(pg_catalog./) c.before_value, 2)
           END
      FROM backfill.chunks c
     WHERE c.run_id OPERATOR(pg_catalog.=) $1
       AND c.status OPERATOR(pg_catalog.=) 'done'
     ORDER BY c.chunk_no;
END
$changes$;
COMMENT ON FUNCTION backfill.changes(pg_catalog.int8) IS
    'Per done chunk of a run: the measure before and after, delta and delta_pct: why the numbers moved.';
