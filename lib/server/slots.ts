/**
 * Slots: the completion targets requests run on (one per sequence of the context), handed out in
 * arrival order. When every slot is busy a request waits in a bounded queue; past that bound it
 * is refused with 429 (and Retry-After), as llama-server does when its slots are taken. A waiting
 * request whose client goes away leaves the queue.
 */
import { ArgumentRangeError } from "../errors.js";
import { HttpError } from "./http-error.js";

export interface Lease<T> {
  readonly slot: T;
  /** Gives the slot back (idempotent). */
  release(): void;
}

interface Waiter<T> {
  count: number;
  resolve: (leases: Lease<T>[]) => void;
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
    if (slots.length === 0) throw new ArgumentRangeError("a slot pool needs at least one slot");
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

  async acquire(signal?: AbortSignal): Promise<Lease<T>> {
    return (await this.acquireMany(1, signal))[0]!;
  }

  /**
   * `count` slots at once (a request with n choices), or none: a request never holds some slots
   * while it waits for the rest, so two of them cannot block each other. Waiters are served in
   * arrival order.
   */
  acquireMany(count: number, signal?: AbortSignal): Promise<Lease<T>[]> {
    if (!Number.isInteger(count) || count < 1 || count > this.size) return Promise.reject(new ArgumentRangeError(`cannot take ${count} of ${this.size} slots at once`));
    if (this.#closed) return Promise.reject(this.#closed);
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#waiting.length === 0 && this.#idle.length >= count) return Promise.resolve(this.#idle.splice(0, count).map((slot) => this.#lease(slot)));
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
        // the head may have been waiting behind this one
        this.#serve();
      };
      const waiter: Waiter<T> = { count, resolve, reject, cleanup: () => signal?.removeEventListener("abort", onAbort) };
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

  #serve(): void {
    for (let next = this.#waiting[0]; next !== undefined && next.count <= this.#idle.length; next = this.#waiting[0]) {
      this.#waiting.shift();
      next.cleanup();
      next.resolve(this.#idle.splice(0, next.count).map((slot) => this.#lease(slot)));
    }
  }

  #lease(slot: T): Lease<T> {
    let released = false;
    return {
      slot,
      release: () => {
        if (released) return;
        released = true;
        this.#idle.push(slot);
        this.#serve();
      },
    };
  }
}
