# doc/reference.md lists every object of schema backfill as the extension
# creates it, so the reference cannot drift from the code.
#
# A freshly installed extension is read from the catalogs: every function
# and procedure (its arguments with their defaults, pg_get_function_arguments,
# and its result, pg_get_function_result), every table and view (its
# columns and their types, in order) and every sequence of schema backfill.
# doc/reference.md gives one entry per object:
#
#   ### backfill.NAME
#
#   ```text
#   function backfill.NAME(arg type, arg type = default, ...) RETURNS type
#   ```
#
#   One line of purpose. [page](page.md#anchor)
#
# (a procedure has no RETURNS; "table" and "view" entries list columns;
# an overloaded function has one line per signature in its block; a
# signature may be wrapped over several lines.)  The test compares the two
# and fails with the list of what is missing from the page, what the page
# lists that the extension lacks, and what differs (arguments, defaults,
# result, columns).  It also checks that every entry has a purpose and a
# link, that every object whose name starts with "_" sits under
# "## Internal", that every sequence is named, and that every link of the
# page leads to an existing page and heading.
#
# A self-test first runs the comparison on altered copies of the page (an
# entry removed, a column changed, an object invented) and checks that
# each is reported: the test is shown to fail when the page drifts.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use BackfillCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);

my $page = 'doc/reference.md';

# One spelling for both sides: short type names, no IN, defaults as
# "= value" without their cast, one blank between words.
sub normalise
{
	my ($s) = @_;
	$s =~ s/\s+/ /g;
	$s =~ s/^ | $//g;
	$s =~ s/\( /(/g;
	$s =~ s/ \)/)/g;
	$s =~ s/timestamp with time zone/timestamptz/g;
	$s =~ s/timestamp without time zone/timestamp/g;
	$s =~ s/time with time zone/timetz/g;
	$s =~ s/character varying/varchar/g;
	$s =~ s/(\(|, )IN /$1/g;
	$s =~ s/ DEFAULT ('(?:[^']|'')*'|\w+\(\)|[^,\s:()]+)(?:::[\w ]+?(?:\[\])?)?(?=,|\)(?: RETURNS|$))/ = $1/g;
	return $s;
}

# The objects of schema backfill: { name => { sigs => [sorted], kind } },
# and the list of its sequences.
sub extension_objects
{
	my ($node) = @_;
	my $out = $node->safe_psql('postgres', q{
SELECT p.proname, CASE p.prokind WHEN 'p' THEN 'procedure' ELSE 'function' END
       || ' backfill.' || p.proname || '(' || pg_catalog.pg_get_function_arguments(p.oid) || ')'
       || CASE WHEN p.prokind = 'p' THEN ''
               ELSE ' RETURNS ' || pg_catalog.pg_get_function_result(p.oid) END
  FROM pg_catalog.pg_proc p
 WHERE p.pronamespace = 'backfill'::pg_catalog.regnamespace
UNION ALL
SELECT c.relname, CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'view' ELSE 'table' END
       || ' backfill.' || c.relname || '('
       || pg_catalog.string_agg(a.attname OPERATOR(pg_catalog.||) ' '
              || pg_catalog.format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
       || ')'
  FROM pg_catalog.pg_class c
  JOIN pg_catalog.pg_attribute a
    ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE c.relnamespace = 'backfill'::pg_catalog.regnamespace
   AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
 GROUP BY c.relname, c.relkind
UNION ALL
SELECT c.relname, 'sequence backfill.' || c.relname
  FROM pg_catalog.pg_class c
 WHERE c.relnamespace = 'backfill'::pg_catalog.regnamespace AND c.relkind = 'S'
UNION ALL
SELECT t.typname, 'type backfill.' || t.typname
  FROM pg_catalog.pg_type t
 WHERE t.typnamespace = 'backfill'::pg_catalog.regnamespace
   AND t.typtype NOT IN ('c', 'b') AND t.typrelid = 0
ORDER BY 1, 2});
	my (%obj, @sequences);
	for my $line (split /\n/, $out)
	{
		my ($name, $sig) = split /\|/, $line, 2;
		if ($sig =~ /^sequence /) { push @sequences, $name; next; }
		push @{ $obj{$name}{sigs} }, normalise($sig);
	}
	$_->{sigs} = [ sort @{ $_->{sigs} } ] for values %obj;
	return (\%obj, \@sequences);
}

# The entries of the page: { name => { sigs, section, purpose, links,
# heading_line } }, and the problems of its form.
sub page_objects
{
	my ($text) = @_;
	my @lines = split /\n/, $text;
	my (%obj, @problems);
	my ($section, $heading, $in_block, $cur) = ('', undef, 0, undef);
	for my $i (0 .. $#lines)
	{
		my $l = $lines[$i];
		my $where = "$page:" . ($i + 1);
		if ($in_block)
		{
			if ($l =~ /^```\s*$/) { $in_block = 0; undef $cur; next; }
			if ($l =~ /^(function|procedure|table|view) backfill\.(\w+)\(/)
			{
				my $name = $2;
				push @problems, "$where: signature of backfill.$name under the heading of "
				  . (defined $heading ? "backfill.$heading" : 'no object')
				  if !defined $heading || $heading ne $name;
				$cur = { name => $name, text => $l };
				push @{ $obj{$name}{raw} }, $cur;
			}
			elsif (defined $cur) { $cur->{text} .= " $l"; }
			next;
		}
		if ($l =~ /^## (.*)$/) { $section = $1; undef $heading; next; }
		if ($l =~ /^### backfill\.(\w+)\s*$/)
		{
			$heading = $1;
			push @problems, "$where: a second entry for backfill.$heading"
			  if exists $obj{$heading}{line};
			$obj{$heading}{line} = $i + 1;
			$obj{$heading}{section} = $section;
			next;
		}
		if ($l =~ /^### /) { undef $heading; next; }
		if ($l =~ /^```text\s*$/) { $in_block = 1; next; }
		if (defined $heading && $l =~ /\S/)
		{
			$obj{$heading}{purpose} .= "$l ";
		}
	}
	for my $name (sort keys %obj)
	{
		my $o = $obj{$name};
		$o->{sigs} = [ sort map { normalise($_->{text}) } @{ $o->{raw} || [] } ];
		next unless $o->{line};
		my $where = "$page:$o->{line}";
		push @problems, "$where: backfill.$name has no signature block"
		  unless @{ $o->{sigs} };
		my $purpose = $o->{purpose} // '';
		push @problems, "$where: backfill.$name has no line of purpose"
		  unless $purpose =~ /[a-z].*\.\s/;
		push @problems, "$where: backfill.$name links to no page that explains it"
		  unless $purpose =~ /\]\([\w-]+\.md(?:#[\w-]+)?\)/;
		push @problems, "$where: backfill.$name starts with _ but is not under \"## Internal\""
		  if $name =~ /^_/ && $o->{section} ne 'Internal';
	}
	return (\%obj, \@problems);
}

# The differences between the extension and the page, as lines to print.
sub compare
{
	my ($ext, $sequences, $text) = @_;
	my ($doc, $problems) = page_objects($text);
	my @out = @$problems;
	for my $name (sort keys %$ext)
	{
		if (!exists $doc->{$name} || !@{ $doc->{$name}{sigs} })
		{
			push @out, "missing from $page: $_" for @{ $ext->{$name}{sigs} };
			next;
		}
		my ($e, $d) = (join("\n", @{ $ext->{$name}{sigs} }), join("\n", @{ $doc->{$name}{sigs} }));
		push @out, "different in $page: backfill.$name\n"
		  . join('', map { "    extension: $_\n" } @{ $ext->{$name}{sigs} })
		  . join('', map { "    reference: $_\n" } @{ $doc->{$name}{sigs} })
		  if $e ne $d;
	}
	for my $name (sort keys %$doc)
	{
		next if exists $ext->{$name};
		push @out, "in $page but not in the extension: "
		  . (@{ $doc->{$name}{sigs} } ? join(', ', @{ $doc->{$name}{sigs} }) : "backfill.$name");
	}
	for my $seq (@$sequences)
	{
		push @out, "missing from $page: the sequence backfill.$seq"
		  unless $text =~ /\bbackfill\.\Q$seq\E\b/;
	}
	return @out;
}

# GitHub's anchors of a page's headings.
sub anchors
{
	my ($path) = @_;
	open my $fh, '<', $path or return undef;
	my (%a, %n, $fence);
	while (my $l = <$fh>)
	{
		$fence = !$fence if $l =~ /^\s*```/;
		next if $fence || $l !~ /^#+\s+(.*?)\s*$/;
		(my $s = lc $1) =~ s/[^\w\- ]//g;
		$s =~ s/ /-/g;
		my $k = $n{$s}++ ? "$s-" . ($n{$s} - 1) : $s;
		$a{$k} = 1;
	}
	close $fh;
	return \%a;
}

# Links of the page that lead nowhere.
sub dead_links
{
	my ($text) = @_;
	my @out;
	my $dir = dirname($page);
	while ($text =~ /\]\(([^)\s]+)\)/g)
	{
		my $link = $1;
		next if $link =~ /^[a-z]+:/;
		my ($file, $anchor) = split /#/, $link, 2;
		my $path = $file eq '' ? $page : "$dir/$file";
		if (!-e $path) { push @out, "$page: link $link: no file $path"; next; }
		next unless defined $anchor && $path =~ /\.md$/;
		my $a = anchors($path);
		push @out, "$page: link $link: no heading with anchor #$anchor in $path"
		  unless $a->{$anchor};
	}
	return @out;
}

open my $fh, '<', $page or die "cannot read $page: $!";
my $text = do { local $/; <$fh> };
close $fh;

my $node = backfill_node('reference');
my ($ext, $sequences) = extension_objects($node);
ok(scalar(keys %$ext) > 50, 'the extension has its objects (' . scalar(keys %$ext) . ' names)');

# The self-test: the comparison notices a page that drifted.
{
	my $drop = $text;
	ok($drop =~ s/^### backfill\.watch\n.*?(?=^### )//ms, 'self-test: the entry of backfill.watch removed');
	my @d = compare($ext, $sequences, $drop);
	is_deeply(\@d, [ 'missing from doc/reference.md: function backfill.watch(target regclass, source_table regclass, source_column name, settle interval = NULL) RETURNS boolean' ],
		'self-test: an object missing from the page is reported')
	  or diag(join("\n", @d));

	my $col = $text;
	ok($col =~ s/(table backfill\.archived_leaves\(.*?) rules text\)/$1 rules name)/s,
		'self-test: a column type of archived_leaves changed');
	@d = compare($ext, $sequences, $col);
	ok(@d == 1 && $d[0] =~ /^different in \S+: backfill\.archived_leaves\n.*extension: .*rules text\).*reference: .*rules name\)/s,
		'self-test: a column that differs is reported')
	  or diag(join("\n", @d));

	my $extra = $text . "\n## Internal\n\n### backfill._nothing\n\n```text\nfunction backfill._nothing() RETURNS void\n```\n\nNothing. [x](runs.md)\n";
	@d = compare($ext, $sequences, $extra);
	is_deeply(\@d, [ 'in doc/reference.md but not in the extension: function backfill._nothing() RETURNS void' ],
		'self-test: an object the extension lacks is reported')
	  or diag(join("\n", @d));
}

is_deeply([ dead_links("[a](runs.md#no-such-heading) [b](nowhere.md) [c](runs.md#backfillplan)") ],
	[ 'doc/reference.md: link runs.md#no-such-heading: no heading with anchor #no-such-heading in doc/runs.md',
	  'doc/reference.md: link nowhere.md: no file doc/nowhere.md' ],
	'self-test: a link to a missing heading or page is reported');

my @drift = compare($ext, $sequences, $text);
is(scalar @drift, 0, "$page lists every object of schema backfill as the extension creates it")
  or diag("$page and the extension differ:\n" . join("\n", @drift)
	  . "\n(the objects as the extension has them: t/061_reference.pl, extension_objects)");

my @dead = dead_links($text);
is(scalar @dead, 0, "every link of $page leads to a page and a heading")
  or diag(join("\n", @dead));

$node->stop;
done_testing();
