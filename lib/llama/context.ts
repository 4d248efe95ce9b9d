/** `Context`: one llama context (KV cache) of a model, with prefix reuse across generations. */
import { availableParallelism } from "node:os";

import { LlamapegError } from "../errors.js";
import { callNative, type NativeContext, type NativeModel } from "../native/binding.js";
import { resolveGenerateOptions, type GenerateOptions } from "./generate-options.js";
import { Generation } from "./generation.js";
import type { Model } from "./model.js";
import { checkKeys, int, optionalObject } from "./validate.js";

export interface ContextOptions {
  /** Tokens the KV cache holds. Default: min(4096, the model's training context). */
  contextSize?: number;
  /** Most prompt tokens decoded per llama_decode call. Default 512. */
  batchSize?: number;
  /** Compute threads. Default: the number of CPUs. */
  threads?: number;
  /** Default seed for this context's generations (uint32). Default: random per generation. */
  seed?: number;
}

const RANDOM_SEED = 0xffffffff;

export class Context {
  readonly model: Model;
  readonly contextSize: number;
  readonly batchSize: number;
  readonly threads: number;

  #native: NativeContext | null;
  #current: Generation | null = null;
  readonly #onDispose: () => void;

  /** @internal use `model.createContext()` */
  constructor(model: Model, nativeModel: NativeModel, options: ContextOptions | undefined, onDispose: () => void) {
    const o = optionalObject(options, "options");
    checkKeys(o, ["contextSize", "batchSize", "threads", "seed"], "createContext options");
    if (model.vocabOnly) {
      throw new LlamapegError("ERR_CONTEXT_CREATE", "the model was loaded with vocabOnly; it has no weights to run", {
        where: model.path,
      });
    }
    const train = model.trainContextSize > 0 ? model.trainContextSize : 4096;
    const contextSize = int(o.contextSize, "contextSize", Math.min(4096, train), 16, 1 << 24);
    const batchSize = int(o.batchSize, "batchSize", Math.min(512, contextSize), 1, 1 << 20);
    const threads = int(o.threads, "threads", Math.max(1, availableParallelism()), 1, 1024);
    const seed = int(o.seed, "seed", RANDOM_SEED, 0, 0xffffffff);
    this.model = model;
    this.#native = callNative(() => nativeModel.createContext({ contextSize, batchSize, threads, seed }), model.path);
    const info = this.#native.info();
    this.contextSize = info.contextSize;
    this.batchSize = info.batchSize;
    this.threads = info.threads;
    this.#onDispose = onDispose;
  }

  get disposed(): boolean {
    return this.#native === null;
  }

  /** True while a generation runs on this context. */
  get busy(): boolean {
    return this.#current !== null && !this.#current.done;
  }

  /** The tokens the KV cache holds now (the next `generate` reuses their common prefix). */
  get tokens(): Int32Array {
    const native = this.#live();
    return callNative(() => native.tokens());
  }

  /** Forgets the cached tokens (the next generation decodes its whole prompt). */
  clearCache(): void {
    const native = this.#live();
    callNative(() => native.clearCache());
  }

  /**
   * Starts generating after `prompt`. Returns at once; the result is an async iterable of
   * `{token, piece}` whose `result()` gives the stats. One generation at a time per context
   * (ERR_BUSY otherwise); an invalid grammar throws ERR_GRAMMAR_INVALID here.
   */
  generate(prompt: ArrayLike<number>, options?: GenerateOptions): Generation {
    const native = this.#live();
    if (this.busy) throw new LlamapegError("ERR_BUSY", "this context is already generating; wait for it or abort it");
    const resolved = resolveGenerateOptions(this.model, options);
    const generation = new Generation(native, prompt, this.model.vocabSize, resolved);
    this.#current = generation;
    return generation;
  }

  /** Stops a running generation (it ends with stopReason "abort") and frees the context once
   * its native thread has finished. Further use throws ERR_DISPOSED. */
  dispose(): void {
    if (!this.#native) return;
    this.#native.dispose();
    this.#native = null;
    this.#current = null;
    this.#onDispose();
  }

  #live(): NativeContext {
    if (!this.#native) throw new LlamapegError("ERR_DISPOSED", "the context was disposed");
    return this.#native;
  }
}
