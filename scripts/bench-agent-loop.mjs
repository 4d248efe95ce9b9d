#!/usr/bin/env node
/**
 * npm run bench:agent: prompt reuse in agent loops (issue 23), on the transformer (qwen2), hybrid
 * (lfm2) and sliding-window (gemma3, swaFull off) test models.
 *   turns     a tool-calling conversation of --turns turns (each adds the assistant's call, a tool
 *             result and a user message); at the last turn: prompt tokens decoded / tokens new
 *             (goal <= 1.2), with checkpoints and without (checkpoints: 0, the old path), and the
 *             last turn's prompt time warm vs the same prompt cold (a cleared sequence).
 *   shared    8 sequences whose prompts share a --prefix-token prefix: the first prefills it, the
 *             other seven copy it; total prefill time / one sequence's prefill (goal <= 1.3).
 *   state     a --state-token sequence saved to a file and loaded into a new context: load time /
 *             the time to decode those tokens (goal <= 0.1).
 * Not compared with llama-server here (bench:parallel has that harness). Times on a shared,
 * loaded machine are provisional: the load average is printed with every line.
 *
 *   npm run build:ts && node scripts/bench-agent-loop.mjs [--model tiny|small] [--turns 10]
 *       [--prefix 4096] [--state 8192] [--threads T] [--json]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

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
const json = argv.includes("--json");

const { loadModel, createChatCompletion } = await import(pathToFileURL(join(root, "dist/index.js")).href);
const { ensureTestModel } = await import(pathToFileURL(join(root, "dist/exports/testing.js")).href);

const KINDS = {
  qwen2: {},
  lfm2: { architecture: "lfm2" },
  gemma3: { architecture: "gemma3", slidingWindow: 32 },
};
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

async function shared(model) {
  const c = model.createContext({ contextSize: prefixTokens + 256, sequences: 8, kvUnified: true, swaFull: true, threads });
  const prefix = model.tokenize(words(Math.ceil(prefixTokens * 0.75), 1)).slice(0, prefixTokens);
  const prompts = Array.from({ length: 8 }, (_, i) => Int32Array.from([...prefix, ...model.tokenize(` user ${i}: ${words(20, i)}`)]));
  const seqs = Array.from({ length: 8 }, () => c.getSequence());
  const options = { maxTokens: 1, temperature: 0 };
  const t0 = performance.now();
  const first = await seqs[0].generate(prompts[0], options).result();
  const oneMs = performance.now() - t0;
  const rest = await Promise.all(seqs.slice(1).map((s, i) => s.generate(prompts[i + 1], options).result()));
  const allMs = performance.now() - t0;
  const decoded = [first, ...rest].reduce((n, r) => n + r.stats.promptTokens - r.stats.reusedTokens, 0);
  c.dispose();
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

const dir = mkdtempSync(join(tmpdir(), "llamapeg-bench-agent-"));
try {
  for (const [kind, overrides] of Object.entries(KINDS)) {
    const model = await loadModel(await ensureTestModel(size, { overrides }));
    for (const checkpoints of [8, 0]) {
      const t = await conversation(model, checkpoints);
      report({ bench: "turns", model: kind, checkpoints, turn: turns, prompt: t.prompt, new: t.newTokens, decoded: t.decoded, decodedPerNew: t.decoded / t.newTokens, warmPromptMs: t.warmPromptMs, coldPromptMs: t.coldPromptMs, warmOverCold: t.warmPromptMs / t.coldPromptMs, load: load() });
    }
    // lfm2: a hybrid copies only a whole other sequence, so the seven others decode the prefix
    const sh = await shared(model);
    report({ bench: "shared", model: kind, prefix: sh.prefix, decoded: sh.decoded, oneMs: sh.oneMs, allMs: sh.allMs, allOverOne: sh.ratio, load: load() });
    const st = await state(model, dir);
    report({ bench: "state", model: kind, tokens: st.tokens, mb: st.bytes / 2 ** 20, decodeMs: st.decodeMs, loadMs: st.loadMs, loadOverDecode: st.ratio, load: load() });
    model.dispose();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
if (json) console.log(JSON.stringify(results, null, 2));
