/**
 * applyChatTemplate on small fixture templates (no harness): the plan's fields for each request
 * shape, that the grammar is the parser's own GBNF, that parseChatOutput / ChatSession accept the
 * plan, and the errors for bad requests and bad templates.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { applyChatTemplate, type ApplyChatRequest } from "../../../lib/chat/apply/index.js";
import { parseChatOutput } from "../../../lib/chat/parse.js";
import { ChatSession } from "../../../lib/chat/session.js";
import { toolFunctions, toolParameters } from "../../../lib/chat/tools.js";
import { LlamapegError } from "../../../lib/errors.js";
import { PegArena } from "../../../lib/peg/arena.js";
import { treeGrammar } from "../../conformance/chat-compare.js";

const FIX = path.resolve(import.meta.dirname, "../../fixtures/apply");
const tpl = (name: string) => fs.readFileSync(path.join(FIX, name), "utf8");
const TOOLS_THINK = tpl("tools-think.jinja");
const PLAIN = tpl("plain-chatml.jinja");

const WEATHER = {
  type: "function" as const,
  function: {
    name: "get_weather",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};
const base: ApplyChatRequest = {
  messages: [{ role: "user", content: "Weather in Paris?" }],
  now: new Date("2026-01-31T12:00:00Z"),
};
const CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';

function errorOf(f: () => unknown): LlamapegError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(LlamapegError);
    return e as LlamapegError;
  }
  throw new Error("expected an error");
}

describe("applyChatTemplate: plan fields", () => {
  it("tools with tool_choice auto: lazy grammar triggered by the call marker", () => {
    const plan = applyChatTemplate(TOOLS_THINK, { ...base, tools: [WEATHER], tool_choice: "auto" });
    expect(plan.prompt).toBe("<|im_start|>system\nTools: get_weather <|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n");
    expect(plan.generationPrompt).toBe("<|im_start|>assistant\n");
    expect(plan.format).toBe("peg-native");
    expect(plan.grammar?.lazy).toBe(true);
    // the analysis' per-call marker, as the template writes it
    expect(plan.grammar?.triggers).toEqual([{ type: "word", value: "<tool_call>\n" }]);
    expect(plan.grammar?.gbnf).toContain("root ::=");
    expect(plan.thinkingStartTag).toBe("<think>");
    expect(plan.thinkingEndTags).toEqual(["</think>"]);
    expect(plan.preservedTokens).toEqual(expect.arrayContaining(["<tool_call>", "</tool_call>", "<think>", "</think>"]));
  });

  it("the grammar is the GBNF of the plan's own parser", () => {
    for (const tool_choice of ["auto", "required"] as const) {
      const plan = applyChatTemplate(TOOLS_THINK, { ...base, tools: [WEATHER], tool_choice, calls_only: false });
      const refs = toolFunctions([WEATHER]).map(toolParameters);
      expect(plan.grammar?.gbnf).toBe(plan.parser.toGbnf({ lazy: plan.grammar?.lazy, resolveRefs: refs, schemaMode: "default" }));
    }
  });

  it("named tool, calls only, tools + a response schema: the grammar is still the GBNF of the plan's own tree", () => {
    const schema = { type: "object", properties: { temp: { type: "integer" } }, required: ["temp"] };
    const refs = [...toolFunctions([WEATHER]).map(toolParameters), schema];
    const plans = [
      applyChatTemplate(TOOLS_THINK, { ...base, tools: [WEATHER], tool_choice: { type: "function", function: { name: "get_weather" } } }),
      applyChatTemplate(TOOLS_THINK, { ...base, tools: [WEATHER], tool_choice: "required" }),
      applyChatTemplate(TOOLS_THINK, { ...base, tools: [WEATHER], response_format: { type: "json_schema", json_schema: { schema } } }),
    ];
    for (const plan of plans) {
      expect(plan.grammarRoot).toBeGreaterThanOrEqual(0);
      expect(plan.grammar?.gbnf).toBe(treeGrammar(plan, refs, "default"));
      expect(plan.grammar?.prefill).toBe(plan.generationPrompt);
    }
  });

  it("tool_choice required: the grammar applies from the start, no triggers", () => {
    const plan = applyChatTemplate(TOOLS_THINK, { ...base, tools: [WEATHER], tool_choice: "required" });
    expect(plan.grammar?.lazy).toBe(false);
    expect(plan.grammar?.triggers).toEqual([]);
    expect(plan.grammar?.gbnf).not.toBe("");
    // a call is required: plain text does not parse
    expect(() => parseChatOutput(plan, "Just text.")).toThrow(LlamapegError);
    expect(parseChatOutput(plan, CALL).tool_calls.map((c) => c.function.name)).toEqual(["get_weather"]);
  });

  it("tool_choice required means a call: the grammar is reasoning then calls, free text first only with calls_only: false", () => {
    const strict = applyChatTemplate(TOOLS_THINK, { ...base, tools: [WEATHER], tool_choice: "required" });
    const lax = applyChatTemplate(TOOLS_THINK, { ...base, tools: [WEATHER], tool_choice: "required", calls_only: false });
    expect(strict.grammarRoot).not.toBe(strict.parser.root);
    expect(lax.grammarRoot).toBe(lax.parser.root);
    // the grammar's language, read with the same tree from the grammar's root
    const accepts = (plan: typeof strict, output: string) => {
      const r = new PegArena(plan.parser.nodes, plan.parser.rules, plan.grammarRoot).parse(plan.generationPrompt + output);
      return r.type === "success";
    };
    for (const ok of [CALL, `<think>Which city?</think>\n${CALL}`]) {
      expect(accepts(strict, ok), ok).toBe(true);
      expect(accepts(lax, ok), ok).toBe(true);
    }
    for (const text of [`Sure, let me check.\n${CALL}`, "Just text."]) expect(accepts(strict, text), text).toBe(false);
    expect(accepts(lax, `Sure, let me check.\n${CALL}`)).toBe(true);
    // the parser reads text before a call either way (a model sampled without the grammar)
    expect(parseChatOutput(strict, `Sure.\n${CALL}`).tool_calls).toHaveLength(1);
  });

  it("tool_choice none: no grammar, the output is content (and reasoning)", () => {
    const plan = applyChatTemplate(TOOLS_THINK, { ...base, tools: [WEATHER], tool_choice: "none" });
    expect(plan.grammar).toBeNull();
    const msg = parseChatOutput(plan, "<think>hmm</think>Sunny.");
    expect(msg.reasoning_content).toBe("hmm");
    expect(msg.content).toBe("Sunny.");
    expect(msg.tool_calls).toEqual([]);
  });

  it("a JSON-schema response beside tools: the answer is the schema's JSON or a call, never lazy", () => {
    const schema = { type: "object", properties: { temp: { type: "integer" } }, required: ["temp"] };
    const plan = applyChatTemplate(TOOLS_THINK, {
      ...base,
      tools: [WEATHER],
      tool_choice: "auto",
      response_format: { type: "json_schema", json_schema: { schema } },
    });
    expect(plan.grammar?.lazy).toBe(false);
    expect(plan.grammar?.triggers).toEqual([]);
    expect(plan.grammar?.gbnf).toContain("temp");
    expect(parseChatOutput(plan, '{"temp": 21}').content).toBe('{"temp": 21}');
    expect(parseChatOutput(plan, CALL).tool_calls.map((c) => c.function.name)).toEqual(["get_weather"]);
    // without tools the schema alone applies
    const alone = applyChatTemplate(TOOLS_THINK, { ...base, response_format: { type: "json_schema", json_schema: { schema } } });
    expect(() => parseChatOutput(alone, CALL)).toThrow(LlamapegError);
  });

  it("reasoning_format none leaves the reasoning in the content", () => {
    const plan = applyChatTemplate(TOOLS_THINK, { ...base, reasoning_format: "none" });
    const msg = parseChatOutput(plan, "<think>hmm</think>Hi.");
    expect(msg.reasoning_content).toBe("");
    expect(msg.content).toBe("<think>hmm</think>Hi.");
  });

  it("a user grammar without tools is the plan's grammar", () => {
    const plan = applyChatTemplate(PLAIN, { ...base, grammar: 'root ::= "yes" | "no"' });
    expect(plan.grammar?.gbnf).toBe('root ::= "yes" | "no"');
    expect(plan.grammar?.lazy).toBe(false);
  });

  it("analysis overrides change the generated parser and triggers", () => {
    const plan = applyChatTemplate(TOOLS_THINK, {
      ...base,
      tools: [WEATHER],
      analysis_overrides: { tools: { format: { perCallStart: "<call>", perCallEnd: "</call>" } } },
    });
    expect(plan.grammar?.triggers).toEqual([{ type: "word", value: "<call>" }]);
    const msg = parseChatOutput(plan, '<call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</call>');
    expect(JSON.parse(msg.tool_calls[0]!.function.arguments)).toEqual({ city: "Rome" });
  });
});

describe("applyChatTemplate: plans drive parsing and streaming", () => {
  it("parseChatOutput and ChatSession read reasoning, content and a call", () => {
    const plan = applyChatTemplate(TOOLS_THINK, { ...base, tools: [WEATHER], tool_choice: "auto" });
    const output = `<think>Need the weather.</think>Checking.\n${CALL}`;
    const whole = parseChatOutput(plan, output);
    expect(whole.reasoning_content).toBe("Need the weather.");
    expect(whole.content).toBe("Checking.\n");
    expect(whole.tool_calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([["get_weather", { city: "Paris" }]]);

    const session = new ChatSession(plan);
    for (let i = 0; i < output.length; i += 5) session.feed(output.slice(i, i + 5));
    const { message } = session.finish();
    expect(message.reasoning_content).toBe(whole.reasoning_content);
    expect(message.content).toBe(whole.content);
    expect(message.tool_calls.map((c) => c.function)).toEqual(whole.tool_calls.map((c) => c.function));
  });
});

describe("applyChatTemplate: errors", () => {
  it("a grammar together with tools is an invalid request naming the field", () => {
    const e = errorOf(() => applyChatTemplate(TOOLS_THINK, { ...base, tools: [WEATHER], grammar: "root ::= \"x\"" }));
    expect(e.code).toBe("ERR_INVALID_REQUEST");
    expect(e.where).toBe("grammar");
    // with tool_choice none the grammar is allowed
    expect(applyChatTemplate(TOOLS_THINK, { ...base, tools: [WEATHER], tool_choice: "none", grammar: 'root ::= "x"' }).grammar?.gbnf).toBe('root ::= "x"');
  });

  it("a grammar together with a JSON schema is an invalid request", () => {
    const e = errorOf(() => applyChatTemplate(PLAIN, { ...base, grammar: 'root ::= "x"', json_schema: { type: "string" } }));
    expect([e.code, e.where]).toEqual(["ERR_INVALID_REQUEST", "grammar"]);
  });

  it("bad request fields are named", () => {
    const cases: [ApplyChatRequest, string][] = [
      [{ ...base, tool_choice: "sometimes" as never }, "tool_choice"],
      [{ ...base, reasoning_format: "loud" as never }, "reasoning_format"],
      [{ ...base, response_format: { type: "xml" as never } }, "response_format.type"],
      [{ ...base, tools: [{ type: "function", function: { name: "" } }] }, "tools[0].function.name"],
      [{ ...base, tools: "all" as never }, "tools"],
      [{ ...base, now: new Date(Number.NaN) }, "now"],
      [{ messages: "hi" as never }, "messages"],
    ];
    for (const [req, where] of cases) {
      const e = errorOf(() => applyChatTemplate(PLAIN, req));
      expect([e.code, e.where]).toEqual(["ERR_INVALID_REQUEST", where]);
    }
  });

  it("a template with a syntax error is ERR_TEMPLATE_RENDER", () => {
    const e = errorOf(() => applyChatTemplate(tpl("syntax-error.jinja"), base));
    expect(e.code).toBe("ERR_TEMPLATE_RENDER");
    expect(e.message).toContain("syntax error");
  });

  it("a template that raises is ERR_TEMPLATE_RENDER with its message", () => {
    const e = errorOf(() => applyChatTemplate(tpl("raises.jinja"), { ...base, messages: [{ role: "user", content: "a forbidden word" }] }));
    expect(e.code).toBe("ERR_TEMPLATE_RENDER");
    expect(e.message).toContain("This template refuses forbidden words");
  });

  it("tools for a template that cannot render tool calls: a content-only plan", () => {
    const plan = applyChatTemplate(PLAIN, { ...base, tools: [WEATHER], tool_choice: "auto" });
    expect(plan.grammar).toBeNull();
    expect(parseChatOutput(plan, CALL)).toMatchObject({ content: CALL, tool_calls: [] });
  });

  it("a template source that is not a string", () => {
    expect(errorOf(() => applyChatTemplate(42 as never, base)).code).toBe("ERR_INVALID_ARGUMENT");
  });
});

describe("applyChatTemplate: specialized families", () => {
  it("a template with Kimi K2's markers gets the Kimi K2 handler (ids from the model, trigger on the call marker)", () => {
    const plan = applyChatTemplate(tpl("kimi-k2-like.jinja"), { ...base, tools: [WEATHER], tool_choice: "auto" });
    expect(plan.grammar?.lazy).toBe(true);
    expect(plan.grammar?.triggers).toEqual([{ type: "word", value: "<|tool_call_begin|>" }]);
    expect(plan.preservedTokens).toContain("<|tool_calls_section_begin|>");
    const out =
      '<think>Weather.</think>Sure.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>';
    const msg = parseChatOutput(plan, out);
    expect(msg.reasoning_content).toBe("Weather.");
    expect(msg.content).toBe("Sure.");
    expect(msg.tool_calls.map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)])).toEqual([["functions.get_weather:0", "get_weather", { city: "Paris" }]]);
  });

  it("analysis overrides send a specialized template through the analysis instead", () => {
    const plan = applyChatTemplate(tpl("kimi-k2-like.jinja"), {
      ...base,
      tools: [WEATHER],
      analysis_overrides: { tools: { format: { mode: "json_native", sectionStart: "<calls>", sectionEnd: "</calls>", perCallStart: "", perCallEnd: "" } } },
    });
    expect(plan.grammar?.triggers).toEqual([{ type: "word", value: "<calls>" }]);
  });
});

describe("applyChatTemplate: a call id written before the name (Solar Open)", () => {
  const SOLAR = fs.readFileSync(path.resolve(import.meta.dirname, "../../../vendor/llama.cpp/models/templates/upstage-Solar-Open-100B.jinja"), "utf8");
  const call = (id: string, city: string) => `<|tool_call:begin|>${id}<|tool_call:name|>get_weather<|tool_call:args|>{"city": "${city}"}<|tool_call:end|>`;
  const output = `<|tool_calls|>${call("x7Qa9", "Paris")}${call("b2", "Rome")}<|calls|>`;

  it("the grammar leaves the id to the model and the parse reports it, whole and streamed", () => {
    const plan = applyChatTemplate(SOLAR, { ...base, tools: [WEATHER], tool_choice: "auto", parallel_tool_calls: true });
    // The id is free text up to the name marker (the reference forces the literal call00001).
    expect(plan.grammar?.gbnf).not.toContain("call00001");
    expect(plan.preservedTokens).toContain("<|tool_call:name|>");
    const whole = parseChatOutput(plan, output);
    expect(whole.tool_calls.map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ["x7Qa9", "get_weather", { city: "Paris" }],
      ["b2", "get_weather", { city: "Rome" }],
    ]);
    const session = new ChatSession(plan);
    const headers: { index: number; id?: string; name?: string }[] = [];
    const note = (f: { deltas: { tool_calls?: { index: number; id?: string; function?: { name?: string } }[] }[] }) => {
      for (const d of f.deltas) for (const tc of d.tool_calls ?? []) if (tc.id !== undefined || tc.function?.name !== undefined) headers.push({ index: tc.index, id: tc.id, name: tc.function?.name });
    };
    for (let i = 0; i < output.length; i += 3) note(session.feed(output.slice(i, i + 3)));
    const last = session.finish();
    note(last);
    // One header per call, with the whole id: a partial id never shows.
    expect(headers).toEqual([
      { index: 0, id: "x7Qa9", name: "get_weather" },
      { index: 1, id: "b2", name: "get_weather" },
    ]);
    expect(last.message.tool_calls.map((c) => c.id)).toEqual(["x7Qa9", "b2"]);
  });
});

describe("applyChatTemplate: parallel calls one per line (MiniMax M1)", () => {
  it("two calls separated by a newline, as the template writes them, parse as two calls", () => {
    const M1 = fs.readFileSync(path.resolve(import.meta.dirname, "../../../vendor/llama.cpp/models/templates/MiniMax-M1.jinja"), "utf8");
    const plan = applyChatTemplate(M1, { ...base, tools: [WEATHER], tool_choice: "auto", parallel_tool_calls: true });
    const call = (city: string) => `{"name": "get_weather", "arguments": {"city": "${city}"}}`;
    for (const sep of ["\n", ",\n", ", "]) {
      const msg = parseChatOutput(plan, `<tool_calls>\n${call("Paris")}${sep}${call("Rome")}\n</tool_calls>`);
      expect(msg.tool_calls.map((c) => JSON.parse(c.function.arguments).city), JSON.stringify(sep)).toEqual(["Paris", "Rome"]);
    }
  });
});

describe("applyChatTemplate: Functionary v3.2 recipients after the first", () => {
  const F = fs.readFileSync(path.resolve(import.meta.dirname, "../../../vendor/llama.cpp/models/templates/meetkai-functionary-medium-v3.2.jinja"), "utf8");
  const args = (city: string) => `{"city": "${city}"}`;
  it("text then a call, and parallel calls, each introduced by >>>", () => {
    const plan = applyChatTemplate(F, { ...base, tools: [WEATHER], tool_choice: "auto", parallel_tool_calls: true });
    const a = parseChatOutput(plan, `all\nLet me check.>>>get_weather\n${args("Paris")}`);
    expect([a.content, a.tool_calls.map((c) => JSON.parse(c.function.arguments).city)]).toEqual(["Let me check.", ["Paris"]]);
    const b = parseChatOutput(plan, `get_weather\n${args("Paris")}>>>get_weather\n${args("Rome")}`);
    expect(b.tool_calls.map((c) => JSON.parse(c.function.arguments).city)).toEqual(["Paris", "Rome"]);
    // The lazy grammar wakes on ">>>" not followed by "all" and starts there: its rule starts with ">>>".
    expect(plan.grammar?.lazy).toBe(true);
    expect(plan.grammar?.gbnf).toMatch(/tools-after-content ::= ">>>"/);
  });
});

describe("parallel_tool_calls on a block-per-call JSON syntax (Qwen 2.5's <tool_call>)", () => {
  const qwen = fs.readFileSync(path.resolve(import.meta.dirname, "../../../vendor/llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"), "utf8");
  const two = `${CALL}\n${CALL}`;
  const request = (over: Partial<ApplyChatRequest>): ApplyChatRequest => ({ ...base, tools: [WEATHER], tool_choice: "required", ...over });

  it("false (the default): the grammar and the parser take one call; true: several", () => {
    const one = applyChatTemplate(qwen, request({}));
    expect(one.grammar?.gbnf).toMatch(/^tool-calls ::= tool-call space$/m);
    expect(parseChatOutput(one, CALL).tool_calls).toHaveLength(1);
    expect(() => parseChatOutput(one, two)).toThrow(LlamapegError);
    const many = applyChatTemplate(qwen, request({ parallel_tool_calls: true }));
    expect(many.grammar?.gbnf).toMatch(/^tool-calls ::= \(tool-call space\)\+$/m);
    expect(parseChatOutput(many, two).tool_calls).toHaveLength(2);
  });

  it("reference mode keeps llama.cpp's grammar: the block repeats whatever the flag says", () => {
    const ref = applyChatTemplate(qwen, request({ reference_mode: true }));
    expect(ref.grammar?.gbnf).toMatch(/^tool-calls ::= \(tool-call space\)\+$/m);
  });
});
