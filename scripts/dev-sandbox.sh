#!/usr/bin/env bash
# Developer helper: make a private, relocated copy of a PostgreSQL, so that
# several work trees can build, install and test backfill at the same time
# without installing over each other.
#
#   scripts/dev-sandbox.sh NAME          # Debian's 15 -> /opt/pgsand/NAME
#   BACKFILL_PGROOT=/opt/pgsand/NAME bash scripts/test.sh
#
#   scripts/dev-sandbox.sh NAME 17       # 16 to 19 -> /opt/pgsand/NAME-17
#   make install PG_CONFIG=/opt/pgsand/NAME-17/bin/pg_config
#
# A 16 to 19 sandbox is a copy of the prefix scripts/pgbuild.sh builds (it is
# built first if needed; 18 is the build with assertions); it is for working
# by hand (psql, valgrind.sh with PG_CONFIG).  scripts/test.sh needs none for
# 16 to 19: every run tests a fresh copy of its own.  Prints the sandbox's
# directory.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: dev-sandbox.sh NAME [15|16|17|18|19]}
version=${2:-15}
case $version in
    15)
        root=/opt/pgsand/$name
        [ -d "$root/usr/lib/postgresql/15" ] && { echo "$root"; exit 0; }
        mkdir -p "$root/usr/lib/postgresql" "$root/usr/share/postgresql"
        cp -a /usr/lib/postgresql/15 "$root/usr/lib/postgresql/"
        cp -a /usr/share/postgresql/15 "$root/usr/share/postgresql/"
        ln -s /usr/include "$root/usr/include"
        ;;
    16 | 17 | 18 | 19)
        root=/opt/pgsand/$name-$version
        [ -x "$root/bin/pg_config" ] && { echo "$root"; exit 0; }
        prefix=$(bash scripts/pgbuild.sh "$version" | tail -n 1)
        mkdir -p /opt/pgsand
        cp -a "$prefix" "$root"
        ;;
    *) echo "dev-sandbox.sh: unknown version '$version' (15, 16, 17, 18 or 19)" >&2; exit 2 ;;
esac
echo "$root"
