import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LlamapegError } from "../../../lib/errors.js";
import { compileJsonSchema } from "../../../lib/json-schema/index.js";

// Schema-shaped garbage: the keywords the compiler reads, with values of any JSON type.
const KEYWORDS = [
  "type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems", "maxItems",
  "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
  "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "$defs", "definitions", "not", "uniqueItems", "title",
];
const leaf = fc.oneof(
  fc.constantFrom("string", "integer", "object", "array", "null", "^a+$", "#/$defs/x", "#/properties/a", "date", "uuid", "x"),
  fc.integer({ min: -5, max: 5 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
);
function schemaAt(depth: number): fc.Arbitrary<unknown> {
  return fc.dictionary(fc.constantFrom(...KEYWORDS), anyAt(depth), { maxKeys: 4 });
}
function anyAt(depth: number): fc.Arbitrary<unknown> {
  if (depth === 0) return leaf;
  const inner = anyAt(depth - 1);
  return fc.oneof(
    schemaAt(depth - 1),
    leaf,
    fc.array(inner, { maxLength: 3 }),
    fc.dictionary(fc.constantFrom("a", "b", "x"), schemaAt(depth - 1), { maxKeys: 3 }),
  );
}
const value = anyAt(4);

describe("bad input never crashes the compiler", () => {
  it.each(["error", "ignore"] as const)("any JSON value compiles or throws a LlamapegError (unsupported: %s)", (unsupported) => {
    fc.assert(
      fc.property(value, (schema) => {
        try {
          const { gbnf } = compileJsonSchema(schema, { unsupported });
          expect(gbnf).toMatch(/^root ::= /m);
        } catch (e) {
          if (!(e instanceof LlamapegError)) throw e;
          expect(["ERR_SCHEMA_INVALID", "ERR_SCHEMA_UNSUPPORTED"]).toContain(e.code);
          expect(e.where).toMatch(/^#/);
        }
      }),
      { numRuns: Number(process.env.JSON_SCHEMA_RUNS ?? 200) },
    );
  });
});

describe("deep nesting", () => {
  it("a schema nested far too deeply is ERR_SCHEMA_INVALID at once, not a stack overflow", () => {
    let schema: unknown = { type: "string" };
    for (let i = 0; i < 100_000; i++) schema = { type: "array", items: schema };
    let err: unknown;
    try {
      compileJsonSchema(schema);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LlamapegError);
    expect((err as LlamapegError).code).toBe("ERR_SCHEMA_INVALID");
    expect((err as LlamapegError).message).toContain("nests deeper than 256 levels");
  });

  it("ordinary depth compiles", () => {
    let schema: unknown = { type: "string" };
    for (let i = 0; i < 200; i++) schema = { type: "array", items: schema };
    expect(compileJsonSchema(schema).gbnf).toContain("root ::= ");
  });
});
