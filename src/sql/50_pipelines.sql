
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
