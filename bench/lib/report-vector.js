#!/usr/bin/env node
// bench/lib/report-vector.js: turns the raw measurements of one bench/vector
// run into its result files.
//
// Usage: node report-vector.js RAW_JSON META_TSV OUT_BASE
//   RAW_JSON  {"results": [vbench_result rows]} from SQL
//   META_TSV  key<TAB>value lines (machine, versions, settings, hashes)
//   OUT_BASE  writes OUT_BASE.json, OUT_BASE.md and, for the plot,
//             OUT_BASE.curve.dat (label, recall, q/s per search width)
//
// The JSON's "headline" list is what bench/compare compares between runs;
// the exact scan's q/s is a control (gate=false): it tracks the machine.
'use strict';
const fs = require('fs');
const { readRun, headlineList, f, big, mb, markdown } = require('./report-common');

const [rawPath, metaPath, outBase] = process.argv.slice(2);
const { meta, results: R } = readRun(rawPath, metaPath);
const timing = meta.mode !== 'tiny';
const by = (phase) => R.filter((r) => r.phase === phase);
const find = (phase, name) => R.find((r) => r.phase === phase && r.name === name);

// ------------------------------------------------------------------ checks
// Recall at the default search width, LIMIT filled by every filtered query,
// recall after inserts: a run that fails one of them fails.
const failures = [];
const curve = by('curve').sort((a, b) => a.m.ef_search - b.m.ef_search);
const ef40 = find('curve', 'ef40');
if (!ef40 || !(ef40.m.recall >= 0.9)) failures.push(`recall@10 at ef_search = 40 is ${ef40 && ef40.m.recall}, below 0.9`);
for (const r of by('filter'))
	if (r.m.min_rows < 10) failures.push(`${r.name}: a query returned ${r.m.min_rows} rows, not 10`);
const afterIns = find('insert', 'recall_after_inserts');
if (!afterIns || !(afterIns.m.recall >= 0.9)) failures.push(`recall@10 after the inserts is ${afterIns && afterIns.m.recall}, below 0.9`);

// ---------------------------------------------------------------- headline
const headline = headlineList();
const H = headline.add;
const exact = find('exact', 'seqscan');
H('vector.exact.qps', exact && exact.m.qps, 'q/s', 'higher', false);
for (const b of by('build')) {
	H(`vector.build.${b.name}.seconds`, b.m.seconds, 's', 'lower');
	H(`vector.build.${b.name}.size_bytes`, b.m.size_bytes, 'bytes', 'lower');
}
for (const r of [...curve, ...by('filter')]) {
	H(`vector.${r.phase}.${r.name}.qps`, r.m.qps, 'q/s', 'higher');
	H(`vector.${r.phase}.${r.name}.recall`, r.m.recall, '', 'higher');
}
// the best q/s at a recall level, and as a ratio to the exact scan
const bestAt = (level) => {
	const ok = curve.filter((r) => r.m.recall >= level);
	return ok.length ? ok.reduce((a, b) => (b.m.qps > a.m.qps ? b : a)) : null;
};
for (const level of [0.95, 0.99]) {
	const b = bestAt(level);
	H(`vector.qps_at_recall_${level}`, b && b.m.qps, 'q/s', 'higher');
	H(`vector.qps_at_recall_${level}_vs_exact`, b && exact && b.m.qps / exact.m.qps, 'x', 'higher');
}
const ins = find('insert', 'archer_vector');
H('vector.insert.rows_per_s', ins && ins.m.rows_per_s, 'rows/s', 'higher');
const insBuffered = find('insert', 'buffered');
H('vector.insert_buffered.rows_per_s', insBuffered && insBuffered.m.rows_per_s, 'rows/s', 'higher');
const insNone = find('insert', 'none');
H('vector.insert_no_index.rows_per_s', insNone && insNone.m.rows_per_s, 'rows/s', 'higher', false);
H('vector.insert.wal_bytes_per_row', ins && ins.m.wal_bytes_per_row, 'B', 'lower');
H('vector.insert.recall_after', afterIns && afterIns.m.recall, '', 'higher');

const out = { meta, ok: failures.length === 0, failures, headline, results: R };
fs.writeFileSync(outBase + '.json', JSON.stringify(out, null, 1) + '\n');

// ---------------------------------------------------------------- markdown
const md = markdown();
const { line, table } = md;
const vsExact = (r) => (exact && r.m.qps ? f(r.m.qps / exact.m.qps, 0) + 'x' : '–');

line(`# archer_vector benchmark: ${meta.mode} run, ${meta.date}`);
line();
if (!timing)
	line('**Tiny run (CI harness check): the timings below are not measurements; the plans, the recall and the filtered row counts are checked.**\n');
line(out.ok ? '**Checks: passed** (plans use the intended index; every filtered query returned 10 rows; recall@10 >= 0.9 at the default search width and after the inserts).'
	: '**FAILED:**\n\n' + failures.map((x) => `- ${x}`).join('\n'));
line();
line('## Recall and speed');
line();
line(`Fashion-MNIST: ${big(meta.rows)} training images (784 raw pixel values, 0-255) as \`avector(784)\` rows (STORAGE PLAIN), the first ${big(meta.queries)} test images as queries. Speed: pgbench, one client, prepared statements, \`SELECT id FROM fm_train ORDER BY v <-> (SELECT v FROM fm_test WHERE id = :q) LIMIT 10\` with a random query id; q/s: median of ${meta.passes} timed passes of ${meta.seconds_per_pass} s after a warm-up pass; p50/p99 over every timed query. recall@10 over the ${big(meta.queries)} queries against the exact answer of a sequential scan on the same rows (a returned row counts when its exact distance is at most the 10th exact distance).`);
line();
const builds = by('build');
table(['index', 'build s', 'size MB'], builds.map((b) => [`\`${b.m.definition}\``, f(b.m.seconds, 1), mb(b.m.size_bytes)]));
table(['archer.ef_search', 'recall@10', 'q/s', 'p50 ms', 'p99 ms', 'vs exact scan'],
	curve.map((r) => [r.m.ef_search, f(r.m.recall, 4), big(r.m.qps), f(r.m.p50_ms, 3), f(r.m.p99_ms, 3), vsExact(r)]));
if (exact)
	line(`Exact scan (sequential scan + top-N sort, same harness): ${f(exact.m.qps, 2)} q/s, p50 ${f(exact.m.p50_ms, 1)} ms.`);
line();
for (const level of [0.95, 0.99]) {
	const b = bestAt(level);
	line(`- Best q/s at recall@10 >= ${level}: ${b ? `${big(b.m.qps)} (ef_search ${b.m.ef_search}, ${vsExact(b)} the exact scan)` : 'not reached by the widths measured'}`);
}
line();
line('## Filtered queries');
line();
line('10%: `WHERE label = 3`; 1%: `WHERE grp = 7` (grp = id % 100). "WHERE" rows: the conditions filter the rows an `archer_vector (v)` index streams; "filter column" rows: an `archer_vector (v, label, grp)` index applies them while it walks the graph. Recall against the exact filtered answer.');
line();
table(['configuration', 'selectivity', 'ef_search', 'recall@10', 'avg rows', 'min rows', 'q/s', 'p50 ms', 'p99 ms'],
	by('filter').map((r) => [r.name.startsWith('where') ? 'WHERE over (v)' : 'filter column',
		r.m.kind === 'label3' ? '10%' : '1%', r.m.ef_search, f(r.m.recall, 4), f(r.m.avg_rows, 1), r.m.min_rows,
		f(r.m.qps, 1), f(r.m.p50_ms, 2), f(r.m.p99_ms, 2)]));
if (ins) {
	line('## Inserts');
	line();
	line(`${big(ins.m.rows)} rows inserted into a table of ${big(Number(meta.rows) - ins.m.rows)} rows, in batches of ${big(ins.m.batch)} rows (INSERT ... SELECT, one COMMIT each, synchronous_commit=on). "buffered": the index WITH (insert_buffer = on), appends only (no merge during the run); the merge that follows is timed by archer_flush. Afterwards archer_vector_verify counts every row; recall@10 at ef_search 40 after the direct inserts: ${f(afterIns && afterIns.m.recall, 4)}.`);
	line();
	const none = find('insert', 'none'), buffered = find('insert', 'buffered'), flush = find('insert', 'flush');
	table(['index', 'rows/s', 'WAL bytes/row', 'vs direct'], [
		['none', big(none && none.m.rows_per_s), big(none && none.m.wal_bytes_per_row), none ? f(none.m.rows_per_s / ins.m.rows_per_s, 1) + 'x' : '–'],
		['archer_vector, direct', big(ins.m.rows_per_s), big(ins.m.wal_bytes_per_row), '1.0x'],
		['archer_vector, insert buffer (appends)', big(buffered && buffered.m.rows_per_s), big(buffered && buffered.m.wal_bytes_per_row),
			buffered ? f(buffered.m.rows_per_s / ins.m.rows_per_s, 1) + 'x' : '–'],
	]);
	if (flush)
		line(`archer_flush then merged ${big(flush.m.entries)} entries in ${f(flush.m.seconds, 1)} s (${big(flush.m.entries_per_s)} entries/s).`);
	line();
}
const idle = find('merge', 'idle'), during = find('merge', 'during');
if (idle && during) {
	H('vector.merge.during_vs_idle.qps', during.m.qps / idle.m.qps, 'x', 'higher');
	line('## Queries during merges');
	line();
	line(`The index after the inserts, ef_search 40: q/s and recall idle, then while a second client inserts ${big(during.m.ingest_rate)} rows/s through the index's insert buffer (${big(during.m.ingested)} rows during the measurement) and the background merge worker merges them into the same index (${big(during.m.merged_meanwhile)} entries merged meanwhile, ${big(during.m.buffered_at_end)} buffered at the end). The inserted rows are inverted images (255 - pixel), farther from every query than any image, so the exact answers do not change.`);
	line();
	table(['state', 'q/s', 'p50 ms', 'p99 ms', 'recall@10', 'q/s vs idle'], [
		['idle', f(idle.m.qps, 1), f(idle.m.p50_ms, 2), f(idle.m.p99_ms, 2), f(idle.m.recall, 4), '1.00'],
		['worker merging', f(during.m.qps, 1), f(during.m.p50_ms, 2), f(during.m.p99_ms, 2), f(during.m.recall, 4),
			f(during.m.qps / idle.m.qps, 2)],
	]);
	line();
}
line('## Conditions');
line();
table(['', ''], [
	['git', `${meta.git_sha}${meta.git_dirty === '1' ? ' (work tree with uncommitted changes)' : ''}`],
	['PostgreSQL', meta.pg_version], ['archer', `${meta.archer_version}, kernels: ${meta.kernel}`],
	['settings', `shared_buffers=${meta.shared_buffers}, maintenance_work_mem=${meta.maintenance_work_mem}, synchronous_commit=${meta.synchronous_commit}, jit=${meta.jit}, max_parallel_workers_per_gather=${meta.max_parallel_workers_per_gather}`],
	['machine', `${meta.cpu_model}, ${meta.cpu_count} CPUs, ${meta.memory}, load average at the end ${meta.load}`],
	['data directory', meta.data_fs],
]);
line('## Dataset files (sha256)');
line();
for (const k of Object.keys(meta).filter((k) => k.startsWith('sha256.')))
	line(`- ${k.slice(7)}: \`${meta[k]}\``);
fs.writeFileSync(outBase + '.md', md.text());

// ---------------------------------------------------------------- plot data
fs.writeFileSync(outBase + '.curve.dat',
	curve.map((r) => `"ef ${r.m.ef_search}" ${Number(r.m.recall).toFixed(4)} ${Number(r.m.qps).toFixed(1)}`).join('\n') + '\n');
