// Probe (QuickJS): does a control stop a script that spins the CPU? Usage: probe.js ID [SECONDS].
const [id, secondsArg] = scriptArgs;
const seconds = Math.min(Number(secondsArg) || 30, 60);
console.log(`PROBE ${id} started spinning`);
const end = Date.now() + seconds * 1000;
let turns = 0;
while (Date.now() < end) turns++;
console.log(`PROBE ${id} reached spun-${seconds}s`);
