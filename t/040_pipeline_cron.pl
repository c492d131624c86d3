# A group handed to pg_cron (backfill.schedule_group) finishes on its own in
# dependency order: a daily refill and the weekly and monthly rollups built
# from it.  Each run of the group has its own job; a downstream run's tick
# does nothing while the upstream chunks it covers are not done; the tick
# that finishes a run parks its job (it never fires again), later ticks
# remove it, and every tick ends "succeeded" in cron.job_run_details.
#
# pg_cron 1.4 schedules by the minute: the wait is bounded (300 s).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = backfill_node('pipeline_cron', cron => 1);

$node->safe_psql(
	'postgres', q{
CREATE ROLE etl LOGIN;
GRANT USAGE ON SCHEMA cron TO etl;
CREATE TABLE events (ts timestamptz NOT NULL, amount int NOT NULL);
INSERT INTO events
SELECT t, 1 FROM generate_series('2026-01-01 00:00+00'::timestamptz,
                                 '2026-01-31 23:00+00', '1 hour') AS t;
CREATE TABLE daily (day timestamptz NOT NULL, total int NOT NULL);
INSERT INTO daily SELECT d, 0
  FROM generate_series('2026-01-01 00:00+00'::timestamptz, '2026-01-31', '1 day') AS d;
CREATE TABLE weekly (week timestamptz NOT NULL, total int NOT NULL);
CREATE TABLE monthly (month timestamptz NOT NULL, total int NOT NULL);
GRANT SELECT ON events TO etl;
GRANT SELECT, INSERT, DELETE ON daily, weekly, monthly TO etl;
});

my @etl = (extra_params => [ '-U', 'etl' ]);
$node->safe_psql(
	'postgres', q{
SET TimeZone = 'UTC';
SELECT backfill.register('daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM public.events WHERE ts >= $1 AND ts < $2 GROUP BY 1$$);
SELECT backfill.register('weekly', 'week',
    $$SELECT date_trunc('week', day) AS week, sum(total)::int AS total
        FROM public.daily WHERE day >= $1 AND day < $2 GROUP BY 1$$, chunk => '1 week');
SELECT backfill.register('monthly', 'month',
    $$SELECT date_trunc('month', day) AS month, sum(total)::int AS total
        FROM public.daily WHERE day >= $1 AND day < $2 GROUP BY 1$$, chunk => '1 month');
SELECT backfill.depend('weekly', 'daily');
SELECT backfill.depend('monthly', 'daily');
}, @etl);
my $group = $node->safe_psql(
	'postgres', q{
SET TimeZone = 'UTC';
SELECT backfill.plan('daily', '2026-01-05', '2026-01-08', cascade => true);
}, @etl);
like($group, qr/^\d+$/, 'group planned');

# A probed group cannot be scheduled before its probe chunk has run.
my ($ret, $out, $err) = $node->psql('postgres',
	"SELECT backfill.schedule_group($group, '* * * * *')", @etl);
isnt($ret, 0, 'scheduling before the probe is refused');
like($err, qr/before its probe chunk has run/, '... with the reason');
$node->safe_psql('postgres', "CALL backfill.run_group($group)", @etl);

is( $node->safe_psql('postgres',
		"SELECT backfill.schedule_group($group, '* * * * *', chunks_per_tick => 1)", @etl),
	'3', 'the three runs of the group are scheduled');
is( $node->safe_psql('postgres',
		"SELECT string_agg(command, ' | ' ORDER BY jobname) FROM cron.job WHERE username = 'etl'"),
	"CALL backfill.run($group, max_chunks => 1) | CALL backfill.run("
	  . ($group + 1) . ", max_chunks => 1) | CALL backfill.run("
	  . ($group + 2) . ", max_chunks => 1)",
	'one job per run, each running exactly its run');

# Wait (bounded) for the group to finish on its own.
my $status = wait_for_value($node,
	"SELECT status FROM backfill.group_progress WHERE group_id = $group",
	sub { $_[0] eq 'done' || $_[0] eq 'failed' }, 300);
is($status, 'done', 'the group finished on its own');
# Each finishing tick parked its job (never removed in its own tick), and
# the later ticks of the group swept the parked jobs of the runs done
# before them; cleanup_jobs removes what is left.
is($node->safe_psql('postgres',
		"SELECT count(*) FROM cron.job WHERE schedule <> '0 0 31 2 *'"),
	'0', 'no job of the group fires any more');
$node->safe_psql('postgres', 'SELECT count(*) FROM backfill.cleanup_jobs()');
is($node->safe_psql('postgres', "SELECT count(*) FROM cron.job"),
	'0', 'and none is left after cleanup_jobs');
ok($node->poll_query_until('postgres', qq{
SELECT count(*) = 0 FROM cron.job_run_details WHERE status IN ('starting', 'running')}),
	'no tick is still running');
is($node->safe_psql('postgres', qq{
SELECT count(*) FILTER (WHERE status = 'succeeded') > 0
       AND count(*) FILTER (WHERE status <> 'succeeded') = 0
  FROM cron.job_run_details WHERE command LIKE 'CALL backfill.run(%'}),
	't', 'every tick of the group ended succeeded in cron.job_run_details');

# Dependency order: each downstream chunk started after every daily chunk
# it covers had finished.
is( $node->safe_psql('postgres', qq{
SELECT count(*)
  FROM backfill.chunks dc JOIN backfill.runs dr USING (run_id),
       backfill.chunks uc JOIN backfill.runs ur USING (run_id)
 WHERE dr.group_id = $group AND dr.target <> 'daily'::regclass
   AND ur.group_id = $group AND ur.target = 'daily'::regclass
   AND uc.chunk_start < dc.chunk_end AND uc.chunk_end > dc.chunk_start
   AND uc.finished_at > dc.started_at}),
	'0', 'no downstream chunk started before the daily chunks it covers');
is( $node->safe_psql('postgres', qq{
SELECT string_agg(r.target::text || ':' || c.executed_via, ',' ORDER BY r.run_id, c.chunk_no)
  FROM backfill.chunks c JOIN backfill.runs r USING (run_id) WHERE r.group_id = $group}),
	'daily:session,daily:pg_cron,daily:pg_cron,monthly:pg_cron,weekly:pg_cron',
	'the probe ran in the session, the rest from pg_cron');
is( $node->safe_psql('postgres', q{
SELECT (SELECT string_agg(to_char(week, 'MM-DD') || '=' || total, ',' ORDER BY week) FROM weekly)
       || ' ' || (SELECT string_agg(to_char(month, 'MM') || '=' || total, ',') FROM monthly)}),
	'01-05=72 01=72', 'the rollups hold the rebuilt figures');

$node->stop;
done_testing();
