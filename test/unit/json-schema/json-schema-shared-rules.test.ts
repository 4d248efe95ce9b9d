/**
 * Session 11's smaller grammars (docs/json-schema.md, "Session 11"): rules shared by content or
 * named short keep the language. Each case checks the grammar's shape (the sharing happened) and
 * what it admits (a small GBNF recognizer, json-schema-gbnf-match.ts), against ajv where a text
 * is accepted.
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileJsonSchema } from "../../../lib/json-schema/index.js";
import { GbnfMatcher } from "./json-schema-gbnf-match.js";

const ajv = new Ajv2020({ strict: false, allErrors: false });
const rulesNamed = (gbnf: string, re: RegExp): string[] => gbnf.split("\n").filter((l) => re.test(l.split(" ::= ")[0] ?? ""));

describe("strings of one length range are one rule, named by the range", () => {
  const schema = {
    type: "object",
    properties: { a: { type: "string", minLength: 2, maxLength: 40 }, b: { type: "string", minLength: 2, maxLength: 40 }, c: { type: "string", maxLength: 3 } },
    required: ["a", "b", "c"],
    additionalProperties: false,
  };
  const gbnf = compileJsonSchema(schema).gbnf;
  const m = new GbnfMatcher(gbnf);

  it("both properties refer to `string-2-40`, defined once", () => {
    expect(rulesNamed(gbnf, /^string-2-40$/)).toHaveLength(1);
    expect(gbnf).toMatch(/^a-kv ::= .*"a".* string-2-40$/m);
    expect(gbnf).toMatch(/^b-kv ::= .*"b".* string-2-40$/m);
    expect(rulesNamed(gbnf, /^string-0-3$/)).toHaveLength(1);
  });

  it("each length range still holds", () => {
    const text = (a: string, b: string, c: string) => JSON.stringify({ a, b, c }).replace(/,/g, ", ").replace(/":/g, '": ');
    expect(m.matches(text("ab", "x".repeat(40), ""))).toBe(true);
    expect(m.matches(text("a", "xy", ""))).toBe(false);
    expect(m.matches(text("ab", "x".repeat(41), ""))).toBe(false);
    expect(m.matches(text("ab", "xy", "abcd"))).toBe(false);
  });

  it("a root that is such a string is still named root", () => {
    const g = compileJsonSchema({ type: "string", maxLength: 5 }).gbnf;
    expect(g).toMatch(/^root ::= string-0-5$/m);
    expect(new GbnfMatcher(g).matches('"abcde"')).toBe(true);
    expect(new GbnfMatcher(g).matches('"abcdef"')).toBe(false);
  });
});

describe("a long object path: its position rules are named o<N>-..., its values keep their names", () => {
  const inner = {
    type: "object",
    properties: { readinessProbe: { type: "integer" }, resources: { type: "string" }, requiredDuringScheduling: { type: "boolean" } },
    additionalProperties: { type: "null" },
  };
  const schema = { type: "object", properties: { containerSpecification: inner, ephemeralContainerSpecification: inner }, additionalProperties: false };
  const gbnf = compileJsonSchema(schema).gbnf;
  const m = new GbnfMatcher(gbnf);
  const validate = ajv.compile(schema);

  it("short names for the object machinery; the value rules keep their own", () => {
    expect(rulesNamed(gbnf, /^o\d+-k\d+$/).length).toBeGreaterThanOrEqual(3);
    expect(rulesNamed(gbnf, /^o\d+-p0$/).length).toBeGreaterThanOrEqual(1);
    expect(gbnf).toMatch(/^o\d+-k0 ::= .*"readinessProbe".* ": " integer$/m);
    expect(gbnf).toMatch(/^o\d+-x ::= containerSpecification-additional-k ": " null$/m);
  });

  it("the ends of declared names are suffix rules, shared by both objects' key tries and by names ending alike", () => {
    // "readinessProbe", "resources", "requiredDuringScheduling" branch after "re"; each rest is a
    // chain of suffix rules, "...ces" and "...ing" among them, written once for both objects
    const rests = rulesNamed(gbnf, /^key-rest-\d+$/);
    const chars = new Set(["a", "d", "i", "n", "e", "s", "P", "r", "o", "b", "u", "c", "q", "D", "g", "S", "h", "l"]);
    expect(rests.length).toBeGreaterThan(10);
    // one rule per distinct suffix: "adinessProbe" (12) + "sources" (7) + "quiredDuringScheduling" (22), less shared ones
    expect(rests.length).toBeLessThanOrEqual(12 + 7 + 22);
    for (const r of rests) {
      const [name, body] = r.split(" ::= ") as [string, string];
      expect(body, name).toMatch(/^\[(.)\] (key-rest-\d+|char\+) \| key-other-[0-9a-f]+$/);
      expect(chars.has(body[1]!), body).toBe(true);
      // defined once; referenced from both tries or from the rule of a longer suffix
      expect(gbnf.split(new RegExp(`\\b${name}\\b`)).length - 1, name).toBeGreaterThanOrEqual(2);
    }
    // each object's trie refers to the same rest rules
    const tries = rulesNamed(gbnf, /-additional-k$/).map((l) => [...l.matchAll(/key-rest-\d+/g)].map((m) => m[0]).join(","));
    expect(tries).toHaveLength(2);
    expect(tries[0]).toBe(tries[1]);
  });

  it("declared names take their own values only; other names (prefixes, extensions, near misses) take null", () => {
    const ok = [
      { containerSpecification: { readinessProbe: 1, resources: "x" } },
      { containerSpecification: { resource: null, resourcesX: null, readinessProb: null, requiredDuringSchedulinG: null } },
      { ephemeralContainerSpecification: { requiredDuringScheduling: true, r: null, re: null, "": null } },
    ];
    const bad = [
      '{"containerSpecification": {"resources": null}}',
      '{"containerSpecification": {"readinessProbe": null}}',
      '{"ephemeralContainerSpecification": {"requiredDuringScheduling": null}}',
      '{"containerSpecification": {"resource": 1}}',
    ];
    const dumps = (v: unknown): string => JSON.stringify(v).replace(/,"/g, ', "').replace(/":/g, '": ');
    for (const v of ok) {
      expect(validate(v)).toBe(true);
      expect(m.matches(dumps(v)), dumps(v)).toBe(true);
    }
    for (const text of bad) expect(m.matches(text), text).toBe(false);
    const key = fc.constantFrom("readinessProbe", "resources", "requiredDuringScheduling", "resource", "resourcesX", "re", "readinessProbe2", "r");
    const value = fc.constantFrom<unknown>(null, 1, "s", true);
    fc.assert(
      fc.property(fc.dictionary(key, value, { maxKeys: 4 }), (inner) => {
        const text = dumps({ containerSpecification: inner });
        if (m.matches(text)) expect(validate({ containerSpecification: inner }), text).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe('propertyOrder: "any": exact (each key at most once) up to 5 properties, a repeat admitted past that', () => {
  const objectOf = (keys: string) => ({ type: "object", properties: Object.fromEntries([...keys].map((k) => [k, { type: "integer" }])), additionalProperties: false });

  it("5 properties: any order, no key twice", () => {
    const m = new GbnfMatcher(compileJsonSchema(objectOf("abcde"), { propertyOrder: "any" }).gbnf);
    expect(m.matches('{"e": 1, "c": 2, "a": 3}')).toBe(true);
    expect(m.matches('{"e": 1, "d": 2, "c": 3, "b": 4, "a": 5}')).toBe(true);
    expect(m.matches('{"a": 1, "a": 2}')).toBe(false);
  });

  it("6 properties: any order, an optional key may repeat (docs/json-schema.md, Property order)", () => {
    const m = new GbnfMatcher(compileJsonSchema(objectOf("abcdef"), { propertyOrder: "any" }).gbnf);
    expect(m.matches('{"f": 1, "c": 2, "a": 3}')).toBe(true);
    expect(m.matches('{"a": 1, "a": 2}')).toBe(true);
    expect(m.matches('{"a": "1"}')).toBe(false);
  });
});
