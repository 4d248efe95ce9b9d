/**
 * `oneOf` in the default mode: alternatives no value matches twice, so that their union (what a
 * grammar can say) is exactly "exactly one". In turn: alternatives proven pairwise disjoint
 * (disjoint.ts); the types two alternatives admit whole (no keyword of theirs constrains them)
 * taken out of all, since each such value matches both; string alternatives as one automaton of
 * the strings in exactly one; object alternatives split by which keys are present. Null when
 * none of these applies (the caller refuses the oneOf); an empty list when no value is valid.
 * No reference counterpart (llama.cpp treats oneOf as anyOf).
 */
import type { Disjointness } from "./disjoint.js";
import { stringSchemaDfa } from "./key-regions.js";
import { ASSERTION_KEYWORDS, constrains, isVacuous, type JsonType } from "./keywords.js";
import { jsonDump } from "./literal.js";
import { STRING_DFA } from "./markers.js";
import { MergeConflict, mergeSchemas } from "./merge.js";
import { InvalidPattern, UnsupportedPattern } from "./pattern.js";
import { difference, minimize, stringsDfa, union } from "./regex-dfa.js";
import type { RefTable } from "./refs.js";
import { enumeratedValues } from "./validate-value.js";
import { isObject } from "../json-syntax.js";

type Json = Record<string, unknown>;

const ALL_TYPES: JsonType[] = ["string", "number", "boolean", "null", "array", "object"];
const OBJECT_WORDS = ["properties", "required", "additionalProperties", "patternProperties", "propertyNames", "minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "dependencies", "unevaluatedProperties"];
/** Most keys an object split may name (2^n choices of present keys), and most branches it may make. */
const MAX_SPLIT_KEYS = 5;
const MAX_SPLIT_BRANCHES = 64;
/** Keywords of branches that may be negated into the split (complement.ts takes `not` of these). */
const SIMPLE_OBJECT_WORDS = new Set(["type", "properties", "required"]);

export interface OneOfContext {
  readonly refs: RefTable;
  readonly dotall: boolean;
  readonly disjointness: Disjointness;
  /** The schema with its top `$ref` replaced by the target, or null when that cannot be done. */
  inlined(s: Json): unknown;
}

export class OneOfSplitter {
  constructor(private readonly ctx: OneOfContext) {}
  /**
   * `oneOf` as alternatives no value matches twice (their union is then exact), or null. In
   * turn: the alternatives proven pairwise disjoint; the types two alternatives admit whole (no
   * keyword of theirs constrains them) taken out of all, since each such value matches both,
   * then proven disjoint; split by the keys present (presenceSplit).
   */
  exclusiveAlternatives(alts: unknown[]): unknown[] | null {
    const disjoint = (xs: unknown[]): boolean => xs.every((x, i) => xs.every((y, j) => j <= i || this.ctx.disjointness.disjoint(x, y)));
    if (disjoint(alts)) return alts;
    const flat = alts.map((a) => (isObject(a) ? this.ctx.inlined(a) : a === true ? {} : null));
    if (!flat.every(isObject)) return null;
    const objs = flat as Json[];
    const whole = (o: Json, t: string): boolean => {
      const ty = o["type"];
      if (ty !== undefined && !(Array.isArray(ty) ? ty : [ty]).includes(t)) return false;
      return !Object.keys(o).some((k) => k !== "type" && ASSERTION_KEYWORDS.includes(k) && !isVacuous(k, o[k]) && constrains(k, new Set([t as JsonType])));
    };
    const excluded = ALL_TYPES.filter((t) => objs.filter((o) => whole(o, t)).length >= 2);
    let narrowed = objs;
    if (excluded.length > 0) {
      const allowed = ALL_TYPES.filter((t) => !excluded.includes(t));
      if (allowed.length === 0) return [];
      if (!excluded.includes("number")) allowed.push("integer");
      narrowed = [];
      for (const o of objs) {
        try {
          narrowed.push(mergeSchemas(o, { type: allowed }) as Json);
        } catch (e) {
          if (!(e instanceof MergeConflict)) throw e;
          // an alternative left with no type admits nothing: dropped
        }
      }
      if (narrowed.length <= 1 || disjoint(narrowed)) return narrowed;
    }
    return this.exactlyOneString(narrowed) ?? this.presenceSplit(narrowed);
  }

  /**
   * Alternatives that admit strings only, each a language the automata take (key-regions.ts's
   * stringSchemaDfa): the strings in exactly one of them, as one DFA. Null otherwise.
   */
  private exactlyOneString(alts: Json[]): Json[] | null {
    if (!alts.every((a) => a["type"] === "string" || (Array.isArray(a["type"]) && a["type"].length === 1 && a["type"][0] === "string"))) return null;
    try {
      const dfas = alts.map((a) => stringSchemaDfa(a, this.ctx.refs, this.ctx.dotall));
      if (dfas.some((d) => d === null)) return null;
      let out = stringsDfa([]);
      dfas.forEach((d, i) => {
        let only = d!;
        dfas.forEach((e, j) => {
          if (j !== i) only = minimize(difference(only, e!));
        });
        out = minimize(union(out, only));
      });
      return [{ [STRING_DFA]: out }];
    } catch (e) {
      if (e instanceof UnsupportedPattern || e instanceof InvalidPattern) return null;
      throw e;
    }
  }

  /**
   * `oneOf` over objects, split by which keys are present: the keys any alternative requires,
   * and those some alternative tags with listed values. For each choice of present keys (the
   * others absent), an alternative that requires an absent key is out; the ones left, each with
   * those keys required and the others forbidden, must be pairwise disjoint (disjoint.ts), or all
   * the same schema (then every such object matches several: none is valid). The branches are
   * disjoint, so their union is exact, and a value that is no object matches every alternative
   * (they constrain objects only), so none is valid. Null when that does not hold or too many keys
   * are named; an empty list when no value is valid.
   */
  private presenceSplit(alts: unknown[]): Json[] | null {
    const flat = alts.map((a) => (isObject(a) ? this.ctx.inlined(a) : null));
    if (!flat.every(isObject)) return null;
    const objs = flat as Json[];
    // what the alternatives say beyond objects must be the same in all (then a value that is no
    // object matches all of them or none: either way it is not valid)
    const beyond = (o: Json): string => jsonDump(Object.fromEntries(Object.entries(o).filter(([k]) => ASSERTION_KEYWORDS.includes(k) && !OBJECT_WORDS.includes(k))));
    if (!objs.every((o) => beyond(o) === beyond(objs[0]!))) return null;
    const t0 = objs[0]!["type"];
    if (t0 !== undefined && !(Array.isArray(t0) ? t0 : [t0]).includes("object")) return null;
    const req = (o: Json): string[] => (Array.isArray(o["required"]) ? (o["required"] as unknown[]).filter((k): k is string => typeof k === "string") : []);
    const props = (o: Json): Json => (isObject(o["properties"]) ? o["properties"] : {});
    const common = req(objs[0]!).filter((k) => objs.every((o) => req(o).includes(k)));
    const named = new Set<string>();
    for (const o of objs) {
      for (const k of req(o)) named.add(k);
      for (const [k, p] of Object.entries(props(o))) if (enumeratedValues(p, this.ctx.refs) !== null) named.add(k);
    }
    const keys = [...named].filter((k) => !common.includes(k));
    if (keys.length > MAX_SPLIT_KEYS) return null;
    const out: Json[] = [];
    for (let mask = 0; mask < 1 << keys.length; mask++) {
      const present = keys.filter((_, i) => mask & (1 << i));
      const absent = keys.filter((k) => !present.includes(k));
      const live = objs
        .filter((o) => !req(o).some((k) => absent.includes(k)))
        .map((o) => ({
          ...o,
          type: "object",
          required: [...new Set([...req(o), ...common, ...present])].sort(),
          properties: { ...props(o), ...Object.fromEntries(absent.map((k) => [k, false])) },
        }));
      if (live.length <= 1) {
        out.push(...live);
        continue;
      }
      if (live.every((x, i) => live.every((y, j) => j <= i || this.ctx.disjointness.disjoint(x, y)))) out.push(...live);
      else if (live.every((x) => jsonDump(x) === jsonDump(live[0]))) continue;
      else if (live.every((x) => Object.keys(x).every((k) => SIMPLE_OBJECT_WORDS.has(k) || !ASSERTION_KEYWORDS.includes(k)))) {
        // the same keys present in several: each one with the others' negations (complement.ts
        // takes `not` of required keys and properties), so exactly one holds
        live.forEach((x, i) => out.push({ allOf: [x, ...live.filter((_, j) => j !== i).map((y) => ({ not: y }))] }));
      } else return null;
      if (out.length > MAX_SPLIT_BRANCHES) return null;
    }
    return out;
  }

}
