// createChatCompletion end to end on the tiny random-weight model: random weights write gibberish,
// so every output that is a valid tool call or schema-valid JSON shows the grammar at work.
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { Context, Model } from "../../lib/llama/index.js";
import { createChatCompletion, replayCompletion, toOpenAIError, validateJson, type ChatCompletion, type ChatCompletionChunk, type ChatCompletionRequest, type CompletionRecord } from "../../lib/openai/index.js";
import { loadTestModel } from "../support/models.js";
import { assembleChunks } from "../unit/openai/openai-assemble-chunks.js";

let model: Model;
let context: Context;

beforeAll(async () => {
  model = await loadTestModel();
  context = model.createContext({ contextSize: 2048, threads: 2 });
});

afterAll(() => model?.dispose());

const user = [{ role: "user", content: "What is the weather in Paris?" }];
// Small closed schemas keep the random model's calls short (each forced token costs a full
// vocabulary pass of the grammar on a 151k vocabulary).
const TOOLS = [
  { type: "function" as const, function: { name: "pick", parameters: { type: "object", properties: { n: { type: "integer", minimum: 0, maximum: 9 } }, required: ["n"], additionalProperties: false } } },
  { type: "function" as const, function: { name: "say", parameters: { type: "object", properties: { w: { enum: ["yes", "no"] } }, required: ["w"], additionalProperties: false } } },
];
const schemaOf = (name: string) => TOOLS.find((t) => t.function.name === name)!.function.parameters;

/** A result cut by max_tokens (the model kept adding calls) cannot be complete; the rest must be. */
const cut = (c: ChatCompletion): boolean => c.choices[0].finish_reason === "length";

function expectValidCalls(c: ChatCompletion): void {
  const calls = c.choices[0].message.tool_calls ?? [];
  expect(calls.length).toBeGreaterThan(0);
  for (const call of calls) {
    expect(call.id).toMatch(/^call_/);
    expect(validateJson(JSON.parse(call.function.arguments), schemaOf(call.function.name))).toEqual([]);
  }
  expect(c.choices[0].finish_reason).toBe("tool_calls");
  expect(c.llamapeg.parse_errors).toEqual([]);
}

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const out: ChatCompletionChunk[] = [];
  for await (const c of stream) out.push(c);
  return out;
}

describe("createChatCompletion", () => {
  it("named tool_choice: the grammar allows only that tool, with schema-valid arguments", async () => {
    let complete = 0;
    for (let seed = 0; seed < 3; seed++) {
      const c = await createChatCompletion(context, {
        messages: user,
        tools: TOOLS,
        tool_choice: { type: "function", function: { name: "say" } },
        seed,
        max_tokens: 60,
      });
      expect(c.llamapeg.parse_errors).toEqual([]);
      if (cut(c)) continue;
      complete++;
      expectValidCalls(c);
      expect(c.choices[0].message.tool_calls!.every((t) => t.function.name === "say")).toBe(true);
      expect(c.object).toBe("chat.completion");
      expect(c.usage.completion_tokens).toBeGreaterThan(0);
      expect(c.usage.total_tokens).toBe(c.usage.prompt_tokens + c.usage.completion_tokens);
    }
    expect(complete).toBeGreaterThan(0);
  });

  it("required means a call: every completion that ends before max_tokens has valid calls; parallel calls stay valid", async () => {
    const names = new Set<string>();
    let complete = 0;
    for (let seed = 0; seed < 4; seed++) {
      const c = await createChatCompletion(context, { messages: user, tools: TOOLS, tool_choice: "required", parallel_tool_calls: seed % 2 === 0, seed, max_tokens: 60 });
      // a call cut by max_tokens is reported (closed or not JSON, lib/chat/cut-calls.ts); nothing else
      expect(c.llamapeg.parse_errors.filter((e) => !/tool call \d+ .*(cut inside its arguments|not JSON)/.test(e.message))).toEqual([]);
      if (cut(c)) continue;
      expect(c.llamapeg.parse_errors).toEqual([]);
      complete++;
      expectValidCalls(c);
      expect(c.choices[0].message.content).toBeNull();
      for (const t of c.choices[0].message.tool_calls!) names.add(t.function.name);
    }
    expect(complete).toBeGreaterThan(0);
    expect(names.size).toBeGreaterThan(0);
  });

  it('required with calls_only: false (llama.cpp semantics: text may come first) and auto / none: the output parses without errors', async () => {
    for (const tool_choice of ["required", "auto", "none"] as const) {
      const c = await createChatCompletion(context, { messages: user, tools: TOOLS, tool_choice, calls_only: false, seed: 3, max_tokens: 12 });
      expect(c.llamapeg.parse_errors).toEqual([]);
      expect(c.choices[0].finish_reason).toBe("length");
      expect(typeof c.choices[0].message.content).toBe("string");
    }
  });

  it("a call cut by max_tokens is that partial call, closed or reported, with finish_reason length; the streamed deltas add up to it", async () => {
    let found = false;
    for (let max = 16; max <= 40 && !found; max += 2) {
      const req = { messages: user, tools: TOOLS, tool_choice: "required" as const, seed: 1, max_tokens: max };
      const c = await createChatCompletion(context, req);
      const call = c.choices[0].message.tool_calls?.[0];
      if (call === undefined) continue;
      // a cut call is closed by appending (reported as a partial call) or, where it cannot be, reported with its raw text (lib/chat/cut-calls.ts)
      const report = c.llamapeg.parse_errors.find((e) => /tool call 0 .*(cut inside its arguments|not JSON)/.test(e.message));
      if (report === undefined) continue;
      found = true;
      expect(c.choices[0].finish_reason).toBe("length");
      expect(TOOLS.map((t) => t.function.name)).toContain(call.function.name);
      expect(call.function.arguments.startsWith("{")).toBe(true);
      if (/cut inside its arguments/.test(report.message)) expect(() => JSON.parse(call.function.arguments)).not.toThrow();
      const chunks = await collect(createChatCompletion(context, { ...req, stream: true }));
      const streamed = assembleChunks(chunks);
      expect(streamed.tool_calls.map((t) => t.function)).toEqual([call.function]);
      expect(chunks[chunks.length - 1]!.choices[0]!.finish_reason).toBe("length");
      // the conversation with this answer in it can be sent again (the next turn of a chat)
      const next = await createChatCompletion(context, { messages: [...user, c.choices[0].message, { role: "user", content: "And in Tokyo?" }], tools: TOOLS, seed: 1, max_tokens: 8 });
      expect(next.object).toBe("chat.completion");
      if (/not JSON/.test(report.message)) expect(next.llamapeg.warnings.join("\n")).toMatch(/messages\[1\]\.tool_calls\[0\]\.function\.arguments: a cut JSON object/);
    }
    expect(found, "no max_tokens in 16..40 cut the call inside its arguments").toBe(true);
  });

  it("response_format json_schema: the content is schema-valid JSON", async () => {
    const schema = { type: "object", properties: { ok: { type: "boolean" }, days: { type: "integer", minimum: 1, maximum: 7 } }, required: ["ok", "days"], additionalProperties: false };
    for (let seed = 0; seed < 2; seed++) {
      const c = await createChatCompletion(context, { messages: user, response_format: { type: "json_schema", json_schema: { name: "x", schema } }, seed, max_tokens: 60 });
      expect(c.choices[0].finish_reason).toBe("stop");
      expect(validateJson(JSON.parse(c.choices[0].message.content!), schema)).toEqual([]);
    }
  });

  it("json_property_order any: a 9-property tool's calls end, valid, in the model's own orders (a closed object's members are counted)", async () => {
    const properties: Record<string, unknown> = {};
    for (const k of "abcdefghi") properties[k] = k < "e" ? { type: "integer", minimum: 0, maximum: 99 } : { type: "string", maxLength: 4 };
    const parameters = { type: "object", properties, required: ["g", "a", "b", "c", "d", "e", "f"], additionalProperties: false };
    const orders = new Set<string>();
    for (let seed = 1; seed <= 3; seed++) {
      const c = await createChatCompletion(context, {
        messages: user,
        tools: [{ type: "function", function: { name: "fill", parameters } }],
        tool_choice: { type: "function", function: { name: "fill" } },
        json_property_order: "any",
        seed,
        temperature: 1,
        max_tokens: 200,
      });
      // without the member count the random model wrote optional keys until max_tokens
      expect(c.choices[0].finish_reason).toBe("tool_calls");
      const call = c.choices[0].message.tool_calls![0]!;
      const args = JSON.parse(call.function.arguments) as Record<string, unknown>;
      expect(validateJson(args, parameters)).toEqual([]);
      orders.add(Object.keys(args).join(""));
    }
    // the declared order would give "abcdefg" plus optional ones in place; the model chose others
    expect([...orders].some((o) => !/^a?b?c?d?e?f?g?h?i?$/.test(o))).toBe(true);
  });

  it("tools + response schema: every result is a valid tool call or schema-valid JSON", async () => {
    const schema = { type: "object", properties: { answer: { enum: ["a", "b"] } }, required: ["answer"], additionalProperties: false };
    const kinds = { call: 0, json: 0, cut: 0 };
    for (let seed = 0; seed < 6; seed++) {
      const c = await createChatCompletion(context, { messages: user, tools: TOOLS, response_format: { type: "json_schema", json_schema: { name: "a", schema } }, seed, max_tokens: 60 });
      const m = c.choices[0].message;
      expect(c.llamapeg.parse_errors).toEqual([]);
      if (cut(c)) {
        kinds.cut++;
        continue;
      }
      if (m.tool_calls !== undefined) {
        expectValidCalls(c);
        kinds.call++;
      } else {
        expect(validateJson(JSON.parse(m.content!), schema)).toEqual([]);
        kinds.json++;
      }
    }
    expect(kinds.call + kinds.json + kinds.cut).toBe(6);
    expect(kinds.call + kinds.json).toBeGreaterThan(0);
  });

  it("the concatenated stream equals the non-stream message for the same seed; usage chunk on request", async () => {
    const req = { messages: user, tools: TOOLS, tool_choice: { type: "function" as const, function: { name: "pick" } }, seed: 11, max_tokens: 60 };
    const whole = await createChatCompletion(context, req);
    const chunks = await collect(createChatCompletion(context, { ...req, stream: true, stream_options: { include_usage: true } }));
    expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant");
    const usage = chunks[chunks.length - 1]!;
    expect(usage.choices).toEqual([]);
    expect(usage.usage!.completion_tokens).toBe(whole.usage.completion_tokens);
    expect(chunks[chunks.length - 2]!.choices[0]!.finish_reason).toBe("tool_calls");
    const streamed = assembleChunks(chunks);
    const m = whole.choices[0].message;
    expect(streamed.content ?? "").toBe(m.content ?? "");
    // ids are random per completion; names and arguments must match
    expect(streamed.tool_calls.map((t) => t.function)).toEqual(m.tool_calls!.map((t) => t.function));
    // each call's header (id, type, name) comes before its argument fragments
    const firstFor = new Map<number, ChatCompletionChunk["choices"][number]["delta"]>();
    for (const c of chunks) for (const t of c.choices[0]?.delta.tool_calls ?? []) if (!firstFor.has(t.index)) firstFor.set(t.index, { tool_calls: [t] });
    for (const d of firstFor.values()) expect(d.tool_calls![0]).toMatchObject({ id: expect.stringMatching(/^call_/), type: "function", function: { name: expect.any(String) } });
  });

  it("stop strings end the output and are not in the content", async () => {
    const free = await createChatCompletion(context, { messages: user, seed: 5, max_tokens: 24 });
    const text = free.choices[0].message.content!;
    const stop = text.slice(6, 9);
    const c = await createChatCompletion(context, { messages: user, seed: 5, max_tokens: 24, stop });
    expect(c.choices[0].message.content).toBe(text.slice(0, text.indexOf(stop)));
    expect(c.choices[0].finish_reason).toBe("stop");
  });

  it("a record replays offline to the same chunks and completion", async () => {
    let record: CompletionRecord | undefined;
    const chunks = await collect(
      createChatCompletion(context, { messages: user, tools: TOOLS, tool_choice: "required", seed: 2, max_tokens: 60, stream: true }, { onRecord: (r) => (record = r) }),
    );
    const replay = replayCompletion(JSON.stringify(record));
    expect(replay.chunks).toEqual(chunks);
    expect(JSON.stringify(replay.chunks)).toBe(JSON.stringify(chunks));
    expect(replay.completion.choices[0].message.tool_calls!.length).toBeGreaterThan(0);
  });

  it("an abort ends the stream with ERR_ABORTED after the chunks so far", async () => {
    const controller = new AbortController();
    const seen: ChatCompletionChunk[] = [];
    let error: unknown;
    try {
      for await (const c of createChatCompletion(context, { messages: user, seed: 1, max_tokens: 500, stream: true, signal: controller.signal })) {
        seen.push(c);
        if (seen.length === 4) controller.abort(new Error("user pressed stop"));
      }
    } catch (e) {
      error = e;
    }
    expect(seen.length).toBeGreaterThanOrEqual(4);
    expect(toOpenAIError(error).error).toMatchObject({ code: "ERR_ABORTED", message: expect.stringContaining("user pressed stop") });
    // the context is usable again
    const c = await createChatCompletion(context, { messages: user, seed: 1, max_tokens: 4 });
    expect(c.usage.completion_tokens).toBe(4);
  });

  it("a second turn reuses the KV prefix", async () => {
    const first = await createChatCompletion(context, { messages: user, seed: 4, max_tokens: 8 });
    const next = await createChatCompletion(context, { messages: [...user, first.choices[0].message, { role: "user", content: "And tomorrow?" }], seed: 4, max_tokens: 8 });
    expect(next.usage.prompt_tokens_details!.cached_tokens).toBeGreaterThan(first.usage.prompt_tokens / 2);
  });

  it("rejects invalid requests before generating, naming the field", async () => {
    const bad: [unknown, string][] = [
      [{ messages: [{ role: "wizard", content: "x" }] }, "messages[0].role"],
      [{ messages: [{ role: "assistant", content: null, tool_calls: [{ id: "a", type: "function", function: { arguments: "{}" } }] }] }, "messages[0].tool_calls[0].function.name"],
      [{ messages: [...user, { role: "tool", tool_call_id: "nope", content: "1" }] }, "messages[1].tool_call_id"],
      [{ messages: user, tools: TOOLS, tool_choice: "sometimes" }, "tool_choice"],
      [{ messages: user, tools: TOOLS, tool_choice: { type: "function", function: { name: "nope" } } }, "tool_choice.function.name"],
      [{ messages: user, response_format: { type: "json_schema", json_schema: { schema: { type: "object", properties: { a: { type: 5 } } } } } }, "response_format.json_schema.schema"],
    ];
    for (const [req, param] of bad) {
      const before = context.tokens.length;
      const error = await createChatCompletion(context, req as ChatCompletionRequest & { stream?: false }).then(
        () => undefined,
        (e: unknown) => e,
      );
      const body = toOpenAIError(error);
      expect(body.error).toMatchObject({ type: "invalid_request_error", param, code: "ERR_INVALID_REQUEST" });
      expect(context.tokens.length).toBe(before);
    }
  });
});
