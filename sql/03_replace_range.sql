-- replace_range(target, time_column, range_start, range_end, source,
-- strategy): delete the target's rows in [start, end), insert what the
-- source yields for $1 = start, $2 = end, in the caller's transaction.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set SHOW_CONTEXT never
-- errors are shown as SQLSTATE: message
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
CREATE SCHEMA rr;
CREATE TABLE rr.raw (ts timestamptz, amount numeric);
INSERT INTO rr.raw
SELECT '2024-01-01'::timestamptz + i * interval '1 hour', i
  FROM generate_series(0, 71) i;
CREATE TABLE rr.daily (ts timestamptz, amount numeric, note text);
INSERT INTO rr.daily VALUES ('2024-01-01 05:00', 999, 'stale'),
                            ('2023-12-31 23:59:59.999999', 5, 'before'),
                            ('2024-01-02 00:00', 7, 'at the end');
-- the state of a table: its rows with their physical position, so a row
-- deleted and inserted again shows up as changed
CREATE FUNCTION pg_temp.state(t regclass) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r text;
BEGIN
    EXECUTE format('SELECT md5(coalesce(string_agg(ctid::text || x::text, '','' ORDER BY ctid), '''')) FROM %s x', t)
      INTO r;
    RETURN r;
END $$;

-- columns matched by name (the source's order differs from the table's);
-- the rows at range_start - 1 microsecond and at range_end stay
SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-01', '2024-01-02',
    'SELECT amount, ts FROM rr.raw WHERE ts >= $1 AND ts < $2;');
SELECT count(*), sum(amount), string_agg(note, ', ' ORDER BY ts) AS notes FROM rr.daily;
SELECT min(ts), max(ts) FROM rr.daily WHERE note IS NULL;

-- idempotent: running the same replacement again leaves the same rows
CREATE TEMP TABLE once AS SELECT * FROM rr.daily;
SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-01', '2024-01-02',
    'SELECT amount, ts FROM rr.raw WHERE ts >= $1 AND ts < $2');
SELECT (SELECT md5(string_agg(x::text, ',' ORDER BY x::text)) FROM once x) =
       (SELECT md5(string_agg(x::text, ',' ORDER BY x::text)) FROM rr.daily x) AS same_rows,
       (SELECT count(*) FROM rr.daily) AS row_count;

-- in the caller's transaction: a rollback undoes it
BEGIN;
SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-01', '2024-01-03',
    'SELECT ts, 0 AS amount FROM rr.raw WHERE ts >= $1 AND ts < $2');
SELECT count(*), sum(amount) FROM rr.daily;
ROLLBACK;
SELECT count(*), sum(amount) FROM rr.daily;

-- every plain query shape that reads is a valid source; a bare VALUES
-- names its columns column1, column2, ... so name them in a FROM list
SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-05', '2024-01-06',
    'VALUES (''2024-01-05 10:00''::timestamptz)') AS values_source;
SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-05', '2024-01-06',
    'SELECT * FROM (VALUES (''2024-01-05 10:00''::timestamptz, 10)) AS v(ts, amount)') AS values_source;
SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-05', '2024-01-06',
    'WITH r AS (SELECT ts + interval ''4 days'' AS ts, amount FROM rr.raw)
     SELECT ts, amount FROM r WHERE ts >= $1 AND ts < $2
     UNION ALL SELECT $1, -1') AS with_union;
CREATE TABLE rr.staging (ts timestamptz, amount numeric);
INSERT INTO rr.staging VALUES ('2024-01-05 01:00', 1), ('2024-01-05 02:00', 2);
SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-05', '2024-01-06',
    '/* staged rows */ TABLE rr.staging -- all of it') AS table_source;
SELECT ts, amount, note FROM rr.daily WHERE ts >= '2024-01-05' ORDER BY ts;
-- an empty source empties the range
SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-05', '2024-01-06',
    'SELECT ts, amount FROM rr.staging WHERE false');
-- an aggregating source: the range check is never applied to the rows
-- the source filters out itself (it is not pushed below the source's WHERE)
CREATE TABLE rr.rollup (day timestamptz, total numeric);
SELECT * FROM backfill.replace_range('rr.rollup', 'day', '2024-01-02', '2024-01-03',
    'SELECT date_trunc(''day'', ts) AS day, sum(amount) AS total
       FROM rr.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1');
SELECT * FROM rr.rollup;
-- the same for a filter the planner runs last (an expensive function): the
-- source is fenced off, so rows it filters out never reach the check
CREATE FUNCTION rr.in_window(t timestamptz, lo timestamptz, hi timestamptz)
RETURNS boolean LANGUAGE plpgsql AS $$BEGIN RETURN t >= lo AND t < hi; END$$;
SELECT * FROM backfill.replace_range('rr.rollup', 'day', '2024-01-02', '2024-01-03',
    'SELECT ts AS day, amount AS total FROM rr.raw WHERE rr.in_window(ts, $1, $2)');
SELECT count(*), sum(total) FROM rr.rollup;

-- time columns of type date and timestamp are compared in the session
-- TimeZone; [2024-01-02, 2024-01-04) holds two days
CREATE TABLE rr.by_date (day date PRIMARY KEY, total numeric);
INSERT INTO rr.by_date SELECT d, 0 FROM generate_series('2024-01-01'::date, '2024-01-05', '1 day') d;
SELECT * FROM backfill.replace_range('rr.by_date', 'day', '2024-01-02', '2024-01-04',
    'SELECT ts::date AS day, sum(amount) AS total FROM rr.raw
      WHERE ts >= $1 AND ts < $2 GROUP BY 1');
SELECT * FROM rr.by_date ORDER BY day;
CREATE TABLE rr.by_ts (at timestamp, v int);
INSERT INTO rr.by_ts VALUES ('2024-01-01 23:00', 1), ('2024-01-02 00:00', 2);
SET TimeZone = 'Europe/Berlin';
-- a timestamp column holds local times: in Europe/Berlin the range
-- [2024-01-02 00:00+01, 2024-01-03 00:00+01) is the local day January 2
SELECT * FROM backfill.replace_range('rr.by_ts', 'at', '2024-01-02 00:00+01', '2024-01-03 00:00+01',
    'SELECT $1::timestamp AS at, 3 AS v');
SELECT * FROM rr.by_ts ORDER BY at;
SET TimeZone = 'UTC';

-- a partitioned target
CREATE TABLE rr.parted (ts timestamptz, v int) PARTITION BY RANGE (ts);
CREATE TABLE rr.parted_1 PARTITION OF rr.parted FOR VALUES FROM ('2024-01-01') TO ('2024-01-02');
CREATE TABLE rr.parted_2 PARTITION OF rr.parted FOR VALUES FROM ('2024-01-02') TO ('2024-01-03');
INSERT INTO rr.parted VALUES ('2024-01-01 12:00', 1), ('2024-01-02 12:00', 1);
SELECT * FROM backfill.replace_range('rr.parted', 'ts', '2024-01-01 06:00', '2024-01-02 18:00',
    'SELECT ts, 2 AS v FROM rr.raw WHERE ts >= $1 AND ts < $2');
SELECT tableoid::regclass, count(*), sum(v) FROM rr.parted GROUP BY 1 ORDER BY 1;

-- strategies: truncate and swap need a partitioned target (50_partitions tests them)
SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-05', '2024-01-06',
    'TABLE rr.staging', 'delete');
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-05', '2024-01-06', 'TABLE rr.staging', 'truncate')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-05', '2024-01-06', 'TABLE rr.staging', 'swap')$$);
SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-05', '2024-01-06',
    'TABLE rr.staging', 'fastest');

-- NULL arguments and bad ranges
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range(NULL, 'ts', '2024-01-05', '2024-01-06', 'TABLE rr.staging')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('rr.daily', NULL, '2024-01-05', '2024-01-06', 'TABLE rr.staging')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('rr.daily', 'ts', NULL, '2024-01-06', 'TABLE rr.staging')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-05', NULL, 'TABLE rr.staging')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-05', '2024-01-06', NULL)$$);
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-05', '2024-01-06', 'TABLE rr.staging', NULL)$$);
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-06', '2024-01-05', 'TABLE rr.staging')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-05', 'infinity', 'TABLE rr.staging')$$);

-- Every rejected source leaves the target exactly as it was: same rows in
-- the same places, and a victim table nobody may touch stays intact.
CREATE TABLE rr.victim (id int);
INSERT INTO rr.victim VALUES (1), (2);
CREATE TEMP TABLE before AS SELECT pg_temp.state('rr.daily') AS daily, pg_temp.state('rr.victim') AS victim;
CREATE TEMP TABLE bad_sources (n serial, source text);
INSERT INTO bad_sources (source) VALUES
    (''),
    ('   -- only a comment'),
    (';'),
    ('SELECT ts, amount FROM rr.raw WHERE ts >= $1 AND ts < $2; DELETE FROM rr.victim'),
    ('SELECT ts, amount FROM rr.raw; SELECT 1'),
    ('DELETE FROM rr.victim RETURNING id'),
    ('INSERT INTO rr.victim VALUES (3) RETURNING id'),
    ('TRUNCATE rr.victim'),
    ('WITH gone AS (DELETE FROM rr.victim RETURNING *) SELECT $1 AS ts'),
    ('WITH a AS (SELECT 1), gone AS (UPDATE rr.victim SET id = 0 RETURNING *) SELECT $1 AS ts'),
    ('SELECT ts, amount INTO rr.copy FROM rr.raw'),
    ('SELECT ts, amount FROM rr.raw FOR UPDATE'),
    ('SELECT * FROM (SELECT ts, amount FROM rr.raw FOR SHARE) s'),
    ('SELECT ts, amount FROM rr.raw WHERE ts >= $1 AND ts < $2) AS s WHERE true; DELETE FROM rr.victim; SELECT * FROM (SELECT now() AS ts'),
    ('SELECT ts, amount FROM rr.raw WHERE ts >= $1 AND ts < $2) AS s, rr.victim v WHERE backfill._in_range(s.ts, $1, $2) --'),
    ('SELECT ts, amount FROM rr.raw WHERE ts >= $1 AND ts < $2 /*'),
    ('SELECT ts, amount FROM rr.raw WHERE ts >= $1 AND ts < $2 AND ''x'' = ''x'),
    ('SELECT ts, amount FROM rr.raw WHERE ts >= $1 AND ts < $2 AND $x$ = $x'),
    ('SELECT ts, amount FROM rr.raw WHERE ts >= $1 AND ts < $3'),
    ('SELECT ts, amount FROM rr.nosuch'),
    ('SELECT ts, nosuch FROM rr.raw'),
    ('SELECT ts, amount, amount * 2 AS doubled, 1 AS "Extra" FROM rr.raw'),
    ('SELECT ts, amount, amount FROM rr.raw'),
    ('SELECT amount FROM rr.raw'),
    ('SELECT ts, ts AS amount FROM rr.raw'),
    ('SELECT ts, 1 AS xmin FROM rr.raw'),
    ('SELECT ts, amount FROM rr.raw'),
    ('SELECT ts + interval ''1 day'' AS ts, amount FROM rr.raw WHERE ts >= $1 AND ts < $2'),
    ('SELECT ts, amount FROM rr.raw WHERE ts >= $1 AND ts < $2 UNION ALL SELECT NULL, 0'),
    ('SELECT ts, 1 / (amount - 3) AS amount FROM rr.raw WHERE ts >= $1 AND ts < $2');
SELECT n, pg_temp.err(format($$SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-01', '2024-01-02', %L)$$, source)) AS error
  FROM bad_sources ORDER BY n;
SELECT b.daily = pg_temp.state('rr.daily') AS daily_untouched,
       b.victim = pg_temp.state('rr.victim') AS victim_untouched,
       (SELECT count(*) FROM rr.victim) AS victim_rows,
       to_regclass('rr.copy') AS copy_table
  FROM before b;
-- the full text of some of these errors
SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-01', '2024-01-02',
    'SELECT ts, amount FROM rr.raw WHERE ts >= $1 AND ts < $2) AS s WHERE true; DELETE FROM rr.victim; SELECT * FROM (SELECT now() AS ts');
SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-01', '2024-01-02',
    'SELECT ts, amount, amount * 2 AS doubled, 1 AS "Extra" FROM rr.raw');
SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-01', '2024-01-02',
    'SELECT ts, amount FROM rr.raw WHERE ts >= $1 AND ts < $2 + interval ''1 hour''');
SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-01', '2024-01-02',
    'SELECT NULL::timestamptz AS ts, 1 AS amount');
SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-01', '2024-01-02',
    'SELECT amount FROM rr.raw');

-- generated and identity columns cannot be supplied
CREATE TABLE rr.gen (ts timestamptz, amount numeric,
                     doubled numeric GENERATED ALWAYS AS (amount * 2) STORED,
                     id int GENERATED ALWAYS AS IDENTITY);
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('rr.gen', 'ts', '2024-01-01', '2024-01-02', 'SELECT ts, amount, 0 AS doubled FROM rr.raw')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('rr.gen', 'ts', '2024-01-01', '2024-01-02', 'SELECT ts, amount, 0 AS id FROM rr.raw')$$);
SELECT * FROM backfill.replace_range('rr.gen', 'ts', '2024-01-01', '2024-01-02',
    'SELECT ts, amount FROM rr.raw WHERE ts >= $1 AND ts < $2 AND amount < 3');
SELECT ts, amount, doubled, id FROM rr.gen ORDER BY ts;

-- the time column: it must exist and be timestamptz, timestamp or date
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('rr.daily', 'nosuch', '2024-01-01', '2024-01-02', 'TABLE rr.staging')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('rr.daily', 'amount', '2024-01-01', '2024-01-02', 'TABLE rr.staging')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('rr.daily', 'note', '2024-01-01', '2024-01-02', 'TABLE rr.staging')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('rr.daily', 'ctid', '2024-01-01', '2024-01-02', 'TABLE rr.staging')$$);
CREATE TABLE rr.epoch (ts bigint, v int);
SELECT * FROM backfill.replace_range('rr.epoch', 'ts', '2024-01-01', '2024-01-02', 'SELECT 1::bigint AS ts');
ALTER TABLE rr.daily DROP COLUMN note;
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('rr.daily', 'note', '2024-01-01', '2024-01-02', 'TABLE rr.staging')$$);
SELECT pg_temp.err($$SELECT * FROM backfill.replace_range('rr.daily', 'ts', '2024-01-01', '2024-01-02', 'SELECT ts, amount, ''x'' AS note FROM rr.staging')$$);

-- the target must be a table or a partitioned table
CREATE VIEW rr.v AS SELECT * FROM rr.daily;
CREATE MATERIALIZED VIEW rr.mv AS SELECT * FROM rr.daily;
CREATE SEQUENCE rr.seq;
CREATE FOREIGN DATA WRAPPER rr_fdw;
CREATE SERVER rr_server FOREIGN DATA WRAPPER rr_fdw;
CREATE FOREIGN TABLE rr.ft (ts timestamptz, amount numeric) SERVER rr_server;
SELECT t, pg_temp.err(format($$SELECT * FROM backfill.replace_range(%L, 'ts', '2024-01-01', '2024-01-02', 'TABLE rr.staging')$$, t)) AS error
  FROM unnest(ARRAY['rr.v', 'rr.mv', 'rr.seq', 'rr.ft', 'rr.daily_pkey_nosuch']) t;
SELECT * FROM backfill.replace_range('rr.v', 'ts', '2024-01-01', '2024-01-02', 'TABLE rr.staging');
