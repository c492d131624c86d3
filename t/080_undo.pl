# Undo across crashes and dumps (doc/undo.md):
#   - a revert run killed (kill -9) in the middle of a chunk leaves that
#     chunk pending and its range as it was, keeps nothing twice, and
#     resumes to exactly the table before the reverted run;
#   - the same for a day-partitioned target replaced by swap, whose chunks
#     keep the replaced leaves' files (kept leaves): the interrupted chunk's
#     leaf keeps its files, the resumed revert gives the leaves their old
#     files back;
#   - the archive (its tables, kept leaves and the catalog rows that
#     describe them) survives pg_dump and pg_restore into another cluster,
#     its tables still owned by their targets' owner (a role that is not
#     the extension's owner, restored first): the restored database diffs
#     the same rows and reverts the revert exactly.
#
# A revert chunk is paused mid-transaction deterministically: a trigger on
# the target calls gate(), which waits on an advisory lock held by another
# session, when the revert puts the kept rows back.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = backfill_node('undo', conf => "restart_after_crash = on\n");
my $db = 'postgres';
$node->safe_psql($db, gate_sql() . q{
CREATE ROLE undo_owner;
-- the leaves' index expression runs as their owner: gate() reads gate_day as its own
ALTER FUNCTION gate(timestamptz) SECURITY DEFINER SET search_path = public, pg_temp;
CREATE TABLE src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO src SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '3 hours', i
  FROM generate_series(0, 47) i;
CREATE TABLE tgt (ts timestamptz NOT NULL, v int NOT NULL);
CREATE FUNCTION tgt_gate() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN PERFORM public.gate(NEW.ts); RETURN NEW; END$$;
CREATE TRIGGER tgt_gate BEFORE INSERT ON tgt FOR EACH ROW EXECUTE FUNCTION tgt_gate();
ALTER TABLE tgt OWNER TO undo_owner;
SET client_min_messages = warning;
SELECT backfill.register('tgt', 'ts',
    'SELECT ts, v FROM public.src WHERE ts >= $1 AND ts < $2',
    definition => 'v1', keep_replaced => true);
CALL backfill.backfill('tgt', '2024-01-01 00:00+00', '2024-01-07 00:00+00');
CREATE TABLE tgt_v1 AS SELECT * FROM tgt;
SELECT backfill.register('tgt', 'ts',
    'SELECT ts, v * 10 AS v FROM public.src WHERE ts >= $1 AND ts < $2 AND v % 4 <> 0',
    definition => 'v2', keep_replaced => true);
CALL backfill.backfill('tgt', '2024-01-01 00:00+00', '2024-01-07 00:00+00');
CREATE TABLE tgt_v2 AS SELECT * FROM tgt;
});
my $run2 = $node->safe_psql($db, 'SELECT max(run_id) FROM backfill.runs');
my $diff2 = $node->safe_psql($db, "SELECT count(*), md5(string_agg(d::text, '|')) FROM backfill.diff($run2) d");
like($diff2, qr/^(\d+)\|/, 'the v2 run has a diff');
cmp_ok((split /\|/, $diff2)[0], '>', 0, 'v2 changed rows');

# --- kill -9 in the middle of a revert chunk. ---------------------------
my $revert = $node->safe_psql($db, "SELECT backfill.revert($run2)");
$node->safe_psql($db, "SET client_min_messages = warning; CALL backfill.run($revert)");
is( $node->safe_psql($db, qq{
SELECT string_agg(chunk_no || ':' || status, ',' ORDER BY chunk_no) FROM backfill.chunks WHERE run_id = $revert}),
	'1:pending,2:pending,3:pending,4:pending,5:pending,6:done',
	'the revert run is probed on its last chunk (reverse order)');
my ($gate, $runner, $pid);
($gate, $runner, $pid) = start_gated($node, $db, "CALL backfill.run($revert)",
	'2024-01-03 00:00+00', 'the revert waits at the gate in chunk 3');
crash_restart($node, $db, $pid, '', $runner, $gate);

is( $node->safe_psql($db, qq{
SELECT string_agg(chunk_no || ':' || status, ',' ORDER BY chunk_no) FROM backfill.chunks WHERE run_id = $revert}),
	'1:pending,2:pending,3:pending,4:done,5:done,6:done',
	'after the crash: chunks 4 to 6 are done, chunk 3 is pending');
is(table_diff($node, $db, 'tgt', 'tgt_v2',
		"ts >= '2024-01-01 00:00+00' AND ts < '2024-01-04 00:00+00'"),
	'0', 'chunks 1 to 3 hold v2\'s rows: the interrupted chunk is not half-reverted');
is(table_diff($node, $db, 'tgt', 'tgt_v1', "ts >= '2024-01-04 00:00+00'"),
	'0', 'chunks 4 to 6 hold v1\'s rows again');
is( $node->safe_psql($db, qq{
SELECT count(*) FROM backfill.archived_chunks WHERE run_id = $revert}),
	'3', 'the revert kept what it replaced for its three done chunks only');

$node->safe_psql($db, 'TRUNCATE gate_day');
$node->safe_psql($db, "SET client_min_messages = warning; CALL backfill.run($revert)");
is($node->safe_psql($db, "SELECT status FROM backfill.runs WHERE run_id = $revert"),
	'done', 'the resumed revert is done');
is(table_diff($node, $db, 'tgt', 'tgt_v1'), '0',
	'after resuming, the table is exactly what it was before the v2 run');
is( $node->safe_psql($db, qq{
SELECT string_agg(chunk_no || ':' || attempts, ',' ORDER BY chunk_no) FROM backfill.chunks WHERE run_id = $revert}),
	'1:1,2:1,3:1,4:1,5:1,6:1', 'each revert chunk was applied once');
is( $node->safe_psql($db, qq{
SELECT string_agg(label, ',') FROM backfill.lineage('tgt')}),
	'v1', 'lineage shows the range under v1 again');

# --- kept leaves: kill -9 in the middle of a revert chunk. ---------------
# The revert of a kept leaf copies no row: it is paused in the rebuild of
# the leaf's indexes, whose expression calls gate().
$node->safe_psql($db, q{
CREATE FUNCTION gate_i(t timestamptz) RETURNS bool LANGUAGE sql IMMUTABLE
    AS 'SELECT public.gate(t)';
CREATE TABLE ptgt (ts timestamptz NOT NULL, v int NOT NULL) PARTITION BY RANGE (ts);
DO $$
BEGIN
    FOR i IN 0..5 LOOP
        EXECUTE format('CREATE TABLE ptgt_%s PARTITION OF ptgt FOR VALUES FROM (%L) TO (%L)', i,
                       '2024-01-01 00:00+00'::timestamptz + i * interval '1 day',
                       '2024-01-01 00:00+00'::timestamptz + (i + 1) * interval '1 day');
    END LOOP;
END $$;
CREATE INDEX ptgt_gate ON ptgt (gate_i(ts));
ALTER TABLE ptgt OWNER TO undo_owner;
DO $$
BEGIN
    FOR i IN 0..5 LOOP
        EXECUTE format('ALTER TABLE ptgt_%s OWNER TO undo_owner', i);
    END LOOP;
END $$;
SET client_min_messages = warning;
SELECT backfill.register('ptgt', 'ts',
    'SELECT ts, v FROM public.src WHERE ts >= $1 AND ts < $2',
    definition => 'v1', keep_replaced => true);
SELECT backfill.set_strategy('ptgt', 'swap');
CALL backfill.backfill('ptgt', '2024-01-01 00:00+00', '2024-01-07 00:00+00');
CREATE TABLE ptgt_v1 AS SELECT * FROM ptgt;
CREATE TABLE ptgt_files_v1 AS
    SELECT c.relname, pg_relation_filenode(c.oid) AS filenode
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'ptgt'::regclass;
SELECT backfill.register('ptgt', 'ts',
    'SELECT ts, v * 10 AS v FROM public.src WHERE ts >= $1 AND ts < $2 AND v % 4 <> 0',
    definition => 'v2', keep_replaced => true);
CALL backfill.backfill('ptgt', '2024-01-01 00:00+00', '2024-01-07 00:00+00');
CREATE TABLE ptgt_v2 AS SELECT * FROM ptgt;
});
my $prun2 = $node->safe_psql($db,
	"SELECT max(run_id) FROM backfill.runs WHERE target = 'ptgt'::regclass");
is( $node->safe_psql($db, qq{
SELECT string_agg(DISTINCT strategy, ',') || ' ' || (SELECT count(*) FROM backfill.archived_leaves
                                                      WHERE run_id = $prun2)
  FROM backfill.chunks WHERE run_id = $prun2}),
	'swap 6', 'the v2 run swapped and kept its six leaves');
my $pdiff2 = $node->safe_psql($db,
	"SELECT count(*), md5(string_agg(d::text, '|')) FROM backfill.diff($prun2) d");
my $leaf2 = $node->safe_psql($db, "SELECT pg_relation_filenode('ptgt_2')");
my $prevert = $node->safe_psql($db, "SELECT backfill.revert($prun2)");
$node->safe_psql($db, "SET client_min_messages = warning; CALL backfill.run($prevert)");
($gate, $runner, $pid) = start_gated($node, $db, "CALL backfill.run($prevert)",
	'2024-01-03 00:00+00', 'the kept-leaf revert waits at the gate in chunk 3');
crash_restart($node, $db, $pid, 'kept leaves: ', $runner, $gate);
is( $node->safe_psql($db, qq{
SELECT string_agg(chunk_no || ':' || status, ',' ORDER BY chunk_no) FROM backfill.chunks WHERE run_id = $prevert}),
	'1:pending,2:pending,3:pending,4:done,5:done,6:done',
	'kept leaves, after the crash: chunks 4 to 6 are done, chunk 3 is pending');
is($node->safe_psql($db, "SELECT pg_relation_filenode('ptgt_2')"), $leaf2,
	'the interrupted chunk\'s leaf still has the files of the v2 run');
is(table_diff($node, $db, 'ptgt', 'ptgt_v2', "ts < '2024-01-04 00:00+00'"),
	'0', 'chunks 1 to 3 hold v2\'s rows');
is(table_diff($node, $db, 'ptgt', 'ptgt_v1', "ts >= '2024-01-04 00:00+00'"),
	'0', 'chunks 4 to 6 hold v1\'s rows again');
$node->safe_psql($db, 'TRUNCATE gate_day');
$node->safe_psql($db, "SET client_min_messages = warning; CALL backfill.run($prevert)");
is($node->safe_psql($db, "SELECT status FROM backfill.runs WHERE run_id = $prevert"),
	'done', 'the resumed kept-leaf revert is done');
is(table_diff($node, $db, 'ptgt', 'ptgt_v1'), '0',
	'the partitioned table is exactly what it was before the v2 run');
is( $node->safe_psql($db, q{
SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
  JOIN ptgt_files_v1 f ON f.relname = c.relname
 WHERE i.inhparent = 'ptgt'::regclass AND pg_relation_filenode(c.oid) = f.filenode}),
	'6', 'every leaf has its files of before the v2 run again');

# --- pg_dump and pg_restore into another cluster. -----------------------
my $dir = PostgreSQL::Test::Utils::tempdir();
my $dump = "$dir/undo.dump";
my $archive_rows = $node->safe_psql($db, q{
SELECT sum(rows_kept) FROM backfill.archived_chunks WHERE purged_at IS NULL});
my $kept_leaves = $node->safe_psql($db, 'SELECT count(*) FROM backfill.archived_leaves');
command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr($db), '-f', $dump ],
	'pg_dump of a database with an archive');
my $copy = backfill_node('restored', extension => 0);
$copy->safe_psql('postgres', 'CREATE ROLE undo_owner');
$copy->safe_psql('postgres', 'CREATE DATABASE restored');
command_ok([ 'pg_restore', '--exit-on-error', '-d', $copy->connstr('restored'), $dump ],
	'pg_restore into a new cluster');
is( $copy->safe_psql('restored', q{
SELECT bool_and(a.archive::text LIKE 'backfill_archive.t_%'
                AND c.relowner = 'undo_owner'::regrole)
  FROM backfill.archives a JOIN pg_class c ON c.oid = a.archive
 WHERE a.target = 'tgt'::regclass}),
	't', 'the restored archive tables are registered for the restored target, owned by its owner');
is( $copy->safe_psql('restored', q{
SELECT count(*) FROM backfill.archived_leaves l JOIN pg_class c ON c.oid = l.kept
 WHERE c.relnamespace = 'backfill_archive'::regnamespace
   AND c.relowner = 'undo_owner'::regrole}),
	$kept_leaves, 'the kept leaves are restored, in the archive schema, owned by the leaves\' owner');
is( $copy->safe_psql('restored', q{
SELECT has_schema_privilege('public', 'backfill_archive', 'USAGE')}),
	'f', 'and its schema is still closed to PUBLIC');
is( $copy->safe_psql('restored', q{
SELECT sum(rows_kept) FROM backfill.archived_chunks WHERE purged_at IS NULL}),
	$archive_rows, 'the record of what was kept is restored');

# The revert of the revert in the restored database: v2's rows are back,
# and the diff of the v2 run is the one seen before the dump.
my $rr = $copy->safe_psql('restored', "SELECT backfill.revert($revert)");
$copy->safe_psql('restored', qq{
SET client_min_messages = warning;
CALL backfill.run($rr);
CALL backfill.run($rr)});
is($copy->safe_psql('restored', "SELECT status FROM backfill.runs WHERE run_id = $rr"),
	'done', 'in the restored database, the revert of the revert is done');
is(table_diff($copy, 'restored', 'tgt', 'tgt_v2'), '0',
	'it put back exactly the v2 rows, read from the restored archive');
is( $copy->safe_psql('restored',
		"SELECT count(*), md5(string_agg(d::text, '|')) FROM backfill.diff($run2) d"),
	$diff2, 'the diff of the v2 run in the restored database is the one before the dump');

# kept leaves, restored: the revert of the revert puts v2 back
my $prr = $copy->safe_psql('restored', "SELECT backfill.revert($prevert)");
$copy->safe_psql('restored', qq{
SET client_min_messages = warning;
CALL backfill.run($prr);
CALL backfill.run($prr)});
is(table_diff($copy, 'restored', 'ptgt', 'ptgt_v2'), '0',
	'in the restored database, the kept leaves put back exactly the v2 rows');
is( $copy->safe_psql('restored',
		"SELECT count(*), md5(string_agg(d::text, '|')) FROM backfill.diff($prun2) d"),
	$pdiff2, 'the diff of the partitioned v2 run is the one before the dump');

$copy->stop;
$node->stop;
done_testing();
