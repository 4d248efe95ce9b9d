import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

import { analyzeTemplate, withOverrides } from "../../../lib/chat/analysis/index.js";

const src = readFileSync(new URL("../../fixtures/analysis/json-tools.jinja", import.meta.url), "utf8");

describe("analysis overrides", () => {
  it("deep-merges objects and replaces arrays and scalars", () => {
    const base = analyzeTemplate(src);
    const a = analyzeTemplate(src, {
      overrides: {
        reasoning: { mode: "tag_based", start: "<think>", end: "</think>" },
        tools: { format: { perCallEnd: "</tc>" }, arguments: { tolerateIntertagWhitespace: true } },
        preservedTokens: ["<x>"],
      },
    });
    expect(a.reasoning).toEqual({ mode: "tag_based", start: "<think>", end: "</think>" });
    expect(a.tools.format.perCallEnd).toBe("</tc>");
    expect(a.tools.format.perCallStart).toBe(base.tools.format.perCallStart);
    expect(a.tools.arguments.tolerateIntertagWhitespace).toBe(true);
    expect(a.preservedTokens).toEqual(["<x>"]);
  });

  it("rejects unknown fields, wrong types and bad enum values, naming the field", () => {
    const base = analyzeTemplate(src);
    const bad = (o: unknown) => () => withOverrides(base, o as never);
    expect(bad({ tools: { format: { sectionBegin: "x" } } })).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_ARGUMENT", where: "tools.format.sectionBegin" }),
    );
    expect(bad({ reasoning: { start: 3 } })).toThrow(expect.objectContaining({ where: "reasoning.start" }));
    expect(bad({ content: { mode: "sometimes" } })).toThrow(expect.objectContaining({ where: "content.mode" }));
    expect(bad({ templateHash: "x" })).toThrow(expect.objectContaining({ where: "templateHash" }));
  });

  it("never changes the cached analysis or the input", () => {
    const first = analyzeTemplate(src);
    first.tools.format.perCallStart = "mutated";
    const patched = withOverrides(first, { userStart: "U" });
    expect(first.userStart).not.toBe("U");
    expect(patched.tools.format.perCallStart).toBe("mutated");
    expect(analyzeTemplate(src).tools.format.perCallStart).toBe("<tool_call>\n");
  });

  it("is plain JSON", () => {
    const a = analyzeTemplate(src);
    expect(JSON.parse(JSON.stringify(a))).toEqual(a);
    expect(a.templateHash).toMatch(/^[0-9a-f]{64}$/);
  });
});
