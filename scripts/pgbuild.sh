#!/usr/bin/env bash
# Build a vendored PostgreSQL (16, 17, 18 or 19) and pg_cron into a private
# prefix, for testing backfill on the versions Debian 12 does not package.
#
#   bash scripts/pgbuild.sh VERSION       # 16, 17, 18 or 19 (or 16.6, 19beta3)
#
# The sources are ../shared/vendor/postgresql-<VERSION>*.tar.gz and pg_cron:
# ../shared/vendor/pg_cron-*.tar.gz (the 1.6.7 release) for 16 to 18,
# ../shared/vendor/pgcron-main-*.tgz (pg_cron's main branch, the first with
# PostgreSQL 19 support) for 19 (relative to the project's root;
# BACKFILL_VENDOR names another folder).  Without them, a prefix built
# earlier is used as it is.  The
# prefix is $BACKFILL_PG_PREFIX/<major> (default /opt/backfill-pg/<major>),
# readable by everyone.  Configured --without-icu and --enable-tap-tests, no
# docs, -O0 (BACKFILL_PG_CFLAGS), make -j2; `make install` also puts pg_regress, pg_isolation_regress,
# isolationtester and the PostgreSQL::Test modules where PGXS looks for them
# (lib/pgxs/src/test/...), and contrib's file_fdw (used by a test) is added.
# pg_cron is built against it and installed into the same prefix.
#
# One version is built with assertions (--enable-cassert, which also
# compiles backfill's own Assert()s in, since PGXS takes pg_config.h's
# USE_ASSERT_CHECKING): the majors in BACKFILL_PG_CASSERT (default "18";
# "" for none, e.g. for benchmarks).  The test suite runs on it like on any
# other version, so a broken assertion fails the test command.
#
# Nothing is rebuilt when the prefix's marker (.backfill-built) holds the
# sha256 sums of both tarballs and the build options (a lock in /tmp
# serializes concurrent calls).  The build dependencies come from apt when run
# as root.  The prefix is never installed into by the tests: scripts/test.sh
# works on a copy of it per run (CONTRIBUTING.md), so it stays pristine.
# Prints the prefix on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

want=${1:?usage: pgbuild.sh VERSION (16, 17, 18 or 19)}
major=${want%%[.a-z]*}
# pg_cron's source for each major: the 1.6.7 release supports 13 to 18; 19
# needs pg_cron's main branch (untagged, vendored as pgcron-main-<commit>.tgz).
case $major in
    16 | 17 | 18) cronglob='pg_cron-*.tar.gz' ;;
    19) cronglob='pgcron-main-*.tgz' ;;
    *) echo "pgbuild.sh: unknown version '$want' (16, 17, 18 or 19)" >&2; exit 2 ;;
esac
vendor=${BACKFILL_VENDOR:-$root/../shared/vendor}
shopt -s nullglob
tarballs=("$vendor"/postgresql-"$want"*.tar.gz)
crons=("$vendor"/$cronglob)
shopt -u nullglob
prefix=${BACKFILL_PG_PREFIX:-/opt/backfill-pg}/$major
marker=$prefix/.backfill-built
if [ ${#tarballs[@]} -eq 0 ] && [ -f "$marker" ] && [ -x "$prefix/bin/pg_config" ]; then
    # A work tree without ../shared beside it, on a machine that has built
    # this version already: use that build (the marker says which).
    echo "pgbuild.sh: no source in $vendor; using the build in $prefix ($(head -n 1 "$marker" | cut -d' ' -f2))" >&2
    echo "$prefix"
    exit 0
fi
# Exit status 3: no source for this version (scripts/test.sh tells it apart).
[ ${#tarballs[@]} -eq 1 ] ||
    { echo "pgbuild.sh: expected one $vendor/postgresql-$want*.tar.gz, found ${#tarballs[@]} (BACKFILL_VENDOR names another folder)" >&2; exit 3; }
[ ${#crons[@]} -eq 1 ] ||
    { echo "pgbuild.sh: expected one $vendor/$cronglob, found ${#crons[@]} (BACKFILL_VENDOR names another folder)" >&2; exit 3; }
tarball=${tarballs[0]}
cron=${crons[0]}

# The test builds are compiled without optimisation (-O0: less than half
# the build time on two cores; the suites wait on clusters and pg_cron more
# than they compute).  Benchmarks want an optimised build:
# BACKFILL_PG_CFLAGS=-O2 (the flags are part of the marker, so a change
# rebuilds).
cflags=${BACKFILL_PG_CFLAGS:--O0}
configure_extra=
case " ${BACKFILL_PG_CASSERT-18} " in
    *" $major "*) configure_extra=--enable-cassert ;;
esac
# (A build without extra options keeps the marker of earlier pgbuild.sh
# versions, so 16 and 17 built before are not rebuilt.)
stamp="$(sha256sum "$tarball" | cut -d' ' -f1) $(basename "$tarball")
$(sha256sum "$cron" | cut -d' ' -f1) $(basename "$cron")
CFLAGS=$cflags${configure_extra:+
CONFIGURE=$configure_extra}"
# Two trees asking for the same version at once: the second waits for the
# first's build, then finds it done.
exec 9>>"/tmp/backfill-pgbuild-$major.lock"
chmod 666 "/tmp/backfill-pgbuild-$major.lock" 2>/dev/null || true
flock 9
if [ -f "$marker" ] && [ "$(cat "$marker")" = "$stamp" ] && [ -x "$prefix/bin/pg_config" ]; then
    echo "pgbuild.sh: $(basename "$tarball" .tar.gz) and $(basename "${cron%.t*gz}")${configure_extra:+ ($configure_extra)} already built in $prefix" >&2
    echo "$prefix"
    exit 0
fi

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
PACKAGES="build-essential bison flex libreadline-dev zlib1g-dev libipc-run-perl"
missing=
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
    $SUDO apt-get update >&2
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing >&2
fi

work=$(mktemp -d /tmp/pgbuild.XXXXXX)
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
tar -xzf "$tarball" -C "$work"
top=$({ tar -tzf "$tarball" || true; } | head -n 1 | cut -d/ -f1)
cd "$work/$top"

# A half-built prefix from an interrupted run is removed first.
$SUDO rm -rf "$prefix"
log() { echo "pgbuild.sh: $* ($(($(date +%s) - start)) s)" >&2; }
log "configuring $top for $prefix${configure_extra:+ ($configure_extra)}"
./configure --prefix="$prefix" --without-icu --enable-tap-tests $configure_extra CFLAGS="$cflags" >configure.log 2>&1 ||
    { tail -n 40 configure.log; exit 1; }
log "building"
make -s -j2 >make.log 2>&1 || { tail -n 60 make.log; exit 1; }
make -s -j2 -C contrib/file_fdw >>make.log 2>&1 || { tail -n 60 make.log; exit 1; }
log "installing"
$SUDO make -s install >install.log 2>&1 || { tail -n 40 install.log; exit 1; }
$SUDO make -s -C contrib/file_fdw install >>install.log 2>&1 || { tail -n 40 install.log; exit 1; }

# pg_cron against it.
tar -xzf "$cron" -C "$work"
crontop=$({ tar -tzf "$cron" || true; } | head -n 1 | cut -d/ -f1)
make -s -C "$work/$crontop" PG_CONFIG="$prefix/bin/pg_config" >cron.log 2>&1 ||
    { tail -n 40 cron.log; exit 1; }
$SUDO make -s -C "$work/$crontop" PG_CONFIG="$prefix/bin/pg_config" install >>cron.log 2>&1 ||
    { tail -n 40 cron.log; exit 1; }

# What PGXS installcheck needs, checked rather than assumed.
pgxs=$("$prefix/bin/pg_config" --pkglibdir)/pgxs
for f in src/test/regress/pg_regress src/test/isolation/pg_isolation_regress \
    src/test/isolation/isolationtester src/test/perl/PostgreSQL/Test/Cluster.pm; do
    [ -e "$pgxs/$f" ] || { echo "pgbuild.sh: $pgxs/$f is missing after the install" >&2; exit 1; }
done
[ -f "$("$prefix/bin/pg_config" --pkglibdir)/pg_cron.so" ] ||
    { echo "pgbuild.sh: pg_cron.so is missing after the install" >&2; exit 1; }

$SUDO chmod -R a+rX "$prefix"
echo "$stamp" | $SUDO tee "$marker" >/dev/null
log "$top and $crontop installed in $prefix"
echo "$prefix"
