-- backfill.run on a day-partitioned target: every chunk records the
-- strategy auto picked (swap for whole days, delete for parts of days and
-- wherever a rule forbids the others), the figures are those of a delete,
-- the ledger gate works the same, and the table ends as a correct run
-- leaves it.
SET TimeZone = 'UTC';
SET DateStyle = ISO;
\set VERBOSITY terse
SELECT setval('backfill.runs_run_id_seq', 5301, false) IS NOT NULL AS seq_set;
CREATE SCHEMA prun;
CREATE TABLE prun.payments (id int, paid_at timestamptz, amount numeric);
INSERT INTO prun.payments
SELECT i, '2024-01-01'::timestamptz + (i % 96) * interval '1 hour', i % 10
  FROM generate_series(1, 960) i;
CREATE TABLE prun.ledger AS SELECT * FROM prun.payments;
CREATE TABLE prun.clean (id int NOT NULL, paid_at timestamptz NOT NULL, amount numeric)
    PARTITION BY RANGE (paid_at);
CREATE TABLE prun.clean_0101 PARTITION OF prun.clean FOR VALUES FROM ('2024-01-01') TO ('2024-01-02');
CREATE TABLE prun.clean_0102 PARTITION OF prun.clean FOR VALUES FROM ('2024-01-02') TO ('2024-01-03');
CREATE TABLE prun.clean_0103 PARTITION OF prun.clean FOR VALUES FROM ('2024-01-03') TO ('2024-01-04');
CREATE TABLE prun.clean_0104 PARTITION OF prun.clean FOR VALUES FROM ('2024-01-04') TO ('2024-01-05');
CREATE INDEX ON prun.clean (paid_at);
-- stale rows: every amount zero
INSERT INTO prun.clean SELECT id, paid_at, 0 FROM prun.payments;
SELECT backfill.register('prun.clean', 'paid_at',
    'SELECT id, paid_at, amount FROM prun.payments WHERE paid_at >= $1 AND paid_at < $2',
    ledger => 'SELECT sum(amount) FROM prun.ledger WHERE paid_at >= $1 AND paid_at < $2',
    measure => 'sum(amount)');
CREATE FUNCTION prun.chunks(run bigint) RETURNS TABLE (chunk_no int, chunk_start timestamptz,
    chunk_end timestamptz, status text, strategy text, rows_deleted bigint, rows_inserted bigint,
    before_value numeric, after_value numeric, ledger_value numeric, verdict text)
LANGUAGE sql AS $$
  SELECT chunk_no, chunk_start, chunk_end, status, strategy, rows_deleted, rows_inserted,
         before_value, after_value, ledger_value, verdict
    FROM backfill.chunks WHERE run_id = run ORDER BY chunk_no
$$;
CREATE FUNCTION prun.wrong_rows() RETURNS bigint LANGUAGE sql AS $$
  SELECT (SELECT count(*) FROM (SELECT * FROM prun.payments EXCEPT ALL SELECT * FROM prun.clean) a)
       + (SELECT count(*) FROM (SELECT * FROM prun.clean EXCEPT ALL SELECT * FROM prun.payments) b)
$$;

-- whole days: swap, with the figures a delete would give
SELECT backfill.plan('prun.clean', '2024-01-01', '2024-01-03', probe => false) AS r \gset
CALL backfill.run(:r);
SELECT * FROM prun.chunks(:r);
-- half days: delete
SELECT backfill.plan('prun.clean', '2024-01-03', '2024-01-05', '12 hours', probe => false) AS r \gset
CALL backfill.run(:r);
SELECT * FROM prun.chunks(:r);
SELECT prun.wrong_rows();
-- a second run over the same days gives the same table
SELECT backfill.plan('prun.clean', '2024-01-01', '2024-01-05', probe => false) AS r \gset
CALL backfill.run(:r);
SELECT * FROM prun.chunks(:r);
SELECT prun.wrong_rows();
SELECT count(*) AS partitions FROM pg_inherits WHERE inhparent = 'prun.clean'::regclass;

-- a trigger on one day's partition: that chunk deletes (and the trigger
-- fires for each deleted row), the other day is swapped
CREATE TABLE prun.log (n int);
CREATE FUNCTION prun.log_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO prun.log VALUES (1);
  RETURN NULL;
END
$$;
CREATE TRIGGER clean_0102_log AFTER DELETE ON prun.clean_0102
    FOR EACH ROW EXECUTE FUNCTION prun.log_row();
SELECT backfill.plan('prun.clean', '2024-01-01', '2024-01-03', probe => false) AS r \gset
CALL backfill.run(:r);
SELECT chunk_no, strategy, rows_deleted, rows_inserted FROM prun.chunks(:r);
SELECT count(*) AS trigger_calls FROM prun.log;
DROP TRIGGER clean_0102_log ON prun.clean_0102;

-- a leaf with a foreign key of its own cannot be swapped: truncate
CREATE TABLE prun.ids (id int PRIMARY KEY);
INSERT INTO prun.ids SELECT generate_series(1, 960);
ALTER TABLE prun.clean_0103 ADD FOREIGN KEY (id) REFERENCES prun.ids;
SELECT backfill.plan('prun.clean', '2024-01-03', '2024-01-05', probe => false) AS r \gset
CALL backfill.run(:r);
SELECT chunk_no, strategy, rows_deleted, rows_inserted FROM prun.chunks(:r);
SELECT prun.wrong_rows();

-- the ledger gate: a swapped chunk whose measure disagrees with the ledger
-- fails and leaves the partition as it was
UPDATE prun.ledger SET amount = amount + 1 WHERE paid_at >= '2024-01-02' AND paid_at < '2024-01-03';
SELECT pg_relation_filenode('prun.clean_0102') AS filenode \gset
SELECT backfill.plan('prun.clean', '2024-01-01', '2024-01-03', probe => false) AS r \gset
CALL backfill.run(:r);
SELECT chunk_no, status, strategy, error_sqlstate, verdict FROM backfill.chunks
 WHERE run_id = :r ORDER BY chunk_no;
SELECT pg_relation_filenode('prun.clean_0102') = :filenode AS partition_untouched;
SELECT prun.wrong_rows();
SELECT to_regclass('prun.clean_0102_backfill') IS NULL AS no_leftover;

-- backfill.set_strategy: how the target's chunks replace their rows; it
-- returns the previous strategy
UPDATE prun.ledger SET amount = amount - 1 WHERE paid_at >= '2024-01-02' AND paid_at < '2024-01-03';
SELECT backfill.cancel(:r) >= 0 AS cancelled;
SELECT backfill.set_strategy('prun.clean', 'delete');
SELECT backfill.plan('prun.clean', '2024-01-01', '2024-01-03', probe => false) AS r \gset
CALL backfill.run(:r);
SELECT chunk_no, status, strategy FROM backfill.chunks WHERE run_id = :r ORDER BY chunk_no;
-- an explicit truncate is never replaced by something else: a chunk that
-- does not cover whole partitions fails (22023) and nothing is written
SELECT backfill.set_strategy('prun.clean', 'truncate');
SELECT backfill.plan('prun.clean', '2024-01-01', '2024-01-02', '12 hours', probe => false) AS r \gset
CALL backfill.run(:r);
SELECT chunk_no, status, strategy, error_sqlstate FROM backfill.chunks
 WHERE run_id = :r ORDER BY chunk_no;
SELECT backfill.cancel(:r) >= 0 AS cancelled;
SELECT prun.wrong_rows();
SELECT backfill.set_strategy('prun.clean', 'auto');
SELECT strategy FROM backfill.targets WHERE target = 'prun.clean'::regclass;
-- errors
SELECT backfill.set_strategy('prun.clean', 'exchange');
SELECT backfill.set_strategy('prun.clean', NULL);
SELECT backfill.set_strategy('prun.ids', 'auto');
CREATE ROLE prun_reader;
GRANT USAGE ON SCHEMA prun TO prun_reader;
GRANT SELECT ON prun.clean TO prun_reader;
SET ROLE prun_reader;
SELECT backfill.set_strategy('prun.clean', 'delete');
RESET ROLE;
SELECT strategy FROM backfill.targets WHERE target = 'prun.clean'::regclass;
