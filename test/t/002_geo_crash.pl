# test/t/002_geo_crash.pl: archer_geo survives crashes.
#
# Each cycle: two sessions insert batches of points (autocommit, one
# acknowledgement per batch), one of them also runs VACUUM, a third holds
# an uncommitted transaction; the server is stopped with 'immediate' while
# they are still running.  After crash recovery:
#   - every acknowledged batch is there, complete; every other batch is
#     all there or not at all; the uncommitted one is not;
#   - index answers == sequential scan answers for a fixed query set
#     (radius, polygon, kNN, and a cap covering the whole sphere, so every
#     committed row is found through the index);
#   - archer_geo_verify passes (entries of aborted inserts stay until
#     VACUUM; after VACUUM there is exactly one entry per row);
#   - the unlogged table's index is empty but valid, and usable again.
# Between cycles some rows are deleted and vacuumed.  Besides small tables
# (one built with fillfactor 100, so every insert splits), two big ones
# are built so that their first insert splits the root at level 1
# (crash_root) and an internal page below a level-2 root (crash_deep).
#
# 5 cycles by default, 30 with ARCHER_LONG_TESTS=1.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use ArcherTest;

my $CYCLES = $ENV{ARCHER_LONG_TESTS} ? 30 : 5;
my $BATCH = 200;    # rows per batch
my $SENT = 40;      # batches sent per session per cycle (most never run)

my $node = PostgreSQL::Test::Cluster->new('crash');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
autovacuum = off
shared_buffers = 8MB
});
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION archer;
CREATE TABLE crash (id bigint PRIMARY KEY, batch int NOT NULL, p point);
SELECT setseed(0.31);
-- batch 0: 10000 rows, uniform on the sphere, a few NULLs
INSERT INTO crash
  SELECT i, 0, CASE WHEN i % 1000 = 0 THEN NULL
                    ELSE point(random() * 360 - 180, degrees(asin(random() * 2 - 1))) END
  FROM generate_series(1, 10000) i;
CREATE INDEX crash_archer ON crash USING archer_geo (p);
-- every leaf full from the start: every insert takes the split path
CREATE TABLE crash_full (id bigint PRIMARY KEY, batch int NOT NULL, p point);
INSERT INTO crash_full SELECT id, batch, p FROM crash;
CREATE INDEX crash_full_archer ON crash_full USING archer_geo (p) WITH (fillfactor = 100);
CREATE UNLOGGED TABLE crash_unlogged (id int, p point);
CREATE INDEX crash_unlogged_archer ON crash_unlogged USING archer_geo (p);
CREATE EXTENSION pageinspect;
-- fillfactor 100 packs 339 entries per leaf and 339 downlinks per internal
-- page.  crash_root: 339 full leaves under one full root at level 1, so the
-- first insert splits the root.  crash_deep: 678 full leaves under two
-- full internal pages under a root at level 2, so the first insert splits
-- an internal page that is not the root.
CREATE TABLE crash_root (id bigint PRIMARY KEY, batch int NOT NULL, p point);
INSERT INTO crash_root SELECT i, 0, point(random() * 360 - 180, degrees(asin(random() * 2 - 1)))
  FROM generate_series(1, 339 * 339) i;
CREATE INDEX crash_root_archer ON crash_root USING archer_geo (p) WITH (fillfactor = 100);
CREATE TABLE crash_deep (id bigint PRIMARY KEY, batch int NOT NULL, p point);
INSERT INTO crash_deep SELECT i, 0, point(random() * 360 - 180, degrees(asin(random() * 2 - 1)))
  FROM generate_series(1, 2 * 339 * 339) i;
CREATE INDEX crash_deep_archer ON crash_deep USING archer_geo (p) WITH (fillfactor = 100);
});

# rows expected per batch: $BATCH minus those of the deletes that ran after
# the batch was committed
my %batches = (0 => { table => 'crash', expected => 10000 });

# The fixed query set, run through the index and by sequential scan.
# (ORDER BY id + 0, not id: from PostgreSQL 16 on an aggregate's ORDER BY id
# makes a full scan of the primary key a candidate, which enable_seqscan =
# off then prefers to the archer index for the large regions)
my @queries = (
	[ whole_sphere => "SELECT count(*) || ':' || md5(string_agg(id::text, ',' ORDER BY id + 0)) FROM %t WHERE archer_dwithin(p, point(0, 0), 20100000)" ],
	[ paris => "SELECT string_agg(id::text, ',' ORDER BY id + 0) FROM %t WHERE archer_dwithin(p, point(2.35, 48.85), 80000)" ],
	[ big_radius => "SELECT count(*) || ':' || md5(string_agg(id::text, ',' ORDER BY id + 0)) FROM %t WHERE p <@ archer_cap(point(-60, -20), 3000000)" ],
	[ polygon => "SELECT string_agg(id::text, ',' ORDER BY id + 0) FROM %t WHERE archer_within(p, '((1.5,48),(3.5,48),(3.5,49.7),(1.5,49.7))'::polygon)" ],
	[ polygon_antimeridian => "SELECT count(*) || ':' || md5(string_agg(id::text, ',' ORDER BY id + 0)) FROM %t WHERE p <@@ '((170,-30),(-170,-30),(-170,10),(170,10))'::polygon" ],
	[ knn_paris => "SELECT string_agg(id::text, ',' ORDER BY d, id) FROM (SELECT id, p <-> point(2.35, 48.85) AS d FROM %t ORDER BY p <-> point(2.35, 48.85) LIMIT 300) s" ],
	[ knn_all => "SELECT count(*) || ':' || count(d) FROM (SELECT p <-> point(100, -45) AS d FROM %t ORDER BY p <-> point(100, -45)) s" ],
);
my $INDEX_ONLY = 'SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexscan = on;';
my $SEQ_ONLY = 'SET enable_seqscan = on; SET enable_bitmapscan = off; SET enable_indexscan = off;';

my @TABLES = qw(crash crash_full crash_root crash_deep);

# meta page: root block at byte 104, root level at 108; page flags at 8188
sub root_level
{
	my ($index) = @_;
	return $node->safe_psql('postgres',
		"SELECT get_byte(r, 108) + 256 * get_byte(r, 109) FROM get_raw_page('$index', 0) r");
}
sub internal_pages
{
	my ($index) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM generate_series(1, pg_relation_size('$index') / 8192 - 1) b "
		  . "WHERE get_byte(get_raw_page('$index', b::int), 8188) & 4 <> 0");
}
is(root_level('crash_root_archer'), '1', 'crash_root_archer starts with its root at level 1');
is(root_level('crash_deep_archer'), '2', 'crash_deep_archer starts with its root at level 2');
is(internal_pages('crash_deep_archer'), '3', 'crash_deep_archer starts with 3 internal pages');

# the plans really use the index
for my $table (@TABLES)
{
	for my $q (@queries)
	{
		my ($name, $sql) = @$q;
		$sql =~ s/%t/$table/g;
		like($node->safe_psql('postgres', "$INDEX_ONLY EXPLAIN (COSTS OFF) $sql"),
			qr/Index (Only )?Scan using ${table}_archer/, "$table: $name uses the archer_geo index");
	}
}

# the script one session runs: batches of inserts, each acknowledged
sub insert_batches
{
	my ($cycle, $session, $table, $with_vacuum) = @_;
	return batch_script("0.$cycle$session", $SENT, sub {
		my ($k) = @_;
		my $b = $cycle * 1000 + $session * 100 + $k;
		$batches{$b} = { table => $table, expected => undef, acked => 0 };
		# half the rows near Paris (contention on the same leaves), half anywhere
		return ($b,
			"INSERT INTO $table SELECT ${b}::bigint * 1000 + i, $b, CASE WHEN i % 2 = 0 "
			  . "THEN point(2.35 + (random() - 0.5), 48.85 + (random() - 0.5)) "
			  . "ELSE point(random() * 360 - 180, degrees(asin(random() * 2 - 1))) END "
			  . "FROM generate_series(1, $BATCH) i",
			$with_vacuum && $k % 4 == 0 ? "VACUUM (INDEX_CLEANUP ON) $table;\n" : '');
	});
}

for my $cycle (1 .. $CYCLES)
{
	my $t0 = time();

	# the unlogged table gets rows again, in several splits' worth
	$node->safe_psql('postgres',
		"INSERT INTO crash_unlogged SELECT i, point(i % 360 - 180, (i % 179) - 89) FROM generate_series(1, 3000) i");

	my $s1 = $node->background_psql('postgres', on_error_stop => 1);
	my $s2 = $node->background_psql('postgres', on_error_stop => 1);
	my $s3 = $node->background_psql('postgres', on_error_stop => 1);

	# an uncommitted transaction: its batch must never show up
	my $open_batch = $cycle * 1000 + 999;
	$s3->query_safe("BEGIN; INSERT INTO crash SELECT ${open_batch}::bigint * 1000 + i, $open_batch, point(i % 360 - 180, 0) FROM generate_series(1, $BATCH) i;");
	$batches{$open_batch} = { table => 'crash', expected => 0, acked => 0, open => 1 };

	$s1->{stdin} .= insert_batches($cycle, 1, 'crash', 0);
	# session 2 writes to a different table each cycle
	my $s2_table = (qw(crash_full crash_deep crash_root crash))[ ($cycle - 1) % 4 ];
	$s2->{stdin} .= insert_batches($cycle, 2, $s2_table, 1);

	# crash after a varying number of batches, while both are still busy,
	# and not before session 2 committed one (the checks of crash_root's
	# and crash_deep's splits need a batch in their cycle: on a loaded
	# host session 1 alone could reach the count first)
	my $crash_after = 3 + ($cycle * 7) % 9;
	my $deadline = time() + 60;
	my @acked;
	my @acked2;
	while (time() < $deadline)
	{
		@acked2 = acked_batches($s2);
		@acked = (acked_batches($s1), @acked2);
		last if @acked >= $crash_after && @acked2 >= 1;
		Time::HiRes::sleep(0.01);
	}
	cmp_ok(scalar(@acked), '>=', $crash_after, "cycle $cycle: $crash_after batches acknowledged before the crash");
	cmp_ok(scalar(@acked2), '>=', 1, "cycle $cycle: session 2 ($s2_table) had a batch acknowledged before the crash");
	$node->stop('immediate');
	# what was acknowledged up to the crash counts as committed
	@acked = (acked_batches($s1), acked_batches($s2));
	for my $s ($s1, $s2, $s3)
	{
		eval { $s->quit; };
	}
	$batches{$_}{acked} = 1 for @acked;

	$node->start;

	# every acknowledged batch complete, others all or nothing
	my %count = split /[|\n]/, $node->safe_psql('postgres',
		"$SEQ_ONLY SELECT batch, count(*) FROM crash GROUP BY batch "
		  . join(' ', map { "UNION ALL SELECT batch, count(*) FROM $_ WHERE batch > 0 GROUP BY batch" }
			  grep { $_ ne 'crash' } @TABLES));
	my ($bad_acked, $bad_atomic) = (0, 0);
	for my $b (sort { $a <=> $b } keys %batches)
	{
		my $info = $batches{$b};
		my $n = $count{$b} // 0;
		if (defined $info->{expected})
		{
			if ($n != $info->{expected})
			{
				$bad_acked++;
				diag("batch $b: $n rows, expected $info->{expected}");
			}
		}
		elsif ($info->{acked})
		{
			$bad_acked++, diag("acknowledged batch $b: $n rows, expected $BATCH") if $n != $BATCH;
			$info->{expected} = $n;
		}
		else
		{
			$bad_atomic++, diag("unacknowledged batch $b: $n rows") if $n != 0 && $n != $BATCH;
			$info->{expected} = $n;
		}
	}
	my $cycle_batches = grep { int($_ / 1000) == $cycle } keys %batches;
	my $committed = grep { int($_ / 1000) == $cycle && $batches{$_}{expected} } keys %batches;
	note("cycle $cycle: sent $cycle_batches batches, " . scalar(@acked)
		  . " acknowledged, $committed committed");
	is($bad_acked, 0, "cycle $cycle: every committed batch is complete, the open one is absent");
	is($bad_atomic, 0, "cycle $cycle: every batch is all or nothing");

	# the big tables only when they were written to
	my @check = grep { $_ eq 'crash' || $_ eq 'crash_full' || $_ eq $s2_table } @TABLES;
	check_answers($node, \@queries, $INDEX_ONLY, $SEQ_ONLY, "cycle $cycle", $_) for @check;
	for my $table (@check)
	{
		my $index = "${table}_archer";
		my ($ret, $out, $err) = $node->psql('postgres',
			"SELECT archer_geo_verify('$index') || '/' || (SELECT count(*) FROM $table)");
		is($ret, 0, "cycle $cycle: archer_geo_verify('$index') passes") or diag($err);
		my ($entries, $rows) = split m{/}, $out // '';
		# entries of aborted inserts stay until VACUUM
		cmp_ok($entries // 0, '>=', $rows // 1, "cycle $cycle: $index has at least one entry per row");
	}

	# the unlogged index: reset to its init fork, empty and valid
	is($node->safe_psql('postgres', 'SELECT count(*) FROM crash_unlogged'), '0',
		"cycle $cycle: unlogged table is empty after the crash");
	my ($ret, $out, $err) = $node->psql('postgres', "SELECT archer_geo_verify('crash_unlogged_archer')");
	is($ret, 0, "cycle $cycle: unlogged index verifies after the crash") or diag($err);
	is($out, '0', "cycle $cycle: unlogged index is empty after the crash");
	is($node->safe_psql('postgres', "$INDEX_ONLY SELECT count(*) FROM crash_unlogged WHERE archer_dwithin(p, point(0, 0), 20100000)"),
		'0', "cycle $cycle: unlogged index scan finds nothing");

	# deletes and a vacuum before the next cycle: "id % 50 = cycle" removes
	# 4 rows of every 200-row batch and 200 of batch 0, a new residue
	# every cycle
	my $d = $cycle % 50;
	$node->safe_psql('postgres', "DELETE FROM crash WHERE id % 50 = $d");
	$node->safe_psql('postgres', "DELETE FROM $_ WHERE batch > 0 AND id % 50 = $d")
	  for grep { $_ ne 'crash' } @TABLES;
	vacuum_dead_rows($node, $_) for @check;
	# VACUUM removed the entries of deleted and of aborted rows
	for my $table (@check)
	{
		my $index = "${table}_archer";
		is($node->safe_psql('postgres', "SELECT archer_geo_verify('$index') - (SELECT count(*) FROM $table)"),
			'0', "cycle $cycle: after VACUUM $index has exactly one entry per row");
	}
	for my $b (keys %batches)
	{
		my $info = $batches{$b};
		next if $b == 0 || !$info->{expected};
		$info->{expected} -= $BATCH / 50;
	}
	$batches{0}{expected} -= 10000 / 50;
	$node->safe_psql('postgres', 'CHECKPOINT') if $cycle % 3 == 0;
	note(sprintf("cycle %d took %.1f s", $cycle, time() - $t0));
}

# after all that, the index still answers like a sequential scan with the
# unlogged table refilled
$node->safe_psql('postgres',
	"INSERT INTO crash_unlogged SELECT i, point(i % 360 - 180, (i % 179) - 89) FROM generate_series(1, 3000) i");
is($node->safe_psql('postgres', "$INDEX_ONLY SELECT count(*) FROM crash_unlogged WHERE archer_dwithin(p, point(10, 10), 3000000)"),
	$node->safe_psql('postgres', "$SEQ_ONLY SELECT count(*) FROM crash_unlogged WHERE archer_dwithin(p, point(10, 10), 3000000)"),
	'unlogged index works after the crashes');
my ($ret, $out, $err) = $node->psql('postgres', "SELECT archer_geo_verify('crash_unlogged_archer')");
is($out, '3000', 'unlogged index verifies with every row') or diag($err);

# the splits at the upper levels did happen
is(root_level('crash_root_archer'), '2', 'the root of crash_root_archer split: root at level 2');
cmp_ok(internal_pages('crash_deep_archer'), '>', 3, 'an internal page of crash_deep_archer split');
# a last look at every table, and VACUUM + verify
for my $table (@TABLES)
{
	check_answers($node, \@queries, $INDEX_ONLY, $SEQ_ONLY, 'at the end', $table);
	vacuum_dead_rows($node, $table);
	is($node->safe_psql('postgres', "SELECT archer_geo_verify('${table}_archer') - (SELECT count(*) FROM $table)"),
		'0', "at the end: ${table}_archer verifies with one entry per row");
}

my @bad = grep { /PANIC|TRAP:|terminated by signal|inconsistent page/ } split /\n/, slurp_file($node->logfile);
is(scalar(@bad), 0, 'server log: no PANIC or crash besides the immediate stops') or diag(join("\n", @bad));

$node->stop;
done_testing();
