# The scheduling roles of backfill's pg_cron jobs (issues 10 and 15).
# pg_cron 1.4 records a job's role by name only: a job whose role was
# dropped fails every tick ("FATAL: role ... does not exist"), and once
# pg_cron reloads its job list the scheduler itself fails, for every job of
# every user, until the job is gone.
#
# 1. The guard: a role that owns a backfill job holds a grant on the view
#    backfill.scheduled_jobs, so DROP ROLE is refused, the view named in
#    the detail.  The role's own DROP OWNED cannot take that grant away; a
#    superuser's REASSIGN OWNED; DROP OWNED does, and the event trigger
#    then removes the role's jobs at once, noting why on the run and the
#    check.  DROP ROLE succeeds, and pg_cron keeps running the other
#    roles' jobs.
# 2. pg_dump writes the guard's grant with the jobs, so a restore keeps it;
#    it goes when the role's last job goes.
# 3. A job without the guard (made by hand with cron.schedule, or restored
#    without privileges) of a dropped role is removed by every backfill
#    tick (of any run or check) and by backfill.cleanup_jobs(), noting why
#    on the run (progress.last_error).
#
# pg_cron 1.4 schedules by the minute: each wait is bounded (180 s).
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
CREATE ROLE other LOGIN;
GRANT USAGE ON SCHEMA cron TO etl, other;
CREATE TABLE events (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO events SELECT t, 1 FROM generate_series('2026-01-01 00:00+00'::timestamptz,
                                                    '2026-01-10 23:00+00', '1 hour') t;
CREATE TABLE tgt (ts timestamptz NOT NULL, v int NOT NULL);
CREATE TABLE tgt2 (ts timestamptz NOT NULL, v int NOT NULL);
GRANT SELECT ON events TO etl, other;
GRANT SELECT, INSERT, DELETE ON tgt TO etl;
GRANT SELECT, INSERT, DELETE ON tgt2 TO other;
});
my $src = q{$$SELECT ts, v FROM public.events WHERE ts >= $1 AND ts < $2$$};
$node->safe_psql('postgres', qq{
SET ROLE etl;
SELECT backfill.register('tgt', 'ts', $src);
SET ROLE other;
SELECT backfill.register('tgt2', 'ts', $src);
});

# 1. etl's run and standing check (February 30th: pg_cron never starts
#    them), and other's run, every minute, one chunk per tick.
my $run = $node->safe_psql('postgres',
	"SET ROLE etl; SELECT backfill.plan('tgt', '2026-01-01', '2026-01-03', probe => false)");
my $run2 = $node->safe_psql('postgres',
	"SET ROLE other; SELECT backfill.plan('tgt2', '2026-01-01', '2026-01-10', probe => false)");
$node->safe_psql('postgres', "SET ROLE etl; SELECT backfill.schedule($run, '0 0 30 2 *')");
$node->safe_psql('postgres',
	"SET ROLE etl; SELECT backfill.schedule_check('tgt', '0 0 30 2 *', '3 days')");
my $check = $node->safe_psql('postgres',
	"SELECT check_id FROM backfill.checks WHERE target = 'tgt'::regclass");
$node->safe_psql('postgres',
	"SET ROLE other; SELECT backfill.schedule($run2, '* * * * *', chunks_per_tick => 1)");
my ($rc, $out, $err) = $node->psql('postgres', 'DROP ROLE etl');
isnt($rc, 0, 'DROP ROLE of a role with scheduled runs and checks is refused');
like($err, qr/role "etl" cannot be dropped because some objects depend on it/,
	'... with PostgreSQL\'s message');
like($err, qr/privileges for view backfill\.scheduled_jobs/,
	'... naming backfill.scheduled_jobs');
is($node->safe_psql('postgres',
		"SELECT string_agg(kind || ':' || id || ':' || username, ',' ORDER BY kind, id) FROM backfill.scheduled_jobs"),
	"check:$check:etl,run:$run:etl,run:$run2:other",
	'backfill.scheduled_jobs lists the jobs and their roles');

# etl's own DROP OWNED cannot revoke a grant the extension made.
$node->psql('postgres', 'SET ROLE etl; DROP OWNED BY etl');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM cron.job WHERE username = 'etl'"),
	'2', 'the role\'s own DROP OWNED leaves its jobs and its guard');

# The usual way, as a superuser: the jobs go with DROP OWNED.
$node->safe_psql('postgres', 'REASSIGN OWNED BY etl TO CURRENT_USER; DROP OWNED BY etl');
is($node->safe_psql('postgres',
		"SELECT string_agg(jobname || ':' || username, ',' ORDER BY jobname) FROM cron.job"),
	"backfill_run_$run2:other", 'DROP OWNED removed etl\'s jobs, and only those');
is($node->safe_psql('postgres', qq{
SELECT coalesce(job_id::text, '-') || ' | ' || (last_error LIKE 'DROP OWNED revoked the grant of role "etl" on backfill.scheduled_jobs: its pg_cron job % (backfill_run_$run) was removed')::text
  FROM backfill.progress WHERE run_id = $run}),
	'- | true', 'the run records why its job is gone (progress.last_error)');
is($node->safe_psql('postgres', qq{
SELECT coalesce(job_id::text, '-') || ' | ' || (last_error LIKE 'DROP OWNED revoked the grant of role "etl" on backfill.scheduled_jobs: % (backfill_check_$check) was removed')::text
  FROM backfill.checks WHERE check_id = $check}),
	'- | true', 'the check records why its job is gone');
like(slurp_file($node->logfile), qr/backfill: DROP OWNED revoked the grant of role "etl"/,
	'the removal is in the server log');
$node->safe_psql('postgres', 'DROP ROLE etl');
pass('then DROP ROLE succeeds');

ok($node->poll_query_until('postgres', qq{
SELECT count(*) >= 1 FROM backfill.chunks
 WHERE run_id = $run2 AND executed_via = 'pg_cron'}, 't'),
	'pg_cron runs other\'s job');
unlike(slurp_file($node->logfile), qr/role "etl" does not exist/,
	'and never met a job of the dropped role');

# 2. pg_dump: the guard's grant is dumped (pg_init_privs records the
#    extension's own), so a restored cron.job keeps its roles undroppable.
my $connstr = $node->connstr('postgres');
my $dump = `pg_dump -s -d "$connstr"`;
like($dump, qr/GRANT SELECT ON TABLE backfill\.scheduled_jobs TO other;/,
	'pg_dump writes the guard of the role with a job');
$node->safe_psql('postgres', "SET ROLE other; SELECT backfill.unschedule($run2)");
$dump = `pg_dump -s -d "$connstr"`;
unlike($dump, qr/backfill\.scheduled_jobs TO other/,
	'the guard goes with the role\'s last job');

# 3. Jobs without the guard, of roles whose privileges come from a group
#    (so DROP ROLE finds nothing to refuse): made by hand with
#    cron.schedule and attached to the runs by a superuser, as a restore
#    without privileges would leave them.
$node->safe_psql('postgres', q{
CREATE ROLE lazy_grp;
GRANT USAGE ON SCHEMA cron TO lazy_grp;
GRANT SELECT ON events TO lazy_grp;
CREATE TABLE tgt_idle (ts timestamptz NOT NULL, v int NOT NULL);
CREATE TABLE tgt_lazy (ts timestamptz NOT NULL, v int NOT NULL);
GRANT SELECT, INSERT, DELETE ON tgt_idle, tgt_lazy TO lazy_grp;
CREATE ROLE idle LOGIN IN ROLE lazy_grp;
CREATE ROLE lazy LOGIN IN ROLE lazy_grp;
});
my %orphan;
for my $who ('idle', 'lazy')
{
	$node->safe_psql('postgres', "SET ROLE $who; SELECT backfill.register('tgt_$who', 'ts', $src)");
	my $r = $node->safe_psql('postgres',
		"SET ROLE $who; SELECT backfill.plan('tgt_$who', '2026-01-01', '2026-01-03', probe => false)");
	my $job = $node->safe_psql('postgres', qq{
SET ROLE $who;
SELECT cron.schedule('backfill_run_$r', '0 0 30 2 *', 'CALL backfill.run($r, max_chunks => 1)')});
	$node->safe_psql('postgres',
		"UPDATE backfill.runs SET job_id = $job, scheduled_by = '$who' WHERE run_id = $r");
	$node->safe_psql('postgres', "DROP ROLE $who");
	$orphan{$who} = [ $r, $job ];
}

($rc, $out, $err) = $node->psql('postgres',
	"SET ROLE other; SELECT * FROM backfill.cleanup_jobs()");
like($err, qr/permission denied for function cleanup_jobs/,
	'cleanup_jobs is for superusers');

# A backfill tick of another run removes them: here a libpq-mode tick of
# other's run (a session whose application_name is pg_cron, as pg_cron
# connects with use_background_workers = off), scheduled again.
$node->safe_psql('postgres',
	"SET ROLE other; SELECT backfill.schedule($run2, '* * * * *', chunks_per_tick => 1)");
$node->safe_psql('postgres', qq{
SET application_name = 'pg_cron';
SET ROLE other;
SET client_min_messages = warning;
CALL backfill.run($run2, max_chunks => 1);
});
is($node->safe_psql('postgres',
		"SELECT string_agg(jobname || ':' || username, ',' ORDER BY jobname) FROM cron.job"),
	"backfill_run_$run2:other", 'the tick removed the dropped roles\' jobs, and only those');
is($node->safe_psql('postgres', qq{
SELECT status || ' | ' || coalesce(job_id::text, '-') || ' | ' || last_error
  FROM backfill.progress WHERE run_id = $orphan{idle}[0]}),
	"planned | - | scheduling role \"idle\" was dropped: its pg_cron job $orphan{idle}[1] (backfill_run_$orphan{idle}[0]) was removed",
	'progress shows why the run no longer moves');
like(slurp_file($node->logfile), qr/backfill: scheduling role "lazy" was dropped/,
	'the removal is in the server log');
is($node->safe_psql('postgres', "SELECT count(*) FROM backfill.cleanup_jobs()"),
	'0', 'cleanup_jobs finds nothing left');

# cleanup_jobs alone, without a tick: one more job of a dropped role.
$node->safe_psql('postgres', 'CREATE ROLE idle LOGIN IN ROLE lazy_grp');
my $job = $node->safe_psql('postgres', qq{
SET ROLE idle;
SELECT cron.schedule('backfill_run_$orphan{idle}[0]', '0 0 30 2 *',
                     'CALL backfill.run($orphan{idle}[0], max_chunks => 1)')});
$node->safe_psql('postgres',
	"UPDATE backfill.runs SET job_id = $job WHERE run_id = $orphan{idle}[0]");
$node->safe_psql('postgres', 'DROP ROLE idle');
is($node->safe_psql('postgres',
		"SELECT job_name || ':' || username FROM backfill.cleanup_jobs()"),
	"backfill_run_$orphan{idle}[0]:idle", 'cleanup_jobs removed the dropped role\'s job');
is($node->safe_psql('postgres', "SELECT count(*) FROM backfill.cleanup_jobs()"),
	'0', 'a second call finds nothing');

# pg_cron runs the remaining job again, tick after tick.
my $before = $node->safe_psql('postgres', qq{
SELECT count(*) FROM backfill.chunks WHERE run_id = $run2 AND executed_via = 'pg_cron'});
ok($node->poll_query_until('postgres', qq{
SELECT count(*) > $before FROM backfill.chunks
 WHERE run_id = $run2 AND executed_via = 'pg_cron'}, 't'),
	'pg_cron ticks other\'s run again');
is($node->safe_psql('postgres', qq{
SELECT last_error IS NULL FROM backfill.progress WHERE run_id = $run2}),
	't', 'a run that ticks normally has no last_error');
$node->stop;
done_testing();
