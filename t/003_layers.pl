# The layers of src/ (CONTRIBUTING.md, "Layers").  The file-to-file call
# graph is read from the object files with nm: file A calls file B when A
# has an undefined symbol that B defines.  Then:
#   - every C file lies in a layer folder: src/base, src/engine,
#     src/orchestration, src/api (bottom to top);
#   - no file calls a file of a higher layer;
#   - the graph has no cycle, inside a layer or across (each one found is
#     named, file -> file: symbols);
#   - SQL entry points (PG_FUNCTION_INFO_V1) are defined in src/api only,
#     and no file calls an entry point of another file: an entry point
#     calls the C function behind the other one instead;
#   - every entry point calls CitusRequireCoordinator and then
#     RequireCatalogVersion (base/version.c), except the few that
#     touch neither the catalog nor a user table, and the event trigger
#     (listed below).
#   - the feature homes (CONTRIBUTING.md, "Feature homes", read from there:
#     the one list): every file and backfill.h heading the table names
#     exists; a file outside a feature calls into the feature's files only
#     through its interface, the functions and variables declared in
#     src/backfill.h under the feature's headings; no file of src/engine
#     calls a file of the scheduling feature (pg_cron); exactly one C file
#     inserts into backfill.runs.
# The picture of the layers is printed (prove -v, or perl t/003_layers.pl).
#
# The object files are those of the tested tree (scripts/test.sh builds it
# before copying it); when one is missing or older than its source, the
# tree is built in a scratch copy with $PG_CONFIG.
use strict;
use warnings;
use Cwd qw(getcwd);
use File::Basename qw(dirname);
use File::Copy qw(copy);
use File::Find qw(find);
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use FindBin;
use Test::More;

my @layers = qw(base engine orchestration api);
my %rank;
@rank{@layers} = (0 .. $#layers);

# Entry points that need no Citus coordinator check: pure computations
# that read neither the catalog nor a user table (_in_range even runs
# inside the INSERT that Citus pushes down to the workers), and the event
# trigger of the scheduling-role guard, which Citus fires on the workers
# too (their DROP OWNED and REVOKE must not fail).  And _watch_row, the
# WHEN clause of a watched source's INSERT row trigger, called once per
# row: it reads no catalog and no table, only what the source's BEFORE
# INSERT statement trigger (_watch_trigger) loaded for this statement,
# and finds nothing otherwise.  And _watch_trigger itself, fired on every
# statement of a watched source's writers: it makes both checks in
# WatchCatalog (orchestration/watchlog.c), called before its first read or
# write of the catalog, and skips them when the cached watches are all it
# needs (a write at the live edge: issue 30).  And _watch_ddl, the
# event trigger of CREATE TABLE and ALTER TABLE, which Citus also runs on
# the workers (where no source is watched): it returns at once unless the
# command makes a partition, and then does nothing unless the catalog is
# at the library's version (CatalogVersionMatches: an error there would
# fail the user's DDL).  And _recorded_signal, the trigger of
# backfill.changed_regions, which reads nothing (it only queues a relcache
# invalidation of the table it fires on) and must not fail the statement
# that changed the log, a build's among them.
my %no_citus_check = map { $_ => 1 }
  qw(backfill_split_range backfill_in_range backfill_in_quiet_hours
  backfill_job_guard backfill_watch_row backfill_watch_trigger
  backfill_watch_ddl backfill_recorded_signal);

my $root = dirname($FindBin::RealBin);
chdir $root or die "cannot chdir to $root: $!";

my @sources;
find({ wanted => sub { push @sources, $File::Find::name if /\.c\z/ }, no_chdir => 1 }, 'src');
@sources = sort @sources;
ok(@sources > 0, 'src/ has C files');

# ---- the object files ------------------------------------------------

# The object file of each source, built in a scratch copy when the tree's
# own are missing or stale.
sub object_dir
{
	my @headers;
	find({ wanted => sub { push @headers, $File::Find::name if /\.h\z/ }, no_chdir => 1 }, 'src');
	my $newest_header = 0;
	for my $h (@headers)
	{
		my $m = (stat $h)[9];
		$newest_header = $m if $m > $newest_header;
	}
	my $fresh = 1;
	for my $c (@sources)
	{
		(my $o = $c) =~ s/\.c\z/.o/;
		my $om = -f $o ? (stat $o)[9] : 0;
		$fresh = 0 if $om < (stat $c)[9] || $om < $newest_header;
	}
	return '.' if $fresh;

	my $scratch = tempdir('layers.XXXXXX', TMPDIR => 1, CLEANUP => 1);
	for my $f ('Makefile', glob('*.control'), @sources, @headers,
		glob('versions/*.sql'), glob('src/sql/*.sql'))
	{
		make_path("$scratch/" . dirname($f));
		copy($f, "$scratch/$f") or die "cannot copy $f: $!";
	}
	my $pg_config = $ENV{PG_CONFIG} || 'pg_config';
	my $out = `make -s -C '$scratch' PG_CONFIG='$pg_config' 2>&1`;
	die "building the object files failed:\n$out" if $?;
	note("object files built in a scratch copy ($scratch)");
	return $scratch;
}

my $objdir = object_dir();
my (%defines, %undefined, %entry);
for my $c (@sources)
{
	(my $o = $c) =~ s/\.c\z/.o/;
	my @nm = `nm -P '$objdir/$o'`;
	die "nm failed on $objdir/$o" if $? || !@nm;
	for (@nm)
	{
		my ($sym, $type) = split ' ';
		next unless defined $type;
		if ($type eq 'U')
		{
			$undefined{$c}{$sym} = 1;
		}
		elsif ($type =~ /^[A-Z]\z/)
		{
			$defines{$sym} = $c;
			$entry{$1} = $c if $sym =~ /^pg_finfo_(\w+)\z/;
		}
	}
}

# file -> file -> [symbols]
my %calls;
for my $c (@sources)
{
	for my $sym (sort keys %{ $undefined{$c} })
	{
		my $d = $defines{$sym};
		next unless defined $d && $d ne $c;
		push @{ $calls{$c}{$d} }, $sym;
	}
}

sub layer_of
{
	my ($file) = @_;
	return $file =~ m{^src/([^/]+)/[^/]+\.c\z} ? $1 : '(none)';
}

sub edge_text
{
	my ($from, $to) = @_;
	return "$from -> $to: " . join(', ', @{ $calls{$from}{$to} });
}

# ---- the picture ------------------------------------------------------

my @picture;
for my $layer (reverse(@layers), '(none)')
{
	my @files = grep { layer_of($_) eq $layer } @sources;
	next unless @files;
	push @picture, sprintf('%s/', $layer eq '(none)' ? 'src (no layer)' : "src/$layer");
	for my $f (@files)
	{
		my @to = sort keys %{ $calls{$f} || {} };
		(my $short = $f) =~ s{^src/}{};
		push @picture, sprintf('    %-34s -> %s', $short,
			@to ? join(' ', map { (my $t = $_) =~ s{^src/}{}; $t } @to) : '(nothing)');
	}
}
note($_) for @picture;

# ---- the checks -------------------------------------------------------

my @outside = grep { !exists $rank{ layer_of($_) } } @sources;
is(join("\n", @outside), '', 'every C file lies in a layer folder (src/'
	  . join(', src/', @layers) . ')');

my @upward;
for my $from (@sources)
{
	for my $to (sort keys %{ $calls{$from} || {} })
	{
		my ($lf, $lt) = (layer_of($from), layer_of($to));
		next unless exists $rank{$lf} && exists $rank{$lt};
		push @upward, edge_text($from, $to) if $rank{$lt} > $rank{$lf};
	}
}
is(join("\n", @upward), '', 'no file calls a file of a higher layer');

# Tarjan's strongly connected components; a component of two files or
# more holds a cycle, which is then named.
my ($index, @stack, %on_stack, %idx, %low, @components) = (0);

sub strongconnect
{
	my ($v) = @_;
	$idx{$v} = $low{$v} = $index++;
	push @stack, $v;
	$on_stack{$v} = 1;
	for my $w (sort keys %{ $calls{$v} || {} })
	{
		if (!exists $idx{$w})
		{
			strongconnect($w);
			$low{$v} = $low{$w} if $low{$w} < $low{$v};
		}
		elsif ($on_stack{$w})
		{
			$low{$v} = $idx{$w} if $idx{$w} < $low{$v};
		}
	}
	if ($low{$v} == $idx{$v})
	{
		my @c;
		my $w;
		do
		{
			$w = pop @stack;
			$on_stack{$w} = 0;
			push @c, $w;
		} while ($w ne $v);
		push @components, [ sort @c ] if @c > 1;
	}
	return;
}
strongconnect($_) for grep { !exists $idx{$_} } @sources;

# One cycle through the first file of a component, by breadth-first search
# inside the component (the shortest way back to it).
sub cycle_in
{
	my (@files) = @_;
	my %in = map { $_ => 1 } @files;
	my $start = $files[0];
	my %prev;
	my @queue = ($start);
	my %seen = ($start => 1);
	while (@queue)
	{
		my $v = shift @queue;
		for my $w (sort keys %{ $calls{$v} || {} })
		{
			next unless $in{$w};
			if ($w eq $start)
			{
				my @path = ($v);
				unshift @path, $prev{ $path[0] } while exists $prev{ $path[0] };
				push @path, $start;
				return map { edge_text($path[$_], $path[ $_ + 1 ]) } 0 .. $#path - 1;
			}
			next if $seen{$w}++;
			$prev{$w} = $v;
			push @queue, $w;
		}
	}
	return ();
}

my @cycles;
for my $comp (@components)
{
	push @cycles, sprintf('a cycle among %d files (%s):', scalar(@$comp), join(', ', @$comp)),
	  map { "    $_" } cycle_in(@$comp);
}
is(join("\n", @cycles), '', 'the file-to-file call graph has no cycle');

my @stray_entries = map { "$_ (in $entry{$_})" }
  grep { layer_of($entry{$_}) ne 'api' } sort keys %entry;
is(join("\n", @stray_entries), '', 'SQL entry points are defined in src/api only');

my @entry_calls;
for my $from (@sources)
{
	for my $sym (sort keys %{ $undefined{$from} })
	{
		next unless exists $entry{$sym} && $entry{$sym} ne $from;
		push @entry_calls, "$from calls the entry point $sym of $entry{$sym}";
	}
}
is(join("\n", @entry_calls), '', 'no file calls an SQL entry point of another file');

# Each entry point's body, from its definition line to the closing brace
# in column 0, must call CitusRequireCoordinator and RequireCatalogVersion
# (base/version.c).
my (@unchecked, @unversioned);
for my $c (@sources)
{
	open my $fh, '<', $c or die "cannot read $c: $!";
	my $text = do { local $/; <$fh> };
	close $fh;
	while ($text =~ /^(backfill_\w+)\(PG_FUNCTION_ARGS\)\n\{\n(.*?)^\}/msg)
	{
		my ($fn, $body) = ($1, $2);
		next if $no_citus_check{$fn};
		push @unchecked, "$fn ($c)" unless $body =~ /\bCitusRequireCoordinator\(\)/;
		push @unversioned, "$fn ($c)" unless $body =~ /\bRequireCatalogVersion\(\)/;
	}
}
is(join("\n", @unchecked), '',
	'every entry point that reads the catalog or a user table calls CitusRequireCoordinator');
is(join("\n", @unversioned), '',
	'and RequireCatalogVersion: no new library runs against an old catalog');

# ---- the feature homes ------------------------------------------------

# The table of CONTRIBUTING.md's "Feature homes": feature -> its files
# (globs under src/) and the headings of its interface in backfill.h.
my (@features, %files_of, %headings_of);
{
	open my $fh, '<', 'CONTRIBUTING.md' or die "cannot read CONTRIBUTING.md: $!";
	my $in = 0;
	while (my $line = <$fh>)
	{
		if ($line =~ /^#+\s+Feature homes\s*$/) { $in = 1; next; }
		next unless $in;
		last if $line =~ /^#/;
		next unless $line =~ /^\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*$/;
		my ($feature, $files, $heads) = ($1, $2, $3);
		next if $feature eq 'Feature' || $feature =~ /^-+$/;
		push @features, $feature;
		$files_of{$feature} = [ $files =~ /`([^`]+)`/g ];
		$headings_of{$feature} = [ $heads =~ /`([^`]+)`/g ];
	}
	close $fh;
}
ok(@features >= 2, 'CONTRIBUTING.md has the table of feature homes');

# The sections of backfill.h: heading -> the names its extern
# declarations declare (functions and variables).
my @sections;
{
	open my $fh, '<', 'src/backfill.h' or die "cannot read src/backfill.h: $!";
	my $text = do { local $/; <$fh> };
	close $fh;
	my @parts = split m{^(/\* ---- .*? ---- \*/|/\* =+\n.*?=+\n \*/)$}ms, $text;
	my $heading = '';
	for my $part (@parts)
	{
		if ($part =~ m{\A/\* ---- (.*?) ---- \*/\z})
		{
			$heading = $1;
			next;
		}
		if ($part =~ m{\A/\* =})
		{
			$heading = '';
			next;
		}
		(my $code = $part) =~ s{/\*.*?\*/}{}gs;
		my %names;
		while ($code =~ /\bextern\b([^;]*);/g)
		{
			my $decl = $1;
			if ($decl =~ /(\w+)\s*\(/) { $names{$1} = 1; }
			elsif ($decl =~ /(\w+)\s*(?:\[[^\]]*\]\s*)*\z/) { $names{$1} = 1; }
		}
		push @sections, [ $heading, \%names ];
	}
}

my (%feature_of, @homeless, @unheaded, @twice, %interface);
for my $feature (@features)
{
	for my $pattern (@{ $files_of{$feature} })
	{
		(my $re = quotemeta("src/$pattern")) =~ s/\\\*/[^\/]*/g;
		my @matched = grep { /\A$re\z/ } @sources;
		push @homeless, "$feature: $pattern" if !@matched && $pattern !~ /\*/;
		for my $f (@matched)
		{
			push @twice, "$f ($feature_of{$f}, $feature)"
			  if exists $feature_of{$f} && $feature_of{$f} ne $feature;
			$feature_of{$f} = $feature;
		}
	}
	for my $head (@{ $headings_of{$feature} })
	{
		my @found = grep { index($_->[0], $head) == 0 } @sections;
		push @unheaded, "$feature: $head" unless @found;
		$interface{$feature}{$_} = 1 for map { keys %{ $_->[1] } } @found;
	}
}
is(join("\n", @homeless), '', 'every file the table of feature homes names exists');
is(join("\n", @unheaded), '', 'every interface heading the table names is a heading of backfill.h');
is(join("\n", @twice), '', 'a file is in one feature at most');

# The interface as the table names it: its headings are sections of
# backfill.h, and what is declared there is defined in the feature's files
# (a feature's hooks live at home, not in the file that calls them).
my @around = map { "no section of backfill.h for the interface heading $_" } @unheaded;
for my $feature (@features)
{
	for my $sym (sort keys %{ $interface{$feature} || {} })
	{
		my $home = $defines{$sym};
		push @around, "$sym, in the interface of $feature, is defined in $home"
		  if defined $home && ($feature_of{$home} // '') ne $feature;
	}
}
for my $from (@sources)
{
	my $mine = $feature_of{$from} // '';
	for my $to (sort keys %{ $calls{$from} || {} })
	{
		my $feature = $feature_of{$to};
		next unless defined $feature && $feature ne $mine;
		my @private = grep { !$interface{$feature}{$_} } @{ $calls{$from}{$to} };
		push @around, "$from -> $to ($feature): " . join(', ', @private) if @private;
	}
}
is(join("\n", @around), '',
	'a file outside a feature calls into its files only through its interface (its backfill.h sections, defined at home)');

my ($scheduling) = grep { /^scheduling\b/ } @features;
my @engine_cron;
for my $from (grep { layer_of($_) eq 'engine' } @sources)
{
	for my $to (sort keys %{ $calls{$from} || {} })
	{
		push @engine_cron, edge_text($from, $to)
		  if defined $scheduling && ($feature_of{$to} // '') eq $scheduling;
	}
}
ok(defined $scheduling, 'the table has the scheduling feature');
is(join("\n", @engine_cron), '', 'no file of src/engine calls a file of scheduling (pg_cron)');

my @inserters;
for my $c (@sources)
{
	open my $fh, '<', $c or die "cannot read $c: $!";
	my $text = do { local $/; <$fh> };
	close $fh;
	push @inserters, $c if $text =~ /INSERT INTO backfill\.runs\b/i;
}
is(join(', ', @inserters), 'src/orchestration/plan.c',
	'exactly one C file inserts into backfill.runs (CreateRun, orchestration/plan.c)');

# Sizes (CONTRIBUTING.md, "The rule"): a C file holds one concern in at
# most 1,000 lines, a function at most 120 lines between its braces
# (pgindent puts a function's braces in column 0; nothing else is).
my (@big_files, @long_functions);
for my $c (@sources)
{
	open my $fh, '<', $c or die "cannot read $c: $!";
	my @lines = <$fh>;
	close $fh;
	push @big_files, "$c: " . scalar(@lines) . ' lines' if @lines > 1000;
	my ($open, $name);
	for my $i (0 .. $#lines)
	{
		$name = $1 if $lines[$i] =~ /^(\w+)\(/;
		if ($lines[$i] =~ /^\{/) { $open = $i; next; }
		if (defined $open && $lines[$i] =~ /^\}/)
		{
			my $body = $i - $open - 1;
			push @long_functions, "$c: " . ($name // '?') . " ($body lines)"
			  if $body > 120;
			undef $open;
		}
	}
}
is(join("\n", @big_files), '', 'no C file of src/ is over 1,000 lines');
is(join("\n", @long_functions), '', 'no function of src/ is over 120 lines');

diag(join("\n", 'the layers of src/, top to bottom (file -> the files it calls):', @picture))
  unless Test::More->builder->is_passing;

done_testing();
