#!/usr/bin/env bash
# Developer helper: make a private, relocated copy of the system PostgreSQL
# 15 under /opt/pgsand/NAME, so that several work trees can build, install
# and test backfill at the same time without installing over each other:
#   scripts/dev-sandbox.sh NAME
#   BACKFILL_PGROOT=/opt/pgsand/NAME bash scripts/test.sh
set -euo pipefail
name=${1:?usage: dev-sandbox.sh NAME}
root=/opt/pgsand/$name
[ -d "$root/usr/lib/postgresql/15" ] && { echo "$root"; exit 0; }
mkdir -p "$root/usr/lib/postgresql" "$root/usr/share/postgresql"
cp -a /usr/lib/postgresql/15 "$root/usr/lib/postgresql/"
cp -a /usr/share/postgresql/15 "$root/usr/share/postgresql/"
ln -s /usr/include "$root/usr/include"
echo "$root"
