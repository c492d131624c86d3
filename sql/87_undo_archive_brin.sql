-- The archive's BRIN index on (_backfill_run, _backfill_chunk) is given one
-- row per heap block a keeping chunk fills, not every row (doc/undo.md "How
-- a chunk keeps"): every row of a chunk has the same key.  The index must
-- still find every kept row, also when a chunk's rows land in block ranges
-- that are already summarized: the same counts through the index as
-- through a sequential scan.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
CREATE SCHEMA undobrin;
CREATE TABLE undobrin.src (day date, id int, pad text);
INSERT INTO undobrin.src
SELECT '2024-05-01'::date + i % 3, i, repeat('x', 180) FROM generate_series(1, 12000) i;
CREATE TABLE undobrin.t (day date, id int, pad text);
SELECT backfill.register('undobrin.t', 'day',
    'SELECT day, id, pad FROM undobrin.src WHERE day >= $1 AND day < $2',
    keep_replaced => true) AS version;
SET client_min_messages = warning;
SELECT backfill.plan('undobrin.t', '2024-05-01', '2024-05-04', probe => false) AS r1 \gset
CALL backfill.run(:r1);
SELECT backfill.plan('undobrin.t', '2024-05-01', '2024-05-04', probe => false) AS r2 \gset
CALL backfill.run(:r2);
RESET client_min_messages;
SELECT archive AS arch FROM backfill.archives WHERE target = 'undobrin.t'::regclass \gset
SELECT indexrelid::regclass AS idx FROM pg_index WHERE indrelid = :'arch'::regclass \gset
-- run 2's rows fill several block ranges; summarize them all (the last one
-- partly filled), so that run 3's rows start in a summarized range
SELECT pg_relation_size(:'arch') / 8192 > 256 AS spans_ranges,
       brin_summarize_new_values(:'idx') >= 2 AS summarized;
SET client_min_messages = warning;
SELECT backfill.plan('undobrin.t', '2024-05-01', '2024-05-04', probe => false) AS r3 \gset
CALL backfill.run(:r3);
RESET client_min_messages;
-- the kept rows per run and chunk, by a sequential scan ...
SET enable_indexscan = off;
SET enable_bitmapscan = off;
CREATE TEMP TABLE by_seq AS
SELECT CASE _backfill_run WHEN :r2 THEN 'r2' WHEN :r3 THEN 'r3' END AS run,
       _backfill_run AS run_id, _backfill_chunk AS chunk, count(*) AS n
  FROM :arch GROUP BY 1, 2, 3;
RESET enable_indexscan;
RESET enable_bitmapscan;
SELECT run, chunk, n FROM by_seq ORDER BY 1, 2;
-- ... and through the BRIN index: the same, for every chunk
CREATE FUNCTION pg_temp.plan_has(q text, node text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF position(node IN l) > 0 THEN RETURN true; END IF;
  END LOOP;
  RETURN false;
END $$;
SET enable_seqscan = off;
SELECT s.run, s.chunk, s.n AS by_seq,
       (SELECT count(*) FROM :arch a
         WHERE a._backfill_run = s.run_id AND a._backfill_chunk = s.chunk) AS by_index
  FROM by_seq s ORDER BY 1, 2;
-- (the counts above were read through the index)
SELECT pg_temp.plan_has(format('SELECT count(*) FROM %s a WHERE a._backfill_run = %s'
                               ' AND a._backfill_chunk = 1', :'arch', :r3),
                        'Bitmap Index Scan') AS by_brin;
RESET enable_seqscan;
SELECT backfill.unregister('undobrin.t');
DROP SCHEMA undobrin CASCADE;
