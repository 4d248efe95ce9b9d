/**
 * The default mode's normalizer (docs/json-schema.md, "Default mode"): JSON Schema semantics
 * rather than llama.cpp's precedence. `allOf` and keywords next to `$ref`/`anyOf`/`oneOf` are
 * merged (merge.ts); `type` lists, enums and consts are filtered against the other keywords; a
 * missing `additionalProperties` is open; `{}` is any value; patterns are ECMA-262 (regex.ts);
 * formats are patterns; number bounds are exact. What cannot be enforced is reported with its
 * keyword and JSON pointer, as in the reference mode.
 */
import { jsonDump, pointerJoin } from "./literal.js";
import { ASSERTION_KEYWORDS, isVacuous, typeOfValue, valueHasType, type JsonType } from "./keywords.js";
import { MergeConflict, mergeSchemas } from "./merge.js";
import { Normalizer, type Property, type SchemaNode } from "./normalize.js";
import { MAX_REPETITION } from "./pattern.js";
import { FORMAT_PATTERNS, UNSUPPORTED_FORMATS } from "./formats.js";
import { numberRangeRule } from "./number-range.js";

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
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

/** Keys an object must not have (set by `not: {required}` and dependentRequired branches). */
const FORBIDDEN: unique symbol = Symbol("forbidden keys");
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

  protected override node(raw: unknown, where: string): SchemaNode {
    if (raw === true) return { kind: "any-value" };
    if (raw === false) {
      this.report.unsupported("false", "the schema false accepts no value", where);
      return { kind: "any-value" };
    }
    if (!isObject(raw)) this.report.invalid(`a schema must be an object or a boolean, got ${jsonDump(raw)}`, where);
    if (has(raw, "type")) this.checkType(raw["type"], pointerJoin(where, "type"));
    if (has(raw, "format") && typeof raw["format"] !== "string") this.report.invalid("format must be a string", pointerJoin(where, "format"));
    // draft-4 / OpenAPI spellings
    let schema: Json = raw;
    if (schema["nullable"] === true && has(schema, "type")) {
      const { nullable: _, ...rest } = schema;
      schema = { anyOf: [rest, { type: "null" }] };
    }
    schema = this.merged(schema, where);
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
      const alts = this.nonEmptyArray(schema[key], pointerJoin(where, key));
      if (key === "oneOf" && !this.disjoint(alts)) {
        this.report.unsupported("oneOf", "oneOf whose alternatives may overlap (only one may match) is not supported", pointerJoin(where, key));
      }
      return { kind: "union", alternatives: alts.map((a, i) => this.normalize(a, pointerJoin(pointerJoin(where, key), i))) };
    }
    if (has(schema, "const") || has(schema, "enum")) return this.valuesNode(schema, where);

    const branches = this.dependencyBranches(schema, where);
    if (branches !== null) return { kind: "union", alternatives: branches.map((b) => this.normalize(b, where)) };

    const types = this.typesOf(schema);
    if (types === "any") {
      this.leftovers(schema, where, ["type"], "all", "on a schema without type");
      return { kind: "any-value" };
    }
    const nodes = types.map((t) => this.typedNode(schema, t, where));
    return nodes.length === 1 ? nodes[0]! : { kind: "union", alternatives: nodes };
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
        return { schema };
      }
    }
    if (words.length === 1 && words[0] === "type") {
      const t = n["type"];
      const out = new Set(typeof t === "string" ? [t] : Array.isArray(t) ? (t as string[]) : []);
      const types = this.typesOf(rest);
      let left = (types === "any" ? ALL_TYPES : types).filter((x) => !out.has(x) && !(x === "integer" && out.has("number")));
      // a number that is not an integer has no grammar here (1.0 is an integer): refused
      if (out.has("integer") && left.includes("number")) return { schema };
      if (left.length === 0) return { schema };
      left = [...new Set(left)];
      return { schema: { ...rest, type: left.length === 1 ? left[0] : left } };
    }
    const single = (x: unknown): string | null =>
      isObject(x) && Array.isArray(x["required"]) && x["required"].length === 1 && typeof x["required"][0] === "string" && Object.keys(x).every((k) => k === "required" || !ASSERTION_KEYWORDS.includes(k))
        ? (x["required"][0] as string)
        : null;
    let keys: string[] | null = null;
    if (words.length === 1 && words[0] === "required" && single(n) !== null) keys = [single(n)!];
    if (words.length === 1 && words[0] === "anyOf" && Array.isArray(n["anyOf"]) && n["anyOf"].every((x) => single(x) !== null)) keys = n["anyOf"].map((x) => single(x)!);
    if (keys !== null) {
      const types = this.typesOf(rest);
      const prior = (rest as Record<symbol, unknown>)[FORBIDDEN] as string[] | undefined;
      return { schema: { ...rest, ...(types === "any" ? { type: ALL_TYPES } : {}), [FORBIDDEN]: [...(prior ?? []), ...keys] } };
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
    return { schema };
  }

  /**
   * dependentRequired (and draft-7 `dependencies` with arrays) on an object: one alternative per
   * choice of trigger keys, each either absent (forbidden) or present with its dependents required.
   * The alternatives are disjoint, so the union is exact. Null when there is nothing to split.
   */
  private dependencyBranches(schema: Json, where: string): Json[] | null {
    const key = has(schema, "dependentRequired") ? "dependentRequired" : has(schema, "dependencies") ? "dependencies" : null;
    if (key === null) return null;
    const deps = schema[key];
    if (!isObject(deps) || !Object.values(deps).every((v) => Array.isArray(v) && v.every((x) => typeof x === "string"))) return null;
    if (schema["type"] !== "object" && !(Array.isArray(schema["type"]) && schema["type"].length === 1 && schema["type"][0] === "object")) return null;
    const { [key]: _, ...rest } = schema;
    const required = new Set(Array.isArray(rest["required"]) ? (rest["required"] as string[]) : []);
    const closed = rest["additionalProperties"] === false && !has(rest, "patternProperties");
    const declared = isObject(rest["properties"]) ? new Set(Object.keys(rest["properties"])) : new Set<string>();
    // triggers that matter: not already required-with-dependents, and able to appear
    const forced: string[] = [];
    const triggers: Array<[string, string[]]> = [];
    for (const [k, v] of Object.entries(deps) as Array<[string, string[]]>) {
      const missing = v.filter((x) => !required.has(x));
      if (missing.length === 0) continue;
      if (closed && !declared.has(k)) continue;
      if (required.has(k)) forced.push(...missing);
      else triggers.push([k, missing]);
    }
    if (2 ** triggers.length > MAX_DEPENDENCY_BRANCHES) {
      this.report.unsupported(key, `${key} with ${triggers.length} independent trigger keys (more than ${Math.log2(MAX_DEPENDENCY_BRANCHES)}) is not supported`, pointerJoin(where, key));
      return null;
    }
    const out: Json[] = [];
    for (let mask = 0; mask < 2 ** triggers.length; mask++) {
      const req = new Set([...required, ...forced]);
      const forbid: string[] = [];
      triggers.forEach(([k, v], i) => {
        if (mask & (1 << i)) {
          req.add(k);
          for (const x of v) req.add(x);
        } else forbid.push(k);
      });
      // a branch that forbids a key it also requires matches nothing
      if (forbid.some((k) => req.has(k))) continue;
      const prior = ((rest as Record<symbol, unknown>)[FORBIDDEN] as string[] | undefined) ?? [];
      out.push({ ...rest, required: [...req], [FORBIDDEN]: [...prior, ...forbid] });
    }
    if (out.length === 0) {
      this.report.unsupported(key, `${key} leaves no object that can be valid`, pointerJoin(where, key));
      return null;
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
            if (!(e instanceof MergeConflict) || e.keyword !== "type") throw e;
            // an alternative whose type the siblings exclude matches nothing: dropped
          }
        }
        if (out.length === 0) this.report.unsupported(key, `no alternative of ${key} is compatible with the keywords beside it`, pointerJoin(where, key));
        const keptAnnotations = Object.fromEntries(Object.entries(rest).filter(([k]) => !ASSERTION_KEYWORDS.includes(k)));
        s = { ...keptAnnotations, [key]: out.length > 0 ? out : alts };
        break;
      }
    } catch (e) {
      if (!(e instanceof MergeConflict)) throw e;
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

  /** Alternatives that no value can match twice: different types, or different consts of one required property. */
  private disjoint(alts: unknown[]): boolean {
    const sig = alts.map((a) => {
      const s = isObject(a) ? (this.inlinedOrNull(a) ?? a) : a;
      if (!isObject(s)) return null;
      const t = s["type"];
      const types = typeof t === "string" ? [t === "integer" ? "number" : t] : null;
      let tag: string | null = null;
      if (isObject(s["properties"])) {
        for (const [name, p] of Object.entries(s["properties"])) {
          const req = Array.isArray(s["required"]) && s["required"].includes(name);
          if (req && isObject(p) && (has(p, "const") || (Array.isArray(p["enum"]) && p["enum"].length === 1))) {
            tag = `${name}\u0000${jsonDump(has(p, "const") ? p["const"] : (p["enum"] as unknown[])[0])}`;
          }
        }
      }
      const constTag = has(s, "const") ? jsonDump(s["const"]) : null;
      return { types, tag, constTag };
    });
    for (let i = 0; i < sig.length; i++) {
      for (let j = i + 1; j < sig.length; j++) {
        const a = sig[i];
        const b = sig[j];
        if (a === null || b === null) return false;
        if (a.types !== null && b.types !== null && a.types[0] !== b.types[0]) continue;
        if (a.constTag !== null && b.constTag !== null && a.constTag !== b.constTag) continue;
        if (a.tag !== null && b.tag !== null && a.tag.split("\u0000")[0] === b.tag.split("\u0000")[0] && a.tag !== b.tag) continue;
        return false;
      }
    }
    return true;
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
      this.report.unsupported(has(schema, "const") ? "const" : "enum", "no value of const/enum satisfies the keywords beside it", pointerJoin(where, has(schema, "const") ? "const" : "enum"));
      return { kind: "any-value" };
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
    let additional: SchemaNode | boolean = true;
    let apKey = "additionalProperties";
    if (!has(schema, apKey) && has(schema, "unevaluatedProperties") && !has(schema, "patternProperties")) apKey = "unevaluatedProperties";
    if (has(schema, apKey)) {
      const ap = schema[apKey];
      const apWhere = pointerJoin(where, apKey);
      if (typeof ap === "boolean") additional = ap;
      else if (isObject(ap)) additional = Object.keys(ap).length === 0 ? true : this.normalize(ap, apWhere);
      else this.report.invalid(`${apKey} must be a boolean or a schema`, apWhere);
    }
    // a required property that is not declared: it must be there, with the additional schema
    const declared = new Set(properties.map((p) => p.name));
    const reqList = Array.isArray(schema["required"]) ? (schema["required"] as string[]) : [];
    for (const [i, name] of reqList.entries()) {
      if (declared.has(name)) continue;
      if (additional === false) {
        this.report.unsupported("required", `required property ${JSON.stringify(name)} is neither declared nor allowed by additionalProperties`, pointerJoin(pointerJoin(where, "required"), i));
        continue;
      }
      properties.push({ name, schema: additional === true ? { kind: "any-value" } : additional });
      declared.add(name);
    }
    const consumed = ["type", "properties", "required", "additionalProperties", "unevaluatedProperties"];
    const forbidden = ((schema as Record<symbol, unknown>)[FORBIDDEN] as string[] | undefined) ?? [];
    for (const k of forbidden) {
      if (required.has(k)) this.report.unsupported("not", `property ${JSON.stringify(k)} is both required and forbidden (not/dependentRequired): no object is valid`, where);
    }
    if (forbidden.length > 0) {
      for (let i = properties.length - 1; i >= 0; i--) if (forbidden.includes(properties[i]!.name)) properties.splice(i, 1);
    }
    // patternProperties with no other keys allowed: the other keys are the patterns' keys (one
    // value schema for all of them, and no declared name matching one: a key under two schemas
    // would need both)
    let patternKeys: string[] | undefined;
    const pp = schema["patternProperties"];
    if (isObject(pp) && Object.keys(pp).length > 0) {
      const schemas = Object.values(pp).map(jsonDump);
      const vacuous = Object.values(pp).every((v) => v === true || (isObject(v) && Object.keys(v).length === 0));
      if (vacuous && additional === true) consumed.push("patternProperties");
      else if (additional === false && schemas.every((x) => x === schemas[0])) {
        const patterns = Object.keys(pp);
        const clash = [...properties.map((p) => p.name), ...forbidden].find((name) => patterns.some((pat) => safeTest(pat, name) !== false));
        if (clash === undefined) {
          patternKeys = patterns;
          additional = this.normalize(Object.values(pp)[0], pointerJoin(pointerJoin(where, "patternProperties"), patterns[0]!));
          consumed.push("patternProperties");
        }
      }
    }
    if (typeof schema["minProperties"] === "number" && schema["minProperties"] <= required.size) consumed.push("minProperties");
    if (typeof schema["maxProperties"] === "number" && additional === false && schema["maxProperties"] >= properties.length) consumed.push("maxProperties");
    if (isObject(schema["propertyNames"]) && properties.length === 0 && additional === false) consumed.push("propertyNames");
    this.leftovers(schema, where, consumed, new Set(["object"]), "on an object");
    if (forbidden.length > 0 && patternKeys === undefined && additional !== false) return { kind: "object", properties, required, additional, forbidden };
    return patternKeys === undefined ? { kind: "object", properties, required, additional } : { kind: "object", properties, required, additional, patternKeys };
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
    const rest = restRaw === false ? null : this.normalize(restRaw, restWhere);
    const min = this.count(schema, "minItems", where) ?? 0;
    let max = this.count(schema, "maxItems", where) ?? Infinity;
    if (rest === null) max = Math.min(max, prefix.length);
    if (min > max) this.report.invalid(`minItems ${min} is greater than maxItems ${max}`, where);
    this.withinRepetitionLimit("maxItems", max, where);
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
        }
      } else if (UNSUPPORTED_FORMATS.has(format)) {
        this.report.unsupported("format", `format ${JSON.stringify(format)} is not supported`, pointerJoin(where, "format"));
      } else {
        consumed.push("format"); // an unknown format is an annotation (validators ignore it)
      }
    }
    this.leftovers(schema, where, consumed, new Set(["string"]), "on a string");
    this.withinRepetitionLimit("maxLength", max, where);
    if (pattern !== null) return { kind: "regex", pattern, where: patternWhere, minLength: min, maxLength: max };
    if (min === 0 && max === Infinity) return { kind: "primitive", type: "string" };
    return { kind: "string-length", min, max };
  }

  /** The grammar engine reads a repetition maximum above 2,000 as none: refused rather than loosened. */
  private withinRepetitionLimit(key: string, max: number, where: string): void {
    if (max !== Infinity && max > MAX_REPETITION) {
      this.report.unsupported(key, `${key} ${max} is above the ${MAX_REPETITION} repetitions a grammar can count`, pointerJoin(where, key));
    }
  }

  private numberNode(schema: Json, type: "number" | "integer", where: string): SchemaNode {
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
    this.leftovers(schema, where, consumed, new Set([type]), `on type ${type}`);
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

