
-- ---------------------------------------------------------------------------
-- A chunk found recorded is remembered (issue 30, item 5).  A writer into
-- a chunk that another transaction recorded in backfill.changed_regions
-- leaves its own row out; each backend remembers the rows it found, and
-- takes them as they are (without a snapshot, the table and a heap fetch in
-- every transaction) until a row of the log is deleted or changed: this
-- row trigger then sends a relcache invalidation of the table at commit,
-- which empties every backend's memory.  A row trigger, not a statement
-- trigger: it fires only where a row went (a build that consumes nothing
-- sends nothing), and also for the rows a subscription's apply worker
-- deletes, which fires no statement trigger.  It fires always, also under
-- session_replication_role = replica.  TRUNCATE gives the table a new
-- file, whose own invalidation empties the memories too.  Where the
-- trigger is missing or not enabled always, the remembered rows are read
-- again in each transaction.  C: api/regions.c,
-- orchestration/watchrecorded.c.
-- ---------------------------------------------------------------------------

CREATE FUNCTION backfill._recorded_signal()
RETURNS trigger
AS 'MODULE_PATHNAME', 'backfill_recorded_signal'
LANGUAGE C;
-- PostgreSQL checks EXECUTE when a trigger is made, not when it fires.
REVOKE ALL ON FUNCTION backfill._recorded_signal() FROM PUBLIC;
COMMENT ON FUNCTION backfill._recorded_signal() IS
    'Trigger of backfill.changed_regions: tells every backend to forget the rows of the log it remembers as recorded.';

CREATE TRIGGER backfill_recorded_signal
    AFTER DELETE OR UPDATE ON backfill.changed_regions
    FOR EACH ROW EXECUTE FUNCTION backfill._recorded_signal();
ALTER TABLE backfill.changed_regions
    ENABLE ALWAYS TRIGGER backfill_recorded_signal;
