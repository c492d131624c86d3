-- What a call keeps for its chunks (engine/replace.c, ReplaceCache): the
-- source and measure validated once, the user's DELETE and INSERT composed
-- and prepared once, as the author.  Each call builds its own for its run's
-- definition and author, so a redefinition and a change of author between
-- two calls of one session take effect.  The sources read "src" through a
-- search_path of "$user": the same text reads another table, with other
-- columns, for another author.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
-- run ids of this file start at 9801, whatever ran before
SELECT setval('backfill.runs_run_id_seq', 9801, false) IS NOT NULL AS seq_set;
CREATE ROLE regress_bf_cache_a;
CREATE ROLE regress_bf_cache_b;
CREATE SCHEMA regress_bf_cache_a AUTHORIZATION regress_bf_cache_a;
CREATE SCHEMA regress_bf_cache_b AUTHORIZATION regress_bf_cache_b;
CREATE SCHEMA cache;
GRANT USAGE ON SCHEMA cache TO PUBLIC;
CREATE TABLE cache.t (ts timestamptz NOT NULL, v int, who text);
GRANT SELECT, INSERT, DELETE ON cache.t TO regress_bf_cache_a, regress_bf_cache_b;
-- a's src has no column "who"; b's has one
SET ROLE regress_bf_cache_a;
CREATE TABLE regress_bf_cache_a.src AS
SELECT '2024-01-01'::timestamptz + i * interval '1 hour' AS ts, 100 + i AS v
  FROM generate_series(0, 3) i;
SET ROLE regress_bf_cache_b;
CREATE TABLE regress_bf_cache_b.src AS
SELECT '2024-01-01'::timestamptz + i * interval '1 hour' AS ts, 200 + i AS v,
       'b' AS who
  FROM generate_series(0, 3) i;
RESET ROLE;
-- version(source): register source as the current role, plan a run of
-- four one-hour chunks under it; its run id
CREATE FUNCTION pg_temp.version(source text) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    PERFORM backfill.register('cache.t', 'ts', source, chunk => '1 hour');
    RETURN backfill.plan('cache.t', '2024-01-01', '2024-01-01 04:00', probe => false);
END $$;
\set v1 'SELECT * FROM src WHERE ts >= $1 AND ts < $2'

-- 1. Version 1 by a, run in four chunks.
SET ROLE regress_bf_cache_a;
SET search_path = "$user", public;
SELECT pg_temp.version(:'v1') AS r1 \gset
CALL backfill.run(:r1);
SELECT ts, v, who FROM cache.t ORDER BY ts;

-- 2. Version 2 by b: the text of version 1, another author.  It reads b's
-- src, with its column "who" (a plan or a column list kept from version 1,
-- a's, would leave "who" empty and read a's values).
SET ROLE regress_bf_cache_b;
SELECT pg_temp.version(:'v1') AS r2 \gset
CALL backfill.run(:r2);
SELECT ts, v, who FROM cache.t ORDER BY ts;

-- 3. Version 3 by a, another text, run in the same session: its rows.
SET ROLE regress_bf_cache_a;
SELECT pg_temp.version(
    $q$SELECT ts, v * 10 AS v, 'v2' AS who FROM src WHERE ts >= $1 AND ts < $2$q$) AS r3 \gset
CALL backfill.run(:r3);
SELECT ts, v, who FROM cache.t ORDER BY ts;

-- 4. Back to version 1's text and author (a new version 4): a's rows
-- again, and the chunks of each run were built by their own author.
SET ROLE regress_bf_cache_a;
SELECT pg_temp.version(:'v1') AS r4 \gset
CALL backfill.run(:r4);
SELECT ts, v, who FROM cache.t ORDER BY ts;
RESET ROLE;
RESET search_path;
SELECT r.run_id, r.definition_version, d.created_by, count(*) AS chunks_done
  FROM backfill.runs r
  JOIN backfill.definitions d ON d.target = r.target AND d.version = r.definition_version
  JOIN backfill.chunks c ON c.run_id = r.run_id AND c.status = 'done'
 WHERE r.run_id IN (:r1, :r2, :r3, :r4)
 GROUP BY 1, 2, 3 ORDER BY 1;

-- 5. DDL on the target between two calls: the source no longer fits, and
-- the chunk fails with the source's own check, not a stale statement.
SELECT backfill.plan('cache.t', '2024-01-01', '2024-01-01 04:00', probe => false) AS r5 \gset
ALTER TABLE cache.t RENAME COLUMN v TO value;
CALL backfill.run(:r5);
SELECT backfill.cancel(:r5);

-- 6. A partitioned target, two days in two partitions, in 6-hour chunks
-- with the delete strategy: every chunk is planned with its own bounds, so
-- each one locks only its own day's partition.  PostgreSQL would reuse a
-- generic plan for such a small table from the sixth chunk on, and on
-- PostgreSQL 15 a generic plan locks every partition.  The source notes
-- which of the target's partitions the chunk's transaction holds a lock on
-- when it runs.
CREATE TABLE cache.p (ts timestamptz NOT NULL, v int NOT NULL) PARTITION BY RANGE (ts);
CREATE TABLE cache.p_1 PARTITION OF cache.p FOR VALUES FROM ('2024-01-01') TO ('2024-01-02');
CREATE TABLE cache.p_2 PARTITION OF cache.p FOR VALUES FROM ('2024-01-02') TO ('2024-01-03');
CREATE TABLE cache.locks_seen (chunk_start timestamptz, leaf text);
CREATE FUNCTION cache.note_locks(lo timestamptz, leaves text) RETURNS bool LANGUAGE plpgsql VOLATILE AS $f$
BEGIN
    INSERT INTO cache.locks_seen
    SELECT lo, c.relname FROM pg_catalog.pg_locks l
      JOIN pg_catalog.pg_class c ON c.oid = l.relation
     WHERE l.pid = pg_catalog.pg_backend_pid() AND c.relname LIKE leaves;
    RETURN true;
END
$f$;
CREATE TABLE cache.src_p AS
SELECT '2024-01-01'::timestamptz + i * interval '3 hours' AS ts, i AS v FROM generate_series(0, 15) i;
SELECT backfill.register('cache.p', 'ts',
    $q$SELECT ts, v FROM cache.src_p WHERE ts >= $1 AND ts < $2 AND cache.note_locks($1, 'p\_%')$q$,
    chunk => '6 hours') AS pv;
SELECT backfill.set_strategy('cache.p', 'delete');
SELECT backfill.plan('cache.p', '2024-01-01', '2024-01-03', probe => false) AS r6 \gset
SET client_min_messages = warning;
CALL backfill.run(:r6);
RESET client_min_messages;
SELECT chunk_start, string_agg(DISTINCT leaf, ', ' ORDER BY leaf) AS leaves_locked
  FROM cache.locks_seen GROUP BY 1 ORDER BY 1;

-- The same with plan_cache_mode = force_generic_plan in the session, which
-- would override the custom plans: a chunk runs with auto instead.
TRUNCATE cache.locks_seen;
SELECT backfill.plan('cache.p', '2024-01-01', '2024-01-03', probe => false) AS r7 \gset
SET client_min_messages = warning;
SET plan_cache_mode = force_generic_plan;
CALL backfill.run(:r7);
SHOW plan_cache_mode;
RESET plan_cache_mode;
RESET client_min_messages;
SELECT chunk_start, string_agg(DISTINCT leaf, ', ' ORDER BY leaf) AS leaves_locked
  FROM cache.locks_seen GROUP BY 1 ORDER BY 1;
SELECT count(*) AS rows, sum(v) AS total FROM cache.p;
SELECT backfill.unregister('cache.p');

-- 7. A plain target whose source reads a partitioned table through a SQL
-- function, which the planner inlines: the partitions are not among the
-- statement's own tables, yet a generic plan (even one PostgreSQL only
-- costs, from the sixth chunk on) locks all of them.  Such a statement is
-- planned with each chunk's bounds too: each chunk locks only its own day's
-- partition of the source.
CREATE TABLE cache.ps (ts timestamptz NOT NULL, v int NOT NULL) PARTITION BY RANGE (ts);
CREATE TABLE cache.ps_1 PARTITION OF cache.ps FOR VALUES FROM ('2024-01-01') TO ('2024-01-02');
CREATE TABLE cache.ps_2 PARTITION OF cache.ps FOR VALUES FROM ('2024-01-02') TO ('2024-01-03');
INSERT INTO cache.ps SELECT ts, v FROM cache.src_p;
CREATE FUNCTION cache.ps_rows(lo timestamptz, hi timestamptz) RETURNS SETOF cache.ps
    LANGUAGE sql STABLE AS 'SELECT * FROM cache.ps WHERE ts >= lo AND ts < hi';
CREATE TABLE cache.q (ts timestamptz NOT NULL, v int NOT NULL);
SELECT backfill.register('cache.q', 'ts',
    $q$SELECT ts, v FROM cache.ps_rows($1, $2) WHERE cache.note_locks($1, 'ps\_%')$q$,
    chunk => '6 hours') AS qv;
TRUNCATE cache.locks_seen;
SET client_min_messages = warning;
SELECT backfill.plan('cache.q', '2024-01-01', '2024-01-03', probe => false) AS r8 \gset
CALL backfill.run(:r8);
RESET client_min_messages;
SELECT chunk_start, string_agg(DISTINCT leaf, ', ' ORDER BY leaf) AS leaves_locked
  FROM cache.locks_seen GROUP BY 1 ORDER BY 1;
SELECT count(*) AS rows, sum(v) AS total FROM cache.q;
SELECT backfill.unregister('cache.q');

SELECT backfill.unregister('cache.t');
DROP SCHEMA cache CASCADE;
DROP SCHEMA regress_bf_cache_a CASCADE;
DROP SCHEMA regress_bf_cache_b CASCADE;
DROP ROLE regress_bf_cache_a, regress_bf_cache_b;
