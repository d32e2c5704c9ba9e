# test/perl/ArcherVerify.pm: an index holds exactly one entry per row
# after VACUUM.
package ArcherVerify;

use strict;
use warnings;

use Exporter 'import';
use Test::More;

our @EXPORT = qw(verify_one_entry_per_row);

# Run $verify_fn (archer_geo_verify or archer_vector_verify) on $index and
# check, with two assertions, that it passes and counts the rows of $table.
# VACUUM leaves a dead row and its index entry behind when it cannot get a
# cleanup lock on the heap page (the checkpointer or bgwriter writing it;
# PG15's lazy_scan_noprune), so while the index holds more entries than
# the table has rows the table is vacuumed again (up to 5 times); fewer
# entries fail at once.
sub verify_one_entry_per_row
{
	my ($node, $verify_fn, $index, $table, $label) = @_;
	my ($ret, $out, $err, $nrows);
	for my $try (0 .. 5)
	{
		($ret, $out, $err) = $node->psql('postgres', "SELECT $verify_fn('$index')");
		$nrows = $node->safe_psql('postgres', "SELECT count(*) FROM $table");
		last if $ret != 0 || $out eq '' || $out <= $nrows || $try == 5;
		note("$label: $index has $out entries for $nrows rows; VACUUM again");
		$node->safe_psql('postgres', "VACUUM (INDEX_CLEANUP ON) $table");
	}
	is($ret, 0, "$label: $verify_fn('$index') passes") or diag($err);
	is($out, $nrows, "$label: $index has an entry for every row");
	return;
}

1;
