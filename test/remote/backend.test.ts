// lib/remote against a scripted stand-in for llama-server (fake-server.ts): request mapping, stream
// decoding (exact bytes, merged characters, the end token), the fleet strategy, and every failure
// as a coded error. No build, no model: these run everywhere.
import type { ServerResponse } from "node:http";

import { afterEach, describe, expect, it } from "vitest";

import { LlamapegError } from "../../lib/errors.js";
import type { GeneratedToken } from "../../lib/llama/index.js";
import { createChatCompletion, type TargetRequest } from "../../lib/openai/index.js";
import { connectLlamaServer, RemoteError, type LlamaServerBackend, type RemoteGeneration } from "../../lib/remote/index.js";
import { alignPieces } from "../../lib/remote/prompt.js";
import { SseReader } from "../../lib/remote/sse-reader.js";
import { BOS, final, sse, startFakeServer, token, type FakeOptions, type FakeServer } from "./fake-server.js";

const open: FakeServer[] = [];
const backends: LlamaServerBackend[] = [];
afterEach(async () => {
  for (const b of backends.splice(0)) b.close();
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function fake(o: FakeOptions = {}): Promise<FakeServer> {
  const s = await startFakeServer(o);
  open.push(s);
  return s;
}

function connect(...args: Parameters<typeof connectLlamaServer>): LlamaServerBackend {
  const b = connectLlamaServer(...args);
  backends.push(b);
  return b;
}

const request = (over: Partial<TargetRequest> = {}): TargetRequest => ({ prompt: { text: "hi" }, grammar: null, preservedTokens: [], ...over });

async function items(g: RemoteGeneration): Promise<GeneratedToken[]> {
  const out: GeneratedToken[] = [];
  for await (const t of g) out.push(t);
  return out;
}

async function rejection(p: Promise<unknown>): Promise<RemoteError> {
  try {
    await p;
  } catch (error) {
    expect(error).toBeInstanceOf(LlamapegError);
    return error as RemoteError;
  }
  throw new Error("expected a rejection");
}

const bytes = (s: string) => [...Buffer.from(s)];
const stream = (res: ServerResponse) => res.writeHead(200, { "content-type": "text/event-stream" });

describe("SseReader", () => {
  it("splits events on LF, CRLF and CR, skips comments, joins multi-line data, keeps split UTF-8 whole", () => {
    const r = new SseReader();
    const all = Buffer.from('data: {"a":1}\r\n\r\n:ping\n\ndata: x\ndata: y\n\rdata: é\n\n');
    const out: string[] = [];
    // one byte at a time: every split point, inside CRLF and inside "é" too
    for (const b of all) out.push(...r.push(Uint8Array.of(b)));
    expect(out).toEqual(['{"a":1}', "x\ny", "é"]);
    expect(r.pending).toBe(false);
    r.push(Buffer.from("data: cut"));
    expect(r.pending).toBe(true);
  });
});

describe("alignPieces", () => {
  const t = (id: number, text: string) => ({ id, piece: Buffer.from(text) });
  it("places pieces on the prompt's bytes, skipping whitespace a token stripped; null when they do not line up", () => {
    const spans = alignPieces(Buffer.from("ab  <x>  c "), [t(1, "ab"), t(2, "<x>"), t(3, "c")]);
    expect(spans!.map((x) => [x.id, x.start, x.end])).toEqual([
      [1, 0, 2],
      [2, 4, 7],
      [3, 9, 10],
    ]);
    expect(alignPieces(Buffer.from("Hello"), [t(1, " Hello")])).toBeNull(); // SPM's added space
    expect(alignPieces(Buffer.from("abc"), [t(1, "ab")])).toBeNull();
  });
});

describe("the /completion request", () => {
  it("sends token ids (message text without special-token parsing), the sampler chain, exact-bytes probs, no server-side parse", async () => {
    const s = await fake({ specials: { "<|im_start|>": 5, "<tool_call>": 7 }, control: [5] });
    const b = connect(s.url);
    const text = "<|im_start|>user\n<|im_start|> <tool_call>";
    const start = Buffer.byteLength("<|im_start|>user\n");
    await (await b.generate(request({ prompt: { text, segments: [{ start, end: Buffer.byteLength(text) }] }, temperature: 0, seed: 3, maxTokens: 9 }))).result();
    const body = s.bodies[0]!;
    const plain = (t: string) => bytes(t).map((x) => 1000 + x);
    // BOS + template part parsed (5 = <|im_start|>), then the message part: the control token's
    // text stays text; <tool_call> (not a control token) is matched either way, as llama.cpp does.
    expect(body.prompt).toEqual([BOS, 5, ...plain("user\n"), ...plain("<|im_start|> "), 7]);
    expect(body).toMatchObject({
      stream: true,
      n_predict: 9,
      seed: 3,
      temperature: 0,
      top_k: 40,
      top_p: 0.95,
      min_p: 0.05,
      repeat_penalty: 1,
      samplers: ["penalties", "top_k", "top_p", "min_p", "temperature"],
      n_probs: 1,
      post_sampling_probs: true,
      return_progress: true,
      cache_prompt: true,
    });
    expect(JSON.parse(body.chat_parser as string)).toEqual({ parsers: [{ type: "epsilon" }], rules: {}, root: 0 });
    expect(body.stop).toBeUndefined(); // stop strings are cut on our side
  });

  it("passes the sampler fields through (llama-server's names); logprobs is a 400 naming it", async () => {
    const s = await fake();
    const b = connect(s.url);
    const over = { topK: 7, minP: 0.2, repeatPenalty: 1.3, frequencyPenalty: 0.5, presencePenalty: -1, logitBias: new Map([[3, -100], [9, 2.5]]) };
    await (await b.generate(request(over))).result();
    expect(s.bodies[0]).toMatchObject({ top_k: 7, min_p: 0.2, repeat_penalty: 1.3, frequency_penalty: 0.5, presence_penalty: -1, logit_bias: [[3, -100], [9, 2.5]] });
    let caught: unknown;
    try {
      await b.generate(request({ logprobs: true }));
    } catch (e) {
      caught = e;
    }
    expect(caught).toMatchObject({ code: "ERR_INVALID_REQUEST", where: "logprobs" });
    expect(s.bodies.length).toBe(1);
  });

  it("speculative is a 400 naming it (llama-server's is set when it starts); fast-forward is a speed hint it goes without", async () => {
    const s = await fake();
    const b = connect(s.url);
    let caught: unknown;
    try {
      await b.generate(request({ speculative: { type: "ngram" } }));
    } catch (e) {
      caught = e;
    }
    expect(caught).toMatchObject({ code: "ERR_INVALID_REQUEST", where: "speculative" });
    expect(s.bodies.length).toBe(0);
    await (await b.generate(request({ fastForward: true }))).result();
    expect(s.bodies.length).toBe(1);
  });

  it("maps a lazy grammar's triggers as the in-process target does", async () => {
    const s = await fake({ specials: { "<|tool|>": 9, "<call>": 8 }, control: [9] });
    const b = connect(s.url);
    const grammar = {
      gbnf: 'root ::= "x"',
      lazy: true,
      prefill: "",
      triggers: [
        { type: "word" as const, value: "<|tool|>" }, // one control token: a token trigger, kept whole
        { type: "word" as const, value: "<call>" }, // one token but not a control token: a text pattern
        { type: "word" as const, value: "a.b" }, // several tokens: a text pattern, escaped
        { type: "pattern" as const, value: "x+" },
        { type: "pattern_full" as const, value: "y" },
        { type: "token" as const, value: "<|tool|>" },
      ],
    };
    await (await b.generate(request({ grammar, preservedTokens: ["<call>"] }))).result();
    const body = s.bodies[0]!;
    expect(body.grammar).toBe('root ::= "x"');
    expect(body.grammar_lazy).toBe(true);
    expect(body.grammar_triggers).toEqual([
      { type: 0, value: "<|tool|>", token: 9 },
      { type: 2, value: "<call>" },
      { type: 2, value: "a\\.b" },
      { type: 2, value: "x+" },
      { type: 2, value: "^y$" },
      { type: 0, value: "<|tool|>", token: 9 },
    ]);
    expect(body.preserved_tokens).toEqual(["<call>", "<|tool|>"]);
  });

  it("an eager grammar's prefill is llama-server's generation_prompt of a tool-call grammar", async () => {
    const s = await fake();
    const b = connect(s.url);
    await (await b.generate(request({ grammar: { gbnf: 'root ::= "x"', lazy: false, triggers: [], prefill: "<think>\n" } }))).result();
    expect(s.bodies[0]).toMatchObject({ grammar: 'root ::= "x"', grammar_type: "tool_calls", generation_prompt: "<think>\n" });
    expect(s.bodies[0]!.grammar_lazy).toBeUndefined();
  });

  it("a reasoning budget is llama-server's reasoning_budget_* fields; an open block goes as generation_prompt; an unbounded one is not sent", async () => {
    const s = await fake();
    const b = connect(s.url);
    const think = { start: "<think>", end: ["</think>", "<tool_call>"] };
    await (await b.generate(request({ reasoningBudget: { tokens: 7, ...think, message: " Done.", open: true } }))).result();
    expect(s.bodies[0]).toMatchObject({ reasoning_budget_tokens: 7, reasoning_budget_start_tag: "<think>", reasoning_budget_end_tags: ["</think>", "<tool_call>"], reasoning_budget_message: " Done.", generation_prompt: "<think>" });
    // Not open: no generation_prompt; no message: "" (llama-server builds the forced text when it reads the field).
    await (await b.generate(request({ reasoningBudget: { tokens: 0, ...think } }))).result();
    expect(s.bodies[1]).toMatchObject({ reasoning_budget_tokens: 0, reasoning_budget_message: "" });
    expect(s.bodies[1]!.generation_prompt).toBeUndefined();
    // An eager grammar's prefill (the plan's whole generation prompt) is kept.
    await (await b.generate(request({ grammar: { gbnf: 'root ::= "x"', lazy: false, triggers: [], prefill: "<|im_start|>assistant\n<think>\n" }, reasoningBudget: { tokens: 3, ...think, open: true } }))).result();
    expect(s.bodies[2]).toMatchObject({ generation_prompt: "<|im_start|>assistant\n<think>\n", reasoning_budget_tokens: 3 });
    // Only counting: nothing to enforce, and llama-server reports no count.
    await (await b.generate(request({ reasoningBudget: { tokens: Infinity, ...think, open: true } }))).result();
    expect(Object.keys(s.bodies[3]!).filter((k) => k.startsWith("reasoning_budget") || k === "generation_prompt")).toEqual([]);
    // llama-server's budget needs a start marker.
    let caught: unknown;
    try {
      await b.generate(request({ reasoningBudget: { tokens: 3, start: "", end: ["</think>"], open: true } }));
    } catch (e) {
      caught = e;
    }
    expect(caught).toMatchObject({ code: "ERR_INVALID_REQUEST", where: "reasoning_budget_tokens" });
    expect(s.bodies.length).toBe(4);
  });

  it("sends the API key as a bearer token", async () => {
    let auth: string | undefined;
    const s = await fake({
      completion: (_b, res, req) => {
        auth = req.headers.authorization;
        stream(res);
        sse(res, final("limit", 0));
        res.end();
      },
    });
    const b = connect({ urls: [s.url], apiKey: "sesame" });
    await (await b.generate(request())).result();
    expect(auth).toBe("Bearer sesame");
  });
});

describe("the stream", () => {
  it("hands out {token, piece}; the end token's empty event is held and dropped", async () => {
    const s = await fake();
    const g = await connect(s.url).generate(request());
    const got = await items(g);
    expect(got.map((t) => [t.token, Buffer.from(t.piece).toString()])).toEqual([
      [1104, "h"],
      [1105, "i"],
    ]);
    const { stats, text, tokens } = await g.result();
    expect(text).toBe("hi");
    expect(tokens).toEqual([1104, 1105]);
    expect(stats).toMatchObject({ stopReason: "eog", stopToken: 2, generatedTokens: 2, promptTokens: 3, promptMs: 1.5, generateMs: 2.5, unsentTokenIds: 0, server: s.url });
  });

  it("exact bytes: invalid UTF-8 arrives as U+FFFD in content, the bytes from completion_probabilities", async () => {
    const s = await fake({
      completion: (_b, res) => {
        stream(res);
        sse(res, token(1000 + 0x80, [0x80], 1));
        sse(res, final("limit", 1));
        res.end();
      },
    });
    const got = await items(await connect(s.url).generate(request()));
    expect(got.map((t) => [...t.piece])).toEqual([[0x80]]);
  });

  it("a character the server sent merged (tokens_predicted jumps) is split at the last token's piece", async () => {
    const s = await fake({
      completion: (_b, res) => {
        stream(res);
        sse(res, token(1000 + 0x61, "a", 1));
        // "é" = C3 A9 over two tokens, sent once with the last id
        sse(res, token(1000 + 0xa9, [0xc3, 0xa9], 3));
        sse(res, final("limit", 3));
        res.end();
      },
    });
    const g = await connect(s.url).generate(request());
    const got = await items(g);
    expect(got.map((t) => [t.token, [...t.piece]])).toEqual([
      [1000 + 0x61, [0x61]],
      [1000 + 0xa9, [0xc3]],
      [1000 + 0xa9, [0xa9]],
    ]);
    expect((await g.result()).stats).toMatchObject({ generatedTokens: 3, unsentTokenIds: 1, stopReason: "length" });
  });

  it("abort() closes the connection: stopReason abort, the server sees it close", async () => {
    let closed!: () => void;
    const serverSawClose = new Promise<void>((r) => (closed = r));
    const s = await fake({
      completion: (_b, res) => {
        stream(res);
        sse(res, token(1000 + 0x61, "a", 1));
        res.on("close", () => closed());
        // then nothing: a long generation
      },
    });
    const g = await connect(s.url).generate(request());
    const it1 = g[Symbol.asyncIterator]();
    expect((await it1.next()).done).toBe(false);
    g.abort();
    expect((await it1.next()).done).toBe(true);
    expect((await g.result()).stats.stopReason).toBe("abort");
    await serverSawClose;
  });

  it("an AbortSignal aborts too", async () => {
    const s = await fake({
      completion: (_b, res) => {
        stream(res);
        sse(res, token(1000 + 0x61, "a", 1));
      },
    });
    const controller = new AbortController();
    const g = await connect(s.url).generate(request({ signal: controller.signal }));
    setTimeout(() => controller.abort(), 50);
    expect((await g.result()).stats.stopReason).toBe("abort");
  });

  it("cut mid-stream: ERR_REMOTE_STREAM after the items so far, with the partial output", async () => {
    const s = await fake({
      completion: (_b, res) => {
        stream(res);
        sse(res, token(1000 + 0x61, "a", 1));
        sse(res, token(1000 + 0x62, "b", 2));
        setTimeout(() => res.socket!.destroy(), 30);
      },
    });
    const g = await connect(s.url).generate(request());
    const got: string[] = [];
    const e = await rejection(
      (async () => {
        for await (const t of g) got.push(Buffer.from(t.piece).toString());
      })(),
    );
    expect(got).toEqual(["a", "b"]);
    expect(e.code).toBe("ERR_REMOTE_STREAM");
    expect(e.server).toBe(s.url);
    expect(e.partial).toEqual({ tokens: [1000 + 0x61, 1000 + 0x62], text: "ab" });
    // result() reports the same error
    expect((await rejection(g.result())).code).toBe("ERR_REMOTE_STREAM");
  });

  it("a response that ends without its final event: ERR_REMOTE_STREAM", async () => {
    const s = await fake({
      completion: (_b, res) => {
        stream(res);
        sse(res, token(1000 + 0x61, "a", 1));
        res.end();
      },
    });
    const e = await rejection((await connect(s.url).generate(request())).result());
    expect(e.code).toBe("ERR_REMOTE_STREAM");
    expect(e.message).toMatch(/without its final event/);
  });

  it("a stalled stream: ERR_REMOTE_TIMEOUT after timeoutMs, never a hang", async () => {
    const s = await fake({
      completion: (_b, res) => {
        stream(res);
        sse(res, token(1000 + 0x61, "a", 1));
      },
    });
    const started = Date.now();
    const e = await rejection((await connect({ urls: [s.url], timeoutMs: 300 }).generate(request())).result());
    expect(e.code).toBe("ERR_REMOTE_TIMEOUT");
    expect(e.partial!.text).toBe("a");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("an error event mid-stream: ERR_REMOTE_REFUSED with the server's message; context size as ERR_CONTEXT_FULL", async () => {
    const s = await fake({
      completion: (body, res) => {
        stream(res);
        sse(res, token(1000 + 0x61, "a", 1));
        const ctx = body.n_predict === 7;
        sse(res, { error: { code: 500, message: ctx ? "the request exceeds the available context size" : "grammar went wrong", type: ctx ? "exceed_context_size_error" : "server_error" } });
        res.end();
      },
    });
    const b = connect(s.url);
    const e = await rejection((await b.generate(request())).result());
    expect(e.code).toBe("ERR_REMOTE_REFUSED");
    expect(e.message).toContain("grammar went wrong");
    expect(e.partial!.text).toBe("a");
    const full = await rejection((await b.generate(request({ maxTokens: 7 }))).result());
    expect(full.code).toBe("ERR_CONTEXT_FULL");
  });

  it("something that is not llama-server's stream: ERR_REMOTE_PROTOCOL, before the first token, so the request fails over", async () => {
    const garbage = (_b: unknown, res: ServerResponse) => {
      stream(res);
      res.write("data: not json\n\n");
      res.end();
    };
    const s = await fake({ completion: garbage });
    // alone: no server could take it, and the cause says why
    const e = await rejection(connect(s.url).generate(request()));
    expect(e.code).toBe("ERR_REMOTE_UNAVAILABLE");
    expect(((e as { cause?: { code?: string } }).cause as { code?: string }).code).toBe("ERR_REMOTE_PROTOCOL");
    // beside a good server: it completes there
    const bad = await fake({ completion: garbage });
    const good = await fake();
    const g = await connect({ urls: [bad.url, good.url], strategy: "round-robin" }).generate(request());
    expect(g.server).toBe(good.url);
    expect((await g.result()).text).toBe("hi");
  });
});

describe("the fleet", () => {
  const refuse = (status: number, message: string) => (_b: unknown, res: ServerResponse) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { code: status, message, type: "x" } }));
  };

  it("least busy: the server with free slots takes the request", async () => {
    const a = await fake({ totalSlots: 2, busySlots: 2 });
    const c = await fake({ totalSlots: 2, busySlots: 0 });
    const b = connect([a.url, c.url]);
    for (let i = 0; i < 3; i++) await (await b.generate(request())).result();
    expect(a.bodies.length).toBe(0);
    expect(c.bodies.length).toBe(3);
  });

  it("least busy, 6 requests at once: they fill the free slots (each pick sees the others' reservations)", async () => {
    const slow = (_b: unknown, res: ServerResponse) => {
      stream(res);
      setTimeout(() => {
        sse(res, final("limit", 0));
        res.end();
      }, 100);
    };
    const a = await fake({ totalSlots: 4, completion: slow });
    const c = await fake({ totalSlots: 4, completion: slow });
    // A has 2 of its 4 slots busy with someone else's work: 2 free there, 4 on C
    a.options.busySlots = 2;
    const b = connect([a.url, c.url]);
    const gens = await Promise.all(Array.from({ length: 6 }, () => b.generate(request())));
    await Promise.all(gens.map((g) => g.result()));
    expect([a.bodies.length, c.bodies.length]).toEqual([2, 4]);
  });

  it("round robin takes turns; so does least busy on a tie", async () => {
    for (const strategy of ["round-robin", "least-busy"] as const) {
      const a = await fake();
      const c = await fake();
      const b = connect({ urls: [a.url, c.url], strategy });
      for (let i = 0; i < 4; i++) await (await b.generate(request())).result();
      expect([a.bodies.length, c.bodies.length]).toEqual([2, 2]);
    }
  });

  it("/slots disabled (501): /health and our own count stand in", async () => {
    const a = await fake({ busySlots: null });
    const b = connect(a.url);
    await (await b.generate(request())).result();
    expect(a.bodies.length).toBe(1);
  });

  it("before the stream a request moves on: refused connection, 503, a stalled server; the failed one is skipped", async () => {
    const dead = "http://127.0.0.1:9";
    const busy = await fake({ completion: refuse(503, "Loading model") });
    const stalled = await fake({ completion: () => {} });
    const good = await fake();
    const b = connect({ urls: [dead, busy.url, stalled.url, good.url], strategy: "round-robin", timeoutMs: 300 });
    const g = await b.generate(request());
    expect((await g.result()).text).toBe("hi");
    expect(g.server).toBe(good.url);
    const status = b.status();
    for (const url of [dead, busy.url, stalled.url]) {
      const st = status.find((x) => x.url === url)!;
      expect(st.skippedForMs).toBeGreaterThan(0);
      expect(st.lastError).toContain(url);
    }
    expect(status.find((x) => x.url === good.url)).toMatchObject({ skippedForMs: 0, accepted: 1, inFlight: 0 });
  });

  it("a refused request (400) is not retried elsewhere: ERR_REMOTE_REFUSED with status and message", async () => {
    const a = await fake({ completion: refuse(400, "invalid grammar") });
    const c = await fake();
    const b = connect({ urls: [a.url, c.url], strategy: "round-robin" });
    const e = await rejection(b.generate(request()));
    expect(e.code).toBe("ERR_REMOTE_REFUSED");
    expect(e.status).toBe(400);
    expect(e.message).toContain("invalid grammar");
    expect(c.bodies.length).toBe(0);
  });

  it("all servers down: ERR_REMOTE_UNAVAILABLE naming each", async () => {
    const b = connect({ urls: ["http://127.0.0.1:9", "127.0.0.1:7"], connectTimeoutMs: 1_000 });
    const e = await rejection(b.chatInfo());
    expect(e.code).toBe("ERR_REMOTE_UNAVAILABLE");
    expect(e.message).toContain("127.0.0.1:9");
    expect(e.message).toContain("127.0.0.1:7");
  });

  it("a server with another model (other chat template) is not used", async () => {
    const a = await fake();
    const other = await fake({ chatTemplate: "{{ messages }}" });
    const b = connect({ urls: [a.url, other.url], strategy: "round-robin" });
    for (let i = 0; i < 2; i++) await (await b.generate(request())).result();
    expect(other.bodies.length).toBe(0);
    expect(b.status().find((x) => x.url === other.url)!.lastError).toMatch(/another model.*chat_template/);
  });

  it("createChatCompletion runs on the backend: chat info from /props, chunks from the stream", async () => {
    const s = await fake();
    const c = await createChatCompletion(connect(s.url), { messages: [{ role: "user", content: "yo" }] });
    expect(c.choices[0]!.message.content).toBe("hi");
    expect(c.model).toBe("fake.gguf");
    expect(c.choices[0]!.finish_reason).toBe("stop");
    expect(c.usage).toMatchObject({ completion_tokens: 2, prompt_tokens: 3 });
  });

  it("bad options are ERR_INVALID_ARGUMENT naming the option", () => {
    const where = (f: () => unknown) => {
      try {
        f();
      } catch (error) {
        expect((error as LlamapegError).code).toBe("ERR_INVALID_ARGUMENT");
        return (error as LlamapegError).where;
      }
      throw new Error("expected a throw");
    };
    expect(where(() => connectLlamaServer([]))).toBe("urls");
    expect(where(() => connectLlamaServer(["ftp://x"]))).toBe("urls[0]");
    expect(where(() => connectLlamaServer(["a:1", "http://a:1"]))).toBe("urls");
    expect(where(() => connectLlamaServer({ urls: ["a:1"], strategy: "random" as never }))).toBe("strategy");
    expect(where(() => connectLlamaServer({ urls: ["a:1"], timeoutMs: 0 }))).toBe("timeoutMs");
    expect(where(() => connectLlamaServer({ urls: ["a:1"], retries: 3 } as never))).toBe("retries");
  });
});
