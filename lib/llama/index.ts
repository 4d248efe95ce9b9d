export { loadModel, Model, type LoadModelOptions, type TokenizeOptions, type PieceOptions } from "./model.js";
export { Context, type ContextOptions } from "./context.js";
export {
  EmbeddingContext,
  type EmbeddingContextOptions,
  type EmbeddingInput,
  type EmbeddingNormalization,
  type EmbeddingResult,
  type PoolingType,
  type RankResult,
} from "./embedding.js";
export { Sequence } from "./sequence.js";
export {
  Generation,
  type GeneratedToken,
  type GenerationStats,
  type GenerationResult,
  type StopReason,
} from "./generation.js";
export { escapeRegex, type ContextShift, type GenerateOptions, type GrammarOptions } from "./generate-options.js";
export type { SamplingOptions } from "./sampling-params.js";
export type { SpeculativeOptions } from "./speculative-options.js";
export type { ReasoningBudgetOptions } from "./reasoning-budget.js";
export { setLogger, type Logger, type LogLevel } from "./log.js";
export type { GgufMetadataValue } from "../native/binding.js";
