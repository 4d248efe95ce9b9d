/**
 * Stop strings on a byte stream: pieces are held back while their end could be the start of a stop
 * string, released once it cannot, and cut where a stop string begins (the stop string itself is
 * never released). Works on bytes, so a stop string split across pieces, or inside a UTF-8
 * character's pieces, is found.
 */
export interface HeldPiece {
  bytes: Uint8Array;
  /** The token whose first byte this is (null for the rest of a split piece). */
  token: number | null;
}

const encoder = new TextEncoder();

export class StopMatcher {
  private readonly stops: Uint8Array[];
  private held: HeldPiece[] = [];
  private heldBytes = new Uint8Array(0);
  /** The stop string that ended the output, once one did. */
  matched: string | null = null;
  private readonly texts: string[];

  constructor(stops: readonly string[]) {
    this.texts = stops.filter((s) => s !== "");
    this.stops = this.texts.map((s) => encoder.encode(s));
  }

  /** Adds a piece; returns the pieces that can be released now. After a match, returns nothing more. */
  push(bytes: Uint8Array, token: number | null): HeldPiece[] {
    if (this.matched !== null) return [];
    if (this.stops.length === 0) return [{ bytes, token }];
    this.held.push({ bytes, token });
    const all = new Uint8Array(this.heldBytes.length + bytes.length);
    all.set(this.heldBytes);
    all.set(bytes, this.heldBytes.length);
    this.heldBytes = all;
    let cut = -1;
    for (let k = 0; k < this.stops.length; k++) {
      const at = indexOf(all, this.stops[k]!);
      if (at >= 0 && (cut < 0 || at < cut)) {
        cut = at;
        this.matched = this.texts[k]!;
      }
    }
    if (cut >= 0) return this.release(cut, true);
    // Keep the longest tail that could still grow into a stop string.
    let keep = 0;
    for (const s of this.stops) {
      for (let n = Math.min(s.length - 1, all.length); n > keep; n--) {
        if (startsWithTail(all, s, n)) {
          keep = n;
          break;
        }
      }
    }
    return this.release(all.length - keep, false);
  }

  /** Releases whatever is still held (the output ended without a match). */
  flush(): HeldPiece[] {
    if (this.matched !== null) return [];
    return this.release(this.heldBytes.length, false);
  }

  private release(upTo: number, drop: boolean): HeldPiece[] {
    const out: HeldPiece[] = [];
    let at = 0;
    const rest: HeldPiece[] = [];
    for (const p of this.held) {
      const end = at + p.bytes.length;
      if (end <= upTo) out.push(p);
      else if (at >= upTo) rest.push(p);
      else {
        out.push({ bytes: p.bytes.subarray(0, upTo - at), token: p.token });
        rest.push({ bytes: p.bytes.subarray(upTo - at), token: null });
      }
      at = end;
    }
    this.held = drop ? [] : rest;
    this.heldBytes = drop ? new Uint8Array(0) : this.heldBytes.subarray(upTo);
    return out;
  }
}

function indexOf(hay: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

/** The last `n` bytes of `hay` equal the first `n` bytes of `s`. */
function startsWithTail(hay: Uint8Array, s: Uint8Array, n: number): boolean {
  const from = hay.length - n;
  for (let j = 0; j < n; j++) if (hay[from + j] !== s[j]) return false;
  return true;
}
