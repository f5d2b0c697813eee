// Probe (QuickJS): does the workbench show terminal escape sequences as plain text? Usage: probe.js ID.
const [id] = scriptArgs;
console.log("title: \x1b]0;probe-escape-title\x07 colour: \x1b[1;31mRED\x1b[0m bell: \x07");
console.log(`PROBE ${id} reached printed-escapes`);
