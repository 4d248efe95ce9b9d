// The AI SDK provider's embeddingModel and rerankingModel (issue 25) through the `ai` package's
// own embed / embedMany / rerank: the vectors and scores are the EmbeddingContext's.
import { NoSuchModelError } from "@ai-sdk/provider";
import { embed, embedMany, rerank } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { createLlamapeg } from "../../lib/ai-sdk/index.js";
import type { Context, EmbeddingContext, Model } from "../../lib/llama/index.js";
import { loadTestModel } from "../support/models.js";

let model: Model;
let reranker: Model;
let context: Context;
let embedder: EmbeddingContext;
let ranker: EmbeddingContext;

beforeAll(async () => {
  model = await loadTestModel();
  reranker = await loadTestModel("reranker");
  context = model.createContext({ contextSize: 256, threads: 1 });
  embedder = model.createEmbeddingContext({ threads: 1 });
  ranker = reranker.createEmbeddingContext({ threads: 1 });
});

afterAll(() => {
  model?.dispose();
  reranker?.dispose();
});

function near(a: number[], b: Float32Array): void {
  expect(a.length).toBe(b.length);
  expect(Math.max(...a.map((x, i) => Math.abs(x - b[i]!)))).toBeLessThan(1e-6);
}

describe("AI SDK embeddingModel / rerankingModel", () => {
  it("embed and embedMany return the context's vectors and token usage", async () => {
    const llamapeg = createLlamapeg({ context, embeddings: embedder });
    const values = ["sunny day", "rainy night", "a"];
    const expected = await embedder.embed(values);
    const one = await embed({ model: llamapeg.embeddingModel("e"), value: values[0]! });
    near(one.embedding, expected[0]!);
    const many = await embedMany({ model: llamapeg.embeddingModel("e"), values });
    expect(many.embeddings.length).toBe(3);
    for (const [i, e] of many.embeddings.entries()) near(e, expected[i]!);
    const tokens = values.reduce((n, v) => n + model.tokenize(v, { addSpecial: true, parseSpecial: true }).length, 0);
    expect(many.usage.tokens).toBe(tokens);
    expect(() => llamapeg.rerankingModel("r")).toThrow(NoSuchModelError);
  });

  it("rerank orders the documents by the reranker's scores, cut at topN", async () => {
    const llamapeg = createLlamapeg({ context, embeddings: ranker });
    const documents = ["the cat naps", "bond yields", "a cat and a dog", "weather"];
    const scores = await ranker.rank("cats", documents);
    const r = await rerank({ model: llamapeg.rerankingModel("r"), query: "cats", documents, topN: 2 });
    const order = scores.map((s, i) => [s, i] as const).sort((a, b) => b[0] - a[0]).map(([, i]) => i);
    expect(r.ranking.map((x) => x.originalIndex)).toEqual(order.slice(0, 2));
    expect(r.ranking[0]!.document).toBe(documents[order[0]!]);
    expect(r.ranking[0]!.score).toBeCloseTo(scores[order[0]!]!, 6);
    expect(() => llamapeg.embeddingModel("e")).toThrow(NoSuchModelError);
    expect(() => createLlamapeg({ context, embeddings: {} as never })).toThrow(/EmbeddingContext/);
  });
});
