#!/usr/bin/env node
/**
 * Remote vs in-process on a test model: the same createChatCompletion requests through
 *   A. the in-process Context (T threads),
 *   B. one llama-server (T threads, 1 slot) behind connectLlamaServer, one chat at a time,
 *   C. one llama-server (T threads, 8 slots), 8 concurrent chats,
 *   D. two llama-servers (T threads and 4 slots each), the same 8 concurrent chats, least-busy.
 * Reported: time to first token (TTFT: request to the first chunk with text) and tokens/s per chat
 * for A and B (median of --reps), aggregate tokens/s (all generated tokens / wall time) for C and
 * D, and the ratios B/A and D/C. Each server gets the same T threads, so D is "two machines like
 * the one in C" only when the host has 2T free cores; T defaults to half the CPUs.
 *
 *   npm run build:ts && node scripts/bench-remote.mjs [--size small|tiny] [--tokens 96] [--reps 5]
 *       [--threads T] [--json]
 *
 * Builds llama-server on first use (scripts/llama-tools.mjs, cached). Random weights: outputs may
 * end early at an end token, so tokens/s counts the tokens each chat actually generated.
 */
import { spawn } from "node:child_process";
import { availableParallelism, loadavg } from "node:os";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { ensureLlamaTools } from "./llama-tools.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
};
const size = opt("--size", "small");
const tokens = Number(opt("--tokens", "96"));
const reps = Number(opt("--reps", "5"));
const threads = Number(opt("--threads", String(Math.max(1, Math.floor(availableParallelism() / 2)))));
const asJson = argv.includes("--json");
const CONTEXT = 2048;
const CHATS = 8;

const lib = await import(pathToFileURL(join(root, "dist", "index.js")).href);
const { loadModel, createChatCompletion, connectLlamaServer } = lib;
const { ensureTestModel } = await import(pathToFileURL(join(root, "dist", "test-model", "index.js")).href);

const log = (m) => process.stderr.write(`[bench-remote] ${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

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

async function startServer(bin, model, parallel) {
  const port = await freePort();
  // -c is per slot times slots: every slot holds a whole chat, as the in-process context does.
  const args = ["-m", model, "--host", "127.0.0.1", "--port", String(port), "-c", String(CONTEXT * parallel), "-np", String(parallel), "-t", String(threads), "-tb", String(threads), "--no-webui", "--no-warmup"];
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

const request = (i, seed) => ({
  messages: [{ role: "user", content: `Chat ${i}: tell me about the number ${i * 7 + 3}.` }],
  temperature: 0.8,
  seed,
  max_tokens: tokens,
  stream: true,
});

/** One streamed chat: TTFT (ms) and the generated tokens with their time after the first. */
async function chat(target, req) {
  const t0 = performance.now();
  let first = 0;
  let usage;
  for await (const c of createChatCompletion(target, { ...req, stream_options: { include_usage: true } })) {
    const d = c.choices[0]?.delta;
    if (first === 0 && d && ((d.content ?? "") !== "" || d.tool_calls || d.reasoning_content)) first = performance.now();
    if (c.usage) usage = c.usage;
  }
  const end = performance.now();
  const n = usage?.completion_tokens ?? 0;
  return { ttft: (first || end) - t0, tokens: n, perSecond: n > 1 && first ? ((n - 1) / (end - first)) * 1000 : 0, ms: end - t0 };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function serial(target, label) {
  await chat(target, request(99, 1)); // warm-up (weights paged in, caches primed)
  const runs = [];
  for (let r = 0; r < reps; r++) runs.push(await chat(target, request(r, 100 + r)));
  const row = { label, ttftMs: median(runs.map((x) => x.ttft)), tokensPerSecond: median(runs.map((x) => x.perSecond)), tokens: median(runs.map((x) => x.tokens)) };
  log(`${label}: TTFT ${row.ttftMs.toFixed(1)} ms, ${row.tokensPerSecond.toFixed(1)} tok/s (median of ${reps})`);
  return row;
}

async function concurrent(target, label) {
  await Promise.all(Array.from({ length: CHATS }, (_, i) => chat(target, request(50 + i, 1)))); // warm-up
  const rates = [];
  let totalTokens = 0;
  for (let r = 0; r < Math.max(1, Math.ceil(reps / 2)); r++) {
    const t0 = performance.now();
    const runs = await Promise.all(Array.from({ length: CHATS }, (_, i) => chat(target, request(i, 200 + r * CHATS + i))));
    const n = runs.reduce((a, x) => a + x.tokens, 0);
    totalTokens += n;
    rates.push((n / (performance.now() - t0)) * 1000);
  }
  const row = { label, aggregateTokensPerSecond: median(rates), tokens: totalTokens };
  log(`${label}: ${row.aggregateTokensPerSecond.toFixed(1)} tok/s aggregate (${CHATS} chats)`);
  return row;
}

const load = loadavg().map((x) => x.toFixed(2)).join(" ");
log(`model ${size}, ${tokens} tokens per chat, ${reps} reps, ${threads} threads per engine, ${availableParallelism()} CPUs, load ${load}`);
const tools = await ensureLlamaTools({ log, standalone: true }); // llama.cpp as its own CMake builds it
const modelPath = await ensureTestModel(size);

const model = await loadModel(modelPath);
const context = model.createContext({ contextSize: CONTEXT, threads });
const A = await serial(context, "A in-process");
context.dispose();
model.dispose();

let servers = [await startServer(tools.llamaServer, modelPath, 1)];
let backend = connectLlamaServer(servers.map((s) => s.url));
const B = await serial(backend, "B one llama-server");
backend.close();
await Promise.all(servers.map((s) => s.kill()));

servers = [await startServer(tools.llamaServer, modelPath, CHATS)];
backend = connectLlamaServer(servers.map((s) => s.url));
const C = await concurrent(backend, `C one llama-server, ${CHATS} slots`);
backend.close();
await Promise.all(servers.map((s) => s.kill()));

servers = await Promise.all([0, 1].map(() => startServer(tools.llamaServer, modelPath, CHATS / 2)));
backend = connectLlamaServer(servers.map((s) => s.url));
const D = await concurrent(backend, `D two llama-servers, ${CHATS / 2} slots each`);
const spread = backend.status().map((s) => s.accepted);
backend.close();
await Promise.all(servers.map((s) => s.kill()));

const result = {
  model: size,
  tokensPerChat: tokens,
  reps,
  threadsPerEngine: threads,
  cpus: availableParallelism(),
  loadBefore: load,
  loadAfter: loadavg().map((x) => x.toFixed(2)).join(" "),
  A,
  B,
  C,
  D,
  requestsPerServerInD: spread,
  ratios: {
    ttftRemoteOverLocal: B.ttftMs / A.ttftMs,
    tokensPerSecondRemoteOverLocal: B.tokensPerSecond / A.tokensPerSecond,
    aggregateTwoServersOverOne: D.aggregateTokensPerSecond / C.aggregateTokensPerSecond,
  },
};
if (asJson) {
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} else {
  const f = (x, d = 1) => x.toFixed(d);
  console.log(`\nbench-remote: ${size} model, ${tokens} tokens/chat, ${threads} threads per engine, ${result.cpus} CPUs, load ${result.loadBefore} -> ${result.loadAfter}\n`);
  console.log("| path | TTFT ms | tokens/s per chat | aggregate tokens/s |");
  console.log("|---|---:|---:|---:|");
  console.log(`| A in-process, 1 chat | ${f(A.ttftMs)} | ${f(A.tokensPerSecond)} | |`);
  console.log(`| B one llama-server, 1 chat | ${f(B.ttftMs)} | ${f(B.tokensPerSecond)} | |`);
  console.log(`| C one llama-server, ${CHATS} chats | | | ${f(C.aggregateTokensPerSecond)} |`);
  console.log(`| D two llama-servers, ${CHATS} chats (${spread.join(" + ")} requests) | | | ${f(D.aggregateTokensPerSecond)} |`);
  console.log(`\nB/A: TTFT x${f(result.ratios.ttftRemoteOverLocal, 2)}, tokens/s x${f(result.ratios.tokensPerSecondRemoteOverLocal, 2)}; D/C aggregate x${f(result.ratios.aggregateTwoServersOverOne, 2)}`);
}
