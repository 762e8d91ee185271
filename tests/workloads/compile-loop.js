// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Keeps compiling new functions and running each hot enough for V8 to
// optimize it, so code is created (and freed) throughout the run.
// usage: node [--perf-prof|--perf-basic-prof] compile-loop.js SECONDS
// SECONDS of the process's CPU time, not of the clock: a loaded machine
// gives it as many samples as an idle one.
'use strict';
const cpuSeconds = () => {
	const u = process.cpuUsage();
	return (u.user + u.system) / 1e6;
};
const deadline = cpuSeconds() + (Number(process.argv[2]) || 2);
let made = 0;
let acc = 0;
while (cpuSeconds() < deadline) {
	// A distinct name per function, so a wrong name is visible.
	const f = eval(`(function made_${made}(n) {
		let s = ${made}; for (let k = 0; k < n; k++) s = (s * 31 + k) | 0; return s;
	})`);
	for (let r = 0; r < 300; r++)
		acc ^= f(3000);
	made++;
}
console.log(`made ${made} ${acc}`);
