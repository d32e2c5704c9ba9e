# test/t/018_extension_update.pl: upgrades.
#
# 1. Every version of archer and archer_postgis the server offers
#    (pg_available_extension_versions, i.e. sql/install) has an update path
#    to the default version.  For each such earlier version: install it,
#    build indexes of both access methods, ALTER EXTENSION ... UPDATE, and
#    the extension's catalog (every member object with its definition:
#    functions, operators, operator families with their members, types,
#    casts, access methods, views, privileges) equals a fresh install's; the
#    indexes built before the update answer like a sequential scan and pass
#    verify.  (archer: 0.1.0 -> 0.2.0; archer_postgis has only 0.1.0, and
#    the test asserts below that archer has at least one earlier version, so
#    that the loop never silently tests nothing.  Indexes built by the
#    released 0.1.0 code itself are 027_upgrade_from_0_1_0.pl's.)
# 2. An index whose meta page has another page layout version (as one from
#    a release with another layout would) is reported, by scans, inserts
#    and verify, as one to REINDEX; REINDEX makes it work again.
# 3. DROP EXTENSION leaves nothing behind; the extensions install again.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use ArcherPageEdit;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('update');
# no data checksums (18's initdb turns them on; earlier ones ignore the
# option): part 2 rewrites meta pages, as another release's would be
$node->init(no_data_checksums => 1);
$node->append_conf('postgresql.conf', "autovacuum = off\n"
	. "# ann_all asks for every row: the mode that promises all of them\n"
	. "archer.vector_order = relaxed\n");
$node->start;

# the test command installs PostGIS; without it archer_postgis is untested
is($node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_available_extensions WHERE name = 'postgis'}), '1',
	'PostGIS is installed');

# Every member of an extension with what defines it, one line each, sorted
my $CATALOG = q{
SELECT string_agg(line, E'\n' ORDER BY line) FROM (
  SELECT pg_describe_object(d.classid, d.objid, 0) || coalesce(' :: ' || detail, '') AS line
  FROM pg_depend d
  CROSS JOIN LATERAL (SELECT CASE d.classid
    WHEN 'pg_proc'::regclass THEN
      (SELECT CASE WHEN p.prokind IN ('f', 'p') THEN pg_get_functiondef(p.oid)
                   ELSE p.prokind::text || ' ' || pg_get_function_arguments(p.oid) END
              || ' acl ' || coalesce(p.proacl::text, '-')
       FROM pg_proc p WHERE p.oid = d.objid)
    WHEN 'pg_operator'::regclass THEN
      (SELECT format('%s rest %s join %s commutator %s negator %s', o.oprcode::regprocedure, o.oprrest,
                     o.oprjoin, o.oprcom::regoperator, o.oprnegate::regoperator)
       FROM pg_operator o WHERE o.oid = d.objid)
    WHEN 'pg_opfamily'::regclass THEN
      (SELECT string_agg(x, '; ' ORDER BY x) FROM (
         SELECT format('op %s %s %s %s', a.amopstrategy, a.amopopr::regoperator, a.amoppurpose,
                       a.amopsortfamily) AS x FROM pg_amop a WHERE a.amopfamily = d.objid
         UNION ALL
         SELECT format('proc %s %s %s %s', p.amprocnum, p.amproclefttype::regtype,
                       p.amprocrighttype::regtype, p.amproc::regprocedure)
         FROM pg_amproc p WHERE p.amprocfamily = d.objid) m)
    WHEN 'pg_opclass'::regclass THEN
      (SELECT format('default %s type %s key %s family %s', c.opcdefault, c.opcintype::regtype,
                     c.opckeytype::regtype, pg_describe_object('pg_opfamily'::regclass, c.opcfamily, 0))
       FROM pg_opclass c WHERE c.oid = d.objid)
    WHEN 'pg_type'::regclass THEN
      (SELECT format('%s %s %s %s %s %s %s %s %s acl %s', t.typinput, t.typoutput, t.typreceive, t.typsend,
                     t.typmodin, t.typmodout, t.typlen, t.typalign, t.typstorage, t.typacl)
       FROM pg_type t WHERE t.oid = d.objid)
    WHEN 'pg_cast'::regclass THEN
      (SELECT format('%s %s %s', c.castfunc::regprocedure, c.castcontext, c.castmethod)
       FROM pg_cast c WHERE c.oid = d.objid)
    WHEN 'pg_am'::regclass THEN
      (SELECT format('%s %s', a.amtype, a.amhandler) FROM pg_am a WHERE a.oid = d.objid)
    WHEN 'pg_class'::regclass THEN
      (SELECT format('%s %s acl %s', c.relkind,
                     CASE WHEN c.relkind = 'v' THEN pg_get_viewdef(c.oid) END, c.relacl)
       FROM pg_class c WHERE c.oid = d.objid)
    END AS detail) x
  WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
    AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'EXTNAME')
) s};

sub catalog
{
	my ($db, $ext) = @_;
	return $node->safe_psql($db, $CATALOG =~ s/EXTNAME/$ext/r);
}

# Sample rows and an index of each kind; answers through the indexes
my $SAMPLE = q{
CREATE TABLE pts (id int PRIMARY KEY, p point);
INSERT INTO pts SELECT i, point((i * 7.31) % 360 - 180, (i * 3.17) % 170 - 85) FROM generate_series(1, 3000) i;
CREATE INDEX pts_p ON pts USING archer_geo (p);
CREATE TABLE vecs (id int PRIMARY KEY, v avector(8));
INSERT INTO vecs SELECT i, ARRAY(SELECT ((i * d * 37) % 101) / 10.0 FROM generate_series(1, 8) d)::avector
  FROM generate_series(1, 2000) i;
CREATE INDEX vecs_v ON vecs USING archer_vector (v);
};
my %QUERIES = (
	radius => q{SELECT string_agg(id::text, ',' ORDER BY id) FROM pts WHERE archer_dwithin(p, point(10, 20), 1500000)},
	polygon => q{SELECT string_agg(id::text, ',' ORDER BY id) FROM pts WHERE archer_within(p, '((0,0),(40,0),(40,30),(0,30))'::polygon)},
	# distances, in order: rows at the same distance may come in any order
	# (ordering by id too would keep the planner from the index)
	knn => q{SELECT string_agg(d::text, ',') FROM (SELECT p <-> point(-70, -30) AS d FROM pts ORDER BY p <-> point(-70, -30) LIMIT 15) s},
	ann_all => q{SELECT count(DISTINCT id) FROM (SELECT id FROM vecs ORDER BY v <-> '[1,2,3,4,5,6,7,8]' LIMIT 5000) s},
);

# The index's answers equal the sequential scan's; verify passes
sub check_indexes
{
	my ($db, $label) = @_;
	for my $name (sort keys %QUERIES)
	{
		my $index = $name =~ /^ann/ ? 'vecs_v' : 'pts_p';
		like($node->safe_psql($db, "SET enable_seqscan = off; SET enable_bitmapscan = off; EXPLAIN (COSTS OFF) $QUERIES{$name}"),
			qr/\b$index\b/, "$label: $name uses $index");
		my $by_index = $node->safe_psql($db,
			"SET enable_seqscan = off; SET enable_bitmapscan = off; SET archer.vector_max_scan_tuples = 100000; $QUERIES{$name}");
		my $by_seq = $node->safe_psql($db, "SET enable_indexscan = off; SET enable_bitmapscan = off; $QUERIES{$name}");
		is($by_index, $by_seq, "$label: $name through the index equals a sequential scan");
	}
	is($node->safe_psql($db, q{SELECT archer_geo_verify('pts_p') = 3000 AND archer_vector_verify('vecs_v') = 2000}),
		't', "$label: both verify functions pass");
}

# ---------------------------------------------------------------------------
# 1. update paths
# ---------------------------------------------------------------------------
for my $ext ('archer', 'archer_postgis')
{
	my $default = $node->safe_psql('postgres',
		"SELECT default_version FROM pg_available_extensions WHERE name = '$ext'");
	my @stranded = split /\n/, $node->safe_psql('postgres', qq{
SELECT v.version FROM pg_available_extension_versions v
WHERE v.name = '$ext' AND v.version <> '$default'
  AND NOT EXISTS (SELECT FROM pg_extension_update_paths('$ext') p
                  WHERE p.source = v.version AND p.target = '$default' AND p.path IS NOT NULL)});
	is(scalar(@stranded), 0, "$ext: every available version updates to $default")
	  or diag('no update path from: ' . join(', ', @stranded));
	my @earlier = split /\n/, $node->safe_psql('postgres',
		"SELECT version FROM pg_available_extension_versions WHERE name = '$ext' AND version <> '$default' ORDER BY version");
	note("$ext: default version $default; earlier versions: " . (@earlier ? join(', ', @earlier) : 'none'));
	ok(scalar(@earlier) >= 1, 'archer has an earlier version to update from') if $ext eq 'archer';

	my $fresh = "fresh_$ext";
	$node->safe_psql('postgres', "CREATE DATABASE $fresh");
	$node->safe_psql($fresh, "CREATE EXTENSION $ext CASCADE");
	my $fresh_catalog = catalog($fresh, $ext);
	for my $version (@earlier)
	{
		(my $db = "from_${ext}_$version") =~ s/\W/_/g;
		$node->safe_psql('postgres', "CREATE DATABASE $db");
		$node->safe_psql($db, "CREATE EXTENSION $ext VERSION '$version' CASCADE; $SAMPLE");
		$node->safe_psql($db, "ALTER EXTENSION $ext UPDATE");
		is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = '$ext'"), $default,
			"$ext $version: updated to $default");
		is(catalog($db, $ext), $fresh_catalog, "$ext $version -> $default: the catalog equals a fresh install's");
		check_indexes($db, "$ext $version -> $default");
	}
	like($fresh_catalog, qr/access method|function/, "$ext: the catalog listing sees the extension's objects");
}

# ---------------------------------------------------------------------------
# 2. an index in another page layout version asks for REINDEX
# ---------------------------------------------------------------------------
$node->safe_psql('postgres', "CREATE EXTENSION archer; $SAMPLE");
check_indexes('postgres', 'before the layout change');
my %paths = map { $_ => $node->data_dir . '/' . $node->safe_psql('postgres', "SELECT pg_relation_filepath('$_')") }
  qw(pts_p vecs_v);
$node->stop;
for my $index (sort keys %paths)
{
	my $meta = read_block($paths{$index}, 0);
	# the layout version in the special space and in the meta page's common part
	substr($meta, $BLCKSZ - 3, 1) = chr(1);
	$meta = set_u32($meta, 24 + 4, 1);
	write_block($paths{$index}, 0, $meta);
}
$node->start;
for my $case (
	[ pts_p => q{SELECT count(*) FROM pts WHERE archer_dwithin(p, point(10, 20), 1500000)} ],
	[ pts_p => q{INSERT INTO pts VALUES (10001, point(1, 2))} ],
	[ pts_p => q{SELECT archer_geo_verify('pts_p')} ],
	[ vecs_v => q{SELECT id FROM vecs ORDER BY v <-> '[1,2,3,4,5,6,7,8]' LIMIT 5} ],
	[ vecs_v => q{INSERT INTO vecs VALUES (10001, '[1,1,1,1,1,1,1,1]')} ],
	[ vecs_v => q{SELECT archer_vector_verify('vecs_v')} ])
{
	my ($index, $sql) = @$case;
	my ($ret, $out, $err) = $node->psql('postgres', "SET enable_seqscan = off; SET enable_bitmapscan = off; $sql");
	like($err, qr/index "$index" has page layout version 1, which this build of archer cannot read.*REINDEX/s,
		"$index in layout version 1: '$sql' asks for REINDEX");
}
$node->safe_psql('postgres', 'REINDEX INDEX pts_p; REINDEX INDEX vecs_v');
check_indexes('postgres', 'after REINDEX');

# ---------------------------------------------------------------------------
# 3. DROP EXTENSION leaves nothing behind
# ---------------------------------------------------------------------------
my $LEFTOVERS = q{SELECT (SELECT count(*) FROM pg_am WHERE amname LIKE 'archer%')
  + (SELECT count(*) FROM pg_proc WHERE proname LIKE 'archer%')
  + (SELECT count(*) FROM pg_type WHERE typname IN ('avector', 'archer_cap'))
  + (SELECT count(*) FROM pg_opfamily WHERE opfname LIKE 'avector%' OR opfmethod IN
       (SELECT oid FROM pg_am WHERE amname LIKE 'archer%'))};
my $db = 'fresh_archer_postgis';
$node->safe_psql($db, "$SAMPLE DROP EXTENSION archer CASCADE");
is($node->safe_psql($db, $LEFTOVERS), '0', 'DROP EXTENSION archer CASCADE leaves no archer object');
is($node->safe_psql($db, q{SELECT count(*) FROM pg_class WHERE relname IN ('pts_p', 'vecs_v')}), '0',
	'and drops the indexes');
$node->safe_psql($db, 'CREATE EXTENSION archer');
is(catalog($db, 'archer'), catalog('fresh_archer', 'archer'), 'archer installs again with the same catalog');

$node->stop;
done_testing();
