#!/usr/bin/env bash
# The test run proper (called by scripts/test.sh as a non-root user):
# pg_regress and isolation against a throwaway cluster with pg_cron
# preloaded, then the TAP tests, which start clusters of their own.
# BACKFILL_PROVE_JOBS=N runs N TAP files at once (prove -j; default 2: most
# TAP files spend their time waiting for pg_cron's minute ticks); prove prints
# each file's time (--timer), so the slow ones show in the log;
# BACKFILL_TAP_TESTS="t/004_versions.pl t/070_upgrade.pl" only those.
set -uo pipefail
cd "$(dirname "$0")/.."

status=0
if [ -n "${BACKFILL_TAP_TESTS:-}" ]; then
    :   # only the TAP files named, below
elif [ -n "${BACKFILL_TESTS:-}" ]; then
    scripts/cluster.sh contrib_regression \
        make -s installcheck PG_CONFIG="$PG_CONFIG" REGRESS="$BACKFILL_TESTS" ISOLATION= TAP_TESTS= || status=$?
else
    scripts/cluster.sh contrib_regression \
        make -s installcheck PG_CONFIG="$PG_CONFIG" TAP_TESTS= || status=$?
fi
if [ -n "${BACKFILL_TAP_TESTS:-}" ] ||
    { [ -z "${BACKFILL_TESTS:-}" ] && [ -z "${BACKFILL_SKIP_TAP:-}" ] && ls t/*.pl >/dev/null 2>&1; }; then
    make -s installcheck PG_CONFIG="$PG_CONFIG" REGRESS= ISOLATION= \
        PROVE_FLAGS="--timer -j ${BACKFILL_PROVE_JOBS:-2}" \
        ${BACKFILL_TAP_TESTS:+PROVE_TESTS="$BACKFILL_TAP_TESTS"} || status=$?
    tap_ran=1
fi

# A failed assertion in a TAP test's server (a server built with
# --enable-cassert) fails the run even when the test went on: the backend
# crashed, and the postmaster restarted the cluster under the test.
if [ -n "${tap_ran:-}" ] && grep -q '^TRAP:' tmp_check/log/*.log 2>/dev/null; then
    echo "======== failed assertions (TAP servers' logs) ========"
    grep -H -A 12 '^TRAP:' tmp_check/log/*.log
    status=1
fi

if [ $status -ne 0 ]; then
    for f in regression.diffs output_iso/regression.diffs; do
        if [ -s "$f" ]; then
            echo "======== $f ========"
            cat "$f"
        fi
    done
    for f in tmp_check/log/regress_log_*; do
        [ -f "$f" ] && { echo "======== $f (tail) ========"; tail -n 80 "$f"; }
    done
    echo "FAILED"
else
    echo "all tests passed"
fi
exit $status
