/**
 * The round-trip failure classes of issue 22 fixed one by one, each through the one-shot parse and
 * a ChatSession fed one byte at a time (what streams must add up to the final message, with no
 * parse_error), and each kept as llama.cpp has it in reference mode:
 * - LFM2.5: calls with no arguments (`f()`), string arguments with raw tabs and newlines, and a
 *   quote inside a single-quoted string (`'O'Brien'`): the template prints strings unescaped.
 * - MiniCPM5: object and array arguments, which its template prints with `{{ value }}`, i.e. as
 *   Python's repr under Python's Jinja (our default printing; llama.cpp's engine prints nothing).
 * - Mistral Small 3.2 with its real eos `</s>`: the analysis took `[ARGS]` for the name's suffix
 *   and the id section's end both, so no call matched (the reference has the same grammar).
 * - Kimi K3 streaming, parameter names where one is a prefix of the next (`a`, `ab`): the shorter
 *   name streamed before its closing quote, then the call changed and the final message broke.
 * - Lazy grammars whose trigger sits in the generation prompt (Functionary v3.2's `>>>`, Muse
 *   Glimmer's `<|start|>assistant`): a call at the start of the output never started the grammar.
 *   Checked as llama.cpp's lazy sampler runs: the triggers searched over the whole output so far
 *   after each piece (`lazyStart`), which also finds gpt-oss's `$`-anchored patterns.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

import { applyChatTemplate } from "../../lib/chat/apply/index.js";
import { parseChatOutput } from "../../lib/chat/parse.js";
import type { ChatPlan } from "../../lib/chat/plan.js";
import { ChatSession } from "../../lib/chat/session.js";
import { renderChatTemplate } from "../../lib/chat/apply/render.js";
// @ts-expect-error plain JS module shared with the bench script
import { lazyStart } from "../../scripts/bench/tool-roundtrip.mjs";

const TEMPLATES = path.resolve(import.meta.dirname, "../../vendor/llama.cpp/models/templates");
const source = (file: string) => fs.readFileSync(path.join(TEMPLATES, file), "utf8");
const user = [{ role: "user", content: "hi" }];
const encoder = new TextEncoder();

/** Feeds `text` in pieces of `size` bytes; returns the final message, the streamed arguments per call, and the events. */
export function streamed(plan: ChatPlan, text: string, size = 1) {
  const s = new ChatSession(plan, { generateToolCallId: (i) => `id${i}` });
  const bytes = encoder.encode(text);
  const args: string[] = [];
  const names: string[] = [];
  const events: unknown[] = [];
  const take = (f: ReturnType<ChatSession["feed"]>) => {
    events.push(...f.events);
    for (const d of f.deltas) {
      for (const t of d.tool_calls ?? []) {
        if (t.function?.name !== undefined) names[t.index] = (names[t.index] ?? "") + t.function.name;
        if (t.function?.arguments !== undefined) args[t.index] = (args[t.index] ?? "") + t.function.arguments;
      }
    }
  };
  for (let at = 0; at < bytes.length; at += size) take(s.feed(bytes.subarray(at, at + size)));
  const last = s.finish();
  take(last);
  return { message: last.message, args, names, events };
}

/** Parse and stream agree, no parse_error, and the arguments are `want` (JSON values). */
function expectCalls(plan: ChatPlan, text: string, want: { name: string; arguments: unknown }[]): void {
  const once = parseChatOutput(plan, text);
  expect(once.tool_calls.map((c) => ({ name: c.function.name, arguments: JSON.parse(c.function.arguments) as unknown }))).toEqual(want);
  for (const size of [1, 3]) {
    const s = streamed(plan, text, size);
    expect(s.events).toEqual([]);
    expect(s.message.tool_calls.map((c) => c.function.arguments)).toEqual(once.tool_calls.map((c) => c.function.arguments));
    expect(s.args.map((a) => a ?? "")).toEqual(once.tool_calls.map((c) => c.function.arguments));
    expect(s.names).toEqual(want.map((w) => w.name));
  }
}

describe("LFM2.5: what its template prints, read back", () => {
  const src = source("LFM2.5-8B-A1B.jinja");
  const tools = [
    { type: "function", function: { name: "f", parameters: { type: "object", properties: { a: { type: "string" }, n: { type: "integer" } } } } },
    { type: "function", function: { name: "g", parameters: { type: "object", properties: { on: { type: "boolean" } } } } },
  ];
  const plan = applyChatTemplate(src, { messages: user, tools, parallel_tool_calls: true });
  const ref = applyChatTemplate(src, { messages: user, tools, parallel_tool_calls: true, reference_mode: true });
  const wrap = (calls: string) => `<|tool_call_start|>[${calls}]<|tool_call_end|>`;

  it("a call whose optional arguments were all left out: `f()`", () => {
    expectCalls(plan, wrap("f(), g(on=True), f()"), [
      { name: "f", arguments: {} },
      { name: "g", arguments: { on: true } },
      { name: "f", arguments: {} },
    ]);
    expect(() => parseChatOutput(ref, wrap("f()"))).toThrow(/does not match/);
  });

  it("raw tabs and newlines in a string argument get JSON escapes", () => {
    expectCalls(plan, wrap("f(a='tab\there', n=2), f(a='line one\nline two')"), [
      { name: "f", arguments: { a: "tab\there", n: 2 } },
      { name: "f", arguments: { a: "line one\nline two" } },
    ]);
  });

  it("a quote inside a single-quoted string that the template did not escape", () => {
    expectCalls(plan, wrap("f(a='O'Brien', n=1), f(a='it's', n=2), f(a='say \"hi\"')"), [
      { name: "f", arguments: { a: "O'Brien", n: 1 } },
      { name: "f", arguments: { a: "it's", n: 2 } },
      { name: "f", arguments: { a: 'say "hi"' } },
    ]);
    // the closing quote is the one before `,` / `)`: a value cannot hold `', ` (the template is ambiguous there)
    expect(() => parseChatOutput(plan, wrap("f(a='x', y', n=1)"))).toThrow(/does not match/);
    // reference mode: the string stops at the first quote, and the rest does not parse
    expect(() => parseChatOutput(ref, wrap("f(a='O'Brien', n=1)"))).toThrow(/does not match/);
  });

  it("the grammar takes the same outputs (the plan's tree admits them whole)", () => {
    for (const out of [wrap("f(), g(on=True)"), wrap("f(a='O'Brien', n=1)"), wrap("f(a='tab\there')")]) {
      const input = encoder.encode(plan.generationPrompt + out);
      const r = plan.parser!.parse(input, { partial: false });
      expect(r.type === "success" && r.end === input.length, out).toBe(true);
    }
  });
});

describe("MiniCPM5: dict and list arguments as its template prints them", () => {
  const src = source("openbmb-MiniCPM5-1B.jinja");
  const tools = [
    {
      type: "function",
      function: {
        name: "f",
        parameters: {
          type: "object",
          properties: { opts: { type: "object", properties: { on: { type: "boolean" }, x: { type: "number" } } }, tags: { type: "array", items: { type: "string" } }, n: { type: "integer" } },
        },
      },
    },
  ];
  const args = { opts: { on: true, x: 1.256e-6 }, tags: ["O'Brien", 'say "hi"', "a\tb"], n: 3 };
  const call = { role: "assistant", content: "", tool_calls: [{ id: "c0", type: "function", function: { name: "f", arguments: JSON.stringify(args) } }] };

  it("renders them as Python's repr by default, as nothing in reference mode", () => {
    const ours = renderChatTemplate(src, { messages: [...user, call], tools });
    expect(ours).toContain(`<param name="opts">{'on': True, 'x': 1.256e-06}</param><param name="tags">["O'Brien", 'say "hi"', 'a\\tb']</param>`);
    const ref = renderChatTemplate(src, { messages: [...user, call], tools, reference_mode: true });
    expect(ref).toContain('<param name="opts"></param>');
  });

  it("reads the repr back by the schema, in one piece and streamed", () => {
    const plan = applyChatTemplate(src, { messages: user, tools });
    // the generation prompt opens `<think>`: the model closes it before it calls
    const out = `</think><function name="f"><param name="opts">{'on': True, 'x': 1.256e-06}</param><param name="tags">["O'Brien", 'say "hi"', 'a\\tb']</param><param name="n">3</param></function>`;
    expectCalls(plan, out, [{ name: "f", arguments: args }]);
    const ref = applyChatTemplate(src, { messages: user, tools, reference_mode: true });
    expect(() => parseChatOutput(ref, out)).toThrow();
  });
});

describe("Mistral Small 3.2 with eos </s>: the [ARGS] marker once", () => {
  const src = source("Mistral-Small-3.2-24B-Instruct-2506.jinja");
  const tools = [{ type: "function", function: { name: "book_route", parameters: { type: "object", properties: { amount: { type: "boolean" } } } } }];

  it("takes the call as the template renders it, with or without the id", () => {
    const plan = applyChatTemplate(src, { messages: user, tools, bos_token: "<s>", eos_token: "</s>" });
    expectCalls(plan, '[TOOL_CALLS]book_route[CALL_ID]call00000[ARGS]{"amount": false}', [{ name: "book_route", arguments: { amount: false } }]);
    expectCalls(plan, '[TOOL_CALLS]book_route[ARGS]{"amount": true}', [{ name: "book_route", arguments: { amount: true } }]);
    // reference mode keeps llama.cpp's grammar: `[ARGS]` twice
    const ref = applyChatTemplate(src, { messages: user, tools, bos_token: "<s>", eos_token: "</s>", reference_mode: true });
    expect(ref.grammar?.gbnf).toMatch(/"book_route" "\[ARGS\]"\) \("\[CALL_ID\]"/);
    expect(() => parseChatOutput(ref, '[TOOL_CALLS]book_route[CALL_ID]call00000[ARGS]{"amount": false}')).toThrow();
  });
});

describe("Kimi K3: a parameter name that is a prefix of another, streamed", () => {
  const src = source("Kimi-K3.jinja");
  const tools = [{ type: "function", function: { name: "f", parameters: { type: "object", properties: { a: { type: "string" }, ab: { type: "integer" }, abc: { type: "boolean" } } } } }];
  const arg = (k: string, type: string, v: string) => `<|open|>argument key="${k}" type="${type}"<|sep|>${v}<|close|>argument<|sep|>`;
  // the generation prompt opens the think section
  const out =
    "<|close|>think<|sep|><|open|>tools<|sep|>" +
    `<|open|>call tool="f" index="0"<|sep|>${arg("ab", "integer", "5")}${arg("a", "string", "x")}${arg("abc", "boolean", "true")}<|close|>call<|sep|>` +
    `<|open|>call tool="f" index="1"<|sep|>${arg("a", "string", "y")}${arg("ab", "integer", "7")}<|close|>call<|sep|>` +
    "<|close|>tools<|sep|>";
  const want = [
    { name: "f", arguments: { ab: 5, a: "x", abc: true } },
    { name: "f", arguments: { a: "y", ab: 7 } },
  ];

  it("streams the names whole: deltas add up to the final message, byte by byte and in pieces", () => {
    const plan = applyChatTemplate(src, { messages: user, tools, parallel_tool_calls: true });
    expectCalls(plan, out, want);
  });

  it("reference mode keeps the reference's grammar text", () => {
    const ours = applyChatTemplate(src, { messages: user, tools, parallel_tool_calls: true });
    const ref = applyChatTemplate(src, { messages: user, tools, parallel_tool_calls: true, reference_mode: true });
    expect(ref.grammar?.gbnf).toMatch(/"<\|open\|>argument key=\\"" "ab" "\\""/);
    expect(ours.grammar?.gbnf).toMatch(/"<\|open\|>argument key=\\"" \("ab" "\\""\)/);
    // the one-shot parse was already right there
    expect(parseChatOutput(ref, out).tool_calls.map((c) => JSON.parse(c.function.arguments) as unknown)).toEqual(want.map((w) => w.arguments));
  });
});

/** The plan's lazy grammar (its trigger rules) takes `text` from where its trigger fires. */
function lazyTakes(plan: ChatPlan, text: string): boolean {
  const at = lazyStart(text, (plan.grammar?.triggers ?? [])) as number;
  if (at < 0) return false;
  const arena = plan.parser as unknown as { rules: Map<string, number>; nodes: { kind: string; trigger?: boolean }[]; parseFrom(id: number, input: Uint8Array, o: object): { type: string; end: number } };
  const input = encoder.encode(text.slice(at));
  return [...arena.rules.values()].some((id) => {
    if (arena.nodes[id]!.kind !== "rule" || arena.nodes[id]!.trigger !== true) return false;
    const r = arena.parseFrom(id, input, { partial: false });
    return r.type === "success" && r.end === input.length;
  });
}

describe("lazy grammars: triggers as the sampler finds them, piece by piece", () => {
  const tools = [
    { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } },
    { type: "function", function: { name: "get.time", parameters: { type: "object", properties: {} } } },
  ];

  it("lazyStart: after each piece, over the whole text so far (a `$` pattern matches a prefix)", () => {
    const triggers = [{ type: "pattern", value: "^\\s+to$" }];
    expect(lazyStart(" to=functions.f<|message|>{}", triggers)).toBe(0);
    // one search of the whole text would not find it
    expect(new RegExp(triggers[0]!.value).test(" to=functions.f<|message|>{}")).toBe(false);
    expect(lazyStart("ab<tool_call>x", [{ type: "word", value: "<tool_call>" }])).toBe(2);
    expect(lazyStart("xx>>>f\n", [{ type: "pattern", value: ">>>(f)" }])).toBe(5);
    expect(lazyStart("nothing here", [{ type: "word", value: "<tool_call>" }])).toBe(-1);
  });

  it("Functionary v3.2: a call right after the prompt's `>>>` starts the grammar (not in reference mode)", () => {
    const src = source("meetkai-functionary-medium-v3.2.jinja");
    const plan = applyChatTemplate(src, { messages: user, tools, parallel_tool_calls: true });
    const ref = applyChatTemplate(src, { messages: user, tools, parallel_tool_calls: true, reference_mode: true });
    expect(plan.grammar?.lazy).toBe(true);
    const first = 'get_weather\n{"city": "Paris"}';
    expect(lazyStart(first, (plan.grammar?.triggers ?? []))).toBe(0);
    expect(lazyTakes(plan, first)).toBe(true);
    expect(lazyTakes(plan, `${first}>>>get.time\n{}`)).toBe(true);
    expect(lazyStart(first, (ref.grammar?.triggers ?? []))).toBe(-1);
    // content first still waits for `>>>`, and the name is escaped (`get.time`, not `get-time`)
    expect(lazyStart("all\nHello", (plan.grammar?.triggers ?? []))).toBe(-1);
    expect(lazyStart("get-time\n{}", (plan.grammar?.triggers ?? []))).toBe(-1);
    expect(lazyStart('all\nHi>>>get_weather\n{"city": "x"}', (plan.grammar?.triggers ?? []))).toBe(6);
    expect(parseChatOutput(plan, first).tool_calls[0]!.function.name).toBe("get_weather");
  });

  it("Muse Glimmer: a call in the first message starts the grammar (not in reference mode)", () => {
    const src = source("muse-glimmer.jinja");
    const plan = applyChatTemplate(src, { messages: user, tools });
    const ref = applyChatTemplate(src, { messages: user, tools, reference_mode: true });
    expect(plan.grammar?.lazy).toBe(true);
    const call = ' to=get_weather<|message|><atem:function_calls>\n<atem:invoke name="get_weather">\n<atem:parameter name="city">Paris</atem:parameter>\n</atem:invoke>\n</atem:function_calls>';
    expect(lazyStart(call, (plan.grammar?.triggers ?? []))).toBe(0);
    expect(lazyTakes(plan, call)).toBe(true);
    expect(lazyStart(call, (ref.grammar?.triggers ?? []))).toBe(-1);
    // reasoning or the answer first: no trigger at the start
    expect(lazyStart(" to=self<|message|>thinking<|eom|>", (plan.grammar?.triggers ?? []))).toBe(-1);
    expect(lazyStart(" to=user<|message|>Hi", (plan.grammar?.triggers ?? []))).toBe(-1);
  });
});
