/**
 * A completion target that reports what its generations did (each piece, the final stats) without
 * changing them: the server's token counters (/metrics) and the Messages route's stop_sequence
 * (which stop string cut the output: the chunks do not say) read generations through it.
 */
import type { GeneratedToken, GenerationStats } from "../llama/generation.js";
import { completionTarget, type CompletionTarget, type CompletionTargetLike, type TargetGeneration, type TargetRequest } from "../openai/index.js";

export interface GenerationTap {
  onPiece?(item: GeneratedToken): void;
  /** Once per generation, when its consumer reads the result: its stats, or null when it failed. */
  onEnd?(stats: GenerationStats | null): void;
}

class TappedGeneration implements TargetGeneration {
  readonly #inner: TargetGeneration;
  readonly #tap: GenerationTap;
  #ended = false;

  constructor(inner: TargetGeneration, tap: GenerationTap) {
    this.#inner = inner;
    this.#tap = tap;
  }

  abort(): void {
    this.#inner.abort();
  }

  /** The stats reach the tap when the consumer reads them (a generation refuses result() while it is iterated). */
  result(): Promise<{ stats: GenerationStats }> {
    const p = this.#inner.result();
    if (!this.#ended) {
      this.#ended = true;
      p.then(
        (r) => this.#tap.onEnd?.(r.stats),
        () => this.#tap.onEnd?.(null),
      );
    }
    return p;
  }

  [Symbol.asyncIterator](): AsyncIterator<GeneratedToken> {
    const it = this.#inner[Symbol.asyncIterator]();
    const tap = this.#tap;
    return {
      async next() {
        const step = await it.next();
        if (step.done !== true) tap.onPiece?.(step.value);
        return step;
      },
      async return(value?: unknown) {
        return (await it.return?.(value)) ?? { done: true, value: undefined };
      },
    };
  }
}

/** `target` with every generation reported to `tap()` (called once per generation). */
export function tapTarget(target: CompletionTargetLike, tap: () => GenerationTap): CompletionTarget {
  const inner = completionTarget(target);
  const out: CompletionTarget = {
    chatInfo: () => inner.chatInfo(),
    generate: async (request: TargetRequest) => new TappedGeneration(await inner.generate(request), tap()),
  };
  if (inner.tokenPiece !== undefined) out.tokenPiece = (token) => inner.tokenPiece!(token);
  return out;
}
