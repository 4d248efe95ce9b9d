import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { PegArena, buildPegParser } from "../../../lib/peg/index.js";
import { pegExpr as expr } from "../../conformance/peg-arbitrary.js";
import { buildFromExpr } from "../../conformance/peg-expr.js";

const enc = new TextEncoder();

const jsonArena = buildPegParser((p) => p.json());
const toolArena = buildPegParser((p) =>
  p
    .tag("content", p.until("<tool_call>"))
    .then(p.zeroOrMore(p.literal("<tool_call>").then(p.tag("args", p.json())).then("</tool_call>")))
    .then(p.end()),
);

/** JSON text with arbitrary indentation, so whitespace is exercised too. */
const jsonText = fc.tuple(fc.jsonValue({ maxDepth: 4 }), fc.constantFrom(undefined, 0, 1, 2, "\t")).map(([v, indent]) => JSON.stringify(v, null, indent));

describe("PEG properties", () => {
  it("every byte prefix of valid JSON parses as success or need_more_input, never fail", () => {
    fc.assert(
      fc.property(jsonText, (text) => {
        const bytes = enc.encode(text);
        expect(jsonArena.parse(bytes).type).toBe("success");
        for (let n = 0; n <= bytes.length; n++) {
          const r = jsonArena.parse(bytes.subarray(0, n), { partial: true });
          if (r.type === "fail") throw new Error(`prefix ${n} of ${text} failed`);
        }
      }),
      { numRuns: 60 },
    );
  });

  it("every byte prefix of a tool-call transcript parses as success or need_more_input", () => {
    // No "<" in the content: `until` stops before a delimiter prefix at the very end of the input even
    // when the input is complete (reference behaviour), so "text<" alone is not a complete match.
    const content = fc.string({ maxLength: 20 }).filter((s) => !s.includes("<"));
    fc.assert(
      fc.property(content, fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 2 }), (text, calls) => {
        const full = text + calls.map((c) => `<tool_call>${JSON.stringify(c)}</tool_call>`).join("");
        const bytes = enc.encode(full);
        expect(toolArena.parse(bytes).type).toBe("success");
        for (let n = 0; n <= bytes.length; n++) {
          expect(toolArena.parse(bytes.subarray(0, n), { partial: true }).type).not.toBe("fail");
        }
      }),
      { numRuns: 60 },
    );
  });

  it("toJSON/fromJSON round-trips and the loaded arena parses the same", () => {
    fc.assert(
      fc.property(expr, fc.string({ maxLength: 8 }), fc.boolean(), (e, input, partial) => {
        const arena = buildFromExpr(e);
        const text = JSON.stringify(arena.toJSON());
        const back = PegArena.fromJSON(JSON.parse(text));
        expect(JSON.stringify(back.toJSON())).toBe(text);
        const a = arena.parse(input, { partial });
        const b = back.parse(input, { partial });
        expect([b.type, b.end, b.ast.toJSON()]).toEqual([a.type, a.end, a.ast.toJSON()]);
      }),
      { numRuns: 200 },
    );
  });

  it("GBNF export is deterministic", () => {
    fc.assert(
      fc.property(expr, fc.boolean(), (e, lazy) => {
        const g = buildFromExpr(e).toGbnf({ lazy });
        expect(buildFromExpr(e).toGbnf({ lazy })).toBe(g);
      }),
      { numRuns: 100 },
    );
  });

  it("a complete match is never a failure when parsed as partial", () => {
    fc.assert(
      fc.property(expr, fc.string({ maxLength: 8 }), (e, input) => {
        const arena = buildFromExpr(e);
        const full = arena.parse(input);
        if (full.type === "success" && full.end === enc.encode(input).length) {
          expect(arena.parse(input, { partial: true }).type).not.toBe("fail");
        }
      }),
      { numRuns: 200 },
    );
  });
});
