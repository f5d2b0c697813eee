// Probe (QuickJS): can the script reach a listener on the host's loopback? Usage: probe.js ID PORT TOKEN.
const [id, port, token] = scriptArgs;
if (typeof fetch !== "function") {
  console.log(`PROBE ${id} blocked no-network-api`);
} else {
  fetch(`http://127.0.0.1:${port}/${token}`).then(
    () => console.log(`PROBE ${id} reached connected`),
    () => console.log(`PROBE ${id} blocked connect-failed`),
  );
}
