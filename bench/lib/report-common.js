// bench/lib/report-common.js: what bench/lib/report.js (geo) and
// bench/lib/report-vector.js share: reading a run's raw results and
// metadata, the headline list bench/compare reads, number formats and a
// Markdown builder.
'use strict';
const fs = require('fs');

// RAW_JSON (from SQL) and META_TSV (key<TAB>value lines) of one run
function readRun(rawPath, metaPath) {
	const raw = JSON.parse(fs.readFileSync(rawPath, 'utf8'));
	const meta = {};
	for (const line of fs.readFileSync(metaPath, 'utf8').split('\n')) {
		const tab = line.indexOf('\t');
		if (tab > 0) meta[line.slice(0, tab)] = line.slice(tab + 1);
	}
	return { raw, meta, results: raw.results || [] };
}

// headline figures: {key, value, unit, better, gate}; gate=false marks a
// control that bench/compare prints but never fails on
function headlineList() {
	const list = [];
	list.add = (key, value, unit, better, gate = true) => {
		if (value !== null && value !== undefined && Number.isFinite(Number(value)))
			list.push({ key, value: Number(value), unit, better, gate });
	};
	return list;
}

const f = (x, d = 1) => (x === null || x === undefined || !Number.isFinite(Number(x)) ? '–' : Number(x).toFixed(d));
const big = (x) => (x === null || x === undefined ? '–' : Math.round(Number(x)).toLocaleString('en-US'));
const mb = (x) => f(Number(x) / 1048576, 1);
const ratio = (a, b, d = 2) => (a && b ? f(Number(a) / Number(b), d) + 'x' : '–');

// a Markdown document: md.line(text), md.table(head, rows), md.text()
function markdown() {
	const lines = [];
	const line = (s = '') => lines.push(s);
	const table = (head, rows) => {
		line('| ' + head.join(' | ') + ' |');
		line('|' + head.map((h, i) => (i === 0 ? ' --- |' : ' ---: |')).join(''));
		for (const r of rows) line('| ' + r.join(' | ') + ' |');
		line();
	};
	return { line, table, text: () => lines.join('\n') + '\n' };
}

module.exports = { readRun, headlineList, f, big, mb, ratio, markdown };
