// Embedding contexts (issue 25): pooled vectors per input, several inputs per decode, the
// normalisations of llama.cpp's --embd-normalize, token-count limits and bad input refused with
// coded errors before any decode, reranking on a reranker test model. Equality with llama.cpp's
// own llama-embedding: embeddings-reference.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { loadModel, type Model } from "../../lib/llama/index.js";
import { loadTestModel } from "../support/models.js";
import { codeOf } from "./helpers.js";

let qwen: Model;
let reranker: Model;
const texts = ["alpha beta", "the quick brown fox jumps", "x", "a somewhat longer text with more words in it", "delta"];

beforeAll(async () => {
  qwen = await loadTestModel();
  reranker = await loadTestModel("reranker");
});

afterAll(() => {
  qwen?.dispose();
  reranker?.dispose();
});

const norm = (v: Float32Array, p = 2) => Math.pow(v.reduce((s, x) => s + Math.pow(Math.abs(x), p), 0), 1 / p);
function close(a: Float32Array, b: Float32Array, tolerance = 1e-6): void {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  expect(m).toBeLessThan(tolerance);
}

/** Decodes greedy packing takes: whole inputs while tokens and sequences fit (batch_decode's rule). */
function packs(lengths: number[], batch: number, seqs: number): number {
  let decodes = 0;
  let tokens = Infinity;
  let n = 0;
  for (const l of lengths) {
    if (tokens + l > batch || n >= seqs) {
      decodes++;
      tokens = 0;
      n = 0;
    }
    tokens += l;
    n++;
  }
  return decodes;
}

describe("EmbeddingContext", () => {
  it("defaults: the model's pooling or mean, 64 inputs per decode, unit vectors of the model's width", async () => {
    const ctx = qwen.createEmbeddingContext({ threads: 1 });
    expect(ctx.pooling).toBe("mean"); // qwen2 declares no pooling
    expect(ctx.dimensions).toBe(64);
    expect(ctx.sequences).toBe(64);
    expect(ctx.contextSize).toBe(512);
    const out = await ctx.embed(texts);
    expect(out.length).toBe(texts.length);
    for (const v of out) expect(norm(v)).toBeCloseTo(1, 5);
    ctx.dispose();
    const rank = reranker.createEmbeddingContext({ threads: 1 });
    expect(rank.pooling).toBe("rank");
    expect(rank.dimensions).toBe(2);
    rank.dispose();
  });

  it("N inputs batched equal N single calls, however the decodes are split", async () => {
    const single = qwen.createEmbeddingContext({ threads: 1 });
    const one: Float32Array[] = [];
    for (const t of texts) one.push((await single.embed([t]))[0]!);
    single.dispose();
    const expected = [1, 3, 2, 2];
    const configs: { sequences?: number; contextSize?: number; batchSize?: number }[] = [{}, { sequences: 2 }, { contextSize: 16, batchSize: 16 }, { contextSize: 12, batchSize: 12, sequences: 64 }];
    for (const options of configs) {
      const ctx = qwen.createEmbeddingContext({ threads: 1, ...options });
      const r = await ctx.embedWithUsage(texts);
      ctx.dispose();
      expect(r.decodes, JSON.stringify(options)).toBe(packs(r.tokens, ctx.batchSize, ctx.sequences));
      expect(r.decodes, JSON.stringify(r.tokens)).toBe(expected.shift());
      // more sequences than batch tokens would make llama.cpp assert: capped at batchSize
      expect(ctx.sequences).toBe(Math.min(options.sequences ?? 64, ctx.batchSize));
      expect(r.tokens).toEqual(texts.map((t) => qwen.tokenize(t, { addSpecial: true, parseSpecial: true }).length));
      // other batch shapes sum in another order: a few ulps of the [-1, 1] range
      for (const [i, v] of r.embeddings.entries()) close(v, one[i]!, 1e-5);
    }
  });

  it("token arrays embed as their text does; pooling types give different vectors", async () => {
    const mean = qwen.createEmbeddingContext({ threads: 1, pooling: "mean" });
    const last = qwen.createEmbeddingContext({ threads: 1, pooling: "last" });
    const ids = Array.from(qwen.tokenize(texts[1]!, { addSpecial: true, parseSpecial: true }));
    const [fromText, fromIds] = await mean.embed([texts[1]!, ids]);
    close(fromText!, fromIds!);
    const [l] = await last.embed([texts[1]!]);
    expect(Math.max(...l!.map((x, i) => Math.abs(x - fromText![i]!)))).toBeGreaterThan(1e-2);
    mean.dispose();
    last.dispose();
  });

  it("normalisations: none, euclidean, taxicab, max-abs (int16 range), p-norm", async () => {
    const vectors: Record<string, Float32Array> = {};
    for (const normalize of ["none", "euclidean", "taxicab", "max-abs", 3] as const) {
      const ctx = qwen.createEmbeddingContext({ threads: 1, normalize });
      vectors[String(normalize)] = (await ctx.embed([texts[3]!]))[0]!;
      ctx.dispose();
    }
    const raw = vectors.none!;
    expect(norm(raw)).not.toBeCloseTo(1, 2);
    expect(norm(vectors.euclidean!)).toBeCloseTo(1, 5);
    expect(norm(vectors.taxicab!, 1)).toBeCloseTo(1, 5);
    expect(Math.max(...vectors["max-abs"]!.map(Math.abs))).toBeCloseTo(32760, 1);
    expect(norm(vectors["3"]!, 3)).toBeCloseTo(1, 5);
    // each is the raw vector scaled
    const scale = vectors.euclidean![0]! / raw[0]!;
    close(vectors.euclidean!, raw.map((x) => x * scale), 1e-6);
  });

  it("refuses bad input with coded errors before decoding, and keeps working after", async () => {
    const ctx = qwen.createEmbeddingContext({ threads: 1, contextSize: 8, batchSize: 8 });
    const long = "one two three four five six seven eight nine ten";
    const tooLong = await codeOf(() => ctx.embed(["fine", long]));
    expect(tooLong.code).toBe("ERR_CONTEXT_FULL");
    expect(tooLong.where).toBe("inputs[1]");
    expect((await codeOf(() => ctx.embed(["ok", ""]))).code).toBe("ERR_INVALID_ARGUMENT");
    expect((await codeOf(() => ctx.embed([[1, 2, qwen.vocabSize]]))).code).toBe("ERR_INVALID_ARGUMENT");
    expect((await codeOf(() => ctx.embed([[1.5]]))).code).toBe("ERR_INVALID_ARGUMENT");
    expect((await codeOf(() => ctx.embed("text" as never))).code).toBe("ERR_INVALID_ARGUMENT");
    expect((await codeOf(() => ctx.embed([42 as never]))).code).toBe("ERR_INVALID_ARGUMENT");
    expect((await codeOf(() => ctx.rank("q", ["d"]))).code).toBe("ERR_MODEL_UNSUPPORTED");
    expect(await ctx.embed([])).toEqual([]);
    expect((await ctx.embed(["still works"])).length).toBe(1);
    ctx.dispose();
    expect((await codeOf(() => ctx.embed(["x"]))).code).toBe("ERR_DISPOSED");
  });

  it("refuses bad options with coded errors", async () => {
    expect((await codeOf(() => qwen.createEmbeddingContext({ pooling: "rank" }))).code).toBe("ERR_MODEL_UNSUPPORTED");
    expect((await codeOf(() => qwen.createEmbeddingContext({ pooling: "none" as never }))).code).toBe("ERR_INVALID_ARGUMENT");
    expect((await codeOf(() => qwen.createEmbeddingContext({ normalize: 1.5 }))).code).toBe("ERR_INVALID_ARGUMENT");
    expect((await codeOf(() => qwen.createEmbeddingContext({ contextSize: 64, batchSize: 32 }))).code).toBe("ERR_INVALID_ARGUMENT");
    expect((await codeOf(() => qwen.createEmbeddingContext({ sequences: 257 }))).code).toBe("ERR_INVALID_ARGUMENT");
    expect((await codeOf(() => qwen.createEmbeddingContext({ size: 1 } as never))).code).toBe("ERR_INVALID_ARGUMENT");
    expect((await codeOf(() => qwen.createEmbeddingContext({ graph: "fast" as never }))).code).toBe("ERR_INVALID_ARGUMENT");
    const vocabOnly = await loadModel(qwen.path, { vocabOnly: true });
    expect((await codeOf(() => vocabOnly.createEmbeddingContext())).code).toBe("ERR_CONTEXT_CREATE");
    vocabOnly.dispose();
  });

  it("concurrent embed() calls each get their own vectors; dispose() with the model", async () => {
    const model = await loadModel(qwen.path);
    const ctx = model.createEmbeddingContext({ threads: 1 });
    const [a, b, c] = await Promise.all([ctx.embed([texts[0]!]), ctx.embed([texts[1]!, texts[2]!]), ctx.embed([texts[0]!])]);
    close(a![0]!, c![0]!);
    expect(b!.length).toBe(2);
    model.dispose();
    expect(ctx.disposed).toBe(true);
    expect((await codeOf(() => ctx.embed(["x"]))).code).toBe("ERR_DISPOSED");
  });
});

describe("rank", () => {
  it("scores each document, batched equal to one at a time; embed() on a rank context is refused", async () => {
    const ctx = reranker.createEmbeddingContext({ threads: 1 });
    const docs = ["cats purr", "the market is up", "a cat on a mat", "rain tomorrow"];
    const r = await ctx.rankWithUsage("where is the cat", docs);
    expect(r.decodes).toBe(1);
    expect(r.scores.length).toBe(4);
    for (const s of r.scores) expect(s > 0 && s < 1).toBe(true); // softmaxed
    // one at a time: the same up to the F16 cache's rounding in other batch shapes
    for (const [i, d] of docs.entries()) expect(Math.abs((await ctx.rank("where is the cat", [d]))[0]! - r.scores[i]!)).toBeLessThan(2e-4);
    expect(Math.max(...r.scores) - Math.min(...r.scores), JSON.stringify(r.scores)).toBeGreaterThan(1e-2);
    // the template's tokens: query and document both in the prompt
    const template = reranker.chatTemplate("rerank")!;
    expect(r.tokens[0]).toBe(reranker.tokenize(template.replace("{query}", "where is the cat").replace("{document}", docs[0]!), { parseSpecial: true }).length);
    expect((await codeOf(() => ctx.embed(["x"]))).code).toBe("ERR_INVALID_ARGUMENT");
    expect((await codeOf(() => ctx.rank("q", [3 as never]))).code).toBe("ERR_INVALID_ARGUMENT");
    expect(await ctx.rank("q", [])).toEqual([]);
    ctx.dispose();
    // the reranker also embeds with another pooling
    const emb = reranker.createEmbeddingContext({ threads: 1, pooling: "last" });
    expect((await emb.embed(["x"]))[0]!.length).toBe(64);
    emb.dispose();
  });
});

describe("lifetime", () => {
  it("dispose() while an embed() runs rejects it with ERR_DISPOSED (no crash); the next call is refused too", async () => {
    const ctx = qwen.createEmbeddingContext({ threads: 1 });
    const many = Array.from({ length: 64 }, (_, i) => `text number ${i} with a few words`);
    const running = ctx.embed(many);
    ctx.dispose();
    const settled = await running.then(
      (v) => ({ ok: true as const, n: v.length }),
      (e: { code?: string }) => ({ ok: false as const, code: e.code }),
    );
    // the decode may finish before the stop is seen; either way the promise settles
    if (settled.ok) expect(settled.n).toBe(64);
    else expect(settled.code).toBe("ERR_DISPOSED");
    expect((await codeOf(() => ctx.embed(["x"]))).code).toBe("ERR_DISPOSED");
  });
});
