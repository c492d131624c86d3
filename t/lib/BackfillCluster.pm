# The setup that backfill's TAP tests share: a started cluster with the
# extension (and pg_cron, for the tests of scheduled work), and the helpers
# of the crash tests (a call held mid-chunk at a gate, a killed backend,
# the difference of two tables) and of the pg_cron tests (a bounded wait).
#
# Load it with
#	use FindBin;
#	use lib "$FindBin::RealBin/lib";
#	use BackfillCluster;
package BackfillCluster;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

our @EXPORT = qw(backfill_node gate_sql start_gated forget_session
  crash_restart table_diff wait_for_value early_in_minute);

# backfill_node(NAME, OPTIONS) -> a started PostgreSQL::Test::Cluster with
# CREATE EXTENSION backfill done in database postgres.  OPTIONS:
#   cron      => 1: pg_cron preloaded for database postgres, with
#                background workers, and created there (before backfill)
#   preload   => the libraries to preload instead of pg_cron alone (they
#                must include it: 'citus,pg_cron'); the cron settings as above
#   timezone  => the server's TimeZone; 'UTC' unless given (undef: none set)
#   conf      => more postgresql.conf lines
#   init      => options of init (allows_streaming => 1, ...)
#   extension => 0: create no extension
sub backfill_node
{
	my ($name, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	my $tz = exists $opt{timezone} ? $opt{timezone} : 'UTC';
	my $conf = '';

	$node->init(%{ $opt{init} || {} });
	if ($opt{cron} || $opt{preload})
	{
		$conf .= "shared_preload_libraries = '" . ($opt{preload} || 'pg_cron') . "'\n";
		$conf .= "cron.database_name = 'postgres'\n"
		  . "cron.use_background_workers = on\n"
		  . "max_worker_processes = 20\n";
	}
	$conf .= "TimeZone = '$tz'\n" if defined $tz;
	$conf .= $opt{conf} if defined $opt{conf};
	$node->append_conf('postgresql.conf', $conf) if $conf ne '';
	$node->start;
	if (!exists $opt{extension} || $opt{extension})
	{
		$node->safe_psql('postgres',
			($opt{cron} ? "CREATE EXTENSION pg_cron;\n" : '')
			  . 'CREATE EXTENSION backfill;');
	}
	return $node;
}

# The gate of the crash tests: a source that calls public.gate(t) waits, on
# the days listed in gate_day, while another session holds advisory lock
# 4242; so a chunk is held mid-transaction deterministically.
sub gate_sql
{
	return q{
CREATE TABLE gate_day (day timestamptz);
CREATE FUNCTION gate(t timestamptz) RETURNS bool LANGUAGE plpgsql VOLATILE AS
$$
BEGIN
    IF EXISTS (SELECT FROM public.gate_day g
                WHERE t >= g.day AND t < g.day + interval '1 day') THEN
        PERFORM pg_advisory_xact_lock_shared(4242);
    END IF;
    RETURN true;
END
$$;
};
}

# start_gated(NODE, DB, CALL, DAY, WHAT) -> (gate session, runner session,
# runner pid): close the gate on DAY, start CALL (a CALL statement) in the
# background, and wait until it waits at the gate (an ok named WHAT,
# bounded by poll_query_until's timeout).
sub start_gated
{
	my ($node, $db, $call, $day, $what) = @_;
	$node->safe_psql($db, "TRUNCATE gate_day; INSERT INTO gate_day VALUES ('$day')");
	my $gate = $node->background_psql($db);
	$gate->query_safe('SELECT pg_advisory_lock(4242)');
	my $runner = $node->background_psql($db, on_error_stop => 0);
	my $pid = $runner->query_safe('SELECT pg_backend_pid()');
	chomp $pid;
	$runner->query_until(qr/started/, "\\echo started\n$call;\n");
	ok( $node->poll_query_until($db, qq{
SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242
                AND NOT granted AND pid = $pid)}),
		$what);
	return ($gate, $runner, $pid);
}

# A session that died with the server: end its psql without caring.
sub forget_session
{
	my ($session) = @_;
	eval { $session->{run}->kill_kill; };
	return;
}

# crash_restart(NODE, DB, PID, PREFIX, SESSIONS...): kill -9 the backend
# PID, forget the sessions, and wait for the server to restart and accept
# connections again (two oks, their names starting with PREFIX).
sub crash_restart
{
	my ($node, $db, $pid, $prefix, @sessions) = @_;
	my $log_offset = -s $node->logfile;
	kill 'KILL', $pid;
	forget_session($_) for @sessions;
	# Wait for the log line of the end of crash recovery, not only for the
	# restart: a psql started while the server still refuses connections
	# can exit before reading its stdin, and IPC::Run then dies of EPIPE.
	ok( $node->wait_for_log(
			qr/all server processes terminated; reinitializing.*database system is ready to accept connections/s,
			$log_offset),
		"${prefix}the server restarts after the crash");
	ok($node->poll_query_until($db, 'SELECT true'),
		"${prefix}the server accepts connections again");
	return;
}

# table_diff(NODE, DB, T1, T2, WHERE) -> the rows of T1 missing from T2
# plus those of T2 missing from T1 (as bags), among the rows where WHERE
# holds (all rows without it).
sub table_diff
{
	my ($node, $db, $t1, $t2, $where) = @_;
	$where //= 'true';
	return $node->safe_psql($db, qq{
SELECT (SELECT count(*) FROM (SELECT * FROM $t1 WHERE $where
                              EXCEPT ALL SELECT * FROM $t2 WHERE $where) a)
     + (SELECT count(*) FROM (SELECT * FROM $t2 WHERE $where
                              EXCEPT ALL SELECT * FROM $t1 WHERE $where) b)});
}

# wait_for_value(NODE, SQL, DONE, SECONDS) -> the last value of SQL in
# database postgres, read every second until DONE->(value) is true or
# SECONDS have passed (pg_cron ticks by the minute: the waits are bounded).
sub wait_for_value
{
	my ($node, $sql, $done, $seconds) = @_;
	my $deadline = time() + $seconds;
	my $value;
	while (1)
	{
		$value = $node->safe_psql('postgres', $sql);
		last if $done->($value) || time() >= $deadline;
		usleep(1_000_000);
	}
	return $value;
}

# early_in_minute() -> waits, when the current second of the minute is past
# 40, for the next minute to begin: pg_cron ticks at second 0, so what a
# test does next (schedule, then take a right away) has at least 20 s
# before the first tick, however loaded the machine.
sub early_in_minute
{
	my $second = (gmtime())[0];
	sleep(61 - $second) if $second > 40;
	return;
}

1;
