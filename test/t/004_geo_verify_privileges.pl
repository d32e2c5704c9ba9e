# test/t/004_geo_verify_privileges.pl: who may run archer_geo_verify, and
# which locks it takes.
#
# archer_geo_verify(index) is for the index's owner.  Anybody else must be
# refused at once: in particular before the function queues for its
# ShareLock on the table, or any role that can name an index could stall
# every writer of the table (a ShareLock request waiting behind one open
# writer blocks all later writers).  The owner's verify does wait for
# writers (it needs a stable table to compare with).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use ArcherTest;

my $node = PostgreSQL::Test::Cluster->new('verify_priv');
$node->init;
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION archer;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE SCHEMA alice_s AUTHORIZATION alice;
GRANT USAGE ON SCHEMA alice_s TO bob;
SET ROLE alice;
CREATE TABLE alice_s.pts (id int, p point);
INSERT INTO alice_s.pts SELECT i, point(i % 360 - 180, (i % 170) - 85) FROM generate_series(1, 3000) i;
CREATE INDEX pts_archer ON alice_s.pts USING archer_geo (p);
});

# no concurrent activity: the owner verifies, bob is refused
my ($ret, $out, $err) = as_role($node, 'alice', "SELECT archer_geo_verify('alice_s.pts_archer')");
is($out, '3000', 'the owner verifies the index');
($ret, $out, $err) = as_role($node, 'bob', "SELECT archer_geo_verify('alice_s.pts_archer')");
like($err, qr/must be owner of index pts_archer/, 'a non-owner is refused');

# alice has a write in progress
my $writer = $node->background_psql('postgres');
$writer->query_safe("SET ROLE alice; BEGIN; INSERT INTO alice_s.pts VALUES (0, point(1, 1));");

# bob is still refused, at once, instead of waiting for the table lock
($ret, $out, $err) = as_role($node, 'bob',
	"SET lock_timeout = '2s'; SELECT archer_geo_verify('alice_s.pts_archer')");
like($err, qr/must be owner of index pts_archer/,
	'a non-owner is refused without first waiting for a lock on the table')
  or diag('got: ' . $err);
unlike($err, qr/lock timeout/, 'the non-owner did not queue for the ShareLock');

# the owner's verify waits for the writer (ShareLock), as documented
($ret, $out, $err) = as_role($node, 'alice',
	"SET lock_timeout = '500ms'; SELECT archer_geo_verify('alice_s.pts_archer')");
like($err, qr/canceling statement due to lock timeout/,
	"the owner's verify waits for the open write");

$writer->query_safe('COMMIT');
$writer->quit;

($ret, $out, $err) = as_role($node, 'alice', "SELECT archer_geo_verify('alice_s.pts_archer')");
is($out, '3001', 'after the commit the owner verifies every row');

$node->stop;
done_testing();
