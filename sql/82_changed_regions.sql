-- Changed regions (issue 18): watched sources log exactly the target chunks
-- that a write touches (INSERT, UPDATE old and new, DELETE, TRUNCATE), once
-- per (target, chunk) per transaction, behind the watermark only, on local
-- days across DST, for partitioned sources and several targets; a chunk
-- build consumes them; plan(..., only_chunks => 'stale') plans exactly the
-- stale chunks, also by a moved ledger; unwatch and unregister.  The
-- watches here take settle => '100 years': a chunk counts as built by
-- something else only a century after it ends, so that backfill's
-- watermark alone decides (the live edge of tables other jobs fill, with
-- settle 0 and more: sql/91_late_rows.sql).
SET TimeZone = 'America/New_York';
SET DateStyle = ISO;
SET IntervalStyle = postgres;
\set VERBOSITY default
SELECT setval('backfill.runs_run_id_seq', 8201, false) IS NOT NULL AS seq_set;
CREATE SCHEMA cr;
CREATE TABLE cr.payments (id serial, paid_at timestamptz NOT NULL, amount int NOT NULL);
CREATE TABLE cr.daily (day timestamptz NOT NULL, total int, n int);
SELECT backfill.register('cr.daily', 'day',
    $$SELECT $1 AS day, sum(amount)::int AS total, count(*)::int AS n
        FROM cr.payments WHERE paid_at >= $1 AND paid_at < $2$$);
-- October 29 to November 4: November 1 is a 25-hour local day
INSERT INTO cr.payments (paid_at, amount)
SELECT '2026-10-29 00:30'::timestamptz + g * interval '1 hour', 1
  FROM generate_series(0, 24 * 7 - 1) g;

-- What the log holds: target, chunk start, chunk length, rows.  The test
-- runs as a superuser, who empties the log between cases (users cannot
-- write it; only chunk builds consume it).
CREATE VIEW cr.logged AS
SELECT target, chunk_start,
       CASE WHEN chunk_start > '-infinity' THEN chunk_end - chunk_start END AS len,
       count(*) AS rows
  FROM backfill.changed_regions GROUP BY 1, 2, 3;
CREATE FUNCTION cr.clear() RETURNS void LANGUAGE sql
    AS 'DELETE FROM backfill.changed_regions';

-- Watching: a new watch is true, the same again false; the four triggers
-- are on the source.  The INSERT statement triggers of earlier builds
-- (backfill_watch_insert, and backfill_watch_before, which loaded the
-- watches for the row trigger) are dropped by the next watch of its
-- table's owner.
SELECT backfill.watch('cr.daily', 'cr.payments', 'paid_at', settle => '100 years') AS added;
CREATE TRIGGER backfill_watch_insert AFTER INSERT ON cr.payments
    FOR EACH STATEMENT EXECUTE FUNCTION backfill._watch_trigger();
CREATE TRIGGER backfill_watch_before BEFORE INSERT ON cr.payments
    FOR EACH STATEMENT EXECUTE FUNCTION backfill._watch_trigger();
SELECT backfill.watch('cr.daily', 'cr.payments', 'paid_at', settle => '100 years') AS added;
SELECT target, source, time_column, timezone FROM backfill.watches;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'cr.payments'::regclass ORDER BY 1;

-- Before any build there is no watermark: nothing is logged.
INSERT INTO cr.payments (paid_at, amount) VALUES ('2026-10-30 12:00', 1);
SELECT count(*) AS logged FROM backfill.changed_regions;
SET client_min_messages = warning;
CALL backfill.backfill('cr.daily', '2026-10-29', '2026-11-05');
RESET client_min_messages;
SELECT watermark FROM backfill.targets WHERE target = 'cr.daily'::regclass;

-- At the live edge (at or beyond the watermark): not logged.
INSERT INTO cr.payments (paid_at, amount) VALUES ('2026-11-05 00:00', 1), ('2026-11-07 10:00', 1);
SELECT count(*) AS logged FROM backfill.changed_regions;

-- INSERT: 10:00 and 15:00 on Oct 30 and 01:30 on Oct 31 in one statement,
-- Oct 30 again in a second statement of the same transaction: two chunks,
-- one row each (not the span between them, not a row per row).
BEGIN;
INSERT INTO cr.payments (paid_at, amount)
VALUES ('2026-10-30 10:00', 5), ('2026-10-30 15:00', 5), ('2026-10-31 01:30', 5);
INSERT INTO cr.payments (paid_at, amount) VALUES ('2026-10-30 16:00', 5);
COMMIT;
SELECT chunk_start, len, rows FROM cr.logged ORDER BY 1;
-- Another transaction into the same chunk adds no row: the chunk is
-- recorded already (committed, not yet rebuilt), with its earliest change,
-- which stays.  A build of the chunk consumes the row; the next write into
-- it records the chunk again.
SELECT changed_at AS first_change FROM backfill.changed_regions
 WHERE chunk_start = '2026-10-30' \gset
INSERT INTO cr.payments (paid_at, amount) VALUES ('2026-10-30 17:00', 5);
SELECT chunk_start, len, rows FROM cr.logged ORDER BY 1;
SELECT changed_at = :'first_change' AS earliest_kept FROM backfill.changed_regions
 WHERE chunk_start = '2026-10-30';
SET client_min_messages = warning;
CALL backfill.backfill('cr.daily', '2026-10-30', '2026-10-31');
RESET client_min_messages;
SELECT chunk_start, len, rows FROM cr.logged ORDER BY 1;
INSERT INTO cr.payments (paid_at, amount) VALUES ('2026-10-30 18:00', 5);
SELECT chunk_start, len, rows, (SELECT x.changed_at > :'first_change'
                                  FROM backfill.changed_regions x
                                 WHERE x.chunk_start = l.chunk_start) AS new_change
  FROM cr.logged l ORDER BY 1;
-- A build in a REPEATABLE READ transaction consumes nothing: its snapshot
-- predates its wait for the writers that left out a recorded chunk's row.
SET default_transaction_isolation = 'repeatable read';
SET client_min_messages = warning;
CALL backfill.backfill('cr.daily', '2026-10-30', '2026-10-31');
RESET client_min_messages;
RESET default_transaction_isolation;
SELECT chunk_start, len, rows FROM cr.logged ORDER BY 1;
SELECT cr.clear();

-- A row on the 25-hour day: its chunk is the local day, 25 hours long.
INSERT INTO cr.payments (paid_at, amount) VALUES ('2026-11-01 23:30', 5);
SELECT chunk_start, len, rows FROM cr.logged ORDER BY 1;
SELECT cr.clear();

-- UPDATE that moves a row between days: the old day and the new day.
UPDATE cr.payments SET paid_at = '2026-11-03 08:00' WHERE paid_at = '2026-10-29 09:30';
SELECT chunk_start, len, rows FROM cr.logged ORDER BY 1;
SELECT cr.clear();
-- UPDATE of a row at the live edge to a day behind the watermark: the new day only.
UPDATE cr.payments SET paid_at = '2026-11-02 08:00' WHERE paid_at = '2026-11-07 10:00';
SELECT chunk_start, len, rows FROM cr.logged ORDER BY 1;
SELECT cr.clear();

-- DELETE: the days of the deleted rows.
DELETE FROM cr.payments WHERE paid_at IN ('2026-10-29 00:30', '2026-11-04 22:30');
SELECT chunk_start, len, rows FROM cr.logged ORDER BY 1;
SELECT cr.clear();
-- A statement that changes no row logs nothing.
DELETE FROM cr.payments WHERE amount < 0;
SELECT count(*) AS logged FROM backfill.changed_regions;

-- A rolled-back subtransaction takes its log row with it, and its chunk is
-- logged again by the next statement that touches it.
BEGIN;
SAVEPOINT s;
INSERT INTO cr.payments (paid_at, amount) VALUES ('2026-10-31 12:00', 5);
ROLLBACK TO SAVEPOINT s;
INSERT INTO cr.payments (paid_at, amount) VALUES ('2026-10-31 13:00', 5);
COMMIT;
SELECT chunk_start, len, rows FROM cr.logged ORDER BY 1;
-- A rolled-back transaction logs nothing.
BEGIN;
INSERT INTO cr.payments (paid_at, amount) VALUES ('2026-11-02 12:00', 5);
ROLLBACK;
SELECT chunk_start, len, rows FROM cr.logged ORDER BY 1;

-- A stale plan takes exactly the logged chunks that were built, and says
-- why; its run consumes them, and a second stale plan finds nothing.
INSERT INTO cr.payments (paid_at, amount) VALUES ('2026-11-03 12:00', 5);
SELECT backfill.plan('cr.daily', '2026-10-29', '2026-11-05', only_chunks => 'stale',
                     probe => false) AS s1 \gset
SELECT chunk_no, chunk_start, chunk_end,
       regexp_replace(reason, 'at .*', 'at <time>') AS reason
  FROM backfill.chunks WHERE run_id = :s1 ORDER BY 1;
SET client_min_messages = warning;
CALL backfill.run(:s1);
RESET client_min_messages;
SELECT count(*) AS logged FROM backfill.changed_regions;
SELECT day, total, n FROM cr.daily WHERE day >= '2026-10-31' AND day < '2026-11-04' ORDER BY 1;
SELECT backfill.plan('cr.daily', '2026-10-29', '2026-11-05', only_chunks => 'stale') AS nothing;

-- stale and missing together: the stale chunk and the never-built days.
INSERT INTO cr.payments (paid_at, amount) VALUES ('2026-10-30 12:00', 5);
SELECT backfill.plan('cr.daily', '2026-10-29', '2026-11-07', only_chunks => 'stale, missing',
                     probe => false) AS s2 \gset
SELECT chunk_no, chunk_start, reason IS NOT NULL AS stale
  FROM backfill.chunks WHERE run_id = :s2 ORDER BY 1;
SET client_min_messages = warning;
CALL backfill.run(:s2);
RESET client_min_messages;
-- the watermark followed the build
SELECT watermark FROM backfill.targets WHERE target = 'cr.daily'::regclass;

-- TRUNCATE: every chunk behind the watermark, as one region.
TRUNCATE cr.payments;
SELECT chunk_start, chunk_end FROM backfill.changed_regions;
SELECT cr.clear();

-- Several targets on one source, each on its own chunk grid: six hours.
CREATE TABLE cr.quarter (ts timestamptz NOT NULL, n int);
SELECT backfill.register('cr.quarter', 'ts',
    $$SELECT $1 AS ts, count(*)::int AS n FROM cr.payments WHERE paid_at >= $1 AND paid_at < $2$$,
    chunk => '6 hours');
SELECT backfill.watch('cr.quarter', 'cr.payments', 'paid_at', settle => '100 years') AS added;
SET client_min_messages = warning;
CALL backfill.backfill('cr.quarter', '2026-11-01', '2026-11-03');
RESET client_min_messages;
INSERT INTO cr.payments (paid_at, amount) VALUES ('2026-11-01 01:30-04', 1), ('2026-11-01 01:30-05', 1),
                                                 ('2026-11-02 13:00', 1);
SELECT target, chunk_start, len, rows FROM cr.logged ORDER BY 1, 2;
SELECT cr.clear();

-- A partitioned source: writes through the parent and straight into a
-- partition, and a TRUNCATE of one partition.
CREATE TABLE cr.events (at timestamp NOT NULL, v int) PARTITION BY RANGE (at);
CREATE TABLE cr.events_10 PARTITION OF cr.events FOR VALUES FROM ('2026-10-01') TO ('2026-11-01');
CREATE TABLE cr.events_11 PARTITION OF cr.events FOR VALUES FROM ('2026-11-01') TO ('2026-12-01');
CREATE TABLE cr.ev_daily (day date NOT NULL, n int);
SELECT backfill.register('cr.ev_daily', 'day',
    $$SELECT $1::date AS day, count(*)::int AS n FROM cr.events WHERE at >= $1 AND at < $2$$);
SELECT backfill.watch('cr.ev_daily', 'cr.events', 'at', settle => '100 years') AS added;
SELECT c.relname, count(*) AS triggers
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE t.tgname LIKE 'backfill_watch_%' AND c.relname LIKE 'events%' GROUP BY 1 ORDER BY 1;
INSERT INTO cr.events SELECT '2026-10-25'::timestamp + g * interval '1 day', 1 FROM generate_series(0, 14) g;
SET client_min_messages = warning;
CALL backfill.backfill('cr.ev_daily', '2026-10-25', '2026-11-08');
RESET client_min_messages;
INSERT INTO cr.events VALUES ('2026-10-27 10:00', 1), ('2026-11-03 10:00', 1);
INSERT INTO cr.events_11 VALUES ('2026-11-05 10:00', 1);
SELECT chunk_start, len, rows FROM cr.logged WHERE target = 'cr.ev_daily'::regclass ORDER BY 1;
SELECT cr.clear();
TRUNCATE cr.events_10;
SELECT chunk_start, chunk_end FROM backfill.changed_regions
 WHERE target = 'cr.ev_daily'::regclass;
SELECT cr.clear();
-- COPY through the parent (its multi-row inserts kept: no transition
-- table), and a partition attached after watch: it has the row trigger
-- (PostgreSQL copies it), so writes through the parent into it are logged
-- (behind the watermark, also into a day never built), and the statement
-- triggers (the event trigger backfill_watch_ddl adds them), so
-- writes straight into it are logged too (below).
CREATE TABLE cr.events_09 (at timestamp NOT NULL, v int);
ALTER TABLE cr.events ATTACH PARTITION cr.events_09 FOR VALUES FROM ('2026-09-01') TO ('2026-10-01');
SELECT t.tgname FROM pg_trigger t WHERE t.tgrelid = 'cr.events_09'::regclass ORDER BY 1;
COPY cr.events FROM stdin;
2026-09-29 10:00	1
2026-10-26 10:00	1
2026-10-26 11:00	1
2026-11-06 10:00	1
2026-11-20 10:00	1
\.
SELECT chunk_start, len, rows FROM cr.logged WHERE target = 'cr.ev_daily'::regclass ORDER BY 1;
SELECT cr.clear();
-- Writes straight into partitions made after watch, attached (events_09)
-- or created as PARTITION OF (events_07, itself partitioned, and its own
-- partition): an INSERT, an UPDATE and a DELETE each logged (before the
-- event trigger, only the first reached the log, and only through the
-- parent).
CREATE TABLE cr.events_07 PARTITION OF cr.events
    FOR VALUES FROM ('2026-07-01') TO ('2026-08-01') PARTITION BY RANGE (at);
CREATE TABLE cr.events_07a PARTITION OF cr.events_07
    FOR VALUES FROM ('2026-07-01') TO ('2026-08-01');
SELECT t.tgrelid::regclass AS partition, pg_catalog.string_agg(t.tgname, ' ' ORDER BY t.tgname) AS triggers
  FROM pg_trigger t
 WHERE t.tgrelid IN ('cr.events_07'::regclass, 'cr.events_07a'::regclass)
 GROUP BY 1 ORDER BY 1;
INSERT INTO cr.events_09 VALUES ('2026-09-03 10:00', 1);
UPDATE cr.events_09 SET at = '2026-09-04 10:00' WHERE at = '2026-09-29 10:00';
INSERT INTO cr.events_07a VALUES ('2026-07-05 10:00', 1);
DELETE FROM cr.events_07a;
SELECT chunk_start, len, rows FROM cr.logged WHERE target = 'cr.ev_daily'::regclass ORDER BY 1;
SELECT cr.clear();
-- A partition made as an element of CREATE SCHEMA (whose elements fire no
-- event trigger of their own) gets them too; so does nothing else there.
CREATE SCHEMA cr_premake
    CREATE TABLE events_02 PARTITION OF cr.events FOR VALUES FROM ('2026-02-01') TO ('2026-03-01')
    CREATE TABLE notes (at timestamp NOT NULL);
SELECT t.tgrelid::regclass AS partition, pg_catalog.string_agg(t.tgname, ' ' ORDER BY t.tgname) AS triggers
  FROM pg_trigger t
 WHERE t.tgrelid IN ('cr_premake.events_02'::regclass, 'cr_premake.notes'::regclass)
 GROUP BY 1 ORDER BY 1;
DROP SCHEMA cr_premake CASCADE;
-- A partitioned table that no target watches gets nothing.
CREATE TABLE cr.unwatched (at timestamp NOT NULL) PARTITION BY RANGE (at);
CREATE TABLE cr.unwatched_1 PARTITION OF cr.unwatched FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
CREATE TABLE cr.unwatched_2 (at timestamp NOT NULL);
ALTER TABLE cr.unwatched ATTACH PARTITION cr.unwatched_2 FOR VALUES FROM ('2026-02-01') TO ('2026-03-01');
SELECT count(*) AS triggers FROM pg_trigger
 WHERE tgrelid IN ('cr.unwatched_1'::regclass, 'cr.unwatched_2'::regclass);
DROP TABLE cr.unwatched;
-- The role that attaches a partition owns it and the partitioned table,
-- but another partition may lack the triggers (here one was dropped) and
-- belong to someone else: a WARNING names it, the command succeeds, and
-- the new partition gets its triggers.
CREATE ROLE regress_cr_partman;
CREATE ROLE regress_cr_other;
GRANT USAGE, CREATE ON SCHEMA cr TO regress_cr_partman;
ALTER TABLE cr.events OWNER TO regress_cr_partman;
ALTER TABLE cr.events_07 OWNER TO regress_cr_partman;
DROP TRIGGER backfill_watch_delete ON cr.events_07a;
ALTER TABLE cr.events_07a OWNER TO regress_cr_other;
SET ROLE regress_cr_partman;
CREATE TABLE cr.events_06 (at timestamp NOT NULL, v int);
ALTER TABLE cr.events ATTACH PARTITION cr.events_06 FOR VALUES FROM ('2026-06-01') TO ('2026-07-01');
RESET ROLE;
SELECT t.tgrelid::regclass AS partition, count(*) AS triggers
  FROM pg_trigger t
 WHERE t.tgrelid IN ('cr.events_06'::regclass, 'cr.events_07a'::regclass)
 GROUP BY 1 ORDER BY 1;
-- watch, called by that role (which may rewrite the target), names the
-- partition it may not put triggers on, and the GRANT that lets it through
-- (42501, nothing changed); after the GRANT, the same call mends it
GRANT SELECT, INSERT, DELETE ON cr.ev_daily TO regress_cr_partman;
SET ROLE regress_cr_partman;
SELECT backfill.watch('cr.ev_daily', 'cr.events', 'at', settle => '100 years') AS added;
RESET ROLE;
GRANT TRIGGER ON cr.events_07a TO regress_cr_partman;
SET ROLE regress_cr_partman;
SELECT backfill.watch('cr.ev_daily', 'cr.events', 'at', settle => '100 years') AS added;
RESET ROLE;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'cr.events_07a'::regclass;
-- That other role cannot make the next ATTACH PARTITION fail, neither the
-- partitioned table's owner's nor a superuser's.  It grants TRIGGER on its
-- partitions to PUBLIC and drops one of their triggers; on events_07a it
-- disables another, on events_05 (in a schema others may not use) it puts
-- a trigger of its own under the name of the UPDATE's.  Each is passed
-- over with a WARNING (before, the ATTACH failed: 42710 for the name,
-- 42501 for the schema); the new partitions get their triggers.  (From
-- the attack review of the event trigger.)
CREATE SCHEMA cr_other AUTHORIZATION regress_cr_other;
GRANT USAGE ON SCHEMA cr TO regress_cr_other;
SET ROLE regress_cr_other;
CREATE TABLE cr_other.events_05 (at timestamp NOT NULL, v int);
RESET ROLE;
ALTER TABLE cr.events ATTACH PARTITION cr_other.events_05 FOR VALUES FROM ('2026-05-01') TO ('2026-06-01');
SET ROLE regress_cr_other;
CREATE FUNCTION cr_other.own() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
DROP TRIGGER backfill_watch_truncate ON cr_other.events_05;
DROP TRIGGER backfill_watch_update ON cr_other.events_05;
CREATE TRIGGER backfill_watch_update AFTER UPDATE ON cr_other.events_05
    FOR EACH STATEMENT EXECUTE FUNCTION cr_other.own();
DROP TRIGGER backfill_watch_delete ON cr.events_07a;
ALTER TABLE cr.events_07a DISABLE TRIGGER backfill_watch_truncate;
GRANT TRIGGER ON cr_other.events_05, cr.events_07a TO PUBLIC;
SET ROLE regress_cr_partman;
CREATE TABLE cr.events_04 (at timestamp NOT NULL, v int);
ALTER TABLE cr.events ATTACH PARTITION cr.events_04 FOR VALUES FROM ('2026-04-01') TO ('2026-05-01');
RESET ROLE;
CREATE TABLE cr.events_03 (at timestamp NOT NULL, v int);
ALTER TABLE cr.events ATTACH PARTITION cr.events_03 FOR VALUES FROM ('2026-03-01') TO ('2026-04-01');
SELECT t.tgrelid::regclass AS partition, count(*) AS triggers,
       count(*) FILTER (WHERE t.tgfoid = 'backfill._watch_trigger()'::regprocedure AND t.tgenabled = 'O') AS working
  FROM pg_trigger t
 WHERE t.tgrelid IN ('cr.events_03'::regclass, 'cr.events_04'::regclass,
                     'cr_other.events_05'::regclass, 'cr.events_07a'::regclass)
 GROUP BY 1 ORDER BY 1;
DROP TABLE cr.events_03, cr.events_04;
DROP SCHEMA cr_other CASCADE;
REVOKE ALL ON SCHEMA cr FROM regress_cr_other;
ALTER TABLE cr.events OWNER TO CURRENT_USER;
DROP TABLE cr.events_06, cr.events_07;
DROP ROLE regress_cr_other;
REVOKE ALL ON SCHEMA cr FROM regress_cr_partman;
REVOKE ALL ON cr.ev_daily FROM regress_cr_partman;
DROP ROLE regress_cr_partman;
-- The row trigger's WHEN clause on a partitioned source names the source
-- and passes the row's tableoid and its time column: PostgreSQL maps the
-- column of each partition's clone to the partition's own number, and the
-- call finds the column by its name in the row's table (no number
-- constant, which a restore could leave stale; no name constant, whose 64
-- bytes PostgreSQL reads back from the clause's text on every statement:
-- issue 30).  A partition whose column stands at another place is logged
-- all the same.
SELECT substring(pg_get_triggerdef(t.oid) FROM 'WHEN \((.*)\) EXECUTE') AS qual
  FROM pg_trigger t WHERE t.tgrelid = 'cr.events'::regclass AND t.tgname = 'backfill_watch_row_at';
CREATE TABLE cr.events_08 (v int, at timestamp NOT NULL);
ALTER TABLE cr.events ATTACH PARTITION cr.events_08 FOR VALUES FROM ('2026-08-01') TO ('2026-09-01');
SELECT attnum FROM pg_attribute WHERE attrelid = 'cr.events_08'::regclass AND attname = 'at';
INSERT INTO cr.events (v, at) VALUES (1, '2026-08-15 10:00');
SELECT chunk_start, len, rows FROM cr.logged WHERE target = 'cr.ev_daily'::regclass ORDER BY 1;
SELECT cr.clear();
-- A row trigger made by an earlier build names the column (a name
-- constant): it keeps logging, and watch, called again by the table's
-- owner, replaces it with the trigger of today's form.
DROP TRIGGER backfill_watch_row_at ON cr.events;
CREATE TRIGGER backfill_watch_row_at AFTER INSERT ON cr.events FOR EACH ROW
    WHEN (backfill._watch_row('cr.events'::regclass, 'at'::name, NEW.at))
    EXECUTE FUNCTION backfill._watch_trigger();
INSERT INTO cr.events (v, at) VALUES (1, '2026-08-16 10:00'), (1, '2026-10-28 10:00');
SELECT chunk_start, len, rows FROM cr.logged WHERE target = 'cr.ev_daily'::regclass ORDER BY 1;
SELECT cr.clear();
-- One made by another earlier build names the column by its number in the
-- source.  A restore keeps the number while it renumbers the columns when
-- a dropped column stood before: here the number is v's, so a row is not
-- logged, and watch, called again by the table's owner, replaces it.
DROP TRIGGER backfill_watch_row_at ON cr.events;
CREATE TRIGGER backfill_watch_row_at AFTER INSERT ON cr.events FOR EACH ROW
    WHEN (backfill._watch_row('cr.events'::regclass, '2'::int2, NEW.at))
    EXECUTE FUNCTION backfill._watch_trigger();
INSERT INTO cr.events (v, at) VALUES (1, '2026-08-16 11:00');
SELECT chunk_start, len, rows FROM cr.logged WHERE target = 'cr.ev_daily'::regclass ORDER BY 1;
-- Anyone else who may watch the table (TRIGGER on it) is refused, 42710:
-- such a trigger notes nothing, or the chunks of another watched column.
CREATE ROLE regress_cr_trig;
GRANT USAGE ON SCHEMA cr TO regress_cr_trig;
GRANT TRIGGER ON cr.events TO regress_cr_trig;
GRANT SELECT, INSERT, DELETE ON cr.ev_daily TO regress_cr_trig;
SET ROLE regress_cr_trig;
SELECT backfill.watch('cr.ev_daily', 'cr.events', 'at', settle => '100 years') AS added;
RESET ROLE;
REVOKE ALL ON cr.events, cr.ev_daily FROM regress_cr_trig;
REVOKE ALL ON SCHEMA cr FROM regress_cr_trig;
DROP ROLE regress_cr_trig;
SELECT backfill.watch('cr.ev_daily', 'cr.events', 'at', settle => '100 years') AS added;
SELECT substring(pg_get_triggerdef(t.oid) FROM 'WHEN \((.*)\) EXECUTE') AS qual
  FROM pg_trigger t WHERE t.tgrelid = 'cr.events'::regclass AND t.tgname = 'backfill_watch_row_at';
INSERT INTO cr.events (v, at) VALUES (1, '2026-08-17 10:00');
SELECT chunk_start, len, rows FROM cr.logged WHERE target = 'cr.ev_daily'::regclass ORDER BY 1;
SELECT cr.clear();

-- The log's rows are appended from C unless backfill.changed_regions is
-- not a plain table of the extension's making (here an index on an
-- expression, which only a superuser can add): then an INSERT as the
-- extension owner writes them, the same rows.  A trigger someone added
-- there, calling a function of a user, would run with the owner's rights:
-- the owner-rights guard refuses that INSERT, so the write that the watch
-- records fails whole, and nothing is recorded or written.
CREATE INDEX seen ON backfill.changed_regions ((chunk_end - chunk_start));
INSERT INTO cr.events VALUES ('2026-10-28 10:00', 1), ('2026-11-02 10:00', 1);
DROP INDEX backfill.seen;
INSERT INTO cr.events VALUES ('2026-10-29 10:00', 1);
SELECT chunk_start, len, rows FROM cr.logged WHERE target = 'cr.ev_daily'::regclass ORDER BY 1;
CREATE FUNCTION cr.log_seen() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN RAISE NOTICE 'trigger ran as %', current_user; RETURN NULL; END$$;
CREATE TRIGGER seen AFTER INSERT ON backfill.changed_regions
    FOR EACH ROW EXECUTE FUNCTION cr.log_seen();
INSERT INTO cr.events VALUES ('2026-10-30 10:00', 1);
DROP TRIGGER seen ON backfill.changed_regions;
DROP FUNCTION cr.log_seen();
SELECT count(*) AS written FROM cr.events WHERE at = '2026-10-30 10:00';
SELECT count(*) AS recorded FROM cr.logged
 WHERE target = 'cr.ev_daily'::regclass AND chunk_start = '2026-10-30';
SELECT cr.clear();
-- The table's own trigger backfill_recorded_signal fires on DELETE and
-- UPDATE, not on INSERT: the rows are still appended from C, in the
-- writer's own command (cmin 0 in a transaction that ran nothing before),
-- not by an INSERT as the extension owner run after it (cmin 1).  A trigger
-- of a user's that fires on no INSERT does not stop them either (the guard
-- would refuse that INSERT).
BEGIN;
INSERT INTO cr.events VALUES ('2026-10-26 10:00', 1);
SELECT cmin FROM backfill.changed_regions
 WHERE target = 'cr.ev_daily'::regclass AND chunk_start = '2026-10-26';
ROLLBACK;
CREATE FUNCTION cr.log_seen() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN RAISE NOTICE 'trigger ran as %', current_user; RETURN NULL; END$$;
CREATE TRIGGER seen AFTER DELETE ON backfill.changed_regions
    FOR EACH STATEMENT EXECUTE FUNCTION cr.log_seen();
INSERT INTO cr.events VALUES ('2026-10-26 10:00', 1);
DROP TRIGGER seen ON backfill.changed_regions;
DROP FUNCTION cr.log_seen();
SELECT count(*) AS recorded FROM cr.logged
 WHERE target = 'cr.ev_daily'::regclass AND chunk_start = '2026-10-26';
DELETE FROM cr.events WHERE at = '2026-10-26 10:00';
SELECT cr.clear();

-- A partition watched alone: writes straight into it are recorded, and
-- inserts through its partitioned table (its row trigger fires on it, and
-- loads its watches); updates and deletes through the partitioned table are
-- not (statement triggers fire on the table a statement names only), and
-- watch says so; a TRUNCATE of the parent truncates the partition and is
-- recorded.
CREATE TABLE cr.ev11_daily (day date NOT NULL, n int);
SELECT backfill.register('cr.ev11_daily', 'day',
    $$SELECT $1::date AS day, count(*)::int AS n FROM cr.events_11 WHERE at >= $1 AND at < $2$$);
SELECT backfill.watch('cr.ev11_daily', 'cr.events_11', 'at', settle => '100 years') AS added;
SET client_min_messages = warning;
CALL backfill.backfill('cr.ev11_daily', '2026-11-01', '2026-11-10');
RESET client_min_messages;
INSERT INTO cr.events_11 VALUES ('2026-11-02 10:00', 1);
INSERT INTO cr.events VALUES ('2026-11-04 10:00', 1);
UPDATE cr.events SET v = 2 WHERE at = '2026-11-02 10:00';
SELECT chunk_start, len, rows FROM cr.logged WHERE target = 'cr.ev11_daily'::regclass ORDER BY 1;
SELECT backfill.unregister('cr.ev11_daily');
DROP TABLE cr.ev11_daily;
SELECT cr.clear();

-- A partitioned table and one of its partitions, each watched: watching
-- the partition first and then its table works (the partition's own row
-- trigger is named after its OID, so the table's clone does not collide),
-- and unwatching either keeps the triggers the other watch needs: after
-- unwatch of the table, the partition's own watch records a direct INSERT
-- and UPDATE; after unwatch of the partition, the table's watch records a
-- direct INSERT, UPDATE and DELETE into the partition.
CREATE TABLE cr.nest (at timestamptz NOT NULL, v int) PARTITION BY RANGE (at);
CREATE TABLE cr.nest_11 PARTITION OF cr.nest
    FOR VALUES FROM ('2026-11-01') TO ('2026-12-01');
CREATE TABLE cr.nest_daily (day timestamptz NOT NULL, n int);
CREATE TABLE cr.nest11_daily (day timestamptz NOT NULL, n int);
SELECT backfill.register('cr.nest_daily', 'day',
    $$SELECT $1 AS day, count(*)::int AS n FROM cr.nest WHERE at >= $1 AND at < $2$$) AS nest;
SELECT backfill.register('cr.nest11_daily', 'day',
    $$SELECT $1 AS day, count(*)::int AS n FROM cr.nest_11 WHERE at >= $1 AND at < $2$$) AS nest11;
CREATE VIEW cr.nest_triggers AS
SELECT c.relname, regexp_replace(t.tgname, '_[0-9]+_', '_<oid>_') AS tgname,
       t.tgparentid <> 0 AS clone
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE c.relname IN ('nest', 'nest_11') AND t.tgname LIKE 'backfill_watch_%';
SET client_min_messages = warning;
SELECT backfill.watch('cr.nest11_daily', 'cr.nest_11', 'at') AS partition_first;
SELECT backfill.watch('cr.nest_daily', 'cr.nest', 'at') AS then_its_table;
RESET client_min_messages;
SELECT * FROM cr.nest_triggers ORDER BY 1, 2;
SELECT backfill.unwatch('cr.nest_daily') AS removed;
SELECT * FROM cr.nest_triggers ORDER BY 1, 2;
INSERT INTO cr.nest_11 VALUES ('2026-11-03 10:00', 1);
UPDATE cr.nest_11 SET v = 2 WHERE at = '2026-11-03 10:00';
SELECT target, chunk_start, rows FROM cr.logged
 WHERE target IN ('cr.nest_daily'::regclass, 'cr.nest11_daily'::regclass) ORDER BY 1, 2;
SELECT cr.clear();
SET client_min_messages = warning;
SELECT backfill.watch('cr.nest_daily', 'cr.nest', 'at') AS watched_again;
RESET client_min_messages;
SELECT backfill.unwatch('cr.nest11_daily') AS removed;
SELECT * FROM cr.nest_triggers ORDER BY 1, 2;
INSERT INTO cr.nest_11 VALUES ('2026-11-04 10:00', 1);
UPDATE cr.nest_11 SET v = 3 WHERE at = '2026-11-03 10:00';
DELETE FROM cr.nest_11 WHERE at = '2026-11-04 10:00';
SELECT target, chunk_start, rows FROM cr.logged
 WHERE target IN ('cr.nest_daily'::regclass, 'cr.nest11_daily'::regclass) ORDER BY 1, 2;
SELECT cr.clear();
SELECT backfill.unregister('cr.nest_daily'), backfill.unregister('cr.nest11_daily');
SELECT * FROM cr.nest_triggers ORDER BY 1, 2;
DROP VIEW cr.nest_triggers;
DROP TABLE cr.nest, cr.nest_daily, cr.nest11_daily;

-- A renamed watched column is followed: the event trigger renames it in
-- the watches and the row trigger's name with it (the row trigger's WHEN
-- clause gives the column's number, which a rename keeps), so the writes
-- after the rename are recorded, into a partitioned source (row triggers,
-- and the partition watched on its own below it) and a table (transition
-- tables).  Before, every write failed with 42703 until watch was called
-- again.
CREATE TABLE cr.ev11_daily (day date NOT NULL, n int NOT NULL);
SELECT backfill.register('cr.ev11_daily', 'day',
    $$SELECT $1::date AS day, count(*)::int AS n FROM cr.events_11 WHERE at >= $1 AND at < $2$$);
SELECT backfill.watch('cr.ev11_daily', 'cr.events_11', 'at', settle => '100 years') AS added;
ALTER TABLE cr.events RENAME COLUMN at TO at2;
SELECT target, source, time_column FROM backfill.watches
 WHERE source IN ('cr.events'::regclass, 'cr.events_11'::regclass) ORDER BY 1;
SELECT t.tgrelid::regclass AS rel, regexp_replace(t.tgname, '_[0-9]+_', '_<oid>_') AS tgname FROM pg_trigger t
 WHERE t.tgrelid IN ('cr.events'::regclass, 'cr.events_11'::regclass)
   AND t.tgname LIKE 'backfill\_watch\_row\_%' ORDER BY 1, 2;
INSERT INTO cr.events VALUES ('2026-10-27 10:00', 1);
ALTER TABLE cr.events RENAME COLUMN at2 TO at;
ALTER TABLE cr.payments RENAME COLUMN paid_at TO paid_ts;
UPDATE cr.payments SET amount = amount WHERE paid_ts >= '2026-11-02' AND paid_ts < '2026-11-03';
ALTER TABLE cr.payments RENAME COLUMN paid_ts TO paid_at;
SELECT target, chunk_start, len, rows FROM cr.logged ORDER BY 1, 2;
SELECT cr.clear();
SELECT backfill.unregister('cr.ev11_daily');
DROP TABLE cr.ev11_daily;
-- Where the event trigger did not run (disabled here), a write still
-- fails with 42703 rather than record nothing.
ALTER EVENT TRIGGER backfill_watch_ddl DISABLE;
ALTER TABLE cr.payments RENAME COLUMN paid_at TO paid_ts;
INSERT INTO cr.payments (paid_ts, amount) VALUES ('2026-11-02 09:00', 1);
ALTER TABLE cr.payments RENAME COLUMN paid_ts TO paid_at;
ALTER EVENT TRIGGER backfill_watch_ddl ENABLE;
-- An inheritance child (plain INHERITS, not a partition) watched on its
-- own follows a rename of its parent's column too: PostgreSQL renames it
-- in the child, whose watch kept the old name, so every write into the
-- child failed (42703) until watch was called again (found by the attack
-- review of the rename).
CREATE TABLE cr.ih_parent (at timestamptz NOT NULL, v int);
CREATE TABLE cr.ih_child () INHERITS (cr.ih_parent);
CREATE TABLE cr.ih_daily (day date NOT NULL, n int NOT NULL);
SELECT backfill.register('cr.ih_daily', 'day',
    $$SELECT $1::date AS day, count(*)::int AS n FROM cr.ih_child WHERE at >= $1 AND at < $2$$);
SET client_min_messages = warning;
CALL backfill.backfill('cr.ih_daily', '2026-10-26', '2026-10-28');
RESET client_min_messages;
SELECT backfill.watch('cr.ih_daily', 'cr.ih_child', 'at', settle => '100 years') AS added;
ALTER TABLE cr.ih_parent RENAME COLUMN at TO at2;
SELECT source, time_column FROM backfill.watches WHERE target = 'cr.ih_daily'::regclass;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'cr.ih_child'::regclass
   AND tgname LIKE 'backfill\_watch\_row\_%';
INSERT INTO cr.ih_child VALUES ('2026-10-27 10:00', 1);
SELECT target, chunk_start, len, rows FROM cr.logged
 WHERE target = 'cr.ih_daily'::regclass ORDER BY 1, 2;
SELECT cr.clear();
SELECT backfill.unregister('cr.ih_daily');
DROP TABLE cr.ih_daily, cr.ih_child, cr.ih_parent;

-- Pipelines: a downstream target that watches its upstream target is
-- marked stale by every rebuild of the upstream's chunks.
CREATE TABLE cr.monthly (month timestamptz NOT NULL, total int);
SELECT backfill.register('cr.monthly', 'month',
    $$SELECT $1 AS month, sum(total)::int AS total FROM cr.daily WHERE day >= $1 AND day < $2$$,
    chunk => '1 month');
SELECT backfill.watch('cr.monthly', 'cr.daily', 'day', settle => '100 years') AS added;
SET client_min_messages = warning;
CALL backfill.backfill('cr.monthly', '2026-10-01', '2026-11-01');
CALL backfill.backfill('cr.daily', '2026-10-30', '2026-10-31');
RESET client_min_messages;
SELECT target, chunk_start, len FROM cr.logged WHERE target = 'cr.monthly'::regclass;
SELECT backfill.plan('cr.monthly', '2026-10-01', '2026-11-01', only_chunks => 'stale',
                     probe => false) AS m1 \gset
SELECT chunk_no, chunk_start, reason IS NOT NULL AS stale FROM backfill.chunks WHERE run_id = :m1;
SELECT backfill.cancel(:m1) AS cancelled;
SELECT cr.clear();

-- Sources without a trigger: a target with a ledger is stale where the
-- ledger has moved since its chunk was built.
CREATE TABLE cr.bank (booked date NOT NULL, amount int NOT NULL);
INSERT INTO cr.bank SELECT '2026-10-01'::date + g, 10 FROM generate_series(0, 4) g;
CREATE VIEW cr.bank_view AS SELECT * FROM cr.bank;
CREATE TABLE cr.settled (day date NOT NULL, total int);
SELECT backfill.register('cr.settled', 'day',
    $$SELECT $1::date AS day, sum(amount)::int AS total FROM cr.bank_view WHERE booked >= $1 AND booked < $2$$,
    measure => 'sum(total)',
    ledger => $$SELECT sum(amount) FROM cr.bank_view WHERE booked >= $1 AND booked < $2$$);
SET client_min_messages = warning;
CALL backfill.backfill('cr.settled', '2026-10-01', '2026-10-06');
RESET client_min_messages;
UPDATE cr.bank SET amount = 25 WHERE booked = '2026-10-03';
SELECT backfill.plan('cr.settled', '2026-10-01', '2026-10-06', only_chunks => 'stale',
                     probe => false) AS l1 \gset
SELECT chunk_no, chunk_start, reason FROM backfill.chunks WHERE run_id = :l1;
SET client_min_messages = warning;
CALL backfill.run(:l1);
RESET client_min_messages;
SELECT backfill.plan('cr.settled', '2026-10-01', '2026-10-06', only_chunks => 'stale') AS nothing;

-- Bad input.
SELECT backfill.watch('cr.daily', 'cr.bank_view', 'booked');
SELECT backfill.watch('cr.daily', 'cr.daily', 'day');
SELECT backfill.watch('cr.daily', 'cr.payments', 'nope');
SELECT backfill.watch('cr.daily', 'cr.payments', 'amount');
SELECT backfill.watch('cr.bank', 'cr.payments', 'paid_at');
SELECT backfill.watch(NULL, 'cr.payments', 'paid_at');
SELECT backfill.watch('cr.daily', 'cr.payments', NULL);
SELECT backfill.plan('cr.daily', '2026-10-29', '2026-11-05', only_chunks => 'stale,');
SELECT backfill.plan('cr.daily', '2026-10-29', '2026-11-05', only_chunks => 'stale,recent');
-- A trigger of the watch's name that is not the watch's is not taken for
-- it: watch fails (42710) and adds no watch and no trigger of its own.
CREATE TABLE cr.decoyed (at timestamptz NOT NULL);
CREATE FUNCTION cr.nothing() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
CREATE TRIGGER backfill_watch_update AFTER UPDATE ON cr.decoyed
    FOR EACH STATEMENT EXECUTE FUNCTION cr.nothing();
SELECT backfill.watch('cr.daily', 'cr.decoyed', 'at');
SELECT count(*) AS watches FROM backfill.watches WHERE source = 'cr.decoyed'::regclass;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'cr.decoyed'::regclass ORDER BY 1;
DROP TABLE cr.decoyed;
DROP FUNCTION cr.nothing();
-- Rights: rewriting the target, and TRIGGER on the source.
CREATE ROLE regress_cr_writer;
GRANT USAGE ON SCHEMA cr TO regress_cr_writer;
GRANT SELECT, INSERT, DELETE ON cr.daily TO regress_cr_writer;
GRANT SELECT, INSERT, UPDATE ON cr.payments TO regress_cr_writer;
GRANT USAGE ON SEQUENCE cr.payments_id_seq TO regress_cr_writer;
SET ROLE regress_cr_writer;
SELECT backfill.watch('cr.daily', 'cr.payments', 'paid_at');
SELECT backfill.watch('cr.ev_daily', 'cr.payments', 'paid_at');
-- a writer who cannot read the target learns nothing: no notice, no error
INSERT INTO cr.payments (paid_at, amount) VALUES ('2026-11-02 09:00', 1);
RESET ROLE;
SELECT target, chunk_start FROM backfill.changed_regions ORDER BY 1, 2;
SELECT cr.clear();

-- A write at the live edge, once the watches are cached, reads no catalog:
-- not even backfill's row of pg_extension (the version check is made only
-- before the trigger reads or writes the catalog: issue 30).
INSERT INTO cr.payments (paid_at, amount) VALUES (now() + interval '1 hour', 1);
BEGIN;
SELECT pg_catalog.pg_stat_get_xact_blocks_fetched('pg_catalog.pg_extension'::pg_catalog.regclass) AS fetched \gset
INSERT INTO cr.payments (paid_at, amount) VALUES (now() + interval '1 hour', 1);
SELECT pg_catalog.pg_stat_get_xact_blocks_fetched('pg_catalog.pg_extension'::pg_catalog.regclass) - :fetched AS extension_reads;
COMMIT;
SELECT count(*) AS logged FROM backfill.changed_regions;
-- The trigger's calls (issue 30): at the live edge the trigger function
-- does not run at all, however many rows (the row trigger's WHEN clause
-- loads the watches on the transaction's first row and is false for each:
-- no event is queued, and there is no INSERT statement trigger); rows into
-- built days make the WHEN true once per statement, however many rows and
-- chunks, and that one event writes every chunk they noted (two days for
-- cr.daily, one quarter for cr.quarter).
SET track_functions = 'all';
BEGIN;
INSERT INTO cr.payments (paid_at, amount)
SELECT now() + i * interval '1 minute', 1 FROM generate_series(1, 3) i;
SELECT coalesce(sum(calls), 0) AS trigger_calls FROM pg_stat_xact_user_functions
 WHERE funcid = 'backfill._watch_trigger()'::regprocedure;
INSERT INTO cr.payments (paid_at, amount)
VALUES ('2026-11-02 09:00', 1), ('2026-11-02 10:00', 1), ('2026-11-03 09:00', 1);
SELECT coalesce(sum(calls), 0) AS trigger_calls FROM pg_stat_xact_user_functions
 WHERE funcid = 'backfill._watch_trigger()'::regprocedure;
SELECT calls AS when_calls FROM pg_stat_xact_user_functions
 WHERE funcid = 'backfill._watch_row(oid, timestamptz)'::regprocedure;
COMMIT;
RESET track_functions;
SELECT target, chunk_start FROM backfill.changed_regions ORDER BY 1, 2;
SELECT cr.clear();
-- On a table (not partitioned) the row trigger's WHEN clause passes the
-- row's tableoid and its time column and no constant at all: PostgreSQL
-- reads the clause back from its text on every statement (issue 30).  The
-- column's number comes from the call's expression: a table whose time
-- column stands after a dropped one is logged all the same.  The int2
-- form, which watch installed there before, keeps logging, and watch,
-- called again by the table's owner, replaces it.
SELECT substring(pg_get_triggerdef(t.oid) FROM 'WHEN \((.*)\) EXECUTE') AS qual
  FROM pg_trigger t WHERE t.tgrelid = 'cr.payments'::regclass
   AND t.tgname = 'backfill_watch_row_paid_at';
CREATE TABLE cr.moved (gone int, paid_at timestamptz NOT NULL, amount int);
ALTER TABLE cr.moved DROP COLUMN gone;
CREATE TABLE cr.moved_daily (day timestamptz NOT NULL, n bigint);
SELECT backfill.register('cr.moved_daily', 'day',
    $$SELECT $1 AS day, count(*) AS n FROM cr.moved WHERE paid_at >= $1 AND paid_at < $2$$) AS moved_version;
SELECT backfill.watch('cr.moved_daily', 'cr.moved', 'paid_at') AS added;
SELECT t.tgname, substring(pg_get_triggerdef(t.oid) FROM 'WHEN \((.*)\) EXECUTE') AS qual
  FROM pg_trigger t WHERE t.tgrelid = 'cr.moved'::regclass AND t.tgqual IS NOT NULL;
SET client_min_messages = warning;
CALL backfill.backfill('cr.moved_daily', '2026-11-01', '2026-11-03') \gset moved_
RESET client_min_messages;
INSERT INTO cr.moved (paid_at, amount) VALUES ('2026-11-02 09:00', 1), (now() + interval '1 hour', 1);
SELECT target, chunk_start FROM backfill.changed_regions ORDER BY 1, 2;
SELECT cr.clear();
DROP TRIGGER backfill_watch_row_paid_at ON cr.moved;
CREATE TRIGGER backfill_watch_row_paid_at AFTER INSERT ON cr.moved FOR EACH ROW
    WHEN (backfill._watch_row('cr.moved'::regclass, '2'::int2, NEW.paid_at))
    EXECUTE FUNCTION backfill._watch_trigger();
INSERT INTO cr.moved (paid_at, amount) VALUES ('2026-11-01 09:00', 1);
SELECT target, chunk_start FROM backfill.changed_regions ORDER BY 1, 2;
SELECT cr.clear();
SELECT backfill.watch('cr.moved_daily', 'cr.moved', 'paid_at') AS added;
SELECT t.tgname, substring(pg_get_triggerdef(t.oid) FROM 'WHEN \((.*)\) EXECUTE') AS qual
  FROM pg_trigger t WHERE t.tgrelid = 'cr.moved'::regclass AND t.tgqual IS NOT NULL;
INSERT INTO cr.moved (paid_at, amount) VALUES ('2026-11-02 10:00', 1);
SELECT target, chunk_start FROM backfill.changed_regions ORDER BY 1, 2;
SELECT cr.clear();
-- A direct call of that form notes the chunk of a column it passes, for a
-- role that may insert into the table it names (true: the first row that
-- left a chunk pending), and nothing for a value that is not a column of
-- a row (there is no column to match a watch's).  The AFTER UPDATE
-- statement trigger writes what the transaction noted.
BEGIN;
SELECT backfill._watch_row(m.tableoid, m.paid_at) AS direct_column
  FROM cr.moved m WHERE m.paid_at = '2026-11-01 09:00';
SELECT backfill._watch_row('cr.moved'::regclass::oid, '2026-11-02 12:00'::timestamptz) AS direct_value;
UPDATE cr.moved SET amount = amount WHERE false;
COMMIT;
SELECT target, chunk_start FROM backfill.changed_regions ORDER BY 1, 2;
SELECT cr.clear();
SELECT backfill.unregister('cr.moved_daily') AS moved_unregistered;
DROP TABLE cr.moved, cr.moved_daily;
-- An INSERT through a view by a role that may not write the source itself:
-- the row trigger's WHEN clause may not load the watches (the role may not
-- insert into the source), so it is true for each row, and each row's
-- event, which fires once the rights were checked (as the view's owner),
-- loads them and notes its row: both days are recorded, the live edge's
-- row is not.  The next statement of the transaction finds the watches
-- loaded, but the role may still not write the source: its WHEN clause
-- notes nothing itself, and each of its rows behind the edge gets an event
-- that notes it (two here; a row at the live edge would get none), also
-- again after a rolled-back savepoint forgot the day an event noted.
CREATE VIEW cr.payments_in AS SELECT paid_at, amount FROM cr.payments;
CREATE ROLE regress_cr_viewer;
GRANT USAGE ON SCHEMA cr TO regress_cr_viewer;
GRANT INSERT ON cr.payments_in TO regress_cr_viewer;
GRANT USAGE ON SEQUENCE cr.payments_id_seq TO regress_cr_viewer;
SET track_functions = 'all';
SET ROLE regress_cr_viewer;
BEGIN;
-- (the calls counted so far: a backend keeps its function counts pending,
-- from earlier transactions too, until it flushes them at most once a
-- second, so only the difference within this transaction is stable)
SELECT coalesce(sum(calls), 0) AS calls_before FROM pg_stat_xact_user_functions
 WHERE funcid = 'backfill._watch_trigger()'::regprocedure \gset
INSERT INTO cr.payments_in VALUES ('2026-11-02 11:00', 1), ('2026-11-05 11:00', 1),
    (now() + interval '1 hour', 1);
SELECT coalesce(sum(calls), 0) - :calls_before AS trigger_calls FROM pg_stat_xact_user_functions
 WHERE funcid = 'backfill._watch_trigger()'::regprocedure;
INSERT INTO cr.payments_in VALUES ('2026-11-03 11:00', 1), ('2026-11-04 11:00', 1);
SELECT coalesce(sum(calls), 0) - :calls_before AS trigger_calls FROM pg_stat_xact_user_functions
 WHERE funcid = 'backfill._watch_trigger()'::regprocedure;
SAVEPOINT s;
INSERT INTO cr.payments_in VALUES ('2026-11-01 11:00', 1);
ROLLBACK TO SAVEPOINT s;
INSERT INTO cr.payments_in VALUES ('2026-11-01 12:00', 1);
COMMIT;
RESET ROLE;
RESET track_functions;
SELECT target, chunk_start FROM backfill.changed_regions ORDER BY 1, 2;
SELECT cr.clear();
-- A row of the source's owner in the same statement, by a SECURITY DEFINER
-- function of its own (an audit row, say), is noted by its WHEN clause (the
-- owner may write the source) and its event fires at the end of the
-- function's INSERT, before the view's row event: that event must not take
-- the view's row's place, which its own event still notes.  Both days are
-- recorded: 2 November (the view's row) and 4 November (the owner's).
-- Before, the events shared one count per source: the owner's event took
-- the view's row's, and 2 November was silently not recorded.
CREATE FUNCTION cr.owner_write() RETURNS int LANGUAGE sql SECURITY DEFINER
    SET search_path = pg_catalog
    AS $$INSERT INTO cr.payments (paid_at, amount) VALUES ('2026-11-04 09:00', 1) RETURNING 1$$;
SET ROLE regress_cr_viewer;
WITH r AS (INSERT INTO cr.payments_in VALUES ('2026-11-02 11:00', 1) RETURNING 1)
SELECT cr.owner_write() AS owner_rows FROM r;
RESET ROLE;
SELECT target, chunk_start FROM backfill.changed_regions ORDER BY 1, 2;
SELECT cr.clear();
DROP FUNCTION cr.owner_write();
-- The same straight into a partition, by a role that may insert into the
-- partition only (not into the watched partitioned table the row trigger
-- names): the partition's row events load its watches (its own and its
-- partitioned table's) and note the rows.  A direct call of _watch_row by
-- that role in the same transaction, once those events have loaded the
-- watches of cr.events, notes nothing (doc/changed-regions.md: for anyone
-- else it loads nothing, takes no lock and notes nothing): the role could
-- not mark 20 October (cr.events_10) by writing a row, so the next
-- statement's event writes 4 November only.
GRANT USAGE ON SCHEMA cr TO regress_cr_viewer;
GRANT INSERT ON cr.events_11 TO regress_cr_viewer;
SET ROLE regress_cr_viewer;
INSERT INTO cr.events_10 VALUES ('2026-10-20 10:00', 1);
BEGIN;
INSERT INTO cr.events_11 VALUES ('2026-11-06 10:00', 1), ('2026-11-07 10:00', 1);
SELECT backfill._watch_row('cr.events'::regclass, '1'::smallint,
                           '2026-10-20 10:00'::timestamp) IS NOT NULL AS called;
INSERT INTO cr.events_11 VALUES ('2026-11-04 10:00', 1);
COMMIT;
RESET ROLE;
SELECT target, chunk_start FROM backfill.changed_regions ORDER BY 1, 2;
SELECT cr.clear();
REVOKE INSERT ON cr.events_11 FROM regress_cr_viewer;
DROP VIEW cr.payments_in;
DROP OWNED BY regress_cr_viewer;
DROP ROLE regress_cr_viewer;

-- Whether a writer may note rows itself (INSERT on the source, USAGE on
-- its schema) is checked once and kept across transactions until a catalog
-- change could alter it: a REVOKE of the right, or of the membership in
-- the role that holds it, counts at the writer's next transaction.  Seen
-- through a direct call: it takes the watch lock only for a writer who
-- may note.
CREATE ROLE regress_cr_group;
CREATE ROLE regress_cr_member IN ROLE regress_cr_group;
GRANT USAGE ON SCHEMA cr TO regress_cr_member;
GRANT INSERT ON cr.payments TO regress_cr_group;
SELECT attnum AS pay_at FROM pg_attribute
 WHERE attrelid = 'cr.payments'::regclass AND attname = 'paid_at' \gset
CREATE VIEW cr.my_watch_locks AS
SELECT count(*) AS watch_locks FROM pg_locks
 WHERE locktype = 'advisory' AND classid = 1111883782 AND objsubid = 16966
   AND objid = 'cr.daily'::regclass::oid AND pid = pg_backend_pid();
GRANT SELECT ON cr.my_watch_locks TO regress_cr_member;
SET ROLE regress_cr_member;
BEGIN;
SELECT backfill._watch_row('cr.payments'::regclass, :'pay_at'::int2,
                           '2026-11-02 09:00'::timestamptz) IS NOT NULL AS called;
SELECT watch_locks AS member_may_note FROM cr.my_watch_locks;
ROLLBACK;
BEGIN;
SELECT backfill._watch_row('cr.payments'::regclass, :'pay_at'::int2,
                           '2026-11-02 09:00'::timestamptz) IS NOT NULL AS called;
SELECT watch_locks AS member_again FROM cr.my_watch_locks;
ROLLBACK;
RESET ROLE;
REVOKE INSERT ON cr.payments FROM regress_cr_group;
SET ROLE regress_cr_member;
BEGIN;
SELECT backfill._watch_row('cr.payments'::regclass, :'pay_at'::int2,
                           '2026-11-02 09:00'::timestamptz) IS NOT NULL AS called;
SELECT watch_locks AS after_revoke FROM cr.my_watch_locks;
ROLLBACK;
RESET ROLE;
GRANT INSERT ON cr.payments TO regress_cr_group;
SET ROLE regress_cr_member;
BEGIN;
SELECT backfill._watch_row('cr.payments'::regclass, :'pay_at'::int2,
                           '2026-11-02 09:00'::timestamptz) IS NOT NULL AS called;
SELECT watch_locks AS granted_again FROM cr.my_watch_locks;
ROLLBACK;
RESET ROLE;
REVOKE regress_cr_group FROM regress_cr_member;
SET ROLE regress_cr_member;
BEGIN;
SELECT backfill._watch_row('cr.payments'::regclass, :'pay_at'::int2,
                           '2026-11-02 09:00'::timestamptz) IS NOT NULL AS called;
SELECT watch_locks AS after_membership_revoked FROM cr.my_watch_locks;
ROLLBACK;
RESET ROLE;
SELECT count(*) AS recorded FROM backfill.changed_regions;
DROP VIEW cr.my_watch_locks;
REVOKE ALL ON cr.payments FROM regress_cr_group;
REVOKE ALL ON SCHEMA cr FROM regress_cr_member;
DROP ROLE regress_cr_member, regress_cr_group;

-- unwatch: the watches removed; the triggers go with the last watch of a
-- source; later writes are not logged.
SELECT backfill.unwatch('cr.daily', 'cr.payments') AS removed;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'cr.payments'::regclass ORDER BY 1;
SELECT backfill.unwatch('cr.quarter') AS removed;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'cr.payments'::regclass ORDER BY 1;
INSERT INTO cr.payments (paid_at, amount) VALUES ('2026-11-02 09:00', 1);
SELECT count(*) AS logged FROM backfill.changed_regions;
SELECT backfill.unwatch('cr.quarter') AS removed;
-- unregister forgets the watches (the partitioned source loses its triggers)
SELECT backfill.unregister('cr.ev_daily');
SELECT count(*) AS watches FROM backfill.watches WHERE target = 'cr.ev_daily'::regclass;
SELECT count(*) AS triggers FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE t.tgname LIKE 'backfill_watch_%' AND c.relname LIKE 'events%';

-- In a zone of one offset (UTC, Etc/GMT-3) the chunk of a row is found by
-- integer arithmetic instead of through the calendar (issue 30): the same
-- chunks as the calendar's, for weeks from Monday, days, '2 days 12
-- hours' from Monday 2000-01-03 and 6 hours from each midnight, at the
-- zone's midnights, before 2000 too.  Each target is built over its whole
-- range; each row's logged chunk must hold the row and be a chunk of the
-- grid split_range plans from a point of the grid (Monday 2000-01-03, local
-- midnight, minus 60 steps).  America/New_York (daylight saving time) goes
-- through the calendar as before.  The rows are written by a session in
-- another zone of one offset (Etc/GMT+5, five hours behind UTC): the
-- chunks are still the watch's zone's (found without making it the
-- session's when that zone has one offset too).
CREATE TABLE cr.zsrc (at timestamptz NOT NULL);
CREATE TABLE cr.zt (at timestamptz NOT NULL, n int);
CREATE TABLE cr.zres (zone text, step interval, rows bigint, right_chunks bigint);
SET client_min_messages = warning;
\o /dev/null
\set ECHO none
SELECT unnest(ARRAY[
    format('SET TimeZone = %L', z),
    format($q$SELECT backfill.register('cr.zt', 'at',
        'SELECT $1 AS at, count(*)::int AS n FROM cr.zsrc WHERE at >= $1 AND at < $2', chunk => %L)$q$, s),
    $q$SELECT backfill.watch('cr.zt', 'cr.zsrc', 'at')$q$,
    $q$CALL backfill.backfill('cr.zt', '1999-12-20', '2000-02-01')$q$,
    'SET TimeZone = ''Etc/GMT+5''',
    $q$INSERT INTO cr.zsrc SELECT '1999-12-20'::timestamptz + g * interval '7 hours 13 minutes'
         FROM generate_series(0, 115) g$q$,
    format('SET TimeZone = %L', z),
    format($q$INSERT INTO cr.zres
        SELECT %L, %L, count(*),
               count(*) FILTER (WHERE EXISTS (
                   SELECT FROM backfill.changed_regions x, backfill.split_range(
                          '2000-01-03'::timestamptz - 60 * %L::interval, '2000-03-01', %L) r
                    WHERE x.target = 'cr.zt'::regclass AND x.chunk_start <= z.at
                      AND x.chunk_end > z.at AND r.chunk_start = x.chunk_start
                      AND r.chunk_end = x.chunk_end))
          FROM cr.zsrc z$q$, z, s, s, s),
    'DELETE FROM cr.zsrc',
    $q$SELECT backfill.unregister('cr.zt')$q$])
  FROM unnest('{UTC,Etc/GMT-3,America/New_York}'::text[]) WITH ORDINALITY AS zz(z, zi),
       unnest('{1 week,1 day,2 days 12 hours,6 hours}'::interval[]) WITH ORDINALITY AS ss(s, si)
 ORDER BY zi, si \gexec
\set ECHO all
\o
RESET client_min_messages;
SET TimeZone = 'America/New_York';
SELECT * FROM cr.zres ORDER BY zone, step;
DROP TABLE cr.zt, cr.zres, cr.zsrc;

-- Two targets of one source, watched in one statement (the second watch
-- sees the triggers the first made), and a chunk recorded for both: a
-- later writer into it leaves out both rows and holds both RECORDED locks
-- (so that a build of either waits for it); a writer into a chunk recorded
-- for neither appends its rows and holds none.
SET TimeZone = 'UTC';
CREATE TABLE cr.two_src (ts timestamptz NOT NULL);
CREATE TABLE cr.two_a (day timestamptz NOT NULL, n int);
CREATE TABLE cr.two_b (LIKE cr.two_a);
SELECT backfill.register(t, 'day', $$SELECT $1 AS day, count(*)::int AS n
    FROM cr.two_src WHERE ts >= $1 AND ts < $2$$)
  FROM unnest('{cr.two_a,cr.two_b}'::regclass[]) t;
SET client_min_messages = warning;
SELECT backfill.watch(t, 'cr.two_src', 'ts', settle => '100 years') AS watched
  FROM unnest('{cr.two_a,cr.two_b}'::regclass[]) t;
CALL backfill.backfill('cr.two_a', '2024-01-01', '2024-01-03');
CALL backfill.backfill('cr.two_b', '2024-01-01', '2024-01-03');
RESET client_min_messages;
CREATE VIEW cr.recorded_locks AS
SELECT count(*) AS recorded_locks FROM pg_locks
 WHERE locktype = 'advisory' AND classid = 1111883784 AND objsubid = 16966
   AND pid = pg_backend_pid();
INSERT INTO cr.two_src VALUES ('2024-01-01 07:00');
BEGIN;
INSERT INTO cr.two_src VALUES ('2024-01-01 08:00');
SELECT * FROM cr.recorded_locks;
COMMIT;
BEGIN;
INSERT INTO cr.two_src VALUES ('2024-01-02 08:00');
SELECT * FROM cr.recorded_locks;
COMMIT;
SELECT target, chunk_start, rows FROM cr.logged
 WHERE target IN ('cr.two_a'::regclass, 'cr.two_b'::regclass) ORDER BY 1, 2;
-- A row left out by a cursor's FETCH: a later FETCH of that cursor that
-- fails in a savepoint rolls the savepoint back and gives back the
-- cursor's own locks, but the first FETCH's row stays, left out: the
-- RECORDED locks must stay with it (they belong to the transaction, not
-- to the cursor), or a build could consume the row found and read the
-- source without this writer's row.
CREATE FUNCTION cr.two_write(i int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
    IF i = 2 THEN
        RAISE EXCEPTION 'the second FETCH fails';
    END IF;
    INSERT INTO cr.two_src VALUES ('2024-01-01 09:00');
    RETURN i;
END
$$;
BEGIN;
DECLARE two_cur CURSOR FOR SELECT cr.two_write(i) FROM generate_series(1, 2) i;
FETCH 1 FROM two_cur;
SELECT * FROM cr.recorded_locks;
SAVEPOINT two_sp;
FETCH 1 FROM two_cur;
ROLLBACK TO two_sp;
SELECT * FROM cr.recorded_locks;
CLOSE two_cur;
SELECT * FROM cr.recorded_locks;
-- the watch locks of the watches loaded by the first FETCH stay too
SELECT count(*) AS watch_locks FROM pg_locks
 WHERE locktype = 'advisory' AND classid = 1111883782 AND objsubid = 16966
   AND pid = pg_backend_pid();
SELECT count(*) AS written FROM cr.two_src WHERE ts = '2024-01-01 09:00';
COMMIT;
SELECT target, chunk_start, rows FROM cr.logged
 WHERE target IN ('cr.two_a'::regclass, 'cr.two_b'::regclass) ORDER BY 1, 2;
DROP FUNCTION cr.two_write(int);
-- A SERIALIZABLE writer appends its rows, recorded or not, and takes no
-- RECORDED lock: reading the log would take predicate locks that a
-- build's consumption conflicts with.
BEGIN ISOLATION LEVEL SERIALIZABLE;
INSERT INTO cr.two_src VALUES ('2024-01-01 10:00');
SELECT * FROM cr.recorded_locks;
COMMIT;
SELECT target, chunk_start, rows FROM cr.logged
 WHERE target IN ('cr.two_a'::regclass, 'cr.two_b'::regclass) ORDER BY 1, 2;
-- One statement whose first row lies in a chunk recorded for both targets
-- and whose second lies in a chunk recorded for neither: the first row's
-- chunks are found recorded as the row is written (both RECORDED locks
-- kept), the second row's chunks are appended at the end of the statement.
BEGIN;
INSERT INTO cr.two_src VALUES ('2024-01-01 11:00'), ('2023-12-31 11:00');
SELECT * FROM cr.recorded_locks;
COMMIT;
SELECT target, chunk_start, rows FROM cr.logged
 WHERE target IN ('cr.two_a'::regclass, 'cr.two_b'::regclass) ORDER BY 1, 2;
-- A savepoint rolled back takes the row and the locks its chunk took; the
-- next row into the chunk takes them again, and the failed statement of a
-- savepoint leaves none behind.
BEGIN;
SAVEPOINT s;
INSERT INTO cr.two_src VALUES ('2024-01-01 12:00');
SELECT * FROM cr.recorded_locks;
ROLLBACK TO SAVEPOINT s;
SELECT * FROM cr.recorded_locks;
INSERT INTO cr.two_src VALUES ('2024-01-01 13:00');
SELECT * FROM cr.recorded_locks;
COMMIT;
BEGIN;
SAVEPOINT s;
INSERT INTO cr.two_src VALUES ('2024-01-01 14:00'), (NULL);
ROLLBACK TO SAVEPOINT s;
SELECT * FROM cr.recorded_locks;
COMMIT;
SELECT target, chunk_start, rows FROM cr.logged
 WHERE target IN ('cr.two_a'::regclass, 'cr.two_b'::regclass) ORDER BY 1, 2;
-- The rows found recorded are remembered by the backend: the transactions
-- above into January 1 left their rows out without reading the log again.
-- A row of the log deleted or changed fires its row trigger
-- backfill_recorded_signal, which makes every backend forget them:
-- after a superuser's DELETE of cr.two_a's row, the next row into January
-- 1 is recorded again for cr.two_a, and still left out for cr.two_b.
SELECT tgname, tgenabled, pg_get_triggerdef(oid) AS def FROM pg_trigger
 WHERE tgrelid = 'backfill.changed_regions'::regclass AND NOT tgisinternal;
DELETE FROM backfill.changed_regions
 WHERE target = 'cr.two_a'::regclass AND chunk_start = '2024-01-01';
INSERT INTO cr.two_src VALUES ('2024-01-01 15:00');
SELECT target, chunk_start, rows FROM cr.logged
 WHERE target IN ('cr.two_a'::regclass, 'cr.two_b'::regclass)
   AND chunk_start = '2024-01-01' ORDER BY 1, 2;
-- With the trigger disabled a DELETE sends nothing, and a remembered row
-- is read again in each transaction: found gone, the chunk is recorded.
ALTER TABLE backfill.changed_regions DISABLE TRIGGER backfill_recorded_signal;
INSERT INTO cr.two_src VALUES ('2024-01-01 16:00');
DELETE FROM backfill.changed_regions
 WHERE target = 'cr.two_a'::regclass AND chunk_start = '2024-01-01';
INSERT INTO cr.two_src VALUES ('2024-01-01 17:00');
SELECT target, chunk_start, rows FROM cr.logged
 WHERE target IN ('cr.two_a'::regclass, 'cr.two_b'::regclass)
   AND chunk_start = '2024-01-01' ORDER BY 1, 2;
ALTER TABLE backfill.changed_regions ENABLE ALWAYS TRIGGER backfill_recorded_signal;
-- TRUNCATE fires no row trigger: the table's new file invalidates it.
INSERT INTO cr.two_src VALUES ('2024-01-01 18:00');
CREATE TEMP TABLE cr_kept AS SELECT * FROM backfill.changed_regions;
TRUNCATE backfill.changed_regions;
INSERT INTO cr.two_src VALUES ('2024-01-01 19:00');
SELECT target, chunk_start, rows FROM cr.logged
 WHERE target IN ('cr.two_a'::regclass, 'cr.two_b'::regclass) ORDER BY 1, 2;
INSERT INTO backfill.changed_regions SELECT * FROM cr_kept;
DROP TABLE cr_kept;
-- The watches a transaction loaded point into the backend's cache of
-- watches; an invalidation that empties the cache mid-transaction (here
-- the signal every upgrade script ends with) hands its memory to the
-- transaction, whose next rows still find their chunks (two days noted
-- for each target, nothing else).
CREATE TEMP TABLE cr_before AS SELECT * FROM backfill.changed_regions;
BEGIN;
INSERT INTO cr.two_src VALUES ('2023-12-27 08:00');
ALTER TABLE backfill.watches RESET (fillfactor);
INSERT INTO cr.two_src VALUES ('2023-12-26 08:00');
UPDATE cr.two_src SET ts = ts + interval '1 minute' WHERE ts = '2023-12-26 08:00';
COMMIT;
SELECT target, chunk_start, chunk_end - chunk_start AS len, count(*) AS rows
  FROM (SELECT target, chunk_start, chunk_end FROM backfill.changed_regions
        EXCEPT ALL SELECT target, chunk_start, chunk_end FROM cr_before) n
 GROUP BY 1, 2, 3 ORDER BY 1, 2;
DROP TABLE cr_before;
-- Nobody else calls or installs it.
SELECT backfill._recorded_signal();
SET ROLE regress_cr_writer;
CREATE TEMP TABLE cr_signal (v int);
CREATE TRIGGER s AFTER DELETE ON cr_signal
    EXECUTE FUNCTION backfill._recorded_signal();
DROP TABLE cr_signal;
RESET ROLE;
-- A direct call of the WHEN function notes a chunk pending but queues no
-- event (it is no INSERT).  A role that may INSERT into the source calls
-- it, then inserts a row into that chunk, in the same transaction or in
-- the INSERT's own query: the row's chunk is found pending, so its WHEN
-- clause is true and its event writes the chunk.  Else the row would go
-- unrecorded for every target (a change lost, chosen by the writer).
GRANT USAGE ON SCHEMA cr TO regress_cr_writer;
GRANT INSERT ON cr.two_src TO regress_cr_writer;
SET ROLE regress_cr_writer;
BEGIN;
SELECT backfill._watch_row('cr.two_src'::regclass, '1'::smallint,
                           '2023-12-29 08:00'::timestamptz) AS noted;
INSERT INTO cr.two_src VALUES ('2023-12-29 09:00');
COMMIT;
INSERT INTO cr.two_src
SELECT t FROM (VALUES ('2023-12-28 09:00'::timestamptz)) v(t)
 WHERE backfill._watch_row('cr.two_src'::regclass, '1'::smallint, t);
RESET ROLE;
REVOKE INSERT ON cr.two_src FROM regress_cr_writer;
SELECT target, chunk_start, rows FROM cr.logged
 WHERE target IN ('cr.two_a'::regclass, 'cr.two_b'::regclass)
   AND chunk_start < '2023-12-30' ORDER BY 1, 2;
SELECT backfill.unregister(t) FROM unnest('{cr.two_a,cr.two_b}'::regclass[]) t;
DROP VIEW cr.recorded_locks;
DROP TABLE cr.two_src, cr.two_a, cr.two_b;
SET TimeZone = 'America/New_York';

-- A target that no watch follows, built in REPEATABLE READ: its chunks move
-- the watermark (they take the watch lock) but nothing is recorded for it,
-- so no WARNING that recorded changes stay.
CREATE TABLE cr.rr_plain (day timestamptz NOT NULL, n int);
SELECT backfill.register('cr.rr_plain', 'day', $$SELECT $1 AS day, 1 AS n$$);
SET default_transaction_isolation = 'repeatable read';
SET client_min_messages = warning;
CALL backfill.backfill('cr.rr_plain', '2024-01-01', '2024-01-03') \gset rr_
RESET client_min_messages;
RESET default_transaction_isolation;
SELECT count(*) AS built, (SELECT count(*) FROM backfill.changed_regions
                            WHERE target = 'cr.rr_plain'::regclass) AS recorded
  FROM cr.rr_plain;
SELECT backfill.unregister('cr.rr_plain');
DROP TABLE cr.rr_plain;

-- Dropping a watched time column is refused, with CASCADE too (attack
-- review 7): CASCADE dropped the INSERT row trigger whose WHEN clause
-- depends on the column, and nothing else fires on INSERT, so every INSERT
-- after it, also once a column of that name was added again, was silently
-- not recorded.  unwatch first.
CREATE TABLE cr.dc (at timestamptz NOT NULL, v int);
CREATE TABLE cr.dc_daily (day date NOT NULL, n int NOT NULL);
SELECT backfill.register('cr.dc_daily', 'day',
    $$SELECT $1::date AS day, count(*)::int AS n FROM cr.dc WHERE at >= $1 AND at < $2$$);
SET client_min_messages = warning;
CALL backfill.backfill('cr.dc_daily', '2026-10-26', '2026-10-28');
RESET client_min_messages;
SELECT backfill.watch('cr.dc_daily', 'cr.dc', 'at', settle => '100 years') AS added;
ALTER TABLE cr.dc DROP COLUMN at CASCADE;
ALTER TABLE cr.dc DROP COLUMN at CASCADE, ADD COLUMN at timestamptz;
INSERT INTO cr.dc (at, v) VALUES ('2026-10-27 10:00', 1);
SELECT target, chunk_start, len, rows FROM cr.logged
 WHERE target = 'cr.dc_daily'::regclass ORDER BY 1, 2;
SELECT cr.clear();
SELECT backfill.unwatch('cr.dc_daily', 'cr.dc') AS removed;
ALTER TABLE cr.dc DROP COLUMN at CASCADE;
SELECT backfill.unregister('cr.dc_daily');
DROP TABLE cr.dc_daily, cr.dc;

-- Tables that inherit from a watched table (plain INHERITS, not
-- partitions): PostgreSQL fires a table's triggers only for its own rows
-- and statements, so rows written straight into a child are not seen by
-- the parent's watch, although the target's query, reading the parent,
-- reads them.  watch names the children its target does not watch (a
-- NOTICE), and a command that makes a table inherit from a watched one
-- (CREATE TABLE ... INHERITS, ALTER TABLE ... INHERIT) gets a WARNING, with
-- the watch call that records them; the command itself succeeds.  Watched
-- as a source of the target too, a child's rows are recorded.  An UPDATE
-- or DELETE through the parent is recorded by the parent's watch, child
-- rows included.
CREATE TABLE cr.ih (at timestamptz NOT NULL, v int);
CREATE TABLE cr.ih_old () INHERITS (cr.ih);
CREATE TABLE cr.ih_daily (day date NOT NULL, n int NOT NULL);
SELECT backfill.register('cr.ih_daily', 'day',
    $$SELECT $1::date AS day, count(*)::int AS n FROM cr.ih WHERE at >= $1 AND at < $2$$);
SET client_min_messages = warning;
CALL backfill.backfill('cr.ih_daily', '2026-10-26', '2026-10-30');
RESET client_min_messages;
SELECT backfill.watch('cr.ih_daily', 'cr.ih', 'at', settle => '100 years') AS added;
CREATE TABLE cr.ih_new () INHERITS (cr.ih);
CREATE TABLE cr.ih_loose (at timestamptz NOT NULL, v int);
ALTER TABLE cr.ih_loose INHERIT cr.ih;
CREATE TABLE cr.ih_grand () INHERITS (cr.ih_new);
-- a table made to inherit brings its own children along: both are named
CREATE TABLE cr.ih_mid (at timestamptz NOT NULL, v int);
CREATE TABLE cr.ih_mid_kid () INHERITS (cr.ih_mid);
ALTER TABLE cr.ih_mid INHERIT cr.ih;
INSERT INTO cr.ih_old VALUES ('2026-10-26 10:00', 1);
INSERT INTO cr.ih_grand VALUES ('2026-10-26 11:00', 1);
SELECT target, chunk_start, len, rows FROM cr.logged
 WHERE target = 'cr.ih_daily'::regclass ORDER BY 1, 2;
UPDATE cr.ih SET v = 2 WHERE at = '2026-10-26 10:00';
SELECT target, chunk_start, len, rows FROM cr.logged
 WHERE target = 'cr.ih_daily'::regclass ORDER BY 1, 2;
SELECT cr.clear();
SELECT backfill.watch('cr.ih_daily', 'cr.ih_old', 'at', settle => '100 years') AS added;
INSERT INTO cr.ih_old VALUES ('2026-10-27 10:00', 1);
SELECT target, chunk_start, len, rows FROM cr.logged
 WHERE target = 'cr.ih_daily'::regclass ORDER BY 1, 2;
SELECT cr.clear();
SELECT backfill.watch('cr.ih_daily', 'cr.ih', 'at', settle => '100 years') AS added;
-- a table inheriting from two watched tables of one target gets one
-- WARNING; a foreign table cannot be watched, and its WARNING and NOTICE
-- say so, with a ledger as the hint
CREATE TABLE cr.ih_older () INHERITS (cr.ih_old);
CREATE FOREIGN DATA WRAPPER cr_ih_fdw;
CREATE SERVER cr_ih_server FOREIGN DATA WRAPPER cr_ih_fdw;
CREATE FOREIGN TABLE cr.ih_far () INHERITS (cr.ih) SERVER cr_ih_server;
SELECT backfill.watch('cr.ih_daily', 'cr.ih', 'at', settle => '100 years') AS added;
-- the NOTICE names the first twenty and counts the rest
CREATE TABLE cr.ihm (at timestamptz NOT NULL);
SELECT format('CREATE TABLE cr.ihm_%s () INHERITS (cr.ihm)', to_char(i, 'FM00'))
  FROM generate_series(1, 22) i \gexec
SELECT backfill.watch('cr.ih_daily', 'cr.ihm', 'at', settle => '100 years') AS added;
-- and so do the event trigger's WARNINGs: that table, unwatched again,
-- with its 22 children made to inherit from a watched table (a watched
-- table, whose statement triggers have transition tables, cannot become
-- an inheritance child on some minor releases of 16 and 17)
SELECT backfill.unwatch('cr.ih_daily', 'cr.ihm') AS removed;
CREATE TABLE cr.ihm_top (at timestamptz NOT NULL);
SELECT backfill.watch('cr.ih_daily', 'cr.ihm_top', 'at', settle => '100 years') AS added;
ALTER TABLE cr.ihm INHERIT cr.ihm_top;
SELECT backfill.unregister('cr.ih_daily');
DROP TABLE cr.ih, cr.ihm_top, cr.ih_daily CASCADE;
DROP SERVER cr_ih_server;
DROP FOREIGN DATA WRAPPER cr_ih_fdw;

-- A renamed time column of a watched partitioned source (attack review
-- 8): the WHEN clause _watch_row(source, NEW.tableoid, NEW.column) names
-- the column by NEW's, whose name the call looked up in the row's table
-- and kept.  A rename in a transaction that had loaded the watches, and
-- a rename seen by a session whose row events (a writer who may insert
-- into a partition only: its WHEN clause leaves the row to its event,
-- whose call is kept for the session) had read the name before: the rows
-- after it were silently not recorded.  They are.
CREATE TABLE cr.rn (v int, at timestamptz NOT NULL) PARTITION BY RANGE (at);
CREATE TABLE cr.rn_1 PARTITION OF cr.rn FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
CREATE TABLE cr.rn_daily (day date NOT NULL, n int NOT NULL);
SELECT backfill.register('cr.rn_daily', 'day',
    $$SELECT $1::date AS day, count(*)::int AS n FROM cr.rn WHERE at >= $1 AND at < $2$$);
SET client_min_messages = warning;
CALL backfill.backfill('cr.rn_daily', '2026-10-26', '2026-10-30');
RESET client_min_messages;
SELECT backfill.watch('cr.rn_daily', 'cr.rn', 'at', settle => '100 years') AS added;
BEGIN;
INSERT INTO cr.rn VALUES (1, '2026-10-26 10:00');
ALTER TABLE cr.rn RENAME COLUMN at TO at2;
INSERT INTO cr.rn VALUES (1, '2026-10-27 10:00');
INSERT INTO cr.rn_1 VALUES (1, '2026-10-28 10:00');
COMMIT;
SELECT target, chunk_start, len, rows FROM cr.logged
 WHERE target = 'cr.rn_daily'::regclass ORDER BY 1, 2;
SELECT cr.clear();
GRANT USAGE ON SCHEMA cr TO regress_cr_writer;
GRANT INSERT ON cr.rn_1 TO regress_cr_writer;
SET ROLE regress_cr_writer;
INSERT INTO cr.rn_1 VALUES (1, '2026-10-26 11:00');
RESET ROLE;
ALTER TABLE cr.rn RENAME COLUMN at2 TO at;
SET ROLE regress_cr_writer;
INSERT INTO cr.rn_1 VALUES (1, '2026-10-27 11:00');
RESET ROLE;
SELECT target, chunk_start, len, rows FROM cr.logged
 WHERE target = 'cr.rn_daily'::regclass ORDER BY 1, 2;
SELECT cr.clear();
REVOKE ALL ON cr.rn_1 FROM regress_cr_writer;
SELECT backfill.unregister('cr.rn_daily');
DROP TABLE cr.rn, cr.rn_daily;

-- A watch whose target was dropped without unregister stays in
-- backfill.watches (writes into its source go on); a command that makes
-- a table inherit from that source must still succeed (attack review 8:
-- the WARNING named the dropped target and failed the command, 42P01,
-- also another job's).
CREATE TABLE cr.ihd (at timestamptz NOT NULL, v int);
CREATE TABLE cr.ihd_daily (day date NOT NULL, n int NOT NULL);
SELECT backfill.register('cr.ihd_daily', 'day',
    $$SELECT $1::date AS day, count(*)::int AS n FROM cr.ihd WHERE at >= $1 AND at < $2$$);
SELECT backfill.watch('cr.ihd_daily', 'cr.ihd', 'at', settle => '100 years') AS added;
SELECT 'cr.ihd_daily'::regclass::oid AS ihd_daily_oid \gset
DROP TABLE cr.ihd_daily;
INSERT INTO cr.ihd VALUES ('2026-10-26 10:00', 1);
CREATE TABLE cr.ihd_child () INHERITS (cr.ihd);
CREATE TABLE cr.ihd_loose (at timestamptz NOT NULL, v int);
ALTER TABLE cr.ihd_loose INHERIT cr.ihd;
SELECT c.inhrelid::regclass AS child FROM pg_inherits c
 WHERE c.inhparent = 'cr.ihd'::regclass ORDER BY 1;
SELECT backfill.unregister(:'ihd_daily_oid'::oid::regclass);
DROP TABLE cr.ihd CASCADE;

-- What the memory saves: a transaction into a chunk found recorded opens
-- no index of the log (the scans of its index in the transaction, counted
-- before and after its write).  A build that consumes nothing sends no
-- invalidation, so the memory outlives it: here the first build of another
-- target, each of whose chunks moves its watermark (the attack review: each
-- sent one, and every backend read the log again).  Last in this file: the
-- builds take run ids.
CREATE TABLE cr.mem_src (ts timestamptz NOT NULL);
CREATE TABLE cr.mem_a (day timestamptz NOT NULL, n int);
CREATE TABLE cr.mem_b (LIKE cr.mem_a);
SELECT backfill.register(t, 'day', $$SELECT $1 AS day, count(*)::int AS n
    FROM cr.mem_src WHERE ts >= $1 AND ts < $2$$) AS registered
  FROM unnest('{cr.mem_a,cr.mem_b}'::regclass[]) t;
SELECT backfill.watch('cr.mem_a', 'cr.mem_src', 'ts', settle => '100 years') AS watched;
SET client_min_messages = warning;
CALL backfill.backfill('cr.mem_a', '2024-01-01', '2024-01-03');
RESET client_min_messages;
INSERT INTO cr.mem_src VALUES ('2024-01-01 07:00');
INSERT INTO cr.mem_src VALUES ('2024-01-01 08:00');
BEGIN;
SELECT pg_stat_get_xact_numscans('backfill.changed_regions_target_idx'::regclass) AS scans \gset
INSERT INTO cr.mem_src VALUES ('2024-01-01 09:00');
SELECT pg_stat_get_xact_numscans('backfill.changed_regions_target_idx'::regclass) - :scans AS looked_up;
COMMIT;
SET client_min_messages = warning;
CALL backfill.backfill('cr.mem_b', '2024-01-01', '2024-01-03');
RESET client_min_messages;
BEGIN;
SELECT pg_stat_get_xact_numscans('backfill.changed_regions_target_idx'::regclass) AS scans \gset
INSERT INTO cr.mem_src VALUES ('2024-01-01 10:00');
SELECT pg_stat_get_xact_numscans('backfill.changed_regions_target_idx'::regclass) - :scans AS looked_up;
COMMIT;
SELECT target, chunk_start, rows FROM cr.logged
 WHERE target = 'cr.mem_a'::regclass ORDER BY 1, 2;
-- A trigger backfill_recorded_signal made for an UPDATE OF some columns
-- does not fire for an UPDATE of the others: it is not taken for the
-- signal, and the rows remembered are read again.  A superuser's UPDATE
-- moves January 1's row of cr.mem_a to cr.mem_b: the next write into it is
-- recorded for cr.mem_a again.
DROP TRIGGER backfill_recorded_signal ON backfill.changed_regions;
CREATE TRIGGER backfill_recorded_signal
    AFTER UPDATE OF changed_at OR DELETE ON backfill.changed_regions
    FOR EACH ROW EXECUTE FUNCTION backfill._recorded_signal();
ALTER TABLE backfill.changed_regions ENABLE ALWAYS TRIGGER backfill_recorded_signal;
INSERT INTO cr.mem_src VALUES ('2024-01-01 11:00');
UPDATE backfill.changed_regions SET target = 'cr.mem_b'
 WHERE target = 'cr.mem_a'::regclass;
INSERT INTO cr.mem_src VALUES ('2024-01-01 12:00');
SELECT target, chunk_start, rows FROM cr.logged
 WHERE target IN ('cr.mem_a'::regclass, 'cr.mem_b'::regclass) ORDER BY 1, 2;
DROP TRIGGER backfill_recorded_signal ON backfill.changed_regions;
CREATE TRIGGER backfill_recorded_signal
    AFTER DELETE OR UPDATE ON backfill.changed_regions
    FOR EACH ROW EXECUTE FUNCTION backfill._recorded_signal();
ALTER TABLE backfill.changed_regions ENABLE ALWAYS TRIGGER backfill_recorded_signal;
-- An invalidation that comes in while the watches are read into the
-- cache (a catalog cache miss of the lookup of a time column, a zone or a
-- type opens its catalog) empties the cache being filled: the watches are
-- read into the statement's memory first, then copied.  Seen where every
-- such lookup takes in invalidations and every invalidation empties
-- everything (debug_discard_caches: a build with assertions; elsewhere
-- setting it fails, and nothing changes): the backend read freed memory.
BEGIN;
DO $$BEGIN PERFORM pg_catalog.set_config('debug_discard_caches', '1', true);
EXCEPTION WHEN OTHERS THEN NULL; END$$;
INSERT INTO cr.mem_src VALUES ('2024-01-02 07:00');
COMMIT;
SELECT target, chunk_start, rows FROM cr.logged
 WHERE target = 'cr.mem_a'::regclass AND chunk_start = '2024-01-02';
SELECT backfill.unregister(t) FROM unnest('{cr.mem_a,cr.mem_b}'::regclass[]) t;
DROP TABLE cr.mem_src, cr.mem_a, cr.mem_b;

-- Clean up.
SELECT backfill.unregister('cr.monthly');
SELECT backfill.unregister('cr.settled');
SELECT backfill.unregister('cr.quarter');
SELECT backfill.unregister('cr.daily');
DROP SCHEMA cr CASCADE;
DROP ROLE regress_cr_writer;
