# test/t/011_vector_wal_replica.pl: archer_vector through streaming
# replication and crash recovery.
#
# A primary and a hot standby (with a replication slot), both with
# wal_consistency_checking = 'all': the standby compares its redo of every
# record (the log_newpage records of CREATE INDEX and REINDEX, the
# GenericXLog records of inserts and VACUUM) with the full page image the
# primary attached, and stops with "inconsistent page found" on any
# difference.  The indexes are built while the standby streams, so it
# replays and checks the builds too:
#   vt_l2    avector(32), L2, on 5000 clustered rows
#   vt_cos   the same column, cosine
#   ve_a     real[] on a table that is empty at CREATE INDEX: the index
#            learns its dimension from the first insert
#   vu_l2    an UNLOGGED table's index (its init fork is WAL-logged)
# Rounds of insert / delete / VACUUM / insert; after each the standby must
# return exactly the primary's kNN answers (ids and distances of
# ORDER BY col <op> q LIMIT 10, for 40 queries), vt_l2's answers must have
# recall@10 >= 0.9 against a sequential scan (ve_a's too after its REINDEX;
# the others are measured), and on both nodes
# archer_vector_verify must count every row and the index pages (read with
# pageinspect) must hold a live node for every row.
#
# Then the primary is stopped with 'immediate' while two sessions insert
# batches and a third holds an open transaction.  After restart every
# acknowledged batch is there and indexed, the open one is not, recall
# still holds, VACUUM leaves one node per row, the unlogged index is empty
# but valid and usable, and the standby, reconnected, again answers like
# the primary.  A REINDEX is replayed and checked the same way.  Last, a
# crash during the first (uncommitted) insert into an index built on an
# empty table.  The standby's log must show no inconsistent page, no
# FATAL (but its reconnecting to the restarted primary) and no PANIC.
#
# A crash can leave all-zero pages at the end of an index (extended, the
# WAL that initialized the page never flushed): archer_vector_verify, a
# scan that sweeps the node pages (a selective filter) and the first
# insert into an index without a dimension must take them in their stride.
#
# 3 rounds by default, 8 with ARCHER_LONG_TESTS=1.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use ArcherTest;

my $t_start = time();
my $ROUNDS = $ENV{ARCHER_LONG_TESTS} ? 8 : 3;
my $K = 10;

my $primary = PostgreSQL::Test::Cluster->new('vprimary');
$primary->init(allows_streaming => 1);
$primary->append_conf(
	'postgresql.conf', q{
wal_consistency_checking = 'all'
shared_buffers = 8MB
max_connections = 20
autovacuum = off
max_wal_size = 512MB
log_statement = none
});
$primary->start;

# Clustered data: 20 centres (in different directions, for cosine), uniform
# noise of +-1.5 around them; the same
# generator for every insert (ids decide the centre), so sessions and rounds
# are reproducible from their seeds.
sub rows_sql
{
	my ($table, $from, $count) = @_;
	return "INSERT INTO $table SELECT i, ARRAY(SELECT ((i % 20) * 7 + d * 13) % 23 + (random() - 0.5) * 3 + 0 * i "
	  . "FROM generate_series(1, 32) d)::avector FROM generate_series($from, $from + $count - 1) i";
}
sub rows_sql_array
{
	my ($table, $from, $count) = @_;
	return "INSERT INTO $table SELECT i, ARRAY(SELECT (i % 5) * d + random() * 2 + 0 * i "
	  . "FROM generate_series(1, 8) d)::real[] FROM generate_series($from, $from + $count - 1) i";
}

$primary->safe_psql(
	'postgres', 'CREATE EXTENSION archer; CREATE EXTENSION pageinspect; SELECT setseed(0.4242);'
	  . 'CREATE TABLE vt (id int PRIMARY KEY, v avector(32));'
	  . rows_sql('vt', 1, 5000) . ';'
	  . 'INSERT INTO vt VALUES (900001, NULL), (900002, NULL);'
	  . 'CREATE TABLE ve (id int PRIMARY KEY, a real[]);'
	  . 'CREATE UNLOGGED TABLE vu (id int PRIMARY KEY, v avector(32));'
	  . 'CREATE TABLE vq (qid int PRIMARY KEY, v avector(32), a real[]);'
	  . 'INSERT INTO vq SELECT q, ARRAY(SELECT ((q * 3 % 20) * 7 + d * 13) % 23 + (random() - 0.5) * 4 + 0 * q '
	  . '  FROM generate_series(1, 32) d)::avector, '
	  . '  ARRAY(SELECT (q % 5) * d + random() * 3 + 0 * q FROM generate_series(1, 8) d)::real[] '
	  . 'FROM generate_series(1, 40) q;'
	  . 'VACUUM ANALYZE vt; VACUUM ANALYZE vq;');

# a slot keeps the WAL (large, with every page image) until the standby has
# it, also across the primary's crash
$primary->safe_psql('postgres', "SELECT pg_create_physical_replication_slot('vstandby')");
$primary->backup('bkp');
my $standby = PostgreSQL::Test::Cluster->new('vstandby');
$standby->init_from_backup($primary, 'bkp', has_streaming => 1);
$standby->append_conf('postgresql.conf',
	"wal_consistency_checking = 'all'\nlog_statement = none\nprimary_slot_name = 'vstandby'");
$standby->start;
is($standby->safe_psql('postgres', 'SHOW wal_consistency_checking'), 'all',
	'the standby checks every record it replays');
is($primary->safe_psql('postgres', 'SHOW wal_consistency_checking'), 'all',
	'the primary attaches page images for checking to every record');

# Built while the standby streams: it replays (and checks) the build's WAL
my $t0 = time();
$primary->safe_psql(
	'postgres', q{
CREATE INDEX vt_l2 ON vt USING archer_vector (v);
CREATE INDEX vt_cos ON vt USING archer_vector (v avector_cosine_ops);
CREATE INDEX ve_a ON ve USING archer_vector (a);
CREATE INDEX vu_l2 ON vu USING archer_vector (v);
});
note(sprintf('index builds took %.1f s', time() - $t0));

# A graph larger than maintenance_work_mem is built row by row, each insert
# WAL-logged: with full_page_writes off, nothing may log a change to a page
# that WAL never created (the build writes its meta and quantizer pages
# without WAL), or the standby meets a record for a block it does not have.
$primary->safe_psql('postgres', 'ALTER SYSTEM SET full_page_writes = off; SELECT pg_reload_conf();');
$primary->poll_query_until('postgres', 'SHOW full_page_writes', 'off');
my ($fret, $fout, $ferr) = $primary->psql('postgres',
	"SET maintenance_work_mem = '1MB'; CREATE INDEX vt_rows ON vt USING archer_vector (v) WITH (m = 32)");
is($fret, 0, 'a build row by row with full_page_writes off') or diag($ferr);
like($ferr, qr/does not fit in maintenance_work_mem/, 'that build went row by row');
$primary->safe_psql('postgres', 'ALTER SYSTEM RESET full_page_writes; SELECT pg_reload_conf();');
$primary->poll_query_until('postgres', 'SHOW full_page_writes', 'on');
$primary->safe_psql('postgres', 'SELECT setseed(0.77);' . rows_sql('vu', 1, 1500));

# FATALs the standby's log may hold: connections refused while it shuts
# down or recovers, and after the primary's crash (allow_reconnect) its
# walreceiver losing and retrying its connection (18 names the receiver:
# 'streaming replication receiver "vstandby" could not connect ...')
sub standby_fatals
{
	my ($allow_reconnect) = @_;
	return (qr/FATAL:  the database system is (shutting down|in recovery mode)/,
		$allow_reconnect
		? qr/FATAL:  (streaming replication receiver "[^"]*" )?(could (not receive data from|not send data to) WAL stream|could not connect to the primary server|terminating walreceiver|could not send end-of-streaming message to primary)/
		: ());
}

my $INDEX_ONLY = 'SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexscan = on;';
my $SEQ_ONLY = 'SET enable_seqscan = on; SET enable_bitmapscan = off; SET enable_indexscan = off;';

# (name, table, column, operator, index): the kNN configurations checked
my @CONFIGS = (
	[ 'vt l2', 'vt', 'v', '<->', 'vt_l2' ],
	[ 'vt cosine', 'vt', 'v', '<=>', 'vt_cos' ],
	[ 've l2 (empty at build)', 've', 'a', '<->', 've_a' ],
);
# The least recall@K asserted for each index.  ve_a has the provisional
# quantizer of its first row (docs/vector.md: REINDEX after loading data):
# later rows outside its range get clamped codes with large errors, and
# recall there is only measured until the REINDEX at the end.
# vt_cos is only measured here (010_vector_recall asserts cosine recall
# on real data): inserts choose neighbours by 8-bit code distances, which
# for cosine on these tight clusters are about as coarse as the neighbour
# distances themselves, and its recall drifts down round after round.
my %MIN_RECALL = (vt_l2 => 0.9, vt_cos => undef, ve_a => undef);

# "id:distance,..." of the top K for each query, one line per query
sub knn_sql
{
	my ($table, $col, $op) = @_;
	return qq{SELECT q.qid, (SELECT string_agg(id || ':' || d, ',')
               FROM (SELECT id, $col $op q.$col AS d FROM $table ORDER BY $col $op q.$col LIMIT $K) s)
FROM vq q ORDER BY q.qid};
}
sub knn
{
	my ($node, $settings, $table, $col, $op) = @_;
	return $node->safe_psql('postgres', "$settings " . knn_sql($table, $col, $op));
}

# recall of the index's answers against the exact ones: a row counts when
# its distance is at most the exact K-th distance
sub recall
{
	my ($approx, $exact) = @_;
	my ($hits, $total) = (0, 0);
	my %exact = map { split /\|/, $_, 2 } split /\n/, $exact;
	for my $line (split /\n/, $approx)
	{
		my ($qid, $rows) = split /\|/, $line, 2;
		my @e = map { (split /:/)[1] } split /,/, ($exact{$qid} // '');
		my @a = map { (split /:/)[1] } split /,/, ($rows // '');
		next unless @e;
		my $h = grep { $_ <= $e[-1] } @a;
		$hits += $h > @e ? @e : $h;
		$total += @e;
	}
	return $total ? $hits / $total : 1;
}

# live rows (with a vector) of each table
sub live_rows
{
	my ($node, $table, $col) = @_;
	return $node->safe_psql('postgres', "SELECT count(*) FROM $table WHERE $col IS NOT NULL");
}

# what archer_vector_verify counts: every row, those with a NULL vector too
sub table_rows
{
	my ($node, $table) = @_;
	return $node->safe_psql('postgres', "SELECT count(*) FROM $table");
}

my $plans_checked = 0;
# The standby's kNN answers are the primary's, with the recall asserted
# against a sequential scan and a full LIMIT
sub compare_standby
{
	my ($label, $allow_reconnect) = @_;
	catch_up($primary, $standby, standby_fatals($allow_reconnect));
	compare_nodes(
		$primary, $standby, $INDEX_ONLY, $SEQ_ONLY, \@CONFIGS,
		sub {
			my ($name, $table, $col, $op) = @{ $_[0] };
			return knn_sql($table, $col, $op);
		},
		sub {
			my ($c, $on_primary, $on_standby, $exact) = @_;
			my ($name, $table, $col, $op, $index) = @$c;
			if (!$plans_checked)
			{
				like($primary->safe_psql('postgres',
						"$INDEX_ONLY EXPLAIN (COSTS OFF) SELECT id FROM $table ORDER BY $col $op (SELECT $col FROM vq WHERE qid = 1) LIMIT $K"),
					qr/Index Scan using $index on $table/, "$name: the plan uses $index");
			}
			is($on_standby, $on_primary, "$label: $name: standby kNN answers = primary's");
			my $r = recall($on_primary, $exact);
			note(sprintf('%s: %s: recall@%d = %.3f', $label, $name, $K, $r));
			my $min = $MIN_RECALL{$index};
			cmp_ok($r, '>=', $min, "$label: $name: recall\@$K >= $min against a sequential scan")
			  if defined $min;
			my $n = () = $on_primary =~ /:/g;
			my $want = 40 * (live_rows($primary, $table, $col) < $K ? live_rows($primary, $table, $col) : $K);
			is($n, $want, "$label: $name: every query returns $K rows");
		});
	$plans_checked = 1;
}

# Rows with a vector that have no live node, read from the index pages with
# pageinspect (independent of archer_vector_verify): node pages carry
# ARCHER_PAGE_NODES (0x20) in the flags byte at 8188; each line pointer
# leads to a node starting with its heap TID (bi_hi, bi_lo, posid, little
# endian), then level, then flags (0x01: deleted).
sub unindexed_rows
{
	my ($node, $table, $col, $index) = @_;
	return $node->safe_psql('postgres', qq{
WITH blocks AS (
  SELECT get_raw_page('$index', b::int) AS p
  FROM generate_series(1, pg_relation_size('$index') / 8192 - 1) b
), node_pages AS (
  SELECT p, (get_byte(p, 12) + 256 * get_byte(p, 13) - 24) / 4 AS nitems
  FROM blocks WHERE get_byte(p, 8188) & 32 <> 0
), items AS (
  SELECT p, get_byte(p, 24 + 4 * i) + 256 * (get_byte(p, 25 + 4 * i) & 127) AS off,
         (get_byte(p, 25 + 4 * i) >> 7) + 2 * (get_byte(p, 26 + 4 * i) & 1) AS lp_flags
  FROM node_pages, generate_series(0, nitems - 1) i
), nodes AS (
  SELECT format('(%s,%s)',
                (get_byte(p, off) + 256 * get_byte(p, off + 1)) * 65536
                  + get_byte(p, off + 2) + 256 * get_byte(p, off + 3),
                get_byte(p, off + 4) + 256 * get_byte(p, off + 5))::tid AS heaptid
  FROM items WHERE lp_flags = 1 AND get_byte(p, off + 7) & 1 = 0
)
SELECT count(*) FROM (SELECT ctid FROM $table WHERE $col IS NOT NULL EXCEPT SELECT heaptid FROM nodes) x});
}

# all-zero pages of an index: a crash between extending the index and
# logging the new page leaves them at its end (scans and verify skip them)
sub zero_pages
{
	my ($node, $index) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM generate_series(0, pg_relation_size('$index') / 8192 - 1) b "
		  . "WHERE (page_header(get_raw_page('$index', b::int))).upper = 0");
}

sub verify_index
{
	my ($node, $label, $index, $cmp, $expected) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "SELECT archer_vector_verify('$index')");
	my $what = "$label: archer_vector_verify('$index') on " . $node->name;
	is($ret, 0, "$what passes") or diag($err);
	cmp_ok($out, $cmp, $expected, "$what: $cmp $expected nodes");
}

# archer_vector_verify on both nodes: every row indexed, no node of a
# deleted row left (after VACUUM); the pages say the same
sub verify_nodes
{
	my ($label, @nodes) = @_;
	for my $c (@CONFIGS)
	{
		my ($name, $table, $col, $op, $index) = @$c;
		my $rows = table_rows($primary, $table);
		for my $node (@nodes)
		{
			verify_index($node, $label, $index, '==', $rows);
			is(unindexed_rows($node, $table, $col, $index), '0',
				"$label: $index pages hold a live node for every row on " . $node->name);
		}
	}
}

# the index on the empty table, before any row: valid, empty, on both nodes
catch_up($primary, $standby, standby_fatals(0));
for my $node ($primary, $standby)
{
	is($node->safe_psql('postgres', "SELECT archer_vector_verify('ve_a')"), '0',
		'empty-table index verifies as empty on ' . $node->name);
	is($node->safe_psql('postgres', "$INDEX_ONLY SELECT count(*) FROM (SELECT id FROM ve ORDER BY a <-> '{1,2,3,4,5,6,7,8}' LIMIT 5) s"), '0',
		'empty-table index scan returns nothing on ' . $node->name);
}
is($standby->safe_psql('postgres', "SELECT archer_vector_verify('vt_rows')"),
	table_rows($primary, 'vt'),
	'the standby replayed the row-by-row build: every row has a node');
$primary->safe_psql('postgres', 'DROP INDEX vt_rows');
compare_standby('after build', 0);
verify_nodes('after build', $primary, $standby);
# the page check can fail: ve_a holds none of vt's rows
is(unindexed_rows($primary, 'vt', 'v', 've_a'), live_rows($primary, 'vt', 'v'),
	'the page check finds the rows an index lacks');

my $next_id = 10001;
for my $round (1 .. $ROUNDS)
{
	$t0 = time();
	my ($n1, $n2) = (400, 200);
	my ($id1, $id2) = ($next_id, $next_id + $n1);
	$next_id += $n1 + $n2;
	$primary->safe_psql('postgres',
		"SELECT setseed(0.$round);" . rows_sql('vt', $id1, $n1) . ';' . rows_sql_array('ve', $id1, 150) . ';'
		  . "DELETE FROM vt WHERE id % 9 = $round % 9; DELETE FROM ve WHERE id % 4 = $round % 4;");
	# VACUUM cannot run in a transaction block
	vacuum_dead_rows($primary, 'vt');
	vacuum_dead_rows($primary, 've');
	$primary->safe_psql('postgres',
		"SELECT setseed(0.5$round);" . rows_sql('vt', $id2, $n2) . ';' . rows_sql_array('ve', $id2, 60));
	compare_standby("round $round", 0);
	verify_nodes("round $round", $primary, $standby);
	note(sprintf('round %d took %.1f s', $round, time() - $t0));
}

my @problems = log_problems($standby, standby_fatals(0));
is(scalar(@problems), 0, 'standby log: no inconsistent page, FATAL or PANIC during redo')
  or diag(join("\n", @problems));
my ($ret, $out, $err) = $standby->psql('postgres', 'SELECT count(*) FROM vu');
isnt($ret, 0, 'the unlogged table cannot be read on the standby');
is($primary->safe_psql('postgres', "SELECT archer_vector_verify('vu_l2')"), '1500',
	'the unlogged index has its 1500 rows before the crash');

# ---------------------------------------------------------------------------
# crash the primary while sessions insert
# ---------------------------------------------------------------------------
my $BATCH = 100;
my %batches;
# a session's batches of inserts, each acknowledged once committed
sub insert_batches
{
	my ($session) = @_;
	return batch_script("0.9$session", 60, sub {
		my $b = $session * 1000 + $_[0];
		$batches{$b} = 0;
		return ($b, rows_sql('vt', 1_000_000 + $b * $BATCH, $BATCH));
	});
}

my $s1 = $primary->background_psql('postgres', on_error_stop => 1);
my $s2 = $primary->background_psql('postgres', on_error_stop => 1);
my $s3 = $primary->background_psql('postgres', on_error_stop => 1);
# an open transaction: its rows must not show up after the crash
$s3->query_safe('BEGIN; ' . rows_sql('vt', 2_000_000, $BATCH));
$s1->{stdin} .= insert_batches(1);
$s2->{stdin} .= insert_batches(2);
my @acked;
my $deadline = time() + 60;
while (time() < $deadline)
{
	@acked = (acked_batches($s1), acked_batches($s2));
	last if @acked >= 6;
	Time::HiRes::sleep(0.01);
}
cmp_ok(scalar(@acked), '>=', 6, 'at least 6 batches acknowledged before the crash');
$primary->stop('immediate');
@acked = (acked_batches($s1), acked_batches($s2));
eval { $_->quit; } for ($s1, $s2, $s3);
$primary->start;

my %count = split /[|\n]/, $primary->safe_psql('postgres',
	"SELECT (id - 1000000) / $BATCH, count(*) FROM vt WHERE id >= 1000000 GROUP BY 1");
my %is_acked = map { $_ => 1 } @acked;
my ($bad_acked, $bad_atomic) = (0, 0);
for my $b (sort { $a <=> $b } keys %batches)
{
	my $n = $count{$b} // 0;
	if ($is_acked{$b})
	{
		$bad_acked++, diag("acknowledged batch $b: $n rows") if $n != $BATCH;
	}
	elsif ($n != 0 && $n != $BATCH)
	{
		$bad_atomic++, diag("unacknowledged batch $b: $n rows");
	}
}
note(scalar(@acked) . ' batches acknowledged, ' . scalar(grep { $_ } values %count) . ' committed');
is($bad_acked, 0, 'after the crash: every acknowledged batch is complete');
is($bad_atomic, 0, 'after the crash: every batch is all or nothing');
is($primary->safe_psql('postgres', 'SELECT count(*) FROM vt WHERE id >= 2000000'), '0',
	'after the crash: the open transaction left no row');

# every visible row has a node (nodes of rows that never committed stay
# until VACUUM, so verify counts at least the rows)
note('after the crash: all-zero pages left at the end of ' . join(', ',
		map { "$_->[4]: " . zero_pages($primary, $_->[4]) } @CONFIGS));
for my $c (@CONFIGS)
{
	my ($name, $table, $col, $op, $index) = @$c;
	is(unindexed_rows($primary, $table, $col, $index), '0',
		"after the crash: $index has a live node for every committed row");
	# an insert the crash cut between writing its node and its back links
	# leaves a node no search reaches: verify reports exactly that, and the
	# VACUUM below relinks it (verify_nodes after it must pass)
	my ($vret, $vout, $verr) = $primary->psql('postgres', "SELECT archer_vector_verify('$index')");
	my $rows = live_rows($primary, $table, $col);
	ok(($vret == 0 && $vout >= $rows)
		  || ($vret == 3 && $verr =~ /ERROR:  index "$index" has \d+ live nodes that no search reaches/),
		"after the crash: archer_vector_verify('$index') counts at least the $rows rows, or reports the nodes an interrupted insert left unlinked")
	  or diag("exit $vret, output '$vout', error: $verr");
}
# a selective filter: the graph search runs dry and the scan sweeps the
# node pages for what it missed, reading every page of the index
for my $c (@CONFIGS[0, 1])
{
	my ($name, $table, $col, $op, $index) = @$c;
	my $knn = "SELECT count(*) FROM (SELECT id FROM $table WHERE id % 1000 = 7 "
	  . "ORDER BY $col $op (SELECT $col FROM vq WHERE qid = 1) LIMIT 10) s";
	my $want = $primary->safe_psql('postgres', "$SEQ_ONLY $knn");
	($ret, $out, $err) = $primary->psql('postgres', "$INDEX_ONLY $knn");
	my $what = "after the crash: $name: a kNN query with a selective filter";
	is($ret, 0, "$what works") or diag($err);
	note("$what: $out rows, $want by a sequential scan");
}
vacuum_dead_rows($primary, 'vt');
compare_standby('after the crash', 1);
verify_nodes('after the crash and VACUUM', $primary, $standby);

# the unlogged index: reset from its init fork, empty, valid, usable
is($primary->safe_psql('postgres', 'SELECT count(*) FROM vu'), '0', 'after the crash: the unlogged table is empty');
($ret, $out, $err) = $primary->psql('postgres', "SELECT archer_vector_verify('vu_l2')");
is($ret, 0, 'after the crash: the unlogged index verifies') or diag($err);
is($out, '0', 'after the crash: the unlogged index is empty');
is($primary->safe_psql('postgres', "$INDEX_ONLY SELECT count(*) FROM (SELECT id FROM vu ORDER BY v <-> (SELECT v FROM vq WHERE qid = 1) LIMIT 10) s"),
	'0', 'after the crash: a scan of the unlogged index finds nothing');
$primary->safe_psql('postgres', 'SELECT setseed(0.78);' . rows_sql('vu', 1, 1200));
my $r = recall(knn($primary, $INDEX_ONLY, 'vu', 'v', '<->'), knn($primary, $SEQ_ONLY, 'vu', 'v', '<->'));
note(sprintf('unlogged index after refill: recall@%d = %.3f', $K, $r));
cmp_ok($r, '>=', 0.9, 'after the crash: the unlogged index takes inserts again, recall >= 0.9');
is($primary->safe_psql('postgres', "SELECT archer_vector_verify('vu_l2')"), '1200',
	'after the crash: the unlogged index counts its 1200 new rows');

# REINDEX: rebuilt (log_newpage again), ve_a with a quantizer trained on
# its rows
$primary->safe_psql('postgres', 'REINDEX INDEX ve_a; REINDEX INDEX vt_cos;');
$MIN_RECALL{ve_a} = 0.9;
compare_standby('after REINDEX', 1);
verify_nodes('after REINDEX', $primary, $standby);

# ---------------------------------------------------------------------------
# crash during the first insert into an index built on an empty table
# ---------------------------------------------------------------------------
# The insert extends the index by its quantizer and first node page; with
# the WAL writer and background writer held back, its (uncommitted) WAL
# is not flushed before the crash, so the pages stay all zeros, as after a
# crash at the wrong moment.  The index has no dimension yet, and must take
# it from the next row all the same.
$primary->safe_psql('postgres', 'CREATE TABLE vz (id int PRIMARY KEY, a real[]); CREATE INDEX vz_a ON vz USING archer_vector (a);');
$primary->safe_psql('postgres',
	"ALTER SYSTEM SET wal_writer_delay = '10s'; ALTER SYSTEM SET bgwriter_lru_maxpages = 0; SELECT pg_reload_conf();");
$primary->poll_query_until('postgres', 'SHOW wal_writer_delay', '10s');
my $open = $primary->background_psql('postgres', on_error_stop => 1);
$open->query_safe("BEGIN; INSERT INTO vz VALUES (1, '{1,2,3,4,5,6,7,8}');");
my $vz_blocks = $primary->safe_psql('postgres', "SELECT pg_relation_size('vz_a') / 8192");
$primary->stop('immediate');
eval { $open->quit; };
$primary->start;
$primary->safe_psql('postgres', 'ALTER SYSTEM RESET wal_writer_delay; ALTER SYSTEM RESET bgwriter_lru_maxpages; SELECT pg_reload_conf();');
note("vz_a had $vz_blocks blocks before the crash, "
	  . $primary->safe_psql('postgres', "SELECT pg_relation_size('vz_a') / 8192")
	  . ' after, ' . zero_pages($primary, 'vz_a') . ' of them all zeros');
my $vz_rows = 'SELECT setseed(0.3); INSERT INTO vz SELECT i, ARRAY(SELECT round((random() * 10)::numeric, 2) + 0 * i '
  . 'FROM generate_series(1, 8))::real[] FROM generate_series(2, 301) i';
($ret, $out, $err) = $primary->psql('postgres', $vz_rows);
is($ret, 0, 'crash during the first insert: the next inserts work') or diag($err);
is($primary->safe_psql('postgres', 'SELECT count(*) FROM vz'), '300',
	'crash during the first insert: the uncommitted row is gone, 300 new rows');
my $vz_knn = "SELECT string_agg(id::text, ',') FROM (SELECT id FROM vz ORDER BY a <-> '{5,5,5,5,5,5,5,5}' LIMIT 5) s";
my $vz_exact = $primary->safe_psql('postgres', "$SEQ_ONLY $vz_knn");
is($primary->safe_psql('postgres', "$INDEX_ONLY $vz_knn"), $vz_exact,
	"crash during the first insert: the index answers like a sequential scan ($vz_exact)");
vacuum_dead_rows($primary, 'vz');
verify_index($primary, 'crash during the first insert', 'vz_a', '==', 300);
catch_up($primary, $standby, standby_fatals(1));
is($standby->safe_psql('postgres', "$INDEX_ONLY $vz_knn"), $vz_exact,
	'crash during the first insert: the standby answers the same');

# A crash after the first insert's quantizer page reached disk and before
# the meta page naming it did: block 1 holds a quantizer page, the meta page
# still says dimension 0.  The state is made by copying block 1 (a
# quantizer page) of an index that has rows into the empty index's file,
# with the server stopped.  The next first insert must take the page over.
$primary->safe_psql('postgres', q{
CREATE TABLE vlq (id int PRIMARY KEY, a real[]); CREATE INDEX vlq_a ON vlq USING archer_vector (a);
CREATE TABLE vlq_donor (id int, a real[]); INSERT INTO vlq_donor VALUES (1, '{9,9,9,9,9,9,9,9}');
CREATE INDEX vlq_donor_a ON vlq_donor USING archer_vector (a); CHECKPOINT;});
my %vlq_file = map { $_ => $primary->data_dir . '/' . $primary->safe_psql('postgres', "SELECT pg_relation_filepath('$_')") }
  ('vlq_a', 'vlq_donor_a');
$primary->stop;
{
	open(my $donor, '<:raw', $vlq_file{vlq_donor_a}) or die "could not open $vlq_file{vlq_donor_a}: $!";
	seek($donor, 8192, 0) or die "seek: $!";
	read($donor, my $page, 8192) == 8192 or die "could not read block 1 of vlq_donor_a";
	close($donor);
	open(my $empty, '+<:raw', $vlq_file{vlq_a}) or die "could not open $vlq_file{vlq_a}: $!";
	-s $vlq_file{vlq_a} == 8192 or die 'vlq_a should have its meta page alone, not ' . (-s $vlq_file{vlq_a}) . ' bytes';
	seek($empty, 8192, 0) or die "seek: $!";
	print $empty $page or die "write: $!";
	close($empty);
}
$primary->start;
($ret, $out, $err) = $primary->psql('postgres', $vz_rows =~ s/\bvz\b/vlq/r);
is($ret, 0, 'crash between the first insert\'s quantizer page and its meta page: the next inserts work')
  or diag($err);
my $vlq_knn = $vz_knn =~ s/\bvz\b/vlq/r;
is($primary->safe_psql('postgres', "$INDEX_ONLY $vlq_knn"), $primary->safe_psql('postgres', "$SEQ_ONLY $vlq_knn"),
	'crash between the first insert\'s quantizer page and its meta page: the index answers like a sequential scan');
verify_index($primary, 'crash between the first insert\'s quantizer page and its meta page', 'vlq_a', '==', 300);
$primary->safe_psql('postgres', 'DROP TABLE vlq_donor');

@problems = log_problems($standby, standby_fatals(1));
is(scalar(@problems), 0, 'standby log: no inconsistent page, FATAL (besides reconnecting) or PANIC')
  or diag(join("\n", @problems));
my @crash = grep { /PANIC|TRAP:|inconsistent page/ } split /\n/, slurp_file($primary->logfile);
is(scalar(@crash), 0, 'primary log: no PANIC or assertion failure') or diag(join("\n", @crash));

$standby->stop;
$primary->stop;
note(sprintf('011_vector_wal_replica took %.1f s', time() - $t_start));
done_testing();
