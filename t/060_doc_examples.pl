# Every example of README.md and doc/*.md is run and compared with the page.
#
# A page's examples are its ```sql blocks: the statements and psql's output
# as a user sees it (NOTICE, ERROR, DETAIL and HINT lines included).  Blocks
# in another language (```text, ```sh, ```ini) are not run; a fence without
# a language is refused, so no example escapes the test unnoticed.
#
# Each page runs in a fresh cluster (pg_cron preloaded and serving database
# "postgres", TimeZone UTC, DateStyle ISO), in one psql session, in page
# order, with nothing but what the page shows:
#   1. if the page says, before its first ```sql block,
#          This page continues the setup of [name](OTHER.md#ANCHOR)
#      OTHER.md first, from its top to the end of its section ANCHOR (the
#      heading or <a id="ANCHOR"></a> of that name, up to the next heading
#      or anchor): its ```sql blocks and hidden steps, their output checked
#      on their own page, not here; before them the setup OTHER.md itself
#      continues, if any;
#   2. then, in page order, the ```sql blocks and the hidden steps written in
#      the page as
#          <!-- doctest
#          SQL run here, not shown (a wait, a state change)
#          -->
# A page that needs tables, rows, roles or runs creates them in its own
# first ```sql block (its setup) or continues another page's setup, and
# captures the ids it uses with \gset.  Nothing else runs: a hidden fixture
# (a file under t/doc/, as pages once had) fails the test.
# Setup and hidden steps run with ON_ERROR_STOP: an error there fails the
# page (a step that means to fail turns it off around that statement).  Examples run without it: an ERROR is expected output like any other.
#
# Comparison (the only normalisation): psql runs with -q (no command tags)
# and \pset footer off (no "(N rows)"); blank lines and trailing blanks are
# ignored; a line holding only "..." in the page stands for any number of
# lines.  Nothing else is masked: examples print no now(), pids, durations or
# job ids (select stable columns, use fixed dates).
#
#   BACKFILL_DOC_PAGES="README runs"   run only these pages (names or paths)
#
# On a difference the test names page:line and prints a diff; a copy of the
# page with each differing block replaced by what psql printed is written to
# tmp_check/doc_examples/ (compare it with the page, or copy it over).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use File::Basename qw(basename dirname);
use File::Path qw(make_path);
use File::Temp qw(tempfile);

delete @ENV{qw(PGTZ PGDATESTYLE PGOPTIONS PGCLIENTENCODING)};

# Lines that start a statement when no statement is open.  Anything else
# outside a statement is output.
my $statement_start = qr/^(?:SELECT|CALL|CREATE|INSERT|UPDATE|DELETE|SET|RESET|SHOW|WITH
	|BEGIN|COMMIT|ROLLBACK|START|SAVEPOINT|RELEASE|GRANT|REVOKE|ALTER|DROP|TABLE|VALUES
	|EXPLAIN|DO|TRUNCATE|LOCK|ANALYZE|VACUUM|COPY|LOAD|DISCARD|PREPARE|EXECUTE|COMMENT
	|REFRESH|NOTIFY|LISTEN|CHECKPOINT)\b/xi;

# Scan one line of SQL, carrying the lexer state (open quote, dollar quote or
# block comment; whether text follows the last semicolon) across lines.
# Returns true when the statement is complete at the end of the line.
sub scan_sql
{
	my ($st, $line) = @_;
	my $i = 0;
	my $n = length $line;
	while ($i < $n)
	{
		my $c = substr($line, $i, 1);
		my $in = $st->{in};
		if ($in eq "'" || $in eq '"')
		{
			$st->{in} = '' if $c eq $in;
			$i++;
		}
		elsif ($in eq '/*')
		{
			if (substr($line, $i, 2) eq '*/') { $st->{in} = ''; $i += 2; }
			else { $i++; }
		}
		elsif ($in ne '')
		{
			if (substr($line, $i, length $in) eq $in)
			{
				$st->{in} = '';
				$i += length $in;
			}
			else { $i++; }
		}
		elsif (substr($line, $i, 2) eq '--') { last; }
		elsif (substr($line, $i, 2) eq '/*') { $st->{in} = '/*'; $i += 2; }
		elsif ($c eq "'" || $c eq '"') { $st->{in} = $c; $st->{open} = 1; $i++; }
		elsif ($c eq '$'
			&& substr($line, $i) =~ /^(\$(?:[A-Za-z_][A-Za-z_0-9]*)?\$)/)
		{
			$st->{in} = $1;
			$st->{open} = 1;
			$i += length $1;
		}
		elsif ($c eq ';') { $st->{open} = 0; $i++; }
		elsif ($c eq '\\')
		{
			# a meta-command (\gset, \gx, ...) sends what precedes it
			$st->{open} = 0;
			last;
		}
		else
		{
			$st->{open} = 1 if $c !~ /\s/;
			$i++;
		}
	}
	return $st->{in} eq '' && !$st->{open};
}

# Split a ```sql block into the lines psql is fed (statements, comments,
# meta-commands) and the rest (the expected output).  Returns the input
# lines, or dies naming the line of an unterminated statement.
sub input_lines
{
	my ($block) = @_;
	my @in;
	my $st = { in => '', open => 0 };
	my ($open_at, $in_message);
	for my $k (0 .. $#{ $block->{lines} })
	{
		my $l = $block->{lines}[$k];
		if (defined $open_at)
		{
			push @in, $l;
			undef $open_at if scan_sql($st, $l);
			next;
		}
		# a message quoting SQL over several lines (CONTEXT:  SQL statement
		# "...") goes on until its closing quote
		my $quotes = () = $l =~ /"/g;
		if ($in_message)
		{
			$in_message = 0 if $quotes % 2;
			next;
		}
		if ($l =~ /^(?:ERROR|WARNING|NOTICE|INFO|DETAIL|HINT|CONTEXT|QUERY):/)
		{
			$in_message = 1 if $quotes % 2;
			next;
		}
		next if $l =~ /^\s*$/;
		next if $l =~ /^-+(?:\+-+)*\s*$/;    # a table's rule line
		if ($l =~ /^\\/ || $l =~ /^--/)
		{
			push @in, $l;
		}
		elsif ($l =~ $statement_start)
		{
			push @in, $l;
			$open_at = $block->{line} + $k unless scan_sql($st, $l);
		}
	}
	die "$block->{page}:$open_at: statement not terminated in its block\n"
	  if defined $open_at;
	return @in;
}

# Read a page: its fenced blocks and hidden steps, with their line numbers.
sub parse_page
{
	my ($path) = @_;
	open my $fh, '<', $path or die "cannot read $path: $!";
	my @lines = <$fh>;
	close $fh;
	chomp @lines;
	my (@segments, @bad_fences);
	my $i = 0;
	while ($i < @lines)
	{
		my $l = $lines[$i];
		if ($l =~ /^(\s*)```(\S*)\s*$/)
		{
			my ($indent, $lang) = (length $1, $2);
			push @bad_fences, $i + 1 if $lang eq '';
			my $start = $i + 1;
			my @body;
			$i++;
			while ($i < @lines && $lines[$i] !~ /^\s*```\s*$/)
			{
				my $b = $lines[$i];
				$b =~ s/^ {0,$indent}//;
				push @body, $b;
				$i++;
			}
			push @segments,
			  {
				kind => 'example',
				page => $path,
				at => $start - 1,           # index of the fence
				line => $start + 1,         # first line of the body
				first => $start,            # index of the first body line
				last => $i - 1,             # index of the last body line
				indent => $indent,
				lines => \@body
			  }
			  if $lang eq 'sql';
			$i++;
			next;
		}
		if ($l =~ /^\s*<!--\s*doctest\b/)
		{
			my $start = $i + 1;
			my @body;
			$i++;
			while ($i < @lines && $lines[$i] !~ /-->/)
			{
				push @body, $lines[$i];
				$i++;
			}
			push @segments,
			  { kind => 'hidden', page => $path, at => $start - 1, line => $start,
				lines => \@body };
			$i++;
			next;
		}
		$i++;
	}
	return { path => $path, lines => \@lines, segments => \@segments,
		bad_fences => \@bad_fences };
}

# Lines as compared: trailing blanks dropped, blank lines left out.
sub comparable
{
	return grep { $_ ne '' } map { (my $x = $_) =~ s/\s+$//; $x } @_;
}

# Does the actual output match the page's lines?  A page line "..." matches
# any number of lines.
sub matches
{
	my ($exp, $act, $i, $j) = @_;
	($i, $j) = (0, 0) unless defined $i;
	while ($i < @$exp)
	{
		if ($exp->[$i] =~ /^\s*\.\.\.$/)
		{
			for my $k ($j .. scalar @$act)
			{
				return 1 if matches($exp, $act, $i + 1, $k);
			}
			return 0;
		}
		return 0 if $j >= @$act || $exp->[$i] ne $act->[$j];
		$i++;
		$j++;
	}
	return $j == @$act;
}

# A unified diff of two lists of lines.
sub diff_lines
{
	my ($label_a, $a, $label_b, $b) = @_;
	my ($fa, $na) = tempfile(UNLINK => 1);
	my ($fb, $nb) = tempfile(UNLINK => 1);
	print $fa map { "$_\n" } @$a;
	print $fb map { "$_\n" } @$b;
	close $fa;
	close $fb;
	my $out = '';
	IPC::Run::run [ 'diff', '-u', '--label', $label_a, '--label', $label_b,
		$na, $nb ], '>', \$out;
	return $out;
}

# Build the psql script of a page: the setup it continues, then every
# segment, each announced by a marker line so the transcript can be cut
# apart.
sub page_script
{
	my ($page, $continued) = @_;
	my $s = "\\set ECHO none\n\\set ON_ERROR_STOP 1\n\\pset footer off\n";
	$s .= "\\echo '\@\@doctest setup\@\@'\n" if @{ $continued // [] };
	# another page's setup: its statements only, stopping at an error
	for my $seg (@{ $continued // [] })
	{
		$s .= "\\set ON_ERROR_STOP 1\n";
		$s .= join('', map { "$_\n" }
			  @{ $seg->{kind} eq 'hidden' ? $seg->{lines} : [ input_lines($seg) ] });
	}
	my $n = 0;
	for my $seg (@{ $page->{segments} })
	{
		$s .= "\\set ECHO none\n";
		if ($seg->{kind} eq 'hidden')
		{
			$s .= "\\set ON_ERROR_STOP 1\n\\echo '\@\@doctest $n\@\@'\n";
			$s .= join('', map { "$_\n" } @{ $seg->{lines} });
		}
		else
		{
			$s .= "\\set ON_ERROR_STOP 0\n\\echo '\@\@doctest $n\@\@'\n\\set ECHO all\n";
			$s .= join('', map { "$_\n" } @{ $seg->{input} });
		}
		$n++;
	}
	$s .= "\\set ECHO none\n\\echo '\@\@doctest end\@\@'\n";
	return $s;
}

# Start a fresh cluster for one page: pg_cron preloaded, no extension
# created (the page's setup does that).
sub page_cluster
{
	my ($name) = @_;
	$name =~ s/[^A-Za-z0-9]/_/g;
	return backfill_node("doc_$name",
		preload => 'pg_cron',
		extension => 0,
		# a run's summary NOTICE without the time it took (pages print
		# no durations); doc/settings.md says so
		conf => "DateStyle = 'ISO, MDY'\nlc_messages = 'C'\n"
		  . "backfill.notice_timing = off\n");
}

# Run a page in its own cluster; returns the transcript cut by segment:
# { setup => text, 0 => text, 1 => text, ... }, and psql's exit status.
sub run_page
{
	my ($page, $continued) = @_;
	my $script = page_script($page, $continued);
	my $node = page_cluster(basename($page->{path}));
	my ($fh, $file) = tempfile(UNLINK => 1);
	print $fh $script;
	close $fh;
	my $out = '';
	my $rc = eval {
		IPC::Run::run [ 'psql', '-X', '-q', '-a', '-d', $node->connstr('postgres') ],
		  '<', $file, '>&', \$out, IPC::Run::timeout(900);
		$? >> 8;
	};
	$rc = "($@)" unless defined $rc;
	$node->stop('fast');
	$node->clean_node;
	my (%cut, $cur);
	for my $l (split /\n/, $out, -1)
	{
		if ($l =~ /^\@\@doctest (\S+)\@\@$/) { $cur = $1; $cut{$cur} = []; next; }
		push @{ $cut{$cur} }, $l if defined $cur;
	}
	for my $k (keys %cut)
	{
		# the marker's own "\set ECHO none", echoed before it
		pop @{ $cut{$k} } while @{ $cut{$k} } && $cut{$k}[-1] =~ /^(\\set ECHO none|)$/;
	}
	return (\%cut, $rc, $out);
}

# GitHub's anchor of a heading.
sub heading_anchor
{
	my ($h) = @_;
	$h = lc $h;
	$h =~ s/[^\w\- ]//g;
	$h =~ s/ /-/g;
	return $h;
}

# The page whose setup a page continues: [ path, anchor ] from a line
# "This page continues the setup of [name](OTHER.md#ANCHOR)" before its first
# ```sql block, or undef.
sub continued_setup
{
	my ($page) = @_;
	for my $l (@{ $page->{lines} })
	{
		last if $l =~ /^\s*```sql\s*$/;
		next unless $l =~ /continues the setup of \[[^\]]*\]\(([^()#\s]+\.md)#([\w-]+)\)/i;
		my ($file, $anchor) = ($1, $2);
		my $path = dirname($page->{path}) . "/$file";
		$path =~ s{^\./}{};
		1 while $path =~ s{[^/]+/\.\./}{};
		return [ $path, $anchor ];
	}
	return undef;
}

# The segments another page's setup runs: those of PATH from its top to the
# end of its section ANCHOR (from its heading or <a id="ANCHOR"></a> to the
# next heading or anchor), after the setup that page continues in its turn.
# Dies if the section is missing, nothing runs or the pages continue each
# other in a circle.
sub setup_segments
{
	my ($path, $anchor, $seen) = @_;
	$seen //= {};
	die "$path#$anchor: the pages continue each other's setup in a circle\n"
	  if $seen->{"$path#$anchor"}++;
	my $page = parse_page($path);
	my ($from, $to);
	for my $i (0 .. $#{ $page->{lines} })
	{
		my $l = $page->{lines}[$i];
		my $here;
		if ($l =~ /^#+\s+(.*?)\s*$/) { $here = heading_anchor($1); }
		elsif ($l =~ /<a\s+(?:id|name)="([^"]+)"/) { $here = $1; }
		else { next; }
		if (defined $from) { $to = $i; last; }
		$from = $i if $here eq $anchor;
	}
	die "$path has no heading or anchor #$anchor\n" unless defined $from;
	$to //= scalar @{ $page->{lines} };
	my @segs = grep { $_->{at} < $to } @{ $page->{segments} };
	die "$path#$anchor: no ```sql block up to that section's end\n"
	  unless grep { $_->{kind} eq 'example' } @segs;
	my $up = continued_setup($page);
	return ($up ? setup_segments(@$up, $seen) : (), @segs);
}

# Check one page; returns the number of examples checked.
sub check_page
{
	my ($path, $label) = @_;
	$label //= $path;
	my $page = parse_page($path);
	my $up = continued_setup($page);
	my @continued;
	if ($up)
	{
		@continued = eval { setup_segments(@$up) };
		if ($@)
		{
			fail("$label: the setup it continues, $up->[0]#$up->[1], is found");
			diag($@);
			return 0;
		}
	}
	my $examples = 0;
	is(scalar @{ $page->{bad_fences} }, 0,
		"$label: every fenced block names its language")
	  or diag(join('', map { "$label:$_: a fence without a language (```sql to run it, ```text not to)\n" }
			@{ $page->{bad_fences} }));
	for my $seg (@{ $page->{segments} })
	{
		next unless $seg->{kind} eq 'example';
		$seg->{input} = [ input_lines($seg) ];
		$examples++;
	}
	return 0 unless @{ $page->{segments} } || @continued;
	my ($cut, $rc, $raw) = run_page($page, \@continued);
	my $nseg = scalar @{ $page->{segments} };

	# Setup and hidden steps run with ON_ERROR_STOP: one that failed is the
	# last segment whose marker psql printed.
	my $stopped = sub {
		my ($next) = @_;
		return !defined $cut->{$next};
	};
	if (@continued)
	{
		ok(!$stopped->($nseg ? 0 : 'end'), "$label: the setup of $up->[0]#$up->[1] runs")
		  or diag(join("\n", @{ $cut->{setup} // [] }));
	}
	my @replaced;
	my $n = 0;
	for my $seg (@{ $page->{segments} })
	{
		my $got = $cut->{$n};
		my $where = "$label:$seg->{line}";
		my $next = $n + 1 < $nseg ? $n + 1 : 'end';
		$n++;
		if (!defined $got)
		{
			my $left = grep { $_->{kind} eq 'example' } @{ $page->{segments} }[ $n - 1 .. $nseg - 1 ];
			fail("$where: not run, nor $left example(s) after it (psql stopped earlier, exit status $rc)");
			last;
		}
		if ($seg->{kind} eq 'hidden')
		{
			ok(!$stopped->($next), "$where: hidden step runs")
			  or diag(join("\n", @$got));
			next;
		}
		my @exp = comparable(@{ $seg->{lines} });
		my @act = comparable(@$got);
		if (matches(\@exp, \@act))
		{
			pass("$where: example as printed");
			next;
		}
		fail("$where: example as printed");
		diag("$where: the example's output differs from the page:\n"
			  . diff_lines("$where (page)", \@exp, "$where (psql)", \@act));
		push @replaced, [ $seg, $got ];
	}
	if (@replaced)
	{
		my @lines = @{ $page->{lines} };
		for my $r (reverse @replaced)
		{
			my ($seg, $got) = @$r;
			my $pad = ' ' x $seg->{indent};
			splice @lines, $seg->{first}, $seg->{last} - $seg->{first} + 1,
			  map { (my $x = $_) =~ s/\s+$//; $x eq '' ? '' : "$pad$x" } @$got;
		}
		my $copy = "$PostgreSQL::Test::Utils::tmp_check/doc_examples/$label";
		make_path(dirname($copy));
		open my $fh, '>', $copy or die "cannot write $copy: $!";
		print $fh map { "$_\n" } @lines;
		close $fh;
		diag("$label: the page as psql printed it: $copy");
	}
	return $examples;
}

# The harness itself: a wrong output, a missing output, an elision and an
# expected error are told apart, in a page made for the purpose.
{
	my ($fh, $self) = tempfile(SUFFIX => '.md', UNLINK => 1);
	print $fh <<'PAGE';
```sql
SELECT 1 AS one;
 one
-----
   1

SELECT x FROM generate_series(1, 5) AS x;
 x
---
 1
 ...
 5
SELECT 1/0;
ERROR:  division by zero
```

```sql
SELECT 2 AS two;
 two
-----
   3
```

```text
not run
```

<!-- doctest
CREATE TABLE selftest (a int);
-->

```sql
TABLE selftest;
```
PAGE
	close $fh;
	my $page = parse_page($self);
	$_->{input} = [ input_lines($_) ] for grep { $_->{kind} eq 'example' } @{ $page->{segments} };
	my ($cut, $rc) = run_page($page);
	my @seg = @{ $page->{segments} };
	is(scalar @seg, 4, 'harness: three examples and a hidden step found');
	ok(matches([ comparable(@{ $seg[0]{lines} }) ], [ comparable(@{ $cut->{0} }) ]),
		'harness: an example with an elision and an error matches');
	ok(!matches([ comparable(@{ $seg[1]{lines} }) ], [ comparable(@{ $cut->{1} }) ]),
		'harness: a wrong output is a difference');
	ok(!matches([ comparable(@{ $seg[3]{lines} }) ], [ comparable(@{ $cut->{3} }) ]),
		'harness: an output missing from the page is a difference');
}

# A page that continues another page's setup runs that section first (and
# only it), and a missing section is reported.
{
	my $dir = PostgreSQL::Test::Utils::tempdir();
	open my $fa, '>', "$dir/first.md" or die;
	print $fa <<'PAGE';
# First

## Setup

```sql
CREATE TABLE shared (a int);
INSERT INTO shared VALUES (1);
```

## Later

```sql
INSERT INTO shared VALUES (2);
```
PAGE
	close $fa;
	open my $fb, '>', "$dir/second.md" or die;
	print $fb <<'PAGE';
This page continues the setup of [first](first.md#setup).

```sql
SELECT count(*) FROM shared;
 count
-------
     1
```
PAGE
	close $fb;
	my $page = parse_page("$dir/second.md");
	my $up = continued_setup($page);
	is_deeply($up, [ "$dir/first.md", 'setup' ], 'harness: the page whose setup a page continues is found');
	my @cont = setup_segments(@$up);
	is(scalar @cont, 1, 'harness: the page up to the section named is run first, not after');
	$_->{input} = [ input_lines($_) ] for grep { $_->{kind} eq 'example' } @{ $page->{segments} };
	my ($cut) = run_page($page, \@cont);
	ok(matches([ comparable(@{ $page->{segments}[0]{lines} }) ], [ comparable(@{ $cut->{0} }) ]),
		'harness: a page runs after the setup it continues');
	ok(!eval { setup_segments("$dir/first.md", 'nowhere'); 1 } && $@ =~ /no heading or anchor #nowhere/,
		'harness: a missing section is reported');
}

# The pages.
my @pages = ('README.md', sort glob('doc/*.md'));
if ($ENV{BACKFILL_DOC_PAGES})
{
	my %want = map { (my $x = $_) =~ s{^.*/|\.md$}{}g; ($x => 1) } split ' ', $ENV{BACKFILL_DOC_PAGES};
	@pages = grep { my $x = $_; $x =~ s{^.*/|\.md$}{}g; $want{$x} } @pages;
	BAIL_OUT("no page matches BACKFILL_DOC_PAGES=$ENV{BACKFILL_DOC_PAGES}") unless @pages;
}
# No hidden fixture: a page runs with what it shows, nothing else.
my @hidden = grep { -f } glob('t/doc/*');
is(scalar @hidden, 0, 'no hidden fixture under t/doc/: every page shows its own setup')
  or diag(join('', map { "$_: show this setup in its page (or continue another page's) and remove the file\n" } @hidden));
my $total = 0;
for my $path (@pages)
{
	$total += check_page($path);
}
note("$total examples checked in " . scalar(@pages) . " pages");

done_testing();
