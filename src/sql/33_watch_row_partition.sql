-- The WHEN clause of watch()'s INSERT row trigger on a partitioned source
-- (issue 30, review 3): backfill._watch_row('<source>'::regclass,
-- NEW.tableoid, NEW."<column>").  The int2 form it replaces named the
-- column by its number in the source, a constant pg_dump keeps while a
-- restore renumbers the columns (a column dropped before the time column
-- is gone from the copy): every INSERT then went unrecorded.  Here every
-- part is resolved by name on restore: the source, and the column NEW
-- names in the partition the trigger is cloned to (PostgreSQL maps a
-- clone's WHEN clause to its partition), whose name is looked up in the
-- row's partition (NEW.tableoid) once per call site.  Granted to PUBLIC
-- like the other forms: the writer evaluates WHEN.
CREATE FUNCTION backfill._watch_row(source pg_catalog.regclass,
                                    tableoid pg_catalog.oid,
                                    t pg_catalog.timestamptz)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_watch_row'
LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION backfill._watch_row(source pg_catalog.regclass,
                                    tableoid pg_catalog.oid,
                                    t pg_catalog.timestamp)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_watch_row'
LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION backfill._watch_row(source pg_catalog.regclass,
                                    tableoid pg_catalog.oid,
                                    t pg_catalog.date)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_watch_row'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION backfill._watch_row(pg_catalog.regclass, pg_catalog.oid, pg_catalog.timestamptz) IS
    'The WHEN clause of the INSERT row trigger of a watched partitioned table, the source, NEW.tableoid and the time column: notes the row''s chunk; true for the first row of a statement that noted one.';
COMMENT ON FUNCTION backfill._watch_row(pg_catalog.regclass, pg_catalog.oid, pg_catalog.timestamp) IS
    'The WHEN clause of the INSERT row trigger of a watched partitioned table, the source, NEW.tableoid and the time column: notes the row''s chunk; true for the first row of a statement that noted one.';
COMMENT ON FUNCTION backfill._watch_row(pg_catalog.regclass, pg_catalog.oid, pg_catalog.date) IS
    'The WHEN clause of the INSERT row trigger of a watched partitioned table, the source, NEW.tableoid and the time column: notes the row''s chunk; true for the first row of a statement that noted one.';
GRANT EXECUTE ON FUNCTION
    backfill._watch_row(pg_catalog.regclass, pg_catalog.oid, pg_catalog.timestamptz),
    backfill._watch_row(pg_catalog.regclass, pg_catalog.oid, pg_catalog.timestamp),
    backfill._watch_row(pg_catalog.regclass, pg_catalog.oid, pg_catalog.date)
TO PUBLIC;
