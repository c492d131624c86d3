#!/usr/bin/env bash
# Build and install Citus from a source tarball into the PostgreSQL that
# PG_CONFIG names (default: the system PostgreSQL 15; scripts/test.sh also
# builds it into the 16 and 17 of scripts/pgbuild.sh), for the Citus tests
# (t/050_citus.pl) and the Citus benchmark (bench/citus.sh).
#
#   bash scripts/citus.sh [TARBALL]
#
# TARBALL defaults to ../shared/vendor/citus-13.2.2.tar.gz, relative to the
# project's root.  Build dependencies come from apt when run as root without
# BACKFILL_PGROOT (developer sandboxes have them already).  The one-line patch
# ../shared/vendor/README.md describes is applied before configure (it only
# matters on 15; harmless on 16 and 17).  Nothing is rebuilt when the same
# Citus version is already installed there; a lock in /tmp makes a second
# concurrent call for the same installation wait for the first, then find it
# done.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

tarball=${1:-$root/../shared/vendor/citus-13.2.2.tar.gz}
if [ -n "${BACKFILL_PGROOT:-}" ] && [ -z "${PG_CONFIG:-}" ]; then
    PG_CONFIG=$BACKFILL_PGROOT/usr/lib/postgresql/15/bin/pg_config
fi
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
export PG_CONFIG

[ -f "$tarball" ] || { echo "citus.sh: no tarball at $tarball" >&2; exit 1; }

# The version is in the tarball's top folder name: citus-13.2.2/.
top=$({ tar -tzf "$tarball" || true; } | head -n 1 | cut -d/ -f1)
version=${top#citus-}
sharedir=$("$PG_CONFIG" --sharedir)
pkglibdir=$("$PG_CONFIG" --pkglibdir)
lock=/tmp/backfill-citus-$(echo "$pkglibdir" | md5sum | cut -c1-12).lock
exec 9>>"$lock"
chmod 666 "$lock" 2>/dev/null || true
flock 9
if [ -f "$pkglibdir/citus.so" ] &&
    grep -q "^default_version = '${version%.*}-" "$sharedir/extension/citus.control" 2>/dev/null &&
    [ "$(cat "$pkglibdir/citus.backfill-built" 2>/dev/null)" = "$version" ]; then
    echo "citus.sh: Citus $version already installed in $pkglibdir"
    exit 0
fi

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
if [ -z "${BACKFILL_PGROOT:-}" ] && [ "$(id -u)" -eq 0 ]; then
    PACKAGES="build-essential liblz4-dev libzstd-dev libcurl4-openssl-dev libkrb5-dev libssl-dev libicu-dev"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $PACKAGES ||
        { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $PACKAGES; }
fi

work=$(mktemp -d /tmp/citus-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work"
cd "$work/$top"

# Debian's PostgreSQL 15 exports have_createdb_privilege(); rename Citus's
# static inline copy (../shared/vendor/README.md).  Idempotent.
compat=src/include/pg_version_compat.h
if ! grep -q 'citus_compat_have_createdb_privilege' "$compat"; then
    # "static inline bool" is on the line before "have_createdb_privilege(void)".
    line=$(grep -n '^have_createdb_privilege(void)' "$compat" | head -n 1 | cut -d: -f1)
    [ -n "$line" ] && [ "$line" -gt 1 ] &&
        sed -i "$((line - 1))i #define have_createdb_privilege citus_compat_have_createdb_privilege" "$compat"
fi
grep -q 'citus_compat_have_createdb_privilege' "$compat" ||
    { echo "citus.sh: could not patch $compat" >&2; exit 1; }

start=$(date +%s)
# Without optimisation (configure's CFLAGS come last on Citus's command
# lines) and without LLVM bitcode for JIT (with_llvm=no): the test needs
# Citus to work, not to be fast, and this cuts the build to a fraction.
./configure PG_CONFIG="$PG_CONFIG" CFLAGS="${BACKFILL_CITUS_CFLAGS:--O0}" >configure.log 2>&1 ||
    { tail -n 40 configure.log; exit 1; }
make -s -j2 with_llvm=no >make.log 2>&1 || { tail -n 60 make.log; exit 1; }
$SUDO make -s install with_llvm=no >install.log 2>&1 || { tail -n 40 install.log; exit 1; }
echo "$version" | $SUDO tee "$pkglibdir/citus.backfill-built" >/dev/null
echo "citus.sh: Citus $version installed in $pkglibdir in $(($(date +%s) - start)) s"
