import { describe, expect, it } from "vitest";

import type { GrammarBuilder } from "../../../lib/json-schema/index.js";
import { buildPegParser } from "../../../lib/peg/index.js";

/** Records addRule calls instead of formatting a grammar, to see what the exporter asks for. */
function recorder(jsonWhitespace: GrammarBuilder["jsonWhitespace"] = "flexible"): GrammarBuilder & { rules: Map<string, string> } {
  const rules = new Map<string, string>();
  return {
    rules,
    addRule: (name, body) => {
      rules.set(name, body);
      return name;
    },
    addSchema: (name) => `schema-${name}`,
    resolveRefs: () => {},
    jsonWhitespace,
  };
}

const rootOf = (arena: ReturnType<typeof buildPegParser>, lazy = false): Map<string, string> => {
  const b = recorder();
  arena.buildGrammar(b, lazy);
  return b.rules;
};

describe("PEG GBNF export", () => {
  it("leaves and combinators", () => {
    expect(rootOf(buildPegParser((p) => p.literal("hi"))).get("root")).toBe('"hi"');
    expect(rootOf(buildPegParser((p) => p.literal("a").then("b").or("c"))).get("root")).toBe('"a" "b" | "c"');
    expect(rootOf(buildPegParser((p) => p.oneOrMore(p.literal("a").or("b")))).get("root")).toBe('("a" | "b")+');
    expect(rootOf(buildPegParser((p) => p.repeat(p.literal("a"), 2, 5))).get("root")).toBe('"a"{2,5}');
    expect(rootOf(buildPegParser((p) => p.chars("[0-9]", 3, 3))).get("root")).toBe("[0-9]{3}");
    expect(rootOf(buildPegParser((p) => p.literal("a").spaced("b"))).get("root")).toBe('"a" space "b"');
    expect(rootOf(buildPegParser((p) => p.negate(p.literal("x")).then(p.any()))).get("root")).toBe(".");
  });

  it("transparent wrappers still get parentheses", () => {
    expect(rootOf(buildPegParser((p) => p.literal("x").then(p.tag("t", p.atomic(p.literal("a").or("b")))))).get("root")).toBe('"x" ("a" | "b")');
  });

  it("until: one rule per automaton state, every state accepting", () => {
    const rules = rootOf(buildPegParser((p) => p.until("ab")));
    expect(rules.get("root")).toBe("until-0");
    expect(rules.get("until-0")).toBe("| [a] until-0-01 | [^a] until-0");
    expect(rules.get("until-0-01")).toBe("| [a] until-0-01 | [^ab] until-0");
  });

  it("ac: everything up to and including the delimiter", () => {
    const rules = rootOf(buildPegParser((p) => p.ac(p.until("ab").then("ab"), "ab")));
    const name = rules.get("root")!;
    expect(rules.get(name)).toBe(`[a] ${name}-01 | [^a] ${name}`);
    expect(rules.get(`${name}-01`)).toBe(`[b] | [a] ${name}-01 | [^ab] ${name}`);
  });

  it("only reachable rules; lazy emits trigger rules and what they reach", () => {
    const arena = buildPegParser((p) => {
      p.rule("orphan", p.literal("o"));
      p.rule("t2", p.literal("y").then(p.ref("inner")), true);
      p.rule("inner", p.literal("z"));
      return p.rule("main", p.literal("x"));
    });
    expect([...rootOf(arena).keys()].sort()).toEqual(["main", "root"]);
    const lazy = rootOf(arena, true);
    expect([...lazy.keys()].sort()).toEqual(["inner", "root", "t2"]);
    expect(lazy.get("root")).toBe("t2");
  });

  it("schema nodes go through addSchema unless raw strings/enums delegate", () => {
    const arena = buildPegParser((p) =>
      p.schema(p.literal("{}"), "args", { type: "object" }).then(p.schema(p.until("<"), "s", { type: "string" }, true)),
    );
    expect(rootOf(arena).get("root")).toBe("schema-args until-2");
  });

  it("toGbnf formats through the JSON-schema grammar builder, deterministically", () => {
    const arena = buildPegParser((p) => p.literal("<tool_call>").then(p.json()).then("</tool_call>"));
    const g = arena.toGbnf();
    expect(g).toContain('root ::= "<tool_call>" json-value "</tool_call>"');
    expect(g).toContain("json-value ::=");
    expect(arena.toGbnf()).toBe(g);
  });
});
