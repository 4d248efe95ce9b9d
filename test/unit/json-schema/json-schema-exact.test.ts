/**
 * The default mode's exact translations of issue 21, session 3, against ajv 2020 + ajv-formats:
 * listed values decided one by one against every other keyword, schemas that admit no value
 * dropped where they stand, counts above the grammar parser's 2,000, patternProperties and
 * propertyNames as key languages (regex-dfa.ts), minProperties/maxProperties, oneOf proven
 * disjoint or split by required keys, and a pattern beside minLength/maxLength. Each case: the
 * valid examples are accepted, the invalid ones rejected, and random values around them obey
 * accepted => valid. The grammars here are recursive (one rule per automaton state), so a small
 * GBNF recognizer (json-schema-gbnf-match.ts) stands in for the engine.
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LlamapegError } from "../../../lib/errors.js";
import { compileJsonSchema } from "../../../lib/json-schema/index.js";
import { accepts, complement, difference, intersect, stringsDfa, withLength } from "../../../lib/json-schema/regex-dfa.js";
import { dfaStringRule, patternDfa } from "../../../lib/json-schema/regex-gbnf.js";
import { RuleSet } from "../../../lib/json-schema/rules.js";
import { GbnfMatcher } from "./json-schema-gbnf-match.js";
import { thrownLlamapegError } from "../../support/thrown.js";

// multipleOf in decimal terms (10.99 is a multiple of 0.01), as the corpus labels it; a double's
// division says otherwise
const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true, multipleOfPrecision: 9 });
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (a: Ajv2020) => void;
addFormats(ajv);

/** Python's json.dumps layout (MaskBench's): ", " and ": " separators. */
function dumps(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(dumps).join(", ")}]`;
  if (typeof v === "object" && v !== null) return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${dumps(x)}`).join(", ")}}`;
  return JSON.stringify(v);
}

interface Case {
  name: string;
  schema: Record<string, unknown>;
  valid: unknown[];
  invalid: unknown[];
  /** Keys the random objects draw from. */
  keys?: string[];
}

const CASES: Case[] = [
  {
    name: "enum beside not/if/oneOf/uniqueItems: each value decided against the whole schema",
    schema: {
      type: "object",
      properties: {
        a: { enum: ["x", "yy", "zzz", 4, [1, 1], [1, 2]], not: { type: "string", minLength: 3 }, uniqueItems: true },
        b: { allOf: [{ enum: [1, 2, 3, 10] }, { if: { minimum: 3 }, then: { multipleOf: 5 } }] },
        c: { oneOf: [{ enum: ["p", "q"] }, { enum: ["q", "r"] }] },
      },
      additionalProperties: false,
    },
    valid: [{ a: "x" }, { a: "yy" }, { a: 4 }, { a: [1, 2] }, { b: 1 }, { b: 10 }, { c: "p" }, { c: "r" }],
    invalid: [{ a: "zzz" }, { a: [1, 1] }, { b: 3 }, { c: "q" }],
  },
  {
    name: "a property that admits no value is forbidden; an array position that admits none ends the array",
    schema: {
      type: "object",
      properties: { gone: { type: "object", enum: ["a", "b"] }, k: { type: "integer" }, t: { type: "array", prefixItems: [{ type: "integer" }, { const: 1, type: "string" }] } },
    },
    valid: [{}, { k: 1 }, { k: 1, other: "x" }, { t: [] }, { t: [5] }],
    invalid: [{ gone: "a" }, { gone: {} }, { t: [5, 1] }, { t: [5, "1"] }],
    keys: ["gone", "k", "t", "other"],
  },
  {
    name: "maxLength and maxItems above 2,000",
    schema: { type: "object", properties: { s: { type: "string", minLength: 2, maxLength: 4500 }, l: { type: "array", items: { type: "integer" }, maxItems: 2500 } }, additionalProperties: false },
    valid: [{ s: "ab" }, { s: "a".repeat(4500) }, { s: "b".repeat(1999) }, { s: "b".repeat(2000) }, { l: Array.from({ length: 2500 }, (_, i) => i) }],
    invalid: [{ s: "a" }, { s: "a".repeat(4501) }, { l: Array.from({ length: 2501 }, () => 0) }],
  },
  {
    name: "patternProperties: open object, overlapping patterns, declared names matching a pattern",
    schema: { type: "object", properties: { id: { type: "integer" }, x_fixed: { type: "integer" } }, patternProperties: { "^x_": { type: "integer", minimum: 0 }, "_n$": { type: "number", maximum: 10 } } },
    valid: [{}, { id: -1 }, { x_a: 1 }, { x_n: 10 }, { a_n: -5.5 }, { other: "s" }, { x_fixed: 3 }],
    invalid: [{ x_a: -1 }, { x_n: 11 }, { x_n: -1 }, { a_n: "s" }, { x_fixed: -3 }, { x_a: "s" }],
    keys: ["id", "x_a", "x_n", "a_n", "other", "x_fixed", "x_"],
  },
  {
    name: "patternProperties with additionalProperties false and a schema",
    schema: { type: "object", patternProperties: { "^[a-z]+$": { type: "string" } }, additionalProperties: { type: "boolean" } },
    valid: [{ abc: "s" }, { A1: true }, { "": false }],
    invalid: [{ abc: true }, { A1: "s" }],
    keys: ["abc", "A1", "", "b"],
  },
  {
    name: "propertyNames: pattern, lengths and enums over the keys",
    schema: { type: "object", properties: { long_name: { type: "integer" } }, propertyNames: { pattern: "^[a-z_]+$", maxLength: 6 }, additionalProperties: { type: "integer" } },
    valid: [{}, { abc: 1 }, { a_b: 2 }],
    invalid: [{ long_name: 1 }, { Abc: 1 }, { abcdefg: 1 }, { abc: "s" }],
    keys: ["abc", "a_b", "Abc", "abcdefg", "long_name"],
  },
  {
    name: "minProperties 1 beside other keys; min/max over declared properties; a map's count of members",
    schema: {
      type: "object",
      properties: {
        any: { type: "object", additionalProperties: { type: "integer" }, minProperties: 1 },
        some: { type: "object", properties: { a: { type: "integer" }, b: { type: "integer" }, c: { type: "integer" } }, additionalProperties: false, minProperties: 2, maxProperties: 2 },
        map: { type: "object", additionalProperties: { type: "string" }, minProperties: 2, maxProperties: 3 },
      },
      additionalProperties: false,
    },
    valid: [{ any: { k: 1 } }, { any: { k: 1, j: 2 } }, { some: { a: 1, c: 2 } }, { some: { b: 1, c: 2 } }, { map: { x: "1", y: "2" } }, { map: { x: "1", y: "2", z: "3" } }],
    invalid: [{ any: {} }, { some: { a: 1 } }, { some: { a: 1, b: 2, c: 3 } }, { some: {} }, { map: { x: "1" } }, { map: { w: "0", x: "1", y: "2", z: "3" } }, { map: { x: 1, y: 2 } }],
  },
  {
    name: "oneOf proven disjoint: tags, types, a key the other side forbids, disjoint patterns",
    schema: {
      type: "object",
      properties: {
        tagged: { oneOf: [{ type: "object", properties: { kind: { enum: ["a"] }, v: { type: "integer" } }, required: ["kind"] }, { type: "object", properties: { kind: { enum: ["b", "c"] } }, required: ["kind"] }] },
        closed: { oneOf: [{ type: "object", properties: { x: { type: "integer" } }, required: ["x"], additionalProperties: false }, { type: "object", properties: { y: { type: "integer" } }, required: ["y"], additionalProperties: false }] },
        str: { oneOf: [{ type: "string", pattern: "^[0-9]+$" }, { type: "string", pattern: "^[a-z]+$" }, { type: "integer", minimum: 5 }, { type: "integer", maximum: 2 }] },
      },
      additionalProperties: false,
    },
    valid: [{ tagged: { kind: "a", v: 1 } }, { tagged: { kind: "c" } }, { closed: { x: 1 } }, { closed: { y: 2 } }, { str: "123" }, { str: "abc" }, { str: 7 }, { str: 1 }],
    invalid: [{ tagged: { kind: "d" } }, { closed: { x: 1, y: 2 } }, { str: "a1" }, { str: 3 }],
  },
  {
    name: "oneOf split by required keys (alternatives that differ only in required)",
    schema: { type: "object", properties: { r: { type: "number" }, l: { type: "number" }, w: { type: "number" } }, oneOf: [{ required: ["r"] }, { required: ["l", "w"] }] },
    valid: [{ r: 1 }, { l: 1, w: 2 }, { r: 1, l: 2 }, { r: 1, w: 2, z: 0 }],
    invalid: [{}, { l: 1 }, { r: 1, l: 1, w: 2 }],
    keys: ["r", "l", "w", "z"],
  },
  {
    name: "oneOf of string schemas: the strings in exactly one (automata); types two branches admit whole are out",
    schema: {
      type: "object",
      properties: {
        u: { type: "string", oneOf: [{ pattern: "^[0-9a-f]{2}$" }, { pattern: "^[0-9A-F]{2}$" }] },
        v: { type: "string", oneOf: [{}, { enum: ["a", "b"] }] },
        w: { oneOf: [{ format: "ipv4" }, { pattern: "^1" }] },
        n: { oneOf: [{ type: "string", maxLength: 0 }, { type: "string", pattern: "^[0-9]+$" }] },
      },
      additionalProperties: false,
    },
    valid: [{ u: "ab" }, { u: "AB" }, { v: "c" }, { v: "" }, { w: "2.2.2.2" }, { w: "1x" }, { n: "" }, { n: "12" }],
    invalid: [{ u: "12" }, { u: "aB" }, { v: "a" }, { w: "1.1.1.1" }, { w: 5 }, { w: null }, { n: "x" }],
    keys: ["u", "v", "w", "n"],
  },
  {
    name: "no type: keywords constrain their own type only",
    schema: { type: "object", properties: { a: { properties: { x: { type: "integer" } }, required: ["x"] }, b: { items: { type: "integer" } } }, additionalProperties: false },
    valid: [{ a: { x: 1 } }, { a: "s" }, { a: 3 }, { a: null }, { b: [1] }, { b: {} }, { b: "t" }],
    invalid: [{ a: {} }, { a: { x: "1" } }, { b: ["s"] }],
    keys: ["a", "b", "x"],
  },
  {
    name: "oneOf split by the keys present (required keys and tags)",
    schema: { type: "object", properties: { o: { oneOf: [{ properties: { kind: { const: "a" } }, required: ["x"] }, { properties: { kind: { const: "b" } }, required: ["y"] }] } }, additionalProperties: false },
    // (declared properties first, then the required ones not declared: the grammar's order)
    valid: [{ o: { x: 1 } }, { o: { y: 1 } }, { o: { kind: "a", x: 1, y: 2 } }, { o: { kind: "a", x: 1 } }, { o: { kind: "b", y: 1 } }, { o: { y: 1, z: 0 } }],
    invalid: [{ o: { x: 1, y: 1 } }, { o: {} }, { o: 5 }, { o: { x: 1, kind: "b" } }, { o: { y: 1, kind: "a" } }],
    keys: ["o", "x", "y", "kind", "z"],
  },
  {
    name: "multipleOf: the multiples' automaton (decimal divisors too), or the multiples between two bounds",
    schema: {
      type: "object",
      properties: {
        cents: { type: "number", multipleOf: 0.01, minimum: 0 },
        four: { type: "integer", multipleOf: 4 },
        half: { type: "number", multipleOf: 2.5, exclusiveMinimum: 0 },
        box: { type: "integer", multipleOf: 3, minimum: 4, exclusiveMaximum: 15 },
      },
      additionalProperties: false,
    },
    valid: [{ cents: 10.99 }, { cents: 0 }, { cents: 10 }, { cents: 0.5 }, { four: -8 }, { four: 0 }, { four: 100 }, { half: 7.5 }, { half: 10 }, { box: 6 }, { box: 12 }],
    invalid: [{ cents: 10.001 }, { cents: -1 }, { four: 6 }, { four: 4.5 }, { half: 0 }, { half: 1 }, { half: -2.5 }, { box: 3 }, { box: 15 }, { box: 7 }],
    keys: ["cents", "four", "half", "box"],
  },
  {
    name: "not, type by type: strings by automaton, numbers by the bounds' other side, objects by required keys or one property",
    schema: {
      type: "object",
      properties: {
        s: { type: "string", not: { pattern: "^a" } },
        u: { not: { minLength: 2 } },
        n: { type: "number", not: { minimum: 0, maximum: 10 } },
        o: { type: "object", not: { required: ["p", "q"] } },
        t: { type: "object", not: { properties: { kind: { const: "x" } } } },
        e: { not: { enum: ["a", "b"] } },
        l: { type: "array", minItems: 1, not: { maxItems: 2 } },
        m: { type: "object", not: { properties: { x: { type: "array", maxItems: 0 }, y: { type: "string" } } } },
      },
      additionalProperties: false,
    },
    valid: [{ s: "b" }, { s: "" }, { u: "x" }, { u: "" }, { n: -1 }, { n: 10.5 }, { o: { p: 1 } }, { o: {} }, { t: { kind: "y" } }, { t: { kind: 1 } }, { e: "c" }, { e: 5 }, { e: null }, { l: [1, 2, 3] }, { m: { x: [1] } }, { m: { y: 2 } }, { m: { x: "s" } }],
    invalid: [{ s: "ab" }, { u: "xy" }, { u: 5 }, { n: 0 }, { n: 10 }, { n: 5 }, { o: { p: 1, q: 2 } }, { t: {} }, { t: { kind: "x" } }, { e: "a" }, { l: [1] }, { l: [] }, { m: {} }, { m: { x: [], y: "s" } }],
    keys: ["s", "u", "n", "o", "t", "e", "l", "m", "p", "q", "kind", "x", "y"],
  },
  {
    name: "if/then/else as (if and then) or (not if and else)",
    schema: { type: "object", properties: { kind: { type: "string" }, v: {} }, if: { properties: { kind: { const: "num" } } }, then: { properties: { v: { type: "number" } } }, else: { properties: { v: { type: "string" } } }, additionalProperties: false },
    valid: [{ kind: "num", v: 1 }, { kind: "str", v: "x" }, { v: 1 }, { kind: "str" }, {}],
    invalid: [{ kind: "num", v: "x" }, { kind: "str", v: 1 }, { v: "x" }, { kind: 1 }],
    keys: ["kind", "v"],
  },
  {
    name: "allOf of two conditionals; two anyOfs merged as every pair",
    schema: {
      type: "object",
      properties: { k: { type: "string" }, v: {}, w: {} },
      allOf: [
        { if: { properties: { k: { const: "n" } }, required: ["k"] }, then: { properties: { v: { type: "number" } } } },
        { if: { properties: { k: { const: "s" } }, required: ["k"] }, then: { properties: { v: { type: "string" } } } },
        { anyOf: [{ required: ["v"] }, { required: ["w"] }] },
        { anyOf: [{ properties: { w: { type: "integer" } } }, { properties: { w: { type: "boolean" } } }] },
      ],
      additionalProperties: false,
    },
    valid: [{ k: "n", v: 1 }, { k: "s", v: "x" }, { k: "o", v: true }, { w: 1 }, { w: true }, { v: null }],
    invalid: [{ k: "n", v: "x" }, { k: "s", v: 1 }, {}, { w: "s" }, { k: "n" }],
    keys: ["k", "v", "w"],
  },
  {
    name: "dependencies with schemas; one allOf part's additionalProperties over the other part's properties",
    schema: {
      type: "object",
      properties: {
        x: { type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } }, dependencies: { a: { properties: { b: { minimum: 5 } }, required: ["b"] } } },
        y: { allOf: [{ type: "object", properties: { p: { type: "integer" } }, additionalProperties: { type: "string" } }, { properties: { q: {} } }] },
      },
      additionalProperties: false,
    },
    valid: [{ x: {} }, { x: { b: 1 } }, { x: { a: 1, b: 5 } }, { y: { p: 1 } }, { y: { q: "s" } }, { y: { p: 1, q: "t", r: "u" } }],
    invalid: [{ x: { a: 1 } }, { x: { a: 1, b: 4 } }, { y: { q: 1 } }, { y: { r: 1 } }],
    keys: ["x", "y", "a", "b", "p", "q", "r"],
  },
  {
    name: "allOf parts that differ in keywords no validator knows (_id, x-...) merge on the first part's value",
    schema: {
      allOf: [
        { _id: "a", "x-kind": "left", type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
        { _id: "b", "x-kind": "right", properties: { n: { maximum: 3 } } },
      ],
    },
    valid: [{ n: 0 }, { n: 3 }, { n: -2, m: "x" }],
    invalid: [{}, { n: 4 }, { n: "1" }],
    keys: ["n", "m"],
  },
  {
    name: "anchors inside a pattern; a pattern times a long length counter",
    schema: {
      type: "object",
      properties: { w: { type: "string", pattern: "^$|(^(?:\\S+\\s+){0,2}\\S+$)" }, e: { type: "string", pattern: "^[a-z]+(\\.[a-z]+)*@[a-z]+\\.[a-z]{2,}$", maxLength: 300 } },
      additionalProperties: false,
    },
    valid: [{ w: "" }, { w: "a b c" }, { w: "one" }, { e: "a.b@c.de" }, { e: `a@${"b".repeat(290)}.de` }],
    invalid: [{ w: "a b c d" }, { w: " a" }, { e: "a@b" }, { e: `x@${"y".repeat(300)}.com` }],
    keys: ["w", "e"],
  },
  {
    name: "uri and uri-reference as RFC 3986 has them; a pattern and a format together",
    schema: {
      type: "object",
      properties: { u: { type: "string", format: "uri" }, r: { type: "string", format: "uri-reference" }, d: { type: "string", format: "date", pattern: "^([0-9]{4})(-([0-9]{2}))?(-([0-9]{2}))?$" } },
      additionalProperties: false,
    },
    valid: [{ u: "http://x.org/a?b#c" }, { u: "urn:isbn:123" }, { u: "http://[::1]:80/x" }, { r: "a/b" }, { r: "//host/p?q#f" }, { r: "" }, { r: "../x" }, { r: "http://x" }, { d: "2020-02-28" }],
    // (`://` is no URI reference either, RFC 3986 4.2: a relative path's first segment has no
    // `:`; ajv-formats takes it, so it is checked below, not here)
    invalid: [{ u: "a b" }, { u: "/rel" }, { r: "a:b:" + " " }, { u: "http://x/%zz" }, { d: "2020-02-30" }, { d: "2020-02" }],
    keys: ["u", "r", "d"],
  },
  {
    name: "an other key may be a proper prefix of a declared name (or extend one)",
    schema: { type: "object", properties: { ice_man: { type: "object" } }, additionalProperties: { type: "integer" } },
    valid: [{ ice: 1 }, { ice_: 2 }, { ice_man: {} }, { ice_many: 3 }, { "": 4 }],
    invalid: [{ ice_man: 1 }, { ice: "x" }],
    keys: ["ice", "ice_", "ice_man", "ice_many", "", "i"],
  },
  {
    name: "oneOf of open objects with their own keys: both keys present, exactly one branch's value holds",
    schema: { type: "object", properties: { o: { oneOf: [{ type: "object", properties: { c: { type: "integer" } }, required: ["c"] }, { type: "object", properties: { r: { type: "string" } }, required: ["r"] }] } }, additionalProperties: false },
    // (declared properties first: each branch's own, then the other branch's negated one)
    valid: [{ o: { c: 1 } }, { o: { r: "a" } }, { o: { r: "a", c: "x" } }, { o: { r: "a", c: 1.5 } }, { o: { c: 1, r: 5 } }],
    invalid: [{ o: { c: 1, r: "a" } }, { o: { r: "a", c: 1 } }, { o: {} }, { o: { c: "x" } }, { o: 3 }],
    keys: ["o", "c", "r", "z"],
  },
  {
    name: "not integer beside number: a number with a fraction digit that is not 0",
    schema: { type: "object", properties: { f: { type: "number", not: { type: "integer" } }, g: { not: { type: ["integer", "string"] } } }, additionalProperties: false },
    valid: [{ f: 1.5 }, { f: -0.25 }, { g: 2.5 }, { g: null }, { g: [] }],
    invalid: [{ f: 1 }, { f: 2.0 }, { f: "x" }, { g: 3 }, { g: "s" }],
    keys: ["f", "g"],
  },
  {
    name: "a pattern beside minLength/maxLength (the pattern's automaton times a counter)",
    schema: { type: "object", properties: { p: { type: "string", pattern: "^[a-z]+(-[a-z]+)*$", minLength: 3, maxLength: 7 } }, additionalProperties: false },
    valid: [{ p: "abc" }, { p: "a-b" }, { p: "abc-def" }],
    invalid: [{ p: "ab" }, { p: "abcd-efg" }, { p: "a--b" }, { p: "-ab" }],
  },
];

describe("default mode, exact translations: accepted => valid (ajv)", () => {
  for (const c of CASES) {
    it(c.name, () => {
      const m = new GbnfMatcher(compileJsonSchema(c.schema).gbnf);
      const validate = ajv.compile(c.schema);
      for (const v of c.valid) {
        expect(validate(v), `ajv: ${dumps(v)}`).toBe(true);
        expect(m.matches(dumps(v)), `grammar rejects valid ${dumps(v)}`).toBe(true);
      }
      for (const v of c.invalid) {
        expect(validate(v), `ajv: ${dumps(v)}`).toBe(false);
        expect(m.matches(dumps(v)), `grammar accepts invalid ${dumps(v)}`).toBe(false);
      }
      const keys = c.keys ?? ["a", "b", "c", "k", "s", "l", "p", "x", "y", "str", "tagged", "closed", "any", "some"];
      const leaf = fc.oneof(fc.integer({ min: -12, max: 12 }), fc.double({ min: -12, max: 12, noNaN: true }), fc.string({ maxLength: 6 }), fc.constantFrom("a", "b", "c", "x", "yy", "zzz", "123", "abc-d", null, true));
      const value = fc.oneof(leaf, fc.array(leaf, { maxLength: 3 }), fc.dictionary(fc.constantFrom(...keys), leaf, { maxKeys: 3 }));
      const seeds = [...c.valid, ...c.invalid].filter((s) => typeof s === "object" && s !== null && !Array.isArray(s)) as Array<Record<string, unknown>>;
      const around = fc.oneof(
        value,
        fc.dictionary(fc.constantFrom(...keys), value, { maxKeys: 3 }),
        fc.record({ base: fc.constantFrom(...seeds), k: fc.constantFrom(...keys), v: value, inner: fc.constantFrom(...keys) }).map(({ base, k, v, inner }) => {
          // change one member, or one member inside a member
          const [first] = Object.keys(base);
          const nested = first !== undefined && typeof base[first] === "object" && base[first] !== null && !Array.isArray(base[first]);
          return nested ? { ...base, [first]: { ...(base[first] as object), [inner]: v } } : { ...base, [k]: v };
        }),
      );
      let accepted = 0;
      fc.assert(
        fc.property(around, (v) => {
          if (!m.matches(dumps(v))) return;
          accepted++;
          expect(validate(v), `grammar accepts ${dumps(v)}, ajv rejects it`).toBe(true);
        }),
        { numRuns: 300 },
      );
      expect(accepted).toBeGreaterThan(0);
    });
  }
});

describe("regex automata (regex-dfa.ts) agree with RegExp", () => {
  // (the last three have anchors inside groups: assertions, wherever they stand)
  const patterns = ["^[a-z]+$", "\\d{3}-\\w+", "^(ab|a)*c$", "^x-", "^[^/]+/[^/]+$", "a|b", "^(\\+|-)?\\d+(\\.\\d+)?$", "^[A-Z][a-z]{0,3}$", "é.", "^$|(^(?:\\S+\\s+){0,2}\\S+$)", "^(\\/?(a|b*)($|\\/))*$", "(^|,)x"];
  const text = fc.string({ unit: fc.constantFrom(..."abcxzAZ-/+.019 é\"\\\n"), maxLength: 10 });
  for (const p of patterns) {
    it(p, () => {
      const re = new RegExp(p, "u");
      const d = patternDfa(p, false);
      const names = ["ab", "abc", "x-1"];
      const letters = patternDfa("^[a-c]+$", false);
      const bounded = withLength(d, 2, 5);
      const rules = new RuleSet(false);
      const grammar = new GbnfMatcher((dfaStringRule(bounded, "root", rules), rules.format()));
      fc.assert(
        fc.property(text, (s) => {
          const n = [...s].length;
          expect(accepts(d, s), JSON.stringify(s)).toBe(re.test(s));
          expect(accepts(complement(d), s)).toBe(!re.test(s));
          expect(accepts(bounded, s)).toBe(re.test(s) && n >= 2 && n <= 5);
          expect(accepts(difference(d, stringsDfa(names)), s)).toBe(re.test(s) && !names.includes(s));
          expect(accepts(intersect(d, letters), s)).toBe(re.test(s) && /^[a-c]+$/.test(s));
          // the grammar over the JSON text: raw or escaped spellings, the closing quote only where it accepts
          expect(grammar.matches(JSON.stringify(s)), JSON.stringify(s)).toBe(accepts(bounded, s));
        }),
        { numRuns: 150 },
      );
    });
  }
});

describe("still refused: a coded error naming keyword and pointer", () => {
  const refused: Array<[string, unknown, string]> = [
    ["uniqueItems over strings", { type: "array", items: { type: "string" }, uniqueItems: true }, "#/uniqueItems"],
    ["oneOf whose alternatives overlap otherwise", { oneOf: [{ type: "integer" }, { type: "number", maximum: 3 }] }, "#/oneOf"],
    ["maxProperties beside declared properties and other keys", { type: "object", properties: { a: { type: "integer" } }, additionalProperties: { type: "integer" }, maxProperties: 2 }, "#/maxProperties"],
    ["a backreference in a key pattern", { type: "object", patternProperties: { "(a)\\1": { type: "integer" } } }, "#/patternProperties"],
  ];
  for (const [name, schema, where] of refused) {
    it(name, () => {
      const err = thrownLlamapegError(() => compileJsonSchema(schema));
      expect(err.code).toBe("ERR_SCHEMA_UNSUPPORTED");
      expect(err.message).toContain(where);
    });
  }

  it("a schema that admits no value at all is refused, naming why", () => {
    let err: unknown;
    try {
      compileJsonSchema({ enum: ["a"], type: "integer" });
    } catch (e) {
      err = e;
    }
    expect((err as LlamapegError).code).toBe("ERR_SCHEMA_UNSUPPORTED");
    expect((err as LlamapegError).message).toContain("#/enum");
    expect((err as LlamapegError).message).toContain("admits no value");
  });
});

describe("the declared draft decides what keywords beside $ref mean (dialect.ts)", () => {
  const schema = (draft: string | undefined) => ({
    ...(draft === undefined ? {} : { $schema: draft }),
    type: "object",
    definitions: { s: { type: "string" } },
    properties: { a: { $ref: "#/definitions/s", maxLength: 2 } },
    additionalProperties: false,
  });
  it("draft 7 ignores them, 2020-12 (and no $schema) applies them", () => {
    const d7 = new GbnfMatcher(compileJsonSchema(schema("http://json-schema.org/draft-07/schema#")).gbnf);
    const d2020 = new GbnfMatcher(compileJsonSchema(schema("https://json-schema.org/draft/2020-12/schema")).gbnf);
    const none = new GbnfMatcher(compileJsonSchema(schema(undefined)).gbnf);
    expect(d7.matches('{"a": "abc"}')).toBe(true);
    expect(d2020.matches('{"a": "abc"}')).toBe(false);
    expect(none.matches('{"a": "abc"}')).toBe(false);
    for (const m of [d7, d2020, none]) {
      expect(m.matches('{"a": "ab"}')).toBe(true);
      expect(m.matches('{"a": 1}')).toBe(false);
    }
  });
});

describe("propertyOrder: \"any\" (an option; the default keeps declaration order)", () => {
  const schema = { type: "object", properties: { a: { type: "integer" }, b: { type: "string" }, c: { type: "boolean" } }, required: ["a"], additionalProperties: { type: "null" } };
  it("properties in any order, each at most once, the required ones present; accepted => valid (ajv)", () => {
    const m = new GbnfMatcher(compileJsonSchema(schema, { propertyOrder: "any" }).gbnf);
    const declared = new GbnfMatcher(compileJsonSchema(schema).gbnf);
    const validate = ajv.compile(schema);
    for (const v of [{ b: "x", a: 1 }, { c: true, x: null, a: 2, b: "y" }, { a: 1 }, { x: null, a: 0 }]) {
      expect(validate(v)).toBe(true);
      expect(m.matches(dumps(v)), dumps(v)).toBe(true);
    }
    expect(declared.matches(dumps({ b: "x", a: 1 }))).toBe(false);
    for (const text of ['{"b": "x"}', '{"a": 1, "a": 2}', '{"a": "1"}', '{"a": 1, "d": 1}', '{"c": true, "b": "x", "c": false, "a": 1}']) {
      expect(m.matches(text), text).toBe(false);
    }
    const leaf = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.string({ maxLength: 2 }), fc.boolean(), fc.constant(null));
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom("a", "b", "c", "x", "y"), leaf, { maxKeys: 5 }), (v) => {
        if (m.matches(dumps(v))) expect(validate(v), dumps(v)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe("propertyOrder: \"any\" past 5 properties: any order, required ones tracked, a key may repeat", () => {
  const properties: Record<string, unknown> = {};
  for (const k of "abcdefgh") properties[k] = k === "a" || k === "e" ? { type: "integer" } : { type: "string", maxLength: 3 };
  const schema = { type: "object", properties, required: ["a", "e"], additionalProperties: false };
  const m = new GbnfMatcher(compileJsonSchema(schema, { propertyOrder: "any" }).gbnf);
  const validate = ajv.compile(schema);

  it("any order, with the required ones present", () => {
    for (const v of [{ h: "x", e: 2, a: 1 }, { e: 1, a: 2 }, { a: 1, b: "b", c: "c", d: "d", e: 5, f: "f", g: "g", h: "h" }, { g: "", a: 0, d: "x", e: 1 }]) {
      expect(validate(v)).toBe(true);
      expect(m.matches(dumps(v)), dumps(v)).toBe(true);
    }
    for (const text of ['{"a": 1}', '{"e": 1, "b": "x"}', "{}", '{"a": 1, "e": "2"}', '{"a": 1, "e": 2, "z": 1}', '{"a": 1, "e": 2, "b": "long"}']) {
      expect(m.matches(text), text).toBe(false);
    }
  });

  it("a key written twice is admitted, each value against its own schema (the parse keeps the last)", () => {
    expect(m.matches('{"a": 1, "b": "x", "e": 2, "b": "y"}')).toBe(true);
    expect(m.matches('{"a": 1, "b": "x", "e": 2, "b": 3}')).toBe(false);
    expect(validate(JSON.parse('{"a": 1, "b": "x", "e": 2, "b": "y"}'))).toBe(true);
  });

  it("a closed object takes at most as many members as it declares: a model cannot write keys forever", () => {
    const eight = '{"a": 1, "e": 2, "b": "x", "b": "y", "b": "z", "c": "", "d": "", "f": ""}';
    expect(m.matches(eight)).toBe(true);
    expect(m.matches(eight.replace("}", ', "g": ""}'))).toBe(false);
    // with other keys allowed there is no bound, as for an array without maxItems
    const open = new GbnfMatcher(compileJsonSchema({ ...schema, additionalProperties: true }, { propertyOrder: "any" }).gbnf);
    expect(open.matches(eight.replace("}", ', "g": "", "z": 1, "b": "w"}'))).toBe(true);
  });

  it("accepted => valid (ajv), JSON.parse's reading of repeated keys", () => {
    const leaf = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.string({ maxLength: 4 }));
    const member = fc.tuple(fc.constantFrom(..."abcdefghz"), leaf);
    fc.assert(
      fc.property(fc.array(member, { maxLength: 10 }), (members) => {
        const text = `{${members.map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(", ")}}`;
        if (m.matches(text)) expect(validate(JSON.parse(text)), text).toBe(true);
      }),
      { numRuns: 400 },
    );
  });
});

describe("propertyOrder: \"any\" past 6 required properties: those in declared or `required` order, the rest anywhere", () => {
  const properties: Record<string, unknown> = {};
  for (const k of "abcdefghij") properties[k] = { type: "integer" };
  // required in another order than declared
  const schema = { type: "object", properties, required: ["h", "g", "f", "e", "d", "c", "b"], additionalProperties: false };
  const m = new GbnfMatcher(compileJsonSchema(schema, { propertyOrder: "any" }).gbnf);
  const validate = ajv.compile(schema);
  const obj = (keys: string) => Object.fromEntries([...keys].map((k, i) => [k, i]));

  it("the required ones in either order, optional ones anywhere", () => {
    for (const keys of ["bcdefgh", "hgfedcb", "abcidefghj", "jhgfaedcbi", "ahgfedcbij"]) {
      expect(validate(obj(keys))).toBe(true);
      expect(m.matches(dumps(obj(keys))), keys).toBe(true);
    }
  });

  it("the required ones in a third order are rejected (valid, but not tracked: 2^7 rules); missing ones are invalid", () => {
    expect(validate(obj("bcdefhg"))).toBe(true);
    expect(m.matches(dumps(obj("bcdefhg")))).toBe(false);
    expect(m.matches(dumps(obj("bcdefg")))).toBe(false);
    expect(m.matches(dumps(obj("hgfedc")))).toBe(false);
  });
});

describe("uri-reference follows RFC 3986 where ajv-formats is looser", () => {
  it("a relative reference's first segment has no colon", () => {
    const m = new GbnfMatcher(compileJsonSchema({ type: "string", format: "uri-reference" }).gbnf);
    expect(m.matches('"://"')).toBe(false);
    expect(m.matches('":a"')).toBe(false);
    expect(m.matches('"./:a"')).toBe(true);
    expect(m.matches('"a/b:c"')).toBe(true);
  });
});
