
-------------------------------------------------------------------------
-- Primitives: split_range, replace_range, _in_range (api/primitives.c;
-- the work in base/range.c, engine/strategy.c and engine/replace.c)
-------------------------------------------------------------------------

CREATE FUNCTION backfill.split_range(range_start pg_catalog.timestamptz,
                                     range_end pg_catalog.timestamptz,
                                     step pg_catalog.interval)
RETURNS TABLE (chunk_no pg_catalog.int4,
               chunk_start pg_catalog.timestamptz,
               chunk_end pg_catalog.timestamptz)
AS 'MODULE_PATHNAME', 'backfill_split_range'
LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION backfill.split_range(pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval) IS
    'Split [range_start, range_end) into half-open chunks; bound k = range_start + k * step in the session TimeZone.';

CREATE FUNCTION backfill.replace_range(target pg_catalog.regclass,
                                       time_column pg_catalog.name,
                                       range_start pg_catalog.timestamptz,
                                       range_end pg_catalog.timestamptz,
                                       source pg_catalog.text,
                                       strategy pg_catalog.text DEFAULT 'auto')
RETURNS TABLE (rows_deleted pg_catalog.int8, rows_inserted pg_catalog.int8)
AS 'MODULE_PATHNAME', 'backfill_replace_range'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.replace_range(pg_catalog.regclass, pg_catalog.name, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.text, pg_catalog.text) IS
    'Replace the target''s rows in [range_start, range_end) by what source yields for $1, $2, in the caller''s transaction.';

-- Row check inside generated INSERTs, in the time column's own type: t
-- itself for a time inside [lo, hi), an error for anything else (NULL
-- included).  Immutable and evaluated in the select list, so that Citus
-- can run the INSERT ... SELECT on the workers (backfill is created there).
CREATE FUNCTION backfill._in_range(t pg_catalog.timestamptz,
                                   lo pg_catalog.timestamptz,
                                   hi pg_catalog.timestamptz)
RETURNS pg_catalog.timestamptz
AS 'MODULE_PATHNAME', 'backfill_in_range'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION backfill._in_range(t pg_catalog.timestamp,
                                   lo pg_catalog.timestamp,
                                   hi pg_catalog.timestamp)
RETURNS pg_catalog.timestamp
AS 'MODULE_PATHNAME', 'backfill_in_range'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION backfill._in_range(t pg_catalog.date,
                                   lo pg_catalog.date,
                                   hi pg_catalog.date)
RETURNS pg_catalog.date
AS 'MODULE_PATHNAME', 'backfill_in_range'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
