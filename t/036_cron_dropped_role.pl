# A scheduling role dropped while its jobs are scheduled (issue 10, item 6).
# pg_cron 1.4 starts such a job as a role that no longer exists: the job
# fails every tick ("FATAL: role ... does not exist") and only a superuser
# could remove it.  backfill removes the jobs it made for dropped roles at
# every backfill tick (of any run or check) and with the superuser function
# backfill.cleanup_jobs(), noting why on the run (progress.last_error) and
# on the check; pg_cron keeps running the other jobs.
#
# pg_cron 1.4 schedules by the minute: the wait is bounded (180 s).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = backfill_node('crondropped', cron => 1);
$node->safe_psql('postgres', q{
CREATE ROLE etl LOGIN;
CREATE ROLE idle LOGIN;
CREATE ROLE other LOGIN;
GRANT USAGE ON SCHEMA cron TO etl, idle, other;
CREATE TABLE events (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO events SELECT t, 1 FROM generate_series('2026-01-01 00:00+00'::timestamptz,
                                                    '2026-01-10 23:00+00', '1 hour') t;
CREATE TABLE tgt (ts timestamptz NOT NULL, v int NOT NULL);
CREATE TABLE tgt_idle (ts timestamptz NOT NULL, v int NOT NULL);
CREATE TABLE tgt2 (ts timestamptz NOT NULL, v int NOT NULL);
GRANT SELECT ON events TO etl, idle, other;
GRANT SELECT, INSERT, DELETE ON tgt TO etl;
GRANT SELECT, INSERT, DELETE ON tgt_idle TO idle;
GRANT SELECT, INSERT, DELETE ON tgt2 TO other;
});
my $src = q{$$SELECT ts, v FROM public.events WHERE ts >= $1 AND ts < $2$$};
$node->safe_psql('postgres', qq{
SET ROLE etl;
SELECT backfill.register('tgt', 'ts', $src);
SET ROLE idle;
SELECT backfill.register('tgt_idle', 'ts', $src);
SET ROLE other;
SELECT backfill.register('tgt2', 'ts', $src);
});

# 1. backfill.cleanup_jobs(): a job that never fires (February 30th) of a
#    dropped role is removed by a superuser's call, and only that one.
my $idle_run = $node->safe_psql('postgres',
	"SET ROLE idle; SELECT backfill.plan('tgt_idle', '2026-01-01', '2026-01-03', probe => false)");
$node->safe_psql('postgres',
	"SET ROLE idle; SELECT backfill.schedule($idle_run, '0 0 30 2 *')");
my ($rc, $out, $err) = $node->psql('postgres',
	"SET ROLE other; SELECT * FROM backfill.cleanup_jobs()");
like($err, qr/permission denied for function cleanup_jobs/,
	'cleanup_jobs is for superusers');
$node->safe_psql('postgres', 'DROP OWNED BY idle; DROP ROLE idle');
is($node->safe_psql('postgres',
		"SELECT job_name || ':' || username FROM backfill.cleanup_jobs()"),
	"backfill_run_$idle_run:idle", 'cleanup_jobs removed the dropped role\'s job');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM cron.job WHERE jobname = 'backfill_run_$idle_run'"),
	0, 'the job is gone from pg_cron');
is($node->safe_psql('postgres', qq{
SELECT status || ' | ' || coalesce(job_id::text, '-') || ' | ' || last_error
  FROM backfill.progress WHERE run_id = $idle_run}),
	"planned | - | scheduling role \"idle\" was dropped: its pg_cron job 1 (backfill_run_$idle_run) was removed",
	'progress shows why the run no longer moves');
is($node->safe_psql('postgres', "SELECT count(*) FROM backfill.cleanup_jobs()"),
	0, 'a second call finds nothing');

# 2. A tick sweeps: etl's run and standing check are scheduled every
#    minute, then etl is dropped.  pg_cron 1.4.2 then fails to reload its
#    job list ("role etl does not exist") until the jobs are gone.  The
#    next backfill tick of any run removes them: here a libpq-mode tick of
#    other's run (a session whose application_name is pg_cron, as pg_cron
#    connects with use_background_workers = off).
my $run = $node->safe_psql('postgres',
	"SET ROLE etl; SELECT backfill.plan('tgt', '2026-01-01', '2026-01-03', probe => false)");
my $run2 = $node->safe_psql('postgres',
	"SET ROLE other; SELECT backfill.plan('tgt2', '2026-01-01', '2026-01-10', probe => false)");
$node->safe_psql('postgres', "SET ROLE etl; SELECT backfill.schedule($run, '* * * * *', chunks_per_tick => 1)");
$node->safe_psql('postgres',
	"SET ROLE etl; SELECT backfill.schedule_check('tgt', '* * * * *', '3 days')");
my $check = $node->safe_psql('postgres',
	"SELECT check_id FROM backfill.checks WHERE target = 'tgt'::regclass");
$node->safe_psql('postgres', "SET ROLE other; SELECT backfill.schedule($run2, '* * * * *', chunks_per_tick => 1)");
is($node->safe_psql('postgres',
		"SELECT string_agg(jobname || ':' || username, ',' ORDER BY jobname) FROM cron.job"),
	"backfill_check_$check:etl,backfill_run_$run:etl,backfill_run_$run2:other",
	'three jobs, two of them etl\'s');
$node->safe_psql('postgres', 'DROP OWNED BY etl; DROP ROLE etl');

$node->safe_psql('postgres', qq{
SET application_name = 'pg_cron';
SET ROLE other;
SET client_min_messages = warning;
CALL backfill.run($run2, max_chunks => 1);
});
is($node->safe_psql('postgres',
		"SELECT string_agg(jobname || ':' || username, ',' ORDER BY jobname) FROM cron.job"),
	"backfill_run_$run2:other", 'the tick removed the dropped role\'s jobs, and only those');
is($node->safe_psql('postgres', qq{
SELECT coalesce(job_id::text, '-') || ' | ' || (last_error LIKE 'scheduling role "etl" was dropped: its pg_cron job % (backfill_run_$run) was removed')::text
  FROM backfill.progress WHERE run_id = $run}),
	'- | true', 'the run records why its job is gone (progress.last_error)');
is($node->safe_psql('postgres', qq{
SELECT coalesce(job_id::text, '-') || ' | ' || (last_error LIKE 'scheduling role "etl" was dropped: % (backfill_check_$check) was removed')::text
  FROM backfill.checks WHERE check_id = $check}),
	'- | true', 'the check records why its job is gone');
like(slurp_file($node->logfile), qr/backfill: scheduling role "etl" was dropped/,
	'the removal is in the server log');

# pg_cron runs the remaining job again, tick after tick.
ok($node->poll_query_until('postgres', qq{
SELECT count(*) >= 1 FROM backfill.chunks
 WHERE run_id = $run2 AND executed_via = 'pg_cron'}, 't'),
	'pg_cron ticks other\'s run again');
is($node->safe_psql('postgres', qq{
SELECT last_error IS NULL FROM backfill.progress WHERE run_id = $run2}),
	't', 'a run that ticks normally has no last_error');
$node->stop;
done_testing();
