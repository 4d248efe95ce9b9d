#!/usr/bin/env node
/**
 * Embedding throughput (issue 25): tokens/s for a batch of 64 short texts, 2 threads, mean
 * pooling, ours (EmbeddingContext.embed in this process) side by side with llama.cpp's own
 * `llama-embedding` (built from the vendored tree by scripts/llama-tools.mjs) on the same
 * model and the same context (-c/-b/-ub 512, unified cache, one decode).
 *
 * Paired, interleaved runs (the order alternates): each pair is one llama-embedding process
 * (the texts four times over: several decodes of about 500 tokens) and one fresh EmbeddingContext
 * of ours (a tiny warm-up embed, as llama-embedding's warm-up decode, then two embed() calls).
 * Theirs is timed from its log timestamps around each decode (its own "prompt eval time" misses
 * the decode: see theirs()); ours is the whole embed() call (tokenizing, the hand-off to the
 * native thread, the decode, copying the vectors out). Compared: first full-size decode against
 * first (both touch the buffers for the first time), and second against second (warm). Goal:
 * ours / theirs >= 0.95 on tokens/s, judged on the median of the paired ratios with its 95%
 * interval (scripts/bench/stats.mjs). Ours runs twice per pair: the default graph "short"
 * (pooling done here, each decode after the first stops after the final norm, leaving out the
 * vocabulary projection llama.cpp computes for every token) and graph "reference" (llama.cpp's
 * whole graph: the same work as llama-embedding), the latter reported beside, not judged.
 *
 *   npm run bench:embeddings -- [--model PATH] [--runs N] [--threads T] [--texts N] [--llama-embedding PATH]
 */
import { execFile } from "node:child_process";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";

import { formatRatio, median, pairedRatio, verdict } from "./bench/stats.mjs";
import { ensureLlamaTools } from "./llama-tools.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const run = promisify(execFile);

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}

const runs = Number(arg("runs", "6"));
const threads = Number(arg("threads", "2"));
const count = Number(arg("texts", "64"));
const lib = await import(pathToFileURL(join(root, "dist", "index.js")).href);
const testing = await import(pathToFileURL(join(root, "dist", "exports", "testing.js")).href);
const modelPath = resolve(arg("model", await testing.ensureTestModel("tiny")));
// llama.cpp as its own CMake builds it (the standalone build), not the tests' in-tree one
// (--llama-embedding PATH: another build of it, e.g. the in-tree build/bin/llama-embedding, whose
// ggml is configured as the addon's)
const llamaEmbedding = arg("llama-embedding", "") || (await ensureLlamaTools({ standalone: true })).llamaEmbedding;

const topics = ["weather", "football", "cooking", "markets", "travel", "music", "gardens", "physics"];
const texts = Array.from({ length: count }, (_, i) => `a remark on ${topics[i % topics.length]}, ${i}`);

const model = await lib.loadModel(modelPath);
const tokens = texts.reduce((n, t) => n + model.tokenize(t, { addSpecial: true, parseSpecial: true }).length, 0);
if (tokens > 512) throw new Error(`the ${count} texts have ${tokens} tokens: more than one 512-token decode`);

// Ours cold: a fresh context's first full-size embed() after one tiny warm-up embed (what one
// llama-embedding process does: common_init's warm-up decode, then its first full-size decode,
// which touches the output and compute buffers for the first time). Ours warm: a second embed()
// on that context (what a long-lived context does).
async function ours(graph) {
  const ctx = model.createEmbeddingContext({ pooling: "mean", threads, contextSize: 512, batchSize: 512, sequences: Math.min(count, 256), graph });
  const measure = async () => {
    const t0 = performance.now();
    const r = await ctx.embedWithUsage(texts);
    const wall = performance.now() - t0;
    if (r.decodes !== 1) throw new Error(`expected one decode, got ${r.decodes}`);
    // the warm-up embed was the short graph's probing decode: the measured ones stop early
    if (r.shortDecodes !== (graph === "short" ? 1 : 0)) throw new Error(`graph ${graph}: ${r.shortDecodes} short decodes`);
    return (tokens / wall) * 1000;
  };
  try {
    await ctx.embed(["x"]); // llama-embedding's warm-up: one tiny decode before the real one
    return { cold: await measure(), warm: await measure() };
  } finally {
    ctx.dispose();
  }
}

// libllama's "prompt eval time" does not cover the decode here (the pooled output is read, and
// waited for, after llama_decode returns), so theirs is timed from its own log timestamps
// (min.sec.ms.us). It gets the texts four times over, so it decodes several full batches (it
// packs inputs while they fit 512 tokens: about our one batch of 502); "batch_decode: n_tokens" is
// logged just before each llama_decode: the first to the second line is its first decode (cold),
// the second to the third its second decode (warm).
const stamp = (line) => {
  const [m, sec, ms, us] = line.slice(0, line.indexOf(" ")).split(".").map(Number);
  return m * 60 + sec + ms / 1e3 + us / 1e6;
};

async function theirs() {
  const prompt = [...texts, ...texts, ...texts, ...texts].join("\n");
  const args = ["-m", modelPath, "-p", prompt, "--pooling", "mean", "-c", "512", "-b", "512", "-ub", "512", "-t", String(threads), "-tb", String(threads), "-v"];
  const { stderr } = await run(llamaEmbedding, args, { maxBuffer: 1 << 26 });
  const lines = stderr.split("\n").filter((l) => l.includes("batch_decode: n_tokens"));
  if (lines.length < 3) throw new Error(`expected three or more batch_decode lines in llama-embedding's output:\n${stderr.slice(-2000)}`);
  // it packs up to 256 inputs while the tokens fit 512: batches of about our one (502 tokens)
  const n = lines.map((l) => Number(/n_tokens = (\d+)/.exec(l)?.[1]));
  for (const k of [0, 1]) if (!(n[k] > 0.9 * tokens && n[k] <= 512)) throw new Error(`llama-embedding's batch ${k} has ${n[k]} tokens, ours ${tokens}`);
  const [a, b, c] = lines.map(stamp);
  return { cold: n[0] / (b - a), warm: n[1] / (c - b) };
}

const sides = { cold: [], warm: [], refCold: [], refGraphWarm: [], ref: [], refWarm: [] };
const loads = [];
for (let i = 0; i < runs; i++) {
  loads.push(loadavg()[0]);
  let o;
  let r;
  let t;
  if (i % 2 === 0) {
    o = await ours("short");
    r = await ours("reference");
    t = await theirs();
  } else {
    t = await theirs();
    r = await ours("reference");
    o = await ours("short");
  }
  sides.ref.push(t.cold);
  sides.refWarm.push(t.warm);
  sides.cold.push(o.cold);
  sides.warm.push(o.warm);
  sides.refCold.push(r.cold);
  sides.refGraphWarm.push(r.warm);
  process.stderr.write(
    `run ${i + 1}/${runs}: ours cold ${o.cold.toFixed(0)} tok/s, warm ${o.warm.toFixed(0)}; ours graph "reference" cold ${r.cold.toFixed(0)}, warm ${r.warm.toFixed(0)}; llama-embedding cold ${t.cold.toFixed(0)}, warm ${t.warm.toFixed(0)} tok/s; load ${loads.at(-1).toFixed(2)}\n`,
  );
}
model.dispose();

const coldRatio = pairedRatio(sides.cold, sides.ref);
const warmRatio = pairedRatio(sides.warm, sides.refWarm);
console.log(`\nembeddings: ${count} texts, ${tokens} tokens, ${threads} threads, mean pooling, ${modelPath}`);
console.log(`load average (1 min) during the runs: ${loads.map((l) => l.toFixed(2)).join(" ")}`);
console.log(`| side | tokens/s (median of ${runs}) |`);
console.log("|---|---|");
console.log(`| llamapeg embed(), fresh context (first decode) | ${median(sides.cold).toFixed(0)} |`);
console.log(`| llamapeg embed(), warm context | ${median(sides.warm).toFixed(0)} |`);
console.log(`| llamapeg embed(), graph "reference", fresh context (first decode) | ${median(sides.refCold).toFixed(0)} |`);
console.log(`| llamapeg embed(), graph "reference", warm context | ${median(sides.refGraphWarm).toFixed(0)} |`);
console.log(`| llama-embedding, first decode | ${median(sides.ref).toFixed(0)} |`);
console.log(`| llama-embedding, second decode | ${median(sides.refWarm).toFixed(0)} |`);
const w = verdict(warmRatio, 0.95);
const c = verdict(coldRatio, 0.95);
console.log(`${w.label}  warm: ours / llama-embedding >= 0.95: ${formatRatio(warmRatio)}`);
console.log(`${c.label}  first decode: ours / llama-embedding >= 0.95: ${formatRatio(coldRatio)}`);
console.log(`(same work) graph "reference" / llama-embedding: warm ${formatRatio(pairedRatio(sides.refGraphWarm, sides.refWarm))}, first decode ${formatRatio(pairedRatio(sides.refCold, sides.ref))}`);
