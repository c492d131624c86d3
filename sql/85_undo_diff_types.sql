-- diff reads the kept rows from C and compares them with the table's in
-- one statement run as the caller (doc/undo.md "backfill.diff"), which
-- calls PostgreSQL's own functions only: a value of a type created since
-- initdb (here an enum whose owner wrote a cast to json, and a composite)
-- is shown as its text, so that no cast a user wrote ever runs, for its
-- owner or for anyone who diffs the run (a superuser included).  A column
-- whose type changed since the run kept it is compared as text.  The rows
-- are those of a hand-written FULL JOIN of the kept rows and the table on
-- the key.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
SELECT setval('backfill.runs_run_id_seq', 8501, false) IS NOT NULL AS seq_set;
CREATE ROLE regress_undo_types;
CREATE SCHEMA undotypes AUTHORIZATION regress_undo_types;

SET SESSION AUTHORIZATION regress_undo_types;
CREATE TABLE undotypes.src (day date, id int, qty numeric, tags text[]);
INSERT INTO undotypes.src
SELECT '2024-03-01'::date + i % 3, i, i % 5, ARRAY['t' || (i % 2)]
  FROM generate_series(1, 30) i;
-- built-in types only: the in-place statement
CREATE TABLE undotypes.plain (day date, id int, qty numeric, tags text[],
                              PRIMARY KEY (id));
SELECT backfill.register('undotypes.plain', 'day',
    'SELECT day, id, qty, tags FROM undotypes.src WHERE day >= $1 AND day < $2',
    keep_replaced => true) AS version;
SELECT backfill.plan('undotypes.plain', '2024-03-01', '2024-03-04', probe => false) AS p1 \gset
SET client_min_messages = warning;
CALL backfill.run(:p1);
UPDATE undotypes.src SET qty = qty + 1 WHERE id % 4 = 0;
DELETE FROM undotypes.src WHERE id % 7 = 0;
INSERT INTO undotypes.src VALUES ('2024-03-02', 100, 1, '{new}');
SELECT backfill.plan('undotypes.plain', '2024-03-01', '2024-03-04', probe => false) AS p2 \gset
CALL backfill.run(:p2);
RESET client_min_messages;
SELECT change, count(*) FROM backfill.diff(:p2) GROUP BY 1 ORDER BY 1;
SELECT * FROM backfill.diff(:p2) WHERE key IN ('{"id": 4}', '{"id": 7}', '{"id": 100}')
 ORDER BY 1, 2;
RESET SESSION AUTHORIZATION;
-- the same figures by hand, from the archive (as a superuser)
SELECT archive AS arch FROM backfill.archives
 WHERE target = 'undotypes.plain'::regclass \gset
SELECT CASE WHEN o.id IS NULL THEN 'added' WHEN n.id IS NULL THEN 'removed'
            ELSE 'changed' END AS change, count(*)
  FROM (SELECT * FROM :arch WHERE _backfill_run = :p2) o
  FULL JOIN undotypes.plain n ON n.id = o.id
 WHERE o.id IS NULL OR n.id IS NULL OR (o.qty, o.tags) IS DISTINCT FROM (n.qty, n.tags)
 GROUP BY 1 ORDER BY 1;

-- an enum of the user's, with the user's cast to json, and a composite:
-- diff must not run the cast, as anyone
SET SESSION AUTHORIZATION regress_undo_types;
CREATE TYPE undotypes.mood AS ENUM ('low', 'high');
CREATE FUNCTION undotypes.mood_json(undotypes.mood) RETURNS json
LANGUAGE plpgsql AS $$
BEGIN
    RAISE NOTICE 'mood cast to json as %', current_user;
    RETURN to_json($1::text);
END $$;
CREATE CAST (undotypes.mood AS json) WITH FUNCTION undotypes.mood_json(undotypes.mood);
CREATE TYPE undotypes.pair AS (mood undotypes.mood, n int);
CREATE TABLE undotypes.moods (day date, id int PRIMARY KEY, mood undotypes.mood,
                              p undotypes.pair);
CREATE TABLE undotypes.mood_src (day date, id int, mood undotypes.mood, p undotypes.pair);
INSERT INTO undotypes.mood_src VALUES ('2024-03-01', 1, 'low', ('low', 1)),
                                      ('2024-03-01', 2, 'low', ('low', 2));
SELECT backfill.register('undotypes.moods', 'day',
    'SELECT day, id, mood, p FROM undotypes.mood_src WHERE day >= $1 AND day < $2',
    keep_replaced => true) AS version;
SELECT backfill.plan('undotypes.moods', '2024-03-01', '2024-03-02', probe => false) AS m1 \gset
SET client_min_messages = warning;
CALL backfill.run(:m1);
UPDATE undotypes.mood_src SET mood = 'high', p = ('high', 2) WHERE id = 2;
SELECT backfill.plan('undotypes.moods', '2024-03-01', '2024-03-02', probe => false) AS m2 \gset
CALL backfill.run(:m2);
RESET client_min_messages;
-- no notice: the cast did not run; the values are their types' text
SELECT chunk_no, key, change, old, new FROM backfill.diff(:m2);
RESET SESSION AUTHORIZATION;
-- nor when a superuser diffs the run
SELECT chunk_no, key, change, old, new FROM backfill.diff(:m2);
-- the column's type changes after the run kept its rows: compared as text
ALTER TABLE undotypes.moods ALTER COLUMN mood TYPE text;
SELECT chunk_no, key, change, old, new FROM backfill.diff(:m2);
UPDATE undotypes.moods SET mood = 'HIGH' WHERE id = 2;
SELECT chunk_no, key, change, old, new FROM backfill.diff(:m2);

-- values equal by their type's "=" but written differently: diff reports a
-- row whose JSON differs (interval '1 day' against '24 hours', float -0
-- against 0, text with a trailing space), never one whose JSON is equal
-- (numeric 1.0 against 1.00 are equal jsonb numbers); the cheap column-wise
-- comparison diff makes first must not change that; a char(3) column keeps
-- its padding on both sides (a cast to plain "character" would cut every
-- value to one character and report every row changed)
SET SESSION AUTHORIZATION regress_undo_types;
CREATE TABLE undotypes.looks (day date, id int PRIMARY KEY, iv interval,
                              amt numeric, f float8, t text, tags text[],
                              v varchar(5), js jsonb, ch char(3));
CREATE TABLE undotypes.looks_src (LIKE undotypes.looks);
INSERT INTO undotypes.looks_src
SELECT '2024-03-01', i, interval '1 day', 1.0, 0, 'a', '{x}', 'a', '{"a": 1.0}', 'abc'
  FROM generate_series(1, 8) i;
SELECT backfill.register('undotypes.looks', 'day',
    'SELECT * FROM undotypes.looks_src WHERE day >= $1 AND day < $2',
    keep_replaced => true) AS version;
SELECT backfill.plan('undotypes.looks', '2024-03-01', '2024-03-02', probe => false) AS l1 \gset
SET client_min_messages = warning;
CALL backfill.run(:l1);
UPDATE undotypes.looks_src SET iv = interval '24 hours' WHERE id = 1;
UPDATE undotypes.looks_src SET amt = 1.00, js = '{"a": 1.00}' WHERE id = 2;
UPDATE undotypes.looks_src SET f = '-0' WHERE id = 3;
UPDATE undotypes.looks_src SET t = 'a ' WHERE id = 4;
UPDATE undotypes.looks_src SET day = '2024-03-01' WHERE id = 5;
UPDATE undotypes.looks_src SET tags = '{x,NULL}' WHERE id = 6;
UPDATE undotypes.looks_src SET amt = NULL, t = NULL WHERE id = 7;
UPDATE undotypes.looks_src SET v = 'a ', js = '{"a": 2}', ch = 'ab' WHERE id = 8;
SELECT backfill.plan('undotypes.looks', '2024-03-01', '2024-03-02', probe => false) AS l2 \gset
CALL backfill.run(:l2);
RESET client_min_messages;
SELECT * FROM backfill.diff(:l2) ORDER BY 1, 2;
RESET SESSION AUTHORIZATION;

-- Clean up.
SET client_min_messages = warning;
SELECT backfill.unregister('undotypes.plain');
SELECT backfill.unregister('undotypes.moods');
SELECT backfill.unregister('undotypes.looks');
DROP SCHEMA undotypes CASCADE;
DROP OWNED BY regress_undo_types;
DROP ROLE regress_undo_types;
RESET client_min_messages;
