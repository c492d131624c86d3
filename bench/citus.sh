#!/usr/bin/env bash
# bench/citus.sh: backfill on Citus (issue 11, item 8).  A coordinator and
# two workers on this machine; a 30-day refill of a hash-distributed target
# co-located with its source, by backfill.run vs a hand-written procedure
# (DELETE + INSERT ... SELECT per day, COMMIT) on the same cluster, median
# of BENCH_REPS; the per-chunk overhead (empty 1-minute chunks); and
# parallel chunks (issue 19): the 30 daily chunks of the distributed target
# and of a co-located rollup at parallel => 1 and 2, alternated in each
# repetition (parallel => 2: background workers, each chunk a distributed
# transaction of its own, doc/parallel.md#citus).
#
#   bash bench/citus.sh                                   (as root)
#   BACKFILL_PGROOT=/opt/pgsand/NAME bash bench/citus.sh  (a developer sandbox)
#   BENCH_DAYS=30 BENCH_ROWS_PER_DAY=40000 BENCH_REPS=3 BENCH_EMPTY_CHUNKS=200
#
# Needs Citus installed in that PostgreSQL (bash scripts/citus.sh) and the
# extension built and installed (scripts/setup.sh, which root runs here).
# Never part of the test command.  A few minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${BACKFILL_PGROOT:-}" ]; then
    export PG_CONFIG=$BACKFILL_PGROOT/usr/lib/postgresql/15/bin/pg_config
else
    export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
fi

if [ "$(id -u)" -eq 0 ]; then
    scripts/setup.sh >/dev/null
    [ -f "$($PG_CONFIG --pkglibdir)/citus.so" ] ||
        { echo "bench/citus.sh: Citus is not installed; run bash scripts/citus.sh first" >&2; exit 1; }
    work=$(mktemp -d /tmp/backfill-citus-bench.XXXXXX)
    chown postgres: "$work"
    runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" BENCH_WORK="$work" \
        BENCH_DAYS="${BENCH_DAYS:-}" BENCH_ROWS_PER_DAY="${BENCH_ROWS_PER_DAY:-}" \
        BENCH_REPS="${BENCH_REPS:-}" BENCH_EMPTY_CHUNKS="${BENCH_EMPTY_CHUNKS:-}" \
        bash "$PWD/bench/citus.sh"
    status=$?
    rm -rf "$work"
    exit $status
fi

DAYS=${BENCH_DAYS:-30}
ROWS=${BENCH_ROWS_PER_DAY:-40000}
REPS=${BENCH_REPS:-3}
EMPTY=${BENCH_EMPTY_CHUNKS:-200}
work=${BENCH_WORK:-$(mktemp -d /tmp/backfill-citus-bench.XXXXXX)}
bin=$($PG_CONFIG --bindir)
base=$((20000 + RANDOM % 20000))

cleanup() {
    for i in 0 1 2; do
        "$bin/pg_ctl" -D "$work/n$i" stop -m immediate >/dev/null 2>&1 || true
    done
}
trap cleanup EXIT

for i in 0 1 2; do
    "$bin/initdb" -D "$work/n$i" -A trust -U postgres >/dev/null
    cat >>"$work/n$i/postgresql.conf" <<EOF
port = $((base + i))
listen_addresses = ''
unix_socket_directories = '$work'
shared_preload_libraries = 'citus,pg_cron'
cron.database_name = 'postgres'
max_worker_processes = 20
citus.shard_count = 8
TimeZone = 'UTC'
EOF
    "$bin/pg_ctl" -D "$work/n$i" -l "$work/n$i.log" -w start >/dev/null
done

psql_at() {
    local i=$1
    shift
    "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$work" -p $((base + i)) -U postgres -d postgres "$@"
}

for i in 0 1 2; do psql_at $i -c 'CREATE EXTENSION citus'; done
psql_at 0 -c "SELECT citus_set_coordinator_host('$work', $base)" \
    -c "SELECT citus_add_node('$work', $((base + 1)))" \
    -c "SELECT citus_add_node('$work', $((base + 2)))" >/dev/null
psql_at 0 <<EOF
CREATE EXTENSION backfill;
CREATE TABLE src (id bigint NOT NULL, account int NOT NULL, ts timestamptz NOT NULL, amount numeric NOT NULL);
SELECT create_distributed_table('src', 'account');
INSERT INTO src
SELECT g, g % 1000, '2026-01-01'::timestamptz + (g % ($DAYS * 86400)) * interval '1 second', g % 97
  FROM generate_series(1, $DAYS * $ROWS) g;
CREATE TABLE tgt (id bigint NOT NULL, account int NOT NULL, ts timestamptz NOT NULL, amount numeric NOT NULL);
SELECT create_distributed_table('tgt', 'account', colocate_with => 'src');
CREATE INDEX ON tgt (ts);
INSERT INTO tgt SELECT * FROM src;
VACUUM ANALYZE src, tgt;
SELECT backfill.register('tgt', 'ts', \$\$SELECT id, account, ts, amount FROM src WHERE ts >= \$1 AND ts < \$2\$\$);
-- a co-located rollup: per account and day
CREATE TABLE rollup (account int NOT NULL, day timestamptz NOT NULL, n bigint, total numeric);
SELECT create_distributed_table('rollup', 'account', colocate_with => 'src');
SELECT backfill.register('rollup', 'day', \$\$SELECT account, date_trunc('day', ts) AS day, count(*) AS n, sum(amount) AS total
  FROM src WHERE ts >= \$1 AND ts < \$2 GROUP BY 1, 2\$\$);

-- the by-hand loop: what a careful person writes without backfill
CREATE PROCEDURE by_hand(lo timestamptz, days int) LANGUAGE plpgsql AS \$p\$
DECLARE d timestamptz;
BEGIN
  FOR i IN 0 .. days - 1 LOOP
    d := lo + i * interval '1 day';
    DELETE FROM tgt WHERE ts >= d AND ts < d + interval '1 day';
    INSERT INTO tgt SELECT id, account, ts, amount FROM src
     WHERE ts >= d AND ts < d + interval '1 day';
    COMMIT;
  END LOOP;
END \$p\$;
EOF

# seconds of one psql call (the statement's own time, client included)
timed() {
    local t0 t1
    t0=$(date +%s.%N)
    psql_at 0 "$@" >/dev/null
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

end="'2026-01-01'::timestamptz + interval '$DAYS days'"
bf=()
hand=()
for r in $(seq 1 "$REPS"); do
    hand+=("$(timed -c "CALL by_hand('2026-01-01', $DAYS)")")
    run=$(psql_at 0 -At -c "SELECT backfill.plan('tgt', '2026-01-01', $end, probe => false)")
    bf+=("$(timed -c "SET client_min_messages = warning" -c "CALL backfill.run($run)")")
done
# parallel => 1 and 2, each target, one refill of the whole range per rep
declare -A par
par2_runs=0
for r in $(seq 1 "$REPS"); do
    for t in tgt rollup; do
        for p in 1 2; do
            run=$(psql_at 0 -At -c "SELECT backfill.plan('$t', '2026-01-01', $end, probe => false)")
            par[$t$p]+="$(timed -c "SET client_min_messages = warning" -c "CALL backfill.run($run, parallel => $p)") "
            [ "$p" -eq 2 ] && par2_runs="$par2_runs,$run"
        done
    done
done
bf_med=$(printf '%s\n' "${bf[@]}" | median)
hand_med=$(printf '%s\n' "${hand[@]}" | median)

check=$(psql_at 0 -At -c "SELECT (SELECT count(*) FROM tgt) = (SELECT count(*) FROM src)")

# per-chunk overhead: empty 1-minute chunks of the distributed target
run=$(psql_at 0 -At -c "SELECT backfill.plan('tgt', '2025-01-01', '2025-01-01'::timestamptz + interval '$EMPTY minutes', chunk => '1 minute', probe => false)")
empty=$(timed -c "SET client_min_messages = warning" -c "CALL backfill.run($run)")
# the same statements by hand, one transaction each, for the floor
psql_at 0 <<EOF
CREATE PROCEDURE by_hand_empty(lo timestamptz, n int) LANGUAGE plpgsql AS \$p\$
DECLARE d timestamptz;
BEGIN
  FOR i IN 0 .. n - 1 LOOP
    d := lo + i * interval '1 minute';
    DELETE FROM tgt WHERE ts >= d AND ts < d + interval '1 minute';
    INSERT INTO tgt SELECT id, account, ts, amount FROM src
     WHERE ts >= d AND ts < d + interval '1 minute';
    COMMIT;
  END LOOP;
END \$p\$;
EOF
empty_hand=$(timed -c "CALL by_hand_empty('2025-01-01', $EMPTY)")

printf '\nbackfill on Citus: coordinator + 2 workers, %s shards, %s days x %s rows, median of %s\n' \
    8 "$DAYS" "$ROWS" "$REPS"
printf '%-44s %10s\n' "what" "seconds"
printf '%-44s %10.2f   (%s)\n' "backfill.run, $DAYS daily chunks" "$bf_med" "${bf[*]}"
printf '%-44s %10.2f   (%s)\n' "by hand: DELETE + INSERT per day, COMMIT" "$hand_med" "${hand[*]}"
printf '%-44s %10.3f\n' "ratio backfill / by hand (goal <= 1.05)" "$(echo "$bf_med / $hand_med" | bc -l)"
printf '%-44s %10.2f ms\n' "per chunk, $EMPTY empty chunks: backfill" "$(echo "$empty * 1000 / $EMPTY" | bc -l)"
printf '%-44s %10.2f ms\n' "per chunk, $EMPTY empty chunks: by hand" "$(echo "$empty_hand * 1000 / $EMPTY" | bc -l)"
printf '%-44s %10s\n' "target rows = source rows afterwards" "$check"
for t in tgt rollup; do
    p1=$(printf '%s\n' ${par[${t}1]} | median)
    p2=$(printf '%s\n' ${par[${t}2]} | median)
    printf '%-44s %10.2f   (%s)\n' "$t, $DAYS chunks, parallel => 1" "$p1" "${par[${t}1]% }"
    printf '%-44s %10.2f   (%s)\n' "$t, $DAYS chunks, parallel => 2" "$p2" "${par[${t}2]% }"
    printf '%-44s %10.3f\n' "$t: parallel 2 vs 1 speed-up" "$(echo "$p1 / $p2" | bc -l)"
done
psql_at 0 -At -c "SELECT 'chunks of the parallel => 2 runs: ' || string_agg(via || ' ' || n, ', ') FROM (SELECT executed_via AS via, count(*) AS n FROM backfill.chunks WHERE run_id IN ($par2_runs) GROUP BY 1) v"
psql_at 0 -At -c "SELECT 'parallel => 2 runs whose chunks overlapped in time: ' || count(DISTINCT a.run_id) || ' of ' || (SELECT count(*) FROM backfill.runs WHERE run_id IN ($par2_runs)) FROM backfill.chunks a JOIN backfill.chunks b ON b.run_id = a.run_id AND b.chunk_no > a.chunk_no AND b.started_at < a.finished_at AND a.started_at < b.finished_at WHERE a.run_id IN ($par2_runs)"
psql_at 0 -At -c "SELECT 'rollup rows = expected: ' || ((SELECT count(*) FROM rollup) = (SELECT count(*) FROM (SELECT DISTINCT account, date_trunc('day', ts) FROM src) d))"
