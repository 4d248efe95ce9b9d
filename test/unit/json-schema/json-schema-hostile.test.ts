// Schemas an API client may send that llama.cpp's converter turns into grammars its grammar
// parser cannot survive (min > max underflows its repetition count: 4 GB in seconds), or that
// cost seconds of JS time: each is ERR_SCHEMA_INVALID at once, and every grammar that does come
// out passes checkGbnf (what the native sampler will accept).
import { describe, expect, it } from "vitest";

import { LlamapegError } from "../../../lib/errors.js";
import { checkGbnf } from "../../../lib/gbnf/index.js";
import { compileJsonSchema, jsonSchemaToGbnf } from "./json-schema-reference-mode.js";

function invalid(schema: unknown): LlamapegError {
  try {
    compileJsonSchema(schema);
  } catch (e) {
    expect(e).toBeInstanceOf(LlamapegError);
    return e as LlamapegError;
  }
  throw new Error(`compiled: ${JSON.stringify(schema).slice(0, 80)}`);
}

const nested = (n: number, wrap: (s: unknown) => unknown): unknown => {
  let s: unknown = { type: "string" };
  for (let i = 0; i < n; i++) s = wrap(s);
  return s;
};

describe("hostile schemas", () => {
  const cases: [string, unknown, RegExp][] = [
    ["pattern ^a{5,2}$ (min > max)", { type: "string", pattern: "^a{5,2}$" }, /minimum is greater than the maximum/],
    ["pattern ^(ab){9,3}$", { type: "string", pattern: "^(ab){9,3}$" }, /minimum is greater/],
    ["pattern ^a{1000000}$", { type: "string", pattern: "^a{1000000}$" }, /more than 2000 copies/],
    ["pattern ^a{3000,}$", { type: "string", pattern: "^a{3000,}$" }, /more than 2000 copies/],
    ["minLength 10^9", { type: "string", minLength: 1_000_000_000 }, /minLength 1000000000 is more than the 2000/],
    ["minItems 5000", { type: "array", items: { type: "integer" }, minItems: 5000 }, /minItems 5000 is more than the 2000/],
    ["1,000 nested objects", nested(1000, (s) => ({ type: "object", properties: { a: s }, required: ["a"] })), /nests deeper than 256 levels/],
    ["1,000 nested arrays", nested(1000, (s) => ({ type: "array", items: s })), /nests deeper than 256 levels/],
    ["1,000 nested anyOf", nested(1000, (s) => ({ anyOf: [s, { type: "null" }] })), /nests deeper than 256 levels/],
    ["20,000 nested objects", nested(20_000, (s) => ({ type: "object", properties: { a: s } })), /nests deeper than 256 levels/],
  ];
  for (const [name, schema, message] of cases) {
    it(`${name}: ERR_SCHEMA_INVALID`, () => {
      const e = invalid(schema);
      expect(e.code).toBe("ERR_SCHEMA_INVALID");
      expect(e.message).toMatch(message);
      expect(e.where).toMatch(/^#/);
    });
  }

  it("maximums past 2000 compile, as llama.cpp reads them (no maximum), and pass checkGbnf", () => {
    for (const schema of [
      { type: "string", maxLength: 1_000_000_000 },
      { type: "string", pattern: "^a{0,99999999}$" },
      { type: "array", items: { type: "integer" }, maxItems: 1_000_000 },
    ]) {
      expect(() => checkGbnf(jsonSchemaToGbnf(schema))).not.toThrow();
    }
  });

  it("1,000 and 1,999 optional properties compile (the optional-key chain is linear)", () => {
    for (const n of [1000, 1999]) {
      const schema = { type: "object", properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: "string" }])) };
      const gbnf = jsonSchemaToGbnf(schema);
      expect(gbnf.split("\n").filter((l) => l.includes("-rest ::=")).length).toBe(n - 1);
      expect(checkGbnf(gbnf).rules).toBeGreaterThan(n);
    }
  });

  it("10,000 optional properties: ERR_SCHEMA_UNSUPPORTED (a rule chain llama.cpp would recurse 10,000 deep), in well under a second", () => {
    const schema = { type: "object", properties: Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`p${i}`, { type: "string" }])) };
    const e = invalid(schema);
    expect(e.code).toBe("ERR_SCHEMA_UNSUPPORTED");
    expect(e.message).toContain("chain of");
  });

  it("a 100,000-value enum: ERR_SCHEMA_UNSUPPORTED (llama.cpp would match 100,000 stacks against the vocabulary per token)", () => {
    const e = invalid({ enum: Array.from({ length: 100_000 }, (_, i) => `v${i}`) });
    expect(e.code).toBe("ERR_SCHEMA_UNSUPPORTED");
    expect(e.message).toContain("parse stacks");
    expect(() => compileJsonSchema({ enum: Array.from({ length: 5000 }, (_, i) => `v${i}`) })).not.toThrow();
  });

  it("deep but ordinary nesting (200 levels) compiles and passes checkGbnf", () => {
    const gbnf = jsonSchemaToGbnf(nested(200, (s) => ({ type: "object", properties: { a: s }, required: ["a"] })));
    expect(checkGbnf(gbnf).chain).toBeLessThan(10);
  });
});
