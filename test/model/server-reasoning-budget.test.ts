// The reasoning budget through `llamapeg serve` (issue 25), with the official clients, on the tiny
// model with R1's template (its generation prompt opens <think>; the random model never closes a
// block itself, so a budget is always spent): Chat Completions' reasoning_budget_tokens (create and
// stream, equal to the in-process answer), Responses' reasoning.effort, Messages' thinking
// budget_tokens, the usage each API reports, and 400s naming the field.
import { readFileSync } from "node:fs";
import { join } from "node:path";

import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { Context, Model } from "../../lib/llama/index.js";
import { packageRoot } from "../../lib/native/binding.js";
import { createChatCompletion, type ChatCompletion } from "../../lib/openai/index.js";
import { EFFORT_BUDGETS } from "../../lib/openai/reasoning.js";
import { startServer, type LlamapegServer } from "../../lib/server/index.js";
import { loadTestModel } from "../support/models.js";

const KEY = "sk-budget";
let model: Model;
let reference: Context;
let server: LlamapegServer;
const openai = () => new OpenAI({ apiKey: KEY, baseURL: `${server.url}/v1`, maxRetries: 0 });
const anthropic = () => new Anthropic({ apiKey: KEY, baseURL: server.url, maxRetries: 0 });
const r1 = readFileSync(join(packageRoot, "vendor", "llama.cpp", "models", "templates", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"), "utf8");

/** At most the budget, or a few tokens more to finish a character its last token left open. */
function expectWithin(reasoning: number | undefined, budget: number): void {
  expect(reasoning).toBeGreaterThanOrEqual(budget);
  expect(reasoning).toBeLessThanOrEqual(budget + 3);
}

beforeAll(async () => {
  model = await loadTestModel();
  const slot = model.createContext({ contextSize: 2048, threads: 1 });
  reference = model.createContext({ contextSize: 2048, threads: 1 });
  server = await startServer([slot], { port: 0, apiKey: KEY, modelId: "tiny", allowRequestTemplates: true });
});

afterAll(async () => {
  await server?.close();
  model?.dispose();
});

describe("Chat Completions: reasoning_budget_tokens", () => {
  const body = { model: "tiny", messages: [{ role: "user" as const, content: "Think first." }], max_tokens: 30, seed: 5, temperature: 1, chat_template: r1, reasoning_budget_tokens: 6 };

  it("create: the in-process answer to the same request; the usage's reasoning_tokens; stream: the same message and usage", async () => {
    const c = (await openai().chat.completions.create(body as never)) as unknown as ChatCompletion;
    const local = await createChatCompletion(reference, { ...body, model: undefined });
    expect(c.choices[0].message).toEqual(local.choices[0].message);
    expect(c.usage.completion_tokens_details).toEqual(local.usage.completion_tokens_details);
    expectWithin(c.usage.completion_tokens_details?.reasoning_tokens, 6);
    expect(c.choices[0].message.reasoning_content?.length).toBeGreaterThan(0);
    expect(c.choices[0].message.content?.length).toBeGreaterThan(0);

    const stream = await openai().chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } } as never);
    let reasoning = "";
    let content = "";
    let usage: ChatCompletion["usage"] | undefined;
    for await (const chunk of stream as unknown as AsyncIterable<{ choices: { delta: { content?: string; reasoning_content?: string } }[]; usage?: ChatCompletion["usage"] }>) {
      reasoning += chunk.choices[0]?.delta.reasoning_content ?? "";
      content += chunk.choices[0]?.delta.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    expect(reasoning).toBe(c.choices[0].message.reasoning_content);
    expect(content).toBe(c.choices[0].message.content);
    // (the second request reuses the first one's prompt from the KV cache: cached_tokens differ)
    expect([usage?.completion_tokens, usage?.completion_tokens_details]).toEqual([c.usage.completion_tokens, c.usage.completion_tokens_details]);
  });

  it("a bad budget is a 400 naming the field", async () => {
    for (const [field, value] of [["reasoning_budget_tokens", -2], ["thinking_budget_tokens", 1.5], ["reasoning_budget_message", false]] as const) {
      const e = (await openai().chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "hi" }], max_tokens: 2, [field]: value } as never).catch((x: unknown) => x)) as InstanceType<typeof OpenAI.BadRequestError>;
      expect(e).toBeInstanceOf(OpenAI.BadRequestError);
      expect(e.param).toBe(field);
    }
  });
});

describe("Responses: reasoning.effort", () => {
  it("minimal is a budget of 256: a reasoning item, then the message; usage.output_tokens_details.reasoning_tokens; the stream assembles the same", async () => {
    const params = { model: "tiny", input: "Think first.", max_output_tokens: 300, seed: 5, temperature: 1, reasoning: { effort: "minimal" as const }, chat_template: r1 };
    const r = await openai().responses.create(params);
    expect(r.output.map((i) => i.type)).toEqual(["reasoning", "message"]);
    expectWithin(r.usage?.output_tokens_details.reasoning_tokens, EFFORT_BUDGETS.minimal!);
    expect(r.output_text.length).toBeGreaterThan(0);
    const final = await openai().responses.stream(params).finalResponse();
    expect(final.output.map((i) => i.type)).toEqual(["reasoning", "message"]);
    expect(final.output_text).toBe(r.output_text);
    expect(final.usage?.output_tokens_details).toEqual(r.usage?.output_tokens_details);
  });

  it("none: thinking off (R1's template closes the block in the prompt), no reasoning item, 0 reasoning tokens", async () => {
    const r = await openai().responses.create({ model: "tiny", input: "hi", max_output_tokens: 8, seed: 5, reasoning: { effort: "none" }, chat_template: r1 } as never);
    expect(r.output.map((i) => i.type)).toEqual(["message"]);
    expect(r.usage?.output_tokens_details.reasoning_tokens).toBe(0);
  });
});

describe("Messages: thinking.budget_tokens", () => {
  const params = { model: "tiny", max_tokens: 30, messages: [{ role: "user" as const, content: "Think first." }], seed: 5, thinking: { type: "enabled" as const, budget_tokens: 8 }, chat_template: r1 };

  it("enabled with budget_tokens: a thinking block bounded by it, then text; usage.output_tokens_details.thinking_tokens; the stream assembles the same", async () => {
    const m = await anthropic().messages.create(params);
    expect(m.content.map((b) => b.type)).toEqual(["thinking", "text"]);
    expectWithin(m.usage.output_tokens_details?.thinking_tokens, 8);
    const final = await anthropic().messages.stream(params).finalMessage();
    expect(final.content).toEqual(m.content);
    expect(final.usage.output_tokens_details).toEqual(m.usage.output_tokens_details);
  });

  it("disabled: no thinking block, 0 thinking tokens; a bad budget_tokens is a 400 naming it", async () => {
    const m = await anthropic().messages.create({ ...params, max_tokens: 8, thinking: { type: "disabled" } });
    expect(m.content.map((b) => b.type)).toEqual(["text"]);
    expect(m.usage.output_tokens_details).toEqual({ thinking_tokens: 0 });
    const e = (await anthropic().messages.create({ ...params, thinking: { type: "enabled", budget_tokens: -1 } }).catch((x: unknown) => x)) as InstanceType<typeof Anthropic.BadRequestError>;
    expect(e).toBeInstanceOf(Anthropic.BadRequestError);
    expect(e.message).toContain("thinking.budget_tokens");
  });
});
