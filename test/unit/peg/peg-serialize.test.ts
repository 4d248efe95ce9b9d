import { describe, expect, it } from "vitest";

import { LlamapegError } from "../../../lib/errors.js";
import { PegArena, buildPegParser } from "../../../lib/peg/index.js";

describe("PEG arena JSON", () => {
  const arena = buildPegParser((p) =>
    p.rule("call", p.literal("<tool_call>").then(p.tag("args", p.json())).then("</tool_call>"), true).or(p.chars("[^<]", 0, -1)),
  );

  it("uses the reference's field names and key order", () => {
    const j = arena.toJSON();
    expect(Object.keys(j)).toEqual(["parsers", "rules", "root"]);
    const chars = j.parsers.find((p) => p.type === "chars")!;
    expect(Object.keys(chars)).toEqual(["type", "pattern", "ranges", "negated", "min_count", "max_count"]);
    const rule = j.parsers.find((p) => p.type === "rule" && p.name === "call")!;
    expect(rule).toMatchObject({ trigger: true });
    expect(j.rules.call).toBe(j.parsers.indexOf(rule));
  });

  it("round-trips and parses the same", () => {
    const text = JSON.stringify(arena.toJSON());
    const back = PegArena.fromJSON(text);
    expect(JSON.stringify(back.toJSON())).toBe(text);
    const input = '<tool_call>{"a": [1, 2]}</tool_call>';
    expect(back.parse(input)).toMatchObject({ type: "success", end: input.length });
    expect(back.toGbnf()).toBe(arena.toGbnf());
  });

  it("reads the reference's no-root id", () => {
    const j = { parsers: [{ type: "epsilon" }], rules: {}, root: 18446744073709551615 };
    const a = PegArena.fromJSON(j);
    expect(a.root).toBe(-1);
    expect(() => a.parse("")).toThrow(LlamapegError);
  });

  it("rejects malformed trees with a position", () => {
    const cases: Array<[unknown, string]> = [
      [{ parsers: [{ type: "nope" }], rules: {}, root: 0 }, "/parsers/0/type"],
      [{ parsers: [{ type: "literal" }], rules: {}, root: 0 }, "/parsers/0"],
      [{ parsers: [{ type: "sequence", children: [5] }], rules: {}, root: 0 }, "/parsers/0"],
      [{ parsers: [{ type: "epsilon" }], rules: { r: 3 }, root: 0 }, "/rules/r"],
      [{ parsers: [{ type: "epsilon" }], rules: {}, root: 4 }, "/root"],
      [{ rules: {}, root: 0 }, "/parsers"],
      [{ parsers: [{ type: "ac", child: 0, delimiters: [] }], rules: {}, root: 0 }, "/parsers/0/delimiters"],
    ];
    for (const [json, where] of cases) {
      try {
        PegArena.fromJSON(json);
        expect.unreachable(`accepted ${JSON.stringify(json)}`);
      } catch (e) {
        expect(e).toBeInstanceOf(LlamapegError);
        expect((e as LlamapegError).code).toBe("ERR_PEG_INVALID");
        expect((e as LlamapegError).where).toBe(where);
      }
    }
  });

  it("dump describes a subtree like the reference", () => {
    const a = buildPegParser((p) => p.literal("a").then(p.zeroOrMore(p.any())));
    expect(a.dump()).toBe("Sequence(Literal(a), Repetition(Any, 0, unbounded))");
  });
});
