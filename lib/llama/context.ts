/**
 * `Context`: one llama context (KV cache) of a model with `sequences` conversations in it, all
 * decoded by one native thread in shared batches. With one sequence (the default) the context
 * itself generates, as a sequence does.
 */
import { ArgumentRangeError, LlamapegError } from "../errors.js";
import { callNative, type NativeContext, type NativeModel } from "../native/binding.js";
import { resolveContextShift, type ContextShift, type GenerateOptions } from "./generate-options.js";
import type { Generation } from "./generation.js";
import { keepFreedMemory, returnMemorySoon } from "./memory-return.js";
import type { Model } from "./model.js";
import { Sequence } from "./sequence.js";
import { bool, checkKeys, int, optionalObject } from "./validate.js";

export interface ContextOptions {
  /** Tokens each sequence holds. Default: min(4096, the model's training context). */
  contextSize?: number;
  /** Conversations generating at once, each with its own cells (`getSequence()`). Default 1. */
  sequences?: number;
  /**
   * One KV buffer shared by all sequences instead of one per sequence (llama.cpp's
   * `kv_unified`). Each sequence still holds `contextSize` tokens at most. Default false, as in
   * llama.cpp; docs/bench.md compares the two.
   */
  kvUnified?: boolean;
  /** Most tokens decoded per step (prompt chunks and every sequence's next token); at least
   * `sequences`. Default 512 (or `sequences`, when more). */
  batchSize?: number;
  /**
   * Compute threads for generation (one token per step). Default: as llama.cpp chooses, the
   * number of physical cores. How idle threads wait is the process's `OMP_WAIT_POLICY` (OpenMP's
   * default spins briefly, as llama.cpp runs; `passive` sleeps at once, which helps on a machine
   * whose cores are busy with other work and costs up to 2.5x on an idle one; docs/bench.md).
   */
  threads?: number;
  /** Compute threads for batches (prompts, several sequences at once). Default: `threads`. */
  threadsBatch?: number;
  /** Default seed for this context's generations (uint32). Default: random per generation. */
  seed?: number;
  /** Default `contextShift` of its generations (see GenerateOptions). Default false. */
  contextShift?: ContextShift;
  /**
   * Sliding-window models: keep every cell of the SWA layers (llama.cpp's `swa_full`), so the
   * cache trims anywhere, at the memory of a full cache. `false` keeps only the window (much
   * less memory for Gemma 3 / 4, gpt-oss) and reuses prefixes through state checkpoints.
   * Default true, as llama_context_default_params (llama-server defaults to false).
   */
  swaFull?: boolean;
  /**
   * State checkpoints kept per sequence when the memory cannot trim (hybrid and recurrent
   * models, SWA without `swaFull`): taken before the last prompt token, at every
   * `checkpointInterval` prompt position and at the end of each generation; the next prompt
   * restores the newest at or before its common prefix. 0 turns them off (every such turn
   * decodes its whole prompt). Default 8.
   */
  checkpoints?: number;
  /** MiB all checkpoints of the context may take (oldest evicted first). Default 256. */
  checkpointMemoryMiB?: number;
  /**
   * Mid-prompt checkpoints at multiples of this many tokens (the same positions in every
   * sequence), so a prompt that shares only part of an earlier one, or of another sequence's
   * (agents with one system prompt), starts at most this many tokens before it leaves. 0: none.
   * Default 1024.
   */
  checkpointInterval?: number;
  /**
   * A small model with the same vocabulary that drafts for this one: generations with
   * `speculative: {type: "draft"}` decode its greedy continuation in one batch and keep what the
   * sampler itself produces (docs/speculative.md). It gets a context of its own beside this one
   * (the same cells); disposing it disposes this context too. Default: none.
   */
  draftModel?: Model;
}

const RANDOM_SEED = 0xffffffff;
const MAX_SEQUENCES = 256; // llama.cpp's LLAMA_MAX_SEQ

const contextKeys = [
  "contextSize",
  "sequences",
  "kvUnified",
  "batchSize",
  "threads",
  "threadsBatch",
  "seed",
  "contextShift",
  "swaFull",
  "checkpoints",
  "checkpointMemoryMiB",
  "checkpointInterval",
  "draftModel",
] as const;

export class Context {
  readonly model: Model;
  /** Tokens one sequence holds (llama.cpp rounds the request up to a multiple of 256). */
  readonly contextSize: number;
  readonly sequences: number;
  readonly kvUnified: boolean;
  readonly batchSize: number;
  readonly threads: number;
  readonly threadsBatch: number;
  /** How prefix reuse works for this model's memory: "trim" (transformers, SWA with swaFull) or
   * "checkpoints" (hybrid, recurrent, SWA without swaFull). */
  readonly memory: "trim" | "checkpoints";
  /** The model's sliding window in tokens (0: none). */
  readonly slidingWindow: number;
  readonly swaFull: boolean;
  /** The model drafting for this one (`draftModel`), or null. */
  readonly draftModel: Model | null;

  #native: NativeContext | null;
  #own: Sequence | null = null;
  readonly #contextShift: ContextShift | undefined;
  readonly #live = new Set<Sequence>();
  readonly #onDispose: () => void;

  /** @internal use `model.createContext()`; `draft`: the draft model's native handle (model.ts checks it) */
  constructor(model: Model, nativeModel: NativeModel, options: ContextOptions | undefined, onDispose: () => void, draft?: { model: Model; native: NativeModel }) {
    const o = optionalObject(options, "options");
    checkKeys(o, contextKeys, "createContext options");
    if (model.vocabOnly) {
      throw new LlamapegError("ERR_CONTEXT_CREATE", "the model was loaded with vocabOnly; it has no weights to run", {
        where: model.path,
      });
    }
    const train = model.trainContextSize > 0 ? model.trainContextSize : 4096;
    const contextSize = int(o.contextSize, "contextSize", Math.min(4096, train), 16, 1 << 24);
    const sequences = int(o.sequences, "sequences", 1, 1, MAX_SEQUENCES);
    if (contextSize * sequences > 1 << 26) throw new ArgumentRangeError(`contextSize x sequences must be at most ${1 << 26} (got ${contextSize * sequences})`);
    const kvUnified = bool(o.kvUnified, "kvUnified", false);
    // A batch holds at least one token per sequence (llama.cpp requires it).
    const batchSize = int(o.batchSize, "batchSize", Math.max(sequences, Math.min(512, contextSize)), sequences, 1 << 20);
    const threads = int(o.threads, "threads", 0, 1, 1024);
    const threadsBatch = int(o.threadsBatch, "threadsBatch", 0, 1, 1024);
    const seed = int(o.seed, "seed", RANDOM_SEED, 0, 0xffffffff);
    const swaFull = bool(o.swaFull, "swaFull", true);
    const checkpoints = int(o.checkpoints, "checkpoints", 8, 0, 1024);
    const checkpointBytes = int(o.checkpointMemoryMiB, "checkpointMemoryMiB", 256, 0, 1 << 20) * (1 << 20);
    const checkpointInterval = int(o.checkpointInterval, "checkpointInterval", 1024, 0, 1 << 24);
    resolveContextShift(model, o.contextShift, "contextShift"); // validate now, not at the first generate
    this.#contextShift = o.contextShift as ContextShift | undefined;
    this.model = model;
    this.#native = callNative(
      () =>
        nativeModel.createContext({
          contextSize, sequences, kvUnified, batchSize, threads, threadsBatch, seed, swaFull, checkpoints, checkpointBytes, checkpointInterval,
          ...(draft !== undefined ? { draftModel: draft.native } : {}),
        }),
      model.path,
    );
    keepFreedMemory();
    this.draftModel = draft?.model ?? null;
    const info = this.#native.info();
    this.contextSize = info.contextSize;
    this.sequences = info.sequences;
    this.kvUnified = info.kvUnified;
    this.batchSize = info.batchSize;
    this.threads = info.threads;
    this.threadsBatch = info.threadsBatch;
    this.memory = info.memory;
    this.slidingWindow = info.slidingWindow;
    this.swaFull = info.swaFull;
    this.#onDispose = onDispose;
  }

  get disposed(): boolean {
    return this.#native === null;
  }

  /** True while any of its sequences generates. */
  get busy(): boolean {
    for (const s of this.#live) if (s.busy) return true;
    return false;
  }

  /** Sequences handed out and not disposed. */
  get sequencesInUse(): number {
    return this.#live.size;
  }

  /**
   * A free sequence: its own KV cells, one generation at a time, prefix reuse between its turns.
   * ERR_NO_SEQUENCE when all `sequences` are in use (`sequence.dispose()` returns one).
   */
  getSequence(): Sequence {
    const native = this.#alive();
    const id = callNative(() => native.acquireSequence());
    if (id < 0) {
      throw new LlamapegError(
        "ERR_NO_SEQUENCE",
        `all ${this.sequences} sequences of this context are in use; dispose one, or create the context with more sequences`,
      );
    }
    const sequence = new Sequence(this, native, id, this.#contextShift, (s) => {
      this.#live.delete(s);
      if (this.#own === s) this.#own = null;
    });
    this.#live.add(sequence);
    return sequence;
  }

  // The context's own sequence, for using a context as a one-conversation target: taken from
  // the free ones at first use and kept until the context is disposed.
  #ownSequence(): Sequence {
    this.#alive();
    return (this.#own ??= this.getSequence());
  }

  /** The tokens its own sequence's cells hold (see Sequence.tokens). */
  get tokens(): Int32Array {
    return this.#ownSequence().tokens;
  }

  /** Forgets its own sequence's cached tokens. */
  clearCache(): void {
    this.#ownSequence().clearCache();
  }

  /**
   * Generates on the context's own sequence (taken at first use; with one sequence, the only
   * one). See Sequence.generate.
   */
  generate(prompt: ArrayLike<number>, options?: GenerateOptions): Generation {
    return this.#ownSequence().generate(prompt, options);
  }

  /** Ends every generation (stopReason "abort"), disposes its sequences and frees the KV cache
   * before returning. Further use throws ERR_DISPOSED. */
  dispose(): void {
    const native = this.#native;
    if (!native) return;
    for (const s of [...this.#live]) s.dispose();
    this.#native = null;
    native.dispose();
    returnMemorySoon();
    this.#onDispose();
  }

  #alive(): NativeContext {
    if (!this.#native) throw new LlamapegError("ERR_DISPOSED", "the context was disposed");
    return this.#native;
  }
}
