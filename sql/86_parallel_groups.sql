-- Parallel chunks across a group (issue 19): run_group(parallel => N) keeps
-- up to N chunks in flight across the group's runs.  The group's first
-- chunk (the root's probe) runs alone; then a downstream chunk starts only
-- when every upstream chunk it covers is done, and the chunks of
-- independent targets overlap; max_chunks counts over the group; the first
-- failure stops new starts in the whole group.  Each chunk sleeps 0.3 s so
-- that workers overlap; nothing here asserts a duration.
--
-- The group: par2.a (daily, the root) feeds par2.b and par2.c (monthly);
-- b and c are independent of each other, and each of their chunks needs
-- every chunk of a.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
SELECT setval('backfill.runs_run_id_seq', 8601, false) IS NOT NULL AS seq_set;
CREATE SCHEMA par2;
CREATE TABLE par2.raw (ts timestamptz, amount int);
INSERT INTO par2.raw SELECT t, 1 FROM generate_series('2024-05-01'::timestamptz, '2024-05-08 23:00', '1 hour') t;
CREATE TABLE par2.broken (tgt text, day timestamptz);
-- failing at once for a target on the days listed in par2.broken, else
-- slow (0.3 s per chunk, at its first row)
CREATE FUNCTION par2.ok(tgt text, lo timestamptz, t timestamptz) RETURNS bool
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM par2.broken b WHERE b.tgt = ok.tgt AND b.day = lo) THEN
        RAISE EXCEPTION 'source of % broken on %', tgt, lo::date;
    END IF;
    IF t = lo THEN
        PERFORM pg_sleep(0.3);
    END IF;
    RETURN true;
END $$;
CREATE TABLE par2.a (day timestamptz, revenue int);
CREATE TABLE par2.b (day timestamptz, revenue int);
CREATE TABLE par2.c (day timestamptz, revenue int);
SELECT backfill.register('par2.a', 'day',
    'SELECT date_trunc(''day'', ts) AS day, sum(amount)::int AS revenue FROM par2.raw WHERE ts >= $1 AND ts < $2 AND par2.ok(''a'', $1, ts) GROUP BY 1');
SELECT backfill.register('par2.b', 'day',
    'SELECT day, revenue * 10 AS revenue FROM par2.a WHERE day >= $1 AND day < $2 AND par2.ok(''b'', $1, day)',
    chunk => '1 month');
SELECT backfill.register('par2.c', 'day',
    'SELECT day, revenue * 100 AS revenue FROM par2.a WHERE day >= $1 AND day < $2 AND par2.ok(''c'', $1, day)',
    chunk => '1 month');
SELECT backfill.depend('par2.b', 'par2.a');
SELECT backfill.depend('par2.c', 'par2.a');
-- The chunks of a group with when they ran, for the checks below.
CREATE VIEW par2.group_chunks AS
SELECT r.group_id, r.run_id, r.target::text AS target, c.chunk_no, c.status,
       c.chunk_start, c.chunk_end, c.started_at, c.finished_at, c.executed_via,
       c.attempts, c.error_message
  FROM backfill.runs r JOIN backfill.chunks c USING (run_id);

-- The group's first chunk is the probe: it runs alone, in the session, and
-- the call stops after it, as without parallel.
SELECT backfill.plan('par2.a', '2024-05-01', '2024-05-09', cascade => true) AS g \gset
SET client_min_messages = warning;
CALL backfill.run_group(:g, parallel => 2);
RESET client_min_messages;
SELECT target, chunk_no, status, executed_via FROM par2.group_chunks
 WHERE group_id = :g AND status <> 'pending' ORDER BY run_id, chunk_no;

-- The rest: up to 2 chunks in flight across the group's three runs.
SET client_min_messages = warning;
CALL backfill.run_group(:g, parallel => 2);
RESET client_min_messages;
SELECT g.target, r.status, count(*) AS chunks,
       count(*) FILTER (WHERE g.executed_via = 'worker') AS by_workers
  FROM par2.group_chunks g JOIN backfill.runs r USING (run_id)
 WHERE g.group_id = :g GROUP BY 1, 2 ORDER BY 1;
SELECT (SELECT sum(revenue) FROM par2.a) AS a_revenue,
       (SELECT sum(revenue) FROM par2.b) AS b_revenue,
       (SELECT sum(revenue) FROM par2.c) AS c_revenue;
-- A downstream chunk never started before every upstream chunk it covers
-- had finished.
SELECT d.target, d.chunk_no AS early_downstream_chunk, u.chunk_no AS upstream_chunk
  FROM par2.group_chunks d JOIN par2.group_chunks u
    ON u.group_id = d.group_id AND u.target = 'par2.a'
   AND u.chunk_start < d.chunk_end AND u.chunk_end > d.chunk_start
 WHERE d.group_id = :g AND d.target <> 'par2.a'
   AND d.started_at < u.finished_at;
-- Independent targets overlapped: a chunk of b ran while a chunk of c ran.
SELECT EXISTS (
  SELECT FROM par2.group_chunks x JOIN par2.group_chunks y
    ON y.group_id = x.group_id AND y.target = 'par2.c'
   AND y.started_at < x.finished_at AND x.started_at < y.finished_at
 WHERE x.group_id = :g AND x.target = 'par2.b') AS b_and_c_overlapped;
-- At most 2 chunks of the group were in flight at any time.
SELECT max(n) AS max_in_flight FROM (
  SELECT (SELECT count(*) FROM par2.group_chunks o
           WHERE o.group_id = c.group_id
             AND o.started_at <= c.started_at AND o.finished_at > c.started_at) AS n
    FROM par2.group_chunks c WHERE c.group_id = :g) s;
-- Each run's chunks started in plan order (two started together may stamp
-- their started_at in either order; a chunk never started before one two
-- places earlier).
SELECT c.target, c.chunk_no AS started_before_an_earlier_chunk
  FROM par2.group_chunks c JOIN par2.group_chunks e
    ON e.run_id = c.run_id AND e.chunk_no < c.chunk_no - 1
   AND e.started_at > c.started_at
 WHERE c.group_id = :g;
-- The same group, serially, gives the same rows.
CREATE TABLE par2.parallel_rows AS
SELECT 'a' AS t, * FROM par2.a UNION ALL SELECT 'b', * FROM par2.b
UNION ALL SELECT 'c', * FROM par2.c;
SELECT backfill.plan('par2.a', '2024-05-01', '2024-05-09', cascade => true,
                     probe => false) AS gs \gset
SET client_min_messages = warning;
CALL backfill.run_group(:gs);
RESET client_min_messages;
SELECT count(*) AS rows_differing FROM (
  (SELECT 'a' AS t, * FROM par2.a UNION ALL SELECT 'b', * FROM par2.b
   UNION ALL SELECT 'c', * FROM par2.c EXCEPT ALL SELECT * FROM par2.parallel_rows)
  UNION ALL
  (SELECT * FROM par2.parallel_rows EXCEPT ALL
   (SELECT 'a' AS t, * FROM par2.a UNION ALL SELECT 'b', * FROM par2.b
    UNION ALL SELECT 'c', * FROM par2.c))) d;

-- max_chunks counts over the whole group: 3 chunks in all.
SELECT backfill.plan('par2.a', '2024-05-01', '2024-05-09', cascade => true,
                     probe => false) AS gm \gset
SET client_min_messages = warning;
CALL backfill.run_group(:gm, max_chunks => 3, parallel => 2);
RESET client_min_messages;
SELECT target, count(*) FILTER (WHERE status = 'done') AS done,
       count(*) FILTER (WHERE status = 'pending') AS pending
  FROM par2.group_chunks WHERE group_id = :gm GROUP BY target ORDER BY target;
-- The root cancelled alone, its downstream runs wait for it: run_group
-- starts nothing and says what the first of them waits for.
SELECT backfill.cancel(:gm) AS cancelled;
CALL backfill.run_group(:gm, parallel => 2);
SELECT count(*) AS downstream_chunks_attempted FROM par2.group_chunks
 WHERE group_id = :gm AND target <> 'par2.a' AND attempts > 0;
SELECT backfill.cancel_group(:gm) AS cancelled;

-- The first failure stops the whole group: a breaks on May 4.  No chunk
-- starts after it; the chunks in flight finish on their own; the call ends
-- with the chunk's error; a is failed, its chunks not started stay
-- pending, and the downstream runs have not started.
INSERT INTO par2.broken VALUES ('a', '2024-05-04');
SELECT backfill.plan('par2.a', '2024-05-01', '2024-05-09', cascade => true,
                     probe => false) AS gf \gset
SET client_min_messages = warning;
CALL backfill.run_group(:gf, parallel => 2);
RESET client_min_messages;
SELECT g.target, r.status, bool_or(g.attempts > 0) AS started_any
  FROM par2.group_chunks g JOIN backfill.runs r USING (run_id)
 WHERE g.group_id = :gf GROUP BY 1, 2 ORDER BY 1;
SELECT chunk_no, status, error_message FROM par2.group_chunks
 WHERE group_id = :gf AND target = 'par2.a' AND chunk_no <= 4 ORDER BY chunk_no;
-- after a's chunk 4 failed, at most the one chunk in flight with it ran
SELECT count(*) FILTER (WHERE status <> 'pending') <= 1 AS at_most_one_more,
       bool_and(status = 'pending') FILTER (WHERE chunk_no >= 6) AS rest_pending
  FROM par2.group_chunks WHERE group_id = :gf AND target = 'par2.a' AND chunk_no > 4;
-- fixed, run_group resumes with the failed chunk and finishes the group
DELETE FROM par2.broken;
SET client_min_messages = warning;
CALL backfill.run_group(:gf, parallel => 2);
RESET client_min_messages;
SELECT g.target, r.status, count(*) AS chunks, max(g.attempts) AS max_attempts
  FROM par2.group_chunks g JOIN backfill.runs r USING (run_id)
 WHERE g.group_id = :gf GROUP BY 1, 2 ORDER BY 1;
SELECT (SELECT sum(revenue) FROM par2.a) AS a_revenue,
       (SELECT sum(revenue) FROM par2.b) AS b_revenue,
       (SELECT sum(revenue) FROM par2.c) AS c_revenue;

-- No background worker is left behind.
SELECT count(*) AS workers FROM pg_stat_activity WHERE backend_type = 'backfill worker';
