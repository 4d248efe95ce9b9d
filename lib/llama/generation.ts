/**
 * `Generation`: the JS end of one native generation thread. Tokens arrive in batches through a
 * thread-safe function (no promise round trip per token); the iterator hands them out one by one
 * and tells the producer, once per batch, how many were consumed (its bounded window).
 */
import { ArgumentTypeError, ArgumentRangeError } from "../errors.js";
import {
  callNative,
  fromNative,
  type NativeBatchCallback,
  type NativeFinal,
  type NativeGenerateOptions,
  type NativeGeneration,
  type NativeTokenExtra,
  type StopReason,
} from "../native/binding.js";
import type { ResolvedGenerateOptions } from "./generate-options.js";
import { tokenList } from "./validate.js";

export type { StopReason };

export interface GeneratedToken {
  token: number;
  /** The token's bytes; may hold part of a UTF-8 character (the rest follows in later pieces). */
  piece: Uint8Array;
  /** Sampler data for this token as (token id, value) pairs, when the sampler provides any
   * (logprobs: the chosen token's, then the top alternatives'). */
  extra?: { ids: Int32Array; values: Float32Array };
  /** Forced, not sampled: by the grammar (fastForward), or to close a reasoning block whose budget
   * was spent (reasoningBudget); decoded in one batch with the one before it. */
  forced?: true;
}

export interface GenerationStats {
  promptTokens: number;
  /** Prompt tokens found in the KV cache and not decoded again. */
  reusedTokens: number;
  /** Of reusedTokens, those restored from a state checkpoint (models whose memory cannot trim:
   * hybrid, recurrent, sliding-window without swaFull; docs/contexts.md). Local sequences. */
  checkpointTokens?: number;
  /** Of reusedTokens, those copied from another sequence of the context that held the same
   * prefix (llama_memory_seq_cp): many agents with one system prompt prefill it once. */
  sharedTokens?: number;
  /** Tokens emitted (the EOG or stop token that ended the generation is not counted). */
  generatedTokens: number;
  /** From generate() until the context's decode loop took the generation up (local sequences). */
  queueMs?: number;
  /** Time decoding the prompt (the part after the reused prefix; with other sequences in the
   * same batches, their share of each step too). */
  promptMs: number;
  /** Wall time from the end of the prompt to the end (decode + sampling + waiting for the reader). */
  generateMs: number;
  /** Part of generateMs spent sampling (including the grammar). */
  sampleMs: number;
  stopReason: StopReason;
  /** The EOG / stop token that ended the generation, when one did. */
  stopToken?: number;
  /** How often the sequence was shifted to make room (contextShift; local sequences). */
  shifts?: number;
  /** Decode steps of the context that went without this generation's next token, because its
   * reader held the window full or more sequences generated than a batch holds (local sequences). */
  stalledSteps?: number;
  /** Decode steps this generation was in (prompt chunks included) that ran on one thread, because
   * other runnable work competed for the cores (threads > 1; see docs: contention). */
  contendedSteps?: number;
  /** Of generatedTokens: forced by the grammar and not sampled (fastForward; local sequences). */
  forcedTokens?: number;
  /** Decode steps that carried forced tokens. */
  forcedRuns?: number;
  /** Speculative decoding (`speculative` option; local sequences): tokens drafted and decoded for
   * verification, and of those the ones the sampler produced as drafted (each saved a decode step). */
  draftTokens?: number;
  draftAcceptedTokens?: number;
  /** Reasoning budget (`reasoningBudget` option): tokens emitted inside reasoning blocks (markers
   * not counted), and of generatedTokens the ones forced to close a block whose budget was spent. */
  reasoningTokens?: number;
  reasoningForcedTokens?: number;
}

export interface GenerationResult {
  tokens: number[];
  /** All pieces concatenated and decoded as UTF-8. */
  text: string;
  stats: GenerationStats;
}

interface Batch {
  tokens: Int32Array;
  bytes: Uint8Array;
  ends: Uint32Array;
  extra: NativeTokenExtra | undefined;
  forced: Uint8Array | undefined;
  next: number;
}

/** Starts the native generation (a sequence's `generate`), handing batches to `onBatch`. */
export type GenerationStart = (prompt: Int32Array, options: NativeGenerateOptions, onBatch: NativeBatchCallback) => NativeGeneration;

interface Waiter {
  resolve: (r: IteratorResult<GeneratedToken>) => void;
  reject: (e: unknown) => void;
}

export class Generation implements AsyncIterable<GeneratedToken> {
  readonly #native: NativeGeneration;
  readonly #window: number;
  readonly #queue: Batch[] = [];
  readonly #tokens: number[] = [];
  readonly #chunks: Uint8Array[] = [];
  #waiter: Waiter | null = null;
  #final: NativeFinal | undefined;
  #error: unknown;
  #errorDelivered = false;
  #iterating = false;
  #draining = false;
  #unreferenced = false;
  #unreleased = 0;
  #result: Promise<GenerationResult> | undefined;
  #resultSettle: { resolve: (r: GenerationResult) => void; reject: (e: unknown) => void } | undefined;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort = () => this.abort();

  /** @internal use `sequence.generate()` / `context.generate()` */
  constructor(start: GenerationStart, prompt: ArrayLike<number>, vocabSize: number, options: ResolvedGenerateOptions) {
    const ids = tokenList(prompt, "prompt", vocabSize);
    if (ids.length === 0) throw new ArgumentRangeError("prompt must contain at least one token");
    this.#window = options.native.windowTokens;
    this.#native = callNative(() =>
      start(ids, options.native, (tokens, bytes, ends, final, extra, forced) => this.#onBatch(tokens, bytes, ends, final, extra, forced)),
    );
    this.#signal = options.signal;
    if (this.#signal) {
      if (this.#signal.aborted) this.abort();
      else this.#signal.addEventListener("abort", this.#onAbort, { once: true });
    }
  }

  /** True once the native thread has finished and everything was handed to JS. */
  get done(): boolean {
    return this.#final !== undefined;
  }

  /** The final stats, once done (undefined before). */
  get stats(): GenerationStats | undefined {
    return this.#final === undefined ? undefined : statsOf(this.#final);
  }

  /** Stops the generation soon; it ends with stopReason "abort". */
  abort(): void {
    if (!this.done) this.#native.abort();
  }

  /**
   * Resolves when the generation ends, with every token, the decoded text and the stats; rejects
   * with its error (ERR_GRAMMAR_DEAD_END, ERR_DECODE, ...). Called before iterating, it consumes
   * the tokens itself.
   */
  result(): Promise<GenerationResult> {
    if (!this.#result) {
      this.#result = new Promise<GenerationResult>((resolve, reject) => {
        this.#resultSettle = { resolve, reject };
      });
      if (!this.#iterating) this.#drain();
      this.#settleResult();
    }
    return this.#result;
  }

  [Symbol.asyncIterator](): AsyncIterator<GeneratedToken> {
    if (this.#iterating || this.#draining) {
      throw new ArgumentTypeError("this generation is already being consumed (iterate it once, or call result())");
    }
    this.#iterating = true;
    return {
      next: () => this.#next(),
      return: () => {
        // Leaving a for-await loop early stops the generation.
        this.abort();
        this.#drain();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  #next(): Promise<IteratorResult<GeneratedToken>> {
    const item = this.#take();
    if (item) return Promise.resolve({ value: item, done: false });
    if (this.#final !== undefined) {
      if (this.#error !== undefined && !this.#errorDelivered) {
        this.#errorDelivered = true;
        return Promise.reject(this.#error);
      }
      return Promise.resolve({ value: undefined, done: true });
    }
    if (this.#unreferenced) {
      this.#unreferenced = false;
      this.#native.ref();
    }
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
    });
  }

  #take(): GeneratedToken | undefined {
    const batch = this.#queue[0];
    if (!batch) return undefined;
    const i = batch.next++;
    const start = i === 0 ? 0 : batch.ends[i - 1]!;
    const item: GeneratedToken = { token: batch.tokens[i]!, piece: batch.bytes.subarray(start, batch.ends[i]!) };
    const x = batch.extra;
    if (x !== undefined) {
      const from = i === 0 ? 0 : x.ends[i - 1]!;
      if (x.ends[i]! > from) item.extra = { ids: x.ids.subarray(from, x.ends[i]!), values: x.values.subarray(from, x.ends[i]!) };
    }
    if (batch.forced?.[i] === 1) item.forced = true;
    if (batch.next === batch.tokens.length) {
      this.#queue.shift();
      this.#release(batch.tokens.length);
    }
    return item;
  }

  #release(n: number): void {
    this.#unreleased -= n;
    if (this.#final === undefined && n > 0) this.#native.release(n);
  }

  #drain(): void {
    this.#draining = true;
    let n = 0;
    for (const batch of this.#queue) n += batch.tokens.length - batch.next;
    this.#queue.length = 0;
    this.#release(n);
    if (this.#unreferenced) {
      this.#unreferenced = false;
      this.#native.ref();
    }
  }

  #onBatch(
    tokens: Int32Array,
    bytes: Uint8Array,
    ends: Uint32Array,
    final: NativeFinal | undefined,
    extra: NativeTokenExtra | undefined,
    forced?: Uint8Array,
  ): void {
    if (tokens.length > 0) {
      for (let i = 0; i < tokens.length; i++) this.#tokens.push(tokens[i]!);
      this.#chunks.push(bytes);
      this.#unreleased += tokens.length;
      if (this.#draining) this.#release(tokens.length);
      else this.#queue.push({ tokens, bytes, ends, extra, forced, next: 0 });
    }
    if (final !== undefined) {
      this.#final = final;
      if (final.error !== undefined) this.#error = fromNative(final.error);
      this.#signal?.removeEventListener("abort", this.#onAbort);
    }
    const waiter = this.#waiter;
    if (waiter) {
      const item = this.#take();
      if (item) {
        this.#waiter = null;
        waiter.resolve({ value: item, done: false });
      } else if (this.#final !== undefined) {
        this.#waiter = null;
        if (this.#error !== undefined && !this.#errorDelivered) {
          this.#errorDelivered = true;
          waiter.reject(this.#error);
        } else {
          waiter.resolve({ value: undefined, done: true });
        }
      }
    } else if (!this.#draining && this.#final === undefined && this.#unreleased >= this.#window && !this.#unreferenced) {
      // Nobody is reading and the producer is about to wait for us: do not keep the process
      // alive for a generation its owner walked away from.
      this.#unreferenced = true;
      this.#native.unref();
    }
    if (final !== undefined) this.#settleResult();
  }

  #settleResult(): void {
    if (!this.#resultSettle || this.#final === undefined) return;
    const { resolve, reject } = this.#resultSettle;
    this.#resultSettle = undefined;
    if (this.#error !== undefined) {
      reject(this.#error);
      return;
    }
    resolve({ tokens: this.#tokens.slice(), text: decodeAll(this.#chunks), stats: statsOf(this.#final) });
  }
}

function statsOf(final: NativeFinal): GenerationStats {
  const stats: GenerationStats = {
    promptTokens: final.promptTokens,
    reusedTokens: final.reusedTokens,
    checkpointTokens: final.checkpointTokens,
    sharedTokens: final.sharedTokens,
    generatedTokens: final.generatedTokens,
    queueMs: final.queueMs,
    promptMs: final.promptMs,
    generateMs: final.generateMs,
    sampleMs: final.sampleMs,
    stopReason: final.stopReason,
    shifts: final.shifts,
    stalledSteps: final.stalledSteps,
    contendedSteps: final.contendedSteps,
  };
  if (final.stopToken !== undefined) stats.stopToken = final.stopToken;
  if (final.forcedTokens !== undefined) {
    stats.forcedTokens = final.forcedTokens;
    stats.forcedRuns = final.forcedRuns ?? 0;
  }
  if (final.draftTokens !== undefined) {
    stats.draftTokens = final.draftTokens;
    stats.draftAcceptedTokens = final.draftAcceptedTokens ?? 0;
  }
  if (final.reasoningTokens !== undefined) {
    stats.reasoningTokens = final.reasoningTokens;
    stats.reasoningForcedTokens = final.reasoningForcedTokens ?? 0;
  }
  return stats;
}

function decodeAll(chunks: Uint8Array[]): string {
  return new TextDecoder().decode(Buffer.concat(chunks));
}
