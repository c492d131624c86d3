#!/usr/bin/env bash
# Run every test layer of backfill: pg_regress, isolation and TAP, against
# throwaway clusters with pg_cron preloaded, on PostgreSQL 15, 16, 17, 18
# and 19 (beta).  Installs and builds what it needs first.  Exits non-zero if
# any version fails, prints the diffs of the failing tests and which versions
# failed, then the time of each part.
#
#   BACKFILL_PG_VERSIONS="15 16 17 18 19"  the versions to test (default
#                                  all five; e.g. "17" for a quick local run)
#   BACKFILL_TESTS="10_runs 11_x"  run only these pg_regress tests
#   BACKFILL_SKIP_TAP=1            skip the TAP tests
#   BACKFILL_TAP_TESTS="t/0x.pl"   run only these TAP files (and no regress)
#   BACKFILL_PGROOT=/opt/pgsand/N  PostgreSQL 15 from a developer sandbox
#                                  (scripts/dev-sandbox.sh) instead of Debian's
#   BACKFILL_VENDOR=dir            the vendored sources (default ../shared/vendor)
#   BACKFILL_CITUS_TARBALL=path    Citus source to build for 15, 16 and 17
#                                  (default $BACKFILL_VENDOR/citus-13.2.2.tar.gz;
#                                  /none: no Citus, t/050_citus.pl skips)
#   BACKFILL_PG_CASSERT="18"       the versions built with --enable-cassert
#                                  (scripts/pgbuild.sh; the default is 18)
#   BACKFILL_PARALLEL=0            build every version first, then test them
#                                  one after the other (default: a version's
#                                  suite starts as soon as its server is
#                                  built, beside the next builds and the other
#                                  suites, each in its own copy of the tree
#                                  and of PostgreSQL)
#   BACKFILL_PROVE_JOBS=N          TAP files run at once per version (default 2)
#
# PostgreSQL 15 is Debian's (as root, scripts/setup.sh installs backfill into
# it as before).  16 to 19 are built from ../shared/vendor by
# scripts/pgbuild.sh into /opt/backfill-pg/<major> once (18 with
# assertions), and each run tests a copy of that prefix of its own (backfill
# is installed into the copy, never into the shared prefix), so several trees
# can test at the same time.
set -euo pipefail
cd "$(dirname "$0")/.."

all_versions="15 16 17 18 19"
versions=${BACKFILL_PG_VERSIONS:-$all_versions}
for v in $versions; do
    case " $all_versions " in
        *" $v "*) ;;
        *) echo "test.sh: BACKFILL_PG_VERSIONS: unknown version '$v' (15, 16, 17, 18 or 19)" >&2; exit 2 ;;
    esac
done
has() { case " $versions " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
export BACKFILL_PG_CASSERT=${BACKFILL_PG_CASSERT-18}
cassert() { case " $BACKFILL_PG_CASSERT " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
# What the summary calls a version: "18 (assertions)" for a cassert build.
label() { if [ "$1" != 15 ] && cassert "$1"; then echo "$1 (assertions)"; else echo "$1"; fi; }
# The wall-clock time of each part, printed in the summary with the second
# of the run it started at (from the first suite on, parts overlap: the
# builds go on beside the suites already started).
t0=$(date +%s)
tmark=$t0
times=
took() {
    local now
    now=$(date +%s)
    times="$times$(printf '%-40s %5d s   (from %5d s)' "$1" $((now - tmark)) $((tmark - t0)))
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

# The pieces each version needs before its suite can start: Citus (15, 16
# and 17, for t/050_citus.pl, which skips itself without it) and, for 16 to
# 19, the server with pg_cron, built once (nothing is rebuilt when built
# already).  Without the sources (a work tree with no ../shared beside it, on
# a machine that never built them) a version is skipped and the summary says
# so, unless it was asked for by name or this is CI: then that is a failure.
vendor=${BACKFILL_VENDOR:-../shared/vendor}
export BACKFILL_VENDOR=$(cd "$vendor" 2>/dev/null && pwd || echo "$vendor")
citus_tarball=${BACKFILL_CITUS_TARBALL:-$BACKFILL_VENDOR/citus-13.2.2.tar.gz}
citus_versions="15 16 17"

# One work directory per run; one copy of the tree per version (each builds
# its own objects), and for 16 to 19 a copy of the PostgreSQL prefix that
# backfill is installed into.  PostgreSQL refuses to run as root: as root the
# copies belong to postgres and the tests run as postgres.
work=$(mktemp -d /tmp/backfill-test.XXXXXX)
chmod 755 "$work"
declare -A pid config result tiny why
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

# prepare V: Citus and the server of version V, then its copy of the tree
# (and of the prefix, with backfill built with -Werror and installed into
# it), and its tiny filesystem for the disk-full test (t/031_faults.pl, which
# skips itself without one).  Sets state[V]: ready, skipped (no source) or
# failed (why[V] says what).  A version that fails here fails the run, but the
# other versions are still tested.
declare -A state
skipped=
prepare() {
    local v=$1 status=0 out prefix= cfg
    state[$v]=failed
    if [ $v != 15 ]; then
        out=$(bash scripts/pgbuild.sh $v) || status=$?
        if [ $status -eq 3 ] && [ -z "${BACKFILL_PG_VERSIONS:-}" ] && [ -z "${CI:-}" ]; then
            echo "test.sh: SKIPPING PostgreSQL $v: no source to build it from (scripts/pgbuild.sh)"
            skipped="$skipped $v"
            state[$v]=skipped
            return 0
        fi
        if [ $status -ne 0 ]; then
            why[$v]="PostgreSQL $v could not be built (scripts/pgbuild.sh $v)"
            return 0
        fi
        prefix=$(echo "$out" | tail -n 1)
        took "PostgreSQL $(label $v) and pg_cron"
    fi
    if [[ " $citus_versions " == *" $v "* ]] && [ -f "$citus_tarball" ]; then
        cfg=${prefix:+$prefix/bin/pg_config}
        if ! PG_CONFIG=${cfg:-$pg15_config} bash scripts/citus.sh "$citus_tarball"; then
            why[$v]="Citus could not be built for PostgreSQL $v (scripts/citus.sh)"
            return 0
        fi
        took "Citus for $v"
    fi
    mkdir -p "$work/$v"
    cp -a . "$work/$v/tree"
    if [ $v = 15 ]; then
        config[$v]=$pg15_config
    else
        cp -a "$prefix" "$work/$v/pg"
        config[$v]=$work/$v/pg/bin/pg_config
        make -s -C "$work/$v/tree" clean PG_CONFIG="${config[$v]}"
        if ! make -s -j2 -C "$work/$v/tree" PG_CONFIG="${config[$v]}" >"$work/$v/build.log" 2>&1; then
            cat "$work/$v/build.log"
            why[$v]="backfill does not build on PostgreSQL $v"
            return 0
        fi
        if ! make -s -C "$work/$v/tree" install PG_CONFIG="${config[$v]}" >>"$work/$v/build.log" 2>&1; then
            cat "$work/$v/build.log"
            why[$v]="backfill does not install on PostgreSQL $v"
            return 0
        fi
    fi
    tiny[$v]=
    if [ "$(id -u)" -eq 0 ]; then
        chown -R postgres: "$work/$v"
        mkdir "$work/$v/tiny"
        mount -t tmpfs -o size=32m,uid="$(id -u postgres)",mode=700 tmpfs "$work/$v/tiny" 2>/dev/null &&
            tiny[$v]=$work/$v/tiny
    fi
    took "copy of the tree for $v$([ $v = 15 ] || echo ", backfill built")"
    state[$v]=ready
}

# run_version V: the whole suite on one version, output in $work/V/log.
# With suite_nice set, the suite (and the clusters it starts) runs at that
# niceness, so that the builds still to come, which decide when the last
# suite can start, go first.
suite_nice=0
run_version() {
    local v=$1 start status=0
    start=$(date +%s)
    nice -n "$suite_nice" "${runner[@]}" env PG_CONFIG="${config[$v]}" BACKFILL_TINY_DIR="${tiny[$v]}" \
        BACKFILL_TESTS="${BACKFILL_TESTS:-}" BACKFILL_SKIP_TAP="${BACKFILL_SKIP_TAP:-}" \
        BACKFILL_PROVE_JOBS="${BACKFILL_PROVE_JOBS:-}" BACKFILL_TAP_TESTS="${BACKFILL_TAP_TESTS:-}" \
        PG_TEST_PORT_DIR="$portdir" \
        "$work/$v/tree/scripts/run-tests.sh" || status=$?
    echo "== PostgreSQL $(label $v): $([ $status -eq 0 ] && echo passed || echo FAILED) in $(($(date +%s) - start)) s (seconds $((start - t0)) to $(($(date +%s) - t0)) of the run)"
    return $status
}

# The order of the builds: the slowest suites first (the assertion build's,
# then those with Citus), so that the last suite to start is a short one.
order=
for v in 15 $BACKFILL_PG_CASSERT 17 16 18 19; do
    if has $v && [[ " $order " != *" $v "* ]]; then
        order="$order $v"
    fi
done
tested=
failed=
if [ "${BACKFILL_PARALLEL:-1}" = 0 ] || [ "$(echo $versions | wc -w)" -eq 1 ]; then
    for v in $order; do
        prepare $v
        case ${state[$v]} in
            ready) tested="$tested $v" ;;
            failed) failed="$failed $v"; echo "FAILED: ${why[$v]}" ;;
        esac
    done
    for v in $tested; do
        echo "======== PostgreSQL $(label $v) ========"
        result[$v]=0
        run_version $v 2>&1 | tee "$work/$v/log" || result[$v]=1
    done
else
    # Each suite starts as soon as its version is ready; the next version
    # builds beside it.  The suites spend most of their time waiting for
    # pg_cron's minute ticks, so the builds and the other suites fill the
    # cores.  The suites run at niceness 5 (a third of the weight of a
    # process at 0): the builds, on which the start of the last suite
    # waits, get most of the CPU, and the suites what they leave.
    suite_nice=5
    for v in $order; do
        prepare $v
        case ${state[$v]} in
            ready) ;;
            failed) failed="$failed $v"; echo "FAILED: ${why[$v]}"; continue ;;
            *) continue ;;
        esac
        tested="$tested $v"
        run_version $v >"$work/$v/log" 2>&1 &
        pid[$v]=$!
        echo "test.sh: PostgreSQL $(label $v): suite started (log in $work/$v/log)"
    done
    for v in $tested; do
        result[$v]=0
        wait "${pid[$v]}" || result[$v]=1
    done
    for v in $tested; do
        echo "======== PostgreSQL $(label $v) ========"
        cat "$work/$v/log"
    done
fi
[ -n "$tested$failed" ] || { echo "test.sh: no version left to test"; exit 1; }

took "the suites, after the last build"
summary=$(for v in $order; do
    if [ -n "${why[$v]:-}" ]; then
        echo "== PostgreSQL $(label $v): FAILED: ${why[$v]}"
    elif [ -n "${result[$v]:-}" ]; then
        grep -h '^== PostgreSQL' "$work/$v/log" 2>/dev/null || echo "== PostgreSQL $(label $v): FAILED (no result)"
    fi
done)
unmount_tiny
for v in $tested; do
    if [ "${result[$v]}" -eq 0 ]; then
        rm -rf "$work/$v"
    else
        failed="$failed $v"
    fi
done
versions=$(echo $tested)
echo "======== summary ========"
echo "$summary"
printf '%s' "$times"
printf '%-40s %5d s\n' "total" $(($(date +%s) - t0))
if [ -n "$failed" ]; then
    echo "FAILED on PostgreSQL$failed (test copies kept in $work/<version>/tree)"
    exit 1
fi
rm -rf "$work"
[ -z "$skipped" ] || echo "SKIPPED PostgreSQL$skipped: no source to build it from (see above)"
echo "all tests passed on PostgreSQL $versions"
