/**
 * Slots: the completion targets requests run on (one per sequence of the context), handed out in
 * arrival order. When every slot is busy a request waits in a bounded queue; past that bound it
 * is refused with 429 (and Retry-After), as llama-server does when its slots are taken. A waiting
 * request whose client goes away leaves the queue.
 */
import { HttpError } from "./http-error.js";

export interface Lease<T> {
  readonly slot: T;
  /** Gives the slot back (idempotent). */
  release(): void;
}

interface Waiter<T> {
  resolve: (lease: Lease<T>) => void;
  reject: (error: unknown) => void;
  cleanup: () => void;
}

export class SlotPool<T> {
  readonly size: number;
  readonly maxQueue: number;
  readonly #idle: T[];
  readonly #waiting: Waiter<T>[] = [];
  #closed: Error | null = null;

  constructor(slots: readonly T[], maxQueue: number) {
    if (slots.length === 0) throw new RangeError("a slot pool needs at least one slot");
    this.size = slots.length;
    this.#idle = [...slots];
    this.maxQueue = maxQueue;
  }

  get idle(): number {
    return this.#idle.length;
  }

  get queued(): number {
    return this.#waiting.length;
  }

  acquire(signal?: AbortSignal): Promise<Lease<T>> {
    if (this.#closed) return Promise.reject(this.#closed);
    if (signal?.aborted) return Promise.reject(signal.reason);
    const slot = this.#idle.shift();
    if (slot !== undefined) return Promise.resolve(this.#lease(slot));
    if (this.#waiting.length >= this.maxQueue) {
      return Promise.reject(
        new HttpError(429, "rate_limit_error", `all ${this.size} slots are busy and ${this.#waiting.length} requests are waiting; retry later`, {
          code: "rate_limit_exceeded",
          headers: { "retry-after": "1" },
        }),
      );
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = this.#waiting.indexOf(waiter);
        if (i >= 0) this.#waiting.splice(i, 1);
        reject(signal!.reason);
      };
      const waiter: Waiter<T> = { resolve, reject, cleanup: () => signal?.removeEventListener("abort", onAbort) };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(waiter);
    });
  }

  /** Refuses new requests and fails the waiting ones. */
  close(reason: Error): void {
    this.#closed = reason;
    for (const w of this.#waiting.splice(0)) {
      w.cleanup();
      w.reject(reason);
    }
  }

  #lease(slot: T): Lease<T> {
    let released = false;
    return {
      slot,
      release: () => {
        if (released) return;
        released = true;
        const next = this.#waiting.shift();
        if (next !== undefined) {
          next.cleanup();
          next.resolve(this.#lease(slot));
        } else this.#idle.push(slot);
      },
    };
  }
}
