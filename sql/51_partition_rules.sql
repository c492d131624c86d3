-- When auto falls back to delete, and when an explicit truncate or swap is
-- refused: unaligned chunks, tables that are not partitioned, a default
-- partition that may hold rows of the range, triggers, foreign keys
-- pointing at the target, row-level security, missing TRUNCATE privilege.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
CREATE SCHEMA pr;
CREATE TABLE pr.raw (id int, paid_at timestamptz, amount numeric);
INSERT INTO pr.raw
SELECT g, '2024-01-01'::timestamptz + (g % 48) * interval '1 hour', g
  FROM generate_series(1, 480) g;
-- fate of every leaf since the last call: rewritten (new files: truncate or
-- swap), new table (never happens: leaves keep their OIDs), kept
CREATE TABLE pr.seen (relname name PRIMARY KEY, reloid oid, filenode oid);
CREATE FUNCTION pr.what_happened() RETURNS TABLE (leaf name, fate text) LANGUAGE plpgsql AS $$
BEGIN
  CREATE TEMP TABLE now ON COMMIT DROP AS
    SELECT c.relname, c.oid, pg_relation_filenode(c.oid) AS filenode
      FROM pg_class c
     WHERE c.relnamespace = 'pr'::regnamespace AND c.relkind = 'r' AND c.relispartition;
  RETURN QUERY
    SELECT n.relname, CASE WHEN s.reloid IS NULL THEN 'new'
                           WHEN s.reloid <> n.oid THEN 'new table'
                           ELSE 'rewritten' END
      FROM now n LEFT JOIN pr.seen s USING (relname)
     WHERE s.reloid IS DISTINCT FROM n.oid OR s.filenode IS DISTINCT FROM n.filenode
     ORDER BY 1;
  DELETE FROM pr.seen;
  INSERT INTO pr.seen SELECT relname, oid, filenode FROM now;
  DROP TABLE now;
END
$$;
CREATE FUNCTION pr.refill(t regclass, lo timestamptz, hi timestamptz, strategy text)
RETURNS TABLE (rows_deleted bigint, rows_inserted bigint) LANGUAGE sql AS $$
  SELECT * FROM backfill.replace_range(t, 'paid_at', lo, hi,
      'SELECT id, paid_at, amount FROM pr.raw WHERE paid_at >= $1 AND paid_at < $2',
      strategy);
$$;

CREATE TABLE pr.day (id int, paid_at timestamptz NOT NULL, amount numeric)
    PARTITION BY RANGE (paid_at);
CREATE TABLE pr.day_0101 PARTITION OF pr.day FOR VALUES FROM ('2024-01-01') TO ('2024-01-02');
CREATE TABLE pr.day_0102 PARTITION OF pr.day FOR VALUES FROM ('2024-01-02') TO ('2024-01-03');
INSERT INTO pr.day SELECT * FROM pr.raw;
SELECT count(*) FROM pr.what_happened();

-- unaligned: half a day.  auto deletes; truncate and swap are refused.
SELECT * FROM pr.refill('pr.day', '2024-01-01 12:00', '2024-01-02', 'auto');
SELECT * FROM pr.what_happened();
SELECT * FROM pr.refill('pr.day', '2024-01-01 12:00', '2024-01-02', 'truncate');
SELECT * FROM pr.refill('pr.day', '2024-01-01', '2024-01-02 12:00', 'swap');
-- a range with no partition at all
SELECT * FROM pr.refill('pr.day', '2024-02-01', '2024-02-02', 'truncate');
SELECT * FROM pr.refill('pr.day', '2024-02-01', '2024-02-02', 'auto');
SELECT count(*) FROM pr.day;

-- a table that is not partitioned
CREATE TABLE pr.plain (id int, paid_at timestamptz, amount numeric);
SELECT * FROM pr.refill('pr.plain', '2024-01-01', '2024-01-02', 'auto');
SELECT * FROM pr.refill('pr.plain', '2024-01-01', '2024-01-02', 'truncate');
SELECT * FROM pr.refill('pr.plain', '2024-01-01', '2024-01-02', 'swap');

-- a default partition: a range the other partitions cover completely may
-- be truncated; a range with a gap may have rows in the default partition
CREATE TABLE pr.withdef (id int, paid_at timestamptz NOT NULL, amount numeric)
    PARTITION BY RANGE (paid_at);
CREATE TABLE pr.withdef_0101 PARTITION OF pr.withdef FOR VALUES FROM ('2024-01-01') TO ('2024-01-02');
CREATE TABLE pr.withdef_other PARTITION OF pr.withdef DEFAULT;
INSERT INTO pr.withdef SELECT * FROM pr.raw;
SELECT count(*) FROM pr.what_happened();
SELECT * FROM pr.refill('pr.withdef', '2024-01-01', '2024-01-02', 'auto');
SELECT * FROM pr.what_happened();
SELECT * FROM pr.refill('pr.withdef', '2024-01-02', '2024-01-03', 'auto');
SELECT * FROM pr.what_happened();
SELECT * FROM pr.refill('pr.withdef', '2024-01-01', '2024-01-03', 'truncate');
SELECT tableoid::regclass, count(*) FROM pr.withdef GROUP BY 1 ORDER BY 1;

-- a row trigger: TRUNCATE would not fire it, so auto deletes (and the
-- trigger sees every deleted row) and an explicit truncate is refused
CREATE TABLE pr.log (op text, n int);
CREATE FUNCTION pr.log_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO pr.log VALUES (TG_OP, 1);
  RETURN NULL;
END
$$;
CREATE TRIGGER day_log AFTER DELETE ON pr.day FOR EACH ROW EXECUTE FUNCTION pr.log_row();
SELECT * FROM pr.refill('pr.day', '2024-01-02', '2024-01-03', 'auto');
SELECT * FROM pr.what_happened();
SELECT op, sum(n) FROM pr.log GROUP BY op;
SELECT * FROM pr.refill('pr.day', '2024-01-02', '2024-01-03', 'truncate');
SELECT * FROM pr.refill('pr.day', '2024-01-02', '2024-01-03', 'swap');
-- a trigger on one leaf only counts too
DROP TRIGGER day_log ON pr.day;
CREATE TRIGGER leaf_log AFTER INSERT ON pr.day_0102 FOR EACH STATEMENT EXECUTE FUNCTION pr.log_row();
SELECT * FROM pr.refill('pr.day', '2024-01-02', '2024-01-03', 'truncate');
-- ...but not a trigger on a leaf the chunk does not touch
SELECT * FROM pr.refill('pr.day', '2024-01-01', '2024-01-02', 'auto');
SELECT * FROM pr.what_happened();
DROP TRIGGER leaf_log ON pr.day_0102;

-- a foreign key pointing at the target: TRUNCATE would fail or cascade
ALTER TABLE pr.day ADD PRIMARY KEY (id, paid_at);
CREATE TABLE pr.refund (id int, paid_at timestamptz,
                        FOREIGN KEY (id, paid_at) REFERENCES pr.day);
SELECT * FROM pr.refill('pr.day', '2024-01-02', '2024-01-03', 'auto');
SELECT * FROM pr.what_happened();
SELECT * FROM pr.refill('pr.day', '2024-01-02', '2024-01-03', 'truncate');
DROP TABLE pr.refund;
-- a foreign key from the target to another table is no obstacle
CREATE TABLE pr.ids (id int PRIMARY KEY);
INSERT INTO pr.ids SELECT generate_series(1, 480);
ALTER TABLE pr.day ADD FOREIGN KEY (id) REFERENCES pr.ids;
SELECT * FROM pr.refill('pr.day', '2024-01-02', '2024-01-03', 'auto');
SELECT * FROM pr.what_happened();

-- row-level security: TRUNCATE would remove rows the policies hide
ALTER TABLE pr.day_0102 ENABLE ROW LEVEL SECURITY;
SELECT * FROM pr.refill('pr.day', '2024-01-02', '2024-01-03', 'auto');
SELECT * FROM pr.what_happened();
SELECT * FROM pr.refill('pr.day', '2024-01-02', '2024-01-03', 'truncate');
ALTER TABLE pr.day_0102 DISABLE ROW LEVEL SECURITY;

-- a user who may DELETE and INSERT through the parent but not TRUNCATE the
-- leaf: auto deletes, an explicit truncate fails on the privilege
CREATE ROLE pr_writer;
GRANT USAGE ON SCHEMA pr TO pr_writer;
GRANT SELECT, INSERT, DELETE ON pr.day TO pr_writer;
GRANT SELECT ON pr.raw, pr.ids TO pr_writer;
SET ROLE pr_writer;
SELECT * FROM pr.refill('pr.day', '2024-01-02', '2024-01-03', 'auto');
SELECT * FROM pr.refill('pr.day', '2024-01-02', '2024-01-03', 'truncate');
RESET ROLE;
SELECT * FROM pr.what_happened();
GRANT TRUNCATE ON pr.day_0102 TO pr_writer;
SET ROLE pr_writer;
-- now TRUNCATE is allowed; the INSERT goes through the parent (no INSERT
-- privilege on the leaf itself)
SELECT * FROM pr.refill('pr.day', '2024-01-02', '2024-01-03', 'auto');
RESET ROLE;
SELECT * FROM pr.what_happened();
SELECT count(*), sum(amount) FROM pr.day;

-- unknown strategy
SELECT * FROM pr.refill('pr.day', '2024-01-02', '2024-01-03', 'exchange');

-- The swap fills a table made like the leaf and exchanges files: it is
-- refused for a leaf with foreign keys of its own (the new rows would not
-- be checked), with defaults unlike the target's, or when the target is
-- published for logical replication (a subscriber would not see it).
CREATE TABLE pr.fk (id int, paid_at timestamptz NOT NULL, amount numeric)
    PARTITION BY RANGE (paid_at);
CREATE TABLE pr.fk_0101 PARTITION OF pr.fk FOR VALUES FROM ('2024-01-01') TO ('2024-01-02');
ALTER TABLE pr.fk_0101 ADD FOREIGN KEY (id) REFERENCES pr.ids;
SELECT * FROM pr.refill('pr.fk', '2024-01-01', '2024-01-02', 'swap');
-- a row the foreign key rejects: truncate checks it like delete does
SELECT * FROM backfill.replace_range('pr.fk', 'paid_at', '2024-01-01', '2024-01-02',
    'SELECT 999999 AS id, $1 AS paid_at, 1 AS amount', 'truncate');
SELECT * FROM pr.refill('pr.fk', '2024-01-01', '2024-01-02', 'truncate');
SELECT count(*) FROM pr.fk;

CREATE TABLE pr.def (id int, paid_at timestamptz NOT NULL, amount numeric,
                     note text DEFAULT 'parent') PARTITION BY RANGE (paid_at);
CREATE TABLE pr.def_0101 PARTITION OF pr.def FOR VALUES FROM ('2024-01-01') TO ('2024-01-02');
ALTER TABLE pr.def_0101 ALTER COLUMN note SET DEFAULT 'leaf';
SELECT * FROM pr.refill('pr.def', '2024-01-01', '2024-01-02', 'swap');
-- truncate writes through the parent then: the parent's default applies
SELECT * FROM pr.refill('pr.def', '2024-01-01', '2024-01-02', 'truncate');
SELECT note, count(*) FROM pr.def GROUP BY note;

SET client_min_messages = error;
CREATE PUBLICATION pr_pub FOR TABLE pr.def;
RESET client_min_messages;
ALTER TABLE pr.def_0101 REPLICA IDENTITY FULL;
SELECT * FROM pr.refill('pr.def', '2024-01-01', '2024-01-02', 'truncate');
SELECT count(*) FROM pr.what_happened();
SELECT * FROM pr.refill('pr.def', '2024-01-01', '2024-01-02', 'auto');
SELECT * FROM pr.what_happened();
DROP PUBLICATION pr_pub;

-- a foreign table as a partition: never truncated or swapped (its rows
-- live elsewhere); auto deletes, which file_fdw refuses
CREATE EXTENSION file_fdw;
CREATE SERVER pr_files FOREIGN DATA WRAPPER file_fdw;
CREATE TABLE pr.remote (id int, paid_at timestamptz NOT NULL, amount numeric)
    PARTITION BY RANGE (paid_at);
CREATE FOREIGN TABLE pr.remote_0101 PARTITION OF pr.remote
    FOR VALUES FROM ('2024-01-01') TO ('2024-01-02')
    SERVER pr_files OPTIONS (filename '/dev/null', format 'csv');
SELECT * FROM pr.refill('pr.remote', '2024-01-01', '2024-01-02', 'truncate');
SELECT * FROM pr.refill('pr.remote', '2024-01-01', '2024-01-02', 'auto');
DROP TABLE pr.remote;
DROP SERVER pr_files;
DROP EXTENSION file_fdw;
