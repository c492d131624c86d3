# Refresh jobs under pg_cron (issue 18, item 4): a refresh job scheduled
# every minute rebuilds the stale days of its lookback by itself.
#
# 1. Late rows arrive while a tick is rebuilding: the tick's chunk of day
#    D-3 is held mid-transaction (the gate of BackfillCluster), rows are
#    written into D-3 (racing it) and D-4 (not in its run), then the gate
#    opens.  Nothing is missed: the next tick rebuilds exactly D-3 (again,
#    for the racing row) and D-4; nothing is rebuilt twice without cause:
#    every rebuild has a reason, the days without a late row are never
#    rebuilt, and a later tick plans nothing and says so.
# 2. kill -9 during a refresh: the tick's chunk of D-2 is held, its backend
#    (a pg_cron background worker) is killed; after the restart the next
#    tick continues the same run, which ends done, and the target matches
#    its source.
#
# pg_cron 1.4 schedules by the minute: the waits are bounded (200 s each).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = backfill_node('refresh', cron => 1,
	conf => "restart_after_crash = on\n");

# Twenty days of payments up to the start of today, one per hour; the daily
# target built over all of them; the source passes through the gate.
$node->safe_psql('postgres', gate_sql() . q{
CREATE TABLE payments (paid_at timestamptz NOT NULL, amount int NOT NULL);
INSERT INTO payments
SELECT date_trunc('day', now()) - g * interval '1 hour', 1
  FROM generate_series(1, 24 * 20) g;
CREATE TABLE daily (day timestamptz NOT NULL, total int);
CREATE FUNCTION day_ago(k int) RETURNS timestamptz LANGUAGE sql STABLE
    AS $$SELECT date_trunc('day', now()) - k * interval '1 day'$$;
SELECT backfill.register('daily', 'day',
    $$SELECT $1 AS day, sum(amount)::int AS total
        FROM public.payments WHERE paid_at >= $1 AND paid_at < $2
         AND public.gate(paid_at)$$);
CALL backfill.backfill('daily', day_ago(20), day_ago(0));
SELECT backfill.watch('daily', 'payments', 'paid_at');
-- what daily should hold: the source, day by day
CREATE VIEW expected AS
SELECT d AS day, (SELECT sum(amount)::int FROM payments
                   WHERE paid_at >= d AND paid_at < d + interval '1 day') AS total
  FROM generate_series(day_ago(20), day_ago(1), '1 day') d;
-- how often each day was rebuilt by the refresh, and with a reason
CREATE VIEW rebuilds AS
SELECT extract(day FROM date_trunc('day', now()) - c.chunk_start)::int AS days_ago,
       count(*) AS builds, count(c.reason) AS with_reason
  FROM backfill.chunks c JOIN backfill.runs r USING (run_id)
 WHERE r.note LIKE 'refresh %' AND c.status = 'done'
 GROUP BY 1;
});

# A tick of the refresh whose chunk waits at the gate: its backend pid.
sub held_tick
{
	my ($what) = @_;
	my $pid = wait_for_value($node, q{
SELECT coalesce((SELECT pid FROM pg_locks WHERE locktype = 'advisory'
                  AND objid = 4242 AND NOT granted LIMIT 1), 0)},
		sub { $_[0] != 0 }, 200);
	isnt($pid, 0, $what);
	return $pid;
}

sub rebuilds
{
	return $node->safe_psql('postgres',
		q{SELECT string_agg(days_ago || ':' || builds || ':' || with_reason, ' '
		                    ORDER BY days_ago) FROM rebuilds});
}

# ---- 1. late rows while pg_cron refreshes ----
$node->safe_psql('postgres', q{
TRUNCATE gate_day; INSERT INTO gate_day SELECT day_ago(3);
INSERT INTO payments VALUES (day_ago(5) + interval '3 hours', 100),
                            (day_ago(3) + interval '4 hours', 100);
});
my $gate = $node->background_psql('postgres');
$gate->query_safe('SELECT pg_advisory_lock(4242)');
my $rid = $node->safe_psql('postgres',
	"SELECT backfill.schedule_refresh('daily', '* * * * *', lookback => '7 days')");
is($node->safe_psql('postgres', 'SELECT refresh_id FROM backfill.refreshes'),
	$rid, 'schedule_refresh returns the refresh id');
held_tick('a pg_cron tick of the refresh rebuilds D-3, held at the gate');
my $first_run = $node->safe_psql('postgres', 'SELECT last_run_id FROM backfill.refreshes');
is( $node->safe_psql('postgres',
		"SELECT string_agg(extract(day FROM day_ago(0) - chunk_start)::text, ',' ORDER BY chunk_start)
		   FROM backfill.chunks WHERE run_id = $first_run"),
	'5,3', 'the tick planned exactly the two stale days');

# late rows while the chunk of D-3 runs: into D-3 (racing it) and D-4
$node->safe_psql('postgres', q{
INSERT INTO payments VALUES (day_ago(3) + interval '5 hours', 1000),
                            (day_ago(4) + interval '6 hours', 1000);
});
$gate->query_safe('SELECT pg_advisory_unlock(4242)');
$gate->quit;

is( wait_for_value($node, "SELECT status FROM backfill.runs WHERE run_id = $first_run",
		sub { $_[0] eq 'done' }, 200),
	'done', 'the first refresh run finished');
my $second = wait_for_value($node, qq{
SELECT coalesce((SELECT max(run_id) FROM backfill.runs
                  WHERE note = 'refresh $rid' AND run_id > $first_run
                    AND status = 'done'), 0)},
	sub { $_[0] != 0 }, 200);
isnt($second, 0, 'a later tick planned and finished another run');
is( $node->safe_psql('postgres',
		"SELECT string_agg(extract(day FROM day_ago(0) - chunk_start)::text
		                   || ':' || (reason LIKE 'stale: source changed at %'), ','
		                   ORDER BY chunk_start)
		   FROM backfill.chunks WHERE run_id = $second"),
	'4:true,3:true',
	'it rebuilt D-4 and D-3 again (its racing row), each for a recorded change');
like( wait_for_value($node, 'SELECT last_message FROM backfill.refreshes',
		sub { $_[0] =~ /^nothing to refresh/ }, 200),
	qr/^nothing to refresh: no chunk of \[.*\) is stale$/,
	'then a tick finds nothing stale and says so');
is(table_diff($node, 'postgres', 'daily', 'expected', 'day >= day_ago(20)'),
	'0', 'nothing was missed: daily matches its source');
is(rebuilds(), '3:2:2 4:1:1 5:1:1',
	'only the days with late rows were rebuilt, D-3 twice, each with a reason');
is($node->safe_psql('postgres', q{SELECT count(*) FROM backfill.changed_regions}),
	'0', 'every recorded change was consumed');

# ---- 2. kill -9 during a refresh ----
$node->safe_psql('postgres', q{
TRUNCATE gate_day; INSERT INTO gate_day SELECT day_ago(2);
});
$gate = $node->background_psql('postgres');
$gate->query_safe('SELECT pg_advisory_lock(4242)');
$node->safe_psql('postgres', q{
INSERT INTO payments VALUES (day_ago(6) + interval '1 hour', 7),
                            (day_ago(2) + interval '1 hour', 7);
});
my $pid = held_tick('a tick rebuilds D-2, held at the gate');
my $killed_run = $node->safe_psql('postgres', 'SELECT last_run_id FROM backfill.refreshes');
crash_restart($node, 'postgres', $pid, 'kill -9 of the tick: ', $gate);

is( wait_for_value($node, "SELECT status FROM backfill.runs WHERE run_id = $killed_run",
		sub { $_[0] eq 'done' }, 200),
	'done', 'a tick after the restart continued the interrupted run to done');
is( $node->safe_psql('postgres',
		"SELECT string_agg(chunk_no || ':' || status || ':' || attempts, ',' ORDER BY chunk_no)
		   FROM backfill.chunks WHERE run_id = $killed_run"),
	'1:done:1,2:done:1',
	'D-6 built once before the crash, D-2 once after it (the killed attempt rolled back)');
is(table_diff($node, 'postgres', 'daily', 'expected', 'day >= day_ago(20)'),
	'0', 'after the crash daily matches its source');
is(rebuilds(), '2:1:1 3:2:2 4:1:1 5:1:1 6:1:1',
	'no day was rebuilt without cause');

$node->safe_psql('postgres', "SELECT backfill.unschedule_refresh($rid)");
is($node->safe_psql('postgres', 'SELECT count(*) FROM cron.job'), '0',
	'unschedule_refresh removed the job');
$node->stop;
done_testing();
