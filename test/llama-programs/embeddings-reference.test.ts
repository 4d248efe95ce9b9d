// Embeddings equal llama.cpp's own (issue 25): the vendored `llama-embedding` example, built with
// llama-server by scripts/llama-tools.mjs (npm test's second phase), on the same test model for each pooling type (mean, cls, last) and
// for a reranker's rank scores, within float tolerance (it prints 7 decimals).
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { loadModel, type Model } from "../../lib/llama/index.js";
import { ensureLlamaTools } from "../../scripts/llama-tools.mjs";
import { testModelPath } from "../support/models.js";

const run = promisify(execFile);
const texts = ["hello world", "the cat sat on the mat", "<|im_start|>user\nembed me<|im_end|>", "x"];
let binary: string;
let qwenPath: string;
let rerankerPath: string;
let qwen: Model;
let reranker: Model;

beforeAll(async () => {
  binary = (await ensureLlamaTools()).llamaEmbedding;
  qwenPath = await testModelPath();
  rerankerPath = await testModelPath("reranker");
  qwen = await loadModel(qwenPath);
  reranker = await loadModel(rerankerPath);
});

afterAll(() => {
  qwen?.dispose();
  reranker?.dispose();
});

/** llama-embedding's vectors ("array" output: one JSON array per prompt), one prompt per text. */
async function reference(model: string, prompts: string[], pooling: string): Promise<number[][]> {
  const args = ["-m", model, "-p", prompts.join("<#>"), "--embd-separator", "<#>", "--pooling", pooling];
  // rank: the example normalises n_embd floats of the n_cls_out it got; -1 leaves the scores as they are
  if (pooling === "rank") args.push("--embd-normalize", "-1");
  args.push("-c", "512", "-b", "512", "-ub", "512", "-t", "1", "--embd-output-format", "array");
  const { stdout } = await run(binary, args, { maxBuffer: 1 << 24 });
  // With rank pooling it prints n_embd floats of the n_cls_out it computed: the rest is memory it
  // never wrote, which now and then holds a NaN or an infinity ("-nan", "inf"), not JSON. Those
  // floats are not compared; they are read as null.
  const text = stdout.slice(stdout.indexOf("[")).replace(/-?(?:nan|inf(?:inity)?)(?:\([^)]*\))?/gi, "null");
  return JSON.parse(text) as number[][];
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describe("embeddings equal llama-embedding's", () => {
  it("mean, cls and last pooling, four texts in one decode, euclidean-normalised", async () => {
    const poolings = ["mean", "cls", "last"] as const;
    const refs = await Promise.all(poolings.map((p) => reference(qwenPath, texts, p)));
    for (const [k, pooling] of poolings.entries()) {
      const ctx = qwen.createEmbeddingContext({ pooling, threads: 1 });
      // the first decode runs the whole graph (it checks that the final norm is what llama.cpp
      // hands out); later ones stop after that norm: both must equal llama-embedding's vectors
      const first = await ctx.embedWithUsage(texts);
      const later = await ctx.embedWithUsage(texts);
      ctx.dispose();
      expect([first.decodes, first.shortDecodes, later.decodes, later.shortDecodes]).toEqual([1, 0, 1, 1]);
      expect(refs[k]!.length).toBe(texts.length);
      for (const { embeddings } of [first, later]) {
        for (const [i, e] of embeddings.entries()) expect(maxDiff(e, refs[k]![i]!), `${pooling} text ${i}`).toBeLessThan(2e-6);
      }
    }
    // the poolings differ from each other (the comparison is not of one vector three times)
    expect(maxDiff(refs[0]![1]!, refs[2]![1]!)).toBeGreaterThan(1e-2);
  });

  it("a reranker's rank scores (the rerank template, softmaxed yes/no head)", async () => {
    const query = "what does the cat do";
    const documents = ["the cat sits on the mat", "stock prices fell", "cats sleep a lot"];
    const ref = await reference(rerankerPath, documents.map((d) => `${query}\t${d}`), "rank");
    const ctx = reranker.createEmbeddingContext({ threads: 1 });
    expect(ctx.pooling).toBe("rank");
    const scores = await ctx.rank(query, documents);
    ctx.dispose();
    expect(scores.length).toBe(documents.length);
    for (const [i, s] of scores.entries()) {
      // the row's first two floats are the yes / no probabilities (the rest of the row is padding)
      expect(ref[i]![0]! + ref[i]![1]!).toBeCloseTo(1, 5);
      expect(Math.abs(s - ref[i]![0]!), `document ${i}`).toBeLessThan(2e-6);
    }
    expect(new Set(scores.map((s) => s.toFixed(4))).size, "scores vary by document").toBeGreaterThan(1);
  });

  it("a hybrid and a sliding-window model stop after the norm too; a model with a dense layer after it falls back; graph \"reference\" runs llama.cpp's whole graph", async () => {
    const cases = [
      { variant: "lfm2", graph: "short", short: 1 },
      { variant: "gemma3", graph: "short", short: 1 },
      // llama.cpp hands out the dense layer's output, not the norm's: the probe sees it and the
      // context is made again with llama.cpp's pooling (no decode stops early)
      { variant: "lfm2Dense", graph: "short", short: 0 },
      { variant: "qwen2", graph: "reference", short: 0 },
    ] as const;
    for (const c of cases) {
      const path = await testModelPath(c.variant);
      const ref = await reference(path, texts, "mean");
      const model = await loadModel(path);
      try {
        const ctx = model.createEmbeddingContext({ pooling: "mean", threads: 1, graph: c.graph });
        const first = await ctx.embedWithUsage(texts);
        const later = await ctx.embedWithUsage(texts);
        ctx.dispose();
        expect([first.decodes, first.shortDecodes, later.decodes, later.shortDecodes], `${c.variant} ${c.graph}`).toEqual([1, 0, 1, c.short]);
        for (const { embeddings } of [first, later]) {
          for (const [i, e] of embeddings.entries()) expect(maxDiff(e, ref[i]!), `${c.variant} ${c.graph} text ${i}`).toBeLessThan(2e-6);
        }
      } finally {
        model.dispose();
      }
    }
  });
});
