/**
 * Server-sent events in, one `data` payload per event out (RFC 8895 framing: lines end in LF, CRLF
 * or CR; an event ends at a blank line; `:` lines are comments, which llama-server sends as pings).
 * Bytes are split into lines before decoding, so a UTF-8 character split across chunks is whole.
 * Linear in the bytes fed: each byte is scanned once (an unfinished line is kept as a list of
 * chunks, joined once when its end comes), and an event over `maxEventBytes` is a protocol error,
 * not a buffer that grows without end.
 */
import { RemoteError } from "./errors.js";

const decoder = new TextDecoder("utf-8");

/** Largest event accepted by default: a token event is a few hundred bytes; a final one carries the timings. */
export const MAX_EVENT_BYTES = 8 * 1024 * 1024;

export class SseReader {
  /** The unfinished line, as chunks. */
  #rest: Uint8Array[] = [];
  #restBytes = 0;
  #data: string[] = [];
  #eventBytes = 0;
  #skipLf = false;
  readonly #server: string;
  readonly #max: number;

  constructor(server = "", maxEventBytes = MAX_EVENT_BYTES) {
    this.#server = server;
    this.#max = maxEventBytes;
  }

  /** Feeds bytes; returns the data of every event they complete. */
  push(chunk: Uint8Array): string[] {
    const events: string[] = [];
    let start = 0;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (b !== 0x0a && b !== 0x0d) continue;
      if (b === 0x0a && this.#skipLf && i === start && this.#restBytes === 0) {
        // the LF of a CRLF whose CR ended the previous line
        this.#skipLf = false;
        start = i + 1;
        continue;
      }
      this.#skipLf = b === 0x0d;
      const piece = chunk.subarray(start, i);
      const line = this.#restBytes === 0 ? piece : Buffer.concat([...this.#rest, piece], this.#restBytes + piece.length);
      this.#rest = [];
      this.#restBytes = 0;
      this.#line(decoder.decode(line), events);
      start = i + 1;
    }
    if (start < chunk.length) {
      // copied: the caller's buffer may be reused
      this.#rest.push(chunk.slice(start));
      this.#restBytes += chunk.length - start;
      if (this.#restBytes + this.#eventBytes > this.#max) this.#tooLarge();
      if (this.#skipLf) this.#skipLf = false;
    }
    return events;
  }

  /** True when bytes of an unfinished event are buffered (the stream ended mid-event). */
  get pending(): boolean {
    return this.#restBytes > 0 || this.#data.length > 0;
  }

  #tooLarge(): never {
    this.#rest = [];
    this.#data = [];
    throw new RemoteError("ERR_REMOTE_PROTOCOL", `${this.#server}: a stream event is over ${this.#max} bytes (is this llama-server's /completion?)`, { server: this.#server, stage: "body" });
  }

  #line(line: string, events: string[]): void {
    if (line === "") {
      if (this.#data.length > 0) events.push(this.#data.join("\n"));
      this.#data = [];
      this.#eventBytes = 0;
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") {
      this.#data.push(value);
      if ((this.#eventBytes += value.length + 1) > this.#max) this.#tooLarge();
    }
  }
}
