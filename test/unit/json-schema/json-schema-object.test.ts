import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jsonSchemaToGbnf } from "./json-schema-reference-mode.js";
import { gbnfToRegExp } from "./json-schema-gbnf-to-regex.js";

/** The language of the rule that matches additional-property keys (JSON strings other than `names`). */
function otherKeyRegex(names: string[]): RegExp {
  const props = Object.fromEntries(names.map((n) => [n, { type: "null" }]));
  const gbnf = jsonSchemaToGbnf({ type: "object", properties: props, additionalProperties: { type: "integer" } });
  return gbnfToRegExp(gbnf, "additional-k");
}

describe("additional-property keys", () => {
  it("match every JSON string except the declared names and their proper prefixes (property)", () => {
    // Proper non-empty prefixes of declared names are excluded too: the reference's trie does so and
    // that only narrows what the model may write, so it is kept (docs/json-schema.md).
    const allowed = (key: string, names: string[]): boolean =>
      !names.includes(key) && !(key !== "" && names.some((n) => n.length > key.length && n.startsWith(key)));
    // keys with characters JSON escapes (`"`, `\\`, controls) are not covered: like the reference,
    // the exclusion works on the raw key (docs/json-schema.md)
    const name = fc.stringMatching(/^[a-c\-_^\]é]{0,3}$/);
    fc.assert(
      fc.property(fc.uniqueArray(name, { minLength: 1, maxLength: 5 }), fc.array(name, { maxLength: 10 }), (names, probes) => {
        const re = otherKeyRegex(names);
        for (const key of [...names, ...probes, "zz", "a-b"]) {
          expect(re.test(JSON.stringify(key)), `${JSON.stringify(key)} vs ${JSON.stringify(names)}`).toBe(allowed(key, names));
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe("object layout", () => {
  it("required properties first in declaration order, optional ones chained", () => {
    const g = jsonSchemaToGbnf({
      type: "object",
      properties: { c: { type: "null" }, a: { type: "null" }, b: { type: "null" } },
      required: ["b", "c"],
    });
    const re = gbnfToRegExp(g);
    expect(re.test('{"c":null,"b":null}')).toBe(true);
    expect(re.test('{"c":null,"b":null,"a":null}')).toBe(true);
    expect(re.test('{"b":null,"c":null}')).toBe(false);
    expect(re.test('{"c":null}')).toBe(false);
    expect(re.test('{"c":null,"b":null,"x":null}')).toBe(false);
  });
});
