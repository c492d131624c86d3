-- The rule of which run wins (doc/lineage.md, "Which run wins"), now a C
-- sweep (issue 30): the same results as the SQL rule it replaced, and a
-- history of 20,000 islands read in well under a second (the SQL rule took
-- about 45 s on it: its pieces x islands join is quadratic).
--
-- r90ref.lineage_pieces and r90ref.lineage below are the SQL rule of
-- 0.2.0 before issue 30, verbatim (src/sql/50_undo.sql and
-- src/sql/30_changed_regions.sql at that time), kept here as the
-- reference the C rule is compared with, on crafted histories and on
-- random ones.  Histories are written into the catalog directly, as runs
-- record them.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
SET client_min_messages = warning;
SELECT setval('backfill.runs_run_id_seq', 9001, false) IS NOT NULL AS seq_set;
CREATE SCHEMA r90ref;
CREATE FUNCTION r90ref.lineage_pieces(target pg_catalog.regclass,
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
CREATE FUNCTION r90ref.lineage(target pg_catalog.regclass,
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
      FROM r90ref.lineage_pieces($1, $2, $3) p
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

CREATE SCHEMA r90;
CREATE TABLE r90.src (ts timestamptz NOT NULL, v int NOT NULL);
-- mk(target, version, run status, run finished (hours after 2024-01-01,
-- NULL: none), run it reverts, chunks...): a run and its chunks, each chunk
-- 'chunk_no start end status finished executed_by [reason]' in hours after
-- 2024-01-01 ('-' for NULL); the run covers its chunks (a day when none)
CREATE FUNCTION r90.mk(tgt regclass, version int, status text, fin numeric,
                       reverts bigint, VARIADIC chunks text[]) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := '2024-01-01 00:00+00';
    rid bigint;
    c text;
    f text[];
BEGIN
    INSERT INTO backfill.runs (target, target_name, range_start, range_end, chunk,
        status, probe, backwards, clear_no_source, definition_version, timezone,
        search_path, created_by, created_by_oid, finished_at, reverts)
    VALUES (tgt, tgt::text, t0, t0 + interval '1 day', '1 hour', status, false, false,
            false, version, 'UTC', 'public', 'postgres', 'postgres'::regrole,
            t0 + fin * interval '1 hour', reverts)
    RETURNING run_id INTO rid;
    FOREACH c IN ARRAY chunks LOOP
        f := string_to_array(c, ' ');
        INSERT INTO backfill.chunks (run_id, chunk_no, chunk_start, chunk_end, status,
                                     finished_at, executed_by, reason)
        VALUES (rid, f[1]::int, t0 + f[2]::numeric * interval '1 hour',
                t0 + f[3]::numeric * interval '1 hour', f[4],
                t0 + nullif(f[5], '-')::numeric * interval '1 hour', nullif(f[6], '-'), f[7]);
    END LOOP;
    -- the run covers its chunks
    UPDATE backfill.runs r SET range_start = c.lo, range_end = c.hi
      FROM (SELECT min(chunk_start) AS lo, max(chunk_end) AS hi FROM backfill.chunks
             WHERE run_id = rid) c
     WHERE r.run_id = rid AND c.lo IS NOT NULL;
    RETURN rid;
END $$;
-- same(target, lo, hi): whether the C rule and the reference agree on the
-- pieces and on lineage() over [lo, hi)
CREATE FUNCTION r90.same(tgt regclass, lo timestamptz, hi timestamptz) RETURNS bool
LANGUAGE sql AS $$
SELECT (SELECT array_agg(p ORDER BY p.piece_start) FROM r90ref.lineage_pieces(tgt, lo, hi) p)
       IS NOT DISTINCT FROM
       (SELECT array_agg((p.piece_start, p.piece_end, p.run_id, p.settled_status,
                          p.definition_version, p.executed_by, p.cleared, p.finished_at,
                          p.latest_status) ORDER BY p.piece_start)
          FROM backfill._lineage_pieces(tgt, lo, hi) p)
   AND (SELECT array_agg(l ORDER BY l.range_start) FROM r90ref.lineage(tgt, lo, hi) l)
       IS NOT DISTINCT FROM
       (SELECT array_agg(l ORDER BY l.range_start) FROM backfill.lineage(tgt, lo, hi) l)
$$;

-------------------------------------------------------------------------
-- One day of a target, hour by hour, with every tricky case at once.
-------------------------------------------------------------------------
CREATE TABLE r90.day (ts timestamptz NOT NULL, v int NOT NULL);
SELECT backfill.register('r90.day', 'ts', 'SELECT ts, v FROM r90.src WHERE ts >= $1 AND ts < $2',
                         chunk => '1 hour') AS v1;
SELECT backfill.register('r90.day', 'ts', 'SELECT ts, v + 1 AS v FROM r90.src WHERE ts >= $1 AND ts < $2',
                         chunk => '1 hour') AS v2;
-- A (v1, done at 10:00): 00-12; 03 had no source and was cleared, 04 had
-- none and was not (it counts: the run is done); 08-12 resumed by bob; 01
-- planned for a reason
SELECT r90.mk('r90.day', 1, 'done', 10,  NULL,
    '1 0 1 done 1 alice', '2 1 2 done 2 alice stale:01', '3 2 3 done 2 alice',
    '4 3 4 no_source 3 alice', '5 4 5 no_source - -', '6 5 6 done 5 alice',
    '7 6 7 done 6 alice', '8 7 8 done 7 alice', '9 8 9 done 8 bob',
    '10 9 10 done 9 bob', '11 10 11 done 9.5 bob', '12 11 12 done 10 bob') AS run_a \gset
-- B (v2, failed): 02-06 in two-hour chunks, the first done at 11:00, the
-- second failed at 11:30: the latest attempt there failed, A still stands
SELECT r90.mk('r90.day', 2, 'failed', NULL, NULL,
    '1 2 4 done 11 carol', '2 4 6 failed 11.5 carol') AS run_b \gset
-- C (v2): 06-08, planned after A but finished before A's chunks there:
-- A wins (the latest finished wins, not the latest planned)
SELECT r90.mk('r90.day', 2, 'done', 5.5, NULL,
    '1 6 7 done 5.25 carol', '2 7 8 done 5.5 carol') AS run_c \gset
-- K (v1, kept): 09-11 at 12:00; R1 reverts both chunks (13:00); R2
-- reverts R1's first chunk (14:00); R3, a cancelled revert of K, had done
-- its first chunk.  K's first chunk: chains K-R1-R2 (2) and K-R3 (1), the
-- longest even: K stands.  Its second: K-R1 (1), odd: undone, A again.
SELECT r90.mk('r90.day', 1, 'done', 12, NULL,
    '1 9 10 done 12 dave', '2 10 11 done 12 dave') AS run_k \gset
SELECT r90.mk('r90.day', 1, 'done', 13, :run_k,
    '1 9 10 done 13 dave', '2 10 11 done 13 dave') AS run_r1 \gset
SELECT r90.mk('r90.day', 1, 'done', 14, :run_r1, '1 9 10 done 14 dave') AS run_r2 \gset
SELECT r90.mk('r90.day', 1, 'cancelled', 12.5, :run_k,
    '1 9 10 done 12.5 dave', '2 10 11 cancelled - -') AS run_r3 \gset
-- D (v2, cancelled at 15:00): 11-15, its first chunk done, the rest
-- cancelled: 12-15 were never filled, their latest attempt cancelled
SELECT r90.mk('r90.day', 2, 'cancelled', 15, NULL,
    '1 11 12 done 14.5 erin', '2 12 13 cancelled - -', '3 13 14 cancelled - -',
    '4 14 15 cancelled - -') AS run_d \gset
-- F and G (v2): 15-18 and 16-19 in one three-hour chunk each, finished at
-- the same time: the higher run id wins where they overlap
SELECT r90.mk('r90.day', 2, 'done', 16, NULL, '1 15 18 done 16 frank stale:F') AS run_f \gset
SELECT r90.mk('r90.day', 2, 'done', 16, NULL, '1 16 19 done 16 grace') AS run_g \gset
-- H (v2, done at 20:00): 19-21, no source, not cleared and the run done
-- without a finished_at of its own: the run's time counts
SELECT r90.mk('r90.day', 2, 'done', 20, NULL, '1 19 20 no_source - -', '2 20 21 no_source - -') AS run_h \gset

SELECT range_start::time AS from, range_end::time AS to, state, definition_version AS v,
       CASE run_id WHEN :run_a THEN 'A' WHEN :run_b THEN 'B' WHEN :run_c THEN 'C'
                   WHEN :run_k THEN 'K' WHEN :run_d THEN 'D' WHEN :run_f THEN 'F'
                   WHEN :run_g THEN 'G' WHEN :run_h THEN 'H' END AS run,
       finished_at::time AS finished, executed_by, reason
  FROM backfill.lineage('r90.day');
SELECT piece_start::time AS from, piece_end::time AS to, settled_status, cleared, latest_status, reasons
  FROM backfill._lineage_pieces('r90.day', '2024-01-01', '2024-01-02');
SELECT * FROM backfill.lineage_chart('r90.day', '2024-01-01', '2024-01-02');
-- only_chunks reads the same pieces (as the extension owner): B's failed
-- chunk, D's cancelled ones, and the hours nobody filled (21-24); B is
-- unfinished, so the plan starts after it
SELECT backfill.plan('r90.day', '2024-01-01 06:00', '2024-01-02', probe => false,
                     only_chunks => 'missing,failed') AS run_only \gset
SELECT chunk_start::time AS chunk FROM backfill.chunks WHERE run_id = :run_only ORDER BY 1;
-- the same as the reference, over the day and over windows cut anywhere,
-- given the wrong way round, empty, or outside everything
SELECT lo, hi, r90.same('r90.day', lo, hi) AS same
  FROM (VALUES ('-infinity'::timestamptz, 'infinity'::timestamptz),
               ('2024-01-01 02:00', '2024-01-01 13:00'),
               ('2024-01-01 04:30', '2024-01-01 04:45'),
               ('2024-01-01 16:30', '2024-01-01 17:30'),
               ('2024-01-01 10:00', '2024-01-01 03:00'),
               ('2024-01-01 05:00', '2024-01-01 05:00'),
               ('2023-01-01', '2023-02-01')) w(lo, hi);

-- only_chunks => 'stale' over overlapping logged changes: a built chunk
-- is stale since the earliest change that overlaps it (a wide region, as
-- a TRUNCATE of the source logs, under narrower ones)
SELECT backfill.cancel(:run_only) AS cancelled;
INSERT INTO backfill.changed_regions (target, chunk_start, chunk_end, changed_at)
VALUES ('r90.day', '2024-01-01 00:00', '2024-01-02 00:00', '2024-02-01 10:00'),
       ('r90.day', '2024-01-01 05:00', '2024-01-01 06:00', '2024-02-01 09:00'),
       ('r90.day', '2024-01-01 07:00', '2024-01-01 08:00', '2024-02-01 11:00'),
       ('r90.day', '2024-01-01 16:00', '2024-01-01 19:00', '2024-02-01 08:00');
SELECT backfill.plan('r90.day', '2024-01-01 06:00', '2024-01-02', probe => false,
                     only_chunks => 'stale') AS run_stale \gset
SELECT chunk_start::time AS chunk, reason FROM backfill.chunks WHERE run_id = :run_stale ORDER BY 1;
-- the same chunks and reasons when stale is asked with another mode
SELECT backfill.cancel(:run_stale) AS cancelled;
SELECT backfill.plan('r90.day', '2024-01-01 06:00', '2024-01-02', probe => false,
                     only_chunks => 'stale,outdated') AS run_stale2 \gset
SELECT chunk_start::time AS chunk, reason FROM backfill.chunks WHERE run_id = :run_stale2 ORDER BY 1;
SELECT backfill.cancel(:run_stale2) AS cancelled;
DELETE FROM backfill.changed_regions WHERE target = 'r90.day'::regclass;

-------------------------------------------------------------------------
-- Random histories: overlapping runs of mixed chunk sizes, reverts and
-- reverts of reverts, every chunk status, executors, NULL and tied finish
-- times, reasons; compared with the reference over random windows.
-------------------------------------------------------------------------
SELECT setseed(0.3);
CREATE TABLE r90.compared (target regclass, lo timestamptz, hi timestamptz, same bool);
DO $gen$
DECLARE
    t0 timestamptz := '2024-01-01 00:00+00';
    tgt regclass;
    rid bigint;
    base bigint;
    k int;
    g int;
    step interval;
    st text;
    rst text;
    runs bigint[];
    i int;
    w int;
    lo timestamptz;
    hi timestamptz;
    pts timestamptz[] := ARRAY['-infinity'::timestamptz, 'infinity', t0,
                               t0 + interval '7 hours', t0 + interval '30 hours',
                               t0 + interval '90 hours', t0 + interval '12 hours 30 minutes'];
BEGIN
    FOR i IN 1 .. 40 LOOP
        EXECUTE format('CREATE TABLE r90.rand%s (ts timestamptz NOT NULL, v int)', i);
        tgt := format('r90.rand%s', i)::regclass;
        runs := '{}';
        FOR w IN 1 .. 1 + floor(random() * 10)::int LOOP
            base := CASE WHEN cardinality(runs) > 0 AND random() < 0.25
                         THEN runs[1 + floor(random() * cardinality(runs))::int] END;
            rst := (ARRAY['done', 'done', 'failed', 'cancelled', 'planned', 'probed'])[1 + floor(random() * 6)::int];
            step := (ARRAY[interval '1 hour', interval '2 hours', interval '3 hours',
                           interval '6 hours'])[1 + floor(random() * 4)::int];
            lo := t0 + floor(random() * 60) * interval '1 hour';
            k := 1 + floor(random() * 15)::int;
            INSERT INTO backfill.runs (target, target_name, range_start, range_end, chunk,
                status, probe, backwards, clear_no_source, definition_version, timezone,
                search_path, created_by, created_by_oid, finished_at, reverts)
            VALUES (tgt, 'x', lo, lo + k * step, step, rst, false, false, false,
                    1 + floor(random() * 3)::int, 'UTC', 'public', 'postgres', 'postgres'::regrole,
                    CASE WHEN rst IN ('done', 'failed', 'cancelled') AND random() < 0.9
                         THEN t0 + interval '1 year' + floor(random() * 8) * interval '1 hour' END,
                    base)
            RETURNING run_id INTO rid;
            IF base IS NULL THEN
                FOR g IN 1 .. k LOOP
                    st := (ARRAY['pending', 'done', 'done', 'done', 'failed', 'no_source',
                                 'no_source', 'cancelled'])[1 + floor(random() * 8)::int];
                    INSERT INTO backfill.chunks (run_id, chunk_no, chunk_start, chunk_end, status,
                                                 finished_at, executed_by, reason)
                    VALUES (rid, g, lo + (g - 1) * step, lo + g * step, st,
                            CASE WHEN st NOT IN ('pending', 'cancelled') AND random() < 0.8
                                 THEN t0 + interval '1 year' + floor(random() * 8) * interval '1 hour' END,
                            (ARRAY['alice', 'bob', NULL])[1 + floor(random() * 3)::int],
                            (ARRAY[NULL, NULL, NULL, 'stale: a', 'ledger moved'])[1 + floor(random() * 5)::int]);
                END LOOP;
            ELSE
                -- a revert: the chunks of the run it reverts, same numbers
                INSERT INTO backfill.chunks (run_id, chunk_no, chunk_start, chunk_end, status,
                                             finished_at, executed_by)
                SELECT rid, c.chunk_no, c.chunk_start, c.chunk_end,
                       (ARRAY['done', 'done', 'done', 'pending', 'failed'])[1 + floor(random() * 5)::int],
                       t0 + interval '1 year' + floor(random() * 8) * interval '1 hour', 'alice'
                  FROM (SELECT * FROM backfill.chunks WHERE run_id = base
                         ORDER BY chunk_no) c
                 WHERE random() < 0.9;
            END IF;
            runs := runs || rid;
        END LOOP;
        FOR w IN 1 .. 10 LOOP
            lo := CASE WHEN w = 1 THEN '-infinity' ELSE pts[1 + floor(random() * 7)::int] END;
            hi := CASE WHEN w = 1 THEN 'infinity' ELSE pts[1 + floor(random() * 7)::int] END;
            INSERT INTO r90.compared VALUES (tgt, lo, hi, r90.same(tgt, lo, hi));
        END LOOP;
    END LOOP;
END
$gen$;
SELECT count(*) AS windows, count(*) FILTER (WHERE same) AS same,
       (SELECT count(*) FROM backfill.runs WHERE target_name = 'x') AS runs,
       (SELECT count(*) FROM backfill.runs WHERE target_name = 'x' AND reverts IS NOT NULL) AS reverts,
       (SELECT count(*) FROM backfill.chunks c JOIN backfill.runs r USING (run_id)
         WHERE r.target_name = 'x') AS chunks
  FROM r90.compared;
-- what the comparison covered: pieces won and not, each state, reasons
SELECT count(*) AS pieces, count(p.run_id) AS won,
       count(*) FILTER (WHERE p.settled_status = 'no_source') AS no_source,
       count(*) FILTER (WHERE p.latest_status = 'failed') AS latest_failed,
       count(*) FILTER (WHERE p.latest_status = 'cancelled') AS latest_cancelled,
       count(*) FILTER (WHERE p.reasons IS NOT NULL) AS with_reasons
  FROM r90.compared c, backfill._lineage_pieces(c.target, c.lo, c.hi) p;

-------------------------------------------------------------------------
-- 20,000 islands (an hourly run over 2.3 years whose hours alternate
-- done and no_source): lineage, the pieces, only_chunks and the chart
-- each answer within statement_timeout (the SQL rule took ~45 s).
-------------------------------------------------------------------------
CREATE TABLE r90.big (ts timestamptz NOT NULL, v int NOT NULL);
SELECT backfill.register('r90.big', 'ts', 'SELECT ts, v FROM r90.src WHERE ts >= $1 AND ts < $2',
                         chunk => '1 hour') AS v1;
SELECT r90.mk('r90.big', 1, 'done', 0, NULL, VARIADIC '{}') AS run_big \gset
INSERT INTO backfill.chunks (run_id, chunk_no, chunk_start, chunk_end, status, finished_at, executed_by)
SELECT :run_big, g, '2024-01-01'::timestamptz + (g - 1) * interval '1 hour',
       '2024-01-01'::timestamptz + g * interval '1 hour',
       CASE WHEN g % 2 = 0 THEN 'no_source' ELSE 'done' END,
       '2027-01-01'::timestamptz + g * interval '1 second', 'alice'
  FROM generate_series(1, 20000) g;
UPDATE backfill.runs SET range_end = '2024-01-01'::timestamptz + 20000 * interval '1 hour'
 WHERE run_id = :run_big;
ANALYZE backfill.chunks;
SET statement_timeout = '10s';
SELECT count(*) AS pieces, count(*) FILTER (WHERE settled_status = 'done') AS done
  FROM backfill._lineage_pieces('r90.big', '-infinity', 'infinity');
SELECT count(*) AS ranges FROM backfill.lineage('r90.big');
SELECT backfill.plan('r90.big', '2024-01-01', '2026-04-29', probe => false,
                     only_chunks => 'missing') AS run_missing \gset
SELECT count(*) AS chunks, min(chunk_start), max(chunk_end) FROM backfill.chunks
 WHERE run_id = :run_missing;
SELECT count(*) AS lines FROM backfill.lineage_chart('r90.big', '2024-01-01', '2026-04-29');
RESET statement_timeout;

-- leave no history behind for the tests after this one
DELETE FROM backfill.chunks c USING backfill.runs r
 WHERE r.run_id = c.run_id AND r.target::oid IN
       (SELECT oid FROM pg_class WHERE relnamespace = 'r90'::regnamespace);
DELETE FROM backfill.runs r WHERE r.target::oid IN
       (SELECT oid FROM pg_class WHERE relnamespace = 'r90'::regnamespace);
SELECT backfill.unregister('r90.day');
SELECT backfill.unregister('r90.big');
DROP SCHEMA r90 CASCADE;
DROP SCHEMA r90ref CASCADE;
