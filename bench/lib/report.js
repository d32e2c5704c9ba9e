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
const reference = {
	archer: ['gist_geog', 'gist_geom_box'],
	archer_geog: ['gist_geog'],
	archer_geom: ['gist_geom'],
};
const speedups = []; // [label, ratio]
const niceName = { gist_geog: 'GiST geog', gist_geom: 'GiST geom', gist_geom_box: 'box + GiST geom' };
function plotLabel(qset, participant, other) {
	const q = qset.replace(/^radius_/, 'radius ').replace(/^knn_/, 'kNN k=').replace(/^polygon_/, 'polygons ');
	const type = participant === 'archer' ? '' : participant.replace('archer_', '') + ' ';
	return `${q}: ${type}vs ${niceName[other] || other}`;
}
for (const qset of qsets) {
	for (const r of participantsOf(qset)) {
		const archer = r.participant.startsWith('archer');
		H(`query.${qset}.${r.participant}.qps`, r.m.qps, 'q/s', 'higher', archer);
		for (const other of reference[r.participant] || []) {
			const o = find('query', qset, other);
			if (o && o.m.qps > 0) {
				const ratio = r.m.qps / o.m.qps;
				H(`speedup.${qset}.${r.participant}_vs_${other}`, ratio, 'x', 'higher', true);
				speedups.push([plotLabel(qset, r.participant, other), ratio]);
			}
		}
	}
}
for (const i of by('insert')) {
	const archer = i.name.includes('archer');
	H(`insert.${i.name}.rows_per_s`, i.m.rows_per_s, 'rows/s', 'higher', archer);
	H(`insert.${i.name}.wal_bytes_per_row`, i.m.wal_bytes_per_row, 'B/row', 'lower', archer);
	if (i.m.rows_per_s_with_merge !== undefined) {
		H(`insert.${i.name}.rows_per_s_with_merge`, i.m.rows_per_s_with_merge, 'rows/s', 'higher', archer);
		H(`insert.${i.name}.wal_bytes_per_row_with_merge`, i.m.wal_bytes_per_row_with_merge, 'B/row', 'lower', archer);
	}
}

const mismatches = raw.mismatches || [];
const planFailures = by('plan').filter((p) => !p.m.custom_ok);

const out = {
	meta,
	ok: mismatches.length === 0 && planFailures.length === 0,
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
	: `**FAILED: ${mismatches.length} answer mismatch(es), ${planFailures.length} plan(s) not using the intended index; see "Correctness".**`);
line();
table(['', ''], [
	['git', `${meta.git_sha}${meta.git_dirty === '1' ? ' (work tree with uncommitted changes)' : ''}`],
	['PostgreSQL', meta.pg_version], ['PostGIS', meta.postgis_version],
	['dataset', `${big(meta.points)} points (random GeoNames city + up to 5 km jitter, seed ${meta.seed}), ${big(meta.centers)} query centers`],
	['settings', `shared_buffers=${meta.shared_buffers}, maintenance_work_mem=${meta.maintenance_work_mem}, synchronous_commit=${meta.synchronous_commit}, jit=${meta.jit}, max_parallel_workers_per_gather=${meta.max_parallel_workers_per_gather}`],
	['archer GUCs', `archer.geo_max_cells=${meta.geo_max_cells}, archer.geo_polygon_max_cells=${meta.geo_polygon_max_cells}`],
	['CPU', `${meta.cpu_model} × ${meta.cpu_count}`], ['memory', meta.memory],
	['data dir', `${meta.data_fs}; ${meta.data_mount}`],
	['timing', 'in the server (clock_timestamp around each execution of a PL/pgSQL-prepared statement), one client; warm-up pass, then ' + meta.passes + ' timed passes over all query parameters, the participants taking turns pass by pass; q/s = the median pass; p50/p99 over all timed executions'],
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

const queryTable = (title, prefix, note) => {
	const sets = qsets.filter((q) => q.startsWith(prefix));
	if (!sets.length) return;
	line(`## ${title}`);
	line();
	if (note) { line(note); line(); }
	const rows = [];
	for (const qset of sets)
		for (const r of participantsOf(qset)) {
			const refs = (reference[r.participant] || []).map((o) => {
				const x = find('query', qset, o);
				return x ? `${ratio(r.m.qps, x.m.qps)} vs ${o}` : '';
			}).filter(Boolean).join(', ');
			rows.push([qset, r.participant, f(r.m.qps, 0), f(r.m.p50_ms, 3), f(r.m.p99_ms, 3), f(r.m.avg_rows, 1), refs]);
		}
	table(['query', 'participant', 'q/s', 'p50 ms', 'p99 ms', 'avg rows', 'archer speedup (q/s ratio)'], rows);
};
queryTable('Radius', 'radius_', 'archer_dwithin(geog, center, r) vs ST_DWithin(geog, center, r) (GiST on geography) vs `geom && box AND _ST_DWithin(geog, ...)` (GiST on geometry). Spheroid distances.');
queryTable('k nearest neighbours', 'knn_', '`ORDER BY col <-> center LIMIT k`: archer vs GiST, on geography (sphere distance) and geometry (planar degrees).');

const polys = by('polygon');
if (polys.length) {
	line('## Polygons (countries)');
	line();
	line('Median of the timed passes per country; rows = the answer size. `SELECT count(*)` of archer_within vs ST_Intersects(country, col) through GiST, geography (geodesic edges) and geometry (planar edges); archer answers by index-only scan.');
	line();
	const labels = [...new Set(polys.map((p) => p.name))];
	const rows = labels.map((a3) => {
		const g = (p) => polys.find((x) => x.name === a3 && x.participant === p);
		const ag = g('archer_geog'), gg = g('gist_geog'), am = g('archer_geom'), gm = g('gist_geom');
		return [a3, (ag || am).m.class.replace('polygon_', ''), big(ag && ag.m.rows),
			f(ag && ag.m.median_ms, 2), f(gg && gg.m.median_ms, 2), ag && gg ? ratio(gg.m.median_ms, ag.m.median_ms) : '–',
			big(am && am.m.rows), f(am && am.m.median_ms, 2), f(gm && gm.m.median_ms, 2), am && gm ? ratio(gm.m.median_ms, am.m.median_ms) : '–'];
	});
	table(['country', 'class', 'rows (geog)', 'archer geog ms', 'GiST geog ms', 'archer speedup', 'rows (geom)', 'archer geom ms', 'GiST geom ms', 'archer speedup'], rows);
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
	line(`Each: a copy of the dataset with that one index, then ${big(ins[0].m.rows)} new rows in ${ins[0].m.batches} batches (INSERT ... SELECT, one COMMIT per batch, synchronous_commit=on), ${ins[0].m.passes ?? 1} times over (the table grows by those rows each time; medians over the passes; index size after the first). WAL bytes from pg_current_wal_lsn() (the merge worker's included); "index WAL" subtracts the no-index run. For *_buffered (insert_buffer = on, the background worker merging meanwhile, the inserting session never merging: archer.insert_buffer_max_entries = 100000000) "with merge" adds the time and WAL of the archer_flush that merges what was still buffered at the end of each pass.`);
	line();
	const withMerge = (i, k, fmt) => (i.m[k] !== undefined ? fmt(i.m[k]) : '');
	table(['index', 'rows/s', 'rows/s with merge', 'WAL B/row', 'WAL B/row with merge', 'index WAL B/row', 'index MB after'],
		ins.map((i) => [i.name, big(i.m.rows_per_s), withMerge(i, 'rows_per_s_with_merge', big),
			f(i.m.wal_bytes_per_row, 0), withMerge(i, 'wal_bytes_per_row_with_merge', (v) => f(v, 0)),
			base && i !== base ? f((i.m.wal_bytes_per_row_with_merge ?? i.m.wal_bytes_per_row) - base.m.wal_bytes_per_row, 0) : '',
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
