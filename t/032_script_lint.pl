# Lint of the install script sources (checklist S11, S12).
#
# - The built upgrade script ends with the statement that invalidates
#   backfill.watches in every backend (src/sql/99_update_signal.sql).
# - The built install script starts with the \echo ... \quit guard, and
#   feeding it to psql directly creates nothing.
# - the install scripts in versions/ never use CREATE OR REPLACE, IF NOT
#   EXISTS or SECURITY DEFINER, and never put @extschema@ / @extowner@
#   inside quotes: an install script must fail on a pre-existing object
#   rather than adopt it (CVE-2022-2625, CVE-2023-39417); the fragments
#   of the upgrade script in development (src/sql/*.sql) likewise, except
#   that CREATE OR REPLACE may replace a function or view a released
#   script created.
# Each rule also runs against a known-bad sample, so the lint itself is
# shown to catch what it is meant to catch.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# Strip -- comments (outside string literals, good enough for our scripts:
# no fragment has -- inside a literal).
sub strip_comments
{
	my ($text) = @_;
	$text =~ s/--[^\n]*//g;
	return $text;
}

# Return the list of "file:line: rule" offences in a text.  The rules run
# over the whole text (a statement may span lines); the line reported is
# where the match starts.
sub lint
{
	my ($name, $text) = @_;
	my @bad;
	my @rules = (
		[ qr/\bCREATE\s+OR\s+REPLACE\b/i, 'CREATE OR REPLACE' ],
		# CREATE <kind> IF NOT EXISTS, ADD COLUMN IF NOT EXISTS; not
		# PL/pgSQL's IF NOT EXISTS (subquery) THEN
		[ qr/\b(?:CREATE|ADD)\s+(?:[A-Z_]+\s+){0,3}IF\s+NOT\s+EXISTS\b/i, 'IF NOT EXISTS' ],
		[ qr/\bSECURITY\s+DEFINER\b/i, 'SECURITY DEFINER' ],
		[ qr/['"\$][^'"\n]*\@ext(?:schema|owner)[^@]*\@/i, '@extschema@/@extowner@ inside quotes' ],
	);
	my $code = strip_comments($text);
	for my $r (@rules)
	{
		while ($code =~ /$r->[0]/g)
		{
			my $line = 1 + (() = substr($code, 0, $-[0]) =~ /\n/g);
			push @bad, "$name:$line: $r->[1]";
		}
	}
	return @bad;
}

# Positive controls: each rule catches its sample.
my %samples = (
	'CREATE OR REPLACE' => "CREATE OR REPLACE FUNCTION backfill.f() RETURNS int LANGUAGE sql AS 'SELECT 1';",
	'IF NOT EXISTS' => "CREATE TABLE\n  IF NOT EXISTS backfill.t (a int);",
	'SECURITY DEFINER' => "CREATE FUNCTION backfill.f() RETURNS int\n  SECURITY DEFINER LANGUAGE sql AS 'SELECT 1';",
	'@extschema@/@extowner@ inside quotes' => "COMMENT ON SCHEMA backfill IS 'owned by \@extowner\@';",
);
for my $rule (sort keys %samples)
{
	my @hits = lint('sample', $samples{$rule});
	ok((grep { /\Q$rule\E/ } @hits), "lint rule '$rule' catches a bad sample");
}
is_deeply([ lint('sample', "-- CREATE OR REPLACE in a comment is fine\nCREATE TABLE backfill.t (a int);\n"
			. "DO \$\$ BEGIN IF NOT EXISTS (SELECT 1) THEN RAISE 'x'; END IF; END \$\$;") ],
	[], 'lint ignores comments, clean statements and PL/pgSQL IF NOT EXISTS (...)');

# The released install scripts.
my @parts = grep { !/--.*--/ } sort glob('versions/backfill--*.sql');
ok(@parts > 0, 'install scripts found');
my @offences;
for my $f (@parts)
{
	push @offences, lint($f, slurp_file($f));
}
is_deeply(\@offences, [], 'no CREATE OR REPLACE / IF NOT EXISTS / SECURITY DEFINER / quoted @ext...@ in the install scripts');

# The fragments of the upgrade script in development (src/sql/*.sql) keep
# the same rules, except that CREATE OR REPLACE may replace a function or
# view that an earlier script created (it is the extension's own member
# then; a new object is created with plain CREATE).
my $released = join "\n", map { strip_comments(slurp_file($_)) } sort glob('versions/backfill--*.sql');
my %existing = map { lc($_) => 1 }
  $released =~ /\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|PROCEDURE|VIEW)\s+(backfill\.\w+)/gi;
my @fragments = sort glob('src/sql/*.sql');
@offences = ();
for my $f (@fragments)
{
	my $text = slurp_file($f);
	push @offences, grep { !/CREATE OR REPLACE$/ } lint($f, $text);
	my $code = strip_comments($text);
	while ($code =~ /\bCREATE\s+OR\s+REPLACE\s+(?:FUNCTION|PROCEDURE|VIEW)\s+(backfill\.\w+)/gi)
	{
		push @offences, "$f: CREATE OR REPLACE of $1, which no released script creates"
		  unless $existing{ lc $1 };
	}
}
is_deeply(\@offences, [], 'the upgrade fragments keep the rules; CREATE OR REPLACE only of released objects');

# Every script starts with its \echo ... \quit guard: the newest release's
# install script, and the built upgrade script to the version in
# development (if it is not itself released).
my ($version) = slurp_file('backfill.control') =~ /^default_version\s*=\s*'([^']+)'/m;
my ($newest) = (map { (split ' ')[0] } grep { /\S/ && !/^#/ } split /\n/, slurp_file('versions/RELEASES'))[-1];
my $script = "versions/backfill--$newest.sql";
ok(-f $script, "install script $script exists");
my @code_lines = grep { !/^\s*(--.*)?$/ } split /\n/, slurp_file($script);
like($code_lines[0], qr/^\\echo Use "CREATE EXTENSION backfill" to load this file\. \\quit$/,
	'first statement of the install script is the \echo ... \quit guard');
if ($version ne $newest)
{
	my $upgrade = "backfill--$newest--$version.sql";
	ok(-f $upgrade, "built upgrade script $upgrade exists");
	my @lines = grep { !/^\s*(--.*)?$/ } split /\n/, slurp_file($upgrade);
	like($lines[0], qr/^\\echo Use "ALTER EXTENSION backfill UPDATE" to load this file\. \\quit$/,
		'first statement of the upgrade script is its \echo ... \quit guard');
	# and its last is the signal that the catalog changed: a backend that
	# checked the version once learns of the update from it
	# (src/sql/99_update_signal.sql, WatchCatalog)
	is($lines[-1], 'ALTER TABLE backfill.watches RESET (fillfactor);',
		'last statement of the upgrade script invalidates backfill.watches');
}

# Loading the script with psql stops at the guard and creates nothing.
my $node = PostgreSQL::Test::Cluster->new('lint');
$node->init;
$node->start;
my ($ret, $stdout, $stderr) = $node->psql('postgres', undef,
	extra_params => [ '-f', $script ]);
like($stdout . $stderr, qr/Use "CREATE EXTENSION backfill" to load this file/,
	'psql -f on the script prints the guard message');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_namespace WHERE nspname = 'backfill'")
	  + $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_class WHERE relname IN ('runs', 'chunks', 'targets')"),
	0, 'psql -f on the script created no schema and no tables');
$node->stop;

done_testing();
