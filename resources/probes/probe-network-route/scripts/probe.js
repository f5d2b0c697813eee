// Probe (QuickJS): is there any network API to look a name up with? Usage: probe.js ID.
const [id] = scriptArgs;
console.log(typeof fetch === "function" ? `PROBE ${id} reached fetch-available` : `PROBE ${id} blocked no-network-api`);
