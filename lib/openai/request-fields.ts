/**
 * The whole OpenAI Chat Completions request contract: every top-level field OpenAI accepts, and
 * the llama.cpp and llamapeg extensions, with what llamapeg does with each. A field is honoured,
 * accepted and ignored by design (it has no meaning in-process), or refused with a 400 naming it
 * when it asks for something this build cannot do. Nothing is dropped silently: an unknown field is
 * refused too, as OpenAI refuses it.
 */
import { SAMPLING_REQUEST_KEYS } from "../llama/sampling-params.js";
import { invalidRequest } from "./errors.js";

type Rule =
  /** Read by normalizeChatRequest. */
  | { kind: "honoured" }
  /** Accepted, no effect by design. */
  | { kind: "ignored"; why: string }
  /** Refused unless the value asks for nothing (the default). */
  | { kind: "unsupported"; why: string; neutral?: (v: unknown) => boolean };

const honoured: Rule = { kind: "honoured" };
const ignored = (why: string): Rule => ({ kind: "ignored", why });
const unsupported = (why: string, neutral?: (v: unknown) => boolean): Rule => ({ kind: "unsupported", why, ...(neutral ? { neutral } : {}) });

export const REQUEST_FIELDS: Readonly<Record<string, Rule>> = {
  // OpenAI, honoured
  messages: honoured,
  model: honoured,
  tools: honoured,
  tool_choice: honoured,
  parallel_tool_calls: honoured,
  response_format: honoured,
  max_tokens: honoured,
  max_completion_tokens: honoured,
  temperature: honoured,
  top_p: honoured,
  seed: honoured,
  stop: honoured,
  stream: honoured,
  stream_options: honoured,
  n: honoured,
  reasoning_effort: honoured,
  frequency_penalty: honoured,
  presence_penalty: honoured,
  logit_bias: honoured,
  logprobs: honoured,
  top_logprobs: honoured,
  // OpenAI, by design without effect in-process
  user: ignored("an end-user id for abuse monitoring"),
  safety_identifier: ignored("an end-user id for abuse monitoring"),
  metadata: ignored("tags for stored completions"),
  service_tier: ignored("there is one tier: this process"),
  prompt_cache_key: ignored("the KV prefix is reused automatically"),
  prompt_cache_retention: ignored("the KV prefix is reused automatically"),
  prompt_cache_options: ignored("the KV prefix is reused automatically"),
  // OpenAI, not honoured by this build
  store: unsupported("completions are not stored", (v) => v === false),
  modalities: unsupported("text is the only modality", (v) => Array.isArray(v) && v.length === 1 && v[0] === "text"),
  audio: unsupported("text is the only modality"),
  prediction: unsupported("predicted outputs are not supported"),
  web_search_options: unsupported("there is no web search"),
  verbosity: unsupported("output verbosity is not something a local model can be asked for"),
  moderation: unsupported("there is no moderation model"),
  functions: unsupported("deprecated by OpenAI: use tools"),
  function_call: unsupported("deprecated by OpenAI: use tool_choice"),
  // the sampling fields of lib/llama/sampling-params.ts (OpenAI's, and llama.cpp's extensions)
  ...Object.fromEntries(SAMPLING_REQUEST_KEYS.map((k) => [k, honoured])),
  // llamapeg extensions (see types.ts)
  reasoning_format: honoured,
  // llama.cpp's per-request reasoning budget (reasoning.ts)
  reasoning_budget_tokens: honoured,
  thinking_budget_tokens: honoured,
  reasoning_budget_message: honoured,
  chat_template_kwargs: honoured,
  chat_template: honoured,
  grammar: honoured,
  calls_only: honoured,
  reference_mode: honoured,
  json_whitespace: honoured,
  json_property_order: honoured,
  fast_forward: honoured,
  speculative: honoured,
  signal: honoured,
};

/** Refuses unknown fields and fields this build cannot honour (null is absent, as OpenAI reads it). */
export function checkRequestFields(r: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(r)) {
    if (value === undefined || value === null) continue;
    // own keys only: "constructor", "__proto__", "toString" are unknown fields, not Object.prototype's
    const rule = Object.hasOwn(REQUEST_FIELDS, key) ? REQUEST_FIELDS[key] : undefined;
    if (rule === undefined) invalidRequest(key, "unknown field (not an OpenAI Chat Completions field, nor a llama.cpp or llamapeg extension)");
    if (rule.kind === "unsupported" && !(rule.neutral?.(value) ?? false)) invalidRequest(key, `not supported: ${rule.why}`);
  }
}

/**
 * `tool_choice: {type: "allowed_tools", allowed_tools: {mode, tools}}` as the plain form: the tools
 * narrowed to the allowed ones, the choice their mode.
 */
export function resolveAllowedTools(r: Record<string, unknown>): Record<string, unknown> {
  const choice = r.tool_choice as { type?: unknown; allowed_tools?: unknown } | undefined;
  if (typeof choice !== "object" || choice === null || choice.type !== "allowed_tools") return r;
  const allowed = choice.allowed_tools as { mode?: unknown; tools?: unknown } | undefined;
  if (typeof allowed !== "object" || allowed === null) invalidRequest("tool_choice.allowed_tools", "expected {mode, tools}");
  if (allowed.mode !== "auto" && allowed.mode !== "required") invalidRequest("tool_choice.allowed_tools.mode", `expected "auto" or "required", got ${JSON.stringify(allowed.mode)}`);
  if (!Array.isArray(allowed.tools)) invalidRequest("tool_choice.allowed_tools.tools", "expected an array of {type: \"function\", function: {name}}");
  const names = allowed.tools.map((t: unknown, i) => {
    const name = (t as { function?: { name?: unknown } } | null)?.function?.name;
    if ((t as { type?: unknown } | null)?.type !== "function" || typeof name !== "string") invalidRequest(`tool_choice.allowed_tools.tools[${i}]`, "expected {type: \"function\", function: {name}}");
    return name;
  });
  const tools = Array.isArray(r.tools) ? (r.tools as { function?: { name?: unknown } }[]) : [];
  for (const [i, name] of names.entries()) {
    if (!tools.some((t) => t?.function?.name === name)) invalidRequest(`tool_choice.allowed_tools.tools[${i}]`, `no tool named ${JSON.stringify(name)} in tools`);
  }
  return { ...r, tools: tools.filter((t) => names.includes(t?.function?.name as string)), tool_choice: allowed.mode };
}
