-- Pipelines: dependencies between targets, cycles, rights, unregister.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY default
CREATE SCHEMA pd;
CREATE TABLE pd.raw (ts timestamptz, v int);
CREATE TABLE pd.a (day timestamptz, n int);
CREATE TABLE pd.b (day timestamptz, n int);
CREATE TABLE pd.c (day timestamptz, n int);
CREATE TABLE pd.loose (day timestamptz, n int);
SELECT backfill.register('pd.a', 'day',
    'SELECT date_trunc(''day'', ts) AS day, count(*)::int AS n FROM pd.raw WHERE ts >= $1 AND ts < $2 GROUP BY 1');
SELECT backfill.register('pd.b', 'day',
    'SELECT day, sum(n)::int AS n FROM pd.a WHERE day >= $1 AND day < $2 GROUP BY 1');
SELECT backfill.register('pd.c', 'day',
    'SELECT day, sum(n)::int AS n FROM pd.b WHERE day >= $1 AND day < $2 GROUP BY 1');

-- a -> b -> c; declaring one twice is no error (false).
SELECT backfill.depend('pd.b', 'pd.a') AS added;
SELECT backfill.depend('pd.c', 'pd.b') AS added;
SELECT backfill.depend('pd.c', 'pd.b') AS added_again;
SELECT downstream, upstream, created_by = current_user AS by_me
  FROM backfill.dependencies ORDER BY 1, 2;

-- Cycles are refused, with the cycle in the detail (42P17).
SELECT backfill.depend('pd.a', 'pd.c');
SELECT backfill.depend('pd.b', 'pd.c');
SELECT backfill.depend('pd.a', 'pd.a');
-- Both must be registered; NULLs are refused.
SELECT backfill.depend('pd.loose', 'pd.a');
SELECT backfill.depend('pd.a', 'pd.loose');
SELECT backfill.depend(NULL, 'pd.a');
SELECT backfill.depend('pd.a', NULL);

-- Rights (42501): undepend needs the rights of register on both tables (or
-- to be a planner of one of them); depend needs to be a planner of both:
-- their rights, and the privileges of the author of each one's current
-- definition, so that a role that merely writes a table cannot hang its
-- own targets under it.
CREATE ROLE regress_pd_etl;
CREATE ROLE regress_pd_reader;
GRANT USAGE ON SCHEMA pd TO regress_pd_etl, regress_pd_reader;
GRANT SELECT, INSERT, DELETE ON pd.b, pd.c TO regress_pd_etl;
GRANT SELECT ON pd.a TO regress_pd_etl;
GRANT SELECT ON pd.a, pd.b TO regress_pd_reader;
SET ROLE regress_pd_etl;
SELECT backfill.undepend('pd.b', 'pd.a');       -- may not rewrite pd.a
SELECT backfill.undepend('pd.c', 'pd.b') AS removed;
SELECT backfill.depend('pd.c', 'pd.b') AS added;  -- writes both, authored neither
RESET ROLE;
SELECT backfill.depend('pd.c', 'pd.b') AS added;  -- their author may
-- The listing shows the dependencies whose two tables the reader may read.
SET ROLE regress_pd_reader;
SELECT downstream, upstream FROM backfill.dependencies ORDER BY 1, 2;
SELECT backfill.depend('pd.b', 'pd.a');
RESET ROLE;

-- unregister of a target with dependents is refused (2BP01) unless
-- cascade; cascade removes the dependencies, not the dependent targets.
SELECT backfill.unregister('pd.a');
SELECT backfill.unregister('pd.b');
SELECT count(*) AS deps_left FROM backfill.dependencies;
SELECT backfill.unregister('pd.b', cascade => true);
SELECT downstream, upstream FROM backfill.dependencies ORDER BY 1, 2;
SELECT target FROM backfill.targets WHERE target::text LIKE 'pd.%' ORDER BY 1;
-- a target that only depends on others unregisters without cascade
SELECT backfill.register('pd.b', 'day',
    'SELECT day, sum(n)::int AS n FROM pd.a WHERE day >= $1 AND day < $2 GROUP BY 1');
SELECT backfill.depend('pd.b', 'pd.a');
SELECT backfill.unregister('pd.b');
SELECT count(*) AS deps_left FROM backfill.dependencies;
SELECT backfill.undepend('pd.b', 'pd.a') AS removed;

-- The catalog table is written only by backfill (no write grant).
SET ROLE regress_pd_etl;
INSERT INTO backfill.dependencies (downstream, upstream, created_by)
    VALUES ('pd.c', 'pd.a', current_user);
RESET ROLE;

SELECT backfill.unregister('pd.a');
SELECT backfill.unregister('pd.c');
DROP SCHEMA pd CASCADE;
DROP OWNED BY regress_pd_etl, regress_pd_reader;
DROP ROLE regress_pd_etl, regress_pd_reader;
