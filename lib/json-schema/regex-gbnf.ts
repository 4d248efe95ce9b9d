/**
 * Regex AST (regex.ts) -> GBNF over the JSON text of a string value (default mode). A pattern
 * constrains the decoded string, the grammar the encoded one, so every character set is written
 * as the JSON spellings of its members: the raw character (never `"`, `\` or a control
 * character), the short escapes (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`), and `\uXXXX`
 * for control and non-ASCII characters of the Basic Multilingual Plane (how Python's json.dumps
 * writes them). Unanchored ends match any characters (ECMA-262 `test` semantics).
 */
import { MAX_REPETITION, UnsupportedPattern } from "./pattern.js";
import { ANY, intersect, normalizeRanges, parseRegex, type Ranges, type Regex } from "./regex.js";
import { sanitizeRuleName } from "./literal.js";
import { longRepetition, type RuleSet } from "./rules.js";
import { minimize, regexToDfa, withLength as dfaWithLength, type Dfa } from "./regex-dfa.js";

const SHORT_ESCAPES: ReadonlyArray<[number, string]> = [
  [0x22, '\\"'],
  [0x5c, "\\\\"],
  [0x2f, "/"],
  [0x08, "b"],
  [0x0c, "f"],
  [0x0a, "n"],
  [0x0d, "r"],
  [0x09, "t"],
];
/** Characters that may appear raw in a JSON string (UTF-8 encodable: no surrogates). */
const RAW_OK: Ranges = [
  [0x20, 0x21],
  [0x23, 0x5b],
  [0x5d, 0xd7ff],
  [0xe000, 0x10ffff],
];
/** Characters written as `\uXXXX`: controls, DEL and above, within the BMP. */
const U_ESCAPED: Ranges = [
  [0x00, 0x1f],
  [0x7f, 0xd7ff],
  [0xe000, 0xffff],
];

const hexEsc = (c: number): string => (c <= 0xff ? `\\x${c.toString(16).padStart(2, "0").toUpperCase()}` : c <= 0xffff ? `\\u${c.toString(16).padStart(4, "0").toUpperCase()}` : `\\U${c.toString(16).padStart(8, "0").toUpperCase()}`);
const classChar = (c: number): string => (/^[a-zA-Z0-9 ]$/.test(String.fromCodePoint(c)) ? String.fromCodePoint(c) : hexEsc(c));

/** A GBNF character class for code-point ranges. */
export function gbnfClass(r: Ranges): string {
  return `[${r.map(([a, b]) => (a === b ? classChar(a) : `${classChar(a)}-${classChar(b)}`)).join("")}]`;
}

/** Hex digit values lo..hi as a class, both cases. */
function hexDigitClass(lo: number, hi: number): string {
  const ranges: Array<[number, number]> = [];
  const add = (a: number, b: number, base: number) => ranges.push([base + a, base + b]);
  if (lo <= 9) add(lo, Math.min(hi, 9), 0x30);
  if (hi >= 10) {
    add(Math.max(lo, 10) - 10, hi - 10, 0x41);
    add(Math.max(lo, 10) - 10, hi - 10, 0x61);
  }
  return gbnfClass(normalizeRanges(ranges));
}

/** Fixed-width (`width` hex digits) spellings of lo..hi. */
function hexRange(lo: number, hi: number, width: number): string {
  if (width === 0) return "";
  const unit = 16 ** (width - 1);
  const lh = Math.floor(lo / unit);
  const hh = Math.floor(hi / unit);
  const rest = (a: number, b: number) => (width === 1 ? "" : ` ${hexRange(a, b, width - 1)}`);
  if (lh === hh) return `${hexDigitClass(lh, lh)}${rest(lo % unit, hi % unit)}`;
  const alts: string[] = [];
  let from = lh;
  let to = hh;
  if (lo % unit !== 0) {
    alts.push(`${hexDigitClass(lh, lh)}${rest(lo % unit, unit - 1)}`);
    from = lh + 1;
  }
  const tail = hi % unit !== unit - 1;
  if (tail) to = hh - 1;
  if (from <= to) alts.push(`${hexDigitClass(from, to)}${width === 1 ? "" : ` [0-9a-fA-F]{${width - 1}}`}`);
  if (tail) alts.push(`${hexDigitClass(hh, hh)}${rest(0, hi % unit)}`);
  return alts.length === 1 ? alts[0]! : `(${alts.join(" | ")})`;
}

/** The JSON spellings of one character of the set `r`, as a GBNF expression. */
export function jsonCharSet(r: Ranges): string {
  const alts: string[] = [];
  const raw = intersect(r, RAW_OK);
  if (raw.length > 0) alts.push(gbnfClass(raw));
  const inSet = (c: number) => r.some(([a, b]) => a <= c && c <= b);
  const shorts = SHORT_ESCAPES.filter(([c]) => inSet(c)).map(([, e]) => e);
  if (shorts.length > 0) alts.push(`"\\\\" ${shorts.length === 1 ? `"${shorts[0]}"` : `(${shorts.map((e) => `"${e}"`).join(" | ")})`}`);
  const u = intersect(r, U_ESCAPED);
  if (u.length > 0) {
    const spell = u.map(([a, b]) => hexRange(a, b, 4));
    alts.push(`"\\\\u" ${spell.length === 1 ? spell[0] : `(${spell.join(" | ")})`}`);
  }
  if (alts.length === 0) throw new UnsupportedPattern("a character class that matches nothing");
  return alts.length === 1 ? alts[0]! : `(${alts.join(" | ")})`;
}

/** True when `c` is written as itself in a JSON string and a GBNF literal needs no escape. */
const plain = (c: number): boolean => c >= 0x20 && c < 0x7f && c !== 0x22 && c !== 0x5c;

/** A JSON string literal (quotes included) accepting each non-ASCII/control character raw or escaped. */
export function jsonStringLiteral(s: string): string {
  const out: string[] = [];
  let lit = "";
  for (const c of s) {
    const cp = c.codePointAt(0)!;
    if (plain(cp)) {
      lit += c;
      continue;
    }
    if (lit !== "") out.push(`"${lit}"`);
    lit = "";
    out.push(jsonCharSet([[cp, cp]]));
  }
  if (lit !== "") out.push(`"${lit}"`);
  return `"\\"" ${out.join(" ")}${out.length > 0 ? " " : ""}"\\""`;
}

/** min/maxLength that do not combine with the pattern (the pattern alone still compiles). */
export class LengthsBesidePattern extends UnsupportedPattern {}

interface Emit {
  rules: RuleSet;
  name: string;
  sets: Map<string, string>;
}

function setRule(r: Ranges, e: Emit): string {
  if (r.length === 1 && r[0]![0] === r[0]![1] && plain(r[0]![0])) {
    const c = String.fromCodePoint(r[0]![0]);
    return `"${c}"`;
  }
  const body = jsonCharSet(r);
  if (!body.includes(" ")) return body;
  let name = e.sets.get(body);
  if (name === undefined) {
    name = e.rules.add(`${e.name}-c${e.sets.size}`, body);
    e.sets.set(body, name);
  }
  return name;
}

function emit(re: Regex, e: Emit): string {
  switch (re.t) {
    case "set":
      return setRule(re.ranges, e);
    case "seq": {
      const parts: string[] = [];
      let lit = "";
      for (const item of re.items) {
        if (item.t === "set" && item.ranges.length === 1 && item.ranges[0]![0] === item.ranges[0]![1] && plain(item.ranges[0]![0])) {
          lit += String.fromCodePoint(item.ranges[0]![0]);
          continue;
        }
        if (lit !== "") parts.push(`"${lit}"`);
        lit = "";
        if (item.t === "start" || item.t === "end") throw new UnsupportedPattern("an anchor inside the pattern");
        parts.push(emit(item, e));
      }
      if (lit !== "") parts.push(`"${lit}"`);
      return parts.length === 0 ? '""' : parts.length === 1 ? parts[0]! : `(${parts.join(" ")})`;
    }
    case "alt":
      return `(${re.alts.map((a) => emit(a, e)).join(" | ")})`;
    case "rep": {
      const item = emit(re.item, e);
      const wrapped = /^[\w-]+$|^"[^"]*"$|^\[[^\]]*\]$|^\(.*\)$/.test(item) ? item : `(${item})`;
      if (re.min > MAX_REPETITION) throw new UnsupportedPattern(`repetition {${re.min},${re.max}} above the grammar's ${MAX_REPETITION}`);
      if (re.max !== Infinity && re.max > MAX_REPETITION) return `(${longRepetition(wrapped, re.min, re.max, (body) => e.rules.add(`${e.name}-block`, body))})`;
      if (re.min === 0 && re.max === Infinity) return `${wrapped}*`;
      if (re.min === 1 && re.max === Infinity) return `${wrapped}+`;
      if (re.min === 0 && re.max === 1) return `${wrapped}?`;
      if (re.max === 0) return '""';
      return `${wrapped}{${re.min},${re.max === Infinity ? "" : re.max}}`;
    }
    default:
      throw new UnsupportedPattern("an anchor inside the pattern");
  }
}

/** Top-level alternatives with their anchors resolved: each branch gets `.*` where it is not anchored. */
export function anchored(re: Regex): Regex {
  const branches = re.t === "alt" ? re.alts : [re];
  const anyStar: Regex = { t: "rep", item: { t: "set", ranges: ANY }, min: 0, max: Infinity };
  return {
    t: "alt",
    alts: branches.map((b) => {
      const items = b.t === "seq" ? [...b.items] : [b];
      const start = items[0]?.t === "start";
      if (start) items.shift();
      const end = items.at(-1)?.t === "end";
      if (end) items.pop();
      return { t: "seq", items: [...(start ? [] : [anyStar]), ...items, ...(end ? [] : [anyStar])] };
    }),
  };
}

/** The shortest and longest strings a regex matches (in characters). */
function lengthRange(re: Regex): [number, number] {
  switch (re.t) {
    case "set":
      return [1, 1];
    case "start":
    case "end":
      return [0, 0];
    case "seq":
      return re.items.map(lengthRange).reduce(([a, b], [c, d]) => [a + c, b + d], [0, 0]);
    case "alt": {
      const rs = re.alts.map(lengthRange);
      return [Math.min(...rs.map((r) => r[0])), Math.max(...rs.map((r) => r[1]))];
    }
    case "rep": {
      const [a, b] = lengthRange(re.item);
      return [a * re.min, re.max === Infinity ? (b === 0 ? 0 : Infinity) : b * re.max];
    }
  }
}

/**
 * When the pattern is one character set repeated (`^[a-z]+$`), the repetition bounds intersected
 * with min/maxLength; otherwise null (lengths and a general pattern do not combine here).
 */
function withLength(re: Regex, minLength: number, maxLength: number): Regex | null {
  if (re.t !== "alt" || re.alts.length !== 1) return null;
  const seq = re.alts[0]!;
  if (seq.t !== "seq" || seq.items.length !== 1) {
    // `.*X.*` shapes: only the unconstrained-everything case
    return null;
  }
  const only = seq.items[0]!;
  if (only.t === "rep" && only.item.t === "set") {
    const min = Math.max(only.min, minLength);
    const max = Math.min(only.max, maxLength);
    if (min > max) throw new UnsupportedPattern("minLength/maxLength leave the pattern no string");
    return { t: "alt", alts: [{ t: "seq", items: [{ t: "rep", item: only.item, min, max }] }] };
  }
  return null;
}

/**
 * Add the rule for a string matching `pattern` (and min/maxLength when given), quotes included.
 * Throws UnsupportedPattern / InvalidPattern.
 */
export function regexStringRule(pattern: string | string[], name: string, rules: RuleSet, opts: { dotall: boolean; minLength?: number; maxLength?: number }): string {
  const patterns = typeof pattern === "string" ? [pattern] : pattern;
  let re: Regex = { t: "alt", alts: patterns.flatMap((p) => (anchored(parseRegex(p, opts.dotall)) as { alts: Regex[] }).alts) };
  const [lo, hi] = lengthRange(re);
  // lengths the pattern implies anyway constrain nothing more
  if (lo >= (opts.minLength ?? 0) && hi <= (opts.maxLength ?? Infinity)) opts = { dotall: opts.dotall };
  const lengths = (opts.minLength ?? 0) > 0 || (opts.maxLength ?? Infinity) !== Infinity;
  if (lengths) {
    const merged = withLength(re, opts.minLength ?? 0, opts.maxLength ?? Infinity);
    if (merged === null) {
      // the general case: the pattern's automaton times a length counter
      try {
        return dfaStringRule(dfaWithLength(minimize(regexToDfa(re)), opts.minLength ?? 0, opts.maxLength ?? Infinity), name, rules);
      } catch (err) {
        if (err instanceof UnsupportedPattern) throw new LengthsBesidePattern(`minLength/maxLength next to this pattern (${err.message})`);
        throw err;
      }
    }
    re = merged;
  }
  const e: Emit = { rules, name, sets: new Map() };
  const snapshot = rules.snapshot();
  try {
    return rules.add(name, `"\\"" ${emit(re, e)} "\\""`);
  } catch (err) {
    // an anchor inside the pattern (`(^a|b$)`): the automaton reads anchors as assertions
    if (!(err instanceof UnsupportedPattern) || !err.message.includes("anchor")) throw err;
    rules.restore(snapshot);
    return dfaStringRule(minimize(regexToDfa(re)), name, rules);
  }
}

/**
 * The DFA of an ECMA-262 pattern (unanchored ends match anything), minimized. Kept per process
 * (the last PATTERN_DFAS patterns; a Dfa is never changed once built): the same patterns and
 * formats recur across properties and schemas, and `format: uri-reference` alone takes 7 ms.
 */
export function patternDfa(pattern: string, dotall: boolean): Dfa {
  const key = `${dotall ? "s" : "-"}${pattern}`;
  let d = patternDfas.get(key);
  if (d !== undefined) {
    // most recently used last
    patternDfas.delete(key);
  } else {
    d = minimize(regexToDfa(anchored(parseRegex(pattern, dotall))));
    if (patternDfas.size >= PATTERN_DFAS) patternDfas.delete(patternDfas.keys().next().value!);
  }
  patternDfas.set(key, d);
  return d;
}

const PATTERN_DFAS = 256;
const patternDfas = new Map<string, Dfa>();

/**
 * A JSON string (quotes included) whose decoded text the DFA accepts: one rule per state, each
 * alternative a character's JSON spellings then the next state, `"` where the state accepts.
 * Returns the name of the start rule. The state rules share a prefix chosen so that none clashes
 * with a different rule already there (they reference each other by name).
 */
export function dfaStringRule(d: Dfa, name: string, rules: RuleSet): string {
  return dfaRule(d, name, rules, true);
}

/**
 * The same for text written as it is (a number: `multiple-of.ts`), no quotes: a state that
 * accepts may end there.
 */
export function dfaTextRule(d: Dfa, name: string, rules: RuleSet): string {
  return dfaRule(d, name, rules, false);
}

/** Character sets spelled as rules of their own, per grammar: automata repeat them on many states. */
const sharedSets = new WeakMap<RuleSet, Map<string, string>>();

function sharedSet(rules: RuleSet, body: string): string {
  // a plain class or literal is as short as a rule name
  if (!body.includes(" ")) return body;
  let known = sharedSets.get(rules);
  if (known === undefined) sharedSets.set(rules, (known = new Map()));
  let name = known.get(body);
  if (name === undefined || rules.get(name) !== body) {
    name = rules.add(`jchar-${known.size}`, body);
    known.set(body, name);
  }
  return name;
}

function dfaRule(d: Dfa, name: string, rules: RuleSet, quoted: boolean): string {
  const sets = d.edges.map((edges) =>
    edges.map((e) => {
      try {
        return sharedSet(rules, quoted ? jsonCharSet(e.ranges) : gbnfClass(e.ranges));
      } catch (err) {
        if (err instanceof UnsupportedPattern) return null; // only surrogates: no JSON spelling
        throw err;
      }
    }),
  );
  const bodiesFor = (prefix: string): string[] =>
    d.edges.map((edges, s) => {
      const alts: string[] = [];
      edges.forEach((e, i) => {
        const set = sets[s]![i];
        if (set !== null && set !== undefined) alts.push(`${set} ${prefix}${e.to}`);
      });
      if (d.accept[s]) alts.push(quoted ? '"\\""' : '""');
      return alts.length === 0 ? "[^\\x00-\\U0010FFFF]" : alts.join(" | ");
    });
  for (let k = 0; ; k++) {
    const prefix = sanitizeRuleName(`${name}-${k === 0 ? "" : `${k}-`}s`);
    const bodies = bodiesFor(prefix);
    if (bodies.some((b, s) => (rules.get(`${prefix}${s}`) ?? b) !== b)) continue;
    bodies.forEach((b, s) => rules.add(`${prefix}${s}`, b));
    return rules.add(name, quoted ? `"\\"" ${prefix}0` : `${prefix}0`);
  }
}
