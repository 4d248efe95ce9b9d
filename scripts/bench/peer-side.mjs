// The node-llama-cpp side of `npm run bench --peers`: the same protocol as node-side.mjs, on the
// peer's own API (a context per request, one sequence, `sequence.evaluate()` with the same
// temperature / top-k / top-p / min-p / seed; its sampler chain is its own, so its tokens differ).
//   node scripts/bench/peer-side.mjs <install dir> <model> <prompt token ids>
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { cpuMsSince, serveLines } from "./sides.mjs";

const [dir, modelPath, promptArg] = process.argv.slice(2);
const pkgDir = join(dir, "node_modules", "node-llama-cpp");
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
const { getLlama, LlamaGrammarEvaluationState } = await import(pathToFileURL(join(pkgDir, pkg.exports?.["."]?.import ?? pkg.main ?? "dist/index.js")).href);
const version = pkg.version;

// CPU only, prebuilt binaries only, no thread cap beyond what each context asks for.
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error", maxThreads: 0 });
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const prompt = promptArg.split(",").map(Number);
const grammars = new Map();

await serveLines({ side: "node-llama-cpp", version }, async (r) => {
  if (r.options.grammar?.lazy || r.options.grammarResample !== undefined) return { unsupported: true };
  const context = await model.createContext({
    contextSize: r.contextSize,
    batchSize: r.batchSize,
    sequences: 1,
    ...(r.threads === undefined ? {} : { threads: r.threads }),
  });
  try {
    const sequence = context.getSequence();
    let grammarEvaluationState;
    if (r.options.grammar) {
      let grammar = grammars.get(r.options.grammar.gbnf);
      if (!grammar) grammars.set(r.options.grammar.gbnf, (grammar = await llama.createGrammar({ grammar: r.options.grammar.gbnf })));
      grammarEvaluationState = new LlamaGrammarEvaluationState({ model, grammar });
    }
    const { temperature, topK, topP, minP } = r.sampling;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const tokens = [];
    let stop = "length";
    if (r.maxTokens > 0) {
      for await (const token of sequence.evaluate(prompt, { temperature, topK, topP, minP, seed: r.seed, grammarEvaluationState })) {
        if (model.isEogToken(token)) {
          stop = "eog";
          break;
        }
        tokens.push(token);
        // A real consumer turns each token into text, as both other sides do.
        model.detokenize([token]);
        if (tokens.length >= r.maxTokens) break;
      }
    }
    const totalMs = performance.now() - t0;
    return { generated: tokens.length, totalMs, cpuMs: cpuMsSince(cpu0), threads: context.currentThreads, stop, tokens };
  } finally {
    await context.dispose();
  }
});
