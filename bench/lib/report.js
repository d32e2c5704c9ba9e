#!/usr/bin/env node
// bench/lib/report.js: turns the raw measurements of one bench/run into the
// result files.
//
// Usage: node report.js RAW_JSON META_TSV OUT_BASE
//   RAW_JSON  {"results": [bench_result rows], "mismatches": [...]} from SQL
//   META_TSV  key<TAB>value lines (machine, versions, settings, hashes)
//   OUT_BASE  writes OUT_BASE.json, OUT_BASE.md and, for the plot,
//             OUT_BASE.speedup.dat
//
// The JSON keeps every figure; its "headline" list is what bench/compare
// compares between two runs. Headline figures with gate=false are controls
// (PostGIS and btree figures: they move with the machine, not with archer)
// and are printed by bench/compare but never fail it.
'use strict';
const fs = require('fs');
const { readRun, headlineList, f, big, mb, ratio, markdown } = require('./report-common');

const [rawPath, metaPath, outBase] = process.argv.slice(2);
const { raw, meta, results: R } = readRun(rawPath, metaPath);
const timing = meta.mode !== 'tiny';
const by = (phase) => R.filter((r) => r.phase === phase);
const find = (phase, name, participant) =>
	R.find((r) => r.phase === phase && r.name === name && (participant === undefined || r.participant === participant));

// ---------------------------------------------------------------- headline
const headline = headlineList();
const H = headline.add;

const loadA = find('load', 'geo_a');
if (loadA) H('load.copy_rows_per_s', loadA.m.rows_per_s, 'rows/s', 'higher', false);

for (const b of by('build')) {
	const archer = b.name.includes('archer');
	H(`build.${b.name}.seconds`, b.m.seconds, 's', 'lower', archer);
	H(`build.${b.name}.size_bytes`, b.m.size_bytes, 'bytes', 'lower', archer);
}

// query sets, and archer's speedup over each other participant of the same type
const qsets = [...new Set(by('query').map((r) => r.name))];
const participantsOf = (qset) => by('query').filter((r) => r.name === qset);
// the PostGIS participants archer is compared with; for polygons the ratio
// that counts is against the best (fastest) of them in each query set
const reference = {
	archer: ['gist_geog', 'gist_geom_box'],
	archer_geog: ['gist_geog', 'gist_geog_subdivide'],
	archer_geom: ['gist_geom', 'gist_geom_subdivide'],
};
const speedups = []; // [label, ratio]
const niceName = {
	gist_geog: 'GiST geog', gist_geom: 'GiST geom', gist_geom_box: 'box + GiST geom',
	gist_geog_subdivide: 'subdivided + GiST geog', gist_geom_subdivide: 'subdivided + GiST geom',
};
function plotLabel(qset, participant, other) {
	const q = qset.replace(/^radius_/, 'radius ').replace(/^knn_/, 'kNN k=').replace(/^polygon_/, 'polygons ');
	const type = participant === 'archer' ? '' : participant.replace('archer_', '') + ' ';
	return `${q}: ${type}vs ${niceName[other] || other}`;
}
// the fastest of a participant's references in one query set (phase)
const bestRef = (phase, qset, participant) =>
	(reference[participant] || []).map((o) => find(phase, qset, o)).filter((o) => o && o.m.qps > 0)
		.sort((a, b) => b.m.qps - a.m.qps)[0];
for (const qset of qsets) {
	for (const r of participantsOf(qset)) {
		const archer = r.participant.startsWith('archer');
		H(`query.${qset}.${r.participant}.qps`, r.m.qps, 'q/s', 'higher', archer);
		for (const other of reference[r.participant] || []) {
			const o = find('query', qset, other);
			if (o && o.m.qps > 0) {
				const ratio = r.m.qps / o.m.qps;
				H(`speedup.${qset}.${r.participant}_vs_${other}`, ratio, 'x', 'higher', true);
				if (!qset.startsWith('polygon_')) speedups.push([plotLabel(qset, r.participant, other), ratio]);
			}
		}
		const best = bestRef('query', qset, r.participant);
		if (best && qset.startsWith('polygon_')) {
			H(`speedup.${qset}.${r.participant}_vs_best_gist`, r.m.qps / best.m.qps, 'x', 'higher', true);
			speedups.push([plotLabel(qset, r.participant, best.participant), r.m.qps / best.m.qps]);
		}
	}
	for (const r of by('query_custom').filter((x) => x.name === qset)) {
		const archer = r.participant.startsWith('archer');
		H(`query_custom.${qset}.${r.participant}.qps`, r.m.qps, 'q/s', 'higher', archer);
		for (const other of reference[r.participant] || []) {
			const o = find('query_custom', qset, other);
			if (o && o.m.qps > 0)
				H(`speedup_custom.${qset}.${r.participant}_vs_${other}`, r.m.qps / o.m.qps, 'x', 'higher', true);
		}
	}
}
for (const i of by('insert')) {
	const archer = i.name.includes('archer');
	H(`insert.${i.name}.rows_per_s`, i.m.rows_per_s, 'rows/s', 'higher', archer);
	H(`insert.${i.name}.wal_bytes_per_row`, i.m.wal_bytes_per_row, 'B/row', 'lower', archer);
	H(`insert.${i.name}.cpu_us_per_row`, i.m.cpu_us_per_row, 'us/row', 'lower', archer);
}

// an inexact participant's differing answers are reported, never fatal
const mismatches = raw.mismatches || [];
const fatalMismatches = mismatches.filter((m) => m.fatal !== false);
const planFailures = by('plan').filter((p) => !p.m.custom_ok || p.m.generic_ok === false);

const out = {
	meta,
	ok: fatalMismatches.length === 0 && planFailures.length === 0,
	headline,
	results: R,
	mismatches,
	participants: raw.participants || [],
};
fs.writeFileSync(outBase + '.json', JSON.stringify(out, null, 1) + '\n');

// ---------------------------------------------------------------- markdown
const md = markdown();
const { line, table } = md;

line(`# archer benchmark: ${meta.mode} run, ${meta.date}`);
line();
if (!timing)
	line('**Tiny run (CI harness check): the timings below are not measurements, only the answer hashes and the harness are checked.**\n');
line(out.ok ? '**Answers: all archer answers equal the exact PostGIS answers.**'
	: `**FAILED: ${fatalMismatches.length} answer mismatch(es), ${planFailures.length} plan(s) not using the intended index; see "Correctness".**`);
line();
table(['', ''], [
	['git', `${meta.git_sha}${meta.git_dirty === '1' ? ` (work tree with uncommitted changes: ${meta.git_diff_stat}; diff sha256 ${meta.git_diff_sha256})` : ''}`],
	['PostgreSQL', meta.pg_version], ['PostGIS', meta.postgis_version],
	['GEOS / PROJ', `${meta.geos_version} / ${meta.proj_version}`],
	['compiler', meta.cc], ['CFLAGS (PostgreSQL)', '`' + meta.pg_cflags + '`'], ['CFLAGS (archer)', '`' + meta.ext_cflags + '`'],
	['load average (1/5/15 min)', `start ${meta.loadavg_start}, end ${meta.loadavg_end}`],
	['planner GUCs', meta.planner_gucs], ['all archer GUCs', meta.archer_gucs],
	['dataset', `${big(meta.points)} points (random GeoNames city + up to 5 km jitter, seed ${meta.seed}), ${big(meta.centers)} query centers`],
	['settings', `shared_buffers=${meta.shared_buffers}, maintenance_work_mem=${meta.maintenance_work_mem}, synchronous_commit=${meta.synchronous_commit}, jit=${meta.jit}, max_parallel_workers_per_gather=${meta.max_parallel_workers_per_gather}`],
	['archer GUCs', `archer.geo_max_cells=${meta.geo_max_cells}, archer.geo_polygon_max_cells=${meta.geo_polygon_max_cells}`],
	['CPU', `${meta.cpu_model} × ${meta.cpu_count}`], ['memory', meta.memory],
	['data dir', `${meta.data_fs}; ${meta.data_mount}`],
	['timing', 'in the server (clock_timestamp around each execution of a PL/pgSQL-prepared statement, generic plans forced for every participant: no execution pays planning), one client; warm-up pass, then ' + meta.passes + ' timed passes over all query parameters, the participants taking turns pass by pass; q/s = the median pass; p50/p99 over all timed executions'],
]);

if (loadA) {
	line('## Load');
	line();
	table(['table', 'rows', 'COPY s', 'rows/s', 'heap MB'],
		by('load').map((r) => [r.name, big(r.m.rows), f(r.m.seconds, 2), big(r.m.rows_per_s), mb(r.m.table_bytes)]));
}

line('## Index build');
line();
const gistOf = (b) => (b.m.using.includes('geog') ? find('build', 'geo_p_geog_gist') : find('build', 'geo_p_geom_gist'));
table(['index', 'USING', 'build s', 'size MB', 'build time / GiST', 'size / GiST'],
	by('build').map((b) => {
		const g = b.name.includes('archer') ? gistOf(b) : null;
		return [b.name, '`' + b.m.using + '`', f(b.m.seconds, 2), mb(b.m.size_bytes),
			g ? ratio(b.m.seconds, g.m.seconds) : '', g ? ratio(b.m.size_bytes, g.m.size_bytes) : ''];
	}));

const queryTable = (title, prefix, note, phase = 'query') => {
	const sets = qsets.filter((q) => q.startsWith(prefix));
	if (!sets.length || !by(phase).length) return;
	line(`## ${title}`);
	line();
	if (note) { line(note); line(); }
	const rows = [];
	for (const qset of sets)
		for (const r of by(phase).filter((x) => x.name === qset)) {
			const refs = (reference[r.participant] || []).map((o) => {
				const x = find(phase, qset, o);
				return x ? `${ratio(r.m.qps, x.m.qps)} vs ${o}` : '';
			}).filter(Boolean).join(', ');
			rows.push([qset, r.participant, f(r.m.qps, 0), f(r.m.p50_ms, 3), f(r.m.p99_ms, 3), f(r.m.avg_rows, 1), refs]);
		}
	table(['query', 'participant', 'q/s', 'p50 ms', 'p99 ms', 'avg rows', 'archer speedup (q/s ratio)'], rows);
};
queryTable('Radius', 'radius_', 'archer_dwithin(geog, center, r) vs ST_DWithin(geog, center, r) (GiST on geography) vs `geom && box AND _ST_DWithin(geog, ...)` (GiST on geometry). Spheroid distances; ids fetched (`count(s.id)`). Generic plans for every participant: no execution is planned.');
queryTable('Radius, planned at every execution', 'radius_', 'The same queries with plan_cache_mode = force_custom_plan for every participant: each execution pays its planning, as an unprepared query does.', 'query_custom');
const radiusPlans = by('plan').filter((p) => p.name.startsWith('radius_'));
if (radiusPlans.length) {
	line('What PostgreSQL\'s default (plan_cache_mode = auto) does with each radius statement, prepared afresh and executed 8 times with the first query\'s parameters (pg_prepared_statements), and one custom planning\'s time (EXPLAIN):');
	line();
	table(['query', 'participant', 'generic plans', 'custom plans', 'planning ms (custom)'],
		radiusPlans.map((p) => [p.name, p.participant, p.m.auto_generic_plans ?? '–', p.m.auto_custom_plans ?? '–', f(p.m.custom_planning_ms, 3)]));
}
queryTable('k nearest neighbours', 'knn_', '`ORDER BY col <-> center LIMIT k`: archer vs GiST, on geography (sphere distance) and geometry (planar degrees); ids fetched, generic plans.');

// Per country: archer on one type against every GiST formulation on it,
// the speedup against the fastest of them (for each country its own best);
// warmPhase: also archer's figure of that phase beside its own
const polyTable = (phase, type, warmPhase) => {
	const rowsOf = by(phase);
	const labels = [...new Set(rowsOf.map((p) => p.name))];
	const g = (a3, p) => rowsOf.find((x) => x.name === a3 && x.participant === p);
	const gists = reference[`archer_${type}`];
	const rows = labels.map((a3) => {
		const a = g(a3, `archer_${type}`);
		const refs = gists.map((o) => g(a3, o));
		const best = refs.filter(Boolean).sort((x, y) => x.m.median_ms - y.m.median_ms)[0];
		const warm = warmPhase ? [f((find(warmPhase, a3, `archer_${type}`) || { m: {} }).m.median_ms, 2)] : [];
		return [a3, (a || best).m.class.replace('polygon_', ''), big(a && a.m.rows), f(a && a.m.median_ms, 2), ...warm,
			...refs.map((x) => f(x && x.m.median_ms, 2)),
			best ? niceName[best.participant] : '–', a && best ? ratio(best.m.median_ms, a.m.median_ms) : '–'];
	});
	table(['country', 'class', 'rows', `archer ${type} ms`, ...(warmPhase ? [`(archer warm ms)`] : []),
		...gists.map((o) => `${niceName[o]} ms`), 'best GiST', 'archer speedup vs best'], rows);
};

if (by('polygon').length) {
	line('## Polygons (countries)');
	line();
	line('`SELECT id ... WHERE archer_within(col, country)` against `ST_Intersects(country, col)` through GiST, and against GiST as PostGIS\'s documentation advises for large polygons: the country cut by `ST_Subdivide` (at most 256 vertices a piece) into a table, joined with `ST_Intersects` on the pieces, `DISTINCT` ids. Timed as `count(s.id)` over the ids, so every participant fetches each answer row from the heap, as an application reading the ids does. Median of the timed passes per country, one backend (caches warm), generic plans; the speedup is against the fastest GiST formulation for that country.');
	line();
	line('Geography (geodesic edges):');
	line();
	polyTable('polygon', 'geog');
	line('Geometry (planar edges):');
	line();
	polyTable('polygon', 'geom');
	const inexact = (raw.participants || []).filter((p) => p.exact === false).map((p) => p.participant);
	if (inexact.length) {
		const n = (p) => mismatches.filter((m) => m.participant === p).length;
		line(`Not exact: ${inexact.map((p) => `${p} (its pieces' cut edges are planar lines read as geodesics, so they do not tile the country on the sphere; answers differ from ST_Intersects on the whole country for ${n(p)} queries of this run)`).join(', ')}. It still counts as a reference when it is the fastest.`);
		line();
	}
}
if (by('polygon_cold').length) {
	line('## Polygons: the first query of a fresh backend');
	line();
	line(`One new connection per country and participant (PostGIS's library loaded untimed first), the query run once: catalog caches, archer's region cache and PostGIS's cached prepared geometries are cold, shared buffers warm. Median over ${big(Math.max(...by('polygon_cold').map((p) => p.m.passes)))} pass(es); the same id-returning form as above.`);
	line();
	line('Geography:');
	line();
	polyTable('polygon_cold', 'geog', 'polygon');
	line('Geometry:');
	line();
	polyTable('polygon_cold', 'geom', 'polygon');
}
if (by('polygon_count').length) {
	line('## Polygons: count(*) (a second table, not the headline)');
	line();
	line('`SELECT count(*)` over the same queries: no column of the table is needed, so archer answers by an index-only scan of an all-visible table (no heap access) while GiST, whose index holds no exact point, fetches every row; the subdivided joins need the ids for DISTINCT. Not what a query returning rows pays: see the table above. One timed pass after a warm-up.');
	line();
	line('Geography:');
	line();
	polyTable('polygon_count', 'geog');
	line('Geometry:');
	line();
	polyTable('polygon_count', 'geom');
}

const u = find('query', 'uuid', 'btree');
if (u) {
	line('## Floor: one btree probe');
	line();
	line(`\`SELECT id FROM geo_a WHERE uid = $1\`: ${f(u.m.qps, 0)} q/s, p50 ${f(u.m.p50_ms, 3)} ms, p99 ${f(u.m.p99_ms, 3)} ms — the per-query cost of the harness and executor, below which no index can go.`);
	line();
}

const ins = by('insert');
if (ins.length) {
	line('## Inserts');
	line();
	const base = ins.find((i) => i.name === 'none');
	line(`Each index alone on its own copy of the dataset, default options (\`*_buffered\`: only \`insert_buffer = on\`, default GUCs, the merge worker running); then ${big(ins[0].m.rows)} new rows in ${ins[0].m.batches} batches (INSERT ... SELECT, one COMMIT per batch, synchronous_commit=on), ${ins[0].m.passes ?? 1} passes with the indexes taking turns in each (the tables grow by those rows each pass; medians over the passes; index size after the first). rows/s is timed until the index holds every row: for *_buffered the pass ends with archer_flush merging what the worker has not (its share in "flush s"; "session rows/s" is the inserting session alone, which is *not* a throughput a user gets). WAL from pg_current_wal_lsn() (the merge worker's included); "index WAL" subtracts the no-index run. CPU: all processes of the cluster (backends, merge worker, WAL writer, checkpointer; /proc) during the pass, per row. Autovacuum is off on these tables.`);
	line();
	table(['index', 'rows/s', 'vs no index', 'session rows/s', 'flush s', 'CPU µs/row', 'WAL B/row', 'index WAL B/row', 'index MB after'],
		ins.map((i) => [i.name, big(i.m.rows_per_s), base && i !== base ? ratio(i.m.rows_per_s, base.m.rows_per_s) : '',
			i.m.session_rows_per_s !== undefined ? big(i.m.session_rows_per_s) : '',
			i.m.flush_seconds !== undefined ? f(i.m.flush_seconds, 3) : '', f(i.m.cpu_us_per_row, 1),
			f(i.m.wal_bytes_per_row, 0),
			base && i !== base ? f(i.m.wal_bytes_per_row - base.m.wal_bytes_per_row, 0) : '',
			mb(i.m.index_bytes_after)]));
}

line('## Correctness');
line();
const checked = by('query').filter((r) => r.participant !== 'btree');
line(`Every query of every participant above was also run once untimed, hashing its sorted answer ids (md5 of string_agg); each archer hash must equal the exact PostGIS formulation's (${checked.length} participant × query-set combinations, ${big(checked.reduce((s, r) => s + r.m.queries, 0))} queries).`);
line();
if (mismatches.length) {
	table(['query set', 'i', 'label', 'participant', 'reference', 'rows', 'ref rows', 'parameters', 'note'],
		mismatches.map((m) => [m.qset, m.i, m.label || '', m.participant, m.reference, m.n, m.ref_n, m.params || '', m.note || '']));
	line('The participants\' queries (q.* = the parameters):');
	line();
	const seen = new Set();
	for (const m of mismatches)
		for (const p of [m.participant, m.reference]) {
			const sql = (raw.participants || []).find((x) => x.participant === p && m.qset.startsWith(x.qkind));
			if (sql && !seen.has(m.qset + p)) { seen.add(m.qset + p); line(`- ${m.qset} / ${p}: \`${sql.ids_sql}\``); }
		}
	line();
} else line('No mismatches.');
line();
const gen = by('plan').filter((p) => p.m.custom_ok && !p.m.generic_ok);
if (planFailures.length) {
	line('Plans NOT using the intended index:');
	line();
	for (const p of planFailures) line(`- ${p.name} / ${p.participant} (wants ${p.m.index_name}):\n\n\`\`\`\n${p.m.custom_plan}\`\`\``);
	line();
}
if (gen.length) {
	line('Generic plans (what a prepared statement may switch to after 5 executions) that do not use the index: ' +
		gen.map((p) => `${p.name}/${p.participant}`).join(', ') + '.');
	line();
}

line('## Dataset files (sha256)');
line();
for (const k of Object.keys(meta).filter((k) => k.startsWith('sha256.')))
	line(`- ${k.slice(7)}: \`${meta[k]}\``);
line();
line('## Plans (custom plan, first query of each set)');
line();
for (const p of by('plan'))
	line(`<details><summary>${p.name} / ${p.participant}</summary>\n\n\`\`\`\n${p.m.custom_plan}\`\`\`\n</details>\n`);

fs.writeFileSync(outBase + '.md', md.text());

// ---------------------------------------------------------------- plot data
fs.writeFileSync(outBase + '.speedup.dat',
	speedups.map(([l, r]) => `"${l}" ${r.toFixed(4)}`).join('\n') + '\n');
