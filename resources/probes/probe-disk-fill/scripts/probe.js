// Probe (QuickJS): does a limit stop a script that fills the workspace with many 1 MiB files?
// Usage: probe.js ID TOTAL_BYTES (at most 512 MiB). Removes its files at the end.
const [id, totalArg] = scriptArgs;
const total = Math.min(Number(totalArg) || 0, 512 * 1024 * 1024);
const block = "x".repeat(1024 * 1024);
let written = 0;
let n = 0;
try {
  while (written < total) {
    n += 1;
    fs.writeText(`probe-disk-fill/fill-${n}`, block);
    written += block.length;
  }
  console.log(`PROBE ${id} reached wrote-${written}-bytes`);
} catch (error) {
  console.log(`PROBE ${id} blocked refused-by-fs-after-${written}-bytes`);
}
for (const name of fs.exists("probe-disk-fill") ? fs.list("probe-disk-fill") : []) fs.remove(`probe-disk-fill/${name}`);
if (fs.exists("probe-disk-fill")) fs.remove("probe-disk-fill");
