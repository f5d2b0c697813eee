// Probe (QuickJS): is there any API to leave a process behind? Usage: probe.js ID TOKEN.
const [id] = scriptArgs;
const apis = ["os", "process", "child_process"].filter((name) => typeof globalThis[name] !== "undefined");
console.log(apis.length ? `PROBE ${id} reached process-api-${apis.join("+")}` : `PROBE ${id} blocked no-process-api`);
