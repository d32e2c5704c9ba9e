# test/t/025_geo_parallel_build.pl: CREATE INDEX on archer_geo with
# parallel workers (geo_parallel.c) builds the same index as a serial
# build, page for page.
#
# For each column kind (geography, geometry, point) a table of random
# points over the whole globe, with NULLs, duplicates and rows deleted
# but not vacuumed, is indexed twice: with max_parallel_maintenance_workers
# = 0 and = 2.  The build must say that it launched its workers (a DEBUG1
# message), and after a CHECKPOINT the two index files must be equal in
# every byte but each page's LSN, checksum and flags (the first 12 bytes,
# which WAL-logging sets).  The same for CREATE INDEX CONCURRENTLY, whose
# parallel scan carries an MVCC snapshot.  The parallel index verifies and
# answers a radius query as a sequential scan does.
#
# Each participant writes a sorted run of at most its share of
# maintenance_work_mem (at least 32MB: the planner gives fewer workers
# otherwise) and starts another when it fills up; the leader merges them.
# With ARCHER_LONG_TESTS=1 a 3,500,000-row table built with 64MB (one
# worker: 32MB, 1.4 million entries, for each of the two processes) makes
# each participant write two runs.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use ArcherTest;

my $ROWS = $ENV{ARCHER_LONG_TESTS} ? 3_500_000 : 60_000;
my $BUILD_MEM = $ENV{ARCHER_LONG_TESTS} ? '64MB' : '96MB';
my $WORKERS = $ENV{ARCHER_LONG_TESTS} ? 1 : 2;

my $node = PostgreSQL::Test::Cluster->new('gparallel');
$node->init;
$node->append_conf('postgresql.conf', parallel_build_conf());
$node->start;
my $has_postgis = $node->safe_psql('postgres',
	"SELECT count(*) FROM pg_available_extensions WHERE name = 'postgis'");
ok($has_postgis, 'PostGIS is available') or BAIL_OUT('PostGIS is needed for this test');
$node->safe_psql('postgres', 'CREATE EXTENSION postgis; CREATE EXTENSION archer; CREATE EXTENSION archer_postgis');

my %columns = (
	geography => 'geography(Point, 4326)',
	geometry => 'geometry(Point, 4326)',
	point => 'point');
my %value = (
	geography => 'ST_SetSRID(ST_MakePoint(lon, lat), 4326)::geography',
	geometry => 'ST_SetSRID(ST_MakePoint(lon, lat), 4326)',
	point => 'point(lon, lat)');
my %near = (
	geography => q{archer_dwithin(p, 'SRID=4326;POINT(2.35 48.85)'::geography, 2000000)},
	geometry => q{archer_dwithin(p, 'SRID=4326;POINT(2.35 48.85)'::geometry, 2000000)},
	point => q{p <@ archer_cap(point(2.35, 48.85), 2000000)});

# the index file's pages without the 12 bytes WAL-logging sets
sub index_pages
{
	my ($index) = @_;
	my $path = $node->data_dir . '/' . $node->safe_psql('postgres', "SELECT pg_relation_filepath('$index')");
	my $bytes = slurp_file($path);
	my @pages;
	for (my $off = 0; $off < length($bytes); $off += 8192)
	{
		push @pages, substr($bytes, $off + 12, 8192 - 12);
	}
	return \@pages;
}

# build the index with $workers workers; returns the DEBUG1 lines of the build
sub build
{
	my ($table, $index, $workers, $concurrently) = @_;
	my $how = $concurrently ? 'CONCURRENTLY ' : '';
	my ($ret, $out, $err) = $node->psql('postgres',
		"SET max_parallel_maintenance_workers = $workers; SET maintenance_work_mem = '$BUILD_MEM'; "
		  . "SET client_min_messages = debug1; "
		  . "CREATE INDEX $how$index ON $table USING archer_geo (p)");
	is($ret, 0, "$index: CREATE INDEX ${how}with $workers workers succeeds") or diag($err);
	return $err;
}

for my $kind (sort keys %columns)
{
	my $table = "pts_$kind";
	$node->safe_psql(
		'postgres', qq{
SELECT setseed(0.25);
CREATE TABLE $table (id int, p $columns{$kind});
INSERT INTO $table
  SELECT g, CASE WHEN g % 97 = 0 THEN NULL ELSE $value{$kind} END
  FROM (SELECT g, CASE WHEN g % 50 = 0 THEN 2.35 ELSE random() * 360 - 180 END AS lon,
               CASE WHEN g % 50 = 0 THEN 48.85 ELSE degrees(asin(2 * random() - 1)) END AS lat
        FROM generate_series(1, $ROWS) g) s;
ANALYZE $table;
DELETE FROM $table WHERE id % 13 = 0;
});

	build($table, "${table}_serial", 0, 0);
	my $log = build($table, "${table}_parallel", 2, 0);
	like($log, qr/archer_geo build of index "${table}_parallel": $WORKERS of $WORKERS parallel workers launched/,
		"$kind: the build launched $WORKERS workers");
	$node->safe_psql('postgres', 'CHECKPOINT');
	my $serial = index_pages("${table}_serial");
	my $parallel = index_pages("${table}_parallel");
	cmp_ok(scalar(@$serial), '>', 10, "$kind: the index has pages (" . scalar(@$serial) . ')');
	is(scalar(@$parallel), scalar(@$serial), "$kind: the parallel build has as many pages");
	my @differ = grep { $serial->[$_] ne ($parallel->[$_] // '') } 0 .. $#$serial;
	is(scalar(@differ), 0, "$kind: every page is the serial build's")
	  or diag('pages that differ: ' . join(', ', @differ[0 .. ($#differ < 9 ? $#differ : 9)]));

	my $live = $node->safe_psql('postgres', "SELECT count(*) FROM $table WHERE p IS NOT NULL");
	my $all = $node->safe_psql('postgres', "SELECT count(*) FROM $table");
	my ($ret, $out, $err) = $node->psql('postgres', "SELECT archer_geo_verify('${table}_parallel')");
	is($ret, 0, "$kind: archer_geo_verify passes on the parallel build") or diag($err);
	$node->safe_psql('postgres', "DROP INDEX ${table}_serial");
	my $exact = $node->safe_psql('postgres', "SET enable_indexscan = off; SET enable_bitmapscan = off; "
		  . "SELECT count(*) FROM $table WHERE $near{$kind}");
	my $plan = $node->safe_psql('postgres', "SET enable_seqscan = off; "
		  . "EXPLAIN (COSTS OFF) SELECT count(*) FROM $table WHERE $near{$kind}");
	like($plan, qr/${table}_parallel/, "$kind: the radius query uses the parallel build");
	is($node->safe_psql('postgres', "SET enable_seqscan = off; SELECT count(*) FROM $table WHERE $near{$kind}"),
		$exact, "$kind: the radius query finds the $exact rows a sequential scan finds");
	$node->safe_psql('postgres', "DROP INDEX ${table}_parallel");

	# CONCURRENTLY: the dead rows are left out by both
	build($table, "${table}_cserial", 0, 1);
	$log = build($table, "${table}_cparallel", 2, 1);
	like($log, qr/archer_geo build of index "${table}_cparallel": $WORKERS of $WORKERS parallel workers launched/,
		"$kind: CONCURRENTLY launched $WORKERS workers");
	$node->safe_psql('postgres', 'CHECKPOINT');
	$serial = index_pages("${table}_cserial");
	$parallel = index_pages("${table}_cparallel");
	is(scalar(@$parallel), scalar(@$serial), "$kind: CONCURRENTLY, as many pages");
	@differ = grep { $serial->[$_] ne ($parallel->[$_] // '') } 0 .. $#$serial;
	is(scalar(@differ), 0, "$kind: CONCURRENTLY, every page is the serial build's");
	($ret, $out, $err) = $node->psql('postgres', "SELECT archer_geo_verify('${table}_cparallel')");
	is($ret, 0, "$kind: archer_geo_verify passes on the concurrent parallel build") or diag($err);
	note("$kind: $all rows, $live with a point");
}

my @bad = grep { /PANIC|TRAP:|terminated by signal/ } split /\n/, slurp_file($node->logfile);
is(scalar(@bad), 0, 'server log: no PANIC or crash') or diag(join("\n", @bad));
done_testing();
