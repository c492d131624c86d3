-- Undo's read rule (doc/undo.md, doc/security.md): the rows a run kept are
-- read only through diff and revert, for a caller who may SELECT every
-- column of the target and to whom no row-level security policy applies;
-- nobody reads or writes the archive tables directly, not even the author
-- of the definition whose runs filled them; a run is reverted only by a
-- role that may act on it; an archive changed behind the extension's back
-- is refused, not restored.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
SELECT setval('backfill.runs_run_id_seq', 8101, false) IS NOT NULL AS seq_set;
CREATE ROLE regress_undo_owner;
CREATE ROLE regress_undo_cols;
CREATE ROLE regress_undo_rls;
CREATE ROLE regress_undo_writer;
CREATE SCHEMA undosec AUTHORIZATION regress_undo_owner;
GRANT USAGE ON SCHEMA undosec TO regress_undo_cols, regress_undo_rls, regress_undo_writer;

SET SESSION AUTHORIZATION regress_undo_owner;
CREATE TABLE undosec.src (day date, acct text, salary numeric);
INSERT INTO undosec.src VALUES ('2024-01-01', 'a', 100), ('2024-01-01', 'b', 200),
                               ('2024-01-02', 'a', 110), ('2024-01-02', 'b', 210);
CREATE TABLE undosec.pay (day date, acct text, salary numeric, PRIMARY KEY (day, acct));
SELECT backfill.register('undosec.pay', 'day',
    'SELECT day, acct, salary FROM undosec.src WHERE day >= $1 AND day < $2',
    keep_replaced => true) AS version;
SELECT backfill.plan('undosec.pay', '2024-01-01', '2024-01-03', probe => false) AS r1 \gset
SET client_min_messages = warning;
CALL backfill.run(:r1);
UPDATE undosec.src SET salary = salary * 2;
SELECT backfill.plan('undosec.pay', '2024-01-01', '2024-01-03', probe => false) AS r2 \gset
CALL backfill.run(:r2);
RESET client_min_messages;
SELECT count(*) AS diff_rows FROM backfill.diff(:r2);
-- the author reads and writes the archive only through the extension
SELECT archive AS arch FROM backfill.archives WHERE target = 'undosec.pay'::regclass \gset
SELECT count(*) FROM :arch;
INSERT INTO :arch (day, acct, salary, _backfill_run, _backfill_chunk)
    VALUES ('2024-01-01', 'z', 1, :r2, 1);
DELETE FROM :arch;
-- a reader of some columns only: salary is hidden from it
GRANT SELECT (day, acct) ON undosec.pay TO regress_undo_cols;
-- a reader of the whole table, behind a row-level security policy
GRANT SELECT ON undosec.pay TO regress_undo_rls;
ALTER TABLE undosec.pay ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_a ON undosec.pay FOR SELECT TO regress_undo_rls USING (acct = 'a');
-- a role that may rewrite the table but did not plan the runs
GRANT SELECT, INSERT, DELETE ON undosec.pay TO regress_undo_writer;
CREATE POLICY all_rows ON undosec.pay TO regress_undo_writer USING (true);
RESET SESSION AUTHORIZATION;

-- without SELECT on every column, the runs of the table are not even
-- visible (as for every run action), and the archive is closed
SET SESSION AUTHORIZATION regress_undo_cols;
SELECT day, acct FROM undosec.pay ORDER BY 1, 2;
SELECT * FROM backfill.diff(:r2);
SELECT backfill.revert(:r2);
SELECT count(*) FROM :arch;
-- what was kept is listed (how many rows, when), never the rows
SELECT chunk_no, rows_kept FROM backfill.archived_chunks WHERE run_id = :r2 ORDER BY 1;
RESET SESSION AUTHORIZATION;

SET SESSION AUTHORIZATION regress_undo_rls;
SELECT * FROM undosec.pay ORDER BY 1, 2;
SELECT * FROM backfill.diff(:r2);
SELECT * FROM backfill.diff(:r2, 1);
SELECT count(*) FROM :arch;
RESET SESSION AUTHORIZATION;

SET SESSION AUTHORIZATION regress_undo_writer;
SELECT backfill.revert(:r2);
RESET SESSION AUTHORIZATION;

-- the owner bypasses its own policies: it may read and revert
SET SESSION AUTHORIZATION regress_undo_owner;
SELECT chunk_no, key, change, old, new FROM backfill.diff(:r2) ORDER BY 1, 2;
RESET SESSION AUTHORIZATION;

-- an archive changed behind the extension's back (only a superuser can) is
-- refused by the revert chunk, which fails and restores nothing
INSERT INTO :arch (day, acct, salary, _backfill_run, _backfill_chunk)
    VALUES ('2024-01-01', 'forged', 999, :r2, 1);
SET SESSION AUTHORIZATION regress_undo_owner;
SELECT backfill.revert(:r2) AS rv \gset
SET client_min_messages = warning;
CALL backfill.run(:rv);
CALL backfill.run(:rv);
RESET client_min_messages;
SELECT chunk_no, status, error_sqlstate, error_message FROM backfill.chunks
 WHERE run_id = :rv ORDER BY 1;
SELECT acct, salary FROM undosec.pay ORDER BY day, acct;
RESET SESSION AUTHORIZATION;
DELETE FROM :arch WHERE acct = 'forged';
SET SESSION AUTHORIZATION regress_undo_owner;
SET client_min_messages = warning;
CALL backfill.run(:rv);
RESET client_min_messages;
SELECT acct, salary FROM undosec.pay ORDER BY day, acct;
RESET SESSION AUTHORIZATION;

-- Kept leaves: a partitioned target replaced by swap keeps the leaves'
-- files in tables of backfill_archive owned by the leaves' owner; the same
-- rule: a reader of some columns, or behind a policy, sees nothing of them,
-- and the author cannot read or write them directly.
SET SESSION AUTHORIZATION regress_undo_owner;
CREATE TABLE undosec.ppay (day date NOT NULL, acct text, salary numeric)
    PARTITION BY RANGE (day);
CREATE TABLE undosec.ppay_0101 PARTITION OF undosec.ppay FOR VALUES FROM ('2024-01-01') TO ('2024-01-02');
CREATE TABLE undosec.ppay_0102 PARTITION OF undosec.ppay FOR VALUES FROM ('2024-01-02') TO ('2024-01-03');
SELECT backfill.register('undosec.ppay', 'day',
    'SELECT day, acct, salary FROM undosec.src WHERE day >= $1 AND day < $2',
    keep_replaced => true) AS version;
SELECT backfill.set_strategy('undosec.ppay', 'swap') AS previous;
SELECT backfill.plan('undosec.ppay', '2024-01-01', '2024-01-03', probe => false) AS q1 \gset
SET client_min_messages = warning;
CALL backfill.run(:q1);
UPDATE undosec.src SET salary = salary + 1;
SELECT backfill.plan('undosec.ppay', '2024-01-01', '2024-01-03', probe => false) AS q2 \gset
CALL backfill.run(:q2);
RESET client_min_messages;
SELECT chunk_no, strategy FROM backfill.chunks WHERE run_id = :q2 ORDER BY 1;
SELECT count(*) AS kept_leaves FROM backfill.archived_leaves WHERE run_id = :q2;
SELECT kept AS kleaf FROM backfill.archived_leaves WHERE run_id = :q2 ORDER BY chunk_no LIMIT 1 \gset
SELECT count(*) FROM :kleaf;
DELETE FROM :kleaf;
GRANT SELECT (day, acct) ON undosec.ppay TO regress_undo_cols;
GRANT SELECT ON undosec.ppay TO regress_undo_rls;
ALTER TABLE undosec.ppay ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_a ON undosec.ppay FOR SELECT TO regress_undo_rls USING (acct = 'a');
SELECT count(*) AS changed FROM backfill.diff(:q2);
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION regress_undo_cols;
SELECT * FROM backfill.diff(:q2);
SELECT count(*) FROM :kleaf;
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION regress_undo_rls;
SELECT * FROM backfill.diff(:q2);
SELECT backfill.revert(:q2);
SELECT count(*) FROM :kleaf;
RESET SESSION AUTHORIZATION;

-- Roles that reach every schema and table (pg_read_all_data,
-- pg_write_all_data) meet the archive tables' row-level security, enabled
-- and forced with no policy: they read no kept row and change none, nor
-- does the tables' owner; a superuser still sees every row.
CREATE ROLE regress_undo_all;
GRANT pg_read_all_data, pg_write_all_data TO regress_undo_all;
SELECT c.relowner::regrole AS owner, c.relrowsecurity, c.relforcerowsecurity
  FROM pg_class c WHERE c.oid = :'arch'::regclass;
SET SESSION AUTHORIZATION regress_undo_all;
SELECT count(*) AS seen FROM :arch;
UPDATE :arch SET salary = -1;
DELETE FROM :arch;
\set VERBOSITY sqlstate
INSERT INTO :arch (day, acct, salary, _backfill_run, _backfill_chunk)
    VALUES ('2024-01-01', 'z', 1, :r2, 1);
\set VERBOSITY terse
SELECT count(*) AS seen FROM :kleaf;
RESET SESSION AUTHORIZATION;
SELECT count(*) AS kept_rows, min(salary) > 0 AS unchanged FROM :arch;
DROP ROLE regress_undo_all;

-- Kept rows belong to whoever owned the table when they were kept: the
-- table given to another role, that role may neither read them nor put
-- them back without the old owner's privileges (the archive tables stay
-- the old owner's); a superuser may.
CREATE ROLE regress_undo_heir;
ALTER TABLE undosec.pay OWNER TO regress_undo_heir;
SET SESSION AUTHORIZATION regress_undo_heir;
SELECT count(*) FROM backfill.diff(:rv);
RESET SESSION AUTHORIZATION;
SELECT count(*) AS diff_rows FROM backfill.diff(:rv);
ALTER TABLE undosec.pay OWNER TO regress_undo_owner;
DROP ROLE regress_undo_heir;

-- Clean up.
SET client_min_messages = warning;
SELECT backfill.unregister('undosec.ppay');
SELECT backfill.purge_archive('undosec.ppay', '0 seconds') IS NOT NULL AS purged;
SELECT backfill.unregister('undosec.pay');
DROP SCHEMA undosec CASCADE;
DROP OWNED BY regress_undo_owner, regress_undo_cols, regress_undo_rls, regress_undo_writer;
DROP ROLE regress_undo_owner, regress_undo_cols, regress_undo_rls, regress_undo_writer;
RESET client_min_messages;
