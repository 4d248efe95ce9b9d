// GGUF files: every damaged variant of gguf-corpus.ts loaded the way users load a model
// (loadModel, tokenize with special tokens, a context, two generated tokens). `raw` loads with the
// addon directly, without llamapeg's header validation: the baseline that shows what the
// validation prevents.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { loadModel } from "../../lib/llama/index.js";
import { loadBinding } from "../../lib/native/load.js";
import type { FuzzClass } from "./classes.js";
import { ggufCorpus, type GgufVariant } from "./gguf-corpus.js";

let dir: string | undefined;
const file = (): string => join((dir ??= mkdtempSync(join(tmpdir(), "llamapeg-fuzz-gguf-"))), "case.gguf");

async function viaLibrary(path: string, vocabOnly: boolean): Promise<Record<string, unknown>> {
  const model = await loadModel(path, { vocabOnly });
  try {
    const prompt = model.tokenize("Hello <|im_start|> world", { addSpecial: true, parseSpecial: true });
    model.detokenize(prompt, { special: true });
    if (!vocabOnly && prompt.length > 0) {
      const context = model.createContext({ contextSize: 64, batchSize: 64, threads: 1, seed: 1 });
      try {
        await context.generate(prompt, { maxTokens: 2, temperature: 0 }).result();
      } finally {
        context.dispose();
      }
    }
    return { loaded: true };
  } finally {
    model.dispose();
  }
}

const OPTIONS = {
  maxTokens: 2, temperature: 0, topK: 40, topP: 0.95, minP: 0.05, seed: 1, repeatPenalty: 1,
  stopTokens: new Int32Array(0), preservedTokens: new Int32Array(0), special: false, grammar: null,
  grammarResample: "fast", contextShift: false, contextShiftKeep: 0, flushTokens: 8, flushMs: 5, windowTokens: 64,
};

/** The same steps on the raw addon: what a file does to llama.cpp when nothing checks it first. */
async function viaAddon(path: string, vocabOnly: boolean): Promise<Record<string, unknown>> {
  const native = loadBinding() as any;
  const model = await native.loadModel(path, { gpuLayers: 0, useMmap: true, vocabOnly }, undefined);
  try {
    const prompt = model.tokenize("Hello <|im_start|> world", true, true);
    model.detokenize(prompt, true);
    if (!vocabOnly && prompt.length > 0) {
      const context = model.createContext({ contextSize: 64, batchSize: 64, sequences: 1, kvUnified: false, threads: 1, threadsBatch: 0, seed: 1 });
      const seq = context.acquireSequence();
      try {
        await new Promise<void>((resolve, reject) => {
          try {
            const g = context.generate(seq, prompt, OPTIONS, (ids: Int32Array, _b: unknown, _e: unknown, final: unknown) => {
              g.release(ids.length);
              if (final !== undefined) resolve();
            });
          } catch (e) {
            reject(e);
          }
        });
      } finally {
        context.dispose();
      }
    }
    return { loaded: true };
  } finally {
    model.dispose();
  }
}

export const fuzzClass: FuzzClass<GgufVariant> = {
  cases: (seed, size) => ggufCorpus(seed, size),
  describe: (c) => `${c.part}: ${c.name}`,
  async run(c, o) {
    const path = file();
    writeFileSync(path, c.bytes);
    return o.raw ? viaAddon(path, c.vocabOnly) : viaLibrary(path, c.vocabOnly);
  },
  close() {
    if (dir) rmSync(dir, { recursive: true, force: true });
  },
};
