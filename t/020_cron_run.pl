# pg_cron really fires: a probed run, handed to pg_cron by a non-superuser
# ETL role, finishes on its own two chunks per tick; its job is parked by
# the last tick and removed by the next sweep;
# every chunk was executed as the scheduling role, the scheduled ones from
# pg_cron; pg_cron's own log shows succeeded ticks.
#
# pg_cron 1.4 schedules by the minute: the wait is bounded (200 s).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = backfill_node('cron', cron => 1);

# Setup as superuser: an ETL role that may use pg_cron (USAGE on schema
# cron) and write the target, the tables.
$node->safe_psql(
	'postgres', q{
CREATE ROLE etl LOGIN;
GRANT USAGE ON SCHEMA cron TO etl;
CREATE TABLE events (ts timestamptz NOT NULL, amount int NOT NULL);
INSERT INTO events
SELECT t, (extract(hour FROM t))::int
  FROM generate_series('2026-01-01 00:00+00'::timestamptz,
                       '2026-01-05 23:00+00', '1 hour') AS t;
CREATE TABLE daily (day timestamptz NOT NULL, total int NOT NULL);
-- what a broken pipeline left behind
INSERT INTO daily SELECT d, 0
  FROM generate_series('2026-01-01 00:00+00'::timestamptz,
                       '2026-01-05 00:00+00', '1 day') AS d;
GRANT SELECT ON events TO etl;
GRANT SELECT, INSERT, DELETE ON daily TO etl;
});

# The ETL role registers, plans (probed by default) and runs the probe.
my @etl = (extra_params => [ '-U', 'etl' ]);
$node->safe_psql(
	'postgres', q{
SET TimeZone = 'UTC';
SELECT backfill.register('daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM events WHERE ts >= $1 AND ts < $2 GROUP BY 1$$);
}, @etl);
my $run_id = $node->safe_psql(
	'postgres', q{
SET TimeZone = 'UTC';
SELECT backfill.plan('daily', '2026-01-01', '2026-01-06', note => 'cron test');
}, @etl);
like($run_id, qr/^\d+$/, 'run planned');

my ($ret, $out, $err) = $node->psql('postgres',
	"SELECT backfill.schedule($run_id, '* * * * *', chunks_per_tick => 2)",
	@etl);
isnt($ret, 0, 'scheduling before the probe is refused');
like($err, qr/before its probe chunk has run/, '... with the reason');

$node->safe_psql('postgres', "CALL backfill.run($run_id)", @etl);
is( $node->safe_psql(
		'postgres',
		"SELECT status || ' ' || (SELECT count(*) FROM backfill.chunks
		   WHERE run_id = $run_id AND status = 'pending')
		   FROM backfill.runs WHERE run_id = $run_id"),
	'probed 4',
	'probe chunk ran, four chunks remain');

# Schedule the rest: every minute, two chunks per tick.
my $job_id = $node->safe_psql('postgres',
	"SELECT backfill.schedule($run_id, '* * * * *', chunks_per_tick => 2)",
	@etl);
like($job_id, qr/^\d+$/, 'scheduled');
is( $node->safe_psql(
		'postgres',
		"SELECT username || '|' || command || '|' || jobname FROM cron.job WHERE jobid = $job_id"
	),
	"etl|CALL backfill.run($run_id, max_chunks => 2)|backfill_run_$run_id",
	'the job is the ETL role\'s and runs exactly the run call');

# Wait (bounded) for the run to finish on its own.
my $status = wait_for_value($node,
	"SELECT status FROM backfill.runs WHERE run_id = $run_id",
	sub { $_[0] ne 'probed' && $_[0] ne 'planned' }, 200);
is($status, 'done', 'the run finished on its own');

# The tick that finished the run parked its job (it never fires again; a
# job removed during its own tick is logged "job canceled" by pg_cron): the
# next sweep removes it, here cleanup_jobs.
is($node->safe_psql('postgres', "SELECT schedule FROM cron.job"),
	'0 0 31 2 *', 'its job is parked: it never fires again');
is($node->safe_psql('postgres', "SELECT job_name FROM backfill.cleanup_jobs()"),
	"backfill_run_$run_id", 'cleanup_jobs removes the parked job');
is($node->safe_psql('postgres', "SELECT count(*) FROM cron.job"),
	'0', 'no job is left');
is( $node->safe_psql(
		'postgres', "SELECT job_id IS NULL FROM backfill.runs WHERE run_id = $run_id"),
	't',
	'the run no longer names a job');

is( $node->safe_psql(
		'postgres',
		"SELECT string_agg(chunk_no || ':' || status || ':' || executed_by || ':' || executed_via, ',' ORDER BY chunk_no)
		   FROM backfill.chunks WHERE run_id = $run_id"),
	'1:done:etl:session,2:done:etl:pg_cron,3:done:etl:pg_cron,4:done:etl:pg_cron,5:done:etl:pg_cron',
	'every chunk executed as the scheduling role, the rest from pg_cron');

# Two chunks per tick: the four remaining chunks took two ticks (a minute
# apart), none more than two chunks.
my $ticks = $node->safe_psql(
	'postgres',
	"SELECT count(*) || ' ' || max(n) FROM (
	   SELECT date_trunc('minute', started_at), count(*) AS n
	     FROM backfill.chunks
	    WHERE run_id = $run_id AND executed_via = 'pg_cron' GROUP BY 1) t");
my ($nticks, $most) = split / /, $ticks;
ok($nticks >= 2, "scheduled chunks ran in $nticks ticks");
ok($most <= 2, "at most chunks_per_tick chunks per tick ($most)");

my $details = $node->safe_psql(
	'postgres',
	"SELECT count(*) FILTER (WHERE status = 'succeeded') || ' ' ||
	        count(*) FILTER (WHERE status <> 'succeeded') || ' ' ||
	        bool_and(username = 'etl')
	   FROM cron.job_run_details WHERE jobid = $job_id");
my ($succeeded, $other, $as_etl) = split / /, $details;
ok($succeeded >= 2, "cron.job_run_details shows $succeeded succeeded ticks");
is($other, '0', 'and no failed tick');
is($as_etl, 'true', 'all run as the ETL role');

is( $node->safe_psql(
		'postgres',
		"SELECT string_agg(to_char(day, 'MM-DD') || '=' || total, ',' ORDER BY day) FROM daily"),
	'01-01=276,01-02=276,01-03=276,01-04=276,01-05=276',
	'the target holds the rebuilt figures, once each');

$node->stop;
done_testing();
