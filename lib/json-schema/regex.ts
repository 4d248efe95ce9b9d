/**
 * The default mode's `pattern` support: an ECMA-262 regular expression (the regular subset: no
 * lookaround, backreferences or word boundaries) parsed into a small AST over code-point sets.
 * regex-gbnf.ts turns it into GBNF over the JSON text of the string. No reference counterpart:
 * llama.cpp's converter transliterates `^...$` patterns textually (pattern.ts keeps that for the
 * reference mode).
 */
import { UnsupportedPattern, InvalidPattern } from "./pattern.js";

/** Inclusive code-point ranges, sorted and disjoint. */
export type Ranges = ReadonlyArray<readonly [number, number]>;

export type Regex =
  | { t: "set"; ranges: Ranges }
  | { t: "seq"; items: Regex[] }
  | { t: "alt"; alts: Regex[] }
  | { t: "rep"; item: Regex; min: number; max: number }
  | { t: "start" }
  | { t: "end" };

export const MAX_CODE_POINT = 0x10ffff;

export function normalizeRanges(input: ReadonlyArray<readonly [number, number]>): Array<[number, number]> {
  const sorted = [...input].filter(([a, b]) => a <= b).sort((x, y) => x[0] - y[0]);
  const out: Array<[number, number]> = [];
  for (const [a, b] of sorted) {
    const last = out.at(-1);
    if (last !== undefined && a <= last[1] + 1) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

export function complement(r: Ranges): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let next = 0;
  for (const [a, b] of normalizeRanges(r)) {
    if (a > next) out.push([next, a - 1]);
    next = b + 1;
  }
  if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
  return out;
}

export function intersect(x: Ranges, y: Ranges): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (const [a, b] of x) for (const [c, d] of y) if (Math.max(a, c) <= Math.min(b, d)) out.push([Math.max(a, c), Math.min(b, d)]);
  return normalizeRanges(out);
}

const ch = (c: string): [number, number] => [c.codePointAt(0)!, c.codePointAt(0)!];
const DIGIT: Ranges = [[0x30, 0x39]];
const WORD: Ranges = normalizeRanges([[0x30, 0x39], [0x41, 0x5a], ch("_"), [0x61, 0x7a]]);
const SPACE: Ranges = normalizeRanges([
  [0x09, 0x0d],
  ch(" "),
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
]);
/** `.` without the s flag: everything but line terminators. */
export const DOT: Ranges = complement([[0x0a, 0x0a], [0x0d, 0x0d], [0x2028, 0x2029]]);
export const ANY: Ranges = [[0, MAX_CODE_POINT]];

/** Parse `pattern` (the `u`-flag-free syntax ajv and browsers accept, minus what is not regular). */
export function parseRegex(pattern: string, dotall = false): Regex {
  const src = [...pattern];
  let i = 0;
  let groups = 0;

  const peek = (): string | undefined => src[i];
  const classEscape = (): Ranges | number => {
    // after a backslash; a number is a single code point
    const c = src[i++];
    if (c === undefined) throw new InvalidPattern("trailing backslash");
    switch (c) {
      case "d":
        return DIGIT;
      case "D":
        return complement(DIGIT);
      case "w":
        return WORD;
      case "W":
        return complement(WORD);
      case "s":
        return SPACE;
      case "S":
        return complement(SPACE);
      case "t":
        return 9;
      case "n":
        return 10;
      case "v":
        return 11;
      case "f":
        return 12;
      case "r":
        return 13;
      case "0":
        if (/[0-9]/.test(src[i] ?? "")) throw new UnsupportedPattern("octal escape");
        return 0;
      case "c": {
        const l = src[i];
        if (l !== undefined && /[a-zA-Z]/.test(l)) {
          i++;
          return l.codePointAt(0)! % 32;
        }
        return "\\".codePointAt(0)!;
      }
      case "x": {
        const h = src.slice(i, i + 2).join("");
        if (/^[0-9a-fA-F]{2}$/.test(h)) {
          i += 2;
          return parseInt(h, 16);
        }
        return "x".codePointAt(0)!;
      }
      case "u": {
        if (src[i] === "{") {
          const close = src.indexOf("}", i);
          const h = src.slice(i + 1, close).join("");
          if (close > 0 && /^[0-9a-fA-F]{1,6}$/.test(h) && parseInt(h, 16) <= MAX_CODE_POINT) {
            i = close + 1;
            return parseInt(h, 16);
          }
          return "u".codePointAt(0)!;
        }
        const h = src.slice(i, i + 4).join("");
        if (/^[0-9a-fA-F]{4}$/.test(h)) {
          i += 4;
          const hi = parseInt(h, 16);
          // a surrogate pair written as two escapes is one code point
          const low = src.slice(i, i + 6).join("");
          if (hi >= 0xd800 && hi <= 0xdbff && /^\\u[dD][c-fC-F][0-9a-fA-F]{2}$/.test(low)) {
            i += 6;
            return 0x10000 + ((hi - 0xd800) << 10) + (parseInt(low.slice(2), 16) - 0xdc00);
          }
          return hi;
        }
        return "u".codePointAt(0)!;
      }
      case "p":
      case "P":
        throw new UnsupportedPattern(`unicode property escape \\${c}`);
      case "k":
        throw new UnsupportedPattern("named backreference");
      default:
        if (/[1-9]/.test(c)) throw new UnsupportedPattern("backreference");
        return c.codePointAt(0)!;
    }
  };

  const classAtom = (): Ranges | number => {
    const c = src[i]!;
    if (c === "\\") {
      i++;
      if (src[i] === "b") {
        i++;
        return 8; // backspace inside a class
      }
      if (src[i] === "-") {
        i++;
        return 0x2d;
      }
      return classEscape();
    }
    i++;
    return c.codePointAt(0)!;
  };

  const charClass = (): Regex => {
    // after '['
    let negate = false;
    if (peek() === "^") {
      negate = true;
      i++;
    }
    const ranges: Array<[number, number]> = [];
    while (i < src.length && src[i] !== "]") {
      const a = classAtom();
      if (src[i] === "-" && src[i + 1] !== undefined && src[i + 1] !== "]") {
        i++;
        const b = classAtom();
        if (typeof a !== "number" || typeof b !== "number") {
          // `[\d-x]`: the dash is literal
          for (const x of [a, 0x2d, b]) typeof x === "number" ? ranges.push([x, x]) : ranges.push(...x.map(([p, q]) => [p, q] as [number, number]));
          continue;
        }
        if (a > b) throw new InvalidPattern("range out of order in character class");
        ranges.push([a, b]);
      } else if (typeof a === "number") {
        ranges.push([a, a]);
      } else {
        ranges.push(...a.map(([p, q]) => [p, q] as [number, number]));
      }
    }
    if (src[i] !== "]") throw new InvalidPattern("unterminated character class");
    i++;
    const set = normalizeRanges(ranges);
    return { t: "set", ranges: negate ? complement(set) : set };
  };

  const quantifier = (): [number, number] | null => {
    const c = peek();
    if (c === "*") return (i++, [0, Infinity]);
    if (c === "+") return (i++, [1, Infinity]);
    if (c === "?") return (i++, [0, 1]);
    if (c === "{") {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(src.slice(i, i + 24).join(""));
      if (m === null) return null; // a literal brace (Annex B)
      i += m[0].length;
      const min = Number(m[1]);
      const max = m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]);
      if (min > max) throw new InvalidPattern(`repetition {${m[1]},${m[3]}}: the minimum is greater than the maximum`);
      return [min, max];
    }
    return null;
  };

  const atom = (): Regex | null => {
    const c = src[i]!;
    switch (c) {
      case "^":
        i++;
        return { t: "start" };
      case "$":
        i++;
        return { t: "end" };
      case ".":
        i++;
        return { t: "set", ranges: dotall ? ANY : DOT };
      case "[":
        i++;
        return charClass();
      case "(": {
        i++;
        if (peek() === "?") {
          const next = src[i + 1];
          if (next === ":") i += 2;
          else if (next === "<" && src[i + 2] !== "=" && src[i + 2] !== "!") {
            const close = src.indexOf(">", i);
            if (close < 0) throw new InvalidPattern("unterminated group name");
            i = close + 1;
          } else throw new UnsupportedPattern("lookaround or an unknown group kind");
        }
        if (++groups > 1000) throw new UnsupportedPattern("too many groups");
        const inner = alternation();
        if (peek() !== ")") throw new InvalidPattern("unbalanced parentheses");
        i++;
        return inner;
      }
      case ")":
        return null;
      case "|":
        return null;
      case "*":
      case "+":
      case "?":
        throw new InvalidPattern("nothing to repeat");
      case "\\": {
        i++;
        const e = src[i];
        if (e === "b" || e === "B") throw new UnsupportedPattern(`word boundary \\${e}`);
        const r = classEscape();
        return { t: "set", ranges: typeof r === "number" ? [[r, r]] : r };
      }
      default:
        i++;
        return { t: "set", ranges: [ch(c)] };
    }
  };

  let depth = 0;
  const alternation = (): Regex => {
    if (++depth > 200) throw new UnsupportedPattern("pattern nesting too deep");
    const alts: Regex[] = [];
    let seq: Regex[] = [];
    for (;;) {
      if (i >= src.length || peek() === ")") break;
      if (peek() === "|") {
        i++;
        alts.push({ t: "seq", items: seq });
        seq = [];
        continue;
      }
      const a = atom();
      if (a === null) break;
      const q = quantifier();
      if (q === null) {
        seq.push(a);
        continue;
      }
      if (a.t === "start" || a.t === "end") throw new UnsupportedPattern("a quantified anchor");
      if (peek() === "?") i++; // lazy: the same language
      seq.push({ t: "rep", item: a, min: q[0], max: q[1] });
      if (/[*+?]/.test(peek() ?? "") || (peek() === "{" && /^\{\d/.test(src.slice(i, i + 3).join("")))) {
        throw new InvalidPattern("nothing to repeat");
      }
    }
    alts.push({ t: "seq", items: seq });
    depth--;
    return alts.length === 1 ? alts[0]! : { t: "alt", alts };
  };

  const re = alternation();
  if (i < src.length) throw new InvalidPattern("unbalanced parentheses");
  return re;
}
