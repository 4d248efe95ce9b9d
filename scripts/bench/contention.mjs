#!/usr/bin/env node
// npm run bench:contention: short-request latency on the tiny model, the machine as it is against
// the machine with a CPU hog on every core (nice 0 busy loops), per way of waiting (issue 28.3).
// Sides (each its own process, since OpenMP reads OMP_WAIT_POLICY once, at load):
//   adaptive threads 2, llamapeg's default: one thread per decode while others compete (threads.h)
//   spin    threads 2, OMP_WAIT_POLICY unset (llama.cpp's default: OpenMP spins a while at barriers)
//   active  threads 2, OMP_WAIT_POLICY=active
//   passive threads 2, OMP_WAIT_POLICY=passive
//   one     threads 1 (no barrier to wait at), OMP_WAIT_POLICY unset
//   spin10k, spin1k  threads 2, GOMP_SPINCOUNT 10000 / 1000 (bounded spinning, then sleep)
// All but "adaptive" run with LLAMAPEG_ADAPT_THREADS=0 (the configured thread count always).
// Rounds alternate quiet and loaded phases, so drift and other users' load hit every side alike;
// the report is the median latency per side and phase, and loaded / quiet per side.
//   node scripts/bench/contention.mjs [--rounds N] [--requests N] [--sides spin,passive,one] [--json]
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const dist = join(root, "dist");
const opts = { rounds: 4, requests: 6, sides: ["adaptive", "spin", "passive", "one"], json: false };
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === "--rounds") opts.rounds = Number(args[++i]);
  else if (a === "--requests") opts.requests = Number(args[++i]);
  else if (a === "--sides") opts.sides = args[++i].split(",");
  else if (a === "--json") opts.json = true;
  else throw new Error(`unknown argument ${a}`);
}
if (!existsSync(join(dist, "llama", "index.js"))) throw new Error("dist/ is missing: run `npm run build:ts` first");

const SIDES = {
  adaptive: { threads: 2, policy: undefined, adapt: true },
  spin: { threads: 2, policy: undefined },
  active: { threads: 2, policy: "active" },
  passive: { threads: 2, policy: "passive" },
  one: { threads: 1, policy: undefined },
  spin10k: { threads: 2, policy: undefined, spincount: "10000" },
  spin1k: { threads: 2, policy: undefined, spincount: "1000" },
};

// One side: loads the model, then answers each "go" line with the latencies of N short requests
// (a 20-token prompt, 8 generated tokens, a fresh context each, as a server's short turn).
const sideSource = `
  import { createInterface } from "node:readline";
  const { loadModel } = await import(${JSON.stringify(join(dist, "llama", "index.js"))});
  const { ensureTestModel } = await import(${JSON.stringify(join(dist, "test-model", "index.js"))});
  const model = await loadModel(await ensureTestModel("tiny"));
  const threads = Number(process.argv[1]);
  const prompt = model.tokenize("The quick brown fox jumps over the lazy dog and runs far away.");
  const ctx = model.createContext({ contextSize: 256, threads });
  process.stdout.write("ready\\n");
  for await (const line of createInterface({ input: process.stdin })) {
    const n = Number(line);
    const ms = [];
    for (let i = 0; i < n; i++) {
      ctx.clearCache();
      const t0 = performance.now();
      for await (const _ of ctx.generate(prompt, { maxTokens: 8, seed: 1 })) void _;
      ms.push(performance.now() - t0);
    }
    process.stdout.write(JSON.stringify(ms) + "\\n");
  }
`;

function startSide(name) {
  const s = SIDES[name];
  const env = { ...process.env };
  delete env.OMP_WAIT_POLICY;
  delete env.GOMP_SPINCOUNT;
  // every side but "adaptive" keeps the configured thread count (llama.cpp's behaviour)
  env.LLAMAPEG_ADAPT_THREADS = s.adapt === true ? "1" : "0";
  if (s.policy !== undefined) env.OMP_WAIT_POLICY = s.policy;
  if (s.spincount !== undefined) env.GOMP_SPINCOUNT = s.spincount;
  const child = spawn(process.execPath, ["--input-type=module", "-e", sideSource, String(s.threads)], { env, stdio: ["pipe", "pipe", "inherit"] });
  let buf = "";
  const waiting = [];
  child.stdout.on("data", (d) => {
    buf += d;
    for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      waiting.shift()?.(line);
    }
  });
  const next = () => new Promise((r) => waiting.push(r));
  const ready = next();
  return {
    name,
    ready,
    async run(n) {
      const reply = next();
      child.stdin.write(`${n}\n`);
      return JSON.parse(await reply);
    },
    close: () => child.kill(),
  };
}

/** A busy loop per core, nice 0 (a desktop's other work). */
function startHogs() {
  const n = availableParallelism();
  return Array.from({ length: n }, () => spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const sides = opts.sides.map(startSide);
await Promise.all(sides.map((s) => s.ready));
const samples = Object.fromEntries(opts.sides.map((n) => [n, { quiet: [], loaded: [] }]));
const loads = { quiet: [], loaded: [] };
for (let round = 0; round < opts.rounds; round++) {
  for (const phase of round % 2 === 0 ? ["quiet", "loaded"] : ["loaded", "quiet"]) {
    const hogs = phase === "loaded" ? startHogs() : [];
    if (hogs.length) await new Promise((r) => setTimeout(r, 300));
    for (const s of round % 2 === 0 ? sides : [...sides].reverse()) samples[s.name][phase].push(...(await s.run(opts.requests)));
    loads[phase].push(loadavg()[0]);
    for (const h of hogs) h.kill();
  }
}
for (const s of sides) s.close();

const rows = opts.sides.map((n) => {
  const q = median(samples[n].quiet);
  const l = median(samples[n].loaded);
  return { side: n, ...SIDES[n], quietMs: +q.toFixed(1), loadedMs: +l.toFixed(1), loadedOverQuiet: +(l / q).toFixed(2), loadedMaxMs: +Math.max(...samples[n].loaded).toFixed(1) };
});
const report = { cores: availableParallelism(), loadavgQuiet: median(loads.quiet).toFixed(1), loadavgLoaded: median(loads.loaded).toFixed(1), requestsPerCell: opts.rounds * opts.requests, rows };
if (opts.json) console.log(JSON.stringify(report, null, 2));
else {
  console.log(`short requests (tiny model, 20-token prompt, 8 tokens), ${report.requestsPerCell} per cell; "quiet" is the machine as it is (1-min load ${report.loadavgQuiet}), "loaded" adds ${report.cores} nice-0 busy loops (load ${report.loadavgLoaded})`);
  console.log("side      threads  OMP_WAIT_POLICY  quiet ms  loaded ms  loaded/quiet  loaded max ms");
  for (const r of rows) console.log(`${r.side.padEnd(9)} ${String(r.threads).padStart(7)}  ${String(r.policy ?? "(unset)").padEnd(15)} ${String(r.quietMs).padStart(9)} ${String(r.loadedMs).padStart(10)} ${String(r.loadedOverQuiet).padStart(13)} ${String(r.loadedMaxMs).padStart(14)}`);
}
