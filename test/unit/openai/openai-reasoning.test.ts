// The reasoning budget's request side (no model): each API's field as the Chat Completions
// budget (reasoning_budget_tokens / thinking_budget_tokens / reasoning_effort, Responses'
// reasoning.effort, Messages' thinking, the AI SDK's reasoning levels), budget 0 as the thinking switch, and the budget on real
// templates' plans (markers, an opened block, the warning on a template without reasoning).
import { readFileSync } from "node:fs";

import { describe, expect, it } from "vitest";

import { mapCallOptions } from "../../../lib/ai-sdk/call-options.js";
import { mapMessagesRequest } from "../../../lib/anthropic/request.js";
import { applyChatTemplate } from "../../../lib/chat/apply/index.js";
import { LlamapegError } from "../../../lib/errors.js";
import { normalizeChatRequest, type ChatCompletionRequest } from "../../../lib/openai/index.js";
import { buildCompletionPlan } from "../../../lib/openai/plan.js";
import { EFFORT_BUDGETS, planReasoningBudget, requestReasoning } from "../../../lib/openai/reasoning.js";
import { REQUEST_FIELDS } from "../../../lib/openai/request-fields.js";
import { MESSAGES_FIELDS } from "../../../lib/anthropic/request.js";
import { mapResponsesRequest } from "../../../lib/openai/responses/index.js";

const messages = [{ role: "user", content: "hi" }];
const template = (name: string) => readFileSync(`vendor/llama.cpp/models/templates/${name}.jinja`, "utf8");
const specials = { bos: "", eos: "" };

function whereOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(LlamapegError);
    expect((e as LlamapegError).code).toBe("ERR_INVALID_REQUEST");
    return (e as LlamapegError).where;
  }
  throw new Error("expected an error");
}

const normalize = (r: Record<string, unknown>) => normalizeChatRequest({ messages, ...r } as unknown as ChatCompletionRequest);

describe("Chat Completions fields", () => {
  it("reasoning_budget_tokens and its alias thinking_budget_tokens set the budget; -1 is none; the message rides along", () => {
    expect(requestReasoning({ reasoning_budget_tokens: 64 })).toEqual({ thinking: undefined, budget: { tokens: 64, message: "" } });
    expect(requestReasoning({ thinking_budget_tokens: 64, reasoning_budget_message: "Done." })).toEqual({ thinking: undefined, budget: { tokens: 64, message: "Done." } });
    expect(requestReasoning({ reasoning_budget_tokens: 64, thinking_budget_tokens: 64 }).budget?.tokens).toBe(64);
    expect(requestReasoning({ reasoning_budget_tokens: -1 })).toEqual({ thinking: undefined, budget: null });
    expect(requestReasoning({})).toEqual({ thinking: undefined, budget: null });
  });

  it("reasoning_effort: none is budget 0 and thinking off; below the default a bounded budget; medium and above unbounded; an explicit budget wins", () => {
    expect(EFFORT_BUDGETS).toEqual({ none: 0, minimal: 256, low: 1024, medium: null, high: null, xhigh: null, max: null });
    for (const [effort, tokens] of Object.entries(EFFORT_BUDGETS)) {
      const r = requestReasoning({ reasoning_effort: effort });
      expect(r.budget?.tokens ?? null).toBe(tokens);
      expect(r.thinking).toBe(effort !== "none");
    }
    expect(requestReasoning({ reasoning_effort: "low", reasoning_budget_tokens: 10 }).budget?.tokens).toBe(10);
    expect(requestReasoning({ reasoning_effort: "low", reasoning_budget_tokens: -1 }).budget).toBeNull();
  });

  it("budget 0 turns thinking off for the template, unless chat_template_kwargs.enable_thinking says otherwise", () => {
    const off = normalize({ reasoning_budget_tokens: 0 });
    expect(off.chat.chatTemplateKwargs).toEqual({ enable_thinking: false });
    expect(off.chat.enableThinking).toBe(false);
    expect(off.reasoningBudget).toEqual({ tokens: 0, message: "" });
    const kept = normalize({ reasoning_budget_tokens: 0, chat_template_kwargs: { enable_thinking: true } });
    expect(kept.chat.enableThinking).toBe(true);
    expect(kept.reasoningBudget?.tokens).toBe(0);
    // a bounded budget leaves the switch alone
    expect(normalize({ reasoning_budget_tokens: 5 }).chat.chatTemplateKwargs).toBeUndefined();
    expect(normalize({}).reasoningBudget).toBeNull();
  });

  it("bad values are 400s naming the field; the two budget fields must agree", () => {
    for (const v of [-2, 1.5, "8", true, 2 ** 31]) {
      expect(whereOf(() => normalize({ reasoning_budget_tokens: v }))).toBe("reasoning_budget_tokens");
      expect(whereOf(() => normalize({ thinking_budget_tokens: v }))).toBe("thinking_budget_tokens");
    }
    expect(whereOf(() => normalize({ reasoning_budget_tokens: 8, thinking_budget_tokens: 9 }))).toBe("thinking_budget_tokens");
    expect(whereOf(() => normalize({ reasoning_budget_message: 3 }))).toBe("reasoning_budget_message");
    expect(whereOf(() => normalize({ reasoning_effort: "extreme" }))).toBe("reasoning_effort");
  });

  it("the field contract classifies the three fields as honoured", () => {
    for (const k of ["reasoning_budget_tokens", "thinking_budget_tokens", "reasoning_budget_message", "reasoning_effort"]) expect(REQUEST_FIELDS[k]).toEqual({ kind: "honoured" });
  });
});

describe("Responses and Messages fields", () => {
  it("Responses reasoning.effort is the Chat Completions effort, with its budget", () => {
    const low = mapResponsesRequest({ input: "x", reasoning: { effort: "low" } });
    expect(low.chat.reasoning_effort).toBe("low");
    expect(normalizeChatRequest(low.chat).reasoningBudget).toEqual({ tokens: 1024, message: "" });
    expect(normalizeChatRequest(mapResponsesRequest({ input: "x", reasoning: { effort: "high" } }).chat).reasoningBudget).toBeNull();
    expect(normalizeChatRequest(mapResponsesRequest({ input: "x", reasoning: { effort: "none" } }).chat).reasoningBudget?.tokens).toBe(0);
  });

  it("Messages thinking: enabled is its budget_tokens, adaptive unbounded, disabled budget 0 and off; output_config.effort an effort", () => {
    const base = { model: "m", max_tokens: 64, messages: [{ role: "user", content: "hi" }] };
    const enabled = mapMessagesRequest({ ...base, thinking: { type: "enabled", budget_tokens: 300 } });
    expect(enabled.chat).toMatchObject({ reasoning_effort: "high", reasoning_budget_tokens: 300 });
    const n = normalizeChatRequest(enabled.chat);
    expect(n.reasoningBudget).toEqual({ tokens: 300, message: "" });
    expect(n.chat.enableThinking).toBe(true);
    expect(normalizeChatRequest(mapMessagesRequest({ ...base, thinking: { type: "enabled", budget_tokens: 0 } }).chat).chat.enableThinking).toBe(false);
    expect(normalizeChatRequest(mapMessagesRequest({ ...base, thinking: { type: "adaptive" } }).chat).reasoningBudget).toBeNull();
    const disabled = normalizeChatRequest(mapMessagesRequest({ ...base, thinking: { type: "disabled" } }).chat);
    expect([disabled.reasoningBudget?.tokens, disabled.chat.enableThinking]).toEqual([0, false]);
    expect(normalizeChatRequest(mapMessagesRequest({ ...base, output_config: { effort: "low" } }).chat).reasoningBudget?.tokens).toBe(1024);
    expect(normalizeChatRequest(mapMessagesRequest({ ...base, output_config: { effort: "max" } }).chat).reasoningBudget).toBeNull();
    // thinking wins over output_config.effort
    expect(normalizeChatRequest(mapMessagesRequest({ ...base, thinking: { type: "enabled", budget_tokens: 40 }, output_config: { effort: "low" } }).chat).reasoningBudget?.tokens).toBe(40);
    for (const budget_tokens of [-1, 2.5, "1024", undefined]) {
      expect(whereOf(() => mapMessagesRequest({ ...base, thinking: { type: "enabled", budget_tokens } }))).toBe("thinking.budget_tokens");
    }
    expect(MESSAGES_FIELDS.thinking).toEqual({ kind: "honoured" });
  });
});

describe("AI SDK reasoning levels", () => {
  const call = (o: Record<string, unknown>) => mapCallOptions({ prompt: [{ role: "user", content: [{ type: "text", text: "hi" }] }], ...o } as never, "m").request;

  it("a level is the effort of the same name (switch and budget); providerOptions.llamapeg's own fields win; provider-default sets nothing", () => {
    expect(call({ reasoning: "low" }).reasoning_effort).toBe("low");
    expect(normalizeChatRequest(call({ reasoning: "low" })).reasoningBudget?.tokens).toBe(1024);
    expect(normalizeChatRequest(call({ reasoning: "none" })).chat.enableThinking).toBe(false);
    expect(call({ reasoning: "low", providerOptions: { llamapeg: { reasoning_effort: "high" } } }).reasoning_effort).toBe("high");
    expect(normalizeChatRequest(call({ reasoning: "low", providerOptions: { llamapeg: { reasoning_budget_tokens: 7 } } })).reasoningBudget?.tokens).toBe(7);
    expect(call({ reasoning: "provider-default" }).reasoning_effort).toBeUndefined();
  });
});

describe("the budget on a plan", () => {
  const plan = (name: string, r: Record<string, unknown>) => buildCompletionPlan(template(name), normalize(r), specials);

  it("a template that opens the block in its prompt (R1): the markers, open, the bound", () => {
    const p = plan("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", { reasoning_budget_tokens: 32, reasoning_budget_message: " Enough." });
    expect(p.reasoningBudget).toEqual({ tokens: 32, start: "<think>", end: ["</think>"], message: " Enough.", open: true });
    expect(p.warnings).toEqual([]);
  });

  it("budget 0 renders thinking off where the template can (Qwen3: an empty block in the prompt), and still guards a block the model opens", () => {
    const off = plan("Qwen-Qwen3-0.6B", { reasoning_budget_tokens: 0 });
    expect(off.chat.generationPrompt.endsWith("<think>\n\n</think>\n\n")).toBe(true);
    expect(off.reasoningBudget).toEqual({ tokens: 0, start: "<think>", end: ["</think>"], message: "", open: false });
    // the model opens the block itself under this template when thinking is on
    expect(plan("Qwen-Qwen3-0.6B", { reasoning_budget_tokens: 9 }).reasoningBudget?.open).toBe(false);
    // explicitly on: the prompt is the thinking one, the block is closed at once by the budget
    const on = plan("Qwen-QwQ-32B", { reasoning_budget_tokens: 0, chat_template_kwargs: { enable_thinking: true } });
    expect(on.reasoningBudget).toMatchObject({ tokens: 0, open: true });
  });

  it("no budget asked: unbounded on a reasoning template (the block's tokens are counted), nothing on others", () => {
    expect(plan("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", {}).reasoningBudget).toMatchObject({ tokens: Infinity, open: true });
    const plain = plan("Qwen-Qwen2.5-7B-Instruct", {});
    expect(plain.reasoningBudget).toBeUndefined();
    expect(plain.warnings).toEqual([]);
  });

  it("reasoning_effort reaches the templates that read it, as llama-server passes it (gpt-oss: its Reasoning line)", () => {
    expect(plan("openai-gpt-oss-120b", { reasoning_effort: "high" }).prompt).toContain("Reasoning: high\n");
    expect(plan("openai-gpt-oss-120b", { reasoning_effort: "low" }).prompt).toContain("Reasoning: low\n");
    // the template's own default when the request says nothing
    expect(plan("openai-gpt-oss-120b", {}).prompt).toContain("Reasoning: medium\n");
  });

  it("a budget on a template without reasoning markers is a no-op with a warning, not an error", () => {
    const p = plan("Qwen-Qwen2.5-7B-Instruct", { reasoning_budget_tokens: 16 });
    expect(p.reasoningBudget).toBeUndefined();
    expect(p.warnings).toEqual(["reasoning budget: this chat template has no reasoning markers, so the budget has no effect"]);
  });

  it("planReasoningBudget reads the plan's markers: several end tags, the first is forced (gpt-oss, Nemotron 3)", () => {
    const oss = applyChatTemplate(template("openai-gpt-oss-120b"), { messages });
    expect(planReasoningBudget(oss, { tokens: 5, message: "" }).options).toEqual({ tokens: 5, start: "<|channel|>analysis<|message|>", end: ["<|end|>"], message: "", open: false });
    const nemotron = applyChatTemplate(template("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"), { messages });
    expect(planReasoningBudget(nemotron, { tokens: 5, message: "" }).options).toMatchObject({ end: ["</think>", "<tool_call>"], open: true });
  });
});
