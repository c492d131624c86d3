#!/usr/bin/env bash
# Run every test layer of backfill: pg_regress, isolation and TAP, against a
# throwaway cluster with pg_cron preloaded.  Installs what it needs first.
# Exits non-zero on any failure and prints the diffs of failing tests.
#
#   BACKFILL_TESTS="10_runs 11_x"  run only these pg_regress tests
#   BACKFILL_SKIP_TAP=1            skip the TAP tests
#   BACKFILL_CITUS_TARBALL=path    Citus source to build (default
#                                  ../shared/vendor/citus-13.2.2.tar.gz)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${BACKFILL_PGROOT:-}" ]; then
    export PG_CONFIG=$BACKFILL_PGROOT/usr/lib/postgresql/15/bin/pg_config
else
    export PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
fi
scripts/setup.sh

# Citus for t/050_citus.pl (which skips itself without it): built from the
# vendored source when it is beside the project; nothing is rebuilt when
# that version is installed already.
citus_tarball=${BACKFILL_CITUS_TARBALL:-../shared/vendor/citus-13.2.2.tar.gz}
if [ -f "$citus_tarball" ]; then
    bash scripts/citus.sh "$citus_tarball"
fi

# PostgreSQL refuses to run as root: as root, test a copy owned by postgres.
if [ "$(id -u)" -eq 0 ]; then
    work=$(mktemp -d /tmp/backfill-test.XXXXXX)
    cp -a . "$work/tree"
    chown -R postgres: "$work"
    chmod 755 "$work"
    # A tiny filesystem for the disk-full test (t/031_faults.pl), where
    # mounting is allowed; the test skips itself without one.
    tiny=$work/tiny
    mkdir "$tiny"
    mount -t tmpfs -o size=32m,uid="$(id -u postgres)",mode=700 tmpfs "$tiny" 2>/dev/null || tiny=
    status=0
    runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" BACKFILL_TINY_DIR="$tiny" \
        BACKFILL_TESTS="${BACKFILL_TESTS:-}" BACKFILL_SKIP_TAP="${BACKFILL_SKIP_TAP:-}" \
        "$work/tree/scripts/run-tests.sh" || status=$?
    [ -z "$tiny" ] || umount -l "$tiny" || true
    [ $status -eq 0 ] && rm -rf "$work"
    exit $status
fi
exec scripts/run-tests.sh
