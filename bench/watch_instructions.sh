#!/usr/bin/env bash
# bench/watch_instructions.sh: what a watch costs a single-row INSERT
# transaction, counted in CPU instructions (issue 30, item 5).  Wall and CPU
# time of single-row transactions move by a fifth from one round to the next
# on a shared virtual machine (bench/RESULTS.md); the instructions a backend
# executes do not.  The same statements run in a single-user backend
# (postgres --single: every statement its own transaction, no client round
# trip) under valgrind's callgrind, N1 and then N2 of them; the difference
# divided by N2 - N1 is the cost of one transaction, without the backend's
# start and its first use of the library and the catalog.
#
#   plain        INSERT into an indexed table without trigger
#   floor.when   the same with one AFTER INSERT row trigger whose WHEN clause
#                (NEW.amount < 0) is never true: PostgreSQL's floor for a
#                trigger that costs one comparison per row
#   watched      the same table watched by a daily target (backfill.watch),
#                every row at the live edge (one comparison each)
#   watched.before   the same with the BEFORE INSERT statement trigger that
#                earlier builds installed (backfill_watch_before)
#   plain.days   plain again, with the built days' statements (a date
#                literal, cheaper to parse and plan than now()): the base
#                of the next two
#   built        rows into a day a backfill built: the first transaction
#                records the day, the others find it recorded (a log row
#                per transaction before the chunk was recorded once)
#   floor.log    a row trigger writing the row's day into an indexed table of
#                the log's shape: the least that keeping what the watch keeps
#                into built days costs
#
# It prints the instructions per transaction and their ratio to plain.  The
# goals of issue 30 (1.15 x at the live edge, 1.3 x into built days) are in
# wall time; instructions leave out the waits for the disk and the WAL
# writer, so their ratios are the upper end of the wall-time ones.
#
# BENCH_WALL_N=100000 times the same single-user runs instead (no valgrind):
# N transactions per case, the cases in turn, BENCH_WALL_REPS rounds
# (default 7), and prints each round's ratios to plain and their medians:
# the wall-time figure of the goals, without a client or a procedure's
# COMMIT around each transaction.
#
#   bash bench/watch_instructions.sh              (as root, like scripts/test.sh)
#   BENCH_N="500 1500" bash bench/watch_instructions.sh
#   BENCH_CASES="plain.days built" bash bench/watch_instructions.sh   (some cases;
#                a ratio needs its plain case first)
#   BENCH_KEEP=/tmp/cg bash bench/watch_instructions.sh   (keeps each run's
#                callgrind.TABLE.N there, for callgrind_annotate)
#   BENCH_WALL_N=100000 bash bench/watch_instructions.sh
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/lib.sh
bench_as_postgres bench/watch_instructions.sh "${1:-}" BENCH_N BENCH_WALL_N BENCH_WALL_REPS BENCH_CASES BENCH_KEEP

read -r N1 N2 <<<"${BENCH_N:-500 1500}"
bindir=$("$PG_CONFIG" --bindir)
[ -n "${BENCH_WALL_N:-}" ] || command -v valgrind >/dev/null ||
    { echo "bench/watch_instructions.sh needs valgrind" >&2; exit 1; }

bench_cluster "-c fsync=off"
q >/dev/null <<'SQL'
CREATE EXTENSION backfill;
CREATE SCHEMA wi;
CREATE FUNCTION wi.noop() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
CREATE TABLE wi.plain (paid_at timestamptz NOT NULL, amount int NOT NULL);
CREATE INDEX ON wi.plain (paid_at);
CREATE TABLE wi.floor_when (LIKE wi.plain INCLUDING INDEXES);
CREATE TRIGGER t AFTER INSERT ON wi.floor_when FOR EACH ROW WHEN (NEW.amount < 0)
    EXECUTE FUNCTION wi.noop();
CREATE TABLE wi.log (day timestamptz NOT NULL, at timestamptz NOT NULL);
CREATE INDEX ON wi.log (day);
CREATE FUNCTION wi.log_day() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN INSERT INTO wi.log VALUES (date_trunc('day', NEW.paid_at), now()); RETURN NULL; END$$;
CREATE TABLE wi.floor_log (LIKE wi.plain INCLUDING INDEXES);
CREATE TRIGGER t AFTER INSERT ON wi.floor_log FOR EACH ROW EXECUTE FUNCTION wi.log_day();
CREATE TABLE wi.watched (LIKE wi.plain INCLUDING INDEXES);
CREATE TABLE wi.watched_before (LIKE wi.plain INCLUDING INDEXES);
CREATE TABLE wi.built (LIKE wi.plain INCLUDING INDEXES);
CREATE TABLE wi.daily_w (day timestamptz NOT NULL, n int NOT NULL);
CREATE TABLE wi.daily_b (LIKE wi.daily_w);
CREATE TABLE wi.daily_x (LIKE wi.daily_w);
SELECT backfill.register('wi.daily_w', 'day', $$SELECT $1 AS day, count(*)::int AS n FROM wi.watched WHERE paid_at >= $1 AND paid_at < $2$$);
SELECT backfill.register('wi.daily_b', 'day', $$SELECT $1 AS day, count(*)::int AS n FROM wi.watched_before WHERE paid_at >= $1 AND paid_at < $2$$);
SELECT backfill.register('wi.daily_x', 'day', $$SELECT $1 AS day, count(*)::int AS n FROM wi.built WHERE paid_at >= $1 AND paid_at < $2$$);
SELECT backfill.watch('wi.daily_w', 'wi.watched', 'paid_at');
SELECT backfill.watch('wi.daily_b', 'wi.watched_before', 'paid_at');
SELECT backfill.watch('wi.daily_x', 'wi.built', 'paid_at');
DROP TRIGGER IF EXISTS backfill_watch_before ON wi.watched_before;
CREATE TRIGGER backfill_watch_before BEFORE INSERT ON wi.watched_before
    FOR EACH STATEMENT EXECUTE FUNCTION backfill._watch_trigger();
CALL backfill.backfill('wi.daily_w', '2025-01-01', '2025-01-03');
CALL backfill.backfill('wi.daily_b', '2025-01-01', '2025-01-03');
CALL backfill.backfill('wi.daily_x', '2025-01-01', '2025-03-01');
SQL
"$bindir/pg_ctl" -D "$dir/data" -m fast stop >/dev/null

if [ -n "${BENCH_WALL_N:-}" ]; then
    # statements NAME TABLE START N: the N single-row transactions into
    # wi.TABLE, in NAME's file
    statements() {
        {
            echo "SET client_min_messages = warning;"
            for ((i = 0; i < $4; i++)); do
                echo "INSERT INTO wi.$2 VALUES ($3 + $((i % 1440)) * interval '1 minute', 1);"
            done
        } >"$dir/in.$1.sql"
    }
    # seconds NAME: wall time of one single-user backend running them
    seconds() {
        local t0 t1
        t0=$(date +%s.%N)
        "$bindir/postgres" --single -D "$dir/data" -c fsync=off postgres \
            <"$dir/in.$1.sql" >/dev/null 2>&1
        t1=$(date +%s.%N)
        echo "$t1 - $t0" | bc -l
    }
    live="now() + interval '1 day'"
    days="'2025-01-02'::timestamptz"
    statements plain plain "$live" "$BENCH_WALL_N"
    statements watched watched "$live" "$BENCH_WALL_N"
    statements floor_when floor_when "$live" "$BENCH_WALL_N"
    statements plain_days plain "$days" "$BENCH_WALL_N"
    statements built built "$days" "$BENCH_WALL_N"
    statements floor_log floor_log "$days" "$BENCH_WALL_N"
    # ratios to the plain run of the same statements, in the same round
    printf '%-6s %9s %9s %11s %9s %9s %10s\n' round "plain s" watched floor.when "days s" built floor.log
    for ((r = 1; r <= ${BENCH_WALL_REPS:-7}; r++)); do
        p=$(seconds plain)
        w=$(echo "$(seconds watched) / $p" | bc -l)
        f=$(echo "$(seconds floor_when) / $p" | bc -l)
        d=$(seconds plain_days)
        b=$(echo "$(seconds built) / $d" | bc -l)
        l=$(echo "$(seconds floor_log) / $d" | bc -l)
        printf '%-6d %9.2f %9.3f %11.3f %9.2f %9.3f %10.3f\n' "$r" "$p" "$w" "$f" "$d" "$b" "$l"
        echo "$w" >>"$dir/ratios.watched"
        echo "$f" >>"$dir/ratios.floor_when"
        echo "$b" >>"$dir/ratios.built"
        echo "$l" >>"$dir/ratios.floor_log"
    done
    median() { sort -n "$dir/ratios.$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
    printf '%-6s %9s %9.3f %11.3f %9s %9.3f %10.3f\n' median "" "$(median watched)" \
        "$(median floor_when)" "" "$(median built)" "$(median floor_log)"
    exit 0
fi

# instructions TABLE START N: callgrind's total for N single-row
# transactions into wi.TABLE, one row a minute from START (now: the live
# edge; a date: built days, a day per 1,440 rows)
instructions() {
    local table=$1 start=$2 n=$3 out=$dir/callgrind.out
    {
        echo "SET client_min_messages = warning;"
        for ((i = 0; i < n; i++)); do
            echo "INSERT INTO wi.$table VALUES ($start + $((i % 1440)) * interval '1 minute', 1);"
        done
    } >"$dir/in.sql"
    valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$bindir/postgres" --single -D "$dir/data" -c fsync=off postgres \
        <"$dir/in.sql" >"$dir/single.log" 2>&1 ||
        { tail -n 20 "$dir/single.log" >&2; exit 1; }
    if grep -q "ERROR" "$dir/single.log"; then
        grep -m 3 "ERROR" "$dir/single.log" >&2
        exit 1
    fi
    awk '/^summary:/ { print $2 }' "$out"
    if [ -n "${BENCH_KEEP:-}" ]; then
        cp "$out" "$BENCH_KEEP/callgrind.$table.$n"
    fi
    rm -f "$out"
}

# Each case's ratio is to the plain table written by the same statements:
# plain (times from now(), the live edge's) for the first four, plain.days
# (a date literal, cheaper to parse and plan) for the built days' cases.
printf '%-16s %14s %8s\n' case "instr/tx" "x plain"
base=
for c in "plain|plain|now() + interval '1 day'" \
         "floor.when|floor_when|now() + interval '1 day'" \
         "watched|watched|now() + interval '1 day'" \
         "watched.before|watched_before|now() + interval '1 day'" \
         "plain.days|plain|'2025-01-02'::timestamptz" \
         "built|built|'2025-01-02'::timestamptz" \
         "floor.log|floor_log|'2025-01-02'::timestamptz"; do
    IFS='|' read -r name table start <<<"$c"
    case " ${BENCH_CASES:-$name} " in *" $name "*) ;; *) continue ;; esac
    a=$(instructions "$table" "$start" "$N1")
    b=$(instructions "$table" "$start" "$N2")
    per=$(( (b - a) / (N2 - N1) ))
    case $name in plain*) base=$per ;; esac
    printf '%-16s %14d %8.3f\n' "$name" "$per" "$(echo "$per / $base" | bc -l)"
done
