# test/t/023_stats_privileges.pl: who sees which rows of archer_index_stats.
#
# archer_index_stats reads each index's meta page under a lock.  Like the
# pg_stat_* views it shows a role only the indexes it owns (or is a member
# of the owner of), and every index to superusers and pg_read_all_stats.
# Other indexes are left out before any lock is taken: a role that owns
# nothing gets no rows at once, even while someone else holds an
# ACCESS EXCLUSIVE lock on an archer index.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use ArcherTest;

my $node = PostgreSQL::Test::Cluster->new('stats_priv');
$node->init;
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION archer;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE ROLE carol LOGIN IN ROLE pg_read_all_stats;
CREATE SCHEMA alice_s AUTHORIZATION alice;
GRANT USAGE ON SCHEMA alice_s TO bob, carol;
SET ROLE alice;
CREATE TABLE alice_s.pts (id int, p point);
INSERT INTO alice_s.pts SELECT i, point(i, i % 80) FROM generate_series(1, 100) i;
CREATE INDEX pts_geo ON alice_s.pts USING archer_geo (p);
CREATE TABLE alice_s.vecs (id int, v avector(3));
INSERT INTO alice_s.vecs VALUES (1, '[1,0,0]'), (2, '[0,1,0]');
CREATE INDEX vecs_vec ON alice_s.vecs USING archer_vector (v);
});

my $list = 'SELECT index FROM archer_index_stats ORDER BY 1::text';
my ($ret, $out, $err) = as_role($node, 'alice', $list);
is($out, "alice_s.pts_geo\nalice_s.vecs_vec", 'the owner sees her indexes');
($ret, $out, $err) = as_role($node, 'carol', $list);
is($out, "alice_s.pts_geo\nalice_s.vecs_vec", 'pg_read_all_stats sees every index');
($ret, $out, $err) = $node->psql('postgres', $list);
is($out, "alice_s.pts_geo\nalice_s.vecs_vec", 'a superuser sees every index');
($ret, $out, $err) = as_role($node, 'bob', 'SELECT count(*) FROM archer_index_stats');
is($out, '0', 'a role owning nothing sees no rows');

# alice holds ACCESS EXCLUSIVE on her index (and table)
my $ddl = $node->background_psql('postgres');
$ddl->query_safe("SET ROLE alice; BEGIN; REINDEX INDEX alice_s.pts_geo;");

($ret, $out, $err) = as_role($node, 'bob', 'SELECT count(*) FROM archer_index_stats');
is($out, '0', 'a role owning nothing gets its empty answer without waiting for a lock')
  or diag($err);
($ret, $out, $err) = as_role($node, 'bob', "SELECT * FROM archer_index_stats('alice_s.pts_geo')");
like($err, qr/permission denied for index pts_geo/,
	'the function refuses a stranger before waiting for a lock')
  or diag($err);

$ddl->query_safe('ROLLBACK');
$ddl->quit;

($ret, $out, $err) = as_role($node, 'bob', "SELECT * FROM archer_index_stats('alice_s.vecs_vec')");
like($err, qr/permission denied for index vecs_vec/,
	'the function refuses a stranger the figures of an unlocked index');
($ret, $out, $err) = as_role($node, 'carol',
	"SELECT access_method FROM archer_index_stats('alice_s.vecs_vec')");
is($out, 'archer_vector', 'pg_read_all_stats may call the function on any index');

$node->stop;
done_testing();
