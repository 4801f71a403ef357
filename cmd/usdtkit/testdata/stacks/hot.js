// hot.js: Node code that V8 compiles, for TestTraceStackNode. Run as
//   node --perf-prof --interpreted-frames-native-stack hot.js
// (V8 then writes jit-PID.dump in the working directory). On each line of
// stdin it runs outer, whose calls of hotStat reach the C library's
// access(2) through fs.existsSync, and prints "done"; at the end of its
// input it exits.
const fs = require('fs');
const readline = require('readline');

function hotStat() { return fs.existsSync('/nonexistent-usdtkit-hot-js'); }

function outer() {
	let n = 0;
	for (let i = 0; i < 20000; i++) {
		if (hotStat()) n++;
	}
	return n;
}

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', () => { outer(); console.log('done'); });
rl.on('close', () => process.exit(0));
