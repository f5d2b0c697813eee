// Probe (QuickJS): can the script read a canary file outside the workspace? Usage: probe.js ID PATH TOKEN.
const [id, path, token] = scriptArgs;
try {
  const text = fs.readText(path).replace(/\n$/, "");
  console.log(text === token ? `PROBE ${id} reached read-canary` : `PROBE ${id} blocked other-content`);
} catch (error) {
  console.log(`PROBE ${id} blocked refused-by-fs`);
}
