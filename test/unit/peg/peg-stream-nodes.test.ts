/**
 * What a stream parser's successive ASTs tell a reader that maps only what changed: settled nodes keep
 * their ids across parses, `hasTags` lets it skip untagged subtrees, a resumed repetition's finished
 * iterations are shared rather than copied (`childCount`/`child` read them in place). And the
 * `lossyUtf8` option: stray bytes read as U+FFFD instead of failing.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";

import type { AstBuffers } from "../../../lib/peg/ast.js";
import { type PegArena, type PegAst, type PegParseResult, buildPegParser } from "../../../lib/peg/index.js";
import { pegExpr } from "../../conformance/peg-arbitrary.js";
import { buildFromExpr } from "../../conformance/peg-expr.js";

const enc = new TextEncoder();
const view = (r: PegParseResult): unknown => [r.type, r.start, r.end, r.ast.toJSON().map(stripIds)];
const stripIds = (n: { id: number; children: unknown[] }): unknown => ({ ...n, id: undefined, children: (n.children as Array<{ id: number; children: unknown[] }>).map(stripIds) });

function* nodes(ast: PegAst): Generator<number> {
  const stack = [...ast.roots];
  while (stack.length > 0) {
    const id = stack.pop()!;
    yield id;
    stack.push(...ast.children(id));
  }
}

/** Checks the per-node facts of one AST: children by index, tag flags, settled nodes never partial. */
function checkNodes(ast: PegAst): void {
  for (const id of nodes(ast)) {
    const kids = ast.children(id);
    expect(ast.childCount(id)).toBe(kids.length);
    kids.forEach((k, i) => expect(ast.child(id, i)).toBe(k));
    // hasTags may over-approximate (a shared run's flag covers its whole entry), never miss a tag
    if (ast.tag(id) !== "" || kids.some((k) => ast.hasTags(k))) expect(ast.hasTags(id)).toBe(true);
    if (ast.isSettled(id)) expect(ast.isPartial(id)).toBe(false);
  }
}

const agent = buildPegParser((p) =>
  p
    .optional(p.literal("<think>").then(p.tag("reasoning", p.until("</think>"))).then("</think>"))
    .then(p.tag("content", p.untilOneOf(["<tool_call>", "<|é|>"])))
    .then(p.zeroOrMore(p.literal("<tool_call>").then(p.tag("args", p.json())).then("</tool_call>")))
    .then(p.end()),
);

/** Feeds growing prefixes (chunk sizes, 0 repeats) to one stream parser; compares with fresh parses. */
function checkChunked(arena: PegArena, bytes: Uint8Array, chunks: number[], options: { partial: boolean; lossyUtf8?: boolean }): PegParseResult[] {
  const stream = arena.streamParser();
  const out: PegParseResult[] = [];
  let n = 0;
  for (const c of [...chunks, bytes.length]) {
    n = Math.min(bytes.length, n + c);
    const prefix = bytes.subarray(0, n);
    const r = stream.parse(prefix, options);
    expect(view(r), `prefix ${n}`).toEqual(view(arena.parse(prefix, options)));
    checkNodes(r.ast);
    out.push(r);
    if (n === bytes.length) break;
  }
  return out;
}

const chunking = fc.array(fc.integer({ min: 0, max: 7 }), { maxLength: 40 });

describe("stream parser ASTs", () => {
  it("node facts hold on random grammars, inputs and chunkings", () => {
    const input = fc.oneof(
      fc.array(fc.constantFrom("a", "b", "x", "é", "<", "</x>", "ab", " ", '"', "1", "\\", "{", "}", ","), { maxLength: 30 }).map((xs) => enc.encode(xs.join(""))),
      fc.uint8Array({ maxLength: 24 }),
    );
    fc.assert(
      fc.property(pegExpr, input, chunking, fc.boolean(), (expr, bytes, chunks, partial) => {
        checkChunked(buildFromExpr(expr), bytes, chunks, { partial });
      }),
      { numRuns: 300 },
    );
  });

  it("a settled node of one parse is the same node (same id) in the next parse that reaches it", () => {
    const text = `<think>hm</think>ok<tool_call>{"a": [1, 2, {"b": "c"}]}</tool_call><tool_call>{"d": "eeeeeeeeeeeeeeeeeee"}</tool_call>`;
    const bytes = enc.encode(text);
    const stream = agent.streamParser();
    let prev: PegAst | null = null;
    let carried = 0;
    for (let n = 1; n <= bytes.length; n++) {
      const ast = stream.parse(bytes.subarray(0, n), { partial: true }).ast;
      if (prev !== null && prev.store === ast.store) {
        const now = new Set(nodes(ast));
        // every settled tagged node of the previous parse that starts and ends at the same place is reused
        for (const id of nodes(prev)) {
          if (!prev.isSettled(id) || prev.tag(id) === "") continue;
          const same = [...now].find((k) => ast.tag(k) === prev!.tag(id) && ast.start(k) === prev!.start(id) && ast.end(k) === prev!.end(id));
          if (same !== undefined) {
            expect(same).toBe(id);
            carried++;
          }
        }
      }
      prev = ast;
    }
    expect(carried).toBeGreaterThan(100);
  });

  it("the node of an open array shares its finished elements: a parse adds a bounded number of nodes and child slots", () => {
    const head = `x<tool_call>{"xs": [`;
    const stream = agent.streamParser();
    const sizes: number[] = [];
    const slots: number[] = [];
    // the store is shared by the parses (and grows): read its child slots after each one
    const kids = (r: PegParseResult): number => (r.ast.store as AstBuffers).kids.length;
    let text = head;
    let last: PegParseResult | null = null;
    let lastKids = 0;
    for (let i = 0; i < 3000; i++) {
      text += `${i ? ", " : ""}${i}`;
      const r = stream.parse(enc.encode(text), { partial: true });
      if (last !== null && last.ast.store === r.ast.store) {
        sizes.push(r.ast.size - last.ast.size);
        slots.push(kids(r) - lastKids);
      }
      last = r;
      lastKids = kids(r);
    }
    // a fresh node for the array and its few open ancestors, not one per element
    expect(Math.max(...sizes.slice(-1000))).toBeLessThan(20);
    expect(Math.max(...slots.slice(-1000))).toBeLessThan(40);
    const ast = last!.ast;
    expect(view(last!)).toEqual(view(agent.parse(enc.encode(text), { partial: true })));
    const arr = [...nodes(ast)].find((id) => ast.rule(id) === "json-array");
    if (arr !== undefined) expect(ast.childCount(arr)).toBe(3000);
  });
});

describe("stream parser extend(piece)", () => {
  it("parses the previous input plus the piece: same results as fresh parses, any chunking and mode", () => {
    fc.assert(
      fc.property(pegExpr, fc.uint8Array({ maxLength: 30 }), chunking, fc.boolean(), fc.boolean(), (expr, bytes, chunks, partial, lossyUtf8) => {
        const arena = buildFromExpr(expr);
        const stream = arena.streamParser();
        let n = 0;
        for (const c of [...chunks, bytes.length]) {
          const m = Math.min(bytes.length, n + c);
          const r = stream.extend(bytes.subarray(n, m), { partial, lossyUtf8 });
          n = m;
          expect([...r.ast.input]).toEqual([...bytes.subarray(0, n)]);
          expect(view(r), `prefix ${n}`).toEqual(view(arena.parse(bytes.subarray(0, n), { partial, lossyUtf8 })));
          if (n === bytes.length) break;
        }
      }),
      { numRuns: 300 },
    );
  });

  it("mixes with parse(), starts from an empty input after reset()", () => {
    const stream = agent.streamParser();
    const text = enc.encode(`<think>a</think>b<tool_call>{"k": [1, 2]}</tool_call>`);
    stream.parse(text.subarray(0, 10), { partial: true });
    expect(view(stream.extend(text.subarray(10, 30), { partial: true }))).toEqual(view(agent.parse(text.subarray(0, 30), { partial: true })));
    expect(view(stream.parse(text.subarray(0, 40), { partial: true }))).toEqual(view(agent.parse(text.subarray(0, 40), { partial: true })));
    expect(view(stream.extend(text.subarray(40)))).toEqual(view(agent.parse(text)));
    stream.reset();
    expect(view(stream.extend(text.subarray(0, 5), { partial: true }))).toEqual(view(agent.parse(text.subarray(0, 5), { partial: true })));
  });
});

describe("lossyUtf8: stray bytes read as U+FFFD", () => {
  const content = buildPegParser((p) => p.tag("content", p.until("<x>")).then("<x>").then(p.tag("arg", p.json())).then(p.end()));

  it("an invalid byte in the text before a marker no longer fails the parse", () => {
    const bytes = Uint8Array.from([...enc.encode("ab"), 0xff, 0x80, ...enc.encode('c<x>{"k": "v'), 0xc3, 0x28, ...enc.encode('w"}')]);
    expect(content.parse(bytes).type).toBe("fail");
    const r = content.parse(bytes, { lossyUtf8: true });
    expect(r.type).toBe("success");
    const [c, a] = r.ast.roots;
    expect(r.ast.text(c!)).toBe("ab\ufffd\ufffdc");
    expect(r.ast.text(a!)).toBe('{"k": "v\ufffd(w"}');
  });

  it("a sequence cut by the end of a partial input is still incomplete; one the bytes present rule out is not", () => {
    const cut = Uint8Array.from([...enc.encode("ab"), 0xe2, 0x82]);
    expect(content.parse(cut, { partial: true, lossyUtf8: true }).ast.text(0)).toBe("ab");
    const ruled = Uint8Array.from([...enc.encode("ab"), 0xe2, 0x41]);
    const r = content.parse(ruled, { partial: true, lossyUtf8: true });
    expect(r.type).toBe("need_more_input");
    expect(r.ast.end(r.ast.roots[0]!)).toBe(4);
  });

  it("any, character classes and delimiter prefixes", () => {
    const any = buildPegParser((p) => p.sequence([p.any(), p.literal("a")]));
    expect(any.parse(Uint8Array.from([0xff, 0x61])).type).toBe("fail");
    expect(any.parse(Uint8Array.from([0xff, 0x61]), { lossyUtf8: true }).type).toBe("success");
    const cls = buildPegParser((p) => p.sequence([p.chars("[^x]", 0, -1), p.end()]));
    expect(cls.parse(Uint8Array.from([0x61, 0xfe, 0x62]), { lossyUtf8: true }).type).toBe("success");
    // "<x" then a stray byte can never become the delimiter: the until goes on
    const r = content.parse(Uint8Array.from([...enc.encode("a<x"), 0xff, ...enc.encode("b<x>1")]), { lossyUtf8: true });
    expect(r.type).toBe("success");
    expect(r.ast.text(r.ast.roots[0]!)).toBe("a<x\ufffdb");
  });

  it("stream parses equal fresh parses on random grammars and byte inputs", () => {
    const input = fc.oneof(
      fc.uint8Array({ maxLength: 24 }),
      fc.array(fc.oneof(fc.constantFrom("a", "<", "</x>", "é", '"', "\\"), fc.constantFrom("\xff", "\x80", "\xe2\x82", "\xf0\x9f")), { maxLength: 20 }).map((xs) =>
        Uint8Array.from(xs.flatMap((x) => (x.length <= 2 && [...x].every((c) => c.charCodeAt(0) >= 0x80) ? [...x].map((c) => c.charCodeAt(0)) : [...enc.encode(x)]))),
      ),
    );
    fc.assert(
      fc.property(pegExpr, input, chunking, fc.boolean(), (expr, bytes, chunks, partial) => {
        checkChunked(buildFromExpr(expr), bytes, chunks, { partial, lossyUtf8: true });
      }),
      { numRuns: 300 },
    );
  });

  it("switching lossyUtf8 makes the stream parser start over", () => {
    const stream = content.streamParser();
    const bytes = Uint8Array.from([...enc.encode("a"), 0xff, ...enc.encode("<x>1")]);
    expect(stream.parse(bytes, { lossyUtf8: true }).type).toBe("success");
    expect(stream.parse(bytes).type).toBe("fail");
  });
});
