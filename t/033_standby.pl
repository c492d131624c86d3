# A hot standby (checklist F31): the run API refuses to write there with
# 25006 while history and progress stay readable; after promotion the
# half-done run resumes and gives exactly the target of an uninterrupted
# run.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = backfill_node('primary', init => { allows_streaming => 1 });
$primary->safe_psql('postgres', q{
CREATE TABLE src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO src SELECT t, 1 FROM generate_series('2024-01-01 00:00+00'::timestamptz,
                                                 '2024-01-04 23:00+00', '1 hour') t;
CREATE TABLE tgt (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO tgt SELECT t, 0 FROM generate_series('2023-12-31 00:00+00'::timestamptz,
                                                 '2024-01-05 22:00+00', '2 hours') t;
CREATE TABLE tgt_expected AS
  SELECT * FROM tgt WHERE ts < '2024-01-01 00:00+00' OR ts >= '2024-01-05 00:00+00'
  UNION ALL SELECT * FROM src;
SELECT backfill.register('tgt', 'ts',
  $$SELECT ts, v FROM public.src WHERE ts >= $1 AND ts < $2$$);
});
my $run = $primary->safe_psql('postgres',
	"SELECT backfill.plan('tgt', '2024-01-01 00:00+00', '2024-01-05 00:00+00', probe => false)");
$primary->safe_psql('postgres', "CALL backfill.run($run, max_chunks => 2)");

$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby);

my ($ret, $out, $err) = $standby->psql('postgres', "CALL backfill.run($run)");
like($err, qr/read-only transaction|recovery/, 'standby: run is refused');
($ret, $out, $err) = $standby->psql('postgres',
	"SELECT backfill.plan('tgt', '2024-02-01', '2024-02-02')");
like($err, qr/read-only transaction|recovery/, 'standby: plan is refused');
($ret, $out, $err) = $standby->psql('postgres',
	'\set VERBOSITY verbose' . "\nCALL backfill.run($run)");
like($err, qr/ERROR:\s+25006/, 'standby: the SQLSTATE is 25006');
is($standby->safe_psql('postgres',
		"SELECT string_agg(status, ',' ORDER BY chunk_no) FROM backfill.chunks WHERE run_id = $run"),
	'done,done,pending,pending', 'standby: the run\'s chunks are readable, unchanged');
is($standby->safe_psql('postgres',
		"SELECT chunks_done || '/' || chunks_total || ' ' || coalesce(pid::text, 'idle') FROM backfill.progress WHERE run_id = $run"),
	'2/4 idle', 'standby: progress is readable and nobody runs it');

$primary->stop;
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'standby was not promoted';
$standby->safe_psql('postgres', "CALL backfill.run($run)");
is($standby->safe_psql('postgres', "SELECT status FROM backfill.runs WHERE run_id = $run"),
	'done', 'promoted: the run resumes and finishes');
is($standby->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM (SELECT * FROM tgt EXCEPT ALL SELECT * FROM tgt_expected) a)
     + (SELECT count(*) FROM (SELECT * FROM tgt_expected EXCEPT ALL SELECT * FROM tgt) b)}),
	0, 'promoted: the target equals an uninterrupted run');
$standby->stop;
done_testing();
