/**
 * Writing a streamed completion as server-sent events with backpressure: a write the socket does
 * not take at once waits for 'drain' (the generation's own bounded window then holds the producer),
 * and a closed connection ends the wait.
 */
import type { ServerResponse } from "node:http";

import { SSE_DONE, sseData } from "../openai/index.js";

export class SseWriter {
  readonly #res: ServerResponse;

  constructor(res: ServerResponse) {
    this.#res = res;
  }

  get closed(): boolean {
    return this.#res.destroyed || this.#res.writableEnded;
  }

  start(): void {
    this.#res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    this.#res.flushHeaders();
  }

  /** Resolves once the socket has taken the event (false: the connection is gone). */
  async event(value: unknown): Promise<boolean> {
    return this.#write(sseData(value));
  }

  /** A named event (`event: <name>` before the data), as the Responses and Messages APIs send them. */
  async named(name: string, value: unknown): Promise<boolean> {
    return this.#write(`event: ${name}\n${sseData(value)}`);
  }

  /** Ends the stream without `[DONE]` (the Responses and Messages APIs end with their own last event). */
  end(): void {
    this.#res.end();
  }

  async done(): Promise<void> {
    await this.#write(SSE_DONE);
    this.#res.end();
  }

  async #write(text: string): Promise<boolean> {
    if (this.closed) return false;
    if (this.#res.write(text)) return true;
    return new Promise((resolve) => {
      const finish = (ok: boolean) => {
        this.#res.off("drain", onDrain);
        this.#res.off("close", onClose);
        resolve(ok);
      };
      const onDrain = () => finish(true);
      const onClose = () => finish(false);
      this.#res.on("drain", onDrain);
      this.#res.on("close", onClose);
    });
  }
}
