/**
 * The default mode's normalizer (docs/json-schema.md, "Default mode"): JSON Schema semantics
 * rather than llama.cpp's precedence. `allOf` and keywords next to `$ref`/`anyOf`/`oneOf` are
 * merged (merge.ts); `type` lists, enums and consts are filtered against the other keywords; a
 * missing `additionalProperties` is open; `{}` is any value; patterns are ECMA-262 (regex.ts);
 * formats are patterns; number bounds are exact. What cannot be enforced is reported with its
 * keyword and JSON pointer, as in the reference mode.
 */
import { JsonIds, jsonDump, pointerJoin } from "./literal.js";
import { ASSERTION_KEYWORDS, isVacuous, typeOfValue, valueHasType, type JsonType } from "./keywords.js";
import { MergeConflict, ifAsAlternatives, mergeSchemas } from "./merge.js";
import { Normalizer, type Member, type Property, type SchemaNode } from "./normalize.js";
import { FORMAT_PATTERNS, UNSUPPORTED_FORMATS } from "./formats.js";
import { numberRangeRule } from "./number-range.js";
import { decimalRatio, multipleOfDfa } from "./multiple-of.js";
import { ValueValidator, enumeratedValues } from "./validate-value.js";
import { withoutNot as complementOf, type ComplementContext } from "./complement.js";
import { Disjointness } from "./disjoint.js";
import { EXCLUDED_STRINGS, FORBIDDEN, NON_INTEGER, STRING_DFA } from "./markers.js";
import { OneOfSplitter } from "./one-of.js";
import { keyRegions, stringSchemaDfa, type KeyRegion } from "./key-regions.js";
import { InvalidPattern, UnsupportedPattern } from "./pattern.js";
import { patternDfa } from "./regex-gbnf.js";
import { difference, isEmpty, minimize, type Dfa } from "./regex-dfa.js";
import type { RefTable } from "./refs.js";
import type { Reporter } from "./report.js";
import { isObject } from "../json-syntax.js";

type Json = Record<string, unknown>;
const has = (o: Json, k: string): boolean => Object.hasOwn(o, k);

const OBJECT_WORDS = ["properties", "required", "additionalProperties", "patternProperties", "propertyNames", "minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "dependencies", "unevaluatedProperties"];
const ARRAY_WORDS = ["items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains", "minContains", "maxContains", "unevaluatedItems"];
const STRING_WORDS = ["minLength", "maxLength", "pattern", "format"];
const NUMBER_WORDS = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"];
const FAMILY: ReadonlyArray<[JsonType, readonly string[]]> = [
  ["object", OBJECT_WORDS],
  ["array", ARRAY_WORDS],
  ["string", STRING_WORDS],
  ["number", NUMBER_WORDS],
];

/** Merged schemas longer than this (as JSON text) become shared rules. */
const SHARED_MERGE_LENGTH = 1000;
/** Flat schemas whose assertions are at least this long (as JSON text) are shared when met again. */
const SHARED_FLAT_LENGTH = 256;
const SHARED_KINDS: ReadonlySet<SchemaNode["kind"]> = new Set(["object", "items", "array", "tuple", "union"]);
/** Keywords that decide a schema's node (the others are annotations, unknown words included). */
const SHAPE_KEYWORDS: ReadonlySet<string> = new Set([...ASSERTION_KEYWORDS, "format", "nullable", "$schema", "$id", "id", "$anchor", "definitions", "$defs"]);
/** Most alternatives uniqueItems over an enum may enumerate, and dependentRequired may split into. */
const MAX_UNIQUE_SEQUENCES = 200;
const MAX_DEPENDENCY_BRANCHES = 8;
const ALL_TYPES: JsonType[] = ["string", "number", "boolean", "null", "array", "object"];

/** Keywords a literal value is checked against (valuesNode). */
const CHECKED: ReadonlySet<string> = new Set(["const", "enum", "type", "minLength", "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "format"]);

/** Whether `s` matches the ECMA-262 `pattern` (null when JS cannot compile it). */
function safeTest(pattern: string, s: string): boolean | null {
  try {
    return new RegExp(pattern, "u").test(s);
  } catch {
    return null;
  }
}

export class DefaultNormalizer extends Normalizer {
  /** Refs being inlined for a merge (a recursive ref with siblings cannot be). */
  private readonly inlining = new Set<string>();
  private readonly values = new ValueValidator(this.refs);
  private readonly disjointness: Disjointness;

  private readonly complementContext: ComplementContext;
  private readonly oneOf: OneOfSplitter;
  /** Merged schemas being normalized (by their text), and the refs made for those met again. */
  private readonly activeMerged = new Set<string>();
  private readonly mergedRefs = new Map<string, string>();
  private readonly jsonIds = new JsonIds();
  /** Flat schemas shared as refs (sharedFlatNode): by their assertions, and their nodes by ref. */
  private readonly sharedFlat = new Map<string, { ref: string; node: SchemaNode; uses: number }>();
  private readonly sharedByRef = new Map<string, { ref: string; node: SchemaNode; uses: number }>();

  constructor(refs: RefTable, report: Reporter, private readonly dotall = false) {
    super(refs, report);
    this.disjointness = new Disjointness(refs, this.values, dotall);
    this.oneOf = new OneOfSplitter({ refs, dotall, disjointness: this.disjointness, inlined: (x) => this.inlinedOrNull(x) });
    this.complementContext = {
      inlined: (x) => this.inlinedOrNull(x as Json) ?? x,
      stringDfa: (x) => {
        try {
          return stringSchemaDfa(x, refs, dotall);
        } catch (e) {
          if (e instanceof UnsupportedPattern || e instanceof InvalidPattern) return null;
          throw e;
        }
      },
      validate: (x, v) => this.values.validate(x, v),
    };
  }

  protected override node(raw: unknown, where: string): SchemaNode {
    if (raw === true) return { kind: "any-value" };
    if (raw === false) return { kind: "never", keyword: "false", where, reason: "the schema false accepts no value" };
    if (!isObject(raw)) this.report.invalid(`a schema must be an object or a boolean, got ${jsonDump(raw)}`, where);
    const strings = (raw as Record<symbol, unknown>)[STRING_DFA] as Dfa | undefined;
    if (strings !== undefined) return isEmpty(strings) ? { kind: "never", keyword: "oneOf", where, reason: "no string matches exactly one alternative" } : { kind: "string-dfa", dfa: strings };
    if (has(raw, "type")) this.checkType(raw["type"], pointerJoin(where, "type"));
    if (has(raw, "format") && typeof raw["format"] !== "string") this.report.invalid("format must be a string", pointerJoin(where, "format"));
    // draft-4 / OpenAPI spellings
    let schema: Json = raw;
    if (schema["nullable"] === true && has(schema, "type")) {
      const { nullable: _, ...rest } = schema;
      schema = { anyOf: [rest, { type: "null" }] };
    }
    // enumerated values: every keyword beside them is decided value by value
    const listed = enumeratedValues(schema, this.refs);
    if (listed !== null) {
      const node = this.listedNode(schema, listed, where);
      if (node !== null) return node;
    }
    const before = schema;
    schema = this.merged(schema, where);
    if (has(schema, "if")) schema = this.merged(ifAsAlternatives(schema), where);
    if (schema === before) return this.sharedFlatNode(schema, where);
    // a merged schema met again inside itself (recursive refs merged with other keywords, through
    // properties or items): a ref of its own, so the grammar recurses instead of unrolling forever
    const text = this.jsonIds.of(schema);
    const forbidden = jsonDump((schema as Record<symbol, unknown>)[FORBIDDEN] ?? null);
    const key = `${text.id}\u0000${forbidden}`;
    // (symbol-keyed constraints other than forbidden keys are not shared this way)
    const shareable = Object.getOwnPropertySymbols(schema).every((x) => x === FORBIDDEN);
    // a large merged schema is a rule of its own too, shared by every place that merges to it
    // (the same $ref with the same siblings under a hundred properties made a hundred copies)
    if (this.activeMerged.has(key) || (shareable && text.length + 1 + forbidden.length > SHARED_MERGE_LENGTH)) {
      let ref = this.mergedRefs.get(key);
      if (ref === undefined) {
        const last = where.split("/").pop() ?? "";
        ref = `#/$merged/${this.mergedRefs.size}-${last}`;
        this.mergedRefs.set(key, ref);
        this.refs.set(ref, { schema, where });
      }
      return { kind: "ref", ref };
    }
    if (shareable) this.activeMerged.add(key);
    try {
      return this.flatNode(schema, where);
    } finally {
      if (shareable) this.activeMerged.delete(key);
    }
  }

  /**
   * A flat schema met again elsewhere with the same assertions (annotations such as `description`
   * aside) is one shared rule: the same object schema under three properties, with its patterns'
   * automata, was compiled and written three times (MaskBench's largest grammars were such copies).
   * Only containers are shared: a scalar's node kind is read by its parent (uniqueItems over an
   * enum), and a schema that admits nothing must stay `never` where it stands.
   */
  private sharedFlatNode(schema: Json, where: string): SchemaNode {
    const key = where === "#" ? null : this.shareKey(schema);
    if (key === null) return this.flatNode(schema, where);
    const known = this.sharedFlat.get(key);
    if (known !== undefined) {
      known.uses++;
      return { kind: "ref", ref: known.ref };
    }
    const node = this.flatNode(schema, where);
    if (!SHARED_KINDS.has(node.kind)) return node;
    const last = where.split("/").pop() ?? "";
    const ref = `#/$shared/${this.sharedFlat.size}-${last.replace(/[^a-zA-Z0-9-]+/g, "-")}`;
    this.refs.set(ref, { schema, where });
    const shared = { ref, node, uses: 1 };
    this.sharedFlat.set(key, shared);
    this.sharedByRef.set(ref, shared);
    return { kind: "ref", ref };
  }

  /**
   * A shared flat schema's node, and whether it is met once only (then the emitter writes it where
   * it stands, as if it were not shared).
   */
  override sharedNode(ref: string): { node: SchemaNode; once: boolean } | undefined {
    const shared = this.sharedByRef.get(ref);
    return shared === undefined ? undefined : { node: shared.node, once: shared.uses === 1 };
  }

  /** Identity of a flat schema's assertions: its keywords that may constrain, with their values. */
  private shareKey(schema: Json): string | null {
    if (Object.getOwnPropertySymbols(schema).length > 0) return null;
    let length = 0;
    const parts: string[] = [];
    for (const [k, v] of Object.entries(schema)) {
      if (!SHAPE_KEYWORDS.has(k)) continue;
      const x = this.jsonIds.of(v);
      length += k.length + x.length;
      parts.push(`${JSON.stringify(k)}:${x.id}`);
    }
    return length >= SHARED_FLAT_LENGTH ? parts.join(",") : null;
  }

  /** A schema with `allOf` and the keywords beside `$ref`/`anyOf`/`oneOf` merged in. */
  private flatNode(schema: Json, where: string): SchemaNode {
    if (has(schema, "not") && !has(schema, "const") && !has(schema, "enum") && !has(schema, "$ref") && !has(schema, "anyOf") && !has(schema, "oneOf")) {
      const r = this.withoutNot(schema, where);
      if (r.node !== undefined) return r.node;
      schema = r.schema;
    }

    if (has(schema, "$ref")) {
      const ref = schema["$ref"];
      if (typeof ref !== "string") this.report.invalid("$ref must be a string", pointerJoin(where, "$ref"));
      return { kind: "ref", ref };
    }
    for (const key of ["anyOf", "oneOf"]) {
      if (!has(schema, key)) continue;
      let alts = this.nonEmptyArray(schema[key], pointerJoin(where, key));
      if (key === "oneOf") {
        const exact = this.oneOf.exclusiveAlternatives(alts);
        if (exact === null) this.report.unsupported("oneOf", "oneOf whose alternatives may overlap (only one may match) is not supported", pointerJoin(where, key));
        else if (exact.length === 0) return { kind: "never", keyword: "oneOf", where: pointerJoin(where, key), reason: "every value the oneOf admits satisfies several of its alternatives" };
        else alts = exact;
      }
      return this.union(alts.map((a, i) => this.normalize(a, pointerJoin(pointerJoin(where, key), i))), key, pointerJoin(where, key));
    }
    if (has(schema, "const") || has(schema, "enum")) return this.valuesNode(schema, where);

    const branches = this.dependencyBranches(schema, where);
    if (branches !== null) return this.union(branches.map((b) => this.normalize(b, where)), "dependencies", where);

    const types = this.typesOf(schema);
    if (types === "any") {
      this.leftovers(schema, where, ["type"], "all", "on a schema without type");
      return { kind: "any-value" };
    }
    const nodes = types.map((t) => this.typedNode(schema, t, where));
    // no `type`: the keywords constrain their own type only, and every other type is admitted whole
    if (!has(schema, "type")) {
      for (const t of ALL_TYPES) if (!types.includes(t) && !(t === "number" && types.includes("integer"))) nodes.push(t === "object" ? { kind: "any-object" } : { kind: "primitive", type: t });
    }
    return this.union(nodes, "type", where);
  }

  /** Alternatives that admit no value are dropped; none left is a `never`. */
  private union(nodes: SchemaNode[], keyword: string, where: string): SchemaNode {
    const alive = nodes.filter((n) => n.kind !== "never");
    if (alive.length === 0) return nodes.length === 1 ? nodes[0]! : { kind: "never", keyword, where, reason: `no alternative of ${keyword} admits a value` };
    return alive.length === 1 ? alive[0]! : { kind: "union", alternatives: alive };
  }

  /**
   * A schema whose values are listed (enumeratedValues): the listed values that are valid against
   * the whole schema, decided one by one; null when one of them cannot be decided here.
   */
  private listedNode(schema: Json, listed: unknown[], where: string): SchemaNode | null {
    const kept: unknown[] = [];
    for (const v of listed) {
      const ok = this.values.validate(schema, v);
      if (ok === null) return null;
      if (ok) kept.push(v);
    }
    if (kept.length === 0) {
      const keyword = has(schema, "const") ? "const" : has(schema, "enum") ? "enum" : "allOf";
      return { kind: "never", keyword, where: pointerJoin(where, keyword), reason: "no value of const/enum satisfies the keywords beside it" };
    }
    return kept.length === 1 ? { kind: "const", value: kept[0] } : { kind: "enum", values: kept };
  }

  /**
   * `not` where its complement is a schema again: `not not X` is X; `not {type}` narrows the
   * types; `not {required: [k]}` (or `not {anyOf: [{required: [k]}, ...]}`) forbids the keys;
   * `not {enum/const}` of strings (and null) on a plain string is a string that is none of them.
   * Anything else is left in place, and refused by the typed node (keyword and pointer).
   */
  private withoutNot(schema: Json, where: string): { schema: Json; node?: undefined } | { node: SchemaNode; schema?: undefined } {
    const n = schema["not"];
    const { not: _, ...rest } = schema;
    if (!isObject(n)) return { schema };
    const words = Object.keys(n).filter((k) => ASSERTION_KEYWORDS.includes(k) && !isVacuous(k, n[k]));
    if (words.length === 0) return { schema }; // not {}: no value (refused below)
    if (words.length === 1 && words[0] === "not" && isObject(n["not"])) {
      try {
        return { schema: mergeSchemas(rest, this.inlined(n["not"], where)) as Json };
      } catch (e) {
        if (!(e instanceof MergeConflict)) throw e;
        if (e.empty) return { node: { kind: "never", keyword: "not", where: pointerJoin(where, "not"), reason: e.message } };
        return { schema };
      }
    }
    if (words.every((k) => k === "enum" || k === "const")) {
      const values = has(n, "const") ? [n["const"]] : Array.isArray(n["enum"]) ? (n["enum"] as unknown[]) : null;
      const strings = values?.filter((v): v is string => typeof v === "string");
      const others = values?.filter((v) => typeof v !== "string");
      const plainString = rest["type"] === "string" && !Object.keys(rest).some((k) => k !== "type" && ASSERTION_KEYWORDS.includes(k) && !isVacuous(k, rest[k]));
      if (strings !== undefined && plainString && others!.every((v) => v === null || typeof v !== "object") && strings.length <= 4096) {
        return { node: { kind: "not-strings", values: strings } };
      }
    }
    // the general case, type by type (complement.ts)
    const branches = complementOf(rest, n, this.complementContext);
    if (branches === null) return { schema };
    if (branches.length === 0) return { node: { kind: "never", keyword: "not", where: pointerJoin(where, "not"), reason: "not excludes every value the schema admits" } };
    return { schema: branches.length === 1 ? branches[0]! : { anyOf: branches } };
  }

  /**
   * dependentRequired (and draft-7 `dependencies` with arrays) on an object: one alternative per
   * choice of trigger keys, each either absent (forbidden) or present with its dependents required.
   * The alternatives are disjoint, so the union is exact. Null when there is nothing to split.
   */
  private dependencyBranches(schema: Json, where: string): Json[] | null {
    const key = ["dependentRequired", "dependentSchemas", "dependencies"].find((k) => has(schema, k) && !isVacuous(k, schema[k]));
    if (key === undefined) return null;
    const deps = schema[key];
    if (!isObject(deps)) return null;
    const types = schema["type"] === undefined ? ALL_TYPES : Array.isArray(schema["type"]) ? (schema["type"] as string[]) : [schema["type"] as string];
    if (!types.includes("object")) return null;
    const { [key]: _, ...rest } = schema;
    const required = new Set(Array.isArray(rest["required"]) ? (rest["required"] as string[]) : []);
    const closed = rest["additionalProperties"] === false && !has(rest, "patternProperties");
    const declared = isObject(rest["properties"]) ? new Set(Object.keys(rest["properties"])) : new Set<string>();
    // triggers that matter: able to appear, and adding something; a trigger already required
    // applies in every branch
    let forced: Json = {};
    const triggers: Array<[string, Json]> = [];
    for (const [k, v] of Object.entries(deps)) {
      const dep: Json | null = Array.isArray(v) ? (v.every((x) => typeof x === "string") ? { required: v } : null) : v === true ? {} : isObject(v) ? v : v === false ? { not: {} } : null;
      if (dep === null) return null;
      if (Array.isArray(v) && v.every((x) => required.has(x as string))) continue;
      if (Object.keys(dep).length === 0 || (closed && !declared.has(k))) continue;
      if (required.has(k)) forced = { allOf: [...((forced["allOf"] as unknown[]) ?? []), dep] };
      else triggers.push([k, dep]);
    }
    if (2 ** triggers.length > MAX_DEPENDENCY_BRANCHES) {
      this.report.unsupported(key, `${key} with ${triggers.length} independent trigger keys (more than ${Math.log2(MAX_DEPENDENCY_BRANCHES)}) is not supported`, pointerJoin(where, key));
      return null;
    }
    // the values that are no object: the dependencies say nothing about them
    const out: Json[] = types.length > 1 ? [{ ...rest, type: types.filter((t) => t !== "object") }] : [];
    const prior = ((rest as Record<symbol, unknown>)[FORBIDDEN] as string[] | undefined) ?? [];
    for (let mask = 0; mask < 2 ** triggers.length; mask++) {
      const present: Json[] = [];
      const req = new Set(required);
      const forbid: string[] = [];
      triggers.forEach(([k, dep], i) => {
        if (mask & (1 << i)) {
          req.add(k);
          present.push(dep);
        } else forbid.push(k);
      });
      // one branch per choice of present triggers, each with its dependencies merged in (the
      // branches differ in which triggers are present, so they are disjoint)
      let branch: unknown = { ...rest, type: "object", required: [...req], [FORBIDDEN]: [...prior, ...forbid] };
      try {
        for (const dep of [forced, ...present]) if (Object.keys(dep).length > 0) branch = mergeSchemas(branch, this.inlined(dep, where));
      } catch (e) {
        if (!(e instanceof MergeConflict)) throw e;
        this.report.unsupported(key, `${key}: ${e.message}`, pointerJoin(where, key));
        return null;
      }
      if (!isObject(branch)) continue;
      const b = branch as Json & Record<symbol, unknown>;
      b[FORBIDDEN] = [...prior, ...forbid];
      const breq = Array.isArray(b["required"]) ? (b["required"] as string[]) : [];
      // a branch that forbids a key it also requires matches nothing
      if (forbid.some((k) => breq.includes(k))) continue;
      out.push(b);
    }
    return out;
  }

  /** `allOf`, `$ref` with siblings, `anyOf`/`oneOf` with siblings: one flat schema. */
  private merged(schema: Json, where: string): Json {
    let s = schema;
    try {
      if (has(s, "allOf")) {
        const parts = this.nonEmptyArray(s["allOf"], pointerJoin(where, "allOf"));
        const { allOf: _, ...rest } = s;
        let acc: unknown = rest;
        for (const p of parts) acc = mergeSchemas(acc, this.inlined(p, pointerJoin(where, "allOf")));
        if (!isObject(acc)) return { anyOf: [acc] };
        s = acc;
        if (has(s, "allOf")) return this.merged(s, where);
      }
      if (has(s, "$ref") && this.hasAssertions(s, ["$ref"])) {
        const { $ref, ...rest } = s;
        s = mergeSchemas(this.inlined({ $ref }, where), rest) as Json;
        if (isObject(s) && (has(s, "allOf") || (has(s, "$ref") && this.hasAssertions(s, ["$ref"])))) return this.merged(s, where);
      }
      for (const key of ["anyOf", "oneOf"]) {
        if (!has(s, key) || !this.hasAssertions(s, [key])) continue;
        const { [key]: alts, ...rest } = s;
        if (!Array.isArray(alts)) break;
        const out: unknown[] = [];
        for (const alt of alts) {
          try {
            out.push(mergeSchemas(rest, this.inlined(alt, where)));
          } catch (e) {
            if (!(e instanceof MergeConflict) || !e.empty) throw e;
            // an alternative with no value in common with the siblings matches nothing: dropped
          }
        }
        if (out.length === 0) return { anyOf: [false] };
        const keptAnnotations = Object.fromEntries(Object.entries(rest).filter(([k]) => !ASSERTION_KEYWORDS.includes(k)));
        s = { ...keptAnnotations, [key]: out.length > 0 ? out : alts };
        break;
      }
    } catch (e) {
      if (!(e instanceof MergeConflict)) throw e;
      // parts with no value in common: the schema admits nothing (a never, dropped where it stands)
      if (e.empty) return { anyOf: [false] };
      this.report.unsupported(e.keyword, `${e.message} (merging allOf or keywords next to $ref/anyOf/oneOf)`, pointerJoin(where, e.keyword));
      return schema;
    }
    return s;
  }

  /** A subschema with its top `$ref` replaced by the target, for merging (recursive refs stay refs). */
  private inlined(s: unknown, where: string): unknown {
    if (!isObject(s) || !has(s, "$ref") || typeof s["$ref"] !== "string") return s;
    const ref = s["$ref"];
    const target = this.refs.get(ref);
    if (target === undefined) return s;
    if (this.inlining.has(ref) || this.inlining.size > 64) {
      throw new MergeConflict("$ref", `the recursive $ref ${JSON.stringify(ref)} cannot be merged with other keywords`);
    }
    this.inlining.add(ref);
    try {
      const { $ref: _, ...rest } = s;
      const t = this.inlined(target.schema, where);
      return Object.keys(rest).length === 0 ? t : mergeSchemas(t, rest);
    } finally {
      this.inlining.delete(ref);
    }
  }

  private hasAssertions(s: Json, except: string[]): boolean {
    return Object.keys(s).some((k) => !except.includes(k) && ASSERTION_KEYWORDS.includes(k) && !isVacuous(k, s[k]));
  }

  private inlinedOrNull(s: Json): unknown {
    try {
      return this.inlined(s, "#");
    } catch {
      return null;
    }
  }

  /** The types a schema admits: its `type`, or the families its keywords constrain (none: any). */
  private typesOf(schema: Json): JsonType[] | "any" {
    const t = schema["type"];
    if (typeof t === "string") return [t as JsonType];
    if (Array.isArray(t)) return [...new Set(t as JsonType[])];
    const fams = FAMILY.filter(([, words]) => words.some((w) => has(schema, w) && !isVacuous(w, schema[w]) && !(w === "format" && !FORMAT_PATTERNS.has(String(schema[w])) && !UNSUPPORTED_FORMATS.has(String(schema[w]))))).map(([f]) => f);
    return fams.length === 0 ? "any" : fams;
  }

  private typedNode(schema: Json, type: JsonType, where: string): SchemaNode {
    switch (type) {
      case "object":
        return this.objectNodeDefault(schema, where);
      case "array":
        return this.arrayNodeDefault(schema, where);
      case "string":
        return this.stringNode(schema, where);
      case "number":
      case "integer":
        return this.numberNode(schema, type, where);
      default:
        this.leftovers(schema, where, ["type"], new Set([type]), `on type ${type}`);
        return { kind: "primitive", type };
    }
  }

  /** const / enum: the values that satisfy every other keyword here. */
  private valuesNode(schema: Json, where: string): SchemaNode {
    let values: unknown[];
    if (has(schema, "const")) values = [schema["const"]];
    else {
      const e = schema["enum"];
      if (!Array.isArray(e)) this.report.invalid("enum must be an array", pointerJoin(where, "enum"));
      values = e;
    }
    if (has(schema, "const") && Array.isArray(schema["enum"])) values = values.filter((v) => (schema["enum"] as unknown[]).some((x) => jsonDump(x) === jsonDump(v)));
    const checked = new Set(CHECKED);
    // `not` with only keywords a value is checked against here: the values it excludes are dropped
    if (has(schema, "not") && isObject(schema["not"]) && Object.keys(schema["not"]).every((k) => CHECKED.has(k) || !ASSERTION_KEYWORDS.includes(k))) checked.add("not");
    values = values.filter((v) => this.satisfies(v, schema) && (!checked.has("not") || !this.satisfies(v, schema["not"] as Json, true)));
    if (values.length === 0) {
      const keyword = has(schema, "const") ? "const" : "enum";
      return { kind: "never", keyword, where: pointerJoin(where, keyword), reason: "no value of const/enum satisfies the keywords beside it" };
    }
    const consumed = [...checked].filter((k) => has(schema, k));
    this.leftovers(schema, where, consumed, new Set(values.map(typeOfValue)), "next to enum/const");
    return values.length === 1 ? { kind: "const", value: values[0] } : { kind: "enum", values };
  }

  /** Whether a value passes the simple keywords of `schema` (those a literal can be checked against). */
  private satisfies(v: unknown, schema: Json, withValues = false): boolean {
    if (withValues) {
      if (has(schema, "const") && jsonDump(schema["const"]) !== jsonDump(v)) return false;
      if (Array.isArray(schema["enum"]) && !schema["enum"].some((x) => jsonDump(x) === jsonDump(v))) return false;
    }
    const t = schema["type"];
    if (t !== undefined && !(Array.isArray(t) ? t : [t]).some((x) => valueHasType(v, x as string))) return false;
    if (typeof v === "string") {
      const n = [...v].length;
      if (typeof schema["minLength"] === "number" && n < schema["minLength"]) return false;
      if (typeof schema["maxLength"] === "number" && n > schema["maxLength"]) return false;
      if (typeof schema["pattern"] === "string") {
        try {
          if (!new RegExp(schema["pattern"], "u").test(v)) return false;
        } catch {
          return false;
        }
      }
      if (typeof schema["format"] === "string" && FORMAT_PATTERNS.has(schema["format"])) {
        if (!new RegExp(FORMAT_PATTERNS.get(schema["format"])!).test(v)) return false;
      }
    }
    if (typeof v === "number") {
      if (typeof schema["minimum"] === "number" && v < schema["minimum"]) return false;
      if (typeof schema["maximum"] === "number" && v > schema["maximum"]) return false;
      if (typeof schema["exclusiveMinimum"] === "number" && v <= schema["exclusiveMinimum"]) return false;
      if (typeof schema["exclusiveMaximum"] === "number" && v >= schema["exclusiveMaximum"]) return false;
      if (typeof schema["multipleOf"] === "number" && schema["multipleOf"] > 0 && !Number.isInteger(v / schema["multipleOf"])) return false;
    }
    return true;
  }

  private objectNodeDefault(schema: Json, where: string): SchemaNode {
    const properties: Property[] = has(schema, "properties") ? this.propertyList(schema["properties"], pointerJoin(where, "properties")) : [];
    const required = this.requiredSet(schema, where);
    // a property that admits no value cannot be present: forbidden, or the object is never
    const dead: string[] = [];
    for (let i = properties.length - 1; i >= 0; i--) {
      const p = properties[i]!;
      if (p.schema.kind !== "never") continue;
      if (required.has(p.name)) return { kind: "never", keyword: "required", where: pointerJoin(where, "required"), reason: `the required property ${JSON.stringify(p.name)} admits no value (${p.schema.reason})` };
      properties.splice(i, 1);
      dead.push(p.name);
    }
    let additional: SchemaNode | boolean = true;
    let apKey = "additionalProperties";
    if (!has(schema, apKey) && has(schema, "unevaluatedProperties") && !has(schema, "patternProperties")) apKey = "unevaluatedProperties";
    const apRaw: unknown = has(schema, apKey) ? schema[apKey] : true;
    if (has(schema, apKey)) {
      const ap = schema[apKey];
      const apWhere = pointerJoin(where, apKey);
      if (typeof ap === "boolean") additional = ap;
      else if (isObject(ap)) additional = Object.keys(ap).length === 0 ? true : this.normalize(ap, apWhere);
      else this.report.invalid(`${apKey} must be a boolean or a schema`, apWhere);
      if (typeof additional === "object" && additional.kind === "never") additional = false;
    }
    const pp = isObject(schema["patternProperties"]) ? Object.entries(schema["patternProperties"]) : [];
    const ppVacuous = pp.every(([, v]) => v === true || (isObject(v) && Object.keys(v).length === 0));
    const names = has(schema, "propertyNames") && !isVacuous("propertyNames", schema["propertyNames"]) ? schema["propertyNames"] : undefined;
    // the keys' languages are needed when patterns give values schemas, or name keys beside
    // additionalProperties false, or propertyNames bounds them
    const keyed = (pp.length > 0 && !(ppVacuous && additional === true)) || names !== undefined;
    // a required property that is not declared: it must be there, with the schemas its key gets
    const declared = new Set(properties.map((p) => p.name));
    const reqList = Array.isArray(schema["required"]) ? (schema["required"] as string[]) : [];
    for (const [i, name] of reqList.entries()) {
      if (declared.has(name)) continue;
      const byPattern = pp.some(([pat]) => safeTest(pat, name) === true);
      if (additional === false && !byPattern) {
        return { kind: "never", keyword: "required", where: pointerJoin(pointerJoin(where, "required"), i), reason: `required property ${JSON.stringify(name)} is neither declared nor allowed by additionalProperties` };
      }
      // (a key a pattern matches gets the patterns' schemas in keyedMembers)
      properties.push({ name, schema: !byPattern && typeof additional === "object" ? additional : { kind: "any-value" } });
      declared.add(name);
    }
    const consumed = ["type", "properties", "required", "additionalProperties", "unevaluatedProperties"];
    const forbidden = [...(((schema as Record<symbol, unknown>)[FORBIDDEN] as string[] | undefined) ?? []), ...dead];
    for (const k of forbidden) {
      if (required.has(k)) return { kind: "never", keyword: "required", where: pointerJoin(where, "required"), reason: `property ${JSON.stringify(k)} is both required and forbidden (not/dependentRequired)` };
    }
    if (forbidden.length > 0) {
      for (let i = properties.length - 1; i >= 0; i--) if (forbidden.includes(properties[i]!.name)) properties.splice(i, 1);
    }
    let members: Member[] | undefined;
    if (keyed) {
      const m = this.keyedMembers(schema, properties, required, forbidden, apRaw, additional, where);
      if (m === null) return { kind: "never", keyword: "propertyNames", where: pointerJoin(where, "propertyNames"), reason: "a required property's name is not allowed by propertyNames" };
      if (m !== undefined) {
        members = m;
        consumed.push("patternProperties", "propertyNames");
      }
    } else if (pp.length > 0) consumed.push("patternProperties");
    const extras = members !== undefined ? members.length > 0 : additional !== false;
    let minP = typeof schema["minProperties"] === "number" ? schema["minProperties"] : 0;
    let maxP = typeof schema["maxProperties"] === "number" ? schema["maxProperties"] : Infinity;
    if (minP <= required.size) minP = 0;
    if (!extras && maxP >= properties.length) maxP = Infinity;
    if (!extras && (minP > properties.length || required.size > maxP)) {
      return { kind: "never", keyword: minP > properties.length ? "minProperties" : "maxProperties", where, reason: "minProperties/maxProperties leave no object" };
    }
    // counts: any bounds over the declared properties alone (a rule per position and count, so
    // bounded); with other keys, "at least one"
    // other keys only (a map): the count of members as written (a key written twice counts twice)
    const counted = (!extras && properties.length * (Math.min(maxP, properties.length) + 1) <= 4000) || (extras && properties.length === 0 && minP <= 1999 && (maxP === Infinity || maxP <= 1999));
    if (minP === 0 || counted || (extras && minP === 1)) consumed.push("minProperties");
    if (maxP === Infinity || counted) consumed.push("maxProperties");
    this.leftovers(schema, where, consumed, new Set(["object"]), "on an object");
    const counts = { ...(minP > 0 && consumed.includes("minProperties") ? { minProperties: minP } : {}), ...(maxP !== Infinity && consumed.includes("maxProperties") ? { maxProperties: maxP } : {}) };
    if (members !== undefined) return { kind: "object", properties, required, additional: false, members, ...counts };
    if (forbidden.length > 0 && additional !== false) return { kind: "object", properties, required, additional, forbidden, ...counts };
    return { kind: "object", properties, required, additional, ...counts };
  }

  /**
   * patternProperties / propertyNames (key-regions.ts): each declared property also gets the
   * schemas of the patterns its name matches, and the other keys are split into regions by the
   * patterns they match, each with its value schema. Undefined when a pattern or propertyNames is
   * beyond the automata (reported); null when a required name fails propertyNames (no object is valid).
   */
  private keyedMembers(schema: Json, properties: Property[], required: ReadonlySet<string>, forbidden: string[], apRaw: unknown, additional: SchemaNode | boolean, where: string): Member[] | null | undefined {
    const ppWhere = pointerJoin(where, "patternProperties");
    const pp = isObject(schema["patternProperties"]) ? Object.entries(schema["patternProperties"]) : [];
    const rawProps = isObject(schema["properties"]) ? schema["properties"] : {};
    const names = has(schema, "propertyNames") ? schema["propertyNames"] : true;
    // declared names: propertyNames decides them one by one; the matching patterns' schemas join theirs
    for (let i = properties.length - 1; i >= 0; i--) {
      const p = properties[i]!;
      const ok = this.values.validate(names, p.name);
      if (ok === null) {
        this.report.unsupported("propertyNames", "propertyNames with keywords beyond strings' pattern, lengths, format and enum is not supported", pointerJoin(where, "propertyNames"));
        return undefined;
      }
      if (!ok) {
        if (required.has(p.name)) return null;
        properties.splice(i, 1);
        forbidden.push(p.name);
        continue;
      }
      const matching = pp.filter(([pat]) => safeTest(pat, p.name) === true);
      if (matching.length > 0) {
        const own = Object.hasOwn(rawProps, p.name) ? [rawProps[p.name]] : [];
        const parts = [...own, ...matching.map(([, x]) => x)];
        properties[i] = { name: p.name, schema: this.normalize(parts.length === 1 ? parts[0] : { allOf: parts }, pointerJoin(pointerJoin(where, "properties"), p.name)) };
      }
    }
    let regions: KeyRegion[];
    try {
      const dfas = pp.map(([pat]) => patternDfa(pat, this.dotall));
      const nameDfa = names === true ? null : stringSchemaDfa(names, this.refs, this.dotall);
      if (nameDfa === null && names !== true) {
        this.report.unsupported("propertyNames", "propertyNames with keywords beyond strings' pattern, lengths, format and enum is not supported", pointerJoin(where, "propertyNames"));
        return undefined;
      }
      regions = keyRegions(dfas, [...properties.map((p) => p.name), ...forbidden], nameDfa, additional !== false);
    } catch (e) {
      if (!(e instanceof UnsupportedPattern || e instanceof InvalidPattern)) throw e;
      this.report.unsupported("patternProperties", `patternProperties: ${e.message}`, ppWhere);
      return undefined;
    }
    const members: Member[] = [];
    for (const r of regions) {
      let value: SchemaNode;
      if (r.patterns.length === 0) value = additional === true || additional === false ? { kind: "any-value" } : additional;
      else {
        const parts = r.patterns.map((i) => pp[i]![1]);
        const at = pointerJoin(ppWhere, pp[r.patterns[0]!]![0]);
        value = this.normalize(parts.length === 1 ? parts[0] : { allOf: parts }, at);
      }
      if (value.kind !== "never") members.push({ keys: r.keys, value });
    }
    void apRaw;
    return members;
  }

  private arrayNodeDefault(schema: Json, where: string): SchemaNode {
    const consumed = ["type", "items", "prefixItems", "additionalItems", "minItems", "maxItems"];
    let prefixRaw: unknown[] = [];
    let restRaw: unknown = true;
    let restWhere = pointerJoin(where, "items");
    if (Array.isArray(schema["prefixItems"])) {
      prefixRaw = schema["prefixItems"];
      if (has(schema, "items")) restRaw = schema["items"];
    } else if (Array.isArray(schema["items"])) {
      prefixRaw = schema["items"];
      restWhere = pointerJoin(where, "additionalItems");
      if (has(schema, "additionalItems")) restRaw = schema["additionalItems"];
    } else if (has(schema, "items")) {
      restRaw = schema["items"];
    }
    const prefixKey = Array.isArray(schema["prefixItems"]) ? "prefixItems" : "items";
    const prefix = prefixRaw.map((s, i) => this.normalize(s, pointerJoin(pointerJoin(where, prefixKey), i)));
    let rest = restRaw === false ? null : this.normalize(restRaw, restWhere);
    const min = this.count(schema, "minItems", where) ?? 0;
    let max = this.count(schema, "maxItems", where) ?? Infinity;
    // a position that admits no value ends the array before it
    const deadAt = prefix.findIndex((p) => p.kind === "never");
    const deadRest = rest !== null && rest.kind === "never";
    if (deadAt >= 0) prefix.length = deadAt;
    if (deadAt >= 0 || deadRest) rest = null;
    if (rest === null) max = Math.min(max, prefix.length);
    if (min > max) {
      if (deadAt >= 0 || deadRest) return { kind: "never", keyword: "minItems", where: pointerJoin(where, "minItems"), reason: `minItems ${min} needs items that admit no value` };
      this.report.invalid(`minItems ${min} is greater than maxItems ${max}`, where);
    }
    if (schema["uniqueItems"] === true && max <= 1) consumed.push("uniqueItems");
    const unique = schema["uniqueItems"] === true && max > 1 ? this.uniqueSequences(prefix, rest, min, max) : null;
    if (unique !== null) consumed.push("uniqueItems");
    this.leftovers(schema, where, consumed, new Set(["array"]), "on an array");
    if (unique !== null) return unique.length === 1 ? { kind: "const", value: unique[0] } : { kind: "enum", values: unique };
    return { kind: "items", prefix, rest, min, max };
  }

  /**
   * uniqueItems over items drawn from a few literal values (an enum, a const, booleans): every
   * sequence of distinct values with a length allowed, as an enum of arrays; null when the items
   * are not such or the sequences would be too many.
   */
  private uniqueSequences(prefix: SchemaNode[], rest: SchemaNode | null, min: number, max: number): unknown[][] | null {
    if (prefix.length > 0 || rest === null) return null;
    let values: unknown[];
    if (rest.kind === "enum") values = rest.values;
    else if (rest.kind === "const") values = [rest.value];
    else if (rest.kind === "primitive" && rest.type === "boolean") values = [true, false];
    else if (rest.kind === "primitive" && rest.type === "null") values = [null];
    else return null;
    // equal JSON values are one value (1 and 1.0 too)
    const seen = new Set<string>();
    values = values.filter((v) => {
      const k = jsonDump(typeof v === "number" ? Number(v) : v);
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
    if (values.some((v) => typeof v === "object" && v !== null)) return null;
    const top = Math.min(max, values.length);
    let count = 0;
    for (let j = min, perms = 1; j <= top; j++) {
      perms = 1;
      for (let i = 0; i < j; i++) perms *= values.length - i;
      count += perms;
    }
    if (count > MAX_UNIQUE_SEQUENCES || min > top) return null;
    const out: unknown[][] = [];
    const walk = (seq: unknown[], used: boolean[]): void => {
      if (seq.length >= min) out.push([...seq]);
      if (seq.length === top) return;
      values.forEach((v, i) => {
        if (used[i]) return;
        used[i] = true;
        seq.push(v);
        walk(seq, used);
        seq.pop();
        used[i] = false;
      });
    };
    walk([], values.map(() => false));
    return out;
  }

  private stringNode(schema: Json, where: string): SchemaNode {
    const min = this.count(schema, "minLength", where) ?? 0;
    const max = this.count(schema, "maxLength", where) ?? Infinity;
    if (min > max) this.report.invalid(`minLength ${min} is greater than maxLength ${max}`, where);
    const excluded = (schema as Record<symbol, unknown>)[EXCLUDED_STRINGS] as Dfa | undefined;
    if (excluded !== undefined) {
      // strings a `not` took out: the string keywords' automaton minus them
      const words = ["pattern", "minLength", "maxLength", ...(typeof schema["format"] === "string" && FORMAT_PATTERNS.has(schema["format"]) ? ["format"] : [])].filter((k) => has(schema, k));
      const base = this.complementContext.stringDfa(Object.fromEntries(words.map((k) => [k, schema[k]])));
      if (base !== null) {
        this.leftovers(schema, where, ["type", ...words], new Set(["string"]), "on a string");
        const d = minimize(difference(base, excluded));
        return isEmpty(d) ? { kind: "never", keyword: "not", where: pointerJoin(where, "not"), reason: "not excludes every string" } : { kind: "string-dfa", dfa: d };
      }
      this.report.unsupported("not", "not beside string keywords beyond the automata is not supported", pointerJoin(where, "not"));
    }
    const consumed = ["type", "minLength", "maxLength"];
    let pattern: string | null = null;
    let patternWhere = pointerJoin(where, "pattern");
    const format = typeof schema["format"] === "string" ? schema["format"] : null;
    if (has(schema, "pattern")) {
      if (typeof schema["pattern"] !== "string") this.report.invalid("pattern must be a string", patternWhere);
      pattern = schema["pattern"];
      consumed.push("pattern");
    }
    if (format !== null) {
      if (FORMAT_PATTERNS.has(format)) {
        if (pattern === null) {
          pattern = FORMAT_PATTERNS.get(format)!;
          patternWhere = pointerJoin(where, "format");
          consumed.push("format");
        } else {
          // a pattern and a format: both, as the intersection of their automata
          const words = ["pattern", "format", "minLength", "maxLength"].filter((k) => has(schema, k));
          const d = this.complementContext.stringDfa(Object.fromEntries(words.map((k) => [k, schema[k]])));
          if (d === null) {
            this.report.unsupported("format", `format ${JSON.stringify(format)} beside a pattern beyond the automata is not supported`, pointerJoin(where, "format"));
          } else {
            this.leftovers(schema, where, ["type", ...words], new Set(["string"]), "on a string");
            return isEmpty(d) ? { kind: "never", keyword: "format", where: pointerJoin(where, "format"), reason: "no string matches both the pattern and the format" } : { kind: "string-dfa", dfa: d };
          }
        }
      } else if (UNSUPPORTED_FORMATS.has(format)) {
        this.report.unsupported("format", `format ${JSON.stringify(format)} is not supported`, pointerJoin(where, "format"));
      } else {
        consumed.push("format"); // an unknown format is an annotation (validators ignore it)
      }
    }
    this.leftovers(schema, where, consumed, new Set(["string"]), "on a string");
    if (pattern !== null) return { kind: "regex", pattern, where: patternWhere, minLength: min, maxLength: max };
    if (min === 0 && max === Infinity) return { kind: "primitive", type: "string" };
    return { kind: "string-length", min, max };
  }

  /**
   * multipleOf other than 1 (multiple-of.ts): with no bounds, or a lower bound of 0, the
   * multiples' automaton; with both bounds, the multiples between them listed (at most 1,000);
   * otherwise null (refused).
   */
  private multipleNode(m: number, integer: boolean, lo: { v: number | null; ex: boolean }, hi: { v: number | null; ex: boolean }, where: string): SchemaNode | null {
    const ratio = decimalRatio(m);
    if (ratio === null) return null;
    if (hi.v === null && (lo.v === null || lo.v === 0)) {
      const dfa = multipleOfDfa(m, { integer, signs: lo.v === null ? "any" : lo.ex ? "positive" : "nonNegative" });
      return dfa === null ? null : { kind: "number-dfa", dfa };
    }
    if (lo.v === null || hi.v === null) return null;
    // x·10^k as a fraction num/den, exactly (the double's shortest decimal digits)
    const scaled = (x: number): [bigint, bigint] => {
      const [mant, e] = Math.abs(x).toExponential().split("e");
      const digits = BigInt(mant!.replace(".", "")) * (x < 0 ? -1n : 1n);
      const shift = Number(e) - (mant!.replace(".", "").length - 1) + ratio.k;
      return shift >= 0 ? [digits * 10n ** BigInt(shift), 1n] : [digits, 10n ** BigInt(-shift)];
    };
    const floorDiv = (a: bigint, b: bigint): bigint => (a >= 0n ? a / b : -((-a + b - 1n) / b));
    const [ln, ld] = scaled(lo.v);
    const [hn, hd] = scaled(hi.v);
    // multiples n·p of 10^-k with lo <= n·p/10^k <= hi (exclusive where said)
    let first = -floorDiv(-ln, ld * ratio.p);
    let last = floorDiv(hn, hd * ratio.p);
    if (lo.ex && first * ratio.p * ld === ln) first++;
    if (hi.ex && last * ratio.p * hd === hn) last--;
    if (last - first >= 1000n) return null;
    const values: number[] = [];
    for (let n = first; n <= last; n++) {
      const v = Number(`${n * ratio.p}e-${ratio.k}`);
      if (!integer || Number.isInteger(v)) values.push(v);
    }
    if (values.length === 0) return { kind: "never", keyword: "multipleOf", where: pointerJoin(where, "multipleOf"), reason: "no multiple lies between the bounds" };
    return values.length === 1 ? { kind: "const", value: values[0] } : { kind: "enum", values };
  }

  private numberNode(schema: Json, type: "number" | "integer", where: string): SchemaNode {
    if ((schema as Record<symbol, unknown>)[NON_INTEGER] === true) {
      // a number that is not an integer: a fraction digit that is not 0, no exponent (a number
      // written with one is not admitted: a valid value rejected, never the reverse)
      this.leftovers(schema, where, ["type"], new Set(["number"]), "beside not integer");
      return { kind: "number-range", rule: '"-"? ("0" | [1-9] [0-9]*) "." [0-9]* [1-9] [0-9]*' };
    }
    const consumed = ["type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];
    let integer = type === "integer";
    const mult = schema["multipleOf"];
    if (mult !== undefined) {
      if (typeof mult !== "number" || !(mult > 0)) this.report.invalid("multipleOf must be a number greater than 0", pointerJoin(where, "multipleOf"));
      if (mult === 1) {
        integer = true;
        consumed.push("multipleOf");
      }
    }
    // draft 4: exclusiveMinimum/Maximum as booleans beside minimum/maximum
    const bound = (key: "minimum" | "maximum"): { v: number | null; ex: boolean } => {
      const exKey = key === "minimum" ? "exclusiveMinimum" : "exclusiveMaximum";
      const plain = schema[key];
      const ex = schema[exKey];
      const pick = (x: unknown, at: string): number | null => {
        if (x === undefined) return null;
        if (typeof x !== "number" || !Number.isFinite(x)) this.report.invalid(`${at} must be a number`, pointerJoin(where, at));
        return x;
      };
      const p = pick(plain, key);
      if (typeof ex === "boolean") return { v: p, ex: ex && p !== null };
      const e = pick(ex, exKey);
      if (p === null) return { v: e, ex: e !== null };
      if (e === null) return { v: p, ex: false };
      // both: the tighter one
      if (key === "minimum") return e >= p ? { v: e, ex: true } : { v: p, ex: false };
      return e <= p ? { v: e, ex: true } : { v: p, ex: false };
    };
    const lo = bound("minimum");
    const hi = bound("maximum");
    const multiple = typeof mult === "number" && mult !== 1 ? this.multipleNode(mult, integer, lo, hi, where) : null;
    if (multiple !== null) consumed.push("multipleOf");
    this.leftovers(schema, where, consumed, new Set([type]), `on type ${type}`);
    if (multiple !== null) return multiple;
    if (integer) {
      let min: bigint | null = null;
      let max: bigint | null = null;
      if (lo.v !== null) min = lo.ex ? BigInt(Math.floor(lo.v)) + 1n : BigInt(Math.ceil(lo.v));
      if (hi.v !== null) max = hi.ex ? BigInt(Math.ceil(hi.v)) - 1n : BigInt(Math.floor(hi.v));
      if (min !== null && max !== null && min > max) this.report.invalid(`the integer bounds leave no value (${min} > ${max})`, where);
      if (min === null && max === null) return { kind: "primitive", type: "integer" };
      return { kind: "integer-range", min, max };
    }
    if (lo.v === null && hi.v === null) return { kind: "primitive", type: "number" };
    if (lo.v !== null && hi.v !== null && (lo.v > hi.v || (lo.v === hi.v && (lo.ex || hi.ex)))) this.report.invalid("the number bounds leave no value", where);
    const rule = numberRangeRule({ min: lo.v, minExclusive: lo.ex, max: hi.v, maxExclusive: hi.ex });
    if (rule === null) {
      this.report.unsupported("minimum", `number bounds ${lo.v} .. ${hi.v} with fractions inside one integer are not supported`, pointerJoin(where, has(schema, "minimum") ? "minimum" : "exclusiveMinimum"));
      return { kind: "primitive", type: "number" };
    }
    return { kind: "number-range", rule };
  }
}

