# test/t/021_page_damage_fuzz.pl: seeded random damage to every page type
# of both access methods, in the spirit of amcheck's corruption tests.
#
# Setup: K tables of 3000 points with an archer_geo index and K tables of
# 1200 8-dimensional vectors (and an integer filter column) with an
# archer_vector index, both WITH (insert_buffer = on), each with buffered
# entries waiting and a free list of buffer pages (rows were buffered,
# merged, and buffered again), so that every page type exists: meta,
# internal, leaf, buffer and free buffer pages (geo); meta, quantizer,
# node, buffer and free buffer pages (vector), and in every other vector
# table pages of rows whose vector is NULL (the index was built empty and
# took them before its first vector; the other tables hold such rows as
# nodes).  With the server stopped, a copy of the database directory is
# kept.
#
# Each batch restores that copy, damages one page of each index (a page
# type, then a page of that type, then a kind of damage: flipped bytes,
# bad counts, block numbers past the end / pointing back to the meta page
# or the page itself / invalid, wrong page ids, flags, versions and levels,
# impossible meta values, non-finite, empty or shifted quantizer ranges, bad line
# pointers and node headers), starts the server with the postmaster's
# address space limited (prlimit, inherited by every backend), and runs on
# each index, every statement under statement_timeout = 5s: both verify
# functions' own, queries of every kind (radius, polygon, kNN, index-only,
# whole sphere; vector kNN with and without a filter, and a filter only
# rows with a NULL vector meet, which a scan returns last), an insert, a
# delete + VACUUM, a merge (archer_flush), and the queries again.
#
# Every outcome must be one of:
#   - a correct answer: geo scans return what a sequential scan returns;
#     vector scans (approximate) return LIMIT distinct rows in exact
#     distance order that satisfy the filter;
#   - ERRCODE_INDEX_CORRUPTED naming the index, or the buffer manager's
#     read error for a link past the end of the index (XX001 "could not
#     read block(s)", 58P01 "could not open file"), or PostgreSQL's own page
#     header check (XX001 "invalid page");
#   - a geo answer that differs from the sequential scan where the damage
#     leaves every page plausible (a changed key, heap TID or point code;
#     a right link moved on to a later leaf, which a scan cannot tell
#     without reading the parents), and archer_geo_verify, run first on
#     the damaged index, reports the index corrupted;
#   - likewise a vector scan that the executor stops with "index returned
#     tuples in wrong order" (a node's code or recorded error changed to
#     other plausible values: its lower bound is no bound), where
#     archer_vector_verify, which compares every node with its row, ran
#     first and reported the index corrupted.
# Never a crash (server restart), a hang (psql waits 60 s while
# statement_timeout is 5 s), a statement_timeout cancel, an out-of-memory
# error (memory past the bound), or any other error.
#
# CI runs a few batches; --long (ARCHER_LONG_TESTS=1) runs 200 batches,
# thousands of cases.  ARCHER_FUZZ_SEED and ARCHER_FUZZ_BATCHES override;
# ARCHER_FUZZ_ONLY (a list of batch numbers) reruns some batches of a run.
#
# The first batch also runs fixed cases for the damage of issue #22 item 4
# (links to the meta page or to a page held, a right link to itself,
# impossible meta values, a NaN in the quantizer; with PostGIS, at the
# end, a key of no face in a geography leaf) and for what the fuzzer found
# (a buffer page count of 0, a geo pd_upper lowered to pd_lower, a leaf's
# right link moved on past its sibling, which only verify can see, and a
# leaf's high key lowered below its keys, which made a search miss them,
# a vector buffer page's pd_upper raised past an entry, which a merge took
# again and again,
# the meta page's layout version byte changed alone, which was taken for
# an index of another release), each of which must raise
# ERRCODE_INDEX_CORRUPTED promptly.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use File::Copy;
use File::Path qw(rmtree);
use Time::HiRes qw(time);
use lib "$FindBin::RealBin/../perl";
use ArcherPageEdit;

my $LONG = $ENV{ARCHER_LONG_TESTS} ? 1 : 0;
my $SEED = $ENV{ARCHER_FUZZ_SEED} // 22004;
my $BATCHES = $ENV{ARCHER_FUZZ_BATCHES} // ($LONG ? 200 : 3);
# ARCHER_FUZZ_ONLY=20,38: run only these batches (the others' damage is
# still drawn, so each batch gets the cases it gets in a full run)
my %ONLY = map { $_ => 1 } grep { length } split /,/, ($ENV{ARCHER_FUZZ_ONLY} // '');
my $K = 8;              # indexes of each access method, one case each per batch
my $MEM_LIMIT = 1500 * 1024 * 1024;    # address space of every backend
srand($SEED);

my $node = PostgreSQL::Test::Cluster->new('pagefuzz');
# no data checksums (18's initdb turns them on; earlier ones ignore the
# option): archer's own checks must find the damage
$node->init(no_data_checksums => 1);
$node->append_conf(
	'postgresql.conf', qq{
autovacuum = off
restart_after_crash = on
archer.insert_buffer_max_entries = 1000000
shared_buffers = 16MB
log_min_messages = warning
log_min_error_statement = panic
});
$node->start;
my $FZ_RUN = q{
CREATE FUNCTION fz_run(query text, use_index boolean) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
	result text;
	state text;
	message text;
BEGIN
	PERFORM set_config('enable_seqscan', (NOT use_index)::text, true);
	PERFORM set_config('enable_indexscan', use_index::text, true);
	PERFORM set_config('enable_indexonlyscan', use_index::text, true);
	PERFORM set_config('enable_bitmapscan', 'off', true);
	IF query ~* '^\s*SELECT'
	THEN
		EXECUTE format('SELECT string_agg(t::text, %L) FROM (%s) t', ';', query) INTO result;
	ELSE
		EXECUTE query;
	END IF;
	RETURN 'ROWS ' || coalesce(result, '');
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT;
	RETURN 'ERROR ' || state || ' ' || message;
END
$f$;
};
$node->safe_psql('postgres', 'CREATE EXTENSION archer');
$node->safe_psql('postgres', $FZ_RUN);

for my $i (1 .. $K)
{
	# 60 rows with a NULL vector (cat 9): after the build (nodes on node
	# pages) in odd tables, before the first vector of an index built empty
	# (pages of their own) in even ones
	my $vectors = qq{INSERT INTO v_$i SELECT g, g % 5, ARRAY(SELECT (g % 4) * 0.5 + random() + 0 * d FROM generate_series(1, 8) d)::avector
  FROM generate_series(1, 1200) g;};
	my $nulls = qq{INSERT INTO v_$i SELECT g, 9, NULL FROM generate_series(3001, 3060) g;};
	my $build = qq{CREATE INDEX v_${i}_idx ON v_$i USING archer_vector (e, cat) WITH (insert_buffer = on, m = 8);};
	my $vector_start = $i % 2 ? "$vectors\n$build\n$nulls" : "$build\n$nulls\n$vectors";
	$node->safe_psql(
		'postgres', qq{
SET archer.insert_buffer_max_entries = 1000000;
SELECT setseed(0.22);
CREATE TABLE g_$i (id int, p point);
INSERT INTO g_$i SELECT g, point(random() * 360 - 180, degrees(asin(random() * 2 - 1)))
  FROM generate_series(1, 3000) g;
CREATE INDEX g_${i}_idx ON g_$i USING archer_geo (p) WITH (insert_buffer = on);
INSERT INTO g_$i SELECT g, point(random() * 360 - 180, degrees(asin(random() * 2 - 1)))
  FROM generate_series(3001, 3700) g;
SELECT archer_flush('g_${i}_idx');
INSERT INTO g_$i SELECT g, point(random() * 360 - 180, degrees(asin(random() * 2 - 1)))
  FROM generate_series(3701, 4050) g;
INSERT INTO g_$i VALUES (0, NULL);
CREATE TABLE v_$i (id int, cat int, e avector(8));
$vector_start
INSERT INTO v_$i SELECT g, g % 5, ARRAY(SELECT (g % 4) * 0.5 + random() + 0 * d FROM generate_series(1, 8) d)::avector
  FROM generate_series(1201, 1350) g;
SELECT archer_flush('v_${i}_idx');
INSERT INTO v_$i SELECT g, g % 5, ARRAY(SELECT (g % 4) * 0.5 + random() + 0 * d FROM generate_series(1, 8) d)::avector
  FROM generate_series(1351, 1450) g;
});
}
is($node->safe_psql('postgres', "SELECT archer_geo_verify('g_1_idx')"), '4051', 'geo index verifies before damage');
is($node->safe_psql('postgres', "SELECT archer_vector_verify('v_1_idx')"), '1510', 'vector index verifies before damage');
is($node->safe_psql('postgres', "SELECT archer_vector_verify('v_2_idx')"), '1510',
	'vector index with NULL vector rows before its dimension verifies before damage');

my $dbdir = $node->data_dir . '/base/'
  . $node->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = 'postgres'");
my %path;
for my $i (1 .. $K)
{
	for my $idx ("g_${i}_idx", "v_${i}_idx")
	{
		$path{$idx} = $node->data_dir . '/' . $node->safe_psql('postgres', "SELECT pg_relation_filepath('$idx')");
	}
}
$node->stop;
my $pristine = PostgreSQL::Test::Utils::tempdir() . '/pristine';
copy_dir($dbdir, $pristine);

sub copy_dir
{
	my ($from, $to) = @_;
	rmtree($to);
	mkdir($to) or die "mkdir $to: $!";
	opendir(my $dh, $from) or die "opendir $from: $!";
	for my $f (readdir($dh))
	{
		next if $f eq '.' || $f eq '..';
		copy("$from/$f", "$to/$f") or die "copy $from/$f: $!";
	}
	closedir($dh);
}

# ---------------------------------------------------------------------------
# page layout (src/common/storage.h, src/geo/geo.h, src/vector/vec.h)
# ---------------------------------------------------------------------------
my %FLAG = (meta => 0x01, leaf => 0x02, internal => 0x04, deleted => 0x08,
	nodes => 0x20, quantizer => 0x40, buffer => 0x80);
my $GEO_ID = 0xA7E0;
my $VEC_ID = 0xA7E1;

# the page type of a block: the first flag it has, in this order
sub page_type
{
	my ($page) = @_;
	my $flags = ord(substr($page, 8188, 1));
	for my $t (qw(meta buffer leaf internal nodes quantizer deleted))
	{
		return $t if $flags & $FLAG{$t};
	}
	return 'other';
}

sub set_block
{
	my ($page, $off, $blk) = @_;
	substr($page, $off, 4) = pack('vv', ($blk >> 16) & 0xffff, $blk & 0xffff);
	return $page;
}

sub pick { return $_[ int(rand(@_)) ]; }

# a block number a damaged link may hold
sub bad_block
{
	my ($self, $nblocks) = @_;
	return pick(0, $self, $nblocks + int(rand(3)), $nblocks + 100000, 0xFFFFFFFF, 0xFFFFFFFE,
		int(rand($nblocks)), int(rand($nblocks)));
}

my @SPECIALS = (unpack('f', pack('L', 0x7fc00000)), 9**9**9, -9**9**9, 3.4e38, -3.4e38, 1e-45, 0);

# Damage a page; returns it changed and a word for the report.
sub damage
{
	my ($page, $type, $blk, $nblocks, $am) = @_;
	my $lower = u16($page, 12);
	my @kinds = qw(flip flip_header flip_special count link page_id);
	push @kinds, qw(meta_value meta_value link) if $type eq 'meta';
	push @kinds, qw(quantizer quantizer) if $type eq 'quantizer';
	# a vector page with the leaf bit holds rows whose vector is NULL (vec.h)
	push @kinds, qw(tuple tuple lp link) if $type eq 'nodes' || ($am eq 'v' && ($type eq 'buffer' || $type eq 'leaf'));
	push @kinds, qw(entry_order entry_key) if $am eq 'g' && ($type eq 'leaf' || $type eq 'buffer');
	push @kinds, qw(child) if $type eq 'internal';
	my $kind = pick(@kinds);

	if ($kind eq 'flip')
	{
		for (1 .. 1 + int(rand(4)))
		{
			my $off = int(rand($BLCKSZ));
			substr($page, $off, 1) = chr(ord(substr($page, $off, 1)) ^ (1 << int(rand(8))));
		}
	}
	elsif ($kind eq 'flip_header')
	{
		my $off = int(rand(24));
		substr($page, $off, 1) = chr(ord(substr($page, $off, 1)) ^ (1 << int(rand(8))));
	}
	elsif ($kind eq 'flip_special')
	{
		my $off = 8160 + int(rand(32));
		substr($page, $off, 1) = chr(ord(substr($page, $off, 1)) ^ (1 << int(rand(8))));
	}
	elsif ($kind eq 'count')
	{
		my $which = pick('lower', 'upper', 'nsorted', 'nsorted');
		if ($which eq 'lower') { $page = set_u16($page, 12, pick(24, $lower - 24, $lower + 24, $lower + 1, 24 + int(rand(8136)))); }
		elsif ($which eq 'upper') { $page = set_u16($page, 14, pick($lower, 8160, 24 + int(rand(8136)))); }
		else { $page = set_u16($page, 8180, pick(0, int(rand(400)), 65535, ($lower - 24) / 24 + 1)); }
	}
	elsif ($kind eq 'link')
	{
		my @fields = (8176);    # right link
		push @fields, ($am eq 'g' ? (104, 40, 44, 48, 40, 44, 48) : (40, 44, 48, 120, 120)) if $type eq 'meta';
		my $off = pick(@fields);
		if ($type eq 'nodes' || ($am eq 'v' && ($type eq 'buffer' || $type eq 'leaf')))
		{
			my @t = map { [ $_->[1], $_->[2] ] } normal_items($page);
			if (@t)
			{
				# a neighbour slot: layer 0 or the filter list (24 slots);
				# past the page's end (a short node near it, such as a
				# NULL-vector row's entry), the first slot
				my $item = $t[ int(rand(@t)) ][0];
				my $slot = $item + 24 + 12 * int(rand(24));
				$slot = $item + 24 if $slot + 6 > $BLCKSZ;
				$page = set_block($page, $slot, bad_block($blk, $nblocks));
				$page = set_u16($page, $slot + 4, pick(1, 2, 0, 300, 65535)) if rand() < 0.5;
				$off = undef;
			}
		}
		if (defined $off && $type eq 'meta' && $am eq 'v' && rand() < 0.3)
		{
			$page = set_block($page, 112, bad_block($blk, $nblocks));    # entry point
			$page = set_u16($page, 116, pick(1, 0, 200, 65535)) if rand() < 0.5;
		}
		elsif (defined $off)
		{
			$page = set_u32($page, $off, bad_block($blk, $nblocks));
		}
	}
	elsif ($kind eq 'page_id')
	{
		my $which = pick('id', 'flags', 'version', 'level');
		if ($which eq 'id') { $page = set_u16($page, 8190, pick($am eq 'g' ? $VEC_ID : $GEO_ID, int(rand(65536)))); }
		elsif ($which eq 'flags') { substr($page, 8188, 1) = chr(pick(values %FLAG) | (rand() < 0.5 ? $FLAG{buffer} : 0)); }
		elsif ($which eq 'version') { substr($page, 8189, 1) = chr(int(rand(256))); }
		else { $page = set_u16($page, 8174, pick(1, 2, 200, 65535)); }
	}
	elsif ($kind eq 'meta_value')
	{
		if ($am eq 'g')
		{
			my $which = pick('root_level', 'entries', 'pages', 'serial', 'magic');
			if ($which eq 'root_level') { $page = set_u16($page, 108, pick(0, 2, 3, 200, 65535)); }
			elsif ($which eq 'entries') { $page = set_u32($page, 52, pick(0, 0xFFFFFFFF, int(rand(100000)))); }
			elsif ($which eq 'pages') { $page = set_u32($page, 56, pick(0, 0xFFFFFFFF, int(rand(100)))); }
			elsif ($which eq 'serial') { $page = set_u32($page, 64, int(rand(1 << 30))); }
			else { $page = set_u32($page, 24, int(rand(1 << 30))); }
		}
		else
		{
			my $which = pick('dim', 'm', 'ef', 'metric', 'entry_level', 'qpages', 'filter_m', 'entries', 'pages');
			if ($which eq 'dim') { $page = set_u16($page, 104, pick(0, 1, 7, 9, 4096, 16001, 65535)); }
			elsif ($which eq 'm') { $page = set_u16($page, 106, pick(0, 1, 4, 16, 100, 101, 200, 65535)); }
			elsif ($which eq 'ef') { $page = set_u16($page, 108, pick(0, 1, 2000, 65535)); }
			elsif ($which eq 'metric') { substr($page, 110, 1) = chr(pick(0, 2, 3, 4, 255)); }
			elsif ($which eq 'entry_level') { substr($page, 111, 1) = chr(pick(1, 5, 15, 16, 200, 255)); }
			elsif ($which eq 'qpages') { $page = set_u16($page, 118, pick(0, 2, 5, 65535)); }
			elsif ($which eq 'filter_m') { $page = set_u16($page, 144, pick(0, 4, 9, 16, 17, 65535)); }
			elsif ($which eq 'entries') { $page = set_u32($page, 52, pick(0, 0xFFFFFFFF, int(rand(100000)))); }
			else { $page = set_u32($page, 56, pick(0, 0xFFFFFFFF, int(rand(100)))); }
		}
	}
	elsif ($kind eq 'quantizer')
	{
		my $n = ($lower - 24) / 4;
		my $i = int(rand($n));
		if (rand() < 0.5) { substr($page, 24 + 4 * $i, 4) = pack('f', pick(@SPECIALS)); }
		elsif (rand() < 0.6)
		{
			# another plausible value: only the meta page's checksum tells
			my $v = unpack('f', substr($page, 24 + 4 * $i, 4));
			substr($page, 24 + 4 * $i, 4) = pack('f', $v + pick(-0.5, -0.01, 0.01, 0.5));
		}
		else
		{
			# an empty range: min above max
			my $d = $i % ($n / 2);
			substr($page, 24 + 4 * $d, 4) = pack('f', 1e6);
		}
	}
	elsif ($kind eq 'tuple')
	{
		my @t = map { [ $_->[1], $_->[2] ] } normal_items($page);
		if (@t)
		{
			my $off = $t[ int(rand(@t)) ][0];
			my $which = pick('level', 'flags', 'error', 'norm');
			if ($which eq 'level') { substr($page, $off + 6, 1) = chr(pick(1, 2, 15, 16, 200, 255)); }
			elsif ($which eq 'flags') { substr($page, $off + 7, 1) = chr(int(rand(256))); }
			elsif ($which eq 'error') { substr($page, $off + 8, 4) = pack('f', pick(@SPECIALS, 0, 0.001)); }
			else { substr($page, $off + 12, 4) = pack('f', pick(@SPECIALS)); }
		}
	}
	elsif ($kind eq 'lp')
	{
		my $n = ($lower - 24) / 4;
		my $i = int(rand($n));
		my $lp = u32($page, 24 + 4 * $i);
		my ($off, $flags, $len) = ($lp & 0x7fff, ($lp >> 15) & 3, $lp >> 17);
		my $which = pick('off', 'len', 'flags');
		if ($which eq 'off') { $off = pick(0, 8190, 8100, 24, int(rand(32768))); }
		elsif ($which eq 'len') { $len = pick(0, 1, $len - 4, $len + 4, 8000, 32767); }
		else { $flags = int(rand(4)); }
		$page = set_u32($page, 24 + 4 * $i, $off | ($flags << 15) | ($len << 17));
	}
	elsif ($kind eq 'entry_order')
	{
		# two entries swapped, or one moved far from its place
		my $n = ($lower - 24) / 24;
		if ($n >= 2)
		{
			my ($a, $b) = (int(rand($n)), int(rand($n)));
			my ($ea, $eb) = (substr($page, 24 + 24 * $a, 24), substr($page, 24 + 24 * $b, 24));
			substr($page, 24 + 24 * $a, 24) = $eb;
			substr($page, 24 + 24 * $b, 24) = $ea;
		}
	}
	elsif ($kind eq 'entry_key')
	{
		# a cell id of no face (faces 6 and 7), 0, or the NULL key
		my $n = ($lower - 24) / 24;
		my $i = int(rand(($n || 1)));
		substr($page, 24 + 24 * $i, 8) =
		  pick("\0" x 8, "\xFF" x 8, "\x01\0\0\0\0\0\0\xD0", "\x01\0\0\0\0\0\0\xF0",
			"\0\0\0\0\0\0\0\xC0");
	}
	elsif ($kind eq 'child')
	{
		my $n = ($lower - 24) / 24;
		$page = set_u32($page, 24 + 24 * int(rand(($n || 1))) + 16, bad_block($blk, $nblocks));
	}
	return ($page, $kind);
}

# ---------------------------------------------------------------------------
# running statements and judging outcomes
#
# A case runs in three psql sessions (before VACUUM, VACUUM, after), not
# one per statement: each statement goes through fz_run(), which returns
# its rows or its error as one line, so that a session goes on after an
# error.  A statement_timeout cancel is not caught there (plpgsql's OTHERS
# leaves out query_canceled): its line is missing and psql reports 57014.
# ---------------------------------------------------------------------------
my $SESSION = "SET archer.ef_search = 100; SET statement_timeout = '5s';";
my %count = (cases => 0, statements => 0, answers => 0, corrupted => 0, bufmgr => 0, pg_header => 0,
	verify_found => 0, crash => 0, hang => 0, timeout => 0, oom => 0, wrong => 0, other => 0);
my @failures;
my $logpos = 0;
my $hung = 0;    # a backend of this batch did not return: stop the server immediately

# (status, stdout, stderr, seconds); status: ok, error, hang, crash
sub run
{
	my ($sql) = @_;
	my ($out, $err, $timed_out) = ('', '', 0);
	my $t0 = time();
	my $ret = $node->psql(
		'postgres', $sql,
		stdout => \$out, stderr => \$err,
		on_error_stop => 0, timeout => 60, timed_out => \$timed_out,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	my $secs = time() - $t0;
	$hung = 1 if $timed_out;
	return ('hang', $out, $err, $secs) if $timed_out;
	return ('crash', $out, $err, $secs)
	  if $err =~ /server closed the connection|terminated abnormally|connection to server was lost|could not connect/;
	return ('ok', $out, $err, $secs) if $ret == 0 && $err !~ /ERROR:/;
	return ('error', $out, $err, $secs);
}

# classify an error (SQLSTATE and message): corrupted, bufmgr, pg_header, timeout, oom or other
sub error_kind
{
	my ($state, $message, $index) = @_;
	return 'corrupted' if $state eq 'XX002' && $message =~ /^index "\Q$index\E" /;
	# (17 on reads in ranges: "could not read blocks N..M in file"); a link
	# into a segment past the last one: md.c's "previous segment is only N
	# blocks", with errno 0 (XX000)
	return 'bufmgr' if ($state eq 'XX001' && $message =~ /^could not read blocks? \d+(?:\.\.\d+)? in file/)
	  || ($state eq '58P01' && $message =~ /^could not open file "[^"]*" \(target block \d+\)/)
	  || ($state eq 'XX000'
		&& $message =~ /^could not open file "[^"]*" \(target block \d+\): previous segment is only \d+ blocks$/);
	return 'pg_header' if $state eq 'XX001' && $message =~ /^invalid page in block \d+ of relation/;
	return 'timeout' if $state eq '57014';
	return 'oom' if $state eq '53200';
	return 'other';
}

sub failure
{
	my ($what, $case, $detail) = @_;
	$count{$what}++;
	push @failures, "$what: $case->{label}: $detail";
}

sub wait_alive
{
	for (1 .. 120)
	{
		my ($ret, $out) = $node->psql('postgres', 'SELECT 1', timeout => 10);
		return if defined $out && $out eq '1';
		sleep(1);
	}
	die 'server did not come back';
}

# Run the steps of a session: [ name, sql, use_index ] each, or [ name,
# sql ] for a plain statement (VACUUM); returns { name => result line }
# and judges the session (hang, crash, a cancel by statement_timeout).
sub session
{
	my ($case, @steps) = @_;
	my $sql = $SESSION;
	for my $s (@steps)
	{
		my ($name, $q, $use_index) = @$s;
		$count{statements}++;
		if (defined $use_index)
		{
			(my $lit = $q) =~ s/'/''/g;
			$sql .= "\nSELECT '$name|' || fz_run('$lit', $use_index);";
		}
		else
		{
			$sql .= "\n$q;";
		}
	}
	my ($status, $out, $err) = run($sql);
	my %result;
	for my $line (split /\n/, $out)
	{
		$result{$1} = $2 if $line =~ /^([^|]+)\|(.*)$/;
	}
	if ($status eq 'hang') { failure('hang', $case, "a session did not return in 60 s"); return \%result; }
	if ($status eq 'crash') { failure('crash', $case, (split /\n/, $err)[0]); wait_alive(); return \%result; }
	# errors outside fz_run: plain statements, statement_timeout cancels
	while ($err =~ /ERROR:  (\w{5}): (.*)$/mg)
	{
		my $kind = error_kind($1, $2, $case->{index});
		if ($kind eq 'corrupted' || $kind eq 'bufmgr' || $kind eq 'pg_header') { $count{$kind}++; }
		else { failure($kind, $case, "$1 $2"); }
	}
	return \%result;
}

# judge one fz_run result; returns the rows of an answer, or undef
sub outcome
{
	my ($case, $name, $line) = @_;
	return undef unless defined $line;    # judged by session()
	if ($line =~ /^ERROR (\w{5}) (.*)$/)
	{
		# a node's code or error changed to other plausible values makes
		# its lower bound no bound; the executor then reports the order
		# broken: a wrong answer caught, which verify must have seen
		if ($case->{am} eq 'v' && $1 eq 'XX000' && $2 eq 'index returned tuples in wrong order')
		{
			wrong($case, $name, 'the executor found rows out of order');
			return undef;
		}
		my $kind = error_kind($1, $2, $case->{index});
		if ($kind eq 'corrupted' || $kind eq 'bufmgr' || $kind eq 'pg_header') { $count{$kind}++; }
		else { failure($kind, $case, "$name: $1 $2"); }
		return undef;
	}
	$count{answers}++;
	$line =~ s/^ROWS //;
	return $line;
}

sub wrong
{
	my ($case, $name, $why) = @_;
	if ($case->{verify_found}) { $count{verify_found}++; }
	else { failure('wrong', $case, "$name: $why"); }
}

my $GEO_VERIFY = "SELECT archer_geo_verify('IDX')";
my @GEO_QUERIES = (
	[ radius => "SELECT id FROM TBL WHERE p <@ archer_cap(point(10, 20), 3000000) ORDER BY id" ],
	[ polygon => "SELECT id FROM TBL WHERE p <@@ polygon '((-60,-30),(40,-35),(70,50),(-50,60))' ORDER BY id" ],
	[ knn => "SELECT id FROM TBL ORDER BY p <-> point(-100, 45) LIMIT 10" ],
	[ index_only => "SELECT p FROM TBL WHERE p <@ archer_cap(point(-40, -10), 2500000) ORDER BY p[0], p[1]" ],
	[ whole => "SELECT count(*) FROM TBL WHERE archer_dwithin(p, point(0, 0), 20100000)" ],
);
my @GEO_CHANGES = (
	[ insert => "INSERT INTO TBL SELECT g, point(g % 360 - 180, (g * 7) % 170 - 85) FROM generate_series(5001, 5040) g" ],
	[ delete => "DELETE FROM TBL WHERE id % 13 = 0" ],
);
my $VQ = "'[0.7,0.2,1.1,0.5,0.9,0.3,1.4,0.8]'::avector";
my $VEC_VERIFY = "SELECT archer_vector_verify('IDX')";
my @VEC_QUERIES = (
	[ knn => "SELECT id, cat, e <-> $VQ FROM TBL ORDER BY e <-> $VQ LIMIT 10", 10, undef ],
	[ filtered => "SELECT id, cat, e <-> $VQ FROM TBL WHERE cat = 3 ORDER BY e <-> $VQ LIMIT 5", 5, 3 ],
	[ nearest => "SELECT id, cat, e <-> $VQ FROM TBL ORDER BY e <-> $VQ LIMIT 1", 1, undef ],
	# only rows with a NULL vector have cat 9: the scan returns them last
	[ nulls => "SELECT id, cat, e <-> $VQ FROM TBL WHERE cat = 9 ORDER BY e <-> $VQ LIMIT 3", 3, 9 ],
);
my @VEC_CHANGES = (
	[ insert => "INSERT INTO TBL SELECT g, g % 5, ARRAY(SELECT (g % 4) * 0.5 + ((g * d) % 10) / 10.0 FROM generate_series(1, 8) d)::avector FROM generate_series(2001, 2030) g" ],
	[ delete => "DELETE FROM TBL WHERE id % 13 = 0" ],
);

sub subst
{
	my ($case, $sql) = @_;
	$sql =~ s/TBL/$case->{table}/g;
	$sql =~ s/IDX/$case->{index}/g;
	return $sql;
}

# the statements of a case, in three sessions; then the judgement
sub run_case
{
	my ($case) = @_;
	my $geo = $case->{am} eq 'g';
	my ($verify, $queries, $changes) = $geo ? ($GEO_VERIFY, \@GEO_QUERIES, \@GEO_CHANGES)
	  : ($VEC_VERIFY, \@VEC_QUERIES, \@VEC_CHANGES);
	my $query_steps = sub {
		my ($round) = @_;
		my @s;
		for my $q (@$queries)
		{
			push @s, [ "$q->[0] $round", subst($case, $q->[1]), 'true' ];
			push @s, [ "$q->[0] $round seq", subst($case, $q->[1]), 'false' ] if $geo;
		}
		return @s;
	};
	my $r1 = session($case, [ 'verify', subst($case, $verify), 'true' ], $query_steps->('before'),
		map { [ $_->[0], subst($case, $_->[1]), 'true' ] } @$changes);
	session($case, [ 'vacuum', subst($case, 'VACUUM TBL') ]);
	my $r2 = session($case, [ 'flush', subst($case, "SELECT archer_flush('IDX')"), 'true' ], $query_steps->('after'),
		[ 'verify after', subst($case, $verify), 'true' ]);
	my %r = (%$r1, %$r2);

	$case->{verify_found} = defined $r{verify} && $r{verify} =~ /^ERROR XX002 /;
	outcome($case, $_, $r{$_}) for ('verify', 'verify after', 'flush', map { $_->[0] } @$changes);
	for my $round ('before', 'after')
	{
		for my $q (@$queries)
		{
			my $name = "$q->[0] $round";
			my $rows = outcome($case, $name, $r{$name});
			next unless defined $rows;
			if ($geo)
			{
				my $exact = $r{"$name seq"};
				$exact =~ s/^ROWS // if defined $exact;
				wrong($case, $name, 'differs from a sequential scan')
				  if !defined $exact || $rows ne $exact;
				next;
			}
			my ($k, $cat) = @$q[ 2, 3 ];
			# a NULL distance is an empty field, after every distance
			my @rows = map { [ split /,/, substr($_, 1, -1), -1 ] } grep { length } split /;/, $rows;
			my %seen;
			my $why = @rows == $k ? undef : 'returned ' . scalar(@rows) . " rows, not $k";
			for my $i (0 .. $#rows)
			{
				$why //= "row $rows[$i][0] twice" if $seen{ $rows[$i][0] }++;
				$why //= "row $rows[$i][0] fails the filter" if defined $cat && $rows[$i][1] != $cat;
				$why //= 'rows out of distance order'
				  if $i > 0 && length($rows[$i][2])
				  && (!length($rows[ $i - 1 ][2]) || $rows[$i][2] < $rows[ $i - 1 ][2]);
			}
			wrong($case, $name, $why) if defined $why;
		}
	}
}

# ---------------------------------------------------------------------------
# the fixed cases of issue #22 item 4: each must raise
# ERRCODE_INDEX_CORRUPTED promptly, where it used to hang or crash
# ---------------------------------------------------------------------------
my @fixed = (
	# a meta page whose buffer tail points at the meta page: an append
	# locked the meta page twice
	[ 'geo tail -> meta', 'g', 0, sub { set_u32($_[0], 44, 0) },
	  'INSERT INTO TABLE VALUES (-1, point(1, 1))' ],
	# no tail, a free list at the meta page
	[ 'geo free -> meta', 'g', 0, sub { set_u32(set_u32($_[0], 44, 0xFFFFFFFF), 48, 0) },
	  'INSERT INTO TABLE VALUES (-1, point(1, 1))' ],
	[ 'vector tail -> meta', 'v', 0, sub { set_u32($_[0], 44, 0) },
	  "INSERT INTO TABLE VALUES (-1, 1, '[1,1,1,1,1,1,1,1]')" ],
	# the insert page at the meta page: a merge locked it twice
	[ 'vector insert page -> meta', 'v', 0, sub { set_u32($_[0], 120, 0) },
	  "SELECT archer_flush('INDEX')" ],
	# m = 200: arrays of 200 links would receive 400
	[ 'vector m = 200', 'v', 0, sub { set_u16($_[0], 106, 200) },
	  "SELECT id FROM TABLE ORDER BY e <-> '[1,1,1,1,1,1,1,1]' LIMIT 3" ],
	[ 'vector entry level 200', 'v', 0, sub { substr($_[0], 111, 1) = chr(200); $_[0] },
	  "SELECT id FROM TABLE ORDER BY e <-> '[1,1,1,1,1,1,1,1]' LIMIT 3" ],
	[ 'vector NaN quantizer', 'v', 1, sub { substr($_[0], 24, 4) = pack('f', unpack('f', pack('L', 0x7fc00000))); $_[0] },
	  "SELECT id FROM TABLE ORDER BY e <-> '[1,1,1,1,1,1,1,1]' LIMIT 3" ],
	# a buffer page count of 0 with pages in the buffer: the merge of
	# VACUUM stopped at once, leaving entries of the dead rows behind
	[ 'geo buffer page count 0', 'g', 0, sub { set_u32($_[0], 56, 0) }, 'VACUUM TABLE' ],
	[ 'vector buffer page count 0', 'v', 0, sub { set_u32($_[0], 56, 0) }, 'VACUUM TABLE' ],
	# pd_upper of a buffer page raised past its first entry: generic WAL
	# zeroed the entries below pd_upper of the page it logged, so the merged
	# flag of an entry there was lost and the merge took it again, for ever
	# (seed 22004, batch 20)
	[ 'vector buffer entry below pd_upper', 'v', 'buffer', sub { set_u16($_[0], 14, (u32($_[0], 24) & 0x7fff) + 8) },
	  "SELECT archer_flush('INDEX')" ],
	# pd_upper lowered to pd_lower on a leaf a merge adds to: generic WAL
	# zeroed the hole [pd_lower, pd_upper) with a negative length
	[ 'geo leaf pd_upper at pd_lower', 'g', 'leaf', sub { set_u16($_[0], 14, u16($_[0], 12)) },
	  "SELECT archer_flush('INDEX')" ],
	# a leaf's right link to itself, below a high key an insert passes:
	# the insert moved right onto the leaf it held exclusively
	[ 'geo right link -> itself', 'g', 'leaf', sub {
		my ($p, $blk) = @_;
		$p = set_u32($p, 8176, $blk);
		substr($p, 8160, 8) = substr($p, 24, 8);    # high key = the first key
		$p },
	  "SELECT archer_flush('INDEX')" ],
	# a leaf's right link moved on to the leaf after its right sibling,
	# high key kept: every page stays plausible (keys, high keys, levels
	# in order) and a scan along the leaves skips the sibling; verify
	# compares the right links with the parents' downlinks
	[ 'geo right link skips a leaf', 'g', 'leaf', sub {
		my ($p, $blk, $file) = @_;
		my $after = u32(read_block($file, u32($p, 8176)), 8176);
		set_u32($p, 8176, $after) },
	  "SELECT archer_geo_verify('INDEX')" ],
	# a leaf's high key lowered to the middle of its keys: the search for
	# its last key moved right past it and found nothing
	[ 'geo leaf high key below its keys', 'g', 'leaf', sub {
		my ($p) = @_;
		my $mid = int(u16($p, 8180) / 2);
		substr($p, 8160, 14) = substr($p, 24 + 24 * $mid, 14);
		$p },
	  "SELECT count(*) FROM TABLE WHERE p <@ archer_cap((SELECT p FROM TABLE WHERE ctid = 'TID'), 1)",
	  'SET enable_seqscan = off;' ],
	# the layout version byte of the meta page's special space changed
	# alone: taken for an index of another release (55000, "cannot read")
	[ 'geo meta page layout version byte', 'g', 0, sub { substr($_[0], 8189, 1) = chr(61); $_[0] },
	  'SELECT count(*) FROM TABLE WHERE p <@ archer_cap(point(1, 1), 100000)',
	  'SET enable_seqscan = off;' ],
);

# ---------------------------------------------------------------------------
# the batches
# ---------------------------------------------------------------------------
my $prlimit = `which prlimit 2>/dev/null`;
chomp $prlimit;
for my $batch (0 .. $BATCHES - 1)
{
	copy_dir($pristine, $dbdir);
	my @cases;
	for my $i (1 .. $K)
	{
		for my $am ('g', 'v')
		{
			my $index = "${am}_${i}_idx";
			my $file = $path{$index};
			my $nblocks = (-s $file) / $BLCKSZ;
			my %bytype;
			for my $b (0 .. $nblocks - 1)
			{
				push @{ $bytype{ page_type(read_block($file, $b)) } }, $b;
			}
			my $case = { table => "${am}_$i", index => $index, am => $am, errors => 0 };
			my $fixed = ($batch == 0) ? (grep { $_->[1] eq $am } @fixed)[ $i - 1 ] : undef;
			if ($fixed)
			{
				my ($label, undef, $where, $edit, $sql, $pre) = @$fixed;
				my $blk = $where eq 'leaf' ? $bytype{leaf}[1] : $where eq 'buffer' ? $bytype{buffer}[0] : $where;
				write_block($file, $blk, $edit->(read_block($file, $blk), $blk, $file));
				my $leaf = read_block($file, $blk);
				my ($bhi, $blo, $off) = unpack('vvv', substr($leaf, 24 + 24 * (u16($leaf, 8180) - 1) + 8, 6));
				my $tid = '(' . ($bhi * 65536 + $blo) . ",$off)";
				$sql =~ s/TID/$tid/g;
				$sql =~ s/TABLE/$case->{table}/g;
				$sql =~ s/INDEX/$index/g;
				@$case{qw(label fixed pre)} = ($label, $sql, $pre // '');
			}
			else
			{
				my @types = sort keys %bytype;
				my $type = pick(@types);
				my $blk = pick(@{ $bytype{$type} });
				my ($page, $kind) = damage(read_block($file, $blk), $type, $blk, $nblocks, $am);
				write_block($file, $blk, $page);
				$case->{label} = "batch $batch $index $type block $blk $kind";
				$case->{type} = "$am $type";
			}
			push @cases, $case;
		}
	}
	next if %ONLY && !$ONLY{$batch};
	$node->start;
	if ($prlimit)
	{
		my $pid = (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
		system($prlimit, "--pid=$pid", "--as=$MEM_LIMIT") == 0 or die "prlimit failed";
	}
	for my $case (@cases)
	{
		if ($case->{fixed})
		{
			my ($status, $out, $err, $secs) = run("$case->{pre} SET statement_timeout = '5s'; $case->{fixed}");
			is($status, 'error', "$case->{label}: fails") or diag("$status: $out $err");
			like($err, qr/ERROR:  XX002: index "$case->{index}" contains a corrupted page at block \d+/,
				"$case->{label}: ERRCODE_INDEX_CORRUPTED naming the index and block");
			cmp_ok($secs, '<', 5, "$case->{label}: promptly");
			wait_alive() if $status eq 'crash';
			next;
		}
		$count{cases}++;
		$count{ 'type ' . $case->{type} }++;
		run_case($case);
	}
	if ($hung)
	{
		# a backend deaf to cancel keeps a fast shutdown waiting
		$node->stop('immediate');
		$node->start;
		$hung = 0;
	}
	$node->stop('fast');
	my $log = slurp_file($node->logfile);
	my @bad = grep { /PANIC|TRAP:|terminated by signal|server process .* exited with exit code [^01]/ }
	  split /\n/, substr($log, $logpos);
	$logpos = length($log);
	if (@bad)
	{
		$count{crash}++;
		push @failures, "crash in batch $batch: $bad[0]";
	}
}

# A key of no face before the last key of a leaf's sorted prefix of a
# geography index, reached by a geodesic polygon scan around the last
# key's point: the binary searches for the range need not look at the
# damaged key, which used to reach the region's planes[face] (a read past
# the array).
SKIP:
{
	$node->start;
	skip 'PostGIS is not installed', 3
	  unless $node->safe_psql('postgres', "SELECT count(*) FROM pg_available_extensions WHERE name = 'postgis'") eq '1';
	$node->safe_psql(
		'postgres', q{
CREATE EXTENSION archer_postgis CASCADE;
SELECT setseed(0.5);
CREATE TABLE gg AS SELECT g AS id, ST_SetSRID(ST_MakePoint(random() * 360 - 180, degrees(asin(random() * 2 - 1))), 4326)::geography AS geog
  FROM generate_series(1, 3000) g;
CREATE INDEX gg_idx ON gg USING archer_geo (geog);
});
	my $file = $node->data_dir . '/' . $node->safe_psql('postgres', "SELECT pg_relation_filepath('gg_idx')");
	$node->stop;
	my $leaf = read_block($file, 2);
	my $nsorted = u16($leaf, 8180);
	my ($bhi, $blo, $off) = unpack('vvv', substr($leaf, 24 + 24 * ($nsorted - 1) + 8, 6));
	substr($leaf, 24 + 24 * ($nsorted - 2), 8) = "\x01\0\0\0\0\0\0\xF0";
	write_block($file, 2, $leaf);
	$node->start;
	my $tid = '(' . ($bhi * 65536 + $blo) . ",$off)";
	my ($status, $out, $err, $secs) = run("SET enable_seqscan = off; SET statement_timeout = '5s'; "
		  . "SELECT count(*) FROM gg WHERE geog <@@ (SELECT ST_Buffer(geog, 500000) FROM gg WHERE ctid = '$tid')");
	is($status, 'error', 'geography key of no face: fails') or diag("$status: $out $err");
	like($err, qr/ERROR:  XX002: index "gg_idx" contains a corrupted page at block 2\b/,
		'geography key of no face: ERRCODE_INDEX_CORRUPTED naming the index and block');
	my @bad = grep { /PANIC|TRAP:|terminated by signal|server process .* exited with exit code [^01]/ }
	  split /\n/, substr(slurp_file($node->logfile), $logpos);
	is(scalar(@bad), 0, 'geography key of no face: no crash') or diag(join("\n", @bad));
	$node->stop('immediate');
}

note(sprintf("seed %d, %d batches: %s", $SEED, $BATCHES,
	join(', ', map { "$_ $count{$_}" } sort keys %count)));
diag($_) for @failures[ 0 .. ($#failures < 200 ? $#failures : 199) ];
my $batches_run = %ONLY ? scalar(grep { $_ < $BATCHES } keys %ONLY) : $BATCHES;
my $fixed_run = (!%ONLY || $ONLY{0}) ? scalar(@fixed) : 0;
cmp_ok($count{cases}, '>=', $batches_run * 2 * $K - $fixed_run, 'every case ran');
is($count{crash}, 0, 'no crash');
is($count{hang}, 0, 'no hang: every statement returned within the timeout');
is($count{timeout}, 0, 'no statement ran into statement_timeout');
is($count{oom}, 0, 'no backend ran out of its memory bound');
is($count{wrong}, 0, 'no wrong answer');
is($count{other}, 0, 'no error other than index corruption or the buffer manager\'s');
cmp_ok($count{corrupted}, '>', 0, 'the damage was found: ERRCODE_INDEX_CORRUPTED raised');
done_testing();
