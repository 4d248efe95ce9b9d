/**
 * A proof that no value is valid against two raw schemas at once (default mode), so that a
 * `oneOf` of pairwise disjoint alternatives is exactly their `anyOf`. It is sound, not complete:
 * `false` means "not proven", and the caller then refuses the `oneOf` (or splits it by required
 * keys, normalize-default.ts). The reasons it knows: different types; listed values (`const`,
 * `enum`) each rejected by the other side (validate-value.ts decides); a key one side requires
 * whose values the other side cannot take (a different tag, `additionalProperties: false`);
 * string languages that do not intersect (patterns and formats as DFAs); number ranges apart.
 * No reference counterpart (llama.cpp treats oneOf as anyOf).
 */
import { FORMAT_PATTERNS } from "./formats.js";
import { UnsupportedPattern, InvalidPattern } from "./pattern.js";
import { stringSchemaDfa } from "./key-regions.js";
import { intersect, isEmpty, type Dfa } from "./regex-dfa.js";
import type { RefTable } from "./refs.js";
import { enumeratedValues, type ValueValidator } from "./validate-value.js";
import { isObject } from "../json-syntax.js";

type Json = Record<string, unknown>;
const has = (o: Json, k: string): boolean => Object.hasOwn(o, k);

const TYPES = ["null", "boolean", "string", "number", "array", "object"] as const;
type Family = (typeof TYPES)[number];
const MAX_DEPTH = 12;

export class Disjointness {
  constructor(
    private readonly refs: RefTable,
    private readonly values: ValueValidator,
    private readonly dotall: boolean,
  ) {}

  /** True when no value can be valid against both `a` and `b`. */
  disjoint(a: unknown, b: unknown, depth = 0): boolean {
    if (a === false || b === false) return true;
    if (!isObject(a) || !isObject(b) || depth > MAX_DEPTH) return false;
    // listed values: each one rejected by the other side
    for (const [x, y] of [
      [a, b],
      [b, a],
    ] as const) {
      const listed = enumeratedValues(x, this.refs);
      if (listed !== null && listed.every((v) => this.values.validate(y, v) === false)) return true;
    }
    // a schema is inside each of its parts ($ref target, allOf components): one disjoint part is enough
    for (const [x, y] of [
      [a, b],
      [b, a],
    ] as const) {
      for (const part of this.parts(x)) if (this.disjoint(part, y, depth + 1)) return true;
      // and inside the union of its alternatives: all of them disjoint
      for (const key of ["anyOf", "oneOf"]) {
        const alts = x[key];
        if (Array.isArray(alts) && alts.length > 0 && alts.every((alt) => this.disjoint(alt, y, depth + 1))) return true;
      }
    }
    const ta = this.families(a);
    const tb = this.families(b);
    const common = TYPES.filter((t) => ta.has(t) && tb.has(t));
    return common.every((t) => this.disjointAs(t, a, b, depth));
  }

  private parts(s: Json): unknown[] {
    const out: unknown[] = [];
    if (typeof s["$ref"] === "string") {
      const t = this.refs.get(s["$ref"]);
      if (t !== undefined) out.push(t.schema);
    }
    if (Array.isArray(s["allOf"])) out.push(...s["allOf"]);
    return out;
  }

  /** The JSON types `s` itself admits (its `type`; all when it has none). */
  private families(s: Json): Set<Family> {
    const t = s["type"];
    if (t === undefined) return new Set(TYPES);
    const list = (Array.isArray(t) ? t : [t]).map((x) => (x === "integer" ? "number" : x));
    return new Set(TYPES.filter((f) => list.includes(f)));
  }

  private disjointAs(t: Family, a: Json, b: Json, depth: number): boolean {
    switch (t) {
      case "object":
        return this.objectsDisjoint(a, b, depth) || this.objectsDisjoint(b, a, depth);
      case "string":
        return this.stringsDisjoint(a, b);
      case "number":
        return this.rangesDisjoint(a, b);
      default:
        return false;
    }
  }

  /** A key `a` requires that `b` cannot have, or whose values the two sides never share. */
  private objectsDisjoint(a: Json, b: Json, depth: number): boolean {
    const required = Array.isArray(a["required"]) ? (a["required"] as unknown[]).filter((k): k is string => typeof k === "string") : [];
    const props = (s: Json): Json => (isObject(s["properties"]) ? s["properties"] : {});
    for (const k of required) {
      const sa = has(props(a), k) ? props(a)[k] : true;
      let sb: unknown;
      if (has(props(b), k)) sb = props(b)[k];
      else if (isObject(b["patternProperties"]) && Object.keys(b["patternProperties"]).length > 0) continue;
      else sb = has(b, "additionalProperties") ? b["additionalProperties"] : true;
      if (sb === false || this.disjoint(sa, sb, depth + 1)) return true;
    }
    return false;
  }

  private stringsDisjoint(a: Json, b: Json): boolean {
    const len = (s: Json): [number, number] => [typeof s["minLength"] === "number" ? s["minLength"] : 0, typeof s["maxLength"] === "number" ? s["maxLength"] : Infinity];
    const [la, ha] = len(a);
    const [lb, hb] = len(b);
    if (ha < lb || hb < la) return true;
    const da = this.language(a);
    const db = this.language(b);
    return da !== null && db !== null && isEmpty(intersect(da, db));
  }

  /**
   * The strings a schema admits, as a DFA (its string keywords only: key-regions.ts's
   * stringSchemaDfa on them), or null when they are beyond the automata.
   */
  private language(s: Json): Dfa | null {
    if (this.languages.has(s)) return this.languages.get(s)!;
    const d = this.computeLanguage(s);
    this.languages.set(s, d);
    return d;
  }

  /** Each schema's language once (a oneOf of n branches compares n^2 pairs). */
  private readonly languages = new WeakMap<Json, Dfa | null>();

  private computeLanguage(s: Json): Dfa | null {
    const words = Object.fromEntries(Object.entries(s).filter(([k]) => ["pattern", "format", "minLength", "maxLength", "enum", "const"].includes(k) && !(k === "format" && !FORMAT_PATTERNS.has(String(s[k])))));
    if (Object.keys(words).length === 0) return null;
    try {
      return stringSchemaDfa(words, this.refs, this.dotall);
    } catch (e) {
      if (e instanceof UnsupportedPattern || e instanceof InvalidPattern) return null;
      throw e;
    }
  }

  private rangesDisjoint(a: Json, b: Json): boolean {
    const lo = (s: Json): [number, boolean] => {
      const m = typeof s["minimum"] === "number" ? s["minimum"] : -Infinity;
      const x = typeof s["exclusiveMinimum"] === "number" ? s["exclusiveMinimum"] : -Infinity;
      return x >= m ? [x, x !== -Infinity] : [m, s["exclusiveMinimum"] === true];
    };
    const hi = (s: Json): [number, boolean] => {
      const m = typeof s["maximum"] === "number" ? s["maximum"] : Infinity;
      const x = typeof s["exclusiveMaximum"] === "number" ? s["exclusiveMaximum"] : Infinity;
      return x <= m ? [x, x !== Infinity] : [m, s["exclusiveMaximum"] === true];
    };
    const apart = (h: [number, boolean], l: [number, boolean]): boolean => h[0] < l[0] || (h[0] === l[0] && (h[1] || l[1]));
    return apart(hi(a), lo(b)) || apart(hi(b), lo(a));
  }
}
