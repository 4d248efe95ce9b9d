/**
 * `not` for the default mode, one JSON type at a time: `rest ∧ ¬n` becomes alternatives (their
 * union) that need no `not`. For each type the rest admits: a type `n` excludes stays whole; a type
 * `n` admits whole (no keyword of `n` constrains it) is dropped; otherwise the complement is taken
 * where it has a shape here: strings by automaton (`n`'s pattern, format, lengths and listed
 * strings; the caller subtracts the DFA), numbers by the bounds' other side, objects by the keys
 * `n` requires (forbidden one by one) or the properties it constrains (one present with its value
 * in `not`), arrays and objects by the counts' other side, booleans and null by the values left,
 * numbers that are not integers (`not {type: integer}`) by a fraction digit that is not 0. `n` built of `allOf`/`anyOf`/`not` is taken apart by De
 * Morgan. Null when a part has no such shape (the caller refuses `not`). No reference
 * counterpart (llama.cpp drops `not`).
 */
import { ASSERTION_KEYWORDS, constrains, isVacuous, valueHasType, type JsonType } from "./keywords.js";
import { EXCLUDED_STRINGS, FORBIDDEN, NON_INTEGER } from "./markers.js";
import { mergeSchemas } from "./merge.js";
import { stringsDfa, union, type Dfa } from "./regex-dfa.js";
import type { Verdict } from "./validate-value.js";
import { isObject } from "../json-syntax.js";

type Json = Record<string, unknown>;
const has = (o: Json, k: string): boolean => Object.hasOwn(o, k);

const TYPES: JsonType[] = ["string", "number", "integer", "boolean", "null", "array", "object"];
const BOUNDS = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];
const STRING_WORDS = ["pattern", "format", "minLength", "maxLength"];
const COUNTS: Record<"array" | "object", string[]> = { array: ["minItems", "maxItems"], object: ["minProperties", "maxProperties"] };
const APPLICATORS = ["allOf", "anyOf", "oneOf", "not", "if", "then", "else", "$ref", "$dynamicRef", "$recursiveRef"];

export interface ComplementContext {
  /** The schema with its top `$ref` replaced by the target (recursive refs stay). */
  inlined(s: unknown): unknown;
  /** The strings a schema of string keywords admits, or null past the automata. */
  stringDfa(s: Json): Dfa | null;
  validate(schema: unknown, v: unknown): Verdict;
}

/** The types `s` admits by its `type` (all when it has none), `integer` listed apart from `number`. */
function typesOf(s: Json): JsonType[] {
  const t = s["type"];
  if (t === undefined) return TYPES;
  const list = (Array.isArray(t) ? t : [t]) as JsonType[];
  return TYPES.filter((x) => list.includes(x) || (x === "integer" && list.includes("number")));
}

/** `rest ∧ ¬n` as alternatives, or null. */
export function withoutNot(rest: Json, nRaw: unknown, ctx: ComplementContext, depth = 0): Json[] | null {
  if (depth > 8) return null;
  const n = ctx.inlined(nRaw);
  if (n === true) return [];
  if (n === false) return [rest];
  if (!isObject(n)) return null;
  if (has(n, "$ref") || has(n, "oneOf") || has(n, "if") || has(n, "$dynamicRef") || has(n, "$recursiveRef")) return null;
  const own: Json = Object.fromEntries(Object.entries(n).filter(([k]) => k !== "allOf" && k !== "anyOf" && k !== "not"));
  const out: Json[] = [];
  // ¬(own ∧ allOf ∧ anyOf ∧ ¬m) = ¬own ∨ ¬part... ∨ (¬a ∧ ¬b ...) ∨ m
  const ownOut = flat(rest, own, ctx);
  if (ownOut === null) return null;
  out.push(...ownOut);
  if (Array.isArray(n["allOf"])) {
    for (const part of n["allOf"]) {
      const r = withoutNot(rest, part, ctx, depth + 1);
      if (r === null) return null;
      out.push(...r);
    }
  }
  if (Array.isArray(n["anyOf"])) {
    let acc: Json[] = [rest];
    for (const alt of n["anyOf"]) {
      const next: Json[] = [];
      for (const a of acc) {
        const r = withoutNot(a, alt, ctx, depth + 1);
        if (r === null) return null;
        next.push(...r);
      }
      acc = next;
    }
    out.push(...acc);
  }
  if (has(n, "not")) out.push({ allOf: [rest, n["not"]] });
  return out;
}

/** `rest ∧ ¬n` for `n` without applicators, type by type. */
function flat(rest: Json, n: Json, ctx: ComplementContext): Json[] | null {
  const words = Object.keys(n).filter((k) => ASSERTION_KEYWORDS.includes(k) && !isVacuous(k, n[k]));
  if (words.some((k) => APPLICATORS.includes(k))) return null;
  // n = {} admits everything: nothing is left
  if (words.length === 0) return [];
  const nTypes = typesOf(n);
  const out: Json[] = [];
  for (const t of typesOf(rest)) {
    // `integer` is within `number`: the rest's numbers are handled once, as `number` or `integer`
    if (t === "integer" && typesOf(rest).includes("number")) continue;
    const typed = (extra: Json = {}): Json => ({ ...rest, ...extra, type: t });
    if (!nTypes.includes(t)) {
      // n admits no value of t... unless t is number and n admits integers: the non-integers
      if (t === "number" && nTypes.includes("integer")) {
        out.push(typed({ [NON_INTEGER]: true }));
        continue;
      }
      out.push(typed());
      continue;
    }
    const own = words.filter((k) => k !== "type" && constrains(k, new Set([t])));
    if (own.length === 0) continue; // n admits every value of t
    const listed = has(n, "const") ? [n["const"]] : Array.isArray(n["enum"]) ? (n["enum"] as unknown[]) : null;
    if (listed !== null) {
      // n's values of type t: t minus those
      const values = listed.filter((v) => valueHasType(v, t));
      const kept: unknown[] = [];
      for (const v of values) {
        const ok = ctx.validate(n, v);
        if (ok === null) return null;
        if (ok) kept.push(v);
      }
      if (kept.length === 0) out.push(typed());
      else if (t === "string") out.push(typed({ [EXCLUDED_STRINGS]: excluded(rest, stringsDfa(kept as string[])) }));
      else if (t === "boolean") {
        const left = [true, false].filter((b) => !kept.includes(b));
        if (left.length > 0) out.push(typed({ const: left[0] }));
      } else if (t !== "null") return null;
      continue;
    }
    if (t === "string" && own.every((k) => STRING_WORDS.includes(k))) {
      const lang = ctx.stringDfa(Object.fromEntries(own.map((k) => [k, n[k]])));
      if (lang === null) return null;
      out.push(typed({ [EXCLUDED_STRINGS]: excluded(rest, lang) }));
    } else if ((t === "number" || t === "integer") && own.every((k) => BOUNDS.includes(k))) {
      if (own.some((k) => typeof n[k] !== "number")) return null; // draft-4 boolean exclusives
      // below n's lower bound, or above its upper one
      const lo = lower(n);
      const hi = upper(n);
      const side = (extra: Json): void => {
        const b = mergeSchemas(typed(), extra) as Json;
        const l = lower(b);
        const h = upper(b);
        // a side the rest's own bounds leave empty is no alternative
        if (l !== null && h !== null && (l.v > h.v || (l.v === h.v && (l.ex || h.ex)))) return;
        out.push(b);
      };
      if (lo !== null) side(lo.ex ? { maximum: lo.v } : { exclusiveMaximum: lo.v });
      if (hi !== null) side(hi.ex ? { minimum: hi.v } : { exclusiveMinimum: hi.v });
    } else if (t === "object" && own.every((k) => k === "required" || k === "properties") && (n["properties"] === undefined || isObject(n["properties"]))) {
      // n = required keys and property schemas: some required key absent (the first one absent,
      // the ones before it present), or some property present with a value its schema rejects
      const keys = Array.isArray(n["required"]) ? (n["required"] as unknown[]).filter((k): k is string => typeof k === "string") : [];
      const req = Array.isArray(rest["required"]) ? (rest["required"] as string[]) : [];
      const prior = ((rest as Record<symbol, unknown>)[FORBIDDEN] as string[] | undefined) ?? [];
      keys.forEach((k, i) => {
        if (!req.includes(k)) out.push(typed({ required: [...new Set([...req, ...keys.slice(0, i)])], [FORBIDDEN]: [...prior, k] }));
      });
      const props = isObject(rest["properties"]) ? rest["properties"] : {};
      for (const [k, sub] of Object.entries(isObject(n["properties"]) ? n["properties"] : {})) {
        if (prior.includes(k)) continue;
        out.push(typed({ required: [...new Set([...req, k])], properties: { ...props, [k]: { allOf: [has(props, k) ? props[k] : true, { not: sub }] } } }));
      }
    } else if ((t === "array" || t === "object") && own.every((k) => COUNTS[t].includes(k))) {
      // fewer items (members) than n's minimum, or more than its maximum
      const [minKey, maxKey] = COUNTS[t];
      const lo = typeof n[minKey!] === "number" ? (n[minKey!] as number) : 0;
      const hi = typeof n[maxKey!] === "number" ? (n[maxKey!] as number) : Infinity;
      const side = (extra: Json): void => {
        const b = mergeSchemas(typed(), extra) as Json;
        // a side the rest's own counts leave empty is no alternative
        if ((typeof b[minKey!] === "number" ? (b[minKey!] as number) : 0) <= (typeof b[maxKey!] === "number" ? (b[maxKey!] as number) : Infinity)) out.push(b);
      };
      if (lo > 0) side({ [maxKey!]: lo - 1 });
      if (hi !== Infinity) side({ [minKey!]: hi + 1 });
    } else return null;
  }
  return out;
}

/** The strings already excluded from `rest` and `more`. */
function excluded(rest: Json, more: Dfa): Dfa {
  const prior = (rest as Record<symbol, unknown>)[EXCLUDED_STRINGS] as Dfa | undefined;
  return prior === undefined ? more : union(prior, more);
}

function lower(n: Json): { v: number; ex: boolean } | null {
  const m = typeof n["minimum"] === "number" ? (n["minimum"] as number) : null;
  const x = typeof n["exclusiveMinimum"] === "number" ? (n["exclusiveMinimum"] as number) : null;
  if (m === null && x === null) return null;
  if (x !== null && (m === null || x >= m)) return { v: x, ex: true };
  return { v: m!, ex: false };
}

function upper(n: Json): { v: number; ex: boolean } | null {
  const m = typeof n["maximum"] === "number" ? (n["maximum"] as number) : null;
  const x = typeof n["exclusiveMaximum"] === "number" ? (n["exclusiveMaximum"] as number) : null;
  if (m === null && x === null) return null;
  if (x !== null && (m === null || x <= m)) return { v: x, ex: true };
  return { v: m!, ex: false };
}
