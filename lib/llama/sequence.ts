/**
 * `Sequence`: one conversation's share of a context (its own KV cells, generations and prefix
 * reuse). Several sequences of one context generate at the same time: the context's one decode
 * thread advances all of them in each batch.
 */
import { ArgumentTypeError, LlamapegError } from "../errors.js";
import { callNative, fromNative, type NativeContext } from "../native/binding.js";
import type { Context } from "./context.js";
import { resolveGenerateOptions, type ContextShift, type GenerateOptions } from "./generate-options.js";
import { Generation } from "./generation.js";
import type { Model } from "./model.js";

export class Sequence {
  readonly context: Context;
  /** The sequence id in the context's KV cache (0 .. sequences - 1). */
  readonly id: number;

  #native: NativeContext | null;
  #current: Generation | null = null;
  #stateOp: Promise<unknown> | null = null;
  readonly #contextShift: ContextShift | undefined;
  readonly #onDispose: (sequence: Sequence) => void;

  /** @internal use `context.getSequence()` */
  constructor(context: Context, native: NativeContext, id: number, contextShift: ContextShift | undefined, onDispose: (s: Sequence) => void) {
    this.context = context;
    this.#native = native;
    this.id = id;
    this.#contextShift = contextShift;
    this.#onDispose = onDispose;
  }

  get model(): Model {
    return this.context.model;
  }

  /** Tokens this sequence can hold (its prompt, what it generates, what it keeps for reuse). */
  get contextSize(): number {
    return this.context.contextSize;
  }

  get disposed(): boolean {
    return this.#native === null;
  }

  /** True while a generation runs on this sequence. */
  get busy(): boolean {
    return this.#stateOp !== null || (this.#current !== null && !this.#current.done);
  }

  /**
   * Writes this sequence's tokens and state (its KV cells, recurrent state) to `path`, with the
   * model's identity, the context's swaFull and a checksum (docs/contexts.md, "Sequence state on
   * disk"). Off the JS thread; the context's other sequences go on generating. ERR_BUSY while it
   * generates.
   */
  async saveState(path: string): Promise<{ tokens: number; bytes: number }> {
    return this.#state(path, (native) => native.saveState(this.id, path));
  }

  /**
   * Replaces this sequence's tokens and state with those saved in `path` (by `saveState`, from
   * any context of the same model with the same swaFull), so the next `generate` continues that
   * conversation. A file from another model, another swaFull, too many tokens for this sequence
   * (ERR_STATE_MISMATCH), a truncated or corrupted file (ERR_STATE_INVALID) rejects and leaves the
   * sequence empty and usable; the other sequences are untouched.
   */
  async loadState(path: string): Promise<{ tokens: number; bytes: number }> {
    return this.#state(path, (native) => native.loadState(this.id, path));
  }

  async #state(path: string, fn: (native: NativeContext) => Promise<{ tokens: number; bytes: number }>): Promise<{ tokens: number; bytes: number }> {
    if (typeof path !== "string" || path.length === 0) throw new ArgumentTypeError("path must be a non-empty string");
    const native = this.#live();
    if (this.busy) throw new LlamapegError("ERR_BUSY", "this sequence is generating or saving/loading its state", { where: path });
    const op = (async () => {
      try {
        return await callNative(() => fn(native), path);
      } catch (error) {
        throw fromNative(error, path);
      }
    })();
    this.#stateOp = op;
    try {
      return await op;
    } finally {
      this.#stateOp = null;
    }
  }

  /** The tokens its KV cells hold now (the next `generate` reuses their common prefix). */
  get tokens(): Int32Array {
    const native = this.#live();
    return callNative(() => native.tokens(this.id));
  }

  /** Forgets the cached tokens (the next generation decodes its whole prompt). */
  clearCache(): void {
    const native = this.#live();
    callNative(() => native.clearCache(this.id));
  }

  /**
   * Starts generating after `prompt`. Returns at once; the result is an async iterable of
   * `{token, piece}` whose `result()` gives the stats. One generation at a time per sequence
   * (ERR_BUSY otherwise); a prompt that does not fit is ERR_CONTEXT_FULL, an invalid grammar
   * ERR_GRAMMAR_INVALID, both thrown here.
   */
  generate(prompt: ArrayLike<number>, options?: GenerateOptions): Generation {
    const native = this.#live();
    if (this.busy) throw new LlamapegError("ERR_BUSY", "this sequence is already generating; wait for it or abort it");
    const resolved = resolveGenerateOptions(this.model, options, { contextShift: this.#contextShift });
    const generation = new Generation((ids, o, onBatch) => native.generate(this.id, ids, o, onBatch), prompt, this.model.vocabSize, resolved);
    this.#current = generation;
    return generation;
  }

  /** Ends a running generation (stopReason "abort"), forgets the cache and returns the sequence
   * to its context. Further use throws ERR_DISPOSED. */
  dispose(): void {
    const native = this.#native;
    if (!native) return;
    this.#native = null;
    this.#current = null;
    native.releaseSequence(this.id);
    this.#onDispose(this);
  }

  #live(): NativeContext {
    if (!this.#native) throw new LlamapegError("ERR_DISPOSED", "the sequence was disposed");
    return this.#native;
  }
}
