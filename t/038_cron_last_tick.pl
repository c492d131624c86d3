# The tick that finishes a run ends "succeeded" in cron.job_run_details
# (issue 15, item 4).  pg_cron 1.4 checks, while a job's worker runs,
# whether the job is still active; a job whose cron.job row went meanwhile
# is logged "failed" with "job canceled", and its worker is terminated.
# The tick that finishes a run therefore never removes its own job: it
# parks it (a schedule that never fires), and the next sweep removes it.
#
# Four runs scheduled every minute, two chunks each at one chunk per tick:
# every tick of every run, the finishing ones included, succeeded; no job
# fires once its run is done; cleanup_jobs removes what no later tick
# swept, and the scheduling role then holds no guard.
#
# pg_cron 1.4 schedules by the minute: the wait is bounded (240 s).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = backfill_node('cronlasttick', cron => 1);
$node->safe_psql('postgres', q{
CREATE ROLE etl LOGIN;
GRANT USAGE ON SCHEMA cron TO etl;
CREATE TABLE events (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO events SELECT t, 1 FROM generate_series('2026-01-01 00:00+00'::timestamptz,
                                                    '2026-01-10 23:00+00', '1 hour') t;
GRANT SELECT ON events TO etl;
});
my @runs;
for my $i (1 .. 4)
{
	$node->safe_psql('postgres', qq{
CREATE TABLE t$i (ts timestamptz NOT NULL, v int NOT NULL);
GRANT SELECT, INSERT, DELETE ON t$i TO etl;
SET ROLE etl;
SELECT backfill.register('t$i', 'ts',
    \$\$SELECT ts, v FROM public.events WHERE ts >= \$1 AND ts < \$2\$\$);
});
	my $r = $node->safe_psql('postgres',
		"SET ROLE etl; SELECT backfill.plan('t$i', '2026-01-01', '2026-01-03', probe => false)");
	$node->safe_psql('postgres',
		"SET ROLE etl; SELECT backfill.schedule($r, '* * * * *', chunks_per_tick => 1)");
	push @runs, $r;
}
my $runs = join(',', @runs);
is($node->safe_psql('postgres', "SELECT count(*) FROM cron.job WHERE username = 'etl'"),
	'4', 'four runs scheduled');

$node->poll_query_until('postgres', qq{
SELECT bool_and(status = 'done') FROM backfill.runs WHERE run_id IN ($runs)},
	't')
  or die 'the scheduled runs did not finish';
pass('the four runs finished on their own');
ok($node->poll_query_until('postgres', q{
SELECT count(*) = 0 FROM cron.job_run_details WHERE status IN ('starting', 'running')}),
	'no tick is still running');

my $details = $node->safe_psql('postgres', qq{
SELECT count(*) FILTER (WHERE status = 'succeeded') || ' '
    || count(*) FILTER (WHERE status <> 'succeeded') || ' '
    || count(*) FILTER (WHERE return_message = 'job canceled')
  FROM cron.job_run_details
 WHERE command LIKE 'CALL backfill.run(%'});
my ($succeeded, $other, $canceled) = split / /, $details;
ok($succeeded >= 8, "cron.job_run_details shows $succeeded succeeded ticks (two per run at least)");
is($other, '0', 'no tick failed, the four finishing ones included');
is($canceled, '0', 'none was canceled by pg_cron');
is($node->safe_psql('postgres', qq{
SELECT string_agg(DISTINCT executed_via, ',') FROM backfill.chunks WHERE run_id IN ($runs)}),
	'pg_cron', 'every chunk ran in a pg_cron tick');

# No job of a finished run fires again: each is parked or swept already.
is($node->safe_psql('postgres', q{
SELECT count(*) FROM cron.job WHERE schedule <> '0 0 31 2 *'}),
	'0', 'no job of a finished run fires again');
$node->safe_psql('postgres', 'SELECT count(*) FROM backfill.cleanup_jobs()');
is($node->safe_psql('postgres', 'SELECT count(*) FROM cron.job'),
	'0', 'cleanup_jobs removed the parked ones');
is($node->safe_psql('postgres', qq{
SELECT count(*) FROM backfill.runs WHERE run_id IN ($runs) AND job_id IS NOT NULL}),
	'0', 'no run names a job');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM pg_class c, aclexplode(c.relacl) a
 WHERE c.oid = 'backfill.scheduled_jobs'::regclass AND a.grantee = 'etl'::regrole}),
	'0', 'the role has no job left and no guard');
is($node->safe_psql('postgres', "SELECT sum(v) FROM t1"), '48', 'the data is there');
$node->stop;
done_testing();
