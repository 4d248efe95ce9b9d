import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { LlamapegError } from "../../../lib/errors.js";
import { compileJsonSchema, jsonSchemaToGbnf } from "./json-schema-reference-mode.js";

interface Case {
  id: string;
  schema: unknown;
  expect_error?: { code: string; where?: string };
}
const hand: Case[] = readFileSync(new URL("../../fixtures/json-schema/hand.jsonl", import.meta.url), "utf8")
  .split("\n")
  .filter((l) => l.trim() !== "")
  .map((l) => JSON.parse(l) as Case);

function errorOf(fn: () => unknown): LlamapegError {
  try {
    fn();
  } catch (e) {
    if (e instanceof LlamapegError) return e;
    throw e;
  }
  throw new Error("expected a LlamapegError");
}

describe("schema errors name the keyword and its JSON pointer", () => {
  const failing = hand.filter((c) => c.expect_error !== undefined);
  it("the fixtures hold error cases", () => expect(failing.length).toBeGreaterThan(20));
  it.each(failing.map((c) => [c.id, c] as const))("%s", (_id, c) => {
    const err = errorOf(() => jsonSchemaToGbnf(c.schema));
    expect(err.code).toBe(c.expect_error!.code);
    if (c.expect_error!.where !== undefined) expect(err.where).toBe(c.expect_error!.where);
    expect(err.message).toContain(err.where!);
  });
});

describe("unsupported: ignore", () => {
  it("collects one warning per left-out keyword and still compiles", () => {
    const schema = {
      type: "object",
      properties: {
        tags: { type: "array", items: { type: "string" }, uniqueItems: true },
        temp: { type: "number", minimum: 0, maximum: 1 },
      },
      minProperties: 1,
    };
    const { gbnf, warnings } = compileJsonSchema(schema, { unsupported: "ignore" });
    expect(warnings.map((w) => [w.keyword, w.where])).toEqual([
      ["uniqueItems", "#/properties/tags/uniqueItems"],
      ["minimum", "#/properties/temp/minimum"],
      ["maximum", "#/properties/temp/maximum"],
      ["minProperties", "#/minProperties"],
    ]);
    expect(warnings.every((w) => w.code === "ERR_SCHEMA_UNSUPPORTED")).toBe(true);
    expect(gbnf).toContain("tags ::= ");
    expect(gbnf).toContain("temp-kv ::= ");
  });

  it("does not turn an invalid schema into a warning", () => {
    const err = errorOf(() => compileJsonSchema({ type: "integer", minimum: 3, maximum: 1 }, { unsupported: "ignore" }));
    expect(err.code).toBe("ERR_SCHEMA_INVALID");
  });
});

describe("accepted silently", () => {
  it("annotations and unknown keywords", () => {
    const schema = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      $id: "x",
      $comment: "c",
      title: "t",
      description: "d",
      "x-vendor": { anything: true },
      type: "string",
      default: "a",
      examples: ["b"],
      deprecated: false,
      readOnly: true,
      writeOnly: false,
      contentMediaType: "text/plain",
      format: "email",
    };
    expect(compileJsonSchema(schema).warnings).toEqual([]);
  });

  it("keywords that cannot constrain what is produced", () => {
    // minLength does not apply to integers; a type list applies each keyword to its own type
    expect(() => jsonSchemaToGbnf({ type: "integer", minLength: 2 })).not.toThrow();
    expect(() => jsonSchemaToGbnf({ type: ["string", "null"], maxLength: 4 })).not.toThrow();
    expect(() => jsonSchemaToGbnf({ type: "array", items: { type: "string" }, uniqueItems: false, minItems: 0 })).not.toThrow();
    expect(() => jsonSchemaToGbnf({ type: "object", required: [], additionalProperties: true })).not.toThrow();
  });

  it("type next to an enum whose values all have that type", () => {
    expect(() => jsonSchemaToGbnf({ type: "string", enum: ["a", "b"] })).not.toThrow();
    const err = errorOf(() => jsonSchemaToGbnf({ type: "string", enum: ["a", 1] }));
    expect(err.where).toBe("#/type");
  });
});

describe("deliberate departures from the reference", () => {
  it("prefixItems with items: false is a closed tuple (the reference rejects it)", () => {
    const closed = jsonSchemaToGbnf({ type: "array", prefixItems: [{ type: "string" }, { type: "integer" }], items: false });
    const open = jsonSchemaToGbnf({ type: "array", prefixItems: [{ type: "string" }, { type: "integer" }] });
    expect(closed).toBe(open);
    expect(closed).toContain('root ::= "[" space string "," space integer space "]"');
  });

  it("excluded additional-property keys escape class metacharacters", () => {
    const g = jsonSchemaToGbnf({ type: "object", properties: { "a-b": { type: "string" }, a_c: { type: "string" } }, additionalProperties: true });
    // a raw `-` between `"` and `_` would make the range `"-_`; alone or last it is a plain `-`
    expect(g).toContain('additional-k ::= ["] ( [a] ([-] ([b] char+ | [^"b] char*) | [_] ([c] char+ | [^"c] char*) | [^"\\x2D_] char*) | [^"a] char* )? ["]');
    const odd = jsonSchemaToGbnf({ type: "object", properties: { "]": { type: "null" }, "^": { type: "null" }, "\\": { type: "null" } }, additionalProperties: true });
    expect(odd).toContain('additional-k ::= ["] ( [\\x5C] char+ | [\\x5D] char+ | [\\x5E] char+ | [^"\\x5C\\x5D^] char* )? ["]');
  });
});
