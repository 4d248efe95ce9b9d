#!/usr/bin/env node
// npm run bench: tokens/s of the addon's context.generate() against llamapeg-bench-loop, a plain
// C++ generation loop linked against the same llama.cpp build (scripts/bench/loop.cpp). Same
// model, prompt tokens, token count, sampler chain and seed on both sides; runs alternate between
// the two and each cell reports medians. Both timings cover the same span: prompt decode through
// the last generated token (for Node: from the generate() call until the iterator ends).
//
//   node scripts/bench/run.mjs [--json] [--runs N] [--models tiny,small] [--threads 1,2]
//                              [--tokens-tiny N] [--tokens-small N] [--no-grammar]
//   node scripts/bench/run.mjs --from-json report.json      re-print a saved report as a table
import { spawn, spawnSync } from "node:child_process";
import { createInterface } from "node:readline";
import { existsSync, readFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const opts = parseArgs(process.argv.slice(2));
if (opts.fromJson) {
  // Re-print a saved `--json` report as the table (for docs/bench.md).
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

const loopBin = join(root, "build", "bench", process.platform === "win32" ? "llamapeg-bench-loop.exe" : "llamapeg-bench-loop");
if (!existsSync(loopBin)) {
  log("building the C++ loop (llamapeg-bench-loop)...");
  const r = spawnSync(process.execPath, [join(root, "scripts", "build-native.mjs"), "--target", "llamapeg-bench-loop"], { stdio: "inherit", cwd: root });
  if (r.status !== 0 || !existsSync(loopBin)) fail("could not build llamapeg-bench-loop");
}

const jsonGrammarFile = join(root, "scripts", "bench", "json.gbnf");
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

const started = Date.now();
const loadBefore = loadavg()[0];
const results = [];
for (const size of opts.models) {
  const path = await ensureTestModel(size);
  const model = await loadModel(path);
  const prompt = Array.from(model.tokenize(PROMPT, { addSpecial: false, parseSpecial: true }));
  const maxTokens = size === "tiny" ? opts.tokensTiny : opts.tokensSmall;
  log(`${size}: ${path} (${prompt.length} prompt tokens, ${maxTokens} to generate)`);
  const cppServer = await startCpp(path, prompt);
  // Warm-up (page in the weights, first-use allocations), not measured.
  await runNode(model, prompt, { threads: 1, maxTokens: 8, seed: 1, extra: {} });
  await runCpp(cppServer, { threads: 1, maxTokens: 8, seed: 1, extra: [] });

  let sizeCells = cells.filter((c) => c.size === size);
  try {
    await runNode(model, prompt, { threads: 1, maxTokens: 1, seed: 1, extra: variants["json-ref"].node });
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    log(`skipping json-ref: this build's generate() has no grammarResample option (${error.message})`);
    sizeCells = sizeCells.filter((c) => c.variant !== "json-ref");
  }
  for (const cell of sizeCells) {
    const v = variants[cell.variant];
    const node = [];
    const cpp = [];
    let sameTokens = true;
    for (let r = 0; r < opts.runs; r++) {
      const seed = 1000 + r;
      const common = { threads: cell.threads, maxTokens, seed };
      // Alternate which side goes first so drift (thermal, other load) hits both alike.
      let n;
      let c;
      if (r % 2 === 0) {
        n = await runNode(model, prompt, { ...common, extra: v.node });
        c = await runCpp(cppServer, { ...common, extra: v.cpp });
      } else {
        c = await runCpp(cppServer, { ...common, extra: v.cpp });
        n = await runNode(model, prompt, { ...common, extra: v.node });
      }
      node.push(n);
      cpp.push(c);
      if (n.tokens.join(",") !== c.tokens.join(",")) sameTokens = false;
    }
    const nodeTps = median(node.map((x) => x.tps));
    const cppTps = median(cpp.map((x) => x.tps));
    // CPU milliseconds per token: what the work costs, whatever else the machine was doing.
    const nodeCpu = median(node.map((x) => x.cpuMs / Math.max(1, x.generated)));
    const cppCpu = median(cpp.map((x) => x.cpuMs / Math.max(1, x.generated)));
    const row = {
      model: size,
      threads: cell.threads,
      variant: cell.variant,
      tokens: median(node.map((x) => x.generated)),
      nodeTokensPerSecond: round(nodeTps),
      cppTokensPerSecond: round(cppTps),
      ratio: round(nodeTps / cppTps, 3),
      // Best run of each side: on a machine shared with other work, the run least disturbed.
      bestRatio: round(Math.max(...node.map((x) => x.tps)) / Math.max(...cpp.map((x) => x.tps)), 3),
      nodeCpuMsPerToken: round(nodeCpu, 3),
      cppCpuMsPerToken: round(cppCpu, 3),
      cpuRatio: round(cppCpu / nodeCpu, 3),
      sameTokens,
      runs: { node: node.map(({ tokens, ...rest }) => rest), cpp: cpp.map(({ tokens, ...rest }) => rest) },
    };
    results.push(row);
    log(
      `${size} t=${cell.threads} ${cell.variant}: node ${row.nodeTokensPerSecond} tok/s, C++ ${row.cppTokensPerSecond} tok/s, ratio ${row.ratio}; ` +
        `CPU ms/token node ${row.nodeCpuMsPerToken}, C++ ${row.cppCpuMsPerToken}, ratio ${row.cpuRatio}${sameTokens ? "" : " (token streams differ!)"}`,
    );
  }
  cppServer.close();
  model.dispose();
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
    cppOmpWaitPolicy: process.env.OMP_WAIT_POLICY ?? (process.env.GOMP_SPINCOUNT === undefined ? "passive" : "(GOMP_SPINCOUNT set)"),
  },
  wallSeconds: round((Date.now() - started) / 1000),
  cells: results,
};
if (opts.json) {
  console.log(JSON.stringify(report, null, 2));
} else {
  printTable(report);
}

async function runNode(model, prompt, { threads, maxTokens, seed, extra }) {
  const ctx = model.createContext({ contextSize: CONTEXT_SIZE, batchSize: BATCH_SIZE, threads, seed });
  try {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const generation = ctx.generate(prompt, { maxTokens, seed, ...SAMPLING, ...extra });
    const tokens = [];
    for await (const { token } of generation) tokens.push(token);
    const totalMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const s = generation.stats;
    return {
      generated: tokens.length,
      totalMs: round(totalMs),
      tps: (tokens.length / totalMs) * 1000,
      // every thread of the process: compute threads, the JS thread, libuv, GC
      cpuMs: round((cpu.user + cpu.system) / 1000),
      promptMs: round(s.promptMs),
      generateMs: round(s.generateMs),
      sampleMs: round(s.sampleMs),
      stop: s.stopReason,
      tokens,
    };
  } finally {
    ctx.dispose();
  }
}

// The C++ loop runs as one process per model (--serve): the model loads once, each request gets a
// fresh context, as each Node run does. It gets the OpenMP wait policy the addon sets for itself
// (lib/native/binding.ts: passive, unless the user chose one): with libgomp's default spinning
// barriers a 2-thread decode on 2 busy cores runs 10-100x slower, which would measure the
// machine's load, not the binding.
async function startCpp(path, prompt) {
  const env = { ...process.env };
  if (env.OMP_WAIT_POLICY === undefined && env.GOMP_SPINCOUNT === undefined) env.OMP_WAIT_POLICY = "passive";
  const args = [
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
  const child = spawn(loopBin, args, { env, stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  let exited = null;
  child.on("exit", (code, signal) => (exited = code ?? signal));
  const nextLine = async () => {
    const { value, done } = await lines.next();
    if (done) fail(`llamapeg-bench-loop exited (${exited})`);
    return JSON.parse(value);
  };
  const hello = await nextLine();
  if (!hello.ready) fail("llamapeg-bench-loop did not start");
  return {
    async request(args) {
      child.stdin.write(args.join("\t") + "\n");
      return nextLine();
    },
    close() {
      child.stdin.end();
    },
  };
}

async function runCpp(server, { threads, maxTokens, seed, extra }) {
  const reply = await server.request(["--n-predict", String(maxTokens), "--threads", String(threads), "--seed", String(seed), ...extra]);
  const run = reply.runs[0];
  return {
    generated: run.generated,
    totalMs: round(run.totalMs),
    tps: (run.generated / run.totalMs) * 1000,
    cpuMs: round(run.cpuMs),
    promptMs: round(run.promptMs),
    generateMs: round(run.generateMs),
    sampleMs: round(run.sampleMs),
    stop: run.stop,
    tokens: run.tokens,
  };
}

function printTable(rep) {
  const head = ["model", "threads", "variant", "tokens", "Node tok/s", "C++ tok/s", "Node/C++", "best/best", "Node CPU ms/tok", "C++ CPU ms/tok", "C++/Node CPU", "same tokens"];
  const rows = rep.cells.map((c) => [
    c.model,
    String(c.threads),
    c.variant,
    String(c.tokens),
    c.nodeTokensPerSecond.toFixed(1),
    c.cppTokensPerSecond.toFixed(1),
    c.ratio.toFixed(3),
    c.bestRatio === undefined ? "-" : c.bestRatio.toFixed(3),
    c.nodeCpuMsPerToken.toFixed(2),
    c.cppCpuMsPerToken.toFixed(2),
    c.cpuRatio.toFixed(3),
    c.sameTokens ? "yes" : "NO",
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r) => "| " + r.map((x, i) => x.padEnd(widths[i])).join(" | ") + " |";
  console.log(`llamapeg bench, ${rep.date}, ${rep.machine.cpu} (${rep.machine.cpus} CPUs), median of ${rep.settings.runs} runs, ${rep.wallSeconds} s, load average ${rep.loadAverage.before} -> ${rep.loadAverage.after}`);
  console.log(line(head));
  console.log("| " + widths.map((w) => "-".repeat(w)).join(" | ") + " |");
  for (const r of rows) console.log(line(r));
}

function parseArgs(args) {
  const o = { json: false, runs: 3, models: ["tiny", "small"], threads: [1, 2], tokensTiny: 256, tokensSmall: 128, grammar: true };
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

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function round(x, digits = 1) {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function fail(message) {
  console.error(`[bench] ${message}`);
  process.exit(1);
}
