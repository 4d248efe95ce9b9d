/**
 * `RemoteGeneration`: one llama-server /completion stream as `{token, piece}` items, with `abort()`
 * and `result()` like the in-process `Generation`.
 *
 * llama-server streams one event per token, `{content, tokens: [id], tokens_predicted}`, with
 * departures this class evens out so the chat layer sees what an in-process generation gives:
 * - `content` is JSON text, so invalid UTF-8 arrives as U+FFFD; the exact bytes come from
 *   `completion_probabilities[0].bytes` (requested with n_probs 1 after sampling: the top-k
 *   candidates the sampler has anyway, no full-vocabulary pass);
 * - the end-of-generation token comes as its own (empty) event; in-process it is not emitted, so an
 *   empty event is held until the next one shows whether it was the last (stop_type "eos");
 * - a character split over several tokens is held back by the server until complete and sent as
 *   ONE event with only the last token's id (`tokens_predicted` jumps by more than one). The last
 *   token's piece is split off again (its bytes from /tokenize, cached), so the pieces, and with
 *   them the chunks, are the in-process ones; the bytes before it carry the same id, because the
 *   ids of those tokens are not sent (`stats.unsentTokenIds` counts them). With three or more
 *   tokens in one event, those first ones stay one piece.
 * Leaving the iteration early or `abort()` closes the connection; llama-server then cancels the task.
 */
import type { IncomingMessage } from "node:http";

import { LlamapegError, ArgumentTypeError } from "../errors.js";
import type { GeneratedToken, GenerationStats, StopReason } from "../llama/generation.js";
import { RemoteError } from "./errors.js";
import { chunksOf } from "./http.js";
import { SseReader } from "./sse-reader.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface RemoteGenerationStats extends GenerationStats {
  /** The server that generated. */
  server: string;
  /** Tokens whose ids llama-server did not stream (see the module comment). */
  unsentTokenIds: number;
}

export interface RemoteGenerationResult {
  tokens: number[];
  text: string;
  stats: RemoteGenerationStats;
}

interface FinalEvent {
  stop_type?: string;
  truncated?: boolean;
  tokens_predicted?: number;
  tokens_evaluated?: number;
  timings?: { cache_n?: number; prompt_n?: number; prompt_ms?: number; predicted_ms?: number };
}

export interface RemoteGenerationInit {
  server: string;
  response: IncomingMessage;
  idleTimeoutMs: number;
  promptTokens: number;
  /** Ids whose (non-empty) piece might still be the end-of-generation token: held like empty ones. */
  holdTokens: ReadonlySet<number>;
  signal?: AbortSignal;
  /** Called once when the generation has ended, however it ended. */
  onEnd: (error: unknown) => void;
  /** The bytes of one token of this server's vocabulary. */
  tokenPiece: (id: number) => Promise<Uint8Array>;
}

export class RemoteGeneration implements AsyncIterable<GeneratedToken> {
  readonly server: string;
  readonly #source: AsyncGenerator<Buffer>;
  readonly #response: IncomingMessage;
  readonly #reader: SseReader;
  /** When the last event with data came: keep-alive comments alone do not count as progress. */
  #lastEventAt = Date.now();
  readonly #idleTimeoutMs: number;
  readonly #queue: GeneratedToken[] = [];
  readonly #holdTokens: ReadonlySet<number>;
  readonly #promptTokens: number;
  #held: GeneratedToken | null = null;
  #decoded = 0;
  #unsent = 0;
  readonly #tokens: number[] = [];
  readonly #pieces: Uint8Array[] = [];
  #stats: RemoteGenerationStats | undefined;
  #error: unknown;
  #errorDelivered = false;
  #aborted = false;
  #iterating = false;
  #reading: Promise<void> | null = null;
  #result: Promise<RemoteGenerationResult> | undefined;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort = () => this.abort();
  readonly #onEnd: (error: unknown) => void;
  readonly #tokenPiece: (id: number) => Promise<Uint8Array>;
  readonly #started = Date.now();
  #firstAt = 0;

  constructor(init: RemoteGenerationInit) {
    this.server = init.server;
    this.#response = init.response;
    this.#source = chunksOf(init.server, init.response, init.idleTimeoutMs);
    this.#reader = new SseReader(init.server);
    this.#idleTimeoutMs = init.idleTimeoutMs;
    this.#holdTokens = init.holdTokens;
    this.#promptTokens = init.promptTokens;
    this.#onEnd = init.onEnd;
    this.#tokenPiece = init.tokenPiece;
    this.#signal = init.signal;
    if (this.#signal) {
      if (this.#signal.aborted) this.abort();
      else this.#signal.addEventListener("abort", this.#onAbort, { once: true });
    }
  }

  /** True once the stream has ended (final event, error or abort). */
  get done(): boolean {
    return this.#stats !== undefined || this.#error !== undefined;
  }

  get stats(): RemoteGenerationStats | undefined {
    return this.#stats;
  }

  /** Closes the stream; the generation ends with stopReason "abort" (no-op once done). */
  abort(): void {
    if (this.done || this.#aborted) return;
    this.#aborted = true;
    this.#response.destroy();
    // With no read waiting on the socket, nothing else would notice: end here.
    if (!this.#reading) this.#finish({ stop_type: "abort" });
  }

  /** Every token, the text and the stats once it has ended; rejects with its error. */
  result(): Promise<RemoteGenerationResult> {
    if (!this.#result) {
      this.#result = (async () => {
        if (!this.#iterating) {
          // Nobody reads the items: read the stream to its end here.
          this.#iterating = true;
          while (!this.done) await this.#readMore();
          this.#queue.length = 0;
        } else {
          while (!this.done) await this.#readMore();
        }
        if (this.#error !== undefined) throw this.#error;
        return { tokens: this.#tokens.slice(), text: decoder.decode(Buffer.concat(this.#pieces)), stats: this.#stats! };
      })();
    }
    return this.#result;
  }

  /**
   * Reads until the first token (or the end). The error, when the stream failed before any token
   * (a 200 with a body that is not llama-server's stream, a cut, a timeout): nothing was generated,
   * so the request may go to another server; the error is then not thrown again here.
   */
  async begin(): Promise<RemoteError | undefined> {
    while (this.#queue.length === 0 && this.#held === null && !this.done) await this.#readMore();
    if (this.#tokens.length === 0 && this.#error instanceof RemoteError) {
      this.#errorDelivered = true;
      return this.#error;
    }
    return undefined;
  }

  [Symbol.asyncIterator](): AsyncIterator<GeneratedToken> {
    if (this.#iterating) throw new ArgumentTypeError("this generation is already being consumed (iterate it once, or call result())");
    this.#iterating = true;
    return {
      next: () => this.#next(),
      return: async () => {
        this.abort();
        await this.result().catch(() => undefined);
        return { value: undefined, done: true };
      },
    };
  }

  async #next(): Promise<IteratorResult<GeneratedToken>> {
    for (;;) {
      const item = this.#queue.shift();
      if (item) return { value: item, done: false };
      if (this.done) {
        if (this.#error !== undefined && !this.#errorDelivered) {
          this.#errorDelivered = true;
          throw this.#error;
        }
        return { value: undefined, done: true };
      }
      await this.#readMore();
    }
  }

  /** Reads one network chunk (one reader at a time) and turns its events into items. */
  #readMore(): Promise<void> {
    if (!this.#reading) {
      this.#reading = (async () => {
        try {
          const step = await this.#source.next();
          if (step.done) {
            if (this.done) return;
            if (this.#aborted) this.#finish({ stop_type: "abort" });
            else this.#fail(this.#withPartial(this.#cut("the stream ended without its final event")));
            return;
          }
          const events = this.#reader.push(step.value);
          if (events.length > 0) this.#lastEventAt = Date.now();
          else if (Date.now() - this.#lastEventAt > this.#idleTimeoutMs) {
            // pings (`:` comments) keep the socket busy, but nothing comes: as stuck as silence
            throw new RemoteError("ERR_REMOTE_TIMEOUT", `${this.server}: no event for ${this.#idleTimeoutMs} ms (only keep-alive comments)`, { server: this.server, stage: "body" });
          }
          for (const data of events) {
            await this.#event(data);
            if (this.done) break;
          }
        } catch (error) {
          if (this.done) return;
          if (this.#aborted) this.#finish({ stop_type: "abort" });
          else this.#fail(error instanceof RemoteError ? this.#withPartial(error) : error);
        } finally {
          this.#reading = null;
        }
      })();
    }
    return this.#reading;
  }

  async #event(data: string): Promise<void> {
    if (this.done) return;
    let e: Record<string, unknown>;
    try {
      e = JSON.parse(data) as Record<string, unknown>;
    } catch {
      this.#fail(this.#withPartial(new RemoteError("ERR_REMOTE_PROTOCOL", `${this.server}: a stream event is not JSON: ${data.slice(0, 120)}`, { server: this.server, stage: "body" })));
      return;
    }
    if (e.error !== undefined) {
      this.#fail(this.#withPartial(serverError(this.server, e.error)));
      return;
    }
    if (e.stop === true) {
      this.#finish(e as FinalEvent);
      return;
    }
    const content = typeof e.content === "string" ? e.content : "";
    const tokens = Array.isArray(e.tokens) ? (e.tokens as unknown[]) : [];
    // Prompt progress (return_progress) keeps the connection busy during a long prompt; its
    // `tokens` holds a default-constructed 0, not a token.
    if (e.prompt_progress !== undefined) return;
    const predicted = typeof e.tokens_predicted === "number" ? e.tokens_predicted : this.#decoded + tokens.length;
    const id = tokens.length > 0 ? tokens[tokens.length - 1] : undefined;
    if (typeof id !== "number" || !Number.isInteger(id) || id < 0) {
      if (content === "" && tokens.length === 0) return; // nothing to hand on
      this.#fail(this.#withPartial(new RemoteError("ERR_REMOTE_PROTOCOL", `${this.server}: a stream event without a token id (is this llama-server's /completion?)`, { server: this.server, stage: "body" })));
      return;
    }
    const count = Math.max(1, predicted - this.#decoded);
    this.#decoded = Math.max(predicted, this.#decoded + 1);
    this.#unsent += count - 1;
    if (this.#firstAt === 0) this.#firstAt = Date.now();
    const bytes = rawBytes(e) ?? encoder.encode(content);
    if (count > 1 && bytes.length > 0) {
      const last = await this.#tokenPiece(id).catch(() => null);
      if (last !== null && last.length > 0 && last.length < bytes.length && endsWith(bytes, last)) {
        this.#push({ token: id, piece: bytes.subarray(0, bytes.length - last.length) });
        this.#push({ token: id, piece: last });
        return;
      }
    }
    this.#push({ token: id, piece: bytes });
  }

  /** Hands an item on, except an empty one (or a marker), which waits: it may be the end token. */
  #push(item: GeneratedToken): void {
    this.#release();
    if (item.piece.length === 0 || this.#holdTokens.has(item.token)) this.#held = item;
    else this.#emit(item);
  }

  #emit(item: GeneratedToken): void {
    this.#tokens.push(item.token);
    this.#pieces.push(item.piece);
    this.#queue.push(item);
  }

  #release(): void {
    if (this.#held) this.#emit(this.#held);
    this.#held = null;
  }

  #finish(f: FinalEvent): void {
    let stopReason: StopReason;
    let stopToken: number | undefined;
    switch (f.stop_type) {
      case "eos":
        stopReason = "eog";
        // The held empty event was the end-of-generation token: in-process it is not emitted.
        if (this.#held) stopToken = this.#held.token;
        this.#held = null;
        break;
      case "abort":
        stopReason = "abort";
        break;
      default:
        // "limit": n_predict reached or the context is full; "word" cannot happen (no stop strings are sent)
        stopReason = "length";
    }
    this.#release();
    const t = f.timings ?? {};
    const now = Date.now();
    const stats: RemoteGenerationStats = {
      promptTokens: typeof f.tokens_evaluated === "number" ? f.tokens_evaluated : this.#promptTokens,
      reusedTokens: typeof t.cache_n === "number" ? t.cache_n : 0,
      // The server counts the end token too; in-process it is not counted.
      generatedTokens: Math.max(this.#decoded, typeof f.tokens_predicted === "number" ? f.tokens_predicted : 0) - (stopToken !== undefined ? 1 : 0),
      promptMs: typeof t.prompt_ms === "number" ? t.prompt_ms : this.#firstAt > 0 ? this.#firstAt - this.#started : now - this.#started,
      generateMs: typeof t.predicted_ms === "number" ? t.predicted_ms : this.#firstAt > 0 ? now - this.#firstAt : 0,
      sampleMs: 0,
      stopReason,
      server: this.server,
      unsentTokenIds: this.#unsent,
    };
    if (stopToken !== undefined) stats.stopToken = stopToken;
    this.#stats = stats;
    this.#end(undefined);
  }

  #fail(error: unknown): void {
    this.#held = null;
    this.#error = error;
    this.#end(error);
    this.#response.destroy();
  }

  #end(error: unknown): void {
    this.#signal?.removeEventListener("abort", this.#onAbort);
    void this.#source.return(undefined);
    // After the final event, drain the rest so the socket goes back to the keep-alive pool.
    if (error === undefined && !this.#aborted) this.#response.resume();
    this.#onEnd(error);
  }

  #cut(message: string): RemoteError {
    return new RemoteError("ERR_REMOTE_STREAM", `${this.server}: ${message} after ${this.#tokens.length} tokens`, { server: this.server, stage: "body" });
  }

  #withPartial(error: RemoteError | LlamapegError): RemoteError | LlamapegError {
    const partial = { tokens: this.#tokens.slice(), text: decoder.decode(Buffer.concat(this.#pieces)) };
    if (error instanceof RemoteError) {
      error.partial = partial;
      if (error.code === "ERR_REMOTE_STREAM" || error.code === "ERR_REMOTE_TIMEOUT") {
        error.message = `${error.message}; ${partial.tokens.length} tokens had arrived`;
      }
    }
    return error;
  }
}

/** An `{error: {code, message, type}}` event: the context size as in-process, the rest refused. */
function serverError(server: string, e: unknown): RemoteError {
  const o = (e ?? {}) as { message?: unknown; type?: unknown; code?: unknown };
  const message = typeof o.message === "string" ? o.message : JSON.stringify(e);
  const status = typeof o.code === "number" ? o.code : undefined;
  if (o.type === "exceed_context_size_error") {
    return new RemoteError("ERR_CONTEXT_FULL", `${server}: ${message}`, { server, stage: "body", ...(status !== undefined ? { status } : {}) });
  }
  return new RemoteError("ERR_REMOTE_REFUSED", `${server} reported an error mid-stream: ${message}`, { server, stage: "body", ...(status !== undefined ? { status } : {}) });
}

/** The event's exact bytes: `completion_probabilities[0].bytes` (n_probs > 0), when present. */
function rawBytes(e: Record<string, unknown>): Uint8Array | null {
  const probs = e.completion_probabilities;
  if (!Array.isArray(probs) || probs.length === 0) return null;
  const b = (probs[0] as { bytes?: unknown } | null)?.bytes;
  if (!Array.isArray(b) || !b.every((x) => Number.isInteger(x) && x >= 0 && x <= 255)) return null;
  return Uint8Array.from(b as number[]);
}

function endsWith(a: Uint8Array, b: Uint8Array): boolean {
  if (b.length > a.length) return false;
  for (let i = 0; i < b.length; i++) if (a[a.length - b.length + i] !== b[i]) return false;
  return true;
}
