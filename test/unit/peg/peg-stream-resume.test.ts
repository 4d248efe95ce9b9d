/**
 * Stream parsers resume the open leaf at the end of the input (`until`, string content) instead of
 * rescanning it: results must stay exactly those of a fresh parse, for any chunking of the input.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { type PegArena, type PegParseResult, buildPegParser } from "../../../lib/peg/index.js";
import { pegExpr } from "../../conformance/peg-arbitrary.js";
import { buildFromExpr } from "../../conformance/peg-expr.js";

const enc = new TextEncoder();

/** Everything observable about a result: type, offsets and the AST as a tree (ids left out). */
const view = (r: PegParseResult): unknown => [r.type, r.start, r.end, r.ast.toJSON().map(stripIds)];
const stripIds = (n: { id: number; children: unknown[] }): unknown => ({ ...n, id: undefined, children: (n.children as Array<{ id: number; children: unknown[] }>).map(stripIds) });

/**
 * Feeds `bytes` to one stream parser, growing by the chunk sizes in `chunks` (0 repeats the same
 * input), and compares every parse with a fresh parse of the same prefix.
 */
function checkChunked(arena: PegArena, bytes: Uint8Array, chunks: number[], partial: boolean): void {
  const stream = arena.streamParser();
  let n = 0;
  for (const c of [...chunks, bytes.length]) {
    n = Math.min(bytes.length, n + c);
    const prefix = bytes.subarray(0, n);
    expect(view(stream.parse(prefix, { partial })), `prefix ${n}`).toEqual(view(arena.parse(prefix, { partial })));
    if (n === bytes.length) break;
  }
}

/** Longer inputs than the conformance generator's, so leaves stay open across several chunks. */
const longInput = fc
  .array(fc.constantFrom("a", "b", "x", "é", "€", "<", "/", ">", "</x>", "ab", " ", "'", '"', "1", "\\", "\\u00", "e9", "\\n", "{", "}", ":", ","), { maxLength: 40 })
  .map((xs) => enc.encode(xs.join("")));
const rawBytes = fc.uint8Array({ maxLength: 24 });
const chunking = fc.array(fc.integer({ min: 0, max: 7 }), { maxLength: 40 });

const agent = buildPegParser((p) =>
  p
    .optional(p.literal("<think>").then(p.tag("reasoning", p.until("</think>"))).then("</think>"))
    .then(p.tag("content", p.untilOneOf(["<tool_call>", "<|é|>"])))
    .then(p.zeroOrMore(p.literal("<tool_call>").then(p.tag("args", p.json())).then("</tool_call>")))
    .then(p.end()),
);

/** JSON text with escapes and non-ASCII characters inside strings. */
const jsonText = fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v, (_k, x: unknown) => (typeof x === "string" ? `${x}\\"é€😀\n\t\u0001` : x)));

describe("PEG stream parser resumes open leaves", () => {
  it("random grammars, random inputs, random chunkings: same as fresh parses", () => {
    fc.assert(
      fc.property(pegExpr, fc.oneof(longInput, rawBytes), chunking, fc.boolean(), (expr, input, chunks, partial) => {
        checkChunked(buildFromExpr(expr), input, chunks, partial);
      }),
      { numRuns: 400 },
    );
  });

  it("reasoning, content and JSON tool calls with escapes and multi-byte characters, any chunking", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), fc.string({ maxLength: 30 }), fc.array(jsonText, { maxLength: 2 }), chunking, fc.boolean(), (think, content, calls, chunks, partial) => {
        const text = `<think>${think}é</think>${content}€` + calls.map((c) => `<tool_call>${c}</tool_call>`).join("");
        const bytes = enc.encode(text);
        checkChunked(agent, bytes, chunks, partial);
        // one byte at a time cuts every character, escape and delimiter
        checkChunked(agent, bytes, Array.from({ length: bytes.length }, () => 1), partial);
      }),
      { numRuns: 60 },
    );
  });

  it("a delimiter prefix at the end, then the rest of the delimiter or something else", () => {
    for (const tail of ["<tool_call>{}</tool_call>", "<tool_cal x", "<|é|>", "<|", "<|\u00e8|>", "<|\u00e9"]) {
      const full = enc.encode(`hello ${tail}`);
      for (const partial of [true, false]) {
        const stream = agent.streamParser();
        for (let n = 0; n <= full.length; n++) {
          const prefix = full.subarray(0, n);
          expect(view(stream.parse(prefix, { partial })), `${tail} @${n}`).toEqual(view(agent.parse(prefix, { partial })));
        }
      }
    }
  });

  it("long JSON arrays and objects (repetitions resumed after their finished iterations), any chunking", () => {
    const item = fc.oneof(fc.integer(), fc.string({ maxLength: 4 }), fc.constant({ k: [1, "é"] }), fc.constant(null));
    fc.assert(
      fc.property(fc.array(item, { minLength: 5, maxLength: 40 }), fc.boolean(), chunking, fc.boolean(), (items, asObject, chunks, partial) => {
        const value = asObject ? Object.fromEntries(items.map((v, i) => [`k${i}`, v])) : items;
        const bytes = enc.encode(`x<tool_call>${JSON.stringify(value)}</tool_call><tool_call>[${JSON.stringify(value)}]</tool_call>`);
        checkChunked(agent, bytes, chunks.map((c) => c * 3), partial);
      }),
      { numRuns: 60 },
    );
  });

  it("the next parse of an open 500-element array does not step over the finished elements", () => {
    const text = `<tool_call>{"name": "w", "arguments": {"xs": [${Array.from({ length: 500 }, (_, i) => `"s${i}"`).join(", ")}, "ab`;
    const stream = agent.streamParser();
    stream.parse(text, { partial: true });
    let calls = 0;
    const grown = `${text}cd`;
    const r = stream.parse(grown, { partial: true, debug: () => calls++ });
    expect(view(r)).toEqual(view(agent.parse(grown, { partial: true })));
    // each traced call writes two lines; a fresh parse makes thousands of calls, stepping over the
    // 500 finished elements (memo hits) would make at least 1,000 lines
    expect(calls).toBeLessThan(200);
  });

  it("later parses of a long open string or until cost far less than a fresh parse", () => {
    // minima: the machine is shared, and spikes only ever add time
    const min = (xs: number[]): number => Math.min(...xs);
    const cpu = (f: () => void): number => {
      const c0 = process.cpuUsage();
      f();
      const c = process.cpuUsage(c0);
      return c.user + c.system;
    };
    // multi-byte characters make a fresh scan decode every character (~300 KB)
    const body = "lorem ipsum — dolor sit amet, café ".repeat(8_000);
    for (const text of [`<think>${body}`, `ok<tool_call>{"name": "w", "arguments": {"text": "${body}`]) {
      const stream = agent.streamParser();
      const streamed: number[] = [];
      const fresh: number[] = [];
      let prefix = text;
      stream.parse(prefix, { partial: true });
      for (let i = 0; i < 15; i++) {
        prefix += "abc ";
        const bytes = enc.encode(prefix);
        streamed.push(cpu(() => stream.parse(bytes, { partial: true })));
        fresh.push(cpu(() => agent.parse(bytes, { partial: true })));
      }
      expect(min(streamed)).toBeLessThan(min(fresh) / 5);
    }
  });
});
