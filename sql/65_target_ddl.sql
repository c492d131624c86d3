-- The target changes between two chunks of a run (checklist F28, C39).
-- A column added with a default: the next chunk fills it with the default
-- (columns are matched by name).  A column the source writes is dropped,
-- the time column changes type, is renamed or dropped, the table is
-- dropped: the next chunk fails with a clear SQLSTATE naming the object
-- (never XX000), is recorded, nothing of it is written, and the run can
-- be cancelled.
\set SHOW_CONTEXT never
SET TimeZone = 'UTC';
SET DateStyle = ISO;
-- run ids of this file start at 6501, whatever ran before
SELECT setval('backfill.runs_run_id_seq', 6501, false) IS NOT NULL AS seq_set;
CREATE TABLE regress_hard_src (ts timestamptz, v int, w int);
INSERT INTO regress_hard_src
  SELECT t, 1, 2 FROM generate_series('2024-01-01'::timestamptz, '2024-01-05 23:00', '6 hours') t;
CREATE TABLE regress_hard_ddl (ts timestamptz, v int, w int);
INSERT INTO regress_hard_ddl
  SELECT t, 0, 0 FROM generate_series('2024-01-01'::timestamptz, '2024-01-05 23:00', '12 hours') t;
SELECT backfill.register('regress_hard_ddl', 'ts',
  $$SELECT ts, v, w FROM public.regress_hard_src
     WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2$$);
SELECT backfill.plan('regress_hard_ddl', '2024-01-01', '2024-01-05', probe => false) AS r \gset
\set VERBOSITY terse
CALL backfill.run(:r, max_chunks => 1);

-- A new column with a default: chunk 2 gives it the default.
ALTER TABLE regress_hard_ddl ADD COLUMN c int DEFAULT 7;
CALL backfill.run(:r, max_chunks => 1);
SELECT ts, v, w, c FROM regress_hard_ddl WHERE ts < '2024-01-03' ORDER BY ts;

-- A column the source writes is gone: 42703 on chunk 3.
ALTER TABLE regress_hard_ddl DROP COLUMN w;
CALL backfill.run(:r, max_chunks => 1);
SELECT chunk_no, status, error_sqlstate, error_message
  FROM backfill.chunks WHERE run_id = :r ORDER BY chunk_no;
ALTER TABLE regress_hard_ddl ADD COLUMN w int;
-- The time column changed type: 42804.
ALTER TABLE regress_hard_ddl ALTER COLUMN ts TYPE text;
CALL backfill.run(:r, max_chunks => 1);
SELECT chunk_no, status, error_sqlstate, error_message
  FROM backfill.chunks WHERE run_id = :r AND chunk_no = 3;
ALTER TABLE regress_hard_ddl ALTER COLUMN ts TYPE timestamptz USING ts::timestamptz;
-- The time column renamed, then dropped: 42703.
ALTER TABLE regress_hard_ddl RENAME COLUMN ts TO ts2;
CALL backfill.run(:r, max_chunks => 1);
SELECT chunk_no, status, error_sqlstate, error_message
  FROM backfill.chunks WHERE run_id = :r AND chunk_no = 3;
-- Nothing of chunk 3 was ever written: Jan 3 holds its two old rows.
SELECT count(*) AS jan3_rows, sum(v) AS jan3_v FROM regress_hard_ddl
 WHERE ts2 >= '2024-01-03' AND ts2 < '2024-01-04';
ALTER TABLE regress_hard_ddl DROP COLUMN ts2;
CALL backfill.run(:r, max_chunks => 1);
SELECT chunk_no, status, error_sqlstate, error_message
  FROM backfill.chunks WHERE run_id = :r AND chunk_no = 3;
-- The table is dropped: the run says so and can be cancelled.
DROP TABLE regress_hard_ddl;
CALL backfill.run(:r);
\echo sqlstate :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT chunk_no, status FROM backfill.chunks WHERE run_id = :r ORDER BY chunk_no;
SELECT backfill.cancel(:r);
SELECT status FROM backfill.runs WHERE run_id = :r;
SELECT chunk_no, status FROM backfill.chunks WHERE run_id = :r ORDER BY chunk_no;
DROP TABLE regress_hard_src;
