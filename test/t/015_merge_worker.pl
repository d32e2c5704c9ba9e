# test/t/015_merge_worker.pl: the background merge worker, and merging
# without it.
#
# Preloaded cluster (shared_preload_libraries = 'archer', short nap, low
# threshold, sessions never merge themselves):
# 1. the launcher is in pg_stat_activity with a wait event while idle;
# 2. concurrent inserters into a table with a buffered archer_geo index and
#    one with a buffered archer_vector index while the worker merges;
#    meanwhile repeated REPEATABLE READ transactions compare index answers
#    with sequential-scan answers in the same snapshot; afterwards the
#    worker has emptied both buffers (merges counted) and both verify
#    functions pass; another session's temporary buffered index is left
#    alone; a terminated launcher comes back;
# 3. kill -9 of the worker in the middle of a merge (a crash restart of the
#    cluster): afterwards verify passes, answers equal a sequential scan,
#    and the buffers drain;
# 4. DROP INDEX, DROP TABLE, REINDEX, DROP EXTENSION, DROP DATABASE and a
#    fast shutdown while a worker merges a large buffer: each succeeds
#    without waiting for the merge;
# 5. a standby never starts the launcher; after promotion it does.
# Cluster without preloading:
# 6. no launcher; a session merges when its buffer is full, VACUUM merges
#    and archer_flush merges; answers equal a sequential scan.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use ArcherPgbench;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $node = PostgreSQL::Test::Cluster->new('worker');
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'archer'
archer.merge_naptime = '100ms'
archer.merge_threshold = 100
# scans asked for every row must return every row: the mode that promises it
archer.vector_order = relaxed
archer.insert_buffer_max_entries = 1000000
autovacuum = off
max_wal_size = '1GB'
deadlock_timeout = '200ms'
restart_after_crash = on
});
$node->start;

sub launcher_count
{
	my ($n) = @_;
	return $n->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'archer merge launcher'");
}

sub wait_for
{
	my ($n, $query, $what) = @_;
	ok($n->poll_query_until('postgres', $query), $what);
}

# ---------------------------------------------------------------------------
# 1. the launcher
# ---------------------------------------------------------------------------
wait_for($node, q{SELECT count(*) = 1 FROM pg_stat_activity
  WHERE backend_type = 'archer merge launcher' AND wait_event_type = 'Extension'},
	'the launcher runs, named in pg_stat_activity, with a wait event while idle');

# ---------------------------------------------------------------------------
# 2. concurrent inserts while the worker merges
# ---------------------------------------------------------------------------
$node->safe_psql('postgres', q{
CREATE EXTENSION archer;
SELECT setseed(0.15);
CREATE TABLE pts (id serial PRIMARY KEY, p point);
INSERT INTO pts (p) SELECT point(random() * 360 - 180, random() * 180 - 90) FROM generate_series(1, 5000);
CREATE INDEX pts_p ON pts USING archer_geo (p) WITH (insert_buffer = on);
CREATE TABLE vecs (id serial PRIMARY KEY, v avector(8));
INSERT INTO vecs (v) SELECT ARRAY(SELECT random() + 0 * g FROM generate_series(1, 8))::avector
  FROM generate_series(1, 3000) g;
CREATE INDEX vecs_v ON vecs USING archer_vector (v) WITH (insert_buffer = on);
});

my $INDEX_ONLY = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
my $SEQ_ONLY = 'SET enable_seqscan = on; SET enable_indexscan = off; SET enable_bitmapscan = off;';
# In one snapshot: rows within 2,000 km of 10 centres and the 20 nearest
# ids, through the index and by sequential scan; "same" when equal (no
# temporary table, so that it runs on a standby too)
my $geo_answers = q{SELECT string_agg(format('%s:%s:%s', c,
    (SELECT count(*) FROM pts WHERE archer_dwithin(p, point(c * 30 - 150, c * 15 - 75), 2000000)),
    ARRAY(SELECT id FROM pts ORDER BY p <-> point(c * 30 - 150, c * 15 - 75), id LIMIT 20)), ';' ORDER BY c)
  FROM generate_series(0, 9) c};
my $compare_geo = qq{
BEGIN ISOLATION LEVEL REPEATABLE READ;
$INDEX_ONLY
SELECT ($geo_answers) AS by_index \\gset
$SEQ_ONLY
SELECT CASE WHEN ($geo_answers) = :'by_index' THEN 'same' ELSE 'differ' END;
COMMIT;
};
# every row of vecs through the index (a scan asked for all rows returns all rows)
my $compare_vec = qq{
BEGIN ISOLATION LEVEL REPEATABLE READ;
$INDEX_ONLY
SELECT CASE WHEN (SELECT count(*) FROM (SELECT id FROM vecs ORDER BY v <-> '[0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5]' LIMIT 100000) s)
  = (SELECT count(*) FROM vecs) THEN 'same' ELSE 'short' END;
COMMIT;
};

my $DURATION = 6;
# rates keep the tables small enough for the merges to keep up
my %rates = (geo => 50, vec => 30);
my %scripts = (
	geo => q{
INSERT INTO pts (p) SELECT point(random() * 360 - 180, random() * 180 - 90) FROM generate_series(1, 40);
},
	vec => q{
INSERT INTO vecs (v) SELECT ARRAY(SELECT random() + 0 * g FROM generate_series(1, 8))::avector FROM generate_series(1, 10) g;
},
);
my %runs = map { $_ => start_pgbench($node, $_, $scripts{$_}, $DURATION, '-R', $rates{$_}, '-c', 1) }
  sort keys %scripts;
my ($geo_same, $vec_same, $rounds) = (0, 0, 0);
my $end = time() + $DURATION - 1;
while (time() < $end)
{
	$rounds++;
	$geo_same++ if $node->safe_psql('postgres', $compare_geo) eq 'same';
	$vec_same++ if $node->safe_psql('postgres', $compare_vec) eq 'same';
}
finish_pgbench($runs{$_}) for sort keys %runs;
note("$rounds comparison rounds during the inserts");
cmp_ok($rounds, '>', 0, 'comparisons ran during the inserts');
is($geo_same, $rounds, 'during merges: geo radius counts and kNN ids equal a sequential scan in the same snapshot');
is($vec_same, $rounds, 'during merges: a vector scan asked for every row returns every row');

# what the last inserts left below the threshold waits for more
wait_for($node, q{SELECT bool_and(buffer_entries < 100) FROM archer_index_stats WHERE "table" IN ('pts', 'vecs')},
	'the worker merges both buffers down below the threshold');
my $stats = $node->safe_psql('postgres',
	q{SELECT string_agg(format('%s:%s merges/%s entries', index, merges, merged_entries), ' ' ORDER BY index)
	  FROM archer_index_stats WHERE "table" IN ('pts', 'vecs')});
note("merge statistics: $stats");
is($node->safe_psql('postgres',
	q{SELECT count(*) FROM archer_index_stats WHERE "table" IN ('pts', 'vecs') AND merges > 0 AND merged_entries > 0}),
	2, 'the worker merged both indexes (sessions never do here)');
is($node->safe_psql('postgres', "SELECT archer_geo_verify('pts_p') = (SELECT count(*) FROM pts)"), 't',
	'archer_geo_verify: every row indexed once');
is($node->safe_psql('postgres', "SELECT archer_vector_verify('vecs_v') = (SELECT count(*) FROM vecs)"), 't',
	'archer_vector_verify: every row indexed once');
is($node->safe_psql('postgres', $compare_geo), 'same', 'after merges: geo answers equal a sequential scan');

# another session's temporary buffered index: the worker leaves it to its
# session and still merges the others; the statistics view skips it
my $temp = $node->background_psql('postgres');
$temp->query_safe(q{
CREATE TEMP TABLE tpts (p point);
CREATE INDEX tpts_p ON tpts USING archer_geo (p) WITH (insert_buffer = on);
INSERT INTO tpts (p) SELECT point(g % 360 - 180, 0) FROM generate_series(1, 500) g;
});
$node->safe_psql('postgres', 'INSERT INTO pts (p) SELECT point(random() * 360 - 180, random() * 180 - 90) FROM generate_series(1, 300)');
wait_for($node, q{SELECT buffer_entries < 100 FROM archer_index_stats WHERE index = 'pts_p'::regclass},
	"with another session's temporary buffered index, the worker merges the others");
is($temp->query_safe(q{SELECT buffer_entries FROM archer_index_stats WHERE index = 'tpts_p'::regclass}), '500',
	'the temporary index keeps its buffer, and its own session sees it in the view');
$temp->quit;
unlike(slurp_file($node->logfile), qr/cannot access temporary tables of other sessions/,
	'no worker touched the temporary index');

# a terminated launcher comes back (after bgw_restart_time, 10 s)
$node->safe_psql('postgres', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'archer merge launcher'});
wait_for($node, q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'archer merge launcher'},
	'a terminated launcher is restarted');

# ---------------------------------------------------------------------------
# 3. kill -9 of the worker in the middle of a merge
# ---------------------------------------------------------------------------
# a buffer of 60,000 entries takes the worker a while; turn it off to fill it
$node->safe_psql('postgres', 'ALTER SYSTEM SET archer.merge_workers = 0; SELECT pg_reload_conf()');
$node->safe_psql('postgres', q{
INSERT INTO pts (p) SELECT point(random() * 360 - 180, random() * 180 - 90) FROM generate_series(1, 60000);
INSERT INTO vecs (v) SELECT ARRAY(SELECT random() + 0 * g FROM generate_series(1, 8))::avector FROM generate_series(1, 3000) g;
});
$node->safe_psql('postgres', 'ALTER SYSTEM RESET archer.merge_workers; SELECT pg_reload_conf()');
# the launcher acts on the next request: one more insert asks for a merge
$node->safe_psql('postgres', 'INSERT INTO pts (p) VALUES (point(1, 1))');
wait_for($node, q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'archer merge worker'},
	'a merge worker starts');
usleep(300_000);
my $pid = $node->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'archer merge worker' LIMIT 1});
my $before = $node->safe_psql('postgres', q{SELECT sum(buffer_entries) FROM archer_index_stats WHERE "table" IN ('pts', 'vecs')});
# the kill must land while the merge is unfinished: a worker that is gone
# or a buffer already drained fails here (the buffer is sized so that a
# merge takes far longer than the wait above)
isnt($pid, '', 'a merge worker is running when the kill is sent');
cmp_ok($before, '>=', 100, "the merge is unfinished when the kill is sent ($before entries buffered)");
is(kill('KILL', $pid), 1, "kill -9 reaches worker $pid");
# the postmaster reinitializes after a backend crash; wait for it
$node->poll_query_until('postgres', 'SELECT 1', '1');
is($node->safe_psql('postgres', "SELECT archer_geo_verify('pts_p') = (SELECT count(*) FROM pts)"), 't',
	'after kill -9 mid-merge: archer_geo_verify, every row indexed once');
is($node->safe_psql('postgres', "SELECT archer_vector_verify('vecs_v') = (SELECT count(*) FROM vecs)"), 't',
	'after kill -9 mid-merge: archer_vector_verify, every row indexed once');
is($node->safe_psql('postgres', $compare_geo), 'same', 'after kill -9 mid-merge: geo answers equal a sequential scan');
is($node->safe_psql('postgres', $compare_vec), 'same', 'after kill -9 mid-merge: a vector scan returns every row');
wait_for($node, q{SELECT bool_and(buffer_entries < 100) FROM archer_index_stats WHERE "table" IN ('pts', 'vecs')},
	'after the crash restart the worker finishes the merge');
is($node->safe_psql('postgres', "SELECT archer_geo_verify('pts_p') = (SELECT count(*) FROM pts)"), 't',
	'after the finished merge: archer_geo_verify, every row indexed once');
like(slurp_file($node->logfile), qr/archer merge worker.*terminated by signal 9/,
	'the server log shows the killed worker');

# ---------------------------------------------------------------------------
# 4. DROP INDEX and DROP DATABASE while a worker merges
# ---------------------------------------------------------------------------
# None waits for the merge to end.  The worker merges vecs and keep in
# turns, a chunk at a time; where the statistics view outlives the command,
# keep still holding buffered entries afterwards shows the command did not
# wait for the worker's pass; DROP DATABASE and a shutdown terminate the
# worker, and the log shows it stopped in the middle of a merge.  DROP
# EXTENSION leaves neither trace, so only its bound is checked.  The bound
# on the time only catches a hang: it is far above a merge of both buffers
# even on a loaded machine.
my %busy_sql = (
	'DROP INDEX' => [ 'busy', 'DROP INDEX vecs_v' ],
	'DROP TABLE' => [ 'busy', 'DROP TABLE vecs' ],
	'REINDEX' => [ 'busy', 'REINDEX INDEX vecs_v' ],
	'DROP EXTENSION' => [ 'busy', 'DROP EXTENSION archer CASCADE' ],
	'DROP DATABASE' => [ 'postgres', 'DROP DATABASE busy' ],
	'fast shutdown' => undef);
for my $what ('DROP INDEX', 'DROP TABLE', 'REINDEX', 'DROP EXTENSION', 'DROP DATABASE', 'fast shutdown')
{
	$node->safe_psql('postgres', 'CREATE DATABASE busy');
	$node->safe_psql('postgres', 'ALTER SYSTEM SET archer.merge_workers = 0; SELECT pg_reload_conf()');
	$node->safe_psql('busy', q{
CREATE EXTENSION archer;
CREATE TABLE vecs (id serial PRIMARY KEY, v avector(64));
INSERT INTO vecs (v) SELECT ARRAY(SELECT random() + 0 * g FROM generate_series(1, 64))::avector FROM generate_series(1, 500) g;
CREATE INDEX vecs_v ON vecs USING archer_vector (v) WITH (insert_buffer = on);
INSERT INTO vecs (v) SELECT ARRAY(SELECT random() + 0 * g FROM generate_series(1, 64))::avector FROM generate_series(1, 20000) g;
CREATE TABLE keep (id serial PRIMARY KEY, v avector(64));
INSERT INTO keep (v) SELECT v FROM vecs LIMIT 500;
CREATE INDEX keep_v ON keep USING archer_vector (v) WITH (insert_buffer = on);
INSERT INTO keep (v) SELECT v FROM vecs OFFSET 500;
});
	$node->safe_psql('postgres', 'ALTER SYSTEM RESET archer.merge_workers; SELECT pg_reload_conf()');
	$node->safe_psql('busy', q{INSERT INTO vecs (v) SELECT v FROM vecs LIMIT 1});
	wait_for($node, q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'archer merge worker' AND datname = 'busy'},
		"$what: a merge worker works in the database");
	my $start = time();
	my $log_offset = -s $node->logfile;
	if ($busy_sql{$what})
	{
		my ($ret, $out, $err) = $node->psql(@{ $busy_sql{$what} });
		is($ret, 0, "$what while the worker merges succeeds") or diag($err);
	}
	else
	{
		$node->restart;
		is($node->safe_psql('busy', 'SELECT count(*) > 0 FROM vecs'), 't',
			'fast shutdown while the worker merges: the cluster restarts and serves the table');
	}
	my $elapsed = time() - $start;
	cmp_ok($elapsed, '<', 120, sprintf('%s finishes (took %.2f s)', $what, $elapsed));
	if ($what =~ /^(DROP INDEX|DROP TABLE|REINDEX)$/)
	{
		cmp_ok($node->safe_psql('busy', q{SELECT buffer_entries FROM archer_index_stats WHERE index = 'keep_v'::regclass}),
			'>', 0, "$what did not wait for the worker's pass over the database");
	}
	elsif ($what ne 'DROP EXTENSION')
	{
		like(slurp_file($node->logfile, $log_offset),
			qr/terminating background worker "archer merge worker".*\n.*CONTEXT:  merging the insert buffer/,
			"$what stopped the worker in the middle of a merge");
	}
	$node->safe_psql('postgres', 'DROP DATABASE IF EXISTS busy');
}
my @bad = grep { /PANIC|TRAP:|terminated by signal 11/ } split /\n/, slurp_file($node->logfile);
is(scalar(@bad), 0, 'server log: no PANIC or crash') or diag(join("\n", @bad));

# ---------------------------------------------------------------------------
# 5. never on a standby; after promotion, yes
# ---------------------------------------------------------------------------
$node->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('worker_standby');
$standby->init_from_backup($node, 'base', has_streaming => 1);
$standby->start;
$node->safe_psql('postgres', 'INSERT INTO pts (p) SELECT point(random() * 360 - 180, random() * 180 - 90) FROM generate_series(1, 500)');
$node->wait_for_catchup($standby);
usleep(500_000);
is(launcher_count($standby), 0, 'a hot standby runs no merge launcher');
is($standby->safe_psql('postgres', $compare_geo), 'same', 'the standby answers like a sequential scan');
$standby->promote;
wait_for($standby, q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'archer merge launcher'},
	'after promotion the launcher starts');
$standby->safe_psql('postgres', 'INSERT INTO pts (p) SELECT point(random() * 360 - 180, random() * 180 - 90) FROM generate_series(1, 500)');
wait_for($standby, q{SELECT buffer_entries = 0 FROM archer_index_stats WHERE index = 'pts_p'::regclass},
	'the promoted standby merges');
$standby->stop;
$node->stop;

# ---------------------------------------------------------------------------
# 6. without preloading
# ---------------------------------------------------------------------------
my $plain = PostgreSQL::Test::Cluster->new('plain');
$plain->init;
$plain->append_conf('postgresql.conf', 'autovacuum = off');
$plain->start;
$plain->safe_psql('postgres', q{
CREATE EXTENSION archer;
CREATE TABLE pts (id serial PRIMARY KEY, p point);
CREATE INDEX pts_p ON pts USING archer_geo (p) WITH (insert_buffer = on);
});
is(launcher_count($plain), 0, 'without preloading there is no launcher');
$plain->safe_psql('postgres', q{
SET archer.insert_buffer_max_entries = 2000;
INSERT INTO pts (p) SELECT point(random() * 360 - 180, random() * 180 - 90) FROM generate_series(1, 5000);
});
my ($entries, $merges) = split /\|/, $plain->safe_psql('postgres',
	q{SELECT buffer_entries, merges FROM archer_index_stats WHERE index = 'pts_p'::regclass});
cmp_ok($merges, '>', 0, 'a session that fills its buffer merges it');
cmp_ok($entries, '<', 2000 + 600, 'the buffer stays near its bound');
$plain->safe_psql('postgres', 'INSERT INTO pts (p) SELECT point(random() * 360 - 180, random() * 180 - 90) FROM generate_series(1, 300); VACUUM pts');
is($plain->safe_psql('postgres', q{SELECT buffer_entries FROM archer_index_stats WHERE index = 'pts_p'::regclass}),
	0, 'VACUUM merges the buffer');
$plain->safe_psql('postgres', 'INSERT INTO pts (p) SELECT point(random() * 360 - 180, random() * 180 - 90) FROM generate_series(1, 300)');
cmp_ok($plain->safe_psql('postgres', "SELECT archer_flush('pts_p')"), '>=', 300, 'archer_flush merges the buffer');
$plain->safe_psql('postgres', 'INSERT INTO pts (p) SELECT point(random() * 360 - 180, random() * 180 - 90) FROM generate_series(1, 300)');
is($plain->safe_psql('postgres', "SELECT archer_geo_verify('pts_p') = (SELECT count(*) FROM pts)"), 't',
	'without preloading: archer_geo_verify, every row indexed once');
$node = $plain;
is($plain->safe_psql('postgres', $compare_geo), 'same', 'without preloading: answers equal a sequential scan');
$plain->stop;
done_testing();
