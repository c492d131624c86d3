-- The WHEN clause of watch()'s INSERT row triggers, smaller (issue 30, item
-- 5): backfill._watch_row('<source>'::regclass, '<attnum>'::int2,
-- NEW."<column>"), the time column given by its attribute number in the
-- source.  PostgreSQL reads a trigger's WHEN clause back from its stored
-- text and plans it on every statement; the column's name as a name
-- constant was 64 bytes written out as 64 numbers, most of that text.  The
-- forms taking the column's name stay: the row triggers made with them
-- keep working, and backfill.watch replaces them where its caller owns the
-- source.  Granted to PUBLIC like those: the writer evaluates WHEN.
CREATE FUNCTION backfill._watch_row(source pg_catalog.regclass,
                                    attnum pg_catalog.int2,
                                    t pg_catalog.timestamptz)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_watch_row'
LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION backfill._watch_row(source pg_catalog.regclass,
                                    attnum pg_catalog.int2,
                                    t pg_catalog.timestamp)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_watch_row'
LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION backfill._watch_row(source pg_catalog.regclass,
                                    attnum pg_catalog.int2,
                                    t pg_catalog.date)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_watch_row'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION backfill._watch_row(pg_catalog.regclass, pg_catalog.int2, pg_catalog.timestamptz) IS
    'The WHEN clause of the INSERT row trigger of a watched source, the column by number: notes the row''s chunk; true for the first row of a statement that noted one.';
COMMENT ON FUNCTION backfill._watch_row(pg_catalog.regclass, pg_catalog.int2, pg_catalog.timestamp) IS
    'The WHEN clause of the INSERT row trigger of a watched source, the column by number: notes the row''s chunk; true for the first row of a statement that noted one.';
COMMENT ON FUNCTION backfill._watch_row(pg_catalog.regclass, pg_catalog.int2, pg_catalog.date) IS
    'The WHEN clause of the INSERT row trigger of a watched source, the column by number: notes the row''s chunk; true for the first row of a statement that noted one.';
GRANT EXECUTE ON FUNCTION
    backfill._watch_row(pg_catalog.regclass, pg_catalog.int2, pg_catalog.timestamptz),
    backfill._watch_row(pg_catalog.regclass, pg_catalog.int2, pg_catalog.timestamp),
    backfill._watch_row(pg_catalog.regclass, pg_catalog.int2, pg_catalog.date)
TO PUBLIC;
