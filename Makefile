# backfill: PGXS build.  The version lives only in backfill.control.
EXTENSION  = backfill
EXTVERSION = $(shell sed -n "s/^default_version *= *'\(.*\)'/\1/p" $(EXTENSION).control)

MODULE_big = backfill
OBJS = \
	src/base/settings.o \
	src/base/util.o \
	src/base/spi.o \
	src/base/guard.o \
	src/base/cronrelay.o \
	src/base/catalog.o \
	src/base/identity.o \
	src/base/range.o \
	src/base/compose.o \
	src/base/validate.o \
	src/base/version.o \
	src/base/citus.o \
	src/base/cron.o \
	src/base/cronexpr.o \
	src/base/cronjobs.o \
	src/base/jobguard.o \
	src/base/readers.o \
	src/base/locks.o \
	src/base/names.o \
	src/base/failures.o \
	src/base/notify.o \
	src/engine/ledger.o \
	src/engine/keptleaf.o \
	src/engine/archivestore.o \
	src/engine/archive.o \
	src/engine/archivemove.o \
	src/engine/archivediff.o \
	src/engine/archivepurge.o \
	src/engine/replace.o \
	src/engine/partition.o \
	src/engine/strategy.o \
	src/engine/watchhook.o \
	src/engine/chunkstate.o \
	src/engine/chunk.o \
	src/engine/preview.o \
	src/orchestration/registry.o \
	src/orchestration/export.o \
	src/orchestration/plan.o \
	src/orchestration/tally.o \
	src/orchestration/runstatus.o \
	src/orchestration/run.o \
	src/orchestration/parallel.o \
	src/orchestration/parallelpool.o \
	src/orchestration/parallelstart.o \
	src/orchestration/parallelworker.o \
	src/orchestration/reconcile.o \
	src/orchestration/standing.o \
	src/orchestration/refresh.o \
	src/orchestration/schedule.o \
	src/orchestration/dependencies.o \
	src/orchestration/group.o \
	src/orchestration/lineagereader.o \
	src/orchestration/lineage.o \
	src/orchestration/lineagechart.o \
	src/orchestration/watch.o \
	src/orchestration/watchcall.o \
	src/orchestration/watchinherit.o \
	src/orchestration/watchcache.o \
	src/orchestration/watchevent.o \
	src/orchestration/watchlog.o \
	src/orchestration/watchrecorded.o \
	src/orchestration/watchstatement.o \
	src/orchestration/watchtriggers.o \
	src/orchestration/onlychunks.o \
	src/orchestration/cascade.o \
	src/orchestration/undo.o \
	src/orchestration/replan.o \
	src/orchestration/lifecycle.o \
	src/api/args.o \
	src/api/primitives.o \
	src/api/targets.o \
	src/api/runs.o \
	src/api/pipelines.o \
	src/api/lineage.o \
	src/api/scheduling.o \
	src/api/reconciliation.o \
	src/api/undo.o \
	src/api/regions.o

# Released scripts are kept in versions/ exactly as released
# (versions/SHA256SUMS, versions/RELEASES).  A fresh install of the version
# in development runs the newest release's install script, then the upgrade
# script to this version, assembled from one fragment per change in src/sql/
# (as contrib does): every catalog or API change is written once, as an
# upgrade.
RELEASED   = $(lastword $(shell cut -d' ' -f1 versions/RELEASES))
DATA       = $(wildcard versions/$(EXTENSION)--*.sql)
UPGRADE    = $(EXTENSION)--$(RELEASED)--$(EXTVERSION).sql
SQL_PARTS  = $(sort $(wildcard src/sql/*.sql))
DATA_built = $(UPGRADE)
EXTRA_CLEAN = $(UPGRADE)

# Every file in sql/, specs/ and t/ is a test; nothing to keep in sync by hand.
REGRESS      = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
ISOLATION    = $(patsubst specs/%.spec,%,$(sort $(wildcard specs/*.spec)))
TAP_TESTS    = 1

PG_CPPFLAGS = -I$(srcdir)/src -DBACKFILL_VERSION=\"$(EXTVERSION)\"
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare \
	-Wno-missing-field-initializers -Werror

# A run's summary NOTICE names the time it took; the isolation specs (and
# the regress tests, sql/00_install.sql) leave it out, so that their output
# does not change from one execution to the next.
installcheck: export PGOPTIONS += -c backfill.notice_timing=off

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

$(UPGRADE): $(SQL_PARTS) $(EXTENSION).control
	cat $(SQL_PARTS) > $@

# The library names its version: rebuild it when the version changes.
src/base/version.o: $(EXTENSION).control

# PGXS tracks no header dependencies: every object depends on the headers.
$(OBJS): $(wildcard src/*.h src/*/*.h)
