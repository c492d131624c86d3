-- doc/settings.md: the extension, and a role without special rights.
CREATE EXTENSION backfill;
CREATE ROLE etl;
