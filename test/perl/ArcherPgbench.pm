# test/perl/ArcherPgbench.pm: pgbench clients in the background of a TAP
# test, so that the test can query while they run.
package ArcherPgbench;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(start_pgbench finish_pgbench);

# Start pgbench -n -T $duration on $node's postgres database with $script
# (written to a file named after $name) and the extra @options; returns the
# run for finish_pgbench.
sub start_pgbench
{
	my ($node, $name, $script, $duration, @options) = @_;
	my $file = $node->basedir . "/$name.sql";
	open(my $fh, '>', $file) or die "could not write $file: $!";
	print $fh $script;
	close($fh);
	my $run = { name => $name, out => '', err => '' };
	$run->{handle} = IPC::Run::start(
		[ 'pgbench', '-n', '-T', $duration, @options, '-f', $file,
		  '-h', $node->host, '-p', $node->port, 'postgres' ],
		'>', \$run->{out}, '2>', \$run->{err},
		IPC::Run::timeout($duration + $PostgreSQL::Test::Utils::timeout_default));
	return $run;
}

# Wait for the run; one test that pgbench exited 0; returns its stdout
sub finish_pgbench
{
	my ($run) = @_;
	my $ok = eval { $run->{handle}->finish; 1 };
	is($ok ? $run->{handle}->result(0) : "failed: $@", 0, "pgbench $run->{name} exits 0")
	  or diag("stdout:\n$run->{out}\nstderr:\n$run->{err}");
	return $run->{out};
}

1;
