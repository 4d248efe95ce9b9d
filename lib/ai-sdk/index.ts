/**
 * `llamapeg/ai-sdk`: a Vercel AI SDK provider that runs the model in-process.
 *
 *     import { streamText } from "ai";
 *     import { createLlamapeg } from "llamapeg/ai-sdk";
 *     const llamapeg = createLlamapeg({ context });     // a Context or a Sequence
 *     const result = streamText({ model: llamapeg("local"), tools, prompt });
 */
import { NoSuchModelError, type LanguageModelV4, type ProviderV4 } from "@ai-sdk/provider";

import { LlamapegError } from "../errors.js";
import type { CompletionTargetLike } from "../openai/index.js";
import { LlamapegLanguageModel } from "./language-model.js";

export { LlamapegLanguageModel } from "./language-model.js";

export interface LlamapegProviderSettings {
  /** Where the model runs: a Context, a Sequence, or any completion target. */
  context: CompletionTargetLike;
}

export interface LlamapegProvider extends ProviderV4 {
  /** The language model (the id only names it in results and logs; the context decides the model). */
  (modelId?: string): LanguageModelV4;
  languageModel(modelId?: string): LanguageModelV4;
}

export function createLlamapeg(settings: LlamapegProviderSettings): LlamapegProvider {
  if (settings === null || typeof settings !== "object" || settings.context === null || typeof settings.context !== "object") {
    throw new LlamapegError("ERR_INVALID_ARGUMENT", "createLlamapeg({ context }): context must be a Context, a Sequence or a completion target", { where: "context" });
  }
  const context = settings.context;
  const languageModel = (modelId = "llamapeg"): LanguageModelV4 => new LlamapegLanguageModel(context, modelId);
  const none = (modelType: "embeddingModel" | "imageModel") => (modelId: string): never => {
    throw new NoSuchModelError({ modelId, modelType, message: `llamapeg serves language models only (no ${modelType})` });
  };
  return Object.assign((modelId?: string) => languageModel(modelId), {
    specificationVersion: "v4" as const,
    languageModel,
    embeddingModel: none("embeddingModel"),
    imageModel: none("imageModel"),
  });
}
