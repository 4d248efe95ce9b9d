#!/usr/bin/env node
/**
 * npm run bench:parallel: N concurrent chats on one model, three ways, same model, prompts, token
 * count, sampler and threads:
 *   seq      one llamapeg context with N sequences (one decode thread, one batch per step)
 *   server   llama-server built from the vendored tree (scripts/llama-tools.mjs), -np N, continuous
 *            batching (its default), on 127.0.0.1, streamed /completion with the prompt's token ids
 *   contexts N separate llamapeg contexts (one decode thread each), the way before sequences
 * for N = 1, 2, 4, 8. Reported per cell: aggregate tokens/s (all generated tokens / wall time from
 * the first request to the last token) and per-sequence milliseconds per token (after its first
 * token, median over the chats), medians over --runs; ratios seq/server (goal: aggregate >= 0.95,
 * ms per token <= 1.1; also divided by how many chats generated at once, since a side that
 * overlaps its chats more puts more sequences into every step) and seq/contexts. Each run takes seq and server right after each other (the
 * order alternating), and the bounds are judged on the median of those paired ratios with its 95%
 * interval (scripts/bench/stats.mjs): this VM drifts between runs by more than the margins. End
 * tokens are banned on every side (random weights sample one every few hundred tokens), so every
 * chat generates exactly --tokens and the batches have the same shape everywhere. Then greedy outputs of
 * the N sequences run together against each alone (batched float math can flip near-ties): how
 * many are identical, and where the others first differ.
 *
 *   npm run build:ts && node scripts/bench-parallel.mjs [--model tiny|small] [--tokens 96]
 *       [--runs 3] [--parallel 1,2,4,8] [--threads T] [--kv split|unified|both] [--json]
 *
 * Threads: T for every engine (default: as llama.cpp chooses, the physical cores), environment as
 * given (llama.cpp's defaults). Random weights: a chat may end early at an end token; tokens/s
 * counts the tokens each chat actually generated.
 */
import { spawn } from "node:child_process";
import { availableParallelism, cpus, loadavg } from "node:os";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { formatRatio, median, pairedRatio, verdict } from "./bench/stats.mjs";
import { ensureLlamaTools } from "./llama-tools.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
};
const size = opt("--model", "tiny");
const tokens = Number(opt("--tokens", "96"));
const runs = Number(opt("--runs", "9"));
const parallel = opt("--parallel", "1,2,4,8").split(",").map(Number);
const kvModes = { split: [false], unified: [true], both: [false, true] }[opt("--kv", "split")];
const asJson = argv.includes("--json");
if (!kvModes || parallel.some((n) => !Number.isInteger(n) || n < 1) || !(tokens > 0) || !(runs > 0)) {
  console.error("usage: bench-parallel.mjs [--model tiny|small] [--tokens N] [--runs N] [--parallel 1,2,4,8] [--threads T] [--kv split|unified|both] [--json]");
  process.exit(2);
}
const CONTEXT = 512; // per chat: prompt + tokens fit
const BATCH = 512;
const SAMPLING = { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05 };
const log = (m) => process.stderr.write(`[bench-parallel] ${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const lib = await import(pathToFileURL(join(root, "dist", "index.js")).href);
const { loadModel } = lib;
const { ensureTestModel } = await import(pathToFileURL(join(root, "dist", "test-model", "index.js")).href);
const modelPath = await ensureTestModel(size);
const model = await loadModel(modelPath);
const probe = model.createContext({ contextSize: 256 });
const threads = Number(opt("--threads", String(probe.threads)));
probe.dispose();
// End tokens banned: llama-server's ignore_eos, our logit bias.
const noEog = Object.fromEntries(Array.from({ length: model.vocabSize }, (_, t) => t).filter((t) => model.isEog(t)).map((t) => [t, -Infinity]));

const topics = ["a lighthouse", "the sea", "a small town", "a robot", "winter", "a market", "the moon", "an old map"];
const prompts = topics.map((t) =>
  Array.from(model.tokenize(`<|im_start|>user\nWrite a long story about ${t}.<|im_end|>\n<|im_start|>assistant\n`, { parseSpecial: true })),
);
const promptFor = (i) => prompts[i % prompts.length];

/** One chat on a llamapeg sequence or context: its tokens and when they came. */
async function localChat(target, i, seed) {
  const t0 = performance.now();
  let first = 0;
  let n = 0;
  for await (const _ of target.generate(promptFor(i), { maxTokens: tokens, seed, ...SAMPLING, logitBias: noEog })) {
    if (n++ === 0) first = performance.now();
  }
  return { tokens: n, start: t0, first, end: performance.now() };
}

async function runSequences(n, kvUnified, seed0) {
  const context = model.createContext({ contextSize: CONTEXT, sequences: n, kvUnified, batchSize: BATCH, threads });
  try {
    const seqs = Array.from({ length: n }, () => context.getSequence());
    const t0 = performance.now();
    const chats = await Promise.all(seqs.map((s, i) => localChat(s, i, seed0 + i)));
    return summarize(chats, t0);
  } finally {
    context.dispose();
  }
}

async function runContexts(n, seed0) {
  const contexts = Array.from({ length: n }, () => model.createContext({ contextSize: CONTEXT, batchSize: BATCH, threads }));
  try {
    const t0 = performance.now();
    const chats = await Promise.all(contexts.map((c, i) => localChat(c, i, seed0 + i)));
    return summarize(chats, t0);
  } finally {
    for (const c of contexts) c.dispose();
  }
}

function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

async function startServer(bin, n, kvUnified) {
  const port = await freePort();
  const args = [
    "-m", modelPath, "--host", "127.0.0.1", "--port", String(port),
    "-c", String(CONTEXT * n), "-np", String(n), "-b", String(BATCH), "-ub", String(BATCH),
    "-t", String(threads), "-tb", String(threads), "--no-webui", "--no-warmup",
    ...(kvUnified ? ["--kv-unified"] : ["--no-kv-unified"]),
  ];
  const child = spawn(bin, args, { stdio: ["ignore", "ignore", "pipe"] });
  let tail = "";
  child.stderr.on("data", (b) => (tail = (tail + b).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 1200; i++) {
    if (child.exitCode !== null) throw new Error(`llama-server exited:\n${tail}`);
    try {
      if ((await fetch(`${url}/health`)).status === 200) return { url, kill: () => new Promise((r) => (child.once("exit", r), child.kill("SIGTERM"))) };
    } catch {
      // not up yet
    }
    await sleep(100);
  }
  child.kill("SIGKILL");
  throw new Error(`llama-server did not come up:\n${tail}`);
}

/** One streamed /completion with the prompt's token ids and our sampler chain. */
async function serverChat(url, i, seed) {
  const t0 = performance.now();
  const res = await fetch(`${url}/completion`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      prompt: promptFor(i),
      n_predict: tokens,
      stream: true,
      cache_prompt: false,
      seed,
      temperature: SAMPLING.temperature,
      top_k: SAMPLING.topK,
      top_p: SAMPLING.topP,
      min_p: SAMPLING.minP,
      repeat_penalty: 1,
      ignore_eos: true,
      samplers: ["top_k", "top_p", "min_p", "temperature"],
    }),
  });
  if (!res.ok) throw new Error(`llama-server answered ${res.status}: ${await res.text()}`);
  let first = 0;
  let n = 0;
  let buffer = "";
  const decoder = new TextDecoder();
  for await (const chunk of res.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let at;
    while ((at = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, at).trim();
      buffer = buffer.slice(at + 1);
      if (!line.startsWith("data:")) continue;
      const data = JSON.parse(line.slice(5));
      if (data.stop) {
        n = data.tokens_predicted ?? n;
        continue;
      }
      if (n++ === 0) first = performance.now();
    }
  }
  return { tokens: n, start: t0, first, end: performance.now() };
}

async function runServer(server, n, seed0) {
  const t0 = performance.now();
  const chats = await Promise.all(Array.from({ length: n }, (_, i) => serverChat(server.url, i, seed0 + i)));
  return summarize(chats, t0);
}

function summarize(chats, t0) {
  const total = chats.reduce((a, c) => a + c.tokens, 0);
  const end = Math.max(...chats.map((c) => c.end));
  const perToken = chats.filter((c) => c.tokens > 1).map((c) => (c.end - c.first) / (c.tokens - 1));
  // How many chats generated at once on average, from the first first token to the last token: a
  // side that overlaps its chats more has more sequences in every step, so each step (and each
  // chat's time per token) is longer while the aggregate is higher.
  const firstToken = Math.min(...chats.map((c) => c.first));
  const overlap = chats.reduce((a, c) => a + (c.end - c.first), 0) / Math.max(1e-9, end - firstToken);
  return { tokens: total, aggregate: (total / (end - t0)) * 1000, msPerToken: median(perToken), overlap };
}

/** Greedy: the N sequences together against each alone. */
async function divergence(n, kvUnified) {
  const alone = [];
  for (let i = 0; i < n; i++) {
    const c = model.createContext({ contextSize: CONTEXT, threads });
    alone.push((await c.generate(promptFor(i), { maxTokens: tokens, temperature: 0 }).result()).tokens);
    c.dispose();
  }
  const c = model.createContext({ contextSize: CONTEXT, sequences: n, kvUnified, threads });
  const seqs = Array.from({ length: n }, () => c.getSequence());
  const together = (await Promise.all(seqs.map((s, i) => s.generate(promptFor(i), { maxTokens: tokens, temperature: 0 }).result()))).map((r) => r.tokens);
  c.dispose();
  const firstDiff = together.map((t, i) => {
    const a = alone[i];
    let k = 0;
    while (k < a.length && k < t.length && a[k] === t[k]) k++;
    return k === a.length && k === t.length ? null : k;
  });
  return { identical: firstDiff.filter((k) => k === null).length, of: n, firstDifferences: firstDiff.filter((k) => k !== null) };
}

const tools = await ensureLlamaTools({ log, standalone: true }); // llama.cpp as its own CMake builds it
const loadBefore = loadavg()[0];
log(`${size} model, ${tokens} tokens per chat, ${runs} runs, ${threads} threads per engine, ${availableParallelism()} CPUs, load ${loadBefore.toFixed(2)}`);
const started = performance.now();
const rows = [];
for (const kvUnified of kvModes) {
  for (const n of parallel) {
    const server = await startServer(tools.llamaServer, n, kvUnified);
    try {
      // Warm-up of each side (first-use allocations, page cache), not measured.
      await runSequences(n, kvUnified, 1);
      await runServer(server, n, 1);
      await runContexts(n, 1);
      const sides = { seq: [], server: [], contexts: [] };
      for (let r = 0; r < runs; r++) {
        const seed0 = 1000 + r * 16;
        // seq and server next to each other, alternating who goes first; contexts (no bound) last.
        for (const side of r % 2 === 0 ? ["seq", "server", "contexts"] : ["server", "seq", "contexts"]) {
          if (side === "seq") sides.seq.push(await runSequences(n, kvUnified, seed0));
          else if (side === "server") sides.server.push(await runServer(server, n, seed0));
          else sides.contexts.push(await runContexts(n, seed0));
        }
      }
      const cell = (xs) => ({ aggregate: median(xs.map((x) => x.aggregate)), msPerToken: median(xs.map((x) => x.msPerToken)), tokens: median(xs.map((x) => x.tokens)), overlap: median(xs.map((x) => x.overlap)) });
      const row = { n, kv: kvUnified ? "unified" : "split", seq: cell(sides.seq), server: cell(sides.server), contexts: cell(sides.contexts) };
      row.aggregateSeqOverServer = row.seq.aggregate / row.server.aggregate;
      row.msPerTokenSeqOverServer = row.seq.msPerToken / row.server.msPerToken;
      row.paired = {
        aggregate: pairedRatio(sides.seq.map((x) => x.aggregate), sides.server.map((x) => x.aggregate)),
        msPerToken: pairedRatio(sides.seq.map((x) => x.msPerToken), sides.server.map((x) => x.msPerToken)),
        // Time per token of one chat divided by the chats generating at once: the cost of one
        // sequence-token in a step, whatever the overlap each side reached.
        msPerSequenceToken: pairedRatio(sides.seq.map((x) => x.msPerToken / x.overlap), sides.server.map((x) => x.msPerToken / x.overlap)),
      };
      row.aggregateSeqOverContexts = row.seq.aggregate / row.contexts.aggregate;
      rows.push(row);
      log(
        `N=${n} ${row.kv}: aggregate seq ${row.seq.aggregate.toFixed(1)}, server ${row.server.aggregate.toFixed(1)}, contexts ${row.contexts.aggregate.toFixed(1)} tok/s; ` +
          `ms/token seq ${row.seq.msPerToken.toFixed(2)}, server ${row.server.msPerToken.toFixed(2)}; ` +
          `paired aggregate ${formatRatio(row.paired.aggregate)}, ms/token ${formatRatio(row.paired.msPerToken)}`,
      );
    } finally {
      await server.kill();
    }
  }
}
const greedy = [];
for (const kvUnified of kvModes) greedy.push({ kv: kvUnified ? "unified" : "split", ...(await divergence(Math.max(...parallel), kvUnified)) });
model.dispose();

const report = {
  date: new Date().toISOString(),
  machine: { cpus: availableParallelism(), cpu: cpus()[0]?.model ?? "?", node: process.version },
  loadAverage: { before: Math.round(loadBefore * 100) / 100, after: Math.round(loadavg()[0] * 100) / 100 },
  settings: { model: size, tokens, runs, threads, contextPerChat: CONTEXT, batch: BATCH, sampling: SAMPLING },
  wallSeconds: Math.round((performance.now() - started) / 100) / 10,
  rows,
  greedy,
};
if (asJson) {
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
} else {
  const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "-");
  console.log(`bench:parallel, ${report.date}, ${report.machine.cpu} (${report.machine.cpus} CPUs), ${size} model, ${tokens} tokens/chat, ${threads} threads, median of ${runs}, load ${report.loadAverage.before} -> ${report.loadAverage.after}, ${report.wallSeconds} s`);
  console.log("| N | KV | seq tok/s | server tok/s | contexts tok/s | seq/server | seq/contexts | seq ms/tok | server ms/tok | contexts ms/tok | ms/tok seq/server | chats at once seq / server |");
  console.log("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const r of rows) {
    console.log(
      `| ${r.n} | ${r.kv} | ${f(r.seq.aggregate)} | ${f(r.server.aggregate)} | ${f(r.contexts.aggregate)} | ${f(r.aggregateSeqOverServer, 3)} | ${f(r.aggregateSeqOverContexts, 3)} | ` +
        `${f(r.seq.msPerToken, 2)} | ${f(r.server.msPerToken, 2)} | ${f(r.contexts.msPerToken, 2)} | ${f(r.msPerTokenSeqOverServer, 3)} | ${f(r.seq.overlap, 2)} / ${f(r.server.overlap, 2)} |`,
    );
  }
  console.log(`\nbounds (issue 12), seq / llama-server, paired ratios: median [95% interval of the median]${runs < 6 ? "; * = too few runs for a 95% interval (range shown)" : ""}`);
  for (const r of rows) {
    const a = verdict(r.paired.aggregate, 0.95);
    const m = verdict(r.paired.msPerToken, 1.1, { atLeast: false });
    console.log(`${a.label}  N=${r.n} ${r.kv}: aggregate tok/s >= 0.95: ${formatRatio(r.paired.aggregate)}`);
    console.log(`${m.label}  N=${r.n} ${r.kv}: per-sequence ms/token <= 1.1: ${formatRatio(r.paired.msPerToken)}`);
    const e = verdict(r.paired.msPerSequenceToken, 1.1, { atLeast: false });
    console.log(`${e.label}  N=${r.n} ${r.kv}: per-sequence ms/token at equal overlap (÷ chats at once) <= 1.1: ${formatRatio(r.paired.msPerSequenceToken)}`);
  }
  for (const g of greedy) {
    console.log(`greedy, ${g.of} sequences together vs alone (${g.kv} KV, ${tokens} tokens): ${g.identical}/${g.of} identical${g.firstDifferences.length ? `; others first differ at token ${g.firstDifferences.join(", ")}` : ""}`);
  }
}
