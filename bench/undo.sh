#!/usr/bin/env bash
# bench/undo.sh: the undo benchmark (issue 20).  One run prints one table of
# medians (of BENCH_REPS repetitions) and the four ratios the goals are
# stated in, all measured in the same run on the same data:
#   1. heap target, 30 daily chunks: backfill.run with keep_replaced vs
#      without (goal <= 1.3);
#   2. day-partitioned target, strategy swap: with keep_replaced (which
#      keeps the replaced leaves' files, doc/undo.md) vs without (goal <= 1.05);
#   3. the revert of the kept 30-day heap run vs that run (goal <= 1.2);
#   4. backfill.diff of the kept 30-day run vs a hand-written FULL JOIN on the
#      key of the same archived rows and the target (goal <= 2).
# Beside goal 1 it prints the same work written by hand, in the same run: 30
# transactions of DELETE + INSERT ... SELECT, and the same keeping the deleted
# rows with DELETE ... RETURNING into a table shaped like the archive (its run
# and chunk columns, its BRIN index).  Their ratio is what keeping costs any
# SQL on this machine, the floor goal 1 is measured against.  Every test's
# median WAL (MB, from the WAL insert position around it) is printed beside
# its time: keeping writes every replaced row a second time.
#
#   bash bench/undo.sh                                   (as root, like bench/run.sh)
#   BACKFILL_PGROOT=/opt/pgsand/NAME bash bench/undo.sh  (a developer sandbox)
#   BENCH_DAYS=30 BENCH_ROWS_PER_DAY=160000 BENCH_REPS=3  (the defaults: bench/run.sh's data)
#   BENCH_SMALL=1  30 days x 40,000 payments (a quarter of the data), for a
#                  check that finishes in about 5 minutes on a quiet machine
#                  with BENCH_REPS=3 (the figures are indicative only; the
#                  goals are stated on the standard data)
#
# As root it builds and installs the extension (scripts/setup.sh), then runs
# itself as the postgres user against a throwaway cluster of its own with
# default settings, removed at the end.  Never part of the test command.
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
    scripts/setup.sh >/dev/null
    cp -a . "$work/tree"
    chown -R postgres: "$work"
    chmod 755 "$work"
    status=0
    runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" \
        BENCH_DAYS="${BENCH_DAYS:-}" BENCH_ROWS_PER_DAY="${BENCH_ROWS_PER_DAY:-}" \
        BENCH_REPS="${BENCH_REPS:-}" BENCH_SMALL="${BENCH_SMALL:-}" \
        "$work/tree/bench/undo.sh" --inner || status=$?
    exit $status
fi

DAYS=${BENCH_DAYS:-30}
if [ -n "${BENCH_SMALL:-}" ]; then
    PER_DAY=${BENCH_ROWS_PER_DAY:-40000}
else
    PER_DAY=${BENCH_ROWS_PER_DAY:-160000}
fi
REPS=${BENCH_REPS:-3}
bindir=$("$PG_CONFIG" --bindir)

. bench/lib.sh
bench_cluster
# measure NAME REP PSQL-ARGUMENTS...: run psql with those arguments, and
# record its wall time and the WAL written meanwhile (MB)
measure() {
    local name=$1 rep=$2 t0 t1 lsn
    shift 2
    lsn=$(q -At -c "SELECT pg_current_wal_insert_lsn()")
    t0=$(now)
    q "$@" >/dev/null
    t1=$(now)
    q -c "INSERT INTO bench.timings
          SELECT '$name', $rep, $t1 - $t0,
                 pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$lsn') / 1e6"
}
# timed NAME REP SQL [SQL]: the statements in one session, each in its
# own transaction
timed() {
    local name=$1 rep=$2
    shift 2
    local args=()
    for s in "$@"; do args+=(-c "$s"); done
    measure "$name" "$rep" "${args[@]}"
}
# timed_file NAME REP FILE: the same for a script of statements
timed_file() { measure "$1" "$2" -f "$3"; }
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
LO="2024-01-01 00:00+00"
HI=$(q -At -c "SELECT ('2024-01-01 00:00+00'::timestamptz + $DAYS * interval '1 day')::text")

started=$(now)
log "loading $DAYS days x $PER_DAY payments, $REPS repetitions"
q >/dev/null <<SQL
CREATE EXTENSION backfill;
CREATE SCHEMA bench;
CREATE TABLE bench.timings (test text, rep int, seconds float8, wal_mb float8);
CREATE TABLE bench.payments (id bigint NOT NULL, paid_at timestamptz NOT NULL,
                             account_id int NOT NULL, amount numeric(12,2) NOT NULL,
                             status text NOT NULL);
INSERT INTO bench.payments
SELECT i, '2024-01-01'::timestamptz + (i * 86400.0 / $PER_DAY) * interval '1 second',
       (i % 50000)::int, ((i * 7919) % 100000) / 100.0,
       CASE WHEN i % 16 = 0 THEN 'failed' ELSE 'succeeded' END
  FROM generate_series(0::bigint, $DAYS::bigint * $PER_DAY - 1) i;
CREATE INDEX payments_paid_at ON bench.payments (paid_at);
CREATE TABLE bench.clean (id bigint NOT NULL, paid_at timestamptz NOT NULL,
                          account_id int NOT NULL, amount numeric(12,2) NOT NULL)
    WITH (autovacuum_enabled = off);
CREATE INDEX clean_paid_at ON bench.clean (paid_at);
CREATE TABLE bench.kept_by_hand (id bigint NOT NULL, paid_at timestamptz NOT NULL,
                                 account_id int NOT NULL, amount numeric(12,2) NOT NULL,
                                 _backfill_run int8 NOT NULL, _backfill_chunk int4 NOT NULL);
CREATE INDEX ON bench.kept_by_hand USING brin (_backfill_run, _backfill_chunk);
CREATE TABLE bench.clean_p (id bigint NOT NULL, paid_at timestamptz NOT NULL,
                            account_id int NOT NULL, amount numeric(12,2) NOT NULL)
    PARTITION BY RANGE (paid_at);
SELECT format('CREATE TABLE bench.clean_p_%s PARTITION OF bench.clean_p
                 FOR VALUES FROM (%L) TO (%L) WITH (autovacuum_enabled = off)',
              to_char(d, 'YYYYMMDD'), d, d + interval '1 day')
  FROM generate_series('2024-01-01'::timestamptz,
                       '2024-01-01'::timestamptz + ($DAYS - 1) * interval '1 day',
                       '1 day') d \gexec
CREATE INDEX clean_p_paid_at ON bench.clean_p (paid_at);
INSERT INTO bench.clean SELECT id, paid_at, account_id, amount FROM bench.payments
 WHERE status = 'succeeded';
INSERT INTO bench.clean_p SELECT * FROM bench.clean;
VACUUM ANALYZE bench.payments;
VACUUM ANALYZE bench.clean;
VACUUM ANALYZE bench.clean_p;
SELECT backfill.register('bench.clean', 'paid_at',
  'SELECT id, paid_at, account_id, amount FROM bench.payments
    WHERE paid_at >= \$1 AND paid_at < \$2 AND status = ''succeeded''',
  keep_replaced => true, key => '{id}');
SELECT backfill.register('bench.clean_p', 'paid_at',
  'SELECT id, paid_at, account_id, amount FROM bench.payments
    WHERE paid_at >= \$1 AND paid_at < \$2 AND status = ''succeeded''');
SELECT backfill.set_strategy('bench.clean_p', 'swap');
SQL

# plan_run TARGET KEEP: a 30-day run without probe, its id
plan_run() {
    q -At -c "SELECT backfill.plan('$1', '$LO', '$HI', probe => false, keep_replaced => $2)"
}
# the hand-written loops: one transaction per day, literal bounds, as
# performance.md's method 1; by_hand_keep.sql moves the deleted rows into
# bench.kept_by_hand in the same statement
: >"$dir/by_hand.sql"
: >"$dir/by_hand_keep.sql"
for d in $(seq 0 $((DAYS - 1))); do
    lo="'$LO'::timestamptz + $d * interval '1 day'"
    hi="'$LO'::timestamptz + $((d + 1)) * interval '1 day'"
    range="paid_at >= $lo AND paid_at < $hi"
    refill="INSERT INTO bench.clean SELECT id, paid_at, account_id, amount FROM bench.payments WHERE $range AND status = 'succeeded';"
    echo "BEGIN; DELETE FROM bench.clean WHERE $range; $refill COMMIT;" >>"$dir/by_hand.sql"
    echo "BEGIN; WITH d AS (DELETE FROM bench.clean WHERE $range RETURNING id, paid_at, account_id, amount) INSERT INTO bench.kept_by_hand SELECT d.*, 0, $((d + 1)) FROM d; $refill COMMIT;" >>"$dir/by_hand_keep.sql"
done

# purge: drop every kept row, so that the archive does not grow across reps
purge() {
    q -c "TRUNCATE bench.kept_by_hand"
    q -c "SELECT backfill.purge_archive(older_than => '0 seconds')" >/dev/null
    q -At -c "SELECT 'VACUUM ' || archive::text FROM backfill.archives" | while read -r s; do
        q -c "$s"
    done
}
settle() {
    q -c "VACUUM ANALYZE $1"
    q -c "CHECKPOINT"
}

# an untimed run of each kind first: nobody pays for being first
log "warm-up"
r=$(plan_run bench.clean true); q -c "CALL backfill.run($r)"
r=$(plan_run bench.clean_p true); q -c "CALL backfill.run($r)"
purge

for rep in $(seq 1 "$REPS"); do
    log "rep $rep: heap without and with keep_replaced"
    settle bench.clean
    r=$(plan_run bench.clean false)
    timed heap_nokeep "$rep" "CALL backfill.run($r)"
    settle bench.clean
    r=$(plan_run bench.clean true)
    timed heap_keep "$rep" "CALL backfill.run($r)"

    log "rep $rep: the same by hand, without and with keeping"
    settle bench.clean
    timed_file heap_by_hand "$rep" "$dir/by_hand.sql"
    settle bench.clean
    timed_file heap_by_hand_keep "$rep" "$dir/by_hand_keep.sql"

    log "rep $rep: its revert"
    settle bench.clean
    v=$(q -At -c "SELECT backfill.revert($r)")
    timed heap_revert "$rep" "CALL backfill.run($v)" "CALL backfill.run($v)"

    log "rep $rep: diff of a kept run vs a FULL JOIN by hand"
    settle bench.clean
    r=$(plan_run bench.clean true)
    q -c "CALL backfill.run($r)"
    arch=$(q -At -c "SELECT archive::text FROM backfill.archives WHERE target = 'bench.clean'::regclass")
    q -c "VACUUM ANALYZE $arch"
    # the run's new rows get their hint bits here, not from whichever of
    # the two reads comes first (that cost 1.5-2 s of about 8); and the two
    # take turns at going first
    settle bench.clean
    by_hand="
SELECT count(*)
  FROM (SELECT id, paid_at, account_id, amount FROM $arch
         WHERE _backfill_run = $r) o
  FULL JOIN (SELECT id, paid_at, account_id, amount FROM bench.clean
              WHERE paid_at >= '$LO' AND paid_at < '$HI') n ON o.id = n.id
 WHERE (o.id, o.paid_at, o.account_id, o.amount)
       IS DISTINCT FROM (n.id, n.paid_at, n.account_id, n.amount)"
    if [ $((rep % 2)) -eq 1 ]; then
        timed diff "$rep" "SELECT count(*) FROM backfill.diff($r)"
        timed diff_by_hand "$rep" "$by_hand"
    else
        timed diff_by_hand "$rep" "$by_hand"
        timed diff "$rep" "SELECT count(*) FROM backfill.diff($r)"
    fi

    log "rep $rep: partitioned (swap) without and with keep_replaced"
    settle bench.clean_p
    r=$(plan_run bench.clean_p false)
    timed part_nokeep "$rep" "CALL backfill.run($r)"
    settle bench.clean_p
    r=$(plan_run bench.clean_p true)
    timed part_keep "$rep" "CALL backfill.run($r)"
    purge
done

log "report"
q <<SQL
\pset footer off
SELECT test, count(*) AS reps, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds)::numeric, 2) AS median_s,
       round(min(seconds)::numeric, 2) AS min_s, round(max(seconds)::numeric, 2) AS max_s,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY wal_mb)::numeric) AS median_wal_mb
  FROM bench.timings GROUP BY test ORDER BY test;
WITH m AS (SELECT test, percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) AS s
             FROM bench.timings GROUP BY test)
SELECT goal, round(ratio::numeric, 2) AS ratio, bound,
       CASE WHEN ratio <= bound THEN 'met' ELSE 'NOT met' END AS verdict
  FROM (VALUES
    ('heap: keep_replaced / without', (SELECT s FROM m WHERE test = 'heap_keep') / (SELECT s FROM m WHERE test = 'heap_nokeep'), 1.3),
    ('partitioned swap: keep_replaced / without', (SELECT s FROM m WHERE test = 'part_keep') / (SELECT s FROM m WHERE test = 'part_nokeep'), 1.05),
    ('revert / the run it reverts', (SELECT s FROM m WHERE test = 'heap_revert') / (SELECT s FROM m WHERE test = 'heap_keep'), 1.2),
    ('diff / FULL JOIN by hand', (SELECT s FROM m WHERE test = 'diff') / (SELECT s FROM m WHERE test = 'diff_by_hand'), 2.0)
  ) g(goal, ratio, bound);
WITH m AS (SELECT test, percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) AS s
             FROM bench.timings GROUP BY test)
SELECT what, round(ratio::numeric, 2) AS ratio
  FROM (VALUES
    ('(floor) heap by hand: keeping / without', (SELECT s FROM m WHERE test = 'heap_by_hand_keep') / (SELECT s FROM m WHERE test = 'heap_by_hand')),
    ('heap without keeping: backfill.run / by hand', (SELECT s FROM m WHERE test = 'heap_nokeep') / (SELECT s FROM m WHERE test = 'heap_by_hand')),
    ('heap keeping: backfill.run / by hand', (SELECT s FROM m WHERE test = 'heap_keep') / (SELECT s FROM m WHERE test = 'heap_by_hand_keep'))
  ) f(what, ratio);
SQL
log "total $(echo "$(now) - $started" | bc) s"
