/**
 * Intersection of two raw schemas for the default mode: what `allOf`, and keywords written next
 * to `$ref` / `anyOf` / `oneOf`, mean. Each keyword merges by its own rule (types intersect,
 * bounds tighten, `required` unites, `properties` merge per name, enums intersect); a pair that
 * has no merge here is a {@link MergeConflict} naming the keyword, which the normalizer reports
 * (never a silent loss of one side). No reference counterpart (llama.cpp merges `allOf` object
 * properties only).
 */
import { ASSERTION_KEYWORDS } from "./keywords.js";
import { jsonDump } from "./literal.js";
import { isObject } from "../json-syntax.js";

type Json = Record<string, unknown>;

export class MergeConflict extends Error {
  /** `empty`: the two sides have no value in common (not a merge this module lacks). */
  constructor(
    readonly keyword: string,
    message: string,
    readonly empty = false,
  ) {
    super(message);
  }
}

const MAXES = new Set(["minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains"]);
const MINS = new Set(["maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains"]);
/** Keywords that say nothing about validity: the first side's value is kept. */
const ANNOTATIONS = new Set([
  "title",
  "description",
  "default",
  "examples",
  "example",
  "$comment",
  "$schema",
  "$id",
  "id",
  "deprecated",
  "readOnly",
  "writeOnly",
  "$defs",
  "definitions",
  "markdownDescription",
  "x-nullable",
]);

function typeList(t: unknown): string[] {
  return Array.isArray(t) ? (t as string[]) : [t as string];
}

function mergeTypes(a: unknown, b: unknown): unknown {
  const bs = typeList(b);
  const out: string[] = [];
  for (const t of typeList(a)) {
    if (bs.includes(t)) out.push(t);
    else if (t === "integer" && bs.includes("number")) out.push("integer");
    else if (t === "number" && bs.includes("integer")) out.push("integer");
  }
  const uniq = [...new Set(out)];
  if (uniq.length === 0) throw new MergeConflict("type", `the types ${jsonDump(a)} and ${jsonDump(b)} have nothing in common`, true);
  return uniq.length === 1 ? uniq[0] : uniq;
}

/** Most alternatives two `anyOf`s merge into (their product). */
const MAX_ANYOF_PRODUCT = 64;

/**
 * `if`/`then`/`else` as alternatives, (if ∧ then) ∨ (¬if ∧ else), inside an `allOf` so that an
 * `anyOf` already there is kept; for merging two schemas that both have `if`.
 */
export function ifAsAlternatives(s: Json): Json {
  const { if: cond, then: yes, else: no, ...rest } = s;
  if (cond === undefined || (yes === undefined && no === undefined)) return rest;
  const alts = yes === undefined ? [cond, no] : no === undefined ? [{ not: cond }, yes] : [{ allOf: [cond, yes] }, { allOf: [no, { not: cond }] }];
  return { ...rest, allOf: [...(Array.isArray(rest["allOf"]) ? rest["allOf"] : []), { anyOf: alts }] };
}

/** The schema `a ∧ b` (both raw, refs not resolved here). */
export function mergeSchemas(a: unknown, b: unknown): unknown {
  if (a === true || (isObject(a) && Object.keys(a).length === 0)) return b;
  if (b === true || (isObject(b) && Object.keys(b).length === 0)) return a;
  if (a === false || b === false) throw new MergeConflict("false", "a false schema accepts nothing", true);
  if (!isObject(a) || !isObject(b)) throw new MergeConflict("allOf", "a component that is not a schema");
  // two conditionals: each as its alternatives
  if (Object.hasOwn(a, "if") && Object.hasOwn(b, "if")) return mergeSchemas(ifAsAlternatives(a), ifAsAlternatives(b));
  const out: Json = { ...a };
  for (const [k, bv] of Object.entries(b)) {
    if (!Object.hasOwn(out, k)) {
      out[k] = bv;
      continue;
    }
    const av = out[k];
    if (jsonDump(av) === jsonDump(bv)) continue;
    // annotations, and keywords no validator knows (`_id`, `x-...`, `javaInterfaces`): the first side's value
    if (ANNOTATIONS.has(k) || (!ASSERTION_KEYWORDS.includes(k) && k !== "format" && k !== "nullable")) continue;
    if (MAXES.has(k) && typeof av === "number" && typeof bv === "number") out[k] = Math.max(av, bv);
    else if (MINS.has(k) && typeof av === "number" && typeof bv === "number") out[k] = Math.min(av, bv);
    else if (k === "type") out[k] = mergeTypes(av, bv);
    else if (k === "required" && Array.isArray(av) && Array.isArray(bv)) out[k] = [...new Set([...av, ...bv])];
    else if (k === "enum" && Array.isArray(av) && Array.isArray(bv)) {
      const keep = new Set(bv.map(jsonDump));
      out[k] = av.filter((v) => keep.has(jsonDump(v)));
    } else if (k === "properties" && isObject(av) && isObject(bv)) {
      const props: Json = { ...av };
      for (const [name, s] of Object.entries(bv)) props[name] = Object.hasOwn(props, name) ? { allOf: [props[name], s] } : s;
      out[k] = props;
    } else if ((k === "items" || k === "additionalProperties" || k === "propertyNames" || k === "additionalItems") && !Array.isArray(av) && !Array.isArray(bv)) {
      out[k] = { allOf: [av, bv] };
    } else if (k === "allOf" && Array.isArray(av) && Array.isArray(bv)) out[k] = [...av, ...bv];
    else if (k === "uniqueItems") out[k] = av === true || bv === true;
    // ¬a ∧ ¬b = ¬(a ∨ b)
    else if (k === "not") out[k] = { anyOf: [av, bv] };
    // (a1 ∨ a2) ∧ (b1 ∨ b2) = every pair
    else if (k === "anyOf" && Array.isArray(av) && Array.isArray(bv) && av.length * bv.length <= MAX_ANYOF_PRODUCT) out[k] = av.flatMap((x) => bv.map((y) => ({ allOf: [x, y] })));
    else throw new MergeConflict(k, `two different values of ${JSON.stringify(k)} cannot be merged`);
  }
  // additionalProperties is relative to its own schema's properties: a property only the other
  // side declares is one of its additional properties, so its schema joins that property's
  for (const [x, y] of [
    [a, b],
    [b, a],
  ] as const) {
    if (Object.hasOwn(x, "additionalProperties") && x["additionalProperties"] !== true && isObject(y["properties"])) {
      const own = isObject(x["properties"]) ? x["properties"] : {};
      const extra = Object.keys(y["properties"]).filter((n) => !Object.hasOwn(own, n));
      if (extra.length === 0) continue;
      // (with patterns on either side, which keys are "additional" depends on them)
      if (Object.hasOwn(x, "patternProperties") || Object.hasOwn(y, "patternProperties")) {
        throw new MergeConflict("additionalProperties", "additionalProperties merged with properties declared in another allOf component beside patternProperties");
      }
      const props = { ...(out["properties"] as Json) };
      for (const n of extra) props[n] = { allOf: [props[n], x["additionalProperties"]] };
      out["properties"] = props;
    }
  }
  if (Object.hasOwn(out, "const") && Object.hasOwn(out, "enum") && Array.isArray(out["enum"])) {
    if (!out["enum"].some((v) => jsonDump(v) === jsonDump(out["const"]))) throw new MergeConflict("const", "const is not among the enum values", true);
  }
  return out;
}
