# test/t/022_verify_as_owner.pl: archer_geo_verify and archer_vector_verify
# evaluate index predicates and expressions as the table's owner.
#
# Verifying rebuilds index tuples from the table, which runs the index's
# predicate and expressions: code the table owner wrote.  When a superuser
# verifies the index, that code must run with the owner's rights, under
# SECURITY_RESTRICTED_OPERATION (it may not SET ROLE), and settings it
# changes must not outlive the call -- as amcheck does since CVE-2022-1552.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('verify_owner');
$node->init;
$node->start;

# probe() reports who runs it and whether it can SET ROLE, and tries to
# change work_mem for the rest of the session.  It is IMMUTABLE, as index
# predicates and expressions must be, so it reports by NOTICE.
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION archer;
CREATE ROLE alice LOGIN;
CREATE SCHEMA alice_s AUTHORIZATION alice;
SET ROLE alice;
CREATE FUNCTION alice_s.probe(id int) RETURNS bool IMMUTABLE LANGUAGE plpgsql AS $$
DECLARE
	runner text := current_user;
	setrole text;
BEGIN
	IF id = 1 THEN
		BEGIN
			PERFORM set_config('role', 'alice', true);
			setrole := 'allowed';
		EXCEPTION WHEN OTHERS THEN
			setrole := 'refused: ' || SQLERRM;
		END;
		PERFORM set_config('work_mem', '77kB', false);
		RAISE NOTICE 'probe user=% set role %', runner, setrole;
	END IF;
	RETURN true;
END $$;
CREATE TABLE alice_s.pts (id int, p point);
INSERT INTO alice_s.pts VALUES (1, point(1, 1)), (2, point(2, 2)), (3, point(3, 3));
CREATE INDEX pts_geo ON alice_s.pts USING archer_geo (p) WHERE alice_s.probe(id);
CREATE TABLE alice_s.vecs (id int, v avector(3));
INSERT INTO alice_s.vecs VALUES (1, '[1,0,0]'), (2, '[0,1,0]'), (3, '[0,0,1]');
CREATE INDEX vecs_vec ON alice_s.vecs USING archer_vector (v) WHERE alice_s.probe(id);
});

foreach my $check (
	[ 'archer_geo_verify',    'alice_s.pts_geo' ],
	[ 'archer_vector_verify', 'alice_s.vecs_vec' ])
{
	my ($func, $index) = @$check;

	# as the superuser (the bootstrap role), in one session
	my ($ret, $out, $err) = $node->psql('postgres',
		"SELECT $func('$index'); SELECT current_user = 'alice', current_setting('work_mem');");
	is($ret, 0, "$func succeeds for a superuser") or diag($err);
	like($err, qr/probe user=alice /,
		"$func runs the index predicate as the table owner")
	  or diag($err);
	like($err,
		qr/set role refused: cannot set parameter "role" within security-restricted operation/,
		"$func runs the index predicate as a security-restricted operation")
	  or diag($err);
	is($out, "3\nf|4MB",
		"$func leaves the caller's role and settings as they were");
}

$node->stop;
done_testing();
