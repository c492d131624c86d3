#!/usr/bin/env bash
# The backfill demo: installs what it needs, starts a throwaway cluster with
# pg_cron, loads a small Pagedeck-like data set (payments, a payment ledger,
# a daily revenue rollup whose job failed for three days and left zeros) and
# walks through a whole backfill, printed as psql shows it; then
# demo/undo.sql: a wrong definition diffed and reverted.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${BACKFILL_PGROOT:-}" ]; then
    export PG_CONFIG=$BACKFILL_PGROOT/usr/lib/postgresql/15/bin/pg_config
else
    export PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
fi
scripts/setup.sh >/dev/null

run_demo() {
    scripts/cluster.sh postgres \
        "$("$PG_CONFIG" --bindir)/psql" -X -q -v ON_ERROR_STOP=1 -f demo/demo.sql \
        -f demo/undo.sql
}
if [ "$(id -u)" -eq 0 ]; then
    work=$(mktemp -d /tmp/backfill-demo.XXXXXX)
    cp -a scripts demo "$work/"
    chown -R postgres: "$work"
    chmod 755 "$work"
    cd "$work"
    export -f run_demo
    status=0
    runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" bash -c run_demo || status=$?
    cd / && rm -rf "$work"
    exit $status
fi
run_demo
