-- Lineage in the harder cases: a backwards run that fails half-way (its
-- done chunks count, the failed one does not), resumed by another role
-- (ranges split by executor), a later run that cuts an earlier run's range
-- in two, and a cancelled run whose done chunk still counts.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO';
SET client_min_messages = warning;
CREATE SCHEMA r23;
CREATE TABLE r23.src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO r23.src SELECT '2024-07-01'::timestamptz + i * interval '2 hours', 1 FROM generate_series(0, 59) i;
CREATE TABLE r23.broken (day timestamptz PRIMARY KEY);
CREATE TABLE r23.t (ts timestamptz NOT NULL, v int NOT NULL);
CREATE ROLE regress_r23_a;
CREATE ROLE regress_r23_b;
GRANT regress_r23_a TO regress_r23_b;
GRANT USAGE ON SCHEMA r23 TO regress_r23_a;
GRANT SELECT ON r23.src, r23.broken TO regress_r23_a;
GRANT SELECT, INSERT, DELETE ON r23.t TO regress_r23_a;
-- Role a registers the target: its text runs as role a.
SET ROLE regress_r23_a;
SELECT backfill.register('r23.t', 'ts',
    'SELECT s.ts, s.v / CASE WHEN EXISTS (SELECT FROM r23.broken b WHERE b.day = $1) THEN 0 ELSE 1 END AS v
       FROM r23.src s WHERE s.ts >= $1 AND s.ts < $2') AS version;
RESET ROLE;

-- Role a plans a backwards run over Jul 1-6; Jul 4 is broken, so Jul 5
-- is done and Jul 4 fails.
INSERT INTO r23.broken VALUES ('2024-07-04');
SET ROLE regress_r23_a;
SELECT backfill.plan('r23.t', '2024-07-01', '2024-07-06', probe => false, backwards => true) AS run_a \gset
\set VERBOSITY sqlstate
CALL backfill.run(:run_a);
\set VERBOSITY default
RESET ROLE;
SELECT chunk_no, chunk_start, status FROM backfill.history WHERE run_id = :run_a ORDER BY chunk_no;
SELECT range_start, range_end, state, executed_by FROM backfill.lineage('r23.t');

-- Role b (who has role a's privileges) resumes it after the fix.
DELETE FROM r23.broken;
SET ROLE regress_r23_b;
CALL backfill.run(:run_a);
RESET ROLE;
SELECT status FROM backfill.runs WHERE run_id = :run_a;
SELECT chunk_no, chunk_start, status, attempts, executed_by FROM backfill.history
 WHERE run_id = :run_a ORDER BY chunk_no;
-- Two ranges, one per executor.
SELECT range_start, range_end, state, executed_by, run_id = :run_a AS is_a FROM backfill.lineage('r23.t');

-- A later run in six-hour chunks over Jul 2 12:00 - Jul 3 12:00 cuts role
-- b's range in two.
SELECT backfill.plan('r23.t', '2024-07-02 12:00', '2024-07-03 12:00', chunk => '6 hours',
                     probe => false) AS run_b \gset
CALL backfill.run(:run_b);
SELECT range_start, range_end, executed_by,
       CASE run_id WHEN :run_a THEN 'a' WHEN :run_b THEN 'b' END AS run
  FROM backfill.lineage('r23.t');

-- A run cancelled after its first chunk: that chunk changed the data and
-- is lineage; the cancelled chunks are not.
SELECT backfill.plan('r23.t', '2024-07-01', '2024-07-03', probe => false) AS run_c \gset
CALL backfill.run(:run_c, max_chunks => 1);
SELECT backfill.cancel(:run_c) AS cancelled;
SELECT range_start, range_end, executed_by,
       CASE run_id WHEN :run_a THEN 'a' WHEN :run_b THEN 'b' WHEN :run_c THEN 'c' END AS run
  FROM backfill.lineage('r23.t');
SELECT chunk_no, status FROM backfill.history WHERE run_id = :run_c ORDER BY 1;
-- The table holds each source row exactly once.
SELECT count(*) AS rows, count(DISTINCT ts) AS distinct_times FROM r23.t;

DROP OWNED BY regress_r23_a, regress_r23_b;
DROP ROLE regress_r23_b;
DROP ROLE regress_r23_a;
