#!/usr/bin/env node
// npm run bench:prefill: prompt processing (prefill) of the addon against llamapeg-bench-loop at
// llama.cpp's defaults (n_batch 2048, n_ubatch 512, threads_batch = threads), one long prompt,
// one generated token. Each side is a long-lived process; runs alternate sides and the ratio is
// taken per pair (scripts/bench/stats.mjs), so drift and other load hit both alike.
//   node scripts/bench/prefill.mjs [--runs N] [--model tiny|small] [--threads T] [--tokens N]
//        [--batch N]   the addon's batchSize (default: its own default); the C++ loop keeps 2048
//        [--warm]      time a second prompt in the same context on both sides (its buffers already
//                      touched), not a fresh context's first
//        [--json]
import { existsSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { startSide } from "./sides.mjs";
import { formatRatio, median, pairedRatio, verdict } from "./stats.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const here = dirname(fileURLToPath(import.meta.url));
const dist = join(root, "dist");
const log = (...a) => console.error("[bench:prefill]", ...a);

const opts = { runs: 9, model: "small", threads: 2, tokens: 1441, batch: undefined, warm: false, json: false };
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  const value = () => args[++i];
  if (a === "--runs") opts.runs = Number(value());
  else if (a === "--model") opts.model = value();
  else if (a === "--threads") opts.threads = Number(value());
  else if (a === "--tokens") opts.tokens = Number(value());
  else if (a === "--batch") opts.batch = Number(value());
  else if (a === "--warm") opts.warm = true;
  else if (a === "--json") opts.json = true;
  else throw new Error(`unknown argument ${a}`);
}

for (const f of ["llama/index.js", "test-model/index.js"]) {
  if (!existsSync(join(dist, f))) throw new Error(`dist/${f} is missing: run \`npm run build:ts\` first`);
}
const loopBin = join(root, "build", "bench", "llamapeg-bench-loop");
if (!existsSync(loopBin)) throw new Error(`${loopBin} is missing: node scripts/build-native.mjs --target llamapeg-bench-loop`);
const { loadModel } = await import(pathToFileURL(join(dist, "llama/index.js")).href);
const { ensureTestModel } = await import(pathToFileURL(join(dist, "test-model/index.js")).href);

const path = await ensureTestModel(opts.model);
// A long user turn of ordinary prose, cut to exactly `tokens` tokens.
const vocab = await loadModel(path, { vocabOnly: true });
const text =
  "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n" +
  "The lighthouse keeper climbed the spiral stairs every evening, counting the steps as his father had, and lit the lamp before the storm rolled in from the west. ".repeat(80);
const prompt = Array.from(vocab.tokenize(text, { addSpecial: false, parseSpecial: true })).slice(0, opts.tokens);
vocab.dispose();
if (prompt.length < opts.tokens) throw new Error(`the prompt text gives only ${prompt.length} tokens`);
const contextSize = 2048;
if (contextSize <= prompt.length) throw new Error("--tokens must stay below 2048");

const node = await startSide({ name: "node", command: process.execPath, args: [join(here, "node-side.mjs"), dist, path, prompt.join(",")], env: process.env });
const cpp = await startSide({
  name: "cpp",
  command: loopBin,
  // llama.cpp's defaults: n_batch 2048 (llama_context_default_params), n_ubatch 512
  args: ["--serve", "--model", path, "--prompt-tokens", prompt.join(","), "--ctx", String(contextSize), "--batch", "2048", "--temp", "0"],
  env: process.env,
  encode: (a) => a.join("\t"),
  decode: (line) => JSON.parse(line).runs.at(-1),
});
const nodeRequest = (seed) => node.run({ threads: opts.threads, maxTokens: 1, seed, contextSize, batchSize: opts.batch, runs: opts.warm ? 2 : 1, sampling: { temperature: 0 }, options: {} });
const cppRequest = (seed) => cpp.run(["--n-predict", "1", "--runs", opts.warm ? "2" : "1", "--threads", String(opts.threads), "--seed", String(seed)]);

const load0 = loadavg();
await nodeRequest(1); // warm-up: page in the weights
await cppRequest(1);
const n = [];
const c = [];
for (let r = 0; r < opts.runs; r++) {
  // alternate which side goes first
  if (r % 2 === 0) {
    n.push(await nodeRequest(r));
    c.push(await cppRequest(r));
  } else {
    c.push(await cppRequest(r));
    n.push(await nodeRequest(r));
  }
}
await node.close();
await cpp.close();
const rate = (runs) => runs.map((x) => (prompt.length / x.promptMs) * 1000);
const paired = pairedRatio(rate(n), rate(c));
const report = {
  date: new Date().toISOString(),
  loadAverage: { before: load0.map((x) => Math.round(x * 100) / 100), after: loadavg().map((x) => Math.round(x * 100) / 100) },
  model: opts.model,
  threads: opts.threads,
  promptTokens: prompt.length,
  nodeBatchSize: opts.batch ?? "default",
  context: opts.warm ? "warm (second prompt)" : "fresh",
  node: { tokensPerSecond: median(rate(n)), promptMs: n.map((x) => Math.round(x.promptMs)) },
  cpp: { tokensPerSecond: median(rate(c)), promptMs: c.map((x) => Math.round(x.promptMs)) },
  paired,
};
if (opts.json) console.log(JSON.stringify(report, null, 2));
else {
  console.log(
    `prefill, ${report.date}, ${opts.model} model, ${prompt.length} prompt tokens, ${opts.threads} threads, ${opts.runs} pairs, ${report.context} context, ` +
      `load ${report.loadAverage.before.join(" ")} -> ${report.loadAverage.after.join(" ")}`,
  );
  console.log(`node ${report.node.tokensPerSecond.toFixed(1)} tok/s (batchSize ${report.nodeBatchSize}), C++ ${report.cpp.tokensPerSecond.toFixed(1)} tok/s`);
  console.log(`Node / C++ paired: ${formatRatio(paired)}  (>= 0.97: ${verdict(paired, 0.97).label})`);
}
