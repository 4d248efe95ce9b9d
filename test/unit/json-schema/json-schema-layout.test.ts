// JSON whitespace (lib/json-schema/layout.ts): the default mode writes JSON as templates
// serialize it (", " and ": "), so fast-forward can force the separators; "flexible" and the
// reference mode keep llama.cpp's `space` rule.
import { describe, expect, it } from "vitest";

import { compileJsonSchema } from "../../../lib/json-schema/index.js";
import { canonicalJsonBody } from "../../../lib/json-schema/layout.js";
import { buildPegParser } from "../../../lib/peg/index.js";
import { GbnfMatcher } from "./json-schema-gbnf-match.js";

/** Python's json.dumps layout: the canonical one. */
function dumps(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(dumps).join(", ")}]`;
  if (typeof v === "object" && v !== null) return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${dumps(x)}`).join(", ")}}`;
  return JSON.stringify(v);
}

describe("canonicalJsonBody", () => {
  it("turns the separators' space into literals and drops the rest, leaving literals and classes alone", () => {
    expect(canonicalJsonBody('"{" space ( string ":" space value ("," space string ":" space value)* )? space "}"')).toBe('"{" ( string ": " value (", " string ": " value)* )? "}"');
    expect(canonicalJsonBody('"[" space ( value ("," space value)* )? space "]"')).toBe('"[" ( value (", " value)* )? "]"');
    expect(canonicalJsonBody('"\\"" "city" "\\"" space ":" space x')).toBe('"\\"" "city" "\\"" ": " x');
    // a literal that merely contains a colon, a class, a rule whose name contains "space"
    expect(canonicalJsonBody('"\\":\\"" space [ ,:] space-ish space')).toBe('"\\":\\"" [ ,:] space-ish');
    // an alternative or group made only of a space keeps a term
    expect(canonicalJsonBody("( space )?")).toBe('( "" )?');
    expect(canonicalJsonBody("space")).toBe('""');
  });
});

describe("compileJsonSchema jsonWhitespace", () => {
  const schema = {
    type: "object",
    properties: { a: { type: "integer" }, b: { type: "array", items: { type: "string" } }, c: { type: "object" } },
    required: ["a"],
    additionalProperties: false,
  };
  const values = [{ a: 1 }, { a: 2, b: ["x", "y"] }, { a: 3, b: [], c: {} }, { a: 4, c: { k: [1, { z: null }] } }];

  it("default mode, canonical (the default): json.dumps's layout and nothing else", () => {
    const m = new GbnfMatcher(compileJsonSchema(schema).gbnf);
    for (const v of values) {
      expect(m.matches(dumps(v)), dumps(v)).toBe(true);
      expect(m.matches(JSON.stringify(v)), JSON.stringify(v)).toBe(JSON.stringify(v) === dumps(v));
      expect(m.matches(JSON.stringify(v, null, 2)), "pretty").toBe(false);
    }
    expect(m.matches('{ "a": 1}')).toBe(false);
    expect(m.matches('{"a" : 1}')).toBe(false);
  });

  it("flexible and reference mode: llama.cpp's whitespace anywhere between tokens", () => {
    for (const options of [{ jsonWhitespace: "flexible" as const }, { schemaMode: "reference" as const, jsonWhitespace: "canonical" as const }]) {
      const gbnf = compileJsonSchema(schema, options).gbnf;
      const m = new GbnfMatcher(gbnf);
      for (const v of values) {
        expect(m.matches(dumps(v)), dumps(v)).toBe(true);
        expect(m.matches(JSON.stringify(v, null, 2)), JSON.stringify(v, null, 2)).toBe(true);
      }
      expect(gbnf).toMatch(/"," space/);
    }
  });
});

describe("PEG export, canonical JSON whitespace", () => {
  it("a space between JSON punctuation is laid out by its neighbours; others keep the rule", () => {
    const arena = buildPegParser((p) =>
      p.sequence([p.literal("<call>"), p.space(), p.jsonMember("name", p.literal('"f"')), p.space(), p.literal(","), p.space(), p.jsonMember("arguments", p.json()), p.space(), p.literal("</call>")]),
    );
    const flexible = arena.toGbnf({ schemaMode: "default", jsonWhitespace: "flexible" });
    const canonical = arena.toGbnf({ schemaMode: "default" });
    expect(flexible).toMatch(/root ::= "<call>" space "\\"name\\"" space ":" space/);
    expect(canonical).toMatch(/root ::= "<call>" space "\\"name\\"" ":" " " "\\"f\\"" "," " " "\\"arguments\\"" ":" " " json-value space "<\/call>"/);
    expect(canonical).toMatch(/json-object ::= "\{" \("\}" \| json-string ":" " " json-value \("," " " json-string ":" " " json-value\)\* "\}"\)/);
    const m = new GbnfMatcher(canonical);
    expect(m.matches('<call>"name": "f", "arguments": {"x": [1, 2]} </call>')).toBe(true);
    expect(m.matches('<call>"name":"f", "arguments": {"x": [1, 2]}</call>')).toBe(false);
  });
});
