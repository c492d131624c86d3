-- The WHEN clause of watch()'s INSERT row trigger on a source that is a
-- table (not partitioned), shorter again (issue 30, item 5):
-- backfill._watch_row(NEW.tableoid, NEW."<column>").  The trigger fires
-- only for rows of its own table, so the source is the row's tableoid, and
-- the time column is the one the call passes (its number read from the
-- call's expression): no constant at all.  PostgreSQL reads a trigger's
-- WHEN clause back from its stored text on every statement, and the two
-- constants of the int2 form were a third of that text (571 characters
-- against 391).  A partitioned source keeps the int2 form: its clones
-- fire on the partitions, whose tableoid is not the source.  Granted to
-- PUBLIC like the other forms: the writer evaluates WHEN.
CREATE FUNCTION backfill._watch_row(tableoid pg_catalog.oid,
                                    t pg_catalog.timestamptz)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_watch_row'
LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION backfill._watch_row(tableoid pg_catalog.oid,
                                    t pg_catalog.timestamp)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_watch_row'
LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION backfill._watch_row(tableoid pg_catalog.oid,
                                    t pg_catalog.date)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_watch_row'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION backfill._watch_row(pg_catalog.oid, pg_catalog.timestamptz) IS
    'The WHEN clause of the INSERT row trigger of a watched table, NEW.tableoid and the time column: notes the row''s chunk; true for the first row of a statement that noted one.';
COMMENT ON FUNCTION backfill._watch_row(pg_catalog.oid, pg_catalog.timestamp) IS
    'The WHEN clause of the INSERT row trigger of a watched table, NEW.tableoid and the time column: notes the row''s chunk; true for the first row of a statement that noted one.';
COMMENT ON FUNCTION backfill._watch_row(pg_catalog.oid, pg_catalog.date) IS
    'The WHEN clause of the INSERT row trigger of a watched table, NEW.tableoid and the time column: notes the row''s chunk; true for the first row of a statement that noted one.';
GRANT EXECUTE ON FUNCTION
    backfill._watch_row(pg_catalog.oid, pg_catalog.timestamptz),
    backfill._watch_row(pg_catalog.oid, pg_catalog.timestamp),
    backfill._watch_row(pg_catalog.oid, pg_catalog.date)
TO PUBLIC;
