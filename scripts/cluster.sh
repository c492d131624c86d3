#!/usr/bin/env bash
# Start a throwaway PostgreSQL cluster with pg_cron preloaded, run a command
# against it (PGHOST/PGPORT/PGUSER/PGDATABASE exported), then remove it.
#   scripts/cluster.sh DBNAME COMMAND...
# DBNAME is the database pg_cron serves.  Must not run as root.
set -uo pipefail
db=$1; shift
bindir=$("$PG_CONFIG" --bindir)
dir=$(mktemp -d /tmp/backfill-cluster.XXXXXX)
"$bindir/initdb" -D "$dir/data" -U postgres -A trust --no-sync >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log"; exit 1; }
for try in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 20000))
    if "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o \
        "-p $port -k $dir -c listen_addresses='' -c shared_preload_libraries=pg_cron \
         -c cron.database_name=$db -c cron.use_background_workers=on \
         -c max_worker_processes=32 -c fsync=off" start >/dev/null; then
        break
    fi
    port=
done
[ -n "$port" ] || { echo "could not start a cluster"; cat "$dir/server.log"; exit 1; }
export PGHOST=$dir PGPORT=$port PGUSER=postgres PGDATABASE=postgres
status=0
"$@" || status=$?
"$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1
if [ $status -ne 0 ] && [ -n "${BACKFILL_SHOW_SERVER_LOG:-}" ]; then
    tail -n 100 "$dir/server.log"
fi
# A failed assertion (a server built with --enable-cassert) crashes the
# backend; the test's diff then only shows a lost connection, so the
# assertion itself is printed from the server's log.
if grep -q '^TRAP:' "$dir/server.log" 2>/dev/null; then
    echo "======== failed assertions (server log) ========"
    grep -A 12 '^TRAP:' "$dir/server.log"
    status=1
fi
rm -rf "$dir"
exit $status
