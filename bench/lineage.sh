#!/usr/bin/env bash
# bench/lineage.sh: lineage and only-mode plans against the size of the
# history (issue 30, item 1).  For each scale (chunks of one target), in a
# database of its own, it times what reads the rule of which run wins:
#
#   lineage.flat      backfill.lineage of one done hourly run (issue 30's
#                     target: 3.4 years of hours at 30,000)
#   lineage.mixed     backfill.lineage of a mixed history (bench/lineage_history.sql:
#                     overlapping runs of two definition versions, no_source
#                     hours, failed and cancelled chunks, two executors, a
#                     revert, overlapping refreshes finishing out of order)
#   lineage.reader    the same as a role that may only read the target: the
#                     catalog's row-level security applies
#   lineage.nostats   the same with no statistics on backfill.chunks and
#                     backfill.runs (the case that made the SQL rule
#                     quadratic)
#   pieces.mixed      backfill._lineage_pieces, the rule itself
#   plan.missing.flat plan(..., only_chunks => 'missing') past the flat run's
#                     end (10 days missing)
#   plan.missing / plan.outdated / plan.failed / plan.stale   the only-modes
#                     over the mixed history's range (stale: a wide logged
#                     change over 60 % of the hours, as a TRUNCATE of the
#                     source logs, and hourly ones)
#   chart.mixed       backfill.lineage_chart of the whole mixed range
#   cascade.flat      plan(..., cascade => true) of the flat range with a
#                     daily downstream target
#
# each against a hand-written query in the same run, alternated (the order
# swapped every repetition), in one session per scale after a warm-up pass,
# each measured inside the database: the statement is repeated until 0.5 s
# have passed, its effects rolled back each time by a subtransaction, and
# its wall time and the backend's CPU time (user + system, from /proc) per
# call are recorded; the chunks the rolled-back plans left dead are vacuumed
# before the next test:
#
#   lineage.*         hand-written latest-run-wins: DISTINCT ON the chunk
#                     start, latest finished first, over the settled chunks
#                     of ordinary runs, merged into ranges with the same
#                     window functions as lineage().  Right on this data
#                     because every run uses the hourly grid; it knows no
#                     islands of other grids and no revert chains.
#   pieces.mixed, chart.mixed   the floor: one plain read of the rows and
#                     columns the rule reads (runs JOIN chunks over the range)
#   plan.*            the same choice written by hand over the hourly grid
#                     (generate_series of the hours, anti-join or join with
#                     the latest chunk per hour; stale: the logged regions
#                     cut into hours), its hours written into a temporary
#                     table (plan writes a run and its chunks)
#   cascade.flat      the two runs planned by hand: plan() of the flat
#                     range, then plan() of the daily target's range
#
# It prints per scale the medians (wall and CPU), the paired ratios (median
# of the per-repetition ratios backfill / by hand, wall), the growth from one
# scale to the next, and the goals: at 30,000 chunks <= 0.5 s, at 300,000
# <= 5 s, the time at 300,000 within 12 x the time at 30,000 (wall; and the
# same ratio in CPU time, which the load of a shared machine moves less).
# The catalog of the 300,000 scale (about 600,000 chunks with both targets)
# is larger than the default shared_buffers (128 MB); the smaller ones fit.
#
#   bash bench/lineage.sh                                   (as root, like scripts/test.sh)
#   BACKFILL_PGROOT=/opt/pgsand/NAME bash bench/lineage.sh  (a developer sandbox)
#   BENCH_SCALES="250 2500 25000 30000 250000 300000"       (the default)
#   BENCH_REPS=5                                            (the default)
#
# As root it builds and installs the extension (scripts/setup.sh), then runs
# itself as the postgres user against a throwaway cluster of its own with
# default settings but autovacuum off (bench/lib.sh), removed at the end.  Never part of the
# test command.  About 20 minutes on 2 cores with the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
bench_as_postgres bench/lineage.sh "${1:-}" BENCH_SCALES BENCH_REPS

SCALES=${BENCH_SCALES:-250 2500 25000 30000 250000 300000}
REPS=${BENCH_REPS:-5}
bindir=$("$PG_CONFIG" --bindir)
ticks=$(getconf CLK_TCK)

# autovacuum off: the catalog is analyzed once, after loading, and the test
# without statistics stays without them
bench_cluster "-c autovacuum=off"
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
started=$(now)

q -d postgres >/dev/null <<'SQL'
CREATE TABLE timings (test text, side text, scale int, rep int, seconds float8,
                      cpu_seconds float8, iterations int);
CREATE TABLE sizes (scale int, target text, chunks bigint, runs bigint, lineage_rows bigint,
                    by_hand_rows bigint);
SQL

# the hand-written queries, over target $T of $H hours from 2020-01-01
# (psql variables :'t' and :h)
hand_latest_settled="
    SELECT DISTINCT ON (c.chunk_start) c.chunk_start, c.chunk_end, c.run_id, c.status,
           r.definition_version, c.executed_by,
           COALESCE(c.finished_at, r.finished_at) AS finished_at
      FROM backfill.runs r JOIN backfill.chunks c ON c.run_id = r.run_id
     WHERE r.target = %1\$L::regclass AND r.reverts IS NULL
       AND c.status IN ('done', 'no_source')
     ORDER BY c.chunk_start, COALESCE(c.finished_at, r.finished_at) DESC NULLS LAST,
              c.run_id DESC"
hand_lineage="
    WITH latest AS ($hand_latest_settled),
    marked AS (
        SELECT l.*, CASE WHEN lag(l.chunk_end) OVER w = l.chunk_start
                          AND lag(l.run_id) OVER w = l.run_id
                          AND lag(l.status) OVER w = l.status
                          AND lag(l.executed_by) OVER w IS NOT DISTINCT FROM l.executed_by
                         THEN 0 ELSE 1 END AS brk
          FROM latest l WINDOW w AS (ORDER BY l.chunk_start)),
    grouped AS (SELECT m.*, sum(m.brk) OVER (ORDER BY m.chunk_start) AS grp FROM marked m)
    SELECT count(*) FROM (
        SELECT min(g.chunk_start), max(g.chunk_end), g.status, g.definition_version,
               g.run_id, max(g.finished_at), g.executed_by
          FROM grouped g
         GROUP BY g.grp, g.status, g.definition_version, g.run_id, g.executed_by) s"
hours="generate_series('2020-01-01'::timestamptz, '2020-01-01'::timestamptz
                       + (%2\$s - 1) * interval '1 hour', '1 hour') h"
hand_missing="
    CREATE TEMP TABLE picked AS SELECT h FROM $hours
     WHERE NOT EXISTS (SELECT FROM backfill.runs r JOIN backfill.chunks c ON c.run_id = r.run_id
                        WHERE r.target = %1\$L::regclass AND r.reverts IS NULL
                          AND c.status IN ('done', 'no_source') AND c.chunk_start = h.h)"
hand_outdated="
    CREATE TEMP TABLE picked AS SELECT l.chunk_start FROM ($hand_latest_settled) l
     WHERE l.status = 'done' AND l.definition_version
           < (SELECT current_version FROM backfill.targets WHERE target = %1\$L::regclass)"
hand_failed="
    CREATE TEMP TABLE picked AS SELECT l.chunk_start FROM (
        SELECT DISTINCT ON (c.chunk_start) c.chunk_start, c.status
          FROM backfill.runs r JOIN backfill.chunks c ON c.run_id = r.run_id
         WHERE r.target = %1\$L::regclass AND r.reverts IS NULL AND c.status <> 'pending'
         ORDER BY c.chunk_start, COALESCE(c.finished_at, r.finished_at) DESC NULLS LAST,
                  c.run_id DESC) l
     WHERE l.status IN ('failed', 'cancelled')"
hand_stale="
    CREATE TEMP TABLE picked AS SELECT l.chunk_start FROM ($hand_latest_settled) l
      JOIN (SELECT DISTINCT g.h FROM backfill.changed_regions x,
                   generate_series(x.chunk_start, x.chunk_end - interval '1 hour', '1 hour') g(h)
             WHERE x.target = %1\$L::regclass) x ON x.h = l.chunk_start
     WHERE l.status = 'done'"
floor_read="
    SELECT count(*) FROM (
        SELECT c.run_id, c.chunk_no, c.chunk_start, c.chunk_end, c.status, c.executed_by,
               c.finished_at, r.status, r.finished_at, r.definition_version, r.reverts, c.reason
          FROM backfill.runs r JOIN backfill.chunks c ON c.run_id = r.run_id
         WHERE r.target = %1\$L::regclass AND c.chunk_end > '-infinity'
           AND c.chunk_start < 'infinity' OFFSET 0) s"
range="'2020-01-01', '2020-01-01'::timestamptz + %2\$s * interval '1 hour'"

# the pairs: name|target|backfill statement|hand-written statement (format()
# templates: %1$s the target, %2$s the hours)
pairs=(
    "lineage.flat|bench.flat|SELECT count(*) FROM backfill.lineage(%1\$L)|$hand_lineage"
    "lineage.mixed|bench.mixed|SELECT count(*) FROM backfill.lineage(%1\$L)|$hand_lineage"
    "lineage.reader|bench.mixed|SELECT count(*) FROM backfill.lineage(%1\$L)|$hand_lineage"
    "pieces.mixed|bench.mixed|SELECT count(*) FROM backfill._lineage_pieces(%1\$L, '-infinity', 'infinity')|$floor_read"
    "plan.missing.flat|bench.flat|SELECT backfill.plan(%1\$L, '2020-01-01', '2020-01-01'::timestamptz + (%2\$s + 240) * interval '1 hour', probe => false, only_chunks => 'missing')|$(printf '%s' "$hand_missing" | sed 's/(%2\$s - 1)/(%2$s + 239)/')"
    "plan.missing|bench.mixed|SELECT backfill.plan(%1\$L, $range, probe => false, only_chunks => 'missing')|$hand_missing"
    "plan.outdated|bench.mixed|SELECT backfill.plan(%1\$L, $range, probe => false, only_chunks => 'outdated')|$hand_outdated"
    "plan.failed|bench.mixed|SELECT backfill.plan(%1\$L, $range, probe => false, only_chunks => 'failed')|$hand_failed"
    "plan.stale|bench.mixed|SELECT backfill.plan(%1\$L, $range, probe => false, only_chunks => 'stale')|$hand_stale"
    "chart.mixed|bench.mixed|SELECT count(*) FROM backfill.lineage_chart(%1\$L, $range)|$floor_read"
    "cascade.flat|bench.flat|SELECT backfill.plan(%1\$L, $range, probe => false, cascade => true)|SELECT backfill.plan(%1\$L, $range, probe => false), backfill.plan('bench.daily', $range, probe => false)"
)

for n in $SCALES; do
    db=lineage_$n
    log "scale $n: building the history"
    q -d postgres -c "CREATE DATABASE $db" >/dev/null
    q -d "$db" >/dev/null <<SQL
SET client_min_messages = warning;
CREATE EXTENSION backfill;
CREATE SCHEMA bench;
CREATE TABLE bench.src (ts timestamptz NOT NULL, v int NOT NULL);
CREATE TABLE bench.flat (ts timestamptz NOT NULL, v int NOT NULL);
CREATE TABLE bench.mixed (ts timestamptz NOT NULL, v int NOT NULL);
CREATE TABLE bench.daily (day timestamptz NOT NULL, v bigint NOT NULL);
SELECT backfill.register('bench.flat', 'ts', 'SELECT ts, v FROM bench.src WHERE ts >= \$1 AND ts < \$2', chunk => '1 hour');
SELECT backfill.register('bench.mixed', 'ts', 'SELECT ts, v FROM bench.src WHERE ts >= \$1 AND ts < \$2', chunk => '1 hour');
SELECT backfill.register('bench.mixed', 'ts', 'SELECT ts, v + 1 AS v FROM bench.src WHERE ts >= \$1 AND ts < \$2', chunk => '1 hour');
SELECT backfill.register('bench.daily', 'day', 'SELECT date_trunc(''day'', ts) AS day, count(*) AS v FROM bench.flat WHERE ts >= \$1 AND ts < \$2 GROUP BY 1', chunk => '1 day');
SELECT backfill.depend('bench.daily', 'bench.flat');
CREATE ROLE bench_reader_$n;
GRANT USAGE ON SCHEMA bench TO bench_reader_$n;
GRANT SELECT ON bench.mixed TO bench_reader_$n;
CREATE TABLE bench.timings (test text, side text, scale int, rep int, seconds float8,
                            cpu_seconds float8, iterations int);
-- cpu(): the CPU seconds (user + system) this backend has used so far
CREATE FUNCTION bench.cpu() RETURNS float8 LANGUAGE sql AS \$\$
    SELECT (split_part(s, ' ', 14)::float8 + split_part(s, ' ', 15)::float8) / $ticks
      FROM pg_read_file('/proc/self/stat') s
\$\$;
-- t(test, side, rep, statement, role): the statement's wall and CPU time,
-- run as "role" when given, its effects rolled back (a subtransaction);
-- repeated until 0.5 s of wall time is spent (CPU time is counted in 10 ms
-- ticks: at least 2 % precise), each figure divided by the iterations
CREATE FUNCTION bench.t(test text, side text, rep int, stmt text, who text DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE
    t0 timestamptz;
    c0 float8 := bench.cpu();
    wall float8 := 0;
    iters int := 0;
BEGIN
    LOOP
        BEGIN
            IF who IS NOT NULL THEN
                EXECUTE format('SET LOCAL ROLE %I', who);
            END IF;
            t0 := clock_timestamp();
            EXECUTE stmt;
            wall := wall + extract(epoch FROM clock_timestamp() - t0);
            RAISE EXCEPTION USING ERRCODE = 'BF999', MESSAGE = 'roll back';
        EXCEPTION WHEN SQLSTATE 'BF999' THEN
            NULL;
        END;
        iters := iters + 1;
        EXIT WHEN wall >= 0.5 OR iters >= 1000;
    END LOOP;
    INSERT INTO bench.timings
    VALUES (test, side, $n, rep, wall / iters, (bench.cpu() - c0) / iters, iters);
END
\$\$;
-- n(statement): the count a statement returns
CREATE FUNCTION bench.n(stmt text) RETURNS bigint LANGUAGE plpgsql AS \$\$
DECLARE
    r bigint;
BEGIN
    EXECUTE stmt INTO r;
    RETURN r;
END
\$\$;
SQL
    q -d "$db" -v n="$n" -v shape=flat -v tgt=bench.flat -f bench/lineage_history.sql >/dev/null
    q -d "$db" -v n="$n" -v shape=mixed -v tgt=bench.mixed -f bench/lineage_history.sql >/dev/null
    q -d "$db" >/dev/null <<SQL
-- logged changes on the mixed target: a wide one (a TRUNCATE of the source
-- logs every built chunk; here one region over 60 % of the hours) and one
-- hour in ten of the refreshed range
INSERT INTO backfill.changed_regions (target, chunk_start, chunk_end, changed_at)
SELECT 'bench.mixed', '2020-01-01'::timestamptz,
       '2020-01-01'::timestamptz + ($n * 0.6)::int * interval '1 hour', '2025-03-01'::timestamptz
UNION ALL
SELECT 'bench.mixed', h, h + interval '1 hour', '2025-03-02'::timestamptz
  FROM generate_series('2020-01-01'::timestamptz + ($n * 0.75)::int * interval '1 hour',
                       '2020-01-01'::timestamptz + ($n * 0.85)::int * interval '1 hour',
                       '10 hours') h;
VACUUM ANALYZE backfill.runs;
VACUUM ANALYZE backfill.chunks;
VACUUM ANALYZE backfill.changed_regions;
SQL
    q -d postgres -c "INSERT INTO sizes
        SELECT $n, t, NULL, NULL, NULL, NULL FROM unnest('{bench.flat,bench.mixed}'::text[]) t" >/dev/null
    for t in bench.flat bench.mixed; do
        q -d "$db" -At -c "SELECT (SELECT count(*) FROM backfill.chunks c JOIN backfill.runs r USING (run_id)
                                    WHERE r.target = '$t'::regclass),
                                   (SELECT count(*) FROM backfill.runs WHERE target = '$t'::regclass),
                                   (SELECT count(*) FROM backfill.lineage('$t')),
                                   bench.n(format(\$s\$$hand_lineage\$s\$, '$t', $n))" |
            while IFS='|' read -r chunks runs rows hand; do
                q -d postgres -c "UPDATE sizes SET chunks = $chunks, runs = $runs, lineage_rows = $rows,
                                  by_hand_rows = $hand WHERE scale = $n AND target = '$t'" >/dev/null
            done
    done

    # pair_sql REP ENTRY FIRST: the two timed statements of one repetition
    # of a pair, in that order
    pair_sql() {
        local rep=$1 entry=$2 first=$3 name target ours theirs who=NULL
        IFS='|' read -r -d '' name target ours theirs <<<"$entry" || true
        [ "$name" = lineage.reader ] && who="'bench_reader_$n'"
        local a="SELECT bench.t('$name', 'backfill', $rep, format(\$s\$$ours\$s\$, '$target', $n), $who);"
        local b="SELECT bench.t('$name', 'by hand', $rep, format(\$s\$$theirs\$s\$, '$target', $n), $who);"
        if [ "$first" = backfill ]; then printf '%s\n%s\n' "$a" "$b"; else printf '%s\n%s\n' "$b" "$a"; fi
        # the rolled-back plans leave dead chunk rows: cleared before the next test
        case $name in plan.* | cascade.*) echo "VACUUM backfill.chunks; VACUUM backfill.runs;" ;; esac
    }
    # one session for all repetitions, after a warm-up pass (rep 0) in it:
    # every test is timed warm, the session's caches filled alike
    nostats="lineage.nostats|bench.mixed|SELECT count(*) FROM backfill.lineage(%1\$L)|$hand_lineage"
    {
        echo "SET client_min_messages = warning;"
        echo "SET backfill.max_chunks = 10000000;"
        for entry in "${pairs[@]}"; do pair_sql 0 "$entry" backfill; done
        for rep in $(seq 1 "$REPS"); do
            order=backfill
            [ $((rep % 2)) -eq 0 ] && order=hand
            for entry in "${pairs[@]}"; do pair_sql "$rep" "$entry" $order; done
        done
        # without statistics on the catalog (as after CREATE EXTENSION,
        # before the first ANALYZE): the SQL rule's plans turned quadratic
        echo "DELETE FROM pg_statistic WHERE starelid IN ('backfill.chunks'::regclass, 'backfill.runs'::regclass);"
        pair_sql 0 "$nostats" backfill
        for rep in $(seq 1 "$REPS"); do
            order=backfill
            [ $((rep % 2)) -eq 0 ] && order=hand
            pair_sql "$rep" "$nostats" $order
        done
        echo "DELETE FROM bench.timings WHERE rep = 0;"
    } >"$dir/reps_$n.sql"
    log "scale $n: $REPS repetitions"
    q -d "$db" -f "$dir/reps_$n.sql" >/dev/null
    q -d "$db" -c "\\copy (SELECT * FROM bench.timings) TO '$dir/timings_$n.csv' CSV" >/dev/null
    q -d postgres -c "\\copy timings FROM '$dir/timings_$n.csv' CSV" >/dev/null
    q -d postgres -c "DROP DATABASE $db" >/dev/null
done

total=$(echo "$(now) - $started" | bc)
echo "bench/lineage.sh: scales $SCALES, medians of $REPS repetitions"
echo "machine: $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB, $("$bindir/postgres" --version), load average before the report: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "total bench time $(printf '%.0f' "$total") s"
q -d postgres <<'SQL'
\pset footer off
SELECT scale, target, chunks, runs, lineage_rows, by_hand_rows FROM sizes ORDER BY scale, target;
-- medians, and the paired ratio: the median of the per-repetition ratios
CREATE TEMP VIEW med AS
SELECT test, scale,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) FILTER (WHERE side = 'backfill') AS backfill_s,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) FILTER (WHERE side = 'by hand') AS by_hand_s,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY cpu_seconds) FILTER (WHERE side = 'backfill') AS backfill_cpu,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY cpu_seconds) FILTER (WHERE side = 'by hand') AS by_hand_cpu,
       min(iterations) FILTER (WHERE side = 'backfill') AS iterations
  FROM timings GROUP BY test, scale;
CREATE TEMP VIEW paired AS
SELECT a.test, a.scale,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY a.seconds / nullif(b.seconds, 0)) AS ratio
  FROM timings a JOIN timings b USING (test, scale, rep)
 WHERE a.side = 'backfill' AND b.side = 'by hand' GROUP BY a.test, a.scale;
SELECT m.test, m.scale, round(m.backfill_s::numeric, 4) AS backfill_s,
       round(m.by_hand_s::numeric, 4) AS by_hand_s, round(p.ratio::numeric, 2) AS paired_ratio,
       round(m.backfill_cpu::numeric, 4) AS backfill_cpu_s,
       round(m.by_hand_cpu::numeric, 4) AS by_hand_cpu_s,
       round((m.backfill_s / lag(m.backfill_s) OVER w)::numeric, 1) AS growth,
       round((m.backfill_cpu / nullif(lag(m.backfill_cpu) OVER w, 0))::numeric, 1) AS cpu_growth,
       round((m.scale::numeric / lag(m.scale) OVER w), 1) AS scale_growth, m.iterations AS iters
  FROM med m JOIN paired p USING (test, scale)
WINDOW w AS (PARTITION BY m.test ORDER BY m.scale)
 ORDER BY m.test, m.scale;
-- the goals, on the backfill side of each test
SELECT m30.test,
       round(m30.backfill_s::numeric, 3) AS s_at_30000,
       CASE WHEN m30.backfill_s <= 0.5 THEN 'met' ELSE 'MISSED' END AS le_0_5_s,
       round(m300.backfill_s::numeric, 3) AS s_at_300000,
       CASE WHEN m300.backfill_s <= 5 THEN 'met' ELSE 'MISSED' END AS le_5_s,
       round((m300.backfill_s / m30.backfill_s)::numeric, 1) AS x_300k_over_30k,
       CASE WHEN m300.backfill_s <= 12 * m30.backfill_s THEN 'met' ELSE 'MISSED' END AS le_12x,
       round((m300.backfill_cpu / nullif(m30.backfill_cpu, 0))::numeric, 1) AS cpu_x,
       CASE WHEN m300.backfill_cpu <= 12 * m30.backfill_cpu THEN 'met' ELSE 'MISSED' END AS cpu_le_12x
  FROM med m30 JOIN med m300 ON m300.test = m30.test AND m300.scale = 300000
 WHERE m30.scale = 30000
 ORDER BY 1;
SQL
