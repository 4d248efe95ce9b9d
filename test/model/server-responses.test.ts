// POST /v1/responses against `startServer` with the tiny model, through the official `openai`
// client's Responses API: create and stream (its ResponseStream helper assembles our events), a
// function tool round trip over previous_response_id, reasoning items, and the field contract.
import { readFileSync } from "node:fs";
import { join } from "node:path";

import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { Context, Model, Sequence } from "../../lib/llama/index.js";
import { packageRoot } from "../../lib/native/binding.js";
import { createChatCompletion } from "../../lib/openai/index.js";
import { startServer, type LlamapegServer } from "../../lib/server/index.js";
import { loadTestModel } from "../support/models.js";
import { request as httpRequest } from "node:http";

import { poll, raw } from "./server-helpers.js";

const KEY = "sk-responses";
let model: Model;
let slots: Sequence[];
let reference: Context;
let server: LlamapegServer;
const client = () => new OpenAI({ apiKey: KEY, baseURL: `${server.url}/v1`, maxRetries: 0 });
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

const pick = { type: "function" as const, name: "pick", strict: null, parameters: { type: "object", properties: { n: { type: "integer", minimum: 0, maximum: 9 } }, required: ["n"], additionalProperties: false } };

describe("POST /v1/responses", () => {
  it("create: the output text is the Chat Completions answer to the same messages (same plan, same sampling)", async () => {
    const r = await client().responses.create({ model: "tiny", instructions: "Be brief.", input: "hi", max_output_tokens: 12, temperature: 0 });
    const chat = await createChatCompletion(reference, { messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }], max_tokens: 12, temperature: 0 });
    expect(r.object).toBe("response");
    expect(r.id).toMatch(/^resp_/);
    expect(r.model).toBe("tiny");
    expect(r.output.map((i) => i.type)).toEqual(["message"]);
    expect(r.output_text).toBe(chat.choices[0].message.content);
    expect(r.output_text.length).toBeGreaterThan(0);
    expect(r.status).toBe(chat.choices[0].finish_reason === "length" ? "incomplete" : "completed");
    expect(r.usage?.output_tokens).toBe(chat.usage.completion_tokens);
    expect(r.usage?.input_tokens).toBe(chat.usage.prompt_tokens);
  });

  it("stream: the client's ResponseStream assembles our events into the same response as create", async () => {
    const params = { model: "tiny", input: "Tell me", max_output_tokens: 10, temperature: 0 };
    const whole = await client().responses.create(params);
    const stream = client().responses.stream(params);
    const types: string[] = [];
    let deltas = "";
    stream.on("event", (e) => types.push(e.type));
    stream.on("response.output_text.delta", (e) => (deltas += e.delta));
    const final = await stream.finalResponse();
    expect(types[0]).toBe("response.created");
    expect(types.at(-1)).toBe(whole.status === "incomplete" ? "response.incomplete" : "response.completed");
    for (const t of ["response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done"]) expect(types).toContain(t);
    expect(final.output_text).toBe(whole.output_text);
    expect(deltas).toBe(whole.output_text);
    expect(final.output.length).toBe(whole.output.length);
  });

  it("a function tool round trip: the streamed call, then its output sent back with previous_response_id", async () => {
    // seed 2: the random model closes the arguments' JSON within 40 tokens (it never ends the turn: incomplete)
    const params = { model: "tiny", input: "Pick", tools: [pick], tool_choice: { type: "function" as const, name: "pick" }, max_output_tokens: 40, seed: 2 };
    const stream = client().responses.stream(params);
    let argDeltas = "";
    stream.on("response.function_call_arguments.delta", (e) => (argDeltas += e.delta));
    const first = await stream.finalResponse();
    const call = first.output.find((i) => i.type === "function_call");
    expect(call?.type).toBe("function_call");
    if (call?.type !== "function_call") return;
    expect(call.name).toBe("pick");
    expect(argDeltas).toBe(call.arguments);
    const args = JSON.parse(call.arguments) as { n: number };
    expect(Number.isInteger(args.n) && args.n >= 0 && args.n <= 9).toBe(true);

    const second = await client().responses.create({
      model: "tiny",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: String(args.n * 2) }],
      tools: [pick],
      tool_choice: "none",
      max_output_tokens: 8,
      temperature: 0,
    });
    expect(second.previous_response_id).toBe(first.id);
    expect(second.output.every((i) => i.type === "message")).toBe(true);
    // The stored history reached the prompt: the first turn's prompt, its call and the output.
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens + 5);
  });

  it("the same round trip with the history sent as input items (function_call + function_call_output)", async () => {
    const first = await client().responses.create({ model: "tiny", input: "Pick", tools: [pick], tool_choice: "required", max_output_tokens: 40, temperature: 0, store: false });
    const call = first.output.find((i) => i.type === "function_call");
    if (call?.type !== "function_call") throw new Error("no call");
    const second = await client().responses.create({
      model: "tiny",
      input: [{ role: "user", content: "Pick" }, { type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments }, { type: "function_call_output", call_id: call.call_id, output: "ok" }],
      tools: [pick],
      max_output_tokens: 6,
      temperature: 0,
    });
    expect(second.status === "completed" || second.status === "incomplete").toBe(true);
    // store: false was not kept
    const gone = await client().responses.create({ model: "tiny", previous_response_id: first.id, input: "x", max_output_tokens: 1 }).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(OpenAI.NotFoundError);
    expect((gone as InstanceType<typeof OpenAI.NotFoundError>).param).toBe("previous_response_id");
  });

  it("reasoning: a template whose generation prompt opens <think> gives a reasoning item with the text, streamed as reasoning_text deltas", async () => {
    const params = { model: "tiny", input: "think", max_output_tokens: 16, seed: 8, chat_template: r1Template() };
    const whole = await client().responses.create(params);
    expect(whole.output[0]?.type).toBe("reasoning");
    const item = whole.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expect(item.content?.[0]?.text.length).toBeGreaterThan(0);
    const stream = client().responses.stream(params);
    let reasoning = "";
    stream.on("response.reasoning_text.delta", (e) => (reasoning += e.delta));
    const final = await stream.finalResponse();
    expect(reasoning).toBe(item.content![0]!.text);
    expect((final.output[0] as OpenAI.Responses.ResponseReasoningItem).content).toEqual(item.content);
  });

  it("the field contract: unknown and unsupported fields are 400s naming them; chat-layer errors name the Responses field", async () => {
    const bad = async (body: Record<string, unknown>) => (await client().responses.create({ model: "tiny", input: "hi", max_output_tokens: 1, ...body } as never).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.BadRequestError>;
    expect((await bad({ frobnicate: 1 })).param).toBe("frobnicate");
    expect((await bad({ background: true })).param).toBe("background");
    expect((await bad({ tools: [{ type: "web_search" }] })).param).toBe("tools[0].type");
    expect((await bad({ input: [{ type: "message", role: "user", content: [{ type: "input_image", image_url: "x" }] }] })).param).toBe("input[0].content[0].type");
    expect((await bad({ max_output_tokens: 0 })).param).toBe("max_output_tokens");
    expect((await bad({ tool_choice: { type: "function", name: "nope" } })).status).toBe(400);
    // ignored by design: accepted
    const ok = await client().responses.create({ model: "tiny", input: "hi", max_output_tokens: 1, user: "u", prompt_cache_key: "k", truncation: "disabled", include: [] });
    expect(ok.object).toBe("response");
  });

  it("a client that disconnects mid-stream (Responses and Messages) aborts its generation and frees its slot", async () => {
    const cut = (path: string, body: unknown) =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest(`${server.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" } }, (res) => {
          let events = 0;
          res.on("data", (d: Buffer) => {
            events += d.toString().split("\n\n").length - 1;
            if (events >= 6) {
              req.destroy();
              resolve(events);
            }
          });
          res.on("error", () => undefined);
        });
        req.on("error", (e) => (e.message.includes("socket hang up") ? undefined : reject(e)));
        req.end(JSON.stringify(body));
      });
    for (const [path, body] of [
      ["/v1/responses", { input: "Tell me a long story", max_output_tokens: 3000, stream: true }],
      ["/v1/messages", { messages: [{ role: "user", content: "Tell me a long story" }], max_tokens: 3000, stream: true }],
    ] as const) {
      expect(await cut(path, body)).toBeGreaterThanOrEqual(6);
      expect(await poll(() => slots.every((s) => !s.busy), 10_000)).toBe(true);
      // far fewer than the 3000 tokens asked for went into the KV cache
      expect(Math.max(...slots.map((s) => s.tokens.length))).toBeLessThan(1500);
    }
  });

  it("the API-key rule: no key is a 401", async () => {
    const r = await raw(`${server.url}/v1/responses`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ input: "hi" }) });
    expect(r.status).toBe(401);
  });
});
