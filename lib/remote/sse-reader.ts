/**
 * Server-sent events in, one `data` payload per event out (RFC 8895 framing: lines end in LF, CRLF
 * or CR; an event ends at a blank line; `:` lines are comments, which llama-server sends as pings).
 * Bytes are split into lines before decoding, so a UTF-8 character split across chunks is whole.
 */
const decoder = new TextDecoder("utf-8");

export class SseReader {
  #rest: Uint8Array = new Uint8Array(0);
  #data: string[] = [];
  #skipLf = false;

  /** Feeds bytes; returns the data of every event they complete. */
  push(chunk: Uint8Array): string[] {
    const buf = this.#rest.length === 0 ? chunk : concat(this.#rest, chunk);
    const events: string[] = [];
    let start = 0;
    for (let i = 0; i < buf.length; i++) {
      const b = buf[i]!;
      if (b !== 0x0a && b !== 0x0d) continue;
      if (b === 0x0a && this.#skipLf && i === start) {
        // the LF of a CRLF whose CR ended the previous line
        this.#skipLf = false;
        start = i + 1;
        continue;
      }
      this.#skipLf = b === 0x0d;
      this.#line(decoder.decode(buf.subarray(start, i)), events);
      start = i + 1;
    }
    this.#rest = buf.slice(start);
    return events;
  }

  /** True when bytes of an unfinished event are buffered (the stream ended mid-event). */
  get pending(): boolean {
    return this.#rest.length > 0 || this.#data.length > 0;
  }

  #line(line: string, events: string[]): void {
    if (line === "") {
      if (this.#data.length > 0) events.push(this.#data.join("\n"));
      this.#data = [];
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.#data.push(value);
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
