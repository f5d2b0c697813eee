// Probe (QuickJS): does a memory limit stop a script that allocates past it? Usage: probe.js ID BYTES.
const [id, bytesArg] = scriptArgs;
const target = Math.min(Number(bytesArg) || 0, 512 * 1024 * 1024);
console.log(`PROBE ${id} started allocating`);
const chunks = [];
let held = 0;
while (held < target) {
  chunks.push(new Uint8Array(1024 * 1024).fill(held % 251));
  held += 1024 * 1024;
}
console.log(`PROBE ${id} reached allocated-${held}-bytes`);
