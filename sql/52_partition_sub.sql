-- Sub-partitioned targets: a month partitioned by day, and days split by a
-- hash of the id.  A partition entirely inside the range is replaced with
-- all its leaves, whatever their key; a partly covered one decides by its
-- own key.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
CREATE SCHEMA ps;
CREATE TABLE ps.raw (id int, paid_at timestamptz, amount numeric);
INSERT INTO ps.raw
SELECT g, '2024-01-30'::timestamptz + (g % 96) * interval '1 hour', g
  FROM generate_series(1, 960) g;
CREATE TABLE ps.seen (relname name PRIMARY KEY, reloid oid, filenode oid);
CREATE FUNCTION ps.what_happened() RETURNS TABLE (leaf name, fate text) LANGUAGE plpgsql AS $$
BEGIN
  CREATE TEMP TABLE now ON COMMIT DROP AS
    SELECT c.relname, c.oid, pg_relation_filenode(c.oid) AS filenode
      FROM pg_class c
     WHERE c.relnamespace = 'ps'::regnamespace AND c.relkind = 'r' AND c.relispartition;
  RETURN QUERY
    SELECT n.relname, CASE WHEN s.reloid IS NULL THEN 'new'
                           WHEN s.reloid <> n.oid THEN 'new table'
                           ELSE 'rewritten' END
      FROM now n LEFT JOIN ps.seen s USING (relname)
     WHERE s.reloid IS DISTINCT FROM n.oid OR s.filenode IS DISTINCT FROM n.filenode
     ORDER BY 1;
  DELETE FROM ps.seen;
  INSERT INTO ps.seen SELECT relname, oid, filenode FROM now;
  DROP TABLE now;
END
$$;
CREATE FUNCTION ps.refill(t regclass, lo timestamptz, hi timestamptz, strategy text)
RETURNS TABLE (rows_deleted bigint, rows_inserted bigint) LANGUAGE sql AS $$
  SELECT * FROM backfill.replace_range(t, 'paid_at', lo, hi,
      'SELECT id, paid_at, amount + 1 AS amount FROM ps.raw WHERE paid_at >= $1 AND paid_at < $2',
      strategy);
$$;
-- months, January split by day (two days shown), February by day too
CREATE TABLE ps.month (id int, paid_at timestamptz NOT NULL, amount numeric)
    PARTITION BY RANGE (paid_at);
CREATE TABLE ps.jan PARTITION OF ps.month FOR VALUES FROM ('2024-01-30') TO ('2024-02-01')
    PARTITION BY RANGE (paid_at);
CREATE TABLE ps.jan_30 PARTITION OF ps.jan FOR VALUES FROM ('2024-01-30') TO ('2024-01-31');
CREATE TABLE ps.jan_31 PARTITION OF ps.jan FOR VALUES FROM ('2024-01-31') TO ('2024-02-01');
CREATE TABLE ps.feb PARTITION OF ps.month FOR VALUES FROM ('2024-02-01') TO ('2024-02-03')
    PARTITION BY RANGE (paid_at);
CREATE TABLE ps.feb_01 PARTITION OF ps.feb FOR VALUES FROM ('2024-02-01') TO ('2024-02-02');
CREATE TABLE ps.feb_02 PARTITION OF ps.feb FOR VALUES FROM ('2024-02-02') TO ('2024-02-03');
CREATE INDEX ON ps.month (paid_at);
INSERT INTO ps.month SELECT * FROM ps.raw;
SELECT count(*) FROM ps.what_happened();

-- one day inside a month: that leaf only
SELECT * FROM ps.refill('ps.month', '2024-01-31', '2024-02-01', 'auto');
SELECT * FROM ps.what_happened();
-- a whole month and a day of the next: three leaves
SELECT * FROM ps.refill('ps.month', '2024-01-30', '2024-02-02', 'truncate');
SELECT * FROM ps.what_happened();
SELECT d.tableoid::regclass, count(*), count(*) FILTER (WHERE d.amount = r.amount + 1) AS refilled
  FROM ps.raw r JOIN ps.month d USING (id, paid_at) GROUP BY 1 ORDER BY 1;
-- swap of a leaf under a sub-partitioned month keeps it in its month
SELECT * FROM ps.refill('ps.month', '2024-02-02', '2024-02-03', 'swap');
SELECT * FROM ps.what_happened();
SELECT c.relname, p.relname AS parent
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
 WHERE c.relname = 'feb_02';
SELECT count(*) FROM ps.month WHERE paid_at >= '2024-02-02';
-- half a day: delete
SELECT * FROM ps.refill('ps.month', '2024-02-01 12:00', '2024-02-02', 'auto');
SELECT * FROM ps.what_happened();

-- days split by a hash of the id
CREATE TABLE ps.hashed (id int, paid_at timestamptz NOT NULL, amount numeric)
    PARTITION BY RANGE (paid_at);
CREATE TABLE ps.h_0130 PARTITION OF ps.hashed FOR VALUES FROM ('2024-01-30') TO ('2024-01-31')
    PARTITION BY HASH (id);
CREATE TABLE ps.h_0130_a PARTITION OF ps.h_0130 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE ps.h_0130_b PARTITION OF ps.h_0130 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE TABLE ps.h_rest PARTITION OF ps.hashed FOR VALUES FROM ('2024-01-31') TO ('2024-02-03');
INSERT INTO ps.hashed SELECT * FROM ps.raw;
SELECT count(*) FROM ps.what_happened();
-- the whole day: both hash leaves are truncated
SELECT * FROM ps.refill('ps.hashed', '2024-01-30', '2024-01-31', 'auto');
SELECT * FROM ps.what_happened();
SELECT d.tableoid::regclass, count(*), count(*) FILTER (WHERE d.amount = r.amount + 1) AS refilled
  FROM ps.raw r JOIN ps.hashed d USING (id, paid_at) GROUP BY 1 ORDER BY 1;
-- a hash leaf cannot be swapped: its own bounds are not a time range
SELECT * FROM ps.refill('ps.hashed', '2024-01-30', '2024-01-31', 'swap');
-- part of the hashed day: delete, and truncate is refused
SELECT * FROM ps.refill('ps.hashed', '2024-01-30 06:00', '2024-01-31', 'auto');
SELECT * FROM ps.what_happened();
SELECT * FROM ps.refill('ps.hashed', '2024-01-30 06:00', '2024-01-31', 'truncate');

-- list partitioning on another column: never aligned
CREATE TABLE ps.listed (id int, paid_at timestamptz NOT NULL, amount numeric)
    PARTITION BY LIST ((id % 2));
CREATE TABLE ps.listed_even PARTITION OF ps.listed FOR VALUES IN (0);
CREATE TABLE ps.listed_odd PARTITION OF ps.listed FOR VALUES IN (1);
INSERT INTO ps.listed SELECT * FROM ps.raw;
SELECT count(*) FROM ps.what_happened();
SELECT * FROM backfill.replace_range('ps.listed', 'paid_at', '2024-01-30', '2024-01-31',
    'SELECT id, paid_at, amount FROM ps.raw WHERE paid_at >= $1 AND paid_at < $2', 'auto');
SELECT * FROM ps.what_happened();
SELECT * FROM backfill.replace_range('ps.listed', 'paid_at', '2024-01-30', '2024-01-31',
    'SELECT id, paid_at, amount FROM ps.raw WHERE paid_at >= $1 AND paid_at < $2', 'truncate');
