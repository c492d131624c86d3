# Crash at random points of a run, in a loop (checklist F16, F17, F18).
#
# Each iteration resets the target to its "broken" state (placeholder
# rows in the range, untouched rows around it), plans a run, starts
# CALL backfill.run in the background and, after a random delay drawn from
# a seeded generator, kills it: mostly kill -9 of the backend running the
# run (the postmaster then restarts every backend: restart_after_crash),
# sometimes an immediate shutdown of the whole server.  After recovery:
#   - every chunk is either done, with exactly the source's rows in its
#     range, or pending, with exactly the old rows (nothing half-applied);
#   - nothing looks busy: no advisory lock is held, progress.pid is NULL;
#   - CALL backfill.run resumes and finishes the run, and the target then
#     equals the result of an uninterrupted run: 0 rows lost or doubled,
#     rows outside the range untouched.
#
# Each chunk of a run sleeps (table pause: 0.15 s while a run may be killed,
# 0 while a killed run is resumed), so that a run lasts about 4 s, long
# beside the time it takes to find its backend on a loaded machine; the
# first iteration kills the run as soon as its first chunk is done, so at
# least one kill lands in the middle of a run whatever the load.
#
#   BACKFILL_KILL_SEED=1234        replay a failing seed (printed below)
#   BACKFILL_KILL_ITERATIONS=20    number of kills
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep time);

my $seed = $ENV{BACKFILL_KILL_SEED} || int(time() * 1000 + $$) % 1000000;
my $iterations = $ENV{BACKFILL_KILL_ITERATIONS} || 20;
srand($seed);
diag("t/030_kill_random.pl: seed $seed (replay with BACKFILL_KILL_SEED=$seed)");
note("seed $seed");

my $node = backfill_node('kill', timezone => undef,
	conf => "restart_after_crash = on\n");

# Source: one row per 5 minutes with a value that no placeholder has; each
# chunk's source sleeps a little so that a run lasts long enough to be
# hit anywhere.  Target: placeholder zeros every 15 minutes in the range
# and marker rows outside it that must never change.
$node->safe_psql('postgres', q{
SET TimeZone = 'UTC';
CREATE TABLE src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO src
  SELECT t, 1 + extract(minute FROM t)::int
    FROM generate_series('2024-01-01 00:00+00'::timestamptz,
                         '2024-01-01 23:55+00', '5 minutes') t;
CREATE TABLE tgt (ts timestamptz NOT NULL, v int NOT NULL);
CREATE TABLE pause (seconds float8 NOT NULL);
INSERT INTO pause VALUES (0.15);
CREATE TABLE tgt_initial (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO tgt_initial
  SELECT t, 0 FROM generate_series('2024-01-01 00:00+00'::timestamptz,
                                   '2024-01-01 23:45+00', '15 minutes') t
  UNION ALL SELECT '2023-12-31 23:00+00', -1
  UNION ALL SELECT '2024-01-02 00:00+00', -2
  UNION ALL SELECT '2024-01-02 05:00+00', -3;
CREATE TABLE tgt_expected AS
  SELECT * FROM tgt_initial
   WHERE ts < '2024-01-01 00:00+00' OR ts >= '2024-01-02 00:00+00'
  UNION ALL SELECT * FROM src;
SELECT backfill.register('tgt', 'ts',
  $$SELECT s.ts, s.v
      FROM public.src s,
           (SELECT pg_catalog.pg_sleep(p.seconds) FROM public.pause p) AS pause
     WHERE s.ts >= $1 AND s.ts < $2$$,
  chunk => '1 hour');
});

# The target compared with a reference table: rows missing, rows extra.
sub diff_count
{
	my ($reference, $where) = @_;
	$where //= 'true';
	return $node->safe_psql('postgres', qq{
SELECT (SELECT count(*) FROM (SELECT ts, v FROM tgt WHERE $where
                              EXCEPT ALL SELECT ts, v FROM $reference WHERE $where) a)
     + (SELECT count(*) FROM (SELECT ts, v FROM $reference WHERE $where
                              EXCEPT ALL SELECT ts, v FROM tgt WHERE $where) b)});
}

sub reset_and_plan
{
	return $node->safe_psql('postgres', q{
SET TimeZone = 'UTC';
UPDATE pause SET seconds = 0.15;
TRUNCATE tgt;
INSERT INTO tgt SELECT * FROM tgt_initial;
SELECT backfill.plan('tgt', '2024-01-01 00:00+00', '2024-01-02 00:00+00',
                     probe => false);});
}

# Chunks that are neither cleanly done nor cleanly untouched.
sub bad_chunks
{
	my ($run) = @_;
	return $node->safe_psql('postgres', qq{
SELECT string_agg(format('chunk %s %s', c.chunk_no, c.status), ', ' ORDER BY c.chunk_no)
  FROM backfill.chunks c,
       LATERAL (SELECT count(*) AS n FROM (
                  (SELECT ts, v FROM tgt WHERE ts >= c.chunk_start AND ts < c.chunk_end
                   EXCEPT ALL
                   SELECT ts, v FROM src WHERE ts >= c.chunk_start AND ts < c.chunk_end)
                  UNION ALL
                  (SELECT ts, v FROM src WHERE ts >= c.chunk_start AND ts < c.chunk_end
                   EXCEPT ALL
                   SELECT ts, v FROM tgt WHERE ts >= c.chunk_start AND ts < c.chunk_end)) d
               ) vs_source,
       LATERAL (SELECT count(*) AS n FROM (
                  (SELECT ts, v FROM tgt WHERE ts >= c.chunk_start AND ts < c.chunk_end
                   EXCEPT ALL
                   SELECT ts, v FROM tgt_initial WHERE ts >= c.chunk_start AND ts < c.chunk_end)
                  UNION ALL
                  (SELECT ts, v FROM tgt_initial WHERE ts >= c.chunk_start AND ts < c.chunk_end
                   EXCEPT ALL
                   SELECT ts, v FROM tgt WHERE ts >= c.chunk_start AND ts < c.chunk_end)) d
               ) vs_initial
 WHERE c.run_id = $run
   AND NOT ((c.status = 'done' AND vs_source.n = 0
             AND c.rows_inserted = (SELECT count(*) FROM src
                                     WHERE ts >= c.chunk_start AND ts < c.chunk_end))
         OR (c.status = 'pending' AND vs_initial.n = 0))});
}

sub busy_runs
{
	return $node->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory')
     + (SELECT count(*) FROM backfill.progress WHERE pid IS NOT NULL)});
}

sub finish_run
{
	my ($run) = @_;
	for (1 .. 3)
	{
		$node->safe_psql('postgres', "CALL backfill.run($run)");
		last if $node->safe_psql('postgres',
			"SELECT status FROM backfill.runs WHERE run_id = $run") eq 'done';
	}
	return $node->safe_psql('postgres',
		"SELECT status FROM backfill.runs WHERE run_id = $run");
}

# A reference run without faults, timed to spread the kills over it.
my $run = reset_and_plan();
my $t0 = time();
is(finish_run($run), 'done', 'uninterrupted run finishes');
my $duration = time() - $t0;
is(diff_count('tgt_expected'), 0, 'uninterrupted run gives the expected target');
note(sprintf('an uninterrupted run takes %.2f s', $duration));

# After kill -9 of a backend: if the postmaster saw the crash, wait until it
# has reinitialised and accepts connections again.  (The backend may have
# finished on its own just before the kill: then there is no crash.)
sub wait_for_crash_restart
{
	my ($offset) = @_;
	my $start = time();
	while (time() - $start < 120)
	{
		my $log = substr(slurp_file($node->logfile), $offset);
		if ($log =~ /was terminated by signal 9/)
		{
			return if $log =~ /terminated by signal 9.*ready to accept connections/s
			  && $node->psql('postgres', 'SELECT 1') == 0;
		}
		elsif (time() - $start > 2)
		{
			return;
		}
		usleep(50_000);
	}
	die 'server did not restart after the crash';
}

my $psql = $node->installed_command('psql');
my %outcome = (before => 0, during => 0, after => 0);
for my $i (1 .. $iterations)
{
	$run = reset_and_plan();
	my $delay = rand($duration * 1.1);
	my $how = rand() < 0.25 ? 'immediate shutdown' : 'kill -9 of the backend';

	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ $psql, '-XAtq', '-d', $node->connstr('postgres') . ' application_name=bf_victim',
		  '-c', "CALL backfill.run($run)" ],
		'>', \$out, '2>', \$err);
	my $pid = '';
	my $wait_start = time();
	while ($pid eq '' && time() - $wait_start < 30)
	{
		$pid = $node->safe_psql('postgres',
			"SELECT pid FROM pg_stat_activity WHERE application_name = 'bf_victim'");
		usleep(2_000) if $pid eq '';
	}
	if ($i == 1)
	{
		# the first kill: as soon as the first chunk is done
		my $t = time();
		usleep(10_000)
		  while time() - $t < 30
		  && $node->safe_psql('postgres',
			"SELECT count(*) FROM backfill.chunks WHERE run_id = $run AND status = 'done'") == 0;
		$delay = time() - $t;
	}
	else
	{
		usleep(int($delay * 1_000_000));
	}

	if ($how eq 'immediate shutdown')
	{
		$node->stop('immediate');
		$node->start;
	}
	elsif ($pid ne '')
	{
		my $log_offset = -s $node->logfile;
		kill 'KILL', $pid;
		wait_for_crash_restart($log_offset);
	}
	$h->finish;
	# the resumed run need not be slow
	$node->safe_psql('postgres', 'UPDATE pause SET seconds = 0');

	my $done = $node->safe_psql('postgres',
		"SELECT count(*) FROM backfill.chunks WHERE run_id = $run AND status = 'done'");
	my $total = $node->safe_psql('postgres',
		"SELECT count(*) FROM backfill.chunks WHERE run_id = $run");
	$outcome{ $done == 0 ? 'before' : $done == $total ? 'after' : 'during' }++;
	my $what = sprintf('iteration %d (%s after %.3f s, %d/%d chunks done)',
		$i, $how, $delay, $done, $total);

	is(bad_chunks($run), '', "$what: every chunk is cleanly done or cleanly untouched");
	is(busy_runs(), 0, "$what: no run looks busy after the crash");
	is(finish_run($run), 'done', "$what: resumed run finishes");
	is(diff_count('tgt_expected'), 0, "$what: target equals an uninterrupted run (0 lost, 0 doubled)");
}
note("kills before the first chunk: $outcome{before}, during the run: $outcome{during}, after the last: $outcome{after}");
# The delays are spread over the duration of the reference run; how many
# land mid-run depends on the machine's load, but never none.
ok($outcome{during} >= 1, 'kills landed in the middle of a run');

$node->stop;
done_testing();
