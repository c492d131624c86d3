-- A revert undoes the definition too (issue 29, item 4).  revert used to
-- put the rows back but leave the undone definition current, so the next
-- only_chunks => 'outdated' plan, refresh or cascade rebuilt the reverted
-- days with it; and its chunks were shown as ledger failures.  Now, once a
-- revert run is done, the version in force before the reverted run's is
-- current again (unless another was registered since), the restored chunks
-- count as built under it, and a revert chunk has no ledger verdict.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY default
SELECT setval('backfill.runs_run_id_seq', 9201, false) IS NOT NULL AS seq_set;
CREATE SCHEMA rd;
CREATE TABLE rd.src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO rd.src SELECT '2024-03-01 00:00+00'::timestamptz + i * interval '6 hours', 1
  FROM generate_series(0, 27) i;
CREATE TABLE rd.ledger AS
SELECT date_trunc('day', ts) AS day, count(*)::int AS n FROM rd.src GROUP BY 1;
CREATE TABLE rd.daily (day timestamptz NOT NULL, n int NOT NULL);

-- v1 builds the week, keeping what it replaces.
SELECT backfill.register('rd.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, count(*)::int AS n
        FROM rd.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    definition => 'v1', keep_replaced => true, measure => 'sum(n)',
    ledger => $$SELECT sum(n) FROM rd.ledger WHERE day >= $1 AND day < $2$$) AS version;
SET client_min_messages = warning;
CALL backfill.backfill('rd.daily', '2024-03-01', '2024-03-08');
RESET client_min_messages;
-- v2 counts every row twice (its gate off), and rebuilds the week.
SELECT backfill.register('rd.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, (2 * count(*))::int AS n
        FROM rd.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    definition => 'v2', keep_replaced => true, measure => 'sum(n)', ledger_gate => false,
    ledger => $$SELECT sum(n) FROM rd.ledger WHERE day >= $1 AND day < $2$$) AS version;
SET client_min_messages = warning;
CALL backfill.backfill('rd.daily', '2024-03-01', '2024-03-08');
RESET client_min_messages;

-- v2 was wrong: revert its run.  Its chunks have no ledger verdict (the
-- summary says nothing of the ledger), and once it is done v1 is current
-- again.
SELECT backfill.revert(9202) AS rv \gset
SET backfill.notices = summary;
SET backfill.notice_timing = off;
CALL backfill.run(:rv);
CALL backfill.run(:rv);
SELECT chunk_no, ledger_ok, verdict FROM backfill.chunks WHERE run_id = :rv ORDER BY 1;
SELECT current_version, ledger_gate FROM backfill.targets WHERE target = 'rd.daily'::regclass;
SELECT version, previous_version, label FROM backfill.definitions
 WHERE target = 'rd.daily'::regclass ORDER BY 1;
-- The restored chunks count as built under v1, the current version: an
-- outdated plan finds nothing (it proposed the seven days), and the
-- lineage shows v1.
SELECT backfill.plan('rd.daily', '2024-03-01', '2024-03-08', only_chunks => 'outdated') AS nothing;
SELECT range_start, range_end, definition_version, label, run_id FROM backfill.lineage('rd.daily');
SELECT sum(n) AS total FROM rd.daily;
-- Registering v1's text again changes nothing: it is current.
SELECT backfill.register('rd.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, count(*)::int AS n
        FROM rd.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    definition => 'v1', keep_replaced => true, measure => 'sum(n)',
    ledger => $$SELECT sum(n) FROM rd.ledger WHERE day >= $1 AND day < $2$$) AS version;

-- The revert of the revert: v2's rows are back, and v2 with them.
SELECT backfill.revert(:rv) AS rrv \gset
CALL backfill.run(:rrv);
CALL backfill.run(:rrv);
SELECT current_version FROM backfill.targets WHERE target = 'rd.daily'::regclass;

-- A version registered since stays current: v3, then the revert of the
-- revert of the revert (v1's rows back again).
SELECT backfill.register('rd.daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, count(*)::int AS n
        FROM rd.src WHERE ts >= $1 AND ts < $2 GROUP BY 1$$,
    definition => 'v3', keep_replaced => true, measure => 'sum(n)',
    ledger => $$SELECT sum(n) FROM rd.ledger WHERE day >= $1 AND day < $2$$) AS version;
SELECT backfill.revert(:rrv) AS rrrv \gset
CALL backfill.run(:rrrv);
CALL backfill.run(:rrrv);
SELECT current_version FROM backfill.targets WHERE target = 'rd.daily'::regclass;
SELECT sum(n) AS total FROM rd.daily;

-- A version that only changed the strategy is the same definition: the
-- revert of a run under it changes nothing.
SELECT backfill.set_strategy('rd.daily', 'delete') AS previous;
SELECT current_version FROM backfill.targets WHERE target = 'rd.daily'::regclass;
SELECT backfill.plan('rd.daily', '2024-03-01', '2024-03-02', probe => false) AS r \gset
CALL backfill.run(:r);
SELECT backfill.revert(:r) AS rr \gset
CALL backfill.run(:rr);
SELECT current_version, strategy FROM backfill.targets WHERE target = 'rd.daily'::regclass;
RESET backfill.notices;
RESET backfill.notice_timing;

-- Clean up.
SELECT backfill.purge_archive('rd.daily', '0 seconds') > 0 AS purged;
SELECT backfill.unregister('rd.daily');
DROP SCHEMA rd CASCADE;
