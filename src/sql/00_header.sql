-- backfill upgrade script, 0.1.0 -> 0.2.0.  Built by the Makefile from
-- src/sql/*.sql: one fragment per change of 0.2.0, each written to run on a
-- real 0.1.0 catalog with data in it.  A fresh install runs
-- versions/backfill--0.1.0.sql and then this script.
\echo Use "ALTER EXTENSION backfill UPDATE" to load this file. \quit
