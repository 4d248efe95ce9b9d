// The raw addon with the fuzz model, for baseline runs (`raw`): what a grammar does to llama.cpp
// when nothing in TypeScript checked it first.

import { loadBinding } from "../../lib/native/load.js";
import { miniModelPath } from "./fuzz-model.js";

interface RawContext {
  generate(seq: number, prompt: Int32Array, options: object, onBatch: (ids: Int32Array, b: unknown, e: unknown, final: unknown) => void): { release(n: number): void };
}
let raw: { model: { tokenize(t: string, a: boolean, p: boolean): Int32Array; dispose(): void }; context: RawContext; seq: number } | undefined;

export async function rawGenerate(gbnf: string, maxTokens = 4): Promise<void> {
  if (raw === undefined) {
    const native = loadBinding() as any;
    const model = await native.loadModel(miniModelPath(), { gpuLayers: 0, useMmap: true, vocabOnly: false }, undefined);
    const context = model.createContext({ contextSize: 256, batchSize: 256, sequences: 1, kvUnified: false, threads: 1, threadsBatch: 0, seed: 1 });
    raw = { model, context, seq: context.acquireSequence() };
  }
  const r = raw;
  const prompt = r.model.tokenize("Hello", false, false);
  const options = {
    maxTokens, temperature: 0, topK: 40, topP: 0.95, minP: 0.05, seed: 1, repeatPenalty: 1,
    stopTokens: new Int32Array(0), preservedTokens: new Int32Array(0), special: false,
    grammar: { gbnf, root: "root", lazy: false, triggerPatterns: [], triggerTokens: new Int32Array(0), prefillTokens: new Int32Array(0) },
    grammarResample: "fast", contextShift: false, contextShiftKeep: 0, flushTokens: 8, flushMs: 5, windowTokens: 64,
  };
  await new Promise<void>((resolve, reject) => {
    try {
      const g = r.context.generate(r.seq, prompt, options, (ids, _b, _e, final) => {
        g.release(ids.length);
        if (final !== undefined) resolve();
      });
    } catch (e) {
      reject(e);
    }
  });
}
