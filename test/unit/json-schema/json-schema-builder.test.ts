import { describe, expect, it } from "vitest";
import { buildGrammar, gbnfFormatLiteral } from "./json-schema-reference-mode.js";
import { jsonDump, sanitizeRuleName } from "../../../lib/json-schema/literal.js";

const SPACE = 'space ::= | " " | "\\n"{1,2} [ \\t]{0,20}\n';

describe("gbnfFormatLiteral", () => {
  it("escapes only CR, LF, quote and backslash", () => {
    expect(gbnfFormatLiteral("plain")).toBe('"plain"');
    expect(gbnfFormatLiteral('a"b\\c\nd\re')).toBe('"a\\"b\\\\c\\nd\\re"');
    expect(gbnfFormatLiteral("tab\there ] - é")).toBe('"tab\there ] - é"');
    expect(gbnfFormatLiteral("")).toBe('""');
  });
});

describe("rule names", () => {
  it("replaces each run of characters outside [a-zA-Z0-9-] by one dash", () => {
    expect(sanitizeRuleName("a b__c")).toBe("a-b-c");
    expect(sanitizeRuleName("héllo wörld")).toBe("h-llo-w-rld");
    expect(sanitizeRuleName("ok-Name9")).toBe("ok-Name9");
  });
});

describe("jsonDump (nlohmann layout)", () => {
  it("writes compact JSON with insertion-ordered keys", () => {
    expect(jsonDump({ b: 1, a: [true, null, "x"] })).toBe('{"b":1,"a":[true,null,"x"]}');
  });
  it("writes doubles like nlohmann", () => {
    expect(jsonDump(1.5)).toBe("1.5");
    expect(jsonDump(-0.25)).toBe("-0.25");
    expect(jsonDump(1e-5)).toBe("1e-05");
    expect(jsonDump(0.001)).toBe("0.001");
    expect(jsonDump(1.5e300)).toBe("1.5e+300");
    expect(jsonDump(1e21)).toBe("1e+21");
    expect(jsonDump(123456789012.5)).toBe("123456789012.5");
    expect(jsonDump(42)).toBe("42");
  });
});

describe("buildGrammar", () => {
  it("always has space, sorts rules by name and shares identical bodies", () => {
    const g = buildGrammar((b) => {
      expect(b.addRule("zeta", '"z"')).toBe("zeta");
      expect(b.addRule("alpha", '"a"')).toBe("alpha");
      expect(b.addRule("alpha", '"a"')).toBe("alpha");
      expect(b.addRule("root", "alpha zeta")).toBe("root");
    });
    expect(g).toBe(`alpha ::= "a"\nroot ::= alpha zeta\n${SPACE}zeta ::= "z"\n`);
  });

  it("suffixes a clashing name with the first free number, reusing an identical suffixed body", () => {
    buildGrammar((b) => {
      expect(b.addRule("x", "1")).toBe("x");
      expect(b.addRule("x", "2")).toBe("x0");
      expect(b.addRule("x", "3")).toBe("x1");
      expect(b.addRule("x", "2")).toBe("x0");
      expect(b.addRule("my rule", "4")).toBe("my-rule");
    });
  });

  it("mixes hand-written rules with schema rules; `root` and '' both name the root", () => {
    const g = buildGrammar((b) => {
      const s = b.addSchema("args", { type: "object", properties: { n: { type: "integer" } }, required: ["n"] });
      b.addRule("root", `"call " ${s}`);
    });
    expect(g).toContain('root ::= "call " args\n');
    expect(g).toContain('args ::= "{" space args-n-kv space "}"\n');
    expect(g).toContain('args-n-kv ::= "\\"n\\"" space ":" space integer\n');
    const g2 = buildGrammar((b) => void b.addSchema("root", { type: "string" }));
    expect(g2).toContain("root ::= ");
  });

  it("resolves refs registered through the builder", () => {
    const schema = { $defs: { id: { type: "string", minLength: 1 } }, type: "object", properties: { id: { $ref: "#/$defs/id" } } };
    const g = buildGrammar((b) => {
      b.resolveRefs(schema);
      b.addSchema("", schema);
    });
    expect(g).toContain("id ::= ref-defs-id\n");
    expect(g).toContain('ref-defs-id ::= "\\"" char+ "\\""\n');
  });
});
