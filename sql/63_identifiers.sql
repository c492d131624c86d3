-- Hostile and unusual identifiers (checklist S9, S10): schemas, tables and
-- columns with quotes, dots, spaces, capitals and non-ASCII letters, and a
-- time column named like an injection.  register / plan / run / preview
-- use exactly these objects and nothing is injected.
\set SHOW_CONTEXT never
SET TimeZone = 'UTC';
SET DateStyle = ISO;
-- run ids of this file start at 6301, whatever ran before
SELECT setval('backfill.runs_run_id_seq', 6301, false) IS NOT NULL AS seq_set;
CREATE SCHEMA "My Schema";
CREATE TABLE "My Schema"."My.Table" (
    "ts""; DROP TABLE regress_hard_x; --" timestamptz NOT NULL,
    "Ts" int NOT NULL,
    "tíme" text,
    "a b" int,
    "select" int
);
CREATE TABLE regress_hard_x (a int);      -- must survive
INSERT INTO regress_hard_x VALUES (1);
CREATE TABLE "My Schema"."sourcé" ("when" timestamptz, "Ts" int, "tíme" text, "a b" int, "select" int);
INSERT INTO "My Schema"."sourcé"
  SELECT t, extract(hour FROM t)::int, 'é' || extract(hour FROM t), 1, 2
    FROM generate_series('2024-01-01'::timestamptz, '2024-01-02 23:00', '1 hour') t;
INSERT INTO "My Schema"."My.Table"
  SELECT t, -1, 'old', 0, 0
    FROM generate_series('2023-12-31 12:00'::timestamptz, '2024-01-03 12:00', '12 hours') t;

-- A column name that does not exist, or is the injection text without the
-- quote, is refused with 42703.
SELECT backfill.register('"My Schema"."My.Table"', 'ts; DROP TABLE regress_hard_x; --',
  'SELECT 1');
\echo sqlstate :LAST_ERROR_SQLSTATE
SELECT backfill.register('"My Schema"."My.Table"', 'ts',
  'SELECT 1');
\echo sqlstate :LAST_ERROR_SQLSTATE

SELECT backfill.register('"My Schema"."My.Table"', 'ts"; DROP TABLE regress_hard_x; --',
  $$SELECT "when" AS "ts""; DROP TABLE regress_hard_x; --", "Ts", "tíme", "a b", "select"
      FROM "My Schema"."sourcé"
     WHERE "when" OPERATOR(pg_catalog.>=) $1 AND "when" OPERATOR(pg_catalog.<) $2$$,
  definition => 'v1: «quoted» ''label''; DROP TABLE regress_hard_x; --',
  chunk => '12 hours');
SELECT target, target_name, time_column FROM backfill.targets
 WHERE target = '"My Schema"."My.Table"'::regclass;

SELECT * FROM backfill.preview('"My Schema"."My.Table"', '2024-01-01', '2024-01-02');
SELECT backfill.plan('"My Schema"."My.Table"', '2024-01-01', '2024-01-02', probe => false,
                     note => $$note'); DROP TABLE regress_hard_x; --$$) AS run \gset
\set VERBOSITY terse
CALL backfill.run(:run);
\set VERBOSITY default
SELECT chunk_no, chunk_start, chunk_end, status, rows_deleted, rows_inserted
  FROM backfill.chunks WHERE run_id = :run ORDER BY chunk_no;

-- Exactly the source rows inside the range, the old rows outside it.
SELECT "ts""; DROP TABLE regress_hard_x; --" AS ts, "Ts", "tíme", "a b", "select"
  FROM "My Schema"."My.Table" ORDER BY 1;
SELECT count(*) AS x_survives FROM regress_hard_x;
SELECT note, target_name FROM backfill.runs WHERE run_id = :run;

-- replace_range on the same names.
SELECT * FROM backfill.replace_range('"My Schema"."My.Table"', 'ts"; DROP TABLE regress_hard_x; --',
  '2024-01-02', '2024-01-02 06:00',
  $$SELECT "when" AS "ts""; DROP TABLE regress_hard_x; --", 99 AS "Ts", "tíme", "a b", "select"
      FROM "My Schema"."sourcé"
     WHERE "when" OPERATOR(pg_catalog.>=) $1 AND "when" OPERATOR(pg_catalog.<) $2$$);
SELECT count(*) FILTER (WHERE "Ts" = 99) AS replaced, count(*) AS total
  FROM "My Schema"."My.Table";
SELECT count(*) AS x_survives FROM regress_hard_x;

-- (S10) A source built to escape a naive "INSERT ... SELECT * FROM (src) s"
-- wrapper is refused before anything is deleted.
SELECT backfill.register('"My Schema"."My.Table"', 'ts"; DROP TABLE regress_hard_x; --',
  $$SELECT * FROM "My Schema"."sourcé" WHERE "when" >= $1 AND "when" < $2) s; DELETE FROM regress_hard_x; SELECT * FROM (SELECT now()$$);
\echo sqlstate :LAST_ERROR_SQLSTATE
SELECT * FROM backfill.replace_range('"My Schema"."My.Table"', 'ts"; DROP TABLE regress_hard_x; --',
  '2024-01-02', '2024-01-02 06:00',
  $$SELECT * FROM "My Schema"."sourcé" WHERE "when" >= $1 AND "when" < $2) s; DELETE FROM regress_hard_x; SELECT * FROM (SELECT now()$$);
\echo sqlstate :LAST_ERROR_SQLSTATE
SELECT count(*) AS x_rows FROM regress_hard_x;
SELECT count(*) AS total FROM "My Schema"."My.Table";

SELECT backfill.unregister('"My Schema"."My.Table"');
DROP SCHEMA "My Schema" CASCADE;
DROP TABLE regress_hard_x;
