# Parallel chunks (issue 19) under crashes, terminations and pg_cron:
#   - kill -9 of a worker mid-chunk: after crash recovery the chunk is
#     pending and not half-applied, and the run resumes to done with no row
#     lost or doubled; progress showed the chunk in flight with its pid;
#   - the leader terminated while workers are in flight: its workers go,
#     their chunks roll back and stay pending, nothing looks busy, resume;
#   - cancel terminates the run's workers;
#   - the pool (issue 30): the chunks at a gate are executed by the workers
#     that executed the call's first chunks (a worker takes chunk after
#     chunk); a pool worker terminated mid-pool leaves its chunk failed, the
#     chunk of the other worker finishes, nothing new starts, the call ends
#     with the chunk's error and no worker is left; cancel mid-pool
#     terminates the busy workers and the leader ends the idle ones; a
#     query cancel of the leader terminates its busy and idle workers;
#   - no free worker slot: the run goes on with fewer workers (NOTICE), and
#     with none executes the chunk in the session;
#   - pg_cron ticks with parallel => 2 finish a run, two chunks at a time.
#
# A chunk is held mid-transaction deterministically with the gate of
# BackfillCluster (an advisory lock another session holds).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = backfill_node('parallel', cron => 1,
	conf => "restart_after_crash = on\n");
my $db = 'postgres';
$node->safe_psql($db, gate_sql() . q{
CREATE TABLE src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO src SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '3 hours', i
  FROM generate_series(0, 47) i;
CREATE TABLE tgt (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO tgt SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '1 day', 0
  FROM generate_series(0, 5) i;
INSERT INTO tgt VALUES ('2023-12-31 12:00+00', -1), ('2024-01-07 12:00+00', -2);
CREATE TABLE tgt_before AS SELECT * FROM tgt;
CREATE TABLE tgt_ref AS
SELECT * FROM tgt WHERE ts < '2024-01-01 00:00+00' OR ts >= '2024-01-07 00:00+00'
UNION ALL
SELECT * FROM src WHERE ts >= '2024-01-01 00:00+00' AND ts < '2024-01-07 00:00+00';
SELECT backfill.register('tgt', 'ts',
    'SELECT ts, v FROM public.src WHERE ts >= $1 AND ts < $2 AND public.gate(ts)',
    measure => 'sum(v)');
});

sub plan_run
{
	$node->safe_psql($db, 'TRUNCATE tgt; INSERT INTO tgt SELECT * FROM tgt_before');
	return $node->safe_psql($db, q{
SELECT backfill.plan('tgt', '2024-01-01 00:00+00', '2024-01-07 00:00+00', probe => false)});
}

# Close the gate on @days, start CALL in the background and wait until
# $n workers wait at the gate; returns the gate and runner sessions.
sub start_gated_parallel
{
	my ($call, $n, $what, @days) = @_;
	$node->safe_psql($db, 'TRUNCATE gate_day; INSERT INTO gate_day VALUES '
		  . join(', ', map { "('$_')" } @days));
	my $gate = $node->background_psql($db);
	$gate->query_safe('SELECT pg_advisory_lock(4242)');
	my $runner = $node->background_psql($db, on_error_stop => 0);
	my $pid = $runner->query_safe('SELECT pg_backend_pid()');
	chomp $pid;
	$runner->query_until(qr/started/, "\\echo started\n$call;\n");
	ok( $node->poll_query_until($db, qq{
SELECT count(*) = $n FROM pg_locks l JOIN pg_stat_activity a USING (pid)
 WHERE l.locktype = 'advisory' AND l.objid = 4242 AND NOT l.granted
   AND a.backend_type = 'backfill worker'}),
		$what);
	return ($gate, $runner, $pid);
}

sub gate_waiters
{
	return $node->safe_psql($db, q{
SELECT string_agg(l.pid::text, ',' ORDER BY l.pid) FROM pg_locks l
 WHERE l.locktype = 'advisory' AND l.objid = 4242 AND NOT l.granted});
}

sub chunk_states
{
	my ($run) = @_;
	return $node->safe_psql($db, qq{
SELECT string_agg(status || ':' || attempts, ',' ORDER BY chunk_no)
  FROM backfill.chunks WHERE run_id = $run});
}

sub no_worker_left
{
	my ($what) = @_;
	ok( $node->poll_query_until($db, q{
SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'backfill worker')}),
		"$what: no backfill worker is left");
	is( $node->safe_psql($db, q{
SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid IN (16966, 16967)}),
		'0', "$what: no run or chunk lock is held");
	return;
}

# --- kill -9 of a worker in the middle of chunk 3. ------------------------
my $run1 = plan_run();
my ($gate, $runner, $leader) = start_gated_parallel(
	"CALL backfill.run($run1, parallel => 2)", 1,
	'a worker waits at the gate in chunk 3', '2024-01-03 00:00+00');
ok( $node->poll_query_until($db, qq{
SELECT count(*) = 5 FROM backfill.chunks WHERE run_id = $run1 AND status = 'done'}),
	'the other worker executes the other five chunks meanwhile');
my $worker = gate_waiters();
is( $node->safe_psql($db, qq{
SELECT pid || ' ' || chunks_in_flight::text || ' ' || worker_pids::text
  FROM backfill.progress WHERE run_id = $run1}),
	"$leader {3} {$worker}",
	'progress shows the leader, the chunk in flight and its worker pid');
crash_restart($node, $db, $worker, 'worker killed: ', $runner, $gate);
is(chunk_states($run1), 'done:1,done:1,pending:0,done:1,done:1,done:1',
	'after the crash the killed chunk is pending, the others done');
is( table_diff($node, $db, 'tgt', 'tgt_before',
		"ts >= '2024-01-03 00:00+00' AND ts < '2024-01-04 00:00+00'"),
	'0', 'the killed chunk is not half-applied');
is( table_diff($node, $db, 'tgt', 'tgt_ref',
		"NOT (ts >= '2024-01-03 00:00+00' AND ts < '2024-01-04 00:00+00')"),
	'0', 'the done chunks are applied, nothing else changed');
$node->safe_psql($db, 'TRUNCATE gate_day');
$node->safe_psql($db, "CALL backfill.run($run1, parallel => 2)");
is($node->safe_psql($db, "SELECT status FROM backfill.runs WHERE run_id = $run1"),
	'done', 'the resumed run is done');
is(table_diff($node, $db, 'tgt', 'tgt_ref'), '0',
	'no row lost or doubled: the target equals a correct run');

# --- the leader terminated with two workers in flight. -------------------
my $run2 = plan_run();
($gate, $runner, $leader) = start_gated_parallel(
	"CALL backfill.run($run2, parallel => 2)", 2,
	'two workers wait at the gate (chunks 2 and 3)',
	'2024-01-02 00:00+00', '2024-01-03 00:00+00');
is($node->safe_psql($db, "SELECT pg_terminate_backend($leader)"), 't',
	'the leader is terminated');
no_worker_left('leader terminated');
forget_session($runner);
$gate->query_safe('SELECT pg_advisory_unlock_all()');
$gate->quit;
is(chunk_states($run2), 'done:1,pending:0,pending:0,pending:0,pending:0,pending:0',
	'the chunks of the workers rolled back and stay pending, nothing new started');
is( $node->safe_psql($db, qq{
SELECT coalesce(pid::text, 'none') || ' ' || status || ' ' || chunks_in_flight::text
  FROM backfill.progress WHERE run_id = $run2}),
	'none planned {}', 'the run is not left running: nobody executes it');
is( table_diff($node, $db, 'tgt', 'tgt_before', "ts >= '2024-01-02 00:00+00'"),
	'0', 'the terminated chunks are not half-applied');
$node->safe_psql($db, 'TRUNCATE gate_day');
$node->safe_psql($db, "CALL backfill.run($run2, parallel => 2)");
is($node->safe_psql($db, "SELECT status FROM backfill.runs WHERE run_id = $run2"),
	'done', 'the run resumed after the leader was terminated is done');
is(table_diff($node, $db, 'tgt', 'tgt_ref'), '0',
	'after resuming, the target equals a correct run');

# --- cancel terminates the workers. ---------------------------------------
my $run3 = plan_run();
($gate, $runner, $leader) = start_gated_parallel(
	"CALL backfill.run($run3, parallel => 2)", 1,
	'a worker waits at the gate in chunk 2', '2024-01-02 00:00+00');
is($node->safe_psql($db, "SELECT backfill.cancel($run3) >= 1"), 't',
	'cancel returns while a worker is in flight');
no_worker_left('cancelled');
$runner->quit;
$gate->quit;
is( $node->safe_psql($db, qq{
SELECT r.status || ' ' || c.status FROM backfill.runs r
  JOIN backfill.chunks c USING (run_id) WHERE run_id = $run3 AND chunk_no = 2}),
	'cancelled cancelled', 'the run and the terminated chunk are cancelled');
is( table_diff($node, $db, 'tgt', 'tgt_before',
		"ts >= '2024-01-02 00:00+00' AND ts < '2024-01-03 00:00+00'"),
	'0', 'the cancelled chunk rolled back');

# --- the pool (issue 30). --------------------------------------------------
# tgtp records, in each row, the pid of the backend that executed its chunk.
$node->safe_psql($db, q{
CREATE TABLE tgtp (ts timestamptz NOT NULL, v int NOT NULL, pid int NOT NULL);
SELECT backfill.register('tgtp', 'ts',
    'SELECT ts, v, pg_backend_pid() AS pid FROM public.src WHERE ts >= $1 AND ts < $2 AND public.gate(ts)');
});

sub plan_pool_run
{
	$node->safe_psql($db, 'TRUNCATE tgtp');
	return $node->safe_psql($db, q{
SELECT backfill.plan('tgtp', '2024-01-01 00:00+00', '2024-01-07 00:00+00', probe => false)});
}

# The pid of the worker executing chunk $chunk of run $run, at the gate.
sub chunk_worker
{
	my ($run, $chunk) = @_;
	return $node->safe_psql($db, qq{
SELECT pid FROM pg_stat_activity
 WHERE backend_type = 'backfill worker'
   AND query = 'backfill chunk $chunk of run $run'});
}

# Whether the pids (a comma list) all executed chunks before the gate
# (days before $day): the pool's workers, not new ones.
sub executed_before
{
	my ($pids, $day) = @_;
	return $node->safe_psql($db, qq{
SELECT bool_and(p = ANY (ARRAY(SELECT DISTINCT pid FROM tgtp WHERE ts < '$day')))
       || ' ' || (SELECT count(DISTINCT pid) FROM tgtp)
  FROM unnest('{$pids}'::int[]) p});
}

# A pool worker terminated mid-pool: chunks 3 and 4 wait at the gate in the
# two workers that executed chunks 1 and 2.
my $run5 = plan_pool_run();
($gate, $runner, $leader) = start_gated_parallel(
	"CALL backfill.run($run5, parallel => 2)", 2,
	'pool: two workers wait at the gate (chunks 3 and 4)',
	'2024-01-03 00:00+00', '2024-01-04 00:00+00');
is(executed_before(gate_waiters(), '2024-01-03 00:00+00'), 'true 2',
	'pool: the workers at the gate are the two that executed chunks 1 and 2');
my $victim = chunk_worker($run5, 3);
isnt($victim, '', 'pool: the worker of chunk 3 is found');
is($node->safe_psql($db, "SELECT pg_terminate_backend($victim)"), 't',
	'pool: the worker of chunk 3 is terminated');
ok( $node->poll_query_until($db, qq{
SELECT status = 'failed' FROM backfill.chunks WHERE run_id = $run5 AND chunk_no = 3}),
	'pool: the leader records chunk 3 failed');
$gate->query_safe('SELECT pg_advisory_unlock_all()');
$gate->quit;
ok( $node->poll_query_until($db,
		"SELECT status = 'failed' FROM backfill.runs WHERE run_id = $run5"),
	'pool: the call ends and the run is failed');
no_worker_left('pool worker terminated');
$runner->quit;
like($runner->{stderr},
	qr/the background worker of chunk 3 stopped before it recorded the chunk's outcome/,
	"pool: the call ends with chunk 3's error");
is(chunk_states($run5), 'done:1,done:1,failed:1,done:1,pending:0,pending:0',
	'pool: chunk 3 failed, chunk 4 in flight finished, nothing new started');
is( $node->safe_psql($db, q{
SELECT count(*) FROM tgtp WHERE ts >= '2024-01-03 00:00+00' AND ts < '2024-01-04 00:00+00'}),
	'0', 'pool: the terminated chunk rolled back');
$node->safe_psql($db, 'TRUNCATE gate_day');
$node->safe_psql($db, "CALL backfill.run($run5, parallel => 2)");
is( $node->safe_psql($db, qq{
SELECT r.status || ' ' || count(t.*) FROM backfill.runs r, tgtp t
 WHERE r.run_id = $run5 GROUP BY r.status}),
	'done 48', 'pool: the run resumed is done, every row in place');

# Cancel mid-pool: both workers at the gate (chunks 3 and 4).
my $run6 = plan_pool_run();
($gate, $runner, $leader) = start_gated_parallel(
	"CALL backfill.run($run6, parallel => 2)", 2,
	'pool cancel: two workers wait at the gate (chunks 3 and 4)',
	'2024-01-03 00:00+00', '2024-01-04 00:00+00');
is(executed_before(gate_waiters(), '2024-01-03 00:00+00'), 'true 2',
	'pool cancel: the workers at the gate executed chunks 1 and 2');
is($node->safe_psql($db, "SELECT backfill.cancel($run6) >= 1"), 't',
	'pool cancel: cancel returns');
no_worker_left('pool cancelled');
$gate->query_safe('SELECT pg_advisory_unlock_all()');
$gate->quit;
$runner->quit;
like($runner->{stderr}, qr/run $run6 tgtp is cancelled/,
	'pool cancel: the call says the run is cancelled');
is( $node->safe_psql($db, qq{
SELECT r.status || ' ' || string_agg(c.status, ',' ORDER BY c.chunk_no)
  FROM backfill.runs r JOIN backfill.chunks c USING (run_id)
 WHERE run_id = $run6 GROUP BY r.status}),
	'cancelled done,done,cancelled,cancelled,cancelled,cancelled',
	'pool cancel: the run and every chunk not done are cancelled');
is( $node->safe_psql($db, q{
SELECT count(*) FROM tgtp WHERE ts >= '2024-01-03 00:00+00'}),
	'0', 'pool cancel: the chunks in flight rolled back');

# A query cancel of the leader with one worker busy at the gate (chunk 3)
# and the other idle (max_chunks reached): both go.
my $run7 = plan_pool_run();
($gate, $runner, $leader) = start_gated_parallel(
	"CALL backfill.run($run7, max_chunks => 3, parallel => 2)", 1,
	'leader cancel: a worker waits at the gate (chunk 3)',
	'2024-01-03 00:00+00');
ok( $node->poll_query_until($db, qq{
SELECT count(*) = 2 FROM backfill.chunks WHERE run_id = $run7 AND status = 'done'}),
	'leader cancel: chunks 1 and 2 are done');
is(executed_before(gate_waiters(), '2024-01-03 00:00+00'), 'true 2',
	'leader cancel: the worker at the gate executed chunk 1 or 2');
is( $node->safe_psql($db,
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'backfill worker'"),
	'2', 'leader cancel: the other worker waits idle in the pool');
is($node->safe_psql($db, "SELECT pg_cancel_backend($leader)"), 't',
	'leader cancel: the leader gets a query cancel');
no_worker_left('leader cancelled');
$gate->query_safe('SELECT pg_advisory_unlock_all()');
$gate->quit;
$runner->quit;
like($runner->{stderr}, qr/canceling statement due to user request/,
	'leader cancel: the call ends with the cancel');
is(chunk_states($run7), 'done:1,done:1,pending:0,pending:0,pending:0,pending:0',
	'leader cancel: the chunk in flight rolled back and stays pending');
$node->safe_psql($db, 'TRUNCATE gate_day');
$node->safe_psql($db, "CALL backfill.run($run7, parallel => 2)");
is($node->safe_psql($db, "SELECT status FROM backfill.runs WHERE run_id = $run7"),
	'done', 'leader cancel: the run resumed is done');

# --- pg_cron ticks with parallel => 2. -----------------------------------
$node->safe_psql($db, 'TRUNCATE gate_day');
my $run4 = plan_run();
$node->safe_psql($db,
	"SELECT backfill.schedule($run4, '* * * * *', chunks_per_tick => 4, parallel => 2)");
is( $node->safe_psql($db, qq{
SELECT command FROM cron.job WHERE jobname = 'backfill_run_$run4'}),
	"CALL backfill.run($run4, max_chunks => 4, parallel => 2)",
	'the job runs the chunks two at a time');
my $status = wait_for_value($node,
	"SELECT status FROM backfill.runs WHERE run_id = $run4",
	sub { $_[0] eq 'done' }, 200);
is($status, 'done', 'pg_cron ticks finish the run');
is( $node->safe_psql($db, qq{
SELECT count(*) FROM backfill.chunks WHERE run_id = $run4 AND executed_via = 'worker'}),
	'6', 'every chunk was executed by a worker of a tick');
is(table_diff($node, $db, 'tgt', 'tgt_ref'), '0',
	'the target equals a correct run');
$node->stop;

# --- no free worker slot. --------------------------------------------------
# max_worker_processes = 2, one taken by the logical replication launcher:
# one slot is free for backfill.
my $small = backfill_node('slots', conf => "max_worker_processes = 2\n");
$small->safe_psql($db, gate_sql() . q{
CREATE TABLE src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO src SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '3 hours', i
  FROM generate_series(0, 47) i;
CREATE TABLE a (ts timestamptz NOT NULL, v int NOT NULL);
CREATE TABLE b (ts timestamptz NOT NULL, v int NOT NULL);
SELECT backfill.register('a', 'ts',
    'SELECT ts, v FROM public.src WHERE ts >= $1 AND ts < $2 AND public.gate(ts)');
SELECT backfill.register('b', 'ts',
    'SELECT ts, v FROM public.src WHERE ts >= $1 AND ts < $2');
});
my $ra = $small->safe_psql($db, q{
SELECT backfill.plan('a', '2024-01-01 00:00+00', '2024-01-07 00:00+00', probe => false)});
my ($ret, $stdout, $stderr) = $small->psql($db,
	"CALL backfill.run($ra, parallel => 2)");
is($ret, 0, 'with one free slot, parallel => 2 succeeds');
like($stderr, qr/no background worker slot is free; going on with 1 of the 2/,
	'a NOTICE says how many workers it goes on with');
is( $small->safe_psql($db, qq{
SELECT r.status || ' ' || count(*) FILTER (WHERE c.executed_via = 'worker')
  FROM backfill.runs r JOIN backfill.chunks c USING (run_id)
 WHERE run_id = $ra GROUP BY r.status}),
	'done 6', 'the run is done, all its chunks by the one worker');

# The one free slot is taken by a worker held at the gate: the next call
# has no worker at all and executes its chunks in the session.
$node = $small;
my $ra2 = $small->safe_psql($db, q{
SELECT backfill.plan('a', '2024-01-01 00:00+00', '2024-01-02 00:00+00', probe => false)});
($gate, $runner, $leader) = start_gated_parallel(
	"CALL backfill.run($ra2, parallel => 2)", 1,
	'the only free slot is taken by a worker at the gate', '2024-01-01 00:00+00');
my $rb = $small->safe_psql($db, q{
SELECT backfill.plan('b', '2024-01-01 00:00+00', '2024-01-04 00:00+00', probe => false)});
($ret, $stdout, $stderr) = $small->psql($db, "CALL backfill.run($rb, parallel => 2)");
is($ret, 0, 'without any free slot, parallel => 2 succeeds');
like($stderr, qr/going on with 0 of the 2/, 'a NOTICE says it goes on without workers');
is( $small->safe_psql($db, qq{
SELECT r.status || ' ' || string_agg(c.executed_via, ',' ORDER BY chunk_no)
  FROM backfill.runs r JOIN backfill.chunks c USING (run_id)
 WHERE run_id = $rb GROUP BY r.status}),
	'done session,session,session', 'its chunks ran in the session');
$gate->query_safe('SELECT pg_advisory_unlock_all()');
$gate->quit;
ok( $small->poll_query_until($db,
		"SELECT status = 'done' FROM backfill.runs WHERE run_id = $ra2"),
	'the held run finishes once the gate opens');
$runner->quit;
$small->stop;
done_testing();
