#!/usr/bin/env node
// bench/lib/report-vector.js: turns the raw measurements of one bench/vector
// run into its result files.
//
// Usage: node report-vector.js RAW_JSON META_TSV OUT_BASE
//   RAW_JSON  {"results": [vbench_result rows]} from SQL
//   META_TSV  key<TAB>value lines (machine, versions, settings, hashes)
//   OUT_BASE  writes OUT_BASE.json, OUT_BASE.md and, for the plot,
//             OUT_BASE.curve.dat (recall, q/s per setting, one block per
//             data set, operator and participant) and OUT_BASE.plot.gp
//             (the gnuplot script that draws them into OUT_BASE.svg)
//
// The JSON's "headline" list is what bench/compare compares between runs;
// the exact scan's and pgvector's figures, and the ratios to pgvector, are
// controls (gate=false): they track the machine and the other product.
'use strict';
const fs = require('fs');
const { readRun, headlineList, f, big, mb, markdown } = require('./report-common');

const [rawPath, metaPath, outBase] = process.argv.slice(2);
const { meta, results: R } = readRun(rawPath, metaPath);
const timing = meta.mode !== 'tiny';
const by = (phase) => R.filter((r) => r.phase === phase);
const find = (phase, name) => R.find((r) => r.phase === phase && r.name === name);

const OPS = { '<->': 'l2', '<#>': 'ip', '<=>': 'cosine' };
const OP_TEXT = { '<->': 'L2 (`<->`)', '<#>': 'inner product (`<#>`)', '<=>': 'cosine (`<=>`)' };
const SETS = {
	fm: 'fm: raw Fashion-MNIST pixels (integers 0-255)',
	rot: 'rot: the images under a fixed random orthogonal rotation (float components)',
	unit: 'unit: rot normalized to unit length',
};
const PANELS = [['fm', '<->'], ['rot', '<->'], ['unit', '<=>'], ['unit', '<#>']];
const PARTS = ['archer', 'archer_real', 'pgvector_hnsw', 'pgvector_ivfflat'];
const PART_TEXT = {
	archer: 'archer_vector (avector)', archer_real: 'archer_vector (real[])',
	archer_column: 'archer_vector (v, label, grp)',
	pgvector_hnsw: 'pgvector HNSW', pgvector_ivfflat: 'pgvector IVFFlat', exact: 'exact scan',
};
const isArcher = (p) => p.startsWith('archer');
// one colour and point type per participant in every panel of the plot
const PART_STYLE = {
	archer: 'lc rgb "#4477aa" pt 7', archer_real: 'lc rgb "#66ccee" pt 9',
	pgvector_hnsw: 'lc rgb "#cc4444" pt 5', pgvector_ivfflat: 'lc rgb "#ee9944" pt 13',
};

const avail = find('pgvector', 'availability');
const pgvOk = !!(avail && avail.m.available);
const pgvAbsent = avail && !avail.m.available ? `pgvector: ${avail.m.reason}` : 'pgvector: not measured';

// the sweep of one participant on one data set and operator, by setting
const curveOf = (ds, op, part) => by('curve')
	.filter((r) => r.m.dataset === ds && r.m.op === op && r.m.participant === part)
	.sort((a, b) => (a.m.ef_search || a.m.probes) - (b.m.ef_search || b.m.probes));
// the fastest configuration whose recall reaches level
const bestAt = (rows, level) => {
	const ok = rows.filter((r) => r.m.recall >= level);
	return ok.length ? ok.reduce((a, b) => (b.m.qps > a.m.qps ? b : a)) : null;
};

// ------------------------------------------------------------------ checks
// archer on fm, as before pgvector took part: recall at the default search
// width, LIMIT filled by every filtered query, recall after inserts. A run
// that fails one of them fails. The other data sets' figures are reported,
// not checked: how much the quantizer costs there is what they measure.
const failures = [];
const ef40 = find('curve', 'fm.l2.archer.ef40');
if (!ef40 || !(ef40.m.recall >= 0.9)) failures.push(`fm: archer's recall@10 at ef_search = 40 is ${ef40 && ef40.m.recall}, below 0.9`);
for (const r of by('filter'))
	if (r.m.dataset === 'fm' && isArcher(r.m.participant) && r.m.min_rows < 10)
		failures.push(`${r.name}: a query returned ${r.m.min_rows} rows, not 10`);
const afterIns = find('insert', 'recall_after_inserts');
if (!afterIns || !(afterIns.m.recall >= 0.9)) failures.push(`recall@10 after the inserts is ${afterIns && afterIns.m.recall}, below 0.9`);

// ---------------------------------------------------------------- headline
const headline = headlineList();
const H = headline.add;
const exact = find('exact', 'fm.l2.exact');
H('vector.exact.qps', exact && exact.m.qps, 'q/s', 'higher', false);
// (the rounds of the parallel comparison: in the report's table only)
for (const b of by('build').filter((o) => o.m.round === undefined)) {
	H(`vector.build.${b.name}.seconds`, b.m.seconds, 's', 'lower', isArcher(b.m.participant));
	H(`vector.build.${b.name}.size_bytes`, b.m.size_bytes, 'bytes', 'lower', isArcher(b.m.participant));
}
for (const r of [...by('curve'), ...by('filter')]) {
	H(`vector.${r.name}.qps`, r.m.qps, 'q/s', 'higher', isArcher(r.m.participant));
	H(`vector.${r.name}.recall`, r.m.recall, '', 'higher', isArcher(r.m.participant));
}
const LEVELS = [0.95, 0.99];
for (const [ds, op] of PANELS) {
	for (const part of PARTS)
		for (const level of LEVELS) {
			const b = bestAt(curveOf(ds, op, part), level);
			H(`vector.${ds}.${OPS[op]}.${part}.qps_at_recall_${level}`, b && b.m.qps, 'q/s', 'higher', isArcher(part));
		}
	for (const level of LEVELS) {
		const a = bestAt(curveOf(ds, op, 'archer'), level), p = bestAt(curveOf(ds, op, 'pgvector_hnsw'), level);
		H(`vector.${ds}.${OPS[op]}.archer_vs_pgvector_hnsw.qps_at_recall_${level}`, a && p && a.m.qps / p.m.qps, 'x', 'higher', false);
	}
}
for (const level of LEVELS) {
	const b = bestAt(curveOf('fm', '<->', 'archer'), level);
	H(`vector.qps_at_recall_${level}_vs_exact`, b && exact && b.m.qps / exact.m.qps, 'x', 'higher');
}
// the median pass of an insert participant with that many sessions
const insertMedian = (name, sessions) => {
	const passes = by('insert').filter((r) => r.name === name && r.m.sessions === sessions)
		.sort((a, b) => a.m.rows_per_s - b.m.rows_per_s);
	return passes.length ? passes[(passes.length - 1) >> 1] : null;
};
const ins = insertMedian('archer_vector', 1), ins2 = insertMedian('archer_vector', 2);
const insBuffered = insertMedian('buffered', 1), insNone = insertMedian('none', 1);
const insPgv = insertMedian('pgvector_hnsw', 1), insPgv2 = insertMedian('pgvector_hnsw', 2);
H('vector.insert.rows_per_s', ins && ins.m.rows_per_s, 'rows/s', 'higher');
H('vector.insert_buffered.rows_per_s', insBuffered && insBuffered.m.rows_per_s, 'rows/s', 'higher');
H('vector.insert_no_index.rows_per_s', insNone && insNone.m.rows_per_s, 'rows/s', 'higher', false);
H('vector.insert.wal_bytes_per_row', ins && ins.m.wal_bytes_per_row, 'B', 'lower');
H('vector.insert_2_sessions_vs_1', ins && ins2 && ins2.m.rows_per_s / ins.m.rows_per_s, 'x', 'higher');
H('vector.insert.archer_vs_pgvector_hnsw', ins && insPgv && ins.m.rows_per_s / insPgv.m.rows_per_s, 'x', 'higher', false);
H('vector.insert.recall_after', afterIns && afterIns.m.recall, '', 'higher');
const idle = find('merge', 'idle'), during = find('merge', 'during');
if (idle && during) H('vector.merge.during_vs_idle.qps', during.m.qps / idle.m.qps, 'x', 'higher');
// fm, L2, ef_search 40: one pgbench client and two
const clientsRun = (part, n) => by('clients').find((r) => r.m.participant === part && r.m.clients === n);
for (const part of ['archer', 'pgvector_hnsw']) {
	const one = clientsRun(part, 1), two = clientsRun(part, 2);
	H(`vector.fm.l2.${part}.qps_2_clients`, two && two.m.qps, 'q/s', 'higher', isArcher(part));
	H(`vector.fm.l2.${part}.clients_2_vs_1`, one && two && two.m.qps / one.m.qps, 'x', 'higher', false);
}
{
	const a = clientsRun('archer', 2), p = clientsRun('pgvector_hnsw', 2);
	H('vector.fm.l2.archer_vs_pgvector_hnsw.qps_2_clients', a && p && a.m.qps / p.m.qps, 'x', 'higher', false);
}

const out = { meta, ok: failures.length === 0, failures, pgvector: avail ? avail.m : null, headline, results: R };
fs.writeFileSync(outBase + '.json', JSON.stringify(out, null, 1) + '\n');

// ---------------------------------------------------------------- markdown
const md = markdown();
const { line, table } = md;
const x = (a, b, d = 2) => (a && b ? f(a / b, d) + 'x' : '–');

line(`# Vector benchmark (archer_vector${pgvOk ? ' and pgvector' : ''}): ${meta.mode} run, ${meta.date}`);
line();
if (!timing)
	line('**Tiny run (CI harness check): the timings below are not measurements; the plans, the recall and the filtered row counts are checked.**\n');
line(out.ok ? '**Checks: passed** (plans use the intended index; archer on fm: every filtered query returned 10 rows, recall@10 >= 0.9 at the default search width and after the inserts).'
	: '**FAILED:**\n\n' + failures.map((s) => `- ${s}`).join('\n'));
line();
line(pgvOk ? `**pgvector ${avail.m.version}** takes part, in the same cluster, on tables holding the same values, the participants taking turns pass by pass.`
	: `**${pgvAbsent}.** Its participants (HNSW, IVFFlat, iterative scans) were not measured in this run; every table below that would list them says so.`);
line();
line('## Data and method');
line();
line(`Fashion-MNIST: ${big(meta.rows)} training images (784 dimensions) as rows, the first ${big(meta.queries)} test images as queries, in three data sets: ${Object.values(SETS).join('; ')} (rotation seed ${meta.rotation_seed}; a rotation keeps every L2 distance, so rot has fm's neighbours, but its components are floats of both signs, which archer's 8-bit quantizer cannot store exactly). Each participant has a table of its own holding the same values (cast through real[], exact), same layout (STORAGE PLAIN, one vector per row). Speed: pgbench, one client (but in "Two clients"), prepared statements, \`SELECT id FROM t WHERE ... ORDER BY v <op> (SELECT v FROM t_test WHERE id = :q) LIMIT 10\` with a random query id; q/s: median of ${meta.passes} timed passes of ${meta.seconds_per_pass} s after a warm-up pass, the configurations of a data set taking turns; p50/p99 over every timed query. recall@10 over the ${big(meta.queries)} queries against the exact answer of a sequential scan (a returned row counts when its exact distance, computed on archer's table, is at most the 10th exact distance).`);
line();
line('## Index builds');
line();
line(`One backend (\`max_parallel_maintenance_workers = 0\`) for every participant, maintenance_work_mem=${meta.maintenance_work_mem}.${pgvOk ? '' : ` ${pgvAbsent}.`}`);
line();
const allBuilds = by('build');
// the rounds of the parallel comparison have a table of their own
const builds = allBuilds.filter((b) => b.m.round === undefined);
const pgvBuild = (b) => builds.find((o) => o.m.participant === 'pgvector_hnsw' && o.m.dataset === b.m.dataset && o.m.op === b.m.op);
table(['data set', 'operator', 'participant', 'index', 'build s', 'size MB', 'build vs pgvector HNSW', 'size vs pgvector HNSW'],
	builds.map((b) => {
		const p = isArcher(b.m.participant) ? pgvBuild(b) : null;
		return [b.m.dataset, OPS[b.m.op], PART_TEXT[b.m.participant] || b.m.participant, `\`${b.m.definition}\``,
			f(b.m.seconds, 1), mb(b.m.size_bytes), p ? x(b.m.seconds, p.m.seconds) : '–', p ? x(b.m.size_bytes, p.m.size_bytes) : '–'];
	}));
const rounds = allBuilds.filter((b) => b.m.round !== undefined);
if (rounds.length) {
	const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
	const secs = (part, w) => rounds.filter((b) => b.m.participant === part && (b.m.workers || 0) === w).map((b) => b.m.seconds);
	const nrounds = Math.max(...rounds.map((b) => b.m.round));
	line();
	line(`Parallel builds, ${rounds[0].m.dataset} under L2: serial and with 2 workers (\`max_parallel_maintenance_workers = 2\`), ${nrounds} rounds taking turns, median round (each index dropped after its build):`);
	line();
	const rows = [];
	for (const part of ['archer', 'pgvector_hnsw']) {
		const s0 = secs(part, 0), s2 = secs(part, 2);
		if (!s0.length || !s2.length) continue;
		const speedup = median(s0) / median(s2);
		const goal = isArcher(part) ? (speedup >= 1.6 ? ' (issue #26: >= 1.6x, met)' : ' (**issue #26: >= 1.6x, missed**)') : '';
		rows.push([PART_TEXT[part] || part, f(median(s0), 2), f(median(s2), 2), `${f(speedup, 2)}x${goal}`,
			s0.map((v) => f(v, 2)).join(' / '), s2.map((v) => f(v, 2)).join(' / ')]);
	}
	table(['participant', 'serial s', '2 workers s', 'speed-up', 'serial rounds', '2 workers rounds'], rows);
	const a2 = secs('archer', 2), p2 = secs('pgvector_hnsw', 2);
	if (a2.length && p2.length)
		line(`- With 2 workers each: archer ${f(median(a2), 2)} s against pgvector HNSW ${f(median(p2), 2)} s, ${x(median(a2), median(p2))} (issue #24: build <= 0.5x pgvector's).`);
}
line();

line('## Recall and speed');
line();
if (exact)
	line(`Exact scan of fm (sequential scan + top-N sort, same harness): ${f(exact.m.qps, 2)} q/s, p50 ${f(exact.m.p50_ms, 1)} ms.`);
line();
line('Best q/s at a recall@10 level (the fastest setting that reaches it):');
line();
const sumRows = [];
for (const [ds, op] of PANELS)
	for (const level of LEVELS) {
		const cell = (part) => {
			const b = bestAt(curveOf(ds, op, part), level);
			if (!curveOf(ds, op, part).length) return part.startsWith('pgvector') && !pgvOk ? 'not available' : '–';
			return b ? `${big(b.m.qps)} (${b.m.setting})` : 'not reached';
		};
		const a = bestAt(curveOf(ds, op, 'archer'), level), p = bestAt(curveOf(ds, op, 'pgvector_hnsw'), level);
		sumRows.push([ds, OPS[op], level, cell('archer'), cell('archer_real'), cell('pgvector_hnsw'), cell('pgvector_ivfflat'),
			a && p ? x(a.m.qps, p.m.qps) : '–']);
	}
table(['data set', 'operator', 'recall >=', 'archer (avector)', 'archer (real[])', 'pgvector HNSW', 'pgvector IVFFlat', 'archer / pgvector HNSW'], sumRows);
for (const [ds, op] of PANELS) {
	line(`### ${SETS[ds]}; ${OP_TEXT[op]}`);
	line();
	const rows = PARTS.flatMap((part) => curveOf(ds, op, part));
	table(['participant', 'setting', 'recall@10', 'q/s', 'p50 ms', 'p99 ms'],
		rows.map((r) => [PART_TEXT[r.m.participant], r.m.setting, f(r.m.recall, 4), big(r.m.qps), f(r.m.p50_ms, 3), f(r.m.p99_ms, 3)]));
	if (!pgvOk) {
		line(`pgvector HNSW and IVFFlat: ${avail ? avail.m.reason : 'not measured'}.`);
		line();
	}
}

if (by('clients').length) {
	line('## Two clients');
	line();
	line(`fm under L2 at \`ef_search\` 40 (the default of both), pgbench with one client and with two at once (\`-c 2 -j 2\`, on ${meta.cpu_count || '?'} CPUs), the configurations taking turns; q/s of the clients together, recall@10 as above.`);
	line();
	const rows = [];
	for (const part of ['archer', 'pgvector_hnsw']) {
		const one = clientsRun(part, 1), two = clientsRun(part, 2);
		if (!one && !two) {
			rows.push([PART_TEXT[part], '–', 'not available', 'not available', '–']);
			continue;
		}
		rows.push([PART_TEXT[part], f((one || two).m.recall, 4), big(one && one.m.qps), big(two && two.m.qps),
			one && two ? x(two.m.qps, one.m.qps) : '–']);
	}
	table(['participant', 'recall@10', 'q/s, 1 client', 'q/s, 2 clients', '2 clients vs 1'], rows);
	const a = clientsRun('archer', 2), p = clientsRun('pgvector_hnsw', 2);
	if (a && p)
		line(`With two clients archer answers ${x(a.m.qps, p.m.qps)} the queries pgvector HNSW does.`);
	line();
}

line('## Filtered queries');
line();
line('10%: `WHERE label = 3`; 1%: `WHERE grp = 7` (grp = id % 100), L2. archer "WHERE over (v)": the conditions filter the rows an `archer_vector (v)` index streams; "filter column": an `archer_vector (v, label, grp)` index applies them while it walks the graph; both in `archer.vector_order` strict (rows in exact distance order) and relaxed. pgvector HNSW: `hnsw.iterative_scan` relaxed_order and strict_order (default `hnsw.max_scan_tuples`). Recall against the exact filtered answer.');
line();
const sel = (k) => (k === 'label3' ? '10%' : '1%');
for (const ds of ['fm', 'rot']) {
	const rows = by('filter').filter((r) => r.m.dataset === ds);
	if (!rows.length) continue;
	line(`### ${SETS[ds]}`);
	line();
	const sum = [];
	for (const kind of ['label3', 'grp7']) {
		const k = rows.filter((r) => r.m.kind === kind);
		const a = bestAt(k.filter((r) => isArcher(r.m.participant)), 0.95);
		const p = bestAt(k.filter((r) => r.m.participant === 'pgvector_hnsw'), 0.95);
		sum.push([sel(kind), a ? `${big(a.m.qps)} (${PART_TEXT[a.m.participant]}, ${a.m.setting}, recall ${f(a.m.recall, 3)})` : 'not reached',
			pgvOk ? (p ? `${big(p.m.qps)} (${p.m.setting}, recall ${f(p.m.recall, 3)})` : 'not reached') : 'not available',
			a && p ? x(a.m.qps, p.m.qps) : '–']);
	}
	line('Best q/s at recall@10 >= 0.95:');
	line();
	table(['selectivity', 'archer', 'pgvector HNSW, iterative scan', 'archer / pgvector'], sum);
	table(['participant', 'how', 'selectivity', 'setting', 'recall@10', 'avg rows', 'min rows', 'q/s', 'p50 ms', 'p99 ms'],
		rows.sort((a, b) => a.m.kind.localeCompare(b.m.kind) || a.m.participant.localeCompare(b.m.participant))
			.map((r) => [PART_TEXT[r.m.participant], r.m.how, sel(r.m.kind), r.m.setting, f(r.m.recall, 4), f(r.m.avg_rows, 1), r.m.min_rows,
				big(r.m.qps), f(r.m.p50_ms, 2), f(r.m.p99_ms, 2)]));
	if (!pgvOk) {
		line(`pgvector's iterative scans: ${avail ? avail.m.reason : 'not measured'}.`);
		line();
	}
}

if (ins) {
	line('## Inserts');
	line();
	line(`${big(ins.m.rows)} rows of fm inserted into a table of ${big(Number(meta.rows) - ins.m.rows)} rows (a fresh copy per pass, with its primary key), in batches of ${big(ins.m.batch)} rows (INSERT ... SELECT, one durable COMMIT each), by one session, or by two at once taking alternate batches; timed from the first row until the index holds every row: "insert buffer" is archer_vector WITH (insert_buffer = on), its span ending with archer_flush, which merges the buffer; WAL bytes of the whole span. pgvector HNSW (m 16, ef_construction 64) inserts the same rows from a vector copy. The participants take turns pass by pass; median of ${big(Math.max(...by('insert').filter((r) => r.m.pass !== undefined).map((r) => r.m.pass)))} pass(es). archer_vector_verify counts every row after each archer pass; recall@10 at ef_search 40 after the direct inserts: ${f(afterIns && afterIns.m.recall, 4)}.`);
	line();
	const vsPgv = (r) => (r && insPgv ? f(r.m.rows_per_s / insPgv.m.rows_per_s, 2) + 'x' : '–');
	const row = (label, r) => [label, big(r && r.m.rows_per_s), big(r && r.m.wal_bytes_per_row), vsPgv(r)];
	const rowsOut = [
		row('none', insNone),
		row('archer_vector, direct', ins),
		row('archer_vector, insert buffer (merge counted)', insBuffered),
		row('archer_vector, direct, 2 sessions', ins2),
	];
	if (insPgv)
		rowsOut.push(row('pgvector HNSW', insPgv), row('pgvector HNSW, 2 sessions', insPgv2));
	table(['index', 'rows/s', 'WAL bytes/row', 'vs pgvector HNSW, 1 session'], rowsOut);
	if (ins2)
		line(`Two sessions against one: archer_vector ${f(ins2.m.rows_per_s / ins.m.rows_per_s, 2)}x${insPgv && insPgv2 ? `, pgvector HNSW ${f(insPgv2.m.rows_per_s / insPgv.m.rows_per_s, 2)}x` : ''}.`);
	if (!insPgv)
		line(`pgvector's inserts: ${avail ? avail.m.reason : 'not measured'}.`);
	line();
}
if (idle && during) {
	line('## Queries during merges (archer)');
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
	['pgvector', meta.pgvector_version],
	['settings', `shared_buffers=${meta.shared_buffers}, maintenance_work_mem=${meta.maintenance_work_mem}, synchronous_commit=${meta.synchronous_commit}, jit=${meta.jit}, max_parallel_workers_per_gather=${meta.max_parallel_workers_per_gather}`],
	['IVFFlat lists', meta.ivfflat_lists],
	['machine', `${meta.cpu_model}, ${meta.cpu_count} CPUs, ${meta.memory}, load average at the end ${meta.load}`],
	['data directory', meta.data_fs],
]);
line('## Dataset files (sha256)');
line();
for (const k of Object.keys(meta).filter((k) => k.startsWith('sha256.')))
	line(`- ${k.slice(7)}: \`${meta[k]}\``);
fs.writeFileSync(outBase + '.md', md.text());

// ---------------------------------------------------------------- plot
// one panel per data set and operator, one line per participant; blocks
// of the .dat file are separated by two blank lines (gnuplot's "index")
const blocks = [];
const panels = [];
for (const [ds, op] of PANELS) {
	const lines = [];
	for (const part of PARTS) {
		const rows = curveOf(ds, op, part);
		if (!rows.length) continue;
		lines.push({ index: blocks.length, title: PART_TEXT[part], style: PART_STYLE[part] });
		blocks.push(rows.map((r) => `${Number(r.m.recall).toFixed(4)} ${Number(r.m.qps).toFixed(1)} "${r.m.setting.replace(/^(ef_search|probes) /, '')}"`).join('\n'));
	}
	if (lines.length) panels.push({ title: `${ds}, ${OPS[op]}`, lines });
}
fs.writeFileSync(outBase + '.curve.dat', blocks.join('\n\n\n') + '\n');
const q = (s) => `"${s.replace(/"/g, '\\"')}"`;
const gp = [
	'set terminal svg size 1200,900 dynamic font "sans,10"',
	'set termoption noenhanced',
	`set output ${q(outBase + '.svg')}`,
	`set multiplot layout 2,2 title ${q(`recall@10 vs q/s (one client, log scale), Fashion-MNIST; ${pgvOk ? `pgvector ${avail.m.version}` : 'pgvector not available on PostgreSQL ' + (avail ? avail.m.pg_major : '?')} — ${meta.mode} run, ${meta.git_sha}`)}`,
	'set logscale y',
	'set grid',
	'set key bottom left',
	'set xlabel "recall@10"',
	'set ylabel "queries per second"',
];
for (const p of panels) {
	gp.push(`set title ${q(p.title)}`);
	gp.push('plot ' + p.lines.map((l) => `${q(outBase + '.curve.dat')} index ${l.index} using 1:2 with linespoints ${l.style} lw 2 title ${q(l.title)}`).join(', \\\n\t'));
}
gp.push('unset multiplot');
fs.writeFileSync(outBase + '.plot.gp', gp.join('\n') + '\n');
