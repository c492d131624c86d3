-- Partitioned targets: the truncate and swap strategies of replace_range
-- give exactly the rows a correct run gives, and keep the partitions, their
-- names, indexes, constraints, privileges and comments.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
CREATE SCHEMA pt;
CREATE ROLE pt_reader;
GRANT USAGE ON SCHEMA pt TO pt_reader;
CREATE TABLE pt.raw (id int, paid_at timestamptz, amount numeric);
INSERT INTO pt.raw
SELECT g, '2024-01-01'::timestamptz + (g % 96) * interval '1 hour' + interval '7 minutes', g
  FROM generate_series(1, 960) g;

CREATE TABLE pt.day (id int NOT NULL, paid_at timestamptz NOT NULL,
                     amount numeric CHECK (amount >= 0),
                     note text DEFAULT 'fresh',
                     PRIMARY KEY (id, paid_at))
    PARTITION BY RANGE (paid_at);
CREATE TABLE pt.day_0101 PARTITION OF pt.day FOR VALUES FROM ('2024-01-01') TO ('2024-01-02');
CREATE TABLE pt.day_0102 PARTITION OF pt.day FOR VALUES FROM ('2024-01-02') TO ('2024-01-03');
CREATE TABLE pt.day_0103 PARTITION OF pt.day FOR VALUES FROM ('2024-01-03') TO ('2024-01-04');
CREATE TABLE pt.day_0104 PARTITION OF pt.day FOR VALUES FROM ('2024-01-04') TO ('2024-01-05');
CREATE INDEX day_paid_at ON pt.day (paid_at);
CREATE INDEX day_0102_amount ON pt.day_0102 (amount) WHERE amount > 100;
ALTER TABLE pt.day_0102 ADD CONSTRAINT day_0102_small CHECK (id < 100000);
ALTER TABLE pt.day_0102 SET (fillfactor = 90);
GRANT SELECT ON pt.day TO pt_reader;
GRANT SELECT, INSERT ON pt.day_0102 TO pt_reader;
GRANT UPDATE (note) ON pt.day_0102 TO pt_reader;
COMMENT ON TABLE pt.day_0102 IS 'the second day';
COMMENT ON COLUMN pt.day_0102.note IS 'free text';

-- Everything a user can see of the table's shape (no OIDs).
CREATE FUNCTION pt.shape(t regclass) RETURNS SETOF text LANGUAGE sql AS $$
  WITH parts AS (
    SELECT c.oid, c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = t)
  SELECT 'partition ' || p.relname || ' ' || pg_get_expr(c.relpartbound, c.oid)
         || ' ' || coalesce(c.relacl::text, '-') || ' ' || coalesce(c.reloptions::text, '-')
         || ' ' || coalesce(obj_description(c.oid, 'pg_class'), '-')
    FROM parts p JOIN pg_class c ON c.oid = p.oid
  UNION ALL
  SELECT 'column ' || p.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
         || ' ' || a.attnotnull || ' ' || coalesce(a.attacl::text, '-')
         || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '-')
         || ' ' || coalesce(col_description(p.oid, a.attnum), '-')
    FROM parts p JOIN pg_attribute a ON a.attrelid = p.oid AND a.attnum > 0 AND NOT a.attisdropped
    LEFT JOIN pg_attrdef d ON d.adrelid = p.oid AND d.adnum = a.attnum
  UNION ALL
  SELECT 'index ' || p.relname || ' ' || ic.relname || ' ' || pg_get_indexdef(x.indexrelid)
         || ' attached=' || (ic.relispartition)
    FROM parts p JOIN pg_index x ON x.indrelid = p.oid JOIN pg_class ic ON ic.oid = x.indexrelid
  UNION ALL
  SELECT 'constraint ' || p.relname || ' ' || co.conname || ' ' || pg_get_constraintdef(co.oid)
         || ' inherited=' || (co.coninhcount > 0)
    FROM parts p JOIN pg_constraint co ON co.conrelid = p.oid
  ORDER BY 1
$$;

-- Which leaves a call rewrote (new files: truncate or swap), replaced by
-- another table (never: the leaves keep their OIDs) or kept.
CREATE TABLE pt.seen (relname name PRIMARY KEY, reloid oid, filenode oid);
CREATE FUNCTION pt.what_happened() RETURNS TABLE (leaf name, fate text) LANGUAGE plpgsql AS $$
BEGIN
  CREATE TEMP TABLE now ON COMMIT DROP AS
    SELECT c.relname, c.oid, pg_relation_filenode(c.oid) AS filenode
      FROM pg_class c
     WHERE c.relnamespace = 'pt'::regnamespace AND c.relkind = 'r' AND c.relispartition;
  RETURN QUERY
    SELECT n.relname, CASE WHEN s.reloid IS NULL THEN 'new'
                           WHEN s.reloid <> n.oid THEN 'new table'
                           WHEN s.filenode <> n.filenode THEN 'rewritten'
                           ELSE 'kept' END
      FROM now n LEFT JOIN pt.seen s USING (relname)
     WHERE s.reloid IS DISTINCT FROM n.oid OR s.filenode IS DISTINCT FROM n.filenode
     ORDER BY 1;
  DELETE FROM pt.seen;
  INSERT INTO pt.seen SELECT relname, oid, filenode FROM now;
  DROP TABLE now;
END
$$;

-- The rows a correct run gives: source rows inside the replaced ranges,
-- the stale rows elsewhere.
CREATE TABLE pt.replaced (lo timestamptz, hi timestamptz);
CREATE FUNCTION pt.wrong_rows() RETURNS bigint LANGUAGE sql AS $$
  WITH expected AS (
    SELECT r.id, r.paid_at, r.amount, 'fresh'::text AS note FROM pt.raw r
     WHERE EXISTS (SELECT FROM pt.replaced x WHERE r.paid_at >= x.lo AND r.paid_at < x.hi)
    UNION ALL
    SELECT r.id, r.paid_at, 0, 'stale' FROM pt.raw r
     WHERE NOT EXISTS (SELECT FROM pt.replaced x WHERE r.paid_at >= x.lo AND r.paid_at < x.hi)),
  actual AS (SELECT id, paid_at, amount, note FROM pt.day)
  SELECT (SELECT count(*) FROM (SELECT * FROM expected EXCEPT ALL SELECT * FROM actual) a)
       + (SELECT count(*) FROM (SELECT * FROM actual EXCEPT ALL SELECT * FROM expected) b)
$$;
CREATE FUNCTION pt.refill(lo timestamptz, hi timestamptz, strategy text)
RETURNS TABLE (rows_deleted bigint, rows_inserted bigint) LANGUAGE sql AS $$
  INSERT INTO pt.replaced VALUES (lo, hi);
  SELECT * FROM backfill.replace_range('pt.day', 'paid_at', lo, hi,
      'SELECT id, paid_at, amount FROM pt.raw WHERE paid_at >= $1 AND paid_at < $2',
      strategy);
$$;

INSERT INTO pt.day SELECT id, paid_at, 0, 'stale' FROM pt.raw;
CREATE TABLE pt.shape_before AS SELECT pt.shape('pt.day') AS item;
SELECT count(*) FROM pt.what_happened();

-- auto on a chunk that is exactly one partition: TRUNCATE of that leaf
SELECT * FROM pt.refill('2024-01-02', '2024-01-03', 'auto');
SELECT * FROM pt.what_happened();
SELECT pt.wrong_rows();

-- truncate over two whole partitions
SELECT * FROM pt.refill('2024-01-03', '2024-01-05', 'truncate');
SELECT * FROM pt.what_happened();
SELECT pt.wrong_rows();

-- delete: the files stay, the rows are replaced
SELECT * FROM pt.refill('2024-01-01', '2024-01-02', 'delete');
SELECT * FROM pt.what_happened();
SELECT pt.wrong_rows();

-- swap of one partition, then of two, then of the same ones again
SELECT * FROM pt.refill('2024-01-02', '2024-01-03', 'swap');
SELECT * FROM pt.what_happened();
SELECT pt.wrong_rows();
SELECT * FROM pt.refill('2024-01-01', '2024-01-03', 'swap');
SELECT * FROM pt.what_happened();
SELECT pt.wrong_rows();
SELECT * FROM pt.refill('2024-01-01', '2024-01-03', 'swap');
SELECT * FROM pt.what_happened();
SELECT pt.wrong_rows();

-- the shape of the table is what it was: no line lost, no line added
SELECT 'lost' AS what, item FROM (SELECT item FROM pt.shape_before
                                  EXCEPT SELECT pt.shape('pt.day')) l
UNION ALL
SELECT 'added', item FROM (SELECT pt.shape('pt.day') AS item
                           EXCEPT SELECT item FROM pt.shape_before) a;
SELECT count(*) AS partitions FROM pg_inherits WHERE inhparent = 'pt.day'::regclass;
-- no helper table or constraint is left behind
SELECT relname FROM pg_class WHERE relname LIKE '%backfill%' AND relnamespace = 'pt'::regnamespace;
SELECT conname FROM pg_constraint WHERE conname LIKE 'backfill%';
-- the privileges still work: pt_reader reads and writes the swapped leaf
SET ROLE pt_reader;
SELECT count(*) FROM pt.day_0102;
UPDATE pt.day_0102 SET note = note WHERE id = 1;
RESET ROLE;
-- the primary key still holds on the swapped leaves
INSERT INTO pt.day SELECT id, paid_at, 1, 'dup' FROM pt.raw WHERE paid_at < '2024-01-01 02:00' LIMIT 1;

-- an error inside a swap leaves everything as it was
SELECT * FROM backfill.replace_range('pt.day', 'paid_at', '2024-01-02', '2024-01-03',
    'SELECT id, paid_at, -1 AS amount FROM pt.raw WHERE paid_at >= $1 AND paid_at < $2', 'swap');
SELECT * FROM pt.what_happened();
SELECT pt.wrong_rows();
-- a source row outside the chunk: an error, nothing written
SELECT * FROM backfill.replace_range('pt.day', 'paid_at', '2024-01-02', '2024-01-03',
    'SELECT id, paid_at + interval ''1 day'' AS paid_at, amount FROM pt.raw WHERE paid_at >= $1 AND paid_at < $2', 'truncate');
SELECT * FROM pt.what_happened();
SELECT pt.wrong_rows();

-- the swap exchanges files, so a leaf whose rows are laid out differently
-- (a dropped column) is refused; truncate is fine
CREATE TABLE pt.day_0105 (id int NOT NULL, junk int, paid_at timestamptz NOT NULL,
                          amount numeric CONSTRAINT day_amount_check CHECK (amount >= 0),
                          note text DEFAULT 'fresh');
ALTER TABLE pt.day_0105 DROP COLUMN junk;
ALTER TABLE pt.day ATTACH PARTITION pt.day_0105 FOR VALUES FROM ('2024-01-05') TO ('2024-01-06');
SELECT count(*) FROM pt.what_happened();
SELECT * FROM backfill.replace_range('pt.day', 'paid_at', '2024-01-05', '2024-01-06',
    'SELECT 1 AS id, $1 AS paid_at, 5 AS amount', 'swap');
SELECT * FROM backfill.replace_range('pt.day', 'paid_at', '2024-01-05', '2024-01-06',
    'SELECT 1 AS id, $1 AS paid_at, 5 AS amount', 'truncate');
SELECT * FROM pt.what_happened();
SELECT * FROM pt.day_0105;

-- The partition bounds of timestamp and date keys are read in the session
-- TimeZone: local midnights are aligned, UTC midnights are not.
SET TimeZone = 'America/New_York';
CREATE TABLE pt.local_ts (t timestamp NOT NULL, v int) PARTITION BY RANGE (t);
CREATE TABLE pt.local_ts_0102 PARTITION OF pt.local_ts FOR VALUES FROM ('2024-01-02') TO ('2024-01-03');
CREATE TABLE pt.local_d (d date NOT NULL, v int) PARTITION BY RANGE (d);
CREATE TABLE pt.local_d_0102 PARTITION OF pt.local_d FOR VALUES FROM ('2024-01-02') TO ('2024-01-03');
INSERT INTO pt.local_ts VALUES ('2024-01-02 10:00', 1);
INSERT INTO pt.local_d VALUES ('2024-01-02', 1);
SELECT count(*) FROM pt.what_happened();
SELECT * FROM backfill.replace_range('pt.local_ts', 't', '2024-01-02 00:00-05', '2024-01-03 00:00-05',
    'SELECT $1::timestamp + interval ''1 hour'' AS t, 2 AS v', 'truncate');
SELECT * FROM backfill.replace_range('pt.local_d', 'd', '2024-01-02 00:00-05', '2024-01-03 00:00-05',
    'SELECT $1::date AS d, 2 AS v', 'auto');
SELECT * FROM pt.what_happened();
SELECT * FROM pt.local_ts;
SELECT * FROM pt.local_d;
-- UTC midnight is 19:00 the day before in New York: not a whole partition
SELECT * FROM backfill.replace_range('pt.local_d', 'd', '2024-01-02 00:00+00', '2024-01-03 00:00+00',
    'SELECT $1::date AS d, 3 AS v', 'truncate');
RESET TimeZone;
