#!/usr/bin/env bash
# Install what building and testing backfill needs, then build and install
# the extension.  Run as root on Debian 12 (or as a user who can sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
PACKAGES="build-essential postgresql-15 postgresql-server-dev-15 postgresql-15-cron libipc-run-perl"
if ! dpkg -s $PACKAGES >/dev/null 2>&1 || [ -n "${BACKFILL_FORCE_APT:-}" ]; then
    $SUDO apt-get update
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y $PACKAGES
fi

export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
make -s clean
make -s PG_CONFIG="$PG_CONFIG"
$SUDO make -s install PG_CONFIG="$PG_CONFIG"
