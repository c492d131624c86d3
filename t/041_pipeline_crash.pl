# Crash safety of a group (pipelines): a kill -9 of the backend executing
# CALL backfill.run_group, in the middle of an upstream chunk and again in
# the middle of the downstream chunk, leaves every target of the group
# consistent: no chunk half-applied, nothing looks busy, no downstream
# chunk ran before its upstream chunks; run_group then resumes to the
# tables a clean run gives.
#
# A chunk is paused mid-transaction deterministically: both sources call
# gate(), which waits on an advisory lock held by another session.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = backfill_node('pipeline_crash', conf => "restart_after_crash = on\n");

my $db = 'postgres';
$node->safe_psql($db, gate_sql() . q{
CREATE TABLE src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO src SELECT '2024-05-01 00:00+00'::timestamptz + i * interval '3 hours', 1
  FROM generate_series(0, 8 * 31 - 1) i;
-- what a broken pipeline left behind: every day and the month are 0
CREATE TABLE daily (day timestamptz NOT NULL, v int NOT NULL);
INSERT INTO daily SELECT d, 0
  FROM generate_series('2024-05-01 00:00+00'::timestamptz, '2024-05-31', '1 day') d;
CREATE TABLE monthly (month timestamptz NOT NULL, v int NOT NULL);
INSERT INTO monthly VALUES ('2024-05-01 00:00+00', 0);
CREATE TABLE daily_before AS SELECT * FROM daily;
CREATE TABLE monthly_before AS SELECT * FROM monthly;
SELECT backfill.register('daily', 'day',
    'SELECT date_trunc(''day'', ts) AS day, sum(v)::int AS v FROM public.src
      WHERE ts >= $1 AND ts < $2 AND public.gate(ts) GROUP BY 1');
SELECT backfill.register('monthly', 'month',
    'SELECT date_trunc(''month'', day) AS month, sum(v)::int AS v FROM public.daily
      WHERE day >= $1 AND day < $2 AND public.gate(day) GROUP BY 1',
    chunk => '1 month');
SELECT backfill.depend('monthly', 'daily');
});

# What a correct refill of May 6-9 gives, built by hand.
$node->safe_psql($db, q{
CREATE TABLE daily_ref AS
SELECT * FROM daily WHERE day < '2024-05-06' OR day >= '2024-05-10'
UNION ALL SELECT d, 8
  FROM generate_series('2024-05-06 00:00+00'::timestamptz, '2024-05-09', '1 day') d;
CREATE TABLE monthly_ref AS SELECT '2024-05-01 00:00+00'::timestamptz AS month, 32 AS v;
});

# Rows of table $t that differ from table $other, both ways.
sub diff_count
{
	my ($t, $other) = @_;
	return table_diff($node, $db, $t, $other);
}

# Start CALL backfill.run_group(group) in the background with the gate
# closed on $day; kill -9 its backend once it waits there; wait for the
# server to be back.
sub kill_group_at
{
	my ($group, $day, $what) = @_;
	my ($gate, $runner, $pid) = start_gated($node, $db,
		"CALL backfill.run_group($group)", $day,
		"$what: the group waits at the gate");
	crash_restart($node, $db, $pid, "$what: ", $runner, $gate);
	$node->safe_psql($db, 'TRUNCATE gate_day');
	return;
}

# Invariants of every target of the group after a crash.
sub check_group
{
	my ($group, $what) = @_;
	is( $node->safe_psql($db, q{
SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'}),
		'0', "$what: no advisory lock survives");
	is( $node->safe_psql($db, qq{
SELECT count(*) FROM backfill.progress p JOIN backfill.runs r USING (run_id)
 WHERE r.group_id = $group AND p.pid IS NOT NULL}),
		'0', "$what: nobody executes a run of the group");
	is( $node->safe_psql($db, qq{
SELECT count(*) FROM backfill.chunks c JOIN backfill.runs r USING (run_id)
 WHERE r.group_id = $group AND c.started_at IS NOT NULL AND c.finished_at IS NULL}),
		'0', "$what: no chunk is left marked as started");
	# every done chunk's rows are there, every other chunk's rows are as before
	is( $node->safe_psql($db, qq{
SELECT count(*) FROM backfill.chunks c JOIN backfill.runs r USING (run_id)
 WHERE r.group_id = $group AND r.target = 'daily'::regclass
   AND (SELECT count(*) FROM daily d, daily_ref f, daily_before b
         WHERE d.day >= c.chunk_start AND d.day < c.chunk_end
           AND f.day = d.day AND b.day = d.day
           AND d.v = CASE WHEN c.status = 'done' THEN f.v ELSE b.v END)
       <> 1}),
		'0', "$what: daily: done chunks applied, the others untouched");
	is( $node->safe_psql($db, qq{
SELECT CASE c.status WHEN 'done' THEN (SELECT v FROM monthly) = 32
                     ELSE (SELECT v FROM monthly) = 0 END
  FROM backfill.chunks c JOIN backfill.runs r USING (run_id)
 WHERE r.group_id = $group AND r.target = 'monthly'::regclass}),
		't', "$what: monthly: applied only if its chunk is done");
	is( $node->safe_psql($db, qq{
SELECT count(*) FROM backfill.chunks m JOIN backfill.runs mr USING (run_id),
       backfill.chunks d JOIN backfill.runs dr USING (run_id)
 WHERE mr.group_id = $group AND mr.target = 'monthly'::regclass
   AND dr.group_id = $group AND dr.target = 'daily'::regclass
   AND m.status = 'done' AND (d.status <> 'done' OR d.finished_at > m.started_at)}),
		'0', "$what: the monthly chunk never ran before the daily chunks");
	return;
}

my $group = $node->safe_psql($db, q{
SELECT backfill.plan('daily', '2024-05-06', '2024-05-10', probe => false, cascade => true)});
like($group, qr/^\d+$/, 'group planned');

# --- kill -9 in the middle of the third daily chunk. -----------------
kill_group_at($group, '2024-05-08 00:00+00', 'upstream chunk');
check_group($group, 'upstream chunk');
is( $node->safe_psql($db, qq{
SELECT string_agg(c.status, ',' ORDER BY r.run_id, c.chunk_no)
  FROM backfill.chunks c JOIN backfill.runs r USING (run_id) WHERE r.group_id = $group}),
	'done,done,pending,pending,pending', 'upstream chunk: two daily chunks done, the rest pending');

# Run the daily chunks only, then kill -9 in the middle of the monthly chunk.
$node->safe_psql($db, "CALL backfill.run_group($group, max_chunks => 2)");
is( $node->safe_psql($db, qq{
SELECT string_agg(r.status, ',' ORDER BY r.run_id) FROM backfill.runs r WHERE r.group_id = $group}),
	'done,planned', 'the daily run is done, the monthly one planned');
kill_group_at($group, '2024-05-31 00:00+00', 'downstream chunk');
check_group($group, 'downstream chunk');
is(diff_count('monthly', 'monthly_before'), '0', 'downstream chunk: monthly is as before');

# Resume: the group finishes and both tables equal a correct run.
$node->safe_psql($db, "CALL backfill.run_group($group)");
is( $node->safe_psql($db, "SELECT status FROM backfill.group_progress WHERE group_id = $group"),
	'done', 'the resumed group is done');
check_group($group, 'after resume');
is(diff_count('daily', 'daily_ref'), '0', 'daily equals a correct run');
is(diff_count('monthly', 'monthly_ref'), '0', 'monthly equals a correct run');
is( $node->safe_psql($db, qq{
SELECT string_agg(c.attempts::text, ',' ORDER BY r.run_id, c.chunk_no)
  FROM backfill.chunks c JOIN backfill.runs r USING (run_id) WHERE r.group_id = $group}),
	'1,1,1,1,1', 'each chunk was applied once');

$node->stop;
done_testing();
