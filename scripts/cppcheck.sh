#!/usr/bin/env bash
# Static analysis of backfill's C code with PostgreSQL's headers (so that
# ereport(ERROR) is known not to return).  Prints nothing when clean; exits
# non-zero on a finding in src/.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
inc=$("$PG_CONFIG" --includedir-server)
cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
    --inline-suppr -I "$inc" -I src -DBACKFILL_VERSION=\"0\" \
    --suppress=missingIncludeSystem --suppress=toomanyconfigs \
    --suppress="*:$inc/*" \
    src/*/*.c
