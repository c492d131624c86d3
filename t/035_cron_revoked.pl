# Rights revoked between scheduling and a real pg_cron tick (checklist S3):
# the job runs as the role that scheduled it, so the chunk fails with 42501
# recorded on it, nothing of the target is deleted, the run is failed and
# its job is parked; another role's run on another table is not
# affected.
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

my $node = backfill_node('cronrevoke', cron => 1);
$node->safe_psql('postgres', q{
-- pg_cron's background workers connect as the job's role: it needs LOGIN
CREATE ROLE etl LOGIN;
CREATE ROLE other LOGIN;
GRANT USAGE ON SCHEMA cron TO etl, other;
CREATE TABLE events (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO events SELECT t, 1 FROM generate_series('2026-01-01 00:00+00'::timestamptz,
                                                    '2026-01-02 23:00+00', '1 hour') t;
CREATE TABLE tgt (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO tgt VALUES ('2026-01-01 12:00+00', 0), ('2026-01-02 12:00+00', 0);
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
my $run = $node->safe_psql('postgres',
	"SET ROLE etl; SELECT backfill.plan('tgt', '2026-01-01', '2026-01-03', probe => false)");
my $run2 = $node->safe_psql('postgres',
	"SET ROLE other; SELECT backfill.plan('tgt2', '2026-01-01', '2026-01-03', probe => false)");
# No tick may come between the schedule and the REVOKE below.
early_in_minute();
$node->safe_psql('postgres', "SET ROLE etl; SELECT backfill.schedule($run, '* * * * *', chunks_per_tick => 2)");
$node->safe_psql('postgres', "SET ROLE other; SELECT backfill.schedule($run2, '* * * * *', chunks_per_tick => 2)");
is($node->safe_psql('postgres',
		"SELECT string_agg(username, ',' ORDER BY username) FROM cron.job WHERE jobname LIKE 'backfill_run_%'"),
	'etl,other', 'the jobs belong to the scheduling roles');

# The source's table is taken away from etl before the first tick.
$node->safe_psql('postgres', 'REVOKE SELECT ON events FROM etl');

ok($node->poll_query_until('postgres', qq{
SELECT (SELECT status FROM backfill.runs WHERE run_id = $run) = 'failed'
   AND (SELECT status FROM backfill.runs WHERE run_id = $run2) = 'done'}, 't'),
	'a tick ran both runs');
is($node->safe_psql('postgres', qq{
SELECT string_agg(format('%s:%s:%s:%s', chunk_no, status, coalesce(error_sqlstate, '-'),
                         coalesce(executed_via, '-')), ' ' ORDER BY chunk_no)
  FROM backfill.chunks WHERE run_id = $run}),
	'1:failed:42501:pg_cron 2:pending:-:-',
	'the chunk failed with 42501 in the pg_cron tick');
is($node->safe_psql('postgres', "SELECT string_agg(v::text, ',' ORDER BY ts) FROM tgt"),
	'0,0', 'nothing of the target was deleted');
is($node->safe_psql('postgres', qq{
SELECT count(*) FROM cron.job
 WHERE jobname = 'backfill_run_$run' AND schedule <> '0 0 31 2 *'}), 0,
	'the failed run\'s job no longer fires (parked, or already swept)');
is($node->safe_psql('postgres', "SELECT count(*) || ' ' || sum(v) FROM tgt2"),
	'48 48', 'the other role\'s run was not affected');
$node->stop;
done_testing();
