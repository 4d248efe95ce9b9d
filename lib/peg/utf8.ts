/**
 * UTF-8 helpers that mirror the reference's streaming-aware decoder (llama.cpp `common/unicode.cpp`).
 *
 * The decoder is deliberately the reference's, not a strict one: it does not reject overlong forms or
 * surrogates, so that every parser kind decides "complete / incomplete / invalid" at exactly the same
 * byte as the C++ engine.
 */

export const UTF8_SUCCESS = 0;
export const UTF8_INCOMPLETE = 1;
export const UTF8_INVALID = 2;
export type Utf8Status = typeof UTF8_SUCCESS | typeof UTF8_INCOMPLETE | typeof UTF8_INVALID;

/**
 * Decodes one code point at `offset`. Returns the status; on success the code point and its byte length
 * are left in `out` (a reused object, so the hot loops allocate nothing).
 */
export function decodeUtf8At(input: Uint8Array, offset: number, out: { cp: number; len: number }): Utf8Status {
  const n = input.length;
  if (offset >= n) return UTF8_INCOMPLETE;
  const b0 = input[offset]!;
  if ((b0 & 0x80) === 0) {
    out.cp = b0;
    out.len = 1;
    return UTF8_SUCCESS;
  }
  if ((b0 & 0x40) === 0) return UTF8_INVALID;
  if ((b0 & 0x20) === 0) {
    if (offset + 1 >= n) return UTF8_INCOMPLETE;
    const b1 = input[offset + 1]!;
    if ((b1 & 0xc0) !== 0x80) return UTF8_INVALID;
    out.cp = ((b0 & 0x1f) << 6) | (b1 & 0x3f);
    out.len = 2;
    return UTF8_SUCCESS;
  }
  if ((b0 & 0x10) === 0) {
    if (offset + 2 >= n) return UTF8_INCOMPLETE;
    const b1 = input[offset + 1]!;
    const b2 = input[offset + 2]!;
    if ((b1 & 0xc0) !== 0x80 || (b2 & 0xc0) !== 0x80) return UTF8_INVALID;
    out.cp = ((b0 & 0x0f) << 12) | ((b1 & 0x3f) << 6) | (b2 & 0x3f);
    out.len = 3;
    return UTF8_SUCCESS;
  }
  if ((b0 & 0x08) === 0) {
    if (offset + 3 >= n) return UTF8_INCOMPLETE;
    const b1 = input[offset + 1]!;
    const b2 = input[offset + 2]!;
    const b3 = input[offset + 3]!;
    if ((b1 & 0xc0) !== 0x80 || (b2 & 0xc0) !== 0x80 || (b3 & 0xc0) !== 0x80) return UTF8_INVALID;
    out.cp = ((b0 & 0x07) << 18) | ((b1 & 0x3f) << 12) | ((b2 & 0x3f) << 6) | (b3 & 0x3f);
    out.len = 4;
    return UTF8_SUCCESS;
  }
  return UTF8_INVALID;
}

/**
 * Lossy reading (`lossyUtf8`): whether the sequence at `offset`, which `decodeUtf8At` found incomplete,
 * is already ruled out by the bytes present (a byte after the lead that is not a continuation byte),
 * so it is a stray byte whatever follows. False at the end of the input.
 */
export function utf8Stray(input: Uint8Array, offset: number): boolean {
  for (let i = offset + 1; i < input.length; i++) if ((input[i]! & 0xc0) !== 0x80) return true;
  return false;
}

/** Code points of a UTF-8 string, stopping at the first incomplete/invalid sequence (as the reference's trie does). */
export function codepointsOf(bytes: Uint8Array): number[] {
  const out: number[] = [];
  const tmp = { cp: 0, len: 0 };
  let pos = 0;
  while (pos < bytes.length) {
    if (decodeUtf8At(bytes, pos, tmp) !== UTF8_SUCCESS) break;
    out.push(tmp.cp);
    pos += tmp.len;
  }
  return out;
}

const encoder = new TextEncoder();
// Not fatal: ill-formed sequences become U+FFFD (one per maximal ill-formed subpart), so AST text never
// carries half a character. This matches how the reference harness prints text (nlohmann `replace`).
const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

export function utf8Encode(text: string): Uint8Array {
  return encoder.encode(text);
}

/** Decodes bytes to a string, replacing ill-formed or truncated sequences with U+FFFD. */
export function utf8DecodeLossy(bytes: Uint8Array, start = 0, end = bytes.length): string {
  if (end <= start) return "";
  // ASCII fast path: most tool-call text is ASCII, and String.fromCharCode on short runs beats TextDecoder.
  if (end - start <= 64) {
    let ascii = true;
    for (let i = start; i < end; i++) {
      if (bytes[i]! >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (ascii) return String.fromCharCode.apply(null, bytes.subarray(start, end) as unknown as number[]);
  }
  return decoder.decode(bytes.subarray(start, end));
}

/**
 * Byte ranges `[start, end)` inside `[start, end)` of `bytes` that are not well-formed UTF-8 by the
 * reference decoder (including a sequence truncated by the end of the range). Empty when the slice is clean.
 */
export function invalidUtf8Ranges(bytes: Uint8Array, start: number, end: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  const view = bytes.subarray(0, end);
  const tmp = { cp: 0, len: 0 };
  let pos = start;
  while (pos < end) {
    const st = decodeUtf8At(view, pos, tmp);
    if (st === UTF8_SUCCESS) {
      pos += tmp.len;
      continue;
    }
    const badEnd = st === UTF8_INCOMPLETE ? end : pos + 1;
    const last = out[out.length - 1];
    if (last !== undefined && last[1] === pos) last[1] = badEnd;
    else out.push([pos, badEnd]);
    pos = badEnd;
  }
  return out;
}

/** C `isspace` in the C locale: space, \t, \n, \v, \f, \r. */
export function isCSpace(b: number): boolean {
  return b === 0x20 || (b >= 0x09 && b <= 0x0d);
}
