/**
 * llamapeg's public surface: models and contexts, OpenAI-style completions, chat templates and
 * plans, the streaming session, errors. Secondary APIs live behind subpath exports:
 * `llamapeg/peg` (PEG engine, chat trees), `llamapeg/json-schema`, `llamapeg/gguf`,
 * `llamapeg/testing` (test models, a schema checker). Everything else is internal.
 */

// errors
export { LlamapegError, type LlamapegErrorCode } from "./errors.js";

// models, contexts and their sequences, streaming generation
export { loadModel, Model, Context, Sequence, Generation, setLogger } from "./llama/index.js";
export { EmbeddingContext } from "./llama/index.js";
export type { EmbeddingContextOptions, EmbeddingInput, EmbeddingNormalization, EmbeddingResult, PoolingType, RankResult } from "./llama/index.js";
export type {
  LoadModelOptions,
  TokenizeOptions,
  PieceOptions,
  ContextOptions,
  ContextShift,
  GenerateOptions,
  SamplingOptions,
  GrammarOptions,
  SpeculativeOptions,
  ReasoningBudgetOptions,
  GeneratedToken,
  GenerationStats,
  GenerationResult,
  StopReason,
  Logger,
  LogLevel,
  GgufMetadataValue,
} from "./llama/index.js";
export { systemInfo, type SystemInfo, type BackendName, type DeviceInfo } from "./native/load.js";

// OpenAI-style chat completions on a target (a Context, a Sequence, a remote backend)
export { createChatCompletion, replayCompletion, writeSSE, toOpenAIError } from "./openai/index.js";
// the same completions on llama-server processes
export { connectLlamaServer, RemoteError, type LlamaServerBackend, type LlamaServerOptions, type Strategy as LlamaServerStrategy } from "./remote/index.js";
export type {
  ChatCompletionRequest,
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionMessage,
  ChatCompletionUsage,
  ChunkDelta,
  ChunkToolCallDelta,
  FinishReason,
  LlamapegCompletionInfo,
  ChatCompletionStream,
  CompletionOptions,
  CompletionRecord,
  ReplayResult,
  OpenAIErrorBody,
  SseSink,
  CompletionTarget,
  CompletionTargetLike,
  TargetChatInfo,
  TargetRequest,
  TargetGeneration,
  PromptInput,
  PromptSegment,
  PromptByteSegment,
  PromptTextSegment,
  SamplingGrammar,
} from "./openai/index.js";

// chat templates and plans (no model needed)
export { applyChatTemplate, type ApplyChatRequest, type AppliedChatPlan, type ReasoningFormat, type ResponseFormat, type ToolChoice } from "./chat/apply/index.js";
export { renderChatTemplate, type ChatRenderRequest } from "./chat/apply/render.js";
export { analyzeTemplate, type TemplateAnalysis, type TemplateAnalysisOverrides } from "./chat/analysis/index.js";
export { parseChatOutput, type ParseChatOutputOptions } from "./chat/parse.js";
export type { ChatPlan, GrammarTrigger } from "./chat/plan.js";
export type { AssistantMessage, ChatMessage, ChatDelta, ToolCall, ToolCallDelta, ChatContentPart } from "./chat/messages.js";
export type { ChatTool, ChatToolFunction } from "./chat/tools.js";

// streaming parse of one response
export { ChatSession, type ChatFrame, type ChatEvent, type ChatParseErrorEvent, type ChatSessionOptions, type ChatFinishOptions } from "./chat/session.js";
