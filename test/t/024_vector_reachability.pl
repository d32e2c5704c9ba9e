# test/t/024_vector_reachability.pl: a live archer_vector node that no
# search reaches is found by archer_vector_verify and relinked by VACUUM.
#
# An insert writes its node first and its back links after (vec_insert.c);
# a crash or ERROR in between leaves a live node nothing links to, whose
# row no ordered scan returns.  The test makes that state on disk: with the
# server stopped, every link to one node (one that is not the entry point)
# is cleared, as if the insert that wrote it had stopped before its back
# links.  Then:
#   - a scan for exactly that node's vector does not return its row (the
#     damage is real: no search reaches the node);
#   - archer_vector_verify raises XX002 naming the index, the count and the
#     node's block and offset, with a hint to VACUUM;
#   - VACUUM (nothing to delete: only its cleanup runs) relinks it: verify
#     passes, the scan returns the row, the log says what VACUUM did;
#   - the relink is WAL-logged: after an immediate stop and crash recovery
#     the index still verifies and still finds the row;
#   - the same with a row deleted first, so VACUUM's bulk delete runs too,
#     and with a filter column (the relink also fills in filter lists);
#   - on a table so small that a scan's graph search reaches every other
#     node in its first round, a scan asked for every row still returns
#     them all, the unlinked node's nearest first: the scan reads the node
#     pages for what the graph did not reach before it hands out the
#     farthest rows it found (strict order would skip the unlinked row),
#     so even a LIMIT 1 scan finds the unlinked row.
#
# Page layout (src/common/storage.h, src/vector/vec.h): line pointers from byte 24 (15
# bits offset, 15 bits length from bit 17); special space in the last 32
# bytes with flags (8188; 0x20 node page) and page id (8190).  A node tuple:
# heap tid (6 bytes), level (6), flags (7; 0x01 deleted), error, norm, the
# 16-byte code, then its link slots of 12 bytes (block hi, block lo,
# offset, pad, distance) up to the filter values (8 bytes a filter column).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use ArcherPageEdit;

my $DIM = 16;
my $ROWS = 2000;

my $node = PostgreSQL::Test::Cluster->new('vreach');
# no data checksums (18's initdb turns them on; earlier ones ignore the
# option): the test rewrites index pages
$node->init(no_data_checksums => 1);
$node->append_conf('postgresql.conf', "autovacuum = off\nrestart_after_crash = off");
$node->start;
is($node->safe_psql('postgres', 'SHOW data_checksums'), 'off', 'data checksums are off');
$node->safe_psql('postgres', 'CREATE EXTENSION archer');

sub is_node_page
{
	my ($page) = @_;
	return u16($page, 8190) == 0xA7E1 && (ord(substr($page, 8188, 1)) & 0x20);
}

# Clear every link to one node of the index at $path and return its TID
# ([block, offset]) and heap TID: the last live node of the last node page
sub unlink_one_node
{
	my ($path, $nfilters) = @_;
	my $nblocks = (-s $path) / $BLCKSZ;
	my ($target, $heaptid);
	for (my $blk = $nblocks - 1; $blk > 0 && !$target; $blk--)
	{
		my $page = read_block($path, $blk);
		next unless is_node_page($page);
		my %items = map { $_->[0] => [ $_->[1], $_->[2] ] } normal_items($page);
		for my $n (sort { $b <=> $a } keys %items)
		{
			my ($off) = @{ $items{$n} };
			next if ord(substr($page, $off + 7, 1)) & 1;    # deleted
			$target = [ $blk, $n ];
			$heaptid = sprintf('(%d,%d)', (u16($page, $off) << 16) | u16($page, $off + 2),
				u16($page, $off + 4));
			last;
		}
	}
	die 'no live node found' unless $target;

	my $cleared = 0;
	for my $blk (1 .. $nblocks - 1)
	{
		my $page = read_block($path, $blk);
		next unless is_node_page($page);
		my %items = map { $_->[0] => [ $_->[1], $_->[2] ] } normal_items($page);
		my $changed = 0;
		for my $n (keys %items)
		{
			my ($off, $len) = @{ $items{$n} };
			for (my $slot = $off + 16 + $DIM; $slot + 12 <= $off + $len - 8 * $nfilters; $slot += 12)
			{
				my $blkno = (u16($page, $slot) << 16) | u16($page, $slot + 2);
				next unless $blkno == $target->[0] && u16($page, $slot + 4) == $target->[1];
				# an invalid item pointer: the empty slot of vec.h
				$page = set_u16($page, $slot, 0xffff);
				$page = set_u16($page, $slot + 2, 0xffff);
				$page = set_u16($page, $slot + 4, 0);
				$changed = 1;
				$cleared++;
			}
		}
		write_block($path, $blk, $page) if $changed;
	}
	return ($target, $heaptid, $cleared);
}

my $INDEX_ONLY = "SET enable_seqscan = off; SET enable_bitmapscan = off; SET statement_timeout = '30s';";

# name => [ filter columns, delete a row first, rows ]
my @cases = ([ plain => 0, 0, $ROWS ], [ filtered => 1, 0, $ROWS ], [ deleted => 0, 1, $ROWS ],
	[ small => 0, 0, 30 ]);
my %rows = map { $_->[0] => $_->[3] } @cases;

my %info;
for my $i (0 .. $#cases)
{
	my ($name, $nfilters, undef, $rows) = @{ $cases[$i] };
	my $cols = $nfilters ? '(v, grp)' : '(v)';
	$node->safe_psql(
		'postgres', qq{
SELECT setseed(0.$i);
CREATE TABLE r_$name (id int PRIMARY KEY, grp int, v avector($DIM));
INSERT INTO r_$name SELECT g, g % 5, ARRAY(SELECT random() + 0 * g FROM generate_series(1, $DIM))::avector
  FROM generate_series(1, $rows) g;
CREATE INDEX r_${name}_idx ON r_$name USING archer_vector $cols;
});
	is($node->safe_psql('postgres', "SELECT archer_vector_verify('r_${name}_idx')"), $rows,
		"$name: the index verifies before the damage");
	$info{$name} = $node->data_dir . '/'
	  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('r_${name}_idx')");
}
$node->stop;

my %target;
for my $case (@cases)
{
	my ($name, $nfilters) = @$case;
	my ($tid, $heaptid, $cleared) = unlink_one_node($info{$name}, $nfilters);
	ok($cleared > 0, "$name: cleared the $cleared links to node ($tid->[0],$tid->[1])");
	$target{$name} = { tid => $tid, heaptid => $heaptid };
}
$node->start;

# the id of the unlinked node's row and the query that looks for exactly it
sub nearest_query
{
	my ($name) = @_;
	my $t = $target{$name};
	$t->{id} //= $node->safe_psql('postgres', "SELECT id FROM r_$name WHERE ctid = '$t->{heaptid}'");
	my $filter = $name eq 'filtered' ? "WHERE grp = (SELECT grp FROM r_$name WHERE id = $t->{id})" : '';
	return "$INDEX_ONLY SELECT id FROM r_$name $filter ORDER BY v <-> (SELECT v FROM r_$name WHERE id = $t->{id}) LIMIT 1";
}

for my $case (@cases)
{
	my ($name, undef, $delete) = @$case;
	my $t = $target{$name};
	my ($blk, $off) = @{ $t->{tid} };
	my $idx = "r_${name}_idx";
	my $q = nearest_query($name);
	ok($t->{id} =~ /^\d+$/, "$name: the unlinked node holds row $t->{id}");

	if ($name ne 'small')
	{
		isnt($node->safe_psql('postgres', $q), $t->{id}, "$name: before the repair no scan finds row $t->{id}");
	}
	else
	{
		is($node->safe_psql('postgres', $q), $t->{id}, "small: before the repair the scan finds row $t->{id} all the same");
		my $all = $node->safe_psql('postgres', "$INDEX_ONLY SELECT string_agg(id::text, ',') FROM "
			  . "(SELECT id FROM r_small ORDER BY v <-> (SELECT v FROM r_small WHERE id = $t->{id}) LIMIT 1000) s");
		my @ids = split /,/, $all;
		is(scalar(@ids), $rows{small}, 'small: before the repair a scan asked for every row returns them all');
		is($ids[0], $t->{id}, "small: ... the unlinked row $t->{id} first, as it is the query's own vector");
	}

	my ($ret, $out, $err) = $node->psql('postgres', "SELECT archer_vector_verify('$idx')",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	isnt($ret, 0, "$name: archer_vector_verify fails");
	like($err,
		qr/ERROR:  XX002: index "$idx" has 1 live nodes that no search reaches, the first at block $blk offset $off\b/,
		"$name: verify names the index, the count and the unreachable node");
	like($err, qr/HINT:  VACUUM the table to relink them, or REINDEX the index\./, "$name: the hint says VACUUM");

	my $expect = $rows{$name};
	if ($delete)
	{
		$node->safe_psql('postgres', "DELETE FROM r_$name WHERE id = 1");
		$expect--;
	}
	my $log_offset = -s $node->logfile;
	$node->safe_psql('postgres', "VACUUM r_$name");
	ok($node->log_contains(qr/relinked 1 nodes of index "$idx" that no search reached/, $log_offset),
		"$name: VACUUM logs the relink");
	is($node->safe_psql('postgres', "SELECT archer_vector_verify('$idx')"), $expect, "$name: VACUUM repairs it");
	is($node->safe_psql('postgres', $q), $t->{id}, "$name: after VACUUM the scan finds row $t->{id}");

	$log_offset = -s $node->logfile;
	$node->safe_psql('postgres', "VACUUM r_$name");
	ok(!$node->log_contains(qr/relinked/, $log_offset), "$name: a second VACUUM has nothing to relink");
}

# the relinks were WAL-logged: crash recovery replays them.  VACUUM assigns
# no transaction id, so nothing flushes the WAL it wrote, and a crash can
# lose the last relink's records before the WAL writer writes them (the
# next VACUUM would redo the relink).  The commit of a transaction that
# wrote WAL flushes everything before it.
$node->safe_psql('postgres', 'CREATE TABLE wal_flushed ()');
$node->stop('immediate');
$node->start;
for my $case (@cases)
{
	my ($name, undef, $delete) = @$case;
	is($node->safe_psql('postgres', "SELECT archer_vector_verify('r_${name}_idx')"), $rows{$name} - $delete,
		"$name: after crash recovery the index verifies");
	is($node->safe_psql('postgres', nearest_query($name)), $target{$name}{id},
		"$name: after crash recovery the scan finds row $target{$name}{id}");
}

my @bad = grep { /PANIC|TRAP:|terminated by signal/ } split /\n/, slurp_file($node->logfile);
is(scalar(@bad), 0, 'server log: no PANIC or crash') or diag(join("\n", @bad));
$node->stop;
done_testing();
