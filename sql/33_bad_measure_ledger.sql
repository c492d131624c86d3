-- Bad measure and ledger text is rejected at register time, before
-- anything runs: injection attempts, statements that write, more than one
-- statement, non-aggregates, wrong result shapes.  After every attempt the
-- tables are intact, nothing is registered, and no side effect happened.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
SET client_min_messages = warning;
CREATE SCHEMA bad;
CREATE FUNCTION pg_temp.try(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
CREATE TABLE bad.payments (ts timestamptz NOT NULL, amount numeric NOT NULL,
                           note text);
INSERT INTO bad.payments VALUES ('2024-01-01 10:00', 10, 'a'), ('2024-01-02 10:00', 20, 'b');
CREATE TABLE bad.ledger (ts timestamptz NOT NULL, amount numeric NOT NULL);
INSERT INTO bad.ledger SELECT ts, amount FROM bad.payments;
-- a canary: any statement that reaches the server adds a row here
CREATE TABLE bad.canary (n int);
CREATE FUNCTION bad.touch() RETURNS numeric LANGUAGE sql
    AS 'INSERT INTO bad.canary VALUES (1) RETURNING 1::numeric';

-- A helper registering with a given measure and ledger.
CREATE FUNCTION pg_temp.reg(measure text, ledger text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    RETURN pg_temp.try(format(
        'SELECT backfill.register(%L, %L, %L, ledger => %L, measure => %L)',
        'bad.payments', 'ts',
        'SELECT ts, amount, note FROM bad.payments WHERE ts >= $1 AND ts < $2',
        ledger, measure));
END $$;

-- measures
SELECT m AS measure, pg_temp.reg(m, NULL) AS result
  FROM unnest(ARRAY[
    'sum(amount); DROP TABLE bad.ledger; --',
    'sum(amount)) FROM bad.ledger; DROP TABLE bad.ledger; --',
    'sum(amount) FROM bad.ledger --',
    'amount',
    'sum(amount) OVER ()',
    '(SELECT sum(amount) FROM bad.ledger)',
    'sum((SELECT 1))',
    'max(note)',
    'generate_series(1, 2)',
    'sum(no_such_column)',
    '',
    '1 +'
  ]) AS m;

-- ledgers
SELECT l AS ledger, pg_temp.reg('sum(amount)', l) AS result
  FROM unnest(ARRAY[
    'SELECT sum(amount) FROM bad.ledger WHERE ts >= $1 AND ts < $2; DROP TABLE bad.ledger',
    'DELETE FROM bad.ledger WHERE ts >= $1 AND ts < $2 RETURNING amount',
    'WITH d AS (DELETE FROM bad.ledger RETURNING amount) SELECT sum(amount) FROM d WHERE $1 < $2',
    'INSERT INTO bad.canary VALUES (1) RETURNING $1::text',
    'SELECT sum(amount), count(*) FROM bad.ledger WHERE ts >= $1 AND ts < $2',
    'SELECT ''many'' FROM bad.ledger WHERE ts >= $1 AND ts < $2',
    'SELECT sum(amount) FROM bad.ledger WHERE ts >= $1 AND ts < $3',
    'DROP TABLE bad.ledger',
    'VACUUM bad.ledger',
    'SELECT sum(amount) FROM bad.no_such_table WHERE ts >= $1 AND ts < $2',
    'SELECT sum(amount) FROM bad.ledger WHERE ts >= $1 AND ts < $2 FOR UPDATE'
  ]) AS l;

-- nothing was registered, nothing was dropped, nothing was written
SELECT count(*) AS registered FROM backfill.targets WHERE target = 'bad.payments'::regclass;
SELECT count(*) AS ledger_rows FROM bad.ledger;
SELECT count(*) AS payments_rows FROM bad.payments;
SELECT count(*) AS canary_rows FROM bad.canary;

-- validation parses and analyses, it never executes: a measure calling
-- a function that writes is the user's own business (it runs as the user
-- when a chunk or a check evaluates it), but registering it runs nothing
SELECT pg_temp.reg('sum(bad.touch())', NULL) AS result;
SELECT count(*) AS canary_rows FROM bad.canary;

-- a valid measure and ledger register, and check() works with them
SELECT pg_temp.reg('sum(amount)',
                   'SELECT sum(amount) FROM bad.ledger WHERE ts >= $1 AND ts < $2') AS result;
SELECT chunk_start, target_value, ledger_value, ledger_ok, verdict
  FROM backfill.check('bad.payments', '2024-01-01', '2024-01-03');
