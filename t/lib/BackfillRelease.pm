# Released versions of backfill for the upgrade tests: a private copy of
# the PostgreSQL installation under test with an earlier release of
# backfill built from its release commit and installed into it, so that a
# cluster can be filled by the real old library and then started on the
# current one.
#
# versions/RELEASES lists each release as "VERSION COMMIT MAJORS" (MAJORS:
# the PostgreSQL major versions it builds on, "15-17").  The release's
# source comes from git (git archive COMMIT), so the test needs the
# project's history: a checkout without it (an exported tarball, a shallow
# clone) is told apart from a missing commit, which is an error.  On a
# PostgreSQL the release does not build on there is no installation of it to
# update, and the test is skipped with that reason.
#
# Load it with
#	use FindBin;
#	use lib "$FindBin::RealBin/lib";
#	use BackfillRelease;
package BackfillRelease;

use strict;
use warnings;
use Cwd qw(abs_path);
use Exporter 'import';
use File::Basename qw(dirname);
use File::Copy qw(copy);
use File::Path qw(make_path remove_tree);
use PostgreSQL::Test::Utils;

our @EXPORT = qw(release_commit release_install extension_objects_sql);

# The project's top directory (t/lib/..).
my $top = abs_path(dirname(__FILE__) . '/../..');

# release_commit(VERSION) -> (COMMIT, undef) or (undef, why the release
# cannot be built here).  Dies when the history is there but the commit is
# not: the release list points at a commit that does not exist.
sub release_commit
{
	my ($version) = @_;
	open my $fh, '<', "$top/versions/RELEASES"
	  or die "cannot read versions/RELEASES: $!";
	my ($commit, $majors) = map { (split ' ')[ 1, 2 ] } grep { /^\Q$version\E\s/ } <$fh>;
	close $fh;
	die "versions/RELEASES does not list $version\n" unless $commit;
	die "versions/RELEASES does not say which PostgreSQL versions $version builds on\n"
	  unless defined $majors && $majors =~ /^(\d+)-(\d+)$/;
	my ($low, $high) = ($1, $2);
	my ($major) = `pg_config --version` =~ /PostgreSQL (\d+)/;
	die "pg_config --version failed" unless defined $major;
	return (undef,
		"release $version builds on PostgreSQL $low to $high only (versions/RELEASES); "
		  . "on PostgreSQL $major there is no installation of it to update")
	  if $major < $low || $major > $high;

	return (undef, 'not a git checkout: the release is built from the project\'s history')
	  unless -e "$top/.git";
	# The tests run as another user than the checkout's owner (scripts/
	# test.sh tests a copy as postgres; a worktree's .git points back into
	# the owner's repository): trust the repository for reading.
	my $gitconfig = PostgreSQL::Test::Utils::tempdir() . '/gitconfig';
	open my $gc, '>', $gitconfig or die "cannot write $gitconfig: $!";
	print $gc "[safe]\n\tdirectory = *\n";
	close $gc;
	$ENV{GIT_CONFIG_GLOBAL} = $gitconfig;
	my $shallow = `git -C '$top' rev-parse --is-shallow-repository 2>/dev/null`;
	return (undef, 'a shallow clone: the release is built from the project\'s history')
	  if defined $shallow && $shallow =~ /^true/;
	system("git -C '$top' cat-file -e '$commit^{commit}' 2>/dev/null") == 0
	  or die "release $version: commit $commit is not in this repository\n";
	return ($commit, undef);
}

# pg_config's answer for one item, of the installation under test (the
# first pg_config on PATH, as PGXS installcheck sets it).
sub pg_config
{
	my ($item) = @_;
	my $out = `pg_config --$item`;
	die "pg_config --$item failed" if $? != 0;
	chomp $out;
	return $out;
}

# release_install(VERSION, DIR) -> (install_path, undef) or (undef, why).
# Copies the PostgreSQL under test into DIR, keeping its directories at
# their absolute paths below DIR (PostgreSQL finds its share and lib
# directories relative to its programs, so the copy works where it is),
# removes the current backfill from the copy, and builds and installs
# backfill VERSION there from its release commit.  install_path is what
# PostgreSQL::Test::Cluster->new(..., install_path => ...) takes: the
# directory holding the copy's bin/.
sub release_install
{
	my ($version, $dir) = @_;
	my ($commit, $why) = release_commit($version);
	return (undef, $why) unless $commit;

	my $root = "$dir/pg";
	my %path = map { $_ => pg_config($_) } qw(bindir pkglibdir sharedir);
	for my $item (qw(bindir pkglibdir sharedir))
	{
		my $to = "$root$path{$item}";
		next if -d $to;
		make_path(dirname($to));
		system('cp', '-a', $path{$item}, $to) == 0
		  or die "cannot copy $path{$item} to $to";
	}
	# The headers are only read by the build: link them.
	for my $item (qw(includedir pkgincludedir includedir-server))
	{
		my $from = pg_config($item);
		my $to = "$root$from";
		next if -e $to;
		make_path(dirname($to));
		symlink($from, $to) or die "cannot link $to: $!";
	}

	# Only the release's files of backfill in the copy.
	unlink glob("$root$path{sharedir}/extension/backfill*");
	unlink glob("$root$path{pkglibdir}/backfill.*");

	my $src = "$dir/backfill-$version";
	remove_tree($src);
	make_path($src);
	system("git -C '$top' archive --format=tar '$commit' | tar -x -C '$src'") == 0
	  or die "git archive of $commit failed";
	my $pg_config = "$root$path{bindir}/pg_config";
	my $log = "$dir/build-$version.log";
	system("make -C '$src' -s PG_CONFIG='$pg_config' >'$log' 2>&1"
		  . " && make -C '$src' -s PG_CONFIG='$pg_config' install >>'$log' 2>&1") == 0
	  or die "building release $version failed:\n" . slurp_file($log);
	return (dirname("$root$path{bindir}"), undef);
}

# SQL listing every object of extension backfill with its definition, one
# text row each in a stable order: what a fresh install and an updated one
# must agree on.
sub extension_objects_sql
{
	return q{
WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'backfill'),
members AS (
    SELECT d.classid, d.objid
      FROM pg_depend d, ext
     WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid
       AND d.deptype = 'e'
)
SELECT pg_describe_object(m.classid, m.objid, 0) || ': ' ||
       CASE m.classid
         WHEN 'pg_proc'::regclass THEN
             pg_get_functiondef(m.objid) || ' acl ' ||
             coalesce((SELECT proacl::text FROM pg_proc WHERE oid = m.objid), '-')
         WHEN 'pg_class'::regclass THEN
             (SELECT relkind::text || ' acl ' || coalesce(relacl::text, '-') ||
                     ' rls ' || relrowsecurity || ' opts ' || coalesce(reloptions::text, '-') ||
                     coalesce(' view ' || pg_get_viewdef(c.oid), '')
                FROM pg_class c WHERE c.oid = m.objid) ||
             coalesce((SELECT ' columns ' || string_agg(a.attname || ' ' ||
                                 format_type(a.atttypid, a.atttypmod) ||
                                 CASE WHEN a.attnotnull THEN ' not null' ELSE '' END ||
                                 coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), '') ||
                                 coalesce(' acl ' || a.attacl::text, ''),
                                 ', ' ORDER BY a.attnum)
                         FROM pg_attribute a
                         LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
                        WHERE a.attrelid = m.objid AND a.attnum > 0 AND NOT a.attisdropped), '') ||
             coalesce((SELECT ' constraints ' || string_agg(co.conname || ' ' || pg_get_constraintdef(co.oid), ', ' ORDER BY co.conname)
                         FROM pg_constraint co WHERE co.conrelid = m.objid), '') ||
             coalesce((SELECT ' indexes ' || string_agg(pg_get_indexdef(i.indexrelid), ', ' ORDER BY 1)
                         FROM pg_index i WHERE i.indrelid = m.objid), '') ||
             coalesce((SELECT ' policies ' || string_agg(p.polname || ' ' || p.polcmd::text || ' ' ||
                                 coalesce(pg_get_expr(p.polqual, p.polrelid), '-') || ' ' ||
                                 coalesce(pg_get_expr(p.polwithcheck, p.polrelid), '-'), ', ' ORDER BY p.polname)
                         FROM pg_policy p WHERE p.polrelid = m.objid), '') ||
             coalesce((SELECT ' triggers ' || string_agg(pg_get_triggerdef(tg.oid), ', ' ORDER BY tg.tgname)
                         FROM pg_trigger tg WHERE tg.tgrelid = m.objid AND NOT tg.tgisinternal), '')
         WHEN 'pg_event_trigger'::regclass THEN
             (SELECT evtevent || ' ' || evtenabled::text || ' ' || evtfoid::regprocedure::text ||
                     ' ' || coalesce(evttags::text, '-')
                FROM pg_event_trigger WHERE oid = m.objid)
         ELSE ''
       END ||
       coalesce(' comment ' || obj_description(m.objid, m.classid::regclass::text), '')
  FROM members m
 ORDER BY 1;
};
}

1;
