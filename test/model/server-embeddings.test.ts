// POST /v1/embeddings (the official openai client's embeddings.create, float and base64) and
// POST /v1/rerank (llama-server's / Jina's shape) against `startServer` with an embedding context
// (issue 25): the vectors and scores are the in-process API's, the field contract holds (each
// field honoured, ignored by design, or a 400 naming it), the API key is required.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { EmbeddingContext, Model } from "../../lib/llama/index.js";
import { startServer, type LlamapegServer } from "../../lib/server/index.js";
import { loadTestModel } from "../support/models.js";
import { raw } from "./server-helpers.js";

const KEY = "sk-embeddings";
let model: Model;
let reranker: Model;
let embedder: EmbeddingContext;
let ranker: EmbeddingContext;
let server: LlamapegServer;
let rankServer: LlamapegServer;
let bare: LlamapegServer;
const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
const client = () => new OpenAI({ apiKey: KEY, baseURL: `${server.url}/v1`, maxRetries: 0 });
const post = async (s: LlamapegServer, path: string, body: unknown, h: Record<string, string> = headers) =>
  raw(`${s.url}${path}`, { method: "POST", headers: h, body: JSON.stringify(body) });

beforeAll(async () => {
  model = await loadTestModel();
  reranker = await loadTestModel("reranker");
  embedder = model.createEmbeddingContext({ threads: 1 });
  ranker = reranker.createEmbeddingContext({ threads: 1 });
  const slot = model.createContext({ contextSize: 512, threads: 1 });
  server = await startServer(slot, { port: 0, apiKey: KEY, modelId: "tiny", embeddings: embedder });
  rankServer = await startServer(slot, { port: 0, apiKey: KEY, modelId: "tiny", embeddings: ranker });
  bare = await startServer(slot, { port: 0, apiKey: KEY, modelId: "tiny" });
});

afterAll(async () => {
  await server?.close();
  await rankServer?.close();
  await bare?.close();
  model?.dispose();
  reranker?.dispose();
});

const texts = ["the cat sat", "a dog ran far away", "z"];
// Two decodes of the same batch may place it in other cache cells: equal up to float rounding.
function near(a: ArrayLike<number>, b: Float32Array): void {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < b.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  expect(m).toBeLessThan(1e-6);
}

describe("POST /v1/embeddings", () => {
  it("the openai client's embeddings.create (base64 on the wire, its default) and float equal the in-process vectors", async () => {
    const expected = await embedder.embed(texts);
    const viaClient = await client().embeddings.create({ model: "tiny", input: texts });
    expect(viaClient.object).toBe("list");
    expect(viaClient.model).toBe("tiny");
    expect(viaClient.data.map((d) => d.index)).toEqual([0, 1, 2]);
    const tokens = texts.reduce((n, t) => n + model.tokenize(t, { addSpecial: true, parseSpecial: true }).length, 0);
    expect(viaClient.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
    for (const [i, d] of viaClient.data.entries()) near(d.embedding, expected[i]!);
    const float = JSON.parse((await post(server, "/v1/embeddings", { input: texts[1], encoding_format: "float" })).body);
    expect(float.data.length).toBe(1);
    near(float.data[0].embedding, expected[1]!);
    const b64 = JSON.parse((await post(server, "/v1/embeddings", { input: [texts[2]], encoding_format: "base64" })).body);
    const bytes = Buffer.from(b64.data[0].embedding, "base64");
    near(new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)), expected[2]!);
  });

  it("token-id inputs (one list, or several) embed as their text", async () => {
    const ids = Array.from(model.tokenize(texts[0]!, { addSpecial: true, parseSpecial: true }));
    const [expected] = await embedder.embed([texts[0]!]);
    const one = JSON.parse((await post(server, "/embeddings", { input: ids, encoding_format: "float" })).body);
    expect(one.data.length).toBe(1);
    const many = JSON.parse((await post(server, "/v1/embeddings", { input: [ids, ids], encoding_format: "float" })).body);
    expect(many.data.length).toBe(2);
    for (const v of [one.data[0].embedding, many.data[1].embedding]) {
      const f = Float32Array.from(v as number[]);
      expect(Math.max(...f.map((x, i) => Math.abs(x - expected![i]!)))).toBeLessThan(1e-6);
    }
  });

  it("the field contract: bad or unsupported fields are a 400 naming them; `user` is ignored by design", async () => {
    const cases: [unknown, string][] = [
      [{ input: "" }, "input"],
      [{ input: [] }, "input"],
      [{ input: ["ok", ""] }, "input[1]"],
      [{ input: ["ok", 3] }, "input[1]"],
      [{ input: [[1, model.vocabSize]] }, "input[0]"],
      [{ input: "x", encoding_format: "int8" }, "encoding_format"],
      [{ input: "x", dimensions: 32 }, "dimensions"],
      [{ input: "x", temperature: 1 }, "temperature"],
      [{ input: "word ".repeat(600) }, "input[0]"],
    ];
    for (const [body, param] of cases) {
      const r = await post(server, "/v1/embeddings", body);
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(JSON.parse(r.body).error.param, JSON.stringify(body).slice(0, 80)).toBe(param);
    }
    expect(JSON.parse((await post(server, "/v1/embeddings", { input: "word ".repeat(600) })).body).error.code).toBe("context_length_exceeded");
    expect((await post(server, "/v1/embeddings", { input: "x", user: "u-1" })).status).toBe(200);
  });

  it("the API key is required; without an embedding context, or on a reranker, 501", async () => {
    expect((await post(server, "/v1/embeddings", { input: "x" }, { "content-type": "application/json" })).status).toBe(401);
    expect((await post(server, "/v1/embeddings", { input: "x" }, { ...headers, authorization: "Bearer wrong" })).status).toBe(401);
    expect((await post(bare, "/v1/embeddings", { input: "x" })).status).toBe(501);
    expect((await post(rankServer, "/v1/embeddings", { input: "x" })).status).toBe(501);
  });
});

describe("POST /v1/rerank", () => {
  it("results best first with index and relevance_score, cut at top_n; the scores are rank()'s", async () => {
    const query = "where is the cat";
    const documents = ["the cat is on the mat", "stocks fell", "cats like boxes", "rain"];
    const scores = await ranker.rank(query, documents);
    const r = await post(rankServer, "/v1/rerank", { model: "m", query, documents, top_n: 3 });
    expect(r.status).toBe(200);
    const body = JSON.parse(r.body);
    expect(body.model).toBe("m");
    expect(body.object).toBe("list");
    expect(body.results.length).toBe(3);
    const order = scores.map((s, i) => [s, i] as const).sort((a, b) => b[0] - a[0]).map(([, i]) => i);
    expect(body.results.map((x: { index: number }) => x.index)).toEqual(order.slice(0, 3));
    for (const x of body.results) expect(x.relevance_score).toBeCloseTo(scores[x.index]!, 6);
    expect(body.usage.prompt_tokens).toBeGreaterThan(documents.length);
    const all = JSON.parse((await post(rankServer, "/rerank", { query, documents, return_documents: true })).body);
    expect(all.results.length).toBe(4);
    expect(all.results[0].document.text).toBe(documents[all.results[0].index]);
  });

  it("the field contract and the 501 without a reranker", async () => {
    const cases: [unknown, string][] = [
      [{ documents: ["a"] }, "query"],
      [{ query: "q", documents: [] }, "documents"],
      [{ query: "q", documents: ["a", 2] }, "documents[1]"],
      [{ query: "q", documents: ["a"], top_n: 0 }, "top_n"],
      [{ query: "q", documents: ["a"], return_documents: "yes" }, "return_documents"],
      [{ query: "q", documents: ["a"], texts: ["a"] }, "texts"],
      [{ query: "q".repeat(2000), documents: ["a"] }, "documents[0]"],
    ];
    for (const [body, param] of cases) {
      const r = await post(rankServer, "/v1/rerank", body);
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(JSON.parse(r.body).error.param, JSON.stringify(body).slice(0, 80)).toBe(param);
    }
    expect((await post(rankServer, "/v1/rerank", { query: "q", documents: ["a"] }, { "content-type": "application/json" })).status).toBe(401);
    expect((await post(server, "/v1/rerank", { query: "q", documents: ["a"] })).status).toBe(501);
    expect((await post(bare, "/v1/rerank", { query: "q", documents: ["a"] })).status).toBe(501);
  });
});
