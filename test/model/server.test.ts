// `startServer` on 127.0.0.1 with the tiny model, used the way clients use llama-server: the
// official openai client (streamed tool calls assembled by its helpers), 8 concurrent clients, a
// client that disconnects mid-stream, and the unhappy paths (malformed, oversized, unauthorized).
import { request as httpRequest } from "node:http";
import { connect } from "node:net";

import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { Context, Model, Sequence } from "../../lib/llama/index.js";
import { completionTarget, createChatCompletion, type ChatCompletionChunk, type CompletionTarget } from "../../lib/openai/index.js";
import { isLoopback, startServer, type LlamapegServer } from "../../lib/server/index.js";
import { loadTestModel } from "../support/models.js";
import { poll, raw, sseEvents } from "./server-helpers.js";

const KEY = "sk-test-key";
let model: Model;
let slots: Sequence[];
let reference: Context;
let server: LlamapegServer;
let base: string;
const auth = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };

beforeAll(async () => {
  model = await loadTestModel();
  // The server's slots: 4 sequences of one context, as `llamapeg serve --parallel 4` makes them.
  const shared = model.createContext({ contextSize: 4096, sequences: 4, threads: 1 });
  slots = [0, 1, 2, 3].map(() => shared.getSequence());
  reference = model.createContext({ contextSize: 4096, threads: 1 });
  server = await startServer(slots, { port: 0, apiKey: KEY, bodyLimit: 64 * 1024, maxQueue: 16, modelId: "tiny" });
  base = server.url;
});

afterAll(async () => {
  await server?.close();
  model?.dispose();
});

const tools = [
  { type: "function" as const, function: { name: "pick", parameters: { type: "object", properties: { n: { type: "integer", minimum: 0, maximum: 9 } }, required: ["n"], additionalProperties: false } } },
  { type: "function" as const, function: { name: "say", parameters: { type: "object", properties: { w: { enum: ["yes", "no"] } }, required: ["w"], additionalProperties: false } } },
];

const health = async () => JSON.parse((await raw(`${base}/health`)).body) as { status: string; slots: { total: number; idle: number }; queued: number };

/** Chunks without what differs between two runs (ids, timestamps). */
function comparable(chunks: ChatCompletionChunk[]): unknown[] {
  return chunks.map((c) => {
    const { id: _id, created: _created, ...rest } = c;
    // Tool-call ids are random; how much of the prompt was already in the KV cache differs by context.
    return JSON.parse(JSON.stringify(rest).replace(/"call_[A-Za-z0-9]+"/g, '"call_"').replace(/"cached_tokens":\d+/g, '"cached_tokens":0'));
  });
}

describe("the openai client", () => {
  const client = () => new OpenAI({ apiKey: KEY, baseURL: `${base}/v1`, maxRetries: 0 });

  it("lists the model; a non-stream completion comes back whole", async () => {
    const models = await client().models.list();
    expect(models.data.map((m) => m.id)).toEqual(["tiny"]);
    expect((await client().models.retrieve("tiny")).id).toBe("tiny");
    const c = await client().chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "hi" }], max_tokens: 8, seed: 1 });
    expect(c.object).toBe("chat.completion");
    expect(c.model).toBe("tiny");
    expect(c.usage?.completion_tokens).toBeGreaterThan(0);
  });

  it("n=2 with logprobs: its stream helper assembles both choices and their logprobs, equal to the non-stream answer", async () => {
    const params = { model: "tiny", messages: [{ role: "user" as const, content: "Count" }], max_tokens: 10, n: 2, temperature: 0, logprobs: true, top_logprobs: 2 };
    const whole = await client().chat.completions.create(params);
    expect(whole.choices.map((c) => c.index)).toEqual([0, 1]);
    const streamed = await client().chat.completions.stream(params).finalChatCompletion();
    expect(streamed.choices.length).toBe(2);
    for (const i of [0, 1]) {
      const content = whole.choices[i]!.logprobs!.content!;
      expect(content.length).toBeGreaterThan(0);
      expect(content.every((e) => e.top_logprobs.length === 2 && e.logprob <= 0)).toBe(true);
      // Tokens and bytes equal; log probabilities to float precision: the two choices decode as a
      // batch of two sequences or one at a time depending on timing, and batched kernels round
      // differently in the last bits.
      const got = streamed.choices[i]!.logprobs!.content!;
      const shape = (es: typeof content) => es.map((e) => ({ token: e.token, bytes: e.bytes, top: e.top_logprobs.map((t) => t.token) }));
      expect(shape(got)).toEqual(shape(content));
      // Relative, not 4 decimals: a logprob of -9 computed in another batch layout moves by ~1e-4.
      const near = (a: number, b: number) => expect(Math.abs(a - b), `${a} vs ${b}`).toBeLessThanOrEqual(1e-3 * Math.max(1, Math.abs(b)));
      got.forEach((e, k) => {
        near(e.logprob, content[k]!.logprob);
        e.top_logprobs.forEach((t, j) => near(t.logprob, content[k]!.top_logprobs[j]!.logprob));
      });
      expect(streamed.choices[i]!.message.content).toBe(whole.choices[i]!.message.content);
    }
  });

  it("streamed tool calls, assembled by its stream helper, equal the in-process completion", async () => {
    const request = { model: "tiny", messages: [{ role: "user" as const, content: "Pick a number" }], tools, tool_choice: { type: "function" as const, function: { name: "pick" } }, temperature: 0, max_tokens: 60 };
    const whole = await createChatCompletion(reference, request);
    const stream = client().chat.completions.stream(request);
    const done: string[] = [];
    stream.on("tool_calls.function.arguments.done", (e) => done.push(e.name));
    const final = await stream.finalChatCompletion();
    const calls = final.choices[0]!.message.tool_calls!.map((t) => (t.type === "function" ? { name: t.function.name, arguments: t.function.arguments } : null));
    expect(calls.length).toBeGreaterThan(0);
    expect(calls).toEqual(whole.choices[0].message.tool_calls!.map((t) => ({ name: t.function.name, arguments: t.function.arguments })));
    expect(done).toEqual(calls.map((c) => c!.name));
    expect(final.choices[0]!.finish_reason).toBe(whole.choices[0].finish_reason);
  });

  it("a bad request is a BadRequestError naming the field; a wrong key an AuthenticationError", async () => {
    const bad = await client().chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "hi" }], tool_choice: "sometimes" as never }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect((bad as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("tool_choice");
    const wrong = new OpenAI({ apiKey: "sk-wrong", baseURL: `${base}/v1`, maxRetries: 0 });
    const denied = await wrong.chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(OpenAI.AuthenticationError);
  });
});

describe("streaming", () => {
  it("sends exactly the chunks createChatCompletion yields, then data: [DONE]", async () => {
    const request = { messages: [{ role: "user", content: "Say yes or no" }], tools, tool_choice: "required" as const, temperature: 0, max_tokens: 40, stream_options: { include_usage: true } };
    const local: ChatCompletionChunk[] = [];
    for await (const c of createChatCompletion(reference, { ...request, model: "tiny", stream: true })) local.push(c);
    const r = await raw(`${base}/v1/chat/completions`, { method: "POST", headers: auth, body: JSON.stringify({ ...request, model: "tiny", stream: true }) });
    expect(r.status).toBe(200);
    expect(r.headers["content-type"]).toMatch(/^text\/event-stream/);
    const events = sseEvents(r.body);
    expect(events[events.length - 1]).toBe("[DONE]");
    const served = events.slice(0, -1).map((e) => JSON.parse(e) as ChatCompletionChunk);
    expect(comparable(served)).toEqual(comparable(local));
  });

  it("a client that disconnects mid-stream aborts its generation and frees its slot", async () => {
    const busy = () => slots.some((c) => c.busy);
    const prompt = [{ role: "user", content: "Tell me a long story" }];
    const received = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${base}/v1/chat/completions`, { method: "POST", headers: auth }, (res) => {
        let events = 0;
        res.on("data", (d: Buffer) => {
          events += d.toString().split("\n\n").length - 1;
          if (events >= 5) {
            req.destroy();
            resolve(events);
          }
        });
      });
      req.on("error", (e: NodeJS.ErrnoException) => (e.code === "ECONNRESET" ? undefined : reject(e)));
      req.end(JSON.stringify({ model: "tiny", messages: prompt, max_tokens: 3000, stream: true }));
    });
    expect(received).toBeGreaterThanOrEqual(5);
    expect(await poll(() => !busy(), 10_000)).toBe(true);
    // Aborted: the KV cache holds the prompt and the tokens so far, far fewer than 3000 generated.
    const longest = Math.max(...slots.map((c) => c.tokens.length));
    expect(longest).toBeLessThan(1500);
    const h = await health();
    expect(h.slots.idle).toBe(h.slots.total);
  });
});

describe("backpressure", () => {
  it("a client that stops reading holds the generation back: the server stops pulling pieces until the socket drains", async () => {
    // A scripted target of 2,000 pieces of 16 KiB (32 MiB, more than the loopback socket buffers
    // hold) that counts what the server pulls.
    const info = await completionTarget(reference).chatInfo();
    const piece = new TextEncoder().encode("a".repeat(16 * 1024));
    let pulled = 0;
    let finished = false;
    let aborted = false;
    const scripted: CompletionTarget = {
      chatInfo: () => info,
      generate: () => ({
        async *[Symbol.asyncIterator]() {
          for (let i = 0; i < 2000 && !aborted; i++) {
            pulled++;
            yield { token: 1, piece };
          }
          finished = !aborted;
        },
        abort: () => void (aborted = true),
        result: async () => ({ stats: { promptTokens: 1, reusedTokens: 0, generatedTokens: pulled, promptMs: 0, generateMs: 0, sampleMs: 0, stopReason: aborted ? ("abort" as const) : ("eog" as const) } }),
      }),
    };
    const small = await startServer([scripted], { port: 0 });
    try {
      const body = JSON.stringify({ messages: [{ role: "user", content: "go" }], stream: true });
      const socket = connect(small.port, "127.0.0.1");
      socket.on("error", () => undefined);
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
      socket.pause(); // never read: the socket buffers fill, then the server's writes stop draining
      socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      let last = -1;
      const stalled = await poll(async () => {
        const before = pulled;
        await new Promise((r) => setTimeout(r, 500));
        last = pulled;
        return pulled === before && pulled > 0;
      }, 60_000);
      expect(stalled, `pulled ${last}`).toBe(true);
      expect(finished).toBe(false);
      expect(last).toBeLessThan(2000);
      // Reading again lets it go on; closing the connection stops it.
      socket.resume();
      expect(await poll(() => pulled > last, 10_000)).toBe(true);
      socket.destroy();
      expect(await poll(() => aborted, 10_000)).toBe(true);
      expect(finished).toBe(false);
    } finally {
      await small.close();
    }
  });
});

describe("concurrency", () => {
  it("8 concurrent clients all get their completion (4 sequences generating together, the rest queued)", async () => {
    const client = new OpenAI({ apiKey: KEY, baseURL: `${base}/v1`, maxRetries: 0 });
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        i % 2 === 0
          ? client.chat.completions.create({ model: "tiny", messages: [{ role: "user", content: `question ${i}` }], max_tokens: 24, seed: i })
          : client.chat.completions
              .stream({ model: "tiny", messages: [{ role: "user", content: `question ${i}` }], tools, tool_choice: "required", max_tokens: 40, seed: i })
              .finalChatCompletion(),
      ),
    );
    expect(results).toHaveLength(8);
    for (const c of results) {
      expect(c.choices[0]!.finish_reason).toMatch(/^(stop|length|tool_calls)$/);
      expect(c.usage === undefined || c.usage === null || c.usage.completion_tokens > 0).toBe(true);
    }
    const h = await health();
    expect(h).toEqual({ status: "ok", slots: { total: 4, idle: 4 }, queued: 0 });
  });

  it("past the queue bound: 429 with Retry-After; a queued client that leaves is taken out of the queue", async () => {
    const small = await startServer([reference], { port: 0, maxQueue: 1 });
    try {
      const long = JSON.stringify({ messages: [{ role: "user", content: "go" }], max_tokens: 1500 });
      const first = raw(`${small.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: long });
      expect(await poll(() => reference.busy, 10_000)).toBe(true);
      // The second waits; the third finds the queue full.
      const waiting = httpRequest(`${small.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" } });
      waiting.on("error", () => undefined);
      waiting.end(long);
      expect(await poll(async () => (JSON.parse((await raw(`${small.url}/health`)).body) as { queued: number }).queued === 1, 10_000)).toBe(true);
      const refused = await raw(`${small.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: long });
      expect(refused.status).toBe(429);
      expect(refused.headers["retry-after"]).toBe("1");
      expect(JSON.parse(refused.body).error).toMatchObject({ type: "rate_limit_error", code: "rate_limit_exceeded" });
      waiting.destroy();
      expect(await poll(async () => (JSON.parse((await raw(`${small.url}/health`)).body) as { queued: number }).queued === 0, 10_000)).toBe(true);
      expect((await first).status).toBe(200);
    } finally {
      await small.close();
    }
  });
});

describe("shutdown", () => {
  it("close() aborts a running stream, fails a queued request with 503, and resolves", async () => {
    const small = await startServer([reference], { port: 0 });
    const long = JSON.stringify({ messages: [{ role: "user", content: "go" }], max_tokens: 3000, stream: true });
    const running = raw(`${small.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: long }).catch((e: unknown) => e);
    expect(await poll(() => reference.busy, 10_000)).toBe(true);
    const queued = raw(`${small.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: long });
    expect(await poll(async () => (JSON.parse((await raw(`${small.url}/health`)).body) as { queued: number }).queued === 1, 10_000)).toBe(true);
    await small.close();
    expect((await queued).status).toBe(503);
    const r = await running;
    // The stream ended early: an error event (aborted) instead of [DONE], or a cut connection.
    if (!(r instanceof Error)) expect((r as { body: string }).body).not.toMatch(/data: \[DONE\]/);
    expect(await poll(() => !reference.busy, 10_000)).toBe(true);
    expect(reference.tokens.length).toBeLessThan(1500);
  });
});

describe("bad requests", () => {
  const post = (body: string | Buffer, headers: Record<string, string> = auth) => raw(`${base}/v1/chat/completions`, { method: "POST", headers, body });

  it("malformed JSON: 400 with line and column; a field: 400 naming it; never a 500", async () => {
    const broken = await post('{"messages": [{"role": "user", "content": "hi"}');
    expect(broken.status).toBe(400);
    expect(JSON.parse(broken.body).error).toMatchObject({ type: "invalid_request_error", code: "invalid_json" });
    expect(JSON.parse(broken.body).error.message).toMatch(/line 1, column 48/);
    for (const [body, param] of [
      [{ messages: [] }, "messages"],
      [{ messages: [{ role: "user", content: "hi" }], max_tokens: 0 }, "max_tokens"],
      [{ messages: [{ role: "user", content: "hi" }], tools: [{ type: "function", function: { name: "a b" } }] }, "tools[0].function.name"],
      [{ messages: [{ role: "user", content: "hi" }], response_format: { type: "json_schema", json_schema: { schema: { type: "frob" } } } }, null],
    ] as const) {
      const r = await post(JSON.stringify(body));
      expect(r.status, r.body).toBe(400);
      if (param !== null) expect(JSON.parse(r.body).error.param).toBe(param);
    }
    expect((await post("[1, 2]")).status).toBe(400);
    expect((await post("")).status).toBe(400);
  });

  it("a body over the limit: 413, with or without Content-Length, before it is parsed", async () => {
    const big = Buffer.alloc(80 * 1024, 0x20);
    const declared = await post(big);
    expect(declared.status).toBe(413);
    expect(JSON.parse(declared.body).error.code).toBe("request_too_large");
    const chunked = await raw(`${base}/v1/chat/completions`, { method: "POST", headers: { ...auth, "transfer-encoding": "chunked" }, chunked: [big.subarray(0, 40_000), big.subarray(40_000)] });
    expect(chunked.status).toBe(413);
    // The server still answers afterwards.
    expect((await health()).status).toBe("ok");
  });

  it("401 without or with a wrong key (health needs none); 404 and 405 in OpenAI's shape", async () => {
    const none = await post(JSON.stringify({ messages: [{ role: "user", content: "hi" }] }), { "content-type": "application/json" });
    expect(none.status).toBe(401);
    expect(none.headers["www-authenticate"]).toBe("Bearer");
    expect(JSON.parse(none.body).error.code).toBe("invalid_api_key");
    expect((await post("{}", { authorization: "Bearer nope" })).status).toBe(401);
    expect((await raw(`${base}/v1/models`)).status).toBe(401);
    expect((await raw(`${base}/health`)).status).toBe(200);
    const missing = await raw(`${base}/v1/images/generations`, { method: "POST", headers: auth, body: "{}" });
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body).error).toMatchObject({ type: "invalid_request_error", code: "not_found" });
    expect((await raw(`${base}/v1/models/other`, { headers: auth })).status).toBe(404);
    const method = await raw(`${base}/v1/chat/completions`, { headers: auth });
    expect(method.status).toBe(405);
    expect(method.headers.allow).toBe("POST");
  });
});

describe("the request contract over HTTP", () => {
  const complete = async (extra: Record<string, unknown>) => {
    const r = await raw(`${base}/v1/chat/completions`, { method: "POST", headers: auth, body: JSON.stringify({ model: "tiny", messages: [{ role: "user", content: "Count" }], max_tokens: 24, ...extra }) });
    return { status: r.status, body: JSON.parse(r.body) as { choices: { message: { content: string } }[]; error?: { param: string } } };
  };

  it("llama.cpp's top_k and min_p reach the sampler: top_k 1 or min_p 1 at a high temperature is greedy", async () => {
    const greedy = await complete({ temperature: 0 });
    expect(greedy.status).toBe(200);
    for (const extra of [{ top_k: 1 }, { min_p: 1 }]) {
      const r = await complete({ temperature: 1.5, seed: 11, ...extra });
      expect(r.body.choices[0]!.message.content, JSON.stringify(extra)).toBe(greedy.body.choices[0]!.message.content);
    }
    // The control: the same temperature and seed without the cut-off samples something else.
    expect((await complete({ temperature: 1.5, seed: 11 })).body.choices[0]!.message.content).not.toBe(greedy.body.choices[0]!.message.content);
  });

  it("fields this build cannot honour are 400s naming them; fields ignored by design pass", async () => {
    for (const [field, value] of [["store", true], ["frequency_penalty", 2.5], ["logit_bias", { "1": 101 }], ["top_logprobs", 2], ["n", 5], ["temprature", 1]] as const) {
      const r = await complete({ [field]: value });
      expect(r.status, field).toBe(400);
      expect(r.body.error!.param).toBe(field);
    }
    expect((await complete({ user: "u1", metadata: { a: "b" }, logprobs: false })).status).toBe(200);
  });

  it("a logit_bias id outside the vocabulary is a 400 naming logit_bias, streamed or not", async () => {
    for (const stream of [false, true]) {
      const r = await complete({ logit_bias: { "99999999": 5 }, stream });
      expect(r.status, `stream: ${stream}`).toBe(400);
      expect(r.body.error!.param).toBe("logit_bias");
    }
  });

  it("n=2 runs two choices on two of the 4 slots; streamed chunks carry each choice's index", async () => {
    const r = await raw(`${base}/v1/chat/completions`, { method: "POST", headers: auth, body: JSON.stringify({ model: "tiny", messages: [{ role: "user", content: "Count" }], max_tokens: 12, n: 2, temperature: 1, seed: 3, logprobs: true }) });
    expect(r.status).toBe(200);
    const body = JSON.parse(r.body) as { choices: { index: number; message: { content: string }; logprobs: { content: unknown[] } }[]; usage: { completion_tokens: number } };
    expect(body.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(body.choices[0]!.message.content).not.toBe(body.choices[1]!.message.content);
    expect(body.choices[0]!.logprobs.content.length + body.choices[1]!.logprobs.content.length).toBe(body.usage.completion_tokens);
    const s = await raw(`${base}/v1/chat/completions`, { method: "POST", headers: auth, body: JSON.stringify({ model: "tiny", messages: [{ role: "user", content: "Count" }], max_tokens: 12, n: 2, stream: true, stream_options: { include_usage: true } }) });
    const events = sseEvents(s.body);
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as ChatCompletionChunk);
    const finishes = chunks.flatMap((c) => c.choices.filter((x) => x.finish_reason !== null).map((x) => x.index));
    expect(finishes.sort()).toEqual([0, 1]);
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage!.completion_tokens).toBeGreaterThan(0);
    expect((await raw(`${base}/health`)).body).toContain('"idle":4');
  });

  it("n larger than the server's sequences is a 400 naming n and saying why", async () => {
    const r = await complete({ n: 5 });
    expect(r.status).toBe(400);
    expect(r.body.error!.param).toBe("n");
    expect((r.body.error as unknown as { message: string }).message).toMatch(/n=5 needs 5 free sequences; this server has --parallel 4/);
  });
});

describe("binding", () => {
  it("a non-loopback host needs an API key or an explicit allowUnauthenticated", async () => {
    expect(isLoopback("127.0.0.1")).toBe(true);
    expect(isLoopback("127.8.9.1")).toBe(true);
    expect(isLoopback("::1")).toBe(true);
    expect(isLoopback("localhost")).toBe(true);
    expect(isLoopback("0.0.0.0")).toBe(false);
    expect(isLoopback("::")).toBe(false);
    expect(isLoopback("192.168.1.2")).toBe(false);
    await expect(startServer([reference], { host: "0.0.0.0", port: 0 })).rejects.toThrow(/--api-key|allow-unauthenticated/);
  });
});
