# Changed regions survive a crash (issue 18): a chunk consumes the logged
# changes of its range in its own transaction, so a backend killed (kill -9)
# in the middle of a stale run's chunk loses nothing.  After the restart the
# chunks that committed have consumed their changes, the interrupted chunk's
# change is still logged, a stale plan plans exactly what is left, and the
# resumed run leaves the target equal to a clean rebuild and the log empty.
# A write that came in while the chunk was paused, behind the watermark, is
# logged once and kept.
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

my $node = backfill_node('regions_crash', conf => "restart_after_crash = on\n");
my $db = 'postgres';
$node->safe_psql($db, gate_sql() . q{
SET TimeZone = 'UTC';
CREATE TABLE payments (paid_at timestamptz NOT NULL, amount int NOT NULL);
INSERT INTO payments SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '3 hours', 1
  FROM generate_series(0, 8 * 7 - 1) i;
CREATE TABLE daily (day timestamptz NOT NULL, amount int NOT NULL);
SELECT backfill.register('daily', 'day',
    $$SELECT date_trunc('day', paid_at) AS day, sum(amount)::int AS amount
        FROM public.payments WHERE paid_at >= $1 AND paid_at < $2 AND public.gate(paid_at)
       GROUP BY 1$$);
SELECT backfill.watch('daily', 'payments', 'paid_at');
SET client_min_messages = warning;
CALL backfill.backfill('daily', '2024-01-01', '2024-01-08');
});

# Late payments for January 2, 4 and 6, in three transactions.
$node->safe_psql($db, q{
INSERT INTO payments VALUES ('2024-01-02 10:00+00', 5);
INSERT INTO payments VALUES ('2024-01-04 10:00+00', 5);
INSERT INTO payments VALUES ('2024-01-06 10:00+00', 5);
});
is($node->safe_psql($db, q{
SELECT string_agg(to_char(chunk_start AT TIME ZONE 'UTC', 'MM-DD'), ',' ORDER BY chunk_start)
  FROM backfill.changed_regions}), '01-02,01-04,01-06', 'three late days are logged');

my $run = $node->safe_psql($db, q{
SELECT backfill.plan('daily', '2024-01-01', '2024-01-08', only_chunks => 'stale', probe => false)});
is($node->safe_psql($db, "SELECT count(*) FROM backfill.chunks WHERE run_id = $run"),
	'3', 'the stale plan has the three chunks');

# kill -9 in the middle of the second chunk (January 4), after a late
# write for January 4 committed while that chunk was paused.
my ($gate, $runner, $pid) = start_gated($node, $db, "CALL backfill.run($run)",
	'2024-01-04 00:00+00', 'the stale run waits at the gate in its second chunk');
$node->safe_psql($db, q{INSERT INTO payments VALUES ('2024-01-04 11:00+00', 7)});
crash_restart($node, $db, $pid, '', $runner, $gate);

is($node->safe_psql($db, qq{
SELECT string_agg(to_char(chunk_start AT TIME ZONE 'UTC', 'MM-DD') || ' ' || status, ',' ORDER BY chunk_no)
  FROM backfill.chunks WHERE run_id = $run}),
	'01-02 done,01-04 pending,01-06 pending', 'only the first chunk committed');
is($node->safe_psql($db, q{
SELECT string_agg(to_char(chunk_start AT TIME ZONE 'UTC', 'MM-DD'), ',' ORDER BY chunk_start)
  FROM backfill.changed_regions}), '01-04,01-04,01-06',
	'the killed chunk consumed nothing: January 4 (twice: two transactions) and 6 are still logged');

$node->safe_psql($db, "TRUNCATE gate_day");
$node->safe_psql($db, "SET client_min_messages = warning; CALL backfill.run($run)");
is($node->safe_psql($db, "SELECT status FROM backfill.runs WHERE run_id = $run"),
	'done', 'the resumed run is done');
is($node->safe_psql($db, 'SELECT count(*) FROM backfill.changed_regions'),
	'0', 'and consumed every logged change');
is($node->safe_psql($db, q{
SELECT count(*) FROM daily d
  FULL JOIN (SELECT date_trunc('day', paid_at) AS day, sum(amount)::int AS amount
               FROM payments GROUP BY 1) s USING (day)
 WHERE d.amount IS DISTINCT FROM s.amount}),
	'0', 'the target equals a clean rebuild of the source');
is($node->safe_psql($db, q{
SELECT backfill.plan('daily', '2024-01-01', '2024-01-08', only_chunks => 'stale') IS NULL}),
	't', 'nothing is stale any more');

$node->stop;
done_testing();
