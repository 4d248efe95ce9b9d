import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { type PegArena, type PegParseResult, buildPegParser } from "../../../lib/peg/index.js";
import { pegExpr, pegInput } from "../../conformance/peg-arbitrary.js";
import { buildFromExpr } from "../../conformance/peg-expr.js";

const enc = new TextEncoder();

/** Everything observable about a result: type, offsets and the AST as a tree. */
const view = (r: PegParseResult): unknown => [r.type, r.start, r.end, r.ast.toJSON().map(stripIds)];
const stripIds = (n: { id: number; children: unknown[] }): unknown => ({ ...n, id: undefined, children: (n.children as Array<{ id: number; children: unknown[] }>).map(stripIds) });

/** Feeds `bytes` to one stream parser in chunks cut at `cuts`, comparing each parse with a fresh one. */
function checkStream(arena: PegArena, bytes: Uint8Array, cuts: number[], partial = true): void {
  const stream = arena.streamParser();
  const ends = [...new Set([...cuts.filter((c) => c <= bytes.length), bytes.length])].sort((a, b) => a - b);
  for (const n of ends) {
    const prefix = bytes.subarray(0, n);
    expect(view(stream.parse(prefix, { partial })), `prefix ${n}`).toEqual(view(arena.parse(prefix, { partial })));
  }
}

const toolArena = buildPegParser((p) =>
  p
    .tag("content", p.until("<tool_call>"))
    .then(p.zeroOrMore(p.literal("<tool_call>").then(p.tag("args", p.json())).then("</tool_call>")))
    .then(p.end()),
);

describe("PEG stream parser (growing input)", () => {
  it("gives the same results as fresh parses for every prefix of JSON tool-call transcripts", () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 3 }), fc.array(fc.nat(400), { maxLength: 30 }), (calls, cuts) => {
        const text = "Sure." + calls.map((c) => `<tool_call>${JSON.stringify(c)}</tool_call>`).join("");
        const bytes = enc.encode(text);
        checkStream(toolArena, bytes, Array.from({ length: bytes.length + 1 }, (_, i) => i));
        checkStream(toolArena, bytes, cuts);
      }),
      { numRuns: 15 },
    );
  });

  it("gives the same results as fresh parses on random grammars and inputs", () => {
    fc.assert(
      fc.property(pegExpr, pegInput, fc.boolean(), (expr, input, partial) => {
        const arena = buildFromExpr(expr);
        checkStream(arena, input, Array.from({ length: input.length + 1 }, (_, i) => i), partial);
      }),
      { numRuns: 400 },
    );
  });

  it("starts over when the input does not extend the previous one, or the mode changes", () => {
    const stream = toolArena.streamParser();
    expect(stream.parse('x<tool_call>{"a": 1', { partial: true }).type).toBe("need_more_input");
    expect(view(stream.parse('y<tool_call>{"a": 2}</tool_call>'))).toEqual(view(toolArena.parse('y<tool_call>{"a": 2}</tool_call>')));
    expect(view(stream.parse('y<tool_call>{"a": 2}</tool_call>', { partial: true }))).toEqual(
      view(toolArena.parse('y<tool_call>{"a": 2}</tool_call>', { partial: true })),
    );
    stream.reset();
    expect(stream.parse("y", { partial: true }).type).toBe("need_more_input");
  });

  it("reuses completed work: later parses of a long tool call make far fewer parser calls", () => {
    const members = Array.from({ length: 60 }, (_, i) => `"k${i}": {"v": [${i}, "s${i}", true]}`).join(", ");
    const text = `<tool_call>{${members}, "tail": "abcdef`;
    const calls = (parse: (opts: { partial: boolean; debug: () => void }) => unknown): number => {
      let n = 0;
      parse({ partial: true, debug: () => n++ });
      return n;
    };
    const stream = toolArena.streamParser();
    calls((o) => stream.parse(text.slice(0, -3), o));
    const incremental = calls((o) => stream.parse(text, o));
    const fresh = calls((o) => toolArena.parse(text, o));
    expect(incremental).toBeLessThan(fresh / 5);
  });
});
