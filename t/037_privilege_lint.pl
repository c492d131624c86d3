# Lint of the C sources (issue 15, item 1): the extension switches user in
# exactly two places, and nothing else may.
#
# - With the extension owner's rights, only through CatalogRun in
#   src/base/catalog.c (behind CatalogExec), which also pins search_path; the
#   owner is looked up only by ExtensionOwner there, called only by
#   CatalogRun.
# - As the author of registered text, only through the author gate of
#   src/base/identity.c (AuthorGateEnter, AuthorGateLeave, AuthorGateAbort).
# - No other way to change the user or role exists anywhere (SET ROLE and
#   SET SESSION AUTHORIZATION in C or in generated SQL, the older
#   SetUserIdAndContext, SECURITY DEFINER).
# - A background worker connects to a database (as a role given by OID) in
#   two places only: the parallel chunk worker (as the leader's current
#   role) and the relay to pg_cron's database (src/base/cronrelay.c), whose
#   role is the extension owner, handed over only by CatalogCronQuery in
#   src/base/catalog.c (the one other caller of ExtensionOwner), and which
#   pins search_path and turns the owner-rights guard on like CatalogRun.
# Every rule also runs against a known-bad sample, so the lint is shown to
# catch what it is meant to catch.  Perl only: it needs no cluster.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;

# C text without comments and without the contents of string and character
# literals (a literal keeps its quotes, so "SET ROLE" inside SQL text is
# still seen by the rules that look into literals: see strings_of).
sub strip_c
{
	my ($text) = @_;
	$text =~ s{/\*.*?\*/}{ }gs;
	$text =~ s{"(?:[^"\\\n]|\\.)*"}{""}g;
	$text =~ s{'(?:[^'\\\n]|\\.)*'}{''}g;
	return $text;
}

# The string literals of a C text (comments removed), concatenated per
# statement is not needed: the rules look for words within one literal.
sub strings_of
{
	my ($text) = @_;
	$text =~ s{/\*.*?\*/}{ }gs;
	my @s = ($text =~ m{"((?:[^"\\\n]|\\.)*)"}g);
	return @s;
}

# Split a stripped C file into functions: pgindent style puts the name of a
# function at the start of a line, "{" and "}" of its body alone at the
# start of a line.  Returns (name => body) pairs and the file-scope text.
sub functions_of
{
	my ($code) = @_;
	my (@funcs, $name, $body, $in, $outside);
	$outside = '';
	for my $line (split /\n/, $code)
	{
		if (!$in && $line =~ /^([A-Za-z_]\w*)\s*\(/)
		{
			$name = $1;
			$outside .= "$line\n";
			next;
		}
		if (!$in && $line =~ /^\{/)
		{
			$in = 1;
			$body = '';
			next;
		}
		if ($in && $line =~ /^\}/)
		{
			push @funcs, [ $name // '?', $body ];
			$in = 0;
			next;
		}
		if ($in) { $body .= "$line\n"; }
		else { $outside .= "$line\n"; }
	}
	return (\@funcs, $outside);
}

# The rules: a token, and the only (file, function) places allowed to use
# it.  An empty list means nowhere.
my %allowed_gate = map { ("src/base/identity.c:$_" => 1) }
  qw(AuthorGateEnter AuthorGateLeave AuthorGateAbort);
my @rules = (
	[ 'SetUserIdAndSecContext', { 'src/base/catalog.c:CatalogRun' => 1, %allowed_gate } ],
	[ 'ExtensionOwner', { 'src/base/catalog.c:CatalogRun' => 1, 'src/base/catalog.c:ExtensionOwner' => 1,
		'src/base/catalog.c:CatalogCronQuery' => 1 } ],
	[ 'BackgroundWorkerInitializeConnectionByOid', { 'src/orchestration/parallelworker.c:backfill_chunk_worker' => 1,
		'src/base/cronrelay.c:backfill_cron_relay' => 1 } ],
	[ 'BackgroundWorkerInitializeConnection', {} ],
	[ 'CronRelayRun', { 'src/base/catalog.c:CatalogCronQuery' => 1 } ],
	[ 'extowner', { 'src/base/catalog.c:ExtensionOwner' => 1 } ],
	[ 'Anum_pg_extension_extowner', {} ],
	[ 'SetUserIdAndContext', {} ],
	[ 'SetSessionAuthorization', {} ],
	[ 'SetCurrentRoleId', {} ],
	[ 'SetSessionUserId', {} ],
	[ 'SetAuthenticatedUserId', {} ],
);

# The definitions (at file scope) of the tokens that the rules allow.
my %file_scope_ok = map { ($_ => 1) } qw(src/base/catalog.c:ExtensionOwner
  src/base/cronrelay.c:CronRelayRun src/base/cronrelay.c:backfill_cron_relay);

# Return the list of "file: offence" for the C texts given as
# (file => text).
sub lint
{
	my (%files) = @_;
	my @bad;
	for my $file (sort keys %files)
	{
		my $code = strip_c($files{$file});
		my ($funcs, $outside) = functions_of($code);
		for my $rule (@rules)
		{
			my ($token, $ok) = @$rule;
			push @bad, "$file: $token at file scope"
			  if $outside =~ /\b\Q$token\E\b/
			  && !$file_scope_ok{"$file:$token"};
			for my $f (@$funcs)
			{
				my ($name, $body) = @$f;
				push @bad, "$file: $token in $name"
				  if $body =~ /\b\Q$token\E\b/ && !$ok->{"$file:$name"};
			}
		}
		# user or role changes written into SQL text, in any literal
		for my $s (strings_of($files{$file}))
		{
			push @bad, "$file: SQL that changes the user: \"$s\""
			  if $s =~ /\b(?:SET\s+(?:LOCAL\s+)?(?:ROLE|SESSION\s+AUTHORIZATION)|SECURITY\s+DEFINER)\b/i
			  || $s =~ /set_config\s*\(\s*'(?:role|session_authorization)'/i;
		}
		# the one owner path pins search_path and switches to the owner
		if ($file eq 'src/base/catalog.c')
		{
			my ($run) = grep { $_->[0] eq 'CatalogRun' } @$funcs;
			if (!$run)
			{
				push @bad, "$file: no CatalogRun";
			}
			else
			{
				push @bad, "$file: CatalogRun does not pin search_path"
				  unless $run->[1] =~ /\bSpiPinSearchPath\s*\(/
				  && $run->[1] =~ /\bSpiUnpinSearchPath\s*\(/;
				push @bad, "$file: CatalogRun does not switch to ExtensionOwner()"
				  unless $run->[1] =~ /\bExtensionOwner\s*\(\s*\)/;
			}
			push @bad, "$file: ExtensionOwner is not static"
			  unless $code =~ /^static\s+Oid\s*\nExtensionOwner\s*\(/m;
		}
		# the relay's worker, connected as the owner, pins and guards
		if ($file eq 'src/base/cronrelay.c')
		{
			my ($main) = grep { $_->[0] eq 'backfill_cron_relay' } @$funcs;
			if (!$main)
			{
				push @bad, "$file: no backfill_cron_relay";
			}
			else
			{
				push @bad, "$file: backfill_cron_relay does not pin search_path"
				  unless $main->[1] =~ /\bSpiPinSearchPath\s*\(/;
				push @bad, "$file: backfill_cron_relay does not turn the guard on"
				  unless $main->[1] =~ /\bGuardPush\s*\(/;
			}
		}
	}
	return @bad;
}

# Positive controls: each rule catches its sample, and the real shape of
# the two allowed places is clean.
my $good_catalog = <<'C';
/* SetUserIdAndSecContext in a comment is fine */
static Oid
ExtensionOwner(void)
{
	return ((Form_pg_extension) GETSTRUCT(tup))->extowner;
}

static int
CatalogRun(const char *sql)
{
	int			nest = SpiPinSearchPath();

	SetUserIdAndSecContext(ExtensionOwner(), 0);
	SpiUnpinSearchPath(nest);
	return 0;
}
C
my $good_identity = <<'C';
void
AuthorGateEnter(AuthorGate *gate)
{
	SetUserIdAndSecContext(gate->author, 0);
}
C
is_deeply([ lint('src/base/catalog.c' => $good_catalog, 'src/base/identity.c' => $good_identity) ],
	[], 'the two allowed places pass the lint');

my %samples = (
	'switch outside the two places' => [ 'src/orchestration/run.c' => "void\nRunLoop(void)\n{\n\tSetUserIdAndSecContext(owner, 0);\n}\n",
		qr/SetUserIdAndSecContext in RunLoop/ ],
	'switch in another function of catalog.c' => [ 'src/base/catalog.c' => $good_catalog
		  . "int\nCatalogExecOther(void)\n{\n\tSetUserIdAndSecContext(ExtensionOwner(), 0);\n}\n",
		qr/SetUserIdAndSecContext in CatalogExecOther/ ],
	'owner lookup elsewhere' => [ 'src/orchestration/schedule.c' => "static Oid\nOwner(void)\n{\n\treturn ext->extowner;\n}\n",
		qr/extowner in Owner/ ],
	'owner path without the pin' => [ 'src/base/catalog.c' => "static Oid\nExtensionOwner(void)\n{\n}\n\nstatic int\nCatalogRun(void)\n{\n\tSetUserIdAndSecContext(ExtensionOwner(), 0);\n}\n",
		qr/CatalogRun does not pin search_path/ ],
	'exported owner lookup' => [ 'src/base/catalog.c' => "Oid\nExtensionOwner(void)\n{\n}\n\nstatic int\nCatalogRun(void)\n{\n\tint n = SpiPinSearchPath();\n\tSetUserIdAndSecContext(ExtensionOwner(), 0);\n\tSpiUnpinSearchPath(n);\n}\n",
		qr/ExtensionOwner is not static/ ],
	'older user switch' => [ 'src/engine/chunk.c' => "void\nF(void)\n{\n\tSetUserIdAndContext(u, true);\n}\n",
		qr/SetUserIdAndContext in F/ ],
	'SET ROLE in generated SQL' => [ 'src/orchestration/plan.c' => "void\nF(void)\n{\n\tSpiExec(\"SET ROLE postgres\", 0);\n}\n",
		qr/SQL that changes the user/ ],
	'worker connected elsewhere' => [ 'src/orchestration/run.c' => "void\nW(Datum a)\n{\n\tBackgroundWorkerInitializeConnectionByOid(db, owner, 0);\n}\n",
		qr/BackgroundWorkerInitializeConnectionByOid in W/ ],
	'relay called from elsewhere' => [ 'src/orchestration/schedule.c' => "void\nF(void)\n{\n\tCronRelayRun(db, role, sql, 0, NULL, NULL);\n}\n",
		qr/CronRelayRun in F/ ],
	'relay worker without the guard' => [ 'src/base/cronrelay.c' => "void\nbackfill_cron_relay(Datum a)\n{\n\tint n = SpiPinSearchPath();\n\tBackgroundWorkerInitializeConnectionByOid(db, role, 0);\n}\n",
		qr/backfill_cron_relay does not turn the guard on/ ],
	'role through set_config' => [ 'src/orchestration/plan.c' => "void\nF(void)\n{\n\tSpiExec(\"SELECT set_config('role', $1, true)\", 1);\n}\n",
		qr/SQL that changes the user/ ],
);
for my $name (sort keys %samples)
{
	my ($file, $text, $re) = @{ $samples{$name} };
	my @hits = lint($file => $text);
	ok((grep { $_ =~ $re } @hits), "lint catches: $name")
	  or diag(join("\n", @hits));
}

# The real sources.
my @c = sort glob('src/*/*.c');
ok(@c >= 10, 'C sources found');
my %files = map { ($_ => slurp_file($_)) } @c;
ok($files{'src/base/catalog.c'} && $files{'src/base/identity.c'},
	'base/catalog.c and base/identity.c are there');
my @offences = lint(%files);
is_deeply(\@offences, [],
	'user switches only in CatalogRun (pinned) and the author gate; owner looked up only there')
  or diag(join("\n", @offences));

done_testing();
