#!/usr/bin/env node
// npm run bench: tokens/s of the addon's context.generate() against llamapeg-bench-loop, a plain
// C++ generation loop linked against the same llama.cpp build (scripts/bench/loop.cpp), and with
// --peers against the newest node-llama-cpp. Same model, prompt tokens, token count, sampler
// settings and seed on every side. Every side is its own long-lived process (scripts/bench/
// sides.mjs) started with the environment as given: llama.cpp's defaults, nothing forced. Runs
// rotate the order of the sides so drift (thermal, other load) hits all alike; cells report medians.
//
//   node scripts/bench/run.mjs [--json] [--runs N] [--models tiny,small] [--threads 1,2]
//        [--tokens-tiny N] [--tokens-small N] [--no-grammar] [--variants free,json,json-ref,lazy]
//        [--policies default,passive]   OMP_WAIT_POLICY per side: default = the environment as given
//        [--peers]                      also the newest node-llama-cpp (installed in a temp folder)
//        [--cpp-threadpool]             also the C++ loop on ggml's own thread pool (GGML_OPENMP=OFF)
//        [--cpp-consumer]               also the C++ loop handing each piece to a second thread
//                                       woken per token, as a binding's JS thread is
//   node scripts/bench/run.mjs --from-json report.json      re-print a saved report as a table
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { installNodeLlamaCpp } from "./peers.mjs";
import { startSide } from "./sides.mjs";
import { formatRatio, median, pairedRatio, verdict } from "./stats.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const here = dirname(fileURLToPath(import.meta.url));
const opts = parseArgs(process.argv.slice(2));
if (opts.fromJson) {
  printTable(JSON.parse(readFileSync(opts.fromJson, "utf8")));
  process.exit(0);
}
const log = (...a) => console.error("[bench]", ...a);

const dist = join(root, "dist");
for (const f of ["llama/index.js", "test-model/index.js"]) {
  if (!existsSync(join(dist, f))) fail(`dist/${f} is missing: run \`npm run build:ts\` (and \`npm run build:native\`) first`);
}
const { loadModel } = await import(pathToFileURL(join(dist, "llama/index.js")).href);
const { ensureTestModel } = await import(pathToFileURL(join(dist, "test-model/index.js")).href);

const exe = process.platform === "win32" ? ".exe" : "";
const loopBin = ensureLoop(join(root, "build"), "llamapeg-bench-loop", false);
const poolLoopBin = opts.cppThreadpool ? ensureLoop(join(root, "build", "threadpool"), "llamapeg-bench-loop (GGML_OPENMP=OFF)", true) : null;
const peer = opts.peers ? installNodeLlamaCpp(log) : null;

const jsonGrammarFile = join(here, "json.gbnf");
const jsonGrammar = readFileSync(jsonGrammarFile, "utf8");
// A literal trigger random text never produces: the lazy grammar stays dormant for the whole run,
// so the cell measures what waiting for a trigger costs per token.
const NEVER_PATTERN = "<function=never_fires>";
const PROMPT =
  "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWrite a long story about a lighthouse keeper and a storm.<|im_end|>\n<|im_start|>assistant\n";
const SAMPLING = { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05, repeatPenalty: 1 };
const CONTEXT_SIZE = 1024;
const BATCH_SIZE = 512;

const variants = {
  free: { node: {}, cpp: [] },
  json: { node: { grammar: { gbnf: jsonGrammar } }, cpp: ["--grammar-file", jsonGrammarFile] },
  // The addon's default resamples a rejected token from the top candidates when that provably
  // picks what the full-vocabulary pass picks; "reference" does the full pass, as the C++ loop does.
  "json-ref": { node: { grammar: { gbnf: jsonGrammar }, grammarResample: "reference" }, cpp: ["--grammar-file", jsonGrammarFile] },
  lazy: {
    node: { grammar: { gbnf: jsonGrammar, lazy: true, triggerPatterns: [NEVER_PATTERN] } },
    cpp: ["--grammar-file", jsonGrammarFile, "--lazy", "--trigger-pattern", NEVER_PATTERN],
  },
};

const cells = [];
for (const size of opts.models) {
  for (const threads of opts.threads) cells.push({ size, threads, variant: "free" });
  if (opts.grammar) {
    const threads = Math.max(...opts.threads);
    cells.push({ size, threads, variant: "json" }, { size, threads, variant: "json-ref" }, { size, threads, variant: "lazy" });
  }
}
// --variants: only these cells (a longer run of the cells an earlier one left within noise).
if (opts.variants) cells.splice(0, cells.length, ...cells.filter((c) => opts.variants.includes(c.variant)));

const started = Date.now();
const loadBefore = loadavg()[0];
const results = [];
let peerVersion = null;
for (const size of opts.models) {
  const path = await ensureTestModel(size);
  const vocab = await loadModel(path, { vocabOnly: true });
  const prompt = Array.from(vocab.tokenize(PROMPT, { addSpecial: false, parseSpecial: true }));
  vocab.dispose();
  const maxTokens = size === "tiny" ? opts.tokensTiny : opts.tokensSmall;
  log(`${size}: ${path} (${prompt.length} prompt tokens, ${maxTokens} to generate)`);

  // One process per side and policy; "default" leaves the environment exactly as given.
  const sides = [];
  for (const policy of opts.policies) {
    const env = policyEnv(policy);
    sides.push({ kind: "node", policy, side: await startSide({ name: `node/${policy}`, command: process.execPath, args: [join(here, "node-side.mjs"), dist, path, prompt.join(",")], env }) });
    sides.push({ kind: "cpp", policy, side: await startLoop(loopBin, path, prompt, env, `cpp/${policy}`) });
    if (poolLoopBin) sides.push({ kind: "cppPool", policy, side: await startLoop(poolLoopBin, path, prompt, env, `cpp-pool/${policy}`) });
    if (opts.cppConsumer) sides.push({ kind: "cppConsumer", policy, side: await startLoop(loopBin, path, prompt, env, `cpp-consumer/${policy}`, ["--consumer"]) });
    if (peer) {
      const side = await startSide({ name: `node-llama-cpp/${policy}`, command: process.execPath, args: [join(here, "peer-side.mjs"), peer.dir, path, prompt.join(",")], env });
      peerVersion = side.info.version;
      sides.push({ kind: "peer", policy, side });
    }
  }
  // Warm-up (page in the weights, first-use allocations), not measured.
  for (const s of sides) await request(s, { threads: 1, maxTokens: 8, seed: 1, variant: "free" });

  for (const cell of cells.filter((c) => c.size === size)) {
    const perSide = new Map(sides.map((s) => [s, []]));
    for (let r = 0; r < opts.runs; r++) {
      const seed = 1000 + r;
      // Rotate the order every run: each side goes first once every sides.length runs.
      const order = sides.map((_, i) => sides[(i + r) % sides.length]);
      for (const s of order) {
        await settle();
        const reply = await request(s, { threads: cell.threads, maxTokens, seed, variant: cell.variant });
        if (!reply.unsupported) perSide.get(s).push(reply);
      }
    }
    for (const policy of opts.policies) {
      const of = (kind) => perSide.get(sides.find((s) => s.kind === kind && s.policy === policy)) ?? [];
      const row = { model: size, threads: cell.threads, variant: cell.variant, policy, tokens: median(of("node").map((x) => x.generated)) };
      for (const kind of ["node", "cpp", "cppPool", "cppConsumer", "peer"]) {
        const runs = of(kind);
        if (runs.length === 0) continue;
        row[kind] = {
          tokensPerSecond: round(median(runs.map((x) => (x.generated / x.totalMs) * 1000))),
          best: round(Math.max(...runs.map((x) => (x.generated / x.totalMs) * 1000))),
          // CPU milliseconds per token of the side's whole process: what the work costs,
          // whatever else the machine was doing.
          cpuMsPerToken: round(median(runs.map((x) => x.cpuMs / Math.max(1, x.generated))), 3),
          threads: runs[0].threads ?? cell.threads,
          runs: runs.map(({ tokens, ...rest }) => rest),
        };
      }
      row.nodeOverCpp = round(row.node.tokensPerSecond / row.cpp.tokensPerSecond, 3);
      if (row.peer) row.nodeOverPeer = round(row.node.tokensPerSecond / row.peer.tokensPerSecond, 3);
      const n = of("node");
      const c = of("cpp");
      // Run r of every side used the same seed, next to each other in time: the ratio per pair
      // cancels the drift that a ratio of medians keeps.
      const rate = (runs) => runs.map((x) => (x.generated / x.totalMs) * 1000);
      row.paired = { nodeOverCpp: pairedRatio(rate(n), rate(c)) };
      // The same with each side's sampling time taken out: what the binding costs around the same
      // llama_decode, apart from the addon's faster sampler (native/sampling-select.*).
      const rateNoSampling = (runs) => runs.map((x) => (x.generated / Math.max(1e-9, x.totalMs - (x.sampleMs ?? 0))) * 1000);
      row.paired.nodeOverCppNoSampling = pairedRatio(rateNoSampling(n), rateNoSampling(c));
      row.sampleUsPerToken = { node: round(median(n.map((x) => ((x.sampleMs ?? NaN) * 1000) / x.generated)), 1), cpp: round(median(c.map((x) => ((x.sampleMs ?? NaN) * 1000) / x.generated)), 1) };
      if (row.peer) row.paired.nodeOverPeer = pairedRatio(rate(n), rate(of("peer")));
      row.sameTokens = n.every((x, i) => c[i] !== undefined && x.tokens.join(",") === c[i].tokens.join(","));
      results.push(row);
      log(
        `${size} t=${cell.threads} ${cell.variant} [${policy}]: node ${row.node.tokensPerSecond}, C++ ${row.cpp.tokensPerSecond}` +
          (row.cppPool ? `, C++ pool ${row.cppPool.tokensPerSecond}` : "") +
          (row.cppConsumer ? `, C++ +consumer ${row.cppConsumer.tokensPerSecond}` : "") +
          (row.peer ? `, node-llama-cpp ${row.peer.tokensPerSecond}` : "") +
          ` tok/s; node/C++ ${row.nodeOverCpp}, paired ${formatRatio(row.paired.nodeOverCpp)}${row.sameTokens ? "" : " (token streams differ!)"}`,
      );
    }
  }
  for (const s of sides) await s.side.close();
}

const report = {
  date: new Date().toISOString(),
  machine: { cpus: availableParallelism(), cpu: cpus()[0]?.model ?? "?", platform: `${process.platform}-${process.arch}`, node: process.version },
  // Other processes competing for the cores distort multi-thread cells most (ggml's threads wait
  // for each other at every op); the load before and after says how quiet the machine was.
  loadAverage: { before: round(loadBefore, 2), after: round(loadavg()[0], 2) },
  settings: {
    runs: opts.runs,
    contextSize: CONTEXT_SIZE,
    batchSize: BATCH_SIZE,
    sampling: SAMPLING,
    prompt: PROMPT,
    lazyTrigger: NEVER_PATTERN,
    policies: opts.policies.map((p) => ({ policy: p, OMP_WAIT_POLICY: policyEnv(p).OMP_WAIT_POLICY ?? "(unset)" })),
    peer: peerVersion === null ? null : `node-llama-cpp@${peerVersion}`,
  },
  wallSeconds: round((Date.now() - started) / 1000),
  cells: results,
};
if (opts.json) console.log(JSON.stringify(report, null, 2));
else printTable(report);

// Waits until the CPUs are idle (the previous side's OpenMP threads spin for a while after its
// last graph: libgomp's default spin count) so no run starts in another side's spin tail; at most
// 3 s. /proc/stat only; elsewhere a fixed pause.
async function settle() {
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const ticks = () => {
    const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
    return { idle: f[3] + f[4], total: f.reduce((a, b) => a + b, 0) };
  };
  if (!existsSync("/proc/stat")) return sleep(500);
  const deadline = Date.now() + 3000;
  let quietFor = 0;
  while (Date.now() < deadline && quietFor < 2) {
    const a = ticks();
    await sleep(50);
    const b = ticks();
    const busy = (1 - (b.idle - a.idle) / Math.max(1, b.total - a.total)) * availableParallelism();
    quietFor = busy < 0.15 ? quietFor + 1 : 0;
  }
}

function policyEnv(policy) {
  if (policy === "default") return { ...process.env };
  return { ...process.env, OMP_WAIT_POLICY: policy };
}

async function request(s, { threads, maxTokens, seed, variant }) {
  const v = variants[variant];
  if (s.kind === "cpp" || s.kind === "cppPool" || s.kind === "cppConsumer") {
    return s.side.run(["--n-predict", String(maxTokens), "--threads", String(threads), "--seed", String(seed), ...v.cpp]);
  }
  return s.side.run({ threads, maxTokens, seed, contextSize: CONTEXT_SIZE, batchSize: BATCH_SIZE, sampling: SAMPLING, options: v.node });
}

// The C++ loop runs as one process per model and policy (--serve): the model loads once, each
// request gets a fresh context, as each Node run does.
function startLoop(bin, path, prompt, env, name, extra = []) {
  const args = [
    ...extra,
    "--serve",
    "--model", path,
    "--prompt-tokens", prompt.join(","),
    "--ctx", String(CONTEXT_SIZE),
    "--batch", String(BATCH_SIZE),
    "--temp", String(SAMPLING.temperature),
    "--top-k", String(SAMPLING.topK),
    "--top-p", String(SAMPLING.topP),
    "--min-p", String(SAMPLING.minP),
    "--repeat-penalty", String(SAMPLING.repeatPenalty),
  ];
  return startSide({
    name,
    command: bin,
    args,
    env,
    encode: (a) => a.join("\t"),
    decode: (line) => {
      const run = JSON.parse(line).runs[0];
      return { ...run, threads: undefined };
    },
  });
}

// Builds the C++ loop when missing: in build/ (the addon's own build), or with ggml's own thread
// pool in build/threadpool (a second, independent cmake tree; ccache makes it cheap).
function ensureLoop(buildDir, what, threadpool) {
  const bin = join(buildDir, "bench", `llamapeg-bench-loop${exe}`);
  if (existsSync(bin)) return bin;
  log(`building ${what}...`);
  if (!threadpool) {
    execFileSync(process.execPath, [join(root, "scripts", "build-native.mjs"), "--target", "llamapeg-bench-loop"], { stdio: "inherit", cwd: root });
  } else {
    const env = { ...process.env };
    const prefix = resolve(dirname(process.execPath), "..");
    if (!env.npm_config_nodedir && existsSync(join(prefix, "include", "node", "node_api.h"))) env.npm_config_nodedir = prefix;
    const cmakeJs = join(root, "node_modules", "cmake-js", "bin", "cmake-js");
    execFileSync(process.execPath, [cmakeJs, "build", "--directory", root, "--out", buildDir, "--target", "llamapeg-bench-loop", "--parallel", String(availableParallelism()), "--CDLLAMAPEG_OPENMP=OFF"], { stdio: "inherit", cwd: root, env });
  }
  if (!existsSync(bin)) fail(`could not build ${what}`);
  return bin;
}

function printTable(rep) {
  const kinds = ["node", "cpp", "cppPool", "cppConsumer", "peer"].filter((k) => rep.cells.some((c) => c[k]));
  const label = { node: "Node", cpp: "C++", cppPool: "C++ pool", cppConsumer: "C++ +consumer", peer: "node-llama-cpp" };
  const head = ["model", "threads", "variant", "policy", "tokens", ...kinds.map((k) => `${label[k]} tok/s`), "Node/C++", "Node/C++ paired [95%]", "same, sampling excluded", "sampling µs/tok Node/C++"];
  if (kinds.includes("peer")) head.push("Node/peer");
  head.push(...kinds.map((k) => `${label[k]} CPU ms/tok`), "same tokens");
  const rows = rep.cells.map((c) => {
    const r = [c.model, String(c.threads), c.variant, c.policy, String(c.tokens)];
    for (const k of kinds) r.push(c[k] ? c[k].tokensPerSecond.toFixed(1) : "-");
    r.push(c.nodeOverCpp.toFixed(3));
    r.push(c.paired ? formatRatio(c.paired.nodeOverCpp) : "-");
    r.push(c.paired?.nodeOverCppNoSampling ? formatRatio(c.paired.nodeOverCppNoSampling) : "-");
    r.push(c.sampleUsPerToken ? `${c.sampleUsPerToken.node} / ${c.sampleUsPerToken.cpp}` : "-");
    if (kinds.includes("peer")) r.push(c.nodeOverPeer === undefined ? "-" : c.nodeOverPeer.toFixed(3));
    for (const k of kinds) r.push(c[k] ? c[k].cpuMsPerToken.toFixed(2) : "-");
    r.push(c.sameTokens ? "yes" : "NO");
    return r;
  });
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r) => "| " + r.map((x, i) => x.padEnd(widths[i])).join(" | ") + " |";
  const policies = rep.settings.policies.map((p) => `${p.policy}: OMP_WAIT_POLICY=${p.OMP_WAIT_POLICY}`).join(", ");
  console.log(
    `llamapeg bench, ${rep.date}, ${rep.machine.cpu} (${rep.machine.cpus} CPUs), median of ${rep.settings.runs} runs, ${rep.wallSeconds} s, ` +
      `load average ${rep.loadAverage.before} -> ${rep.loadAverage.after}; ${policies}${rep.settings.peer ? `; peer ${rep.settings.peer}` : ""}`,
  );
  console.log(line(head));
  console.log("| " + widths.map((w) => "-".repeat(w)).join(" | ") + " |");
  for (const r of rows) console.log(line(r));
  const v = verdicts(rep);
  if (v.length === 0) return;
  console.log(`\nbounds (issue 9.1), paired ratios: median [95% interval of the median]${v.some((x) => x.text.includes("*")) ? "; * = too few runs for a 95% interval (range shown)" : ""}`);
  for (const x of v) console.log(`${x.label}  ${x.text}`);
}

// Issue 9.1: Node >= 0.97x the C++ loop in every cell at llama.cpp's defaults; >= 2x
// node-llama-cpp at 2 threads on the small model.
function verdicts(rep) {
  const out = [];
  for (const c of rep.cells) {
    if (!c.paired || c.policy !== "default") continue;
    const where = `${c.model}, ${c.threads} thread${c.threads > 1 ? "s" : ""}, ${c.variant}`;
    out.push({ ...verdict(c.paired.nodeOverCpp, 0.97), text: `${where}: Node / C++ >= 0.97: ${formatRatio(c.paired.nodeOverCpp)}` });
    if (c.paired.nodeOverPeer && c.model === "small" && c.threads === 2) {
      out.push({ ...verdict(c.paired.nodeOverPeer, 2), text: `${where}: Node / node-llama-cpp >= 2: ${formatRatio(c.paired.nodeOverPeer, 2)}` });
    }
  }
  return out;
}

function parseArgs(args) {
  const o = {
    json: false, runs: 3, models: ["tiny", "small"], threads: [1, 2], tokensTiny: 256, tokensSmall: 128, grammar: true,
    policies: ["default"], peers: false, cppThreadpool: false, cppConsumer: false,
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const value = () => args[++i] ?? fail(`${a} needs a value`);
    if (a === "--json") o.json = true;
    else if (a === "--runs") o.runs = positive(value(), a);
    else if (a === "--models") o.models = value().split(",").map((m) => (m === "tiny" || m === "small" ? m : fail(`--models: unknown model ${m}`)));
    else if (a === "--threads") o.threads = value().split(",").map((t) => positive(t, a));
    else if (a === "--tokens-tiny") o.tokensTiny = positive(value(), a);
    else if (a === "--tokens-small") o.tokensSmall = positive(value(), a);
    else if (a === "--no-grammar") o.grammar = false;
    else if (a === "--variants") o.variants = value().split(",").map((v) => (v in { free: 1, json: 1, "json-ref": 1, lazy: 1 } ? v : fail(`--variants: unknown variant ${v} (free, json, json-ref, lazy)`)));
    else if (a === "--policies") o.policies = value().split(",").map((p) => (["default", "passive", "active"].includes(p) ? p : fail(`--policies: unknown policy ${p} (default, passive, active)`)));
    else if (a === "--peers") o.peers = true;
    else if (a === "--cpp-threadpool") o.cppThreadpool = true;
    else if (a === "--cpp-consumer") o.cppConsumer = true;
    else if (a === "--from-json") o.fromJson = value();
    else fail(`unknown argument ${a}`);
  }
  return o;
}

function positive(s, what) {
  const n = Number(s);
  if (!Number.isInteger(n) || n < 1) fail(`${what} needs a positive integer, got ${s}`);
  return n;
}

function round(x, digits = 1) {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function fail(message) {
  console.error(`[bench] ${message}`);
  process.exit(1);
}
