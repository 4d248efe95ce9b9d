/**
 * The default schema mode (docs/json-schema.md, "Default mode"): what it admits is checked against
 * a real validator (ajv 2020 + ajv-formats): every text the grammar accepts is a valid instance,
 * for hand-written schemas over every supported keyword and for random schemas; and the valid
 * examples are accepted. A small GBNF recognizer (json-schema-gbnf-match.ts) stands in for the
 * grammar engine.
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LlamapegError } from "../../../lib/errors.js";
import { buildGrammar, compileJsonSchema, SchemaInfo } from "../../../lib/json-schema/index.js";
import { GbnfMatcher } from "./json-schema-gbnf-match.js";
import { gbnfToRegExp } from "./json-schema-gbnf-to-regex.js";
import { thrownLlamapegError } from "../../support/thrown.js";

const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
// ajv-formats is CommonJS: its default export arrives as the module object under ESM typing
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (a: Ajv2020) => void;
addFormats(ajv);

/** Python's json.dumps layout (MaskBench's): ", " and ": " separators. */
function dumps(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(dumps).join(", ")}]`;
  if (typeof v === "object" && v !== null) return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${dumps(x)}`).join(", ")}}`;
  return JSON.stringify(v);
}

/** The grammar as a recognizer (recursive rules included: automata for patterns are one rule per state). */
const grammarOf = (schema: unknown): { test(text: string): boolean } => {
  const m = new GbnfMatcher(compileJsonSchema(schema).gbnf);
  return { test: (text) => m.matches(text) };
};

interface Case {
  name: string;
  schema: Record<string, unknown>;
  valid: unknown[];
  invalid: unknown[];
  /** Values for the random part: mutated around these. */
}

const CASES: Case[] = [
  {
    name: "declaration order, optional properties where they stand",
    schema: { type: "object", properties: { a: { type: "string" }, b: { type: "integer" }, c: { type: "boolean" } }, required: ["b"], additionalProperties: false },
    valid: [{ b: 1 }, { a: "x", b: 2 }, { b: 3, c: true }, { a: "", b: -4, c: false }],
    invalid: [{}, { a: "x" }, { b: 1.5 }, { b: 1, d: 1 }, { b: "1" }],
  },
  {
    name: "number bounds (inclusive and exclusive, integral and decimal)",
    schema: {
      type: "object",
      properties: { x: { type: "number", minimum: -2, exclusiveMaximum: 10 }, y: { type: "number", exclusiveMinimum: 0 }, z: { type: "number", minimum: 0.3, maximum: 99.99 } },
      additionalProperties: false,
    },
    valid: [{ x: -2 }, { x: 9.999 }, { x: 0.5, y: 0.001 }, { y: 123456.5 }, { y: 1e-7 }, { z: 0.3 }, { z: 99.99 }, { z: 50 }, { z: 0.31 }],
    invalid: [{ x: 10 }, { x: -2.5 }, { y: 0 }, { y: -1 }, { x: 10.0001 }, { z: 0.29 }, { z: 99.991 }, { z: 100 }, { z: 0 }],
  },
  {
    name: "integer bounds up to 2^63-1",
    schema: { type: "integer", minimum: 0, maximum: 9223372036854775807 },
    valid: [0, 1, 123456789012],
    invalid: [-1, 1.5],
  },
  {
    name: "type list beside enum",
    schema: { enum: ["apps/v1", "v2", 3, null], type: ["string", "null"] },
    valid: ["apps/v1", "v2", null],
    invalid: [3, "v3"],
  },
  {
    name: "ECMA-262 pattern, unanchored, \\d \\w",
    schema: { type: "string", pattern: "\\d{3}-\\w+" },
    valid: ["123-abc", "x 123-a_b y"],
    invalid: ["12-abc", "123-", "abc"],
  },
  {
    name: "anchored pattern with lengths",
    schema: { type: "string", pattern: "^[a-z0-9_-]*$", minLength: 2, maxLength: 5 },
    valid: ["ab", "a-b_9"],
    invalid: ["a", "abcdef", "AB"],
  },
  {
    name: "formats: date, email, ipv4, uuid",
    schema: {
      type: "object",
      properties: {
        d: { type: "string", format: "date" },
        e: { type: "string", format: "email" },
        i: { type: "string", format: "ipv4" },
        u: { type: "string", format: "uuid" },
      },
      additionalProperties: false,
    },
    valid: [{ d: "2024-02-29" }, { d: "2023-12-31", e: "a.b@example.com" }, { i: "192.168.0.1" }, { u: "123e4567-e89b-12d3-a456-426614174000" }],
    invalid: [{ d: "2023-02-29" }, { d: "2023-04-31" }, { e: "no-at" }, { i: "256.1.1.1" }, { u: "123" }],
  },
  {
    name: "allOf merged with siblings",
    schema: {
      type: "object",
      allOf: [{ properties: { a: { type: "integer", minimum: 0 } }, required: ["a"] }, { properties: { a: { maximum: 5 } } }],
      properties: { a: {} },
      additionalProperties: false,
    },
    valid: [{ a: 0 }, { a: 5 }],
    invalid: [{}, { a: 6 }, { a: -1 }],
  },
  {
    name: "anyOf with keywords beside it",
    schema: { type: "object", properties: { k: { type: "string" }, n: { type: "integer" } }, additionalProperties: false, anyOf: [{ required: ["k"] }, { required: ["n"] }] },
    valid: [{ k: "x" }, { n: 1 }, { k: "x", n: 2 }],
    invalid: [{}],
  },
  {
    name: "prefixItems with items, minItems/maxItems",
    schema: { type: "array", prefixItems: [{ type: "string" }, { type: "integer" }], items: { type: "boolean" }, minItems: 1, maxItems: 3 },
    valid: [["a"], ["a", 1], ["a", 1, true]],
    invalid: [[], [1], ["a", 1, true, false], ["a", 1, 2]],
  },
  {
    name: "patternProperties with no other keys",
    schema: { type: "object", properties: { a: { type: "integer" } }, patternProperties: { "^x-": { type: "string" } }, additionalProperties: false },
    valid: [{ a: 1 }, { a: 1, "x-foo": "s" }, { "x-": "" }],
    invalid: [{ "x-foo": 1 }, { y: "s" }, { a: "1" }],
  },
  {
    name: "not beside enum",
    schema: { enum: ["a", "b", "c", 1], not: { enum: ["b", 1] } },
    valid: ["a", "c"],
    invalid: ["b", 1, "d"],
  },
  {
    name: "a property named $ref",
    schema: { type: "object", properties: { $ref: { type: "string" } }, required: ["$ref"], additionalProperties: false },
    valid: [{ $ref: "#/x" }],
    invalid: [{}, { $ref: 1 }],
  },
  {
    name: "non-ASCII const, escaped or raw",
    schema: { const: "°C" },
    valid: ["°C"],
    invalid: ["C", "°F"],
  },
];

// not / dependentRequired / uniqueItems (issue 21, session 2): the cases a grammar can honour exactly
CASES.push(
  {
    name: "not {type} narrows the types; not not X is X",
    // (the RegExp stand-in cannot follow the recursive `value`, so no array/object is left over)
    schema: { type: "object", properties: { a: { type: ["string", "number", "null", "boolean"], not: { type: ["string", "number"] } }, b: { not: { not: { type: "integer", minimum: 3 } } } }, additionalProperties: false },
    valid: [{ a: null }, { a: true }, { b: 3 }, { b: 40 }],
    invalid: [{ a: "x" }, { a: 1 }, { a: 1.5 }, { b: 2 }, { b: "3" }],
  },
  {
    name: "not {required} and not {anyOf: [{required}]} forbid keys (open and closed objects)",
    schema: { type: "object", properties: { a: { type: "integer" }, b: { type: "integer" }, c: { type: "string", not: { enum: ["no", "never"] } } }, additionalProperties: { type: "integer" }, not: { anyOf: [{ required: ["b"] }, { required: ["z"] }] } },
    valid: [{}, { a: 1 }, { a: 1, x: 2 }, { c: "yes" }, { c: "nope" }, { c: "" }],
    invalid: [{ b: 1 }, { a: 1, b: 2 }, { z: 1 }, { a: 1, z: null }, { c: "no" }, { c: "never" }],
  },
  {
    name: "dependentRequired: a trigger key present requires its dependents",
    schema: { type: "object", properties: { card: { type: "string" }, addr: { type: "string" }, zip: { type: "string" }, name: { type: "string" } }, dependentRequired: { card: ["addr", "zip"] }, required: ["name"], additionalProperties: { type: "integer" } },
    // (properties in declaration order, as the grammar writes them)
    valid: [{ name: "n" }, { addr: "a", name: "n" }, { card: "c", addr: "a", zip: "z", name: "n" }, { card: "c", addr: "a", zip: "z", name: "n", q: 1 }],
    invalid: [{ card: "c", name: "n" }, { card: "c", addr: "a", name: "n" }, { card: "c", addr: "a", zip: "z" }],
  },
  {
    name: "uniqueItems over an enum and booleans",
    schema: { type: "object", properties: { tags: { type: "array", items: { enum: ["x", "y", "z"] }, uniqueItems: true, minItems: 1 }, flags: { type: "array", items: { type: "boolean" }, uniqueItems: true } }, additionalProperties: false },
    valid: [{ tags: ["x"] }, { tags: ["z", "x"] }, { tags: ["y", "x", "z"] }, { flags: [] }, { flags: [true, false] }],
    invalid: [{ tags: [] }, { tags: ["x", "x"] }, { tags: ["x", "y", "x"] }, { flags: [true, true] }, { tags: ["w"] }],
  },
);

describe("default mode: accepted => valid (ajv)", () => {
  for (const c of CASES) {
    it(c.name, () => {
      const re = grammarOf(c.schema);
      const validate = ajv.compile(c.schema);
      for (const v of c.valid) {
        expect(validate(v), `ajv: ${dumps(v)}`).toBe(true);
        expect(re.test(dumps(v)), `grammar rejects valid ${dumps(v)}`).toBe(true);
      }
      for (const v of c.invalid) {
        expect(validate(v), `ajv: ${dumps(v)}`).toBe(false);
        expect(re.test(dumps(v)), `grammar accepts invalid ${dumps(v)}`).toBe(false);
      }
      // random values around the examples: whatever the grammar accepts, ajv accepts
      const seeds = [...c.valid, ...c.invalid];
      const around = fc.oneof(
        fc.jsonValue({ maxDepth: 2 }),
        fc.constantFrom(...seeds),
        fc.record({ k: fc.constantFrom("a", "b", "c", "x", "y", "d", "e", "i", "u", "k", "n"), v: fc.jsonValue({ maxDepth: 1 }), base: fc.constantFrom(...seeds.filter((s) => typeof s === "object" && s !== null && !Array.isArray(s)), {}) }).map(({ k, v, base }) => ({ ...(base as object), [k]: v })),
        fc.double({ min: -20, max: 20, noNaN: true }),
        fc.string({ maxLength: 8 }),
      );
      fc.assert(
        fc.property(around, (v) => {
          if (re.test(dumps(v))) expect(validate(v), `grammar accepts ${dumps(v)}, ajv rejects it`).toBe(true);
        }),
        { numRuns: 300 },
      );
    });
  }
});

/** Random schemas over the supported keywords; every text a grammar accepts must validate. */
const leafSchema = fc.oneof(
  fc.record({ type: fc.constant("integer"), minimum: fc.integer({ min: -50, max: 50 }), maximum: fc.integer({ min: -50, max: 50 }) }, { requiredKeys: ["type"] }),
  fc.record({ type: fc.constant("number"), minimum: fc.integer({ min: -5, max: 5 }), exclusiveMaximum: fc.integer({ min: -5, max: 5 }) }, { requiredKeys: ["type"] }),
  fc.record(
    {
      type: fc.constant("number"),
      minimum: fc.constantFrom(-2.5, -0.05, 0, 0.3, 1.25, 3),
      exclusiveMinimum: fc.constantFrom(-1.5, 0, 0.5, 2.05),
      maximum: fc.constantFrom(-0.5, 0, 0.75, 2.5, 4),
      exclusiveMaximum: fc.constantFrom(-1, 0, 1.05, 3.5),
    },
    { requiredKeys: ["type"] },
  ),
  fc.record({ type: fc.constant("string"), minLength: fc.nat(4), maxLength: fc.nat(6), pattern: fc.constantFrom("^[a-c]*$", "^\\d+$", "b", "^(ab|c)+$", "^.$", "[^a]") }, { requiredKeys: ["type"] }),
  fc.record({ type: fc.constant("string"), format: fc.constantFrom("date", "time", "date-time", "email", "ipv4", "ipv6", "hostname", "uuid", "uri", "duration") }),
  fc.record({ enum: fc.array(fc.oneof(fc.string({ maxLength: 3 }), fc.integer({ min: -3, max: 3 }), fc.constant(null), fc.boolean()), { minLength: 1, maxLength: 4 }), type: fc.constantFrom(undefined, "string", "integer", ["string", "null"]) }, { requiredKeys: ["enum"] }),
  fc.constant({ type: "boolean" }),
);
const objectSchema = fc
  .record({ props: fc.dictionary(fc.constantFrom("a", "b", "c", "d"), leafSchema, { maxKeys: 4 }), required: fc.subarray(["a", "b", "c", "d"]) })
  .map(({ props, required }) => ({ type: "object", properties: props, required: required.filter((r) => r in props), additionalProperties: false }));
const arraySchema = fc.record({ type: fc.constant("array"), items: leafSchema, minItems: fc.nat(2), maxItems: fc.nat(3) }, { requiredKeys: ["type", "items"] });

function valuesFor(): fc.Arbitrary<unknown> {
  const leaf = fc.oneof(
    fc.integer({ min: -60, max: 60 }),
    fc.double({ min: -6, max: 6, noNaN: true }),
    fc.constantFrom(-2.5, -2.51, -0.05, -0.049, 0.3, 0.29, 0.31, 1.25, 1.2, 2.05, 2.051, 2.5, 0.75, 0.751, 1.05, 3.5, 3.49, -0.5, -0.51, 1e-7, -1e-7),
    fc.constantFrom("", "a", "ab", "abc", "b", "c", "123", "2024-02-29", "2023-02-30", "12:30:00Z", "2024-01-01T00:00:00Z", "a@b.co", "1.2.3.4", "::1", "P1D", "http://x.y/z", "123e4567-e89b-12d3-a456-426614174000", "x y", "é"),
    fc.boolean(),
    fc.constant(null),
  );
  return fc.oneof(leaf, fc.array(leaf, { maxLength: 4 }), fc.dictionary(fc.constantFrom("a", "b", "c", "d", "e"), leaf, { maxKeys: 5 }));
}

describe("default mode: random schemas, accepted => valid (ajv)", () => {
  it("leaf, object and array schemas", () => {
    let compiled = 0;
    let accepted = 0;
    fc.assert(
      fc.property(fc.oneof(leafSchema, objectSchema, arraySchema), fc.array(valuesFor(), { minLength: 20, maxLength: 20 }), (schema, values) => {
        let re: { test(text: string): boolean };
        try {
          re = grammarOf(schema);
        } catch (e) {
          // refused: a coded error naming where (bounds that leave no value, lengths beside a pattern, ...)
          expect(e).toBeInstanceOf(LlamapegError);
          expect(["ERR_SCHEMA_UNSUPPORTED", "ERR_SCHEMA_INVALID"]).toContain((e as LlamapegError).code);
          return;
        }
        compiled++;
        const validate = ajv.compile(schema);
        for (const v of values) {
          if (!re.test(dumps(v))) continue;
          accepted++;
          expect(validate(v), `schema ${JSON.stringify(schema)} accepts ${dumps(v)}`).toBe(true);
        }
      }),
      { numRuns: 400 },
    );
    // the property must have had something to check
    expect(compiled).toBeGreaterThan(100);
    expect(accepted).toBeGreaterThan(50);
  });
});

describe("default mode: shapes", () => {
  it("numbers are RFC 8259 numbers (any digit count, exponent with leading zeros)", () => {
    const re = gbnfToRegExp(compileJsonSchema({ type: "number" }).gbnf.replace(/^/, ""));
    for (const ok of ["1.256e-06", "12345678901234567890", "0.12345678901234567890", "-0", "1E+5"]) expect(re.test(ok), ok).toBe(true);
    for (const bad of ["01", "1.", ".5", "+1", "1e"]) expect(re.test(bad), bad).toBe(false);
    // the reference mode keeps llama.cpp's 16-digit parts
    const ref = gbnfToRegExp(compileJsonSchema({ type: "number" }, { schemaMode: "reference" }).gbnf);
    expect(ref.test("12345678901234567890")).toBe(false);
  });

  it("a missing additionalProperties admits other keys, anywhere between the declared ones", () => {
    const { gbnf } = compileJsonSchema({ type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } } });
    expect(gbnf).toMatch(/additional-kv ::= additional-k ": " value/);
    // the declared keys themselves are not additional keys
    const key = gbnfToRegExp(gbnf, "additional-k");
    expect(key.test('"a"')).toBe(false);
    expect(key.test('"ab"')).toBe(true);
    expect(key.test('"c"')).toBe(true);
  });

  it("{} and true are any value; the callback API keeps the reference by default", () => {
    expect(compileJsonSchema({}).gbnf).toMatch(/^root ::= value$/m);
    expect(buildGrammar((b) => b.addSchema("", { type: "number" }))).toMatch(/integral-part ::= \[0\] \| \[1-9\] \[0-9\]\{0,15\}/);
    expect(buildGrammar((b) => b.addSchema("", { type: "number" }), { schemaMode: "default" })).toMatch(/integral-part ::= \[0\] \| \[1-9\] \[0-9\]\*/);
  });
});

describe("default mode: a schema met again is one shared rule", () => {
  // long enough to share (>= 256 characters of assertions), with a pattern whose automaton is the cost
  const ref = (description: string) => ({
    description,
    type: "object",
    properties: {
      curie: { type: "string", pattern: "^([a-z0-9-]+):([a-z0-9\\.-]+):([a-z0-9-]+)?:([a-z0-9-]+)$", maxLength: 40 },
      id: { type: "string", pattern: "^[A-Za-z0-9:_\\-]+$", maxLength: 60 },
      tag: { type: "string", maxLength: 255 },
    },
    required: ["curie", "id"],
    additionalProperties: false,
  });
  const once = { type: "object", properties: { creator: ref("who created it") }, additionalProperties: false };
  const twice = { type: "object", properties: { creator: ref("who created it"), updater: ref("who updated it") }, additionalProperties: false };

  it("annotations aside, the second copy refers to the first's rules", () => {
    const one = compileJsonSchema(once).gbnf;
    const two = compileJsonSchema(twice).gbnf;
    expect(one).not.toContain("ref-shared");
    expect(two).toMatch(/^creator ::= ref-shared-\S+$/m);
    expect(two).toMatch(/^updater ::= ref-shared-\S+$/m);
    // one automaton for curie, not two: the grammar grows by a few rules, not by a copy
    const lines = (g: string) => g.split("\n").length;
    expect(lines(two) - lines(one)).toBeLessThan(10);
    const m = new GbnfMatcher(two);
    const v = { curie: "acme:iam:node:x", id: "a1" };
    expect(m.matches(dumps({ creator: v, updater: v }))).toBe(true);
    expect(m.matches(dumps({ updater: { ...v, id: "a b" } }))).toBe(false);
    expect(ajv.validate(twice, { updater: { ...v, id: "a b" } })).toBe(false);
  });

  it("a different assertion is a different rule; a copy that admits nothing is still dropped where it stands", () => {
    const other = { ...ref("x"), required: ["curie"] };
    const g = compileJsonSchema({ type: "object", properties: { a: ref("x"), b: other }, additionalProperties: false }).gbnf;
    expect(g).not.toContain("ref-shared");
    // a required key that additionalProperties: false forbids: no object is valid
    const never = { ...ref("x"), required: ["curie", "id", "nope"] };
    const schema = { type: "object", properties: { a: never, b: { ...never, description: "y" }, c: { type: "integer" } }, additionalProperties: false };
    const m = new GbnfMatcher(compileJsonSchema(schema).gbnf);
    expect(m.matches(dumps({ c: 1 }))).toBe(true);
    expect(m.matches(dumps({ a: { curie: "a:b::c", id: "x" }, c: 1 }))).toBe(false);
  });
});

describe("default mode: where llama.cpp's converter is wrong", () => {
  it("a property named \"\" of the root: the grammar still starts at the object (the reference names its value `root`)", () => {
    const schema = { type: "object", properties: { "": { type: "string" }, a: { type: "integer" } }, required: ["a"] };
    const m = new GbnfMatcher(compileJsonSchema(schema).gbnf);
    expect(m.matches(dumps({ "": "x", a: 1 }))).toBe(true);
    expect(m.matches('"x"')).toBe(false);
    expect(compileJsonSchema(schema, { schemaMode: "reference" }).gbnf).toMatch(/^root ::= "\\"" char\* "\\""$/m);
  });

  it("draft 4 and 6 documents ignore if/then/else, as their validators do (draft 7 introduced them)", () => {
    const body = { type: "object", properties: { a: { type: "string" } }, if: { required: ["a"] }, then: { properties: { a: { pattern: "^x" } } } };
    const old = new GbnfMatcher(compileJsonSchema({ $schema: "http://json-schema.org/draft-04/schema#", ...body }).gbnf);
    const seven = new GbnfMatcher(compileJsonSchema({ $schema: "http://json-schema.org/draft-07/schema#", ...body }).gbnf);
    expect(old.matches(dumps({ a: "y" }))).toBe(true);
    expect(seven.matches(dumps({ a: "y" }))).toBe(false);
    expect(seven.matches(dumps({ a: "xy" }))).toBe(true);
  });
});

describe("default mode: what cannot be enforced is a coded error naming keyword and pointer", () => {
  const refused: Array<[string, unknown, string]> = [
    ["patternProperties with a backreference", { type: "object", patternProperties: { "(x)\\1": { type: "integer" } } }, "#/patternProperties"],
    ["not of additionalProperties", { type: "object", properties: { a: { type: "object", not: { additionalProperties: false } } } }, "#/properties/a/not"],
    ["fractional number bounds inside one integer", { type: "number", minimum: 0.25, maximum: 0.75 }, "#/minimum"],
    ["overlapping oneOf", { oneOf: [{ type: "integer" }, { type: "number" }] }, "#/oneOf"],
    ["uniqueItems", { type: "array", items: { type: "integer" }, uniqueItems: true }, "#/uniqueItems"],
    ["contains", { type: "array", contains: { type: "integer" } }, "#/contains"],
  ];
  for (const [name, schema, where] of refused) {
    it(name, () => {
      const err = thrownLlamapegError(() => compileJsonSchema(schema));
      expect(err.code).toBe("ERR_SCHEMA_UNSUPPORTED");
      expect(err.message).toContain(where);
      const { warnings } = compileJsonSchema(schema, { unsupported: "ignore" });
      expect(warnings.map((w) => w.where)).toContain(where);
    });
  }
});

describe("depth is checked first, without recursion (issue 28)", () => {
  let deep: unknown = { type: "string" };
  for (let i = 0; i < 100_000; i++) deep = { type: "object", properties: { a: deep } };
  const code = (f: () => unknown): string | undefined => {
    try {
      f();
    } catch (e) {
      return e instanceof LlamapegError ? e.code : `uncoded ${String(e)}`;
    }
    return undefined;
  };
  it("compileJsonSchema (both modes), buildGrammar, SchemaInfo", () => {
    expect(code(() => compileJsonSchema(deep))).toBe("ERR_SCHEMA_INVALID");
    expect(code(() => compileJsonSchema(deep, { schemaMode: "reference" }))).toBe("ERR_SCHEMA_INVALID");
    expect(code(() => buildGrammar((b) => b.addSchema("", deep)))).toBe("ERR_SCHEMA_INVALID");
    expect(code(() => buildGrammar((b) => b.resolveRefs(deep)))).toBe("ERR_SCHEMA_INVALID");
    expect(code(() => new SchemaInfo().resolvesToString(deep))).toBe("ERR_SCHEMA_INVALID");
  });
});
