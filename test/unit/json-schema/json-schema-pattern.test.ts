import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LlamapegError } from "../../../lib/errors.js";
import { compileJsonSchema, jsonSchemaToGbnf } from "./json-schema-reference-mode.js";
import { gbnfToRegExp } from "./json-schema-gbnf-to-regex.js";

/** The strings (JSON-encoded, with quotes) the grammar for `pattern` accepts. */
const grammarFor = (pattern: string, dotall = false): RegExp => gbnfToRegExp(jsonSchemaToGbnf({ type: "string", pattern }, { dotall }));

const PATTERNS = [
  "^abc$",
  "^a*b+c?$",
  "^(foo|bar)+baz$",
  "^(?:ab|c){2,3}d$",
  "^[a-c]{1,2}[^a-c]$",
  "^x(y(z|w)?)*$",
  "^a.c$",
  "^\\.\\*\\+$",
  "^(a|b|)c$",
  "^a{2}b{0,1}c{1,}$",
  "^((ab){1,2}|c)+$",
  "^[0-9]{3}-[0-9]{2}$",
  "^ab*$",
  "^é+ü?$",
];

describe("pattern translation", () => {
  it("accepts the same strings as the regex itself (property, per pattern)", () => {
    for (const pattern of PATTERNS) {
      const want = new RegExp(pattern, "u");
      const got = grammarFor(pattern);
      // Characters JSON writes escaped (`"`, `\\`, controls) are left out: like the reference, the
      // grammar matches the pattern against the JSON text of the string (docs/json-schema.md).
      const alphabet = [...new Set([..."abcxyzwfordé", ..."0123456789-.*+ü"])];
      fc.assert(
        fc.property(fc.array(fc.constantFrom(...alphabet), { maxLength: 8 }), (chars) => {
          const s = chars.join("");
          const json = JSON.stringify(s);
          expect(got.test(json), `${pattern} on ${json}`).toBe(want.test(s));
        }),
        { numRuns: 300 },
      );
      // and the known members
      for (const s of ["abc", "foobarbaz", "ababd", "a1c", ".*+", "c", "aabcc", "123-45", "abbb", "éé"]) {
        expect(got.test(JSON.stringify(s)), `${pattern} on ${s}`).toBe(want.test(s));
      }
    }
  });

  it("`.` excludes line breaks unless dotall", () => {
    expect(grammarFor("^a.b$").test('"a\\nb"')).toBe(false);
    expect(gbnfToRegExp(jsonSchemaToGbnf({ type: "string", pattern: "^a.b$" }, { dotall: true })).test('"a\nb"')).toBe(true);
    expect(jsonSchemaToGbnf({ type: "string", pattern: "^a.b$" }, { dotall: true })).toContain("dot ::= [\\U00000000-\\U0010FFFF]");
  });

  it("a quantifier after a non-ASCII character repeats the whole character", () => {
    const g = jsonSchemaToGbnf({ type: "string", pattern: "^xé*$" });
    expect(g).toContain('"é"*');
    expect(grammarFor("^xé*$").test('"xéé"')).toBe(true);
  });

  it("reuses one helper rule per repeated group", () => {
    const g = jsonSchemaToGbnf({ type: "string", pattern: "^(ab){2}(ab){3}(cd){1,2}$" });
    expect(g).toContain('root-1 ::= ("ab")');
    expect(g).toContain('root-2 ::= ("cd")');
    expect(g).not.toContain("root-3");
  });

  it.each([
    ["[0-9]+", "not anchored"],
    ["^\\d+$", "unsupported escape"],
    ["^(?=a)a$", "unsupported group syntax"],
    ["^a$b$", "anchor inside"],
    ["^a]$", "unsupported character"],
    ["^a{x}$", "invalid number"],
    ["^a{1,2,3}$", "wrong number of values"],
    ["^[\\w]$", "unsupported escape in character class"],
  ])("%s is unsupported: an error, or a plain string with a warning", (pattern, reason) => {
    const schema = { type: "object", properties: { p: { type: "string", pattern } } };
    let err: unknown;
    try {
      jsonSchemaToGbnf(schema);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LlamapegError);
    expect((err as LlamapegError).code).toBe("ERR_SCHEMA_UNSUPPORTED");
    expect((err as LlamapegError).where).toBe("#/properties/p/pattern");
    expect((err as LlamapegError).message).toContain(reason);
    const { gbnf, warnings } = compileJsonSchema(schema, { unsupported: "ignore" });
    expect(gbnf).toContain("p ::= string\n");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.where).toBe("#/properties/p/pattern");
  });

  it.each([
    ["^(ab$", "unbalanced parentheses"],
    ["^ab)$", "unbalanced parentheses"],
    ["^*a$", "nothing to repeat"],
    ["^[ab$", "unterminated character class"],
    // the final `$` is taken as the anchor, which leaves a trailing backslash (as in the reference)
    ["^ab\\$", "trailing backslash"],
  ])("%s is an invalid pattern", (pattern, reason) => {
    let err: unknown;
    try {
      compileJsonSchema({ type: "string", pattern }, { unsupported: "ignore" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LlamapegError);
    expect((err as LlamapegError).code).toBe("ERR_SCHEMA_INVALID");
    expect((err as LlamapegError).where).toBe("#/pattern");
    expect((err as LlamapegError).message).toContain(reason);
  });
});
