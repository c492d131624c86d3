# Released versions stay as released.  versions/ holds the install and
# upgrade scripts of every release, frozen; versions/SHA256SUMS their
# checksums; versions/RELEASES each release's version and commit.
#   - every frozen script matches its checksum, and every script of a
#     release is frozen: an edit to a released script fails here;
#   - the version in development (backfill.control) is newer than every
#     release, or is the newest release with all its scripts frozen: an
#     install script that changes while the version does not fails here;
#   - with the project's history at hand, each frozen script equals the
#     file at its release commit;
#   - the library exports every C symbol that any released script or the
#     upgrade script names (a library must serve the SQL of the versions it
#     is updated from);
#   - META.json and CHANGELOG.md name the version in backfill.control.
use strict;
use warnings;
use Digest::SHA;
use FindBin;
use JSON::PP;
use Test::More;

my $top = "$FindBin::RealBin/..";

sub slurp
{
	my ($path) = @_;
	open my $fh, '<', $path or die "cannot read $path: $!";
	local $/;
	my $text = <$fh>;
	close $fh;
	return $text;
}

# Versions compare numerically, part by part.
sub vcmp
{
	my @a = split /\./, $_[0];
	my @b = split /\./, $_[1];
	while (@a || @b)
	{
		my $c = (shift(@a) // 0) <=> (shift(@b) // 0);
		return $c if $c;
	}
	return 0;
}

my ($default) = slurp("$top/backfill.control") =~ /^default_version\s*=\s*'([^']+)'/m;
ok(defined $default, "backfill.control has a default_version ($default)");

my @releases = map { [split ' '] } grep { /\S/ && !/^#/ } split /\n/, slurp("$top/versions/RELEASES");
ok(@releases >= 1, 'versions/RELEASES lists the releases');
for my $i (1 .. $#releases)
{
	cmp_ok(vcmp($releases[$i][0], $releases[ $i - 1 ][0]), '>', 0,
		"release $releases[$i][0] is newer than $releases[$i-1][0]");
}
my %released = map { $_->[0] => $_->[1] } @releases;
my $newest = $releases[-1][0];

my %sums = map { my ($sum, $file) = split ' ', $_, 2; ($file => $sum) }
  grep { /\S/ } split /\n/, slurp("$top/versions/SHA256SUMS");

# Every script of a release: its install script, or the upgrade script
# that reaches it from the release before.
my @frozen;
for my $i (0 .. $#releases)
{
	my $v = $releases[$i][0];
	push @frozen, $i == 0 ? "backfill--$v.sql" : "backfill--$releases[$i-1][0]--$v.sql";
}
for my $file (@frozen)
{
	ok(exists $sums{$file}, "versions/SHA256SUMS lists $file");
	ok(-f "$top/versions/$file", "versions/$file is there");
}
for my $file (sort keys %sums)
{
	is(Digest::SHA->new(256)->addfile("$top/versions/$file")->hexdigest,
		$sums{$file}, "versions/$file is as released");
}
my @unlisted = grep { my $f = $_; !exists $sums{$f} }
  map { s{.*/}{}r } glob("$top/versions/backfill--*.sql");
is("@unlisted", '', 'every script in versions/ is a released one');

if (exists $released{$default})
{
	is($default, $newest, "the version in development ($default) is the newest release");
}
else
{
	cmp_ok(vcmp($default, $newest), '>', 0,
		"the version in development ($default) is newer than every release");
	ok(-f "$top/backfill--$newest--$default.sql",
		"the upgrade script backfill--$newest--$default.sql is built");
}

# Each frozen script equals its file at the release commit, when the
# history is there (not in an exported tarball or a shallow clone).
SKIP:
{
	my $shallow = `git -C '$top' rev-parse --is-shallow-repository 2>/dev/null` // '';
	skip 'no git history here: the checksums above stand alone', scalar @frozen
	  if !-e "$top/.git" || $shallow !~ /^false/;
	for my $i (0 .. $#releases)
	{
		my ($v, $commit) = @{ $releases[$i] };
		my $file = $frozen[$i];
		my $then = `git -C '$top' show '$commit:versions/$file' 2>/dev/null`;
		is($then, slurp("$top/versions/$file"), "versions/$file is the file of release $v ($commit)");
	}
}

# The library serves every C symbol named by a script it may meet.
my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
my $nm = `nm -D --defined-only '$pkglibdir/backfill.so' 2>&1`;
is($?, 0, 'nm reads the installed library') or diag($nm);
my %exported = map { (split ' ')[-1] => 1 } split /\n/, $nm;
my @scripts = (map { "$top/versions/$_" } sort keys %sums);
push @scripts, "$top/backfill--$newest--$default.sql" unless exists $released{$default};
my @missing;
for my $script (@scripts)
{
	my $text = slurp($script);
	while ($text =~ /'MODULE_PATHNAME'\s*,\s*'(\w+)'/g)
	{
		push @missing, "$1 (named in " . ($script =~ s{.*/}{}r) . ')' unless $exported{$1};
	}
}
is(join("\n", sort @missing), '', 'the library exports every symbol a released or upgrade script names');

my $meta = decode_json(slurp("$top/META.json"));
is($meta->{version}, $default, 'META.json has the version of backfill.control');
is($meta->{provides}{backfill}{version}, $default, 'and so does its provides entry');
like(slurp("$top/CHANGELOG.md"), qr/^## \Q$default\E\b/m, "CHANGELOG.md has a section for $default");

done_testing();
