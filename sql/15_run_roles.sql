-- Roles: an ETL role that may rewrite the table runs it; an analyst who
-- may only read it sees its runs but cannot plan or run; a third role sees
-- nothing; nobody writes the catalog directly.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
-- run ids of this file start at 1501, whatever ran before
SELECT setval('backfill.runs_run_id_seq', 1501, false) IS NOT NULL AS seq_set;
CREATE ROLE regress_bf_etl;
CREATE ROLE regress_bf_etl_deputy IN ROLE regress_bf_etl;
CREATE ROLE regress_bf_etl_other;
CREATE ROLE regress_bf_analyst;
CREATE ROLE regress_bf_outsider;
CREATE SCHEMA sales;
GRANT USAGE ON SCHEMA sales TO PUBLIC;
CREATE TABLE sales.raw (ts timestamptz, amount numeric);
INSERT INTO sales.raw SELECT '2024-05-01'::timestamptz + i * interval '6 hours', i
  FROM generate_series(0, 4 * 4 - 1) i;
CREATE TABLE sales.revenue (day timestamptz, total numeric);
INSERT INTO sales.revenue SELECT '2024-05-01'::timestamptz + d * interval '1 day', 0
  FROM generate_series(0, 3) d;
GRANT SELECT, INSERT, DELETE ON sales.revenue TO regress_bf_etl, regress_bf_etl_other;
GRANT SELECT ON sales.raw TO regress_bf_etl, regress_bf_etl_other;
GRANT SELECT ON sales.revenue TO regress_bf_analyst;
CREATE FUNCTION pg_temp.try(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- The ETL role registers, plans and runs.
SET ROLE regress_bf_etl;
SELECT backfill.register('sales.revenue', 'day',
    $q$SELECT date_trunc('day', ts) AS day, sum(amount) AS total FROM sales.raw
        WHERE ts >= $1 AND ts < $2 GROUP BY 1$q$,
    measure => 'sum(total)');
SELECT backfill.plan('sales.revenue', '2024-05-01', '2024-05-05', probe => false) AS r \gset
CALL backfill.run(:r, max_chunks => 1);
RESET ROLE;
SELECT registered_by FROM backfill.targets WHERE target = 'sales.revenue'::regclass;
SELECT created_by FROM backfill.definitions WHERE target = 'sales.revenue'::regclass;
SELECT created_by, status FROM backfill.runs WHERE run_id = :r;
SELECT chunk_no, status, executed_by FROM backfill.chunks WHERE run_id = :r ORDER BY chunk_no;

-- The analyst sees the runs and chunks of the table she can read...
SET ROLE regress_bf_analyst;
SELECT count(*) AS targets FROM backfill.targets;
SELECT count(*) AS definitions FROM backfill.definitions;
SELECT run_id = :r AS is_r, status FROM backfill.runs;
SELECT count(*) AS chunks FROM backfill.chunks;
-- ...but cannot register, plan, run, cancel, preview or backfill it.
SELECT pg_temp.try($$SELECT backfill.register('sales.revenue', 'day', 'SELECT ts AS day, amount AS total FROM sales.raw WHERE ts >= $1 AND ts < $2')$$);
SELECT pg_temp.try($$SELECT backfill.plan('sales.revenue', '2024-06-01', '2024-06-02')$$);
CALL backfill.run(:r);
SELECT pg_temp.try(format('SELECT backfill.cancel(%s)', :r));
SELECT pg_temp.try($$SELECT * FROM backfill.preview('sales.revenue', '2024-05-01', '2024-05-02')$$);
CALL backfill.backfill('sales.revenue', '2024-06-01', '2024-06-02');
SELECT pg_temp.try($$SELECT backfill.unregister('sales.revenue')$$);
RESET ROLE;

-- A role with no privilege on the table sees none of its history.
SET ROLE regress_bf_outsider;
SELECT count(*) AS targets FROM backfill.targets WHERE target_name = 'sales.revenue';
SELECT count(*) AS runs FROM backfill.runs WHERE target_name = 'sales.revenue';
SELECT count(*) AS chunks FROM backfill.chunks WHERE run_id = :r;
SELECT count(*) AS definitions FROM backfill.definitions WHERE source LIKE '%sales.raw%';
SELECT pg_temp.try($$SELECT backfill.plan('sales.revenue', '2024-06-01', '2024-06-02')$$);
CALL backfill.run(:r);
RESET ROLE;

-- Another ETL role may write the table but did not plan this run.
SET ROLE regress_bf_etl_other;
CALL backfill.run(:r);
SELECT pg_temp.try(format('SELECT backfill.cancel(%s)', :r));
RESET ROLE;
-- A member of the planner's role may run it; it is recorded as the executor.
SET ROLE regress_bf_etl_deputy;
CALL backfill.run(:r, max_chunks => 1);
RESET ROLE;
SELECT chunk_no, status, executed_by FROM backfill.chunks WHERE run_id = :r ORDER BY chunk_no;

-- Nobody writes the catalog directly, not even the ETL role.
SET ROLE regress_bf_etl;
SELECT pg_temp.try($$INSERT INTO backfill.runs (target, target_name, range_start, range_end, chunk, probe, backwards, clear_no_source, definition_version, timezone, search_path, created_by) VALUES ('sales.revenue', 'x', '2024-01-01', '2024-01-02', '1 day', false, false, false, 1, 'UTC', '', 'regress_bf_etl')$$);
SELECT pg_temp.try(format($$UPDATE backfill.chunks SET status = 'done' WHERE run_id = %s$$, :r));
SELECT pg_temp.try(format($$DELETE FROM backfill.chunks WHERE run_id = %s$$, :r));
SELECT pg_temp.try(format($$UPDATE backfill.runs SET status = 'done' WHERE run_id = %s$$, :r));
SELECT pg_temp.try(format($$DELETE FROM backfill.runs WHERE run_id = %s$$, :r));
SELECT pg_temp.try($$UPDATE backfill.targets SET ledger_gate = false$$);
SELECT pg_temp.try($$DELETE FROM backfill.definitions$$);
SELECT pg_temp.try($$INSERT INTO backfill.definitions VALUES ('sales.revenue', 99, 'forged', 'SELECT 1', 'x', now(), 'regress_bf_etl')$$);
SELECT pg_temp.try($$TRUNCATE backfill.chunks$$);
RESET ROLE;
SELECT status, (SELECT count(*) FROM backfill.chunks WHERE run_id = :r) AS chunks
  FROM backfill.runs WHERE run_id = :r;

-- The source runs as the caller: without SELECT on the raw table the
-- chunk fails with 42501, which is recorded.
REVOKE SELECT ON sales.raw FROM regress_bf_etl;
SET ROLE regress_bf_etl;
CALL backfill.run(:r);
RESET ROLE;
SELECT chunk_no, status, error_sqlstate, error_message, executed_by
  FROM backfill.chunks WHERE run_id = :r AND status = 'failed';
GRANT SELECT ON sales.raw TO regress_bf_etl;
SET ROLE regress_bf_etl;
CALL backfill.run(:r);
SELECT status FROM backfill.runs WHERE run_id = :r;
RESET ROLE;
SELECT * FROM sales.revenue ORDER BY day;

-- Losing DELETE on the table after planning: the run is refused up front;
-- its planner may still cancel it.
SET ROLE regress_bf_etl;
SELECT backfill.plan('sales.revenue', '2024-05-01', '2024-05-02') AS r2 \gset
RESET ROLE;
REVOKE DELETE ON sales.revenue FROM regress_bf_etl;
SET ROLE regress_bf_etl;
CALL backfill.run(:r2);
SELECT backfill.cancel(:r2);
RESET ROLE;
SELECT status FROM backfill.runs WHERE run_id = :r2;

-- A run whose planner has been dropped can still be run by a superuser.
CREATE ROLE regress_bf_temp;
GRANT SELECT, INSERT, DELETE ON sales.revenue TO regress_bf_temp;
GRANT SELECT ON sales.raw TO regress_bf_temp;
-- (a member of the ETL role, so it may plan the ETL role's definition)
GRANT regress_bf_etl TO regress_bf_temp;
-- (the ETL role's text runs as the ETL role: give back what it lost above)
GRANT DELETE ON sales.revenue TO regress_bf_etl;
SET ROLE regress_bf_temp;
SELECT backfill.plan('sales.revenue', '2024-05-01', '2024-05-02') AS r3 \gset
RESET ROLE;
DROP OWNED BY regress_bf_temp;
DROP ROLE regress_bf_temp;
SET ROLE regress_bf_etl;
CALL backfill.run(:r3);
RESET ROLE;
CALL backfill.run(:r3);
SELECT created_by, status FROM backfill.runs WHERE run_id = :r3;

SELECT backfill.unregister('sales.revenue');
DROP SCHEMA sales CASCADE;
DROP ROLE regress_bf_etl_deputy, regress_bf_etl, regress_bf_etl_other,
          regress_bf_analyst, regress_bf_outsider;
