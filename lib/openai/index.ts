/** OpenAI Chat Completions in-process: request checks, response and chunk shaping, SSE, record/replay. */
export { createChatCompletion, type ChatCompletionStream, type CompletionOptions, type CompletionTargets } from "./completion.js";
export { completionTarget, tokenizePrompt, type CompletionTarget, type CompletionTargetLike, type TokenGenerator, type TargetChatInfo, type TargetRequest, type TargetGeneration, type PromptInput, type PromptSegment, type PromptByteSegment, type PromptTextSegment, type SamplingGrammar } from "./target.js";
export { replayCompletion, type CompletionRecord, type ReplayResult } from "./record.js";
export { writeSSE, sseData, SSE_DONE, type SseSink } from "./sse.js";
export { toOpenAIError, type OpenAIErrorBody } from "./errors.js";
export { normalizeChatRequest, type NormalizedChatRequest } from "./request.js";
export { validateJson } from "./json-validate.js";
export type * from "./types.js";
