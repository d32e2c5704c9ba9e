#!/usr/bin/env node
// bench/lib/vector-clustered.js: seeded clustered vectors for the scale
// runs of bench/vector-scale, as COPY text "id<TAB>[x1,...,xD]".
//
// Usage: node vector-clustered.js ROWS DIM SEED [queries]
//   ROWS points of one mixture of 1,000 Gaussian clusters: centres with
//   components uniform in [-1, 1], each point a centre plus N(0, 0.25^2)
//   per component, numbered from 1. The mixture depends on SEED and DIM
//   only, so that the 1x and 10x sets of a growth run come from one
//   distribution. With "queries", the points come from another stream of
//   the same mixture: none of them is a row.
'use strict';

const [rowsArg, dimArg, seedArg, what] = process.argv.slice(2);
const rows = parseInt(rowsArg, 10), dim = parseInt(dimArg, 10), seed = parseInt(seedArg, 10);
if (!(rows > 0) || !(dim > 0) || !(seed >= 0) || (what !== undefined && what !== 'queries')) {
	process.stderr.write('usage: node vector-clustered.js ROWS DIM SEED [queries]\n');
	process.exit(2);
}

const { rng, gaussian } = require('./seeded');

const ncentres = 1000;
const centreRand = rng(seed);
const centres = new Float64Array(ncentres * dim);
for (let i = 0; i < centres.length; i++) centres[i] = 2 * centreRand() - 1;
const rand = rng(what === 'queries' ? (seed ^ 0x5bd1e995) : seed + 1);

function line(id) {
	const c = Math.floor(rand() * ncentres) * dim;
	const x = new Array(dim);
	for (let j = 0; j < dim; j++) x[j] = Math.fround(centres[c + j] + 0.25 * gaussian(rand)).toPrecision(7);
	return id + '\t[' + x.join(',') + ']\n';
}

async function main() {
	let buf = '';
	for (let id = 1; id <= rows; id++) {
		buf += line(id);
		if (buf.length >= 1 << 20) {
			// wait for the pipe to drain: memory stays bounded at any ROWS
			if (!process.stdout.write(buf))
				await new Promise((resolve) => process.stdout.once('drain', resolve));
			buf = '';
		}
	}
	process.stdout.write(buf);
}
main();
