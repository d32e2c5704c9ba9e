// bench/lib/seeded.js: the seeded random numbers of the vector data sets,
// the same on every machine (mulberry32, and Box-Muller from two draws).
'use strict';

function rng(seed) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

// one standard normal draw from rand (a generator of rng)
function gaussian(rand) {
	let u = 0;
	while (u === 0) u = rand();
	return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
}

module.exports = { rng, gaussian };
