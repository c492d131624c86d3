# pg_cron in another database (issue 29, item 2): pg_cron lives in database
# postgres (cron.database_name's default), where a cluster's other jobs
# already run; backfill is installed in two other databases, db_a and
# db_b.  The one step of an administrator is the grant of the README
# (GRANT USAGE ON SCHEMA cron TO etl), made in pg_cron's database; nothing
# is done in db_a or db_b but CREATE EXTENSION backfill.
#
# 1. Before the grant, schedule is refused, naming it; after it, in both
#    databases, a run, a group (daily then monthly), a standing check and
#    a refresh are scheduled by the role etl, and pg_cron ticks them: each
#    tick runs in its own database as etl (executed_by etl, executed_via
#    pg_cron), every tick "succeeded"; the jobs are pg_cron's rows in
#    postgres, for their database and etl, named with the database's OID.
# 2. The job of a finished run is parked by its next tick and removed by a
#    later sweep, each database only its own.
# 3. The guard: DROP ROLE etl is refused while it has jobs; a superuser's
#    DROP OWNED in db_a removes db_a's jobs in postgres, not db_b's.
# 4. cron.database_name naming a database without pg_cron: schedule says
#    so, and where to create it.
#
# pg_cron 1.4 schedules by the minute: every wait is bounded (240 s).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = backfill_node('elsewhere', cron => 1, extension => 0);
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_cron;
CREATE ROLE etl LOGIN;
CREATE DATABASE db_a;
CREATE DATABASE db_b;
-- another team's job, already there
SELECT cron.schedule('vacuum_nightly', '0 3 * * *', 'VACUUM');
});
my %oid;
for my $db (qw(db_a db_b))
{
	$oid{$db} = $node->safe_psql('postgres',
		"SELECT oid FROM pg_database WHERE datname = '$db'");
	$node->safe_psql($db, q{
CREATE EXTENSION backfill;
CREATE TABLE events (ts timestamptz NOT NULL, amount int NOT NULL);
INSERT INTO events
SELECT t, 1 FROM generate_series('2026-01-01 00:00+00'::timestamptz,
                                 '2026-01-31 23:00+00', '1 hour') AS t;
-- the recent days, which a refresh job watches
CREATE TABLE recent_events (ts timestamptz NOT NULL, amount int NOT NULL);
INSERT INTO recent_events
SELECT t, 1 FROM generate_series(date_trunc('day', now()) - interval '10 days',
                                 date_trunc('day', now()) - interval '1 hour',
                                 '1 hour') AS t;
CREATE TABLE daily (day timestamptz NOT NULL, total int NOT NULL);
CREATE TABLE monthly (month timestamptz NOT NULL, total int NOT NULL);
CREATE TABLE recent (day timestamptz NOT NULL, total int NOT NULL);
GRANT SELECT ON events, recent_events TO etl;
GRANT TRIGGER ON recent_events TO etl;      -- watch puts its triggers there
GRANT SELECT, INSERT, DELETE ON daily, monthly, recent TO etl;
});
}

# The value of SQL in database DB, read every second until DONE->(value)
# or SECONDS have passed.
sub wait_in
{
	my ($db, $sql, $done, $seconds) = @_;
	my $deadline = time() + $seconds;
	my $value;
	while (1)
	{
		$value = $node->safe_psql($db, $sql);
		last if $done->($value) || time() >= $deadline;
		usleep(1_000_000);
	}
	return $value;
}

my @etl = (extra_params => [ '-U', 'etl' ]);
my $register = q{
SET TimeZone = 'UTC';
SELECT backfill.register('daily', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM public.events WHERE ts >= $1 AND ts < $2 GROUP BY 1$$);
SELECT backfill.register('monthly', 'month',
    $$SELECT date_trunc('month', day) AS month, sum(total)::int AS total
        FROM public.daily WHERE day >= $1 AND day < $2 GROUP BY 1$$, chunk => '1 month');
SELECT backfill.depend('monthly', 'daily');
SELECT backfill.register('recent', 'day',
    $$SELECT date_trunc('day', ts) AS day, sum(amount)::int AS total
        FROM public.recent_events WHERE ts >= $1 AND ts < $2 GROUP BY 1$$);
SELECT backfill.watch('recent', 'recent_events', 'ts');
SET client_min_messages = warning;
-- built once, so that late rows behind its watermark are recorded
CALL backfill.backfill('recent', date_trunc('day', now()) - interval '10 days',
                       date_trunc('day', now()));
};
my (%run, %group);
for my $db (qw(db_a db_b))
{
	$node->safe_psql($db, $register, @etl);
	# a run over three days of January, its probe done
	$run{$db} = $node->safe_psql($db, q{
SET TimeZone = 'UTC';
SELECT backfill.plan('daily', '2026-01-01', '2026-01-04');
}, @etl);
	$node->safe_psql($db, "CALL backfill.run($run{$db})", @etl);
}

# ---- 1. before and after the administrator's one step ----
my ($ret, $out, $err) = $node->psql('db_a',
	"SELECT backfill.schedule($run{db_a}, '* * * * *', chunks_per_tick => 2)", @etl);
isnt($ret, 0, 'without USAGE on schema cron in pg_cron\'s database, schedule is refused');
like($err, qr/permission denied for schema cron in database "postgres"/, '... naming the database');
like($err, qr/GRANT USAGE ON SCHEMA cron TO etl, run in database "postgres"/,
	'... and the one grant');
is($node->safe_psql('postgres', "SELECT count(*) FROM cron.job WHERE username = 'etl'"),
	'0', '... and no job is made');

$node->safe_psql('postgres', 'GRANT USAGE ON SCHEMA cron TO etl');

my (%job, %check_job, %refresh_job);
for my $db (qw(db_a db_b))
{
	$job{$db} = $node->safe_psql($db,
		"SELECT backfill.schedule($run{$db}, '* * * * *', chunks_per_tick => 2)", @etl);
	like($job{$db}, qr/^\d+$/, "$db: the run is scheduled");
	# a cascading group: days of January, then the month built from them
	$group{$db} = $node->safe_psql($db, q{
SET TimeZone = 'UTC';
SELECT backfill.plan('daily', '2026-01-10', '2026-01-13', cascade => true);
}, @etl);
	$node->safe_psql($db, "CALL backfill.run_group($group{$db})", @etl);
	is($node->safe_psql($db,
			"SELECT backfill.schedule_group($group{$db}, '* * * * *', chunks_per_tick => 2)", @etl),
		'2', "$db: the group's two runs are scheduled");
	$check_job{$db} = $node->safe_psql($db,
		"SELECT backfill.schedule_check('daily', '* * * * *', '3 days')", @etl);
	$refresh_job{$db} = $node->safe_psql($db,
		"SELECT backfill.schedule_refresh('recent', '* * * * *', lookback => '3 days')", @etl);
	# a late row for the refresh to rebuild
	$node->safe_psql($db,
		"INSERT INTO recent_events VALUES (date_trunc('day', now()) - interval '2 days' + interval '30 minutes', 5)");
}
is( $node->safe_psql('postgres', q{
SELECT string_agg(database || ' ' || username || ' ' ||
                  regexp_replace(jobname, '_\d+@', '_N@'), ', ' ORDER BY database, jobid)
  FROM cron.job WHERE username = 'etl'}),
	"db_a etl backfill_run_N\@$oid{db_a}, db_a etl backfill_run_N\@$oid{db_a}, "
	  . "db_a etl backfill_run_N\@$oid{db_a}, db_a etl backfill_check_N\@$oid{db_a}, "
	  . "db_a etl backfill_refresh_N\@$oid{db_a}, "
	  . "db_b etl backfill_run_N\@$oid{db_b}, db_b etl backfill_run_N\@$oid{db_b}, "
	  . "db_b etl backfill_run_N\@$oid{db_b}, db_b etl backfill_check_N\@$oid{db_b}, "
	  . "db_b etl backfill_refresh_N\@$oid{db_b}",
	'the jobs are pg_cron\'s rows in postgres, for their database and etl, named with its OID');
is( $node->safe_psql('postgres',
		"SELECT command FROM cron.job WHERE jobid = $job{db_b}"),
	"CALL backfill.run($run{db_b}, max_chunks => 2)",
	'a job\'s command holds only integers');

# pg_cron ticks them, each in its own database, as etl.
for my $db (qw(db_a db_b))
{
	is( wait_in($db, "SELECT status FROM backfill.runs WHERE run_id = $run{$db}",
			sub { $_[0] eq 'done' || $_[0] eq 'failed' }, 240),
		'done', "$db: the scheduled run finished on its own");
	is( wait_in($db, "SELECT status FROM backfill.group_progress WHERE group_id = $group{$db}",
			sub { $_[0] eq 'done' || $_[0] eq 'failed' }, 240),
		'done', "$db: the group finished on its own, in dependency order");
	is( $node->safe_psql($db, qq{
SELECT string_agg(DISTINCT executed_by || ' ' || executed_via, ',')
  FROM backfill.chunks
 WHERE status = 'done' AND chunk_no > 1
   AND run_id IN (SELECT run_id FROM backfill.runs
                   WHERE run_id = $run{$db} OR group_id = $group{$db})}),
		'etl pg_cron', "$db: the scheduled chunks (all but the probes) ran as etl, from pg_cron");
	like( wait_in($db, 'SELECT count(*) FROM backfill.check_results',
			sub { $_[0] > 0 }, 240),
		qr/^[1-9]/, "$db: the standing check ticked");
	is($node->safe_psql($db, 'SELECT DISTINCT checked_by FROM backfill.check_results'),
		'etl', "$db: ... as etl");
	is( wait_in($db, q{
SELECT count(*) FROM backfill.chunks c JOIN backfill.runs r USING (run_id)
 WHERE r.note LIKE 'refresh %' AND c.status = 'done'
   AND c.chunk_start = date_trunc('day', now()) - interval '2 days'
   AND c.executed_by = 'etl' AND c.executed_via = 'pg_cron'},
			sub { $_[0] ne '0' }, 240),
		'1', "$db: the refresh rebuilt the late day, as etl, from pg_cron");
	is($node->safe_psql($db, 'SELECT count(*) FROM backfill.progress'),
		'0', "$db: nothing is left in progress, nothing stalled");
}
like( $node->safe_psql('postgres', q{
SELECT count(*) FILTER (WHERE status <> 'succeeded') || ' failed, ' ||
       (count(*) FILTER (WHERE status = 'succeeded') > 6) || ' ' ||
       bool_and(username = 'etl') || ' ' || string_agg(DISTINCT database, ',')
  FROM cron.job_run_details d
 WHERE d.status IN ('succeeded', 'failed')}),
	qr/^0 failed, true true db_a,db_b$/,
	'pg_cron logged every tick succeeded, as etl, in db_a and db_b');

# ---- 2. finished runs' jobs: parked by their next tick, then removed ----
for my $db (qw(db_a db_b))
{
	is( wait_in($db, q{
SELECT count(*) FROM backfill.runs WHERE job_id IS NOT NULL AND status = 'done'},
			sub { $_[0] eq '0' }, 240),
		'0', "$db: the finished runs' jobs are gone");
}
is( $node->safe_psql('postgres', q{
SELECT string_agg(database || ' ' || regexp_replace(jobname, '_\d+@\d+', ''), ', '
                  ORDER BY database, jobname)
  FROM cron.job WHERE username = 'etl'}),
	'db_a backfill_check, db_a backfill_refresh, db_b backfill_check, db_b backfill_refresh',
	'... in postgres too: the checks\' and refreshes\' jobs remain');
is($node->safe_psql('postgres', "SELECT jobname FROM cron.job WHERE username <> 'etl'"),
	'vacuum_nightly', 'the other team\'s job is untouched');

# ---- 3. the guard across databases ----
($ret, $out, $err) = $node->psql('postgres', 'DROP ROLE etl');
isnt($ret, 0, 'DROP ROLE etl is refused while it has jobs');
like($err, qr/objects? in database db_a/, '... for its grant in db_a');
$node->safe_psql('db_a', 'DROP OWNED BY etl');
is( $node->safe_psql('postgres', q{
SELECT string_agg(DISTINCT database, ',') FROM cron.job WHERE username = 'etl'}),
	'db_b', 'DROP OWNED in db_a removed db_a\'s jobs in postgres, not db_b\'s');
like( $node->safe_psql('db_a', 'SELECT last_error FROM backfill.checks'),
	qr/^DROP OWNED revoked the grant of role "etl" on backfill.scheduled_jobs: its pg_cron job \d+ \(backfill_check_1\@$oid{db_a}\) was removed$/,
	'... and the check says why');
is($node->safe_psql('postgres', "SELECT count(*) FROM cron.job WHERE database = 'db_b'"),
	'2', 'db_b keeps its jobs');

# ---- 4. cron.database_name naming a database without pg_cron ----
$node->safe_psql('postgres', 'CREATE DATABASE nocron');
$node->append_conf('postgresql.conf', "cron.database_name = 'nocron'\n");
$node->restart;
my $run_b = $node->safe_psql('db_b', q{
SET TimeZone = 'UTC';
SELECT backfill.plan('daily', date_trunc('day', now()) - interval '3 days',
                     date_trunc('day', now()) - interval '2 days', probe => false);
}, @etl);
($ret, $out, $err) = $node->psql('db_b',
	"SELECT backfill.schedule($run_b, '* * * * *')", @etl);
isnt($ret, 0, 'with pg_cron not installed in cron.database_name, schedule is refused');
like($err, qr/ERROR:  pg_cron is not installed in database "nocron"/, '... naming that database');
like($err, qr/HINT:  Run CREATE EXTENSION pg_cron in database "nocron"/, '... and what to do');

$node->stop;
done_testing();
