
-------------------------------------------------------------------------
-- How a target's chunks replace their rows: set_strategy (api/targets.c,
-- orchestration/registry.c; the strategies themselves are in engine/)
-------------------------------------------------------------------------

CREATE FUNCTION backfill.set_strategy(target pg_catalog.regclass,
                                      strategy pg_catalog.text)
RETURNS pg_catalog.text
AS 'MODULE_PATHNAME', 'backfill_set_strategy'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.set_strategy(pg_catalog.regclass, pg_catalog.text) IS
    'Set the strategy of a registered target''s chunks (auto, delete, truncate or swap); returns the previous one.';
