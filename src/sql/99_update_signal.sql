
-- ---------------------------------------------------------------------
-- Last in every upgrade script (kept when a release empties src/sql/):
-- the signal that the catalog changed.  ALTER EXTENSION UPDATE changes
-- backfill's pg_extension row, which sends no invalidation, so a backend
-- that checked the catalog's version once and still runs the older library
-- would not know.  Rewriting backfill.watches' options (to what they are)
-- sends the relcache invalidation of that table at commit, which empties
-- every backend's cache of watches; the watch trigger checks the version
-- again before it next writes (orchestration/watchcache.c, WatchCatalog).
-- t/032_script_lint.pl checks that the built upgrade script ends with it.
-- ---------------------------------------------------------------------
ALTER TABLE backfill.watches RESET (fillfactor);
