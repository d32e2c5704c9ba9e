# test/t/000_harness.pl: smoke test of the TAP harness and of loading archer.
#
# The extension must work both without and with
# shared_preload_libraries = 'archer'.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

sub log_tail
{
	my ($node, $n) = @_;
	my @lines = split /\n/,
	  PostgreSQL::Test::Utils::slurp_file($node->logfile);
	my $from = @lines > $n ? @lines - $n : 0;
	return join("\n", @lines[ $from .. $#lines ]);
}

my $version_sql =
  "SELECT extversion FROM pg_extension WHERE extname = 'archer'";

my $node = PostgreSQL::Test::Cluster->new('harness');
$node->init;
$node->start;

# 1. without preloading
$node->safe_psql('postgres', 'CREATE EXTENSION archer');
is($node->safe_psql('postgres', $version_sql),
	'0.2.0', 'CREATE EXTENSION archer installs version 0.2.0');

my ($ret, $stdout, $stderr) = $node->psql('postgres', "LOAD 'archer'");
is($ret, 0, "LOAD 'archer' works without shared_preload_libraries")
  or diag($stderr);

# 2. with preloading
$node->stop;
$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'archer'");
my $started = $node->start(fail_ok => 1);
ok($started, "server starts with shared_preload_libraries = 'archer'")
  or diag("server log (last 30 lines):\n" . log_tail($node, 30));

SKIP:
{
	skip 'server did not start with the preload', 3 unless $started;

	is($node->safe_psql('postgres', 'SHOW shared_preload_libraries'),
		'archer', 'archer is preloaded');
	is($node->safe_psql('postgres', $version_sql),
		'0.2.0', 'extension still at 0.2.0 after restart with preload');

	$node->safe_psql('postgres', 'CREATE DATABASE preloaded');
	$node->safe_psql('preloaded', 'CREATE EXTENSION archer');
	is($node->safe_psql('preloaded', $version_sql),
		'0.2.0', 'CREATE EXTENSION archer works with the preload');

	$node->stop;
}

done_testing();
