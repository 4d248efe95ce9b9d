/**
 * Leaf matchers that scan input: character classes, JSON-style string content, `until`. Each follows
 * the reference's executor byte for byte (including the end it reports on failure) and flags every
 * observation of the end of the input in `s.eof`, which the streaming memo relies on.
 */
import type { PegNode } from "./nodes.js";
import { FAIL, NEED_MORE_INPUT, type ParseFn, type ParseState, SUCCESS, type Status } from "./state.js";
import { CodepointTrie, TRIE_NO_MATCH, TRIE_PARTIAL_MATCH } from "./trie.js";
import { UTF8_INCOMPLETE, UTF8_INVALID, decodeUtf8At, utf8Encode, utf8Stray } from "./utf8.js";

/**
 * `decodeUtf8At` for the scanning leaves: in a `lossyUtf8` parse a stray byte (invalid, or a cut
 * sequence the bytes present already rule out) reads as U+FFFD, one byte long.
 */
function decodeAt(s: ParseState, inp: Uint8Array, p: number): number {
  const st = decodeUtf8At(inp, p, s.tmp);
  if (st === 0 || !s.lossy || p >= inp.length || (st === UTF8_INCOMPLETE && !utf8Stray(inp, p))) return st;
  s.tmp.cp = 0xfffd;
  s.tmp.len = 1;
  return 0;
}

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
        const st = decodeAt(s, inp, p);
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
export function compileStringContent(delimiter: string, id: number): ParseFn {
  const delim = utf8Encode(delimiter)[0] ?? 0;
  return resumable(id, (s, pos, from) => {
    const inp = s.input;
    const len = s.len;
    let p = from;
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
          s.resume = save;
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
              s.resume = save;
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
      const st = decodeAt(s, inp, p);
      if (st === UTF8_INCOMPLETE) {
        s.eof = true;
        s.resume = p;
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
    s.resume = p;
    s.end = p;
    return s.lenient ? NEED_MORE_INPUT : FAIL;
  });
}

/** Everything up to the first delimiter (or a prefix of one at the end of the input). */
export function compileUntil(delimiters: readonly string[], id: number): ParseFn {
  const trie = new CodepointTrie(delimiters);
  const first = trie.firstBytes;
  return resumable(id, (s, pos, from) => {
    const inp = s.input;
    const len = s.len;
    let p = from;
    while (p < len) {
      const b = inp[p]!;
      let n = 1;
      if (b >= 0x80) {
        const st = decodeAt(s, inp, p);
        if (st === UTF8_INCOMPLETE) {
          s.eof = true;
          s.resume = p;
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
        const m = trie.checkAt(inp, p, s.tmp2, s.lossy);
        if (m !== TRIE_NO_MATCH) {
          if (m === TRIE_PARTIAL_MATCH) {
            // a delimiter prefix running into the end (or into bytes that do not decode)
            s.eof = true;
            s.resume = p;
          }
          s.end = p;
          return SUCCESS;
        }
      }
      p += n;
    }
    s.eof = true;
    s.resume = p;
    s.end = p;
    return s.lenient ? NEED_MORE_INPUT : SUCCESS;
  });
}

/**
 * A scan `(s, pos, from)` that starts at `pos` but may begin reading at `from`: every position it
 * steps over between `pos` and `from` was decided from bytes before the end of the input (a whole
 * character, a whole escape, a delimiter mismatch), and the scan carries no state but its position,
 * so on a longer input with the same prefix it passes `from` exactly as a scan from `pos` would.
 * Every scan that sets `s.eof` sets `s.resume` to the element it stopped at.
 */
type ResumableScan = (s: ParseState, pos: number, from: number) => Status;

/**
 * Makes a scanning leaf incremental inside a stream-parser session: its result at `pos` is kept in
 * the memo (key `-1 - id`, apart from the rule keys). A result that never saw the end of the input
 * holds for every later (longer) input; one that did is reused as is within the same parse, and on
 * a later parse the scan resumes where it stopped instead of rescanning the leaf's whole content.
 * Outside a session (plain `parse`) the scan runs from `pos` as before.
 */
function resumable(id: number, scan: ResumableScan): ParseFn {
  const key = -1 - id;
  return (s, pos) => {
    if (!s.incremental) return scan(s, pos, pos);
    const memo = s.memo;
    let from = pos;
    if (memo.findAny(key, pos)) {
      if (!memo.eof || memo.current) {
        if (memo.eof) s.eof = true;
        s.end = memo.end;
        return memo.status as Status;
      }
      from = memo.node;
    }
    const outerEof = s.eof;
    s.eof = false;
    const r = scan(s, pos, from);
    const sawEof = s.eof;
    s.eof = outerEof || sawEof;
    memo.insert(key, pos, r, s.end, sawEof ? s.resume : 0, sawEof);
    return r;
  };
}
