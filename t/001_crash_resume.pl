# Crash safety of runs (SPEC "Runs and chunks"): a chunk's data, status and
# figures commit together, so after a killed (kill -9) or terminated
# (pg_terminate_backend) backend or a crashed server no chunk is
# half-applied, nothing looks busy, and CALL backfill.run resumes to the
# same table a clean run gives.  Also: a concurrent second CALL of
# a run returns at once with a NOTICE naming the executing backend.
#
# A chunk is paused mid-transaction deterministically: the source calls
# gate(), which waits on an advisory lock held by another session.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = backfill_node('crash', conf => "restart_after_crash = on\n");

my $db = 'postgres';
$node->safe_psql($db, gate_sql() . q{
CREATE TABLE src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO src SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '3 hours', i
  FROM generate_series(0, 47) i;
-- The target before the backfill: one placeholder row of 0 per day, and
-- rows outside the range that must stay.
CREATE TABLE tgt (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO tgt SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '1 day', 0
  FROM generate_series(0, 5) i;
INSERT INTO tgt VALUES ('2023-12-31 12:00+00', -1), ('2024-01-07 12:00+00', -2);
CREATE TABLE tgt_before AS SELECT * FROM tgt;
-- What a correct run of [Jan 1, Jan 7) gives, built by hand.
CREATE TABLE tgt_ref AS
SELECT * FROM tgt WHERE ts < '2024-01-01 00:00+00' OR ts >= '2024-01-07 00:00+00'
UNION ALL
SELECT * FROM src WHERE ts >= '2024-01-01 00:00+00' AND ts < '2024-01-07 00:00+00';
SELECT backfill.register('tgt', 'ts',
    'SELECT ts, v FROM public.src WHERE ts >= $1 AND ts < $2 AND public.gate(ts)',
    measure => 'sum(v)');
});

# Rows of tgt that differ from table $other, both ways.
sub diff_count
{
	my ($other, $where) = @_;
	return table_diff($node, $db, 'tgt', $other, $where);
}

# Start CALL backfill.run(run) in the background with the gate closed on
# $day; return the gate session, the runner session and the runner's pid
# once the runner waits at the gate.
sub start_paused_run
{
	my ($run, $day) = @_;
	return start_gated($node, $db, "CALL backfill.run($run)", $day,
		"run $run waits at the gate on $day");
}

# Invariants after a crash: no chunk half-applied, nothing busy.
sub check_after_crash
{
	my ($run, $day, $what) = @_;
	is( $node->safe_psql($db, qq{
SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'}),
		'0', "$what: no advisory lock survives");
	is( $node->safe_psql($db, qq{
SELECT coalesce(pid::text, 'none') || ' ' || status FROM backfill.progress WHERE run_id = $run}),
		'none planned', "$what: the run is unfinished and nobody executes it");
	is( $node->safe_psql($db, qq{
SELECT status || '/' || attempts FROM backfill.chunks
 WHERE run_id = $run AND chunk_start = '$day'}),
		'pending/0', "$what: the interrupted chunk is still pending");
	is( $node->safe_psql($db, qq{
SELECT count(*) FROM backfill.chunks
 WHERE run_id = $run AND started_at IS NOT NULL AND finished_at IS NULL}),
		'0', "$what: no chunk is left marked as started");
	# Chunks before the interrupted one are done and their data is there;
	# the interrupted chunk's range holds exactly what it held before.
	my $done_end = $node->safe_psql($db, qq{
SELECT max(chunk_end) FROM backfill.chunks WHERE run_id = $run AND status = 'done'});
	is( diff_count('tgt_ref', "ts >= '2024-01-01 00:00+00' AND ts < '$done_end'"),
		'0', "$what: done chunks are applied");
	is($node->safe_psql($db, qq{
SELECT count(*) FROM backfill.chunks
 WHERE run_id = $run AND status = 'done' AND chunk_start >= '$day'}),
		'0', "$what: no chunk from the interrupted one on is done");
	is( diff_count('tgt_before', "ts >= '$day' AND ts < '$day'::timestamptz + interval '1 day'"),
		'0', "$what: the interrupted chunk is not half-applied");
	return;
}

# --- A concurrent second call returns at once and names the backend. ----
my $run1 = $node->safe_psql($db, q{
SELECT backfill.plan('tgt', '2024-01-01 00:00+00', '2024-01-07 00:00+00', probe => false)});
my ($gate, $runner, $pid) = start_paused_run($run1, '2024-01-03 00:00+00');
is( $node->safe_psql($db, "SELECT pid FROM backfill.progress WHERE run_id = $run1"),
	$pid, 'progress shows the executing backend');
my ($ret, $stdout, $stderr) =
  $node->psql($db, "CALL backfill.run($run1)", timeout => 60);
is($ret, 0, 'a second CALL of a busy run succeeds');
like($stderr, qr/NOTICE:.*\b$pid\b/, 'its NOTICE names the executing backend');
is( $node->safe_psql($db, qq{
SELECT string_agg(status, ',' ORDER BY chunk_no) FROM backfill.chunks WHERE run_id = $run1}),
	'done,done,pending,pending,pending,pending',
	'the second CALL ran nothing');

# --- kill -9 of the backend in the middle of chunk 3. --------------------
crash_restart($node, $db, $pid, '', $runner, $gate);
check_after_crash($run1, '2024-01-03 00:00+00', 'backend killed');

# Resume: the run finishes and the table equals a correct run.
$node->safe_psql($db, 'TRUNCATE gate_day');
$node->safe_psql($db, "CALL backfill.run($run1)");
is($node->safe_psql($db, "SELECT status FROM backfill.runs WHERE run_id = $run1"),
	'done', 'the resumed run is done');
is(diff_count('tgt_ref'), '0', 'after resuming, the target equals a correct run');
is( $node->safe_psql($db, qq{
SELECT string_agg(chunk_no || ':' || attempts, ',' ORDER BY chunk_no) FROM backfill.chunks WHERE run_id = $run1}),
	'1:1,2:1,3:1,4:1,5:1,6:1', 'each chunk was applied once');

# --- A full server crash (immediate stop) in the middle of chunk 5. ------
# Back to the old contents first: a second run over the same range.
$node->safe_psql($db, 'TRUNCATE tgt; INSERT INTO tgt SELECT * FROM tgt_before');
my $run2 = $node->safe_psql($db, q{
SELECT backfill.plan('tgt', '2024-01-01 00:00+00', '2024-01-07 00:00+00', probe => false)});
($gate, $runner, $pid) = start_paused_run($run2, '2024-01-05 00:00+00');
$node->stop('immediate');
forget_session($runner);
forget_session($gate);
$node->start;
check_after_crash($run2, '2024-01-05 00:00+00', 'server crashed');
$node->safe_psql($db, 'TRUNCATE gate_day');
$node->safe_psql($db, "CALL backfill.run($run2)");
is($node->safe_psql($db, "SELECT status FROM backfill.runs WHERE run_id = $run2"),
	'done', 'the run resumed after the server crash is done');
is(diff_count('tgt_ref'), '0', 'after resuming, the target equals a correct run');
is( $node->safe_psql($db, qq{
SELECT count(*) FROM backfill.history WHERE run_id = $run2 AND status = 'done'}),
	'6', 'the history shows six done chunks');
is( $node->safe_psql($db, 'SELECT count(*) FROM backfill.progress'),
	'0', 'no run is left in progress');

# --- pg_terminate_backend in the middle of chunk 2 (no crash restart). --
$node->safe_psql($db, 'TRUNCATE tgt; INSERT INTO tgt SELECT * FROM tgt_before');
my $run3 = $node->safe_psql($db, q{
SELECT backfill.plan('tgt', '2024-01-01 00:00+00', '2024-01-07 00:00+00', probe => false)});
($gate, $runner, $pid) = start_paused_run($run3, '2024-01-02 00:00+00');
is($node->safe_psql($db, "SELECT pg_terminate_backend($pid)"), 't',
	'the executing backend is terminated');
ok( $node->poll_query_until($db,
		"SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid)"),
	'the terminated backend is gone');
forget_session($runner);
# Release the gate (check_after_crash expects no advisory lock at all).
$gate->query_safe('SELECT pg_advisory_unlock_all()');
$gate->quit;
check_after_crash($run3, '2024-01-02 00:00+00', 'backend terminated');
$node->safe_psql($db, 'TRUNCATE gate_day');
$node->safe_psql($db, "CALL backfill.run($run3)");
is($node->safe_psql($db, "SELECT status FROM backfill.runs WHERE run_id = $run3"),
	'done', 'the run resumed after pg_terminate_backend is done');
is(diff_count('tgt_ref'), '0', 'after resuming, the target equals a correct run');

$node->stop;
done_testing();
