/** llamapeg's public surface. Everything else is internal and may change. */

// errors
export { LlamapegError, type LlamapegErrorCode } from "./errors.js";

// native: models, contexts, streaming generation
export {
  loadModel,
  Model,
  Context,
  Sequence,
  Generation,
  setLogger,
  type LoadModelOptions,
  type TokenizeOptions,
  type PieceOptions,
  type ContextOptions,
  type ContextShift,
  type GenerateOptions,
  type GrammarOptions,
  type GeneratedToken,
  type GenerationStats,
  type GenerationResult,
  type StopReason,
  type Logger,
  type LogLevel,
  type GgufMetadataValue,
} from "./llama/index.js";
export { systemInfo, type SystemInfo, type BackendName, type DeviceInfo } from "./native/load.js";
export { ensureTestModel, writeTestModel, TEST_MODEL_PRESETS, type TestModelOptions, type TestModelSize } from "./test-model/index.js";

// GGUF files without the native addon (metadata, chat templates, writing test models)
export { parseGguf, readGgufFile, readGgufFileSync, writeGgufFile, encodeGgufHeader, getGgufString, getGgufNumber, ggufValueToJs } from "./gguf/index.js";
export type { GgufFile, GgufValue, GgufTensorInfo } from "./gguf/index.js";

// PEG engine and grammars
export { PegArena, PegStreamParser, PegBuilder, PegParser, pegBuilder, buildPegParser } from "./peg/index.js";
export type { PegParseOptions, PegParseResult, PegParseType, PegAst, PegAstId, PegAstNode, PegArenaJson } from "./peg/index.js";
export { jsonSchemaToGbnf, compileJsonSchema, buildGrammar, gbnfFormatLiteral, SchemaInfo } from "./json-schema/index.js";
export type { CompileOptions, CompiledSchema, GrammarBuilder, GrammarOptions as GbnfGrammarOptions, SchemaWarning, UnsupportedMode } from "./json-schema/index.js";

// chat: messages, streaming parse, templates
export { ChatInput } from "./chat/input.js";
export { diffMessages, applyDeltas } from "./chat/diff.js";
export { parseChatMessages, toOpenAIMessage } from "./chat/messages.js";
export { TAG, type ChatTag } from "./chat/tags.js";
export { parseChatOutput, type ParseChatOutputOptions } from "./chat/parse.js";
export { ChatSession, type ChatFrame, type ChatEvent, type ChatParseErrorEvent, type ChatSessionOptions } from "./chat/session.js";
export { chatPlan, type ChatPlan, type GrammarTrigger } from "./chat/plan.js";
export type { AssistantMessage, ChatMessage, ChatDelta, ToolCall, ToolCallDelta, ChatContentPart } from "./chat/messages.js";
export type { ChatTool, ChatToolFunction } from "./chat/tools.js";
export { buildChatPegParser, chatPegBuilder, ChatPegBuilder } from "./chat/grammar/builder.js";
export { buildChatOutputParser, type ChatOutputFormat, type ChatOutputRequest } from "./chat/grammar/output-parser.js";
export { buildChatGrammar, type ChatGrammar, type ChatGrammarOptions } from "./chat/grammar/plan-grammar.js";
export { renderChatTemplate, renderGenerationPrompt, renderTemplate, templateCaps, type ChatRenderRequest, type TemplateCaps } from "./chat/template/index.js";
export { applyChatTemplate, type ApplyChatRequest, type AppliedChatPlan, type ReasoningFormat } from "./chat/apply/index.js";
export { analyzeTemplate, withOverrides, type TemplateAnalysis, type TemplateAnalysisOverrides } from "./chat/analysis/index.js";

// OpenAI-style chat completions
export {
  createChatCompletion,
  replayCompletion,
  writeSSE,
  sseData,
  SSE_DONE,
  toOpenAIError,
  normalizeChatRequest,
  clearPlanCache,
  validateJson,
} from "./openai/index.js";
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
  ToolChoice,
  LlamapegCompletionInfo,
  ChatCompletionStream,
  CompletionOptions,
  CompletionTarget,
  CompletionTargetLike,
  TargetChatInfo,
  TargetRequest,
  TargetGeneration,
  PromptInput,
  PromptSegment,
  SamplingGrammar,
  CompletionRecord,
  ReplayResult,
  OpenAIErrorBody,
  SseSink,
} from "./openai/index.js";
