# test/t/019_regress_wal_consistency.pl: the whole pg_regress suite
# (sql/*.sql against expected/*.out) on a primary with a streaming standby,
# both with wal_consistency_checking = 'all'.
#
# The other replica tests replay what they chose to write; this one replays
# everything the regression suite does to both access methods: builds on
# empty and filled tables, buffered inserts and their merges (archer_flush),
# VACUUM, REINDEX, unlogged tables, drift repair, errors in the middle of
# an insert.  For every record that carries a full page image, the standby
# compares its redo of the record with that image and stops with
# "inconsistent page found" on any difference.  archer writes only generic
# WAL records and log_newpage records (no resource manager of its own), so
# 'all' covers every page it changes.
#
# The primary runs the suite as test/run's cluster does (archer preloaded,
# merge workers off, autovacuum off, prepared transactions allowed); the
# suite must pass, the standby must catch up to the primary's last LSN, and
# its log must show no inconsistent page, FATAL or PANIC.
use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Path qw(make_path);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $ROOT = abs_path(dirname(__FILE__) . '/../..');

my $primary = PostgreSQL::Test::Cluster->new('rprimary');
$primary->init(allows_streaming => 1);
$primary->append_conf(
	'postgresql.conf', q{
wal_consistency_checking = 'all'
shared_preload_libraries = 'archer'
archer.merge_workers = 0
autovacuum = off
max_prepared_transactions = 10
max_wal_size = 1GB
log_statement = none
});
$primary->start;
# The suite writes gigabytes of WAL, and the standby, checking every page
# image, replays slower than the primary writes: without a slot the
# primary recycles segments the standby has not received yet.
$primary->safe_psql('postgres',
	"SELECT pg_create_physical_replication_slot('rstandby', true)");
$primary->backup('bkp');

my $standby = PostgreSQL::Test::Cluster->new('rstandby');
$standby->init_from_backup($primary, 'bkp', has_streaming => 1);
$standby->append_conf('postgresql.conf', q{
wal_consistency_checking = 'all'
primary_slot_name = 'rstandby'
});
$standby->start;
is($standby->safe_psql('postgres', 'SHOW wal_consistency_checking'),
	'all', 'the standby checks every record it replays');

# The suite in the order make installcheck runs it (00_setup first).
opendir(my $dh, "$ROOT/sql") or die "cannot read $ROOT/sql: $!";
my @tests = sort map { /^(.+)\.sql$/ ? $1 : () } readdir($dh);
closedir($dh);
ok(@tests >= 2 && $tests[0] eq '00_setup',
	'found the regression suite (' . scalar(@tests) . ' files)');

# pg_regress writes results/ under the output dir, and the suite's \copy
# commands name files relative to that dir, so it runs from there.
my $outdir = "${PostgreSQL::Test::Utils::tmp_check}/regress_wal";
make_path($outdir);
my $pg_regress =
  dirname($primary->config_data('--pgxs')) . '/../test/regress/pg_regress';
my @cmd = (
	$pg_regress,
	"--inputdir=$ROOT",
	"--outputdir=$outdir",
	'--load-extension=plpgsql',
	'--host=' . $primary->host,
	'--port=' . $primary->port,
	'--dbname=contrib_regression',
	@tests);
my ($out, $err) = ('', '');
my $ok = IPC::Run::run(
	\@cmd, '>', \$out, '2>', \$err,
	init => sub { chdir $outdir or die "chdir $outdir: $!" });
ok($ok, 'the regression suite passes on the primary')
  or diag("pg_regress:\n$out\n$err\n"
	  . (-e "$outdir/regression.diffs"
		? slurp_file("$outdir/regression.diffs")
		: ''));
like($out, qr/All \d+ tests passed/, 'pg_regress reports every test passed');

# Everything the suite wrote has been replayed (and checked) by the standby.
# A standby that finds an inconsistent page stops at once, so rather than
# wait out the catch-up timeout, poll its replay LSN and give up as soon as
# it is no longer running.
$primary->safe_psql('postgres', 'CHECKPOINT');
my $lsn = $primary->lsn('insert');
my $caught_up = 0;
foreach my $try (1 .. 2 * $PostgreSQL::Test::Utils::timeout_default)
{
	my ($rc, $replayed) = (0, '');
	$rc = $standby->psql('postgres',
		"SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn",
		stdout => \$replayed);
	if ($rc == 0 && $replayed eq 't') { $caught_up = 1; last; }
	last if $rc != 0 && !-e $standby->data_dir . '/postmaster.pid';
	usleep(500_000);
}
ok($caught_up, "the standby replayed the suite's WAL up to $lsn");

my $slog = slurp_file($standby->logfile);
unlike($slog, qr/inconsistent page found/,
	'no inconsistent page on the standby');
unlike($slog, qr/\bPANIC\b/, 'no PANIC on the standby');
unlike($slog, qr/\bFATAL\b/, 'no FATAL on the standby');
unlike(slurp_file($primary->logfile), qr/\bPANIC\b|TRAP:/,
	'no PANIC or failed assertion on the primary');


is( $standby->safe_psql('contrib_regression',
		q{SELECT count(*) > 0 FROM pg_class c JOIN pg_am a ON a.oid = c.relam
		  WHERE a.amname IN ('archer_geo', 'archer_vector')}),
	't',
	'the standby holds archer indexes of the suite');

$standby->stop('fast', fail_ok => 1);
$primary->stop;
done_testing();
