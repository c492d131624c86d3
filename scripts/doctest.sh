#!/usr/bin/env bash
# Run the documentation examples (t/060_doc_examples.pl) of some pages, or
# of all of them:
#   bash scripts/doctest.sh [PAGE...]        e.g.  bash scripts/doctest.sh README runs
# PAGE is a page's name (README, runs, walkthrough ...) or path.  Builds and
# installs first, as scripts/test.sh does (BACKFILL_PGROOT is honoured;
# BACKFILL_SKIP_BUILD=1 skips it).  As root it runs as postgres on a copy of
# the tree; on a difference the copy is kept and the pages as psql printed
# them are in its tmp_check/doc_examples/ (diff them against the pages).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${BACKFILL_PGROOT:-}" ]; then
    export PG_CONFIG=$BACKFILL_PGROOT/usr/lib/postgresql/15/bin/pg_config
else
    export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
fi
[ -n "${BACKFILL_SKIP_BUILD:-}" ] || scripts/setup.sh >/dev/null
export BACKFILL_DOC_PAGES="$*"
run() {
    make -s installcheck PG_CONFIG="$PG_CONFIG" REGRESS= ISOLATION= \
        PROVE_TESTS=t/060_doc_examples.pl PROVE_FLAGS=-v
}
if [ "$(id -u)" -eq 0 ]; then
    work=$(mktemp -d /tmp/backfill-doctest.XXXXXX)
    cp -a . "$work/tree"
    chown -R postgres: "$work"
    chmod 755 "$work"
    status=0
    export -f run
    runuser -u postgres -- env PG_CONFIG="$PG_CONFIG" BACKFILL_DOC_PAGES="$BACKFILL_DOC_PAGES" \
        bash -c "cd '$work/tree' && run" || status=$?
    if [ $status -eq 0 ]; then
        rm -rf "$work"
    else
        echo "the pages as psql printed them: $work/tree/tmp_check/doc_examples/"
    fi
    exit $status
fi
run
