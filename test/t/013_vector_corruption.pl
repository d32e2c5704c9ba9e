# test/t/013_vector_corruption.pl: a damaged archer_vector index gives a
# clean error, never a crash or a wrong answer, and REINDEX repairs it.
#
# One small table + index per kind of damage (600 vectors of 16
# dimensions, 2 filter columns: meta page, one quantizer page, node pages
# from block 2, the entry point first on block 2, laid out breadth first
# from it).  With the server stopped, bytes of one page of each index are
# overwritten on disk (data checksums off, so archer's own checks are what
# finds the damage).  Then:
#   - archer_vector_verify raises ERRCODE_INDEX_CORRUPTED (XX002)
#     'index "NAME" contains a corrupted page at block N' with a REINDEX
#     hint;
#   - ordered scans (plain and through a filter column) raise the same
#     error where they must read the damage, or answer like a sequential
#     scan; a link past the end of the index is left to the buffer
#     manager's read error;
#   - the server stays up (no crash in the log);
#   - REINDEX repairs the index: it verifies and answers like a sequential
#     scan again.
#
# Page layout (src/common/storage.h, src/vector/vec.h): header 24 bytes (pd_lower at 12,
# pd_special at 16), line pointers from 24; special space in the last 32
# bytes with flags (8188), version (8189) and page id (8190).  Meta page:
# magic at 24.  A node tuple: heap tid (6 bytes), level (6), flags (7),
# error, norm, then the 16-byte code, then 2m = 32 layer-0 link slots of
# 12 bytes (block hi, block lo, offset, pad, distance), then the filter
# list of the filter column (m = 16 slots), upper layers, then the filter
# values (int64).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use ArcherTest;
use ArcherPageEdit;

my $NODES = 2;    # the first node page; the entry point is its first node

my $node = PostgreSQL::Test::Cluster->new('vcorrupt');
# no data checksums (18's initdb turns them on; earlier ones ignore the
# option): the damage must reach archer's own checks
$node->init(no_data_checksums => 1);
$node->append_conf('postgresql.conf', "autovacuum = off\nrestart_after_crash = off");
$node->start;
is($node->safe_psql('postgres', 'SHOW data_checksums'), 'off', 'data checksums are off');
$node->safe_psql('postgres', 'CREATE EXTENSION archer');

# the first layer-0 link slot of the first node: 16-byte header + 16-byte code
sub first_link { my ($page) = @_; my ($off) = line_pointer($page, 1); return $off + 32; }

# the filter value (low 32 bits) of the node at ($blk, $off)
sub filter_value_at
{
	my ($path, $blk, $off) = @_;
	my $p = read_block($path, $blk);
	my ($start, $len) = line_pointer($p, $off);
	return u32($p, $start + $len - 8);
}

# Point the first node's first filter link at one of its layer-0
# neighbours that has another filter value
sub link_other_value
{
	my ($page, $path) = @_;
	my ($off, $len) = line_pointer($page, 1);
	my $own = u32($page, $off + $len - 8);
	for my $s (0 .. 31)
	{
		my $slot = $off + 32 + 12 * $s;
		my $blk = (u16($page, $slot) << 16) | u16($page, $slot + 2);
		my $target = u16($page, $slot + 4);
		next if $target == 0 || filter_value_at($path, $blk, $target) == $own;
		substr($page, $off + 32 + 12 * 32, 6) = substr($page, $slot, 6);
		return $page;
	}
	die 'the first node has no neighbour of another filter value';
}

# name => [ block, edit, verify expectation, scan expectation ]
#   'block': our corruption error naming the damaged block; 'corrupt': our
#   error at any block; 'any': a result equal to the sequential scan's or
#   an error, just no crash and no wrong answer
my @cases = (
	[ page_id => $NODES, sub { set_u16($_[0], 8190, 0) }, 'block', 'block' ],
	[ version => $NODES, sub { substr($_[0], 8189, 1) = chr(99); $_[0] }, 'block', 'block' ],
	# verify takes an all-zero page for one a crash left behind, then finds
	# the links into it broken
	[ zeroed => $NODES, sub { "\0" x $BLCKSZ }, 'corrupt', 'block' ],
	[ pd_special => $NODES, sub { set_u16($_[0], 16, 8176) }, 'block', 'block' ],
	# the entry node says it lives on 20 layers: its size no longer matches
	[ node_level => $NODES, sub { my ($off) = line_pointer($_[0], 1); substr($_[0], $off + 6, 1) = chr(20); $_[0] },
	  'block', 'block' ],
	# the entry node's line pointer is 4 bytes short
	[ item_length => $NODES, sub {
		my $p = shift;
		my $lp = u32($p, 24);
		set_u32($p, 24, $lp - (4 << 17)) }, 'block', 'block' ],
	# a link to an offset past the end of its page
	[ link_offset => $NODES, sub { my $o = first_link($_[0]); set_u16($_[0], $o + 4, 300) }, 'corrupt', 'any' ],
	# a link to a block past the end of the index
	[ link_block => $NODES, sub { my $o = first_link($_[0]); set_u16($_[0], $o, 15) }, 'corrupt', 'any' ],
	# a filter list link to a node of another value
	[ filter_link => $NODES, \&link_other_value, 'block', 'any' ],
	# values of a node that no page check can tell from right ones: the
	# entry node's recorded error 0, a code byte moved by half the range,
	# its norm doubled; verify compares each node with its row.  A scan
	# may answer or fail (a lower bound that is no bound surfaces as the
	# executor's "index returned tuples in wrong order").
	[ node_error => $NODES, sub { my ($off) = line_pointer($_[0], 1); substr($_[0], $off + 8, 4) = pack('f', 0); $_[0] },
	  'block', 'any' ],
	[ node_code => $NODES, sub { my ($off) = line_pointer($_[0], 1); substr($_[0], $off + 16, 1) = chr(ord(substr($_[0], $off + 16, 1)) ^ 0x80); $_[0] },
	  'block', 'any' ],
	[ node_norm => $NODES, sub { my ($off) = line_pointer($_[0], 1); substr($_[0], $off + 12, 4) = pack('f', 2 * unpack('f', substr($_[0], $off + 12, 4))); $_[0] },
	  'block', 'any' ],
	# a negative error: every reader refuses the node
	[ node_negative_error => $NODES, sub { my ($off) = line_pointer($_[0], 1); substr($_[0], $off + 8, 4) = pack('f', -1); $_[0] },
	  'block', 'block' ],
	[ quantizer_flags => 1, sub { substr($_[0], 8188, 1) = chr(0); $_[0] }, 'block', 'block' ],
	# a quantizer value moved to another finite one: the meta page's
	# checksum of the quantizer no longer matches
	[ quantizer_value => 1, sub { substr($_[0], 24, 4) = pack('f', unpack('f', substr($_[0], 24, 4)) - 0.25); $_[0] },
	  'block', 'block' ],
	[ meta_magic => 0, sub { set_u32($_[0], 24, 0xdeadbeef) }, 'block', 'block' ],
);

my %info;
for my $i (0 .. $#cases)
{
	my $name = $cases[$i][0];
	my $table = "c_$name";
	$node->safe_psql(
		'postgres', qq{
SELECT setseed(0.$i);
CREATE TABLE $table (id int PRIMARY KEY, grp int, v avector(16));
INSERT INTO $table SELECT g, g % 7, ARRAY(SELECT random() + 0 * g FROM generate_series(1, 16))::avector
  FROM generate_series(1, 600) g;
CREATE INDEX ${table}_idx ON $table USING archer_vector (v, grp);
});
	$info{$name} = {
		table => $table,
		index => "${table}_idx",
		path => $node->data_dir . '/'
		  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('${table}_idx')"),
	};
}
$node->stop;


for my $case (@cases)
{
	my ($name, $block, $edit) = @$case;
	my $c = $info{$name};
	is(u32(read_block($c->{path}, 0), 24), 0xA4C3E401, "$name: the meta page has the archer magic");
	my $nodes = read_block($c->{path}, $NODES);
	is(u16($nodes, 8190), 0xA7E1, "$name: block $NODES has the archer_vector page id");
	is(ord(substr($nodes, 8188, 1)) & 0x20, 0x20, "$name: block $NODES holds nodes");
	$c->{block} = $block;
	write_block($c->{path}, $block, $edit->(read_block($c->{path}, $block), $c->{path}));
}

$node->start;

my $INDEX_ONLY = 'SET enable_seqscan = off; SET enable_bitmapscan = off; SET statement_timeout = \'10s\';';
my $SEQ_ONLY = 'SET enable_indexscan = off; SET enable_bitmapscan = off;';

for my $case (@cases)
{
	my ($name, undef, undef, $verify_expect, $scan_expect) = @$case;
	my $c = $info{$name};
	my ($table, $idx) = ($c->{table}, $c->{index});

	my ($ret, $out, $err) = $node->psql('postgres', "SELECT archer_vector_verify('$idx')",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	check_error($node, "$name: archer_vector_verify", $verify_expect, $c, $ret, $err);

	for my $scan ([ plain => 'true' ], [ filtered => 'grp = 3' ])
	{
		my ($label, $filter) = @$scan;
		my $sql = "SELECT string_agg(id::text, ',') FROM (SELECT id FROM $table WHERE $filter
		           ORDER BY v <-> '[0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5]' LIMIT 5) s";
		($ret, $out, $err) = $node->psql('postgres', "$INDEX_ONLY $sql",
			extra_params => [ '-v', 'VERBOSITY=verbose' ]);
		if ($scan_expect eq 'any' && $ret == 0)
		{
			my $exact = $node->safe_psql('postgres', "$SEQ_ONLY $sql");
			is($out, $exact, "$name: $label scan: no error, and the exact answer");
		}
		elsif ($scan_expect eq 'any')
		{
			unlike($err, qr/server closed the connection|terminated by signal/, "$name: $label scan: an error, no crash");
		}
		else
		{
			check_error($node, "$name: $label scan", $scan_expect, $c, $ret, $err);
		}
	}
	is($node->safe_psql('postgres', 'SELECT 1'), '1', "$name: the server is up");

	$node->safe_psql('postgres', "REINDEX INDEX $idx");
	is($node->safe_psql('postgres', "SELECT archer_vector_verify('$idx')"), '600', "$name: REINDEX repairs it");
	my $q = "SELECT string_agg(id::text, ',') FROM (SELECT id FROM $table
	         ORDER BY v <-> '[0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5]' LIMIT 5) s";
	is($node->safe_psql('postgres', "$INDEX_ONLY $q"), $node->safe_psql('postgres', "$SEQ_ONLY $q"),
		"$name: after REINDEX the index answers like a sequential scan");
}

my @bad = grep { /PANIC|TRAP:|terminated by signal/ } split /\n/, slurp_file($node->logfile);
is(scalar(@bad), 0, 'server log: no PANIC or crash') or diag(join("\n", @bad));
$node->stop;
done_testing();
