#!/usr/bin/env bash
# Run every test layer of backfill: pg_regress, isolation and TAP, against a
# throwaway cluster with pg_cron preloaded.  Installs what it needs first.
# Exits non-zero on any failure and prints the diffs of failing tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
PATH=/usr/lib/postgresql/15/bin:$PATH

# PostgreSQL refuses to run as root: as root, test a copy owned by postgres.
if [ "$(id -u)" -eq 0 ]; then
    work=$(mktemp -d /tmp/backfill-test.XXXXXX)
    cp -a . "$work/tree"
    chown -R postgres: "$work"
    chmod 755 "$work"
    exec runuser -u postgres -- env PATH="$PATH" PG_CONFIG="$PG_CONFIG" \
        BACKFILL_TESTS="${BACKFILL_TESTS:-}" "$work/tree/scripts/run-tests.sh"
fi
exec scripts/run-tests.sh
