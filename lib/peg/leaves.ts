/**
 * Leaf matchers that scan input: character classes, JSON-style string content, `until`. Each follows
 * the reference's executor byte for byte (including the end it reports on failure) and flags every
 * observation of the end of the input in `s.eof`, which the streaming memo relies on.
 */
import type { PegNode } from "./nodes.js";
import { FAIL, NEED_MORE_INPUT, type ParseFn, SUCCESS } from "./state.js";
import { CodepointTrie, TRIE_NO_MATCH, TRIE_PARTIAL_MATCH } from "./trie.js";
import { UTF8_INCOMPLETE, UTF8_INVALID, decodeUtf8At, utf8Encode } from "./utf8.js";

export function compileChars(node: Extract<PegNode, { kind: "chars" }>): ParseFn {
  const { ranges, negated, min, max } = node;
  // Membership of every ASCII code point, precomputed (negation included); others scan the ranges.
  const ascii = new Uint8Array(128);
  for (let c = 0; c < 128; c++) {
    let m = false;
    for (const r of ranges) if (c >= r.start && c <= r.end) m = true;
    ascii[c] = m !== negated ? 1 : 0;
  }
  const matchesCp = (cp: number): boolean => {
    let m = false;
    for (let i = 0; i < ranges.length; i++) {
      const r = ranges[i]!;
      if (cp >= r.start && cp <= r.end) {
        m = true;
        break;
      }
    }
    return m !== negated;
  };
  return (s, pos) => {
    const inp = s.input;
    const len = s.len;
    let p = pos;
    let count = 0;
    while (max === -1 || count < max) {
      let matches: boolean;
      let n: number;
      const b = p < len ? inp[p]! : 0x100;
      if (b < 0x80) {
        matches = ascii[b] === 1;
        n = 1;
      } else {
        const st = decodeUtf8At(inp, p, s.tmp);
        if (st === UTF8_INCOMPLETE) {
          s.eof = true;
          if (count >= min) {
            s.end = p;
            return SUCCESS;
          }
          if (!s.lenient) {
            s.end = pos;
            return FAIL;
          }
          s.end = p;
          return NEED_MORE_INPUT;
        }
        if (st === UTF8_INVALID) {
          if (count >= min) {
            s.end = p;
            return SUCCESS;
          }
          s.end = pos;
          return FAIL;
        }
        matches = matchesCp(s.tmp.cp);
        n = s.tmp.len;
      }
      if (!matches) break;
      p += n;
      count++;
    }
    if (count < min) {
      s.end = p;
      if (p >= len) s.eof = true;
      return p >= len && s.lenient ? NEED_MORE_INPUT : FAIL;
    }
    s.end = p;
    return SUCCESS;
  };
}

function isHex(b: number): boolean {
  return (b >= 0x30 && b <= 0x39) || (b >= 0x61 && b <= 0x66) || (b >= 0x41 && b <= 0x46);
}

/** JSON-style string body up to the (unconsumed) delimiter; a dangling escape is held back while streaming. */
export function compileStringContent(delimiter: string): ParseFn {
  const delim = utf8Encode(delimiter)[0] ?? 0;
  return (s, pos) => {
    const inp = s.input;
    const len = s.len;
    let p = pos;
    while (p < len) {
      const c = inp[p]!;
      if (c === delim) {
        s.end = p;
        return SUCCESS;
      }
      if (c === 0x5c) {
        const save = p;
        p++;
        if (p >= len) {
          s.eof = true;
          if (!s.lenient) {
            s.end = pos;
            return FAIL;
          }
          s.end = save; // the unmatched backslash is not part of the partial value
          return NEED_MORE_INPUT;
        }
        const e = inp[p]!;
        if (e === delim || e === 0x5c || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
          p++;
          continue;
        }
        if (e === 0x75) {
          p++;
          for (let i = 0; i < 4; i++) {
            if (p >= len) {
              s.eof = true;
              if (!s.lenient) {
                s.end = pos;
                return FAIL;
              }
              s.end = save; // nor is an incomplete \u escape
              return NEED_MORE_INPUT;
            }
            if (!isHex(inp[p]!)) {
              s.end = pos;
              return FAIL;
            }
            p++;
          }
          continue;
        }
        s.end = pos;
        return FAIL;
      }
      if (c < 0x80) {
        p++;
        continue;
      }
      const st = decodeUtf8At(inp, p, s.tmp);
      if (st === UTF8_INCOMPLETE) {
        s.eof = true;
        if (!s.lenient) {
          s.end = pos;
          return FAIL;
        }
        s.end = p;
        return NEED_MORE_INPUT;
      }
      if (st === UTF8_INVALID) {
        s.end = pos;
        return FAIL;
      }
      p += s.tmp.len;
    }
    s.eof = true;
    s.end = p;
    return s.lenient ? NEED_MORE_INPUT : FAIL;
  };
}

/** Everything up to the first delimiter (or a prefix of one at the end of the input). */
export function compileUntil(delimiters: readonly string[]): ParseFn {
  const trie = new CodepointTrie(delimiters);
  const first = trie.firstBytes;
  return (s, pos) => {
    const inp = s.input;
    const len = s.len;
    let p = pos;
    while (p < len) {
      const b = inp[p]!;
      let n = 1;
      if (b >= 0x80) {
        const st = decodeUtf8At(inp, p, s.tmp);
        if (st === UTF8_INCOMPLETE) {
          s.eof = true;
          if (!s.lenient) {
            s.end = pos;
            return FAIL;
          }
          s.end = p;
          return NEED_MORE_INPUT;
        }
        if (st === UTF8_INVALID) {
          s.end = pos;
          return FAIL;
        }
        n = s.tmp.len;
      }
      if (first[b] === 1) {
        const m = trie.checkAt(inp, p, s.tmp2);
        if (m !== TRIE_NO_MATCH) {
          if (m === TRIE_PARTIAL_MATCH) s.eof = true; // a delimiter prefix running into the end
          s.end = p;
          return SUCCESS;
        }
      }
      p += n;
    }
    s.eof = true;
    s.end = p;
    return s.lenient ? NEED_MORE_INPUT : SUCCESS;
  };
}
