/**
 * The AI SDK's embedding and reranking models (EmbeddingModelV4 / RerankingModelV4) on an
 * `EmbeddingContext`: `embed` / `embedMany` call embedWithUsage, `rerank` calls rankWithUsage
 * (ranking best first, cut at topN), in process.
 */
import { TooManyEmbeddingValuesForCallError, type EmbeddingModelV4, type EmbeddingModelV4CallOptions, type EmbeddingModelV4Result, type RerankingModelV4, type RerankingModelV4CallOptions, type RerankingModelV4Result, type SharedV4Warning } from "@ai-sdk/provider";

import { LlamapegError } from "../errors.js";
import type { EmbeddingContext } from "../llama/embedding.js";

function checkAbort(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new LlamapegError("ERR_ABORTED", "aborted");
}

export class LlamapegEmbeddingModel implements EmbeddingModelV4 {
  readonly specificationVersion = "v4" as const;
  readonly provider = "llamapeg";
  readonly modelId: string;
  /** One call embeds any number of values (split into decodes natively). */
  readonly maxEmbeddingsPerCall = 2048;
  /** Calls queue on the context's lock: parallel calls gain nothing. */
  readonly supportsParallelCalls = false;
  readonly #context: EmbeddingContext;

  constructor(context: EmbeddingContext, modelId: string) {
    this.#context = context;
    this.modelId = modelId;
  }

  async doEmbed(options: EmbeddingModelV4CallOptions): Promise<EmbeddingModelV4Result> {
    checkAbort(options.abortSignal);
    if (options.values.length > this.maxEmbeddingsPerCall) {
      throw new TooManyEmbeddingValuesForCallError({ provider: this.provider, modelId: this.modelId, maxEmbeddingsPerCall: this.maxEmbeddingsPerCall, values: options.values });
    }
    const warnings: SharedV4Warning[] = [];
    if (options.dimensions !== undefined && options.dimensions !== this.#context.dimensions) {
      warnings.push({ type: "unsupported", feature: "dimensions", details: `vectors have the model's width (${this.#context.dimensions})` });
    }
    const r = await this.#context.embedWithUsage(options.values);
    return { embeddings: r.embeddings.map((v) => Array.from(v)), usage: { tokens: r.tokens.reduce((a, b) => a + b, 0) }, warnings };
  }
}

export class LlamapegRerankingModel implements RerankingModelV4 {
  readonly specificationVersion = "v4" as const;
  readonly provider = "llamapeg";
  readonly modelId: string;
  readonly #context: EmbeddingContext;

  constructor(context: EmbeddingContext, modelId: string) {
    this.#context = context;
    this.modelId = modelId;
  }

  async doRerank(options: RerankingModelV4CallOptions): Promise<RerankingModelV4Result> {
    checkAbort(options.abortSignal);
    const warnings: SharedV4Warning[] = [];
    const docs =
      options.documents.type === "text"
        ? options.documents.values
        : options.documents.values.map((v) => {
            warnings.push({ type: "compatibility", feature: "object documents", details: "ranked as their JSON text" });
            return JSON.stringify(v);
          });
    const r = await this.#context.rankWithUsage(options.query, docs);
    const ranking = r.scores
      .map((relevanceScore, index) => ({ index, relevanceScore }))
      .sort((a, b) => b.relevanceScore - a.relevanceScore || a.index - b.index)
      .slice(0, options.topN ?? r.scores.length);
    return { ranking, warnings: warnings.slice(0, 1), response: { modelId: this.modelId, timestamp: new Date() } };
  }
}
