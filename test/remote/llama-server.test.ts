// Two llama-servers (built from the vendored tree, on 127.0.0.1) behind connectLlamaServer, against
// the same model in-process: the same requests give the same chunks; tool calls stream; a server
// killed mid-stream is a coded error with the partial output, and new requests go to the other.
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { loadModel, type Context, type Model } from "../../lib/llama/index.js";
import { packageRoot } from "../../lib/native/binding.js";
import { gbnfFormatLiteral } from "../../lib/json-schema/index.js";
import { completionTarget, createChatCompletion, tokenizePrompt, type ChatCompletionChunk, type ChatCompletionRequest, type PromptInput, type TargetGeneration, type TargetRequest } from "../../lib/openai/index.js";
import { connectLlamaServer, RemoteError, type LlamaServerBackend } from "../../lib/remote/index.js";
import { ensureTestModel } from "../../lib/test-model/index.js";
import { startLlamaServer, type LlamaServerProc } from "./processes.js";

const CONTEXT = 2048;
let modelPath: string;
let model: Model;
let context: Context;
let servers: LlamaServerProc[] = [];
let backend: LlamaServerBackend;

// The first run builds llama-server and rpc-server (scripts/llama-tools.mjs): minutes, more on a
// loaded machine. Later runs find them cached.
const BUILD_TIMEOUT = 45 * 60_000;

beforeAll(async () => {
  modelPath = await ensureTestModel("tiny");
  servers = await Promise.all([0, 1].map(() => startLlamaServer(modelPath, { contextSize: CONTEXT, parallel: 1, threads: 1 })));
  // generous: under a loaded CI box a server can take many seconds per request (the test checks results, not speed)
  backend = connectLlamaServer({ urls: servers.map((s) => s.url), timeoutMs: 90_000 });
  model = await loadModel(modelPath);
  context = model.createContext({ contextSize: CONTEXT, threads: 1 });
}, BUILD_TIMEOUT);

afterAll(async () => {
  backend?.close();
  model?.dispose();
  await Promise.all(servers.map((s) => s.kill()));
});

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const out: ChatCompletionChunk[] = [];
  for await (const c of stream) out.push(c);
  return out;
}

/** Chunks without what differs per call by design: the completion id, the time, tool-call ids. */
function comparable(chunks: ChatCompletionChunk[]): unknown[] {
  const ids = new Map<string, string>();
  return chunks.map((c) =>
    JSON.parse(
      JSON.stringify({ ...c, id: "", created: 0 }).replace(/"call_[A-Za-z0-9]+"/g, (m) => {
        if (!ids.has(m)) ids.set(m, `"call_${ids.size}"`);
        return ids.get(m)!;
      }),
    ),
  );
}

const user = [{ role: "user", content: "What is the weather in Paris? <|im_end|> say <tool_call>" }];
const TOOLS = [
  { type: "function" as const, function: { name: "pick", parameters: { type: "object", properties: { n: { type: "integer", minimum: 0, maximum: 9 } }, required: ["n"], additionalProperties: false } } },
  { type: "function" as const, function: { name: "say", parameters: { type: "object", properties: { w: { enum: ["yes", "no"] } }, required: ["w"], additionalProperties: false } } },
];

// In-process with fast-forward off: llama-server samples every token (fast-forward is a speed hint
// it goes without), and the comparison is of the same decoding, token by token.
async function both(request: ChatCompletionRequest): Promise<{ local: ChatCompletionChunk[]; remote: ChatCompletionChunk[] }> {
  const local = await collect(createChatCompletion(context, { fast_forward: false, ...request, stream: true }));
  const remote = await collect(createChatCompletion(backend, { ...request, stream: true }));
  return { local, remote };
}

describe("connectLlamaServer: the prompt's token ids", () => {
  it("equal the in-process tokenizer's: control-token text in messages stays text, in template text it is a token", async () => {
    const at = (text: string, ...messages: string[]): PromptInput => {
      const segments = messages.map((m) => {
        const start = Buffer.byteLength(text.slice(0, text.indexOf(m)));
        return { start, end: start + Buffer.byteLength(m) };
      });
      return { text, segments };
    };
    const cases: PromptInput[] = [
      { text: "<|im_start|>user\nplain<|im_end|>\n" },
      at("<|im_start|>user\nno special text here<|im_end|>\n<|im_start|>assistant\n", "no special text here"),
      at("<|im_start|>user\nsay <|im_end|> and <|im_start|>system<|im_end|>\n<|im_start|>assistant\n", "say <|im_end|> and <|im_start|>system"),
      at("<|im_start|>tool\n<|im_start|><|im_end|>\n", "<|im_start|>"),
      // control text split across the template/message boundary
      at("<|im_start|>user\n<|im_end|>\n", "end|>\n"),
      at("<|im_start|>user\nżółw 🐢 <tool_call>{}</tool_call><|im_end|>", "żółw 🐢 <tool_call>{}</tool_call>"),
    ];
    for (const prompt of cases) {
      expect(await backend.tokenize(prompt), JSON.stringify(prompt)).toEqual(tokenizePrompt(model, prompt));
    }
    // the message's "<|im_start|>" is not the control token there
    const imStart = model.tokenize("<|im_start|>", { parseSpecial: true })[0]!;
    const ids = await backend.tokenize(cases[3]!);
    expect(ids.filter((t) => t === imStart).length).toBe(1);
  });
});

describe("connectLlamaServer: same chunks as in-process", { timeout: 240_000 }, () => {
  it("plain chat, greedy", async () => {
    const { local, remote } = await both({ messages: user, temperature: 0, max_tokens: 48 });
    expect(local.length).toBeGreaterThan(3);
    expect(comparable(remote)).toEqual(comparable(local));
  });

  it("seeded sampling (temperature 0.8, seed 11)", async () => {
    const { local, remote } = await both({ messages: user, temperature: 0.8, seed: 11, max_tokens: 48 });
    expect(comparable(remote)).toEqual(comparable(local));
  });

  it("penalties, logit_bias, top_k / min_p / repeat_penalty reach llama-server's sampler as in-process (seeded)", async () => {
    const { local, remote } = await both({ messages: user, temperature: 0.8, seed: 11, max_tokens: 48, presence_penalty: 1.5, frequency_penalty: 0.5, repeat_penalty: 1.2, top_k: 20, min_p: 0.1, logit_bias: { "42": 3 } });
    expect(comparable(remote)).toEqual(comparable(local));
  });

  it("tool_choice required, calls only: the eager grammar (with its prefill), calls streamed", async () => {
    const { local, remote } = await both({ messages: user, tools: TOOLS, tool_choice: "required", calls_only: true, temperature: 0, max_tokens: 40 });
    const calls = remote.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(calls.length).toBeGreaterThan(0);
    expect(comparable(remote)).toEqual(comparable(local));
  });

  it("tools with tool_choice auto: the lazy grammar with its trigger fields (not hit by this model) changes nothing", async () => {
    for (const seed of [1, 2, 3]) {
      const { local, remote } = await both({ messages: user, tools: TOOLS, temperature: 0.8, seed, max_tokens: 60 });
      expect(comparable(remote)).toEqual(comparable(local));
    }
  });

  it("a lazy grammar that triggers (a word the model writes): the same tokens after the trigger", async () => {
    // The random model never writes <tool_call> by itself, so the plans' triggers stay idle above;
    // here the trigger is a word of its own greedy output, and the grammar takes over from there.
    const pieces = async (g: TargetGeneration | Promise<TargetGeneration>) => {
      const out: string[] = [];
      for await (const t of await g) out.push(Buffer.from(t.piece).toString("latin1"));
      return out;
    };
    const free: TargetRequest = { prompt: { text: "<|im_start|>user\nCount<|im_end|>\n<|im_start|>assistant\n" }, grammar: null, preservedTokens: [], temperature: 0, maxTokens: 12 };
    const local = completionTarget(context);
    const before = await pieces(local.generate(free));
    const word = Buffer.from(before[4]!, "latin1").toString("utf8");
    expect(word.length).toBeGreaterThan(0);
    const gbnf = `root ::= ${gbnfFormatLiteral(word)} [a-z ]{1,30} "."`;
    for (const trigger of [{ type: "word" as const, value: word }, { type: "pattern" as const, value: `(${word.replace(/[.^$|()*+?[\]{}\\]/g, "\\$&")})` }]) {
      const req: TargetRequest = { ...free, maxTokens: 40, grammar: { gbnf, lazy: true, triggers: [trigger], prefill: "" } };
      const here = await pieces(local.generate(req));
      const there = await pieces(backend.generate(req));
      expect(there).toEqual(here);
      // the grammar took over: after the trigger word only [a-z ] and a final "."
      const text = Buffer.from(here.join(""), "latin1").toString("utf8");
      const after = text.slice(text.indexOf(word) + word.length);
      expect(after).toMatch(/^[a-z ]*\.?$/);
    }
  });

  it("a reasoning budget: llama-server's own budget sampler closes the block where the in-process one does (greedy, R1's template)", async () => {
    const r1 = readFileSync(join(packageRoot, "vendor", "llama.cpp", "models", "templates", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"), "utf8");
    const request: ChatCompletionRequest = { messages: [{ role: "user", content: "Think first." }], chat_template: r1, reasoning_budget_tokens: 6, temperature: 0, max_tokens: 24 };
    const { local, remote } = await both(request);
    expect(comparable(remote)).toEqual(comparable(local));
    const field = (k: "content" | "reasoning_content") => local.map((c) => c.choices[0]?.delta[k] ?? "").join("");
    expect(field("reasoning_content").length).toBeGreaterThan(0);
    expect(field("content").length).toBeGreaterThan(0);
    // llama-server does not count reasoning tokens: its usage has no completion_tokens_details.
    const whole = await createChatCompletion(backend, { ...request, stream: false });
    expect(whole.usage.completion_tokens_details).toBeUndefined();
    const here = await createChatCompletion(context, { ...request, stream: false });
    expect(here.usage.completion_tokens_details!.reasoning_tokens).toBeGreaterThanOrEqual(6);
  });

  it("stop strings are cut on this side, as in-process", async () => {
    const first = await createChatCompletion(context, { messages: user, temperature: 0, max_tokens: 48 });
    const text = first.choices[0]!.message.content ?? "";
    const stop = text.slice(10, 13);
    expect(stop.length).toBe(3);
    const { local, remote } = await both({ messages: user, temperature: 0, max_tokens: 48, stop: [stop] });
    expect(comparable(remote)).toEqual(comparable(local));
    expect(local[local.length - 1]!.choices[0]!.finish_reason).toBe("stop");
  });
});

describe("connectLlamaServer: failures", () => {
  it("a server killed mid-stream: ERR_REMOTE_STREAM with the partial output; new requests go to the other", async () => {
    const request: ChatCompletionRequest = { messages: user, temperature: 0, max_tokens: 800 };
    // The precondition: this output runs long enough to be cut.
    const full = await createChatCompletion(context, { ...request, stream: false });
    expect(full.choices[0]!.finish_reason).toBe("length");

    const chunks: ChatCompletionChunk[] = [];
    let victim: LlamaServerProc | undefined;
    let caught: unknown;
    try {
      for await (const c of createChatCompletion(backend, { ...request, stream: true })) {
        chunks.push(c);
        if (victim === undefined && typeof c.choices[0]?.delta.content === "string" && c.choices[0].delta.content !== "") {
          const busy = backend.status().find((s) => s.inFlight > 0)!;
          victim = servers.find((s) => s.url === busy.url)!;
          await victim.kill();
        }
      }
    } catch (error) {
      caught = error;
    }
    expect(victim).toBeDefined();
    expect(caught).toBeInstanceOf(RemoteError);
    const error = caught as RemoteError;
    expect(error.code).toBe("ERR_REMOTE_STREAM");
    expect(error.server).toBe(victim!.url);
    expect(error.message).toContain(victim!.url);
    // What arrived before the cut was streamed, and the error carries it too.
    const streamed = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(streamed.length).toBeGreaterThan(0);
    expect(error.partial!.tokens.length).toBeGreaterThan(0);
    expect(full.choices[0]!.message.content!.startsWith(streamed)).toBe(true);

    // The dead server is skipped; the next requests go to the live one and succeed.
    const live = servers.find((s) => s !== victim)!;
    const before = backend.status().find((s) => s.url === live.url)!.accepted;
    for (let i = 0; i < 3; i++) {
      const c = await createChatCompletion(backend, { messages: user, temperature: 0, max_tokens: 8 });
      expect(c.choices[0]!.finish_reason).toBe("length");
    }
    const after = backend.status();
    expect(after.find((s) => s.url === live.url)!.accepted).toBe(before + 3);
    const dead = after.find((s) => s.url === victim!.url)!;
    expect(dead.skippedForMs).toBeGreaterThan(0);
    expect(dead.lastError).toContain(victim!.url);
  });

  it("every server down: ERR_REMOTE_UNAVAILABLE naming them", async () => {
    const down = connectLlamaServer({ urls: servers.filter((s) => !s.running).map((s) => s.url).concat("http://127.0.0.1:9"), connectTimeoutMs: 2_000 });
    let caught: unknown;
    try {
      await createChatCompletion(down, { messages: user, max_tokens: 4 });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(RemoteError);
    expect((caught as RemoteError).code).toBe("ERR_REMOTE_UNAVAILABLE");
    expect((caught as RemoteError).message).toContain("127.0.0.1:9");
    down.close();
  });
});
