// Smoke test of the C++ reference harness itself: each command answers once with something that
// only the real reference code could have produced, and bad requests do not kill the process.
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { getHarness, HarnessCommandError, HarnessProcessError, type Harness } from "../support/harness.js";

let h: Harness;

beforeAll(async () => {
  h = await getHarness();
});

afterAll(async () => {
  await h?.close();
});

describe("reference harness: PEG", () => {
  const ab = ["seq", ["lit", "a"], ["lit", "b"]];

  it("builds an arena whose JSON lists the builder's nodes", async () => {
    const { arena, arena_text } = await h.call("peg.build", { expr: ab });
    expect(arena.parsers.map((p: { type: string }) => p.type)).toEqual(["literal", "literal", "sequence"]);
    expect(arena.root).toBe(2);
    expect(JSON.parse(arena_text)).toEqual(arena);
  });

  it("round-trips an arena through from_json/to_json", async () => {
    const { arena } = await h.call("peg.build", { expr: ["rule", "greeting", ["choice", "hi", "hello"]] });
    const loaded = await h.call("peg.load", { arena });
    expect(loaded.arena).toEqual(arena);
  });

  it("parses 'ab' completely and 'a' as need_more_input when partial", async () => {
    const full = await h.call("peg.parse", { expr: ab, input: "ab" });
    expect(full).toMatchObject({ type: "success", start: 0, end: 2 });
    const partial = await h.call("peg.parse", { expr: ab, input: "a", partial: true });
    expect(partial.type).toBe("need_more_input");
    const complete = await h.call("peg.parse", { expr: ab, input: "a" });
    expect(complete.type).toBe("fail");
    const traced = await h.call("peg.parse", { expr: ab, input: "ab", debug: true });
    expect(traced.debug_log).toContain("SEQ -> SUCCESS at 0->2");
  });

  it("returns the tagged AST with byte offsets", async () => {
    const expr = ["seq", ["tag", "greet", ["lit", "héllo"]], ["space"], ["tag", "who", ["rest"]]];
    const r = await h.call("peg.parse", { expr, input: "héllo world" });
    expect(r.type).toBe("success");
    const tags = r.ast.map((n: { tag: string; start: number; end: number; text: string }) => [n.tag, n.start, n.end, n.text]);
    expect(tags).toEqual([
      ["greet", 0, 6, "héllo"],
      ["who", 7, 12, "world"],
    ]);
    expect(r.nodes).toEqual([0, 1]);
  });

  it("accepts input_b64: a character cut in half is need_more_input, not an error", async () => {
    // "é" cut after its first byte: `any` wants the rest of the character
    const bytes = Buffer.from([0x61, 0xc3]);
    const r = await h.call("peg.parse", {
      expr: ["tag", "t", ["plus", ["any"]]],
      input_b64: bytes.toString("base64"),
      partial: true,
    });
    expect(r).toMatchObject({ type: "need_more_input", end: 1 });
    expect(r.ast).toEqual([{ id: 0, rule: "", tag: "t", start: 0, end: 1, is_partial: true, children: [], text: "a" }]);
  });

  it("extracts tags with the tagged parser", async () => {
    const expr = ["seq", ["tag", "key", ["until", ":"]], ":", ["tag", "value", ["rest"]]];
    const r = await h.call("peg.parse_tagged", { expr, input: "name:llamapeg" });
    expect(r).toMatchObject({ type: "success", end: 13, tags: { key: "name", value: "llamapeg" } });
  });

  it("exports GBNF, lazy and not", async () => {
    const expr = ["seq", ["lit", "x"], ["trigger_rule", "call", ["seq", "<call>", ["json"]]]];
    const { gbnf } = await h.call("peg.gbnf", { expr });
    expect(gbnf).toMatch(/^root ::= "x" call$/m);
    const lazy = await h.call("peg.gbnf", { expr, lazy: true });
    expect(lazy.gbnf).toMatch(/^root ::= call$/m);
    expect(lazy.gbnf).toMatch(/^json-value ::= /m);
  });

  it("dumps a parser tree", async () => {
    const { dump } = await h.call("peg.dump", { expr: ["opt", ["lit", "a"]] });
    expect(dump).toContain("a");
  });
});

describe("reference harness: JSON schema", () => {
  it("converts {type: integer} to a grammar with a root rule", async () => {
    const { gbnf } = await h.call("json_schema.to_grammar", { schema: { type: "integer" } });
    expect(gbnf).toMatch(/^root ::= /m);
    expect(gbnf).toMatch(/integral-part/);
  });

  it("reports an unsupported schema as ok:false with the reference's message", async () => {
    const answer = await h.request("json_schema.to_grammar", { schema: { $ref: "#/definitions/missing" } });
    expect(answer.ok).toBe(false);
    expect(answer.error).toMatch(/missing/);
  });

  it("runs build_grammar callbacks in order", async () => {
    const r = await h.call("grammar.build", {
      ops: [
        ["add_rule", "greeting", '"hi"'],
        ["add_schema", "root", { type: "boolean" }],
      ],
    });
    expect(r.returns[0]).toBe("greeting");
    expect(r.gbnf).toMatch(/^greeting ::= "hi"$/m);
    expect(r.gbnf).toMatch(/^root ::= /m);
  });

  it("loads GBNF with llama.cpp's grammar parser and matches strings with it", async () => {
    const r = await h.call("grammar.check", { gbnf: 'root ::= "a" [b-c]+', inputs: ["abc", "a", "ax"] });
    expect(r.valid).toBe(true);
    expect(r.results).toEqual([
      { accepted: true, complete: true, consumed: 3 },
      { accepted: true, complete: false, consumed: 1 },
      { accepted: false, complete: false, consumed: 1 },
    ]);
    const bad = await h.call("grammar.check", { gbnf: "root ::= (" });
    expect(bad.valid).toBe(false);
    expect(bad.error).toMatch(/pars/);
    // the reference's own JSON-schema grammar loads and accepts a matching value
    const { gbnf } = await h.call("json_schema.to_grammar", { schema: { type: "integer" } });
    const ok = await h.call("grammar.check", { gbnf, inputs: ["-42", "4.5"] });
    expect(ok.results.map((x: { complete: boolean }) => x.complete)).toEqual([true, false]);
  });

  it("probes whether a schema resolves to a string", async () => {
    const yes = await h.call("json_schema.info", { schema: { anyOf: [{ type: "integer" }, { type: "string" }] } });
    const no = await h.call("json_schema.info", { schema: { type: "integer" } });
    expect([yes.resolves_to_string, no.resolves_to_string]).toEqual([true, false]);
  });
});

const templatesDir = join(import.meta.dirname, "..", "..", "vendor", "llama.cpp", "models", "templates");
const template = (name: string) => readFileSync(join(templatesDir, `${name}.jinja`), "utf8");

const weatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};
const askWeather = { messages: [{ role: "user", content: "Weather in Paris?" }], tools: [weatherTool] };

describe("reference harness: chat", () => {
  const qwen = template("Qwen-Qwen2.5-7B-Instruct");

  it("applies a template: prompt, lazy grammar with triggers, parser arena", async () => {
    const r = await h.call("chat.templates_apply", { template: qwen, request: askWeather });
    expect(r.prompt).toContain("get_weather");
    expect(r.prompt.endsWith("<|im_start|>assistant\n")).toBe(true);
    expect(r.grammar_lazy).toBe(true);
    expect(r.grammar_triggers.length).toBeGreaterThan(0);
    expect(r.grammar).toMatch(/^root ::= /m);
    expect(Array.isArray(r.parser.parsers)).toBe(true);
    expect(JSON.parse(r.parser_text)).toEqual(r.parser);
    expect(typeof r.format).toBe("string");
  });

  it("prints the fixed 'now' where a template shows today's date", async () => {
    const llama = template("meta-llama-Llama-3.1-8B-Instruct");
    const r = await h.call("chat.templates_apply", {
      template: llama,
      request: { ...askWeather, now: "2026-01-31T12:00:00Z" },
    });
    expect(r.prompt).toContain("Today Date: 31 Jan 2026");
  });

  it("parses a model's tool call into an OpenAI message", async () => {
    const text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    const r = await h.call("chat.parse", { template: qwen, request: askWeather, text });
    expect(r.message.tool_calls).toHaveLength(1);
    expect(r.message.tool_calls[0].function.name).toBe("get_weather");
    expect(JSON.parse(r.message.tool_calls[0].function.arguments)).toEqual({ city: "Paris" });
    // the fields templates_apply returned are enough to parse again, here a stream cut mid-arguments
    const params = await h.call("chat.templates_apply", { template: qwen, request: askWeather });
    const partial = await h.call("chat.parse", { params, text: text.slice(0, 60), partial: true });
    expect(partial.msg.tool_calls).toHaveLength(1);
    expect(partial.msg.tool_calls[0].name).toBe("get_weather");
    expect(r.msg.tool_calls[0].arguments.startsWith(partial.msg.tool_calls[0].arguments)).toBe(true);
    expect(partial.msg.tool_calls[0].arguments.length).toBeLessThan(r.msg.tool_calls[0].arguments.length);
  });

  it("replays the server's streaming loop over chunks", async () => {
    const text = 'Sure.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    const chunks = text.match(/.{1,7}/gs) ?? [];
    const r = await h.call("chat.stream", { template: qwen, request: askWeather, chunks, filter_tool_calls: true, timing: true });
    expect(r.error).toBeUndefined();
    expect(r.step_cpu_ns).toHaveLength(chunks.length + 1);
    expect(r.steps).toHaveLength(chunks.length);
    expect(r.final.message.tool_calls).toEqual([{ name: "get_weather", arguments: '{"city": "Paris"}', id: "call_0" }]);
    // concatenating every delta gives the final message; the header comes first, once
    type Diff = { content_delta: string; tool_call_index: number | null; tool_call_delta: { name: string; arguments: string; id: string } };
    const all: Diff[] = [...r.steps.flatMap((s: { diffs: Diff[] }) => s.diffs), ...r.final.diffs];
    expect(all.map((d) => d.content_delta).join("")).toBe(r.final.message.content);
    const calls = all.filter((d) => d.tool_call_index === 0);
    expect(calls.map((d) => d.tool_call_delta.arguments).join("")).toBe('{"city": "Paris"}');
    expect(calls.filter((d) => d.tool_call_delta.name !== "").map((d) => d.tool_call_delta.name)).toEqual(["get_weather"]);
    expect(calls[0].tool_call_delta.name).toBe("get_weather");
  });

  it("computes streaming diffs", async () => {
    const diffs = await h.call("chat.diff", {
      prev: { role: "assistant", content: "Hel" },
      next: { role: "assistant", content: "Hello", tool_calls: [{ name: "f", arguments: "{", id: "" }] },
    });
    expect(diffs).toEqual([
      { reasoning_content_delta: "", content_delta: "lo", tool_call_index: null, tool_call_delta: { name: "", arguments: "", id: "" } },
      { reasoning_content_delta: "", content_delta: "", tool_call_index: 0, tool_call_delta: { name: "f", arguments: "{", id: "" } },
    ]);
    const shrink = await h.request("chat.diff", {
      prev: { tool_calls: [{ name: "f", arguments: "{}" }] },
      next: { content: "x" },
    });
    expect(shrink.ok).toBe(false);
  });

  it("builds chat grammars with the chat builder and parses them into messages", async () => {
    const expr = ["seq", ["reasoning_block", ["seq", "<think>", ["reasoning", ["until", "</think>"]], "</think>"]], ["content", ["rest"]]];
    const { arena } = await h.call("chat.peg_build", { expr });
    expect(arena.parsers.some((p: { tag?: string }) => p.tag === "reasoning")).toBe(true);
    const r = await h.call("chat.parse", { arena, text: "<think>hmm</think>Hi" });
    expect(r.msg).toMatchObject({ reasoning_content: "hmm", content: "Hi" });
  });

  it("analyses a template", async () => {
    const a = await h.call("chat.analyze", { template: qwen });
    expect(a.tools.format.mode).not.toBe("NONE");
    expect(a.caps.supports_tools).toBe(true);
  });

  it("exposes the analysis string helpers", async () => {
    const split = await h.call("chat.analyze_diff_split", { left: "<a>x</a>", right: "<a>yy</a>" });
    expect(split).toEqual({ prefix: "<a>", suffix: "</a>", left: "x", right: "yy" });
    const segments = await h.call("chat.analyze_segmentize", { text: "<t>hi</t>\n", prune: true });
    expect(segments.map((s: { type: string; value: string }) => `${s.type}:${s.value}`)).toEqual(["MARKER:<t>", "TEXT:hi", "MARKER:</t>"]);
    const before = await h.call("chat.analyze_until_common_prefix", { full: "say FUNC x", left: "FUNC a", right: "FUNC b" });
    expect(before.result).toBe("say ");
    const after = await h.call("chat.analyze_after_common_suffix", { full: "a END tail", left: "x END", right: "y END" });
    expect(after.result).toBe(" tail");
  });

  it("renders with llama.cpp's Jinja engine, clock fixed", async () => {
    const r = await h.call("jinja.render", {
      template: "{{ greeting }} {{ n + 1 }} {{ strftime_now('%Y-%m-%d') }}",
      context: { greeting: "hi", n: 41 },
      now: "2026-01-31T12:00:00Z",
    });
    expect(r.output).toBe("hi 42 2026-01-31");
    const rendered = await h.call("chat.render", {
      template: qwen,
      messages: [{ role: "user", content: "hey" }],
      add_generation_prompt: true,
    });
    expect(rendered.prompt).toContain("<|im_start|>user\nhey<|im_end|>");
  });
});

describe("reference harness: protocol", () => {
  it("answers malformed requests with ok:false and keeps answering", async () => {
    const notJson = await h.requestRaw("{this is not json");
    expect(notJson.ok).toBe(false);
    const unknown = await h.request("no.such.command");
    expect(unknown).toMatchObject({ ok: false, error: "unknown command 'no.such.command'" });
    const badExpr = await h.request("peg.build", { expr: ["seq", ["nonsense"]] });
    expect(badExpr.ok).toBe(false);
    expect(badExpr.error).toMatch(/nonsense/);
    await expect(h.call("peg.parse", { expr: ["lit", "a"] })).rejects.toBeInstanceOf(HarnessCommandError);
    expect(await h.call("ping")).toEqual({ pong: true });
  });

  it("survives a crash and a hang of the reference: the call fails, the next one runs on a new process", async () => {
    await expect(h.call("harness.abort")).rejects.toBeInstanceOf(HarnessProcessError);
    expect(await h.call("ping")).toEqual({ pong: true });
    await expect(h.call("harness.sleep", { ms: 5000 }, { timeoutMs: 200 })).rejects.toThrow(/timed out after 200 ms/);
    expect(await h.call("ping")).toEqual({ pong: true });
  });

  it("pipelines concurrent requests and matches answers by id", async () => {
    const inputs = ["a", "ab", "abab", "b", ""];
    const results = await Promise.all(
      inputs.map((input) => h.call("peg.parse", { expr: ["star", ["lit", "ab"]], input })),
    );
    expect(results.map((r) => r.end)).toEqual([0, 2, 4, 0, 0]);
  });
});
