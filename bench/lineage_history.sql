-- bench/lineage_history.sql: the history of about :n hourly chunks for the
-- target :tgt, written straight into backfill.runs and backfill.chunks (as a
-- superuser), with the columns real runs record (statuses, finish times,
-- executors, attempts, strategy, row counts, errors).  Used by
-- bench/lineage.sh; hours from 2020-01-01 00:00 UTC.
--
--   psql -v n=30000 -v shape=mixed -v tgt=bench.mixed -f bench/lineage_history.sql
--
-- shape flat: one done run of :n chunks, one tiny row each (issue 30's
-- hourly target over 3.4 years at n = 30,000).
-- shape mixed (about 1.04 n chunks):
--   A  (v1)  hours [0, 55 %), done; every 50th hour had no source (cleared);
--   K  (v1)  [30 %, 32 %), kept, then reverted by its revert run (A wins
--            there again);
--   B  (v2)  [50 %, 70 %), failed on every 200th hour and was cancelled;
--            its second half was resumed by another role;
--   C  (v2)  [70 %, 80 %), cancelled after its first hundredth;
--   refreshes (v2): runs of 24 hours every 12 hours from 75 %, 15 % of the
--            chunks; every 7th finished before the one planned before it.
SET TimeZone = 'UTC';
SET client_min_messages = warning;

-- one run: k hourly chunks from hour lo; the status of chunk g is the SQL
-- expression st of g, its executor who; the run finishes at fin, its chunk
-- g at fin - (k - g) seconds
CREATE FUNCTION pg_temp.mkrun(tgt regclass, lo int, k int, version int, status text,
                              reverts bigint, fin timestamptz, st text, who text)
RETURNS bigint LANGUAGE plpgsql AS $f$
DECLARE
    t0 timestamptz := '2020-01-01 00:00+00';
    rid bigint;
BEGIN
    INSERT INTO backfill.runs (target, target_name, range_start, range_end, chunk,
        status, probe, backwards, clear_no_source, definition_version, timezone,
        search_path, created_at, created_by, created_by_oid, finished_at,
        keep_replaced, reverts)
    VALUES (tgt, tgt::text, t0 + lo * interval '1 hour', t0 + (lo + k) * interval '1 hour',
        '1 hour', status, false, false, false, version, 'UTC', 'public',
        fin - k * interval '1 second' - interval '1 minute', 'postgres', 'postgres'::regrole,
        fin, reverts IS NOT NULL, reverts)
    RETURNING run_id INTO rid;
    EXECUTE format($i$
        INSERT INTO backfill.chunks (run_id, chunk_no, chunk_start, chunk_end, status,
            attempts, strategy, rows_deleted, rows_inserted, started_at, finished_at,
            executed_by, executed_via, error_sqlstate, error_message)
        SELECT $1, g, $2 + ($3 + g - 1) * interval '1 hour', $2 + ($3 + g) * interval '1 hour',
               s.st, CASE WHEN s.st = 'pending' THEN 0 ELSE 1 END,
               CASE WHEN s.st = 'done' THEN 'delete' END,
               CASE WHEN s.st = 'done' THEN 1 END, CASE WHEN s.st = 'done' THEN 1 END,
               CASE WHEN s.st IN ('done', 'no_source') OR e.failed
                    THEN $4 - ($5 - g + 1) * interval '1 second' END,
               CASE WHEN s.st IN ('done', 'no_source') OR e.failed
                    THEN $4 - ($5 - g) * interval '1 second' END,
               CASE WHEN s.st IN ('done', 'no_source') OR e.failed THEN (%s)::name END,
               CASE WHEN s.st IN ('done', 'no_source') OR e.failed THEN 'session' END,
               CASE WHEN e.failed THEN '22012' END,
               CASE WHEN e.failed THEN 'division by zero' END
          FROM generate_series(1, $5) g,
               LATERAL (SELECT (%s)::text AS raw) r,
               LATERAL (SELECT r.raw = 'failed' AS failed) e,
               -- a failed chunk of a cancelled run is cancelled (backfill.cancel)
               LATERAL (SELECT CASE WHEN e.failed AND $6 = 'cancelled'
                                    THEN 'cancelled' ELSE r.raw END AS st) s$i$, who, st)
    USING rid, t0, lo, fin, k, status;
    RETURN rid;
END
$f$;

SELECT CASE WHEN :'shape' = 'flat' THEN 1 ELSE 0 END AS flat \gset
\if :flat
SELECT pg_temp.mkrun(:'tgt', 0, :n, 1, 'done', NULL, '2025-01-01', '''done''', '''postgres''')
    AS run \gset
\else
SELECT (:n * 0.55)::int AS a_k, (:n * 0.50)::int AS b_lo, (:n * 0.20)::int AS b_k,
       (:n * 0.10)::int AS b_half, (:n * 0.70)::int AS c_lo, (:n * 0.10)::int AS c_k,
       greatest(1, (:n * 0.01)::int) AS c_done, (:n * 0.30)::int AS k_lo,
       greatest(1, (:n * 0.02)::int) AS k_k, (:n * 0.75)::int AS f_lo,
       greatest(1, (:n * 0.15 / 24)::int) AS f_m \gset
SELECT pg_temp.mkrun(:'tgt', 0, :a_k, 1, 'done', NULL, '2025-01-01',
    $$CASE WHEN g % 50 = 0 THEN 'no_source' ELSE 'done' END$$, '''postgres''') AS run \gset
SELECT pg_temp.mkrun(:'tgt', :k_lo, :k_k, 1, 'done', NULL, '2025-01-05',
    '''done''', '''postgres''') AS k_run \gset
SELECT pg_temp.mkrun(:'tgt', :k_lo, :k_k, 1, 'done', :k_run, '2025-01-06',
    '''done''', '''postgres''') AS run \gset
SELECT pg_temp.mkrun(:'tgt', :b_lo, :b_k, 2, 'cancelled', NULL, '2025-01-20',
    $$CASE WHEN g % 200 = 0 THEN 'failed' ELSE 'done' END$$,
    format($$CASE WHEN g > %s THEN 'someone_else' ELSE 'postgres' END$$, :b_half)) AS run \gset
SELECT pg_temp.mkrun(:'tgt', :c_lo, :c_k, 2, 'cancelled', NULL, '2025-01-25',
    format($$CASE WHEN g <= %s THEN 'done' ELSE 'cancelled' END$$, :c_done),
    '''postgres''') AS run \gset
SELECT count(pg_temp.mkrun(:'tgt', :f_lo + 12 * i, 24, 2, 'done', NULL,
           '2025-01-30'::timestamptz + i * interval '1 hour'
           - CASE WHEN i % 7 = 6 THEN interval '90 minutes' ELSE interval '0' END,
           '''done''', '''cron_role''')) AS refreshes
  FROM generate_series(0, :f_m - 1) i \gset
\endif
