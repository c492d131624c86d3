# Upgrading a real 0.1.0 installation.  A cluster runs the 0.1.0 release
# (built from its release commit, versions/RELEASES) and is filled with
# real state by it: two targets, three definitions, a finished run, an
# unfinished probed run, a group halfway, a dependency, a standing check
# and a run scheduled with pg_cron.  Then the same data directory is
# started on the current library:
#   - until ALTER EXTENSION UPDATE, every entry point refuses (55000) and
#     names the command, so the new library never works on an old catalog;
#   - after it, everything is kept (every catalog row, lineage, history),
#     the unfinished run and the group resume to done, the pg_cron job
#     fires under the new library, the standing check runs;
#   - runs of 0.1.0 kept nothing and cannot be reverted; a keeping run on
#     the updated catalog is reverted exactly (undo, 0.2.0);
#   - the updated extension has exactly the objects of a fresh install;
#   - pg_dump and pg_restore of the updated database round-trip.
#
# pg_cron ticks by the minute: the waits are bounded (150 s).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use BackfillRelease;
use File::Copy qw(move);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $from = '0.1.0';
my $dir = PostgreSQL::Test::Utils::tempdir();
my ($old_path, $why) = release_install($from, $dir);
plan skip_all => "release $from cannot be built here: $why" unless $old_path;

my $cron_conf = q{
shared_preload_libraries = 'pg_cron'
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 20
TimeZone = 'UTC'
};

# 1. The 0.1.0 release, filled with real state.
my $old = PostgreSQL::Test::Cluster->new('old', install_path => $old_path);
$old->init;
$old->append_conf('postgresql.conf', $cron_conf);
$old->start;
$old->safe_psql('postgres', q{
SET client_min_messages = warning;
CREATE EXTENSION pg_cron;
CREATE EXTENSION backfill;
CREATE ROLE etl LOGIN;
GRANT USAGE ON SCHEMA cron TO etl;
CREATE TABLE payments (paid_at timestamptz NOT NULL, amount int NOT NULL, is_test bool NOT NULL);
INSERT INTO payments
SELECT t, (extract(hour FROM t))::int, extract(hour FROM t) = 3
  FROM generate_series('2026-01-01 00:00+00'::timestamptz, '2026-02-28 23:00+00', '1 hour') t;
CREATE TABLE ledger (day date PRIMARY KEY, amount bigint NOT NULL);
INSERT INTO ledger SELECT paid_at::date, sum(amount) FILTER (WHERE NOT is_test)
  FROM payments GROUP BY 1;
CREATE TABLE daily (day timestamptz NOT NULL, amount bigint NOT NULL);
CREATE TABLE monthly (month timestamptz NOT NULL, amount bigint NOT NULL);
GRANT SELECT ON payments, ledger TO etl;
GRANT SELECT, INSERT, DELETE ON daily, monthly TO etl;
});
is($old->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'backfill'"),
	$from, "the old cluster runs release $from");

my @etl = (extra_params => [ '-U', 'etl' ]);
$old->safe_psql('postgres', q{
SET client_min_messages = warning;
SELECT backfill.register('daily', 'day',
    $$SELECT date_trunc('day', paid_at) AS day, sum(amount) AS amount
        FROM public.payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1$$,
    definition => 'v1: every payment', measure => 'sum(amount)');
SELECT backfill.plan('daily', '2026-01-01', '2026-01-08', note => 'finished', probe => false) AS r \gset
CALL backfill.run(:r);
SELECT backfill.register('daily', 'day',
    $$SELECT date_trunc('day', paid_at) AS day, sum(amount) AS amount
        FROM public.payments WHERE paid_at >= $1 AND paid_at < $2 AND NOT is_test GROUP BY 1$$,
    definition => 'v2: no test payments', measure => 'sum(amount)',
    ledger => $$SELECT sum(amount) FROM public.ledger WHERE day >= $1 AND day < $2$$);
SELECT backfill.register('monthly', 'month',
    $$SELECT date_trunc('month', day) AS month, sum(amount) AS amount
        FROM public.daily WHERE day >= $1 AND day < $2 GROUP BY 1$$,
    chunk => '1 month', definition => 'monthly v1', measure => 'sum(amount)');
SELECT backfill.depend('monthly', 'daily');
-- unfinished: probed
SELECT backfill.plan('daily', '2026-01-08', '2026-01-15', note => 'probed') AS r \gset
CALL backfill.run(:r);
-- a group halfway: the probe of its root ran
SELECT backfill.plan('daily', '2026-02-01', '2026-02-04', note => 'group', cascade => true) AS g \gset
CALL backfill.run_group(:g);
}, @etl);
my $scheduled = $old->safe_psql('postgres', q{
SET client_min_messages = warning;
SELECT backfill.plan('daily', '2026-01-15', '2026-02-01', note => 'scheduled') AS r \gset
CALL backfill.run(:r);
SELECT backfill.schedule(:r, '* * * * *', chunks_per_tick => 1);
SELECT :r;
}, @etl);
$scheduled = (split /\n/, $scheduled)[-1];
$old->safe_psql('postgres', q{
SELECT backfill.schedule_check('daily', '0 4 * * *', lookback => '30 days');
-- planned under 0.1.0, replanned after the update (0.2.0's replan)
SELECT backfill.plan('daily', '2026-03-10', '2026-03-12', note => 'to replan');
}, @etl);

# Everything a user reads, as text, in a stable order: 0.1.0's columns.
my $snapshot_sql = q{
SELECT 'targets', string_agg(t::text, '|' ORDER BY t.target) FROM (SELECT target::text, time_column, chunk, current_version, measure, ledger, registered_by FROM backfill.targets) t
UNION ALL
SELECT 'definitions', string_agg(d::text, '|' ORDER BY d.target, d.version) FROM (SELECT target::text, version, label, source, source_hash, created_at, created_by, author::regrole, measure, ledger, tolerance, ledger_gate, strategy FROM backfill.definitions) d
UNION ALL
SELECT 'runs', string_agg(r::text, '|' ORDER BY r.run_id) FROM (SELECT run_id, target::text, range_start, range_end, chunk, status, note, probe, backwards, definition_version, timezone, search_path, created_at, created_by, finished_at, group_id, upstream_runs, chunks_per_tick, quiet_hours FROM backfill.runs WHERE run_id <> } . $scheduled . q{) r
UNION ALL
SELECT 'dependencies', string_agg(d::text, '|') FROM (SELECT downstream::text, upstream::text, created_at, created_by FROM backfill.dependencies) d
UNION ALL
SELECT 'chunks', string_agg(c::text, '|' ORDER BY c.run_id, c.chunk_no) FROM (SELECT run_id, chunk_no, chunk_start, chunk_end, status, rows_deleted, rows_inserted, before_value, after_value, ledger_value, verdict, started_at, finished_at, executed_by, executed_via FROM backfill.chunks WHERE run_id <> } . $scheduled . q{) c
UNION ALL
SELECT 'checks', string_agg(c::text, '|') FROM (SELECT check_id, target::text, cron, lookback, created_by FROM backfill.checks) c
UNION ALL
SELECT 'lineage daily', string_agg(l::text, '|' ORDER BY l.range_start) FROM (SELECT range_start, range_end, state, definition_version, label, run_id, finished_at, executed_by FROM backfill.lineage('daily', '-infinity', '2026-01-15')) l
UNION ALL
SELECT 'history', string_agg(h.run_id || ':' || h.chunk_no || ':' || h.status, '|' ORDER BY h.run_id, h.chunk_no) FROM backfill.history h WHERE h.run_id <> } . $scheduled . q{
UNION ALL
SELECT 'daily', md5(string_agg(d::text, '|' ORDER BY d.day)) FROM daily d WHERE d.day < '2026-01-15'
};
my $before = $old->safe_psql('postgres', $snapshot_sql);
note("0.1.0 state:\n$before");
like($before, qr/^definitions\|(?s:.*)v2: no test payments/m, 'the old state has two versions of daily');
like($before, qr/^lineage daily\|\S/m, 'the old state has lineage');
my $jobs_before = $old->safe_psql('postgres', q{
SELECT string_agg(jobname || ' ' || schedule || ' ' || command || ' ' || username, '|' ORDER BY jobname)
  FROM cron.job});
like($jobs_before, qr/backfill_run_$scheduled/, 'the scheduled run has its pg_cron job');
$old->stop;

# 2. The same data directory on the current library.
my $new = PostgreSQL::Test::Cluster->new('new');
$new->init;
my $new_data = $new->data_dir;
rename($new_data, "$new_data.unused") or die "cannot move $new_data: $!";
move($old->data_dir, $new_data) or die "cannot move the old data directory: $!";
$new->append_conf('postgresql.conf', "port = " . $new->port . "\n"
	  . "unix_socket_directories = '" . $new->host . "'\n");
$new->start;

my ($ret, $out, $err) = $new->psql('postgres',
	"SELECT backfill.plan('daily', '2026-03-01', '2026-03-02')", @etl);
like($err, qr/extension "backfill" is at version $from, but its library is version [0-9.]+.*\n(.*\n)*HINT:  Run ALTER EXTENSION backfill UPDATE/,
	'before the update, the new library refuses to work on the old catalog');
($ret, $out, $err) = $new->psql('postgres', "CALL backfill.run($scheduled)", @etl);
like($err, qr/is at version $from/, 'and so does run (a pg_cron tick before the update)');

$new->safe_psql('postgres', 'ALTER EXTENSION backfill UPDATE');
my $to = $new->safe_psql('postgres',
	"SELECT extversion FROM pg_extension WHERE extname = 'backfill'");
isnt($to, $from, "ALTER EXTENSION backfill UPDATE went from $from to $to");
is($new->safe_psql('postgres', $snapshot_sql), $before,
	'every catalog row, the lineage and the history are kept');
is($new->safe_psql('postgres', q{
SELECT string_agg(jobname || ' ' || schedule || ' ' || command || ' ' || username, '|' ORDER BY jobname)
  FROM cron.job}), $jobs_before, 'the pg_cron jobs are kept');
# Changed regions (0.2.0): each target's watermark is the newest chunk end
# its 0.1.0 history covered, NULL where nothing was built.
is($new->safe_psql('postgres', q{
SELECT string_agg(target::text || ' ' || coalesce(watermark::text, 'none'), ', '
                  ORDER BY target::text) FROM backfill.targets}),
	'daily 2026-02-02 00:00:00+00, monthly none',
	'the watermarks are derived from the 0.1.0 history');

# The unfinished run and the group resume to done.
$new->safe_psql('postgres', q{
SET client_min_messages = warning;
SELECT run_id AS r FROM backfill.runs WHERE note = 'probed' \gset
CALL backfill.run(:r, parallel => 2);
SELECT DISTINCT group_id AS g FROM backfill.runs WHERE note = 'group' \gset
CALL backfill.run_group(:g);
}, @etl);
is($new->safe_psql('postgres', q{
SELECT string_agg(note || ' ' || status, ', ' ORDER BY run_id) FROM backfill.runs
 WHERE note IN ('probed', 'group') OR group_id IS NOT NULL}),
	'probed done, group done, group done', 'the probed run and the group resume to done');
is($new->safe_psql('postgres', q{
SELECT count(*) FROM backfill.chunks c JOIN backfill.runs r USING (run_id)
 WHERE r.note = 'probed' AND c.attempts <> 1}),
	'0', 'each chunk of the resumed run ran once');
is($new->safe_psql('postgres', q{
SELECT string_agg(DISTINCT executed_via, ',') FROM backfill.chunks c JOIN backfill.runs r USING (run_id)
 WHERE r.note = 'probed' AND c.chunk_no <> (SELECT min(chunk_no) FROM backfill.chunks
                                             WHERE run_id = r.run_id)}),
	'worker', 'the probed run of 0.1.0 resumes with parallel => 2 in workers (issue 19)');
is($new->safe_psql('postgres', q{
SELECT count(*) FROM daily d
  JOIN (SELECT date_trunc('day', paid_at) AS day, sum(amount) AS amount
          FROM payments WHERE NOT is_test GROUP BY 1) s USING (day)
 WHERE d.day >= '2026-01-08' AND d.day < '2026-01-15' AND d.amount = s.amount}),
	'7', 'the resumed chunks built the rows of the pinned definition');

# Undo after the update (0.2.0): the runs of 0.1.0 kept nothing (their
# keep_replaced is false, reverts NULL) and are refused by revert; a new
# keeping run of the same target is reverted to exactly the table before.
is($new->safe_psql('postgres', q{
SELECT count(*) FILTER (WHERE keep_replaced) || '/' || count(*) FILTER (WHERE reverts IS NOT NULL)
       || '/' || (SELECT count(*) FILTER (WHERE keep_replaced OR keep_for IS NOT NULL OR key IS NOT NULL)
                    FROM backfill.definitions)
  FROM backfill.runs}), '0/0/0', 'runs and definitions of 0.1.0 keep nothing after the update');
($ret, $out, $err) = $new->psql('postgres', q{
SELECT backfill.revert(run_id) FROM backfill.runs WHERE note = 'finished'}, @etl);
like($err, qr/run \d+ did not keep the rows it replaced/,
	'a run of 0.1.0 cannot be reverted: it kept nothing');
# (the days before 2026-01-15 only: the scheduled run's pg_cron job keeps
# rebuilding the days from there, one a minute, meanwhile)
my $undo_before = $new->safe_psql('postgres', q{
SELECT md5(string_agg(d::text, '|' ORDER BY d.day)) FROM daily d
 WHERE d.day < '2026-01-15'}, @etl);
is($new->safe_psql('postgres', q{
SET client_min_messages = warning;
SELECT backfill.register('daily', 'day',
    $$SELECT date_trunc('day', paid_at) AS day, sum(amount) * 2 AS amount
        FROM public.payments WHERE paid_at >= $1 AND paid_at < $2 GROUP BY 1$$,
    definition => 'v3: kept', measure => 'sum(amount)', keep_replaced => true) AS v \gset
SELECT backfill.plan('daily', '2026-01-02', '2026-01-06', probe => false) AS k \gset
CALL backfill.run(:k);
SELECT backfill.revert(:k) AS rk \gset
CALL backfill.run(:rk);
CALL backfill.run(:rk);
SELECT status FROM backfill.runs WHERE run_id = :rk}, @etl), 'done',
	'on the updated catalog, a keeping run and its revert run');
is($new->safe_psql('postgres', q{
SELECT md5(string_agg(d::text, '|' ORDER BY d.day)) FROM daily d
 WHERE d.day < '2026-01-15'}, @etl), $undo_before,
	'the revert gives back exactly the table before the keeping run');
is($new->safe_psql('postgres', q{
SELECT string_agg(DISTINCT label, ',') FROM backfill.lineage('daily', '2026-01-02', '2026-01-06')}),
	'v1: every payment', 'lineage shows the reverted days under the version that built them');
# Issue 29 on 0.1.0's rows: each version of 0.1.0 records the one before it
# (previous_version), none says that no rows is a valid answer (allow_empty);
# the revert above made the version before 'v3: kept' (0.1.0's v2) current.
is($new->safe_psql('postgres', q{
SELECT string_agg(version || ':' || coalesce(previous_version::text, '-') || ':' || allow_empty,
                  ',' ORDER BY version)
       || ' current ' || (SELECT current_version FROM backfill.targets WHERE target = 'daily'::regclass)
  FROM backfill.definitions WHERE target = 'daily'::regclass}),
	'1:-:false,2:1:false,3:2:false current 2',
	'0.1.0 versions get previous_version and allow_empty; a revert on the updated catalog restores the version before');

# The pg_cron job fires under the new library.# The pg_cron job fires under the new library.
my $fired = wait_for_value($new, qq{
SELECT count(*) FROM backfill.chunks
 WHERE run_id = $scheduled AND status = 'done' AND executed_via = 'pg_cron'
   AND finished_at > (SELECT max(finished_at) FROM backfill.chunks WHERE run_id <> $scheduled)},
	sub { $_[0] >= 1 }, 150);
cmp_ok($fired, '>=', 1, 'the scheduled run\'s pg_cron job fires after the update');

# 0.2.0's additions on 0.1.0's rows: no run continues another, no chunk
# has a failure cause; a run planned under 0.1.0 can be replanned (by its
# planner, whose grant on the new function came with the update), and
# backfill() gives back its run id (the procedure made again, its grant too).
is($new->safe_psql('postgres', q{
SELECT count(*) FILTER (WHERE continues_run IS NOT NULL) || ' '
    || (SELECT count(*) FILTER (WHERE error_cause IS NOT NULL OR next_step IS NOT NULL)
          FROM backfill.chunks)
  FROM backfill.runs}), '0 0', 'the runs and chunks of 0.1.0 get NULL continues_run, error_cause, next_step');
is($new->safe_psql('postgres', q{
SET client_min_messages = warning;
SELECT run_id AS r FROM backfill.runs WHERE note = 'to replan' \gset
SELECT backfill.replan(:r) AS n \gset
CALL backfill.run(:n);
CALL backfill.run(:n);
SELECT o.status || ' ' || n.status || ' ' || (n.continues_run = o.run_id) || ' ' || n.probe
  FROM backfill.runs n JOIN backfill.runs o ON o.run_id = :r WHERE n.run_id = :n}, @etl),
	'cancelled done true true', 'a run planned under 0.1.0 is replanned and the new run finishes');
like($new->safe_psql('postgres', q{
SET client_min_messages = warning;
CALL backfill.backfill('daily', '2026-03-20', '2026-03-21') \gset
SELECT :run_id || ' ' || status FROM backfill.runs WHERE run_id = :run_id}, @etl),
	qr/^[0-9]+ done$/, 'CALL backfill.backfill returns its run id after the update, for a granted role');

# The standing check still runs: it appends its results (0.1.0's table).
is($new->safe_psql('postgres', q{
SELECT count(*) AS n FROM backfill.check_results \gset
SELECT backfill.run_check(check_id) FROM backfill.checks \gset
SELECT count(*) > :n FROM backfill.check_results}, @etl),
	't', 'the standing check runs and records its results');

# Changed regions on the updated catalog: a watch logs a late payment on a
# day 0.1.0 built, a stale plan takes exactly that day, its run consumes it.
$new->safe_psql('postgres', q{
SELECT backfill.watch('daily', 'payments', 'paid_at');
INSERT INTO payments VALUES ('2026-01-03 05:00+00', 7, false);
UPDATE ledger SET amount = amount + 7 WHERE day = '2026-01-03';
});
is($new->safe_psql('postgres', q{
SELECT string_agg(chunk_start::text, ',') FROM backfill.changed_regions}),
	'2026-01-03 00:00:00+00', 'a late write to a built day is logged after the update');
is($new->safe_psql('postgres', q{
SET client_min_messages = warning;
SELECT backfill.plan('daily', '2026-01-01', '2026-01-08', only_chunks => 'stale',
                     probe => false, note => 'stale') AS r \gset
SELECT string_agg(chunk_start::text || ' ' || (reason LIKE 'stale: source changed at %')::text, ',')
  FROM backfill.chunks WHERE run_id = :r;
CALL backfill.run(:r);
SELECT count(*) FROM backfill.changed_regions}, @etl),
	"2026-01-03 00:00:00+00 true\n0", 'a stale plan takes that day and its run consumes the change');
is($new->safe_psql('postgres', q{
SELECT string_agg(range_start::text || ' ' || (reason LIKE 'stale: source changed at %')::text, ',')
  FROM backfill.lineage('daily', '2026-01-01', '2026-01-08') WHERE reason IS NOT NULL}, @etl),
	'2026-01-03 00:00:00+00 true', 'lineage says why that day was rebuilt (its new reason column)');
is($new->safe_psql('postgres', q{
SELECT count(*) FROM backfill.refreshes}, @etl),
	'0', 'the updated catalog has the refresh jobs table, readable, empty');

# Unscheduled, the role is left without the guard of its jobs.
$new->safe_psql('postgres', qq{
SELECT backfill.unschedule($scheduled);
SELECT backfill.unschedule_check(check_id) FROM backfill.checks;
}, @etl);
is($new->safe_psql('postgres', 'SELECT count(*) FROM cron.job'), '0',
	'unschedule and unschedule_check remove the jobs made by 0.1.0');

# 0.1.0's calls keep working under 0.2.0's API conventions (issue 31):
# schedule_check now returns the check id that unschedule_check takes;
# lineage and reconcile_group, no longer STRICT, refuse a NULL with 22004.
is($new->safe_psql('postgres', q{
SELECT backfill.schedule_check('daily', '0 0 30 2 *', lookback => '30 days') AS c \gset
SELECT (SELECT check_id FROM backfill.checks WHERE job_id IS NOT NULL) = :c,
       backfill.unschedule_check(:c)}, @etl),
	't|t', 'schedule_check returns the check id, which unschedule_check takes');
my ($nrc, $nout, $nerr) = $new->psql('postgres',
	"SELECT * FROM backfill.lineage(NULL)", @etl);
like($nerr, qr/target must not be null/, 'lineage(NULL) raises 22004');
($nrc, $nout, $nerr) = $new->psql('postgres',
	"SELECT * FROM backfill.reconcile_group(NULL)", @etl);
like($nerr, qr/group_id must not be null/, 'reconcile_group(NULL) raises 22004');

# 3. The updated extension has exactly the objects of a fresh install.
$new->safe_psql('postgres', 'CREATE DATABASE fresh');
$new->safe_psql('fresh', 'CREATE EXTENSION backfill');
is($new->safe_psql('postgres', extension_objects_sql()),
	$new->safe_psql('fresh', extension_objects_sql()),
	'the updated extension and a fresh install define the same objects');

# 4. pg_dump and pg_restore of the updated database, into a cluster whose
#    pg_cron serves the restored database.
my $dump = "$dir/updated.dump";
my $snapshot_after = $new->safe_psql('postgres', $snapshot_sql);
command_ok([ 'pg_dump', '-Fc', '-d', $new->connstr('postgres'), '-f', $dump ],
	'pg_dump of the updated database');
my $copy = backfill_node('restored', extension => 0,
	conf => "shared_preload_libraries = 'pg_cron'\ncron.database_name = 'restored'\n"
	  . "cron.use_background_workers = on\nmax_worker_processes = 20\n");
$copy->safe_psql('postgres', 'CREATE ROLE etl LOGIN; CREATE DATABASE restored');
command_ok([ 'pg_restore', '--exit-on-error', '-d', $copy->connstr('restored'), $dump ],
	'pg_restore into a new cluster');
is($copy->safe_psql('restored', $snapshot_sql), $snapshot_after,
	'the restored database has the same catalog, lineage and history');
is($copy->safe_psql('restored', extension_objects_sql()),
	$new->safe_psql('fresh', extension_objects_sql()),
	'and the same extension objects');
is($copy->safe_psql('restored', q{
SET client_min_messages = warning;
SELECT backfill.plan('daily', '2026-02-20', '2026-02-22', probe => false) AS r \gset
CALL backfill.run(:r);
SELECT status FROM backfill.runs WHERE run_id = :r}, @etl),
	'done', 'in the new cluster the author\'s text runs for its author (roles restored by name)');

$copy->stop;
$new->stop;
done_testing();
