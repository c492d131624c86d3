#!/usr/bin/env bash
# The test run proper (called by scripts/test.sh as a non-root user): a
# pg_virtualenv cluster with pg_cron preloaded for pg_regress and isolation,
# and the TAP tests, which start clusters of their own.
set -uo pipefail
cd "$(dirname "$0")/.."

status=0
pg_virtualenv -v 15 \
    -o shared_preload_libraries=pg_cron \
    -o cron.database_name=contrib_regression \
    -o cron.use_background_workers=on \
    -o max_worker_processes=20 \
    make -s installcheck PG_CONFIG="$PG_CONFIG" ${BACKFILL_TESTS:+REGRESS="$BACKFILL_TESTS" ISOLATION= TAP_TESTS=} || status=$?

if [ $status -ne 0 ]; then
    for f in regression.diffs output_iso/regression.diffs; do
        if [ -s "$f" ]; then
            echo "======== $f ========"
            cat "$f"
        fi
    done
    for f in tmp_check/log/regress_log_*; do
        [ -f "$f" ] && { echo "======== $f (tail) ========"; tail -n 60 "$f"; }
    done
    echo "FAILED"
else
    echo "all tests passed"
fi
exit $status
