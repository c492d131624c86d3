#!/usr/bin/env bash
# bench/chunk_cost.sh: the fixed cost of one chunk (issue 30, item 3).  A run
# of N one-hour chunks, each with one tiny row, against a hand-written
# procedure that does the same DELETE + INSERT ... SELECT + COMMIT per hour
# on a table of its own, over the same source, in the same cluster.  For each
# scale the two sides alternate (backfill first in odd repetitions, by hand
# first in even ones), after one warm-up of each; printed: the medians of
# the wall and CPU time per chunk, and the paired ratio (the median of the
# per-repetition ratios).  CPU time is the backend's own (user + system,
# /proc/<pid>/stat, 10 ms ticks: at 250 chunks the figure is coarse), which
# the load of a shared machine moves less than the wall time.
#
#   bash bench/chunk_cost.sh                                   (as root)
#   BACKFILL_PGROOT=/opt/pgsand/NAME bash bench/chunk_cost.sh  (a developer sandbox)
#   BENCH_SCALES="250 2500 25000"                              (the default)
#   BENCH_REPS=3                                               (the default)
#
# As root it builds and installs the extension (scripts/setup.sh), then runs
# itself as the postgres user against a throwaway cluster of its own with
# default settings (fsync on: both sides pay the same commits), removed at
# the end.  Never part of the test command.  About 6 minutes on 2 idle cores.
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
bench_as_postgres bench/chunk_cost.sh "${1:-}" BENCH_SCALES BENCH_REPS

SCALES=${BENCH_SCALES:-250 2500 25000}
REPS=${BENCH_REPS:-3}
bindir=$("$PG_CONFIG" --bindir)
ticks=$(getconf CLK_TCK)
max=0
for n in $SCALES; do [ "$n" -gt "$max" ] && max=$n; done

bench_cluster
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
started=$(now)

q >/dev/null <<SQL
CREATE EXTENSION backfill;
CREATE SCHEMA bench;
CREATE TABLE bench.timings (side text, scale int, rep int, seconds float8,
                            cpu_seconds float8);
-- one tiny row an hour
CREATE TABLE bench.src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO bench.src
SELECT '2020-01-01'::timestamptz + i * interval '1 hour', i FROM generate_series(0, $max - 1) i;
CREATE INDEX ON bench.src (ts);
CREATE TABLE bench.bf (ts timestamptz NOT NULL, v int NOT NULL);
CREATE INDEX ON bench.bf (ts);
CREATE TABLE bench.hand (ts timestamptz NOT NULL, v int NOT NULL);
CREATE INDEX ON bench.hand (ts);
SELECT backfill.register('bench.bf', 'ts', 'SELECT ts, v FROM bench.src WHERE ts >= \$1 AND ts < \$2', chunk => '1 hour');
ANALYZE bench.src;
-- cpu(): the CPU seconds (user + system) this backend has used so far
CREATE FUNCTION bench.cpu() RETURNS float8 LANGUAGE sql AS \$\$
    SELECT (split_part(s, ' ', 14)::float8 + split_part(s, ' ', 15)::float8) / $ticks
      FROM pg_read_file('/proc/self/stat') s
\$\$;
-- the same per hour by hand: DELETE, INSERT ... SELECT, COMMIT
CREATE PROCEDURE bench.by_hand(n int) LANGUAGE plpgsql AS \$\$
DECLARE
    h timestamptz;
BEGIN
    FOR i IN 0 .. n - 1 LOOP
        h := '2020-01-01'::timestamptz + i * interval '1 hour';
        DELETE FROM bench.hand WHERE ts >= h AND ts < h + interval '1 hour';
        INSERT INTO bench.hand SELECT ts, v FROM bench.src
         WHERE ts >= h AND ts < h + interval '1 hour';
        COMMIT;
    END LOOP;
END
\$\$;
SQL

# one measurement: SIDE N REP, in a session of its own
side_sql() {
    local side=$1 n=$2 rep=$3
    if [ "$side" = backfill ]; then
        echo "SELECT backfill.plan('bench.bf', '2020-01-01', '2020-01-01'::timestamptz + $n * interval '1 hour', probe => false) AS run_id \\gset"
        echo "SELECT bench.cpu() AS c0, clock_timestamp() AS t0 \\gset"
        echo "CALL backfill.run(:run_id);"
    else
        echo "SELECT bench.cpu() AS c0, clock_timestamp() AS t0 \\gset"
        echo "CALL bench.by_hand($n);"
    fi
    echo "INSERT INTO bench.timings VALUES ('$side', $n, $rep,"
    echo "  extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) / $n, (bench.cpu() - :c0) / $n);"
}
measure() {
    side_sql "$@" >"$dir/m.sql"
    q -f "$dir/m.sql" >/dev/null
}

for n in $SCALES; do
    log "scale $n: warm-up and $REPS repetitions"
    measure backfill "$n" 0
    measure hand "$n" 0
    for rep in $(seq 1 "$REPS"); do
        if [ $((rep % 2)) -eq 1 ]; then
            measure backfill "$n" "$rep"
            measure hand "$n" "$rep"
        else
            measure hand "$n" "$rep"
            measure backfill "$n" "$rep"
        fi
    done
    # the runs' chunks stay in the catalog, as they would; dead rows go
    q -c "VACUUM ANALYZE bench.bf, bench.hand, backfill.chunks, backfill.runs" >/dev/null
done

total=$(echo "$(now) - $started" | bc)
echo "bench/chunk_cost.sh: scales $SCALES, medians of $REPS repetitions (after a warm-up)"
echo "machine: $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB, $("$bindir/postgres" --version), load average before the report: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "total bench time $(printf '%.0f' "$total") s"
q <<'SQL'
\pset footer off
DELETE FROM bench.timings WHERE rep = 0;
WITH med AS (
SELECT scale,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) FILTER (WHERE side = 'backfill') AS bf_s,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) FILTER (WHERE side = 'hand') AS hand_s,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY cpu_seconds) FILTER (WHERE side = 'backfill') AS bf_cpu,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY cpu_seconds) FILTER (WHERE side = 'hand') AS hand_cpu
  FROM bench.timings GROUP BY scale),
paired AS (
SELECT a.scale,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY a.seconds / nullif(b.seconds, 0)) AS ratio,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY a.cpu_seconds / nullif(b.cpu_seconds, 0)) AS cpu_ratio
  FROM bench.timings a JOIN bench.timings b USING (scale, rep)
 WHERE a.side = 'backfill' AND b.side = 'hand' GROUP BY a.scale)
SELECT m.scale AS chunks,
       round((m.bf_s * 1000)::numeric, 3) AS backfill_ms,
       round((m.hand_s * 1000)::numeric, 3) AS by_hand_ms,
       round(p.ratio::numeric, 1) AS paired_ratio,
       round((m.bf_cpu * 1000)::numeric, 3) AS backfill_cpu_ms,
       round((m.hand_cpu * 1000)::numeric, 3) AS by_hand_cpu_ms,
       round(p.cpu_ratio::numeric, 1) AS cpu_ratio
  FROM med m JOIN paired p USING (scale) ORDER BY m.scale;
SQL
