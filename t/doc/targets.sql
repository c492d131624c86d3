-- doc/targets.md: the quick start's tables, before registration (the page
-- registers daily_revenue itself), and sql/67_author_identity.sql's table
-- ai.daily, registered by bob and again by alice with her function in the
-- measure.
SET TimeZone = 'UTC';
\i t/doc/pagedeck.sql
CREATE ROLE regress_ai_bob;
CREATE ROLE regress_ai_alice;
CREATE SCHEMA ai;
GRANT USAGE ON SCHEMA ai TO regress_ai_bob, regress_ai_alice;
CREATE TABLE ai.daily (day timestamptz NOT NULL, total int NOT NULL);
GRANT SELECT, INSERT, DELETE ON ai.daily TO regress_ai_bob, regress_ai_alice;
CREATE FUNCTION ai.pwn() RETURNS int LANGUAGE sql AS 'SELECT 0';
SET ROLE regress_ai_bob;
SELECT backfill.register('ai.daily', 'day', 'SELECT day, total FROM ai.daily WHERE day >= $1 AND day < $2',
                         measure => 'sum(total)');
SET ROLE regress_ai_alice;
SELECT backfill.register('ai.daily', 'day', 'SELECT day, total FROM ai.daily WHERE day >= $1 AND day < $2',
                         measure => 'sum(total) + ai.pwn()');
RESET ROLE;
