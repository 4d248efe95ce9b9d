/**
 * Checks an OpenAI chat request before anything is generated and brings it into one internal shape.
 * Every rejection is ERR_INVALID_REQUEST whose `where` (OpenAI's `param`) names the field.
 */
import type { ReasoningFormat } from "../chat/apply/index.js";
import { parseChatMessages, type ChatMessage } from "../chat/messages.js";
import type { ChatTool } from "../chat/tools.js";
import { LlamapegError } from "../errors.js";
import { compileJsonSchema } from "../json-schema/index.js";
import { invalidRequest } from "./errors.js";
import { checkRequestFields, resolveAllowedTools, thinkingFromEffort } from "./request-fields.js";
import type { ChatCompletionRequest } from "./types.js";

const ROLES = new Set(["system", "developer", "user", "assistant", "tool"]);
const TOOL_NAME = /^[a-zA-Z0-9_.-]{1,64}$/;

export interface NormalizedChatRequest {
  messages: ChatMessage[];
  model: string | undefined;
  tools: ChatTool[];
  /** "function" = a named function (`namedTool`). */
  toolChoice: "auto" | "required" | "none" | "function";
  namedTool: string | undefined;
  callsOnly: boolean;
  parallelToolCalls: boolean;
  /** The response JSON schema (null: free text). */
  responseSchema: Record<string, unknown> | null;
  maxTokens: number | undefined;
  temperature: number | undefined;
  topP: number | undefined;
  /** llama.cpp extensions. */
  topK: number | undefined;
  minP: number | undefined;
  repeatPenalty: number | undefined;
  seed: number | undefined;
  stop: string[];
  stream: boolean;
  includeUsage: boolean;
  reasoningFormat: ReasoningFormat | undefined;
  chatTemplateKwargs: Record<string, unknown> | undefined;
  chatTemplate: string | undefined;
  grammar: boolean;
  signal: AbortSignal | undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function optNumber(r: Record<string, unknown>, key: string, min: number, max: number, integer = false): number | undefined {
  const v = r[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < min || v > max) {
    invalidRequest(key, `expected ${integer ? "an integer" : "a number"} in [${min}, ${max}], got ${JSON.stringify(v)}`);
  }
  return v;
}

function optBool(r: Record<string, unknown>, key: string): boolean | undefined {
  const v = r[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") invalidRequest(key, `expected a boolean, got ${JSON.stringify(v)}`);
  return v;
}

function checkTools(value: unknown): ChatTool[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) invalidRequest("tools", "expected an array of tools");
  const seen = new Set<string>();
  return value.map((t, i) => {
    const at = `tools[${i}]`;
    if (!isObject(t)) invalidRequest(at, "expected an object");
    if (t.type !== "function") invalidRequest(`${at}.type`, `expected "function", got ${JSON.stringify(t.type)}`);
    const fn = t.function;
    if (!isObject(fn)) invalidRequest(`${at}.function`, "expected an object");
    if (typeof fn.name !== "string" || !TOOL_NAME.test(fn.name)) {
      invalidRequest(`${at}.function.name`, `expected 1-64 characters of a-z, A-Z, 0-9, _ . -, got ${JSON.stringify(fn.name)}`);
    }
    if (seen.has(fn.name)) invalidRequest(`${at}.function.name`, `duplicate tool name ${JSON.stringify(fn.name)}`);
    seen.add(fn.name);
    if (fn.description !== undefined && typeof fn.description !== "string") invalidRequest(`${at}.function.description`, "expected a string");
    if (fn.parameters !== undefined && !isObject(fn.parameters)) invalidRequest(`${at}.function.parameters`, "expected a JSON schema object");
    return t as unknown as ChatTool;
  });
}

function checkMessages(value: unknown): ChatMessage[] {
  const messages = parseChatMessages(value, "messages");
  if (messages.length === 0) invalidRequest("messages", "expected at least one message");
  const calls = new Set<string>();
  messages.forEach((m, i) => {
    if (!ROLES.has(m.role)) invalidRequest(`messages[${i}].role`, `unknown role ${JSON.stringify(m.role)} (expected system, developer, user, assistant or tool)`);
    if (m.tool_calls !== undefined && m.role !== "assistant") invalidRequest(`messages[${i}].tool_calls`, `only assistant messages carry tool calls (role is ${m.role})`);
    for (const c of m.tool_calls ?? []) if (c.id !== "") calls.add(c.id);
    if (m.role === "tool") {
      if (m.tool_call_id === undefined) invalidRequest(`messages[${i}].tool_call_id`, "a tool message needs the id of the call it answers");
      if (!calls.has(m.tool_call_id)) invalidRequest(`messages[${i}].tool_call_id`, `no earlier assistant tool call has id ${JSON.stringify(m.tool_call_id)}`);
    }
  });
  return messages;
}

function checkToolChoice(value: unknown, tools: ChatTool[]): { toolChoice: NormalizedChatRequest["toolChoice"]; namedTool: string | undefined } {
  if (value === undefined || value === null) return { toolChoice: tools.length > 0 ? "auto" : "none", namedTool: undefined };
  if (value === "auto" || value === "required" || value === "none") {
    if (value === "required" && tools.length === 0) invalidRequest("tool_choice", `"required" needs tools`);
    return { toolChoice: value, namedTool: undefined };
  }
  if (isObject(value) && value.type === "function" && isObject(value.function) && typeof value.function.name === "string") {
    const name = value.function.name;
    if (!tools.some((t) => t.function.name === name)) invalidRequest("tool_choice.function.name", `no tool named ${JSON.stringify(name)} in tools`);
    return { toolChoice: "function", namedTool: name };
  }
  invalidRequest("tool_choice", `expected "auto", "required", "none" or {type: "function", function: {name}}, got ${JSON.stringify(value)}`);
}

/** The response schema; a schema that cannot be compiled is a request error (unenforceable keywords are not). */
function checkResponseFormat(value: unknown): Record<string, unknown> | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) invalidRequest("response_format", "expected an object");
  let schema: unknown;
  let param = "response_format";
  switch (value.type) {
    case "text":
      return null;
    case "json_object":
      schema = value.schema ?? { type: "object" };
      param = "response_format.schema";
      break;
    case "json_schema":
      if (!isObject(value.json_schema)) invalidRequest("response_format.json_schema", "expected an object with a schema");
      schema = value.json_schema.schema ?? {};
      param = "response_format.json_schema.schema";
      break;
    default:
      invalidRequest("response_format.type", `expected "text", "json_object" or "json_schema", got ${JSON.stringify(value.type)}`);
  }
  if (!isObject(schema)) invalidRequest(param, "expected a JSON schema object");
  try {
    compileJsonSchema(schema, { unsupported: "ignore" });
  } catch (e) {
    if (e instanceof LlamapegError) throw new LlamapegError("ERR_INVALID_REQUEST", `${param}: ${e.message}`, { where: param, cause: e });
    throw e;
  }
  return Object.keys(schema).length > 0 ? schema : { type: "object" };
}

export function normalizeChatRequest(raw: ChatCompletionRequest): NormalizedChatRequest {
  if (!isObject(raw)) invalidRequest("request", "expected an object");
  checkRequestFields(raw as unknown as Record<string, unknown>);
  const r = resolveAllowedTools(raw as unknown as Record<string, unknown>);
  const messages = checkMessages(r.messages);
  const tools = checkTools(r.tools);
  const { toolChoice, namedTool } = checkToolChoice(r.tool_choice, tools);
  const n = optNumber(r, "n", 1, 128, true);
  if (n !== undefined && n > 1) invalidRequest("n", `only 1 choice per request in this build (got ${n})`);
  const maxTokens = optNumber(r, "max_completion_tokens", 1, 2 ** 31 - 1, true) ?? optNumber(r, "max_tokens", 1, 2 ** 31 - 1, true);
  let stop: string[] = [];
  if (typeof r.stop === "string") stop = [r.stop];
  else if (Array.isArray(r.stop)) {
    if (r.stop.length > 4) invalidRequest("stop", "at most 4 stop sequences");
    stop = r.stop.map((s, i) => (typeof s === "string" && s !== "" ? s : invalidRequest(`stop[${i}]`, "expected a non-empty string")));
  } else if (r.stop !== undefined && r.stop !== null) invalidRequest("stop", "expected a string or an array of strings");
  const streamOptions = r.stream_options;
  if (streamOptions !== undefined && streamOptions !== null && !isObject(streamOptions)) invalidRequest("stream_options", "expected an object");
  const stream = optBool(r, "stream") ?? false;
  if (streamOptions && !stream) invalidRequest("stream_options", "only allowed with stream: true");
  const reasoningFormat = r.reasoning_format;
  if (reasoningFormat !== undefined && reasoningFormat !== "none" && reasoningFormat !== "auto" && reasoningFormat !== "deepseek") {
    invalidRequest("reasoning_format", `expected "none", "auto" or "deepseek", got ${JSON.stringify(reasoningFormat)}`);
  }
  if (r.chat_template_kwargs !== undefined && !isObject(r.chat_template_kwargs)) invalidRequest("chat_template_kwargs", "expected an object");
  // reasoning_effort is the thinking switch, unless chat_template_kwargs sets it explicitly.
  const thinking = thinkingFromEffort(r.reasoning_effort);
  const kwargs = r.chat_template_kwargs as Record<string, unknown> | undefined;
  const chatTemplateKwargs = thinking === undefined || kwargs?.enable_thinking !== undefined ? kwargs : { ...kwargs, enable_thinking: thinking };
  if (r.chat_template !== undefined && (typeof r.chat_template !== "string" || r.chat_template === "")) invalidRequest("chat_template", "expected Jinja template text");
  if (r.grammar !== undefined && r.grammar !== false) invalidRequest("grammar", "only false (sample without the grammar) is accepted");
  if (r.model !== undefined && typeof r.model !== "string") invalidRequest("model", "expected a string");
  if (r.signal !== undefined && !(r.signal instanceof AbortSignal)) invalidRequest("signal", "expected an AbortSignal");
  const callsOnly = optBool(r, "calls_only") ?? toolChoice === "function";
  return {
    messages,
    model: r.model as string | undefined,
    tools,
    toolChoice,
    namedTool,
    callsOnly: callsOnly && (toolChoice === "required" || toolChoice === "function"),
    parallelToolCalls: optBool(r, "parallel_tool_calls") ?? false,
    responseSchema: checkResponseFormat(r.response_format),
    maxTokens,
    temperature: optNumber(r, "temperature", 0, 2),
    topP: optNumber(r, "top_p", 0, 1),
    topK: optNumber(r, "top_k", 0, 2 ** 30, true),
    minP: optNumber(r, "min_p", 0, 1),
    repeatPenalty: optNumber(r, "repeat_penalty", Number.MIN_VALUE, 100),
    seed: optNumber(r, "seed", -(2 ** 53), 2 ** 53, true),
    stop,
    stream,
    includeUsage: isObject(streamOptions) && streamOptions.include_usage === true,
    reasoningFormat: reasoningFormat as ReasoningFormat | undefined,
    chatTemplateKwargs,
    chatTemplate: r.chat_template as string | undefined,
    grammar: r.grammar !== false,
    signal: r.signal as AbortSignal | undefined,
  };
}
