#!/usr/bin/env node
// npm run bench:forced — fast-forward (docs/grammar-engine.md, "Forced text"), ratios from paired,
// interleaved runs in one process:
//  1. A named tool_choice with a 6-property schema (Qwen 2.5's template, the small test model,
//     2 threads, greedy): wall time of the whole generate() call with fast-forward / without.
//  2. Tokens/s of that call with the grammar and fast-forward / with no grammar at all, on the
//     same output length (the free run is cut at the same token count, EOG banned).
// Each round runs the three in a rotated order; the ratios are per round, reported as medians.
// Ends with one PASS/FAIL line per goal of issue 24, judged on this run's numbers.
//
//   node scripts/bench-forced.mjs [--json] [--rounds N] [--size tiny|small] [--threads N]
import { existsSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { formatRatio, median, pairedRatio, verdict } from "./bench/stats.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const log = (...a) => console.error("[bench-forced]", ...a);

function parseArgs(argv, defaults) {
  const out = { ...defaults, json: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--json") out.json = true;
    else if (a.startsWith("--") && i + 1 < argv.length) out[a.slice(2)] = typeof defaults[a.slice(2)] === "number" ? Number(argv[++i]) : argv[++i];
    else throw new Error(`unknown argument ${a}`);
  }
  return out;
}

// A fixed schema with bounded values: the call completes on a random-weight model, and most of
// its text (markers, the name, property names, separators) is forced.
const PROPS = {
  city: { type: "string", maxLength: 8 },
  country: { enum: ["FR", "DE", "IT", "ES"] },
  days: { type: "integer", minimum: 1, maximum: 14 },
  units: { enum: ["metric", "imperial"] },
  hourly: { type: "boolean" },
  language: { enum: ["en", "de", "fr"] },
};
const TOOL = {
  type: "function",
  function: { name: "get_weather_forecast", description: "Weather forecast", parameters: { type: "object", properties: PROPS, required: Object.keys(PROPS), additionalProperties: false } },
};

async function main() {
  const opts = parseArgs(process.argv.slice(2), { rounds: 7, size: "small", threads: 2, maxTokens: 256 });
  const dist = join(root, "dist");
  for (const f of ["chat/apply/index.js", "llama/index.js", "test-model/index.js"]) {
    if (!existsSync(join(dist, f))) throw new Error(`dist/${f} is missing: run \`npm run build:ts\` first`);
  }
  const { applyChatTemplate } = await import(pathToFileURL(join(dist, "chat/apply/index.js")).href);
  const { loadModel } = await import(pathToFileURL(join(dist, "llama/index.js")).href);
  const { ensureTestModel } = await import(pathToFileURL(join(dist, "test-model/index.js")).href);
  const load = () => loadavg().map((x) => x.toFixed(2)).join(" ");
  const report = { load: { start: load() }, size: opts.size, threads: opts.threads, rounds: [] };

  const template = readFileSync(join(root, "vendor", "llama.cpp", "models", "templates", "Qwen-Qwen2.5-7B-Instruct.jinja"), "utf8");
  const plan = applyChatTemplate(template, {
    messages: [{ role: "user", content: "What is the weather in Paris for the next days?" }],
    tools: [TOOL],
    tool_choice: { type: "function", function: { name: TOOL.function.name } },
  });
  const model = await loadModel(await ensureTestModel(opts.size));
  const context = model.createContext({ contextSize: 2048, threads: opts.threads });
  const prompt = model.tokenize(plan.prompt, { parseSpecial: true });
  const grammar = { gbnf: plan.grammar.gbnf, prefill: plan.grammar.prefill };
  const eogBan = {};
  for (let t = 0; t < model.vocabSize; t++) if (model.isEog(t)) eogBan[t] = -Infinity;

  const timed = async (options) => {
    const t0 = performance.now();
    const r = await context.generate(prompt, options).result();
    return { ms: performance.now() - t0, generateMs: r.stats.generateMs, tokens: r.tokens.length, forced: r.stats.forcedTokens ?? 0, runs: r.stats.forcedRuns ?? 0, stop: r.stats.stopReason, text: r.text };
  };
  const greedy = { temperature: 0, maxTokens: opts.maxTokens };
  // warm-up: the prompt in the KV cache, the grammar's caches, the vocabulary index
  await timed({ ...greedy, grammar, fastForward: true });
  await timed({ ...greedy, grammar, fastForward: false });
  let lastTokens = 0;
  const kinds = {
    ff: () => timed({ ...greedy, grammar, fastForward: true }),
    step: () => timed({ ...greedy, grammar, fastForward: false }),
    free: () => timed({ ...greedy, maxTokens: lastTokens, logitBias: eogBan }),
  };
  for (let i = 0; i < opts.rounds; i++) {
    const order = [["ff", "step", "free"], ["step", "free", "ff"], ["free", "ff", "step"]][i % 3];
    const round = {};
    // the free run needs the length of the grammar run: take it from the previous ff run (the same
    // greedy output every round) or run ff first once
    if (lastTokens === 0) lastTokens = (await kinds.ff()).tokens;
    for (const k of order) round[k] = await kinds[k]();
    lastTokens = round.ff.tokens;
    report.rounds.push(round);
    log(`round ${i + 1}/${opts.rounds}: ff ${round.ff.ms.toFixed(0)} ms (${round.ff.tokens} tokens, ${round.ff.forced} forced) · steps ${round.step.ms.toFixed(0)} ms (${round.step.tokens}) · free ${round.free.ms.toFixed(0)} ms (${round.free.tokens}) · load ${load()}`);
  }
  report.load.end = load();
  const first = report.rounds[0];
  report.summary = {
    ffTokens: first.ff.tokens,
    ffForced: first.ff.forced,
    ffRuns: first.ff.runs,
    stepTokens: first.step.tokens,
    wall: pairedRatio(report.rounds.map((r) => r.ff.ms), report.rounds.map((r) => r.step.ms)),
    tps: pairedRatio(report.rounds.map((r) => r.ff.tokens / r.ff.ms), report.rounds.map((r) => r.free.tokens / r.free.ms)),
    medianFfMs: median(report.rounds.map((r) => r.ff.ms)),
    medianStepMs: median(report.rounds.map((r) => r.step.ms)),
    medianFreeMs: median(report.rounds.map((r) => r.free.ms)),
    sample: first.ff.text.slice(0, 400),
  };
  const s = report.summary;
  const lines = [
    `named tool call, ${opts.size} model, ${opts.threads} threads: ${s.ffTokens} tokens, ${s.ffForced} forced in ${s.ffRuns} runs (without: ${s.stepTokens} tokens); load ${report.load.start} -> ${report.load.end}`,
    `  whole call: fast-forward ${s.medianFfMs.toFixed(0)} ms, one token per step ${s.medianStepMs.toFixed(0)} ms, no grammar (same length) ${s.medianFreeMs.toFixed(0)} ms`,
    `${verdict(s.wall, 0.6, { atLeast: false }).label} wall with fast-forward / without <= 0.6: ${formatRatio(s.wall)} (median [95% interval] of ${report.rounds.length} paired rounds)`,
    `${verdict(s.tps, 1.2).label} tokens/s grammar+fast-forward / grammar off >= 1.2: ${formatRatio(s.tps)}`,
  ];
  if (opts.json) console.log(JSON.stringify(report, null, 2));
  else console.log(lines.join("\n"));
  model.dispose();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
