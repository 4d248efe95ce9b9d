import { describe, expect, it } from "vitest";

import { LlamapegError } from "../../../lib/errors.js";
import { type PegBuilder, type PegParser, buildPegParser } from "../../../lib/peg/index.js";

const bytes = (...b: number[]): Uint8Array => new Uint8Array(b);
const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const cat = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
};

function run(fn: (p: PegBuilder) => PegParser, input: string | Uint8Array, partial = false): { type: string; end: number } {
  const r = buildPegParser(fn).parse(input, { partial });
  return { type: r.type, end: r.end };
}

describe("PEG parse: leaves", () => {
  it("epsilon, start, end", () => {
    expect(run((p) => p.eps(), "abc")).toEqual({ type: "success", end: 0 });
    expect(run((p) => p.start().then("a"), "a")).toEqual({ type: "success", end: 1 });
    expect(run((p) => p.literal("a").then(p.end()), "a")).toEqual({ type: "success", end: 1 });
    expect(run((p) => p.literal("a").then(p.end()), "ab").type).toBe("fail");
    expect(run((p) => p.literal("a").then(p.start()), "a").type).toBe("fail");
  });

  it("literal: complete, cut (partial), mismatch", () => {
    expect(run((p) => p.literal("hello"), "hello")).toEqual({ type: "success", end: 5 });
    expect(run((p) => p.literal("hello"), "hel", true)).toEqual({ type: "need_more_input", end: 3 });
    expect(run((p) => p.literal("hello"), "hel")).toEqual({ type: "fail", end: 0 });
    expect(run((p) => p.literal("hello"), "help", true)).toEqual({ type: "fail", end: 0 });
  });

  it("any: one whole UTF-8 character; a cut one needs more input, a broken one fails", () => {
    expect(run((p) => p.any(), "é")).toEqual({ type: "success", end: 2 });
    expect(run((p) => p.any(), "🚀")).toEqual({ type: "success", end: 4 });
    expect(run((p) => p.any(), bytes(0xf0, 0x9f), true)).toEqual({ type: "need_more_input", end: 0 });
    expect(run((p) => p.any(), bytes(0xf0, 0x9f)).type).toBe("fail");
    expect(run((p) => p.any(), bytes(0x80), true).type).toBe("fail");
    expect(run((p) => p.oneOrMore(p.any()).then(p.end()), bytes(0x48, 0x80, 0x57)).type).toBe("fail");
  });

  it("space: C isspace, possibly empty", () => {
    expect(run((p) => p.space(), " \t\n\r\v\fx")).toEqual({ type: "success", end: 6 });
    expect(run((p) => p.space(), "x")).toEqual({ type: "success", end: 0 });
  });

  it("chars: ranges, negation, escapes, counts, unicode ranges", () => {
    expect(run((p) => p.chars("[a-z]"), "abc1")).toEqual({ type: "success", end: 3 });
    expect(run((p) => p.chars("a-z"), "A").type).toBe("fail");
    expect(run((p) => p.chars("[a\\-z]"), "-")).toEqual({ type: "success", end: 1 });
    expect(run((p) => p.chars("[a\\-z]"), "b").type).toBe("fail");
    expect(run((p) => p.chars("a-z-"), "-")).toEqual({ type: "success", end: 1 });
    expect(run((p) => p.chars("[\\n\\t\\\\]"), "\\\n\t")).toEqual({ type: "success", end: 3 });
    expect(run((p) => p.chars("[^0-9]"), "ab1")).toEqual({ type: "success", end: 2 });
    expect(run((p) => p.chars("[0-9]", 2, 3), "12345")).toEqual({ type: "success", end: 3 });
    expect(run((p) => p.chars("[0-9]", 2, 3), "1x").type).toBe("fail");
    expect(run((p) => p.chars("[0-9]", 2, 3), "1", true)).toEqual({ type: "need_more_input", end: 1 });
    expect(run((p) => p.chars("[\\u4E00-\\u9FFF]").then(p.end()), "你好")).toEqual({ type: "success", end: 6 });
    expect(run((p) => p.chars("[\\U0001F600-\\U0001F64F]").then(p.end()), "😀")).toEqual({ type: "success", end: 4 });
    expect(run((p) => p.chars("[\\U0001F600-\\U0001F64F]").then(p.end()), "🚀").type).toBe("fail");
    expect(run((p) => p.chars("[\\u4E00-\\u9FFF]"), bytes(0xe4, 0xb8), true)).toEqual({ type: "need_more_input", end: 0 });
  });

  it("string content: escapes, delimiter not consumed, cut escapes held back", () => {
    expect(run((p) => p.stringContent('"'), 'ab\\"c\\u0041"x')).toEqual({ type: "success", end: 11 });
    expect(run((p) => p.stringContent("'"), "it\\'s'")).toEqual({ type: "success", end: 5 });
    expect(run((p) => p.stringContent('"'), "abc\\", true)).toEqual({ type: "need_more_input", end: 3 });
    expect(run((p) => p.stringContent('"'), "abc\\u00", true)).toEqual({ type: "need_more_input", end: 3 });
    expect(run((p) => p.stringContent('"'), "abc\\q").type).toBe("fail");
    expect(run((p) => p.stringContent('"'), "abc", true)).toEqual({ type: "need_more_input", end: 3 });
    expect(run((p) => p.stringContent('"'), "abc")).toEqual({ type: "fail", end: 3 });
    expect(run((p) => p.stringContent('"'), cat(enc("Caf"), bytes(0xc3)), true)).toEqual({ type: "need_more_input", end: 3 });
    expect(run((p) => p.stringContent('"'), cat(enc("Hi"), bytes(0xff, 0xfe))).type).toBe("fail");
  });

  it("until: stops before a delimiter, or before a delimiter prefix at the end", () => {
    expect(run((p) => p.until("</tag>"), "hello</tag>")).toEqual({ type: "success", end: 5 });
    expect(run((p) => p.until("</tag>"), "hello</ta")).toEqual({ type: "success", end: 5 });
    expect(run((p) => p.until("</tag>"), "hello", true)).toEqual({ type: "need_more_input", end: 5 });
    expect(run((p) => p.until("</tag>"), "hello")).toEqual({ type: "success", end: 5 });
    expect(run((p) => p.untilOneOf(["ab", "cd"]), "xxcdab")).toEqual({ type: "success", end: 2 });
    expect(run((p) => p.until("<｜DSML｜"), "你好<｜DSML｜")).toEqual({ type: "success", end: 6 });
    expect(run((p) => p.until("</tag>"), cat(enc("hi"), bytes(0xe4, 0xb8)), true)).toEqual({ type: "need_more_input", end: 2 });
    expect(run((p) => p.until("</tag>"), cat(enc("hi"), bytes(0x80))).type).toBe("fail");
    expect(run((p) => p.rest(), "anything")).toEqual({ type: "success", end: 8 });
  });
});

describe("PEG parse: combinators", () => {
  it("sequence reports where the failing child stopped", () => {
    expect(run((p) => p.literal("<think>").then("</think>"), "<thi", true).type).toBe("need_more_input");
    expect(run((p) => p.literal("<think>").then("</think>"), "<think>x", true)).toEqual({ type: "fail", end: 7 });
    expect(run((p) => p.literal("begin").then("end"), "begin", true)).toEqual({ type: "need_more_input", end: 5 });
  });

  it("choice is ordered; a partial alternative wins", () => {
    expect(run((p) => p.literal("option1").or("option2"), "opt", true).type).toBe("need_more_input");
    expect(run((p) => p.literal("alpha").or("beta"), "beta")).toEqual({ type: "success", end: 4 });
    expect(run((p) => p.literal("a").or("ab"), "ab")).toEqual({ type: "success", end: 1 });
    expect(run((p) => p.literal("good").or("better"), "best")).toEqual({ type: "fail", end: 0 });
  });

  it("repetition: bounds, empty-match stop, end of input", () => {
    expect(run((p) => p.zeroOrMore(p.literal("ab")), "ababa")).toEqual({ type: "success", end: 4 });
    expect(run((p) => p.zeroOrMore(p.literal("ab")), "ababa", true)).toEqual({ type: "need_more_input", end: 5 });
    expect(run((p) => p.oneOrMore(p.literal("ab")), "x").type).toBe("fail");
    expect(run((p) => p.oneOrMore(p.literal("ab")), "", true)).toEqual({ type: "need_more_input", end: 0 });
    expect(run((p) => p.repeat(p.literal("a"), 2), "aaa")).toEqual({ type: "success", end: 2 });
    expect(run((p) => p.repeat(p.literal("a"), 2, 4), "a")).toEqual({ type: "fail", end: 1 });
    expect(run((p) => p.zeroOrMore(p.eps()), "abc")).toEqual({ type: "success", end: 0 });
    expect(run((p) => p.literal("hello").then(p.optional(p.literal(" world"))), "hello ", true).type).toBe("need_more_input");
    expect(run((p) => p.literal("hello").then(p.optional(p.literal(" world"))), "hello")).toEqual({ type: "success", end: 5 });
  });

  it("lookahead consumes nothing; negation propagates need_more_input", () => {
    expect(run((p) => p.peek(p.literal("ab")).then("a"), "ab")).toEqual({ type: "success", end: 1 });
    expect(run((p) => p.negate(p.literal("ab")).then(p.any()), "ac")).toEqual({ type: "success", end: 1 });
    expect(run((p) => p.negate(p.literal("ab")).then(p.any()), "ab").type).toBe("fail");
    expect(run((p) => p.negate(p.literal("ab")).then(p.any()), "a", true).type).toBe("need_more_input");
  });

  it("spaced inserts optional whitespace", () => {
    expect(run((p) => p.literal("a").spaced("b"), "a \n b")).toEqual({ type: "success", end: 5 });
    expect(run((p) => p.literal("a").spaced("b"), "ab")).toEqual({ type: "success", end: 2 });
  });
});

describe("PEG parse: rules, tags, AST", () => {
  const list = (p: PegBuilder): PegParser => {
    p.rule("number", p.chars("0-9"));
    p.rule("list", p.literal("[").then(p.ref("value")).then("]"));
    return p.rule("value", p.ref("number").or(p.ref("list")));
  };

  it("recursive rules", () => {
    expect(run(list, "[[[3]]]")).toEqual({ type: "success", end: 7 });
    expect(run(list, "[[", true).type).toBe("need_more_input");
    expect(run(list, "[a]").type).toBe("fail");
  });

  it("rule and tag nodes carry offsets, text and partial flags", () => {
    const arena = buildPegParser((p) => p.tag("open", p.literal("<a>")).then(p.tag("body", p.until("</a>"))).then(p.tag("close", p.literal("</a>"))));
    const r = arena.parse("<a>héllo</", { partial: true });
    expect(r.type).toBe("need_more_input");
    const nodes = r.ast.roots.map((id) => r.ast.node(id));
    expect(nodes.map((n) => [n.tag, n.start, n.end, n.text, n.isPartial])).toEqual([
      ["open", 0, 3, "<a>", false],
      ["body", 3, 9, "héllo", false],
      ["close", 9, 11, "</", true],
    ]);
  });

  it("AST text never holds half a character", () => {
    const arena = buildPegParser((p) => p.tag("t", p.literal("é!")));
    const r = arena.parse(bytes(0xc3), { partial: true });
    expect(r.type).toBe("need_more_input");
    const n = r.ast.node(r.ast.roots[0]!);
    expect([n.start, n.end, n.text]).toEqual([0, 1, "\uFFFD"]);
    expect(r.ast.invalidUtf8(n.id)).toEqual([[0, 1]]);
  });

  it("atomic drops the nodes of a partial match", () => {
    const arena = buildPegParser((p) => p.atomic(p.tag("name", p.literal("get_weather"))));
    expect(arena.parse("get_w", { partial: true }).ast.roots).toEqual([]);
    expect(arena.parse("get_weather").ast.roots.length).toBe(1);
  });

  it("findByTag / findByRule / visit / dump", () => {
    const arena = buildPegParser((p) => p.rule("call", p.tag("name", p.chars("a-z")).then("(").then(p.tag("args", p.json())).then(")")));
    const r = arena.parse('f({"x": [1, 2]})');
    expect(r.type).toBe("success");
    const root = r.ast.roots[0]!;
    expect(r.ast.node(r.ast.findByTag(root, "args")).text).toBe('{"x": [1, 2]}');
    expect(r.ast.findByRule(root, "json-object", 3)).toBeGreaterThanOrEqual(0);
    expect(r.ast.findByTag(root, "nope")).toBe(-1);
    const seen: string[] = [];
    r.ast.visit((n) => seen.push(n.tag || n.rule));
    expect(seen.slice(0, 3)).toEqual(["call", "name", "args"]);
    expect(r.ast.dump()).toContain("(tag name) ['f']");
  });

  it("a ref to a missing rule is an error", () => {
    expect(() => buildPegParser((p) => p.ref("nowhere"))).toThrow(LlamapegError);
  });

  it("positions are byte offsets and `start` parses from one", () => {
    const arena = buildPegParser((p) => p.literal("b"));
    expect(arena.parse("éb", { start: 2 })).toMatchObject({ type: "success", start: 2, end: 3 });
    expect(() => arena.parse("é", { start: 5 })).toThrow(LlamapegError);
  });

  it("debug traces every parser call", () => {
    const lines: string[] = [];
    buildPegParser((p) => p.literal("a").or("b")).parse("b", { debug: (l) => lines.push(l) });
    expect(lines.some((l) => l.includes("CHOICE"))).toBe(true);
    expect(lines.at(-1)).toContain("-> success 0..1");
  });
});

describe("PEG parse: JSON and Python helpers", () => {
  it("JSON values, complete and cut", () => {
    const arena = buildPegParser((p) => p.json());
    for (const s of ['{"name": "test", "value": 42, "flag": true}', '[1, "hello", true, null, 3.14]', '{"a": {"b": [1e5, -0.5]}}']) {
      expect(arena.parse(s)).toMatchObject({ type: "success", end: s.length });
    }
    expect(arena.parse('{"name": "test", "value": ', { partial: true }).type).toBe("need_more_input");
    expect(arena.parse('{"text": "hello\\u00', { partial: true })).toMatchObject({ type: "need_more_input", end: 15 });
    // a number is not committed while it could still grow
    const r = arena.parse("[3", { partial: true });
    expect(r.type).toBe("need_more_input");
    expect(arena.parse("{'a': 1}").type).toBe("fail");
  });

  it("Python values, and json() with a pre-registered flexible json-string rule", () => {
    const py = buildPegParser((p) => p.pythonValue());
    const s = "{'users': [{'id': 1, 'name': 'Alice'}], 'ok': True, 'none': None}";
    expect(py.parse(s)).toMatchObject({ type: "success", end: s.length });
    const flex = buildPegParser((p) => {
      p.rule("json-string", () => p.choice([p.doubleQuotedString(), p.singleQuotedString()]));
      return p.json();
    });
    const t = `{"name": 'test', 'value': "hello"}`;
    expect(flex.parse(t)).toMatchObject({ type: "success", end: t.length });
  });

  it("marker and prefix", () => {
    expect(run((p) => p.marker(), "[marker]")).toEqual({ type: "success", end: 8 });
    expect(run((p) => p.marker(), "<marker>")).toEqual({ type: "success", end: 8 });
    expect(run((p) => p.prefix("<tool_call>name", "name"), "<tool_call>")).toEqual({ type: "success", end: 11 });
  });
});

describe("PEG parse: bounded work on adversarial grammars", () => {
  /** S_k -> S_{k-1} "a" | S_{k-1} "b": without memoization, 2^k calls of S_0 at position 0. */
  const nested = (depth: number) =>
    buildPegParser((p) => {
      let prev = p.rule("s0", p.literal("x"));
      for (let k = 1; k <= depth; k++) prev = p.rule(`s${k}`, prev.then("a").or(prev.then("b")));
      return prev;
    });

  const calls = (arena: ReturnType<typeof nested>, input: string): number => {
    let n = 0;
    arena.parse(input, { debug: () => n++ });
    return n;
  };

  it("nested choices sharing a rule: parser calls grow linearly with depth (packrat memo)", () => {
    const input = "x" + "b".repeat(24);
    const c12 = calls(nested(12), input.slice(0, 13));
    const c24 = calls(nested(24), input);
    expect(nested(24).parse(input)).toMatchObject({ type: "success", end: 25 });
    // 2^24 calls without the memo; with it, each level adds a constant number of calls
    expect(c24).toBeLessThan(3 * c12);
    expect(c24).toBeLessThan(2000);
  });

  it("a long near-miss delimiter scan stays linear", () => {
    const arena = buildPegParser((p) => p.until("</tool_call>").then("</tool_call>"));
    const input = "</tool_cal".repeat(2000) + "</tool_call>";
    expect(arena.parse(input)).toMatchObject({ type: "success", end: input.length });
  });

  it("deep nesting is a clean error, not a crash", () => {
    const arena = buildPegParser((p) => p.json());
    const deep = "[".repeat(200_000);
    expect(() => arena.parse(deep, { partial: true })).toThrow(/nested too deeply/);
  });
});

describe("PEG parse: reference behaviours kept on purpose", () => {
  it("until stops before a delimiter prefix at the end of the input, complete or not", () => {
    const arena = buildPegParser((p) => p.until("<tool_call>").then(p.end()));
    expect(arena.parse("Hello <").type).toBe("fail");
    expect(arena.parse("Hello <x")).toMatchObject({ type: "success", end: 8 });
  });
});
