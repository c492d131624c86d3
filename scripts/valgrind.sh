#!/usr/bin/env bash
# Run the pg_regress suite against a PostgreSQL server started under
# valgrind memcheck, then report every valgrind error whose stack passes
# through backfill's code.  Exits non-zero if there is any.
#
#   bash scripts/valgrind.sh                      # all sql/*.sql tests
#   BACKFILL_TESTS="00_install 10_range" bash scripts/valgrind.sh
#   BACKFILL_PGROOT=/opt/pgsand/NAME bash scripts/valgrind.sh
#   BACKFILL_VALGRIND_KEEP=1 ...                  # keep the logs directory
#
# It builds and installs the extension like scripts/test.sh (as root it
# works on a copy owned by postgres, since PostgreSQL refuses to run as
# root).  It is slow: expect several minutes for the whole suite.
# PostgreSQL's own src/tools/valgrind.supp is not shipped by Debian; the
# suppressions PostgreSQL itself needs here are in scripts/valgrind.supp.
# Test failures (diffs, often timing-related under valgrind) are printed
# but do not decide the exit status; valgrind errors in backfill do.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${BACKFILL_PGROOT:-}" ]; then
    export PG_CONFIG=$BACKFILL_PGROOT/usr/lib/postgresql/15/bin/pg_config
else
    export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
fi
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)"; exit 2; }

if [ -z "${BACKFILL_VALGRIND_INNER:-}" ]; then
    scripts/setup.sh >/dev/null
fi
if [ "$(id -u)" -eq 0 ]; then
    work=$(mktemp -d /tmp/backfill-valgrind.XXXXXX)
    cp -a . "$work/tree"
    chown -R postgres: "$work"
    chmod 755 "$work"
    status=0
    runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" \
        BACKFILL_TESTS="${BACKFILL_TESTS:-}" BACKFILL_VALGRIND_KEEP="${BACKFILL_VALGRIND_KEEP:-}" \
        BACKFILL_VALGRIND_INNER=1 "$work/tree/scripts/valgrind.sh" || status=$?
    [ -z "${BACKFILL_VALGRIND_KEEP:-}" ] && rm -rf "$work"
    exit $status
fi
tree=$(pwd)
bindir=$("$PG_CONFIG" --bindir)
dir=$(mktemp -d /tmp/backfill-vgcluster.XXXXXX)
"$bindir/initdb" -D "$dir/data" -U postgres -A trust --no-sync >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log"; exit 1; }
mkdir "$dir/vg"
port=$((20000 + RANDOM % 20000))

# --trace-children: follow the exec'd helpers too; every backend is a fork
# of the postmaster and is traced anyway.  Leak checking is pointless with
# memory contexts.  Frames are printed with full source paths so that
# backfill's own files can be told apart from PostgreSQL's.
valgrind --tool=memcheck --trace-children=yes --leak-check=no \
    --error-limit=no --num-callers=40 --read-var-info=no \
    --fullpath-after= --track-origins=yes \
    --suppressions="$tree/scripts/valgrind.supp" --gen-suppressions=all \
    --log-file="$dir/vg/%p.log" \
    "$bindir/postgres" -D "$dir/data" -p "$port" -k "$dir" -c listen_addresses='' \
    -c shared_preload_libraries=pg_cron -c cron.database_name=contrib_regression \
    -c cron.use_background_workers=on -c max_worker_processes=32 -c fsync=off \
    -c max_connections=20 >"$dir/server.log" 2>&1 &
pm=$!
for _ in $(seq 1 240); do
    "$bindir/pg_isready" -q -h "$dir" -p "$port" && break
    kill -0 $pm 2>/dev/null || { echo "server died"; cat "$dir/server.log"; exit 1; }
    sleep 1
done
"$bindir/pg_isready" -q -h "$dir" -p "$port" || { echo "server did not start"; exit 1; }

export PGHOST=$dir PGPORT=$port PGUSER=postgres PGDATABASE=postgres
regress_status=0
make -s installcheck PG_CONFIG="$PG_CONFIG" ISOLATION= TAP_TESTS= \
    ${BACKFILL_TESTS:+REGRESS="$BACKFILL_TESTS"} || regress_status=$?
[ $regress_status -ne 0 ] && [ -s regression.diffs ] && cat regression.diffs

"$bindir/pg_ctl" -D "$dir/data" -m fast -t 600 stop >/dev/null 2>&1 || kill $pm 2>/dev/null || true
wait $pm 2>/dev/null || true

# An error block in a valgrind log starts after a line "==PID== " that is
# blank otherwise and runs to the next such line.  Keep the blocks that
# mention the backfill library or one of its source files (frames of a
# library with debug information name the file, e.g. "(/x/src/orchestration/run.c:12)",
# not the library).
srcs=$(cd src && ls */*.c | sed 's/\.c$//' | paste -sd'|')
report=$dir/backfill-errors.txt
: >"$report"
errors_total=0
for f in "$dir"/vg/*.log; do
    n=$(grep -c '^==[0-9]*== \(Invalid\|Conditional\|Use of uninit\|Syscall param\|Source and dest\|Mismatched\|Argument\)' "$f" || true)
    errors_total=$((errors_total + n))
    awk -v re="backfill\\.so|/src/($srcs)\\.c:[0-9]+\\)" '
        /^==[0-9]+== $/ { if (blk ~ re) print blk "\n"; blk = ""; next }
        /^==[0-9]+== / { blk = blk $0 "\n"; next }
        /^[{}]/ || /^   / { blk = blk $0 "\n"; next }
        END { if (blk ~ re) print blk }
    ' "$f" | grep -v '^==[0-9]*== \(Memcheck\|Copyright\|Using Valgrind\|Command\|Parent PID\|HEAP SUMMARY\|    in use\|For lists\|For counts\|ERROR SUMMARY\)' >>"$report" || true
done
backfill_errors=$(grep -c '^==[0-9]*== \(Invalid\|Conditional\|Use of uninit\|Syscall param\|Source and dest\|Mismatched\|Argument\)' "$report" || true)

echo "valgrind: $(ls "$dir"/vg | wc -l) processes traced, $errors_total error(s) reported in all, $backfill_errors with backfill code on the stack"
echo "regression tests: $([ $regress_status -eq 0 ] && echo passed || echo 'FAILED (see diffs above)')"
if [ "$backfill_errors" -gt 0 ]; then
    cat "$report"
fi
if [ "$errors_total" -gt 0 ] && [ "$backfill_errors" -eq 0 ]; then
    echo "(errors outside backfill: see $dir/vg; add PostgreSQL's own to scripts/valgrind.supp)"
    BACKFILL_VALGRIND_KEEP=1
fi
[ -n "${BACKFILL_VALGRIND_KEEP:-}" ] && echo "logs kept in $dir" || rm -rf "$dir"
[ "$backfill_errors" -eq 0 ]
