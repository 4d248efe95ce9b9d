/**
 * The keys of an object's undeclared members, split by the schemas their values must satisfy
 * (default mode): `patternProperties` gives a key every schema whose pattern it matches (two
 * overlapping patterns: both), `additionalProperties` the keys no pattern matches, and
 * `propertyNames` bounds them all. Each region is a key language (a DFA) with the patterns that
 * apply there, so a key is in exactly one region and its value gets exactly its schemas. No
 * reference counterpart (llama.cpp refuses patternProperties).
 */
import { UnsupportedPattern } from "./pattern.js";
import { ANY_STRING, accepts, complement, difference, intersect, isEmpty, minimize, stringsDfa, union, withLength, type Dfa } from "./regex-dfa.js";
import { FORMAT_PATTERNS } from "./formats.js";
import { patternDfa } from "./regex-gbnf.js";
import type { RefTable } from "./refs.js";
import { isObject } from "../json-syntax.js";

export interface KeyRegion {
  readonly keys: Dfa;
  /** Indices of the patterns every key here matches; empty: none (the additionalProperties keys). */
  readonly patterns: readonly number[];
}

/** Most patterns whose overlaps are split into regions (2^n intersections). */
const MAX_OVERLAPPING = 4;

/**
 * The regions of the keys that are none of `declared`, lie in `names` (propertyNames; null:
 * any), and (when `additional` is false) match some pattern. Throws UnsupportedPattern when the
 * automata grow past their budget or too many patterns overlap.
 */
export function keyRegions(patterns: readonly Dfa[], declared: readonly string[], names: Dfa | null, additional: boolean): KeyRegion[] {
  const base = names ?? ANY_STRING;
  const out: KeyRegion[] = [];
  const push = (keys: Dfa, idx: number[]): void => {
    // only the declared names this region holds are cut out (a trie of every name in every
    // region made a large object's key automata thousands of states)
    const inside = declared.filter((n) => accepts(keys, n));
    const k = minimize(inside.length > 0 ? difference(keys, stringsDfa(inside)) : keys);
    if (!isEmpty(k)) out.push({ keys: k, patterns: idx });
  };
  const disjoint = patterns.every((a, i) => patterns.every((b, j) => j <= i || isEmpty(intersect(a, b))));
  if (disjoint) {
    patterns.forEach((p, i) => push(intersect(base, p), [i]));
  } else {
    if (patterns.length > MAX_OVERLAPPING) throw new UnsupportedPattern(`more than ${MAX_OVERLAPPING} patternProperties patterns that overlap`);
    for (let mask = 1; mask < 1 << patterns.length; mask++) {
      let keys = base;
      const idx: number[] = [];
      patterns.forEach((p, i) => {
        if (mask & (1 << i)) {
          keys = intersect(keys, p);
          idx.push(i);
        } else keys = difference(keys, p);
      });
      push(keys, idx);
    }
  }
  if (additional) push(patterns.reduce((keys, p) => minimize(difference(keys, p)), base), []);
  return out;
}

/**
 * The language of a string schema (for `propertyNames`): `pattern`, `minLength`/`maxLength`,
 * `format` with a pattern, string `enum`/`const`, `allOf`/`anyOf`/`not` of those and local
 * `$ref`. Null when it has anything else (the caller refuses it).
 */
export function stringSchemaDfa(schema: unknown, refs: RefTable, dotall: boolean, seen: ReadonlySet<string> = new Set()): Dfa | null {
  if (schema === true) return ANY_STRING;
  if (schema === false) return stringsDfa([]);
  if (!isObject(schema)) return null;
  let d = ANY_STRING;
  for (const [k, v] of Object.entries(schema)) {
    let part: Dfa | null;
    switch (k) {
      case "type":
        part = v === "string" || (Array.isArray(v) && v.includes("string")) ? ANY_STRING : stringsDfa([]);
        break;
      case "pattern":
        part = typeof v === "string" ? patternDfa(v, dotall) : null;
        break;
      case "format":
        part = typeof v === "string" && FORMAT_PATTERNS.has(v) ? patternDfa(FORMAT_PATTERNS.get(v)!, false) : null;
        break;
      case "minLength":
      case "maxLength":
        part = typeof v === "number" ? withLength(ANY_STRING, k === "minLength" ? v : 0, k === "maxLength" ? v : Infinity) : null;
        break;
      case "const":
        part = typeof v === "string" ? stringsDfa([v]) : stringsDfa([]);
        break;
      case "enum":
        part = Array.isArray(v) ? stringsDfa(v.filter((x): x is string => typeof x === "string")) : null;
        break;
      case "allOf":
      case "anyOf": {
        const parts = Array.isArray(v) ? v.map((x) => stringSchemaDfa(x, refs, dotall, seen)) : [null];
        part = parts.some((x) => x === null) ? null : parts.reduce((a, b) => (k === "allOf" ? intersect(a!, b!) : union(a!, b!)), k === "allOf" ? ANY_STRING : stringsDfa([]));
        break;
      }
      case "not": {
        const inner = stringSchemaDfa(v, refs, dotall, seen);
        part = inner === null ? null : complement(inner);
        break;
      }
      case "$ref": {
        const target = typeof v === "string" && !seen.has(v) ? refs.get(v) : undefined;
        part = target === undefined ? null : stringSchemaDfa(target.schema, refs, dotall, new Set([...seen, v as string]));
        break;
      }
      default:
        // annotations are fine; any other assertion is not a string constraint handled here
        if (["title", "description", "$comment", "examples", "default", "$id", "$schema", "deprecated"].includes(k)) part = ANY_STRING;
        else return null;
    }
    if (part === null) return null;
    d = minimize(intersect(d, part));
  }
  return d;
}
