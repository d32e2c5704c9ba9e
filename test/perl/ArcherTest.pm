# test/perl/ArcherTest.pm: helpers that several TAP tests share: a
# standby's log and catching up with it, answers compared between nodes and
# plans, the psql scripts of crash tests and their acknowledgements,
# corrupted-page errors, queries as another role, and a VACUUM that
# removed every dead row.
#
# Every helper takes what it works on (nodes, queries, scan settings) as
# arguments: a test's own globals stay in the test.
package ArcherTest;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

our @EXPORT = qw(log_problems catch_up compare_nodes check_answers
  batch_script acked_batches check_error as_role vacuum_dead_rows
  parallel_build_conf);

# postgresql.conf lines for the parallel build tests: 2 workers for any
# table (min_parallel_table_scan_size = 0), and maintenance_work_mem for
# the 32MB a process the planner asks of each, leader included
sub parallel_build_conf
{
	return q{
autovacuum = off
max_worker_processes = 8
max_parallel_workers = 8
max_parallel_maintenance_workers = 2
maintenance_work_mem = 1GB
min_parallel_table_scan_size = 0
};
}

# The lines of $node's log that show redo failed or a process died: an
# inconsistent page, a PANIC, an assertion, a signal, any FATAL but a
# connection refused while the server starts up, and but those matching
# one of @allowed (regular expressions: FATALs the caller expects, such as
# a walreceiver stopped by a promotion).
sub log_problems
{
	my ($node, @allowed) = @_;
	my @bad;
	LINE: for my $line (split /\n/, slurp_file($node->logfile))
	{
		next unless $line =~ /inconsistent page|PANIC|TRAP:|terminated by signal|FATAL/;
		next if $line =~ /FATAL:  the database system is (starting up|not yet accepting connections)/;
		for my $re (@allowed)
		{
			next LINE if $line =~ $re;
		}
		push @bad, $line;
	}
	return @bad;
}

# Wait until $standby has replayed everything $primary wrote; die early if
# the standby's log shows a problem (log_problems, with @allowed).
sub catch_up
{
	my ($primary, $standby, @allowed) = @_;
	my $target = $primary->lsn('insert');
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		my @bad = log_problems($standby, @allowed);
		die "standby redo failed:\n" . join("\n", @bad) . "\n" if @bad;
		my ($ret, $out) = $standby->psql('postgres',
			"SELECT pg_last_wal_replay_lsn() >= '$target'::pg_lsn");
		last if $ret == 0 && $out eq 't';
		Time::HiRes::sleep(0.2);
	}
	$primary->wait_for_catchup($standby, 'replay', $target);
}

# For each case of @$cases, the query $sql->($case) answered by the primary
# by a sequential scan ($seq_scan settings), then by the primary and the
# standby through the index ($index_scan settings);
# $check->($case, $on_primary, $on_standby, $by_seq) makes the test's
# assertions on the three answers.
sub compare_nodes
{
	my ($primary, $standby, $index_scan, $seq_scan, $cases, $sql, $check) = @_;
	for my $case (@$cases)
	{
		my $query = $sql->($case);
		my $by_seq = $primary->safe_psql('postgres', "$seq_scan $query");
		my $on_primary = $primary->safe_psql('postgres', "$index_scan $query");
		my $on_standby = $standby->safe_psql('postgres', "$index_scan $query");
		$check->($case, $on_primary, $on_standby, $by_seq);
	}
}

# One test per query of @$queries ([name, SQL with %t for the table]): on
# $node, the answer with $index_scan settings equals the one with
# $seq_scan settings.
sub check_answers
{
	my ($node, $queries, $index_scan, $seq_scan, $label, $table) = @_;
	for my $q (@$queries)
	{
		my ($name, $sql) = @$q;
		$sql =~ s/%t/$table/g;
		is($node->safe_psql('postgres', "$index_scan $sql"),
			$node->safe_psql('postgres', "$seq_scan $sql"),
			"$label: $table: $name: index = sequential scan");
	}
}

# The psql script of a crash test's background session: SELECT
# setseed($seed), then for k in 1 .. $count the batch $make->(k) returns as
# (id, SQL, SQL to run after the acknowledgement), the batch's SQL followed
# by "\echo ack <id>".  psql runs in autocommit, so a batch acknowledged
# before a crash was committed (acked_batches).
sub batch_script
{
	my ($seed, $count, $make) = @_;
	my $script = "SELECT setseed($seed);\n";
	for my $k (1 .. $count)
	{
		my ($id, $sql, $after) = $make->($k);
		$script .= "$sql;\n\\echo ack $id\n" . ($after // '');
	}
	return $script;
}

# The ids of the batches a background session of batch_script (run with
# IPC::Run: {run}, {stdout}) has acknowledged so far
sub acked_batches
{
	my ($bg) = @_;
	eval { $bg->{run}->pump_nb(); };
	return map { $_ + 0 } ($bg->{stdout} =~ /^ack (\d+)$/mg);
}

# Tests of how a command on a damaged index failed ($ret, $err from psql
# with VERBOSITY=verbose); $c names the damaged {index} and {block}.
# $expect:
#	any          an answer or an ERROR, but the backend lived and $node answers
#	block        XX002 naming the index and block {block}, hint REINDEX
#	corrupt      XX002 naming the index (any block), hint REINDEX
#	wrong_point  XX002: the index holds a wrong point for a row, hint REINDEX
#	missing      XX002: the index has no entry for a row, hint REINDEX
#	bufmgr       the buffer manager's error for a read past the end
#	pg           PostgreSQL's invalid page header error for block {block}
sub check_error
{
	my ($node, $label, $expect, $c, $ret, $err) = @_;
	my $idx = $c->{index};
	my $blk = $c->{block};
	if ($expect eq 'any')
	{
		unlike($err // '', qr/server closed the connection|terminated abnormally|connection to server was lost/,
			"$label: no crash");
		is($node->safe_psql('postgres', 'SELECT 1'), '1', "$label: the server still answers");
		return;
	}
	isnt($ret, 0, "$label: fails");
	if ($expect eq 'block')
	{
		like($err, qr/ERROR:  XX002: index "$idx" contains a corrupted page at block $blk\b/,
			"$label: corrupted page error names the index and block $blk");
	}
	elsif ($expect eq 'corrupt')
	{
		like($err, qr/ERROR:  XX002: index "$idx" contains a corrupted page at block \d+/,
			"$label: corrupted page error names the index");
	}
	elsif ($expect eq 'wrong_point')
	{
		like($err, qr/ERROR:  XX002: index "$idx" holds a wrong point for the row at \(\d+,\d+\)/,
			"$label: wrong point error names the index");
	}
	elsif ($expect eq 'missing')
	{
		like($err, qr/ERROR:  XX002: index "$idx" has no entry for the row at \(\d+,\d+\)/,
			"$label: missing entry error names the index");
	}
	elsif ($expect eq 'bufmgr')
	{
		# (17 reads in vectors: "could not read blocks 40..40 in file")
		like($err, qr/ERROR:  (XX001: could not read blocks? \d+(\.\.\d+)? in file|58P01: could not open file "[^"]*" \(target block \d+\))/,
			"$label: the buffer manager reports the read past the end");
		return;
	}
	elsif ($expect eq 'pg')
	{
		like($err, qr/ERROR:  XX001: invalid page in block $blk of relation /,
			"$label: PostgreSQL reports the invalid page header of block $blk");
		return;
	}
	else
	{
		die "check_error: unknown expectation '$expect'";
	}
	like($err, qr/HINT:  Please REINDEX it\./, "$label: hint says to REINDEX");
}

# psql on $node as $role: ($ret, $stdout, $stderr).  A statement and lock
# timeout keep a test that expects no wait from hanging on one; $sql may
# set its own.
sub as_role
{
	my ($node, $role, $sql) = @_;
	return $node->psql('postgres',
		"SET statement_timeout = '60s'; SET lock_timeout = '2s'; SET ROLE $role; $sql");
}

# VACUUM (INDEX_CLEANUP ON) $table until it removed every dead row, so a
# test may then expect exactly one index entry per row.  A VACUUM that
# cannot take the cleanup lock on a heap page (a checkpointer or bgwriter
# pin, frequent with a tiny shared_buffers after crash recovery) leaves
# that page's dead rows, and with them their index entries, for the next
# one; PostgreSQL reports them as "tuples missed".  Gives up (a failing
# test) after 10 tries.
sub vacuum_dead_rows
{
	my ($node, $table) = @_;
	for my $try (1 .. 10)
	{
		my ($ret, $out, $err) = $node->psql('postgres', "VACUUM (VERBOSE, INDEX_CLEANUP ON) $table");
		die "VACUUM $table failed: $err" if $ret != 0;
		my ($missed) = $err =~ /tuples missed: (\d+) dead/;
		return if !$missed;
		note("VACUUM $table, try $try: $missed dead rows missed (cleanup lock contention)");
		Time::HiRes::sleep(0.1);
	}
	fail("VACUUM $table removed every dead row within 10 tries");
}

1;
