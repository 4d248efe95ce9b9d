#!/usr/bin/env node
// npm run bench:health: how long GET /health waits while heavy requests run (issue 28.5, goal:
// never more than 100 ms). A server on the tiny model (dist/) takes, one load at a time: cold
// plans for the largest accepted tool set (128 tools x 20 properties, new names each time, so
// never from the plan cache), 20 hostile client templates at once (--allow-request-templates),
// and a body near the 8 MiB limit. A child process pings /health every 10 ms the whole time and
// reports each answer's latency; the server's own event-loop monitor is reported beside it.
//   node scripts/bench/health.mjs [--rounds N] [--json]
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const dist = join(root, "dist");
const opts = { rounds: 3, json: false };
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--rounds") opts.rounds = Number(args[++i]);
  else if (args[i] === "--json") opts.json = true;
  else throw new Error(`unknown argument ${args[i]}`);
}
for (const f of ["llama/index.js", "server/index.js", "server/plan-worker-main.js"]) {
  if (!existsSync(join(dist, f))) throw new Error(`dist/${f} is missing: run \`npm run build:ts\` first`);
}
const { loadModel } = await import(pathToFileURL(join(dist, "llama/index.js")).href);
const { startServer } = await import(pathToFileURL(join(dist, "server/index.js")).href);
const { ensureTestModel } = await import(pathToFileURL(join(dist, "test-model/index.js")).href);

const model = await loadModel(await ensureTestModel("tiny"));
const ctx = () => model.createContext({ contextSize: 2048, threads: 1 });
const server = await startServer([ctx()], { port: 0, allowRequestTemplates: true });

const msgs = [{ role: "user", content: "hi" }];
let salt = 0;
const tools128 = () => {
  const s = salt++;
  return Array.from({ length: 128 }, (_, i) => ({ type: "function", function: { name: `f${s}_${i}`, description: "d", parameters: { type: "object", properties: Object.fromEntries(Array.from({ length: 20 }, (_, k) => [`p${k}`, { type: k % 2 ? "integer" : "string" }])) } } }));
};
const hostile = ["{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "{{ ('a' * 134217729) | replace('a', 'b') }}", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"];
const loads = {
  "128 tools x 20 properties, cold plan": () => [JSON.stringify({ messages: msgs, max_tokens: 1, tools: tools128() })],
  "20 hostile client templates at once": () => Array.from({ length: 20 }, (_, i) => JSON.stringify({ messages: msgs, max_tokens: 1, chat_template: hostile[i % 3] })),
  "a 7.5 MiB body (one long message)": () => [JSON.stringify({ messages: [{ role: "user", content: "word ".repeat(1_500_000) }], max_tokens: 1 })],
};

// the pinger: its own process, so its timing is not the server's event loop
const pinger = spawn(process.execPath, ["--input-type=module", "-e", `
  import http from "node:http";
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const url = process.argv[1];
  const once = () => new Promise((res) => { const t0 = performance.now(); http.get(url, { agent }, (r) => { r.resume(); r.on("end", () => res(performance.now() - t0)); }).on("error", () => res(-1)); });
  process.stdin.on("data", () => {}); process.stdin.on("end", () => process.exit(0));
  for (;;) { const ms = await once(); process.stdout.write(ms.toFixed(2) + "\\n"); await new Promise((r) => setTimeout(r, 10)); }
`, server.url + "/health"], { stdio: ["pipe", "pipe", "inherit"] });
let pings = [];
let buf = "";
pinger.stdout.on("data", (d) => {
  buf += d;
  const lines = buf.split("\n");
  buf = lines.pop();
  for (const l of lines) pings.push(Number(l));
});
await new Promise((r) => setTimeout(r, 300));

const post = (body) => fetch(server.url + "/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body }).then(async (r) => ({ status: r.status, text: await r.text() }));
const results = [];
for (let round = 0; round < opts.rounds; round++) {
  for (const [name, make] of Object.entries(loads)) {
    const bodies = make();
    await new Promise((r) => setTimeout(r, 50));
    pings = [];
    const monitor = monitorEventLoopDelay({ resolution: 5 });
    monitor.enable();
    const t0 = performance.now();
    const answers = await Promise.all(bodies.map(post));
    const ms = performance.now() - t0;
    await new Promise((r) => setTimeout(r, 30));
    monitor.disable();
    const statuses = [...new Set(answers.map((a) => a.status))].join(",");
    results.push({ load: name, round, statuses, requestsMs: Math.round(ms), pings: pings.length, maxHealthMs: Math.round(Math.max(0, ...pings)), maxLoopStallMs: Math.round(monitor.max / 1e6) });
  }
}
pinger.stdin.end();
pinger.kill();
await server.close();
model.dispose();

const report = { loadavg: loadavg().map((x) => x.toFixed(2)).join(" "), results };
if (opts.json) console.log(JSON.stringify(report, null, 2));
else {
  console.log(`GET /health while heavy requests run (load ${report.loadavg}; provisional on a shared machine)`);
  for (const r of results) console.log(`${r.load.padEnd(40)} round ${r.round}: status ${r.statuses}, ${String(r.requestsMs).padStart(5)} ms, /health max ${String(r.maxHealthMs).padStart(4)} ms over ${r.pings} pings, loop stall max ${r.maxLoopStallMs} ms`);
  const worst = Math.max(...results.map((r) => r.maxHealthMs));
  console.log(`worst /health latency: ${worst} ms (goal: <= 100 ms)`);
}
