// Probe (QuickJS): is there any API to change the process's limits? Usage: probe.js ID.
const [id] = scriptArgs;
const apis = ["os", "process"].filter((name) => typeof globalThis[name] !== "undefined");
console.log(apis.length ? `PROBE ${id} reached process-api-${apis.join("+")}` : `PROBE ${id} blocked no-rlimit-api`);
