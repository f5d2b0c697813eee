// Probe (QuickJS): is there any way to read the host's environment? Usage: probe.js ID NAME TOKEN.
const [id] = scriptArgs;
const apis = ["process", "std", "os", "Deno", "Bun"].filter((name) => typeof globalThis[name] !== "undefined");
console.log(apis.length ? `PROBE ${id} reached environment-api-${apis.join("+")}` : `PROBE ${id} blocked no-environment-api`);
