# backfill: PGXS build.  The version lives only in backfill.control.
EXTENSION  = backfill
EXTVERSION = $(shell sed -n "s/^default_version *= *'\(.*\)'/\1/p" $(EXTENSION).control)

MODULE_big = backfill
OBJS = \
	src/backfill.o \
	src/util.o \
	src/spi_util.o \
	src/catalog.o \
	src/identity.o \
	src/range.o \
	src/validate.o \
	src/strategy.o \
	src/replace.o \
	src/partition.o \
	src/targets.o \
	src/plan.o \
	src/chunk.o \
	src/run.o \
	src/reconcile.o \
	src/standing.o \
	src/schedule.o \
	src/jobguard.o \
	src/citus.o \
	src/pipeline.o

# The install script is assembled from one fragment per concern.
SQL_PARTS  = $(sort $(wildcard src/sql/*.sql))
DATA_built = $(EXTENSION)--$(EXTVERSION).sql
EXTRA_CLEAN = $(EXTENSION)--$(EXTVERSION).sql

# Every file in sql/, specs/ and t/ is a test; nothing to keep in sync by hand.
REGRESS      = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
ISOLATION    = $(patsubst specs/%.spec,%,$(sort $(wildcard specs/*.spec)))
TAP_TESTS    = 1

PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare \
	-Wno-missing-field-initializers -Werror

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

$(EXTENSION)--$(EXTVERSION).sql: $(SQL_PARTS) $(EXTENSION).control
	cat $(SQL_PARTS) > $@
