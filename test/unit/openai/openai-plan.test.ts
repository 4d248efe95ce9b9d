// Plans and replay with no model: the Qwen 2.5 template the test model carries, synthetic pieces.
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { buildCompletionPlan } from "../../../lib/openai/plan.js";
import { normalizeChatRequest } from "../../../lib/openai/request.js";
import { RECORD_VERSION, replayCompletion, type CompletionRecord } from "../../../lib/openai/record.js";
import type { ChatCompletionRequest } from "../../../lib/openai/types.js";

const template = readFileSync(join(import.meta.dirname, "..", "..", "..", "vendor", "llama.cpp", "models", "templates", "Qwen-Qwen2.5-7B-Instruct.jinja"), "utf8");
const specials = { bos: "", eos: "<|im_end|>" };
const tools = [
  { type: "function" as const, function: { name: "pick", parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } } },
  { type: "function" as const, function: { name: "say", parameters: { type: "object", properties: { w: { type: "string" } } } } },
];
const schema = { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] };

function plan(req: Omit<ChatCompletionRequest, "messages">) {
  return buildCompletionPlan(template, normalizeChatRequest({ messages: [{ role: "user", content: "hi" }], ...req }), specials);
}

/** Replays `pieces` through the plan as a record (token ids are arbitrary: the parser never reads them). */
function replay(p: ReturnType<typeof plan>, pieces: string[], stops: string[] = []) {
  const record: CompletionRecord = {
    version: RECORD_VERSION,
    meta: { id: "chatcmpl-test", created: 1, model: "m" },
    plan: JSON.parse(JSON.stringify(p.record())) as CompletionRecord["plan"],
    stops,
    warnings: p.warnings,
    includeUsage: false,
    tokens: pieces.map((_, i) => i),
    pieces: pieces.map((s) => Buffer.from(s).toString("base64")),
    toolCallIds: { 0: "call_fixed0", 1: "call_fixed1" },
    summary: { stopReason: "eog", promptTokens: 10, reusedTokens: 0, generatedTokens: pieces.length, promptMs: 1, generateMs: 1, sampleMs: 1 },
  };
  return replayCompletion(JSON.stringify(record));
}

describe("completion plans", () => {
  it("named tool_choice: calls only, that tool alone, the generation prompt prefilled", () => {
    const p = plan({ tools, tool_choice: { type: "function", function: { name: "say" } } });
    expect(p.grammar!.lazy).toBe(false);
    // the grammar starts with the generation prompt, which the sampler consumes first; then only calls
    expect(p.grammar!.prefill).toBe("<|im_start|>assistant\n");
    expect(p.grammar!.gbnf).toMatch(/^root ::= "<\|im_start\|>assistant\\n" tool-calls$/m);
    expect(p.grammar!.gbnf).toContain('"say"');
    expect(p.grammar!.gbnf).not.toContain('"pick"');
  });

  it("json_whitespace reaches the plan: canonical separators by default, llama.cpp's space rule when flexible", () => {
    const named = { tools, tool_choice: { type: "function" as const, function: { name: "pick" } } };
    expect(plan(named).grammar!.gbnf).toMatch(/", " /);
    expect(plan({ ...named, json_whitespace: "canonical" }).grammar!.gbnf).not.toMatch(/"," space/);
    expect(plan({ ...named, json_whitespace: "flexible" }).grammar!.gbnf).toMatch(/"," space/);
    expect(() => plan({ ...named, json_whitespace: "tabs" as never })).toThrow(/json_whitespace/);
  });

  it("json_property_order reaches the plan: declared order by default, any order on request, declared in reference_mode", () => {
    const move = [{ type: "function" as const, function: { name: "move", parameters: { type: "object", properties: { x: { type: "integer" }, y: { type: "integer" } }, required: ["x", "y"] } } }];
    const named = { tools: move, tool_choice: { type: "function" as const, function: { name: "move" } } };
    // any order: one rule per set of properties written (emit.ts anyOrderObject), none in declared order
    const stateRule = /^\S+-o\d+w? ::= /m;
    expect(plan(named).grammar!.gbnf).not.toMatch(stateRule);
    expect(plan({ ...named, json_property_order: "any" }).grammar!.gbnf).toMatch(stateRule);
    expect(plan({ ...named, json_property_order: "any", reference_mode: true }).grammar!.gbnf).not.toMatch(stateRule);
    expect(() => plan({ ...named, json_property_order: "sorted" as never })).toThrow(/json_property_order/);
  });

  it("auto: the reference's lazy grammar and trigger; a plain answer parses as content without errors", () => {
    const p = plan({ tools });
    expect(p.grammar!.lazy).toBe(true);
    expect(p.grammar!.triggers).toEqual([{ type: "word", value: "<tool_call>\n" }]);
    const r = replay(p, ["Hello", " there"]);
    expect(r.completion.choices[0].message).toEqual({ role: "assistant", content: "Hello there", refusal: null });
    expect(r.completion.llamapeg.parse_errors).toEqual([]);
  });

  it("tools + response schema: one grammar for either; both kinds of output parse", () => {
    const p = plan({ tools, response_format: { type: "json_schema", json_schema: { name: "a", schema } } });
    // one choice in one tree: the schema's answer, or the calls alone
    const root = p.grammar!.gbnf.split("\n").find((l) => l.startsWith("root ::= "))!;
    expect(root).toMatch(/response-format .*\| "<\|im_start\|>assistant\\n" tool-calls$/);
    expect(p.chat.grammar).toBe(p.grammar);
    const json = replay(p, ['{"ans', 'wer": "x"}']);
    expect(json.completion.choices[0].message.content).toBe('{"answer": "x"}');
    expect(json.completion.choices[0].finish_reason).toBe("stop");
    const call = replay(p, ["<tool_call>", '\n{"name": "pick", "arguments": {"n": 4}}\n', "</tool_call>"]);
    expect(call.completion.choices[0].message.tool_calls).toEqual([{ id: "call_fixed0", type: "function", function: { name: "pick", arguments: '{"n": 4}' } }]);
    expect(call.completion.choices[0].finish_reason).toBe("tool_calls");
  });

  it("an output that stops matching keeps streaming as content with a typed parse_error event", () => {
    const p = plan({ tools, tool_choice: "required", calls_only: true });
    const r = replay(p, ["<tool_call>", '\n{"name": "pick", "arguments": {"n": 4}}\n', "</tool_call>", " and then some ", "free text"]);
    const events = r.chunks.filter((c) => c.llamapeg !== undefined && "event" in c.llamapeg);
    expect(events).toHaveLength(1);
    const m = r.completion.choices[0].message;
    expect(m.tool_calls![0]!.function.name).toBe("pick");
    expect(m.content).toContain("free text");
    expect(r.completion.llamapeg.parse_errors[0]).toMatchObject({ code: "ERR_CHAT_PARSE", position: expect.any(Number) });
  });

  it("a tool with an invalid schema degrades alone, with a warning in the first chunk and the result", () => {
    const p = plan({ tools: [...tools, { type: "function", function: { name: "bad", parameters: { type: "object", properties: { x: { $ref: "#/nope" } } } } }], tool_choice: "required", calls_only: true });
    expect(p.warnings).toHaveLength(1);
    expect(p.warnings[0]).toMatch(/bad.*any JSON object/);
    const r = replay(p, ["<tool_call>", '\n{"name": "bad", "arguments": {"anything": [1]}}\n', "</tool_call>"]);
    expect(r.chunks[0]!.llamapeg).toEqual({ warnings: p.warnings });
    expect(r.completion.llamapeg.warnings).toEqual(p.warnings);
    expect(r.completion.choices[0].message.tool_calls![0]!.function.arguments).toBe('{"anything": [1]}');
  });

  it("stop strings are cut from the content and end the output", () => {
    const r = replay(plan({}), ["Hello ", "wor", "ld END", " more"], ["END"]);
    expect(r.completion.choices[0].message.content).toBe("Hello world ");
    expect(r.completion.choices[0].finish_reason).toBe("stop");
  });

  it("a cached plan gives the same grammar and a fresh prompt", () => {
    const a = plan({ tools });
    const b = buildCompletionPlan(template, normalizeChatRequest({ messages: [{ role: "user", content: "other" }], tools }), specials);
    expect(b.grammar).toEqual(a.grammar);
    expect(b.chat.parser).toBe(a.chat.parser);
    expect(b.prompt).not.toBe(a.prompt);
    expect(b.prompt).toContain("other");
  });
});
