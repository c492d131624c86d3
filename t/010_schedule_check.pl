# t/010_schedule_check.pl: pg_cron really fires a standing check; and
# reconcile while a chunk is in flight.
#
# A target whose last days disagree with the payment ledger on one day
# (a payment missing from the target) gets a standing check scheduled by an
# unprivileged role with '* * * * *'.  We wait (at most 150 s) for pg_cron
# to run it, then expect: the job belongs to that role and runs exactly
# SELECT backfill.run_check(<id>); backfill.check_results holds one row
# per checked chunk; backfill.alerts shows exactly the planted mismatch;
# cron.job_run_details says succeeded; unschedule_check removes the job.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);

my $node = backfill_node('check', cron => 1);

$node->safe_psql(
	'postgres', q{
CREATE ROLE analyst LOGIN;
GRANT USAGE ON SCHEMA cron TO analyst;

CREATE TABLE payments (ts timestamptz NOT NULL, amount numeric NOT NULL);
CREATE TABLE ledger (ts timestamptz NOT NULL, amount numeric NOT NULL);
-- the ten days before today, 24 payments a day, in both tables
INSERT INTO ledger
SELECT date_trunc('day', now()) - d * interval '1 day' + h * interval '1 hour',
       10 + h
  FROM generate_series(1, 10) d, generate_series(0, 23) h;
INSERT INTO payments SELECT * FROM ledger;
-- the planted mismatch: three days ago the target lost its 13:00 payment
CREATE TABLE planted AS
SELECT date_trunc('day', now()) - interval '3 days' + interval '13 hours' AS ts;
DELETE FROM payments WHERE ts = (SELECT ts FROM planted);
GRANT SELECT ON payments, ledger TO analyst;
-- the definition's text runs as its author (etl); the role that schedules
-- the check must have the author's privileges
CREATE ROLE etl;
GRANT SELECT, INSERT, DELETE ON payments TO etl;
GRANT SELECT ON ledger TO etl;
GRANT etl TO analyst;
SET ROLE etl;
SELECT backfill.register('payments', 'ts',
         'SELECT ts, amount FROM ledger WHERE ts >= $1 AND ts < $2',
         ledger => 'SELECT sum(amount) FROM ledger WHERE ts >= $1 AND ts < $2',
         measure => 'sum(amount)');
RESET ROLE;
});

my $check_id = $node->safe_psql('postgres', q{
SET ROLE analyst;
SELECT backfill.schedule_check('payments', '* * * * *', '7 days');
});
like($check_id, qr/^\d+$/, 'schedule_check returns the check id');

my $job_id = $node->safe_psql('postgres',
	"SELECT job_id FROM backfill.checks WHERE check_id = $check_id");
like($job_id, qr/^\d+$/, 'the check records its job id');

is( $node->safe_psql(
		'postgres',
		"SELECT jobname || '|' || command || '|' || username FROM cron.job WHERE jobid = $job_id"
	),
	"backfill_check_$check_id|SELECT backfill.run_check($check_id)|analyst",
	'the job is named after the check, runs only run_check and belongs to the caller');

# pg_cron is minute-granular: the first tick comes within about a minute
my $results = wait_for_value($node,
	"SELECT count(DISTINCT chunk_start) FROM backfill.check_results WHERE check_id = $check_id",
	sub { $_[0] > 0 }, 150);
is($results, 7, 'the job checked the 7 whole days before today');

is( $node->safe_psql(
		'postgres', q{
SELECT verdict || '|' || target_value || '|' || ledger_value || '|' || checked_by
       || '|' || (chunk_end - chunk_start)
  FROM backfill.alerts a, planted p
 WHERE a.chunk_start <= p.ts AND p.ts < a.chunk_end}
	),
	'ledger_mismatch|493|516|analyst|1 day',
	'alerts shows the planted mismatch with both figures');
is($node->safe_psql('postgres', 'SELECT count(*) FROM backfill.alerts'),
	'1', 'and nothing else');

my $status = wait_for_value($node,
	"SELECT string_agg(DISTINCT status, ',') FROM cron.job_run_details WHERE jobid = $job_id AND status IN ('succeeded', 'failed')",
	sub { $_[0] ne '' }, 30);
is($status, 'succeeded', 'cron.job_run_details says succeeded');

# the fix: put the payment back; a passing result supersedes the alert
$node->safe_psql(
	'postgres', q{
INSERT INTO payments SELECT ts, 23 FROM planted;
});
is( $node->safe_psql(
		'postgres', "SET ROLE analyst; SELECT backfill.run_check($check_id)"),
	'0',
	'run_check by hand finds no failing chunk after the fix');
is($node->safe_psql('postgres', 'SELECT count(*) FROM backfill.alerts'),
	'0', 'the alert is superseded by the passing result');

is( $node->safe_psql(
		'postgres',
		"SET ROLE analyst; SELECT backfill.unschedule_check($check_id)"),
	't',
	'unschedule_check removes the job');
is( $node->safe_psql(
		'postgres',
		"SELECT count(*) FROM cron.job WHERE jobid = $job_id"),
	'0',
	'the job is gone');
is( $node->safe_psql(
		'postgres',
		"SELECT job_id IS NULL FROM backfill.checks WHERE check_id = $check_id"),
	't',
	'the check forgets its job, its results stay');

# ---- reconcile during a run --------------------------------------------
# Chunk 2 of a 3-chunk run is held in flight (its source waits for an
# advisory lock).  reconcile must report it not_run, not a mismatch, and
# an open transaction that has just reconciled (and so updated chunk 1's
# row) must not keep the chunks from committing.
$node->safe_psql(
	'postgres', q{
CREATE TABLE raw2 (ts timestamptz NOT NULL, amount numeric NOT NULL);
INSERT INTO raw2
SELECT '2024-01-01 00:00+00'::timestamptz + h * interval '1 hour', 10
  FROM generate_series(0, 71) h;
CREATE TABLE t2 (ts timestamptz NOT NULL, amount numeric NOT NULL);
CREATE FUNCTION hold() RETURNS boolean LANGUAGE plpgsql VOLATILE
    AS 'BEGIN PERFORM pg_advisory_xact_lock_shared(4242); RETURN true; END';
SELECT backfill.register('t2', 'ts',
         $$SELECT ts, amount FROM raw2
            WHERE ts >= $1 AND ts < $2
              AND (ts < '2024-01-02 00:00+00' OR hold())$$,
         ledger => 'SELECT sum(amount) FROM raw2 WHERE ts >= $1 AND ts < $2',
         measure => 'sum(amount)');
});
my $run = $node->safe_psql('postgres',
	"SET TimeZone = 'UTC'; SELECT backfill.plan('t2', '2024-01-01', '2024-01-04', probe => false)");

my $holder = $node->background_psql('postgres');
$holder->query_safe('SELECT pg_advisory_lock(4242)');
my $runner = $node->background_psql('postgres', on_error_stop => 0);
$runner->query_until(qr/started/, "\\echo started\nCALL backfill.run($run);\n");

my $in_flight = 0;
for (my $waited = 0; $waited < 60; $waited += 0.5)
{
	$in_flight = $node->safe_psql(
		'postgres', qq{
SELECT (SELECT status FROM backfill.chunks WHERE run_id = $run AND chunk_no = 1) = 'done'
   AND EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted)});
	last if $in_flight eq 't';
	sleep(0.5);
}
is($in_flight, 't', 'chunk 1 is done and chunk 2 is waiting inside its source');

my $reader = $node->background_psql('postgres');
is( $reader->query_safe(
		"BEGIN; SELECT string_agg(chunk_no || ':' || status || ':' || verdict, ',' ORDER BY chunk_no) FROM backfill.reconcile($run, include_not_run => true);"
	),
	'1:done:ok,2:pending:not_run,3:pending:not_run',
	'reconcile during the run: the chunk in flight is not_run, not a mismatch');

$holder->query_safe('SELECT pg_advisory_unlock(4242)');
my $run_status = '';
for (my $waited = 0; $waited < 60; $waited += 0.5)
{
	$run_status = $node->safe_psql('postgres',
		"SELECT status FROM backfill.runs WHERE run_id = $run");
	last if $run_status eq 'done';
	sleep(0.5);
}
is($run_status, 'done',
	'the run finishes while the reconciling transaction is still open');
$reader->query_safe('COMMIT');
is( $node->safe_psql(
		'postgres',
		"SELECT string_agg(chunk_no || ':' || verdict, ',' ORDER BY chunk_no) FROM backfill.reconcile($run)"
	),
	'1:ok,2:ok,3:ok',
	'afterwards every chunk reconciles ok');
$reader->quit;
$runner->quit;
$holder->quit;

$node->stop;
done_testing();
