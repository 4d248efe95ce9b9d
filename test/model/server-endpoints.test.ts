// POST /v1/completions (the openai client's legacy completions), POST /tokenize and /detokenize
// (llama-server's shapes), and GET /metrics (Prometheus text) against `startServer` with the tiny model.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { Context, Model, Sequence } from "../../lib/llama/index.js";
import { startServer, type LlamapegServer } from "../../lib/server/index.js";
import { loadTestModel } from "../support/models.js";
import { raw } from "./server-helpers.js";

const KEY = "sk-endpoints";
let model: Model;
let slots: Sequence[];
let reference: Context;
let server: LlamapegServer;
const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
const client = () => new OpenAI({ apiKey: KEY, baseURL: `${server.url}/v1`, maxRetries: 0 });
const post = async (path: string, body: unknown) => raw(`${server.url}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
const decoder = new TextDecoder();

beforeAll(async () => {
  model = await loadTestModel();
  const shared = model.createContext({ contextSize: 2048, sequences: 2, threads: 1 });
  slots = [shared.getSequence(), shared.getSequence()];
  reference = model.createContext({ contextSize: 2048, threads: 1 });
  server = await startServer(slots, { port: 0, apiKey: KEY, modelId: "tiny" });
});

afterAll(async () => {
  await server?.close();
  model?.dispose();
});

async function referenceText(prompt: string, maxTokens: number): Promise<string> {
  const ids = model.tokenize(prompt, { addSpecial: true, parseSpecial: true });
  const bytes: number[] = [];
  for await (const t of reference.generate(ids, { maxTokens, temperature: 0 })) bytes.push(...t.piece);
  return decoder.decode(new Uint8Array(bytes));
}

describe("POST /v1/completions", () => {
  it("the text is what the model generates from the raw prompt (special tokens parsed, no template); stream equals whole", async () => {
    const prompt = "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n";
    const expected = await referenceText(prompt, 12);
    const whole = await client().completions.create({ model: "tiny", prompt, max_tokens: 12, temperature: 0 });
    expect(whole.object).toBe("text_completion");
    expect(whole.choices[0]!.text).toBe(expected);
    expect(whole.choices[0]!.finish_reason).toBe("length");
    expect(whole.usage?.completion_tokens).toBe(12);
    expect(whole.usage?.prompt_tokens).toBe(model.tokenize(prompt, { addSpecial: true, parseSpecial: true }).length);
    let streamed = "";
    let finish: string | null = null;
    for await (const c of await client().completions.create({ model: "tiny", prompt, max_tokens: 12, temperature: 0, stream: true })) {
      streamed += c.choices[0]?.text ?? "";
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    expect(streamed).toBe(expected);
    expect(finish).toBe("length");
  });

  it("stop strings cut the text (finish_reason stop); echo prepends the prompt; the default max_tokens is 16", async () => {
    const prompt = "Once upon a time";
    const free = await client().completions.create({ model: "tiny", prompt, temperature: 0 });
    expect(free.usage?.completion_tokens).toBe(16);
    const text = free.choices[0]!.text;
    expect(text.length).toBeGreaterThan(6);
    const stop = text.slice(3, 6);
    const cut = await client().completions.create({ model: "tiny", prompt, temperature: 0, stop: [stop], echo: true });
    expect(cut.choices[0]!.text).toBe(prompt + text.slice(0, text.indexOf(stop)));
    expect(cut.choices[0]!.finish_reason).toBe("stop");
  });

  it("the field contract: 400s name the field", async () => {
    const bad = async (body: Record<string, unknown>) => (await client().completions.create({ model: "tiny", prompt: "x", max_tokens: 1, ...body } as never).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.BadRequestError>;
    expect((await bad({ suffix: "y" })).param).toBe("suffix");
    expect((await bad({ n: 2 })).param).toBe("n");
    expect((await bad({ frobnicate: 1 })).param).toBe("frobnicate");
    expect((await bad({ temperature: 9 })).param).toBe("temperature");
    expect((await bad({ prompt: [1, 2, 3] })).param).toBe("prompt");
  });
});

describe("POST /tokenize, /detokenize", () => {
  it("tokens as the model's tokenizer gives them; pieces; detokenize inverts", async () => {
    const content = "Hello <|im_start|> wörld";
    const r = JSON.parse((await post("/tokenize", { content })).body) as { tokens: number[] };
    expect(r.tokens).toEqual(Array.from(model.tokenize(content, { addSpecial: false, parseSpecial: true })));
    const plain = JSON.parse((await post("/tokenize", { content, parse_special: false, add_special: true })).body) as { tokens: number[] };
    expect(plain.tokens).toEqual(Array.from(model.tokenize(content, { addSpecial: true, parseSpecial: false })));
    const pieces = JSON.parse((await post("/tokenize", { content, with_pieces: true })).body) as { tokens: { id: number; piece: string | number[] }[] };
    expect(pieces.tokens.map((t) => t.id)).toEqual(r.tokens);
    expect(pieces.tokens.map((t) => (typeof t.piece === "string" ? t.piece : "?")).join("")).toBe(content);
    const back = JSON.parse((await post("/detokenize", { tokens: r.tokens })).body) as { content: string };
    expect(back.content).toBe(content);
  });

  it("bad input is a 400 naming the field", async () => {
    const a = await post("/tokenize", { content: 5 });
    expect(a.status).toBe(400);
    expect(JSON.parse(a.body).error.param).toBe("content");
    const b = await post("/detokenize", { tokens: [1, model.vocabSize] });
    expect(b.status).toBe(400);
    expect(JSON.parse(b.body).error.param).toBe("tokens[1]");
    expect((await raw(`${server.url}/tokenize`, { method: "POST", body: "{}" })).status).toBe(401);
  });
});

describe("GET /metrics", () => {
  it("Prometheus text whose counters move with the requests served", async () => {
    const read = async () => {
      const r = await raw(`${server.url}/metrics`, { headers });
      expect(r.status).toBe(200);
      expect(r.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
      const values = new Map<string, number>();
      for (const line of r.body.split("\n")) {
        if (line === "" || line.startsWith("#")) continue;
        const m = /^([a-z_]+(?:\{[^}]*\})?) (\S+)$/.exec(line);
        expect(m, line).not.toBeNull();
        values.set(m![1]!, Number(m![2]));
      }
      return values;
    };
    const before = await read();
    await client().chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "hi" }], max_tokens: 5, temperature: 0 });
    const c = await client().completions.create({ model: "tiny", prompt: "x", max_tokens: 3, temperature: 0 });
    const after = await read();
    const delta = (k: string) => (after.get(k) ?? 0) - (before.get(k) ?? 0);
    expect(delta("llamapeg_generated_tokens_total")).toBe(5 + c.usage!.completion_tokens);
    expect(delta("llamapeg_generations_total")).toBe(2);
    expect(delta("llamapeg_prompt_tokens_total")).toBeGreaterThan(0);
    expect(delta('llamapeg_requests_total{route="/v1/chat/completions",status="200"}')).toBe(1);
    expect(delta('llamapeg_requests_total{route="/v1/completions",status="200"}')).toBe(1);
    expect(after.get("llamapeg_slots")).toBe(2);
    expect(after.get("llamapeg_slots_idle")).toBe(2);
    expect(after.get("llamapeg_generations_running")).toBe(0);
    expect(after.get("llamapeg_requests_queued")).toBe(0);
  });
});
