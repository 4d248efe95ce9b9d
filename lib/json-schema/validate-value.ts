/**
 * Whether one JSON value is valid against a raw schema (default mode). When a schema's values are
 * enumerated (`const`, `enum`, or an `allOf`/`anyOf` of them), every other keyword beside them
 * can be decided exactly by checking each value, whatever the keyword: `not`, `if`, `oneOf`,
 * `uniqueItems`... so they never need a grammar. The answer is three-valued: `null` when this
 * module cannot decide (a remote ref, a format with no pattern here, a regex JS cannot compile,
 * `unevaluated*`, a float `multipleOf` at the edge of rounding), and the caller then falls back
 * to refusing the keyword. Semantics as ajv's (draft 2020-12, with the draft-4..7 spellings:
 * boolean `exclusiveMinimum`, `items` arrays with `additionalItems`, `dependencies`).
 */
import { jsonDump } from "./literal.js";
import { FORMAT_PATTERNS, UNSUPPORTED_FORMATS } from "./formats.js";
import type { RefTable } from "./refs.js";
import { isObject } from "../json-syntax.js";

type Json = Record<string, unknown>;
const has = (o: Json, k: string): boolean => Object.hasOwn(o, k);

/** Three-valued logic: `null` is "cannot decide". */
export type Verdict = boolean | null;

const and = (a: Verdict, b: () => Verdict): Verdict => (a === false ? false : ((x) => (x === false ? false : a === null || x === null ? null : true))(b()));

/** JSON equality: numbers by value, objects by their members in any order. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => has(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

/** A JSON value's text with object members sorted: equal values (as jsonEqual has it) have equal texts. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (isObject(v)) return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`;
  return JSON.stringify(v) ?? "null";
}

/** The canonical texts of an enum's values, once per enum (a large enum checked value by value was quadratic). */
const enumSets = new WeakMap<unknown[], Set<string>>();
function enumKeys(values: unknown[]): Set<string> {
  let set = enumSets.get(values);
  if (set === undefined) enumSets.set(values, (set = new Set(values.map(canonical))));
  return set;
}

function typeMatches(v: unknown, t: unknown): boolean {
  switch (t) {
    case "null":
      return v === null;
    case "boolean":
      return typeof v === "boolean";
    case "string":
      return typeof v === "string";
    case "number":
      return typeof v === "number";
    case "integer":
      return typeof v === "number" && Number.isInteger(v);
    case "array":
      return Array.isArray(v);
    case "object":
      return isObject(v);
    default:
      return false;
  }
}

/** A pattern as ECMA-262 reads it (the `u` flag where the pattern allows it), or null. */
function regexOf(pattern: string): RegExp | null {
  try {
    return new RegExp(pattern, "u");
  } catch {
    try {
      return new RegExp(pattern);
    } catch {
      return null;
    }
  }
}

/** Keywords whose meaning depends on evaluation state this module does not track. */
const UNDECIDED = ["unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef"];
const MAX_DEPTH = 200;

export class ValueValidator {
  private depth = 0;

  constructor(private readonly refs: RefTable) {}

  /** Verdicts already reached, per schema object and value (the same ref targets are met again and again). */
  private readonly memo = new WeakMap<object, Map<string, Verdict>>();

  /** Whether `v` is valid against `schema` (null: cannot decide). */
  validate(schema: unknown, v: unknown): Verdict {
    if (schema === true) return true;
    if (schema === false) return false;
    if (!isObject(schema)) return null;
    if (this.depth >= MAX_DEPTH) return null; // a $ref cycle that consumes nothing
    let known = this.memo.get(schema);
    const key = canonical(v);
    const hit = known?.get(key);
    if (hit !== undefined) return hit;
    this.depth++;
    try {
      const out = this.check(schema, v);
      if (known === undefined) this.memo.set(schema, (known = new Map()));
      known.set(key, out);
      return out;
    } finally {
      this.depth--;
    }
  }

  private check(s: Json, v: unknown): Verdict {
    let out: Verdict = true;
    for (const k of UNDECIDED) if (has(s, k) && s[k] !== true && !(isObject(s[k]) && Object.keys(s[k] as Json).length === 0)) return null;
    if (has(s, "$ref")) {
      const ref = s["$ref"];
      const target = typeof ref === "string" ? this.refs.get(ref) : undefined;
      if (target === undefined) return null;
      out = this.validate(target.schema, v);
      if (out === false) return false;
    }
    if (has(s, "type")) {
      const t = s["type"];
      if (!(Array.isArray(t) ? t : [t]).some((x) => typeMatches(v, x))) return false;
    }
    if (has(s, "const") && !jsonEqual(s["const"], v)) return false;
    if (Array.isArray(s["enum"]) && !enumKeys(s["enum"]).has(canonical(v))) return false;
    out = and(out, () => this.applicators(s, v));
    if (out === false) return false;
    if (typeof v === "string") out = and(out, () => this.string(s, v));
    else if (typeof v === "number") out = and(out, () => this.number(s, v));
    else if (Array.isArray(v)) out = and(out, () => this.array(s, v));
    else if (isObject(v)) out = and(out, () => this.object(s, v));
    return out;
  }

  private applicators(s: Json, v: unknown): Verdict {
    let out: Verdict = true;
    if (Array.isArray(s["allOf"])) for (const x of s["allOf"]) out = and(out, () => this.validate(x, v));
    if (Array.isArray(s["anyOf"])) {
      const r = s["anyOf"].map((x) => this.validate(x, v));
      out = and(out, () => (r.includes(true) ? true : r.includes(null) ? null : false));
    }
    if (Array.isArray(s["oneOf"])) {
      const r = s["oneOf"].map((x) => this.validate(x, v));
      const yes = r.filter((x) => x === true).length;
      out = and(out, () => (r.includes(null) ? (yes > 1 ? false : null) : yes === 1));
    }
    if (has(s, "not")) {
      const r = this.validate(s["not"], v);
      out = and(out, () => (r === null ? null : !r));
    }
    if (has(s, "if")) {
      const r = this.validate(s["if"], v);
      if (r === null) return null;
      const branch = r ? s["then"] : s["else"];
      if (branch !== undefined) out = and(out, () => this.validate(branch, v));
    }
    return out;
  }

  private string(s: Json, v: string): Verdict {
    const n = [...v].length;
    if (typeof s["minLength"] === "number" && n < s["minLength"]) return false;
    if (typeof s["maxLength"] === "number" && n > s["maxLength"]) return false;
    let out: Verdict = true;
    if (typeof s["pattern"] === "string") {
      const re = regexOf(s["pattern"]);
      if (re === null) out = null;
      else if (!re.test(v)) return false;
    }
    const f = s["format"];
    if (typeof f === "string") {
      const p = FORMAT_PATTERNS.get(f);
      if (p !== undefined) {
        if (!new RegExp(p).test(v)) return false;
      } else if (UNSUPPORTED_FORMATS.has(f)) out = null;
    }
    return out;
  }

  private number(s: Json, v: number): Verdict {
    const lo = s["minimum"];
    const hi = s["maximum"];
    const exLo = s["exclusiveMinimum"];
    const exHi = s["exclusiveMaximum"];
    if (typeof lo === "number" && (exLo === true ? v <= lo : v < lo)) return false;
    if (typeof hi === "number" && (exHi === true ? v >= hi : v > hi)) return false;
    if (typeof exLo === "number" && v <= exLo) return false;
    if (typeof exHi === "number" && v >= exHi) return false;
    const m = s["multipleOf"];
    if (typeof m === "number" && m > 0) {
      const q = v / m;
      if (!Number.isInteger(q)) return Math.abs(Math.round(q) - q) < 1e-9 ? null : false;
    }
    return true;
  }

  private array(s: Json, v: unknown[]): Verdict {
    if (typeof s["minItems"] === "number" && v.length < s["minItems"]) return false;
    if (typeof s["maxItems"] === "number" && v.length > s["maxItems"]) return false;
    if (s["uniqueItems"] === true) {
      for (let i = 0; i < v.length; i++) for (let j = i + 1; j < v.length; j++) if (jsonEqual(v[i], v[j])) return false;
    }
    let out: Verdict = true;
    // positional items: 2020-12 prefixItems + items, or draft-4..2019 items array + additionalItems
    let prefix: unknown[] = [];
    let rest: unknown = undefined;
    if (Array.isArray(s["prefixItems"])) {
      prefix = s["prefixItems"];
      rest = s["items"];
    } else if (Array.isArray(s["items"])) {
      prefix = s["items"];
      rest = s["additionalItems"];
    } else rest = s["items"];
    for (let i = 0; i < v.length && out !== false; i++) {
      const sub = i < prefix.length ? prefix[i] : rest;
      if (sub !== undefined) out = and(out, () => this.validate(sub, v[i]));
    }
    if (has(s, "contains")) {
      const r = v.map((x) => this.validate(s["contains"], x));
      const yes = r.filter((x) => x === true).length;
      const maybe = r.filter((x) => x === null).length;
      const min = typeof s["minContains"] === "number" ? s["minContains"] : 1;
      const max = typeof s["maxContains"] === "number" ? s["maxContains"] : Infinity;
      if (yes + maybe < min || yes > max) return false;
      if (maybe > 0) out = and(out, () => null);
    }
    return out;
  }

  private object(s: Json, v: Json): Verdict {
    const keys = Object.keys(v);
    if (typeof s["minProperties"] === "number" && keys.length < s["minProperties"]) return false;
    if (typeof s["maxProperties"] === "number" && keys.length > s["maxProperties"]) return false;
    if (Array.isArray(s["required"]) && !s["required"].every((k) => typeof k === "string" && has(v, k))) return false;
    let out: Verdict = true;
    const props = isObject(s["properties"]) ? s["properties"] : {};
    const patterns = isObject(s["patternProperties"]) ? Object.entries(s["patternProperties"]).map(([p, x]) => [regexOf(p), x] as const) : [];
    for (const k of keys) {
      let matched = false;
      if (has(props, k)) {
        matched = true;
        out = and(out, () => this.validate(props[k], v[k]));
      }
      for (const [re, sub] of patterns) {
        if (re === null) return null;
        if (re.test(k)) {
          matched = true;
          out = and(out, () => this.validate(sub, v[k]));
        }
      }
      if (!matched && has(s, "additionalProperties")) out = and(out, () => this.validate(s["additionalProperties"], v[k]));
      if (has(s, "propertyNames")) out = and(out, () => this.validate(s["propertyNames"], k));
      if (out === false) return false;
    }
    const deps: Array<[string, unknown]> = [];
    for (const key of ["dependencies", "dependentRequired", "dependentSchemas"]) if (isObject(s[key])) deps.push(...Object.entries(s[key] as Json));
    for (const [k, d] of deps) {
      if (!has(v, k)) continue;
      if (Array.isArray(d)) {
        if (!d.every((x) => typeof x === "string" && has(v, x))) return false;
      } else out = and(out, () => this.validate(d, v));
    }
    return out;
  }
}

/**
 * The values a schema enumerates (its `const`/`enum`, through `$ref` and `allOf`, or every
 * alternative's values for `anyOf`/`oneOf`), or null when it does not bound them to a list.
 * Equal values (1 and 1.0) are listed once.
 */
export function enumeratedValues(schema: unknown, refs: RefTable, seen: ReadonlySet<string> = new Set()): unknown[] | null {
  if (!isObject(schema)) return null;
  let found: unknown[] | null = null;
  if (has(schema, "const")) found = [schema["const"]];
  else if (Array.isArray(schema["enum"])) found = schema["enum"];
  if (found === null && typeof schema["$ref"] === "string" && !seen.has(schema["$ref"])) {
    const target = refs.get(schema["$ref"]);
    if (target !== undefined) found = enumeratedValues(target.schema, refs, new Set([...seen, schema["$ref"]]));
  }
  if (found === null && Array.isArray(schema["allOf"])) {
    for (const part of schema["allOf"]) {
      found = enumeratedValues(part, refs, seen);
      if (found !== null) break;
    }
  }
  for (const key of ["anyOf", "oneOf"]) {
    if (found !== null || !Array.isArray(schema[key]) || schema[key].length === 0) continue;
    const all = (schema[key] as unknown[]).map((alt) => enumeratedValues(alt, refs, seen));
    if (all.every((x) => x !== null)) found = all.flat();
  }
  if (found === null) return null;
  const keys = new Set<string>();
  return found.filter((x) => {
    const k = jsonDump(x);
    if (keys.has(k)) return false;
    keys.add(k);
    return true;
  });
}
