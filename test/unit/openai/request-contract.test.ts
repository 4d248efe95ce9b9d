// The whole OpenAI request contract: every field of the openai package's ChatCompletionCreateParams
// has a rule; unknown and unhonourable fields are 400s naming the field; neutral values pass.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

import { describe, expect, it } from "vitest";

import { LlamapegError } from "../../../lib/errors.js";
import { normalizeChatRequest, type ChatCompletionRequest } from "../../../lib/openai/index.js";
import { REQUEST_FIELDS } from "../../../lib/openai/request-fields.js";

const messages = [{ role: "user", content: "hi" }];
const tools = [
  { type: "function" as const, function: { name: "a", parameters: { type: "object" } } },
  { type: "function" as const, function: { name: "b", parameters: { type: "object" } } },
];

function param(request: Record<string, unknown>): string | undefined {
  try {
    normalizeChatRequest(request as unknown as ChatCompletionRequest);
  } catch (e) {
    expect(e).toBeInstanceOf(LlamapegError);
    expect((e as LlamapegError).code).toBe("ERR_INVALID_REQUEST");
    return (e as LlamapegError).where;
  }
  return undefined;
}

/** The top-level fields of ChatCompletionCreateParamsBase, read from the installed openai package. */
function openaiFields(): string[] {
  const require = createRequire(import.meta.url);
  const dts = readFileSync(join(dirname(require.resolve("openai")), "resources", "chat", "completions", "completions.d.ts"), "utf8");
  const body = /export interface ChatCompletionCreateParamsBase \{([\s\S]*?)\n\}/.exec(dts)![1]!;
  return [...body.matchAll(/^ {4}([a-z_]+)\??:/gm)].map((m) => m[1]!);
}

describe("the request contract", () => {
  it("every field of the openai package's ChatCompletionCreateParams has a rule", () => {
    const fields = openaiFields();
    expect(fields.length).toBeGreaterThan(30);
    expect(fields.filter((f) => REQUEST_FIELDS[f] === undefined)).toEqual([]);
  });

  it("unknown fields and fields this build cannot honour are 400s naming the field", () => {
    expect(param({ messages, temprature: 0.5 })).toBe("temprature");
    for (const [field, value] of [
      ["store", true],
      ["modalities", ["text", "audio"]],
      ["audio", { voice: "x", format: "wav" }],
      ["prediction", { type: "content", content: "x" }],
      ["web_search_options", {}],
      ["verbosity", "low"],
      ["functions", [{ name: "f" }]],
      ["function_call", "auto"],
    ] as const) {
      expect(param({ messages, [field]: value }), field).toBe(field);
    }
  });

  it("neutral values of unhonoured fields, and the fields ignored by design, are accepted", () => {
    for (const extra of [
      { frequency_penalty: 0, presence_penalty: 0, logit_bias: {}, logprobs: false, top_logprobs: 0, store: false, modalities: ["text"], n: 1 },
      { user: "u-1", safety_identifier: "s", metadata: { k: "v" }, service_tier: "auto", prompt_cache_key: "k" },
      { frequency_penalty: null, logprobs: null, audio: null },
    ]) {
      expect(param({ messages, ...extra })).toBeUndefined();
    }
  });

  it("llama.cpp's top_k, min_p, repeat_penalty are read and range-checked", () => {
    const r = normalizeChatRequest({ messages, top_k: 7, min_p: 0.2, repeat_penalty: 1.3 } as ChatCompletionRequest);
    expect([r.topK, r.minP, r.repeatPenalty]).toEqual([7, 0.2, 1.3]);
    expect(param({ messages, top_k: -1 })).toBe("top_k");
    expect(param({ messages, top_k: 1.5 })).toBe("top_k");
    expect(param({ messages, min_p: 2 })).toBe("min_p");
    expect(param({ messages, repeat_penalty: 0 })).toBe("repeat_penalty");
  });

  it("penalties, logit_bias, logprobs/top_logprobs and n are read and checked as OpenAI checks them", () => {
    const r = normalizeChatRequest({ messages, frequency_penalty: 0.5, presence_penalty: -1, logit_bias: { "42": 10, "7": -100 }, logprobs: true, top_logprobs: 3, n: 2 } as ChatCompletionRequest);
    expect([r.frequencyPenalty, r.presencePenalty, r.logprobs, r.topLogprobs, r.n]).toEqual([0.5, -1, true, 3, 2]);
    expect([...r.logitBias!].sort((a, b) => a[0] - b[0])).toEqual([[7, -100], [42, 10]]);
    expect(normalizeChatRequest({ messages } as ChatCompletionRequest)).toMatchObject({ logprobs: false, topLogprobs: 0, n: 1, logitBias: undefined });
    for (const [request, field] of [
      [{ frequency_penalty: 2.5 }, "frequency_penalty"],
      [{ presence_penalty: -3 }, "presence_penalty"],
      [{ presence_penalty: "1" }, "presence_penalty"],
      [{ logit_bias: { "42": 101 } }, "logit_bias"],
      [{ logit_bias: { "42": -100.5 } }, "logit_bias"],
      [{ logit_bias: { abc: 1 } }, "logit_bias"],
      [{ logit_bias: { "-1": 1 } }, "logit_bias"],
      [{ logit_bias: [1] }, "logit_bias"],
      [{ logprobs: "yes" }, "logprobs"],
      [{ top_logprobs: 3 }, "top_logprobs"],
      [{ logprobs: false, top_logprobs: 3 }, "top_logprobs"],
      [{ logprobs: true, top_logprobs: 21 }, "top_logprobs"],
      [{ logprobs: true, top_logprobs: 1.5 }, "top_logprobs"],
      [{ n: 0 }, "n"],
      [{ n: 129 }, "n"],
    ] as const) {
      expect(param({ messages, ...request }), JSON.stringify(request)).toBe(field);
    }
  });

  it("reasoning_effort is the thinking switch unless chat_template_kwargs sets it, and reaches the template as llama-server passes it", () => {
    const kwargs = (r: Partial<ChatCompletionRequest>) => normalizeChatRequest({ messages, ...r } as ChatCompletionRequest).chat.chatTemplateKwargs;
    expect(kwargs({ reasoning_effort: "none" })).toEqual({ enable_thinking: false });
    expect(kwargs({ reasoning_effort: "high" })).toEqual({ enable_thinking: true, reasoning_effort: "high" });
    expect(kwargs({ reasoning_effort: "low", chat_template_kwargs: { enable_thinking: false } })).toEqual({ enable_thinking: false, reasoning_effort: "low" });
    // the request's own kwargs win; "none" takes an effort out of them (llama-server erases it)
    expect(kwargs({ reasoning_effort: "high", chat_template_kwargs: { reasoning_effort: "medium" } })).toEqual({ enable_thinking: true, reasoning_effort: "medium" });
    expect(kwargs({ reasoning_effort: "none", chat_template_kwargs: { reasoning_effort: "medium" } })).toEqual({ enable_thinking: false });
    expect(param({ messages, reasoning_effort: "extreme" })).toBe("reasoning_effort");
  });

  it("allowed_tools narrows the tools and applies its mode; custom tools are refused", () => {
    const r = normalizeChatRequest({ messages, tools, tool_choice: { type: "allowed_tools", allowed_tools: { mode: "required", tools: [{ type: "function", function: { name: "b" } }] } } });
    expect(r.chat.tools!.map((t) => t.function.name)).toEqual(["b"]);
    expect(r.chat.toolChoice).toBe("required");
    expect(param({ messages, tools, tool_choice: { type: "allowed_tools", allowed_tools: { mode: "auto", tools: [{ type: "function", function: { name: "zz" } }] } } })).toBe("tool_choice.allowed_tools.tools[0]");
    expect(param({ messages, tools: [{ type: "custom", custom: { name: "c" } }] })).toBe("tools[0].type");
  });
});
