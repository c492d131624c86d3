-- backfill.reconcile(run_id): the neighbour check (a planted spike and a
-- dip are outliers), neighbours missing (NULL, not false), no_source
-- chunks left out of every comparison, chunks not run yet, the settings,
-- stored results, and who may call it.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
SET client_min_messages = warning;
CREATE SCHEMA rec;
CREATE FUNCTION pg_temp.try(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- Page visits, one row per visit.  The raw log has 100 + 10 * (day % 3)
-- visits a day in February; on Feb 10 the log counted every visit four
-- times (a planted spike) and on Feb 12 it lost most of them (a dip).
CREATE TABLE rec.raw_visits (ts timestamptz NOT NULL, page int NOT NULL);
INSERT INTO rec.raw_visits
SELECT '2024-02-01'::timestamptz + (d - 1) * interval '1 day' + i * interval '1 minute', i
  FROM generate_series(1, 20) d,
       generate_series(1, CASE d WHEN 10 THEN 400 WHEN 12 THEN 20
                                 ELSE 100 + 10 * (d % 3) END) i;
-- The target has every day but Feb 8..14, which the job never wrote.
CREATE TABLE rec.visits (ts timestamptz NOT NULL, page int NOT NULL);
INSERT INTO rec.visits SELECT * FROM rec.raw_visits
 WHERE ts < '2024-02-08' OR ts >= '2024-02-15';
SELECT backfill.register('rec.visits', 'ts',
         'SELECT ts, page FROM rec.raw_visits WHERE ts >= $1 AND ts < $2');
CALL backfill.backfill('rec.visits', '2024-02-08', '2024-02-15');
SELECT max(run_id) AS visits_run FROM backfill.runs
 WHERE target = 'rec.visits'::regclass \gset

-- No ledger: ledger_value and ledger_ok are NULL.  The neighbours are
-- Feb 5..7 and Feb 15..17 (3 on either side, backfill.neighbor_chunks);
-- Feb 10 and Feb 12 lie outside median x (1 +- 0.5).
SELECT chunk_no, chunk_start, status, target_value, ledger_value, ledger_ok,
       neighbor_median, neighbor_ok, verdict
  FROM backfill.reconcile(:visits_run);
-- the median is that of the six neighbour days, computed independently
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY n) AS expected_median
  FROM (SELECT count(*) AS n FROM rec.visits
         WHERE ts >= '2024-02-05' AND ts < '2024-02-08'
            OR ts >= '2024-02-15' AND ts < '2024-02-18'
         GROUP BY date_trunc('day', ts)) d;
-- the results are stored on the chunks
SELECT chunk_no, ledger_value, ledger_ok, neighbor_median, neighbor_ok, verdict
  FROM backfill.chunks WHERE run_id = :visits_run ORDER BY chunk_no;

-- The settings: a wider band accepts the spike and the dip ...
SET backfill.neighbor_tolerance = 4;
SELECT chunk_no, target_value, neighbor_median, neighbor_ok, verdict
  FROM backfill.reconcile(:visits_run) WHERE chunk_no IN (3, 5);
RESET backfill.neighbor_tolerance;
-- ... one neighbour on either side: Feb 7 (110) and Feb 15 (100)
SET backfill.neighbor_chunks = 1;
SELECT DISTINCT neighbor_median FROM backfill.reconcile(:visits_run);
-- ... and none: no neighbour, no neighbour verdict (NULL, not false)
SET backfill.neighbor_chunks = 0;
SELECT chunk_no, neighbor_median, neighbor_ok, verdict
  FROM backfill.reconcile(:visits_run);
RESET backfill.neighbor_chunks;
-- a reconcile overwrites the stored results with the current comparison
SELECT chunk_no, neighbor_median, neighbor_ok, verdict
  FROM backfill.chunks WHERE run_id = :visits_run ORDER BY chunk_no;
SELECT count(*) AS outliers FROM backfill.reconcile(:visits_run)
 WHERE verdict = 'outlier';

-- Neighbours missing: a table that only has the backfilled days.
CREATE TABLE rec.lonely (ts timestamptz NOT NULL, page int NOT NULL);
SELECT backfill.register('rec.lonely', 'ts',
         'SELECT ts, page FROM rec.raw_visits WHERE ts >= $1 AND ts < $2');
CALL backfill.backfill('rec.lonely', '2024-02-08', '2024-02-11');
SELECT chunk_no, target_value, neighbor_median, neighbor_ok,
       neighbor_ok IS NULL AS neighbor_ok_is_null, verdict
  FROM backfill.reconcile((SELECT max(run_id) FROM backfill.runs
                            WHERE target = 'rec.lonely'::regclass));
-- Neighbours on one side only: the median is over those that have rows.
CALL backfill.backfill('rec.lonely', '2024-02-11', '2024-02-12');
SELECT chunk_no, target_value, neighbor_median, neighbor_ok, verdict
  FROM backfill.reconcile((SELECT max(run_id) FROM backfill.runs
                            WHERE target = 'rec.lonely'::regclass));

-- no_source: the source only holds data from Feb 3 on (source_horizon).
-- The target still has placeholder zeros for Feb 1..2; those chunks are
-- left out of every comparison, and they are not neighbours either.
CREATE TABLE rec.daily (day timestamptz NOT NULL, revenue numeric NOT NULL);
INSERT INTO rec.daily
SELECT '2024-01-25'::timestamptz + d * interval '1 day',
       CASE WHEN d BETWEEN 7 AND 8 THEN 0 ELSE 500 END
  FROM generate_series(0, 20) d;
CREATE TABLE rec.daily_ledger (day timestamptz NOT NULL, revenue numeric NOT NULL);
INSERT INTO rec.daily_ledger SELECT day, 500 FROM rec.daily;
SELECT backfill.register('rec.daily', 'day',
         'SELECT day, revenue FROM rec.daily_ledger WHERE day >= $1 AND day < $2',
         source_horizon => 'SELECT timestamptz ''2024-02-03 00:00+00''',
         ledger => 'SELECT sum(revenue) FROM rec.daily_ledger WHERE day >= $1 AND day < $2',
         measure => 'sum(revenue)');
CALL backfill.backfill('rec.daily', '2024-02-01', '2024-02-05');
SELECT max(run_id) AS daily_run FROM backfill.runs
 WHERE target = 'rec.daily'::regclass \gset
SELECT chunk_no, chunk_start, status, target_value, ledger_value, ledger_ok,
       neighbor_median, neighbor_ok, verdict
  FROM backfill.reconcile(:daily_run);
SELECT chunk_no, status, ledger_value, ledger_ok, neighbor_median, neighbor_ok, verdict
  FROM backfill.chunks WHERE run_id = :daily_run ORDER BY chunk_no;

-- Chunks that have not run: a probed run after its first chunk.  They
-- show what the target holds now, and nothing is compared or stored.
SELECT backfill.plan('rec.daily', '2024-02-05', '2024-02-09') AS probed_run \gset
CALL backfill.run(:probed_run);
SELECT status FROM backfill.runs WHERE run_id = :probed_run;
SELECT chunk_no, status, target_value, ledger_value, ledger_ok,
       neighbor_median, neighbor_ok, verdict
  FROM backfill.reconcile(:probed_run, include_not_run => true);
SELECT chunk_no, status, verdict FROM backfill.chunks
 WHERE run_id = :probed_run ORDER BY chunk_no;
SELECT backfill.cancel(:probed_run);
SELECT chunk_no, status, verdict FROM backfill.reconcile(:probed_run, include_not_run => true);

-- Errors.
SELECT pg_temp.try('SELECT * FROM backfill.reconcile(NULL)');
SELECT pg_temp.try('SELECT * FROM backfill.reconcile(-1)');
CREATE ROLE regress_rec_outsider;
SET ROLE regress_rec_outsider;
SELECT pg_temp.try('SELECT * FROM backfill.reconcile(' || :visits_run || ')');
RESET ROLE;
-- A reader with SELECT on the target gets the verdicts stored by the
-- planner's last reconcile (a NOTICE says so): no ledger runs for a
-- reader and nothing is written (see 67_author_identity)
CREATE ROLE regress_rec_reader;
GRANT USAGE ON SCHEMA rec TO regress_rec_reader;
GRANT SELECT ON rec.visits, rec.daily TO regress_rec_reader;
SET ROLE regress_rec_reader;
SELECT count(*) AS chunks FROM backfill.reconcile(:visits_run);
SELECT pg_temp.try('SELECT * FROM backfill.reconcile(' || :daily_run || ')');
-- users cannot write the stored results themselves
SELECT pg_temp.try('UPDATE backfill.chunks SET verdict = ''ok''');
RESET ROLE;
DROP OWNED BY regress_rec_outsider, regress_rec_reader;
DROP ROLE regress_rec_outsider, regress_rec_reader;
