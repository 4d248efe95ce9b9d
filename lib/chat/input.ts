/**
 * The session's accumulated model output: raw bytes plus, per byte, the token that produced it.
 *
 * A token's id sits on the first byte of its piece and `null` on the rest, so a parser position can
 * be traced back to the token that wrote it (special tokens look like text but are single ids).
 * Pieces are kept as bytes because tokens split UTF-8 characters; decoding happens only on demand.
 * Storage doubles when full, so appending n bytes costs O(n) amortized.
 */
import { LlamapegError } from "../errors.js";

/** Stored for bytes that did not start a token (llama.cpp's LLAMA_TOKEN_NULL). */
const NO_TOKEN = -1;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8");

export class ChatInput {
  private buf: Uint8Array;
  private toks: Int32Array;
  private len = 0;
  private decoded = "";
  private decodedLen = 0;

  constructor(initial?: Uint8Array | string, capacity = 256) {
    const cap = Math.max(16, capacity);
    this.buf = new Uint8Array(cap);
    this.toks = new Int32Array(cap).fill(NO_TOKEN);
    if (initial !== undefined) this.append(initial);
  }

  /** Number of bytes held. */
  get length(): number {
    return this.len;
  }

  /** The bytes held (a view: valid until the next append). */
  get bytes(): Uint8Array {
    return this.buf.subarray(0, this.len);
  }

  /** The held bytes as text; an incomplete trailing UTF-8 sequence shows as U+FFFD. */
  get text(): string {
    if (this.decodedLen !== this.len) {
      this.decoded = decoder.decode(this.bytes);
      this.decodedLen = this.len;
    }
    return this.decoded;
  }

  /**
   * Appends a piece. `token` (when given) is recorded on the piece's first byte; its other bytes
   * get `null`. An empty piece records nothing.
   */
  append(piece: Uint8Array | string, token?: number | null): void {
    const bytes = typeof piece === "string" ? encoder.encode(piece) : piece;
    if (bytes.length === 0) return;
    if (token !== undefined && token !== null && (!Number.isInteger(token) || token < 0 || token > 0x7fffffff)) {
      throw new LlamapegError("ERR_INVALID_ARGUMENT", `ChatInput.append: token must be a non-negative integer, got ${String(token)}`);
    }
    this.reserve(this.len + bytes.length);
    this.buf.set(bytes, this.len);
    // Slots past len are kept at NO_TOKEN, so only the first byte needs writing.
    if (token !== undefined && token !== null) this.toks[this.len] = token;
    this.len += bytes.length;
  }

  /** The token whose piece starts at byte `offset`, or null (continuation byte or no token given). */
  tokenAt(offset: number): number | null {
    if (!Number.isInteger(offset) || offset < 0 || offset >= this.len) {
      throw new LlamapegError("ERR_INVALID_ARGUMENT", `ChatInput.tokenAt: offset ${offset} outside [0, ${this.len})`);
    }
    const t = this.toks[offset]!;
    return t === NO_TOKEN ? null : t;
  }

  /** The token that produced byte `offset`: the nearest token start at or before it, or null. */
  tokenCovering(offset: number): number | null {
    if (!Number.isInteger(offset) || offset < 0 || offset >= this.len) {
      throw new LlamapegError("ERR_INVALID_ARGUMENT", `ChatInput.tokenCovering: offset ${offset} outside [0, ${this.len})`);
    }
    for (let i = offset; i >= 0; i--) {
      const t = this.toks[i]!;
      if (t !== NO_TOKEN) return t;
    }
    return null;
  }

  /** The per-byte token map as an array (`null` where no token starts). */
  tokens(): (number | null)[] {
    const out = new Array<number | null>(this.len);
    for (let i = 0; i < this.len; i++) {
      const t = this.toks[i]!;
      out[i] = t === NO_TOKEN ? null : t;
    }
    return out;
  }

  /** Decodes bytes [start, end) as UTF-8 (invalid sequences become U+FFFD). */
  slice(start: number, end: number): string {
    return decoder.decode(this.buf.subarray(start, end));
  }

  private reserve(needed: number): void {
    if (needed <= this.buf.length) return;
    let cap = this.buf.length;
    while (cap < needed) cap *= 2;
    const buf = new Uint8Array(cap);
    buf.set(this.buf.subarray(0, this.len));
    const toks = new Int32Array(cap).fill(NO_TOKEN);
    toks.set(this.toks.subarray(0, this.len));
    this.buf = buf;
    this.toks = toks;
  }
}
