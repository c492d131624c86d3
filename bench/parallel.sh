#!/usr/bin/env bash
# bench/parallel.sh: parallel chunks (issue 19).  One run prints the medians
# (of BENCH_REPS repetitions, run in turn) and the ratios the goals are stated
# in, all on the same data in the same minutes.
#
#   bash bench/parallel.sh                                   (as root)
#   BACKFILL_PGROOT=/opt/pgsand/NAME bash bench/parallel.sh  (a developer sandbox)
#   BENCH_REPS=2 BENCH_HEAP_ROWS=150000                      (the defaults)
#   BENCH_PARTS="rollup heap pool statement"                 (the default: all)
#   BENCH_PARTS=pool BENCH_REPS=5                            (the pool alone)
#   BENCH_PARTS=statement BENCH_REPS=3                       (one statement alone)
#
# On a quiet 2-core machine one repetition takes about 1.5 min (rollup: the
# hand-written loop, run as in 0.1.0 and parallel => 1, about 15 s each,
# parallel => 2 and 4 about 8 s each; heap refill about 30 s) and loading
# about 45 s: the defaults finish in about 4 min, BENCH_REPS=3 in about
# 5.5 min.  BENCH_HEAP_ROWS makes a smoke test quick (the rollup's chunks
# then take less than 0.5 s: its figures mean nothing).  The statement part
# (4) adds about 35 s a repetition on a quiet machine (66 s at load 10-13).
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
#     for 30 days, at parallel => 1 and 2;
#  3. the pool of workers (issue 30, item 2): 30 daily chunks of pure CPU,
#     calibrated on this machine to about 0.2 s and 0.5 s each in the
#     session, at parallel => 1 and 2 (alternated, the order swapped every
#     repetition); and "a chunk in a worker against the same chunk in the
#     session": the 0.2 s chunks of a target with a trigger of its own, whose
#     chunks run one at a time (doc/parallel.md), so that parallel => 2
#     executes all 30 in one pool worker, one after the other, against
#     parallel => 1 in the session.  Goals (issue 30): parallel => 2 at
#     least 1.6x faster than 1 with 0.2 s chunks and 1.8x with 0.5 s chunks;
#     a chunk in a worker within 1.1x of the session;
#  4. beyond one statement (issue 30, item 4): the same 0.2 s and 0.5 s
#     targets as 3, refilled by one statement over the 30 days (BEGIN,
#     DELETE of the range, INSERT ... SELECT, COMMIT, with PostgreSQL's
#     parallel query on: max_parallel_workers_per_gather = 2, bench.burn
#     marked PARALLEL SAFE) against backfill.run(..., parallel => 2),
#     alternated.  EXPLAIN shows first whether the statement gets a parallel
#     plan (if not at the default costs, again with parallel_setup_cost,
#     parallel_tuple_cost and min_parallel_table_scan_size at 0, which are
#     then kept for the timed statement).  Besides the wall time, the CPU
#     time of the whole cluster (the postmaster's reaped children plus its
#     live ones, from /proc) and a checksum of the target after each refill.
#     Goal: backfill faster than the one statement (one statement / backfill
#     > 1).  The load of the machine (uptime) is printed at the start and
#     the end.
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
    make -s -j2 -C "$work/tree" PG_CONFIG="$PG_CONFIG" >/dev/null
    make -s -C "$work/tree" install PG_CONFIG="$PG_CONFIG" >/dev/null
    chown -R postgres: "$work"
    chmod 755 "$work"
    status=0
    runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" BENCH_REPS="${BENCH_REPS:-}" \
        BENCH_HEAP_ROWS="${BENCH_HEAP_ROWS:-}" BENCH_PARTS="${BENCH_PARTS:-}" \
        "$work/tree/bench/parallel.sh" --inner || status=$?
    exit $status
fi

REPS=${BENCH_REPS:-2}
HEAP=${BENCH_HEAP_ROWS:-150000}
PARTS=${BENCH_PARTS:-rollup heap pool statement}
for part in $PARTS; do
    case "$part" in
        rollup|heap|pool|statement) ;;
        *) echo "BENCH_PARTS: rollup, heap, pool and statement only" >&2; exit 2 ;;
    esac
done
has_part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
# the pool and the statement alone need no payments: one a day keeps the script's shape
if ! has_part rollup && ! has_part heap; then HEAP=1; fi
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
log "load of the machine at the start: $(uptime)"
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
has_part rollup || REPS_ROLLUP=0
for rep in $(seq 1 "${REPS_ROLLUP:-$REPS}"); do
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
has_part heap || REPS_HEAP=0
for rep in $(seq 1 "${REPS_HEAP:-$REPS}"); do
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

# 3. the pool: pure CPU chunks calibrated to about 0.2 s and 0.5 s (also
# the targets of 4)
if has_part pool || has_part statement; then
    log "pool: calibrating the chunks"
    q >/dev/null <<'SQL'
CREATE FUNCTION bench.burn(n int) RETURNS bigint LANGUAGE sql STABLE AS
$$ SELECT sum(length(md5(i::text)))::bigint FROM generate_series(1, n) i $$;
CREATE TABLE bench.knob (k text PRIMARY KEY, n int NOT NULL);
CREATE TABLE bench.days (day timestamptz PRIMARY KEY);
INSERT INTO bench.days SELECT generate_series('2026-01-01'::timestamptz, '2026-01-30', '1 day');
DO $$
DECLARE
    t0 timestamptz;
    best float8 := 'infinity';
    probe int := 200000;
    k int;
BEGIN
    FOR k IN 1..5 LOOP
        t0 := clock_timestamp();
        PERFORM bench.burn(probe);
        best := least(best, extract(epoch FROM clock_timestamp() - t0));
    END LOOP;
    INSERT INTO bench.knob VALUES ('short', (probe * 0.2 / best)::int),
                                  ('long', (probe * 0.5 / best)::int);
END $$;
CREATE TABLE bench.cpu_short (day timestamptz NOT NULL, work bigint);
CREATE TABLE bench.cpu_long (day timestamptz NOT NULL, work bigint);
-- the same chunks, one at a time in a pool worker: a trigger of its own
CREATE TABLE bench.cpu_alone (day timestamptz NOT NULL, work bigint);
CREATE FUNCTION bench.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER noop AFTER INSERT ON bench.cpu_alone FOR EACH STATEMENT EXECUTE FUNCTION bench.noop();
SELECT backfill.register('bench.cpu_short', 'day', $q$
SELECT day, bench.burn((SELECT n FROM bench.knob WHERE k = 'short')) AS work
  FROM bench.days WHERE day >= $1 AND day < $2$q$);
SELECT backfill.register('bench.cpu_alone', 'day', $q$
SELECT day, bench.burn((SELECT n FROM bench.knob WHERE k = 'short')) AS work
  FROM bench.days WHERE day >= $1 AND day < $2$q$);
SELECT backfill.register('bench.cpu_long', 'day', $q$
SELECT day, bench.burn((SELECT n FROM bench.knob WHERE k = 'long')) AS work
  FROM bench.days WHERE day >= $1 AND day < $2$q$);
SQL
    q -At -c "SELECT 'pool: ' || string_agg(k || ' chunks burn ' || n || ' md5', ', ') FROM bench.knob" >&2
fi
has_part pool || REPS_POOL=0
for rep in $(seq 1 "${REPS_POOL:-$REPS}"); do
    log "pool, repetition $rep"
    for target in cpu_short cpu_long cpu_alone; do
        if [ $((rep % 2)) -eq 1 ]; then order="1 2"; else order="2 1"; fi
        for n in $order; do
            t0=$(now)
            refill "bench.$target" ", parallel => $n" | q >/dev/null
            t1=$(now)
            q -c "INSERT INTO bench.timings VALUES ('${target}_p$n', $rep, $t1 - $t0)"
        done
    done
done

# 4. beyond one statement: the targets of 3 refilled by one INSERT ... SELECT
# over the 30 days against backfill.run(..., parallel => 2)
#
# cluster_cpu: the CPU seconds (user + system) spent so far by the cluster:
# the postmaster, its children that have exited (its cutime and cstime:
# backends, parallel query workers, pool workers once reaped) and its live
# children.  The client (psql) is not counted.
cluster_cpu() {
    local pm c
    pm=$(head -n 1 "$dir/data/postmaster.pid")
    {
        awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pm/stat"
        for c in $(pgrep -P "$pm"); do
            awk '{ print $14 + $15 }' "/proc/$c/stat" 2>/dev/null || true
        done
    } | awk -v hz="$(getconf CLK_TCK)" '{ s += $1 } END { printf "%.2f", s / hz }'
}
# one_statement TARGET KNOB: the statement timed against backfill
one_statement() {
    echo "INSERT INTO bench.$1
SELECT day, bench.burn((SELECT n FROM bench.knob WHERE k = '$2')) AS work
  FROM bench.days WHERE day >= '2026-01-01' AND day < '2026-01-31'"
}
if has_part statement; then
    log "one statement: the plans"
    # a function is PARALLEL UNSAFE unless marked: without this no plan that
    # calls it could be parallel.  It changes nothing for a serial plan.
    q -c "ALTER FUNCTION bench.burn(int) PARALLEL SAFE" -c "CREATE TABLE bench.cputimes (test text, rep int, seconds float8)" \
      -c "CREATE TABLE bench.checksums (test text, rep int, target text, checksum text)"
    stmt_settings="SET max_parallel_workers_per_gather = 2;"
    plan=$(q -c "$stmt_settings" -c "EXPLAIN (COSTS OFF) $(one_statement cpu_short short)")
    echo "EXPLAIN with max_parallel_workers_per_gather = 2 (default costs):" >&2
    echo "$plan" >&2
    if ! grep -q Gather <<<"$plan"; then
        stmt_settings="$stmt_settings SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;"
        plan=$(q -c "$stmt_settings" -c "EXPLAIN (COSTS OFF) $(one_statement cpu_short short)")
        echo "no parallel plan: again with parallel_setup_cost, parallel_tuple_cost and min_parallel_table_scan_size = 0 (kept for the timed statement):" >&2
        echo "$plan" >&2
        grep -q Gather <<<"$plan" || echo "still no parallel plan for the INSERT: the statement is timed with its serial plan" >&2
        # the SELECT alone (not timed): what parallel query would make of it
        echo "the SELECT alone, same settings (EXPLAIN ANALYZE, not timed):" >&2
        q -c "$stmt_settings" -c "EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF)
SELECT day, bench.burn((SELECT n FROM bench.knob WHERE k = 'short')) AS work
  FROM bench.days WHERE day >= '2026-01-01' AND day < '2026-01-31'" >&2
    fi
fi
has_part statement || REPS_STATEMENT=0
for rep in $(seq 1 "${REPS_STATEMENT:-$REPS}"); do
    log "one statement, repetition $rep"
    for size in short long; do
        if [ $((rep % 2)) -eq 1 ]; then order="one p2"; else order="p2 one"; fi
        for v in $order; do
            c0=$(cluster_cpu)
            t0=$(now)
            if [ "$v" = one ]; then
                q -c "$stmt_settings" -c "BEGIN" \
                  -c "DELETE FROM bench.cpu_$size WHERE day >= '2026-01-01' AND day < '2026-01-31'" \
                  -c "$(one_statement "cpu_$size" "$size")" -c "COMMIT" >/dev/null
            else
                refill "bench.cpu_$size" ", parallel => 2" | q >/dev/null
            fi
            t1=$(now)
            sleep 0.5 # for the postmaster to reap the session's backend
            c1=$(cluster_cpu)
            q -c "INSERT INTO bench.timings VALUES ('stmt_${size}_$v', $rep, $t1 - $t0)" \
              -c "INSERT INTO bench.cputimes VALUES ('stmt_${size}_$v', $rep, $c1 - $c0)" \
              -c "INSERT INTO bench.checksums
                  SELECT 'stmt_${size}_$v', $rep, 'cpu_$size',
                         count(*) || ' rows, sum ' || sum(work) || ', md5 '
                         || md5(string_agg(day::text || '=' || work, ',' ORDER BY day))
                    FROM bench.cpu_$size"
        done
    done
done

log "load of the machine at the end: $(uptime)"

if has_part rollup || has_part heap; then
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
fi
if has_part pool; then
q <<'SQL'
-- the pool (issue 30): medians of the wall time of 30 chunks, the chunks'
-- own time in the catalog, and the paired ratios beside the goals
SELECT r.target::text AS target,
       count(*) FILTER (WHERE c.executed_via = 'worker') AS chunks_by_workers,
       count(*) FILTER (WHERE c.executed_via <> 'worker') AS chunks_in_session,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM c.finished_at - c.started_at))
              FILTER (WHERE c.executed_via = 'worker'))::numeric, 3) AS median_chunk_s_worker,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM c.finished_at - c.started_at))
              FILTER (WHERE c.executed_via <> 'worker'))::numeric, 3) AS median_chunk_s_session
  FROM backfill.runs r JOIN backfill.chunks c USING (run_id)
 WHERE r.target::text LIKE 'bench.cpu_%' GROUP BY 1 ORDER BY 1;
WITH m AS (
  SELECT test, percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) AS s,
         min(seconds) AS lo, max(seconds) AS hi, count(*) AS reps
    FROM bench.timings WHERE test LIKE 'cpu_%' GROUP BY test)
SELECT test, reps, round(s::numeric, 2) AS median_s, round(lo::numeric, 2) AS min_s,
       round(hi::numeric, 2) AS max_s, round((s / 30)::numeric, 3) AS per_chunk_s
  FROM m ORDER BY test;
SELECT g.what, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY x.seconds / y.seconds)::numeric, 2) AS paired_median,
       round(min(x.seconds / y.seconds)::numeric, 2) AS min,
       round(max(x.seconds / y.seconds)::numeric, 2) AS max, g.goal
  FROM (VALUES (1, '0.2 s chunks: parallel 2 speed-up over 1', 'cpu_short_p1', 'cpu_short_p2', '>= 1.6'),
               (2, '0.5 s chunks: parallel 2 speed-up over 1', 'cpu_long_p1', 'cpu_long_p2', '>= 1.8'),
               (3, 'a chunk in a pool worker / in the session (time)', 'cpu_alone_p2', 'cpu_alone_p1', '<= 1.1'))
         AS g(o, what, a, b, goal)
  JOIN bench.timings x ON x.test = g.a
  JOIN bench.timings y ON y.test = g.b AND y.rep = x.rep
 GROUP BY g.o, g.what, g.goal ORDER BY g.o;
SQL
fi
if has_part statement; then
q <<'SQL'
-- beyond one statement (issue 30, item 4): the wall and CPU time of the
-- whole refill, the checksum of the target after each, and the paired ratio
-- one statement / backfill (> 1: backfill faster)
SELECT target, checksum, string_agg(test || '#' || rep, ' ' ORDER BY test, rep) AS after
  FROM bench.checksums GROUP BY target, checksum ORDER BY target, checksum;
SELECT target, count(DISTINCT checksum) AS distinct_checksums,
       CASE WHEN count(DISTINCT checksum) = 1 THEN 'identical' ELSE 'DIFFERENT' END AS result
  FROM bench.checksums GROUP BY target ORDER BY target;
SELECT t.test, count(*) AS reps,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY t.seconds))::numeric, 2) AS median_wall_s,
       round(min(t.seconds)::numeric, 2) AS min_wall_s, round(max(t.seconds)::numeric, 2) AS max_wall_s,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY c.seconds))::numeric, 2) AS median_cpu_s
  FROM bench.timings t JOIN bench.cputimes c USING (test, rep)
 WHERE t.test LIKE 'stmt_%' GROUP BY t.test ORDER BY t.test;
SELECT g.what,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY x.seconds / y.seconds))::numeric, 2) AS paired_median_wall,
       round(min(x.seconds / y.seconds)::numeric, 2) AS min, round(max(x.seconds / y.seconds)::numeric, 2) AS max,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY cx.seconds / cy.seconds))::numeric, 2) AS paired_median_cpu,
       '> 1' AS goal
  FROM (VALUES (1, '0.2 s chunks: one statement / backfill parallel 2', 'stmt_short_one', 'stmt_short_p2'),
               (2, '0.5 s chunks: one statement / backfill parallel 2', 'stmt_long_one', 'stmt_long_p2'))
         AS g(o, what, a, b)
  JOIN bench.timings x ON x.test = g.a
  JOIN bench.timings y ON y.test = g.b AND y.rep = x.rep
  JOIN bench.cputimes cx ON cx.test = g.a AND cx.rep = x.rep
  JOIN bench.cputimes cy ON cy.test = g.b AND cy.rep = x.rep
 GROUP BY g.o, g.what ORDER BY g.o;
SQL
fi
log "total $(printf '%.0f' "$(echo "$(now) - $started" | bc)") s"
