# Eight runs on eight different targets at the same time (checklist C40):
# no deadlock or serialization failure on backfill's catalog, unique run
# ids, one chunk row per chunk, every target exactly right.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $n = 8;
my $node = backfill_node('parallel', conf => "max_connections = 40\n");
$node->safe_psql('postgres', q{
CREATE TABLE src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO src SELECT t, 1 FROM generate_series('2024-01-01 00:00+00'::timestamptz,
                                                 '2024-01-10 23:00+00', '1 hour') t;
});
my @runs;
for my $i (1 .. $n)
{
	$node->safe_psql('postgres', qq{
CREATE TABLE tgt$i (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO tgt$i SELECT t, 0 FROM generate_series('2023-12-31 00:00+00'::timestamptz,
                                                   '2024-01-11 22:00+00', '2 hours') t;
SELECT backfill.register('tgt$i', 'ts',
  \$\$SELECT ts, v + $i - 1 AS v FROM public.src WHERE ts >= \$1 AND ts < \$2\$\$,
  chunk => '6 hours');});
}
# Plan them all at once too.
my @h;
my @out;
for my $i (1 .. $n)
{
	my ($o, $e) = ('', '');
	push @out, [ \$o, \$e ];
	push @h, IPC::Run::start([ $node->installed_command('psql'), '-XAtq', '-d', $node->connstr('postgres'),
		'-c', "SELECT backfill.plan('tgt$i', '2024-01-01 00:00+00', '2024-01-11 00:00+00', probe => false)" ],
		'>', \$o, '2>', \$e);
}
$_->finish for @h;
for my $i (1 .. $n)
{
	chomp(my $id = ${ $out[ $i - 1 ][0] });
	is(${ $out[ $i - 1 ][1] }, '', "plan $i: no error");
	push @runs, $id;
}
is(scalar(keys %{ { map { $_ => 1 } @runs } }), $n, 'run ids are unique');

@h = ();
@out = ();
for my $i (1 .. $n)
{
	my ($o, $e) = ('', '');
	push @out, [ \$o, \$e ];
	push @h, IPC::Run::start([ $node->installed_command('psql'), '-XAtq', '-d', $node->connstr('postgres'),
		'-v', 'ON_ERROR_STOP=1', '-c', "CALL backfill.run($runs[$i - 1])" ],
		'>', \$o, '2>', \$e);
}
my @rc;
for my $i (0 .. $n - 1)
{
	$h[$i]->finish;
	push @rc, $h[$i]->result(0);
}
is_deeply(\@rc, [ (0) x $n ], 'all eight runs succeed');
my $errs = join('', map { ${ $_->[1] } } @out);
unlike($errs, qr/ERROR/, 'no errors (no deadlock, no serialization failure)');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM backfill.runs WHERE status = 'done'"), $n, 'all runs are done');
is($node->safe_psql('postgres', q{
SELECT count(*), count(DISTINCT (run_id, chunk_no)), count(*) FILTER (WHERE status = 'done')
  FROM backfill.chunks}), join('|', 40 * $n, 40 * $n, 40 * $n),
	'one chunk row per chunk, all done');
for my $i (1 .. $n)
{
	is($node->safe_psql('postgres', qq{
SELECT count(*) || ' ' || sum(v) FROM tgt$i WHERE ts >= '2024-01-01 00:00+00' AND ts < '2024-01-11 00:00+00'}),
		'240 ' . (240 * $i), "target $i holds its source rows once");
	is($node->safe_psql('postgres', qq{
SELECT count(*) || ' ' || sum(v) FROM tgt$i WHERE ts < '2024-01-01 00:00+00' OR ts >= '2024-01-11 00:00+00'}),
		'24 0', "target $i: rows outside the range untouched");
}
unlike(slurp_file($node->logfile), qr/deadlock detected/, 'no deadlock in the server log');
$node->stop;
done_testing();
