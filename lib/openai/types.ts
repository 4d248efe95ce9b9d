/**
 * The OpenAI Chat Completions shapes llamapeg reads and writes (the subset it implements), plus the
 * llamapeg extensions, which are marked as such.
 */
import type { ReasoningFormat, ResponseFormat, ToolChoice } from "../chat/apply/index.js";
import type { ChatTool } from "../chat/tools.js";

export type { ToolChoice };

export interface ChatCompletionRequest {
  messages: unknown[];
  /** Echoed in responses; default: the model file name. */
  model?: string;
  tools?: ChatTool[] | null;
  tool_choice?: ToolChoice;
  /** Default false (llama.cpp's default; OpenAI's is true). */
  parallel_tool_calls?: boolean;
  /** `json_object`: a JSON object; `json_schema`: JSON valid against `json_schema.schema`. */
  response_format?: ResponseFormat | null;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  seed?: number | null;
  stop?: string | string[] | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean } | null;
  /** Must be 1 when given. */
  n?: number | null;
  reasoning_format?: ReasoningFormat;
  chat_template_kwargs?: Record<string, unknown>;
  /** llamapeg: a Jinja chat template used instead of the model's. */
  chat_template?: string;
  /** llamapeg: sample without the grammar (the output is still parsed). */
  grammar?: false;
  /**
   * llamapeg: with tool_choice "required" or a named function, the grammar allows the calls alone
   * (after the reasoning block where the format has one), no text before them. Default true;
   * false opts in to llama.cpp's grammar, which lets free text come first.
   */
  calls_only?: boolean;
  /** llamapeg: aborts the generation. */
  signal?: AbortSignal;
}

export interface ChatCompletionMessage {
  role: "assistant";
  content: string | null;
  reasoning_content?: string;
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
}

export type FinishReason = "stop" | "length" | "tool_calls";

export interface ChatCompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
}

/** llamapeg: what went differently from the request's ideal path (see docs/openai.md). */
export interface LlamapegCompletionInfo {
  /** Schema keywords not enforced, tools degraded to permissive JSON, dropped preserved tokens. */
  warnings: string[];
  /** The output stopped matching the format at these byte positions (the rest is content). */
  parse_errors: { code: string; position: number; message: string }[];
  timings: { prompt_ms: number; generation_ms: number; sampling_ms: number; prompt_per_second: number; generation_per_second: number };
}

export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  system_fingerprint: string;
  choices: [{ index: 0; message: ChatCompletionMessage; finish_reason: FinishReason; logprobs: null }];
  usage: ChatCompletionUsage;
  llamapeg: LlamapegCompletionInfo;
}

export interface ChunkToolCallDelta {
  index: number;
  id?: string;
  type?: "function";
  function?: { name?: string; arguments?: string };
}

export interface ChunkDelta {
  role?: "assistant";
  content?: string | null;
  reasoning_content?: string;
  tool_calls?: ChunkToolCallDelta[];
}

export interface ChatCompletionChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  system_fingerprint: string;
  choices: { index: 0; delta: ChunkDelta; finish_reason: FinishReason | null; logprobs: null }[];
  /** Only on the usage chunk (`stream_options.include_usage`): null elsewhere then. */
  usage?: ChatCompletionUsage | null;
  /** llamapeg: a typed event (the output stopped matching the format at `position`). */
  llamapeg?: { event: { type: "parse_error"; code: string; position: number; message: string } } | { warnings: string[] };
}
