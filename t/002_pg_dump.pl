# pg_dump keeps backfill's history: a database with a finished run, a
# definition change and a second run is dumped and restored into a new
# database; the targets, definitions, runs, chunks, history and lineage
# are identical there, and a new plan gets a fresh run id (the sequence is
# kept, so ids are never reused).  A watched partitioned source, one of
# whose partitions was attached after watch (the event trigger
# backfill_watch_ddl gave it its statement triggers), restores
# without error (the event trigger finds no watch while pg_restore makes
# the partitions) and with the same triggers, and a write straight into
# that partition, or through the source into another, is recorded in the
# copy.  A column dropped before the time column is gone from the copy, so
# the restore renumbers the time column: the row trigger's WHEN clause
# names the column by name only (an earlier build's named it by number
# too, and after such a restore every INSERT went unrecorded).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# the extension is created in database orig, below
my $node = backfill_node('dump', extension => 0);

$node->safe_psql('postgres', 'CREATE DATABASE orig');
$node->safe_psql('orig', q{
SET client_min_messages = warning;
CREATE EXTENSION backfill;
CREATE TABLE src (ts timestamptz NOT NULL, v int NOT NULL, is_test bool NOT NULL);
INSERT INTO src SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '6 hours', i, i % 3 = 0
  FROM generate_series(0, 23) i;
CREATE TABLE tgt (ts timestamptz NOT NULL, v int NOT NULL);
SELECT backfill.register('tgt', 'ts', 'SELECT ts, v FROM public.src WHERE ts >= $1 AND ts < $2',
    definition => 'v1', measure => 'sum(v)',
    source_horizon => 'SELECT ''2024-01-02 00:00+00''::timestamptz');
SELECT backfill.plan('tgt', '2024-01-01 00:00+00', '2024-01-07 00:00+00',
                     note => 'first', probe => false) AS r1 \gset
CALL backfill.run(:r1);
SELECT backfill.register('tgt', 'ts',
    'SELECT ts, v FROM public.src WHERE ts >= $1 AND ts < $2 AND NOT is_test',
    definition => 'v2: no test rows', measure => 'sum(v)',
    source_horizon => 'SELECT ''2024-01-02 00:00+00''::timestamptz');
SELECT backfill.plan('tgt', '2024-01-03 00:00+00', '2024-01-05 00:00+00',
                     chunk => '12 hours', note => 'second', probe => false) AS r2 \gset
CALL backfill.run(:r2);
-- and one unfinished, probed run
SELECT backfill.plan('tgt', '2024-01-05 00:00+00', '2024-01-07 00:00+00', note => 'third') AS r3 \gset
CALL backfill.run(:r3);
-- a weekly rollup built from tgt, and an unfinished cascading plan (a group)
CREATE TABLE tgt_week (week timestamptz NOT NULL, v int NOT NULL);
SELECT backfill.register('tgt_week', 'week',
    'SELECT date_trunc(''week'', ts) AS week, sum(v)::int AS v FROM public.tgt WHERE ts >= $1 AND ts < $2 GROUP BY 1',
    chunk => '1 week');
SELECT backfill.depend('tgt_week', 'tgt');
SELECT backfill.plan('tgt', '2024-01-07 00:00+00', '2024-01-08 00:00+00', note => 'group',
                     cascade => true);
-- a watched partitioned source, a partition attached after watch
CREATE TABLE psrc (gone int, ts timestamptz NOT NULL, v int NOT NULL) PARTITION BY RANGE (ts);
ALTER TABLE psrc DROP COLUMN gone;
CREATE TABLE psrc_1 PARTITION OF psrc FOR VALUES FROM ('2024-01-01 00:00+00') TO ('2024-01-04 00:00+00');
CREATE TABLE pdaily (day timestamptz NOT NULL, v int NOT NULL);
SELECT backfill.register('pdaily', 'day',
    'SELECT $1 AS day, count(*)::int AS v FROM public.psrc WHERE ts >= $1 AND ts < $2');
SELECT backfill.watch('pdaily', 'psrc', 'ts', settle => '0');
CREATE TABLE psrc_2 (ts timestamptz NOT NULL, v int NOT NULL);
ALTER TABLE psrc ATTACH PARTITION psrc_2 FOR VALUES FROM ('2024-01-04 00:00+00') TO ('2024-01-08 00:00+00');
CALL backfill.backfill('pdaily', '2024-01-01 00:00+00', '2024-01-08 00:00+00');
});
my $triggers_sql = q{
SELECT string_agg(c.relname || ':' || t.tgname, ' ' ORDER BY c.relname, t.tgname)
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE c.relname IN ('psrc', 'psrc_1', 'psrc_2') AND t.tgname LIKE 'backfill%'};
my $triggers = $node->safe_psql('orig', $triggers_sql);
is(scalar(() = $triggers =~ /psrc_2:backfill_watch_/g), 4,
	'the partition attached after watch carries the four triggers');

# Everything a user reads, as text, in a stable order.
my $snapshot_sql = q{
SELECT 'targets', count(*)::text, string_agg(t::text, '|') FROM (SELECT target::text, time_column, chunk, current_version, measure FROM backfill.targets ORDER BY 1) t
UNION ALL
SELECT 'definitions', count(*)::text, string_agg(d::text, '|' ORDER BY d.target, d.version) FROM (SELECT target::text, version, label, source, source_hash, created_at, created_by FROM backfill.definitions) d
UNION ALL
SELECT 'runs', count(*)::text, string_agg(r::text, '|' ORDER BY r.run_id) FROM (SELECT run_id, target::text, range_start, range_end, chunk, status, note, probe, definition_version, timezone, created_at, created_by, finished_at, group_id, upstream_runs FROM backfill.runs) r
UNION ALL
SELECT 'dependencies', count(*)::text, string_agg(d::text, '|' ORDER BY d.downstream) FROM (SELECT downstream::text, upstream::text, created_at, created_by FROM backfill.dependencies) d
UNION ALL
SELECT 'chunks', count(*)::text, string_agg(c::text, '|' ORDER BY c.run_id, c.chunk_no) FROM (SELECT run_id, chunk_no, chunk_start, chunk_end, status, attempts, rows_deleted, rows_inserted, before_value, after_value, started_at, finished_at, executed_by FROM backfill.chunks) c
UNION ALL
SELECT 'history', count(*)::text, string_agg(h::text, '|' ORDER BY h.run_id, h.chunk_no) FROM backfill.history h
UNION ALL
SELECT 'lineage', count(*)::text, string_agg(l::text, '|' ORDER BY l.range_start) FROM backfill.lineage('tgt') l
UNION ALL
SELECT 'progress', count(*)::text, string_agg(p.run_id || ' ' || p.status || ' ' || p.chunks_done, '|') FROM backfill.progress p
UNION ALL
SELECT 'target', count(*)::text, md5(string_agg(t::text, '|' ORDER BY t.ts, t.v)) FROM tgt t
};
my $before = $node->safe_psql('orig', $snapshot_sql);
note("catalog snapshot of the original:\n$before");
like($before, qr/^lineage\|[1-9]/m, 'the original has lineage');
like($before, qr/^history\|1[0-9]\|/m, 'the original has history');
like($before, qr/^definitions\|4\|/m, 'the original has four definitions (three of tgt)');
like($before, qr/^dependencies\|1\|/m, 'the original has a dependency');

my $dump = $node->basedir . '/orig.dump';
command_ok(
	[ 'pg_dump', '-Fc', '-d', $node->connstr('orig'), '-f', $dump ],
	'pg_dump of a database with backfill history');
$node->safe_psql('postgres', 'CREATE DATABASE copy');
command_ok(
	[ 'pg_restore', '--exit-on-error', '-d', $node->connstr('copy'), $dump ],
	'pg_restore into a new database');

my $after = $node->safe_psql('copy', $snapshot_sql);
is($after, $before, 'targets, definitions, runs, chunks, history, lineage and progress are identical');
is($node->safe_psql('copy', $triggers_sql), $triggers,
	'the watched partitions have the same triggers after the restore');
$node->safe_psql('copy', q{INSERT INTO psrc_2 VALUES ('2024-01-05 10:00+00', 1);
DELETE FROM psrc_2 WHERE ts = '2024-01-05 10:00+00'});
is( $node->safe_psql('copy', q{
SELECT string_agg(DISTINCT chunk_start::date::text, ',') FROM backfill.changed_regions
 WHERE target = 'pdaily'::regclass}),
	'2024-01-05', 'a write straight into the partition is recorded in the copy');
is( $node->safe_psql('copy', q{
SELECT attnum FROM pg_attribute WHERE attrelid = 'psrc'::regclass AND attname = 'ts'}),
	'1', 'the restore renumbered the time column of the partitioned source');
$node->safe_psql('copy', q{INSERT INTO psrc VALUES ('2024-01-02 10:00+00', 1)});
is( $node->safe_psql('copy', q{
SELECT string_agg(DISTINCT chunk_start::date::text, ',' ORDER BY chunk_start::date::text)
  FROM backfill.changed_regions WHERE target = 'pdaily'::regclass}),
	'2024-01-02,2024-01-05',
	'a row into the renumbered source is recorded in the copy');

# The catalog is still protected after the restore.
my ($ret, $out, $err) = $node->psql('copy', q{
CREATE ROLE dump_reader;
SET ROLE dump_reader;
DELETE FROM backfill.chunks;});
like($err, qr/permission denied/, 'users still cannot write the restored catalog');

# A new plan gets a fresh id; the probed run resumes in the copy.
my $max = $node->safe_psql('copy', 'SELECT max(run_id) FROM backfill.runs');
my $new = $node->safe_psql('copy', q{
SELECT backfill.plan('tgt', '2024-02-01 00:00+00', '2024-02-02 00:00+00')});
cmp_ok($new, '>', $max, 'a new plan in the restored database gets a fresh run id');
my $r3 = $node->safe_psql('copy', q{SELECT run_id FROM backfill.runs WHERE note = 'third'});
$node->safe_psql('copy', "SET client_min_messages = warning; CALL backfill.run($r3)");
is($node->safe_psql('copy', "SELECT status FROM backfill.runs WHERE run_id = $r3"),
	'done', 'the probed run resumes and finishes in the restored database');
is( $node->safe_psql('copy', qq{
SELECT count(*) FROM backfill.chunks WHERE run_id = $r3 AND attempts > 1}),
	'0', 'the chunk done before the dump was not run again');

$node->stop;
done_testing();
