# Shared by the benchmark scripts (sourced, never run): how a bench runs as
# the postgres user, and a throwaway cluster with default settings, removed
# when the script exits.
#   bench_as_postgres SCRIPT "${1:-}" VAR...
#                                    as root: set PG_CONFIG, build and install
#                                    the extension, run SCRIPT again as postgres
#                                    from a copy of the tree with --inner and
#                                    the variables named, exit with its status
#   bench_cluster [SERVER OPTIONS]   e.g. bench_cluster "-c max_worker_processes=16"
# Needs $bindir (PostgreSQL's bindir). Exports PGHOST/PGPORT/PGUSER/
# PGDATABASE/PGOPTIONS and defines q (psql that stops on error) and now.

bench_as_postgres() {
    local script=$1 arg=$2 work status=0 pass=() v
    shift 2
    if [ -n "${BACKFILL_PGROOT:-}" ]; then
        export PG_CONFIG=$BACKFILL_PGROOT/usr/lib/postgresql/15/bin/pg_config
    else
        export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
    fi
    [ "$(id -u)" -eq 0 ] && [ "$arg" != "--inner" ] || return 0
    for v in "$@"; do pass+=("$v=${!v:-}"); done
    work=$(mktemp -d /tmp/backfill-bench.XXXXXX)
    scripts/setup.sh >/dev/null
    cp -a . "$work/tree"
    chown -R postgres: "$work"
    chmod 755 "$work"
    runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" "${pass[@]}" \
        "$work/tree/$script" --inner || status=$?
    rm -rf "$work"
    exit $status
}

bench_cluster() {
    local extra=${1:-} try
    dir=$(mktemp -d /tmp/backfill-benchdb.XXXXXX)
    "$bindir/initdb" -D "$dir/data" -U postgres -A trust >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log"; exit 1; }
    port=
    for try in 1 2 3 4 5; do
        port=$((20000 + RANDOM % 20000))
        if "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o \
            "-p $port -k $dir -c listen_addresses='' $extra" start >/dev/null; then
            break
        fi
        port=
    done
    [ -n "$port" ] || { echo "could not start a cluster"; cat "$dir/server.log"; exit 1; }
    trap bench_cleanup EXIT
    export PGHOST=$dir PGPORT=$port PGUSER=postgres PGDATABASE=postgres
    export PGOPTIONS="-c TimeZone=UTC -c client_min_messages=warning"
}

# Stop and remove the cluster; on a failure, show the end of its log.
bench_cleanup() {
    local status=$?
    "$bindir/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
    if [ $status -ne 0 ]; then
        echo "bench failed; the end of the server log:" >&2
        tail -n 60 "$dir/server.log" >&2
    fi
    rm -rf "$dir"
}

q() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
now() { date +%s.%N; }
