// The model the native fuzz classes run on: the small valid qwen2 of gguf-corpus.ts (1003
// tokens, 2 layers of width 32), written once to the temp folder, loaded once per child.
import { existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { loadModel, type Context, type Model } from "../../lib/llama/index.js";
import { miniModel } from "./gguf-corpus.js";
import { encodeRawGguf } from "./gguf-encode.js";

let loaded: { model: Model; context: Context } | undefined;

export function miniModelPath(): string {
  const path = join(tmpdir(), "llamapeg-fuzz-mini-v1.gguf");
  if (!existsSync(path)) writeFileSync(path, encodeRawGguf(miniModel()));
  return path;
}

export async function fuzzContext(): Promise<{ model: Model; context: Context }> {
  if (loaded === undefined) {
    const model = await loadModel(miniModelPath());
    loaded = { model, context: model.createContext({ contextSize: 512, batchSize: 512, threads: 1, seed: 1 }) };
  }
  return loaded;
}

export function closeFuzzContext(): void {
  loaded?.model.dispose();
  loaded = undefined;
}
