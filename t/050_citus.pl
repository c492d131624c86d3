# backfill on Citus: a coordinator and two workers (issue 11).
#
# Targets of every Citus kind (hash-distributed co-located and not, a
# distributed partitioned table, a reference table, a local table on the
# coordinator), the date rollup that needs predicates in the column's own
# type, strategies (truncate on distributed partitions, swap refused),
# ledger gate, reconcile, check, lineage, pg_cron, lock_target and writers,
# parallel => 2 (chunks in background workers at the same time, each its
# own distributed transaction; what waits for them),
# the refusal on a worker, and a worker stopped with -m immediate in the
# middle of a chunk and at plan time.
#
# Skipped when Citus is not installed: bash scripts/citus.sh installs it.
# The test command builds Citus 13.2.2 for PostgreSQL 15, 16 and 17; it does
# not support 18 and 19 (TESTING.md), where this test skips itself and says
# so.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $pg_config = $ENV{PG_CONFIG} || 'pg_config';
my $pkglibdir = `$pg_config --pkglibdir`;
chomp $pkglibdir;
my ($pg_major) = `$pg_config --version` =~ /PostgreSQL (\d+)/;
plan skip_all =>
  "Citus 13.2.2 supports PostgreSQL 15 to 17 only (TESTING.md); this is PostgreSQL $pg_major, and Citus is not installed in $pkglibdir"
  if $pg_major >= 18 && !-f "$pkglibdir/citus.so";
plan skip_all =>
  "Citus is not installed in $pkglibdir: run 'bash scripts/citus.sh' (builds ../shared/vendor/citus-13.2.2.tar.gz) to run these tests"
  unless -f "$pkglibdir/citus.so";

my $db = 'postgres';
my @nodes;
for my $name ('coord', 'worker1', 'worker2')
{
	# backfill is created on the coordinator once Citus knows its workers
	my $node = backfill_node($name, preload => 'citus,pg_cron', extension => 0,
		conf => "max_prepared_transactions = 20\ncitus.shard_count = 4\nfsync = off\n");
	$node->safe_psql($db, 'CREATE EXTENSION citus; CREATE EXTENSION pg_cron;');
	push @nodes, $node;
}
my ($coord, $w1, $w2) = @nodes;
$coord->safe_psql(
	$db, sprintf(
		q{SELECT citus_set_coordinator_host('%s', %d);
SELECT citus_add_node('%s', %d);
SELECT citus_add_node('%s', %d);},
		$coord->host, $coord->port, $w1->host, $w1->port,
		$w2->host, $w2->port));

# 3. CREATE EXTENSION on the coordinator: Citus creates it on the workers
# too; the catalog is never distributed; functions refuse on a worker.
$coord->safe_psql($db, 'CREATE EXTENSION backfill');
is($w1->safe_psql($db, "SELECT count(*) FROM pg_extension WHERE extname = 'backfill'"),
	'1', 'Citus propagates CREATE EXTENSION backfill to the workers');
is( $coord->safe_psql(
		$db, q{SELECT count(*) FROM pg_dist_partition
 WHERE logicalrelid::regclass::text LIKE 'backfill.%'}),
	'0',
	'the catalog is not a Citus table');
my ($ret, $out, $err) =
  $w1->psql($db, "SELECT backfill.plan('pg_class', now(), now() + interval '1 day')");
isnt($ret, 0, 'plan on a worker fails');
like($err, qr/backfill runs on the Citus coordinator only/, '... saying so');
like($err, qr/Connect to the coordinator/, '... with the hint');
($ret, $out, $err) = $w2->psql($db, 'CALL backfill.run(1)');
like($err, qr/backfill runs on the Citus coordinator only/, 'run on a worker fails too');
# cleanup_jobs takes no argument: its check is its own call, not a NULL check's
($ret, $out, $err) = $w1->psql($db, 'SELECT * FROM backfill.cleanup_jobs()');
like($err, qr/backfill runs on the Citus coordinator only/, 'cleanup_jobs on a worker fails too');

# The source: payments, hash-distributed by customer; 20 customers, one
# payment an hour for 14 days.  hold() waits while session 4242 holds its
# advisory lock (a gate inside a chunk's source, on the coordinator).
$coord->safe_psql(
	$db, q{
CREATE TABLE payments (id bigserial, customer int NOT NULL,
                       paid_at timestamptz NOT NULL, amount numeric NOT NULL);
SELECT create_distributed_table('payments', 'customer');
INSERT INTO payments (customer, paid_at, amount)
SELECT c, t, (c % 7) + 1 FROM generate_series(1, 20) c,
       generate_series('2026-01-01'::timestamptz, '2026-01-14 23:00', '1 hour') t;
SET citus.enable_ddl_propagation = off;
CREATE FUNCTION hold() RETURNS bool LANGUAGE plpgsql
  AS $$BEGIN PERFORM pg_advisory_lock(4242); PERFORM pg_advisory_unlock(4242); RETURN true; END$$;
RESET citus.enable_ddl_propagation;

-- hash-distributed, co-located with the source, timestamptz
CREATE TABLE hourly (customer int NOT NULL, hour timestamptz NOT NULL, n int, total numeric);
SELECT create_distributed_table('hourly', 'customer', colocate_with => 'payments');
CREATE VIEW hourly_expected AS
  SELECT customer, date_trunc('hour', paid_at) AS hour, count(*)::int AS n, sum(amount) AS total
    FROM payments GROUP BY 1, 2;
SELECT backfill.register('hourly', 'hour',
  $$SELECT customer, date_trunc('hour', paid_at) AS hour, count(*)::int AS n, sum(amount) AS total
      FROM payments WHERE paid_at >= $1 AND paid_at < $2 AND (SELECT hold()) GROUP BY 1, 2$$);

-- the daily rollup: date column, distributed but not co-located
CREATE TABLE daily (day date NOT NULL, customer int NOT NULL, n int);
SELECT create_distributed_table('daily', 'day', colocate_with => 'none');
CREATE VIEW daily_expected AS
  SELECT paid_at::date AS day, customer, count(*)::int AS n FROM payments GROUP BY 1, 2;
SELECT backfill.register('daily', 'day',
  $$SELECT paid_at::date AS day, customer, count(*)::int AS n
      FROM payments WHERE paid_at >= $1 AND paid_at < $2 AND (SELECT hold()) GROUP BY 1, 2$$);

-- a reference table (date) and a local table on the coordinator (timestamp)
CREATE TABLE ref_daily (day date NOT NULL, n int);
SELECT create_reference_table('ref_daily');
SELECT backfill.register('ref_daily', 'day',
  $$SELECT paid_at::date AS day, count(*)::int AS n
      FROM payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1$$);
CREATE TABLE local_daily (day timestamp NOT NULL, n int);
SELECT backfill.register('local_daily', 'day',
  $$SELECT date_trunc('day', paid_at)::timestamp AS day, count(*)::int AS n
      FROM payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1$$);

-- distributed and partitioned by day, with a ledger and a measure
CREATE TABLE pdaily (day date NOT NULL, customer int NOT NULL, n int) PARTITION BY RANGE (day);
SELECT format('CREATE TABLE %I PARTITION OF pdaily FOR VALUES FROM (%L) TO (%L)',
              'pdaily_' || to_char(d, 'MMDD'), d::date, (d + interval '1 day')::date)
  FROM generate_series('2026-01-01'::timestamptz, '2026-01-14', '1 day') d \gexec
SELECT create_distributed_table('pdaily', 'customer', colocate_with => 'payments');
SELECT backfill.register('pdaily', 'day',
  $$SELECT paid_at::date AS day, customer, count(*)::int AS n
      FROM payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1, 2$$,
  ledger => $$SELECT count(*) FROM payments WHERE paid_at >= $1 AND paid_at < $2$$,
  measure => 'sum(n)');
});

# Rows of $table that differ from $expected (both directions).
sub diff_count
{
	my ($table, $expected) = @_;
	return $coord->safe_psql($db, qq{
SELECT (SELECT count(*) FROM (SELECT * FROM $table EXCEPT ALL SELECT * FROM $expected) a)
     + (SELECT count(*) FROM (SELECT * FROM $expected EXCEPT ALL SELECT * FROM $table) b)});
}

# pg_cron (5): a run handed to pg_cron now, checked at the end.
my $cron_run = $coord->safe_psql($db,
	"SELECT backfill.plan('ref_daily', '2026-01-01', '2026-01-15', probe => false)");
$coord->safe_psql($db,
	"SELECT backfill.schedule($cron_run, '* * * * *', chunks_per_tick => 14)");

# 1, 2: every kind of target, twice (the rerun replaces).
for my $pass (1, 2)
{
	for my $t ('hourly', 'daily', 'local_daily')
	{
		$coord->safe_psql($db,
			"CALL backfill.backfill('$t', '2026-01-01', '2026-01-15')");
	}
}
is(diff_count('hourly', 'hourly_expected'), '0',
	'hash-distributed co-located target: rows as the source says after a rerun');
is(diff_count('daily', 'daily_expected'), '0',
	'distributed date rollup (not co-located): predicates in the column type work');
is( $coord->safe_psql(
		$db, q{SELECT string_agg(DISTINCT rows_deleted || '/' || rows_inserted || ' ' || strategy, ',')
  FROM backfill.history WHERE target = 'daily'::regclass
   AND run_id = (SELECT max(run_id) FROM backfill.runs WHERE target = 'daily'::regclass)}),
	'20/20 delete',
	'the rerun of the rollup deleted and inserted each day\'s rows');
is( $coord->safe_psql(
		$db, q{SELECT count(*) || ' ' || sum(n) FROM local_daily
  WHERE (day, n) IN (SELECT date_trunc('day', paid_at)::timestamp, count(*)
                       FROM payments GROUP BY 1)}),
	'14 6720', 'local table on the coordinator (timestamp column)');

# Parallel chunks (issue 19).  The workers join no lock group on Citus:
# Citus would give them the session's distributed transaction (measured:
# the nodes were told transaction 0, and a subplan's intermediate result
# was looked for in another connection's directory: "could not find the
# intermediate result file").  Each chunk is a distributed transaction of
# its own, and the chunks of one call share their locks.  The co-located
# rollup and the one that is not co-located, each damaged first, both with
# the gate hold() in their source (a subplan: intermediate results): two
# chunks wait at the gate at the same time, so they overlap.
$coord->safe_psql($db, q{
UPDATE hourly SET n = n + 100 WHERE hour < '2026-01-05';
DELETE FROM daily WHERE day >= '2026-01-10'});
my $pgate = $coord->background_psql($db);
for my $t ('hourly', 'daily')
{
	my $prun = $coord->safe_psql($db,
		"SELECT backfill.plan('$t', '2026-01-01', '2026-01-15', probe => false)");
	$pgate->query_safe('SELECT pg_advisory_lock(4242)');
	my $prunner = $coord->background_psql($db, on_error_stop => 0);
	$prunner->query_until(qr/started/,
		"\\echo started\nCALL backfill.run($prun, parallel => 2);\n");
	ok( $coord->poll_query_until(
			$db, q{SELECT count(*) = 2 FROM pg_locks WHERE locktype = 'advisory'
  AND objid = 4242 AND NOT granted}),
		"parallel => 2 on $t: two chunks in flight at once, both inside their source");
	is( $coord->safe_psql($db, qq{
SELECT cardinality(chunks_in_flight) || ' ' || cardinality(worker_pids)
  FROM backfill.progress WHERE run_id = $prun}),
		'2 2', '... progress shows them and their two workers');
	is( $coord->safe_psql($db, q{
SELECT count(DISTINCT a.transaction_number) FROM pg_stat_activity s,
       LATERAL get_all_active_transactions() a
 WHERE s.backend_type = 'backfill worker' AND a.process_id = s.pid
   AND a.transaction_number <> 0}),
		'2', '... each worker in a distributed transaction of its own');
	if ($t eq 'hourly')
	{
		# what waits for the chunks in flight, and what does not
		($ret, $out, $err) = $coord->psql($db,
			"BEGIN; SET lock_timeout = '300ms'; SELECT backfill.lock_target('hourly'); COMMIT;");
		like($err, qr/lock timeout/,
			'lock_target (the daily job) waits for the parallel chunks in flight');
		my $other = $coord->safe_psql($db,
			"SELECT backfill.plan('hourly', '2026-01-20', '2026-01-21', probe => false)");
		($ret, $out, $err) = $coord->psql($db,
			"SET backfill.lock_timeout = 200; SET backfill.max_attempts = 5; CALL backfill.run($other)");
		like($err, qr/run $other hourly chunk 1 .*deferred/s,
			'a chunk of another run of the target waits for them (deferred)');
		($ret, $out, $err) = $coord->psql($db,
			"SET backfill.lock_timeout = 200; SET backfill.max_attempts = 5; CALL backfill.run($other, parallel => 2)");
		like($err, qr/run $other hourly chunk 1 .*deferred/s,
			'so does another parallel call on the target: its chunk runs in its session and waits');
		is( $coord->safe_psql($db,
				"SELECT status || ' ' || deferrals FROM backfill.chunks WHERE run_id = $other"),
			'pending 2', '... and stays pending');
		($ret, $out, $err) = $coord->psql($db,
			"SET lock_timeout = '300ms'; INSERT INTO hourly VALUES (3, '2026-02-01', 1, 1)");
		is($ret, 0,
			'a writer that does not take lock_target does not wait for them on Citus (doc/parallel.md)');
		$coord->safe_psql($db, "DELETE FROM hourly WHERE hour = '2026-02-01'");
		$pgate->query_safe('SELECT pg_advisory_unlock(4242)');
		$prunner->quit;
		$coord->safe_psql($db, "CALL backfill.run($other)");
	}
	else
	{
		$pgate->query_safe('SELECT pg_advisory_unlock(4242)');
		$prunner->quit;
	}
	is( $coord->safe_psql($db, qq{
SELECT r.status || ' ' || count(*) || ' ' || count(*) FILTER (WHERE c.executed_via = 'worker')
  FROM backfill.runs r JOIN backfill.chunks c USING (run_id)
 WHERE run_id = $prun GROUP BY r.status}),
		'done 14 14', "... done, its 14 chunks executed by workers");
}
is(diff_count('hourly', 'hourly_expected'), '0',
	'parallel => 2, co-located rollup: rows as the source says');
is(diff_count('daily', 'daily_expected'), '0',
	'parallel => 2, rollup not co-located: rows as the source says');
is($coord->safe_psql($db,
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'backfill worker'"),
	'0', 'no backfill worker is left running');
is( $coord->safe_psql($db, q{SELECT count(*) FROM pg_locks
  WHERE locktype = 'advisory' AND classid = x'42460002'::int::oid AND objsubid = 16966
    AND objid IN ('hourly'::regclass::oid, 'daily'::regclass::oid)}),
	'0', 'and no target lock of the calls is left held');

# distributed partitioned: auto picks truncate; swap is refused
$coord->safe_psql($db, "CALL backfill.backfill('pdaily', '2026-01-01', '2026-01-15')");
$coord->safe_psql($db, "CALL backfill.backfill('pdaily', '2026-01-01', '2026-01-15')");
is(diff_count('pdaily', 'daily_expected'), '0', 'distributed partitioned target');
my $pruns = $coord->safe_psql($db,
	"SELECT max(run_id) FROM backfill.runs WHERE target = 'pdaily'::regclass");
is( $coord->safe_psql(
		$db, qq{SELECT string_agg(DISTINCT strategy || ' ' || verdict || ' ' || rows_deleted, ',')
  FROM backfill.history WHERE run_id = $pruns}),
	'truncate ok 20',
	'auto truncates the distributed partitions; the ledger gate agrees');
($ret, $out, $err) = $coord->psql($db, "SELECT backfill.set_strategy('pdaily', 'swap')");
like($err, qr/strategy "swap" is not supported on Citus tables/, 'swap is refused on a Citus table');
like($err, qr/Citus distributed table/, '... naming the kind of table');
($ret, $out, $err) = $coord->psql(
	$db, q{SELECT * FROM backfill.replace_range('hourly', 'hour', '2026-01-01', '2026-01-02',
  $$SELECT customer, hour, n, total FROM hourly_expected WHERE hour >= $1 AND hour < $2$$, 'swap')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/0A000/, 'swap through replace_range: feature_not_supported');
# the row check runs on the workers too: a source row outside the range
($ret, $out, $err) = $coord->psql(
	$db, q{SELECT * FROM backfill.replace_range('daily', 'day', '2026-01-01', '2026-01-02',
  $$SELECT day + 1 AS day, customer, n FROM daily_expected WHERE day >= $1 AND day < $2$$, 'auto')});
like($err, qr/source row outside the range/, 'a source row outside the range is refused on Citus');
is(diff_count('daily', 'daily_expected'), '0', '... and nothing is written');
$coord->safe_psql($db, "SELECT backfill.set_strategy('pdaily', 'truncate')");
$coord->safe_psql($db, "CALL backfill.backfill('pdaily', '2026-01-03', '2026-01-05')");
is(diff_count('pdaily', 'daily_expected'), '0', 'explicit truncate on distributed partitions');
# parallel => 2 on it: Citus reads every partition for a chunk (ACCESS
# SHARE until it commits), so chunks that truncate their partition run one
# at a time there, in workers, and none waits for another (measured: the
# second deferred after lock_timeout)
my $pprun = $coord->safe_psql($db,
	"SELECT backfill.plan('pdaily', '2026-01-01', '2026-01-15', probe => false)");
($ret, $out, $err) = $coord->psql($db,
	"SET backfill.lock_timeout = 200; CALL backfill.run($pprun, parallel => 2)");
is($ret, 0, 'parallel => 2 on the distributed partitioned target succeeds');
is( $coord->safe_psql($db, qq{
SELECT r.status || ' ' || count(*) FILTER (WHERE c.executed_via = 'worker') || ' '
       || string_agg(DISTINCT c.strategy, ',') || ' ' || sum(c.deferrals)
  FROM backfill.runs r JOIN backfill.chunks c USING (run_id)
 WHERE run_id = $pprun GROUP BY r.status}),
	'done 14 truncate 0', '... its 14 chunks truncated by workers, none deferred');
is(diff_count('pdaily', 'daily_expected'), '0', '... rows as the source says');

# reconcile, check, lineage over distributed tables
is( $coord->safe_psql(
		$db, "SELECT string_agg(DISTINCT verdict, ',') FROM backfill.reconcile($pruns)"),
	'ok', 'reconcile: every chunk of the partitioned run agrees with ledger and neighbours');
is( $coord->safe_psql(
		$db, "SELECT count(*) FILTER (WHERE verdict = 'ok') FROM backfill.\"check\"('pdaily', '2026-01-02', '2026-01-12')"),
	'10', 'check over the distributed target');
is( $coord->safe_psql(
		$db, "SELECT string_agg(state || ' ' || range_start::date || ' ' || range_end::date, ',') FROM backfill.lineage('daily')"),
	'backfilled 2026-01-01 2026-01-15', 'lineage of the distributed rollup');

# 4. Locks: the daily job's lock_target makes a chunk wait (deferred);
# a writer through the coordinator makes a chunk wait; a writer waits for
# a chunk; no row lost or doubled.
my $job = $coord->background_psql($db);
$job->query_safe("BEGIN; SELECT backfill.lock_target('hourly');");
my $lrun = $coord->safe_psql($db,
	"SELECT backfill.plan('hourly', '2026-01-02', '2026-01-03', probe => false)");
($ret, $out, $err) = $coord->psql($db,
	"SET backfill.lock_timeout = 200; SET backfill.max_attempts = 5; CALL backfill.run($lrun)");
like($err, qr/deferred/, 'a chunk waits for the daily job holding lock_target');
$job->query_safe('COMMIT');

my $writer = $coord->background_psql($db);
$writer->query_safe(
	"BEGIN; INSERT INTO hourly VALUES (1, '2026-01-02 05:00', 99, 99);");
($ret, $out, $err) = $coord->psql($db,
	"SET backfill.lock_timeout = 200; SET backfill.max_attempts = 5; CALL backfill.run($lrun)");
like($err, qr/deferred/, 'a chunk waits for a writer connected to the coordinator');
$writer->query_safe('COMMIT');

my $gate = $coord->background_psql($db);
$gate->query_safe('SELECT pg_advisory_lock(4242)');
my $runner = $coord->background_psql($db, on_error_stop => 0);
$runner->query_until(qr/started/, "\\echo started\nCALL backfill.run($lrun);\n");
ok( $coord->poll_query_until(
		$db, q{SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory'
  AND objid = 4242 AND NOT granted)}),
	'the chunk is in flight, inside its source');
($ret, $out, $err) = $coord->psql($db,
	"SET lock_timeout = '300ms'; INSERT INTO hourly VALUES (2, '2026-01-02 06:00', 99, 99)");
like($err, qr/lock timeout/, 'a writer to the distributed target waits for the chunk');
$gate->query_safe('SELECT pg_advisory_unlock(4242)');
$runner->quit;
is( $coord->safe_psql($db, "SELECT status FROM backfill.runs WHERE run_id = $lrun"),
	'done', 'the run finished after the writers');
is(diff_count('hourly', 'hourly_expected'), '0',
	'no row lost or doubled: the writer\'s row in the range was replaced');

# 5. pg_cron ran the scheduled run of the reference table (before any
# worker is stopped: a reference table has a copy on every worker).
ok( $coord->poll_query_until(
		$db, "SELECT status = 'done' FROM backfill.runs WHERE run_id = $cron_run"),
	'pg_cron finished the run of the reference table');
is($coord->safe_psql($db, "SELECT count(*) || ' ' || sum(n) FROM ref_daily"),
	'14 6720', 'reference table target filled by pg_cron');
is( $coord->safe_psql(
		$db, "SELECT string_agg(DISTINCT executed_via, ',') FROM backfill.history WHERE run_id = $cron_run"),
	'pg_cron', '... every chunk executed by pg_cron');

# 6. A worker stopped with -m immediate in the middle of a chunk.
my $frun = $coord->safe_psql($db,
	"SELECT backfill.plan('hourly', '2026-01-05', '2026-01-08', probe => false)");
$coord->safe_psql($db, q{UPDATE payments SET amount = amount + 1
  WHERE paid_at >= '2026-01-05' AND paid_at < '2026-01-08'});
$gate->query_safe('SELECT pg_advisory_lock(4242)');
$runner = $coord->background_psql($db, on_error_stop => 0);
$runner->query_until(qr/started/, "\\echo started\nCALL backfill.run($frun);\n");
ok( $coord->poll_query_until(
		$db, q{SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory'
  AND objid = 4242 AND NOT granted)}),
	'chunk 1 is in flight, its DELETE done on the workers');
$w2->stop('immediate');
$gate->query_safe('SELECT pg_advisory_unlock(4242)');
ok( $coord->poll_query_until(
		$db, "SELECT status = 'failed' FROM backfill.runs WHERE run_id = $frun"),
	'the run fails');
eval { $runner->quit; };
like( $coord->safe_psql(
		$db, "SELECT chunk_no || ' ' || status || ' ' || error_message FROM backfill.chunks WHERE run_id = $frun AND chunk_no = 1"),
	qr/^1 failed .*(connection|server closed)/s,
	'the chunk is failed with the connection error recorded');
$w2->start;
is( $coord->safe_psql(
		$db, q{SELECT count(*) || ' ' || sum(total) FROM hourly
  WHERE hour >= '2026-01-05' AND hour < '2026-01-06'}),
	'480 1992', 'nothing of the failed chunk is visible');
$coord->safe_psql($db, "CALL backfill.run($frun)");
is( $coord->safe_psql($db,
		"SELECT string_agg(chunk_no || ':' || status || ':' || attempts, ',' ORDER BY chunk_no) FROM backfill.chunks WHERE run_id = $frun"),
	'1:done:2,2:done:1,3:done:1', 'resumed after the worker is back');
is(diff_count('hourly', 'hourly_expected'), '0', 'no row lost or doubled');

# A worker down at plan time: plan reads only the coordinator, so it
# succeeds; the chunk fails with the connection error; resume completes.
$w1->stop('immediate');
my $prun = $coord->safe_psql($db,
	"SELECT backfill.plan('daily', '2026-01-01', '2026-01-03', probe => false)");
like($prun, qr/^\d+$/, 'plan with a worker down succeeds (it does not touch the workers)');
($ret, $out, $err) = $coord->psql($db, "CALL backfill.run($prun)");
like($err, qr/run $prun daily chunk 1 \[[^)]*\) failed: .*connection/s,
	'its first chunk fails with the connection error');
like($err, qr/HINT:  The cause is transient .*CALL backfill\.run\($prun\) retries the chunk/s,
	'a worker down is a transient cause: the hint says to run again');
is($coord->safe_psql($db,
	"SELECT error_cause || ' ' || next_step FROM backfill.chunks WHERE run_id = $prun AND chunk_no = 1"),
	"transient CALL backfill.run($prun)", 'and the chunk records it');
$w1->start;
$coord->safe_psql($db, "CALL backfill.run($prun)");
is($coord->safe_psql($db, "SELECT status FROM backfill.runs WHERE run_id = $prun"),
	'done', 'and the run completes once the worker is back');
is(diff_count('daily', 'daily_expected'), '0', 'rollup intact');

$_->stop for @nodes;
done_testing();
