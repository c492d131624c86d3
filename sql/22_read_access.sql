-- Who sees what: the history and progress views and lineage()/changes()
-- apply the catalog's row-level security to the reader (security_invoker
-- views, SECURITY INVOKER functions).  A role who cannot SELECT the target
-- sees nothing of it; a role who can sees everything, without any right
-- to write.  A hostile search_path changes no result.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO';
SET client_min_messages = warning;
CREATE SCHEMA r22;
CREATE TABLE r22.src (ts timestamptz NOT NULL, n int NOT NULL);
INSERT INTO r22.src SELECT '2024-05-01'::timestamptz + i * interval '4 hours', 1 FROM generate_series(0, 17) i;
CREATE TABLE r22.secret (ts timestamptz NOT NULL, n int NOT NULL);
CREATE TABLE r22.open (ts timestamptz NOT NULL, n int NOT NULL);
-- The open target held every row twice as big: before 12, after 6 per day.
INSERT INTO r22.open SELECT ts, 2 FROM r22.src;
SELECT backfill.register('r22.secret', 'ts', 'SELECT ts, n FROM r22.src WHERE ts >= $1 AND ts < $2',
                         measure => 'sum(n)') AS version;
SELECT backfill.register('r22.open', 'ts', 'SELECT ts, n FROM r22.src WHERE ts >= $1 AND ts < $2',
                         measure => 'sum(n)') AS version;
SELECT backfill.plan('r22.secret', '2024-05-01', '2024-05-04', probe => false) AS run_s \gset
SELECT backfill.plan('r22.open', '2024-05-01', '2024-05-04', probe => false) AS run_o \gset
CALL backfill.run(:run_s);
CALL backfill.run(:run_o);
-- One unfinished run on each target, for progress.
SELECT backfill.plan('r22.secret', '2024-05-10', '2024-05-12') AS run_s2 \gset
SELECT backfill.plan('r22.open', '2024-05-10', '2024-05-12') AS run_o2 \gset

CREATE ROLE regress_read_viewer;
CREATE ROLE regress_read_outsider;
GRANT USAGE ON SCHEMA r22 TO regress_read_viewer, regress_read_outsider;
GRANT SELECT ON r22.open TO regress_read_viewer;

SET ROLE regress_read_viewer;
-- The viewer sees the open target only, everywhere.
SELECT target, count(*) FROM backfill.history
 WHERE run_id IN (:run_s, :run_o) GROUP BY target ORDER BY 1;
SELECT target, status, chunks_total FROM backfill.progress
 WHERE run_id IN (:run_s2, :run_o2) ORDER BY 1;
SELECT range_start, range_end, state FROM backfill.lineage('r22.open');
SELECT count(*) FROM backfill.lineage('r22.secret');
SELECT chunk_no, before_value, after_value, delta FROM backfill.changes(:run_o);
-- A run of a target the viewer cannot read does not exist for them.
\set VERBOSITY sqlstate
SELECT * FROM backfill.changes(:run_s);
\set VERBOSITY default
SELECT regexp_replace(:'LAST_ERROR_MESSAGE', 'run \d+', 'run N') AS error;
-- Reading gives no right to write the catalog.
DELETE FROM backfill.chunks WHERE run_id = :run_o;
UPDATE backfill.runs SET note = 'tampered' WHERE run_id = :run_o;
RESET ROLE;

SET ROLE regress_read_outsider;
SELECT count(*) FROM backfill.history WHERE run_id IN (:run_s, :run_o);
SELECT count(*) FROM backfill.progress WHERE run_id IN (:run_s2, :run_o2);
SELECT count(*) FROM backfill.lineage('r22.open');
\set VERBOSITY sqlstate
SELECT * FROM backfill.changes(:run_o);
\set VERBOSITY default
SELECT regexp_replace(:'LAST_ERROR_MESSAGE', 'run \d+', 'run N') AS error;
RESET ROLE;

-- The views are security invokers and nothing here is SECURITY DEFINER.
SELECT c.relname, c.reloptions FROM pg_class c
 WHERE c.oid IN ('backfill.history'::regclass, 'backfill.progress'::regclass) ORDER BY 1;
SELECT p.proname, p.prosecdef, p.provolatile FROM pg_proc p
 WHERE p.oid IN ('backfill.lineage'::regproc, 'backfill.changes'::regproc) ORDER BY 1;

-- A hostile search_path: a schema ahead of pg_catalog with an "=" on text
-- that is always true and a "-" on numeric that always gives 0.
CREATE SCHEMA r22_evil;
CREATE FUNCTION r22_evil.yes(text, text) RETURNS bool LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR r22_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = r22_evil.yes);
CREATE FUNCTION r22_evil.zero(numeric, numeric) RETURNS numeric LANGUAGE sql AS 'SELECT 0::numeric';
CREATE OPERATOR r22_evil.- (LEFTARG = numeric, RIGHTARG = numeric, FUNCTION = r22_evil.zero);
CREATE TEMP TABLE r22_before AS
SELECT (SELECT count(*) FROM backfill.history) AS history,
       (SELECT count(*) FROM backfill.progress) AS progress,
       (SELECT array_agg(l::text ORDER BY l.range_start) FROM backfill.lineage('r22.open') l) AS lineage,
       (SELECT array_agg(c::text ORDER BY c.chunk_no) FROM backfill.changes(:run_o) c) AS changes;
SET search_path = r22_evil, pg_catalog;
-- Checked: the evil operators do work on plain queries ...
SELECT 'a'::text = 'b'::text AS evil_eq, 5::numeric - 3::numeric AS evil_minus;
-- ... and change nothing read through backfill.
SELECT (SELECT count(*) FROM backfill.history) = b.history AS same_history,
       (SELECT count(*) FROM backfill.progress) = b.progress AS same_progress,
       (SELECT array_agg(l::text ORDER BY l.range_start) FROM backfill.lineage('r22.open') l)
           IS NOT DISTINCT FROM b.lineage AS same_lineage,
       (SELECT array_agg(c::text ORDER BY c.chunk_no) FROM backfill.changes(:run_o) c)
           IS NOT DISTINCT FROM b.changes AS same_changes
  FROM pg_temp.r22_before b;
RESET search_path;

SELECT backfill.cancel(:run_s2) + backfill.cancel(:run_o2) AS cancelled;
DROP OWNED BY regress_read_viewer, regress_read_outsider;
DROP ROLE regress_read_viewer;
DROP ROLE regress_read_outsider;
