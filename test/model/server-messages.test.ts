// POST /v1/messages against `startServer` with the tiny model, through the official Anthropic SDK:
// messages.create and messages.stream (its MessageStream assembles our events), a tool_use /
// tool_result round trip, thinking blocks, stop_sequence, the field contract and the key rule.
import { readFileSync } from "node:fs";
import { join } from "node:path";

import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { Context, Model, Sequence } from "../../lib/llama/index.js";
import { packageRoot } from "../../lib/native/binding.js";
import { createChatCompletion } from "../../lib/openai/index.js";
import { startServer, type LlamapegServer } from "../../lib/server/index.js";
import { loadTestModel } from "../support/models.js";

const KEY = "sk-messages";
let model: Model;
let slots: Sequence[];
let reference: Context;
let server: LlamapegServer;
const client = (apiKey = KEY) => new Anthropic({ apiKey, baseURL: server.url, maxRetries: 0 });
const r1Template = () => readFileSync(join(packageRoot, "vendor", "llama.cpp", "models", "templates", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"), "utf8");

beforeAll(async () => {
  model = await loadTestModel();
  const shared = model.createContext({ contextSize: 4096, sequences: 2, threads: 1 });
  slots = [shared.getSequence(), shared.getSequence()];
  reference = model.createContext({ contextSize: 4096, threads: 1 });
  server = await startServer(slots, { port: 0, apiKey: KEY, modelId: "tiny" });
});

afterAll(async () => {
  await server?.close();
  model?.dispose();
});

const pick = { name: "pick", description: "pick a digit", input_schema: { type: "object" as const, properties: { n: { type: "integer", minimum: 0, maximum: 9 } }, required: ["n"], additionalProperties: false } };

describe("POST /v1/messages", () => {
  it("create: a text block equal to the Chat Completions answer to the same messages; usage and stop_reason", async () => {
    // temperature is not in this SDK version's types (newer models reject it); the API has it.
    const params = { model: "tiny", max_tokens: 12, system: "Be brief.", messages: [{ role: "user" as const, content: "hi" }], temperature: 0 };
    const m = await client().messages.create(params);
    const chat = await createChatCompletion(reference, { messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }], max_tokens: 12, temperature: 0 });
    expect(m.type).toBe("message");
    expect(m.role).toBe("assistant");
    expect(m.model).toBe("tiny");
    expect(m.content.map((b) => b.type)).toEqual(["text"]);
    expect((m.content[0] as Anthropic.TextBlock).text).toBe(chat.choices[0].message.content);
    expect(m.stop_reason).toBe(chat.choices[0].finish_reason === "length" ? "max_tokens" : "end_turn");
    expect(m.usage.output_tokens).toBe(chat.usage.completion_tokens);
    expect(m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0)).toBe(chat.usage.prompt_tokens);
  });

  it("stream: the SDK's MessageStream assembles our events into the same message as create", async () => {
    const params = { model: "tiny", max_tokens: 10, messages: [{ role: "user" as const, content: "Tell me" }], temperature: 0 };
    const whole = await client().messages.create(params);
    const stream = client().messages.stream(params);
    const types: string[] = [];
    let text = "";
    stream.on("streamEvent", (e) => types.push(e.type));
    stream.on("text", (d) => (text += d));
    const final = await stream.finalMessage();
    expect(types[0]).toBe("message_start");
    expect(types.at(-1)).toBe("message_stop");
    expect(types).toContain("content_block_start");
    expect(types).toContain("content_block_delta");
    expect(types).toContain("content_block_stop");
    expect(types).toContain("message_delta");
    expect(final.content).toEqual(whole.content);
    expect(text).toBe((whole.content[0] as Anthropic.TextBlock).text);
    expect(final.stop_reason).toBe(whole.stop_reason);
    expect(final.usage.output_tokens).toBe(whole.usage.output_tokens);
  });

  it("a tool round trip: a streamed tool_use block with its input, then the tool_result sent back", async () => {
    // disable_parallel_tool_use: the grammar admits one call, then the turn ends (tool_use)
    const params = { model: "tiny", max_tokens: 200, messages: [{ role: "user" as const, content: "Pick" }], tools: [pick], tool_choice: { type: "tool" as const, name: "pick", disable_parallel_tool_use: true }, seed: 1 };
    const stream = client().messages.stream(params);
    let json = "";
    stream.on("inputJson", (d) => (json += d));
    const first = await stream.finalMessage();
    const use = first.content.find((b) => b.type === "tool_use");
    expect(use?.type).toBe("tool_use");
    if (use?.type !== "tool_use") return;
    expect(use.name).toBe("pick");
    const input = use.input as { n: number };
    expect(JSON.parse(json)).toEqual(input);
    expect(Number.isInteger(input.n) && input.n >= 0 && input.n <= 9).toBe(true);
    expect(first.stop_reason).toBe("tool_use");

    const secondParams = {
      model: "tiny",
      max_tokens: 8,
      tools: [pick],
      tool_choice: { type: "none" as const },
      messages: [
        { role: "user" as const, content: "Pick" },
        { role: "assistant" as const, content: first.content.filter((b) => b.type === "tool_use").map((b) => ({ type: "tool_use" as const, id: (b as Anthropic.ToolUseBlock).id, name: "pick", input })) },
        { role: "user" as const, content: [{ type: "tool_result" as const, tool_use_id: use.id, content: String(input.n * 2) }] },
      ],
      temperature: 0,
    };
    const second = await client().messages.create(secondParams);
    expect(second.content.every((b) => b.type === "text")).toBe(true);
    // The call and its result are in the prompt.
    expect(second.usage.input_tokens + (second.usage.cache_read_input_tokens ?? 0)).toBeGreaterThan(first.usage.input_tokens + (first.usage.cache_read_input_tokens ?? 0) + 5);
  });

  it("thinking: a template whose generation prompt opens <think> gives a thinking block, streamed as thinking deltas", async () => {
    const params = { model: "tiny", max_tokens: 16, messages: [{ role: "user" as const, content: "think" }], seed: 8, thinking: { type: "enabled" as const, budget_tokens: 1024 }, chat_template: r1Template() };
    const whole = await client().messages.create(params);
    expect(whole.content[0]?.type).toBe("thinking");
    const block = whole.content[0] as Anthropic.ThinkingBlock;
    expect(block.thinking.length).toBeGreaterThan(0);
    const stream = client().messages.stream(params);
    let thinking = "";
    stream.on("thinking", (d) => (thinking += d));
    const final = await stream.finalMessage();
    expect(thinking).toBe(block.thinking);
    expect(final.content).toEqual(whole.content);
  });

  it("stop_sequences: a string the output contains ends it with stop_reason stop_sequence naming it", async () => {
    const base = { model: "tiny", max_tokens: 24, messages: [{ role: "user" as const, content: "Tell me more" }], temperature: 0 };
    const free = await client().messages.create(base);
    const text = (free.content[0] as Anthropic.TextBlock).text;
    expect(text.length).toBeGreaterThan(6);
    const stop = text.slice(4, 7);
    const cut = await client().messages.create({ ...base, stop_sequences: ["\u0000never", stop] });
    expect(cut.stop_reason).toBe("stop_sequence");
    expect(cut.stop_sequence).toBe(stop);
    expect((cut.content[0] as Anthropic.TextBlock).text).toBe(text.slice(0, text.indexOf(stop)));
  });

  it("the field contract and errors in Anthropic's shape: 400s name the field; a wrong key is a 401", async () => {
    const bad = async (body: Record<string, unknown>) => (await client().messages.create({ model: "tiny", max_tokens: 4, messages: [{ role: "user", content: "hi" }], ...body } as never).catch((e: unknown) => e)) as InstanceType<typeof Anthropic.BadRequestError>;
    const unknown = await bad({ frobnicate: 1 });
    expect(unknown).toBeInstanceOf(Anthropic.BadRequestError);
    expect(unknown.message).toContain("frobnicate");
    expect((unknown.error as { type: string; error: { type: string } }).error.type).toBe("invalid_request_error");
    expect((await bad({ max_tokens: undefined })).message).toContain("max_tokens");
    expect((await bad({ tools: [{ type: "bash_20250124", name: "bash" }] })).message).toContain("tools[0].type");
    expect((await bad({ messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "" } }] }] })).message).toContain("messages[0].content[0].type");
    expect((await bad({ stop_sequences: ["a", "b", "c", "d", "e"] })).message).toContain("stop_sequences");
    // ignored by design: accepted
    const ok = await client().messages.create({ model: "tiny", max_tokens: 1, messages: [{ role: "user", content: "hi" }], metadata: { user_id: "u" }, service_tier: "auto" });
    expect(ok.type).toBe("message");
    await expect(client("sk-wrong").messages.create({ model: "tiny", max_tokens: 1, messages: [{ role: "user", content: "hi" }] })).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    // authToken (Authorization: Bearer) works as well as x-api-key
    const bearer = new Anthropic({ authToken: KEY, apiKey: null, baseURL: server.url, maxRetries: 0 });
    expect((await bearer.messages.create({ model: "tiny", max_tokens: 1, messages: [{ role: "user", content: "hi" }] })).type).toBe("message");
  });
});
