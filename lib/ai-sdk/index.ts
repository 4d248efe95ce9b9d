/**
 * `llamapeg/ai-sdk`: a Vercel AI SDK provider that runs the model in-process.
 *
 *     import { streamText } from "ai";
 *     import { createLlamapeg } from "llamapeg/ai-sdk";
 *     const llamapeg = createLlamapeg({ context });     // a Context or a Sequence
 *     const result = streamText({ model: llamapeg("local"), tools, prompt });
 */
import { NoSuchModelError, type EmbeddingModelV4, type LanguageModelV4, type ProviderV4, type RerankingModelV4 } from "@ai-sdk/provider";

import { LlamapegError } from "../errors.js";
import { EmbeddingContext } from "../llama/embedding.js";
import type { CompletionTargetLike } from "../openai/index.js";
import { LlamapegEmbeddingModel, LlamapegRerankingModel } from "./embedding-model.js";
import { LlamapegLanguageModel } from "./language-model.js";

export { LlamapegLanguageModel } from "./language-model.js";
export { LlamapegEmbeddingModel, LlamapegRerankingModel } from "./embedding-model.js";

export interface LlamapegProviderSettings {
  /** Where the model runs: a Context, a Sequence, or any completion target. */
  context: CompletionTargetLike;
  /**
   * What `embeddingModel()` (and, for a reranker, `rerankingModel()`) run on: an EmbeddingContext
   * (`model.createEmbeddingContext()`). Without it they throw NoSuchModelError.
   */
  embeddings?: EmbeddingContext;
}

export interface LlamapegProvider extends ProviderV4 {
  /** The language model (the id only names it in results and logs; the context decides the model). */
  (modelId?: string): LanguageModelV4;
  languageModel(modelId?: string): LanguageModelV4;
  embeddingModel(modelId?: string): EmbeddingModelV4;
  rerankingModel(modelId?: string): RerankingModelV4;
}

export function createLlamapeg(settings: LlamapegProviderSettings): LlamapegProvider {
  if (settings === null || typeof settings !== "object" || settings.context === null || typeof settings.context !== "object") {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", "createLlamapeg({ context }): context must be a Context, a Sequence or a completion target", { where: "context" });
  }
  if (settings.embeddings !== undefined && !(settings.embeddings instanceof EmbeddingContext)) {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", "createLlamapeg({ embeddings }): embeddings must be an EmbeddingContext (model.createEmbeddingContext())", { where: "embeddings" });
  }
  const context = settings.context;
  const embeddings = settings.embeddings;
  const languageModel = (modelId = "llamapeg"): LanguageModelV4 => new LlamapegLanguageModel(context, modelId);
  const embeddingModel = (modelId = "llamapeg"): EmbeddingModelV4 => {
    if (embeddings === undefined || embeddings.pooling === "rank") {
      throw new NoSuchModelError({ modelId, modelType: "embeddingModel", message: embeddings === undefined ? "createLlamapeg was given no `embeddings` context" : "the `embeddings` context is a reranker: use rerankingModel()" });
    }
    return new LlamapegEmbeddingModel(embeddings, modelId);
  };
  const rerankingModel = (modelId = "llamapeg"): RerankingModelV4 => {
    if (embeddings?.pooling !== "rank") {
      throw new NoSuchModelError({ modelId, modelType: "rerankingModel", message: embeddings === undefined ? "createLlamapeg was given no `embeddings` context" : `the \`embeddings\` context pools "${embeddings.pooling}"; reranking needs a reranker model` });
    }
    return new LlamapegRerankingModel(embeddings, modelId);
  };
  const none = (modelType: "imageModel") => (modelId: string): never => {
    throw new NoSuchModelError({ modelId, modelType, message: `llamapeg serves no ${modelType}` });
  };
  return Object.assign((modelId?: string) => languageModel(modelId), {
    specificationVersion: "v4" as const,
    languageModel,
    embeddingModel,
    rerankingModel,
    imageModel: none("imageModel"),
  });
}
