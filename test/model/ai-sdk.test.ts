// The AI SDK provider with the real `ai` package on the tiny model: tool calls in the model's own
// syntax as streamed tool-input deltas, multi-step with a tool result, tool choices, JSON output,
// abort, usage and finish reasons.
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { generateText, jsonSchema, Output, stepCountIs, streamText, tool } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { createLlamapeg } from "../../lib/ai-sdk/index.js";
import type { Context, Model } from "../../lib/llama/index.js";
import { packageRoot } from "../../lib/native/binding.js";
import { validateJson } from "../../lib/openai/index.js";
import { loadTestModel } from "../support/models.js";

let model: Model;
let context: Context;

beforeAll(async () => {
  model = await loadTestModel();
  context = model.createContext({ contextSize: 4096, threads: 2 });
});
afterAll(() => model?.dispose());

const weatherSchema = { type: "object", properties: { city: { type: "string", maxLength: 12 }, unit: { enum: ["c", "f"] } }, required: ["city", "unit"], additionalProperties: false } as const;
const weather = (results: unknown[] = []) =>
  tool({
    description: "Weather for a city",
    inputSchema: jsonSchema<{ city: string; unit: "c" | "f" }>(weatherSchema),
    execute: async (input) => {
      results.push(input);
      return { temperature: 21, unit: input.unit };
    },
  });

describe("llamapeg/ai-sdk with the ai package", () => {
  it("generateText with a named tool: one call whose input is valid, finish reason tool-calls, usage", async () => {
    const llamapeg = createLlamapeg({ context });
    const r = await generateText({
      model: llamapeg("tiny"),
      tools: { weather: tool({ description: "Weather for a city", inputSchema: jsonSchema(weatherSchema) }) },
      toolChoice: { type: "tool", toolName: "weather" },
      prompt: "Weather in Paris?",
      maxOutputTokens: 80,
      seed: 3,
      // one call by the grammar (with parallel calls the random model may start a second one)
      providerOptions: { llamapeg: { parallel_tool_calls: false } },
    });
    expect(r.toolCalls).toHaveLength(1);
    expect(r.toolCalls[0]!.toolName).toBe("weather");
    expect(validateJson(r.toolCalls[0]!.input, weatherSchema as never)).toEqual([]);
    expect(r.finishReason).toBe("tool-calls");
    expect(r.usage.inputTokens).toBeGreaterThan(0);
    expect(r.usage.outputTokens).toBeGreaterThan(0);
  });

  it("streamText: tool-input-start / -delta / -end with the call id, then tool-call with the deltas' input", async () => {
    const llamapeg = createLlamapeg({ context });
    const result = streamText({
      model: llamapeg("tiny"),
      tools: { weather: tool({ description: "Weather for a city", inputSchema: jsonSchema(weatherSchema) }) },
      toolChoice: { type: "tool", toolName: "weather" },
      prompt: "Weather in Oslo?",
      maxOutputTokens: 80,
      seed: 4,
      providerOptions: { llamapeg: { parallel_tool_calls: false } },
    });
    const parts: { type: string; id?: string; toolCallId?: string; delta?: string; input?: unknown }[] = [];
    for await (const p of result.fullStream) parts.push(p as never);
    const types = parts.map((p) => p.type);
    const start = parts.find((p) => p.type === "tool-input-start")!;
    expect(start).toMatchObject({ toolName: "weather" });
    const deltas = parts.filter((p) => p.type === "tool-input-delta");
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.every((d) => d.id === start.id)).toBe(true);
    const end = types.indexOf("tool-input-end");
    const call = parts.find((p) => p.type === "tool-call")!;
    expect(types.indexOf("tool-input-start")).toBeLessThan(types.indexOf("tool-input-delta"));
    expect(end).toBeGreaterThan(types.lastIndexOf("tool-input-delta"));
    expect(types.indexOf("tool-call")).toBeGreaterThan(end);
    expect(call.toolCallId).toBe(start.id);
    expect(call.input).toEqual(JSON.parse(deltas.map((d) => d.delta).join("")));
    expect(await result.finishReason).toBe("tool-calls");
  });

  it("multi-step: the tool runs, its result goes back as a tool message, the model answers", async () => {
    const llamapeg = createLlamapeg({ context });
    const executed: unknown[] = [];
    const r = await generateText({
      model: llamapeg("tiny"),
      tools: { weather: weather(executed) },
      prompt: "Weather in Lima?",
      // Room for the call to end on its own (a call cut by the limit finishes "length", which ends the loop).
      maxOutputTokens: 200,
      seed: 5,
      stopWhen: stepCountIs(2),
      include: { requestBody: true },
      prepareStep: ({ stepNumber }) => ({ toolChoice: stepNumber === 0 ? { type: "tool", toolName: "weather" } : "none" }),
    });
    expect(r.steps, JSON.stringify(r.steps.map((s) => ({ finish: s.finishReason, content: s.content })))).toHaveLength(2);
    expect(executed).toHaveLength(1);
    expect(r.steps[0]!.toolResults[0]!.output).toEqual({ temperature: 21, unit: (executed[0] as { unit: string }).unit });
    const sent = (r.steps[1]!.request.body as { messages: { role: string; content: string | null; tool_call_id?: string }[] }).messages;
    const toolMessage = sent.find((m) => m.role === "tool")!;
    expect(toolMessage.tool_call_id).toBe(r.steps[0]!.toolCalls[0]!.toolCallId);
    expect(JSON.parse(toolMessage.content!)).toEqual(r.steps[0]!.toolResults[0]!.output);
    expect(r.steps[1]!.toolCalls).toEqual([]);
    expect(r.steps[1]!.finishReason).toMatch(/^(stop|length)$/);
  });

  it("tool choice none: no calls, text only", async () => {
    const llamapeg = createLlamapeg({ context });
    const r = await generateText({ model: llamapeg(), tools: { weather: weather() }, toolChoice: "none", prompt: "hi", maxOutputTokens: 12, seed: 6 });
    expect(r.toolCalls).toEqual([]);
    expect(r.text.length).toBeGreaterThan(0);
    expect(r.finishReason).toBe("length");
  });

  it("JSON response format: the output is schema-valid JSON", async () => {
    const llamapeg = createLlamapeg({ context });
    const schema = { type: "object", properties: { answer: { enum: ["yes", "no"] }, score: { type: "integer", minimum: 0, maximum: 9 } }, required: ["answer", "score"], additionalProperties: false } as const;
    const r = await generateText({ model: llamapeg(), output: Output.object({ schema: jsonSchema<{ answer: string; score: number }>(schema) }), prompt: "yes or no?", maxOutputTokens: 60, seed: 7 });
    expect(validateJson(r.output, schema as never)).toEqual([]);
  });

  it("reasoning deltas: a template whose generation prompt opens <think> streams reasoning parts", async () => {
    const template = readFileSync(join(packageRoot, "vendor", "llama.cpp", "models", "templates", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"), "utf8");
    const llamapeg = createLlamapeg({ context });
    const result = streamText({ model: llamapeg(), prompt: "think", maxOutputTokens: 16, seed: 8, providerOptions: { llamapeg: { chat_template: template } } });
    const types: string[] = [];
    for await (const p of result.fullStream) types.push(p.type);
    expect(types).toContain("reasoning-start");
    expect(types).toContain("reasoning-delta");
    expect(types.indexOf("reasoning-end")).toBeGreaterThan(types.indexOf("reasoning-delta"));
    expect((await result.reasoningText)?.length).toBeGreaterThan(0);
  });

  it("a reasoning budget through providerOptions: the block closes after it, and the usage splits reasoning from text", async () => {
    const template = readFileSync(join(packageRoot, "vendor", "llama.cpp", "models", "templates", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"), "utf8");
    const llamapeg = createLlamapeg({ context });
    const r = await generateText({ model: llamapeg(), prompt: "think", maxOutputTokens: 24, seed: 8, providerOptions: { llamapeg: { chat_template: template, reasoning_budget_tokens: 5 } } });
    const reasoning = r.usage.outputTokenDetails.reasoningTokens!;
    // at most 5, or a few more to finish a character the fifth token left open
    expect(reasoning).toBeGreaterThanOrEqual(5);
    expect(reasoning).toBeLessThanOrEqual(8);
    expect(r.usage.outputTokenDetails.textTokens).toBe(r.usage.outputTokens! - reasoning);
    expect(r.reasoningText?.length).toBeGreaterThan(0);
    expect(r.text.length).toBeGreaterThan(0);
  });

  it("an abort signal stops the generation and frees the context", async () => {
    const llamapeg = createLlamapeg({ context });
    const controller = new AbortController();
    const result = streamText({ model: llamapeg(), prompt: "a long story", maxOutputTokens: 3000, seed: 9, abortSignal: controller.signal });
    let deltas = 0;
    const types: string[] = [];
    for await (const p of result.fullStream) {
      types.push(p.type);
      if (p.type === "text-delta" && ++deltas === 3) controller.abort();
    }
    expect(types).toContain("abort");
    expect(deltas).toBeLessThan(50);
    for (let i = 0; i < 200 && context.busy; i++) await new Promise((r) => setTimeout(r, 10));
    expect(context.busy).toBe(false);
    expect(context.tokens.length).toBeLessThan(1500);
  });

  it("settings: topK reaches the sampler (topK 1 is greedy); presence/frequency penalties too", async () => {
    const llamapeg = createLlamapeg({ context });
    const greedy = await generateText({ model: llamapeg(), prompt: "count", maxOutputTokens: 16, temperature: 0 });
    const k1 = await generateText({ model: llamapeg(), prompt: "count", maxOutputTokens: 16, temperature: 1.5, topK: 1, seed: 3 });
    expect(k1.text).toBe(greedy.text);
    expect(k1.warnings).toEqual([]);
    // a negative penalty rewards tokens already written: the greedy output changes (starts repeating)
    const long = await generateText({ model: llamapeg(), prompt: "count", maxOutputTokens: 150, temperature: 0 });
    for (const penalty of [{ presencePenalty: -2 }, { frequencyPenalty: -2 }]) {
      const r = await generateText({ model: llamapeg(), prompt: "count", maxOutputTokens: 150, temperature: 0, ...penalty });
      expect(r.text, JSON.stringify(penalty)).not.toBe(long.text);
      expect(r.warnings).toEqual([]);
    }
  });

  it("providerOptions.llamapeg logprobs: providerMetadata.llamapeg.logprobs, one entry per output token", async () => {
    const llamapeg = createLlamapeg({ context });
    const r = await generateText({ model: llamapeg(), prompt: "count", maxOutputTokens: 8, temperature: 0, providerOptions: { llamapeg: { logprobs: true, top_logprobs: 2 } } });
    const logprobs = r.providerMetadata!.llamapeg!.logprobs as { logprob: number; top_logprobs: unknown[] }[];
    expect(logprobs.length).toBe(r.usage.outputTokens);
    expect(logprobs.every((e) => e.logprob <= 0 && e.top_logprobs.length === 2)).toBe(true);
    const plain = await generateText({ model: llamapeg(), prompt: "count", maxOutputTokens: 8, temperature: 0 });
    expect(plain.providerMetadata!.llamapeg!.logprobs).toBeUndefined();
  });

  it("calls on one context run one after another", async () => {
    const llamapeg = createLlamapeg({ context });
    const runs = await Promise.all([1, 2, 3].map((seed) => generateText({ model: llamapeg(), prompt: `q${seed}`, maxOutputTokens: 8, seed })));
    for (const r of runs) expect(r.usage.outputTokens).toBe(8);
  });

  it("on sequences of one context: two providers generate at the same time", async () => {
    const shared = model.createContext({ contextSize: 2048, sequences: 2, threads: 2 });
    try {
      const [a, b] = [shared.getSequence(), shared.getSequence()].map((sequence) => createLlamapeg({ context: sequence }));
      const runs = await Promise.all([a!, b!].map((p, i) => generateText({ model: p(), tools: { weather: weather() }, toolChoice: { type: "tool", toolName: "weather" }, prompt: `Weather ${i}?`, maxOutputTokens: 80, seed: i })));
      for (const r of runs) expect(r.toolCalls.map((c) => c.toolName)).toEqual(["weather"]);
    } finally {
      shared.dispose();
    }
  });

  it("a tool schema degraded to permissive JSON: its warning reaches the AI SDK's warnings (generate and stream)", async () => {
    const llamapeg = createLlamapeg({ context });
    // a lookbehind cannot be a grammar: this tool's arguments degrade to any JSON object, with a warning
    const odd = tool({ description: "odd", inputSchema: jsonSchema({ type: "object", properties: { a: { type: "string", pattern: "(?<=x)y" } } }) });
    const g = await generateText({ model: llamapeg(), tools: { odd }, prompt: "hi", maxOutputTokens: 4, seed: 1 });
    const s = streamText({ model: llamapeg(), tools: { odd }, prompt: "hi", maxOutputTokens: 4, seed: 1 });
    for await (const _ of s.fullStream) void _;
    for (const warnings of [g.warnings ?? [], (await s.warnings) ?? []]) {
      expect(warnings.some((w) => w.type === "other" && /tools\[0\]\.function\.parameters/.test(w.message)), JSON.stringify(warnings)).toBe(true);
    }
  });

  it("leaving textStream early (break, no abort signal) frees the context for the next call", async () => {
    const llamapeg = createLlamapeg({ context });
    for (let k = 0; k < 3; k++) {
      let n = 0;
      for await (const _ of streamText({ model: llamapeg(), prompt: "a story", maxOutputTokens: 60, seed: k }).textStream) if (++n === 2) break;
    }
    const next = await generateText({ model: llamapeg(), prompt: "next", maxOutputTokens: 3, seed: 1 });
    expect(next.usage.outputTokens).toBe(3);
  });

  it("the provider: specification v4, languageModel(id), no embedding models without an embedding context", () => {
    const llamapeg = createLlamapeg({ context });
    expect(llamapeg.specificationVersion).toBe("v4");
    const m = llamapeg.languageModel("x");
    expect(m).toMatchObject({ specificationVersion: "v4", provider: "llamapeg", modelId: "x" });
    expect(() => llamapeg.embeddingModel("e")).toThrow(/no `embeddings` context/);
    expect(() => createLlamapeg({} as never)).toThrow(/context/);
  });
});
