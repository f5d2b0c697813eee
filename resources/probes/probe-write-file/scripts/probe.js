// Probe (QuickJS): can the script create a file outside the workspace? Usage: probe.js ID FOLDER TOKEN.
const [id, folder, token] = scriptArgs;
try {
  fs.writeText(`${folder}/probe-${id}.txt`, `${token}\n`);
  console.log(`PROBE ${id} reached wrote-file`);
} catch (error) {
  console.log(`PROBE ${id} blocked refused-by-fs`);
}
