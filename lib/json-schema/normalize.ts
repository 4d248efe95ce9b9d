/**
 * Raw JSON schema -> a typed node that says which GBNF shape it becomes. The choice follows the
 * precedence of llama.cpp's converter (`$ref`, then `oneOf`/`anyOf`, a `type` list, `const`,
 * `enum`, objects, `allOf`, arrays, `pattern`, formats, string lengths, integer bounds, plain
 * types), so the emitted text is the reference's. What the reference would silently leave out is
 * reported here with its JSON pointer: an error by default, a warning in "ignore" mode (where the
 * node is then exactly what the reference would build).
 *
 * Subschemas are normalized eagerly except ref targets, which the emitter normalizes on first use
 * (refs may be recursive).
 */
import { MAX_REPETITION } from "./pattern.js";
import { jsonDump, gbnfFormatLiteral, pointerJoin } from "./literal.js";
import { constrains, isVacuous, JSON_TYPES, typeOfValue, valueHasType, ASSERTION_KEYWORDS, type JsonType } from "./keywords.js";
import type { Dfa } from "./regex-dfa.js";
import type { RefTable } from "./refs.js";
import type { Reporter } from "./report.js";
import { isObject } from "../json-syntax.js";

export type SchemaNode =
  | { kind: "ref"; ref: string }
  | { kind: "union"; alternatives: SchemaNode[] }
  | { kind: "const"; value: unknown }
  | { kind: "enum"; values: unknown[] }
  | {
      kind: "object";
      properties: Property[];
      required: ReadonlySet<string>;
      additional: SchemaNode | boolean | null;
      /** default mode: keys that must not appear (`not: {required}`, a dependentRequired branch) */
      forbidden?: string[];
      /** default mode: the other members by key language (patternProperties, propertyNames); replaces `additional` */
      members?: Member[];
      /** default mode: bounds on the count of members (minProperties 1 only where other keys may appear) */
      minProperties?: number;
      maxProperties?: number;
    }
  /** `allOf` merged into one object, or the intersection of its enums (GBNF literals, sorted). */
  | { kind: "all-of"; properties: Property[]; required: ReadonlySet<string>; enumLiterals: string[] }
  | { kind: "tuple"; items: SchemaNode[] }
  | { kind: "array"; item: SchemaNode; min: number; max: number }
  | { kind: "pattern"; pattern: string; where: string }
  | { kind: "uuid"; format: string }
  | { kind: "string-format"; format: "date" | "time" | "date-time" }
  | { kind: "string-length"; min: number; max: number }
  | { kind: "integer-range"; min: bigint | null; max: bigint | null }
  | { kind: "any-object" }
  | { kind: "any-value" }
  | { kind: "primitive"; type: Exclude<JsonType, "object"> }
  // default mode only (normalize-default.ts)
  /** Items by position, then `rest` for the others (null: no others), `min`..`max` in all. */
  | { kind: "items"; prefix: SchemaNode[]; rest: SchemaNode | null; min: number; max: number }
  /** A string matching an ECMA-262 pattern (and lengths), written over its JSON text. */
  | { kind: "regex"; pattern: string; where: string; minLength: number; maxLength: number }
  /** A number between bounds (null: none); `rule` is its GBNF (number-range.ts). */
  | { kind: "number-range"; rule: string }
  /** A JSON string that is none of `values` (`not: {enum}` on a string). */
  | { kind: "not-strings"; values: string[] }
  /** A number whose text a DFA accepts (default mode: multipleOf, multiple-of.ts). */
  | { kind: "number-dfa"; dfa: Dfa }
  /** A JSON string whose decoded text a DFA accepts (default mode: a oneOf of string schemas). */
  | { kind: "string-dfa"; dfa: Dfa }
  /** No value is valid (`enum` values all excluded, a required property that admits nothing). */
  | { kind: "never"; keyword: string; where: string; reason: string };

/** Undeclared members whose key is in `keys` (a DFA over the decoded key) and whose value is `value`. */
export interface Member {
  readonly keys: Dfa;
  readonly value: SchemaNode;
}

export interface Property {
  readonly name: string;
  readonly schema: SchemaNode;
}

type Json = Record<string, unknown>;

const has = (o: Json, k: string): boolean => Object.hasOwn(o, k);
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const DATE_FORMATS = new Set(["date", "time", "date-time"]);
/** Keywords that hold subschemas for others to `$ref` but constrain nothing themselves. */
const CONTAINERS = new Set(["$defs", "definitions"]);

/** Deepest nesting of subschemas compiled (a 1,000-level schema fails at once, not on the JS stack). */
export const MAX_SCHEMA_DEPTH = 256;

export class Normalizer {
  private depth = 0;

  constructor(
    protected readonly refs: RefTable,
    protected readonly report: Reporter,
  ) {}

  normalize(schema: unknown, where: string): SchemaNode {
    if (this.depth >= MAX_SCHEMA_DEPTH) this.report.invalid(`the schema nests deeper than ${MAX_SCHEMA_DEPTH} levels`, where);
    this.depth++;
    try {
      return this.node(schema, where);
    } finally {
      this.depth--;
    }
  }

  /** A ref's node normalized already (the default mode's shared schemas); undefined otherwise. */
  sharedNode(_ref: string): { node: SchemaNode; once: boolean } | undefined {
    return undefined;
  }

  protected node(schema: unknown, where: string): SchemaNode {
    if (schema === null) return { kind: "any-object" }; // what the reference makes of an unresolved ref
    if (typeof schema === "boolean") {
      this.report.unsupported("boolean schema", `a boolean schema (${schema}) is not supported here; use {} or a typed schema`, where);
      return { kind: "any-value" };
    }
    if (!isObject(schema)) this.report.invalid(`a schema must be an object or a boolean, got ${jsonDump(schema)}`, where);
    const type = schema["type"];
    if (has(schema, "type")) this.checkType(type, pointerJoin(where, "type"));
    if (has(schema, "format") && typeof schema["format"] !== "string") {
      this.report.invalid("format must be a string", pointerJoin(where, "format"));
    }
    const format = typeof schema["format"] === "string" ? schema["format"] : "";
    const untyped = type === undefined;

    if (has(schema, "$ref")) {
      const ref = schema["$ref"];
      if (typeof ref !== "string") this.report.invalid("$ref must be a string", pointerJoin(where, "$ref"));
      this.leftovers(schema, where, ["$ref", ...this.typeImplied(schema, [schema])], "all", "next to $ref");
      return { kind: "ref", ref };
    }
    if (has(schema, "oneOf") || has(schema, "anyOf")) {
      const key = has(schema, "oneOf") ? "oneOf" : "anyOf";
      const alts = this.nonEmptyArray(schema[key], pointerJoin(where, key));
      this.leftovers(schema, where, [key, ...this.typeImplied(schema, alts)], "all", `next to ${key}`);
      return { kind: "union", alternatives: alts.map((a, i) => this.normalize(a, pointerJoin(pointerJoin(where, key), i))) };
    }
    if (Array.isArray(type)) {
      return { kind: "union", alternatives: type.map((t) => this.normalize({ ...schema, type: t }, where)) };
    }
    if (has(schema, "const")) return this.constNode(schema, where);
    if (has(schema, "enum")) return this.enumNode(schema, where);
    if (
      (untyped || type === "object") &&
      (has(schema, "properties") || (has(schema, "additionalProperties") && schema["additionalProperties"] !== true))
    ) {
      return this.objectNode(schema, where);
    }
    if ((untyped || type === "object" || type === "string") && has(schema, "allOf")) return this.allOfNode(schema, where);
    if ((untyped || type === "array") && (has(schema, "items") || has(schema, "prefixItems"))) return this.arrayNode(schema, where);
    if ((untyped || type === "string") && has(schema, "pattern")) {
      const pattern = schema["pattern"];
      if (typeof pattern !== "string") this.report.invalid("pattern must be a string", pointerJoin(where, "pattern"));
      this.leftovers(schema, where, ["type", "pattern"], new Set(["string"]), "next to pattern");
      return { kind: "pattern", pattern, where: pointerJoin(where, "pattern") };
    }
    if ((untyped || type === "string") && /^uuid[1-5]?$/.test(format)) {
      this.leftovers(schema, where, ["type"], new Set(["string"]), `with format ${format}`);
      return { kind: "uuid", format };
    }
    if ((untyped || type === "string") && DATE_FORMATS.has(format)) {
      this.leftovers(schema, where, ["type"], new Set(["string"]), `with format ${format}`);
      return { kind: "string-format", format: format as "date" | "time" | "date-time" };
    }
    if (type === "string" && (has(schema, "minLength") || has(schema, "maxLength"))) {
      const min = this.count(schema, "minLength", where) ?? 0;
      const max = this.count(schema, "maxLength", where) ?? Infinity;
      if (min > max) this.report.invalid(`minLength ${min} is greater than maxLength ${max}`, where);
      this.leftovers(schema, where, ["type", "minLength", "maxLength"], new Set(["string"]), "on a string");
      return { kind: "string-length", min, max };
    }
    if (type === "integer" && ["minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"].some((k) => has(schema, k))) {
      return this.integerRangeNode(schema, where);
    }
    if (Object.keys(schema).length === 0 || type === "object") {
      this.leftovers(schema, where, ["type"], new Set(["object"]), "on an object");
      return { kind: "any-object" };
    }
    if (untyped) {
      this.leftovers(schema, where, [], "all", "on a schema without type");
      return { kind: "any-value" };
    }
    const prim = type as Exclude<JsonType, "object">;
    this.leftovers(schema, where, ["type"], new Set([prim]), `on type ${prim}`);
    return { kind: "primitive", type: prim };
  }

  /** Report each assertion keyword of `schema` that the chosen translation leaves out. */
  protected leftovers(schema: Json, where: string, consumed: readonly string[], produced: ReadonlySet<JsonType> | "all", context: string): void {
    for (const key of Object.keys(schema)) {
      if (consumed.includes(key) || CONTAINERS.has(key) || !ASSERTION_KEYWORDS.includes(key)) continue;
      if (!constrains(key, produced) || isVacuous(key, schema[key])) continue;
      this.report.unsupported(key, `keyword ${JSON.stringify(key)} ${context} is not supported`, pointerJoin(where, key));
    }
  }

  protected checkType(type: unknown, where: string): void {
    const ok = (t: unknown): boolean => typeof t === "string" && JSON_TYPES.has(t);
    if (Array.isArray(type)) {
      if (type.length === 0) this.report.invalid("type must not be an empty array", where);
      type.forEach((t, i) => {
        if (!ok(t)) this.report.invalid(`unknown type ${jsonDump(t)}`, pointerJoin(where, i));
      });
    } else if (!ok(type)) {
      this.report.invalid(`unknown type ${jsonDump(type)}`, where);
    }
  }

  protected nonEmptyArray(v: unknown, where: string): unknown[] {
    if (!Array.isArray(v) || v.length === 0) this.report.invalid("must be a non-empty array", where);
    return v;
  }

  /** A non-negative integer keyword (`minItems`...), or undefined when absent. */
  protected count(schema: Json, key: string, where: string): number | undefined {
    if (!has(schema, key)) return undefined;
    const v = schema[key];
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
      this.report.invalid(`${key} must be a non-negative integer, got ${jsonDump(v)}`, pointerJoin(where, key));
    }
    // llama.cpp's grammar parser refuses a minimum of more than 2000 repetitions (a maximum
    // beyond it it treats as none, as it does here for INT_MAX)
    if (key.startsWith("min") && v > MAX_REPETITION) {
      this.report.invalid(`${key} ${v} is more than the ${MAX_REPETITION} repetitions a grammar allows`, pointerJoin(where, key));
    }
    // the reference keeps these in a C int, with INT_MAX meaning "no maximum"
    if (v < 2147483647) return v;
    if (key.startsWith("max")) return Infinity;
    this.report.unsupported(key, `${key} ${v} is too large`, pointerJoin(where, key));
    return 0;
  }

  /**
   * `type` next to `$ref` or `anyOf`/`oneOf` (which the reference ignores) is fine when every
   * alternative only produces values of that type anyway.
   */
  private typeImplied(schema: Json, alternatives: unknown[]): string[] {
    const type = schema["type"];
    if (typeof type !== "string") return [];
    const seen = new Set<string>();
    const produces = (s: unknown): boolean => {
      if (s === null) return type === "object"; // an unresolved ref becomes `object`
      if (!isObject(s)) return false;
      if (has(s, "$ref")) {
        const ref = s["$ref"];
        if (typeof ref !== "string") return false;
        if (seen.has(ref)) return true; // a cycle adds no other type
        seen.add(ref);
        return produces(this.refs.get(ref)?.schema ?? null);
      }
      for (const key of ["oneOf", "anyOf"]) if (has(s, key)) return Array.isArray(s[key]) && (s[key] as unknown[]).every(produces);
      const t = s["type"];
      if (Array.isArray(t)) return t.every((x) => x === type || (type === "number" && x === "integer"));
      if (has(s, "const")) return valueHasType(s["const"], type);
      if (has(s, "enum")) return Array.isArray(s["enum"]) && s["enum"].every((v) => valueHasType(v, type));
      if (typeof t === "string") return t === type || (type === "number" && t === "integer");
      if (has(s, "properties") || (has(s, "additionalProperties") && s["additionalProperties"] !== true) || Object.keys(s).length === 0) {
        return type === "object";
      }
      if (has(s, "items") || has(s, "prefixItems")) return type === "array";
      if (has(s, "pattern") || (typeof s["format"] === "string" && /^(uuid[1-5]?|date|time|date-time)$/.test(s["format"]))) return type === "string";
      return false;
    };
    return alternatives.every(produces) ? ["type"] : [];
  }

  /** `type` next to const/enum is fine when every value has that type. */
  private typeConsumed(schema: Json, values: unknown[]): string[] {
    const type = schema["type"];
    return typeof type === "string" && values.every((v) => valueHasType(v, type)) ? ["type"] : [];
  }

  private constNode(schema: Json, where: string): SchemaNode {
    const value = schema["const"];
    const consumed = ["const", ...this.typeConsumed(schema, [value])];
    const enumValues = schema["enum"];
    if (Array.isArray(enumValues) && enumValues.some((v) => jsonDump(v) === jsonDump(value))) consumed.push("enum");
    this.leftovers(schema, where, consumed, new Set([typeOfValue(value)]), "next to const");
    return { kind: "const", value };
  }

  private enumNode(schema: Json, where: string): SchemaNode {
    const values = schema["enum"];
    if (!Array.isArray(values)) this.report.invalid("enum must be an array", pointerJoin(where, "enum"));
    if (values.length === 0) this.report.unsupported("enum", "an empty enum accepts no value", pointerJoin(where, "enum"));
    this.leftovers(schema, where, ["enum", ...this.typeConsumed(schema, values)], new Set(values.map(typeOfValue)), "next to enum");
    return { kind: "enum", values };
  }

  protected requiredSet(schema: Json, where: string): Set<string> {
    const required = schema["required"];
    if (required === undefined) return new Set();
    if (!Array.isArray(required) || !required.every((r) => typeof r === "string")) {
      this.report.invalid("required must be an array of strings", pointerJoin(where, "required"));
    }
    return new Set(required as string[]);
  }

  protected propertyList(props: unknown, where: string): Property[] {
    if (!isObject(props)) this.report.invalid("properties must be an object", where);
    return Object.entries(props).map(([name, s]) => ({ name, schema: this.normalize(s, pointerJoin(where, name)) }));
  }

  private objectNode(schema: Json, where: string): SchemaNode {
    const properties = has(schema, "properties") ? this.propertyList(schema["properties"], pointerJoin(where, "properties")) : [];
    const required = this.requiredSet(schema, where);
    const declared = new Set(properties.map((p) => p.name));
    [...required].forEach((name) => {
      if (!declared.has(name)) {
        const i = (schema["required"] as string[]).indexOf(name);
        this.report.unsupported(
          "required",
          `required property ${JSON.stringify(name)} is not declared in properties and would not be enforced`,
          pointerJoin(pointerJoin(where, "required"), i),
        );
      }
    });
    let additional: SchemaNode | boolean | null = null;
    if (has(schema, "additionalProperties")) {
      const ap = schema["additionalProperties"];
      const apWhere = pointerJoin(where, "additionalProperties");
      if (typeof ap === "boolean") additional = ap;
      else if (isObject(ap)) additional = this.normalize(ap, apWhere);
      else this.report.invalid("additionalProperties must be a boolean or a schema", apWhere);
    }
    this.leftovers(schema, where, ["type", "properties", "required", "additionalProperties"], new Set(["object"]), "on an object");
    return { kind: "object", properties, required, additional };
  }

  private allOfNode(schema: Json, where: string): SchemaNode {
    const allOfWhere = pointerJoin(where, "allOf");
    const parts = this.nonEmptyArray(schema["allOf"], allOfWhere);
    const properties: Property[] = [];
    const required = new Set<string>();
    const enumCounts = new Map<string, number>();
    const active = new Set<string>();
    const requiredChecks: Array<{ name: string; where: string }> = [];

    const addComponent = (comp: unknown, compWhere: string, isRequired: boolean): void => {
      if (!isObject(comp)) {
        if (comp === null) return; // unresolved ref: the reference ignores it
        this.report.unsupported("allOf", "a non-object allOf component is not supported", compWhere);
        return;
      }
      if (has(comp, "$ref")) {
        const ref = comp["$ref"] as string;
        this.leftovers(comp, compWhere, ["$ref"], "all", "next to $ref");
        const target = this.refs.get(ref);
        if (target === undefined || active.has(ref)) {
          if (active.has(ref)) this.report.unsupported("$ref", "a recursive $ref inside allOf is not supported", pointerJoin(compWhere, "$ref"));
          return;
        }
        active.add(ref);
        addComponent(target.schema, target.where, isRequired);
        active.delete(ref);
      } else if (has(comp, "properties")) {
        const props = this.propertyList(comp["properties"], pointerJoin(compWhere, "properties"));
        const compRequired = this.requiredSet(comp, compWhere);
        // The merge requires every property of a top-level component (stricter than the schema,
        // so never wrong output) but none inside an anyOf (which would drop a requirement).
        if (isRequired) {
          for (const name of compRequired) requiredChecks.push({ name, where: pointerJoin(compWhere, "required") });
        } else if (compRequired.size > 0) {
          this.report.unsupported(
            "required",
            "required inside an allOf/anyOf alternative is not supported (the merge makes its properties optional)",
            pointerJoin(compWhere, "required"),
          );
        }
        const consumed = ["properties", "required", "additionalProperties"];
        if (comp["type"] === "object") consumed.push("type");
        this.leftovers(comp, compWhere, consumed, new Set(["object"]), "in an allOf component");
        for (const p of props) {
          properties.push(p);
          if (isRequired) required.add(p.name);
        }
      } else if (has(comp, "enum")) {
        const values = comp["enum"];
        if (!Array.isArray(values)) this.report.invalid("enum must be an array", pointerJoin(compWhere, "enum"));
        this.leftovers(comp, compWhere, ["enum", ...this.typeConsumed(comp, values)], new Set(values.map(typeOfValue)), "next to enum");
        for (const v of values) {
          const lit = gbnfFormatLiteral(jsonDump(v));
          enumCounts.set(lit, (enumCounts.get(lit) ?? 0) + 1);
        }
      } else {
        const consumed = comp["type"] === "object" ? ["type"] : [];
        this.leftovers(comp, compWhere, consumed, "all", "in an allOf component (only properties, enum and $ref components are merged)");
      }
    };

    parts.forEach((part, i) => {
      const partWhere = pointerJoin(allOfWhere, i);
      if (isObject(part) && has(part, "anyOf")) {
        const alts = this.nonEmptyArray(part["anyOf"], pointerJoin(partWhere, "anyOf"));
        this.leftovers(part, partWhere, ["anyOf"], "all", "next to anyOf inside allOf");
        alts.forEach((alt, j) => addComponent(alt, pointerJoin(pointerJoin(partWhere, "anyOf"), j), false));
      } else {
        addComponent(part, partWhere, true);
      }
    });

    for (const { name, where: at } of requiredChecks) {
      if (!properties.some((p) => p.name === name)) {
        this.report.unsupported("required", `required property ${JSON.stringify(name)} is not declared in any allOf component`, at);
      }
    }
    // std::map order: by the literal's bytes
    const enumLiterals = [...enumCounts.entries()]
      .filter(([, n]) => n === parts.length)
      .map(([lit]) => lit)
      .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    if (enumCounts.size > 0 && enumLiterals.length === 0) {
      this.report.unsupported("allOf", "the enums in allOf have no value in common (or are mixed with other components)", allOfWhere);
    } else if (enumLiterals.length > 0 && properties.length > 0) {
      this.report.unsupported("allOf", "allOf mixing enum and properties components is not supported", allOfWhere);
    }
    if (enumLiterals.length === 0 && schema["type"] === "string") {
      this.report.unsupported("allOf", "allOf on a string is only supported as an intersection of enums", allOfWhere);
    }
    this.leftovers(schema, where, ["type", "allOf"], enumLiterals.length > 0 ? "all" : new Set(["object"]), "next to allOf");
    return { kind: "all-of", properties, required, enumLiterals };
  }

  private arrayNode(schema: Json, where: string): SchemaNode {
    // `prefixItems` + `items: false` is the 2020-12 closed tuple (the reference rejects it)
    const closedTuple = has(schema, "prefixItems") && schema["items"] === false;
    const key = has(schema, "items") && !closedTuple ? "items" : "prefixItems";
    const items = schema[key];
    const itemsWhere = pointerJoin(where, key);
    const consumed = ["type", key];
    if (Array.isArray(items)) {
      const n = items.length;
      const min = this.count(schema, "minItems", where);
      const max = this.count(schema, "maxItems", where);
      if (min !== undefined && min <= n) consumed.push("minItems");
      if (max !== undefined && max >= n) consumed.push("maxItems");
      if (key === "items" && schema["additionalItems"] === false) consumed.push("additionalItems");
      if (key === "prefixItems" && schema["items"] === false) consumed.push("items");
      this.leftovers(schema, where, consumed, new Set(["array"]), "on a tuple (tuples are closed: exactly their items)");
      return { kind: "tuple", items: items.map((it, i) => this.normalize(it, pointerJoin(itemsWhere, i))) };
    }
    // a schema in prefixItems (not an array) is taken as the items schema, as the reference does
    if (!isObject(items) && typeof items !== "boolean") this.report.invalid(`${key} must be a schema or an array of schemas`, itemsWhere);
    const min = this.count(schema, "minItems", where) ?? 0;
    const max = this.count(schema, "maxItems", where) ?? Infinity;
    if (min > max) this.report.invalid(`minItems ${min} is greater than maxItems ${max}`, where);
    if (key === "items" && has(schema, "prefixItems")) {
      this.report.unsupported("prefixItems", "prefixItems together with an items schema is not supported", pointerJoin(where, "prefixItems"));
    }
    this.leftovers(schema, where, [...consumed, "prefixItems", "minItems", "maxItems"], new Set(["array"]), "on an array");
    return { kind: "array", item: this.normalize(items, itemsWhere), min, max };
  }

  private integerRangeNode(schema: Json, where: string): SchemaNode {
    const bound = (key: string, round: (x: number) => number, offset: bigint): bigint | null => {
      if (!has(schema, key)) return null;
      const v = schema[key];
      const at = pointerJoin(where, key);
      if (typeof v === "boolean") {
        this.report.unsupported(key, `the draft-4 boolean form of ${key} is not supported; use a number`, at);
        return null;
      }
      if (typeof v !== "number" || !Number.isFinite(v)) this.report.invalid(`${key} must be a number`, at);
      const b = BigInt(round(v)) + offset;
      if (b < INT64_MIN || b > INT64_MAX) {
        this.report.unsupported(key, `${key} ${v} is outside the 64-bit integer range`, at);
        return null;
      }
      return b;
    };
    // Fractional bounds round inward; when both forms are given the tighter one wins.
    const tighter = (a: bigint | null, b: bigint | null, pick: (x: bigint, y: bigint) => bigint): bigint | null =>
      a === null ? b : b === null ? a : pick(a, b);
    let min = tighter(bound("minimum", Math.ceil, 0n), bound("exclusiveMinimum", Math.floor, 1n), (x, y) => (x > y ? x : y));
    let max = tighter(bound("maximum", Math.floor, 0n), bound("exclusiveMaximum", Math.ceil, -1n), (x, y) => (x < y ? x : y));
    if (min !== null && max !== null && min > max) this.report.invalid(`the integer bounds leave no value (${min} > ${max})`, where);
    // the reference uses INT64_MIN/MAX to mean "no bound"
    if (min === INT64_MIN) min = null;
    if (max === INT64_MAX) max = null;
    this.leftovers(schema, where, ["type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"], new Set(["integer"]), "on an integer");
    if (min === null && max === null) return { kind: "primitive", type: "integer" };
    return { kind: "integer-range", min, max };
  }
}
