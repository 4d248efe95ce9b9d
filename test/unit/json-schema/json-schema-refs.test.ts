import { describe, expect, it } from "vitest";
import { LlamapegError } from "../../../lib/errors.js";
import { SchemaInfo, buildGrammar, jsonSchemaToGbnf } from "./json-schema-reference-mode.js";

const code = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    if (e instanceof LlamapegError) return `${e.code} ${e.where}`;
    throw e;
  }
  return undefined;
};

describe("$ref", () => {
  it("names a ref rule after its pointer and shares it", () => {
    const g = jsonSchemaToGbnf({
      $defs: { pt: { type: "object", properties: { x: { type: "integer" } }, required: ["x"] } },
      type: "object",
      properties: { a: { $ref: "#/$defs/pt" }, b: { $ref: "#/$defs/pt" } },
      required: ["a", "b"],
    });
    expect(g).toContain("a ::= ref-defs-pt\n");
    expect(g).toContain("b ::= ref-defs-pt\n");
    expect(g.match(/^ref-defs-pt ::= /gm)).toHaveLength(1);
  });

  it("compiles a recursive schema without looping", () => {
    const g = jsonSchemaToGbnf({
      $defs: { tree: { type: "object", properties: { kids: { type: "array", items: { $ref: "#/$defs/tree" } } } } },
      $ref: "#/$defs/tree",
    });
    expect(g).toContain("root ::= ref-defs-tree\n");
    expect(g).toContain("ref-defs-tree-kids-item ::= ref-defs-tree\n");
  });

  it("resolves refs nested under an object that has its own $ref (the reference leaves them as `object`)", () => {
    const g = jsonSchemaToGbnf({
      $ref: "#/$defs/a",
      $defs: { a: { type: "object", properties: { b: { $ref: "#/$defs/b" } }, required: ["b"] }, b: { type: "string", maxLength: 2 } },
    });
    expect(g).toContain('ref-defs-b ::= "\\"" char{0,2} "\\""\n');
  });

  it("follows array indices and escaped pointer tokens", () => {
    const g = jsonSchemaToGbnf({
      $defs: { "a/b": { type: "boolean" }, list: [{ type: "null" }, { type: "string", minLength: 1 }] },
      type: "object",
      properties: { x: { $ref: "#/$defs/a~1b" }, y: { $ref: "#/$defs/list/1" } },
      required: ["x", "y"],
    });
    expect(g).toContain("x ::= boolean\n");
    expect(g).toContain('ref-defs-list-1 ::= "\\"" char+ "\\""\n');
  });

  it("rejects dangling, remote and non-string refs with their pointer", () => {
    expect(code(() => jsonSchemaToGbnf({ items: { $ref: "#/$defs/nope" } }))).toBe("ERR_SCHEMA_INVALID #/items/$ref");
    expect(code(() => jsonSchemaToGbnf({ items: { $ref: "other.json#/a" } }))).toBe("ERR_SCHEMA_UNSUPPORTED #/items/$ref");
    expect(code(() => jsonSchemaToGbnf({ items: { $ref: 5 } }))).toBe("ERR_SCHEMA_INVALID #/items/$ref");
  });

  it("reports the same ref text naming different schemas within one grammar", () => {
    const one = { $defs: { t: { type: "string" } }, $ref: "#/$defs/t" };
    const two = { $defs: { t: { type: "integer" } }, $ref: "#/$defs/t" };
    const build = (a: unknown, b: unknown) =>
      buildGrammar((g) => {
        g.resolveRefs(a);
        g.resolveRefs(b);
        g.addSchema("one", a);
        g.addSchema("two", b);
      });
    expect(code(() => build(one, two))).toBe("ERR_SCHEMA_UNSUPPORTED #/$ref");
    expect(() => build(one, structuredClone(one))).not.toThrow();
  });
});

describe("SchemaInfo.resolvesToString", () => {
  const info = (schema: unknown): boolean => {
    const i = new SchemaInfo();
    i.resolveRefs(schema);
    return i.resolvesToString(schema);
  };
  it.each([
    [{ type: "string" }, true],
    [{ type: "integer" }, false],
    [{ type: ["null", "string"] }, true],
    [{ type: ["null", "number"] }, false],
    [{ anyOf: [{ type: "integer" }, { oneOf: [{ type: "boolean" }, { type: "string" }] }] }, true],
    [{ allOf: [{ type: "string" }, { maxLength: 3 }] }, true],
    [{ allOf: [{ type: "string" }, { type: "number" }] }, false],
    [{ const: "x" }, true],
    [{ const: 1 }, false],
    [{ enum: [null, 2, "z"] }, true],
    [{ pattern: "^a$" }, true],
    [{ format: "uuid7" }, true],
    [{ format: "int32" }, false],
    [{ $defs: { s: { type: "string" } }, $ref: "#/$defs/s" }, true],
    [{ $defs: { n: { $ref: "#/$defs/n" } }, $ref: "#/$defs/n" }, false],
  ])("%j -> %s", (schema, want) => {
    expect(info(schema)).toBe(want);
  });
});
