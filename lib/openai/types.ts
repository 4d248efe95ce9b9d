/**
 * The OpenAI Chat Completions shapes llamapeg reads and writes (the subset it implements), plus the
 * llamapeg extensions, which are marked as such.
 */
import type { ReasoningFormat } from "../chat/apply/index.js";
import type { ChatTool } from "../chat/tools.js";

export type ToolChoice =
  | "auto"
  | "required"
  | "none"
  | { type: "function"; function: { name: string } }
  /** Narrows `tools` to these and applies `mode`. */
  | { type: "allowed_tools"; allowed_tools: { mode: "auto" | "required"; tools: readonly { type: "function"; function: { name: string } }[] | readonly { [key: string]: unknown }[] } }
  /** Custom (free-text) tools are refused: they have no JSON arguments a grammar can hold. */
  | { type: "custom"; custom: { name: string } };

/** A tool as a request carries it: function tools are honoured; custom tools are refused (400). */
export type RequestTool = { type: "function"; function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null } } | ChatTool | { type: "custom"; custom: unknown };

/**
 * Every field OpenAI's Chat Completions accepts (so `ChatCompletionCreateParams` of the `openai`
 * package is accepted as is), and the llama.cpp and llamapeg extensions. What each does, and which
 * are refused with a 400 naming them: `request-fields.ts`.
 */
export interface ChatCompletionRequest {
  messages: readonly unknown[];
  /** Echoed in responses; default: the model file name. */
  model?: string;
  tools?: readonly RequestTool[] | null;
  tool_choice?: ToolChoice;
  /** Default false (llama.cpp's default; OpenAI's is true). */
  parallel_tool_calls?: boolean;
  response_format?:
    | { type: "text" }
    | { type: "json_object"; schema?: Record<string, unknown> }
    | { type: "json_schema"; json_schema: { name?: string; description?: string; schema?: Record<string, unknown>; strict?: boolean | null } };
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  seed?: number | null;
  stop?: string | readonly string[] | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean; include_obfuscation?: boolean } | null;
  /** Choices to generate (1..128), each on its own sequence: the target must offer n of them. */
  n?: number | null;
  /**
   * "none": thinking off (chat_template_kwargs.enable_thinking = false) and budget 0; any other
   * effort: on, with the budget of EFFORT_BUDGETS (minimal 256, low 1024, the rest unbounded)
   * unless the request sets one (lib/openai/reasoning.ts).
   */
  reasoning_effort?: "none" | "minimal" | "low" | "medium" | "high" | "xhigh" | "max" | null;
  /** Accepted and ignored by design. */
  user?: string;
  safety_identifier?: string | null;
  metadata?: Record<string, string> | null;
  service_tier?: string | null;
  prompt_cache_key?: string | null;
  prompt_cache_retention?: string | null;
  prompt_cache_options?: unknown;
  /** -2..2: subtracted from a token's logit per occurrence in the last 64 tokens. */
  frequency_penalty?: number | null;
  /** -2..2: subtracted from a token's logit when it occurs in the last 64 tokens. */
  presence_penalty?: number | null;
  /** Token id (decimal string) -> bias in [-100, 100], added to the logit. */
  logit_bias?: Record<string, number> | null;
  /** Report each sampled token's log probability (`choices[].logprobs`). */
  logprobs?: boolean | null;
  /** 0..20 most likely alternatives per token; requires logprobs. */
  top_logprobs?: number | null;
  /** Refused unless neutral (false, ["text"]). */
  store?: boolean | null;
  modalities?: readonly ("text" | "audio")[] | null;
  /** Refused: no meaning for a local text model. */
  audio?: unknown;
  prediction?: unknown;
  web_search_options?: unknown;
  verbosity?: "low" | "medium" | "high" | null;
  moderation?: unknown;
  functions?: readonly unknown[];
  function_call?: unknown;
  /** llama.cpp: top-k sampling (0 disables). Default 40. */
  top_k?: number | null;
  /** llama.cpp: min-p sampling (0 disables). Default 0.05. */
  min_p?: number | null;
  /** llama.cpp: repeat penalty over the last 64 tokens (1 disables). Default 1. */
  repeat_penalty?: number | null;
  reasoning_format?: ReasoningFormat;
  /**
   * llama.cpp: at most this many tokens inside a reasoning block, then `reasoning_budget_message`
   * and the template's end marker are forced and the model answers; 0: thinking off where the
   * template can turn it off, else the block closed at once; -1: no budget.
   */
  reasoning_budget_tokens?: number | null;
  /** llama.cpp: the same field as `reasoning_budget_tokens` (one of the two). */
  thinking_budget_tokens?: number | null;
  /** llama.cpp: text forced before the end marker when the budget is spent. Default "". */
  reasoning_budget_message?: string | null;
  chat_template_kwargs?: Record<string, unknown>;
  /** llamapeg: a Jinja chat template used instead of the model's. */
  chat_template?: string;
  /** llamapeg: sample without the grammar (the output is still parsed). */
  grammar?: false;
  /**
   * llamapeg: with tool_choice "required" or a named function, the grammar allows the calls alone
   * (after the reasoning block where the template's syntax has one), no text before them. Default
   * true; false opts in to llama.cpp's grammar, which lets free text come first.
   */
  calls_only?: boolean;
  /**
   * llamapeg: build the plan as llama.cpp does (its printing, grammar and parser, no repairs):
   * the reference-identical mode (docs/apply.md). Default false.
   */
  reference_mode?: boolean;
  /**
   * llamapeg: JSON whitespace in the plan's grammar: "canonical" (default; `", "`, `": "`,
   * nothing inside brackets, as templates serialize JSON) or "flexible" (llama.cpp's: any
   * whitespace between tokens; always so in `reference_mode`). docs/json-schema.md.
   */
  json_whitespace?: "canonical" | "flexible";
  /**
   * llamapeg: where an object's declared properties may stand in the plan's grammar: "declared"
   * (default; the schema's order) or "any" (always "declared" in `reference_mode`).
   * docs/json-schema.md, "Property order".
   */
  json_property_order?: "declared" | "any";
  /**
   * llamapeg: text the grammar forces (a tool's name, property names, separators) is decoded as a
   * batch instead of one sampled step per token (docs/grammar-engine.md). Default: on wherever
   * the plan has a grammar, off in `reference_mode`; false decodes as llama.cpp does.
   */
  fast_forward?: boolean | null;
  /**
   * llamapeg: speculative decoding (docs/speculative.md): drafts from the prompt and the output
   * ("ngram"), or from the context's draft model ("draft"), verified in one batch and checked by
   * the grammar first. Default off. Not on llama-server targets (a 400 naming it).
   */
  speculative?: { type: "ngram" | "draft"; draft_max?: number; draft_min?: number; ngram_min?: number; ngram_max?: number; p_min?: number; text_lookup?: boolean } | false | null;
  /** llamapeg: aborts the generation. */
  signal?: AbortSignal;
}

export interface ChatCompletionMessage {
  role: "assistant";
  content: string | null;
  /** OpenAI's field for a refused answer: a local model never refuses through it. */
  refusal: null;
  reasoning_content?: string;
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
}

/** One alternative token and its log probability (natural log, from the sampler's candidates). */
export interface TopLogprob {
  token: string;
  logprob: number;
  /** The token's exact bytes (`token` is their lossy UTF-8 reading). */
  bytes: number[];
}

export interface TokenLogprob extends TopLogprob {
  top_logprobs: TopLogprob[];
}

/** `choices[].logprobs` with `logprobs: true`: one entry per sampled token. */
export interface ChoiceLogprobs {
  content: TokenLogprob[];
  refusal: null;
}

export type FinishReason = "stop" | "length" | "tool_calls";

export interface ChatCompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
  /** Of completion_tokens, those inside reasoning blocks (markers not counted); absent where the
   * target does not count them (a llama-server target with a reasoning template). */
  completion_tokens_details?: { reasoning_tokens: number };
}

/** llamapeg: what went differently from the request's ideal path (see docs/openai.md). */
export interface LlamapegCompletionInfo {
  /** Schema keywords not enforced, tools degraded to permissive JSON, dropped preserved tokens. */
  warnings: string[];
  /** The output stopped matching the format at these byte positions (the rest is content). */
  parse_errors: { code: string; position: number; message: string }[];
  timings: { prompt_ms: number; generation_ms: number; sampling_ms: number; prompt_per_second: number; generation_per_second: number };
  /**
   * Of completion_tokens: those the grammar forced (fast-forward, decoded as a batch) and those
   * drafted by speculation, with the drafted ones kept. Absent where the target does not report
   * them (llama-server).
   */
  decoding?: { forced_tokens: number; draft_tokens: number; draft_accepted_tokens: number };
}

export interface ChatCompletionChoice {
  index: number;
  message: ChatCompletionMessage;
  finish_reason: FinishReason;
  logprobs: ChoiceLogprobs | null;
}

export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  system_fingerprint: string;
  /** One per `n`, by index. */
  choices: [ChatCompletionChoice, ...ChatCompletionChoice[]];
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
  /** `index` is the choice's (n > 1); `logprobs` carries the tokens sampled since the previous chunk of that choice. */
  choices: { index: number; delta: ChunkDelta; finish_reason: FinishReason | null; logprobs: ChoiceLogprobs | null }[];
  /** Only on the usage chunk (`stream_options.include_usage`): null elsewhere then. */
  usage?: ChatCompletionUsage | null;
  /** llamapeg: a typed event (the output stopped matching the format at `position`). */
  llamapeg?: { event: { type: "parse_error"; code: string; position: number; message: string } } | { warnings: string[] };
}
