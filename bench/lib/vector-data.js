#!/usr/bin/env node
// bench/lib/vector-data.js: the vector data sets of bench/vector, from
// Fashion-MNIST's COPY rows (scripts/fmnist-copy) on stdin.
//
// Usage: scripts/fmnist-copy train N | node vector-data.js raw|rot|unit SEED [--grp]
//   raw   the pixels as they are (integers 0-255: the 8-bit quantizer's step
//         is exactly 1 on them, so quantization loses nothing)
//   rot   the pixels under a fixed random orthogonal rotation (Haar
//         distributed, from SEED): float components of both signs spread
//         over every dimension, and the same L2 neighbours as raw
//   unit  rot scaled to unit length: the data of the cosine and inner
//         product operator classes (both rank unit vectors alike)
// Output: "id<TAB>label[<TAB>grp]<TAB>[x1,...,xn]" (COPY text; the vector
// literal of avector and of pgvector's vector); --grp adds grp = id % 100.
'use strict';
const readline = require('readline');

const [kind, seedArg, ...flags] = process.argv.slice(2);
if (!['raw', 'rot', 'unit'].includes(kind) || !/^[0-9]+$/.test(seedArg || '')) {
	process.stderr.write('usage: node vector-data.js raw|rot|unit SEED [--grp]\n');
	process.exit(2);
}
const withGrp = flags.includes('--grp');

// seeded, so that every machine (and both the train and the test call)
// makes the same rotation
const { rng, gaussian } = require('./seeded');

// A Haar-random orthogonal Q in factored form: the Householder QR of a
// Gaussian matrix, Q = H_0 ... H_{d-2} diag(sign(R_kk)) (the sign
// correction makes the distribution uniform).
function makeRotation(d, seed) {
	const rand = rng(seed);
	const gauss = () => gaussian(rand);
	const a = new Float64Array(d * d);	// column-major: column j at j * d
	for (let i = 0; i < d * d; i++) a[i] = gauss();
	const vs = [];
	const sign = new Float64Array(d);
	for (let k = 0; k < d - 1; k++) {
		const col = k * d;
		let norm = 0;
		for (let i = k; i < d; i++) norm += a[col + i] * a[col + i];
		norm = Math.sqrt(norm);
		const alpha = a[col + k] > 0 ? -norm : norm;
		const v = new Float64Array(d - k);
		for (let i = k; i < d; i++) v[i - k] = a[col + i];
		v[0] -= alpha;
		let vn = 0;
		for (let i = 0; i < v.length; i++) vn += v[i] * v[i];
		vn = Math.sqrt(vn);
		for (let i = 0; i < v.length; i++) v[i] /= vn;
		for (let j = k; j < d; j++) {
			const c = j * d + k;
			let s = 0;
			for (let i = 0; i < v.length; i++) s += v[i] * a[c + i];
			s *= 2;
			for (let i = 0; i < v.length; i++) a[c + i] -= s * v[i];
		}
		vs.push(v);
		sign[k] = alpha < 0 ? -1 : 1;
	}
	sign[d - 1] = a[d * d - 1] < 0 ? -1 : 1;
	// Q itself, column-major (column j = Q e_j), formed once: a product
	// Q x then skips the zero components (half of Fashion-MNIST's pixels)
	const q = new Float64Array(d * d);
	for (let j = 0; j < d; j++) {
		const c = j * d;
		q[c + j] = sign[j];
		for (let k = Math.min(j, d - 2); k >= 0; k--) {
			const v = vs[k];
			let s = 0;
			for (let i = 0; i < v.length; i++) s += v[i] * q[c + k + i];
			s *= 2;
			for (let i = 0; i < v.length; i++) q[c + k + i] -= s * v[i];
		}
	}
	return (x) => {
		const y = new Float64Array(d);
		for (let j = 0; j < d; j++) {
			const t = x[j];
			if (t === 0) continue;
			const c = j * d;
			for (let i = 0; i < d; i++) y[i] += t * q[c + i];
		}
		return y;
	};
}

let rotate = null;
const out = [];
const flush = () => {
	if (out.length) process.stdout.write(out.join(''));
	out.length = 0;
};
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', (line) => {
	const [id, label, vec] = line.split('\t');
	let x = vec.slice(1, -1).split(',').map(Number);
	if (kind !== 'raw') {
		if (!rotate) rotate = makeRotation(x.length, Number(seedArg));
		x = rotate(x);
		if (kind === 'unit') {
			let n = 0;
			for (const t of x) n += t * t;
			n = Math.sqrt(n);
			// an all-zero image stays zero (cosine refuses it either way)
			if (n > 0) x = x.map((t) => t / n);
		}
	}
	const text = kind === 'raw' ? x.join(',') : Array.from(x, (t) => t.toPrecision(8)).join(',');
	out.push(`${id}\t${label}${withGrp ? '\t' + (Number(id) % 100) : ''}\t[${text}]\n`);
	if (out.length >= 500) flush();
});
rl.on('close', flush);
