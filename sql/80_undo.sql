-- Undo (doc/undo.md): a run that keeps what it replaced can be diffed row
-- by row and reverted exactly, chunk by chunk in reverse order; a revert
-- can be reverted; reverts go last in, first out; lineage shows the range
-- back under the definition version that built the restored rows; the
-- archive can be purged, by hand or by the definition's keep_for.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
SELECT setval('backfill.runs_run_id_seq', 8001, false) IS NOT NULL AS seq_set;
CREATE SCHEMA undo;
CREATE TABLE undo.payments (id int, paid_at timestamptz, acct text, amount numeric);
INSERT INTO undo.payments
SELECT i, '2024-01-01'::timestamptz + (i % 96) * interval '1 hour',
       CASE WHEN i % 7 = 0 THEN 'test' ELSE 'acct' || (i % 3) END, i % 10
  FROM generate_series(1, 960) i;
CREATE FUNCTION undo.md5(t regclass) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
    EXECUTE format('SELECT md5(string_agg(x::text, %L ORDER BY x::text)) FROM %s x', ',', t)
       INTO r;
    RETURN r;
END $$;
CREATE FUNCTION undo.rows_in(t regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM %s', t) INTO n;
    RETURN n;
END $$;
CREATE FUNCTION undo.chunks(run bigint) RETURNS TABLE (chunk_no int, status text,
    strategy text, rows_deleted bigint, rows_inserted bigint, rows_kept bigint)
LANGUAGE sql AS $$
  SELECT c.chunk_no, c.status, c.strategy, c.rows_deleted, c.rows_inserted, k.rows_kept
    FROM backfill.chunks c
    LEFT JOIN backfill.archived_chunks k USING (run_id, chunk_no)
   WHERE c.run_id = run ORDER BY c.chunk_no
$$;

-------------------------------------------------------------------------
-- A heap target with a primary key: v1, then v2 (which turns out wrong).
-------------------------------------------------------------------------
CREATE TABLE undo.daily (day date, acct text, total numeric, n int,
                         PRIMARY KEY (day, acct));
SELECT backfill.register('undo.daily', 'day',
    $$SELECT paid_at::date AS day, acct, sum(amount) AS total, count(*)::int AS n
        FROM undo.payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1, 2$$,
    definition => 'v1', measure => 'sum(total)', keep_replaced => true) AS version;
SELECT keep_replaced, keep_for, key FROM backfill.definitions
 WHERE target = 'undo.daily'::regclass;
SELECT backfill.plan('undo.daily', '2024-01-01', '2024-01-05', probe => false) AS v1 \gset
CALL backfill.run(:v1);
SELECT * FROM undo.chunks(:v1);
SELECT undo.md5('undo.daily') AS md5_v1 \gset
SELECT backfill.register('undo.daily', 'day',
    $$SELECT paid_at::date AS day, acct, sum(amount) AS total, count(*)::int AS n
        FROM undo.payments WHERE paid_at >= $1 AND paid_at < $2
         AND acct <> 'test' AND amount > 2 GROUP BY 1, 2$$,
    definition => 'v2: excludes test accounts', measure => 'sum(total)',
    keep_replaced => true) AS version;
SELECT backfill.plan('undo.daily', '2024-01-01', '2024-01-05', probe => false) AS v2 \gset
CALL backfill.run(:v2);
SELECT * FROM undo.chunks(:v2);
SELECT undo.md5('undo.daily') AS md5_v2 \gset
-- changes() is the summary, diff the rows behind it
SELECT chunk_no, before_value, after_value, delta FROM backfill.changes(:v2);
SELECT * FROM backfill.diff(:v2, 2);
SELECT change, count(*) FROM backfill.diff(:v2) GROUP BY 1 ORDER BY 1;
SELECT range_start, range_end, definition_version, label, run_id
  FROM backfill.lineage('undo.daily');
-- last in, first out: v1 cannot be reverted while v2 stands
SELECT backfill.revert(:v1);
-- revert v2: probed like any run, in reverse order
SELECT backfill.revert(:v2) AS rv2 \gset
SELECT run_id = :rv2 AS is_revert, reverts, probe, backwards, keep_replaced, note, status
  FROM backfill.runs WHERE run_id = :rv2;
CALL backfill.run(:rv2);
SELECT * FROM undo.chunks(:rv2);
CALL backfill.run(:rv2);
SELECT undo.md5('undo.daily') = :'md5_v1' AS back_to_v1;
SELECT range_start, range_end, definition_version, label, run_id
  FROM backfill.lineage('undo.daily');
-- a revert of what is already reverted, and of a run still being reverted
SELECT backfill.revert(:v2);
-- the revert itself is reverted: v2's rows are back
SELECT backfill.revert(:rv2) AS rrv2 \gset
CALL backfill.run(:rrv2);
CALL backfill.run(:rrv2);
SELECT undo.md5('undo.daily') = :'md5_v2' AS back_to_v2;
-- v2 stands again (its revert was reverted): its diff is the same as before
SELECT change, count(*) FROM backfill.diff(:v2) GROUP BY 1 ORDER BY 1;
SELECT range_start, range_end, definition_version, label, run_id
  FROM backfill.lineage('undo.daily');
-- and that one too: v1's rows once more
SELECT backfill.revert(:rrv2) AS r3 \gset
CALL backfill.run(:r3);
CALL backfill.run(:r3);
SELECT undo.md5('undo.daily') = :'md5_v1' AS back_to_v1;
SELECT range_start, range_end, definition_version, label, run_id
  FROM backfill.lineage('undo.daily');
-- v2 and its reverts cancel out (three reverts: v2 is undone), so v1 is the
-- last run standing on the range and may be reverted now: the table was
-- empty before it
SELECT backfill.revert(:v1) AS rv1 \gset
CALL backfill.run(:rv1);
CALL backfill.run(:rv1);
SELECT count(*) AS rows_left FROM undo.daily;
SELECT count(*) AS lineage FROM backfill.lineage('undo.daily');
-- and v2 cannot be reverted any more: it is undone, and v1's revert stands
SELECT backfill.revert(:v2);

-- refusals: a run that kept nothing, an unfinished run, a bad chunk
SELECT backfill.plan('undo.daily', '2024-01-05', '2024-01-06', probe => false,
                     keep_replaced => false) AS nokeep \gset
CALL backfill.run(:nokeep);
SELECT keep_replaced FROM backfill.runs WHERE run_id = :nokeep;
SELECT backfill.revert(:nokeep);
SELECT * FROM backfill.diff(:nokeep);
SELECT backfill.plan('undo.daily', '2024-01-06', '2024-01-07') AS unfinished \gset
SELECT backfill.revert(:unfinished);
SELECT backfill.cancel(:unfinished) AS cancelled;
SELECT backfill.revert(:unfinished);
SELECT * FROM backfill.diff(:v1, 0);
SELECT * FROM backfill.diff(:v1, 99);
SELECT backfill.revert(NULL);
SELECT backfill.revert(123456789);

-------------------------------------------------------------------------
-- diff with register's key, and without any key (a multiset).
-------------------------------------------------------------------------
CREATE TABLE undo.events (day date, acct text, amount numeric);
INSERT INTO undo.events VALUES ('2024-01-01', 'a', 1), ('2024-01-01', 'a', 1),
    ('2024-01-01', 'b', 2), ('2024-01-02', 'c', 3);
CREATE TABLE undo.events_src (day date, acct text, amount numeric);
INSERT INTO undo.events_src VALUES ('2024-01-01', 'a', 1), ('2024-01-01', 'b', 5),
    ('2024-01-01', 'b', 5), ('2024-01-02', 'c', 3), ('2024-01-02', 'd', 4);
SELECT backfill.register('undo.events', 'day',
    'SELECT day, acct, amount FROM undo.events_src WHERE day >= $1 AND day < $2',
    keep_replaced => true) AS version;
SELECT backfill.plan('undo.events', '2024-01-01', '2024-01-03', probe => false) AS e1 \gset
CALL backfill.run(:e1);
-- no primary key, no key: rows compared as a multiset, one line per copy
SELECT * FROM backfill.diff(:e1);
SELECT backfill.revert(:e1) AS re1 \gset
CALL backfill.run(:re1);
CALL backfill.run(:re1);
SELECT * FROM undo.events ORDER BY 1, 2, 3;
-- with a key
SELECT backfill.register('undo.events', 'day',
    'SELECT day, acct, amount FROM undo.events_src WHERE day >= $1 AND day < $2',
    keep_replaced => true, key => '{day,acct}') AS version;
DELETE FROM undo.events_src WHERE acct = 'b' AND ctid = (SELECT min(ctid) FROM undo.events_src WHERE acct = 'b');
DELETE FROM undo.events WHERE acct = 'a' AND ctid = (SELECT min(ctid) FROM undo.events WHERE acct = 'a');
SELECT backfill.plan('undo.events', '2024-01-01', '2024-01-03', probe => false) AS e2 \gset
CALL backfill.run(:e2);
SELECT * FROM backfill.diff(:e2);
-- bad keys and keeping settings
SELECT backfill.register('undo.events', 'day', 'SELECT day, acct, amount FROM undo.events_src WHERE day >= $1 AND day < $2',
    keep_replaced => true, key => '{day,nope}');
SELECT backfill.register('undo.events', 'day', 'SELECT day, acct, amount FROM undo.events_src WHERE day >= $1 AND day < $2',
    keep_replaced => true, key => '{day,day}');
SELECT backfill.register('undo.events', 'day', 'SELECT day, acct, amount FROM undo.events_src WHERE day >= $1 AND day < $2',
    keep_replaced => true, key => '{}');
SELECT backfill.register('undo.events', 'day', 'SELECT day, acct, amount FROM undo.events_src WHERE day >= $1 AND day < $2',
    keep_for => '1 day');
SELECT backfill.register('undo.events', 'day', 'SELECT day, acct, amount FROM undo.events_src WHERE day >= $1 AND day < $2',
    keep_replaced => true, keep_for => '-1 day');
SELECT backfill.register('undo.events', 'day', 'SELECT day, acct, amount FROM undo.events_src WHERE day >= $1 AND day < $2',
    keep_replaced => NULL);
SELECT max(version) AS versions FROM backfill.definitions WHERE target = 'undo.events'::regclass;

-------------------------------------------------------------------------
-- Day-partitioned targets under each strategy: delete keeps the deleted
-- rows; truncate and swap keep each replaced leaf's own files (no row is
-- copied: the kept table has the leaf's old relfilenode), and revert
-- exchanges them back: the same rows, the same partitions with the same
-- OIDs, owners, grants and indexes, and the leaves' old files.
-------------------------------------------------------------------------
CREATE TABLE undo.part (id int NOT NULL, paid_at timestamptz NOT NULL, amount numeric)
    PARTITION BY RANGE (paid_at);
CREATE TABLE undo.part_0101 PARTITION OF undo.part FOR VALUES FROM ('2024-01-01') TO ('2024-01-02');
CREATE TABLE undo.part_0102 PARTITION OF undo.part FOR VALUES FROM ('2024-01-02') TO ('2024-01-03');
CREATE TABLE undo.part_0103 PARTITION OF undo.part FOR VALUES FROM ('2024-01-03') TO ('2024-01-04');
INSERT INTO undo.part SELECT id, paid_at, 0 FROM undo.payments WHERE paid_at < '2024-01-04';
SELECT backfill.register('undo.part', 'paid_at',
    'SELECT id, paid_at, amount FROM undo.payments WHERE paid_at >= $1 AND paid_at < $2',
    keep_replaced => true) AS version;
CREATE INDEX ON undo.part (id);
CREATE INDEX part_0102_amount ON undo.part_0102 (amount);
GRANT SELECT ON undo.part_0101 TO PUBLIC;
CREATE FUNCTION undo.layout() RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(c.relname || ':' || c.oid::text || ':' || pg_get_expr(c.relpartbound, c.oid)
                    || ':' || c.relowner::regrole || ':' || coalesce(c.relacl::text, '')
                    || ':' || (SELECT string_agg(x.indexrelid::regclass::text, ',' ORDER BY 1)
                                 FROM pg_index x WHERE x.indrelid = c.oid),
                    ' ' ORDER BY c.relname)
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
   WHERE i.inhparent = 'undo.part'::regclass
$$;
-- the leaves' files, and the files the run's kept leaves hold
CREATE FUNCTION undo.files() RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(c.relname || ':' || pg_relation_filenode(c.oid), ' ' ORDER BY c.relname)
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
   WHERE i.inhparent = 'undo.part'::regclass
$$;
CREATE FUNCTION undo.kept_files(run bigint) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(c.relname || ':' || pg_relation_filenode(l.kept), ' ' ORDER BY c.relname)
    FROM backfill.archived_leaves l JOIN pg_class c ON c.oid = l.leaf
   WHERE l.run_id = run
$$;
CREATE FUNCTION undo.archived_rows(run bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM %s WHERE _backfill_run = $1',
                   (SELECT archive FROM backfill.archives WHERE target = 'undo.part'::regclass))
       INTO n USING run;
    RETURN n;
END $$;
SELECT undo.layout() AS layout \gset
SELECT s AS strategy, backfill.set_strategy('undo.part', s) IS NOT NULL AS set
  FROM (VALUES ('delete')) v(s);
SELECT undo.md5('undo.part') AS before \gset
SELECT backfill.plan('undo.part', '2024-01-01', '2024-01-04', probe => false) AS p \gset
CALL backfill.run(:p);
SELECT * FROM undo.chunks(:p);
SELECT backfill.revert(:p) AS rp \gset
CALL backfill.run(:rp);
CALL backfill.run(:rp);
SELECT undo.md5('undo.part') = :'before' AS same_rows, undo.layout() = :'layout' AS same_layout;
SELECT backfill.set_strategy('undo.part', 'truncate') AS previous;
SELECT undo.files() AS files \gset
SELECT backfill.plan('undo.part', '2024-01-01', '2024-01-04', probe => false) AS p \gset
CALL backfill.run(:p);
SELECT * FROM undo.chunks(:p);
SELECT undo.kept_files(:p) = :'files' AS kept_the_old_files,
       undo.files() <> :'files' AS leaves_have_new_files,
       undo.archived_rows(:p) AS rows_copied, undo.layout() = :'layout' AS same_layout;
SELECT c.relname LIKE 'l\_%' AS kept_leaf_named, c.relowner = (SELECT extowner FROM pg_extension WHERE extname = 'backfill') AS owned_by_extension,
       c.relacl IS NULL AS no_grants, NOT c.relhasindex AS no_index, NOT c.relhastriggers AS no_trigger
  FROM backfill.archived_leaves l JOIN pg_class c ON c.oid = l.kept
 WHERE l.run_id = :p ORDER BY l.leaf::text LIMIT 1;
SELECT count(*) AS kept_leaves FROM backfill.archived_leaves WHERE run_id = :p;
SELECT backfill.revert(:p) AS rp \gset
CALL backfill.run(:rp);
CALL backfill.run(:rp);
SELECT * FROM undo.chunks(:rp);
SELECT undo.md5('undo.part') = :'before' AS same_rows, undo.layout() = :'layout' AS same_layout,
       undo.files() = :'files' AS old_files_back;
SELECT backfill.set_strategy('undo.part', 'swap') AS previous;
SELECT undo.files() AS files \gset
SELECT backfill.plan('undo.part', '2024-01-01', '2024-01-04', probe => false) AS p \gset
CALL backfill.run(:p);
SELECT * FROM undo.chunks(:p);
SELECT undo.kept_files(:p) = :'files' AS kept_the_old_files,
       undo.archived_rows(:p) AS rows_copied, undo.layout() = :'layout' AS same_layout;
SELECT undo.md5('undo.part') AS after_run \gset
-- diff reads the kept leaves (no key: a multiset; every row's amount moved)
SELECT change, count(*) FROM backfill.diff(:p) GROUP BY 1 ORDER BY 1;
SELECT change, count(*) FROM backfill.diff(:p, 2) GROUP BY 1 ORDER BY 1;
SELECT backfill.revert(:p) AS rp \gset
CALL backfill.run(:rp);
CALL backfill.run(:rp);
SELECT * FROM undo.chunks(:rp);
SELECT undo.md5('undo.part') = :'before' AS same_rows, undo.layout() = :'layout' AS same_layout,
       undo.files() = :'files' AS old_files_back;
-- the revert kept what it replaced in the same kept tables: its revert
-- brings the run's rows back, and reverting that gives the start again
SELECT backfill.revert(:rp) AS rrp \gset
CALL backfill.run(:rrp);
CALL backfill.run(:rrp);
SELECT undo.md5('undo.part') = :'after_run' AS run_rows_back, undo.layout() = :'layout' AS same_layout;
SELECT backfill.revert(:rrp) AS rrrp \gset
CALL backfill.run(:rrrp);
CALL backfill.run(:rrrp);
SELECT undo.md5('undo.part') = :'before' AS same_rows, undo.files() = :'files' AS old_files_back;
-- without keeping, swap still swaps
SELECT backfill.plan('undo.part', '2024-01-01', '2024-01-02', probe => false,
                     keep_replaced => false) AS p \gset
CALL backfill.run(:p);
SELECT * FROM undo.chunks(:p);
-- a partition whose columns or constraints changed since cannot take its
-- kept files back as they are: the revert puts its rows back with an
-- INSERT instead (strategy delete), which checks them; a row the new
-- constraint refuses fails the chunk, and nothing is put back
SELECT undo.md5('undo.part') AS before_pc \gset
SELECT backfill.plan('undo.part', '2024-01-03', '2024-01-04', probe => false) AS pc \gset
CALL backfill.run(:pc);
ALTER TABLE undo.part ADD COLUMN note text;
SELECT backfill.revert(:pc) AS rpc \gset
CALL backfill.run(:rpc);
SELECT status, strategy, rows_deleted, rows_inserted FROM backfill.chunks WHERE run_id = :rpc;
ALTER TABLE undo.part DROP COLUMN note;
SELECT undo.md5('undo.part') = :'before_pc' AS same_rows;
SELECT backfill.plan('undo.part', '2024-01-03', '2024-01-04', probe => false) AS pd \gset
CALL backfill.run(:pd);
ALTER TABLE undo.part ADD CONSTRAINT small CHECK (amount < 0) NOT VALID;
SELECT backfill.revert(:pd) AS rpd \gset
CALL backfill.run(:rpd);
SELECT status, error_sqlstate FROM backfill.chunks WHERE run_id = :rpd;
SELECT backfill.cancel(:rpd) IS NOT NULL AS cancelled;
ALTER TABLE undo.part DROP CONSTRAINT small;

-------------------------------------------------------------------------
-- The retention story: the source lost its raw data before a horizon; a
-- run with clear_no_source cleared those days (their numbers were
-- placeholders... or so it seemed), and revert brings the old values back.
-------------------------------------------------------------------------
CREATE TABLE undo.raw (paid_at timestamptz, amount numeric);
INSERT INTO undo.raw SELECT paid_at, amount FROM undo.payments WHERE paid_at >= '2024-01-03';
CREATE TABLE undo.totals (day date PRIMARY KEY, total numeric);
INSERT INTO undo.totals SELECT paid_at::date, sum(amount) FROM undo.payments GROUP BY 1;
SELECT undo.md5('undo.totals') AS before \gset
SELECT backfill.register('undo.totals', 'day',
    'SELECT paid_at::date AS day, sum(amount) AS total FROM undo.raw WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1',
    source_horizon => $$SELECT '2024-01-03'::timestamptz$$, keep_replaced => true) AS version;
SELECT backfill.plan('undo.totals', '2024-01-01', '2024-01-05', probe => false,
                     clear_no_source => true) AS t \gset
CALL backfill.run(:t);
SELECT * FROM undo.chunks(:t);
SELECT * FROM undo.totals ORDER BY 1;
SELECT * FROM backfill.diff(:t);
SELECT backfill.revert(:t) AS rt \gset
CALL backfill.run(:rt);
CALL backfill.run(:rt);
SELECT undo.md5('undo.totals') = :'before' AS old_values_back;
SELECT * FROM undo.totals ORDER BY 1;

-------------------------------------------------------------------------
-- Disk used, and purging: by age, by the definition's keep_for.
-------------------------------------------------------------------------
SELECT target, archive::text LIKE 'backfill_archive.t_%' AS in_archive_schema,
       chunks_kept, rows_kept, bytes > 0 AS uses_disk
  FROM backfill.archive_usage WHERE target::text LIKE 'undo.%' ORDER BY target::text;
SELECT backfill.purge_archive(older_than => '1 day') AS purged_none;
SELECT backfill.purge_archive('undo.totals', '0 seconds') AS purged;
SELECT count(*) AS left_in_archive FROM backfill.archived_chunks
 WHERE target = 'undo.totals'::regclass AND purged_at IS NULL;
-- every chunk purged: the archive table is dropped (its owner owns nothing
-- more of the extension's), the chunks name none
SELECT count(*) AS archive_tables FROM backfill.archives
 WHERE target = 'undo.totals'::regclass;
SELECT count(*) AS naming_a_table FROM backfill.archived_chunks
 WHERE target = 'undo.totals'::regclass AND archive IS NOT NULL;
SELECT backfill.revert(:rt);
SELECT * FROM backfill.diff(:rt);
SELECT backfill.register('undo.events', 'day',
    'SELECT day, acct, amount FROM undo.events_src WHERE day >= $1 AND day < $2',
    keep_replaced => true, key => '{day,acct}', keep_for => '1 millisecond') AS version;
SELECT backfill.plan('undo.events', '2024-01-01', '2024-01-03', probe => false) AS e3 \gset
CALL backfill.run(:e3);
SELECT keep_until - kept_at AS kept_for FROM backfill.archived_chunks WHERE run_id = :e3 ORDER BY chunk_no;
SELECT pg_sleep(0.01);
SELECT backfill.purge_archive() AS expired;
SELECT backfill.revert(:e3);
SELECT chunks_kept FROM backfill.archive_usage WHERE target = 'undo.events'::regclass;
-- purging a partitioned target drops the kept tables no chunk records any more
SELECT count(DISTINCT kept) AS kept_tables FROM backfill.archived_leaves
 WHERE target = 'undo.part'::regclass;
SELECT backfill.purge_archive('undo.part', '0 seconds') > 0 AS purged;
SELECT count(*) AS kept_leaves_left FROM backfill.archived_leaves
 WHERE target = 'undo.part'::regclass;
SELECT count(*) AS kept_tables_left FROM pg_class
 WHERE relnamespace = 'backfill_archive'::regnamespace AND relname LIKE 'l\_%';

-------------------------------------------------------------------------
-- A keeping chunk writes the archive from C in batches, as COPY does:
-- every replaced row is kept exactly (NULLs, a domain's value, a long
-- value, chunks of more rows than a batch); the archive's BRIN index is
-- kept up to date (a summarized block range is widened by the next
-- chunk's rows, or an index scan would miss them); and a column whose
-- type changed since the archive was made is still kept, through the
-- INSERT's assignment cast.
-------------------------------------------------------------------------
CREATE DOMAIN undo.pos AS numeric CHECK (VALUE >= 0);
CREATE TABLE undo.wide (id int, at timestamptz, amount undo.pos, note text, big text);
CREATE TABLE undo.wide_src (LIKE undo.wide);
INSERT INTO undo.wide_src
SELECT i, '2024-01-01'::timestamptz + (i % 48) * interval '1 hour', i % 13,
       CASE WHEN i % 5 <> 0 THEN 'n' || i END,
       CASE WHEN i % 1000 = 7 THEN repeat(md5(i::text), 4000) END
  FROM generate_series(1, 2500) i;
SELECT backfill.register('undo.wide', 'at',
    'SELECT * FROM undo.wide_src WHERE at >= $1 AND at < $2',
    keep_replaced => true, key => '{id}') AS version;
SELECT backfill.plan('undo.wide', '2024-01-01', '2024-01-03', probe => false) AS w1 \gset
CALL backfill.run(:w1);
SELECT undo.md5('undo.wide') AS wide_v1 \gset
UPDATE undo.wide_src SET amount = amount + 1 WHERE id % 2 = 0;
SELECT backfill.plan('undo.wide', '2024-01-01', '2024-01-03', probe => false) AS w2 \gset
CALL backfill.run(:w2);
SELECT archive AS wide_archive FROM backfill.archives
 WHERE target = 'undo.wide'::regclass \gset
SELECT chunk_no, rows_deleted, rows_kept FROM undo.chunks(:w2);
SELECT md5(string_agg(x::text, ',' ORDER BY x::text)) = :'wide_v1' AS kept_exactly
  FROM (SELECT id, at, amount, note, big FROM :wide_archive
         WHERE _backfill_run = :w2) x;
SELECT count(*) FILTER (WHERE big IS NOT NULL) AS long_values,
       count(*) FILTER (WHERE note IS NULL) AS null_notes
  FROM :wide_archive WHERE _backfill_run = :w2;
-- The BRIN index was built on the empty archive, so its first block range
-- has held a summary from the start: an index scan finds a chunk's rows
-- only if the write widened it.
SELECT backfill.plan('undo.wide', '2024-01-01', '2024-01-02', probe => false) AS w3 \gset
CALL backfill.run(:w3);
SET enable_seqscan = off;
SELECT count(*) AS found_by_brin FROM :wide_archive WHERE _backfill_run = :w3;
SELECT count(*) AS found_by_brin FROM :wide_archive WHERE _backfill_run = :w2;
RESET enable_seqscan;
SELECT count(*) AS found_by_seqscan FROM :wide_archive WHERE _backfill_run = :w3;
-- the target's column type changes: the next keeping chunk makes a new
-- archive table, of the new type (the first keeps its rows as they were;
-- no row is converted to be kept), and a revert puts them back exactly
ALTER TABLE undo.wide ALTER COLUMN id TYPE bigint;
ALTER TABLE undo.wide_src ALTER COLUMN id TYPE bigint;
SELECT undo.md5('undo.wide') AS wide_v3 \gset
SELECT backfill.plan('undo.wide', '2024-01-01', '2024-01-03', probe => false) AS w4 \gset
CALL backfill.run(:w4);
SELECT chunk_no, rows_deleted, rows_kept FROM undo.chunks(:w4);
SELECT DISTINCT archive AS wide_archive2 FROM backfill.archived_chunks
 WHERE run_id = :w4 \gset
SELECT count(*) AS wide_archives, :'wide_archive2' <> :'wide_archive' AS new_table,
       (SELECT format_type(atttypid, atttypmod) FROM pg_attribute
         WHERE attrelid = :'wide_archive2'::regclass AND attname = 'id') AS new_id_type,
       (SELECT format_type(atttypid, atttypmod) FROM pg_attribute
         WHERE attrelid = :'wide_archive'::regclass AND attname = 'id') AS old_id_type
  FROM backfill.archives WHERE target = 'undo.wide'::regclass;
SELECT md5(string_agg(x::text, ',' ORDER BY x::text)) = :'wide_v3' AS kept_exactly
  FROM (SELECT id, at, amount, note, big FROM :wide_archive2
         WHERE _backfill_run = :w4) x;
SELECT backfill.revert(:w4) AS w5 \gset
CALL backfill.run(:w5);
CALL backfill.run(:w5);
SELECT undo.md5('undo.wide') = :'wide_v3' AS reverted_exactly;

-------------------------------------------------------------------------
-- The archive belongs to the target's owner.  A DROP TYPE ... CASCADE of a
-- kept column's type drops that column from the archive too: revert and
-- diff then refuse (the kept values are gone) instead of putting back
-- NULLs; the failed revert chunk's way on is to run it again (or cancel
-- it), never a replan.  Purged whole, the archive table is dropped, so its
-- owner can be dropped.
-------------------------------------------------------------------------
CREATE ROLE regress_undo_grader;
CREATE TYPE undo.grade AS ENUM ('a', 'b');
CREATE TABLE undo.graded (day date NOT NULL, id int PRIMARY KEY, g undo.grade);
ALTER TABLE undo.graded OWNER TO regress_undo_grader;
CREATE TABLE undo.graded_src (day date, id int, g undo.grade);
INSERT INTO undo.graded_src VALUES ('2024-02-01', 1, 'a'), ('2024-02-01', 2, 'b');
SELECT backfill.register('undo.graded', 'day',
    'SELECT day, id, g FROM undo.graded_src WHERE day >= $1 AND day < $2',
    keep_replaced => true) AS version;
SELECT backfill.plan('undo.graded', '2024-02-01', '2024-02-02', probe => false) AS g1 \gset
CALL backfill.run(:g1);
SELECT backfill.plan('undo.graded', '2024-02-01', '2024-02-02', probe => false) AS g2 \gset
CALL backfill.run(:g2);
SELECT c.relowner::regrole AS archive_owner FROM backfill.archived_chunks k
  JOIN pg_class c ON c.oid = k.archive WHERE k.run_id = :g2;
ALTER TABLE undo.graded ALTER COLUMN g TYPE text;
ALTER TABLE undo.graded_src ALTER COLUMN g TYPE text;
DROP TYPE undo.grade;
SET client_min_messages = warning;
DROP TYPE undo.grade CASCADE;
RESET client_min_messages;
SELECT count(*) FROM backfill.diff(:g2);
SELECT backfill.revert(:g2) AS g3 \gset
CALL backfill.run(:g3);
SELECT error_sqlstate, error_cause, next_step = 'CALL backfill.run(' || :g3 || ')' AS run_again
  FROM backfill.chunks WHERE run_id = :g3 AND status = 'failed';
SELECT backfill.replan(:g3);
SELECT backfill.cancel(:g3) AS cancelled;
SELECT backfill.purge_archive('undo.graded', '0 seconds') AS purged;
SELECT count(*) AS archive_tables FROM backfill.archives
 WHERE target = 'undo.graded'::regclass;
SELECT backfill.unregister('undo.graded');
ALTER TABLE undo.graded OWNER TO CURRENT_USER;
DROP ROLE regress_undo_grader;

-- Clean up.
SET client_min_messages = warning;
SELECT backfill.unregister(t) FROM unnest('{undo.daily,undo.events,undo.part,undo.totals,undo.wide}'::regclass[]) t;
DROP SCHEMA undo CASCADE;
RESET client_min_messages;
