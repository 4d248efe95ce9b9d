/**
 * Checks an OpenAI chat request before anything is generated and brings it into one internal shape.
 * Every rejection is ERR_INVALID_REQUEST whose `where` (OpenAI's `param`) names the field.
 */
import { normalizeApplyRequest, type ApplyChatRequest, type NormalizedApplyRequest } from "../chat/apply/index.js";
import { decodingFromRequest, type RequestDecoding } from "./decoding.js";
import { invalidRequest } from "./errors.js";
import { samplingFromRequest, type SamplingOptions } from "../llama/sampling-params.js";
import { checkRequestSize } from "./request-limits.js";
import { checkRequestFields, resolveAllowedTools } from "./request-fields.js";
import { requestReasoning, type RequestReasoningBudget } from "./reasoning.js";
import type { ChatCompletionRequest } from "./types.js";
import { isObject } from "../json-syntax.js";

/**
 * The checked request: the chat part, the sampling (`SamplingOptions`, lib/llama/sampling-params.ts:
 * the fields a request sets, carried on as they are with `pickSampling`), and the transport.
 */
export interface NormalizedChatRequest extends SamplingOptions {
  /** The chat part, checked by the chat layer's one validator (BOS/EOS texts come from the target). */
  chat: NormalizedApplyRequest;
  model: string | undefined;
  maxTokens: number | undefined;
  /** token id -> bias, -100..100 (ids range-checked by the target against its vocabulary). */
  logitBias: Map<number, number> | undefined;
  logprobs: boolean;
  /** 0..20, only with logprobs. */
  topLogprobs: number;
  /** Choices to generate, each on its own sequence (1..128). */
  n: number;
  /** Any integer (a target takes it modulo 2^32). */
  seed?: number;
  stop: string[];
  stream: boolean;
  includeUsage: boolean;
  chatTemplate: string | undefined;
  /** false: sample without the grammar (the output is still parsed). */
  grammar: boolean;
  /** fast_forward and speculative as asked (decoding.ts); the plan decides the defaults. */
  decoding: RequestDecoding;
  /** The reasoning budget asked for (reasoning.ts); null: no bound. The plan adds the markers. */
  reasoningBudget: RequestReasoningBudget | null;
  signal: AbortSignal | undefined;
}

function optNumber(r: Record<string, unknown>, key: string, min: number, max: number, integer = false): number | undefined {
  const v = r[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < min || v > max) {
    invalidRequest(key, `expected ${integer ? "an integer" : "a number"} in [${min}, ${max}], got ${JSON.stringify(v)}`);
  }
  return v;
}

/** OpenAI's logit_bias: token ids as decimal strings (JSON keys) -> bias in [-100, 100]. */
function logitBiasOf(v: unknown): Map<number, number> | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObject(v)) invalidRequest("logit_bias", "expected an object of token id -> bias");
  const out = new Map<number, number>();
  for (const [key, bias] of Object.entries(v)) {
    if (!/^(0|[1-9][0-9]{0,9})$/.test(key)) invalidRequest("logit_bias", `key ${JSON.stringify(key)} is not a token id`);
    if (typeof bias !== "number" || !Number.isFinite(bias) || bias < -100 || bias > 100) invalidRequest("logit_bias", `bias of token ${key} must be a number in [-100, 100], got ${JSON.stringify(bias)}`);
    out.set(Number(key), bias);
  }
  return out.size > 0 ? out : undefined;
}

/** The fields of an OpenAI request the chat layer reads (the rest are sampling and transport). */
const CHAT_FIELDS = ["messages", "tools", "tool_choice", "parallel_tool_calls", "response_format", "reasoning_format", "chat_template_kwargs", "calls_only", "reference_mode", "json_whitespace", "json_property_order"] as const;

/**
 * Checks an OpenAI chat request before anything is generated: the chat fields through the chat
 * layer's validator (`normalizeApplyRequest`), the sampling and transport fields here.
 */
export function normalizeChatRequest(raw: ChatCompletionRequest): NormalizedChatRequest {
  if (!isObject(raw)) invalidRequest("request", "expected an object");
  checkRequestFields(raw as unknown as Record<string, unknown>);
  checkRequestSize(raw as unknown as Record<string, unknown>);
  const r = resolveAllowedTools(raw as unknown as Record<string, unknown>);
  const chatFields: Record<string, unknown> = {};
  for (const k of CHAT_FIELDS) if (r[k] !== undefined && r[k] !== null) chatFields[k] = r[k];
  // reasoning_effort and a budget of 0 are the thinking switch, unless chat_template_kwargs sets it
  // explicitly; the effort itself reaches the templates that read it (gpt-oss's "Reasoning: high",
  // DeepSeek V4), as llama-server passes it ("none" passes none).
  const { thinking, budget, effort } = requestReasoning(r);
  const given = chatFields.chat_template_kwargs;
  if (typeof given === "object" && given !== null && !Array.isArray(given)) {
    const kwargs: Record<string, unknown> = { ...(given as Record<string, unknown>) };
    if (thinking !== undefined && kwargs.enable_thinking === undefined) kwargs.enable_thinking = thinking;
    if (effort !== undefined && effort !== "none" && kwargs.reasoning_effort === undefined) kwargs.reasoning_effort = effort;
    if (effort === "none") delete kwargs.reasoning_effort;
    chatFields.chat_template_kwargs = kwargs;
  } else if (given === undefined) {
    const kwargs: Record<string, unknown> = {};
    if (thinking !== undefined) kwargs.enable_thinking = thinking;
    if (effort !== undefined && effort !== "none") kwargs.reasoning_effort = effort;
    if (Object.keys(kwargs).length > 0) chatFields.chat_template_kwargs = kwargs;
  }
  const chat = normalizeApplyRequest(chatFields as unknown as ApplyChatRequest);
  if (chat.messages.length === 0) invalidRequest("messages", "expected at least one message");
  const n = optNumber(r, "n", 1, 128, true) ?? 1;
  const logprobs = r.logprobs === undefined || r.logprobs === null ? false : r.logprobs;
  if (typeof logprobs !== "boolean") invalidRequest("logprobs", `expected a boolean, got ${JSON.stringify(logprobs)}`);
  const topLogprobs = optNumber(r, "top_logprobs", 0, 20, true);
  if (topLogprobs !== undefined && topLogprobs > 0 && !logprobs) invalidRequest("top_logprobs", "requires logprobs: true");
  const maxTokens = optNumber(r, "max_completion_tokens", 1, 2 ** 31 - 1, true) ?? optNumber(r, "max_tokens", 1, 2 ** 31 - 1, true);
  let stop: string[] = [];
  if (typeof r.stop === "string") stop = [r.stop];
  else if (Array.isArray(r.stop)) {
    if (r.stop.length > 4) invalidRequest("stop", "at most 4 stop sequences");
    stop = r.stop.map((s, i) => (typeof s === "string" && s !== "" ? s : invalidRequest(`stop[${i}]`, "expected a non-empty string")));
  } else if (r.stop !== undefined && r.stop !== null) invalidRequest("stop", "expected a string or an array of strings");
  const streamOptions = r.stream_options;
  if (streamOptions !== undefined && streamOptions !== null && !isObject(streamOptions)) invalidRequest("stream_options", "expected an object");
  const stream = r.stream === undefined || r.stream === null ? false : r.stream;
  if (typeof stream !== "boolean") invalidRequest("stream", `expected a boolean, got ${JSON.stringify(stream)}`);
  if (streamOptions && !stream) invalidRequest("stream_options", "only allowed with stream: true");
  if (r.chat_template !== undefined && (typeof r.chat_template !== "string" || r.chat_template === "")) invalidRequest("chat_template", "expected Jinja template text");
  if (r.grammar !== undefined && r.grammar !== false) invalidRequest("grammar", "only false (sample without the grammar) is accepted");
  if (r.model !== undefined && typeof r.model !== "string") invalidRequest("model", "expected a string");
  if (r.signal !== undefined && !(r.signal instanceof AbortSignal)) invalidRequest("signal", "expected an AbortSignal");
  return {
    chat,
    model: r.model as string | undefined,
    maxTokens,
    ...samplingFromRequest((key, min, max, integer) => optNumber(r, key, min, max, integer)),
    logitBias: logitBiasOf(r.logit_bias),
    logprobs,
    topLogprobs: topLogprobs ?? 0,
    n,
    stop,
    stream,
    includeUsage: isObject(streamOptions) && streamOptions.include_usage === true,
    chatTemplate: r.chat_template as string | undefined,
    grammar: r.grammar !== false,
    decoding: decodingFromRequest(r),
    reasoningBudget: budget,
    signal: r.signal as AbortSignal | undefined,
  };
}
