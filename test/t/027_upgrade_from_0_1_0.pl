# test/t/027_upgrade_from_0_1_0.pl: indexes built by the released archer
# 0.1.0 (the code of commit c24a24d) after an in-place upgrade to this build.
#
# The 0.1.0 build is an install of its own, made by test/build-old.sh (test/run
# runs it, as root in the repo, before the TAP suite, and passes the copy's
# pg_config in ARCHER_OLD_PG_CONFIG).  Without it the test fails: it never
# skips on a missing build (only on a PostgreSQL other than 15, which 0.1.0
# never ran on).
#
# 1. A cluster of the 0.1.0 install: archer 0.1.0 and archer_postgis, tables
#    with indexes of both access methods (archer_geo on point and geography,
#    archer_vector under each metric), two of them with entries still in
#    their insert buffers (no merge worker runs).
# 2. The same data directory under this build's binaries, before and after
#    ALTER EXTENSION archer UPDATE: every answer through the indexes equals a
#    sequential scan's, both verify functions pass (but on a 0.1.0
#    inner-product graph, until VACUUM relinks the nodes it left unreachable),
#    the buffered entries are read; inserts, archer_flush and VACUUM on the
#    old indexes keep them so.
#    Page layout version 3 is the same in both, so nothing asks for REINDEX
#    (018_extension_update.pl checks an index of another layout version).
use strict;
use warnings;

use File::Basename qw(dirname);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# 0.1.0 was built and released for PostgreSQL 15 only (its code does not
# compile against 16's API): on another major version no 0.1.0 index exists
my ($major) = `pg_config --version` =~ /PostgreSQL (\d+)/;
die 'pg_config --version names no PostgreSQL major version' unless defined $major;
plan skip_all => "archer 0.1.0 exists for PostgreSQL 15 only, this is $major" if $major != 15;

my $old_pg_config = $ENV{ARCHER_OLD_PG_CONFIG} // '';
if ($old_pg_config eq '' || !-x $old_pg_config)
{
	fail('the archer 0.1.0 build (c24a24d) is prepared');
	diag($ENV{ARCHER_OLD_ERROR}
		  // "ARCHER_OLD_PG_CONFIG ('$old_pg_config') names no pg_config: run "
		  . 'test/build-old.sh DEST as test/run does, and export ARCHER_OLD_PG_CONFIG');
	done_testing();
	exit 1;
}
my $old_bindir = `$old_pg_config --bindir`;
chomp $old_bindir;
my $old_install = dirname($old_bindir);

my $old = PostgreSQL::Test::Cluster->new('v0_1_0', install_path => $old_install);
$old->init;
$old->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'archer'
archer.merge_workers = 0
autovacuum = off
});
$old->start;

is($old->safe_psql('postgres',
	q{SELECT string_agg(version, ',' ORDER BY version) FROM pg_available_extension_versions WHERE name = 'archer'}),
	'0.1.0', 'the old install offers archer 0.1.0 only');

$old->safe_psql('postgres', q{
CREATE EXTENSION archer;
CREATE EXTENSION archer_postgis CASCADE;
SET archer.insert_buffer_max_entries = 100000;

CREATE TABLE pts (id int PRIMARY KEY, p point);
INSERT INTO pts SELECT i, point((i * 7.31) % 360 - 180, (i * 3.17) % 170 - 85) FROM generate_series(1, 3000) i;
CREATE INDEX pts_p ON pts USING archer_geo (p);

CREATE TABLE ptsb (id int PRIMARY KEY, p point);
INSERT INTO ptsb SELECT i, point((i * 11.7) % 360 - 180, (i * 5.3) % 170 - 85) FROM generate_series(1, 2000) i;
CREATE INDEX ptsb_p ON ptsb USING archer_geo (p) WITH (insert_buffer = on);
INSERT INTO ptsb SELECT i, point((i * 11.7) % 360 - 180, (i * 5.3) % 170 - 85) FROM generate_series(2001, 3000) i;

CREATE TABLE geog (id int PRIMARY KEY, g geography);
INSERT INTO geog SELECT i, format('POINT(%s %s)', (i * 13.1) % 360 - 180, (i * 2.9) % 170 - 85)::geography
  FROM generate_series(1, 2000) i;
CREATE INDEX geog_g ON geog USING archer_geo (g);

CREATE TABLE vecs (id int PRIMARY KEY, v avector(8));
INSERT INTO vecs SELECT i, ARRAY(SELECT ((i * d * 37) % 101) / 10.0 - 5 FROM generate_series(1, 8) d)::avector
  FROM generate_series(1, 2000) i;
CREATE INDEX vecs_l2 ON vecs USING archer_vector (v avector_l2_ops);
CREATE INDEX vecs_ip ON vecs USING archer_vector (v avector_ip_ops);
CREATE INDEX vecs_cos ON vecs USING archer_vector (v avector_cosine_ops);

CREATE TABLE vecsb (id int PRIMARY KEY, v real[]);
INSERT INTO vecsb SELECT i, ARRAY(SELECT ((i * d * 53) % 97) / 9.0 FROM generate_series(1, 6) d)::real[]
  FROM generate_series(1, 1500) i;
CREATE INDEX vecsb_v ON vecsb USING archer_vector (v) WITH (insert_buffer = on);
INSERT INTO vecsb SELECT i, ARRAY(SELECT ((i * d * 53) % 97) / 9.0 FROM generate_series(1, 6) d)::real[]
  FROM generate_series(1501, 2000) i;
});
is($old->safe_psql('postgres', q{SELECT string_agg(index::text || '=' || buffer_entries, ',' ORDER BY index::text)
  FROM archer_index_stats WHERE buffer_entries > 0}),
	'ptsb_p=1000,vecsb_v=500', '0.1.0: the buffered indexes hold their later rows in the insert buffer');

my %paths = map { $_ => $old->safe_psql('postgres', "SELECT pg_relation_filepath('$_')") }
  qw(pts_p ptsb_p geog_g vecs_l2 vecs_ip vecs_cos vecsb_v);
$old->stop;

# This build's binaries on the same data directory (moved, not copied, to
# the new node's place; its postgresql.conf keeps the settings above)
my $new = PostgreSQL::Test::Cluster->new('head');
rename($old->data_dir, $new->data_dir)
  or die 'could not move ' . $old->data_dir . ' to ' . $new->data_dir . ": $!";
$new->append_conf('postgresql.conf', 'port = ' . $new->port . "\n"
	. "# the vector checks ask for every row: the mode that promises all of them\n"
	. "archer.vector_order = relaxed\n");
$new->start;
for my $index (sort keys %paths)
{
	is($new->safe_psql('postgres', "SELECT pg_relation_filepath('$index')"), $paths{$index},
		"$index is the file 0.1.0 wrote");
}

# [label, index that must answer, query]: exact queries compare their rows
# (nearest neighbours: their distances, in order, as rows at the same
# distance may come in any order); an approximate (vector) one asks for
# every row, and compares the set
my @QUERIES = (
	[ 'pts radius', 'pts_p',
	  q{SELECT string_agg(id::text, ',' ORDER BY id) FROM pts WHERE archer_dwithin(p, point(10, 20), 1500000)} ],
	[ 'pts polygon', 'pts_p',
	  q{SELECT string_agg(id::text, ',' ORDER BY id) FROM pts WHERE archer_within(p, '((0,0),(40,0),(40,30),(0,30))'::polygon)} ],
	[ 'pts knn', 'pts_p',
	  q{SELECT string_agg(d::text, ',') FROM (SELECT p <-> point(-70, -30) AS d FROM pts ORDER BY p <-> point(-70, -30) LIMIT 15) s} ],
	[ 'ptsb radius', 'ptsb_p',
	  q{SELECT string_agg(id::text, ',' ORDER BY id) FROM ptsb WHERE archer_dwithin(p, point(-20, 10), 2500000)} ],
	[ 'ptsb knn', 'ptsb_p',
	  q{SELECT string_agg(d::text, ',') FROM (SELECT p <-> point(100, 40) AS d FROM ptsb ORDER BY p <-> point(100, 40) LIMIT 40) s} ],
	[ 'geog radius', 'geog_g',
	  q{SELECT string_agg(id::text, ',' ORDER BY id) FROM geog WHERE archer_dwithin(g, 'POINT(2.35 48.85)'::geography, 3000000)} ],
	[ 'geog knn', 'geog_g',
	  q{SELECT string_agg(d::text, ',') FROM (SELECT g <-> 'POINT(-60 -10)'::geography AS d FROM geog ORDER BY g <-> 'POINT(-60 -10)'::geography LIMIT 20) s} ],
	[ 'vecs l2', 'vecs_l2',
	  q{SELECT string_agg(id::text, ',' ORDER BY id) FROM (SELECT id FROM vecs ORDER BY v <-> '[1,2,3,4,-1,-2,-3,0]' LIMIT 100000) s} ],
	[ 'vecs ip', 'vecs_ip',
	  q{SELECT string_agg(id::text, ',' ORDER BY id) FROM (SELECT id FROM vecs ORDER BY v <#> '[1,2,3,4,-1,-2,-3,0]' LIMIT 100000) s} ],
	[ 'vecs cosine', 'vecs_cos',
	  q{SELECT string_agg(id::text, ',' ORDER BY id) FROM (SELECT id FROM vecs ORDER BY v <=> '[1,2,3,4,-1,-2,-3,0]' LIMIT 100000) s} ],
	[ 'vecsb l2', 'vecsb_v',
	  q{SELECT string_agg(id::text, ',' ORDER BY id) FROM (SELECT id FROM vecsb ORDER BY v <-> '{3,1,4,1,5,9}'::real[] LIMIT 100000) s} ],
);
my $INDEX_ONLY = 'SET enable_seqscan = off; SET enable_bitmapscan = off; SET archer.vector_max_scan_tuples = 100000;';
my $SEQ_ONLY = 'SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;';

# A 0.1.0 inner-product graph can leave live nodes no search reaches (0.1.0
# built it in the wrong space, docs/upgrade.md): the scans above still return
# them (the sweep of the node pages), archer_vector_verify reports them, and
# VACUUM relinks them.  Until the first VACUUM, vecs_ip's verify must count
# every row or report exactly that; after it, every verify must pass.
sub check_all
{
	my ($label, $vacuumed) = @_;
	for my $q (@QUERIES)
	{
		my ($name, $index, $sql) = @$q;
		my $plan = $new->safe_psql('postgres', "$INDEX_ONLY EXPLAIN (COSTS OFF) $sql");
		like($plan, qr/\b$index\b/, "$label: $name uses $index");
		my $by_index = $new->safe_psql('postgres', "$INDEX_ONLY $sql");
		my $by_seq = $new->safe_psql('postgres', "$SEQ_ONLY $sql");
		isnt($by_seq, '', "$label: $name has rows");
		is($by_index, $by_seq, "$label: $name through $index equals a sequential scan");
	}
	is($new->safe_psql('postgres', q{SELECT
	    archer_geo_verify('pts_p') = (SELECT count(*) FROM pts)
	AND archer_geo_verify('ptsb_p') = (SELECT count(*) FROM ptsb)
	AND archer_geo_verify('geog_g') = (SELECT count(*) FROM geog)
	AND archer_vector_verify('vecs_l2') = (SELECT count(*) FROM vecs)
	AND archer_vector_verify('vecs_cos') = (SELECT count(*) FROM vecs)
	AND archer_vector_verify('vecsb_v') = (SELECT count(*) FROM vecsb)}),
		't', "$label: archer_geo_verify and archer_vector_verify pass on every index but vecs_ip, counting every row");
	my $rows = $new->safe_psql('postgres', 'SELECT count(*) FROM vecs');
	my ($ret, $out, $err) = $new->psql('postgres', q{SELECT archer_vector_verify('vecs_ip')});
	if ($vacuumed)
	{
		is("$ret|$out", "0|$rows", "$label: archer_vector_verify('vecs_ip') passes, counting every row")
		  or diag($err);
	}
	else
	{
		ok(($ret == 0 && $out eq $rows)
			  || ($ret == 3 && $err =~ /ERROR:  index "vecs_ip" has \d+ live nodes that no search reaches/),
			"$label: archer_vector_verify('vecs_ip') counts every row or reports the nodes 0.1.0 left unreachable")
		  or diag("exit $ret, output '$out', error: $err");
	}
}

# the 0.1.0 SQL objects on this build's library: what a DBA has between
# installing the package and ALTER EXTENSION UPDATE
is($new->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'archer'}), '0.1.0',
	'after the switch: still archer 0.1.0');
check_all('0.1.0 SQL, new library', 0);

$new->safe_psql('postgres', 'ALTER EXTENSION archer UPDATE; ALTER EXTENSION archer_postgis UPDATE');
is($new->safe_psql('postgres',
	q{SELECT string_agg(extname || ' ' || extversion, ', ' ORDER BY extname) FROM pg_extension WHERE extname LIKE 'archer%'}),
	'archer 0.2.0, archer_postgis 0.1.0', 'ALTER EXTENSION UPDATE: archer 0.2.0 (archer_postgis unchanged)');
is($new->safe_psql('postgres', q{SELECT string_agg(index::text || '=' || buffer_entries, ',' ORDER BY index::text)
  FROM archer_index_stats WHERE buffer_entries > 0}),
	'ptsb_p=1000,vecsb_v=500', 'after the update: the insert buffers still hold 0.1.0\'s entries');
check_all('updated to 0.2.0', 0);

# writes on the old indexes: inserts (into the buffers too), then deletes, a
# merge of 0.1.0's buffer entries, VACUUM
$new->safe_psql('postgres', q{
SET archer.insert_buffer_max_entries = 100000;
INSERT INTO pts SELECT i, point((i * 1.91) % 360 - 180, (i * 0.77) % 170 - 85) FROM generate_series(3001, 3500) i;
INSERT INTO ptsb SELECT i, point((i * 11.7) % 360 - 180, (i * 5.3) % 170 - 85) FROM generate_series(3001, 3300) i;
INSERT INTO geog SELECT i, format('POINT(%s %s)', (i * 3.7) % 360 - 180, (i * 1.3) % 170 - 85)::geography
  FROM generate_series(2001, 2300) i;
INSERT INTO vecs SELECT i, ARRAY(SELECT ((i * d * 41) % 103) / 10.0 - 5 FROM generate_series(1, 8) d)::avector
  FROM generate_series(2001, 2400) i;
INSERT INTO vecsb SELECT i, ARRAY(SELECT ((i * d * 53) % 97) / 9.0 FROM generate_series(1, 6) d)::real[]
  FROM generate_series(2001, 2200) i;
});
check_all('after inserts', 0);
# (verify counts the entries of deleted rows too, until VACUUM removes them)
$new->safe_psql('postgres', q{
DELETE FROM pts WHERE id % 7 = 0;
DELETE FROM ptsb WHERE id % 4 = 0;
DELETE FROM vecs WHERE id % 5 = 0;
DELETE FROM vecsb WHERE id % 9 = 0;
SELECT archer_flush('ptsb_p'), archer_flush('vecsb_v');
VACUUM pts, ptsb, geog, vecs, vecsb;
});
is($new->safe_psql('postgres', q{SELECT count(*) FROM archer_index_stats WHERE buffer_entries > 0}), '0',
	'archer_flush merged every buffered entry');
check_all('after deletes, archer_flush and VACUUM', 1);

$new->stop;
done_testing();
