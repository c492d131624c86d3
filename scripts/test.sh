#!/usr/bin/env bash
# Run every test layer of backfill: pg_regress, isolation and TAP, against
# throwaway clusters with pg_cron preloaded, on PostgreSQL 15, 16 and 17.
# Installs what it needs first.  Exits non-zero if any version fails, prints
# the diffs of the failing tests and which versions failed.
#
#   BACKFILL_PG_VERSIONS="15 16 17"  the versions to test (default all three;
#                                  e.g. "17" for a quick local run)
#   BACKFILL_TESTS="10_runs 11_x"  run only these pg_regress tests
#   BACKFILL_SKIP_TAP=1            skip the TAP tests
#   BACKFILL_TAP_TESTS="t/0x.pl"   run only these TAP files (and no regress)
#   BACKFILL_PGROOT=/opt/pgsand/N  PostgreSQL 15 from a developer sandbox
#                                  (scripts/dev-sandbox.sh) instead of Debian's
#   BACKFILL_CITUS_TARBALL=path    Citus source to build for PostgreSQL 15
#                                  (default ../shared/vendor/citus-13.2.2.tar.gz)
#   BACKFILL_PARALLEL=0            test the versions one after the other
#                                  (default: all at once, each in its own
#                                  copy of the tree and of PostgreSQL)
#   BACKFILL_PROVE_JOBS=N          TAP files run at once per version (default 2)
#
# PostgreSQL 15 is Debian's (as root, scripts/setup.sh installs backfill into
# it as before).  16 and 17 are built from ../shared/vendor by
# scripts/pgbuild.sh into /opt/backfill-pg/<major> once, and each run tests a
# copy of that prefix of its own (backfill is installed into the copy, never
# into the shared prefix), so several trees can test at the same time.
set -euo pipefail
cd "$(dirname "$0")/.."

versions=${BACKFILL_PG_VERSIONS:-15 16 17}
for v in $versions; do
    case $v in
        15 | 16 | 17) ;;
        *) echo "test.sh: BACKFILL_PG_VERSIONS: unknown version '$v' (15, 16 or 17)" >&2; exit 2 ;;
    esac
done
has() { case " $versions " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
# The wall-clock time of each part, printed in the summary.
t0=$(date +%s)
tmark=$t0
times=
took() {
    local now
    now=$(date +%s)
    times="$times$(printf '%-34s %4d s' "$1" $((now - tmark)))
"
    tmark=$now
}

if [ -n "${BACKFILL_PGROOT:-}" ]; then
    pg15_config=$BACKFILL_PGROOT/usr/lib/postgresql/15/bin/pg_config
else
    pg15_config=/usr/lib/postgresql/15/bin/pg_config
fi

# Packages (and the postgres user); on 15, build and install backfill as before.
if has 15; then
    PG_CONFIG=$pg15_config scripts/setup.sh
else
    PG_CONFIG=$pg15_config BACKFILL_SETUP_PACKAGES_ONLY=1 scripts/setup.sh
fi
took "packages (and backfill on 15)"

# Citus for t/050_citus.pl on 15 (which skips itself without it): built from
# the vendored source when it is beside the project; nothing is rebuilt when
# that version is installed already.
citus_tarball=${BACKFILL_CITUS_TARBALL:-../shared/vendor/citus-13.2.2.tar.gz}
if has 15 && [ -f "$citus_tarball" ]; then
    PG_CONFIG=$pg15_config bash scripts/citus.sh "$citus_tarball"
    took "Citus for 15"
fi

# PostgreSQL 16 and 17 with pg_cron, built once (skipped when built already).
# Without the sources (a work tree with no ../shared beside it, on a machine
# that never built them) a version is skipped and the summary says so, unless
# it was asked for by name or this is CI: then that is a failure.
declare -A prefix
skipped=
for v in 16 17; do
    if has $v; then
        status=0
        out=$(bash scripts/pgbuild.sh $v) || status=$?
        if [ $status -eq 3 ] && [ -z "${BACKFILL_PG_VERSIONS:-}" ] && [ -z "${CI:-}" ]; then
            echo "test.sh: SKIPPING PostgreSQL $v: no source to build it from (scripts/pgbuild.sh)"
            skipped="$skipped $v"
            versions=$(echo " $versions " | sed "s/ $v / /; s/^ *//; s/ *$//")
            continue
        fi
        [ $status -eq 0 ] || { echo "FAILED: PostgreSQL $v could not be built (scripts/pgbuild.sh $v)"; exit 1; }
        prefix[$v]=$(echo "$out" | tail -n 1)
        took "PostgreSQL $v and pg_cron"
    fi
done
[ -n "$versions" ] || { echo "test.sh: no version left to test"; exit 1; }

# One work directory per run; one copy of the tree per version (each builds
# its own objects), and for 16 and 17 a copy of the PostgreSQL prefix that
# backfill is installed into.  PostgreSQL refuses to run as root: as root the
# copies belong to postgres and the tests run as postgres.
work=$(mktemp -d /tmp/backfill-test.XXXXXX)
unmount_tiny() {
    local d
    for d in "$work"/*/tiny; do
        ! mountpoint -q "$d" 2>/dev/null || umount -l "$d" || true
    done
}
trap unmount_tiny EXIT
runner=()
if [ "$(id -u)" -eq 0 ]; then
    runner=(runuser -u postgres --)
fi
# One port reservation directory for every TAP test of every run on this
# machine, so concurrent versions (and trees) never pick the same port.
portdir=/tmp/backfill-portlock
mkdir -p "$portdir" && chmod 1777 "$portdir" 2>/dev/null || true

declare -A config
for v in $versions; do
    mkdir -p "$work/$v"
    cp -a . "$work/$v/tree"
    if [ $v = 15 ]; then
        config[$v]=$pg15_config
    else
        cp -a "${prefix[$v]}" "$work/$v/pg"
        config[$v]=$work/$v/pg/bin/pg_config
        make -s -C "$work/$v/tree" clean PG_CONFIG="${config[$v]}"
        make -s -C "$work/$v/tree" PG_CONFIG="${config[$v]}" >"$work/$v/build.log" 2>&1 ||
            { cat "$work/$v/build.log"; echo "FAILED: backfill does not build on PostgreSQL $v"; exit 1; }
        make -s -C "$work/$v/tree" install PG_CONFIG="${config[$v]}" >>"$work/$v/build.log" 2>&1 ||
            { cat "$work/$v/build.log"; echo "FAILED: backfill does not install on PostgreSQL $v"; exit 1; }
    fi
done
if [ "$(id -u)" -eq 0 ]; then
    chown -R postgres: "$work"
fi
chmod 755 "$work"
took "copies, backfill on 16/17"

# A tiny filesystem for the disk-full test (t/031_faults.pl), one per
# version, where mounting is allowed; the test skips itself without one.
declare -A tiny
for v in $versions; do
    tiny[$v]=
    if [ "$(id -u)" -eq 0 ]; then
        mkdir "$work/$v/tiny"
        mount -t tmpfs -o size=32m,uid="$(id -u postgres)",mode=700 tmpfs "$work/$v/tiny" 2>/dev/null &&
            tiny[$v]=$work/$v/tiny
    fi
done

# run_version V: the whole suite on one version, output in $work/V/log.
run_version() {
    local v=$1 start status=0
    start=$(date +%s)
    "${runner[@]}" env PG_CONFIG="${config[$v]}" BACKFILL_TINY_DIR="${tiny[$v]}" \
        BACKFILL_TESTS="${BACKFILL_TESTS:-}" BACKFILL_SKIP_TAP="${BACKFILL_SKIP_TAP:-}" \
        BACKFILL_PROVE_JOBS="${BACKFILL_PROVE_JOBS:-}" BACKFILL_TAP_TESTS="${BACKFILL_TAP_TESTS:-}" \
        PG_TEST_PORT_DIR="$portdir" \
        "$work/$v/tree/scripts/run-tests.sh" || status=$?
    echo "== PostgreSQL $v: $([ $status -eq 0 ] && echo passed || echo FAILED) in $(($(date +%s) - start)) s"
    return $status
}

declare -A result
failed=
if [ "${BACKFILL_PARALLEL:-1}" = 0 ] || [ "$(echo $versions | wc -w)" -eq 1 ]; then
    for v in $versions; do
        echo "======== PostgreSQL $v ========"
        result[$v]=0
        run_version $v 2>&1 | tee "$work/$v/log" || result[$v]=1
    done
else
    declare -A pid
    for v in $versions; do
        run_version $v >"$work/$v/log" 2>&1 &
        pid[$v]=$!
    done
    echo "test.sh: testing PostgreSQL $versions at once (logs in $work/*/log)"
    for v in $versions; do
        result[$v]=0
        wait "${pid[$v]}" || result[$v]=1
        echo "======== PostgreSQL $v ========"
        cat "$work/$v/log"
    done
fi

took "the suites ($(echo $versions | sed 's/ /, /g'))"
summary=$(grep -h '^== PostgreSQL' "$work"/*/log 2>/dev/null || true)
unmount_tiny
for v in $versions; do
    if [ "${result[$v]}" -eq 0 ]; then
        rm -rf "$work/$v"
    else
        failed="$failed $v"
    fi
done
echo "======== summary ========"
echo "$summary"
printf '%s' "$times"
printf '%-34s %4d s\n' "total" $(($(date +%s) - t0))
if [ -n "$failed" ]; then
    echo "FAILED on PostgreSQL$failed (test copies kept in $work/<version>/tree)"
    exit 1
fi
rm -rf "$work"
[ -z "$skipped" ] || echo "SKIPPED PostgreSQL$skipped: no source to build it from (see above)"
echo "all tests passed on PostgreSQL $versions"
