/**
 * An Anthropic Messages request as the Chat Completions request it means: content blocks become
 * chat messages (text, `thinking` as reasoning_content, `tool_use` as tool_calls, `tool_result` as
 * tool messages), `system` the system message, tools and `tool_choice` the chat forms, `thinking`
 * and `output_config` the thinking switch, the reasoning budget and the response_format. Every field is in MESSAGES_FIELDS:
 * honoured, ignored by design, or a 400 naming it.
 */
import { invalidRequest } from "../openai/errors.js";
import { isObject } from "../json-syntax.js";
import { checkFields, honoured, ignored, SAMPLING_EXTENSIONS, unsupported, type FieldRule } from "../openai/field-contract.js";
import type { ChatCompletionRequest } from "../openai/types.js";

export const MESSAGES_FIELDS: Readonly<Record<string, FieldRule>> = {
  model: honoured,
  messages: honoured,
  max_tokens: honoured,
  system: honoured,
  stop_sequences: honoured,
  stream: honoured,
  temperature: honoured,
  top_p: honoured,
  top_k: honoured,
  tools: honoured,
  tool_choice: honoured,
  /** enabled: thinking on, budget_tokens its reasoning budget; adaptive: on, unbounded; disabled: off (reasoningFields). */
  thinking: honoured,
  output_config: honoured,
  metadata: ignored("an end-user id for abuse monitoring"),
  service_tier: ignored("there is one tier: this process"),
  cache_control: ignored("the KV prefix is reused automatically"),
  inference_geo: ignored("inference runs in this process"),
  speed: ignored("there is one speed: this process"),
  user_profile_id: ignored("an end-user id for abuse monitoring"),
  workspace_id: ignored("there is one workspace: this process"),
  container: unsupported("there are no code-execution containers"),
  mcp_servers: unsupported("there are no hosted MCP connections"),
  diagnostics: unsupported("there are no request diagnostics"),
  context_management: unsupported("the context is never edited server-side"),
  ...Object.fromEntries(SAMPLING_EXTENSIONS.filter((k) => k !== "top_k").map((k) => [k, honoured])),
};

type ChatMessage = Record<string, unknown> & { role: string };

function blocksOf(content: unknown, where: string): Record<string, unknown>[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (!Array.isArray(content)) return invalidRequest(where, "expected a string or an array of content blocks");
  return content.map((b: unknown, j) => (isObject(b) ? b : invalidRequest(`${where}[${j}]`, "expected a content block object")));
}

function textBlock(b: Record<string, unknown>, where: string): string {
  if (typeof b.text !== "string") invalidRequest(`${where}.text`, "expected a string");
  return b.text;
}

/** A tool_result's content: a string, or text blocks. */
function resultText(content: unknown, where: string): string {
  if (content === undefined || content === null) return "";
  return blocksOf(content, where)
    .map((b, k) => (b.type === "text" ? textBlock(b, `${where}[${k}]`) : invalidRequest(`${where}[${k}].type`, `only text blocks are supported in a tool_result, got ${JSON.stringify(b.type)}`)))
    .join("");
}

/** `messages` (and `system`) as chat messages. */
export function chatMessages(messages: unknown, system: unknown): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (system !== undefined && system !== null) {
    const text =
      typeof system === "string"
        ? system
        : Array.isArray(system)
          ? system.map((b: unknown, i) => (isObject(b) && b.type === "text" ? textBlock(b, `system[${i}]`) : invalidRequest(`system[${i}]`, "expected a text block"))).join("\n")
          : invalidRequest("system", "expected a string or an array of text blocks");
    out.push({ role: "system", content: text });
  }
  if (!Array.isArray(messages)) return invalidRequest("messages", "expected an array of messages");
  messages.forEach((m: unknown, i) => {
    const where = `messages[${i}]`;
    if (!isObject(m)) invalidRequest(where, "expected a message object");
    if (m.role !== "user" && m.role !== "assistant") invalidRequest(`${where}.role`, `expected "user" or "assistant", got ${JSON.stringify(m.role)}`);
    const blocks = blocksOf(m.content, `${where}.content`);
    if (m.role === "assistant") {
      const msg: ChatMessage = { role: "assistant", content: "" };
      blocks.forEach((b, j) => {
        const at = `${where}.content[${j}]`;
        if (b.type === "text") msg.content = `${msg.content as string}${textBlock(b, at)}`;
        else if (b.type === "thinking") {
          if (typeof b.thinking !== "string") invalidRequest(`${at}.thinking`, "expected a string");
          msg.reasoning_content = `${(msg.reasoning_content as string | undefined) ?? ""}${b.thinking}`;
        } else if (b.type === "redacted_thinking") {
          // Encrypted by Anthropic for its own models: nothing a local model can read.
        } else if (b.type === "tool_use") {
          if (typeof b.id !== "string" || b.id === "") invalidRequest(`${at}.id`, "expected a string");
          if (typeof b.name !== "string" || b.name === "") invalidRequest(`${at}.name`, "expected a string");
          ((msg.tool_calls as unknown[] | undefined) ?? (msg.tool_calls = [])).push({ id: b.id, type: "function", function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } });
        } else invalidRequest(`${at}.type`, `expected a text, thinking or tool_use block in an assistant message, got ${JSON.stringify(b.type)}`);
      });
      out.push(msg);
      return;
    }
    // A user turn: its tool results first (they answer the previous assistant turn), then its text.
    let text: string | null = null;
    blocks.forEach((b, j) => {
      const at = `${where}.content[${j}]`;
      if (b.type === "tool_result") {
        if (typeof b.tool_use_id !== "string" || b.tool_use_id === "") invalidRequest(`${at}.tool_use_id`, "expected a string");
        const content = resultText(b.content, `${at}.content`);
        out.push({ role: "tool", tool_call_id: b.tool_use_id, content: b.is_error === true ? `Error: ${content}` : content });
      } else if (b.type === "text") text = (text ?? "") + textBlock(b, at);
      else invalidRequest(`${at}.type`, `only text and tool_result blocks are supported in a user message (this model reads text only), got ${JSON.stringify(b.type)}`);
    });
    if (text !== null) out.push({ role: "user", content: text });
  });
  return out;
}

function chatTools(tools: unknown): unknown[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) return invalidRequest("tools", "expected an array of tools");
  return tools.map((t: unknown, i) => {
    if (!isObject(t)) invalidRequest(`tools[${i}]`, "expected a tool object");
    if (t.type !== undefined && t.type !== null && t.type !== "custom") invalidRequest(`tools[${i}].type`, `only custom (client) tools are supported, there are no server tools here; got ${JSON.stringify(t.type)}`);
    if (typeof t.name !== "string" || t.name === "") invalidRequest(`tools[${i}].name`, "expected a non-empty string");
    if (!isObject(t.input_schema)) invalidRequest(`tools[${i}].input_schema`, "expected a JSON Schema object");
    return { type: "function", function: { name: t.name, ...(typeof t.description === "string" ? { description: t.description } : {}), parameters: t.input_schema, ...(typeof t.strict === "boolean" ? { strict: t.strict } : {}) } };
  });
}

/** tool_choice as the chat form, and whether calls may come several at once (Anthropic's default: yes). */
function chatToolChoice(choice: unknown): { choice: unknown; parallel: boolean } {
  if (choice === undefined || choice === null) return { choice: undefined, parallel: true };
  if (!isObject(choice)) return invalidRequest("tool_choice", "expected {type}");
  const parallel = choice.disable_parallel_tool_use !== true;
  switch (choice.type) {
    case "auto":
      return { choice: "auto", parallel };
    case "any":
      return { choice: "required", parallel };
    case "none":
      return { choice: "none", parallel };
    case "tool":
      if (typeof choice.name !== "string") invalidRequest("tool_choice.name", "expected a tool name");
      return { choice: { type: "function", function: { name: choice.name } }, parallel };
    default:
      return invalidRequest("tool_choice.type", `expected "auto", "any", "tool" or "none", got ${JSON.stringify(choice.type)}`);
  }
}

/**
 * `thinking` (and `output_config.effort`) as the Chat Completions reasoning fields: `enabled` is
 * thinking on with its `budget_tokens` as the reasoning budget (llama-server's mapping too: its
 * `thinking_budget_tokens`); `adaptive` on without a bound; `disabled` off (effort "none": budget
 * 0). Without `thinking`, `output_config.effort` is the Chat Completions effort (low: a budget of
 * 1024, higher: none; lib/openai/reasoning.ts). Undefined fields leave the template's default.
 */
function reasoningFields(thinking: unknown, effort: unknown): { reasoning_effort?: string; reasoning_budget_tokens?: number } {
  if (thinking !== undefined && thinking !== null) {
    if (!isObject(thinking)) return invalidRequest("thinking", "expected {type}");
    if (thinking.type === "disabled") return { reasoning_effort: "none" };
    if (thinking.type === "enabled") {
      const budget = thinking.budget_tokens;
      // Anthropic asks for at least 1024; a small local model may want less, so any count is taken.
      if (typeof budget !== "number" || !Number.isInteger(budget) || budget < 0 || budget > 0x7ffffffe) invalidRequest("thinking.budget_tokens", `expected a non-negative integer, got ${JSON.stringify(budget)}`);
      return { reasoning_effort: "high", reasoning_budget_tokens: budget };
    }
    if (thinking.type === "adaptive") return { reasoning_effort: "high" };
    return invalidRequest("thinking.type", `expected "enabled", "adaptive" or "disabled", got ${JSON.stringify(thinking.type)}`);
  }
  if (effort !== undefined && effort !== null) {
    if (effort === "low" || effort === "medium" || effort === "high" || effort === "xhigh" || effort === "max") return { reasoning_effort: effort };
    return invalidRequest("output_config.effort", `expected "low", "medium", "high", "xhigh" or "max", got ${JSON.stringify(effort)}`);
  }
  return {};
}

function outputFormat(config: unknown): { effort: unknown; format: unknown } {
  if (config === undefined || config === null) return { effort: undefined, format: undefined };
  if (!isObject(config)) return invalidRequest("output_config", "expected {effort, format}");
  for (const k of Object.keys(config)) if (k !== "effort" && k !== "format") invalidRequest(`output_config.${k}`, "unknown field");
  const f = config.format;
  if (f === undefined || f === null) return { effort: config.effort, format: undefined };
  if (!isObject(f) || f.type !== "json_schema" || !isObject(f.schema)) return invalidRequest("output_config.format", 'expected {type: "json_schema", schema}');
  return { effort: config.effort, format: { type: "json_schema", json_schema: { name: "output", schema: f.schema } } };
}

export interface MappedMessagesRequest {
  chat: ChatCompletionRequest;
  stream: boolean;
  stops: string[];
}

export function mapMessagesRequest(raw: Record<string, unknown>): MappedMessagesRequest {
  checkFields(MESSAGES_FIELDS, raw, "Anthropic Messages");
  if (raw.max_tokens === undefined || raw.max_tokens === null) invalidRequest("max_tokens", "required (the Messages API has no default)");
  if (raw.messages === undefined || raw.messages === null) invalidRequest("messages", "required");
  if (raw.stream !== undefined && raw.stream !== null && typeof raw.stream !== "boolean") invalidRequest("stream", "expected a boolean");
  let stops: string[] = [];
  if (raw.stop_sequences !== undefined && raw.stop_sequences !== null) {
    if (!Array.isArray(raw.stop_sequences)) invalidRequest("stop_sequences", "expected an array of strings");
    stops = raw.stop_sequences.map((s: unknown, i) => (typeof s === "string" && s !== "" ? s : invalidRequest(`stop_sequences[${i}]`, "expected a non-empty string")));
  }
  const messages = chatMessages(raw.messages, raw.system);
  const tools = chatTools(raw.tools);
  const { choice, parallel } = chatToolChoice(raw.tool_choice);
  const { effort, format } = outputFormat(raw.output_config);
  const reasoning = reasoningFields(raw.thinking, effort);
  const chat: Record<string, unknown> = { messages, stream: true, max_tokens: raw.max_tokens };
  if (typeof raw.model === "string") chat.model = raw.model;
  if (tools.length > 0) {
    chat.tools = tools;
    chat.parallel_tool_calls = parallel;
  }
  if (choice !== undefined) chat.tool_choice = choice;
  if (format !== undefined) chat.response_format = format;
  Object.assign(chat, reasoning);
  if (stops.length > 0) chat.stop = stops;
  for (const k of ["temperature", "top_p", "top_k", ...SAMPLING_EXTENSIONS] as const) if (raw[k] !== undefined && raw[k] !== null) chat[k] = raw[k];
  return { chat: chat as unknown as ChatCompletionRequest, stream: raw.stream === true, stops };
}

/** Chat Completions field names as this API's (for errors the shared chat layer raises). */
export const MESSAGES_PARAM_NAMES: Readonly<Record<string, string>> = {
  stop: "stop_sequences",
  reasoning_effort: "thinking",
  reasoning_budget_tokens: "thinking.budget_tokens",
  response_format: "output_config.format",
  parallel_tool_calls: "tool_choice.disable_parallel_tool_use",
};
