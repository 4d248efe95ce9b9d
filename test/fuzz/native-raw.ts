// The raw addon with the fuzz model, for baseline runs (`raw`): what a grammar does to llama.cpp
// when nothing in TypeScript checked it first.
import { createRequire } from "node:module";

import { packageRoot } from "../../lib/native/binding.js";
import { miniModelPath } from "./fuzz-model.js";

interface RawContext {
  generate(prompt: Int32Array, options: object, onBatch: (ids: Int32Array, b: unknown, e: unknown, final: unknown) => void): { release(n: number): void };
}
let raw: { model: { tokenize(t: string, a: boolean, p: boolean): Int32Array; dispose(): void }; context: RawContext } | undefined;

export async function rawGenerate(gbnf: string, maxTokens = 4): Promise<void> {
  if (raw === undefined) {
    const native = createRequire(import.meta.url)("node-gyp-build")(packageRoot);
    const model = await native.loadModel(miniModelPath(), { gpuLayers: 0, useMmap: true, vocabOnly: false }, undefined);
    raw = { model, context: model.createContext({ contextSize: 256, batchSize: 256, threads: 1, seed: 1 }) };
  }
  const r = raw;
  const prompt = r.model.tokenize("Hello", false, false);
  const options = {
    maxTokens, temperature: 0, topK: 40, topP: 0.95, minP: 0.05, seed: 1, repeatPenalty: 1,
    stopTokens: new Int32Array(0), preservedTokens: new Int32Array(0), special: false,
    grammar: { gbnf, root: "root", lazy: false, triggerPatterns: [], triggerTokens: new Int32Array(0) },
    grammarResample: "fast", flushTokens: 8, flushMs: 5, windowTokens: 64,
  };
  await new Promise<void>((resolve, reject) => {
    try {
      const g = r.context.generate(prompt, options, (ids, _b, _e, final) => {
        g.release(ids.length);
        if (final !== undefined) resolve();
      });
    } catch (e) {
      reject(e);
    }
  });
}
