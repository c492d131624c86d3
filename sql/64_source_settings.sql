-- A source that changes search_path and TimeZone for the rest of its
-- transaction with set_config(..., true) (checklist S8; the session-wide
-- set_config(..., false) case is in 13_run_failures): each later chunk
-- still starts under the run's recorded settings, the chunk bounds stay
-- those planned, and the caller's session settings are unchanged.
\set SHOW_CONTEXT never
SET TimeZone = 'UTC';
SET DateStyle = ISO;
-- run ids of this file start at 6401, whatever ran before
SELECT setval('backfill.runs_run_id_seq', 6401, false) IS NOT NULL AS seq_set;
CREATE SCHEMA regress_hard_evil;
CREATE TABLE regress_hard_tgt (ts timestamptz NOT NULL, v int NOT NULL);
CREATE TABLE regress_hard_src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO regress_hard_src
  SELECT t, 1 FROM generate_series('2024-01-01 00:00+00'::timestamptz, '2024-01-04 23:00+00', '1 hour') t;
INSERT INTO regress_hard_tgt
  SELECT t, 0 FROM generate_series('2023-12-31 00:00+00'::timestamptz, '2024-01-05 22:00+00', '2 hours') t;
-- What each chunk's source saw first, and what it then switched to.
CREATE TABLE regress_hard_seen (id serial, chunk_start timestamptz, tz text, path text);
CREATE FUNCTION regress_hard_switch(lo timestamptz) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.regress_hard_seen (chunk_start, tz, path)
      VALUES (lo, pg_catalog.current_setting('TimeZone'), pg_catalog.current_setting('search_path'));
    PERFORM pg_catalog.set_config('search_path', 'regress_hard_evil, pg_catalog', true);
    PERFORM pg_catalog.set_config('TimeZone', 'Asia/Kolkata', true);
    RETURN true;
END $$;
SELECT backfill.register('public.regress_hard_tgt', 'ts',
  $$SELECT s.ts, s.v FROM public.regress_hard_src s,
                          (SELECT public.regress_hard_switch($1) AS ok) g
     WHERE g.ok AND s.ts OPERATOR(pg_catalog.>=) $1 AND s.ts OPERATOR(pg_catalog.<) $2$$,
  chunk => '1 day');
-- Planned in New York: the chunks are New York days.
SET TimeZone = 'America/New_York';
SELECT backfill.plan('public.regress_hard_tgt', '2024-01-01', '2024-01-04',
                     probe => false) AS run \gset
SET TimeZone = 'UTC';
SET search_path = public;
\set VERBOSITY terse
CALL backfill.run(:run);
\set VERBOSITY default
SHOW TimeZone;
SHOW search_path;
RESET search_path;
SELECT DISTINCT ON (chunk_start) chunk_start, tz,
       -- the run's search_path, with pg_temp forced last
       path = (SELECT search_path || ', pg_temp' FROM backfill.runs WHERE run_id = :run) AS run_path
  FROM regress_hard_seen ORDER BY chunk_start, id;
SELECT chunk_no, chunk_start, chunk_end, status, rows_deleted, rows_inserted
  FROM backfill.chunks WHERE run_id = :run ORDER BY chunk_no;
-- The range holds the source rows once, the rest the old rows.
SELECT count(*), sum(v) FROM regress_hard_tgt
 WHERE ts >= '2024-01-01 05:00+00' AND ts < '2024-01-04 05:00+00';
SELECT count(*), sum(v) FROM regress_hard_tgt
 WHERE ts < '2024-01-01 05:00+00' OR ts >= '2024-01-04 05:00+00';

SELECT backfill.unregister('regress_hard_tgt');
DROP TABLE regress_hard_tgt, regress_hard_src, regress_hard_seen;
DROP FUNCTION regress_hard_switch(timestamptz);
DROP SCHEMA regress_hard_evil;
