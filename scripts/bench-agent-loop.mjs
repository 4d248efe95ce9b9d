#!/usr/bin/env node
/**
 * npm run bench:agent: prompt reuse in agent loops (issue 23), on the transformer (qwen2), hybrid
 * (lfm2) and sliding-window (gemma3, swaFull off) test models.
 *   turns     a tool-calling conversation of --turns turns (each adds the assistant's call, a tool
 *             result and a user message); at the last turn: prompt tokens decoded / tokens new
 *             (goal <= 1.2), with checkpoints and without (checkpoints: 0, the old path), and the
 *             last turn's prompt time warm vs the same prompt cold (a cleared sequence).
 *   shared    8 sequences whose prompts share a --prefix-token prefix (kvUnified): "after-first",
 *             the first prefills it, then the other seven start and copy it; "together", all
 *             eight start at once (seven wait for the one decoding it). Total prefill time / one
 *             sequence's prefill (goal <= 1.3), the median of --reps runs with its interval.
 *             gemma3 also with swaFull false (checkpoints).
 *   state     a --state-token sequence saved to a file and loaded into a new context: load time /
 *             the time to decode those tokens (goal <= 0.1).
 *   server    side by side with the vendored llama-server (scripts/bench/agent-server.mjs: -np 1,
 *             its default --ctx-checkpoints, cache_prompt): the same scripted --turns-turn chat
 *             (fixed assistant tool calls, so both sides see the same messages), max_tokens 1, so a
 *             request's wall time is its time to first token. --reps conversations, each with its
 *             own system prompt, ours and its turns interleaved (the order alternating per
 *             conversation); the ratio ours / its at the last turn, per conversation, its median
 *             and 95% interval (goal <= 1.0), and both sides' decoded / new at the last turn.
 * Times on a shared, loaded machine are provisional: the load average is printed with every line.
 *
 *   npm run build:ts && node scripts/bench-agent-loop.mjs [--model tiny|small] [--turns 10]
 *       [--prefix 4096] [--state 8192] [--threads T] [--reps 6] [--only turns,shared,state,server]
 *       [--models qwen2,lfm2,gemma3] [--json]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { startAgentServer, serverTurn } from "./bench/agent-server.mjs";
import { formatRatio, pairedRatio, verdict } from "./bench/stats.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const size = opt("--model", "tiny");
const turns = Number(opt("--turns", "10"));
const prefixTokens = Number(opt("--prefix", "4096"));
const stateTokens = Number(opt("--state", "8192"));
const threads = Number(opt("--threads", "0")) || undefined;
const reps = Number(opt("--reps", "6"));
const only = new Set(opt("--only", "turns,shared,state,server").split(","));
const json = argv.includes("--json");

const { loadModel, createChatCompletion } = await import(pathToFileURL(join(root, "dist/index.js")).href);
const { ensureTestModel } = await import(pathToFileURL(join(root, "dist/exports/testing.js")).href);

const ALL_KINDS = {
  qwen2: {},
  lfm2: { architecture: "lfm2" },
  gemma3: { architecture: "gemma3", slidingWindow: 32 },
};
const KINDS = Object.fromEntries(opt("--models", Object.keys(ALL_KINDS).join(",")).split(",").map((k) => [k, ALL_KINDS[k]]));
const load = () => loadavg().map((x) => x.toFixed(2)).join(" ");
const words = (n, salt) => Array.from({ length: n }, (_, i) => `w${(i * 7 + salt) % 97}`).join(" ");
const results = [];
const report = (line) => {
  results.push(line);
  if (!json) console.log(Object.entries(line).map(([k, v]) => `${k}=${typeof v === "number" ? +v.toFixed(3) : v}`).join("  "));
};
const TOOLS = [{ type: "function", function: { name: "lookup", description: "Looks a word up", parameters: { type: "object", properties: { word: { type: "string", maxLength: 12 } }, required: ["word"] } } }];

async function conversation(model, checkpoints) {
  const c = model.createContext({ contextSize: 8192, batchSize: 512, swaFull: false, checkpoints, threads });
  // A context of its own: in the same context the cold sequence would copy the warm one's cells.
  const coldContext = model.createContext({ contextSize: 8192, batchSize: 512, swaFull: false, checkpoints, threads });
  const warm = c.getSequence();
  const cold = coldContext.getSequence();
  const messages = [
    { role: "system", content: `You index words. ${words(400, 3)}` },
    { role: "user", content: "Look up the first word." },
  ];
  let last;
  for (let turn = 0; turn < turns; turn++) {
    const request = { messages: structuredClone(messages), tools: TOOLS, tool_choice: "required", temperature: 0, max_tokens: 40, seed: 1 };
    const before = warm.tokens;
    const t0 = performance.now();
    const completion = await createChatCompletion(warm, request);
    const warmMs = performance.now() - t0;
    const prompt = warm.tokens.slice(0, completion.usage.prompt_tokens);
    let common = 0;
    while (common < before.length && common < prompt.length && before[common] === prompt[common]) common++;
    last = { prompt: prompt.length, newTokens: prompt.length - common, decoded: completion.usage.prompt_tokens - completion.usage.prompt_tokens_details.cached_tokens, warmPromptMs: completion.llamapeg.timings.prompt_ms, warmMs };
    if (turn === turns - 1) {
      cold.clearCache();
      const coldCompletion = await createChatCompletion(cold, request);
      last.coldPromptMs = coldCompletion.llamapeg.timings.prompt_ms;
    }
    const m = completion.choices[0].message;
    messages.push({ role: "assistant", content: m.content ?? "", ...(m.tool_calls?.length ? { tool_calls: m.tool_calls } : {}) });
    for (const call of m.tool_calls ?? []) messages.push({ role: "tool", tool_call_id: call.id, content: `{"hits": ${turn}, "near": "${words(20, turn)}"}` });
    messages.push({ role: "user", content: `Turn ${turn}: now ${words(20, turn + 11)}.` });
  }
  c.dispose();
  coldContext.dispose();
  return last;
}

async function shared(model, { together, swaFull }) {
  const opts = { contextSize: prefixTokens + 256, sequences: 8, kvUnified: true, swaFull, threads };
  const prefix = model.tokenize(words(Math.ceil(prefixTokens * 0.75), 1)).slice(0, prefixTokens);
  const prompts = Array.from({ length: 8 }, (_, i) => Int32Array.from([...prefix, ...model.tokenize(` user ${i}: ${words(20, i)}`)]));
  const options = { maxTokens: 1, temperature: 0 };
  let oneMs, allMs, results;
  if (together) {
    // one sequence alone (a context of its own), then all eight started at once in a fresh one
    const alone = model.createContext(opts);
    let t0 = performance.now();
    await alone.getSequence().generate(prompts[0], options).result();
    oneMs = performance.now() - t0;
    alone.dispose();
    const c = model.createContext(opts);
    const seqs = Array.from({ length: 8 }, () => c.getSequence());
    t0 = performance.now();
    results = await Promise.all(seqs.map((s, i) => s.generate(prompts[i], options).result()));
    allMs = performance.now() - t0;
    c.dispose();
  } else {
    // the first prefills it, then the seven others start at once
    const c = model.createContext(opts);
    const seqs = Array.from({ length: 8 }, () => c.getSequence());
    const t0 = performance.now();
    const first = await seqs[0].generate(prompts[0], options).result();
    oneMs = performance.now() - t0;
    const rest = await Promise.all(seqs.slice(1).map((s, i) => s.generate(prompts[i + 1], options).result()));
    allMs = performance.now() - t0;
    results = [first, ...rest];
    c.dispose();
  }
  const decoded = results.reduce((n, r) => n + r.stats.promptTokens - r.stats.reusedTokens, 0);
  return { prefix: prefix.length, decoded, oneMs, allMs, ratio: allMs / oneMs };
}

async function state(model, dir) {
  const opts = { contextSize: stateTokens + 256, swaFull: true, threads };
  const c = model.createContext(opts);
  const s = c.getSequence();
  const prompt = model.tokenize(words(Math.ceil(stateTokens * 0.75), 2)).slice(0, stateTokens);
  const t0 = performance.now();
  await s.generate(prompt, { maxTokens: 1, temperature: 0 }).result();
  const decodeMs = performance.now() - t0;
  const file = join(dir, "bench.state");
  const saved = await s.saveState(file);
  c.dispose();
  const c2 = model.createContext(opts);
  const s2 = c2.getSequence();
  const t1 = performance.now();
  await s2.loadState(file);
  const loadMs = performance.now() - t1;
  c2.dispose();
  return { tokens: saved.tokens, bytes: saved.bytes, decodeMs, loadMs, ratio: loadMs / decodeMs };
}

/** The side-by-side's conversation: the same messages for both sides, whatever the model says. */
function scriptedTurn(salt, turn) {
  const messages = [{ role: "system", content: `You index words (${salt}). ${words(400, salt)}` }, { role: "user", content: "Look up the first word." }];
  for (let k = 0; k < turn; k++) {
    messages.push({ role: "assistant", content: "", tool_calls: [{ id: `call_${k}`, type: "function", function: { name: "lookup", arguments: JSON.stringify({ word: `w${k}` }) } }] });
    messages.push({ role: "tool", tool_call_id: `call_${k}`, content: `{"hits": ${k}, "near": "${words(20, k)}"}` });
    messages.push({ role: "user", content: `Turn ${k}: now ${words(20, k + 11)}.` });
  }
  return { messages, tools: TOOLS, temperature: 0, max_tokens: 1, seed: 1 };
}

async function sideBySide(model, modelPath, kind) {
  const contextSize = 8192;
  const batchSize = 512;
  const t = threads ?? 2;
  const server = await startAgentServer(modelPath, { contextSize, batchSize, threads: t });
  const ours = [];
  const theirs = [];
  let last;
  try {
    for (let rep = 0; rep < reps; rep++) {
      const c = model.createContext({ contextSize, batchSize, swaFull: false, threads: t });
      const seq = c.getSequence();
      const salt = 1000 + rep * 17;
      let prevServerPrompt = 0;
      for (let turn = 0; turn < turns; turn++) {
        const request = scriptedTurn(salt, turn);
        const runOurs = async () => {
          const before = seq.tokens;
          const t0 = performance.now();
          const completion = await createChatCompletion(seq, structuredClone(request));
          const ms = performance.now() - t0;
          const prompt = seq.tokens.slice(0, completion.usage.prompt_tokens);
          let common = 0;
          while (common < before.length && common < prompt.length && before[common] === prompt[common]) common++;
          return { ms, prompt: prompt.length, newTokens: prompt.length - common, decoded: completion.usage.prompt_tokens - completion.usage.prompt_tokens_details.cached_tokens, promptMs: completion.llamapeg.timings.prompt_ms };
        };
        const runTheirs = async () => {
          const r = await serverTurn(server.url, structuredClone(request));
          const out = { ...r, newTokens: r.prompt - prevServerPrompt };
          prevServerPrompt = r.prompt;
          return out;
        };
        let a, b;
        if (rep % 2 === 0) {
          a = await runOurs();
          b = await runTheirs();
        } else {
          b = await runTheirs();
          a = await runOurs();
        }
        if (turn === turns - 1) {
          ours.push(a.ms);
          theirs.push(b.ms);
          last = { a, b };
        }
      }
      c.dispose();
    }
  } finally {
    await server.kill();
  }
  const r = pairedRatio(ours, theirs);
  const v = verdict(r, 1.0, { atLeast: false });
  return { kind, r, v, last, ours, theirs };
}

const dir = mkdtempSync(join(tmpdir(), "llamapeg-bench-agent-"));
try {
  for (const [kind, overrides] of Object.entries(KINDS)) {
    const modelPath = await ensureTestModel(size, { overrides });
    const model = await loadModel(modelPath);
    if (only.has("server")) {
      const sb = await sideBySide(model, modelPath, kind);
      const { a, b } = sb.last;
      report({ bench: "server", model: kind, turn: turns, reps, oursTtftMs: a.ms, serverTtftMs: b.ms, oursOverServer: sb.r.median, interval: formatRatio(sb.r), verdict: sb.v.label, oursPrompt: a.prompt, oursNew: a.newTokens, oursDecoded: a.decoded, oursDecodedPerNew: a.decoded / a.newTokens, oursPromptMs: a.promptMs, serverPrompt: b.prompt, serverNew: b.newTokens, serverDecoded: b.decoded, serverDecodedPerNew: b.decoded / b.newTokens, serverPromptMs: b.promptMs, load: load() });
    }
    for (const checkpoints of only.has("turns") ? [8, 0] : []) {
      const t = await conversation(model, checkpoints);
      report({ bench: "turns", model: kind, checkpoints, turn: turns, prompt: t.prompt, new: t.newTokens, decoded: t.decoded, decodedPerNew: t.decoded / t.newTokens, warmPromptMs: t.warmPromptMs, coldPromptMs: t.coldPromptMs, warmOverCold: t.warmPromptMs / t.coldPromptMs, load: load() });
    }
    for (const swaFull of !only.has("shared") ? [] : kind === "gemma3" ? [true, false] : [true]) {
      for (const together of [false, true]) {
        const runs = [];
        for (let rep = 0; rep < reps; rep++) runs.push(await shared(model, { together, swaFull }));
        const r = pairedRatio(runs.map((x) => x.allMs), runs.map((x) => x.oneMs));
        const sh = runs[runs.length - 1];
        report({ bench: "shared", model: kind, swaFull, start: together ? "together" : "after-first", prefix: sh.prefix, decoded: sh.decoded, reps, oneMs: sh.oneMs, allMs: sh.allMs, allOverOne: r.median, interval: formatRatio(r), verdict: verdict(r, 1.3, { atLeast: false }).label, load: load() });
      }
    }
    if (only.has("state")) {
      const st = await state(model, dir);
      report({ bench: "state", model: kind, tokens: st.tokens, mb: st.bytes / 2 ** 20, decodeMs: st.decodeMs, loadMs: st.loadMs, loadOverDecode: st.ratio, load: load() });
    }
    model.dispose();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
if (json) console.log(JSON.stringify(results, null, 2));
