-- backfill install script.  Built by the Makefile from src/sql/*.sql.
\echo Use "CREATE EXTENSION backfill" to load this file. \quit

-- CREATE EXTENSION reuses an existing schema named in the control file.
-- Refuse one that a non-superuser owns, that others may create objects
-- in, or that already holds objects: its owner could plant or swap
-- objects that superusers later call (the CVE-2022-2625 family).  A
-- superuser's empty schema is fine: pg_dump writes CREATE SCHEMA backfill
-- (owned by the original superuser) before CREATE EXTENSION.
DO $guard$
DECLARE
    n pg_catalog.pg_namespace;
    why pg_catalog.text;
BEGIN
    SELECT * INTO n FROM pg_catalog.pg_namespace
     WHERE nspname OPERATOR(pg_catalog.=) 'backfill';
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles r
                    WHERE r.oid OPERATOR(pg_catalog.=) n.nspowner
                      AND (r.rolsuper OR r.rolname OPERATOR(pg_catalog.=) CURRENT_USER)) THEN
        why := pg_catalog.format('It is owned by role %s, which is neither a superuser nor the role creating the extension.',
                                 n.nspowner::pg_catalog.regrole);
    ELSIF EXISTS (SELECT FROM pg_catalog.aclexplode(n.nspacl) a
                   WHERE a.grantee OPERATOR(pg_catalog.<>) n.nspowner
                     AND a.privilege_type OPERATOR(pg_catalog.=) 'CREATE') THEN
        why := 'It grants CREATE to other roles.';
    ELSIF EXISTS (SELECT FROM pg_catalog.pg_class
                   WHERE relnamespace OPERATOR(pg_catalog.=) n.oid)
       OR EXISTS (SELECT FROM pg_catalog.pg_proc
                   WHERE pronamespace OPERATOR(pg_catalog.=) n.oid)
       OR EXISTS (SELECT FROM pg_catalog.pg_type
                   WHERE typnamespace OPERATOR(pg_catalog.=) n.oid)
       OR EXISTS (SELECT FROM pg_catalog.pg_operator
                   WHERE oprnamespace OPERATOR(pg_catalog.=) n.oid) THEN
        why := 'It already holds objects.';
    END IF;
    IF why IS NOT NULL THEN
        RAISE EXCEPTION 'schema "backfill" already exists and will not be adopted'
            USING ERRCODE = 'duplicate_schema',
                  DETAIL = why,
                  HINT = 'Drop or rename the schema "backfill", then run CREATE EXTENSION again.';
    END IF;
END
$guard$;

-- The schema is created by CREATE EXTENSION (schema = backfill in the
-- control file); no object below is created with OR REPLACE or IF NOT
-- EXISTS, so a pre-existing object makes the install fail instead of
-- being adopted.

-------------------------------------------------------------------------
-- Catalog tables.  Users never write them: the C code writes them as the
-- extension owner and records the real user.  Row-level security shows a
-- user only the rows of targets they may SELECT.
-------------------------------------------------------------------------

CREATE TABLE backfill.targets (
    target           pg_catalog.regclass PRIMARY KEY,
    target_name      pg_catalog.text NOT NULL,
    time_column      pg_catalog.name NOT NULL,
    chunk            pg_catalog.interval NOT NULL,
    source_retention pg_catalog.interval,
    source_horizon   pg_catalog.text,
    ledger           pg_catalog.text,
    measure          pg_catalog.text NOT NULL DEFAULT 'count(*)',
    -- a finite, non-negative tolerance ('NaN' and 'Infinity' would pass every chunk)
    tolerance        pg_catalog.numeric NOT NULL DEFAULT 0
        CHECK (tolerance >= 0 AND tolerance < 'Infinity'::pg_catalog.numeric),
    ledger_gate      pg_catalog.bool NOT NULL DEFAULT true,
    strategy         pg_catalog.text NOT NULL DEFAULT 'auto',
    current_version  pg_catalog.int4 NOT NULL,
    registered_at    pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    registered_by    pg_catalog.name NOT NULL
);
COMMENT ON TABLE backfill.targets IS
    'Tables registered for backfill: time column, chunk size, retention, ledger and measure.';

CREATE TABLE backfill.definitions (
    target      pg_catalog.regclass NOT NULL,
    version     pg_catalog.int4 NOT NULL CHECK (version > 0),
    label       pg_catalog.text,
    source      pg_catalog.text NOT NULL,
    source_hash pg_catalog.text NOT NULL,
    created_at  pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    created_by  pg_catalog.name NOT NULL,
    -- every registration setting, versioned with the text (the engine
    -- reads these, never backfill.targets); author: who wrote the text,
    -- by OID; it runs only as this role
    author           pg_catalog.oid NOT NULL,
    time_column      pg_catalog.name NOT NULL,
    chunk            pg_catalog.interval NOT NULL,
    source_retention pg_catalog.interval,
    source_horizon   pg_catalog.text,
    ledger           pg_catalog.text,
    measure          pg_catalog.text NOT NULL,
    tolerance        pg_catalog.numeric NOT NULL
        CHECK (tolerance >= 0 AND tolerance < 'Infinity'::pg_catalog.numeric),
    ledger_gate      pg_catalog.bool NOT NULL,
    strategy         pg_catalog.text NOT NULL,
    PRIMARY KEY (target, version)
);
COMMENT ON TABLE backfill.definitions IS
    'Every version of every target''s registration (source, measure, ledger, settings) and its author; never deleted.';

CREATE TABLE backfill.runs (
    run_id             pg_catalog.int8 GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    target             pg_catalog.regclass NOT NULL,
    target_name        pg_catalog.text NOT NULL,
    range_start        pg_catalog.timestamptz NOT NULL,
    range_end          pg_catalog.timestamptz NOT NULL,
    chunk              pg_catalog.interval NOT NULL,
    status             pg_catalog.text NOT NULL DEFAULT 'planned'
        CHECK (status IN ('planned', 'probed', 'failed', 'done', 'cancelled')),
    note               pg_catalog.text,
    probe              pg_catalog.bool NOT NULL,
    backwards          pg_catalog.bool NOT NULL,
    clear_no_source    pg_catalog.bool NOT NULL,
    definition_version pg_catalog.int4 NOT NULL,
    timezone           pg_catalog.text NOT NULL,
    search_path        pg_catalog.text NOT NULL,
    created_at         pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    created_by         pg_catalog.name NOT NULL,
    created_by_oid     pg_catalog.oid NOT NULL,
    finished_at        pg_catalog.timestamptz,
    -- pg_cron scheduling (backfill.schedule)
    job_id             pg_catalog.int8,
    chunks_per_tick    pg_catalog.int4,
    quiet_hours        pg_catalog.text,
    -- why the run cannot go on by itself (a dropped scheduling role, a
    -- pg_cron tick refused for lack of privileges); NULL when fine
    last_error         pg_catalog.text,
    -- the role that owns the run's pg_cron job (cron.job.username), set by
    -- backfill.schedule; kept after the job is removed, as chunks_per_tick
    -- and quiet_hours are, a record of the last schedule
    scheduled_by       pg_catalog.name,
    -- A cascading plan's runs form a group: group_id is the run id of the
    -- run the plan was asked for (the root); upstream_runs are the runs of
    -- the group, of the target's direct upstream targets, whose chunks each
    -- of this run's chunks waits for (the lineage of a downstream chunk:
    -- which upstream run caused it).  NULL for a run planned without cascade.
    group_id           pg_catalog.int8,
    upstream_runs      pg_catalog.int8[],
    CHECK (range_start < range_end)
);
COMMENT ON TABLE backfill.runs IS
    'One row per planned backfill of a range: who, when, why, under which definition.';
COMMENT ON COLUMN backfill.runs.scheduled_by IS
    'The role whose pg_cron job runs this run (set by backfill.schedule).';
COMMENT ON COLUMN backfill.runs.group_id IS
    'The group of a cascading plan (the run id of its root run); NULL outside a group.';
COMMENT ON COLUMN backfill.runs.upstream_runs IS
    'The runs of the same group whose chunks this run''s chunks wait for: which upstream runs caused it.';

CREATE TABLE backfill.chunks (
    run_id          pg_catalog.int8 NOT NULL REFERENCES backfill.runs,
    chunk_no        pg_catalog.int4 NOT NULL CHECK (chunk_no > 0),
    chunk_start     pg_catalog.timestamptz NOT NULL,
    chunk_end       pg_catalog.timestamptz NOT NULL,
    status          pg_catalog.text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'done', 'failed', 'no_source', 'cancelled')),
    attempts        pg_catalog.int4 NOT NULL DEFAULT 0,
    deferrals       pg_catalog.int4 NOT NULL DEFAULT 0,
    strategy        pg_catalog.text,
    rows_deleted    pg_catalog.int8,
    rows_inserted   pg_catalog.int8,
    before_value    pg_catalog.numeric,
    after_value     pg_catalog.numeric,
    ledger_value    pg_catalog.numeric,
    ledger_ok       pg_catalog.bool,
    neighbor_median pg_catalog.numeric,
    neighbor_ok     pg_catalog.bool,
    verdict         pg_catalog.text
        CHECK (verdict IN ('ok', 'ledger_mismatch', 'outlier', 'no_source', 'not_run')),
    started_at      pg_catalog.timestamptz,
    finished_at     pg_catalog.timestamptz,
    executed_by     pg_catalog.name,
    executed_via    pg_catalog.text,
    error_sqlstate  pg_catalog.text,
    error_message   pg_catalog.text,
    error_detail    pg_catalog.text,
    error_hint      pg_catalog.text,
    PRIMARY KEY (run_id, chunk_no),
    CHECK (chunk_start < chunk_end)
);
COMMENT ON TABLE backfill.chunks IS
    'The chunks of each run, numbered from 1 in time order, with their figures and errors.';

CREATE TABLE backfill.checks (
    check_id    pg_catalog.int8 GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    target      pg_catalog.regclass NOT NULL,
    cron        pg_catalog.text NOT NULL,
    lookback    pg_catalog.interval NOT NULL,
    job_id      pg_catalog.int8,
    created_at  pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    created_by  pg_catalog.name NOT NULL,
    created_by_oid pg_catalog.oid NOT NULL,
    last_error  pg_catalog.text     -- e.g. its scheduling role was dropped
);
COMMENT ON TABLE backfill.checks IS
    'Standing validation rules created by backfill.schedule_check.';

CREATE TABLE backfill.check_results (
    result_id       pg_catalog.int8 GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    check_id        pg_catalog.int8 REFERENCES backfill.checks ON DELETE SET NULL,
    target          pg_catalog.regclass NOT NULL,
    checked_at      pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    chunk_start     pg_catalog.timestamptz NOT NULL,
    chunk_end       pg_catalog.timestamptz NOT NULL,
    target_value    pg_catalog.numeric,
    ledger_value    pg_catalog.numeric,
    ledger_ok       pg_catalog.bool,
    neighbor_median pg_catalog.numeric,
    neighbor_ok     pg_catalog.bool,
    verdict         pg_catalog.text NOT NULL,
    checked_by      pg_catalog.name NOT NULL
);
COMMENT ON TABLE backfill.check_results IS
    'Results of scheduled checks, appended on every tick; see backfill.alerts.';

CREATE INDEX chunks_status_idx ON backfill.chunks (run_id, status);
CREATE INDEX runs_target_idx ON backfill.runs (target, status);
CREATE INDEX runs_group_idx ON backfill.runs (group_id) WHERE group_id IS NOT NULL;
CREATE INDEX check_results_target_idx ON backfill.check_results (target, chunk_start, checked_at);

-- pg_dump keeps the history (and the sequences behind the ids).
SELECT pg_catalog.pg_extension_config_dump('backfill.targets', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.definitions', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.runs', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.runs_run_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.chunks', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.checks', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.checks_check_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.check_results', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.check_results_result_id_seq', '');

-- Read access: everyone may SELECT, row-level security filters to the
-- targets the user may SELECT.  No write grants at all.
REVOKE ALL ON ALL TABLES IN SCHEMA backfill FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA backfill FROM PUBLIC;
GRANT USAGE ON SCHEMA backfill TO PUBLIC;
GRANT SELECT ON ALL TABLES IN SCHEMA backfill TO PUBLIC;

ALTER TABLE backfill.targets ENABLE ROW LEVEL SECURITY;
ALTER TABLE backfill.definitions ENABLE ROW LEVEL SECURITY;
ALTER TABLE backfill.runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE backfill.chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE backfill.checks ENABLE ROW LEVEL SECURITY;
ALTER TABLE backfill.check_results ENABLE ROW LEVEL SECURITY;

CREATE POLICY readable_target ON backfill.targets FOR SELECT
    USING (pg_catalog.has_table_privilege(target::pg_catalog.oid, 'SELECT'));
CREATE POLICY readable_target ON backfill.definitions FOR SELECT
    USING (pg_catalog.has_table_privilege(target::pg_catalog.oid, 'SELECT'));
CREATE POLICY readable_target ON backfill.runs FOR SELECT
    USING (pg_catalog.has_table_privilege(target::pg_catalog.oid, 'SELECT'));
CREATE POLICY readable_target ON backfill.chunks FOR SELECT
    USING (EXISTS (SELECT FROM backfill.runs r
                   WHERE r.run_id OPERATOR(pg_catalog.=) chunks.run_id));
CREATE POLICY readable_target ON backfill.checks FOR SELECT
    USING (pg_catalog.has_table_privilege(target::pg_catalog.oid, 'SELECT'));
CREATE POLICY readable_target ON backfill.check_results FOR SELECT
    USING (pg_catalog.has_table_privilege(target::pg_catalog.oid, 'SELECT'));
