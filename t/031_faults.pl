# Faults inside a chunk (checklist F19, F20, F23).
#
# The source of chunk k waits on an advisory lock held by the test, which
# pauses the run mid-chunk deterministically; then:
#   - pg_cancel_backend: 57014 reaches the caller, the chunk is rolled back
#     and stays pending with its attempts unchanged, earlier chunks stay
#     done, and CALL backfill.run resumes;
#   - pg_terminate_backend: the session ends (57P01), no lock is left and
#     another session resumes at once;
#   (statement_timeout across a run is in sql/13_run_failures.sql);
#   - disk full (a tablespace on a tiny tmpfs, prepared by scripts/test.sh
#     when it runs as root; skipped otherwise): 53100 is recorded on the
#     chunk, its old rows are kept, and the run finishes once there is
#     space again.
# After each: every chunk is either done with exactly the source's rows
# or untouched, nothing looks busy, and the finished target equals an
# uninterrupted run.
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

my $node = backfill_node('faults', timezone => undef);

$node->safe_psql('postgres', q{
ALTER DATABASE postgres SET TimeZone = 'UTC';
CREATE TABLE ctl (gate_from timestamptz);
INSERT INTO ctl VALUES ('infinity');
-- Called once per chunk by the source: from gate_from on, wait for the
-- test's advisory lock 4242.
CREATE FUNCTION gate(lo timestamptz) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF lo >= (SELECT gate_from FROM public.ctl) THEN
        PERFORM pg_catalog.pg_advisory_xact_lock_shared(4242);
    END IF;
    RETURN true;
END $$;
CREATE TABLE src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO src SELECT t, 1 FROM generate_series('2024-01-01 00:00+00'::timestamptz,
                                                 '2024-01-04 23:00+00', '1 hour') t;
CREATE TABLE tgt (ts timestamptz NOT NULL, v int NOT NULL);
CREATE TABLE tgt_initial AS
  SELECT t AS ts, 0 AS v FROM generate_series('2023-12-31 00:00+00'::timestamptz,
                                              '2024-01-05 22:00+00', '2 hours') t;
CREATE TABLE tgt_expected AS
  SELECT * FROM tgt_initial WHERE ts < '2024-01-01 00:00+00' OR ts >= '2024-01-05 00:00+00'
  UNION ALL SELECT * FROM src;
SELECT backfill.register('tgt', 'ts',
  $$SELECT s.ts, s.v FROM public.src s, (SELECT public.gate($1) AS ok) g
     WHERE g.ok AND s.ts >= $1 AND s.ts < $2$$,
  chunk => '1 day');
});

sub reset_and_plan
{
	my ($gate_from) = @_;
	return $node->safe_psql('postgres', qq{
UPDATE ctl SET gate_from = '$gate_from';
TRUNCATE tgt;
INSERT INTO tgt SELECT * FROM tgt_initial;
SELECT backfill.plan('tgt', '2024-01-01 00:00+00', '2024-01-05 00:00+00', probe => false);});
}

# Chunks neither cleanly done nor cleanly untouched (with their status).
sub bad_chunks
{
	my ($run) = @_;
	return $node->safe_psql('postgres', qq{
SELECT string_agg(format('chunk %s %s', c.chunk_no, c.status), ', ' ORDER BY c.chunk_no)
  FROM backfill.chunks c,
       LATERAL (SELECT count(*) AS n FROM (
                  (SELECT ts, v FROM tgt WHERE ts >= c.chunk_start AND ts < c.chunk_end
                   EXCEPT ALL SELECT ts, v FROM src WHERE ts >= c.chunk_start AND ts < c.chunk_end)
                  UNION ALL
                  (SELECT ts, v FROM src WHERE ts >= c.chunk_start AND ts < c.chunk_end
                   EXCEPT ALL SELECT ts, v FROM tgt WHERE ts >= c.chunk_start AND ts < c.chunk_end)) d
               ) vs_source,
       LATERAL (SELECT count(*) AS n FROM (
                  (SELECT ts, v FROM tgt WHERE ts >= c.chunk_start AND ts < c.chunk_end
                   EXCEPT ALL SELECT ts, v FROM tgt_initial WHERE ts >= c.chunk_start AND ts < c.chunk_end)
                  UNION ALL
                  (SELECT ts, v FROM tgt_initial WHERE ts >= c.chunk_start AND ts < c.chunk_end
                   EXCEPT ALL SELECT ts, v FROM tgt WHERE ts >= c.chunk_start AND ts < c.chunk_end)) d
               ) vs_initial
 WHERE c.run_id = $run
   AND NOT ((c.status = 'done' AND vs_source.n = 0)
         OR (c.status IN ('pending', 'failed') AND vs_initial.n = 0))});
}

sub target_diff
{
	return $node->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM (SELECT * FROM tgt EXCEPT ALL SELECT * FROM tgt_expected) a)
     + (SELECT count(*) FROM (SELECT * FROM tgt_expected EXCEPT ALL SELECT * FROM tgt) b)});
}

sub chunk_states
{
	my ($run) = @_;
	return $node->safe_psql('postgres', qq{
SELECT string_agg(format('%s:%s/%s', chunk_no, status, attempts), ' ' ORDER BY chunk_no)
  FROM backfill.chunks WHERE run_id = $run});
}

# Advisory locks held by anyone but the test's holder session (pid given).
sub locks_left
{
	my ($except_pid) = @_;
	$except_pid //= 0;
	return $node->safe_psql('postgres', qq{
SELECT (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid <> $except_pid
           AND NOT (classid = 0 AND objid = 4242))
     + (SELECT count(*) FROM backfill.progress WHERE pid IS NOT NULL)});
}

my $psql = $node->installed_command('psql');

# Start CALL backfill.run(run) in the background; returns the handle, the
# output refs and the backend pid.
sub start_victim
{
	my ($run) = @_;
	my ($out, $err) = ('', '');
	my $conn = $node->connstr('postgres') . ' application_name=bf_victim';
	my $h = IPC::Run::start([ $psql, '-XAtq', '-d', $conn, '-c', "CALL backfill.run($run)" ],
		'>', \$out, '2>', \$err);
	my $pid = '';
	my $t0 = time();
	while ($pid eq '' && time() - $t0 < 60)
	{
		$pid = $node->safe_psql('postgres',
			"SELECT pid FROM pg_stat_activity WHERE application_name = 'bf_victim'");
		usleep(5_000) if $pid eq '';
	}
	die 'victim did not start' if $pid eq '';
	return ($h, \$out, \$err, $pid);
}

sub wait_until_gated
{
	my ($pid) = @_;
	$node->poll_query_until('postgres', qq{
SELECT count(*) = 1 FROM pg_locks
 WHERE pid = $pid AND locktype = 'advisory' AND objid = 4242 AND NOT granted})
	  or die 'the chunk never reached the gate';
}

# ---- F19: query cancel mid-chunk ----
{
	my $holder = $node->background_psql('postgres');
	my $holder_pid = $holder->query_safe('SELECT pg_backend_pid()');
	$holder->query_safe('SELECT pg_advisory_lock(4242)');
	my $run = reset_and_plan('2024-01-03 00:00+00');
	my ($h, $out, $err, $pid) = start_victim($run);
	wait_until_gated($pid);
	$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
	$h->finish;
	isnt($h->result(0), 0, 'cancel: the CALL fails');
	like($$err, qr/canceling statement due to user request/, 'cancel: 57014 reaches the caller');
	is(chunk_states($run), '1:done/1 2:done/1 3:pending/0 4:pending/0',
		'cancel: chunks before stay done, the cancelled chunk is pending with attempts unchanged');
	is(bad_chunks($run), '', 'cancel: the cancelled chunk was rolled back');
	is(locks_left($holder_pid), 0, 'cancel: no lock left, nothing looks busy');
	$holder->query_safe('SELECT pg_advisory_unlock(4242)');
	$holder->quit;
	$node->safe_psql('postgres', "CALL backfill.run($run)");
	is($node->safe_psql('postgres', "SELECT status FROM backfill.runs WHERE run_id = $run"),
		'done', 'cancel: resume finishes the run');
	is(target_diff(), 0, 'cancel: target equals an uninterrupted run');
}

# ---- F20: backend terminated mid-chunk ----
{
	my $holder = $node->background_psql('postgres');
	my $holder_pid = $holder->query_safe('SELECT pg_backend_pid()');
	$holder->query_safe('SELECT pg_advisory_lock(4242)');
	my $run = reset_and_plan('2024-01-02 00:00+00');
	my ($h, $out, $err, $pid) = start_victim($run);
	wait_until_gated($pid);
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
	$h->finish;
	like($$err, qr/terminating connection due to administrator command/,
		'terminate: the session ends with 57P01');
	$node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid");
	is(chunk_states($run), '1:done/1 2:pending/0 3:pending/0 4:pending/0',
		'terminate: the interrupted chunk is pending');
	is(bad_chunks($run), '', 'terminate: the interrupted chunk was rolled back');
	is(locks_left($holder_pid), 0, 'terminate: no lock left, nothing looks busy');
	$holder->query_safe('SELECT pg_advisory_unlock(4242)');
	$holder->quit;
	$node->safe_psql('postgres', "SET lock_timeout = '5s'; CALL backfill.run($run)");
	is($node->safe_psql('postgres', "SELECT status FROM backfill.runs WHERE run_id = $run"),
		'done', 'terminate: another session resumes and finishes the run');
	is(target_diff(), 0, 'terminate: target equals an uninterrupted run');
}

# ---- F23: disk full during a chunk ----
SKIP:
{
	my $tiny = $ENV{BACKFILL_TINY_DIR} // '';
	skip 'disk full: no tiny filesystem (scripts/test.sh prepares one when run as root)', 7
	  unless $tiny ne '' && -d $tiny && -w $tiny;
	mkdir "$tiny/ts";
	$node->safe_psql('postgres', qq{
CREATE TABLESPACE tiny LOCATION '$tiny/ts';
CREATE TABLE filler (pad text) TABLESPACE tiny;
CREATE TABLE big_src (ts timestamptz NOT NULL, pad text NOT NULL);
INSERT INTO big_src
  SELECT '2024-01-01 00:00+00'::timestamptz + n * interval '1 second', repeat('x', 200)
    FROM generate_series(0, 2 * 86400 - 1, 4) n;
CREATE TABLE big_tgt (ts timestamptz NOT NULL, pad text NOT NULL) TABLESPACE tiny;
INSERT INTO big_tgt VALUES ('2024-01-01 12:00+00', 'old 1'), ('2024-01-02 12:00+00', 'old 2');
SELECT backfill.register('big_tgt', 'ts',
  \$\$SELECT ts, pad FROM public.big_src WHERE ts >= \$1 AND ts < \$2\$\$, chunk => '1 day');
});
	# Fill the filesystem until only room for about one chunk is left.
	my $free = `df -k --output=avail '$tiny' | tail -1` * 1024;
	my $chunk_bytes = 21600 * 250;
	my $fill_rows = int(($free - 1.5 * $chunk_bytes) / 250);
	$node->safe_psql('postgres',
		"INSERT INTO filler SELECT repeat('f', 200) FROM generate_series(1, $fill_rows)")
	  if $fill_rows > 0;
	my $run = $node->safe_psql('postgres',
		"SELECT backfill.plan('big_tgt', '2024-01-01 00:00+00', '2024-01-03 00:00+00', probe => false)");
	my ($ret, $stdout, $stderr) = $node->psql('postgres', "CALL backfill.run($run)");
	like($stderr, qr/could not extend file|No space left on device/, 'disk full: the error reaches the caller');
	is($node->safe_psql('postgres',
			"SELECT string_agg(format('%s:%s:%s', chunk_no, status, coalesce(error_sqlstate, '-')), ' ' ORDER BY chunk_no) FROM backfill.chunks WHERE run_id = $run"),
		'1:done:- 2:failed:53100', 'disk full: chunk 1 done, chunk 2 failed with 53100');
	is($node->safe_psql('postgres',
			"SELECT string_agg(pad, ',') FROM big_tgt WHERE ts >= '2024-01-02 00:00+00'"),
		'old 2', 'disk full: the failed chunk kept its old rows');
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM big_tgt WHERE ts < '2024-01-02 00:00+00'"),
		21600, 'disk full: the earlier chunk stays applied');
	is(locks_left(), 0, 'disk full: no lock left');
	$node->safe_psql('postgres', 'DROP TABLE filler; VACUUM big_tgt;');
	$node->safe_psql('postgres', "CALL backfill.run($run)");
	is($node->safe_psql('postgres', "SELECT status FROM backfill.runs WHERE run_id = $run"),
		'done', 'disk full: with space again the run finishes');
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM (SELECT ts, pad FROM big_tgt EXCEPT ALL SELECT ts, pad FROM big_src) d"),
		0, 'disk full: the target holds exactly the source rows');
	$node->safe_psql('postgres', 'SELECT backfill.unregister(\'big_tgt\'); DROP TABLE big_tgt; DROP TABLESPACE tiny;');
}

$node->stop;
done_testing();
