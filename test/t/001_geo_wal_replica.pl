# test/t/001_geo_wal_replica.pl: archer_geo through streaming replication.
#
# A primary and a hot standby, both with wal_consistency_checking = 'all',
# so that the standby's redo of every generic WAL record (and of the
# log_newpage_range records of CREATE INDEX) is compared with the full page
# image the primary attached: any difference stops the standby with
# "inconsistent page found".
#
# Rounds of inserts (leaf splits, and a root split of a second index that
# starts empty), deletes, VACUUM and more inserts; after each, the standby
# must answer radius, polygon and nearest-neighbour queries exactly as the
# primary does, and both must agree with a sequential scan of the exact
# predicate.  Then the standby is promoted and written to.  An unlogged
# table's index must come up empty but valid on the promoted standby (its
# init fork is WAL-logged).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use IPC::Run;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use ArcherTest;
use ArcherVerify;

my $ROUNDS = $ENV{ARCHER_LONG_TESTS} ? 12 : 5;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf(
	'postgresql.conf', qq{
wal_consistency_checking = 'all'
shared_buffers = 4MB
autovacuum = off
max_wal_size = 256MB
});
$primary->start;

$primary->safe_psql(
	'postgres', q{
CREATE EXTENSION archer;
SELECT setseed(0.1234);
-- 20000 points: 70% uniform on the sphere, 30% around Paris
CREATE TABLE geo (id int PRIMARY KEY, p point);
INSERT INTO geo
  SELECT i, CASE WHEN i % 10 < 7
                 THEN point(random() * 360 - 180, degrees(asin(random() * 2 - 1)))
                 ELSE point(2.35 + (random() - 0.5) * 2, 48.85 + (random() - 0.5) * 2) END
  FROM generate_series(1, 20000) i;
INSERT INTO geo VALUES (20001, NULL), (20002, NULL);
CREATE TABLE geo_small (id int PRIMARY KEY, p point);
CREATE UNLOGGED TABLE geo_unlogged (id int, p point);
});

$primary->backup('bkp');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'bkp', has_streaming => 1);
$standby->append_conf('postgresql.conf', "wal_consistency_checking = 'all'");
$standby->start;
is($standby->safe_psql('postgres', 'SHOW wal_consistency_checking'), 'all',
	'the standby checks every record it replays');
is($primary->safe_psql('postgres', 'SHOW wal_consistency_checking'), 'all',
	'the primary attaches page images for checking to every record');

# the indexes are built while the standby streams, so that it replays (and
# checks) the build's WAL: log_newpage_range of the main fork, and for the
# unlogged table the init fork
$primary->safe_psql(
	'postgres', q{
CREATE INDEX geo_archer ON geo USING archer_geo (p);
-- an index that starts as a single empty leaf: its root splits later
CREATE INDEX geo_small_archer ON geo_small USING archer_geo (p);
CREATE INDEX geo_unlogged_archer ON geo_unlogged USING archer_geo (p);
INSERT INTO geo_unlogged SELECT i, point(i % 360 - 180, (i % 179) - 89) FROM generate_series(1, 3000) i;
});

# A promotion stops the standby's walreceiver with a FATAL
my $PROMOTION_FATAL = qr/FATAL:  terminating walreceiver process due to administrator command/;

# The fixed query set: name => SQL returning one text value (ids in order)
# (ORDER BY id + 0, not id: from PostgreSQL 16 on an aggregate's ORDER BY id
# makes a full scan of the primary key a candidate, which enable_seqscan =
# off then prefers to the archer index for the large regions)
my %queries = (
	radius_paris => q{SELECT string_agg(id::text, ',' ORDER BY id + 0) FROM geo WHERE archer_dwithin(p, point(2.35, 48.85), 50000)},
	radius_equator => q{SELECT string_agg(id::text, ',' ORDER BY id + 0) FROM geo WHERE archer_dwithin(p, point(0, 0), 1500000)},
	radius_antimeridian => q{SELECT string_agg(id::text, ',' ORDER BY id + 0) FROM geo WHERE p <@ archer_cap(point(179.9, -17), 800000)},
	radius_pole => q{SELECT string_agg(id::text, ',' ORDER BY id + 0) FROM geo WHERE archer_dwithin(p, point(0, 90), 1200000)},
	polygon_paris => q{SELECT string_agg(id::text, ',' ORDER BY id + 0) FROM geo WHERE archer_within(p, '((2,48.5),(3,48.5),(3,49.2),(2,49.2))'::polygon)},
	polygon_big => q{SELECT string_agg(id::text, ',' ORDER BY id + 0) FROM geo WHERE p <@@ '((-30,-20),(40,-20),(40,30),(-30,30))'::polygon},
	knn_paris => q{SELECT string_agg(id::text, ',' ORDER BY d, id) FROM (SELECT id, p <-> point(2.35, 48.85) AS d FROM geo ORDER BY p <-> point(2.35, 48.85) LIMIT 200) s},
	knn_antimeridian => q{SELECT string_agg(id::text, ',' ORDER BY d, id) FROM (SELECT id, p <-> point(180, 0) AS d FROM geo ORDER BY p <-> point(180, 0) LIMIT 30) s},
	small_radius => q{SELECT string_agg(id::text, ',' ORDER BY id + 0) FROM geo_small WHERE archer_dwithin(p, point(10, 10), 300000)},
	small_knn => q{SELECT string_agg(id::text, ',' ORDER BY d, id) FROM (SELECT id, p <-> point(10, 10) AS d FROM geo_small ORDER BY p <-> point(10, 10) LIMIT 40) s},
);

my $INDEX_ONLY = 'SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexscan = on;';
my $SEQ_ONLY = 'SET enable_seqscan = on; SET enable_bitmapscan = off; SET enable_indexscan = off;';

sub answer
{
	my ($node, $settings, $name) = @_;
	return $node->safe_psql('postgres', "$settings $queries{$name}");
}

# Every query uses the archer index when asked to (checked once).
for my $name (sort keys %queries)
{
	my $plan = $primary->safe_psql('postgres', "$INDEX_ONLY EXPLAIN (COSTS OFF) $queries{$name}");
	like($plan, qr/Index (Only )?Scan using geo(_small)?_archer/, "$name uses the archer_geo index");
}

# The standby answers every query as the primary does, and both as a
# sequential scan on the primary
sub compare_standby
{
	my ($label) = @_;
	compare_nodes(
		$primary, $standby, $INDEX_ONLY, $SEQ_ONLY,
		[ sort keys %queries ],
		sub { $queries{ $_[0] } },
		sub {
			my ($name, $on_primary, $on_standby, $seq) = @_;
			is($on_primary, $seq, "$label: $name: primary index scan = sequential scan");
			is($on_standby, $seq, "$label: $name: standby index scan = primary sequential scan");
		});
	# the answers are not trivially empty
	my @ids = split /,/, answer($primary, $INDEX_ONLY, 'radius_paris');
	cmp_ok(scalar(@ids), '>', 100, "$label: the Paris radius query finds many rows");
}

# archer_geo_verify on the standby: it takes ShareLock on the table, which a
# hot standby does not grant; if so, say so once and skip it there.
my $standby_verify_works;
sub verify_standby
{
	my ($label, $index, $expected) = @_;
	my ($ret, $out, $err) =
	  $standby->psql('postgres', "SELECT archer_geo_verify('$index')");
	if (!defined $standby_verify_works)
	{
		$standby_verify_works = $ret == 0 ? 1 : 0;
		if (!$standby_verify_works)
		{
			like($err, qr/cannot acquire lock mode ShareLock on database objects while recovery is in progress/,
				'archer_geo_verify on a hot standby fails only because it wants ShareLock');
			diag("NOTE: archer_geo_verify cannot run on a hot standby: $err");
		}
	}
	return unless $standby_verify_works;
	is($ret, 0, "$label: archer_geo_verify('$index') works on the standby") or diag($err);
	is($out, $expected, "$label: archer_geo_verify('$index') on the standby counts every row");
}

sub verify_primary
{
	my ($node, $label) = @_;
	verify_one_entry_per_row($node, 'archer_geo_verify', 'geo_archer', 'geo', $label);
	verify_one_entry_per_row($node, 'archer_geo_verify', 'geo_small_archer', 'geo_small', $label);
}

catch_up($primary, $standby);
compare_standby('after build');
verify_standby('after build', 'geo_archer',
	$primary->safe_psql('postgres', 'SELECT count(*) FROM geo'));

# The rows one statement inserts go into the tree sorted, one WAL record
# per leaf they reach (and one per split) instead of one per row: 3,000 rows
# spread over the whole index write far fewer generic records than rows.
# The standby replays and checks those records like the others.
my $lsn0 = $primary->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
$primary->safe_psql('postgres',
	'INSERT INTO geo SELECT 200000 + i, point((i * 7.31) % 360 - 180, (i * 3.77) % 170 - 85) FROM generate_series(1, 3000) i');
my $lsn1 = $primary->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
my ($waldump, $waldump_err) = ('', '');
IPC::Run::run([ 'pg_waldump', '--stats', '-p', $primary->data_dir . '/pg_wal', '-s', $lsn0, '-e', $lsn1 ],
	'>', \$waldump, '2>', \$waldump_err)
  or die "pg_waldump failed: $waldump_err";
my ($generic_records) = $waldump =~ /^Generic\s+(\d+)/m;
ok(defined $generic_records && $generic_records < 1000,
	'a 3,000-row INSERT writes one generic WAL record per leaf, not per row (' .
	  ($generic_records // 'none') . ' records)');

my $pages_at_start = $primary->safe_psql('postgres', "SELECT pg_relation_size('geo_archer') / 8192");
my $small_root_split = 0;
my $next_id = 30000;
for my $round (1 .. $ROUNDS)
{
	my $t0 = time();
	my $n1 = 1500;
	my $n2 = 500;
	my $id1 = $next_id;
	my $id2 = $id1 + $n1;
	$next_id = $id2 + $n2;
	$primary->safe_psql(
		'postgres', qq{
SELECT setseed(0.$round);
INSERT INTO geo
  SELECT $id1 + i, CASE WHEN i % 3 = 0
                        THEN point(2.35 + (random() - 0.5) * 2, 48.85 + (random() - 0.5) * 2)
                        ELSE point(random() * 360 - 180, degrees(asin(random() * 2 - 1))) END
  FROM generate_series(1, $n1) i;
INSERT INTO geo_small
  SELECT $id1 + i, point(10 + (random() - 0.5) * 8, 10 + (random() - 0.5) * 8)
  FROM generate_series(1, 300) i;
DELETE FROM geo WHERE id % 7 = $round % 7;
DELETE FROM geo_small WHERE id % 5 = $round % 5;
});
	# VACUUM cannot run in a transaction block: a statement of its own
	$primary->safe_psql('postgres', 'VACUUM (INDEX_CLEANUP ON) geo');
	$primary->safe_psql('postgres', 'VACUUM (INDEX_CLEANUP ON) geo_small');
	$primary->safe_psql(
		'postgres', qq{
SELECT setseed(0.5$round);
INSERT INTO geo
  SELECT $id2 + i, point(2.35 + (random() - 0.5) * 0.5, 48.85 + (random() - 0.5) * 0.5)
  FROM generate_series(1, $n2) i;
});
	catch_up($primary, $standby);
	compare_standby("round $round");
	verify_primary($primary, "round $round");
	catch_up($primary, $standby);    # verify_primary may have vacuumed again
	verify_standby("round $round", 'geo_archer',
		$primary->safe_psql('postgres', 'SELECT count(*) FROM geo'));
	# the small index has had its root split once it holds more than one leaf
	my $small_pages = $primary->safe_psql('postgres', "SELECT pg_relation_size('geo_small_archer') / 8192");
	$small_root_split = 1 if $small_pages >= 4;
	note(sprintf("round %d took %.1f s", $round, time() - $t0));
}

my $pages_at_end = $primary->safe_psql('postgres', "SELECT pg_relation_size('geo_archer') / 8192");
cmp_ok($pages_at_end, '>', $pages_at_start,
	"inserts split leaves of geo_archer ($pages_at_start -> $pages_at_end pages)");
ok($small_root_split, 'the root of geo_small_archer split (meta page changed)');

my @problems = log_problems($standby);
is(scalar(@problems), 0, 'standby log: no inconsistent page, FATAL or PANIC during redo')
  or diag(join("\n", @problems));

# the unlogged table is not readable during recovery
my ($ret, $out, $err) = $standby->psql('postgres', 'SELECT count(*) FROM geo_unlogged');
isnt($ret, 0, 'unlogged table cannot be read on the standby');

# ---------------------------------------------------------------------------
# promote the standby, keep writing
# ---------------------------------------------------------------------------
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'standby did not finish promotion';

$standby->safe_psql(
	'postgres', q{
SELECT setseed(0.999);
INSERT INTO geo
  SELECT 100000 + i, point(2.35 + (random() - 0.5) * 2, 48.85 + (random() - 0.5) * 2)
  FROM generate_series(1, 3000) i;
INSERT INTO geo_small
  SELECT 100000 + i, point(10 + (random() - 0.5) * 8, 10 + (random() - 0.5) * 8)
  FROM generate_series(1, 1000) i;
DELETE FROM geo WHERE id % 11 = 0;
});
$standby->safe_psql('postgres', 'VACUUM (INDEX_CLEANUP ON) geo');
verify_primary($standby, 'promoted');
for my $name (sort keys %queries)
{
	is(answer($standby, $INDEX_ONLY, $name), answer($standby, $SEQ_ONLY, $name),
		"promoted: $name: index scan = sequential scan");
}

# the unlogged index came up from its init fork: empty, valid, usable
is($standby->safe_psql('postgres', 'SELECT count(*) FROM geo_unlogged'), '0',
	'promoted: unlogged table is empty');
($ret, $out, $err) = $standby->psql('postgres', "SELECT archer_geo_verify('geo_unlogged_archer')");
is($ret, 0, 'promoted: the unlogged index verifies') or diag($err);
is($out, '0', 'promoted: the unlogged index is empty');
$standby->safe_psql('postgres',
	'INSERT INTO geo_unlogged SELECT i, point(i % 360 - 180, (i % 179) - 89) FROM generate_series(1, 2000) i');
is( $standby->safe_psql(
		'postgres', "$INDEX_ONLY SELECT count(*) FROM geo_unlogged WHERE archer_dwithin(p, point(0, 0), 2000000)"),
	$standby->safe_psql(
		'postgres', "$SEQ_ONLY SELECT count(*) FROM geo_unlogged WHERE archer_dwithin(p, point(0, 0), 2000000)"),
	'promoted: the unlogged index takes inserts and answers like a sequential scan');

@problems = log_problems($standby, $PROMOTION_FATAL);
is(scalar(@problems), 0, 'promoted standby log: no inconsistent page, FATAL or PANIC')
  or diag(join("\n", @problems));

# the old primary was never harmed either
verify_primary($primary, 'old primary');

$standby->stop;
$primary->stop;
done_testing();
