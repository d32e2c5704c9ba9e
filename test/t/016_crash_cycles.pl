# test/t/016_crash_cycles.pl: both access methods and the merge worker
# survive crashes together.
#
# archer is preloaded, so the merge worker runs.  Two tables, each with an
# archer_geo index on a point column and an archer_vector index on an
# avector(8) column: "buffered" with both indexes' insert buffers on (the
# worker merges them past 400 entries, so crashes find them both merging
# and holding entries), "direct" with both off.  Each cycle:
#   - one session inserts acknowledged batches into each table;
#   - another deletes acknowledged slices of earlier batches and runs VACUUM
#     (which merges the buffers too);
#   - a third holds an uncommitted batch;
# and the postmaster is stopped with 'immediate' after a varying number of
# acknowledgements, while all of that (and the worker) is still busy.  After
# crash recovery:
#   - every acknowledged batch is there, less its acknowledged deletes;
#     every other batch or delete is all or nothing; the open one is absent;
#   - radius, polygon and kNN answers through the archer_geo index, and the
#     set of rows an archer_vector scan returns when asked for every row,
#     equal a sequential scan's (so no deleted row comes back through an
#     index and no committed row is missing from one);
#   - after VACUUM, archer_geo_verify and archer_vector_verify count
#     exactly one entry per row (buffer entries included).
#
# 10 cycles by default, 30 with ARCHER_LONG_TESTS=1.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use ArcherTest;

my $CYCLES = $ENV{ARCHER_LONG_TESTS} ? 30 : 10;
my $BATCH = 100;    # rows per batch
my $SENT = 60;      # batches sent per session per cycle (most never run)
my @TABLES = qw(buffered direct);

my $node = PostgreSQL::Test::Cluster->new('cycles');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'archer'
archer.merge_naptime = '100ms'
archer.merge_threshold = 400
# scans asked for every row must return every row: the mode that promises it
archer.vector_order = relaxed
archer.insert_buffer_max_entries = 1000000
autovacuum = off
shared_buffers = 16MB
restart_after_crash = on
});
$node->start;

# a row's vector: 8 dimensions around one of 10 cluster centres
sub vector_sql
{
	my ($id) = @_;
	return "ARRAY(SELECT (($id % 10) * 3 + d % 4) + random() FROM generate_series(1, 8) d)::avector(8)";
}

$node->safe_psql('postgres', 'CREATE EXTENSION archer; SELECT setseed(0.16);');
for my $table (@TABLES)
{
	my $with = $table eq 'buffered' ? 'WITH (insert_buffer = on)' : '';
	$node->safe_psql('postgres', qq{
CREATE TABLE $table (id bigint PRIMARY KEY, batch int NOT NULL, p point, v avector(8));
INSERT INTO $table
  SELECT i, 0, point(random() * 360 - 180, degrees(asin(random() * 2 - 1))), } . vector_sql('i') . qq{
  FROM generate_series(1, 5000) i;
CREATE INDEX ${table}_geo ON $table USING archer_geo (p) $with;
CREATE INDEX ${table}_vec ON $table USING archer_vector (v) $with;
});
}

# batches{table}{batch}: {acked}
my %batches = map { $_ => {} } @TABLES;
# deletes{table}{n}: acknowledged "DELETE ... id % 97 = n" of the batches
# before cycle deletes{table}{n} (the latest such delete)
my %deletes = map { $_ => {} } @TABLES;
# what the crashes caught: acknowledged deletes, buffer entries left behind
my ($deletes_acked, %buffered_at_restart) = (0);

# (ORDER BY id + 0, not id, where the rows come from the table itself: from
# PostgreSQL 16 on an aggregate's ORDER BY id makes a full scan of the
# primary key a candidate, which enable_seqscan = off then prefers to the
# archer index for the large regions)
my @queries = (
	[ whole_sphere => "SELECT count(*) || ':' || md5(string_agg(id::text, ',' ORDER BY id + 0)) FROM %t WHERE archer_dwithin(p, point(0, 0), 20100000)" ],
	[ radius => "SELECT count(*) || ':' || md5(string_agg(id::text, ',' ORDER BY id + 0)) FROM %t WHERE archer_dwithin(p, point(20, 10), 2500000)" ],
	[ polygon => "SELECT count(*) || ':' || md5(string_agg(id::text, ',' ORDER BY id + 0)) FROM %t WHERE archer_within(p, '((170,-40),(-160,-40),(-160,20),(170,20))'::polygon)" ],
	[ knn => "SELECT string_agg(id::text, ',' ORDER BY d, id) FROM (SELECT id, p <-> point(-70, -30) AS d FROM %t ORDER BY p <-> point(-70, -30) LIMIT 200) s" ],
	[ vector_all => "SELECT count(*) || ':' || md5(string_agg(id::text, ',' ORDER BY id)) FROM (SELECT id FROM %t ORDER BY v <-> '[6,7,8,9,6,7,8,9]' LIMIT 1000000) s" ],
);
my $INDEX_ONLY = 'SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexscan = on; SET archer.vector_max_scan_tuples = 1000000;';
my $SEQ_ONLY = 'SET enable_seqscan = on; SET enable_bitmapscan = off; SET enable_indexscan = off;';

for my $table (@TABLES)
{
	for my $q (@queries)
	{
		my ($name, $sql) = @$q;
		$sql =~ s/%t/$table/g;
		like($node->safe_psql('postgres', "$INDEX_ONLY EXPLAIN (COSTS OFF) $sql"),
			qr/Index (Only )?Scan using ${table}_(geo|vec)/, "$table: $name uses an archer index");
	}
}

# inserts: acknowledged batches into both tables in turn.  Each cycle its
# own seed: with "0.$cycle", cycles 2 and 20 drew the same points, and two
# rows at one distance at the kNN query's LIMIT made either answer right.
sub insert_script
{
	my ($cycle) = @_;
	return batch_script(sprintf('0.%03d', $cycle), $SENT, sub {
		my ($k) = @_;
		my $table = $TABLES[ $k % 2 ];
		my $b = $cycle * 1000 + $k;
		$batches{$table}{$b} = { acked => 0 };
		return ("$table $b",
			"INSERT INTO $table SELECT ${b}::bigint * 1000 + i, $b, "
			  . "point(random() * 360 - 180, degrees(asin(random() * 2 - 1))), "
			  . vector_sql("i") . " FROM generate_series(1, $BATCH) i");
	});
}

# deletes of a residue of the earlier batches, and VACUUM now and then
sub delete_script
{
	my ($cycle) = @_;
	my $script = '';
	for my $k (1 .. 8)
	{
		my $table = $TABLES[ $k % 2 ];
		my $n = ($cycle * 8 + $k) % 97;
		$script .= "DELETE FROM $table WHERE batch > 0 AND batch < $cycle * 1000 AND id % 97 = $n;\n"
		  . "\\echo del $table $n\n";
		$script .= "VACUUM (INDEX_CLEANUP ON) $table;\n" if $k % 3 == 0;
		$script .= "SELECT pg_sleep(0.05);\n";
	}
	return $script;
}

sub acks
{
	my ($bg, $kind) = @_;
	eval { $bg->{run}->pump_nb(); };
	return ($bg->{stdout} =~ /^$kind (\w+) (\d+)$/mg);
}

for my $cycle (1 .. $CYCLES)
{
	my $t0 = time();
	my $ins = $node->background_psql('postgres', on_error_stop => 1);
	my $del = $node->background_psql('postgres', on_error_stop => 1);
	my $open = $node->background_psql('postgres', on_error_stop => 1);

	my $open_batch = $cycle * 1000 + 999;
	$open->query_safe("BEGIN; INSERT INTO buffered SELECT ${open_batch}::bigint * 1000 + i, $open_batch, point(0, 0), "
		  . vector_sql('i') . " FROM generate_series(1, $BATCH) i;");
	$batches{buffered}{$open_batch} = { acked => 0 };

	$ins->{stdin} .= insert_script($cycle);
	$del->{stdin} .= delete_script($cycle);

	my $crash_after = 4 + ($cycle * 7) % 11;
	my $deadline = time() + 60;
	my %ins_acked;
	while (time() < $deadline)
	{
		acks($del, 'del');    # keeps feeding the delete session its script
		%ins_acked = reverse acks($ins, 'ack');
		last if keys(%ins_acked) >= $crash_after;
		Time::HiRes::sleep(0.01);
	}
	cmp_ok(scalar(keys %ins_acked), '>=', $crash_after,
		"cycle $cycle: $crash_after batches acknowledged before the crash");
	$node->stop('immediate');
	%ins_acked = reverse acks($ins, 'ack');
	my @del_acked = acks($del, 'del');
	for my $s ($ins, $del, $open)
	{
		eval { $s->quit; };
	}
	$batches{ $ins_acked{$_} }{$_}{acked} = 1 for keys %ins_acked;
	while (my ($table, $n) = splice(@del_acked, 0, 2))
	{
		$deletes{$table}{$n} = $cycle;
		$deletes_acked++;
	}

	$node->start;
	for my $index (qw(buffered_geo buffered_vec))
	{
		$buffered_at_restart{$index} += $node->safe_psql('postgres',
			"SELECT buffer_entries FROM archer_index_stats WHERE index = '$index'::regclass");
	}

	for my $table (@TABLES)
	{
		# this cycle's batches: acknowledged ones complete, others all or
		# nothing (deletes only reach earlier cycles' batches), the open one
		# absent
		my %count = split /[|\n]/, $node->safe_psql('postgres',
			"$SEQ_ONLY SELECT batch, count(*) FROM $table WHERE batch / 1000 = $cycle GROUP BY batch");
		my ($bad_acked, $bad_atomic) = (0, 0);
		for my $b (sort { $a <=> $b } grep { int($_ / 1000) == $cycle } keys %{ $batches{$table} })
		{
			my $n = $count{$b} // 0;
			if ($b % 1000 == 999)
			{
				$bad_acked++, diag("$table: open batch $b has $n rows") if $n != 0;
			}
			elsif ($batches{$table}{$b}{acked})
			{
				$bad_acked++, diag("$table: acknowledged batch $b has $n rows") if $n != $BATCH;
			}
			elsif ($n != 0 && $n != $BATCH)
			{
				$bad_atomic++;
				diag("$table: unacknowledged batch $b has $n rows");
			}
		}
		is($bad_acked, 0, "cycle $cycle: $table: every acknowledged batch is complete, the open one absent");
		is($bad_atomic, 0, "cycle $cycle: $table: every batch is all or nothing");

		# no row an acknowledged delete removed is back
		my $done = join(',', map { "($_, $deletes{$table}{$_})" } sort { $a <=> $b } keys %{ $deletes{$table} });
		is($done ? $node->safe_psql('postgres',
				"$SEQ_ONLY SELECT count(*) FROM $table t JOIN (VALUES $done) d(n, c) "
				  . "ON t.id % 97 = d.n AND t.batch > 0 AND t.batch < d.c * 1000") : '0',
			'0', "cycle $cycle: $table: acknowledged deletes stay done");

		check_answers($node, \@queries, $INDEX_ONLY, $SEQ_ONLY, "cycle $cycle", $table);
	}

	# VACUUM merges and removes dead entries: one entry per row in both indexes
	for my $table (@TABLES)
	{
		vacuum_dead_rows($node, $table);
		my ($ret, $out, $err) = $node->psql('postgres',
			"SELECT archer_geo_verify('${table}_geo') - (SELECT count(*) FROM $table) || '/' || "
			  . "archer_vector_verify('${table}_vec') - (SELECT count(*) FROM $table)");
		is($ret, 0, "cycle $cycle: $table: both verify functions pass") or diag($err);
		is($out, '0/0', "cycle $cycle: $table: after VACUUM one entry per row in both indexes");
	}
	$node->safe_psql('postgres', 'CHECKPOINT') if $cycle % 4 == 0;
	note(sprintf("cycle %d took %.1f s", $cycle, time() - $t0));
}

# the crashes hit work in progress, not an idle server
cmp_ok($deletes_acked, '>', 0, "deletes were acknowledged before crashes ($deletes_acked)");
for my $index (sort keys %buffered_at_restart)
{
	cmp_ok($buffered_at_restart{$index}, '>', 0,
		"$index held buffered entries after crashes ($buffered_at_restart{$index} in all)");
}

my @bad = grep { /PANIC|TRAP:|terminated by signal [^9]|inconsistent page/ } split /\n/, slurp_file($node->logfile);
is(scalar(@bad), 0, 'server log: no PANIC or crash besides the immediate stops') or diag(join("\n", @bad));

$node->stop;
done_testing();
