#!/usr/bin/env bash
# bench/parallel.sh: parallel chunks (issue 19).  One run prints the medians
# (of BENCH_REPS repetitions, run in turn) and the ratios the goals are stated
# in, all on the same data in the same minutes.
#
#   bash bench/parallel.sh                                   (as root)
#   BACKFILL_PGROOT=/opt/pgsand/NAME bash bench/parallel.sh  (a developer sandbox)
#   BENCH_REPS=2 BENCH_HEAP_ROWS=150000                      (the defaults)
#
# On a quiet 2-core machine one repetition takes about 1.5 min (rollup: the
# hand-written loop, run as in 0.1.0 and parallel => 1, about 15 s each,
# parallel => 2 and 4 about 8 s each; heap refill about 30 s) and loading
# about 45 s: the defaults finish in about 4 min, BENCH_REPS=3 in about
# 5.5 min.  BENCH_HEAP_ROWS makes a smoke test quick (the rollup's chunks
# then take less than 0.5 s: its figures mean nothing).
#
# As root it builds and installs the extension into the PostgreSQL 15 of
# BACKFILL_PGROOT (or Debian's), then runs itself as postgres against a
# throwaway cluster with default settings (fsync on) plus
# max_worker_processes = 16, removed at the end.  Never part of the tests.
#
# What it measures:
#  1. a CPU-bound rollup, 30 daily chunks of about 0.5 s of aggregation each
#     (hashing every payment of the day): a hand-written PL/pgSQL loop
#     (DELETE + INSERT ... SELECT per day, COMMIT), backfill.run as in 0.1.0
#     (no parallel argument), and parallel => 1, 2 and 4;
#  2. the I/O-bound heap refill: DELETE + INSERT of BENCH_HEAP_ROWS rows a day
#     for 30 days, at parallel => 1 and 2.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${BACKFILL_PGROOT:-}" ]; then
    export PG_CONFIG=$BACKFILL_PGROOT/usr/lib/postgresql/15/bin/pg_config
else
    export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
fi

if [ "$(id -u)" -eq 0 ] && [ "${1:-}" != "--inner" ]; then
    work=$(mktemp -d /tmp/backfill-bench.XXXXXX)
    trap 'rm -rf "$work"' EXIT
    cp -a . "$work/tree"
    make -s -C "$work/tree" clean PG_CONFIG="$PG_CONFIG" >/dev/null
    make -s -C "$work/tree" PG_CONFIG="$PG_CONFIG" >/dev/null
    make -s -C "$work/tree" install PG_CONFIG="$PG_CONFIG" >/dev/null
    chown -R postgres: "$work"
    chmod 755 "$work"
    status=0
    runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" BENCH_REPS="${BENCH_REPS:-}" \
        BENCH_HEAP_ROWS="${BENCH_HEAP_ROWS:-}" \
        "$work/tree/bench/parallel.sh" --inner || status=$?
    exit $status
fi

REPS=${BENCH_REPS:-2}
HEAP=${BENCH_HEAP_ROWS:-150000}
for n in "$REPS" "$HEAP"; do
    case "$n" in
        ''|*[!0-9]*|0*) echo "BENCH_REPS and BENCH_HEAP_ROWS must be positive integers" >&2; exit 2 ;;
    esac
done
bindir=$("$PG_CONFIG" --bindir)
. bench/lib.sh
bench_cluster "-c max_worker_processes=16"
timed() {
    local t0 t1
    t0=$(now)
    q -c "$3" >/dev/null
    t1=$(now)
    q -c "INSERT INTO bench.timings VALUES ('$1', $2, $t1 - $t0)"
}
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

started=$(now)
log "loading"
q >/dev/null <<SQL
CREATE EXTENSION backfill;
CREATE SCHEMA bench;
CREATE TABLE bench.timings (test text, rep int, seconds float8);
-- 30 days of payments for the rollup (CPU) and the heap refill (I/O)
CREATE TABLE bench.payments (id bigint NOT NULL, paid_at timestamptz NOT NULL,
                             amount numeric(10,2) NOT NULL);
INSERT INTO bench.payments
SELECT d * $HEAP + n, '2026-01-01'::timestamptz + d * interval '1 day' + n * interval '0.5 s',
       (n % 97) + 1
  FROM generate_series(0, 29) d, generate_series(1, $HEAP) n;
CREATE INDEX ON bench.payments (paid_at);
VACUUM ANALYZE bench.payments;
-- the CPU-bound rollup: every payment of the day hashed several times
CREATE TABLE bench.rollup (day timestamptz PRIMARY KEY, payments bigint, digest text);
SELECT backfill.register('bench.rollup', 'day', \$q\$
SELECT date_trunc('day', paid_at) AS day, count(*) AS payments,
       md5(string_agg(md5(md5(id::text || amount::text)), '' ORDER BY id)) AS digest
  FROM bench.payments WHERE paid_at >= \$1 AND paid_at < \$2 GROUP BY 1\$q\$);
-- the I/O-bound heap refill: a copy of the payments
CREATE TABLE bench.heap (id bigint NOT NULL, paid_at timestamptz NOT NULL, amount numeric(10,2) NOT NULL);
CREATE INDEX ON bench.heap (paid_at);
INSERT INTO bench.heap SELECT * FROM bench.payments;
SELECT backfill.register('bench.heap', 'paid_at', \$q\$
SELECT id, paid_at, amount FROM bench.payments WHERE paid_at >= \$1 AND paid_at < \$2\$q\$);
-- the hand-written loop, for the rollup
CREATE PROCEDURE bench.by_hand() LANGUAGE plpgsql AS \$p\$
DECLARE d timestamptz;
BEGIN
    FOR d IN SELECT generate_series('2026-01-01'::timestamptz, '2026-01-30', '1 day') LOOP
        DELETE FROM bench.rollup WHERE day >= d AND day < d + interval '1 day';
        INSERT INTO bench.rollup
        SELECT date_trunc('day', paid_at), count(*),
               md5(string_agg(md5(md5(id::text || amount::text)), '' ORDER BY id))
          FROM bench.payments WHERE paid_at >= d AND paid_at < d + interval '1 day' GROUP BY 1;
        COMMIT;
    END LOOP;
END \$p\$;
SQL

# one refill of the whole range by backfill: plan, then run with ARGS
refill() {
    local target=$1 args=$2
    echo "SELECT backfill.plan('$target', '2026-01-01', '2026-01-31', probe => false) AS r \\gset
CALL backfill.run(:r$args);"
}
# one repetition runs the five variants in an order rotated by one each
# time, so that a drift of the machine's speed within a repetition does not
# weigh on the same variant every time
variants=("hand|" "today|" "p1|, parallel => 1" "p2|, parallel => 2" "p4|, parallel => 4")
for rep in $(seq 1 "$REPS"); do
    log "rollup, repetition $rep"
    for k in 0 1 2 3 4; do
        variant=${variants[$(( (rep - 1 + k) % 5 ))]}
        name=${variant%%|*}
        args=${variant#*|}
        q -c "CHECKPOINT"
        if [ "$name" = hand ]; then
            timed hand "$rep" "CALL bench.by_hand()"
            continue
        fi
        t0=$(now)
        refill bench.rollup "$args" | q >/dev/null
        t1=$(now)
        q -c "INSERT INTO bench.timings VALUES ('$name', $rep, $t1 - $t0)"
    done
done
for rep in $(seq 1 "$REPS"); do
    log "heap refill, repetition $rep"
    for variant in "heap_p1|, parallel => 1" "heap_p2|, parallel => 2"; do
        name=${variant%%|*}
        args=${variant#*|}
        q -c "VACUUM ANALYZE bench.heap" -c "CHECKPOINT"
        t0=$(now)
        refill bench.heap "$args" | q >/dev/null
        t1=$(now)
        q -c "INSERT INTO bench.timings VALUES ('$name', $rep, $t1 - $t0)"
    done
done

q -c "SELECT count(*) AS rollup_days, count(DISTINCT digest) AS digests FROM bench.rollup"
q -c "SELECT count(*) AS heap_rows FROM bench.heap"
q -c "SELECT count(*) FILTER (WHERE executed_via = 'worker') AS chunks_by_workers,
             count(*) FILTER (WHERE executed_via = 'session') AS chunks_in_session,
             count(*) FILTER (WHERE status <> 'done') AS not_done
        FROM backfill.chunks"
q <<'SQL'
WITH m AS (
  SELECT test, percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) AS s,
         min(seconds) AS lo, max(seconds) AS hi
    FROM bench.timings GROUP BY test)
SELECT test, round(s::numeric, 2) AS median_s, round(lo::numeric, 2) AS min_s,
       round(hi::numeric, 2) AS max_s,
       round((s / 30)::numeric, 3) AS per_chunk_s
  FROM m ORDER BY test;
WITH m AS (
  SELECT test, percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) AS s
    FROM bench.timings GROUP BY test),
v AS (SELECT test, s FROM m)
SELECT 'parallel 2 vs 1 (rollup): speed-up' AS ratio,
       round(((SELECT s FROM v WHERE test = 'p1') / (SELECT s FROM v WHERE test = 'p2'))::numeric, 2) AS value
UNION ALL SELECT 'parallel 4 vs 1 (rollup): speed-up',
       round(((SELECT s FROM v WHERE test = 'p1') / (SELECT s FROM v WHERE test = 'p4'))::numeric, 2)
UNION ALL SELECT 'parallel 4 / parallel 2 (time)',
       round(((SELECT s FROM v WHERE test = 'p4') / (SELECT s FROM v WHERE test = 'p2'))::numeric, 2)
UNION ALL SELECT 'parallel 1 / run as in 0.1.0 (time)',
       round(((SELECT s FROM v WHERE test = 'p1') / (SELECT s FROM v WHERE test = 'today'))::numeric, 2)
UNION ALL SELECT 'parallel 1 / hand-written loop (time)',
       round(((SELECT s FROM v WHERE test = 'p1') / (SELECT s FROM v WHERE test = 'hand'))::numeric, 2)
UNION ALL SELECT 'heap refill: parallel 2 vs 1 speed-up',
       round(((SELECT s FROM v WHERE test = 'heap_p1') / (SELECT s FROM v WHERE test = 'heap_p2'))::numeric, 2);
-- the same ratios paired: the median over the repetitions of each
-- repetition's own ratio (both variants timed within the same minutes)
SELECT a || ' / ' || b AS paired_time_ratio,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY x.seconds / y.seconds)::numeric, 2) AS median,
       round(min(x.seconds / y.seconds)::numeric, 2) AS min,
       round(max(x.seconds / y.seconds)::numeric, 2) AS max
  FROM (VALUES ('p2', 'p1'), ('p4', 'p2'), ('p1', 'today'), ('p1', 'hand'),
               ('heap_p2', 'heap_p1')) AS g(a, b)
  JOIN bench.timings x ON x.test = g.a
  JOIN bench.timings y ON y.test = g.b AND y.rep = x.rep
 GROUP BY a, b ORDER BY a, b;
SQL
log "total $(printf '%.0f' "$(echo "$(now) - $started" | bc)") s"
