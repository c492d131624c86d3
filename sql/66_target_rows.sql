-- What a chunk does to rows it does not own and how odd sources show up
-- (checklist B51, B56, B57):
--   - target rows with a NULL time belong to no chunk: never deleted,
--     never doubled, however often the range is refilled;
--   - a foreign key from another table with ON DELETE CASCADE: the delete
--     strategy deletes like a hand-written DELETE would, so the child rows
--     of the replaced rows are deleted and not restored (pinned and
--     documented; the truncate and swap strategies refuse such targets,
--     see 51_partition_rules);
--   - a BEFORE INSERT trigger that drops rows: rows_inserted counts what
--     really landed, so the ledger gate catches the difference;
--   - an empty source for a range that has rows: the chunk records the
--     deletions and 0 insertions, and the ledger gate refuses it.
\set SHOW_CONTEXT never
SET TimeZone = 'UTC';
SET DateStyle = ISO;
-- run ids of this file start at 6601, whatever ran before
SELECT setval('backfill.runs_run_id_seq', 6601, false) IS NOT NULL AS seq_set;
CREATE TABLE regress_hard_rsrc (ts timestamptz, id int, v int);
INSERT INTO regress_hard_rsrc
  SELECT t, row_number() OVER (ORDER BY t), 1
    FROM generate_series('2024-01-01'::timestamptz, '2024-01-02 23:00', '6 hours') t;
CREATE TABLE regress_hard_rows (ts timestamptz, id int PRIMARY KEY, v int);
INSERT INTO regress_hard_rows
  SELECT t, 100 + row_number() OVER (ORDER BY t), 0
    FROM generate_series('2024-01-01'::timestamptz, '2024-01-02 23:00', '12 hours') t;
INSERT INTO regress_hard_rows VALUES (NULL, 900, 5), (NULL, 901, 6);
CREATE TABLE regress_hard_child (id int REFERENCES regress_hard_rows ON DELETE CASCADE, note text);
INSERT INTO regress_hard_child VALUES (101, 'child of a replaced row'), (900, 'child of a NULL-time row');
SELECT backfill.register('regress_hard_rows', 'ts',
  $$SELECT ts, id, v FROM public.regress_hard_rsrc
     WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2$$);

-- Twice over the same range.
\set VERBOSITY terse
SELECT backfill.plan('regress_hard_rows', '2024-01-01', '2024-01-03', probe => false) AS r \gset
CALL backfill.run(:r);
SELECT backfill.plan('regress_hard_rows', '2024-01-01', '2024-01-03', probe => false) AS r \gset
CALL backfill.run(:r);
\set VERBOSITY default
SELECT count(*) FILTER (WHERE ts IS NULL) AS null_time_rows,
       string_agg(id::text, ',' ORDER BY id) FILTER (WHERE ts IS NULL) AS null_time_ids,
       count(*) FILTER (WHERE ts IS NOT NULL) AS timed_rows
  FROM regress_hard_rows;
SELECT * FROM regress_hard_child ORDER BY id;

-- A trigger that silently drops every second row, and a ledger that
-- counts the source: the gate sees 2 rows against 4 and refuses.
CREATE FUNCTION regress_hard_drop_odd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id % 2 = 1 THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER drop_odd BEFORE INSERT ON regress_hard_rows
  FOR EACH ROW EXECUTE FUNCTION regress_hard_drop_odd();
SELECT backfill.register('regress_hard_rows', 'ts',
  $$SELECT ts, id, v FROM public.regress_hard_rsrc
     WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2$$,
  ledger => $$SELECT pg_catalog.count(*) FROM public.regress_hard_rsrc
               WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2$$);
SELECT backfill.plan('regress_hard_rows', '2024-01-01', '2024-01-02', probe => false) AS r \gset
\set VERBOSITY terse
CALL backfill.run(:r);
\set VERBOSITY default
SELECT status, rows_deleted, rows_inserted, after_value, ledger_value, verdict, error_sqlstate
  FROM backfill.chunks WHERE run_id = :r;
SELECT count(*) AS rows_jan1 FROM regress_hard_rows WHERE ts >= '2024-01-01' AND ts < '2024-01-02';
SELECT backfill.cancel(:r);
DROP TRIGGER drop_odd ON regress_hard_rows;

-- An empty source for a range that has rows: without a ledger the chunk
-- fails and keeps them (issue 29: a source that returns nothing is taken
-- for a broken one), unless the definition says that no rows is a valid
-- answer (allow_empty); with a ledger too, the gate refuses.
SELECT backfill.register('regress_hard_rows', 'ts',
  $$SELECT ts, id, v FROM public.regress_hard_rsrc
     WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2
       AND false$$);
SELECT backfill.plan('regress_hard_rows', '2024-01-01', '2024-01-02', probe => false) AS r \gset
\set VERBOSITY terse
CALL backfill.run(:r);
\set VERBOSITY default
SELECT status, rows_deleted, rows_inserted, error_cause FROM backfill.chunks WHERE run_id = :r;
SELECT count(*) AS rows_jan1 FROM regress_hard_rows WHERE ts >= '2024-01-01' AND ts < '2024-01-02';
SELECT backfill.register('regress_hard_rows', 'ts',
  $$SELECT ts, id, v FROM public.regress_hard_rsrc
     WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2
       AND false$$, allow_empty => true);
SELECT backfill.replan(:r) AS r \gset
\set VERBOSITY terse
CALL backfill.run(:r);
\set VERBOSITY default
SELECT status, rows_deleted, rows_inserted FROM backfill.chunks WHERE run_id = :r;
SELECT backfill.register('regress_hard_rows', 'ts',
  $$SELECT ts, id, v FROM public.regress_hard_rsrc
     WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2
       AND false$$,
  ledger => $$SELECT pg_catalog.count(*) FROM public.regress_hard_rsrc
               WHERE ts OPERATOR(pg_catalog.>=) $1 AND ts OPERATOR(pg_catalog.<) $2$$,
  allow_empty => true);
SELECT backfill.plan('regress_hard_rows', '2024-01-02', '2024-01-03', probe => false) AS r \gset
\set VERBOSITY terse
CALL backfill.run(:r);
\set VERBOSITY default
SELECT status, rows_deleted, rows_inserted, ledger_value, verdict, error_sqlstate
  FROM backfill.chunks WHERE run_id = :r;
SELECT count(*) AS rows_jan2 FROM regress_hard_rows WHERE ts >= '2024-01-02' AND ts < '2024-01-03';
SELECT backfill.cancel(:r);

SELECT backfill.unregister('regress_hard_rows');
DROP TABLE regress_hard_child, regress_hard_rows, regress_hard_rsrc;
DROP FUNCTION regress_hard_drop_odd();
