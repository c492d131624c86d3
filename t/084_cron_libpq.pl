# pg_cron set up with only the two settings the README used to give
# (issue 29, item 1): shared_preload_libraries and cron.database_name, so
# cron.use_background_workers is off and every tick is a libpq connection
# to cron.host without a password, which fails here as on most servers
# (no TCP listener, no .pgpass).
#
# 1. Each schedule call (a run, a standing check, a refresh) warns at once,
#    naming cron.use_background_workers.
# 2. pg_cron really ticks, and every tick logs "connection failed";
#    progress and progress_brief show the run, the check and the refresh
#    "stalled", with pg_cron's message and the fix as next_step.
# 3. With the fix applied (cron.use_background_workers = on, a restart),
#    the same jobs tick, the run finishes, and nothing is stalled.
#
# pg_cron 1.4 schedules by the minute: every wait is bounded (200 s).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = backfill_node('libpq', cron => 1,
	conf => "cron.use_background_workers = off\n");
is($node->safe_psql('postgres', 'SHOW cron.use_background_workers'),
	'off', 'pg_cron ticks over libpq');

$node->safe_psql('postgres', q{
CREATE ROLE etl LOGIN;
GRANT USAGE ON SCHEMA cron TO etl;
CREATE TABLE events (ts timestamptz NOT NULL, amount int NOT NULL);
INSERT INTO events
SELECT t, 1 FROM generate_series(date_trunc('day', now()) - interval '6 days',
                                 date_trunc('day', now()) - interval '1 hour',
                                 '1 hour') AS t;
CREATE TABLE daily (day timestamptz NOT NULL, total int NOT NULL);
GRANT SELECT ON events TO etl;
GRANT SELECT, INSERT, DELETE ON daily TO etl;
});
my @etl = (extra_params => [ '-U', 'etl' ]);
$node->safe_psql('postgres', q{
SET TimeZone = 'UTC';
SELECT backfill.register('daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM public.events WHERE ts >= $1 AND ts < $2 GROUP BY 1$$);
}, @etl);
my $run = $node->safe_psql('postgres', q{
SET TimeZone = 'UTC';
SELECT backfill.plan('daily', date_trunc('day', now()) - interval '6 days',
                     date_trunc('day', now()) - interval '2 days', probe => false);
}, @etl);

# ---- 1. every schedule call warns ----
my %ids = (run => $run);
for my $call (
	[ 'run', "SELECT backfill.schedule($run, '* * * * *', chunks_per_tick => 4)" ],
	[ 'check', "SELECT backfill.schedule_check('daily', '* * * * *', '3 days')" ],
	[ 'refresh', "SELECT backfill.schedule_refresh('daily', '* * * * *', lookback => '3 days')" ])
{
	my ($what, $sql) = @$call;
	my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY default\n$sql", @etl);
	is($ret, 0, "the $what is scheduled");
	like($err, qr/WARNING:  pg_cron will run the ticks of $what \d+ over a libpq connection without a password/,
		"... with a WARNING at once");
	like($err, qr/DETAIL:  cron.use_background_workers is off, so for every tick pg_cron connects to cron.host \("localhost"\) as role "etl" without a password/,
		'... whose detail names the setting and the role');
	like($err, qr/HINT:  Set cron.use_background_workers = on in postgresql.conf, raise max_worker_processes/,
		'... and whose hint says what to set');
}
my $check = $node->safe_psql('postgres', 'SELECT check_id FROM backfill.checks');
my $refresh = $node->safe_psql('postgres', 'SELECT refresh_id FROM backfill.refreshes');

# ---- 2. the ticks fail, and backfill says so ----
is( wait_for_value($node, q{
SELECT count(DISTINCT jobid) FROM cron.job_run_details
 WHERE status = 'failed' AND return_message = 'connection failed'},
		sub { $_[0] eq '3' }, 200),
	'3', 'pg_cron ticks all three jobs, and every tick fails: "connection failed"');
is( $node->safe_psql('postgres', q{
SELECT string_agg(coalesce(run_id::text, '-') || ' ' || state, ', ' ORDER BY run_id NULLS LAST, next_step)
  FROM backfill.progress_brief}, @etl),
	"$run stalled, - stalled, - stalled",
	'progress_brief: the run, the check and the refresh are stalled');
like( $node->safe_psql('postgres',
		"SELECT next_step FROM backfill.progress_brief WHERE run_id = $run", @etl),
	qr/^pg_cron's ticks fail \(connection failed\): set cron.use_background_workers = on and enough max_worker_processes in postgresql.conf, then restart the server/,
	'... the run\'s next step: pg_cron\'s message and the fix');
like( $node->safe_psql('postgres',
		"SELECT string_agg(next_step, ' | ' ORDER BY next_step) FROM backfill.progress_brief WHERE run_id IS NULL",
		@etl),
	qr/^check $check: pg_cron's ticks fail \(connection failed\): set cron.use_background_workers = on .* \| refresh $refresh: pg_cron's ticks fail \(connection failed\): set cron.use_background_workers = on /,
	'... the check\'s and the refresh\'s too');
like( $node->safe_psql('postgres', q{
SELECT string_agg(kind || ' ' || (ticks_failed >= 1) || ' ' || tick_failure, ', ' ORDER BY kind DESC)
  FROM backfill.progress}, @etl),
	qr/^run true connection failed, refresh true connection failed, check true connection failed$/,
	'progress: the failed ticks and pg_cron\'s message');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM backfill.chunks WHERE run_id = $run AND status = 'done'"),
	'0', 'no chunk ran');

# ---- 3. the fix: background workers, a restart ----
$node->append_conf('postgresql.conf', "cron.use_background_workers = on\n");
$node->restart;
is( wait_for_value($node, "SELECT status FROM backfill.runs WHERE run_id = $run",
		sub { $_[0] eq 'done' || $_[0] eq 'failed' }, 200),
	'done', 'with the fix the same job ticks and the run finishes');
is( wait_for_value($node, q{
SELECT count(*) FROM backfill.progress WHERE ticks_failed > 0}, sub { $_[0] eq '0' }, 200),
	'0', 'nothing is stalled any more: the check and the refresh tick too');
is( $node->safe_psql('postgres', q{
SELECT string_agg(DISTINCT executed_by || ' ' || executed_via, ',')
  FROM backfill.chunks WHERE status = 'done'}),
	'etl pg_cron', 'the chunks ran as etl, in pg_cron\'s background workers');

$node->stop;
done_testing();
