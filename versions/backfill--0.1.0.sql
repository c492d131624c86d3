-- backfill 0.1.0 install script, frozen as released (versions/SHA256SUMS).
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

-------------------------------------------------------------------------
-- Targets, runs and chunks: register and unregister (api/targets.c,
-- orchestration/registry.c); plan, run, backfill, cancel and preview
-- (api/runs.c; orchestration/cascade.c, plan.c, run.c, engine/chunk.c)
-------------------------------------------------------------------------

CREATE FUNCTION backfill.register(target pg_catalog.regclass,
                                  time_column pg_catalog.name,
                                  source pg_catalog.text,
                                  definition pg_catalog.text DEFAULT NULL,
                                  chunk pg_catalog.interval DEFAULT '1 day',
                                  source_retention pg_catalog.interval DEFAULT NULL,
                                  source_horizon pg_catalog.text DEFAULT NULL,
                                  ledger pg_catalog.text DEFAULT NULL,
                                  measure pg_catalog.text DEFAULT 'count(*)',
                                  tolerance pg_catalog.numeric DEFAULT 0,
                                  ledger_gate pg_catalog.bool DEFAULT true)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'backfill_register'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.register(pg_catalog.regclass, pg_catalog.name, pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.numeric, pg_catalog.bool) IS
    'Register (or re-register) a target; returns the current definition version.';

CREATE FUNCTION backfill.unregister(target pg_catalog.regclass,
                                    cascade pg_catalog.bool DEFAULT false)
RETURNS pg_catalog.void
AS 'MODULE_PATHNAME', 'backfill_unregister'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.unregister(pg_catalog.regclass, pg_catalog.bool) IS
    'Forget a target; refused while it has unfinished runs, or dependents unless cascade.  History stays.';

CREATE FUNCTION backfill.plan(target pg_catalog.regclass,
                              range_start pg_catalog.timestamptz,
                              range_end pg_catalog.timestamptz,
                              chunk pg_catalog.interval DEFAULT NULL,
                              note pg_catalog.text DEFAULT NULL,
                              probe pg_catalog.bool DEFAULT true,
                              backwards pg_catalog.bool DEFAULT false,
                              clear_no_source pg_catalog.bool DEFAULT false,
                              only_chunks pg_catalog.text DEFAULT NULL,
                              cascade pg_catalog.bool DEFAULT false)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'backfill_plan'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.plan(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.bool, pg_catalog.bool, pg_catalog.bool, pg_catalog.text, pg_catalog.bool) IS
    'Create a run and its chunks for [range_start, range_end) (only the chunks that need it, and the downstream runs with cascade); executes nothing.';

-- A C procedure with no SET clause and SECURITY INVOKER: it commits per chunk.
CREATE PROCEDURE backfill.run(run_id pg_catalog.int8,
                              max_chunks pg_catalog.int4 DEFAULT NULL)
AS 'MODULE_PATHNAME', 'backfill_run'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.run(pg_catalog.int8, pg_catalog.int4) IS
    'Execute the pending chunks of a run, one transaction per chunk.';

CREATE PROCEDURE backfill.backfill(target pg_catalog.regclass,
                                   range_start pg_catalog.timestamptz,
                                   range_end pg_catalog.timestamptz,
                                   chunk pg_catalog.interval DEFAULT NULL,
                                   note pg_catalog.text DEFAULT NULL)
AS 'MODULE_PATHNAME', 'backfill_backfill'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.backfill(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text) IS
    'Plan without a probe and run to the end: for small ranges.';

CREATE FUNCTION backfill.cancel(run_id pg_catalog.int8)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'backfill_cancel'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.cancel(pg_catalog.int8) IS
    'Cancel the pending chunks of a run and remove its schedule; returns the chunks cancelled.';

CREATE FUNCTION backfill.preview(target pg_catalog.regclass,
                                 range_start pg_catalog.timestamptz,
                                 range_end pg_catalog.timestamptz)
RETURNS TABLE (rows_deleted pg_catalog.int8,
               rows_inserted pg_catalog.int8,
               before_value pg_catalog.numeric,
               after_value pg_catalog.numeric,
               ledger_value pg_catalog.numeric)
AS 'MODULE_PATHNAME', 'backfill_preview'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.preview(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) IS
    'What replacing the range would do, computed and rolled back.';

-- The chunk engine's lookups of the next chunk to execute and of whether
-- any is left (engine/chunk.c: NextChunk, RemainingChunks): the chunks
-- still to do, in chunk order, so that a run of 100,000 chunks never
-- rescans the ones already done.  The predicates are spelled exactly as
-- in those queries (TODO_PENDING, TODO_NO_SOURCE).
CREATE INDEX chunks_todo_idx ON backfill.chunks (run_id, chunk_no)
    WHERE status OPERATOR(pg_catalog.=) ANY ('{pending,failed}'::pg_catalog.text[]);
CREATE INDEX chunks_no_source_todo_idx ON backfill.chunks (run_id, chunk_no)
    WHERE status OPERATOR(pg_catalog.=) 'no_source' AND finished_at IS NULL;

-------------------------------------------------------------------------
-- Monitoring and lineage: history, progress, lineage(), changes()
--
-- Everything here only reads the catalog.  The views are security
-- invokers and the functions are plain SECURITY INVOKER functions, so the
-- catalog's row-level security applies to the reader: a user sees the
-- runs and chunks of the targets they may SELECT, nothing else.  Every
-- reference is schema-qualified and every operator written as
-- OPERATOR(pg_catalog.x); the functions, whose bodies are parsed when they
-- are called, also pin search_path (SET search_path = pg_catalog,
-- pg_temp), so the caller's search_path changes nothing, not even an
-- implicit operator.
-------------------------------------------------------------------------

-- One row per finished chunk: the chunks a run has reached and settled
-- (done, failed, or no_source).  Pending and cancelled chunks never ran
-- and are left out.  A no_source chunk counts as reached once it has a
-- finished_at, or once its run is done (then the run's finished_at
-- stands in for it).
CREATE VIEW backfill.history WITH (security_invoker = true) AS
SELECT r.target,
       c.run_id,
       c.chunk_no,
       c.chunk_start,
       c.chunk_end,
       c.status,
       r.definition_version,
       d.label AS definition_label,
       c.rows_deleted,
       c.rows_inserted,
       c.before_value,
       c.after_value,
       c.ledger_value,
       c.verdict,
       c.strategy,
       c.started_at,
       COALESCE(c.finished_at, r.finished_at) AS finished_at,
       c.executed_by,
       c.executed_via,
       r.note,
       c.attempts,
       c.error_sqlstate,
       c.error_message,
       r.target_name
  FROM backfill.chunks c
  JOIN backfill.runs r
    ON r.run_id OPERATOR(pg_catalog.=) c.run_id
  LEFT JOIN backfill.definitions d
    ON d.target OPERATOR(pg_catalog.=) r.target
   AND d.version OPERATOR(pg_catalog.=) r.definition_version
 WHERE (c.status OPERATOR(pg_catalog.=) 'done'
        AND c.finished_at IS NOT NULL)
    OR (c.status OPERATOR(pg_catalog.=) 'failed'
        AND c.finished_at IS NOT NULL)
    OR (c.status OPERATOR(pg_catalog.=) 'no_source'
        AND (c.finished_at IS NOT NULL
             OR r.status OPERATOR(pg_catalog.=) 'done'));
COMMENT ON VIEW backfill.history IS
    'One row per finished chunk (done, failed, no_source): range, run, definition, figures, who, when, and the run''s note.';

-- One row per unfinished run (planned, probed, failed).  pid is the
-- backend that holds the run's session-level lock right now
-- (BackfillLockTag: classid BACKFILL_LOCK_CLASS_RUN = 0x42460001, objid the
-- run id, objsubid BACKFILL_LOCK_SUBID = 16966, a key the SQL advisory lock
-- functions cannot take, so no user can make a run look busy), so a
-- crashed or killed backend can never leave a run looking busy.
CREATE VIEW backfill.progress WITH (security_invoker = true) AS
SELECT r.run_id,
       r.target,
       r.status,
       s.chunks_total,
       s.chunks_done,
       s.chunks_failed,
       s.chunks_no_source,
       CASE WHEN s.chunks_total OPERATOR(pg_catalog.>) 0
            THEN pg_catalog.round(100::pg_catalog.numeric
                                  OPERATOR(pg_catalog.*) s.chunks_settled
                                  OPERATOR(pg_catalog./) s.chunks_total, 1)
       END AS percent,
       s.rows_inserted,
       CASE WHEN s.first_started IS NULL THEN NULL
            WHEN lk.pid IS NOT NULL
            THEN pg_catalog.now() OPERATOR(pg_catalog.-) s.first_started
            ELSE s.last_finished OPERATOR(pg_catalog.-) s.first_started
       END AS elapsed,
       CASE WHEN s.chunks_total OPERATOR(pg_catalog.=) s.chunks_settled
            THEN '0'::pg_catalog.interval
            ELSE s.avg_chunk
                 OPERATOR(pg_catalog.*)
                 (s.chunks_total OPERATOR(pg_catalog.-) s.chunks_settled)::pg_catalog.float8
       END AS eta,
       lk.pid,
       s.chunks_pending,
       s.chunks_via_cron,
       s.last_executed_via,
       s.last_finished AS last_finished_at,
       r.job_id,
       r.last_error
  FROM backfill.runs r
 CROSS JOIN LATERAL (
       SELECT pg_catalog.count(*) AS chunks_total,
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'done') AS chunks_done,
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'failed') AS chunks_failed,
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'no_source') AS chunks_no_source,
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'pending') AS chunks_pending,
              -- chunks that need no more work: done, and no_source
              -- unless the run still has to clear them
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'done'
                     OR (c.status OPERATOR(pg_catalog.=) 'no_source'
                         AND (c.finished_at IS NOT NULL
                              OR NOT r.clear_no_source))) AS chunks_settled,
              pg_catalog.count(*) FILTER (
                  WHERE c.executed_via OPERATOR(pg_catalog.=) 'pg_cron'
                    AND c.finished_at IS NOT NULL) AS chunks_via_cron,
              COALESCE(pg_catalog.sum(c.rows_inserted) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'done'), 0) AS rows_inserted,
              pg_catalog.min(c.started_at) AS first_started,
              pg_catalog.max(c.finished_at) AS last_finished,
              pg_catalog.avg(c.finished_at OPERATOR(pg_catalog.-) c.started_at) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'done'
                    AND c.started_at IS NOT NULL
                    AND c.finished_at IS NOT NULL) AS avg_chunk,
              (pg_catalog.array_agg(c.executed_via
                                    ORDER BY c.finished_at DESC, c.chunk_no DESC)
                   FILTER (WHERE c.finished_at IS NOT NULL))[1] AS last_executed_via
         FROM backfill.chunks c
        WHERE c.run_id OPERATOR(pg_catalog.=) r.run_id) s
  LEFT JOIN (
       SELECT l.objid, pg_catalog.min(l.pid) AS pid
         FROM pg_catalog.pg_locks l
        WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory'
          AND l.database OPERATOR(pg_catalog.=)
              (SELECT db.oid FROM pg_catalog.pg_database db
                WHERE db.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
          AND l.classid OPERATOR(pg_catalog.=) 1111883777::pg_catalog.oid
          AND l.objsubid OPERATOR(pg_catalog.=) 16966
          AND l.granted
        GROUP BY l.objid) lk
    ON lk.objid OPERATOR(pg_catalog.=)
       (r.run_id OPERATOR(pg_catalog.&) 4294967295)::pg_catalog.oid
 WHERE r.status OPERATOR(pg_catalog.=) 'planned'
    OR r.status OPERATOR(pg_catalog.=) 'probed'
    OR r.status OPERATOR(pg_catalog.=) 'failed';
COMMENT ON VIEW backfill.progress IS
    'One row per unfinished run: chunk counts, percent, rows, elapsed, eta, and the backend executing it now (pid).';

GRANT SELECT ON backfill.history, backfill.progress TO PUBLIC;

-- The pieces of a target's history over [range_start, range_end), and the
-- one rule of which run wins each: lineage() below, lineage_chart and
-- plan's only_chunks (orchestration/lineage.c, ClassifyPieces) all read it
-- here.  The chunks that reached their range (done or failed, once
-- finished; no_source, once cleared or once its run is done; cancelled)
-- are merged, per run, into islands of contiguous chunks with the same
-- status, executor and clearing; the range is cut at every island bound
-- and at its own ends; on each piece, the island that finished last (then
-- the higher run id) wins.  Per piece, in order: the settled winner (a
-- done or no_source island: its run, chunk status, definition version,
-- executor, whether its rows were cleared, and the last finished_at of
-- that run's settled chunks on the piece), all NULL where nothing settled
-- it, and the status of the latest attempt of any kind.  Internal: its
-- callers filter and present it.  SET jit = off: the planner cannot see
-- through the CTEs and estimates millions of rows for a few dozen pieces,
-- and JIT would then spend seconds compiling a query that runs in
-- milliseconds.  Only input parameters are named in a SQL
-- function body, and they are referred to as $1 (target), $2
-- (range_start), $3 (range_end).
CREATE FUNCTION backfill._lineage_pieces(target pg_catalog.regclass,
                                         range_start pg_catalog.timestamptz,
                                         range_end pg_catalog.timestamptz)
RETURNS TABLE (piece_start pg_catalog.timestamptz,
               piece_end pg_catalog.timestamptz,
               run_id pg_catalog.int8,
               settled_status pg_catalog.text,
               definition_version pg_catalog.int4,
               executed_by pg_catalog.name,
               cleared pg_catalog.bool,
               finished_at pg_catalog.timestamptz,
               latest_status pg_catalog.text)
LANGUAGE sql STABLE
SET jit = off
SET search_path = pg_catalog, pg_temp
AS $pieces$
WITH attempts AS (
    SELECT c.run_id,
           c.chunk_start,
           c.chunk_end,
           c.status,
           c.status OPERATOR(pg_catalog.=) ANY ('{done,no_source}'::pg_catalog.text[]) AS settled,
           r.definition_version AS version,
           c.executed_by,
           c.finished_at IS NOT NULL AS cleared,
           COALESCE(c.finished_at, r.finished_at) AS finished_at
      FROM backfill.chunks c
      JOIN backfill.runs r
        ON r.run_id OPERATOR(pg_catalog.=) c.run_id
     WHERE r.target OPERATOR(pg_catalog.=) $1
       AND c.chunk_end OPERATOR(pg_catalog.>) $2
       AND c.chunk_start OPERATOR(pg_catalog.<) $3
       AND ((c.status OPERATOR(pg_catalog.=) ANY ('{done,failed}'::pg_catalog.text[])
             AND c.finished_at IS NOT NULL)
            OR (c.status OPERATOR(pg_catalog.=) 'no_source'
                AND (c.finished_at IS NOT NULL
                     OR r.status OPERATOR(pg_catalog.=) 'done'))
            OR c.status OPERATOR(pg_catalog.=) 'cancelled')
),
marked AS (
    SELECT a.*,
           CASE WHEN pg_catalog.lag(a.chunk_end) OVER w OPERATOR(pg_catalog.=) a.chunk_start
                 AND pg_catalog.lag(a.status) OVER w OPERATOR(pg_catalog.=) a.status
                 AND pg_catalog.lag(a.cleared) OVER w OPERATOR(pg_catalog.=) a.cleared
                 AND (pg_catalog.lag(a.executed_by) OVER w OPERATOR(pg_catalog.=) a.executed_by
                      OR (pg_catalog.lag(a.executed_by) OVER w IS NULL
                          AND a.executed_by IS NULL))
                THEN 0 ELSE 1
           END AS brk
      FROM attempts a
    WINDOW w AS (PARTITION BY a.run_id ORDER BY a.chunk_start)
),
numbered AS (
    SELECT m.*,
           pg_catalog.sum(m.brk) OVER (PARTITION BY m.run_id ORDER BY m.chunk_start) AS island
      FROM marked m
),
islands AS (
    SELECT n.run_id,
           n.island,
           pg_catalog.min(n.chunk_start) AS lo,
           pg_catalog.max(n.chunk_end) AS hi,
           n.status,
           n.settled,
           n.version,
           n.executed_by,
           n.cleared,
           pg_catalog.max(n.finished_at) AS finished_at
      FROM numbered n
     GROUP BY n.run_id, n.island, n.status, n.settled, n.version,
              n.executed_by, n.cleared
),
bounds AS (
    SELECT GREATEST(i.lo, $2) AS t FROM islands i
    UNION
    SELECT LEAST(i.hi, $3) FROM islands i
    UNION
    SELECT $2
    UNION
    SELECT $3
),
pieces AS (
    SELECT b.t AS lo, pg_catalog.lead(b.t) OVER (ORDER BY b.t) AS hi
      FROM bounds b
),
-- the rule: of the islands that cover a piece, the one that finished
-- last wins, then the one of the higher run id
ranked AS (
    SELECT p.lo AS piece_lo,
           p.hi AS piece_hi,
           i.run_id,
           i.island,
           i.status,
           i.settled,
           i.version,
           i.executed_by,
           i.cleared,
           pg_catalog.row_number() OVER (PARTITION BY p.lo
                                         ORDER BY i.finished_at DESC NULLS LAST,
                                                  i.run_id DESC) AS rank
      FROM pieces p
      JOIN islands i
        ON i.lo OPERATOR(pg_catalog.<=) p.lo
       AND i.hi OPERATOR(pg_catalog.>=) p.hi
     WHERE p.hi IS NOT NULL
),
settled_winner AS (
    SELECT DISTINCT ON (r.piece_lo) r.*
      FROM ranked r
     WHERE r.settled
     ORDER BY r.piece_lo, r.rank
),
-- the last finished_at of the winning island's chunks on each piece (the
-- run's other chunks lie outside the island, so off the piece)
winner_finished AS (
    SELECT w.piece_lo, pg_catalog.max(n.finished_at) AS finished_at
      FROM settled_winner w
      JOIN numbered n
        ON n.run_id OPERATOR(pg_catalog.=) w.run_id
       AND n.island OPERATOR(pg_catalog.=) w.island
     WHERE n.chunk_start OPERATOR(pg_catalog.<) w.piece_hi
       AND n.chunk_end OPERATOR(pg_catalog.>) w.piece_lo
     GROUP BY w.piece_lo
),
latest AS (
    SELECT r.piece_lo, r.status
      FROM ranked r
     WHERE r.rank OPERATOR(pg_catalog.=) 1
)
SELECT p.lo,
       p.hi,
       w.run_id,
       w.status,
       w.version,
       w.executed_by,
       w.cleared,
       f.finished_at,
       l.status
  FROM pieces p
  LEFT JOIN settled_winner w
    ON w.piece_lo OPERATOR(pg_catalog.=) p.lo
  LEFT JOIN winner_finished f
    ON f.piece_lo OPERATOR(pg_catalog.=) p.lo
  LEFT JOIN latest l
    ON l.piece_lo OPERATOR(pg_catalog.=) p.lo
 WHERE p.hi IS NOT NULL
 ORDER BY p.lo
$pieces$;
COMMENT ON FUNCTION backfill._lineage_pieces(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) IS
    'Internal: the pieces of a target''s history and which run wins each (the rule of lineage, lineage_chart and only_chunks).';

-- Merged lineage of a target over [range_start, range_end): the pieces
-- that a settled run wins (_lineage_pieces, done -> backfilled, no_source
-- -> no_source), adjacent pieces of the same run, state, executor and
-- clearing merged again, each with the last finished_at of that run's
-- chunks in it.  Only input parameters are named in a SQL function body,
-- and they are referred to as $1 (target), $2 (range_start), $3
-- (range_end).
CREATE FUNCTION backfill.lineage(target pg_catalog.regclass,
                                 range_start pg_catalog.timestamptz DEFAULT '-infinity',
                                 range_end pg_catalog.timestamptz DEFAULT 'infinity')
RETURNS TABLE (range_start pg_catalog.timestamptz,
               range_end pg_catalog.timestamptz,
               state pg_catalog.text,
               definition_version pg_catalog.int4,
               label pg_catalog.text,
               run_id pg_catalog.int8,
               finished_at pg_catalog.timestamptz,
               executed_by pg_catalog.name)
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $lineage$
WITH won AS (
    SELECT p.*
      FROM backfill._lineage_pieces($1, $2, $3) p
     WHERE p.run_id IS NOT NULL
),
marked AS (
    SELECT w.*,
           CASE WHEN pg_catalog.lag(w.piece_end) OVER o OPERATOR(pg_catalog.=) w.piece_start
                 AND pg_catalog.lag(w.run_id) OVER o OPERATOR(pg_catalog.=) w.run_id
                 AND pg_catalog.lag(w.settled_status) OVER o OPERATOR(pg_catalog.=) w.settled_status
                 AND pg_catalog.lag(w.cleared) OVER o OPERATOR(pg_catalog.=) w.cleared
                 AND (pg_catalog.lag(w.executed_by) OVER o OPERATOR(pg_catalog.=) w.executed_by
                      OR (pg_catalog.lag(w.executed_by) OVER o IS NULL
                          AND w.executed_by IS NULL))
                THEN 0 ELSE 1
           END AS brk
      FROM won w
    WINDOW o AS (ORDER BY w.piece_start)
),
grouped AS (
    SELECT m.*, pg_catalog.sum(m.brk) OVER (ORDER BY m.piece_start) AS grp
      FROM marked m
)
SELECT pg_catalog.min(g.piece_start),
       pg_catalog.max(g.piece_end),
       CASE g.settled_status WHEN 'done' THEN 'backfilled'::pg_catalog.text
                             ELSE 'no_source'::pg_catalog.text
       END,
       g.definition_version,
       d.label,
       g.run_id,
       pg_catalog.max(g.finished_at),
       g.executed_by
  FROM grouped g
  LEFT JOIN backfill.definitions d
    ON d.target OPERATOR(pg_catalog.=) $1
   AND d.version OPERATOR(pg_catalog.=) g.definition_version
 GROUP BY g.grp, g.settled_status, g.definition_version, d.label, g.run_id,
          g.executed_by
 ORDER BY 1
$lineage$;
COMMENT ON FUNCTION backfill.lineage(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) IS
    'Merged ranges of a target with their state (backfilled or no_source), definition, run, time and executor; the latest run wins where runs overlap.';

-- Why the numbers moved: the measure before and after each done chunk of
-- a run.  delta_pct is rounded to two decimals and NULL when the figure
-- before was 0 or NULL.  A run the caller cannot see is reported as not
-- existing, like one that does not.
CREATE FUNCTION backfill.changes(run_id pg_catalog.int8)
RETURNS TABLE (chunk_no pg_catalog.int4,
               chunk_start pg_catalog.timestamptz,
               chunk_end pg_catalog.timestamptz,
               before_value pg_catalog.numeric,
               after_value pg_catalog.numeric,
               delta pg_catalog.numeric,
               delta_pct pg_catalog.numeric)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $changes$
BEGIN
    IF $1 IS NULL THEN
        RAISE EXCEPTION 'run_id must not be null'
            USING ERRCODE := 'null_value_not_allowed';
    END IF;
    PERFORM FROM backfill.runs r WHERE r.run_id OPERATOR(pg_catalog.=) $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'run % does not exist', $1
            USING ERRCODE := 'undefined_object',
                  HINT := 'The runs you may see are listed in backfill.runs.';
    END IF;
    RETURN QUERY
    SELECT c.chunk_no,
           c.chunk_start,
           c.chunk_end,
           c.before_value,
           c.after_value,
           c.after_value OPERATOR(pg_catalog.-) c.before_value,
           CASE WHEN c.before_value OPERATOR(pg_catalog.=) 0 THEN NULL
                ELSE pg_catalog.round(100::pg_catalog.numeric
                                      OPERATOR(pg_catalog.*)
                                      (c.after_value OPERATOR(pg_catalog.-) c.before_value)
                                      OPERATOR(pg_catalog./) c.before_value, 2)
           END
      FROM backfill.chunks c
     WHERE c.run_id OPERATOR(pg_catalog.=) $1
       AND c.status OPERATOR(pg_catalog.=) 'done'
     ORDER BY c.chunk_no;
END
$changes$;
COMMENT ON FUNCTION backfill.changes(pg_catalog.int8) IS
    'Per done chunk of a run: the measure before and after, delta and delta_pct: why the numbers moved.';

-------------------------------------------------------------------------
-- Reconciliation and validation (api/reconciliation.c;
-- orchestration/reconcile.c, standing.c)
-------------------------------------------------------------------------

CREATE FUNCTION backfill.reconcile(run_id pg_catalog.int8)
RETURNS TABLE (chunk_no pg_catalog.int4,
               chunk_start pg_catalog.timestamptz,
               chunk_end pg_catalog.timestamptz,
               status pg_catalog.text,
               target_value pg_catalog.numeric,
               ledger_value pg_catalog.numeric,
               ledger_ok pg_catalog.bool,
               neighbor_median pg_catalog.numeric,
               neighbor_ok pg_catalog.bool,
               verdict pg_catalog.text)
AS 'MODULE_PATHNAME', 'backfill_reconcile'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.reconcile(pg_catalog.int8) IS
    'Compare every chunk of a run with the ledger and with the chunks around the range.';

CREATE FUNCTION backfill."check"(target pg_catalog.regclass,
                                 range_start pg_catalog.timestamptz,
                                 range_end pg_catalog.timestamptz)
RETURNS TABLE (chunk_no pg_catalog.int4,
               chunk_start pg_catalog.timestamptz,
               chunk_end pg_catalog.timestamptz,
               status pg_catalog.text,
               target_value pg_catalog.numeric,
               ledger_value pg_catalog.numeric,
               ledger_ok pg_catalog.bool,
               neighbor_median pg_catalog.numeric,
               neighbor_ok pg_catalog.bool,
               verdict pg_catalog.text)
AS 'MODULE_PATHNAME', 'backfill_check'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill."check"(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) IS
    'The reconcile comparison for any range of a registered target, run or not.';

CREATE FUNCTION backfill.schedule_check(target pg_catalog.regclass,
                                        cron pg_catalog.text,
                                        lookback pg_catalog.interval DEFAULT '7 days')
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'backfill_schedule_check'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.schedule_check(pg_catalog.regclass, pg_catalog.text, pg_catalog.interval) IS
    'A pg_cron job that checks the last lookback on every tick into backfill.check_results.';

CREATE FUNCTION backfill.unschedule_check(check_id pg_catalog.int8)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_unschedule_check'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.unschedule_check(pg_catalog.int8) IS
    'Remove a standing check''s pg_cron job; its results stay.';

-- What a scheduled check's cron job calls; the command holds only the id.
CREATE FUNCTION backfill.run_check(check_id pg_catalog.int8)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'backfill_run_check'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.run_check(pg_catalog.int8) IS
    'Run a standing check now and append its results; returns the number of failing chunks.';

-- The failing results of standing checks that still stand: for each target
-- and chunk range, the latest result, when it is failing (a later ok or
-- no_source result for the same range supersedes it).  failing_since is
-- the first failing result after the last one that was not failing.
CREATE VIEW backfill.alerts WITH (security_invoker = true) AS
SELECT l.result_id, l.check_id, l.target, l.chunk_start, l.chunk_end,
       l.verdict, l.target_value, l.ledger_value, l.ledger_ok,
       l.neighbor_median, l.neighbor_ok, l.checked_at, l.checked_by,
       (SELECT pg_catalog.min(f.checked_at)
          FROM backfill.check_results f
         WHERE f.target OPERATOR(pg_catalog.=) l.target
           AND f.chunk_start OPERATOR(pg_catalog.=) l.chunk_start
           AND f.chunk_end OPERATOR(pg_catalog.=) l.chunk_end
           AND f.verdict OPERATOR(pg_catalog.=) ANY (ARRAY['ledger_mismatch', 'outlier'])
           AND NOT EXISTS (
                 SELECT FROM backfill.check_results p
                  WHERE p.target OPERATOR(pg_catalog.=) l.target
                    AND p.chunk_start OPERATOR(pg_catalog.=) l.chunk_start
                    AND p.chunk_end OPERATOR(pg_catalog.=) l.chunk_end
                    AND p.verdict OPERATOR(pg_catalog.<>) ALL (ARRAY['ledger_mismatch', 'outlier'])
                    AND p.checked_at OPERATOR(pg_catalog.>=) f.checked_at)) AS failing_since
  FROM (SELECT DISTINCT ON (r.target, r.chunk_start, r.chunk_end) r.*
          FROM backfill.check_results r
         ORDER BY r.target, r.chunk_start, r.chunk_end,
                  r.checked_at DESC, r.result_id DESC) l
 WHERE l.verdict OPERATOR(pg_catalog.=) ANY (ARRAY['ledger_mismatch', 'outlier']);
COMMENT ON VIEW backfill.alerts IS
    'Failing standing-check results not superseded by a later passing result for the same range.';

-------------------------------------------------------------------------
-- Scheduling with pg_cron and yielding to the daily job
-- (api/scheduling.c; orchestration/schedule.c, base/cron.c)
-------------------------------------------------------------------------

CREATE FUNCTION backfill.schedule(run_id pg_catalog.int8,
                                  cron pg_catalog.text DEFAULT '*/5 * * * *',
                                  chunks_per_tick pg_catalog.int4 DEFAULT 1,
                                  quiet_hours pg_catalog.text DEFAULT NULL)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'backfill_schedule'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.schedule(pg_catalog.int8, pg_catalog.text, pg_catalog.int4, pg_catalog.text) IS
    'Hand the rest of a run to pg_cron; returns the job id.';

CREATE FUNCTION backfill.unschedule(run_id pg_catalog.int8)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_unschedule'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.unschedule(pg_catalog.int8) IS
    'Remove a run''s pg_cron job; true if there was one.';

CREATE FUNCTION backfill.cleanup_jobs()
RETURNS TABLE (job_id pg_catalog.int8, job_name pg_catalog.text,
               username pg_catalog.text)
AS 'MODULE_PATHNAME', 'backfill_cleanup_jobs'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.cleanup_jobs() IS
    'Superusers: remove the pg_cron jobs of runs and checks whose scheduling role was dropped.';

CREATE FUNCTION backfill.lock_target(target pg_catalog.regclass)
RETURNS pg_catalog.void
AS 'MODULE_PATHNAME', 'backfill_lock_target'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.lock_target(pg_catalog.regclass) IS
    'Called by the daily job at the start of its transaction: backfill chunks wait for it.';

CREATE FUNCTION backfill.in_quiet_hours(quiet_hours pg_catalog.text,
                                        timezone pg_catalog.text,
                                        at pg_catalog.timestamptz DEFAULT pg_catalog.now())
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_in_quiet_hours'
LANGUAGE C STABLE;
COMMENT ON FUNCTION backfill.in_quiet_hours(pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz) IS
    'Whether a time lies inside a local quiet-hours span such as ''22:00-06:00''.';

-------------------------------------------------------------------------
-- The scheduling-role guard (base/jobguard.c; the event trigger's entry
-- point in api/scheduling.c): pg_cron records a job's role by name only,
-- and a job whose role is gone stops the pg_cron scheduler for everyone.
-- A role that owns a backfill job holds an explicit SELECT grant on
-- backfill.scheduled_jobs (made by schedule and schedule_check, revoked
-- when its last job goes), so DROP ROLE refuses it:
--   DETAIL:  privileges for view backfill.scheduled_jobs
-- and the event trigger below removes the jobs of a role whose grant went
-- with DROP OWNED or REVOKE.  runs.scheduled_by (00_catalog.sql) records
-- the role of a run's job.
-------------------------------------------------------------------------

-- Every pg_cron job of backfill, with the role it runs as.  finished: a
-- run that no longer needs its job (done, failed or cancelled); the tick
-- that finished it parked the job (it never fires), and the next backfill
-- tick, schedule, unschedule or cleanup_jobs removes it.
CREATE VIEW backfill.scheduled_jobs WITH (security_invoker = true) AS
SELECT 'run'::pg_catalog.text AS kind,
       r.run_id AS id,
       r.target,
       r.job_id,
       r.scheduled_by AS username,
       r.status OPERATOR(pg_catalog.=) ANY ('{done,failed,cancelled}'::pg_catalog.text[]) AS finished
  FROM backfill.runs r
 WHERE r.job_id IS NOT NULL
UNION ALL
SELECT 'check'::pg_catalog.text,
       c.check_id,
       c.target,
       c.job_id,
       c.created_by,
       false
  FROM backfill.checks c
 WHERE c.job_id IS NOT NULL;
COMMENT ON VIEW backfill.scheduled_jobs IS
    'The pg_cron jobs of backfill''s runs and standing checks and the roles they run as; a role with one holds a grant on this view, so DROP ROLE refuses it until its jobs are gone.';

-- Fired by DROP OWNED and REVOKE: the named roles that have backfill jobs
-- but no longer hold their grant on backfill.scheduled_jobs lose the jobs
-- (removed as the extension owner, runs.last_error and checks.last_error
-- say why).  Runs as the user who ran the command.
CREATE FUNCTION backfill._job_guard()
RETURNS pg_catalog.event_trigger
AS 'MODULE_PATHNAME', 'backfill_job_guard'
LANGUAGE C;
COMMENT ON FUNCTION backfill._job_guard() IS
    'Event trigger: remove the pg_cron jobs of roles whose grant on backfill.scheduled_jobs went with DROP OWNED or REVOKE.';

CREATE EVENT TRIGGER backfill_job_guard ON ddl_command_end
    WHEN TAG IN ('DROP OWNED', 'REVOKE')
    EXECUTE FUNCTION backfill._job_guard();

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

-------------------------------------------------------------------------
-- Pipelines: dependencies between targets, groups of runs planned by a
-- cascading plan, and the lineage chart (api/pipelines.c;
-- orchestration/dependencies.c, cascade.c, group.c, run.c, schedule.c,
-- lineage.c).  The runs' group columns are in 00_catalog.sql.
-------------------------------------------------------------------------

-- downstream is built from upstream.  Written only by backfill.depend and
-- backfill.undepend (and unregister), as the extension owner.
CREATE TABLE backfill.dependencies (
    downstream  pg_catalog.regclass NOT NULL,
    upstream    pg_catalog.regclass NOT NULL,
    created_at  pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    created_by  pg_catalog.name NOT NULL,
    PRIMARY KEY (downstream, upstream),
    CHECK (downstream OPERATOR(pg_catalog.<>) upstream)
);
COMMENT ON TABLE backfill.dependencies IS
    'Which registered target is built from which: a cascading plan rebuilds the downstream targets after the upstream one.';
CREATE INDEX dependencies_upstream_idx ON backfill.dependencies (upstream);
SELECT pg_catalog.pg_extension_config_dump('backfill.dependencies', '');
REVOKE ALL ON backfill.dependencies FROM PUBLIC;
GRANT SELECT ON backfill.dependencies TO PUBLIC;
ALTER TABLE backfill.dependencies ENABLE ROW LEVEL SECURITY;
CREATE POLICY readable_target ON backfill.dependencies FOR SELECT
    USING (pg_catalog.has_table_privilege(downstream::pg_catalog.oid, 'SELECT')
           AND pg_catalog.has_table_privilege(upstream::pg_catalog.oid, 'SELECT'));

CREATE FUNCTION backfill.depend(downstream pg_catalog.regclass,
                                upstream pg_catalog.regclass)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_depend'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.depend(pg_catalog.regclass, pg_catalog.regclass) IS
    'Declare that downstream is built from upstream; false if it was already declared.  Cycles are refused.';

CREATE FUNCTION backfill.undepend(downstream pg_catalog.regclass,
                                  upstream pg_catalog.regclass)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'backfill_undepend'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.undepend(pg_catalog.regclass, pg_catalog.regclass) IS
    'Remove a dependency; false if there was none.';

-- A C procedure with no SET clause: it commits per chunk, like backfill.run.
CREATE PROCEDURE backfill.run_group(group_id pg_catalog.int8,
                                    max_chunks pg_catalog.int4 DEFAULT NULL)
AS 'MODULE_PATHNAME', 'backfill_run_group'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.run_group(pg_catalog.int8, pg_catalog.int4) IS
    'Execute the runs of a group in dependency order, one transaction per chunk; stops at the first failure.';

CREATE FUNCTION backfill.cancel_group(group_id pg_catalog.int8)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'backfill_cancel_group'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.cancel_group(pg_catalog.int8) IS
    'Cancel every unfinished run of a group; returns the chunks cancelled.';

CREATE FUNCTION backfill.schedule_group(group_id pg_catalog.int8,
                                        cron pg_catalog.text DEFAULT '*/5 * * * *',
                                        chunks_per_tick pg_catalog.int4 DEFAULT 1,
                                        quiet_hours pg_catalog.text DEFAULT NULL)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'backfill_schedule_group'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION backfill.schedule_group(pg_catalog.int8, pg_catalog.text, pg_catalog.int4, pg_catalog.text) IS
    'Schedule every unfinished run of a group with backfill.schedule; returns the number of runs scheduled.';

CREATE FUNCTION backfill.lineage_chart(target pg_catalog.regclass,
                                       range_start pg_catalog.timestamptz,
                                       range_end pg_catalog.timestamptz)
RETURNS SETOF pg_catalog.text
AS 'MODULE_PATHNAME', 'backfill_lineage_chart'
LANGUAGE C STABLE;
COMMENT ON FUNCTION backfill.lineage_chart(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) IS
    'A text picture of a target''s lineage: one line per day, week or month, one character per hour or day, and a legend.';

-- The reconcile rows of every run of a group, upstream runs first.
CREATE FUNCTION backfill.reconcile_group(group_id pg_catalog.int8)
RETURNS TABLE (run_id pg_catalog.int8,
               target pg_catalog.regclass,
               chunk_no pg_catalog.int4,
               chunk_start pg_catalog.timestamptz,
               chunk_end pg_catalog.timestamptz,
               status pg_catalog.text,
               target_value pg_catalog.numeric,
               ledger_value pg_catalog.numeric,
               ledger_ok pg_catalog.bool,
               neighbor_median pg_catalog.numeric,
               neighbor_ok pg_catalog.bool,
               verdict pg_catalog.text)
LANGUAGE sql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $reconcile_group$
SELECT r.run_id, r.target, x.chunk_no, x.chunk_start, x.chunk_end, x.status,
       x.target_value, x.ledger_value, x.ledger_ok, x.neighbor_median,
       x.neighbor_ok, x.verdict
  FROM backfill.runs r
 CROSS JOIN LATERAL backfill.reconcile(r.run_id) x
 WHERE r.group_id OPERATOR(pg_catalog.=) $1
 ORDER BY r.run_id, x.chunk_no
$reconcile_group$;
COMMENT ON FUNCTION backfill.reconcile_group(pg_catalog.int8) IS
    'backfill.reconcile for every run of a group (the runs the caller may see), upstream runs first.';

-- One row per group: its runs and chunks, and where it stands.  status is
-- failed when a run of the group failed (the group is stopped), cancelled
-- when one was cancelled, done when all are done, probed when the root
-- run has had its probe chunk and nothing is done yet, else planned.
CREATE VIEW backfill.group_progress WITH (security_invoker = true) AS
SELECT r.group_id,
       pg_catalog.count(*) AS runs,
       pg_catalog.count(*) FILTER (
           WHERE r.status OPERATOR(pg_catalog.=) 'done') AS runs_done,
       CASE WHEN pg_catalog.bool_or(r.status OPERATOR(pg_catalog.=) 'failed') THEN 'failed'
            WHEN pg_catalog.bool_or(r.status OPERATOR(pg_catalog.=) 'cancelled') THEN 'cancelled'
            WHEN pg_catalog.bool_and(r.status OPERATOR(pg_catalog.=) 'done') THEN 'done'
            WHEN pg_catalog.bool_or(r.status OPERATOR(pg_catalog.=) 'probed')
                 AND NOT pg_catalog.bool_or(r.status OPERATOR(pg_catalog.=) 'done') THEN 'probed'
            ELSE 'planned'
       END AS status,
       pg_catalog.sum(s.chunks_total)::pg_catalog.int8 AS chunks_total,
       pg_catalog.sum(s.chunks_done)::pg_catalog.int8 AS chunks_done,
       pg_catalog.sum(s.chunks_failed)::pg_catalog.int8 AS chunks_failed,
       pg_catalog.sum(s.chunks_pending)::pg_catalog.int8 AS chunks_pending,
       pg_catalog.round(100::pg_catalog.numeric
                        OPERATOR(pg_catalog.*) pg_catalog.sum(s.chunks_done)
                        OPERATOR(pg_catalog./)
                        NULLIF(pg_catalog.sum(s.chunks_total), 0), 1) AS percent,
       pg_catalog.array_agg(r.run_id ORDER BY r.run_id) AS run_ids,
       pg_catalog.array_agg(r.target ORDER BY r.run_id) AS targets
  FROM backfill.runs r
 CROSS JOIN LATERAL (
       SELECT pg_catalog.count(*) AS chunks_total,
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'done'
                     OR c.status OPERATOR(pg_catalog.=) 'no_source') AS chunks_done,
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'failed') AS chunks_failed,
              pg_catalog.count(*) FILTER (
                  WHERE c.status OPERATOR(pg_catalog.=) 'pending') AS chunks_pending
         FROM backfill.chunks c
        WHERE c.run_id OPERATOR(pg_catalog.=) r.run_id) s
 WHERE r.group_id IS NOT NULL
 GROUP BY r.group_id;
COMMENT ON VIEW backfill.group_progress IS
    'One row per group of runs (cascading plans): runs, runs done, status, chunk counts and percent.';
GRANT SELECT ON backfill.group_progress TO PUBLIC;

-------------------------------------------------------------------------
-- Privileges.  Every function acts with the caller's privileges and checks
-- them on the target itself, so EXECUTE is granted deliberately, one by
-- one, after revoking the default.
-------------------------------------------------------------------------
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA backfill FROM PUBLIC;
REVOKE ALL ON ALL PROCEDURES IN SCHEMA backfill FROM PUBLIC;
GRANT SELECT ON ALL TABLES IN SCHEMA backfill TO PUBLIC;
GRANT EXECUTE ON FUNCTION
    backfill.split_range(pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval),
    backfill.replace_range(pg_catalog.regclass, pg_catalog.name, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.text, pg_catalog.text),
    backfill._in_range(pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.timestamptz),
    backfill._in_range(pg_catalog.timestamp, pg_catalog.timestamp, pg_catalog.timestamp),
    backfill._in_range(pg_catalog.date, pg_catalog.date, pg_catalog.date),
    backfill.register(pg_catalog.regclass, pg_catalog.name, pg_catalog.text, pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.numeric, pg_catalog.bool),
    backfill.unregister(pg_catalog.regclass, pg_catalog.bool),
    backfill.plan(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text, pg_catalog.bool, pg_catalog.bool, pg_catalog.bool, pg_catalog.text, pg_catalog.bool),
    backfill.cancel(pg_catalog.int8),
    backfill.preview(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz),
    backfill.reconcile(pg_catalog.int8),
    backfill."check"(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz),
    backfill.schedule_check(pg_catalog.regclass, pg_catalog.text, pg_catalog.interval),
    backfill.unschedule_check(pg_catalog.int8),
    backfill.run_check(pg_catalog.int8),
    backfill.schedule(pg_catalog.int8, pg_catalog.text, pg_catalog.int4, pg_catalog.text),
    backfill.unschedule(pg_catalog.int8),
    backfill.lock_target(pg_catalog.regclass),
    backfill.in_quiet_hours(pg_catalog.text, pg_catalog.text, pg_catalog.timestamptz)
TO PUBLIC;
GRANT EXECUTE ON PROCEDURE
    backfill.run(pg_catalog.int8, pg_catalog.int4),
    backfill.backfill(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.text)
TO PUBLIC;
-- Monitoring and lineage (25_views.sql); the views are covered by the
-- SELECT grant above.
GRANT EXECUTE ON FUNCTION backfill._lineage_pieces(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) TO PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.lineage(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz) TO PUBLIC;
GRANT EXECUTE ON FUNCTION backfill.changes(pg_catalog.int8) TO PUBLIC;
-- How a target's chunks replace their rows (45_strategy.sql).
GRANT EXECUTE ON FUNCTION backfill.set_strategy(pg_catalog.regclass, pg_catalog.text) TO PUBLIC;
-- Pipelines (50_pipelines.sql): the view and table are covered by the
-- SELECT grant above.
GRANT EXECUTE ON FUNCTION
    backfill.depend(pg_catalog.regclass, pg_catalog.regclass),
    backfill.undepend(pg_catalog.regclass, pg_catalog.regclass),
    backfill.cancel_group(pg_catalog.int8),
    backfill.schedule_group(pg_catalog.int8, pg_catalog.text, pg_catalog.int4, pg_catalog.text),
    backfill.lineage_chart(pg_catalog.regclass, pg_catalog.timestamptz, pg_catalog.timestamptz),
    backfill.reconcile_group(pg_catalog.int8)
TO PUBLIC;
GRANT EXECUTE ON PROCEDURE backfill.run_group(pg_catalog.int8, pg_catalog.int4) TO PUBLIC;
