#!/usr/bin/env bash
# Install what building and testing backfill needs (Debian 12), then build
# and install the extension.  Run as root, or as a user who can sudo.
#
# BACKFILL_PGROOT=/some/dir uses a relocated copy of PostgreSQL there
# instead of the system one (developer sandboxes); apt is skipped then.
# BACKFILL_SETUP_PACKAGES_ONLY=1 installs the packages only (scripts/test.sh
# when PostgreSQL 15 is not among the versions tested).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
if [ -z "${BACKFILL_PGROOT:-}" ]; then
    PACKAGES="build-essential postgresql-15 postgresql-server-dev-15 postgresql-15-cron libipc-run-perl"
    $SUDO apt-get update
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $PACKAGES
fi
[ -z "${BACKFILL_SETUP_PACKAGES_ONLY:-}" ] || exit 0
make -s clean PG_CONFIG="$PG_CONFIG"
make -s PG_CONFIG="$PG_CONFIG"
$SUDO make -s install PG_CONFIG="$PG_CONFIG"
