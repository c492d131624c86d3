#!/usr/bin/env bash
# bench/run.sh: the backfill benchmark (issue 6).  One run prints one table of
# medians (of 3 repetitions) and the ratios the goals are stated in.
#
#   bash bench/run.sh                                   (as root, like scripts/test.sh)
#   BACKFILL_PG_VERSION=17 bash bench/run.sh            (PostgreSQL 16 or 17, as root)
#   BACKFILL_PGROOT=/opt/pgsand/NAME bash bench/run.sh  (a developer sandbox)
#   PG_CONFIG=/path/to/pg_config bash bench/run.sh      (any installation, backfill
#                                                        installed there already)
#   BENCH_DAYS=30 BENCH_ROWS_PER_DAY=160000 BENCH_REPS=3  (the defaults)
#
# The PostgreSQL is 15 (Debian's, or BACKFILL_PGROOT's) unless
# BACKFILL_PG_VERSION names 16 or 17: then, as root, scripts/pgbuild.sh builds
# it once (/opt/backfill-pg/<major>) and the bench installs backfill into a
# copy of that prefix of its own, removed at the end, as scripts/test.sh does.
# As root it builds and installs the extension (scripts/setup.sh), then runs
# itself as the postgres user against a throwaway cluster of its own with
# default settings (fsync on: commits cost what they cost), and removes the
# cluster at the end.  It is never part of the test command.  About 6-8
# minutes on 2 cores.
#
# What it measures (see bench/RESULTS.md for a run and doc/partitions.md):
#  1. heap row-level target, 30 daily chunks: backfill.run vs a hand-written
#     PL/pgSQL procedure (DELETE + INSERT ... SELECT per day, COMMIT) vs one
#     DELETE + one INSERT over the whole range; and, to show where the time
#     goes, the by-hand procedure with the figures over RETURNING rows and a
#     loop of replace_range calls;
#  2. the same three on the daily rollup;
#  3. day-partitioned row-level target: backfill.run with strategy auto
#     (which picks swap here) vs delete (and truncate, for the record), and
#     table + index size after 3 reruns without VACUUM;
#  4. per-chunk bookkeeping: 1,000 empty 1-minute chunks;
#  5. split_range of 1,000,000 chunks;
#     and what readers of the chunk's day and of another day experience
#     during one chunk of each strategy;
#  6. the daily job's wait in backfill.lock_target while a backfill runs;
#  7. reconcile of a 365-chunk run vs a GROUP BY scan (bench/reconcile.sql).
set -euo pipefail
cd "$(dirname "$0")/.."

pgversion=${BACKFILL_PG_VERSION:-15}
case $pgversion in
    15 | 16 | 17) ;;
    *) echo "run.sh: BACKFILL_PG_VERSION: unknown version '$pgversion' (15, 16 or 17)" >&2; exit 2 ;;
esac
if [ -n "${BACKFILL_PGROOT:-}" ]; then
    export PG_CONFIG=$BACKFILL_PGROOT/usr/lib/postgresql/15/bin/pg_config
else
    export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
fi

# ---- as root: build, install, then run the rest as postgres ----
if [ "$(id -u)" -eq 0 ] && [ "${1:-}" != "--inner" ]; then
    work=$(mktemp -d /tmp/backfill-bench.XXXXXX)
    trap 'rm -rf "$work"' EXIT
    if [ "$pgversion" = 15 ]; then
        scripts/setup.sh >/dev/null
        cp -a . "$work/tree"
    else
        BACKFILL_SETUP_PACKAGES_ONLY=1 scripts/setup.sh >/dev/null
        prefix=$(bash scripts/pgbuild.sh "$pgversion" | tail -n 1)
        cp -a "$prefix" "$work/pg"
        export PG_CONFIG=$work/pg/bin/pg_config
        cp -a . "$work/tree"
        make -s -C "$work/tree" clean PG_CONFIG="$PG_CONFIG"
        make -s -C "$work/tree" PG_CONFIG="$PG_CONFIG" >/dev/null
        make -s -C "$work/tree" install PG_CONFIG="$PG_CONFIG" >/dev/null
    fi
    chown -R postgres: "$work"
    chmod 755 "$work"
    status=0
    runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" \
        BENCH_DAYS="${BENCH_DAYS:-}" BENCH_ROWS_PER_DAY="${BENCH_ROWS_PER_DAY:-}" \
        BENCH_REPS="${BENCH_REPS:-}" \
        "$work/tree/bench/run.sh" --inner || status=$?
    rm -rf "$work"
    exit $status
fi

DAYS=${BENCH_DAYS:-30}
PER_DAY=${BENCH_ROWS_PER_DAY:-160000}   # 15/16 succeed: 150,000 target rows a day
REPS=${BENCH_REPS:-3}
bindir=$("$PG_CONFIG" --bindir)

# ---- a throwaway cluster with default settings ----
. bench/lib.sh
bench_cluster
# timed NAME REP SQL: run SQL in its own session, record the wall time
timed() {
    local t0 t1
    t0=$(now)
    q -c "$3" >/dev/null
    t1=$(now)
    q -c "INSERT INTO bench.timings VALUES ('$1', $2, $t1 - $t0)"
}
# settle TABLE [vacuum]: CHECKPOINT (and VACUUM ANALYZE) before a timed run
settle() {
    if [ "${2:-}" = vacuum ]; then
        q -c "VACUUM ANALYZE $1"
    fi
    q -c "CHECKPOINT"
}
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

started=$(now)
log "loading $DAYS days x $PER_DAY payments"
q >/dev/null <<SQL
CREATE EXTENSION backfill;
CREATE SCHEMA bench;
CREATE TABLE bench.timings (test text, rep int, seconds float8);
CREATE TABLE bench.sizes (what text, bytes bigint);
CREATE TABLE bench.waits (rep int, seconds float8);

CREATE TABLE bench.payments (id bigint NOT NULL, paid_at timestamptz NOT NULL,
                             account_id int NOT NULL, amount numeric(12,2) NOT NULL,
                             status text NOT NULL);
INSERT INTO bench.payments
SELECT i, '2024-01-01'::timestamptz + (i * 86400.0 / $PER_DAY) * interval '1 second',
       (i % 50000)::int, ((i * 7919) % 100000) / 100.0,
       CASE WHEN i % 16 = 0 THEN 'failed' ELSE 'succeeded' END
  FROM generate_series(0::bigint, $DAYS::bigint * $PER_DAY - 1) i;
CREATE INDEX payments_paid_at ON bench.payments (paid_at);

-- the row-level target, heap and day-partitioned
CREATE TABLE bench.clean (id bigint NOT NULL, paid_at timestamptz NOT NULL,
                          account_id int NOT NULL, amount numeric(12,2) NOT NULL)
    WITH (autovacuum_enabled = off);
CREATE INDEX clean_paid_at ON bench.clean (paid_at);
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
-- the daily rollup
CREATE TABLE bench.daily (day date PRIMARY KEY, payments bigint NOT NULL,
                          revenue numeric NOT NULL);
-- an empty target for the bookkeeping test
CREATE TABLE bench.empty_t (LIKE bench.clean);

INSERT INTO bench.clean SELECT id, paid_at, account_id, amount FROM bench.payments
 WHERE status = 'succeeded';
INSERT INTO bench.clean_p SELECT * FROM bench.clean;
INSERT INTO bench.daily SELECT paid_at::date, count(*), sum(amount) FROM bench.payments
 WHERE status = 'succeeded' GROUP BY 1;
VACUUM ANALYZE bench.payments;
VACUUM ANALYZE bench.clean;
VACUUM ANALYZE bench.clean_p;
VACUUM ANALYZE bench.daily;

SELECT backfill.register('bench.clean', 'paid_at',
  'SELECT id, paid_at, account_id, amount FROM bench.payments
    WHERE paid_at >= \$1 AND paid_at < \$2 AND status = ''succeeded''');
SELECT backfill.register('bench.clean_p', 'paid_at',
  'SELECT id, paid_at, account_id, amount FROM bench.payments
    WHERE paid_at >= \$1 AND paid_at < \$2 AND status = ''succeeded''');
SELECT backfill.register('bench.daily', 'day',
  'SELECT paid_at::date AS day, count(*) AS payments, sum(amount) AS revenue
     FROM bench.payments
    WHERE paid_at >= \$1 AND paid_at < \$2 AND status = ''succeeded'' GROUP BY 1',
  measure => 'sum(payments)');
SELECT backfill.register('bench.empty_t', 'paid_at',
  'SELECT id, paid_at, account_id, amount FROM bench.payments
    WHERE paid_at >= \$1 AND paid_at < \$2 AND status = ''succeeded''');

-- the hand-written baseline: DELETE + INSERT ... SELECT per day, COMMIT
CREATE PROCEDURE bench.by_hand(lo timestamptz, hi timestamptz)
LANGUAGE plpgsql AS \$\$
DECLARE d timestamptz := lo;
BEGIN
  WHILE d < hi LOOP
    DELETE FROM bench.clean WHERE paid_at >= d AND paid_at < d + interval '1 day';
    INSERT INTO bench.clean
    SELECT id, paid_at, account_id, amount FROM bench.payments
     WHERE paid_at >= d AND paid_at < d + interval '1 day' AND status = 'succeeded';
    COMMIT;
    d := d + interval '1 day';
  END LOOP;
END \$\$;
-- the same by hand, with the run's bookkeeping of the figures: count and
-- measure over DELETE/INSERT ... RETURNING rows (what ReplaceRange does)
CREATE PROCEDURE bench.by_hand_returning(lo timestamptz, hi timestamptz)
LANGUAGE plpgsql AS \$\$
DECLARE d timestamptz := lo; n bigint; m numeric;
BEGIN
  WHILE d < hi LOOP
    WITH x AS (DELETE FROM bench.clean WHERE paid_at >= d AND paid_at < d + interval '1 day'
               RETURNING *)
    SELECT count(*), count(*)::numeric INTO n, m FROM x;
    WITH x AS (INSERT INTO bench.clean
               SELECT id, paid_at, account_id, amount FROM bench.payments
                WHERE paid_at >= d AND paid_at < d + interval '1 day' AND status = 'succeeded'
               RETURNING *)
    SELECT count(*), count(*)::numeric INTO n, m FROM x;
    COMMIT;
    d := d + interval '1 day';
  END LOOP;
END \$\$;
-- replace_range per day (no measure, no catalog), COMMIT
CREATE PROCEDURE bench.by_replace_range(lo timestamptz, hi timestamptz)
LANGUAGE plpgsql AS \$\$
DECLARE d timestamptz := lo;
BEGIN
  WHILE d < hi LOOP
    PERFORM * FROM backfill.replace_range('bench.clean', 'paid_at', d, d + interval '1 day',
      'SELECT id, paid_at, account_id, amount FROM bench.payments
        WHERE paid_at >= \$1 AND paid_at < \$2 AND status = ''succeeded''', 'delete');
    COMMIT;
    d := d + interval '1 day';
  END LOOP;
END \$\$;
CREATE PROCEDURE bench.by_hand_daily(lo timestamptz, hi timestamptz)
LANGUAGE plpgsql AS \$\$
DECLARE d timestamptz := lo;
BEGIN
  WHILE d < hi LOOP
    DELETE FROM bench.daily WHERE day >= d::date AND day < (d + interval '1 day')::date;
    INSERT INTO bench.daily
    SELECT paid_at::date, count(*), sum(amount) FROM bench.payments
     WHERE paid_at >= d AND paid_at < d + interval '1 day' AND status = 'succeeded'
     GROUP BY 1;
    COMMIT;
    d := d + interval '1 day';
  END LOOP;
END \$\$;
-- a reader of one day of the partitioned target: one query, commit, pause;
-- the bounds are literals, so the query is pruned to that day's partition
CREATE TABLE bench.reads (strategy text, reader text, at timestamptz, seconds float8);
CREATE PROCEDURE bench.reader(strategy text, reader text, lo timestamptz, secs float8)
LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; stop timestamptz := clock_timestamp() + secs * interval '1 second';
BEGIN
  WHILE clock_timestamp() < stop LOOP
    t0 := clock_timestamp();
    EXECUTE format('SELECT count(*) FROM bench.clean_p WHERE paid_at >= %L AND paid_at < %L',
                   lo, lo + interval '1 day');
    INSERT INTO bench.reads VALUES (strategy, reader, t0, extract(epoch FROM clock_timestamp() - t0));
    COMMIT;
    PERFORM pg_sleep(0.005);
  END LOOP;
END \$\$;
-- the daily job: take the target's lock, write today's row, commit
CREATE PROCEDURE bench.daily_job(n int, pause float8)
LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz;
BEGIN
  FOR i IN 1..n LOOP
    t0 := clock_timestamp();
    PERFORM backfill.lock_target('bench.clean');
    INSERT INTO bench.clean VALUES (-i, '2024-03-01', 0, 0);
    INSERT INTO bench.waits VALUES (i, extract(epoch FROM clock_timestamp() - t0));
    COMMIT;
    PERFORM pg_sleep(pause);
  END LOOP;
END \$\$;
SQL
LO=2024-01-01
HI=$(q -At -c "SELECT ('2024-01-01'::date + $DAYS)::text")
SAME_DAY=$(q -At -c "SELECT ('2024-01-01'::date + $DAYS / 3)::text")
NEXT_DAY=$(q -At -c "SELECT ('2024-01-01'::date + $DAYS / 3 + 1)::text")
OTHER_DAY=$(q -At -c "SELECT ('2024-01-01'::date + 2 * $DAYS / 3)::text")
# the plan is made outside the timing; only the CALL is timed
run_timed() { # run_timed NAME REP TARGET
    local r t0 t1
    r=$(q -At -c "SELECT backfill.plan('$3', '$LO', '$HI', probe => false)")
    t0=$(now)
    q -c "CALL backfill.run($r)" >/dev/null
    t1=$(now)
    q -c "INSERT INTO bench.timings VALUES ('$1', $2, $t1 - $t0)"
    q -At -c "SELECT count(*) FILTER (WHERE status <> 'done') FROM backfill.chunks WHERE run_id = $r" |
        grep -qx 0 || { echo "run $r of $3 did not finish"; exit 1; }
}

# ---- 1. heap row-level target ----
log "heap target: backfill.run / by hand / one statement"
# a first, untimed round: the freshly loaded table has no free space, so the
# first refill extends the files and would be slower for whichever ran first
settle bench.clean vacuum
q -c "CALL bench.by_hand('$LO', '$HI')"
for rep in $(seq "$REPS"); do
    settle bench.clean vacuum
    run_timed heap.run "$rep" bench.clean
    settle bench.clean vacuum
    timed heap.by_hand "$rep" "CALL bench.by_hand('$LO', '$HI')"
    settle bench.clean vacuum
    timed heap.by_hand_returning "$rep" "CALL bench.by_hand_returning('$LO', '$HI')"
    settle bench.clean vacuum
    timed heap.by_replace_range "$rep" "CALL bench.by_replace_range('$LO', '$HI')"
    settle bench.clean vacuum
    timed heap.one_statement "$rep" "BEGIN;
      DELETE FROM bench.clean WHERE paid_at >= '$LO' AND paid_at < '$HI';
      INSERT INTO bench.clean SELECT id, paid_at, account_id, amount FROM bench.payments
       WHERE paid_at >= '$LO' AND paid_at < '$HI' AND status = 'succeeded';
      COMMIT;"
done

# ---- 2. the daily rollup ----
log "rollup: backfill.run / by hand / one statement"
settle bench.daily vacuum
q -c "CALL bench.by_hand_daily('$LO', '$HI')"
for rep in $(seq "$REPS"); do
    settle bench.daily vacuum
    run_timed roll.run "$rep" bench.daily
    settle bench.daily vacuum
    timed roll.by_hand "$rep" "CALL bench.by_hand_daily('$LO', '$HI')"
    settle bench.daily vacuum
    timed roll.one_statement "$rep" "BEGIN;
      DELETE FROM bench.daily WHERE day >= '$LO' AND day < '$HI';
      INSERT INTO bench.daily SELECT paid_at::date, count(*), sum(amount) FROM bench.payments
       WHERE paid_at >= '$LO' AND paid_at < '$HI' AND status = 'succeeded' GROUP BY 1;
      COMMIT;"
done

# ---- 3. day-partitioned target: auto vs delete (and swap) ----
SIZE="SELECT sum(pg_table_size(c.oid) + pg_indexes_size(c.oid)) FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'bench.clean_p'::regclass"
q -c "INSERT INTO bench.sizes SELECT 'part.fresh', ($SIZE)"
log "partitioned target: auto, $REPS reruns without VACUUM"
q -c "UPDATE backfill.targets SET strategy = 'auto' WHERE target = 'bench.clean_p'::regclass"
for rep in $(seq "$REPS"); do
    settle bench.clean_p
    run_timed part.auto "$rep" bench.clean_p
done
q -c "INSERT INTO bench.sizes SELECT 'part.auto_after_reruns', ($SIZE)"
q -c "INSERT INTO bench.sizes SELECT 'part.strategy_auto_used:' || string_agg(DISTINCT strategy, ','), 0
        FROM backfill.chunks c JOIN backfill.runs r USING (run_id)
       WHERE r.target = 'bench.clean_p'::regclass"
log "partitioned target: delete (VACUUM before each run)"
q -c "UPDATE backfill.targets SET strategy = 'delete' WHERE target = 'bench.clean_p'::regclass"
# untimed first round: after the swaps the partitions are compact (no free
# space), which would make delete's first timed round slower than the rest
settle bench.clean_p vacuum
run_timed warmup.part_delete 1 bench.clean_p
for rep in $(seq "$REPS"); do
    settle bench.clean_p vacuum
    run_timed part.delete "$rep" bench.clean_p
done
q -c "INSERT INTO bench.sizes SELECT 'part.delete_after_reruns_vacuumed', ($SIZE)"
log "partitioned target: truncate (what auto would use if swap were ruled out)"
q -c "UPDATE backfill.targets SET strategy = 'truncate' WHERE target = 'bench.clean_p'::regclass"
for rep in $(seq "$REPS"); do
    settle bench.clean_p
    run_timed part.truncate "$rep" bench.clean_p
done
q -c "INSERT INTO bench.sizes SELECT 'part.truncate_after_reruns', ($SIZE)"
q -c "UPDATE backfill.targets SET strategy = 'auto' WHERE target = 'bench.clean_p'::regclass"

# ---- 3b. what readers of the partitioned target experience ----
# Two readers loop for 4 s: one on the chunk's day, one on another day.  After
# 1.5 s one chunk (one day) is replaced with each strategy; the chunk's own
# time and the readers' latencies are recorded.
log "partitioned target: readers during one chunk per strategy"
for strategy in delete truncate swap; do
    settle bench.clean_p vacuum
    q -c "CALL bench.reader('$strategy', 'same day', '$SAME_DAY', 4)" &
    r1=$!
    q -c "CALL bench.reader('$strategy', 'other day', '$OTHER_DAY', 4)" &
    r2=$!
    sleep 1.5
    timed "readers.chunk_$strategy" 1 "SELECT * FROM backfill.replace_range('bench.clean_p', 'paid_at',
        '$SAME_DAY', '$NEXT_DAY',
        'SELECT id, paid_at, account_id, amount FROM bench.payments
          WHERE paid_at >= \$1 AND paid_at < \$2 AND status = ''succeeded''', '$strategy')"
    wait $r1 $r2
done

# ---- 4. per-chunk bookkeeping: 1,000 empty chunks ----
log "bookkeeping: 1,000 empty 1-minute chunks"
for rep in $(seq "$REPS"); do
    r=$(q -At -c "SELECT backfill.plan('bench.empty_t', '2030-0$rep-01', '2030-0$rep-01'::timestamptz + interval '1000 minutes', '1 minute', probe => false)")
    settle bench.empty_t
    timed empty.1000_chunks "$rep" "CALL backfill.run($r)"
done

# ---- 4b. cancel of a freshly planned 50,000-chunk run (no ANALYZE) ----
log "cancel: a freshly planned run of 50,000 chunks, no ANALYZE"
for rep in $(seq "$REPS"); do
    r=$(q -At -c "SELECT backfill.plan('bench.empty_t', '2031-0$rep-01', '2031-0$rep-01'::timestamptz + interval '50000 minutes', '1 minute', probe => false)")
    q -c "CHECKPOINT"
    timed cancel.50k_chunks "$rep" "SELECT backfill.cancel($r)"
done

# ---- 5. split_range of 1,000,000 chunks ----
log "split_range: 1,000,000 chunks"
for rep in $(seq "$REPS"); do
    q -c "SET backfill.max_chunks = 2000000;
      DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); n bigint;
      BEGIN
        SELECT count(*) INTO n FROM backfill.split_range('2024-01-01',
            '2024-01-01'::timestamptz + 1000000 * interval '1 minute', '1 minute');
        IF n <> 1000000 THEN RAISE 'split_range gave % chunks', n; END IF;
        INSERT INTO bench.timings VALUES ('split_range.1M', $rep,
            extract(epoch FROM clock_timestamp() - t0));
      END \$\$;"
done

# ---- 6. the daily job behind a running backfill ----
log "daily job: lock_target while backfill.run refills the heap target"
LOCK_TIMEOUT=$(q -At -c "LOAD 'backfill'" -c "SELECT setting FROM pg_settings WHERE name = 'backfill.lock_timeout'")
q -c "INSERT INTO bench.sizes VALUES ('lock_timeout_ms', $LOCK_TIMEOUT)"
r=$(q -At -c "SELECT backfill.plan('bench.clean', '$LO', '$HI', probe => false)")
settle bench.clean vacuum
q -c "CALL backfill.run($r)" >/dev/null &
bg=$!
sleep 1
q -c "CALL bench.daily_job(20, 0.3)"
wait $bg
q -c "INSERT INTO bench.sizes SELECT 'daily.run_deferrals', coalesce(sum(deferrals), 0)
        FROM backfill.chunks WHERE run_id = $r"
q -c "INSERT INTO bench.timings SELECT 'daily.chunk_seconds', chunk_no,
             extract(epoch FROM finished_at - started_at)
        FROM backfill.chunks WHERE run_id = $r"

# ---- 7. reconcile (bench/reconcile.sql, when present) ----
RECONCILE_OUT=
if [ -f bench/reconcile.sql ]; then
    log "reconcile: bench/reconcile.sql with rows_per_day=5000"
    RECONCILE_OUT=$(q -v rows_per_day=5000 -f bench/reconcile.sql 2>&1 | tail -n 12) || true
fi

total=$(awk "BEGIN { printf \"%.0f\", $(now) - $started }")

# ---- the report ----
echo
echo "backfill benchmark: $DAYS days x $PER_DAY payments ($((DAYS * PER_DAY * 15 / 16)) target rows), medians of $REPS"
echo "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(. /etc/os-release; echo "$PRETTY_NAME"), $("$bindir/postgres" --version), load average before the report: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "backfill.lock_timeout = $LOCK_TIMEOUT ms; total bench time ${total} s"
echo
q -P footer=off <<'SQL'
\pset format aligned
WITH med AS (
  SELECT test, percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) AS s
    FROM bench.timings GROUP BY test),
m AS (SELECT * FROM med),
size AS (SELECT what, bytes FROM bench.sizes),
ratios (ord, what, value, goal, met) AS (
  SELECT 1.0, 'heap: backfill.run / by-hand PL/pgSQL (30 daily chunks)',
         (SELECT s FROM m WHERE test = 'heap.run') / (SELECT s FROM m WHERE test = 'heap.by_hand'),
         '<= 1.05', NULL::bool
  UNION ALL
  SELECT 2, 'heap: backfill.run / one statement (no-chunking floor)',
         (SELECT s FROM m WHERE test = 'heap.run') / (SELECT s FROM m WHERE test = 'heap.one_statement'),
         '(info)', NULL
  UNION ALL
  SELECT 2.1, 'heap, why: by hand with figures over RETURNING rows / by hand',
         (SELECT s FROM m WHERE test = 'heap.by_hand_returning') / (SELECT s FROM m WHERE test = 'heap.by_hand'),
         '(info)', NULL
  UNION ALL
  SELECT 2.2, 'heap, why: replace_range per day (no measure) / by hand',
         (SELECT s FROM m WHERE test = 'heap.by_replace_range') / (SELECT s FROM m WHERE test = 'heap.by_hand'),
         '(info)', NULL
  UNION ALL
  SELECT 2.3, 'heap, why: backfill.run / by hand with figures over RETURNING rows',
         (SELECT s FROM m WHERE test = 'heap.run') / (SELECT s FROM m WHERE test = 'heap.by_hand_returning'),
         '(info)', NULL
  UNION ALL
  SELECT 3, 'rollup: backfill.run / by-hand PL/pgSQL',
         (SELECT s FROM m WHERE test = 'roll.run') / (SELECT s FROM m WHERE test = 'roll.by_hand'),
         '<= 1.05', NULL
  UNION ALL
  SELECT 4, 'rollup: backfill.run / one statement',
         (SELECT s FROM m WHERE test = 'roll.run') / (SELECT s FROM m WHERE test = 'roll.one_statement'),
         '(info)', NULL
  UNION ALL
  SELECT 5, 'partitioned: speed-up of auto over delete (delete / auto)',
         (SELECT s FROM m WHERE test = 'part.delete') / (SELECT s FROM m WHERE test = 'part.auto'),
         '>= 1.25', NULL
  UNION ALL
  SELECT 6, 'partitioned: speed-up of truncate over delete (delete / truncate)',
         (SELECT s FROM m WHERE test = 'part.delete') / (SELECT s FROM m WHERE test = 'part.truncate'),
         '(info)', NULL
  UNION ALL
  SELECT 7, 'partitioned: size after 3 auto reruns, no VACUUM / fresh',
         (SELECT bytes FROM size WHERE what = 'part.auto_after_reruns')::float8
           / (SELECT bytes FROM size WHERE what = 'part.fresh'),
         '<= 1.05', NULL
  UNION ALL
  SELECT 8, 'partitioned: size after 3 delete reruns, VACUUM between / fresh',
         (SELECT bytes FROM size WHERE what = 'part.delete_after_reruns_vacuumed')::float8
           / (SELECT bytes FROM size WHERE what = 'part.fresh'),
         '(info)', NULL
  UNION ALL
  SELECT 9, 'bookkeeping: ms per empty chunk (1,000 chunks)',
         (SELECT s FROM m WHERE test = 'empty.1000_chunks'),
         '<= 2', NULL
  UNION ALL
  SELECT 9.5, 'cancel: seconds for a fresh 50,000-chunk run (no ANALYZE)',
         (SELECT s FROM m WHERE test = 'cancel.50k_chunks'),
         '(info)', NULL
  UNION ALL
  SELECT 10, 'split_range: seconds for 1,000,000 chunks',
         (SELECT s FROM m WHERE test = 'split_range.1M'),
         '< 1', NULL
  UNION ALL
  SELECT 11, 'daily job: longest wait in lock_target (s)',
         (SELECT max(seconds) FROM bench.waits),
         '<= lock_timeout', NULL
  UNION ALL
  SELECT 12, 'daily job: median wait in lock_target (s)',
         (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) FROM bench.waits),
         '(info)', NULL
  UNION ALL
  SELECT 13, 'daily job: longest chunk of the backfill it waited behind (s)',
         (SELECT max(seconds) FROM bench.timings WHERE test = 'daily.chunk_seconds'),
         '(info)', NULL
  UNION ALL
  SELECT 14, 'daily job: chunks deferred by the daily job',
         (SELECT bytes FROM size WHERE what = 'daily.run_deferrals'),
         '(info)', NULL)
SELECT what AS "ratio / figure",
       round(value::numeric, 3) AS value,
       goal,
       CASE goal
         WHEN '<= 1.05' THEN CASE WHEN value <= 1.05 THEN 'met' ELSE 'MISSED' END
         WHEN '>= 1.25' THEN CASE WHEN value >= 1.25 THEN 'met' ELSE 'MISSED' END
         WHEN '<= 2' THEN CASE WHEN value <= 2 THEN 'met' ELSE 'MISSED' END
         WHEN '< 1' THEN CASE WHEN value < 1 THEN 'met' ELSE 'MISSED' END
         WHEN '<= lock_timeout' THEN
           CASE WHEN value * 1000 <= (SELECT bytes FROM bench.sizes WHERE what = 'lock_timeout_ms')
                THEN 'met' ELSE 'MISSED' END
         ELSE '' END AS verdict
  FROM ratios ORDER BY ord;

SELECT test, count(*) AS reps,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds)::numeric, 3) AS median_s,
       round(min(seconds)::numeric, 3) AS min_s, round(max(seconds)::numeric, 3) AS max_s
  FROM bench.timings WHERE test <> 'daily.chunk_seconds' AND test NOT LIKE 'readers.%'
   AND test NOT LIKE 'warmup.%'
 GROUP BY test ORDER BY test;

SELECT strategy, reader, count(*) AS reads,
       round((1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds))::numeric, 1) AS median_ms,
       round((1000 * max(seconds))::numeric, 1) AS max_ms,
       round((1000 * (SELECT seconds FROM bench.timings t WHERE t.test = 'readers.chunk_' || r.strategy))::numeric, 1) AS chunk_ms
  FROM bench.reads r GROUP BY strategy, reader
 ORDER BY array_position(ARRAY['delete', 'truncate', 'swap'], strategy), reader;

SELECT what, pg_size_pretty(bytes) AS size FROM bench.sizes
 WHERE what LIKE 'part.%' AND bytes > 0 ORDER BY what;
SELECT what AS strategies_recorded FROM bench.sizes WHERE what LIKE 'part.strategy%';
SQL
if [ -n "$RECONCILE_OUT" ]; then
    echo
    echo "reconcile (bench/reconcile.sql, 365 daily chunks x 5000 rows; its last lines):"
    echo "$RECONCILE_OUT"
else
    echo
    echo "reconcile: not measured (bench/reconcile.sql is not in this tree)"
fi
