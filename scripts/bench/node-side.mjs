// The llamapeg side of `npm run bench`: loads the model once from dist/, then per request creates
// a context, generates from the prompt tokens and reports what the C++ loop reports. `runs` (default
// 1): generations in that one context (the cache cleared before each), the last one reported.
//   node scripts/bench/node-side.mjs <dist dir> <model> <prompt token ids, comma separated>
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { cpuMsSince, serveLines } from "./sides.mjs";

const [dist, modelPath, promptArg] = process.argv.slice(2);
const { loadModel } = await import(pathToFileURL(join(dist, "llama", "index.js")).href);
const model = await loadModel(modelPath);
const prompt = promptArg.split(",").map(Number);

await serveLines({ side: "llamapeg" }, async (r) => {
  const ctx = model.createContext({
    contextSize: r.contextSize,
    batchSize: r.batchSize,
    ...(r.threads === undefined ? {} : { threads: r.threads }),
    seed: r.seed,
  });
  try {
    for (let i = 1; i < (r.runs ?? 1); i++) {
      for await (const _ of ctx.generate(prompt, { maxTokens: r.maxTokens, seed: r.seed, ...r.sampling, ...r.options }));
      ctx.clearCache();
    }
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const generation = ctx.generate(prompt, { maxTokens: r.maxTokens, seed: r.seed, ...r.sampling, ...r.options });
    const tokens = [];
    for await (const { token } of generation) tokens.push(token);
    const totalMs = performance.now() - t0;
    const s = generation.stats;
    return {
      generated: tokens.length,
      totalMs,
      cpuMs: cpuMsSince(cpu0),
      promptMs: s.promptMs,
      generateMs: s.generateMs,
      sampleMs: s.sampleMs,
      threads: ctx.threads,
      stop: s.stopReason,
      tokens,
    };
  } finally {
    ctx.dispose();
  }
});
